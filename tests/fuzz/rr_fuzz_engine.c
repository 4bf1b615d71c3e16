// SPDX-License-Identifier: MIT
/*
 * rr_fuzz_engine.c - the transport engine's chunk-list consumers under a
 * fuzzer: received messages go through the production receive path
 * (rr_recv_complete decodes them with rr_hdr_decode_call), Read chunks are
 * pulled (rr_read.c) and the Call assembled, Replies are planned and emitted
 * (rr_send.c), all on a RECORDING fabric: a fab_ops table whose posts are
 * checked and carried out against a simulated client instead of a network.
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
 *     exactly once.
 *
 * The big-buffer check (big_free) reads struct rr_bigpool's free chains: it
 * follows the pool's layout in rr_internal.h.
 */
#include "rr_fuzz_engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fabric/fab_internal.h"
#include "rpcrdma/rr_internal.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "rr_fuzz_engine: %s:%d: check failed: %s\n", __FILE__,    \
				__LINE__, #cond);                                                  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#define RRF_MAX_MSGS 3
#define RRF_MAX_SEGS 256
#define RRF_MAX_CHUNK_BYTES 32768u	/* the server's max_chunk_bytes (>= inline_size) */
#define RRF_INLINE 4096u
#define RRF_REGION_LEN 65536u
#define RRF_MAX_REPLY 40000u
#define RRF_CQ_MAX 8192
#define RRF_MAX_MR 1024
#define RRF_MAX_PEND_WRITES 1024
#define RRF_MAX_RANGES 512

/* ---- the simulated client: what each message offered ---- */

struct mseg {
	uint32_t handle, length;
	uint64_t offset;
	uint32_t position;	/* Read segments */
	uint32_t reads;		/* RDMA Reads that named it */
	uint8_t *mem;		/* Write/Reply segments: client memory, once written */
	uint8_t *written;
};

struct mchunk {
	uint32_t position;
	unsigned int first, nsegs;	/* into msg.rseg (Read) or msg.wseg */
	uint64_t length;
};

struct range {
	const uint8_t *p;
	size_t len;
};

struct msg {
	const uint8_t *bytes;
	size_t len;
	/* independent parse */
	bool parsed;
	uint32_t xid, proc;
	size_t hdr_len;
	struct mseg rseg[RRF_MAX_SEGS];
	unsigned int nrseg;
	struct mchunk rch[RRF_MAX_SEGS];
	unsigned int nrch;
	struct mseg wseg[RRF_MAX_SEGS];
	unsigned int nwseg;
	struct mchunk wch[RRF_MAX_SEGS];
	unsigned int nwch;
	bool has_reply;
	struct mchunk reply;	/* into wseg */
	uint8_t *expect_call;	/* section 3.5.3 reconstruction, built at dispatch */
	size_t expect_len;
	bool splice_bad;
	bool bc_reply;
	/* engine side */
	struct rr_call_ctx *ctx;
	bool delivered, dispatched, released, replied;
	struct range rd[RRF_MAX_RANGES];	/* where this call's Reads landed */
	unsigned int nrd;
	/* the Reply handed in and what the model expects of it */
	uint8_t *stream;
	size_t stream_len;
	struct iovec iov[4];
	int iovcnt;
	struct rr_reply_plan plan;
	int expect_proc;	/* RR_PROC_MSG / NOMSG / ERROR, once replied */
	uint8_t *expect_inline;
	size_t expect_inline_len;
	size_t expect_hdr;
	int done_calls;
	bool not_delivered;
	int answers;		/* Sends that carried this xid */
};

/* ---- the recording fabric ---- */

struct rrf_obj {
	struct fab_fabric *fab;
	int fd;
};

struct rrf_conn {
	struct fab_conn_head h;
	struct fab_qp_caps caps;
	bool has_qp, error;
};

struct rrf_mr {
	struct fab_fabric *fab;
	struct fab_mr mr;
};

struct rrf_recv {
	uint64_t wr_id;
	void *addr;
	uint32_t len;
};

struct pend_write {
	uint32_t rkey;
	uint64_t raddr;
	uint32_t len;
	uint8_t *data;
};

static struct {
	struct fab_fabric fab;
	struct rrf_obj chan, lis, pd;
	struct rrf_mr *mrs[RRF_MAX_MR];
	unsigned int nmr;
	uint32_t next_key;
	struct rrf_conn *conn;	/* this input's */
	struct rrf_obj *cq;
	struct fab_wc cqe[RRF_CQ_MAX];
	uint64_t cqe_seq[RRF_CQ_MAX];	/* send-queue position, 0 for receives */
	unsigned int ncqe, polled, limit;
	struct rrf_recv rq[256];
	unsigned int nrq;
	uint64_t sq_posted, sq_retired;
	unsigned int wr_count, fault_wr;	/* fault_wr 0: none, else WR number + 1 */
	uint64_t read_bytes, write_bytes;
	struct pend_write pw[RRF_MAX_PEND_WRITES];
	unsigned int npw;
	/* this input */
	enum rrf_mode mode;
	struct msg msgs[RRF_MAX_MSGS + 1];	/* + idle_check's */
	unsigned int nmsgs;
	const uint8_t *pool;
	size_t npool;
	uint32_t client_recv;	/* the client's receive buffers: our Sends' limit */
	bool offer_inv;
	bool reply_later, release_only, offthread;
} F;

static struct rr_server *srv;
static bool verbose;	/* RRF_VERBOSE set: one line per Call and per Send */
static uint8_t *region;
static unsigned int base_mrs;

static const struct fab_ops rrf_ops;

static struct rrf_mr *mr_by_lkey(uint32_t lkey)
{
	for (unsigned int i = 0; i < F.nmr; i++)
		if (F.mrs[i]->mr.lkey == lkey)
			return F.mrs[i];
	return NULL;
}

/* A local SGE must lie inside the MR its lkey names, with @access. */
static void check_sge(const struct fab_sge *sge, unsigned int access)
{
	struct rrf_mr *m = mr_by_lkey(sge->lkey);
	const uint8_t *a = sge->addr, *b;

	CHECK(m != NULL);
	b = m->mr.addr;
	CHECK(a >= b && sge->length <= m->mr.length && a - b <= (ptrdiff_t)(m->mr.length - sge->length));
	CHECK((m->mr.access & access) == access);
}

static void push_cqe(const struct fab_wc *wc, uint64_t seq)
{
	CHECK(F.ncqe < RRF_CQ_MAX);
	F.cqe[F.ncqe] = *wc;
	F.cqe_seq[F.ncqe] = seq;
	F.ncqe++;
}

/* The QP goes to error: posted receives are flushed (later posts too). */
static void qp_error(void)
{
	if (F.conn->error)
		return;
	F.conn->error = true;
	for (unsigned int i = 0; i < F.nrq; i++) {
		struct fab_wc wc = {.wr_id = F.rq[i].wr_id, .status = FAB_WC_WR_FLUSH_ERR,
				    .opcode = FAB_WC_RECV, .conn = (struct fab_conn *)F.conn};

		push_cqe(&wc, 0);
	}
	F.nrq = 0;
}

static int op_channel_create(struct fab_fabric *fab, struct fab_channel **out)
{
	(void)fab;
	*out = (struct fab_channel *)&F.chan;
	return 0;
}

static void op_channel_destroy(struct fab_channel *ch)
{
	(void)ch;
}

static int op_channel_fd(const struct fab_channel *ch)
{
	return ((const struct rrf_obj *)ch)->fd;
}

static int op_channel_get_event(struct fab_channel *ch, struct fab_cm_event *ev)
{
	(void)ch;
	(void)ev;
	return -EAGAIN;
}

static int op_listen(struct fab_fabric *fab, struct fab_channel *ch, const char *addr, int backlog,
		     struct fab_listener **out)
{
	(void)fab, (void)ch, (void)addr, (void)backlog;
	*out = (struct fab_listener *)&F.lis;
	return 0;
}

static void op_listener_destroy(struct fab_listener *l)
{
	(void)l;
}

static int op_conn_create_qp(struct fab_conn *c, struct fab_cq *send_cq, struct fab_cq *recv_cq,
			     const struct fab_qp_caps *caps)
{
	struct rrf_conn *rc = (struct rrf_conn *)c;

	CHECK(send_cq == (struct fab_cq *)F.cq && recv_cq == send_cq && !caps->srq);
	rc->caps = *caps;
	rc->has_qp = true;
	return 0;
}

static int op_accept(struct fab_conn *c, const struct fab_conn_param *param)
{
	(void)c;
	CHECK(param->responder_resources == 0); /* the server exposes no memory */
	return 0;
}

static int op_reject(struct fab_conn *c, const void *pd, uint8_t len)
{
	(void)c, (void)pd, (void)len;
	return 0;
}

static int op_disconnect(struct fab_conn *c)
{
	(void)c;
	qp_error();
	return 0;
}

static void op_conn_destroy(struct fab_conn *c)
{
	CHECK((struct rrf_conn *)c == F.conn);
	free(F.conn);
	F.conn = NULL;
}

static struct fab_pd *op_conn_pd(struct fab_conn *c)
{
	(void)c;
	return (struct fab_pd *)&F.pd;
}

static const char *op_conn_peer(const struct fab_conn *c)
{
	(void)c;
	return "fuzz";
}

static int op_conn_addrs(const struct fab_conn *c, struct sockaddr_storage *l,
			 struct sockaddr_storage *r)
{
	(void)c, (void)l, (void)r;
	return -ENOTSUP;
}

static int op_pd_get(struct fab_fabric *fab, struct fab_pd **out)
{
	(void)fab;
	*out = (struct fab_pd *)&F.pd;
	return 0;
}

static int op_mr_reg(struct fab_pd *pd, void *addr, size_t len, unsigned int access,
		     struct fab_mr **out)
{
	struct rrf_mr *m;

	CHECK(pd == (struct fab_pd *)&F.pd && len > 0);
	CHECK(F.nmr < RRF_MAX_MR);
	m = calloc(1, sizeof(*m));
	CHECK(m != NULL);
	m->fab = &F.fab;
	m->mr.addr = addr;
	m->mr.length = len;
	m->mr.lkey = ++F.next_key;
	m->mr.rkey = m->mr.lkey;
	m->mr.access = access;
	m->mr.prov = m;
	F.mrs[F.nmr++] = m;
	*out = &m->mr;
	return 0;
}

static void op_mr_dereg(struct fab_mr *mr)
{
	struct rrf_mr *m = mr->prov;

	for (unsigned int i = 0; i < F.nmr; i++) {
		if (F.mrs[i] == m) {
			F.mrs[i] = F.mrs[--F.nmr];
			free(m);
			return;
		}
	}
	CHECK(!"deregistering an unknown MR");
}

static int op_cq_create(struct fab_fabric *fab, int depth, struct fab_cq **out)
{
	(void)fab;
	CHECK(!F.cq && depth > 0);
	F.cq = calloc(1, sizeof(*F.cq));
	CHECK(F.cq != NULL);
	F.cq->fab = &F.fab;
	F.cq->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(F.cq->fd >= 0);
	*out = (struct fab_cq *)F.cq;
	return 0;
}

static void op_cq_destroy(struct fab_cq *cq)
{
	CHECK((struct rrf_obj *)cq == F.cq);
	close(F.cq->fd);
	free(F.cq);
	F.cq = NULL;
}

static int op_cq_fd(const struct fab_cq *cq)
{
	return ((const struct rrf_obj *)cq)->fd;
}

static int op_cq_noop(struct fab_cq *cq)
{
	(void)cq;
	return 0;
}

static int op_cq_poll(struct fab_cq *cq, struct fab_wc *wc, int n)
{
	int got = 0;

	(void)cq;
	while (got < n && F.polled < F.ncqe && F.polled < F.limit) {
		uint64_t seq = F.cqe_seq[F.polled];

		/* A completion frees its WR's send-queue slot and those of the
		 * unsignalled WRs posted before it. */
		if (seq > F.sq_retired)
			F.sq_retired = seq;
		wc[got++] = F.cqe[F.polled++];
	}
	return got;
}

static int op_post_recv(struct fab_conn *c, struct fab_recv_wr *wr, struct fab_recv_wr **bad)
{
	(void)bad;
	CHECK((struct rrf_conn *)c == F.conn && F.conn->has_qp);
	for (; wr; wr = wr->next) {
		CHECK(wr->num_sge == 1);
		check_sge(&wr->sg_list[0], FAB_ACCESS_LOCAL_WRITE);
		if (F.conn->error) {
			struct fab_wc wc = {.wr_id = wr->wr_id, .status = FAB_WC_WR_FLUSH_ERR,
					    .opcode = FAB_WC_RECV, .conn = c};

			push_cqe(&wc, 0);
			continue;
		}
		CHECK(F.nrq < sizeof(F.rq) / sizeof(F.rq[0]));
		CHECK(F.nrq < F.conn->caps.max_recv_wr);
		F.rq[F.nrq++] = (struct rrf_recv){wr->wr_id, wr->sg_list[0].addr,
						  wr->sg_list[0].length};
	}
	return 0;
}

/* The client's Read-exposed memory: bytes from the data pool, mixed with
 * the address so that Reading the wrong bytes shows. */
static uint8_t client_byte(uint32_t handle, uint64_t addr)
{
	uint8_t mix = (uint8_t)(addr * 0x9d + (addr >> 8) * 0x3b + handle * 0x5f + (handle >> 13));

	if (!F.npool)
		return mix;
	return F.pool[(addr + handle * 131u) % F.npool] ^ mix;
}

static struct msg *msg_of_ctx(const void *ctx)
{
	for (unsigned int i = 0; i < F.nmsgs; i++)
		if (F.msgs[i].delivered && F.msgs[i].ctx == ctx)
			return &F.msgs[i];
	return NULL;
}

static void do_read(const struct fab_send_wr *wr)
{
	struct msg *m = msg_of_ctx((void *)(uintptr_t)(wr->wr_id & ~(uint64_t)RR_WRID_MASK));
	uint64_t len = 0, k = 0;
	struct mseg *s = NULL;

	CHECK(m != NULL && m->parsed);
	for (int i = 0; i < wr->num_sge; i++) {
		check_sge(&wr->sg_list[i], FAB_ACCESS_LOCAL_WRITE);
		len += wr->sg_list[i].length;
	}
	/* exactly one of the call's Read segments, read once */
	for (unsigned int i = 0; i < m->nrseg; i++)
		if (m->rseg[i].handle == wr->rkey && m->rseg[i].offset == wr->remote_addr &&
		    m->rseg[i].length == len)
			s = &m->rseg[i];
	CHECK(s != NULL);
	CHECK(++s->reads == 1);
	for (int i = 0; i < wr->num_sge; i++) {
		uint8_t *p = wr->sg_list[i].addr;

		for (uint32_t j = 0; j < wr->sg_list[i].length; j++)
			p[j] = client_byte(s->handle, s->offset + k++);
		CHECK(m->nrd < RRF_MAX_RANGES);
		m->rd[m->nrd++] = (struct range){p, wr->sg_list[i].length};
	}
}

static void do_write(const struct fab_send_wr *wr)
{
	struct pend_write *w;
	uint64_t len = 0, off = 0;

	for (int i = 0; i < wr->num_sge; i++) {
		check_sge(&wr->sg_list[i], 0);
		len += wr->sg_list[i].length;
	}
	CHECK(len > 0 && len <= RRF_MAX_REPLY);
	CHECK(F.npw < RRF_MAX_PEND_WRITES);
	w = &F.pw[F.npw++];
	w->rkey = wr->rkey;
	w->raddr = wr->remote_addr;
	w->len = (uint32_t)len;
	w->data = malloc(len);
	CHECK(w->data != NULL);
	for (int i = 0; i < wr->num_sge; i++) {
		memcpy(w->data + off, wr->sg_list[i].addr, wr->sg_list[i].length);
		off += wr->sg_list[i].length;
	}
}

static void clear_pending_writes(void)
{
	for (unsigned int i = 0; i < F.npw; i++)
		free(F.pw[i].data);
	F.npw = 0;
}

static void on_send(const uint8_t *p, size_t n, bool inv, uint32_t inv_rkey);

static int op_post_send(struct fab_conn *c, struct fab_send_wr *wr, struct fab_send_wr **bad)
{
	(void)bad;
	CHECK((struct rrf_conn *)c == F.conn && F.conn->has_qp);
	for (; wr; wr = wr->next) {
		struct fab_wc wc = {.wr_id = wr->wr_id, .conn = c};
		bool fail;

		CHECK(wr->num_sge >= 0 && (uint32_t)wr->num_sge <= F.conn->caps.max_send_sge);
		CHECK(F.sq_posted - F.sq_retired < F.conn->caps.max_send_wr);
		F.sq_posted++;
		fail = F.fault_wr && ++F.wr_count == F.fault_wr;
		switch (wr->opcode) {
		case FAB_WR_RDMA_READ:
			CHECK(wr->signaled);
			wc.opcode = FAB_WC_RDMA_READ;
			for (int i = 0; i < wr->num_sge; i++)
				F.read_bytes += wr->sg_list[i].length;
			if (!F.conn->error && !fail)
				do_read(wr);
			break;
		case FAB_WR_RDMA_WRITE:
			wc.opcode = FAB_WC_RDMA_WRITE;
			for (int i = 0; i < wr->num_sge; i++)
				F.write_bytes += wr->sg_list[i].length;
			if (!F.conn->error && !fail)
				do_write(wr);
			break;
		case FAB_WR_SEND:
		case FAB_WR_SEND_WITH_INV: {
			uint8_t buf[RRF_INLINE + 64];
			size_t len = 0;

			wc.opcode = FAB_WC_SEND;
			for (int i = 0; i < wr->num_sge; i++) {
				check_sge(&wr->sg_list[i], 0);
				/* no Send larger than the client's receive buffers */
				CHECK(len + wr->sg_list[i].length <= F.client_recv);
				memcpy(buf + len, wr->sg_list[i].addr, wr->sg_list[i].length);
				len += wr->sg_list[i].length;
			}
			if (!F.conn->error && !fail)
				on_send(buf, len, wr->opcode == FAB_WR_SEND_WITH_INV,
					wr->invalidate_rkey);
			clear_pending_writes();
			break;
		}
		default:
			CHECK(!"unknown opcode");
		}
		if (F.conn->error || fail) {
			wc.status = fail && !F.conn->error ? FAB_WC_REM_ACCESS_ERR
							  : FAB_WC_WR_FLUSH_ERR;
			push_cqe(&wc, F.sq_posted);
			if (fail)
				qp_error();
		} else if (wr->signaled) {
			wc.status = FAB_WC_SUCCESS;
			push_cqe(&wc, F.sq_posted);
		}
	}
	return 0;
}

static void op_close(struct fab_fabric *fab)
{
	(void)fab;
}

static const struct fab_ops rrf_ops = {
	.name = "fuzz",
	.caps = FAB_CAP_SEND_WITH_INV,
	.close = op_close,
	.channel_create = op_channel_create,
	.channel_destroy = op_channel_destroy,
	.channel_fd = op_channel_fd,
	.channel_get_event = op_channel_get_event,
	.listen = op_listen,
	.listener_destroy = op_listener_destroy,
	.conn_create_qp = op_conn_create_qp,
	.accept = op_accept,
	.reject = op_reject,
	.disconnect = op_disconnect,
	.conn_destroy = op_conn_destroy,
	.conn_pd = op_conn_pd,
	.conn_peer = op_conn_peer,
	.conn_addrs = op_conn_addrs,
	.pd_get = op_pd_get,
	.mr_reg = op_mr_reg,
	.mr_dereg = op_mr_dereg,
	.cq_create = op_cq_create,
	.cq_destroy = op_cq_destroy,
	.cq_fd = op_cq_fd,
	.cq_get_event = op_cq_noop,
	.cq_arm = op_cq_noop,
	.cq_poll = op_cq_poll,
	.post_send = op_post_send,
	.post_recv = op_post_recv,
};

/* ---- the independent header parse (RFC 8166 section 4.2) ---- */

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static uint64_t pad4(uint64_t n)
{
	return (n + 3) / 4 * 4;
}

struct rd {
	const uint8_t *p;
	size_t n, off;
	bool bad;
};

static uint32_t rd32(struct rd *r)
{
	if (r->bad || r->n - r->off < 4) {
		r->bad = true;
		return 0;
	}
	r->off += 4;
	return be32(r->p + r->off - 4);
}

static bool rd_seg(struct rd *r, struct mseg *s)
{
	if (r->bad || r->n - r->off < 16) {
		r->bad = true;
		return false;
	}
	memset(s, 0, sizeof(*s));
	s->handle = be32(r->p + r->off);
	s->length = be32(r->p + r->off + 4);
	s->offset = be64(r->p + r->off + 8);
	r->off += 16;
	return true;
}

static bool rd_write_chunk(struct rd *r, struct msg *m, struct mchunk *ch)
{
	uint32_t n = rd32(r);

	if (r->bad || n > RRF_MAX_SEGS - m->nwseg)
		return false;
	ch->first = m->nwseg;
	ch->nsegs = n;
	ch->length = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!rd_seg(r, &m->wseg[m->nwseg]))
			return false;
		ch->length += m->wseg[m->nwseg++].length;
	}
	return true;
}

/* Chunk @c's bytes in the client's Read memory, appended at @out. */
static uint8_t *read_chunk_bytes(const struct msg *m, const struct mchunk *c, uint8_t *out)
{
	for (unsigned int i = 0; i < c->nsegs; i++) {
		const struct mseg *s = &m->rseg[c->first + i];

		for (uint32_t j = 0; j < s->length; j++)
			*out++ = client_byte(s->handle, s->offset + j);
	}
	return out;
}

/*
 * RFC 8166 section 3.5.3: a Read chunk at position P stands for its data
 * and its XDR pad at byte P of the Call; the inline stream (or the
 * Position-Zero chunk of an RDMA_NOMSG) holds everything else, in order.
 * False when the positions cannot be honoured (a chunk inside an earlier
 * one's bytes, or past the end of the stream). With @out, the Call's bytes
 * are built there (m->expect_call).
 */
static bool splice(struct msg *m, uint8_t *out)
{
	const uint8_t *base = m->bytes + m->hdr_len;
	uint64_t base_len = m->len - m->hdr_len, cur = 0, have = 0;
	unsigned int first = 0;
	uint8_t *pz = NULL;

	if (m->proc == RR_PROC_NOMSG) {
		if (m->nrch == 0 || m->rch[0].position != 0)
			return false;
		base_len = m->rch[0].length;
		if (out) {
			pz = malloc(base_len + 1);
			CHECK(pz != NULL);
			read_chunk_bytes(m, &m->rch[0], pz);
			base = pz;
		}
		first = 1;
	}
	for (unsigned int i = first; i < m->nrch; i++) {
		const struct mchunk *c = &m->rch[i];
		uint64_t gap = c->position - have;

		/* the bytes before position P come from the inline stream */
		if (c->position < have || gap > base_len - cur) {
			free(pz);
			return false;
		}
		if (out) {
			memcpy(out + have, base + cur, gap);
			read_chunk_bytes(m, c, out + have + gap);
			memset(out + have + gap + c->length, 0, pad4(c->length) - c->length);
		}
		cur += gap;
		have += gap + pad4(c->length);
	}
	if (out) {
		memcpy(out + have, base + cur, base_len - cur);
		m->expect_len = (size_t)(have + base_len - cur);
	}
	free(pz);
	return true;
}

/* The Call the engine should assemble, once it accepted the header (so
 * every chunk is within the decoder's limits). */
static void build_call(struct msg *m)
{
	uint64_t total = m->len - m->hdr_len;

	for (unsigned int i = 0; i < m->nrch; i++) {
		CHECK(m->rch[i].length <= RRF_MAX_CHUNK_BYTES);
		total += pad4(m->rch[i].length);
	}
	m->expect_call = malloc(total + 1);
	CHECK(m->expect_call != NULL);
	CHECK(splice(m, m->expect_call));
}

static void parse_msg(struct msg *m)
{
	struct rd r = {.p = m->bytes, .n = m->len};
	uint32_t vers, disc;

	m->xid = rd32(&r);
	vers = rd32(&r);
	(void)rd32(&r);
	m->proc = rd32(&r);
	if (r.bad || vers != 1 || (m->proc != RR_PROC_MSG && m->proc != RR_PROC_NOMSG))
		return;
	/* Read list: (1, position, segment)*, 0 */
	while ((disc = rd32(&r)) == 1) {
		uint32_t pos = rd32(&r);

		if (m->nrseg >= RRF_MAX_SEGS || !rd_seg(&r, &m->rseg[m->nrseg]))
			return;
		m->rseg[m->nrseg++].position = pos;
	}
	if (r.bad || disc != 0)
		return;
	while ((disc = rd32(&r)) == 1) {
		if (m->nwch >= RRF_MAX_SEGS || !rd_write_chunk(&r, m, &m->wch[m->nwch]))
			return;
		m->nwch++;
	}
	if (r.bad || disc != 0)
		return;
	disc = rd32(&r);
	if (disc == 1) {
		if (!rd_write_chunk(&r, m, &m->reply))
			return;
		m->has_reply = true;
	} else if (r.bad || disc != 0) {
		return;
	}
	m->hdr_len = r.off;
	/* Read chunks: the segments sharing a position, in list order;
	 * chunks by ascending position (a stable sort, then runs). */
	for (unsigned int i = 1; i < m->nrseg; i++) {
		for (unsigned int j = i; j > 0 && m->rseg[j - 1].position > m->rseg[j].position; j--) {
			struct mseg t = m->rseg[j];

			m->rseg[j] = m->rseg[j - 1];
			m->rseg[j - 1] = t;
		}
	}
	for (unsigned int i = 0; i < m->nrseg; i++) {
		struct mchunk *ch;

		if (i == 0 || m->rseg[i].position != m->rseg[i - 1].position) {
			ch = &m->rch[m->nrch++];
			ch->position = m->rseg[i].position;
			ch->first = i;
			ch->nsegs = 0;
			ch->length = 0;
		} else {
			ch = &m->rch[m->nrch - 1];
		}
		ch->nsegs++;
		ch->length += m->rseg[i].length;
	}
	/* an RDMA_MSG with no chunks whose RPC msg_type is not CALL is a
	 * reverse-direction Reply (RFC 8167 section 4.2), not a Call */
	m->bc_reply = m->proc == RR_PROC_MSG && !m->nrseg && !m->nwch && !m->has_reply &&
		      m->len >= m->hdr_len + 8 && be32(m->bytes + m->hdr_len + 4) != 0;
	m->parsed = true;
	m->splice_bad = !splice(m, NULL);
}

/* ---- the upper layer ---- */

static void on_done(void *arg)
{
	struct msg *m = arg;

	CHECK(++m->done_calls == 1);
}

static bool in_ranges(const struct msg *m, const uint8_t *p, size_t len)
{
	while (len) {
		size_t step = 0;

		for (unsigned int i = 0; i < m->nrd && !step; i++) {
			const struct range *r = &m->rd[i];

			if (p >= r->p && p < r->p + r->len)
				step = (size_t)(r->p + r->len - p) < len ? (size_t)(r->p + r->len - p)
									 : len;
		}
		if (!step)
			return false;
		p += step;
		len -= step;
	}
	return true;
}

static void check_call(struct msg *m, struct rr_call *call)
{
	const struct rr_call_ctx *ctx = m->ctx;
	const uint8_t *lo = ctx->buf + m->hdr_len, *hi = ctx->buf + m->len;
	size_t off = 0;
	unsigned int nd = 0;

	CHECK(m->parsed && !m->splice_bad && !m->bc_reply);
	build_call(m);
	CHECK(call->xid == m->xid && call->pcl == &ctx->pcl);
	for (unsigned int i = 0; i < m->nrseg; i++)
		CHECK(m->rseg[i].reads == 1);
	CHECK(call->iovcnt >= 0 && call->iovcnt <= (int)RR_CALL_MAX_IOV);
	for (int i = 0; i < call->iovcnt; i++) {
		const uint8_t *p = call->iov[i].iov_base;
		size_t l = call->iov[i].iov_len;
		bool zero = l < 4;

		for (size_t k = 0; k < l && zero; k++)
			zero = p[k] == 0;
		/* the receive buffer's message bytes, this call's sinks, or a pad */
		CHECK((p >= lo && p <= hi && l <= (size_t)(hi - p)) || in_ranges(m, p, l) || zero);
		CHECK(off + l <= m->expect_len && !memcmp(p, m->expect_call + off, l));
		off += l;
	}
	CHECK(off == m->expect_len && call->len == m->expect_len);
	for (unsigned int c = 0; c < m->nrch; c++) {
		const struct iovec *d;

		if (m->rch[c].position == 0 && m->proc == RR_PROC_NOMSG)
			continue;
		CHECK((int)nd < call->nchunk_data);
		d = &call->chunk_data[nd++];
		CHECK(d->iov_len == m->rch[c].length && in_ranges(m, d->iov_base, d->iov_len));
		for (unsigned int i = 0, k = 0; i < m->rch[c].nsegs; i++) {
			const struct mseg *s = &m->rseg[m->rch[c].first + i];

			for (uint32_t j = 0; j < s->length; j++, k++)
				CHECK(((uint8_t *)d->iov_base)[k] ==
				      client_byte(s->handle, s->offset + j));
		}
	}
	CHECK((int)nd == call->nchunk_data);
}

static size_t reply_hdr_len(const struct msg *m)
{
	size_t h = 16 + 4 + 4 + 4;	/* fixed, empty Read list, Write list end, Reply discrim */

	for (unsigned int i = 0; i < m->nwch; i++)
		h += 4 + 4 + 16 * (size_t)m->wch[i].nsegs;
	if (m->has_reply)
		h += 4 + 16 * (size_t)m->reply.nsegs;
	return h;
}

/* What RFC 8166 sections 3.5.4-3.5.6 make of this Reply and plan. */
static void expect_reply(struct msg *m, const struct rr_reply_plan *plan, bool given)
{
	uint64_t end = 0, cur = 0, total = m->stream_len;
	uint32_t used = 0;
	uint32_t max_inline = F.client_recv < RRF_INLINE ? F.client_recv : RRF_INLINE;
	bool ok = !given || plan->deliverable;
	uint8_t *out;

	for (unsigned int i = 0; given && ok && i < plan->nspans; i++) {
		const struct rr_payload_span *sp = &plan->spans[i];

		ok = sp->chunk < m->nwch && !(used >> sp->chunk & 1) && sp->offset >= end &&
		     sp->offset <= total && sp->length <= total - sp->offset &&
		     sp->length <= m->wch[sp->chunk].length;
		used |= 1u << (sp->chunk & 31);
		end = sp->offset + sp->length;
	}
	m->expect_hdr = reply_hdr_len(m);
	out = m->expect_inline = malloc(total + 1);
	CHECK(out != NULL);
	/* the stream minus each payload and its XDR pad */
	for (unsigned int i = 0; ok && given && i < plan->nspans; i++) {
		uint64_t s = plan->spans[i].offset, e = s + pad4(plan->spans[i].length);

		if (e > total)
			e = total;
		if (s > cur) {
			memcpy(out, m->stream + cur, s - cur);
			out += s - cur;
		}
		if (e > cur)
			cur = e;
	}
	if (total > cur) {
		memcpy(out, m->stream + cur, total - cur);
		out += total - cur;
	}
	m->expect_inline_len = (size_t)(out - m->expect_inline);
	if (!ok)
		m->expect_proc = RR_PROC_ERROR;
	else if (m->expect_hdr + m->expect_inline_len <= max_inline)
		m->expect_proc = RR_PROC_MSG;
	else if (m->has_reply && m->expect_inline_len <= m->reply.length &&
		 m->expect_hdr <= max_inline)
		m->expect_proc = RR_PROC_NOMSG;
	else
		m->expect_proc = RR_PROC_ERROR;
}

static void do_reply(struct msg *m)
{
	struct rr_server *self = rr_this_event_thread;

	m->replied = true;
	/* a worker thread's Reply: handed to the event thread (rr_reply's
	 * deferred path, built and posted in one batch at the next wake-up) */
	if (F.offthread)
		rr_this_event_thread = NULL;
	if (F.mode == RRF_CALL && F.release_only) {
		m->released = true;
		rr_call_release(&m->ctx->call);
	} else if (F.mode == RRF_CALL) {
		expect_reply(m, NULL, false);
		CHECK(rr_reply(&m->ctx->call, m->iov, m->iovcnt, NULL, on_done, m) == 0 ||
		      m->ctx->conn->state == RR_CONN_CLOSING);
	} else {
		expect_reply(m, &m->plan, true);
		rr_reply(&m->ctx->call, m->iov, m->iovcnt, &m->plan, on_done, m);
	}
	rr_this_event_thread = self;
}

static void up_call(void *arg, struct rr_call *call)
{
	struct msg *m = msg_of_ctx(call);

	(void)arg;
	CHECK(m != NULL && !m->dispatched);
	m->dispatched = true;
	check_call(m, call);
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

/* ---- checking a Send ---- */

static struct mseg *write_target(struct msg *m, const struct pend_write *w, bool *aliased)
{
	struct mseg *hit = NULL;
	unsigned int nhit = 0;

	for (unsigned int i = 0; i < m->nwseg; i++) {
		struct mseg *s = &m->wseg[i];

		if (s->handle == w->rkey && w->raddr >= s->offset && w->raddr - s->offset <= s->length &&
		    w->len <= s->length - (w->raddr - s->offset)) {
			if (!hit)
				hit = s;
			nhit++;
		}
	}
	if (nhit > 1)
		*aliased = true;
	return hit;
}

/* A chunk's bytes as the client reads them: each segment up to its echoed length. */
static size_t gather(const struct msg *m, const struct mchunk *c, const uint32_t *echo, uint8_t *out)
{
	size_t n = 0;

	for (unsigned int i = 0; i < c->nsegs; i++) {
		const struct mseg *s = &m->wseg[c->first + i];

		for (uint32_t j = 0; j < echo[i]; j++) {
			CHECK(s->written && s->written[j]);
			out[n++] = s->mem[j];
		}
		/* nothing lands past the echoed length */
		for (uint32_t j = echo[i]; s->written && j < s->length; j++)
			CHECK(!s->written[j]);
	}
	return n;
}

/* An echoed chunk: same segment count, handles, offsets; lengths within
 * the offer and filled in order. Returns the total echoed. */
static uint64_t rd_echo(struct rd *r, const struct msg *m, const struct mchunk *c, uint32_t *echo)
{
	uint64_t total = 0;
	bool short_seen = false;

	CHECK(rd32(r) == c->nsegs);
	for (unsigned int i = 0; i < c->nsegs; i++) {
		struct mseg e;
		const struct mseg *s = &m->wseg[c->first + i];

		CHECK(rd_seg(r, &e));
		CHECK(e.handle == s->handle && e.offset == s->offset && e.length <= s->length);
		CHECK(!short_seen || e.length == 0);
		short_seen = e.length < s->length;
		echo[i] = e.length;
		total += e.length;
	}
	return total;
}

static void on_send(const uint8_t *p, size_t n, bool inv, uint32_t inv_rkey)
{
	static uint32_t echo[RRF_MAX_SEGS];
	struct rd r = {.p = p, .n = n};
	struct msg *m = NULL;
	uint32_t xid, vers, credits, proc;
	uint64_t wbytes = 0;
	bool aliased = false;
	uint8_t *buf;

	xid = rd32(&r);
	vers = rd32(&r);
	credits = rd32(&r);
	proc = rd32(&r);
	CHECK(!r.bad && vers == 1 && credits >= 1);
	if (verbose)
		fprintf(stderr, "rrf: Send xid %08x proc %u len %zu, %u Writes%s\n", xid, proc, n,
			F.npw, inv ? ", with invalidate" : "");
	for (unsigned int i = 0; i < F.nmsgs; i++)
		if (F.msgs[i].delivered && F.msgs[i].len >= 4 && F.msgs[i].xid == xid)
			m = &F.msgs[i];
	CHECK(m != NULL);
	CHECK(++m->answers == 1);
	if (inv) {
		bool found = false;

		CHECK(F.offer_inv && proc != RR_PROC_ERROR);
		for (unsigned int i = 0; i < m->nrseg; i++)
			found |= m->rseg[i].handle == inv_rkey;
		for (unsigned int i = 0; i < m->nwseg; i++)
			found |= m->wseg[i].handle == inv_rkey;
		CHECK(found);
	}
	if (proc == RR_PROC_ERROR) {
		uint32_t err = rd32(&r);

		CHECK(F.npw == 0); /* nothing was written for an error */
		CHECK(err == RR_ERR_CHUNK || err == RR_ERR_VERS);
		if (err == RR_ERR_VERS)
			CHECK(rd32(&r) == 1 && rd32(&r) == 1);
		CHECK(!r.bad && r.off == n);
		if (m->dispatched) {
			/* a Reply that could not go: the model agrees, the ULB was told */
			CHECK(err == RR_ERR_CHUNK && m->expect_proc == RR_PROC_ERROR);
			CHECK(m->not_delivered);
		} else if (m->parsed && m->splice_bad) {
			CHECK(err == RR_ERR_CHUNK);
		}
		return;
	}
	CHECK(proc == RR_PROC_MSG || proc == RR_PROC_NOMSG);
	CHECK(m->dispatched && m->replied && !m->released);
	CHECK((int)proc == m->expect_proc);
	CHECK(rd32(&r) == 0); /* no Read list in a Reply */
	/* the Writes of this chain, into the client's memory */
	for (unsigned int i = 0; i < F.npw; i++) {
		struct pend_write *w = &F.pw[i];
		struct mseg *s = write_target(m, w, &aliased);
		uint64_t at;

		CHECK(s != NULL);
		CHECK(s->length <= RRF_MAX_CHUNK_BYTES);
		if (!s->mem) {
			s->mem = calloc(1, s->length);
			s->written = calloc(1, s->length);
			CHECK(s->mem && s->written);
		}
		at = w->raddr - s->offset;
		for (uint32_t j = 0; j < w->len; j++) {
			CHECK(aliased || !s->written[at + j]); /* each byte written once */
			s->written[at + j] = 1;
		}
		memcpy(s->mem + at, w->data, w->len);
		wbytes += w->len;
	}
	buf = malloc(RRF_MAX_REPLY + 1);
	CHECK(buf != NULL);
	/* Write list: every chunk echoed; a payload's chunk holds it exactly */
	for (unsigned int c = 0; c < m->nwch; c++) {
		uint64_t got, want = 0;
		const struct rr_payload_span *sp = NULL;

		CHECK(rd32(&r) == 1);
		got = rd_echo(&r, m, &m->wch[c], echo);
		for (unsigned int i = 0; F.mode == RRF_REPLY && i < m->plan.nspans; i++)
			if (m->plan.spans[i].chunk == c)
				sp = &m->plan.spans[i];
		if (sp)
			want = sp->length;
		CHECK(got == want);
		if (!aliased) {
			size_t k = gather(m, &m->wch[c], echo, buf);

			CHECK(k == want && (!k || !memcmp(buf, m->stream + sp->offset, k)));
		}
		wbytes -= got;
	}
	CHECK(rd32(&r) == 0);
	/* Reply chunk: echoed when offered; used only by RDMA_NOMSG */
	if (rd32(&r) == 1) {
		uint64_t got;

		CHECK(m->has_reply);
		got = rd_echo(&r, m, &m->reply, echo);
		CHECK(got == (proc == RR_PROC_NOMSG ? m->expect_inline_len : 0));
		if (!aliased) {
			size_t k = gather(m, &m->reply, echo, buf);

			CHECK(k == got && (!k || !memcmp(buf, m->expect_inline, k)));
		}
		wbytes -= got;
	} else {
		CHECK(!m->has_reply && proc == RR_PROC_MSG);
	}
	CHECK(!r.bad && r.off == m->expect_hdr);
	CHECK(wbytes == 0); /* no Write outside what the echoes account for */
	if (proc == RR_PROC_MSG)
		CHECK(n - r.off == m->expect_inline_len &&
		      !memcmp(p + r.off, m->expect_inline, m->expect_inline_len));
	else
		CHECK(n == r.off);
	free(buf);
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
	CHECK(rr_server_create(&F.fab, "fuzz", &cfg, &ops, NULL, &srv) == 0);
	region = aligned_alloc(4096, RRF_REGION_LEN);
	CHECK(region != NULL);
	CHECK(rr_server_add_region(srv, region, RRF_REGION_LEN) == 0);
	/* No event thread: this one plays it (rr_on_event_thread), a wake-up
	 * is never written, and the driver does the wake-up's work. */
	srv->started = true;
	rr_this_event_thread = srv;
	atomic_store(&srv->kick_pending, true);
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
 * Every big buffer (Read sinks, bounce buffers) is free: each free chain of
 * the pool walked, no slot twice. Returns the pool's registrations. The one
 * place that reads struct rr_bigpool's layout (rr_internal.h).
 */
static unsigned int big_all_free(void)
{
	unsigned int regs = 0;

	for (unsigned int i = 0; i < srv->nbigpools; i++) {
		const struct rr_bigpool *bp = srv->bigpools[i];
		uint32_t n = 0;

		for (uint32_t top = bp->free_top; top; top = bp->next[top - 1])
			CHECK(++n <= bp->n); /* a cycle: a buffer given back twice */
		for (uint32_t top = atomic_load(&bp->returned); top; top = bp->next[top - 1])
			CHECK(++n <= bp->n);
		CHECK(n == bp->n);
		regs += bp->n; /* one registration per buffer */
	}
	return regs;
}

/* The event thread's wake-up work (rr_server.c handle_kick). */
static void kick_work(struct rr_conn *c)
{
	for (struct rr_handoff *h = rr_handoff_take(&srv->ready); h;) {
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
	if (srv->reads_starved) {
		srv->reads_starved = false;
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
	push_cqe(&wc, 0);
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
	clear_pending_writes();
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

static void check_pools(unsigned int conn_mrs)
{
	CHECK(F.nmr == base_mrs + big_all_free() + conn_mrs);
}

/* Close and reap: the connection must be freed with everything it held. */
static void teardown(struct rr_conn *c)
{
	rr_conn_close(c, "fuzz: closing");
	F.limit = UINT32_MAX;
	for (int i = 0; i < 16 && srv->conns; i++)
		rr_conn_reap(srv);
	CHECK(srv->conns == NULL && srv->nconns == 0);
	CHECK(F.conn == NULL && F.cq == NULL);
	check_pools(0);
}

static unsigned int list_len(const struct rr_send_ctx *s)
{
	unsigned int n = 0;

	for (; s; s = s->next_free)
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
	CHECK(list_len(c->free_sends) == c->nsends - nbc && list_len(c->free_bc_sends) == nbc);
	for (uint32_t i = 0; i < c->nrecv; i++) {
		const struct rr_call_ctx *x = &c->calls[i];

		CHECK(x->state == RR_CALL_FREE || x->state == RR_CALL_POSTED);
		CHECK(x->nsinks == 0 && !x->has_ref && !x->queued);
		posted += x->state == RR_CALL_POSTED;
	}
	CHECK(posted == c->posted && posted == F.nrq);
	check_pools(2); /* the connection's receive and send pools */
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
		parse_msg(m);
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
	rr_conn_stats(c, &st0);

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
	rr_conn_stats(c, &st);
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
