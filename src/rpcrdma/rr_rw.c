// SPDX-License-Identifier: MIT
/*
 * rr_rw.c - RDMA Read and RDMA Write work requests, for both directions of
 * chunk data (RFC 8166 sections 3.5.3-3.5.5): the work-request context and
 * its growth, walking a chunk's segments (a Read per segment into the sinks,
 * Writes that gather registered pieces into the segments in order), finding
 * the registration of bytes to write, and the post itself. rr_read.c pulls
 * Read chunks with it; rr_reply.c pushes Write chunks and the Reply chunk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"

bool rr_rw_reserve(struct rr_rw_ctx *rw, uint32_t nwr, uint32_t nsge)
{
	if (nwr > RR_SEND_MAX_WR)
		nwr = RR_SEND_MAX_WR;
	if (nsge > RR_SEND_MAX_SGE)
		nsge = RR_SEND_MAX_SGE;
	if (nwr > rw->max_wr) {
		struct fab_send_wr *w = calloc(nwr, sizeof(*w));

		if (!w)
			return false;
		if (rw->wr_heap)
			free(rw->wr);
		rw->wr = w;
		rw->max_wr = nwr;
		rw->wr_heap = true;
	}
	if (nsge > rw->max_sge) {
		struct fab_sge *g = calloc(nsge, sizeof(*g));

		if (!g)
			return false;
		if (rw->sge_heap)
			free(rw->sge);
		rw->sge = g;
		rw->max_sge = nsge;
		rw->sge_heap = true;
	}
	return true;
}

void rr_rw_fini(struct rr_rw_ctx *rw)
{
	if (rw->wr_heap)
		free(rw->wr);
	if (rw->sge_heap)
		free(rw->sge);
	rw->wr_heap = rw->sge_heap = false;
}

/* A work request of @op at byte @off of @seg; its SGEs follow (rw_add_sge). */
static struct fab_send_wr *rw_seg_wr(struct rr_rw_ctx *rw, enum fab_wr_opcode op,
				     const struct rr_segment *seg, uint32_t off, uint64_t wr_id)
{
	struct fab_send_wr *wr = rr_rw_next_wr(rw);

	if (!wr)
		return NULL;
	wr->wr_id = wr_id;
	wr->opcode = op;
	wr->remote_addr = seg->offset + off;
	wr->rkey = seg->handle;
	wr->sg_list = &rw->sge[rw->nsge];
	return wr;
}

static bool rw_add_sge(struct rr_rw_ctx *rw, struct fab_send_wr *wr, const void *addr, uint32_t len,
		       uint32_t lkey)
{
	if (rw->nsge >= rw->max_sge)
		return false;
	rw->sge[rw->nsge++] = (struct fab_sge){.addr = (void *)addr, .length = len, .lkey = lkey};
	wr->num_sge++;
	return true;
}

bool rr_rw_read_seg(struct rr_rw_ctx *rw, const struct rr_pcl *p, uint32_t k, void *const *sink,
		    const uint32_t *sink_lkey, uint64_t wr_id)
{
	const struct rr_segment *seg;
	struct fab_send_wr *wr;
	unsigned int ci = 0;
	uint64_t off = 0;

	while (k >= p->read[ci].nsegs) {
		k -= p->read[ci].nsegs;
		ci++;
	}
	for (uint32_t j = 0; j < k; j++)
		off += p->segs[p->read[ci].first + j].length;
	seg = &p->segs[p->read[ci].first + k];

	wr = rw_seg_wr(rw, FAB_WR_RDMA_READ, seg, 0, wr_id);
	if (!wr)
		return false;
	wr->signaled = true;
	return rw_add_sge(rw, wr, (uint8_t *)sink[ci] + off, seg->length, sink_lkey[ci]);
}

/*
 * A Write targets one segment and gathers up to @sge_per_wr pieces, as the
 * kernel's rdma_rw splits by the device's max_send_sge; the Writes are
 * unsignalled (the Send after them completes the chain).
 */
bool rr_rw_write_chunk(struct rr_rw_ctx *rw, const struct rr_pcl *pcl, const struct rr_chunk *ch,
		       const struct rr_rw_piece *pc, int npc, uint32_t sge_per_wr)
{
	unsigned int si = 0;
	uint32_t so = 0, po = 0;
	int pi = 0;

	while (pi < npc) {
		const struct rr_segment *seg;
		struct fab_send_wr *wr;

		if (si >= ch->nsegs)
			return false;
		seg = &pcl->segs[ch->first + si];
		wr = rw_seg_wr(rw, FAB_WR_RDMA_WRITE, seg, so, RR_WRID_WRITE);
		if (!wr)
			return false;
		while (pi < npc && so < seg->length && (uint32_t)wr->num_sge < sge_per_wr) {
			uint32_t take = pc[pi].len - po;

			if (take > seg->length - so)
				take = seg->length - so;
			if (!rw_add_sge(rw, wr, pc[pi].addr + po, take, pc[pi].lkey))
				return false;
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

/*
 * A Write ends where its segment ends, where it holds @sge_per_wr pieces, or
 * where a span's pieces end; SGE boundaries are piece or segment boundaries.
 * So a chain of at most RR_SEND_MAX_SGE SGEs over RR_PCL_MAX_SEGS segments
 * and RR_PCL_MAX_WRITE_CHUNKS spans plus the Reply chunk needs at most this
 * many Writes, and the Send.
 */
uint32_t rr_rw_reply_max_wr(uint32_t sge_per_wr)
{
	uint32_t k = sge_per_wr ? sge_per_wr : 1;
	uint32_t n = RR_PCL_MAX_SEGS + (RR_SEND_MAX_SGE + k - 1) / k + RR_PCL_MAX_WRITE_CHUNKS + 2;

	return n < RR_SEND_MAX_WR ? n : RR_SEND_MAX_WR;
}

bool rr_rw_lend(struct rr_send_ctx *s, void *addr, size_t len, uint32_t *lkey)
{
	struct rr_conn *c = s->conn;
	struct fab_mr *mr;

	if (!s->lent && !(s->lent = calloc(RR_LENT_MAX, sizeof(*s->lent))))
		return false;
	if (s->nlent >= RR_LENT_MAX)
		return false;
	/* Local access only: the source of this Reply's Writes, never a
	 * target of the peer's. */
	if (fab_mr_reg(c->pd, addr, len, 0, &mr))
		return false;
	RR_STAT_ADD(c, registrations, 1);
	s->lent[s->nlent++] = mr;
	*lkey = mr->lkey;
	return true;
}

/* lkey for memory the engine registered, or false. */
static bool lkey_of(struct rr_send_ctx *s, void *addr, size_t len, uint32_t *lkey)
{
	struct rr_conn *c = s->conn;

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
	if (rr_send_lkey(s, addr, len, lkey))
		return true;
	/* iWARP: the payload pools and the sink pool are the device PD's,
	 * not this QP's (docs/devices.md) */
	if (c->own_pd)
		return s->nlent < RR_LENT_PIECES && rr_rw_lend(s, addr, len, lkey);
	return rr_big_lkey(c->big, addr, len, lkey); /* buffer by buffer: last */
}

bool rr_rw_pieces(struct rr_send_ctx *s, const struct iovec *iov, int iovcnt, uint64_t off,
		  uint64_t len, struct rr_rw_piece *pc, int *npc)
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

			if (n >= RR_RW_MAX_PIECES)
				return false;
			pc[n].addr = (const uint8_t *)iov[i].iov_base + off;
			pc[n].len = t;
			if (!lkey_of(s, (uint8_t *)iov[i].iov_base + off, t, &pc[n].lkey))
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

void rr_rw_copy(const struct iovec *iov, int iovcnt, uint64_t off, uint64_t len, uint8_t *dst)
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

int rr_rw_post(struct rr_conn *c, struct fab_send_wr *first, struct fab_send_wr **bad,
	       const char *what)
{
	int ret;

	*bad = NULL;
	ret = fab_post_send(c->fc, first, bad);
	if (ret)
		rr_conn_close(c, what);
	return ret;
}
