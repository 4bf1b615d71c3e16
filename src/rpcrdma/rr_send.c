// SPDX-License-Identifier: MIT
/*
 * rr_send.c - the reply path (RFC 8166 sections 3.5.4-3.5.6). A Reply is the
 * upper layer's encoded RPC Reply plus its payload plan:
 *   - each payload span goes by RDMA Write into its Write chunk (exact bytes,
 *     never the XDR pad; the echoed segment lengths say what was written);
 *   - the rest goes inline after the transport header (RDMA_MSG) when it fits
 *     the negotiated inline threshold, else by RDMA Write into the Reply chunk
 *     with an RDMA_NOMSG Send carrying only the header;
 *   - otherwise the Reply cannot be delivered: ERR_CHUNK goes instead and the
 *     upper layer is told (RFC 8267 section 4.5: it retires the session slot).
 * The Writes are chained ahead of one signalled Send on the same QP, so the
 * client sees the data before the Send (RC ordering). A Reply that is the
 * Send alone goes unsignalled when it may (RR_QUIET_SENDS). Send With
 * Invalidate is used when the client allows it and exactly one rkey appears
 * in the call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"
#include "rpcrdma/rr_xdr.h"

#define RR_SGE_PER_WR 16

struct piece {
	const uint8_t *addr;
	uint32_t len;
	uint32_t lkey;
};

#define RR_MAX_PIECES 64

/*
 * Send contexts: replies and error replies are built on the event thread
 * from free_sends, which is its own; reverse-direction calls come from any
 * thread and take theirs from a small reserve under the lock (@bc).
 */
static struct rr_send_ctx *send_ctx_get(struct rr_conn *c, bool bc)
{
	struct rr_send_ctx *s;

	if (bc) {
		pthread_mutex_lock(&c->lock);
		s = c->free_bc_sends;
		if (s)
			c->free_bc_sends = s->next_free;
		pthread_mutex_unlock(&c->lock);
	} else {
		s = c->free_sends;
		if (s)
			c->free_sends = s->next_free;
	}
	if (!s)
		return NULL;
	s->nbounce = 0;
	s->call = NULL;
	s->done = NULL;
	s->done_arg = NULL;
	s->nwr = 0;
	s->next_pending = NULL;
	rr_conn_get(c);
	return s;
}

/* Back on its free list (the reverse direction's is shared: lock). */
static void send_ctx_free(struct rr_conn *c, struct rr_send_ctx *s)
{
	if (s->bc) {
		pthread_mutex_lock(&c->lock);
		s->next_free = c->free_bc_sends;
		c->free_bc_sends = s;
		pthread_mutex_unlock(&c->lock);
	} else {
		s->next_free = c->free_sends;
		c->free_sends = s;
	}
}

/* An unsignalled context is done: retired, or never posted. */
static void quiet_end(struct rr_conn *c, struct rr_send_ctx *s)
{
	s->quiet = false;
	c->quiet_out--;
}

/* Give a send context back: bounce buffers, the caller's memory, the call.
 * Event thread, except a reverse-direction call's (see send_ctx_get). */
static void send_ctx_release(struct rr_send_ctx *s)
{
	struct rr_conn *c = s->conn;

	if (s->quiet) /* never posted: dropped at close, or its post failed */
		quiet_end(c, s);

	for (unsigned int i = 0; i < s->nbounce; i++) {
		rr_big_put(c->big, c, s->bounce_ref[i]);
		rr_big_returned(c->srv);
	}
	s->nbounce = 0;
	if (s->done)
		s->done(s->done_arg);
	if (s->call)
		rr_call_put(s->call);
	send_ctx_free(c, s);
	rr_conn_put(c);
}

static void post_pending(struct rr_conn *c, uint32_t returned);

/* @s at the tail of a list linked through next_pending (pending, batch). */
static void chain_append(struct rr_send_ctx **head, struct rr_send_ctx **tail,
			 struct rr_send_ctx *s)
{
	s->next_pending = NULL;
	if (*tail)
		(*tail)->next_pending = s;
	else
		*head = s;
	*tail = s;
}

/*
 * Event thread: @s is on the send queue, numbered in post order. An
 * unsignalled Send also joins the quiet list and gives its connection
 * reference back now: it holds nothing the connection must wait for (its
 * call and the caller's buffers went at build time), and at a close that
 * finds it already complete no completion would ever return it. Its
 * context and queue slots come back when a later completion retires it, or
 * with the connection.
 */
static void send_posted(struct rr_conn *c, struct rr_send_ctx *s)
{
	s->seq = ++c->post_seq;
	if (!s->quiet)
		return;
	s->next_quiet = NULL;
	if (c->quiet_tail)
		c->quiet_tail->next_quiet = s;
	else
		c->quiet_head = s;
	c->quiet_tail = s;
	rr_conn_put(c); /* the event thread still holds its own */
}

/*
 * Event thread: a Send numbered @seq completed, so every one posted before
 * it has too (a send queue completes in order). Retires the unsignalled
 * ones up to and including @seq; returns the queue slots they held.
 */
static uint32_t retire_quiet(struct rr_conn *c, uint32_t seq)
{
	struct rr_send_ctx *q;
	uint32_t slots = 0;

	while ((q = c->quiet_head) && (int32_t)(q->seq - seq) <= 0) {
		c->quiet_head = q->next_quiet;
		if (!c->quiet_head)
			c->quiet_tail = NULL;
		slots += q->nwr;
		quiet_end(c, q);
		send_ctx_free(c, q);
	}
	return slots;
}

/*
 * Event thread: post one chain, its queue slots taken. False if the provider
 * refused it: its slots are given back and the connection closes; the
 * chain is the caller's to release.
 */
static bool post_chain(struct rr_conn *c, struct rr_send_ctx *s)
{
	struct fab_send_wr *bad;

	c->sq_avail -= s->nwr;
	RR_STAT_ADD(c, send_posts, 1);
	if (fab_post_send(c->fc, &s->wr[0], &bad)) {
		c->sq_avail += s->nwr;
		rr_conn_close(c, "posting a Send failed");
		return false;
	}
	send_posted(c, s);
	return true;
}

/*
 * Post a built chain now, or queue it behind earlier ones until the send
 * queue has room: posting never blocks, so the event thread may reply. The
 * send queue and its pending list are the event thread's: another thread
 * (a reverse-direction call) pushes its chain on a lock-free stack and kicks.
 */
static void post_or_queue(struct rr_conn *c, struct rr_send_ctx *s)
{
	s->wr[s->nwr - 1].next = NULL;
	if (!rr_on_event_thread(c->srv)) {
		rr_conn_get(c); /* once pushed, c may otherwise go at any time */
		rr_handoff_push(&c->offthread_sends, &s->handoff);
		rr_conn_kick(c);
		return;
	}
	if (c->state == RR_CONN_CLOSING) {
		send_ctx_release(s);
		return;
	}
	if (!c->pend_head && c->sq_avail >= s->nwr) {
		if (c->batching) {
			c->sq_avail -= s->nwr;
			chain_append(&c->batch_head, &c->batch_tail, s);
		} else if (!post_chain(c, s)) {
			send_ctx_release(s);
		}
		return;
	}
	chain_append(&c->pend_head, &c->pend_tail, s);
	post_pending(c, 0);
}

/* The loop of post_pending, apart: chains rarely wait for room. */
static __attribute__((noinline)) void post_queued(struct rr_conn *c)
{
	while (c->pend_head && c->sq_avail >= c->pend_head->nwr) {
		struct rr_send_ctx *q = c->pend_head;

		if (!post_chain(c, q))
			return; /* q stays queued: the close releases the queue */
		c->pend_head = q->next_pending;
		if (!c->pend_head)
			c->pend_tail = NULL;
	}
}

/*
 * Event thread: the chains built while batching go to the send queue as one
 * chain - one doorbell (on rxe and siw, one system call) for every Reply
 * handed over in a wake-up. On failure the chains wholly ahead of the
 * failed work request were posted; the rest are given back.
 */
static void post_batch(struct rr_conn *c)
{
	struct rr_send_ctx *s = c->batch_head, *next;
	struct fab_send_wr *bad = NULL;
	bool failed_here = false;
	int ret;

	c->batch_head = c->batch_tail = NULL;
	if (!s)
		return;
	for (struct rr_send_ctx *q = s; q->next_pending; q = q->next_pending)
		q->wr[q->nwr - 1].next = &q->next_pending->wr[0];
	if (c->state == RR_CONN_CLOSING) {
		ret = -ENOTCONN;
	} else {
		RR_STAT_ADD(c, send_posts, 1);
		ret = fab_post_send(c->fc, &s->wr[0], &bad);
		if (ret)
			rr_conn_close(c, "posting a Send failed");
	}
	for (; s; s = next) {
		next = s->next_pending;
		s->wr[s->nwr - 1].next = NULL;
		if (ret && !failed_here)
			failed_here = !bad || (bad >= &s->wr[0] && bad < &s->wr[s->nwr]);
		if (!ret || !failed_here) {
			send_posted(c, s);
		} else {
			c->sq_avail += s->nwr;
			send_ctx_release(s);
		}
	}
}

/* Event thread: give back @returned send-queue slots (a completed chain),
 * then post queued chains while the send queue has room. */
static void post_pending(struct rr_conn *c, uint32_t returned)
{
	if (c->state == RR_CONN_CLOSING)
		return; /* rr_send_drop_pending releases the queue */
	c->sq_avail += returned;
	if (c->pend_head)
		post_queued(c);
}

/* Event thread: chains other threads pushed join the pending queue, oldest
 * first; true if there were any. */
static bool take_offthread_sends(struct rr_conn *c)
{
	struct rr_handoff *h = rr_handoff_take(&c->offthread_sends);

	if (!h)
		return false;
	while (h) {
		struct rr_send_ctx *s = RR_CONTAINER_OF(h, struct rr_send_ctx, handoff);

		h = h->next;
		chain_append(&c->pend_head, &c->pend_tail, s);
	}
	return true;
}

/* Event thread, closing: give back every chain that never got posted. */
void rr_send_drop_pending(struct rr_conn *c)
{
	struct rr_send_ctx *s;

	take_offthread_sends(c);
	s = c->pend_head;
	c->pend_head = c->pend_tail = NULL;
	while (s) {
		struct rr_send_ctx *next = s->next_pending;

		send_ctx_release(s);
		s = next;
	}
}

/* Make room for @nwr work requests and @nsge SGEs before building a chain
 * (growing moves the arrays, so never in the middle of one). */
static bool reserve(struct rr_send_ctx *s, uint32_t nwr, uint32_t nsge)
{
	if (nwr > RR_SEND_MAX_WR)
		nwr = RR_SEND_MAX_WR;
	if (nsge > RR_SEND_MAX_SGE)
		nsge = RR_SEND_MAX_SGE;
	if (nwr > s->max_wr) {
		struct fab_send_wr *w = calloc(nwr, sizeof(*w));

		if (!w)
			return false;
		if (s->wr != s->wr_small)
			free(s->wr);
		s->wr = w;
		s->max_wr = nwr;
	}
	if (nsge > s->max_sge) {
		struct fab_sge *g = calloc(nsge, sizeof(*g));

		if (!g)
			return false;
		if (s->sge != s->sge_small)
			free(s->sge);
		s->sge = g;
		s->max_sge = nsge;
	}
	return true;
}

static struct fab_send_wr *next_wr(struct rr_send_ctx *s)
{
	struct fab_send_wr *wr;

	if (s->nwr >= s->max_wr)
		return NULL;
	wr = &s->wr[s->nwr];
	*wr = (struct fab_send_wr){0};
	if (s->nwr)
		s->wr[s->nwr - 1].next = wr;
	s->nwr++;
	return wr;
}

void rr_send_error(struct rr_conn *c, uint32_t xid, enum rr_hdr_action act)
{
	struct rr_send_ctx *s = send_ctx_get(c, false);
	struct fab_send_wr *wr;
	ssize_t len;

	if (!s) {
		RR_STAT_ADD(c, dropped, 1);
		return;
	}
	if (act == RR_ACT_ERR_VERS) {
		len = rr_hdr_encode_err_vers(s->hdr, c->srv->cfg.inline_size, xid, c->credits);
		RR_STAT_ADD(c, err_vers_sent, 1);
	} else {
		len = rr_hdr_encode_err_chunk(s->hdr, c->srv->cfg.inline_size, xid, c->credits);
		RR_STAT_ADD(c, err_chunk_sent, 1);
	}
	s->sge[0].addr = s->hdr;
	s->sge[0].length = (uint32_t)len;
	s->sge[0].lkey = c->send_pool.mr->lkey;
	wr = next_wr(s);
	wr->wr_id = (uintptr_t)s | RR_WRID_SEND;
	wr->opcode = FAB_WR_SEND; /* error replies are never invalidating */
	wr->sg_list = &s->sge[0];
	wr->num_sge = 1;
	wr->signaled = true;
	post_or_queue(c, s);
}

/* lkey for memory the engine registered, or false. */
static bool lkey_of(struct rr_conn *c, const void *addr, size_t len, uint32_t *lkey)
{
	/* The upper layer's registered payload pools first (same PD only):
	 * that is where READ data lives. */
	for (unsigned int i = 0; i < c->srv->nregions && c->srv->region_pd == c->pd; i++) {
		const struct fab_mr *mr = c->srv->regions[i];
		const uint8_t *a = addr, *b;

		if (!mr)
			continue; /* not registered again after a device removal */
		b = mr->addr;
		if (a >= b && a + len <= b + mr->length) {
			*lkey = mr->lkey;
			return true;
		}
	}
	if (rr_pool_owns(&c->recv_pool, addr, len)) {
		*lkey = c->recv_pool.mr->lkey;
		return true;
	}
	if (rr_pool_owns(&c->send_pool, addr, len)) {
		*lkey = c->send_pool.mr->lkey;
		return true;
	}
	return rr_big_lkey(c->big, addr, len, lkey); /* buffer by buffer: last */
}

/* A byte range of the Reply stream as registered pieces; false when some
 * bytes are in memory we did not register (or too many pieces). */
static bool stream_pieces(struct rr_conn *c, const struct iovec *iov, int iovcnt, uint64_t off,
			  uint64_t len, struct piece *pc, int *npc)
{
	int n = 0;

	for (int i = 0; i < iovcnt && len; i++) {
		uint64_t l = iov[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		uint64_t take = l - off < len ? l - off : len;

		while (take) {
			uint32_t t = take > UINT32_MAX ? UINT32_MAX : (uint32_t)take;

			if (n >= RR_MAX_PIECES)
				return false;
			pc[n].addr = (const uint8_t *)iov[i].iov_base + off;
			pc[n].len = t;
			if (!lkey_of(c, pc[n].addr, t, &pc[n].lkey))
				return false;
			n++;
			off += t;
			take -= t;
			len -= t;
		}
		off = 0;
	}
	*npc = n;
	return len == 0;
}

/* Copy a byte range of the Reply stream out to @dst. */
static void stream_copy(const struct iovec *iov, int iovcnt, uint64_t off, uint64_t len,
			uint8_t *dst)
{
	for (int i = 0; i < iovcnt && len; i++) {
		uint64_t l = iov[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		uint64_t take = l - off < len ? l - off : len;

		memcpy(dst, (const uint8_t *)iov[i].iov_base + off, take);
		dst += take;
		len -= take;
		off = 0;
	}
}

/* A registered bounce buffer of ours, as one piece (length set by the caller). */
static bool bounce_alloc(struct rr_send_ctx *s, uint64_t len, struct piece *pc)
{
	struct rr_conn *c = s->conn;
	uint32_t lkey, ref;
	void *buf;

	if (len > c->big->buf_size || s->nbounce >= RR_PCL_MAX_WRITE_CHUNKS + 1)
		return false;
	/* Sized to @len and charged to this connection: its reserve covers a
	 * full Long Reply whatever other connections hold (rr_internal.h). */
	buf = rr_big_get(c->big, c, len, &lkey, &ref);
	if (!buf)
		return false;
	s->bounce_ref[s->nbounce] = ref;
	s->bounce[s->nbounce++] = buf;
	pc->addr = buf;
	pc->len = (uint32_t)len;
	pc->lkey = lkey;
	return true;
}

/* A bounce buffer holding a copy of a stream range. */
static bool bounce(struct rr_send_ctx *s, const struct iovec *iov, int iovcnt, uint64_t off,
		   uint64_t len, struct piece *pc)
{
	if (!bounce_alloc(s, len, pc))
		return false;
	stream_copy(iov, iovcnt, off, len, (uint8_t *)pc->addr);
	return true;
}

/*
 * RDMA Writes placing the pieces into a chunk's segments in order. A Write
 * targets one segment and gathers up to RR_SGE_PER_WR pieces. Returns false
 * if the chunk is too small or the context runs out of WRs/SGEs.
 */
static bool emit_writes(struct rr_send_ctx *s, const struct rr_pcl *pcl, const struct rr_chunk *ch,
			const struct piece *pc, int npc, unsigned int *nsge)
{
	unsigned int si = 0;
	uint32_t so = 0;
	int pi = 0;
	uint32_t po = 0;

	while (pi < npc) {
		const struct rr_segment *seg;
		struct fab_send_wr *wr;

		if (si >= ch->nsegs)
			return false;
		seg = &pcl->segs[ch->first + si];
		wr = next_wr(s);
		if (!wr)
			return false;
		wr->wr_id = RR_WRID_WRITE;
		wr->opcode = FAB_WR_RDMA_WRITE;
		wr->remote_addr = seg->offset + so;
		wr->rkey = seg->handle;
		wr->sg_list = &s->sge[*nsge];
		wr->num_sge = 0;
		while (pi < npc && so < seg->length && wr->num_sge < RR_SGE_PER_WR) {
			uint32_t take = pc[pi].len - po;

			if (take > seg->length - so)
				take = seg->length - so;
			if (*nsge >= s->max_sge)
				return false;
			s->sge[*nsge].addr = (void *)(pc[pi].addr + po);
			s->sge[*nsge].length = take;
			s->sge[*nsge].lkey = pc[pi].lkey;
			(*nsge)++;
			wr->num_sge++;
			so += take;
			po += take;
			if (po == pc[pi].len) {
				pi++;
				po = 0;
			}
		}
		if (so == seg->length) {
			si++;
			so = 0;
		}
	}
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

/* Bytes of the stream that stay out of the Write chunks: payload plus its
 * XDR pad (clipped to the stream) are skipped. */
struct inline_range {
	uint64_t off, len;
};

static int inline_ranges(const struct rr_reply_plan *plan, uint64_t total,
			 struct inline_range *r, uint64_t *inline_len)
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

static void not_delivered(struct rr_conn *c, struct rr_call_ctx *ctx, rr_reply_done_fn done,
			  void *done_arg)
{
	uint32_t xid = ctx->pcl.xid;

	RR_STAT_ADD(c, not_delivered, 1);
	/*
	 * Tell the upper layer first: the client may retry the moment it sees
	 * ERR_CHUNK, and that retry must find the NFSv4.1 slot already marked
	 * uncached (RFC 8267 section 4.5), or ganesha replays the reply that
	 * could not be delivered and the retry fails with ERR_CHUNK again.
	 */
	if (c->srv->ops.reply_not_delivered)
		c->srv->ops.reply_not_delivered(c->srv->ctx, c, xid, done_arg);
	rr_send_error(c, xid, RR_ACT_ERR_CHUNK);
	if (done)
		done(done_arg);
	rr_call_put(ctx);
}

static const struct rr_reply_plan no_spans = {.nspans = 0, .deliverable = true};

/* The payload spans by RDMA Write into their Write chunks, zero-copy when
 * registered; bytes written per chunk into @written, in all @write_bytes. */
static bool write_payloads(struct rr_send_ctx *s, const struct rr_pcl *p, const struct iovec *iov,
			   int iovcnt, const struct rr_reply_plan *plan, uint64_t *written,
			   uint64_t *write_bytes, unsigned int *nsge)
{
	struct rr_conn *c = s->conn;

	for (unsigned int i = 0; i < plan->nspans; i++) {
		const struct rr_payload_span *sp = &plan->spans[i];
		struct piece pc[RR_MAX_PIECES];
		int npc = 0;

		if (sp->length == 0)
			continue;
		if (!stream_pieces(c, iov, iovcnt, sp->offset, sp->length, pc, &npc)) {
			if (!bounce(s, iov, iovcnt, sp->offset, sp->length, &pc[0]))
				return false;
			npc = 1;
			RR_STAT_ADD(c, payload_copies, sp->length);
		}
		if (!emit_writes(s, p, &p->write[sp->chunk], pc, npc, nsge))
			return false;
		written[sp->chunk] = sp->length;
		*write_bytes += sp->length;
	}
	return true;
}

static int reply_now(struct rr_call *call, const struct iovec *iov, int iovcnt,
		     const struct rr_reply_plan *plan, rr_reply_done_fn done, void *done_arg)
{
	struct rr_call_ctx *ctx = (struct rr_call_ctx *)call;
	struct rr_conn *c = ctx->conn;
	const struct rr_pcl *p = &ctx->pcl;
	struct inline_range ranges[RR_PCL_MAX_WRITE_CHUNKS + 1];
	uint64_t written[RR_PCL_MAX_WRITE_CHUNKS]; /* bytes per Write chunk, [0, n_write) */
	uint64_t total = 0, inline_len, write_bytes = 0;
	uint32_t max_inline, rkey;
	unsigned int nsge = 1; /* sge[0] is the Send's */
	struct rr_send_ctx *s;
	struct fab_send_wr *send;
	ssize_t hdr_len;
	int nranges;
	bool use_reply_chunk, quiet;

	if (!plan)
		plan = &no_spans;
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	for (unsigned int i = 0; i < p->n_write && i < RR_PCL_MAX_WRITE_CHUNKS; i++)
		written[i] = 0;

	if (c->state == RR_CONN_CLOSING) {
		if (done)
			done(done_arg);
		rr_call_put(ctx);
		return -ENOTCONN;
	}
	if (!plan->deliverable || !plan_valid(p, plan, total)) {
		not_delivered(c, ctx, done, done_arg);
		return 0;
	}
	s = send_ctx_get(c, false);
	if (!s) {
		if (done)
			done(done_arg);
		rr_call_put(ctx);
		rr_conn_close(c, "no send context");
		return -ENOMEM;
	}

	/* Worst case: every segment used gets its own Write, and a span's
	 * pieces (at most RR_MAX_PIECES) split a few more. */
	if (plan->nspans || p->has_reply) {
		uint32_t segs = p->has_reply ? p->reply.nsegs : 0;

		for (unsigned int i = 0; i < plan->nspans; i++)
			segs += p->write[plan->spans[i].chunk].nsegs;
		if (!reserve(s, segs + 8 * plan->nspans + 4,
			     segs + RR_MAX_PIECES * plan->nspans + 8))
			goto undeliverable;
	}
	if (plan->nspans &&
	    !write_payloads(s, p, iov, iovcnt, plan, written, &write_bytes, &nsge))
		goto undeliverable;

	nranges = inline_ranges(plan, total, ranges, &inline_len);
	max_inline = c->inl.max_send < c->srv->cfg.inline_size ? c->inl.max_send
							       : c->srv->cfg.inline_size;
	hdr_len = rr_hdr_encode_reply(s->hdr, c->srv->cfg.inline_size, p, c->credits, RR_PROC_MSG,
				      written, 0);
	if (hdr_len < 0)
		goto undeliverable;
	use_reply_chunk = (uint64_t)hdr_len + inline_len > max_inline;
	if (use_reply_chunk) {
		struct piece pc;

		/* Long Reply: everything but the payloads goes to the Reply chunk. */
		if (!p->has_reply || inline_len > p->reply.length)
			goto undeliverable;
		if (!bounce_alloc(s, inline_len, &pc))
			goto undeliverable;
		{
			uint8_t *dst = (uint8_t *)pc.addr;

			for (int i = 0; i < nranges; i++) {
				stream_copy(iov, iovcnt, ranges[i].off, ranges[i].len, dst);
				dst += ranges[i].len;
			}
		}
		if (inline_len && !emit_writes(s, p, &p->reply, &pc, 1, &nsge))
			goto undeliverable;
		hdr_len = rr_hdr_encode_reply(s->hdr, c->srv->cfg.inline_size, p, c->credits,
					      RR_PROC_NOMSG, written, inline_len);
		if (hdr_len < 0 || (uint64_t)hdr_len > max_inline)
			goto undeliverable;
		write_bytes += inline_len;
	} else {
		uint8_t *dst = s->hdr + hdr_len;

		for (int i = 0; i < nranges; i++) {
			stream_copy(iov, iovcnt, ranges[i].off, ranges[i].len, dst);
			dst += ranges[i].len;
		}
	}

	s->sge[0].addr = s->hdr;
	s->sge[0].length = (uint32_t)hdr_len + (use_reply_chunk ? 0 : (uint32_t)inline_len);
	s->sge[0].lkey = c->send_pool.mr->lkey;
	/* The Send alone (no Writes): it carries copies, see RR_QUIET_SENDS. */
	quiet = s->nwr == 0 && c->quiet_out < RR_QUIET_SENDS;
	send = next_wr(s);
	if (!send)
		goto undeliverable;
	send->wr_id = (uintptr_t)s | RR_WRID_SEND;
	send->opcode = FAB_WR_SEND;
	send->sg_list = &s->sge[0];
	send->num_sge = 1;
	send->signaled = !quiet;
	if (c->send_w_inv && single_rkey(p, &rkey)) {
		send->opcode = FAB_WR_SEND_WITH_INV;
		send->invalidate_rkey = rkey;
		RR_STAT_ADD(c, send_w_inv, 1);
	}

	if (use_reply_chunk)
		RR_STAT_ADD(c, replies_reply_chunk, 1);
	else
		RR_STAT_ADD(c, replies_inline, 1);
	if (plan->nspans)
		RR_STAT_ADD(c, replies_write_chunk, 1);
	RR_STAT_ADD(c, rdma_write_bytes, write_bytes);

	ctx->state = RR_CALL_REPLYING;
	if (quiet) {
		/* Everything the Send needs is in s->hdr: the call's receive
		 * buffer and the caller's memory are free before it goes. */
		s->quiet = true;
		c->quiet_out++;
		RR_STAT_ADD(c, sends_unsignalled, 1);
		if (done)
			done(done_arg);
		rr_call_put(ctx);
	} else {
		s->call = ctx;
		s->done = done;
		s->done_arg = done_arg;
	}
	post_or_queue(c, s);
	return 0;

undeliverable:
	/* Nothing was posted: drop the chain, answer ERR_CHUNK instead. */
	s->nwr = 0;
	send_ctx_release(s);
	not_delivered(c, ctx, done, done_arg);
	return 0;
}

int rr_reply(struct rr_call *call, const struct iovec *iov, int iovcnt,
	     const struct rr_reply_plan *plan, rr_reply_done_fn done, void *done_arg)
{
	struct rr_call_ctx *ctx = (struct rr_call_ctx *)call;
	struct rr_conn *c = ctx->conn;

	if (rr_on_event_thread(c->srv))
		return reply_now(call, iov, iovcnt, plan, done, done_arg);
	/*
	 * Another thread: keep the description (not the bytes, which stay
	 * the caller's until done) and let the event thread build and post
	 * it - no other thread may post (rr_on_event_thread says why).
	 */
	if (!plan)
		plan = &no_spans;
	if (iovcnt < 0 || iovcnt > RR_REPLY_MAX_IOV || plan->nspans > RR_PCL_MAX_WRITE_CHUNKS) {
		ctx->rep_iovcnt = 0;
		ctx->rep_plan.nspans = 0;
		ctx->rep_plan.deliverable = false;
	} else {
		/* A few entries each: element copies, not memcpy calls. */
		for (int i = 0; i < iovcnt; i++)
			ctx->rep_iov[i] = iov[i];
		ctx->rep_iovcnt = iovcnt;
		/* the spans in use only: a plan has room for every Write chunk */
		ctx->rep_plan.nspans = plan->nspans;
		ctx->rep_plan.deliverable = plan->deliverable;
		for (unsigned int i = 0; i < plan->nspans; i++)
			ctx->rep_plan.spans[i] = plan->spans[i];
	}
	ctx->rep_done = done;
	ctx->rep_arg = done_arg;
	/* Once pushed, the event thread may send it and release the call's
	 * reference: the kick's own keeps the connection until it is queued. */
	rr_conn_get(c);
	rr_handoff_push(&c->rep_stack, &ctx->rep_link);
	rr_conn_kick(c);
	return 0;
}

void rr_send_run_deferred(struct rr_conn *c)
{
	struct rr_handoff *h = rr_handoff_take(&c->rep_stack);

	/* oldest first: Replies go in the order they were handed in, in one
	 * post (post_batch) */
	if (h) {
		c->batching = true;
		while (h) {
			struct rr_call_ctx *q = RR_CONTAINER_OF(h, struct rr_call_ctx, rep_link);

			h = h->next;
			reply_now(&q->call, q->rep_iov, q->rep_iovcnt, &q->rep_plan, q->rep_done,
				  q->rep_arg);
		}
		c->batching = false;
		post_batch(c);
	}
	/* Chains other threads built (reverse-direction calls) go now, or
	 * are given back if the connection is closing; the event thread's own
	 * queued chains go as Sends complete. */
	if (take_offthread_sends(c)) {
		if (c->state == RR_CONN_CLOSING)
			rr_send_drop_pending(c);
		else
			post_pending(c, 0);
	}
}

void rr_send_complete(struct rr_conn *c, const struct fab_wc *wc)
{
	struct rr_send_ctx *s;
	bool quiet;

	if (wc->status != FAB_WC_SUCCESS) {
		if (wc->status == FAB_WC_RNR_RETRY_EXC_ERR)
			RR_STAT_ADD(c, rnr_disconnects, 1);
		rr_conn_close(c, wc->status == FAB_WC_REM_ACCESS_ERR ? "RDMA Write/Send: remote access error"
				 : wc->status == FAB_WC_RNR_RETRY_EXC_ERR  ? "client had no receive posted (RNR)"
				 : wc->status == FAB_WC_WR_FLUSH_ERR	    ? "Send flushed (QP in error)"
									    : "Send failed");
	}
	/* A failed unsignalled Write carries no context; its chain's Send
	 * completes (flushed) and releases everything. */
	if ((wc->wr_id & RR_WRID_MASK) != RR_WRID_SEND)
		return;
	s = (struct rr_send_ctx *)(uintptr_t)(wc->wr_id & ~(uint64_t)RR_WRID_MASK);

	/* A flushed unsignalled Send (they complete only in error) is retired
	 * with those before it; queued chains go out in order as room appears. */
	quiet = s->quiet;
	post_pending(c, retire_quiet(c, s->seq) + (quiet ? 0 : s->nwr));
	if (!quiet)
		send_ctx_release(s);
}

int rr_conn_bc_send(struct rr_conn *c, uint32_t xid, const struct iovec *iov, int iovcnt)
{
	struct rr_send_ctx *s;
	struct fab_send_wr *wr;
	uint64_t len = 0;
	uint32_t max = rr_conn_max_inline_send(c);
	uint8_t *dst;
	struct rr_pcl hdr = {0};
	ssize_t hdr_len;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	/* RFC 8167 section 5: callbacks are inline only. */
	if (len + RR_HDR_MSG_MIN_LEN > max)
		return -EMSGSIZE;
	pthread_mutex_lock(&c->lock);
	if (c->state == RR_CONN_CLOSING) {
		pthread_mutex_unlock(&c->lock);
		return -ENOTCONN;
	}
	if (c->bc_outstanding >= c->bc_grant) {
		pthread_mutex_unlock(&c->lock);
		return -EAGAIN;
	}
	c->bc_outstanding++;
	pthread_mutex_unlock(&c->lock);

	s = send_ctx_get(c, true);
	if (!s) {
		pthread_mutex_lock(&c->lock);
		c->bc_outstanding--;
		pthread_mutex_unlock(&c->lock);
		return -ENOMEM;
	}
	/* rdma_credit of a call asks for credits: we ask for our provisioning. */
	hdr.xid = xid;
	hdr.vers = RR_VERSION;
	hdr.credits = c->srv->cfg.bc_credits;
	hdr.proc = RR_PROC_MSG;
	hdr_len = rr_hdr_encode_call(s->hdr, c->srv->cfg.inline_size, &hdr);
	dst = s->hdr + hdr_len;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
	s->sge[0].addr = s->hdr;
	s->sge[0].length = (uint32_t)(hdr_len + len);
	s->sge[0].lkey = c->send_pool.mr->lkey;
	wr = next_wr(s);
	wr->wr_id = (uintptr_t)s | RR_WRID_SEND;
	wr->opcode = FAB_WR_SEND;
	wr->sg_list = &s->sge[0];
	wr->num_sge = 1;
	wr->signaled = true;
	RR_STAT_ADD(c, bc_calls, 1);
	post_or_queue(c, s);
	return 0;
}
