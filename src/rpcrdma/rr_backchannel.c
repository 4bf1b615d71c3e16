// SPDX-License-Identifier: MIT
/*
 * rr_backchannel.c - reverse-direction RPC (RFC 8167): callbacks the upper
 * layer sends to the client, inline only and within the client's
 * backchannel grant, and the client's Replies to them, which arrive as
 * receives (rr_recv.c tells them from calls) and carry its grant.
 */
#include <errno.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"

bool rr_bc_answered(struct rr_conn *c)
{
	bool had;

	pthread_mutex_lock(&c->lock);
	had = c->bc_outstanding > 0;
	if (had)
		c->bc_outstanding--;
	pthread_mutex_unlock(&c->lock);
	return had;
}

/* A reverse-direction Reply carries the client's backchannel grant: 0 is
 * taken as 1 (never deadlock), and we never use more than we provision. */
static void bc_grant(struct rr_conn *c, uint32_t credits)
{
	uint32_t max = c->srv->cfg.bc_credits ? c->srv->cfg.bc_credits : 1;

	pthread_mutex_lock(&c->lock);
	c->bc_grant = credits == 0 ? 1 : credits > max ? max : credits;
	pthread_mutex_unlock(&c->lock);
}

void rr_bc_reply_received(struct rr_conn *c, struct rr_call_ctx *ctx)
{
	/* Activity only if it answers a callback of ours: a peer sending
	 * unasked Replies must not keep its connection from going idle. */
	if (rr_bc_answered(c))
		c->heard++;
	bc_grant(c, ctx->pcl->credits);
	if (c->srv->ops.bc_reply) {
		RR_STAT_ADD(c, bc_replies, 1);
		c->srv->ops.bc_reply(c->srv->ctx, c, ctx->buf + ctx->pcl->hdr_len,
				     ctx->recv_len - ctx->pcl->hdr_len, ctx->pcl->credits);
	} else {
		RR_STAT_ADD(c, dropped, 1);
	}
	rr_call_free(ctx);
}

/* Room for one more callback within the client's grant: taken, or why not.
 * rr_bc_answered gives it back. */
static int bc_reserve(struct rr_conn *c)
{
	int ret = 0;

	pthread_mutex_lock(&c->lock);
	if (c->state == RR_CONN_CLOSING)
		ret = -ENOTCONN;
	else if (c->bc_outstanding >= c->bc_grant)
		ret = -EAGAIN;
	else
		c->bc_outstanding++;
	pthread_mutex_unlock(&c->lock);
	return ret;
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
	int ret;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	/* RFC 8167 section 5: callbacks are inline only. */
	if (len + RR_HDR_MSG_MIN_LEN > max)
		return -EMSGSIZE;
	ret = bc_reserve(c);
	if (ret)
		return ret;
	s = rr_send_ctx_get(c, true);
	if (!s) {
		rr_bc_answered(c);
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
	wr = rr_send_wr(s, (uint32_t)(hdr_len + len));
	wr->signaled = true;
	RR_STAT_ADD(c, bc_calls, 1);
	rr_send_post(c, s);
	return 0;
}
