// SPDX-License-Identifier: MIT
/*
 * test_plugin_nfs3.cc - NFSv3 through real ganesha + the rpcrdma plugin on
 * the soft fabric: data through Read/Write chunks with checksums, READLINK
 * by Write chunk and inline, a big READDIR/READDIRPLUS through a Reply
 * chunk, a Long Call, and ERR_CHUNK for a reply that fits nowhere.
 * The same client over TCP is the reference.
 */
#include "support/plugin_common.h"

#include <algorithm>
#include <set>

using namespace nfsc;

namespace rrplug
{
namespace
{

class Nfs3Rdma : public PluginTest
{
      protected:
	void SetUp() override
	{
		PluginTest::SetUp();
		if (IsSkipped() || HasFatalFailure())
			return;
		root = mount3();
		ASSERT_FALSE(root.empty());
		t = rdma();
		ASSERT_TRUE(t);
		c.reset(new Nfs3(*t));
		NFS_OK(*c, c->null());
		NFS_OK(*c, c->mkdir(root, unique("d3"), 0755, &dir));
	}
	/* A new file @name in dir holding @data, both calls over RDMA (the
	 * WRITE last, so t->last_spec is its). */
	void create_written(const std::string &name, const Bytes &data, Fh *f)
	{
		NFS_OK(*c, c->create(dir, name, 0644, f));
		NFS_OK(*c, c->write(*f, 0, data));
	}
	Fh root, dir;
	std::unique_ptr<RdmaTransport> t;
	std::unique_ptr<Nfs3> c;
};

TEST_F(Nfs3Rdma, GetattrLookupCreateRemove)
{
	Attr a;
	NFS_OK(*c, c->getattr(root, &a));
	EXPECT_EQ(a.type, 2u) << "root is a directory";
	Fh f, f2;
	NFS_OK(*c, c->create(dir, "file", 0644, &f));
	Attr fa;
	NFS_OK(*c, c->lookup(dir, "file", &f2, &fa));
	EXPECT_EQ(fa.type, 1u);
	EXPECT_EQ(fa.size, 0u);
	NFS_OK(*c, c->getattr(f2, &fa));
	NFS_OK(*c, c->remove(dir, "file"));
	EXPECT_EQ(c->lookup(dir, "file", &f2), 2) << "NFS3ERR_NOENT after REMOVE";
}

/* WRITE data in a Read chunk, READ data into a Write chunk (+ pad when unaligned). */
TEST_F(Nfs3Rdma, WriteReadThroughChunks)
{
	t->policy.call_ddp = Ddp::ALWAYS;
	t->policy.reply_ddp = Ddp::ALWAYS;
	for (size_t n : {size_t(1), size_t(4095), size_t(1) << 20, (size_t(1) << 20) + 3}) {
		SCOPED_TRACE("length " + std::to_string(n));
		Fh f;
		Bytes data = test_data(n, uint32_t(n));
		ASSERT_NO_FATAL_FAILURE(create_written("f" + std::to_string(n), data, &f));
		EXPECT_EQ(t->last_spec.mode, rrtest::CallSpec::READ);
		ASSERT_EQ(t->last_spec.reads.size(), 1u);
		EXPECT_EQ(t->last_spec.reads[0].len, n);
		Attr a;
		NFS_OK(*c, c->getattr(f, &a));
		EXPECT_EQ(a.size, n);
		Bytes back;
		bool eof = false;
		NFS_OK(*c, c->read(f, 0, uint32_t(n), &back, &eof));
		ASSERT_EQ(t->last_spec.writes.size(), 1u);
		EXPECT_EQ(t->last_spec.writes[0].pad, (n & 3) != 0);
		ASSERT_EQ(c->last().chunks.size(), 1u);
		EXPECT_EQ(c->last().chunks[0].size(), n) << "READ data came by RDMA Write";
		EXPECT_TRUE(eof);
		ASSERT_EQ(back.size(), n);
		EXPECT_EQ(crc32c(back), crc32c(data));
	}
}

/*
 * ganesha 4.3 decodes WRITE data with xdr_bytes (malloc, then getbytes). The
 * plugin lends the Read chunk's own buffer to that malloc, so the payload is
 * decoded in place: the copy counter stays at the few handle/credential bytes
 * of the Call, the in-place counter grows by the payload, and the data that
 * lands in the file is the client's - for aligned and unaligned lengths
 * (the XDR pad comes from outside the chunk).
 */
TEST_F(Nfs3Rdma, WritePayloadDecodedInPlaceNotCopied)
{
	t->policy.call_ddp = Ddp::ALWAYS;
	Json j;
	std::string why;
	if (!stats(&j, &why))
		GTEST_SKIP() << why;
	for (size_t n : {size_t(1) << 20, size_t(4096), size_t(70001), (size_t(1) << 20) - 3}) {
		SCOPED_TRACE("length " + std::to_string(n));
		Fh f;
		NFS_OK(*c, c->create(dir, "inplace" + std::to_string(n), 0644, &f));
		Bytes data = test_data(n, 11);
		ASSERT_TRUE(stats(&j, &why)) << why;
		double copied0 = j.at("plugin.decode_copy_bytes");
		double inplace0 = j.at("plugin.decode_in_place_bytes");
		ASSERT_GE(copied0, 0) << "plugin.decode_copy_bytes missing from the stats socket";
		ASSERT_GE(inplace0, 0) << "plugin.decode_in_place_bytes missing";
		NFS_OK(*c, c->write(f, 0, data));
		ASSERT_EQ(t->last_spec.reads.size(), 1u) << "the payload went in a Read chunk";
		ASSERT_TRUE(stats(&j, &why)) << why;
		EXPECT_EQ(j.at("plugin.decode_in_place_bytes") - inplace0, double(n));
		EXPECT_LT(j.at("plugin.decode_copy_bytes") - copied0, 1024.0)
			<< "the payload was copied";
		Bytes back;
		bool eof = false;
		NFS_OK(*c, c->read(f, 0, uint32_t(n), &back, &eof));
		ASSERT_EQ(back.size(), n);
		EXPECT_EQ(crc32c(back), crc32c(data));
	}
}

/* The same sizes with the client's AUTO policy (like Linux: inline when it fits). */
TEST_F(Nfs3Rdma, WriteReadAutoMatchesTcp)
{
	auto tt = tcp_nfs();
	ASSERT_TRUE(tt);
	Nfs3 tc(*tt);
	for (size_t n : {size_t(100), size_t(3000), size_t(70000), (size_t(1) << 20) + 3}) {
		SCOPED_TRACE("length " + std::to_string(n));
		Fh f;
		Bytes data = test_data(n, 7);
		ASSERT_NO_FATAL_FAILURE(create_written("a" + std::to_string(n), data, &f));
		Bytes rd, tcpd;
		bool eof;
		NFS_OK(*c, c->read(f, 0, uint32_t(n), &rd, &eof));
		NFS_OK(tc, tc.read(f, 0, uint32_t(n), &tcpd, &eof));
		EXPECT_EQ(crc32c(rd), crc32c(data));
		EXPECT_EQ(crc32c(tcpd), crc32c(data)) << "TCP sees what RDMA wrote";
	}
}

/* Partial and offset reads, EOF handling, through Write chunks. */
TEST_F(Nfs3Rdma, ReadAtOffsetsAndPastEof)
{
	t->policy.reply_ddp = Ddp::ALWAYS;
	Fh f;
	Bytes data = test_data(10001, 3);
	ASSERT_NO_FATAL_FAILURE(create_written("off", data, &f));
	Bytes b;
	bool eof = true;
	NFS_OK(*c, c->read(f, 5, 4097, &b, &eof));
	EXPECT_FALSE(eof);
	ASSERT_EQ(b.size(), 4097u);
	EXPECT_TRUE(std::equal(b.begin(), b.end(), data.begin() + 5));
	NFS_OK(*c, c->read(f, 9000, 4096, &b, &eof));
	EXPECT_TRUE(eof);
	ASSERT_EQ(b.size(), 1001u) << "short read at EOF";
	EXPECT_TRUE(std::equal(b.begin(), b.end(), data.begin() + 9000));
	NFS_OK(*c, c->read(f, 20000, 4096, &b, &eof));
	EXPECT_TRUE(eof);
	EXPECT_EQ(b.size(), 0u);
}

/*
 * READ data whose length is not a multiple of 4 goes by RDMA Write from the
 * payload pool too: ganesha 6 moves such data's last len % 4 bytes into a
 * pad buffer of its own (xdr_io_data), which must not make the whole
 * payload a bounce copy (rrp_xdr.c, enc_untrim).
 */
TEST_F(Nfs3Rdma, UnalignedReadsAreNotCopied)
{
	t->policy.reply_ddp = Ddp::ALWAYS;
	Fh f;
	Bytes data = test_data(70001, 9);
	ASSERT_NO_FATAL_FAILURE(create_written("odd", data, &f));
	nfsc::Json j;
	std::string why;
	ASSERT_TRUE(stats(&j, &why)) << why;
	double copies0 = j.at("global.payload_copies");
	/* mid-file 4097 and 65537 bytes, then a 369-byte short read at EOF */
	const uint64_t offs[] = {5, 1, 69632};
	const uint32_t counts[] = {4097, 65537, 4096};
	const size_t want[] = {4097, 65537, 369};
	for (int i = 0; i < 3; i++) {
		Bytes b;
		bool eof = false;

		NFS_OK(*c, c->read(f, offs[i], counts[i], &b, &eof));
		ASSERT_EQ(t->last_spec.writes.size(), 1u) << "the READ asked for a Write chunk";
		ASSERT_EQ(b.size(), want[i]);
		EXPECT_TRUE(std::equal(b.begin(), b.end(), data.begin() + offs[i])) << "read " << i;
	}
	ASSERT_TRUE(stats(&j, &why)) << why;
	EXPECT_EQ(j.at("global.payload_copies") - copies0, 0)
	    << "unaligned READ data was copied into a bounce buffer";
}

TEST_F(Nfs3Rdma, ReadlinkWriteChunkAndInline)
{
	std::string target = "/some/where/" + std::string(300, 'x') + "/end";
	Fh l;
	NFS_OK(*c, c->symlink(dir, "link", target, &l));
	std::string got;
	t->policy.reply_ddp = Ddp::ALWAYS;
	NFS_OK(*c, c->readlink(l, &got));
	EXPECT_EQ(got, target);
	ASSERT_EQ(c->last().chunks.size(), 1u);
	EXPECT_EQ(c->last().chunks[0].size(), target.size()) << "READLINK path by RDMA Write";
	t->policy.reply_ddp = Ddp::NEVER;
	got.clear();
	NFS_OK(*c, c->readlink(l, &got));
	EXPECT_EQ(got, target);
	EXPECT_TRUE(t->last_spec.writes.empty());
	EXPECT_EQ(c->last().shape, "inline -> inline");
	/* SYMLINK path in a Read chunk */
	t->policy.call_ddp = Ddp::ALWAYS;
	NFS_OK(*c, c->symlink(dir, "link2", target + "2", &l));
	EXPECT_EQ(t->last_spec.mode, rrtest::CallSpec::READ);
	t->policy.reply_ddp = Ddp::AUTO;
	NFS_OK(*c, c->readlink(l, &got));
	EXPECT_EQ(got, target + "2");
}

TEST_F(Nfs3Rdma, BigReaddirThroughReplyChunk)
{
	const int n = 300;
	std::set<std::string> names;
	for (int i = 0; i < n; i++) {
		std::string nm =
		    "entry-" + std::to_string(i) + "-" + std::string(180, 'a' + i % 26);
		Fh f;
		NFS_OK(*c, c->create(dir, nm, 0644, &f));
		names.insert(nm);
	}
	std::vector<DirEntry> ents;
	bool eof = false;
	double rch = stat("replies_reply_chunk");
	NFS_OK(*c, c->readdir_once(dir, 0, 65536, &ents, &eof));
	EXPECT_EQ(c->last().shape, "inline -> reply-chunk");
	if (rch >= 0) {
		EXPECT_EQ(stat("replies_reply_chunk"), rch + 1);
	}
	EXPECT_FALSE(t->last_spec.reply.empty());
	NFS_OK(*c, c->readdir(dir, &ents, 65536));
	std::set<std::string> got;
	for (const auto &e : ents)
		if (e.name != "." && e.name != "..")
			got.insert(e.name);
	EXPECT_EQ(got, names);

	std::vector<DirEntry> plus;
	NFS_OK(*c, c->readdirplus(dir, &plus, 65536));
	std::set<std::string> gotp;
	for (const auto &e : plus)
		if (e.name != "." && e.name != "..") {
			gotp.insert(e.name);
			EXPECT_FALSE(e.fh.empty()) << e.name;
		}
	EXPECT_EQ(gotp, names);

	/* TCP lists the same */
	auto tt = tcp_nfs();
	ASSERT_TRUE(tt);
	Nfs3 tc(*tt);
	std::vector<DirEntry> tents;
	NFS_OK(tc, tc.readdir(dir, &tents, 65536));
	EXPECT_EQ(tents.size(), ents.size());
}

/* A WRITE sent as RDMA_NOMSG with a Position-Zero Read chunk. */
TEST_F(Nfs3Rdma, LongCallWrite)
{
	Fh f;
	NFS_OK(*c, c->create(dir, "long", 0644, &f));
	t->policy.long_call = true;
	Bytes data = test_data(12345, 11);
	double lc = stat("long_calls");
	NFS_OK(*c, c->write(f, 0, data));
	if (lc >= 0) {
		EXPECT_EQ(stat("long_calls"), lc + 1);
	}
	EXPECT_EQ(t->last_spec.mode, rrtest::CallSpec::LONG);
	EXPECT_EQ(c->last().shape, "long-call -> inline");
	/* a Long Call GETATTR too */
	Attr a;
	NFS_OK(*c, c->getattr(f, &a));
	EXPECT_EQ(a.size, data.size());
	t->policy.long_call = false;
	Bytes back;
	bool eof;
	NFS_OK(*c, c->read(f, 0, uint32_t(data.size()), &back, &eof));
	EXPECT_EQ(crc32c(back), crc32c(data));
}

/* Multi-segment chunks: Read chunk in 5 segments, Write chunk in 8 (+ pad),
 * Reply chunk in 3; a Long Call whose WRITE data rides in its own Read chunk
 * positioned in the Position-Zero stream. */
TEST_F(Nfs3Rdma, MultiSegmentChunksAndLongCallWithDataChunk)
{
	Fh f;
	NFS_OK(*c, c->create(dir, "segs", 0644, &f));
	t->policy.call_ddp = Ddp::ALWAYS;
	t->policy.reply_ddp = Ddp::ALWAYS;
	t->policy.read_segs = 5;
	t->policy.write_segs = 8;
	Bytes data = test_data((1 << 20) + 3, 21);
	NFS_OK(*c, c->write(f, 0, data));
	Bytes back;
	bool eof;
	NFS_OK(*c, c->read(f, 0, uint32_t(data.size()), &back, &eof));
	ASSERT_EQ(t->last_spec.writes.size(), 1u);
	EXPECT_EQ(t->last_spec.writes[0].segs.size(), 8u);
	EXPECT_TRUE(t->last_spec.writes[0].pad);
	EXPECT_EQ(crc32c(back), crc32c(data));

	for (int i = 0; i < 60; i++) {
		Fh x;
		NFS_OK(*c,
		       c->create(dir, "m" + std::to_string(i) + std::string(90, 'r'), 0644, &x));
	}
	t->policy.reply_segs = 3;
	std::vector<DirEntry> ents;
	NFS_OK(*c, c->readdir_once(dir, 0, 32768, &ents, &eof));
	EXPECT_EQ(t->last_spec.reply.size(), 3u);
	EXPECT_EQ(c->last().shape, "inline -> reply-chunk");
	EXPECT_TRUE(eof);
	EXPECT_EQ(ents.size(), 63u);

	t->policy.long_call = true;
	t->policy.long_call_items = true;
	t->policy.read_segs = 1;
	Bytes d2 = test_data(70001, 22);
	NFS_OK(*c, c->write(f, 0, d2));
	EXPECT_EQ(t->last_spec.mode, rrtest::CallSpec::LONG);
	EXPECT_EQ(t->last_spec.reads.size(), 1u);
	t->policy.long_call = false;
	NFS_OK(*c, c->read(f, 0, uint32_t(d2.size()), &back, &eof));
	EXPECT_EQ(crc32c(back), crc32c(d2));
}

/* A reply that fits neither inline nor the offered Reply chunk gets ERR_CHUNK;
 * the connection and the server carry on. */
TEST_F(Nfs3Rdma, ReplyTooBigForReplyChunkGetsErrChunk)
{
	for (int i = 0; i < 100; i++) {
		Fh f;
		NFS_OK(*c,
		       c->create(dir, "e" + std::to_string(i) + std::string(100, 'q'), 0644, &f));
	}
	t->policy.reply_chunk = 64; /* far too small for the listing */
	std::vector<DirEntry> ents;
	bool eof;
	double errs = stat("err_chunk_sent");
	int rc = c->readdir_once(dir, 0, 65536, &ents, &eof);
	if (errs >= 0) {
		EXPECT_EQ(stat("err_chunk_sent"), errs + 1);
	}
	EXPECT_EQ(rc, E_RDMA_ERROR) << c->err() << " [" << c->last().shape << "]";
	EXPECT_TRUE(c->last().rdma_error);
	EXPECT_EQ(c->last().rdma_err, uint32_t(rrtest::ERR_CHUNK));
	EXPECT_TRUE(t->requester().connected());
	t->policy.reply_chunk = -1;
	NFS_OK(*c, c->null());
	Attr a;
	NFS_OK(*c, c->getattr(dir, &a));
	ents.clear();
	NFS_OK(*c, c->readdir(dir, &ents));
	EXPECT_EQ(ents.size(), 102u);
}

/* Forwards to another transport and keeps the last Call, to send it again
 * byte for byte (same xid), as a client retransmits. */
class Retransmitter : public Transport
{
      public:
	explicit Retransmitter(Transport &inner) : inner_(inner)
	{
	}
	bool call(const Bytes &rpc, const CallOpts &o, TransportReply *r,
		  std::string *err) override
	{
		last = rpc;
		opts = o;
		return inner_.call(rpc, o, r, err);
	}
	std::string name() const override
	{
		return "retransmit(" + inner_.name() + ")";
	}
	/* @rpc as sent: the NFSv3 status of its Reply, or -1 */
	int resend(const Bytes &rpc, std::string *why)
	{
		TransportReply r;
		if (!inner_.call(rpc, opts, &r, why) || r.rdma_error)
			return -1;
		Dec d(r);
		uint32_t xid = uint32_t(rpc[0]) << 24 | uint32_t(rpc[1]) << 16 |
			       uint32_t(rpc[2]) << 8 | rpc[3];
		if (!rpc_reply_ok(d, xid, why))
			return -1;
		return int(d.u32());
	}
	Bytes last;
	CallOpts opts;

      private:
	Transport &inner_;
};

/*
 * ganesha's duplicate-request cache works over RDMA as over TCP: a REMOVE
 * retransmitted with its xid is answered from the cache (NFS3_OK again, not
 * NFS3ERR_NOENT), while a different Call under the same xid is run - the
 * transport's checksum of the Call (x_checksum) tells the two apart.
 */
TEST_F(Nfs3Rdma, RetransmittedCallIsAnsweredFromTheDuplicateRequestCache)
{
	Retransmitter rt(*t);
	Nfs3 c3(rt);
	Fh f;
	NFS_OK(c3, c3.create(dir, "dup1", 0644, &f));
	NFS_OK(c3, c3.create(dir, "dup2", 0644, &f));
	NFS_OK(c3, c3.remove(dir, "dup1"));
	Bytes call = rt.last;
	std::string why;
	EXPECT_EQ(rt.resend(call, &why), 0) << "the cached NFS3_OK, not NFS3ERR_NOENT (2) " << why;
	EXPECT_EQ(c3.lookup(dir, "dup1", &f), 2) << "still removed";

	/* same xid, another name: a new Call, so it runs */
	const std::string from = "dup1", to = "dup2";
	auto at = std::search(call.begin(), call.end(), from.begin(), from.end());
	ASSERT_NE(at, call.end());
	std::copy(to.begin(), to.end(), at);
	EXPECT_EQ(rt.resend(call, &why), 0) << why;
	EXPECT_EQ(c3.lookup(dir, "dup2", &f), 2) << "run, not answered from the cache";
}

} // namespace
} // namespace rrplug

namespace rrplug
{
namespace
{
/* The reference: the same client over ganesha's own TCP transport. */
TEST_F(PluginTest, Nfs3OverTcpBaseline)
{
	Fh root = mount3();
	ASSERT_FALSE(root.empty());
	auto tt = tcp_nfs();
	ASSERT_TRUE(tt);
	Nfs3 c(*tt);
	NFS_OK(c, c.null());
	Fh d, f;
	NFS_OK(c, c.mkdir(root, unique("tcp"), 0755, &d));
	NFS_OK(c, c.create(d, "f", 0644, &f));
	for (size_t n : {size_t(1), size_t(100), size_t(4095), (size_t(1) << 20) + 3}) {
		SCOPED_TRACE("length " + std::to_string(n));
		Bytes data = test_data(n, 5);
		NFS_OK(c, c.write(f, 0, data));
		Bytes back;
		bool eof;
		NFS_OK(c, c.read(f, 0, uint32_t(n), &back, &eof));
		ASSERT_EQ(back.size(), n);
		EXPECT_EQ(crc32c(back), crc32c(data));
	}
}
} // namespace
} // namespace rrplug
