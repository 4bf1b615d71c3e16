// SPDX-License-Identifier: MIT
/*
 * rr_reply_error.c - the error Replies (RFC 8166 section 3.4.4): ERR_VERS to
 * a Call of another version, ERR_CHUNK to one whose chunks cannot be
 * served. One Send, signalled, never invalidating; no send context: dropped
 * and counted.
 */
#include "rpcrdma/rr_internal.h"

void rr_send_error(struct rr_conn *c, uint32_t xid, enum rr_hdr_action act)
{
	struct rr_send_ctx *s = rr_send_ctx_get(c, false);
	struct fab_send_wr *wr;
	ssize_t len;

	if (!s) {
		RR_STAT_ADD(c, dropped, 1);
		return;
	}
	if (act == RR_ACT_ERR_VERS) {
		len = rr_hdr_encode_err_vers(s->hdr, c->srv->cfg.inline_size, xid, c->credits);
		RR_STAT_ADD(c, err_vers_sent, 1);
	} else {
		len = rr_hdr_encode_err_chunk(s->hdr, c->srv->cfg.inline_size, xid, c->credits);
		RR_STAT_ADD(c, err_chunk_sent, 1);
	}
	wr = rr_send_wr(s, (uint32_t)len); /* error replies are never invalidating */
	wr->signaled = true;
	rr_send_post(c, s);
}
