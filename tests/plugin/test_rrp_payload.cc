// SPDX-License-Identifier: MIT
// The READ payload pool (src/plugin/rrp_payload.c) as the plugin preloads it:
// this binary links the pool, so its malloc/free/posix_memalign/realloc are
// the process's. Checked from the outside: which calls are served from the
// arena, that no slot is ever handed out twice under concurrent take/free,
// and that everything else reaches glibc untouched.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
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

// A READ buffer the way ganesha 4.3's NFSv4 READ asks for it, announced
// by the plugin: posix_memalign(4096, n).
void *aligned(size_t n)
{
	void *p = nullptr;
	rrp_payload_expect(n, 1, true);
	EXPECT_EQ(0, posix_memalign(&p, RRP_PAYLOAD_ALIGN, n));
	rrp_payload_expect(0, 0, false);
	return p;
}

// The same call unannounced: the engine's sink slabs, rdma-core's queues.
void *unannounced(size_t n)
{
	void *p = nullptr;
	EXPECT_EQ(0, posix_memalign(&p, RRP_PAYLOAD_ALIGN, n));
	return p;
}

// Takes every small slot: all distinct, all in the arena's small class.
std::vector<void *> take_all_small()
{
	std::vector<void *> v;
	for (size_t i = 0; i < kSmall; i++)
		v.push_back(aligned(RRP_PAYLOAD_SMALL));
	return v;
}

TEST(PayloadPool, ServesEachSlotOnceThenFallsBackToGlibc)
{
	const Arena &a = arena();
	ASSERT_EQ(kSmall * RRP_PAYLOAD_SMALL + kLarge * RRP_PAYLOAD_LARGE, a.len);
	uint64_t s0, f0, s1, f1;
	rrp_payload_stats(&s0, &f0);

	auto v = take_all_small();
	std::set<uintptr_t> seen;
	for (void *p : v) {
		ASSERT_TRUE(a.has(p));
		EXPECT_EQ(0u, (uintptr_t)p % RRP_PAYLOAD_ALIGN);
		EXPECT_EQ(0u, ((uint8_t *)p - a.base) % RRP_PAYLOAD_SMALL);
		seen.insert((uintptr_t)p);
	}
	EXPECT_EQ(kSmall, seen.size());
	// Small class empty: a small request moves up to the large class.
	void *l1 = aligned(8192), *l2 = aligned(8192), *g = aligned(8192);
	EXPECT_TRUE(a.has(l1));
	EXPECT_TRUE(a.has(l2));
	EXPECT_GE((uint8_t *)l1, a.base + kSmall * RRP_PAYLOAD_SMALL);
	EXPECT_FALSE(a.has(g)) << "arena exhausted: glibc must serve it";
	rrp_payload_stats(&s1, &f1);
	EXPECT_EQ(s0 + kSmall + 2, s1);
	EXPECT_EQ(f0 + 1, f1);

	for (void *p : v)
		free(p);
	free(l1);
	free(l2);
	free(g);
	// Every slot is back.
	auto again = take_all_small();
	for (void *p : again)
		EXPECT_TRUE(a.has(p));
	for (void *p : again)
		free(p);
}

TEST(PayloadPool, OnlyAlignedPageSizedRequestsUseTheArena)
{
	const Arena &a = arena();
	void *p = nullptr;
	rrp_payload_expect(RRP_PAYLOAD_LARGE + 1, 3, true);
	ASSERT_EQ(0, posix_memalign(&p, 64, RRP_PAYLOAD_SMALL));
	EXPECT_FALSE(a.has(p));
	free(p);
	ASSERT_EQ(0, posix_memalign(&p, RRP_PAYLOAD_ALIGN, RRP_PAYLOAD_MIN - 1));
	EXPECT_FALSE(a.has(p));
	free(p);
	ASSERT_EQ(0, posix_memalign(&p, RRP_PAYLOAD_ALIGN, RRP_PAYLOAD_LARGE + 1));
	EXPECT_FALSE(a.has(p)) << "larger than every class";
	free(p);
	EXPECT_EQ(EINVAL, posix_memalign(&p, 3, 64));
	rrp_payload_expect(0, 0, false);
	void *m = malloc(RRP_PAYLOAD_SMALL);
	EXPECT_FALSE(a.has(m)) << "no READ announced";
	free(m);
}

// Issue #32: the engine's 256 KiB sink slabs (posix_memalign(4096)) each
// took a 1 MiB slot for good, and every later READ bounced. Unannounced, no
// aligned allocation takes a slot; announced, exactly as many as announced,
// of the kind announced, on the announcing thread only.
TEST(PayloadPool, UnannouncedAlignedAllocationsNeverTakeASlot)
{
	const Arena &a = arena();
	uint64_t s0, f0, s1, f1;
	std::vector<void *> held;
	held.reserve(256); // its own growth must not be the malloc announced below
	rrp_payload_stats(&s0, &f0);
	for (int i = 0; i < int(kSmall + kLarge) * 4; i++)
		for (size_t n : {size_t(256 * 1024), size_t(RRP_PAYLOAD_SMALL), size_t(8192)})
			held.push_back(unannounced(n));
	for (void *p : held)
		EXPECT_FALSE(a.has(p));
	rrp_payload_stats(&s1, &f1);
	EXPECT_EQ(s0, s1) << "an unannounced posix_memalign took a slot";
	EXPECT_EQ(f0, f1) << "nor did it look for one";

	// A malloc'd READ announced is not a posix_memalign'd one, and back.
	rrp_payload_expect(256 * 1024, 1, false);
	held.push_back(unannounced(256 * 1024));
	EXPECT_FALSE(a.has(held.back()));
	rrp_payload_expect(256 * 1024, 1, true);
	held.push_back(malloc(256 * 1024));
	EXPECT_FALSE(a.has(held.back()));
	std::thread([&] { held.push_back(unannounced(256 * 1024)); }).join();
	EXPECT_FALSE(a.has(held.back())) << "another thread's announcement";

	// Two READs of a COMPOUND: two slots, then none.
	rrp_payload_expect(256 * 1024, 2, true);
	void *r1 = unannounced(256 * 1024), *r2 = unannounced(8192), *r3 = unannounced(8192);
	EXPECT_TRUE(a.has(r1));
	EXPECT_TRUE(a.has(r2));
	EXPECT_FALSE(a.has(r3)) << "two announced, two served";
	// A READ that failed before its buffer: cancelled, nothing is left over.
	rrp_payload_expect(256 * 1024, 1, true);
	rrp_payload_expect(0, 0, false);
	void *after = unannounced(256 * 1024);
	EXPECT_FALSE(a.has(after));
	rrp_payload_stats(&s1, &f1);
	EXPECT_EQ(s0 + 2, s1);
	for (void *p : {r1, r2, r3, after})
		free(p);
	for (void *p : held)
		free(p);
}

TEST(PayloadPool, AnnouncedReadTakesTheNextFittingMallocOnce)
{
	const Arena &a = arena();
	rrp_payload_expect(16384, 1, false);
	void *small = malloc(100);	// below RRP_PAYLOAD_MIN: not the READ buffer
	void *big = malloc(32768);	// above the announced size
	void *hit = malloc(12288);
	void *after = malloc(12288);
	EXPECT_FALSE(a.has(small));
	EXPECT_FALSE(a.has(big));
	EXPECT_TRUE(a.has(hit));
	EXPECT_FALSE(a.has(after)) << "one announcement, one buffer";
	free(small);
	free(big);
	free(hit);
	free(after);

	// The announcement is per thread.
	rrp_payload_expect(16384, 1, false);
	void *other = nullptr;
	std::thread([&] { other = malloc(8192); }).join();
	EXPECT_FALSE(a.has(other));
	free(other);
	rrp_payload_expect(0, 0, false);
	void *cancelled = malloc(8192);
	EXPECT_FALSE(a.has(cancelled));
	free(cancelled);
}

TEST(PayloadPool, ReallocMovesAnArenaBufferToTheHeapAndFreesTheSlot)
{
	const Arena &a = arena();
	auto v = take_all_small();
	void *p = v.back();
	v.pop_back();
	memset(p, 0x5a, 4096);
	void *q = realloc(p, 8192);
	ASSERT_NE(nullptr, q);
	EXPECT_FALSE(a.has(q));
	for (int i = 0; i < 4096; i++)
		ASSERT_EQ(0x5a, static_cast<uint8_t *>(q)[i]);
	void *back = aligned(RRP_PAYLOAD_SMALL);
	EXPECT_EQ(p, back) << "the freed slot is the only small one left";
	free(q);
	free(back);
	for (void *x : v)
		free(x);
}

// Threads take and free concurrently (takers on several threads, frees also
// from a thread other than the taker, as ganesha does): a slot handed out
// twice would show as another owner's stamp in the buffer.
TEST(PayloadPool, ConcurrentTakeAndFreeNeverShareASlot)
{
	const Arena &a = arena();
	constexpr int kThreads = 4, kRounds = 20000;
	std::atomic<int> shared{0}, in_arena{0};
	std::atomic<void *> handoff[kThreads];
	for (auto &h : handoff)
		h = nullptr;
	std::vector<std::thread> t;
	for (int id = 0; id < kThreads; id++)
		t.emplace_back([&, id] {
			for (int r = 0; r < kRounds; r++) {
				uint64_t stamp = (uint64_t)id << 32 | (uint32_t)r;
				auto *p = static_cast<uint64_t *>(aligned(r % 3 ? 8192 : RRP_PAYLOAD_SMALL));
				if (a.has(p))
					in_arena++;
				p[0] = stamp;
				p[1023] = ~stamp;
				if (r % 7 == 0)
					std::this_thread::yield();
				if (p[0] != stamp || p[1023] != ~stamp)
					shared++;
				// Every other buffer is freed by the next thread.
				if (r % 2) {
					free(p);
				} else {
					void *old = handoff[(id + 1) % kThreads].exchange(p);
					free(old);
				}
			}
		});
	for (auto &th : t)
		th.join();
	for (auto &h : handoff)
		free(h.exchange(nullptr));
	EXPECT_EQ(0, shared.load());
	EXPECT_GT(in_arena.load(), kThreads * kRounds / 2) << "the arena served most of them";
	// Nothing leaked: every slot can be taken again.
	auto v = take_all_small();
	void *l1 = aligned(RRP_PAYLOAD_LARGE), *l2 = aligned(RRP_PAYLOAD_LARGE);
	for (void *p : v)
		EXPECT_TRUE(a.has(p));
	EXPECT_TRUE(a.has(l1));
	EXPECT_TRUE(a.has(l2));
	for (void *p : v)
		free(p);
	free(l1);
	free(l2);
}

// WRITE data lent in place: a stand-in decoder position decides when a
// malloc is xdr_bytes' for a chunk's data.
struct FakeDecoder {
	const void *at = nullptr;
	static bool is_at(void *arg, const void *addr)
	{
		return static_cast<FakeDecoder *>(arg)->at == addr;
	}
};

// The compiler may assume malloc never returns a static object's address and
// fold such a comparison: compare addresses it cannot see through.
uintptr_t addr(const void *p)
{
	uintptr_t v = reinterpret_cast<uintptr_t>(p);
	asm volatile("" : "+r"(v));
	return v;
}

alignas(4096) uint8_t chunk_a[8192];
alignas(4096) uint8_t chunk_b[12288];

TEST(PayloadLend, MallocAtTheChunkGetsTheChunkAndFreeTakesItBack)
{
	struct iovec ch[2] = {{chunk_a, 5000}, {chunk_b, 12288}};
	FakeDecoder d;
	uint64_t lent0 = rrp_payload_lent_bytes();
	rrp_payload_lend(ch, 2, FakeDecoder::is_at, &d);

	void *early = malloc(5000); // same size, decoder elsewhere: not lent
	EXPECT_NE(addr(early), addr(chunk_a));
	d.at = chunk_b;
	void *wrong = malloc(5000); // the decoder is at b: a is not next
	EXPECT_NE(addr(wrong), addr(chunk_a));
	d.at = chunk_a;
	void *other_size = malloc(4999);
	EXPECT_NE(addr(other_size), addr(chunk_a));
	void *a = malloc(5000);
	EXPECT_EQ(addr(a), addr(chunk_a));
	void *again = malloc(5000); // each chunk once
	EXPECT_NE(addr(again), addr(chunk_a));
	d.at = chunk_b;
	void *b = malloc(12288);
	EXPECT_EQ(addr(b), addr(chunk_b));
	rrp_payload_lend(nullptr, 0, nullptr, nullptr);
	EXPECT_EQ(lent0 + 5000 + 12288, rrp_payload_lent_bytes());

	// free() of a lent address must not reach glibc (a static array would
	// abort it), and the chunk's bytes stay the engine's.
	chunk_a[0] = 0x42;
	free(a);
	EXPECT_EQ(0x42, chunk_a[0]);
	// realloc moves lent data out to the heap.
	memset(chunk_b, 0x17, sizeof(chunk_b));
	void *moved = realloc(b, 16384);
	ASSERT_NE(nullptr, moved);
	EXPECT_NE(addr(moved), addr(chunk_b));
	for (size_t i = 0; i < sizeof(chunk_b); i++)
		ASSERT_EQ(0x17, static_cast<uint8_t *>(moved)[i]);
	free(moved);
	free(early);
	free(wrong);
	free(other_size);
	free(again);
}

TEST(PayloadLend, EndedLendingLendsNothing)
{
	struct iovec ch[1] = {{chunk_a, 6000}};
	FakeDecoder d;
	d.at = chunk_a;
	rrp_payload_lend(ch, 1, FakeDecoder::is_at, &d);
	rrp_payload_lend(nullptr, 0, nullptr, nullptr);
	void *p = malloc(6000);
	EXPECT_NE(addr(p), addr(chunk_a));
	free(p);
	// Another thread never sees this thread's Call.
	rrp_payload_lend(ch, 1, FakeDecoder::is_at, &d);
	void *q = nullptr;
	std::thread([&] { q = malloc(6000); }).join();
	EXPECT_NE(addr(q), addr(chunk_a));
	free(q);
	void *mine = malloc(6000);
	EXPECT_EQ(addr(mine), addr(chunk_a));
	rrp_payload_lend(nullptr, 0, nullptr, nullptr);
	free(mine);
}

// WRITE chunks of many Calls in flight at once, in big-pool-like buffers
// (page aligned, a megabyte and a page apart): each is lent, none collides
// with another still held, and free() takes every one back. The addresses
// are tokens here - lending never touches the memory - so they lie in an
// inaccessible reservation.
TEST(PayloadLend, ManyCallsInFlightAreAllLent)
{
	const size_t stride = (1u << 20) + 4096, n = 64, len = 4096;
	void *base = mmap(nullptr, stride * n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			  -1, 0);
	ASSERT_NE(base, MAP_FAILED);
	auto at = [&](size_t i) { return static_cast<uint8_t *>(base) + i * stride; };
	std::vector<void *> got(n);
	FakeDecoder d;
	for (size_t i = 0; i < n; i++) {
		struct iovec ch[1] = {{at(i), len}};
		d.at = at(i);
		rrp_payload_lend(ch, 1, FakeDecoder::is_at, &d);
		got[i] = malloc(len);
		rrp_payload_lend(nullptr, 0, nullptr, nullptr);
	}
	size_t lent = 0;
	for (size_t i = 0; i < n; i++)
		lent += addr(got[i]) == addr(at(i));
	EXPECT_EQ(lent, n) << "lendings in flight together collided";
	for (size_t i = 0; i < n; i++)
		free(got[i]); // a lent one must not reach glibc (PROT_NONE would fault)
	// All taken back: the same addresses lend again.
	struct iovec ch[1] = {{at(0), len}};
	d.at = at(0);
	rrp_payload_lend(ch, 1, FakeDecoder::is_at, &d);
	void *again = malloc(len);
	rrp_payload_lend(nullptr, 0, nullptr, nullptr);
	EXPECT_EQ(addr(again), addr(at(0)));
	free(again);
	munmap(base, stride * n);
}

} // namespace
