// SPDX-License-Identifier: MIT
// The backchannel's CLIENTs against their connection's teardown
// (src/plugin/rrp_backchannel.c), without ganesha: rrp_bc_probe.c stands in
// for the transport and the engine. Issue #32: a CLIENT made while its
// connection went down read the connection before the teardown pass and was
// listed after it, so it was never marked dead and its next callback went
// out on the freed connection. Run under ThreadSanitizer too (ci/tsan.sh).
//
// Each callback completes exactly once, as ganesha's nfs_rpc_call needs:
// through cc_process_cb when CLNT_CALL_BACK returned RPC_SUCCESS, or by
// ganesha itself at an error return, never both (it frees the call, its
// slot and its session reference at each). The probe counts both. A
// callback timed out gives its engine credit back (rr_conn_bc_abandon).
#include <gtest/gtest.h>

#include <rpc/clnt_stat.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "plugin/rrp_bc_probe.h"
#include "support/rr_eventually.h"

namespace {

struct Probe {
	bc_probe *p = bc_probe_new();
	~Probe()
	{
		bc_probe_free(p);
	}
};

// @c sent through @clnt on a thread of its own while the client's grant is
// full: true once its send met -EAGAIN and waits for a credit.
bool send_against_a_full_grant(bc_probe *p, void *clnt, bc_probe_call *c, std::thread *sender)
{
	bc_probe_set_grant_full(p, true);
	*sender = std::thread([=] { bc_probe_call_back(c, clnt, 5000); });
	return rrtest::eventually([&] { return bc_probe_eagains(p) > 0; });
}

// @c completed and freed exactly once, with @result.
void expect_completed_once(bc_probe_call *c, int result, const char *twice = "")
{
	EXPECT_EQ(1u, bc_probe_call_completions(c)) << twice;
	EXPECT_EQ(1u, bc_probe_call_frees(c));
	EXPECT_EQ(result, bc_probe_call_result(c));
}

// A callback through @clnt must fail without reaching the engine.
void expect_dead(bc_probe *p, void *clnt)
{
	unsigned int sends = bc_probe_sends(p);
	EXPECT_NE(RPC_SUCCESS, bc_probe_callback(clnt)) << "a callback on a closed connection";
	EXPECT_EQ(sends, bc_probe_sends(p)) << "the engine was asked to send it";
	EXPECT_EQ(0u, bc_probe_sends_after_free(p)) << "sent on the freed connection";
}

TEST(RrpBackchannel, ClientOnALiveConnectionSendsUntilItGoesDown)
{
	Probe pr;
	void *clnt = bc_probe_create(pr.p);
	ASSERT_NE(nullptr, clnt);
	EXPECT_EQ(RPC_SUCCESS, bc_probe_callback(clnt));
	EXPECT_EQ(1u, bc_probe_sends(pr.p)) << "the probe sees a live client's callback";
	bc_probe_conn_down(pr.p);
	expect_dead(pr.p, clnt);
	bc_probe_release(clnt);
	EXPECT_EQ(1, bc_probe_xprt_refs(pr.p)) << "the CLIENT let go of its xprt";
}

TEST(RrpBackchannel, ClientMadeAfterTeardownIsDead)
{
	Probe pr;
	bc_probe_conn_down(pr.p);
	void *clnt = bc_probe_create(pr.p);
	ASSERT_NE(nullptr, clnt);
	expect_dead(pr.p, clnt);
	bc_probe_release(clnt);
	EXPECT_EQ(1, bc_probe_xprt_refs(pr.p));
}

// The interleaving forced: the create has read the xprt's connection, and
// only then does the whole teardown run on another thread. The create waits
// at that point for the teardown to finish, or for 200 ms where it cannot
// get in (the create holds the lock teardown needs): either way the CLIENT
// must come out dead, never live on the freed connection.
TEST(RrpBackchannel, ClientMadeWhileItsConnectionGoesDownIsDead)
{
	Probe pr;
	struct Race {
		bc_probe *p = nullptr;
		std::mutex m;
		std::condition_variable cv;
		bool go = false, done = false, done_in_window = false;
	} r;
	r.p = pr.p;
	std::thread down([&r] {
		std::unique_lock<std::mutex> l(r.m);
		r.cv.wait(l, [&r] { return r.go; });
		l.unlock();
		bc_probe_conn_down(r.p);
		l.lock();
		r.done = true;
		r.cv.notify_all();
	});
	bc_probe_on_conn_read(
	    pr.p,
	    [](void *arg) {
		    auto *r = static_cast<Race *>(arg);
		    std::unique_lock<std::mutex> l(r->m);
		    r->go = true;
		    r->cv.notify_all();
		    r->done_in_window = r->cv.wait_for(l, std::chrono::milliseconds(200),
						       [r] { return r->done; });
	    },
	    &r);
	void *clnt = bc_probe_create(pr.p);
	down.join();
	ASSERT_TRUE(r.go) << "the create never read the connection";
	ASSERT_NE(nullptr, clnt);
	RecordProperty("teardown_ran_inside_create", r.done_in_window ? "yes" : "no");
	expect_dead(pr.p, clnt);
	bc_probe_release(clnt);
	EXPECT_EQ(1, bc_probe_xprt_refs(pr.p));
}

// The connection goes down while CLNT_CALL_BACK waits for a backchannel
// credit (the send's -EAGAIN retries, up to 2 s). The call was never taken
// by the engine: CLNT_CALL_BACK fails, ganesha completes it at that return,
// and the teardown must not complete it as well (it did: the entry was
// listed before the send, so the teardown failed it through cc_process_cb,
// which freed it, and the send's failure then had ganesha free it again).
TEST(RrpBackchannel, ConnectionLostWhileWaitingForACreditCompletesOnce)
{
	Probe pr;
	void *clnt = bc_probe_create(pr.p);
	ASSERT_NE(nullptr, clnt);
	bc_probe_call *c = bc_probe_call_new(pr.p);
	ASSERT_NE(nullptr, c);
	std::thread sender;
	bool waiting = send_against_a_full_grant(pr.p, clnt, c, &sender);
	bc_probe_conn_down(pr.p);
	sender.join();
	ASSERT_TRUE(waiting) << "the send never met a full grant";
	EXPECT_EQ(RPC_CANTSEND, bc_probe_call_send_status(c));
	expect_completed_once(c, RPC_CANTSEND,
			      "completed by the teardown and again by ganesha at the error return");
	EXPECT_EQ(0u, bc_probe_sends_after_free(pr.p));
	bc_probe_release(clnt);
	EXPECT_EQ(1, bc_probe_xprt_refs(pr.p));
}

// A Reply naming the next XID (the client sees its callbacks' XIDs and can
// predict the next) arrives while that call waits for a credit, before it
// was sent. It answers nothing: the call is still its sender's (it was the
// list's already, and the Reply completed and freed it under the sender).
// The call is then sent, and its own Reply completes it, once.
TEST(RrpBackchannel, ReplyBeforeItsCallIsSentCompletesNothing)
{
	Probe pr;
	void *clnt = bc_probe_create(pr.p);
	ASSERT_NE(nullptr, clnt);
	bc_probe_call *c = bc_probe_call_new(pr.p);
	ASSERT_NE(nullptr, c);
	std::thread sender;
	bool waiting = send_against_a_full_grant(pr.p, clnt, c, &sender);
	uint32_t xid = bc_probe_last_xid(pr.p);
	if (waiting) /* as an engine that hands every Reply up would */
		bc_probe_reply_unchecked(pr.p, xid);
	unsigned int early = bc_probe_call_completions(c);
	bc_probe_set_grant_full(pr.p, false);
	sender.join();
	ASSERT_TRUE(waiting) << "the send never met a full grant";
	EXPECT_EQ(0u, early) << "a Reply completed a call not yet sent";
	EXPECT_EQ(RPC_SUCCESS, bc_probe_call_send_status(c));
	EXPECT_TRUE(bc_probe_is_outstanding(pr.p, xid));
	EXPECT_TRUE(bc_probe_reply(pr.p, xid));
	expect_completed_once(c, RPC_SUCCESS);
	bc_probe_conn_down(pr.p);
	EXPECT_EQ(1u, bc_probe_call_completions(c));
	bc_probe_release(clnt);
	EXPECT_EQ(1, bc_probe_xprt_refs(pr.p));
}

// A callback with no answer times out once, and its engine credit comes
// back with it (rr_conn_bc_abandon), exactly once: before, the credit stayed
// taken, and after the client's grant of them every callback on the
// connection got -EAGAIN for ever. A late Reply then answers nothing.
TEST(RrpBackchannel, TimedOutCallbackGivesItsCreditBackOnce)
{
	Probe pr;
	void *clnt = bc_probe_create(pr.p);
	ASSERT_NE(nullptr, clnt);
	bc_probe_call *c = bc_probe_call_new(pr.p);
	ASSERT_NE(nullptr, c);
	ASSERT_EQ(RPC_SUCCESS, bc_probe_call_back(c, clnt, 200));
	uint32_t xid = bc_probe_last_xid(pr.p);
	EXPECT_TRUE(bc_probe_is_outstanding(pr.p, xid));
	ASSERT_TRUE(rrtest::eventually([&] { return bc_probe_call_completions(c) > 0; }))
	    << "never timed out";
	EXPECT_EQ(RPC_TIMEDOUT, bc_probe_call_result(c));
	EXPECT_EQ(1u, bc_probe_abandons(pr.p)) << "the timed-out call's credit was not given back";
	EXPECT_EQ(0u, bc_probe_abandons_missed(pr.p));
	EXPECT_FALSE(bc_probe_is_outstanding(pr.p, xid));
	EXPECT_EQ(0u, bc_probe_outstanding(pr.p));
	/* late: the engine drops it; one handed up anyway finds nothing */
	EXPECT_FALSE(bc_probe_reply(pr.p, xid));
	bc_probe_reply_unchecked(pr.p, xid);
	expect_completed_once(c, RPC_TIMEDOUT);
	EXPECT_EQ(1u, bc_probe_abandons(pr.p));
	bc_probe_conn_down(pr.p);
	bc_probe_release(clnt);
	EXPECT_EQ(1, bc_probe_xprt_refs(pr.p));
}

// Replies, timeouts, credit waits and the connection's teardown all at once,
// from several threads: every callback completes exactly once and is freed
// once, and the engine ends with no credit held but those the teardown took
// with the connection (each other XID given back by its Reply or its
// abandon). Its point is the run under ThreadSanitizer.
TEST(RrpBackchannel, EveryCallbackCompletesOnceWhateverComesFirst)
{
	constexpr int kSenders = 3, kPerSender = 80;
	Probe pr;
	void *clnt = bc_probe_create(pr.p);
	ASSERT_NE(nullptr, clnt);
	std::vector<bc_probe_call *> calls;
	for (int i = 0; i < kSenders * kPerSender; i++) {
		calls.push_back(bc_probe_call_new(pr.p));
		ASSERT_NE(nullptr, calls.back());
	}
	std::atomic<int> sent{0};
	std::atomic<bool> stop{false};
	auto sender = [&](int t) {
		std::mt19937 rnd(unsigned(t) + 1);
		for (int i = 0; i < kPerSender; i++) {
			bc_probe_call_back(calls[size_t(t * kPerSender + i)], clnt,
					   100 + int(rnd() % 300));
			sent++;
			std::this_thread::sleep_for(std::chrono::microseconds(rnd() % 5000));
		}
	};
	/* the client: answers some, late or never */
	auto client = [&] {
		std::mt19937 rnd(99);
		uint32_t xids[BC_PROBE_MAX_OUT];
		while (!stop) {
			unsigned int n = bc_probe_outstanding_xids(pr.p, xids, BC_PROBE_MAX_OUT);
			if (n && rnd() % 2)
				bc_probe_reply(pr.p, xids[rnd() % n]);
			std::this_thread::sleep_for(std::chrono::microseconds(500 + rnd() % 6000));
		}
	};
	/* the grant fills and empties meanwhile */
	auto grant = [&] {
		std::mt19937 rnd(7);
		while (!stop) {
			bc_probe_set_grant_full(pr.p, rnd() % 3 == 0);
			std::this_thread::sleep_for(std::chrono::milliseconds(rnd() % 40));
		}
	};
	std::vector<std::thread> th;
	for (int t = 0; t < kSenders; t++)
		th.emplace_back(sender, t);
	th.emplace_back(client);
	th.emplace_back(grant);
	/* the connection goes down with most callbacks sent, some pending,
	 * some waiting for a credit; the rest fail at once */
	rrtest::eventually([&] { return sent >= kSenders * kPerSender * 3 / 4; }, 60000);
	bc_probe_conn_down(pr.p);
	rrtest::eventually([&] { return sent == kSenders * kPerSender; }, 60000);
	stop = true;
	for (auto &t : th)
		t.join();
	/* what the timer completes (at most 400 ms, and its 100 ms tick) */
	rrtest::eventually(
	    [&] {
		    for (bc_probe_call *c : calls)
			    if (!bc_probe_call_completions(c))
				    return false;
		    return true;
	    },
	    10000);
	unsigned int ok = 0, timedout = 0, lost = 0, unsent = 0;
	for (bc_probe_call *c : calls) {
		int st = bc_probe_call_result(c);
		EXPECT_EQ(1u, bc_probe_call_completions(c)) << "clnt_stat " << st;
		EXPECT_EQ(1u, bc_probe_call_frees(c));
		ok += st == RPC_SUCCESS;
		timedout += st == RPC_TIMEDOUT;
		lost += st == RPC_CANTRECV;
		unsent += st == RPC_CANTSEND;
	}
	EXPECT_EQ(calls.size(), size_t(ok + timedout + lost + unsent));
	std::string outcomes = std::to_string(ok) + " answered, " + std::to_string(timedout) +
			       " timed out, " + std::to_string(lost) + " lost, " +
			       std::to_string(unsent) + " unsent";
	RecordProperty("outcomes", outcomes);
	EXPECT_LE(bc_probe_outstanding(pr.p), lost);
	EXPECT_EQ(0u, bc_probe_sends_after_free(pr.p));
	bc_probe_release(clnt);
	EXPECT_EQ(1, bc_probe_xprt_refs(pr.p));
}

} // namespace
