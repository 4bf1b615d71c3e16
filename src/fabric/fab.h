/* SPDX-License-Identifier: MIT */
/*
 * fab.h - the one narrow RDMA interface everything above src/fabric/ uses.
 *
 * It is a thin, verbs-shaped subset: an event channel for connection
 * management, RC connections that each own one QP, completion queues with a
 * pollable fd, memory registration on a protection domain, and the four work
 * requests RPC-over-RDMA needs (Send, Send-With-Invalidate, RDMA Read, RDMA
 * Write). Two providers implement it, chosen at run time:
 *   "verbs" - rdma-core (libibverbs + librdmacm), the production path;
 *   "soft"  - a software RC fabric over stream sockets, for tests and demos.
 *
 * Conventions: functions return 0 or a negative errno. Objects are owned by
 * whoever created them and freed by the matching destroy call. Work requests
 * and SGE arrays are only read during the post call.
 */
#ifndef RPCRDMA_FAB_H
#define RPCRDMA_FAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fab_fabric;	/* one opened provider */
struct fab_channel;	/* CM event channel (pollable fd) */
struct fab_listener;	/* passive endpoint */
struct fab_conn;	/* one RC connection: CM identity + its QP */
struct fab_cq;		/* completion queue (pollable fd) */
struct fab_pd;		/* protection domain: a device's shared one, or a connection's own */
struct fab_srq;		/* shared receive queue, on one protection domain */

/* Largest CM private data carried on connect/accept/reject (IB REQ: 56). */
#define FAB_PRIVATE_DATA_MAX 56

/* Provider capabilities (fab_caps). */
enum fab_cap {
	/* an IPv6 listener may share the port of an IPv4 one (rdma_cm binds
	 * them apart); without it one listener serves what its address says */
	FAB_CAP_V6_LISTENER = 1u << 1,
	/* Send With Invalidate is a device's: fab_limits.send_with_inv */
};

enum fab_access {
	FAB_ACCESS_LOCAL_WRITE = 1u << 0,
	FAB_ACCESS_REMOTE_READ = 1u << 1,
	FAB_ACCESS_REMOTE_WRITE = 1u << 2,
};

/* A registered memory region; fields are read-only for the user. */
struct fab_mr {
	void *addr;
	size_t length;
	uint32_t lkey;
	uint32_t rkey;
	unsigned int access;	/* enum fab_access bits */
	void *prov;		/* provider private */
};

struct fab_sge {
	void *addr;
	uint32_t length;
	uint32_t lkey;
};

enum fab_wr_opcode {
	FAB_WR_SEND,
	FAB_WR_SEND_WITH_INV,
	FAB_WR_RDMA_WRITE,
	FAB_WR_RDMA_READ,
};

struct fab_send_wr {
	struct fab_send_wr *next;	/* chain: posted in order */
	uint64_t wr_id;
	enum fab_wr_opcode opcode;
	struct fab_sge *sg_list;
	int num_sge;
	bool signaled;		/* completion generated only when set (or on error) */
	uint32_t invalidate_rkey;	/* FAB_WR_SEND_WITH_INV */
	uint64_t remote_addr;	/* RDMA Read/Write */
	uint32_t rkey;		/* RDMA Read/Write */
};

struct fab_recv_wr {
	struct fab_recv_wr *next;
	uint64_t wr_id;
	struct fab_sge *sg_list;
	int num_sge;
};

enum fab_wc_opcode {
	FAB_WC_SEND,
	FAB_WC_RDMA_WRITE,
	FAB_WC_RDMA_READ,
	FAB_WC_RECV,
};

/* The statuses RPC-over-RDMA must tell apart (subset of ibv_wc_status). */
enum fab_wc_status {
	FAB_WC_SUCCESS = 0,
	FAB_WC_LOC_LEN_ERR,		/* receive buffer too small */
	FAB_WC_LOC_PROT_ERR,		/* bad lkey / local bounds */
	FAB_WC_REM_ACCESS_ERR,		/* bad rkey, bounds or rights on the peer */
	FAB_WC_REM_OP_ERR,
	FAB_WC_RNR_RETRY_EXC_ERR,	/* peer had no receive posted */
	FAB_WC_RETRY_EXC_ERR,		/* transport retries exhausted / peer gone */
	FAB_WC_WR_FLUSH_ERR,		/* QP in error: work request flushed */
	FAB_WC_GENERAL_ERR,
	/*
	 * IB "Local QP Operation Error": the device found the work request,
	 * or the receive a message landed in, unusable (a malformed WQE); the
	 * QP is in error. Soft-RoCE (rdma_rxe, at least up to Linux 6.1)
	 * reports it where IB calls for LOC_LEN_ERR (receive too small) or
	 * LOC_PROT_ERR (bad lkey). Never produced by "soft".
	 */
	FAB_WC_LOC_QP_OP_ERR,
};

struct fab_wc {
	uint64_t wr_id;
	enum fab_wc_status status;
	enum fab_wc_opcode opcode;
	uint32_t byte_len;		/* receives: bytes placed */
	bool with_inv;			/* receives: sender invalidated inv_rkey */
	uint32_t inv_rkey;
	struct fab_conn *conn;		/* the connection whose QP completed */
};

enum fab_cm_event_type {
	FAB_CM_CONNECT_REQUEST,	/* passive: new conn, not yet accepted */
	FAB_CM_ESTABLISHED,
	FAB_CM_REJECTED,	/* active: peer rejected (private data attached) */
	FAB_CM_CONNECT_ERROR,	/* active: unreachable / address or route error */
	FAB_CM_DISCONNECTED,
	/*
	 * The RDMA device under a listener or connection is gone (verbs:
	 * RDMA_CM_EVENT_DEVICE_REMOVAL, IBV_EVENT_DEVICE_FATAL, or the device
	 * vanished from the system; soft: fab_soft_device_remove). ev.conn or
	 * ev.listener names the object concerned, or neither for the device as
	 * a whole (status -ENODEV). Nothing on the device works any more: QPs
	 * are in error (posted work flushes), the listener accepts nothing.
	 * The user destroys every object it made there - conns, CQs, SRQs,
	 * MRs, the listener - and may then call fab_listen again: it looks for
	 * devices afresh and fails with -ENODEV until one is back. A
	 * device's kernel removal (rxe, hot-unplug) waits until that is done.
	 */
	FAB_CM_DEVICE_REMOVAL,
	FAB_CM_QP_ERROR,	/* asynchronous QP fatal event */
};

struct fab_cm_event {
	enum fab_cm_event_type type;
	struct fab_conn *conn;		/* the connection concerned */
	struct fab_listener *listener;	/* passive side: the listener it arrived on */
	int status;			/* negative errno where meaningful */
	uint8_t private_data[FAB_PRIVATE_DATA_MAX];
	uint8_t private_data_len;
	/*
	 * RDMA Read depths from the receiver's point of view, as rdma_cm reports
	 * them (IB CM swaps the REQ fields): on CONNECT_REQUEST, initiator_depth
	 * is how many RDMA Reads we may have outstanding toward the peer (the
	 * peer's responder_resources), responder_resources how many it may have
	 * toward us (the peer's initiator_depth).
	 */
	uint8_t responder_resources;
	uint8_t initiator_depth;
};

struct fab_conn_param {
	const void *private_data;
	uint8_t private_data_len;	/* <= FAB_PRIVATE_DATA_MAX */
	uint8_t responder_resources;	/* RDMA Reads we accept from the peer */
	uint8_t initiator_depth;	/* RDMA Reads we issue concurrently */
	uint8_t rnr_retry_count;	/* 0: an RNR is fatal (Linux NFS/RDMA) */
	uint8_t retry_count;
	/*
	 * Accept only: how long a peer's Send that found no receive here waits
	 * before it retries (this side's RNR NAK timer; verbs rounds up to the
	 * IB encoding, 10 us .. 491 ms). 0: the provider's default - on verbs
	 * what the IB CM sets, 655 ms, far too long for a shared receive queue
	 * that is empty for a moment. soft retries every millisecond anyway.
	 */
	uint32_t rnr_timer_us;
};

struct fab_qp_caps {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	/*
	 * Non-NULL: the QP takes its receives from this SRQ (same PD) and has
	 * no receive queue of its own (max_recv_wr / max_recv_sge ignored,
	 * fab_post_recv fails with -EINVAL).
	 */
	struct fab_srq *srq;
};

/* How a device carries RC traffic; iWARP has rules of its own (fab_limits). */
enum fab_transport {
	FAB_TRANSPORT_IB,	/* InfiniBand */
	FAB_TRANSPORT_ROCE,	/* RoCE: IB transport over Ethernet (rxe, mlx5, irdma, bnxt_re) */
	FAB_TRANSPORT_IWARP,	/* iWARP: RDMAP/DDP over TCP (siw, iw_cxgb4, irdma) */
};

/* "InfiniBand", "RoCE", "iWARP". */
const char *fab_transport_name(enum fab_transport t);

/*
 * What a device can carry, as its attributes say (verbs: ibv_query_device
 * and the port's link layer; soft: its device profile, fab_soft.h). A
 * connection's are its own device's (fab_conn_limits); a listener's are the
 * smallest over the devices it accepts on (a wildcard address accepts on
 * any of them), so the upper layer checks its sizing once when it starts
 * listening. A QP, CQ or work request beyond them fails when made or posted.
 * Where the upper layer needs more pieces than a work request takes, it
 * posts more work requests, as the kernel's rdma_rw does.
 */
struct fab_limits {
	uint32_t max_qp_wr;		/* entries of a send or a receive queue */
	uint32_t max_cqe;		/* entries of a completion queue */
	uint32_t max_srq_wr;		/* entries of a shared receive queue; 0: no SRQ */
	uint32_t max_send_sge;		/* SGEs of one Send or RDMA Write */
	uint32_t max_recv_sge;		/* SGEs of one receive */
	/*
	 * SGEs of one RDMA Read (verbs: max_sge_rd; iWARP devices take 1,
	 * since the sink is one tagged buffer on the wire).
	 */
	uint32_t max_read_sge;
	uint32_t max_rd_atom;		/* RDMA Reads one QP may have in flight */
	uint32_t max_inline;		/* bytes a Send may carry inline; 0: none */
	bool send_with_inv;		/* Send With Invalidate (memory management extensions) */
	/*
	 * iWARP: an RDMA Read's response is a tagged placement into the sink,
	 * so the sink must be registered with remote-write access
	 * (FAB_ACCESS_REMOTE_WRITE); a sink without it fails the Read with a
	 * remote-access error. An empty receive queue is fatal (no RNR retry).
	 */
	enum fab_transport transport;
	/*
	 * Registrations are charged against RLIMIT_MEMLOCK whatever the
	 * process's capabilities: soft-iWARP (siw_umem_get) does, where
	 * ib_umem_get lets CAP_IPC_LOCK pass (docs/devices.md, "Registered
	 * memory and RLIMIT_MEMLOCK").
	 */
	bool memlock_charged;
	/*
	 * An unsignalled Send's or RDMA Write's bytes may be read from memory
	 * after a later work request has completed: soft-iWARP hands such a
	 * work request's pages to TCP without a copy (siw_qp_prepare_tx), so
	 * memory reused once the chain's Send completes can go out changed
	 * (docs/devices.md, "Unsignalled work requests on siw").
	 */
	bool unsignalled_zero_copy;
	char device[64];		/* "mlx5_0", "2 devices (mlx5_0 ...)", "soft" */
};

/* Counters kept by a provider, for tests and bench/. */
struct fab_stats {
	uint64_t wr_posted[4];		/* indexed by enum fab_wr_opcode */
	uint64_t bytes[4];		/* payload bytes by enum fab_wr_opcode */
	uint64_t recv_posted;
	uint64_t recv_bytes;
	uint64_t registrations;		/* fab_mr_reg calls that succeeded */
	uint64_t deregistrations;
	/* unsignalled Sends and RDMA Writes of FAB_ZERO_COPY_MIN bytes or more:
	 * what soft-iWARP sends without a copy (unsignalled_zero_copy) */
	uint64_t unsignalled_page_wrs;
};

/* The size from which siw transmits an unsignalled work request's pages
 * without a copy (its SENDPAGE_THRESH, one page) */
#define FAB_ZERO_COPY_MIN 4096u

/* --- provider ----------------------------------------------------------- */

/*
 * Open a provider by name ("soft" or "verbs"); NULL means the environment
 * variable RPCRDMA_FABRIC, else "soft". "verbs" with no RDMA device fails
 * with -ENODEV and a message from fab_last_error().
 */
int fab_open(const char *provider, struct fab_fabric **out);
void fab_close(struct fab_fabric *fab);
const char *fab_name(const struct fab_fabric *fab);
unsigned int fab_caps(const struct fab_fabric *fab);
void fab_get_stats(const struct fab_fabric *fab, struct fab_stats *out);
/* Thread-local human-readable reason for the last failure. */
const char *fab_last_error(void);

/* --- connection management ---------------------------------------------- */

int fab_channel_create(struct fab_fabric *fab, struct fab_channel **out);
void fab_channel_destroy(struct fab_channel *ch);
int fab_channel_fd(const struct fab_channel *ch);
/* Non-blocking: 0 and *ev filled, or -EAGAIN when no event is queued. */
int fab_channel_get_event(struct fab_channel *ch, struct fab_cm_event *ev);

/*
 * Addresses: "verbs" takes "HOST:PORT" or "[V6]:PORT"; "soft" takes
 * "unix:PATH" or "tcp:HOST:PORT" (also "HOST:PORT", meaning tcp).
 */
int fab_listen(struct fab_fabric *fab, struct fab_channel *ch, const char *addr, int backlog,
	       struct fab_listener **out);
void fab_listener_destroy(struct fab_listener *l);
/* The limits above for connections that @l accepts; -ENODEV: no device. */
int fab_listener_limits(struct fab_listener *l, struct fab_limits *out);
/* The limits of the device @c is on (passive side: from
 * FAB_CM_CONNECT_REQUEST on). */
int fab_conn_limits(struct fab_conn *c, struct fab_limits *out);
/* The limits over every device @fab may use (the smallest of each): what an
 * active side sizes its QP and Read depths from before it connects. */
int fab_device_limits(struct fab_fabric *fab, struct fab_limits *out);

/* Active side: resolve + create the conn; FAB_CM_ESTABLISHED/REJECTED/CONNECT_ERROR follow. */
int fab_connect(struct fab_fabric *fab, struct fab_channel *ch, const char *addr,
		struct fab_cq *send_cq, struct fab_cq *recv_cq, const struct fab_qp_caps *caps,
		const struct fab_conn_param *param, struct fab_conn **out);

/*
 * Passive side, after FAB_CM_CONNECT_REQUEST: create the QP, post receives
 * with fab_post_recv, then accept (or reject).
 */
int fab_conn_create_qp(struct fab_conn *c, struct fab_cq *send_cq, struct fab_cq *recv_cq,
		       const struct fab_qp_caps *caps);
int fab_accept(struct fab_conn *c, const struct fab_conn_param *param);
int fab_reject(struct fab_conn *c, const void *private_data, uint8_t len);
int fab_disconnect(struct fab_conn *c);
/* Frees the QP (after flushing it) and the CM identity; no events follow. */
void fab_conn_destroy(struct fab_conn *c);

struct fab_pd *fab_conn_pd(struct fab_conn *c);
/*
 * Passive side, before fab_conn_create_qp: a protection domain of @c's own,
 * on @c's device, in @out. The QP is made in it, fab_conn_pd returns it
 * from now on, and what is registered in it is reachable through this
 * connection only: another connection's peer that names one of its STags
 * gets a remote access error (svcrdma's per-connection PD; docs/devices.md).
 * The caller frees it with fab_pd_free once @c is destroyed and every
 * region registered in it is deregistered.
 */
int fab_conn_own_pd(struct fab_conn *c, struct fab_pd **out);
void fab_pd_free(struct fab_pd *pd);
/* Printable peer address, for logs. */
const char *fab_conn_peer(const struct fab_conn *c);
/*
 * Socket addresses of both ends (an RPC server keys clients on them). The
 * soft provider over a unix socket reports 127.0.0.1 with a port unique to
 * the connection. Either pointer may be NULL.
 */
struct sockaddr_storage;
int fab_conn_addrs(const struct fab_conn *c, struct sockaddr_storage *local,
		   struct sockaddr_storage *remote);
void fab_conn_set_context(struct fab_conn *c, void *ctx);
void *fab_conn_get_context(const struct fab_conn *c);

/* --- memory ------------------------------------------------------------- */

/* A PD usable before any connection exists (same one fab_conn_pd returns on "soft"). */
int fab_pd_get(struct fab_fabric *fab, struct fab_pd **out);
int fab_mr_reg(struct fab_pd *pd, void *addr, size_t len, unsigned int access,
	       struct fab_mr **out);
void fab_mr_dereg(struct fab_mr *mr);

/* --- shared receive queues -------------------------------------------- */

/*
 * One receive queue many QPs of the same PD draw from (verbs: ibv_srq), so
 * receive memory is one pool instead of a queue per connection.
 * Receiver's view:
 * - an incoming Send on any attached QP consumes the SRQ's oldest posted
 *   receive; its completion arrives on THAT QP's receive CQ with wc.conn
 *   naming the connection (wr_id is the one posted to the SRQ);
 * - an empty SRQ is RNR for the sender exactly as an empty per-QP queue:
 *   with the rnr_retry_count we gave the peer (fab_accept / fab_connect) at
 *   0 the Send fails (FAB_WC_RNR_RETRY_EXC_ERR at the sender, both QPs in
 *   error), 1..6 it waits that many RNR timers, 7 until a receive is posted;
 * - a QP in error (disconnect, destroy) flushes only the receive a message
 *   was being placed in when it failed (if any, on its CQ); the SRQ's other
 *   receives stay posted for the other QPs;
 * - fab_srq_destroy fails with -EBUSY while a QP is attached; receives still
 *   posted are discarded without completions (as ibv_destroy_srq does), and
 *   their buffers are the caller's again when it returns.
 * @max_wr bounds the receives posted at once (-ENOMEM past it at post time).
 */
int fab_srq_create(struct fab_pd *pd, uint32_t max_wr, uint32_t max_sge, struct fab_srq **out);
int fab_srq_destroy(struct fab_srq *srq);
int fab_post_srq_recv(struct fab_srq *srq, struct fab_recv_wr *wr, struct fab_recv_wr **bad);

/* --- completion queues -------------------------------------------------- */

int fab_cq_create(struct fab_fabric *fab, int depth, struct fab_cq **out);
/*
 * A CQ on @c's own device (passive side, after FAB_CM_CONNECT_REQUEST): on a
 * host with several RDMA devices a QP's CQs must be on its device, and
 * fab_cq_create's is on the first one.
 */
int fab_conn_cq_create(struct fab_conn *c, int depth, struct fab_cq **out);
void fab_cq_destroy(struct fab_cq *cq);
/* Readable when a completion arrived after the last fab_cq_arm. */
int fab_cq_fd(const struct fab_cq *cq);
/* Consume the fd's notification (like ibv_get_cq_event + ack); non-blocking. */
int fab_cq_get_event(struct fab_cq *cq);
int fab_cq_arm(struct fab_cq *cq);
/* Returns the number of completions written (0..n) or a negative errno. */
int fab_cq_poll(struct fab_cq *cq, struct fab_wc *wc, int n);

/* --- data path ---------------------------------------------------------- */

int fab_post_send(struct fab_conn *c, struct fab_send_wr *wr, struct fab_send_wr **bad);
int fab_post_recv(struct fab_conn *c, struct fab_recv_wr *wr, struct fab_recv_wr **bad);

#ifdef __cplusplus
}
#endif
#endif /* RPCRDMA_FAB_H */
