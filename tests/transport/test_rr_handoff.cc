// SPDX-License-Identifier: MIT
// The intrusive lock-free stack every hand-off rides on
// (src/rpcrdma/rr_handoff.h): the engine's hand-offs to its event thread and
// the plugin's free requests (src/plugin/rrp_xprt.c, req_get / req_put).
// Many threads give back, one takes; run under ThreadSanitizer too
// (ci/tsan.sh), where a hand-off that did not order a node's plain fields
// is a report.
#include <gtest/gtest.h>

#include "rr_handoff_probe.h"

namespace {

TEST(Handoff, TakeGivesOldestFirstAndTakeAllNewestFirst)
{
	int got[5];
	ASSERT_EQ(5, rr_handoff_probe_order(1, got, 5));
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(i, got[i]);
	ASSERT_EQ(5, rr_handoff_probe_order(0, got, 5));
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(4 - i, got[i]);
}

void run(int fifo)
{
	constexpr int kGivers = 4, kNodes = 64;
	constexpr long kRounds = 40000;
	rr_handoff_probe r;
	ASSERT_EQ(0, rr_handoff_probe_run(kGivers, kNodes, kRounds, fifo, &r));
	EXPECT_EQ(kRounds, r.cycles);
	EXPECT_EQ(0, r.misordered) << "a giver's batch was not oldest first";
	EXPECT_EQ(0, r.stale) << "a node arrived without its stamp";
	EXPECT_EQ(kNodes, r.found) << "a node was lost";
	EXPECT_EQ(0, r.duplicates);
}

// As rrp_xprt.c's free requests: the taker moves the whole stack to a list
// of its own and pops from it.
TEST(Handoff, FreeListTakeAllUnderManyGivers)
{
	run(0);
}

// As the engine's hand-offs: taken oldest first.
TEST(Handoff, OldestFirstTakeUnderManyGivers)
{
	run(1);
}

} // namespace
