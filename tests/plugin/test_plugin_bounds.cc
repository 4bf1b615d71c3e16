// SPDX-License-Identifier: MIT
/*
 * test_plugin_bounds.cc - real ganesha + rpcrdma plugin holding 1,000 idle
 * RDMA connections: a 512 KiB READ still goes out by RDMA Write from the
 * registered READ payload pool with no copy. The engine's per-connection
 * send and receive buffers (about 1.2 MB each at the defaults) once came
 * from that pool too - the plugin's allocator interposer served their
 * page-aligned posix_memalign from its 1 MiB class - so a few dozen idle
 * connections left READs nothing but a bounce copy.
 *
 * The engine's Read sinks (WRITE data by Read chunk) are carved from 256 KiB
 * slabs; they too once came from posix_memalign(4096), and the interposer
 * served every such call from the pool (issue #32). With a 4 MiB pool (one
 * 1 MiB slot) the first sink slab took the only slot READs fit in.
 *
 * A COMPOUND of more READs than the plugin's Reply stream holds: its Reply
 * given up, that connection closed, every READ buffer back in the pool.
 */
#include "support/plugin_common.h"

#include <algorithm>

#include "support/rr_eventually.h"

using namespace nfsc;

namespace rrplug
{
namespace
{

constexpr int kIdle = 1000;
constexpr uint32_t kRead = 512 * 1024;

/* A file of kRead bytes in a fresh folder, written over NFSv3 through a
 * connection that offers Read and Write chunks. */
struct ChunkedFile {
	std::unique_ptr<RdmaTransport> t;
	std::unique_ptr<Nfs3> c;
	std::string dn;
	Fh d, f;
	Bytes data;
};

class BoundsTest : public PluginTest
{
      protected:
	void chunked_file(const char *folder, int seed, ChunkedFile *out)
	{
		Fh root = mount3();
		ASSERT_FALSE(root.empty());
		out->t = rdma_chunks();
		ASSERT_TRUE(out->t);
		out->c.reset(new Nfs3(*out->t));
		Nfs3 &c = *out->c;
		out->dn = unique(folder);
		NFS_OK(c, c.mkdir(root, out->dn, 0755, &out->d));
		NFS_OK(c, c.create(out->d, "f", 0644, &out->f));
		out->data = test_data(kRead, seed);
		NFS_OK(c, c.write(out->f, 0, out->data));
	}
	/* That file opened for reading over NFSv4.1 (@c4 mounts first). */
	void open_v4(Nfs4 &c4, const ChunkedFile &cf, Fh *d4, Fh *f4, Stateid *sid)
	{
		NFS_OK(c4, c4.mount());
		NFS_OK(c4, c4.lookup_path("/mem/" + cf.dn, d4));
		NFS_OK(c4, c4.open(*d4, "f", 1, f4, sid));
	}
};

class IdleConns : public BoundsTest
{
      protected:
	static void SetUpTestSuite()
	{
		/* The default READ payload pool (Payload_Pool_MB 80: 38 slots of
		 * 1 MiB); room for the idle connections, which all come from one
		 * address (the soft fabric's unix socket peer is 127.0.0.1). */
		options.extra_rdma = "\tMax_Connections = 1100;\n"
				     "\tMax_Connections_Per_Peer = 0;\n";
		PluginTest::SetUpTestSuite();
	}
};

TEST_F(IdleConns, ThousandIdleConnectionsLeaveReadsZeroCopy)
{
	Json j;
	std::string why;
	if (!stats(&j, &why))
		GTEST_SKIP() << why;
	ChunkedFile cf;
	ASSERT_NO_FATAL_FAILURE(chunked_file("idle", 25, &cf));
	auto &t = cf.t;
	Nfs3 &c = *cf.c;
	const Fh &f = cf.f;
	const std::string &dn = cf.dn;
	const Bytes &data = cf.data;

	/* The idle ones: each connects and makes one NULL call (a connection
	 * that never sends is closed after Handshake_Timeout), then stays. */
	std::vector<std::unique_ptr<RdmaTransport>> idle;
	rrtest::RequesterOptions small;
	small.recv_bufs = 4; /* the client's own memory: NULL needs one */
	small.max_requests = 4;
	for (int i = 0; i < kIdle; i++) {
		std::string err;
		auto it = RdmaTransport::connect(srv->rdma_addr, small, &err);
		ASSERT_TRUE(it) << "idle connection " << i << ": " << err;
		Nfs3 n(*it);
		NFS_OK(n, n.null());
		idle.push_back(std::move(it));
	}
	ASSERT_TRUE(stats(&j, &why)) << why;
	EXPECT_GE(j.at("global.conns_active"), double(kIdle + 1));

	for (int round = 0; round < 2; round++) {
		SCOPED_TRACE(round ? "NFSv4.1" : "NFSv3");
		ASSERT_TRUE(stats(&j, &why)) << why;
		double copies0 = j.at("global.payload_copies");
		double written0 = j.at("global.rdma_write_bytes");
		ASSERT_GE(copies0, 0) << "payload_copies missing from the stats socket";
		Bytes back;
		bool eof = false;
		size_t write_chunks = 0;
		if (round == 0) {
			NFS_OK(c, c.read(f, 0, kRead, &back, &eof));
			write_chunks = t->last_spec.writes.size();
		} else {
			Nfs4 c4(*t);
			NFS_OK(c4, c4.mount());
			Fh d4, f4;
			Stateid sid;
			NFS_OK(c4, c4.lookup_path("/mem/" + dn, &d4));
			NFS_OK(c4, c4.open_create(d4, "v41", &f4, &sid));
			NFS_OK(c4, c4.write(f4, sid, 0, data));
			ASSERT_TRUE(stats(&j, &why)) << why;
			copies0 = j.at("global.payload_copies");
			written0 = j.at("global.rdma_write_bytes");
			NFS_OK(c4, c4.read(f4, sid, 0, kRead, &back, &eof));
			write_chunks = t->last_spec.writes.size();
			NFS_OK(c4, c4.close(f4, sid));
			NFS_OK(c4, c4.destroy_session());
		}
		ASSERT_EQ(write_chunks, 1u) << "the READ asked for a Write chunk";
		ASSERT_EQ(back.size(), size_t(kRead));
		EXPECT_EQ(crc32c(back), crc32c(data));
		ASSERT_TRUE(stats(&j, &why)) << why;
		EXPECT_EQ(j.at("global.payload_copies") - copies0, 0)
			<< "READ data was copied into a bounce buffer: the payload pool was "
			   "taken by " << kIdle << " idle connections";
		EXPECT_GE(j.at("global.rdma_write_bytes") - written0, double(kRead));
	}
	/* every idle connection still answers */
	for (size_t i = 0; i < idle.size(); i += 97) {
		Nfs3 n(*idle[i]);
		NFS_OK(n, n.null());
	}
}

/* A 4 MiB READ payload pool: 32 buffers of 64 KiB and one of 1 MiB. */
class SmallPayloadPool : public BoundsTest
{
      protected:
	static void SetUpTestSuite()
	{
		options.extra_rdma = "\tPayload_Pool_MB = 4;\n";
		PluginTest::SetUpTestSuite();
	}
};

TEST_F(SmallPayloadPool, SinkSlabsNeverTakeReadPayloadSlots)
{
	Json a, b;
	std::string why;
	if (!stats(&a, &why))
		GTEST_SKIP() << why;
	ChunkedFile cf;
	ASSERT_NO_FATAL_FAILURE(chunked_file("sinks", 32, &cf));
	auto &t = cf.t;
	Nfs3 &c = *cf.c;
	const Fh &f = cf.f;
	const std::string &dn = cf.dn;
	const Bytes &data = cf.data;
	Fh w;
	NFS_OK(c, c.create(cf.d, "w", 0644, &w));

	/* WRITE rounds by Read chunk, a credit window in flight at a time, of
	 * both small sink classes (4 KiB, 64 KiB): the engine grows slabs. */
	ASSERT_TRUE(stats(&a, &why)) << why;
	const Bytes small = test_data(4000, 1), mid = test_data(32 * 1024, 2);
	for (int round = 0; round < 8; round++) {
		std::vector<uint32_t> inflight;
		uint32_t grant = t->requester().grant();
		for (uint32_t i = 0; i < grant; i++) {
			CallOpts o;
			const Bytes &wd = i % 2 ? small : mid;
			nfsxdr::Xdr x = c.write_call(w, uint64_t(i) * mid.size(), wd, &o);
			ASSERT_EQ(o.items.size(), 1u) << "the WRITE's data is DDP-eligible";
			int64_t xid = t->post(x.buf, o, &why);
			ASSERT_GE(xid, 0) << why;
			inflight.push_back(uint32_t(xid));
		}
		for (size_t i = 0; i < inflight.size(); i++) {
			TransportReply r;
			ASSERT_TRUE(t->collect(inflight[i], &r, &why)) << why;
			ASSERT_EQ(c.write_reply(r, inflight[i], i % 2 ? small.size() : mid.size(),
						nullptr),
				  0)
			    << c.err();
		}
	}
	ASSERT_TRUE(stats(&b, &why)) << why;
	EXPECT_GE(b.at("global.rdma_read_bytes") - a.at("global.rdma_read_bytes"),
		  8.0 * (small.size() + mid.size()) * t->requester().grant() / 2)
	    << "the WRITE data came by Read chunk";
	double slabs = b.at("global.registrations") - a.at("global.registrations");
	printf("WRITE rounds by Read chunk: %g registrations (sink slabs)\n", slabs);
	ASSERT_GT(slabs, 0) << "the WRITEs made the engine register sink slabs";

	/* READs of 512 KiB, NFSv3 and NFSv4.1, each needs the 1 MiB slot. */
	Nfs4 c4(*t);
	Fh d4, f4;
	Stateid sid;
	NFS_OK(c4, c4.mount());
	NFS_OK(c4, c4.lookup_path("/mem/" + dn, &d4));
	NFS_OK(c4, c4.open_create(d4, "v41", &f4, &sid));
	NFS_OK(c4, c4.write(f4, sid, 0, data));
	const int reads = 8;
	ASSERT_TRUE(stats(&a, &why)) << why;
	for (int i = 0; i < reads; i++) {
		Bytes back;
		bool eof = false;
		if (i % 2)
			NFS_OK(c4, c4.read(f4, sid, 0, kRead, &back, &eof));
		else
			NFS_OK(c, c.read(f, 0, kRead, &back, &eof));
		ASSERT_EQ(t->last_spec.writes.size(), 1u) << "the READ asked for a Write chunk";
		ASSERT_EQ(back.size(), size_t(kRead));
		ASSERT_EQ(crc32c(back), crc32c(data));
	}
	ASSERT_TRUE(stats(&b, &why)) << why;
	double copies = b.at("global.payload_copies") - a.at("global.payload_copies");
	double regs = b.at("global.registrations") - a.at("global.registrations");
	printf("%d READs of %u bytes after them: payload_copies %+.0f, registrations %+.0f\n", reads,
	       kRead, copies, regs);
	EXPECT_EQ(copies, 0) << "READ data bounced: sink slabs took the payload pool's slot";
	/* iWARP: each READ's payload slot is registered for its Reply in the
	 * connection's own PD (docs/devices.md), one per READ; any more would
	 * be bounce buffers */
	bool own_pd = rr_test_device().transport == FAB_TRANSPORT_IWARP;
	EXPECT_EQ(regs, own_pd ? reads : 0) << "READs registered memory (bounce buffers)";
	EXPECT_GE(b.at("global.rdma_write_bytes") - a.at("global.rdma_write_bytes"),
		  double(reads) * kRead);
	NFS_OK(c4, c4.close(f4, sid));
	NFS_OK(c4, c4.destroy_session());
}

static size_t listed_connections(const Json &j)
{
	const Json *c = j.get("connections");
	return c && c->kind == Json::ARR ? c->arr.size() : size_t(-1);
}

/*
 * The plugin encodes a Reply with each READ's (and READDIR's) data by
 * reference, two segments of its stream each, and the stream holds
 * RRP_ENC_MAX_SEG (32): a COMPOUND of 20 READs fills it at the 16th. (The
 * Linux client sends one READ a COMPOUND.) Its Reply is given up as
 * ganesha's TCP transport gives up a Reply it cannot encode: XPRT_DIED, and
 * ganesha's SVC_DESTROY closes that connection - cleanly: ganesha serves
 * on, the transport it destroyed stays valid until the engine's conn_down
 * (the stats socket lists its connection until then), and every READ buffer
 * goes back. With 8 READDIRs first, the refused READ is the 8th, paired
 * with the last Write chunk (the engine takes 8), and of 100000 bytes: its
 * buffer is the pool's only 1 MiB one. Leaked, the 512 KiB READ after it
 * bounces.
 */
TEST_F(SmallPayloadPool, ManyReadsInOneCompoundCloseTheConnectionAndLeakNothing)
{
	Json a, b;
	std::string why;
	if (!stats(&a, &why))
		GTEST_SKIP() << why;
	ChunkedFile cf;
	ASSERT_NO_FATAL_FAILURE(chunked_file("many", 41, &cf));
	std::vector<std::pair<uint64_t, uint32_t>> twenty, eight;
	for (uint64_t i = 0; i < 20; i++)
		twenty.push_back({i * 4096, 4096});
	for (uint64_t i = 0; i < 8; i++)
		eight.push_back({i * 4096, i == 7 ? 100000u : 4096u});
	constexpr int kRounds = 3;
	ASSERT_TRUE(stats(&a, &why)) << why;
	for (int round = 0; round < kRounds; round++) {
		SCOPED_TRACE(round ? "8 READDIRs, 8 READs" : "20 READs");
		auto t = rdma();
		ASSERT_TRUE(t);
		t->policy.reply_ddp = Ddp::ALWAYS;
		t->policy.timeout_ms = 15000;
		Nfs4 c4(*t);
		c4.max_ops = 32; /* the session's bound: above this COMPOUND's */
		Fh d4, f4;
		Stateid sid;
		ASSERT_NO_FATAL_FAILURE(open_v4(c4, cf, &d4, &f4, &sid));
		/* Write chunks for the first 8 READs: their buffers come from the
		 * payload pool */
		std::vector<Bytes> got;
		int rc = round ? c4.readdirs_then_reads(d4, 8, 1024, f4, sid, eight, &got, 8)
			       : c4.read_multi(f4, sid, twenty, &got, 8);
		EXPECT_NE(rc, 0) << "answered: the test proves nothing";
		EXPECT_TRUE(t->requester().wait_disconnected(10000))
		    << "the connection of the Reply ganesha gave up is still up: " << c4.err();
	}
	ASSERT_TRUE(srv->alive()) << srv->logs();
	/* Each transport ganesha destroyed is unlisted at its conn_down; cf.t's
	 * stays. */
	size_t listed = 0;
	EXPECT_TRUE(rrtest::eventually([&] {
		listed = stats(&b, &why) ? listed_connections(b) : 0;
		return listed == 1u;
	})) << "connections listed: "
	    << listed;
	EXPECT_EQ(b.at("plugin.replies_failed") - a.at("plugin.replies_failed"), double(kRounds));
	EXPECT_GE(b.at("global.disconnects") - a.at("global.disconnects"), double(kRounds));

	/* A new connection: a 512 KiB READ from the 1 MiB buffer, and 8 READs
	 * in one COMPOUND from the 64 KiB ones, none bounced. */
	auto t = rdma_chunks();
	ASSERT_TRUE(t);
	Nfs3 c(*t);
	Bytes back;
	bool eof = false;
	ASSERT_TRUE(stats(&a, &why)) << why;
	NFS_OK(c, c.read(cf.f, 0, kRead, &back, &eof));
	ASSERT_EQ(t->last_spec.writes.size(), 1u) << "the READ asked for a Write chunk";
	EXPECT_EQ(crc32c(back), crc32c(cf.data));
	Nfs4 c4(*t);
	Fh d4, f4;
	Stateid sid;
	ASSERT_NO_FATAL_FAILURE(open_v4(c4, cf, &d4, &f4, &sid));
	for (auto &r : eight)
		r.second = 32768;
	std::vector<Bytes> got;
	NFS_OK(c4, c4.read_multi(f4, sid, eight, &got));
	ASSERT_EQ(got.size(), eight.size());
	for (size_t i = 0; i < got.size(); i++)
		EXPECT_TRUE(std::equal(got[i].begin(), got[i].end(),
				       cf.data.begin() + long(eight[i].first)))
		    << "READ " << i;
	ASSERT_TRUE(stats(&b, &why)) << why;
	EXPECT_EQ(b.at("global.payload_copies") - a.at("global.payload_copies"), 0)
	    << "READ data bounced: a payload pool buffer of the given-up Replies leaked";
	NFS_OK(c4, c4.close(f4, sid));
	NFS_OK(c4, c4.destroy_session());
}

} // namespace
} // namespace rrplug
