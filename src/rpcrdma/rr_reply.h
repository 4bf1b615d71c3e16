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
 * What the upper layer decided for one Reply: its payloads (DDP, RFC 8267
 * section 4.3) and whether its chunks can carry them. Write chunks that no
 * span names are echoed with zero lengths. How the rest goes - inline, in the
 * Reply chunk, or not at all - is the transport's alone (rr_reply.c sizes the
 * header and decides). When deliverable is false, or the rest fits neither
 * way, the transport answers ERR_CHUNK and reports "reply for xid not
 * delivered" back up.
 */
struct rr_reply_plan {
	uint16_t nspans;
	struct rr_payload_span spans[RR_PCL_MAX_WRITE_CHUNKS];
	bool deliverable;
};

#ifdef __cplusplus
}
#endif
#endif
