// SPDX-License-Identifier: MIT
// The backchannel's CLIENTs against their connection's teardown
// (src/plugin/rrp_backchannel.c), without ganesha: rrp_bc_probe.c stands in
// for the transport and the engine. Issue #32: a CLIENT made while its
// connection went down read the connection before the teardown pass and was
// listed after it, so it was never marked dead and its next callback went
// out on the freed connection. Run under ThreadSanitizer too (ci/tsan.sh).
#include <gtest/gtest.h>

#include <rpc/clnt_stat.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "plugin/rrp_bc_probe.h"

namespace {

struct Probe {
	bc_probe *p = bc_probe_new();
	~Probe()
	{
		bc_probe_free(p);
	}
};

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

} // namespace
