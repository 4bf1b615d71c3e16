// SPDX-License-Identifier: MIT
/*
 * rrp_payload.c - READ payload buffers from registered memory, so a READ's
 * data goes from the FSAL's buffer to the client's Write chunk with no copy
 * and no registration per I/O (DESIGN.md "Flow control and memory").
 *
 * ganesha 4.3 allocates NFSv4 READ buffers with posix_memalign(4096, n)
 * (gsh_malloc_aligned) and frees them with free() once the reply no longer
 * needs them (the READ uio release). This library interposes those two calls
 * (and realloc, for safety; rrp_exports.map must list every one of them):
 * 4096-aligned requests that fit a size class are served from one arena
 * registered once with the transport; everything else
 * goes to glibc untouched. The arena is never unmapped while the process
 * lives, so a registration can never outlive its pages.
 *
 * NFSv3 READ buffers come from plain malloc(RNDUP(count)) (nfs3_read.c), a
 * call no size or alignment tells apart from any other. So the plugin says
 * when one is coming: rrp_payload_expect(max) on the worker thread that is
 * about to run an NFSv3 READ with a Write chunk makes that thread's next
 * malloc of RRP_PAYLOAD_MIN..max bytes come from the arena, once. A wrong
 * guess costs nothing: the slot goes back on free() like any other.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "plugin/rrp_payload.h"

#define EXPORTED __attribute__((visibility("default")))

/* glibc's own entry points: no dlsym, which may itself allocate. */
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *p);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_malloc(size_t size);

struct size_class {
	size_t slot;
	uint32_t count;
	uint8_t *base;
	pthread_mutex_t lock;
	uint32_t nfree;
	uint32_t *free_idx;
};

static struct size_class classes[2];
static uint8_t *arena;
static size_t arena_len;
static _Atomic uint64_t served, fallbacks;
/* initial-exec: malloc must not reach __tls_get_addr, which may allocate. */
static __thread size_t expect_max __attribute__((tls_model("initial-exec")));

static bool in_arena(const void *p)
{
	const uint8_t *a = p;

	return arena && a >= arena && a < arena + arena_len;
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
	uint32_t *idx;
	uint8_t *mem;

	if (arena || total == 0)
		return -EINVAL;
	mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	idx = __libc_malloc((small_slots + large_slots) * sizeof(*idx));
	if (!idx) {
		munmap(mem, total);
		return -ENOMEM;
	}
	classes[0] = (struct size_class){.slot = small, .count = (uint32_t)small_slots, .base = mem,
					 .free_idx = idx};
	classes[1] = (struct size_class){.slot = large, .count = (uint32_t)large_slots,
					 .base = mem + small * small_slots,
					 .free_idx = idx + small_slots};
	for (int c = 0; c < 2; c++) {
		pthread_mutex_init(&classes[c].lock, NULL);
		for (uint32_t i = 0; i < classes[c].count; i++)
			classes[c].free_idx[i] = classes[c].count - 1 - i;
		classes[c].nfree = classes[c].count;
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

static void *class_get(size_t size)
{
	for (int i = 0; i < 2; i++) {
		struct size_class *c = &classes[i];
		void *p = NULL;

		if (size > c->slot)
			continue;
		pthread_mutex_lock(&c->lock);
		if (c->nfree)
			p = c->base + (size_t)c->free_idx[--c->nfree] * c->slot;
		pthread_mutex_unlock(&c->lock);
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
	pthread_mutex_lock(&c->lock);
	c->free_idx[c->nfree++] = (uint32_t)i;
	pthread_mutex_unlock(&c->lock);
}

EXPORTED int posix_memalign(void **memptr, size_t alignment, size_t size)
{
	void *p;

	if (alignment == RRP_PAYLOAD_ALIGN && size >= RRP_PAYLOAD_MIN) {
		p = arena_take(size);
		if (p) {
			*memptr = p;
			return 0;
		}
	}
	if (alignment < sizeof(void *) || (alignment & (alignment - 1)))
		return EINVAL;
	p = __libc_memalign(alignment, size);
	if (!p)
		return ENOMEM;
	*memptr = p;
	return 0;
}

void rrp_payload_expect(size_t max)
{
	expect_max = max;
}

EXPORTED void *malloc(size_t size)
{
	size_t max = expect_max;
	void *p;

	if (max && size >= RRP_PAYLOAD_MIN && size <= max) {
		expect_max = 0;
		p = arena_take(size);
		if (p)
			return p;
	}
	return __libc_malloc(size);
}

EXPORTED void free(void *p)
{
	if (in_arena(p)) {
		class_put(p);
		return;
	}
	__libc_free(p);
}

EXPORTED void *realloc(void *p, size_t size)
{
	struct size_class *c;
	void *n;

	if (!in_arena(p))
		return __libc_realloc(p, size);
	c = class_of(p);
	n = __libc_malloc(size);
	if (n) {
		memcpy(n, p, size < c->slot ? size : c->slot);
		class_put(p);
	}
	return n;
}
