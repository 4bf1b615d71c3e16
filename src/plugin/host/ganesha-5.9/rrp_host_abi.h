/* SPDX-License-Identifier: MIT */
/*
 * Host adapter: nfs-ganesha 5.9 with libntirpc 5.8 (Debian 12
 * bookworm-backports).
 * Its compile-time facts (the soname and private layouts); what it does
 * differently is in rrp_host_ops.c. The interface is documented in
 * rrp_host.h, how to add a release in host/README.md.
 */
#ifndef RPCRDMA_RRP_HOST_ABI_H
#define RPCRDMA_RRP_HOST_ABI_H

#define RRP_HOST_GANESHA_SONAME "libganesha_nfsd.so.5.9"

/* struct req_op_context's ctx_export and struct gsh_export's export_id
 * (read off Debian's 5.9 library: clear_op_context_export and
 * get_gsh_export; checked at run time, rrp_exports.c). */
#define RRP_HOST_OP_CTX_EXPORT 0x80
#define RRP_HOST_EXPORT_ID 0x1b8

/* What the export checks read of the object a handle resolves to
 * (rrp_exports.c; from 5.9's headers, the same as 4.3's; checked at run time): struct gsh_export's
 * exp_root_obj and fsal_export, struct fsal_export's exp_ops.create_handle,
 * struct fsal_obj_handle's obj_ops, type and fsid, fsal_obj_ops' put_ref,
 * and object_file_type_t's DIRECTORY. */
#define RRP_HOST_EXPORT_ROOT_OBJ 0x98
#define RRP_HOST_EXPORT_FSAL_EXPORT 0xc8
#define RRP_HOST_FSAL_EXPORT_CREATE_HANDLE 0x68
#define RRP_HOST_OBJ_OPS 0x20
#define RRP_HOST_OBJ_OPS_PUT_REF 0x8
#define RRP_HOST_OBJ_TYPE 0x60
#define RRP_HOST_OBJ_FSID 0x68
#define RRP_HOST_OBJ_DIRECTORY 7

#endif
