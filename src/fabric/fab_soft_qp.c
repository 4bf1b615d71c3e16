// SPDX-License-Identifier: MIT
/*
 * fab_soft_qp.c - the "soft" provider's queue pair: send and receive queues,
 * posting, in-order completion, and the move to error that flushes them.
 *
 * A send WR is completed only when answered by the peer and no I/O thread
 * still reads or fills its SGEs, so a buffer is never touched after the user
 * saw its completion.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "fabric/fab_soft_int.h"

/* --- queue pair --------------------------------------------------------- */

/* What a work request needs of the device beyond its SGE count: a Read's
 * SGEs (max_sge_rd) and Send With Invalidate. */
static bool soft_wr_fits_device(const struct soft_conn *c, const struct fab_send_wr *wr)
{
	if (wr->opcode == FAB_WR_RDMA_READ)
		return (uint32_t)wr->num_sge <= c->lim.max_read_sge;
	if (wr->opcode == FAB_WR_SEND_WITH_INV)
		return c->lim.send_with_inv;
	return true;
}

/*
 * The send ring full (or not made): twice the pointers, the live ones
 * moved to their positions in the larger ring, a segment of new entries
 * for the rest. c->lock held, or the QP not yet in use. 0 or -ENOMEM.
 */
static int sq_grow(struct soft_conn *c)
{
	uint32_t ncap = c->sq_cap ? 2 * c->sq_cap : SOFT_SQ_FIRST, nnew = ncap - c->sq_cap;
	size_t sge = c->caps.max_send_sge;
	struct soft_swr **ring, *e;
	struct fab_sge *g;
	uint32_t k = 0;

	if (c->sq_nseg == SOFT_SQ_MAX_SEGS)
		return -ENOMEM;
	ring = calloc(ncap, sizeof(*ring));
	e = calloc(nnew, sizeof(*e) + sge * sizeof(*g));
	if (!ring || !e) {
		free(ring);
		free(e);
		return -ENOMEM;
	}
	g = (struct fab_sge *)(e + nnew);
	for (uint64_t i = c->sq_head; c->sq && i < c->sq_tail; i++)
		ring[i & (ncap - 1)] = c->sq[i & (c->sq_cap - 1)];
	/* the slots no live position holds take the new entries */
	for (uint32_t s = 0; s < ncap; s++) {
		if (ring[s])
			continue;
		e[k].sge = &g[k * sge];
		ring[s] = &e[k++];
	}
	free(c->sq);
	c->sq = ring;
	c->sq_cap = ncap;
	c->sq_seg[c->sq_nseg++] = e;
	return 0;
}

int soft_qp_alloc(struct soft_conn *c, struct fab_cq *send_cq, struct fab_cq *recv_cq,
		  const struct fab_qp_caps *caps)
{
	struct fab_qp_caps k = *caps;

	if (!send_cq || !recv_cq)
		return fab_set_error(-EINVAL, "soft: QP needs send and receive CQs");
	if (!k.max_send_wr)
		k.max_send_wr = 1;
	if (!k.max_recv_wr)
		k.max_recv_wr = 1;
	if (!k.max_send_sge)
		k.max_send_sge = 1;
	if (!k.max_recv_sge)
		k.max_recv_sge = 1;
	if (k.srq && ((struct soft_srq *)k.srq)->pd != c->pd)
		return fab_set_error(-EINVAL, "soft: the SRQ is of another protection domain");
	if (k.srq) {
		/* No queue of its own; the scratch SGEs must hold the SRQ's widest receive. */
		k.max_recv_wr = 1;
		k.max_recv_sge = ((struct soft_srq *)k.srq)->max_sge;
	}
	c->lim = soft_lim(c->sf);
	if (k.max_send_wr > c->lim.max_qp_wr || k.max_recv_wr > c->lim.max_qp_wr ||
	    k.max_send_sge > c->lim.max_send_sge || k.max_recv_sge > c->lim.max_recv_sge)
		return fab_set_error(-EINVAL,
				     "soft: QP caps %u/%u WRs, %u/%u SGEs beyond device %s "
				     "(%u WRs, %u/%u SGEs)",
				     k.max_send_wr, k.max_recv_wr, k.max_send_sge, k.max_recv_sge,
				     c->lim.device, c->lim.max_qp_wr, c->lim.max_send_sge,
				     c->lim.max_recv_sge);
	c->caps = k;
	c->rq = calloc(k.max_recv_wr, sizeof(*c->rq));
	c->rq_sge = calloc((size_t)(k.max_recv_wr + 1) * k.max_recv_sge, sizeof(*c->rq_sge));
	/* grows when responses queue up (soft_ctl_push_locked) */
	c->ctl_cap = 4;
	c->ctl = calloc(c->ctl_cap, sizeof(*c->ctl));
	if (!c->rq || !c->rq_sge || !c->ctl || sq_grow(c)) {
		soft_qp_free(c);
		return fab_set_error(-ENOMEM, "soft: out of memory for QP");
	}
	for (uint32_t i = 0; i < k.max_recv_wr; i++)
		c->rq[i].sge = &c->rq_sge[(size_t)i * k.max_recv_sge];
	c->scq = (struct soft_cq *)send_cq;
	c->rcq = (struct soft_cq *)recv_cq;
	if (k.srq) {
		c->srq = (struct soft_srq *)k.srq;
		pthread_mutex_lock(&c->srq->lock);
		c->srq->nqp++;
		pthread_mutex_unlock(&c->srq->lock);
	}
	c->has_qp = true;
	return 0;
}

void soft_qp_free(struct soft_conn *c)
{
	for (uint32_t i = 0; i < c->sq_nseg; i++)
		free(c->sq_seg[i]);
	free(c->sq);
	c->sq_cap = 0;
	free(c->rq);
	free(c->rq_sge);
	free(c->ctl);
	c->sq = NULL;
	c->sq_nseg = 0;
	c->sq_cap = 0;
	c->rq = NULL;
	c->rq_sge = NULL;
	c->ctl = NULL;
	if (c->srq) {
		pthread_mutex_lock(&c->srq->lock);
		c->srq->nqp--;
		pthread_mutex_unlock(&c->srq->lock);
		c->srq = NULL;
	}
	c->has_qp = false;
}

static enum fab_wc_opcode wc_opcode(enum fab_wr_opcode op)
{
	switch (op) {
	case FAB_WR_RDMA_WRITE:
		return FAB_WC_RDMA_WRITE;
	case FAB_WR_RDMA_READ:
		return FAB_WC_RDMA_READ;
	default:
		return FAB_WC_SEND;
	}
}

/* Complete send WRs in order; in error, flush all that no thread is using. */
void soft_sq_progress_locked(struct soft_conn *c)
{
	while (c->sq_head < c->sq_tail) {
		struct soft_swr *e = soft_sq_at(c, c->sq_head);

		if (e->busy)
			break;
		if (!e->done) {
			if (!c->qp_err)
				break;
			e->done = true;
			e->st = FAB_WC_WR_FLUSH_ERR;
		}
		if (e->signaled || e->st != FAB_WC_SUCCESS) {
			struct fab_wc wc = {
			    .wr_id = e->wr_id,
			    .status = e->st,
			    .opcode = wc_opcode(e->op),
			    .byte_len = e->len,
			    .conn = (struct fab_conn *)c,
			};
			soft_cq_push(c->scq, &wc);
		}
		c->sq_head++;
	}
	if (c->sq_resp < c->sq_head)
		c->sq_resp = c->sq_head;
	if (c->sq_tx < c->sq_head)
		c->sq_tx = c->sq_head;
}

void soft_rq_flush_locked(struct soft_conn *c)
{
	if (!c->qp_err || c->rx_busy)
		return;
	while (c->rq_head < c->rq_tail) {
		struct soft_rwr *r = &c->rq[c->rq_head % c->caps.max_recv_wr];
		struct fab_wc wc = {
		    .wr_id = r->wr_id,
		    .status = FAB_WC_WR_FLUSH_ERR,
		    .opcode = FAB_WC_RECV,
		    .conn = (struct fab_conn *)c,
		};

		soft_cq_push(c->rcq, &wc);
		c->rq_head++;
	}
}

/*
 * Our QP failed for a reason the owner sees no completion for (an RNR we
 * detected as responder, or the peer's QP failing ours): report it once as
 * verbs reports an asynchronous QP fatal event, then fail the QP.
 */
void soft_qp_fatal_locked(struct soft_conn *c)
{
	if (!c->qp_err && !c->stop && c->state == SOFT_S_EST)
		soft_cm_deliver_locked(c, FAB_CM_QP_ERROR, -EIO, NULL, 0, 0, 0);
	soft_qp_error_locked(c, false);
}

void soft_qp_error_locked(struct soft_conn *c, bool tell_peer)
{
	if (!c->has_qp)
		return;
	if (!c->qp_err) {
		c->qp_err = true;
		if (tell_peer && !c->dead)
			soft_ctl_push_locked(c, SOFT_QP_ERR, 0, 0, NULL);
	}
	soft_sq_progress_locked(c);
	soft_rq_flush_locked(c);
	soft_wake_locked(c);
}

void soft_ctl_push_locked(struct soft_conn *c, uint8_t type, uint8_t status, uint32_t n, void *addr)
{
	struct soft_ctl *it;

	if (type == SOFT_ACK && c->ctl_n) {
		it = &c->ctl[(c->ctl_head + c->ctl_n - 1) % c->ctl_cap];
		if (it->type == SOFT_ACK && it->n < UINT32_MAX - n) {
			it->n += n;
			return;
		}
	}
	if (c->ctl_n == c->ctl_cap) {
		uint32_t ncap = c->ctl_cap * 2;
		struct soft_ctl *r = malloc(ncap * sizeof(*r));

		if (!r) {
			/* Cannot answer: the link is as good as dead. */
			c->dead = true;
			shutdown(c->fd, SHUT_RDWR);
			return;
		}
		for (uint32_t i = 0; i < c->ctl_n; i++)
			r[i] = c->ctl[(c->ctl_head + i) % c->ctl_cap];
		free(c->ctl);
		c->ctl = r;
		c->ctl_head = 0;
		c->ctl_cap = ncap;
	}
	it = &c->ctl[(c->ctl_head + c->ctl_n) % c->ctl_cap];
	it->type = type;
	it->status = status;
	it->n = n;
	it->addr = addr;
	c->ctl_n++;
	soft_wake_locked(c);
}

int soft_post_send(struct fab_conn *fc, struct fab_send_wr *wr, struct fab_send_wr **bad)
{
	struct soft_conn *c = soft_conn(fc);
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	for (; wr; wr = wr->next) {
		struct soft_swr *e;

		if (!c->has_qp ||
		    (!c->qp_err && c->state != SOFT_S_EST && c->state != SOFT_S_CONNECTING)) {
			rc = fab_set_error(-EINVAL, "soft: QP not ready to send");
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > c->caps.max_send_sge ||
		    (unsigned int)wr->opcode > FAB_WR_RDMA_READ) {
			rc = fab_set_error(-EINVAL, "soft: bad send WR");
			break;
		}
		if (!soft_wr_fits_device(c, wr)) {
			rc = fab_set_error(-EINVAL, "soft: %s takes %s",
					   wr->opcode == FAB_WR_RDMA_READ ? "RDMA Read SGEs"
									  : "Send With Invalidate",
					   c->lim.device);
			break;
		}
		if (c->sq_tail - c->sq_head >= c->caps.max_send_wr) {
			rc = fab_set_error(-ENOMEM, "soft: send queue full");
			break;
		}
		if (c->sq_tail - c->sq_head == c->sq_cap && sq_grow(c)) {
			rc = fab_set_error(-ENOMEM, "soft: out of memory for the send queue");
			break;
		}
		e = soft_sq_at(c, c->sq_tail);
		e->wr_id = wr->wr_id;
		e->op = wr->opcode;
		e->signaled = wr->signaled;
		e->done = false;
		e->busy = 0;
		e->st = FAB_WC_SUCCESS;
		e->inv_rkey = wr->invalidate_rkey;
		e->rkey = wr->rkey;
		e->raddr = wr->remote_addr;
		e->nsge = wr->num_sge;
		e->len = 0;
		for (int i = 0; i < wr->num_sge; i++) {
			e->sge[i] = wr->sg_list[i];
			e->len += wr->sg_list[i].length;
		}
		if (!soft_local_ok(c->sf, c->pd, e->sge, e->nsge, e->op == FAB_WR_RDMA_READ))
			e->st = FAB_WC_LOC_PROT_ERR; /* the writer fails it in order */
		else if (e->op == FAB_WR_RDMA_READ && c->lim.transport == FAB_TRANSPORT_IWARP &&
			 !soft_sink_tagged_ok(c->sf, c->pd, e->sge, e->nsge))
			e->st = FAB_WC_REM_ACCESS_ERR; /* the Read Response's STag is refused */
		if (e->op == FAB_WR_RDMA_READ && e->nsge) {
			atomic_store(&c->sf->last_read_sink_key, e->sge[0].lkey);
			atomic_store(&c->sf->last_read_sink_addr, (uint64_t)(uintptr_t)e->sge[0].addr);
		}
		fab_count_send(&c->sf->base, wr);
		c->sq_tail++;
	}
	if (rc && bad)
		*bad = wr;
	if (c->qp_err)
		soft_sq_progress_locked(c);
	soft_wake_locked(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int soft_post_recv(struct fab_conn *fc, struct fab_recv_wr *wr, struct fab_recv_wr **bad)
{
	struct soft_conn *c = soft_conn(fc);
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	for (; wr; wr = wr->next) {
		struct soft_rwr *r;

		if (!c->has_qp || c->srq) {
			rc = fab_set_error(-EINVAL, c->srq ? "soft: QP takes receives from an SRQ"
							   : "soft: no QP");
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > c->caps.max_recv_sge ||
		    !soft_local_ok(c->sf, c->pd, wr->sg_list, wr->num_sge, true)) {
			rc = fab_set_error(-EINVAL,
					   "soft: bad receive WR (sge count, lkey or access)");
			break;
		}
		if (c->rq_tail - c->rq_head >= c->caps.max_recv_wr) {
			rc = fab_set_error(-ENOMEM, "soft: receive queue full");
			break;
		}
		r = &c->rq[c->rq_tail % c->caps.max_recv_wr];
		r->wr_id = wr->wr_id;
		r->nsge = wr->num_sge;
		memcpy(r->sge, wr->sg_list, wr->num_sge * sizeof(*r->sge));
		c->rq_tail++;
		fab_count(&c->sf->base.cnt.recv_posted, 1);
	}
	if (rc && bad)
		*bad = wr;
	soft_rq_flush_locked(c);
	soft_wake_locked(c); /* a reader may wait out an RNR */
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* --- shared receive queue ----------------------------------------------- */

int soft_srq_create(struct fab_pd *pd, uint32_t max_wr, uint32_t max_sge, struct fab_srq **out)
{
	struct soft_fabric *sf = (struct soft_fabric *)fab_of(pd);
	struct fab_limits lim = soft_lim(sf);
	struct soft_srq *q;

	if (soft_present(sf))
		return -ENODEV;
	if (!lim.max_srq_wr)
		return fab_set_error(-EOPNOTSUPP, "soft: device %s has no shared receive queue",
				     lim.device);
	if (max_wr > lim.max_srq_wr || max_sge > lim.max_recv_sge)
		return fab_set_error(-EINVAL, "soft: SRQ of %u receives, %u SGEs: device %s "
				     "takes %u, %u", max_wr, max_sge, lim.device,
				     lim.max_srq_wr, lim.max_recv_sge);
	q = calloc(1, sizeof(*q));
	if (!q)
		return fab_set_error(-ENOMEM, "soft: out of memory for SRQ");
	q->fab = fab_of(pd);
	q->pd = (struct soft_pd *)pd;
	q->max_wr = max_wr;
	q->max_sge = max_sge;
	q->rq = calloc(max_wr, sizeof(*q->rq));
	q->sge = calloc((size_t)max_wr * max_sge, sizeof(*q->sge));
	if (!q->rq || !q->sge) {
		free(q->rq);
		free(q->sge);
		free(q);
		return fab_set_error(-ENOMEM, "soft: out of memory for SRQ");
	}
	for (uint32_t i = 0; i < max_wr; i++)
		q->rq[i].sge = &q->sge[(size_t)i * max_sge];
	pthread_mutex_init(&q->lock, NULL);
	*out = (struct fab_srq *)q;
	return 0;
}

int soft_srq_destroy(struct fab_srq *fq)
{
	struct soft_srq *q = (struct soft_srq *)fq;

	pthread_mutex_lock(&q->lock);
	if (q->nqp) {
		pthread_mutex_unlock(&q->lock);
		return fab_set_error(-EBUSY, "soft: SRQ still has %u QP(s) attached", q->nqp);
	}
	pthread_mutex_unlock(&q->lock);
	/* Receives still posted vanish without completions, as with ibv_destroy_srq. */
	pthread_mutex_destroy(&q->lock);
	free(q->rq);
	free(q->sge);
	free(q);
	return 0;
}

int soft_post_srq_recv(struct fab_srq *fq, struct fab_recv_wr *wr, struct fab_recv_wr **bad)
{
	struct soft_srq *q = (struct soft_srq *)fq;
	struct soft_fabric *sf = (struct soft_fabric *)q->fab;
	int rc = 0;

	pthread_mutex_lock(&q->lock);
	for (; wr; wr = wr->next) {
		struct soft_rwr *r;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->max_sge ||
		    !soft_local_ok(sf, q->pd, wr->sg_list, wr->num_sge, true)) {
			rc = fab_set_error(-EINVAL, "soft: bad SRQ receive WR (sge count, lkey or "
						    "access)");
			break;
		}
		if (q->tail - q->head >= q->max_wr) {
			rc = fab_set_error(-ENOMEM, "soft: SRQ full");
			break;
		}
		r = &q->rq[q->tail % q->max_wr];
		r->wr_id = wr->wr_id;
		r->nsge = wr->num_sge;
		memcpy(r->sge, wr->sg_list, wr->num_sge * sizeof(*r->sge));
		q->tail++;
		fab_count(&sf->base.cnt.recv_posted, 1);
	}
	if (rc && bad)
		*bad = wr;
	pthread_mutex_unlock(&q->lock);
	return rc;
}

bool soft_rq_pop_locked(struct soft_conn *c, uint64_t *wr_id, struct fab_sge *sge, int *nsge)
{
	struct soft_srq *q = c->srq;
	struct soft_rwr *r;

	if (!q) {
		if (c->rq_head == c->rq_tail)
			return false;
		r = &c->rq[c->rq_head++ % c->caps.max_recv_wr];
	} else {
		pthread_mutex_lock(&q->lock);
		if (q->head == q->tail) {
			pthread_mutex_unlock(&q->lock);
			return false;
		}
		r = &q->rq[q->head++ % q->max_wr];
	}
	*wr_id = r->wr_id;
	*nsge = r->nsge;
	memcpy(sge, r->sge, r->nsge * sizeof(*sge));
	if (q)
		pthread_mutex_unlock(&q->lock);
	return true;
}
