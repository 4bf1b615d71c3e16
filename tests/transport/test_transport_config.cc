// SPDX-License-Identifier: MIT
/*
 * The engine under its configuration limits (struct rr_config): connection
 * cap, receive-memory budget (grants shrink, never to 0), and a small inline
 * size (RFC 8797 private data says so; a Send larger than it fails the
 * receive and closes only that connection).
 */
#include "transport/rr_transport_fixture.h"

using namespace rrtest;

namespace {

class MaxConns : public TransportTest {
      protected:
	MaxConns()
	{
		sopts.args = {"--max-conns", "2"};
	}
};

TEST_F(MaxConns, ThirdIsRefusedUntilOneLeaves)
{
	Requester *a = connect();
	Requester *b = connect();
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(ping(a));
	ASSERT_TRUE(ping(b));
	RequesterOptions o;
	o.addr = srv.addr();
	o.connect_timeout_ms = 3000;
	std::string err;
	auto c = Requester::connect(o, &err);
	EXPECT_FALSE(c) << "a third connection was accepted";
	c.reset();
	EXPECT_TRUE(ping(a));
	a->disconnect();
	/* the server frees a's place when it sees the disconnect, a moment later */
	std::unique_ptr<Requester> d;
	eventually([&] {
		d = Requester::connect(o, &err);
		return d != nullptr;
	});
	ASSERT_TRUE(d) << "no connection accepted after one left: " << err;
	EXPECT_TRUE(ping(d.get()));
	EXPECT_TRUE(ping(b));
}

class RecvBudget : public TransportTest {
      protected:
	RecvBudget()
	{
		/* room for one default connection and part of another;
		 * Max_Connections set, as left to the budget it would be 1 */
		sopts.args = {"--recv-mem", "800000", "--max-conns", "16"};
	}
};

TEST_F(RecvBudget, GrantsShrinkNeverToZeroAndStayWithinBudget)
{
	std::vector<Requester *> qs;
	for (int i = 0; i < 4; i++) {
		RequesterOptions o;
		o.addr = srv.addr();
		o.connect_timeout_ms = 3000;
		std::string err;
		auto r = Requester::connect(o, &err);
		if (!r)
			continue;	/* refusing is fine when the budget is gone */
		reqs.push_back(std::move(r));
		Requester *q = reqs.back().get();
		ASSERT_TRUE(ping(q));
		EXPECT_GE(q->grant(), 1u);
		qs.push_back(q);
	}
	ASSERT_GE(qs.size(), 1u);
	EXPECT_LE(srv.stats()["recv_mem_bytes"], 800000u);
	/* every admitted connection works at its full grant at once */
	std::mt19937 rng(3);
	std::vector<std::vector<std::pair<uint32_t, std::vector<uint8_t>>>> inflight(qs.size());
	for (size_t k = 0; k < qs.size(); k++) {
		for (uint32_t i = 0; i < qs[k]->grant(); i++) {
			auto d = random_bytes(rng, 100 + rng() % 1500);
			TestCall c = call_data(qs[k]->next_xid(), RRT_PROC_ECHO, d);
			ASSERT_GE(qs[k]->post(c.rpc, CallSpec()), 0);
			inflight[k].push_back({c.xid, d});
		}
	}
	for (size_t k = 0; k < qs.size(); k++) {
		for (auto &p : inflight[k]) {
			Reply r;
			ASSERT_TRUE(qs[k]->wait(p.first, &r)) << "connection " << k;
			EXPECT_TRUE(opaque_result(r, p.first, p.second));
			EXPECT_GE(r.credits, 1u);
		}
	}
}

class SmallInline : public TransportTest {
      protected:
	SmallInline()
	{
		sopts.args = {"--inline", "1024"};
	}
};

TEST_F(SmallInline, PrivateDataAndLimitsFollowTheConfig)
{
	Requester *q = connect();
	ASSERT_NE(q, nullptr);
	ASSERT_TRUE(ping(q));
	EXPECT_EQ(q->server_priv().recv_size, 1024u);
	EXPECT_EQ(q->server_priv().send_size, 1024u);
	EXPECT_EQ(q->inline_send(), 1024u);
	EXPECT_EQ(q->inline_recv(), 1024u);
	std::mt19937 rng(1);
	/* fits: inline both ways */
	auto d = random_bytes(rng, 900);
	TestCall c = call_data(q->next_xid(), RRT_PROC_ECHO, d);
	Reply r;
	ASSERT_TRUE(q->call(c.rpc, CallSpec(), &r));
	EXPECT_TRUE(opaque_result(r, c.xid, d));
	/* does not fit inline: a Long Call and a Long Reply */
	auto big = random_bytes(rng, 3000);
	TestCall c2 = call_data(q->next_xid(), RRT_PROC_ECHO, big);
	CallSpec s;
	s.mode = CallSpec::LONG;
	s.reply = {4096};
	ASSERT_TRUE(q->call(c2.rpc, s, &r));
	EXPECT_TRUE(opaque_result(r, c2.xid, big));
	/* the requester itself refuses to send more than the server's inline */
	TestCall c3 = call_data(q->next_xid(), RRT_PROC_ECHO, big);
	EXPECT_EQ(q->post(c3.rpc, CallSpec()), -EMSGSIZE);
}

TEST_F(SmallInline, SendLargerThanTheServersReceiveClosesOnlyThatConnection)
{
	Requester *q = connect();
	Requester *other = connect();
	ASSERT_TRUE(q && other);
	ASSERT_TRUE(ping(q));
	ASSERT_TRUE(ping(other));
	std::mt19937 rng(2);
	TestCall c = call_data(q->next_xid(), RRT_PROC_ECHO, random_bytes(rng, 3000));
	CallSpec s;
	s.force = true;
	ASSERT_GE(q->post(c.rpc, s), 0);
	EXPECT_TRUE(q->wait_disconnected(5000));
	q->disconnect();
	EXPECT_TRUE(ping(other));
	Requester *fresh = connect();
	ASSERT_NE(fresh, nullptr);
	EXPECT_TRUE(ping(fresh));
}

} // namespace
