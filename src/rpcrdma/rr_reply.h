/* SPDX-License-Identifier: MIT */
/*
 * rr_reply.h - the contract between an upper layer (src/ulb/ for NFS) and the
 * reply path: which bytes of an encoded RPC Reply are the DDP-eligible payload
 * that goes to which Write chunk.
 *
 * The encoded Reply is one logical byte stream, given as an array of iovecs.
 * A span names bytes [offset, offset + length) of that stream: the payload
 * of one data item. The XDR length word before it stays inline; the XDR pad
 * after it (roundup to 4) is present in the stream but is never written to
 * the chunk, and is skipped from the inline remainder along with the payload
 * (RFC 8166 section 3.5.4; docs/linux-client-wire.md).
 */
#ifndef RPCRDMA_RR_REPLY_H
#define RPCRDMA_RR_REPLY_H

#include <stdbool.h>
#include <stdint.h>

#include "rpcrdma/rr_hdr.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rr_payload_span {
	uint16_t chunk;		/* index into the call's Write list */
	uint64_t offset;	/* first payload byte in the encoded Reply stream */
	uint32_t length;	/* payload bytes, without the XDR pad */
};

/*
 * What the upper layer decided for one Reply. Write chunks that no span names
 * are echoed with zero lengths. When deliverable is false the transport answers
 * ERR_CHUNK and reports "reply for xid not delivered" back up.
 */
struct rr_reply_plan {
	uint16_t nspans;
	struct rr_payload_span spans[RR_PCL_MAX_WRITE_CHUNKS];
	bool deliverable;
};

/*
 * How a Reply goes (RFC 8166 section 3.5.4): inline in one Send when the
 * transport header and every byte outside the Write chunks fit the inline
 * threshold; else by RDMA Write into the Reply chunk, with an RDMA_NOMSG
 * header (the same length as RDMA_MSG's) alone in the Send; else not at all:
 * the transport answers ERR_CHUNK (RFC 8166 section 4.5).
 */
enum rr_reply_shape {
	RR_SHAPE_INLINE,		/* RDMA_MSG, header and body in one Send */
	RR_SHAPE_REPLY_CHUNK,		/* RDMA_NOMSG, the body in the Reply chunk */
	RR_SHAPE_NO_REPLY_CHUNK,	/* too long for inline, no Reply chunk: ERR_CHUNK */
	RR_SHAPE_REPLY_CHUNK_SHORT,	/* longer than the Reply chunk: ERR_CHUNK */
	RR_SHAPE_HDR_TOO_BIG,		/* the header alone is over the threshold: ERR_CHUNK */
};

/*
 * The one place the shape is decided, for the reply path (rr_reply.c) and
 * for an upper layer planning a Reply (src/ulb): @hdr_len is the transport
 * header echoing @pcl's chunks, @inline_len the Reply's bytes outside its
 * Write chunks (payloads and their XDR pads taken out), @max_inline the
 * connection's inline threshold for Sends (rr_conn_max_inline_send).
 * @pcl may be NULL: no chunks offered.
 */
static inline enum rr_reply_shape rr_reply_shape(const struct rr_pcl *pcl, uint64_t hdr_len,
						 uint64_t inline_len, uint32_t max_inline)
{
	if (hdr_len + inline_len <= max_inline)
		return RR_SHAPE_INLINE;
	if (!pcl || !pcl->has_reply)
		return RR_SHAPE_NO_REPLY_CHUNK;
	if (inline_len > pcl->reply.length)
		return RR_SHAPE_REPLY_CHUNK_SHORT;
	if (hdr_len > max_inline)
		return RR_SHAPE_HDR_TOO_BIG;
	return RR_SHAPE_REPLY_CHUNK;
}

#ifdef __cplusplus
}
#endif
#endif
