// SPDX-License-Identifier: MIT
/*
 * Byte-exact vectors for the RPC-over-RDMA v1 header codec. Each vector is
 * written out by hand from RFC 8166 section 4.2 (one line per XDR word), then
 * decoded by the codec and re-encoded by it, and both directions are compared.
 */
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "rpcrdma/rr_hdr.h"

namespace {

using Bytes = std::vector<uint8_t>;

#define W(v)                                                                                       \
	uint8_t(uint32_t(v) >> 24), uint8_t(uint32_t(v) >> 16), uint8_t(uint32_t(v) >> 8),         \
		uint8_t(uint32_t(v))

rr_hdr_limits limits()
{
	rr_hdr_limits l;
	rr_hdr_limits_default(&l);
	return l;
}

rr_pcl decode_ok(const Bytes &b)
{
	rr_pcl pcl;
	rr_hdr_limits l = limits();
	EXPECT_EQ(rr_hdr_decode_call(b.data(), b.size(), &l, &pcl), RR_HDR_OK);
	return pcl;
}

Bytes encode_call(const rr_pcl &pcl)
{
	Bytes out(1024);
	ssize_t n = rr_hdr_encode_call(out.data(), out.size(), &pcl);
	EXPECT_GT(n, 0);
	out.resize(n > 0 ? size_t(n) : 0);
	return out;
}

/* Minimal RDMA_MSG: fixed part and three empty lists, 28 bytes. */
const Bytes kMinimalMsg = {
	W(0x0a0b0c0d), /* rdma_xid */
	W(1),	       /* rdma_vers */
	W(128),	       /* rdma_credit */
	W(0),	       /* RDMA_MSG */
	W(0),	       /* read list: empty */
	W(0),	       /* write list: empty */
	W(0),	       /* reply chunk: absent */
};

TEST(HdrVectors, MinimalRdmaMsg)
{
	ASSERT_EQ(kMinimalMsg.size(), 28u);
	rr_pcl pcl = decode_ok(kMinimalMsg);
	EXPECT_EQ(pcl.xid, 0x0a0b0c0du);
	EXPECT_EQ(pcl.vers, 1u);
	EXPECT_EQ(pcl.credits, 128u);
	EXPECT_EQ(pcl.proc, uint32_t(RR_PROC_MSG));
	EXPECT_EQ(pcl.n_read, 0);
	EXPECT_EQ(pcl.n_write, 0);
	EXPECT_FALSE(pcl.has_reply);
	EXPECT_EQ(pcl.hdr_len, 28u);
	EXPECT_EQ(encode_call(pcl), kMinimalMsg);
	/* a reply echoing no chunk has the same seven words */
	EXPECT_EQ(rr_hdr_reply_len(&pcl), kMinimalMsg.size());
	Bytes out(64);
	ASSERT_EQ(rr_hdr_encode_reply_bare(out.data(), pcl.xid, pcl.credits), kMinimalMsg.size());
	out.resize(kMinimalMsg.size());
	EXPECT_EQ(out, kMinimalMsg);
	Bytes full(64);
	ASSERT_EQ(rr_hdr_encode_reply(full.data(), full.size(), &pcl, pcl.credits, RR_PROC_MSG,
				      nullptr, 0),
		  ssize_t(kMinimalMsg.size()));
	full.resize(kMinimalMsg.size());
	EXPECT_EQ(full, kMinimalMsg);
}

/* An NFS READ call offering one Write chunk of two segments: the data
 * segment and the Linux client's 4-byte pad segment. */
const Bytes kReadWithWriteChunk = {
	W(0x11223344), W(1), W(128), W(0), /* fixed, RDMA_MSG */
	W(0),				   /* read list: empty */
	W(1),				   /* write list: one chunk follows */
	W(2),				   /* nseg */
	W(0x00000100), W(0x8000), W(0x11223344), W(0x00001000), /* seg 0 */
	W(0x00000101), W(4), W(0x11223344), W(0x00002000),      /* seg 1: pad */
	W(0),								/* end of write list */
	W(0),								/* no reply chunk */
};

TEST(HdrVectors, ReadCallWithTwoSegmentWriteChunk)
{
	ASSERT_EQ(kReadWithWriteChunk.size(), 16u + 4 + 4 + 4 + 32 + 4 + 4);
	rr_pcl pcl = decode_ok(kReadWithWriteChunk);
	ASSERT_EQ(pcl.n_write, 1);
	EXPECT_EQ(pcl.write[0].nsegs, 2);
	EXPECT_EQ(pcl.write[0].length, 0x8004u);
	const rr_segment &s0 = pcl.segs[pcl.write[0].first];
	const rr_segment &s1 = pcl.segs[pcl.write[0].first + 1];
	EXPECT_EQ(s0.handle, 0x100u);
	EXPECT_EQ(s0.length, 0x8000u);
	EXPECT_EQ(s0.offset, 0x1122334400001000ull);
	EXPECT_EQ(s1.handle, 0x101u);
	EXPECT_EQ(s1.length, 4u);
	EXPECT_EQ(pcl.hdr_len, kReadWithWriteChunk.size());
	EXPECT_EQ(encode_call(pcl), kReadWithWriteChunk);
}

/* An NFSv3 WRITE call whose data travels in a Read chunk at position 0x94,
 * followed inline by the RPC message (here 8 bytes of it). */
const Bytes kWriteWithReadChunk = {
	W(0x55667788), W(1), W(64), W(0),		     /* fixed, RDMA_MSG */
	W(1), W(0x94), W(0x2222), W(65536), W(0), W(0x4000), /* read entry */
	W(0),						     /* end of read list */
	W(0),						     /* write list: empty */
	W(0),						     /* no reply chunk */
	W(0x55667788), W(0),				     /* inline RPC: xid, CALL */
};

TEST(HdrVectors, WriteCallWithReadChunkAtPosition0x94)
{
	rr_pcl pcl = decode_ok(kWriteWithReadChunk);
	ASSERT_EQ(pcl.n_read, 1);
	EXPECT_EQ(pcl.read[0].position, 0x94u);
	EXPECT_EQ(pcl.read[0].nsegs, 1);
	EXPECT_EQ(pcl.read[0].length, 65536u);
	EXPECT_EQ(pcl.segs[pcl.read[0].first].handle, 0x2222u);
	EXPECT_EQ(pcl.segs[pcl.read[0].first].offset, 0x4000u);
	EXPECT_EQ(pcl.hdr_len, 52u); /* the inline RPC message starts here */
	Bytes hdr(kWriteWithReadChunk.begin(), kWriteWithReadChunk.begin() + 52);
	EXPECT_EQ(encode_call(pcl), hdr);
}

/* Long Call: RDMA_NOMSG, the whole Call in a Position-Zero Read chunk of two
 * segments, and a Reply chunk for a Long Reply. */
const Bytes kLongCall = {
	W(0x01020304), W(1), W(32), W(1),			/* fixed, RDMA_NOMSG */
	W(1), W(0), W(0xa1), W(4096), W(0), W(0x10000),		/* PZRC seg 0 */
	W(1), W(0), W(0xa1), W(1000), W(0), W(0x11000),		/* PZRC seg 1 */
	W(0),							/* end of read list */
	W(0),							/* write list: empty */
	W(1), W(1), W(0xb2), W(8192), W(0x00000001), W(0x0), /* reply chunk, 1 seg */
};

TEST(HdrVectors, LongCallNomsgPositionZero)
{
	rr_pcl pcl = decode_ok(kLongCall);
	EXPECT_EQ(pcl.proc, uint32_t(RR_PROC_NOMSG));
	ASSERT_EQ(pcl.n_read, 1);
	EXPECT_EQ(pcl.read[0].position, 0u);
	EXPECT_EQ(pcl.read[0].nsegs, 2);
	EXPECT_EQ(pcl.read[0].length, 5096u);
	ASSERT_TRUE(pcl.has_reply);
	EXPECT_EQ(pcl.reply.nsegs, 1);
	EXPECT_EQ(pcl.reply.length, 8192u);
	EXPECT_EQ(pcl.segs[pcl.reply.first].offset, 0x100000000ull);
	EXPECT_EQ(pcl.hdr_len, kLongCall.size());
	EXPECT_EQ(encode_call(pcl), kLongCall);
}

const Bytes kErrVers = {
	W(0xdeadbeef), W(1), W(128), W(4), /* fixed, RDMA_ERROR */
	W(1),				   /* ERR_VERS */
	W(1), W(1),			   /* rdma_vers_low, rdma_vers_high */
};

TEST(HdrVectors, ErrVersReply)
{
	ASSERT_EQ(kErrVers.size(), 28u);
	Bytes out(64);
	ASSERT_EQ(rr_hdr_encode_err_vers(out.data(), out.size(), 0xdeadbeef, 128), 28);
	out.resize(28);
	EXPECT_EQ(out, kErrVers);

	rr_pcl pcl;
	rr_reply_info info;
	rr_hdr_limits l = limits();
	ASSERT_EQ(rr_hdr_decode_reply(kErrVers.data(), kErrVers.size(), &l, &pcl, &info), RR_HDR_OK);
	EXPECT_EQ(info.xid, 0xdeadbeefu);
	EXPECT_EQ(info.proc, uint32_t(RR_PROC_ERROR));
	EXPECT_EQ(info.err, uint32_t(RR_ERR_VERS));
	EXPECT_EQ(info.vers_low, 1u);
	EXPECT_EQ(info.vers_high, 1u);
	EXPECT_EQ(info.credits, 128u);
}

const Bytes kErrChunk = {
	W(0xcafef00d), W(1), W(17), W(4), /* fixed, RDMA_ERROR */
	W(2),				  /* ERR_CHUNK */
};

TEST(HdrVectors, ErrChunkReply)
{
	ASSERT_EQ(kErrChunk.size(), 20u);
	Bytes out(64);
	ASSERT_EQ(rr_hdr_encode_err_chunk(out.data(), out.size(), 0xcafef00d, 17), 20);
	out.resize(20);
	EXPECT_EQ(out, kErrChunk);

	rr_pcl pcl;
	rr_reply_info info;
	rr_hdr_limits l = limits();
	ASSERT_EQ(rr_hdr_decode_reply(kErrChunk.data(), kErrChunk.size(), &l, &pcl, &info),
		  RR_HDR_OK);
	EXPECT_EQ(info.err, uint32_t(RR_ERR_CHUNK));
	EXPECT_EQ(info.xid, 0xcafef00du);
}

/* Reply to kReadWithWriteChunk after writing 0x6001 bytes: the first segment
 * reports 0x6001, the pad segment 0; RDMA_MSG, no Read list. */
const Bytes kReadReply = {
	W(0x11223344), W(1), W(100), W(0),
	W(0),
	W(1), W(2),
	W(0x00000100), W(0x6001), W(0x11223344), W(0x00001000),
	W(0x00000101), W(0), W(0x11223344), W(0x00002000),
	W(0),
	W(0),
};

TEST(HdrVectors, ReplyEchoesWrittenBytesPerSegment)
{
	rr_pcl call = decode_ok(kReadWithWriteChunk);
	Bytes out(256);
	uint64_t written[1] = {0x6001};
	ssize_t n = rr_hdr_encode_reply(out.data(), out.size(), &call, 100, RR_PROC_MSG, written, 0);
	ASSERT_EQ(n, ssize_t(kReadReply.size()));
	out.resize(size_t(n));
	EXPECT_EQ(out, kReadReply);
	/* the length the reply path sizes its Send by, before encoding */
	EXPECT_EQ(rr_hdr_reply_len(&call), kReadReply.size());

	rr_pcl pcl;
	rr_reply_info info;
	rr_hdr_limits l = limits();
	ASSERT_EQ(rr_hdr_decode_reply(out.data(), out.size(), &l, &pcl, &info),
		  RR_HDR_ZERO_LENGTH_SEG)
		<< "an echoed unused segment has length 0, which a call may not have";
}

TEST(HdrVectors, LongReplyEchoesReplyChunkAndUnusedWriteChunkIsZero)
{
	/* Call: two Write chunks and a two-segment Reply chunk. */
	const Bytes call_bytes = {
		W(7), W(1), W(8), W(0),
		W(0),
		W(1), W(1), W(0x10), W(512), W(0), W(0x100),
		W(1), W(1), W(0x20), W(512), W(0), W(0x200),
		W(0),
		W(1), W(2), W(0x30), W(2048), W(0), W(0x1000), W(0x31), W(2048), W(0), W(0x2000),
	};
	/* Reply: 100 bytes in chunk 0, chunk 1 unused (zero), 3000 bytes of
	 * Reply chunk spread 2048 + 952, RDMA_NOMSG. */
	const Bytes expect = {
		W(7), W(1), W(8), W(1),
		W(0),
		W(1), W(1), W(0x10), W(100), W(0), W(0x100),
		W(1), W(1), W(0x20), W(0), W(0), W(0x200),
		W(0),
		W(1), W(2), W(0x30), W(2048), W(0), W(0x1000), W(0x31), W(952), W(0), W(0x2000),
	};
	rr_pcl call = decode_ok(call_bytes);
	ASSERT_EQ(call.n_write, 2);
	ASSERT_TRUE(call.has_reply);
	EXPECT_EQ(call.reply.length, 4096u);
	Bytes out(256);
	uint64_t written[2] = {100, 0};
	ssize_t n = rr_hdr_encode_reply(out.data(), out.size(), &call, 8, RR_PROC_NOMSG, written,
					3000);
	ASSERT_EQ(n, ssize_t(expect.size()));
	out.resize(size_t(n));
	EXPECT_EQ(out, expect);
	EXPECT_EQ(rr_hdr_reply_len(&call), expect.size());
}

TEST(HdrVectors, EncodeReportsNoSpace)
{
	rr_pcl call = decode_ok(kReadWithWriteChunk);
	uint8_t small[40];
	EXPECT_EQ(rr_hdr_encode_reply(small, sizeof(small), &call, 1, RR_PROC_MSG, nullptr, 0),
		  -ENOSPC);
	EXPECT_EQ(rr_hdr_encode_err_vers(small, 27, 1, 1), -ENOSPC);
	EXPECT_EQ(rr_hdr_encode_err_chunk(small, 19, 1, 1), -ENOSPC);
	EXPECT_EQ(rr_hdr_encode_call(small, 27, &call), -ENOSPC);
}

} // namespace
