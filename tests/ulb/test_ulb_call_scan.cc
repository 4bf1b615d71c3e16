// SPDX-License-Identifier: MIT
/* test_ulb_call_scan.cc - the Call scanner and the Read-chunk check against
 * vectors from the independent encoder in tests/support. */
#include <gtest/gtest.h>

#include <cstring>

#include "support/nfs_xdr_builder.h"
#include "support/ulb_compare.h"
#include "ulb/ulb_call.h"
#include "ulb/ulb_test_hooks.h"
#include "ulb_test_util.h"

using namespace nfsxdr;

static enum ulb_scan_result scan(const Bytes &b, const rr_pcl *pcl, ulb_call *c)
{
	auto iov = one(b);
	return ulb_call_scan(iov.data(), int(iov.size()), pcl, c);
}

TEST(UlbCallScan, Nfs3WriteInline)
{
	Bytes data = pattern(4097);
	Legacy l = v3_write_call(0x11, data);
	ulb_call c;

	ASSERT_EQ(scan(l.x.buf, nullptr, &c), ULB_SCAN_OK);
	EXPECT_EQ(c.xid, 0x11u);
	EXPECT_EQ(c.ulp, ULB_ULP_NFS3);
	ASSERT_EQ(c.n_items, 1u);
	EXPECT_EQ(c.items[0].kind, ULB_ITEM_WRITE_DATA);
	EXPECT_EQ(c.items[0].length, 4097u);
	EXPECT_EQ(c.items[0].position, l.items[0].position);
	EXPECT_EQ(c.items[0].chunk, -1);
	EXPECT_EQ(c.n_read_ops, 0u);
}

TEST(UlbCallScan, Nfs3WriteReadChunk)
{
	Bytes data = pattern(8190);
	Legacy l = v3_write_call(0x12, data, true); /* data removed from the stream */
	rr_pcl pcl;
	ulb_call c;

	pcl_init(&pcl);
	pcl_add_read(&pcl, uint32_t(l.items[0].position), data.size());
	ASSERT_EQ(scan(l.x.buf, &pcl, &c), ULB_SCAN_OK);
	ASSERT_EQ(c.n_items, 1u);
	EXPECT_EQ(c.items[0].position, l.items[0].position);
	EXPECT_EQ(c.items[0].chunk, 0);
	EXPECT_EQ(c.absent_bytes, 8192u);
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_OK);

	/* the chunk may carry the XDR pad too */
	pcl.read[0].length = 8192;
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_OK);
	/* but not less than the item, nor more than item + pad */
	pcl.read[0].length = 100;
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_VIOLATION);
	pcl.read[0].length = 8196;
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_VIOLATION);
}

TEST(UlbCallScan, Nfs3WriteReassembled)
{
	/* the transport inserted the chunk data: scan without a pcl, check after */
	Bytes data = pattern(5000);
	Legacy l = v3_write_call(0x13, data);
	rr_pcl pcl;
	ulb_call c;

	pcl_init(&pcl);
	pcl_add_read(&pcl, uint32_t(l.items[0].position), data.size());
	ASSERT_EQ(scan(l.x.buf, nullptr, &c), ULB_SCAN_OK);
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_OK);
}

TEST(UlbCallScan, Nfs3WriteWrongPositionIsViolation)
{
	Bytes data = pattern(8192);
	Legacy l = v3_write_call(0x14, data, true);
	rr_pcl pcl;
	ulb_call c;

	/* the length word's position, not the data's */
	pcl_init(&pcl);
	pcl_add_read(&pcl, uint32_t(l.items[0].position - 4), data.size());
	enum ulb_scan_result r = scan(l.x.buf, &pcl, &c);
	/* the arguments may or may not decode; either way it is not acceptable */
	EXPECT_TRUE(r == ULB_SCAN_GARBAGE ||
		    ulb_call_check_read_chunks(&c, &pcl) == ULB_DDP_VIOLATION);
	if (r == ULB_SCAN_OK) {
		EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_VIOLATION);
	}

	/* a chunk at a non-eligible item of a reassembled Call */
	Legacy full = v3_write_call(0x14, data);
	ASSERT_EQ(scan(full.x.buf, nullptr, &c), ULB_SCAN_OK);
	pcl_init(&pcl);
	pcl_add_read(&pcl, 40, 32); /* inside the RPC header / file handle */
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_VIOLATION);
	/* two chunks for one item */
	pcl_init(&pcl);
	pcl_add_read(&pcl, uint32_t(full.items[0].position), data.size());
	pcl_add_read(&pcl, uint32_t(full.items[0].position), data.size());
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_VIOLATION);
}

TEST(UlbCallScan, PositionZeroChunkIsNotAViolation)
{
	Legacy l = v3_read_call(0x15, 0, 4096);
	rr_pcl pcl;
	ulb_call c;

	pcl_init(&pcl);
	pcl_add_read(&pcl, 0, l.x.buf.size()); /* Long Call */
	ASSERT_EQ(scan(l.x.buf, &pcl, &c), ULB_SCAN_OK);
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_OK);
}

TEST(UlbCallScan, Nfs3Symlink)
{
	std::string path(300, 'p');
	Legacy l = v3_symlink_call(0x16, "link", path, true);
	rr_pcl pcl;
	ulb_call c;

	pcl_init(&pcl);
	pcl_add_read(&pcl, uint32_t(l.items[0].position), path.size());
	ASSERT_EQ(scan(l.x.buf, &pcl, &c), ULB_SCAN_OK);
	ASSERT_EQ(c.n_items, 1u);
	EXPECT_EQ(c.items[0].kind, ULB_ITEM_SYMLINK_PATH);
	EXPECT_EQ(c.items[0].length, 300u);
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_OK);
}

TEST(UlbCallScan, Nfs3ReadAndReadlink)
{
	ulb_call c;
	Legacy r = v3_read_call(0x17, 1 << 20, 65536);

	ASSERT_EQ(scan(r.x.buf, nullptr, &c), ULB_SCAN_OK);
	ASSERT_EQ(c.n_read_ops, 1u);
	EXPECT_EQ(c.read_ops[0].kind, ULB_ITEM_READ_DATA);
	EXPECT_EQ(c.read_ops[0].count, 65536u);
	Legacy rl = v3_readlink_call(0x18);
	ASSERT_EQ(scan(rl.x.buf, nullptr, &c), ULB_SCAN_OK);
	ASSERT_EQ(c.n_read_ops, 1u);
	EXPECT_EQ(c.read_ops[0].kind, ULB_ITEM_READLINK_PATH);
}

TEST(UlbCallScan, Nfs2WriteAndSymlink)
{
	ulb_call c;
	rr_pcl pcl;
	Bytes data = pattern(8192);
	Legacy w = v2_write_call(0x19, data, true);

	pcl_init(&pcl);
	pcl_add_read(&pcl, uint32_t(w.items[0].position), data.size());
	ASSERT_EQ(scan(w.x.buf, &pcl, &c), ULB_SCAN_OK);
	EXPECT_EQ(c.ulp, ULB_ULP_NFS2);
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_OK);

	Legacy s = v2_symlink_call(0x1a, "l", "/target/path", false);
	ASSERT_EQ(scan(s.x.buf, nullptr, &c), ULB_SCAN_OK);
	ASSERT_EQ(c.n_items, 1u);
	EXPECT_EQ(c.items[0].position, s.items[0].position);

	/* NFSv2 data is limited to NFS_MAXDATA (8192) */
	Legacy big = v2_write_call(0x1b, pattern(8200));
	EXPECT_EQ(scan(big.x.buf, nullptr, &c), ULB_SCAN_GARBAGE);
}

TEST(UlbCallScan, AuxiliaryProgramsAcceptNoReadChunks)
{
	const uint32_t progs[][2] = {{100005, 3}, {100021, 4}, {100024, 1}, {100227, 3}};
	for (auto &pv : progs) {
		Legacy l = simple_call(0x20, pv[0], pv[1], 1, 64);
		rr_pcl pcl;
		ulb_call c;

		ASSERT_EQ(scan(l.x.buf, nullptr, &c), ULB_SCAN_OK);
		EXPECT_EQ(c.n_items, 0u);
		EXPECT_EQ(c.n_read_ops, 0u);
		pcl_init(&pcl);
		pcl_add_read(&pcl, 48, 16);
		EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_VIOLATION) << pv[0];
	}
}

TEST(UlbCallScan, Nfs4WriteAndSymlinkChunks)
{
	Compound cp(0x30, 1, 5);
	Sessionid sid = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}};
	Bytes data = pattern(32768, 1);
	Bytes link = pattern(2000, 2);

	cp.op_sequence(sid, 77, 5);
	cp.op_putfh(pattern(16));
	cp.op_write(0, data, true);
	cp.op_create_symlink("sym", link, true);
	cp.op_getattr();
	rr_pcl pcl;
	ulb_call c;

	pcl_init(&pcl);
	pcl_add_read(&pcl, uint32_t(cp.items[0].position), data.size());
	pcl_add_read(&pcl, uint32_t(cp.items[1].position), link.size());
	ASSERT_EQ(scan(cp.x.buf, &pcl, &c), ULB_SCAN_OK);
	EXPECT_EQ(c.numops, 5u);
	EXPECT_EQ(c.nops_scanned, 5u);
	ASSERT_EQ(c.n_items, 2u);
	EXPECT_EQ(c.items[0].op_index, 2);
	EXPECT_EQ(c.items[0].kind, ULB_ITEM_WRITE_DATA);
	EXPECT_EQ(c.items[0].position, cp.items[0].position);
	EXPECT_EQ(c.items[1].op_index, 3);
	EXPECT_EQ(c.items[1].kind, ULB_ITEM_SYMLINK_PATH);
	EXPECT_EQ(c.items[1].position, cp.items[1].position);
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_OK);
	ASSERT_TRUE(c.has_sequence);
	EXPECT_EQ(0, memcmp(c.seq.sessionid, sid.b, 16));
	EXPECT_EQ(c.seq.sequenceid, 77u);
	EXPECT_EQ(c.seq.slotid, 5u);
}

TEST(UlbCallScan, Nfs4Rfc8267Example)
{
	/* PUTFH LOOKUP READ PUTFH LOOKUP READLINK PUTFH LOOKUP READ */
	Compound cp(0x31, 0, 9);
	cp.op_putfh(pattern(20));
	cp.op_lookup("a");
	cp.op_read(0, 4096);
	cp.op_putfh(pattern(20));
	cp.op_lookup("b");
	cp.op_readlink();
	cp.op_putfh(pattern(20));
	cp.op_lookup("c");
	cp.op_read(8192, 1000);
	ulb_call c;

	ASSERT_EQ(scan(cp.x.buf, nullptr, &c), ULB_SCAN_OK);
	ASSERT_EQ(c.n_read_ops, 3u);
	EXPECT_EQ(c.read_ops[0].opcode, uint32_t(READ));
	EXPECT_EQ(c.read_ops[0].op_index, 2);
	EXPECT_EQ(c.read_ops[0].count, 4096u);
	EXPECT_EQ(c.read_ops[1].opcode, uint32_t(READLINK));
	EXPECT_EQ(c.read_ops[1].op_index, 5);
	EXPECT_EQ(c.read_ops[2].opcode, uint32_t(READ));
	EXPECT_EQ(c.read_ops[2].count, 1000u);
	EXPECT_FALSE(c.has_sequence);
	EXPECT_FALSE(c.stopped);
}

static Compound every_op_compound(uint32_t minor, int variant, uint32_t last)
{
	Compound cp(0x40 + variant, minor, last - 3 + 1);
	for (uint32_t op = 3; op <= last; op++)
		cp.op_sample(op, variant);
	return cp;
}

TEST(UlbCallScan, Nfs42EveryOpcodeRoundTrip)
{
	for (int v = 0; v < 8; v++) {
		Compound cp = every_op_compound(2, v, 75);
		ulb_call c;

		ASSERT_EQ(scan(cp.x.buf, nullptr, &c), ULB_SCAN_OK) << "variant " << v;
		EXPECT_EQ(c.numops, 73u);
		EXPECT_EQ(c.nops_scanned, 73u) << "variant " << v;
		EXPECT_FALSE(c.stopped);
		/* READ(25), READLINK(27), READ_PLUS(68) in order */
		ASSERT_EQ(c.n_read_ops, 3u);
		EXPECT_EQ(c.read_ops[0].opcode, 25u);
		EXPECT_EQ(c.read_ops[1].opcode, 27u);
		EXPECT_EQ(c.read_ops[2].opcode, 68u);
		ASSERT_EQ(c.n_items, cp.items.size());
		for (size_t i = 0; i < cp.items.size(); i++)
			EXPECT_EQ(c.items[i].position, cp.items[i].position);
		/* SEQUENCE is not first here: nothing extracted */
		EXPECT_FALSE(c.has_sequence);

		/* the same cut into single bytes: items straddle every boundary */
		auto iov = bytewise(cp.x.buf);
		ulb_call c2;
		ASSERT_EQ(ulb_call_scan(iov.data(), int(iov.size()), nullptr, &c2), ULB_SCAN_OK);
		EXPECT_TRUE(ulb_call_same(c, c2));
	}
}

TEST(UlbCallScan, MinorVersionGatesOpcodes)
{
	/* v4.0 knows 3..39: op 40 is OP_ILLEGAL and the server stops there */
	Compound c40 = every_op_compound(0, 0, 41);
	ulb_call c;
	ASSERT_EQ(scan(c40.x.buf, nullptr, &c), ULB_SCAN_OK);
	EXPECT_TRUE(c.stopped);
	EXPECT_EQ(c.stop_opcode, 40u);
	EXPECT_EQ(c.nops_scanned, 37u);
	/* v4.1 knows 3..58 */
	Compound c41 = every_op_compound(1, 1, 60);
	ASSERT_EQ(scan(c41.x.buf, nullptr, &c), ULB_SCAN_OK);
	EXPECT_TRUE(c.stopped);
	EXPECT_EQ(c.stop_opcode, 59u);
	EXPECT_EQ(c.nops_scanned, 56u);
	EXPECT_EQ(c.n_read_ops, 2u); /* READ_PLUS not reached */
}

TEST(UlbCallScan, UnknownOpcodeStops)
{
	for (uint32_t bad : {0u, 1u, 2u, 76u, 9999u, 10044u}) {
		Compound cp(0x50, 2, 3);
		cp.op_read(0, 10);
		cp.raw_op(bad);
		cp.x.fixed_fill(64, 0xee); /* whatever follows is never decoded */
		ulb_call c;

		ASSERT_EQ(scan(cp.x.buf, nullptr, &c), ULB_SCAN_OK) << bad;
		EXPECT_TRUE(c.stopped);
		EXPECT_EQ(c.stop_opcode, bad);
		EXPECT_EQ(c.nops_scanned, 1u);
		EXPECT_EQ(c.n_read_ops, 1u);
	}
}

TEST(UlbCallScan, MinorVersionMismatchAndTooManyOps)
{
	ulb_call c;
	Compound mv(0x51, 3, 1);
	mv.op_read(0, 1);
	ASSERT_EQ(scan(mv.x.buf, nullptr, &c), ULB_SCAN_OK);
	EXPECT_TRUE(c.stopped);
	EXPECT_EQ(c.nops_scanned, 0u);

	Compound many(0x52, 1, ULB_MAX_COMPOUND_OPS + 1);
	ASSERT_EQ(scan(many.x.buf, nullptr, &c), ULB_SCAN_OK);
	EXPECT_TRUE(c.stopped);
	EXPECT_EQ(c.nops_scanned, 0u);
}

TEST(UlbCallScan, SequenceExtraction)
{
	Sessionid sid;
	for (int i = 0; i < 16; i++)
		sid.b[i] = uint8_t(0xf0 ^ i);
	Compound cp(0x60, 1, 3);
	cp.op_sequence(sid, 0xdeadbeef, 63);
	cp.op_putfh(pattern(8));
	cp.op_read(0, 512);
	ulb_call c;

	ASSERT_EQ(scan(cp.x.buf, nullptr, &c), ULB_SCAN_OK);
	ASSERT_TRUE(c.has_sequence);
	EXPECT_EQ(0, memcmp(c.seq.sessionid, sid.b, 16));
	EXPECT_EQ(c.seq.sequenceid, 0xdeadbeefu);
	EXPECT_EQ(c.seq.slotid, 63u);
}

TEST(UlbCallScan, TruncatedCallsNeverDecode)
{
	Compound cp = every_op_compound(2, 3, 75);
	const Bytes &b = cp.x.buf;

	for (size_t n = 0; n < b.size(); n++) {
		Bytes t(b.begin(), b.begin() + n);
		ulb_call c;
		auto r = scan(t, nullptr, &c);
		EXPECT_NE(r, ULB_SCAN_OK) << "prefix " << n;
	}
}

TEST(UlbCallScan, BoolsMustBeZeroOrOne)
{
	Compound cp(0x61, 0, 1);
	cp.raw_op(19); /* OPENATTR createdir */
	cp.x.u32(2);
	ulb_call c;
	EXPECT_EQ(scan(cp.x.buf, nullptr, &c), ULB_SCAN_GARBAGE);
}

TEST(UlbCallScan, NotACall)
{
	Xdr x;
	rpc_reply_accepted(x, 1);
	ulb_call c;
	EXPECT_EQ(scan(x.buf, nullptr, &c), ULB_SCAN_NOT_CALL);
	Bytes empty;
	EXPECT_EQ(scan(empty, nullptr, &c), ULB_SCAN_NOT_CALL);
}

TEST(UlbCallScan, GssPrivacyIsOpaqueIntegrityIsScanned)
{
	Xdr p;
	rpc_call_header_gss(p, 0x70, PROG_NFS, 3, 7, 0, 3);
	p.fixed_fill(100, 0x33);
	ulb_call c;
	EXPECT_EQ(scan(p.buf, nullptr, &c), ULB_SCAN_OPAQUE);

	/* integrity: databody_integ<> = seq_num, args; then checksum */
	Xdr i;
	rpc_call_header_gss(i, 0x71, PROG_NFS, 3, 6, 0, 2);
	i.u32(4 + 32 + 4 + 8 + 4);
	i.u32(77);
	i.opaque(pattern(32)); /* nfs_fh3 */
	i.u64(0);
	i.u32(4096);
	i.opaque(pattern(16)); /* checksum */
	ASSERT_EQ(scan(i.buf, nullptr, &c), ULB_SCAN_OK);
	EXPECT_EQ(c.gss_service, 2u);
	ASSERT_EQ(c.n_read_ops, 1u);
	EXPECT_EQ(c.read_ops[0].count, 4096u);
}

TEST(UlbCallScan, CbSequence)
{
	Sessionid sid;
	for (int i = 0; i < 16; i++)
		sid.b[i] = uint8_t(i * 3);
	Bytes cb = cb_compound_call(0x80, sid, 12, 1);
	auto iov = cut(cb, {3, 50, 51});
	ulb_sequence seq;

	ASSERT_EQ(ulb_cb_scan_sequence(iov.data(), int(iov.size()), &seq), 0);
	EXPECT_EQ(0, memcmp(seq.sessionid, sid.b, 16));
	EXPECT_EQ(seq.sequenceid, 12u);
	EXPECT_EQ(seq.slotid, 1u);
	Bytes t(cb.begin(), cb.begin() + 60);
	auto iov2 = one(t);
	EXPECT_EQ(ulb_cb_scan_sequence(iov2.data(), 1, &seq), -EINVAL);
}

TEST(UlbCallScan, BadUnionArmsAreGarbage)
{
	ulb_call c;
	/* createhow4 mode 4 does not exist */
	Compound a(0x90, 1, 1);
	a.raw_op(OPEN);
	a.x.u32(0);
	a.x.u32(1);
	a.x.u32(0);
	a.x.u64(1);
	a.x.opaque(pattern(4));
	a.x.u32(1); /* OPEN4_CREATE */
	a.x.u32(4);
	EXPECT_EQ(scan(a.x.buf, nullptr, &c), ULB_SCAN_GARBAGE);
	/* open_claim_type4 7 does not exist */
	Compound b(0x91, 1, 1);
	b.raw_op(OPEN);
	b.x.u32(0);
	b.x.u32(1);
	b.x.u32(0);
	b.x.u64(1);
	b.x.opaque(pattern(4));
	b.x.u32(0); /* NOCREATE */
	b.x.u32(7);
	EXPECT_EQ(scan(b.x.buf, nullptr, &c), ULB_SCAN_GARBAGE);
	/* netloc4 type 0 */
	Compound d(0x92, 2, 1);
	d.raw_op(COPY_NOTIFY);
	d.x.fixed_fill(16, 1);
	d.x.u32(0);
	EXPECT_EQ(scan(d.x.buf, nullptr, &c), ULB_SCAN_GARBAGE);
	/* a file handle longer than NFS4_FHSIZE */
	Compound e(0x93, 0, 1);
	e.op_putfh(pattern(129));
	EXPECT_EQ(scan(e.x.buf, nullptr, &c), ULB_SCAN_GARBAGE);
	/* absurd lengths and counts never read past the end */
	Compound f(0x94, 2, 1);
	f.raw_op(TEST_STATEID);
	f.x.u32(0xffffffffu);
	EXPECT_EQ(scan(f.x.buf, nullptr, &c), ULB_SCAN_GARBAGE);
	Compound g(0x95, 2, 1);
	g.raw_op(WRITE);
	g.x.fixed_fill(16, 0);
	g.x.u64(0);
	g.x.u32(0);
	g.x.u32(0xfffffffdu); /* data length */
	EXPECT_EQ(scan(g.x.buf, nullptr, &c), ULB_SCAN_GARBAGE);
}

TEST(UlbCallScan, ChunkOnNonSymlinkCreateIsViolation)
{
	/* CREATE NF4DIR has no eligible item: a Read chunk at its name is wrong */
	Compound cp(0xa0, 1, 2);
	cp.op_putfh(pattern(8));
	cp.raw_op(CREATE);
	cp.x.u32(2); /* NF4DIR */
	uint64_t name_data = cp.x.pos() + 4;
	cp.x.string("dirname");
	cp.x.u32(0); /* fattr4: empty bitmap, empty attrlist */
	cp.x.u32(0);
	ulb_call c;
	rr_pcl pcl;
	ASSERT_EQ(scan(cp.x.buf, nullptr, &c), ULB_SCAN_OK);
	EXPECT_EQ(c.n_items, 0u);
	pcl_init(&pcl);
	pcl_add_read(&pcl, uint32_t(name_data), 7);
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_VIOLATION);
}

TEST(UlbCallScan, LongCallWithWriteChunk)
{
	/* A Position-Zero chunk carries the Call; the WRITE data has its own chunk */
	Bytes data = pattern(10000, 4);
	Compound cp(0xa1, 2, 3);
	cp.op_putfh(pattern(8));
	cp.op_write(0, data, true);
	cp.op_getattr();
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_read(&pcl, 0, cp.x.buf.size());
	pcl_add_read(&pcl, uint32_t(cp.items[0].position), data.size());
	ulb_call c;
	ASSERT_EQ(scan(cp.x.buf, &pcl, &c), ULB_SCAN_OK);
	EXPECT_EQ(c.nops_scanned, 3u);
	ASSERT_EQ(c.n_items, 1u);
	EXPECT_EQ(c.items[0].chunk, 1);
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_OK);
}

TEST(UlbCallScan, TwoWritesTwoChunks)
{
	Bytes d1 = pattern(3001, 1), d2 = pattern(5000, 2);
	Compound cp(0xa2, 1, 4);
	cp.op_putfh(pattern(8));
	cp.op_write(0, d1, true);
	cp.op_putfh(pattern(8));
	cp.op_write(0, d2, true);
	/* the second item's position counts the first item's bytes and pad */
	EXPECT_EQ(cp.items[1].position, cp.items[1].stream_offset + 3004);
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_read(&pcl, uint32_t(cp.items[0].position), d1.size());
	pcl_add_read(&pcl, uint32_t(cp.items[1].position), d2.size());
	ulb_call c;
	ASSERT_EQ(scan(cp.x.buf, &pcl, &c), ULB_SCAN_OK);
	ASSERT_EQ(c.n_items, 2u);
	EXPECT_EQ(c.items[0].chunk, 0);
	EXPECT_EQ(c.items[1].chunk, 1);
	EXPECT_EQ(c.items[1].position, cp.items[1].position);
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_OK);
	/* only the first sent by chunk, second inline */
	Compound cp2(0xa3, 1, 4);
	cp2.op_putfh(pattern(8));
	cp2.op_write(0, d1, true);
	cp2.op_putfh(pattern(8));
	cp2.op_write(0, d2, false);
	pcl_init(&pcl);
	pcl_add_read(&pcl, uint32_t(cp2.items[0].position), d1.size());
	ASSERT_EQ(scan(cp2.x.buf, &pcl, &c), ULB_SCAN_OK);
	EXPECT_EQ(c.items[1].chunk, -1);
	EXPECT_EQ(ulb_call_check_read_chunks(&c, &pcl), ULB_DDP_OK);
}

/* Every cut of @b into iovecs of @step bytes (the window never holds a
 * whole operation, so the general per-field path runs). */
static std::vector<iovec> in_steps(const Bytes &b, size_t step)
{
	std::vector<iovec> v;
	for (size_t i = 0; i < b.size(); i += step)
		v.push_back({const_cast<uint8_t *>(b.data()) + i, std::min(step, b.size() - i)});
	return v;
}

TEST(UlbCallScan, LinuxV41PrefixInPlaceMatchesFieldByField)
{
	/* SEQUENCE, PUTFH, then READ or WRITE (data inline or by Read chunk),
	 * and WRITE's trailing GETATTR: the Linux client's everyday COMPOUNDs,
	 * read in place from one iovec; the same Call in 4-byte iovecs is read
	 * field by field. Both must say the same, and what the encoder wrote. */
	Sessionid sid;
	for (int i = 0; i < 16; i++)
		sid.b[i] = uint8_t(0x30 + i);
	for (int shape = 0; shape < 5; shape++) {
		SCOPED_TRACE(shape);
		const bool write = shape >= 2, chunk = shape == 3 || shape == 4;
		Compound cp(0x61, shape == 1 ? 2 : 1, write ? 4 : 3, "");
		cp.op_sequence(sid, 77 + shape, 5);
		cp.op_putfh(pattern(shape == 4 ? 128 : 26)); /* the largest handle, and one padded */
		if (write) {
			cp.op_write(8192, pattern(4093, 2), chunk);
			cp.op_getattr();
		} else {
			cp.op_read(4096, 65536);
		}
		rr_pcl pcl;
		pcl_init(&pcl);
		if (chunk)
			pcl_add_read(&pcl, uint32_t(cp.items[0].position), 4093);
		ulb_call whole, steps;
		ASSERT_EQ(scan(cp.x.buf, &pcl, &whole), ULB_SCAN_OK);
		auto iov = in_steps(cp.x.buf, 4);
		ASSERT_EQ(ulb_call_scan(iov.data(), int(iov.size()), &pcl, &steps), ULB_SCAN_OK);
		EXPECT_TRUE(ulb_call_same(whole, steps));
		ASSERT_TRUE(whole.has_sequence);
		EXPECT_EQ(0, memcmp(whole.seq.sessionid, sid.b, 16));
		EXPECT_EQ(whole.seq.sequenceid, 77u + shape);
		EXPECT_EQ(whole.seq.slotid, 5u);
		EXPECT_EQ(whole.nops_scanned, whole.numops);
		if (write) {
			EXPECT_EQ(whole.n_read_ops, 0u);
			ASSERT_EQ(whole.n_items, 1u);
			EXPECT_EQ(whole.items[0].op_index, 2u);
			EXPECT_EQ(whole.items[0].kind, ULB_ITEM_WRITE_DATA);
			EXPECT_EQ(whole.items[0].length, 4093u);
			EXPECT_EQ(whole.items[0].position, cp.items[0].position);
			EXPECT_EQ(whole.items[0].chunk, chunk ? 0 : -1);
			EXPECT_EQ(ulb_call_check_read_chunks(&whole, &pcl), ULB_DDP_OK);
		} else {
			ASSERT_EQ(whole.n_read_ops, 1u);
			EXPECT_EQ(whole.read_ops[0].op_index, 2u);
			EXPECT_EQ(whole.read_ops[0].opcode, uint32_t(READ));
			EXPECT_EQ(whole.read_ops[0].count, 65536u);
			EXPECT_EQ(whole.n_items, 0u);
		}
	}
}

TEST(UlbCallScan, LinuxV41PrefixGetattrMatchesFieldByField)
{
	/* SEQUENCE, PUTFH, GETATTR (the Linux client's attribute refresh) with
	 * bitmaps of 0, 2, 3 and 64 words (the most accepted), 65 words (one
	 * too many) and a bitmap cut short: read in place from one iovec and
	 * field by field from 4-byte iovecs, the two say the same. */
	Sessionid sid = {};
	const uint32_t words[] = {0, 2, 3, 64, 65, 3};
	for (int k = 0; k < 6; k++) {
		SCOPED_TRACE(k);
		Compound cp(0x63, 1, 3, "");
		cp.op_sequence(sid, 9, 1);
		cp.op_putfh(pattern(24));
		cp.raw_op(GETATTR);
		cp.x.u32(words[k]);
		for (uint32_t w = 0; w < words[k]; w++)
			cp.x.u32(0x00100000u >> (w % 20));
		Bytes b = cp.x.buf;
		if (k == 5)
			b.resize(b.size() - 4); /* the last bitmap word missing */
		ulb_call whole, steps;
		enum ulb_scan_result r = scan(b, nullptr, &whole);
		auto iov = in_steps(b, 4);
		EXPECT_EQ(r, ulb_call_scan(iov.data(), int(iov.size()), nullptr, &steps));
		EXPECT_TRUE(ulb_call_same(whole, steps));
		if (k >= 4) {
			EXPECT_EQ(r, ULB_SCAN_GARBAGE);
			continue;
		}
		ASSERT_EQ(r, ULB_SCAN_OK);
		EXPECT_TRUE(whole.has_sequence);
		EXPECT_EQ(whole.seq.sequenceid, 9u);
		EXPECT_EQ(whole.nops_scanned, 3u);
		EXPECT_EQ(whole.n_items, 0u);
		EXPECT_EQ(whole.n_read_ops, 0u);
	}
}

TEST(UlbCallScan, LinuxV41PrefixRefusesWhatTheFieldsRefuse)
{
	/* A bad cachethis bool, an oversized handle, SEQUENCE under v4.0 (an
	 * illegal op there), and WRITE data running past the end: the in-place
	 * reading reaches the answer the field-by-field one does. */
	Sessionid sid = {};
	for (int bad = 0; bad < 4; bad++) {
		SCOPED_TRACE(bad);
		Compound cp(0x62, bad == 2 ? 0 : 1, 3, "");
		cp.op_sequence(sid, 1, 0);
		cp.op_putfh(pattern(bad == 1 ? 129 : 16));
		cp.op_write(0, pattern(64, 1));
		Bytes b = cp.x.buf;
		if (bad == 0)
			b[b.size() - 128] = 2; /* cachethis: 0x02000000 */
		if (bad == 3)
			b.resize(b.size() - 8);
		ulb_call whole, steps;
		enum ulb_scan_result r = scan(b, nullptr, &whole);
		auto iov = in_steps(b, 4);
		EXPECT_EQ(r, ulb_call_scan(iov.data(), int(iov.size()), nullptr, &steps));
		EXPECT_TRUE(ulb_call_same(whole, steps));
		if (bad == 2)
			EXPECT_TRUE(whole.stopped); /* OP_ILLEGAL: nothing after it runs */
		else
			EXPECT_EQ(r, ULB_SCAN_GARBAGE);
	}
}
