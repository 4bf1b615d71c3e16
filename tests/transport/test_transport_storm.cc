// SPDX-License-Identifier: MIT
/*
 * A reconnect storm, as after a server restart (docs/admission.md): 2,000
 * connection requests from 20 client hosts - child processes, each with its
 * own peer address (127.0.0.2 .. .21, the soft fabric's tcp) and fabric -
 * sent at once by the independent requester (tests/support/rr_storm.h),
 * against caps that admit all of them or only part. Held here: each request is admitted or refused
 * exactly as it would be one by one - per cause, against the engine's counters (conns_refused,
 * conns_refused_peer, conns_refused_mem; the rest is Max_Connections) and
 * per peer - no admitted connection waits past the handshake timeout, none
 * fails or times out, and at the end a NULL call succeeds on every admitted
 * connection. Not held: how long it takes (bench/RESULTS.md G).
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "support/rr_storm.h"
#include "transport/rr_transport_fixture.h"

using namespace rrtest;

namespace {

constexpr unsigned kPeers = 20;
constexpr unsigned kPerPeer = 100;
constexpr unsigned kConns = kPeers * kPerPeer;
/* Seconds; what the engine gives a connection for its first message. */
constexpr int kHandshakeTimeout = 10;

/* Descriptors: the engine takes 2 per connection (soft fabric), a client
 * host 3 per connection (socket, channel, CQ). The soft limit is raised to
 * the hard one here, before the server is forked, so that it inherits it. */
bool fds_for_storm(std::string *why)
{
	rlimit rl;
	const rlim_t need = 2 * kConns + 256;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return false;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return true;
	*why = "RLIMIT_NOFILE hard limit " + std::to_string(rl.rlim_max) + " < " +
	       std::to_string(need) + " a storm of " + std::to_string(kConns) + " needs";
	return false;
}

std::vector<std::string> peer_sources()
{
	std::vector<std::string> v;
	for (unsigned i = 0; i < kPeers; i++)
		v.push_back("127.0.0." + std::to_string(i + 2));
	return v;
}

/* What a client host reports of one connection (one line on its pipe). */
struct Rec {
	std::string source;
	int state = 0; /* StormState */
	double t_req = 0, t_answer = 0, t_reply = 0;
	int reply_ok = 0;
	uint32_t credits = 0;
	std::string err;
};

/*
 * One client host of the storm: a child process (fork, before any fabric
 * is open here) with its own source address and fabric. It waits for the
 * common start time, runs its share of the storm (rr_storm.h), writes one
 * line per connection, then on "call" makes a NULL call on each of its
 * connections that is up and answers "ok N"; at EOF it closes them and exits.
 */
void host_main(const std::string &addr, const std::string &source, double start_at, int in, int out)
{
	FILE *w = fdopen(out, "w");
	FILE *r = fdopen(in, "r");
	fab_fabric *fab = nullptr;
	StormOptions o;
	StormResult res;
	char line[64];

	if (!w || !r || fab_open(nullptr, &fab))
		_exit(2);
	o.addr = addr;
	o.sources = {source};
	o.conns = kPerPeer;
	o.timeout_ms = 3 * kHandshakeTimeout * 1000;
	o.call = [](uint32_t xid) { return call_null(xid).rpc; };
	while (storm_now() < start_at)
		usleep(200);
	if (storm_run(o, fab, &res))
		_exit(3);
	for (const auto &c : res.conns) {
		size_t off;
		bool ok = c.t_reply && rpc_success(c.reply, c.xid, &off);
		std::string err = c.err.substr(0, 60);

		for (auto &ch : err)
			if (ch == ' ' || ch == '\n')
				ch = '_';
		fprintf(w, "%d %.6f %.6f %.6f %d %u %s\n", int(c.state), c.t_req, c.t_answer,
			c.t_reply, ok ? 1 : 0, c.reply.credits, err.empty() ? "-" : err.c_str());
	}
	fprintf(w, "END\n");
	fflush(w);
	if (fgets(line, sizeof(line), r) && !strncmp(line, "call", 4)) {
		std::vector<std::pair<StormConn *, uint32_t>> sent;
		unsigned ok = 0;

		for (auto &c : res.conns) {
			if (c.state != StormState::UP)
				continue;
			uint32_t x = c.r->next_xid();
			if (c.r->post(call_null(x).rpc, CallSpec()) >= 0)
				sent.push_back({&c, x});
		}
		/* Generous: after a storm, 2,000 idle soft connections wake at
		 * once and each starts its reader and writer threads again
		 * (fab_soft_idle.c), which on 2 cores takes tens of seconds.
		 * This holds that every call is answered, not how fast. */
		for (auto &p : sent) {
			Reply rep;
			size_t off;
			if (p.first->r->wait(p.second, &rep, 120000) &&
			    rpc_success(rep, p.second, &off))
				ok++;
		}
		fprintf(w, "ok %u\n", ok);
		fflush(w);
	}
	while (fgets(line, sizeof(line), r))
		;
	res.conns.clear();
	fab_close(fab);
	_exit(0);
}

class Storm : public TransportTest
{
      protected:
	struct Host {
		pid_t pid = -1;
		FILE *to = nullptr, *from = nullptr;
	};
	std::vector<Host> hosts;
	std::vector<Rec> recs;
	std::string no_fds;
	unsigned up = 0, refused = 0, failed = 0, pending = 0, replied = 0;
	double max_hs_up = 0, max_hs_refused = 0;
	std::string first_error;

	Storm()
	{
		sopts.tcp = true; /* peers with IP addresses */
	}
	/* The server's bounds for this test, then SetUp. */
	void serve(std::vector<std::string> args)
	{
		args.push_back("--handshake-timeout");
		args.push_back(std::to_string(kHandshakeTimeout));
		sopts.args = args;
		TransportTest::SetUp();
	}
	void SetUp() override
	{
		/* serve() starts the server, with the test's bounds */
		if (!fds_for_storm(&no_fds))
			GTEST_SKIP() << no_fds;
	}
	void TearDown() override
	{
		for (auto &h : hosts) {
			if (h.to)
				fclose(h.to); /* EOF: the host closes its connections */
			if (h.from)
				fclose(h.from);
		}
		for (auto &h : hosts) {
			int st = 0;
			if (h.pid > 0) {
				waitpid(h.pid, &st, 0);
				EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
				    << "client host " << st;
			}
		}
		if (srv.pid() > 0)
			TransportTest::TearDown();
	}

	/* 20 client hosts, kPerPeer requests each, all sent from the same instant. */
	void storm()
	{
		auto src = peer_sources();
		double start_at = storm_now() + 2.0; /* every host forked and waiting */

		fflush(stdout);
		fflush(stderr);
		for (unsigned i = 0; i < kPeers; i++) {
			int to[2], from[2];
			ASSERT_EQ(pipe(to), 0);
			ASSERT_EQ(pipe(from), 0);
			pid_t pid = fork();
			ASSERT_GE(pid, 0);
			if (pid == 0) {
				close(to[1]);
				close(from[0]);
				for (auto &h : hosts) {
					fclose(h.to);
					fclose(h.from);
				}
				host_main(srv.addr(), src[i], start_at, to[0], from[1]);
			}
			close(to[0]);
			close(from[1]);
			Host h;
			h.pid = pid;
			h.to = fdopen(to[1], "w");
			h.from = fdopen(from[0], "r");
			hosts.push_back(h);
		}
		for (unsigned i = 0; i < kPeers; i++) {
			char line[256], err[128];
			while (fgets(line, sizeof(line), hosts[i].from) &&
			       strncmp(line, "END", 3)) {
				Rec r;
				r.source = src[i];
				if (sscanf(line, "%d %lf %lf %lf %d %u %127s", &r.state, &r.t_req,
					   &r.t_answer, &r.t_reply, &r.reply_ok, &r.credits,
					   err) == 7)
					r.err = err;
				recs.push_back(r);
			}
		}
		double first = 0, last_req = 0, last_reply = 0;
		for (const auto &r : recs) {
			double hs = r.t_answer > 0 ? r.t_answer - r.t_req : 0;
			first = first == 0 || r.t_req < first ? r.t_req : first;
			last_req = std::max(last_req, r.t_req);
			switch (StormState(r.state)) {
			case StormState::UP:
				up++;
				max_hs_up = std::max(max_hs_up, hs);
				replied += r.reply_ok;
				last_reply = std::max(last_reply, r.t_reply);
				break;
			case StormState::REFUSED:
				refused++;
				max_hs_refused = std::max(max_hs_refused, hs);
				break;
			case StormState::FAILED:
				failed++;
				if (first_error.empty())
					first_error = r.err;
				break;
			case StormState::PENDING:
				pending++;
				break;
			}
		}
		fprintf(stderr,
			"storm: %u up, %u refused, %u failed, %u pending; first request to last "
			"first Reply %.2f s, requests sent in %.2f s, longest handshake %.3f s "
			"(refused %.3f s)\n",
			up, refused, failed, pending, last_reply ? last_reply - first : 0.0,
			last_req - first, max_hs_up, max_hs_refused);
	}

	/* What every storm must hold, whatever the bounds. */
	void check_common(unsigned want_up)
	{
		EXPECT_EQ(recs.size(), size_t(kConns)) << "a client host did not report";
		EXPECT_EQ(failed, 0u) << first_error;
		EXPECT_EQ(pending, 0u) << "requests the server never answered";
		EXPECT_EQ(up, want_up);
		EXPECT_EQ(up + refused, kConns);
		/* Every admitted connection got its first Reply, a good one. */
		EXPECT_EQ(replied, up);
		unsigned zero = 0;
		for (const auto &r : recs)
			zero += r.reply_ok && !r.credits;
		EXPECT_EQ(zero, 0u) << "first Replies that granted 0 credits";
		/* Answered within the handshake timeout, admitted or refused. */
		EXPECT_LT(max_hs_up, double(kHandshakeTimeout));
		EXPECT_LT(max_hs_refused, double(kHandshakeTimeout));

		auto st = srv.stats();
		EXPECT_EQ(st["conns_accepted"], uint64_t(want_up));
		EXPECT_EQ(st["conns_active"], uint64_t(want_up));
		EXPECT_EQ(st["conns_refused"], uint64_t(kConns - want_up));
		EXPECT_EQ(st["conns_failed"], 0u);
		EXPECT_EQ(st["conns_timed_out"], 0u) << "an admitted connection was closed";
		EXPECT_EQ(st["ul_conn_up"], uint64_t(want_up));

		/* At the end, a call on every admitted connection, all hosts at once. */
		for (auto &h : hosts) {
			fputs("call\n", h.to);
			fflush(h.to);
		}
		unsigned ok = 0;
		for (auto &h : hosts) {
			unsigned n = 0;
			char line[64];
			if (fgets(line, sizeof(line), h.from) && sscanf(line, "ok %u", &n) == 1)
				ok += n;
		}
		EXPECT_EQ(ok, want_up) << "a NULL call at the end failed on some connection";
		EXPECT_EQ(srv.stats()["ul_calls"], 2 * uint64_t(want_up));
	}

	std::map<std::string, unsigned> up_per_source() const
	{
		std::map<std::string, unsigned> m;
		for (const auto &r : recs)
			if (StormState(r.state) == StormState::UP)
				m[r.source]++;
		return m;
	}
};

TEST_F(Storm, AllAdmittedWhenEveryoneFits)
{
	/* Both caps exactly at the storm's size: the last one still fits. */
	ASSERT_NO_FATAL_FAILURE(serve({"--max-conns", std::to_string(kConns), "--max-per-peer",
				       std::to_string(kPerPeer), "--recv-mem", "0", "--srq", "1"}));
	ASSERT_NO_FATAL_FAILURE(storm());
	check_common(kConns);
	EXPECT_EQ(srv.stats()["conns_refused_peer"], 0u);
	EXPECT_EQ(srv.stats()["conns_refused_mem"], 0u);
	for (const auto &kv : up_per_source())
		EXPECT_EQ(kv.second, kPerPeer) << kv.first;
}

TEST_F(Storm, PerPeerCapAdmitsEachPeerItsShare)
{
	/* 60 of each peer's 100; Max_Connections and the budget do not bind. */
	const unsigned cap = 60;
	ASSERT_NO_FATAL_FAILURE(serve({"--max-conns", std::to_string(2 * kConns), "--max-per-peer",
				       std::to_string(cap), "--recv-mem", "0", "--credits", "4"}));
	ASSERT_NO_FATAL_FAILURE(storm());
	check_common(kPeers * cap);
	auto st = srv.stats();
	EXPECT_EQ(st["conns_refused_peer"], uint64_t(kPeers * (kPerPeer - cap)));
	EXPECT_EQ(st["conns_refused_mem"], 0u);
	auto m = up_per_source();
	EXPECT_EQ(m.size(), size_t(kPeers));
	for (const auto &kv : m)
		EXPECT_EQ(kv.second, cap) << kv.first;
}

TEST_F(Storm, MaxConnectionsAdmitsUpToTheCap)
{
	const unsigned max = 1500;
	ASSERT_NO_FATAL_FAILURE(serve({"--max-conns", std::to_string(max), "--max-per-peer", "0",
				       "--recv-mem", "0", "--srq", "1"}));
	ASSERT_NO_FATAL_FAILURE(storm());
	check_common(max);
	auto st = srv.stats();
	/* every refusal is Max_Connections': neither of the other causes */
	EXPECT_EQ(st["conns_refused_peer"], 0u);
	EXPECT_EQ(st["conns_refused_mem"], 0u);
}

/*
 * The budget: the same connections one by one against a fresh server first
 * (until the first refusal: nothing closes, so every later one would be
 * refused too), then the storm. The storm admits as many, with the same
 * grants (the last ones shrink to what is left, rr_accept.c), and refuses
 * the rest for memory.
 */
TEST_F(Storm, BudgetAdmitsWhatOneByOneWould)
{
	const std::vector<std::string> bounds = {
	    "--max-conns", std::to_string(2 * kConns), "--max-per-peer", "0", "--credits", "8",
	    "--recv-mem",  std::to_string(96u << 20)};
	std::vector<uint32_t> grants_one_by_one;
	{
		ServerProc one;
		ServerOpts so;
		so.tcp = true;
		so.args = bounds;
		ASSERT_TRUE(one.start(so)) << one.why();
		fab_fabric *f1 = nullptr;
		ASSERT_EQ(fab_open(nullptr, &f1), 0);
		std::vector<std::unique_ptr<Requester>> held;
		auto src = peer_sources();
		for (unsigned i = 0; i < kConns; i++) {
			RequesterOptions ro;
			ro.addr = one.addr();
			ro.fabric = f1;
			ro.recv_bufs = 4;
			setenv("RPCRDMA_SOFT_SOURCE_ADDR", src[i % kPeers].c_str(), 1);
			auto r = Requester::connect(ro, nullptr);
			unsetenv("RPCRDMA_SOFT_SOURCE_ADDR");
			if (!r)
				break;
			uint32_t x = r->next_xid();
			Reply rep;
			size_t off;
			ASSERT_TRUE(r->call(call_null(x).rpc, CallSpec(), &rep, 10000));
			ASSERT_TRUE(rpc_success(rep, x, &off));
			grants_one_by_one.push_back(rep.credits);
			held.push_back(std::move(r));
		}
		EXPECT_EQ(one.stats()["conns_refused_mem"], 1u) << "the budget did not bind";
		held.clear();
		fab_close(f1);
		EXPECT_EQ(one.stop(), 0);
	}
	const unsigned k = unsigned(grants_one_by_one.size());
	ASSERT_GT(k, 0u);
	ASSERT_LT(k, kConns) << "a budget that binds, please";

	ASSERT_NO_FATAL_FAILURE(serve(bounds));
	ASSERT_NO_FATAL_FAILURE(storm());
	check_common(k);
	auto st = srv.stats();
	EXPECT_EQ(st["conns_refused_mem"], uint64_t(kConns - k));
	EXPECT_EQ(st["conns_refused_peer"], 0u);
	std::vector<uint32_t> grants;
	for (const auto &r : recs)
		if (StormState(r.state) == StormState::UP && r.reply_ok)
			grants.push_back(r.credits);
	std::sort(grants.begin(), grants.end());
	std::sort(grants_one_by_one.begin(), grants_one_by_one.end());
	EXPECT_EQ(grants, grants_one_by_one) << "the storm's grants differ from one by one";
}

} // namespace
