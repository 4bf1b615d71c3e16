// SPDX-License-Identifier: MIT
/*
 * nfs4_client.cc - NFSv4.1/4.2 procedures of the test client, from the XDR
 * of RFC 8881 (section 18 for the operations, 3.3 for the basic types).
 * One session, one slot (0), requests one at a time.
 */
#include "support/nfs_client.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace nfsc
{

using nfsxdr::Xdr;

enum : uint32_t {
	NFS4_FHSIZE = 128,
	NFS4_MAXNAME = 1024, /* component4 names: bounded generously */
	NF4REG = 1,
	NF4LNK = 5,
	OPEN4_SHARE_ACCESS_BOTH = 3,
	OPEN4_SHARE_ACCESS_WANT_NO_DELEG = 0x0400,
	OPEN4_CREATE = 1,
	UNCHECKED4 = 0,
	CLAIM_NULL = 0,
	CLAIM_PREVIOUS = 1,
	FILE_SYNC4 = 2,
	SP4_NONE = 0,
	NFS4ERR_SEQ_MISORDERED = 10063,
	NFS4ERR_RETRY_UNCACHED_REP = 10068,
	NFS4ERR_SEQ_FALSE_RETRY = 10076,
	CREATE_SESSION4_FLAG_CONN_BACK_CHAN = 0x2,
	/* RFC 8881 section 5.8 attribute numbers */
	FATTR4_TYPE = 1,
	FATTR4_SIZE = 4,
	FATTR4_FILEID = 20,
	FATTR4_MODE = 33,
};
constexpr uint32_t kMaxData = 64u << 20;

void stateid4(Xdr &x, const Stateid &s)
{
	x.u32(s.seqid);
	x.fixed(Bytes(s.other, s.other + 12));
}

void get_stateid4(Dec &d, Stateid *s)
{
	s->seqid = d.u32();
	d.fixed(12, s->other);
}

static void change_info4(Dec &d)
{
	d.boolean();
	d.u64();
	d.u64();
}

static void bitmap4(Dec &d, std::vector<uint32_t> *words)
{
	uint32_t n = d.u32();
	if (n > 8) {
		d.fail("bitmap4 of " + std::to_string(n) + " words");
		return;
	}
	for (uint32_t i = 0; i < n && d.ok(); i++) {
		uint32_t w = d.u32();
		if (words)
			words->push_back(w);
	}
}

void Nfs4::fattr_mode(Xdr &x, uint32_t mode)
{
	x.u32(2);
	x.u32(0);
	x.u32(1u << (FATTR4_MODE - 32));
	Xdr v;
	v.u32(mode);
	x.opaque(v.buf);
}

/* fattr4 holding a subset of TYPE, SIZE, FILEID, MODE (what we ask for). */
int Nfs4::decode_fattr(Dec &d, Attr *a)
{
	std::vector<uint32_t> bm;
	bitmap4(d, &bm);
	Bytes vals = d.opaque(1 << 16);
	if (!d.ok())
		return fail(d.why());
	TransportReply tr;
	tr.rpc = vals;
	Dec v(tr);
	Attr t;
	for (uint32_t bit = 0; bit < 32 * bm.size(); bit++) {
		if (!(bm[bit / 32] & (1u << (bit % 32))))
			continue;
		switch (bit) {
		case FATTR4_TYPE:
			t.type = v.u32();
			break;
		case FATTR4_SIZE:
			t.size = v.u64();
			break;
		case FATTR4_FILEID:
			t.fileid = v.u64();
			break;
		case FATTR4_MODE:
			t.mode = v.u32();
			break;
		default:
			return fail("GETATTR returned attribute " + std::to_string(bit) +
				    " that was not asked for");
		}
	}
	if (!v.end())
		return fail("fattr4: " + v.why());
	if (a)
		*a = t;
	return 0;
}

static void attr_request(Xdr &x)
{
	x.u32(2);
	x.u32(1u << FATTR4_TYPE | 1u << FATTR4_SIZE | 1u << FATTR4_FILEID);
	x.u32(1u << (FATTR4_MODE - 32));
}

void Nfs4::begin(Comp &c, bool with_seq)
{
	header(c.x, &c.xid, PROG_NFS, 4, 1);
	c.x.string(tag);
	c.x.u32(minor_);
	c.nops_at = c.x.buf.size();
	c.x.u32(0);
	if (with_seq) {
		op(c, nfsxdr::SEQUENCE);
		c.x.fixed(Bytes(sessionid_, sessionid_ + 16));
		c.x.u32(seqid_);
		c.x.u32(0); /* slot */
		c.x.u32(0); /* highest slot */
		c.x.boolean(cachethis);
	}
}

void Nfs4::op(Comp &c, uint32_t op)
{
	c.x.u32(op);
	c.ops.push_back(op);
	c.nops++;
}

int Nfs4::res(Dec &d, uint32_t op)
{
	uint32_t got = d.u32();
	uint32_t st = d.u32();
	if (!d.ok())
		return fail(d.why());
	if (got != op)
		return fail("result for op " + std::to_string(got) + ", expected " +
			    std::to_string(op));
	return int(st);
}

static void put32(Bytes &b, size_t at, uint32_t v)
{
	b[at] = uint8_t(v >> 24);
	b[at + 1] = uint8_t(v >> 16);
	b[at + 2] = uint8_t(v >> 8);
	b[at + 3] = uint8_t(v);
}

int Nfs4::send(Comp &c, std::unique_ptr<Dec> *d, bool with_seq)
{
	put32(c.x.buf, c.nops_at, c.nops);
	/* the seqid sits after op number and sessionid */
	size_t seq_at = c.nops_at + 4 + 4 + 16;
	for (int attempt = 0;; attempt++) {
		if (with_seq)
			put32(c.x.buf, seq_at, seqid_);
		int rc = rpc(c.x, c.o, d);
		if (rc)
			return rc; /* RDMA_ERROR: seqid unchanged, like Linux (notes 6) */
		Dec &r = **d;
		uint32_t status = r.u32();
		r.string(NFS4_MAXNAME); /* tag */
		uint32_t n = r.u32();
		if (getenv("NFSC_DEBUG"))
			fprintf(stderr, "nfsc: COMPOUND status %u, %u results\n", status, n);
		if (!r.ok())
			return fail(r.why());
		if (n > c.nops || (n == 0 && status == 0))
			return fail("COMPOUND returned " + std::to_string(n) + " results for " +
				    std::to_string(c.nops) + " ops");
		if (n == 0 && !with_seq)
			return int(status);
		if (!with_seq)
			return 0;
		/* ganesha 4.3 answers an uncached retry with no results at all */
		int st = n == 0 ? int(status) : res(r, nfsxdr::SEQUENCE);
		if (st < 0)
			return st;
		/* what the Linux client does after a lost reply: retry the same
		 * slot, then a new sequence (docs/linux-client-wire.md) */
		if (getenv("NFSC_DEBUG"))
			fprintf(stderr, "nfsc: SEQUENCE seqid %u attempt %d status %d\n", seqid_,
				attempt, st);
		if ((st == NFS4ERR_RETRY_UNCACHED_REP || st == NFS4ERR_SEQ_MISORDERED ||
		     st == NFS4ERR_SEQ_FALSE_RETRY) &&
		    attempt < 2) {
			seqid_++;
			seq_recoveries++;
			recovery_statuses.push_back(st);
			/* a new xid for the new request */
			uint32_t xid = t_.next_xid();
			put32(c.x.buf, 0, xid);
			c.xid = xid;
			continue;
		}
		if (st)
			return st;
		uint8_t sid[16];
		r.fixed(16, sid);
		uint32_t sq = r.u32();
		uint32_t slot = r.u32();
		r.u32(); /* highest slotid */
		r.u32(); /* target highest slotid */
		r.u32(); /* status flags */
		if (!r.ok())
			return fail(r.why());
		if (memcmp(sid, sessionid_, 16) || sq != seqid_ || slot != 0)
			return fail("SEQUENCE result does not echo session/seqid/slot");
		seqid_++;
		/* RFC 8881 section 2.10.6.1.3: a retry answered from a cached SEQUENCE
		 * result alone carries NFS4ERR_RETRY_UNCACHED_REP on the next op */
		if (status == NFS4ERR_RETRY_UNCACHED_REP && attempt < 2) {
			seq_recoveries++;
			recovery_statuses.push_back(int(status));
			uint32_t xid = t_.next_xid();
			put32(c.x.buf, 0, xid);
			c.xid = xid;
			continue;
		}
		if (n < 2 && c.nops > 1)
			return int(status);
		return 0;
	}
}

#define CHECK_DEC(d)                                                                               \
	do {                                                                                       \
		if (!(d).ok())                                                                     \
			return fail((d).why());                                                    \
	} while (0)
#define RES(d, op)                                                                                 \
	do {                                                                                       \
		int st_ = res(d, op);                                                              \
		if (st_)                                                                           \
			return st_;                                                                \
	} while (0)
#define END(d)                                                                                     \
	do {                                                                                       \
		if (!(d).end())                                                                    \
			return fail((d).why());                                                    \
		return 0;                                                                          \
	} while (0)

int Nfs4::null()
{
	Xdr x;
	uint32_t xid;
	header(x, &xid, PROG_NFS, 4, 0);
	std::unique_ptr<Dec> d;
	int rc = rpc(x, CallOpts(), &d);
	if (rc)
		return rc;
	END(*d);
}

int Nfs4::exchange_id()
{
	Comp c;
	begin(c, false);
	op(c, nfsxdr::EXCHANGE_ID);
	auto now = std::chrono::steady_clock::now().time_since_epoch().count();
	/* a client that reclaims after a server restart presents the same
	 * owner and verifier: the same client incarnation (RFC 8881 section
	 * 2.4, 8.4.2.1) */
	uint64_t v = boot_verifier ? boot_verifier : uint64_t(now);
	for (int i = 0; i < 8; i++)
		verf_[i] = uint8_t(v >> (8 * i));
	c.x.fixed(Bytes(verf_, verf_ + 8));
	std::string owner = !owner_id.empty() ? owner_id
					      : machine + "-" + std::to_string(uint64_t(now)) + "-" +
						    std::to_string(uintptr_t(this));
	c.x.string(owner);
	c.x.u32(0);	   /* flags */
	c.x.u32(SP4_NONE); /* state_protect4_a */
	c.x.u32(0);	   /* client_impl_id<1>: none */
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, false);
	if (rc)
		return rc;
	Dec &r = *d;
	RES(r, nfsxdr::EXCHANGE_ID);
	clientid_ = r.u64();
	eid_seq_ = r.u32();
	r.u32(); /* flags */
	if (r.u32() != SP4_NONE)
		return fail("EXCHANGE_ID: state protection other than SP4_NONE");
	r.u64();	/* so_minor_id */
	r.opaque(1024); /* so_major_id */
	r.opaque(1024); /* server_scope */
	uint32_t impl = r.u32();
	if (impl > 1)
		return fail("server_impl_id<1> with " + std::to_string(impl));
	if (impl) {
		r.string(1024);
		r.string(1024);
		r.u64();
		r.u32();
	}
	END(r);
}

static void channel_attrs(Xdr &x, uint32_t req, uint32_t resp, uint32_t cached, uint32_t ops,
			  uint32_t reqs)
{
	x.u32(0); /* headerpadsize */
	x.u32(req);
	x.u32(resp);
	x.u32(cached);
	x.u32(ops);
	x.u32(reqs);
	x.u32(0); /* ca_rdma_ird<1> */
}

static void get_channel_attrs(Dec &d)
{
	for (int i = 0; i < 6; i++)
		d.u32();
	uint32_t n = d.u32();
	if (n > 1)
		d.fail("ca_rdma_ird<1> with " + std::to_string(n));
	if (n)
		d.u32();
}

int Nfs4::create_session()
{
	Comp c;
	begin(c, false);
	op(c, nfsxdr::CREATE_SESSION);
	c.x.u64(clientid_);
	c.x.u32(eid_seq_);
	c.x.u32(back_channel ? uint32_t(CREATE_SESSION4_FLAG_CONN_BACK_CHAN) : 0u);
	channel_attrs(c.x, 4u << 20, 4u << 20, 8192, max_ops, 16);
	channel_attrs(c.x, 4096, 4096, 0, 2, back_chan_max_requests);
	c.x.u32(cb_program); /* cb_program */
	c.x.u32(1);	     /* csa_sec_parms<> */
	if (cb_sec == nfsxdr::AUTH_SYS) {
		c.x.u32(nfsxdr::AUTH_SYS); /* authsys_parms (RFC 5531 section 14) */
		c.x.u32(0);		   /* stamp */
		c.x.string(machine);
		c.x.u32(uid);
		c.x.u32(gid);
		c.x.u32(0); /* gids */
	} else {
		c.x.u32(nfsxdr::AUTH_NONE);
	}
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, false);
	if (rc)
		return rc;
	Dec &r = *d;
	RES(r, nfsxdr::CREATE_SESSION);
	r.fixed(16, sessionid_);
	uint32_t sq = r.u32();
	session_flags = r.u32();
	get_channel_attrs(r);
	get_channel_attrs(r);
	CHECK_DEC(r);
	if (sq != eid_seq_)
		return fail("CREATE_SESSION sequence not echoed");
	have_session_ = true;
	seqid_ = 1;
	END(r);
}

int Nfs4::reclaim_complete()
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::RECLAIM_COMPLETE);
	c.x.boolean(false); /* rca_one_fs */
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::RECLAIM_COMPLETE);
	END(*d);
}

int Nfs4::destroy_session()
{
	Comp c;
	begin(c, false);
	op(c, nfsxdr::DESTROY_SESSION);
	c.x.fixed(Bytes(sessionid_, sessionid_ + 16));
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, false);
	if (rc)
		return rc;
	RES(*d, nfsxdr::DESTROY_SESSION);
	have_session_ = false;
	END(*d);
}

int Nfs4::destroy_clientid()
{
	Comp c;
	begin(c, false);
	op(c, nfsxdr::DESTROY_CLIENTID);
	c.x.u64(clientid_);
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, false);
	if (rc)
		return rc;
	RES(*d, nfsxdr::DESTROY_CLIENTID);
	END(*d);
}

int Nfs4::mount()
{
	int rc = exchange_id();
	if (!rc)
		rc = create_session();
	if (!rc)
		rc = reclaim_complete();
	return rc;
}

int Nfs4::lookup_path(const std::string &path, Fh *out)
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::PUTROOTFH);
	size_t ncomp = 0;
	size_t a = 0;
	while (a < path.size()) {
		size_t b = path.find('/', a);
		if (b == std::string::npos)
			b = path.size();
		if (b > a) {
			op(c, nfsxdr::LOOKUP);
			c.x.string(path.substr(a, b - a));
			ncomp++;
		}
		a = b + 1;
	}
	op(c, nfsxdr::GETFH);
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::PUTROOTFH);
	for (size_t i = 0; i < ncomp; i++)
		RES(*d, nfsxdr::LOOKUP);
	RES(*d, nfsxdr::GETFH);
	out->b = d->opaque(NFS4_FHSIZE);
	END(*d);
}

int Nfs4::lookup(const Fh &dir, const std::string &name, Fh *out)
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::PUTFH);
	c.x.opaque(dir.b);
	op(c, nfsxdr::LOOKUP);
	c.x.string(name);
	op(c, nfsxdr::GETFH);
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::PUTFH);
	RES(*d, nfsxdr::LOOKUP);
	RES(*d, nfsxdr::GETFH);
	out->b = d->opaque(NFS4_FHSIZE);
	END(*d);
}

/* secinfo4<> (RFC 8881 section 18.29.2): flavor, and for RPCSEC_GSS (6)
 * an oid, a qop and a service */
static int decode_secinfo(Dec &d, std::vector<uint32_t> *flavors)
{
	uint32_t n = d.u32();
	flavors->clear();
	for (uint32_t i = 0; i < n && d.ok() && i < 64; i++) {
		uint32_t f = d.u32();
		flavors->push_back(f);
		if (f == 6) {
			d.opaque(64);
			d.u32();
			d.u32();
		}
	}
	return d.ok() ? 0 : E_RPC;
}

int Nfs4::secinfo(const Fh &dir, const std::string &name, std::vector<uint32_t> *flavors)
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::PUTFH);
	c.x.opaque(dir.b);
	op(c, nfsxdr::SECINFO);
	c.x.string(name);
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::PUTFH);
	RES(*d, nfsxdr::SECINFO);
	if (decode_secinfo(*d, flavors))
		return fail(d->why());
	END(*d);
}

int Nfs4::secinfo_no_name(const Fh &fh, uint32_t style, std::vector<uint32_t> *flavors)
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::PUTFH);
	c.x.opaque(fh.b);
	op(c, nfsxdr::SECINFO_NO_NAME);
	c.x.u32(style);
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::PUTFH);
	RES(*d, nfsxdr::SECINFO_NO_NAME);
	if (decode_secinfo(*d, flavors))
		return fail(d->why());
	END(*d);
}

int Nfs4::getattr(const Fh &fh, Attr *a)
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::PUTFH);
	c.x.opaque(fh.b);
	op(c, nfsxdr::GETATTR);
	attr_request(c.x);
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::PUTFH);
	RES(*d, nfsxdr::GETATTR);
	rc = decode_fattr(*d, a);
	if (rc)
		return rc;
	END(*d);
}

/* open_delegation4 (RFC 8881 section 18.16.2) */
static void open_delegation4(Dec &d, Deleg *dg = nullptr)
{
	uint32_t t = d.u32();
	if (dg)
		dg->type = t;
	auto ace = [&d]() {
		d.u32();
		d.u32();
		d.u32();
		d.string(1024);
	};
	switch (t) {
	case 0: /* OPEN_DELEGATE_NONE */
		break;
	case 1: { /* READ */
		Stateid s;
		get_stateid4(d, &s);
		if (dg)
			dg->sid = s;
		d.boolean();
		ace();
		break;
	}
	case 2: { /* WRITE */
		Stateid s;
		get_stateid4(d, &s);
		if (dg)
			dg->sid = s;
		d.boolean();
		uint32_t lim = d.u32();
		if (lim == 1)
			d.u64();
		else if (lim == 2)
			d.u64();
		else
			d.fail("nfs_space_limit4 " + std::to_string(lim));
		ace();
		break;
	}
	case 3: { /* NONE_EXT */
		uint32_t why = d.u32();
		if (dg)
			dg->why_none = why;
		if (why == 1 || why == 2)
			d.boolean();
		break;
	}
	default:
		d.fail("open_delegation_type4 " + std::to_string(t));
	}
}

void Nfs4::begin_fh(Comp &c, const Fh &fh, uint32_t o)
{
	begin(c, true);
	op(c, nfsxdr::PUTFH);
	c.x.opaque(fh.b);
	op(c, o);
}

void Nfs4::open_head(Comp &c, const Fh &fh, uint32_t access)
{
	begin_fh(c, fh, nfsxdr::OPEN);
	c.x.u32(0); /* seqid: ignored in 4.1 */
	c.x.u32(access);
	c.x.u32(0); /* deny none */
	c.x.u64(clientid_);
	c.x.string("owner-" + std::to_string(++owner_seq_));
}

/* OPEN4resok after its status: the open stateid, and the delegation into
 * @dg when asked for (RFC 8881 section 18.16.2) */
static void open4_result(Dec &r, Stateid *sid, Deleg *dg)
{
	Deleg none;

	get_stateid4(r, sid);
	change_info4(r);
	r.u32(); /* rflags */
	bitmap4(r, nullptr);
	open_delegation4(r, dg ? dg : &none);
}

int Nfs4::open_create(const Fh &dir, const std::string &name, Fh *out, Stateid *sid)
{
	Comp c;
	open_head(c, dir, OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_NO_DELEG);
	c.x.u32(OPEN4_CREATE);
	c.x.u32(UNCHECKED4);
	fattr_mode(c.x, 0644);
	c.x.u32(CLAIM_NULL);
	c.x.string(name);
	op(c, nfsxdr::GETFH);
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	Dec &r = *d;
	RES(r, nfsxdr::PUTFH);
	RES(r, nfsxdr::OPEN);
	open4_result(r, sid, nullptr);
	CHECK_DEC(r);
	RES(r, nfsxdr::GETFH);
	out->b = r.opaque(NFS4_FHSIZE);
	END(r);
}

int Nfs4::open(const Fh &dir, const std::string &name, uint32_t access, Fh *out, Stateid *sid,
	       Deleg *dg, uint32_t want)
{
	Comp c;
	open_head(c, dir, access | want);
	c.x.u32(0); /* OPEN4_NOCREATE */
	c.x.u32(CLAIM_NULL);
	c.x.string(name);
	op(c, nfsxdr::GETFH);
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	Dec &r = *d;
	RES(r, nfsxdr::PUTFH);
	RES(r, nfsxdr::OPEN);
	open4_result(r, sid, dg);
	CHECK_DEC(r);
	RES(r, nfsxdr::GETFH);
	out->b = r.opaque(NFS4_FHSIZE);
	END(r);
}

int Nfs4::open_reclaim(const Fh &fh, uint32_t access, Stateid *sid)
{
	Comp c;
	open_head(c, fh, access | OPEN4_SHARE_ACCESS_WANT_NO_DELEG);
	c.x.u32(0); /* OPEN4_NOCREATE */
	/* open_claim4 CLAIM_PREVIOUS: the file is the current filehandle, and
	 * the delegation held before the restart (none) - section 18.16.1 */
	c.x.u32(CLAIM_PREVIOUS);
	c.x.u32(0); /* OPEN_DELEGATE_NONE */
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	Dec &r = *d;
	RES(r, nfsxdr::PUTFH);
	RES(r, nfsxdr::OPEN);
	open4_result(r, sid, nullptr);
	END(r);
}

int Nfs4::delegreturn(const Fh &fh, const Stateid &deleg)
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::PUTFH);
	c.x.opaque(fh.b);
	op(c, nfsxdr::DELEGRETURN);
	stateid4(c.x, deleg);
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::PUTFH);
	RES(*d, nfsxdr::DELEGRETURN);
	END(*d);
}

int Nfs4::close(const Fh &fh, const Stateid &sid)
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::PUTFH);
	c.x.opaque(fh.b);
	op(c, nfsxdr::CLOSE);
	c.x.u32(0);
	stateid4(c.x, sid);
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::PUTFH);
	RES(*d, nfsxdr::CLOSE);
	Stateid s;
	get_stateid4(*d, &s);
	END(*d);
}

int Nfs4::read(const Fh &fh, const Stateid &sid, uint64_t off, uint32_t count, Bytes *data,
	       bool *eof)
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::PUTFH);
	c.x.opaque(fh.b);
	op(c, nfsxdr::READ);
	stateid4(c.x, sid);
	c.x.u64(off);
	c.x.u32(count);
	c.o.payloads = {count};
	c.o.reply_max = 256;
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::PUTFH);
	RES(*d, nfsxdr::READ);
	bool e = d->boolean();
	Bytes b = d->payload(std::min(count, kMaxData));
	CHECK_DEC(*d);
	*data = std::move(b);
	if (eof)
		*eof = e;
	END(*d);
}

int Nfs4::write(const Fh &fh, const Stateid &sid, uint64_t off, const Bytes &data, uint32_t *count)
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::PUTFH);
	c.x.opaque(fh.b);
	op(c, nfsxdr::WRITE);
	stateid4(c.x, sid);
	c.x.u64(off);
	c.x.u32(FILE_SYNC4);
	nfsxdr::Item it = c.x.item(data); /* DDP-eligible (RFC 8267 section 5.3) */
	c.o.items.push_back({size_t(it.position), it.length});
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::PUTFH);
	RES(*d, nfsxdr::WRITE);
	uint32_t n = d->u32();
	uint32_t committed = d->u32();
	d->skip(8);
	CHECK_DEC(*d);
	if (n > data.size())
		return fail("WRITE4resok count " + std::to_string(n) + " > " +
			    std::to_string(data.size()));
	if (committed != FILE_SYNC4)
		return fail("WRITE4resok committed " + std::to_string(committed) +
			    " for FILE_SYNC4");
	if (count)
		*count = n;
	else if (n != data.size())
		return fail("short WRITE: " + std::to_string(n));
	END(*d);
}

int Nfs4::read_multi(const Fh &fh, const Stateid &sid,
		     const std::vector<std::pair<uint64_t, uint32_t>> &reads,
		     std::vector<Bytes> *data, size_t chunked)
{
	return readdirs_then_reads(fh, 0, 0, fh, sid, reads, data, chunked);
}

int Nfs4::readdirs_then_reads(const Fh &dir, unsigned readdirs, uint32_t maxcount, const Fh &fh,
			      const Stateid &sid,
			      const std::vector<std::pair<uint64_t, uint32_t>> &reads,
			      std::vector<Bytes> *data, size_t chunked)
{
	Comp c;
	begin(c, true);
	if (readdirs) {
		op(c, nfsxdr::PUTFH);
		c.x.opaque(dir.b);
	}
	for (unsigned i = 0; i < readdirs; i++) {
		op(c, nfsxdr::READDIR);
		c.x.u64(0);
		c.x.fixed_fill(8, 0);
		c.x.u32(maxcount);
		c.x.u32(maxcount);
		c.x.u32(1);
		c.x.u32(1u << FATTR4_TYPE | 1u << FATTR4_FILEID);
	}
	op(c, nfsxdr::PUTFH);
	c.x.opaque(fh.b);
	c.o.reply_max = 256 + size_t(readdirs) * (maxcount + 32) + 16 * reads.size();
	for (const auto &r : reads) {
		op(c, nfsxdr::READ);
		stateid4(c.x, sid);
		c.x.u64(r.first);
		c.x.u32(r.second);
		if (c.o.payloads.size() < chunked)
			c.o.payloads.push_back(r.second);
		else
			c.o.reply_max += (size_t(r.second) + 3) & ~size_t(3);
	}
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	if (readdirs)
		RES(*d, nfsxdr::PUTFH);
	for (unsigned i = 0; i < readdirs; i++) {
		std::vector<DirEntry> ents;
		uint64_t last = 0;
		bool eof = false;
		RES(*d, nfsxdr::READDIR);
		rc = decode_dirlist(*d, &ents, &last, &eof);
		if (rc)
			return rc;
	}
	RES(*d, nfsxdr::PUTFH);
	data->clear();
	for (const auto &r : reads) {
		RES(*d, nfsxdr::READ);
		d->boolean(); /* eof */
		data->push_back(d->payload(std::min(r.second, kMaxData)));
		CHECK_DEC(*d);
	}
	END(*d);
}

int Nfs4::read_fhs(const std::vector<FhRead> &reads, const Stateid &sid,
		   std::vector<Bytes> *data)
{
	Comp c;
	begin(c, true);
	for (const FhRead &r : reads) {
		op(c, nfsxdr::PUTFH);
		c.x.opaque(r.fh.b);
		op(c, nfsxdr::READ);
		stateid4(c.x, sid);
		c.x.u64(r.off);
		c.x.u32(r.count);
		c.o.payloads.push_back(r.count);
	}
	c.o.reply_max = 256 + 32 * reads.size();
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	data->clear();
	for (const FhRead &r : reads) {
		RES(*d, nfsxdr::PUTFH);
		RES(*d, nfsxdr::READ);
		d->boolean(); /* eof */
		data->push_back(d->payload(std::min(r.count, kMaxData)));
		CHECK_DEC(*d);
	}
	END(*d);
}

int Nfs4::read_plus(const Fh &fh, const Stateid &sid, uint64_t off, uint32_t count,
		    bool offer_chunk, Bytes *data, bool *eof)
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::PUTFH);
	c.x.opaque(fh.b);
	op(c, nfsxdr::READ_PLUS);
	stateid4(c.x, sid);
	c.x.u64(off);
	c.x.u32(count);
	if (offer_chunk)
		c.o.payloads = {count};
	c.o.reply_max = size_t(count) + 512;
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::PUTFH);
	RES(*d, nfsxdr::READ_PLUS);
	*eof = d->boolean();
	uint32_t n = d->u32();
	if (n > 1024)
		return fail("READ_PLUS with " + std::to_string(n) + " contents");
	data->clear();
	for (uint32_t i = 0; i < n && d->ok(); i++) {
		uint32_t kind = d->u32();
		uint64_t at = d->u64();
		if (kind == 0) { /* NFS4_CONTENT_DATA: never from a Write chunk */
			Bytes b = d->opaque(count);
			CHECK_DEC(*d);
			if (at != off + data->size())
				return fail("READ_PLUS data at " + std::to_string(at) +
					    ", expected " + std::to_string(off + data->size()));
			data->insert(data->end(), b.begin(), b.end());
		} else if (kind == 1) { /* NFS4_CONTENT_HOLE */
			uint64_t len = d->u64();
			if (at != off + data->size() || len > count - data->size())
				return fail("READ_PLUS hole out of place");
			data->resize(data->size() + len, 0);
		} else {
			return fail("READ_PLUS content type " + std::to_string(kind));
		}
	}
	CHECK_DEC(*d);
	END(*d); /* fails if the server wrote into the offered Write chunk */
}

int Nfs4::readlink(const Fh &fh, std::string *target)
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::PUTFH);
	c.x.opaque(fh.b);
	op(c, nfsxdr::READLINK);
	c.o.payloads = {4096};
	c.o.reply_max = 256;
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::PUTFH);
	RES(*d, nfsxdr::READLINK);
	Bytes b = d->payload(1u << 20);
	target->assign(b.begin(), b.end());
	END(*d);
}

int Nfs4::symlink(const Fh &dir, const std::string &name, const std::string &target)
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::PUTFH);
	c.x.opaque(dir.b);
	op(c, nfsxdr::CREATE);
	c.x.u32(NF4LNK);
	/* linkdata is DDP-eligible (RFC 8267 section 5.3) */
	nfsxdr::Item it = c.x.item(Bytes(target.begin(), target.end()));
	c.o.items.push_back({size_t(it.position), it.length});
	c.x.string(name);
	c.x.u32(0); /* createattrs: empty bitmap, no values */
	c.x.u32(0);
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::PUTFH);
	RES(*d, nfsxdr::CREATE);
	change_info4(*d);
	bitmap4(*d, nullptr);
	END(*d);
}

int Nfs4::decode_dirlist(Dec &d, std::vector<DirEntry> *out, uint64_t *last, bool *eof)
{
	d.skip(8); /* cookieverf */
	while (d.ok() && d.boolean()) {
		DirEntry e;
		e.cookie = d.u64();
		e.name = d.string(NFS4_MAXNAME);
		int rc = decode_fattr(d, &e.attr);
		if (rc)
			return rc;
		e.has_attr = true;
		e.fileid = e.attr.fileid;
		*last = e.cookie;
		out->push_back(e);
	}
	*eof = d.boolean();
	CHECK_DEC(d);
	return 0;
}

int Nfs4::readdir_once(const Fh &dir, uint64_t cookie, uint32_t maxcount,
		       std::vector<DirEntry> *out, bool *eof)
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::PUTFH);
	c.x.opaque(dir.b);
	op(c, nfsxdr::READDIR);
	c.x.u64(cookie);
	c.x.fixed_fill(8, 0); /* cookieverf: MEM FSAL does not need it */
	c.x.u32(maxcount);    /* dircount */
	c.x.u32(maxcount);
	c.x.u32(1);
	c.x.u32(1u << FATTR4_TYPE | 1u << FATTR4_FILEID);
	c.o.reply_max = maxcount + 256;
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::PUTFH);
	RES(*d, nfsxdr::READDIR);
	uint64_t last = cookie;
	rc = decode_dirlist(*d, out, &last, eof);
	if (rc)
		return rc;
	END(*d);
}

int Nfs4::readdir(const Fh &dir, std::vector<DirEntry> *out, uint32_t maxcount)
{
	out->clear();
	uint64_t cookie = 0;
	for (int calls = 0; calls < 100000; calls++) {
		bool eof = false;
		size_t before = out->size();
		int rc = readdir_once(dir, cookie, maxcount, out, &eof);
		if (rc)
			return rc;
		if (eof)
			return 0;
		if (out->size() == before)
			return fail("READDIR made no progress without eof");
		cookie = out->back().cookie;
	}
	return fail("READDIR did not end");
}

int Nfs4::remove(const Fh &dir, const std::string &name)
{
	Comp c;
	begin(c, true);
	op(c, nfsxdr::PUTFH);
	c.x.opaque(dir.b);
	op(c, nfsxdr::REMOVE);
	c.x.string(name);
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	RES(*d, nfsxdr::PUTFH);
	RES(*d, nfsxdr::REMOVE);
	change_info4(*d);
	END(*d);
}

} // namespace nfsc
