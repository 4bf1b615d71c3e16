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
#include "rpcrdma/rr_xdr.h"

#define RPC_MSG_TYPE_CALL 0u

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
			if (ctx[n]->pcl) { /* its call is done: the list is free */
				rr_pcl_put(c->evt, ctx[n]->pcl);
				ctx[n]->pcl = NULL;
			}
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
 * missing (rr_recv_refill's test), so a client within its grant always finds
 * a receive and one post serves many. Refilled before a received message is
 * processed, so the receive that a reply's credit promises is posted before
 * that reply is sent. Event thread: free_calls and posted are its own; calls
 * other threads gave back are taken over first.
 */
void rr_recv_post_batch(struct rr_conn *c)
{
	for (struct rr_handoff *h = rr_handoff_take(&c->returned_calls); h;) {
		struct rr_call_ctx *back = RR_CONTAINER_OF(h, struct rr_call_ctx, free_link);

		h = h->next;
		back->next = c->free_calls;
		c->free_calls = back;
	}
	if (c->state != RR_CONN_CLOSING)
		post_receives(c);
}

/* RFC 8167 section 4.2: a reverse-direction Reply is an RDMA_MSG with no
 * chunks whose RPC msg_type is REPLY; XIDs are not compared here
 * (rr_bc_reply_received drops one that answers no call of ours). */
static bool is_bc_reply(const struct rr_call_ctx *ctx)
{
	const struct rr_pcl *p = ctx->pcl;

	return p->proc == RR_PROC_MSG && p->n_read == 0 && p->n_write == 0 && !p->has_reply &&
	       ctx->recv_len >= p->hdr_len + 8 &&
	       rr_xdr_load32(ctx->buf + p->hdr_len + 4) != RPC_MSG_TYPE_CALL;
}

/*
 * A receive completed: count it against the shared pool or the connection's
 * own receives. False when it brings nothing to decode: an error, a client
 * past its grant, or a closing connection (the context is freed then).
 */
static bool recv_taken(struct rr_conn *c, struct rr_call_ctx *ctx, const struct fab_wc *wc)
{
	bool overrun = false;

	if (ctx->srq) {
		/* The pool is this thread's; srq_held is counted down by
		 * rr_call_free on any thread. */
		struct rr_srq *q = ctx->srq;

		if (atomic_fetch_sub_explicit(&q->posted, 1, memory_order_relaxed) - 1 < q->low_water)
			q->starved = true;
		ctx->conn = c;
		overrun = atomic_fetch_add_explicit(&c->srq_held, 1, memory_order_relaxed) + 1 >
			  c->srq_held_max;
	} else {
		c->posted--; /* event thread only */
	}
	if (overrun && wc->status == FAB_WC_SUCCESS) {
		/* Far past its grant: without an SRQ this client would have met an
		 * RNR. Closing it returns what it holds to the others. */
		RR_STAT_ADD(c, rnr_disconnects, 1);
		rr_conn_close(c, "client overran its credits (shared receive queue)");
		goto free;
	}
	if (wc->status != FAB_WC_SUCCESS) {
		/* Close first: a QP in error flushes every receive we would
		 * post in its place, and reposting would spin. */
		rr_conn_close(c, wc->status == FAB_WC_LOC_LEN_ERR ? "message larger than the receive buffer"
				 : wc->status == FAB_WC_WR_FLUSH_ERR ? "receive flushed (QP in error)"
								      : "receive failed");
		goto free;
	}
	if (c->state == RR_CONN_CLOSING)
		goto free;
	return true;
free:
	rr_call_free(ctx);
	return false;
}

/* The header was not one to process: an RDMA_ERROR the client sent about
 * one of our callbacks, a message to drop, or one to answer with an error. */
static void recv_not_call(struct rr_conn *c, struct rr_call_ctx *ctx, enum rr_hdr_result r,
			  enum rr_hdr_action act)
{
	uint32_t xid = ctx->pcl->xid;

	if (r == RR_HDR_PROC_ERROR && rr_bc_answered(c, xid)) {
		/* The client refused one of our outstanding callbacks (RFC 8167
		 * section 4): its credit is back; an RDMA_ERROR naming no such
		 * call is dropped below. */
		uint32_t err = 0;

		if (ctx->recv_len >= RR_HDR_ERR_CHUNK_LEN)
			err = rr_xdr_load32(ctx->buf + RR_HDR_FIXED_LEN);
		RR_STAT_ADD(c, bc_errors, 1);
		c->heard++; /* an answer to our callback: activity */
		rr_call_free(ctx);
		if (c->srv->ops.bc_error)
			c->srv->ops.bc_error(c->srv->ctx, c, xid, err);
		return;
	}
	if (act == RR_ACT_DROP) {
		rr_call_free(ctx);
		RR_STAT_ADD(c, dropped, 1);
		return;
	}
	atomic_store_explicit(&ctx->holds, 1, memory_order_relaxed); /* the error Reply's */
	rr_reply_error(ctx, act);
}

void rr_recv_complete(struct rr_conn *c, const struct fab_wc *wc)
{
	struct rr_call_ctx *ctx = (struct rr_call_ctx *)(uintptr_t)(wc->wr_id & ~(uint64_t)RR_WRID_MASK);
	enum rr_hdr_result r;
	enum rr_hdr_action act;

	if (!recv_taken(c, ctx, wc))
		return;
	/* A message: the client's side is connected, whether or not our
	 * ESTABLISHED got through the listener's thread yet (IB's COMM_EST). */
	if (c->state == RR_CONN_ACCEPTING)
		rr_conn_established(c);
	ctx->recv_len = wc->byte_len;
	rr_recv_refill(c);

	ctx->pcl = rr_pcl_take(c->evt);
	if (!ctx->pcl) {
		rr_call_free(ctx);
		rr_conn_close(c, "out of memory for a message's chunk lists");
		return;
	}
	r = rr_hdr_decode_call(ctx->buf, ctx->recv_len, &c->srv->cfg.limits, ctx->pcl);
	act = rr_hdr_answer(r, ctx->recv_len);
	if (act != RR_ACT_PROCESS) {
		recv_not_call(c, ctx, r, act);
		return;
	}
	if (is_bc_reply(ctx)) {
		rr_bc_reply_received(c, ctx);
		return;
	}

	RR_STAT_ADD(c, calls, 1);
	c->heard++; /* activity: what is dropped or refused above is not */
	rr_conn_get(c);
	ctx->has_ref = true;
	if (ctx->pcl->n_read > 0) {
		rr_read_start(ctx);
		return;
	}
	ctx->call.iov[0].iov_base = ctx->buf + ctx->pcl->hdr_len;
	ctx->call.iov[0].iov_len = ctx->recv_len - ctx->pcl->hdr_len;
	ctx->call.iovcnt = 1;
	ctx->call.nchunk_data = 0;
	rr_call_dispatch(ctx);
}
