// SPDX-License-Identifier: MIT
/*
 * test_transport_evt.cc - Event_Threads above one (docs/threading.md): many
 * connections spread over several event threads, their Replies built on
 * the server's worker threads and handed back to each connection's own
 * thread, connections leaving with Replies in flight, the shared receive
 * pools, one per thread, each fed by its own thread. Also under ThreadSanitizer (ci/tsan.sh).
 */
#include <dirent.h>

#include <fstream>
#include <set>
#include <string>
#include <tuple>

#include "transport/rr_transport_fixture.h"

using namespace rrtest;

namespace {

constexpr int kThreads = 4;

/* The names of @pid's threads that start with @prefix. */
std::set<std::string> thread_names(pid_t pid, const std::string &prefix)
{
	std::set<std::string> names;
	std::string dir = "/proc/" + std::to_string(pid) + "/task";
	DIR *d = opendir(dir.c_str());

	if (!d)
		return names;
	while (struct dirent *e = readdir(d)) {
		std::ifstream f(dir + "/" + e->d_name + "/comm");
		std::string name;

		if (f && std::getline(f, name) && name.compare(0, prefix.size(), prefix) == 0)
			names.insert(name);
	}
	closedir(d);
	return names;
}

class EvtThreads : public TransportTest {
      protected:
	std::mt19937 rng{33};

	EvtThreads()
	{
		sopts.args = {"--event-threads", std::to_string(kThreads)};
	}

	/* One call of a mix: answered on the event thread (ECHO) or by a
	 * worker (DELAY), inline or with a Read chunk in and a Write chunk or a
	 * Long Reply out. */
	int64_t post_mixed(Requester *q, unsigned int kind, std::vector<uint8_t> *data)
	{
		CallSpec s;
		TestCall c;

		switch (kind % 4) {
		case 0: /* the event thread answers, inline */
			*data = random_bytes(rng, 1 + rng() % 1500);
			c = call_data(q->next_xid(), RRT_PROC_ECHO, *data);
			break;
		case 1: /* a worker answers, inline */
			*data = random_bytes(rng, 1 + rng() % 1500);
			c = call_delay(q->next_xid(), rng() % 4, *data);
			break;
		case 2: /* a worker answers: Read chunk in, Write chunk out */
			*data = random_bytes(rng, 5000 + rng() % 30000);
			c = call_delay(q->next_xid(), rng() % 4, *data);
			s = read_spec(c);
			s.writes.push_back({{65536}, false});
			break;
		default: /* a worker answers: Read chunk in, Long Reply out */
			*data = random_bytes(rng, 5000 + rng() % 20000);
			c = call_delay(q->next_xid(), rng() % 4, *data);
			s = read_spec(c);
			s.reply = {32768};
			break;
		}
		return q->post(c.rpc, s);
	}
};

TEST_F(EvtThreads, EachThreadRuns)
{
	std::set<std::string> want;

	for (int i = 0; i < kThreads; i++)
		want.insert("rpcrdma-event" + std::to_string(i));
	/* each thread names itself as it starts, which READY does not wait for */
	std::set<std::string> seen;
	eventually([&] { return (seen = thread_names(srv.pid(), "rpcrdma-event")) == want; });
	EXPECT_EQ(seen, want);
}

/*
 * Connections enough that every thread has several; each pipelines calls
 * of every kind, round after round, all on the wire at once. Every Reply
 * arrives whole on its own connection, whichever thread built it.
 */
TEST_F(EvtThreads, ManyConnectionsRepliedFromWorkers)
{
	constexpr int kConns = 24;
	constexpr int kRounds = 4;
	std::vector<Requester *> qs;
	uint64_t delayed = 0, calls = 0;
	auto before = srv.stats();

	for (int i = 0; i < kConns; i++) {
		Requester *q = connect();
		ASSERT_NE(q, nullptr) << "connection " << i;
		qs.push_back(q);
	}
	for (int round = 0; round < kRounds; round++) {
		std::vector<std::tuple<Requester *, uint32_t, std::vector<uint8_t>>> inflight;

		for (size_t n = 0; n < qs.size(); n++) {
			Requester *q = qs[n];
			uint32_t g = q->grant() < 8 ? q->grant() : 8;

			for (uint32_t i = 0; i < g; i++) {
				std::vector<uint8_t> d;
				unsigned int kind = unsigned(round + n + i);
				int64_t x = post_mixed(q, kind, &d);

				ASSERT_GE(x, 0) << "round " << round << " conn " << n << ": "
						<< q->last_error();
				inflight.emplace_back(q, uint32_t(x), std::move(d));
				delayed += kind % 4 != 0;
			}
		}
		for (auto &f : inflight) {
			Reply r;

			ASSERT_TRUE(std::get<0>(f)->wait(std::get<1>(f), &r))
				<< "round " << round << ": " << std::get<0>(f)->last_error();
			EXPECT_TRUE(opaque_result(r, std::get<1>(f), std::get<2>(f)))
				<< "round " << round;
		}
		calls += inflight.size();
	}
	auto after = srv.stats();
	EXPECT_EQ(after["ul_delayed_replies"] - before["ul_delayed_replies"], delayed);
	EXPECT_EQ(after["calls"] - before["calls"], calls);
	EXPECT_EQ(after["conns_accepted"], uint64_t(kConns));
}

/*
 * Half the connections leave while workers still hold Replies for them:
 * their threads give those up, free the connections and hand each back to
 * the listener's thread; the other half, on the same threads, keep
 * answering.
 */
TEST_F(EvtThreads, ConnectionsLeaveWithRepliesInFlight)
{
	constexpr int kConns = 16;

	for (int i = 0; i < kConns; i++)
		ASSERT_NE(connect(), nullptr) << "connection " << i;
	for (int i = 0; i < kConns; i += 2) {
		Requester *q = reqs[i].get();
		uint32_t g = q->grant() < 6 ? q->grant() : 6;

		for (uint32_t k = 0; k < g; k++) {
			TestCall c = call_delay(q->next_xid(), 20 + k, random_bytes(rng, 100));

			ASSERT_GE(q->post(c.rpc, CallSpec()), 0) << q->last_error();
		}
		reqs[i].reset();
	}
	for (int i = 1; i < kConns; i += 2)
		EXPECT_TRUE(ping(reqs[i].get())) << "connection " << i;
	EXPECT_EQ(conns_listed_when(kConns / 2), uint64_t(kConns / 2));
	for (int i = 1; i < kConns; i += 2)
		EXPECT_TRUE(ping(reqs[i].get())) << "connection " << i;
	EXPECT_EQ(srv.stats()["conns_freed"], uint64_t(kConns / 2));
}

/* A shared receive pool per event thread: each thread posts, reaps and
 * grows its own connections' receives. */
class EvtThreadsSrq : public EvtThreads {
      protected:
	EvtThreadsSrq()
	{
		sopts.args.push_back("--srq");
		sopts.args.push_back("1");
	}
};

TEST_F(EvtThreadsSrq, CallsFlowOnEveryThread)
{
	constexpr int kConns = 12;
	std::vector<std::tuple<Requester *, uint32_t, std::vector<uint8_t>>> inflight;

	for (int i = 0; i < kConns; i++)
		ASSERT_NE(connect(), nullptr) << "connection " << i;
	for (int round = 0; round < 3; round++) {
		inflight.clear();
		for (size_t n = 0; n < reqs.size(); n++) {
			Requester *q = reqs[n].get();
			uint32_t g = q->grant() < 8 ? q->grant() : 8;

			for (uint32_t i = 0; i < g; i++) {
				std::vector<uint8_t> d;
				int64_t x = post_mixed(q, unsigned(round + n + i), &d);

				ASSERT_GE(x, 0) << q->last_error();
				inflight.emplace_back(q, uint32_t(x), std::move(d));
			}
		}
		for (auto &f : inflight) {
			Reply r;

			ASSERT_TRUE(std::get<0>(f)->wait(std::get<1>(f), &r))
				<< std::get<0>(f)->last_error();
			EXPECT_TRUE(opaque_result(r, std::get<1>(f), std::get<2>(f)));
		}
	}
	EXPECT_EQ(srv.stats()["rnr_disconnects"], 0u);
}

/* Small pools and grants, so that a few rounds of calls need each pool's
 * receives posted again several times over. */
class EvtThreadsSrqOwn : public EvtThreads {
      protected:
	static constexpr uint32_t kPool = 64;

	EvtThreadsSrqOwn()
	{
		for (const char *a : {"--srq", "1", "--srq-depth", "64", "--credits", "8"})
			sopts.args.push_back(a);
	}

	void SetUp() override
	{
		if (!rr_test_device_srq())
			GTEST_SKIP() << "device profile " << rr_test_device_name()
				     << " gives Use_SRQ no shared receive queue";
		EvtThreads::SetUp();
	}

	/* Post STALL @ms on @q; its xid, or a negative errno. */
	int64_t post_stall(Requester *q, uint32_t ms)
	{
		Wire w = rpc_call_header(q->next_xid(), RRT_PROG, RRT_VERS, RRT_PROC_STALL);

		w.u32(ms);
		return q->post(w.b, CallSpec());
	}

	/* The event thread STALL's reply names; UINT32_MAX when it is no
	 * good reply. */
	static uint32_t stall_thread(const Reply &r, uint32_t xid)
	{
		size_t off;

		if (!rpc_success(r, xid, &off) || r.rpc.size() < off + 4)
			return UINT32_MAX;
		return uint32_t(r.rpc[off]) << 24 | uint32_t(r.rpc[off + 1]) << 16 |
		       uint32_t(r.rpc[off + 2]) << 8 | r.rpc[off + 3];
	}
};

/*
 * Each thread posts its own pool's receives and reaps its own connections'
 * completions: while evt[0] (the listener's thread) is held up for five
 * seconds by a call that blocks it, the connections of the other threads
 * make many times more calls than their pools hold - each receive posted
 * again several times over - and every one is answered before evt[0] is
 * back. With one pool that evt[0] alone posts, they would wait for it.
 */
TEST_F(EvtThreadsSrqOwn, OtherThreadsServeTheirOwnWhileTheListenersIsBlocked)
{
	constexpr int kConns = 2 * kThreads;
	constexpr int kRounds = 12;
	constexpr uint32_t kStallMs = 5000;
	Requester *blocker = nullptr;
	std::vector<Requester *> others;
	std::set<uint32_t> threads;

	for (int i = 0; i < kConns; i++) {
		Requester *q = connect();
		Reply r;

		ASSERT_NE(q, nullptr) << "connection " << i;
		int64_t x = post_stall(q, 0);
		ASSERT_GE(x, 0) << q->last_error();
		ASSERT_TRUE(q->wait(uint32_t(x), &r)) << q->last_error();
		uint32_t t = stall_thread(r, uint32_t(x));
		ASSERT_LT(t, uint32_t(kThreads)) << "connection " << i;
		if (t == 0 && !blocker)
			blocker = q;
		else if (t != 0)
			others.push_back(q), threads.insert(t);
	}
	ASSERT_NE(blocker, nullptr) << "no connection on evt[0] among " << kConns;
	EXPECT_EQ(threads.size(), size_t(kThreads - 1)) << "connections not spread";

	uint64_t seen = srv.stats()["ul_calls"];
	int64_t stall = post_stall(blocker, kStallMs);
	ASSERT_GE(stall, 0) << blocker->last_error();
	/* delivered, so evt[0] is inside it */
	ASSERT_TRUE(eventually([&] { return srv.stats()["ul_calls"] > seen; }));
	auto t0 = std::chrono::steady_clock::now();

	uint64_t calls = 0;
	for (int round = 0; round < kRounds; round++) {
		std::vector<std::tuple<Requester *, uint32_t, std::vector<uint8_t>>> inflight;

		for (Requester *q : others) {
			for (uint32_t i = 0; i < q->grant(); i++) {
				auto d = random_bytes(rng, 100 + rng() % 1500);
				TestCall c = call_data(q->next_xid(), RRT_PROC_ECHO, d);

				ASSERT_GE(q->post(c.rpc, CallSpec()), 0) << q->last_error();
				inflight.emplace_back(q, c.xid, std::move(d));
			}
		}
		for (auto &f : inflight) {
			Reply r;

			ASSERT_TRUE(std::get<0>(f)->wait(std::get<1>(f), &r, 20000))
				<< "round " << round << ": " << std::get<0>(f)->last_error();
			EXPECT_TRUE(opaque_result(r, std::get<1>(f), std::get<2>(f)));
		}
		calls += inflight.size();
	}
	auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
			    std::chrono::steady_clock::now() - t0).count();
	Reply sr;
	bool early = blocker->wait(uint32_t(stall), &sr, 0);

	RecordProperty("others_ms", int(took));

	/* Each thread's connections used its pool over several times. */
	EXPECT_GE(calls / (kThreads - 1), 3 * uint64_t(kPool));
	EXPECT_FALSE(early) << "evt[0] was back before the others were done (" << took
			    << " ms): nothing shown";
	EXPECT_LT(took, int64_t(kStallMs));
	if (!early) {
		ASSERT_TRUE(blocker->wait(uint32_t(stall), &sr, 2 * kStallMs))
			<< blocker->last_error();
	}
	EXPECT_EQ(stall_thread(sr, uint32_t(stall)), 0u);
	EXPECT_EQ(srv.stats()["rnr_disconnects"], 0u);
}

} // namespace
