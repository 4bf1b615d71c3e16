/* SPDX-License-Identifier: MIT */
/*
 * rr_cm_private.h - RFC 8797 CM private data: the 8-byte message exchanged in
 * the connect request and the accept, and the inline thresholds it yields.
 */
#ifndef RPCRDMA_RR_CM_PRIVATE_H
#define RPCRDMA_RR_CM_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rr_cm_private {
	bool present;		/* a well-formed RFC 8797 message was received */
	bool snd_w_inv_ok;	/* peer welcomes Send With Invalidate */
	uint32_t send_size;	/* peer's largest inline Send, bytes */
	uint32_t recv_size;	/* peer's receive buffer size, bytes */
};

/* Encode; sizes are rounded down to a KiB multiple and clamped to 1..256 KiB. */
void rr_cm_private_encode(uint8_t out[8], bool snd_w_inv_ok, uint32_t send_size,
			  uint32_t recv_size);

/* Decode what a peer sent. Absent (NULL/0), short (< 8), wrong magic or wrong
 * version: present=false with the RFC 8166 1024-byte defaults and no invalidate,
 * as if the peer had sent nothing (RFC 8797 section 5). */
void rr_cm_private_decode(const void *data, size_t len, struct rr_cm_private *out);

/* Negotiated inline thresholds for this end: what we may Send is bounded by the
 * peer's receive size, what we may receive by the peer's send size. */
struct rr_inline_limits {
	uint32_t max_send;	/* min(own send, peer recv) */
	uint32_t max_recv;	/* min(own recv, peer send) */
	bool send_w_inv;	/* we may use Send With Invalidate toward the peer */
};
void rr_cm_negotiate(uint32_t own_send, uint32_t own_recv, const struct rr_cm_private *peer,
		     struct rr_inline_limits *out);

#ifdef __cplusplus
}
#endif
#endif
