// SPDX-License-Identifier: MIT
/*
 * Max_Connections when it is not set: the budget over what one connection
 * is counted at its admission (docs/configuration.md, rpcrdma.conf(5)). The
 * expected values are worked out here from that rule in pages, as an
 * admin would: receive buffers 2 x credits + bc_credits + recv_batch
 * (138 at the defaults) unless Use_SRQ, 2 x bc_credits send buffers for
 * callbacks (4) and the claim of the send reserve (8), each 4 KiB at the
 * default inline size; with Use_SRQ the shared pools' bound (1024 buffers
 * each, one pool per event thread) comes off the budget first. End to end: a server left at the default
 * refuses the connection past that count by Max_Connections, not by memory.
 */
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "rpcrdma/rr_xprt.h"
#include "transport/rr_transport_fixture.h"

using namespace rrtest;

namespace {

constexpr uint64_t kPage = 4096;

std::unique_ptr<Requester> try_connect(const std::string &addr)
{
	RequesterOptions o;
	o.addr = addr;
	o.connect_timeout_ms = 3000;
	std::string err;
	return Requester::connect(o, &err);
}

constexpr uint64_t kPlain = (138 + 4 + 8) * kPage; /* 614,400 B */
constexpr uint64_t kSrq = (4 + 8) * kPage;	   /* 49,152 B */
constexpr uint64_t kSrqPool = 1024 * kPage;

rr_config with(uint64_t budget, bool srq, uint32_t event_threads = 1)
{
	rr_config c;
	rr_config_default(&c);
	c.recv_mem_budget = budget;
	c.use_srq = srq;
	c.event_threads = event_threads;
	return c;
}

TEST(MaxConnsDefault, IsZeroAndMeansFromTheBudget)
{
	rr_config c;
	rr_config_default(&c);
	EXPECT_EQ(c.max_conns, 0u);
}

TEST(MaxConnsDefault, BudgetOverAnIdleConnection)
{
	uint64_t gib = 1ull << 30;
	auto c = with(gib, false);
	EXPECT_EQ(rr_max_conns_for_budget(&c), gib / kPlain); /* 1,747 */
	c = with(gib, true);
	EXPECT_EQ(rr_max_conns_for_budget(&c), (gib - kSrqPool) / kSrq); /* 21,760 */
	c = with(gib, true, 3);
	EXPECT_EQ(rr_max_conns_for_budget(&c), (gib - 3 * kSrqPool) / kSrq)
	    << "a shared receive pool per event thread"; /* 21,589 */
	c = with(3 * kPlain + kPlain / 2, false);
	EXPECT_EQ(rr_max_conns_for_budget(&c), 3u);
}

TEST(MaxConnsDefault, BoundedBothWays)
{
	auto c = with(64ull << 30, true);
	EXPECT_EQ(rr_max_conns_for_budget(&c), 65536u);
	c = with(1000, false);
	EXPECT_EQ(rr_max_conns_for_budget(&c), 1u) << "never 0: one connection may try";
	c = with(0, false);
	EXPECT_EQ(rr_max_conns_for_budget(&c), 1024u) << "no budget: the old fixed default";
}

class MaxConnsServer : public TransportTest {
      protected:
	MaxConnsServer()
	{
		/* room for 3 and a half idle connections: Max_Connections 3 */
		sopts.args = {"--recv-mem", std::to_string(3 * kPlain + kPlain / 2)};
	}
};

TEST_F(MaxConnsServer, OnePastTheCountIsRefusedByMaxConnections)
{
	std::vector<std::unique_ptr<Requester>> in;
	for (int i = 0; i < 3; i++) {
		in.push_back(try_connect(srv.addr()));
		ASSERT_TRUE(in.back()) << "connection " << i;
		ASSERT_TRUE(ping(in.back().get()));
		EXPECT_EQ(in.back()->grant(), 64u);
	}
	auto extra = try_connect(srv.addr());
	EXPECT_FALSE(extra);
	auto st = srv.stats();
	EXPECT_EQ(st["conns_refused"], 1u);
	EXPECT_EQ(st["conns_refused_mem"], 0u) << "refused by the budget, not by Max_Connections";
}

} // namespace
