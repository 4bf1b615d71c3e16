/* SPDX-License-Identifier: MIT */
/*
 * rr_test_prog.h - the test RPC program served by rr_test_server and called
 * by the transport tests: constants, the SOURCE data pattern and the SINK
 * hash. Plain C so the server (C) and the tests (C++) share one definition.
 */
#ifndef RR_TEST_PROG_H
#define RR_TEST_PROG_H

#include <stddef.h>
#include <stdint.h>

#define RRT_PROG 0x20000099u
#define RRT_VERS 1u

enum rrt_proc {
	RRT_PROC_NULL = 0,
	RRT_PROC_ECHO = 1,	/* opaque<> -> same opaque<> */
	RRT_PROC_SINK = 2,	/* opaque<> -> u32 length, u32 fnv1a32 */
	RRT_PROC_SOURCE = 3,	/* u32 length, u32 seed -> opaque<> pattern */
	RRT_PROC_HOLD = 4,	/* never answered; released at conn_down */
	RRT_PROC_DELAY = 5,	/* u32 ms, opaque<> -> the opaque<>, answered ms later
				 * from another thread (even after conn_down) */
	RRT_PROC_CHUNKS = 6,	/* anything -> u32 n, then per rr_call.chunk_data:
				 * u32 length, u32 fnv1a32 of its bytes, u32 1 if it
				 * is an element of iov[] (else 0), u32 stream offset */
	RRT_PROC_STALL = 7,	/* u32 ms -> u32 index of the engine's event thread
				 * that delivered it, answered after blocking that
				 * thread for ms (at most 10000) */
	RRT_PROC_BC_CALL = 8,	/* u32 xid -> i32 rr_conn_bc_send's result: a
				 * reverse-direction call (RRT_BC_PROG's NULL,
				 * RPC xid = rdma_xid = xid) sent on this connection */
	/* u32 xid -> i32 rr_conn_bc_abandon's result */
	RRT_PROC_BC_ABANDON = 9,
	RRT_PROC_CLOSE = 10,	/* u32 n -> never answered: n threads of the server
				 * (1..8) close the connection at once
				 * (rr_conn_close_async), as an upper layer that
				 * destroyed its transport */
};

/* The program of the server's reverse-direction calls (RFC 8167). */
#define RRT_BC_PROG 0x40000099u

/* Largest SOURCE / ECHO the server accepts (else GARBAGE_ARGS). */
#define RRT_MAX_DATA (16u << 20)

static inline uint8_t rrt_pattern(uint32_t seed, uint64_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ seed * 40503u ^ (uint32_t)(i >> 11);

	return (uint8_t)(x >> 13 ^ x);
}

static inline uint32_t rrt_fnv1a(uint32_t h, const void *p, size_t n)
{
	const uint8_t *q = (const uint8_t *)p;

	for (size_t i = 0; i < n; i++) {
		h ^= q[i];
		h *= 16777619u;
	}
	return h;
}
#define RRT_FNV_INIT 2166136261u

#endif
