// SPDX-License-Identifier: MIT
/*
 * One test per validation row of the header decoder: each builds a hostile or
 * unusual header with the independent builder (tests/support/rr_wire.h) and
 * asserts the exact named result and the answer it maps to.
 */
#include <gtest/gtest.h>

#include <vector>

#include "rpcrdma/rr_hdr.h"
#include "support/rr_wire.h"

using rrtest::ReadEntry;
using rrtest::Seg;
using rrtest::Wire;

namespace {

constexpr uint32_t kXid = 0x600dcafe;

class HdrDecode : public ::testing::Test {
      protected:
	rr_hdr_limits lim;
	rr_pcl pcl;

	void SetUp() override
	{
		rr_hdr_limits_default(&lim);
	}
	rr_hdr_result decode(const Wire &w)
	{
		return rr_hdr_decode_call(w.b.data(), w.b.size(), &lim, &pcl);
	}
	static Wire msg()
	{
		Wire w;
		w.fixed(kXid, 1, 32, 0);
		return w;
	}
};

TEST_F(HdrDecode, ShorterThan16BytesIsErrChunkWhenXidKnown)
{
	Wire w;
	w.u32(kXid).u32(1).u32(32);
	EXPECT_EQ(decode(w), RR_HDR_SHORT);
	EXPECT_EQ(pcl.xid, kXid);
	EXPECT_EQ(rr_hdr_answer(RR_HDR_SHORT, w.b.size()), RR_ACT_ERR_CHUNK);
	EXPECT_EQ(rr_hdr_answer(RR_HDR_SHORT, 3), RR_ACT_DROP);
	EXPECT_EQ(rr_hdr_decode_call(w.b.data(), 2, &lim, &pcl), RR_HDR_SHORT);
}

TEST_F(HdrDecode, WrongVersionIsErrVers)
{
	Wire w;
	w.fixed(kXid, 2, 32, 0).u32(0).u32(0).u32(0);
	EXPECT_EQ(decode(w), RR_HDR_BAD_VERS);
	EXPECT_EQ(pcl.xid, kXid);
	EXPECT_EQ(rr_hdr_answer(RR_HDR_BAD_VERS, w.b.size()), RR_ACT_ERR_VERS);
}

TEST_F(HdrDecode, DoneIsDropped)
{
	Wire w;
	w.fixed(kXid, 1, 32, 3);
	EXPECT_EQ(decode(w), RR_HDR_PROC_DONE);
	EXPECT_EQ(rr_hdr_answer(RR_HDR_PROC_DONE, w.b.size()), RR_ACT_DROP);
}

TEST_F(HdrDecode, ErrorSentToResponderIsDropped)
{
	Wire w;
	w.fixed(kXid, 1, 32, 4).u32(2);
	EXPECT_EQ(decode(w), RR_HDR_PROC_ERROR);
	EXPECT_EQ(rr_hdr_answer(RR_HDR_PROC_ERROR, w.b.size()), RR_ACT_DROP);
}

TEST_F(HdrDecode, MsgpIsErrChunk)
{
	Wire w;
	w.fixed(kXid, 1, 32, 2).u32(0).u32(0).u32(0).u32(0).u32(0);
	EXPECT_EQ(decode(w), RR_HDR_PROC_MSGP);
	EXPECT_EQ(rr_hdr_answer(RR_HDR_PROC_MSGP, w.b.size()), RR_ACT_ERR_CHUNK);
}

TEST_F(HdrDecode, UnknownProcIsErrChunk)
{
	for (uint32_t proc : {5u, 0x80000000u, 0xffffffffu}) {
		Wire w;
		w.fixed(kXid, 1, 32, proc).u32(0).u32(0).u32(0);
		EXPECT_EQ(decode(w), RR_HDR_PROC_UNKNOWN) << proc;
		EXPECT_EQ(rr_hdr_answer(RR_HDR_PROC_UNKNOWN, w.b.size()), RR_ACT_ERR_CHUNK);
	}
}

TEST_F(HdrDecode, ReadListOverrunsMessage)
{
	Wire w = msg();
	w.u32(1).u32(0x20).u32(7).u32(100); /* segment cut after its length */
	EXPECT_EQ(decode(w), RR_HDR_OVERRUN);
	EXPECT_EQ(rr_hdr_answer(RR_HDR_OVERRUN, w.b.size()), RR_ACT_ERR_CHUNK);
}

TEST_F(HdrDecode, MissingListTerminatorsOverrun)
{
	Wire w = msg();
	w.u32(0).u32(0); /* no reply-chunk discriminator */
	EXPECT_EQ(decode(w), RR_HDR_OVERRUN);
}

TEST_F(HdrDecode, WriteChunkSegmentCountBeyondMessageOverruns)
{
	Wire w = msg();
	w.u32(0).u32(1).u32(40).seg({1, 4096, 0}); /* 40 announced, 1 present */
	EXPECT_EQ(decode(w), RR_HDR_OVERRUN);
}

TEST_F(HdrDecode, ReplyChunkOverrunsMessage)
{
	Wire w = msg();
	w.u32(0).u32(0).u32(1).u32(1).u32(9).u32(4096); /* segment cut short */
	EXPECT_EQ(decode(w), RR_HDR_OVERRUN);
}

TEST_F(HdrDecode, BadDiscriminatorIsErrChunk)
{
	Wire w = msg();
	w.u32(2);
	EXPECT_EQ(decode(w), RR_HDR_BAD_DISCRIM);
	EXPECT_EQ(rr_hdr_answer(RR_HDR_BAD_DISCRIM, w.b.size()), RR_ACT_ERR_CHUNK);
}

TEST_F(HdrDecode, UnalignedPosition)
{
	Wire w = msg();
	w.read_list({{0x95, {1, 4096, 0}}}).write_list({}).reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_UNALIGNED_POSITION);
	EXPECT_EQ(rr_hdr_answer(RR_HDR_UNALIGNED_POSITION, w.b.size()), RR_ACT_ERR_CHUNK);
}

TEST_F(HdrDecode, TooManyReadChunks)
{
	lim.max_read_chunks = 2;
	Wire w = msg();
	w.read_list({{0x10, {1, 4, 0}}, {0x20, {2, 4, 0}}, {0x30, {3, 4, 0}}})
		.write_list({})
		.reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_TOO_MANY_CHUNKS);
}

TEST_F(HdrDecode, TooManyWriteChunks)
{
	lim.max_write_chunks = 1;
	Wire w = msg();
	w.read_list({}).write_list({{{1, 4096, 0}}, {{2, 4096, 0}}}).reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_TOO_MANY_CHUNKS);
}

TEST_F(HdrDecode, TooManySegmentsInOneChunk)
{
	lim.max_segs_per_chunk = 3;
	std::vector<Seg> segs;
	for (uint32_t i = 0; i < 4; i++)
		segs.push_back({i, 4096, 0});
	Wire w = msg();
	w.read_list({}).write_list({segs}).reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_TOO_MANY_SEGS);
}

TEST_F(HdrDecode, TooManyReadSegmentsInOneChunk)
{
	lim.max_segs_per_chunk = 2;
	Wire w = msg();
	w.read_list({{0x10, {1, 4, 0}}, {0x10, {2, 4, 0}}, {0x10, {3, 4, 0}}})
		.write_list({})
		.reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_TOO_MANY_SEGS);
}

TEST_F(HdrDecode, AbsurdSegmentCountIsRefusedBeforeWalking)
{
	Wire w = msg();
	w.u32(0).u32(1).u32(0xffffffffu);
	EXPECT_EQ(decode(w), RR_HDR_TOO_MANY_SEGS);
}

TEST_F(HdrDecode, TooManySegmentsAcrossLists)
{
	lim.max_segs = 3;
	Wire w = msg();
	w.read_list({{0x10, {1, 4, 0}}, {0x10, {2, 4, 0}}})
		.write_list({{{3, 4096, 0}, {4, 4096, 0}}})
		.reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_TOO_MANY_SEGS);
}

TEST_F(HdrDecode, ZeroLengthReadSegment)
{
	Wire w = msg();
	w.read_list({{0x10, {1, 0, 0}}}).write_list({}).reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_ZERO_LENGTH_SEG);
	EXPECT_EQ(rr_hdr_answer(RR_HDR_ZERO_LENGTH_SEG, w.b.size()), RR_ACT_ERR_CHUNK);
}

TEST_F(HdrDecode, ZeroLengthWriteSegment)
{
	Wire w = msg();
	w.read_list({}).write_list({{{1, 0, 0}}}).reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_ZERO_LENGTH_SEG);
}

TEST_F(HdrDecode, ReadSegmentOffsetWraps)
{
	Wire w = msg();
	w.read_list({{0x10, {1, 0x100, 0xffffffffffffff80ull}}}).write_list({}).reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_SEG_WRAPS);
}

TEST_F(HdrDecode, ReplySegmentOffsetWraps)
{
	std::vector<Seg> reply = {{1, 2, 0xffffffffffffffffull}};
	Wire w = msg();
	w.read_list({}).write_list({}).reply_chunk(&reply);
	EXPECT_EQ(decode(w), RR_HDR_SEG_WRAPS);
}

TEST_F(HdrDecode, OverlappingReadSegments)
{
	Wire w = msg();
	w.read_list({{0x10, {7, 4096, 0x1000}}, {0x10, {7, 4096, 0x1800}}})
		.write_list({})
		.reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_READ_SEG_OVERLAP);
	EXPECT_EQ(rr_hdr_answer(RR_HDR_READ_SEG_OVERLAP, w.b.size()), RR_ACT_ERR_CHUNK);
}

TEST_F(HdrDecode, DuplicateReadSegmentsAcrossChunks)
{
	Wire w = msg();
	w.read_list({{0x10, {7, 64, 0x1000}}, {0x80, {7, 64, 0x1000}}})
		.write_list({})
		.reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_READ_SEG_OVERLAP);
}

TEST_F(HdrDecode, AdjacentReadSegmentsAndOtherHandlesAreFine)
{
	Wire w = msg();
	w.read_list({{0x10, {7, 4096, 0x1000}}, {0x10, {7, 4096, 0x2000}}, {0x10, {8, 4096, 0x1000}}})
		.write_list({})
		.reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_OK);
	EXPECT_EQ(pcl.n_read, 1);
	EXPECT_EQ(pcl.read[0].length, 3u * 4096);
}

TEST_F(HdrDecode, OverlappingReadChunkPositions)
{
	/* Chunk at 0x10 covers 0x10..0x10+roundup(9)=0x1c; a chunk at 0x18 overlaps. */
	Wire w = msg();
	w.read_list({{0x10, {1, 9, 0}}, {0x18, {2, 4, 0}}}).write_list({}).reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_READ_CHUNK_OVERLAP);
	EXPECT_EQ(rr_hdr_answer(RR_HDR_READ_CHUNK_OVERLAP, w.b.size()), RR_ACT_ERR_CHUNK);

	Wire ok = msg();
	ok.read_list({{0x10, {1, 9, 0}}, {0x1c, {2, 4, 0}}}).write_list({}).reply_chunk(nullptr);
	EXPECT_EQ(decode(ok), RR_HDR_OK);
}

TEST_F(HdrDecode, WriteChunkLargerThanMaximumPayload)
{
	lim.max_chunk_bytes = 1 << 20;
	Wire w = msg();
	w.read_list({}).write_list({{{1, 1 << 20, 0}, {2, 4, 0}}}).reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_CHUNK_TOO_BIG);
	EXPECT_EQ(rr_hdr_answer(RR_HDR_CHUNK_TOO_BIG, w.b.size()), RR_ACT_ERR_CHUNK);
}

TEST_F(HdrDecode, ReplyChunkLargerThanMaximumPayload)
{
	lim.max_chunk_bytes = 65536;
	std::vector<Seg> reply = {{1, 65536, 0}, {2, 1, 0}};
	Wire w = msg();
	w.read_list({}).write_list({}).reply_chunk(&reply);
	EXPECT_EQ(decode(w), RR_HDR_CHUNK_TOO_BIG);
}

TEST_F(HdrDecode, ReadChunkLargerThanMaximumPayload)
{
	lim.max_chunk_bytes = 8192;
	Wire w = msg();
	w.read_list({{0x10, {1, 8192, 0}}, {0x10, {2, 4, 0}}}).write_list({}).reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_CHUNK_TOO_BIG);
}

TEST_F(HdrDecode, NomsgWithoutPositionZeroChunk)
{
	Wire w;
	w.fixed(kXid, 1, 32, 1).read_list({{0x10, {1, 4, 0}}}).write_list({}).reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_NOMSG_NO_CALL);
	EXPECT_EQ(rr_hdr_answer(RR_HDR_NOMSG_NO_CALL, w.b.size()), RR_ACT_ERR_CHUNK);
}

TEST_F(HdrDecode, MsgWithPositionZeroChunk)
{
	Wire w = msg();
	w.read_list({{0, {1, 4, 0}}}).write_list({}).reply_chunk(nullptr);
	EXPECT_EQ(decode(w), RR_HDR_MSG_WITH_PZRC);
}

TEST_F(HdrDecode, ReadListSortedByPositionSegmentsKeepListOrder)
{
	/* Wire order interleaves two chunks; the pcl must group and sort. */
	Wire w = msg();
	w.read_list({{0x1040, {0xb0, 100, 0}},
		     {0x20, {0xa0, 4096, 0}},
		     {0x1040, {0xb1, 200, 0}},
		     {0x20, {0xa1, 8, 0}}})
		.write_list({})
		.reply_chunk(nullptr);
	w.u32(0x1234); /* start of inline RPC message */
	ASSERT_EQ(decode(w), RR_HDR_OK);
	ASSERT_EQ(pcl.n_read, 2);
	EXPECT_EQ(pcl.read[0].position, 0x20u);
	EXPECT_EQ(pcl.read[0].nsegs, 2);
	EXPECT_EQ(pcl.segs[pcl.read[0].first].handle, 0xa0u);
	EXPECT_EQ(pcl.segs[pcl.read[0].first + 1].handle, 0xa1u);
	EXPECT_EQ(pcl.read[0].length, 4104u);
	EXPECT_EQ(pcl.read[1].position, 0x1040u);
	EXPECT_EQ(pcl.segs[pcl.read[1].first].handle, 0xb0u);
	EXPECT_EQ(pcl.segs[pcl.read[1].first + 1].handle, 0xb1u);
	EXPECT_EQ(pcl.hdr_len, w.b.size() - 4);
}

TEST_F(HdrDecode, LongCallMayCarryFurtherChunksIndexingIntoIt)
{
	Wire w;
	w.fixed(kXid, 1, 32, 1)
		.read_list({{0, {1, 200, 0}}, {0x40, {2, 8192, 0}}})
		.write_list({})
		.reply_chunk(nullptr);
	ASSERT_EQ(decode(w), RR_HDR_OK);
	EXPECT_EQ(pcl.n_read, 2);
	EXPECT_EQ(pcl.read[0].position, 0u);
	EXPECT_EQ(pcl.read[1].position, 0x40u);
}

TEST_F(HdrDecode, ResultNamesCoverEveryResult)
{
	for (int r = 0; r < RR_HDR_RESULT_COUNT; r++)
		EXPECT_STRNE(rr_hdr_result_name(rr_hdr_result(r)), "invalid result") << r;
}

} // namespace
