// SPDX-License-Identifier: MIT
/*
 * test_plugin_srq.cc - real ganesha + rpcrdma plugin with Use_SRQ = true:
 * NFSv3 and NFSv4.1 I/O through Read and Write chunks with every receive
 * taken from one shared pool, several clients at once on a pool smaller
 * than their grants together, and the stats socket showing the pool as
 * global receive memory and none per connection.
 */
#include "plugin/plugin_common.h"

#include <atomic>
#include <thread>

using namespace nfsc;

namespace rrplug
{
namespace
{

constexpr double kPool = 64, kInline = 4096;

class SrqPlugin : public PluginTest
{
      protected:
	static void SetUpTestSuite()
	{
		options.extra_rdma = "\tUse_SRQ = true;\n\tSRQ_Depth = 64;\n";
		PluginTest::SetUpTestSuite();
	}
};

TEST_F(SrqPlugin, Nfs3AndNfs41ThroughChunks)
{
	Fh root = mount3();
	ASSERT_FALSE(root.empty());
	auto t = rdma();
	ASSERT_TRUE(t);
	t->policy.call_ddp = Ddp::ALWAYS;
	t->policy.reply_ddp = Ddp::ALWAYS;
	Nfs3 c(*t);
	Fh d, f;
	std::string dn = unique("srq");
	NFS_OK(c, c.mkdir(root, dn, 0755, &d));
	NFS_OK(c, c.create(d, "v3", 0644, &f));
	for (size_t n : {size_t(300), size_t(70000), size_t((1 << 20) + 5)}) {
		SCOPED_TRACE("NFSv3 length " + std::to_string(n));
		Bytes data = test_data(n, uint32_t(n));
		NFS_OK(c, c.write(f, 0, data));
		Bytes back;
		bool eof;
		NFS_OK(c, c.read(f, 0, uint32_t(n), &back, &eof));
		EXPECT_EQ(crc32c(back), crc32c(data));
	}
	Nfs4 c4(*t);
	NFS_OK(c4, c4.mount());
	Fh d4, f4;
	NFS_OK(c4, c4.lookup_path("/mem/" + dn, &d4));
	Stateid sid;
	NFS_OK(c4, c4.open_create(d4, "v41", &f4, &sid));
	for (size_t n : {size_t(500), size_t(200000)}) {
		SCOPED_TRACE("NFSv4.1 length " + std::to_string(n));
		Bytes data = test_data(n, uint32_t(n + 1));
		NFS_OK(c4, c4.write(f4, sid, 0, data));
		Bytes back;
		bool eof;
		NFS_OK(c4, c4.read(f4, sid, 0, uint32_t(n), &back, &eof));
		EXPECT_EQ(crc32c(back), crc32c(data));
	}
	NFS_OK(c4, c4.close(f4, sid));
	NFS_OK(c4, c4.destroy_session());

	Json j;
	std::string why;
	if (!stats(&j, &why))
		return; /* the I/O above is the point; counters need the socket */
	EXPECT_GT(j.at("global.recv_mem_bytes"), 0);
	EXPECT_LE(j.at("global.recv_mem_bytes"), kPool * kInline);
	const Json *conns = j.get("connections");
	ASSERT_TRUE(conns && conns->kind == Json::ARR);
	ASSERT_GE(conns->arr.size(), 1u);
	for (const auto &cn : conns->arr)
		EXPECT_EQ(cn.at("recv_mem_bytes"), 0) << "a connection owns receive buffers";
	EXPECT_EQ(j.at("global.rnr_disconnects"), 0);
}

/* Six clients with their full grants against a pool of 64: slowed, never cut off. */
TEST_F(SrqPlugin, ParallelClientsShareThePool)
{
	Fh root = mount3();
	ASSERT_FALSE(root.empty());
	auto setup = rdma();
	ASSERT_TRUE(setup);
	Nfs3 sc(*setup);
	Fh dir;
	NFS_OK(sc, sc.mkdir(root, unique("srqpar"), 0755, &dir));
	const int nthreads = 6, rounds = 10;
	std::vector<Fh> files(nthreads);
	for (int i = 0; i < nthreads; i++)
		NFS_OK(sc, sc.create(dir, "p" + std::to_string(i), 0644, &files[i]));
	std::atomic<int> ok{0};
	std::vector<std::string> errs(nthreads);
	std::vector<std::thread> th;
	for (int i = 0; i < nthreads; i++)
		th.emplace_back([&, i] {
			std::string err;
			auto t = RdmaTransport::connect(srv->rdma_addr, &err);
			if (!t) {
				errs[i] = err;
				return;
			}
			t->policy.call_ddp = i % 2 ? Ddp::ALWAYS : Ddp::AUTO;
			t->policy.reply_ddp = Ddp::ALWAYS;
			Nfs3 c(*t);
			for (int r = 0; r < rounds; r++) {
				Bytes data = test_data(2000 + 50000 * r + i, uint32_t(i * 100 + r));
				Bytes back;
				bool eof;
				if (c.write(files[i], 0, data) ||
				    c.read(files[i], 0, uint32_t(data.size()), &back, &eof)) {
					errs[i] = c.err();
					return;
				}
				if (crc32c(back) != crc32c(data)) {
					errs[i] = "checksum mismatch in round " + std::to_string(r);
					return;
				}
				ok++;
			}
		});
	for (auto &x : th)
		x.join();
	for (int i = 0; i < nthreads; i++)
		EXPECT_EQ(errs[i], "") << "client " << i;
	EXPECT_EQ(ok, nthreads * rounds);
	double rnr = stat("rnr_disconnects");
	if (rnr >= 0) {
		EXPECT_EQ(rnr, 0);
	}
}

} // namespace
} // namespace rrplug
