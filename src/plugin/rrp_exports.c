// SPDX-License-Identifier: MIT
/*
 * rrp_exports.c - exports kept off RDMA: RDMA { Exclude_Exports = 2, 3; }.
 *
 * ganesha 4.3 cannot say this itself: its EXPORT/CLIENT `Transports` takes
 * only UDP and TCP, and the transport checks in its NFSv3 dispatcher and in
 * nfs4_export_check_access() refuse only those two types, so any other
 * transport type (ours is XPRT_UNKNOWN, rrp_xprt.c) passes them. The plugin
 * refuses at the same two places, with the answers ganesha gives a client
 * whose transport an export does not allow:
 *  - NFSv3 (and NFSACL): every Call but NULL begins with a file handle, and
 *    ganesha takes the Call's export from that handle's Export_Id before
 *    anything runs; a Call naming an excluded export is answered AUTH_ERROR
 *    / AUTH_FAILED here, before ganesha sees it. MOUNT is not served over
 *    RDMA at all (ganesha's NFS dispatcher answers PROG_UNAVAIL), so an
 *    RDMA client mounts over TCP and is refused at its first NFS call.
 *    RPCSEC_GSS Calls, whose arguments may be wrapped, are left to ganesha's
 *    own lookup of that export, get_gsh_export() (hooked below): it finds
 *    no export for them, and ganesha answers NFS3ERR_STALE.
 *  - NFSv4: every way into an export - PUTFH, PUTROOTFH, a LOOKUP or LOOKUPP
 *    across a junction, READDIR's junction entries, SECINFO - goes through
 *    nfs4_export_check_access(), which libganesha_nfsd exports for its FSALs
 *    and calls through its PLT, so the preloaded definition receives those
 *    calls (rrp_preload.c) and hands them to the hook below. It runs
 *    ganesha's check, then answers NFS4ERR_ACCESS for an excluded export
 *    when the request came over RDMA; ganesha turns that into
 *    NFS4ERR_NOENT on LOOKUP and leaves the entry out of READDIR, as for an
 *    export a client may not see.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "plugin/rrp_exports.h"
#include "plugin/rrp_host.h"
#include "plugin/rrp_interpose.h"
#include "plugin/rrp_plugin.h"
#include "ulb/ulb_nfs.h"

/* nfsstat4 (RFC 8881 section 15.1) */
#define RRP_NFS4ERR_ACCESS 13

/* The last procedure of each program ganesha reads a handle from (RFC 1813). */
#define RRP_NFS3_PROC_LAST 21	/* COMMIT */
#define RRP_NFSACL3_PROC_LAST 2 /* SETACL */

/* A Call ganesha's dispatcher takes a file handle's export for. */
static bool names_export(const struct rpc_msg *msg)
{
	if (!rrp.cfg.n_exclude_exports || msg->cb_vers != 3 || msg->cb_proc == 0)
		return false;
	return (msg->cb_prog == ULB_PROG_NFS && msg->cb_proc <= RRP_NFS3_PROC_LAST) ||
	       (msg->cb_prog == ULB_PROG_NFSACL && msg->cb_proc <= RRP_NFSACL3_PROC_LAST);
}

bool rrp_exports_v3_refused(struct rrp_xdr_dec *dec, const struct rpc_msg *msg, uint16_t *id)
{
	XDR *xdrs = &dec->xdrs;
	uint64_t copied = dec->copied;
	uint32_t len, word;
	u_int pos;
	bool ok;

	if (!names_export(msg) || msg->cb_cred.oa_flavor == RPCSEC_GSS)
		return false;
	/* Peek at nfs_fh3's length and first word; the stream is put back. */
	pos = XDR_GETPOS(xdrs);
	ok = XDR_GETUINT32(xdrs, &len) && len >= RRP_GSH_FH3_MIN && len <= ULB_NFS3_FHSIZE &&
	     XDR_GETUINT32(xdrs, &word);
	XDR_SETPOS(xdrs, pos);
	dec->copied = copied;
	/* Not ganesha's handle: ganesha answers NFS3ERR_BADHANDLE itself. */
	if (!ok || word >> 24 != RRP_GSH_FH_VERSION)
		return false;
	*id = (uint16_t)(word & 0xffff); /* bytes 2..3, network order */
	return rrp_config_export_excluded(&rrp.cfg, *id);
}

/* The transport of the NFSv3 Call this thread hands to ganesha, until its
 * export is looked up; NULL otherwise. */
static _Thread_local SVCXPRT *v3_dispatch __attribute__((tls_model("initial-exec")));

void rrp_exports_dispatch_begin(SVCXPRT *xprt, const struct rpc_msg *msg)
{
	v3_dispatch = names_export(msg) ? xprt : NULL;
}

void rrp_exports_dispatch_end(void)
{
	v3_dispatch = NULL;
}

/*
 * Hook of libganesha_nfsd's struct gsh_export *get_gsh_export(uint16_t),
 * which it calls through its PLT (interposed by rrp_preload.c). The NFSv3
 * dispatcher's lookup of the Call's export is the first call during an
 * armed dispatch; later ones (and every other thread's) pass through.
 */
void *rrp_exports_get_gsh_export(uint16_t id)
{
	SVCXPRT *xprt = v3_dispatch;

	if (xprt) {
		v3_dispatch = NULL;
		if (rrp_config_export_excluded(&rrp.cfg, id)) {
			rrp_xprt_note_refused(xprt, id, "NFSv3");
			return NULL;
		}
	}
	return rrp_real->get_gsh_export(id);
}

/* ---- NFSv4: ganesha's export check, interposed ------------------------ */

/* This thread's ganesha op_ctx (a TLS pointer of libganesha_nfsd). */
static void *op_ctx_now(void)
{
	static _Thread_local void **slot __attribute__((tls_model("initial-exec")));

	if (!slot)
		slot = dlsym(RTLD_DEFAULT, "op_ctx"); /* this thread's instance */
	return slot ? *slot : NULL;
}

enum layout { LAYOUT_UNKNOWN, LAYOUT_OK, LAYOUT_BAD };

/*
 * The offsets of rrp_host.h, checked once: the export op_ctx names must be
 * the one get_gsh_export() finds by the Export_Id read from it. An export
 * removed meanwhile leaves the question open for the next call.
 */
static enum layout layout_check(void *exp, uint16_t id)
{
	void *found;

	if (!rrp_real->get_gsh_export || !rrp_real->put_gsh_export)
		return LAYOUT_BAD;
	found = rrp_real->get_gsh_export(id);
	if (!found)
		return LAYOUT_UNKNOWN;
	rrp_real->put_gsh_export(found, false, (char *)__FILE__, __LINE__, (char *)__func__);
	return found == exp ? LAYOUT_OK : LAYOUT_BAD;
}

/*
 * May the current NFSv4 request, which came over RDMA, enter the export
 * ganesha's op_ctx names? Not when it is excluded, nor when the layout
 * cannot be trusted (refused rather than let an excluded export through).
 */
static bool v4_export_allowed(SVCXPRT *xprt)
{
	static _Atomic int layout = LAYOUT_UNKNOWN;
	static atomic_flag bad_logged = ATOMIC_FLAG_INIT;
	uint8_t *ctx = op_ctx_now();
	uint8_t *exp;
	uint16_t id;
	int l;

	if (!ctx)
		return false;
	memcpy(&exp, ctx + RRP_HOST_OP_CTX_EXPORT, sizeof(exp));
	if (!exp)
		return false;
	memcpy(&id, exp + RRP_HOST_EXPORT_ID, sizeof(id));
	l = atomic_load_explicit(&layout, memory_order_relaxed);
	if (l == LAYOUT_UNKNOWN) {
		l = layout_check(exp, id);
		if (l != LAYOUT_UNKNOWN)
			atomic_store_explicit(&layout, l, memory_order_relaxed);
	}
	if (l == LAYOUT_BAD) {
		if (!atomic_flag_test_and_set(&bad_logged))
			rrp_log("ganesha's export structures are not those of %s: with "
				"Exclude_Exports set, NFSv4 over RDMA is refused every export",
				RRP_HOST_NAME);
		return false;
	}
	if (l == LAYOUT_UNKNOWN)
		return false;
	if (rrp_config_export_excluded(&rrp.cfg, id)) {
		rrp_xprt_note_refused(xprt, id, "NFSv4");
		return false;
	}
	return true;
}

/* Hook of libganesha_nfsd's nfsstat4 nfs4_export_check_access(struct
 * svc_req *), interposed by rrp_preload.c. */
int rrp_exports_check_access(struct svc_req *req)
{
	/* ganesha's check first: it sets op_ctx's permissions and credentials. */
	int st = rrp_real->nfs4_export_check_access(req);

	if (!rrp.cfg.n_exclude_exports || !req || !rrp_is_our_xprt(req->rq_xprt))
		return st;
	return v4_export_allowed(req->rq_xprt) ? st : RRP_NFS4ERR_ACCESS;
}
