// SPDX-License-Identifier: MIT
/*
 * nfs4_callback.h - the test client's NFSv4.1 backchannel server (RFC 8881
 * section 20, RFC 8167): it answers reverse-direction calls that arrive on
 * the client's own RPC-over-RDMA connection (rrtest::Requester).
 *
 * CB_NULL and CB_COMPOUND (CB_SEQUENCE first, then CB_RECALL, CB_RECALL_ANY,
 * CB_GETATTR-less NOTSUPP for the rest) are decoded strictly and answered
 * inline with an RDMA_MSG carrying the call's rdma_xid. A policy can make it
 * answer a given callback with RDMA_ERROR / ERR_CHUNK instead, or not at all.
 *
 * Slot rules of the replier (RFC 8881 section 2.10.6.1): a CB_SEQUENCE with
 * the slot's sequence + 1 is new; equal is a retry (we cache nothing:
 * NFS4ERR_RETRY_UNCACHED_REP); anything else NFS4ERR_SEQ_MISORDERED. A
 * callback refused with ERR_CHUNK counts as executed and its reply lost
 * (err_chunk_executes), the mirror image of the server's ERR_CHUNK after a
 * COMPOUND ran (RFC 8267 section 4.5): the requester must retire the slot
 * with its sequence advanced.
 *
 * Recalls are only recorded here: the test returns the delegation on the
 * fore channel (Nfs4::delegreturn), as a real client does after answering
 * NFS4_OK.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "support/nfs_client.h"

namespace nfsc
{

enum : uint32_t {
	CB_NULL_PROC = 0,
	CB_COMPOUND_PROC = 1,
	OP_CB_GETATTR = 3,
	OP_CB_RECALL = 4,
	OP_CB_RECALL_ANY = 8,
	OP_CB_SEQUENCE = 11,
	NFS4ERR_DELAY = 10008,
	NFS4ERR_NOTSUPP_ = 10004,
	NFS4ERR_BADSESSION_ = 10052,
	NFS4ERR_BADSLOT_ = 10053,
	NFS4ERR_SEQ_MISORDERED_ = 10063,
	NFS4ERR_RETRY_UNCACHED_REP_ = 10068,
	NFS4ERR_OP_ILLEGAL_ = 10044,
};

struct CbRecord {
	/* DEFER: answer later, with send_deferred() (a late reply) */
	enum Action { ANSWER, ERR_CHUNK, IGNORE, DEFER };
	uint32_t rdma_xid = 0;
	uint32_t rdma_credits = 0;
	size_t wire_len = 0; /* RPC message bytes */
	uint32_t prog = 0, vers = 0, proc = 0, cred_flavor = 0;
	uint32_t minor = 0;
	std::vector<uint32_t> ops;
	bool has_seq = false;
	uint8_t sessionid[16] = {};
	uint32_t seq = 0, slot = 0, highest_slot = 0;
	bool has_recall = false;
	Stateid recall_sid;
	bool truncate = false;
	Fh recall_fh;
	Action action = ANSWER;
	uint32_t status = 0;	 /* CB_COMPOUND status answered (ANSWER only) */
	uint32_t seq_status = 0; /* CB_SEQUENCE result */
	std::vector<std::string> violations;
	std::string describe() const;
};

class CbServer
{
      public:
	CbServer(rrtest::Requester &r, uint32_t prog);
	~CbServer();
	CbServer(const CbServer &) = delete;
	CbServer &operator=(const CbServer &) = delete;

	/* The session whose back channel this is (CB_SEQUENCE must name it). */
	void set_session(const uint8_t sid[16]);
	/* What to do with a decoded callback; default: answer it. */
	std::function<CbRecord::Action(const CbRecord &)> policy;
	/* Count a callback refused with ERR_CHUNK as executed (slot advanced). */
	bool err_chunk_executes = true;
	/* Status to answer CB_RECALL with (NFS4_OK by default). */
	uint32_t recall_status = 0;

	/* Drive the connection until @done() or @timeout_ms; true if done. */
	bool serve_until(const std::function<bool()> &done, int timeout_ms);
	size_t count_op(uint32_t op) const;
	size_t count_proc(uint32_t proc) const;
	const std::vector<CbRecord> &log() const
	{
		return log_;
	}
	uint32_t slot_seq(uint32_t slot) const
	{
		return slot < kSlots ? seq_[slot] : 0;
	}
	/* send the replies of DEFERred callbacks now; how many went */
	size_t send_deferred();
	size_t deferred() const
	{
		return deferred_.size();
	}
	/* every violation seen in any callback, for EXPECT messages */
	std::string violations() const;

      private:
	static constexpr uint32_t kSlots = 16;
	void on_call(rrtest::Requester &r, const rrtest::BcCall &c);
	rrtest::Requester &r_;
	uint32_t prog_;
	uint8_t sid_[16] = {};
	bool have_sid_ = false;
	uint32_t seq_[kSlots] = {};
	std::vector<CbRecord> log_;
	std::vector<std::pair<uint32_t, Bytes>> deferred_; /* rdma_xid, RPC reply */
};

} // namespace nfsc
