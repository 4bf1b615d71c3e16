// SPDX-License-Identifier: MIT
/*
 * nfs4_callback.cc - see nfs4_callback.h.
 */
#include "support/nfs4_callback.h"

#include <chrono>
#include <cstring>
#include <sstream>

namespace nfsc
{

using nfsxdr::Xdr;

std::string CbRecord::describe() const
{
	std::ostringstream o;
	o << "rdma_xid " << std::hex << rdma_xid << std::dec << " proc " << proc << " ops [";
	for (size_t i = 0; i < ops.size(); i++)
		o << (i ? "," : "") << ops[i];
	o << "]";
	if (has_seq)
		o << " seq " << seq << " slot " << slot;
	o << " action "
	  << (action == ANSWER	    ? "answer"
	      : action == ERR_CHUNK ? "ERR_CHUNK"
	      : action == DEFER	    ? "defer"
				    : "ignore")
	  << " status " << status << " seq_status " << seq_status;
	for (const auto &v : violations)
		o << " VIOLATION: " << v;
	return o.str();
}

CbServer::CbServer(rrtest::Requester &r, uint32_t prog) : r_(r), prog_(prog)
{
	r_.set_bc_handler(
	    [this](rrtest::Requester &rq, const rrtest::BcCall &c) { on_call(rq, c); });
}

CbServer::~CbServer()
{
	r_.set_bc_handler(nullptr);
}

void CbServer::set_session(const uint8_t sid[16])
{
	memcpy(sid_, sid, 16);
	have_sid_ = true;
}

bool CbServer::serve_until(const std::function<bool()> &done, int timeout_ms)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
	while (!done()) {
		auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
				end - std::chrono::steady_clock::now())
				.count();
		if (left <= 0 || !r_.connected())
			return done();
		r_.progress(left > 50 ? 50 : int(left));
	}
	return true;
}

size_t CbServer::send_deferred()
{
	size_t n = 0;
	for (const auto &d : deferred_)
		n += r_.send_bc_reply(d.first, d.second, 2) == 0;
	deferred_.clear();
	return n;
}

size_t CbServer::count_op(uint32_t op) const
{
	size_t n = 0;
	for (const auto &c : log_)
		for (uint32_t o : c.ops)
			n += o == op;
	return n;
}

size_t CbServer::count_proc(uint32_t proc) const
{
	size_t n = 0;
	for (const auto &c : log_)
		n += c.proc == proc;
	return n;
}

std::string CbServer::violations() const
{
	std::string s;
	for (const auto &c : log_)
		for (const auto &v : c.violations)
			s += v + "; ";
	return s;
}

/* RPC Reply header, accepted, AUTH_NONE verifier (RFC 5531 section 9). */
static void reply_header(Xdr &x, uint32_t xid, uint32_t accept_stat)
{
	x.u32(xid);
	x.u32(1); /* REPLY */
	x.u32(0); /* MSG_ACCEPTED */
	x.u32(0); /* AUTH_NONE */
	x.u32(0);
	x.u32(accept_stat);
}

void CbServer::on_call(rrtest::Requester &r, const rrtest::BcCall &c)
{
	CbRecord rec;
	rec.rdma_xid = c.rdma_xid;
	rec.rdma_credits = c.credits;
	rec.wire_len = c.rpc.size();
	rec.violations = c.violations;
	TransportReply tr;
	tr.rpc = c.rpc;
	Dec d(tr);
	uint32_t xid = d.u32();
	d.u32(); /* CALL, checked by the requester */
	uint32_t rpcvers = d.u32();
	rec.prog = d.u32();
	rec.vers = d.u32();
	rec.proc = d.u32();
	rec.cred_flavor = d.u32();
	d.opaque(400);
	d.u32(); /* verifier */
	d.opaque(400);
	if (!d.ok())
		rec.violations.push_back("RPC call header: " + d.why());
	if (rpcvers != 2)
		rec.violations.push_back("rpcvers " + std::to_string(rpcvers));
	if (rec.prog != prog_)
		rec.violations.push_back("callback program " + std::to_string(rec.prog) +
					 ", CREATE_SESSION asked for " + std::to_string(prog_));
	if (rec.vers != 1)
		rec.violations.push_back("callback version " + std::to_string(rec.vers) +
					 " (RFC 8881 errata 2291: 1)");

	Xdr res;
	uint32_t accept = 0;
	std::string tag;
	uint32_t nres = 0;
	uint32_t status = 0;
	Xdr ops_out;
	if (!d.ok() || rec.prog != prog_ || rec.vers != 1) {
		accept = rec.prog != prog_ ? 1 /* PROG_UNAVAIL */ : 2 /* PROG_MISMATCH */;
	} else if (rec.proc == CB_NULL_PROC) {
		if (!d.end())
			rec.violations.push_back("CB_NULL with arguments: " + d.why());
	} else if (rec.proc == CB_COMPOUND_PROC) {
		tag = d.string(1024);
		rec.minor = d.u32();
		d.u32(); /* callback_ident: ignored in 4.1 */
		uint32_t n = d.u32();
		if (!d.ok() || n > 64) {
			rec.violations.push_back("CB_COMPOUND4args: " + d.why());
			accept = 4; /* GARBAGE_ARGS */
		}
		if (rec.minor < 1)
			rec.violations.push_back("CB_COMPOUND minorversion 0 on a 4.1 backchannel");
		for (uint32_t i = 0; accept == 0 && i < n && status == 0; i++) {
			uint32_t op = d.u32();
			rec.ops.push_back(op);
			uint32_t st = 0;
			ops_out.u32(op);
			switch (op) {
			case OP_CB_SEQUENCE: {
				if (i != 0)
					rec.violations.push_back("CB_SEQUENCE not first");
				rec.has_seq = true;
				d.fixed(16, rec.sessionid);
				rec.seq = d.u32();
				rec.slot = d.u32();
				rec.highest_slot = d.u32();
				d.boolean(); /* cachethis */
				uint32_t nl = d.u32();
				for (uint32_t k = 0; k < nl && k < 16 && d.ok(); k++) {
					d.skip(16);
					uint32_t nr = d.u32();
					for (uint32_t m = 0; m < nr && m < 64 && d.ok(); m++)
						d.skip(8);
				}
				if (!d.ok())
					break;
				if (have_sid_ && memcmp(rec.sessionid, sid_, 16)) {
					st = NFS4ERR_BADSESSION_;
				} else if (rec.slot >= kSlots) {
					st = NFS4ERR_BADSLOT_;
				} else if (rec.seq == seq_[rec.slot] + 1) {
					st = 0;
				} else if (rec.seq == seq_[rec.slot]) {
					st = NFS4ERR_RETRY_UNCACHED_REP_;
				} else {
					st = NFS4ERR_SEQ_MISORDERED_;
				}
				rec.seq_status = st;
				if (st)
					rec.violations.push_back(
					    "CB_SEQUENCE slot " + std::to_string(rec.slot) +
					    " seq " + std::to_string(rec.seq) +
					    " but the slot is at " +
					    std::to_string(rec.slot < kSlots ? seq_[rec.slot] : 0) +
					    ": status " + std::to_string(st));
				ops_out.u32(st);
				if (st == 0) {
					ops_out.fixed(Bytes(rec.sessionid, rec.sessionid + 16));
					ops_out.u32(rec.seq);
					ops_out.u32(rec.slot);
					ops_out.u32(kSlots - 1);
					ops_out.u32(kSlots - 1);
				}
				break;
			}
			case OP_CB_RECALL:
				if (!rec.has_seq)
					rec.violations.push_back("CB_RECALL without CB_SEQUENCE");
				rec.has_recall = true;
				rec.recall_sid.seqid = d.u32();
				d.fixed(12, rec.recall_sid.other);
				rec.truncate = d.boolean();
				rec.recall_fh.b = d.opaque(128);
				st = recall_status;
				ops_out.u32(st);
				break;
			case OP_CB_RECALL_ANY:
				d.u32();
				{
					uint32_t nw = d.u32();
					for (uint32_t k = 0; k < nw && k < 8 && d.ok(); k++)
						d.u32();
				}
				ops_out.u32(0);
				break;
			default:
				/* we cannot skip arguments we do not know: stop here */
				st = NFS4ERR_NOTSUPP_;
				ops_out.u32(st);
				n = i + 1;
				break;
			}
			if (!d.ok()) {
				rec.violations.push_back("CB op " + std::to_string(op) + ": " +
							 d.why());
				accept = 4;
				break;
			}
			nres++;
			status = st;
		}
		if (accept == 0 && status == 0 && !d.end())
			rec.violations.push_back("CB_COMPOUND: trailing bytes: " + d.why());
	} else {
		accept = 3; /* PROC_UNAVAIL */
	}
	rec.status = status;

	if (policy)
		rec.action = policy(rec);
	/* the slot's sequence moves when the CB_SEQUENCE executed */
	bool executed = rec.has_seq && rec.seq_status == 0 && rec.slot < kSlots;
	if (executed && (rec.action == CbRecord::ANSWER || rec.action == CbRecord::DEFER ||
			 (rec.action == CbRecord::ERR_CHUNK && err_chunk_executes)))
		seq_[rec.slot] = rec.seq;

	if (rec.action == CbRecord::ANSWER || rec.action == CbRecord::DEFER) {
		reply_header(res, xid, accept);
		if (accept == 0 && rec.proc == CB_COMPOUND_PROC) {
			res.u32(status);
			res.string(tag);
			res.u32(nres);
			res.buf.insert(res.buf.end(), ops_out.buf.begin(), ops_out.buf.end());
		}
		if (rec.action == CbRecord::DEFER)
			deferred_.emplace_back(c.rdma_xid, res.buf);
		else if (r.send_bc_reply(c.rdma_xid, res.buf, 2))
			rec.violations.push_back("could not send the callback reply: " +
						 r.last_error());
	} else if (rec.action == CbRecord::ERR_CHUNK) {
		if (r.send_bc_error(c.rdma_xid, rrtest::ERR_CHUNK, 2))
			rec.violations.push_back("could not send ERR_CHUNK: " + r.last_error());
	}
	if (getenv("NFSC_DEBUG"))
		fprintf(stderr, "nfsc: callback %s\n", rec.describe().c_str());
	log_.push_back(std::move(rec));
}

} // namespace nfsc
