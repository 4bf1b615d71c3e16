/* SPDX-License-Identifier: MIT */
/*
 * ulb_call.h - scan an NFS Call for what the transport needs to know
 * (RFC 8267): the DDP-eligible argument items and their XDR positions, the
 * ordered "NFS Read" operations that consume Write chunks, and the SEQUENCE
 * arguments that identify the session slot (section 4.5).
 */
#ifndef ULB_ULB_CALL_H
#define ULB_ULB_CALL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "rpcrdma/rr_hdr.h"
#include "ulb/ulb_elig.h"
#include "ulb/ulb_nfs.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ULB_MAX_READ_OPS 32u	   /* NFS Read ops remembered (> RR_PCL_MAX_WRITE_CHUNKS) */
#define ULB_MAX_ARG_ITEMS 64u	   /* eligible argument items remembered */
#define ULB_MAX_COMPOUND_OPS 1024u /* more ops than this: the server answers RESOURCE */
#define ULB_MAX_TAG_LEN 1024u	   /* utf8str_cs tag of a COMPOUND */

struct ulb_sequence {
	uint8_t sessionid[ULB_NFS4_SESSIONID_LEN];
	uint32_t sequenceid;
	uint32_t slotid;
};

struct ulb_arg_item {
	uint16_t op_index; /* index in the COMPOUND; 0 for v2/v3 */
	uint16_t kind;	   /* enum ulb_item */
	int16_t chunk;	   /* index in pcl->read of the chunk carrying it, -1: inline */
	uint32_t length;   /* from its XDR length word */
	uint64_t position; /* XDR position of its first data byte in the Call (xid = 0) */
};

struct ulb_read_op {
	uint16_t op_index; /* index in the COMPOUND; 0 for v2/v3 */
	uint16_t kind;	   /* enum ulb_item of its result */
	uint32_t opcode;   /* nfs_opnum4, or the v2/v3 procedure */
	uint32_t count;	   /* requested bytes (READ, READ_PLUS); 0 for READLINK */
};

enum ulb_scan_result {
	ULB_SCAN_OK = 0,
	ULB_SCAN_GARBAGE,  /* arguments do not decode: answer GARBAGE_ARGS */
	ULB_SCAN_NOT_CALL, /* not an RPC v2 Call */
	ULB_SCAN_OPAQUE,   /* arguments hidden (RPCSEC_GSS privacy or control) */
};

struct ulb_call {
	uint32_t xid, prog, vers, proc;
	enum ulb_ulp ulp;
	uint32_t cred_flavor;
	uint32_t gss_service; /* RPCSEC_GSS: rpc_gss_service_t; 0 otherwise */
	uint64_t args_offset; /* stream offset of the procedure arguments */
	/* NFSv4 COMPOUND */
	uint32_t minorversion;
	uint32_t numops;       /* as sent */
	uint32_t nops_scanned; /* operations whose arguments decoded */
	bool stopped;	       /* the server stops before numops: illegal op or too many */
	uint32_t stop_opcode;
	bool has_sequence; /* SEQUENCE as the first operation */
	struct ulb_sequence seq;
	/* NFS Read operations in order; n_read_ops counts all of them. The
	 * arrays hold min(count, max) valid entries; nothing past them is set. */
	uint32_t n_read_ops;
	struct ulb_read_op read_ops[ULB_MAX_READ_OPS];
	/* DDP-eligible argument items in order; n_items counts all of them */
	uint32_t n_items;
	struct ulb_arg_item items[ULB_MAX_ARG_ITEMS];
	uint64_t absent_bytes; /* item bytes (with pad) that Read chunks carry, not inline */
};

/*
 * Scan an RPC Call, from its xid on, given as an iovec array (items may
 * straddle iovecs). @pcl may be NULL: the stream is complete, chunk data
 * already in place. With a pcl, the stream is the inline Call as received
 * (or the Position-Zero chunk's contents) and every other Read chunk whose
 * position equals that of an eligible item is taken to carry that item's
 * bytes and XDR pad, which are then absent from the stream.
 * Never reads outside the iovecs; fills @c as far as it got.
 */
enum ulb_scan_result ulb_call_scan(const struct iovec *iov, int iovcnt, const struct rr_pcl *pcl,
				   struct ulb_call *c);

enum ulb_ddp_result {
	ULB_DDP_OK = 0,
	ULB_DDP_VIOLATION, /* RFC 8267 section 2.5: answer GARBAGE_ARGS */
};

/*
 * Check the call's Read chunks against the scanned items: every Read chunk
 * but a Position-Zero one must sit at the position of an eligible argument
 * item, one chunk per item, and carry the item's length (its XDR pad
 * optional). Anything else is a DDP-eligibility violation.
 */
enum ulb_ddp_result ulb_call_check_read_chunks(const struct ulb_call *c, const struct rr_pcl *pcl);


#ifdef __cplusplus
}
#endif
#endif
