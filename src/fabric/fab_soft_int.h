/* SPDX-License-Identifier: MIT */
/*
 * fab_soft_int.h - private structures of the "soft" provider.
 *
 * One stream socket per RC connection. Each connected conn has a reader
 * thread (applies incoming requests to local memory, matches responses to
 * outstanding send WRs) and a writer thread (transmits send WRs straight from
 * the user's SGEs and the responses the reader queued). The reader never
 * blocks on the socket's send side, so two peers cannot deadlock with full
 * buffers in both directions.
 */
#ifndef RPCRDMA_FAB_SOFT_INT_H
#define RPCRDMA_FAB_SOFT_INT_H

#include <pthread.h>
#include <time.h>

#include "fabric/fab_internal.h"
#include "fabric/fab_soft.h"

/* Wire messages; all fields little-endian. */
enum soft_msg_type {
	SOFT_CONN_REQ = 1, /* a: resp_res | init_depth << 8; len: private data */
	SOFT_CONN_REP,	   /* same as CONN_REQ */
	SOFT_CONN_REJ,	   /* len: private data */
	SOFT_SEND,	   /* len: payload; flags: WITH_INV; b: inv rkey */
	SOFT_WRITE,	   /* len: payload; a: remote addr; b: rkey */
	SOFT_READ_REQ,	   /* len: wanted; a: remote addr; b: rkey */
	SOFT_ACK,	   /* b: number of requests acknowledged */
	SOFT_NAK,	   /* status: enum fab_wc_status for the initiator */
	SOFT_READ_RESP,	   /* len: payload */
	SOFT_QP_ERR,	   /* sender's QP went to error */
	SOFT_DISC,	   /* sender disconnected */
};

#define SOFT_F_WITH_INV 0x01
#define SOFT_F_FORCE_FAIL 0x02 /* fault injection: responder must refuse */
/* RNR: 7 retries mean "forever" (IB); each other retry stands for one RNR timer of this long. */
#define SOFT_RNR_INFINITE 7
#define SOFT_RNR_STEP_MS 20
/* Most payload parked behind a Send waiting out an RNR (more drops the link). */
#define SOFT_PARK_MAX (64u << 20)
/* Queue bounds, as a device's attributes would state them (fab_limits). */
#define SOFT_MAX_WR 65536u	/* send, receive or shared receive queue */
#define SOFT_MAX_CQE (4u * SOFT_MAX_WR)
#define SOFT_MAX_SGE 32u
#define SOFT_MAX_RD_ATOM 254u	/* what the CM's 8-bit depth can say (255: "the device's") */
#define SOFT_RD_ATOM_DEVICE 255u	/* a depth of 255 asks for the device's (librdmacm) */
#define SOFT_MAGIC 0x52524642u /* "RRFB", in CONN_REQ b */

struct soft_hdr {
	uint8_t type;
	uint8_t flags;
	uint8_t status;
	uint8_t pad;
	uint32_t len;
	uint64_t a;
	uint32_t b;
	uint32_t c;
};

/* The thread that waits on idle connections' sockets (fab_soft_idle.c). */
struct soft_watch {
	pthread_mutex_t lock; /* taken before a conn's lock, never after */
	pthread_cond_t cond;
	int epfd, wakefd;
	uint64_t seq; /* batches handled */
	bool started, stop;
	pthread_t thread;
};

struct soft_fabric {
	struct fab_fabric base;
	pthread_mutex_t lock; /* MR table, default fault */
	struct soft_mr **mrs; /* indexed by key >> 8 */
	uint32_t nmrs;
	uint32_t gen;
	struct fab_soft_fault fault;
	struct fab_limits lim;	/* the device profile (fab_soft_profile.c) */
	struct soft_pd *pd;
	/* Simulated device removal (fab_soft_device_remove): the registry
	 * lets it reach every listener and conn. reg_lock is taken before a
	 * conn's lock, never after. */
	pthread_mutex_t reg_lock;
	struct soft_listener *listeners;
	struct soft_conn *conns;
	_Atomic bool removed;
	struct soft_watch watch;
	unsigned int idle_ms; /* a reader or writer with nothing to do this long ends */
	bool memlock;	/* RPCRDMA_SOFT_MEMLOCK at open: registrations charged */
	/* fab_soft_last_read_sink: address, key */
	_Atomic uint64_t last_read_sink_addr;
	_Atomic uint32_t last_read_sink_key;
};

/* -ENODEV while the simulated device is removed. */
static inline int soft_present(struct soft_fabric *sf)
{
	if (!atomic_load(&sf->removed))
		return 0;
	return fab_set_error(-ENODEV, "soft: device removed");
}

struct soft_pd {
	struct fab_fabric *fab;
	bool own; /* a connection's (fab_conn_own_pd), freed by fab_pd_free */
};

struct soft_mr {
	struct fab_fabric *fab;
	struct soft_pd *pd;	/* only QPs of this PD reach it, locally or remotely */
	struct fab_mr pub;
	bool valid; /* false after a remote invalidate */
	uint64_t pinned_pages; /* charged to RLIMIT_MEMLOCK (RPCRDMA_SOFT_MEMLOCK) */
};

struct soft_cq {
	struct fab_fabric *fab;
	pthread_mutex_t lock;
	int efd;
	bool armed;
	struct fab_wc *ring;
	uint32_t cap, head, n;
};

struct soft_evnode {
	struct soft_evnode *next;
	struct fab_cm_event ev;
};

struct soft_channel {
	struct fab_fabric *fab;
	pthread_mutex_t lock;
	int efd;
	struct soft_evnode *head, *tail;
};

struct soft_listener {
	struct fab_fabric *fab;
	struct soft_channel *ch;
	int fd;
	int wake;	/* eventfd that stops the accept thread */
	char path[108]; /* unix socket path to unlink */
	pthread_t thread;
	struct soft_listener *next; /* sf->listeners */
	_Atomic bool dead;	    /* device removed: refuse every connection */
};

enum soft_state {
	SOFT_S_IDLE,
	SOFT_S_CONNECTING, /* active: CONN_REQ sent */
	SOFT_S_REQ,	   /* passive: CONNECT_REQUEST delivered */
	SOFT_S_EST,
	SOFT_S_CLOSED,
};

struct soft_swr {
	uint64_t wr_id;
	enum fab_wr_opcode op;
	bool signaled;
	bool done;
	uint8_t busy; /* SOFT_BUSY_*: a thread reads or fills its SGEs */
	enum fab_wc_status st;
	uint32_t inv_rkey, rkey;
	uint64_t raddr;
	uint32_t len;
	int nsge;
	struct fab_sge *sge;
};

#define SOFT_BUSY_TX 1
#define SOFT_BUSY_RX 2

struct soft_rwr {
	uint64_t wr_id;
	int nsge;
	struct fab_sge *sge;
};

/* A shared receive queue: attached conns' readers pop from it in order. */
struct soft_srq {
	struct fab_fabric *fab;
	pthread_mutex_t lock; /* taken after a conn's lock, never before */
	struct soft_rwr *rq;
	struct fab_sge *sge;
	uint32_t max_wr, max_sge;
	uint64_t head, tail;
	uint32_t nqp; /* attached QPs: destroy refuses while any */
	struct soft_pd *pd;
};

/* A request parked behind a Send that waits out an RNR (fab_soft_io.c). */
struct soft_parked {
	struct soft_parked *next;
	struct soft_hdr h;
	uint8_t data[]; /* Send / Write payload */
};

struct soft_ctl {
	uint8_t type;
	uint8_t status;
	uint32_t n; /* ACK count or READ_RESP length */
	void *addr; /* READ_RESP source */
};

#define SOFT_SQ_FIRST 8u
#define SOFT_SQ_MAX_SEGS 28	/* 8 << 27 is past any max_send_wr */

struct soft_conn {
	struct fab_conn_head h;
	struct soft_fabric *sf;
	struct soft_channel *ch;
	struct soft_listener *listener;
	int fd;
	char peer[128];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum soft_state state;
	bool has_qp, qp_err, stop, disc_event, dead, threads;
	struct soft_cq *scq, *rcq;
	struct fab_qp_caps caps;
	struct fab_limits lim;	/* the fabric's profile when the QP was made */
	struct soft_pd *pd;	/* the fabric's, or its own (fab_conn_own_pd) */
	/* send queue: [head, resp) answered, [resp, tx) awaiting answer, [tx, tail) unsent.
	 * A ring of pointers, sq_cap (a power of 2) of them, to entries made
	 * in segments with their SGEs: SOFT_SQ_FIRST at first, twice as many
	 * when a post finds the ring full (up to caps.max_send_wr in use), so
	 * an idle QP holds a few. Entries never move (I/O threads read their
	 * SGEs outside the lock); growing moves pointers, under the lock. */
	struct soft_swr **sq;
	uint32_t sq_cap;
	uint32_t sq_nseg;
	struct soft_swr *sq_seg[SOFT_SQ_MAX_SEGS];
	uint64_t sq_head, sq_resp, sq_tx, sq_tail;
	/* receive queue (unused when srq is set) */
	struct soft_srq *srq;
	struct soft_rwr *rq;
	struct fab_sge *rq_sge;
	uint64_t rq_head, rq_tail;
	bool rx_busy; /* reader is filling a receive it popped */
	/* A Send waiting out an RNR and the requests behind it, read off the
	 * wire (reader only; lock held to change the list) */
	struct soft_parked *park_head, *park_tail;
	uint64_t park_bytes;
	int64_t park_deadline_ms; /* the head Send's, CLOCK_MONOTONIC; INT64_MAX: for ever */
	/* responses for the writer, in order */
	struct soft_ctl *ctl;
	uint32_t ctl_cap, ctl_head, ctl_n;
	struct fab_soft_fault fault;
	uint64_t tx_bytes, tx_wrs;
	uint8_t peer_rnr_retry; /* our own rnr_retry_count: IB CM hands it to the peer, so it is
				 * how long the peer's Sends wait for our receives */
	/* Reader and writer threads run on demand (fab_soft_idle.c). */
	bool io_started, reader_on, writer_on, watched;
	struct soft_conn *reg_next, **reg_prev; /* sf->conns */
	bool dev_removed, dev_removed_req;	/* fab_soft_device_remove chose it (reg_lock) */
};

/* fab_soft_mem.c */
int soft_cq_create(struct fab_fabric *fab, int depth, struct fab_cq **out);
void soft_cq_destroy(struct fab_cq *cq);
int soft_cq_fd(const struct fab_cq *cq);
int soft_cq_get_event(struct fab_cq *cq);
int soft_cq_arm(struct fab_cq *cq);
int soft_cq_poll(struct fab_cq *cq, struct fab_wc *wc, int n);
void soft_cq_push(struct soft_cq *cq, const struct fab_wc *wc);
void soft_cq_forget(struct soft_cq *cq, struct soft_conn *c);
int soft_pd_get(struct fab_fabric *fab, struct fab_pd **out);
/* RPCRDMA_SOFT_MEMLOCK: registrations charged to RLIMIT_MEMLOCK (fab_soft_mem.c). */
bool soft_memlock_charged(void);
int soft_mr_reg(struct fab_pd *pd, void *addr, size_t len, unsigned int access,
		struct fab_mr **out);
void soft_mr_dereg(struct fab_mr *mr);
bool soft_remote_ok(struct soft_fabric *sf, const struct soft_pd *pd, uint32_t rkey, uint64_t addr, uint32_t len,
		    unsigned int need);
bool soft_local_ok(struct soft_fabric *sf, const struct soft_pd *pd, const struct fab_sge *sge, int n, bool write);
bool soft_sink_tagged_ok(struct soft_fabric *sf, const struct soft_pd *pd, const struct fab_sge *sge, int n);
/* The fabric's device profile now (fab_soft_profile.c). */
struct fab_limits soft_lim(struct soft_fabric *sf);
void soft_invalidate_rkey(struct soft_fabric *sf, uint32_t rkey);

/* fab_soft_qp.c */
int soft_post_send(struct fab_conn *c, struct fab_send_wr *wr, struct fab_send_wr **bad);
int soft_post_recv(struct fab_conn *c, struct fab_recv_wr *wr, struct fab_recv_wr **bad);
int soft_qp_alloc(struct soft_conn *c, struct fab_cq *send_cq, struct fab_cq *recv_cq,
		  const struct fab_qp_caps *caps);
void soft_qp_free(struct soft_conn *c);
void soft_qp_fatal_locked(struct soft_conn *c);
void soft_qp_error_locked(struct soft_conn *c, bool tell_peer);
void soft_ctl_push_locked(struct soft_conn *c, uint8_t type, uint8_t status, uint32_t n,
			  void *addr);
void soft_sq_progress_locked(struct soft_conn *c);
void soft_rq_flush_locked(struct soft_conn *c);
int soft_srq_create(struct fab_pd *pd, uint32_t max_wr, uint32_t max_sge, struct fab_srq **out);
int soft_srq_destroy(struct fab_srq *srq);
int soft_post_srq_recv(struct fab_srq *srq, struct fab_recv_wr *wr, struct fab_recv_wr **bad);
/* Next receive for an incoming Send (own queue or SRQ); false when none is posted. */
bool soft_rq_pop_locked(struct soft_conn *c, uint64_t *wr_id, struct fab_sge *sge, int *nsge);

/* fab_soft_io.c */
void *soft_reader(void *arg);
void *soft_writer(void *arg);
int soft_io_full(int fd, void *buf, size_t len, bool rd);
/* The listener's accept thread (fab_soft_accept.c) and what it hands a
 * complete CONN_REQ to (fab_soft_cm.c). */
void *soft_accept_thread(void *arg);
void soft_listener_request(struct soft_listener *l, int fd, const struct soft_hdr *h,
			   const uint8_t *pd);
/* The link is gone and no reader will come (c->lock held): as the reader's end. */
void soft_reader_gone_locked(struct soft_conn *c);

/* fab_soft_idle.c */
int soft_watch_init(struct soft_fabric *sf);
void soft_watch_fini(struct soft_fabric *sf);
/* Start a connected conn's reader (and its writer when work is queued). */
int soft_io_start(struct soft_conn *c);
/* Work for the writer may be queued (c->lock held): wake or start it. */
void soft_wake_locked(struct soft_conn *c);
/* Called by an I/O thread with nothing to do (c->lock held): true = end now. */
bool soft_writer_idle_locked(struct soft_conn *c);
bool soft_reader_idle_locked(struct soft_conn *c);
void soft_io_ended_locked(struct soft_conn *c, bool reader);
/* After c->stop: the watcher forgets c; then wait until its threads ended. */
void soft_watch_forget(struct soft_conn *c);
void soft_io_wait_stopped(struct soft_conn *c);
unsigned int soft_idle_ms(const struct soft_fabric *sf);

/* fab_soft_cm.c */
void soft_event_push(struct soft_channel *ch, const struct fab_cm_event *ev);
/* Reader hit a CM message or EOF; called with c->lock held. */
void soft_cm_deliver_locked(struct soft_conn *c, enum fab_cm_event_type type, int status,
			    const void *pdata, uint8_t plen, uint8_t rr, uint8_t id);

/* Milliseconds of CLOCK_MONOTONIC: the provider's deadlines (RNR, CONN_REQ). */
static inline int64_t soft_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The entry of send-queue position @i (c->lock held). */
static inline struct soft_swr *soft_sq_at(struct soft_conn *c, uint64_t i)
{
	return c->sq[i & (c->sq_cap - 1)];
}

static inline struct soft_conn *soft_conn(const struct fab_conn *c)
{
	return (struct soft_conn *)c;
}

#endif /* RPCRDMA_FAB_SOFT_INT_H */
