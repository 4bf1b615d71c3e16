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
