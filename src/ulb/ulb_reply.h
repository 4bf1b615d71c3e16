/* SPDX-License-Identifier: MIT */
/*
 * ulb_reply.h - walk an encoded NFS Reply and tell the transport which bytes
 * go to which Write chunk (RFC 8267 section 4.3, the pairing rules) and
 * whether the chunks can carry them.
 */
#ifndef ULB_ULB_REPLY_H
#define ULB_ULB_REPLY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "rpcrdma/rr_hdr.h"
#include "rpcrdma/rr_reply.h"
#include "ulb/ulb_call.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ulb_reply_result {
	ULB_REPLY_OK = 0,
	ULB_REPLY_WRITE_CHUNK_TOO_SMALL, /* payload longer than its Write chunk */
	ULB_REPLY_READ_PLUS_TOO_MANY,	 /* more than ULB_READ_PLUS_MAX_CONTENTS contents */
	ULB_REPLY_GARBAGE,		 /* the encoded Reply does not decode */
};

struct ulb_reply_info {
	enum ulb_reply_result result;
	uint64_t reply_len;	 /* bytes in the encoded Reply stream */
	uint32_t n_read_results; /* NFS Read results in the Reply */
	int bad_chunk;		 /* Write chunk index at fault, or -1 */
};

/*
 * Walk the encoded Reply to @call (the RPC Reply from its xid on, as an
 * iovec array; items may straddle iovecs) and fill @plan: the k-th NFS Read
 * result (READ, READ_PLUS, READLINK; v2/v3 READ, READLINK) goes with the k-th
 * Write chunk of @pcl; a non-empty chunk carries that result's data item,
 * an empty chunk or a result without a data item (failed op, READ_PLUS hole)
 * leaves the chunk unused (echoed with zero length), results beyond the last
 * chunk stay inline. plan->deliverable is false for every result but
 * ULB_REPLY_OK: the transport answers ERR_CHUNK, and an NFSv4.1 Call's slot
 * (call->seq) must not replay that Reply (RFC 8267 section 4.5).
 *
 * Only the payloads: how the rest goes (inline, Reply chunk, or ERR_CHUNK
 * when it fits neither) is the transport's to decide, from the plan.
 *
 * @read_data is the encoder's word that the Reply's READ data starts at that
 * stream offset (where it kept a payload by reference; 0: it kept none). For
 * the Linux client's READ - the COMPOUND SEQUENCE, PUTFH, READ - the Reply is
 * then checked in place (the COMPOUND's status, each result's op and status
 * where that shape puts them, the end of the stream after the data) instead
 * of walked; any other shape, or a word that does not check, is walked. Same
 * results either way, whatever the word. @info may be NULL.
 */
enum ulb_reply_result ulb_reply_plan(const struct ulb_call *call, const struct iovec *iov,
				     int iovcnt, const struct rr_pcl *pcl, uint64_t read_data,
				     struct rr_reply_plan *plan, struct ulb_reply_info *info);

/*
 * READ_PLUS on RPC-over-RDMA (RFC 8267 section 4.1.1): at most two elements
 * in rpr_contents; a Reply with more is ULB_REPLY_READ_PLUS_TOO_MANY.
 */
#define ULB_READ_PLUS_MAX_CONTENTS 2u

#ifdef __cplusplus
}
#endif
#endif
