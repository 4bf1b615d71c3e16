// SPDX-License-Identifier: MIT
/*
 * rrp_bc_probe.c - what rrp_backchannel.c calls of the rest of the plugin
 * and of the engine, stood in for (one xprt, one connection a test frees),
 * and ganesha's calls into it, for test_rrp_backchannel.cc. C: the plugin's
 * headers are C11 (stdatomic.h) and ntirpc's.
 */
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
	struct rr_conn *live;		/* the connection, until freed */
	atomic_uint sends, sends_after_free;
	void (*on_read)(void *arg);
	void *on_read_arg;
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

int rr_conn_bc_send(struct rr_conn *conn, uint32_t xid, const struct iovec *iov, int iovcnt)
{
	struct bc_probe *p = the_probe;

	(void)xid;
	(void)iov;
	(void)iovcnt;
	atomic_fetch_add(&p->sends, 1);
	if (conn != p->live)
		atomic_fetch_add(&p->sends_after_free, 1);
	return 0;
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
	p->live = p->conn;
	the_probe = p;
	return p;
}

void bc_probe_free(struct bc_probe *p)
{
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
	rrp_bc_conn_down(&p->xprt, p->live);
	p->live = NULL; /* freed: the engine frees it once conn_down returns */
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
