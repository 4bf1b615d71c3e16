/* SPDX-License-Identifier: MIT */
/* rr_handoff_probe.c: src/rpcrdma/rr_handoff.h from many threads, for
 * test_rr_handoff.cc (C++ does not take C11 _Atomic). */
#ifndef RR_HANDOFF_PROBE_H
#define RR_HANDOFF_PROBE_H

#ifdef __cplusplus
extern "C" {
#endif

struct rr_handoff_probe {
	long cycles;		/* nodes handed out and given back */
	long misordered;	/* a batch not in the order its take promises */
	long stale;		/* a node seen without the consumer's last write */
	long found;		/* distinct nodes on some list at the end */
	long duplicates;	/* nodes met twice at the end */
};

/*
 * One taker and @producers givers share @nodes nodes for @rounds cycles: the
 * taker gets a node from its own list, refilled with rr_handoff_take_all
 * (a free list, as rrp_xprt.c's requests) or rr_handoff_take (@fifo: the
 * engine's hand-offs), stamps it and pushes it to a giver's work stack; the
 * giver takes its stack oldest first, checks each stamp and pushes the node
 * back onto the free stack. 0, or -1 when a thread could not start.
 */
int rr_handoff_probe_run(int producers, int nodes, long rounds, int fifo,
			 struct rr_handoff_probe *out);

/* Push nodes 0..@n-1 (n <= 8) on one thread, take them once: their order
 * in @out; the count taken, or -1 if the stack was left non-empty. */
int rr_handoff_probe_order(int fifo, int *out, int n);

#ifdef __cplusplus
}
#endif

#endif
