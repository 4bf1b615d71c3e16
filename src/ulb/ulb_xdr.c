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
	/* across iovecs: len bounds n, so the windows run out no earlier */
	for (;;) {
		if (n <= ulb_xdr_here(x)) {
			x->p += n;
			return true;
		}
		n -= ulb_xdr_here(x);
		if (x->idx + 1 >= x->iovcnt)
			return ulb_xdr_fail(x);
		ulb_xdr_window(x, x->idx + 1, x->end_pos);
	}
}

/* An emptied window moves on to the next non-empty iovec: a read right
 * after an item that ended its iovec is then in place again. */
static void ulb_xdr_next_window(struct ulb_xdr *x)
{
	while (!x->err && ulb_xdr_here(x) == 0 && x->idx + 1 < x->iovcnt)
		ulb_xdr_window(x, x->idx + 1, x->end_pos);
}

const uint8_t *ulb_xdr_take_slow(struct ulb_xdr *x, size_t n, uint8_t *buf)
{
	const uint8_t *b;

	if (n == 0 || n > ULB_XDR_TAKE_MAX) {
		ulb_xdr_fail(x);
		return NULL;
	}
	ulb_xdr_next_window(x);
	if (n <= ulb_xdr_here(x)) {
		b = x->p;
		x->p += n;
		return b;
	}
	return ulb_xdr_advance(x, buf, n) ? buf : NULL;
}

bool ulb_xdr_u32_slow(struct ulb_xdr *x, uint32_t *v)
{
	uint8_t b[4];

	ulb_xdr_next_window(x);
	if (ulb_xdr_here(x) >= 4) {
		if (v)
			*v = ulb_xdr_load32(x->p);
		x->p += 4;
		return true;
	}

	if (!ulb_xdr_advance(x, b, 4))
		return false;
	if (v)
		*v = ulb_xdr_load32(b);
	return true;
}
