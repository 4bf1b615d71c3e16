// SPDX-License-Identifier: MIT
/*
 * rr_read.c - pulling Read chunks (RFC 8166 section 3.5.3). Each chunk is
 * pulled by RDMA Read into one registered sink buffer; at most `ord` Reads
 * are in flight per connection (the depth the client granted at connect).
 * The Call is dispatched only when every Read has completed, and it is
 * presented as iovecs over the receive buffer and the sinks: no copy beyond
 * the RDMA Read itself.
 */
#include <errno.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"
#include "rpcrdma/rr_xdr.h"

static const uint8_t zero_pad[4];

static bool alloc_sinks(struct rr_call_ctx *ctx)
{
	struct rr_conn *c = ctx->conn;

	for (unsigned int i = 0; i < ctx->pcl.n_read; i++) {
		uint64_t regs = 0;

		if (ctx->sink[i])
			continue;
		ctx->sink[i] = rr_big_get(c->big, &ctx->sink_lkey[i], &ctx->sink_slot[i], &regs);
		if (ctx->sink[i] && i >= ctx->nsinks)
			ctx->nsinks = i + 1;
		if (regs)
			RR_STAT_ADD(c, registrations, regs);
		if (!ctx->sink[i])
			return false;
	}
	return true;
}

void rr_read_start(struct rr_call_ctx *ctx)
{
	struct rr_conn *c = ctx->conn;

	RR_STAT_ADD(c, calls_with_read_chunks, 1);
	if (ctx->pcl.proc == RR_PROC_NOMSG)
		RR_STAT_ADD(c, long_calls, 1);
	ctx->state = RR_CALL_READING;
	ctx->reads_total = 0;
	for (unsigned int i = 0; i < ctx->pcl.n_read; i++)
		ctx->reads_total += ctx->pcl.read[i].nsegs;
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

/* Post the Read for the k-th segment (in chunk order) of a call. */
static int post_one_read(struct rr_call_ctx *ctx, uint32_t k)
{
	struct rr_conn *c = ctx->conn;
	const struct rr_pcl *p = &ctx->pcl;
	unsigned int ci = 0;
	uint64_t off = 0;
	const struct rr_segment *seg;
	struct fab_sge sge;
	struct fab_send_wr wr, *bad;

	while (k >= p->read[ci].nsegs) {
		k -= p->read[ci].nsegs;
		ci++;
	}
	for (uint32_t j = 0; j < k; j++)
		off += p->segs[p->read[ci].first + j].length;
	seg = &p->segs[p->read[ci].first + k];

	sge.addr = (uint8_t *)ctx->sink[ci] + off;
	sge.length = seg->length;
	sge.lkey = ctx->sink_lkey[ci];
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)ctx | RR_WRID_READ;
	wr.opcode = FAB_WR_RDMA_READ;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.signaled = true;
	wr.remote_addr = seg->offset;
	wr.rkey = seg->handle;
	RR_STAT_ADD(c, rdma_read_bytes, seg->length);
	return fab_post_send(c->fc, &wr, &bad);
}

static void pump_queued(struct rr_conn *c);

/* Event thread: start as many queued Reads as the window allows, in order.
 * Called at every wake-up, where usually no Read waits: that test alone. */
void rr_read_pump(struct rr_conn *c)
{
	if (c->read_head)
		pump_queued(c);
}

static __attribute__((noinline)) void pump_queued(struct rr_conn *c)
{
	while (c->read_head && c->state != RR_CONN_CLOSING) {
		struct rr_call_ctx *ctx = c->read_head;

		if (!alloc_sinks(ctx)) {
			c->srv->reads_starved = true; /* retried at the next wake-up */
			return;
		}
		while (ctx->reads_posted < ctx->reads_total && c->reads_in_flight < c->ord) {
			int ret;

			ret = post_one_read(ctx, ctx->reads_posted);
			if (ret) {
				rr_conn_close(c, "posting an RDMA Read failed");
				return;
			}
			ctx->reads_posted++;
			c->reads_in_flight++;
		}
		if (ctx->reads_posted < ctx->reads_total)
			return;
		c->read_head = ctx->next;
		if (!c->read_head)
			c->read_tail = NULL;
		ctx->next = NULL;
		ctx->queued = false;
	}
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
	const struct rr_pcl *p = &ctx->pcl;
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
		/* svcrdma: the RPC is lost; tell the client by closing. */
		rr_conn_close(c, wc->status == FAB_WC_WR_FLUSH_ERR ? "RDMA Read flushed (QP in error)"
								    : "RDMA Read failed");
	}
	if (ctx->read_failed || c->state == RR_CONN_CLOSING) {
		if (!ctx->queued && ctx->reads_done == ctx->reads_posted)
			rr_call_free(ctx);
		return;
	}
	if (ctx->reads_done == ctx->reads_total) {
		if (assemble(ctx)) {
			uint32_t xid = ctx->pcl.xid;

			rr_call_free(ctx);
			rr_send_error(c, xid, RR_ACT_ERR_CHUNK);
		} else {
			rr_call_dispatch(ctx);
		}
	}
	rr_read_pump(c);
}
