// SPDX-License-Identifier: MIT
/*
 * rr_pcl_pool.c - the parsed chunk lists of calls in progress, a free list
 * per event thread. A chunk list is 4.6 KB (room for RR_PCL_MAX_SEGS
 * segments); kept in every receive context it made a connection's 138
 * contexts cost about 1 MiB once traffic had touched them, most of a busy
 * connection's memory (issue #33, docs/memory.md). A receive context takes
 * one when its message arrives and gives it back when it is posted again,
 * so only calls in progress hold one.
 */
#include <stdlib.h>

#include "rpcrdma/rr_internal.h"

/* Free chunk lists an event thread keeps past its tick. */
#define RR_PCL_SPARE 64u

struct rr_pcl_slot {
	struct rr_handoff link;		/* on the free list or the returned stack */
	struct rr_pcl pcl;
};

static struct rr_pcl_slot *slot_of(struct rr_pcl *p)
{
	return RR_CONTAINER_OF(p, struct rr_pcl_slot, pcl);
}

struct rr_pcl *rr_pcl_take(struct rr_evt *e)
{
	struct rr_handoff *h = e->pcl_free;
	struct rr_pcl_slot *s;

	if (__builtin_expect(!h, 0)) /* what other threads gave back, whole */
		h = rr_handoff_take_all(&e->pcl_returned);
	if (__builtin_expect(h != NULL, 1)) {
		e->pcl_free = h->next;
		return &RR_CONTAINER_OF(h, struct rr_pcl_slot, link)->pcl;
	}
	s = malloc(sizeof(*s));
	return s ? &s->pcl : NULL;
}

void rr_pcl_put(struct rr_evt *e, struct rr_pcl *p)
{
	struct rr_pcl_slot *s = slot_of(p);

	s->link.next = e->pcl_free;
	e->pcl_free = &s->link;
}

void rr_pcl_return(struct rr_evt *e, struct rr_pcl *p)
{
	rr_handoff_push(&e->pcl_returned, &slot_of(p)->link);
}

void rr_pcl_free(struct rr_pcl *p)
{
	if (p)
		free(slot_of(p));
}

/* Free @h and everything after it. */
static void free_chain(struct rr_handoff *h)
{
	while (h) {
		struct rr_handoff *next = h->next;

		free(RR_CONTAINER_OF(h, struct rr_pcl_slot, link));
		h = next;
	}
}

void rr_pcl_tick(struct rr_evt *e)
{
	struct rr_handoff **pp = &e->pcl_free;
	uint32_t kept = 0;

	/* What came back goes behind this thread's own list; counted here,
	 * once a second, rather than per call. */
	while (*pp)
		pp = &(*pp)->next;
	*pp = rr_handoff_take_all(&e->pcl_returned);
	for (pp = &e->pcl_free; *pp && kept < RR_PCL_SPARE; pp = &(*pp)->next)
		kept++;
	free_chain(*pp);
	*pp = NULL;
}

void rr_pcl_pool_fini(struct rr_evt *e)
{
	free_chain(e->pcl_free);
	free_chain(rr_handoff_take_all(&e->pcl_returned));
	e->pcl_free = NULL;
}
