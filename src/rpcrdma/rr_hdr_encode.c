// SPDX-License-Identifier: MIT
/*
 * rr_hdr_encode.c - encode RPC-over-RDMA v1 headers (RFC 8166 section 4.2):
 * replies with echoed chunk lists, RDMA_ERROR replies, and calls.
 */
#include <errno.h>

#include "rpcrdma/rr_hdr.h"
#include "rpcrdma/rr_xdr.h"

static bool put_fixed(struct rr_xdr *x, uint32_t xid, uint32_t credits, uint32_t proc)
{
	return rr_xdr_put32(x, xid) && rr_xdr_put32(x, RR_VERSION) && rr_xdr_put32(x, credits) &&
	       rr_xdr_put32(x, proc);
}

static bool put_segment(struct rr_xdr *x, const struct rr_segment *s, uint32_t length)
{
	return rr_xdr_put32(x, s->handle) && rr_xdr_put32(x, length) && rr_xdr_put64(x, s->offset);
}

/*
 * Echo one Write or Reply chunk: same segment count, each segment's length
 * replaced by what was written into it, filling segments in order
 * (RFC 8166 section 3.4.6; an unused chunk comes back with zero lengths).
 */
static bool put_echoed_chunk(struct rr_xdr *x, const struct rr_pcl *call,
			     const struct rr_chunk *ch, uint64_t written)
{
	unsigned int i;

	if (!rr_xdr_put32(x, ch->nsegs))
		return false;
	for (i = 0; i < ch->nsegs; i++) {
		const struct rr_segment *s = &call->segs[ch->first + i];
		uint32_t used = written < s->length ? (uint32_t)written : s->length;

		if (!put_segment(x, s, used))
			return false;
		written -= used;
	}
	return true;
}

/* The same echo, into room already checked (the reply path's fast case). */
static uint8_t *store_echoed_chunk(uint8_t *p, const struct rr_pcl *call,
				   const struct rr_chunk *ch, uint64_t written)
{
	p = rr_xdr_store32(p, ch->nsegs);
	for (unsigned int i = 0; i < ch->nsegs; i++) {
		const struct rr_segment *s = &call->segs[ch->first + i];
		uint32_t used = written < s->length ? (uint32_t)written : s->length;

		p = rr_xdr_store32(p, s->handle);
		p = rr_xdr_store32(p, used);
		p = rr_xdr_store64(p, s->offset);
		written -= used;
	}
	return p;
}

/* Bytes of a reply header echoing @call's chunks (RFC 8166 section 4.2). */
static size_t reply_hdr_len(const struct rr_pcl *call)
{
	/* fixed part, empty Read list, Write list end, Reply chunk flag */
	size_t words = RR_HDR_FIXED_LEN / 4 + 1 + 1 + 1;

	for (unsigned int i = 0; i < call->n_write; i++)
		words += 2 + 4 * (size_t)call->write[i].nsegs; /* present, count, segments */
	if (call->has_reply)
		words += 1 + 4 * (size_t)call->reply.nsegs;
	return 4 * words;
}

ssize_t rr_hdr_encode_reply(void *buf, size_t len, const struct rr_pcl *call, uint32_t credits,
			    uint32_t proc, const uint64_t *write_bytes, uint64_t reply_bytes)
{
	size_t need = reply_hdr_len(call);
	uint8_t *p = buf;

	/* One size check, then plain stores: this runs once per Reply. */
	if (need > len)
		return -ENOSPC;
	p = rr_xdr_store32(p, call->xid);
	p = rr_xdr_store32(p, RR_VERSION);
	p = rr_xdr_store32(p, credits);
	p = rr_xdr_store32(p, proc);
	/* A reply never carries a Read list (RFC 8166 section 3.4.5). */
	p = rr_xdr_store32(p, 0);
	for (unsigned int i = 0; i < call->n_write; i++) {
		p = rr_xdr_store32(p, 1);
		p = store_echoed_chunk(p, call, &call->write[i], write_bytes ? write_bytes[i] : 0);
	}
	p = rr_xdr_store32(p, 0);
	if (call->has_reply) {
		p = rr_xdr_store32(p, 1);
		p = store_echoed_chunk(p, call, &call->reply, reply_bytes);
	} else {
		p = rr_xdr_store32(p, 0);
	}
	return (ssize_t)need;
}

ssize_t rr_hdr_encode_err_vers(void *buf, size_t len, uint32_t xid, uint32_t credits)
{
	struct rr_xdr x;

	rr_xdr_init(&x, buf, len);
	if (!put_fixed(&x, xid, credits, RR_PROC_ERROR) || !rr_xdr_put32(&x, RR_ERR_VERS) ||
	    !rr_xdr_put32(&x, RR_VERSION) || !rr_xdr_put32(&x, RR_VERSION))
		return -ENOSPC;
	return RR_HDR_ERR_VERS_LEN;
}

ssize_t rr_hdr_encode_err_chunk(void *buf, size_t len, uint32_t xid, uint32_t credits)
{
	struct rr_xdr x;

	rr_xdr_init(&x, buf, len);
	if (!put_fixed(&x, xid, credits, RR_PROC_ERROR) || !rr_xdr_put32(&x, RR_ERR_CHUNK))
		return -ENOSPC;
	return RR_HDR_ERR_CHUNK_LEN;
}

ssize_t rr_hdr_encode_call(void *buf, size_t len, const struct rr_pcl *pcl)
{
	struct rr_xdr x;
	unsigned int i, j;

	rr_xdr_init(&x, buf, len);
	if (!rr_xdr_put32(&x, pcl->xid) || !rr_xdr_put32(&x, pcl->vers) ||
	    !rr_xdr_put32(&x, pcl->credits) || !rr_xdr_put32(&x, pcl->proc))
		return -ENOSPC;
	for (i = 0; i < pcl->n_read; i++) {
		const struct rr_chunk *ch = &pcl->read[i];

		for (j = 0; j < ch->nsegs; j++) {
			const struct rr_segment *s = &pcl->segs[ch->first + j];

			if (!rr_xdr_put32(&x, 1) || !rr_xdr_put32(&x, ch->position) ||
			    !put_segment(&x, s, s->length))
				return -ENOSPC;
		}
	}
	if (!rr_xdr_put32(&x, 0))
		return -ENOSPC;
	for (i = 0; i < pcl->n_write; i++) {
		const struct rr_chunk *ch = &pcl->write[i];

		if (!rr_xdr_put32(&x, 1) || !put_echoed_chunk(&x, pcl, ch, UINT64_MAX))
			return -ENOSPC;
	}
	if (!rr_xdr_put32(&x, 0))
		return -ENOSPC;
	if (pcl->has_reply) {
		if (!rr_xdr_put32(&x, 1) || !put_echoed_chunk(&x, pcl, &pcl->reply, UINT64_MAX))
			return -ENOSPC;
	} else if (!rr_xdr_put32(&x, 0)) {
		return -ENOSPC;
	}
	return (ssize_t)(len - rr_xdr_left(&x));
}
