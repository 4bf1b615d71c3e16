// SPDX-License-Identifier: MIT
/*
 * rr_read.c - pulling Read chunks (RFC 8166 section 3.5.3). Each chunk is
 * pulled by RDMA Read into one registered sink buffer sized to it (from the
 * sink pool, within the connection's share: rr_internal.h); at most `ord` Reads
 * are in flight per connection (the depth the client granted at connect).
 * The work requests are built and posted by rr_rw.c, shared with the Writes.
 * The Call is dispatched only when every Read has completed, and it is
 * presented as iovecs over the receive buffer and the sinks: no copy beyond
 * the RDMA Read itself.
 */
#include <errno.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"
#include "rpcrdma/rr_xdr.h"

static const uint8_t zero_pad[4];

/*
 * iWARP: the peer places a Read's data with a tagged message to the sink's
 * STag, so the sink needs remote write (the kernel's rdma_rw registers an MR
 * per Read for it). The sink pool's own registrations stay local-write
 * only: each sink gets a registration of its own, made as its call's Reads
 * are about to go and withdrawn as soon as they complete, so no peer can
 * write into server memory outside its own Reads in flight
 * (docs/devices.md). False leaves the sink for the next try.
 */
static bool expose_sink(struct rr_call_ctx *ctx, unsigned int i)
{
	struct rr_conn *c = ctx->conn;
	struct fab_mr *mr;

	if (fab_mr_reg(c->pd, ctx->sink[i], ctx->pcl->read[i].length,
		       FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE, &mr))
		return false;
	RR_STAT_ADD(c, registrations, 1);
	ctx->sink_mr[i] = mr;
	ctx->sink_lkey[i] = mr->lkey;
	return true;
}

/* A Call that cannot have all its sinks holds none while it waits: calls
 * each holding part of what they need could otherwise share out a pool at
 * its bound (Read_Sink_Budget) with none of them able to finish. */
static void give_back_sinks(struct rr_call_ctx *ctx)
{
	struct rr_conn *c = ctx->conn;

	for (unsigned int i = 0; i < ctx->nsinks; i++)
		if (ctx->sink[i]) {
			rr_sink_unexpose(ctx, i);
			rr_big_unget(c->big, c, ctx->sink_ref[i]);
			ctx->sink[i] = NULL;
		}
}

/*
 * The connections waiting for a pool's sinks (rr_bigpool.wait_head), served
 * in the order they began to wait: the one being handled when sinks come
 * back would otherwise take them every time (docs/memory.md). Each queue is
 * its pool's thread's, as the pool is.
 */
static void sink_wait(struct rr_bigpool *bp, struct rr_conn *c)
{
	if (c->sink_waiting)
		return;
	c->sink_waiting = true;
	c->sink_wait_next = NULL;
	if (bp->wait_tail)
		bp->wait_tail->sink_wait_next = c;
	else
		bp->wait_head = c;
	bp->wait_tail = c;
}

/* Whoever is first now has not tried since it became so. */
static void sink_wait_new_first(struct rr_bigpool *bp)
{
	bp->stuck_at = RR_SINK_UNTRIED;
}

static void sink_wait_pop(struct rr_bigpool *bp)
{
	struct rr_conn *c = bp->wait_head;

	bp->wait_head = c->sink_wait_next;
	if (!bp->wait_head)
		bp->wait_tail = NULL;
	c->sink_wait_next = NULL;
	c->sink_waiting = false;
	sink_wait_new_first(bp);
}

/* The first connection still waiting: one closing, or with no call left to
 * read, gives way. */
static struct rr_conn *first_waiter(struct rr_bigpool *bp)
{
	struct rr_conn *c;

	while ((c = bp->wait_head) && (c->state == RR_CONN_CLOSING || !c->read_head))
		sink_wait_pop(bp);
	return c;
}

void rr_read_forget_waiter(struct rr_conn *c)
{
	struct rr_bigpool *bp = c->big;
	struct rr_conn *prev = NULL, *q;

	if (!c->sink_waiting)
		return;
	for (q = bp->wait_head; q != c; q = q->sink_wait_next)
		prev = q;
	if (prev) {
		prev->sink_wait_next = c->sink_wait_next;
	} else {
		bp->wait_head = c->sink_wait_next;
		sink_wait_new_first(bp);
	}
	if (bp->wait_tail == c)
		bp->wait_tail = prev;
	c->sink_wait_next = NULL;
	c->sink_waiting = false;
}

/*
 * Sinks sized to each chunk (rr_internal.h: the pool's classes and each
 * connection's share); false leaves the call queued until one comes back.
 *
 * In turn (docs/memory.md): while the first waiter of the pool has not yet
 * tried what came back since it last failed, a call of another connection
 * takes none and joins the queue; once it has, and failed, a call that fits
 * in what is left may go (a call that needs more than is free must not hold
 * up one that fits). The first waiter keeps the sinks it took: each came
 * back on its turn, and one at a time they would go to calls that need only
 * one. It alone holds part of a call's sinks, so no two calls can share out
 * a pool with neither able to finish: any other call that fails gives back
 * what it took, and joins the queue if the pool was short; at its
 * connection's own share it waits for its own calls instead.
 */
static bool alloc_sinks(struct rr_call_ctx *ctx)
{
	struct rr_conn *c = ctx->conn;
	struct rr_bigpool *bp = c->big;
	uint64_t puts = atomic_load_explicit(&bp->puts, memory_order_acquire);
	struct rr_conn *first = first_waiter(bp);

	if (first == c && bp->stuck_at == puts)
		return false; /* nothing came back since it failed */
	if (first && first != c && bp->stuck_at != puts) {
		sink_wait(bp, c);
		return false;
	}
	for (unsigned int i = 0; i < ctx->pcl->n_read; i++) {
		if (!ctx->sink[i]) {
			ctx->sink[i] = rr_big_get(bp, c, ctx->pcl->read[i].length, RR_SINK_READ,
						  &ctx->sink_lkey[i], &ctx->sink_ref[i]);
			if (!ctx->sink[i]) {
				if (first != c) {
					give_back_sinks(ctx);
					if (rr_big_within_share(bp, c, ctx->pcl->read[i].length))
						sink_wait(bp, c);
				}
				if (bp->wait_head == c)
					bp->stuck_at = puts;
				return false;
			}
			if (i >= ctx->nsinks)
				ctx->nsinks = i + 1;
		}
		if (c->tagged_sinks && !ctx->sink_mr[i] && !expose_sink(ctx, i))
			return false; /* the sink stays the call's until it is freed */
	}
	if (first == c)
		sink_wait_pop(bp);
	return true;
}

void rr_read_start(struct rr_call_ctx *ctx)
{
	struct rr_conn *c = ctx->conn;

	RR_STAT_ADD(c, calls_with_read_chunks, 1);
	if (ctx->pcl->proc == RR_PROC_NOMSG)
		RR_STAT_ADD(c, long_calls, 1);
	ctx->state = RR_CALL_READING;
	ctx->reads_total = 0;
	for (unsigned int i = 0; i < ctx->pcl->n_read; i++)
		ctx->reads_total += ctx->pcl->read[i].nsegs;
	ctx->reads_posted = 0;
	ctx->reads_done = 0;
	ctx->read_failed = false;
	ctx->next = NULL;
	ctx->queued = true;
	if (c->read_tail)
		c->read_tail->next = ctx;
	else
		c->read_head = ctx;
	c->read_tail = ctx;
	rr_read_pump(c);
}

static void pump_queued(struct rr_conn *c);

/* The first @posted Reads of @wr went out: count them, and take each call
 * whose Reads are all posted off the queue. */
static void read_posted(struct rr_conn *c, const struct fab_send_wr *wr, unsigned int posted)
{
	for (unsigned int i = 0; i < posted; i++) {
		struct rr_call_ctx *q =
		    (struct rr_call_ctx *)(uintptr_t)(wr[i].wr_id & ~(uint64_t)RR_WRID_MASK);

		RR_STAT_ADD(c, rdma_read_bytes, wr[i].sg_list[0].length);
		q->reads_posted++;
		c->reads_in_flight++;
		if (q->reads_posted == q->reads_total) {
			c->read_head = q->next; /* q is the head: Reads go in queue order */
			if (!c->read_head)
				c->read_tail = NULL;
			q->next = NULL;
			q->queued = false;
		}
	}
}

/* Event thread: start as many queued Reads as the window allows, in order.
 * Called at every wake-up, where usually no Read waits: that test alone.
 * While a poll of the CQ is being handled, the Reads its calls queue wait
 * for the end of it, to go out together (rr_conn_poll_cq). */
void rr_read_pump(struct rr_conn *c)
{
	if (c->read_head && !c->reads_held)
		pump_queued(c);
}

/* @bp's waiters, oldest first, until one is left waiting: the pool is
 * short again (or its window is full). Each pass takes sinks or a waiter
 * off the queue, so it ends. */
void rr_read_serve_waiters(struct rr_bigpool *bp)
{
	struct rr_conn *c;

	while ((c = first_waiter(bp))) {
		rr_read_pump(c);
		if (bp->wait_head == c)
			break;
	}
}

#define RR_READ_BATCH 16

/*
 * Build up to RR_READ_BATCH Reads from the queue, in order and within the
 * window, then post them as one chain: one doorbell. A call leaves the queue
 * once all its Reads are posted; the counts move only for Reads the
 * provider took, so after a failed post the close path finds every call
 * where it is (queued, or waiting for its flushes).
 */
static __attribute__((noinline)) void pump_queued(struct rr_conn *c)
{
	bool starved = false;

	while (c->read_head && c->state != RR_CONN_CLOSING) {
		struct fab_send_wr wr[RR_READ_BATCH], *bad;
		struct fab_sge sge[RR_READ_BATCH];
		struct rr_call_ctx *ctx = c->read_head;
		uint32_t room = c->ord - c->reads_in_flight, k = ctx->reads_posted;
		struct rr_rw_ctx rw;
		unsigned int posted;
		int ret;

		rr_rw_init(&rw, wr, RR_READ_BATCH, sge, RR_READ_BATCH);
		while (ctx && rw.nwr < RR_READ_BATCH && rw.nwr < room) {
			if (k == ctx->reads_posted && !alloc_sinks(ctx)) {
				starved = true;
				break;
			}
			if (!rr_rw_read_seg(&rw, ctx->pcl, k, ctx->sink, ctx->sink_lkey,
					    (uintptr_t)ctx | RR_WRID_READ))
				break; /* cannot happen: one SGE per Read, within the batch */
			if (++k == ctx->reads_total) {
				ctx = ctx->next;
				k = ctx ? ctx->reads_posted : 0;
			}
		}
		if (rw.nwr == 0)
			break; /* the window is full, or the head waits for buffers */
		ret = rr_rw_post(c, &wr[0], &bad, "posting an RDMA Read failed");
		posted = !ret ? rw.nwr : bad ? (unsigned int)(bad - wr) : 0;
		RR_STAT_ADD(c, read_posts, 1);
		read_posted(c, wr, posted);
		if (ret)
			return;
		if (starved || rw.nwr < RR_READ_BATCH)
			break; /* out of buffers, the window full, or the queue empty */
	}
	if (starved)
		c->evt->reads_starved = true; /* retried at the next wake-up */
}

static void add_iov(struct rr_call_ctx *ctx, const void *base, size_t len)
{
	if (len == 0)
		return;
	ctx->call.iov[ctx->call.iovcnt].iov_base = (void *)base;
	ctx->call.iov[ctx->call.iovcnt].iov_len = len;
	ctx->call.iovcnt++;
}

/*
 * Splice the chunks into the message: a chunk at XDR position P stands for
 * roundup(len) bytes at P of the whole Call, so the inline bytes before it
 * are [cursor, P - inserted). For a Long Call the Position-Zero chunk plays
 * the part of the inline message. The inline stream carries no XDR pad for
 * a chunk; a zero pad is supplied when the chunk length is unaligned.
 */
static int assemble(struct rr_call_ctx *ctx)
{
	const struct rr_pcl *p = ctx->pcl;
	const uint8_t *base;
	uint64_t base_len, cursor = 0, inserted = 0;
	unsigned int first;

	ctx->call.iovcnt = 0;
	ctx->call.nchunk_data = 0;
	if (p->proc == RR_PROC_NOMSG) {
		base = ctx->sink[0];
		base_len = p->read[0].length;
		first = 1;
	} else {
		base = ctx->buf + p->hdr_len;
		base_len = ctx->recv_len - p->hdr_len;
		first = 0;
	}
	for (unsigned int i = first; i < p->n_read; i++) {
		const struct rr_chunk *ch = &p->read[i];
		uint64_t ipos = ch->position - inserted;

		if (ch->position < inserted || ipos < cursor || ipos > base_len)
			return -EINVAL;
		add_iov(ctx, base + cursor, ipos - cursor);
		add_iov(ctx, ctx->sink[i], ch->length);
		ctx->call.chunk_data[ctx->call.nchunk_data++] =
			(struct iovec){.iov_base = ctx->sink[i], .iov_len = ch->length};
		add_iov(ctx, zero_pad, rr_xdr_roundup(ch->length) - ch->length);
		inserted += rr_xdr_roundup(ch->length);
		cursor = ipos;
	}
	add_iov(ctx, base + cursor, base_len - cursor);
	return 0;
}

void rr_read_complete(struct rr_conn *c, const struct fab_wc *wc)
{
	struct rr_call_ctx *ctx = (struct rr_call_ctx *)(uintptr_t)(wc->wr_id & ~(uint64_t)RR_WRID_MASK);

	c->reads_in_flight--;
	ctx->reads_done++;
	if (wc->status != FAB_WC_SUCCESS) {
		ctx->read_failed = true;
		/* The RPC is lost; tell the client by closing, as the Linux
		 * server does (docs/linux-client-wire.md). */
		rr_conn_close(c, wc->status == FAB_WC_WR_FLUSH_ERR ? "RDMA Read flushed (QP in error)"
								    : "RDMA Read failed");
	}
	if (ctx->read_failed || c->state == RR_CONN_CLOSING) {
		if (!ctx->queued && ctx->reads_done == ctx->reads_posted)
			rr_call_free(ctx);
		return;
	}
	if (ctx->reads_done == ctx->reads_total) {
		for (unsigned int i = 0; c->tagged_sinks && i < ctx->nsinks; i++)
			rr_sink_unexpose(ctx, i);
		if (assemble(ctx)) {
			/* the sinks go back now, the receive with the answer */
			rr_call_put_sinks(ctx);
			atomic_store_explicit(&ctx->holds, 1, memory_order_relaxed);
			rr_reply_error(ctx, RR_ACT_ERR_CHUNK);
		} else {
			rr_call_dispatch(ctx);
		}
	}
	rr_read_pump(c);
}
