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

	/* The plugin's counters (rr_counters.def, RRP_COUNTERS). Among them
	 * decode_copy_bytes: Call bytes ganesha's XDR decoder copied out of
	 * our buffers (XDR_GETBYTES: names, handles - ganesha decodes
	 * every opaque<> with xdr_bytes into memory of its own - and WRITE
	 * payloads that could not be lent, rrp_payload.c). */
#define RRP_COUNTER_MEMBER_(a, name, type, scope, kind, meaning) _Atomic type name;
	RRP_COUNTERS(RRP_COUNTER_MEMBER_, ~)
#undef RRP_COUNTER_MEMBER_

	/* What the stats socket shows as served: each listener's address and
	 * the engine settings it was started with (start_server). */
	char listen[2][192];
	struct rr_config eff[2];
	struct rr_served served[2];	/* device, credit cap, memory bounds */
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

/* RLIMIT_MEMLOCK (rrp_memlock.c; raised by rrp_memlock.h's rrp_memlock_raise
 * before anything is registered): the limit the listener @sv's registrations meet
 * (UINT64_MAX where none binds); and the one line when the settings do not
 * fit it: @served the smaller settings served, or NULL when nothing fits. */
uint64_t rrp_memlock_limit(const struct rr_served *sv, bool soft);
void rrp_memlock_say(const char *addr, const char *device, uint64_t limit, uint64_t need,
		     uint64_t least, const char *served);

/* The stats socket (rrp_stats.c). */
int rrp_stats_start(const char *path);

/*
 * What the plugin learns per connection from the Calls it passes to
 * ganesha, for rpcrdma-stat's per-client view (rrp_xprt.c records it,
 * rrp_stats.c reads it by peer). Written by workers, read by the stats
 * thread: relaxed atomics, each value on its own.
 */
#define RRP_NFS_VERS(major, minor) ((major) << 8 | (minor))
struct rrp_client {
	uintptr_t conn_id;		/* rr_conn_id: joins rr_conn_snap */
	char peer[RR_CONN_PEER_MAX];
	_Atomic uint32_t nfs;		/* RRP_NFS_VERS + 1 of the last NFS Call; 0: none yet */
	_Atomic uint64_t clientid;	/* NFSv4.1+: from SEQUENCE's sessionid; 0: unknown */
#define RRP_CLIENT_MEMBER_(a, name, type, scope, kind, meaning) _Atomic type name;
	RRP_CONN_COUNTERS(RRP_CLIENT_MEMBER_, ~)
#undef RRP_CLIENT_MEMBER_
	struct rrp_client *next;	/* the list rrp_clients_snapshot walks */
};
/* Listed while the connection is up (conn_up .. conn_down). */
void rrp_client_list(struct rrp_client *cl);
void rrp_client_unlist(struct rrp_client *cl);
/* A copy of every listed client (peer and values), freed by the caller;
 * returns how many, or -ENOMEM. */
struct rrp_client_snap {
	uintptr_t conn_id;
	char peer[RR_CONN_PEER_MAX];
	uint32_t nfs;
	uint64_t clientid;
#define RRP_CLIENT_SNAP_MEMBER_(a, name, type, scope, kind, meaning) type name;
	RRP_CONN_COUNTERS(RRP_CLIENT_SNAP_MEMBER_, ~)
#undef RRP_CLIENT_SNAP_MEMBER_
};
long rrp_clients_snapshot(struct rrp_client_snap **out);

/* Upper-layer callbacks given to the engine (rrp_xprt.c). */
extern const struct rr_upper_ops rrp_upper_ops;
/* The worker pool's queue: rrp_queue_work, rrp_queue_fn (rrp_workq.h). */

/* Backchannel (rrp_backchannel.c): is @xprt one of ours? */
struct rrp_xprt;
bool rrp_is_our_xprt(SVCXPRT *xprt);
/* Hook of ntirpc's svc_resume() (rrp_interpose.h): a suspended Call of ours
 * resumes with the export checks armed (rrp_xprt.c). */
void rrp_xprt_svc_resume(struct svc_req *req);
/* Its connection, NULL once down; read and cleared under the backchannel's
 * lock only (rrp_bc_conn_down clears it). */
struct rr_conn *rrp_xprt_conn(SVCXPRT *xprt);
void rrp_xprt_forget_conn(SVCXPRT *xprt);
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
void rrp_bc_conn_down(SVCXPRT *xprt, struct rr_conn *conn);

#endif
