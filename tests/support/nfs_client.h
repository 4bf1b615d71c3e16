// SPDX-License-Identifier: MIT
/*
 * nfs_client.h - a small user-space NFS client for tests and the demo,
 * written from RFC 5531 (RPC, record marking), RFC 1813 (NFSv3 and MOUNT v3),
 * RFC 8881 (NFSv4.1) and RFC 8267 (which items are DDP-eligible). It shares
 * no code with the server.
 *
 * Two transports sit behind one interface so the same calls can be compared:
 *  - TcpTransport: RPC record marking (RFC 5531 section 11) on a TCP socket;
 *  - RdmaTransport: RPC-over-RDMA v1 through rrtest::Requester, shaping calls
 *    the way the Linux client does (docs/linux-client-wire.md): inline when the
 *    Send fits; WRITE/SYMLINK data in a Read chunk at the item's position;
 *    otherwise a Long Call (RDMA_NOMSG + Position-Zero Read chunk); READ and
 *    READLINK results into Write chunks (with the 4-byte pad segment when the
 *    count is unaligned); big replies into a Reply chunk. RdmaPolicy forces
 *    each shape for tests.
 *
 * Replies are decoded strictly: RPC accept status, NFS status, op numbers,
 * opaque lengths against the bounds the RFCs set, no trailing bytes.
 * Results: 0 = NFS OK; > 0 = the NFS status; < 0 = a transport, RPC or decode
 * failure (see err()).
 */
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/nfs_xdr_builder.h"
#include "support/rr_requester.h"

namespace nfsc
{

using Bytes = std::vector<uint8_t>;

enum : int {
	E_RPC = -1,	   /* transport failure, RPC rejected, or undecodable reply */
	E_RDMA_ERROR = -2, /* RPC-over-RDMA RDMA_ERROR (see Transport reply) */
};

constexpr uint32_t PROG_NFS = 100003;
constexpr uint32_t PROG_MOUNT = 100005;

/* What a call carries and may receive, for chunk decisions (RFC 8267 section 4). */
struct CallOpts {
	/* DDP-eligible data items of the call: position of the data in the message, length */
	std::vector<rrtest::CallSpec::Item> items;
	/* DDP-eligible results expected in the reply, in op order: their maximum lengths */
	std::vector<uint32_t> payloads;
	/* the most the reply can hold beside those payloads */
	size_t reply_max = 512;
};

struct TransportReply {
	Bytes rpc;		   /* the RPC Reply message (inline or from the Reply chunk) */
	std::vector<Bytes> chunks; /* bytes the server wrote into each Write chunk */
	bool rdma_error = false;
	uint32_t rdma_err = 0; /* ERR_VERS / ERR_CHUNK */
	std::string shape;     /* how the call went and the reply came, for transcripts */
};

class Transport
{
      public:
	virtual ~Transport() = default;
	virtual bool call(const Bytes &rpc, const CallOpts &o, TransportReply *r,
			  std::string *err) = 0;
	virtual std::string name() const = 0;
	uint32_t next_xid()
	{
		return xid_++;
	}

      protected:
	uint32_t xid_ = 0x4e000000u ^ uint32_t(uintptr_t(this) >> 4);
};

class TcpTransport : public Transport
{
      public:
	static std::unique_ptr<TcpTransport> connect(const std::string &host, uint16_t port,
						     std::string *err, int timeout_ms = 30000);
	~TcpTransport() override;
	bool call(const Bytes &rpc, const CallOpts &o, TransportReply *r,
		  std::string *err) override;
	std::string name() const override
	{
		return "tcp";
	}

      private:
	int fd_ = -1;
	int timeout_ms_ = 30000;
};

enum class Ddp { AUTO, ALWAYS, NEVER };

struct RdmaPolicy {
	Ddp call_ddp = Ddp::AUTO;  /* WRITE/SYMLINK data in a Read chunk */
	Ddp reply_ddp = Ddp::AUTO; /* READ/READLINK results into Write chunks */
	bool long_call = false;	   /* every call as RDMA_NOMSG + Position-Zero Read chunk */
	bool pad = true;	   /* Linux's 4-byte pad segment after unaligned Write chunks */
	int reply_chunk = -1;	   /* -1: when the reply may not fit inline; 0: never; n: n bytes */
	bool long_call_items = false; /* Long Call keeps data items in their own Read chunks */
	uint32_t read_segs = 1;	      /* segments per Read chunk */
	uint32_t write_segs = 1;      /* segments per Write chunk (before the pad) */
	uint32_t reply_segs = 1;      /* segments of the Reply chunk */
	int timeout_ms = 30000;
};

class RdmaTransport : public Transport
{
      public:
	static std::unique_ptr<RdmaTransport> connect(const std::string &addr, std::string *err);
	/* with requester options of the test's own (addr and provider filled in
	 * when empty) */
	static std::unique_ptr<RdmaTransport> connect(const std::string &addr,
						      rrtest::RequesterOptions o, std::string *err);
	bool call(const Bytes &rpc, const CallOpts &o, TransportReply *r,
		  std::string *err) override;
	std::string name() const override
	{
		return "rdma";
	}
	/* call() in two halves, for many calls in flight (up to the credit grant) */
	int64_t post(const Bytes &rpc, const CallOpts &o, std::string *err);
	bool collect(uint32_t xid, TransportReply *r, std::string *err);
	rrtest::Requester &requester()
	{
		return *req_;
	}
	RdmaPolicy policy;
	rrtest::CallSpec last_spec; /* the shape of the last call, for tests */
	rrtest::Reply last_reply;

      private:
	std::unique_ptr<rrtest::Requester> req_;
	std::map<uint32_t, rrtest::CallSpec::Mode> modes_;
};

/* A strict XDR reader over a reply; payload() takes DDP-eligible results. */
class Dec
{
      public:
	explicit Dec(const TransportReply &r) : r_(r)
	{
	}
	uint32_t u32();
	uint64_t u64();
	bool boolean();
	Bytes opaque(uint32_t max);
	std::string string(uint32_t max);
	void fixed(size_t n, uint8_t *out);
	void skip(size_t n);
	/* opaque<> that is DDP-eligible: from the next Write chunk, or inline */
	Bytes payload(uint32_t max);
	bool ok() const
	{
		return ok_;
	}
	bool fail(const std::string &why);
	const std::string &why() const
	{
		return why_;
	}
	size_t left() const
	{
		return r_.rpc.size() - off_;
	}
	/* false unless every byte was consumed and every used chunk taken */
	bool end();

      private:
	const TransportReply &r_;
	size_t off_ = 0;
	size_t chunk_ = 0;
	bool ok_ = true;
	std::string why_;
};

/* Read an RPC Reply header (RFC 5531 section 9); false with @why unless SUCCESS. */
bool rpc_reply_ok(Dec &d, uint32_t xid, std::string *why);

/* ---- checksums ---- */
uint32_t crc32c(const uint8_t *p, size_t n, uint32_t crc = 0);
inline uint32_t crc32c(const Bytes &b)
{
	return crc32c(b.data(), b.size());
}
Bytes test_data(size_t n, uint32_t seed);

/* ---- common types ---- */
struct Fh {
	Bytes b;
	bool empty() const
	{
		return b.empty();
	}
};
struct Attr {
	uint32_t type = 0; /* NF3REG=1 / NF4REG=1, DIR 2, LNK 5 */
	uint32_t mode = 0;
	uint64_t size = 0;
	uint64_t fileid = 0;
};
struct DirEntry {
	uint64_t fileid = 0;
	std::string name;
	uint64_t cookie = 0;
	bool has_attr = false;
	Attr attr;
	Fh fh;
};

/* A client of one program version on one transport; keeps the last error. */
class Client
{
      public:
	explicit Client(Transport &t) : t_(t)
	{
	}
	const std::string &err() const
	{
		return err_;
	}
	const TransportReply &last() const
	{
		return last_;
	}
	Transport &transport()
	{
		return t_;
	}
	uint32_t uid = 0, gid = 0;
	std::string machine = "rr-nfs-client";

      protected:
	/* Send @x (a complete Call); decode the RPC header into @d's position. */
	int rpc(nfsxdr::Xdr &x, const CallOpts &o, std::unique_ptr<Dec> *d);
	int rdma_error(const TransportReply &r);
	int fail(const std::string &why)
	{
		err_ = why;
		return E_RPC;
	}
	void header(nfsxdr::Xdr &x, uint32_t *xid, uint32_t prog, uint32_t vers, uint32_t proc);
	Transport &t_;
	std::string err_;
	TransportReply last_;
};

/* MOUNT v3 (RFC 1813 section 5); MNT over TCP like every NFS client. */
class Mount3 : public Client
{
      public:
	using Client::Client;
	int null();
	int mnt(const std::string &path, Fh *root);
};

/* NFSv3 (RFC 1813). */
class Nfs3 : public Client
{
      public:
	using Client::Client;
	int null();
	int getattr(const Fh &fh, Attr *a);
	int lookup(const Fh &dir, const std::string &name, Fh *out, Attr *a = nullptr);
	int create(const Fh &dir, const std::string &name, uint32_t mode, Fh *out);
	int mkdir(const Fh &dir, const std::string &name, uint32_t mode, Fh *out);
	int symlink(const Fh &dir, const std::string &name, const std::string &target, Fh *out);
	int read(const Fh &fh, uint64_t off, uint32_t count, Bytes *data, bool *eof);
	int write(const Fh &fh, uint64_t off, const Bytes &data, uint32_t *count = nullptr);
	/* READ/WRITE as separate encode and decode, for calls kept in flight */
	nfsxdr::Xdr read_call(const Fh &fh, uint64_t off, uint32_t count, CallOpts *o);
	int read_reply(const TransportReply &r, uint32_t xid, uint32_t count, Bytes *data,
		       bool *eof);
	nfsxdr::Xdr write_call(const Fh &fh, uint64_t off, const Bytes &data, CallOpts *o);
	int write_reply(const TransportReply &r, uint32_t xid, size_t len, uint32_t *count);
	int readlink(const Fh &fh, std::string *target);
	/* every entry of @dir ("." and ".." included), @count bytes a call */
	int readdir(const Fh &dir, std::vector<DirEntry> *out, uint32_t count = 32768);
	int readdirplus(const Fh &dir, std::vector<DirEntry> *out, uint32_t maxcount = 32768);
	/* one READDIR call from @cookie (for shaped tests); @eof set from the reply */
	int readdir_once(const Fh &dir, uint64_t cookie, uint32_t count, std::vector<DirEntry> *out,
			 bool *eof);
	int remove(const Fh &dir, const std::string &name);

      private:
	int created(Dec &d, uint32_t status, Fh *out);
	uint8_t cookieverf_[8] = {};
};

struct Stateid {
	uint32_t seqid = 0;
	uint8_t other[12] = {};
};
/* stateid4 on the wire (RFC 8881 section 3.3.12), for the NFSv4 client's
 * files (nfs4_client.cc, nfs4_lock.cc) */
void stateid4(nfsxdr::Xdr &x, const Stateid &s);
void get_stateid4(Dec &d, Stateid *s);

/* open_delegation4 as OPEN returned it (RFC 8881 section 18.16.2) */
struct Deleg {
	uint32_t type = 0; /* OPEN_DELEGATE_NONE 0, READ 1, WRITE 2, NONE_EXT 3 */
	Stateid sid;
	uint32_t why_none = 0; /* NONE_EXT: why_no_delegation4 */
};

/* LOCK4denied's range, type and lock owner (RFC 8881 section 18.10.2) */
struct LockRange {
	uint64_t off = 0, len = 0;
	uint32_t type = 0;
	uint64_t owner_clientid = 0;
	Bytes owner;
};

/* NFSv4.1 / 4.2 (RFC 8881, RFC 7862) with one session, slot 0. */
class Nfs4 : public Client
{
      public:
	explicit Nfs4(Transport &t, uint32_t minor = 1) : Client(t), minor_(minor)
	{
	}
	int null();
	int exchange_id();
	int create_session();
	int reclaim_complete();
	int destroy_session();
	/* after destroy_session(), with no state left: the server forgets the
	 * client and its recovery record (RFC 8881 section 18.50) */
	int destroy_clientid();
	/* EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE */
	int mount();
	/* PUTROOTFH, LOOKUP each component, GETFH */
	int lookup_path(const std::string &path, Fh *out);
	int lookup(const Fh &dir, const std::string &name, Fh *out);
	int getattr(const Fh &fh, Attr *a);
	/* OPEN (OPEN4_CREATE, UNCHECKED4, CLAIM_NULL) + GETFH */
	int open_create(const Fh &dir, const std::string &name, Fh *out, Stateid *sid);
	int close(const Fh &fh, const Stateid &sid);
	/* OPEN (no create, CLAIM_NULL) with share access @access (1 READ, 2 WRITE,
	 * 3 BOTH) | @want (OPEN4_SHARE_ACCESS_WANT_* bits); the delegation in @dg */
	int open(const Fh &dir, const std::string &name, uint32_t access, Fh *out, Stateid *sid,
		 Deleg *dg = nullptr, uint32_t want = 0);
	int delegreturn(const Fh &fh, const Stateid &deleg);
	/*
	 * State reclaim after a server restart (RFC 8881 section 8.4.2.1), in
	 * the grace period, between CREATE_SESSION and RECLAIM_COMPLETE:
	 * OPEN with CLAIM_PREVIOUS of the file @fh (no create, no delegation).
	 */
	int open_reclaim(const Fh &fh, uint32_t access, Stateid *sid);
	/*
	 * Byte-range locks (section 18.10-18.12; nfs4_lock.cc). @type: READ_LT 1,
	 * WRITE_LT 2; @len 0xffffffffffffffff: to the end of the file. lock()
	 * takes a new lock owner of this client from the open stateid @open;
	 * @reclaim sets the reclaim flag (in the grace period). NFS4ERR_DENIED
	 * fills @denied with the conflicting range when given.
	 */
	int lock(const Fh &fh, const Stateid &open, uint32_t type, uint64_t off, uint64_t len,
		 bool reclaim, Stateid *lock_sid, LockRange *denied = nullptr);
	/* LOCKT as a new lock owner: 0 when the range is free */
	int lockt(const Fh &fh, uint32_t type, uint64_t off, uint64_t len,
		  LockRange *denied = nullptr);
	int locku(const Fh &fh, Stateid *lock_sid, uint32_t type, uint64_t off, uint64_t len);
	int read(const Fh &fh, const Stateid &sid, uint64_t off, uint32_t count, Bytes *data,
		 bool *eof);
	int write(const Fh &fh, const Stateid &sid, uint64_t off, const Bytes &data,
		  uint32_t *count = nullptr);
	/* one COMPOUND: PUTFH and a READ per (offset, count); Write chunks pair in
	 * order, offered for the first @chunked READs at most (the rest inline or
	 * in the Reply chunk; the transport allows RR_PCL_MAX_WRITE_CHUNKS) */
	int read_multi(const Fh &fh, const Stateid &sid,
		       const std::vector<std::pair<uint64_t, uint32_t>> &reads,
		       std::vector<Bytes> *data, size_t chunked = SIZE_MAX);
	/* read_multi after PUTFH @dir and @readdirs READDIRs of it (@maxcount
	 * bytes each, none with no READDIR): results a server may encode by
	 * reference (ganesha: each its own buffer), many in one Reply */
	int readdirs_then_reads(const Fh &dir, unsigned readdirs, uint32_t maxcount, const Fh &fh,
				const Stateid &sid,
				const std::vector<std::pair<uint64_t, uint32_t>> &reads,
				std::vector<Bytes> *data, size_t chunked = SIZE_MAX);
	/*
	 * one COMPOUND: for each read, PUTFH of its handle and READ with @sid
	 * (SEQUENCE, PUTFH a, READ, PUTFH b, READ ...); the data of the READs
	 * that ran in @data, and the status of the first op that failed (0 when
	 * none did)
	 */
	struct FhRead {
		Fh fh;
		uint64_t off;
		uint32_t count;
	};
	int read_fhs(const std::vector<FhRead> &reads, const Stateid &sid,
		     std::vector<Bytes> *data);
	/*
	 * READ_PLUS (RFC 7862 section 15.10), data contents only. READ_PLUS is not
	 * DDP-eligible (RFC 8267 section 6): with @offer_chunk a Write chunk is
	 * offered anyway and must come back unused, the data inline or in the
	 * Reply chunk.
	 */
	int read_plus(const Fh &fh, const Stateid &sid, uint64_t off, uint32_t count,
		      bool offer_chunk, Bytes *data, bool *eof);
	int readlink(const Fh &fh, std::string *target);
	int symlink(const Fh &dir, const std::string &name, const std::string &target);
	int readdir(const Fh &dir, std::vector<DirEntry> *out, uint32_t maxcount = 32768);
	int readdir_once(const Fh &dir, uint64_t cookie, uint32_t maxcount,
			 std::vector<DirEntry> *out, bool *eof);
	int remove(const Fh &dir, const std::string &name);
	/* PUTFH + SECINFO @name (RFC 8881 section 18.29): the flavors offered */
	int secinfo(const Fh &dir, const std::string &name, std::vector<uint32_t> *flavors);
	/* PUTFH + SECINFO_NO_NAME @style (0 CURRENT_FH, 1 PARENT; section 18.45) */
	int secinfo_no_name(const Fh &fh, uint32_t style, std::vector<uint32_t> *flavors);

	uint64_t clientid() const
	{
		return clientid_;
	}
	uint32_t slot_seqid() const
	{
		return seqid_;
	}
	/* EXCHANGE_ID's co_ownerid and verifier; empty / 0: unique ones per
	 * call (a new client incarnation each time) */
	std::string owner_id;
	uint64_t boot_verifier = 0;
	/* SEQUENCE statuses that made the client retry with the next seqid */
	uint32_t seq_recoveries = 0;
	/* the statuses that caused them, in order */
	std::vector<int> recovery_statuses;
	bool cachethis = false;
	/* CREATE_SESSION: the fore channel's ca_maxoperations */
	uint32_t max_ops = 16;
	/* each COMPOUND's tag (Linux sends an empty one) */
	std::string tag = "rr-nfs-client";
	/* CREATE_SESSION: ask for a back channel on this connection
	 * (CREATE_SESSION4_FLAG_CONN_BACK_CHAN) with this program and security
	 * (AUTH_NONE 0 or AUTH_SYS 1) */
	bool back_channel = false;
	uint32_t cb_program = 0x40000000;
	uint32_t cb_sec = 0;
	uint32_t back_chan_max_requests = 1; /* ca_maxrequests of the back channel */
	/* csr_flags of the last CREATE_SESSION */
	uint32_t session_flags = 0;
	const uint8_t *sessionid() const
	{
		return sessionid_;
	}

      private:
	/* a COMPOUND; with_seq puts SEQUENCE first */
	struct Comp {
		nfsxdr::Xdr x;
		uint32_t xid = 0;
		uint32_t nops = 0;
		size_t nops_at = 0;
		std::vector<uint32_t> ops;
		CallOpts o;
	};
	void begin(Comp &c, bool with_seq);
	void op(Comp &c, uint32_t op);
	/* send; @d positioned at the first op result after SEQUENCE; returns status */
	int send(Comp &c, std::unique_ptr<Dec> *d, bool with_seq);
	/* read op @op's header: 0 on NFS4_OK, the status otherwise (or E_RPC) */
	int res(Dec &d, uint32_t op);
	void fattr_mode(nfsxdr::Xdr &x, uint32_t mode);
	/* a COMPOUND of SEQUENCE, PUTFH @fh and @op, whose arguments follow */
	void begin_fh(Comp &c, const Fh &fh, uint32_t op);
	/* ... of OPEN, up to its openflag4, under a new open owner: the part
	 * every OPEN here shares */
	void open_head(Comp &c, const Fh &fh, uint32_t access);
	int decode_fattr(Dec &d, Attr *a);
	int decode_dirlist(Dec &d, std::vector<DirEntry> *out, uint64_t *last, bool *eof);

	uint32_t minor_;
	uint64_t clientid_ = 0;
	uint32_t eid_seq_ = 0;
	uint8_t sessionid_[16] = {};
	bool have_session_ = false;
	uint32_t seqid_ = 1;
	uint64_t owner_seq_ = 0;
	uint8_t verf_[8] = {};
};

/* ---- server statistics (the plugin's Stats_Socket) ---- */

/* A parsed JSON value (the subset the stats socket emits). */
struct Json {
	enum Kind { NUL, BOOL, NUM, STR, ARR, OBJ } kind = NUL;
	double num = 0;
	bool b = false;
	std::string str;
	std::vector<Json> arr;
	std::vector<std::pair<std::string, Json>> obj;
	const Json *get(const std::string &k) const;
	/* a number at @path ("global.registrations"); @dflt when absent */
	double at(const std::string &path, double dflt = -1) const;
};
bool json_parse(const std::string &text, Json *out, std::string *err);
/* Connect to the unix socket @path, read to EOF, parse. */
bool read_stats(const std::string &path, Json *out, std::string *raw, std::string *err);

} // namespace nfsc
