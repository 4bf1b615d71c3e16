// SPDX-License-Identifier: MIT
/*
 * rrp_bc_probe.c - what rrp_backchannel.c calls of the rest of the plugin
 * and of the engine, stood in for (one xprt, one connection a test frees),
 * and ganesha's calls into it, for test_rrp_backchannel.cc. C: the plugin's
 * headers are C11 (stdatomic.h) and ntirpc's.
 *
 * The engine stand-in keeps what src/rpcrdma/rr_backchannel.c promises the
 * plugin: a sent XID is outstanding until its answer or rr_conn_bc_abandon,
 * whichever is first; a test may fill the client's grant (sends answer
 * -EAGAIN). ganesha's side (bc_probe_call_back) is nfs_rpc_call's: a call
 * completes through its cc_process_cb when CLNT_CALL_BACK returned
 * RPC_SUCCESS, else by the caller at that error return; both are counted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <rpc/rpc.h>
#include <rpc/clnt.h>

#include "plugin/rrp_interpose.h"
#include "plugin/rrp_plugin.h"
#include "plugin/rrp_bc_probe.h"

struct bc_probe {
	SVCXPRT xprt;			/* first: the xprt is the probe */
	struct xp_ops ops;
	struct rr_conn *conn;		/* as rrp_xprt.c's x->conn */
	/* the connection, until freed; answers may race its teardown */
	_Atomic(struct rr_conn *) live;
	atomic_uint sends, sends_after_free;
	void (*on_read)(void *arg);
	void *on_read_arg;
	/* The engine's outstanding XIDs (eng_lock). */
	pthread_mutex_t eng_lock;
	uint32_t out[BC_PROBE_MAX_OUT];
	unsigned int nout;
	bool full;
	uint32_t last_xid;
	atomic_uint eagains, abandons, abandons_missed, answers_dropped;
	/* Every ganesha-side call made (calls_lock), freed with the probe. */
	pthread_mutex_t calls_lock;
	struct bc_probe_call *calls;
};

struct bc_probe_call {
	struct clnt_req cc; /* first */
	struct bc_probe_call *next;
	atomic_int send_st;
	atomic_int result;
	atomic_uint completions, frees;
	atomic_bool completed;
};

/* Stands for the engine's connection: only its address is used. */
static char conn_token[1];

const struct rrp_calls *rrp_real; /* never reached: every xprt is ours */

static struct bc_probe *PR(SVCXPRT *xprt)
{
	return (struct bc_probe *)xprt;
}

bool rrp_is_our_xprt(SVCXPRT *xprt)
{
	return xprt != NULL;
}

struct rr_conn *rrp_xprt_conn(SVCXPRT *xprt)
{
	struct bc_probe *p = PR(xprt);
	struct rr_conn *c = p->conn;
	void (*fn)(void *arg) = p->on_read;

	p->on_read = NULL;
	if (fn)
		fn(p->on_read_arg);
	return c;
}

void rrp_xprt_forget_conn(SVCXPRT *xprt)
{
	PR(xprt)->conn = NULL;
}

/* The CLIENT's xprt is the probe: the engine's send looks it up by conn. */
static struct bc_probe *the_probe;

static int out_find_locked(const struct bc_probe *p, uint32_t xid)
{
	for (unsigned int i = 0; i < p->nout; i++)
		if (p->out[i] == xid)
			return (int)i;
	return -1;
}

/* The engine's take of @xid (answer or abandon): true when outstanding. */
static bool out_take(struct bc_probe *p, uint32_t xid)
{
	int i;

	pthread_mutex_lock(&p->eng_lock);
	i = out_find_locked(p, xid);
	if (i >= 0)
		p->out[i] = p->out[--p->nout];
	pthread_mutex_unlock(&p->eng_lock);
	return i >= 0;
}

int rr_conn_bc_send(struct rr_conn *conn, uint32_t xid, const struct iovec *iov, int iovcnt)
{
	struct bc_probe *p = the_probe;
	int ret = 0;

	(void)iov;
	(void)iovcnt;
	atomic_fetch_add(&p->sends, 1);
	if (conn != atomic_load(&p->live))
		atomic_fetch_add(&p->sends_after_free, 1);
	pthread_mutex_lock(&p->eng_lock);
	p->last_xid = xid;
	if (p->full)
		ret = -EAGAIN;
	else if (out_find_locked(p, xid) >= 0)
		ret = -EEXIST;
	else if (p->nout == BC_PROBE_MAX_OUT)
		ret = -EAGAIN;
	else
		p->out[p->nout++] = xid;
	pthread_mutex_unlock(&p->eng_lock);
	if (ret == -EAGAIN)
		atomic_fetch_add(&p->eagains, 1);
	return ret;
}

int rr_conn_bc_abandon(struct rr_conn *conn, uint32_t xid)
{
	struct bc_probe *p = the_probe;

	(void)conn;
	if (out_take(p, xid)) {
		atomic_fetch_add(&p->abandons, 1);
		return 0;
	}
	atomic_fetch_add(&p->abandons_missed, 1);
	return -ENOENT;
}

const char *rr_conn_peer(const struct rr_conn *conn)
{
	(void)conn;
	return "probe";
}

void rrp_log_at(enum rrp_log_level level, const char *func, const char *fmt, ...)
{
	(void)level;
	(void)func;
	(void)fmt;
}

bool rrp_queue_fn(void (*fn)(void *arg), void *arg)
{
	fn(arg);
	return true;
}

static void probe_destroy(SVCXPRT *xprt, u_int flags, const char *tag, const int line)
{
	(void)xprt;
	(void)flags;
	(void)tag;
	(void)line;
}

struct bc_probe *bc_probe_new(void)
{
	struct bc_probe *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->ops.xp_destroy = probe_destroy;
	p->xprt.xp_ops = &p->ops;
	p->xprt.xp_refcnt = 1;
	pthread_mutex_init(&p->xprt.xp_lock, NULL);
	p->conn = (struct rr_conn *)conn_token;
	atomic_store(&p->live, p->conn);
	pthread_mutex_init(&p->eng_lock, NULL);
	pthread_mutex_init(&p->calls_lock, NULL);
	the_probe = p;
	return p;
}

void bc_probe_free(struct bc_probe *p)
{
	while (p->calls) {
		struct bc_probe_call *c = p->calls;

		p->calls = c->next;
		free(c);
	}
	pthread_mutex_destroy(&p->calls_lock);
	pthread_mutex_destroy(&p->eng_lock);
	pthread_mutex_destroy(&p->xprt.xp_lock);
	the_probe = NULL;
	free(p);
}

void bc_probe_on_conn_read(struct bc_probe *p, void (*fn)(void *arg), void *arg)
{
	p->on_read_arg = arg;
	p->on_read = fn;
}

void *bc_probe_create(struct bc_probe *p)
{
	return rrp_bc_clnt_vc_ncreate_svc(&p->xprt, 0x40000000, 1, 0);
}

void bc_probe_conn_down(struct bc_probe *p)
{
	rrp_bc_conn_down(&p->xprt, atomic_load(&p->live));
	/* freed: the engine frees it once conn_down returns */
	atomic_store(&p->live, NULL);
}

static void free_nothing(struct clnt_req *cc, size_t size)
{
	(void)cc;
	(void)size;
}

int bc_probe_callback(void *clnt)
{
	struct timespec timeout = {.tv_sec = 5};
	struct clnt_req cc;
	enum clnt_stat st;

	memset(&cc, 0, sizeof(cc));
	clnt_req_fill(&cc, clnt, authnone_ncreate(), 0, (xdrproc_t)xdr_void, NULL,
		      (xdrproc_t)xdr_void, NULL);
	cc.cc_free_cb = free_nothing;
	st = rrp_bc_clnt_req_setup(&cc, timeout);
	if (st == RPC_SUCCESS)
		st = rrp_bc_clnt_req_callback(&cc);
	rrp_bc_clnt_req_release(&cc);
	return st;
}

void bc_probe_release(void *clnt)
{
	CLNT_RELEASE((CLIENT *)clnt, CLNT_RELEASE_FLAG_NONE);
}

unsigned int bc_probe_sends(const struct bc_probe *p)
{
	return atomic_load(&p->sends);
}

unsigned int bc_probe_sends_after_free(const struct bc_probe *p)
{
	return atomic_load(&p->sends_after_free);
}

int bc_probe_xprt_refs(const struct bc_probe *p)
{
	return __atomic_load_n(&p->xprt.xp_refcnt, __ATOMIC_ACQUIRE);
}

/* ---- ganesha's nfs_rpc_call, and the engine's answers ------------------- */

/* nfs_rpc_call_free: counted; the memory stays the probe's until
 * bc_probe_free, so a second free is a count, not a crash. */
static void call_free(struct clnt_req *cc, size_t size)
{
	(void)size;
	atomic_fetch_add(&((struct bc_probe_call *)cc)->frees, 1);
}

/* ganesha's free_rpc_call: clnt_req_release. clnt_req_fill left the
 * request's mutex locked and clnt_req_fini unlocks it: the probe let go of
 * it after the fill and takes it here, so each thread unlocks its own. */
static void call_release(struct bc_probe_call *c)
{
	pthread_mutex_lock(&c->cc.cc_we.mtx);
	rrp_bc_clnt_req_release(&c->cc);
}

/* A completion, once: a second is counted and does nothing more, so that the
 * test sees it instead of the double free it would be in ganesha. */
static void call_completed(struct bc_probe_call *c, int st)
{
	atomic_fetch_add(&c->completions, 1);
	if (atomic_exchange(&c->completed, true))
		return;
	atomic_store(&c->result, st);
	call_release(c);
}

/* nfs_rpc_call_process: the hook, then free_rpc_call. */
static void call_process(struct clnt_req *cc)
{
	call_completed((struct bc_probe_call *)cc, (int)cc->cc_error.re_status);
}

struct bc_probe_call *bc_probe_call_new(struct bc_probe *p)
{
	struct bc_probe_call *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	atomic_store(&c->send_st, -1);
	atomic_store(&c->result, -1);
	pthread_mutex_lock(&p->calls_lock);
	c->next = p->calls;
	p->calls = c;
	pthread_mutex_unlock(&p->calls_lock);
	return c;
}

int bc_probe_call_back(struct bc_probe_call *c, void *clnt, int timeout_ms)
{
	struct timespec timeout = {.tv_sec = timeout_ms / 1000,
				   .tv_nsec = (long)(timeout_ms % 1000) * 1000000L};
	enum clnt_stat st;

	clnt_req_fill(&c->cc, clnt, authnone_ncreate(), 1, (xdrproc_t)xdr_void, NULL,
		      (xdrproc_t)xdr_void, NULL);
	pthread_mutex_unlock(&c->cc.cc_we.mtx); /* call_release takes it again */
	c->cc.cc_size = sizeof(*c);
	c->cc.cc_free_cb = call_free;
	st = rrp_bc_clnt_req_setup(&c->cc, timeout);
	if (st == RPC_SUCCESS) {
		c->cc.cc_process_cb = call_process;
		st = rrp_bc_clnt_req_callback(&c->cc);
	}
	atomic_store(&c->send_st, (int)st);
	if (st != RPC_SUCCESS) /* nfs_rpc_v41_single's error path */
		call_completed(c, (int)st);
	return (int)st;
}

int bc_probe_call_send_status(const struct bc_probe_call *c)
{
	return atomic_load(&c->send_st);
}

int bc_probe_call_result(const struct bc_probe_call *c)
{
	return atomic_load(&c->result);
}

unsigned int bc_probe_call_completions(const struct bc_probe_call *c)
{
	return atomic_load(&c->completions);
}

unsigned int bc_probe_call_frees(const struct bc_probe_call *c)
{
	return atomic_load(&c->frees);
}

void bc_probe_set_grant_full(struct bc_probe *p, bool full)
{
	pthread_mutex_lock(&p->eng_lock);
	p->full = full;
	pthread_mutex_unlock(&p->eng_lock);
}

uint32_t bc_probe_last_xid(struct bc_probe *p)
{
	uint32_t x;

	pthread_mutex_lock(&p->eng_lock);
	x = p->last_xid;
	pthread_mutex_unlock(&p->eng_lock);
	return x;
}

unsigned int bc_probe_outstanding(struct bc_probe *p)
{
	unsigned int n;

	pthread_mutex_lock(&p->eng_lock);
	n = p->nout;
	pthread_mutex_unlock(&p->eng_lock);
	return n;
}

unsigned int bc_probe_outstanding_xids(struct bc_probe *p, uint32_t *xids, unsigned int max)
{
	unsigned int n;

	pthread_mutex_lock(&p->eng_lock);
	for (n = 0; n < p->nout && n < max; n++)
		xids[n] = p->out[n];
	pthread_mutex_unlock(&p->eng_lock);
	return n;
}

bool bc_probe_is_outstanding(struct bc_probe *p, uint32_t xid)
{
	bool yes;

	pthread_mutex_lock(&p->eng_lock);
	yes = out_find_locked(p, xid) >= 0;
	pthread_mutex_unlock(&p->eng_lock);
	return yes;
}

unsigned int bc_probe_eagains(const struct bc_probe *p)
{
	return atomic_load(&p->eagains);
}

unsigned int bc_probe_abandons(const struct bc_probe *p)
{
	return atomic_load(&p->abandons);
}

unsigned int bc_probe_abandons_missed(const struct bc_probe *p)
{
	return atomic_load(&p->abandons_missed);
}

unsigned int bc_probe_answers_dropped(const struct bc_probe *p)
{
	return atomic_load(&p->answers_dropped);
}

/* An accepted, successful RPC Reply with no results (RFC 5531 section 9). */
static void reply_up(struct rr_conn *conn, uint32_t xid)
{
	uint32_t w[6] = {htonl(xid), htonl(REPLY), htonl(MSG_ACCEPTED), 0, 0, htonl(SUCCESS)};

	rrp_bc_reply(NULL, conn, w, sizeof(w), 2);
}

void bc_probe_reply_unchecked(struct bc_probe *p, uint32_t xid)
{
	struct rr_conn *conn = atomic_load(&p->live);

	if (conn)
		reply_up(conn, xid);
}

bool bc_probe_reply(struct bc_probe *p, uint32_t xid)
{
	struct rr_conn *conn = atomic_load(&p->live);

	/* Taken off the set, it is handed up even if the connection goes down
	 * meanwhile: as a Reply the engine delivered runs on a worker later. */
	if (!conn || !out_take(p, xid)) {
		atomic_fetch_add(&p->answers_dropped, 1);
		return false;
	}
	reply_up(conn, xid);
	return true;
}
