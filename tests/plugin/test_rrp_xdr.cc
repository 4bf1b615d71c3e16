// SPDX-License-Identifier: MIT
// The plugin's decode stream (src/plugin/rrp_xdr.c): the position and
// data-buffer operations ganesha 6's xdr_io_data uses to take WRITE data in
// place (XDR_IOVCOUNT, XDR_FILLBUFS, SETPOS/GETPOS), over a Call made of
// several iovecs (inline part, an empty one, a chunk's data, its pad, the
// rest). Every start, length and prior position is checked against a model
// of the stream written here: the byte at offset k is in the first non-empty
// iovec whose range holds k. And the encode stream's READ data by reference
// (xdr_putbufs) when its segment table fills: each READ buffer freed once.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "plugin/rrp_xdr_probe.h"

namespace
{

struct Stream {
	std::vector<std::vector<uint8_t>> bufs;
	std::vector<struct iovec> iov;
	unsigned total = 0;

	explicit Stream(const std::vector<size_t> &lens)
	{
		bufs.reserve(lens.size());
		for (size_t l : lens) {
			bufs.emplace_back(l ? l : 1); /* a real address even when empty */
			iov.push_back({bufs.back().data(), l});
			total += (unsigned)l;
		}
	}
	int n() const
	{
		return (int)iov.size();
	}

	// Model: the pieces [start, start + len) occupies, in order.
	std::vector<struct iovec> pieces(unsigned start, unsigned len) const
	{
		std::vector<struct iovec> out;
		unsigned off = 0;

		for (const auto &v : iov) {
			unsigned b = off, e = off + (unsigned)v.iov_len;

			off = e;
			if (e <= start || b >= start + len || v.iov_len == 0)
				continue;
			unsigned s = start > b ? start : b, t = start + len < e ? start + len : e;
			out.push_back({(uint8_t *)v.iov_base + (s - b), t - s});
		}
		return out;
	}
	const void *byte(unsigned k) const
	{
		unsigned off = 0;

		for (const auto &v : iov) {
			if (k >= off && k < off + v.iov_len)
				return (uint8_t *)v.iov_base + (k - off);
			off += (unsigned)v.iov_len;
		}
		return nullptr;
	}
};

const std::vector<std::vector<size_t>> kShapes = {
    {40},		   /* inline only */
    {12, 0, 64, 0, 20},	   /* inline, empty, chunk data, empty, rest */
    {12, 64, 4, 20},	   /* inline, chunk data, its pad, the rest */
    {8, 16, 16, 16, 8, 0}, /* several pieces, an empty one at the end */
};

std::vector<unsigned> positions(const Stream &s)
{
	std::vector<unsigned> at;
	unsigned off = 0;

	at.push_back(0);
	for (const auto &v : s.iov) {
		off += (unsigned)v.iov_len;
		at.push_back(off);
		if (off >= 3)
			at.push_back(off - 3);
	}
	at.push_back(s.total / 2);
	return at;
}

/*
 * fn(stream, at, start, len) for every shape, stream position and window
 * (start and len each up to two bytes past the end); stops at the first
 * fatal failure.
 */
template <typename Fn> void each_window(Fn fn)
{
	for (const auto &shape : kShapes) {
		Stream s(shape);

		for (unsigned at : positions(s))
			for (unsigned start = 0; start <= s.total + 2; start++)
				for (unsigned len = 0; len <= s.total + 2; len++) {
					fn(s, at, start, len);
					if (::testing::Test::HasFatalFailure())
						return;
				}
	}
}

TEST(RrpXdrDecode, IovcountMatchesTheStream)
{
	each_window([](const Stream &s, unsigned at, unsigned start, unsigned len) {
		int want = 0;

		if (start < s.total && len > 0 && len <= s.total - start)
			want = (int)s.pieces(start, len).size();
		ASSERT_EQ(rrp_probe_iovcount(s.iov.data(), s.n(), at, start, len), want)
		    << "at " << at << " start " << start << " len " << len;
	});
}

TEST(RrpXdrDecode, FillbufsGivesTheStreamsOwnBuffers)
{
	each_window([](const Stream &s, unsigned at, unsigned start, unsigned len) {
		struct iovec out[16];
		unsigned long in_place = 0;
		int got = rrp_probe_fillbufs(s.iov.data(), s.n(), at, start, len, out, 16,
					     &in_place);

		if (len == 0) {
			ASSERT_EQ(got, 0);
			return;
		}
		if (start >= s.total || len > s.total - start) {
			ASSERT_EQ(got, -1) << "start " << start << " len " << len;
			return;
		}
		auto want = s.pieces(start, len);
		ASSERT_EQ(got, (int)want.size())
		    << "at " << at << " start " << start << " len " << len;
		for (int k = 0; k < got; k++) {
			EXPECT_EQ(out[k].iov_base, want[k].iov_base);
			EXPECT_EQ(out[k].iov_len, want[k].iov_len);
		}
		EXPECT_EQ(in_place, len);
	});
}

TEST(RrpXdrDecode, SetposLandsOnTheByte)
{
	for (const auto &shape : kShapes) {
		Stream s(shape);

		for (unsigned at : positions(s)) {
			for (unsigned pos = 0; pos <= s.total + 3; pos++) {
				unsigned getpos = ~0u;
				const void *data = nullptr;
				int r =
				    rrp_probe_setpos(s.iov.data(), s.n(), at, pos, &getpos, &data);

				if (pos > s.total) {
					ASSERT_EQ(r, 0) << "pos " << pos;
					continue;
				}
				ASSERT_EQ(r, 1) << "at " << at << " pos " << pos;
				EXPECT_EQ(getpos, pos) << "at " << at;
				if (pos < s.total) {
					EXPECT_EQ(data, s.byte(pos))
					    << "at " << at << " pos " << pos;
				}
			}
		}
	}
}

/*
 * The encode stream keeps READ data by reference, two segments a READ (its
 * data, then the rest of the buffer it interrupted), RRP_ENC_MAX_SEG in
 * all: a COMPOUND of many READs fills the table and putbufs refuses the
 * next. ganesha made that uio with no reference and releases it once when
 * putbufs fails; the stream releases a reference per segment it kept when
 * the Reply is done. Every uio (and the READ buffer it frees) must then be
 * freed exactly once: never left with a reference, never released after
 * it was freed - whether the table filled before the uio's first vio or
 * between its two (ganesha 6's split tail).
 */
TEST(RrpXdrEncode, PutbufsOnAFullTableFreesEveryReadBufferOnce)
{
	struct Shape {
		int first, vios;
		const char *what;
	};
	for (const Shape &sh :
	     {Shape{1, 1, "one vio each"}, Shape{1, 2, "two vios: the table fills between them"},
	      Shape{2, 2, "two vios: the table fills before them"}}) {
		SCOPED_TRACE(sh.what);
		struct rrp_probe_bufs b;

		ASSERT_EQ(rrp_probe_putbufs(40, sh.first, sh.vios, &b), 0);
		EXPECT_LT(b.put, 40) << "the segment table never filled: the test proves nothing";
		EXPECT_GE(b.put, 9) << "a few READs fit before it fills";
		EXPECT_EQ(b.made, b.put + 1) << "the COMPOUND stops at the refused READ";
		EXPECT_EQ(b.freed, b.made) << "a READ buffer was never freed";
		EXPECT_EQ(b.over, 0) << "a READ buffer was released after it was freed";
	}
	/* A Reply that fits: every buffer freed once, when the Reply is done. */
	struct rrp_probe_bufs b;

	ASSERT_EQ(rrp_probe_putbufs(5, 1, 2, &b), 0);
	EXPECT_EQ(b.put, 5);
	EXPECT_EQ(b.freed, 5);
	EXPECT_EQ(b.over, 0);
}

} // namespace
