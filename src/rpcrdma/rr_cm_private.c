// SPDX-License-Identifier: MIT
/*
 * rr_cm_private.c - RFC 8797 connection private data: encode, decode with the
 * interoperability fallbacks, and inline threshold negotiation.
 */
#include <string.h>

#include "rpcrdma/rr_cm_private.h"
#include "rpcrdma/rr_proto.h"

/* RFC 8797 section 4.1: a size is sent as (bytes / 1024) - 1 in one octet. */
static uint8_t size_encode(uint32_t bytes)
{
	if (bytes < RR_CM_PRIV_SIZE_UNIT)
		bytes = RR_CM_PRIV_SIZE_UNIT;
	if (bytes > RR_CM_PRIV_SIZE_MAX)
		bytes = RR_CM_PRIV_SIZE_MAX;
	return (uint8_t)(bytes / RR_CM_PRIV_SIZE_UNIT - 1);
}

static uint32_t size_decode(uint8_t v)
{
	return ((uint32_t)v + 1) * RR_CM_PRIV_SIZE_UNIT;
}

void rr_cm_private_encode(uint8_t out[8], bool snd_w_inv_ok, uint32_t send_size,
			  uint32_t recv_size)
{
	out[0] = (uint8_t)(RR_CM_PRIV_MAGIC >> 24);
	out[1] = (uint8_t)(RR_CM_PRIV_MAGIC >> 16);
	out[2] = (uint8_t)(RR_CM_PRIV_MAGIC >> 8);
	out[3] = (uint8_t)RR_CM_PRIV_MAGIC;
	out[4] = RR_CM_PRIV_VERSION;
	out[5] = snd_w_inv_ok ? RR_CM_PRIV_F_SND_W_INV_OK : 0;
	out[6] = size_encode(send_size);
	out[7] = size_encode(recv_size);
}

void rr_cm_private_decode(const void *data, size_t len, struct rr_cm_private *out)
{
	const uint8_t *p = data;
	uint32_t magic;

	/* RFC 8797 section 5: anything unrecognisable means "no private data". */
	out->present = false;
	out->snd_w_inv_ok = false;
	out->send_size = RR_INLINE_DEFAULT;
	out->recv_size = RR_INLINE_DEFAULT;
	if (!p || len < RR_CM_PRIV_LEN)
		return;
	magic = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	if (magic != RR_CM_PRIV_MAGIC || p[4] != RR_CM_PRIV_VERSION)
		return;
	out->present = true;
	out->snd_w_inv_ok = (p[5] & RR_CM_PRIV_F_SND_W_INV_OK) != 0;
	out->send_size = size_decode(p[6]);
	out->recv_size = size_decode(p[7]);
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

void rr_cm_negotiate(uint32_t own_send, uint32_t own_recv, const struct rr_cm_private *peer,
		     struct rr_inline_limits *out)
{
	out->max_send = min_u32(own_send, peer->recv_size);
	out->max_recv = min_u32(own_recv, peer->send_size);
	out->send_w_inv = peer->present && peer->snd_w_inv_ok;
}
