// SPDX-License-Identifier: MIT
/*
 * test_plugin_srq.cc - real ganesha + rpcrdma plugin with Use_SRQ = true:
 * NFSv3 and NFSv4.1 I/O through Read and Write chunks with every receive
 * taken from a shared pool (one per event thread), several clients at once
 * on pools smaller than their grants together, and the stats socket showing
 * the pools as global receive memory and none per connection.
 */
#include <dirent.h>

#include <fstream>
#include <set>

#include "support/plugin_common.h"

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

	/* The pools: one per event thread, as many as ganesha runs (Event_Threads
	 * defaults by the cores; RPCRDMA_TEST_EVENT_THREADS sets it). Counted
	 * by name, each once: threads an event thread starts (the soft
	 * fabric's) inherit its name. */
	static double pools()
	{
		std::string dir = "/proc/" + std::to_string(srv->pid) + "/task";
		DIR *d = opendir(dir.c_str());
		std::set<std::string> names;

		if (!d)
			return 1;
		while (struct dirent *e = readdir(d)) {
			std::ifstream f(dir + "/" + e->d_name + "/comm");
			std::string name;

			if (f && std::getline(f, name) && name.rfind("rpcrdma-event", 0) == 0)
				names.insert(name);
		}
		closedir(d);
		return names.empty() ? 1 : double(names.size());
	}
};

TEST_F(SrqPlugin, Nfs3AndNfs41ThroughChunks)
{
	Fh root = mount3();
	ASSERT_FALSE(root.empty());
	auto t = rdma_chunks();
	ASSERT_TRUE(t);
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
	const Json *conns = j.get("connections");
	ASSERT_TRUE(conns && conns->kind == Json::ARR);
	ASSERT_GE(conns->arr.size(), 1u);
	if (!rr_test_device_srq()) {
		/* no pool on this device: Use_SRQ fell back to the connections' own */
		for (const auto &cn : conns->arr)
			EXPECT_GT(cn.at("recv_mem_bytes"), 0) << rr_test_device_name();
		return;
	}
	EXPECT_GT(j.at("global.recv_mem_bytes"), 0);
	EXPECT_LE(j.at("global.recv_mem_bytes"), pools() * kPool * kInline);
	for (const auto &cn : conns->arr)
		EXPECT_EQ(cn.at("recv_mem_bytes"), 0) << "a connection owns receive buffers";
	EXPECT_EQ(j.at("global.rnr_disconnects"), 0);
}

/* Six clients at once, each with a connection of its own, on a pool of 64. */
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
	auto errs = parallel_write_read(files, rounds);
	for (int i = 0; i < nthreads; i++)
		EXPECT_EQ(errs[i], "") << "client " << i;
	double rnr = stat("rnr_disconnects");
	if (rnr >= 0) {
		EXPECT_EQ(rnr, 0);
	}
}

/*
 * Three clients per pool, less one (three with one event thread), each fill
 * their whole grant with NULLs at once: more calls than the pools have
 * buffers, and some thread has three clients on its pool. The Sends that
 * find an SRQ empty wait out RNRs; every call is answered and no
 * connection is cut.
 */
TEST_F(SrqPlugin, BurstBeyondThePoolIsDelayedNotDisconnected)
{
	std::vector<std::unique_ptr<RdmaTransport>> ts;
	uint32_t total = 0;
	int clients = 2 * int(pools()) + 1;
	for (int i = 0; i < clients; i++) {
		ts.push_back(rdma());
		ASSERT_TRUE(ts.back());
		Nfs3 c(*ts.back());
		NFS_OK(c, c.null()); /* the first reply brings the real grant */
		total += ts.back()->requester().grant();
	}
	ASSERT_GT(total, uint32_t(pools() * kPool)) << "the burst must exceed the pools";
	for (int round = 0; round < 3; round++) {
		std::vector<std::vector<uint32_t>> xids(ts.size());
		for (size_t k = 0; k < ts.size(); k++) {
			RdmaTransport &t = *ts[k];
			for (uint32_t i = 0; i < t.requester().grant(); i++) {
				nfsxdr::Xdr x;
				std::string err;
				nfsxdr::rpc_call_header_sys(x, t.next_xid(), PROG_NFS, 3, 0, 0, 0, "rr");
				int64_t xid = t.post(x.buf, CallOpts(), &err);
				ASSERT_GE(xid, 0) << err;
				xids[k].push_back(uint32_t(xid));
			}
		}
		for (size_t k = 0; k < ts.size(); k++) {
			for (uint32_t xid : xids[k]) {
				TransportReply r;
				std::string err;
				ASSERT_TRUE(ts[k]->collect(xid, &r, &err))
				    << "client " << k << " round " << round << ": " << err;
				EXPECT_FALSE(r.rdma_error);
			}
		}
	}
	for (auto &t : ts) {
		Nfs3 c(*t);
		NFS_OK(c, c.null());
	}
	double rnr = stat("rnr_disconnects");
	if (rnr >= 0) {
		EXPECT_EQ(rnr, 0);
		/* one client's window (32 + 2 + 8) from the first connect, at most
		 * SRQ_Depth a pool; a device without a pool gives every connection
		 * its own */
		EXPECT_GE(stat("recv_mem_bytes"), (32 + 2 + 8) * kInline);
		if (rr_test_device_srq()) {
			EXPECT_LE(stat("recv_mem_bytes"), pools() * kPool * kInline)
			    << "each pool stops at SRQ_Depth";
		}
	}
}

} // namespace
} // namespace rrplug
