// SPDX-License-Identifier: MIT
/*
 * fab_verbs_data.c - the "verbs" provider's data path: PDs (one per
 * ibv_context, cached), memory registration, CQs with a completion channel,
 * QP creation and posting.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/fab_verbs_int.h"

/* Post in batches so a chain costs one doorbell per batch, without malloc. */
#define VB_BATCH_WR 16
#define VB_BATCH_SGE 64

struct vb_pd *vb_pd_for(struct vb_fabric *vf, struct ibv_context *ctx)
{
	struct vb_pd *pd = NULL;
	int i;

	if (!ctx) {
		fab_set_error(-ENODEV, "verbs: connection has no device yet");
		return NULL;
	}
	pthread_mutex_lock(&vf->lock);
	for (i = 0; i < vf->ndev; i++) {
		if (vf->devs[i].ctx == ctx) {
			pd = vf->devs[i].pd;
			break;
		}
	}
	if (!pd && i == vf->ndev && vf->ndev < VB_MAX_DEVS) {
		pd = calloc(1, sizeof(*pd));
		if (pd) {
			pd->fab = &vf->base;
			pd->ctx = ctx;
			pd->pd = ibv_alloc_pd(ctx);
			if (!pd->pd) {
				fab_set_error(-ENOMEM, "verbs: ibv_alloc_pd failed");
				free(pd);
				pd = NULL;
			} else {
				vf->devs[vf->ndev].ctx = ctx;
				vf->devs[vf->ndev].pd = pd;
				vf->ndev++;
			}
		}
	}
	pthread_mutex_unlock(&vf->lock);
	return pd;
}

int vb_pd_get(struct fab_fabric *fab, struct fab_pd **out)
{
	struct vb_fabric *vf = (struct vb_fabric *)fab;
	struct vb_pd *pd;

	if (!vf->list || !vf->list[0] || atomic_load(&vf->stale))
		return fab_set_error(-ENODEV, "verbs: no RDMA device");
	pd = vb_pd_for(vf, vf->list[0]);
	if (!pd)
		return -ENOMEM;
	*out = (struct fab_pd *)pd;
	return 0;
}

int vb_mr_reg(struct fab_pd *fpd, void *addr, size_t len, unsigned int access, struct fab_mr **out)
{
	struct vb_pd *pd = (struct vb_pd *)fpd;
	int flags = 0;
	struct vb_mr *mr;

	if (access & FAB_ACCESS_LOCAL_WRITE)
		flags |= IBV_ACCESS_LOCAL_WRITE;
	if (access & FAB_ACCESS_REMOTE_READ)
		flags |= IBV_ACCESS_REMOTE_READ;
	if (access & FAB_ACCESS_REMOTE_WRITE)
		flags |= IBV_ACCESS_REMOTE_WRITE;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return fab_set_error(-ENOMEM, "verbs: out of memory for MR");
	mr->mr = ibv_reg_mr(pd->pd, addr, len, flags);
	if (!mr->mr) {
		int err = errno ? -errno : -EINVAL;

		free(mr);
		return fab_set_error(err, "verbs: ibv_reg_mr: %s", strerror(-err));
	}
	mr->fab = pd->fab;
	mr->pub.addr = addr;
	mr->pub.length = len;
	mr->pub.lkey = mr->mr->lkey;
	mr->pub.rkey = mr->mr->rkey;
	mr->pub.access = access;
	mr->pub.prov = mr;
	fab_count(&pd->fab->cnt.registrations, 1);
	*out = &mr->pub;
	return 0;
}

void vb_mr_dereg(struct fab_mr *pub)
{
	struct vb_mr *mr = pub->prov;

	ibv_dereg_mr(mr->mr);
	fab_count(&mr->fab->cnt.deregistrations, 1);
	free(mr);
}

static int cq_create_on(struct vb_fabric *vf, struct ibv_context *ctx, int depth,
			struct fab_cq **out)
{
	struct vb_cq *cq;
	int fl;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return fab_set_error(-ENOMEM, "verbs: out of memory for CQ");
	cq->fab = &vf->base;
	cq->cc = ibv_create_comp_channel(ctx);
	if (!cq->cc) {
		free(cq);
		return fab_set_error(-ENOMEM, "verbs: ibv_create_comp_channel failed");
	}
	fl = fcntl(cq->cc->fd, F_GETFL);
	fcntl(cq->cc->fd, F_SETFL, fl | O_NONBLOCK);
	cq->cq = ibv_create_cq(ctx, depth > 0 ? depth : 64, cq, cq->cc, 0);
	if (!cq->cq) {
		ibv_destroy_comp_channel(cq->cc);
		free(cq);
		return fab_set_error(-ENOMEM, "verbs: ibv_create_cq failed");
	}
	*out = (struct fab_cq *)cq;
	return 0;
}

int vb_cq_create(struct fab_fabric *fab, int depth, struct fab_cq **out)
{
	struct vb_fabric *vf = (struct vb_fabric *)fab;

	/* After a removal, nothing new on the old list until fab_listen re-reads it. */
	if (!vf->list || !vf->list[0] || atomic_load(&vf->stale))
		return fab_set_error(-ENODEV, "verbs: no RDMA device");
	return cq_create_on(vf, vf->list[0], depth, out);
}

int vb_conn_cq_create(struct fab_conn *fc, int depth, struct fab_cq **out)
{
	struct vb_conn *c = (struct vb_conn *)fc;

	if (!c->id || !c->id->verbs)
		return fab_set_error(-ENODEV, "verbs: connection has no device yet");
	return cq_create_on(c->vf, c->id->verbs, depth, out);
}

void vb_cq_destroy(struct fab_cq *fcq)
{
	struct vb_cq *cq = (struct vb_cq *)fcq;

	ibv_destroy_cq(cq->cq);
	ibv_destroy_comp_channel(cq->cc);
	free(cq);
}

int vb_cq_fd(const struct fab_cq *fcq)
{
	return ((const struct vb_cq *)fcq)->cc->fd;
}

int vb_cq_get_event(struct fab_cq *fcq)
{
	struct vb_cq *cq = (struct vb_cq *)fcq;
	struct ibv_cq *ev_cq;
	void *ctx;

	if (ibv_get_cq_event(cq->cc, &ev_cq, &ctx))
		return -EAGAIN;
	ibv_ack_cq_events(ev_cq, 1);
	return 0;
}

int vb_cq_arm(struct fab_cq *fcq)
{
	int rc = ibv_req_notify_cq(((struct vb_cq *)fcq)->cq, 0);

	return rc ? -rc : 0;
}

static enum fab_wc_status vb_status(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS:
		return FAB_WC_SUCCESS;
	case IBV_WC_LOC_LEN_ERR:
		return FAB_WC_LOC_LEN_ERR;
	case IBV_WC_LOC_PROT_ERR:
		return FAB_WC_LOC_PROT_ERR;
	case IBV_WC_LOC_QP_OP_ERR:
		return FAB_WC_LOC_QP_OP_ERR;
	case IBV_WC_REM_ACCESS_ERR:
		return FAB_WC_REM_ACCESS_ERR;
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
		return FAB_WC_REM_OP_ERR;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return FAB_WC_RNR_RETRY_EXC_ERR;
	case IBV_WC_RETRY_EXC_ERR:
		return FAB_WC_RETRY_EXC_ERR;
	case IBV_WC_WR_FLUSH_ERR:
		return FAB_WC_WR_FLUSH_ERR;
	default:
		return FAB_WC_GENERAL_ERR;
	}
}

static enum fab_wc_opcode vb_opcode(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_RDMA_WRITE:
		return FAB_WC_RDMA_WRITE;
	case IBV_WC_RDMA_READ:
		return FAB_WC_RDMA_READ;
	case IBV_WC_RECV:
	case IBV_WC_RECV_RDMA_WITH_IMM:
		return FAB_WC_RECV;
	default:
		return FAB_WC_SEND;
	}
}

static struct vb_conn *qpmap_find_locked(struct vb_fabric *vf, uint32_t qpn)
{
	for (uint32_t i = 0; i < vf->nmap; i++)
		if (vf->map[i].qpn == qpn)
			return vf->map[i].c;
	return NULL;
}

/* RPCRDMA_FABRIC_DEBUG=1: raw ibv statuses (failed completions, QP changes) on stderr. */
bool vb_debug(void)
{
	static int on = -1;

	if (on < 0) {
		const char *e = getenv("RPCRDMA_FABRIC_DEBUG");

		on = e && *e && strcmp(e, "0") != 0;
	}
	return on;
}

int vb_cq_poll(struct fab_cq *fcq, struct fab_wc *wc, int n)
{
	struct vb_cq *cq = (struct vb_cq *)fcq;
	struct vb_fabric *vf = (struct vb_fabric *)cq->fab;
	struct ibv_wc iw[16];
	int done = 0;

	while (done < n) {
		int want = n - done < 16 ? n - done : 16;
		int got = ibv_poll_cq(cq->cq, want, iw);

		if (got < 0)
			return done ? done : -EIO;
		pthread_mutex_lock(&vf->lock);
		for (int i = 0; i < got; i++) {
			struct fab_wc *w = &wc[done + i];

			memset(w, 0, sizeof(*w));
			w->wr_id = iw[i].wr_id;
			w->status = vb_status(iw[i].status);
			if (iw[i].status != IBV_WC_SUCCESS && vb_debug())
				fprintf(stderr,
					"verbs: wc wr_id %llu qp %u opcode %d status %d (%s) "
					"vendor_err 0x%x\n",
					(unsigned long long)iw[i].wr_id, iw[i].qp_num,
					(int)iw[i].opcode, (int)iw[i].status,
					ibv_wc_status_str(iw[i].status), iw[i].vendor_err);
			w->opcode = vb_opcode(iw[i].opcode);
			w->byte_len = iw[i].byte_len;
			if (iw[i].status == IBV_WC_SUCCESS && (iw[i].wc_flags & IBV_WC_WITH_INV)) {
				w->with_inv = true;
				w->inv_rkey = iw[i].invalidated_rkey;
			}
			w->conn = (struct fab_conn *)qpmap_find_locked(vf, iw[i].qp_num);
			if (w->opcode == FAB_WC_RECV && w->status == FAB_WC_SUCCESS)
				fab_count(&vf->base.cnt.recv_bytes, w->byte_len);
		}
		pthread_mutex_unlock(&vf->lock);
		done += got;
		if (got < want)
			break;
	}
	return done;
}

void vb_qpmap_del(struct vb_fabric *vf, uint32_t qpn)
{
	pthread_mutex_lock(&vf->lock);
	for (uint32_t i = 0; i < vf->nmap; i++) {
		if (vf->map[i].qpn == qpn) {
			vf->map[i] = vf->map[--vf->nmap];
			break;
		}
	}
	pthread_mutex_unlock(&vf->lock);
}

int vb_create_qp(struct vb_conn *c, struct vb_cq *scq, struct vb_cq *rcq,
		 const struct fab_qp_caps *caps)
{
	struct vb_fabric *vf = c->vf;
	struct ibv_qp_init_attr attr = {
	    .qp_context = c,
	    .send_cq = scq->cq,
	    .recv_cq = rcq->cq,
	    .cap =
		{
		    .max_send_wr = caps->max_send_wr,
		    .max_recv_wr = caps->max_recv_wr,
		    .max_send_sge = caps->max_send_sge,
		    .max_recv_sge = caps->max_recv_sge,
		},
	    .qp_type = IBV_QPT_RC,
	    .sq_sig_all = 0,
	};
	struct vb_pd *pd = c->own_pd ? c->own_pd : vb_pd_for(vf, c->id->verbs);
	struct vb_srq *srq = (struct vb_srq *)caps->srq;

	if (!pd)
		return fab_set_error(-ENOMEM, "verbs: no PD for the connection's device");
	if (srq) {
		if (srq->pd != pd)
			return fab_set_error(-EINVAL, "verbs: SRQ is on another device's PD");
		attr.srq = srq->srq;
		attr.cap.max_recv_wr = 0;
		attr.cap.max_recv_sge = 0;
	}
	if (rdma_create_qp(c->id, pd->pd, &attr))
		return fab_set_error(errno ? -errno : -EINVAL, "verbs: rdma_create_qp: %s",
				     strerror(errno));
	c->qp = c->id->qp;
	pthread_mutex_lock(&vf->lock);
	if (vf->nmap == vf->capmap) {
		uint32_t n = vf->capmap ? vf->capmap * 2 : 32;
		struct vb_qpmap *m = realloc(vf->map, n * sizeof(*m));

		if (m) {
			vf->map = m;
			vf->capmap = n;
		}
	}
	if (vf->nmap < vf->capmap) {
		vf->map[vf->nmap].qpn = c->qp->qp_num;
		vf->map[vf->nmap].c = c;
		vf->nmap++;
	}
	pthread_mutex_unlock(&vf->lock);
	return 0;
}

static enum ibv_wr_opcode vb_wr_opcode(enum fab_wr_opcode op)
{
	switch (op) {
	case FAB_WR_SEND_WITH_INV:
		return IBV_WR_SEND_WITH_INV;
	case FAB_WR_RDMA_WRITE:
		return IBV_WR_RDMA_WRITE;
	case FAB_WR_RDMA_READ:
		return IBV_WR_RDMA_READ;
	default:
		return IBV_WR_SEND;
	}
}

int vb_post_send(struct fab_conn *fc, struct fab_send_wr *wr, struct fab_send_wr **bad)
{
	struct vb_conn *c = (struct vb_conn *)fc;
	struct ibv_send_wr iw[VB_BATCH_WR], *ibad;
	struct fab_send_wr *first[VB_BATCH_WR];
	struct ibv_sge sge[VB_BATCH_SGE];

	if (!c->qp)
		return fab_set_error(-EINVAL, "verbs: no QP");
	while (wr) {
		int nw = 0, ns = 0, rc;

		for (; wr && nw < VB_BATCH_WR; wr = wr->next) {
			struct ibv_send_wr *w = &iw[nw];

			if (wr->num_sge < 0 || wr->num_sge > VB_BATCH_SGE) {
				if (bad)
					*bad = wr;
				return fab_set_error(-EINVAL, "verbs: too many SGEs");
			}
			if (ns + wr->num_sge > VB_BATCH_SGE)
				break;
			memset(w, 0, sizeof(*w));
			w->wr_id = wr->wr_id;
			w->opcode = vb_wr_opcode(wr->opcode);
			w->send_flags = wr->signaled ? IBV_SEND_SIGNALED : 0;
			w->sg_list = &sge[ns];
			w->num_sge = wr->num_sge;
			for (int i = 0; i < wr->num_sge; i++, ns++) {
				sge[ns].addr = (uintptr_t)wr->sg_list[i].addr;
				sge[ns].length = wr->sg_list[i].length;
				sge[ns].lkey = wr->sg_list[i].lkey;
			}
			if (wr->opcode == FAB_WR_SEND_WITH_INV) {
				w->invalidate_rkey = wr->invalidate_rkey;
				/* libsiw takes the STag to invalidate from
				 * wr.rdma.rkey, never invalidate_rkey
				 * (rdma-core providers/siw/siw.c, push_send_wqe);
				 * a Send does not read wr.rdma otherwise */
				w->wr.rdma.rkey = wr->invalidate_rkey;
			}
			if (wr->opcode == FAB_WR_RDMA_WRITE || wr->opcode == FAB_WR_RDMA_READ) {
				w->wr.rdma.remote_addr = wr->remote_addr;
				w->wr.rdma.rkey = wr->rkey;
			}
			if (nw)
				iw[nw - 1].next = w;
			first[nw] = wr;
			nw++;
		}
		rc = ibv_post_send(c->qp, iw, &ibad);
		if (rc) {
			if (bad)
				*bad = ibad ? first[ibad - iw] : first[0];
			return fab_set_error(-rc, "verbs: ibv_post_send: %s", strerror(rc));
		}
		for (int i = 0; i < nw; i++)
			fab_count_send(&c->vf->base, first[i]);
	}
	return 0;
}

/* One chain to a QP's receive queue or to an SRQ, in doorbell batches. */
static int vb_post_recv_chain(struct vb_fabric *vf, struct ibv_qp *qp, struct ibv_srq *srq,
			      struct fab_recv_wr *wr, struct fab_recv_wr **bad)
{
	struct ibv_recv_wr iw[VB_BATCH_WR], *ibad;
	struct fab_recv_wr *first[VB_BATCH_WR];
	struct ibv_sge sge[VB_BATCH_SGE];

	while (wr) {
		int nw = 0, ns = 0, rc;

		for (; wr && nw < VB_BATCH_WR; wr = wr->next) {
			struct ibv_recv_wr *w = &iw[nw];

			if (wr->num_sge < 0 || wr->num_sge > VB_BATCH_SGE) {
				if (bad)
					*bad = wr;
				return fab_set_error(-EINVAL, "verbs: too many SGEs");
			}
			if (ns + wr->num_sge > VB_BATCH_SGE)
				break;
			memset(w, 0, sizeof(*w));
			w->wr_id = wr->wr_id;
			w->sg_list = &sge[ns];
			w->num_sge = wr->num_sge;
			for (int i = 0; i < wr->num_sge; i++, ns++) {
				sge[ns].addr = (uintptr_t)wr->sg_list[i].addr;
				sge[ns].length = wr->sg_list[i].length;
				sge[ns].lkey = wr->sg_list[i].lkey;
			}
			if (nw)
				iw[nw - 1].next = w;
			first[nw] = wr;
			nw++;
		}
		ibad = NULL;
		rc = srq ? ibv_post_srq_recv(srq, iw, &ibad) : ibv_post_recv(qp, iw, &ibad);
		if (rc) {
			if (bad)
				*bad = ibad ? first[ibad - iw] : first[0];
			return fab_set_error(-rc, "verbs: %s: %s",
					     srq ? "ibv_post_srq_recv" : "ibv_post_recv",
					     strerror(rc));
		}
		fab_count(&vf->base.cnt.recv_posted, (uint64_t)nw);
	}
	return 0;
}

int vb_post_recv(struct fab_conn *fc, struct fab_recv_wr *wr, struct fab_recv_wr **bad)
{
	struct vb_conn *c = (struct vb_conn *)fc;

	if (!c->qp)
		return fab_set_error(-EINVAL, "verbs: no QP");
	if (c->qp->srq)
		return fab_set_error(-EINVAL, "verbs: QP takes receives from an SRQ");
	return vb_post_recv_chain(c->vf, c->qp, NULL, wr, bad);
}

int vb_srq_create(struct fab_pd *fpd, uint32_t max_wr, uint32_t max_sge, struct fab_srq **out)
{
	struct vb_pd *pd = (struct vb_pd *)fpd;
	struct ibv_srq_init_attr attr = {
	    .attr = {.max_wr = max_wr, .max_sge = max_sge},
	};
	struct vb_srq *q = calloc(1, sizeof(*q));

	if (!q)
		return fab_set_error(-ENOMEM, "verbs: out of memory for SRQ");
	q->srq = ibv_create_srq(pd->pd, &attr);
	if (!q->srq) {
		int err = errno ? -errno : -EINVAL;

		free(q);
		return fab_set_error(err, "verbs: ibv_create_srq(%u wr): %s", max_wr,
				     strerror(-err));
	}
	q->fab = pd->fab;
	q->pd = pd;
	*out = (struct fab_srq *)q;
	return 0;
}

int vb_srq_destroy(struct fab_srq *fq)
{
	struct vb_srq *q = (struct vb_srq *)fq;
	int rc = ibv_destroy_srq(q->srq);

	if (rc)
		return fab_set_error(-rc, "verbs: ibv_destroy_srq: %s", strerror(rc));
	free(q);
	return 0;
}

int vb_post_srq_recv(struct fab_srq *fq, struct fab_recv_wr *wr, struct fab_recv_wr **bad)
{
	struct vb_srq *q = (struct vb_srq *)fq;

	return vb_post_recv_chain((struct vb_fabric *)q->fab, NULL, q->srq, wr, bad);
}
