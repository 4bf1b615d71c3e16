// SPDX-License-Identifier: MIT
/*
 * fab_soft_io.c - the "soft" provider's per-connection I/O threads.
 *
 * The writer transmits send WRs straight from the user's SGEs and the answers
 * the reader queued. The reader applies incoming requests to local memory
 * (checking rkey, bounds and access where the memory lives), consumes
 * receives, and matches answers to outstanding send WRs, in order.
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
#include <time.h>
#include <unistd.h>
#include "fabric/fab_soft_int.h"

#ifndef POLLRDHUP
#define POLLRDHUP 0x2000 /* Linux: peer shut down its writing half (needs _GNU_SOURCE) */
#endif

/* --- socket I/O ---------------------------------------------------------- */

int soft_io_full(int fd, void *buf, size_t len, bool rd)
{
	char *p = buf;

	while (len) {
		ssize_t n = rd ? recv(fd, p, len, 0) : send(fd, p, len, MSG_NOSIGNAL);

		/* EAGAIN: a connected socket's receive timeout (soft_io_start);
		 * inside a message the rest is on its way */
		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
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

/* Sleep until woken or idle_ms pass (c->lock held); true: they passed. */
static bool idle_wait_locked(struct soft_conn *c)
{
	unsigned int ms = soft_idle_ms(c->sf);
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return pthread_cond_timedwait(&c->cond, &c->lock, &t) == ETIMEDOUT;
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
			/* Nothing follows a DISC; the half-close also reaches a peer stuck in RNR.
			 */
			if (!rc && it.type == SOFT_DISC)
				shutdown(c->fd, SHUT_WR);
			continue;
		}
		if (c->state == SOFT_S_EST && !c->qp_err && !c->dead && c->sq_tx < c->sq_tail) {
			struct soft_swr *e = soft_sq_at(c, c->sq_tx);
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
			soft_sq_progress_locked(c);
			continue;
		}
		if (idle_wait_locked(c) && soft_writer_idle_locked(c)) {
			pthread_mutex_unlock(&c->lock);
			return NULL; /* soft_wake_locked starts another when work comes */
		}
	}
	soft_io_ended_locked(c, false);
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

static void copy_scatter(const struct fab_sge *sge, int nsge, const uint8_t *src, uint32_t len)
{
	for (int i = 0; i < nsge && len; i++) {
		uint32_t n = len < sge[i].length ? len : sge[i].length;

		memcpy(sge[i].addr, src, n);
		src += n;
		len -= n;
	}
}

/*
 * Place a Send into the receive just popped (c->lock held; released on
 * return). @src: the Send's bytes, read earlier (a parked Send); NULL: they
 * are next on the socket.
 */
static int rx_place(struct soft_conn *c, const struct soft_hdr *h, const uint8_t *src,
		    uint64_t wr_id, const struct fab_sge *sge, int nsge)
{
	struct fab_wc wc = {.wr_id = wr_id, .opcode = FAB_WC_RECV, .conn = (struct fab_conn *)c};
	uint64_t cap = 0;
	int rc = 0;

	c->rx_busy = true;
	pthread_mutex_unlock(&c->lock);
	for (int i = 0; i < nsge; i++)
		cap += sge[i].length;
	if (h->len > cap) {
		wc.status = FAB_WC_LOC_LEN_ERR;
		rc = src ? 0 : drain(c->fd, h->len);
	} else {
		if (src)
			copy_scatter(sge, nsge, src, h->len);
		else
			rc = rx_scatter(c->fd, sge, nsge, h->len);
		wc.byte_len = h->len;
		if (h->flags & SOFT_F_WITH_INV) {
			soft_invalidate_rkey(c->sf, h->b);
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
	soft_rq_flush_locked(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* RNR with retries exhausted (at once for rnr_retry 0): fatal for both QPs. */
static void rnr_fatal_locked(struct soft_conn *c)
{
	soft_ctl_push_locked(c, SOFT_NAK, FAB_WC_RNR_RETRY_EXC_ERR, 0, NULL);
	soft_qp_fatal_locked(c);
}

/* Drop every parked request (the QP failed, or the sender flushed them). */
static void park_drop_locked(struct soft_conn *c)
{
	while (c->park_head) {
		struct soft_parked *p = c->park_head;

		c->park_head = p->next;
		free(p);
	}
	c->park_tail = NULL;
	c->park_bytes = 0;
}

static void park_deadline_locked(struct soft_conn *c)
{
	c->park_deadline_ms = c->peer_rnr_retry >= SOFT_RNR_INFINITE
				  ? INT64_MAX
				  : soft_now_ms() + (int64_t)c->peer_rnr_retry * SOFT_RNR_STEP_MS;
}

/* Read a request's payload off the socket and queue it behind the parked ones. */
static int park_request(struct soft_conn *c, const struct soft_hdr *h)
{
	uint32_t len = h->type == SOFT_READ_REQ ? 0 : h->len;
	struct soft_parked *p;

	if (c->park_bytes + len > SOFT_PARK_MAX)
		return -1; /* more than any receive or window holds: drop the link */
	p = malloc(sizeof(*p) + len);
	if (!p || soft_io_full(c->fd, p->data, len, true)) {
		free(p);
		return -1;
	}
	p->h = *h;
	p->next = NULL;
	pthread_mutex_lock(&c->lock);
	if (c->park_tail)
		c->park_tail->next = p;
	else
		c->park_head = p;
	c->park_tail = p;
	c->park_bytes += len;
	if (c->park_head == p)
		park_deadline_locked(c);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/*
 * Incoming Send: consume the next posted receive. None posted = RNR: fatal
 * with rnr_retry 0; otherwise the Send is parked (read off the wire), with
 * every request behind it, until a receive is posted or its RNR timers run
 * out. On the wire the sender retransmits from the Send on while the
 * answers to OUR requests keep flowing; so the reader keeps processing
 * those (rx_parked): a peer whose ACKs waited on our receives could
 * deadlock a shared receive queue.
 */
static int rx_send(struct soft_conn *c, const struct soft_hdr *h)
{
	struct fab_sge *sge = &c->rq_sge[(size_t)c->caps.max_recv_wr * c->caps.max_recv_sge];
	uint64_t wr_id;
	int nsge;

	pthread_mutex_lock(&c->lock);
	if (c->qp_err || c->stop || c->state != SOFT_S_EST) {
		pthread_mutex_unlock(&c->lock);
		return drain(c->fd, h->len);
	}
	if (soft_rq_pop_locked(c, &wr_id, sge, &nsge))
		return rx_place(c, h, NULL, wr_id, sge, nsge);
	if (!c->peer_rnr_retry) {
		rnr_fatal_locked(c);
		pthread_mutex_unlock(&c->lock);
		return drain(c->fd, h->len);
	}
	pthread_mutex_unlock(&c->lock);
	return park_request(c, h);
}

static bool is_answer(uint8_t type)
{
	return type == SOFT_ACK || type == SOFT_NAK || type == SOFT_READ_RESP;
}

static void hdr_decode(struct soft_hdr *h)
{
	h->len = le32toh(h->len);
	h->a = le64toh(h->a);
	h->b = le32toh(h->b);
	h->c = le32toh(h->c);
}

static int read_hdr(int fd, struct soft_hdr *h)
{
	if (soft_io_full(fd, h, sizeof(*h), true))
		return -1;
	hdr_decode(h);
	return 0;
}

static int rx_rdma(struct soft_conn *c, const struct soft_hdr *h, const uint8_t *src);
static int rx_answer(struct soft_conn *c, const struct soft_hdr *h);
static int rx_dispatch(struct soft_conn *c, const struct soft_hdr *h);

/*
 * Run parked requests in order from the head: a Send once a receive is
 * posted (failed when its RNR timers ran out), Writes and Read requests as
 * they come. Returns with the queue empty or its head a Send still waiting.
 */
static int park_run(struct soft_conn *c)
{
	struct fab_sge *sge = &c->rq_sge[(size_t)c->caps.max_recv_wr * c->caps.max_recv_sge];
	uint64_t wr_id = 0;
	int nsge = 0, rc = 0;

	pthread_mutex_lock(&c->lock);
	while (c->park_head && rc == 0) {
		struct soft_parked *p = c->park_head;

		if (c->qp_err || c->stop || c->state != SOFT_S_EST) {
			park_drop_locked(c);
			break;
		}
		if (p->h.type == SOFT_SEND && !soft_rq_pop_locked(c, &wr_id, sge, &nsge)) {
			if (soft_now_ms() < c->park_deadline_ms)
				break;
			rnr_fatal_locked(c);
			park_drop_locked(c);
			break;
		}
		c->park_head = p->next;
		if (!c->park_head)
			c->park_tail = NULL;
		c->park_bytes -= p->h.type == SOFT_READ_REQ ? 0 : p->h.len;
		if (c->park_head)
			park_deadline_locked(c);
		if (p->h.type == SOFT_SEND) {
			rc = rx_place(c, &p->h, p->data, wr_id, sge, nsge);
		} else {
			pthread_mutex_unlock(&c->lock);
			rc = rx_rdma(c, &p->h, p->data);
		}
		free(p);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/*
 * Reader with parked requests: run them when it can, and meanwhile read on:
 * answers to our own requests are processed at once, requests are parked
 * behind the others (in order, as on the wire), a disconnect or QP error
 * drops them (the sender has flushed them) and is processed.
 */
static int rx_parked(struct soft_conn *c)
{
	struct pollfd p = {.fd = c->fd, .events = POLLIN};
	struct soft_hdr h;
	int rc = park_run(c);

	if (rc || !c->park_head)
		return rc;
	/* Short: a receive posted meanwhile does not wake this poll. */
	if (poll(&p, 1, 1) <= 0)
		return 0;
	if (read_hdr(c->fd, &h))
		return -1;
	if (is_answer(h.type))
		return rx_answer(c, &h);
	if (h.type == SOFT_SEND || h.type == SOFT_WRITE || h.type == SOFT_READ_REQ)
		return park_request(c, &h);
	if (h.type == SOFT_DISC || h.type == SOFT_QP_ERR) {
		pthread_mutex_lock(&c->lock);
		park_drop_locked(c);
		pthread_mutex_unlock(&c->lock);
	}
	return rx_dispatch(c, &h);
}

/*
 * Incoming RDMA Write or Read request: checked here, where the memory lives.
 * @src: a parked Write's payload, read earlier; NULL: it is next on the socket.
 */
static int rx_rdma(struct soft_conn *c, const struct soft_hdr *h, const uint8_t *src)
{
	bool wr = h->type == SOFT_WRITE;
	unsigned int need = wr ? FAB_ACCESS_REMOTE_WRITE : FAB_ACCESS_REMOTE_READ;
	bool ok, err;
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	err = c->qp_err || c->state != SOFT_S_EST;
	pthread_mutex_unlock(&c->lock);
	if (err)
		return wr && !src ? drain(c->fd, h->len) : 0;
	ok = !(h->flags & SOFT_F_FORCE_FAIL) && soft_remote_ok(c->sf, c->pd, h->b, h->a, h->len, need);
	if (wr && src && ok)
		memcpy((void *)(uintptr_t)h->a, src, h->len);
	else if (wr && !src)
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
			e = soft_sq_at(c, c->sq_resp++);
			if (e->op == FAB_WR_RDMA_READ)
				goto proto;
			e->done = true;
		}
		soft_sq_progress_locked(c);
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	if (c->sq_resp >= c->sq_tx)
		goto proto;
	e = soft_sq_at(c, c->sq_resp);
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
	soft_sq_progress_locked(c);
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
	soft_wake_locked(c);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* One message from the peer, in stream order. */
static int rx_dispatch(struct soft_conn *c, const struct soft_hdr *h)
{
	switch (h->type) {
	case SOFT_CONN_REP:
	case SOFT_CONN_REJ:
		return rx_cm(c, h);
	case SOFT_SEND:
		return rx_send(c, h);
	case SOFT_READ_REQ:
		if (c->fault.read_delay_ms) /* fault injection: the Read stays in flight */
			usleep((useconds_t)c->fault.read_delay_ms * 1000);
		return rx_rdma(c, h, NULL);
	case SOFT_WRITE:
		return rx_rdma(c, h, NULL);
	case SOFT_ACK:
	case SOFT_NAK:
	case SOFT_READ_RESP:
		return rx_answer(c, h);
	case SOFT_QP_ERR:
		/* The peer's QP failed ours. */
		pthread_mutex_lock(&c->lock);
		soft_qp_fatal_locked(c);
		pthread_mutex_unlock(&c->lock);
		return 0;
	case SOFT_DISC:
		pthread_mutex_lock(&c->lock);
		soft_qp_error_locked(c, false);
		if (!c->stop && c->state == SOFT_S_EST)
			soft_cm_deliver_locked(c, FAB_CM_DISCONNECTED, 0, NULL, 0, 0, 0);
		c->state = SOFT_S_CLOSED;
		pthread_mutex_unlock(&c->lock);
		return 0;
	default:
		return -1; /* protocol violation: drop the link */
	}
}

/*
 * The next header, at a message boundary: 1 read, 0 nothing came for
 * idle_ms (the socket's receive timeout, set by soft_io_start: one system
 * call per header, as before), -1 the link is gone.
 */
static int read_next_hdr(struct soft_conn *c, struct soft_hdr *h)
{
	ssize_t n = recv(c->fd, h, sizeof(*h), 0);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n < 0 && errno == EINTR)
		n = 0;
	else if (n <= 0)
		return -1;
	if (soft_io_full(c->fd, (char *)h + n, sizeof(*h) - (size_t)n, true))
		return -1;
	hdr_decode(h);
	return 1;
}

void *soft_reader(void *arg)
{
	struct soft_conn *c = arg;
	struct soft_hdr h;
	int rc = 0;

	while (rc == 0) {
		int got;

		/* Only this thread parks requests and runs them. */
		if (c->park_head) {
			rc = rx_parked(c);
			continue;
		}
		got = read_next_hdr(c, &h);
		if (got < 0)
			break;
		if (got == 0) {
			bool idle;

			pthread_mutex_lock(&c->lock);
			idle = soft_reader_idle_locked(c);
			pthread_mutex_unlock(&c->lock);
			if (idle)
				return NULL; /* the watcher starts another on the next bytes */
			continue;
		}
		rc = rx_dispatch(c, &h);
	}
	/* EOF, error or protocol violation: the link is gone. */
	pthread_mutex_lock(&c->lock);
	soft_reader_gone_locked(c);
	soft_io_ended_locked(c, true);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

void soft_reader_gone_locked(struct soft_conn *c)
{
	park_drop_locked(c);
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
}
