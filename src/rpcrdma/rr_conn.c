// SPDX-License-Identifier: MIT
/*
 * rr_conn.c - connection life cycle: accept (RFC 8797 private data, RDMA Read
 * depth, the caps of rr_admit.c, credits within the memory budget, receives
 * posted before the accept), CM events, orderly close and the final teardown once nothing
 * references the connection any more.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"

#define RR_SEND_SGE_PER_WR 16	/* what common HCAs and rxe accept */
#define RR_CQ_POLL_BATCH 16

void rr_conn_get(struct rr_conn *c)
{
	atomic_fetch_add(&c->refs, 1);
}

void rr_conn_put(struct rr_conn *c)
{
	struct rr_server *srv = c->srv; /* c may be reaped once the count drops */

	/* The last reference is reaped on the event thread. */
	if (atomic_fetch_sub(&c->refs, 1) == 1)
		rr_server_kick(srv);
}

/*
 * Credits: the configured grant, shrunk (never below 1) when the buffers it
 * needs would exceed what is left of the memory budget. Each connection
 * keeps credits + bc_credits + recv_batch receives posted and as many again
 * for calls in progress, so a requester within its grant never meets an
 * empty receive queue, and a send buffer for each of them and a few more
 * (rr_conn_nsends). The budget counts both: both are registered.
 */
static uint32_t grant_credits(struct rr_server *srv, uint32_t *nrecv, uint64_t *pinned)
{
	const struct rr_config *cfg = &srv->cfg;
	uint32_t fixed = cfg->bc_credits + cfg->recv_batch;
	uint32_t credits = cfg->credits;
	/* With the shared pool a connection has no receive buffers of its own:
	 * the pool is counted as it grows (rr_srq.c). */
	bool own_recv = !cfg->use_srq;

	if (cfg->recv_mem_budget) {
		uint64_t left = cfg->recv_mem_budget > srv->recv_mem_used
					? cfg->recv_mem_budget - srv->recv_mem_used
					: 0;

		if (rr_conn_pinned(cfg, 1, own_recv) > left)
			return 0;
		if (rr_conn_pinned(cfg, credits, own_recv) > left) {
			uint32_t lo = 1, hi = credits; /* fits at lo, not at hi */

			while (hi - lo > 1) {
				uint32_t mid = lo + (hi - lo) / 2;

				if (rr_conn_pinned(cfg, mid, own_recv) <= left)
					lo = mid;
				else
					hi = mid;
			}
			credits = lo;
		}
	}
	*nrecv = 2 * credits + fixed;
	*pinned = rr_conn_pinned(cfg, credits, own_recv);
	return credits;
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
				c->srv->srq->posted--;
				rr_srq_put(ctx);
				rr_server_kick(c->srv);
			}
		}
	}
}

static void conn_free_resources(struct rr_conn *c)
{
	if (c->cq) {
		if (c->in_epoll)
			rr_server_epoll_del(c->srv, fab_cq_fd(c->cq));
		/* Before the QP goes too: a verbs provider may purge its CQEs. */
		reclaim_flushed(c);
	}
	if (c->fc)
		fab_conn_destroy(c->fc);
	if (c->cq) {
		reclaim_flushed(c);
		fab_cq_destroy(c->cq);
	}
	rr_pool_fini(&c->recv_pool);
	rr_pool_fini(&c->send_pool);
	free(c->calls);
	for (uint32_t i = 0; c->sends && i < c->nsends; i++) {
		if (c->sends[i].wr != c->sends[i].wr_small)
			free(c->sends[i].wr);
		if (c->sends[i].sge != c->sends[i].sge_small)
			free(c->sends[i].sge);
	}
	free(c->sends);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static int conn_setup(struct rr_server *srv, struct rr_conn *c, uint32_t nrecv)
{
	const struct rr_config *cfg = &srv->cfg;
	struct fab_qp_caps caps = {0};
	uint32_t i;
	int ret;

	c->nrecv = nrecv;
	c->post_target = c->credits + cfg->bc_credits + cfg->recv_batch;
	c->nsends = rr_conn_nsends(cfg, nrecv);
	/* Reads are bounded by ord; replies queue when the SQ is short. */
	c->sq_depth = 2 * c->nsends + c->ord + RR_SEND_MAX_WR;
	c->sq_avail = c->sq_depth;

	c->pd = fab_conn_pd(c->fc);
	c->big = rr_server_bigpool(srv, c->pd);
	if (!c->pd || !c->big)
		return -ENOMEM;
	if (cfg->use_srq) {
		c->srq = rr_srq_for(srv, c->pd);
		if (!c->srq)
			rr_log("%s: no shared receive queue here, receives of its own", c->peer);
	}
	/* A client within its grant holds no more than the per-connection mode posts. */
	c->srq_held_max = nrecv;
	if (!c->srq) {
		ret = rr_pool_init(&c->recv_pool, c->pd, cfg->inline_size, nrecv,
				   FAB_ACCESS_LOCAL_WRITE);
		if (ret)
			return ret;
		RR_STAT_ADD(c, registrations, 1);
		c->calls = calloc(nrecv, sizeof(*c->calls));
		if (!c->calls)
			return -ENOMEM;
		if (cfg->use_srq) {
			/* Counted here, not at the grant: only now is it known. */
			uint64_t bytes = rr_pool_bytes(cfg->inline_size, nrecv);

			c->recv_mem = bytes;
			c->pinned += bytes;
			pthread_mutex_lock(&srv->lock);
			srv->recv_mem_used += bytes;
			pthread_mutex_unlock(&srv->lock);
			RR_STAT_ADD(c, recv_mem_bytes, bytes);
			RR_STAT_ADD(c, pinned_bytes, bytes);
		}
	}
	ret = rr_pool_init(&c->send_pool, c->pd, cfg->inline_size, c->nsends,
			   FAB_ACCESS_LOCAL_WRITE);
	if (ret)
		return ret;
	RR_STAT_ADD(c, registrations, 1);

	c->sends = calloc(c->nsends, sizeof(*c->sends));
	if (!c->sends)
		return -ENOMEM;
	for (i = 0; c->calls && i < nrecv; i++) {
		c->calls[i].conn = c;
		c->calls[i].buf = rr_pool_get(&c->recv_pool);
		c->calls[i].state = RR_CALL_FREE;
		c->calls[i].next = c->free_calls;
		c->free_calls = &c->calls[i];
	}
	for (i = 0; i < c->nsends; i++) {
		c->sends[i].wr = c->sends[i].wr_small;
		c->sends[i].sge = c->sends[i].sge_small;
		c->sends[i].max_wr = RR_SEND_SMALL_WR;
		c->sends[i].max_sge = RR_SEND_SMALL_SGE;
		c->sends[i].conn = c;
		c->sends[i].hdr = rr_pool_get(&c->send_pool);
		c->sends[i].bc = i >= nrecv + RR_QUIET_SENDS;
		if (c->sends[i].bc) {
			c->sends[i].next_free = c->free_bc_sends;
			c->free_bc_sends = &c->sends[i];
		} else {
			c->sends[i].next_free = c->free_sends;
			c->free_sends = &c->sends[i];
		}
	}

	/* On the connection's device (a host may have several). With an SRQ a
	 * client within its grant still has at most nrecv receives completing
	 * at once; one that overruns is closed (rr_recv_complete). */
	ret = fab_conn_cq_create(c->fc, (int)(nrecv + c->sq_depth), &c->cq);
	if (ret)
		return ret;
	caps.max_send_wr = c->sq_depth;
	caps.max_recv_wr = c->srq ? 0 : nrecv;
	caps.max_send_sge = RR_SEND_SGE_PER_WR;
	caps.max_recv_sge = 1;
	caps.srq = c->srq ? c->srq->fsrq : NULL;
	ret = fab_conn_create_qp(c->fc, c->cq, c->cq, &caps);
	if (ret)
		return ret;
	ret = rr_server_epoll_add(srv, fab_cq_fd(c->cq), c);
	if (ret)
		return ret;
	c->in_epoll = true;
	fab_cq_arm(c->cq);

	/* Receives go up before the accept: the client may send at once. */
	rr_recv_refill(c);
	return c->srq || c->posted == c->post_target ? 0 : -EIO;
}

void rr_conn_connect_request(struct rr_server *srv, const struct fab_cm_event *ev)
{
	struct rr_conn *c;
	struct rr_cm_private peer;
	struct fab_conn_param param;
	uint8_t pdata[RR_CM_PRIV_LEN], ip[16];
	uint32_t nrecv = 0;
	uint64_t pinned = 0;
	bool ip_known;
	char why[64];
	int ret;

	/* Refused before anything is allocated for the request. */
	if (srv->nconns >= srv->cfg.max_conns) {
		snprintf(why, sizeof(why), "%u connections already", srv->nconns);
		rr_admit_refuse(srv, fab_conn_peer(ev->conn), RR_REFUSE_MAX_CONNS, why);
		goto reject;
	}
	ip_known = rr_admit_peer_ip(ev->conn, ip);
	if (ip_known && !rr_admit_peer(srv, ip)) {
		snprintf(why, sizeof(why), "%u connections from this address already",
			 srv->cfg.max_conns_per_peer);
		rr_admit_refuse(srv, fab_conn_peer(ev->conn), RR_REFUSE_PEER, why);
		goto reject;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		rr_admit_refuse(srv, fab_conn_peer(ev->conn), RR_REFUSE_OTHER, "out of memory");
		goto reject;
	}
	c->srv = srv;
	c->peer_known = ip_known;
	memcpy(c->peer_ip, ip, sizeof(ip));
	c->fc = ev->conn;
	snprintf(c->peer, sizeof(c->peer), "%s", fab_conn_peer(ev->conn));
	pthread_mutex_init(&c->lock, NULL);
	atomic_store(&c->refs, 1);
	c->state = RR_CONN_ACCEPTING;

	rr_cm_private_decode(ev->private_data, ev->private_data_len, &peer);
	rr_cm_negotiate(srv->cfg.inline_size, srv->cfg.inline_size, &peer, &c->inl);
	c->send_w_inv = c->inl.send_w_inv && (fab_caps(srv->fab) & FAB_CAP_SEND_WITH_INV);

	/* svcrdma: our RDMA Read depth is what the client will serve, capped. */
	c->ord = ev->initiator_depth < srv->cfg.max_ord ? ev->initiator_depth : srv->cfg.max_ord;
	if (c->ord == 0) {
		rr_admit_refuse(srv, c->peer, RR_REFUSE_OTHER,
				"peer serves no RDMA Reads (responder_resources 0)");
		goto free_reject;
	}

	pthread_mutex_lock(&srv->lock);
	c->credits = grant_credits(srv, &nrecv, &pinned);
	/* Until the client's first reverse-direction Reply states its grant,
	 * one callback at a time (RFC 8166 section 3.3.3, by analogy). */
	c->bc_grant = 1;
	if (c->credits) {
		c->pinned = pinned;
		srv->recv_mem_used += pinned;
		/* With the shared pool a connection has no receive buffers of its own. */
		if (!srv->cfg.use_srq)
			c->recv_mem = rr_pool_bytes(srv->cfg.inline_size, nrecv);
	}
	pthread_mutex_unlock(&srv->lock);
	if (!c->credits) {
		rr_admit_refuse(srv, c->peer, RR_REFUSE_MEM, "receive memory budget exhausted");
		goto free_reject;
	}
	RR_STAT_ADD(c, recv_mem_bytes, c->recv_mem);
	RR_STAT_ADD(c, pinned_bytes, c->pinned);
	atomic_store(&c->st.credit_grant, c->credits);
	atomic_store(&srv->st.credit_grant, c->credits);

	fab_conn_set_context(c->fc, c);
	ret = conn_setup(srv, c, nrecv);
	if (ret) {
		rr_log("%s: setup failed: %s (%s)", c->peer, strerror(-ret), fab_last_error());
		goto undo_budget;
	}

	/* We expose no memory, so there is nothing for the client to invalidate
	 * toward us: flags 0, as svcrdma. Our sizes are our inline buffers. */
	rr_cm_private_encode(pdata, false, srv->cfg.inline_size, srv->cfg.inline_size);
	memset(&param, 0, sizeof(param));
	param.private_data = pdata;
	param.private_data_len = sizeof(pdata);
	param.initiator_depth = (uint8_t)c->ord;
	param.responder_resources = 0;
	/* Per-connection receives: an overrun is an RNR and a disconnect, as the
	 * Linux client expects. A shared pool may be empty for a moment even
	 * for a client within its grant: its Sends retry until a buffer is back. */
	param.rnr_retry_count = c->srq ? 7 : 0;
	param.retry_count = 7;
	/* ... and soon: the IB CM's default RNR timer is 655 ms per retry. */
	param.rnr_timer_us = c->srq ? RR_SRQ_RNR_TIMER_US : 0;
	ret = fab_accept(c->fc, &param);
	if (ret) {
		rr_log("%s: accept failed: %s (%s)", c->peer, strerror(-ret), fab_last_error());
		goto undo_budget;
	}
	/* The list is walked by the event thread; srv->lock guards it against
	 * readers elsewhere (rr_server_foreach_conn). */
	c->accepted_at = c->quiet_since = rr_now_s(); /* the handshake timeout runs */
	pthread_mutex_lock(&srv->lock);
	c->next = srv->conns;
	srv->conns = c;
	srv->nconns++;
	pthread_mutex_unlock(&srv->lock);
	return;

undo_budget:
	RR_SRV_STAT_ADD(srv, conns_failed, 1);
	if (c->state == RR_CONN_CLOSING) /* a failed receive post closed it: never listed */
		atomic_fetch_sub(&srv->nclosing, 1);
	pthread_mutex_lock(&srv->lock);
	srv->recv_mem_used -= c->pinned;
	pthread_mutex_unlock(&srv->lock);
	RR_STAT_SUB(c, recv_mem_bytes, c->recv_mem);
	RR_STAT_SUB(c, pinned_bytes, c->pinned);
	fab_reject(c->fc, NULL, 0);
	conn_free_resources(c);
	return;
free_reject:
	fab_reject(c->fc, NULL, 0);
	conn_free_resources(c);
	return;
reject:
	fab_reject(ev->conn, NULL, 0);
	fab_conn_destroy(ev->conn);
}

void rr_conn_cm_event(struct rr_conn *c, const struct fab_cm_event *ev)
{
	switch (ev->type) {
	case FAB_CM_ESTABLISHED:
		pthread_mutex_lock(&c->lock);
		if (c->state == RR_CONN_ACCEPTING)
			c->state = RR_CONN_UP;
		pthread_mutex_unlock(&c->lock);
		if (c->state != RR_CONN_UP)
			break;
		RR_STAT_ADD(c, conns_accepted, 1);
		RR_STAT_ADD(c, conns_active, 1);
		rr_log("%s: connected: credits %u, inline send %u recv %u, ord %u%s", c->peer,
		       c->credits, c->inl.max_send, c->inl.max_recv, c->ord,
		       c->send_w_inv ? ", send-with-invalidate" : "");
		if (c->srv->ops.conn_up)
			c->srv->ops.conn_up(c->srv->ctx, c);
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

void rr_conn_close(struct rr_conn *c, const char *why)
{
	enum rr_conn_state was;

	pthread_mutex_lock(&c->lock);
	was = c->state;
	c->state = RR_CONN_CLOSING;
	pthread_mutex_unlock(&c->lock);
	if (was == RR_CONN_CLOSING)
		return;
	atomic_fetch_add(&c->srv->nclosing, 1);
	rr_log("%s: closing: %s", c->peer, why);
	RR_STAT_ADD(c, disconnects, 1);
	/* The event thread disconnects (rr_conn_reap), whoever noticed. */
	rr_server_kick(c->srv);
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

/* Event thread: report closed connections up, free the unreferenced ones. */
void rr_conn_reap(struct rr_server *srv)
{
	struct rr_conn **pp = &srv->conns;

	if (!atomic_load_explicit(&srv->nclosing, memory_order_acquire))
		return; /* the common case: no walk per wake-up */

	while (*pp) {
		struct rr_conn *c = *pp;

		if (c->state != RR_CONN_CLOSING) {
			pp = &c->next;
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
			pp = &c->next;
			continue;
		}
		pthread_mutex_lock(&srv->lock);
		*pp = c->next;
		srv->nconns--;
		atomic_fetch_sub(&srv->nclosing, 1);
		srv->recv_mem_used -= c->pinned;
		pthread_mutex_unlock(&srv->lock);
		RR_STAT_SUB(c, recv_mem_bytes, c->recv_mem);
		RR_STAT_SUB(c, pinned_bytes, c->pinned);
		rr_log("%s: connection freed", c->peer);
		conn_free_resources(c);
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
