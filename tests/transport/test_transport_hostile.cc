// SPDX-License-Identifier: MIT
/*
 * A table of hostile requesters (RFC 8166 sections 4 and 5.3; the rule in
 * docs/architecture.md: bad input gets a protocol answer or a clean
 * disconnect): each row sends one malformed or malicious transport message
 * built byte by byte and names what the server must do - ERR_VERS with
 * low = high = 1, ERR_CHUNK, drop silently, or close that connection - and
 * in every case the server must keep serving: the same connection (unless it
 * was closed) and a fresh one both answer a NULL call afterwards.
 */
#include "transport/rr_transport_fixture.h"

using namespace rrtest;

namespace {

/* SERVE_OTHERS: ERR_CHUNK or a close are both acceptable (svcrdma closes
 * after a Read-list overrun); the server must go on serving others. */
enum class Expect { ERR_VERS, ERR_CHUNK, DROP, CLOSE, SURVIVE, SERVE_OTHERS };

struct Msg {
	std::vector<uint8_t> bytes;
	std::vector<RegionP> keep;
};

/* A NULL call's RPC message, for rows that need a well-formed body. */
std::vector<uint8_t> null_body(uint32_t xid)
{
	return call_null(xid).rpc;
}

struct Row {
	const char *name;
	Expect expect;
	Msg (*build)(Requester &q, uint32_t xid);
};

void PrintTo(const Row &r, std::ostream *os)
{
	*os << r.name;
}

Wire hdr(uint32_t xid, uint32_t proc, uint32_t vers = 1)
{
	Wire w;
	w.fixed(xid, vers, 32, proc);
	return w;
}

const Row kRows[] = {
	{"BadVersion2", Expect::ERR_VERS,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSG, 2);
		 w.u32(0).u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {}};
	 }},
	{"BadVersion0", Expect::ERR_VERS,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSG, 0);
		 w.u32(0).u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {}};
	 }},
	{"TruncatedHeader12Bytes", Expect::ERR_CHUNK,
	 [](Requester &, uint32_t xid) {
		 Wire w;
		 w.u32(xid).u32(1).u32(32);
		 return Msg{w.b, {}};
	 }},
	{"TruncatedHeader3Bytes", Expect::DROP,
	 [](Requester &, uint32_t) { return Msg{{1, 2, 3}, {}}; }},
	{"EmptySend", Expect::DROP, [](Requester &, uint32_t) { return Msg{{}, {}}; }},
	{"FixedPartOnly", Expect::ERR_CHUNK,
	 [](Requester &, uint32_t xid) { return Msg{hdr(xid, RDMA_MSG).b, {}}; }},
	{"TruncatedReadSegment", Expect::ERR_CHUNK,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(1).u32(0).u32(0x1234).u32(100);	/* segment cut after length */
		 return Msg{w.b, {}};
	 }},
	{"TruncatedWriteChunk", Expect::ERR_CHUNK,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(0).u32(1).u32(3).seg({0x1234, 100, 0});	/* 3 segments promised, 1 sent */
		 return Msg{w.b, {}};
	 }},
	{"WriteChunkNsegMax", Expect::ERR_CHUNK,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(0).u32(1).u32(0xffffffff).seg({0x1234, 100, 0});
		 w.u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {}};
	 }},
	{"ReplyChunkNseg65536", Expect::ERR_CHUNK,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(0).u32(0).u32(1).u32(65536).seg({0x1234, 100, 0});
		 w.bytes(null_body(xid));
		 return Msg{w.b, {}};
	 }},
	{"TooManyWriteChunks", Expect::ERR_CHUNK,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(0);
		 for (int i = 0; i < 40; i++)
			 w.u32(1).u32(1).seg({0x1234u + i, 100, 0});
		 w.u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {}};
	 }},
	{"TooManyReadChunks", Expect::ERR_CHUNK,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSG);
		 for (uint32_t i = 0; i < 40; i++)
			 w.u32(1).u32(40 + 4 * i).seg({0x1234 + i, 4, 0});
		 w.u32(0).u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {}};
	 }},
	{"BadListDiscriminator", Expect::ERR_CHUNK,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(2).u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {}};
	 }},
	{"UnalignedReadPosition", Expect::ERR_CHUNK,
	 [](Requester &q, uint32_t xid) {
		 RegionP r = q.reg(100, FAB_ACCESS_REMOTE_READ);
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(1).u32(6).seg({r->rkey(), 100, r->addr()}).u32(0);
		 w.u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {r}};
	 }},
	{"OverlappingReadSegments", Expect::ERR_CHUNK,
	 [](Requester &q, uint32_t xid) {
		 RegionP r = q.reg(8192, FAB_ACCESS_REMOTE_READ);
		 TestCall c = call_data(xid, RRT_PROC_SINK, std::vector<uint8_t>(8192, 1));
		 Wire w = hdr(xid, RDMA_MSG);
		 uint32_t pos = uint32_t(c.data_pos);
		 w.u32(1).u32(pos).seg({r->rkey(), 4096, r->addr()});
		 w.u32(1).u32(pos).seg({r->rkey(), 4096, r->addr() + 2048});
		 w.u32(0).u32(0).u32(0);
		 w.bytes(std::vector<uint8_t>(c.rpc.begin(), c.rpc.begin() + pos));
		 return Msg{w.b, {r}};
	 }},
	{"OverlappingReadChunkPositions", Expect::ERR_CHUNK,
	 [](Requester &q, uint32_t xid) {
		 RegionP r = q.reg(8192, FAB_ACCESS_REMOTE_READ);
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(1).u32(40).seg({r->rkey(), 1000, r->addr()});
		 w.u32(1).u32(44).seg({r->rkey(), 1000, r->addr() + 4096});
		 w.u32(0).u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {r}};
	 }},
	{"ZeroLengthReadSegment", Expect::ERR_CHUNK,
	 [](Requester &q, uint32_t xid) {
		 RegionP r = q.reg(100, FAB_ACCESS_REMOTE_READ);
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(1).u32(40).seg({r->rkey(), 0, r->addr()}).u32(0);
		 w.u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {r}};
	 }},
	{"SegmentOffsetWraps", Expect::ERR_CHUNK,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(1).u32(40).seg({0x1234, 0x1000, ~0ull - 0x10}).u32(0);
		 w.u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {}};
	 }},
	{"ReadChunkOf64MiB", Expect::ERR_CHUNK,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(1).u32(40).seg({0x1234, 64u << 20, 0x10000}).u32(0);
		 w.u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {}};
	 }},
	{"ProcMsgp", Expect::ERR_CHUNK,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSGP);
		 w.u32(4).u32(1024).u32(0).u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {}};
	 }},
	{"ProcUnknown7", Expect::ERR_CHUNK,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, 7);
		 w.u32(0).u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {}};
	 }},
	{"NomsgWithoutPositionZeroChunk", Expect::ERR_CHUNK,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_NOMSG);
		 w.u32(0).u32(0).u32(0);
		 return Msg{w.b, {}};
	 }},
	{"MsgWithPositionZeroChunk", Expect::ERR_CHUNK,
	 [](Requester &q, uint32_t xid) {
		 RegionP r = q.reg(64, FAB_ACCESS_REMOTE_READ);
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(1).u32(0).seg({r->rkey(), 40, r->addr()}).u32(0);
		 w.u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {r}};
	 }},
	{"RdmaDoneIsDropped", Expect::DROP,
	 [](Requester &, uint32_t xid) { return Msg{hdr(xid, RDMA_DONE).b, {}}; }},
	{"RdmaErrorIsDropped", Expect::DROP,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_ERROR);
		 w.u32(ERR_CHUNK);
		 return Msg{w.b, {}};
	 }},
	{"EmptyRpcMessage", Expect::SURVIVE,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(0).u32(0).u32(0);
		 return Msg{w.b, {}};
	 }},
	{"ReadPositionPastTheMessage", Expect::SERVE_OTHERS,
	 [](Requester &q, uint32_t xid) {
		 RegionP r = q.reg(64, FAB_ACCESS_REMOTE_READ);
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(1).u32(4000).seg({r->rkey(), 64, r->addr()}).u32(0);
		 w.u32(0).u32(0).bytes(null_body(xid));
		 return Msg{w.b, {r}};
	 }},
	{"ReadChunksCoverTheWholeCallButInlineHasMore", Expect::SERVE_OTHERS,
	 [](Requester &q, uint32_t xid) {
		 /* a chunk at position 0 of an RDMA_MSG is a PZRC in disguise */
		 RegionP r = q.reg(40, FAB_ACCESS_REMOTE_READ);
		 auto body = null_body(xid);
		 memcpy(r->p, body.data(), 40);
		 Wire w = hdr(xid, RDMA_NOMSG);
		 w.u32(1).u32(0).seg({r->rkey(), 40, r->addr()}).u32(0).u32(0).u32(0);
		 w.bytes(body);	/* inline bytes a NOMSG must not have */
		 return Msg{w.b, {r}};
	 }},
	{"BadRkeyInReadChunk", Expect::CLOSE,
	 [](Requester &, uint32_t xid) {
		 TestCall c = call_data(xid, RRT_PROC_SINK, std::vector<uint8_t>(1000, 7));
		 Wire w = hdr(xid, RDMA_MSG);
		 uint32_t pos = uint32_t(c.data_pos);
		 w.u32(1).u32(pos).seg({0x7fffff00, 1000, 0x100000}).u32(0).u32(0).u32(0);
		 w.bytes(std::vector<uint8_t>(c.rpc.begin(), c.rpc.begin() + pos));
		 return Msg{w.b, {}};
	 }},
	{"ReadSegmentBeyondTheRegion", Expect::CLOSE,
	 [](Requester &q, uint32_t xid) {
		 RegionP r = q.reg(512, FAB_ACCESS_REMOTE_READ);
		 TestCall c = call_data(xid, RRT_PROC_SINK, std::vector<uint8_t>(4000, 7));
		 Wire w = hdr(xid, RDMA_MSG);
		 uint32_t pos = uint32_t(c.data_pos);
		 w.u32(1).u32(pos).seg({r->rkey(), 4000, r->addr()}).u32(0).u32(0).u32(0);
		 w.bytes(std::vector<uint8_t>(c.rpc.begin(), c.rpc.begin() + pos));
		 return Msg{w.b, {r}};
	 }},
	{"ReadChunkWithoutRemoteReadAccess", Expect::CLOSE,
	 [](Requester &q, uint32_t xid) {
		 RegionP r = q.reg(4000, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE);
		 TestCall c = call_data(xid, RRT_PROC_SINK, std::vector<uint8_t>(4000, 7));
		 Wire w = hdr(xid, RDMA_MSG);
		 uint32_t pos = uint32_t(c.data_pos);
		 w.u32(1).u32(pos).seg({r->rkey(), 4000, r->addr()}).u32(0).u32(0).u32(0);
		 w.bytes(std::vector<uint8_t>(c.rpc.begin(), c.rpc.begin() + pos));
		 return Msg{w.b, {r}};
	 }},
	{"BadRkeyInWriteChunk", Expect::CLOSE,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(0).u32(1).u32(1).seg({0x7fffff00, 8192, 0x100000}).u32(0).u32(0);
		 w.bytes(call_source(xid, 8000, 1).rpc);
		 return Msg{w.b, {}};
	 }},
	{"BadRkeyInReplyChunk", Expect::CLOSE,
	 [](Requester &, uint32_t xid) {
		 Wire w = hdr(xid, RDMA_MSG);
		 w.u32(0).u32(0).u32(1).u32(1).seg({0x7fffff00, 16384, 0x100000});
		 w.bytes(call_source(xid, 10000, 1).rpc);
		 return Msg{w.b, {}};
	 }},
};

class Hostile : public TransportTest, public ::testing::WithParamInterface<Row> {
};

TEST_P(Hostile, ServerAnswersAsRequiredAndKeepsServing)
{
	const Row &row = GetParam();
	Requester *q = connect();
	ASSERT_NE(q, nullptr);
	ASSERT_TRUE(ping(q));
	Requester *other = connect();
	ASSERT_NE(other, nullptr);
	ASSERT_TRUE(ping(other));

	uint32_t xid = q->next_xid();
	Msg m = row.build(*q, xid);
	bool answer = row.expect == Expect::ERR_VERS || row.expect == Expect::ERR_CHUNK ||
		      row.expect == Expect::SERVE_OTHERS;
	ASSERT_EQ(q->post_raw(m.bytes, xid, answer, false, m.keep), 0);

	Reply r;
	switch (row.expect) {
	case Expect::ERR_VERS:
		ASSERT_TRUE(q->wait(xid, &r)) << "no ERR_VERS";
		EXPECT_TRUE(r.ok()) << r.describe();
		EXPECT_EQ(r.vers, 1u) << "RDMA_ERROR must carry rdma_vers 1";
		EXPECT_EQ(r.proc, RDMA_ERROR) << r.describe();
		EXPECT_EQ(r.err, ERR_VERS) << r.describe();
		EXPECT_EQ(r.vers_low, 1u);
		EXPECT_EQ(r.vers_high, 1u);
		EXPECT_EQ(r.raw.size(), 28u);
		break;
	case Expect::ERR_CHUNK:
		ASSERT_TRUE(q->wait(xid, &r)) << "no ERR_CHUNK";
		EXPECT_TRUE(is_err_chunk(r, xid));
		break;
	case Expect::DROP:
	case Expect::SURVIVE: {
		Reply u;
		bool got = q->wait_unsolicited(&u, 300);
		if (row.expect == Expect::DROP) {
			EXPECT_FALSE(got) << "expected no answer, got " << u.describe();
		}
		break;
	}
	case Expect::CLOSE:
		EXPECT_TRUE(q->wait_disconnected(5000)) << "the connection should be closed";
		break;
	case Expect::SERVE_OTHERS:
		if (q->wait(xid, &r, 2000)) {
			EXPECT_TRUE(r.ok()) << r.describe();
			EXPECT_TRUE(r.proc == RDMA_ERROR || r.proc == RDMA_MSG) << r.describe();
		}
		break;
	}
	if (row.expect != Expect::CLOSE && row.expect != Expect::SERVE_OTHERS) {
		EXPECT_TRUE(q->connected()) << "header faults never disconnect";
		EXPECT_TRUE(ping(q)) << "the same connection still answers";
	}
	EXPECT_TRUE(ping(other)) << "another connection still answers";
	Requester *fresh = connect();
	ASSERT_NE(fresh, nullptr);
	EXPECT_TRUE(ping(fresh)) << "a new connection is served";
	auto st = srv.stats();
	if (row.expect == Expect::ERR_VERS) {
		EXPECT_GE(st["err_vers_sent"], 1u);
	}
	if (row.expect == Expect::ERR_CHUNK) {
		EXPECT_GE(st["err_chunk_sent"], 1u);
	}
	if (row.expect == Expect::DROP) {
		EXPECT_GE(st["dropped"], 1u);
	}
}

INSTANTIATE_TEST_SUITE_P(Table, Hostile, ::testing::ValuesIn(kRows),
			 [](const ::testing::TestParamInfo<Row> &i) { return std::string(i.param.name); });

/* RFC 8797: malformed or short private data is ignored (1024-byte inline). */
class HostilePrivateData : public TransportTest {
};

TEST_F(HostilePrivateData, ShortAndBadMagicAreTreatedAsAbsent)
{
	for (auto raw : std::vector<std::vector<uint8_t>>{
		     {0xf6, 0xab, 0x0e},
		     {0xde, 0xad, 0xbe, 0xef, 1, 1, 3, 3},
		     {0xf6, 0xab, 0x0e, 0x18, 9, 1, 3, 3}}) {
		RequesterOptions o;
		o.priv.raw = raw;
		Requester *q = connect(o);
		ASSERT_NE(q, nullptr);
		ASSERT_TRUE(ping(q));
		/* 1024 bytes is all the server may send it inline */
		TestCall c = call_source(q->next_xid(), 1500, 2);
		Reply r;
		ASSERT_TRUE(q->call(c.rpc, CallSpec(), &r));
		EXPECT_LE(r.raw.size(), 1024u) << r.describe();
		EXPECT_TRUE(is_err_chunk(r, c.xid));
	}
}

TEST_F(HostilePrivateData, FullIbPrivateData56Bytes)
{
	RequesterOptions o;
	o.priv.raw = CmPriv().encode();
	o.priv.raw.resize(56, 0);	/* IB CM REQs carry 56 bytes, zero-padded */
	Requester *q = connect(o);
	ASSERT_NE(q, nullptr);
	ASSERT_TRUE(ping(q));
	TestCall c = call_source(q->next_xid(), 3000, 2);
	Reply r;
	ASSERT_TRUE(q->call(c.rpc, CallSpec(), &r));
	EXPECT_TRUE(opaque_result(r, c.xid, pattern(2, 3000)));
}

} // namespace
