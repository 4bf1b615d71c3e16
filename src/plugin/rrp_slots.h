/* SPDX-License-Identifier: MIT */
/*
 * rrp_slots.h - fore-channel session slots after ERR_CHUNK (rrp_slots.c).
 */
#ifndef RPCRDMA_RRP_SLOTS_H
#define RPCRDMA_RRP_SLOTS_H

#include <stddef.h>
#include <stdint.h>

#include "rpcrdma/rr_xprt.h"
#include "ulb/ulb_call.h"

/* Slots remembered at most (the oldest of a full window is forgotten), and
 * the entries one (session, slot) may take. */
#define RRP_SLOTS_MAX 1024u
#define RRP_SLOTS_PROBE 8u

enum rrp_slot_verdict {
	RRP_SLOT_PASS,			/* hand the request to ganesha */
	RRP_SLOT_RETRY_UNCACHED,	/* answer NFS4ERR_RETRY_UNCACHED_REP here */
};

/* The Reply of the request that held @seq was not delivered. */
void rrp_slots_uncache(const struct ulb_sequence *seq);
enum rrp_slot_verdict rrp_slots_check(const struct ulb_call *c);
int rrp_slots_encode_uncached(const struct rr_call *call, const struct ulb_call *c, uint8_t *out,
			      size_t len);

#endif
