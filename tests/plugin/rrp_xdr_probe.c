// SPDX-License-Identifier: MIT
/*
 * rrp_xdr_probe.c - the plugin's decode stream (src/plugin/rrp_xdr.c) driven
 * through its xdr_ops, as ntirpc and ganesha call them, for
 * test_rrp_xdr.cc (C++ does not take ntirpc's headers).
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* One READ result's uio, as xdr_READ4res_uio_setup makes it: no reference;
 * its release as ganesha's (free at the last reference), counted instead. */
struct probe_uio {
	xdr_uio *uio; /* with room for two vios (uio_p1: this) */
	uint8_t data[2][4096];
	struct rrp_probe_bufs *count;
	bool freed;
};

static void probe_uio_release(xdr_uio *uio, u_int flags)
{
	struct probe_uio *u = uio->uio_p1;

	(void)flags;
	if (u->freed) {
		u->count->over++;
		return;
	}
	if (!(--uio->uio_references)) {
		u->freed = true;
		u->count->freed++;
	}
}

int rrp_probe_putbufs(int nreads, int first, int vios, struct rrp_probe_bufs *out)
{
	static struct probe_uio uios[64];
	/* xdr_uio ends in a zero-length array: its vios live after it */
	static union {
		xdr_uio uio;
		uint8_t room[sizeof(xdr_uio) + 2 * sizeof(xdr_vio)];
	} uio_mem[64];
	struct rrp_xdr_enc e;
	XDR *x = &e.xdrs;

	memset(out, 0, sizeof(*out));
	if (nreads > 64 || first < 1 || first > 2 || vios < 1 || vios > 2 || rrp_xdr_enc_init(&e))
		return -1;
	for (int i = 0; i < nreads; i++) {
		struct probe_uio *u = &uios[i];
		int n = i ? vios : first;
		uint32_t len = htonl((uint32_t)(n * sizeof(u->data[0])));
		xdr_vio *vio;

		memset(u, 0, sizeof(*u));
		memset(&uio_mem[i], 0, sizeof(uio_mem[i]));
		u->uio = &uio_mem[i].uio;
		u->count = out;
		u->uio->uio_p1 = u;
		u->uio->uio_release = probe_uio_release;
		u->uio->uio_count = (size_t)n;
		vio = (xdr_vio *)(uio_mem[i].room + offsetof(xdr_uio, uio_vio));
		for (int k = 0; k < n; k++) {
			xdr_vio *v = &vio[k];

			v->vio_base = v->vio_head = u->data[k];
			v->vio_tail = v->vio_wrap = u->data[k] + sizeof(u->data[k]);
			v->vio_length = sizeof(u->data[k]);
			v->vio_type = VIO_DATA;
		}
		out->made++;
		/* eof, then the data's length, then the data by reference */
		if (!x->x_ops->x_putbytes(x, (const char *)&len, sizeof(len)) ||
		    !x->x_ops->x_putbytes(x, (const char *)&len, sizeof(len)))
			break;
		if (!x->x_ops->x_putbufs(x, u->uio, UIO_FLAG_NONE)) {
			u->uio->uio_release(u->uio, UIO_FLAG_NONE);
			break;
		}
		out->put++;
	}
	rrp_xdr_enc_recycle(&e);
	rrp_xdr_enc_fini(&e);
	return 0;
}
