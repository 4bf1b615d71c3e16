/* SPDX-License-Identifier: MIT */
/* rrp_bc_probe.c: the backchannel (src/plugin/rrp_backchannel.c) driven as
 * ganesha and the transport drive it, for test_rrp_backchannel.cc, with the
 * transport's side stood in for: one xprt, one connection. */
#ifndef RPCRDMA_RRP_BC_PROBE_H
#define RPCRDMA_RRP_BC_PROBE_H

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

#ifdef __cplusplus
}
#endif
#endif
