// SPDX-License-Identifier: MIT
/*
 * The engine's reverse direction (RFC 8167; src/rpcrdma/rr_backchannel.c)
 * against the independent requester: rr_test_server sends a callback on the
 * caller's connection on command (RRT_PROC_BC_CALL) and gives one up
 * (RRT_PROC_BC_ABANDON, as an upper layer does at its timeout), and counts
 * what the engine hands it (ul_bc_replies, ul_bc_errors).
 *
 * Each callback's XID holds one of the client's backchannel credits until
 * exactly one of: its Reply, an RDMA_ERROR for it, its abandon. Only a Reply
 * to an outstanding XID reaches the upper layer; any other (unasked, late,
 * repeated, or whose RPC xid is not its rdma_xid) is dropped and counted, so
 * a client cannot make the upper layer queue Replies without bound, and a
 * late Reply never gives back another callback's credit.
 */
#include "transport/rr_transport_fixture.h"

using namespace rrtest;

namespace {

class TransportBackchannel : public TransportTest {
      protected:
	/* RRT_PROC_BC_CALL or _ABANDON for @bxid: the engine's result. */
	int32_t bc(Requester *q, uint32_t proc, uint32_t bxid)
	{
		uint32_t x = q->next_xid();
		Wire w = rpc_call_header(x, RRT_PROG, RRT_VERS, proc);
		w.u32(bxid);
		Reply r;
		if (!q->call(w.b, CallSpec(), &r)) {
			ADD_FAILURE() << "no reply: " << q->last_error();
			return INT32_MIN;
		}
		size_t off;
		auto ok = rpc_success(r, x, &off);
		EXPECT_TRUE(ok);
		if (!ok)
			return INT32_MIN;
		XdrReader xr(r.rpc.data() + off, r.rpc.size() - off);
		return int32_t(xr.u32());
	}
	int32_t send_cb(Requester *q, uint32_t bxid)
	{
		return bc(q, RRT_PROC_BC_CALL, bxid);
	}
	int32_t abandon(Requester *q, uint32_t bxid)
	{
		return bc(q, RRT_PROC_BC_ABANDON, bxid);
	}
	/* The callback @bxid arrives at the client. */
	::testing::AssertionResult arrives(Requester *q, uint32_t bxid)
	{
		BcCall c;
		if (!q->wait_bc_call(&c, 5000))
			return ::testing::AssertionFailure() << "callback " << bxid << " never came";
		if (c.rdma_xid != bxid)
			return ::testing::AssertionFailure()
			       << "callback " << c.rdma_xid << " came, not " << bxid;
		if (!c.violations.empty())
			return ::testing::AssertionFailure() << c.violations[0];
		return ::testing::AssertionSuccess();
	}
	/* An accepted, successful RPC Reply to @rpc_xid (RFC 5531 section 9). */
	static std::vector<uint8_t> rpc_reply(uint32_t rpc_xid)
	{
		Wire w;
		w.u32(rpc_xid).u32(RPC_REPLY).u32(RPC_MSG_ACCEPTED).u32(AUTH_NONE).u32(0).u32(
		    RPC_SUCCESS);
		return w.b;
	}
	/* The client's Reply to @bxid granting @credits, with the RPC xid
	 * @rpc_xid (its own unless given); then a NULL round trip, so the
	 * server has taken it (a connection's receives complete in order). */
	void answer(Requester *q, uint32_t bxid, uint32_t credits = 2, int64_t rpc_xid = -1)
	{
		ASSERT_EQ(0, q->send_bc_reply(bxid, rpc_reply(rpc_xid < 0 ? bxid : uint32_t(rpc_xid)),
					      credits));
		ASSERT_TRUE(ping(q));
	}
	void refuse(Requester *q, uint32_t bxid)
	{
		ASSERT_EQ(0, q->send_bc_error(bxid, ERR_CHUNK, 2));
		ASSERT_TRUE(ping(q));
	}
	uint64_t st(const char *name)
	{
		return srv.stats()[name];
	}
	/* A client whose grant of 2 the server knows: callback @bxid answered. */
	void grant_two(Requester *q, uint32_t bxid)
	{
		ASSERT_EQ(0, send_cb(q, bxid));
		ASSERT_TRUE(arrives(q, bxid));
		uint64_t up = st("ul_bc_replies");
		answer(q, bxid, 2);
		ASSERT_EQ(up + 1, st("ul_bc_replies"));
	}
};

/* Replies answering nothing (never asked, any XID) are dropped by the
 * engine and counted, never handed up: the upper layer has nothing to copy
 * or queue, however many come. The connection keeps serving, and a real
 * callback's Reply afterwards is handed up. */
TEST_F(TransportBackchannel, UnaskedRepliesAreDroppedNotHandedUp)
{
	constexpr uint32_t kUnasked = 1200;
	Requester *q = connect();
	ASSERT_TRUE(q);
	uint64_t dropped0 = st("dropped"), replies0 = st("bc_replies");
	for (uint32_t i = 0; i < kUnasked; i++) {
		/* a few at a time: they use the server's receives, not credits */
		ASSERT_EQ(0, q->send_bc_reply(0x70000000u + i, rpc_reply(0x70000000u + i), 2));
		if (i % 8 == 7) {
			ASSERT_TRUE(ping(q)) << "after " << i + 1 << " unasked Replies";
		}
	}
	ASSERT_TRUE(ping(q));
	EXPECT_EQ(0u, st("ul_bc_replies")) << "unasked Replies reached the upper layer";
	EXPECT_EQ(kUnasked, st("bc_replies") - replies0) << "every one is counted as received";
	EXPECT_EQ(kUnasked, st("dropped") - dropped0) << "and as dropped";
	/* the next callback, answered, is handed up */
	ASSERT_EQ(0, send_cb(q, 0x1000));
	ASSERT_TRUE(arrives(q, 0x1000));
	answer(q, 0x1000);
	EXPECT_EQ(1u, st("ul_bc_replies"));
	EXPECT_EQ(0x1000u, st("ul_bc_last_xid"));
	/* an unasked Reply with the next XID the server will use is no answer
	 * either, and the callback then sent with it is answered normally */
	answer(q, 0x1001);
	EXPECT_EQ(1u, st("ul_bc_replies"));
	ASSERT_EQ(0, send_cb(q, 0x1001));
	ASSERT_TRUE(arrives(q, 0x1001));
	answer(q, 0x1001);
	EXPECT_EQ(2u, st("ul_bc_replies"));
}

/* Callbacks the client never answers, as many as its grant, are given up
 * by the upper layer (its timeout): each abandon gives its credit back, so
 * the next callback is sent. Without it every later callback on the
 * connection got -EAGAIN for ever. An XID is given back once. */
TEST_F(TransportBackchannel, AbandonedCallbacksGiveTheirCreditsBack)
{
	Requester *q = connect();
	ASSERT_TRUE(q);
	/* before any Reply the grant is 1 */
	ASSERT_EQ(0, send_cb(q, 0x2000));
	ASSERT_TRUE(arrives(q, 0x2000));
	EXPECT_EQ(-EAGAIN, send_cb(q, 0x2001)) << "past the grant of 1";
	EXPECT_EQ(0, abandon(q, 0x2000));
	EXPECT_EQ(-ENOENT, abandon(q, 0x2000)) << "given back twice";
	ASSERT_EQ(0, send_cb(q, 0x2001)) << "no credit came back with the abandon";
	ASSERT_TRUE(arrives(q, 0x2001));
	answer(q, 0x2001, 2); /* grants 2 */
	/* the grant's worth unanswered, abandoned, twice over */
	for (uint32_t round = 0; round < 2; round++) {
		uint32_t a = 0x2100 + 2 * round, b = a + 1;
		ASSERT_EQ(0, send_cb(q, a));
		ASSERT_EQ(0, send_cb(q, b));
		ASSERT_TRUE(arrives(q, a));
		ASSERT_TRUE(arrives(q, b));
		EXPECT_EQ(-EAGAIN, send_cb(q, 0x2f00)) << "past the grant of 2";
		EXPECT_EQ(-EEXIST, send_cb(q, a)) << "an XID outstanding already";
		EXPECT_EQ(0, abandon(q, a));
		EXPECT_EQ(0, abandon(q, b));
	}
	ASSERT_EQ(0, send_cb(q, 0x2200)) << "after the grant's worth of abandons";
	ASSERT_TRUE(arrives(q, 0x2200));
	answer(q, 0x2200);
	EXPECT_EQ(2u, st("ul_bc_replies"));
	EXPECT_EQ(-ENOENT, abandon(q, 0x2200)) << "its Reply gave the credit back already";
	EXPECT_EQ(-ENOENT, abandon(q, 0x9999)) << "never sent";
}

/* A Reply that comes after its callback was abandoned is dropped: it must
 * not give back the credit another outstanding callback holds (it did: the
 * engine counted any Reply as an answer). Neither does an RDMA_ERROR for
 * it, a second Reply, or a Reply whose RPC xid is not its rdma_xid. */
TEST_F(TransportBackchannel, LateReplyFreesNoOtherCallbacksCredit)
{
	Requester *q = connect();
	ASSERT_TRUE(q);
	grant_two(q, 0x3000);
	ASSERT_EQ(0, send_cb(q, 0x3001));
	ASSERT_EQ(0, send_cb(q, 0x3002));
	ASSERT_TRUE(arrives(q, 0x3001));
	ASSERT_TRUE(arrives(q, 0x3002));
	ASSERT_EQ(0, abandon(q, 0x3001)); /* timed out */
	ASSERT_EQ(0, send_cb(q, 0x3003)); /* its credit taken again */
	ASSERT_TRUE(arrives(q, 0x3003));
	uint64_t dropped0 = st("dropped");
	answer(q, 0x3001); /* late */
	refuse(q, 0x3001); /* late, as an RDMA_ERROR */
	answer(q, 0x3002, 2, 0x3003); /* rdma_xid of one, RPC xid of another */
	EXPECT_EQ(1u, st("ul_bc_replies")) << "a Reply to no outstanding call was handed up";
	EXPECT_EQ(0u, st("ul_bc_errors"));
	EXPECT_EQ(3u, st("dropped") - dropped0);
	EXPECT_EQ(-EAGAIN, send_cb(q, 0x3004))
	    << "an answer to no outstanding call gave back a credit 0x3002 or 0x3003 holds";
	/* their own answers do */
	answer(q, 0x3002);
	EXPECT_EQ(2u, st("ul_bc_replies"));
	EXPECT_EQ(0x3002u, st("ul_bc_last_xid"));
	answer(q, 0x3002); /* again */
	EXPECT_EQ(2u, st("ul_bc_replies")) << "a second Reply to one call was handed up";
	ASSERT_EQ(0, send_cb(q, 0x3004));
	ASSERT_TRUE(arrives(q, 0x3004));
	EXPECT_EQ(-EAGAIN, send_cb(q, 0x3005));
	refuse(q, 0x3003);
	EXPECT_EQ(1u, st("ul_bc_errors")) << "an RDMA_ERROR for an outstanding call";
	EXPECT_EQ(-ENOENT, abandon(q, 0x3003)) << "the RDMA_ERROR gave its credit back";
	ASSERT_EQ(0, send_cb(q, 0x3005));
	ASSERT_TRUE(arrives(q, 0x3005));
	answer(q, 0x3004);
	answer(q, 0x3005);
	EXPECT_EQ(4u, st("ul_bc_replies"));
	EXPECT_TRUE(ping(q));
}

} // namespace
