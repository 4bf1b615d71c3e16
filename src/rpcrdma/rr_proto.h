/* SPDX-License-Identifier: MIT */
/*
 * rr_proto.h - RPC-over-RDMA version 1 wire constants (RFC 8166) and the
 * RFC 8797 CM private data layout. The one place these numbers live.
 */
#ifndef RPCRDMA_RR_PROTO_H
#define RPCRDMA_RR_PROTO_H

#define RR_VERSION 1u			/* RFC 8166 section 4.2: rdma_vers */

/* RFC 8166 section 4.2.1: rdma_proc */
enum rr_proc {
	RR_PROC_MSG = 0,
	RR_PROC_NOMSG = 1,
	RR_PROC_MSGP = 2,		/* RFC 5666 only; obsolete in RFC 8166 */
	RR_PROC_DONE = 3,		/* RFC 5666 only; obsolete in RFC 8166 */
	RR_PROC_ERROR = 4,
};

/* RFC 8166 section 4.2.4: rpcrdma_errcode */
enum rr_errcode {
	RR_ERR_VERS = 1,
	RR_ERR_CHUNK = 2,
};

/* XDR sizes in bytes (RFC 8166 section 4.2). */
#define RR_XDR_UNIT 4u
#define RR_HDR_FIXED_LEN 16u		/* xid, vers, credit, proc */
#define RR_SEGMENT_LEN 16u		/* handle, length, offset(u64) */
#define RR_HDR_MSG_MIN_LEN 28u		/* fixed part + three empty lists */
#define RR_HDR_ERR_CHUNK_LEN 20u	/* fixed part + errcode */
#define RR_HDR_ERR_VERS_LEN 28u		/* fixed part + errcode + low + high */

/* Inline threshold without CM private data (RFC 8166 section 3.3.2). */
#define RR_INLINE_DEFAULT 1024u

/* RFC 8797 section 4: the 8-byte private data message. */
#define RR_CM_PRIV_MAGIC 0xf6ab0e18u
#define RR_CM_PRIV_VERSION 1u
#define RR_CM_PRIV_LEN 8u
#define RR_CM_PRIV_F_SND_W_INV_OK 0x01u	/* Send With Invalidate welcome */
#define RR_CM_PRIV_SIZE_UNIT 1024u	/* sizes encoded as (bytes / 1024) - 1 */
#define RR_CM_PRIV_SIZE_MAX (256u * 1024u)

/* IANA "nfsrdma" (RFC 5667 section 6). */
#define RR_NFS_RDMA_PORT 20049

#endif
