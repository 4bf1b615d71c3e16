/* SPDX-License-Identifier: MIT */
/*
 * Host adapter: nfs-ganesha 5.9 with libntirpc 5.8 (Debian 12 bookworm-backports).
 * Everything the plugin knows of this release that another one changes;
 * the interface is documented in rrp_host.h, how to add a release in
 * src/plugin/README.md.
 */
#ifndef RPCRDMA_RRP_HOST_ABI_H
#define RPCRDMA_RRP_HOST_ABI_H

#define RRP_HOST_NAME "nfs-ganesha 5.9 / libntirpc 5.8"
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

/* NFSv4 READ buffers: posix_memalign(4096, RNDUP(count)); NFSv3's come from
 * malloc. The plugin announces either kind (rrp_payload.c). */
#define RRP_HOST_V4_READ_BY_MALLOC 0

/* xdr_ops has no data-position calls: WRITE data is decoded by xdr_bytes
 * into a malloc'd buffer, which the plugin lends (rrp_payload.c). */
#define RRP_HOST_XDR_DEC_EXTRA_OPS

/* xp_ops has nothing beyond what rrp_xprt.c sets. */
static inline bool rrp_host_xp_control(struct xp_ops *ops, u_int rq, void *in)
{
	(void)ops;
	(void)rq;
	(void)in;
	return false;
}

/* No remote-address callback: a connection is ganesha's once rendezvous ran. */
static inline bool rrp_host_xprt_admitted(SVCXPRT *xprt)
{
	(void)xprt;
	return true;
}

#endif
