// SPDX-License-Identifier: MIT
/*
 * fab_soft_data.c - the "soft" provider's data path: completion queues,
 * memory registration, posting, and the per-connection reader and writer
 * threads that move work requests over the socket.
 *
 * Semantics follow an RC QP: requests are executed by the peer in order;
 * rkey, bounds and access rights are checked where the memory lives; any
 * error moves both QPs to error and flushes what is outstanding.
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

/* --- completion queues -------------------------------------------------- */

int soft_cq_create(struct fab_fabric *fab, int depth, struct fab_cq **out)
{
	struct soft_cq *cq = calloc(1, sizeof(*cq));

	if (!cq)
		return fab_set_error(-ENOMEM, "soft: out of memory for CQ");
	cq->fab = fab;
	cq->cap = depth > 0 ? (uint32_t)depth : 64;
	cq->ring = calloc(cq->cap, sizeof(*cq->ring));
	cq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!cq->ring || cq->efd < 0) {
		if (cq->efd >= 0)
			close(cq->efd);
		free(cq->ring);
		free(cq);
		return fab_set_error(-ENOMEM, "soft: cannot create CQ");
	}
	pthread_mutex_init(&cq->lock, NULL);
	*out = (struct fab_cq *)cq;
	return 0;
}

void soft_cq_destroy(struct fab_cq *fcq)
{
	struct soft_cq *cq = (struct soft_cq *)fcq;

	close(cq->efd);
	pthread_mutex_destroy(&cq->lock);
	free(cq->ring);
	free(cq);
}

int soft_cq_fd(const struct fab_cq *fcq)
{
	return ((const struct soft_cq *)fcq)->efd;
}

int soft_cq_get_event(struct fab_cq *fcq)
{
	struct soft_cq *cq = (struct soft_cq *)fcq;
	uint64_t v;

	if (read(cq->efd, &v, sizeof(v)) != sizeof(v))
		return -EAGAIN;
	return 0;
}

int soft_cq_arm(struct fab_cq *fcq)
{
	struct soft_cq *cq = (struct soft_cq *)fcq;

	pthread_mutex_lock(&cq->lock);
	cq->armed = true;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

int soft_cq_poll(struct fab_cq *fcq, struct fab_wc *wc, int n)
{
	struct soft_cq *cq = (struct soft_cq *)fcq;
	int i;

	pthread_mutex_lock(&cq->lock);
	for (i = 0; i < n && cq->n; i++) {
		wc[i] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->cap;
		cq->n--;
	}
	pthread_mutex_unlock(&cq->lock);
	return i;
}

/* Never drops a completion: a full ring grows (a real CQ would overrun). */
void soft_cq_push(struct soft_cq *cq, const struct fab_wc *wc)
{
	pthread_mutex_lock(&cq->lock);
	if (cq->n == cq->cap) {
		uint32_t ncap = cq->cap * 2;
		struct fab_wc *r = malloc(ncap * sizeof(*r));

		if (!r) {
			pthread_mutex_unlock(&cq->lock);
			return;
		}
		for (uint32_t i = 0; i < cq->n; i++)
			r[i] = cq->ring[(cq->head + i) % cq->cap];
		free(cq->ring);
		cq->ring = r;
		cq->head = 0;
		cq->cap = ncap;
	}
	cq->ring[(cq->head + cq->n) % cq->cap] = *wc;
	cq->n++;
	if (cq->armed) {
		uint64_t one = 1;

		cq->armed = false;
		if (write(cq->efd, &one, sizeof(one)) < 0) {
			/* counter full cannot happen with one write per arm */
		}
	}
	pthread_mutex_unlock(&cq->lock);
}

/* A destroyed conn's completions stay queued, with conn cleared (verbs: unknown qp_num). */
void soft_cq_forget(struct soft_cq *cq, struct soft_conn *c)
{
	pthread_mutex_lock(&cq->lock);
	for (uint32_t i = 0; i < cq->n; i++) {
		struct fab_wc *w = &cq->ring[(cq->head + i) % cq->cap];

		if (w->conn == (struct fab_conn *)c)
			w->conn = NULL;
	}
	pthread_mutex_unlock(&cq->lock);
}

/* --- memory ------------------------------------------------------------- */

int soft_pd_get(struct fab_fabric *fab, struct fab_pd **out)
{
	*out = (struct fab_pd *)((struct soft_fabric *)fab)->pd;
	return 0;
}

int soft_mr_reg(struct fab_pd *pd, void *addr, size_t len, unsigned int access, struct fab_mr **out)
{
	struct soft_fabric *sf = (struct soft_fabric *)fab_of(pd);
	struct soft_mr *mr;
	uint32_t idx;

	if (!addr || !len || (access & ~7u))
		return fab_set_error(-EINVAL, "soft: bad MR arguments");
	/* As ibv_reg_mr: remote write needs local write. */
	if ((access & FAB_ACCESS_REMOTE_WRITE) && !(access & FAB_ACCESS_LOCAL_WRITE))
		return fab_set_error(-EINVAL, "soft: REMOTE_WRITE needs LOCAL_WRITE");
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return fab_set_error(-ENOMEM, "soft: out of memory for MR");
	pthread_mutex_lock(&sf->lock);
	for (idx = 1; idx < sf->nmrs && sf->mrs[idx]; idx++)
		;
	if (idx >= sf->nmrs) {
		uint32_t n = sf->nmrs ? sf->nmrs * 2 : 64;
		struct soft_mr **t;

		if (n > (1u << 24) || !(t = realloc(sf->mrs, n * sizeof(*t)))) {
			pthread_mutex_unlock(&sf->lock);
			free(mr);
			return fab_set_error(-ENOMEM, "soft: MR table full");
		}
		memset(t + sf->nmrs, 0, (n - sf->nmrs) * sizeof(*t));
		sf->mrs = t;
		idx = sf->nmrs ? sf->nmrs : 1;
		sf->nmrs = n;
	}
	sf->gen++;
	mr->fab = &sf->base;
	mr->valid = true;
	mr->pub.addr = addr;
	mr->pub.length = len;
	mr->pub.access = access;
	mr->pub.lkey = mr->pub.rkey = idx << 8 | (sf->gen & 0xff);
	mr->pub.prov = mr;
	sf->mrs[idx] = mr;
	pthread_mutex_unlock(&sf->lock);
	fab_count(&sf->base.cnt.registrations, 1);
	*out = &mr->pub;
	return 0;
}

void soft_mr_dereg(struct fab_mr *pub)
{
	struct soft_mr *mr = pub->prov;
	struct soft_fabric *sf = (struct soft_fabric *)mr->fab;

	pthread_mutex_lock(&sf->lock);
	sf->mrs[pub->rkey >> 8] = NULL;
	pthread_mutex_unlock(&sf->lock);
	fab_count(&sf->base.cnt.deregistrations, 1);
	free(mr);
}

static struct soft_mr *mr_lookup_locked(struct soft_fabric *sf, uint32_t key)
{
	uint32_t idx = key >> 8;

	if (idx == 0 || idx >= sf->nmrs || !sf->mrs[idx] || sf->mrs[idx]->pub.rkey != key)
		return NULL;
	return sf->mrs[idx];
}

static bool mr_covers(const struct soft_mr *mr, uint64_t addr, uint64_t len)
{
	uint64_t start = (uintptr_t)mr->pub.addr;

	return addr >= start && addr - start <= mr->pub.length &&
	       len <= mr->pub.length - (addr - start);
}

/* Responder side check of an incoming RDMA Read/Write (IB spec 9.7.5.1.3-ish). */
static bool remote_ok(struct soft_fabric *sf, uint32_t rkey, uint64_t addr, uint32_t len,
		      unsigned int need)
{
	struct soft_mr *mr;
	bool ok;

	if (len == 0)
		return true;
	pthread_mutex_lock(&sf->lock);
	mr = mr_lookup_locked(sf, rkey);
	ok = mr && mr->valid && (mr->pub.access & need) && mr_covers(mr, addr, len);
	pthread_mutex_unlock(&sf->lock);
	return ok;
}

static bool local_ok(struct soft_fabric *sf, const struct fab_sge *sge, int n, bool write)
{
	bool ok = true;

	pthread_mutex_lock(&sf->lock);
	for (int i = 0; i < n && ok; i++) {
		struct soft_mr *mr;

		if (!sge[i].length)
			continue;
		mr = mr_lookup_locked(sf, sge[i].lkey);
		ok = mr && mr_covers(mr, (uintptr_t)sge[i].addr, sge[i].length) &&
		     (!write || (mr->pub.access & FAB_ACCESS_LOCAL_WRITE));
	}
	pthread_mutex_unlock(&sf->lock);
	return ok;
}

static void invalidate_rkey(struct soft_fabric *sf, uint32_t rkey)
{
	struct soft_mr *mr;

	pthread_mutex_lock(&sf->lock);
	mr = mr_lookup_locked(sf, rkey);
	if (mr)
		mr->valid = false;
	pthread_mutex_unlock(&sf->lock);
}

/* --- queue pair --------------------------------------------------------- */

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
	if (k.max_send_wr > 65536 || k.max_recv_wr > 65536 || k.max_send_sge > 32 ||
	    k.max_recv_sge > 32)
		return fab_set_error(-EINVAL, "soft: QP caps too large");
	c->caps = k;
	c->sq = calloc(k.max_send_wr, sizeof(*c->sq));
	c->sq_sge = calloc((size_t)k.max_send_wr * k.max_send_sge, sizeof(*c->sq_sge));
	c->rq = calloc(k.max_recv_wr, sizeof(*c->rq));
	c->rq_sge = calloc((size_t)(k.max_recv_wr + 1) * k.max_recv_sge, sizeof(*c->rq_sge));
	c->ctl_cap = 64;
	c->ctl = calloc(c->ctl_cap, sizeof(*c->ctl));
	if (!c->sq || !c->sq_sge || !c->rq || !c->rq_sge || !c->ctl) {
		soft_qp_free(c);
		return fab_set_error(-ENOMEM, "soft: out of memory for QP");
	}
	for (uint32_t i = 0; i < k.max_send_wr; i++)
		c->sq[i].sge = &c->sq_sge[(size_t)i * k.max_send_sge];
	for (uint32_t i = 0; i < k.max_recv_wr; i++)
		c->rq[i].sge = &c->rq_sge[(size_t)i * k.max_recv_sge];
	c->scq = (struct soft_cq *)send_cq;
	c->rcq = (struct soft_cq *)recv_cq;
	c->has_qp = true;
	return 0;
}

void soft_qp_free(struct soft_conn *c)
{
	free(c->sq);
	free(c->sq_sge);
	free(c->rq);
	free(c->rq_sge);
	free(c->ctl);
	c->sq = NULL;
	c->sq_sge = NULL;
	c->rq = NULL;
	c->rq_sge = NULL;
	c->ctl = NULL;
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

static struct soft_swr *sq_at(struct soft_conn *c, uint64_t i)
{
	return &c->sq[i % c->caps.max_send_wr];
}

/* Complete send WRs in order; in error, flush all that no thread is using. */
static void sq_progress_locked(struct soft_conn *c)
{
	while (c->sq_head < c->sq_tail) {
		struct soft_swr *e = sq_at(c, c->sq_head);

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

static void rq_flush_locked(struct soft_conn *c)
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

void soft_qp_error_locked(struct soft_conn *c, bool tell_peer)
{
	if (!c->has_qp)
		return;
	if (!c->qp_err) {
		c->qp_err = true;
		if (tell_peer && !c->dead)
			soft_ctl_push_locked(c, SOFT_QP_ERR, 0, 0, NULL);
	}
	sq_progress_locked(c);
	rq_flush_locked(c);
	pthread_cond_broadcast(&c->cond);
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
	pthread_cond_broadcast(&c->cond);
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
		if (c->sq_tail - c->sq_head >= c->caps.max_send_wr) {
			rc = fab_set_error(-ENOMEM, "soft: send queue full");
			break;
		}
		e = sq_at(c, c->sq_tail);
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
		if (!local_ok(c->sf, e->sge, e->nsge, e->op == FAB_WR_RDMA_READ))
			e->st = FAB_WC_LOC_PROT_ERR; /* the writer fails it in order */
		fab_count_send(&c->sf->base, wr);
		c->sq_tail++;
	}
	if (rc && bad)
		*bad = wr;
	if (c->qp_err)
		sq_progress_locked(c);
	pthread_cond_broadcast(&c->cond);
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

		if (!c->has_qp) {
			rc = fab_set_error(-EINVAL, "soft: no QP");
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > c->caps.max_recv_sge ||
		    !local_ok(c->sf, wr->sg_list, wr->num_sge, true)) {
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
	rq_flush_locked(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* --- socket I/O ---------------------------------------------------------- */

int soft_io_full(int fd, void *buf, size_t len, bool rd)
{
	char *p = buf;

	while (len) {
		ssize_t n = rd ? recv(fd, p, len, 0) : send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * raw: bypass libc (and sanitizer interceptors, which inspect the buffer
 * after the call returns). Used for Read responses: the initiator may see its
 * completion, and the owner free the region, before sendmsg has returned -
 * legal on RDMA, so the check afterwards would be a false alarm.
 */
static int sendv_full(int fd, struct iovec *iov, int cnt, bool raw)
{
	while (cnt) {
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
		ssize_t n = raw ? syscall(SYS_sendmsg, fd, &mh, MSG_NOSIGNAL)
				: sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		while (cnt && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

static void hdr_encode(struct soft_hdr *h)
{
	h->len = htole32(h->len);
	h->a = htole64(h->a);
	h->b = htole32(h->b);
	h->c = htole32(h->c);
}

static int drain(int fd, uint64_t len)
{
	char buf[4096];

	while (len) {
		size_t n = len < sizeof(buf) ? (size_t)len : sizeof(buf);

		if (soft_io_full(fd, buf, n, true))
			return -1;
		len -= n;
	}
	return 0;
}

static int rx_scatter(int fd, const struct fab_sge *sge, int nsge, uint32_t len)
{
	for (int i = 0; i < nsge && len; i++) {
		uint32_t n = len < sge[i].length ? len : sge[i].length;

		if (n && soft_io_full(fd, sge[i].addr, n, true))
			return -1;
		len -= n;
	}
	return drain(fd, len);
}

/* --- writer thread ------------------------------------------------------- */

static int send_ctl(struct soft_conn *c, const struct soft_ctl *it)
{
	struct soft_hdr h = {.type = it->type, .status = it->status};
	struct iovec iov[2];
	int cnt = 1;

	if (it->type == SOFT_ACK)
		h.b = it->n;
	if (it->type == SOFT_READ_RESP) {
		h.len = it->n;
		iov[1].iov_base = it->addr;
		iov[1].iov_len = it->n;
		cnt += it->n ? 1 : 0;
	}
	c->tx_bytes += sizeof(h) + h.len;
	hdr_encode(&h);
	iov[0].iov_base = &h;
	iov[0].iov_len = sizeof(h);
	return sendv_full(c->fd, iov, cnt, it->type == SOFT_READ_RESP);
}

static int send_wr(struct soft_conn *c, const struct soft_swr *e, uint8_t flags)
{
	struct iovec iov[1 + 32];
	struct soft_hdr h = {.flags = flags};
	int cnt = 1;

	switch (e->op) {
	case FAB_WR_SEND_WITH_INV:
		h.flags |= SOFT_F_WITH_INV;
		h.b = e->inv_rkey;
		/* fall through */
	case FAB_WR_SEND:
		h.type = SOFT_SEND;
		break;
	case FAB_WR_RDMA_WRITE:
		h.type = SOFT_WRITE;
		h.a = e->raddr;
		h.b = e->rkey;
		break;
	case FAB_WR_RDMA_READ:
		h.type = SOFT_READ_REQ;
		h.a = e->raddr;
		h.b = e->rkey;
		h.len = e->len;
		break;
	}
	if (e->op != FAB_WR_RDMA_READ) {
		h.len = e->len;
		for (int i = 0; i < e->nsge; i++) {
			if (!e->sge[i].length)
				continue;
			iov[cnt].iov_base = e->sge[i].addr;
			iov[cnt].iov_len = e->sge[i].length;
			cnt++;
		}
	}
	c->tx_bytes += sizeof(h) + (e->op != FAB_WR_RDMA_READ ? e->len : 0);
	hdr_encode(&h);
	iov[0].iov_base = &h;
	iov[0].iov_len = sizeof(h);
	return sendv_full(c->fd, iov, cnt, false);
}

/* Fault injection: cut the link, as a cable pull would. */
static void check_drop_locked(struct soft_conn *c)
{
	if ((c->fault.drop_after_bytes && c->tx_bytes >= c->fault.drop_after_bytes) ||
	    (c->fault.drop_after_wrs && c->tx_wrs >= c->fault.drop_after_wrs)) {
		c->dead = true;
		shutdown(c->fd, SHUT_RDWR);
	}
}

void *soft_writer(void *arg)
{
	struct soft_conn *c = arg;

	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		if (c->ctl_n) {
			struct soft_ctl it = c->ctl[c->ctl_head];
			int rc = 0;

			c->ctl_head = (c->ctl_head + 1) % c->ctl_cap;
			c->ctl_n--;
			if (c->dead)
				continue;
			pthread_mutex_unlock(&c->lock);
			rc = send_ctl(c, &it);
			pthread_mutex_lock(&c->lock);
			if (rc)
				c->dead = true;
			else
				check_drop_locked(c);
			continue;
		}
		if (c->state == SOFT_S_EST && !c->qp_err && !c->dead && c->sq_tx < c->sq_tail) {
			struct soft_swr *e = sq_at(c, c->sq_tx);
			uint8_t flags = 0;
			int rc;

			c->sq_tx++;
			if (e->st != FAB_WC_SUCCESS) {
				/* Local protection error found at post time. */
				e->done = true;
				soft_qp_error_locked(c, true);
				continue;
			}
			if (e->op == FAB_WR_RDMA_READ && c->fault.fail_next_read) {
				c->fault.fail_next_read = false;
				flags |= SOFT_F_FORCE_FAIL;
			}
			if (e->op == FAB_WR_RDMA_WRITE && c->fault.fail_next_write) {
				c->fault.fail_next_write = false;
				flags |= SOFT_F_FORCE_FAIL;
			}
			e->busy |= SOFT_BUSY_TX;
			pthread_mutex_unlock(&c->lock);
			rc = send_wr(c, e, flags);
			pthread_mutex_lock(&c->lock);
			e->busy &= ~SOFT_BUSY_TX;
			if (rc) {
				c->dead = true;
			} else {
				c->tx_wrs++;
				check_drop_locked(c);
			}
			sq_progress_locked(c);
			continue;
		}
		pthread_cond_wait(&c->cond, &c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* --- reader thread ------------------------------------------------------- */

static void delay_completion(struct soft_conn *c)
{
	uint32_t us;

	pthread_mutex_lock(&c->lock);
	us = c->fault.delay_us;
	pthread_mutex_unlock(&c->lock);
	if (us)
		usleep(us);
}

/* Incoming Send: consume the next posted receive (RNR if none). */
static int rx_send(struct soft_conn *c, const struct soft_hdr *h)
{
	struct soft_rwr *r;
	struct fab_sge *sge = &c->rq_sge[(size_t)c->caps.max_recv_wr * c->caps.max_recv_sge];
	struct fab_wc wc = {.opcode = FAB_WC_RECV, .conn = (struct fab_conn *)c};
	uint64_t cap = 0;
	int nsge, rc;

	pthread_mutex_lock(&c->lock);
	if (c->qp_err || c->state != SOFT_S_EST) {
		pthread_mutex_unlock(&c->lock);
		return drain(c->fd, h->len);
	}
	if (c->rq_head == c->rq_tail) {
		/* RNR with rnr_retry 0: fatal for both QPs. */
		soft_ctl_push_locked(c, SOFT_NAK, FAB_WC_RNR_RETRY_EXC_ERR, 0, NULL);
		soft_qp_error_locked(c, false);
		pthread_mutex_unlock(&c->lock);
		return drain(c->fd, h->len);
	}
	r = &c->rq[c->rq_head % c->caps.max_recv_wr];
	c->rq_head++;
	wc.wr_id = r->wr_id;
	nsge = r->nsge;
	memcpy(sge, r->sge, nsge * sizeof(*sge));
	c->rx_busy = true;
	pthread_mutex_unlock(&c->lock);

	for (int i = 0; i < nsge; i++)
		cap += sge[i].length;
	if (h->len > cap) {
		wc.status = FAB_WC_LOC_LEN_ERR;
		rc = drain(c->fd, h->len);
	} else {
		rc = rx_scatter(c->fd, sge, nsge, h->len);
		wc.byte_len = h->len;
		if (h->flags & SOFT_F_WITH_INV) {
			invalidate_rkey(c->sf, h->b);
			wc.with_inv = true;
			wc.inv_rkey = h->b;
		}
	}
	if (rc)
		wc.status = FAB_WC_WR_FLUSH_ERR;
	delay_completion(c);
	pthread_mutex_lock(&c->lock);
	c->rx_busy = false;
	soft_cq_push(c->rcq, &wc);
	if (wc.status == FAB_WC_SUCCESS) {
		fab_count(&c->sf->base.cnt.recv_bytes, h->len);
		soft_ctl_push_locked(c, SOFT_ACK, 0, 1, NULL);
	} else if (wc.status == FAB_WC_LOC_LEN_ERR) {
		soft_ctl_push_locked(c, SOFT_NAK, FAB_WC_REM_OP_ERR, 0, NULL);
	}
	if (wc.status != FAB_WC_SUCCESS)
		soft_qp_error_locked(c, false);
	rq_flush_locked(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Incoming RDMA Write or Read request: checked here, where the memory lives. */
static int rx_rdma(struct soft_conn *c, const struct soft_hdr *h)
{
	bool wr = h->type == SOFT_WRITE;
	unsigned int need = wr ? FAB_ACCESS_REMOTE_WRITE : FAB_ACCESS_REMOTE_READ;
	bool ok, err;
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	err = c->qp_err || c->state != SOFT_S_EST;
	pthread_mutex_unlock(&c->lock);
	if (err)
		return wr ? drain(c->fd, h->len) : 0;
	ok = !(h->flags & SOFT_F_FORCE_FAIL) && remote_ok(c->sf, h->b, h->a, h->len, need);
	if (wr)
		rc = ok ? (h->len ? soft_io_full(c->fd, (void *)(uintptr_t)h->a, h->len, true) : 0)
			: drain(c->fd, h->len);
	pthread_mutex_lock(&c->lock);
	if (!ok) {
		soft_ctl_push_locked(c, SOFT_NAK, FAB_WC_REM_ACCESS_ERR, 0, NULL);
		soft_qp_error_locked(c, false);
	} else if (wr) {
		soft_ctl_push_locked(c, SOFT_ACK, 0, 1, NULL);
	} else {
		soft_ctl_push_locked(c, SOFT_READ_RESP, 0, h->len, (void *)(uintptr_t)h->a);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Answers to our own requests arrive in request order. */
static int rx_answer(struct soft_conn *c, const struct soft_hdr *h)
{
	struct soft_swr *e;
	int rc = 0;

	if (h->type != SOFT_READ_RESP)
		delay_completion(c);
	pthread_mutex_lock(&c->lock);
	if (c->qp_err) {
		pthread_mutex_unlock(&c->lock);
		return h->type == SOFT_READ_RESP ? drain(c->fd, h->len) : 0;
	}
	if (h->type == SOFT_ACK) {
		for (uint32_t i = 0; i < h->b; i++) {
			if (c->sq_resp >= c->sq_tx)
				goto proto;
			e = sq_at(c, c->sq_resp++);
			if (e->op == FAB_WR_RDMA_READ)
				goto proto;
			e->done = true;
		}
		sq_progress_locked(c);
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	if (c->sq_resp >= c->sq_tx)
		goto proto;
	e = sq_at(c, c->sq_resp);
	if (h->type == SOFT_NAK) {
		c->sq_resp++;
		e->done = true;
		e->st =
		    h->status <= FAB_WC_GENERAL_ERR && h->status ? h->status : FAB_WC_GENERAL_ERR;
		soft_qp_error_locked(c, false);
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	/* READ_RESP */
	if (e->op != FAB_WR_RDMA_READ || h->len != e->len)
		goto proto;
	e->busy |= SOFT_BUSY_RX;
	pthread_mutex_unlock(&c->lock);
	rc = rx_scatter(c->fd, e->sge, e->nsge, h->len);
	delay_completion(c);
	pthread_mutex_lock(&c->lock);
	e->busy &= ~SOFT_BUSY_RX;
	e->done = true;
	if (rc)
		e->st = FAB_WC_WR_FLUSH_ERR;
	c->sq_resp++;
	sq_progress_locked(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
proto:
	soft_qp_error_locked(c, true);
	pthread_mutex_unlock(&c->lock);
	return -1;
}

static int rx_cm(struct soft_conn *c, const struct soft_hdr *h)
{
	uint8_t pd[FAB_PRIVATE_DATA_MAX];

	if (h->len > FAB_PRIVATE_DATA_MAX || soft_io_full(c->fd, pd, h->len, true))
		return -1;
	pthread_mutex_lock(&c->lock);
	if (c->state != SOFT_S_CONNECTING) {
		pthread_mutex_unlock(&c->lock);
		return -1;
	}
	if (h->type == SOFT_CONN_REP) {
		c->state = SOFT_S_EST;
		/* Receiver's view (fab.h): swapped, as IB CM reports a REP. */
		soft_cm_deliver_locked(c, FAB_CM_ESTABLISHED, 0, pd, (uint8_t)h->len,
				       (uint8_t)(h->a >> 8), (uint8_t)h->a);
	} else {
		c->state = SOFT_S_CLOSED;
		soft_cm_deliver_locked(c, FAB_CM_REJECTED, -ECONNREFUSED, pd, (uint8_t)h->len, 0,
				       0);
	}
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void *soft_reader(void *arg)
{
	struct soft_conn *c = arg;
	struct soft_hdr h;
	int rc = 0;

	while (rc == 0) {
		if (soft_io_full(c->fd, &h, sizeof(h), true))
			break;
		h.len = le32toh(h.len);
		h.a = le64toh(h.a);
		h.b = le32toh(h.b);
		h.c = le32toh(h.c);
		switch (h.type) {
		case SOFT_CONN_REP:
		case SOFT_CONN_REJ:
			rc = rx_cm(c, &h);
			break;
		case SOFT_SEND:
			rc = rx_send(c, &h);
			break;
		case SOFT_WRITE:
		case SOFT_READ_REQ:
			rc = rx_rdma(c, &h);
			break;
		case SOFT_ACK:
		case SOFT_NAK:
		case SOFT_READ_RESP:
			rc = rx_answer(c, &h);
			break;
		case SOFT_QP_ERR:
			pthread_mutex_lock(&c->lock);
			soft_qp_error_locked(c, false);
			pthread_mutex_unlock(&c->lock);
			break;
		case SOFT_DISC:
			pthread_mutex_lock(&c->lock);
			soft_qp_error_locked(c, false);
			if (!c->stop && c->state == SOFT_S_EST)
				soft_cm_deliver_locked(c, FAB_CM_DISCONNECTED, 0, NULL, 0, 0, 0);
			c->state = SOFT_S_CLOSED;
			pthread_mutex_unlock(&c->lock);
			break;
		default:
			rc = -1; /* protocol violation: drop the link */
			break;
		}
	}
	/* EOF, error or protocol violation: the link is gone. */
	pthread_mutex_lock(&c->lock);
	c->dead = true;
	shutdown(c->fd, SHUT_RDWR);
	if (!c->stop) {
		if (c->state == SOFT_S_CONNECTING)
			soft_cm_deliver_locked(c, FAB_CM_CONNECT_ERROR, -ECONNRESET, NULL, 0, 0, 0);
		else if (c->state == SOFT_S_EST)
			soft_cm_deliver_locked(c, FAB_CM_DISCONNECTED, 0, NULL, 0, 0, 0);
		c->state = SOFT_S_CLOSED;
	}
	soft_qp_error_locked(c, false);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}
