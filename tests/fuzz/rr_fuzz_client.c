// SPDX-License-Identifier: MIT
/*
 * rr_fuzz_client.c - the engine fuzzers' simulated client and their model
 * of RFC 8166: a transport header parser written from section 4.2 (no code
 * shared with src/rpcrdma), the Call that section 3.5.3 says the engine must
 * assemble, the Reply that sections 3.5.4-3.5.6 say it must send, and the
 * client's memory: Read segments answered with fuzzer-chosen bytes, Write
 * and Reply-chunk segments that RDMA Writes land in and are checked against
 * when the Send arrives. Every check aborts (CHECK).
 */
#include <string.h>

#include "rr_fuzz_int.h"

/* The client's Read-exposed memory: bytes from the data pool, mixed with
 * the address so that Reading the wrong bytes shows. */
static uint8_t client_byte(uint32_t handle, uint64_t addr)
{
	uint8_t mix = (uint8_t)(addr * 0x9d + (addr >> 8) * 0x3b + handle * 0x5f + (handle >> 13));

	if (!F.npool)
		return mix;
	return F.pool[(addr + handle * 131u) % F.npool] ^ mix;
}

struct msg *rrf_msg_of_ctx(const void *ctx)
{
	for (unsigned int i = 0; i < F.nmsgs; i++)
		if (F.msgs[i].delivered && F.msgs[i].ctx == ctx)
			return &F.msgs[i];
	return NULL;
}

void rrf_client_read(const struct fab_send_wr *wr)
{
	struct msg *m = rrf_msg_of_ctx((void *)(uintptr_t)(wr->wr_id & ~(uint64_t)RR_WRID_MASK));
	uint64_t len = 0, k = 0;
	struct mseg *s = NULL;

	CHECK(m != NULL && m->parsed);
	for (int i = 0; i < wr->num_sge; i++) {
		rrf_check_sge(&wr->sg_list[i], FAB_ACCESS_LOCAL_WRITE);
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

void rrf_client_write(const struct fab_send_wr *wr)
{
	struct pend_write *w;
	uint64_t len = 0, off = 0;

	for (int i = 0; i < wr->num_sge; i++) {
		rrf_check_sge(&wr->sg_list[i], 0);
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

void rrf_clear_pending_writes(void)
{
	for (unsigned int i = 0; i < F.npw; i++)
		free(F.pw[i].data);
	F.npw = 0;
}

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

void rrf_parse_msg(struct msg *m)
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

/* ---- the Call as the engine hands it up, the Reply it should send ---- */

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

void rrf_check_call(struct msg *m, struct rr_call *call)
{
	const struct rr_call_ctx *ctx = m->ctx;
	const uint8_t *lo = ctx->buf + m->hdr_len, *hi = ctx->buf + m->len;
	size_t off = 0;
	unsigned int nd = 0;

	CHECK(m->parsed && !m->splice_bad && !m->bc_reply);
	build_call(m);
	CHECK(call->xid == m->xid && call->pcl == ctx->pcl);
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
void rrf_expect_reply(struct msg *m, const struct rr_reply_plan *plan, bool given)
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

void rrf_client_send(const uint8_t *p, size_t n, bool inv, uint32_t inv_rkey)
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

