// SPDX-License-Identifier: MIT
/*
 * rr_fuzz_fabric.c - the engine fuzzers' recording fabric: a fab_ops table
 * (src/fabric/fab_internal.h) with no network behind it. Every post is
 * checked (SGEs inside a registered MR under their lkey with the access the
 * operation needs, send-queue depth, SGE counts) and handed to the simulated
 * client (rr_fuzz_engine.c) to carry out; completions queue until the
 * driver lets the engine poll them, in batches of its choosing. One work
 * request may be made to fail: the QP then goes to error and every later
 * one, and every posted receive, is flushed - as a verbs QP does.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rr_fuzz_int.h"

static struct rrf_mr *mr_by_lkey(uint32_t lkey)
{
	for (unsigned int i = 0; i < F.nmr; i++)
		if (F.mrs[i]->mr.lkey == lkey)
			return F.mrs[i];
	return NULL;
}

/* A local SGE must lie inside the MR its lkey names, with @access. */
void rrf_check_sge(const struct fab_sge *sge, unsigned int access)
{
	struct rrf_mr *m = mr_by_lkey(sge->lkey);
	const uint8_t *a = sge->addr, *b;

	CHECK(m != NULL);
	b = m->mr.addr;
	CHECK(a >= b && sge->length <= m->mr.length && a - b <= (ptrdiff_t)(m->mr.length - sge->length));
	CHECK((m->mr.access & access) == access);
}

void rrf_push_cqe(const struct fab_wc *wc, uint64_t seq)
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

		rrf_push_cqe(&wc, 0);
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

/* As large as the engine may ask for: the fuzzers drive parsing, not sizing. */
static int op_listener_limits(struct fab_listener *l, struct fab_limits *out)
{
	(void)l;
	out->max_qp_wr = out->max_cqe = out->max_srq_wr = UINT32_MAX;
	out->max_send_sge = out->max_recv_sge = out->max_read_sge = out->max_rd_atom = 255;
	out->send_with_inv = true;
	out->transport = FAB_TRANSPORT_ROCE;
	snprintf(out->device, sizeof(out->device), "fuzz");
	return 0;
}

static int op_conn_limits(struct fab_conn *c, struct fab_limits *out)
{
	(void)c;
	return op_listener_limits(NULL, out);
}

static int op_device_limits(struct fab_fabric *f, struct fab_limits *out)
{
	(void)f;
	return op_listener_limits(NULL, out);
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

/* One device here: a connection's CQ is the fabric's. */
static int op_conn_cq_create(struct fab_conn *c, int depth, struct fab_cq **out)
{
	(void)c;
	return op_cq_create(&F.fab, depth, out);
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
		rrf_check_sge(&wr->sg_list[0], FAB_ACCESS_LOCAL_WRITE);
		if (F.conn->error) {
			struct fab_wc wc = {.wr_id = wr->wr_id, .status = FAB_WC_WR_FLUSH_ERR,
					    .opcode = FAB_WC_RECV, .conn = c};

			rrf_push_cqe(&wc, 0);
			continue;
		}
		CHECK(F.nrq < sizeof(F.rq) / sizeof(F.rq[0]));
		CHECK(F.nrq < F.conn->caps.max_recv_wr);
		F.rq[F.nrq++] = (struct rrf_recv){wr->wr_id, wr->sg_list[0].addr,
						  wr->sg_list[0].length};
	}
	return 0;
}

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
				rrf_client_read(wr);
			break;
		case FAB_WR_RDMA_WRITE:
			wc.opcode = FAB_WC_RDMA_WRITE;
			for (int i = 0; i < wr->num_sge; i++)
				F.write_bytes += wr->sg_list[i].length;
			if (!F.conn->error && !fail)
				rrf_client_write(wr);
			break;
		case FAB_WR_SEND:
		case FAB_WR_SEND_WITH_INV: {
			uint8_t buf[RRF_INLINE + 64];
			size_t len = 0;

			wc.opcode = FAB_WC_SEND;
			for (int i = 0; i < wr->num_sge; i++) {
				rrf_check_sge(&wr->sg_list[i], 0);
				/* no Send larger than the client's receive buffers */
				CHECK(len + wr->sg_list[i].length <= F.client_recv);
				memcpy(buf + len, wr->sg_list[i].addr, wr->sg_list[i].length);
				len += wr->sg_list[i].length;
			}
			if (!F.conn->error && !fail)
				rrf_client_send(buf, len, wr->opcode == FAB_WR_SEND_WITH_INV,
					wr->invalidate_rkey);
			rrf_clear_pending_writes();
			break;
		}
		default:
			CHECK(!"unknown opcode");
		}
		if (F.conn->error || fail) {
			wc.status = fail && !F.conn->error ? FAB_WC_REM_ACCESS_ERR
							  : FAB_WC_WR_FLUSH_ERR;
			rrf_push_cqe(&wc, F.sq_posted);
			if (fail)
				qp_error();
		} else if (wr->signaled) {
			wc.status = FAB_WC_SUCCESS;
			rrf_push_cqe(&wc, F.sq_posted);
		}
	}
	return 0;
}

static void op_close(struct fab_fabric *fab)
{
	(void)fab;
}

const struct fab_ops rrf_ops = {
	.name = "fuzz",
	.caps = 0,
	.close = op_close,
	.channel_create = op_channel_create,
	.channel_destroy = op_channel_destroy,
	.channel_fd = op_channel_fd,
	.channel_get_event = op_channel_get_event,
	.listen = op_listen,
	.listener_destroy = op_listener_destroy,
	.listener_limits = op_listener_limits,
	.conn_limits = op_conn_limits,
	.device_limits = op_device_limits,
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
	.conn_cq_create = op_conn_cq_create,
	.cq_destroy = op_cq_destroy,
	.cq_fd = op_cq_fd,
	.cq_get_event = op_cq_noop,
	.cq_arm = op_cq_noop,
	.cq_poll = op_cq_poll,
	.post_send = op_post_send,
	.post_recv = op_post_recv,
};

