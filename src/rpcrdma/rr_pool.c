// SPDX-License-Identifier: MIT
/*
 * rr_pool.c - registered buffers. Everything the engine sends from or
 * receives into comes from here, registered once (the ICPP'07 paper measured
 * registration at 16-24 % of per-operation time), so steady state registers
 * nothing.
 */
#include <errno.h>
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

void rr_pool_put(struct rr_pool *p, void *buf)
{
	size_t idx = (size_t)((uint8_t *)buf - p->mem) / p->buf_size;

	pthread_mutex_lock(&p->lock);
	p->free_idx[p->nfree++] = (uint32_t)idx;
	pthread_mutex_unlock(&p->lock);
}

bool rr_pool_owns(const struct rr_pool *p, const void *addr, size_t len)
{
	const uint8_t *a = addr;

	return p->mem && a >= p->mem && a + len <= p->mem + p->buf_size * p->count;
}

void *rr_big_get(struct rr_bigpool *bp, uint32_t *lkey, uint16_t *slot, uint64_t *registrations)
{
	uint32_t i;

	if (!bp->free_top) /* take over what other threads gave back */
		bp->free_top = atomic_exchange_explicit(&bp->returned, 0, memory_order_acquire);
	if (bp->free_top) {
		i = bp->free_top - 1;
		bp->free_top = bp->next[i];
	} else if (bp->n < bp->max) {
		/* Grow by one registered buffer; only under load growth. */
		i = bp->n;
		if (posix_memalign(&bp->buf[i], 4096, bp->buf_size))
			return NULL;
		if (fab_mr_reg(bp->pd, bp->buf[i], bp->buf_size,
			       FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE, &bp->mr[i])) {
			free(bp->buf[i]);
			return NULL;
		}
		bp->n++;
		(*registrations)++;
	} else {
		return NULL;
	}
	*lkey = bp->mr[i]->lkey;
	*slot = (uint16_t)i;
	return bp->buf[i];
}

void rr_big_put(struct rr_bigpool *bp, uint16_t slot)
{
	uint32_t top = atomic_load_explicit(&bp->returned, memory_order_relaxed);

	/* One consumer (the event thread takes the whole chain), so no ABA. */
	do
		bp->next[slot] = top;
	while (!atomic_compare_exchange_weak_explicit(&bp->returned, &top, (uint32_t)slot + 1,
						      memory_order_release, memory_order_relaxed));
}

bool rr_big_lkey(struct rr_bigpool *bp, const void *addr, size_t len, uint32_t *lkey)
{
	const uint8_t *a = addr;

	for (uint32_t i = 0; i < bp->n; i++) {
		const uint8_t *b = bp->buf[i];

		if (a >= b && a + len <= b + bp->buf_size) {
			*lkey = bp->mr[i]->lkey;
			return true;
		}
	}
	return false;
}
