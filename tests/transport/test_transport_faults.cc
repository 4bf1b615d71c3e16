// SPDX-License-Identifier: MIT
/*
 * Credit overrun and disconnects in the middle of RDMA Reads and Writes, and
 * the upper layer closing a connection from its own threads: the
 * connection concerned goes away, nothing crashes, the server keeps serving
 * the others and exits cleanly (its exit status is checked, so ASan/LSan
 * findings in the server fail the test too).
 *
 * Faults come from the soft fabric: RPCRDMA_SOFT_FAULT in the server process
 * (a default for every connection it accepts) or fab_soft_fault_set() on the
 * requester's own connection.
 */
#include "fabric/fab_soft.h"
#include "transport/rr_transport_fixture.h"

using namespace rrtest;

namespace {

class Faults : public TransportTest {
      protected:
	std::mt19937 rng{777};

	/* A SINK of @len bytes through a Read chunk; returns the xid or < 0. */
	int64_t post_sink_read(Requester *q, size_t len, uint32_t segs = 4)
	{
		TestCall c = call_data(q->next_xid(), RRT_PROC_SINK, random_bytes(rng, len));
		return q->post(c.rpc, read_spec(c, segs));
	}
	int64_t post_source_write(Requester *q, uint32_t len)
	{
		TestCall c = call_source(q->next_xid(), len, 42);
		CallSpec s;
		WriteChunkSpec w;
		w.segs.assign((len + 65535) / 65536, 65536);
		s.writes.push_back(w);
		return q->post(c.rpc, s);
	}
	::testing::AssertionResult big_read_ok(Requester *q)
	{
		auto d = random_bytes(rng, 1 << 20);
		TestCall c = call_data(q->next_xid(), RRT_PROC_SINK, d);
		Reply r;
		if (!q->call(c.rpc, read_spec(c, 8), &r, 20000))
			return ::testing::AssertionFailure() << "no reply: " << q->last_error();
		size_t off;
		auto a = rpc_success(r, c.xid, &off);
		if (!a)
			return a;
		XdrReader x(r.rpc.data() + off, r.rpc.size() - off);
		if (x.u32() != d.size() || x.u32() != fnv(d))
			return ::testing::AssertionFailure() << "SINK hash mismatch";
		return ::testing::AssertionSuccess();
	}
	::testing::AssertionResult big_write_ok(Requester *q)
	{
		int64_t x = post_source_write(q, 1 << 20);
		if (x < 0)
			return ::testing::AssertionFailure() << "post " << x;
		Reply r;
		if (!q->wait(uint32_t(x), &r, 20000))
			return ::testing::AssertionFailure() << "no reply: " << q->last_error();
		return opaque_result(r, uint32_t(x), pattern(42, 1 << 20));
	}
};

class CreditOverrun : public Faults {
      protected:
	CreditOverrun()
	{
		sopts.args = {"--credits", "4"};
	}
};

/* A client that sends past its grant (and past every receive the server
 * posted) loses its connection; another connection is untouched. */
TEST_F(CreditOverrun, OnlyThatConnectionCloses)
{
	Requester *a = connect();
	Requester *b = connect();
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(ping(a));
	ASSERT_TRUE(ping(b));
	EXPECT_EQ(a->grant(), 4u);
	/* HOLD calls are never answered: each keeps its receive buffer. */
	CallSpec force;
	force.force = true;
	int sent = 0;
	for (int i = 0; i < 200 && a->connected(); i++) {
		if (a->post(call_hold(a->next_xid()).rpc, force) < 0)
			break;
		sent++;
		a->progress(0);
	}
	EXPECT_TRUE(a->wait_disconnected(5000))
		<< "sent " << sent << " HOLD calls on a grant of 4; still connected";
	a->disconnect();	/* the client closes its failed connection */
	EXPECT_TRUE(ping(b));
	EXPECT_TRUE(big_read_ok(b));
	Requester *c = connect();
	ASSERT_NE(c, nullptr);
	EXPECT_TRUE(ping(c));
	/* On soft (as on IB) the RNR fails the sender's QP: the server sees a
	 * disconnect, which it may count a moment later. */
	uint64_t d = 0;
	eventually([&] {
		auto st = srv.stats();
		d = st["disconnects"] + st["rnr_disconnects"];
		return d >= 1;
	});
	EXPECT_GE(d, 1u);
}

/* Calls the upper layer still holds are released at conn_down (LSan would
 * report them at server exit otherwise). */
TEST_F(Faults, HeldCallsReleasedWhenClientLeaves)
{
	Requester *a = connect();
	ASSERT_NE(a, nullptr);
	ASSERT_TRUE(ping(a));
	uint64_t before = srv.stats()["ul_calls"];
	for (int i = 0; i < 3; i++)
		ASSERT_GE(a->post(call_hold(a->next_xid()).rpc, CallSpec()), 0);
	/* The upper layer must hold all three before the client leaves: a
	 * disconnect that overtakes a Send flushes it, and that call is never
	 * held (seen once in 60 runs on a loaded machine). */
	uint64_t seen = ul_calls_reach(before + 3, a);
	ASSERT_EQ(seen, before + 3) << "the three held calls did not reach the upper layer";
	a->disconnect();
	Requester *b = connect();
	ASSERT_NE(b, nullptr);
	EXPECT_TRUE(ping(b));
	uint64_t released = 0;
	eventually([&] {
		released = srv.stats()["ul_held_released"];
		return released >= 3;
	});
	EXPECT_EQ(released, 3u) << "conn_down must come for the closed connection";
}

/*
 * The upper layer closes a connection from threads of its own
 * (rr_conn_close_async: the plugin does when ganesha destroys the
 * transport, on any thread), eight at once, racing each other and the
 * close's own conn_down: the connection goes down once, the calls the
 * upper layer held are released at its conn_down, and the other clients
 * are served. Under ThreadSanitizer too (the flag and the kick).
 */
TEST_F(Faults, UpperLayerClosesFromItsOwnThreads)
{
	Requester *b = connect();
	ASSERT_NE(b, nullptr);
	ASSERT_TRUE(ping(b));
	for (int round = 0; round < 4; round++) {
		SCOPED_TRACE("round " + std::to_string(round));
		Requester *a = connect();
		ASSERT_NE(a, nullptr);
		ASSERT_TRUE(ping(a));
		auto st0 = srv.stats();
		for (int i = 0; i < 3; i++)
			ASSERT_GE(a->post(call_hold(a->next_xid()).rpc, CallSpec()), 0);
		ASSERT_EQ(ul_calls_reach(st0["ul_calls"] + 3, a), st0["ul_calls"] + 3);
		uint32_t xid = a->next_xid();
		Wire w = rpc_call_header(xid, RRT_PROG, RRT_VERS, RRT_PROC_CLOSE);
		w.u32(8);
		ASSERT_GE(a->post(w.b, CallSpec()), 0);
		EXPECT_TRUE(a->wait_disconnected(10000))
		    << "the upper layer's close did not close it";
		std::map<std::string, uint64_t> st;
		EXPECT_TRUE(eventually([&] {
			st = srv.stats();
			return st["ul_closes"] + st["ul_closes_late"] ==
				   st0["ul_closes"] + st0["ul_closes_late"] + 8 &&
			       st["ul_held_released"] >= st0["ul_held_released"] + 3 &&
			       st["conns_freed"] > st0["conns_freed"];
		}));
		EXPECT_GE(st["ul_closes"], st0["ul_closes"] + 1) << "no thread found it listed";
		EXPECT_EQ(st["ul_conn_down"], st0["ul_conn_down"] + 1) << "conn_down once";
		EXPECT_EQ(st["ul_held_released"], st0["ul_held_released"] + 3);
		EXPECT_EQ(st["disconnects"], st0["disconnects"] + 1);
		EXPECT_TRUE(ping(b)) << "the other client is served";
	}
	/* TearDown: the server exits cleanly, every conn_up with its conn_down */
}

/*
 * Read sinks come from one pool per protection domain, shared fairly
 * (rr_internal.h, above struct rr_bigpool): a connection holds at most its
 * share, one full-size buffer per credit beyond its reserve and
 * RR_SINK_SHARE_MAX (64) at most. Small full-size buffers (8 KiB with
 * --max-chunk 4096, so a small chunk takes a 4 KiB sink) keep the share
 * cheap to reach: (2 + 64) x 8 KiB = 132 sinks of 4 KiB for 600-byte chunks.
 */
class SinkShare : public Faults {
      protected:
	static constexpr int kCalls = 200;	/* more than the share, within the grant */
	SinkShare()
	{
		sopts.args = {"--credits", "300", "--inline", "1024", "--max-chunk", "4096"};
	}
};

/* One connection's calls hold its whole share; its next Reads wait on its
 * own queue, while another connection's Read goes ahead at once, and they
 * go ahead as soon as the held calls are answered and give their sinks
 * back (released on the event thread after the Reply's Send: nothing else
 * wakes the waiting Reads). */
TEST_F(SinkShare, ReadOverItsShareWaitsForItsOwnSinks)
{
	Requester *a = connect();
	Requester *b = connect();
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(ping(a));
	ASSERT_TRUE(ping(b));
	ASSERT_GE(a->grant(), uint32_t(kCalls));
	uint64_t before = srv.stats()["ul_calls"];
	std::vector<std::pair<uint32_t, std::vector<uint8_t>>> sent;
	for (int i = 0; i < kCalls; i++) {
		/* echoed inline: the reply fits the 1024-byte inline size */
		auto d = random_bytes(rng, 600);
		TestCall c = call_delay(a->next_xid(), 2000, d);
		ASSERT_GE(a->post(c.rpc, read_spec(c)), 0) << a->last_error();
		sent.emplace_back(c.xid, d);
		a->progress(0);
	}
	uint64_t seen = ul_calls_settled(before);
	EXPECT_GT(seen, before);
	EXPECT_LT(seen, before + kCalls) << "one connection held more sinks than its share";

	auto d = random_bytes(rng, 3000);
	TestCall c = call_data(b->next_xid(), RRT_PROC_SINK, d);
	Reply r;
	ASSERT_TRUE(b->call(c.rpc, read_spec(c), &r, 1000))
		<< "another connection's Read waited for this one's sinks: " << b->last_error();
	size_t off;
	ASSERT_TRUE(rpc_success(r, c.xid, &off));
	XdrReader x(r.rpc.data() + off, r.rpc.size() - off);
	EXPECT_EQ(x.u32(), d.size());
	EXPECT_EQ(x.u32(), fnv(d));

	for (const auto &p : sent) {
		ASSERT_TRUE(a->wait(p.first, &r, 15000))
			<< "a waiting Read never went ahead: " << a->last_error();
		EXPECT_TRUE(opaque_result(r, p.first, p.second));
	}
	EXPECT_EQ(srv.stats()["ul_calls"], before + kCalls + 1);
	EXPECT_TRUE(ping(b));
}

/* The upper layer answers after conn_down (rr_xprt.h allows it: the engine
 * drops the reply); the calls' buffers are still referenced by those
 * replies' payload spans. No crash, no leak, others served. */
TEST_F(Faults, RepliesAfterConnDownAreDropped)
{
	Requester *b = connect();
	ASSERT_NE(b, nullptr);
	ASSERT_TRUE(ping(b));
	{
		std::string err;
		RequesterOptions o;
		o.addr = srv.addr();
		auto a = Requester::connect(o, &err);
		ASSERT_TRUE(a) << err;
		ASSERT_TRUE(ping(a.get()));
		for (int i = 0; i < 10; i++) {
			auto d = random_bytes(rng, 50000);
			TestCall c = call_delay(a->next_xid(), 200, d);
			CallSpec s = read_spec(c, 2);
			s.writes.push_back({{65536}, false});
			ASSERT_GE(a->post(c.rpc, s), 0);
		}
		/* let the Reads finish so that the calls reach the upper layer */
		EXPECT_GE(ul_calls_reach(12, a.get()), 12u);
	}
	uint64_t done = 0;
	eventually([&] {
		done = srv.stats()["ul_delayed_replies"];
		return done >= 10;
	});
	EXPECT_EQ(done, 10u);
	EXPECT_TRUE(ping(b));
	EXPECT_TRUE(big_read_ok(b));
}

/* The requester's link drops while the server is pulling a Read chunk. */
TEST_F(Faults, ClientLinkDropsDuringRdmaRead)
{
	Requester *a = connect();
	Requester *b = connect();
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(ping(a));
	fab_soft_fault f = {};
	f.drop_after_bytes = 200000;	/* Read responses are bytes a sends */
	ASSERT_EQ(fab_soft_fault_set(a->conn(), &f), 0);
	ASSERT_GE(post_sink_read(a, 1 << 20), 0);
	EXPECT_TRUE(a->wait_disconnected(5000));
	EXPECT_TRUE(ping(b));
	EXPECT_TRUE(big_read_ok(b));
}

/* The requester goes away (MRs and all) with a big Read in flight. */
TEST_F(Faults, ClientVanishesDuringRdmaRead)
{
	for (int i = 0; i < 5; i++) {
		std::string err;
		RequesterOptions o;
		o.addr = srv.addr();
		auto a = Requester::connect(o, &err);
		ASSERT_TRUE(a) << err;
		ASSERT_TRUE(ping(a.get()));
		ASSERT_GE(post_sink_read(a.get(), 1 << 20, 16), 0);
		a->progress(i);	/* vary how far the Read got */
		a.reset();
	}
	Requester *b = connect();
	ASSERT_NE(b, nullptr);
	EXPECT_TRUE(ping(b));
	EXPECT_TRUE(big_read_ok(b));
}

/*
 * The server shuts down while a call waits for its Read chunk: one segment's
 * RDMA Read in flight, the next queued behind the Read window (ord 1). The
 * disconnect flushes that Read; its completion must free the call, or the
 * connection keeps a reference for ever and the server cannot exit (the
 * churn soak hung this way under load, when a link dropped mid-Read).
 */
TEST_F(Faults, ShutdownWithCallWaitingOnItsReadChunk)
{
	server_must_exit_clean = false; /* checked here, before the requester goes */
	RequesterOptions o;
	o.addr = srv.addr();
	o.responder_resources = 1; /* the server may have one Read in flight */
	std::string err;
	auto a = Requester::connect(o, &err);
	ASSERT_TRUE(a) << err;
	ASSERT_TRUE(ping(a.get()));
	uint64_t calls_before = srv.stats()["ul_calls"];
	/* Our I/O thread stalls on each completion it delivers, so the server's
	 * Read request waits unserved behind them. */
	fab_soft_fault f = {};
	f.delay_us = 2000000;
	ASSERT_EQ(fab_soft_fault_set(a->conn(), &f), 0);
	ASSERT_GE(post_sink_read(a.get(), 3 * 4096, 3), 0);
	uint64_t read_bytes = 0;
	eventually([&] {
		read_bytes = srv.stats()["rdma_read_bytes"];
		return read_bytes > 0;
	});
	ASSERT_GT(read_bytes, 0u) << "the server never started the Read";
	std::map<std::string, uint64_t> st;
	int rc = srv.stop(&st);
	EXPECT_EQ(rc, 0) << "rr_test_server did not exit (a connection still referenced)";
	EXPECT_EQ(st["destroyed"], 1u);
	EXPECT_EQ(st["ul_conn_up"], st["ul_conn_down"]);
	/* The case this test is about: the call never reached the upper layer. */
	EXPECT_EQ(st["ul_calls"], calls_before) << "the Read finished before the shutdown";
}

/* The requester goes away with a big RDMA Write toward it in flight. */
TEST_F(Faults, ClientVanishesDuringRdmaWrite)
{
	for (int i = 0; i < 5; i++) {
		std::string err;
		RequesterOptions o;
		o.addr = srv.addr();
		auto a = Requester::connect(o, &err);
		ASSERT_TRUE(a) << err;
		ASSERT_TRUE(ping(a.get()));
		ASSERT_GE(post_source_write(a.get(), 1 << 20), 0);
		a->progress(i);
		a.reset();
	}
	Requester *b = connect();
	ASSERT_NE(b, nullptr);
	EXPECT_TRUE(ping(b));
	EXPECT_TRUE(big_write_ok(b));
}

class ServerReadFails : public Faults {
      protected:
	ServerReadFails()
	{
		sopts.env["RPCRDMA_SOFT_FAULT"] = "fail_next_read=1";
	}
};

/* The server's RDMA Read fails: that connection is closed (svcrdma: "signal
 * the loss to the client by closing"), the server keeps serving. */
TEST_F(ServerReadFails, ConnectionClosedServerSurvives)
{
	Requester *a = connect();
	Requester *b = connect();
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(ping(a));
	ASSERT_TRUE(ping(b));
	int64_t x = post_sink_read(a, 100000);
	ASSERT_GE(x, 0);
	Reply r;
	EXPECT_FALSE(a->wait(uint32_t(x), &r, 5000)) << "got a reply: " << r.describe();
	EXPECT_TRUE(a->wait_disconnected(5000));
	EXPECT_TRUE(ping(b));	/* b's own first Read would fail too: inline only */
	Requester *c = connect();
	ASSERT_NE(c, nullptr);
	EXPECT_TRUE(ping(c));
}

class ServerWriteFails : public Faults {
      protected:
	ServerWriteFails()
	{
		sopts.env["RPCRDMA_SOFT_FAULT"] = "fail_next_write=1";
	}
};

TEST_F(ServerWriteFails, ConnectionClosedServerSurvives)
{
	Requester *a = connect();
	Requester *b = connect();
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(ping(a));
	ASSERT_TRUE(ping(b));
	int64_t x = post_source_write(a, 100000);
	ASSERT_GE(x, 0);
	Reply r;
	EXPECT_FALSE(a->wait(uint32_t(x), &r, 5000)) << "got a reply: " << r.describe();
	EXPECT_TRUE(a->wait_disconnected(5000));
	EXPECT_TRUE(ping(b));
	Requester *c = connect();
	ASSERT_NE(c, nullptr);
	EXPECT_TRUE(ping(c));
}

class ServerLinkDrops : public Faults {
      protected:
	ServerLinkDrops()
	{
		sopts.env["RPCRDMA_SOFT_FAULT"] = "drop_after_bytes=300000";
	}
};

/* The server's link drops in the middle of a 1 MiB RDMA Write. */
TEST_F(ServerLinkDrops, DuringRdmaWrite)
{
	Requester *a = connect();
	Requester *b = connect();
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(ping(a));
	ASSERT_TRUE(ping(b));
	int64_t x = post_source_write(a, 1 << 20);
	ASSERT_GE(x, 0);
	Reply r;
	EXPECT_FALSE(a->wait(uint32_t(x), &r, 5000)) << "got a reply: " << r.describe();
	EXPECT_TRUE(a->wait_disconnected(5000));
	for (int i = 0; i < 5; i++)
		EXPECT_TRUE(ping(b));
}

/* Connections come and go with calls in flight; the server's connection
 * count returns to what is really connected. */
TEST_F(Faults, ConnectionChurn)
{
	Requester *keep = connect();
	ASSERT_NE(keep, nullptr);
	ASSERT_TRUE(ping(keep));
	for (int i = 0; i < 20; i++) {
		std::string err;
		RequesterOptions o;
		o.addr = srv.addr();
		auto a = Requester::connect(o, &err);
		ASSERT_TRUE(a) << err;
		ASSERT_TRUE(ping(a.get()));
		for (int k = 0; k < 3; k++) {
			TestCall c = call_data(a->next_xid(), RRT_PROC_ECHO, random_bytes(rng, 500));
			a->post(c.rpc, CallSpec());
		}
		a.reset();
	}
	EXPECT_TRUE(ping(keep));
	uint64_t active = ~0ull;
	for (int i = 0; i < 50 && active != 1; i++) {
		active = srv.stats()["conns_active"];
		if (active != 1)
			usleep(100000);
	}
	EXPECT_EQ(active, 1u);
	EXPECT_EQ(srv.stats()["conns_accepted"], 21u);
}

/*
 * Inline Replies go out as unsignalled Sends, a bounded number at a time: a
 * later signalled Send's completion retires them. Sequential and pipelined
 * calls (every credit in use, round after round) never find the server
 * short of a send context, and a client that leaves with unsignalled Sends
 * still outstanding has its connection freed like any other.
 */
TEST_F(Faults, UnsignalledRepliesRetiredAndFreedAtClose)
{
	Requester *keep = connect();
	ASSERT_NE(keep, nullptr);
	ASSERT_TRUE(ping(keep));
	const uint64_t listed0 = srv.stats()["conns_listed"];
	const uint64_t quiet0 = srv.stats()["sends_unsignalled"];

	std::string err;
	RequesterOptions o;
	o.addr = srv.addr();
	auto a = Requester::connect(o, &err);
	ASSERT_TRUE(a) << err;
	const int n = 100;
	for (int i = 0; i < n; i++)
		ASSERT_TRUE(ping(a.get())) << "call " << i;
	uint64_t quiet = srv.stats()["sends_unsignalled"] - quiet0;
	EXPECT_GT(quiet, uint64_t(n / 2)) << "inline Replies should mostly go unsignalled";
	EXPECT_LT(quiet, uint64_t(n)) << "some Send must be signalled to retire the others";

	for (int round = 0; round < 20; round++) {
		std::vector<std::pair<uint32_t, std::vector<uint8_t>>> sent;
		for (;;) {
			auto d = random_bytes(rng, 16 + rng() % 900);
			TestCall c = call_data(a->next_xid(), RRT_PROC_ECHO, d);
			int64_t x = a->post(c.rpc, CallSpec());
			if (x == -EAGAIN)
				break;
			ASSERT_GE(x, 0) << "round " << round;
			sent.emplace_back(uint32_t(x), d);
		}
		ASSERT_GT(sent.size(), 1u) << "the grant allows a pipeline";
		for (auto &[xid, d] : sent) {
			Reply r;
			ASSERT_TRUE(a->wait(xid, &r)) << "round " << round << ": " << a->last_error();
			EXPECT_TRUE(opaque_result(r, xid, d));
		}
	}
	EXPECT_TRUE(a->connected());

	/* leave, most likely between two signalled Sends */
	ASSERT_TRUE(ping(a.get()));
	a.reset();
	EXPECT_EQ(conns_listed_when(listed0), listed0) << "the connection that left is still held";
	EXPECT_TRUE(ping(keep));
}

} // namespace
