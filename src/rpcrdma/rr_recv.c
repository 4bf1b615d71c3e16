// SPDX-License-Identifier: MIT
/*
 * rr_recv.c - the receive path: keep receives posted, decode each received
 * transport header, answer header faults with RDMA_ERROR (never a
 * disconnect), tell reverse-direction replies from calls by RPC msg_type
 * (RFC 8167 section 4), and hand complete Calls up.
 */
#include <errno.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"

#define RPC_MSG_TYPE_CALL 0u

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Receives per post: one fab_post_recv (a doorbell, or a system call on rxe)
 * for up to this many. */
#define RR_RECV_CHAIN 16

/* Post free contexts up to the target, RR_RECV_CHAIN to a post. Out of line:
 * its arrays are built only when a batch is due. */
static __attribute__((noinline)) void post_receives(struct rr_conn *c)
{
	while (c->posted < c->post_target && c->free_calls) {
		struct fab_recv_wr wr[RR_RECV_CHAIN], *bad = NULL;
		struct fab_sge sge[RR_RECV_CHAIN];
		struct rr_call_ctx *ctx[RR_RECV_CHAIN];
		uint32_t n = 0, done;

		while (n < RR_RECV_CHAIN && c->posted + n < c->post_target && c->free_calls) {
			ctx[n] = c->free_calls;
			c->free_calls = ctx[n]->next;
			ctx[n]->next = NULL;
			ctx[n]->state = RR_CALL_POSTED;
			sge[n] = (struct fab_sge){
			    .addr = ctx[n]->buf,
			    .length = c->srv->cfg.inline_size,
			    .lkey = c->recv_pool.mr->lkey,
			};
			wr[n] = (struct fab_recv_wr){
			    .next = NULL,
			    .wr_id = (uintptr_t)ctx[n] | RR_WRID_RECV,
			    .sg_list = &sge[n],
			    .num_sge = 1,
			};
			if (n)
				wr[n - 1].next = &wr[n];
			n++;
		}
		done = fab_post_recv(c->fc, &wr[0], &bad) ? (uint32_t)(bad ? bad - wr : 0) : n;
		c->posted += done;
		if (done < n) {
			/* The rest never went out: back to the free list. */
			for (uint32_t i = done; i < n; i++) {
				ctx[i]->state = RR_CALL_FREE;
				ctx[i]->next = c->free_calls;
				c->free_calls = ctx[i];
			}
			rr_conn_close(c, "posting a receive failed");
			return;
		}
	}
}

/*
 * Top the receive queue back up to its target, in batches: the target is
 * credits + bc_credits + recv_batch, and posting waits until recv_batch are
 * missing, so a client within its grant always finds a receive and one post
 * serves many. Called before a received message is processed, so the receive
 * that a reply's credit promises is posted before that reply is sent. Event
 * thread: free_calls and posted are its own; calls other threads gave back
 * are taken over first.
 */
void rr_recv_refill(struct rr_conn *c)
{
	uint32_t batch = c->srv->cfg.recv_batch ? c->srv->cfg.recv_batch : 1;

	if (c->srq) {
		rr_srq_refill(c->srv);
		return;
	}
	for (struct rr_handoff *h = rr_handoff_take(&c->returned_calls); h;) {
		struct rr_call_ctx *back = RR_CONTAINER_OF(h, struct rr_call_ctx, free_link);

		h = h->next;
		back->next = c->free_calls;
		c->free_calls = back;
	}
	if (c->state != RR_CONN_CLOSING && c->posted + batch <= c->post_target)
		post_receives(c);
}

/* Return a call context (and its Read sinks) to the connection. Any thread:
 * off the event thread it goes on a lock-free stack the refill takes over. */
void rr_call_free(struct rr_call_ctx *ctx)
{
	struct rr_conn *c = ctx->conn;
	struct rr_server *srv = c->srv; /* after a hand-off, c may be freed any time */
	bool had_ref = ctx->has_ref;

	for (unsigned int i = 0; i < ctx->nsinks; i++) {
		if (ctx->sink[i]) {
			rr_big_put(c->big, c, ctx->sink_ref[i]);
			ctx->sink[i] = NULL;
			rr_big_returned(srv);
		}
	}
	ctx->nsinks = 0;
	ctx->has_ref = false;
	ctx->queued = false;
	if (ctx->srq) {
		/* srq_held counts across threads: the one lock left on this path,
		 * and only in the shared-pool mode. */
		pthread_mutex_lock(&c->lock);
		c->srq_held--;
		pthread_mutex_unlock(&c->lock);
		rr_srq_put(ctx); /* the pool's now: ctx may be reposted at once */
		if (rr_on_event_thread(srv))
			rr_recv_refill(c);
		else
			rr_server_kick(srv);
	} else if (rr_on_event_thread(srv)) {
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
	ctx->call.xid = ctx->pcl.xid;
	ctx->call.pcl = &ctx->pcl;
	ctx->call.len = len;
	ctx->call.upper_priv = NULL;
	ctx->state = RR_CALL_UPPER;
	atomic_store(&ctx->holds, 1); /* the upper layer's, consumed by rr_reply */
	c->srv->ops.call(c->srv->ctx, &ctx->call);
}

/* RFC 8167 section 4.2: a reverse-direction Reply is an RDMA_MSG with no
 * chunks whose RPC msg_type is REPLY; XIDs are not compared. */
static bool is_bc_reply(const struct rr_call_ctx *ctx)
{
	const struct rr_pcl *p = &ctx->pcl;

	return p->proc == RR_PROC_MSG && p->n_read == 0 && p->n_write == 0 && !p->has_reply &&
	       ctx->recv_len >= p->hdr_len + 8 &&
	       be32_at(ctx->buf + p->hdr_len + 4) != RPC_MSG_TYPE_CALL;
}

/* One reverse-direction call answered; false if none was outstanding. */
static bool rr_bc_answered(struct rr_conn *c)
{
	bool had;

	pthread_mutex_lock(&c->lock);
	had = c->bc_outstanding > 0;
	if (had)
		c->bc_outstanding--;
	pthread_mutex_unlock(&c->lock);
	return had;
}

/* A reverse-direction Reply carries the client's backchannel grant: 0 is
 * taken as 1 (never deadlock), and we never use more than we provision. */
static void rr_bc_grant(struct rr_conn *c, uint32_t credits)
{
	uint32_t max = c->srv->cfg.bc_credits ? c->srv->cfg.bc_credits : 1;

	pthread_mutex_lock(&c->lock);
	c->bc_grant = credits == 0 ? 1 : credits > max ? max : credits;
	pthread_mutex_unlock(&c->lock);
}

void rr_recv_complete(struct rr_conn *c, const struct fab_wc *wc)
{
	struct rr_call_ctx *ctx = (struct rr_call_ctx *)(uintptr_t)(wc->wr_id & ~(uint64_t)RR_WRID_MASK);
	enum rr_hdr_result r;
	enum rr_hdr_action act;
	bool overrun = false;

	if (ctx->srq) {
		/* The pool's counters are the event thread's; srq_held is shared
		 * with rr_call_free on any thread. */
		if (--ctx->srq->posted < ctx->srq->low_water)
			ctx->srq->starved = true;
		ctx->conn = c;
		pthread_mutex_lock(&c->lock);
		overrun = ++c->srq_held > c->srq_held_max;
		pthread_mutex_unlock(&c->lock);
	} else {
		c->posted--; /* event thread only */
	}
	if (overrun && wc->status == FAB_WC_SUCCESS) {
		/* Far past its grant: without an SRQ this client would have met an
		 * RNR. Closing it returns what it holds to the others. */
		RR_STAT_ADD(c, rnr_disconnects, 1);
		rr_conn_close(c, "client overran its credits (shared receive queue)");
		rr_call_free(ctx);
		return;
	}

	if (wc->status != FAB_WC_SUCCESS) {
		/* Close first: a QP in error flushes every receive we would
		 * post in its place, and reposting would spin. */
		rr_conn_close(c, wc->status == FAB_WC_LOC_LEN_ERR ? "message larger than the receive buffer"
				 : wc->status == FAB_WC_WR_FLUSH_ERR ? "receive flushed (QP in error)"
								      : "receive failed");
		rr_call_free(ctx);
		return;
	}
	if (c->state == RR_CONN_CLOSING) {
		rr_call_free(ctx);
		return;
	}
	ctx->recv_len = wc->byte_len;
	rr_recv_refill(c);

	r = rr_hdr_decode_call(ctx->buf, ctx->recv_len, &c->srv->cfg.limits, &ctx->pcl);
	act = rr_hdr_answer(r, ctx->recv_len);
	if (r == RR_HDR_PROC_ERROR && c->srv->ops.bc_error && rr_bc_answered(c)) {
		/* The client refused one of our callbacks (RFC 8167 section 4). */
		uint32_t xid = ctx->pcl.xid, err = 0;

		if (ctx->recv_len >= RR_HDR_ERR_CHUNK_LEN)
			err = be32_at(ctx->buf + RR_HDR_FIXED_LEN);
		RR_STAT_ADD(c, bc_errors, 1);
		rr_call_free(ctx);
		c->srv->ops.bc_error(c->srv->ctx, c, xid, err);
		return;
	}
	if (act != RR_ACT_PROCESS) {
		uint32_t xid = ctx->pcl.xid;

		rr_call_free(ctx);
		if (act == RR_ACT_DROP)
			RR_STAT_ADD(c, dropped, 1);
		else
			rr_send_error(c, xid, act);
		return;
	}

	if (is_bc_reply(ctx)) {
		rr_bc_answered(c);
		rr_bc_grant(c, ctx->pcl.credits);
		if (c->srv->ops.bc_reply) {
			RR_STAT_ADD(c, bc_replies, 1);
			c->srv->ops.bc_reply(c->srv->ctx, c, ctx->buf + ctx->pcl.hdr_len,
					     ctx->recv_len - ctx->pcl.hdr_len, ctx->pcl.credits);
		} else {
			RR_STAT_ADD(c, dropped, 1);
		}
		rr_call_free(ctx);
		return;
	}

	RR_STAT_ADD(c, calls, 1);
	rr_conn_get(c);
	ctx->has_ref = true;
	if (ctx->pcl.n_read > 0) {
		rr_read_start(ctx);
		return;
	}
	ctx->call.iov[0].iov_base = ctx->buf + ctx->pcl.hdr_len;
	ctx->call.iov[0].iov_len = ctx->recv_len - ctx->pcl.hdr_len;
	ctx->call.iovcnt = 1;
	ctx->call.nchunk_data = 0;
	rr_call_dispatch(ctx);
}
