// SPDX-License-Identifier: MIT
/*
 * rr_call.c - dispatch: a complete Call (inline, or assembled around its
 * Read chunks by rr_read.c) goes up to the upper layer, which holds it until
 * its Reply is built (rr_reply.c) or it releases it; the last hold returns
 * the context, with its Read sinks, to the connection's receives.
 */
#include "rpcrdma/rr_internal.h"

/* Return a call context (and its Read sinks) to the connection. Any thread:
 * off the event thread it goes on a lock-free stack the refill takes over. */
/* In line: most calls have no sink, and rr_call_free runs for each. */
static inline __attribute__((always_inline)) void put_sinks(struct rr_call_ctx *ctx)
{
	struct rr_conn *c = ctx->conn;

	for (unsigned int i = 0; i < ctx->nsinks; i++) {
		if (ctx->sink[i]) {
			rr_sink_unexpose(ctx, i); /* freed before its Reads completed */
			rr_big_put(c->big, c, ctx->sink_ref[i]);
			ctx->sink[i] = NULL;
			rr_big_returned(c);
		}
	}
	ctx->nsinks = 0;
}

void rr_call_put_sinks(struct rr_call_ctx *ctx)
{
	put_sinks(ctx);
}

void rr_call_free(struct rr_call_ctx *ctx)
{
	struct rr_conn *c = ctx->conn;
	bool had_ref = ctx->has_ref;

	put_sinks(ctx);
	ctx->has_ref = false;
	ctx->queued = false;
	if (ctx->srq) {
		rr_srq_call_freed(c, ctx); /* its home thread's pool */
	} else if (rr_on_conn_thread(c)) {
		ctx->state = RR_CALL_FREE;
		ctx->next = c->free_calls;
		c->free_calls = ctx;
		rr_recv_refill(c);
	} else {
		ctx->state = RR_CALL_FREE;
		rr_conn_get(c);
		rr_handoff_push(&c->returned_calls, &ctx->free_link);
		rr_conn_kick(c); /* the event thread reposts */
	}
	/* Last: a held reference keeps the connection through the push. */
	if (had_ref)
		rr_conn_put(c);
}

void rr_call_put(struct rr_call_ctx *ctx)
{
	if (atomic_fetch_sub(&ctx->holds, 1) == 1)
		rr_call_free(ctx);
}

void rr_call_release(struct rr_call *call)
{
	rr_call_put((struct rr_call_ctx *)call);
}

void rr_call_hold(struct rr_call *call)
{
	atomic_fetch_add(&((struct rr_call_ctx *)call)->holds, 1);
}

void rr_call_dispatch(struct rr_call_ctx *ctx)
{
	struct rr_conn *c = ctx->conn;
	size_t len = 0;

	for (int i = 0; i < ctx->call.iovcnt; i++)
		len += ctx->call.iov[i].iov_len;
	ctx->call.conn = c;
	ctx->call.xid = ctx->pcl->xid;
	ctx->call.pcl = ctx->pcl;
	ctx->call.len = len;
	ctx->call.upper_priv = NULL;
	ctx->state = RR_CALL_UPPER;
	atomic_store(&ctx->holds, 1); /* the upper layer's, consumed by rr_reply */
	c->srv->ops.call(c->srv->ctx, &ctx->call);
}
