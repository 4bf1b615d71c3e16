// SPDX-License-Identifier: MIT
/*
 * rr_handoff_probe.c - the engine's intrusive lock-free stack
 * (src/rpcrdma/rr_handoff.h) driven from several threads; plain (not
 * atomic) node fields carry the data, so ThreadSanitizer sees any hand-off
 * that does not order them.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/rr_handoff.h"
#include "rr_handoff_probe.h"

#define MAX_PRODUCERS 16

struct pnode {
	struct rr_handoff link;
	long stamp;		/* the cycle that handed it out */
	long checked;		/* the last stamp a giver saw */
};

struct probe {
	_Atomic(struct rr_handoff *) free_top;
	_Atomic(struct rr_handoff *) work[MAX_PRODUCERS];
	atomic_bool stop;
	atomic_long misordered, stale;
	int fifo;
};

struct giver {
	struct probe *p;
	int id;
};

static void *giver_main(void *arg)
{
	struct giver *g = arg;
	struct probe *p = g->p;

	for (;;) {
		bool stop = atomic_load(&p->stop);
		struct rr_handoff *h = rr_handoff_take(&p->work[g->id]);
		long last = -1;

		if (!h) {
			if (stop)
				return NULL;
			sched_yield();
			continue;
		}
		while (h) {
			struct rr_handoff *next = h->next;
			struct pnode *n = RR_CONTAINER_OF(h, struct pnode, link);

			/* oldest first: stamps rise within a batch */
			if (n->stamp <= last)
				atomic_fetch_add(&p->misordered, 1);
			last = n->stamp;
			if (n->checked >= n->stamp)
				atomic_fetch_add(&p->stale, 1);
			n->checked = n->stamp;
			rr_handoff_push(&p->free_top, h);
			h = next;
		}
	}
}

int rr_handoff_probe_run(int producers, int nodes, long rounds, int fifo,
			 struct rr_handoff_probe *out)
{
	struct probe p;
	struct giver g[MAX_PRODUCERS];
	pthread_t t[MAX_PRODUCERS];
	struct pnode *pool = calloc((size_t)nodes, sizeof(*pool));
	unsigned char *seen = calloc((size_t)nodes, 1);
	struct rr_handoff *mine = NULL;
	int started = 0, rc = 0;

	memset(out, 0, sizeof(*out));
	if (!pool || !seen || producers < 1 || producers > MAX_PRODUCERS) {
		free(pool);
		free(seen);
		return -1;
	}
	memset(&p, 0, sizeof(p));
	p.fifo = fifo;
	for (int i = 0; i < nodes; i++) {
		pool[i].checked = -1;
		rr_handoff_push(&p.free_top, &pool[i].link);
	}
	for (; started < producers; started++) {
		g[started] = (struct giver){&p, started};
		if (pthread_create(&t[started], NULL, giver_main, &g[started])) {
			rc = -1;
			break;
		}
	}
	for (long c = 0; rc == 0 && c < rounds;) {
		struct pnode *n;

		if (!mine) {
			mine = fifo ? rr_handoff_take(&p.free_top)
				    : rr_handoff_take_all(&p.free_top);
			if (!mine) {
				sched_yield();
				continue;
			}
		}
		n = RR_CONTAINER_OF(mine, struct pnode, link);
		mine = mine->next;
		n->stamp = ++c;
		rr_handoff_push(&p.work[c % producers], &n->link);
		out->cycles = c;
	}
	atomic_store(&p.stop, true);
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	/* Everything is on the free stack or the taker's list now. */
	for (int pass = 0; pass < 2; pass++) {
		struct rr_handoff *h = pass ? rr_handoff_take_all(&p.free_top) : mine;

		for (; h; h = h->next) {
			long i = RR_CONTAINER_OF(h, struct pnode, link) - pool;

			if (seen[i])
				out->duplicates++;
			else
				out->found++;
			seen[i] = 1;
		}
	}
	out->misordered = atomic_load(&p.misordered);
	out->stale = atomic_load(&p.stale);
	free(pool);
	free(seen);
	return rc;
}

int rr_handoff_probe_order(int fifo, int *out, int n)
{
	_Atomic(struct rr_handoff *) top = NULL;
	struct pnode pool[8];
	struct rr_handoff *h;
	int k = 0;

	if (n > 8)
		return -1;
	for (int i = 0; i < n; i++) {
		pool[i].stamp = i;
		rr_handoff_push(&top, &pool[i].link);
	}
	h = fifo ? rr_handoff_take(&top) : rr_handoff_take_all(&top);
	for (; h && k < n; h = h->next)
		out[k++] = (int)RR_CONTAINER_OF(h, struct pnode, link)->stamp;
	return atomic_load(&top) ? -1 : k;
}
