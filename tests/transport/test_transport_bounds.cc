// SPDX-License-Identifier: MIT
/*
 * What an unauthenticated peer may hold of the engine (rr_admit.c):
 * connections per peer address, a connection that never sends its first
 * message or goes idle, the memory budget counting send buffers as well as
 * receive buffers, and refused connections counted and logged without a
 * line per attempt. Peers that differ by address: the soft fabric binds
 * RPCRDMA_SOFT_SOURCE_ADDR (127.0.0.2 is loopback too).
 */
#include <stdlib.h>

#include <chrono>
#include <thread>

#include "transport/rr_transport_fixture.h"

using namespace rrtest;

namespace {

/* A connection attempt that must be refused (or accepted), alone. */
std::unique_ptr<Requester> try_connect(const std::string &addr, const char *source = nullptr)
{
	RequesterOptions o;
	o.addr = addr;
	o.connect_timeout_ms = 3000;
	std::string err;
	if (source)
		setenv("RPCRDMA_SOFT_SOURCE_ADDR", source, 1);
	auto r = Requester::connect(o, &err);
	unsetenv("RPCRDMA_SOFT_SOURCE_ADDR");
	return r;
}

/* Poll the server's counter @key until it is @want (5 s at most). */
uint64_t stat_when(ServerProc &srv, const char *key, uint64_t want, int tries = 100)
{
	uint64_t v = srv.stats()[key];

	for (int i = 0; i < tries && v != want; i++) {
		usleep(50000);
		v = srv.stats()[key];
	}
	return v;
}

class PerPeer : public TransportTest {
      protected:
	PerPeer()
	{
		sopts.tcp = true; /* peers with IP addresses */
		sopts.args = {"--max-per-peer", "2"};
	}
};

TEST_F(PerPeer, ThirdFromOneAddressIsRefusedAnotherAddressGetsIn)
{
	Requester *a = connect();
	Requester *b = connect();
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(ping(a));
	ASSERT_TRUE(ping(b));
	auto c = try_connect(srv.addr());
	EXPECT_FALSE(c) << "a third connection from 127.0.0.1 was accepted";
	c.reset();
	auto st = srv.stats();
	EXPECT_EQ(st["conns_refused"], 1u);
	EXPECT_EQ(st["conns_refused_peer"], 1u);

	/* Another address is another peer: its own two connections. */
	auto d = try_connect(srv.addr(), "127.0.0.2");
	ASSERT_TRUE(d) << "127.0.0.2 was refused for 127.0.0.1's connections";
	EXPECT_TRUE(ping(d.get()));
	auto e = try_connect(srv.addr(), "127.0.0.2");
	ASSERT_TRUE(e);
	EXPECT_TRUE(ping(e.get()));
	auto f = try_connect(srv.addr(), "127.0.0.2");
	EXPECT_FALSE(f) << "127.0.0.2's third connection was accepted";
	f.reset();
	EXPECT_EQ(srv.stats()["conns_refused_peer"], 2u);

	/* A peer that closes one connection may open another (once the
	 * server has seen the disconnect). */
	a->disconnect();
	std::unique_ptr<Requester> g;
	eventually([&] {
		g = try_connect(srv.addr());
		return g != nullptr;
	});
	ASSERT_TRUE(g) << "127.0.0.1 stayed refused after closing a connection";
	EXPECT_TRUE(ping(g.get()));
	EXPECT_TRUE(ping(b));
	EXPECT_TRUE(ping(d.get()));
	d.reset();
	e.reset();
	g.reset();
}

class Handshake : public TransportTest {
      protected:
	Handshake()
	{
		sopts.args = {"--handshake-timeout", "1"};
	}
};

TEST_F(Handshake, ConnectionWithoutAFirstMessageIsClosed)
{
	Requester *silent = connect();
	Requester *talker = connect();
	ASSERT_TRUE(silent && talker);
	ASSERT_TRUE(ping(talker));
	auto t0 = std::chrono::steady_clock::now();
	EXPECT_TRUE(silent->wait_disconnected(5000)) << "a silent connection was kept";
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	EXPECT_LT(secs, 4.0);
	EXPECT_EQ(stat_when(srv, "conns_timed_out", 1), 1u);
	/* The one that sent its first Call is past its handshake: kept, even
	 * idle (no idle timeout here). */
	std::this_thread::sleep_for(std::chrono::milliseconds(2500));
	EXPECT_TRUE(ping(talker));
	EXPECT_EQ(srv.stats()["conns_timed_out"], 1u);
	silent->disconnect();
}

class Idle : public TransportTest {
      protected:
	Idle()
	{
		sopts.args = {"--idle-timeout", "2"};
	}
};

TEST_F(Idle, IdleConnectionIsClosedBusyOneIsNot)
{
	Requester *idle = connect();
	Requester *busy = connect();
	ASSERT_TRUE(idle && busy);
	ASSERT_TRUE(ping(idle));
	ASSERT_TRUE(ping(busy));
	/* busy: one Call the server works on for longer than the idle timeout
	 * (DELAY answers from a worker 4.5 s later); nothing else arrives. */
	std::vector<uint8_t> d(64, 0x5a);
	TestCall c = call_delay(busy->next_xid(), 4500, d);
	ASSERT_GE(busy->post(c.rpc, CallSpec()), 0);
	EXPECT_TRUE(idle->wait_disconnected(6000)) << "an idle connection was kept";
	Reply r;
	ASSERT_TRUE(busy->wait(c.xid, &r, 8000)) << "the busy connection was closed: "
					   << busy->last_error();
	EXPECT_TRUE(opaque_result(r, c.xid, d));
	EXPECT_EQ(stat_when(srv, "conns_timed_out", 1), 1u);
	idle->disconnect();
}

/*
 * Budget: room for two default connections' receive buffers (138 x 4 KiB
 * each) and a page, not for their send buffers (150 x 4 KiB each) as well.
 * Counting receive buffers only, both got the full grant; counting all
 * registered memory, the first gets less and the second is refused.
 */
constexpr uint64_t kRecvBytes = 138 * 4096, kSendBytes = 150 * 4096;
constexpr uint64_t kBudget = 2 * kRecvBytes + 4096;

class BudgetCountsSends : public TransportTest {
      protected:
	BudgetCountsSends()
	{
		sopts.args = {"--recv-mem", std::to_string(kBudget)};
	}
};

TEST_F(BudgetCountsSends, RefusesEarlierThanReceiveBuffersAlone)
{
	auto a = try_connect(srv.addr());
	ASSERT_TRUE(a);
	ASSERT_TRUE(ping(a.get()));
	EXPECT_LT(a->grant(), 64u) << "the first connection's send buffers were not counted";
	EXPECT_GE(a->grant(), 1u);
	auto b = try_connect(srv.addr());
	EXPECT_FALSE(b) << "a second connection fit a budget its send buffers exceed";
	b.reset();
	auto st = srv.stats();
	EXPECT_EQ(st["conns_refused_mem"], 1u);
	EXPECT_LE(st["pinned_bytes"], kBudget);
	/* what is pinned is receive and send buffers, the latter more than half */
	EXPECT_GT(st["pinned_bytes"], st["recv_mem_bytes"]);
	EXPECT_GE(st["pinned_bytes"] - st["recv_mem_bytes"], st["pinned_bytes"] / 2);
	/* the admitted connection works at its whole grant at once */
	std::mt19937 rng(4);
	std::vector<std::pair<uint32_t, std::vector<uint8_t>>> inflight;
	for (uint32_t i = 0; i < a->grant(); i++) {
		auto d = random_bytes(rng, 100 + rng() % 3000);
		TestCall c = call_data(a->next_xid(), RRT_PROC_ECHO, d);
		ASSERT_GE(a->post(c.rpc, CallSpec()), 0);
		inflight.push_back({c.xid, d});
	}
	for (auto &p : inflight) {
		Reply r;
		ASSERT_TRUE(a->wait(p.first, &r));
		EXPECT_TRUE(opaque_result(r, p.first, p.second));
	}
	a.reset();
	/* everything comes back when it leaves */
	EXPECT_EQ(stat_when(srv, "pinned_bytes", 0), 0u);
	(void)kSendBytes;
}

class RefusalLog : public TransportTest {
      protected:
	RefusalLog()
	{
		sopts.args = {"--max-conns", "1"};
	}
};

TEST_F(RefusalLog, HundredRefusalsAreABoundedNumberOfLines)
{
	Requester *a = connect();
	ASSERT_TRUE(a);
	ASSERT_TRUE(ping(a));
	int accepted = 0;
	for (int i = 0; i < 100; i++)
		if (try_connect(srv.addr()))
			accepted++;
	EXPECT_EQ(accepted, 0);
	EXPECT_EQ(stat_when(srv, "conns_refused", 100), 100u);
	/* The first in full, the rest held for one summary line. */
	EXPECT_LE(srv.stats()["log_refused_lines"], 2u);
	/* The summary comes once the quiet period (RR_REFUSE_LOG_S, 5 s) is
	 * over, and it is one line. */
	EXPECT_EQ(stat_when(srv, "log_refused_lines", 2, 160), 2u);
	std::this_thread::sleep_for(std::chrono::milliseconds(1500));
	EXPECT_EQ(srv.stats()["log_refused_lines"], 2u);
	EXPECT_TRUE(ping(a));
}

} // namespace
