// SPDX-License-Identifier: MIT
/*
 * The engine with a shared receive queue (rr_config.use_srq): many
 * connections draw receives from one pool per event thread, each with an
 * explicit bound (the evt3: runs have three; docs/threading.md). Bursts
 * beyond the pool slow senders (RNR retries) instead of disconnecting them,
 * every call is answered within each connection's own grant, teardown gives
 * every buffer back to the pool, and a client that overruns its grant loses
 * only its own connection.
 */
#include <cstdlib>

#include "transport/rr_transport_fixture.h"

using namespace rrtest;

namespace {

constexpr uint32_t kPool = 64;		/* --srq-depth */
constexpr uint32_t kInline = 4096;	/* the server's default */
constexpr uint64_t kWindow = 32 + 2 + 8;	/* one client: credits + backchannel + batch */

/* The server's pools: one per event thread (rr_test_server reads the same
 * variable), each of at most kPool receives. */
uint64_t pools()
{
	const char *n = getenv("RPCRDMA_TEST_EVENT_THREADS");

	return n && atoi(n) > 0 ? uint64_t(atoi(n)) : 1;
}

class Srq : public TransportTest {
      protected:
	std::mt19937 rng{8166};

	Srq()
	{
		sopts.args = {"--srq", "1", "--srq-depth", std::to_string(kPool), "--credits", "32"};
	}

	/* The shared pool's own behaviour needs a device that gives one
	 * (SrqFallback covers the others). */
	void SetUp() override
	{
		if (!rr_test_device_srq())
			GTEST_SKIP() << "device profile " << rr_test_device_name()
				     << " gives Use_SRQ no shared receive queue";
		TransportTest::SetUp();
	}

	/* Every connection at its full grant of ECHOs at once, then every reply checked. */
	void burst(const std::vector<Requester *> &qs)
	{
		std::vector<std::vector<std::pair<uint32_t, std::vector<uint8_t>>>> inflight(
		    qs.size());

		for (size_t k = 0; k < qs.size(); k++) {
			uint32_t g = qs[k]->grant();

			for (uint32_t i = 0; i < g; i++) {
				auto d = random_bytes(rng, 100 + rng() % 1500);
				TestCall c = call_data(qs[k]->next_xid(), RRT_PROC_ECHO, d);
				/* -EAGAIN here would mean we went past the grant. */
				ASSERT_GE(qs[k]->post(c.rpc, CallSpec()), 0) << "connection " << k;
				inflight[k].push_back({c.xid, d});
			}
			EXPECT_LE(qs[k]->outstanding(), g);
		}
		for (size_t k = 0; k < qs.size(); k++) {
			for (auto &p : inflight[k]) {
				Reply r;
				ASSERT_TRUE(qs[k]->wait(p.first, &r, 20000))
				    << "connection " << k << ": " << qs[k]->last_error();
				EXPECT_TRUE(opaque_result(r, p.first, p.second));
				EXPECT_GE(r.credits, 1u);
				EXPECT_LE(r.credits, 32u);
			}
		}
	}

	/* Wait until the upper layer has seen @n calls in all. */
	bool wait_calls(uint64_t n)
	{
		return eventually([&] { return srv.stats()["ul_calls"] >= n; });
	}
};

/* 16 connections x 32 credits = 512 calls at once against a pool of 64. */
TEST_F(Srq, BurstsBeyondThePoolSlowSendersButAreAllAnswered)
{
	std::vector<Requester *> qs;
	for (int i = 0; i < 16; i++) {
		Requester *q = connect();
		ASSERT_NE(q, nullptr);
		ASSERT_TRUE(ping(q));
		EXPECT_EQ(q->grant(), 32u) << "the grant follows Credits, not the pool";
		qs.push_back(q);
	}
	for (int round = 0; round < 3; round++) {
		burst(qs);
		if (HasFatalFailure())
			return;
	}
	for (auto *q : qs)
		EXPECT_TRUE(q->connected());
	auto st = srv.stats();
	EXPECT_EQ(st["rnr_disconnects"], 0u);
	EXPECT_EQ(st["disconnects"], 0u);
	EXPECT_EQ(st["conns_active"], 16u);
	/* Each pool holds at least one client's window (32 + 2 + 8, from the
	 * first connect), grows under the burst as far as its bound and no
	 * further; connections own none. */
	EXPECT_GE(st["recv_mem_bytes"], pools() * kWindow * kInline);
	EXPECT_LE(st["recv_mem_bytes"], pools() * kPool * kInline);
}

/* Idle connections add no receive memory: the pools are the same for 1 and
 * 24 (every event thread's is made with the first). */
TEST_F(Srq, IdleConnectionsAddNoReceiveMemory)
{
	Requester *first = connect();
	ASSERT_NE(first, nullptr);
	ASSERT_TRUE(ping(first));
	uint64_t one = srv.stats()["recv_mem_bytes"];
	EXPECT_GT(one, 0u);
	EXPECT_LE(one, pools() * kPool * kInline);
	for (int i = 0; i < 23; i++) {
		Requester *q = connect();
		ASSERT_NE(q, nullptr);
		ASSERT_TRUE(ping(q));
	}
	EXPECT_EQ(srv.stats()["recv_mem_bytes"], one);
	/* Per-connection mode would hold (2 x 32 + 2 + 8) buffers for each. */
	EXPECT_LT(one, 24ull * (2 * 32 + 2 + 8) * kInline / 10);
}

/*
 * Each round a connection holds 32 pool buffers with calls that are never
 * answered, then goes away: half the pool. A buffer not given back at
 * teardown would leave the third round's calls without receives for ever.
 */
TEST_F(Srq, TeardownUnderLoadGivesEveryBufferBack)
{
	Requester *keep = connect();
	ASSERT_NE(keep, nullptr);
	ASSERT_TRUE(ping(keep));
	uint64_t calls = srv.stats()["ul_calls"];
	for (int round = 0; round < 8; round++) {
		std::string err;
		RequesterOptions o;
		o.addr = srv.addr();
		auto a = Requester::connect(o, &err);
		ASSERT_TRUE(a) << err;
		ASSERT_TRUE(ping(a.get())); /* the reply brings the real grant */
		calls++;
		ASSERT_EQ(a->grant(), 32u);
		for (uint32_t i = 0; i < a->grant(); i++)
			ASSERT_GE(a->post(call_hold(a->next_xid()).rpc, CallSpec()), 0);
		/* Some rounds leave before the calls even arrived. */
		if (round % 2 == 0) {
			calls += a->grant();
			ASSERT_TRUE(wait_calls(calls)) << "round " << round << ": calls never arrived";
		}
		a->disconnect();
		a.reset();
		EXPECT_TRUE(ping(keep)) << "round " << round;
		if (round % 2 == 1)
			calls = srv.stats()["ul_calls"];
		else
			calls++;
	}
	burst({keep});
	/* Every buffer back: the burst above was answered, and each pool is
	 * still between one client's window (32 + 2 + 8, made at the first
	 * connect) and its bound - teardown never leaked buffers into a
	 * regrowth. */
	uint64_t mem = srv.stats()["recv_mem_bytes"];
	EXPECT_GE(mem, pools() * kWindow * kInline);
	EXPECT_LE(mem, pools() * kPool * kInline);
}

class SrqHostile : public Srq {
      protected:
	SrqHostile()
	{
		sopts.args = {"--srq", "1", "--srq-depth", std::to_string(kPool), "--credits", "8"};
	}
};

/*
 * A client that sends far past its grant (calls that are never answered, so
 * each keeps a pool buffer) is closed once it holds more than a connection
 * of its grant could; the others are delayed at most, never disconnected.
 */
TEST_F(SrqHostile, OverrunClosesOnlyThatConnection)
{
	Requester *bad = connect();
	Requester *good = connect();
	ASSERT_TRUE(bad && good);
	ASSERT_TRUE(ping(bad));
	ASSERT_TRUE(ping(good));
	CallSpec force;
	force.force = true;
	int sent = 0;
	for (int i = 0; i < 200 && bad->connected(); i++) {
		if (bad->post(call_hold(bad->next_xid()).rpc, force) < 0)
			break;
		sent++;
		bad->progress(0);
	}
	EXPECT_TRUE(bad->wait_disconnected(10000))
	    << "sent " << sent << " HOLD calls on a grant of 8; still connected";
	bad->disconnect();
	burst({good});
	EXPECT_TRUE(good->connected());
	Requester *fresh = connect();
	ASSERT_NE(fresh, nullptr);
	burst({good, fresh});
	auto st = srv.stats();
	EXPECT_GE(st["rnr_disconnects"], 1u) << "the overrun was not counted";
	EXPECT_EQ(st["disconnects"], 1u) << "only the overrunning connection goes";
}

/*
 * Use_SRQ on a device without a usable shared receive queue (none, or
 * iWARP): the engine says so once and each connection posts its own
 * receives; every call is still answered. Runs under such a profile.
 */
class SrqFallback : public TransportTest {
      protected:
	SrqFallback()
	{
		sopts.args = {"--srq", "1", "--credits", "8"};
	}
	void SetUp() override
	{
		if (rr_test_device_srq())
			GTEST_SKIP() << "device profile " << rr_test_device_name()
				     << " has a shared receive queue";
		TransportTest::SetUp();
	}
};

TEST_F(SrqFallback, ConnectionsPostTheirOwnReceives)
{
	std::mt19937 rng{8167};
	Requester *a = connect();
	Requester *b = connect();
	ASSERT_TRUE(a && b);
	for (Requester *q : {a, b}) {
		for (int i = 0; i < 20; i++) {
			auto d = random_bytes(rng, 100 + rng() % 3000);
			TestCall c = call_data(q->next_xid(), RRT_PROC_ECHO, d);
			Reply r;
			ASSERT_TRUE(q->call(c.rpc, CallSpec(), &r)) << q->last_error();
			EXPECT_TRUE(opaque_result(r, c.xid, d));
		}
	}
	auto st = srv.stats();
	EXPECT_GT(st["recv_mem_bytes"], 0u) << "receives are the connections' own";
}

/*
 * Use_SRQ with a budget too small for the shared pool once the first
 * connection's send buffers are counted: that connection falls back to
 * receives of its own, and under every profile (with or without an SRQ)
 * those must be charged to the budget at admission, like any connection's.
 * Credits 8: 38 send buffers (155,648 B), 26 receives (106,496 B) a
 * connection at the full grant; the budget holds the sends and half a page.
 * Whatever is admitted stays within the budget and serves its whole grant;
 * the rest is refused at admission (conns_refused_mem), never admitted and
 * then failed (conns_failed).
 */
constexpr uint64_t kTightBudget = 38 * 4096 + 2048;

class SrqBudget : public TransportTest {
      protected:
	SrqBudget()
	{
		/* Max_Connections set: left to the budget, the shared pool's
		 * bound alone would leave it 1 */
		sopts.args = {"--srq", "1", "--credits", "8", "--recv-mem",
			      std::to_string(kTightBudget), "--max-conns", "16"};
	}
};

TEST_F(SrqBudget, FallbackReceivesChargedAtAdmission)
{
	std::mt19937 rng{8168};
	std::vector<Requester *> in;
	int refused = 0;

	for (int i = 0; i < 3; i++) {
		RequesterOptions o;
		o.addr = srv.addr();
		o.connect_timeout_ms = 3000;
		std::string err;
		auto r = Requester::connect(o, &err);
		if (!r) {
			refused++;
			continue;
		}
		reqs.push_back(std::move(r));
		in.push_back(reqs.back().get());
	}
	ASSERT_GE(in.size(), 1u) << "the budget holds one connection at a smaller grant";
	EXPECT_GE(refused, 1);
	auto st = srv.stats();
	EXPECT_LE(st["pinned_bytes"], kTightBudget) << "registered past Receive_Memory_Budget";
	EXPECT_EQ(st["conns_refused_mem"], uint64_t(refused)) << "refusals not at admission";
	EXPECT_EQ(st["conns_failed"], 0u) << "admitted, then failed";
	/* each admitted connection at its whole grant at once */
	for (Requester *q : in) {
		std::vector<std::pair<uint32_t, std::vector<uint8_t>>> inflight;
		EXPECT_GE(q->grant(), 1u);
		for (uint32_t i = 0; i < q->grant(); i++) {
			auto d = random_bytes(rng, 100 + rng() % 3000);
			TestCall c = call_data(q->next_xid(), RRT_PROC_ECHO, d);
			ASSERT_GE(q->post(c.rpc, CallSpec()), 0);
			inflight.push_back({c.xid, d});
		}
		for (auto &p : inflight) {
			Reply r;
			ASSERT_TRUE(q->wait(p.first, &r, 20000)) << q->last_error();
			EXPECT_TRUE(opaque_result(r, p.first, p.second));
		}
	}
	EXPECT_LE(srv.stats()["pinned_bytes"], kTightBudget);
}

} // namespace
