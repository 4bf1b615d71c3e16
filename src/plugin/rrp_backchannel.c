// SPDX-License-Identifier: MIT
/*
 * rrp_backchannel.c - NFSv4.1 callbacks on the client's own RDMA connection
 * (RFC 8167), for stock ganesha.
 *
 * ganesha makes its backchannel with clnt_vc_ncreate_svc(xprt, ...) and
 * drives calls with clnt_req_setup / CLNT_CALL_BACK / CLNT_CALL_WAIT /
 * clnt_req_release, all ntirpc calls made through the PLT. For transports of
 * ours these are answered here: the CLIENT is ours, its calls go out as
 * reverse-direction RDMA_MSG through the engine (own XID space, own credits),
 * and answers come back through the engine's bc_reply / bc_error upcalls.
 * For every other transport the real ntirpc function runs.
 *
 * Completion rules: a reply, an RDMA_ERROR answer (ERR_CHUNK), a timeout or
 * the loss of the connection completes the clnt_req exactly once, through
 * its cc_process_cb. ganesha's callback hooks then free the CB_SEQUENCE slot
 * with its sequence advanced (nfs41_release_single), so a callback the client
 * refused with ERR_CHUNK never leaves the slot busy (RFC 8267 section 4.5).
 * A send that fails instead returns its error from CLNT_CALL_BACK, and then
 * ganesha completes the call itself (nfs_rpc_call's caller frees it, its
 * slot and its session reference): cc_process_cb must never run for it.
 *
 * So a callback has one owner at a time: the sending thread until the
 * engine took it, then the pending list. It is listed in the same bc_lock
 * section as the successful rr_conn_bc_send, never before: whoever takes it
 * off the list (its reply, its RDMA_ERROR, the timer, the connection's
 * teardown) completes it, and a sender whose send failed owns it still and
 * only returns the error; it never meets a call someone else completed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <rpc/rpc.h>
#include <rpc/clnt.h>

#include "plugin/rrp_interpose.h"
#include "plugin/rrp_plugin.h"
#include "plugin/rrp_xdr.h"
#include "rpcrdma/rr_proto.h"

#define BC_EAGAIN_WAIT_MS 2000	/* wait this long for a backchannel credit */

struct rrp_clnt {
	CLIENT clnt;			/* first: ganesha sees only this */
	SVCXPRT *xprt;			/* SVC_REF held until cl_destroy */
	struct rr_conn *conn;		/* valid while !dead (bc_lock) */
	uint32_t prog, vers;
	bool dead;
	struct rrp_clnt *next;		/* all_clients */
};

/* A callback awaiting its answer: listed once the engine took it (bc_call),
 * owned by whoever takes it off the list. */
struct rrp_pending {
	struct rrp_pending *next;
	struct clnt_req *cc;
	struct rrp_clnt *cl;
	struct rr_conn *conn;
	uint32_t xid;
	struct timespec deadline;
};

/* Few callbacks are ever in flight: one lock and lists are enough. It also
 * orders a client's creation against its connection's teardown: the xprt's
 * connection is read (rrp_bc_clnt_vc_ncreate_svc) and cleared
 * (rrp_bc_conn_down) under it, so a client is either listed before the
 * teardown pass, which marks it dead, or made after it, with no connection. */
static pthread_mutex_t bc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rrp_pending *pending;
static struct rrp_clnt *all_clients;
static pthread_once_t timer_once = PTHREAD_ONCE_INIT;
/* One XID space for every CLIENT (RFC 8167 section 4: ours, apart from the
 * client's): several sessions' back channels may share a connection, and
 * an answer is matched by connection and XID. bc_lock. */
static uint32_t next_xid;
static bool next_xid_set;

/* Our CLIENTs share one ops table: telling them apart costs a compare, not
 * a walk of all clients under the lock on every ntirpc client call. */
static const struct clnt_ops bc_ops;

static bool is_ours(CLIENT *clnt)
{
	return clnt && clnt->cl_ops == &bc_ops;
}

/* Unlink and return the pending entry of @cc (or by conn + xid). */
static struct rrp_pending *take_locked(struct clnt_req *cc, struct rr_conn *conn, uint32_t xid)
{
	for (struct rrp_pending **pp = &pending; *pp; pp = &(*pp)->next) {
		struct rrp_pending *p = *pp;

		if ((cc && p->cc == cc) || (!cc && p->conn == conn && p->xid == xid)) {
			*pp = p->next;
			return p;
		}
	}
	return NULL;
}

/* Finish a callback once: the status is set, ganesha's hook runs. */
static void complete(struct clnt_req *cc, enum clnt_stat st)
{
	if (st != RPC_SUCCESS)
		cc->cc_error.re_status = st;
	cc->cc_refreshes = 0;
	cc->cc_flags |= CLNT_REQ_FLAG_ACKSYNC;
	cc->cc_process_cb(cc);
}

/* Default completion for CLNT_CALL_WAIT: wake the waiter. */
static void wake_waiter(struct clnt_req *cc)
{
	pthread_mutex_lock(&cc->cc_we.mtx);
	pthread_cond_signal(&cc->cc_we.cv);
	pthread_mutex_unlock(&cc->cc_we.mtx);
}

/* ---- timeouts -------------------------------------------------------- */

static bool before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static void *timer_thread(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "rpcrdma-bctimer");
	for (;;) {
		struct timespec now;
		struct rrp_pending *expired = NULL;

		usleep(100 * 1000);
		clock_gettime(CLOCK_MONOTONIC, &now);
		pthread_mutex_lock(&bc_lock);
		for (struct rrp_pending **pp = &pending; *pp;) {
			struct rrp_pending *p = *pp;

			if (before(&p->deadline, &now)) {
				*pp = p->next;
				p->next = expired;
				expired = p;
				/* Its credit back (the engine drops a late
				 * answer): p->conn is live while p is listed. */
				if (p->conn)
					rr_conn_bc_abandon(p->conn, p->xid);
			} else {
				pp = &p->next;
			}
		}
		pthread_mutex_unlock(&bc_lock);
		while (expired) {
			struct rrp_pending *p = expired;

			expired = p->next;
			rrp_log("callback xid %#x: no answer, timed out", p->xid);
			complete(p->cc, RPC_TIMEDOUT);
			free(p);
		}
	}
	return NULL;
}

static void start_timer(void)
{
	pthread_t t;

	pthread_create(&t, NULL, timer_thread, NULL);
	pthread_detach(t);
}

/* ---- CLIENT ops ------------------------------------------------------- */

static void set_deadline(struct rrp_pending *p, struct timespec timeout)
{
	clock_gettime(CLOCK_MONOTONIC, &p->deadline);
	p->deadline.tv_sec += timeout.tv_sec;
	p->deadline.tv_nsec += timeout.tv_nsec;
	if (p->deadline.tv_nsec >= 1000000000L) {
		p->deadline.tv_sec++;
		p->deadline.tv_nsec -= 1000000000L;
	}
}

/*
 * Encode and send @cc; when the engine takes it, @p (its pending entry) is
 * listed in the same bc_lock section, and from then on @cc and @p are the
 * list's: this thread touches neither again (an answer may complete and
 * free @cc before bc_call returns). On failure nothing was listed.
 */
static enum clnt_stat bc_call(struct clnt_req *cc, struct rrp_pending *p)
{
	struct rrp_clnt *cl = (struct rrp_clnt *)cc->cc_clnt;
	struct rrp_xdr_enc *enc = malloc(sizeof(*enc));
	struct iovec iov[RRP_ENC_MAX_SEG];
	const uint32_t xid = cc->cc_xid, proc = cc->cc_proc;
	const struct timespec timeout = cc->cc_timeout;
	XDR *x;
	int n, ret = -ENOTCONN;

	if (!enc || rrp_xdr_enc_init(enc)) {
		free(enc);
		return RPC_SYSTEMERROR;
	}
	x = &enc->xdrs;
	if (!XDR_PUTUINT32(x, xid) || !XDR_PUTUINT32(x, CALL) ||
	    !XDR_PUTUINT32(x, RPC_MSG_VERSION) || !XDR_PUTUINT32(x, cl->prog) ||
	    !XDR_PUTUINT32(x, cl->vers) || !XDR_PUTUINT32(x, proc) ||
	    !AUTH_MARSHALL(cc->cc_auth, x) ||
	    !AUTH_WRAP(cc->cc_auth, x, cc->cc_call.proc, cc->cc_call.where) || enc->failed) {
		rrp_xdr_enc_fini(enc);
		free(enc);
		return RPC_CANTENCODEARGS;
	}
	n = rrp_xdr_enc_iov(enc, iov);
	p->cc = cc;
	p->cl = cl;
	p->xid = xid;
	for (int waited = 0;; waited += 10) {
		pthread_mutex_lock(&bc_lock);
		ret = cl->dead ? -ENOTCONN : rr_conn_bc_send(cl->conn, xid, iov, n);
		if (ret == 0) {
			/* Sent: the list's now, before any answer can look. */
			p->conn = cl->conn;
			set_deadline(p, timeout);
			p->next = pending;
			pending = p;
		}
		pthread_mutex_unlock(&bc_lock);
		/* A connection going down meanwhile marks cl dead: the next
		 * try fails, and this thread still owns the call. */
		if (ret != -EAGAIN || waited >= BC_EAGAIN_WAIT_MS)
			break;
		usleep(10 * 1000); /* the client's backchannel grant is in use */
	}
	rrp_xdr_enc_fini(enc);
	free(enc);
	switch (ret) {
	case 0:
		return RPC_SUCCESS;
	case -EMSGSIZE:
		rrp_log("callback xid %#x proc %u is larger than the client's "
				"inline threshold: not sent (RFC 8167 callbacks are inline only)",
			xid, proc);
		return RPC_CANTENCODEARGS;
	default:
		return RPC_CANTSEND;
	}
}

static void bc_abort(CLIENT *clnt)
{
	(void)clnt;
}

static bool bc_freeres(CLIENT *clnt, xdrproc_t xres, void *resp)
{
	XDR x;

	(void)clnt;
	memset(&x, 0, sizeof(x));
	x.x_op = XDR_FREE;
	return xres(&x, resp);
}

static void bc_destroy(CLIENT *clnt)
{
	struct rrp_clnt *cl = (struct rrp_clnt *)clnt;

	pthread_mutex_lock(&bc_lock);
	for (struct rrp_clnt **pp = &all_clients; *pp; pp = &(*pp)->next) {
		if (*pp == cl) {
			*pp = cl->next;
			break;
		}
	}
	pthread_mutex_unlock(&bc_lock);
	SVC_RELEASE(cl->xprt, SVC_RELEASE_FLAG_NONE);
	pthread_mutex_destroy(&clnt->cl_lock);
	free(cl);
}

static bool bc_control(CLIENT *clnt, u_int rq, void *in)
{
	(void)clnt;
	(void)rq;
	(void)in;
	return false;
}

static enum clnt_stat send_pending(struct clnt_req *cc);

static const struct clnt_ops bc_ops = {
	.cl_call = send_pending, /* as CLNT_CALL_BACK: listed for its answer */
	.cl_abort = bc_abort,
	.cl_freeres = bc_freeres,
	.cl_destroy = bc_destroy,
	.cl_control = bc_control,
};

/* ---- hooks of the interposed ntirpc entry points (rrp_interpose.h) ------ */

CLIENT *rrp_bc_clnt_vc_ncreate_svc(const SVCXPRT *xprt, const rpcprog_t prog,
				   const rpcvers_t vers, const uint32_t flags)
{
	char peer[RR_CONN_PEER_MAX] = "?";
	struct rrp_clnt *cl;
	bool live;

	if (!rrp_is_our_xprt((SVCXPRT *)xprt))
		return rrp_real->clnt_vc_ncreate_svc(xprt, prog, vers, flags);
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return NULL;
	cl->clnt.cl_ops = (struct clnt_ops *)&bc_ops;
	cl->clnt.cl_netid = (char *)"rdma";
	cl->clnt.cl_tp = (char *)"rpcrdma";
	cl->clnt.cl_refcnt = 1;
	cl->clnt.cl_error.re_status = RPC_SUCCESS;
	pthread_mutex_init(&cl->clnt.cl_lock, NULL);
	cl->xprt = (SVCXPRT *)xprt;
	SVC_REF(cl->xprt, SVC_REF_FLAG_NONE);
	cl->prog = (uint32_t)prog;
	cl->vers = (uint32_t)vers;
	pthread_mutex_lock(&bc_lock);
	cl->conn = rrp_xprt_conn(cl->xprt);
	live = cl->conn != NULL;
	cl->dead = !live;
	if (live) /* freed once the lock is let go and teardown ran */
		snprintf(peer, sizeof(peer), "%s", rr_conn_peer(cl->conn));
	cl->next = all_clients;
	all_clients = cl;
	pthread_mutex_unlock(&bc_lock);
	pthread_once(&timer_once, start_timer);
	/* cl->conn is bc_lock's: teardown may clear it by now. */
	rrp_log("%s: backchannel up (prog %u)%s", peer, cl->prog,
		live ? "" : ", its connection already closed");
	return &cl->clnt;
}

enum clnt_stat rrp_bc_clnt_req_setup(struct clnt_req *cc, struct timespec timeout)
{
	if (!is_ours(cc->cc_clnt))
		return rrp_real->clnt_req_setup(cc, timeout);
	cc->cc_error.re_errno = 0;
	cc->cc_error.re_status = RPC_SUCCESS;
	cc->cc_flags = CLNT_REQ_FLAG_NONE;
	cc->cc_process_cb = wake_waiter;
	cc->cc_refreshes = 2;
	cc->cc_timeout = timeout;
	if (timeout.tv_sec <= 0 && timeout.tv_nsec <= 0)
		cc->cc_timeout.tv_sec = 60; /* the Linux backchannel's own timeout */
	pthread_mutex_lock(&bc_lock);
	if (!next_xid_set) { /* our own XID space: start anywhere */
		next_xid = (uint32_t)time(NULL) * 2654435761u;
		next_xid_set = true;
	}
	cc->cc_xid = ++next_xid;
	pthread_mutex_unlock(&bc_lock);
	/* clnt_req_release drops this (as ntirpc's setup takes it). */
	CLNT_REF(cc->cc_clnt, CLNT_REF_FLAG_NONE);
	return RPC_SUCCESS;
}

/*
 * Send @cc with a pending entry that the answer will find. RPC_SUCCESS: the
 * call is the pending list's and completes exactly once through
 * cc_process_cb (perhaps before this returns). Anything else: it was never
 * listed, cc_process_cb never runs for it, and the caller completes it (as
 * ganesha's nfs_rpc_call caller does on an error return).
 */
static enum clnt_stat send_pending(struct clnt_req *cc)
{
	struct rrp_pending *p = calloc(1, sizeof(*p));
	enum clnt_stat st;

	if (!p)
		return RPC_SYSTEMERROR;
	st = bc_call(cc, p);
	if (st != RPC_SUCCESS)
		free(p); /* never listed: still ours */
	return st;
}

enum clnt_stat rrp_bc_clnt_req_callback(struct clnt_req *cc)
{
	if (!is_ours(cc->cc_clnt))
		return rrp_real->clnt_req_callback(cc);
	return send_pending(cc);
}

enum clnt_stat rrp_bc_clnt_req_wait_reply(struct clnt_req *cc)
{
	enum clnt_stat st;

	if (!is_ours(cc->cc_clnt))
		return rrp_real->clnt_req_wait_reply(cc);
	/* clnt_req_fill left cc_we.mtx locked by this thread. */
	st = send_pending(cc);
	if (st != RPC_SUCCESS)
		return st;
	while (!(cc->cc_flags & CLNT_REQ_FLAG_ACKSYNC))
		pthread_cond_wait(&cc->cc_we.cv, &cc->cc_we.mtx);
	return cc->cc_error.re_status;
}

int rrp_bc_clnt_req_release(struct clnt_req *cc)
{
	struct rrp_pending *p;
	CLIENT *clnt = cc->cc_clnt;
	int refs;

	if (!is_ours(clnt))
		return rrp_real->clnt_req_release(cc);
	/* ntirpc's own release would look for its private connection record
	 * (clnt_req_reset): do the same steps without it. */
	refs = __atomic_sub_fetch(&cc->cc_refcnt, 1, __ATOMIC_ACQ_REL);
	if (refs > 0)
		return refs;
	/* Listed still only if ganesha let go of a call before it completed:
	 * forget it, and give its credit back while its connection is live. */
	pthread_mutex_lock(&bc_lock);
	p = take_locked(cc, NULL, 0);
	if (p && p->conn)
		rr_conn_bc_abandon(p->conn, p->xid);
	pthread_mutex_unlock(&bc_lock);
	free(p);
	clnt_req_fini(cc);
	CLNT_RELEASE(clnt, CLNT_RELEASE_FLAG_NONE);
	cc->cc_free_cb(cc, cc->cc_size);
	return refs;
}

/* Which transport a session's back channel uses, where the host asks
 * (rrp_host_ops.bc_client_xprt; ntirpc's answer reads its own private
 * record, which ours has not). */
SVCXPRT *rrp_bc_clnt_vc_get_client_xprt(const CLIENT *clnt)
{
	if (!is_ours((CLIENT *)clnt))
		return rrp_real->clnt_vc_get_client_xprt(clnt);
	return ((const struct rrp_clnt *)clnt)->xprt;
}

/* ---- answers from the engine ------------------------------------------- */

struct bc_answer {
	struct rr_conn *conn;
	size_t len;
	uint8_t msg[];
};

static void decode_answer(void *arg)
{
	struct bc_answer *a = arg;
	struct iovec iov = {a->msg, a->len};
	struct rrp_xdr_dec dec;
	struct rpc_msg m;
	struct rrp_pending *p;
	struct clnt_req *cc;

	rrp_xdr_dec_init(&dec, &iov, 1);
	memset(&m, 0, sizeof(m));
	rpc_msg_init(&m);
	if (!xdr_dplx_decode(&dec.xdrs, &m) || m.rm_direction != REPLY) {
		free(a);
		return;
	}
	pthread_mutex_lock(&bc_lock);
	p = take_locked(NULL, a->conn, m.rm_xid);
	pthread_mutex_unlock(&bc_lock);
	if (!p) {
		free(a);
		return; /* timed out already, or never ours */
	}
	cc = p->cc;
	free(p);
	_seterr_reply(&m, &cc->cc_error);
	if (cc->cc_error.re_status == RPC_SUCCESS && cc->cc_reply.proc &&
	    !AUTH_UNWRAP(cc->cc_auth, &dec.xdrs, cc->cc_reply.proc, cc->cc_reply.where))
		cc->cc_error.re_status = RPC_CANTDECODERES;
	free(a);
	complete(cc, RPC_SUCCESS);
}

void rrp_bc_reply(void *ctx, struct rr_conn *conn, const void *msg, size_t len, uint32_t credits)
{
	struct bc_answer *a = malloc(sizeof(*a) + len);

	(void)ctx;
	(void)credits; /* the engine keeps the backchannel grant */
	/* The engine hands up only the answer to a callback still outstanding,
	 * once: this copy and the worker queue's entry are bounded by the
	 * client's grant (unasked or late Replies never get here). */
	if (!a)
		return;
	a->conn = conn;
	a->len = len;
	memcpy(a->msg, msg, len);
	/* ganesha's completion hooks take locks: run them on a worker. */
	if (!rrp_queue_fn(decode_answer, a))
		free(a);
}

struct bc_failure {
	struct clnt_req *cc;
	enum clnt_stat st;
};

static void fail_one(void *arg)
{
	struct bc_failure *f = arg;

	complete(f->cc, f->st);
	free(f);
}

/* Complete the taken-out call @p with @st on a worker (ganesha's completion
 * hooks take locks). With no memory for that, @p goes back to the pending
 * list due now and the timer completes it: a call that never completes would
 * keep ganesha's back-channel slot busy for good. */
static void fail_pending(struct rrp_pending *p, enum clnt_stat st)
{
	struct bc_failure *f = malloc(sizeof(*f));

	if (f) {
		f->cc = p->cc;
		f->st = st;
		if (rrp_queue_fn(fail_one, f)) {
			free(p);
			return;
		}
		free(f);
	}
	p->conn = NULL; /* may be freed: no answer can match it any more */
	clock_gettime(CLOCK_MONOTONIC, &p->deadline);
	pthread_mutex_lock(&bc_lock);
	p->next = pending;
	pending = p;
	pthread_mutex_unlock(&bc_lock);
}

void rrp_bc_error(void *ctx, struct rr_conn *conn, uint32_t xid, uint32_t err)
{
	struct rrp_pending *p;

	(void)ctx;
	pthread_mutex_lock(&bc_lock);
	p = take_locked(NULL, conn, xid);
	pthread_mutex_unlock(&bc_lock);
	if (!p)
		return;
	rrp_log("%s: callback xid %#x refused with RDMA_ERROR %s",
		rr_conn_peer(conn), xid,
		err == RR_ERR_CHUNK ? "ERR_CHUNK" : err == RR_ERR_VERS ? "ERR_VERS" : "(unknown code)");
	fail_pending(p, RPC_CANTDECODERES);
}

/* The connection of @xprt is gone: @xprt forgets it, its clients send
 * nothing more, and every pending callback on it fails at once. */
void rrp_bc_conn_down(SVCXPRT *xprt, struct rr_conn *conn)
{
	struct rrp_pending *failed = NULL;

	pthread_mutex_lock(&bc_lock);
	rrp_xprt_forget_conn(xprt);
	for (struct rrp_clnt *c = all_clients; c; c = c->next)
		if (c->conn == conn) {
			c->dead = true;
			c->conn = NULL;
		}
	for (struct rrp_pending **pp = &pending; *pp;) {
		struct rrp_pending *p = *pp;

		if (p->conn == conn) {
			*pp = p->next;
			p->next = failed;
			failed = p;
		} else {
			pp = &p->next;
		}
	}
	pthread_mutex_unlock(&bc_lock);
	while (failed) {
		struct rrp_pending *p = failed;

		failed = p->next;
		fail_pending(p, RPC_CANTRECV);
	}
}
