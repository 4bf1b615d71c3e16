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

void ulb_xdr_init(struct ulb_xdr *x, const struct iovec *iov, int iovcnt);
static inline uint64_t ulb_xdr_remaining(const struct ulb_xdr *x)
{
	return x->err ? 0 : x->len - x->pos;
}
bool ulb_xdr_skip(struct ulb_xdr *x, uint64_t n);
bool ulb_xdr_u32(struct ulb_xdr *x, uint32_t *v);
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
static inline bool ulb_xdr_fail(struct ulb_xdr *x)
{
	x->err = true;
	return false;
}

#ifdef __cplusplus
}
#endif
#endif
