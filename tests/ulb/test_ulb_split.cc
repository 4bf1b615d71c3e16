// SPDX-License-Identifier: MIT
/* test_ulb_split.cc - the Call scan and the Reply walk read their fixed runs
 * in place when one iovec holds them and across iovecs otherwise: the same
 * answer for every cut, a refusal for every truncation, and the length
 * bounds at and past their limits (messages from the independent encoder). */
#include <gtest/gtest.h>

#include <cstring>

#include "support/nfs_xdr_builder.h"
#include "support/ulb_compare.h"
#include "ulb/ulb_call.h"
#include "ulb/ulb_nfs.h"
#include "ulb/ulb_reply.h"
#include "ulb_test_util.h"

using namespace nfsxdr;

namespace
{

constexpr size_t kUnreadTrailer = 4 + 16; /* the GSS checksum of io_calls() */

enum ulb_scan_result scan_iov(const std::vector<iovec> &iov, const rr_pcl *pcl, ulb_call *c)
{
	return ulb_call_scan(iov.data(), int(iov.size()), pcl, c);
}

/* Calls the kernel client sends for I/O, and their variants of header shape. */
std::vector<Bytes> io_calls()
{
	std::vector<Bytes> v;
	v.push_back(v3_read_call(1, 4096, 4096).x.buf);
	v.push_back(v3_write_call(2, pattern(4096)).x.buf);
	v.push_back(v3_write_call(3, pattern(5)).x.buf); /* data with pad */
	Xdr none;					  /* AUTH_NONE: a 40-byte header */
	rpc_call_header(none, 4, PROG_NFS, 3, 6, AUTH_NONE);
	none.opaque(pattern(8));
	none.u64(0);
	none.u32(512);
	v.push_back(none.buf);
	Xdr sys; /* AUTH_SYS with a long machine name */
	rpc_call_header_sys(sys, 5, PROG_NFS, 3, 6, 0, 0, std::string(200, 'm'));
	sys.opaque(pattern(64));
	sys.u64(0);
	sys.u32(1 << 20);
	v.push_back(sys.buf);
	/* RPCSEC_GSS integrity: seq_num before the arguments, the checksum after
	 * them is never read (kUnreadTrailer) */
	v.push_back(v3_read_call_krb5i(6, 77, 4096).x.buf);
	Sessionid sid;
	for (int i = 0; i < 16; i++)
		sid.b[i] = uint8_t(i + 1);
	Compound r(7, 1, 3);
	r.op_sequence(sid, 9, 3);
	r.op_putfh(pattern(28));
	r.op_read(0, 4096);
	v.push_back(r.x.buf);
	Compound w(8, 2, 4);
	w.op_sequence(sid, 10, 4);
	w.op_putfh(pattern(28));
	w.op_write(0, pattern(4096));
	w.op_getattr();
	v.push_back(w.x.buf);
	return v;
}

} // namespace

TEST(UlbSplit, CallsGiveOneAnswerAtEveryCut)
{
	for (const Bytes &b : io_calls()) {
		ulb_call whole, part;
		ASSERT_EQ(scan_iov(one(b), nullptr, &whole), ULB_SCAN_OK);
		/* two pieces at every offset up to the arguments, and a few past */
		size_t last = size_t(whole.args_offset) + 64 < b.size() ? whole.args_offset + 64
									: b.size();
		for (size_t k = 0; k <= last; k++) {
			ASSERT_EQ(scan_iov(cut(b, {k}), nullptr, &part), ULB_SCAN_OK) << k;
			EXPECT_TRUE(ulb_call_same(whole, part)) << "xid " << whole.xid << " cut " << k;
		}
		/* three pieces: the header run broken twice */
		for (size_t k = 1; k < 40; k += 3) {
			ASSERT_EQ(scan_iov(cut(b, {k, k + 5}), nullptr, &part), ULB_SCAN_OK);
			EXPECT_TRUE(ulb_call_same(whole, part)) << k;
		}
		ASSERT_EQ(scan_iov(bytewise(b), nullptr, &part), ULB_SCAN_OK);
		EXPECT_TRUE(ulb_call_same(whole, part));
	}
}

TEST(UlbSplit, TruncatedCallsAreRefusedAtEveryByte)
{
	for (const Bytes &b : io_calls()) {
		ulb_call whole;
		ASSERT_EQ(scan_iov(one(b), nullptr, &whole), ULB_SCAN_OK);
		/* RPCSEC_GSS integrity: the checksum after the arguments is not scanned */
		size_t end = whole.gss_service == ULB_GSS_SVC_INTEGRITY ? b.size() - kUnreadTrailer
									: b.size();
		for (size_t n = 0; n < end; n++) {
			Bytes t(b.begin(), b.begin() + n);
			ulb_call c1, c2;
			auto r1 = scan_iov(one(t), nullptr, &c1);
			/* byte by byte through the headers, halved beyond (keeps it quick) */
			auto r2 = scan_iov(n <= 256 ? bytewise(t) : cut(t, {n / 2}), nullptr, &c2);
			/* fewer than xid, mtype, rpcvers: not a Call; else undecodable */
			EXPECT_EQ(r1, n < 12 ? ULB_SCAN_NOT_CALL : ULB_SCAN_GARBAGE) << n;
			EXPECT_EQ(r1, r2) << n;
			EXPECT_TRUE(ulb_call_same(c1, c2)) << n;
		}
	}
}

TEST(UlbSplit, CallAuthLengthsAtAndPastTheLimit)
{
	/* RFC 5531 section 8.2: opaque_auth bodies are at most 400 bytes */
	for (uint32_t cred_len : {0u, 396u, 400u, 401u, 404u, 0x7fffffffu, 0xffffffffu}) {
		for (uint32_t verf_len : {0u, 400u, 401u, 0xfffffffdu}) {
			Xdr x;
			x.u32(0x99);
			x.u32(0); /* CALL */
			x.u32(2);
			x.u32(PROG_NFS);
			x.u32(3);
			x.u32(6); /* READ */
			x.u32(AUTH_SYS);
			x.u32(cred_len);
			if (cred_len <= 404)
				x.fixed_fill(cred_len, 0x41);
			x.u32(AUTH_NONE);
			x.u32(verf_len);
			if (verf_len <= 404)
				x.fixed_fill(verf_len, 0x42);
			x.opaque(pattern(32));
			x.u64(0);
			x.u32(4096);
			bool good = cred_len <= 400 && verf_len <= 400;
			ulb_call c1, c2;
			auto r1 = scan_iov(one(x.buf), nullptr, &c1);
			auto r2 = scan_iov(bytewise(x.buf), nullptr, &c2);
			EXPECT_EQ(r1, good ? ULB_SCAN_OK : ULB_SCAN_GARBAGE)
			    << cred_len << " " << verf_len;
			EXPECT_EQ(r1, r2);
			EXPECT_TRUE(ulb_call_same(c1, c2));
			if (good) {
				ASSERT_EQ(c1.n_read_ops, 1u);
				EXPECT_EQ(c1.read_ops[0].count, 4096u);
			}
		}
	}
}

TEST(UlbSplit, Nfs3FileHandleAndDataLengthBounds)
{
	for (uint32_t proc : {6u, 7u}) { /* READ, WRITE */
		for (uint32_t fh_len : {0u, 1u, 64u, 65u, 68u, 0xffffffffu}) {
			Xdr x;
			rpc_call_header(x, 0x9a, PROG_NFS, 3, proc);
			x.u32(fh_len);
			if (fh_len <= 68)
				x.fixed_fill(fh_len, 0x11);
			x.u64(0);
			x.u32(4096);
			if (proc == 7) {
				x.u32(2); /* FILE_SYNC */
				x.opaque(pattern(8));
			}
			ulb_call c1, c2;
			auto r1 = scan_iov(one(x.buf), nullptr, &c1);
			auto r2 = scan_iov(bytewise(x.buf), nullptr, &c2);
			EXPECT_EQ(r1, fh_len <= ULB_NFS3_FHSIZE ? ULB_SCAN_OK : ULB_SCAN_GARBAGE)
			    << proc << " " << fh_len;
			EXPECT_EQ(r1, r2);
			EXPECT_TRUE(ulb_call_same(c1, c2));
		}
	}
	/* WRITE data length beyond the stream: inline it must all be there */
	for (uint32_t claimed : {4096u, 4097u, 8192u, 0x7fffffffu, 0x80000000u, 0xfffffffcu}) {
		Xdr x;
		rpc_call_header(x, 0x9b, PROG_NFS, 3, 7);
		x.opaque(pattern(32));
		x.u64(0);
		x.u32(4096);
		x.u32(0);
		x.u32(claimed);
		x.fixed_fill(4096, 0x22);
		ulb_call c1, c2;
		auto r1 = scan_iov(one(x.buf), nullptr, &c1);
		auto r2 = scan_iov(cut(x.buf, {x.buf.size() - 4096}), nullptr, &c2);
		EXPECT_EQ(r1, claimed == 4096 ? ULB_SCAN_OK : ULB_SCAN_GARBAGE) << claimed;
		EXPECT_EQ(r1, r2);
		EXPECT_TRUE(ulb_call_same(c1, c2));
	}
}

namespace
{

struct Walked {
	enum ulb_reply_result r;
	rr_reply_plan plan;
	ulb_reply_info info;
};

Walked walk(const ulb_call &c, const std::vector<iovec> &iov, const rr_pcl *pcl)
{
	Walked w;
	w.r = ulb_reply_plan(&c, iov.data(), int(iov.size()), pcl, 0, &w.plan, &w.info);
	return w;
}

bool same(const Walked &a, const Walked &b)
{
	return a.r == b.r && rr_reply_plan_same(a.plan, b.plan) &&
	       a.info.reply_len == b.info.reply_len &&
	       a.info.n_read_results == b.info.n_read_results &&
	       a.info.bad_chunk == b.info.bad_chunk;
}

ulb_call v3_read_scanned()
{
	ulb_call c;
	EXPECT_EQ(ulb_call_scan(one(v3_read_call(1, 0, 4096).x.buf).data(), 1, nullptr, &c),
		  ULB_SCAN_OK);
	return c;
}

/* A v3 READ reply with the verifier @verf_flavor (AUTH_SYS: an 8-byte body). */
Bytes v3_read_reply_verf(uint32_t verf_flavor, uint32_t status, const Bytes &data)
{
	Xdr x;
	rpc_reply_accepted(x, 1, verf_flavor);
	x.u32(status);
	x.boolean(true);
	x.fixed_fill(ULB_NFS3_FATTR_LEN, 0x5a);
	if (status == 0) {
		x.u32(uint32_t(data.size()));
		x.boolean(true);
		x.opaque(data);
	}
	return x.buf;
}

} // namespace

TEST(UlbSplit, RepliesGiveOneAnswerAtEveryCut)
{
	ulb_call c = v3_read_scanned();
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 4096);
	struct Case {
		Bytes b;
		uint32_t data_len; /* the span the Write chunk gets; 0: none */
	};
	std::vector<Case> cases;
	for (uint32_t n : {4096u, 4093u}) { /* the second with pad */
		Legacy l = v3_read_reply(1, 0, pattern(n));
		EXPECT_EQ(l.items[0].length, n);
		cases.push_back({l.x.buf, n});
	}
	cases.push_back({v3_read_reply(1, 70, Bytes()).x.buf, 0}); /* NFS3ERR_IO: no data */
	cases.push_back({v3_read_reply_verf(AUTH_SYS, 0, pattern(4096)), 4096});
	cases.push_back({v3_read_reply_verf(AUTH_SYS, 0, Bytes()), 0});
	Xdr denied;
	rpc_reply_denied(denied, 1);
	cases.push_back({denied.buf, 0});
	Xdr unavail; /* PROC_UNAVAIL: shorter than any result */
	rpc_reply_accepted(unavail, 1, AUTH_NONE, 3);
	cases.push_back({unavail.buf, 0});

	for (const Case &cs : cases) {
		const Bytes &b = cs.b;
		Walked whole = walk(c, one(b), &pcl);
		EXPECT_EQ(whole.r, ULB_REPLY_OK) << b.size();
		ASSERT_EQ(whole.plan.nspans, cs.data_len ? 1u : 0u) << b.size();
		if (cs.data_len) {
			EXPECT_EQ(whole.plan.spans[0].length, cs.data_len);
			/* the data runs to the end of the Reply, pad included */
			EXPECT_EQ(whole.plan.spans[0].offset + ((cs.data_len + 3u) & ~3u), b.size());
		}
		for (size_t k = 0; k <= b.size() && k < 160; k++)
			EXPECT_TRUE(same(whole, walk(c, cut(b, {k}), &pcl))) << b.size() << " " << k;
		/* the payload by reference in its own iovec, as the plugin encodes it */
		if (cs.data_len) {
			size_t start = b.size() - ((cs.data_len + 3u) & ~3u);
			size_t end = start + cs.data_len;
			EXPECT_TRUE(same(whole, walk(c, cut(b, {start, end}), &pcl)));
		}
	}
}

TEST(UlbSplit, TruncatedRepliesAreGarbageAtEveryByte)
{
	ulb_call c = v3_read_scanned();
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 4096);
	for (uint32_t verf : {AUTH_NONE, AUTH_SYS}) {
		Bytes b = v3_read_reply_verf(verf, 0, pattern(300));
		for (size_t n = 0; n < b.size(); n++) {
			Bytes t(b.begin(), b.begin() + n);
			Walked w1 = walk(c, one(t), &pcl), w2 = walk(c, bytewise(t), &pcl);
			EXPECT_EQ(w1.r, ULB_REPLY_GARBAGE) << verf << " " << n;
			EXPECT_FALSE(w1.plan.deliverable);
			EXPECT_TRUE(same(w1, w2)) << n;
		}
	}
}

TEST(UlbSplit, ReplyVerifierAndAttributeWordsBounded)
{
	ulb_call c = v3_read_scanned();
	rr_pcl pcl;
	pcl_init(&pcl);
	pcl_add_write(&pcl, 4096);
	for (uint32_t verf_len : {0u, 400u, 401u, 0x80000000u}) {
		Xdr x;
		x.u32(1);
		x.u32(1); /* REPLY */
		x.u32(0); /* MSG_ACCEPTED */
		x.u32(RPCSEC_GSS);
		x.u32(verf_len);
		if (verf_len <= 404)
			x.fixed_fill(verf_len, 0x33);
		x.u32(0); /* SUCCESS */
		x.u32(0); /* NFS3_OK */
		x.boolean(false);
		x.u32(16);
		x.boolean(true);
		x.opaque(pattern(16));
		Walked w1 = walk(c, one(x.buf), &pcl), w2 = walk(c, bytewise(x.buf), &pcl);
		EXPECT_EQ(w1.r, verf_len <= 400 ? ULB_REPLY_OK : ULB_REPLY_GARBAGE) << verf_len;
		EXPECT_TRUE(same(w1, w2));
		if (verf_len <= 400) {
			ASSERT_EQ(w1.plan.nspans, 1u);
			EXPECT_EQ(w1.plan.spans[0].length, 16u);
			EXPECT_EQ(w1.plan.spans[0].offset, 7 * 4 + verf_len + 12 + 4);
		}
	}
	/* post_op_attr's bool must be 0 or 1; a reply_stat must be 0 or 1 */
	for (uint32_t bad : {2u, 0xffffffffu}) {
		Xdr a;
		rpc_reply_accepted(a, 1);
		a.u32(0);
		a.u32(bad);
		a.fixed_fill(ULB_NFS3_FATTR_LEN + 8, 0);
		a.opaque(pattern(4));
		EXPECT_EQ(walk(c, one(a.buf), &pcl).r, ULB_REPLY_GARBAGE) << bad;
		Xdr s;
		s.u32(1);
		s.u32(1);
		s.u32(bad); /* neither accepted nor denied */
		s.fixed_fill(64, 0);
		EXPECT_EQ(walk(c, one(s.buf), &pcl).r, ULB_REPLY_GARBAGE) << bad;
	}
	/* a data length past the stream's end */
	Bytes b = v3_read_reply(1, 0, pattern(64)).x.buf;
	b[b.size() - 64 - 1] = 65; /* the opaque's length word, low byte */
	EXPECT_EQ(walk(c, one(b), &pcl).r, ULB_REPLY_GARBAGE);
	EXPECT_EQ(walk(c, bytewise(b), &pcl).r, ULB_REPLY_GARBAGE);
}
