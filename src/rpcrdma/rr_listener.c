// SPDX-License-Identifier: MIT
/*
 * rr_listener.c - the listener's life cycle after set-up, and health.
 *
 * A device removal (FAB_CM_DEVICE_REMOVAL on the listener, on any
 * connection, or for the device as a whole) takes everything the engine has
 * on the device: the kernel finishes removing it only when every process
 * closed it. So, on the event thread:
 *   1. lost: not serving; the listener is destroyed, every connection
 *      closed (their QPs flush; rr_conn_reap frees each once its calls are
 *      released, CQ and receive buffers included);
 *   2. released: with no connection left, the shared receive pool, the big
 *      Read buffers and the upper layer's regions are deregistered;
 *   3. re-listen: fab_listen every RR_RELISTEN_S seconds (it looks for
 *      devices afresh); once it works, the regions are registered again on
 *      the new device and the server is serving.
 * Connection requests that arrive meanwhile are rejected (handle_cm).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"

/* The "still no device" line, at most this often. */
#define RR_RELISTEN_LOG_S 60

static void set_health(struct rr_server *srv, bool serving, const char *why)
{
	pthread_mutex_lock(&srv->lock);
	srv->serving = serving;
	snprintf(srv->why, sizeof(srv->why), "%s", why);
	pthread_mutex_unlock(&srv->lock);
}

void rr_listener_init(struct rr_server *srv, const char *addr)
{
	snprintf(srv->listen_addr, sizeof(srv->listen_addr), "%s", addr);
	set_health(srv, true, "");
}

void rr_server_health(struct rr_server *srv, struct rr_health *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&srv->lock);
	out->serving = srv->serving;
	snprintf(out->why, sizeof(out->why), "%s", srv->why);
	out->conns = srv->nconns;
	out->device_removals = srv->device_removals;
	out->relisten_tries = srv->relisten_tries;
	pthread_mutex_unlock(&srv->lock);
}

void rr_listener_device_lost(struct rr_server *srv, const struct fab_cm_event *ev)
{
	char why[RR_HEALTH_WHY_LEN];

	(void)ev; /* which object told us does not matter: all of it goes */
	if (srv->dev_lost)
		return; /* the other objects' events of the same removal */
	srv->dev_lost = true;
	srv->dev_released = false;
	snprintf(why, sizeof(why), "RDMA device removed (listener %.64s closed)", srv->listen_addr);
	pthread_mutex_lock(&srv->lock);
	srv->device_removals++;
	srv->relisten_tries = 0;
	pthread_mutex_unlock(&srv->lock);
	set_health(srv, false, why);
	rr_log("%s: RDMA device removed: closing %u connection(s) and the listener; "
	       "listening again every %d s",
	       srv->listen_addr, atomic_load(&srv->nconns), RR_RELISTEN_S);
	if (srv->listener) {
		fab_listener_destroy(srv->listener);
		srv->listener = NULL;
	}
	/* Each event thread closes its own; one handed over later, at once. */
	atomic_store(&srv->dev_gone, true);
	for (unsigned int i = 0; i < srv->nevt; i++) {
		atomic_store(&srv->evt[i].close_all, true);
		atomic_store(&srv->evt[i].handover, true);
		rr_evt_kick(&srv->evt[i]);
	}
}

/*
 * Step 2: nothing of ours may stay registered on the dead device. The sink
 * and send pools are each event thread's, read by its tick without a lock:
 * each thread drops its own (rr_evt_drop_pools, from its next wake-up) and
 * the device counts as released once every one has.
 */
static void release_device(struct rr_server *srv)
{
	rr_srq_destroy(srv);
	for (unsigned int i = 0; i < srv->nregions; i++) {
		if (srv->regions[i]) {
			fab_mr_dereg(srv->regions[i]);
			srv->regions[i] = NULL;
		}
	}
	srv->region_pd = NULL;
	rr_evt_drop_pools(&srv->evt[0]);
	atomic_store(&srv->pools_dropping, srv->nevt - 1);
	for (unsigned int i = 1; i < srv->nevt; i++) {
		atomic_store(&srv->evt[i].drop_pools, true);
		atomic_store(&srv->evt[i].handover, true);
		rr_evt_kick(&srv->evt[i]);
	}
	srv->dev_releasing = true;
}

/* Step 3's second half: the upper layer's regions on the new device. */
static void reregister_regions(struct rr_server *srv)
{
	for (unsigned int i = 0; i < srv->nregions; i++) {
		int ret = 0;

		if (!srv->region_pd)
			ret = fab_pd_get(srv->fab, &srv->region_pd);
		if (!ret)
			ret = fab_mr_reg(srv->region_pd, srv->region_addr[i], srv->region_len[i],
					 FAB_ACCESS_LOCAL_WRITE, &srv->regions[i]);
		if (ret) {
			/* Replies from it are copied instead (rr_rw.c finds no region). */
			srv->regions[i] = NULL;
			rr_log("%s: payload region %u not registered again: %s (%s)",
			       srv->listen_addr, i, strerror(-ret), fab_last_error());
			continue;
		}
		atomic_fetch_add(&srv->st.registrations, 1);
	}
}

static bool due(const struct timespec *now, const struct timespec *at)
{
	return now->tv_sec > at->tv_sec ||
	       (now->tv_sec == at->tv_sec && now->tv_nsec >= at->tv_nsec);
}

void rr_listener_tick(struct rr_server *srv)
{
	struct timespec now;
	char why[RR_HEALTH_WHY_LEN];
	int ret;

	if (!srv->dev_lost || atomic_load(&srv->stopping))
		return;
	if (!srv->dev_released) {
		if (atomic_load(&srv->nconns))
			return; /* their calls are still out: rr_conn_reap frees them */
		if (!srv->dev_releasing)
			release_device(srv);
		if (atomic_load_explicit(&srv->pools_dropping, memory_order_acquire))
			return; /* an event thread has not dropped its pools yet */
		srv->dev_releasing = false;
		srv->dev_released = true;
		rr_log("%s: everything registered on the removed device is released",
		       srv->listen_addr);
		clock_gettime(CLOCK_MONOTONIC, &srv->relisten_at); /* try at once */
		srv->relisten_logged.tv_sec = 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!due(&now, &srv->relisten_at))
		return;
	srv->relisten_at = now;
	srv->relisten_at.tv_sec += RR_RELISTEN_S;
	ret = fab_listen(srv->fab, srv->ch, srv->listen_addr, RR_LISTEN_BACKLOG, &srv->listener);
	if (ret)
		rr_set_error(ret, "%s", fab_last_error());
	else if ((ret = rr_server_fit_device(srv))) {
		/* another device, smaller queues: as if it were not there yet */
		fab_listener_destroy(srv->listener);
	}
	if (ret) {
		srv->listener = NULL;
		snprintf(why, sizeof(why), "RDMA device removed; listen on %.40s: %.50s",
			 srv->listen_addr, rr_last_error());
		pthread_mutex_lock(&srv->lock);
		srv->relisten_tries++;
		pthread_mutex_unlock(&srv->lock);
		set_health(srv, false, why);
		if (!srv->relisten_logged.tv_sec ||
		    now.tv_sec - srv->relisten_logged.tv_sec >= RR_RELISTEN_LOG_S) {
			srv->relisten_logged = now;
			rr_log("%s: cannot listen yet: %s (%s); retrying every %d s",
			       srv->listen_addr, strerror(-ret), rr_last_error(), RR_RELISTEN_S);
		}
		return;
	}
	reregister_regions(srv);
	srv->dev_lost = false;
	atomic_store(&srv->dev_gone, false);
	set_health(srv, true, "");
	rr_log("%s: RDMA device back: listening again", srv->listen_addr);
}
