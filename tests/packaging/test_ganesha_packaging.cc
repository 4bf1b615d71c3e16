// SPDX-License-Identifier: MIT
// Against a real /usr/bin (or /usr/sbin) ganesha.nfsd, skipped when none is
// installed or not root: rpcrdma-stat reads the plugin's stats socket, and a
// plugin built for another ganesha (RPCRDMA_GANESHA_SONAME=libganesha_nfsd.so.9.9)
// logs one version line and leaves ganesha serving TCP as if it were absent.
#include <gtest/gtest.h>

#include <algorithm>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "support/ganesha_server.h"
#include "support/rr_onc.h"
#include "support/rr_requester.h"

namespace {

using rrplug::ensure_rpcbind;
using rrplug::free_port;
using rrplug::slurp;
using rrplug::tcp_connectable;
using rrplug::unix_connectable;

std::string ganesha_binary()
{
	for (const char *p : {"/usr/bin/ganesha.nfsd", "/usr/sbin/ganesha.nfsd"})
		if (access(p, X_OK) == 0)
			return p;
	return "";
}

class Ganesha {
public:
	~Ganesha() { stop(); }

	// Start ganesha with @plugin preloaded; wait until @line appears on its
	// stderr and its NFS port answers. A port free_port picked can be taken
	// before ganesha binds it: then again, with new ports.
	bool start(const std::string &plugin, const std::string &line, std::string *err)
	{
		for (int attempt = 0;; attempt++) {
			if (start_once(plugin, line, err))
				return true;
			bool taken = err->find("Address already in use") != std::string::npos;
			if (attempt >= 3 || !taken)
				return false;
			stop();
		}
	}

	bool start_once(const std::string &plugin, const std::string &line, std::string *err)
	{
		if (!ensure_rpcbind(err))
			return false;
		char tmpl[] = "/tmp/rpcrdma-pkg-test.XXXXXX";
		if (!mkdtemp(tmpl)) {
			*err = "mkdtemp";
			return false;
		}
		dir = tmpl;
		nfs_port = free_port();
		uint16_t mnt = free_port(nfs_port), nlm = free_port(nfs_port, mnt),
			 rq = free_port(nfs_port, mnt, nlm);
		stats = dir + "/stats.sock";
		std::ofstream(dir + "/ganesha.conf")
		    << "NFS_CORE_PARAM {\n NFS_Port = " << nfs_port << ";\n MNT_Port = " << mnt
		    << ";\n NLM_Port = " << nlm << ";\n Rquota_Port = " << rq
		    << ";\n Protocols = 3, 4;\n Enable_NLM = false;\n Enable_RQUOTA = false;\n"
		    // ganesha 6 stops without CAP_SYS_RESOURCE otherwise; 4.3 and 5.9
		    // warn that they do not know the key
		    << " allow_set_io_flusher_fail = true;\n}\n"
		    << "NFSV4 { Graceless = true; Lease_Lifetime = 10; Grace_Period = 10;"
		    << " RecoveryRoot = " << dir << "; }\n"
		    << "EXPORT { Export_Id = 1; Path = /mem; Pseudo = /mem; Access_Type = RW;"
		    << " Squash = No_Root_Squash; FSAL { Name = MEM; } }\n"
		    << "RDMA {\n Enable = true;\n Fabric = soft;\n Soft_Socket = "
		    << (soft_socket.empty() ? dir + "/rdma.sock" : dir + soft_socket)
		    << ";\n Credits = 32;\n Stats_Socket = " << stats << ";\n}\n"
		    << "LOG { Default_Log_Level = EVENT; }\n";
		std::string gan = ganesha_binary(), errf = dir + "/stderr.log";
		std::string conf = dir + "/ganesha.conf", log = dir + "/ganesha.log",
			    pidf = dir + "/ganesha.pid";
		pid = fork();
		if (pid == 0) {
			setpgid(0, 0);
			int fd = open(errf.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
			dup2(fd, 1);
			dup2(fd, 2);
			setenv("LD_PRELOAD", plugin.c_str(), 1);
			execl(gan.c_str(), "ganesha.nfsd", "-F", "-f", conf.c_str(), "-L", log.c_str(),
			      "-p", pidf.c_str(), (char *)nullptr);
			_exit(127);
		}
		auto up_or_gone = [&] {
			int st;
			if (waitpid(pid, &st, WNOHANG) == pid)
				pid = -1; /* exited at start-up */
			return pid < 0 || stderr_text().find(line) != std::string::npos;
		};
		if (!wait_for(up_or_gone, 20) || stderr_text().find(line) == std::string::npos ||
		    !wait_for([&] { return tcp_connectable(nfs_port); }, 20)) {
			*err = "ganesha did not come up with '" + line + "':\n" + stderr_text() +
			       "\n--- log ---\n" + slurp(log);
			return false;
		}
		return true;
	}

	/* what ganesha printed: the preloaded library's lines (stderr) and the
	 * core's (ganesha's log) */
	std::string stderr_text() const
	{
		return slurp(dir + "/stderr.log") + slurp(dir + "/ganesha.log");
	}

	void stop()
	{
		if (pid > 0) {
			int st;
			kill(pid, SIGTERM);
			if (!wait_for([&] { return waitpid(pid, &st, WNOHANG) == pid; }, 10)) {
				kill(pid, SIGKILL);
				waitpid(pid, &st, 0);
			}
			pid = -1;
		}
		if (!dir.empty() && system(("rm -rf '" + dir + "'").c_str()) != 0)
			ADD_FAILURE() << "cannot remove " << dir;
		dir.clear();
	}

	template <class F> static bool wait_for(F ok, int seconds = 5)
	{
		auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
		while (std::chrono::steady_clock::now() < end) {
			if (ok())
				return true;
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
		}
		return ok();
	}

	std::string dir, stats;
	std::string soft_socket; /* set before start: Soft_Socket, under dir */
	uint16_t nfs_port = 0;
	pid_t pid = -1;
};

// An NFSv3 NULL call over TCP straight to @port (no rpcbind): accepted, SUCCESS?
bool nfs3_null(uint16_t port)
{
	const uint32_t call[] = {0x80000000u | 40, 0x12345678, 0, 2, 100003, 3, 0, 0, 0, 0, 0};
	uint32_t wire[11], reply[7];
	for (int i = 0; i < 11; i++)
		wire[i] = htonl(call[i]);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_in sin = {};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	bool ok = connect(fd, (sockaddr *)&sin, sizeof(sin)) == 0 &&
		  write(fd, wire, sizeof(wire)) == (ssize_t)sizeof(wire);
	size_t got = 0;
	while (ok && got < sizeof(reply)) {
		ssize_t r = read(fd, (char *)reply + got, sizeof(reply) - got);
		if (r <= 0)
			ok = false;
		else
			got += (size_t)r;
	}
	close(fd);
	// mark, xid, REPLY, MSG_ACCEPTED, verf AUTH_NONE (flavor, len), SUCCESS
	return ok && ntohl(reply[1]) == 0x12345678 && ntohl(reply[2]) == 1 && reply[3] == 0 &&
	       reply[6] == 0;
}

std::string run(const std::string &cmd, int *status)
{
	FILE *p = popen((cmd + " 2>&1").c_str(), "r");
	std::string out;
	char buf[4096];
	size_t n;
	while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0)
		out.append(buf, n);
	int st = p ? pclose(p) : -1;
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

#define SKIP_WITHOUT_GANESHA()                                                                     \
	do {                                                                                       \
		if (ganesha_binary().empty())                                                      \
			GTEST_SKIP() << "no ganesha.nfsd in /usr/bin or /usr/sbin";                \
		if (geteuid() != 0)                                                                \
			GTEST_SKIP() << "ganesha needs root";                                      \
	} while (0)

} // namespace

TEST(GaneshaPackaging, RpcrdmaStatReadsRealPlugin)
{
	SKIP_WITHOUT_GANESHA();
	Ganesha g;
	std::string err;
	ASSERT_TRUE(g.start(RPCRDMA_PLUGIN_SO, "rpcrdma: NFS over RDMA listening on unix:", &err))
		<< err;
	ASSERT_TRUE(Ganesha::wait_for([&] { return unix_connectable(g.stats); }));
	int st;
	std::string out = run(std::string(RPCRDMA_STAT_BIN) + " -s " + g.stats, &st);
	EXPECT_EQ(st, 0) << out;
	EXPECT_NE(out.find("rpcrdma: serving on unix:" + g.dir + "/rdma.sock, fabric soft, up "),
		  std::string::npos)
		<< out;
	EXPECT_NE(out.find("connections: 0 open"), std::string::npos) << out;
	EXPECT_NE(out.find("workers 8"), std::string::npos) << out;
	EXPECT_NE(out.find("TOTAL"), std::string::npos) << out;
	out = run(std::string(RPCRDMA_STAT_BIN) + " --json -s " + g.stats, &st);
	EXPECT_EQ(st, 0) << out;
	EXPECT_EQ(out.rfind("{\"fabric\":\"soft\",\"server\":{\"listen\":[\"unix:", 0), 0u) << out;
	EXPECT_NE(out.find("\"global\":{\"conns_accepted\":0,"), std::string::npos) << out;
	EXPECT_NE(out.find("\"connections\":[]"), std::string::npos) << out;
}

TEST(GaneshaPackaging, WrongGaneshaVersionLeavesGaneshaAlone)
{
	SKIP_WITHOUT_GANESHA();
	Ganesha g;
	std::string err;
	ASSERT_TRUE(g.start(RPCRDMA_WRONGVER_SO, "rpcrdma: version mismatch", &err)) << err;
	std::string s = g.stderr_text();
	// Exactly one rpcrdma line, and it names both versions.
	size_t n = 0;
	for (size_t at = s.find("rpcrdma:"); at != std::string::npos; at = s.find("rpcrdma:", at + 1))
		n++;
	EXPECT_EQ(n, 1u) << s;
	EXPECT_NE(s.find("rpcrdma: version mismatch: built for libganesha_nfsd.so.9.9 with "
			 "libntirpc.so."),
		  std::string::npos)
		<< s;
	EXPECT_NE(s.find(", found libganesha_nfsd.so." RPCRDMA_GANESHA_VERSION " with libntirpc.so."),
		  std::string::npos)
		<< s;
	EXPECT_NE(s.find(": plugin inactive, RDMA not served, ganesha runs without it\n"),
		  std::string::npos)
		<< s;
	// No RDMA listener, no stats socket; ganesha's TCP service is up.
	std::this_thread::sleep_for(std::chrono::milliseconds(500));
	EXPECT_FALSE(unix_connectable(g.dir + "/rdma.sock"));
	EXPECT_FALSE(unix_connectable(g.stats));
	EXPECT_TRUE(tcp_connectable(g.nfs_port));
	EXPECT_TRUE(nfs3_null(g.nfs_port));
}

// The preloaded library built for another ganesha release (another build
// tree, e.g. one made in a release root: ci/test.sh sets both variables):
// ganesha serves TCP, and one line names both releases.
TEST(GaneshaPackaging, OtherReleasesPluginLeavesGaneshaAlone)
{
	SKIP_WITHOUT_GANESHA();
	const char *so = getenv("RPCRDMA_OTHER_RELEASE_SO");
	const char *rel = getenv("RPCRDMA_OTHER_RELEASE_GANESHA");
	if (!so || !rel)
		GTEST_SKIP() << "RPCRDMA_OTHER_RELEASE_SO / _GANESHA not set (ci/test.sh sets them)";
	Ganesha g;
	std::string err;
	ASSERT_TRUE(g.start(so, "rpcrdma: version mismatch", &err)) << err;
	std::string s = g.stderr_text();
	size_t n = 0;
	for (size_t at = s.find("rpcrdma:"); at != std::string::npos; at = s.find("rpcrdma:", at + 1))
		n++;
	EXPECT_EQ(n, 1u) << s;
	EXPECT_NE(s.find(std::string("built for libganesha_nfsd.so.") + rel + " with libntirpc.so."),
		  std::string::npos)
		<< s;
	EXPECT_NE(s.find(", found libganesha_nfsd.so." RPCRDMA_GANESHA_VERSION " with libntirpc.so."),
		  std::string::npos)
		<< s;
	std::this_thread::sleep_for(std::chrono::milliseconds(500));
	EXPECT_FALSE(unix_connectable(g.dir + "/rdma.sock"));
	EXPECT_TRUE(tcp_connectable(g.nfs_port));
	EXPECT_TRUE(nfs3_null(g.nfs_port));
}

// The preloaded library alone, its core library gone (a removed package, a
// partial copy; a missing dependency of the core fails the same dlopen):
// ganesha starts and serves TCP, and one line says why RDMA is off.
TEST(GaneshaPackaging, MissingCoreLibraryLeavesGaneshaAlone)
{
	SKIP_WITHOUT_GANESHA();
	char tmpl[] = "/tmp/rpcrdma-nocore.XXXXXX";
	ASSERT_NE(mkdtemp(tmpl), nullptr);
	std::string dir = tmpl, so = dir + "/librpcrdma_ganesha.so";
	int st = 0;
	run("cp " RPCRDMA_PLUGIN_SO " " + so, &st);
	ASSERT_EQ(st, 0);
	Ganesha g;
	std::string err;
	ASSERT_TRUE(g.start(so.c_str(), "rpcrdma: cannot load the core library", &err)) << err;
	std::string s = g.stderr_text();
	size_t n = 0;
	for (size_t at = s.find("rpcrdma:"); at != std::string::npos; at = s.find("rpcrdma:", at + 1))
		n++;
	EXPECT_EQ(n, 1u) << s;
	EXPECT_NE(s.find("librpcrdma_core.so: cannot open shared object file"), std::string::npos)
		<< s;
	EXPECT_NE(s.find("RDMA not served, ganesha runs without it\n"), std::string::npos) << s;
	std::this_thread::sleep_for(std::chrono::milliseconds(500));
	EXPECT_FALSE(unix_connectable(g.dir + "/rdma.sock"));
	EXPECT_TRUE(tcp_connectable(g.nfs_port));
	EXPECT_TRUE(nfs3_null(g.nfs_port));
	g.stop();
	run("rm -rf " + dir, &st);
}

// A client on the soft fabric (the independent test requester): NFSv3 NULL
// calls and one message with rdma_vers 2; rpcrdma-stat shows its row.
TEST(GaneshaPackaging, RpcrdmaStatShowsAClient)
{
	SKIP_WITHOUT_GANESHA();
	Ganesha g;
	std::string err;
	ASSERT_TRUE(g.start(RPCRDMA_PLUGIN_SO, "rpcrdma: NFS over RDMA listening on unix:", &err))
		<< err;
	rrtest::RequesterOptions o;
	o.addr = "unix:" + g.dir + "/rdma.sock";
	o.provider = "soft";
	auto rq = rrtest::Requester::connect(o, &err);
	ASSERT_TRUE(rq) << err;
	for (int i = 0; i < 5; i++) {
		rrtest::Reply r;
		uint32_t xid = rq->next_xid();
		ASSERT_TRUE(rq->call(rrtest::rpc_call_header(xid, 100003, 3, 0).b, {}, &r));
		rrtest::RpcReply rp = rrtest::rpc_parse_reply(r.rpc);
		ASSERT_TRUE(rp.parsed) << rp.why;
		EXPECT_EQ(rp.accept_stat, rrtest::RPC_SUCCESS);
	}
	rrtest::CallSpec bad;
	bad.vers = 2;
	rrtest::Reply r;
	ASSERT_TRUE(rq->call(rrtest::rpc_call_header(rq->next_xid(), 100003, 3, 0).b, bad, &r));
	EXPECT_EQ(r.err, rrtest::ERR_VERS);

	int st;
	// The default view: the client's row says NFSv3 (its NULLs' RPC header).
	std::string out = run(std::string(RPCRDMA_STAT_BIN) + " -s " + g.stats, &st);
	ASSERT_EQ(st, 0) << out;
	printf("%s", out.c_str()); /* for the test log */
	EXPECT_NE(out.find("connections: 1 open, 1 accepted"), std::string::npos) << out;
	EXPECT_TRUE(std::regex_search(out, std::regex(R"(\n\S+ +3 +- +\d+ +5 )"))) << out;
	// The engine's counters by Reply shape: --wide.
	out = run(std::string(RPCRDMA_STAT_BIN) + " --wide -s " + g.stats, &st);
	ASSERT_EQ(st, 0) << out;
	printf("%s", out.c_str());
	// PEER CREDITS CALLS INLINE REPLY_CH WRITE_CH RDMA_RD RDMA_WR ERR_CHUNK ERR_VERS
	std::smatch m;
	ASSERT_TRUE(std::regex_search(out, m,
				      std::regex(R"(\n(\S+) +(\d+) +5 +5 +0 +0 +0 +0 +0 +1 )")))
		<< out;
	EXPECT_NE(m[1], "TOTAL");
	EXPECT_GE(std::stoi(m[2]), 1);
	EXPECT_TRUE(std::regex_search(out, std::regex(R"(\nTOTAL +\d+ +5 +5 +0 +0 +0 +0 +0 +1 )")))
		<< out;
	out = run(std::string(RPCRDMA_STAT_BIN) + " --json -s " + g.stats, &st);
	EXPECT_NE(out.find("\"connections\":[{\"peer\":\"" + std::string(m[1]) + "\""),
		  std::string::npos)
		<< out;
	rq->disconnect();
}

// rpcrdma-stat --check against the real plugin: healthy, then a listener that
// cannot start (Soft_Socket in a directory that does not exist: bind fails,
// as a bad Listen_Addr or a port in use does on verbs). ganesha and its TCP
// service are unaffected; the stats socket still says why RDMA is not served.
TEST(GaneshaPackaging, CheckHealthy)
{
	SKIP_WITHOUT_GANESHA();
	Ganesha g;
	std::string err;
	ASSERT_TRUE(g.start(RPCRDMA_PLUGIN_SO, "rpcrdma: NFS over RDMA listening on unix:", &err))
	    << err;
	ASSERT_TRUE(Ganesha::wait_for([&] { return unix_connectable(g.stats); }));
	int st;
	std::string out = run(std::string(RPCRDMA_STAT_BIN) + " --check -s " + g.stats, &st);
	EXPECT_EQ(st, 0) << out;
	EXPECT_EQ(out, "RDMA OK: serving on 1 listener(s), 0 connection(s)\n");
	out = run(std::string(RPCRDMA_STAT_BIN) + " --json -s " + g.stats, &st);
	EXPECT_NE(out.find("\"health\":{\"serving\":true,\"why\":\"\",\"listeners\":1,"
			   "\"listeners_serving\":1}}"),
		  std::string::npos)
	    << out;
}

TEST(GaneshaPackaging, CheckListenerDown)
{
	SKIP_WITHOUT_GANESHA();
	Ganesha g;
	g.soft_socket = "/no/such/dir/rdma.sock";
	std::string err;
	ASSERT_TRUE(g.start(RPCRDMA_PLUGIN_SO, "rpcrdma: cannot listen on unix:", &err)) << err;
	EXPECT_TRUE(nfs3_null(g.nfs_port)) << "ganesha's TCP service";
	ASSERT_TRUE(Ganesha::wait_for([&] { return unix_connectable(g.stats); }))
	    << "no stats socket when the listener failed";
	int st;
	std::string out = run(std::string(RPCRDMA_STAT_BIN) + " --check -s " + g.stats, &st);
	EXPECT_EQ(st, 2) << out;
	EXPECT_EQ(out.rfind("RDMA CRITICAL: not serving: cannot listen on unix:" + g.dir +
				"/no/such/dir/rdma.sock: soft: bind",
			    0),
		  0u)
	    << out;
	EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
	out = run(std::string(RPCRDMA_STAT_BIN) + " --json -s " + g.stats, &st);
	EXPECT_NE(out.find("\"health\":{\"serving\":false,"), std::string::npos) << out;
	EXPECT_TRUE(nfs3_null(g.nfs_port)) << "ganesha's TCP service after the check";
}

TEST(GaneshaPackaging, CheckSocketMissing)
{
	SKIP_WITHOUT_GANESHA();
	Ganesha g;
	std::string err;
	ASSERT_TRUE(g.start(RPCRDMA_PLUGIN_SO, "rpcrdma: NFS over RDMA listening on unix:", &err))
	    << err;
	int st;
	std::string out =
	    run(std::string(RPCRDMA_STAT_BIN) + " --check -s " + g.dir + "/other.sock", &st);
	EXPECT_EQ(st, 2) << out;
	EXPECT_NE(out.find("RDMA CRITICAL: stats socket unreachable"), std::string::npos) << out;
}
