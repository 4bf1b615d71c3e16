// SPDX-License-Identifier: MIT
/*
 * The requester's reply checks are what make the transport tests mean
 * anything, so they are tested too: a fake responder (fab.h only, in a
 * thread of this process) answers each call with one specific protocol fault
 * and the requester must name it in Reply::violations - or, for a correct
 * reply, name nothing.
 */
#include <gtest/gtest.h>

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "support/rr_device_profile.h"
#include "support/rr_requester.h"

using namespace rrtest;

namespace {

struct InCall {
	uint32_t xid = 0;
	std::vector<std::vector<Seg>> writes;
	bool has_reply = false;
	std::vector<Seg> reply;
};

class Fake {
      public:
	using Behave = std::function<void(Fake &, const InCall &)>;
	uint8_t priv_send_kb = 4, priv_recv_kb = 4;

	bool start(std::string *addr)
	{
		static int seq;
		char b[96];
		snprintf(b, sizeof(b), "unix:/tmp/rrfake-%d-%d.sock", int(getpid()), seq++);
		*addr = b;
		path_ = b + 5;
		unlink(path_.c_str());
		if (fab_open("soft", &fab_) || fab_channel_create(fab_, &ch_) ||
		    fab_cq_create(fab_, 256, &cq_) || fab_pd_get(fab_, &pd_) ||
		    fab_listen(fab_, ch_, b, 4, &l_))
			return false;
		rbuf_.resize(kRecvs * kRecvSize);
		sbuf_.resize(1 << 20);
		if (fab_mr_reg(pd_, rbuf_.data(), rbuf_.size(), FAB_ACCESS_LOCAL_WRITE, &rmr_) ||
		    fab_mr_reg(pd_, sbuf_.data(), sbuf_.size(), FAB_ACCESS_LOCAL_WRITE, &smr_))
			return false;
		thr_ = std::thread([this] { loop(); });
		return true;
	}
	~Fake()
	{
		stop_ = true;
		if (thr_.joinable())
			thr_.join();
		if (conn_)
			fab_conn_destroy(conn_);
		if (rmr_)
			fab_mr_dereg(rmr_);
		if (smr_)
			fab_mr_dereg(smr_);
		if (l_)
			fab_listener_destroy(l_);
		if (cq_)
			fab_cq_destroy(cq_);
		if (ch_)
			fab_channel_destroy(ch_);
		if (fab_)
			fab_close(fab_);
		unlink(path_.c_str());
	}
	void set(Behave b)
	{
		std::lock_guard<std::mutex> g(lock_);
		behave_ = std::move(b);
	}

	/* For behaviours: RDMA Write @data to @s, then (in order) the Send. */
	void write(const Seg &s, const std::vector<uint8_t> &data, size_t at = 0)
	{
		memcpy(sbuf_.data() + soff_, data.data(), data.size());
		fab_sge sge = {sbuf_.data() + soff_, uint32_t(data.size()), smr_->lkey};
		soff_ += (data.size() + 63) & ~size_t(63);
		fab_send_wr wr = {};
		wr.opcode = FAB_WR_RDMA_WRITE;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.remote_addr = s.offset + at;
		wr.rkey = s.handle;
		fab_post_send(conn_, &wr, nullptr);
	}
	void send(const std::vector<uint8_t> &b, uint32_t inv_rkey = 0, bool inv = false)
	{
		memcpy(sbuf_.data() + soff_, b.data(), b.size());
		fab_sge sge = {sbuf_.data() + soff_, uint32_t(b.size()), smr_->lkey};
		soff_ = 0;
		fab_send_wr wr = {};
		wr.opcode = inv ? FAB_WR_SEND_WITH_INV : FAB_WR_SEND;
		wr.invalidate_rkey = inv_rkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.signaled = true;
		if (fab_post_send(conn_, &wr, nullptr) == 0)
			wait_send_done();
	}

      private:
	static constexpr uint32_t kRecvs = 16, kRecvSize = 8192;

	void post_recv(uint32_t i)
	{
		fab_sge sge = {rbuf_.data() + size_t(i) * kRecvSize, kRecvSize, rmr_->lkey};
		fab_recv_wr wr = {};
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		fab_post_recv(conn_, &wr, nullptr);
	}
	/*
	 * The next message reuses sbuf_ from offset 0: wait until the fabric
	 * has sent this one (its Send completion; earlier Writes are done
	 * before it), keeping the receives that complete meanwhile for loop().
	 */
	void wait_send_done()
	{
		for (int i = 0; i < 5000; i++) {
			fab_wc wc;

			if (fab_cq_poll(cq_, &wc, 1) != 1) {
				usleep(1000);
				continue;
			}
			if (wc.opcode == FAB_WC_SEND)
				return;
			pending_.push_back(wc);
		}
	}
	void handle(const fab_wc &wc)
	{
		if (wc.opcode != FAB_WC_RECV || wc.status != FAB_WC_SUCCESS)
			return;
		uint32_t idx = uint32_t(wc.wr_id);
		InCall c = parse(rbuf_.data() + size_t(idx) * kRecvSize, wc.byte_len);
		post_recv(idx);
		Behave b;
		{
			std::lock_guard<std::mutex> g(lock_);
			b = behave_;
		}
		if (b)
			b(*this, c);
	}
	void loop()
	{
		while (!stop_) {
			fab_cm_event ev;
			while (fab_channel_get_event(ch_, &ev) == 0) {
				if (ev.type != FAB_CM_CONNECT_REQUEST || conn_)
					continue;
				conn_ = ev.conn;
				fab_qp_caps caps = {64, kRecvs, 1, 1, nullptr};
				fab_conn_create_qp(conn_, cq_, cq_, &caps);
				for (uint32_t i = 0; i < kRecvs; i++)
					post_recv(i);
				uint8_t pd[8] = {0xf6, 0xab, 0x0e, 0x18, 1, 0,
						 uint8_t(priv_send_kb - 1), uint8_t(priv_recv_kb - 1)};
				fab_conn_param p = {};
				p.private_data = pd;
				p.private_data_len = 8;
				p.initiator_depth = ev.initiator_depth;
				fab_accept(conn_, &p);
			}
			while (!pending_.empty()) {
				fab_wc wc = pending_.front();

				pending_.pop_front();
				handle(wc);
			}
			fab_wc wc[16];
			int n = fab_cq_poll(cq_, wc, 16);
			for (int i = 0; i < n; i++)
				handle(wc[i]);
			if (!n)
				usleep(1000);
		}
	}
	static InCall parse(const uint8_t *p, size_t n)
	{
		InCall c;
		XdrReader x(p, n);
		c.xid = x.u32();
		x.u32();
		x.u32();
		x.u32();
		while (x.u32() == 1 && !x.bad) {
			x.u32();
			x.seg();
		}
		while (x.u32() == 1 && !x.bad) {
			uint32_t ns = x.u32();
			std::vector<Seg> v;
			for (uint32_t i = 0; i < ns && !x.bad; i++)
				v.push_back(x.seg());
			c.writes.push_back(v);
		}
		if (x.u32() == 1) {
			c.has_reply = true;
			uint32_t ns = x.u32();
			for (uint32_t i = 0; i < ns && !x.bad; i++)
				c.reply.push_back(x.seg());
		}
		return c;
	}

	fab_fabric *fab_ = nullptr;
	fab_channel *ch_ = nullptr;
	fab_cq *cq_ = nullptr;
	fab_pd *pd_ = nullptr;
	fab_listener *l_ = nullptr;
	fab_conn *conn_ = nullptr;
	fab_mr *rmr_ = nullptr, *smr_ = nullptr;
	std::vector<uint8_t> rbuf_, sbuf_;
	size_t soff_ = 0;
	std::deque<fab_wc> pending_;	/* receives completed during wait_send_done */
	std::string path_;
	std::thread thr_;
	std::atomic<bool> stop_{false};
	std::mutex lock_;
	Behave behave_;
};

/* Reply header helpers for the fake. */
Wire rhdr(uint32_t xid, uint32_t proc, uint32_t credits = 8, uint32_t vers = 1)
{
	Wire w;
	w.fixed(xid, vers, credits, proc);
	return w;
}

/* An RPC reply body (xid, REPLY, accepted, null verf, SUCCESS). */
std::vector<uint8_t> rpc_ok(uint32_t xid)
{
	Wire w;
	w.u32(xid).u32(1).u32(0).u32(0).u32(0).u32(0);
	return w.b;
}

std::vector<Seg> zeroed(std::vector<Seg> v)
{
	for (auto &s : v)
		s.length = 0;
	return v;
}

class RequesterChecks : public ::testing::Test {
      protected:
	std::unique_ptr<Fake> fake;
	std::unique_ptr<Requester> q;
	std::string addr;

	void start(RequesterOptions o = RequesterOptions())
	{
		fake.reset(new Fake());
		ASSERT_TRUE(fake->start(&addr));
		o.addr = addr;
		std::string err;
		q = Requester::connect(o, &err);
		ASSERT_TRUE(q) << err;
	}
	void TearDown() override
	{
		q.reset();
		fake.reset();
	}
	/* Post a NULL-ish call shaped by @s answered by @b; return the reply. */
	Reply run(const CallSpec &s, Fake::Behave b)
	{
		fake->set(std::move(b));
		Wire rpc;
		uint32_t xid = q->next_xid();
		rpc.u32(xid).u32(0).u32(2).u32(1).u32(1).u32(0).u32(0).u32(0).u32(0).u32(0);
		CallSpec sp = s;
		sp.force = true;
		Reply r;
		EXPECT_TRUE(q->call(rpc.b, sp, &r, 3000)) << q->last_error();
		return r;
	}
	static ::testing::AssertionResult names(const Reply &r, const std::string &what)
	{
		for (const auto &v : r.violations)
			if (v.find(what) != std::string::npos)
				return ::testing::AssertionSuccess();
		return ::testing::AssertionFailure() << "no violation \"" << what << "\" in "
						     << r.describe();
	}
};

CallSpec with_write(std::vector<uint32_t> segs, bool pad = false)
{
	CallSpec s;
	s.writes.push_back({segs, pad});
	return s;
}

TEST_F(RequesterChecks, CorrectRepliesPass)
{
	start();
	Reply r = run(CallSpec(), [](Fake &f, const InCall &c) {
		f.send(rhdr(c.xid, RDMA_MSG).u32(0).u32(0).u32(0).bytes(rpc_ok(c.xid)).b);
	});
	EXPECT_TRUE(r.ok()) << r.describe();
	/* Write chunk with pad: data written, pad echoed 0 */
	r = run(with_write({8, 8}, true), [](Fake &f, const InCall &c) {
		f.write(c.writes[0][0], std::vector<uint8_t>(8, 1));
		f.write(c.writes[0][1], std::vector<uint8_t>(3, 2));
		auto e = c.writes[0];
		e[1].length = 3;
		e[2].length = 0;
		f.send(rhdr(c.xid, RDMA_MSG).u32(0).write_list({e}).u32(0).bytes(rpc_ok(c.xid)).b);
	});
	EXPECT_TRUE(r.ok()) << r.describe();
	ASSERT_EQ(r.write_data.size(), 1u);
	EXPECT_EQ(r.write_data[0].size(), 11u);
	/* Long Reply */
	CallSpec s;
	s.reply = {64};
	r = run(s, [](Fake &f, const InCall &c) {
		auto body = rpc_ok(c.xid);
		f.write(c.reply[0], body);
		auto e = c.reply;
		e[0].length = uint32_t(body.size());
		f.send(rhdr(c.xid, RDMA_NOMSG).u32(0).u32(0).reply_chunk(&e).b);
	});
	EXPECT_TRUE(r.ok()) << r.describe();
	EXPECT_EQ(r.rpc, rpc_ok(r.xid));
}

TEST_F(RequesterChecks, HeaderFaults)
{
	start();
	EXPECT_TRUE(names(run(CallSpec(),
			      [](Fake &f, const InCall &c) {
				      f.send(rhdr(c.xid, RDMA_MSG, 8, 2)
						     .u32(0).u32(0).u32(0).bytes(rpc_ok(c.xid)).b);
			      }),
			  "rdma_vers"));
	EXPECT_TRUE(names(run(CallSpec(),
			      [](Fake &f, const InCall &c) {
				      f.send(rhdr(c.xid, RDMA_MSG, 0)
						     .u32(0).u32(0).u32(0).bytes(rpc_ok(c.xid)).b);
			      }),
			  "credit grant of 0"));
	EXPECT_EQ(q->zero_grants(), 1u);
	EXPECT_TRUE(names(run(CallSpec(),
			      [](Fake &f, const InCall &c) {
				      f.send(rhdr(c.xid, RDMA_MSG)
						     .u32(1).u32(0).seg({1, 4, 0}).u32(0).u32(0).u32(0)
						     .bytes(rpc_ok(c.xid)).b);
			      }),
			  "Read list in a reply"));
	EXPECT_TRUE(names(run(CallSpec(),
			      [](Fake &f, const InCall &c) {
				      f.send(rhdr(c.xid, RDMA_ERROR).u32(ERR_CHUNK).u32(0).b);
			      }),
			  "ERR_CHUNK of 24 bytes"));
	EXPECT_TRUE(names(run(CallSpec(),
			      [](Fake &f, const InCall &c) {
				      f.send(rhdr(c.xid, RDMA_ERROR).u32(ERR_VERS).u32(2).u32(1).b);
			      }),
			  "low > high"));
	EXPECT_TRUE(names(run(CallSpec(),
			      [](Fake &f, const InCall &c) {
				      f.send(rhdr(c.xid, RDMA_MSG).u32(0).u32(0).u32(0).b);
			      }),
			  "without an RPC message"));
}

TEST_F(RequesterChecks, WriteChunkFaults)
{
	start();
	/* chunk not echoed */
	EXPECT_TRUE(names(run(with_write({64}),
			      [](Fake &f, const InCall &c) {
				      f.send(rhdr(c.xid, RDMA_MSG).u32(0).u32(0).u32(0)
						     .bytes(rpc_ok(c.xid)).b);
			      }),
			  "Write list echoes 0 chunks"));
	/* length larger than offered */
	EXPECT_TRUE(names(run(with_write({64}),
			      [](Fake &f, const InCall &c) {
				      auto e = c.writes[0];
				      e[0].length = 65;
				      f.send(rhdr(c.xid, RDMA_MSG).u32(0).write_list({e}).u32(0)
						     .bytes(rpc_ok(c.xid)).b);
			      }),
			  "> offered"));
	/* handle not echoed */
	EXPECT_TRUE(names(run(with_write({64}),
			      [](Fake &f, const InCall &c) {
				      auto e = zeroed(c.writes[0]);
				      e[0].handle ^= 1;
				      f.send(rhdr(c.xid, RDMA_MSG).u32(0).write_list({e}).u32(0)
						     .bytes(rpc_ok(c.xid)).b);
			      }),
			  "handle/offset not echoed"));
	/* the pad segment echoed with a length */
	EXPECT_TRUE(names(run(with_write({8}, true),
			      [](Fake &f, const InCall &c) {
				      auto e = c.writes[0];
				      f.write(e[0], std::vector<uint8_t>(8, 1));
				      f.send(rhdr(c.xid, RDMA_MSG).u32(0).write_list({e}).u32(0)
						     .bytes(rpc_ok(c.xid)).b);
			      }),
			  "pad segment echoed length 4"));
	/* the pad segment written although echoed 0 */
	EXPECT_TRUE(names(run(with_write({8}, true),
			      [](Fake &f, const InCall &c) {
				      auto e = c.writes[0];
				      f.write(e[0], std::vector<uint8_t>(8, 1));
				      f.write(e[1], std::vector<uint8_t>(4, 0));
				      e[1].length = 0;
				      f.send(rhdr(c.xid, RDMA_MSG).u32(0).write_list({e}).u32(0)
						     .bytes(rpc_ok(c.xid)).b);
			      }),
			  "pad segment was written"));
	/* bytes written past the echoed length */
	EXPECT_TRUE(names(run(with_write({64}),
			      [](Fake &f, const InCall &c) {
				      auto e = c.writes[0];
				      f.write(e[0], std::vector<uint8_t>(20, 1));
				      e[0].length = 16;
				      f.send(rhdr(c.xid, RDMA_MSG).u32(0).write_list({e}).u32(0)
						     .bytes(rpc_ok(c.xid)).b);
			      }),
			  "written beyond the echoed length"));
	/* a hole: segment 0 short, segment 1 used */
	EXPECT_TRUE(names(run(with_write({16, 16}),
			      [](Fake &f, const InCall &c) {
				      auto e = c.writes[0];
				      f.write(e[0], std::vector<uint8_t>(8, 1));
				      f.write(e[1], std::vector<uint8_t>(8, 1));
				      e[0].length = 8;
				      e[1].length = 8;
				      f.send(rhdr(c.xid, RDMA_MSG).u32(0).write_list({e}).u32(0)
						     .bytes(rpc_ok(c.xid)).b);
			      }),
			  "data after a short segment"));
}

TEST_F(RequesterChecks, ReplyChunkFaults)
{
	start();
	CallSpec s;
	s.reply = {64};
	EXPECT_TRUE(names(run(s,
			      [](Fake &f, const InCall &c) {
				      auto e = c.reply;
				      e[0].length = 8;
				      f.send(rhdr(c.xid, RDMA_MSG).u32(0).u32(0).reply_chunk(&e)
						     .bytes(rpc_ok(c.xid)).b);
			      }),
			  "RDMA_MSG with Reply chunk bytes"));
	EXPECT_TRUE(names(run(s,
			      [](Fake &f, const InCall &c) {
				      auto body = rpc_ok(c.xid);
				      f.write(c.reply[0], body);
				      auto e = c.reply;
				      e[0].length = uint32_t(body.size());
				      f.send(rhdr(c.xid, RDMA_NOMSG).u32(0).u32(0).reply_chunk(&e)
						     .u32(0).b);
			      }),
			  "bytes after the header"));
	EXPECT_TRUE(names(run(s,
			      [](Fake &f, const InCall &c) {
				      auto e = zeroed(c.reply);
				      f.send(rhdr(c.xid, RDMA_NOMSG).u32(0).u32(0).reply_chunk(&e).b);
			      }),
			  "empty Reply chunk"));
	EXPECT_TRUE(names(run(CallSpec(),
			      [](Fake &f, const InCall &c) {
				      f.send(rhdr(c.xid, RDMA_NOMSG).u32(0).u32(0).u32(0).b);
			      }),
			  "RDMA_NOMSG without a Reply chunk"));
}

TEST_F(RequesterChecks, SendWithInvalidateFaults)
{
	if (!rr_test_device().send_with_inv)
		GTEST_SKIP() << "device profile " << rr_test_device_name()
			     << " sends no Send With Invalidate: the fake cannot send a bad one";
	RequesterOptions o;
	o.priv.flags = 0;
	start(o);
	EXPECT_TRUE(names(run(with_write({64}),
			      [](Fake &f, const InCall &c) {
				      auto e = zeroed(c.writes[0]);
				      f.send(rhdr(c.xid, RDMA_MSG).u32(0).write_list({e}).u32(0)
						     .bytes(rpc_ok(c.xid)).b,
					     c.writes[0][0].handle, true);
			      }),
			  "without SND_W_INV_OK"));
}

TEST_F(RequesterChecks, SendWithInvalidateOfAForeignRkey)
{
	if (!rr_test_device().send_with_inv)
		GTEST_SKIP() << "device profile " << rr_test_device_name()
			     << " sends no Send With Invalidate: the fake cannot send a bad one";
	start();
	Reply r = run(with_write({64}), [](Fake &f, const InCall &c) {
		auto e = zeroed(c.writes[0]);
		f.send(rhdr(c.xid, RDMA_MSG).u32(0).write_list({e}).u32(0).bytes(rpc_ok(c.xid)).b,
		       c.writes[0][0].handle + 1, true);
	});
	EXPECT_TRUE(names(r, "the call did not carry"));
}

TEST_F(RequesterChecks, SendLargerThanNegotiatedInline)
{
	fake.reset(new Fake());
	fake->priv_send_kb = 1;	/* the responder promises 1 KiB Sends */
	ASSERT_TRUE(fake->start(&addr));
	RequesterOptions o;
	o.addr = addr;
	std::string err;
	q = Requester::connect(o, &err);
	ASSERT_TRUE(q) << err;
	EXPECT_EQ(q->inline_recv(), 1024u);
	Reply r = run(CallSpec(), [](Fake &f, const InCall &c) {
		Wire w = rhdr(c.xid, RDMA_MSG).u32(0).u32(0).u32(0).bytes(rpc_ok(c.xid));
		w.opaque(std::vector<uint8_t>(2000, 1));
		f.send(w.b);
	});
	EXPECT_TRUE(names(r, "exceeds our inline receive size"));
}

} // namespace
