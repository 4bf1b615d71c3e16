// SPDX-License-Identifier: MIT
/* test_ulb_reply_walk.cc - pairing NFS Read results with Write chunks and the
 * payload checks, on Replies from the independent encoder (the Reply's shape
 * is the transport's: tests/transport/test_transport_shapes.cc). */
#include <gtest/gtest.h>

#include "support/nfs_xdr_builder.h"
#include "ulb/ulb_reply.h"
#include "ulb_test_util.h"

using namespace nfsxdr;

static ulb_call call_of(const Bytes &b)
{
	ulb_call c;
	auto iov = one(b);
	EXPECT_EQ(ulb_call_scan(iov.data(), int(iov.size()), nullptr, &c), ULB_SCAN_OK);
	return c;
}

static Compound rfc8267_call()
{
	Compound cp(0x100, 1, 9);
	cp.op_putfh(pattern(20));
	cp.op_lookup("a");
	cp.op_read(0, 8192);
	cp.op_putfh(pattern(20));
	cp.op_lookup("b");
	cp.op_readlink();
	cp.op_putfh(pattern(20));
	cp.op_lookup("c");
	cp.op_read(0, 8192);
	return cp;
}

static CompoundRes rfc8267_reply(const Bytes &a, const Bytes &b, const Bytes &cdata)
{
	CompoundRes r(0x100, 0, 9);
	r.res_putfh();
	r.res_lookup();
	r.res_read(a, false);
	r.res_putfh();
	r.res_lookup();
	r.res_readlink(b);
	r.res_putfh();
	r.res_lookup();
	r.res_read(cdata, true);
	return r;
}

struct Planned {
	enum ulb_reply_result r;
	rr_reply_plan plan;
	ulb_reply_info info;
	uint64_t inline_len; /* the Reply's bytes outside the spans and their pads */
};

/* What the plan leaves inline: every byte but the spans and their XDR pads. */
static uint64_t left_inline(const std::vector<iovec> &iov, const rr_reply_plan &plan)
{
	uint64_t n = 0;
	for (const iovec &v : iov)
		n += v.iov_len;
	for (unsigned i = 0; i < plan.nspans; i++)
		n -= (plan.spans[i].length + 3ull) & ~3ull;
	return n;
}

static Planned plan_of(const ulb_call &c, const std::vector<iovec> &iov, const rr_pcl *pcl)
{
	Planned p;
	p.r = ulb_reply_plan(&c, iov.data(), int(iov.size()), pcl, 0, &p.plan, &p.info);
	p.inline_len = left_inline(iov, p.plan);
	return p;
}

TEST(UlbReplyWalk, Rfc8267ExampleChunksABC)
{
	Compound cp = rfc8267_call();
	ulb_call c = call_of(cp.x.buf);
	Bytes a = pattern(8000, 1), b = pattern(37, 2), cd = pattern(8192, 3);
	CompoundRes r = rfc8267_reply(a, b, cd);
	rr_pcl pcl;

	pcl_init(&pcl);
	pcl_add_write(&pcl, 8192, 2); /* A */
	pcl_add_write(&pcl, 4096);    /* B */
	pcl_add_write(&pcl, 8192);    /* C */
	Planned p = plan_of(c, one(r.x.buf), &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	ASSERT_TRUE(p.plan.deliverable);
	ASSERT_EQ(p.plan.nspans, 3);
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(p.plan.spans[i].chunk, i);
		EXPECT_EQ(p.plan.spans[i].offset, r.items[i].stream_offset);
		EXPECT_EQ(p.plan.spans[i].length, r.items[i].length);
	}
	EXPECT_EQ(p.info.n_read_results, 3u);
	/* payload and pads leave the inline stream; length words stay */
	EXPECT_EQ(p.inline_len, r.x.buf.size() - 8000 - 40 - 8192);
}

TEST(UlbReplyWalk, Rfc8267ExampleEmptyChunkB)
{
	Compound cp = rfc8267_call();
	ulb_call c = call_of(cp.x.buf);
	CompoundRes r = rfc8267_reply(pattern(100), pattern(21), pattern(300));
	rr_pcl pcl;

	pcl_init(&pcl);
	pcl_add_write(&pcl, 8192);
	pcl_add_write(&pcl, 0); /* B empty: READLINK inline */
	pcl_add_write(&pcl, 8192);
	Planned p = plan_of(c, one(r.x.buf), &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	ASSERT_EQ(p.plan.nspans, 2);
	EXPECT_EQ(p.plan.spans[0].chunk, 0);
	EXPECT_EQ(p.plan.spans[0].offset, r.items[0].stream_offset);
	EXPECT_EQ(p.plan.spans[1].chunk, 2);
	EXPECT_EQ(p.plan.spans[1].offset, r.items[2].stream_offset);
	EXPECT_EQ(p.plan.spans[1].length, 300u);
}

TEST(UlbReplyWalk, FailedReadEchoesEmptyChunk)
{
	Compound cp = rfc8267_call();
	ulb_call c = call_of(cp.x.buf);
	/* the first READ fails: the COMPOUND stops there */
	CompoundRes r(0x100, 10005, 3);
	r.res_putfh();
	r.res_lookup();
	r.res_status(READ, 10005);
	rr_pcl pcl;

	pcl_init(&pcl);
	pcl_add_write(&pcl, 8192);
	pcl_add_write(&pcl, 8192);
	pcl_add_write(&pcl, 8192);
	Planned p = plan_of(c, one(r.x.buf), &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	EXPECT_TRUE(p.plan.deliverable);
	EXPECT_EQ(p.plan.nspans, 0); /* every chunk echoed with length 0 */
	EXPECT_EQ(p.info.n_read_results, 1u);

	/* a later READ fails: the first keeps chunk 0, chunk 1 stays unused */
	CompoundRes r2(0x100, 10005, 6);
	r2.res_putfh();
	r2.res_lookup();
	r2.res_read(pattern(64), false);
	r2.res_putfh();
	r2.res_lookup();
	r2.res_status(READLINK, 10005);
	Planned p2 = plan_of(c, one(r2.x.buf), &pcl);
	ASSERT_EQ(p2.r, ULB_REPLY_OK);
	ASSERT_EQ(p2.plan.nspans, 1);
	EXPECT_EQ(p2.plan.spans[0].chunk, 0);
}

TEST(UlbReplyWalk, MoreReadsThanChunks)
{
	Compound cp = rfc8267_call();
	ulb_call c = call_of(cp.x.buf);
	CompoundRes r = rfc8267_reply(pattern(2000), pattern(50), pattern(3000));
	rr_pcl pcl;

	pcl_init(&pcl);
	pcl_add_write(&pcl, 8192); /* only A */
	Planned p = plan_of(c, one(r.x.buf), &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	ASSERT_EQ(p.plan.nspans, 1);
	EXPECT_EQ(p.plan.spans[0].chunk, 0);
	EXPECT_EQ(p.plan.spans[0].length, 2000u);
	EXPECT_EQ(p.inline_len, r.x.buf.size() - 2000);

	/* no Write list at all: everything inline */
	Planned q = plan_of(c, one(r.x.buf), nullptr);
	ASSERT_EQ(q.r, ULB_REPLY_OK);
	EXPECT_EQ(q.plan.nspans, 0);
	EXPECT_EQ(q.inline_len, r.x.buf.size());
}

static Compound read_plus_call(uint32_t count)
{
	Compound cp(0x200, 2, 3);
	Sessionid sid = {};
	cp.op_sequence(sid, 1, 0);
	cp.op_putfh(pattern(20));
	cp.op_read_plus(0, count);
	return cp;
}

TEST(UlbReplyWalk, ReadPlusDataAndHole)
{
	ulb_call c = call_of(read_plus_call(65536).x.buf);
	Sessionid sid = {};
	rr_pcl pcl;

	pcl_init(&pcl);
	pcl_add_write(&pcl, 65536);
	for (int order = 0; order < 2; order++) {
		CompoundRes r(0x200, 0, 3);
		r.res_sequence(sid, 1, 0);
		r.res_putfh();
		CompoundRes::RpContent data{true, 0, pattern(4093), 0};
		CompoundRes::RpContent hole{false, 4096, {}, 61440};
		if (order == 0)
			r.res_read_plus(true, {data, hole});
		else
			r.res_read_plus(true, {hole, data});
		Planned p = plan_of(c, one(r.x.buf), &pcl);
		ASSERT_EQ(p.r, ULB_REPLY_OK) << order;
		ASSERT_EQ(p.plan.nspans, 1);
		EXPECT_EQ(p.plan.spans[0].chunk, 0);
		EXPECT_EQ(p.plan.spans[0].offset, r.items[0].stream_offset);
		EXPECT_EQ(p.plan.spans[0].length, 4093u);
		EXPECT_EQ(p.inline_len, r.x.buf.size() - 4096);
	}
}

TEST(UlbReplyWalk, ReadPlusOnlyFirstDataContentUsesChunk)
{
	ulb_call c = call_of(read_plus_call(65536).x.buf);
	Sessionid sid = {};
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 65536);
	CompoundRes r(0x200, 0, 3);
	r.res_sequence(sid, 1, 0);
	r.res_putfh();
	r.res_read_plus(false, {{true, 0, pattern(1000), 0}, {true, 1000, pattern(500), 0}});
	Planned p = plan_of(c, one(r.x.buf), &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	ASSERT_EQ(p.plan.nspans, 1);
	EXPECT_EQ(p.plan.spans[0].offset, r.items[0].stream_offset);
	EXPECT_EQ(p.plan.spans[0].length, 1000u);
}

TEST(UlbReplyWalk, ReadPlusTooSmallChunk)
{
	ulb_call c = call_of(read_plus_call(65536).x.buf);
	Sessionid sid = {};
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 4096); /* smaller than rpa_count and than the data */
	CompoundRes r(0x200, 0, 3);
	r.res_sequence(sid, 1, 0);
	r.res_putfh();
	r.res_read_plus(true, {{true, 0, pattern(8192), 0}});
	Planned p = plan_of(c, one(r.x.buf), &pcl);
	EXPECT_EQ(p.r, ULB_REPLY_WRITE_CHUNK_TOO_SMALL);
	EXPECT_FALSE(p.plan.deliverable);
	EXPECT_EQ(p.info.bad_chunk, 0);
}

TEST(UlbReplyWalk, ReadPlusAtMostTwoContents)
{
	ulb_call c = call_of(read_plus_call(65536).x.buf);
	Sessionid sid = {};
	CompoundRes r(0x200, 0, 3);
	r.res_sequence(sid, 1, 0);
	r.res_putfh();
	r.res_read_plus(
	    true, {{true, 0, pattern(10), 0}, {false, 10, {}, 100}, {true, 110, pattern(10), 0}});
	Planned p = plan_of(c, one(r.x.buf), nullptr);
	EXPECT_EQ(p.r, ULB_REPLY_READ_PLUS_TOO_MANY);
	EXPECT_FALSE(p.plan.deliverable);

	EXPECT_EQ(ULB_READ_PLUS_MAX_CONTENTS, 2u);
}

TEST(UlbReplyWalk, Nfs3ReadAndReadlink)
{
	Legacy rc = v3_read_call(0x300, 0, 32768);
	ulb_call c = call_of(rc.x.buf);
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 32768);

	Legacy ok = v3_read_reply(0x300, 0, pattern(32767));
	Planned p = plan_of(c, one(ok.x.buf), &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	ASSERT_EQ(p.plan.nspans, 1);
	EXPECT_EQ(p.plan.spans[0].offset, ok.items[0].stream_offset);
	EXPECT_EQ(p.plan.spans[0].length, 32767u);

	Legacy fail = v3_read_reply(0x300, 13, {}); /* NFS3ERR_ACCES */
	p = plan_of(c, one(fail.x.buf), &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	EXPECT_EQ(p.plan.nspans, 0);

	Legacy rlc = v3_readlink_call(0x301);
	ulb_call cl = call_of(rlc.x.buf);
	Legacy rl = v3_readlink_reply(0x301, 0, "/some/where/else");
	p = plan_of(cl, one(rl.x.buf), &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	ASSERT_EQ(p.plan.nspans, 1);
	EXPECT_EQ(p.plan.spans[0].offset, rl.items[0].stream_offset);
	EXPECT_EQ(p.plan.spans[0].length, 16u);

	/* WRITE and SYMLINK replies carry nothing eligible */
	Legacy wc = v3_write_call(0x302, pattern(10));
	ulb_call cw = call_of(wc.x.buf);
	Xdr wr;
	rpc_reply_accepted(wr, 0x302);
	wr.u32(0);
	wr.fixed_fill(200, 0);
	p = plan_of(cw, one(wr.buf), &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	EXPECT_EQ(p.plan.nspans, 0);
}

TEST(UlbReplyWalk, Nfs2Read)
{
	Xdr x;
	rpc_call_header(x, 0x310, PROG_NFS, 2, 6);
	x.fixed_fill(32, 1);
	x.u32(0);
	x.u32(8192);
	x.u32(0);
	ulb_call c = call_of(x.buf);
	Legacy r = v2_read_reply(0x310, 0, pattern(8192));
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 8192);
	Planned p = plan_of(c, one(r.x.buf), &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	ASSERT_EQ(p.plan.nspans, 1);
	EXPECT_EQ(p.plan.spans[0].offset, r.items[0].stream_offset);
}

TEST(UlbReplyWalk, PayloadInItsOwnIovec)
{
	Compound cp = rfc8267_call();
	ulb_call c = call_of(cp.x.buf);
	Bytes a = pattern(5001, 1), b = pattern(33, 2), cd = pattern(6000, 3);
	CompoundRes r = rfc8267_reply(a, b, cd);
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 8192);
	pcl_add_write(&pcl, 8192);
	pcl_add_write(&pcl, 8192);

	/* each payload by reference in its own iovec, pad in the next one */
	std::vector<size_t> cuts;
	for (auto &it : r.items) {
		cuts.push_back(it.stream_offset);
		cuts.push_back(it.stream_offset + it.length);
	}
	Planned ref = plan_of(c, one(r.x.buf), &pcl);
	Planned sep = plan_of(c, cut(r.x.buf, cuts), &pcl);
	Planned bw = plan_of(c, bytewise(r.x.buf), &pcl);
	/* and cut inside the length words */
	std::vector<size_t> odd;
	for (auto &it : r.items)
		odd.push_back(it.stream_offset - 2);
	Planned mid = plan_of(c, cut(r.x.buf, odd), &pcl);
	for (const Planned *p : {&sep, &bw, &mid}) {
		ASSERT_EQ(p->r, ULB_REPLY_OK);
		ASSERT_EQ(p->plan.nspans, ref.plan.nspans);
		for (int i = 0; i < ref.plan.nspans; i++) {
			EXPECT_EQ(p->plan.spans[i].offset, ref.plan.spans[i].offset);
			EXPECT_EQ(p->plan.spans[i].length, ref.plan.spans[i].length);
		}
		EXPECT_EQ(p->inline_len, ref.inline_len);
	}
}

/* A Reply with no payload is planned deliverable whatever its size and
 * chunks: whether it goes inline, in the Reply chunk or as ERR_CHUNK is the
 * transport's (Shapes.InlineThresholdCountsTheHeader and the ERR_CHUNK cases
 * in tests/transport). */
TEST(UlbReplyWalk, SizeAndReplyChunkAreTheTransports)
{
	Compound cp(0x400, 1, 2);
	cp.op_putfh(pattern(20));
	cp.op_getattr();
	ulb_call c = call_of(cp.x.buf);
	CompoundRes r(0x400, 0, 2);
	r.res_putfh();
	r.x.u32(GETATTR);
	r.x.u32(0);
	r.x.u32(1);
	r.x.u32(1);
	r.x.opaque(pattern(2000)); /* a big ACL, say */
	rr_pcl pcl;
	pcl_init(&pcl);

	for (int reply_chunk : {0, 1024, 4096}) {
		if (reply_chunk)
			pcl_set_reply(&pcl, uint32_t(reply_chunk));
		Planned p = plan_of(c, one(r.x.buf), &pcl);
		EXPECT_EQ(p.r, ULB_REPLY_OK) << reply_chunk;
		EXPECT_TRUE(p.plan.deliverable) << reply_chunk;
		EXPECT_EQ(p.plan.nspans, 0) << reply_chunk;
		EXPECT_EQ(p.info.reply_len, r.x.buf.size());
	}
}

TEST(UlbReplyWalk, WriteChunkTooSmall)
{
	Compound cp = rfc8267_call();
	ulb_call c = call_of(cp.x.buf);
	CompoundRes r = rfc8267_reply(pattern(8000), pattern(10), pattern(8192));
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 8192);
	pcl_add_write(&pcl, 8192);
	pcl_add_write(&pcl, 4096); /* C too small */
	Planned p = plan_of(c, one(r.x.buf), &pcl);
	EXPECT_EQ(p.r, ULB_REPLY_WRITE_CHUNK_TOO_SMALL);
	EXPECT_FALSE(p.plan.deliverable);
	EXPECT_EQ(p.info.bad_chunk, 2);
	EXPECT_EQ(p.plan.nspans, 0);
}

TEST(UlbReplyWalk, EveryOpResultRoundTrip)
{
	/* a reply holding a result for every op but the three NFS Read ones,
	 * then the result of the Call's READ */
	for (int v = 0; v < 6; v++) {
		Compound cp(0x500, 2, 2);
		cp.op_putfh(pattern(4));
		cp.op_read(0, 777);
		ulb_call c = call_of(cp.x.buf);
		std::vector<uint32_t> ops;
		for (uint32_t op = 3; op <= 75; op++)
			if (op != READ && op != READLINK && op != READ_PLUS)
				ops.push_back(op);
		ops.push_back(READ);
		CompoundRes r(0x500, 0, uint32_t(ops.size()), v % 2 ? AUTH_SYS : AUTH_NONE);
		for (uint32_t op : ops) {
			if (op == READ)
				r.res_read(pattern(777), true);
			else
				r.res_sample(op, v);
		}
		rr_pcl pcl;
		pcl_init(&pcl);
		pcl_add_write(&pcl, 1024);
		Planned p = plan_of(c, one(r.x.buf), &pcl);
		ASSERT_EQ(p.r, ULB_REPLY_OK) << "variant " << v;
		ASSERT_EQ(p.plan.nspans, 1);
		EXPECT_EQ(p.plan.spans[0].offset, r.items[0].stream_offset);
		EXPECT_EQ(p.plan.spans[0].length, 777u);
	}
}

TEST(UlbReplyWalk, ErrorArmsOfResults)
{
	Compound cp(0x510, 2, 1);
	cp.op_putfh(pattern(4));
	ulb_call c = call_of(cp.x.buf);
	CompoundRes r(0x510, 10010, 2);
	r.x.u32(SETATTR); /* attrsset follows any status */
	r.x.u32(10001);
	r.x.u32(1);
	r.x.u32(0);
	r.x.u32(LOCK); /* NFS4ERR_DENIED: LOCK4denied */
	r.x.u32(10010);
	r.x.u64(0);
	r.x.u64(10);
	r.x.u32(1);
	r.x.u64(5);
	r.x.opaque(pattern(8));
	Planned p = plan_of(c, one(r.x.buf), nullptr);
	EXPECT_EQ(p.r, ULB_REPLY_OK);
}

TEST(UlbReplyWalk, NonSuccessRepliesCarryNothing)
{
	Compound cp = rfc8267_call();
	ulb_call c = call_of(cp.x.buf);
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 8192);
	Xdr d;
	rpc_reply_denied(d, 0x100);
	Planned p = plan_of(c, one(d.buf), &pcl);
	EXPECT_EQ(p.r, ULB_REPLY_OK);
	EXPECT_EQ(p.plan.nspans, 0);
	Xdr g;
	rpc_reply_accepted(g, 0x100, AUTH_NONE, 4); /* GARBAGE_ARGS */
	p = plan_of(c, one(g.buf), &pcl);
	EXPECT_EQ(p.r, ULB_REPLY_OK);
	Xdr m;
	rpc_reply_accepted(m, 0x100, AUTH_SYS, 2); /* PROG_MISMATCH */
	p = plan_of(c, one(m.buf), &pcl);
	EXPECT_EQ(p.r, ULB_REPLY_OK);
}

TEST(UlbReplyWalk, TruncatedRepliesAreGarbage)
{
	Compound cp = rfc8267_call();
	ulb_call c = call_of(cp.x.buf);
	CompoundRes r = rfc8267_reply(pattern(100), pattern(10), pattern(100));
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 8192);
	for (size_t n = 0; n < r.x.buf.size(); n++) {
		Bytes t(r.x.buf.begin(), r.x.buf.begin() + n);
		Planned p = plan_of(c, one(t), &pcl);
		EXPECT_EQ(p.r, ULB_REPLY_GARBAGE) << n;
		EXPECT_FALSE(p.plan.deliverable);
	}
}

TEST(UlbReplyWalk, ZeroLengthDataLeavesChunkEmpty)
{
	Compound cp = rfc8267_call();
	ulb_call c = call_of(cp.x.buf);
	CompoundRes r = rfc8267_reply(Bytes(), pattern(9), pattern(5));
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 8192);
	pcl_add_write(&pcl, 8192);
	Planned p = plan_of(c, one(r.x.buf), &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	ASSERT_EQ(p.plan.nspans, 1);
	EXPECT_EQ(p.plan.spans[0].chunk, 1); /* READ at EOF wrote nothing into A */
}

TEST(UlbReplyWalk, ReadPlusBeforeMinorTwoIsGarbage)
{
	/* a v4.1 READ answered with a READ_PLUS result (an op of v4.2) */
	Compound cp(0x600, 1, 2);
	cp.op_putfh(pattern(4));
	cp.op_read(0, 10);
	ulb_call c = call_of(cp.x.buf);
	CompoundRes r(0x600, 0, 1);
	r.res_read_plus(true, {{true, 0, pattern(10), 0}});
	EXPECT_EQ(plan_of(c, one(r.x.buf), nullptr).r, ULB_REPLY_GARBAGE);
}

TEST(UlbReplyWalk, CompoundWithoutReadOpsIsNotWalked)
{
	/* SEQUENCE, PUTFH, GETATTR: no result can pair with a Write chunk, so
	 * the Reply's results are not walked (they may be anything); what stays
	 * inline is all of it. */
	Compound cp(0x650, 1, 3);
	cp.op_sequence(Sessionid{}, 1, 0);
	cp.op_putfh(pattern(4));
	cp.op_getattr();
	ulb_call c = call_of(cp.x.buf);
	ASSERT_EQ(c.n_read_ops, 0u);
	Xdr r;
	rpc_reply_accepted(r, 0x650, AUTH_NONE);
	r.fixed_fill(3000, 0xee); /* not a COMPOUND4res: never looked at */
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 4096); /* a stray Write chunk is echoed empty */
	Planned p = plan_of(c, one(r.buf), &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	EXPECT_TRUE(p.plan.deliverable);
	EXPECT_EQ(p.plan.nspans, 0);
	EXPECT_EQ(p.inline_len, r.buf.size());
	EXPECT_EQ(p.info.n_read_results, 0u);
}

TEST(UlbReplyWalk, AuxiliaryProgramRepliesNeedNoWalk)
{
	Legacy m = simple_call(0x700, 100005, 3, 1, 8);
	ulb_call c = call_of(m.x.buf);
	Xdr r;
	rpc_reply_accepted(r, 0x700, AUTH_SYS);
	r.fixed_fill(500, 0x77);
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 4096); /* a stray Write chunk is echoed empty */
	Planned p = plan_of(c, one(r.buf), &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	EXPECT_EQ(p.plan.nspans, 0);
	EXPECT_EQ(p.inline_len, r.buf.size());
}

TEST(UlbReplyWalk, ZeroCopyPayloadBySeparateBuffer)
{
	/* As an encoder passing FSAL data by reference would: head (up to and
	 * including the length word), the payload buffer itself, then the pad
	 * and the rest of the Reply in a third buffer. */
	Legacy rc = v3_read_call(0x800, 0, 65536);
	ulb_call c = call_of(rc.x.buf);
	Bytes payload = pattern(65533, 9);
	Legacy whole = v3_read_reply(0x800, 0, payload);
	size_t off = whole.items[0].stream_offset;
	Bytes head(whole.x.buf.begin(), whole.x.buf.begin() + off);
	Bytes tail(whole.x.buf.begin() + off + payload.size(), whole.x.buf.end());
	ASSERT_EQ(tail.size(), 3u); /* just the XDR pad */
	std::vector<iovec> iov = {{head.data(), head.size()},
				  {payload.data(), payload.size()},
				  {tail.data(), tail.size()}};
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 65536, 16);
	Planned p = plan_of(c, iov, &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	ASSERT_EQ(p.plan.nspans, 1);
	EXPECT_EQ(p.plan.spans[0].offset, head.size());
	EXPECT_EQ(p.plan.spans[0].length, payload.size());
	EXPECT_EQ(p.inline_len, head.size());
	/* without the chunk the payload stays inline (the transport then finds
	 * the Reply too big for a Send) */
	Planned q = plan_of(c, iov, nullptr);
	EXPECT_EQ(q.r, ULB_REPLY_OK);
	EXPECT_EQ(q.plan.nspans, 0);
	EXPECT_EQ(q.inline_len, whole.x.buf.size());
}

TEST(UlbReplyWalk, GssIntegrityAndPrivacy)
{
	/* krb5i: the results sit in rpc_gss_integ_data (length, seq_num, results) */
	ulb_call c = call_of(v3_read_call_krb5i(0x900, 5, 4096).x.buf);
	ASSERT_EQ(c.gss_service, 2u);

	Xdr r;
	r.u32(0x900);
	r.u32(1);
	r.u32(0);
	r.u32(RPCSEC_GSS); /* verf: a MIC */
	r.opaque(pattern(20));
	r.u32(0);	  /* SUCCESS */
	r.u32(0);	  /* databody_integ length (not checked) */
	r.u32(5);	  /* seq_num */
	r.u32(0);	  /* NFS3_OK */
	r.boolean(false); /* post_op_attr */
	r.u32(100);
	r.boolean(true);
	Item it = r.item(pattern(100));
	r.opaque(pattern(16)); /* checksum */
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 4096);
	Planned p = plan_of(c, one(r.buf), &pcl);
	ASSERT_EQ(p.r, ULB_REPLY_OK);
	ASSERT_EQ(p.plan.nspans, 1);
	EXPECT_EQ(p.plan.spans[0].offset, it.stream_offset);

	/* krb5p: nothing can be found; all inline */
	Xdr pc;
	rpc_call_header_gss(pc, 0x901, PROG_NFS, 3, 6, 0, 3);
	pc.fixed_fill(64, 1);
	ulb_call cp;
	auto iov = one(pc.buf);
	ASSERT_EQ(ulb_call_scan(iov.data(), 1, nullptr, &cp), ULB_SCAN_OPAQUE);
	Planned q = plan_of(cp, one(r.buf), &pcl);
	EXPECT_EQ(q.r, ULB_REPLY_OK);
	EXPECT_EQ(q.plan.nspans, 0);
}

/* ---- the encoder's word on where READ data went (ulb_reply_plan's read_data) ---- */

static const Sessionid kSid = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}};

/* The Linux client's READ COMPOUND: SEQUENCE, PUTFH, READ. */
static ulb_call linux_read_call(uint32_t count)
{
	Compound cp(0xa00, 1, 3, "");
	cp.op_sequence(kSid, 7, 0);
	cp.op_putfh(pattern(28));
	cp.op_read(0, count);
	return call_of(cp.x.buf);
}

static CompoundRes linux_read_reply(const Bytes &data)
{
	CompoundRes r(0xa00, 0, 3);
	r.res_sequence(kSid, 7, 0);
	r.res_putfh();
	r.res_read(data, true);
	return r;
}

static Planned plan_hinted(const ulb_call &c, const std::vector<iovec> &iov, const rr_pcl *pcl,
			   uint64_t read_data)
{
	Planned p;
	p.r = ulb_reply_plan(&c, iov.data(), int(iov.size()), pcl, read_data, &p.plan, &p.info);
	p.inline_len = left_inline(iov, p.plan);
	return p;
}

/* Every output of a hinted plan equals the walk's. */
static void expect_same(const Planned &hinted, const Planned &walked)
{
	EXPECT_EQ(hinted.r, walked.r);
	EXPECT_EQ(hinted.plan.deliverable, walked.plan.deliverable);
	ASSERT_EQ(hinted.plan.nspans, walked.plan.nspans);
	for (unsigned i = 0; i < walked.plan.nspans; i++) {
		EXPECT_EQ(hinted.plan.spans[i].chunk, walked.plan.spans[i].chunk);
		EXPECT_EQ(hinted.plan.spans[i].offset, walked.plan.spans[i].offset);
		EXPECT_EQ(hinted.plan.spans[i].length, walked.plan.spans[i].length);
	}
	EXPECT_EQ(hinted.info.reply_len, walked.info.reply_len);
	EXPECT_EQ(hinted.inline_len, walked.inline_len);
	EXPECT_EQ(hinted.info.n_read_results, walked.info.n_read_results);
	EXPECT_EQ(hinted.info.bad_chunk, walked.info.bad_chunk);
}

/* The payload in its own iovec, as the plugin's encoder leaves it. */
static std::vector<iovec> split_at_payload(const Bytes &whole, const Item &it, Bytes &head,
					   Bytes &payload, Bytes &tail)
{
	head.assign(whole.begin(), whole.begin() + it.stream_offset);
	payload.assign(whole.begin() + it.stream_offset,
		       whole.begin() + it.stream_offset + it.length);
	tail.assign(whole.begin() + it.stream_offset + it.length, whole.end());
	std::vector<iovec> iov = {{head.data(), head.size()}, {payload.data(), payload.size()}};
	if (!tail.empty())
		iov.push_back({tail.data(), tail.size()});
	return iov;
}

TEST(UlbReplyWalk, HintedLinuxReadAgreesWithTheWalk)
{
	for (uint32_t len : {0u, 1u, 4093u, 4096u, 65536u}) {
		SCOPED_TRACE(len);
		ulb_call c = linux_read_call(len ? len : 4096);
		CompoundRes r = linux_read_reply(pattern(len, 3));
		const Item &it = r.items[0];
		Bytes head, payload, tail;
		std::vector<iovec> split = split_at_payload(r.x.buf, it, head, payload, tail);
		/* the head itself in two iovecs: not checked in place, walked */
		std::vector<iovec> split_head = split;
		split_head[0].iov_len = 10;
		split_head.insert(split_head.begin() + 1, {head.data() + 10, head.size() - 10});

		for (uint64_t room : {uint64_t(65536), uint64_t(4096), uint64_t(0)}) {
			SCOPED_TRACE(room);
			rr_pcl pcl;
			pcl_init(&pcl);
			pcl_add_write(&pcl, room);
			for (const std::vector<iovec> &iov : {one(r.x.buf), split, split_head}) {
				Planned h = plan_hinted(c, iov, &pcl, it.stream_offset);
				expect_same(h, plan_of(c, iov, &pcl));
				if (room >= len && len > 0) {
					ASSERT_EQ(h.r, ULB_REPLY_OK);
					ASSERT_EQ(h.plan.nspans, 1);
					EXPECT_EQ(h.plan.spans[0].offset, it.stream_offset);
					EXPECT_EQ(h.plan.spans[0].length, len);
				}
			}
		}
		/* no chunks at all: the sizes alone decide */
		expect_same(plan_hinted(c, one(r.x.buf), nullptr, it.stream_offset),
			    plan_of(c, one(r.x.buf), nullptr));
	}
}

TEST(UlbReplyWalk, HintsThatDoNotCheckAreWalked)
{
	ulb_call c = linux_read_call(8192);
	CompoundRes r = linux_read_reply(pattern(5000, 4));
	const uint64_t at = r.items[0].stream_offset, total = r.x.buf.size();
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 8192);
	Planned walked = plan_of(c, one(r.x.buf), &pcl);
	ASSERT_EQ(walked.plan.nspans, 1);

	for (uint64_t hint : {uint64_t(1), uint64_t(24), at - 4, at - 8, at + 4, at + 16, total,
			      total + 4096, ~uint64_t(0)}) {
		SCOPED_TRACE(hint);
		expect_same(plan_hinted(c, one(r.x.buf), &pcl, hint), walked);
	}
	/* a truncated Reply: the hint's end-of-stream check fails, the walk finds garbage */
	Bytes cut(r.x.buf.begin(), r.x.buf.end() - 8);
	Planned h = plan_hinted(c, one(cut), &pcl, at);
	expect_same(h, plan_of(c, one(cut), &pcl));
	EXPECT_EQ(h.r, ULB_REPLY_GARBAGE);
}

TEST(UlbReplyWalk, HintsForOtherShapesAreWalked)
{
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 8192);
	pcl_add_write(&pcl, 8192);

	/* READ not last: a GETATTR follows it */
	Compound a(0xa01, 1, 4, "");
	a.op_sequence(kSid, 1, 0);
	a.op_putfh(pattern(28));
	a.op_read(0, 4096);
	a.op_getattr();
	CompoundRes ra(0xa01, 0, 4);
	ra.res_sequence(kSid, 1, 0);
	ra.res_putfh();
	ra.res_read(pattern(4096, 5), false);
	ra.res_getattr();
	ulb_call ca = call_of(a.x.buf);
	expect_same(plan_hinted(ca, one(ra.x.buf), &pcl, ra.items[0].stream_offset),
		    plan_of(ca, one(ra.x.buf), &pcl));

	/* two READs: the second's data is last, but each needs its own chunk */
	Compound b(0xa02, 1, 4, "");
	b.op_sequence(kSid, 2, 0);
	b.op_putfh(pattern(28));
	b.op_read(0, 4096);
	b.op_read(4096, 4096);
	CompoundRes rb(0xa02, 0, 4);
	rb.res_sequence(kSid, 2, 0);
	rb.res_putfh();
	rb.res_read(pattern(4096, 6), false);
	rb.res_read(pattern(100, 7), true);
	ulb_call cb = call_of(b.x.buf);
	Planned hb = plan_hinted(cb, one(rb.x.buf), &pcl, rb.items[1].stream_offset);
	expect_same(hb, plan_of(cb, one(rb.x.buf), &pcl));
	EXPECT_EQ(hb.plan.nspans, 2);

	/* the READ failed: the COMPOUND's status says so, nothing to pair */
	ulb_call c = linux_read_call(4096);
	CompoundRes rc(0xa00, 10008 /* NFS4ERR_DELAY */, 3);
	rc.res_sequence(kSid, 7, 0);
	rc.res_putfh();
	rc.res_status(READ, 10008);
	expect_same(plan_hinted(c, one(rc.x.buf), &pcl, rc.x.buf.size() - 4),
		    plan_of(c, one(rc.x.buf), &pcl));

	/* NFSv3 READ: its own in-place walk; the hint is not used */
	Legacy v3 = v3_read_call(0xa03, 0, 4096);
	ulb_call c3 = call_of(v3.x.buf);
	Legacy r3 = v3_read_reply(0xa03, 0, pattern(4096, 8));
	expect_same(plan_hinted(c3, one(r3.x.buf), &pcl, r3.items[0].stream_offset),
		    plan_of(c3, one(r3.x.buf), &pcl));
}

TEST(UlbReplyWalk, HintCannotPointAnywhereButWhereTheWalkWould)
{
	/* READ data whose last bytes look like a READ result of their own (op,
	 * NFS4_OK, eof, length 8, 8 bytes): a hint at that inner "data" ends the
	 * stream right, but the three results before it are not where the
	 * shape puts them, so the Reply is walked and the real data paired. */
	Xdr inner;
	inner.u32(READ);
	inner.u32(0);
	inner.u32(1);
	inner.u32(8);
	inner.fixed_fill(8, 0xee);
	Bytes data = pattern(64, 9);
	data.insert(data.end(), inner.buf.begin(), inner.buf.end());
	ulb_call c = linux_read_call(4096);
	CompoundRes r = linux_read_reply(data);
	const uint64_t end = r.x.buf.size();
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 4096);

	Planned walked = plan_of(c, one(r.x.buf), &pcl);
	ASSERT_EQ(walked.plan.nspans, 1);
	EXPECT_EQ(walked.plan.spans[0].offset, r.items[0].stream_offset);
	expect_same(plan_hinted(c, one(r.x.buf), &pcl, r.items[0].stream_offset), walked);
	expect_same(plan_hinted(c, one(r.x.buf), &pcl, end - 8), walked);
}

TEST(UlbReplyWalk, HintedReplyThatAnswersOtherOpsIsWalked)
{
	/* A Reply whose results are not the Call's (a session's cached Reply
	 * replayed for a retry that changed its operations, RFC 8881 section
	 * 2.10.6.1.3). The walk pairs what the Reply holds; the hint must agree. */
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 4096);
	pcl_add_write(&pcl, 4096);

	/* Call SEQUENCE, PUTFH, READ; Reply SEQUENCE, PUTFH, READLINK with the
	 * link's text last */
	ulb_call c = linux_read_call(4096);
	CompoundRes r(0xa00, 0, 3);
	r.res_sequence(kSid, 7, 0);
	r.res_putfh();
	r.res_readlink(pattern(100, 10));
	ASSERT_EQ(r.items.size(), 1u);
	expect_same(plan_hinted(c, one(r.x.buf), &pcl, r.items[0].stream_offset),
		    plan_of(c, one(r.x.buf), &pcl));

	/* Call SEQUENCE, PUTFH, GETATTR, READ; Reply SEQUENCE, PUTFH, READLINK,
	 * READ: the walk gives the READLINK the first chunk, the READ the second */
	Compound a(0xa04, 1, 4, "");
	a.op_sequence(kSid, 8, 0);
	a.op_putfh(pattern(28));
	a.op_getattr();
	a.op_read(0, 4096);
	ulb_call ca = call_of(a.x.buf);
	CompoundRes ra(0xa04, 0, 4);
	ra.res_sequence(kSid, 8, 0);
	ra.res_putfh();
	ra.res_readlink(pattern(100, 11));
	ra.res_read(pattern(4096, 12), true);
	ASSERT_EQ(ra.items.size(), 2u);
	Planned walked = plan_of(ca, one(ra.x.buf), &pcl);
	ASSERT_EQ(walked.plan.nspans, 2);
	EXPECT_EQ(walked.plan.spans[1].chunk, 1u);
	expect_same(plan_hinted(ca, one(ra.x.buf), &pcl, ra.items[1].stream_offset), walked);
}
