// SPDX-License-Identifier: MIT
/*
 * nfs_xdr_builder.cc - independent XDR encoder for ULB test vectors.
 * Each helper is named after the XDR type it encodes (RFC 7530 section 2,
 * RFC 8881 section 3, RFC 7862 section 4/15, RFC 8276 section 8).
 */
#include "support/nfs_xdr_builder.h"

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

/* ---- NFSv4 shapes ---- */

static void stateid4(Xdr &x, uint32_t seq = 1)
{
	x.u32(seq);
	x.fixed_fill(12, 0xab);
}
static void verifier4(Xdr &x)
{
	x.fixed_fill(8, 0x5a);
}
static void nfs_fh4(Xdr &x)
{
	x.opaque(pattern(28, 0x10));
}
static void component4(Xdr &x, const std::string &s = "name")
{
	x.string(s);
}
static void bitmap4(Xdr &x, uint32_t words = 2)
{
	x.u32(words);
	for (uint32_t i = 0; i < words; i++)
		x.u32(0x00100012u + i);
}
static void fattr4(Xdr &x)
{
	bitmap4(x, 2);
	x.opaque(pattern(36, 0x20)); /* attrlist4 */
}
static void nfstime4(Xdr &x)
{
	x.i64(1700000000);
	x.u32(5000);
}
static void change_info4(Xdr &x)
{
	x.boolean(true);
	x.u64(41);
	x.u64(42);
}
static void lock_owner4(Xdr &x)
{
	x.u64(0xc11e);
	x.opaque(pattern(20, 0x30));
}
static void netaddr4(Xdr &x)
{
	x.string("tcp");
	x.string("192.0.2.1.8.1");
}
static void sessionid4(Xdr &x, const Sessionid &s)
{
	x.fixed(Bytes(s.b, s.b + 16));
}
static void deviceid4(Xdr &x)
{
	x.fixed_fill(16, 0xde);
}
static void state_protect_ops4(Xdr &x)
{
	bitmap4(x, 1);
	bitmap4(x, 3);
}
static void nfs_impl_id4_list(Xdr &x)
{
	x.u32(1);
	x.string("example.org");
	x.string("test-impl");
	nfstime4(x);
}
static void channel_attrs4(Xdr &x, bool ird)
{
	x.u32(0);	/* headerpadsize */
	x.u32(1049620); /* maxrequestsize */
	x.u32(1049480); /* maxresponsesize */
	x.u32(7584);	/* maxresponsesize_cached */
	x.u32(16);	/* maxoperations */
	x.u32(64);	/* maxrequests */
	x.u32(ird ? 1 : 0);
	if (ird)
		x.u32(16);
}
static void callback_sec_parms4_list(Xdr &x)
{
	x.u32(3);
	x.u32(AUTH_NONE);
	x.u32(AUTH_SYS); /* authsys_parms */
	x.u32(7);
	x.string("host");
	x.u32(0);
	x.u32(0);
	x.u32(1);
	x.u32(0);
	x.u32(RPCSEC_GSS); /* gss_cb_handles4 */
	x.u32(1);
	x.opaque(pattern(8, 1));
	x.opaque(pattern(9, 2));
}
static void netloc4(Xdr &x, int variant)
{
	switch (variant % 3) {
	case 0:
		x.u32(1); /* NL4_NAME */
		x.string("server.example");
		break;
	case 1:
		x.u32(2); /* NL4_URL */
		x.string("nfs://server/x");
		break;
	default:
		x.u32(3); /* NL4_NETADDR */
		netaddr4(x);
		break;
	}
}
static void nfsace4(Xdr &x)
{
	x.u32(0);
	x.u32(0);
	x.u32(0x1f);
	x.string("OWNER@");
}
static void open_delegation4(Xdr &x, int variant)
{
	switch (variant % 6) {
	case 0:
		x.u32(0); /* NONE */
		break;
	case 1:
		x.u32(1); /* READ */
		stateid4(x);
		x.boolean(false);
		nfsace4(x);
		break;
	case 2:
		x.u32(2); /* WRITE */
		stateid4(x);
		x.boolean(true);
		x.u32(2); /* NFS_LIMIT_BLOCKS: num_blocks, bytes_per_block */
		x.u32(10);
		x.u32(4096);
		nfsace4(x);
		break;
	case 3:
		x.u32(3); /* NONE_EXT */
		x.u32(1); /* WND4_CONTENTION: ond_server_will_push_deleg */
		x.boolean(true);
		break;
	case 4:
		x.u32(3); /* NONE_EXT */
		x.u32(2); /* WND4_RESOURCE: ond_server_will_signal_avail */
		x.boolean(false);
		break;
	default:
		x.u32(3); /* NONE_EXT */
		x.u32(7); /* WND4_CANCELLED: void */
		break;
	}
}
static void write_response4(Xdr &x)
{
	x.u32(1); /* wr_callback_id<1> */
	stateid4(x);
	x.u64(4096);
	x.u32(2); /* FILE_SYNC4 */
	verifier4(x);
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

void Compound::op_sample(uint32_t op, int v)
{
	Sessionid sid;

	for (int i = 0; i < 16; i++)
		sid.b[i] = uint8_t(0xa0 + i);
	switch (op) {
	case PUTFH:
		op_putfh(pattern(32, 1));
		return;
	case LOOKUP:
		op_lookup("file");
		return;
	case READ:
		op_read(4096, 8192);
		return;
	case READ_PLUS:
		op_read_plus(0, 65536);
		return;
	case READLINK:
		op_readlink();
		return;
	case WRITE:
		op_write(0, pattern(100 + v, 5));
		return;
	case SEQUENCE:
		op_sequence(sid, 9, 2);
		return;
	case GETATTR:
		op_getattr();
		return;
	default:
		break;
	}
	x.u32(op);
	switch (op) {
	case ACCESS:
		x.u32(0x3f);
		break;
	case CLOSE:
		x.u32(1);
		stateid4(x);
		break;
	case COMMIT:
		x.u64(0);
		x.u32(0);
		break;
	case CREATE:
		switch (v % 4) {
		case 0:
			x.u32(5); /* NF4LNK */
			items.push_back(x.item(pattern(13, 1)));
			break;
		case 1:
			x.u32(3); /* NF4BLK: specdata4 */
			x.u32(8);
			x.u32(1);
			break;
		case 2:
			x.u32(2); /* NF4DIR */
			break;
		default:
			x.u32(7); /* NF4FIFO */
			break;
		}
		component4(x, "obj");
		fattr4(x);
		break;
	case DELEGPURGE:
	case RENEW:
	case DESTROY_CLIENTID:
		x.u64(0x1122334455667788ull);
		break;
	case DELEGRETURN:
	case FREE_STATEID:
	case OFFLOAD_CANCEL:
	case OFFLOAD_STATUS:
		stateid4(x);
		break;
	case GETFH:
	case LOOKUPP:
	case PUTPUBFH:
	case PUTROOTFH:
	case RESTOREFH:
	case SAVEFH:
		break;
	case LINK:
	case REMOVE:
	case SECINFO:
	case GETXATTR:
	case REMOVEXATTR:
		component4(x, "target");
		break;
	case LOCK:
		x.u32(2); /* WRITE_LT */
		x.boolean(false);
		x.u64(0);
		x.u64(~0ull);
		if (v % 2 == 0) {
			x.boolean(true); /* open_to_lock_owner4 */
			x.u32(1);
			stateid4(x);
			x.u32(0);
			lock_owner4(x);
		} else {
			x.boolean(false); /* exist_lock_owner4 */
			stateid4(x);
			x.u32(3);
		}
		break;
	case LOCKT:
		x.u32(1);
		x.u64(0);
		x.u64(100);
		lock_owner4(x);
		break;
	case LOCKU:
		x.u32(1);
		x.u32(4);
		stateid4(x);
		x.u64(0);
		x.u64(100);
		break;
	case NVERIFY:
	case VERIFY:
		fattr4(x);
		break;
	case OPEN:
		x.u32(1);	/* seqid */
		x.u32(3);	/* share_access */
		x.u32(0);	/* share_deny */
		lock_owner4(x); /* open_owner4 has the same shape */
		if (v % 2 == 0) {
			x.u32(1);	  /* OPEN4_CREATE */
			x.u32(v % 8 / 2); /* createmode4 0..3 */
			switch (v % 8 / 2) {
			case 0:
			case 1:
				fattr4(x);
				break;
			case 2:
				verifier4(x);
				break;
			default:
				verifier4(x);
				fattr4(x);
				break;
			}
		} else {
			x.u32(0); /* OPEN4_NOCREATE */
		}
		x.u32(uint32_t(v % 7)); /* open_claim_type4 */
		switch (v % 7) {
		case 0:
		case 3:
			component4(x, "f");
			break;
		case 1:
			x.u32(1);
			break;
		case 2:
			stateid4(x);
			component4(x, "f");
			break;
		case 5:
			stateid4(x);
			break;
		default:
			break;
		}
		break;
	case OPENATTR:
		x.boolean(true);
		break;
	case OPEN_CONFIRM:
		stateid4(x);
		x.u32(2);
		break;
	case OPEN_DOWNGRADE:
		stateid4(x);
		x.u32(2);
		x.u32(1);
		x.u32(0);
		break;
	case READDIR:
		x.u64(0);
		verifier4(x);
		x.u32(4096);
		x.u32(32768);
		bitmap4(x, 2);
		break;
	case RENAME:
		component4(x, "old");
		component4(x, "new");
		break;
	case SETATTR:
		stateid4(x);
		fattr4(x);
		break;
	case SETCLIENTID:
		verifier4(x);
		x.opaque(pattern(40, 7));
		x.u32(0x40000000);
		netaddr4(x);
		x.u32(1);
		break;
	case SETCLIENTID_CONFIRM:
		x.u64(5);
		verifier4(x);
		break;
	case RELEASE_LOCKOWNER:
		lock_owner4(x);
		break;
	case BACKCHANNEL_CTL:
		x.u32(0x40000000);
		callback_sec_parms4_list(x);
		break;
	case BIND_CONN_TO_SESSION:
		sessionid4(x, sid);
		x.u32(3); /* CDFC4_FORE_OR_BOTH */
		x.boolean(true);
		break;
	case EXCHANGE_ID:
		verifier4(x);
		x.opaque(pattern(24, 9)); /* co_ownerid */
		x.u32(0x101);
		x.u32(uint32_t(v % 3)); /* state_protect_how4 */
		if (v % 3 == 1) {
			state_protect_ops4(x);
		} else if (v % 3 == 2) {
			state_protect_ops4(x);
			x.u32(1); /* ssp_hash_algs<> */
			x.opaque(pattern(9, 1));
			x.u32(2); /* ssp_encr_algs<> */
			x.opaque(pattern(9, 2));
			x.opaque(pattern(11, 3));
			x.u32(16); /* window */
			x.u32(2);  /* num_gss_handles */
		}
		nfs_impl_id4_list(x);
		break;
	case CREATE_SESSION:
		x.u64(0x77);
		x.u32(1);
		x.u32(3);
		channel_attrs4(x, false);
		channel_attrs4(x, true);
		x.u32(0x40000000);
		callback_sec_parms4_list(x);
		break;
	case DESTROY_SESSION:
		sessionid4(x, sid);
		break;
	case GET_DIR_DELEGATION:
		x.boolean(false);
		bitmap4(x, 1);
		nfstime4(x);
		nfstime4(x);
		bitmap4(x, 2);
		bitmap4(x, 2);
		break;
	case GETDEVICEINFO:
		deviceid4(x);
		x.u32(1); /* LAYOUT4_NFSV4_1_FILES */
		x.u32(4096);
		bitmap4(x, 1);
		break;
	case GETDEVICELIST:
		x.u32(1);
		x.u32(16);
		x.u64(0);
		verifier4(x);
		break;
	case LAYOUTCOMMIT:
		x.u64(0);
		x.u64(8192);
		x.boolean(false);
		stateid4(x);
		x.boolean(true); /* newoffset4 */
		x.u64(8191);
		x.boolean(v % 2 == 0); /* newtime4 */
		if (v % 2 == 0)
			nfstime4(x);
		x.u32(1); /* layoutupdate4: type, body */
		x.opaque(pattern(5, 1));
		break;
	case LAYOUTGET:
		x.boolean(false);
		x.u32(1);
		x.u32(1); /* LAYOUTIOMODE4_READ */
		x.u64(0);
		x.u64(~0ull);
		x.u64(4096);
		stateid4(x);
		x.u32(4096);
		break;
	case LAYOUTRETURN:
		x.boolean(false);
		x.u32(1);
		x.u32(3); /* LAYOUTIOMODE4_ANY */
		if (v % 2 == 0) {
			x.u32(1); /* LAYOUTRETURN4_FILE */
			x.u64(0);
			x.u64(~0ull);
			stateid4(x);
			x.opaque(pattern(6, 2));
		} else {
			x.u32(3); /* LAYOUTRETURN4_ALL */
		}
		break;
	case SECINFO_NO_NAME:
		x.u32(1); /* SECINFO_STYLE4_PARENT */
		break;
	case SET_SSV:
		x.opaque(pattern(32, 4));
		x.opaque(pattern(20, 5));
		break;
	case TEST_STATEID:
		x.u32(3);
		stateid4(x, 1);
		stateid4(x, 2);
		stateid4(x, 3);
		break;
	case WANT_DELEGATION:
		x.u32(1); /* OPEN4_SHARE_ACCESS_WANT_READ_DELEG-ish */
		if (v % 2 == 0) {
			x.u32(4); /* CLAIM_FH */
		} else {
			x.u32(1); /* CLAIM_PREVIOUS */
			x.u32(1);
		}
		break;
	case RECLAIM_COMPLETE:
		x.boolean(false);
		break;
	case ALLOCATE:
	case DEALLOCATE:
		stateid4(x);
		x.u64(0);
		x.u64(1 << 20);
		break;
	case COPY:
		stateid4(x, 1);
		stateid4(x, 2);
		x.u64(0);
		x.u64(0);
		x.u64(1 << 20);
		x.boolean(true);
		x.boolean(false);
		x.u32(2); /* ca_source_server<> */
		netloc4(x, v);
		netloc4(x, v + 1);
		break;
	case COPY_NOTIFY:
		stateid4(x);
		netloc4(x, v + 2);
		break;
	case IO_ADVISE:
		stateid4(x);
		x.u64(0);
		x.u64(4096);
		bitmap4(x, 1);
		break;
	case LAYOUTERROR:
		x.u64(0);
		x.u64(4096);
		stateid4(x);
		x.u32(2); /* device_error4<> */
		for (int i = 0; i < 2; i++) {
			deviceid4(x);
			x.u32(10005);
			x.u32(READ);
		}
		break;
	case LAYOUTSTATS:
		x.u64(0);
		x.u64(4096);
		stateid4(x);
		x.u64(1); /* io_info4 read */
		x.u64(4096);
		x.u64(2); /* io_info4 write */
		x.u64(8192);
		deviceid4(x);
		x.u32(1); /* layoutupdate4 */
		x.opaque(pattern(3, 3));
		break;
	case SEEK:
		stateid4(x);
		x.u64(0);
		x.u32(1); /* NFS4_CONTENT_HOLE */
		break;
	case WRITE_SAME:
		stateid4(x);
		x.u32(0);		  /* UNSTABLE4 */
		x.u64(0);		  /* adb_offset */
		x.u64(512);		  /* adb_block_size */
		x.u64(8);		  /* adb_block_count */
		x.u64(0);		  /* adb_reloff_blocknum */
		x.u32(0);		  /* adb_block_num */
		x.u64(0);		  /* adb_reloff_pattern */
		x.opaque(pattern(16, 6)); /* adb_pattern */
		break;
	case CLONE:
		stateid4(x, 1);
		stateid4(x, 2);
		x.u64(0);
		x.u64(4096);
		x.u64(4096);
		break;
	case SETXATTR:
		x.u32(0); /* SETXATTR4_EITHER */
		component4(x, "user.k");
		x.opaque(pattern(17, 8));
		break;
	case LISTXATTRS:
		x.u64(0);
		x.u32(4096);
		break;
	default:
		break;
	}
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

void CompoundRes::res_sample(uint32_t op, int v)
{
	Sessionid sid;

	for (int i = 0; i < 16; i++)
		sid.b[i] = uint8_t(i);
	if (op == SEQUENCE) {
		res_sequence(sid, 1, 0);
		return;
	}
	x.u32(op);
	x.u32(0); /* NFS4_OK */
	switch (op) {
	case ACCESS:
		x.u32(0x3f);
		x.u32(0x1f);
		break;
	case CLOSE:
	case LOCK:
	case LOCKU:
	case OPEN_CONFIRM:
	case OPEN_DOWNGRADE:
		stateid4(x);
		break;
	case COMMIT:
		verifier4(x);
		break;
	case CREATE:
		change_info4(x);
		bitmap4(x, 2);
		break;
	case GETATTR:
		fattr4(x);
		break;
	case GETFH:
		nfs_fh4(x);
		break;
	case LINK:
	case REMOVE:
	case SETXATTR:
	case REMOVEXATTR:
		change_info4(x);
		break;
	case OPEN:
		stateid4(x);
		change_info4(x);
		x.u32(4); /* rflags */
		bitmap4(x, 1);
		open_delegation4(x, v);
		break;
	case READDIR:
		verifier4(x);
		for (int i = 0; i < 3; i++) { /* entry4 list */
			x.boolean(true);
			x.u64(uint64_t(i + 3));
			component4(x, "entry" + std::to_string(i));
			fattr4(x);
		}
		x.boolean(false);
		x.boolean(true); /* eof */
		break;
	case RENAME:
		change_info4(x);
		change_info4(x);
		break;
	case SECINFO:
	case SECINFO_NO_NAME:
		x.u32(2); /* secinfo4<> */
		x.u32(RPCSEC_GSS);
		x.opaque(pattern(11, 1)); /* oid */
		x.u32(0);		  /* qop */
		x.u32(1);		  /* RPC_GSS_SVC_NONE */
		x.u32(AUTH_SYS);
		break;
	case SETATTR:
		bitmap4(x, 2);
		break;
	case SETCLIENTID:
		x.u64(9);
		verifier4(x);
		break;
	case WRITE:
		x.u32(4096);
		x.u32(2);
		verifier4(x);
		break;
	case BIND_CONN_TO_SESSION:
		sessionid4(x, sid);
		x.u32(1);
		x.boolean(false);
		break;
	case EXCHANGE_ID:
		x.u64(0x99);
		x.u32(1);
		x.u32(0x10001);
		x.u32(uint32_t(v % 3)); /* state_protect4_r */
		if (v % 3 == 1) {
			state_protect_ops4(x);
		} else if (v % 3 == 2) {
			state_protect_ops4(x);
			x.u32(1);  /* hash_alg */
			x.u32(2);  /* encr_alg */
			x.u32(32); /* ssv_len */
			x.u32(16); /* window */
			x.u32(2);  /* handles<> */
			x.opaque(pattern(4, 1));
			x.opaque(pattern(5, 2));
		}
		x.u64(7);		  /* so_minor_id */
		x.opaque(pattern(10, 3)); /* so_major_id */
		x.opaque(pattern(6, 4));  /* server_scope */
		nfs_impl_id4_list(x);
		break;
	case CREATE_SESSION:
		sessionid4(x, sid);
		x.u32(1);
		x.u32(0);
		channel_attrs4(x, true);
		channel_attrs4(x, false);
		break;
	case GET_DIR_DELEGATION:
		if (v % 2 == 0) {
			x.u32(0); /* GDD4_OK */
			verifier4(x);
			stateid4(x);
			bitmap4(x, 1);
			bitmap4(x, 2);
			bitmap4(x, 1);
		} else {
			x.u32(1); /* GDD4_UNAVAIL */
			x.boolean(true);
		}
		break;
	case GETDEVICEINFO:
		x.u32(1);
		x.opaque(pattern(40, 5)); /* da_addr_body */
		bitmap4(x, 1);
		break;
	case GETDEVICELIST:
		x.u64(1);
		verifier4(x);
		x.u32(2);
		deviceid4(x);
		deviceid4(x);
		x.boolean(true);
		break;
	case LAYOUTCOMMIT:
		x.boolean(true);
		x.u64(8192);
		break;
	case LAYOUTGET:
		x.boolean(false);
		stateid4(x);
		x.u32(1); /* layout4<> */
		x.u64(0);
		x.u64(~0ull);
		x.u32(1);
		x.u32(1); /* layout_content4: type, body */
		x.opaque(pattern(30, 6));
		break;
	case LAYOUTRETURN:
		x.boolean(true);
		stateid4(x);
		break;
	case SET_SSV:
		x.opaque(pattern(20, 7));
		break;
	case TEST_STATEID:
		x.u32(2);
		x.u32(0);
		x.u32(10025);
		break;
	case WANT_DELEGATION:
		open_delegation4(x, v + 1);
		break;
	case COPY:
		write_response4(x);
		x.boolean(true);
		x.boolean(false);
		break;
	case COPY_NOTIFY:
		nfstime4(x);
		stateid4(x);
		x.u32(1);
		netloc4(x, v);
		break;
	case IO_ADVISE:
		bitmap4(x, 1);
		break;
	case OFFLOAD_STATUS:
		x.u64(4096);
		x.u32(1);
		x.u32(0);
		break;
	case SEEK:
		x.boolean(false);
		x.u64(8192);
		break;
	case WRITE_SAME:
		write_response4(x);
		break;
	case GETXATTR:
		x.opaque(pattern(9, 9));
		break;
	case LISTXATTRS:
		x.u64(2);
		x.u32(2);
		component4(x, "user.a");
		component4(x, "user.bb");
		x.boolean(true);
		break;
	default:
		/* status-only results */
		break;
	}
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
