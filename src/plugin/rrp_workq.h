/* SPDX-License-Identifier: MIT */
/*
 * rrp_workq.h - the worker pool's queue: Calls and callbacks handed from the
 * engine's event threads (and a few other threads) to the workers that run
 * them through ganesha, which may block in an FSAL.
 */
#ifndef RPCRDMA_RRP_WORKQ_H
#define RPCRDMA_RRP_WORKQ_H

#include <stdbool.h>

struct rrp_work {
	struct rrp_work *next;		/* the overflow list */
	void (*fn)(void *arg);
	void *arg;
	bool heap;			/* rrp_queue_fn's: the worker frees it */
};

/* Any thread: run @w on a worker (never blocks, never fails). */
void rrp_queue_work(struct rrp_work *w);
/* Any thread: run fn(arg) on a worker; false when out of memory. */
bool rrp_queue_fn(void (*fn)(void *arg), void *arg);
/* A worker thread's body: runs queued work, in about the order queued,
 * for ever (a work item that exits the thread ends it). */
void *rrp_worker_main(void *arg);

/* Slots in the lock-free ring; work beyond waits on a locked list. */
#define RRP_WORKQ_RING 1024u

#endif
