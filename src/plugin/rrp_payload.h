/* SPDX-License-Identifier: MIT */
/*
 * rrp_payload.h - registered READ payload buffers (rrp_payload.c).
 */
#ifndef RPCRDMA_RRP_PAYLOAD_H
#define RPCRDMA_RRP_PAYLOAD_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#define RRP_PAYLOAD_ALIGN 4096u			/* what ganesha's READ asks for */
#define RRP_PAYLOAD_MIN 4096u			/* smaller READs go inline anyway */
#define RRP_PAYLOAD_SMALL (64u * 1024)		/* size classes */
#define RRP_PAYLOAD_LARGE ((1u << 20) + 4096)	/* 1 MiB rsize, rounded */

/* Map the arena once; the caller registers [*base, *base + *len). */
int rrp_payload_init(size_t small_slots, size_t large_slots, void **base, size_t *len);
/* This thread's next @n READ buffers of RRP_PAYLOAD_MIN..@max bytes come
 * from the arena: mallocs, or posix_memalign(RRP_PAYLOAD_ALIGN) calls when
 * @aligned. Nothing unannounced ever takes a slot; @n 0 cancels. Returns
 * where this thread counts the buffers still to come: once it reads 0 there
 * is nothing left to cancel. */
const unsigned int *rrp_payload_expect(size_t max, unsigned int n, bool aligned);

/*
 * What a thread announced (rrp_payload.c keeps one per thread, where its
 * malloc and posix_memalign read it): READ buffers to come (expect_max,
 * expect_n, expect_aligned) and the Call's chunks being lent. @floor is the
 * smallest size either could apply to (SIZE_MAX while nothing is), so every
 * other malloc() in the process costs one compare.
 */
struct rrp_announce {
	size_t floor;
	size_t expect_max;
	unsigned int expect_n;	/* READ buffers still to come */
	bool expect_aligned;	/* by posix_memalign, not malloc */
	size_t lend_floor;	/* the next chunk's length, SIZE_MAX when none */
	const struct iovec *chunk;
	int n, next;
	bool (*at)(void *arg, const void *addr);
	void *arg;
};

/* The calling thread's announcement: the same address for its life. The
 * plugin announces READ buffers by rrp_announce_expect on it, a few stores
 * per Call, rather than a call into the preloaded library each way. */
struct rrp_announce *rrp_payload_announcement(void);

static inline void rrp_announce_floor(struct rrp_announce *a)
{
	size_t f = a->expect_n && !a->expect_aligned ? RRP_PAYLOAD_MIN : SIZE_MAX;

	a->floor = a->lend_floor < f ? a->lend_floor : f;
}

/* rrp_payload_expect(@max, @n, @aligned) on the calling thread's @a. */
static inline void rrp_announce_expect(struct rrp_announce *a, size_t max, unsigned int n,
				       bool aligned)
{
	a->expect_max = max;
	a->expect_n = max ? n : 0;
	a->expect_aligned = aligned;
	rrp_announce_floor(a);
}

/* While this thread decodes a Call: a malloc of exactly @chunk[i].iov_len
 * bytes made when @at(@arg, @chunk[i].iov_base) says the decoder stands at
 * that chunk's data returns that address (lent; free() takes it back, not
 * glibc), chunks in order, each once. @n 0 ends it. */
void rrp_payload_lend(const struct iovec *chunk, int n, bool (*at)(void *arg, const void *addr),
		      void *arg);

#ifdef RRP_PAYLOAD_UNDER_TEST
/* Built without the interposer (tests): the entry points by these names. */
void *rrp_payload_malloc(size_t size);
void rrp_payload_free(void *p);
int rrp_payload_posix_memalign(void **memptr, size_t alignment, size_t size);
void *rrp_payload_realloc(void *p, size_t size);
#endif

#endif
