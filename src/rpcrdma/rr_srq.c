// SPDX-License-Identifier: MIT
/*
 * rr_srq.c - the shared receive pools (cfg.use_srq): one SRQ and one set of
 * registered receive buffers per event thread and device, for every
 * connection of that thread on that device, instead of 2 x credits +
 * bc_credits + recv_batch buffers per connection.
 *
 * A pool is its event thread's (docs/threading.md, "Event threads"): that
 * thread alone posts and grows it, and reaps its receives (on its own
 * connections' CQs), so no lock and no wake-up crosses threads on a call's
 * path. The pools of a device are made together, on evt[0], when the first
 * connection on that device is accepted; evt[0] may fit a pool to one
 * client's window only until a connection of its thread is handed over
 * (q->handed), under its thread's srq_lock. Any thread gives a buffer back
 * (rr_srq_put, lock-free) and wakes the owner to post it.
 *
 * Each pool starts with one chunk of buffers, grows to one client's window
 * (credits + backchannel + batch) when the device's first client connects,
 * and, whenever fewer than low_water (a quarter of the pool) receives were
 * left posted, doubles (one registration per step) up to its bound
 * (SRQ_Depth); it never shrinks, so steady state registers nothing. Every
 * registration is charged to Receive_Memory_Budget as it is made. Credits
 * stay per connection: a client within its grant may still meet a
 * momentarily empty SRQ, which its RNR retries (accepted with
 * rnr_retry_count 7) turn into a delay.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"

#define RR_SRQ_POST_BATCH 16

/*
 * The pools' counters, all here: @bufs receives and @bytes of registered
 * memory came (positive) or went (negative). Server-wide only: a pool is
 * no connection's (rr_counters.def), so a connection's rows show 0.
 */
static void srq_count(struct rr_server *srv, int64_t bufs, int64_t bytes)
{
	RR_SRV_STAT_ADD(srv, srq_bufs, (uint64_t)bufs);
	RR_SRV_STAT_ADD(srv, recv_mem_bytes, (uint64_t)bytes);
	RR_SRV_STAT_ADD(srv, pinned_bytes, (uint64_t)bytes);
}

/* One pool's bound: SRQ_Depth or the default, never above the budget (which
 * is always set unless the admin says 0, so it no longer picks the depth). */
uint32_t rr_srq_bound(const struct rr_config *cfg)
{
	uint64_t bound = cfg->srq_depth ? cfg->srq_depth : RR_SRQ_DEFAULT_DEPTH;

	if (cfg->recv_mem_budget) {
		uint64_t fit = cfg->recv_mem_budget / cfg->inline_size;

		if (fit < bound)
			bound = fit;
	}
	return bound > RR_SRQ_MAX_DEPTH ? RR_SRQ_MAX_DEPTH : (uint32_t)bound;
}

uint64_t rr_srq_pools_bytes(const struct rr_config *cfg, uint32_t max_srq_wr)
{
	uint32_t bufs = rr_srq_bound(cfg);
	uint64_t bytes;

	if (!cfg->use_srq)
		return 0;
	if (bufs > max_srq_wr)
		bufs = max_srq_wr;
	bytes = rr_pool_bytes(cfg->inline_size, bufs) * cfg->event_threads;
	if (cfg->recv_mem_budget && cfg->recv_mem_budget < bytes)
		bytes = cfg->recv_mem_budget;
	return bytes;
}

/* Register one more chunk of @want buffers (fewer at the bound or the
 * budget) and give its contexts to the pool. */
static int srq_add(struct rr_srq *q, uint32_t want)
{
	struct rr_server *srv = q->srv;
	uint32_t n = q->bound - q->nbufs < want ? q->bound - q->nbufs : want;
	struct rr_srq_chunk *ch = &q->chunks[q->nchunks];
	uint64_t bytes;
	int ret;

	if (srv->cfg.recv_mem_budget) {
		/* The budget is shared with every connection's send buffers. */
		uint64_t left;

		pthread_mutex_lock(&srv->lock);
		left = srv->cfg.recv_mem_budget > srv->recv_mem_used
			   ? srv->cfg.recv_mem_budget - srv->recv_mem_used
			   : 0;
		pthread_mutex_unlock(&srv->lock);
		if (n > left / srv->cfg.inline_size)
			n = (uint32_t)(left / srv->cfg.inline_size);
		while (n && rr_pool_bytes(srv->cfg.inline_size, n) > left)
			n--;
	}
	if (n == 0 || q->nchunks >= q->maxchunks)
		return -ENOSPC;
	bytes = rr_pool_bytes(srv->cfg.inline_size, n);
	ch->calls = calloc(n, sizeof(*ch->calls));
	if (!ch->calls)
		return -ENOMEM;
	ret = rr_pool_init(&ch->pool, q->pd, srv->cfg.inline_size, n, FAB_ACCESS_LOCAL_WRITE);
	if (ret) {
		free(ch->calls);
		ch->calls = NULL;
		return ret;
	}
	RR_SRV_STAT_ADD(srv, registrations, 1);
	pthread_mutex_lock(&srv->lock);
	srv->recv_mem_used += bytes;
	pthread_mutex_unlock(&srv->lock);
	srq_count(srv, (int64_t)n, (int64_t)bytes);
	q->bytes += bytes;
	ch->ncalls = n;
	for (uint32_t i = 0; i < n; i++) {
		struct rr_call_ctx *ctx = &ch->calls[i];

		ctx->srq = q;
		ctx->srq_lkey = ch->pool.mr->lkey;
		ctx->buf = rr_pool_get(&ch->pool);
		rr_srq_put(ctx);
	}
	q->nchunks++;
	q->nbufs += n;
	/* A quarter of the pool: a bigger pool serves more connections at once. */
	q->low_water = q->nbufs / 4 > q->chunk / 2 ? q->nbufs / 4 : (q->chunk + 1) / 2;
	return 0;
}

/* Doubling: a burst reaches the pool it needs in a few steps. */
static int srq_grow(struct rr_srq *q)
{
	return srq_add(q, q->nbufs > q->chunk ? q->nbufs : q->chunk);
}

/*
 * A connection's first window of calls must not meet an empty SRQ: every
 * RNR costs the client a retry timer (on verbs the IB CM's default is
 * 655 ms, which made the kernel client's 4 KiB I/O crawl on rxe while the
 * pool grew from RR_SRQ_START). So a pool holds at least one client's
 * whole window - still one window for all idle connections of its thread,
 * not one each.
 */
/* One client's window of receives: credits + backchannel + batch. */
static uint64_t srq_window(const struct rr_config *cfg)
{
	return (uint64_t)cfg->credits + cfg->bc_credits + cfg->recv_batch;
}

/* The pool's thread, or evt[0] under the rules above: grow @q to one
 * client's window, within what the budget has left, and post. */
static void srq_fit(struct rr_srq *q)
{
	uint64_t window = srq_window(&q->srv->cfg);

	if (window > q->bound)
		window = q->bound;
	if (q->nbufs < window && srq_add(q, (uint32_t)window - q->nbufs) == 0)
		rr_srq_refill(q);
}

static void srq_free(struct rr_srq *q)
{
	struct rr_server *srv = q->srv;
	int ret = fab_srq_destroy(q->fsrq);

	if (ret) {
		/* A connection outlived shutdown: its QP may still land in our
		 * buffers, so they stay (and stay counted). */
		rr_log("shared receive queue not freed: %s (%s)", strerror(-ret), fab_last_error());
		return;
	}
	for (uint32_t i = 0; i < q->nchunks; i++) {
		rr_pool_fini(&q->chunks[i].pool);
		for (uint32_t j = 0; j < q->chunks[i].ncalls; j++)
			rr_pcl_free(q->chunks[i].calls[j].pcl); /* calls cut short */
		free(q->chunks[i].calls);
	}
	srq_count(srv, -(int64_t)q->nbufs, -(int64_t)q->bytes);
	pthread_mutex_lock(&srv->lock);
	srv->recv_mem_used -= q->bytes;
	pthread_mutex_unlock(&srv->lock);
	free(q->chunks);
	free(q);
}

/* @e's pool on @pd with its first chunk posted; nobody else knows it yet. */
static struct rr_srq *srq_make(struct rr_server *srv, struct rr_evt *e, struct fab_pd *pd)
{
	struct rr_srq *q = calloc(1, sizeof(*q));
	uint32_t depth;
	int ret;

	if (!q)
		return NULL;
	q->srv = srv;
	q->evt = e;
	q->pd = pd;
	q->bound = rr_srq_bound(&srv->cfg);
	if (q->bound == 0) {
		rr_log("shared receive queue: the receive memory budget holds no buffer");
		free(q);
		return NULL;
	}
	q->chunk = q->bound < RR_SRQ_START ? q->bound : RR_SRQ_START;
	q->low_water = (q->chunk + 1) / 2;
	/* A device may offer a shallower SRQ than asked: take what it gives. */
	for (depth = q->bound;; depth /= 2) {
		ret = fab_srq_create(pd, depth, 1, &q->fsrq);
		if (!ret || depth / 2 < q->chunk)
			break;
	}
	if (ret) {
		rr_log("shared receive queue: %s (%s)", strerror(-ret), fab_last_error());
		free(q);
		return NULL;
	}
	if (depth < q->bound) {
		rr_log("shared receive queue: device holds %u receives, not %u", depth, q->bound);
		q->bound = depth;
	}
	/* Doublings of at least a chunk each, plus the window's one. */
	q->maxchunks = (q->bound + q->chunk - 1) / q->chunk + 1;
	q->chunks = calloc(q->maxchunks, sizeof(*q->chunks));
	if (!q->chunks || srq_grow(q)) {
		fab_srq_destroy(q->fsrq);
		free(q->chunks);
		free(q);
		return NULL;
	}
	rr_srq_refill(q);
	return q;
}

struct rr_srq *rr_srq_for(struct rr_server *srv, struct rr_evt *home, struct fab_pd *pd)
{
	struct rr_srq *made[RR_MAX_EVENT_THREADS];
	unsigned int dev = home->nsrq;

	for (unsigned int j = 0; j < home->nsrq; j++)
		if (home->srq[j]->pd == pd)
			return home->srq[j];
	if (dev >= RR_SRQ_DEVICES)
		return NULL;
	/* Every thread's at once: the device's receive memory does not
	 * depend on how many of its connections are idle. */
	for (unsigned int i = 0; i < srv->nevt; i++) {
		made[i] = srq_make(srv, &srv->evt[i], pd);
		if (!made[i]) {
			while (i-- > 0)
				srq_free(made[i]);
			return NULL;
		}
		made[i]->dev = dev;
	}
	for (unsigned int i = 0; i < srv->nevt; i++) {
		struct rr_evt *e = &srv->evt[i];

		pthread_mutex_lock(&e->srq_lock);
		e->srq[dev] = made[i];
		e->nsrq = dev + 1;
		pthread_mutex_unlock(&e->srq_lock);
	}
	rr_log("shared receive queue: one per event thread (%u), each %u receives of %u bytes, "
	       "growing to %u",
	       srv->nevt, made[0]->nbufs, srv->cfg.inline_size, made[0]->bound);
	if (srq_window(&srv->cfg) > made[0]->bound)
		rr_log("shared receive queue: its bound (%u) is below one client's window (%llu): "
		       "clients will wait on RNR retries",
		       made[0]->bound, (unsigned long long)srq_window(&srv->cfg));
	return made[home->idx];
}

void rr_srq_fit(struct rr_server *srv, struct rr_srq *q)
{
	struct rr_evt *home = q->evt;

	/* The home's first: its connection is the one being accepted. */
	for (unsigned int k = 0; k < srv->nevt; k++) {
		struct rr_evt *e = &srv->evt[(home->idx + k) % srv->nevt];
		struct rr_srq *p = e->srq[q->dev];

		if (e == srv->evt) {
			srq_fit(p);
		} else if (!p->handed) {
			pthread_mutex_lock(&e->srq_lock);
			srq_fit(p);
			pthread_mutex_unlock(&e->srq_lock);
		}
	}
}

void rr_srq_adopt(struct rr_srq *q)
{
	srq_fit(q);
}

/* Post a chain of free contexts; those that could not be posted go back. */
static void srq_post_chain(struct rr_srq *q, struct rr_handoff *h)
{
	struct fab_recv_wr wr[RR_SRQ_POST_BATCH];
	struct fab_sge sge[RR_SRQ_POST_BATCH];
	struct rr_call_ctx *batch[RR_SRQ_POST_BATCH];

	while (h) {
		struct fab_recv_wr *bad = NULL;
		int n = 0, ret;

		for (; h && n < RR_SRQ_POST_BATCH; n++) {
			struct rr_call_ctx *ctx = RR_CONTAINER_OF(h, struct rr_call_ctx, free_link);

			h = h->next;
			ctx->next = NULL;
			ctx->conn = NULL;
			ctx->state = RR_CALL_POSTED;
			if (ctx->pcl) { /* its call is done: back to the pool's thread */
				rr_pcl_return(q->evt, ctx->pcl);
				ctx->pcl = NULL;
			}
			batch[n] = ctx;
			sge[n].addr = ctx->buf;
			sge[n].length = q->srv->cfg.inline_size;
			sge[n].lkey = ctx->srq_lkey;
			wr[n].wr_id = (uintptr_t)ctx | RR_WRID_RECV;
			wr[n].sg_list = &sge[n];
			wr[n].num_sge = 1;
			wr[n].next = n + 1 < RR_SRQ_POST_BATCH ? &wr[n + 1] : NULL;
		}
		wr[n - 1].next = NULL;
		ret = fab_post_srq_recv(q->fsrq, wr, &bad);
		if (ret) {
			int done = bad ? (int)(bad - wr) : 0;

			rr_log("shared receive queue: posting failed: %s (%s)", strerror(-ret),
			       fab_last_error());
			atomic_fetch_add_explicit(&q->posted, (uint32_t)done, memory_order_relaxed);
			for (int i = done; i < n; i++)
				rr_srq_put(batch[i]);
			while (h) {
				struct rr_handoff *next = h->next;

				rr_srq_put(RR_CONTAINER_OF(h, struct rr_call_ctx, free_link));
				h = next;
			}
			return;
		}
		atomic_fetch_add_explicit(&q->posted, (uint32_t)n, memory_order_relaxed);
	}
}

/* Every free buffer, counted off returned as it is taken. */
static void srq_post_returned(struct rr_srq *q)
{
	struct rr_handoff *h = rr_handoff_take_all(&q->returned);
	uint32_t n = 0;

	for (struct rr_handoff *k = h; k; k = k->next)
		n++;
	atomic_fetch_sub_explicit(&q->nreturned, n, memory_order_relaxed);
	srq_post_chain(q, h);
}

void rr_srq_refill(struct rr_srq *q)
{
	for (;;) {
		srq_post_returned(q);
		/* Most buffers held by calls in progress (now, or at a completion
		 * since the last refill): the load needs more. */
		if ((atomic_load_explicit(&q->posted, memory_order_relaxed) >= q->low_water &&
		     !q->starved) ||
		    q->nbufs >= q->bound || srq_grow(q))
			break;
		q->starved = false;
	}
	q->starved = false;
}

void rr_srq_put(struct rr_call_ctx *ctx)
{
	struct rr_srq *q = ctx->srq;

	ctx->state = RR_CALL_FREE;
	atomic_fetch_add_explicit(&q->nreturned, 1, memory_order_relaxed);
	rr_handoff_push(&q->returned, &ctx->free_link);
}

/*
 * The pool's thread, per message and per Call freed: post in batches of
 * recv_batch, as a connection's own receives are (rr_recv_refill), so one
 * post serves many; at once when the pool runs low.
 */
static void srq_refill_batched(struct rr_srq *q)
{
	uint32_t batch = q->srv->cfg.recv_batch ? q->srv->cfg.recv_batch : 1;

	if (atomic_load_explicit(&q->nreturned, memory_order_relaxed) >= batch || q->starved ||
	    atomic_load_explicit(&q->posted, memory_order_relaxed) < q->low_water)
		rr_srq_refill(q);
}

/* Out of line: keeps the SRQ-less receive path's code as it was. */
__attribute__((noinline)) void rr_srq_kick(struct rr_srq *q)
{
	struct rr_evt *e = q->evt;

	if (rr_this_event_thread == e) {
		rr_srq_refill(q);
		return;
	}
	/* Rare (a connection freed on evt[0]): the owner refills all its
	 * pools at its next hand-over pass (rr_srq_woken). */
	atomic_store(&e->srq_wake, true);
	atomic_store(&e->handover, true);
	rr_evt_kick(e);
}

__attribute__((noinline)) void rr_srq_recv_refill(struct rr_conn *c)
{
	/* Not on evt[0] setting up another thread's connection: that pool
	 * was posted when it was made or fitted. */
	if (rr_this_event_thread == c->srq->evt)
		srq_refill_batched(c->srq);
}

__attribute__((noinline)) void rr_srq_call_freed(struct rr_conn *c, struct rr_call_ctx *ctx)
{
	struct rr_srq *q = ctx->srq;

	atomic_fetch_sub_explicit(&c->srq_held, 1, memory_order_relaxed);
	rr_srq_put(ctx); /* the pool's now: ctx may be reposted at once */
	if (rr_this_event_thread == q->evt) {
		srq_refill_batched(q);
	} else {
		/* c's visit on its thread, the pool's, posts it (handle_kick). */
		rr_conn_get(c);
		rr_conn_kick(c);
	}
}

void rr_srq_woken(struct rr_evt *e)
{
	if (!atomic_exchange(&e->srq_wake, false))
		return;
	pthread_mutex_lock(&e->srq_lock);
	for (unsigned int j = 0; j < e->nsrq; j++)
		rr_srq_refill(e->srq[j]);
	pthread_mutex_unlock(&e->srq_lock);
}

void rr_srq_destroy(struct rr_server *srv)
{
	for (unsigned int i = 0; i < srv->nevt; i++) {
		struct rr_evt *e = &srv->evt[i];

		pthread_mutex_lock(&e->srq_lock);
		for (unsigned int j = 0; j < e->nsrq; j++)
			srq_free(e->srq[j]);
		e->nsrq = 0;
		pthread_mutex_unlock(&e->srq_lock);
	}
}
