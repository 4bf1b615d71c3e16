// SPDX-License-Identifier: MIT
/*
 * rrp_slots.c - NFSv4.1 session slots after ERR_CHUNK, fore channel
 * (RFC 8267 section 4.5).
 *
 * When a COMPOUND ran but its Reply could not be delivered (ERR_CHUNK went
 * instead), the client has no SEQUENCE result and will retry on the same
 * slot with the same sequence id. ganesha would replay its cached reply,
 * which fails the same way, forever. ganesha 4.3 exposes no handle on its
 * session slots, so the transport remembers (session, slot, sequence) and
 * answers that exact retry itself with NFS4ERR_RETRY_UNCACHED_REP (RFC 8881
 * section 2.10.6.1.2): the client then advances the sequence id, and the
 * next request on the slot reaches ganesha, whose slot is at the executed
 * sequence, as the protocol expects. A request with any other sequence id
 * on that slot forgets the entry.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "plugin/rrp_plugin.h"
#include "plugin/rrp_slots.h"
#include "ulb/ulb_xdr.h"

#define UNCACHED_MAX 1024		/* remembered slots, oldest forgotten first */
#define NFS4ERR_RETRY_UNCACHED_REP 10068
#define OP_SEQUENCE 53
#define RPC_AUTH_GSS 6

struct uncached {
	bool used;
	struct ulb_sequence seq;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct uncached table[UNCACHED_MAX];
static unsigned int next_victim;

static bool same_slot(const struct ulb_sequence *a, const struct ulb_sequence *b)
{
	return a->slotid == b->slotid && !memcmp(a->sessionid, b->sessionid, sizeof(a->sessionid));
}

void rrp_slots_uncache(const struct ulb_sequence *seq)
{
	unsigned int i, free_i = UNCACHED_MAX;

	pthread_mutex_lock(&lock);
	for (i = 0; i < UNCACHED_MAX; i++) {
		if (table[i].used && same_slot(&table[i].seq, seq))
			break;
		if (!table[i].used && free_i == UNCACHED_MAX)
			free_i = i;
	}
	if (i == UNCACHED_MAX) {
		i = free_i;
		if (i == UNCACHED_MAX)
			i = next_victim++ % UNCACHED_MAX;
	}
	table[i].used = true;
	table[i].seq = *seq;
	pthread_mutex_unlock(&lock);
}

enum rrp_slot_verdict rrp_slots_check(const struct ulb_call *c)
{
	enum rrp_slot_verdict v = RRP_SLOT_PASS;

	if (!c->has_sequence || c->cred_flavor == RPC_AUTH_GSS)
		return RRP_SLOT_PASS; /* we cannot sign a GSS verifier */
	pthread_mutex_lock(&lock);
	for (unsigned int i = 0; i < UNCACHED_MAX; i++) {
		if (!table[i].used || !same_slot(&table[i].seq, &c->seq))
			continue;
		if (table[i].seq.sequenceid == c->seq.sequenceid) {
			v = RRP_SLOT_RETRY_UNCACHED;
		} else {
			table[i].used = false; /* the slot moved on */
		}
		break;
	}
	pthread_mutex_unlock(&lock);
	return v;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}

/*
 * RPC Reply (accepted, AUTH_NONE verifier, SUCCESS) carrying COMPOUND4res
 * { NFS4ERR_RETRY_UNCACHED_REP, the call's tag, [SEQUENCE: same error] }.
 * Returns the length, or -EINVAL when the call's tag cannot be read.
 */
int rrp_slots_encode_uncached(const struct rr_call *call, const struct ulb_call *c, uint8_t *out,
			      size_t len)
{
	struct ulb_xdr x;
	uint32_t taglen;
	uint8_t *p = out;

	ulb_xdr_init(&x, call->iov, call->iovcnt);
	if (!ulb_xdr_skip(&x, c->args_offset) || !ulb_xdr_u32(&x, &taglen) ||
	    taglen > ULB_MAX_TAG_LEN || len < 48 + ulb_xdr_round4(taglen))
		return -EINVAL;
	p = put32(p, c->xid);
	p = put32(p, 1);	/* REPLY */
	p = put32(p, 0);	/* MSG_ACCEPTED */
	p = put32(p, 0);	/* verifier: AUTH_NONE */
	p = put32(p, 0);
	p = put32(p, 0);	/* SUCCESS */
	p = put32(p, NFS4ERR_RETRY_UNCACHED_REP);
	p = put32(p, taglen);
	memset(p, 0, ulb_xdr_round4(taglen));
	if (taglen && !ulb_xdr_bytes(&x, p, taglen))
		return -EINVAL;
	p += ulb_xdr_round4(taglen);
	p = put32(p, 1);	/* one result */
	p = put32(p, OP_SEQUENCE);
	p = put32(p, NFS4ERR_RETRY_UNCACHED_REP);
	return (int)(p - out);
}
