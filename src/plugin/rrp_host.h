/* SPDX-License-Identifier: MIT */
/*
 * rrp_host.h - what the plugin needs from its host (ganesha), in one place.
 *
 * ganesha 4.3 exports none of these; rrp_preload.c captures them at run time
 * by interposing two ntirpc calls ganesha makes at start-up. A ganesha built
 * with a small hook could fill the same structure instead.
 */
#ifndef RPCRDMA_RRP_HOST_H
#define RPCRDMA_RRP_HOST_H

#include <rpc/svc.h>

struct rrp_host {
	svc_xprt_alloc_fun_t alloc_cb;		/* alloc_nfs_request */
	svc_xprt_free_fun_t free_cb;		/* free_nfs_request */
	svc_xprt_fun_t nfs_rendezvous;		/* NFS listener: sets process_cb */
	svc_xprt_fun_t free_user_data;		/* nfs_rpc_free_user_data (DRC) */
};

extern struct rrp_host rrp_host;

/*
 * The little of ganesha 4.3's private layout the export checks read
 * (rrp_exports.c). From its headers, and confirmed in Debian's
 * libganesha_nfsd.so.4.3, whose nfs4_export_check_access reads the same
 * fields at these offsets; rrp_exports.c also checks the pair once at run
 * time against get_gsh_export().
 */
#define RRP_GSH_OP_CTX_EXPORT 0x80	/* struct req_op_context: ctx_export */
#define RRP_GSH_EXPORT_ID 0x1b8		/* struct gsh_export: uint16_t export_id */
/* An NFSv3 handle of ganesha's (nfs_fh.h, struct file_handle_v3): a version
 * byte, a flags byte, then the Export_Id in network order. */
#define RRP_GSH_FH_VERSION 0x43
#define RRP_GSH_FH3_EXPORT_AT 2
#define RRP_GSH_FH3_MIN 5		/* up to fs_len; the FSAL's bytes follow */

/* Everything is captured: read the RDMA block and start serving. */
void rrp_plugin_start(void);
/* NFS_Port from the configuration, to recognise ganesha's NFS listener. */
uint16_t rrp_plugin_nfs_port(void);

#endif
