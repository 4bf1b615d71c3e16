// SPDX-License-Identifier: MIT
/*
 * ulb_slots.c - bounded xid -> session slot tables (RFC 8267 section 4.5).
 *
 * Writers and readers are the receive, worker and completion threads of one
 * connection, each touching a few entries per RPC; a mutex per table is
 * simpler than RCU here and never held across a host hook.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ulb/ulb_slots.h"

static uint32_t ulb_xid_hash(uint32_t xid)
{
	/* xids are often sequential: spread them (Knuth multiplicative) */
	return xid * 2654435761u;
}

static int ulb_xt_init(struct ulb_xid_table *t, uint32_t capacity)
{
	uint32_t size = 2;

	if (capacity == 0 || capacity > ULB_SLOTS_MAX)
		return -EINVAL;
	while (size < 2 * capacity)
		size <<= 1;
	t->ents = calloc(size, sizeof(*t->ents));
	if (!t->ents)
		return -ENOMEM;
	if (pthread_mutex_init(&t->lock, NULL)) {
		free(t->ents);
		t->ents = NULL;
		return -ENOMEM;
	}
	t->mask = size - 1;
	t->capacity = capacity;
	t->count = 0;
	return 0;
}

static void ulb_xt_destroy(struct ulb_xid_table *t)
{
	if (!t->ents)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t->ents);
	t->ents = NULL;
}

/* Index of @xid or of the empty slot ending its probe run; lock held. */
static uint32_t ulb_xt_find(const struct ulb_xid_table *t, uint32_t xid)
{
	uint32_t i = ulb_xid_hash(xid) & t->mask;

	while (t->ents[i].used && t->ents[i].xid != xid)
		i = (i + 1) & t->mask;
	return i;
}

static int ulb_xt_insert(struct ulb_xid_table *t, uint32_t xid, const struct ulb_sequence *seq)
{
	uint32_t i;
	int ret = 0;

	if (!t->ents)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	i = ulb_xt_find(t, xid);
	if (t->ents[i].used) {
		ret = -EEXIST;
	} else if (t->count >= t->capacity) {
		ret = -ENOSPC;
	} else {
		t->ents[i].used = 1;
		t->ents[i].xid = xid;
		t->ents[i].seq = *seq;
		t->count++;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* Remove @xid, copying its entry out; backward-shift deletion keeps probe runs whole. */
static int ulb_xt_remove(struct ulb_xid_table *t, uint32_t xid, struct ulb_sequence *out)
{
	uint32_t i, j, home;

	if (!t->ents)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	i = ulb_xt_find(t, xid);
	if (!t->ents[i].used) {
		pthread_mutex_unlock(&t->lock);
		return -ENOENT;
	}
	if (out)
		*out = t->ents[i].seq;
	t->ents[i].used = 0;
	t->count--;
	j = i;
	for (;;) {
		j = (j + 1) & t->mask;
		if (!t->ents[j].used)
			break;
		home = ulb_xid_hash(t->ents[j].xid) & t->mask;
		/* move j back to i unless its home lies cyclically in (i, j] */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		t->ents[i] = t->ents[j];
		t->ents[j].used = 0;
		i = j;
	}
	pthread_mutex_unlock(&t->lock);
	return 0;
}

static uint32_t ulb_xt_count(struct ulb_xid_table *t)
{
	uint32_t n;

	if (!t->ents)
		return 0;
	pthread_mutex_lock(&t->lock);
	n = t->count;
	pthread_mutex_unlock(&t->lock);
	return n;
}

int ulb_slots_init(struct ulb_slots *s, uint32_t fore_capacity, uint32_t back_capacity,
		   const struct ulb_host_ops *ops, void *host)
{
	int ret;

	memset(s, 0, sizeof(*s));
	s->ops = ops;
	s->host = host;
	ret = ulb_xt_init(&s->fore, fore_capacity);
	if (ret)
		return ret;
	ret = ulb_xt_init(&s->back, back_capacity);
	if (ret) {
		ulb_xt_destroy(&s->fore);
		return ret;
	}
	return 0;
}

void ulb_slots_destroy(struct ulb_slots *s)
{
	ulb_xt_destroy(&s->fore);
	ulb_xt_destroy(&s->back);
}

int ulb_slot_track(struct ulb_slots *s, uint32_t xid, const struct ulb_sequence *seq)
{
	return ulb_xt_insert(&s->fore, xid, seq);
}

int ulb_slot_reply_sent(struct ulb_slots *s, uint32_t xid)
{
	return ulb_xt_remove(&s->fore, xid, NULL);
}

int ulb_slot_reply_undelivered(struct ulb_slots *s, uint32_t xid)
{
	struct ulb_sequence seq;
	int ret = ulb_xt_remove(&s->fore, xid, &seq);

	if (ret)
		return ret;
	if (s->ops && s->ops->slot_uncache)
		s->ops->slot_uncache(s->host, xid, &seq);
	return 0;
}

int ulb_slot_forget(struct ulb_slots *s, uint32_t xid)
{
	return ulb_xt_remove(&s->fore, xid, NULL);
}

uint32_t ulb_slot_in_flight(struct ulb_slots *s)
{
	return ulb_xt_count(&s->fore);
}

int ulb_bc_track(struct ulb_slots *s, uint32_t rdma_xid, const struct ulb_sequence *seq)
{
	return ulb_xt_insert(&s->back, rdma_xid, seq);
}

int ulb_bc_reply_received(struct ulb_slots *s, uint32_t rdma_xid)
{
	return ulb_xt_remove(&s->back, rdma_xid, NULL);
}

int ulb_bc_err_chunk(struct ulb_slots *s, uint32_t rdma_xid)
{
	struct ulb_sequence seq;
	int ret = ulb_xt_remove(&s->back, rdma_xid, &seq);

	if (ret)
		return ret;
	if (s->ops && s->ops->bc_slot_retire)
		s->ops->bc_slot_retire(s->host, rdma_xid, &seq);
	return 0;
}

int ulb_bc_forget(struct ulb_slots *s, uint32_t rdma_xid)
{
	return ulb_xt_remove(&s->back, rdma_xid, NULL);
}

uint32_t ulb_bc_in_flight(struct ulb_slots *s)
{
	return ulb_xt_count(&s->back);
}
