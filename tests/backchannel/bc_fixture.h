// SPDX-License-Identifier: MIT
/*
 * bc_fixture.h - the backchannel suites' fixture: real ganesha 4.3 + the
 * rpcrdma plugin on the soft fabric (tests/plugin), a directory of the test's
 * own made over NFSv3, and NFSv4.1 clients over RDMA whose sessions have a
 * back channel answered by the test's callback server
 * (tests/support/nfs4_callback.h).
 */
#pragma once

#include "support/plugin_common.h"
#include "support/nfs4_callback.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

namespace rrplug
{
using namespace nfsc;

enum : uint32_t {
	SHARE_READ = 1,
	SHARE_WRITE = 2,
	WANT_READ_DELEG = 0x0100,
	DELEG_READ = 1,
	CONN_BACK_CHAN = 0x2,
};

inline std::string slurp(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

inline size_t connections(const Json &j)
{
	const Json *c = j.get("connections");
	return c && c->kind == Json::ARR ? c->arr.size() : size_t(-1);
}

/* An NFSv4.1 client over RDMA whose session has a back channel. */
struct BcClient {
	std::unique_ptr<RdmaTransport> t;
	std::unique_ptr<Nfs4> c;
	std::unique_ptr<CbServer> cb;
};

class Backchannel : public PluginTest
{
      public:
	static void SetUpTestSuite()
	{
		delegation_options();
		/* RR_BC_VFS_DIR=/some/dir: export that directory with FSAL VFS instead */
		if (const char *v = getenv("RR_BC_VFS_DIR"))
			options.vfs_dir = v;
		PluginTest::SetUpTestSuite();
	}

	/* fresh options with delegations on (ganesha 4.3 asks the FSAL too) */
	static void delegation_options()
	{
		options = GaneshaOptions();
		options.extra_nfsv4 = "\tDelegations = true;\n";
		options.extra_export = "\tDelegations = readwrite;\n";
		/* NFS_CB shows every callback; STATE FULL_DEBUG says why no delegation */
		options.extra_log = "\tCOMPONENTS { NFS_CB = FULL_DEBUG; STATE = FULL_DEBUG; }\n";
		if (const char *v = getenv("RR_BC_LOG"))
			options.extra_log = v;
	}

      protected:
	void SetUp() override
	{
		PluginTest::SetUp();
		if (IsSkipped() || HasFatalFailure())
			return;
		/* a directory of our own, and a file in it, over TCP NFSv4.1 */
		tt = tcp_nfs();
		ASSERT_TRUE(tt);
		tc.reset(new Nfs4(*tt));
		NFS_OK(*tc, tc->mount());
		NFS_OK(*tc, tc->lookup_path("/mem", &root));
		dname = unique("bc");
		if (options.vfs_dir.empty()) {
			Fh r3 = mount3();
			auto t3 = tcp_nfs();
			ASSERT_TRUE(t3);
			Nfs3 c3(*t3);
			Fh d3;
			NFS_OK(c3, c3.mkdir(r3, dname, 0755, &d3));
		} else {
			ASSERT_EQ(mkdir((options.vfs_dir + "/" + dname).c_str(), 0777), 0);
		}
		NFS_OK(*tc, tc->lookup(root, dname, &dir));
	}
	void TearDown() override
	{
		if (tc && !IsSkipped())
			tc->destroy_session();
		PluginTest::TearDown();
	}

	/* RDMA client with a back channel (AUTH_NONE or AUTH_SYS callbacks) */
	BcClient bc_client(uint32_t sec = nfsxdr::AUTH_NONE,
			   const rrtest::RequesterOptions *ro = nullptr)
	{
		BcClient b;
		if (ro) {
			std::string err;
			b.t = RdmaTransport::connect(srv->rdma_addr, *ro, &err);
			EXPECT_TRUE(b.t) << err;
		} else {
			b.t = rdma();
		}
		if (!b.t)
			return b;
		b.c.reset(new Nfs4(*b.t));
		b.c->back_channel = true;
		b.c->cb_sec = sec;
		b.c->cb_program = 0x40000000 + uint32_t(getpid() & 0xffff);
		b.cb.reset(new CbServer(b.t->requester(), b.c->cb_program));
		int rc = b.c->mount();
		EXPECT_EQ(rc, 0) << "mount with a back channel: " << b.c->err();
		if (rc)
			return BcClient();
		b.cb->set_session(b.c->sessionid());
		return b;
	}

	/* create @name (over TCP), return its handle */
	Fh make_file(const std::string &name)
	{
		Fh f;
		Stateid s;
		EXPECT_EQ(tc->open_create(dir, name, &f, &s), 0) << tc->err();
		EXPECT_EQ(tc->close(f, s), 0) << tc->err();
		return f;
	}

	/* the plugin's backchannel counters (-1: no stats socket) */
	struct Counters {
		double calls = -1, replies = -1, errors = -1;
	};
	Counters counters()
	{
		Counters c;
		c.calls = stat_at("global.bc_calls");
		c.replies = stat_at("global.bc_replies");
		c.errors = stat_at("global.bc_errors");
		return c;
	}

	/*
	 * A client process (forked) on RDMA whose back channel never answers:
	 * it mounts, runs @ready (false: it exits), writes 'r' to the pipe,
	 * serves callbacks until @until, writes 'c' and waits to be killed.
	 * Returns its pid (-1 with a test failure) and the pipe's read end.
	 */
	pid_t spawn_silent_client(uint32_t prog, const std::function<bool(Nfs4 &)> &ready,
				  const std::function<bool(CbServer &)> &until, int *rd)
	{
		int p[2];
		EXPECT_EQ(pipe(p), 0);
		pid_t child = fork();
		EXPECT_GE(child, 0);
		if (child != 0) {
			close(p[1]);
			*rd = p[0];
			return child;
		}
		close(p[0]);
		std::string err;
		auto t = RdmaTransport::connect(srv->rdma_addr, &err);
		if (!t)
			_exit(2);
		Nfs4 c(*t);
		c.back_channel = true;
		c.cb_program = prog;
		CbServer cb(t->requester(), prog);
		cb.policy = [](const CbRecord &) { return CbRecord::IGNORE; };
		if (c.mount())
			_exit(3);
		cb.set_session(c.sessionid());
		if (ready && !ready(c))
			_exit(4);
		if (write(p[1], "r", 1) != 1)
			_exit(5);
		cb.serve_until([&] { return until(cb); }, 30000);
		if (write(p[1], "c", 1) != 1)
			_exit(6);
		pause();
		_exit(0);
	}

	/* the stats socket's connection count, waited for until it is @want
	 * (at most @ms); the last count seen */
	size_t wait_connections(size_t want, int ms)
	{
		Json j;
		std::string why;
		size_t n = size_t(-1);
		auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
		while (std::chrono::steady_clock::now() < until) {
			EXPECT_TRUE(stats(&j, &why)) << why;
			n = connections(j);
			if (n == want)
				break;
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
		}
		return n;
	}

	/* wait @ms, answering @a's callbacks meanwhile when there is an @a */
	static void serve_or_sleep(BcClient *a, int ms)
	{
		if (a && a->cb)
			a->cb->serve_until([] { return false; }, ms);
		else
			std::this_thread::sleep_for(std::chrono::milliseconds(ms));
	}

	double stat_at(const std::string &path)
	{
		Json j;
		std::string why;
		if (!stats(&j, &why))
			return -1;
		return j.at(path);
	}

	std::unique_ptr<TcpTransport> tt;
	std::unique_ptr<Nfs4> tc;
	Fh root, dir;
	std::string dname;
};

} // namespace rrplug
