/* SPDX-License-Identifier: MIT */
/*
 * rr_xdr.h - big-endian XDR for the header codec: a bounded cursor for
 * decoding (every get checks the remaining space; callers test the result),
 * and plain loads/stores for code that checked a whole run's size first.
 */
#ifndef RPCRDMA_RR_XDR_H
#define RPCRDMA_RR_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct rr_xdr {
	uint8_t *p;		/* next byte */
	uint8_t *end;		/* one past the last byte */
};

static inline void rr_xdr_init(struct rr_xdr *x, const void *buf, size_t len)
{
	/* Decoding never writes through p; the cast keeps one cursor type. */
	x->p = (uint8_t *)buf;
	x->end = x->p + len;
}

static inline size_t rr_xdr_left(const struct rr_xdr *x)
{
	return (size_t)(x->end - x->p);
}

/* Unchecked loads, for a decoder that checked a whole array's size first. */
static inline uint32_t rr_xdr_load32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint64_t rr_xdr_load64(const uint8_t *p)
{
	return (uint64_t)rr_xdr_load32(p) << 32 | rr_xdr_load32(p + 4);
}

/*
 * Unchecked stores for an encoder that has already checked the whole
 * header's size against the buffer: one store per word, no test.
 */
static inline uint8_t *rr_xdr_store32(uint8_t *p, uint32_t v)
{
	/* One swap and one store: written byte by byte, GCC kept four stores
	 * (it cannot merge them past the loads of the chunk list). */
#if !defined(__BYTE_ORDER__)
#error "rr_xdr_store32 needs the compiler's __BYTE_ORDER__ (GCC, clang)"
#elif __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	memcpy(p, &v, 4);
	return p + 4;
}

static inline uint8_t *rr_xdr_store64(uint8_t *p, uint64_t v)
{
	return rr_xdr_store32(rr_xdr_store32(p, (uint32_t)(v >> 32)), (uint32_t)v);
}

static inline bool rr_xdr_get32(struct rr_xdr *x, uint32_t *v)
{
	if (rr_xdr_left(x) < 4)
		return false;
	*v = rr_xdr_load32(x->p);
	x->p += 4;
	return true;
}

static inline uint64_t rr_xdr_roundup(uint64_t n)
{
	return (n + 3) & ~(uint64_t)3;
}

#endif
