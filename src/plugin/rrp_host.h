/* SPDX-License-Identifier: MIT */
/*
 * rrp_host.h - what the plugin needs from its host (ganesha and ntirpc), in
 * one place.
 *
 * Captured at run time: ganesha exports none of these; the core captures
 * them from two ntirpc calls ganesha makes at start-up (rrp_core.c).
 *
 * Fixed per release: host/ganesha-X.Y/rrp_host_abi.h, the host adapter,
 * chosen at configure time from the installed libntirpc (CMake option
 * RPCRDMA_HOST). It is the only place that knows a release; it provides:
 *   RRP_HOST_NAME, RRP_HOST_GANESHA_SONAME  the release, for the guard
 *   RRP_HOST_OP_CTX_EXPORT, RRP_HOST_EXPORT_ID  ganesha's private layout the
 *                                     export checks read (rrp_exports.c)
 *   RRP_HOST_EXPORT_ROOT_OBJ ... RRP_HOST_OBJ_DIRECTORY  the export, FSAL
 *                                     export and object members the check
 *                                     of a resolved handle reads
 *   RRP_HOST_V4_READ_BY_MALLOC        NFSv4 READ buffers come from malloc,
 *                                     not posix_memalign (rrp_payload.c)
 *   RRP_HOST_XDR_DEC_EXTRA_OPS        xdr_ops members this ntirpc adds
 *   rrp_host_xp_control()             xp_control requests it adds
 *   rrp_host_xprt_admitted()          ganesha's verdict on a new transport
 */
#ifndef RPCRDMA_RRP_HOST_H
#define RPCRDMA_RRP_HOST_H

#include <stdbool.h>

#include <rpc/svc.h>
#include <rpc/xdr.h>

/* Decoder calls an adapter may wire into its xdr_ops (rrp_xdr.c). */
u_int rrp_xdr_dec_startdatapos(XDR *xdrs, u_int start, u_int len);
u_int rrp_xdr_dec_enddatapos(XDR *xdrs, u_int start, u_int len);

#include "rrp_host_abi.h"

struct rrp_host {
	svc_xprt_alloc_fun_t alloc_cb;		/* alloc_nfs_request */
	svc_xprt_free_fun_t free_cb;		/* free_nfs_request */
	svc_xprt_fun_t nfs_rendezvous;		/* NFS listener: sets process_cb */
	svc_xprt_fun_t free_user_data;		/* nfs_rpc_free_user_data (DRC) */
};

extern struct rrp_host rrp_host;

/* An NFSv3 handle of ganesha's (nfs_fh.h, struct file_handle_v3, the same in
 * 4.3 to 6.5): a version byte, a flags byte, then the Export_Id in network
 * order. */
#define RRP_GSH_FH_VERSION 0x43
#define RRP_GSH_FH3_EXPORT_AT 2
#define RRP_GSH_FH3_MIN 5		/* up to fs_len; the FSAL's bytes follow */

/* Everything is captured: read the RDMA block and start serving. */
void rrp_plugin_start(void);
/* ganesha's parsed configuration, at start-up and at each reload
 * (read_log_config's arguments: config_file_t, struct config_error_type *). */
void rrp_plugin_config_tree(void *tree, void *ganesha_err);
/* NFS_Port from the configuration, to recognise ganesha's NFS listener. */
uint16_t rrp_plugin_nfs_port(void);

#endif
