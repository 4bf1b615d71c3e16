/* SPDX-License-Identifier: MIT */
/*
 * ulb_xdr.h - a read-only XDR cursor over an iovec array (RFC 4506).
 *
 * Items may straddle iovec boundaries (zero-copy payloads passed by
 * reference sit in their own iovec). Every read is bounds-checked against
 * the bytes that remain; a failed read latches x->err and every later read
 * fails too, so callers may check once at the end of a structure.
 */
#ifndef ULB_ULB_XDR_H
#define ULB_ULB_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ulb_xdr {
	const struct iovec *iov;
	int iovcnt;
	int idx;      /* current iovec */
	size_t off;   /* offset inside iov[idx] */
	uint64_t pos; /* offset in the whole stream */
	uint64_t len; /* total stream length */
	bool err;
};

static inline uint64_t ulb_xdr_round4(uint64_t n)
{
	return (n + 3u) & ~(uint64_t)3u;
}

static inline bool ulb_xdr_fail(struct ulb_xdr *x)
{
	x->err = true;
	return false;
}

void ulb_xdr_init(struct ulb_xdr *x, const struct iovec *iov, int iovcnt);
static inline uint64_t ulb_xdr_remaining(const struct ulb_xdr *x)
{
	return x->err ? 0 : x->len - x->pos;
}
bool ulb_xdr_skip_slow(struct ulb_xdr *x, uint64_t n);
bool ulb_xdr_u32_slow(struct ulb_xdr *x, uint32_t *v);

/* Bytes left in the current iovec (0 when latched in error or at the end). */
static inline size_t ulb_xdr_here(const struct ulb_xdr *x)
{
	if (x->err || x->idx >= x->iovcnt)
		return 0;
	return x->iov[x->idx].iov_len - x->off;
}

/* Step inside the current iovec, @n <= ulb_xdr_here(x). */
static inline void ulb_xdr_step(struct ulb_xdr *x, size_t n)
{
	x->off += n;
	x->pos += n;
	if (x->off == x->iov[x->idx].iov_len) {
		x->idx++;
		x->off = 0;
	}
}

/*
 * The common case - the item lies inside the current iovec - is inline: the
 * scans read a few dozen words per Call, and a call plus a 4-byte memcpy per
 * word cost more than the rest of the walk.
 */
static inline bool ulb_xdr_skip(struct ulb_xdr *x, uint64_t n)
{
	if (n == 0)
		return !x->err;
	if (n > ulb_xdr_here(x))
		return ulb_xdr_skip_slow(x, n);
	ulb_xdr_step(x, (size_t)n);
	return true;
}

static inline bool ulb_xdr_u32(struct ulb_xdr *x, uint32_t *v)
{
	const uint8_t *b;

	if (ulb_xdr_here(x) < 4)
		return ulb_xdr_u32_slow(x, v);
	b = (const uint8_t *)x->iov[x->idx].iov_base + x->off;
	if (v)
		*v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	ulb_xdr_step(x, 4);
	return true;
}

bool ulb_xdr_u64(struct ulb_xdr *x, uint64_t *v);
bool ulb_xdr_bytes(struct ulb_xdr *x, void *dst, size_t n);
/* A bool must be 0 or 1 (RFC 4506 section 4.4). */
bool ulb_xdr_bool(struct ulb_xdr *x, bool *v);
/* Variable-length opaque/string: length <= max, then the bytes and their pad.
 * *lenp (may be NULL) gets the length, *datap (may be NULL) the stream offset
 * of the first data byte. */
bool ulb_xdr_opaque(struct ulb_xdr *x, uint32_t max, uint32_t *lenp, uint64_t *datap);
/* Counted array header: count <= max and count * min_elem_bytes fits. */
bool ulb_xdr_count(struct ulb_xdr *x, uint32_t max, uint32_t min_elem_bytes, uint32_t *count);

#ifdef __cplusplus
}
#endif
#endif
