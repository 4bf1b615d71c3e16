// SPDX-License-Identifier: MIT
// The table of NFSv4.1 fore-channel slots whose Reply was not delivered
// (src/plugin/rrp_slots.c, RFC 8267 section 4.5), driven as the plugin
// drives it: rrp_slots_uncache when ERR_CHUNK replaces a Reply, and
// rrp_slots_check on every Call. Checked from the outside: the exact retry
// is answered until the slot moves on, nothing else is, the table stays
// bounded and keeps what was remembered last, under concurrent callers.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

extern "C" {
#include "plugin/rrp_slots.h"
}

namespace {

constexpr uint32_t kAuthSys = 1, kAuthGss = 6;

// Session ids as a server makes them: 16 opaque bytes; tests draw their
// own from a seeded generator so that no two tests share a session.
ulb_sequence make_seq(std::mt19937 &rng, uint32_t slot, uint32_t seqid)
{
	ulb_sequence s{};
	for (auto &b : s.sessionid)
		b = static_cast<uint8_t>(rng());
	s.slotid = slot;
	s.sequenceid = seqid;
	return s;
}

ulb_call call_on(const ulb_sequence &s, uint32_t flavor = kAuthSys, bool has_sequence = true)
{
	ulb_call c{};
	c.has_sequence = has_sequence;
	c.cred_flavor = flavor;
	c.seq = s;
	return c;
}

bool answered(const ulb_sequence &s)
{
	ulb_call c = call_on(s);
	return rrp_slots_check(&c) == RRP_SLOT_RETRY_UNCACHED;
}

TEST(RrpSlots, NothingRememberedPassesEveryCall)
{
	std::mt19937 rng(1);
	for (uint32_t slot = 0; slot < 64; slot++)
		EXPECT_FALSE(answered(make_seq(rng, slot, 7))) << "slot " << slot;
}

TEST(RrpSlots, TheExactRetryIsAnsweredUntilTheSlotMovesOn)
{
	std::mt19937 rng(2);
	ulb_sequence s = make_seq(rng, 3, 41);

	rrp_slots_uncache(&s);
	// The client retries the same slot with the same sequence id: as many
	// times as it likes (a lost Reply of ours is retried again).
	EXPECT_TRUE(answered(s));
	EXPECT_TRUE(answered(s));
	// It advanced the sequence id (after NFS4ERR_RETRY_UNCACHED_REP): that
	// request goes to ganesha, and the slot is forgotten.
	ulb_sequence next = s;
	next.sequenceid++;
	EXPECT_FALSE(answered(next));
	EXPECT_FALSE(answered(s)) << "forgotten once the slot moved on";
}

TEST(RrpSlots, OtherSlotsSessionsAndCallsPass)
{
	std::mt19937 rng(3);
	ulb_sequence s = make_seq(rng, 5, 9);

	rrp_slots_uncache(&s);
	ulb_sequence other_slot = s;
	other_slot.slotid = 6;
	EXPECT_FALSE(answered(other_slot));
	ulb_sequence other_session = s;
	other_session.sessionid[15] ^= 1;
	EXPECT_FALSE(answered(other_session));
	// No SEQUENCE first (NFSv4.0, or v4.1 without it): not a slot's request.
	ulb_call plain = call_on(s, kAuthSys, false);
	EXPECT_EQ(rrp_slots_check(&plain), RRP_SLOT_PASS);
	// RPCSEC_GSS: the transport cannot sign the verifier, ganesha answers.
	ulb_call gss = call_on(s, kAuthGss);
	EXPECT_EQ(rrp_slots_check(&gss), RRP_SLOT_PASS);
	EXPECT_TRUE(answered(s)) << "still remembered after calls that passed";

	// Remembering the same slot again (its next request failed too) keeps
	// one entry, at the new sequence id.
	ulb_sequence again = s;
	again.sequenceid = 10;
	rrp_slots_uncache(&again);
	EXPECT_TRUE(answered(again));
	EXPECT_FALSE(answered(s)) << "the old sequence id moved the slot on";
	EXPECT_FALSE(answered(again));
}

TEST(RrpSlots, BoundedAndKeepsWhatWasRememberedLast)
{
	std::mt19937 rng(4);
	const size_t n = 3 * RRP_SLOTS_MAX;
	std::vector<ulb_sequence> seqs;

	for (size_t i = 0; i < n; i++) {
		seqs.push_back(make_seq(rng, static_cast<uint32_t>(i % 64), 1));
		rrp_slots_uncache(&seqs.back());
	}
	// Checking with the remembered sequence id changes nothing, so every
	// one can be asked.
	size_t kept = 0, kept_recent = 0;
	const size_t recent = RRP_SLOTS_MAX / 2;
	for (size_t i = 0; i < n; i++) {
		bool k = answered(seqs[i]);
		kept += k;
		if (i >= n - recent)
			kept_recent += k;
		if (i >= n - RRP_SLOTS_PROBE) {
			EXPECT_TRUE(k) << "one of the last " << RRP_SLOTS_PROBE
				       << " remembered was forgotten";
		}
	}
	EXPECT_LE(kept, RRP_SLOTS_MAX) << "the table outgrew its bound";
	EXPECT_GE(kept_recent, recent * 9 / 10)
		<< "a full table forgets its oldest entries, not recent ones";
	for (auto &s : seqs) { // move every slot on: the table empties
		s.sequenceid++;
		EXPECT_FALSE(answered(s));
	}
}

TEST(RrpSlots, ConcurrentCallersEachSeeTheirOwnSlots)
{
	constexpr int kThreads = 4, kRounds = 2000;
	std::vector<std::thread> ts;
	std::vector<int> wrong(kThreads, 0);

	for (int t = 0; t < kThreads; t++)
		ts.emplace_back([t, &wrong] {
			std::mt19937 rng(100 + t);
			for (int r = 0; r < kRounds; r++) {
				ulb_sequence s = make_seq(rng, static_cast<uint32_t>(r % 16), 1);
				if (answered(s))
					wrong[t]++; // never remembered
				rrp_slots_uncache(&s);
				if (!answered(s))
					wrong[t]++;
				s.sequenceid++;
				if (answered(s))
					wrong[t]++;
			}
		});
	for (auto &th : ts)
		th.join();
	for (int t = 0; t < kThreads; t++)
		EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

} // namespace
