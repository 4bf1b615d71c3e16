// SPDX-License-Identifier: MIT
/*
 * rr_reply_queue.c - Replies on their way to the event thread: rr_reply
 * from any thread (a worker's answer is kept in its call and handed over,
 * as only the event thread may post), Replies that wait for a send context,
 * and the event thread's run of both, oldest first, in one post.
 * rr_reply.c builds each one.
 */
#include "rpcrdma/rr_internal.h"

static const struct rr_reply_plan no_spans = {.nspans = 0, .deliverable = true};

/* A Reply's description, kept in its call until it is built (not the
 * bytes, which stay the caller's until done). */
static inline __attribute__((always_inline)) void reply_keep(struct rr_call_ctx *ctx,
							     const struct iovec *iov, int iovcnt,
							     const struct rr_reply_plan *plan,
							     rr_reply_done_fn done, void *done_arg)
{
	if (!plan)
		plan = &no_spans;
	if (iovcnt < 0 || iovcnt > RR_REPLY_MAX_IOV || plan->nspans > RR_PCL_MAX_WRITE_CHUNKS) {
		ctx->rep_iovcnt = 0;
		ctx->rep_plan.nspans = 0;
		ctx->rep_plan.deliverable = false;
	} else {
		/* A few entries each: element copies, not memcpy calls (onto
		 * themselves, harmlessly, for a Reply that waited before). */
		for (int i = 0; i < iovcnt; i++)
			ctx->rep_iov[i] = iov[i];
		ctx->rep_iovcnt = iovcnt;
		/* the spans in use only: a plan has room for every Write chunk */
		ctx->rep_plan.nspans = plan->nspans;
		ctx->rep_plan.deliverable = plan->deliverable;
		for (unsigned int i = 0; i < plan->nspans; i++)
			ctx->rep_plan.spans[i] = plan->spans[i];
	}
	ctx->rep_done = done;
	ctx->rep_arg = done_arg;
}

/* No send context for it now: the Reply waits (out of line, as it is rare). */
__attribute__((noinline, cold)) void rr_reply_wait(struct rr_call_ctx *ctx, const struct iovec *iov,
						   int iovcnt, const struct rr_reply_plan *plan,
						   rr_reply_done_fn done, void *done_arg)
{
	reply_keep(ctx, iov, iovcnt, plan, done, done_arg);
	rr_send_ctx_wait(ctx->conn, ctx);
}

int rr_reply(struct rr_call *call, const struct iovec *iov, int iovcnt,
	     const struct rr_reply_plan *plan, rr_reply_done_fn done, void *done_arg)
{
	struct rr_call_ctx *ctx = (struct rr_call_ctx *)call;
	struct rr_conn *c = ctx->conn;

	if (rr_on_conn_thread(c))
		return rr_reply_now(call, iov, iovcnt, plan, done, done_arg);
	/*
	 * Another thread: keep the description (not the bytes, which stay
	 * the caller's until done) and let the event thread build and post
	 * it - no other thread may post (rr_on_conn_thread says why).
	 */
	reply_keep(ctx, iov, iovcnt, plan, done, done_arg);
	/* Once pushed, the event thread may send it and release the call's
	 * reference: the kick's own keeps the connection until it is queued. */
	rr_conn_get(c);
	rr_handoff_push(&c->rep_stack, &ctx->rep_link);
	rr_conn_kick(c);
	return 0;
}

void rr_send_run_deferred(struct rr_conn *c)
{
	struct rr_handoff *h = rr_handoff_take(&c->rep_stack);

	/* Replies that waited for a send context go first, in order; from
	 * the first that finds none again, the rest wait again behind it. */
	if (c->ctx_wait_head) {
		c->ctx_wait_tail->next = h;
		h = c->ctx_wait_head;
		c->ctx_wait_head = c->ctx_wait_tail = NULL;
	}

	/* oldest first: Replies go in the order they were handed in, in one
	 * post (rr_send_post_batch) */
	if (h) {
		c->batching = true;
		while (h) {
			struct rr_call_ctx *q = RR_CONTAINER_OF(h, struct rr_call_ctx, rep_link);

			h = h->next;
			if (__builtin_expect(q->err_act != RR_ACT_PROCESS, 0))
				rr_reply_error(q, (enum rr_hdr_action)q->err_act);
			else
				rr_reply_now(&q->call, q->rep_iov, q->rep_iovcnt, &q->rep_plan,
					     q->rep_done, q->rep_arg);
		}
		c->batching = false;
		rr_send_post_batch(c);
	}
	/* Chains other threads built (reverse-direction calls) go now, or
	 * are given back if the connection is closing; the event thread's own
	 * queued chains go as Sends complete. */
	rr_send_post_offthread(c);
}
