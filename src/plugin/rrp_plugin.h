/* SPDX-License-Identifier: MIT */
/*
 * rrp_plugin.h - the ganesha plugin's shared state: configuration, the
 * transport engine(s), and the worker pool that runs ganesha's request
 * processing (which may block in the FSAL, so never on the engine's thread).
 */
#ifndef RPCRDMA_RRP_PLUGIN_H
#define RPCRDMA_RRP_PLUGIN_H

#include <pthread.h>
#include <stdatomic.h>

#include <rpc/svc.h>
#include <rpc/clnt.h>

#include "plugin/rrp_config.h"
#include "plugin/rrp_workq.h"
#include "rpcrdma/rr_xprt.h"


struct rrp_plugin {
	struct rrp_config cfg;
	struct fab_fabric *fab;
	struct rr_server *srv[2];	/* IPv4 (or soft) and IPv6 listeners */
	/* Health (rrp_health): listeners configured, and why one did not start. */
	unsigned int listeners_wanted;
	char start_why[2][RR_HEALTH_WHY_LEN];
	SVCXPRT listener;		/* xp_parent of our transports */
	struct xp_ops listener_ops;

	pthread_t *workers;
	unsigned int nworkers;

	_Atomic uint64_t requests, dropped, replies_failed;
	/* Call bytes ganesha's XDR decoder copied out of our buffers
	 * (XDR_GETBYTES: names, handles - ganesha 4.3 decodes every opaque<>
	 * with xdr_bytes into memory of its own - and WRITE payloads that could
	 * not be lent, rrp_payload.c). */
	_Atomic uint64_t decode_copy_bytes;
	_Atomic uint64_t decode_in_place_bytes;	/* WRITE data decoded in place (lent) */
};

extern struct rrp_plugin rrp;

/*
 * Health for the stats socket: serving while at least one configured
 * listener is up; @why says what is down (a listener that never started -
 * fabric missing, address that cannot bind - or one whose device went
 * away, rr_server_health). JSON-safe: no quote, backslash or control byte.
 */
struct rrp_health {
	bool serving;
	char why[RR_HEALTH_WHY_LEN];
	unsigned int listeners; /* configured */
	unsigned int listeners_serving;
};
void rrp_health(struct rrp_health *out);

/*
 * One line in ganesha's log, under its DISPATCH component at @level (the
 * LOG block's COMPONENTS { DISPATCH = ...; } governs it); to stderr and
 * syslog instead where the process has no ganesha log (rrp_plugin.c).
 */
enum rrp_log_level { RRP_LOG_CRIT, RRP_LOG_WARN, RRP_LOG_EVENT, RRP_LOG_INFO, RRP_LOG_DEBUG };
void rrp_log_at(enum rrp_log_level level, const char *func, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define rrp_log(...) rrp_log_at(RRP_LOG_EVENT, __func__, __VA_ARGS__)
#define rrp_warn(...) rrp_log_at(RRP_LOG_WARN, __func__, __VA_ARGS__)
#define rrp_crit(...) rrp_log_at(RRP_LOG_CRIT, __func__, __VA_ARGS__)

/* The stats socket (rrp_stats.c). */
int rrp_stats_start(const char *path);

/* Upper-layer callbacks given to the engine (rrp_xprt.c). */
extern const struct rr_upper_ops rrp_upper_ops;
/* The worker pool's queue: rrp_queue_work, rrp_queue_fn (rrp_workq.h). */

/* Backchannel (rrp_backchannel.c): is @xprt one of ours? */
struct rrp_xprt;
bool rrp_is_our_xprt(SVCXPRT *xprt);
/* Hooks of the interposed ntirpc client calls (rrp_interpose.h). */
CLIENT *rrp_bc_clnt_vc_ncreate_svc(const SVCXPRT *xprt, const rpcprog_t prog,
				   const rpcvers_t vers, const uint32_t flags);
SVCXPRT *rrp_bc_clnt_vc_get_client_xprt(const CLIENT *clnt);
enum clnt_stat rrp_bc_clnt_req_setup(struct clnt_req *cc, struct timespec timeout);
enum clnt_stat rrp_bc_clnt_req_callback(struct clnt_req *cc);
enum clnt_stat rrp_bc_clnt_req_wait_reply(struct clnt_req *cc);
int rrp_bc_clnt_req_release(struct clnt_req *cc);
/* Engine upcalls for reverse-direction answers, and connection loss. */
void rrp_bc_reply(void *ctx, struct rr_conn *conn, const void *msg, size_t len, uint32_t credits);
void rrp_bc_error(void *ctx, struct rr_conn *conn, uint32_t xid, uint32_t err);
void rrp_bc_conn_down(struct rr_conn *conn);

#endif
