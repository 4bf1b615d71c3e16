// SPDX-License-Identifier: MIT
/*
 * test_plugin_stats_socket.cc - the stats socket against hostile or careless
 * neighbours, with a real ganesha and the plugin on the soft fabric:
 *   - a reader that connects and never reads, while the answer (400
 *     connections) is larger than the socket can buffer, must not stop RDMA
 *     service (NULL on a live connection, a new connect) nor other readers;
 *   - whatever is at Stats_Socket that is not a stale socket (a symlink, a
 *     regular file, a live instance's socket) is left alone and refused with
 *     a log line, and RDMA is served without stats;
 *   - a directory that others can write is refused;
 *   - the socket is 0600 from the start and gone after a clean stop;
 *   - Stats_Socket_Mode and Stats_Socket_Group are applied (a process of
 *     that group, not root, can read the socket; one of another cannot),
 *     and a bad value of either is reported with its line, RDMA not served;
 *   - a path component swapped for a symlink after the directory was checked
 *     moves neither the liveness probe nor the bind out of that directory.
 */
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/fanotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <atomic>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/ganesha_server.h"
#include "support/nfs_client.h"
#include "support/rr_requester.h"

namespace rrplug
{
namespace
{

using nfsc::Json;
using nfsc::Nfs3;
using nfsc::RdmaTransport;
using Clock = std::chrono::steady_clock;

static long ms_since(Clock::time_point t0)
{
	return long(
	    std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
}

/* A directory of the test's own (0700, ours), so ganesha's stop does not remove it. */
struct OwnDir {
	std::string path;
	OwnDir()
	{
		char t[] = "/tmp/rrstats.XXXXXX";
		if (mkdtemp(t))
			path = t;
	}
	~OwnDir()
	{
		if (!path.empty() && system(("rm -rf '" + path + "'").c_str()) != 0) {
			/* best effort */
		}
	}
};

class StatsSocket : public ::testing::Test
{
      protected:
	void SetUp() override
	{
		std::string why;
		if (!GaneshaServer::available(&why))
			GTEST_SKIP() << "plugin tests need ganesha and the plugin: " << why;
	}

	/* ganesha with Stats_Socket = @path (not in its own temp dir) */
	static bool start_at(GaneshaServer &g, const std::string &path, std::string *err,
			     const std::string &extra = "")
	{
		GaneshaOptions o;
		o.stats = false;
		o.extra_rdma = "\tStats_Socket = " + path + ";\n" + extra;
		return g.start(o, err);
	}

	/* ganesha's log gets @needle within 5 s (the plugin logs there) */
	static bool logged(const GaneshaServer &g, const std::string &needle)
	{
		for (int i = 0; i < 100; i++) {
			if (slurp(g.dir + "/ganesha.log").find(needle) != std::string::npos)
				return true;
			usleep(50000);
		}
		return false;
	}

	/* a NULL over a new RDMA connection, within @ms */
	static bool rdma_null(const std::string &addr, int ms, std::string *err)
	{
		rrtest::RequesterOptions ro;
		ro.connect_timeout_ms = ms;
		auto t = RdmaTransport::connect(addr, ro, err);
		if (!t)
			return false;
		t->policy.timeout_ms = ms;
		Nfs3 c(*t);
		if (c.null()) {
			*err = "NULL: " + c.err();
			return false;
		}
		return true;
	}
};

/*
 * Bytes a unix stream socket takes from a writer whose reader never reads,
 * written in 4 KiB pieces as stdio over a socket does (each piece costs its
 * buffer's overhead too, so this is less than net.core.wmem_default).
 */
static size_t unix_stream_room()
{
	int sv[2];
	size_t n = 0;
	char buf[4096] = {};
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return SIZE_MAX;
	for (;;) {
		ssize_t w = send(sv[0], buf, sizeof(buf), MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w <= 0)
			break;
		n += size_t(w);
	}
	close(sv[0]);
	close(sv[1]);
	return n;
}

/* Connected to @path and never reading; -1 on error. */
static int stalled_reader(const std::string &path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_un sun = {};
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path.c_str());
	if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr *>(&sun), sizeof(sun))) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * 400 connections or more (~500 bytes each) make an answer larger than a
 * unix socket buffers for a reader that does not read. Such a reader must
 * not hold up the event thread: a new connect and then a NULL on a live
 * connection complete in their normal time (each bounded at 2 s here:
 * milliseconds normally; the old code held the server's lock while writing,
 * the connect made the event thread wait for it and both timed out), and
 * another reader is answered once the stalled one's deadline passed.
 */
TEST_F(StatsSocket, StalledReaderDoesNotStopRdma)
{
	const unsigned kConns = 400;
	GaneshaServer g;
	GaneshaOptions o;
	std::string err;
	/* every connection here comes from 127.0.0.1 */
	o.extra_rdma = "\tMax_Connections_Per_Peer = 0;\n";
	ASSERT_TRUE(g.start(o, &err)) << err;
	ASSERT_FALSE(g.stats_path.empty());

	std::vector<std::unique_ptr<RdmaTransport>> conns;
	rrtest::RequesterOptions ro;
	ro.recv_bufs = 4; /* idle: a NULL at a time */
	ro.max_requests = 4;
	auto t0 = Clock::now();
	for (unsigned i = 0; i < kConns; i++) {
		auto t = RdmaTransport::connect(g.rdma_addr, ro, &err);
		ASSERT_TRUE(t) << "connection " << i << ": " << err << "\n" << g.logs();
		conns.push_back(std::move(t));
	}
	Nfs3 keep(*conns[0]);
	conns[0]->policy.timeout_ms = 2000;
	ASSERT_EQ(keep.null(), 0) << keep.err();

	/*
	 * The precondition: the answer does not fit what the socket buffers,
	 * neither in stdio's 4 KiB pieces (the old code's writes) nor in one
	 * send (up to net.core.wmem_default): more connections where 400 are
	 * not enough for that on this host.
	 */
	Json j;
	std::string raw;
	ASSERT_TRUE(nfsc::read_stats(g.stats_path, &j, &raw, &err)) << err;
	size_t wmem = std::stoul(slurp("/proc/sys/net/core/wmem_default"));
	size_t per_conn = raw.size() / conns.size();
	size_t want = (wmem + wmem / 4) / per_conn + 1;
	for (size_t i = conns.size(); i < want && i < 1000; i++) {
		auto t = RdmaTransport::connect(g.rdma_addr, ro, &err);
		ASSERT_TRUE(t) << "connection " << i << ": " << err;
		conns.push_back(std::move(t));
	}
	/* the server lists a connection just after the client sees it accepted */
	size_t listed = 0;
	for (int i = 0; i < 50 && listed != conns.size(); i++) {
		ASSERT_TRUE(nfsc::read_stats(g.stats_path, &j, &raw, &err)) << err;
		const Json *list = j.get("connections");
		ASSERT_TRUE(list && list->kind == Json::ARR);
		listed = list->arr.size();
		if (listed != conns.size())
			usleep(100000);
	}
	ASSERT_EQ(listed, conns.size());
	size_t room = unix_stream_room();
	fprintf(stderr,
		"%zu connections in %ld ms; answer %zu bytes, a unix socket holds %zu "
		"(4 KiB writes) or %zu (wmem_default)\n",
		conns.size(), ms_since(t0), raw.size(), room, wmem);
	ASSERT_GT(raw.size(), room) << "the answer fits the socket buffer: nothing would stall";
	ASSERT_GT(raw.size(), wmem) << "the answer fits the socket buffer: nothing would stall";

	int stalled = stalled_reader(g.stats_path);
	ASSERT_GE(stalled, 0);
	usleep(500000); /* the stats thread has filled the buffer by now */

	/* a connect first: the old code's event thread then waited for the lock */
	t0 = Clock::now();
	bool fresh = rdma_null(g.rdma_addr, 2000, &err);
	long connect_ms = ms_since(t0);
	EXPECT_TRUE(fresh) << "new connection while a stats reader stalls: " << err;
	EXPECT_LT(connect_ms, 2000);
	t0 = Clock::now();
	int rc = keep.null();
	long null_ms = ms_since(t0);
	EXPECT_EQ(rc, 0) << "NULL on a live connection while a stats reader stalls: " << keep.err();
	EXPECT_LT(null_ms, 2000);

	fprintf(stderr, "while stalled: NULL %ld ms, connect + NULL %ld ms\n", null_ms, connect_ms);

	/* another reader is answered (read_stats gives up after 5 s) */
	t0 = Clock::now();
	EXPECT_TRUE(nfsc::read_stats(g.stats_path, &j, &raw, &err)) << err;
	fprintf(stderr, "second reader answered after %ld ms\n", ms_since(t0));
	EXPECT_TRUE(logged(g, "stats socket: a reader took more than"));
	close(stalled);

	EXPECT_EQ(keep.null(), 0) << keep.err();
	if (HasFailure())
		fprintf(stderr, "%s\n", g.logs().c_str());
}

/* A symlink at the path: neither it nor its target is touched; RDMA served. */
TEST_F(StatsSocket, SymlinkAtPathRefused)
{
	OwnDir d;
	ASSERT_FALSE(d.path.empty());
	std::string target = d.path + "/target", path = d.path + "/stats.sock";
	{
		std::ofstream f(target);
		f << "precious";
	}
	ASSERT_EQ(chmod(target.c_str(), 0644), 0);
	ASSERT_EQ(symlink(target.c_str(), path.c_str()), 0);

	GaneshaServer g;
	std::string err;
	ASSERT_TRUE(start_at(g, path, &err)) << err;
	EXPECT_TRUE(logged(g, "stats socket " + path + " refused: a symlink is there")) << g.logs();
	struct stat st;
	ASSERT_EQ(lstat(path.c_str(), &st), 0) << "the symlink was removed";
	EXPECT_TRUE(S_ISLNK(st.st_mode));
	ASSERT_EQ(stat(target.c_str(), &st), 0);
	EXPECT_TRUE(S_ISREG(st.st_mode));
	EXPECT_EQ(st.st_mode & 07777, 0644u);
	EXPECT_EQ(slurp(target), "precious");
	EXPECT_TRUE(rdma_null(g.rdma_addr, 5000, &err)) << err;
}

/* A regular file at the path survives; RDMA served. */
TEST_F(StatsSocket, RegularFileAtPathRefused)
{
	OwnDir d;
	ASSERT_FALSE(d.path.empty());
	std::string path = d.path + "/stats.sock";
	{
		std::ofstream f(path);
		f << "not a socket";
	}
	GaneshaServer g;
	std::string err;
	ASSERT_TRUE(start_at(g, path, &err)) << err;
	EXPECT_TRUE(logged(g, "stats socket " + path + " refused: something other than a socket"))
	    << g.logs();
	struct stat st;
	ASSERT_EQ(lstat(path.c_str(), &st), 0) << "the file was removed";
	EXPECT_TRUE(S_ISREG(st.st_mode));
	EXPECT_EQ(slurp(path), "not a socket");
	EXPECT_TRUE(rdma_null(g.rdma_addr, 5000, &err)) << err;
}

/* A directory others can write (here 0777) is refused; RDMA served. */
TEST_F(StatsSocket, DirectoryWritableByOthersRefused)
{
	OwnDir d;
	ASSERT_FALSE(d.path.empty());
	ASSERT_EQ(chmod(d.path.c_str(), 0777), 0);
	std::string path = d.path + "/stats.sock";
	GaneshaServer g;
	std::string err;
	ASSERT_TRUE(start_at(g, path, &err)) << err;
	EXPECT_TRUE(logged(g, "stats socket " + path + " refused: its directory " + d.path +
				  " is writable by group or others"))
	    << g.logs();
	struct stat st;
	EXPECT_NE(lstat(path.c_str(), &st), 0) << "a socket was created in a 0777 directory";
	EXPECT_TRUE(rdma_null(g.rdma_addr, 5000, &err)) << err;
}

/*
 * A second instance with the same Stats_Socket while the first is alive is
 * refused ("held by a live instance"); the path keeps answering with the
 * first's counters (one connection, calls made), also after the second's
 * clean stop.
 */
TEST_F(StatsSocket, SecondInstanceRefusedWhileFirstLives)
{
	OwnDir d;
	ASSERT_FALSE(d.path.empty());
	std::string path = d.path + "/stats.sock";
	GaneshaServer first;
	std::string err;
	ASSERT_TRUE(start_at(first, path, &err)) << err;
	auto t = RdmaTransport::connect(first.rdma_addr, &err);
	ASSERT_TRUE(t) << err;
	Nfs3 c(*t);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(c.null(), 0) << c.err();

	{
		GaneshaServer second;
		ASSERT_TRUE(start_at(second, path, &err)) << err;
		EXPECT_TRUE(
		    logged(second, "stats socket " + path + " refused: held by a live instance"))
		    << second.logs();
		EXPECT_TRUE(rdma_null(second.rdma_addr, 5000, &err)) << err;

		Json j;
		std::string raw;
		ASSERT_TRUE(nfsc::read_stats(path, &j, &raw, &err)) << err;
		const Json *list = j.get("connections");
		ASSERT_TRUE(list && list->kind == Json::ARR);
		EXPECT_EQ(list->arr.size(), 1u) << "the path answers for another instance: " << raw;
		EXPECT_GE(j.at("global.calls"), 3) << raw;
		EXPECT_TRUE(second.stop());
	}
	Json j;
	std::string raw;
	ASSERT_TRUE(nfsc::read_stats(path, &j, &raw, &err))
	    << "the first instance's socket is gone after the second stopped: " << err;
	EXPECT_GE(j.at("global.calls"), 3) << raw;
	EXPECT_EQ(c.null(), 0) << c.err();
}

/* A stale socket (its listener gone: a crash) is replaced. */
TEST_F(StatsSocket, StaleSocketReplaced)
{
	OwnDir d;
	ASSERT_FALSE(d.path.empty());
	std::string path = d.path + "/stats.sock";
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_un sun = {};
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path.c_str());
	ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&sun), sizeof(sun)), 0);
	ASSERT_EQ(listen(fd, 1), 0);
	close(fd); /* the node stays, nobody listens: ECONNREFUSED */

	GaneshaServer g;
	std::string err;
	ASSERT_TRUE(start_at(g, path, &err)) << err;
	Json j;
	std::string raw;
	bool ok = false;
	for (int i = 0; i < 50 && !ok; i++) {
		ok = nfsc::read_stats(path, &j, &raw, &err);
		if (!ok)
			usleep(100000);
	}
	EXPECT_TRUE(ok) << err << "\n" << g.logs();
	const Json *fab = j.get("fabric");
	EXPECT_TRUE(fab && fab->str == "soft") << raw;
}

/* 0600 (or stricter) and ours as soon as ganesha is up. */
TEST_F(StatsSocket, PrivateFromTheStart)
{
	OwnDir d;
	ASSERT_FALSE(d.path.empty());
	std::string path = d.path + "/stats.sock";
	GaneshaServer g;
	std::string err;
	ASSERT_TRUE(start_at(g, path, &err)) << err;
	struct stat st;
	ASSERT_EQ(lstat(path.c_str(), &st), 0) << g.logs();
	EXPECT_TRUE(S_ISSOCK(st.st_mode));
	EXPECT_EQ(st.st_mode & 077, 0u) << "mode " << std::oct << (st.st_mode & 07777);
	EXPECT_EQ(st.st_uid, geteuid());
	Json j;
	std::string raw;
	EXPECT_TRUE(nfsc::read_stats(path, &j, &raw, &err)) << err;
}

/* A clean stop (SIGTERM) removes the socket. */
TEST_F(StatsSocket, RemovedAfterCleanStop)
{
	OwnDir d;
	ASSERT_FALSE(d.path.empty());
	std::string path = d.path + "/stats.sock";
	GaneshaServer g;
	std::string err;
	ASSERT_TRUE(start_at(g, path, &err)) << err;
	Json j;
	std::string raw;
	ASSERT_TRUE(nfsc::read_stats(path, &j, &raw, &err)) << err;
	ASSERT_TRUE(g.stop()) << "ganesha ignored SIGTERM";
	struct stat st;
	EXPECT_NE(lstat(path.c_str(), &st), 0) << "the socket outlived a clean stop";
}

/*
 * Does a process with only @uid / @gid (no root, no supplementary groups)
 * get an answer from the socket at @path? 1 yes, 0 refused (EACCES), -1 on
 * any other outcome. Forked, so the test's own credentials stay root's.
 */
static int connect_as(const std::string &path, uid_t uid, gid_t gid)
{
	pid_t p = fork();
	if (p < 0)
		return -1;
	if (p == 0) {
		if (setgroups(0, nullptr) || setgid(gid) || setuid(uid))
			_exit(3);
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		sockaddr_un sun = {};
		sun.sun_family = AF_UNIX;
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path.c_str());
		if (connect(fd, reinterpret_cast<sockaddr *>(&sun), sizeof(sun)))
			_exit(errno == EACCES ? 1 : 4);
		char c;
		/* the answer is one JSON object */
		_exit(read(fd, &c, 1) == 1 && c == '{' ? 0 : 5);
	}
	int st = 0;
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st) == 0 ? 1 : WEXITSTATUS(st) == 1 ? 0 : -1;
}

/* A group of this machine other than root's, for the socket's group. */
static bool other_group(gid_t *gid, std::string *name)
{
	for (const char *n : {"daemon", "nogroup", "users", "adm"}) {
		struct group *g = getgrnam(n);
		if (g && g->gr_gid != 0) {
			*gid = g->gr_gid;
			*name = n;
			return true;
		}
	}
	return false;
}

/* Stats_Socket_Mode = 0660 without a group: the mode as asked, root's group. */
/*
 * Holds every open of a directory (a fanotify permission event) until it has
 * run @swap, once, on the first: the plugin's open of Stats_Socket's
 * directory is the check, so @swap runs between the check and the bind.
 * Needs CAP_SYS_ADMIN (fanotify_init); arm() says why not.
 */
class OpenGate
{
      public:
	bool arm(const std::string &dir, std::function<void()> swap, std::string *why)
	{
		fan_ = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY | O_CLOEXEC);
		if (fan_ < 0) {
			*why = std::string("fanotify_init: ") + strerror(errno);
			return false;
		}
		if (fanotify_mark(fan_, FAN_MARK_ADD, FAN_OPEN_PERM | FAN_ONDIR, AT_FDCWD,
				  dir.c_str())) {
			*why = std::string("fanotify_mark: ") + strerror(errno);
			return false;
		}
		t_ = std::thread([this, swap] { serve(swap); });
		return true;
	}
	bool fired() const
	{
		return fired_;
	}
	~OpenGate()
	{
		stop_ = true;
		if (t_.joinable())
			t_.join();
		if (fan_ >= 0)
			close(fan_);
	}

      private:
	void serve(const std::function<void()> &swap)
	{
		alignas(fanotify_event_metadata) char buf[4096];

		while (!stop_) {
			pollfd p = {fan_, POLLIN, 0};
			if (poll(&p, 1, 100) <= 0)
				continue;
			ssize_t n = read(fan_, buf, sizeof(buf));
			auto *m = reinterpret_cast<fanotify_event_metadata *>(buf);
			for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n)) {
				if (!fired_) {
					swap();
					fired_ = true;
				}
				fanotify_response r = {m->fd, FAN_ALLOW};
				if (write(fan_, &r, sizeof(r)) != sizeof(r)) {
					/* the open then fails: the test sees it */
				}
				close(m->fd);
			}
		}
	}
	int fan_ = -1;
	std::thread t_;
	std::atomic<bool> stop_{false}, fired_{false};
};

/*
 * base/p/run (checked: root's, 0700) holds Stats_Socket; base/q/run is the
 * elsewhere. Once the plugin has opened base/p/run, base/p becomes a symlink
 * to q: resolving the whole path again would lead to base/q/run.
 */
struct SwapDirs {
	OwnDir d;
	std::string a, b, a_after, path;
	bool make()
	{
		if (d.path.empty())
			return false;
		a = d.path + "/p/run";
		b = d.path + "/q/run";
		a_after = d.path + "/p.orig/run";
		path = a + "/stats.sock";
		return !mkdir((d.path + "/p").c_str(), 0700) && !mkdir(a.c_str(), 0700) &&
		       !mkdir((d.path + "/q").c_str(), 0700) && !mkdir(b.c_str(), 0700);
	}
	void swap() const
	{
		if (rename((d.path + "/p").c_str(), (d.path + "/p.orig").c_str()) ||
		    symlink("q", (d.path + "/p").c_str()))
			perror("swap");
	}
};

static bool listen_at(const std::string &path, int *fd)
{
	sockaddr_un sun = {};
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path.c_str());
	*fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	return *fd >= 0 && !bind(*fd, reinterpret_cast<sockaddr *>(&sun), sizeof(sun)) &&
	       !listen(*fd, 1);
}

/* The bind stays in the checked directory: nothing is made elsewhere. */
TEST_F(StatsSocket, SwappedComponentDoesNotMoveTheBind)
{
	SwapDirs s;
	ASSERT_TRUE(s.make());
	OpenGate gate;
	std::string why;
	if (!gate.arm(s.a, [&] { s.swap(); }, &why))
		GTEST_SKIP() << "holding the directory's open needs CAP_SYS_ADMIN: " << why;

	GaneshaServer g;
	std::string err;
	ASSERT_TRUE(start_at(g, s.path, &err)) << err;
	ASSERT_TRUE(gate.fired()) << "the plugin never opened " << s.a;
	struct stat st;
	EXPECT_NE(lstat((s.b + "/stats.sock").c_str(), &st), 0)
	    << "a node was made in the directory the path was swapped to";
	ASSERT_EQ(lstat((s.a_after + "/stats.sock").c_str(), &st), 0) << g.logs();
	EXPECT_TRUE(S_ISSOCK(st.st_mode));
	EXPECT_EQ(st.st_mode & 077, 0u);
	Json j;
	std::string raw;
	EXPECT_TRUE(nfsc::read_stats(s.a_after + "/stats.sock", &j, &raw, &err)) << err;
	EXPECT_TRUE(rdma_null(g.rdma_addr, 5000, &err)) << err;
	g.stop();
	EXPECT_NE(lstat((s.a_after + "/stats.sock").c_str(), &st), 0)
	    << "a clean stop leaves the socket";
}

/*
 * The liveness probe of a stale socket in the checked directory stays there:
 * a live listener where the swapped path now leads must neither be probed
 * (it would make the plugin refuse, "held by a live instance") nor touched.
 */
TEST_F(StatsSocket, SwappedComponentDoesNotMoveTheProbe)
{
	SwapDirs s;
	ASSERT_TRUE(s.make());
	int stale = -1, live = -1;
	ASSERT_TRUE(listen_at(s.path, &stale));
	close(stale); /* the node stays, nobody listens: ECONNREFUSED */
	ASSERT_TRUE(listen_at(s.b + "/stats.sock", &live));
	struct stat b0;
	ASSERT_EQ(lstat((s.b + "/stats.sock").c_str(), &b0), 0);
	OpenGate gate;
	std::string why;
	if (!gate.arm(s.a, [&] { s.swap(); }, &why)) {
		close(live);
		GTEST_SKIP() << "holding the directory's open needs CAP_SYS_ADMIN: " << why;
	}

	GaneshaServer g;
	std::string err;
	ASSERT_TRUE(start_at(g, s.path, &err)) << err;
	ASSERT_TRUE(gate.fired()) << "the plugin never opened " << s.a;
	Json j;
	std::string raw;
	bool ok = false;
	for (int i = 0; i < 50 && !ok; i++) {
		ok = nfsc::read_stats(s.a_after + "/stats.sock", &j, &raw, &err);
		if (!ok)
			usleep(100000);
	}
	EXPECT_TRUE(ok) << err << "\n" << g.logs();
	EXPECT_EQ(slurp(g.dir + "/ganesha.log").find("stats socket " + s.path + " refused"),
		  std::string::npos)
	    << g.logs();
	struct stat b1;
	ASSERT_EQ(lstat((s.b + "/stats.sock").c_str(), &b1), 0);
	EXPECT_EQ(b1.st_ino, b0.st_ino) << "the other directory's socket was replaced";
	close(live);
}

TEST_F(StatsSocket, ModeApplied)
{
	OwnDir d;
	ASSERT_FALSE(d.path.empty());
	std::string path = d.path + "/stats.sock";
	GaneshaServer g;
	std::string err;
	ASSERT_TRUE(start_at(g, path, &err, "\tStats_Socket_Mode = 0660;\n")) << err;
	struct stat st;
	ASSERT_EQ(lstat(path.c_str(), &st), 0) << g.logs();
	EXPECT_TRUE(S_ISSOCK(st.st_mode));
	EXPECT_EQ(st.st_mode & 07777, 0660u) << "mode " << std::oct << (st.st_mode & 07777);
	EXPECT_EQ(st.st_uid, geteuid());
	EXPECT_EQ(st.st_gid, getegid());
	Json j;
	std::string raw;
	EXPECT_TRUE(nfsc::read_stats(path, &j, &raw, &err)) << err;
}

/*
 * Stats_Socket_Group = <a group> with Stats_Socket_Mode = 0660: the socket
 * is that group's, a process of that group (uid nobody) reads the answer,
 * and one of another group is refused. With the default mode (0600) the
 * same group member is refused: root only by default.
 */
TEST_F(StatsSocket, GroupApplied)
{
	gid_t gid;
	std::string gname;
	if (geteuid() != 0)
		GTEST_SKIP() << "checking access as another user needs root";
	if (!other_group(&gid, &gname))
		GTEST_SKIP() << "no group other than root's on this machine";
	const uid_t nobody = 65534;
	OwnDir d;
	ASSERT_FALSE(d.path.empty());
	/* the test's directory: others may pass through to the socket */
	ASSERT_EQ(chmod(d.path.c_str(), 0711), 0);
	std::string path = d.path + "/stats.sock";
	{
		GaneshaServer g;
		std::string err;
		ASSERT_TRUE(start_at(g, path, &err,
				     "\tStats_Socket_Mode = 0660;\n\tStats_Socket_Group = " + gname +
					 ";\n"))
		    << err;
		struct stat st;
		ASSERT_EQ(lstat(path.c_str(), &st), 0) << g.logs();
		EXPECT_EQ(st.st_gid, gid) << "group " << st.st_gid << ", not " << gname;
		EXPECT_EQ(st.st_mode & 07777, 0660u) << "mode " << std::oct << (st.st_mode & 07777);
		EXPECT_EQ(connect_as(path, nobody, gid), 1) << "a member of " << gname << " refused";
		EXPECT_EQ(connect_as(path, nobody, gid + 1), 0) << "a non-member got in";
		EXPECT_TRUE(g.stop());
	}
	{
		GaneshaServer g;
		std::string err;
		ASSERT_TRUE(start_at(g, path, &err)) << err;
		struct stat st;
		ASSERT_EQ(lstat(path.c_str(), &st), 0) << g.logs();
		EXPECT_EQ(st.st_mode & 07777, 0600u);
		EXPECT_EQ(connect_as(path, nobody, gid), 0) << "the default lets a non-root user in";
	}
}

/*
 * A mode that is not read/write bits with the owner's, and a group that
 * does not exist, are each named with their line; the RDMA block is then
 * not served (like every bad value) and nothing is made at the path.
 */
TEST_F(StatsSocket, BadModeOrGroupReported)
{
	OwnDir d;
	ASSERT_FALSE(d.path.empty());
	std::string path = d.path + "/stats.sock";
	const struct {
		const char *line, *needle;
	} bad[] = {
	    {"Stats_Socket_Mode = 0777;", "Stats_Socket_Mode: \"0777\" is not a socket mode"},
	    {"Stats_Socket_Mode = 0066;", "Stats_Socket_Mode: \"0066\" is not a socket mode"},
	    {"Stats_Socket_Mode = 0x1b0;", "Stats_Socket_Mode: \"0x1b0\" is not a socket mode"},
	    {"Stats_Socket_Group = rpcrdma-no-such-group;",
	     "Stats_Socket_Group: \"rpcrdma-no-such-group\" is not a group"},
	};
	for (const auto &b : bad) {
		GaneshaServer g;
		std::string err;
		EXPECT_FALSE(start_at(g, path, &err, std::string("\t") + b.line + "\n")) << b.line;
		EXPECT_NE(err.find(b.needle), std::string::npos) << b.line << ":\n" << err;
		/* ganesha's "Config File (<file>:<line>): ..." */
		EXPECT_NE(err.find("Config File (" + g.last_dir + "/ganesha.conf:"), std::string::npos)
		    << err;
		EXPECT_NE(err.find("RDMA not served"), std::string::npos) << err;
		struct stat st;
		EXPECT_NE(lstat(path.c_str(), &st), 0) << b.line << ": a socket was made";
	}
}

} // namespace
} // namespace rrplug
