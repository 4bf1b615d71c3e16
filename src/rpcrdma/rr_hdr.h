/* SPDX-License-Identifier: MIT */
/*
 * rr_hdr.h - RPC-over-RDMA v1 transport header codec (RFC 8166 section 4).
 *
 * Decoding turns a received header into a parsed chunk list (struct rr_pcl)
 * that is fully validated: every later stage may trust its counts, lengths
 * and positions. Nothing here allocates; the pcl has fixed-size storage whose
 * use is bounded by struct rr_hdr_limits.
 */
#ifndef RPCRDMA_RR_HDR_H
#define RPCRDMA_RR_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rpcrdma/rr_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Storage caps of one pcl; configured limits may only be lower. */
#define RR_PCL_MAX_SEGS 256u		/* all lists together */
#define RR_PCL_MAX_READ_CHUNKS 16u
#define RR_PCL_MAX_WRITE_CHUNKS 16u

struct rr_segment {
	uint32_t handle;
	uint32_t length;
	uint64_t offset;
};

/* A chunk is a run of segments in pcl->segs. */
struct rr_chunk {
	uint32_t position;	/* Read chunks only: XDR position in the Call */
	uint16_t first;		/* index of the first segment in pcl->segs */
	uint16_t nsegs;
	uint64_t length;	/* sum of the segment lengths */
};

struct rr_pcl {
	uint32_t xid;
	uint32_t vers;
	uint32_t credits;
	uint32_t proc;		/* enum rr_proc */
	/* Read chunks sorted by position; a Position-Zero chunk, if any, is read[0]. */
	uint16_t n_read;
	uint16_t n_write;
	bool has_reply;
	struct rr_chunk read[RR_PCL_MAX_READ_CHUNKS];
	struct rr_chunk write[RR_PCL_MAX_WRITE_CHUNKS];
	struct rr_chunk reply;
	uint16_t nsegs;
	struct rr_segment segs[RR_PCL_MAX_SEGS];
	uint32_t hdr_len;	/* bytes of transport header = offset of the inline RPC message */
};

/* Bounds on what a peer may ask for; see rr_hdr_limits_default(). */
struct rr_hdr_limits {
	uint32_t max_read_chunks;	/* <= RR_PCL_MAX_READ_CHUNKS */
	uint32_t max_write_chunks;	/* <= RR_PCL_MAX_WRITE_CHUNKS */
	uint32_t max_segs_per_chunk;
	uint32_t max_segs;		/* all lists together, <= RR_PCL_MAX_SEGS */
	uint64_t max_chunk_bytes;	/* largest Read, Write or Reply chunk */
};

/* Outcome of decoding a received header; rr_hdr_answer() maps it to an action. */
enum rr_hdr_result {
	RR_HDR_OK = 0,
	RR_HDR_SHORT,			/* fewer than 16 bytes */
	RR_HDR_BAD_VERS,		/* rdma_vers != 1 */
	RR_HDR_PROC_DONE,		/* RDMA_DONE: requester-only, obsolete */
	RR_HDR_PROC_ERROR,		/* RDMA_ERROR sent to a responder */
	RR_HDR_PROC_MSGP,		/* RDMA_MSGP: obsolete (RFC 8166 section 4.2.1) */
	RR_HDR_PROC_UNKNOWN,
	RR_HDR_OVERRUN,			/* a list runs past the received bytes */
	RR_HDR_BAD_DISCRIM,		/* list discriminator not 0 or 1 */
	RR_HDR_UNALIGNED_POSITION,
	RR_HDR_TOO_MANY_CHUNKS,
	RR_HDR_TOO_MANY_SEGS,
	RR_HDR_ZERO_LENGTH_SEG,
	RR_HDR_SEG_WRAPS,		/* offset + length overflows 64 bits */
	RR_HDR_READ_SEG_OVERLAP,	/* two Read segments cover the same remote bytes */
	RR_HDR_READ_CHUNK_OVERLAP,	/* Read chunk positions overlap */
	RR_HDR_CHUNK_TOO_BIG,		/* chunk exceeds max_chunk_bytes */
	RR_HDR_NOMSG_NO_CALL,		/* RDMA_NOMSG call without a Position-Zero Read chunk */
	RR_HDR_MSG_WITH_PZRC,		/* RDMA_MSG carrying a Position-Zero Read chunk */
	RR_HDR_RESULT_COUNT
};

/* What the responder does about a result (RFC 8166 section 5; the Linux
 * server's practice: docs/linux-client-wire.md). */
enum rr_hdr_action {
	RR_ACT_PROCESS,		/* a Call to process */
	RR_ACT_ERR_VERS,	/* reply RDMA_ERROR / ERR_VERS 1..1 */
	RR_ACT_ERR_CHUNK,	/* reply RDMA_ERROR / ERR_CHUNK */
	RR_ACT_DROP,		/* discard silently */
};

void rr_hdr_limits_default(struct rr_hdr_limits *lim);
enum rr_hdr_action rr_hdr_answer(enum rr_hdr_result r, size_t received_len);
const char *rr_hdr_result_name(enum rr_hdr_result r);

/* Decode a Call header received by a responder. On any result other than
 * RR_HDR_OK, pcl->xid is valid when len >= 4 (to address an error reply). */
enum rr_hdr_result rr_hdr_decode_call(const void *buf, size_t len,
				      const struct rr_hdr_limits *lim, struct rr_pcl *pcl);

/* Requester side: decode a reply header (MSG / NOMSG / ERROR). */
struct rr_reply_info {
	uint32_t xid;
	uint32_t vers;
	uint32_t credits;
	uint32_t proc;
	uint32_t err;		/* RDMA_ERROR: enum rr_errcode */
	uint32_t vers_low;	/* ERR_VERS */
	uint32_t vers_high;
};
enum rr_hdr_result rr_hdr_decode_reply(const void *buf, size_t len,
				       const struct rr_hdr_limits *lim, struct rr_pcl *pcl,
				       struct rr_reply_info *info);

/*
 * Encode a reply header answering @call into @buf (RFC 8166 section 4.2):
 * proc RR_PROC_MSG or RR_PROC_NOMSG; every Write chunk of the call echoed with
 * the same segment count and each segment's length set to the bytes written
 * into it (write_bytes[i] for chunk i, spread over its segments in order);
 * the Reply chunk echoed the same way with reply_bytes. Returns the header
 * length, or -ENOSPC.
 */
ssize_t rr_hdr_encode_reply(void *buf, size_t len, const struct rr_pcl *call, uint32_t credits,
			    uint32_t proc, const uint64_t *write_bytes, uint64_t reply_bytes);

/* Bytes of the header rr_hdr_encode_reply writes for @call, whatever its proc
 * and lengths: the fixed part, an empty Read list, @call's Write list and
 * Reply chunk echoed (RFC 8166 section 4.2). */
size_t rr_hdr_reply_len(const struct rr_pcl *call);

/* rr_hdr_encode_reply into @buf, which has room for rr_hdr_reply_len(call)
 * bytes: no second sizing where the caller sized it already. */
void rr_hdr_store_reply(void *buf, const struct rr_pcl *call, uint32_t credits, uint32_t proc,
			const uint64_t *write_bytes, uint64_t reply_bytes);

/* rr_hdr_encode_reply, RDMA_MSG, for a call with no Write or Reply chunk
 * (most Replies: kept short to be inlined) into @buf, which has room for
 * rr_hdr_reply_len(call) bytes; returns that length. */
size_t rr_hdr_encode_reply_bare(void *buf, uint32_t xid, uint32_t credits);

/* RDMA_ERROR replies: vers is always 1 (clients drop replies of other versions). */
ssize_t rr_hdr_encode_err_vers(void *buf, size_t len, uint32_t xid, uint32_t credits);
ssize_t rr_hdr_encode_err_chunk(void *buf, size_t len, uint32_t xid, uint32_t credits);

/* Requester side (test requester, backchannel): encode a Call header from a pcl
 * whose chunks and segments are filled in (read chunks in any order). */
ssize_t rr_hdr_encode_call(void *buf, size_t len, const struct rr_pcl *pcl);

#ifdef __cplusplus
}
#endif
#endif
