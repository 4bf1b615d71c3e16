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

/* Everything is captured: read the RDMA block and start serving. */
void rrp_plugin_start(void);
/* NFS_Port from the configuration, to recognise ganesha's NFS listener. */
uint16_t rrp_plugin_nfs_port(void);

#endif
