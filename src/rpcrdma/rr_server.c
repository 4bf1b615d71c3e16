// SPDX-License-Identifier: MIT
/*
 * rr_server.c - the server: the listener and the settings fitted to its
 * device, the event threads' structures (their loop is rr_evt.c), the sink
 * pools of each thread and device, the upper layer's payload regions, and
 * everything freed again at the end (docs/threading.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"

/* Made on evt[0] (the accept; the only thread that adds pools), for the
 * connections of @e, which take from it only once one is handed over: the
 * hand-over orders the making first. @e's tick reads its pools without the
 * lock: a pool is published, pointer then count (release), once made. */
struct rr_bigpool *rr_server_bigpool(struct rr_server *srv, struct rr_evt *e, struct fab_pd *pd)
{
	struct rr_bigpool *bp = NULL;
	_Atomic(struct rr_bigpool *) *pools = srv->bigpools[e->idx];
	unsigned int n = atomic_load_explicit(&srv->nbigpools[e->idx], memory_order_relaxed);
	uint64_t regs = 0;

	for (unsigned int i = 0; i < n; i++) {
		struct rr_bigpool *p = atomic_load_explicit(&pools[i], memory_order_relaxed);

		if (p->pd == pd)
			bp = p;
	}
	if (bp || n == RR_BIGPOOLS)
		return bp;
	pthread_mutex_lock(&srv->lock);
	bp = rr_big_create(srv, pd);
	pthread_mutex_unlock(&srv->lock);
	if (!bp)
		return NULL;
	/*
	 * Register a few buffers up front: even one client calling one at a
	 * time overlaps a call's release with the next call's Read sink, and
	 * growth must not show up as registrations per I/O. Unused for
	 * RR_SINK_IDLE_S, they go back like any slab.
	 */
	rr_big_prealloc(bp, bp->prealloc, &regs);
	atomic_fetch_add(&srv->st.registrations, regs);
	atomic_store_explicit(&pools[n], bp, memory_order_relaxed);
	atomic_store_explicit(&srv->nbigpools[e->idx], n + 1, memory_order_release);
	return bp;
}

void rr_evt_drop_pools(struct rr_evt *e)
{
	struct rr_server *srv = e->srv;
	unsigned int n;

	/* Under the lock as rr_big_destroy wants it (the budget's charge);
	 * no connection is left, so no call holds a sink or a send context. */
	pthread_mutex_lock(&srv->lock);
	n = atomic_exchange_explicit(&srv->nbigpools[e->idx], 0, memory_order_relaxed);
	for (unsigned int i = 0; i < n; i++)
		rr_big_destroy(atomic_exchange_explicit(&srv->bigpools[e->idx][i], NULL,
							memory_order_relaxed));
	pthread_mutex_unlock(&srv->lock);
}

/*
 * The settings against the listener's device, once, at start: queues the
 * device cannot hold would fail every connection at its accept, so such
 * settings are refused here. The Read depth is capped to the device's, as
 * it is to each client's.
 */
int rr_server_fit_device(struct rr_server *srv)
{
	struct rr_config *cfg = &srv->cfg;
	struct rr_served *sv = &srv->served;
	struct fab_limits lim;
	int ret;

	ret = fab_listener_limits(srv->listener, &lim);
	if (ret)
		return rr_set_error(ret, "device limits: %s", fab_last_error());
	snprintf(sv->device, sizeof(sv->device), "%s", lim.device);
	/* Any RC device serves: fewer SGEs only mean more work requests. */
	if (lim.max_send_sge == 0 || lim.max_recv_sge == 0 || lim.max_read_sge == 0)
		return rr_set_error(-ERANGE, "device %s takes no scatter/gather entry "
				    "(send %u, receive %u, RDMA Read %u)", lim.device,
				    lim.max_send_sge, lim.max_recv_sge, lim.max_read_sge);
	if (lim.max_rd_atom == 0)
		return rr_set_error(-ERANGE, "device %s issues no RDMA Reads", lim.device);
	if (cfg->use_srq && (lim.max_srq_wr == 0 || lim.transport == FAB_TRANSPORT_IWARP)) {
		/* iWARP has no RNR retry: a shared pool that runs dry for a
		 * moment would end a connection, not slow it */
		rr_log("Use_SRQ: device %s has no shared receive queue%s; each connection "
		       "posts its own receives", lim.device,
		       lim.max_srq_wr ? " usable on iWARP (no RNR retry)" : "");
		cfg->use_srq = false;
	}
	snprintf(sv->transport, sizeof(sv->transport), "%s", fab_transport_name(lim.transport));
	sv->write_sge = rr_write_sge(&lim);
	sv->read_sge = lim.max_read_sge;
	sv->send_with_inv = lim.send_with_inv;
	sv->memlock_charged = lim.memlock_charged;
	if (cfg->max_ord > lim.max_rd_atom)
		cfg->max_ord = (uint8_t)lim.max_rd_atom;
	sv->credits_cap = rr_credits_cap(cfg, &lim);
	if (cfg->credits > sv->credits_cap)
		return rr_set_error(-ERANGE,
				    "Credits %u: device %s holds at most %u (a connection's "
				    "queues: %u work requests, %u completions)",
				    cfg->credits, lim.device, sv->credits_cap, lim.max_qp_wr,
				    lim.max_cqe);
	sv->credits = cfg->credits;
	sv->ord = cfg->max_ord;
	sv->inline_size = cfg->inline_size;
	sv->srq = cfg->use_srq;
	sv->max_conns = cfg->max_conns;
	/* Each connection's buffers at the full grant, all within the budget;
	 * each event thread's shared pool at its bound, the device's if
	 * smaller, all of them within the budget too (rr_srq.c). */
	sv->mem_conns = rr_conn_pinned(cfg, cfg->credits, !cfg->use_srq) * cfg->max_conns;
	if (cfg->recv_mem_budget && cfg->recv_mem_budget < sv->mem_conns)
		sv->mem_conns = cfg->recv_mem_budget;
	sv->mem_srq = rr_srq_pools_bytes(cfg, lim.max_srq_wr);
	sv->mem_sinks = rr_big_bound_bytes(cfg);
	return 0;
}

void rr_server_served(struct rr_server *srv, struct rr_served *out)
{
	*out = srv->served;
}

int rr_server_create(struct fab_fabric *fab, const char *addr, const struct rr_config *cfg,
		     const struct rr_upper_ops *ops, void *ctx, struct rr_server **out)
{
	struct rr_server *srv;
	int ret;

	rr_set_error(0, "%s", "");
	ret = rr_config_check(cfg);
	if (ret)
		return rr_set_error(ret, "settings out of range");
	if (!ops || !ops->call)
		return rr_set_error(-EINVAL, "no upper layer");
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return rr_set_error(-ENOMEM, "out of memory");
	srv->fab = fab;
	srv->cfg = *cfg;
	if (!srv->cfg.max_conns) {
		srv->cfg.max_conns = rr_max_conns_for_budget(&srv->cfg);
		rr_log("Max_Connections %u: Receive_Memory_Budget %llu B over %llu B an idle "
		       "connection%s (docs/configuration.md)",
		       srv->cfg.max_conns, (unsigned long long)srv->cfg.recv_mem_budget,
		       (unsigned long long)rr_conn_pinned_at_accept(&srv->cfg, srv->cfg.credits,
								     !srv->cfg.use_srq),
		       srv->cfg.use_srq ? ", less the shared receive pools" : "");
	}
	srv->ops = *ops;
	srv->ctx = ctx;
	srv->nevt = cfg->event_threads;
	pthread_mutex_init(&srv->lock, NULL);
	rr_admit_init(srv);
	srv->evt = calloc(srv->nevt, sizeof(*srv->evt));
	if (!srv->evt) {
		srv->nevt = 0;
		ret = -ENOMEM;
		goto err;
	}
	for (unsigned int i = 0; i < srv->nevt; i++) {
		srv->evt[i].epfd = srv->evt[i].kickfd = srv->evt[i].timerfd = -1;
		pthread_mutex_init(&srv->evt[i].srq_lock, NULL);
	}

	ret = fab_channel_create(fab, &srv->ch);
	if (ret) {
		rr_set_error(ret, "%s", fab_last_error());
		goto err;
	}
	ret = fab_listen(fab, srv->ch, addr, RR_LISTEN_BACKLOG, &srv->listener);
	if (ret) {
		rr_set_error(ret, "%s", fab_last_error());
		rr_log("listen on %s failed: %s (%s)", addr, strerror(-ret), fab_last_error());
		goto err;
	}
	ret = rr_server_fit_device(srv);
	if (ret)
		goto err;
	for (unsigned int i = 0; i < srv->nevt && !ret; i++)
		ret = rr_evt_init(srv, i);
	if (ret)
		goto err;
	rr_listener_init(srv, addr);
	*out = srv;
	return 0;
err:
	if (!rr_last_error()[0])
		rr_set_error(ret, "%s", strerror(-ret));
	if (srv->listener)
		fab_listener_destroy(srv->listener);
	rr_srq_destroy(srv);
	for (unsigned int i = 0; i < srv->nregions; i++)
		fab_mr_dereg(srv->regions[i]);
	if (srv->ch)
		fab_channel_destroy(srv->ch);
	for (unsigned int i = 0; i < srv->nevt; i++)
		rr_evt_fini(&srv->evt[i]);
	free(srv->evt);
	rr_admit_fini(srv);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return ret;
}

int rr_server_add_region(struct rr_server *srv, void *addr, size_t len)
{
	int ret;

	if (srv->nregions >= RR_MAX_REGIONS || srv->started)
		return -EINVAL;
	if (!srv->region_pd) {
		ret = fab_pd_get(srv->fab, &srv->region_pd);
		if (ret)
			return ret;
	}
	/* The client never sees this memory: local access only. */
	ret = fab_mr_reg(srv->region_pd, addr, len, FAB_ACCESS_LOCAL_WRITE,
			 &srv->regions[srv->nregions]);
	if (ret)
		return ret;
	/* Kept to register it again on the next device (rr_listener.c). */
	srv->region_addr[srv->nregions] = addr;
	srv->region_len[srv->nregions] = len;
	srv->nregions++;
	atomic_fetch_add(&srv->st.registrations, 1);
	return 0;
}

void rr_server_destroy(struct rr_server *srv)
{
	if (!srv)
		return;
	rr_evt_stop(srv);
	rr_admit_fini(srv);
	if (srv->listener) /* none while a removed device is not back */
		fab_listener_destroy(srv->listener);
	rr_srq_destroy(srv);
	for (unsigned int i = 0; i < srv->nregions; i++)
		if (srv->regions[i])
			fab_mr_dereg(srv->regions[i]);
	for (unsigned int i = 0; i < srv->nevt; i++)
		for (unsigned int j = 0; j < srv->nbigpools[i]; j++)
			rr_big_destroy(srv->bigpools[i][j]);
	fab_channel_destroy(srv->ch);
	for (unsigned int i = 0; i < srv->nevt; i++)
		rr_evt_fini(&srv->evt[i]);
	free(srv->evt);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}
