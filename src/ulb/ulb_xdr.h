/* SPDX-License-Identifier: MIT */
/*
 * ulb_xdr.h - a read-only XDR cursor over an iovec array (RFC 4506).
 *
 * Items may straddle iovec boundaries (zero-copy payloads passed by
 * reference sit in their own iovec). Every read is bounds-checked against
 * the bytes that remain; a failed read latches x->err and every later read
 * fails too, so callers may check once at the end of a structure.
 *
 * The cursor is a window [p, end) on the current iovec: a read that fits in
 * it is one compare and one pointer step (inline); anything else - the next
 * iovec, the end of the stream, a latched error - takes the out-of-line
 * slow path. An error empties the window, so the fast path never runs
 * after one.
 */
#ifndef ULB_ULB_XDR_H
#define ULB_ULB_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The fast paths are a compare and a step: inlined wherever used, also in
 * the big per-operation switches where the compiler would rather call. */
#define ULB_XDR_INLINE static inline __attribute__((always_inline))

struct ulb_xdr {
	const uint8_t *p;   /* next byte, inside iov[idx] */
	const uint8_t *end; /* end of iov[idx]'s bytes (p == end: window empty) */
	uint64_t end_pos;   /* stream offset of end */
	const struct iovec *iov;
	int iovcnt;
	int idx;      /* current iovec */
	uint64_t len; /* total stream length */
	bool err;
};

static inline uint64_t ulb_xdr_round4(uint64_t n)
{
	return (n + 3u) & ~(uint64_t)3u;
}

/* Latch the error: the window empties, so every later read is refused. */
static inline bool ulb_xdr_fail(struct ulb_xdr *x)
{
	x->err = true;
	x->p = x->end;
	return false;
}

/* The window of an empty stream or iovec: never NULL, so that stepping 0
 * bytes is defined behaviour. */
extern const uint8_t ulb_xdr_empty[1];

/* Make iov[i] the window; its first byte is at stream offset @pos. */
static inline void ulb_xdr_window(struct ulb_xdr *x, int i, uint64_t pos)
{
	x->idx = i;
	x->p = x->iov[i].iov_len ? (const uint8_t *)x->iov[i].iov_base : ulb_xdr_empty;
	x->end = x->p + x->iov[i].iov_len;
	x->end_pos = pos + x->iov[i].iov_len;
}

/* The sum of the iovecs' lengths: the stream's length. */
static inline uint64_t ulb_xdr_iov_len(const struct iovec *iov, int iovcnt)
{
	uint64_t len = 0;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	return len;
}

/* A cursor at the start of @iov, whose lengths sum to @len (a caller that
 * has the sum already). */
static inline void ulb_xdr_init_len(struct ulb_xdr *x, const struct iovec *iov, int iovcnt,
				    uint64_t len)
{
	x->iov = iov;
	x->iovcnt = iovcnt > 0 ? iovcnt : 0;
	x->err = false;
	x->len = len;
	if (x->iovcnt > 0) {
		ulb_xdr_window(x, 0, 0);
	} else {
		x->idx = 0;
		x->p = x->end = ulb_xdr_empty;
		x->end_pos = 0;
	}
}

static inline void ulb_xdr_init(struct ulb_xdr *x, const struct iovec *iov, int iovcnt)
{
	ulb_xdr_init_len(x, iov, iovcnt, ulb_xdr_iov_len(iov, iovcnt));
}

/* Bytes left in the current iovec (0 when latched in error). */
ULB_XDR_INLINE size_t ulb_xdr_here(const struct ulb_xdr *x)
{
	return (size_t)(x->end - x->p);
}

/* Stream offset of the next byte. */
ULB_XDR_INLINE uint64_t ulb_xdr_pos(const struct ulb_xdr *x)
{
	return x->end_pos - ulb_xdr_here(x);
}

static inline uint64_t ulb_xdr_remaining(const struct ulb_xdr *x)
{
	return x->err ? 0 : x->len - ulb_xdr_pos(x);
}

/* The slow paths: move @n bytes forward across iovecs (copying them to @dst
 * unless NULL), or fail and latch when fewer remain. */
bool ulb_xdr_advance(struct ulb_xdr *x, uint8_t *dst, uint64_t n);
bool ulb_xdr_skip_slow(struct ulb_xdr *x, uint64_t n);
bool ulb_xdr_u32_slow(struct ulb_xdr *x, uint32_t *v);
const uint8_t *ulb_xdr_take_slow(struct ulb_xdr *x, size_t n, uint8_t *buf);

static inline uint32_t ulb_xdr_load32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

ULB_XDR_INLINE bool ulb_xdr_skip(struct ulb_xdr *x, uint64_t n)
{
	/* 1 <= n <= here in one compare; n == 0 reports a latched error */
	if (n - 1 < ulb_xdr_here(x)) {
		x->p += n;
		return true;
	}
	if (n == 0)
		return !x->err;
	return ulb_xdr_skip_slow(x, n);
}

/*
 * The next @n bytes (1..ULB_XDR_TAKE_MAX) in one piece, for a run of fixed
 * words read with ulb_xdr_load32(): in place when the window holds them,
 * else copied into @buf (ULB_XDR_TAKE_MAX bytes). NULL, latched, when fewer
 * than @n remain.
 */
#define ULB_XDR_TAKE_MAX 32u

ULB_XDR_INLINE const uint8_t *ulb_xdr_take(struct ulb_xdr *x, size_t n, uint8_t *buf)
{
	const uint8_t *b = x->p;

	if (n <= ulb_xdr_here(x) && n > 0) {
		x->p += n;
		return b;
	}
	return ulb_xdr_take_slow(x, n, buf);
}

ULB_XDR_INLINE bool ulb_xdr_u32(struct ulb_xdr *x, uint32_t *v)
{
	if (ulb_xdr_here(x) < 4)
		return ulb_xdr_u32_slow(x, v);
	if (v)
		*v = ulb_xdr_load32(x->p);
	x->p += 4;
	return true;
}

static inline bool ulb_xdr_bytes(struct ulb_xdr *x, void *dst, size_t n)
{
	if (n > ulb_xdr_here(x))
		return ulb_xdr_advance(x, (uint8_t *)dst, n);
	if (n) {
		memcpy(dst, x->p, n);
		x->p += n;
	}
	return !x->err;
}

/* A bool must be 0 or 1 (RFC 4506 section 4.4). */
ULB_XDR_INLINE bool ulb_xdr_bool(struct ulb_xdr *x, bool *v)
{
	uint32_t w;

	if (!ulb_xdr_u32(x, &w))
		return false;
	if (w > 1)
		return ulb_xdr_fail(x);
	if (v)
		*v = w;
	return true;
}

/* Variable-length opaque/string: length <= max, then the bytes and their pad.
 * *lenp (may be NULL) gets the length, *datap (may be NULL) the stream offset
 * of the first data byte. */
ULB_XDR_INLINE bool ulb_xdr_opaque(struct ulb_xdr *x, uint32_t max, uint32_t *lenp, uint64_t *datap)
{
	uint32_t len;

	if (!ulb_xdr_u32(x, &len))
		return false;
	if (len > max)
		return ulb_xdr_fail(x);
	if (datap)
		*datap = ulb_xdr_pos(x);
	if (lenp)
		*lenp = len;
	return ulb_xdr_skip(x, ulb_xdr_round4(len));
}

/* Counted array header: count <= max and count * min_elem_bytes fits. */
static inline bool ulb_xdr_count(struct ulb_xdr *x, uint32_t max, uint32_t min_elem_bytes,
				 uint32_t *count)
{
	uint32_t n;

	if (!ulb_xdr_u32(x, &n))
		return false;
	if (n > max || (uint64_t)n * (min_elem_bytes ? min_elem_bytes : 4u) > ulb_xdr_remaining(x))
		return ulb_xdr_fail(x);
	*count = n;
	return true;
}

#ifdef __cplusplus
}
#endif
#endif
