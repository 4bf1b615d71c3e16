// SPDX-License-Identifier: MIT
/*
 * The Read-sink pool under hostile use (policy: src/rpcrdma/rr_internal.h,
 * above struct rr_bigpool): sinks sized to the chunk, a connection's share
 * of the shared pool and the reserve every connection keeps, and sinks that
 * no peer can write by RDMA. The requester is the independent one in
 * tests/support; the server's stats line gives sink_bytes (sinks and reply
 * bounce buffers held), sink_pool_bytes (what the pools have registered)
 * and, from a hook in rr_test_server, the address and key of the latest
 * call's first sink.
 */
#include <unistd.h>

#include "fabric/fab_soft.h"
#include "transport/rr_transport_fixture.h"

using namespace rrtest;

namespace
{

constexpr uint64_t kSmallSink = 4096; /* the smallest class */

class Sinks : public TransportTest
{
      protected:
	std::mt19937 rng{2525};

	/* @c's data split into @nchunks Read chunks of equal size. */
	static CallSpec split_spec(const TestCall &c, size_t len, unsigned int nchunks)
	{
		CallSpec s;
		s.mode = CallSpec::READ;
		size_t part = len / nchunks;
		for (unsigned int i = 0; i < nchunks; i++)
			s.reads.push_back({c.data_pos + i * part, part});
		return s;
	}

	/* HOLD with @data split into @nchunks Read chunks of equal size. */
	int64_t post_hold(Requester *q, const std::vector<uint8_t> &data, unsigned int nchunks)
	{
		TestCall c = call_data(q->next_xid(), RRT_PROC_HOLD, data);
		return q->post(c.rpc, split_spec(c, data.size(), nchunks));
	}

	/* A Long Reply (SOURCE through the Reply chunk) and a SINK through a
	 * Read chunk on @q, each answered within 5 s and correct. */
	void other_connection_served(Requester *q, size_t sink_len, uint32_t source_len)
	{
		uint64_t err_chunk = srv.stats()["err_chunk_sent"];
		Reply r;

		TestCall l = call_source(q->next_xid(), source_len, 9);
		CallSpec s;
		s.reply = {source_len + 1024};
		ASSERT_TRUE(q->call(l.rpc, s, &r, 5000))
		    << "a Long Reply on another connection got no reply: " << q->last_error();
		EXPECT_EQ(r.proc, RDMA_NOMSG) << "not a Long Reply: " << r.describe();
		EXPECT_TRUE(opaque_result(r, l.xid, pattern(9, source_len)));
		EXPECT_EQ(srv.stats()["err_chunk_sent"], err_chunk);

		auto d = random_bytes(rng, sink_len);
		TestCall c = call_data(q->next_xid(), RRT_PROC_SINK, d);
		ASSERT_TRUE(q->call(c.rpc, read_spec(c), &r, 5000))
		    << "a Read chunk on another connection got no reply: " << q->last_error();
		EXPECT_TRUE(sink_result(r, c.xid, d));
	}

	/* Four connections to hoard sinks and a fifth, each answered once. */
	void connect_five(std::vector<Requester *> *hoarders, Requester **e)
	{
		for (int i = 0; i < 4; i++) {
			Requester *h = connect();
			ASSERT_TRUE(h);
			ASSERT_TRUE(ping(h));
			hoarders->push_back(h);
		}
		*e = connect();
		ASSERT_TRUE(*e);
		ASSERT_TRUE(ping(*e));
	}

	/* A SINK of @len bytes through a Read chunk on @q, answered and whole. */
	void sink_call(Requester *q, size_t len)
	{
		auto d = random_bytes(rng, len);
		TestCall c = call_data(q->next_xid(), RRT_PROC_SINK, d);
		Reply r;

		ASSERT_TRUE(q->call(c.rpc, read_spec(c), &r, 5000)) << q->last_error();
		EXPECT_TRUE(sink_result(r, c.xid, d));
	}

	/* Once every slab has been wholly free for RR_SINK_IDLE_S (5 s), the
	 * pools hold nothing registered. */
	::testing::AssertionResult pool_given_back()
	{
		if (eventually([&] { return srv.stats()["sink_pool_bytes"] == 0; }, 15000))
			return ::testing::AssertionSuccess();
		return ::testing::AssertionFailure()
		       << "the sink pools still hold " << srv.stats()["sink_pool_bytes"]
		       << " bytes registered 15 s after the last call";
	}
};

/*
 * The review's reproduction: 64 held calls (the whole grant), each with four
 * 16-byte Read chunks, took every sink of the pool (one full-size buffer per
 * chunk) and kept them; another connection's Read waited forever and its
 * Long Reply got ERR_CHUNK. Sized to the chunk, they hold 64 x 4 x 4 KiB.
 */
TEST_F(Sinks, HeldSmallChunksLeaveOtherConnectionsServed)
{
	Requester *a = connect();
	Requester *b = connect();
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(ping(a));
	ASSERT_TRUE(ping(b));
	uint64_t before = srv.stats()["ul_calls"];
	uint32_t grant = a->grant();
	ASSERT_GE(grant, 64u);
	for (uint32_t i = 0; i < 64; i++)
		ASSERT_GE(post_hold(a, random_bytes(rng, 64), 4), 0) << a->last_error();
	EXPECT_EQ(ul_calls_settled(before), before + 64)
	    << "the held calls did not all reach the upper layer";
	EXPECT_EQ(srv.stats()["sink_bytes"], 64 * 4 * kSmallSink);

	other_connection_served(b, 3000, 16000);
	EXPECT_TRUE(ping(b));
}

/*
 * Sinks come and go with the calls (issue #33): four connections each with
 * four calls at once whose 100 KiB Read chunks are echoed back in a Long
 * Reply (a full-size sink and a full-size bounce buffer each, past the
 * buffers registered up front), then quiet. The pools give every slab back
 * once it has been wholly free for 5 s, the connections stay up, and the
 * next Read takes a sink again (registered anew) with its data whole.
 */
TEST_F(Sinks, PoolGivesBackWhatIdleConnectionsUsedThenServesAgain)
{
	std::vector<Requester *> qs;
	for (int i = 0; i < 4; i++) {
		Requester *q = connect();
		ASSERT_TRUE(q);
		ASSERT_TRUE(ping(q));
		qs.push_back(q);
	}
	std::vector<std::pair<TestCall, std::vector<uint8_t>>> calls;
	uint64_t regs = srv.stats()["registrations"];
	for (Requester *q : qs) {
		for (int i = 0; i < 4; i++) {
			auto d = random_bytes(rng, 100 * 1024);
			TestCall c = call_delay(q->next_xid(), 300, d);
			CallSpec s = read_spec(c);
			s.reply = {uint32_t(d.size()) + 1024};
			ASSERT_GE(q->post(c.rpc, s), 0) << q->last_error();
			calls.emplace_back(c, d);
		}
	}
	for (size_t i = 0; i < calls.size(); i++) {
		Reply r;
		ASSERT_TRUE(qs[i / 4]->wait(calls[i].first.xid, &r, 10000))
		    << qs[i / 4]->last_error();
		EXPECT_TRUE(opaque_result(r, calls[i].first.xid, calls[i].second));
	}
	auto st = srv.stats();
	EXPECT_TRUE(eventually([&] { return srv.stats()["sink_bytes"] == 0; }))
	    << "sinks still held after every call was answered";
	EXPECT_GT(st["registrations"], regs)
	    << "the pools did not grow past the buffers registered up front";
	EXPECT_GT(st["sink_pool_bytes"], 0u);

	EXPECT_TRUE(pool_given_back());
	for (Requester *q : qs)
		EXPECT_TRUE(q->connected()) << "a quiet connection was closed";

	regs = srv.stats()["registrations"];
	sink_call(qs[0], 100 * 1024);
	st = srv.stats();
	EXPECT_GT(st["registrations"], regs) << "the Read found a sink nobody registered";
	EXPECT_GT(st["sink_pool_bytes"], 0u);
	EXPECT_EQ(st["sink_bytes"], 0u);
	EXPECT_TRUE(ping(qs[3]));
}

/*
 * Four connections hold calls whose Read chunks take full-size sinks, far
 * more than their shares: each is stopped at its share (its other calls
 * wait on its own queue), together they fill the shared part, and a fifth
 * connection still has its reserve for a Read chunk and a Long Reply.
 * Full-size sinks are 20 KiB here (--max-chunk 16384) to keep it cheap.
 */
class SinksSmallChunks : public Sinks
{
      protected:
	static constexpr uint64_t kBig = 20480; /* (16384 + 4) rounded up to 4 KiB */
	SinksSmallChunks()
	{
		sopts.args = {"--max-chunk", "16384"};
	}

	/* Each hoarder posts 64 held calls of four 8 KiB chunks, far past its
	 * share; ul_calls once those that got their sinks reached it. */
	uint64_t hoard(const std::vector<Requester *> &hoarders)
	{
		uint64_t before = srv.stats()["ul_calls"];
		for (Requester *h : hoarders)
			for (uint32_t i = 0; i < 64; i++)
				EXPECT_GE(post_hold(h, random_bytes(rng, 4 * 8192), 4), 0)
				    << h->last_error();
		return ul_calls_settled(before);
	}
};

/*
 * A Long Reply short of a bounce buffer is short of memory for now, not a
 * fault of the client's chunks: four connections fill the shared part, the
 * fifth holds a call whose two Read chunks take its whole reserve, then
 * asks for a Long Reply. It was answered ERR_CHUNK at once (the Linux
 * client fails the RPC with EIO); it now waits, and is sent once a hoarder
 * goes and gives its sinks back. One event thread: one pool.
 */
class SinksSmallChunksOneThread : public SinksSmallChunks
{
      protected:
	SinksSmallChunksOneThread()
	{
		sopts.args.push_back("--event-threads");
		sopts.args.push_back("1");
	}
};

TEST_F(SinksSmallChunksOneThread, LongReplyShortOfABufferWaitsNotErrChunk)
{
	std::vector<Requester *> hoarders;
	Requester *e = nullptr;
	ASSERT_NO_FATAL_FAILURE(connect_five(&hoarders, &e));
	uint64_t held = hoard(hoarders);
	/* e: its reserve, then what the hoarders left of the shared part
	 * (each stops at 2 + 62 full-size sinks: 16 calls of 4) */
	ASSERT_GE(post_hold(e, random_bytes(rng, 2 * 16384), 2), 0) << e->last_error();
	ASSERT_EQ(ul_calls_settled(held), held + 1) << "e's held call did not get its sinks";
	uint64_t left = 256 * kBig + 4 * 2 * kBig + 2 * kBig - srv.stats()["sink_bytes"];
	for (uint64_t i = 0; i < left / (4 * kBig); i++)
		ASSERT_GE(post_hold(e, random_bytes(rng, 4 * 8192), 4), 0) << e->last_error();
	ul_calls_settled(held + 1);
	ASSERT_EQ(srv.stats()["sink_bytes"], (256 + 4 * 2 + 2) * kBig) << "the pool is not full";
	uint64_t err_chunk = srv.stats()["err_chunk_sent"];

	TestCall l = call_source(e->next_xid(), 12000, 9);
	CallSpec s;
	s.reply = {12000 + 1024};
	ASSERT_GE(e->post(l.rpc, s), 0) << e->last_error();
	Reply r;
	ASSERT_FALSE(e->wait(l.xid, &r, 1000)) << "answered with no buffer to spare: " << r.describe();
	EXPECT_GT(srv.stats()["reply_sink_waits"], 0u);
	hoarders[0]->disconnect(); /* its sinks come back */
	ASSERT_TRUE(e->wait(l.xid, &r, 10000)) << "the Long Reply never came: " << e->last_error();
	EXPECT_EQ(r.proc, RDMA_NOMSG) << "not a Long Reply: " << r.describe();
	EXPECT_TRUE(opaque_result(r, l.xid, pattern(9, 12000)));
	EXPECT_EQ(srv.stats()["err_chunk_sent"], err_chunk);
	EXPECT_TRUE(ping(e));
}

TEST_F(SinksSmallChunks, ConnectionsOverTheirShareLeaveEveryOtherItsReserve)
{
	std::vector<Requester *> hoarders;
	Requester *e = nullptr;
	ASSERT_NO_FATAL_FAILURE(connect_five(&hoarders, &e));
	uint64_t before = srv.stats()["ul_calls"];
	uint64_t held = hoard(hoarders) - before;
	EXPECT_LT(held, 4u * 64) << "the connections took more than their shares";
	EXPECT_GT(held, 0u);
	/* The shared part (RR_BIG_MAX full-size buffers) and the four reserves. */
	EXPECT_LE(srv.stats()["sink_bytes"], (256 + 4 * 2) * kBig);

	other_connection_served(e, 8000, 12000);
	EXPECT_TRUE(ping(e));
	for (Requester *h : hoarders)
		EXPECT_TRUE(h->connected()) << "a connection at its share is only made to wait";
}

/*
 * sink_mem_max (the plugin sets it to fit RLIMIT_MEMLOCK): the shared part
 * shrinks to what the bytes leave after every connection's reserve. With 8
 * connections of 20 KiB full-size sinks and room for 10 in the shared part
 * (2 for one whole Call's 4 chunks beyond its reserve, and 8 more), four
 * hoarders together hold no more than that part and their reserves, and a
 * fifth connection is still served from its reserve.
 */
class SinksCapped : public Sinks
{
      protected:
	static constexpr uint64_t kBig = 20480;
	static constexpr uint64_t kSlab = 256 * 1024; /* the 4 KiB class's one slab */
	static constexpr uint64_t kShared = 10;
	static constexpr uint64_t kCap = kBig * (8 * 2 + 2) + kSlab + 8 * kBig;
	SinksCapped()
	{
		sopts.args = {"--max-chunk", "16384", "--max-conns", "8", "--sink-mem",
			      std::to_string(kCap)};
	}

	/* @hoarders hold calls past their shares: within the cap, and @e still
	 * served from its reserve. */
	void hoard_and_serve(const std::vector<Requester *> &hoarders, Requester *e);
};

void SinksCapped::hoard_and_serve(const std::vector<Requester *> &hoarders, Requester *e)
{
	uint64_t before = srv.stats()["ul_calls"];
	for (Requester *h : hoarders)
		for (uint32_t i = 0; i < 32; i++)
			ASSERT_GE(post_hold(h, random_bytes(rng, 4 * 8192), 4), 0)
			    << h->last_error();
	uint64_t held = ul_calls_settled(before) - before;
	EXPECT_GT(held, 0u);
	EXPECT_LE(held, (kShared + 4 * 2) / 4) << "more calls' sinks than the cap holds";
	EXPECT_LE(srv.stats()["sink_bytes"], (kShared + 4 * 2) * kBig);

	other_connection_served(e, 8000, 12000);
	EXPECT_TRUE(ping(e));
	for (Requester *h : hoarders)
		EXPECT_TRUE(h->connected()) << "a connection over the cap is only made to wait";
}

TEST_F(SinksCapped, HoardersStayWithinTheCapOthersServed)
{
	std::vector<Requester *> hoarders;
	Requester *e = nullptr;
	ASSERT_NO_FATAL_FAILURE(connect_five(&hoarders, &e));
	hoard_and_serve(hoarders, e);
}

/*
 * The reserve is a claim on the pool's bound, not memory a connection
 * keeps: every connection moves a full-size chunk, goes quiet, and the pool
 * gives everything back; then the hoarders take the shared part again and
 * the fifth connection, which owns no sink any more, still finds its
 * reserve.
 */
TEST_F(SinksCapped, ReserveHoldsAfterThePoolGaveBack)
{
	std::vector<Requester *> hoarders;
	Requester *e = nullptr;
	ASSERT_NO_FATAL_FAILURE(connect_five(&hoarders, &e));
	for (Requester *q : hoarders)
		sink_call(q, 16000);
	sink_call(e, 16000);
	ASSERT_TRUE(pool_given_back());
	hoard_and_serve(hoarders, e);
}

/*
 * Read_Sink_Budget (issue #33): what the Read sinks may register, whatever
 * the connections' reserves. Writes from many clients wait in their sinks
 * for the upper layer's workers; in the 2 GiB interop VM 204 connections'
 * reserves alone came to 1,135 MiB and a burst of writes took ganesha to
 * the OOM killer (ci/vm/README.md). A budget of 6 MiB holds five full-size
 * buffers of 1 MiB chunks (1 MiB + 4 rounded up to pages: 1,052,672 bytes).
 */
class SinksWithinBudget : public Sinks
{
      protected:
	static constexpr uint64_t kBig = 1052672;
	explicit SinksWithinBudget(uint64_t budget)
	{
		/* one event thread, the whole budget its own (with N, each has
		 * 1/N, never below a whole Call's chunks) */
		sopts.args = {"--max-chunk", "1048576", "--sink-budget", std::to_string(budget),
			      "--event-threads", "1"};
	}
};

class SinksBudget : public SinksWithinBudget
{
      protected:
	static constexpr uint64_t kBudget = 6u << 20;
	static constexpr uint64_t kFit = kBudget / kBig; /* 5 */
	SinksBudget() : SinksWithinBudget(kBudget) {}

	/* Four connections, each posting @per calls of @nchunks Read chunks
	 * (600 KiB in all: full-size sinks), held by the upper layer. */
	uint64_t hoard(const std::vector<Requester *> &hoarders, uint32_t per, unsigned int nchunks)
	{
		uint64_t before = srv.stats()["ul_calls"];

		for (Requester *h : hoarders)
			for (uint32_t i = 0; i < per; i++)
				EXPECT_GE(post_hold(h, random_bytes(rng, nchunks * 300 * 1024), nchunks), 0)
				    << h->last_error();
		return ul_calls_settled(before) - before;
	}
};

/*
 * Sixteen held calls of one 600 KiB chunk from four connections: without
 * the budget every one fits (two in each reserve, the rest shared); with
 * it, five are held and the pool registers no more than the budget. A Long
 * Reply on a fifth connection is still served (bounce buffers are not
 * counted); its Read waits until a hoarder goes, then is served, and the
 * calls left waiting move up in its place.
 */
TEST_F(SinksBudget, HeldWritesStayWithinTheBudgetAndResumeWhenSinksComeBack)
{
	std::vector<Requester *> hoarders;
	Requester *e = nullptr;
	ASSERT_NO_FATAL_FAILURE(connect_five(&hoarders, &e));
	uint64_t held = hoard(hoarders, 4, 1);
	EXPECT_EQ(held, kFit) << "held calls' sinks: not what the budget holds";
	EXPECT_LE(srv.stats()["sink_pool_bytes"], kBudget);
	EXPECT_EQ(srv.stats()["sink_bytes"], held * kBig);

	/* a Long Reply: a bounce buffer past the budget */
	Reply r;
	TestCall l = call_source(e->next_xid(), 12000, 9);
	CallSpec ls;
	ls.reply = {12000 + 1024};
	ASSERT_TRUE(e->call(l.rpc, ls, &r, 5000)) << e->last_error();
	EXPECT_EQ(r.proc, RDMA_NOMSG) << r.describe();
	EXPECT_TRUE(opaque_result(r, l.xid, pattern(9, 12000)));

	/* a Read waits while the budget is held, holding nothing */
	auto d = random_bytes(rng, 500 * 1024);
	TestCall c = call_data(e->next_xid(), RRT_PROC_SINK, d);
	ASSERT_GE(e->post(c.rpc, read_spec(c)), 0) << e->last_error();
	EXPECT_FALSE(e->wait(c.xid, &r, 1500)) << "a Read took a sink past the budget";
	EXPECT_LE(srv.stats()["sink_pool_bytes"], kBudget);

	/* a hoarder goes: its held calls' sinks come back */
	uint64_t before = srv.stats()["ul_calls"];
	hoarders[0]->disconnect();
	ASSERT_TRUE(e->wait(c.xid, &r, 10000)) << "the waiting Read never resumed";
	EXPECT_TRUE(sink_result(r, c.xid, d));
	EXPECT_GT(ul_calls_settled(before), before + 1) << "the waiting held calls did not move up";
	EXPECT_LE(srv.stats()["sink_pool_bytes"], kBudget);
	for (size_t i = 1; i < hoarders.size(); i++)
		EXPECT_TRUE(hoarders[i]->connected()) << "a connection over the budget is only made to wait";
}

/*
 * Calls of two chunks each: a call that cannot have both holds neither, so
 * two are held (four buffers) and the fifth buffer stays free for a call it
 * fits - here another connection's one-chunk Read, served at once. Taking
 * one sink each, five waiting calls would have held the budget with none
 * able to finish.
 */
TEST_F(SinksBudget, CallsThatDoNotFitWholeHoldNone)
{
	std::vector<Requester *> hoarders;
	Requester *e = nullptr;
	ASSERT_NO_FATAL_FAILURE(connect_five(&hoarders, &e));
	uint64_t held = hoard(hoarders, 3, 2);
	EXPECT_EQ(held, kFit / 2) << "two-chunk calls held: not what the budget holds whole";
	EXPECT_EQ(srv.stats()["sink_bytes"], held * 2 * kBig);
	EXPECT_LE(srv.stats()["sink_pool_bytes"], kBudget);
	sink_call(e, 500 * 1024);
	for (Requester *h : hoarders)
		EXPECT_TRUE(h->connected());
}

/*
 * Calls waiting for sinks at the budget are served in the order they began
 * to wait. A connection whose own calls keep finishing is handled each time
 * sinks come back; it must not take every one while an older waiter on
 * another connection gets none. Here a fills the budget with DELAY calls
 * and queues many more; w's one Read, posted once the budget is full, must
 * be served within the next round of a's calls, not after a's whole queue.
 */
class SinksInTurn : public SinksBudget
{
      protected:
	/* a's 24 DELAY calls of one 600 KiB chunk each (@delay_ms(i) for the
	 * i-th), then w's SINK of @nchunks such chunks; w's Read served whole,
	 * within two rounds of a's calls (the budget's worth each) after it. */
	template <typename Delay> void served_in_turn(Delay delay_ms, unsigned int nchunks)
	{
		constexpr int kQueued = 24;
		constexpr size_t kChunk = 600 * 1024;
		Requester *w = connect();
		Requester *a = connect();
		ASSERT_TRUE(w && a);
		ASSERT_TRUE(ping(w));
		ASSERT_TRUE(ping(a));
		uint64_t before = srv.stats()["ul_calls"];
		for (int i = 0; i < kQueued; i++) {
			TestCall c = call_delay(a->next_xid(), delay_ms(i), random_bytes(rng, kChunk));
			ASSERT_GE(a->post(c.rpc, read_spec(c)), 0) << a->last_error();
		}
		ASSERT_GE(ul_calls_reach(before + kFit, a), before + kFit)
		    << "a's calls did not fill the budget";

		auto d = random_bytes(rng, nchunks * kChunk);
		TestCall c = call_data(w->next_xid(), RRT_PROC_SINK, d);
		uint64_t at_post = srv.stats()["ul_calls"];
		ASSERT_GE(w->post(c.rpc, split_spec(c, d.size(), nchunks)), 0) << w->last_error();
		Reply r;
		bool served = false;
		for (int i = 0; i < 400 && !served; i++) {
			a->progress(0); /* a's replies, so its calls keep finishing */
			served = w->wait(c.xid, &r, 50);
		}
		ASSERT_TRUE(served) << "w's Read was never served";
		uint64_t delivered = srv.stats()["ul_calls"] - at_post;
		RecordProperty("calls_before_w", int(delivered - 1));
		EXPECT_TRUE(sink_result(r, c.xid, d));
		EXPECT_LE(delivered, 1 + 2 * kFit)
		    << "w waited while " << delivered - 1 << " of a's later calls took the sinks";
		EXPECT_LE(srv.stats()["sink_pool_bytes"], kBudget);
	}
};

TEST_F(SinksInTurn, WaitersAreServedInTurn)
{
	served_in_turn([](int) { return 200; }, 1);
}

/*
 * The same with a waiter that needs two sinks at once, while a's calls
 * (delays spread, so they end one at a time) give back one each: it must
 * keep the first that comes back to it while it waits for the second.
 * Giving it back each time, it lost every one to a's next call, which
 * needs one, and waited for a's whole queue.
 */
TEST_F(SinksInTurn, WaitersNeedingSeveralSinksAreServedInTurn)
{
	served_in_turn([](int i) { return 40 + 35 * (i % 7); }, 2);
}

/*
 * Budget held by registrations no call uses: a Read that cannot grow the
 * pool waits until the tick gives idle slabs back, and must then be tried
 * again, with no other traffic to wake the pool. 9.5 MiB holds the eight
 * full-size buffers made up front and five slabs of the 64 KiB class, then
 * no ninth full-size buffer until those slabs go.
 */
class SinksIdleBudget : public SinksWithinBudget
{
      protected:
	static constexpr uint64_t kBudget = 9728u << 10;
	static constexpr uint64_t kMid = 65536; /* the 64 KiB class */
	SinksIdleBudget() : SinksWithinBudget(kBudget) {}
};

TEST_F(SinksIdleBudget, AWaitingReadIsServedOnceIdleSlabsGoBack)
{
	Requester *h = connect();
	Requester *m = connect();
	Requester *w = connect();
	ASSERT_TRUE(h && m && w);
	ASSERT_TRUE(ping(h) && ping(m) && ping(w));
	uint64_t before = srv.stats()["ul_calls"];
	for (int i = 0; i < 8; i++) /* every full-size buffer made */
		ASSERT_GE(post_hold(h, random_bytes(rng, 600 * 1024), 1), 0) << h->last_error();
	for (int i = 0; i < 5; i++) /* five slabs of 64 KiB sinks, four each */
		ASSERT_GE(post_hold(m, random_bytes(rng, 4 * 60 * 1024), 4), 0) << m->last_error();
	EXPECT_EQ(ul_calls_settled(before) - before, 13u);
	EXPECT_EQ(srv.stats()["sink_bytes"], 8 * kBig + 20 * kMid);
	m->disconnect();
	ASSERT_TRUE(eventually([&] { return srv.stats()["sink_bytes"] == 8 * kBig; }))
	    << "m's sinks did not come back";

	auto d = random_bytes(rng, 600 * 1024);
	TestCall c = call_data(w->next_xid(), RRT_PROC_SINK, d);
	ASSERT_GE(w->post(c.rpc, read_spec(c)), 0) << w->last_error();
	Reply r;
	EXPECT_FALSE(w->wait(c.xid, &r, 1000)) << "a ninth full-size sink within the 64 KiB slabs' budget";
	/* slabs wholly free for RR_SINK_IDLE_S (5 s) go at the next tick;
	 * the rest is room for a loaded machine */
	ASSERT_TRUE(w->wait(c.xid, &r, 15000))
	    << "the waiting Read was not tried again once the idle slabs went back";
	EXPECT_TRUE(sink_result(r, c.xid, d));
	EXPECT_LE(srv.stats()["sink_pool_bytes"], kBudget);
	EXPECT_TRUE(h->connected());
}

/* Peer @b RDMA-Writes @len bytes of 0xEE to @addr by @key; true once the
 * Write completed, its status in *@status. */
bool peer_writes(Requester *b, uint64_t addr, uint32_t key, size_t len, int *status)
{
	RegionP src = b->reg(len, FAB_ACCESS_LOCAL_WRITE, 0xEE);
	fab_sge sge = {};
	sge.addr = src->p;
	sge.length = uint32_t(len);
	sge.lkey = src->mr->lkey;
	fab_send_wr wr = {};
	wr.wr_id = Requester::kTestWrBase;
	wr.opcode = FAB_WR_RDMA_WRITE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.signaled = true;
	wr.remote_addr = addr;
	wr.rkey = key;
	fab_send_wr *bad = nullptr;
	if (fab_post_send(b->conn(), &wr, &bad))
		return false;
	return eventually([&] {
		b->progress(0);
		return b->completion_of(wr.wr_id, status);
	});
}

/*
 * A sink is registered for local write only: the RDMA Read response is the
 * only thing that writes it. Another client that learned (or guessed) a
 * sink's key and address and RDMA-Writes there must fail with a remote
 * access error, and the data the call carried must reach the upper layer
 * unchanged. The key comes from the server-side hook (the engine never
 * advertises one; on the soft fabric keys are small numbers, but a wrong
 * guess kills the guesser's QP, so guessing needs a connection per try).
 * Under an iWARP profile (ctest -L 'profile-(cxgb4|siw)') the key is the
 * sink's own remote-writable registration, the STag the client saw in the
 * Read: replayed after its Read completed, and from another connection, it
 * must fail the same way (docs/devices.md).
 */
TEST_F(Sinks, PeerRdmaWriteIntoASinkFails)
{
	Requester *a = connect();
	Requester *b = connect();
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(ping(a));
	ASSERT_TRUE(ping(b));
	uint64_t before = srv.stats()["ul_calls"];
	auto d = random_bytes(rng, 2000);
	TestCall c = call_delay(a->next_xid(), 1500, d);
	ASSERT_GE(a->post(c.rpc, read_spec(c)), 0) << a->last_error();
	ASSERT_GT(ul_calls_reach(before + 1, a), before)
	    << "the DELAY call did not reach the upper layer";
	/* read after: a snapshot that counts the call shows its sink */
	std::map<std::string, uint64_t> st = srv.stats();
	ASSERT_NE(st["last_sink_addr"], 0u);

	int status = FAB_WC_SUCCESS;
	ASSERT_TRUE(peer_writes(b, st["last_sink_addr"], uint32_t(st["last_sink_key"]), d.size(),
				&status))
	    << "the RDMA Write never completed";
	/* REM_ACCESS_ERR, or a flush: the server closes the connection its QP
	 * error broke, and on the soft fabric a connection destroyed before its
	 * writer thread sent the NAK takes the NAK with it. Either way the Write
	 * did not complete successfully, and the connection is gone. */
	EXPECT_TRUE(status == FAB_WC_REM_ACCESS_ERR || status == FAB_WC_WR_FLUSH_ERR)
	    << "the RDMA Write into a sink completed with status " << status;
	EXPECT_TRUE(eventually([&] {
		b->progress(0);
		return !b->connected();
	})) << "the connection that wrote into a sink stayed up";

	Reply r;
	ASSERT_TRUE(a->wait(c.xid, &r, 5000)) << a->last_error();
	EXPECT_TRUE(opaque_result(r, c.xid, d))
	    << "the call's data was overwritten by another peer";
}

/*
 * The same attack while the sink's Read is still in flight, when on iWARP
 * the sink is registered with remote write (the peer places the Read
 * Response by its STag) and the Read Request has named that STag on the
 * wire. The client of connection A holds its Read Responses back
 * (read_delay_ms); meanwhile the peer of connection B RDMA-Writes to the
 * sink by the STag and address the server's fabric put in the Read. It must
 * fail (on iWARP: the sink is in A's protection domain only), and A's call
 * must reach the upper layer with its own bytes (docs/devices.md).
 */
TEST_F(Sinks, NoOtherPeerReachesASinkWhileItsReadIsInFlight)
{
	Requester *a = connect();
	Requester *b = connect();
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(ping(a));
	ASSERT_TRUE(ping(b));
	auto st0 = srv.stats();
	fab_soft_fault hold = {};
	hold.read_delay_ms = 2000;
	ASSERT_EQ(fab_soft_fault_set(a->conn(), &hold), 0) << fab_last_error();

	auto d = random_bytes(rng, 3000); /* echoed inline */
	TestCall c = call_data(a->next_xid(), RRT_PROC_ECHO, d);
	ASSERT_GE(a->post(c.rpc, read_spec(c)), 0) << a->last_error();
	std::map<std::string, uint64_t> st;
	ASSERT_TRUE(eventually([&] {
		a->progress(0);
		st = srv.stats();
		return st["fab_read_sink_addr"] != st0["fab_read_sink_addr"] ||
		       st["fab_read_sink_key"] != st0["fab_read_sink_key"];
	})) << "the server posted no Read";
	EXPECT_EQ(st["ul_calls"], st0["ul_calls"]) << "the Read was not held in flight";

	int status = FAB_WC_SUCCESS;
	ASSERT_TRUE(peer_writes(b, st["fab_read_sink_addr"], uint32_t(st["fab_read_sink_key"]),
				d.size(), &status))
	    << "the RDMA Write never completed";
	EXPECT_TRUE(status == FAB_WC_REM_ACCESS_ERR || status == FAB_WC_WR_FLUSH_ERR)
	    << "an RDMA Write into another connection's sink in flight completed with status "
	    << status << " on " << rr_test_device_name();
	EXPECT_EQ(srv.stats()["ul_calls"], st0["ul_calls"])
	    << "the Write was not made while the Read was in flight";

	Reply r;
	ASSERT_TRUE(a->wait(c.xid, &r, 10000)) << a->last_error();
	EXPECT_TRUE(opaque_result(r, c.xid, d)) << "the call's data was overwritten by another peer";
}

/* Sinks sized to the chunk: 64 bytes pin the 4 KiB class, 40000 the 64 KiB
 * class, 100 KiB a full-size buffer; all given back with the calls. */
TEST_F(Sinks, SinkSizedToTheChunk)
{
	Requester *a = connect();
	ASSERT_TRUE(a);
	ASSERT_TRUE(ping(a));
	uint64_t before = srv.stats()["ul_calls"];
	uint64_t full = ((1u << 20) + 8192 + 4 + 4095) & ~uint64_t(4095); /* default chunk + pad */
	struct {
		size_t len;
		uint64_t sink;
	} cases[] = {{64, kSmallSink}, {40000, 65536}, {100 * 1024, full}};
	uint64_t want = 0;
	for (const auto &k : cases) {
		ASSERT_GE(post_hold(a, random_bytes(rng, k.len), 1), 0) << a->last_error();
		want += k.sink;
		EXPECT_EQ(ul_calls_settled(before), before + 1);
		before++;
		EXPECT_EQ(srv.stats()["sink_bytes"], want) << "a " << k.len << "-byte chunk";
	}
	a->disconnect();
	EXPECT_EQ(conns_listed_when(0), 0u);
	EXPECT_EQ(srv.stats()["sink_bytes"], 0u) << "sinks not given back with their calls";
}

} // namespace
