/* SPDX-License-Identifier: MIT */
/*
 * ulb_elig.h - DDP-eligibility tables (RFC 8267 sections 3 and 4.1).
 */
#ifndef ULB_ULB_ELIG_H
#define ULB_ULB_ELIG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The Upper-Layer Protocol a Call belongs to (RFC 8267 sections 3, 3.1, 4). */
enum ulb_ulp {
	ULB_ULP_OTHER = 0, /* no binding: nothing eligible */
	ULB_ULP_NFS2,
	ULB_ULP_NFS3,
	ULB_ULP_NFS4,
	ULB_ULP_MOUNT,
	ULB_ULP_NLM,
	ULB_ULP_NSM,
	ULB_ULP_NFSACL,
};

/* A DDP-eligible XDR data item. */
enum ulb_item {
	ULB_ITEM_NONE = 0,
	ULB_ITEM_WRITE_DATA,	 /* v2/v3 WRITE data, WRITE4args data */
	ULB_ITEM_SYMLINK_PATH,	 /* v2/v3 SYMLINK path, CREATE NF4LNK linkdata */
	ULB_ITEM_READ_DATA,	 /* v2/v3 READ data, READ4resok data */
	ULB_ITEM_READLINK_PATH,	 /* v2/v3 READLINK path, READLINK4resok linkdata */
	ULB_ITEM_READ_PLUS_DATA, /* v4.2 read_plus_content rpc_data (RFC 8267 section 4.1.1) */
};

enum ulb_ulp ulb_ulp_of(uint32_t prog, uint32_t vers);
const char *ulb_ulp_name(enum ulb_ulp ulp);

/*
 * The eligible result item; for v4 @minor gates READ_PLUS (minor version 2
 * and newer). An operation with a result item is an "NFS Read" operation
 * (RFC 8267 section 4.3) and consumes one Write chunk.
 */
enum ulb_item ulb_elig_res(enum ulb_ulp ulp, uint32_t proc_or_op, uint32_t minor);

#ifdef __cplusplus
}
#endif
#endif
