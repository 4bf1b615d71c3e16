// SPDX-License-Identifier: MIT
/*
 * test_plugin_lock_denied.cc - the bytes of ganesha's NFSv4.1 LOCK and LOCKT
 * replies with NFS4ERR_DENIED (LOCK4denied, RFC 8881 section 18.10.2),
 * through a real ganesha + the rpcrdma plugin with FSAL VFS, over RDMA and
 * over TCP, against the reply buffer the Linux client sizes for them.
 *
 * A lock ganesha did not grant itself (here a POSIX lock a local process
 * holds on the exported file; in the cluster, a lock held through another
 * head that only Ceph knows) comes back from the FSAL as a conflict without
 * an owner, and ganesha names its holder "ganesha_unknown_owner" (21 bytes,
 * clientid 0). Linux 6.12's client receives a LOCK reply into a buffer of
 * 148 bytes, which fits a lock owner of at most 20 bytes (its own size): the
 * 152-byte reply is cut and the client's fcntl(F_SETLK) fails with EIO
 * instead of EAGAIN (ci/vm/README.md, the cluster section). A holder that is
 * another NFSv4 client of the same head is named by that client's own owner.
 */
#include "support/plugin_common.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <vector>

using namespace nfsc;

namespace rrplug
{
namespace
{

enum : uint32_t {
	NFS4ERR_DENIED = 10010,
	READ_LT = 1,
	WRITE_LT = 2,
	OP_SEQUENCE = 53,
	TAG_MAX = 1024,
};

/*
 * The Linux client's receive buffer for a LOCK or LOCKT reply, in bytes:
 * (RPC_REPHDRSIZE 4 + AUTH_NULL verifier slack 2 + NFS4_dec_lock_sz) words
 * (net/sunrpc/clnt.c, call_allocate). NFS4_dec_lock_sz is compound header 3
 * + SEQUENCE 11 + PUTFH 2 + LOCK header 2 + decode_lock_denied_maxsz, the
 * last being 2+2+1+2+1 + lock_owner_id_maxsz (2+1+2: a 20-byte owner) in
 * 6.12 (since "NFS: fix open_owner_id_maxsz and related fields", 6.15 and
 * 6.12.y stable) and 8 + 1 + XDR_QUADLEN(IDMAP_NAMESZ 128) in 6.1. The same
 * buffer serves NFSv4.0, whose reply has no SEQUENCE result.
 */
constexpr size_t kLinux612LockReply = 4 * (4 + 2 + 3 + 11 + 2 + 2 + 13);
constexpr size_t kLinux61LockReply = 4 * (4 + 2 + 3 + 11 + 2 + 2 + 41);
/* Linux's own lock owner: "lock id:", s_dev, id (encode_lockowner) */
constexpr size_t kLinuxOwnerLen = 20;

const std::string kUnknownOwner = "ganesha_unknown_owner";

size_t pad4(size_t n)
{
	return (n + 3) & ~size_t(3);
}

uint32_t be32(const Bytes &b, size_t at)
{
	return uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 |
	       b[at + 3];
}

/* A DENIED reply taken apart: the sizes of its parts, in bytes. */
struct DeniedReply {
	size_t total = 0, rpc_header = 0, compound_header = 0, sequence = 0, putfh = 0,
	       op_header = 0, denied = 0;
	std::string why; /* non-empty: not the expected shape */
};

/*
 * Walk the RPC reply of PUTFH + @op with SEQUENCE first: the RPC header
 * (RFC 5531 section 9), COMPOUND4res, SEQUENCE4resok (RFC 8881 section
 * 18.46.2), PUTFH, @op with NFS4ERR_DENIED and LOCK4denied to the end.
 */
DeniedReply take_apart(const TransportReply &r, uint32_t op)
{
	DeniedReply out;
	out.total = r.rpc.size();
	if (out.total < 4) {
		out.why = "short reply";
		return out;
	}
	Dec d(r);
	std::string why;
	if (!rpc_reply_ok(d, be32(r.rpc, 0), &why)) {
		out.why = why;
		return out;
	}
	size_t at = out.total - d.left();
	out.rpc_header = at;
	d.u32();	   /* status */
	d.opaque(TAG_MAX); /* tag */
	d.u32();	   /* result count */
	out.compound_header = out.total - d.left() - at;
	at = out.total - d.left();
	if (d.u32() != OP_SEQUENCE || d.u32() != 0) {
		out.why = "no SEQUENCE result first";
		return out;
	}
	d.skip(16 + 5 * 4); /* sessionid, seqid, slotid, highest, target, status flags */
	out.sequence = out.total - d.left() - at;
	at = out.total - d.left();
	if (d.u32() != nfsxdr::PUTFH || d.u32() != 0) {
		out.why = "PUTFH failed";
		return out;
	}
	out.putfh = out.total - d.left() - at;
	at = out.total - d.left();
	if (d.u32() != op || d.u32() != NFS4ERR_DENIED) {
		out.why = "no NFS4ERR_DENIED";
		return out;
	}
	out.op_header = out.total - d.left() - at;
	out.denied = d.left();
	if (!d.ok())
		out.why = d.why();
	return out;
}

/* the last @n bytes of @r in hex, a space every 4 */
std::string tail_hex(const Bytes &r, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	std::string h;
	for (size_t i = r.size() - std::min(n, r.size()); i < r.size(); i++) {
		h += digits[r[i] >> 4];
		h += digits[r[i] & 15];
		if (i % 4 == 3 && i + 1 < r.size())
			h += ' ';
	}
	return h;
}

std::string describe(const DeniedReply &p)
{
	return "reply " + std::to_string(p.total) + " bytes: RPC header " +
	       std::to_string(p.rpc_header) + ", COMPOUND header " +
	       std::to_string(p.compound_header) + ", SEQUENCE " + std::to_string(p.sequence) +
	       ", PUTFH " + std::to_string(p.putfh) + ", op header " + std::to_string(p.op_header) +
	       ", LOCK4denied " + std::to_string(p.denied);
}

class LockDenied : public PluginTest
{
      protected:
	static void SetUpTestSuite()
	{
		/* ganesha 5.9 and 6.5 refuse a VFS export on tmpfs (/tmp in the
		 * release roots): RR_TEST_VFS_BASE, else the working directory
		 * (the build tree) */
		const char *base = getenv("RR_TEST_VFS_BASE");
		std::string t =
		    std::string(base ? base : std::filesystem::current_path().string()) +
		    "/rrlock.XXXXXX";
		std::vector<char> b(t.begin(), t.end());
		b.push_back('\0');
		dir = mkdtemp(b.data()) ? b.data() : "";
		if (!dir.empty())
			chmod(dir.c_str(), 0777);
		options = GaneshaOptions();
		options.vfs_dir = dir;
		PluginTest::SetUpTestSuite();
	}
	static void TearDownTestSuite()
	{
		PluginTest::TearDownTestSuite();
		if (!dir.empty())
			std::filesystem::remove_all(dir);
		dir.clear();
	}
	void SetUp() override
	{
		ASSERT_FALSE(dir.empty()) << "no directory for the VFS export";
		PluginTest::SetUp();
		if (IsSkipped() || HasFatalFailure())
			return;
		rt = rdma();
		ASSERT_TRUE(rt);
		tt = tcp_nfs();
		ASSERT_TRUE(tt);
		a.reset(new Nfs4(*rt));
		b.reset(new Nfs4(*tt));
		for (Nfs4 *c : {a.get(), b.get()}) {
			c->tag = ""; /* as Linux sends it: the reply echoes the tag */
			NFS_OK(*c, c->mount());
		}
		NFS_OK(*a, a->lookup_path("/mem", &root));
		name = unique("locked");
		NFS_OK(*a, a->open_create(root, name, &fh, &a_open));
		NFS_OK(*b, b->open(root, name, 3, &fh_b, &b_open));
	}
	void TearDown() override
	{
		if (holder_fd >= 0)
			close(holder_fd);
		for (Nfs4 *c : {a.get(), b.get()})
			if (c)
				c->destroy_session();
		PluginTest::TearDown();
	}
	/* a POSIX write lock on all of the file, held by this process */
	void hold_locally()
	{
		holder_fd = open((dir + "/" + name).c_str(), O_RDWR);
		ASSERT_GE(holder_fd, 0) << dir << "/" << name << ": " << strerror(errno);
		struct flock fl = {};
		fl.l_type = F_WRLCK;
		fl.l_whence = SEEK_SET;
		ASSERT_EQ(fcntl(holder_fd, F_SETLK, &fl), 0) << strerror(errno);
	}
	/* LOCK by @c, which must be refused; its LOCK4denied in @l */
	void refused_lock(Nfs4 &c, const Fh &f, const Stateid &open, LockRange *l)
	{
		Stateid ls;
		ASSERT_EQ(c.lock(f, open, WRITE_LT, 0, ~uint64_t(0), false, &ls, l), NFS4ERR_DENIED)
		    << c.err();
	}

	static std::string dir;
	std::unique_ptr<RdmaTransport> rt;
	std::unique_ptr<TcpTransport> tt;
	std::unique_ptr<Nfs4> a, b;
	Fh root, fh, fh_b;
	Stateid a_open, b_open;
	std::string name;
	int holder_fd = -1;
};
std::string LockDenied::dir;

/*
 * A holder ganesha does not know: "ganesha_unknown_owner" with clientid 0,
 * over RDMA and over TCP alike; the LOCK reply is 4 bytes
 * longer than Linux 6.12's buffer for it, and fits 6.1's, and 6.12's too
 * without the SEQUENCE result (NFSv4.0).
 */
TEST_F(LockDenied, UnknownHolderOverflowsLinux612LockReply)
{
	hold_locally();
	for (Nfs4 *c : {a.get(), b.get()}) {
		SCOPED_TRACE(c->transport().name());
		const Fh &f = c == a.get() ? fh : fh_b;
		LockRange l;
		refused_lock(*c, f, c == a.get() ? a_open : b_open, &l);
		EXPECT_EQ(std::string(l.owner.begin(), l.owner.end()), kUnknownOwner);
		EXPECT_EQ(l.owner_clientid, 0u);
		EXPECT_EQ(l.type, WRITE_LT);
		EXPECT_EQ(l.off, 0u);
		DeniedReply p = take_apart(c->last(), nfsxdr::LOCK);
		ASSERT_EQ(p.why, "") << describe(p);
		/* offset, length, locktype, clientid, owner<> */
		EXPECT_EQ(p.denied, 8 + 8 + 4 + 8 + 4 + pad4(kUnknownOwner.size())) << describe(p);
		/* Linux's budget for the parts before LOCK4denied is exact */
		EXPECT_EQ(p.rpc_header, 24u) << describe(p);
		EXPECT_EQ(p.compound_header, 12u) << describe(p);
		EXPECT_EQ(p.sequence, 44u) << describe(p);
		EXPECT_EQ(p.total, 152u) << describe(p);
		EXPECT_GT(p.total, kLinux612LockReply) << describe(p);
		EXPECT_LE(p.total, kLinux61LockReply) << describe(p);
		EXPECT_LE(p.total - p.sequence, kLinux612LockReply) << "NFSv4.0: " << describe(p);
		const Bytes &r = c->last().rpc;
		EXPECT_EQ(Bytes(r.end() - 3, r.end()), Bytes(3, 0)) << "the owner's XDR pad";
		RecordProperty(c->transport().name() + "_lock", describe(p));
		RecordProperty(c->transport().name() + "_denied", tail_hex(r, p.denied));
	}
	/* the holder lets go: granted */
	close(holder_fd);
	holder_fd = -1;
	Stateid ls;
	NFS_OK(*a, a->lock(fh, a_open, WRITE_LT, 0, ~uint64_t(0), false, &ls));
	NFS_OK(*a, a->locku(fh, &ls, WRITE_LT, 0, ~uint64_t(0)));
}

/*
 * A holder that is another NFSv4.1 client of the same ganesha: named by its
 * own lock owner and clientid. With Linux's 20-byte owner the reply would be
 * exactly Linux 6.12's buffer: no byte to spare.
 */
TEST_F(LockDenied, KnownHolderIsNamedByItsOwner)
{
	Stateid held;
	NFS_OK(*a, a->lock(fh, a_open, WRITE_LT, 0, ~uint64_t(0), false, &held));
	LockRange l;
	refused_lock(*b, fh_b, b_open, &l);
	std::string owner(l.owner.begin(), l.owner.end());
	EXPECT_EQ(owner.rfind("lock-owner-", 0), 0u) << owner;
	EXPECT_EQ(l.owner_clientid, a->clientid());
	DeniedReply p = take_apart(b->last(), nfsxdr::LOCK);
	ASSERT_EQ(p.why, "") << describe(p);
	RecordProperty("denied", tail_hex(b->last().rpc, p.denied));
	EXPECT_EQ(p.total - pad4(owner.size()) + kLinuxOwnerLen, kLinux612LockReply) << describe(p);

	/* LOCKT (F_GETLK) gets the same LOCK4denied, in a reply of the same size */
	LockRange lt;
	EXPECT_EQ(b->lockt(fh_b, WRITE_LT, 0, 1, &lt), NFS4ERR_DENIED) << b->err();
	EXPECT_EQ(std::string(lt.owner.begin(), lt.owner.end()), owner);
	DeniedReply q = take_apart(b->last(), nfsxdr::LOCKT);
	ASSERT_EQ(q.why, "") << describe(q);
	EXPECT_EQ(q.total, p.total) << describe(q);
	NFS_OK(*a, a->locku(fh, &held, WRITE_LT, 0, ~uint64_t(0)));
}

} // namespace
} // namespace rrplug
