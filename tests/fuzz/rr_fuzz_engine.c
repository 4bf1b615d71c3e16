// SPDX-License-Identifier: MIT
/*
 * rr_fuzz_engine.c - the transport engine's chunk-list consumers under a
 * fuzzer: received messages go through the production receive path
 * (rr_recv_complete decodes them with rr_hdr_decode_call), Read chunks are
 * pulled (rr_read.c) and the Call assembled, Replies are planned and emitted
 * (rr_reply.c, rr_rw.c, rr_send.c), all on a RECORDING fabric: a fab_ops table whose posts are
 * checked and carried out against a simulated client instead of a network.
 * The fabric is rr_fuzz_fabric.c, the client and the RFC 8166 model
 * rr_fuzz_client.c; this file is the upper layer and the driver.
 *
 * The server is created once and its event thread never started: the
 * fuzzer's thread plays it (and, for a Reply "from another thread", steps
 * out of the part). A connection is kept while inputs ask for the same
 * connection parameters and must be as new between inputs; after a fault,
 * or for other parameters, it is closed and reaped, and must give back
 * everything it held.
 *
 * Input (all lengths big-endian):
 *   [knobs:1] [fault:1] CALL: [nmsgs:1]   then per message [len:2] bytes
 *   REPLY only: [reply_len:2] [layout:1] [nspans:1] nspans x ([chunk:1]
 *   [offset:2] [length:2]); the rest is the data pool (Read data, Reply bytes).
 *   A span's chunk byte with bit 7 set puts its offset at 2^64 - 1 - offset.
 *   knobs: bits 0-2 ord - 1; 3-4 completions per poll (1, 2, 3, all);
 *          5 reply after the poll loop instead of inside the upper call;
 *          6 the client offers Send With Invalidate; 7 client receives 1024
 *          bytes (else 4096). fault: bit 7 fails send-queue WR (fault & 63)
 *          with a remote access error; bit 6 (CALL) releases without a Reply;
 *          bit 5 Replies (and releases) come from "another thread", through
 *          the hand-off to the event thread.
 *   layout: bits 0-1 iovecs - 1; bit 2 the Reply lies in a registered region;
 *   nspans: bits 0-4 spans (max 16), bit 7 the plan says undeliverable.
 *
 * What is checked, independently of the engine (a header parser written
 * here from RFC 8166 section 4.2, and the section 3.5 rules):
 *   - every RDMA Read names exactly one Read segment of its call, once, and
 *     lands in registered memory; every local SGE lies in a registered MR
 *     under its lkey; the send queue never holds more than max_send_wr;
 *   - the assembled Call is exactly the bytes section 3.5.3 puts there (each
 *     Read chunk at its XDR position, zero pad to 4), each iovec in the
 *     receive buffer's message bytes, in this call's Read sinks, or a zero
 *     pad; chunk_data is each chunk's data; an invalid splice gets ERR_CHUNK;
 *   - every RDMA Write lies inside one segment of its call's Write list or
 *     Reply chunk, nothing lands past an echoed length, echoes keep handles,
 *     offsets and segment counts, Write bytes = payload + Reply-chunk bytes
 *     and match the rdma_write_bytes counter;
 *   - the Reply is RDMA_MSG with the inline remainder exactly once, RDMA_NOMSG
 *     with it in the Reply chunk, or ERR_CHUNK, exactly as the inline
 *     threshold, the Reply chunk and the plan say; each payload is in its
 *     Write chunk; Send With Invalidate only when offered, of the call's rkey;
 *   - after each input the connection is as new (every receive context free
 *     or posted with no sink, every send context back, one reference, nothing
 *     queued, the send queue empty) or, closed and reaped, freed with every
 *     MR of its own; every big buffer is free; each Reply's done callback ran
 *     exactly once; each check is a second of the pools' clock, and once
 *     the connection is gone RR_SINK_IDLE_S more leave no sink slab mapped
 *     (so the next input grows the pool again from nothing).
 *
 * The big-buffer check (big_all_free) is the one place that reads struct
 * rr_bigpool's layout (rr_internal.h).
 */
#include <string.h>
#include <sys/eventfd.h>

#include "rr_fuzz_int.h"

struct rrf_state F;
struct rr_server *srv;
bool verbose;
uint8_t *region;
unsigned int base_mrs;

/* ---- the upper layer ---- */

static void on_done(void *arg)
{
	struct msg *m = arg;

	CHECK(++m->done_calls == 1);
}

static void do_reply(struct msg *m)
{
	struct rr_evt *self = rr_this_event_thread;

	m->replied = true;
	/* a worker thread's Reply: handed to the event thread (rr_reply's
	 * deferred path, built and posted in one batch at the next wake-up) */
	if (F.offthread)
		rr_this_event_thread = NULL;
	if (F.mode == RRF_CALL && F.release_only) {
		m->released = true;
		rr_call_release(&m->ctx->call);
	} else if (F.mode == RRF_CALL) {
		rrf_expect_reply(m, NULL, false);
		CHECK(rr_reply(&m->ctx->call, m->iov, m->iovcnt, NULL, on_done, m) == 0 ||
		      m->ctx->conn->state == RR_CONN_CLOSING);
	} else {
		rrf_expect_reply(m, &m->plan, true);
		rr_reply(&m->ctx->call, m->iov, m->iovcnt, &m->plan, on_done, m);
	}
	rr_this_event_thread = self;
}

static void up_call(void *arg, struct rr_call *call)
{
	struct msg *m = rrf_msg_of_ctx(call);

	(void)arg;
	CHECK(m != NULL && !m->dispatched);
	m->dispatched = true;
	rrf_check_call(m, call);
	if (verbose)
		fprintf(stderr, "rrf: Call xid %08x: %d iovecs, %zu bytes, %d chunk data\n",
			call->xid, call->iovcnt, call->len, call->nchunk_data);
	if (!F.reply_later)
		do_reply(m);
}

static void up_not_delivered(void *arg, struct rr_conn *conn, uint32_t xid, void *reply_arg)
{
	struct msg *m = reply_arg;

	(void)arg, (void)conn;
	CHECK(m != NULL && m->dispatched && m->xid == xid && !m->not_delivered);
	CHECK(m->done_calls == 0);
	m->not_delivered = true;
}

/* ---- driving one input ---- */

static void quiet_log(const char *line)
{
	(void)line;
}

static void setup_once(void)
{
	struct rr_config cfg;
	struct rr_upper_ops ops = {
	    .call = up_call,
	    .reply_not_delivered = up_not_delivered,
	};

	verbose = getenv("RRF_VERBOSE") != NULL;
	if (!verbose)
		rr_set_log_sink(quiet_log);
	F.fab.ops = &rrf_ops;
	F.chan.fab = F.lis.fab = F.pd.fab = &F.fab;
	F.chan.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(F.chan.fd >= 0);
	rr_config_default(&cfg);
	cfg.credits = 8;
	cfg.bc_credits = 1;
	cfg.recv_batch = 2;
	cfg.inline_size = RRF_INLINE;
	cfg.limits.max_chunk_bytes = RRF_MAX_CHUNK_BYTES;
	cfg.event_threads = 1; /* this thread plays the one */
	CHECK(rr_server_create(&F.fab, "fuzz", &cfg, &ops, NULL, &srv) == 0);
	region = aligned_alloc(4096, RRF_REGION_LEN);
	CHECK(region != NULL);
	CHECK(rr_server_add_region(srv, region, RRF_REGION_LEN) == 0);
	/* No event thread: this one plays it (rr_on_conn_thread), a wake-up
	 * is never written, and the driver does the wake-up's work. */
	srv->started = true;
	rr_this_event_thread = &srv->evt[0];
	atomic_store(&srv->evt[0].kick_pending, true);
}

struct in {
	const uint8_t *p;
	size_t n;
};

static unsigned int in8(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static unsigned int in16(struct in *in)
{
	unsigned int hi = in8(in);

	return hi << 8 | in8(in);
}

/*
 * Every Reply context of a send pool is back on its free list, or on its
 * way there; none twice. Returns its registrations (one per chunk).
 */
static unsigned int sendpool_all_free(const struct rr_sendpool *sp)
{
	unsigned int regs = 0;
	uint32_t made = 0, n = 0, nfree;

	if (!sp)
		return 0;
	for (const struct rr_send_chunk *ch = sp->chunks; ch; ch = ch->next, regs++)
		made += ch->n;
	for (const struct rr_send_ctx *x = sp->free; x; x = x->next_free)
		CHECK(++n <= made); /* a cycle: a context given back twice */
	nfree = n;
	/* Contexts a freed connection left (unsignalled Sends retired with
	 * its QP) wait for the pool's thread on the returned stack: free too,
	 * spare once taken. */
	for (const struct rr_handoff *h = atomic_load(&sp->returned); h; h = h->next)
		CHECK(++n <= made);
	/* all free: every joined connection's reserve, the rest spare */
	CHECK(n == made);
	CHECK(sp->spare + (n - nfree) + RR_SEND_RESERVE * sp->nconns == made);
	CHECK(!sp->wait_head);
	return regs;
}

/*
 * Every big buffer (Read sinks, bounce buffers) is free: each free chain of
 * the pool walked, no slot twice, none in a slab given back; the slabs
 * mapped are those counted, the last index in use mapped. Returns the
 * pool's registrations. The one place that reads struct rr_bigpool's
 * layout (rr_internal.h).
 */
static unsigned int big_all_free(void)
{
	unsigned int regs = 0;

	for (unsigned int i = 0; i < srv->nbigpools[0]; i++) {
		const struct rr_bigpool *bp = srv->bigpools[0][i];

		CHECK(atomic_load(&bp->shared_used) == 0);
		for (unsigned int c = 0; c < bp->nclass; c++) {
			const struct rr_sink_class *k = &bp->cls[c];
			uint32_t n = 0, mapped = 0;

			for (uint32_t top = k->free_top; top; top = k->next[top - 1]) {
				CHECK(++n <= k->n); /* a cycle: a buffer given back twice */
				CHECK(k->slab[(top - 1) / k->per_slab].mem != NULL);
			}
			for (uint32_t top = atomic_load(&k->returned); top; top = k->next[top - 1])
				CHECK(++n <= k->n);
			CHECK(n == k->n);
			for (uint32_t s = 0; s < k->nslab; s++)
				mapped += k->slab[s].mem != NULL;
			CHECK(mapped * k->per_slab == k->n);
			CHECK(!k->nslab || k->slab[k->nslab - 1].mem);
			regs += mapped; /* one registration per slab */
		}
		regs += sendpool_all_free(bp->sends);
	}
	return regs;
}

/* The event thread's wake-up work (rr_evt.c handle_kick). */
static void kick_work(struct rr_conn *c)
{
	for (struct rr_handoff *h = rr_handoff_take(&srv->evt[0].ready); h;) {
		struct rr_conn *q = RR_CONTAINER_OF(h, struct rr_conn, ready_link);

		h = h->next;
		CHECK(q == c);
		(void)atomic_exchange(&q->ready_queued, false);
		rr_send_run_deferred(q);
		if (q->state != RR_CONN_CLOSING) {
			rr_recv_refill(q);
			rr_read_pump(q);
		}
		rr_conn_put(q);
	}
	rr_send_run_deferred(c);
	if (c->state != RR_CONN_CLOSING) {
		rr_recv_refill(c);
		rr_read_pump(c);
	}
	if (srv->evt[0].reads_starved) {
		srv->evt[0].reads_starved = false;
		if (c->state != RR_CONN_CLOSING)
			rr_read_pump(c);
	}
}

static void deliver(struct rr_conn *c, struct msg *m)
{
	struct rrf_recv rv;
	struct fab_wc wc = {.opcode = FAB_WC_RECV, .conn = (struct fab_conn *)F.conn};

	(void)c;
	if (F.conn->error)
		return;
	/* a client within its grant always finds a receive posted */
	CHECK(F.nrq > 0);
	rv = F.rq[0];
	memmove(&F.rq[0], &F.rq[1], --F.nrq * sizeof(F.rq[0]));
	m->ctx = (struct rr_call_ctx *)(uintptr_t)(rv.wr_id & ~(uint64_t)RR_WRID_MASK);
	m->delivered = true;
	wc.wr_id = rv.wr_id;
	wc.byte_len = (uint32_t)m->len;
	if (m->len > rv.len) {
		wc.status = FAB_WC_LOC_LEN_ERR;
	} else {
		memcpy(rv.addr, m->bytes, m->len);
		wc.status = FAB_WC_SUCCESS;
	}
	rrf_push_cqe(&wc, 0);
}

static void free_msgs(void)
{
	for (unsigned int i = 0; i < F.nmsgs; i++) {
		struct msg *m = &F.msgs[i];

		for (unsigned int k = 0; k < m->nwseg; k++) {
			free(m->wseg[k].mem);
			free(m->wseg[k].written);
		}
		free(m->expect_call);
		free(m->expect_inline);
		if (m->stream < region || m->stream >= region + RRF_REGION_LEN)
			free(m->stream);
	}
	rrf_clear_pending_writes();
}

static void build_reply(struct msg *m, struct in *in)
{
	unsigned int len = in16(in), layout = in8(in), ns = in8(in), parts;
	size_t cut = 0;

	if (len > RRF_MAX_REPLY)
		len = RRF_MAX_REPLY;
	m->plan.deliverable = !(ns & 0x80);
	m->plan.nspans = (uint16_t)((ns & 0x1f) > RR_PCL_MAX_WRITE_CHUNKS ? RR_PCL_MAX_WRITE_CHUNKS
									   : (ns & 0x1f));
	for (unsigned int i = 0; i < m->plan.nspans; i++) {
		unsigned int chunk = in8(in);

		/* bit 7: an offset near 2^64, which offset + length wraps */
		m->plan.spans[i].chunk = (uint16_t)(chunk & 0x7f);
		m->plan.spans[i].offset = in16(in);
		if (chunk & 0x80)
			m->plan.spans[i].offset = UINT64_MAX - m->plan.spans[i].offset;
		m->plan.spans[i].length = in16(in);
	}
	/* the Reply bytes: in a registered region (zero-copy Writes) or not */
	if ((layout & 4) && len <= RRF_REGION_LEN)
		m->stream = region;
	else
		m->stream = malloc(len + 1);
	CHECK(m->stream != NULL);
	m->stream_len = len;
	parts = (layout & 3) + 1;
	for (unsigned int i = 0; i < parts; i++) {
		size_t end = i + 1 == parts ? len : cut + (len - cut) * ((layout >> 3) + 1) / 33;

		m->iov[i].iov_base = m->stream + cut;
		m->iov[i].iov_len = end - cut;
		cut = end;
	}
	m->iovcnt = (int)parts;
}

static void teardown(struct rr_conn *c);

static bool busy(void)
{
	for (unsigned int i = 0; i < F.nmsgs; i++)
		if (F.msgs[i].dispatched && !F.msgs[i].replied)
			return true;
	return F.polled < F.ncqe;
}

/* Drive the engine until every completion is handled and every Call answered. */
static void run(struct rr_conn *c, unsigned int batch)
{
	for (unsigned int round = 0; busy(); round++) {
		CHECK(round < 100000);
		F.limit = F.polled + batch;
		rr_conn_poll_cq(c);
		kick_work(c);
		if (F.reply_later && F.polled == F.ncqe)
			for (unsigned int i = 0; i < F.nmsgs; i++)
				if (F.msgs[i].dispatched && !F.msgs[i].replied)
					do_reply(&F.msgs[i]);
		kick_work(c);
	}
}

/* ord and the client's CM private data of the current connection */
static uint8_t conn_ord, conn_priv[8];

/*
 * The connection for this input: the current one if its parameters match,
 * else a new one, accepted as the Linux client opens one (RFC 8797 private
 * data; initiator_depth = RDMA Reads it serves).
 */
static struct rr_conn *connection(uint8_t ord)
{
	struct fab_cm_event ev = {0};
	struct rr_conn *c;

	ev.private_data_len = 8;
	memcpy(ev.private_data, "\xf6\xab\x0e\x18\x01", 5);
	ev.private_data[5] = F.offer_inv ? 1 : 0;
	ev.private_data[6] = 3;
	ev.private_data[7] = (uint8_t)(F.client_recv / 1024 - 1);
	if (F.conn) {
		c = fab_conn_get_context((struct fab_conn *)F.conn);
		if (ord == conn_ord && !memcmp(conn_priv, ev.private_data, 8))
			return c;
		teardown(c);
	}
	conn_ord = ord;
	memcpy(conn_priv, ev.private_data, 8);
	F.conn = calloc(1, sizeof(*F.conn));
	CHECK(F.conn != NULL);
	F.conn->h.fab = &F.fab;
	F.ncqe = F.polled = F.limit = 0;
	F.nrq = 0;
	F.sq_posted = F.sq_retired = 0;
	ev.type = FAB_CM_CONNECT_REQUEST;
	ev.conn = (struct fab_conn *)F.conn;
	ev.initiator_depth = ord;
	rr_conn_connect_request(srv, &ev);
	c = fab_conn_get_context(ev.conn);
	CHECK(c != NULL && srv->conns == c);
	ev.type = FAB_CM_ESTABLISHED;
	rr_conn_cm_event(c, &ev);
	return c;
}

/* Then a second of the pools' clock, as the event thread's tick runs it
 * (rr_admit.c): slabs free for RR_SINK_IDLE_S of them and send chunks free
 * long enough (at once with no connection joined) are given back, and the
 * next input takes them again. */
static void check_pools(unsigned int conn_mrs)
{
	CHECK(F.nmr == base_mrs + big_all_free() + conn_mrs);
	for (unsigned int i = 0; i < srv->nbigpools[0]; i++) {
		rr_big_tick(srv->bigpools[0][i]);
		if (srv->bigpools[0][i]->sends)
			rr_sendpool_tick(srv->bigpools[0][i]->sends);
	}
}

/* Close and reap: the connection must be freed with everything it held,
 * and its sinks' slabs given back once they have been idle long enough. */
static void teardown(struct rr_conn *c)
{
	rr_conn_close(c, "fuzz: closing");
	F.limit = UINT32_MAX;
	for (int i = 0; i < 16 && srv->conns; i++)
		rr_conn_reap(&srv->evt[0]);
	CHECK(srv->conns == NULL && srv->nconns == 0);
	CHECK(F.conn == NULL && F.cq == NULL);
	check_pools(0);
	for (unsigned int t = 0; t < RR_SINK_IDLE_S; t++)
		check_pools(0);
	for (unsigned int i = 0; i < srv->nbigpools[0]; i++)
		for (unsigned int k = 0; k < srv->bigpools[0][i]->nclass; k++)
			CHECK(srv->bigpools[0][i]->cls[k].n == 0 &&
			      srv->bigpools[0][i]->cls[k].nslab == 0);
	/* no connection joined: the send pool gave every chunk back */
	for (unsigned int i = 0; i < srv->nbigpools[0]; i++)
		CHECK(!srv->bigpools[0][i]->sends || !srv->bigpools[0][i]->sends->chunks);
}

static unsigned int list_len(const struct rr_send_ctx *s)
{
	unsigned int n = 0;

	for (; s; s = s->next_free)
		n++;
	return n;
}

static unsigned int send_chunks(const struct rr_conn *c)
{
	unsigned int n = 0;

	for (const struct rr_send_chunk *ch = c->send_chunks; ch; ch = ch->next)
		n++;
	return n;
}

/*
 * Between inputs the connection must be as new: every receive context free
 * or posted with no sink, every send context back, no reference but the
 * event thread's, nothing queued, the whole send queue free, every big
 * buffer back. Unsignalled Sends are retired by the next signalled
 * completion: an RDMA_ERROR (a header with rdma_vers 2) provides one.
 */
static void idle_check(struct rr_conn *c)
{
	uint32_t posted = 0, nbc = 2 * (srv->cfg.bc_credits ? srv->cfg.bc_credits : 1);

	if (c->quiet_out) {
		static const uint8_t bad_vers[16] = {0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 2, 0, 0, 0, 1};
		struct msg *m = &F.msgs[F.nmsgs++];

		memset(m, 0, sizeof(*m));
		m->bytes = bad_vers;
		m->len = sizeof(bad_vers);
		m->xid = 0xfffffffe;
		F.fault_wr = 0; /* this input's faults are over */
		deliver(c, m);
		run(c, RRF_CQ_MAX);
		CHECK(m->answers == 1 && c->quiet_out == 0);
	}
	CHECK(F.polled == F.ncqe);
	F.ncqe = F.polled = 0;
	CHECK(atomic_load(&c->refs) == 1);
	CHECK(!c->read_head && !c->pend_head && !c->batch_head && c->reads_in_flight == 0);
	CHECK(!atomic_load(&c->rep_stack) && !atomic_load(&c->offthread_sends));
	CHECK(c->sq_avail == c->sq_depth && F.sq_posted == F.sq_retired);
	/* every Reply context taken from the pool is back (big_all_free walks
	 * the pool), every reverse-direction one too, no Reply waiting */
	CHECK(c->sends_held == 0 && !c->sp_waiting && list_len(c->free_bc_sends) == nbc);
	CHECK(c->nsends_bc == nbc && !c->ctx_wait_head);
	for (uint32_t i = 0; i < c->nrecv; i++) {
		const struct rr_call_ctx *x = &c->calls[i];

		CHECK(x->state == RR_CALL_FREE || x->state == RR_CALL_POSTED);
		CHECK(x->nsinks == 0 && !x->has_ref && !x->queued);
		posted += x->state == RR_CALL_POSTED;
	}
	CHECK(posted == c->posted && posted == F.nrq);
	check_pools(1 + send_chunks(c)); /* the connection's receive pool and send chunks */
}

void rrf_run(const uint8_t *data, size_t size, enum rrf_mode mode)
{
	static bool once;
	struct in in = {data, size};
	unsigned int knobs, fault, nmsgs, batch;
	struct rr_stats st, st0;
	struct rr_conn *c;

	if (!once) {
		once = true;
		setup_once();
		base_mrs = F.nmr;
	}
	memset(F.msgs, 0, sizeof(F.msgs[0]) * (mode == RRF_CALL ? RRF_MAX_MSGS : 1));
	F.mode = mode;
	knobs = in8(&in);
	fault = in8(&in);
	nmsgs = mode == RRF_CALL ? in8(&in) % RRF_MAX_MSGS + 1 : 1;
	batch = (knobs >> 3 & 3) == 3 ? RRF_CQ_MAX : (knobs >> 3 & 3) + 1;
	F.reply_later = knobs & 0x20;
	F.offer_inv = knobs & 0x40;
	F.client_recv = knobs & 0x80 ? 1024 : 4096;
	F.fault_wr = fault & 0x80 ? (fault & 63) + 1 : 0;
	F.release_only = mode == RRF_CALL && (fault & 0x40);
	F.offthread = fault & 0x20;
	F.wr_count = 0;
	F.nmsgs = nmsgs;
	for (unsigned int i = 0; i < nmsgs; i++) {
		struct msg *m = &F.msgs[i];
		size_t len = in16(&in);

		if (len > in.n)
			len = in.n;
		m->bytes = in.p;
		m->len = len;
		in.p += len;
		in.n -= len;
	}
	if (mode == RRF_REPLY)
		build_reply(&F.msgs[0], &in);
	F.pool = in.p;
	F.npool = in.n;
	if (mode == RRF_REPLY) {
		struct msg *m = &F.msgs[0];

		/* the Reply's bytes, from the pool */
		for (size_t i = 0; i < m->stream_len; i++)
			m->stream[i] = F.npool ? F.pool[(i * 7u) % F.npool] ^ (uint8_t)(i >> 3)
					       : (uint8_t)i;
	}
	for (unsigned int i = 0; i < nmsgs; i++) {
		struct msg *m = &F.msgs[i];

		/* a copy whose xid is made unique, so each Send names one Call */
		if (mode == RRF_CALL && m->len >= 4) {
			uint8_t *b = malloc(m->len);

			CHECK(b != NULL);
			memcpy(b, m->bytes, m->len);
			b[0] = (uint8_t)((b[0] & 0x3f) | i << 6);
			m->bytes = b;
		}
		rrf_parse_msg(m);
		if (mode == RRF_CALL) {
			m->stream_len = 8;
			m->stream = malloc(8);
			CHECK(m->stream != NULL);
			memcpy(m->stream, "\0\0\0\1reply", 8);
			m->iov[0] = (struct iovec){m->stream, 8};
			m->iovcnt = 1;
		}
	}

	c = connection((uint8_t)((knobs & 7) + 1));
	F.read_bytes = F.write_bytes = 0;
	rr_counters_read(&c->st, &st0);

	for (unsigned int i = 0; i < nmsgs; i++)
		deliver(c, &F.msgs[i]);
	run(c, batch);
	/* quiet: nothing half-done unless the QP failed */
	for (unsigned int i = 0; i < nmsgs; i++) {
		struct msg *m = &F.msgs[i];

		if (!m->delivered || F.conn->error || c->state == RR_CONN_CLOSING)
			continue;
		CHECK(m->ctx->state != RR_CALL_READING); /* a call stuck waiting for Reads */
		if (m->parsed && !m->bc_reply && !m->released)
			CHECK(m->answers == 1); /* every Call gets a Reply or an error */
		if (m->bc_reply)
			CHECK(m->answers == 0 && !m->dispatched);
	}
	rr_counters_read(&c->st, &st);
	if (!F.conn->error && c->state != RR_CONN_CLOSING)
		CHECK(st.rdma_read_bytes - st0.rdma_read_bytes == F.read_bytes &&
		      st.rdma_write_bytes - st0.rdma_write_bytes == F.write_bytes);
	if (F.conn->error || c->state == RR_CONN_CLOSING)
		teardown(c); /* the close path must give everything back */
	else
		idle_check(c);
	for (unsigned int i = 0; i < nmsgs; i++) {
		struct msg *m = &F.msgs[i];

		CHECK(m->done_calls == (m->replied && !m->released ? 1 : 0));
		if (mode == RRF_CALL && m->len >= 4)
			free((void *)m->bytes);
	}
	free_msgs();
}
