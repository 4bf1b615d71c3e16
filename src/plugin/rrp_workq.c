// SPDX-License-Identifier: MIT
/*
 * rrp_workq.c - the worker pool's queue.
 *
 * A bounded lock-free ring (D. Vyukov's multi-producer multi-consumer queue:
 * each cell's sequence number says whether it waits for a producer or for a
 * consumer, so a push or a pop is one compare-and-swap on a position) with a
 * locked list behind it for the rare overflow, and a futex word counting
 * queued items that idle workers sleep on. A mutex-protected list cost two
 * lock/unlock pairs per Call; the ring costs two compare-and-swaps.
 * liburcu has no bounded queue with several lock-free consumers: wfcqueue
 * dequeues under a lock, lfqueue needs RCU reader threads, which ganesha's
 * workers are not (docs/threading.md; TSan: test_rrp_workq).
 */
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "plugin/rrp_workq.h"

#define RING_MASK (RRP_WORKQ_RING - 1)
_Static_assert((RRP_WORKQ_RING & RING_MASK) == 0, "the ring size is a power of two");

/*
 * A cell's sequence number is pos when it is free for the push at position
 * pos, and pos + 1 when it is full for the pop at pos. Kept less the cell's
 * index, so that the zeroed static ring starts right (cell i free for the
 * push at i) without an initialiser.
 */
struct cell {
	_Atomic size_t seq_less_index;
	struct rrp_work *w;
};

static size_t cell_seq(const struct cell *c, size_t pos)
{
	return atomic_load_explicit(&c->seq_less_index, memory_order_acquire) + (pos & RING_MASK);
}

static void cell_publish(struct cell *c, size_t pos, size_t seq)
{
	atomic_store_explicit(&c->seq_less_index, seq - (pos & RING_MASK), memory_order_release);
}

static struct {
	struct cell ring[RRP_WORKQ_RING];
	_Atomic size_t push_pos, pop_pos;

	/* Overflow: while not empty, every new item goes here (see take). */
	pthread_mutex_t lock;
	struct rrp_work *head, *tail;
	_Atomic uint32_t overflow_n;

	_Atomic uint32_t queued;	/* items not yet taken (a futex word) */
	_Atomic uint32_t sleepers;	/* workers waiting on it */
} q = {.lock = PTHREAD_MUTEX_INITIALIZER};

/*
 * Claim the next position of @posp (push_pos or pop_pos) whose cell's
 * sequence is that position + @turn (0: free for a push, 1: full for a pop);
 * NULL when the cell is not there yet (ring full, or empty / still being
 * filled). One compare-and-swap on the position wins it.
 */
static struct cell *claim(_Atomic size_t *posp, size_t turn, size_t *out)
{
	size_t pos = atomic_load_explicit(posp, memory_order_relaxed);

	for (;;) {
		struct cell *c = &q.ring[pos & RING_MASK];
		intptr_t dif = (intptr_t)cell_seq(c, pos) - (intptr_t)(pos + turn);

		if (dif < 0)
			return NULL;
		if (dif == 0 && atomic_compare_exchange_weak_explicit(posp, &pos, pos + 1,
								      memory_order_relaxed,
								      memory_order_relaxed)) {
			*out = pos;
			return c;
		}
		if (dif > 0)
			pos = atomic_load_explicit(posp, memory_order_relaxed);
	}
}

/* False when full: a whole lap of items not yet popped. */
static bool ring_push(struct rrp_work *w)
{
	size_t pos;
	struct cell *c = claim(&q.push_pos, 0, &pos);

	if (!c)
		return false;
	c->w = w;
	cell_publish(c, pos, pos + 1);
	return true;
}

/* NULL when the next cell is not published (empty, or its push not done). */
static struct rrp_work *ring_pop(void)
{
	size_t pos;
	struct cell *c = claim(&q.pop_pos, 1, &pos);
	struct rrp_work *w;

	if (!c)
		return NULL;
	w = c->w;
	cell_publish(c, pos, pos + RRP_WORKQ_RING);
	return w;
}

static struct rrp_work *overflow_pop(void)
{
	struct rrp_work *w;

	pthread_mutex_lock(&q.lock);
	w = q.head;
	if (w) {
		q.head = w->next;
		if (!q.head)
			q.tail = NULL;
		atomic_fetch_sub(&q.overflow_n, 1);
	}
	pthread_mutex_unlock(&q.lock);
	return w;
}

static void overflow_push(struct rrp_work *w)
{
	w->next = NULL;
	pthread_mutex_lock(&q.lock);
	if (q.tail)
		q.tail->next = w;
	else
		q.head = w;
	q.tail = w;
	atomic_fetch_add(&q.overflow_n, 1);
	pthread_mutex_unlock(&q.lock);
}

/*
 * The count: sem_wait/sem_post on a futex word, without libc's cancellation
 * bookkeeping around the futex calls (it cost more than the rest of the
 * hand-off; our workers are never cancelled). A wake-up cannot be lost:
 * FUTEX_WAIT sleeps only while the count is still 0, and a producer raises
 * the count before it looks for sleepers.
 */
static void count_take(void)
{
	for (;;) {
		uint32_t v = atomic_load(&q.queued);

		while (v > 0)
			if (atomic_compare_exchange_weak(&q.queued, &v, v - 1))
				return;
		atomic_fetch_add(&q.sleepers, 1);
		syscall(SYS_futex, &q.queued, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		atomic_fetch_sub(&q.sleepers, 1);
	}
}

static void count_post(void)
{
	atomic_fetch_add(&q.queued, 1);
	if (atomic_load(&q.sleepers))
		syscall(SYS_futex, &q.queued, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void rrp_queue_work(struct rrp_work *w)
{
	/* Behind earlier overflow, or when the ring is full: the list. */
	if (atomic_load(&q.overflow_n) || !ring_push(w))
		overflow_push(w);
	count_post(); /* after the item is in: a taker finds it */
}

bool rrp_queue_fn(void (*fn)(void *arg), void *arg)
{
	struct rrp_work *w = malloc(sizeof(*w));

	if (!w)
		return false;
	w->fn = fn;
	w->arg = arg;
	w->heap = true;
	rrp_queue_work(w);
	return true;
}

/*
 * One item, once the count said there is one: in the ring, else in the
 * overflow list. While the list holds anything, producers queue there, so
 * the ring only drains and the list's items - all younger than the ring's -
 * come next: order is kept and nothing starves. The ring's next cell may be
 * claimed by a producer still filling it while a later item is already
 * counted: then the item is moments away, and the taker yields until it is
 * published.
 */
static struct rrp_work *take(void)
{
	for (;;) {
		struct rrp_work *w = ring_pop();

		if (!w && atomic_load(&q.overflow_n))
			w = overflow_pop();
		if (w)
			return w;
		sched_yield();
	}
}

void *rrp_worker_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "rpcrdma-worker");
	for (;;) {
		struct rrp_work *w;
		bool heap;

		count_take();
		w = take();
		heap = w->heap; /* fn may recycle the owner of an embedded w */
		w->fn(w->arg);
		if (heap)
			free(w);
	}
	return NULL;
}
