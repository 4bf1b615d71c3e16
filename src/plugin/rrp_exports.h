/* SPDX-License-Identifier: MIT */
/*
 * rrp_exports.h - exports kept off RDMA (RDMA { Exclude_Exports }).
 */
#ifndef RPCRDMA_RRP_EXPORTS_H
#define RPCRDMA_RRP_EXPORTS_H

#include <stdbool.h>
#include <stdint.h>

#include <rpc/rpc.h>

#include "plugin/rrp_xdr.h"

/*
 * An NFSv3 (or NFSACL) Call whose file handle names an excluded export:
 * true, with its Export_Id in @id. @dec is positioned at the arguments and
 * left there.
 */
bool rrp_exports_v3_refused(struct rrp_xdr_dec *dec, const struct rpc_msg *msg, uint16_t *id);

/*
 * What the export checks keep of one Call of ours, in its request
 * (rrp_xprt.c): ganesha may suspend a Call (an asynchronous FSAL's I/O, a
 * retransmission waiting for its original) and run the rest of it on
 * another thread, which is checked as the first part was.
 */
struct rrp_exports_call {
	SVCXPRT *xprt;
	bool v3_lookup; /* ganesha's lookup of an NFSv3 Call's export is to come */
};

/*
 * Around each part of Call @c that runs on this thread: ganesha's dispatch
 * of it (begin: from @xprt, as @msg), and each resume (resume). Meanwhile
 * the objects its handles resolve to are checked, and for an NFSv3 or
 * NFSACL Call the first export ganesha looks up for it (by the handle's
 * Export_Id, after RPCSEC_GSS unwrapping) is refused if excluded. Both
 * return what end puts back.
 */
struct rrp_exports_call *rrp_exports_dispatch_begin(struct rrp_exports_call *c, SVCXPRT *xprt,
						    const struct rpc_msg *msg);
struct rrp_exports_call *rrp_exports_resume_begin(struct rrp_exports_call *c);
void rrp_exports_dispatch_end(struct rrp_exports_call *prev);

/* Hooks of ganesha's get_gsh_export() and nfs4_export_check_access()
 * (rrp_interpose.h). */
void *rrp_exports_get_gsh_export(uint16_t id);
int rrp_exports_check_access(struct svc_req *req);

/* rrp_xprt.c: one log line per connection for its first refusal. */
void rrp_xprt_note_refused(SVCXPRT *xprt, uint16_t id, const char *what);
void rrp_xprt_note_refused_handle(SVCXPRT *xprt, uint16_t id, const char *why);

/* Read the excluded exports' file systems again at the next check (after a
 * reload). */
void rrp_exports_refresh(void);
/* At start-up: read them, and name the exports that share one (logged). */
void rrp_exports_start(void);

#endif
