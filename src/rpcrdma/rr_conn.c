// SPDX-License-Identifier: MIT
/*
 * rr_conn.c - connection life after the accept (rr_accept.c): references,
 * CM events, the completion poll that drives the data path, orderly close
 * and the final teardown once nothing references the connection any more.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"

#define RR_CQ_POLL_BATCH 16

void rr_conn_get(struct rr_conn *c)
{
	atomic_fetch_add(&c->refs, 1);
}

void rr_conn_put(struct rr_conn *c)
{
	struct rr_evt *e = c->evt; /* c may be reaped once the count drops */

	/* The last reference is reaped on its event thread. */
	if (atomic_fetch_sub(&c->refs, 1) == 1)
		rr_evt_kick(e);
}

/*
 * Empty a closing connection's CQ. Only flushed receives can be left: they
 * hold no reference, but a shared pool's buffer must go back to the pool.
 */
static void reclaim_flushed(struct rr_conn *c)
{
	struct fab_wc wc[RR_CQ_POLL_BATCH];
	int n;

	while ((n = fab_cq_poll(c->cq, wc, RR_CQ_POLL_BATCH)) > 0) {
		for (int i = 0; i < n; i++) {
			struct rr_call_ctx *ctx =
			    (struct rr_call_ctx *)(uintptr_t)(wc[i].wr_id & ~(uint64_t)RR_WRID_MASK);

			if ((wc[i].wr_id & RR_WRID_MASK) == RR_WRID_RECV && ctx->srq) {
				atomic_fetch_sub(&ctx->srq->posted, 1);
				rr_srq_put(ctx);
				rr_srq_kick(ctx->srq);
			}
		}
	}
}

/* Everything a connection holds, and the connection; its references are
 * gone. evt[0] (or set-up and shutdown, single-threaded). */
void rr_conn_free(struct rr_conn *c)
{
	if (c->cq) {
		if (c->in_epoll)
			rr_evt_epoll_del(c->evt, fab_cq_fd(c->cq));
		c->in_epoll = false;
		/* Before the QP goes too: a verbs provider may purge its CQEs. */
		reclaim_flushed(c);
	}
	if (c->fc)
		fab_conn_destroy(c->fc);
	if (c->cq) {
		reclaim_flushed(c);
		fab_cq_destroy(c->cq);
	}
	rr_sendpool_orphans(c); /* after the QP: nothing sends from them now */
	rr_pool_fini(&c->recv_pool);
	rr_send_chunks_free(c);
	fab_pd_free(c->own_pd); /* after the QP and every registration in it */
	for (uint32_t i = 0; c->calls && i < c->nrecv; i++)
		rr_pcl_free(c->calls[i].pcl); /* calls the close cut short */
	free(c->calls);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Once per connection: out of the receive path's code. */
__attribute__((noinline, cold)) void rr_conn_established(struct rr_conn *c)
{
	bool up = false;

	pthread_mutex_lock(&c->lock);
	if (c->state == RR_CONN_ACCEPTING) {
		c->state = RR_CONN_UP;
		up = true;
	}
	pthread_mutex_unlock(&c->lock);
	if (!up)
		return;
	RR_STAT_ADD(c, conns_accepted, 1);
	RR_STAT_ADD(c, conns_active, 1);
	rr_ratelog(&c->srv->conn_events, RR_EV_CONNECTED,
		   "%s: connected: credits %u, inline send %u recv %u, ord %u%s", c->peer,
		   c->credits, c->inl.max_send, c->inl.max_recv, c->ord,
		   c->send_w_inv ? ", send-with-invalidate" : "");
	if (c->srv->ops.conn_up)
		c->srv->ops.conn_up(c->srv->ctx, c);
}

void rr_conn_cm_event(struct rr_conn *c, const struct fab_cm_event *ev)
{
	switch (ev->type) {
	case FAB_CM_ESTABLISHED:
		rr_conn_established(c);
		break;
	case FAB_CM_DISCONNECTED:
		rr_conn_close(c, "peer disconnected");
		break;
	case FAB_CM_DEVICE_REMOVAL:
		rr_conn_close(c, "device removed");
		break;
	case FAB_CM_QP_ERROR:
		rr_conn_close(c, "QP error");
		break;
	default:
		rr_conn_close(c, "connection error");
		break;
	}
}

__attribute__((noinline)) void rr_conn_cm_pending(struct rr_conn *c)
{
	uint32_t bits = atomic_exchange(&c->cm_pending, 0);

	/* ESTABLISHED first: it comes before whatever ends the connection. */
	if (bits & 1u << FAB_CM_ESTABLISHED)
		rr_conn_cm_event(c, &(struct fab_cm_event){.type = FAB_CM_ESTABLISHED});
	bits &= ~(1u << FAB_CM_ESTABLISHED);
	if (bits & RR_CM_UPPER_CLOSE) {
		bits &= ~RR_CM_UPPER_CLOSE;
		if (c->state != RR_CONN_CLOSING)
			rr_conn_close(c, "closed by the upper layer");
	}
	for (unsigned int t = 0; bits; t++, bits >>= 1)
		if (bits & 1)
			rr_conn_cm_event(c, &(struct fab_cm_event){.type = (enum fab_cm_event_type)t});
}

/*
 * evt[0], after the accept: a connection of another thread's goes to it
 * whole. Until the push evt[0] had it alone (its CQ in no epoll yet); the
 * push orders everything set up here before the home thread's first look.
 */
void rr_conn_hand_over(struct rr_conn *c)
{
	struct rr_evt *home = c->home;

	if (home == c->evt) {
		c->evt_next = home->conns;
		home->conns = c;
		home->nconns++;
		return;
	}
	if (c->srq)
		c->srq->handed = true; /* its thread's alone from now on (rr_srq.c) */
	c->evt = home;
	rr_handoff_push(&home->adopt, &c->adopt_link);
	atomic_store(&home->handover, true);
	rr_evt_kick(home);
}

void rr_conn_close(struct rr_conn *c, const char *why)
{
	enum rr_conn_state was;

	pthread_mutex_lock(&c->lock);
	was = c->state;
	c->state = RR_CONN_CLOSING;
	pthread_mutex_unlock(&c->lock);
	if (was == RR_CONN_CLOSING)
		return;
	atomic_store(&c->gone, true);
	/* no longer counted for its peer (rr_admit_peer) */
	pthread_mutex_lock(&c->srv->lock);
	rr_admit_peer_drop(c->srv, c);
	pthread_mutex_unlock(&c->srv->lock);
	atomic_fetch_add(&c->evt->nclosing, 1);
	RR_STAT_ADD(c, disconnects, 1);
	/* A peer reconnecting in a loop must not flood the log (rr_ratelog). */
	rr_ratelog(&c->srv->conn_events, RR_EV_CLOSING, "%s: closing: %s", c->peer, why);
	/* Its event thread disconnects (rr_conn_reap), whoever noticed. */
	rr_evt_kick(c->evt);
}

/*
 * Any thread (the upper layer's): the close is handed to the connection's
 * own thread, which alone changes its state (handle_kick). The reference
 * for the kick is taken under c->lock while the connection is not closing:
 * until it is marked closing its thread's own reference is held, so the
 * count is never raised from 0 (as cm_forward, rr_evt.c). Once closing,
 * nothing is left to do.
 */
void rr_conn_close_async(struct rr_conn *c)
{
	bool live;

	if (atomic_exchange(&c->close_wanted, true))
		return;
	pthread_mutex_lock(&c->lock);
	live = c->state != RR_CONN_CLOSING;
	if (live) {
		/* as a CM event: the visit's one test covers it (bench A) */
		atomic_fetch_or(&c->cm_pending, RR_CM_UPPER_CLOSE);
		rr_conn_get(c);
	}
	pthread_mutex_unlock(&c->lock);
	if (live)
		rr_conn_kick(c);
}

/* Event thread: completions of one connection. */
void rr_conn_poll_cq(struct rr_conn *c)
{
	struct fab_wc wc[RR_CQ_POLL_BATCH];
	bool armed = false;

	for (;;) {
		int n = fab_cq_poll(c->cq, wc, RR_CQ_POLL_BATCH);

		if (n < 0) {
			rr_conn_close(c, "completion queue error");
			return;
		}
		c->reads_held = true; /* the Reads of this poll's calls go together */
		for (int i = 0; i < n; i++) {
			switch (wc[i].wr_id & RR_WRID_MASK) {
			case RR_WRID_RECV:
				rr_recv_complete(c, &wc[i]);
				break;
			case RR_WRID_READ:
				rr_read_complete(c, &wc[i]);
				break;
			default:
				rr_send_complete(c, &wc[i]);
				break;
			}
		}
		c->reads_held = false;
		rr_read_pump(c);
		if (n == RR_CQ_POLL_BATCH)
			continue; /* there may be more */
		if (armed)
			return;
		/* A short batch emptied the CQ: arm, then poll once more for what
		 * raced the arm (anything later raises the next event). */
		fab_cq_arm(c->cq);
		armed = true;
	}
}

void rr_conn_forget(struct rr_conn *c)
{
	struct rr_server *srv = c->srv;

	pthread_mutex_lock(&srv->lock);
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	atomic_store(&srv->nconns, atomic_load(&srv->nconns) - 1);
	rr_admit_peer_drop(srv, c);
	srv->recv_mem_used -= c->pinned;
	pthread_mutex_unlock(&srv->lock);
	atomic_fetch_sub_explicit(&c->home->load, 1, memory_order_relaxed);
	RR_STAT_SUB(c, recv_mem_bytes, c->recv_mem);
	RR_STAT_SUB(c, pinned_bytes, c->pinned - rr_sendpool_claim(&srv->cfg));
	RR_SRV_STAT_ADD(srv, conns_freed, 1);
	rr_ratelog(&srv->conn_events, RR_EV_FREED, "%s: connection freed", c->peer);
}

/*
 * Off its thread's list with no reference left. The fab_conn is destroyed on
 * evt[0], whose CM channel reports its events, and the connection leaves
 * the server's list and count there too: another thread does its own part
 * (its epoll, its CQ) and hands the rest over, so evt[0] never meets a
 * connection freed under it, nor releases a removed device's pools while
 * one is on the way (rr_listener_tick waits for the count).
 */
static void retire(struct rr_conn *c)
{
	struct rr_evt *e0 = c->srv->evt;

	if (c->evt != e0) {
		if (c->in_epoll)
			rr_evt_epoll_del(c->evt, fab_cq_fd(c->cq));
		c->in_epoll = false;
		reclaim_flushed(c);
		rr_handoff_push(&e0->dead, &c->adopt_link);
		atomic_store(&e0->handover, true);
		rr_evt_kick(e0);
		return;
	}
	rr_conn_forget(c);
	rr_conn_free(c);
}

/* @e's thread: report closed connections up, free the unreferenced ones. */
void rr_conn_reap(struct rr_evt *e)
{
	struct rr_server *srv = e->srv;
	struct rr_conn **pp = &e->conns;

	if (!atomic_load_explicit(&e->nclosing, memory_order_acquire))
		return; /* the common case: no walk per wake-up */

	while (*pp) {
		struct rr_conn *c = *pp;

		if (c->state != RR_CONN_CLOSING) {
			pp = &c->evt_next;
			continue;
		}
		if (!c->disconnected) {
			/* Moves the QP to error: every posted work request is flushed. */
			c->disconnected = true;
			fab_disconnect(c->fc);
		}
		rr_send_run_deferred(c);
		if (!c->down_reported) {
			struct rr_call_ctx *q = c->read_head;

			c->down_reported = true;
			rr_send_drop_pending(c);
			/* Calls still waiting to start their reads go now; those
			 * with reads in flight go when the flushes arrive. */
			c->read_head = c->read_tail = NULL;
			rr_read_forget_waiter(c);
			while (q) {
				struct rr_call_ctx *next = q->next;

				q->next = NULL;
				/* Off the queue: rr_read_complete frees it at
				 * its last flush, which it skips while queued. */
				q->queued = false;
				if (q->reads_posted == q->reads_done)
					rr_call_free(q);
				q = next;
			}
			if (atomic_load(&c->st.conns_active)) {
				RR_STAT_SUB(c, conns_active, 1);
				if (srv->ops.conn_down)
					srv->ops.conn_down(srv->ctx, c);
			}
			rr_conn_put(c); /* the event thread's own reference */
		}
		/* Completions (flushes) may still release references. */
		rr_conn_poll_cq(c);
		if (atomic_load(&c->refs) > 0) {
			pp = &c->evt_next;
			continue;
		}
		*pp = c->evt_next;
		e->nconns--;
		atomic_fetch_sub(&e->nclosing, 1);
		rr_sendpool_leave(c); /* on its thread, the pool's */
		retire(c);
	}
}

uint32_t rr_conn_max_inline_send(const struct rr_conn *conn)
{
	uint32_t own = conn->srv->cfg.inline_size;

	return conn->inl.max_send < own ? conn->inl.max_send : own;
}

const char *rr_conn_peer(const struct rr_conn *conn)
{
	return conn->peer;
}

int rr_conn_addrs(const struct rr_conn *conn, struct sockaddr_storage *local,
		  struct sockaddr_storage *remote)
{
	return fab_conn_addrs(conn->fc, local, remote);
}

void rr_conn_set_upper(struct rr_conn *conn, void *priv)
{
	conn->upper = priv;
}

void *rr_conn_get_upper(const struct rr_conn *conn)
{
	return conn->upper;
}
