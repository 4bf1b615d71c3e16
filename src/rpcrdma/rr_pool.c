// SPDX-License-Identifier: MIT
/*
 * rr_pool.c - registered buffers. Everything the engine sends from or
 * receives into comes from here, registered once (the ICPP'07 paper measured
 * registration at 16-24 % of per-operation time), so steady state registers
 * nothing.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rpcrdma/rr_internal.h"

size_t rr_pool_bytes(size_t buf_size, uint32_t count)
{
	return (buf_size * count + RR_PAGE_SIZE - 1) & ~(size_t)(RR_PAGE_SIZE - 1);
}

/*
 * The buffers are mapped, not allocated: an upper layer in the same process
 * may interpose the allocator (the ganesha plugin serves page-aligned
 * posix_memalign calls from its registered READ payload pool), and a pool
 * per connection taken from there would leave READs nothing to go out by
 * RDMA Write from. mmap is never interposed, gives page alignment (off
 * shared cache lines, as iWARP wants) and its length is exactly what the
 * receive-memory budget counts (rr_pool_bytes).
 */
int rr_pool_init(struct rr_pool *p, struct fab_pd *pd, size_t buf_size, uint32_t count,
		 unsigned int access)
{
	size_t total = rr_pool_bytes(buf_size, count);
	void *mem;
	int ret;

	memset(p, 0, sizeof(*p));
	if (count == 0 || buf_size == 0)
		return -EINVAL;
	mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return -ENOMEM;
	p->mem = mem;
	p->map_len = total;
	p->free_idx = calloc(count, sizeof(*p->free_idx));
	if (!p->free_idx) {
		munmap(p->mem, total);
		p->mem = NULL;
		return -ENOMEM;
	}
	ret = fab_mr_reg(pd, p->mem, total, access, &p->mr);
	if (ret) {
		free(p->free_idx);
		munmap(p->mem, total);
		p->mem = NULL;
		return ret;
	}
	p->buf_size = buf_size;
	p->count = count;
	for (uint32_t i = 0; i < count; i++)
		p->free_idx[i] = count - 1 - i;
	p->nfree = count;
	pthread_mutex_init(&p->lock, NULL);
	return 0;
}

void rr_pool_fini(struct rr_pool *p)
{
	if (!p->mem)
		return;
	fab_mr_dereg(p->mr);
	free(p->free_idx);
	munmap(p->mem, p->map_len);
	pthread_mutex_destroy(&p->lock);
	p->mem = NULL;
}

void *rr_pool_get(struct rr_pool *p)
{
	void *buf = NULL;

	pthread_mutex_lock(&p->lock);
	if (p->nfree)
		buf = p->mem + (size_t)p->free_idx[--p->nfree] * p->buf_size;
	pthread_mutex_unlock(&p->lock);
	return buf;
}

bool rr_pool_owns(const struct rr_pool *p, const void *addr, size_t len)
{
	const uint8_t *a = addr;

	return p->mem && a >= p->mem && a + len <= p->mem + p->buf_size * p->count;
}

/*
 * The sink pool (policy in rr_internal.h above struct rr_bigpool). Each size
 * class carves its buffers out of registrations of RR_SINK_SLAB bytes (one
 * buffer each in the largest class); a slot numbers a buffer within its
 * class, and a reference is class << RR_SINK_REF_SHIFT | slot. Slabs are
 * mapped, as the connections' buffers are (rr_pool_init): one taken from an
 * interposed allocator's pool would be that pool's for good
 * (docs/memory.md). A slab stays while it is used; one wholly free for
 * RR_SINK_IDLE_S is unregistered and unmapped (rr_big_tick), so what a burst
 * of I/O made goes back when it ends, while steady I/O, reusing its slabs
 * every second, registers nothing. The up-front buffers go the same way:
 * kept, they would be touched by the first I/O and stay resident for good.
 */

static int64_t sink_excess(uint64_t held, uint64_t reserve)
{
	return held > reserve ? (int64_t)(held - reserve) : 0;
}

static int sink_class_init(struct rr_sink_class *k, size_t size, uint32_t per_slab,
			   uint32_t max_slabs)
{
	k->size = size;
	k->per_slab = per_slab;
	k->max = per_slab * max_slabs;
	k->next = calloc(k->max, sizeof(*k->next));
	k->slab = calloc(max_slabs, sizeof(*k->slab));
	return k->next && k->slab ? 0 : -ENOMEM;
}

struct rr_bigpool *rr_big_create(struct rr_server *srv, struct fab_pd *pd)
{
	struct rr_bigpool *bp = calloc(1, sizeof(*bp));
	struct rr_sink_shape s;
	int ret = 0;

	if (!bp)
		return NULL;
	rr_sink_shape(&srv->cfg, &s);
	bp->srv = srv;
	bp->pd = pd;
	bp->buf_size = s.big;
	for (unsigned int i = 0; i < s.nsmall && !ret; i++) {
		size_t sz = s.small_size[i];

		ret = sink_class_init(&bp->cls[bp->nclass++], sz, RR_SINK_SLAB / (uint32_t)sz,
				      s.small_slabs[i]);
	}
	if (!ret)
		ret = sink_class_init(&bp->cls[bp->nclass++], s.big, 1, s.big_max);
	bp->reserve = RR_SINK_RESERVE_BIG * s.big;
	bp->shared_cap = (int64_t)((uint64_t)s.shared * s.big);
	bp->prealloc = s.prealloc;
	bp->read_budget = rr_sink_read_budget(&srv->cfg, s.big);
	if (ret) {
		rr_big_destroy(bp);
		return NULL;
	}
	return bp;
}

static void slab_unmap(struct rr_bigpool *bp, struct rr_sink_class *k, uint32_t s)
{
	size_t len = k->size * k->per_slab;

	fab_mr_dereg(k->slab[s].mr);
	munmap(k->slab[s].mem, len);
	k->slab[s] = (struct rr_sink_slab){0};
	k->n -= k->per_slab;
	bp->made -= len;
	RR_SRV_STAT_SUB(bp->srv, sink_pool_bytes, len);
}

void rr_big_destroy(struct rr_bigpool *bp)
{
	if (!bp)
		return;
	rr_sendpool_destroy(bp->sends);
	for (unsigned int i = 0; i < bp->nclass; i++) {
		struct rr_sink_class *k = &bp->cls[i];

		for (uint32_t j = 0; k->slab && j < k->nslab; j++)
			if (k->slab[j].mem)
				slab_unmap(bp, k, j);
		free(k->next);
		free(k->slab);
	}
	free(bp);
}

/* Event thread: a free slot of class @k, registering one more slab if it
 * has none; -1 when the class is at its bound, a Read sink's growth past
 * the pool's read_budget, or memory is short. */
static int64_t sink_slot_get(struct rr_bigpool *bp, struct rr_sink_class *k, enum rr_sink_use use,
			     uint64_t *registrations)
{
	uint32_t i;

	if (!k->free_top) /* take over what other threads gave back */
		k->free_top = atomic_exchange_explicit(&k->returned, 0, memory_order_acquire);
	if (k->free_top) {
		i = k->free_top - 1;
		k->free_top = k->next[i];
		return i;
	}
	if (k->n + k->per_slab > k->max)
		return -1;
	if (use == RR_SINK_READ && bp->read_budget &&
	    bp->made + k->size * k->per_slab > bp->read_budget)
		return -1;
	/* Grow by one registration; only under load growth. Local write only:
	 * the fabric writes a sink on our behalf (the RDMA Read response) and
	 * reads a bounce buffer as a Write's source; no peer ever addresses
	 * this memory, so a guessed rkey finds nothing to write. The lowest
	 * index given back is taken again first, so the array stays short. */
	{
		uint32_t s = 0;
		size_t len = k->size * k->per_slab;
		void *mem;

		if (k->n / k->per_slab < k->nslab)
			while (k->slab[s].mem)
				s++;
		else
			s = k->nslab;
		mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED)
			return -1;
		if (fab_mr_reg(bp->pd, mem, len, FAB_ACCESS_LOCAL_WRITE, &k->slab[s].mr)) {
			munmap(mem, len);
			return -1;
		}
		k->slab[s].mem = mem;
		k->slab[s].idle_ticks = 0;
		k->all_free = false; /* counted again at the next tick */
		if (s == k->nslab)
			k->nslab++;
		bp->made += len;
		RR_SRV_STAT_ADD(bp->srv, sink_pool_bytes, len);
		i = s * k->per_slab;
	}
	(*registrations)++;
	k->n += k->per_slab;
	/* The rest of the slab on the free list, lowest slot first out. */
	for (uint32_t j = i + k->per_slab - 1; j > i; j--) {
		k->next[j] = k->free_top;
		k->free_top = j + 1;
	}
	return i;
}

/* Taken: the tick leaves its slab for RR_SINK_IDLE_S more. */
static void *sink_addr(struct rr_sink_class *k, uint32_t slot, uint32_t *lkey)
{
	struct rr_sink_slab *sl = &k->slab[slot / k->per_slab];

	sl->taken = true;
	*lkey = sl->mr->lkey;
	return sl->mem + (size_t)(slot % k->per_slab) * k->size;
}

/* What @c may hold: beyond the reserve, one full-size buffer per credit (at
 * least a whole Call's worth of chunks), and RR_SINK_SHARE_MAX at most. */
static uint64_t conn_cap(const struct rr_bigpool *bp, const struct rr_conn *c)
{
	uint64_t share = c->credits > c->srv->cfg.limits.max_read_chunks
				 ? c->credits
				 : c->srv->cfg.limits.max_read_chunks;

	if (share > RR_SINK_SHARE_MAX)
		share = RR_SINK_SHARE_MAX;
	return bp->reserve + share * bp->buf_size;
}

/* The smallest class for @len; bp->nclass if none. */
static unsigned int class_for(const struct rr_bigpool *bp, uint64_t len)
{
	unsigned int ci = 0;

	while (ci < bp->nclass && bp->cls[ci].size < len)
		ci++;
	return ci;
}

bool rr_big_within_share(const struct rr_bigpool *bp, const struct rr_conn *c, uint64_t len)
{
	unsigned int ci = class_for(bp, len);

	return ci < bp->nclass &&
	       atomic_load_explicit(&c->st.sink_bytes, memory_order_relaxed) + bp->cls[ci].size <=
		   conn_cap(bp, c);
}

void *rr_big_get(struct rr_bigpool *bp, struct rr_conn *c, uint64_t len, enum rr_sink_use use,
		 uint32_t *lkey, uint32_t *ref)
{
	uint64_t held = atomic_load_explicit(&c->st.sink_bytes, memory_order_relaxed);
	uint64_t regs = 0, cap = conn_cap(bp, c);
	unsigned int ci = class_for(bp, len);
	int64_t slot = -1, d;

	if (ci == bp->nclass)
		return NULL; /* larger than any chunk the decoder admits */
	/* The smallest class that fits and has a buffer; a full small class
	 * falls back to a larger one, never the reverse. */
	for (; ci < bp->nclass; ci++) {
		uint64_t sz = bp->cls[ci].size;

		if (held + sz > cap)
			return NULL;
		d = sink_excess(held + sz, bp->reserve) - sink_excess(held, bp->reserve);
		if (d && atomic_load_explicit(&bp->shared_used, memory_order_relaxed) + d >
			     bp->shared_cap)
			return NULL;
		slot = sink_slot_get(bp, &bp->cls[ci], use, &regs);
		if (regs)
			RR_STAT_ADD(c, registrations, regs);
		if (slot >= 0)
			break;
	}
	if (slot < 0)
		return NULL;
	{
		uint64_t sz = bp->cls[ci].size;
		/* Other threads only give back: @h is at most @held, and so the
		 * shared part charged at most what was checked above. */
		uint64_t h = atomic_fetch_add_explicit(&c->st.sink_bytes, sz, memory_order_relaxed);

		d = sink_excess(h + sz, bp->reserve) - sink_excess(h, bp->reserve);
		if (d) /* within the reserve: the shared part is not touched */
			atomic_fetch_add_explicit(&bp->shared_used, d, memory_order_relaxed);
		atomic_fetch_add_explicit(&c->srv->st.sink_bytes, sz, memory_order_relaxed);
	}
	*ref = (uint32_t)ci << RR_SINK_REF_SHIFT | (uint32_t)slot;
	return sink_addr(&bp->cls[ci], (uint32_t)slot, lkey);
}

/* Inlined into both: rr_big_put is on every call that had a sink. */
static inline __attribute__((always_inline)) void big_put(struct rr_bigpool *bp,
							   struct rr_conn *c, uint32_t ref,
							   bool turn)
{
	struct rr_sink_class *k = &bp->cls[ref >> RR_SINK_REF_SHIFT];
	uint32_t slot = ref & ((1u << RR_SINK_REF_SHIFT) - 1);
	uint32_t top = atomic_load_explicit(&k->returned, memory_order_relaxed);
	uint64_t sz = k->size;
	uint64_t h = atomic_fetch_sub_explicit(&c->st.sink_bytes, sz, memory_order_relaxed);
	int64_t d = sink_excess(h, bp->reserve) - sink_excess(h - sz, bp->reserve);

	if (d)
		atomic_fetch_sub_explicit(&bp->shared_used, d, memory_order_relaxed);
	atomic_fetch_sub_explicit(&c->srv->st.sink_bytes, sz, memory_order_relaxed);
	/* One consumer (the event thread takes the whole chain), so no ABA.
	 * A stack of slot indices: a registered sink has no room for the node
	 * liburcu's stacks link (docs/threading.md). */
	do
		k->next[slot] = top;
	while (!atomic_compare_exchange_weak_explicit(&k->returned, &top, slot + 1,
						      memory_order_release, memory_order_relaxed));
	if (turn) /* rr_read.c's queue of waiters: what came back since one failed */
		atomic_fetch_add_explicit(&bp->puts, 1, memory_order_release);
}

void rr_big_put(struct rr_bigpool *bp, struct rr_conn *c, uint32_t ref)
{
	big_put(bp, c, ref, true);
}

void rr_big_unget(struct rr_bigpool *bp, struct rr_conn *c, uint32_t ref)
{
	big_put(bp, c, ref, false);
}

bool rr_big_lkey(struct rr_bigpool *bp, const void *addr, size_t len, uint32_t *lkey)
{
	const uint8_t *a = addr;

	for (unsigned int i = 0; i < bp->nclass; i++) {
		const struct rr_sink_class *k = &bp->cls[i];
		size_t slab_len = k->size * k->per_slab;

		for (uint32_t s = 0; s < k->nslab; s++) {
			const uint8_t *b = k->slab[s].mem;

			if (b && a >= b && a + len <= b + slab_len) {
				*lkey = k->slab[s].mr->lkey;
				return true;
			}
		}
	}
	return false;
}

void rr_big_prealloc(struct rr_bigpool *bp, uint32_t n, uint64_t *registrations)
{
	struct rr_sink_class *k = &bp->cls[bp->nclass - 1];
	uint32_t held[RR_BIG_PREALLOC];
	uint32_t got = 0;

	while (got < n && got < RR_BIG_PREALLOC) {
		int64_t slot = sink_slot_get(bp, k, RR_SINK_READ, registrations);

		if (slot < 0)
			break;
		held[got++] = (uint32_t)slot;
	}
	/* Back on the event thread's own list, first taken first. */
	while (got) {
		uint32_t slot = held[--got];

		k->next[slot] = k->free_top;
		k->free_top = slot + 1;
	}
}

/* The event thread's free list with @k's returned chain on top. */
static void take_returned(struct rr_sink_class *k)
{
	uint32_t top = atomic_exchange_explicit(&k->returned, 0, memory_order_acquire);
	uint32_t end = top;

	if (!top)
		return;
	while (k->next[end - 1])
		end = k->next[end - 1];
	k->next[end - 1] = k->free_top;
	k->free_top = top;
}

/*
 * Count each slab's free buffers (here, once a second, rather than per
 * call), age those wholly free and untouched, and mark those that have
 * been so for RR_SINK_IDLE_S to go (idle_ticks UINT8_MAX). Returns how many.
 */
static uint32_t sink_class_age(struct rr_sink_class *k, uint32_t *live)
{
	uint32_t drop = 0, nfree = 0;
	bool taken = false;

	for (uint32_t s = 0; s < k->nslab; s++)
		taken |= k->slab[s].taken;
	/* Every slot free at the last tick and none taken since: all still
	 * are (only a taken one can be out), no need to count them again -
	 * the common case once the class is idle, until its slabs go. */
	if (!k->all_free || taken) {
		for (uint32_t s = 0; s < k->nslab; s++)
			k->slab[s].nfree = 0;
		for (uint32_t top = k->free_top; top; top = k->next[top - 1]) {
			k->slab[(top - 1) / k->per_slab].nfree++;
			nfree++;
		}
		k->all_free = nfree == k->n;
	}
	*live = 0;
	for (uint32_t s = 0; s < k->nslab; s++) {
		struct rr_sink_slab *sl = &k->slab[s];

		if (!sl->mem)
			continue;
		(*live)++;
		if (sl->taken || (!k->all_free && sl->nfree != k->per_slab))
			sl->idle_ticks = 0;
		else if (sl->idle_ticks < RR_SINK_IDLE_S)
			sl->idle_ticks++;
		sl->taken = false;
		if (sl->idle_ticks >= RR_SINK_IDLE_S) {
			sl->idle_ticks = UINT8_MAX;
			drop++;
		}
	}
	return drop;
}

void rr_big_tick(struct rr_bigpool *bp)
{
	uint64_t made = bp->made;

	for (unsigned int i = 0; i < bp->nclass; i++) {
		struct rr_sink_class *k = &bp->cls[i];
		uint32_t *link = &k->free_top;
		uint32_t live, drop;

		/* Nothing registered: a test a second. */
		if (!k->n)
			continue;
		take_returned(k);
		drop = sink_class_age(k, &live);
		if (!drop)
			continue;
		/* Their slots off the free list (all of them are on it), then
		 * the slabs go; when all go, the list is only theirs. */
		if (drop == live)
			k->free_top = 0;
		while (*link) {
			if (k->slab[(*link - 1) / k->per_slab].idle_ticks == UINT8_MAX)
				*link = k->next[*link - 1];
			else
				link = &k->next[*link - 1];
		}
		for (uint32_t s = 0; s < k->nslab; s++)
			if (k->slab[s].mem && k->slab[s].idle_ticks == UINT8_MAX)
				slab_unmap(bp, k, s);
		while (k->nslab && !k->slab[k->nslab - 1].mem)
			k->nslab--;
	}
	/* Room under read_budget came back: a turn for the waiters, as if a
	 * sink had (rr_read.c); the tick's kick tries them (rr_admit_tick). */
	if (bp->made != made)
		atomic_fetch_add_explicit(&bp->puts, 1, memory_order_relaxed);
}
