// SPDX-License-Identifier: MIT
/*
 * ulb_xdr.c - the cursor's slow paths: crossing iovecs, the end of the
 * stream, latched errors.
 */
#include <string.h>

#include "ulb/ulb_xdr.h"

const uint8_t ulb_xdr_empty[1];

bool ulb_xdr_advance(struct ulb_xdr *x, uint8_t *dst, uint64_t n)
{
	if (x->err || n > x->len - ulb_xdr_pos(x))
		return ulb_xdr_fail(x);
	for (;;) {
		size_t take = ulb_xdr_here(x) < n ? ulb_xdr_here(x) : (size_t)n;

		if (dst && take) {
			memcpy(dst, x->p, take);
			dst += take;
		}
		x->p += take;
		n -= take;
		if (n == 0)
			return true;
		/* len bounds n, so a next iovec exists while bytes are owed */
		if (x->idx + 1 >= x->iovcnt)
			return ulb_xdr_fail(x);
		ulb_xdr_window(x, x->idx + 1, x->end_pos);
	}
}

bool ulb_xdr_skip_slow(struct ulb_xdr *x, uint64_t n)
{
	uint64_t left;

	if (n == 0)
		return !x->err;
	left = x->err ? 0 : x->len - ulb_xdr_pos(x);

	if (x->err || n > left)
		return ulb_xdr_fail(x);
	if (n == left) {
		/* To the end (a trailing payload in its own iovec): an empty window
		 * at offset len, the iovecs between never visited */
		x->idx = x->iovcnt;
		x->p = x->end = ulb_xdr_empty;
		x->end_pos = x->len;
		return true;
	}
	return ulb_xdr_advance(x, NULL, n);
}

bool ulb_xdr_u32_slow(struct ulb_xdr *x, uint32_t *v)
{
	uint8_t b[4];

	if (!ulb_xdr_advance(x, b, 4))
		return false;
	if (v)
		*v = ulb_xdr_load32(b);
	return true;
}

bool ulb_xdr_count(struct ulb_xdr *x, uint32_t max, uint32_t min_elem_bytes, uint32_t *count)
{
	uint32_t n;

	if (!ulb_xdr_u32(x, &n))
		return false;
	if (n > max || (uint64_t)n * (min_elem_bytes ? min_elem_bytes : 4u) > ulb_xdr_remaining(x))
		return ulb_xdr_fail(x);
	*count = n;
	return true;
}
