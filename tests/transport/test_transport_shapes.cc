// SPDX-License-Identifier: MIT
/*
 * Every Call and Reply shape of RFC 8166 section 3.5 end to end, engine in
 * its own process (rr_test_server), the independent requester here; every
 * payload is checked byte for byte and every reply header by the requester.
 */
#include "transport/rr_transport_fixture.h"
#include <unistd.h>

using namespace rrtest;

namespace {

class Shapes : public TransportTest {
      protected:
	std::mt19937 rng{12345};
	Requester *q = nullptr;

	void SetUp() override
	{
		TransportTest::SetUp();
		q = connect();
		ASSERT_NE(q, nullptr);
		/* the first reply sets the grant (RFC 8166 section 3.3.3) */
		ASSERT_TRUE(ping(q));
	}

	/* A @len-byte result (pattern @seed) with a Reply chunk of @chunk
	 * offered: by default 50,000 bytes, which go by the 64 KiB chunk. */
	void reply_chunk_call(uint32_t len = 50000, std::vector<uint32_t> chunk = {65536},
			      uint32_t seed = 4)
	{
		TestCall c = call_source(q->next_xid(), len, seed);
		CallSpec rc;
		rc.reply = std::move(chunk);
		Reply r;
		ASSERT_TRUE(q->call(c.rpc, rc, &r));
		EXPECT_TRUE(opaque_result(r, c.xid, pattern(seed, len)));
	}

	void echo(const std::vector<uint8_t> &data, CallSpec spec, bool auth_sys = false,
		  int timeout_ms = 10000)
	{
		TestCall c = call_data(q->next_xid(), RRT_PROC_ECHO, data, auth_sys);
		if (spec.mode != CallSpec::INLINE && spec.reads.empty())
			spec.reads.push_back({c.data_pos, c.data_len});
		Reply r;
		ASSERT_TRUE(q->call(c.rpc, spec, &r, timeout_ms)) << q->last_error();
		EXPECT_TRUE(opaque_result(r, c.xid, data));
	}
};

TEST_F(Shapes, ServerPrivateDataIsRfc8797)
{
	EXPECT_TRUE(q->server_priv_valid());
	EXPECT_EQ(q->server_priv().magic, kCmPrivMagic);
	EXPECT_EQ(q->server_priv().version, 1);
	EXPECT_GE(q->server_priv().send_size, 1024u);
	EXPECT_GE(q->server_priv().recv_size, 1024u);
	EXPECT_GE(q->grant(), 1u);
}

/*
 * The Linux client connects with responder_resources = its IRD and
 * initiator_depth = 0; the server must take its ORD from the former
 * (docs/linux-client-wire.md, "RDMA Read depth").
 */
TEST_F(Shapes, LinuxConnectParams)
{
	RequesterOptions o;
	o.responder_resources = 16;
	o.initiator_depth = 0;
	Requester *q2 = connect(o);
	ASSERT_NE(q2, nullptr);
	ASSERT_TRUE(ping(q2));
	auto d = random_bytes(rng, 5000);
	TestCall c = call_data(q2->next_xid(), RRT_PROC_SINK, d);
	Reply r;
	ASSERT_TRUE(q2->call(c.rpc, read_spec(c), &r));
	size_t off;
	ASSERT_TRUE(rpc_success(r, c.xid, &off));
}

TEST_F(Shapes, NullInline)
{
	for (int i = 0; i < 10; i++)
		EXPECT_TRUE(ping(q));
}

TEST_F(Shapes, EchoInlineAuthNoneAndAuthSys)
{
	for (size_t len : {0, 1, 3, 4, 100, 1001, 2048}) {
		echo(random_bytes(rng, len), CallSpec(), false);
		echo(random_bytes(rng, len), CallSpec(), true);
	}
}

TEST_F(Shapes, SinkInlineHash)
{
	auto d = random_bytes(rng, 3000);
	TestCall c = call_data(q->next_xid(), RRT_PROC_SINK, d);
	Reply r;
	ASSERT_TRUE(q->call(c.rpc, CallSpec(), &r));
	size_t off;
	ASSERT_TRUE(rpc_success(r, c.xid, &off));
	XdrReader x(r.rpc.data() + off, r.rpc.size() - off);
	EXPECT_EQ(x.u32(), d.size());
	EXPECT_EQ(x.u32(), fnv(d));
}

/* Read chunk at a non-zero position: the opaque data of ECHO/SINK. */
TEST_F(Shapes, ReadChunkAtNonZeroPosition)
{
	for (size_t len : {1, 5, 1000, 4097, 3 * 4096 + 1}) {
		for (uint32_t segs : {1u, 3u}) {
			auto d = random_bytes(rng, len);
			TestCall c = call_data(q->next_xid(), RRT_PROC_SINK, d, segs == 3);
			Reply r;
			ASSERT_TRUE(q->call(c.rpc, read_spec(c, segs), &r)) << q->last_error();
			size_t off;
			ASSERT_TRUE(rpc_success(r, c.xid, &off)) << "len " << len;
			XdrReader x(r.rpc.data() + off, r.rpc.size() - off);
			EXPECT_EQ(x.u32(), d.size());
			EXPECT_EQ(x.u32(), fnv(d)) << "len " << len << " segs " << segs;
		}
	}
}

/*
 * Read chunks need not hold whole XDR items: any 4-aligned range of the Call
 * may travel by RDMA Read, several chunks per call (RFC 8166 section 3.4.5).
 * Here pieces of the RPC header go in their own chunks beside the data.
 */
TEST_F(Shapes, SeveralReadChunksAtArbitraryAlignedPositions)
{
	auto d = random_bytes(rng, 6001);
	TestCall c = call_data(q->next_xid(), RRT_PROC_SINK, d, true);
	CallSpec s;
	s.mode = CallSpec::READ;
	s.reads = {{8, 8}, {20, 4}, {c.data_pos, c.data_len}};
	s.read_segs = 2;
	Reply r;
	ASSERT_TRUE(q->call(c.rpc, s, &r)) << q->last_error();
	size_t off;
	ASSERT_TRUE(rpc_success(r, c.xid, &off));
	XdrReader x(r.rpc.data() + off, r.rpc.size() - off);
	EXPECT_EQ(x.u32(), d.size());
	EXPECT_EQ(x.u32(), fnv(d));

	/* and in a Long Call, indexing the Position-Zero stream */
	CallSpec l = s;
	l.mode = CallSpec::LONG;
	l.reads = {{12, 4}, {c.data_pos, c.data_len}};
	TestCall c2 = call_data(q->next_xid(), RRT_PROC_SINK, d, true);
	ASSERT_TRUE(q->call(c2.rpc, l, &r)) << q->last_error();
	ASSERT_TRUE(rpc_success(r, c2.xid, &off));
	XdrReader x2(r.rpc.data() + off, r.rpc.size() - off);
	EXPECT_EQ(x2.u32(), d.size());
	EXPECT_EQ(x2.u32(), fnv(d));
}

/*
 * The engine tells the upper layer where each Read chunk's data lies
 * (rr_call.chunk_data), so an upper layer can hand the data on by reference:
 * every chunk but a Position-Zero one, in position order, each exactly one
 * element of the Call's iovecs, holding the bytes at its position.
 */
TEST_F(Shapes, ChunkDataListsEachReadChunkWhereItLies)
{
	auto d = random_bytes(rng, 6001);
	TestCall c = call_data(q->next_xid(), RRT_PROC_CHUNKS, d, true);
	auto fnv_at = [&](const std::vector<uint8_t> &rpc, size_t pos, size_t len) {
		return rrt_fnv1a(RRT_FNV_INIT, rpc.data() + pos, len);
	};
	struct Want {
		size_t pos, len;
	};
	auto check = [&](const std::vector<uint8_t> &rpc, const CallSpec &s, uint32_t xid,
			 const std::vector<Want> &want) {
		Reply r;
		ASSERT_TRUE(q->call(rpc, s, &r)) << q->last_error();
		size_t off;
		ASSERT_TRUE(rpc_success(r, xid, &off));
		XdrReader x(r.rpc.data() + off, r.rpc.size() - off);
		ASSERT_EQ(x.u32(), want.size());
		for (const Want &w : want) {
			EXPECT_EQ(x.u32(), w.len);
			EXPECT_EQ(x.u32(), fnv_at(rpc, w.pos, w.len)) << "bytes at " << w.pos;
			EXPECT_EQ(x.u32(), 1u) << "an element of iov[]";
			EXPECT_EQ(x.u32(), w.pos) << "its offset in the Call";
		}
	};
	CallSpec s;
	s.mode = CallSpec::READ;
	s.reads = {{8, 8}, {c.data_pos, c.data_len}};
	s.reads_reversed = true;	/* position order is the engine's to restore */
	s.read_segs = 2;
	check(c.rpc, s, c.xid, {{8, 8}, {c.data_pos, c.data_len}});

	TestCall c2 = call_data(q->next_xid(), RRT_PROC_CHUNKS, d, true);
	CallSpec l;
	l.mode = CallSpec::LONG;
	l.reads = {{c2.data_pos, c2.data_len}};
	check(c2.rpc, l, c2.xid, {{c2.data_pos, c2.data_len}}); /* not the PZRC */

	TestCall c3 = call_data(q->next_xid(), RRT_PROC_CHUNKS, random_bytes(rng, 1000), true);
	check(c3.rpc, CallSpec(), c3.xid, {}); /* inline: none */
}

/* RFC 8166 section 3.4.5.2: the chunk length may include the XDR roundup. */
TEST_F(Shapes, ReadChunkLengthWithRoundup)
{
	CallSpec s;
	s.mode = CallSpec::READ;
	s.read_len_roundup = true;
	echo(random_bytes(rng, 1001), s);
	echo(random_bytes(rng, 2050), s);
}

TEST_F(Shapes, ReadChunkEchoedInlineZeroCopy)
{
	CallSpec s;
	s.mode = CallSpec::READ;
	s.read_segs = 2;
	echo(random_bytes(rng, 3000), s);
}

TEST_F(Shapes, LongCallPositionZero)
{
	for (uint32_t pz : {1u, 4u}) {
		CallSpec s;
		s.mode = CallSpec::LONG;
		s.pz_segs = pz;
		/* a Call larger than the inline threshold, whole in the PZRC */
		auto d = random_bytes(rng, 3000);
		TestCall c = call_data(q->next_xid(), RRT_PROC_SINK, d, true);
		Reply r;
		ASSERT_TRUE(q->call(c.rpc, s, &r)) << q->last_error();
		size_t off;
		ASSERT_TRUE(rpc_success(r, c.xid, &off));
		XdrReader x(r.rpc.data() + off, r.rpc.size() - off);
		EXPECT_EQ(x.u32(), d.size());
		EXPECT_EQ(x.u32(), fnv(d));
	}
}

/* A 1 MiB Call entirely in the Position-Zero Read chunk. */
TEST_F(Shapes, LongCallOneMiB)
{
	auto d = random_bytes(rng, (1 << 20) - 64);
	TestCall c = call_data(q->next_xid(), RRT_PROC_SINK, d);
	CallSpec s;
	s.mode = CallSpec::LONG;
	s.pz_segs = 16;
	Reply r;
	ASSERT_TRUE(q->call(c.rpc, s, &r, 20000)) << q->last_error();
	size_t off;
	ASSERT_TRUE(rpc_success(r, c.xid, &off));
	XdrReader x(r.rpc.data() + off, r.rpc.size() - off);
	EXPECT_EQ(x.u32(), d.size());
	EXPECT_EQ(x.u32(), fnv(d));
}

TEST_F(Shapes, LongCallWithReadChunkAtNonZeroPosition)
{
	auto d = random_bytes(rng, 100000);
	TestCall c = call_data(q->next_xid(), RRT_PROC_SINK, d, true);
	CallSpec s;
	s.mode = CallSpec::LONG;
	s.pz_segs = 2;
	s.reads.push_back({c.data_pos, c.data_len});
	s.read_segs = 3;
	Reply r;
	ASSERT_TRUE(q->call(c.rpc, s, &r)) << q->last_error();
	size_t off;
	ASSERT_TRUE(rpc_success(r, c.xid, &off));
	XdrReader x(r.rpc.data() + off, r.rpc.size() - off);
	EXPECT_EQ(x.u32(), d.size());
	EXPECT_EQ(x.u32(), fnv(d));
}

TEST_F(Shapes, ReadListOutOfOrderOnTheWire)
{
	auto d = random_bytes(rng, 8192);
	TestCall c = call_data(q->next_xid(), RRT_PROC_SINK, d);
	CallSpec s;
	s.mode = CallSpec::LONG;
	s.reads.push_back({c.data_pos, c.data_len});
	s.reads_reversed = true;	/* the data chunk before the PZRC */
	Reply r;
	ASSERT_TRUE(q->call(c.rpc, s, &r)) << q->last_error();
	size_t off;
	ASSERT_TRUE(rpc_success(r, c.xid, &off));
	XdrReader x(r.rpc.data() + off, r.rpc.size() - off);
	EXPECT_EQ(x.u32(), d.size());
	EXPECT_EQ(x.u32(), fnv(d));
}

/* Write chunk of several segments plus the Linux 4-byte pad segment: the pad
 * is never written and comes back with length 0. */
TEST_F(Shapes, WriteChunkWithPadSegment)
{
	CallSpec s;
	s.writes.push_back({{512, 489}, true});
	echo(random_bytes(rng, 1001), s);

	CallSpec s2;
	s2.mode = CallSpec::READ;
	s2.writes.push_back({{4096, 4096, 4096}, true});
	echo(random_bytes(rng, 3 * 4096 - 3), s2);
}

TEST_F(Shapes, WriteChunkLargerThanPayloadIsPartlyFilled)
{
	CallSpec s;
	s.writes.push_back({{1000, 1000, 1000}, false});
	echo(random_bytes(rng, 1500), s);
}

/* A Write chunk the reply does not use is echoed with zero lengths. */
TEST_F(Shapes, UnusedWriteChunkEchoedZero)
{
	auto d = random_bytes(rng, 500);
	TestCall c = call_data(q->next_xid(), RRT_PROC_SINK, d);
	CallSpec s;
	s.writes.push_back({{4096, 4096}, true});
	Reply r;
	ASSERT_TRUE(q->call(c.rpc, s, &r));
	size_t off;
	ASSERT_TRUE(rpc_success(r, c.xid, &off));
	ASSERT_EQ(r.write_echo.size(), 1u);
	for (const auto &sg : r.write_echo[0])
		EXPECT_EQ(sg.length, 0u);
	EXPECT_TRUE(r.write_data[0].empty());

	/* two chunks offered, the payload uses chunk 0, chunk 1 comes back zero */
	CallSpec s2;
	s2.writes.push_back({{2048}, false});
	s2.writes.push_back({{1024, 1024}, true});
	TestCall c2 = call_data(q->next_xid(), RRT_PROC_ECHO, random_bytes(rng, 2000));
	Reply r2;
	ASSERT_TRUE(q->call(c2.rpc, s2, &r2));
	std::vector<uint8_t> want(c2.rpc.begin() + c2.data_pos,
				  c2.rpc.begin() + c2.data_pos + c2.data_len);
	EXPECT_TRUE(opaque_result(r2, c2.xid, want));
	ASSERT_EQ(r2.write_echo.size(), 2u);
	EXPECT_EQ(r2.write_echo[0][0].length, 2000u);
	for (const auto &sg : r2.write_echo[1])
		EXPECT_EQ(sg.length, 0u);
}

/* Long Reply: the whole RPC reply through the Reply chunk, RDMA_NOMSG. */
TEST_F(Shapes, ReplyChunkLongReply)
{
	for (uint32_t len : {5000u, 20001u}) {
		TestCall c = call_source(q->next_xid(), len, len);
		CallSpec s;
		s.reply = {8192, 8192, 8192};
		Reply r;
		ASSERT_TRUE(q->call(c.rpc, s, &r));
		EXPECT_EQ(r.proc, RDMA_NOMSG) << r.describe();
		EXPECT_TRUE(opaque_result(r, c.xid, pattern(len, len)));
	}
}

/* A Reply chunk offered for a reply that fits inline: either is correct. */
TEST_F(Shapes, ReplyChunkOfferedSmallReply)
{
	reply_chunk_call(100, {4096}, 7);
}

TEST_F(Shapes, SourceOneMiBViaWriteChunk)
{
	for (uint32_t len : {1u << 20, (1u << 20) - 3}) {
		TestCall c = call_source(q->next_xid(), len, 99);
		CallSpec s;
		WriteChunkSpec w;
		w.segs.assign(16, 65536);
		w.pad = (len & 3) != 0;
		s.writes.push_back(w);
		Reply r;
		ASSERT_TRUE(q->call(c.rpc, s, &r, 20000)) << q->last_error();
		EXPECT_EQ(r.proc, RDMA_MSG);
		EXPECT_TRUE(opaque_result(r, c.xid, pattern(99, len)));
	}
}

TEST_F(Shapes, EchoOneMiBReadChunkToWriteChunk)
{
	auto d = random_bytes(rng, 1 << 20);
	CallSpec s;
	s.mode = CallSpec::READ;
	s.read_segs = 8;
	WriteChunkSpec w;
	w.segs.assign(64, 16384);	/* 64 segments keep the header inline */
	s.writes.push_back(w);
	echo(d, s, false, 20000);
}

TEST_F(Shapes, SourceWriteChunkAndReplyChunkTogether)
{
	TestCall c = call_source(q->next_xid(), 70000, 3);
	CallSpec s;
	s.writes.push_back({{65536, 8192}, true});
	s.reply = {1024};
	Reply r;
	ASSERT_TRUE(q->call(c.rpc, s, &r));
	EXPECT_TRUE(opaque_result(r, c.xid, pattern(3, 70000)));
}

/* Reply too big for the Reply chunk offered: ERR_CHUNK, not_delivered. */
TEST_F(Shapes, ReplyTooBigForReplyChunkIsErrChunk)
{
	TestCall c = call_source(q->next_xid(), 20000, 1);
	CallSpec s;
	s.reply = {2048, 2048};
	Reply r;
	ASSERT_TRUE(q->call(c.rpc, s, &r));
	EXPECT_TRUE(is_err_chunk(r, c.xid));
	auto st = srv.stats();
	EXPECT_GE(st["not_delivered"], 1u);
	EXPECT_GE(st["err_chunk_sent"], 1u);
	EXPECT_EQ(st["ul_not_delivered"], 1u) << "reply_not_delivered upcall";
	EXPECT_EQ(st["ul_not_delivered_own"], 1u) << "the upcall gets the Reply's own done_arg";
	EXPECT_TRUE(ping(q));
}

TEST_F(Shapes, ReplyTooBigForInlineWithoutReplyChunkIsErrChunk)
{
	TestCall c = call_source(q->next_xid(), 3 * q->inline_recv(), 1);
	Reply r;
	ASSERT_TRUE(q->call(c.rpc, CallSpec(), &r));
	EXPECT_TRUE(is_err_chunk(r, c.xid));
	auto st = srv.stats();
	EXPECT_GE(st["not_delivered"], 1u);
	EXPECT_EQ(st["ul_not_delivered"], 1u) << "reply_not_delivered upcall";
	EXPECT_EQ(st["ul_not_delivered_own"], 1u) << "the upcall gets the Reply's own done_arg";
	EXPECT_TRUE(ping(q));
}

/*
 * The inline threshold counts the transport header (RFC 8166 section 3.3.2):
 * a Reply of exactly the client's receive size goes inline, one XDR word
 * more goes by the Reply chunk, or as ERR_CHUNK when none is offered; a
 * Reply chunk's segments lengthen the header. Lengths from RFC 8166 section
 * 4.2 and RFC 5531 here, not from the engine.
 */
TEST_F(Shapes, InlineThresholdCountsTheHeader)
{
	const uint32_t max = q->inline_recv();
	const uint32_t rpc = 24 + 4;	/* accepted Reply, AUTH_NONE; the opaque's length */
	const uint32_t bare = 7 * 4;	/* fixed part, three empty lists */
	const uint32_t with_rc = bare + 4 + 2 * 16;	/* a Reply chunk of two segments */
	Reply r;

	/* no chunk: exactly full, then one word over */
	TestCall c = call_source(q->next_xid(), max - bare - rpc, 21);
	ASSERT_TRUE(q->call(c.rpc, CallSpec(), &r));
	EXPECT_EQ(r.proc, RDMA_MSG) << r.describe();
	EXPECT_EQ(r.raw.size(), max);
	EXPECT_TRUE(opaque_result(r, c.xid, pattern(21, max - bare - rpc)));
	c = call_source(q->next_xid(), max - bare - rpc + 4, 21);
	ASSERT_TRUE(q->call(c.rpc, CallSpec(), &r));
	EXPECT_TRUE(is_err_chunk(r, c.xid));

	/* a Reply chunk offered: its segments count against the threshold */
	CallSpec s;
	s.reply = {max, max};
	c = call_source(q->next_xid(), max - with_rc - rpc, 22);
	ASSERT_TRUE(q->call(c.rpc, s, &r));
	EXPECT_EQ(r.proc, RDMA_MSG) << r.describe();
	EXPECT_EQ(r.raw.size(), max);
	EXPECT_TRUE(opaque_result(r, c.xid, pattern(22, max - with_rc - rpc)));
	c = call_source(q->next_xid(), max - with_rc - rpc + 4, 22);
	ASSERT_TRUE(q->call(c.rpc, s, &r));
	EXPECT_EQ(r.proc, RDMA_NOMSG) << r.describe();
	EXPECT_EQ(r.raw.size(), with_rc);
	EXPECT_TRUE(opaque_result(r, c.xid, pattern(22, max - with_rc - rpc + 4)));
	EXPECT_TRUE(ping(q));
}

/* A Reply chunk whose echo alone is over the client's receive size: the
 * header cannot go in any Send, ERR_CHUNK; one segment fewer and it fits. */
TEST_F(Shapes, ReplyChunkHeaderOverTheThresholdIsErrChunk)
{
	RequesterOptions o;
	o.priv.recv_size = 1024;	/* our Calls may still be 4 KiB */
	Requester *q2 = connect(o);
	ASSERT_NE(q2, nullptr);
	ASSERT_EQ(q2->inline_recv(), 1024u);
	ASSERT_TRUE(ping(q2));
	/* 28 + 4 + 16 n: n = 62 is exactly 1024, n = 63 is 1040 */
	for (uint32_t n : {62u, 63u}) {
		TestCall c = call_source(q2->next_xid(), 100, 23);
		CallSpec s;
		s.reply.assign(n, 64);
		Reply r;
		ASSERT_TRUE(q2->call(c.rpc, s, &r)) << n;
		if (n == 62) {
			EXPECT_EQ(r.proc, RDMA_NOMSG) << r.describe();
			EXPECT_EQ(r.raw.size(), 1024u);
			EXPECT_TRUE(opaque_result(r, c.xid, pattern(23, 100)));
		} else {
			EXPECT_TRUE(is_err_chunk(r, c.xid));
		}
	}
	EXPECT_TRUE(ping(q2));
}

/* The upper layer says a payload does not fit its Write chunk. */
TEST_F(Shapes, PayloadLargerThanWriteChunkIsErrChunk)
{
	TestCall c = call_source(q->next_xid(), 10000, 1);
	CallSpec s;
	s.writes.push_back({{4096, 4096}, false});
	Reply r;
	ASSERT_TRUE(q->call(c.rpc, s, &r));
	EXPECT_TRUE(is_err_chunk(r, c.xid));
	auto st = srv.stats();
	EXPECT_GE(st["not_delivered"], 1u);
	EXPECT_EQ(st["ul_not_delivered"], 1u) << "reply_not_delivered upcall";
	EXPECT_EQ(st["ul_not_delivered_own"], 1u) << "the upcall gets the Reply's own done_arg";
	EXPECT_TRUE(ping(q));
}

TEST_F(Shapes, GarbageArgsAndProcUnavail)
{
	Wire w = rpc_call_header(q->next_xid(), RRT_PROG, RRT_VERS, RRT_PROC_ECHO);
	uint32_t xid = XdrReader(w.b).u32();
	w.u32(1000).u32(0xdeadbeef);	/* opaque<1000> with 4 bytes */
	Reply r;
	ASSERT_TRUE(q->call(w.b, CallSpec(), &r));
	ASSERT_TRUE(r.ok()) << r.describe();
	RpcReply p = rpc_parse_reply(r.rpc);
	ASSERT_TRUE(p.parsed);
	EXPECT_EQ(p.xid, xid);
	EXPECT_EQ(p.accept_stat, RPC_GARBAGE_ARGS);

	Wire w2 = rpc_call_header(q->next_xid(), RRT_PROG, RRT_VERS, 77);
	ASSERT_TRUE(q->call(w2.b, CallSpec(), &r));
	p = rpc_parse_reply(r.rpc);
	ASSERT_TRUE(p.parsed);
	EXPECT_EQ(p.accept_stat, RPC_PROC_UNAVAIL);
}

/* RFC 8797: with SND_W_INV_OK and one rkey in the call, the reply invalidates it. */
TEST_F(Shapes, SendWithInvalidateOfTheOneRkey)
{
	TestCall c = call_source(q->next_xid(), 3000, 5);
	CallSpec s;
	s.writes.push_back({{4096}, false});
	Reply r;
	ASSERT_TRUE(q->call(c.rpc, s, &r));
	EXPECT_TRUE(opaque_result(r, c.xid, pattern(5, 3000)));
	ASSERT_EQ(r.call_rkeys.size(), 1u);
	if (!rr_test_device().send_with_inv) {
		/* the device cannot: a plain Send, whatever the client allows */
		EXPECT_FALSE(r.with_inv) << rr_test_device_name() << ": " << r.describe();
		EXPECT_EQ(srv.stats()["send_w_inv"], 0u);
		return;
	}
	EXPECT_TRUE(r.with_inv) << "reply not sent with invalidate: " << r.describe();
	EXPECT_EQ(r.inv_rkey, *r.call_rkeys.begin());
	EXPECT_GE(srv.stats()["send_w_inv"], 1u);

	/* two rkeys (data + pad segment): no remote invalidation */
	TestCall c2 = call_source(q->next_xid(), 3001, 5);
	CallSpec s2;
	s2.writes.push_back({{4096}, true});
	ASSERT_TRUE(q->call(c2.rpc, s2, &r));
	EXPECT_TRUE(opaque_result(r, c2.xid, pattern(5, 3001)));
	EXPECT_FALSE(r.with_inv);
}

TEST_F(Shapes, NoSendWithInvalidateWithoutTheFlag)
{
	RequesterOptions o;
	o.priv.flags = 0;
	Requester *q2 = connect(o);
	ASSERT_NE(q2, nullptr);
	ASSERT_TRUE(ping(q2));
	TestCall c = call_source(q2->next_xid(), 3000, 5);
	CallSpec s;
	s.writes.push_back({{4096}, false});
	Reply r;
	ASSERT_TRUE(q2->call(c.rpc, s, &r));
	EXPECT_TRUE(opaque_result(r, c.xid, pattern(5, 3000)));	/* checks !with_inv */
	EXPECT_FALSE(r.with_inv);
}

/* RFC 8797 section 4.2: no private data means 1024-byte inline both ways. */
TEST_F(Shapes, NoPrivateDataMeans1024Inline)
{
	RequesterOptions o;
	o.priv.present = false;
	Requester *q2 = connect(o);
	ASSERT_NE(q2, nullptr);
	EXPECT_EQ(q2->inline_recv(), 1024u);
	ASSERT_TRUE(ping(q2));
	/* fits in 4096 but not in 1024: must come back as ERR_CHUNK, not a big Send */
	TestCall c = call_source(q2->next_xid(), 2000, 1);
	Reply r;
	ASSERT_TRUE(q2->call(c.rpc, CallSpec(), &r));
	EXPECT_TRUE(is_err_chunk(r, c.xid));
	/* and with a Reply chunk it is delivered */
	TestCall c2 = call_source(q2->next_xid(), 2000, 1);
	CallSpec s;
	s.reply = {4096};
	ASSERT_TRUE(q2->call(c2.rpc, s, &r));
	EXPECT_TRUE(opaque_result(r, c2.xid, pattern(1, 2000)));
}

TEST_F(Shapes, PipelinedCallsUpToTheGrant)
{
	uint32_t g = q->grant();
	ASSERT_GE(g, 2u);
	std::vector<std::pair<uint32_t, std::vector<uint8_t>>> inflight;
	for (uint32_t i = 0; i < g; i++) {
		auto d = random_bytes(rng, 64 + i * 7);
		TestCall c = call_data(q->next_xid(), RRT_PROC_ECHO, d);
		ASSERT_GE(q->post(c.rpc, CallSpec()), 0);
		inflight.push_back({c.xid, d});
	}
	TestCall extra = call_null(q->next_xid());
	EXPECT_EQ(q->post(extra.rpc, CallSpec()), -EAGAIN) << "requester must respect the grant";
	for (auto &p : inflight) {
		Reply r;
		ASSERT_TRUE(q->wait(p.first, &r));
		EXPECT_TRUE(opaque_result(r, p.first, p.second));
	}
}

/* docs/memory.md: steady state is 0 registrations per I/O (every buffer is
 * registered once, at pool creation). */
TEST_F(Shapes, NoRegistrationsPerCallInSteadyState)
{
	auto round = [&]() {
		CallSpec rd;
		rd.mode = CallSpec::READ;
		rd.writes.push_back({{65536, 65536}, true});
		echo(random_bytes(rng, 100001), rd);
		CallSpec lc;
		lc.mode = CallSpec::LONG;
		echo(random_bytes(rng, 3000), lc);
		reply_chunk_call();
		Reply r;
		TestCall c2 = call_source(q->next_xid(), 200000, 4);
		CallSpec wc;
		wc.writes.push_back({{262144}, false});
		ASSERT_TRUE(q->call(c2.rpc, wc, &r));
		EXPECT_TRUE(opaque_result(r, c2.xid, pattern(4, 200000)));
	};
	/* A Reply's own registrations end at its Send's completion, which the
	 * server may handle after the client has its Reply: read the live
	 * count once it has stopped moving (100 ms unchanged, 5 s at most). */
	auto settled_mrs = [&]() {
		uint64_t v = srv.stats()["fab_mrs_live"];
		for (int same = 0, i = 0; same < 10 && i < 500; i++) {
			usleep(10000);
			uint64_t now = srv.stats()["fab_mrs_live"];
			same = now == v ? same + 1 : 0;
			v = now;
		}
		return v;
	};
	for (int i = 0; i < 3; i++)
		round();
	uint64_t before = srv.stats()["registrations"];
	uint64_t live = settled_mrs();
	for (int i = 0; i < 20; i++)
		round();
	uint64_t after = srv.stats()["registrations"];
	/* The engine registers a few sink/bounce buffers when its pool is made,
	 * so a sequential client never makes it grow: steady state is 0. On
	 * iWARP each Read chunk's sink is registered for its Reads alone (the
	 * peer writes it by tag): one per Read chunk, three a round (the READ
	 * call's, the Long Call's Position-Zero chunk and its data item's). And
	 * the connection has a PD of its own there, so the memory each RDMA
	 * Write of a Reply reads (payload or bounce buffer, the device PD's) is
	 * registered in it for that Reply: three a round (the READ's Write
	 * chunk, the Reply chunk, the source call's Write chunk). Every one is
	 * withdrawn again. */
	bool iwarp = rr_test_device().transport == FAB_TRANSPORT_IWARP;
	uint64_t per_round = iwarp ? 3 + 3 : 0;
	EXPECT_EQ(after - before, 20 * per_round)
	    << (after - before) << " registrations in 80 calls on " << rr_test_device_name();
	EXPECT_EQ(settled_mrs(), live)
	    << "a registration outlived its Reads or its Reply";
}

/*
 * docs/devices.md, "Unsignalled work requests on siw": soft-iWARP sends an
 * unsignalled Write's or Send's pages to TCP without a copy, so the bytes
 * may leave after the chain's Send has completed and its memory is reused.
 * Where the device does that, every work request of a Reply of a page or
 * more is signalled (copied when posted), smaller ones need not be;
 * elsewhere Writes stay unsignalled.
 */
TEST_F(Shapes, UnsignalledPagesOnlyWhereTheDeviceCopiesThem)
{
	uint64_t before = srv.stats()["fab_unsignalled_page_wrs"];
	uint64_t quiet = srv.stats()["sends_unsignalled"];

	for (int i = 0; i < 8; i++) {
		CallSpec rd;
		rd.mode = CallSpec::READ;
		rd.writes.push_back({{16384, 16384}, true});
		echo(random_bytes(rng, 20000), rd);
		reply_chunk_call();
		CallSpec plain;
		echo(random_bytes(rng, 64), plain);
	}
	uint64_t pages = srv.stats()["fab_unsignalled_page_wrs"] - before;

	if (rr_test_device().unsignalled_zero_copy) {
		EXPECT_EQ(pages, 0u) << "unsignalled work requests of a page or more on "
				     << rr_test_device_name();
		/* smaller ones, which siw copies, still go unsignalled */
		EXPECT_GT(srv.stats()["sends_unsignalled"], quiet);
	} else {
		/* the same calls do post them where the copy is the device's */
		EXPECT_GE(pages, 16u) << rr_test_device_name();
	}
}

TEST_F(Shapes, ServerStatsCountShapes)
{
	auto before = srv.stats();
	ASSERT_FALSE(before.empty());
	CallSpec s;
	s.mode = CallSpec::READ;
	echo(random_bytes(rng, 2000), s);
	CallSpec l;
	l.mode = CallSpec::LONG;
	echo(random_bytes(rng, 100), l);
	auto after = srv.stats();
	EXPECT_GE(after["calls"], before["calls"] + 2);
	EXPECT_GE(after["calls_with_read_chunks"], before["calls_with_read_chunks"] + 2);
	EXPECT_GE(after["long_calls"], before["long_calls"] + 1);
	EXPECT_GE(after["rdma_read_bytes"], before["rdma_read_bytes"] + 2000);
	EXPECT_EQ(after["conns_active"], 1u);
}

/* rr_reply() from another thread, out of order, with zero-copy payloads
 * that live in the call's Read sink until the delayed reply is sent. */
TEST_F(Shapes, DelayedRepliesFromAnotherThread)
{
	uint32_t g = q->grant();
	std::vector<std::pair<uint32_t, std::vector<uint8_t>>> inflight;
	for (uint32_t i = 0; i < g; i++) {
		auto d = random_bytes(rng, 1 + rng() % 100000);
		TestCall c = call_delay(q->next_xid(), rng() % 40, d);
		CallSpec s = read_spec(c, 1 + i % 3);
		s.writes.push_back({{65536, 65536}, (d.size() & 3) != 0});
		ASSERT_GE(q->post(c.rpc, s), 0) << i;
		inflight.push_back({c.xid, d});
	}
	for (auto &p : inflight) {
		Reply r;
		ASSERT_TRUE(q->wait(p.first, &r));
		EXPECT_TRUE(opaque_result(r, p.first, p.second));
	}
	EXPECT_EQ(srv.stats()["ul_delayed_replies"], g);
}

/*
 * Replies built and posted by several threads at once on one connection
 * (the test server answers DELAY from a pool of workers): small inline
 * Replies (unsignalled Sends), Write-chunk Replies whose payload is the
 * call's own Read sink (zero-copy), and Long Replies that need a bounce
 * buffer - pipelined to the full grant, round after round, every call of a
 * round due at the same moment. Every Reply arrives whole; the Replies the
 * event thread finds handed over together go out in shared posts, and so do
 * the RDMA Reads of calls that arrive in one poll of the CQ; a client
 * that leaves with Replies still being built has its connection freed.
 */
TEST_F(Shapes, RepliesFromManyThreadsAtOnce)
{
	auto before = srv.stats();
	const uint32_t g = q->grant();
	uint64_t calls = 0, reads = 0;

	for (int round = 0; round < 12; round++) {
		std::vector<std::pair<uint32_t, std::vector<uint8_t>>> inflight;
		for (uint32_t i = 0; i < g; i++) {
			CallSpec s;
			std::vector<uint8_t> d;
			switch ((round + i) % 3) {
			case 0: /* inline both ways */
				d = random_bytes(rng, 1 + rng() % 2000);
				break;
			case 1: { /* Read chunk in, Write chunk out */
				d = random_bytes(rng, 5000 + rng() % 60000);
				break;
			}
			default: /* Read chunk in, Long Reply out */
				d = random_bytes(rng, 5000 + rng() % 20000);
				break;
			}
			TestCall c = call_delay(q->next_xid(), 5, d);
			if ((round + i) % 3 == 1) {
				s = read_spec(c, 1 + i % 2);
				s.writes.push_back({{65536}, false});
				reads += 1 + i % 2;
			} else if ((round + i) % 3 == 2) {
				s = read_spec(c);
				s.reply = {32768};
				reads += 1;
			}
			int64_t x = q->post(c.rpc, s);
			ASSERT_GE(x, 0) << "round " << round << " call " << i << ": " << q->last_error();
			inflight.push_back({uint32_t(x), d});
		}
		for (auto &p : inflight) {
			Reply r;
			ASSERT_TRUE(q->wait(p.first, &r)) << "round " << round << ": " << q->last_error();
			EXPECT_TRUE(opaque_result(r, p.first, p.second)) << "round " << round;
		}
		calls += inflight.size();
	}
	auto after = srv.stats();
	EXPECT_EQ(after["ul_delayed_replies"] - before["ul_delayed_replies"], calls);
	EXPECT_GT(after["sends_unsignalled"], before["sends_unsignalled"]);
	EXPECT_GE(after["replies_reply_chunk"] - before["replies_reply_chunk"], calls / 3);
	EXPECT_GE(after["replies_write_chunk"] - before["replies_write_chunk"], calls / 3);
	EXPECT_EQ(after["payload_copies"], before["payload_copies"]) << "Write chunks from the sinks";
	EXPECT_LT(after["send_posts"] - before["send_posts"], calls)
	    << "Replies handed over together should share a post";
	/* How many share a post depends on how the calls bunch up: about 2 in
	 * 5 posts per Read in an optimised build, 4 in 5 under ASan. */
	if (rr_test_device().max_rd_atom > 1) { /* one Read in flight: one a post */
		EXPECT_LT(after["read_posts"] - before["read_posts"], reads)
		    << "the Reads of calls that arrive together should share a post";
	}
	fprintf(stderr, "%llu calls: %llu send posts; %llu RDMA Reads: %llu read posts\n",
		(unsigned long long)calls,
		(unsigned long long)(after["send_posts"] - before["send_posts"]),
		(unsigned long long)reads,
		(unsigned long long)(after["read_posts"] - before["read_posts"]));

	/* A second client leaves while its Replies are being built. */
	const uint64_t listed0 = after["conns_listed"];
	std::string err;
	RequesterOptions o;
	o.addr = srv.addr();
	auto a = Requester::connect(o, &err);
	ASSERT_TRUE(a) << err;
	for (uint32_t i = 0; i < a->grant(); i++) {
		auto d = random_bytes(rng, 1 + rng() % 3000);
		TestCall c = call_delay(a->next_xid(), i % 4, d);
		ASSERT_GE(a->post(c.rpc, CallSpec()), 0) << i;
	}
	a.reset();
	EXPECT_EQ(conns_listed_when(listed0), listed0) << "the connection that left is still held";
	auto d = random_bytes(rng, 100);
	CallSpec s;
	echo(d, s);
}

/* SIGTERM: stats line, clean teardown, exit 0 (checked in TearDown). */
TEST_F(Shapes, ServerExitsCleanlyOnSigterm)
{
	auto d = random_bytes(rng, 1000);
	CallSpec s;
	s.mode = CallSpec::READ;
	echo(d, s);
	ASSERT_EQ(kill(srv.pid(), SIGTERM), 0);
	EXPECT_TRUE(q->wait_disconnected(5000)) << "server teardown disconnects clients";
}

/* The same over TCP loopback (the soft fabric's other transport). */
class ShapesTcp : public TransportTest {
      protected:
	ShapesTcp()
	{
		sopts.tcp = true;
	}
};

TEST_F(ShapesTcp, ReadWriteAndReplyChunks)
{
	Requester *q = connect();
	ASSERT_NE(q, nullptr);
	ASSERT_TRUE(ping(q));
	std::mt19937 rng(5);
	auto d = random_bytes(rng, 200000);
	TestCall c = call_data(q->next_xid(), RRT_PROC_ECHO, d);
	CallSpec s = read_spec(c, 3);
	s.writes.push_back({{100000, 100000}, false});
	Reply r;
	ASSERT_TRUE(q->call(c.rpc, s, &r));
	EXPECT_TRUE(opaque_result(r, c.xid, d));
	TestCall c2 = call_source(q->next_xid(), 30000, 9);
	CallSpec s2;
	s2.reply = {16384, 16384};
	ASSERT_TRUE(q->call(c2.rpc, s2, &r));
	EXPECT_TRUE(opaque_result(r, c2.xid, pattern(9, 30000)));
}

} // namespace
