/* SPDX-License-Identifier: MIT */
/*
 * fab_internal.h - what the two providers share: the ops table fab.c
 * dispatches through, the common head of every provider object, counters and
 * the thread-local error text.
 *
 * Every provider object (channel, listener, conn, cq, pd, and the private
 * part of an MR) starts with a struct fab_fabric pointer, so fab.c can find
 * the provider from any handle.
 */
#ifndef RPCRDMA_FAB_INTERNAL_H
#define RPCRDMA_FAB_INTERNAL_H

#include <stdatomic.h>

#include "fabric/fab.h"

struct fab_ops {
	const char *name;
	unsigned int caps;
	void (*close)(struct fab_fabric *fab);
	int (*channel_create)(struct fab_fabric *fab, struct fab_channel **out);
	void (*channel_destroy)(struct fab_channel *ch);
	int (*channel_fd)(const struct fab_channel *ch);
	int (*channel_get_event)(struct fab_channel *ch, struct fab_cm_event *ev);
	int (*listen)(struct fab_fabric *fab, struct fab_channel *ch, const char *addr, int backlog,
		      struct fab_listener **out);
	void (*listener_destroy)(struct fab_listener *l);
	int (*listener_limits)(struct fab_listener *l, struct fab_limits *out);
	int (*conn_limits)(struct fab_conn *c, struct fab_limits *out);
	int (*device_limits)(struct fab_fabric *fab, struct fab_limits *out);
	int (*connect)(struct fab_fabric *fab, struct fab_channel *ch, const char *addr,
		       struct fab_cq *send_cq, struct fab_cq *recv_cq,
		       const struct fab_qp_caps *caps, const struct fab_conn_param *param,
		       struct fab_conn **out);
	int (*conn_create_qp)(struct fab_conn *c, struct fab_cq *send_cq, struct fab_cq *recv_cq,
			      const struct fab_qp_caps *caps);
	int (*accept)(struct fab_conn *c, const struct fab_conn_param *param);
	int (*reject)(struct fab_conn *c, const void *private_data, uint8_t len);
	int (*disconnect)(struct fab_conn *c);
	void (*conn_destroy)(struct fab_conn *c);
	struct fab_pd *(*conn_pd)(struct fab_conn *c);
	int (*conn_own_pd)(struct fab_conn *c, struct fab_pd **out);
	void (*pd_free)(struct fab_pd *pd);
	const char *(*conn_peer)(const struct fab_conn *c);
	int (*conn_addrs)(const struct fab_conn *c, struct sockaddr_storage *local,
			  struct sockaddr_storage *remote);
	int (*pd_get)(struct fab_fabric *fab, struct fab_pd **out);
	int (*mr_reg)(struct fab_pd *pd, void *addr, size_t len, unsigned int access,
		      struct fab_mr **out);
	void (*mr_dereg)(struct fab_mr *mr);
	int (*cq_create)(struct fab_fabric *fab, int depth, struct fab_cq **out);
	int (*conn_cq_create)(struct fab_conn *c, int depth, struct fab_cq **out);
	void (*cq_destroy)(struct fab_cq *cq);
	int (*cq_fd)(const struct fab_cq *cq);
	int (*cq_get_event)(struct fab_cq *cq);
	int (*cq_arm)(struct fab_cq *cq);
	int (*cq_poll)(struct fab_cq *cq, struct fab_wc *wc, int n);
	int (*post_send)(struct fab_conn *c, struct fab_send_wr *wr, struct fab_send_wr **bad);
	int (*post_recv)(struct fab_conn *c, struct fab_recv_wr *wr, struct fab_recv_wr **bad);
	int (*srq_create)(struct fab_pd *pd, uint32_t max_wr, uint32_t max_sge,
			  struct fab_srq **out);
	int (*srq_destroy)(struct fab_srq *srq);
	int (*post_srq_recv)(struct fab_srq *srq, struct fab_recv_wr *wr,
			     struct fab_recv_wr **bad);
};

/* Counters, updated from any thread. */
struct fab_counters {
	atomic_uint_fast64_t wr_posted[4];
	atomic_uint_fast64_t bytes[4];
	atomic_uint_fast64_t recv_posted;
	atomic_uint_fast64_t recv_bytes;
	atomic_uint_fast64_t registrations;
	atomic_uint_fast64_t deregistrations;
	atomic_uint_fast64_t unsignalled_page_wrs;
};

/* Head of every opened provider; providers embed it first. */
struct fab_fabric {
	const struct fab_ops *ops;
	struct fab_counters cnt;
};

/* Head of every provider connection. */
struct fab_conn_head {
	struct fab_fabric *fab;
	void *ctx;
};

/* The fabric any provider object belongs to (its first member). */
static inline struct fab_fabric *fab_of(const void *obj)
{
	return *(struct fab_fabric *const *)obj;
}

static inline void fab_count(atomic_uint_fast64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* Set the thread-local error text; returns err so callers can "return fab_err(...)". */
int fab_set_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Count one send WR of the chain at post time. */
static inline void fab_count_send(struct fab_fabric *fab, const struct fab_send_wr *wr)
{
	uint64_t len = 0;

	for (int i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if ((unsigned int)wr->opcode < 4) {
		fab_count(&fab->cnt.wr_posted[wr->opcode], 1);
		fab_count(&fab->cnt.bytes[wr->opcode], len);
	}
	if (!wr->signaled && wr->opcode != FAB_WR_RDMA_READ && len >= FAB_ZERO_COPY_MIN)
		fab_count(&fab->cnt.unsignalled_page_wrs, 1);
}

extern const struct fab_ops fab_soft_ops;
extern const struct fab_ops fab_verbs_ops;

int fab_soft_open(struct fab_fabric **out);
int fab_verbs_open(struct fab_fabric **out);

#endif /* RPCRDMA_FAB_INTERNAL_H */
