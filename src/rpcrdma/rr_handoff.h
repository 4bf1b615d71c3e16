/* SPDX-License-Identifier: MIT */
/*
 * rr_handoff.h - an intrusive lock-free stack: any thread pushes, one
 * thread takes the whole of it at once (an exchange, so no ABA).
 * rr_handoff_take gives it oldest first (the engine's hand-offs to its
 * event thread); rr_handoff_take_all as it stands, newest first (a free
 * list: the most recently used element is the one in cache).
 * Hand-written, not liburcu's lfstack/wfcqueue: theirs is the same one
 * compare-and-swap per push, but a call into liburcu.so unless LGPL code is
 * inlined (docs/threading.md; TSan: test_rr_handoff and the transport
 * suites). Also used above the engine (src/plugin/rrp_xprt.c's free
 * requests), so it needs nothing of the engine's.
 */
#ifndef RPCRDMA_RR_HANDOFF_H
#define RPCRDMA_RR_HANDOFF_H

#include <stdatomic.h>
#include <stddef.h>

struct rr_handoff {
	struct rr_handoff *next;
};

#define RR_CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static inline void rr_handoff_push(_Atomic(struct rr_handoff *) *top, struct rr_handoff *n)
{
	struct rr_handoff *t = atomic_load_explicit(top, memory_order_relaxed);

	do
		n->next = t;
	while (!atomic_compare_exchange_weak_explicit(top, &t, n, memory_order_release,
						      memory_order_relaxed));
}

/* Everything pushed so far, newest first; NULL when empty. */
static inline struct rr_handoff *rr_handoff_take_all(_Atomic(struct rr_handoff *) *top)
{
	if (!atomic_load_explicit(top, memory_order_relaxed))
		return NULL;
	return atomic_exchange_explicit(top, NULL, memory_order_acquire);
}

/* Everything pushed so far, oldest first. */
static inline struct rr_handoff *rr_handoff_take(_Atomic(struct rr_handoff *) *top)
{
	struct rr_handoff *q = rr_handoff_take_all(top), *fifo = NULL;

	while (q) {
		struct rr_handoff *next = q->next;

		q->next = fifo;
		fifo = q;
		q = next;
	}
	return fifo;
}

#endif
