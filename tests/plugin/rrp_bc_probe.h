/* SPDX-License-Identifier: MIT */
/* rrp_bc_probe.c: the backchannel (src/plugin/rrp_backchannel.c) driven as
 * ganesha and the transport drive it, for test_rrp_backchannel.cc, with the
 * transport's side stood in for: one xprt, one connection. */
#ifndef RPCRDMA_RRP_BC_PROBE_H
#define RPCRDMA_RRP_BC_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct bc_probe;

/* An xprt of ours with a live connection. */
struct bc_probe *bc_probe_new(void);
void bc_probe_free(struct bc_probe *p);
/* Called by the transport's rrp_xprt_conn() right after it read the
 * connection for the backchannel: where a test forces an interleaving. */
void bc_probe_on_conn_read(struct bc_probe *p, void (*fn)(void *arg), void *arg);
/* ganesha's clnt_vc_ncreate_svc() on the xprt: the CLIENT, NULL on failure. */
void *bc_probe_create(struct bc_probe *p);
/* The transport's conn_down, then the connection freed (as the engine
 * frees it once conn_down returned). */
void bc_probe_conn_down(struct bc_probe *p);
/* One callback through the CLIENT as ganesha sends it (clnt_req_setup,
 * clnt_req_callback, clnt_req_release): its clnt_stat. */
int bc_probe_callback(void *clnt);
/* CLNT_RELEASE of ganesha's reference: destroys the CLIENT. */
void bc_probe_release(void *clnt);
/* Sends the engine was asked for: all, and those on a freed connection. */
unsigned int bc_probe_sends(const struct bc_probe *p);
unsigned int bc_probe_sends_after_free(const struct bc_probe *p);
/* The xprt's references (1: the test's own, every CLIENT let go). */
int bc_probe_xprt_refs(const struct bc_probe *p);

/* ---- the engine's outstanding XIDs (src/rpcrdma/rr_backchannel.c) ----- */
#define BC_PROBE_MAX_OUT 64
/* While @full, every send answers -EAGAIN (the client's grant in use). */
void bc_probe_set_grant_full(struct bc_probe *p, bool full);
/* The XID of the engine's last send asked for, whatever its answer. */
uint32_t bc_probe_last_xid(struct bc_probe *p);
unsigned int bc_probe_outstanding(struct bc_probe *p);
bool bc_probe_is_outstanding(struct bc_probe *p, uint32_t xid);
/* Up to @max of the outstanding XIDs; how many. */
unsigned int bc_probe_outstanding_xids(struct bc_probe *p, uint32_t *xids, unsigned int max);
unsigned int bc_probe_eagains(const struct bc_probe *p);
/* rr_conn_bc_abandon calls that gave a credit back, and those that found
 * the XID no longer outstanding. */
unsigned int bc_probe_abandons(const struct bc_probe *p);
unsigned int bc_probe_abandons_missed(const struct bc_probe *p);
/* The client's Reply to @xid as the engine takes it: handed up (true) only
 * while @xid is outstanding, else dropped and counted. */
bool bc_probe_reply(struct bc_probe *p, uint32_t xid);
unsigned int bc_probe_answers_dropped(const struct bc_probe *p);
/* A Reply to @xid handed up whatever the engine's set says (as an engine
 * that delivers every reverse-direction Reply would). */
void bc_probe_reply_unchecked(struct bc_probe *p, uint32_t xid);

/* ---- ganesha's side: nfs_rpc_call and its completion ------------------ */
struct bc_probe_call;
/* A call record of ganesha's (an rpc_call_t), owned by the probe. */
struct bc_probe_call *bc_probe_call_new(struct bc_probe *p);
/* Send it as nfs_rpc_call does (clnt_req_fill, clnt_req_setup, cc_process_cb
 * set, CLNT_CALL_BACK) with @timeout_ms; on an error return the probe
 * completes it as ganesha's caller does. Blocks as long as CLNT_CALL_BACK
 * does; returns what it returned. */
int bc_probe_call_back(struct bc_probe_call *c, void *clnt, int timeout_ms);
/* What CLNT_CALL_BACK returned (-1 until it did). */
int bc_probe_call_send_status(const struct bc_probe_call *c);
/* The clnt_stat of its first completion (-1 until completed). */
int bc_probe_call_result(const struct bc_probe_call *c);
/* Completions: cc_process_cb runs plus an error return of CLNT_CALL_BACK
 * (ganesha frees the call at each: must be 1), and its frees. */
unsigned int bc_probe_call_completions(const struct bc_probe_call *c);
unsigned int bc_probe_call_frees(const struct bc_probe_call *c);

#ifdef __cplusplus
}
#endif
#endif
