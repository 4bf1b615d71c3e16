// SPDX-License-Identifier: MIT
/*
 * rr_requester.cc - the independent test requester (see rr_requester.h).
 * Written from RFC 8166 sections 3-4 and RFC 8797 section 4.
 */
#include "support/rr_requester.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace rrtest {

namespace {

constexpr uint64_t kSendWrBase = 1ull << 40;
constexpr uint8_t kWriteFill = 0xa5;	/* Write chunk memory before the reply */
constexpr uint8_t kPadFill = 0xee;	/* the 4-byte pad segment */
constexpr uint8_t kReplyFill = 0xc3;	/* Reply chunk memory */
constexpr uint32_t kMaxEchoSegs = 4096;	/* sanity bound while decoding replies */

using Clock = std::chrono::steady_clock;

int ms_left(Clock::time_point end)
{
	auto d = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
	return d < 0 ? 0 : int(d);
}

size_t roundup4(size_t n)
{
	return (n + 3) & ~size_t(3);
}

uint32_t be32(const uint8_t *p)
{
	return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

/* Split @total bytes into @n segments (each at least 1 byte when possible). */
std::vector<uint32_t> split(size_t total, uint32_t n)
{
	std::vector<uint32_t> v;
	if (n == 0)
		n = 1;
	if (n > total && total > 0)
		n = uint32_t(total);
	size_t base = total / n, extra = total % n;
	for (uint32_t i = 0; i < n; i++)
		v.push_back(uint32_t(base + (i < extra ? 1 : 0)));
	return v;
}

uint8_t size_code(uint32_t bytes)
{
	uint32_t v = bytes / 1024;
	return uint8_t(v ? v - 1 : 0);
}

} // namespace

/* --- RFC 8797 private data ------------------------------------------------ */

std::vector<uint8_t> CmPriv::encode() const
{
	if (!raw.empty())
		return raw;
	std::vector<uint8_t> b = {uint8_t(magic >> 24), uint8_t(magic >> 16), uint8_t(magic >> 8),
				  uint8_t(magic),	version,	    flags,
				  size_code(send_size), size_code(recv_size)};
	return b;
}

bool CmPriv::decode(const uint8_t *p, size_t n)
{
	if (n < 8)
		return false;
	magic = be32(p);
	version = p[4];
	flags = p[5];
	send_size = (uint32_t(p[6]) + 1) << 10;
	recv_size = (uint32_t(p[7]) + 1) << 10;
	present = true;
	return magic == kCmPrivMagic && version == 1;
}

/* --- regions -------------------------------------------------------------- */

Region::~Region()
{
	if (mr)
		fab_mr_dereg(mr);
	free(p);
}

RegionP Requester::reg(size_t len, unsigned access, uint8_t fill)
{
	auto r = std::make_shared<Region>();
	size_t alloc = roundup4(len ? len : 4);
	void *p = nullptr;
	if (posix_memalign(&p, 64, alloc))
		return nullptr;
	memset(p, fill, alloc);
	r->p = static_cast<uint8_t *>(p);
	r->len = len;
	int rc = fab_mr_reg(pd_, p, len ? len : 4, access, &r->mr);
	if (rc) {
		r->mr = nullptr;
		err_ = std::string("fab_mr_reg: ") + fab_last_error();
		return nullptr;
	}
	return r;
}

/* --- connection ----------------------------------------------------------- */

std::unique_ptr<Requester> Requester::connect(const RequesterOptions &o, std::string *err)
{
	std::unique_ptr<Requester> r(new Requester());
	int rc = r->setup(o, true);
	if (rc) {
		if (err)
			*err = r->err_;
		return nullptr;
	}
	return r;
}

std::unique_ptr<Requester> Requester::start(const RequesterOptions &o, std::string *err)
{
	std::unique_ptr<Requester> r(new Requester());
	int rc = r->setup(o, false);
	if (rc) {
		if (err)
			*err = r->err_;
		return nullptr;
	}
	return r;
}

int Requester::setup(const RequesterOptions &o, bool wait_established)
{
	opt_ = o;
	/* What the server will make of our private data (raw may be garbage). */
	my_priv_ = o.priv;
	my_priv_valid_ = o.priv.present;
	if (o.priv.present && !o.priv.raw.empty())
		my_priv_valid_ = my_priv_.decode(o.priv.raw.data(), o.priv.raw.size());
	int rc = 0;
	if (o.fabric) {
		fab_ = o.fabric;
		own_fab_ = false;
	} else {
		rc = fab_open(o.provider, &fab_);
	}
	if (rc) {
		err_ = std::string("fab_open: ") + fab_last_error();
		return rc;
	}
	if ((rc = fab_channel_create(fab_, &ch_)) || (rc = fab_cq_create(fab_, int(o.recv_bufs) + 512, &cq_)) ||
	    (rc = fab_pd_get(fab_, &pd_))) {
		err_ = std::string("fabric setup: ") + fab_last_error();
		return rc;
	}
	recv_size_ = o.priv.recv_size < 1024 ? 1024 : o.priv.recv_size;
	if (o.recv_buf_size)
		recv_size_ = o.recv_buf_size;
	recv_region_ = reg(size_t(recv_size_) * o.recv_bufs, FAB_ACCESS_LOCAL_WRITE);
	if (!recv_region_)
		return -ENOMEM;

	/* Sized from the device, as the Linux client does (xprtrdma: Read
	 * depth at most the device's max_qp_rd_atom): every send here is one
	 * buffer, so any device's SGEs do. */
	fab_limits lim;
	rc = fab_device_limits(fab_, &lim);
	if (rc) {
		err_ = std::string("fab_device_limits: ") + fab_last_error();
		return rc;
	}
	fab_qp_caps caps = {};
	caps.max_send_wr = 512;
	caps.max_recv_wr = o.recv_bufs;
	caps.max_send_sge = 1;
	caps.max_recv_sge = 1;
	std::vector<uint8_t> pd = o.priv.encode();
	fab_conn_param cp = {};
	if (o.priv.present) {
		cp.private_data = pd.data();
		cp.private_data_len = uint8_t(pd.size());
	}
	cp.responder_resources = uint8_t(std::min<uint32_t>(o.responder_resources, lim.max_rd_atom));
	cp.initiator_depth = uint8_t(std::min<uint32_t>(o.initiator_depth, lim.max_rd_atom));
	/* 0 like the Linux client: every RNR is visible */
	cp.rnr_retry_count = o.rnr_retry_count;
	cp.retry_count = 7;
	rc = fab_connect(fab_, ch_, o.addr.c_str(), cq_, cq_, &caps, &cp, &conn_);
	if (rc) {
		err_ = std::string("fab_connect: ") + fab_last_error();
		conn_ = nullptr;
		return rc;
	}
	for (uint32_t i = 0; !o.hold_receives && i < o.recv_bufs; i++) {
		rc = post_recv(i);
		if (rc) {
			err_ = std::string("post_recv: ") + fab_last_error();
			return rc;
		}
	}
	if (!wait_established)
		return 0;
	auto end = Clock::now() + std::chrono::milliseconds(o.connect_timeout_ms);
	while (!established_ && !failed_ && ms_left(end) > 0)
		progress(ms_left(end));
	if (!established_) {
		if (err_.empty())
			err_ = "connect timed out";
		return -ETIMEDOUT;
	}
	return 0;
}

Requester::~Requester()
{
	if (conn_) {
		if (!disc_called_)
			fab_disconnect(conn_);
		fab_conn_destroy(conn_);
	}
	pending_.clear();
	done_.clear();
	sends_.clear();
	test_wr_done_.clear();
	recv_region_.reset();
	if (cq_)
		fab_cq_destroy(cq_);
	if (ch_)
		fab_channel_destroy(ch_);
	if (fab_ && own_fab_)
		fab_close(fab_);
}

void Requester::disconnect()
{
	if (conn_ && !disc_called_)
		fab_disconnect(conn_);
	disc_called_ = true;
	connected_ = false;
}

bool Requester::wait_disconnected(int timeout_ms)
{
	auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
	while (connected_ && ms_left(end) > 0)
		progress(ms_left(end) > 50 ? 50 : ms_left(end));
	return !connected_;
}

int Requester::post_recv(uint32_t i)
{
	fab_sge sge = {recv_region_->p + size_t(i) * recv_size_, recv_size_, recv_region_->mr->lkey};
	fab_recv_wr wr = {};
	wr.wr_id = i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return fab_post_recv(conn_, &wr, nullptr);
}

int Requester::send_bytes(const std::vector<uint8_t> &b)
{
	if (!connected_)
		return -ENOTCONN;
	RegionP r = reg(b.size(), 0);
	if (!r)
		return -ENOMEM;
	if (!b.empty())
		memcpy(r->p, b.data(), b.size());
	fab_sge sge = {r->p, uint32_t(b.size()), r->mr->lkey};
	fab_send_wr wr = {};
	wr.wr_id = kSendWrBase + ++send_seq_;
	wr.opcode = FAB_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.signaled = true;
	int rc = fab_post_send(conn_, &wr, nullptr);
	if (rc) {
		err_ = std::string("fab_post_send: ") + fab_last_error();
		return rc;
	}
	sends_[wr.wr_id] = r;
	return 0;
}

int Requester::drain()
{
	int handled = 0;
	fab_wc wc[32];
	int n;

	while (cq_ && (n = fab_cq_poll(cq_, wc, 32)) > 0) {
		for (int i = 0; i < n; i++) {
			handled++;
			if (wc[i].wr_id >= kSendWrBase) {
				if (wc[i].wr_id >= kTestWrBase)
					test_wr_done_[wc[i].wr_id] = wc[i].status;
				else
					sends_.erase(wc[i].wr_id);
				if (wc[i].status != FAB_WC_SUCCESS) {
					if (connected_)
						err_ = "send completed with status " +
						       std::to_string(wc[i].status);
					connected_ = false;
				}
				continue;
			}
			if (wc[i].status != FAB_WC_SUCCESS) {
				if (connected_ && wc[i].status != FAB_WC_WR_FLUSH_ERR)
					err_ = "receive completed with status " +
					       std::to_string(wc[i].status);
				connected_ = false;
				continue;
			}
			uint32_t idx = uint32_t(wc[i].wr_id);
			on_recv(recv_region_->p + size_t(idx) * recv_size_, wc[i].byte_len,
				wc[i].with_inv, wc[i].inv_rkey);
			if (connected_ && post_recv(idx))
				connected_ = false;
		}
	}
	fab_cm_event ev;
	while (ch_ && fab_channel_get_event(ch_, &ev) == 0) {
		handled++;
		switch (ev.type) {
		case FAB_CM_ESTABLISHED:
			established_ = true;
			connected_ = true;
			srv_priv_valid_ = srv_priv_.decode(ev.private_data, ev.private_data_len);
			if (srv_priv_valid_ && my_priv_valid_) {
				/* RFC 8797 section 4.2: each side's limit is the smaller one */
				inline_send_ = std::min(my_priv_.send_size, srv_priv_.recv_size);
				inline_recv_ = std::min(my_priv_.recv_size, srv_priv_.send_size);
			} else {
				inline_send_ = inline_recv_ = 1024;
			}
			break;
		case FAB_CM_REJECTED:
			failed_ = true;
			rejected_ = true;
			err_ = "connection rejected";
			break;
		case FAB_CM_CONNECT_ERROR:
			failed_ = true;
			err_ = "connect error " + std::to_string(ev.status);
			break;
		case FAB_CM_DISCONNECTED:
		case FAB_CM_DEVICE_REMOVAL:
		case FAB_CM_QP_ERROR:
			if (!established_ && !failed_) {
				failed_ = true; /* gone before it was up */
				err_ = "disconnected before established";
			}
			connected_ = false;
			break;
		default:
			break;
		}
	}
	return handled;
}

int Requester::progress(int timeout_ms)
{
	int n = drain();
	if (n) {
		run_bc_handler();
		return n;
	}
	fab_cq_arm(cq_);
	n = drain();
	if (n || timeout_ms <= 0) {
		run_bc_handler();
		return n;
	}
	pollfd fds[2] = {{fab_channel_fd(ch_), POLLIN, 0}, {fab_cq_fd(cq_), POLLIN, 0}};
	int prc = poll(fds, 2, timeout_ms);
	if (prc > 0 && (fds[1].revents & POLLIN))
		fab_cq_get_event(cq_);
	n = drain();
	run_bc_handler();
	return n;
}

void Requester::run_bc_handler()
{
	if (!bc_handler_ || in_bc_handler_)
		return;
	in_bc_handler_ = true;
	while (!bc_calls_.empty()) {
		BcCall c = std::move(bc_calls_.front());
		bc_calls_.erase(bc_calls_.begin());
		bc_handler_(*this, c);
	}
	in_bc_handler_ = false;
}

bool Requester::wait_bc_call(BcCall *out, int timeout_ms)
{
	auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
	for (;;) {
		if (!bc_calls_.empty()) {
			*out = std::move(bc_calls_.front());
			bc_calls_.erase(bc_calls_.begin());
			return true;
		}
		int left = ms_left(end);
		if (left <= 0 || !connected_)
			return false;
		drain(); /* not progress(): a handler would take the call */
		if (bc_calls_.empty()) {
			fab_cq_arm(cq_);
			if (!drain()) {
				pollfd fds[2] = {{fab_channel_fd(ch_), POLLIN, 0},
						 {fab_cq_fd(cq_), POLLIN, 0}};
				int prc = poll(fds, 2, left > 100 ? 100 : left);
				if (prc > 0 && (fds[1].revents & POLLIN))
					fab_cq_get_event(cq_);
				drain();
			}
		}
	}
}

int Requester::send_bc_reply(uint32_t rdma_xid, const std::vector<uint8_t> &rpc, uint32_t credits)
{
	std::vector<uint8_t> b;
	for (uint32_t w : {rdma_xid, 1u, credits, uint32_t(RDMA_MSG), 0u, 0u, 0u})
		for (int i = 3; i >= 0; i--)
			b.push_back(uint8_t(w >> (8 * i)));
	b.insert(b.end(), rpc.begin(), rpc.end());
	return send_bytes(b);
}

int Requester::send_bc_error(uint32_t rdma_xid, uint32_t err, uint32_t credits)
{
	std::vector<uint32_t> w = {rdma_xid, 1u, credits, uint32_t(RDMA_ERROR), err};
	if (err == ERR_VERS) {
		w.push_back(1);
		w.push_back(1);
	}
	std::vector<uint8_t> b;
	for (uint32_t v : w)
		for (int i = 3; i >= 0; i--)
			b.push_back(uint8_t(v >> (8 * i)));
	return send_bytes(b);
}

/* --- calls ---------------------------------------------------------------- */

int64_t Requester::post(const std::vector<uint8_t> &rpc, const CallSpec &spec)
{
	if (rpc.size() < 4)
		return -EINVAL;
	uint32_t xid = be32(rpc.data());
	if (pending_.count(xid))
		return -EEXIST;
	if (!connected_)
		return -ENOTCONN;
	if (!spec.force && pending_.size() >= grant_)
		return -EAGAIN;

	Pending pd;
	pd.xid = xid;

	/* The items leave the stream; positions stay those of the whole message. */
	std::vector<CallSpec::Item> items = spec.reads;
	std::sort(items.begin(), items.end(),
		  [](const CallSpec::Item &a, const CallSpec::Item &b) { return a.pos < b.pos; });
	std::vector<uint8_t> stream;
	size_t at = 0;
	for (const auto &it : items) {
		if (it.pos < at || it.pos + it.len > rpc.size())
			return -EINVAL;
		stream.insert(stream.end(), rpc.begin() + at, rpc.begin() + it.pos);
		at = std::min(rpc.size(), it.pos + roundup4(it.len));
	}
	stream.insert(stream.end(), rpc.begin() + at, rpc.end());

	struct WireChunk {
		uint32_t pos;
		std::vector<Seg> segs;
	};
	std::vector<WireChunk> rchunks;
	auto add_read = [&](uint32_t pos, const uint8_t *data, size_t len, size_t chunk_len,
			    uint32_t nsegs) -> bool {
		WireChunk wc{pos, {}};
		size_t off = 0;
		for (uint32_t l : split(chunk_len, nsegs)) {
			RegionP r = reg(l, FAB_ACCESS_REMOTE_READ, 0);
			if (!r)
				return false;
			size_t ncopy = off < len ? std::min<size_t>(l, len - off) : 0;
			if (ncopy)
				memcpy(r->p, data + off, ncopy);
			wc.segs.push_back({r->rkey(), l, r->addr()});
			pd.rkeys.insert(r->rkey());
			pd.keep.push_back(r);
			off += l;
		}
		rchunks.push_back(wc);
		return true;
	};

	uint32_t proc = RDMA_MSG;
	if (spec.mode == CallSpec::LONG) {
		proc = RDMA_NOMSG;
		if (!add_read(0, stream.data(), stream.size(), stream.size(), spec.pz_segs))
			return -ENOMEM;
	}
	if (spec.mode != CallSpec::INLINE) {
		for (const auto &it : items) {
			size_t clen = spec.read_len_roundup ? roundup4(it.len) : it.len;
			if (!add_read(uint32_t(it.pos), rpc.data() + it.pos, it.len, clen,
				      spec.read_segs))
				return -ENOMEM;
		}
	}
	if (spec.reads_reversed)
		std::reverse(rchunks.begin(), rchunks.end());

	Wire h;
	h.fixed(xid, spec.vers, opt_.max_requests, proc);
	for (const auto &c : rchunks)
		for (const auto &s : c.segs)
			h.u32(1).u32(c.pos).seg(s);
	h.u32(0);

	for (const auto &w : spec.writes) {
		std::vector<SegRef> refs;
		for (uint32_t l : w.segs) {
			RegionP r = reg(l, FAB_ACCESS_REMOTE_WRITE | FAB_ACCESS_LOCAL_WRITE, kWriteFill);
			if (!r)
				return -ENOMEM;
			refs.push_back({r, {r->rkey(), l, r->addr()}});
		}
		if (w.pad) {
			RegionP r = reg(4, FAB_ACCESS_REMOTE_WRITE | FAB_ACCESS_LOCAL_WRITE, kPadFill);
			if (!r)
				return -ENOMEM;
			refs.push_back({r, {r->rkey(), 4, r->addr()}});
		}
		h.u32(1).u32(uint32_t(refs.size()));
		for (const auto &sr : refs) {
			h.seg(sr.s);
			pd.rkeys.insert(sr.s.handle);
		}
		pd.writes.push_back(refs);
		pd.write_pad.push_back(w.pad);
	}
	h.u32(0);

	if (!spec.reply.empty()) {
		pd.has_reply = true;
		for (uint32_t l : spec.reply) {
			RegionP r = reg(l, FAB_ACCESS_REMOTE_WRITE | FAB_ACCESS_LOCAL_WRITE, kReplyFill);
			if (!r)
				return -ENOMEM;
			pd.reply.push_back({r, {r->rkey(), l, r->addr()}});
			pd.rkeys.insert(r->rkey());
		}
		h.u32(1).u32(uint32_t(pd.reply.size()));
		for (const auto &sr : pd.reply)
			h.seg(sr.s);
	} else {
		h.u32(0);
	}
	if (spec.mode != CallSpec::LONG)
		h.bytes(stream);
	if (!spec.force && h.b.size() > inline_send_)
		return -EMSGSIZE;

	int rc = send_bytes(h.b);
	if (rc)
		return rc;
	pending_.emplace(xid, std::move(pd));
	return xid;
}

int Requester::post_raw(const std::vector<uint8_t> &bytes, uint32_t xid, bool expect_reply,
			bool force, std::vector<RegionP> keep)
{
	if (!connected_)
		return -ENOTCONN;
	if (expect_reply) {
		if (pending_.count(xid))
			return -EEXIST;
		if (!force && pending_.size() >= grant_)
			return -EAGAIN;
	}
	int rc = send_bytes(bytes);
	if (rc)
		return rc;
	if (expect_reply) {
		Pending pd;
		pd.xid = xid;
		for (const auto &r : keep)
			if (r)
				pd.rkeys.insert(r->rkey());
		pd.keep = std::move(keep);
		pending_.emplace(xid, std::move(pd));
	}
	return 0;
}

bool Requester::wait(uint32_t xid, Reply *out, int timeout_ms)
{
	auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
	for (;;) {
		auto it = done_.find(xid);
		if (it != done_.end()) {
			*out = std::move(it->second);
			done_.erase(it);
			return true;
		}
		if (!connected_) {
			drain();
			if (done_.count(xid))
				continue;
			return false;
		}
		int left = ms_left(end);
		if (left <= 0)
			return false;
		progress(left > 100 ? 100 : left);
	}
}

bool Requester::wait_unsolicited(Reply *out, int timeout_ms)
{
	auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
	for (;;) {
		if (!unsolicited_.empty()) {
			*out = std::move(unsolicited_.front());
			unsolicited_.erase(unsolicited_.begin());
			return true;
		}
		int left = ms_left(end);
		if (left <= 0 || !connected_)
			return false;
		progress(left > 100 ? 100 : left);
	}
}

bool Requester::call(const std::vector<uint8_t> &rpc, const CallSpec &spec, Reply *out,
		     int timeout_ms)
{
	int64_t x = post(rpc, spec);
	if (x < 0) {
		err_ = "post failed: " + std::to_string(x) + " " + err_;
		return false;
	}
	return wait(uint32_t(x), out, timeout_ms);
}

/* --- replies -------------------------------------------------------------- */

void Requester::on_recv(const uint8_t *p, size_t n, bool with_inv, uint32_t inv_rkey)
{
	Reply r;
	r.raw.assign(p, p + n);
	r.with_inv = with_inv;
	r.inv_rkey = inv_rkey;
	if (n < 4) {
		r.violations.push_back("reply of " + std::to_string(n) + " bytes has no xid");
		unsolicited_.push_back(std::move(r));
		return;
	}
	r.xid = be32(p);
	/* RFC 8167 section 4.1 (and the Linux client's rpcrdma_is_bcall): an
	 * RDMA_MSG with three empty lists whose RPC message is a CALL is a
	 * reverse-direction call; its credit field is not our forward grant. */
	if (n >= 28 + 8 && be32(p + 4) == 1 && be32(p + 12) == RDMA_MSG && be32(p + 16) == 0 &&
	    be32(p + 20) == 0 && be32(p + 24) == 0 && be32(p + 28 + 4) == 0 /* CALL */) {
		BcCall c;
		c.rdma_xid = r.xid;
		c.credits = be32(p + 8);
		c.rpc.assign(p + 28, p + n);
		if (be32(p + 28) != c.rdma_xid)
			c.violations.push_back("reverse call: RPC xid differs from rdma_xid");
		if (n > inline_recv_)
			c.violations.push_back("reverse call of " + std::to_string(n) +
					       " bytes exceeds our inline receive size " +
					       std::to_string(inline_recv_));
		bc_seen_++;
		bc_calls_.push_back(std::move(c));
		return;
	}
	if (n >= 12 && be32(p + 4) == 1) {
		uint32_t c = be32(p + 8);
		if (c == 0) {
			zero_grants_++;
			c = 1;	/* as the Linux client does: never deadlock */
		}
		grant_ = c;
	}
	auto it = pending_.find(r.xid);
	if (it == pending_.end()) {
		check_reply(r, nullptr);
		unsolicited_.push_back(std::move(r));
		return;
	}
	r.solicited = true;
	r.call_rkeys = it->second.rkeys;
	check_reply(r, &it->second);
	pending_.erase(it);
	done_[r.xid] = std::move(r);
}

/*
 * Check an echoed chunk against the one offered and gather the bytes the
 * responder says it wrote. Segments fill in order (RFC 8166 section 3.4.4):
 * after a short segment every later one must be empty.
 */
static void check_chunk(const char *what, const std::vector<Seg> &echo,
			const std::vector<std::pair<Region *, Seg>> &offered, uint8_t fill,
			std::vector<uint8_t> *data, std::vector<std::string> *v)
{
	if (echo.size() != offered.size()) {
		v->push_back(std::string(what) + ": echoed " + std::to_string(echo.size()) +
			     " segments, offered " + std::to_string(offered.size()));
		return;
	}
	bool short_seen = false;
	for (size_t i = 0; i < echo.size(); i++) {
		const Seg &o = offered[i].second;
		const Seg &e = echo[i];
		Region *reg = offered[i].first;
		std::string at = std::string(what) + " segment " + std::to_string(i);
		if (e.handle != o.handle || e.offset != o.offset)
			v->push_back(at + ": handle/offset not echoed");
		if (e.length > o.length) {
			v->push_back(at + ": echoed length " + std::to_string(e.length) +
				     " > offered " + std::to_string(o.length));
			continue;
		}
		if (short_seen && e.length)
			v->push_back(at + ": data after a short segment");
		if (e.length < o.length)
			short_seen = true;
		data->insert(data->end(), reg->p, reg->p + e.length);
		for (size_t k = e.length; k < o.length; k++) {
			if (reg->p[k] != fill) {
				v->push_back(at + ": byte " + std::to_string(k) +
					     " written beyond the echoed length " +
					     std::to_string(e.length));
				break;
			}
		}
	}
}

void Requester::check_reply(Reply &r, Pending *pd)
{
	auto &v = r.violations;
	XdrReader x(r.raw);
	if (r.raw.size() < 16) {
		v.push_back("reply shorter than 16 bytes (" + std::to_string(r.raw.size()) + ")");
		return;
	}
	r.xid = x.u32();
	r.vers = x.u32();
	r.credits = x.u32();
	r.proc = x.u32();
	if (r.vers != 1)
		v.push_back("rdma_vers " + std::to_string(r.vers) + " in a reply");
	if (r.credits == 0)
		v.push_back("credit grant of 0 (RFC 8166 section 3.3.1)");
	if (r.raw.size() > inline_recv_)
		v.push_back("Send of " + std::to_string(r.raw.size()) +
			    " bytes exceeds our inline receive size " + std::to_string(inline_recv_));
	if (r.with_inv) {
		if (!(my_priv_valid_ && (my_priv_.flags & kCmPrivFlagSndWInvOk)))
			v.push_back("Send With Invalidate without SND_W_INV_OK");
		else if (pd && !pd->rkeys.count(r.inv_rkey))
			v.push_back("invalidated rkey " + std::to_string(r.inv_rkey) +
				    " the call did not carry");
	}

	if (r.proc == RDMA_ERROR) {
		r.err = x.u32();
		if (r.err == ERR_VERS) {
			r.vers_low = x.u32();
			r.vers_high = x.u32();
			if (r.raw.size() != 28)
				v.push_back("ERR_VERS of " + std::to_string(r.raw.size()) +
					    " bytes, expected 28");
			if (r.vers_low > r.vers_high)
				v.push_back("ERR_VERS low > high");
		} else if (r.err == ERR_CHUNK) {
			if (r.raw.size() != 20)
				v.push_back("ERR_CHUNK of " + std::to_string(r.raw.size()) +
					    " bytes, expected 20");
		} else {
			v.push_back("unknown rdma_err " + std::to_string(r.err));
		}
		r.hdr_len = x.offset();
		return;
	}
	if (r.proc != RDMA_MSG && r.proc != RDMA_NOMSG) {
		v.push_back("reply with rdma_proc " + std::to_string(r.proc));
		return;
	}

	/* Read list: must be empty in a reply. */
	uint32_t d = x.u32();
	if (d != 0) {
		v.push_back("Read list in a reply");
		return;
	}
	/* Write list */
	for (;;) {
		d = x.u32();
		if (x.bad || d == 0)
			break;
		if (d != 1) {
			v.push_back("bad Write list discriminator " + std::to_string(d));
			return;
		}
		uint32_t nseg = x.u32();
		if (nseg > kMaxEchoSegs || nseg * 16ull > x.left()) {
			v.push_back("Write chunk echo with " + std::to_string(nseg) + " segments");
			return;
		}
		std::vector<Seg> segs;
		for (uint32_t i = 0; i < nseg; i++)
			segs.push_back(x.seg());
		r.write_echo.push_back(segs);
	}
	/* Reply chunk */
	d = x.u32();
	if (d == 1) {
		r.has_reply_echo = true;
		uint32_t nseg = x.u32();
		if (nseg > kMaxEchoSegs || nseg * 16ull > x.left()) {
			v.push_back("Reply chunk echo with " + std::to_string(nseg) + " segments");
			return;
		}
		for (uint32_t i = 0; i < nseg; i++)
			r.reply_echo.push_back(x.seg());
	} else if (d != 0) {
		v.push_back("bad Reply chunk discriminator " + std::to_string(d));
		return;
	}
	if (x.bad) {
		v.push_back("reply header truncated");
		return;
	}
	r.hdr_len = x.offset();

	if (pd) {
		if (r.write_echo.size() != pd->writes.size()) {
			v.push_back("Write list echoes " + std::to_string(r.write_echo.size()) +
				    " chunks, call had " + std::to_string(pd->writes.size()));
		} else {
			r.write_data.resize(pd->writes.size());
			for (size_t c = 0; c < pd->writes.size(); c++) {
				std::vector<std::pair<Region *, Seg>> off;
				for (const auto &sr : pd->writes[c])
					off.push_back({sr.r.get(), sr.s});
				std::string what = "Write chunk " + std::to_string(c);
				std::vector<std::pair<Region *, Seg>> data_segs(off);
				bool pad = pd->write_pad[c];
				if (pad)
					data_segs.pop_back();
				std::vector<Seg> echo = r.write_echo[c];
				Seg pad_echo = {};
				if (pad && !echo.empty() && echo.size() == off.size()) {
					pad_echo = echo.back();
					echo.pop_back();
				}
				if (echo.size() + (pad ? 1 : 0) != off.size()) {
					v.push_back(what + ": echoed " +
						    std::to_string(r.write_echo[c].size()) +
						    " segments, offered " + std::to_string(off.size()));
					continue;
				}
				check_chunk(what.c_str(), echo, data_segs, kWriteFill,
					    &r.write_data[c], &v);
				if (pad) {
					const Seg &o = off.back().second;
					Region *pr = off.back().first;
					if (pad_echo.handle != o.handle || pad_echo.offset != o.offset)
						v.push_back(what + ": pad segment handle/offset not echoed");
					if (pad_echo.length)
						v.push_back(what + ": pad segment echoed length " +
							    std::to_string(pad_echo.length));
					for (int k = 0; k < 4; k++)
						if (pr->p[k] != kPadFill) {
							v.push_back(what + ": pad segment was written");
							break;
						}
				}
			}
		}
	}

	if (r.proc == RDMA_MSG) {
		for (const auto &s : r.reply_echo)
			if (s.length)
				v.push_back("RDMA_MSG with Reply chunk bytes");
		if (r.has_reply_echo && pd && pd->has_reply &&
		    r.reply_echo.size() != pd->reply.size())
			v.push_back("Reply chunk echo segment count differs");
		if (r.has_reply_echo && pd && !pd->has_reply)
			v.push_back("Reply chunk echoed but none offered");
		r.rpc.assign(r.raw.begin() + r.hdr_len, r.raw.end());
		if (r.rpc.empty())
			v.push_back("RDMA_MSG without an RPC message");
		return;
	}

	/* RDMA_NOMSG: the whole reply went through the Reply chunk. */
	if (r.raw.size() != r.hdr_len)
		v.push_back("RDMA_NOMSG with " + std::to_string(r.raw.size() - r.hdr_len) +
			    " bytes after the header");
	if (!r.has_reply_echo) {
		v.push_back("RDMA_NOMSG without a Reply chunk");
		return;
	}
	if (!pd)
		return;
	if (!pd->has_reply) {
		v.push_back("RDMA_NOMSG reply but the call offered no Reply chunk");
		return;
	}
	std::vector<std::pair<Region *, Seg>> off;
	for (const auto &sr : pd->reply)
		off.push_back({sr.r.get(), sr.s});
	check_chunk("Reply chunk", r.reply_echo, off, kReplyFill, &r.rpc, &v);
	if (r.rpc.empty())
		v.push_back("RDMA_NOMSG with an empty Reply chunk");
}

std::string Reply::describe() const
{
	std::ostringstream o;
	o << "xid=0x" << std::hex << xid << std::dec << " vers=" << vers << " credits=" << credits
	  << " proc=" << proc;
	if (proc == RDMA_ERROR)
		o << " err=" << err << " low=" << vers_low << " high=" << vers_high;
	o << " len=" << raw.size() << " hdr=" << hdr_len << " rpc=" << rpc.size() << " writes=[";
	for (const auto &w : write_echo) {
		o << "(";
		for (const auto &s : w)
			o << s.length << " ";
		o << ")";
	}
	o << "]";
	if (has_reply_echo) {
		o << " reply=(";
		for (const auto &s : reply_echo)
			o << s.length << " ";
		o << ")";
	}
	if (with_inv)
		o << " inv=" << inv_rkey;
	for (const auto &s : violations)
		o << "\n  VIOLATION: " << s;
	return o.str();
}

bool reply_opaque(const Reply &r, size_t off, size_t chunk, std::vector<uint8_t> *data,
		  std::string *why)
{
	if (r.rpc.size() < off + 4) {
		*why = "RPC reply too short for an opaque<> at " + std::to_string(off);
		return false;
	}
	uint32_t len = be32(r.rpc.data() + off);
	size_t rest = r.rpc.size() - off - 4;
	size_t in_chunk = chunk < r.write_data.size() ? r.write_data[chunk].size() : 0;
	if (rest >= roundup4(len)) {
		if (in_chunk) {
			*why = "result inline and " + std::to_string(in_chunk) +
			       " bytes in the Write chunk";
			return false;
		}
		data->assign(r.rpc.begin() + off + 4, r.rpc.begin() + off + 4 + len);
		for (size_t k = off + 4 + len; k < off + 4 + roundup4(len); k++)
			if (r.rpc[k]) {
				*why = "non-zero XDR pad";
				return false;
			}
		return true;
	}
	if (rest == 0 && in_chunk == len) {
		*data = r.write_data[chunk];
		return true;
	}
	*why = "opaque<" + std::to_string(len) + "> with " + std::to_string(rest) +
	       " inline bytes and " + std::to_string(in_chunk) + " in Write chunk " +
	       std::to_string(chunk);
	return false;
}

} // namespace rrtest
