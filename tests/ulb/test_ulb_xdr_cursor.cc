// SPDX-License-Identifier: MIT
/* test_ulb_xdr_cursor.cc - the ULB's XDR cursor on hand-laid byte streams:
 * in-window reads, reads across iovecs, the end of the stream, latched errors. */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ulb/ulb_xdr.h"

namespace
{

/* 0x00010203, 0x04050607, ... : word k reads as 4k<<24 | (4k+1)<<16 | ... */
std::vector<uint8_t> counting(size_t n)
{
	std::vector<uint8_t> b(n);
	for (size_t i = 0; i < n; i++)
		b[i] = uint8_t(i);
	return b;
}

uint32_t word_at(size_t off)
{
	return uint32_t(off) << 24 | uint32_t(off + 1) << 16 | uint32_t(off + 2) << 8 |
	       uint32_t(off + 3);
}

/* The stream cut at @cuts (ascending offsets), empty iovecs allowed. */
std::vector<iovec> pieces(std::vector<uint8_t> &b, const std::vector<size_t> &cuts)
{
	std::vector<iovec> v;
	size_t start = 0;
	for (size_t c : cuts) {
		v.push_back({b.data() + start, c - start});
		start = c;
	}
	v.push_back({b.data() + start, b.size() - start});
	return v;
}

} // namespace

TEST(UlbXdrCursor, WordsInsideAndAcrossIovecs)
{
	auto b = counting(24);
	/* word 1 straddles 6, word 3 starts a piece, an empty iovec at 16 */
	auto iov = pieces(b, {6, 12, 16, 16});
	ulb_xdr x;
	uint32_t v;

	ulb_xdr_init(&x, iov.data(), int(iov.size()));
	EXPECT_EQ(x.len, 24u);
	for (size_t off = 0; off < 24; off += 4) {
		EXPECT_EQ(ulb_xdr_pos(&x), off);
		ASSERT_TRUE(ulb_xdr_u32(&x, &v)) << off;
		EXPECT_EQ(v, word_at(off)) << off;
	}
	EXPECT_EQ(ulb_xdr_remaining(&x), 0u);
	EXPECT_FALSE(ulb_xdr_u32(&x, &v));
	EXPECT_TRUE(x.err);
}

TEST(UlbXdrCursor, TakeInPlaceOrCopied)
{
	auto b = counting(40);
	auto iov = pieces(b, {10});
	ulb_xdr x;
	uint8_t buf[ULB_XDR_TAKE_MAX];

	ulb_xdr_init(&x, iov.data(), int(iov.size()));
	const uint8_t *h = ulb_xdr_take(&x, 8, buf);
	ASSERT_EQ(h, b.data()); /* inside the first iovec: in place */
	h = ulb_xdr_take(&x, 12, buf);
	ASSERT_EQ(h, buf); /* 8..20 straddles 10: copied */
	EXPECT_EQ(ulb_xdr_load32(h), word_at(8));
	EXPECT_EQ(ulb_xdr_load32(h + 8), word_at(16));
	EXPECT_EQ(ulb_xdr_pos(&x), 20u);
	/* more than one run may hold is refused, and latches */
	EXPECT_EQ(ulb_xdr_take(&x, ULB_XDR_TAKE_MAX + 4, buf), nullptr);
	EXPECT_TRUE(x.err);
	EXPECT_EQ(ulb_xdr_take(&x, 4, buf), nullptr);
}

TEST(UlbXdrCursor, TakePastTheEndFailsAtEveryLength)
{
	auto b = counting(16);
	for (size_t cut = 0; cut <= 16; cut++) {
		auto iov = pieces(b, {cut});
		ulb_xdr x;
		uint8_t buf[ULB_XDR_TAKE_MAX];

		ulb_xdr_init(&x, iov.data(), int(iov.size()));
		EXPECT_EQ(ulb_xdr_take(&x, 20, buf), nullptr) << cut;
		EXPECT_TRUE(x.err);
		ulb_xdr_init(&x, iov.data(), int(iov.size()));
		EXPECT_NE(ulb_xdr_take(&x, 16, buf), nullptr) << cut;
		EXPECT_FALSE(x.err);
		EXPECT_EQ(ulb_xdr_remaining(&x), 0u);
	}
}

TEST(UlbXdrCursor, SkipToTheEndExactlyThenNothingMore)
{
	auto b = counting(4 + 4096 + 4);
	/* header word | payload | trailing word, as a Reply with its payload by reference */
	auto iov = pieces(b, {4, 4100});
	ulb_xdr x;
	uint32_t v;

	ulb_xdr_init(&x, iov.data(), int(iov.size()));
	ASSERT_TRUE(ulb_xdr_u32(&x, &v));
	ASSERT_TRUE(ulb_xdr_skip(&x, 4100));
	EXPECT_EQ(ulb_xdr_pos(&x), 4104u);
	EXPECT_EQ(ulb_xdr_remaining(&x), 0u);
	EXPECT_TRUE(ulb_xdr_skip(&x, 0)); /* nothing left, nothing asked: fine */
	EXPECT_FALSE(ulb_xdr_u32(&x, &v));
	EXPECT_TRUE(x.err);

	/* one byte more than is there: refused, latched */
	ulb_xdr_init(&x, iov.data(), int(iov.size()));
	ASSERT_TRUE(ulb_xdr_u32(&x, &v));
	EXPECT_FALSE(ulb_xdr_skip(&x, 4101));
	EXPECT_TRUE(x.err);
	EXPECT_FALSE(ulb_xdr_skip(&x, 0)); /* the error stays */
	EXPECT_EQ(ulb_xdr_remaining(&x), 0u);

	/* one byte less: the cursor stays usable and in the right place */
	ulb_xdr_init(&x, iov.data(), int(iov.size()));
	ASSERT_TRUE(ulb_xdr_skip(&x, 4 + 4099));
	EXPECT_EQ(ulb_xdr_pos(&x), 4103u);
	uint8_t last;
	ASSERT_TRUE(ulb_xdr_bytes(&x, &last, 1));
	EXPECT_EQ(last, uint8_t(4103));
}

TEST(UlbXdrCursor, OpaqueLengthsAgainstMaxAndStream)
{
	/* len, 5 data bytes, 3 pad bytes, then a word */
	std::vector<uint8_t> b = {0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0, 0xca, 0xfe, 0xf0, 0x0d};
	for (size_t cut = 0; cut <= b.size(); cut++) {
		auto iov = pieces(b, {cut});
		ulb_xdr x;
		uint32_t len, v;
		uint64_t data;

		ulb_xdr_init(&x, iov.data(), int(iov.size()));
		ASSERT_TRUE(ulb_xdr_opaque(&x, 5, &len, &data)) << cut;
		EXPECT_EQ(len, 5u);
		EXPECT_EQ(data, 4u);
		ASSERT_TRUE(ulb_xdr_u32(&x, &v));
		EXPECT_EQ(v, 0xcafef00du);

		ulb_xdr_init(&x, iov.data(), int(iov.size()));
		EXPECT_FALSE(ulb_xdr_opaque(&x, 4, &len, &data)) << cut; /* over max */
		EXPECT_TRUE(x.err);
	}
	/* a length word claiming more than the stream holds */
	std::vector<uint8_t> huge = {0xff, 0xff, 0xff, 0xfc, 1, 2, 3, 4};
	auto iov = pieces(huge, {});
	ulb_xdr x;
	ulb_xdr_init(&x, iov.data(), int(iov.size()));
	EXPECT_FALSE(ulb_xdr_opaque(&x, 0xffffffffu, nullptr, nullptr));
	EXPECT_TRUE(x.err);
}

TEST(UlbXdrCursor, EmptyStreams)
{
	ulb_xdr x;
	uint32_t v;
	uint8_t buf[ULB_XDR_TAKE_MAX];

	ulb_xdr_init(&x, nullptr, 0);
	EXPECT_EQ(ulb_xdr_remaining(&x), 0u);
	EXPECT_TRUE(ulb_xdr_skip(&x, 0));
	EXPECT_EQ(ulb_xdr_take(&x, 4, buf), nullptr);

	iovec empties[3] = {{nullptr, 0}, {nullptr, 0}, {nullptr, 0}};
	ulb_xdr_init(&x, empties, 3);
	EXPECT_EQ(x.len, 0u);
	EXPECT_FALSE(ulb_xdr_u32(&x, &v));
	EXPECT_TRUE(x.err);
}

TEST(UlbXdrCursor, BoolsAndCountsAreBounded)
{
	std::vector<uint8_t> b = {0, 0, 0, 1, 0, 0, 0, 2};
	auto iov = pieces(b, {2});
	ulb_xdr x;
	bool t;

	ulb_xdr_init(&x, iov.data(), int(iov.size()));
	ASSERT_TRUE(ulb_xdr_bool(&x, &t));
	EXPECT_TRUE(t);
	EXPECT_FALSE(ulb_xdr_bool(&x, &t)); /* 2 is no bool */
	EXPECT_TRUE(x.err);

	/* count 2 of 8-byte elements, with 12 bytes left: does not fit */
	std::vector<uint8_t> c = {0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	auto ic = pieces(c, {});
	uint32_t n;
	ulb_xdr_init(&x, ic.data(), int(ic.size()));
	EXPECT_FALSE(ulb_xdr_count(&x, 10, 8, &n));
	ulb_xdr_init(&x, ic.data(), int(ic.size()));
	EXPECT_FALSE(ulb_xdr_count(&x, 1, 4, &n)); /* over max */
	ulb_xdr_init(&x, ic.data(), int(ic.size()));
	ASSERT_TRUE(ulb_xdr_count(&x, 10, 4, &n));
	EXPECT_EQ(n, 2u);
}
