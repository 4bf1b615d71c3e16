/* SPDX-License-Identifier: MIT */
/*
 * Host adapter: nfs-ganesha 6.5 with libntirpc 6.3 (Debian 13, Ubuntu 25.10
 * and 26.04). Everything the plugin knows of this release that another one
 * changes; the interface is documented in rrp_host.h, how to add a release
 * in src/plugin/README.md.
 */
#ifndef RPCRDMA_RRP_HOST_ABI_H
#define RPCRDMA_RRP_HOST_ABI_H

#define RRP_HOST_NAME "nfs-ganesha 6.5 / libntirpc 6.3"
#define RRP_HOST_GANESHA_SONAME "libganesha_nfsd.so.6.5"

/* struct req_op_context's ctx_export and struct gsh_export's export_id, read
 * off Debian's 6.5 library (clear_op_context_export, get_gsh_export);
 * checked at run time, rrp_exports.c. */
#define RRP_HOST_OP_CTX_EXPORT 0x80
#define RRP_HOST_EXPORT_ID 0x1c0

/* What the export checks read of the object a handle resolves to
 * (rrp_exports.c; read off Debian's 6.5 library: nfs_export_get_root_entry,
 * set_op_context_export and the wire_to_host / create_handle calls through
 * exp_ops, the same as 4.3's; checked at run time): struct gsh_export's
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

/* fsal_read2() allocates every READ buffer (NFSv3 and v4) with plain
 * gsh_malloc(count) when the FSAL does not bring its own: the plugin says
 * when one is coming (rrp_payload_expect) for v4 as for v3. */
#define RRP_HOST_V4_READ_BY_MALLOC 1

/* ganesha 6 decodes WRITE data with xdr_io_data: XDR_GETSTARTDATAPOS,
 * IOVCOUNT, FILLBUFS, then SETPOS(GETENDDATAPOS). The first and last exist
 * from ntirpc 6 on; the decoder answers all four in place, so the data
 * ganesha writes is the Read chunk's own buffer (rrp_xdr.c). */
#define RRP_HOST_XDR_DEC_EXTRA_OPS                                                            \
	.x_getstartdatapos = rrp_xdr_dec_startdatapos, .x_getenddatapos = rrp_xdr_dec_enddatapos,

/* ganesha's NFS rendezvous sets an unref callback (its connection manager
 * and DRC let go of the transport); SVC_DESTROY calls it. */
static inline bool rrp_host_xp_control(struct xp_ops *ops, u_int rq, void *in)
{
	switch (rq) {
	case SVCGET_XP_UNREF_USER_DATA:
		*(svc_xprt_void_fun_t *)in = ops->xp_unref_user_data;
		return true;
	case SVCSET_XP_UNREF_USER_DATA:
		/* the function itself is passed (as for SVCSET_XP_FREE_USER_DATA) */
		ops->xp_unref_user_data = (svc_xprt_void_fun_t)in;
		return true;
	default:
		return false;
	}
}

/* ntirpc tells ganesha once a TCP peer's address is final (after a proxy
 * header); ours is final at connect. ganesha's connection manager may
 * refuse the client there. */
static inline bool rrp_host_xprt_admitted(SVCXPRT *xprt)
{
	xprt->xp_flags |= SVC_XPRT_FLAG_REMOTE_ADDR_SET;
	return !xprt->xp_dispatch.remote_addr_set_cb ||
	       xprt->xp_dispatch.remote_addr_set_cb(xprt) == XPRT_IDLE;
}

#endif
