// SPDX-License-Identifier: MIT
/*
 * nfs_xdr_builder.cc - independent XDR encoder for ULB test vectors.
 * Each helper is named after the XDR type it encodes (RFC 7530 section 2,
 * RFC 8881 section 3, RFC 7862 section 4/15, RFC 8276 section 8).
 */
#include "support/nfs4_xdr_shapes.h"

#include <cstring>

namespace nfsxdr
{

void Xdr::u32(uint32_t v)
{
	buf.push_back(uint8_t(v >> 24));
	buf.push_back(uint8_t(v >> 16));
	buf.push_back(uint8_t(v >> 8));
	buf.push_back(uint8_t(v));
}

void Xdr::u64(uint64_t v)
{
	u32(uint32_t(v >> 32));
	u32(uint32_t(v));
}

void Xdr::fixed(const Bytes &b)
{
	buf.insert(buf.end(), b.begin(), b.end());
	while (buf.size() % 4)
		buf.push_back(0);
}

void Xdr::fixed_fill(size_t n, uint8_t fill)
{
	fixed(Bytes(n, fill));
}

void Xdr::opaque(const Bytes &b)
{
	u32(uint32_t(b.size()));
	fixed(b);
}

void Xdr::string(const std::string &s)
{
	opaque(Bytes(s.begin(), s.end()));
}

Item Xdr::item(const Bytes &b, bool remove)
{
	Item it;

	u32(uint32_t(b.size()));
	it.position = xdr_pos();
	it.stream_offset = pos();
	it.length = uint32_t(b.size());
	it.removed = remove;
	if (remove)
		removed_bytes += (b.size() + 3) & ~size_t(3);
	else
		fixed(b);
	return it;
}

Bytes pattern(size_t n, uint8_t seed)
{
	Bytes b(n);

	for (size_t i = 0; i < n; i++)
		b[i] = uint8_t(i * 7 + seed);
	return b;
}

/* opaque_auth (RFC 5531 section 8.2) */
static void opaque_auth(Xdr &x, uint32_t flavor)
{
	x.u32(flavor);
	if (flavor == AUTH_SYS) {
		/* authsys_parms: stamp, machinename, uid, gid, gids<16> */
		Xdr body;
		body.u32(0x1234);
		body.string("client.example");
		body.u32(1000);
		body.u32(1000);
		body.u32(2);
		body.u32(10);
		body.u32(20);
		x.opaque(body.buf);
	} else {
		x.u32(0);
	}
}

void rpc_call_header(Xdr &x, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
		     uint32_t cred_flavor)
{
	x.u32(xid);
	x.u32(0); /* CALL */
	x.u32(2); /* rpcvers */
	x.u32(prog);
	x.u32(vers);
	x.u32(proc);
	opaque_auth(x, cred_flavor);
	opaque_auth(x, AUTH_NONE); /* verf */
}

void rpc_call_header_sys(Xdr &x, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
			 uint32_t uid, uint32_t gid, const std::string &machine)
{
	x.u32(xid);
	x.u32(0); /* CALL */
	x.u32(2); /* rpcvers */
	x.u32(prog);
	x.u32(vers);
	x.u32(proc);
	/* authsys_parms: stamp, machinename<255>, uid, gid, gids<16> */
	Xdr body;
	body.u32(0x5eed);
	body.string(machine);
	body.u32(uid);
	body.u32(gid);
	body.u32(0);
	x.u32(AUTH_SYS);
	x.opaque(body.buf);
	x.u32(AUTH_NONE); /* verf */
	x.u32(0);
}

void rpc_call_header_gss(Xdr &x, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
			 uint32_t gss_proc, uint32_t service)
{
	x.u32(xid);
	x.u32(0);
	x.u32(2);
	x.u32(prog);
	x.u32(vers);
	x.u32(proc);
	/* rpc_gss_cred_vers_1_t (RFC 2203 section 5) */
	Xdr cred;
	cred.u32(1); /* RPCSEC_GSS_VERS_1 */
	cred.u32(gss_proc);
	cred.u32(77); /* seq_num */
	cred.u32(service);
	cred.opaque(pattern(12, 3)); /* handle */
	x.u32(RPCSEC_GSS);
	x.opaque(cred.buf);
	x.u32(RPCSEC_GSS); /* verf: a MIC */
	x.opaque(pattern(20, 9));
}

void rpc_reply_accepted(Xdr &x, uint32_t xid, uint32_t verf_flavor, uint32_t accept_stat)
{
	x.u32(xid);
	x.u32(1); /* REPLY */
	x.u32(0); /* MSG_ACCEPTED */
	if (verf_flavor == AUTH_SYS) {
		/* a server may answer AUTH_SYS with a short-hand verifier body */
		x.u32(AUTH_SYS);
		x.opaque(pattern(8, 1));
	} else {
		x.u32(verf_flavor);
		x.u32(0);
	}
	x.u32(accept_stat);
	if (accept_stat == 2) { /* PROG_MISMATCH: low, high */
		x.u32(2);
		x.u32(4);
	}
}

void rpc_reply_denied(Xdr &x, uint32_t xid)
{
	x.u32(xid);
	x.u32(1);
	x.u32(1); /* MSG_DENIED */
	x.u32(1); /* AUTH_ERROR */
	x.u32(1); /* AUTH_BADCRED */
}

Compound::Compound(uint32_t xid, uint32_t minor, uint32_t numops, const std::string &tag,
		   uint32_t cred)
{
	rpc_call_header(x, xid, PROG_NFS, 4, 1, cred);
	x.string(tag);
	x.u32(minor);
	x.u32(numops);
}

void Compound::op_putfh(const Bytes &fh)
{
	x.u32(PUTFH);
	x.opaque(fh);
}

void Compound::op_lookup(const std::string &name)
{
	x.u32(LOOKUP);
	component4(x, name);
}

void Compound::op_read(uint64_t offset, uint32_t count)
{
	x.u32(READ);
	stateid4(x);
	x.u64(offset);
	x.u32(count);
}

void Compound::op_read_plus(uint64_t offset, uint32_t count)
{
	x.u32(READ_PLUS);
	stateid4(x);
	x.u64(offset);
	x.u32(count);
}

void Compound::op_readlink()
{
	x.u32(READLINK);
}

void Compound::op_write(uint64_t offset, const Bytes &data, bool chunk)
{
	x.u32(WRITE);
	stateid4(x);
	x.u64(offset);
	x.u32(2); /* FILE_SYNC4 */
	items.push_back(x.item(data, chunk));
}

void Compound::op_create_symlink(const std::string &name, const Bytes &linkdata, bool chunk)
{
	x.u32(CREATE);
	x.u32(5); /* NF4LNK */
	items.push_back(x.item(linkdata, chunk));
	component4(x, name);
	fattr4(x);
}

void Compound::op_sequence(const Sessionid &sid, uint32_t seqid, uint32_t slot)
{
	x.u32(SEQUENCE);
	sessionid4(x, sid);
	x.u32(seqid);
	x.u32(slot);
	x.u32(slot + 3); /* highest_slotid */
	x.boolean(true); /* cachethis */
}

void Compound::op_getattr()
{
	x.u32(GETATTR);
	bitmap4(x, 3);
}

/* ---- results ---- */

CompoundRes::CompoundRes(uint32_t xid, uint32_t status, uint32_t numres, uint32_t verf)
{
	rpc_reply_accepted(x, xid, verf, 0);
	x.u32(status);
	x.string("ulb-test");
	x.u32(numres);
}

void CompoundRes::res_status(uint32_t op, uint32_t status)
{
	x.u32(op);
	x.u32(status);
}

void CompoundRes::res_read(const Bytes &data, bool eof)
{
	x.u32(READ);
	x.u32(0);
	x.boolean(eof);
	items.push_back(x.item(data));
}

void CompoundRes::res_readlink(const Bytes &link)
{
	x.u32(READLINK);
	x.u32(0);
	items.push_back(x.item(link));
}

void CompoundRes::res_read_plus(bool eof, const std::vector<RpContent> &contents)
{
	x.u32(READ_PLUS);
	x.u32(0);
	x.boolean(eof);
	x.u32(uint32_t(contents.size()));
	for (const auto &c : contents) {
		if (c.data) {
			x.u32(0); /* NFS4_CONTENT_DATA: data4 */
			x.u64(c.offset);
			items.push_back(x.item(c.bytes));
		} else {
			x.u32(1); /* NFS4_CONTENT_HOLE: data_info4 */
			x.u64(c.offset);
			x.u64(c.hole_len);
		}
	}
}

void CompoundRes::res_sequence(const Sessionid &sid, uint32_t seqid, uint32_t slot)
{
	x.u32(SEQUENCE);
	x.u32(0);
	sessionid4(x, sid);
	x.u32(seqid);
	x.u32(slot);
	x.u32(63);
	x.u32(63);
	x.u32(0);
}

void CompoundRes::res_getattr()
{
	x.u32(GETATTR);
	x.u32(0);
	fattr4(x);
}

/* ---- NFSv2 / v3 (RFC 1094, RFC 1813) ---- */

static void nfs_fh3(Xdr &x)
{
	x.opaque(pattern(32, 0x44));
}

static void fattr3(Xdr &x)
{
	x.u32(1); /* type NF3REG */
	x.u32(0644);
	x.u32(1);
	x.u32(0);
	x.u32(0);
	x.u64(4096); /* size */
	x.u64(4096); /* used */
	x.u32(0);    /* specdata3 */
	x.u32(0);
	x.u64(1);		      /* fsid */
	x.u64(2);		      /* fileid */
	for (int i = 0; i < 3; i++) { /* atime, mtime, ctime: nfstime3 */
		x.u32(1700000000);
		x.u32(0);
	}
}

static void post_op_attr(Xdr &x, bool present)
{
	x.boolean(present);
	if (present)
		fattr3(x);
}

Legacy v3_write_call(uint32_t xid, const Bytes &data, bool chunk)
{
	Legacy l;

	rpc_call_header(l.x, xid, PROG_NFS, 3, 7);
	nfs_fh3(l.x);
	l.x.u64(8192);			/* offset */
	l.x.u32(uint32_t(data.size())); /* count */
	l.x.u32(0);			/* UNSTABLE */
	l.items.push_back(l.x.item(data, chunk));
	return l;
}

Legacy v3_symlink_call(uint32_t xid, const std::string &name, const std::string &path, bool chunk)
{
	Legacy l;

	rpc_call_header(l.x, xid, PROG_NFS, 3, 10);
	nfs_fh3(l.x);	  /* where.dir */
	l.x.string(name); /* where.name */
	/* sattr3: mode set, uid unset, gid set, size unset, atime server, mtime client */
	l.x.boolean(true);
	l.x.u32(0777);
	l.x.boolean(false);
	l.x.boolean(true);
	l.x.u32(100);
	l.x.boolean(false);
	l.x.u32(1); /* SET_TO_SERVER_TIME */
	l.x.u32(2); /* SET_TO_CLIENT_TIME */
	l.x.u32(1700000000);
	l.x.u32(1);
	l.items.push_back(l.x.item(Bytes(path.begin(), path.end()), chunk));
	return l;
}

Legacy v3_read_call(uint32_t xid, uint64_t offset, uint32_t count)
{
	Legacy l;

	rpc_call_header(l.x, xid, PROG_NFS, 3, 6);
	nfs_fh3(l.x);
	l.x.u64(offset);
	l.x.u32(count);
	return l;
}

Legacy v3_read_call_krb5i(uint32_t xid, uint32_t seq_num, uint32_t count)
{
	Legacy l;

	/* RFC 2203 section 5.3.2.2: rpc_gss_integ_data = databody_integ<>
	 * (seq_num, READ3args), checksum<> */
	rpc_call_header_gss(l.x, xid, PROG_NFS, 3, 6, 0, 2);
	l.x.u32(4 + 4 + 32 + 8 + 4);
	l.x.u32(seq_num);
	nfs_fh3(l.x);
	l.x.u64(0);
	l.x.u32(count);
	l.x.opaque(pattern(16)); /* the checksum (a MIC) */
	return l;
}

Legacy v3_readlink_call(uint32_t xid)
{
	Legacy l;

	rpc_call_header(l.x, xid, PROG_NFS, 3, 5);
	nfs_fh3(l.x);
	return l;
}

Legacy v3_read_reply(uint32_t xid, uint32_t status, const Bytes &data)
{
	Legacy l;

	rpc_reply_accepted(l.x, xid);
	l.x.u32(status);
	post_op_attr(l.x, true);
	if (status == 0) {
		l.x.u32(uint32_t(data.size())); /* count */
		l.x.boolean(true);		/* eof */
		l.items.push_back(l.x.item(data));
	}
	return l;
}

Legacy v3_readlink_reply(uint32_t xid, uint32_t status, const std::string &path)
{
	Legacy l;

	rpc_reply_accepted(l.x, xid);
	l.x.u32(status);
	post_op_attr(l.x, status == 0);
	if (status == 0)
		l.items.push_back(l.x.item(Bytes(path.begin(), path.end())));
	return l;
}

Legacy v2_write_call(uint32_t xid, const Bytes &data, bool chunk)
{
	Legacy l;

	rpc_call_header(l.x, xid, PROG_NFS, 2, 8);
	l.x.fixed_fill(32, 0x22); /* fhandle */
	l.x.u32(0);		  /* beginoffset */
	l.x.u32(4096);		  /* offset */
	l.x.u32(0);		  /* totalcount */
	l.items.push_back(l.x.item(data, chunk));
	return l;
}

Legacy v2_symlink_call(uint32_t xid, const std::string &name, const std::string &path, bool chunk)
{
	Legacy l;

	rpc_call_header(l.x, xid, PROG_NFS, 2, 13);
	l.x.fixed_fill(32, 0x22);
	l.x.string(name);
	l.items.push_back(l.x.item(Bytes(path.begin(), path.end()), chunk));
	for (int i = 0; i < 8; i++) /* sattr: mode uid gid size atime mtime */
		l.x.u32(0xffffffffu);
	return l;
}

Legacy v2_read_reply(uint32_t xid, uint32_t status, const Bytes &data)
{
	Legacy l;

	rpc_reply_accepted(l.x, xid);
	l.x.u32(status);
	if (status == 0) {
		for (int i = 0; i < 17; i++) /* fattr */
			l.x.u32(uint32_t(i));
		l.items.push_back(l.x.item(data));
	}
	return l;
}

Legacy simple_call(uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc, size_t argbytes)
{
	Legacy l;

	rpc_call_header(l.x, xid, prog, vers, proc);
	l.x.fixed(pattern(argbytes, 0x61));
	return l;
}

Bytes cb_compound_call(uint32_t xid, const Sessionid &sid, uint32_t seqid, uint32_t slot)
{
	Xdr x;

	rpc_call_header(x, xid, 0x40000000, 1, 1, AUTH_NONE);
	x.string("cb");
	x.u32(1);  /* minorversion */
	x.u32(0);  /* callback_ident */
	x.u32(2);  /* numops */
	x.u32(11); /* OP_CB_SEQUENCE */
	sessionid4(x, sid);
	x.u32(seqid);
	x.u32(slot);
	x.u32(slot);	  /* highest_slotid */
	x.boolean(false); /* cachethis */
	x.u32(0);	  /* referring_call_lists<> */
	x.u32(4);	  /* OP_CB_RECALL */
	stateid4(x);
	x.boolean(false);
	nfs_fh4(x);
	return x.buf;
}

std::vector<iovec> cut(const Bytes &b, std::vector<size_t> cuts)
{
	std::vector<iovec> v;
	size_t start = 0;

	cuts.push_back(b.size());
	for (size_t c : cuts) {
		if (c < start || c > b.size())
			continue;
		iovec io;
		io.iov_base = const_cast<uint8_t *>(b.data()) + start;
		io.iov_len = c - start;
		v.push_back(io);
		start = c;
	}
	return v;
}

std::vector<iovec> one(const Bytes &b)
{
	return cut(b, {});
}

std::vector<iovec> bytewise(const Bytes &b)
{
	std::vector<size_t> cuts;

	for (size_t i = 1; i < b.size(); i++)
		cuts.push_back(i);
	return cut(b, cuts);
}

} // namespace nfsxdr
