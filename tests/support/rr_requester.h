// SPDX-License-Identifier: MIT
/*
 * rr_requester.h - an independent RPC-over-RDMA version 1 requester for tests,
 * written from RFC 8166 and RFC 8797 over fabric/fab.h. It shares no code
 * with src/rpcrdma: headers are built with support/rr_wire.h and replies are
 * decoded and checked here, every byte.
 *
 * One Requester is one RC connection with its own fabric, channel and CQ, and
 * is used from one thread. Calls are posted (post) and their replies collected
 * (wait), so a test can keep many calls in flight; call() does both.
 *
 * Every reply is checked against RFC 8166 and what the Linux client accepts
 * (docs/linux-client-wire.md); anything wrong is listed in Reply::violations:
 * rdma_vers 1, credits never 0, no Read list in a reply, the Write list
 * echoed with the call's chunk and segment counts, handles and offsets,
 * lengths no larger than offered and filled in order, bytes past an echoed
 * length (and the Linux 4-byte pad segment) never written, RDMA_MSG without
 * Reply chunk bytes, RDMA_NOMSG with a non-empty Reply chunk and nothing
 * after the header, exact RDMA_ERROR lengths, Send-With-Invalidate only when
 * offered and only of one of the call's rkeys.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fabric/fab.h"
#include "support/rr_wire.h"

namespace rrtest {

/* RFC 8166 section 4.2 */
enum : uint32_t {
	RDMA_MSG = 0,
	RDMA_NOMSG = 1,
	RDMA_MSGP = 2,
	RDMA_DONE = 3,
	RDMA_ERROR = 4,
	ERR_VERS = 1,
	ERR_CHUNK = 2,
};

/* RFC 8797 section 4 */
constexpr uint32_t kCmPrivMagic = 0xf6ab0e18;
constexpr uint8_t kCmPrivFlagSndWInvOk = 0x01;

/* The CM private data the requester sends (and, decoded, what it got back). */
struct CmPriv {
	bool present = true;
	uint32_t magic = kCmPrivMagic;
	uint8_t version = 1;
	uint8_t flags = kCmPrivFlagSndWInvOk;
	uint32_t send_size = 4096;	/* bytes; sent as (n >> 10) - 1 */
	uint32_t recv_size = 4096;
	std::vector<uint8_t> raw;	/* when non-empty, sent instead of the above */

	std::vector<uint8_t> encode() const;
	/* false when @p is not a valid RFC 8797 message (short, bad magic/version). */
	bool decode(const uint8_t *p, size_t n);
};

struct RequesterOptions {
	std::string addr;		/* fab address: unix:PATH or tcp:HOST:PORT */
	const char *provider = nullptr;	/* nullptr: RPCRDMA_FABRIC, else soft */
	CmPriv priv;
	uint32_t recv_bufs = 160;	/* receives kept posted */
	uint32_t max_requests = 128;	/* rdma_credit asked for in our calls */
	uint8_t responder_resources = 16;	/* RDMA Reads the server may have in flight */
	uint8_t initiator_depth = 0;	/* RDMA Reads we issue: none, like Linux */
	int connect_timeout_ms = 5000;
	/* receive buffer size actually posted; 0: the advertised priv.recv_size
	 * (a test may post smaller buffers than it advertised) */
	uint32_t recv_buf_size = 0;
	/* RNR retries the server's Sends get (7: for ever); and none of our
	 * receives posted, so that every Send to us waits in RNR retry. */
	uint8_t rnr_retry_count = 0;
	bool hold_receives = false;
	/* A fabric shared by many requesters (one watcher thread for all, as a
	 * client host has one device); the requester does not close it.
	 * nullptr: a fabric of its own. */
	fab_fabric *fabric = nullptr;
};

/*
 * A reverse-direction RPC Call (RFC 8167 section 4.1) the server sent on this
 * connection: RDMA_MSG, no chunks, RPC msg_type CALL. Its rdma_xid is in the
 * server's own XID space and is answered, not matched to our calls.
 */
struct BcCall {
	uint32_t rdma_xid = 0;
	uint32_t credits = 0;	/* the server's rdma_credit: backchannel slots it asks for */
	std::vector<uint8_t> rpc;	/* the RPC Call message */
	std::vector<std::string> violations;
};

/* A registered buffer owned by the requester (freed when the last user drops it). */
struct Region {
	uint8_t *p = nullptr;
	size_t len = 0;
	fab_mr *mr = nullptr;
	uint32_t rkey() const
	{
		return mr->rkey;
	}
	uint64_t addr() const
	{
		return uint64_t(uintptr_t(p));
	}
	~Region();
};
using RegionP = std::shared_ptr<Region>;

/* One Write chunk offered for the reply. */
struct WriteChunkSpec {
	std::vector<uint32_t> segs;	/* segment lengths, each its own registration */
	bool pad = false;		/* append the Linux client's 4-byte pad segment */
};

/* How a Call goes out and which reply resources it offers. */
struct CallSpec {
	enum Mode { INLINE, READ, LONG } mode = INLINE;
	/*
	 * READ and LONG: data items of the RPC message moved into Read chunks.
	 * pos is the byte offset of the item's data (after its XDR length word)
	 * in the RPC message and len its length without pad; the XDR pad that
	 * follows in the message is dropped from the inline stream. With LONG,
	 * positions index the Position-Zero stream, which then omits the items.
	 */
	struct Item {
		size_t pos;
		size_t len;
	};
	std::vector<Item> reads;
	uint32_t read_segs = 1;		/* segments per Read chunk */
	bool read_len_roundup = false;	/* chunk length includes the XDR pad */
	bool reads_reversed = false;	/* Read list entries in reverse order on the wire */
	uint32_t pz_segs = 1;		/* LONG: segments of the Position-Zero chunk */
	std::vector<WriteChunkSpec> writes;
	std::vector<uint32_t> reply;	/* Reply chunk segment lengths; empty: none */
	uint32_t vers = 1;		/* rdma_vers to send */
	bool force = false;		/* send even past the credit grant or inline size */
};

struct Reply {
	uint32_t xid = 0, vers = 0, credits = 0, proc = 0;
	uint32_t err = 0, vers_low = 0, vers_high = 0;	/* RDMA_ERROR */
	std::vector<std::vector<Seg>> write_echo;	/* as received */
	bool has_reply_echo = false;
	std::vector<Seg> reply_echo;
	std::vector<uint8_t> raw;	/* the received Send */
	size_t hdr_len = 0;
	std::vector<uint8_t> rpc;	/* the RPC Reply: inline, or gathered from the Reply chunk */
	std::vector<std::vector<uint8_t>> write_data;	/* bytes written per Write chunk */
	bool with_inv = false;
	uint32_t inv_rkey = 0;
	std::set<uint32_t> call_rkeys;	/* distinct rkeys the call carried */
	std::vector<std::string> violations;	/* protocol faults seen in this reply */
	bool solicited = false;		/* matched a posted call */

	bool ok() const
	{
		return violations.empty();
	}
	std::string describe() const;
};

class Requester {
      public:
	static std::unique_ptr<Requester> connect(const RequesterOptions &o, std::string *err);
	/*
	 * Send the connection request and return without waiting for the
	 * answer, so that one thread can have thousands in flight (a reconnect
	 * storm); progress() then moves it to connected() or connect_failed().
	 * nullptr only when the request could not be sent at all.
	 */
	static std::unique_ptr<Requester> start(const RequesterOptions &o, std::string *err);
	/* The server refused (REJECTED) or the connect failed (CONNECT_ERROR,
	 * or a disconnect before it was established). */
	bool connect_failed() const
	{
		return failed_;
	}
	/* The failure was the server's REJECTED, not a transport error. */
	bool rejected() const
	{
		return rejected_;
	}
	~Requester();
	Requester(const Requester &) = delete;
	Requester &operator=(const Requester &) = delete;

	/* Register @len bytes (filled with @fill) with @access (enum fab_access). */
	RegionP reg(size_t len, unsigned access, uint8_t fill = 0);

	/*
	 * Send the RPC message @rpc (its first word is the xid, used as rdma_xid)
	 * shaped by @spec. Returns the xid (>= 0), -EAGAIN when the grant is used
	 * up, -EMSGSIZE when the Send exceeds the inline size (unless spec.force),
	 * -ENOTCONN or another negative errno.
	 */
	int64_t post(const std::vector<uint8_t> &rpc, const CallSpec &spec);
	/*
	 * Send raw transport bytes as one Send. With @expect_reply the message
	 * counts against the credit grant and a reply with @xid is awaited;
	 * @keep holds regions the header names until then.
	 */
	int post_raw(const std::vector<uint8_t> &bytes, uint32_t xid, bool expect_reply,
		     bool force = false, std::vector<RegionP> keep = {});

	/* Wait for the reply to @xid; false on timeout or disconnect. */
	bool wait(uint32_t xid, Reply *out, int timeout_ms = 5000);
	/* Wait for any reply that matched no posted call. */
	bool wait_unsolicited(Reply *out, int timeout_ms);
	/*
	 * Reverse-direction calls (RFC 8167). They never count as replies and
	 * never change the forward grant. With a handler set, progress() hands
	 * each one to it (outside completion processing, so the handler may send);
	 * otherwise they queue for wait_bc_call().
	 */
	using BcHandler = std::function<void(Requester &, const BcCall &)>;
	void set_bc_handler(BcHandler h)
	{
		bc_handler_ = std::move(h);
	}
	bool wait_bc_call(BcCall *out, int timeout_ms);
	/* Answer a reverse-direction call: RDMA_MSG with its rdma_xid and @credits
	 * (our backchannel grant), then the RPC Reply @rpc inline. */
	int send_bc_reply(uint32_t rdma_xid, const std::vector<uint8_t> &rpc, uint32_t credits = 2);
	/* Refuse it: RDMA_ERROR / ERR_CHUNK (or ERR_VERS 1..1) with its rdma_xid. */
	int send_bc_error(uint32_t rdma_xid, uint32_t err = ERR_CHUNK, uint32_t credits = 2);
	uint64_t bc_calls_seen() const
	{
		return bc_seen_;
	}
	/* post + wait. */
	bool call(const std::vector<uint8_t> &rpc, const CallSpec &spec, Reply *out,
		  int timeout_ms = 5000);

	/* Handle completions and CM events for up to @timeout_ms; returns events handled. */
	int progress(int timeout_ms);
	bool connected() const
	{
		return connected_;
	}
	bool wait_disconnected(int timeout_ms);
	/* fab_disconnect (also after the QP failed, as the Linux client does). */
	void disconnect();

	uint32_t next_xid()
	{
		return xid_++;
	}
	uint32_t grant() const
	{
		return grant_;
	}
	uint32_t outstanding() const
	{
		return uint32_t(pending_.size());
	}
	/* Replies whose credit field was 0 (RFC 8166 section 3.3.1 forbids). */
	uint64_t zero_grants() const
	{
		return zero_grants_;
	}
	bool server_priv_valid() const
	{
		return srv_priv_valid_;
	}
	const CmPriv &server_priv() const
	{
		return srv_priv_;
	}
	uint32_t inline_send() const
	{
		return inline_send_;
	}
	uint32_t inline_recv() const
	{
		return inline_recv_;
	}
	/* Work requests a test posts itself on conn() take a wr_id from
	 * kTestWrBase up; those below are the requester's own. */
	static constexpr uint64_t kTestWrBase = 1ull << 50;
	fab_conn *conn() const
	{
		return conn_;
	}
	/* The completion status of such a request: false until it completed. */
	bool completion_of(uint64_t wr_id, int *status) const
	{
		auto it = test_wr_done_.find(wr_id);
		if (it == test_wr_done_.end())
			return false;
		*status = it->second;
		return true;
	}
	fab_fabric *fabric() const
	{
		return fab_;
	}
	const std::string &last_error() const
	{
		return err_;
	}

      private:
	Requester() = default;
	struct SegRef {
		RegionP r;
		Seg s;
	};
	struct Pending {
		uint32_t xid;
		std::vector<RegionP> keep;
		std::vector<std::vector<SegRef>> writes;
		std::vector<bool> write_pad;	/* last segment of chunk i is the pad */
		bool has_reply = false;
		std::vector<SegRef> reply;
		std::set<uint32_t> rkeys;
	};

	int setup(const RequesterOptions &o, bool wait_established);
	int drain();
	void on_recv(const uint8_t *p, size_t n, bool with_inv, uint32_t inv_rkey);
	void check_reply(Reply &r, Pending *pd);
	int send_bytes(const std::vector<uint8_t> &b);
	int post_recv(uint32_t i);

	RequesterOptions opt_;
	fab_fabric *fab_ = nullptr;
	fab_channel *ch_ = nullptr;
	fab_cq *cq_ = nullptr;
	fab_pd *pd_ = nullptr;
	fab_conn *conn_ = nullptr;
	bool established_ = false;
	bool failed_ = false;
	bool rejected_ = false;
	bool own_fab_ = true;
	bool connected_ = false;
	bool disc_called_ = false;
	std::string err_;

	RegionP recv_region_;
	uint32_t recv_size_ = 0;
	uint64_t send_seq_ = 0;
	std::map<uint64_t, RegionP> sends_;	/* in flight, by wr_id */
	std::map<uint64_t, int> test_wr_done_;	/* completions of a test's own WRs */

	std::map<uint32_t, Pending> pending_;
	std::map<uint32_t, Reply> done_;
	std::vector<Reply> unsolicited_;
	std::vector<BcCall> bc_calls_;
	BcHandler bc_handler_;
	uint64_t bc_seen_ = 0;
	bool in_bc_handler_ = false;
	void run_bc_handler();

	uint32_t xid_ = 0x10000000;
	uint32_t grant_ = 1;	/* RFC 8166 section 3.3.3: one until the first reply */
	uint64_t zero_grants_ = 0;
	CmPriv my_priv_;
	bool my_priv_valid_ = false;
	CmPriv srv_priv_;
	bool srv_priv_valid_ = false;
	uint32_t inline_send_ = 1024;
	uint32_t inline_recv_ = 1024;
};

/*
 * Pull the opaque<> result at @off of @r.rpc: inline, or - when the message
 * ends with its length word - from Write chunk @chunk. Returns false (with
 * @why) when neither matches.
 */
bool reply_opaque(const Reply &r, size_t off, size_t chunk, std::vector<uint8_t> *data,
		  std::string *why);

} // namespace rrtest
