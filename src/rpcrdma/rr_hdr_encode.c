// SPDX-License-Identifier: MIT
/*
 * rr_hdr_encode.c - encode RPC-over-RDMA v1 headers (RFC 8166 section 4.2):
 * replies with echoed chunk lists, RDMA_ERROR replies, and calls.
 */
#include <errno.h>

#include "rpcrdma/rr_hdr.h"
#include "rpcrdma/rr_xdr.h"

/*
 * Echo one Write or Reply chunk: same segment count, each segment's length
 * replaced by what was written into it, filling segments in order
 * (RFC 8166 section 3.4.6; an unused chunk comes back with zero lengths).
 * Into room the caller has checked.
 */
static inline uint8_t *store_echoed_chunk(uint8_t *p, const struct rr_pcl *call,
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

/* The Write list and the Reply chunk, echoing @pcl's with the bytes written
 * (write_default for every Write chunk when @write_bytes is NULL). */
static uint8_t *store_write_list_and_reply(uint8_t *p, const struct rr_pcl *pcl,
					   const uint64_t *write_bytes, uint64_t write_default,
					   uint64_t reply_bytes)
{
	for (unsigned int i = 0; i < pcl->n_write; i++) {
		p = rr_xdr_store32(p, 1);
		p = store_echoed_chunk(p, pcl, &pcl->write[i],
				       write_bytes ? write_bytes[i] : write_default);
	}
	p = rr_xdr_store32(p, 0);
	if (!pcl->has_reply)
		return rr_xdr_store32(p, 0);
	p = rr_xdr_store32(p, 1);
	return store_echoed_chunk(p, pcl, &pcl->reply, reply_bytes);
}

/* Bytes of a header carrying @pcl's chunk lists (RFC 8166 section 4.2);
 * a reply's Read list is empty (@reads false). */
static inline size_t hdr_len(const struct rr_pcl *pcl, bool reads)
{
	/* fixed part, Read list end, Write list end, Reply chunk flag */
	size_t words = RR_HDR_FIXED_LEN / 4 + 1 + 1 + 1;

	if (reads)
		for (unsigned int i = 0; i < pcl->n_read; i++)
			words += 6 * (size_t)pcl->read[i].nsegs; /* present, position, segment */
	for (unsigned int i = 0; i < pcl->n_write; i++)
		words += 2 + 4 * (size_t)pcl->write[i].nsegs; /* present, count, segments */
	if (pcl->has_reply)
		words += 1 + 4 * (size_t)pcl->reply.nsegs;
	return 4 * words;
}

static uint8_t *store_fixed(uint8_t *p, uint32_t xid, uint32_t vers, uint32_t credits,
			    uint32_t proc)
{
	p = rr_xdr_store32(p, xid);
	p = rr_xdr_store32(p, vers);
	p = rr_xdr_store32(p, credits);
	return rr_xdr_store32(p, proc);
}

void rr_hdr_store_reply(void *buf, const struct rr_pcl *call, uint32_t credits, uint32_t proc,
			const uint64_t *write_bytes, uint64_t reply_bytes)
{
	uint8_t *p = store_fixed(buf, call->xid, RR_VERSION, credits, proc);

	/* A reply never carries a Read list (RFC 8166 section 3.4.5). */
	p = rr_xdr_store32(p, 0);
	store_write_list_and_reply(p, call, write_bytes, 0, reply_bytes);
}

ssize_t rr_hdr_encode_reply(void *buf, size_t len, const struct rr_pcl *call, uint32_t credits,
			    uint32_t proc, const uint64_t *write_bytes, uint64_t reply_bytes)
{
	size_t need = hdr_len(call, false);

	/* One size check, then plain stores: this runs once per Reply. */
	if (need > len)
		return -ENOSPC;
	rr_hdr_store_reply(buf, call, credits, proc, write_bytes, reply_bytes);
	return (ssize_t)need;
}

size_t rr_hdr_reply_len(const struct rr_pcl *call)
{
	return hdr_len(call, false);
}

size_t rr_hdr_encode_reply_bare(void *buf, uint32_t xid, uint32_t credits)
{
	uint8_t *p = store_fixed(buf, xid, RR_VERSION, credits, RR_PROC_MSG);

	p = rr_xdr_store32(p, 0); /* Read list */
	p = rr_xdr_store32(p, 0); /* Write list */
	p = rr_xdr_store32(p, 0); /* no Reply chunk */
	return (size_t)(p - (uint8_t *)buf);
}

ssize_t rr_hdr_encode_err_vers(void *buf, size_t len, uint32_t xid, uint32_t credits)
{
	uint8_t *p = buf;

	if (len < RR_HDR_ERR_VERS_LEN)
		return -ENOSPC;
	p = store_fixed(p, xid, RR_VERSION, credits, RR_PROC_ERROR);
	p = rr_xdr_store32(p, RR_ERR_VERS);
	p = rr_xdr_store32(p, RR_VERSION); /* lowest version supported */
	rr_xdr_store32(p, RR_VERSION);	   /* highest */
	return RR_HDR_ERR_VERS_LEN;
}

ssize_t rr_hdr_encode_err_chunk(void *buf, size_t len, uint32_t xid, uint32_t credits)
{
	uint8_t *p = buf;

	if (len < RR_HDR_ERR_CHUNK_LEN)
		return -ENOSPC;
	p = store_fixed(p, xid, RR_VERSION, credits, RR_PROC_ERROR);
	rr_xdr_store32(p, RR_ERR_CHUNK);
	return RR_HDR_ERR_CHUNK_LEN;
}

ssize_t rr_hdr_encode_call(void *buf, size_t len, const struct rr_pcl *pcl)
{
	size_t need = hdr_len(pcl, true);
	uint8_t *p = buf;

	if (need > len)
		return -ENOSPC;
	p = store_fixed(p, pcl->xid, pcl->vers, pcl->credits, pcl->proc);
	for (unsigned int i = 0; i < pcl->n_read; i++) {
		const struct rr_chunk *ch = &pcl->read[i];

		for (unsigned int j = 0; j < ch->nsegs; j++) {
			const struct rr_segment *s = &pcl->segs[ch->first + j];

			p = rr_xdr_store32(p, 1);
			p = rr_xdr_store32(p, ch->position);
			p = rr_xdr_store32(p, s->handle);
			p = rr_xdr_store32(p, s->length);
			p = rr_xdr_store64(p, s->offset);
		}
	}
	p = rr_xdr_store32(p, 0);
	/* A call's Write and Reply chunks offer their whole segments. */
	store_write_list_and_reply(p, pcl, NULL, UINT64_MAX, UINT64_MAX);
	return (ssize_t)need;
}
