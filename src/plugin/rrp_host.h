/* SPDX-License-Identifier: MIT */
/*
 * rrp_host.h - what the plugin needs from its host (ganesha and ntirpc), in
 * one place.
 *
 * Captured at run time (struct rrp_host): ganesha exports none of these; the
 * core captures them from two ntirpc calls ganesha makes at start-up
 * (rrp_core.c).
 *
 * Fixed per release: the host adapter, host/ganesha-X.Y/, chosen at
 * configure time from the installed libntirpc (CMake option RPCRDMA_HOST;
 * host/README.md). It is the only place that knows a release:
 *   rrp_host_abi.h   compile-time facts: RRP_HOST_GANESHA_SONAME (the guard),
 *                    and the offsets of ganesha's private structures the
 *                    export checks read (RRP_HOST_OP_CTX_EXPORT ...
 *                    RRP_HOST_OBJ_DIRECTORY, rrp_exports.c)
 *   rrp_host_ops.c   rrp_host_ops, the ops table below: what the shared
 *                    files ask of the release, as ganesha's FSALs give it
 *                    their ops tables
 * No other file names a release (tests/plugin/host_rules_in_adapter.sh).
 */
#ifndef RPCRDMA_RRP_HOST_H
#define RPCRDMA_RRP_HOST_H

#include <stdbool.h>

#include <rpc/svc.h>
#include <rpc/xdr.h>

#include "rrp_host_abi.h"

/* How the host allocates the data buffer of one NFS READ of count bytes
 * (rrp_xprt.c announces it, rrp_payload.c serves it from the arena). */
struct rrp_host_read_alloc {
	bool aligned;	/* posix_memalign(RRP_PAYLOAD_ALIGN, n), else malloc(n) */
	bool rndup;	/* n is count rounded up to 4 bytes, else count */
};

struct rrp_host_ops {
	const char *name;	/* "nfs-ganesha X.Y / libntirpc X.Y", for the logs */

	/* READ buffers: NFSv3 READ's and NFSv4 READ's. */
	struct rrp_host_read_alloc read_v3, read_v4;

	/*
	 * Data by position. dec_ops (may be NULL): adds to the decoder's
	 * xdr_ops the members this ntirpc has beyond the common ones, once,
	 * before any stream opens (rrp_xdr.c). enc_split_tail: the host
	 * encodes a READ payload whose length is not a multiple of 4 as the
	 * FSAL's buffers less the last len % 4 bytes, then a 4-byte buffer of
	 * its own with those bytes and the pad (rrp_xdr.c takes them back).
	 */
	void (*dec_ops)(struct xdr_ops *ops);
	bool enc_split_tail;

	/* Backchannel: ganesha asks a backchannel CLIENT which transport it
	 * is on (clnt_vc_get_client_xprt), so the core answers for its own. */
	bool bc_client_xprt;

	/* Transports: the xp_control requests this ntirpc adds (true if
	 * answered), and the host's verdict on a new transport. NULL: the
	 * release adds no request, and admits every transport. */
	bool (*xp_control)(struct xp_ops *ops, u_int rq, void *in);
	bool (*xprt_admitted)(SVCXPRT *xprt);
};

extern const struct rrp_host_ops rrp_host_ops;

struct rrp_host {
	svc_xprt_alloc_fun_t alloc_cb;		/* alloc_nfs_request */
	svc_xprt_free_fun_t free_cb;		/* free_nfs_request */
	svc_xprt_fun_t nfs_rendezvous;		/* NFS listener: sets process_cb */
	svc_xprt_fun_t free_user_data;		/* nfs_rpc_free_user_data (DRC) */
};

extern struct rrp_host rrp_host;

/* An NFSv3 handle of ganesha's (nfs_fh.h, struct file_handle_v3, the same in
 * every release of host/): a version byte, a flags byte, then the Export_Id
 * in network order. */
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
