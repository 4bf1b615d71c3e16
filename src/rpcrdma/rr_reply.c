// SPDX-License-Identifier: MIT
/*
 * rr_reply.c - building a Reply (RFC 8166 sections 3.5.4-3.5.6). A Reply is
 * the upper layer's encoded RPC Reply plus its payload plan:
 *   - each payload span goes by RDMA Write into its Write chunk (exact bytes,
 *     never the XDR pad; the echoed segment lengths say what was written);
 *   - the rest goes inline or into the Reply chunk, or the Reply becomes
 *     ERR_CHUNK: reply_shape decides, here alone (the upper layer gives only
 *     the payloads), and the upper layer is told when it cannot be delivered
 *     (RFC 8267 section 4.5: it retires the session slot).
 * The Writes (rr_rw.c) are chained ahead of one Send on the same QP, so the
 * client sees the data before the Send (RC ordering); rr_send.c posts the
 * chain. A Reply that is the Send alone goes unsignalled when it may
 * (RR_QUIET_SENDS). Send With Invalidate is used when the client allows it
 * and exactly one rkey appears in the call. Error replies: rr_reply_error.c.
 */
#include <errno.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"
#include "rpcrdma/rr_xdr.h"

/* Bytes of the stream that stay out of the Write chunks: payload plus its
 * XDR pad (clipped to the stream) are skipped. */
struct inline_range {
	uint64_t off, len;
};

/* What one Reply is built from, gathered once. */
struct reply_args {
	struct rr_call_ctx *ctx;
	const struct iovec *iov;
	int iovcnt;
	const struct rr_reply_plan *plan;
	uint64_t total; /* bytes in the stream */
};

static const struct rr_reply_plan no_spans = {.nspans = 0, .deliverable = true};

/*
 * How a Reply goes (RFC 8166 section 3.5.4): inline in one Send when the
 * transport header and every byte outside the Write chunks fit the inline
 * threshold; else by RDMA Write into the Reply chunk, with an RDMA_NOMSG
 * header (the same length as RDMA_MSG's) alone in the Send; else not at all:
 * the transport answers ERR_CHUNK (RFC 8166 section 4.5).
 */
enum reply_shape {
	SHAPE_INLINE,		/* RDMA_MSG, header and body in one Send */
	SHAPE_REPLY_CHUNK,	/* RDMA_NOMSG, the body in the Reply chunk */
	SHAPE_NONE,		/* no Reply chunk, one too short, or the header
				 * alone over the threshold: ERR_CHUNK */
};

/*
 * The one place a Reply's shape is decided and its transport header sized:
 * @inline_len is the Reply's bytes outside its Write chunks (payloads and
 * their XDR pads taken out). The threshold is the connection's for Sends,
 * never more than our send buffers, so a header that fits it fits them.
 */
static enum reply_shape reply_shape(const struct rr_conn *c, const struct rr_pcl *p,
				    uint64_t inline_len, uint32_t *hdr_len)
{
	uint32_t max_inline = rr_conn_max_inline_send(c);
	uint64_t hdr = rr_hdr_reply_len(p);

	*hdr_len = (uint32_t)hdr;
	if (hdr + inline_len <= max_inline)
		return SHAPE_INLINE;
	if (!p->has_reply || inline_len > p->reply.length || hdr > max_inline)
		return SHAPE_NONE;
	return SHAPE_REPLY_CHUNK;
}

/* A registered bounce buffer of ours, as one piece of @len bytes. */
static bool bounce_alloc(struct rr_send_ctx *s, uint64_t len, struct rr_rw_piece *pc)
{
	struct rr_conn *c = s->conn;
	uint32_t lkey, ref;
	void *buf;

	if (len > c->big->buf_size || s->nbounce >= RR_PCL_MAX_WRITE_CHUNKS + 1)
		return false;
	/* Sized to @len and charged to this connection: its reserve covers a
	 * full Long Reply whatever other connections hold (rr_internal.h). */
	buf = rr_big_get(c->big, c, len, RR_SINK_BOUNCE, &lkey, &ref);
	if (!buf) {
		c->sinks_short = true; /* for now: the Reply waits (rr_reply_now) */
		return false;
	}
	s->bounce_ref[s->nbounce] = ref;
	s->bounce[s->nbounce++] = buf;
	/* iWARP: the sink pool is the device PD's (rr_rw_lend) */
	if (c->own_pd && !rr_rw_lend(s, buf, len, &lkey))
		return false; /* the buffer goes back with the context */
	pc->addr = buf;
	pc->len = (uint32_t)len;
	pc->lkey = lkey;
	return true;
}

/* The one rkey of the call, if exactly one distinct rkey appears in it. */
static bool single_rkey(const struct rr_pcl *p, uint32_t *rkey)
{
	if (p->nsegs == 0)
		return false;
	for (unsigned int i = 1; i < p->nsegs; i++)
		if (p->segs[i].handle != p->segs[0].handle)
			return false;
	*rkey = p->segs[0].handle;
	return true;
}

/* Spans must be in stream order, inside the stream, one per Write chunk,
 * each no larger than its chunk. "Inside" is tested without forming
 * offset + length, which wraps for an offset near 2^64. */
static bool plan_valid(const struct rr_pcl *p, const struct rr_reply_plan *plan, uint64_t total)
{
	uint64_t end = 0;
	uint32_t used = 0; /* bit per Write chunk */

	_Static_assert(RR_PCL_MAX_WRITE_CHUNKS <= 32, "one bit per Write chunk");
	if (plan->nspans > RR_PCL_MAX_WRITE_CHUNKS)
		return false;
	for (unsigned int i = 0; i < plan->nspans; i++) {
		const struct rr_payload_span *sp = &plan->spans[i];

		if (sp->chunk >= p->n_write || (used >> sp->chunk & 1) || sp->offset < end ||
		    sp->offset > total || sp->length > total - sp->offset ||
		    sp->length > p->write[sp->chunk].length)
			return false;
		used |= 1u << sp->chunk;
		end = sp->offset + sp->length;
	}
	return true;
}

static int inline_ranges(const struct rr_reply_plan *plan, uint64_t total, struct inline_range *r,
			 uint64_t *inline_len)
{
	uint64_t cur = 0, sum = 0;
	int n = 0;

	for (unsigned int i = 0; i < plan->nspans; i++) {
		const struct rr_payload_span *sp = &plan->spans[i];
		uint64_t skip_end = sp->offset + rr_xdr_roundup(sp->length);

		if (skip_end > total)
			skip_end = total;
		if (sp->offset > cur) {
			r[n].off = cur;
			r[n].len = sp->offset - cur;
			sum += r[n].len;
			n++;
		}
		if (skip_end > cur)
			cur = skip_end;
	}
	if (total > cur) {
		r[n].off = cur;
		r[n].len = total - cur;
		sum += r[n].len;
		n++;
	}
	*inline_len = sum;
	return n;
}

/* The inline ranges of the stream, one after another, to @dst. */
static void copy_ranges(const struct reply_args *a, const struct inline_range *r, int n,
			uint8_t *dst)
{
	for (int i = 0; i < n; i++) {
		rr_rw_copy(a->iov, a->iovcnt, r[i].off, r[i].len, dst);
		dst += r[i].len;
	}
}

/* The caller's memory and the call go back: no Reply will use them. */
static void reply_drop(struct rr_call_ctx *ctx, rr_reply_done_fn done, void *done_arg)
{
	if (done)
		done(done_arg);
	rr_call_put(ctx);
}

static __attribute__((noinline, cold)) void not_delivered(struct rr_conn *c,
							   struct rr_call_ctx *ctx,
							   rr_reply_done_fn done, void *done_arg)
{
	uint32_t xid = ctx->pcl->xid;

	RR_STAT_ADD(c, not_delivered, 1);
	/* Any client can make every Reply of its fail: rate-limited. */
	rr_ratelog(&c->srv->reply_events, RR_EV_NOT_DELIVERED,
		   "%s: xid %#x: reply not delivered, ERR_CHUNK sent instead", c->peer, xid);
	/*
	 * Tell the upper layer first: the client may retry the moment it sees
	 * ERR_CHUNK, and that retry must find the NFSv4.1 slot already marked
	 * uncached (RFC 8267 section 4.5), or ganesha replays the reply that
	 * could not be delivered and the retry fails with ERR_CHUNK again.
	 */
	if (c->srv->ops.reply_not_delivered)
		c->srv->ops.reply_not_delivered(c->srv->ctx, c, xid, done_arg);
	/* the caller's memory now; the call's hold goes with the answer */
	if (done)
		done(done_arg);
	rr_reply_error(ctx, RR_ACT_ERR_CHUNK);
}

/* Worst case: every segment used gets its own Write, the pieces (at most
 * RR_RW_MAX_PIECES a span, one for the Reply chunk) split by segment ends,
 * and each Write gathers what the device takes (rr_rw_reply_max_wr). */
static bool reply_reserve(struct rr_send_ctx *s, const struct reply_args *a)
{
	const struct rr_pcl *p = a->ctx->pcl;
	const struct rr_reply_plan *plan = a->plan;
	uint32_t k = s->conn->write_sge, segs, sges;

	if (!plan->nspans && !p->has_reply)
		return true;
	segs = p->has_reply ? p->reply.nsegs : 0;
	for (unsigned int i = 0; i < plan->nspans; i++)
		segs += p->write[plan->spans[i].chunk].nsegs;
	sges = segs + RR_RW_MAX_PIECES * plan->nspans + 8;
	return rr_rw_reserve(&s->rw, segs + (sges + k - 1) / k + plan->nspans + 4, sges);
}

/* The payload spans by RDMA Write into their Write chunks, zero-copy when
 * registered; bytes written into each span's chunk in @written, in all
 * @write_bytes. */
static bool write_payloads(struct rr_send_ctx *s, const struct reply_args *a, uint64_t *written,
			   uint64_t *write_bytes)
{
	const struct rr_pcl *p = a->ctx->pcl;
	struct rr_conn *c = s->conn;

	for (unsigned int i = 0; i < a->plan->nspans; i++) {
		const struct rr_payload_span *sp = &a->plan->spans[i];
		struct rr_rw_piece pc[RR_RW_MAX_PIECES];
		int npc = 0;

		written[sp->chunk] = sp->length;
		if (sp->length == 0)
			continue;
		if (!rr_rw_pieces(s, a->iov, a->iovcnt, sp->offset, sp->length, pc, &npc)) {
			if (!bounce_alloc(s, sp->length, &pc[0]))
				return false;
			rr_rw_copy(a->iov, a->iovcnt, sp->offset, sp->length,
				   (uint8_t *)pc[0].addr);
			npc = 1;
			RR_STAT_ADD(c, payload_copies, sp->length);
		}
		if (!rr_rw_write_chunk(&s->rw, p, &p->write[sp->chunk], pc, npc, c->write_sge))
			return false;
		*write_bytes += sp->length;
	}
	return true;
}

/* Long Reply: everything but the payloads by RDMA Write into the Reply
 * chunk, then the RDMA_NOMSG header alone in s->hdr. */
static bool reply_chunk(struct rr_send_ctx *s, const struct reply_args *a,
			const struct inline_range *r, int nr, uint64_t inline_len,
			const uint64_t *written)
{
	struct rr_conn *c = s->conn;
	const struct rr_pcl *p = a->ctx->pcl;
	struct rr_rw_piece pc;

	if (!bounce_alloc(s, inline_len, &pc))
		return false;
	copy_ranges(a, r, nr, (uint8_t *)pc.addr);
	if (inline_len && !rr_rw_write_chunk(&s->rw, p, &p->reply, &pc, 1, c->write_sge))
		return false;
	return rr_hdr_encode_reply(s->hdr, c->srv->cfg.inline_size, p, c->credits, RR_PROC_NOMSG,
				   written, inline_len) >= 0;
}

/* Unsignalled Sends a connection may have out at once (reply_send): fewer
 * than its reserve, so of the contexts a connection that waits holds (at
 * least its reserve) one is not quiet (RR_SEND_RESERVE); and two fewer, so
 * the next Reply finds one in its reserve while the signalled Send that
 * retires them has completed and its completion is not yet polled (queue
 * depth 1 never grows the pool). */
#define RR_QUIET_MAX (RR_QUIET_SENDS < RR_SEND_RESERVE - 2 ? RR_QUIET_SENDS : RR_SEND_RESERVE - 2)
_Static_assert(RR_QUIET_MAX < RR_SEND_RESERVE, "a connection that waits holds one not quiet");

/* Writes of @from bytes or more signalled (rr_conn.signal_from). */
static __attribute__((noinline, cold)) void signal_large_writes(struct rr_send_ctx *s,
								uint32_t from)
{
	for (uint32_t i = 0; i < s->rw.nwr; i++) {
		struct fab_send_wr *wr = &s->rw.wr[i];
		uint64_t len = 0;

		for (int k = 0; k < wr->num_sge; k++)
			len += wr->sg_list[k].length;
		if (len >= from)
			wr->signaled = true;
	}
}

/* The Send of a built Reply: signalled unless it is the Send alone (it then
 * carries copies only, see RR_QUIET_SENDS), invalidating when it may. */
static bool reply_send(struct rr_send_ctx *s, const struct rr_pcl *p, uint32_t len)
{
	struct rr_conn *c = s->conn;
	bool writes = s->rw.nwr != 0;
	/* Unsignalled Sends hold their contexts until a later completion:
	 * fewer than the reserve, so a connection that waits for a context
	 * holds one whose completion brings it one back (RR_SEND_RESERVE). */
	bool quiet = !writes && c->quiet_out < RR_QUIET_MAX && len < c->signal_from;
	struct fab_send_wr *send = rr_send_wr(s, len);
	uint32_t rkey;

	if (!send)
		return false;
	send->signaled = !quiet;
	s->quiet = quiet;
	if (c->send_w_inv && single_rkey(p, &rkey)) {
		send->opcode = FAB_WR_SEND_WITH_INV;
		send->invalidate_rkey = rkey;
		RR_STAT_ADD(c, send_w_inv, 1);
	}
	/* siw reads an unsignalled Write's pages when TCP sends them, which
	 * may be after the Send completes and the caller reuses its memory:
	 * signalled, they are copied as they are posted (docs/devices.md).
	 * Last, so the common case keeps no register for the call; the Send
	 * is signalled already. */
	if (writes && c->signal_from != UINT32_MAX)
		signal_large_writes(s, c->signal_from);
	return true;
}

/*
 * A Reply to a Call that offered no Write or Reply chunk (NULL, GETATTR,
 * WRITE's, most of NFSv4): the header, then the whole stream, in one Send,
 * or nothing if it does not fit. The Send reply_build's general path below
 * builds for such a Reply, without its range and chunk bookkeeping.
 */
static bool reply_build_plain(struct rr_send_ctx *s, const struct reply_args *a)
{
	struct rr_conn *c = s->conn;
	const struct rr_pcl *p = a->ctx->pcl;
	uint32_t hdr_len;
	uint8_t *q;

	if (reply_shape(c, p, a->total, &hdr_len) != SHAPE_INLINE)
		return false;
	q = s->hdr + rr_hdr_encode_reply_bare(s->hdr, p->xid, c->credits);
	for (int i = 0; i < a->iovcnt; i++) {
		if (a->iov[i].iov_len)
			memcpy(q, a->iov[i].iov_base, a->iov[i].iov_len);
		q += a->iov[i].iov_len;
	}
	if (!reply_send(s, p, (uint32_t)(hdr_len + a->total)))
		return false;
	RR_STAT_ADD(c, replies_inline, 1);
	return true;
}

/*
 * The chain of one Reply in @s: Writes of the payloads, the rest inline or
 * in the Reply chunk as reply_shape says, then the Send. False when it
 * cannot be delivered; nothing was posted.
 */
static bool reply_build(struct rr_send_ctx *s, const struct reply_args *a)
{
	struct rr_conn *c = s->conn;
	const struct rr_pcl *p = a->ctx->pcl;
	struct inline_range ranges[RR_PCL_MAX_WRITE_CHUNKS + 1];
	uint64_t written[RR_PCL_MAX_WRITE_CHUNKS]; /* bytes per Write chunk, [0, n_write) */
	uint64_t inline_len, write_bytes = 0;
	enum reply_shape shape;
	uint32_t hdr_len, send_len;
	int nranges;

	if (!a->plan->nspans && !p->n_write && !p->has_reply)
		return reply_build_plain(s, a);
	nranges = inline_ranges(a->plan, a->total, ranges, &inline_len);
	shape = reply_shape(c, p, inline_len, &hdr_len);
	if (shape == SHAPE_NONE)
		return false;
	/* Each span sets its chunk's (write_payloads); one per chunk in the
	 * common case, so the others need zeroing only when there are fewer. */
	if (a->plan->nspans < p->n_write)
		for (unsigned int i = 0; i < p->n_write && i < RR_PCL_MAX_WRITE_CHUNKS; i++)
			written[i] = 0;
	if (!reply_reserve(s, a))
		return false;
	if (a->plan->nspans && !write_payloads(s, a, written, &write_bytes))
		return false;
	if (shape == SHAPE_INLINE) {
		/* reply_shape sized it, within the send buffer */
		rr_hdr_store_reply(s->hdr, p, c->credits, RR_PROC_MSG, written, 0);
		copy_ranges(a, ranges, nranges, s->hdr + hdr_len);
		send_len = hdr_len + (uint32_t)inline_len;
	} else {
		if (!reply_chunk(s, a, ranges, nranges, inline_len, written))
			return false;
		send_len = hdr_len;
		write_bytes += inline_len;
	}
	if (!reply_send(s, p, send_len))
		return false;
	if (shape == SHAPE_INLINE)
		RR_STAT_ADD(c, replies_inline, 1);
	else
		RR_STAT_ADD(c, replies_reply_chunk, 1);
	if (a->plan->nspans)
		RR_STAT_ADD(c, replies_write_chunk, 1);
	RR_STAT_ADD(c, rdma_write_bytes, write_bytes);
	return true;
}

/*
 * Short of a bounce buffer is short of memory for now, not a fault of the
 * client's chunks: ERR_CHUNK would fail its RPC (EIO to the application).
 * The Reply waits in turn with those waiting for a send context, and is
 * tried again once a buffer comes back to the pool after this failure (not
 * for its own partial take, given back just now); the connection's own
 * calls, others' and the idle slabs' unmapping all give back in time, as a
 * Read waiting for a sink finds (docs/memory.md).
 */
static __attribute__((noinline, cold)) void reply_wait_sinks(struct rr_call_ctx *ctx,
							      const struct iovec *iov, int iovcnt,
							      const struct rr_reply_plan *plan,
							      rr_reply_done_fn done, void *done_arg)
{
	struct rr_conn *c = ctx->conn;

	c->sinks_short = false;
	c->replies_starved = true;
	c->reply_stuck_at = atomic_load_explicit(&c->big->puts, memory_order_acquire);
	c->evt->reads_starved = true; /* the walk at the next wake-up tries it */
	RR_STAT_ADD(c, reply_sink_waits, 1);
	rr_reply_wait(ctx, iov, iovcnt, plan, done, done_arg);
}

int rr_reply_now(struct rr_call *call, const struct iovec *iov, int iovcnt,
		 const struct rr_reply_plan *plan, rr_reply_done_fn done, void *done_arg)
{
	struct rr_call_ctx *ctx = (struct rr_call_ctx *)call;
	struct rr_conn *c = ctx->conn;
	struct reply_args a = {.ctx = ctx, .iov = iov, .iovcnt = iovcnt, .plan = plan};
	struct rr_send_ctx *s;

	if (!plan)
		a.plan = &no_spans;
	for (int i = 0; i < iovcnt; i++)
		a.total += iov[i].iov_len;
	if (c->state == RR_CONN_CLOSING) {
		reply_drop(ctx, done, done_arg);
		return -ENOTCONN;
	}
	if (!a.plan->deliverable || !plan_valid(ctx->pcl, a.plan, a.total))
		goto undeliverable;
	/* Behind Replies that wait for a send context, in order; or the
	 * budget has no room for another context now: wait for one of this
	 * connection's own to come back (rr_send.c). */
	s = c->ctx_wait_head ? NULL : rr_send_ctx_get(c, false);
	if (!s) {
		RR_STAT_ADD(c, send_ctx_waits, 1);
		rr_reply_wait(ctx, iov, iovcnt, plan, done, done_arg);
		return 0;
	}
	if (!reply_build(s, &a)) {
		/* Nothing was posted: drop the chain (its bounce buffers too). */
		s->quiet = false;
		s->rw.nwr = 0;
		rr_send_ctx_release(s);
		if (c->sinks_short) {
			reply_wait_sinks(ctx, iov, iovcnt, plan, done, done_arg);
			return 0;
		}
		goto undeliverable; /* the Reply cannot be sent: ERR_CHUNK */
	}
	ctx->state = RR_CALL_REPLYING;
	if (s->quiet) {
		/* Everything the Send needs is in s->hdr: the call's receive
		 * buffer and the caller's memory are free before it goes. */
		c->quiet_out++;
		RR_STAT_ADD(c, sends_unsignalled, 1);
		reply_drop(ctx, done, done_arg);
	} else {
		s->call = ctx;
		s->done = done;
		s->done_arg = done_arg;
	}
	rr_send_post(c, s);
	return 0;

undeliverable:
	not_delivered(c, ctx, done, done_arg);
	return 0;
}
