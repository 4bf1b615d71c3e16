// SPDX-License-Identifier: MIT
/*
 * rr_stats.c - reading the counters (rr_counters.def) of the server and of
 * each connection, and the snapshot of the connection list that health
 * checks and per-client stats take; copies only, under the server's lock.
 */
#include <stdio.h>

#include "rpcrdma/rr_internal.h"

void rr_counters_read(struct rr_counters *c, struct rr_stats *o)
{
#define RD(f) o->f = atomic_load_explicit(&c->f, memory_order_relaxed);
	RR_STATS_FIELDS(RD)
#undef RD
}

void rr_server_stats(struct rr_server *srv, struct rr_stats *out)
{
	rr_counters_read(&srv->st, out);
}

void rr_server_foreach_conn(struct rr_server *srv,
			    void (*fn)(void *arg, struct rr_conn *conn, const struct rr_stats *st),
			    void *arg)
{
	struct rr_stats st;

	pthread_mutex_lock(&srv->lock);
	for (struct rr_conn *c = srv->conns; c; c = c->next) {
		rr_counters_read(&c->st, &st);
		fn(arg, c, &st);
	}
	pthread_mutex_unlock(&srv->lock);
}

uint32_t rr_server_snapshot_conns(struct rr_server *srv, struct rr_conn_snap *out, uint32_t max)
{
	uint32_t n = 0;

	_Static_assert(sizeof(((struct rr_conn *)0)->peer) <= RR_CONN_PEER_MAX,
		       "a copied peer would be cut short");
	/* Copies only: no allocation and no I/O while the event thread may be
	 * waiting for this lock to list or unlist a connection. */
	pthread_mutex_lock(&srv->lock);
	for (struct rr_conn *c = srv->conns; c; c = c->next, n++) {
		if (n >= max)
			continue; /* keep counting: the caller retries with room for all */
		out[n].id = rr_conn_id(c);
		snprintf(out[n].peer, sizeof(out[n].peer), "%s", c->peer);
		rr_counters_read(&c->st, &out[n].st);
	}
	pthread_mutex_unlock(&srv->lock);
	return n;
}
