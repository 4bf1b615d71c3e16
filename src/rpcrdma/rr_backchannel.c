// SPDX-License-Identifier: MIT
/*
 * rr_backchannel.c - reverse-direction RPC (RFC 8167): callbacks the upper
 * layer sends to the client, inline only and within the client's
 * backchannel grant, and the client's Replies to them, which arrive as
 * receives (rr_recv.c tells them from calls) and carry its grant.
 *
 * Each call's XID stays outstanding, holding one credit, until its Reply,
 * an RDMA_ERROR for it or the upper layer's abandon (a timeout), whichever
 * comes first: that one takes it out of the set and gives the credit back,
 * so it comes back exactly once. Only a Reply that takes an XID out is
 * handed up; the rest (unasked, late, repeated) are dropped here, so a
 * client cannot make the upper layer queue more than its grant of them.
 */
#include <errno.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"
#include "rpcrdma/rr_xdr.h"

static int bc_xid_find_locked(const struct rr_conn *c, uint32_t xid)
{
	for (uint32_t i = 0; i < c->bc_outstanding; i++)
		if (c->bc_xids[i] == xid)
			return (int)i;
	return -1;
}

/* Take @xid out of the outstanding set, giving its credit back; false when
 * it is not there. */
static bool bc_xid_take(struct rr_conn *c, uint32_t xid)
{
	int i;

	pthread_mutex_lock(&c->lock);
	i = bc_xid_find_locked(c, xid);
	if (i >= 0)
		c->bc_xids[i] = c->bc_xids[--c->bc_outstanding];
	pthread_mutex_unlock(&c->lock);
	return i >= 0;
}

bool rr_bc_answered(struct rr_conn *c, uint32_t xid)
{
	return bc_xid_take(c, xid);
}

int rr_conn_bc_abandon(struct rr_conn *c, uint32_t xid)
{
	return bc_xid_take(c, xid) ? 0 : -ENOENT;
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
	uint32_t xid = ctx->pcl->xid;

	RR_STAT_ADD(c, bc_replies, 1);
	/* One XID names the call at both layers: the transport's rdma_xid is
	 * the RPC message's own (RFC 8166 section 4.2.1; rr_recv.c made sure
	 * the message has one). Only an answer to an outstanding call of ours
	 * counts as activity and states the grant; a peer sending unasked
	 * Replies must neither keep its connection from going idle nor reach
	 * the upper layer. */
	if (rr_xdr_load32(ctx->buf + ctx->pcl->hdr_len) != xid || !bc_xid_take(c, xid)) {
		RR_STAT_ADD(c, dropped, 1);
		rr_call_free(ctx);
		return;
	}
	c->heard++;
	bc_grant(c, ctx->pcl->credits);
	if (c->srv->ops.bc_reply)
		c->srv->ops.bc_reply(c->srv->ctx, c, ctx->buf + ctx->pcl->hdr_len,
				     ctx->recv_len - ctx->pcl->hdr_len, ctx->pcl->credits);
	else
		RR_STAT_ADD(c, dropped, 1);
	rr_call_free(ctx);
}

/* Room for one more callback within the client's grant: @xid made
 * outstanding with its credit, or why not. bc_xid_take gives it back. */
static int bc_reserve(struct rr_conn *c, uint32_t xid)
{
	int ret = 0;

	pthread_mutex_lock(&c->lock);
	if (c->state == RR_CONN_CLOSING)
		ret = -ENOTCONN;
	else if (bc_xid_find_locked(c, xid) >= 0)
		ret = -EEXIST;
	else if (c->bc_outstanding >= c->bc_grant || c->bc_outstanding >= RR_MAX_BC_CREDITS)
		ret = -EAGAIN;
	else
		c->bc_xids[c->bc_outstanding++] = xid;
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
	ret = bc_reserve(c, xid);
	if (ret)
		return ret;
	s = rr_send_ctx_get(c, true);
	if (!s) {
		bc_xid_take(c, xid);
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
