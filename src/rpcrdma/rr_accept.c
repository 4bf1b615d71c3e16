// SPDX-License-Identifier: MIT
/*
 * rr_accept.c - accepting a connection: the caps of rr_admit.c, RFC 8797
 * private data, the RDMA Read depth, credits within the memory budget, the
 * connection's buffers, queues and contexts, receives posted before the
 * accept. rr_conn.c takes the connection from there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"

/*
 * Credits: the configured grant, shrunk (never below 1) when the buffers it
 * needs would exceed what is left of the memory budget. Each connection
 * keeps credits + bc_credits + recv_batch receives posted and as many again
 * for calls in progress, so a requester within its grant never meets an
 * empty receive queue. Its send buffers are counted as they are made: the
 * reserve now, more as Replies need them (rr_send.c), up to one for each
 * receive and a few more (rr_conn_nsends). The budget counts both: both
 * are registered.
 */
static uint32_t grant_credits(struct rr_server *srv, bool own_recv, uint32_t *nrecv,
			      uint64_t *pinned)
{
	const struct rr_config *cfg = &srv->cfg;
	uint32_t fixed = cfg->bc_credits + cfg->recv_batch;
	uint32_t credits = cfg->credits;

	if (cfg->recv_mem_budget) {
		uint64_t left = cfg->recv_mem_budget > srv->recv_mem_used
				    ? cfg->recv_mem_budget - srv->recv_mem_used
				    : 0;

		if (rr_conn_pinned_at_accept(cfg, 1, own_recv) > left)
			return 0;
		if (rr_conn_pinned_at_accept(cfg, credits, own_recv) > left) {
			uint32_t lo = 1, hi = credits; /* fits at lo, not at hi */

			while (hi - lo > 1) {
				uint32_t mid = lo + (hi - lo) / 2;

				if (rr_conn_pinned_at_accept(cfg, mid, own_recv) <= left)
					lo = mid;
				else
					hi = mid;
			}
			credits = lo;
		}
	}
	*nrecv = 2 * credits + fixed;
	*pinned = rr_conn_pinned_at_accept(cfg, credits, own_recv);
	return credits;
}

/*
 * With Use_SRQ, whether this connection draws from its home thread's
 * shared pool on its device (the home is picked already): pools that
 * cannot be made within the budget, or a device past RR_SRQ_DEVICES, mean
 * receives of its own. Decided before the grant, so that those buffers are
 * charged to the budget at admission like any connection's (conn_grant).
 */
static void conn_pick_srq(struct rr_server *srv, struct rr_conn *c)
{
	if (!srv->cfg.use_srq || c->own_pd) /* an SRQ is one PD's */
		return;
	c->srq = rr_srq_for(srv, c->home, c->pd);
	if (!c->srq)
		rr_log("%s: no shared receive queue here, receives of its own", c->peer);
}

/* Receive buffers and call contexts of its own, unless the connection uses
 * the shared receive pool (conn_pick_srq); either way already counted
 * against the budget (conn_grant). */
static int conn_recv_buffers(struct rr_server *srv, struct rr_conn *c, uint32_t nrecv)
{
	const struct rr_config *cfg = &srv->cfg;
	int ret;

	if (c->srq) {
		rr_srq_fit(srv, c->srq);
		return 0;
	}
	ret = rr_pool_init(&c->recv_pool, c->pd, cfg->inline_size, nrecv, FAB_ACCESS_LOCAL_WRITE);
	if (ret)
		return ret;
	RR_STAT_ADD(c, registrations, 1);
	c->calls = calloc(nrecv, sizeof(*c->calls));
	if (!c->calls)
		return -ENOMEM;
	for (uint32_t i = 0; i < nrecv; i++) {
		c->calls[i].conn = c;
		c->calls[i].buf = rr_pool_get(&c->recv_pool);
		c->calls[i].state = RR_CALL_FREE;
		c->calls[i].next = c->free_calls;
		c->free_calls = &c->calls[i];
	}
	return 0;
}

/* Send buffers and contexts: the reverse direction's now (their bytes were
 * counted with the grant, with the claim of the reserve the Replies' pool
 * keeps for it: rr_sendpool.c). */
static int conn_send_buffers(struct rr_conn *c)
{
	uint64_t pinned;

	return rr_send_chunk_add(c, c->nsends_bc, &pinned);
}

/* The CQ and QP on the connection's device (a host may have several), the
 * CQ watched by its event thread: here when that is this one, else from
 * the hand-over (rr_conn_hand_over). With an SRQ a client within its grant
 * still has at most nrecv receives completing at once; one that overruns
 * is closed (rr_recv_complete). */
static int conn_queues(struct rr_conn *c, uint32_t nrecv)
{
	struct fab_qp_caps caps = {0};
	int ret;

	ret = fab_conn_cq_create(c->fc, (int)(nrecv + c->sq_depth), &c->cq);
	if (ret)
		return ret;
	caps.max_send_wr = c->sq_depth;
	caps.max_recv_wr = c->srq ? 0 : nrecv;
	caps.max_send_sge = c->write_sge;
	caps.max_recv_sge = 1;
	caps.srq = c->srq ? c->srq->fsrq : NULL;
	ret = fab_conn_create_qp(c->fc, c->cq, c->cq, &caps);
	if (ret)
		return ret;
	if (c->home == c->evt) {
		ret = rr_evt_epoll_add(c->evt, fab_cq_fd(c->cq), c);
		if (ret)
			return ret;
		c->in_epoll = true;
	}
	fab_cq_arm(c->cq);
	return 0;
}

static int conn_setup(struct rr_server *srv, struct rr_conn *c, uint32_t nrecv)
{
	const struct rr_config *cfg = &srv->cfg;
	int ret;

	c->nrecv = nrecv;
	c->post_target = c->credits + cfg->bc_credits + cfg->recv_batch;
	c->repost_at = c->post_target - (cfg->recv_batch ? cfg->recv_batch : 1);
	c->nsends = rr_conn_nsends(cfg, nrecv);
	c->nsends_bc = rr_conn_nsends_bc(cfg);
	c->sq_depth = rr_conn_sq_depth(c->nsends, c->ord, c->write_sge);
	c->sq_avail = c->sq_depth;
	/* A client within its grant holds no more than the per-connection mode posts. */
	c->srq_held_max = nrecv;

	if (!c->big)
		return -ENOMEM;
	ret = conn_recv_buffers(srv, c, nrecv);
	if (!ret)
		ret = conn_send_buffers(c);
	if (!ret)
		ret = conn_queues(c, nrecv);
	if (ret)
		return ret;
	/* Receives go up before the accept: the client may send at once. */
	rr_recv_refill(c);
	return c->srq || c->posted == c->post_target ? 0 : -EIO;
}

/* Credits and the memory they pin, counted against the budget; false
 * when the budget has no room for even one credit. */
static bool conn_grant(struct rr_server *srv, struct rr_conn *c, uint32_t *nrecv)
{
	uint64_t pinned = 0;

	pthread_mutex_lock(&srv->lock);
	c->credits = grant_credits(srv, !c->srq, nrecv, &pinned);
	/* Until the client's first reverse-direction Reply states its grant,
	 * one callback at a time (RFC 8166 section 3.3.3, by analogy). */
	c->bc_grant = 1;
	if (c->credits) {
		c->pinned = pinned;
		srv->recv_mem_used += pinned;
		/* With the shared pool a connection has no receive buffers of its own. */
		if (!c->srq)
			c->recv_mem = rr_pool_bytes(srv->cfg.inline_size, *nrecv);
	}
	pthread_mutex_unlock(&srv->lock);
	if (!c->credits)
		return false;
	RR_STAT_ADD(c, recv_mem_bytes, c->recv_mem);
	/* registered: all but the reserve's claim (the pool registers that) */
	RR_STAT_ADD(c, pinned_bytes, c->pinned - rr_sendpool_claim(&srv->cfg));
	atomic_store(&c->st.credit_grant, c->credits);
	atomic_store(&srv->st.credit_grant, c->credits);
	return true;
}

/* Accept with our RFC 8797 private data and RDMA Read depth. */
static int conn_accept(struct rr_server *srv, struct rr_conn *c)
{
	struct fab_conn_param param;
	uint8_t pdata[RR_CM_PRIV_LEN];

	/* We expose no memory, so there is nothing for the client to invalidate
	 * toward us: flags 0, as the Linux server (docs/linux-client-wire.md).
	 * Our sizes are our inline buffers. */
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
	return fab_accept(c->fc, &param);
}

/* What the per-peer cap counted the address by, when not the address alone. */
static const char *peer_prefix(const struct rr_config *cfg, const uint8_t ip[16])
{
	static _Thread_local char s[24];
	bool v4 = rr_ip_is_v4(ip);
	unsigned int bits = v4 ? cfg->peer_prefix_v4 : cfg->peer_prefix_v6;

	if (bits >= (v4 ? 32u : 128u))
		return "";
	snprintf(s, sizeof(s), "'s /%u", bits);
	return s;
}

void rr_conn_connect_request(struct rr_server *srv, const struct fab_cm_event *ev)
{
	struct rr_conn *c;
	struct rr_cm_private peer;
	struct fab_limits lim;
	uint8_t ip[16];
	uint32_t nrecv = 0;
	bool ip_known, admitted = true;
	char why[96];
	int ret;

	/* Refused before anything is allocated for the request. */
	if (atomic_load(&srv->nconns) >= srv->cfg.max_conns) {
		snprintf(why, sizeof(why), "%u connections already", atomic_load(&srv->nconns));
		rr_admit_refuse(srv, fab_conn_peer(ev->conn), RR_REFUSE_MAX_CONNS, why);
		goto reject;
	}
	ip_known = rr_admit_peer_ip(&srv->cfg, ev->conn, ip);
	if (ip_known) {
		/* The per-peer counts: other threads close their connections. */
		pthread_mutex_lock(&srv->lock);
		admitted = rr_admit_peer(srv, ip);
		pthread_mutex_unlock(&srv->lock);
	}
	if (!admitted) {
		snprintf(why, sizeof(why), "%u connections from this address%s already",
			 srv->cfg.max_conns_per_peer, peer_prefix(&srv->cfg, ip));
		rr_admit_refuse(srv, fab_conn_peer(ev->conn), RR_REFUSE_PEER, why);
		goto reject;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		rr_admit_refuse(srv, fab_conn_peer(ev->conn), RR_REFUSE_OTHER, "out of memory");
		goto reject;
	}
	c->srv = srv;
	/* Set up here, on evt[0]; then its home's (rr_conn_hand_over). */
	c->evt = srv->evt;
	c->home = rr_server_pick_evt(srv);
	c->peer_known = ip_known;
	memcpy(c->peer_ip, ip, sizeof(ip));
	c->fc = ev->conn;
	snprintf(c->peer, sizeof(c->peer), "%s", fab_conn_peer(ev->conn));
	pthread_mutex_init(&c->lock, NULL);
	atomic_store(&c->refs, 1);
	c->state = RR_CONN_ACCEPTING;

	/* Every shape below comes from the device this connection is on
	 * (docs/devices.md); a host may have several. */
	if (fab_conn_limits(c->fc, &lim)) {
		rr_log("%s: device limits: %s", c->peer, fab_last_error());
		goto free_reject;
	}
	rr_cm_private_decode(ev->private_data, ev->private_data_len, &peer);
	rr_cm_negotiate(srv->cfg.inline_size, srv->cfg.inline_size, &peer, &c->inl);
	c->send_w_inv = c->inl.send_w_inv && lim.send_with_inv;
	c->write_sge = rr_write_sge(&lim);
	c->tagged_sinks = lim.transport == FAB_TRANSPORT_IWARP;
	c->signal_from = lim.unsignalled_zero_copy ? FAB_ZERO_COPY_MIN : UINT32_MAX;

	/* Our RDMA Read depth is what the client will serve, capped by the
	 * settings and the device (docs/linux-client-wire.md). */
	c->ord = ev->initiator_depth < srv->cfg.max_ord ? ev->initiator_depth : srv->cfg.max_ord;
	if (c->ord > lim.max_rd_atom)
		c->ord = lim.max_rd_atom;
	if (c->ord == 0) {
		rr_admit_refuse(srv, c->peer, RR_REFUSE_OTHER,
				"peer serves no RDMA Reads (responder_resources 0)");
		goto free_reject;
	}

	c->pd = fab_conn_pd(c->fc);
	if (!c->pd) {
		rr_admit_refuse(srv, c->peer, RR_REFUSE_OTHER, "no protection domain");
		goto free_reject;
	}
	/* The sink pool stays the device PD's: on iWARP its buffers reach
	 * this QP through registrations of their own (rr_read.c, rr_rw.c). */
	c->big = rr_server_bigpool(srv, c->home, c->pd);
	/* iWARP: a Read's sink takes the peer's tagged Writes while its Read
	 * is in flight; in a PD of the connection's own, only this peer can
	 * name it (docs/devices.md). */
	if (c->tagged_sinks && fab_conn_own_pd(c->fc, &c->own_pd)) {
		rr_admit_refuse(srv, c->peer, RR_REFUSE_OTHER, "no protection domain of its own");
		goto free_reject;
	}
	if (c->own_pd)
		c->pd = c->own_pd;
	conn_pick_srq(srv, c);
	if (!conn_grant(srv, c, &nrecv)) {
		rr_admit_refuse(srv, c->peer, RR_REFUSE_MEM, "receive memory budget exhausted");
		goto free_reject;
	}

	fab_conn_set_context(c->fc, c);
	ret = conn_setup(srv, c, nrecv);
	if (ret) {
		rr_log("%s: setup failed: %s (%s)", c->peer, strerror(-ret), fab_last_error());
		goto undo_budget;
	}

	ret = conn_accept(srv, c);
	if (ret) {
		rr_log("%s: accept failed: %s (%s)", c->peer, strerror(-ret), fab_last_error());
		goto undo_budget;
	}
	/* the handshake timeout runs, and the Send timeout's clock */
	c->accepted_at = c->quiet_since = c->send_wait_since = rr_now_s();
	/* Every connection, for the caps, the stats and a device removal;
	 * srv->lock guards it against those readers on other threads. */
	pthread_mutex_lock(&srv->lock);
	c->next = srv->conns;
	if (c->next)
		c->next->pprev = &c->next;
	c->pprev = &srv->conns;
	srv->conns = c;
	atomic_store(&srv->nconns, atomic_load(&srv->nconns) + 1);
	rr_admit_peer_add(srv, c);
	pthread_mutex_unlock(&srv->lock);
	rr_conn_hand_over(c);
	return;

undo_budget:
	RR_SRV_STAT_ADD(srv, conns_failed, 1);
	if (c->state == RR_CONN_CLOSING) /* a failed receive post closed it: never listed */
		atomic_fetch_sub(&c->evt->nclosing, 1);
	pthread_mutex_lock(&srv->lock);
	srv->recv_mem_used -= c->pinned;
	pthread_mutex_unlock(&srv->lock);
	RR_STAT_SUB(c, recv_mem_bytes, c->recv_mem);
	if (c->pinned)
		RR_STAT_SUB(c, pinned_bytes, c->pinned - rr_sendpool_claim(&srv->cfg));
	fab_reject(c->fc, NULL, 0);
	atomic_fetch_sub_explicit(&c->home->load, 1, memory_order_relaxed);
	rr_conn_free(c);
	return;
free_reject:
	fab_reject(c->fc, NULL, 0);
	atomic_fetch_sub_explicit(&c->home->load, 1, memory_order_relaxed);
	rr_conn_free(c);
	return;
reject:
	fab_reject(ev->conn, NULL, 0);
	fab_conn_destroy(ev->conn);
}
