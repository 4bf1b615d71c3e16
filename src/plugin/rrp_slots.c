// SPDX-License-Identifier: MIT
/*
 * rrp_slots.c - NFSv4.1 session slots after ERR_CHUNK, fore channel
 * (RFC 8267 section 4.5).
 *
 * When a COMPOUND ran but its Reply could not be delivered (ERR_CHUNK went
 * instead), the client has no SEQUENCE result and will retry on the same
 * slot with the same sequence id. ganesha would replay its cached reply,
 * which fails the same way, forever. ganesha exposes no handle on its
 * session slots, so the transport remembers (session, slot, sequence) and
 * answers that exact retry itself with NFS4ERR_RETRY_UNCACHED_REP (RFC 8881
 * section 2.10.6.1.2): the client then advances the sequence id, and the
 * next request on the slot reaches ganesha, whose slot is at the executed
 * sequence, as the protocol expects. A request with any other sequence id
 * on that slot forgets the entry.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "plugin/rrp_slots.h"
#include "ulb/ulb_xdr.h"

#define NFS4ERR_RETRY_UNCACHED_REP 10068
#define OP_SEQUENCE 53
#define RPC_AUTH_GSS 6

/*
 * The remembered slots: an open-addressed table, each (session, slot) in
 * one of the RRP_SLOTS_PROBE entries from its hash. Almost always empty
 * (ERR_CHUNK is rare), and every NFSv4.1 call asks it: a call finds it
 * empty with one load, and otherwise looks at a few entries, not all.
 * Full windows forget their oldest entry.
 */
#define TABLE_SIZE RRP_SLOTS_MAX
#define TABLE_MASK (TABLE_SIZE - 1)
_Static_assert((TABLE_SIZE & TABLE_MASK) == 0, "the table size is a power of two");

struct uncached {
	bool used;
	uint32_t age;			/* when remembered: the oldest goes first */
	struct ulb_sequence seq;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct uncached table[TABLE_SIZE];
static uint32_t clock_now;		/* under the lock */
static atomic_uint nused;		/* written under the lock */

static bool same_slot(const struct ulb_sequence *a, const struct ulb_sequence *b)
{
	return a->slotid == b->slotid && !memcmp(a->sessionid, b->sessionid, sizeof(a->sessionid));
}

/* FNV-1a over the session id and the slot id. */
static uint32_t slot_hash(const struct ulb_sequence *seq)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < sizeof(seq->sessionid); i++)
		h = (h ^ seq->sessionid[i]) * 16777619u;
	for (int i = 0; i < 32; i += 8)
		h = (h ^ ((seq->slotid >> i) & 0xff)) * 16777619u;
	return h;
}

static struct uncached *entry(uint32_t h, unsigned int i)
{
	return &table[(h + i) & TABLE_MASK];
}

/* The entry remembering @seq's slot, or NULL. Under the lock. */
static struct uncached *find(const struct ulb_sequence *seq)
{
	uint32_t h = slot_hash(seq);

	for (unsigned int i = 0; i < RRP_SLOTS_PROBE; i++) {
		struct uncached *e = entry(h, i);

		if (e->used && same_slot(&e->seq, seq))
			return e;
	}
	return NULL;
}

static void forget(struct uncached *e)
{
	e->used = false;
	atomic_store_explicit(&nused, atomic_load_explicit(&nused, memory_order_relaxed) - 1,
			      memory_order_relaxed);
}

void rrp_slots_uncache(const struct ulb_sequence *seq)
{
	struct uncached *e;

	pthread_mutex_lock(&lock);
	e = find(seq);
	if (!e) {
		uint32_t h = slot_hash(seq);

		/* A free entry in the window, else the one remembered longest. */
		e = entry(h, 0);
		for (unsigned int i = 0; i < RRP_SLOTS_PROBE && e->used; i++) {
			struct uncached *c = entry(h, i);

			if (!c->used || clock_now - c->age > clock_now - e->age)
				e = c;
		}
		if (!e->used)
			atomic_fetch_add_explicit(&nused, 1, memory_order_release);
	}
	e->used = true;
	e->age = clock_now++;
	e->seq = *seq;
	pthread_mutex_unlock(&lock);
}

enum rrp_slot_verdict rrp_slots_check(const struct ulb_call *c)
{
	enum rrp_slot_verdict v = RRP_SLOT_PASS;
	struct uncached *e;

	if (!c->has_sequence || c->cred_flavor == RPC_AUTH_GSS)
		return RRP_SLOT_PASS; /* we cannot sign a GSS verifier */
	/* Nothing remembered: the usual case, without the lock. An entry is
	 * remembered before its ERR_CHUNK goes out, so before any retry of it
	 * can arrive. */
	if (!atomic_load_explicit(&nused, memory_order_acquire))
		return RRP_SLOT_PASS;
	pthread_mutex_lock(&lock);
	e = find(&c->seq);
	if (e) {
		if (e->seq.sequenceid == c->seq.sequenceid)
			v = RRP_SLOT_RETRY_UNCACHED;
		else
			forget(e); /* the slot moved on */
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
