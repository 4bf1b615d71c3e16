// SPDX-License-Identifier: MIT
/*
 * nfs_xdr_builder.h - an independent XDR encoder for test vectors: RPC Calls
 * and Replies (RFC 5531), NFSv2/v3 (RFC 1094, RFC 1813) and NFSv4.x COMPOUND
 * arguments and results (RFC 7530, RFC 8881, RFC 7862, RFC 8276), written
 * from the XDR definitions in those RFCs, not from src/ulb.
 *
 * An encoder can "remove" an opaque item (as an RPC-over-RDMA requester puts
 * it in a Read chunk): the length word stays, the bytes and pad are left out,
 * and the item's XDR position in the whole message is recorded.
 */
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nfsxdr
{

using Bytes = std::vector<uint8_t>;

/* Where an opaque item's data sits. */
struct Item {
	uint64_t position; /* XDR position of the first data byte, whole message (xid = 0) */
	uint64_t
	    stream_offset; /* offset in the encoded stream (== position unless removed before) */
	uint32_t length;
	bool removed; /* left out of the stream (for a Read chunk) */
};

class Xdr
{
      public:
	Bytes buf;
	uint64_t removed_bytes = 0; /* bytes left out so far (with pads) */

	void u32(uint32_t v);
	void u64(uint64_t v);
	void i64(int64_t v)
	{
		u64(static_cast<uint64_t>(v));
	}
	void boolean(bool v)
	{
		u32(v ? 1 : 0);
	}
	void fixed(const Bytes &b); /* fixed-length opaque, padded */
	void fixed_fill(size_t n, uint8_t fill);
	void opaque(const Bytes &b); /* variable-length opaque<> */
	void string(const std::string &s);
	/* An opaque item whose position the test wants; optionally removed. */
	Item item(const Bytes &b, bool remove = false);
	uint64_t pos() const
	{
		return buf.size();
	}
	uint64_t xdr_pos() const
	{
		return buf.size() + removed_bytes;
	}
};

Bytes pattern(size_t n, uint8_t seed = 0);

/* RPC message headers (RFC 5531 section 9). */
enum : uint32_t {
	AUTH_NONE = 0,
	AUTH_SYS = 1,
	RPCSEC_GSS = 6,
};
void rpc_call_header(Xdr &x, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
		     uint32_t cred_flavor = AUTH_SYS);
/* A Call with an AUTH_SYS credential naming @uid/@gid (RFC 5531 section 14). */
void rpc_call_header_sys(Xdr &x, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
			 uint32_t uid, uint32_t gid, const std::string &machine);
void rpc_call_header_gss(Xdr &x, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
			 uint32_t gss_proc, uint32_t service);
void rpc_reply_accepted(Xdr &x, uint32_t xid, uint32_t verf_flavor = AUTH_NONE,
			uint32_t accept_stat = 0);
void rpc_reply_denied(Xdr &x, uint32_t xid);

/* NFSv4 */
constexpr uint32_t PROG_NFS = 100003;
constexpr uint32_t OP_ILLEGAL = 10044;
enum Op : uint32_t {
	ACCESS = 3,
	CLOSE,
	COMMIT,
	CREATE,
	DELEGPURGE,
	DELEGRETURN,
	GETATTR,
	GETFH,
	LINK,
	LOCK,
	LOCKT,
	LOCKU,
	LOOKUP,
	LOOKUPP,
	NVERIFY,
	OPEN,
	OPENATTR,
	OPEN_CONFIRM,
	OPEN_DOWNGRADE,
	PUTFH,
	PUTPUBFH,
	PUTROOTFH,
	READ,
	READDIR,
	READLINK,
	REMOVE,
	RENAME,
	RENEW,
	RESTOREFH,
	SAVEFH,
	SECINFO,
	SETATTR,
	SETCLIENTID,
	SETCLIENTID_CONFIRM,
	VERIFY,
	WRITE,
	RELEASE_LOCKOWNER,
	BACKCHANNEL_CTL,
	BIND_CONN_TO_SESSION,
	EXCHANGE_ID,
	CREATE_SESSION,
	DESTROY_SESSION,
	FREE_STATEID,
	GET_DIR_DELEGATION,
	GETDEVICEINFO,
	GETDEVICELIST,
	LAYOUTCOMMIT,
	LAYOUTGET,
	LAYOUTRETURN,
	SECINFO_NO_NAME,
	SEQUENCE,
	SET_SSV,
	TEST_STATEID,
	WANT_DELEGATION,
	DESTROY_CLIENTID,
	RECLAIM_COMPLETE,
	ALLOCATE,
	COPY,
	COPY_NOTIFY,
	DEALLOCATE,
	IO_ADVISE,
	LAYOUTERROR,
	LAYOUTSTATS,
	OFFLOAD_CANCEL,
	OFFLOAD_STATUS,
	READ_PLUS,
	SEEK,
	WRITE_SAME,
	CLONE,
	GETXATTR,
	SETXATTR,
	LISTXATTRS,
	REMOVEXATTR,
};

struct Sessionid {
	uint8_t b[16];
};

/* COMPOUND4args builder: call begin(), then one op_*() per operation, then done(). */
class Compound
{
      public:
	Xdr x;
	std::vector<Item> items; /* eligible argument items in order */
	explicit Compound(uint32_t xid, uint32_t minor, uint32_t numops,
			  const std::string &tag = "ulb-test", uint32_t cred = AUTH_SYS);

	void op_putfh(const Bytes &fh);
	void op_lookup(const std::string &name);
	void op_read(uint64_t offset, uint32_t count);
	void op_read_plus(uint64_t offset, uint32_t count);
	void op_readlink();
	void op_write(uint64_t offset, const Bytes &data, bool chunk = false);
	void op_create_symlink(const std::string &name, const Bytes &linkdata, bool chunk = false);
	void op_sequence(const Sessionid &sid, uint32_t seqid, uint32_t slot);
	void op_getattr();
	/* Sample arguments for any operation 3..75 (the ones above included). */
	void op_sample(uint32_t op, int variant = 0);
	void raw_op(uint32_t op)
	{
		x.u32(op);
	}
};

/* COMPOUND4res builder. */
class CompoundRes
{
      public:
	Xdr x;
	std::vector<Item> items; /* data items of NFS Read results in order */
	CompoundRes(uint32_t xid, uint32_t status, uint32_t numres, uint32_t verf = AUTH_NONE);

	void res_status(uint32_t op, uint32_t status); /* any op, no result body */
	void res_putfh()
	{
		res_status(PUTFH, 0);
	}
	void res_lookup()
	{
		res_status(LOOKUP, 0);
	}
	void res_read(const Bytes &data, bool eof);
	void res_readlink(const Bytes &link);
	struct RpContent {
		bool data;
		uint64_t offset;
		Bytes bytes;	   /* data */
		uint64_t hole_len; /* hole */
	};
	void res_read_plus(bool eof, const std::vector<RpContent> &contents);
	void res_sequence(const Sessionid &sid, uint32_t seqid, uint32_t slot);
	void res_getattr();
	/* Sample NFS4_OK result for any op 3..75 (not READ/READLINK/READ_PLUS). */
	void res_sample(uint32_t op, int variant = 0);
};

/* NFSv2 / v3 Calls and Replies; items gets the eligible item. */
struct Legacy {
	Xdr x;
	std::vector<Item> items;
};
Legacy v3_write_call(uint32_t xid, const Bytes &data, bool chunk = false);
Legacy v3_symlink_call(uint32_t xid, const std::string &name, const std::string &path,
		       bool chunk = false);
Legacy v3_read_call(uint32_t xid, uint64_t offset, uint32_t count);
/* READ under RPCSEC_GSS integrity (krb5i); the 16-byte checksum comes last. */
Legacy v3_read_call_krb5i(uint32_t xid, uint32_t seq_num, uint32_t count);
Legacy v3_readlink_call(uint32_t xid);
Legacy v3_read_reply(uint32_t xid, uint32_t status, const Bytes &data);
Legacy v3_readlink_reply(uint32_t xid, uint32_t status, const std::string &path);
Legacy v2_write_call(uint32_t xid, const Bytes &data, bool chunk = false);
Legacy v2_symlink_call(uint32_t xid, const std::string &name, const std::string &path,
		       bool chunk = false);
Legacy v2_read_reply(uint32_t xid, uint32_t status, const Bytes &data);
Legacy simple_call(uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc, size_t argbytes);

/* CB_COMPOUND with CB_SEQUENCE first (RFC 8881 section 20.9). */
Bytes cb_compound_call(uint32_t xid, const Sessionid &sid, uint32_t seqid, uint32_t slot);

/* Cut a stream into iovecs at the given offsets (points into @b). */
std::vector<iovec> cut(const Bytes &b, std::vector<size_t> cuts);
std::vector<iovec> one(const Bytes &b);
std::vector<iovec> bytewise(const Bytes &b);

} // namespace nfsxdr
