// SPDX-License-Identifier: MIT
/*
 * rrp_xdr_probe.c - the plugin's decode stream (src/plugin/rrp_xdr.c) driven
 * through its xdr_ops, as ntirpc and ganesha call them, for
 * test_rrp_xdr.cc (C++ does not take ntirpc's headers).
 */
#include <stdlib.h>

#include "plugin/rrp_xdr.h"
#include "rrp_xdr_probe.h"

static bool open_at(struct rrp_xdr_dec *d, const struct iovec *iov, int n, unsigned int at)
{
	rrp_xdr_dec_init(d, iov, n);
	return d->xdrs.x_ops->x_setpostn(&d->xdrs, at);
}

int rrp_probe_iovcount(const struct iovec *iov, int n, unsigned int at, unsigned int start,
		       unsigned int len)
{
	struct rrp_xdr_dec d;

	if (!open_at(&d, iov, n, at))
		return -2;
	return d.xdrs.x_ops->x_iovcount(&d.xdrs, start, len);
}

int rrp_probe_fillbufs(const struct iovec *iov, int n, unsigned int at, unsigned int start,
		       unsigned int len, struct iovec *out, int max, unsigned long *in_place)
{
	struct rrp_xdr_dec d;
	xdr_vio vio[16];
	int k;

	if (max > 16 || !open_at(&d, iov, n, at))
		return -2;
	for (k = 0; k < 16; k++)
		vio[k].vio_length = 0xdeadbeef; /* untouched marker */
	if (!d.xdrs.x_ops->x_fillbufs(&d.xdrs, start, vio, len))
		return vio[0].vio_length == 0xdeadbeef ? -1 : -3; /* -3: wrote, then failed */
	for (k = 0; k < max && vio[k].vio_length != 0xdeadbeef; k++) {
		if (vio[k].vio_head != vio[k].vio_base || vio[k].vio_wrap != vio[k].vio_tail ||
		    (size_t)(vio[k].vio_tail - vio[k].vio_base) != vio[k].vio_length)
			return -4;
		out[k].iov_base = vio[k].vio_base;
		out[k].iov_len = vio[k].vio_length;
	}
	*in_place = (unsigned long)d.in_place;
	return k;
}

int rrp_probe_setpos(const struct iovec *iov, int n, unsigned int at, unsigned int pos,
		     unsigned int *getpos, const void **data)
{
	struct rrp_xdr_dec d;

	if (!open_at(&d, iov, n, at))
		return -2;
	if (!d.xdrs.x_ops->x_setpostn(&d.xdrs, pos))
		return 0;
	*getpos = d.xdrs.x_ops->x_getpostn(&d.xdrs);
	*data = d.xdrs.x_data;
	return 1;
}
