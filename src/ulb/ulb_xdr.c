// SPDX-License-Identifier: MIT
/*
 * ulb_xdr.c - bounds-checked XDR reads over an iovec array.
 */
#include <string.h>

#include "ulb/ulb_xdr.h"

void ulb_xdr_init(struct ulb_xdr *x, const struct iovec *iov, int iovcnt)
{
	int i;

	memset(x, 0, sizeof(*x));
	x->iov = iov;
	x->iovcnt = iovcnt > 0 ? iovcnt : 0;
	for (i = 0; i < x->iovcnt; i++)
		x->len += iov[i].iov_len;
}

/* Move forward n bytes, copying them to dst when dst is not NULL. */
static bool ulb_xdr_advance(struct ulb_xdr *x, uint8_t *dst, uint64_t n)
{
	if (x->err || n > x->len - x->pos)
		return ulb_xdr_fail(x);
	x->pos += n;
	while (n > 0) {
		size_t avail, take;

		if (x->idx >= x->iovcnt)
			return ulb_xdr_fail(x);
		avail = x->iov[x->idx].iov_len - x->off;
		take = avail < n ? avail : (size_t)n;
		if (dst && take) {
			memcpy(dst, (const uint8_t *)x->iov[x->idx].iov_base + x->off, take);
			dst += take;
		}
		x->off += take;
		n -= take;
		if (x->off == x->iov[x->idx].iov_len) {
			x->idx++;
			x->off = 0;
		}
	}
	return true;
}

/* Items that cross an iovec boundary (or run past the end). */
bool ulb_xdr_skip_slow(struct ulb_xdr *x, uint64_t n)
{
	return ulb_xdr_advance(x, NULL, n);
}

bool ulb_xdr_bytes(struct ulb_xdr *x, void *dst, size_t n)
{
	return ulb_xdr_advance(x, dst, n);
}

bool ulb_xdr_u32_slow(struct ulb_xdr *x, uint32_t *v)
{
	uint8_t b[4];

	if (!ulb_xdr_advance(x, b, 4))
		return false;
	if (v)
		*v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	return true;
}

bool ulb_xdr_u64(struct ulb_xdr *x, uint64_t *v)
{
	uint32_t hi, lo;

	if (!ulb_xdr_u32(x, &hi) || !ulb_xdr_u32(x, &lo))
		return false;
	if (v)
		*v = (uint64_t)hi << 32 | lo;
	return true;
}

bool ulb_xdr_bool(struct ulb_xdr *x, bool *v)
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

bool ulb_xdr_opaque(struct ulb_xdr *x, uint32_t max, uint32_t *lenp, uint64_t *datap)
{
	uint32_t len;

	if (!ulb_xdr_u32(x, &len))
		return false;
	if (len > max)
		return ulb_xdr_fail(x);
	if (datap)
		*datap = x->pos;
	if (lenp)
		*lenp = len;
	return ulb_xdr_skip(x, ulb_xdr_round4(len));
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
