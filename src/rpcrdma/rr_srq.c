// SPDX-License-Identifier: MIT
/*
 * rr_srq.c - the shared receive pool (cfg.use_srq): one SRQ and one set of
 * registered receive buffers for every connection of the server, instead of
 * 2 x credits + bc_credits + recv_batch buffers per connection.
 *
 * The pool starts with one chunk of buffers, grows at once to one client's
 * window (credits + backchannel + batch) when the first client connects,
 * and, whenever fewer than low_water (a quarter of the pool) receives were
 * left posted, doubles (one registration per step) up to an explicit bound; it never shrinks, so
 * steady state registers nothing. Buffers are posted only here, on evt[0] (the listener's event
 * thread, which makes and grows the pool too); any thread gives one back with rr_srq_put, and
 * another event thread's connections wake evt[0] to post it again (rr_srq_kick). Credits stay per connection: a client
 * within its grant may still meet a momentarily empty SRQ, which its RNR
 * retries (accepted with rnr_retry_count 7) turn into a delay.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"

#define RR_SRQ_POST_BATCH 16

/*
 * The pool's counters, all here: @bufs receives and @bytes of registered
 * memory came (positive) or went (negative). Server-wide only: the pool is
 * no connection's (rr_counters.def), so a connection's rows show 0.
 */
static void srq_count(struct rr_server *srv, int64_t bufs, int64_t bytes)
{
	RR_SRV_STAT_ADD(srv, srq_bufs, (uint64_t)bufs);
	RR_SRV_STAT_ADD(srv, recv_mem_bytes, (uint64_t)bytes);
	RR_SRV_STAT_ADD(srv, pinned_bytes, (uint64_t)bytes);
}

/* The pool's bound: SRQ_Depth or the default, never above the budget (which
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

/* Register one more chunk of @want buffers (fewer at the bound) and add its
 * contexts to the free list. */
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
	pthread_mutex_lock(&q->lock);
	for (uint32_t i = 0; i < n; i++) {
		struct rr_call_ctx *ctx = &ch->calls[i];

		ctx->srq = q;
		ctx->srq_lkey = ch->pool.mr->lkey;
		ctx->buf = rr_pool_get(&ch->pool);
		ctx->state = RR_CALL_FREE;
		ctx->next = q->free_calls;
		q->free_calls = ctx;
	}
	pthread_mutex_unlock(&q->lock);
	q->nchunks++;
	q->nbufs += n;
	/* A quarter of the pool: a bigger pool serves more connections at once. */
	atomic_store(&q->low_water,
		     q->nbufs / 4 > q->chunk / 2 ? q->nbufs / 4 : (q->chunk + 1) / 2);
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
 * pool grew from RR_SRQ_START). So the pool holds at least one client's
 * whole window - still one window for all idle connections, not one each.
 */
/* One client's window of receives: credits + backchannel + batch. */
static uint64_t srq_window(const struct rr_config *cfg)
{
	return (uint64_t)cfg->credits + cfg->bc_credits + cfg->recv_batch;
}

/* True when buffers were added (the caller posts them). */
static bool srq_fit_window(struct rr_srq *q)
{
	uint64_t window = srq_window(&q->srv->cfg);

	if (window > q->bound)
		window = q->bound;
	return q->nbufs < window && srq_add(q, (uint32_t)window - q->nbufs) == 0;
}

struct rr_srq *rr_srq_for(struct rr_server *srv, struct fab_pd *pd)
{
	struct rr_srq *q = srv->srq;
	uint32_t depth;
	int ret;

	if (q)
		return q->pd == pd ? q : NULL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->srv = srv;
	q->pd = pd;
	q->bound = rr_srq_bound(&srv->cfg);
	if (q->bound == 0) {
		rr_log("shared receive queue: the receive memory budget holds no buffer");
		free(q);
		return NULL;
	}
	q->chunk = q->bound < RR_SRQ_START ? q->bound : RR_SRQ_START;
	atomic_store(&q->low_water, (q->chunk + 1) / 2);
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
	pthread_mutex_init(&q->lock, NULL);
	if (!q->chunks || srq_grow(q)) {
		fab_srq_destroy(q->fsrq);
		pthread_mutex_destroy(&q->lock);
		free(q->chunks);
		free(q);
		return NULL;
	}
	srv->srq = q;
	rr_log("shared receive queue: %u receives of %u bytes, growing to %u", q->nbufs,
	       srv->cfg.inline_size, q->bound);
	if (srq_window(&srv->cfg) > q->bound)
		rr_log("shared receive queue: its bound (%u) is below one client's window (%llu): "
		       "clients will wait on RNR retries",
		       q->bound, (unsigned long long)srq_window(&srv->cfg));
	rr_srq_refill(srv);
	return q;
}

void rr_srq_fit(struct rr_server *srv)
{
	if (srq_fit_window(srv->srq))
		rr_srq_refill(srv);
}

/* Post a list of free contexts; those that could not be posted go back. */
static void srq_post_list(struct rr_srq *q, struct rr_call_ctx *list)
{
	struct fab_recv_wr wr[RR_SRQ_POST_BATCH];
	struct fab_sge sge[RR_SRQ_POST_BATCH];
	struct rr_call_ctx *batch[RR_SRQ_POST_BATCH];

	while (list) {
		struct fab_recv_wr *bad = NULL;
		int n = 0, ret;

		for (; list && n < RR_SRQ_POST_BATCH; n++) {
			struct rr_call_ctx *ctx = list;

			list = ctx->next;
			ctx->next = NULL;
			ctx->conn = NULL;
			ctx->state = RR_CALL_POSTED;
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
			atomic_fetch_add(&q->posted, (uint32_t)done);
			for (int i = done; i < n; i++)
				rr_srq_put(batch[i]);
			while (list) {
				struct rr_call_ctx *next = list->next;

				rr_srq_put(list);
				list = next;
			}
			return;
		}
		atomic_fetch_add(&q->posted, (uint32_t)n);
	}
}

void rr_srq_refill(struct rr_server *srv)
{
	struct rr_srq *q = srv->srq;
	struct rr_call_ctx *list;

	if (!q)
		return;
	for (;;) {
		pthread_mutex_lock(&q->lock);
		list = q->free_calls;
		q->free_calls = NULL;
		pthread_mutex_unlock(&q->lock);
		srq_post_list(q, list);
		/* Most buffers held by calls in progress (now, or at a completion
		 * since the last refill): the load needs more. */
		if ((atomic_load(&q->posted) >= atomic_load(&q->low_water) &&
		     !atomic_load(&q->starved)) ||
		    q->nbufs >= q->bound || srq_grow(q))
			break;
		atomic_store(&q->starved, false);
	}
	atomic_store(&q->starved, false);
}

/* Out of line: keeps the SRQ-less receive path's code as it was. */
__attribute__((noinline)) void rr_srq_kick(struct rr_server *srv)
{
	if (rr_on_listener_thread(srv))
		rr_srq_refill(srv);
	else
		rr_evt_kick(srv->evt);
}

void rr_srq_put(struct rr_call_ctx *ctx)
{
	struct rr_srq *q = ctx->srq;

	pthread_mutex_lock(&q->lock);
	ctx->state = RR_CALL_FREE;
	ctx->next = q->free_calls;
	q->free_calls = ctx;
	pthread_mutex_unlock(&q->lock);
}

void rr_srq_destroy(struct rr_server *srv)
{
	struct rr_srq *q = srv->srq;
	uint64_t bytes;
	int ret;

	if (!q)
		return;
	ret = fab_srq_destroy(q->fsrq);
	if (ret) {
		/* A connection outlived shutdown: its QP may still land in our buffers. */
		rr_log("shared receive queue not freed: %s (%s)", strerror(-ret), fab_last_error());
		return;
	}
	bytes = q->bytes;
	for (uint32_t i = 0; i < q->nchunks; i++) {
		rr_pool_fini(&q->chunks[i].pool);
		free(q->chunks[i].calls);
	}
	srq_count(srv, -(int64_t)q->nbufs, -(int64_t)bytes);
	srv->recv_mem_used -= bytes;
	pthread_mutex_destroy(&q->lock);
	free(q->chunks);
	free(q);
	srv->srq = NULL;
}
