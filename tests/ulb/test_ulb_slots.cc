// SPDX-License-Identifier: MIT
/* test_ulb_slots.cc - session-slot retirement (RFC 8267 section 4.5) on the
 * forward channel and the backchannel, bounds, and concurrent use. */
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "support/nfs_xdr_builder.h"
#include "ulb/ulb_reply.h"
#include "ulb/ulb_slots.h"
#include "ulb_test_util.h"

using namespace nfsxdr;

struct Host {
	std::mutex mu;
	std::vector<std::pair<uint32_t, ulb_sequence>> uncached, retired;
};

static void host_uncache(void *h, uint32_t xid, const ulb_sequence *seq)
{
	Host *host = static_cast<Host *>(h);
	std::lock_guard<std::mutex> g(host->mu);
	host->uncached.push_back({xid, *seq});
}

static void host_retire(void *h, uint32_t xid, const ulb_sequence *seq)
{
	Host *host = static_cast<Host *>(h);
	std::lock_guard<std::mutex> g(host->mu);
	host->retired.push_back({xid, *seq});
}

static const ulb_host_ops kOps = {host_uncache, host_retire};

static ulb_sequence seq_of(uint32_t slot, uint32_t seqid, uint8_t fill = 0x11)
{
	ulb_sequence s;
	memset(s.sessionid, fill, sizeof(s.sessionid));
	s.slotid = slot;
	s.sequenceid = seqid;
	return s;
}

class UlbSlots : public ::testing::Test
{
      protected:
	Host host;
	ulb_slots slots;
	void SetUp() override
	{
		ASSERT_EQ(ulb_slots_init(&slots, 8, 2, &kOps, &host), 0);
	}
	void TearDown() override
	{
		ulb_slots_destroy(&slots);
	}
};

TEST_F(UlbSlots, UndeliveredReplyUncachesTheSlot)
{
	/* the whole path: scan a v4.1 Call, track its SEQUENCE, the Reply
	 * overflows the inline threshold, the transport reports it */
	Sessionid sid;
	for (int i = 0; i < 16; i++)
		sid.b[i] = uint8_t(0x40 + i);
	Compound cp(0xabc, 1, 3);
	cp.op_sequence(sid, 42, 7);
	cp.op_putfh(pattern(20));
	cp.op_getattr();
	auto iov = one(cp.x.buf);
	ulb_call c;
	ASSERT_EQ(ulb_call_scan(iov.data(), 1, nullptr, &c), ULB_SCAN_OK);
	ASSERT_TRUE(c.has_sequence);
	ASSERT_EQ(ulb_slot_track(&slots, c.xid, &c.seq), 0);
	EXPECT_EQ(ulb_slot_in_flight(&slots), 1u);

	CompoundRes r(0xabc, 0, 3);
	r.res_sequence(sid, 42, 7);
	r.res_putfh();
	r.x.u32(GETATTR);
	r.x.u32(0);
	r.x.u32(1);
	r.x.u32(1);
	r.x.opaque(pattern(3000));
	auto riov = one(r.x.buf);
	rr_reply_plan plan;
	ulb_reply_limits lim = {1024};
	EXPECT_EQ(ulb_reply_plan(&c, riov.data(), 1, nullptr, &lim, &plan, nullptr),
		  ULB_REPLY_INLINE_TOO_BIG);
	ASSERT_FALSE(plan.deliverable);

	ASSERT_EQ(ulb_slot_reply_undelivered(&slots, 0xabc), 0);
	ASSERT_EQ(host.uncached.size(), 1u);
	EXPECT_EQ(host.uncached[0].first, 0xabcu);
	EXPECT_EQ(0, memcmp(host.uncached[0].second.sessionid, sid.b, 16));
	EXPECT_EQ(host.uncached[0].second.slotid, 7u);
	EXPECT_EQ(host.uncached[0].second.sequenceid, 42u);
	EXPECT_EQ(ulb_slot_in_flight(&slots), 0u);
	/* once only */
	EXPECT_EQ(ulb_slot_reply_undelivered(&slots, 0xabc), -ENOENT);
	EXPECT_EQ(host.uncached.size(), 1u);
}

TEST_F(UlbSlots, DeliveredReplyLeavesSlotAlone)
{
	ulb_sequence s = seq_of(1, 5);
	ASSERT_EQ(ulb_slot_track(&slots, 10, &s), 0);
	EXPECT_EQ(ulb_slot_reply_sent(&slots, 10), 0);
	EXPECT_EQ(ulb_slot_reply_undelivered(&slots, 10), -ENOENT);
	EXPECT_TRUE(host.uncached.empty());
}

TEST_F(UlbSlots, DecodeTimeErrChunkLeavesSlotAlone)
{
	/* ERR_CHUNK at decode time: SEQUENCE never ran, nothing was tracked */
	EXPECT_EQ(ulb_slot_reply_undelivered(&slots, 99), -ENOENT);
	/* a call dropped before execution is forgotten without the hook */
	ulb_sequence s = seq_of(2, 6);
	ASSERT_EQ(ulb_slot_track(&slots, 100, &s), 0);
	EXPECT_EQ(ulb_slot_forget(&slots, 100), 0);
	EXPECT_EQ(ulb_slot_reply_undelivered(&slots, 100), -ENOENT);
	EXPECT_TRUE(host.uncached.empty());
}

TEST_F(UlbSlots, BackchannelErrChunkRetiresSlot)
{
	Sessionid sid;
	for (int i = 0; i < 16; i++)
		sid.b[i] = uint8_t(0x90 + i);
	Bytes cb = cb_compound_call(0x5001, sid, 3, 0);
	auto iov = one(cb);
	ulb_sequence s;
	ASSERT_EQ(ulb_cb_scan_sequence(iov.data(), 1, &s), 0);
	ASSERT_EQ(ulb_bc_track(&slots, 0x5001, &s), 0);
	ulb_sequence s2 = seq_of(1, 9);
	ASSERT_EQ(ulb_bc_track(&slots, 0x5002, &s2), 0);
	EXPECT_EQ(ulb_bc_in_flight(&slots), 2u);
	/* capacity 2 */
	EXPECT_EQ(ulb_bc_track(&slots, 0x5003, &s2), -ENOSPC);

	/* the client answers 0x5001 with RDMA_ERROR / ERR_CHUNK */
	ASSERT_EQ(ulb_bc_err_chunk(&slots, 0x5001), 0);
	ASSERT_EQ(host.retired.size(), 1u);
	EXPECT_EQ(host.retired[0].first, 0x5001u);
	EXPECT_EQ(0, memcmp(host.retired[0].second.sessionid, sid.b, 16));
	EXPECT_EQ(host.retired[0].second.sequenceid, 3u);
	EXPECT_EQ(host.retired[0].second.slotid, 0u);
	/* 0x5002 gets a normal reply: no retirement */
	EXPECT_EQ(ulb_bc_reply_received(&slots, 0x5002), 0);
	EXPECT_EQ(ulb_bc_err_chunk(&slots, 0x5002), -ENOENT);
	EXPECT_EQ(host.retired.size(), 1u);
	EXPECT_EQ(ulb_bc_in_flight(&slots), 0u);
	/* the forward table never saw any of it */
	EXPECT_TRUE(host.uncached.empty());
}

TEST_F(UlbSlots, BoundedAndNoDuplicates)
{
	ulb_sequence s = seq_of(0, 0);
	for (uint32_t x = 0; x < 8; x++)
		ASSERT_EQ(ulb_slot_track(&slots, x, &s), 0);
	EXPECT_EQ(ulb_slot_track(&slots, 8, &s), -ENOSPC);
	EXPECT_EQ(ulb_slot_track(&slots, 3, &s), -EEXIST);
	EXPECT_EQ(ulb_slot_reply_sent(&slots, 3), 0);
	EXPECT_EQ(ulb_slot_track(&slots, 8, &s), 0);
	EXPECT_EQ(ulb_slot_in_flight(&slots), 8u);
}

TEST(UlbSlotsInit, RejectsBadCapacities)
{
	ulb_slots s;
	EXPECT_EQ(ulb_slots_init(&s, 0, 1, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(ulb_slots_init(&s, 1, ULB_SLOTS_MAX + 1, nullptr, nullptr), -EINVAL);
	ASSERT_EQ(ulb_slots_init(&s, ULB_SLOTS_MAX, 1, nullptr, nullptr), 0);
	ulb_sequence q = seq_of(1, 1);
	/* NULL hooks are allowed */
	ASSERT_EQ(ulb_slot_track(&s, 1, &q), 0);
	EXPECT_EQ(ulb_slot_reply_undelivered(&s, 1), 0);
	ulb_slots_destroy(&s);
}

TEST(UlbSlotsModel, MatchesAMapUnderRandomOps)
{
	/* open addressing with backward-shift deletion against std::map */
	ulb_slots s;
	Host host;
	ASSERT_EQ(ulb_slots_init(&s, 64, 1, &kOps, &host), 0);
	std::map<uint32_t, uint32_t> model;
	std::mt19937 rng(7);
	for (int i = 0; i < 200000; i++) {
		uint32_t xid = rng() % 200; /* collisions and reuse */
		int what = rng() % 3;
		if (what == 0) {
			ulb_sequence q = seq_of(xid, xid * 3);
			int r = ulb_slot_track(&s, xid, &q);
			if (model.count(xid))
				ASSERT_EQ(r, -EEXIST);
			else if (model.size() >= 64)
				ASSERT_EQ(r, -ENOSPC);
			else {
				ASSERT_EQ(r, 0);
				model[xid] = xid * 3;
			}
		} else if (what == 1) {
			size_t before = host.uncached.size();
			int r = ulb_slot_reply_undelivered(&s, xid);
			if (model.count(xid)) {
				ASSERT_EQ(r, 0);
				ASSERT_EQ(host.uncached.size(), before + 1);
				ASSERT_EQ(host.uncached.back().second.sequenceid, model[xid]);
				model.erase(xid);
			} else {
				ASSERT_EQ(r, -ENOENT);
			}
		} else {
			int r = ulb_slot_reply_sent(&s, xid);
			ASSERT_EQ(r, model.erase(xid) ? 0 : -ENOENT);
		}
		ASSERT_EQ(ulb_slot_in_flight(&s), model.size());
	}
	ulb_slots_destroy(&s);
}

TEST(UlbSlotsThreads, ConcurrentTrackAndRetire)
{
	ulb_slots s;
	Host host;
	const int kThreads = 4, kPer = 20000;
	ASSERT_EQ(ulb_slots_init(&s, 256, 256, &kOps, &host), 0);
	std::vector<std::thread> th;
	for (int t = 0; t < kThreads; t++) {
		th.emplace_back([&, t] {
			for (int i = 0; i < kPer; i++) {
				uint32_t xid = uint32_t(t) << 24 | uint32_t(i);
				ulb_sequence q = seq_of(uint32_t(t), uint32_t(i));
				ASSERT_EQ(ulb_slot_track(&s, xid, &q), 0);
				ASSERT_EQ(ulb_bc_track(&s, xid, &q), 0);
				if (i % 2)
					ASSERT_EQ(ulb_slot_reply_undelivered(&s, xid), 0);
				else
					ASSERT_EQ(ulb_slot_reply_sent(&s, xid), 0);
				if (i % 3 == 0)
					ASSERT_EQ(ulb_bc_err_chunk(&s, xid), 0);
				else
					ASSERT_EQ(ulb_bc_reply_received(&s, xid), 0);
			}
		});
	}
	for (auto &t : th)
		t.join();
	EXPECT_EQ(host.uncached.size(), size_t(kThreads * kPer / 2));
	size_t per_retired = (kPer + 2) / 3;
	EXPECT_EQ(host.retired.size(), size_t(kThreads) * per_retired);
	EXPECT_EQ(ulb_slot_in_flight(&s), 0u);
	EXPECT_EQ(ulb_bc_in_flight(&s), 0u);
	ulb_slots_destroy(&s);
}
