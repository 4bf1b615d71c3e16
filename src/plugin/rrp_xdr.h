/* SPDX-License-Identifier: MIT */
/*
 * rrp_xdr.h - ntirpc XDR streams over the transport's buffers.
 *
 * Decode: a Call given as iovecs (inline bytes, Read-chunk sinks, pads) is
 * read in place; ntirpc's inline fast paths see one iovec at a time through
 * x_data / x_v and the ops below cross from one to the next.
 * Encode: a Reply is written into buffers of our own; xdr_putbufs() data
 * (READ payloads) is kept by reference as its own segment, so it can go to a
 * Write chunk without a copy; its uio is released when the transport is done.
 */
#ifndef RPCRDMA_RRP_XDR_H
#define RPCRDMA_RRP_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include <rpc/xdr.h>

#define RRP_DEC_MAX_IOV 64
#define RRP_ENC_MAX_SEG 32
#define RRP_ENC_BUF 8192
#define RRP_ENC_KEEP 2

struct rrp_xdr_dec {
	XDR xdrs;			/* first: ntirpc sees only this */
	const struct iovec *iov;
	int iovcnt;
	int cur;			/* iovec x_v describes */
	u_int start[RRP_DEC_MAX_IOV];	/* stream offset of each iovec */
	u_int end;			/* the stream's length */
	uint64_t copied;		/* bytes x_getbytes copied out */
	uint64_t in_place;		/* bytes it found already at the destination */
	void (*destroy)(struct rrp_xdr_dec *dec);	/* owner's release */
	void *owner;
};

struct rrp_enc_seg {
	uint8_t *base;
	size_t len;			/* bytes used */
	size_t cap;			/* 0: a referenced uio vio, not ours */
	bool owned;			/* base is an encode buffer of ours (not the
					 * rest of one after a payload) */
	xdr_uio *uio;			/* referenced data: released when done */
};

struct rrp_xdr_enc {
	XDR xdrs;
	int nseg;
	struct rrp_enc_seg seg[RRP_ENC_MAX_SEG];
	bool failed;
	uint64_t ref_at;		/* stream offset of the first data kept by
					 * reference (READ's); 0: none */
	/* Own buffers kept for the next stream, which then skip the shared
	 * cache's lock: most Replies use one (a READ's goes on after its
	 * payload in the same buffer), a few KiB of attributes two. */
	void *keep[RRP_ENC_KEEP];
	int nkeep;
};

/* Decode over @iov (not copied: must outlive the stream). */
void rrp_xdr_dec_init(struct rrp_xdr_dec *dec, const struct iovec *iov, int iovcnt);
/* True if the next byte @dec (a struct rrp_xdr_dec) decodes is at @addr. */
bool rrp_xdr_dec_at(void *dec, const void *addr);

/* Encode into fresh buffers; rrp_xdr_enc_fini() frees them and releases uios. */
int rrp_xdr_enc_init(struct rrp_xdr_enc *enc);
/* The encoded Reply as iovecs (at most RRP_ENC_MAX_SEG); returns the count. */
int rrp_xdr_enc_iov(struct rrp_xdr_enc *enc, struct iovec *iov);
void rrp_xdr_enc_fini(struct rrp_xdr_enc *enc);
/* Release like fini, but keep up to RRP_ENC_KEEP buffers and start a new,
 * empty stream over them (objects recycled per request allocate nothing in steady state). */
int rrp_xdr_enc_recycle(struct rrp_xdr_enc *enc);

#endif
