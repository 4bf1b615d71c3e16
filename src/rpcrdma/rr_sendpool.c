// SPDX-License-Identifier: MIT
/*
 * rr_sendpool.c - the Replies' send contexts and buffers, shared by the
 * connections of one event thread on one device (struct rr_sendpool in
 * rr_internal.h says the rules): joining and leaving, taking and giving
 * back with every connection's reserve kept, growing within the budget,
 * waking a connection that waits, and giving back chunks that stay free.
 */
#include <errno.h>
#include <stdlib.h>

#include "rpcrdma/rr_internal.h"

uint64_t rr_sendpool_claim(const struct rr_config *cfg)
{
	return rr_pool_bytes(cfg->inline_size, RR_SEND_RESERVE);
}

/*
 * The budget counts what the pool registers beyond its connections' claims
 * (those were counted at their admission): bring the charge to that, under
 * the server's lock. With @limit, false (and nothing charged) when the
 * growth to @made_bytes does not fit what the budget has left.
 */
static bool charge(struct rr_sendpool *sp, uint64_t made_bytes, bool limit)
{
	struct rr_server *srv = sp->srv;
	uint64_t want = made_bytes > sp->claimed ? made_bytes - sp->claimed : 0;
	bool ok = true;

	pthread_mutex_lock(&srv->lock);
	if (limit && want > sp->charged && srv->cfg.recv_mem_budget) {
		uint64_t left = srv->cfg.recv_mem_budget > srv->recv_mem_used
				    ? srv->cfg.recv_mem_budget - srv->recv_mem_used
				    : 0;

		ok = want - sp->charged <= left;
	}
	if (ok) {
		srv->recv_mem_used += want;
		srv->recv_mem_used -= sp->charged;
		sp->charged = want;
	}
	pthread_mutex_unlock(&srv->lock);
	return ok;
}

/* A chunk of @n more contexts on the free list; false when it cannot be
 * registered, or (@limit) the budget has no room for it. */
static bool grow(struct rr_sendpool *sp, uint32_t n, bool limit)
{
	struct rr_server *srv = sp->srv;
	uint64_t bytes = rr_pool_bytes(srv->cfg.inline_size, n);
	struct rr_send_chunk *ch;

	if (!charge(sp, sp->made_bytes + bytes, limit))
		return false;
	ch = rr_send_chunk_make(srv, sp->pd, n);
	if (!ch) {
		charge(sp, sp->made_bytes, false);
		return false;
	}
	ch->next = sp->chunks;
	sp->chunks = ch;
	for (uint32_t i = 0; i < n; i++) {
		ch->ctx[i].next_free = sp->free;
		sp->free = &ch->ctx[i];
	}
	sp->spare += n;
	sp->made_bytes += bytes;
	RR_SRV_STAT_ADD(srv, pinned_bytes, bytes);
	return true;
}

/* Contexts freed connections left: back on the free list, spare (owner
 * thread). */
static void take_returned(struct rr_sendpool *sp)
{
	struct rr_handoff *h = rr_handoff_take(&sp->returned);

	while (h) {
		struct rr_send_ctx *s = RR_CONTAINER_OF(h, struct rr_send_ctx, handoff);

		h = h->next;
		s->conn = NULL;
		s->next_free = sp->free;
		sp->free = s;
		sp->spare++;
	}
}

static struct rr_sendpool *pool_make(struct rr_server *srv, struct fab_pd *pd)
{
	struct rr_sendpool *sp = calloc(1, sizeof(*sp));

	if (sp) {
		sp->srv = srv;
		sp->pd = pd;
	}
	return sp;
}

/* @c's first Reply: its pool (made on first use), and its reserve in it. */
static bool join(struct rr_conn *c)
{
	struct rr_server *srv = c->srv;
	struct rr_sendpool *sp;

	if (c->own_pd) {
		sp = c->own_sp = pool_make(srv, c->pd);
	} else {
		if (!c->big->sends)
			c->big->sends = pool_make(srv, c->pd);
		sp = c->big->sends;
	}
	if (!sp)
		return false;
	take_returned(sp);
	/* Its claim was counted at admission: the reserve is made without
	 * asking the budget again, and the charge can only go down. */
	sp->claimed += rr_sendpool_claim(&srv->cfg);
	if (sp->spare < RR_SEND_RESERVE && !grow(sp, RR_SEND_RESERVE - sp->spare, false)) {
		sp->claimed -= rr_sendpool_claim(&srv->cfg);
		if (sp == c->own_sp) { /* empty: the next Reply tries again */
			free(sp);
			c->own_sp = NULL;
		}
		return false;
	}
	sp->spare -= RR_SEND_RESERVE; /* now owed to it */
	charge(sp, sp->made_bytes, false);
	sp->nconns++;
	c->sp = sp;
	return true;
}

struct rr_send_ctx *rr_sendpool_get_slow(struct rr_conn *c)
{
	struct rr_sendpool *sp = c->sp;

	if (!sp) {
		if (!join(c))
			return NULL;
		sp = c->sp;
	}
	if (c->sends_held < RR_SEND_RESERVE)
		return rr_sendpool_take(c, sp);
	/* Past its reserve: what freed connections left first. */
	if (atomic_load_explicit(&sp->returned, memory_order_relaxed))
		take_returned(sp);
	if (c->sends_held >= c->nsends - c->nsends_bc)
		return NULL; /* its bound: one per receive and RR_QUIET_SENDS */
	if (!sp->spare) {
		/* nothing spare: a chunk more if the budget has room, within
		 * its bound (its credits) */
		uint32_t max = c->nsends - c->nsends_bc;
		uint32_t n = max > c->sends_held ? max - c->sends_held : 0;

		if (n > RR_SENDPOOL_GROW)
			n = RR_SENDPOOL_GROW;
		while (n && !grow(sp, n, true))
			n /= 2;
		if (!n)
			return NULL;
		RR_STAT_ADD(c, send_ctx_grown, n);
	}
	sp->spare--;
	return rr_sendpool_take(c, sp);
}

void rr_sendpool_put_slow(struct rr_conn *c)
{
	struct rr_sendpool *sp = c->sp;

	/* Its own waiting Replies first: this one is theirs if it is below
	 * its reserve; then another's, if one is spare. */
	if (c->ctx_wait_head && !c->sp_kicked &&
	    (c->sends_held < RR_SEND_RESERVE || sp->spare)) {
		c->sp_kicked = true;
		rr_conn_get(c);
		rr_conn_kick(c);
		return;
	}
	while (sp->wait_head && sp->spare) {
		struct rr_conn *w = sp->wait_head;

		sp->wait_head = w->sp_wait_next;
		if (!sp->wait_head)
			sp->wait_tail = NULL;
		w->sp_waiting = false;
		if (w->ctx_wait_head && !w->sp_kicked && w->state != RR_CONN_CLOSING) {
			w->sp_kicked = true;
			rr_conn_get(w);
			rr_conn_kick(w);
			return;
		}
	}
}

void rr_sendpool_wait(struct rr_conn *c)
{
	struct rr_sendpool *sp = c->sp;

	if (!sp || c->sp_waiting)
		return; /* not joined: its own Sends' completions come first */
	c->sp_waiting = true;
	c->sp_wait_next = NULL;
	if (sp->wait_tail)
		sp->wait_tail->sp_wait_next = c;
	else
		sp->wait_head = c;
	sp->wait_tail = c;
}

void rr_sendpool_leave(struct rr_conn *c)
{
	struct rr_sendpool *sp = c->sp;

	if (!sp)
		return;
	if (c->sp_waiting) {
		struct rr_conn **pp = &sp->wait_head, *prev = NULL;

		while (*pp != c) {
			prev = *pp;
			pp = &(*pp)->sp_wait_next;
		}
		*pp = c->sp_wait_next;
		if (sp->wait_tail == c)
			sp->wait_tail = prev;
		c->sp_waiting = false;
	}
	/* What it still holds are unsignalled Sends, given back with its QP
	 * (rr_sendpool_orphans); its reserve is no longer owed. */
	if (c->sends_held < RR_SEND_RESERVE)
		sp->spare += RR_SEND_RESERVE - c->sends_held;
	sp->claimed -= rr_sendpool_claim(&c->srv->cfg);
	sp->nconns--;
	charge(sp, sp->made_bytes, false);
}

void rr_sendpool_orphans(struct rr_conn *c)
{
	struct rr_sendpool *sp = c->sp;
	struct rr_send_ctx *q = c->quiet_head;

	if (!sp)
		return;
	c->quiet_head = c->quiet_tail = NULL;
	while (q) {
		struct rr_send_ctx *next = q->next_quiet;

		q->quiet = false;
		rr_handoff_push(&sp->returned, &q->handoff);
		q = next;
	}
	if (c->own_sp) {
		take_returned(c->own_sp);
		charge(c->own_sp, 0, false);
		c->own_sp->charged = 0;
		rr_sendpool_destroy(c->own_sp);
		c->own_sp = NULL;
	}
	c->sp = NULL;
}

#define RR_CHUNK_DROP UINT32_MAX	/* idle_ticks of a chunk being given back */

void rr_sendpool_tick(struct rr_sendpool *sp)
{
	uint32_t spare;
	bool drop = false;

	take_returned(sp);
	spare = sp->spare;
	/* Connections joined and no reserve's worth spare: nothing to give
	 * back (the common case, in a few instructions a second). */
	if (sp->nconns && spare < RR_SEND_RESERVE)
		return;
	/* Each chunk's free contexts, counted here rather than per call. */
	for (struct rr_send_chunk *ch = sp->chunks; ch; ch = ch->next)
		ch->nfree = 0;
	for (struct rr_send_ctx *s = sp->free; s; s = s->next_free)
		s->chunk->nfree++;
	/* Mark: chunks wholly free for a while (any, once no connection is
	 * joined), as long as what every reserve needs stays made. */
	for (struct rr_send_chunk *ch = sp->chunks; ch; ch = ch->next) {
		if (ch->nfree != ch->n) {
			ch->idle_ticks = 0;
			continue;
		}
		if (ch->idle_ticks < RR_SENDPOOL_IDLE_S)
			ch->idle_ticks++;
		if ((ch->idle_ticks >= RR_SENDPOOL_IDLE_S || !sp->nconns) &&
		    spare >= ch->n) {
			ch->idle_ticks = RR_CHUNK_DROP;
			spare -= ch->n;
			drop = true;
		}
	}
	if (!drop)
		return;
	/* One walk of the free list, then the chunks go. */
	for (struct rr_send_ctx **pp = &sp->free; *pp;) {
		if ((*pp)->chunk->idle_ticks == RR_CHUNK_DROP)
			*pp = (*pp)->next_free;
		else
			pp = &(*pp)->next_free;
	}
	sp->spare = spare;
	for (struct rr_send_chunk **pp = &sp->chunks; *pp;) {
		struct rr_send_chunk *ch = *pp;

		if (ch->idle_ticks != RR_CHUNK_DROP) {
			pp = &ch->next;
			continue;
		}
		*pp = ch->next;
		sp->made_bytes -= ch->pool.map_len;
		RR_SRV_STAT_SUB(sp->srv, pinned_bytes, ch->pool.map_len);
		rr_send_chunk_free(ch);
	}
	charge(sp, sp->made_bytes, false);
}

void rr_sendpool_destroy(struct rr_sendpool *sp)
{
	if (!sp)
		return;
	take_returned(sp);
	while (sp->chunks) {
		struct rr_send_chunk *ch = sp->chunks;

		sp->chunks = ch->next;
		sp->made_bytes -= ch->pool.map_len;
		RR_SRV_STAT_SUB(sp->srv, pinned_bytes, ch->pool.map_len);
		rr_send_chunk_free(ch);
	}
	/* the caller holds srv->lock, or no other thread runs, or (a pool of
	 * a connection's own) nothing is charged any more */
	if (sp->charged)
		sp->srv->recv_mem_used -= sp->charged;
	free(sp);
}
