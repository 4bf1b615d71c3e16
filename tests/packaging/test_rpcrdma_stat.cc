// SPDX-License-Identifier: MIT
// rpcrdma-stat against a fake stats server (a unix socket in a temp dir that
// answers each connection with a canned JSON object and closes, as the
// plugin's rrp_stats.c does), and against a real ganesha when one is installed.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct RunResult {
	int status;
	std::string out;
};

RunResult run(const std::string &args)
{
	std::string cmd = std::string(RPCRDMA_STAT_BIN) + " " + args + " 2>&1";
	FILE *p = popen(cmd.c_str(), "r");
	RunResult r{-1, ""};
	char buf[4096];
	size_t n;

	if (!p)
		return r;
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		r.out.append(buf, n);
	int st = pclose(p);
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return r;
}

std::string make_tempdir()
{
	char tmpl[] = "/tmp/rpcrdma-stat-test.XXXXXX";
	char *d = mkdtemp(tmpl);
	EXPECT_NE(d, nullptr);
	return d ? d : "/tmp";
}

// Serves answer(n) to the n-th connection (0-based).
class FakeStats {
public:
	explicit FakeStats(std::function<std::string(int)> answer) : answer_(std::move(answer))
	{
		dir_ = make_tempdir();
		path_ = dir_ + "/stats.sock";
		struct sockaddr_un sa = {};
		sa.sun_family = AF_UNIX;
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path_.c_str());
		fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		EXPECT_GE(fd_, 0);
		EXPECT_EQ(bind(fd_, (struct sockaddr *)&sa, sizeof(sa)), 0);
		EXPECT_EQ(listen(fd_, 8), 0);
		thread_ = std::thread([this] { serve(); });
	}
	~FakeStats()
	{
		shutdown(fd_, SHUT_RDWR);
		close(fd_);
		thread_.join();
		unlink(path_.c_str());
		rmdir(dir_.c_str());
	}
	const std::string &path() const { return path_; }
	int served() const { return served_; }

private:
	void serve()
	{
		for (int n = 0;; n++) {
			int c = accept(fd_, nullptr, nullptr);
			if (c < 0)
				return;
			std::string s = answer_(n);
			served_++; /* before the answer: the client may exit at EOF */
			size_t off = 0;
			while (off < s.size()) {
				ssize_t w = write(c, s.data() + off, s.size() - off);
				if (w <= 0)
					break;
				off += (size_t)w;
			}
			close(c);
		}
	}
	std::function<std::string(int)> answer_;
	std::string dir_, path_;
	int fd_ = -1;
	std::atomic<int> served_{0};
	std::thread thread_;
};

// The shape rrp_stats.c writes, counters as in RR_STATS_FIELDS.
std::string counters(unsigned long long calls, unsigned long long rd, unsigned long long wr,
		     unsigned grant)
{
	char b[1024];
	snprintf(b, sizeof(b),
		 "\"conns_accepted\":3,\"conns_active\":2,\"calls\":%llu,"
		 "\"calls_with_read_chunks\":4,\"long_calls\":1,\"replies_inline\":90,"
		 "\"replies_reply_chunk\":7,\"replies_write_chunk\":3,\"rdma_read_bytes\":%llu,"
		 "\"rdma_write_bytes\":%llu,\"err_chunk_sent\":2,\"err_vers_sent\":1,\"dropped\":0,"
		 "\"not_delivered\":0,\"rnr_disconnects\":0,\"disconnects\":1,\"send_w_inv\":0,"
		 "\"sends_unsignalled\":0,\"send_posts\":0,\"read_posts\":0,"
		 "\"registrations\":5,\"payload_copies\":0,\"recv_mem_bytes\":1048576,"
		 "\"bc_calls\":6,\"bc_replies\":5,\"bc_errors\":0,\"credit_grant\":%u",
		 calls, rd, wr, grant);
	return b;
}

std::string canned(unsigned long long calls = 100, unsigned long long wr = 2097152)
{
	return "{\"fabric\":\"soft\",\"global\":{" + counters(calls, 512, wr, 32) +
	       "},\"plugin\":{\"requests\":100,\"dropped\":0,\"replies_failed\":0,\"workers\":8},"
	       "\"connections\":[{\"peer\":\"192.0.2.7:40001\"," +
	       counters(calls, 512, wr, 32) +
	       "},{\"peer\":\"[2001:db8::1]:811\",\"calls\":0,\"credit_grant\":16}]}\n";
}

bool has_line(const std::string &out, const std::vector<std::string> &words)
{
	size_t start = 0;
	while (start < out.size()) {
		size_t end = out.find('\n', start);
		if (end == std::string::npos)
			end = out.size();
		std::string line = out.substr(start, end - start);
		size_t at = 0;
		bool ok = true;
		for (const auto &w : words) {
			at = line.find(w, at);
			if (at == std::string::npos) {
				ok = false;
				break;
			}
			at += w.size();
		}
		if (ok)
			return true;
		start = end + 1;
	}
	return false;
}

// The header lines wrap before 100 columns: a line that starts with a space
// continues the one above. Joined again, for has_line.
std::string unwrap(const std::string &out)
{
	std::string r;
	size_t start = 0;
	while (start < out.size()) {
		size_t end = out.find('\n', start);
		if (end == std::string::npos)
			end = out.size();
		std::string line = out.substr(start, end - start);
		if (!r.empty() && !line.empty() && line[0] == ' ' && r.back() == '\n')
			r.pop_back();
		r += line + "\n";
		start = end + 1;
	}
	return r;
}

} // namespace

TEST(RpcrdmaStat, TableFromFakeServer)
{
	// The engine's counters by Reply shape: --wide (the default view is
	// per client, DefaultTableShowsServerAndClients).
	FakeStats fake([](int) { return canned(); });
	RunResult r = run("--wide -s " + fake.path());
	ASSERT_EQ(r.status, 0) << r.out;
	EXPECT_TRUE(has_line(r.out, {"fabric soft"})) << r.out;
	EXPECT_TRUE(has_line(unwrap(r.out), {"2 open", "3 accepted", "1 closed"})) << r.out;
	EXPECT_TRUE(has_line(unwrap(r.out),
			     {"requests 100", "dropped 0", "replies_failed 0", "workers 8"}))
		<< r.out;
	EXPECT_TRUE(has_line(r.out, {"PEER", "CREDITS", "CALLS", "INLINE", "REPLY_CH", "WRITE_CH",
				     "RDMA_RD", "RDMA_WR", "ERR_CHUNK", "ERR_VERS", "REGS",
				     "RECV_MEM", "BC_CALLS"}))
		<< r.out;
	// credits 32, calls 100, inline 90, reply 7, write 3, read 512 B, write 2 MiB,
	// ERR_CHUNK 2, ERR_VERS 1, 5 registrations, 1 MiB receive memory, 6 bc calls
	EXPECT_TRUE(has_line(r.out, {"192.0.2.7:40001", " 32 ", " 100 ", " 90 ", " 7 ", " 3 ",
				     " 512 ", " 2.0M ", " 2 ", " 1 ", " 5 ", " 1.0M ", " 6"}))
		<< r.out;
	// Absent counters show as "-".
	EXPECT_TRUE(has_line(r.out, {"[2001:db8::1]:811", " 16 ", " 0 ", " - "})) << r.out;
	EXPECT_TRUE(has_line(r.out, {"TOTAL", " 32 ", " 100 ", " 90 "})) << r.out;
	EXPECT_EQ(r.out.find("/s"), std::string::npos) << "no rates without --watch";
}

TEST(RpcrdmaStat, JsonIsPassedThrough)
{
	FakeStats fake([](int) { return canned(); });
	RunResult r = run("--json -s " + fake.path());
	ASSERT_EQ(r.status, 0) << r.out;
	EXPECT_EQ(r.out, canned());
}

TEST(RpcrdmaStat, WatchShowsRates)
{
	// Each answer adds 50 calls and 1 MiB written.
	FakeStats fake([](int n) { return canned(100 + 50ull * n, (2ull + n) << 20); });
	RunResult r = run("--wide --watch 0.5 -c 3 -s " + fake.path());
	ASSERT_EQ(r.status, 0) << r.out;
	EXPECT_EQ(fake.served(), 3);
	EXPECT_TRUE(has_line(r.out, {"PEER", "CALLS", "CALLS/s", "RDMA_RD/s", "RDMA_WR/s"}))
		<< r.out;
	// First refresh: no rate yet; later ones: ~100 calls/s, ~2 MiB/s.
	EXPECT_TRUE(has_line(r.out, {"TOTAL", " 32 ", " 100 ", " - "})) << r.out;
	// CREDITS CALLS CALLS/s INLINE REPLY_CH WRITE_CH RDMA_RD RDMA_RD/s RDMA_WR RDMA_WR/s:
	// 50 calls and 1 MiB per refresh of at least 0.5 s (longer on a loaded machine).
	std::smatch m;
	ASSERT_TRUE(std::regex_search(
		r.out, m,
		std::regex(R"(TOTAL +32 +150 +(\d+) +90 +7 +3 +512 +0 +3\.0M +(\d+(\.\d)?)([KM]) )")))
		<< r.out;
	int calls_rate = std::stoi(m[1]);
	double wr_rate = std::stod(m[2]) * (m[4] == "M" ? 1024 * 1024 : 1024);
	EXPECT_GE(calls_rate, 10) << r.out;
	EXPECT_LE(calls_rate, 100) << r.out;
	EXPECT_GE(wr_rate, 0.2 * 1024 * 1024) << r.out;
	EXPECT_LE(wr_rate, 2.05 * 1024 * 1024) << r.out;
	EXPECT_TRUE(has_line(r.out, {"192.0.2.7:40001", " 200 "})) << r.out;
}

TEST(RpcrdmaStat, WatchJson)
{
	FakeStats fake([](int) { return canned(); });
	RunResult r = run("--json --watch=0.1 --count 2 -s " + fake.path());
	ASSERT_EQ(r.status, 0) << r.out;
	EXPECT_EQ(r.out, canned() + canned());
}

TEST(RpcrdmaStat, NoServer)
{
	std::string dir = make_tempdir();
	RunResult r = run("-s " + dir + "/none.sock");
	rmdir(dir.c_str());
	EXPECT_EQ(r.status, 1);
	EXPECT_NE(r.out.find("cannot connect to " + dir + "/none.sock"), std::string::npos) << r.out;
}

TEST(RpcrdmaStat, RejectsBadJson)
{
	for (const char *bad : {"", "{", "{\"global\":}", "[1,2]", "{\"a\":1} x", "{\"a\":\"\x01\"}",
				"{\"a\":tru}", "{\"a\":1,}"}) {
		FakeStats fake([bad](int) { return std::string(bad); });
		RunResult r = run("-s " + fake.path());
		EXPECT_EQ(r.status, 1) << "input: " << bad << "\n" << r.out;
		EXPECT_NE(r.out.find("did not answer with a JSON object"), std::string::npos) << r.out;
	}
	// Nesting beyond the bound is refused, not a stack overflow.
	FakeStats deep([](int) { return "{\"a\":" + std::string(100000, '[') + "}"; });
	EXPECT_EQ(run("-s " + deep.path()).status, 1);
}

TEST(RpcrdmaStat, ParsesEscapesAndSpacing)
{
	FakeStats fake([](int) {
		return std::string("  {\n \"fabric\" : \"ve\\u0072bs\" , \"global\" : { \"calls\" : 7 } ,"
				   " \"plugin\":{}, \"connections\" : [ { \"peer\" : \"a\\\"b\" ,"
				   " \"calls\" : 7, \"extra\": [true, false, null, -1.5e3, {}] } ] }\n");
	});
	RunResult r = run("-s " + fake.path());
	ASSERT_EQ(r.status, 0) << r.out;
	EXPECT_TRUE(has_line(r.out, {"fabric verbs"})) << r.out;
	EXPECT_TRUE(has_line(r.out, {"1 open"})) << r.out;
	EXPECT_TRUE(has_line(r.out, {"a\"b", " - ", " 7 "})) << r.out;
}

TEST(RpcrdmaStat, Usage)
{
	EXPECT_EQ(run("--help").status, 0);
	EXPECT_EQ(run("--bogus").status, 2);
	EXPECT_EQ(run("--watch 0").status, 2);
	EXPECT_EQ(run("extra-arg").status, 2);
}

// --check: exit 0 / 1 / 2 and one line, from the "health" object the plugin
// writes (rrp_stats.c) or from the socket being unreachable.
namespace
{
std::string with_health(const char *serving, const char *why, int listeners, int up)
{
	return std::string("{\"fabric\":\"verbs\",\"global\":{\"calls\":0},\"plugin\":{},"
			   "\"connections\":[{\"peer\":\"192.0.2.7:40001\",\"calls\":1}],"
			   "\"health\":{\"serving\":") +
	       serving + ",\"why\":\"" + why + "\",\"listeners\":" + std::to_string(listeners) +
	       ",\"listeners_serving\":" + std::to_string(up) + "}}";
}
int lines(const std::string &s)
{
	return (int)std::count(s.begin(), s.end(), '\n');
}
} // namespace

TEST(RpcrdmaStatCheck, HealthyExitsZero)
{
	FakeStats fake([](int) { return with_health("true", "", 1, 1); });
	RunResult r = run("--check -s " + fake.path());
	EXPECT_EQ(r.status, 0) << r.out;
	EXPECT_EQ(r.out, "RDMA OK: serving on 1 listener(s), 1 connection(s)\n");
}

TEST(RpcrdmaStatCheck, ListenerDownExitsTwo)
{
	FakeStats fake([](int) {
		return with_health("false", "RDMA device removed (listener 0.0.0.0:20049 closed)",
				   1, 0);
	});
	RunResult r = run("--check -s " + fake.path());
	EXPECT_EQ(r.status, 2) << r.out;
	EXPECT_EQ(
	    r.out,
	    "RDMA CRITICAL: not serving: RDMA device removed (listener 0.0.0.0:20049 closed)\n");
}

TEST(RpcrdmaStatCheck, OneOfTwoListenersDownIsDegraded)
{
	FakeStats fake(
	    [](int) { return with_health("true", "cannot listen on [::1]:20049", 2, 1); });
	RunResult r = run("-k -s " + fake.path());
	EXPECT_EQ(r.status, 1) << r.out;
	EXPECT_EQ(lines(r.out), 1) << r.out;
	EXPECT_NE(r.out.find("RDMA WARNING: degraded: 1 of 2 listeners up: cannot listen on [::1]"),
		  std::string::npos)
	    << r.out;
}

TEST(RpcrdmaStatCheck, SocketMissingExitsTwo)
{
	std::string dir = make_tempdir();
	RunResult r = run("--check -s " + dir + "/none.sock");
	rmdir(dir.c_str());
	EXPECT_EQ(r.status, 2) << r.out;
	EXPECT_EQ(lines(r.out), 1) << r.out;
	EXPECT_EQ(r.out.rfind("RDMA CRITICAL: stats socket unreachable: cannot connect to " + dir +
				  "/none.sock",
			      0),
		  0u)
	    << r.out;
}

TEST(RpcrdmaStatCheck, NoHealthOrBadJsonExitsTwo)
{
	for (std::string bad : {std::string("{\"fabric\":\"soft\",\"global\":{}}"),
				std::string("{"), std::string("")}) {
		FakeStats fake([bad](int) { return bad; });
		RunResult r = run("--check -s " + fake.path());
		EXPECT_EQ(r.status, 2) << "input: " << bad << "\n" << r.out;
		EXPECT_EQ(lines(r.out), 1) << r.out;
		EXPECT_NE(r.out.find("gave no health"), std::string::npos) << r.out;
	}
}

// ---- the default view: what is served, and one row per client ----------

namespace
{
// The shape rrp_stats.c writes now: "server", per-client "nfs"/"clientid"
// and byte counts; @peer2 is the second client's address.
std::string with_clients(const std::string &peer2 = "[2001:db8::1]:811",
			 const std::string &big = "5368709120")
{
	return "{\"fabric\":\"soft\",\"server\":{\"listen\":[\"tcp:127.0.0.1:20049\"],"
	       "\"uptime_s\":3661,\"settings\":{\"credits\":64,\"inline_size\":4096,"
	       "\"use_srq\":true,\"srq_depth\":1024,\"recv_mem_budget\":2147483648,"
	       "\"max_connections\":1024,\"max_connections_per_peer\":64,"
	       "\"max_rdma_read_depth\":16,\"handshake_timeout\":30,\"idle_timeout\":0,"
	       "\"workers\":8}},"
	       "\"global\":{\"conns_accepted\":9,\"calls\":130,\"credit_grant\":64,"
	       "\"rdma_read_bytes\":0,\"rdma_write_bytes\":" + big + ",\"err_chunk_sent\":2,"
	       "\"err_vers_sent\":1,\"dropped\":0,\"conns_refused\":4,\"conns_refused_peer\":1,"
	       "\"conns_refused_mem\":2,\"conns_failed\":1,\"conns_timed_out\":0,"
	       "\"disconnects\":7},"
	       "\"plugin\":{\"requests\":130,\"dropped\":0,\"replies_failed\":0,"
	       "\"decode_copy_bytes\":1000,\"decode_in_place_bytes\":0,\"workers\":8},"
	       "\"connections\":[{\"peer\":\"192.0.2.7:40001\",\"nfs\":\"4.1\","
	       "\"clientid\":\"6560a1b200000003\",\"call_bytes\":30720,\"reply_bytes\":" + big +
	       ",\"calls\":100,\"credit_grant\":64,\"rdma_read_bytes\":0,\"rdma_write_bytes\":" +
	       big + ",\"err_chunk_sent\":2,\"err_vers_sent\":1,\"dropped\":0},"
	       "{\"peer\":\"" + peer2 + "\",\"nfs\":\"3\",\"call_bytes\":2048,"
	       "\"reply_bytes\":4096,\"calls\":30,\"credit_grant\":32,\"rdma_read_bytes\":0,"
	       "\"rdma_write_bytes\":0,\"err_chunk_sent\":0,\"err_vers_sent\":0,\"dropped\":0}],"
	       "\"health\":{\"serving\":true,\"why\":\"\",\"listeners\":1,"
	       "\"listeners_serving\":1}}";
}

// Every line of @out within @width columns (bytes: the output is ASCII).
void expect_width(const std::string &out, size_t width)
{
	size_t start = 0;
	while (start < out.size()) {
		size_t end = out.find('\n', start);
		if (end == std::string::npos)
			end = out.size();
		EXPECT_LE(end - start, width) << "line: " << out.substr(start, end - start);
		start = end + 1;
	}
}
} // namespace

TEST(RpcrdmaStat, DefaultTableShowsServerAndClients)
{
	FakeStats fake([](int) { return with_clients(); });
	RunResult r = run("-s " + fake.path());
	ASSERT_EQ(r.status, 0) << r.out;
	EXPECT_TRUE(has_line(r.out, {"rpcrdma:", "serving on tcp:127.0.0.1:20049", "fabric soft",
				     "up 1h01m01s"}))
		<< r.out;
	EXPECT_TRUE(has_line(unwrap(r.out), {"settings:", "credits 64", "inline 4096",
				     "SRQ on (depth 1024)", "budget 2.0G",
				     "conns 1024 (64/peer)", "read depth 16"}))
		<< r.out;
	EXPECT_TRUE(has_line(unwrap(r.out), {"connections:", "2 open", "9 accepted",
				     "4 refused (peer cap 1, budget 2)", "1 failed",
				     "0 timed out", "7 closed"}))
		<< r.out;
	EXPECT_TRUE(has_line(r.out, {"PEER", "NFS", "CLIENTID", "CRED", "CALLS", "BYTES_IN",
				     "BYTES_OUT", "RDMA_RD", "RDMA_WR", "ERRS"}))
		<< r.out;
	// v4.1 client: clientid, 64 credits, 100 calls, 30K in, 5.0G out and
	// written, errors 2 ERR_CHUNK + 1 ERR_VERS + 0 dropped.
	EXPECT_TRUE(has_line(r.out, {"192.0.2.7:40001", " 4.1 ", "6560a1b200000003 ", " 64 ",
				     " 100 ", " 30K ", " 5.0G ", " 0 ", " 5.0G ", " 3"}))
		<< r.out;
	// v3 client: no clientid.
	EXPECT_TRUE(has_line(r.out, {"[2001:db8::1]:811", " 3 ", " - ", " 32 ", " 30 ", " 2.0K ",
				     " 4.0K ", " 0 "}))
		<< r.out;
	EXPECT_TRUE(has_line(r.out, {"TOTAL", " 64 ", " 130 "})) << r.out;
	expect_width(r.out, 100);
}

TEST(RpcrdmaStat, DefaultFitsHundredColumns)
{
	// The widest a row can get: a full IPv6 peer with scope, 20-digit
	// counters, a listener on a long unix path.
	std::string peer = "[fe80:1234:5678:9abc:def0:1234:5678:9abc%enp129s0f1np1]:65535";
	FakeStats fake([peer](int) {
		std::string j = with_clients(peer, "18446744073709551615");
		size_t at = j.find("\"calls\":30,");
		j.replace(at, 11, "\"calls\":18446744073709551615,");
		return j;
	});
	RunResult r = run("-s " + fake.path());
	ASSERT_EQ(r.status, 0) << r.out;
	expect_width(r.out, 100);
	// The long peer is shown whole, on a line of its own.
	EXPECT_TRUE(has_line(r.out, {peer})) << r.out;
	// 20 digits do not fit CALLS: thousands with a suffix (1.8e19 = 18E).
	EXPECT_TRUE(has_line(r.out, {" 3 ", " - ", " 32 ", " 18E "})) << r.out;
}

TEST(RpcrdmaStat, CountersListEveryCounter)
{
	RunResult r = run("--counters");
	ASSERT_EQ(r.status, 0) << r.out;
	// One from each list of rr_counters.def, with scope and meaning.
	EXPECT_TRUE(has_line(r.out, {"calls", "conn", "count", "RPC Calls received"})) << r.out;
	EXPECT_TRUE(has_line(r.out, {"conns_failed", "server", "count"})) << r.out;
	EXPECT_TRUE(has_line(r.out, {"srq_bufs", "server", "gauge"})) << r.out;
	EXPECT_TRUE(has_line(r.out, {"requests", "plugin"})) << r.out;
	EXPECT_TRUE(has_line(r.out, {"call_bytes", "client", "bytes"})) << r.out;
}

// docs/counters.md carries the table rpcrdma-stat --counters-md prints from
// rr_counters.def, between its BEGIN and END markers: the docs cannot drift
// from the code (tools/update-counters-doc.sh rewrites that part).
TEST(CountersDoc, MatchesTable)
{
	std::ifstream f(std::string(RPCRDMA_SOURCE_DIR) + "/docs/counters.md");
	ASSERT_TRUE(f.good()) << "docs/counters.md missing";
	std::string doc((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
	const std::string begin = "<!-- BEGIN rpcrdma-stat --counters-md -->\n";
	const std::string end = "<!-- END rpcrdma-stat --counters-md -->";
	size_t a = doc.find(begin), b = doc.find(end);
	ASSERT_NE(a, std::string::npos);
	ASSERT_NE(b, std::string::npos);
	a += begin.size();
	RunResult r = run("--counters-md");
	ASSERT_EQ(r.status, 0);
	EXPECT_EQ(doc.substr(a, b - a), r.out)
		<< "docs/counters.md is stale: run tools/update-counters-doc.sh";
}
