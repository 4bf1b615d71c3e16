// SPDX-License-Identifier: MIT
/*
 * rr_send.c - the send queue (RFC 8166 section 3.5: Writes chained ahead of
 * the Send they belong to, on one RC queue). Send contexts and their reserve,
 * posting built chains or queueing them until the send queue has room, one
 * doorbell for the Replies handed over in a wake-up, unsignalled Sends
 * retired by a later completion (RR_QUIET_SENDS), chains from other threads,
 * and send completions. rr_reply.c builds the chains; rr_rw.c the Writes.
 */
#include <errno.h>
#include <stdlib.h>

#include "rpcrdma/rr_internal.h"

/*
 * Send contexts: Replies and error replies are built on the event thread
 * from the pool of the connection's device and thread (rr_sendpool.c);
 * reverse-direction calls come from any thread and take theirs from a
 * small chunk of the connection's own, under the lock (@bc).
 */
struct rr_send_chunk *rr_send_chunk_make(struct rr_server *srv, struct fab_pd *pd, uint32_t n)
{
	struct rr_send_chunk *ch = calloc(1, sizeof(*ch) + n * sizeof(ch->ctx[0]));

	if (!ch)
		return NULL;
	if (rr_pool_init(&ch->pool, pd, srv->cfg.inline_size, n, FAB_ACCESS_LOCAL_WRITE)) {
		free(ch);
		return NULL;
	}
	RR_SRV_STAT_ADD(srv, registrations, 1);
	ch->n = n;
	for (uint32_t i = 0; i < n; i++) {
		struct rr_send_ctx *s = &ch->ctx[i];

		rr_rw_init(&s->rw, s->wr_small, RR_SEND_SMALL_WR, s->sge_small, RR_SEND_SMALL_SGE);
		s->chunk = ch;
		s->hdr = rr_pool_get(&ch->pool);
		s->lkey = ch->pool.mr->lkey;
	}
	return ch;
}

void rr_send_chunk_free(struct rr_send_chunk *ch)
{
	for (uint32_t i = 0; i < ch->n; i++) {
		rr_rw_fini(&ch->ctx[i].rw);
		free(ch->ctx[i].lent);
	}
	rr_pool_fini(&ch->pool);
	free(ch);
}

int rr_send_chunk_add(struct rr_conn *c, uint32_t n, uint64_t *pinned)
{
	struct rr_send_chunk *ch = rr_send_chunk_make(c->srv, c->pd, n);

	if (!ch)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct rr_send_ctx *s = &ch->ctx[i];

		s->conn = c;
		s->bc = true;
		s->next_free = c->free_bc_sends;
		c->free_bc_sends = s;
	}
	ch->next = c->send_chunks;
	c->send_chunks = ch;
	*pinned = ch->pool.map_len;
	return 0;
}

void rr_send_chunks_free(struct rr_conn *c)
{
	while (c->send_chunks) {
		struct rr_send_chunk *ch = c->send_chunks;

		c->send_chunks = ch->next;
		rr_send_chunk_free(ch);
	}
}

bool rr_send_lkey(const struct rr_send_ctx *s, const void *addr, size_t len, uint32_t *lkey)
{
	if (rr_pool_owns(&s->chunk->pool, addr, len)) {
		*lkey = s->chunk->pool.mr->lkey;
		return true;
	}
	for (const struct rr_send_chunk *ch = s->conn->send_chunks; ch; ch = ch->next)
		if (rr_pool_owns(&ch->pool, addr, len)) {
			*lkey = ch->pool.mr->lkey;
			return true;
		}
	return false;
}

struct rr_send_ctx *rr_send_bc_ctx_take(struct rr_conn *c)
{
	struct rr_send_ctx *s;

	pthread_mutex_lock(&c->lock);
	s = c->free_bc_sends;
	if (s)
		c->free_bc_sends = s->next_free;
	pthread_mutex_unlock(&c->lock);
	return s;
}

/* The Send that ends a chain: sge[0], @len bytes of s->hdr. */
struct fab_send_wr *rr_send_wr(struct rr_send_ctx *s, uint32_t len)
{
	struct fab_send_wr *wr;

	s->rw.sge[0].addr = s->hdr;
	s->rw.sge[0].length = len;
	s->rw.sge[0].lkey = s->lkey;
	wr = rr_rw_next_wr(&s->rw);
	if (!wr)
		return NULL;
	wr->wr_id = (uintptr_t)s | RR_WRID_SEND;
	wr->opcode = FAB_WR_SEND;
	wr->sg_list = &s->rw.sge[0];
	wr->num_sge = 1;
	return wr;
}

/* Back on its free list (the reverse direction's is shared: lock). */
static void send_ctx_free(struct rr_conn *c, struct rr_send_ctx *s)
{
	if (s->bc) {
		pthread_mutex_lock(&c->lock);
		s->next_free = c->free_bc_sends;
		c->free_bc_sends = s;
		pthread_mutex_unlock(&c->lock);
	} else {
		rr_sendpool_put(c, s);
	}
}

/* An unsignalled context is done: retired, or never posted. */
static void quiet_end(struct rr_conn *c, struct rr_send_ctx *s)
{
	s->quiet = false;
	c->quiet_out--;
}

/* The device is done with the Reply's memory: no registration of it
 * outlives the Reply (rr_rw_lend; iWARP only, so out of line). */
static __attribute__((noinline, cold)) void lent_release(struct rr_send_ctx *s)
{
	for (unsigned int i = 0; i < s->nlent; i++)
		fab_mr_dereg(s->lent[i]);
	s->nlent = 0;
}

/* Give a send context back: bounce buffers, the caller's memory, the call.
 * Event thread, except a reverse-direction call's (see rr_send_ctx_get). */
void rr_send_ctx_release(struct rr_send_ctx *s)
{
	struct rr_conn *c = s->conn;

	if (s->quiet) /* never posted: dropped at close, or its post failed */
		quiet_end(c, s);

	if (s->nlent)
		lent_release(s);
	for (unsigned int i = 0; i < s->nbounce; i++) {
		rr_big_put(c->big, c, s->bounce_ref[i]);
		rr_big_returned(c);
	}
	s->nbounce = 0;
	/* cleared here, not when taken: most Replies never set them */
	if (s->done) {
		s->done(s->done_arg);
		s->done = NULL;
	}
	if (s->call) {
		rr_call_put(s->call);
		s->call = NULL;
	}
	send_ctx_free(c, s);
	rr_conn_put(c);
}

static void post_pending(struct rr_conn *c, uint32_t returned);

/* @s at the tail of a list linked through next_pending (pending, batch). */
static void chain_append(struct rr_send_ctx **head, struct rr_send_ctx **tail,
			 struct rr_send_ctx *s)
{
	s->next_pending = NULL;
	if (*tail)
		(*tail)->next_pending = s;
	else
		*head = s;
	*tail = s;
}

/*
 * Event thread: @s is on the send queue, numbered in post order. An
 * unsignalled Send also joins the quiet list and gives its connection
 * reference back now: it holds nothing the connection must wait for (its
 * call and the caller's buffers went at build time), and at a close that
 * finds it already complete no completion would ever return it. Its
 * context and queue slots come back when a later completion retires it, or
 * with the connection.
 */
static void send_posted(struct rr_conn *c, struct rr_send_ctx *s)
{
	s->seq = ++c->post_seq;
	if (!s->quiet) {
		c->sends_out++; /* its completion is awaited (rr_admit.c, send_stuck) */
		return;
	}
	s->next_quiet = NULL;
	if (c->quiet_tail)
		c->quiet_tail->next_quiet = s;
	else
		c->quiet_head = s;
	c->quiet_tail = s;
	rr_conn_put(c); /* the event thread still holds its own */
}

/*
 * Event thread: a Send numbered @seq completed, so every one posted before
 * it has too (a send queue completes in order). Retires the unsignalled
 * ones up to and including @seq; returns the queue slots they held.
 */
static uint32_t retire_quiet(struct rr_conn *c, uint32_t seq)
{
	struct rr_send_ctx *q;
	uint32_t slots = 0;

	while ((q = c->quiet_head) && (int32_t)(q->seq - seq) <= 0) {
		c->quiet_head = q->next_quiet;
		if (!c->quiet_head)
			c->quiet_tail = NULL;
		slots += q->rw.nwr;
		quiet_end(c, q);
		send_ctx_free(c, q);
	}
	return slots;
}

/*
 * Event thread: post one chain, its queue slots taken. False if the provider
 * refused it: its slots are given back and the connection closes; the
 * chain is the caller's to release.
 */
static bool post_chain(struct rr_conn *c, struct rr_send_ctx *s)
{
	struct fab_send_wr *bad;

	c->sq_avail -= s->rw.nwr;
	RR_STAT_ADD(c, send_posts, 1);
	if (rr_rw_post(c, &s->rw.wr[0], &bad, "posting a Send failed")) {
		c->sq_avail += s->rw.nwr;
		return false;
	}
	send_posted(c, s);
	return true;
}

/*
 * Post a built chain now, or queue it behind earlier ones until the send
 * queue has room: posting never blocks, so the event thread may reply. The
 * send queue and its pending list are the event thread's: another thread
 * (a reverse-direction call) pushes its chain on a lock-free stack and kicks.
 */
void rr_send_post(struct rr_conn *c, struct rr_send_ctx *s)
{
	s->rw.wr[s->rw.nwr - 1].next = NULL;
	if (!rr_on_conn_thread(c)) {
		rr_conn_get(c); /* once pushed, c may otherwise go at any time */
		rr_handoff_push(&c->offthread_sends, &s->handoff);
		rr_conn_kick(c);
		return;
	}
	if (c->state == RR_CONN_CLOSING) {
		rr_send_ctx_release(s);
		return;
	}
	if (!c->pend_head && c->sq_avail >= s->rw.nwr) {
		if (c->batching) {
			c->sq_avail -= s->rw.nwr;
			chain_append(&c->batch_head, &c->batch_tail, s);
		} else if (!post_chain(c, s)) {
			rr_send_ctx_release(s);
		}
		return;
	}
	chain_append(&c->pend_head, &c->pend_tail, s);
	post_pending(c, 0);
}

/* The loop of post_pending, apart: chains rarely wait for room. */
static __attribute__((noinline)) void post_queued(struct rr_conn *c)
{
	while (c->pend_head && c->sq_avail >= c->pend_head->rw.nwr) {
		struct rr_send_ctx *q = c->pend_head;

		if (!post_chain(c, q))
			return; /* q stays queued: the close releases the queue */
		c->pend_head = q->next_pending;
		if (!c->pend_head)
			c->pend_tail = NULL;
	}
}

/*
 * Event thread: the chains built while batching go to the send queue as one
 * chain - one doorbell (on rxe and siw, one system call) for every Reply
 * handed over in a wake-up. On failure the chains wholly ahead of the
 * failed work request were posted; the rest are given back.
 */
void rr_send_post_batch(struct rr_conn *c)
{
	struct rr_send_ctx *s = c->batch_head, *next;
	struct fab_send_wr *bad = NULL;
	bool failed_here = false;
	int ret;

	c->batch_head = c->batch_tail = NULL;
	if (!s)
		return;
	for (struct rr_send_ctx *q = s; q->next_pending; q = q->next_pending)
		q->rw.wr[q->rw.nwr - 1].next = &q->next_pending->rw.wr[0];
	if (c->state == RR_CONN_CLOSING) {
		ret = -ENOTCONN;
	} else {
		RR_STAT_ADD(c, send_posts, 1);
		ret = rr_rw_post(c, &s->rw.wr[0], &bad, "posting a Send failed");
	}
	for (; s; s = next) {
		next = s->next_pending;
		s->rw.wr[s->rw.nwr - 1].next = NULL;
		if (ret && !failed_here)
			failed_here = !bad || (bad >= &s->rw.wr[0] && bad < &s->rw.wr[s->rw.nwr]);
		if (!ret || !failed_here) {
			send_posted(c, s);
		} else {
			c->sq_avail += s->rw.nwr;
			rr_send_ctx_release(s);
		}
	}
}

/* Event thread: give back @returned send-queue slots (a completed chain),
 * then post queued chains while the send queue has room. */
static void post_pending(struct rr_conn *c, uint32_t returned)
{
	if (c->state == RR_CONN_CLOSING)
		return; /* rr_send_drop_pending releases the queue */
	c->sq_avail += returned;
	if (c->pend_head)
		post_queued(c);
}

/* Event thread: chains other threads pushed join the pending queue, oldest
 * first; true if there were any. */
static bool take_offthread_sends(struct rr_conn *c)
{
	struct rr_handoff *h = rr_handoff_take(&c->offthread_sends);

	if (!h)
		return false;
	while (h) {
		struct rr_send_ctx *s = RR_CONTAINER_OF(h, struct rr_send_ctx, handoff);

		h = h->next;
		chain_append(&c->pend_head, &c->pend_tail, s);
	}
	return true;
}

void rr_send_post_offthread(struct rr_conn *c)
{
	if (!take_offthread_sends(c))
		return;
	if (c->state == RR_CONN_CLOSING)
		rr_send_drop_pending(c);
	else
		post_pending(c, 0);
}

/* Event thread, closing: give back every chain that never got posted. */
void rr_send_drop_pending(struct rr_conn *c)
{
	struct rr_send_ctx *s;

	take_offthread_sends(c);
	s = c->pend_head;
	c->pend_head = c->pend_tail = NULL;
	while (s) {
		struct rr_send_ctx *next = s->next_pending;

		rr_send_ctx_release(s);
		s = next;
	}
}

void rr_send_complete(struct rr_conn *c, const struct fab_wc *wc)
{
	struct rr_send_ctx *s;
	bool quiet;

	if (wc->status != FAB_WC_SUCCESS) {
		if (wc->status == FAB_WC_RNR_RETRY_EXC_ERR)
			RR_STAT_ADD(c, rnr_disconnects, 1);
		rr_conn_close(c, wc->status == FAB_WC_REM_ACCESS_ERR
				     ? "RDMA Write/Send: remote access error"
				 : wc->status == FAB_WC_RNR_RETRY_EXC_ERR
				     ? "client had no receive posted (RNR)"
				 : wc->status == FAB_WC_WR_FLUSH_ERR ? "Send flushed (QP in error)"
								     : "Send failed");
	}
	/* A failed unsignalled Write carries no context; its chain's Send
	 * completes (flushed) and releases everything. */
	if ((wc->wr_id & RR_WRID_MASK) != RR_WRID_SEND)
		return;
	s = (struct rr_send_ctx *)(uintptr_t)(wc->wr_id & ~(uint64_t)RR_WRID_MASK);

	/* A flushed unsignalled Send (they complete only in error) is retired
	 * with those before it; queued chains go out in order as room appears. */
	quiet = s->quiet;
	c->sends_done++;
	post_pending(c, retire_quiet(c, s->seq) + (quiet ? 0 : s->rw.nwr));
	if (!quiet) {
		c->sends_out--;
		rr_send_ctx_release(s);
	}
}

/* A Reply that found no send context waits, in order, for one to come back
 * to the pool (rr_send_run_deferred takes these first). */
void rr_send_ctx_wait(struct rr_conn *c, struct rr_call_ctx *ctx)
{
	ctx->rep_link.next = NULL;
	if (c->ctx_wait_tail)
		c->ctx_wait_tail->next = &ctx->rep_link;
	else
		c->ctx_wait_head = &ctx->rep_link;
	c->ctx_wait_tail = &ctx->rep_link;
	rr_sendpool_wait(c);
}
