// SPDX-License-Identifier: MIT
/*
 * Host adapter: nfs-ganesha 4.3 with libntirpc 4.3 - what this release does
 * that the shared files ask about (rrp_host.h).
 */
#include "plugin/rrp_host.h"

const struct rrp_host_ops rrp_host_ops = {
	.name = "nfs-ganesha 4.3 / libntirpc 4.3",
	/* nfs3_read.c: gsh_malloc(RNDUP(count)); nfs4_op_read.c:
	 * gsh_malloc_aligned(4096, RNDUP(count)), freed by the READ uio's
	 * release. */
	.read_v3 = {.aligned = false, .rndup = true},
	.read_v4 = {.aligned = true, .rndup = true},
	/* xdr_ops has no data-position calls: WRITE data is decoded by
	 * xdr_bytes into a malloc'd buffer, which the plugin lends
	 * (rrp_payload.c); READ data goes by xdr_putbufs, buffers whole. */
	.dec_ops = NULL,
	.enc_split_tail = false,
	/* ntirpc 4.3 has no clnt_vc_get_client_xprt. */
	.bc_client_xprt = false,
	/* xp_ops has nothing beyond what rrp_xprt.c sets, and no
	 * remote-address callback: a connection is ganesha's once rendezvous
	 * ran. */
	.xp_control = NULL,
	.xprt_admitted = NULL,
};
