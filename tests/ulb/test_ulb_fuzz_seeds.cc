// SPDX-License-Identifier: MIT
/* test_ulb_fuzz_seeds.cc - the committed fuzz seeds are well-formed: every
 * Call seed scans and passes the Read-chunk check, no Reply seed is garbage.
 * Guards the seeds (and the encoder) against drifting from the ULB. */
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz/fuzz_ulb_input.h"
#include "ulb/ulb_call.h"

namespace fs = std::filesystem;

static std::vector<uint8_t> slurp(const fs::path &p)
{
	std::ifstream f(p, std::ios::binary);
	return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

TEST(UlbFuzzSeeds, CallSeedsScan)
{
	int n = 0;
	for (auto &e : fs::directory_iterator(ULB_SEEDS "/fuzz_ulb_call_scan")) {
		auto b = slurp(e.path());
		static rr_pcl pcl;
		static ulb_call c;
		const uint8_t *s;
		size_t len;
		uint8_t seed;
		ASSERT_TRUE(fuzzulb::decode_call_input(b.data(), b.size(), &pcl, &s, &len, &seed));
		auto iov = fuzzulb::cut(s, len, seed);
		EXPECT_EQ(ulb_call_scan(iov.data(), int(iov.size()), &pcl, &c), ULB_SCAN_OK)
		    << e.path();
		EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_OK) << e.path();
		n++;
	}
	EXPECT_GE(n, 10);
}

TEST(UlbFuzzSeeds, ReplySeedsWalk)
{
	int n = 0;
	for (auto &e : fs::directory_iterator(ULB_SEEDS "/fuzz_ulb_reply_walk")) {
		auto b = slurp(e.path());
		static rr_pcl pcl;
		static ulb_call c;
		rr_reply_plan plan;
		const uint8_t *s;
		size_t len;
		uint8_t seed;
		ASSERT_TRUE(fuzzulb::decode_reply_input(b.data(), b.size(), &c, &pcl, &s, &len,
							&seed));
		auto iov = fuzzulb::cut(s, len, seed);
		EXPECT_NE(
		    ulb_reply_plan(&c, iov.data(), int(iov.size()), &pcl, 0, &plan, nullptr),
		    ULB_REPLY_GARBAGE)
		    << e.path();
		n++;
	}
	EXPECT_GE(n, 8);
}
