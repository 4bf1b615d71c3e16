// SPDX-License-Identifier: MIT
/* RFC 8797 CM private data: byte layout, the interop fallbacks, negotiation. */
#include <gtest/gtest.h>

#include <cstring>

#include "rpcrdma/rr_cm_private.h"

namespace {

/* What the Linux client sends in its CM private data (RFC 8797 section 4;
 * docs/linux-client-wire.md): magic, version 1, SND_W_INV_OK, 4096/4096
 * inline sizes -> encoded 3/3. */
const uint8_t kLinuxClient[8] = {0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x03};

TEST(CmPrivate, EncodeByteLayout)
{
	uint8_t out[8];
	rr_cm_private_encode(out, true, 4096, 4096);
	EXPECT_EQ(0, memcmp(out, kLinuxClient, 8));

	rr_cm_private_encode(out, false, 1024, 256 * 1024);
	const uint8_t expect[8] = {0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x00, 0xff};
	EXPECT_EQ(0, memcmp(out, expect, 8));
}

TEST(CmPrivate, EncodeClampsAndRoundsDown)
{
	uint8_t out[8];
	rr_cm_private_encode(out, false, 100, 1 << 30);
	EXPECT_EQ(out[6], 0x00); /* below 1 KiB -> 1 KiB */
	EXPECT_EQ(out[7], 0xff); /* above 256 KiB -> 256 KiB */
	rr_cm_private_encode(out, false, 5000, 2047);
	EXPECT_EQ(out[6], 3); /* 4 KiB */
	EXPECT_EQ(out[7], 0); /* 1 KiB */
}

TEST(CmPrivate, DecodeLinuxClient)
{
	rr_cm_private p;
	uint8_t ib_req[56] = {};
	memcpy(ib_req, kLinuxClient, 8); /* IB requests pad private data to 56 */
	rr_cm_private_decode(ib_req, sizeof(ib_req), &p);
	EXPECT_TRUE(p.present);
	EXPECT_TRUE(p.snd_w_inv_ok);
	EXPECT_EQ(p.send_size, 4096u);
	EXPECT_EQ(p.recv_size, 4096u);
}

void expect_absent(const rr_cm_private &p)
{
	EXPECT_FALSE(p.present);
	EXPECT_FALSE(p.snd_w_inv_ok);
	EXPECT_EQ(p.send_size, 1024u);
	EXPECT_EQ(p.recv_size, 1024u);
}

TEST(CmPrivate, AbsentMeansDefaults)
{
	rr_cm_private p;
	rr_cm_private_decode(nullptr, 0, &p);
	expect_absent(p);
}

TEST(CmPrivate, ShortMeansDefaults)
{
	rr_cm_private p;
	rr_cm_private_decode(kLinuxClient, 7, &p);
	expect_absent(p);
}

TEST(CmPrivate, WrongMagicMeansDefaults)
{
	uint8_t b[8];
	memcpy(b, kLinuxClient, 8);
	b[3] = 0x19;
	rr_cm_private p;
	rr_cm_private_decode(b, 8, &p);
	expect_absent(p);
}

TEST(CmPrivate, WrongVersionMeansDefaults)
{
	uint8_t b[8];
	memcpy(b, kLinuxClient, 8);
	b[4] = 2;
	rr_cm_private p;
	rr_cm_private_decode(b, 8, &p);
	expect_absent(p);
}

TEST(CmPrivate, NegotiateTakesTheSmallerSide)
{
	rr_cm_private peer;
	const uint8_t b[8] = {0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x01, 0x07}; /* 2K send, 8K recv */
	rr_cm_private_decode(b, 8, &peer);
	rr_inline_limits l;
	rr_cm_negotiate(4096, 4096, &peer, &l);
	EXPECT_EQ(l.max_send, 4096u); /* min(own send 4K, peer recv 8K) */
	EXPECT_EQ(l.max_recv, 2048u); /* min(own recv 4K, peer send 2K) */
	EXPECT_FALSE(l.send_w_inv);
}

TEST(CmPrivate, NegotiateWithoutPrivateDataUses1024)
{
	rr_cm_private peer;
	rr_cm_private_decode(nullptr, 0, &peer);
	rr_inline_limits l;
	rr_cm_negotiate(4096, 4096, &peer, &l);
	EXPECT_EQ(l.max_send, 1024u);
	EXPECT_EQ(l.max_recv, 1024u);
	EXPECT_FALSE(l.send_w_inv);
}

TEST(CmPrivate, NegotiateHonoursSendWithInvalidate)
{
	rr_cm_private peer;
	rr_cm_private_decode(kLinuxClient, 8, &peer);
	rr_inline_limits l;
	rr_cm_negotiate(65536, 65536, &peer, &l);
	EXPECT_TRUE(l.send_w_inv);
	EXPECT_EQ(l.max_send, 4096u);
	EXPECT_EQ(l.max_recv, 4096u);
}

} // namespace
