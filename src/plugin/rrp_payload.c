// SPDX-License-Identifier: MIT
/*
 * rrp_payload.c - READ payload buffers from registered memory, so a READ's
 * data goes from the FSAL's buffer to the client's Write chunk with no copy
 * and no registration per I/O (docs/memory.md).
 *
 * ganesha allocates a READ's data buffer with malloc(n) or with
 * posix_memalign(4096, n), as its release does (the host adapter's
 * read_v3 / read_v4, rrp_host.h), and frees it with free() once the reply
 * no longer needs it (the READ uio release). This library interposes those
 * calls (and realloc, for safety; rrp_exports.map must list every one of
 * them).
 * Only READ buffers are served from one arena registered once with the
 * transport; everything else goes to glibc untouched. The arena is never
 * unmapped while the process lives, so a registration can never outlive
 * its pages.
 *
 * Neither size nor alignment tells a READ buffer apart: the engine's sink
 * slabs, rdma-core's queue buffers and anything else may ask for 4096-aligned
 * memory too, and a slot taken by them is never given back. So the plugin
 * says when READ buffers are coming: rrp_payload_expect(max, n, aligned) (or
 * rrp_announce_expect on the thread's rrp_payload_announcement(), the same
 * stores without a call, as the plugin does per Call) on
 * the worker thread about to run a Call whose READs have Write chunks makes
 * that thread's next n mallocs (or posix_memaligns) of RRP_PAYLOAD_MIN..max
 * bytes come from the arena, and the plugin cancels what is left when the
 * Call's processing returns. A wrong guess costs little: the slot goes back
 * on free() like any other.
 *
 * WRITE data goes the other way: it arrives by RDMA Read in a registered
 * buffer of the engine's, and a host without data-position calls (rrp_host.h)
 * decodes it with xdr_bytes, which
 * mallocs a buffer of the data's length and copies the bytes in. While the
 * plugin decodes a Call it lends that buffer (rrp_payload_lend): a malloc of
 * exactly a chunk's length, made while the decoder stands exactly at that
 * chunk's data, returns the data's own address, the decoder's getbytes sees
 * source and destination agree and copies nothing, and free() recognises the
 * address as lent and gives nothing to glibc. The Call, and with it the
 * engine's buffer, is held until ganesha's free_cb, after it frees its
 * arguments.
 */
#include <errno.h>
#include <stdatomic.h>
#include <sys/uio.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "plugin/rrp_payload.h"
#include "plugin/rrp_payload_test_hooks.h"

#ifdef RRP_PAYLOAD_UNDER_TEST
/*
 * The structures without the interposer (tests/plugin, sanitizer builds
 * too): the entry points are rrp_payload_malloc ..., and underneath is the
 * process's allocator, which a sanitizer runtime owns and tracks.
 */
#include <malloc.h>
#include <stdlib.h>
#define ENTRY(name) rrp_payload_##name
#define EXPORTED
#define libc_malloc malloc
#define libc_free free
#define libc_realloc realloc
#define libc_memalign memalign
#else
#define ENTRY(name) name
#define EXPORTED __attribute__((visibility("default")))

/* glibc's own entry points: no dlsym, which may itself allocate. */
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *p);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_malloc(size_t size);
#define libc_malloc __libc_malloc
#define libc_free __libc_free
#define libc_realloc __libc_realloc
#define libc_memalign __libc_memalign
#endif

/*
 * Free slots of a class: a lock-free stack of slot numbers (any worker takes,
 * any thread frees). The head packs a change count above slot+1 (0 = empty),
 * so a pop that raced a pop and a push of the same slot fails its CAS (ABA).
 * Hand-written: inside malloc/free no mutex or RCU section may be taken and
 * a slot handed to ganesha has no room for a node link, which liburcu's
 * stacks need (docs/threading.md).
 */
struct size_class {
	size_t slot;
	uint32_t count;
	uint8_t *base;
	_Atomic uint64_t head;
	_Atomic uint32_t *next;	/* slot+1 below each free slot, 0 = bottom */
};

static struct size_class classes[2];
static uint8_t *arena;
static size_t arena_len;
static _Atomic uint64_t served, fallbacks;

/*
 * What this thread announced (struct rrp_announce, rrp_payload.h), in
 * particular the many small mallocs ganesha makes while an NFSv4 COMPOUND
 * with a READ runs cost one compare with its floor.
 * initial-exec: malloc must not reach __tls_get_addr, which may allocate;
 * one block, so one GOT load finds all of it.
 */
static __thread struct rrp_announce ann __attribute__((tls_model("initial-exec"))) = {
	.floor = SIZE_MAX, .lend_floor = SIZE_MAX};

static void announce_floor(void)
{
	rrp_announce_floor(&ann);
}

static void lend_next_floor(void)
{
	ann.lend_floor = ann.next < ann.n ? ann.chunk[ann.next].iov_len : SIZE_MAX;
	announce_floor();
}

/*
 * Addresses lent and not yet freed, in a set-associative table: an address
 * may sit in any of the LENT_WAYS slots of its set, so lendings in flight
 * together (one per Call a worker is decoding, a few per worker at most)
 * do not collide; a full set means "do not lend" (the copy happens as
 * before), never a wait. Chunk buffers are page aligned: the set comes from
 * the page number. Hand-written, not liburcu's rculfhash: every free() in
 * the process asks it, and an allocator interposer may not allocate, nor
 * wait for grace periods (docs/threading.md).
 */
#define LENT_SETS 256
#define LENT_WAYS 4
_Static_assert(LENT_SETS == 1 << 8, "lent_set takes the hash's top 8 bits");
static _Atomic uintptr_t lent_addr[LENT_SETS * LENT_WAYS];
static size_t lent_len[LENT_SETS * LENT_WAYS];
static atomic_uint lent_count;
static _Atomic uint64_t lent_bytes;

static unsigned int lent_set(const void *p)
{
	uint64_t page = (uintptr_t)p >> 12;

	/* Fibonacci hashing: the top bits of page x 2^64/phi spread any stride. */
	return (unsigned int)((page * 0x9E3779B97F4A7C15ull) >> 56) * LENT_WAYS;
}

/* Only page-aligned buffers are lent (the engine's chunk buffers are). malloc
 * never returns a page-aligned pointer (even its mmap'd chunks start past a
 * header); only aligned allocations can, and they are few: one test clears
 * almost every free() of the lookup. */
#define LENT_ALIGN 4096u

static bool lent_add(void *p, size_t len)
{
	unsigned int set = lent_set(p);

	if ((uintptr_t)p & (LENT_ALIGN - 1))
		return false;

	for (unsigned int i = set; i < set + LENT_WAYS; i++) {
		uintptr_t none = 0;

		if (atomic_compare_exchange_strong(&lent_addr[i], &none, (uintptr_t)p)) {
			lent_len[i] = len;
			atomic_fetch_add(&lent_count, 1);
			atomic_fetch_add_explicit(&lent_bytes, len, memory_order_relaxed);
			return true;
		}
	}
	return false;
}

/* Forget @p if it is lent; its length in *len. */
static __attribute__((noinline)) bool lent_forget(void *p, size_t *len)
{
	unsigned int set = lent_set(p);

	for (unsigned int i = set; i < set + LENT_WAYS; i++) {
		uintptr_t mine = (uintptr_t)p;

		if (atomic_load_explicit(&lent_addr[i], memory_order_acquire) != mine)
			continue;
		*len = lent_len[i];
		if (!atomic_compare_exchange_strong(&lent_addr[i], &mine, 0))
			return false;
		atomic_fetch_sub(&lent_count, 1);
		return true;
	}
	return false;
}

/* Could @p be lent? Every free() in the process asks: one load while
 * nothing is lent. */
static inline bool lent_maybe(const void *p)
{
	return atomic_load_explicit(&lent_count, memory_order_relaxed) &&
	       !((uintptr_t)p & (LENT_ALIGN - 1)) && p;
}

static inline bool lent_take_back(void *p, size_t *len)
{
	return lent_maybe(p) && lent_forget(p, len);
}

static void free_unlent(void *p);

/* free() of what may be lent, apart so that free's common path needs no
 * stack frame. */
static __attribute__((noinline)) void free_maybe_lent(void *p)
{
	size_t len;

	if (lent_forget(p, &len))
		return; /* the engine's buffer: the Call's release frees it */
	free_unlent(p);
}

void rrp_payload_lend(const struct iovec *chunk, int n, bool (*at)(void *arg, const void *addr),
		      void *arg)
{
	ann.chunk = n > 0 ? chunk : NULL;
	ann.n = n > 0 ? n : 0;
	ann.next = 0;
	ann.at = at;
	ann.arg = arg;
	lend_next_floor();
}

uint64_t rrp_payload_lent_bytes(void)
{
	return lent_bytes;
}

/* The next chunk's own address if this malloc is xdr_bytes' for its data. */
static void *lend_for(size_t size)
{
	const struct iovec *c;

	if (ann.next >= ann.n)
		return NULL;
	c = &ann.chunk[ann.next];
	if (size != c->iov_len || !ann.at(ann.arg, c->iov_base))
		return NULL;
	ann.next++;
	lend_next_floor();
	return lent_add(c->iov_base, size) ? c->iov_base : NULL;
}

static bool in_arena(const void *p)
{
	/* One compare for most pointers (below the arena wraps to a huge
	 * offset); arena_len is set before arena is published, so the second
	 * test is for a free() that sees the one and not yet the other. */
	return (uintptr_t)p - (uintptr_t)arena < arena_len && arena;
}

static struct size_class *class_of(const void *p)
{
	for (int i = 0; i < 2; i++) {
		struct size_class *c = &classes[i];

		if ((const uint8_t *)p >= c->base && (const uint8_t *)p < c->base + c->slot * c->count)
			return c;
	}
	return NULL;
}

int rrp_payload_init(size_t small_slots, size_t large_slots, void **base, size_t *len)
{
	size_t small = RRP_PAYLOAD_SMALL, large = RRP_PAYLOAD_LARGE;
	size_t total = small * small_slots + large * large_slots;
	_Atomic uint32_t *idx;
	uint8_t *mem;

	if (arena || total == 0)
		return -EINVAL;
	mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	idx = libc_malloc((small_slots + large_slots) * sizeof(*idx));
	if (!idx) {
		munmap(mem, total);
		return -ENOMEM;
	}
	classes[0] = (struct size_class){.slot = small, .count = (uint32_t)small_slots, .base = mem,
					 .next = idx};
	classes[1] = (struct size_class){.slot = large, .count = (uint32_t)large_slots,
					 .base = mem + small * small_slots,
					 .next = idx + small_slots};
	for (int c = 0; c < 2; c++) {
		/* Slot 0 on top, each slot above the next one up. */
		for (uint32_t i = 0; i < classes[c].count; i++)
			atomic_init(&classes[c].next[i], i + 1 < classes[c].count ? i + 2 : 0);
		atomic_init(&classes[c].head, classes[c].count ? 1 : 0);
	}
	arena_len = total;
	__atomic_store_n(&arena, mem, __ATOMIC_RELEASE);
	*base = mem;
	*len = total;
	return 0;
}

void rrp_payload_stats(uint64_t *served_out, uint64_t *fallbacks_out)
{
	*served_out = served;
	*fallbacks_out = fallbacks;
}

#define HEAD_SLOT(h) ((uint32_t)(h))
#define HEAD_NEXT(h, slot1) ((((h) >> 32) + 1) << 32 | (slot1))

static void *class_pop(struct size_class *c)
{
	uint64_t h = atomic_load_explicit(&c->head, memory_order_acquire);

	while (HEAD_SLOT(h)) {
		uint32_t s = HEAD_SLOT(h) - 1;
		uint32_t below = atomic_load_explicit(&c->next[s], memory_order_relaxed);

		if (atomic_compare_exchange_weak_explicit(&c->head, &h, HEAD_NEXT(h, below),
							  memory_order_acquire,
							  memory_order_acquire))
			return c->base + (size_t)s * c->slot;
	}
	return NULL;
}

static void class_push(struct size_class *c, uint32_t s)
{
	uint64_t h = atomic_load_explicit(&c->head, memory_order_relaxed);

	do
		atomic_store_explicit(&c->next[s], HEAD_SLOT(h), memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&c->head, &h, HEAD_NEXT(h, s + 1),
						      memory_order_release, memory_order_relaxed));
}

static void *class_get(size_t size)
{
	for (int i = 0; i < 2; i++) {
		struct size_class *c = &classes[i];
		void *p;

		if (size > c->slot)
			continue;
		p = class_pop(c);
		if (p)
			return p;
	}
	return NULL;
}

/* A payload buffer from the arena, counted; NULL (and a fallback counted once
 * the arena exists) when none fits: the caller goes to glibc. */
static void *arena_take(size_t size)
{
	void *p;

	if (!__atomic_load_n(&arena, __ATOMIC_ACQUIRE))
		return NULL;
	p = class_get(size);
	if (p)
		served++;
	else
		fallbacks++;
	return p;
}

static void class_put(void *p)
{
	struct size_class *c = class_of(p);
	size_t i;

	if (!c)
		return;
	i = (size_t)((uint8_t *)p - c->base) / c->slot;
	class_push(c, (uint32_t)i);
}

/* An announced READ buffer from the arena, or NULL: @size is not one
 * (the announcement stands) or the arena has none left (it is used up). */
static void *expect_take(size_t size)
{
	if (size < RRP_PAYLOAD_MIN || size > ann.expect_max)
		return NULL;
	/* The floor changes only with the last one */
	if (--ann.expect_n == 0)
		announce_floor();
	return arena_take(size);
}

EXPORTED int ENTRY(posix_memalign)(void **memptr, size_t alignment, size_t size)
{
	void *p;

	/* Unannounced, no size takes a slot: it would never come back. */
	if (__builtin_expect(ann.expect_n != 0, 0) && ann.expect_aligned &&
	    alignment == RRP_PAYLOAD_ALIGN) {
		p = expect_take(size);
		if (p) {
			*memptr = p;
			return 0;
		}
	}
	if (alignment < sizeof(void *) || (alignment & (alignment - 1)))
		return EINVAL;
	p = libc_memalign(alignment, size);
	if (!p)
		return ENOMEM;
	*memptr = p;
	return 0;
}

const unsigned int *rrp_payload_expect(size_t max, unsigned int n, bool aligned)
{
	rrp_announce_expect(&ann, max, n, aligned);
	return &ann.expect_n;
}

struct rrp_announce *rrp_payload_announcement(void)
{
	return &ann;
}

static __attribute__((noinline)) void *malloc_announced(size_t size)
{
	void *p;

	if (ann.n) {
		p = lend_for(size);
		if (p)
			return p;
	}
	if (ann.expect_n && !ann.expect_aligned) {
		p = expect_take(size);
		if (p)
			return p;
	}
	return libc_malloc(size);
}

/* Every malloc() in the process passes here: the common case is one compare. */
EXPORTED void *ENTRY(malloc)(size_t size)
{
	if (__builtin_expect(size >= ann.floor, 0))
		return malloc_announced(size);
	return libc_malloc(size);
}

static inline void free_unlent(void *p)
{
	if (in_arena(p)) {
		class_put(p);
		return;
	}
	libc_free(p);
}

_Static_assert(RRP_PAYLOAD_SMALL % LENT_ALIGN == 0 && RRP_PAYLOAD_LARGE % LENT_ALIGN == 0,
	       "arena slots (from a page-aligned mmap) are page-aligned too");

/* Every free() in the process passes here. Lent buffers and arena slots are
 * all page-aligned and malloc's pointers never are: one test sends almost
 * every free() straight to libc. */
EXPORTED void ENTRY(free)(void *p)
{
	if (__builtin_expect((uintptr_t)p & (LENT_ALIGN - 1), 1))
		libc_free(p);
	else if (lent_maybe(p))
		free_maybe_lent(p);
	else
		free_unlent(p);
}

EXPORTED void *ENTRY(realloc)(void *p, size_t size)
{
	struct size_class *c;
	size_t len;
	void *n;

	if (lent_take_back(p, &len)) {
		n = libc_malloc(size);
		if (n)
			memcpy(n, p, size < len ? size : len);
		else
			lent_add(p, len); /* p stays valid, and lent */
		return n;
	}
	if (!in_arena(p))
		return libc_realloc(p, size);
	c = class_of(p);
	n = libc_malloc(size);
	if (n) {
		memcpy(n, p, size < c->slot ? size : c->slot);
		class_put(p);
	}
	return n;
}
