/* SPDX-License-Identifier: MIT */
/*
 * rr_xprt.h - the RPC-over-RDMA v1 transport engine (responder side).
 *
 * The engine listens on a fabric address, accepts connections the way the
 * Linux NFS/RDMA client expects (RFC 8797 private data, credits, RNR retry 0),
 * turns every received message into a complete RPC Call (pulling Read chunks
 * by RDMA Read), hands it up through struct rr_upper_ops, and sends the upper
 * layer's Reply back: payload spans by RDMA Write into Write chunks, the rest
 * inline or through the Reply chunk. Header faults are answered with
 * RDMA_ERROR without disconnecting. It knows RPC framing, nothing of NFS.
 *
 * Threads: rr_server_start() runs one event thread that handles connection
 * management and completions. Upper-layer callbacks run on it and must not
 * block; rr_reply() and rr_call_release() may be called from any thread,
 * including threads that change their credentials (every fabric call is
 * made on the event thread, whose credentials never change: the uverbs
 * write() commands refuse a caller whose credentials differ from the
 * opener's).
 */
#ifndef RPCRDMA_RR_XPRT_H
#define RPCRDMA_RR_XPRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "rpcrdma/rr_counters.def"
#include "rpcrdma/rr_hdr.h"
#include "rpcrdma/rr_reply.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fab_fabric;
struct rr_server;
struct rr_conn;

#define RR_MAX_CREDITS 16384		/* Credits' upper bound, on any device */
/* inline_size's bounds: the Linux client's sysctl range
 * (docs/linux-client-wire.md) */
#define RR_MIN_INLINE 1024
#define RR_MAX_INLINE 65536
/* bc_credits' upper bound: reverse-direction calls outstanding at once on a
 * connection, each XID tracked until answered or abandoned (rr_conn_bc_send) */
#define RR_MAX_BC_CREDITS 16

struct rr_config {
	uint32_t credits;		/* forward-channel grant, 1..RR_MAX_CREDITS (Credits) */
	uint32_t bc_credits;		/* receives reserved for backchannel replies,
					 * 0..RR_MAX_BC_CREDITS (0: as 1) */
	uint32_t recv_batch;		/* extra receives beyond credits + bc_credits */
	uint32_t inline_size;		/* our receive buffer and largest inline Send */
	/*
	 * Registered bytes for all connections together (Receive_Memory_Budget):
	 * every connection's receive and send buffers and the shared receive
	 * pool, whole pages as registered. 0: none. rr_config_default derives
	 * it from the machine (rr_mem_budget_default).
	 */
	uint64_t recv_mem_budget;
	uint8_t max_ord;		/* cap on RDMA Reads in flight per connection */
	/* 0 (the default): what the budget holds of idle connections
	 * (rr_max_conns_for_budget), decided when the server is made. */
	uint32_t max_conns;
	uint32_t max_conns_per_peer;	/* per peer address prefix; 0: no cap */
	/* Bits of a peer's address that name the peer for that cap
	 * (Peer_Prefix_V4, Peer_Prefix_V6); 0: every address one peer. */
	uint8_t peer_prefix_v4;		/* 0..32 */
	uint8_t peer_prefix_v6;		/* 0..128 */
	/* Seconds from the accept to the connection's first message (a
	 * connection that never completes its handshake included); 0: none. */
	uint32_t handshake_timeout;
	/* Seconds without a message that counts (a Call, an answer to a
	 * callback: nothing dropped or refused) or a call in progress; 0: none. */
	uint32_t idle_timeout;
	/* Seconds a signalled Send may go without a completion (a peer with
	 * no receive posted keeps it in RNR retry); 0: none. */
	uint32_t send_timeout;
	/*
	 * Shared receive queue (Use_SRQ): receives come from a pool per event
	 * thread and device instead of 2 x credits + bc_credits + recv_batch
	 * buffers per connection. Each pool starts at RR_SRQ_START buffers,
	 * grows to one client's window (credits + bc_credits + recv_batch) when
	 * the device's first client connects, and doubles whenever fewer than
	 * a quarter of them were left posted, up to srq_depth (0:
	 * RR_SRQ_DEFAULT_DEPTH); all of them never above the budget.
	 */
	bool use_srq;
	uint32_t srq_depth;		/* 0 or RR_SRQ_MIN_DEPTH..RR_SRQ_MAX_DEPTH (SRQ_Depth) */
	/*
	 * Bytes one device's Read sink pool may register; 0: its default shape
	 * (docs/memory.md). The shared part and the small classes shrink to fit,
	 * never below every connection's reserve and, for one connection, a
	 * whole Call's chunks (rr_big_bound_bytes says what it came to). For a
	 * registered-memory limit (the plugin's RLIMIT_MEMLOCK fit); a Read that
	 * finds no sink waits for one, as it does at the default bound.
	 */
	uint64_t sink_mem_max;
	/*
	 * Bytes the Read sinks of one device may register (Read_Sink_Budget),
	 * divided among the event threads, never below one whole Call's
	 * chunks a thread; 0: no bound but the pools' shape. The data of Read
	 * chunks (NFS WRITE payloads, Long Calls) waits in its sinks for the
	 * upper layer's workers, so a burst from many connections would
	 * otherwise pin up to every connection's reserve. A Call whose sinks
	 * do not fit waits, holding none, until sinks come back or idle slabs
	 * are given back; a Reply's bounce buffers are not counted (they are
	 * held only until the Send completes). rr_config_default: an eighth
	 * of physical memory, as recv_mem_budget.
	 */
	uint64_t sink_budget;
	/*
	 * Event threads (Event_Threads): connections are spread over this
	 * many, each with its own epoll, completions, send queues and sink
	 * pool (docs/threading.md). rr_config_default takes it from the cores
	 * (rr_event_threads_default).
	 */
	uint32_t event_threads;
	struct rr_hdr_limits limits;
};

#define RR_MAX_EVENT_THREADS 64
/* Default Event_Threads: half the cores this process may run on, 1 to 4
 * (docs/threading.md says why). */
uint32_t rr_event_threads_default(void);

#define RR_SRQ_START 4		/* receives registered when the first client connects */
#define RR_SRQ_MIN_DEPTH 32
#define RR_SRQ_DEFAULT_DEPTH 1024
#define RR_SRQ_MAX_DEPTH 65536

#define RR_MAX_TIMEOUT 86400		/* seconds: the timeouts' upper bound */

/* The defaults, each with its reason (the plugin's keys take theirs from
 * here: docs/configuration.md). */
void rr_config_default(struct rr_config *cfg);
/*
 * Default Receive_Memory_Budget: an eighth of physical memory, and where the
 * process is bound by RLIMIT_MEMLOCK (a finite limit and no CAP_IPC_LOCK)
 * no more than half of that limit, the rest being the READ payload pool's
 * and the Read sinks' (registrations past the limit fail).
 */
uint64_t rr_mem_budget_default(void);

/*
 * Max_Connections when it is not set (0): Receive_Memory_Budget, less the
 * shared receive pool at its bound (Use_SRQ), over what the budget counts
 * for one connection at its admission at the full grant (its receive
 * buffers unless Use_SRQ, the reverse direction's send buffers, the claim
 * of its send reserve: rr_conn_pinned_at_accept), so that the budget, not
 * a fixed count, says how many idle connections a head holds; at least 1,
 * at most RR_MAX_CONNS_AUTO. No budget (0): RR_MAX_CONNS_NO_BUDGET.
 */
#define RR_MAX_CONNS_AUTO 65536u
#define RR_MAX_CONNS_NO_BUDGET 1024u
uint32_t rr_max_conns_for_budget(const struct rr_config *cfg);

/* A received RPC Call, owned by the engine; the upper layer answers it with
 * rr_reply() or gives it back with rr_call_release() exactly once. */
#define RR_CALL_MAX_IOV (3 * RR_PCL_MAX_READ_CHUNKS + 2)
struct rr_call {
	struct rr_conn *conn;
	uint32_t xid;			/* rdma_xid (equals the RPC xid) */
	const struct rr_pcl *pcl;	/* the call's validated chunk lists */
	struct iovec iov[RR_CALL_MAX_IOV];	/* the whole RPC Call message, in order */
	int iovcnt;
	size_t len;
	/* Each Read chunk's data (not a Position-Zero chunk), in position order:
	 * one element of iov[], in registered memory of the engine's that stays
	 * the Call's until it is released and that nothing else writes. An upper
	 * layer may hand it on by reference instead of copying it out. */
	struct iovec chunk_data[RR_PCL_MAX_READ_CHUNKS];
	int nchunk_data;
	void *upper_priv;		/* free for the upper layer */
};

struct rr_upper_ops {
	/* A complete Call. Runs on the event thread; must not block. */
	void (*call)(void *ctx, struct rr_call *call);
	/* The Reply for @xid could not be delivered and ERR_CHUNK goes instead
	 * (after the call executed); @reply_arg is the done_arg given to
	 * rr_reply, whose done has not run yet. Called before the ERR_CHUNK is
	 * posted, so the NFS layer retires the session slot before any retry
	 * can arrive. */
	void (*reply_not_delivered)(void *ctx, struct rr_conn *conn, uint32_t xid,
				    void *reply_arg);
	/* A reverse-direction RPC Reply arrived (RFC 8167) for a call of
	 * rr_conn_bc_send still outstanding (its rdma_xid and RPC xid both that
	 * call's); @msg is valid only during the callback. Any other Reply
	 * (unasked, late, after rr_conn_bc_abandon, a second one) is dropped by
	 * the engine and counted in dropped: at most one Reply per call sent
	 * is ever handed up. Optional. */
	void (*bc_reply)(void *ctx, struct rr_conn *conn, const void *msg, size_t len,
			 uint32_t credits);
	/* The client answered a reverse-direction call still outstanding with
	 * RDMA_ERROR (ERR_CHUNK or ERR_VERS); @xid is that call's rdma_xid.
	 * Optional. */
	void (*bc_error)(void *ctx, struct rr_conn *conn, uint32_t xid, uint32_t err);
	/* Connection up / going away; optional. After conn_down no call for
	 * this connection is delivered; outstanding ones may still be answered
	 * (the engine drops the reply) and must still be released. */
	void (*conn_up)(void *ctx, struct rr_conn *conn);
	void (*conn_down)(void *ctx, struct rr_conn *conn);
};

/* Called when the engine no longer needs the memory a reply referenced. */
typedef void (*rr_reply_done_fn)(void *arg);

/*
 * Listen on @addr. Fails, with the reason in rr_last_error(), on a bad
 * @cfg, an address that cannot be listened on, or settings the device's
 * queues cannot hold (rr_served: Credits above credits_cap): refused here,
 * once, rather than at every connection.
 */
int rr_server_create(struct fab_fabric *fab, const char *addr, const struct rr_config *cfg,
		     const struct rr_upper_ops *ops, void *ctx, struct rr_server **out);
/* Thread-local: why this thread's last rr_server_create failed. */
const char *rr_last_error(void);
int rr_server_start(struct rr_server *srv);
/*
 * Register, once, a region an upper layer hands payloads from (e.g. a pool
 * its READ buffers come from): replies whose payload lies in it go out by
 * RDMA Write with no copy. At most RR_MAX_REGIONS; before rr_server_start.
 */
#define RR_MAX_REGIONS 4
int rr_server_add_region(struct rr_server *srv, void *addr, size_t len);
/* Disconnects every connection, waits for teardown, stops the thread, frees. */
void rr_server_destroy(struct rr_server *srv);

/*
 * Send the Reply to @call: the encoded RPC Reply as @iovcnt buffers and the
 * upper layer's plan (payload spans, deliverability). The engine references
 * the buffers until it calls @done(@done_arg) (possibly before returning);
 * @done may be NULL when the buffers outlive the call. Consumes @call.
 * Returns 0 when the reply (or an ERR_CHUNK in its place) was posted.
 */
int rr_reply(struct rr_call *call, const struct iovec *iov, int iovcnt,
	     const struct rr_reply_plan *plan, rr_reply_done_fn done, void *done_arg);
/* Give a call back without replying (the RPC is dropped), or drop the
 * reference taken by rr_call_hold(). */
void rr_call_release(struct rr_call *call);
/*
 * Keep the call's buffers (the iovecs above) valid after rr_reply() until a
 * matching rr_call_release(): for upper layers whose decoded arguments point
 * into the Call until their request is freed (ntirpc/ganesha).
 */
void rr_call_hold(struct rr_call *call);

/*
 * Send a reverse-direction RPC Call (RFC 8167) on @conn: RDMA_MSG, no chunks,
 * inline only, in its own XID space (the caller's @xid, also the RPC
 * message's first word) and within the client's backchannel credits, which
 * are counted apart from the forward channel's. Returns 0 when posted;
 * -EMSGSIZE when it exceeds the client's receive inline threshold (never
 * sent); -EAGAIN when the client's backchannel grant is in use (retry after
 * an answer or an abandon); -EEXIST when a call with @xid is outstanding on
 * @conn already; -ENOTCONN.
 * Once posted, @xid is outstanding and holds one credit until exactly one of:
 * its Reply (rr_upper_ops.bc_reply), an RDMA_ERROR for it (bc_error), or
 * rr_conn_bc_abandon; whichever comes first gives the credit back and the
 * others find nothing. Any thread.
 */
int rr_conn_bc_send(struct rr_conn *conn, uint32_t xid, const struct iovec *iov, int iovcnt);
/*
 * The upper layer stops waiting for its reverse-direction call @xid (a
 * timeout): the credit is given back now, and a Reply or RDMA_ERROR for @xid
 * that comes later is dropped, so it never frees another call's credit.
 * Returns 0, or -ENOENT when @xid is not outstanding (its answer came first
 * and gave the credit back). Any thread, while @conn is still the upper
 * layer's (until its conn_down returns).
 */
int rr_conn_bc_abandon(struct rr_conn *conn, uint32_t xid);

/*
 * Close @conn from any thread, as its peer's disconnect would: the upper
 * layer is done with it (its transport was destroyed). Its event thread
 * disconnects it at its next visit; no call is delivered after that, and
 * conn_down follows as for any close. Each call's Reply in flight is
 * dropped; calls are still released as usual. The caller must know @conn
 * is valid: between conn_up (or its first call) and the return of its
 * conn_down, which the caller orders against this call (a lock both
 * take). Closing a connection already closing does nothing.
 */
void rr_conn_close_async(struct rr_conn *conn);

const char *rr_conn_peer(const struct rr_conn *conn);
/* The key rr_conn_snap.id carries for @conn. */
static inline uintptr_t rr_conn_id(const struct rr_conn *conn)
{
	return (uintptr_t)conn;
}
struct sockaddr_storage;
int rr_conn_addrs(const struct rr_conn *conn, struct sockaddr_storage *local,
		  struct sockaddr_storage *remote);
void rr_conn_set_upper(struct rr_conn *conn, void *priv);
void *rr_conn_get_upper(const struct rr_conn *conn);

/* Every counter of struct rr_stats, for code that walks them (JSON, tables):
 * X(name) per counter, from the one table (rr_counters.def). */
#define RR_STATS_NAME_(X, name, type, scope, kind, meaning) X(name)
#define RR_STATS_FIELDS(X) RR_COUNTERS(RR_STATS_NAME_, X)

/*
 * Health. On a device removal (FAB_CM_DEVICE_REMOVAL) the engine closes
 * every connection, destroys the listener, gives back everything it had
 * registered on the device once the last connection is freed, and then
 * tries to listen again every RR_RELISTEN_S seconds: a device that comes
 * back (or another one) restores service with no restart.
 */
#define RR_RELISTEN_S 5
#define RR_HEALTH_WHY_LEN 128
struct rr_health {
	bool serving;		     /* the listener is up */
	char why[RR_HEALTH_WHY_LEN]; /* why not; empty when serving */
	uint32_t conns;		     /* connections, closing ones included */
	uint64_t device_removals;    /* removals seen since the start */
	uint64_t relisten_tries;     /* failed re-listen attempts since the last removal */
};
void rr_server_health(struct rr_server *srv, struct rr_health *out);

/*
 * What a server serves with, as it said when it started: the device its
 * listener accepts on, the settings a connection really gets there, and the
 * most memory the settings let it register (each part a bound, not a use).
 */
struct rr_served {
	char device[64];
	char transport[16];		/* "RoCE", "InfiniBand", "iWARP" (of several: the strictest) */
	uint32_t write_sge;		/* SGEs an RDMA Write gathers */
	uint32_t read_sge;		/* SGEs an RDMA Read scatters (the engine uses one) */
	bool send_with_inv;		/* Send With Invalidate, where the client allows it */
	uint32_t credits;
	uint32_t credits_cap;		/* the most the device's queues hold */
	uint32_t ord;			/* RDMA Read depth: Max_RDMA_Read_Depth, capped */
	uint32_t inline_size;
	bool srq;
	uint32_t max_conns;		/* Max_Connections, as decided (0: from the budget) */
	uint64_t mem_conns;		/* connections' buffers, within the budget */
	uint64_t mem_srq;		/* the shared receive pool at its bound */
	uint64_t mem_sinks;		/* Read sinks, per device */
	bool memlock_charged;		/* registrations count against RLIMIT_MEMLOCK, root or not */
};
void rr_server_served(struct rr_server *srv, struct rr_served *out);

/* Where the engine's one-line event logs go (default: stderr). */
void rr_set_log_sink(void (*sink)(const char *line));

/* The counters, as rr_counters.def lists them (meanings there). */
#define RR_STATS_MEMBER_(a, name, type, scope, kind, meaning) type name;
struct rr_stats {
	RR_COUNTERS(RR_STATS_MEMBER_, ~)
};
void rr_server_stats(struct rr_server *srv, struct rr_stats *out);
/* Call @fn for every connection with its counters (under the server's lock:
 * @fn must not call back into the engine). */
void rr_server_foreach_conn(struct rr_server *srv,
			    void (*fn)(void *arg, struct rr_conn *conn, const struct rr_stats *st),
			    void *arg);
/*
 * One connection's peer and counters, copied, for readers that write them
 * out somewhere that may block (the stats socket): they do that I/O after
 * the server's lock is released, never under it.
 */
#define RR_CONN_PEER_MAX 80
struct rr_conn_snap {
	/* The connection as a key that matches rr_conn_id(): peers need not be
	 * unique (the soft fabric's unix socket); never to be dereferenced. */
	uintptr_t id;
	char peer[RR_CONN_PEER_MAX];
	struct rr_stats st;
};
/*
 * Copy up to @max connections into @out under the server's lock (copies
 * only). Returns how many connections are listed: more than @max means only
 * @max were copied; call again with room for that many (plus some: the
 * count may grow in between).
 */
uint32_t rr_server_snapshot_conns(struct rr_server *srv, struct rr_conn_snap *out, uint32_t max);

#ifdef __cplusplus
}
#endif
#endif
