/* SPDX-License-Identifier: MIT */
/*
 * ulb_slots.h - session-slot bookkeeping for replies that cannot be
 * delivered (RFC 8267 section 4.5).
 *
 * Forward channel: while a Call that carried SEQUENCE is in flight, its xid
 * maps to (session, slot, sequence). If the COMPOUND ran but its Reply could
 * not be delivered (the transport sent ERR_CHUNK instead), the host marks
 * that slot's cached reply uncached, so a retry gets
 * NFS4ERR_RETRY_UNCACHED_REP instead of a replay that fails the same way.
 * An ERR_CHUNK at decode time comes before SEQUENCE runs: nothing is tracked
 * yet and the slot is left alone.
 *
 * Backchannel (server as requester): while a CB_COMPOUND is in flight, its
 * rdma_xid maps to its CB_SEQUENCE. If the client answers it with
 * RDMA_ERROR/ERR_CHUNK, the host retires that backchannel slot.
 *
 * Both tables are bounded (allocated once at init) and safe to use from
 * several threads; hooks run without the table lock held.
 */
#ifndef ULB_ULB_SLOTS_H
#define ULB_ULB_SLOTS_H

#include <pthread.h>
#include <stdint.h>

#include "ulb/ulb_call.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ULB_SLOTS_MAX 16384u /* largest capacity accepted for either table */

/* Supplied by the host (ganesha); either hook may be NULL. */
struct ulb_host_ops {
	/* The Reply to @xid was not delivered after the COMPOUND ran. */
	void (*slot_uncache)(void *host, uint32_t xid, const struct ulb_sequence *seq);
	/* The client answered callback @rdma_xid with RDMA_ERROR / ERR_CHUNK. */
	void (*bc_slot_retire)(void *host, uint32_t rdma_xid, const struct ulb_sequence *seq);
};

struct ulb_xid_entry {
	uint32_t xid;
	uint8_t used;
	struct ulb_sequence seq;
};

struct ulb_xid_table {
	pthread_mutex_t lock;
	struct ulb_xid_entry *ents; /* open addressing, linear probing */
	uint32_t mask;		    /* size - 1, size a power of two >= 2 * capacity */
	uint32_t capacity;
	uint32_t count;
};

struct ulb_slots {
	const struct ulb_host_ops *ops;
	void *host;
	struct ulb_xid_table fore;
	struct ulb_xid_table back;
};

/* Capacities: calls in flight (credits) and callbacks in flight; each 1..ULB_SLOTS_MAX. */
int ulb_slots_init(struct ulb_slots *s, uint32_t fore_capacity, uint32_t back_capacity,
		   const struct ulb_host_ops *ops, void *host);
void ulb_slots_destroy(struct ulb_slots *s);

/* Forward channel. track: after the scan found SEQUENCE (c->has_sequence);
 * -EEXIST if @xid is already in flight, -ENOSPC when full. */
int ulb_slot_track(struct ulb_slots *s, uint32_t xid, const struct ulb_sequence *seq);
/* The reply went out: forget @xid. -ENOENT if not tracked. */
int ulb_slot_reply_sent(struct ulb_slots *s, uint32_t xid);
/* The reply was not delivered after execution: slot_uncache, then forget. */
int ulb_slot_reply_undelivered(struct ulb_slots *s, uint32_t xid);
/* The call went away without executing (dropped, connection lost): forget. */
int ulb_slot_forget(struct ulb_slots *s, uint32_t xid);
uint32_t ulb_slot_in_flight(struct ulb_slots *s);

/* Backchannel. */
int ulb_bc_track(struct ulb_slots *s, uint32_t rdma_xid, const struct ulb_sequence *seq);
/* An RPC reply to the callback arrived: forget it. */
int ulb_bc_reply_received(struct ulb_slots *s, uint32_t rdma_xid);
/* RDMA_ERROR / ERR_CHUNK for the callback: bc_slot_retire, then forget. */
int ulb_bc_err_chunk(struct ulb_slots *s, uint32_t rdma_xid);
int ulb_bc_forget(struct ulb_slots *s, uint32_t rdma_xid);
uint32_t ulb_bc_in_flight(struct ulb_slots *s);

#ifdef __cplusplus
}
#endif
#endif
