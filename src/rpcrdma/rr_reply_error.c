// SPDX-License-Identifier: MIT
/*
 * rr_reply_error.c - the error Replies (RFC 8166 section 3.4.4): ERR_VERS to
 * a Call of another version, ERR_CHUNK to one whose chunks cannot be
 * served. One Send, signalled, never invalidating. A connection with no
 * send context to spare has it wait in turn with its Replies: the client
 * holds a credit until it hears of that XID, and dropping the answer would
 * leave its RPC to time out and take the connection down.
 */
#include "rpcrdma/rr_internal.h"

void rr_reply_error(struct rr_call_ctx *ctx, enum rr_hdr_action act)
{
	struct rr_conn *c = ctx->conn;
	struct rr_send_ctx *s = NULL;
	struct fab_send_wr *wr;
	ssize_t len;

	if (c->state != RR_CONN_CLOSING) {
		s = c->ctx_wait_head ? NULL : rr_send_ctx_get(c, false);
		if (!s) {
			/* waits as a Reply does, keeping its connection */
			ctx->err_act = (uint8_t)act;
			if (!ctx->has_ref) {
				rr_conn_get(c);
				ctx->has_ref = true;
			}
			RR_STAT_ADD(c, send_ctx_waits, 1);
			rr_send_ctx_wait(c, ctx);
			return;
		}
		if (act == RR_ACT_ERR_VERS) {
			len = rr_hdr_encode_err_vers(s->hdr, c->srv->cfg.inline_size, ctx->pcl->xid,
						     c->credits);
			RR_STAT_ADD(c, err_vers_sent, 1);
		} else {
			len = rr_hdr_encode_err_chunk(s->hdr, c->srv->cfg.inline_size,
						      ctx->pcl->xid, c->credits);
			RR_STAT_ADD(c, err_chunk_sent, 1);
		}
		wr = rr_send_wr(s, (uint32_t)len); /* error replies are never invalidating */
		wr->signaled = true;
		rr_send_post(c, s);
	} else {
		RR_STAT_ADD(c, dropped, 1); /* the client is gone */
	}
	/* The header is in the send buffer: the receive goes back now. */
	ctx->err_act = RR_ACT_PROCESS;
	rr_call_put(ctx);
}
