// SPDX-License-Identifier: MIT
/*
 * Host adapter: nfs-ganesha 6.5 with libntirpc 6.3 - what this release does
 * that the shared files ask about (rrp_host.h).
 */
#include "plugin/rrp_host.h"

/*
 * ganesha 6 decodes WRITE data with xdr_io_data: XDR_GETSTARTDATAPOS,
 * IOVCOUNT, FILLBUFS, then SETPOS(GETENDDATAPOS). The first and last exist
 * from ntirpc 6 on. The Call's data is in the stream where the client put
 * it (a Read chunk's sink is one of the decoder's iovecs at the chunk's
 * position), so it starts and ends where the stream says; the decoder
 * answers IOVCOUNT and FILLBUFS in place, and the data ganesha writes is
 * the Read chunk's own buffer (rrp_xdr.c).
 */
static u_int dec_startdatapos(XDR *x, u_int start, u_int len)
{
	(void)x;
	(void)len;
	return start;
}

static u_int dec_enddatapos(XDR *x, u_int start, u_int len)
{
	(void)x;
	return start + len;
}

static void dec_ops(struct xdr_ops *ops)
{
	ops->x_getstartdatapos = dec_startdatapos;
	ops->x_getenddatapos = dec_enddatapos;
}

/* ganesha's NFS rendezvous sets an unref callback (its connection manager
 * and DRC let go of the transport); SVC_DESTROY calls it. */
static bool xp_control(struct xp_ops *ops, u_int rq, void *in)
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
static bool xprt_admitted(SVCXPRT *xprt)
{
	xprt->xp_flags |= SVC_XPRT_FLAG_REMOTE_ADDR_SET;
	return !xprt->xp_dispatch.remote_addr_set_cb ||
	       xprt->xp_dispatch.remote_addr_set_cb(xprt) == XPRT_IDLE;
}

const struct rrp_host_ops rrp_host_ops = {
	.name = "nfs-ganesha 6.5 / libntirpc 6.3",
	/* fsal_read2() allocates every READ buffer (NFSv3 and v4) with plain
	 * gsh_malloc(iov_len), iov_len the count (capped by the export), when
	 * the FSAL does not bring its own. */
	.read_v3 = {.aligned = false, .rndup = false},
	.read_v4 = {.aligned = false, .rndup = false},
	.dec_ops = dec_ops,
	/* xdr_io_data puts a payload whose length is not a multiple of 4 as
	 * the FSAL's buffers less the last len % 4 bytes, then 4 bytes of its
	 * own (the calloc'd room after the uio's vio array). */
	.enc_split_tail = true,
	/* ganesha 6 asks (nfs_rpc_callback.c, nfs41_session_id.c). */
	.bc_client_xprt = true,
	.xp_control = xp_control,
	.xprt_admitted = xprt_admitted,
};
