// SPDX-License-Identifier: MIT
/*
 * test_transport_evt.cc - Event_Threads above one (docs/threading.md): many
 * connections spread over several event threads, their Replies built on
 * the server's worker threads and handed back to each connection's own
 * thread, connections leaving with Replies in flight, the shared receive
 * pool fed from every thread. Also under ThreadSanitizer (ci/tsan.sh).
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

/* The shared receive pool is the listener's thread's: receives that
 * connections on the other threads consumed come back through it. */
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

} // namespace
