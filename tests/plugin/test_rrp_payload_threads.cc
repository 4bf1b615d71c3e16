// SPDX-License-Identifier: MIT
// The READ payload pool's lock-free structures (src/plugin/rrp_payload.c)
// from many threads: the free-slot stacks of its size classes (any worker
// takes, any thread gives back) and the table of lent WRITE buffers (lent on
// the decoding thread, taken back by whichever thread frees). The pool is
// built here without its interposer (RRP_PAYLOAD_UNDER_TEST): its entry
// points are rrp_payload_malloc ..., over the process's allocator, so this
// binary runs under ThreadSanitizer too (ci/tsan.sh), where the preloaded
// library, which replaces malloc, cannot.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

extern "C" {
#include "plugin/rrp_payload.h"
#include "plugin/rrp_payload_test_hooks.h"
}

#include "plugin/payload_arena.h"

namespace {

using rrp_test::Arena;
using rrp_test::arena;
using rrp_test::kLarge;
using rrp_test::kSmall;

// One announced READ buffer, by posix_memalign or by malloc as a host
// adapter may say.
void *announced(size_t n, bool aligned)
{
	void *p = nullptr;
	rrp_payload_expect(n, 1, aligned);
	if (aligned)
		EXPECT_EQ(0, rrp_payload_posix_memalign(&p, RRP_PAYLOAD_ALIGN, n));
	else
		p = rrp_payload_malloc(n);
	rrp_payload_expect(0, 0, false);
	return p;
}

// Four threads take slots and give them back, half on another thread: no
// slot is ever held by two at once (each writes its stamp and reads it
// back), and none is lost (all can be taken again afterwards).
TEST(PayloadThreads, SlotStacksNeverShareOrLoseASlot)
{
	const Arena &a = arena();
	constexpr int kThreads = 4, kRounds = 4000;
	std::atomic<int> shared{0}, in_arena{0};
	std::atomic<void *> handoff[kThreads];
	for (auto &h : handoff)
		h = nullptr;
	std::vector<std::thread> t;
	for (int id = 0; id < kThreads; id++)
		t.emplace_back([&, id] {
			for (int r = 0; r < kRounds; r++) {
				uint64_t stamp = (uint64_t)id << 32 | (uint32_t)r;
				size_t n = r % 5 == 0 ? RRP_PAYLOAD_LARGE - 4096
						      : (r % 3 ? 8192 : RRP_PAYLOAD_SMALL);
				auto *p = static_cast<uint64_t *>(announced(n, r % 2));
				ASSERT_NE(nullptr, p);
				if (a.has(p))
					in_arena++;
				p[0] = stamp;
				p[n / 8 - 1] = ~stamp;
				if (r % 7 == 0)
					std::this_thread::yield();
				if (p[0] != stamp || p[n / 8 - 1] != ~stamp)
					shared++;
				if (r % 2)
					rrp_payload_free(p);
				else
					rrp_payload_free(handoff[(id + 1) % kThreads].exchange(p));
			}
		});
	for (auto &th : t)
		th.join();
	for (auto &h : handoff)
		rrp_payload_free(h.exchange(nullptr));
	EXPECT_EQ(0, shared.load());
	EXPECT_GT(in_arena.load(), kThreads * kRounds / 4) << "the arena served many of them";
	std::vector<void *> all;
	for (size_t i = 0; i < kSmall; i++)
		all.push_back(announced(RRP_PAYLOAD_SMALL, true));
	for (size_t i = 0; i < kLarge; i++)
		all.push_back(announced(RRP_PAYLOAD_LARGE, true));
	for (void *p : all)
		EXPECT_TRUE(a.has(p)) << "a slot was lost";
	for (size_t i = 0; i < all.size(); i++)
		for (size_t j = i + 1; j < all.size(); j++)
			EXPECT_NE(all[i], all[j]);
	for (void *p : all)
		rrp_payload_free(p);
}

// WRITE data lent in place: a stand-in decoder that is always at the chunk.
bool always_at(void *arg, const void *addr)
{
	return arg == addr;
}

// Four threads lend chunks and hand each lent buffer to the next thread,
// which frees it: every malloc at a chunk gets the chunk, and every free()
// of one is taken back by the table, never passed to the allocator (the
// chunks lie in an inaccessible reservation no allocator owns; a sanitizer
// reports a free of an address it never gave out).
TEST(PayloadThreads, LentTableTakesEveryBufferBackOnAnyThread)
{
	constexpr int kThreads = 4, kRounds = 3000;
	const size_t stride = 3 * 4096, len = 8192;
	const size_t span = stride * kThreads * kRounds;
	void *res =
	    mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(res, MAP_FAILED);
	auto chunk = [&](int id, int r) {
		return static_cast<uint8_t *>(res) + ((size_t)r * kThreads + id) * stride;
	};
	uint64_t lent0 = rrp_payload_lent_bytes();
	std::atomic<int> lent{0}, others{0};
	std::atomic<void *> handoff[kThreads];
	for (auto &h : handoff)
		h = nullptr;
	std::vector<std::thread> t;
	for (int id = 0; id < kThreads; id++)
		t.emplace_back([&, id] {
			for (int r = 0; r < kRounds; r++) {
				struct iovec ch[1] = {{chunk(id, r), len}};
				rrp_payload_lend(ch, 1, always_at, ch[0].iov_base);
				void *p = rrp_payload_malloc(len);
				rrp_payload_lend(nullptr, 0, nullptr, nullptr);
				if (p == ch[0].iov_base)
					lent++;
				else
					others++;
				// Lending ended: the same size is the allocator's again.
				void *q = rrp_payload_malloc(len);
				if (q == ch[0].iov_base)
					others += 1000;
				rrp_payload_free(q);
				rrp_payload_free(handoff[(id + 1) % kThreads].exchange(p));
			}
		});
	for (auto &th : t)
		th.join();
	for (auto &h : handoff)
		rrp_payload_free(h.exchange(nullptr));
	EXPECT_EQ(kThreads * kRounds, lent.load());
	EXPECT_EQ(0, others.load());
	EXPECT_EQ(lent0 + (uint64_t)kThreads * kRounds * len, rrp_payload_lent_bytes());
	// All taken back: the first chunk lends again.
	struct iovec ch[1] = {{chunk(0, 0), len}};
	rrp_payload_lend(ch, 1, always_at, ch[0].iov_base);
	void *again = rrp_payload_malloc(len);
	rrp_payload_lend(nullptr, 0, nullptr, nullptr);
	EXPECT_EQ(again, ch[0].iov_base);
	rrp_payload_free(again);
	munmap(res, span);
}

} // namespace
