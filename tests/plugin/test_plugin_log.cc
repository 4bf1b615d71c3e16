// SPDX-License-Identifier: MIT
/*
 * test_plugin_log.cc - the plugin's lines go through ganesha's own log: in
 * ganesha.log, in ganesha's format, under the DISPATCH component, and the
 * LOG block's COMPONENTS governs them like any of ganesha's lines.
 */
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/ganesha_server.h"
#include "support/nfs_client.h"
#include "support/rr_requester.h"

namespace rrplug
{
namespace
{

class PluginLog : public ::testing::Test
{
      protected:
	void SetUp() override
	{
		std::string why;
		if (!GaneshaServer::available(&why))
			GTEST_SKIP() << "plugin tests need ganesha and the plugin: " << why;
	}

	/* a NULL over a new RDMA connection: the plugin serves */
	static bool rdma_null(const std::string &addr, std::string *err)
	{
		rrtest::RequesterOptions ro;
		ro.connect_timeout_ms = 5000;
		auto t = nfsc::RdmaTransport::connect(addr, ro, err);
		if (!t)
			return false;
		t->policy.timeout_ms = 5000;
		nfsc::Nfs3 c(*t);
		if (c.null()) {
			*err = "NULL: " + c.err();
			return false;
		}
		return true;
	}
};

/*
 * ganesha's line: "DD/MM/YYYY hh:mm:ss : epoch <hex> : <host> :
 * <program>-<pid>[<thread>] <function> :<COMP> :<LEVEL> :<text>"
 * (log_functions.c's default header), not the plugin's own "rpcrdma: ..."
 * on stderr.
 */
TEST_F(PluginLog, PluginLinesAreGaneshasWithItsFormat)
{
	GaneshaServer g;
	std::string err;
	GaneshaOptions o;
	ASSERT_TRUE(g.start(o, &err)) << err;
	std::string log = slurp(g.dir + "/ganesha.log");
	auto l = lines_with(log, "rpcrdma: NFS over RDMA listening on");
	ASSERT_EQ(l.size(), 1u) << g.logs();
	static const std::regex ganesha_line(
	    R"(^\d\d/\d\d/\d{4} \d\d:\d\d:\d\d : epoch [0-9a-f]+ : [^ ]+ : )"
	    R"([^ ]+-\d+\[[^\]]+\] \S+ :DISP :EVENT :rpcrdma: NFS over RDMA listening on .*)");
	EXPECT_TRUE(std::regex_match(l[0], ganesha_line)) << l[0];
	/* ganesha's log only, not also stderr */
	EXPECT_TRUE(lines_with(slurp(g.dir + "/stderr.log"), "NFS over RDMA listening").empty())
	    << g.logs();
	/* the engine's lines too: a connection's "connected" event */
	ASSERT_TRUE(rdma_null(g.rdma_addr, &err)) << err;
	bool engine_line = false;
	for (int i = 0; i < 100 && !engine_line; i++) {
		for (const auto &e : lines_with(slurp(g.dir + "/ganesha.log"), ": connected: credits"))
			engine_line |= e.find(":DISP :EVENT :rpcrdma: ") != std::string::npos;
		if (!engine_line)
			usleep(50000);
	}
	EXPECT_TRUE(engine_line) << g.logs();
	g.stop();
}

/* COMPONENTS { DISPATCH = WARN; }: the plugin's events are gone, its service
 * and ganesha's other events are not. */
TEST_F(PluginLog, LogBlockLoweringDispatchHidesThem)
{
	GaneshaServer g;
	std::string err;
	GaneshaOptions o;
	o.extra_log = "\tCOMPONENTS {\n\t\tDISPATCH = WARN;\n\t}\n";
	o.ready_line = "";
	ASSERT_TRUE(g.start(o, &err)) << err;
	ASSERT_TRUE(rdma_null(g.rdma_addr, &err)) << err << "\n" << g.logs();
	usleep(300000);
	std::string log = slurp(g.dir + "/ganesha.log");
	EXPECT_FALSE(lines_with(log, "NFS SERVER INITIALIZED").empty()) << g.logs();
	/* events only: a WARN (RLIMIT_MEMLOCK on an iWARP device) still shows */
	EXPECT_TRUE(lines_with(log, ":EVENT :rpcrdma:").empty()) << g.logs();
	EXPECT_TRUE(lines_with(slurp(g.dir + "/stderr.log"), "rpcrdma: NFS over RDMA").empty())
	    << g.logs();
	g.stop();
}

/* "Max locked memory" soft and hard limits of @pid, as /proc writes them */
static std::string memlock_of(pid_t pid)
{
	for (const auto &l : lines_with(slurp("/proc/" + std::to_string(pid) + "/limits"),
					"Max locked memory")) {
		std::istringstream in(l.substr(sizeof("Max locked memory") - 1));
		std::string soft, hard;
		in >> soft >> hard;
		return soft + " " + hard;
	}
	return "";
}

/* CAP_SYS_RESOURCE (24) is in this process's effective set */
static bool has_sys_resource()
{
	for (const auto &l : lines_with(slurp("/proc/self/status"), "CapEff:"))
		return (std::stoull(l.substr(sizeof("CapEff:") - 1), nullptr, 16) >> 24) & 1;
	return false;
}

/*
 * siw charges registrations to RLIMIT_MEMLOCK even for root, and ganesha
 * drops CAP_SYS_RESOURCE early in its start (lower_my_caps): started by root
 * with an 8 MiB limit, soft and hard, as a shell gives it, ganesha has the
 * limit lifted all the same, by the preloaded library before ganesha's main,
 * and says nothing about it on the siw profile (docs/devices.md).
 */
TEST_F(PluginLog, RootsMemlockLiftedBeforeGaneshaDropsTheRight)
{
	if (!has_sys_resource())
		GTEST_SKIP() << "needs CAP_SYS_RESOURCE (root's, which some containers withhold) "
				"to lift a hard limit";
	struct rlimit saved, small = {8u << 20, 8u << 20};
	ASSERT_EQ(getrlimit(RLIMIT_MEMLOCK, &saved), 0);
	ASSERT_EQ(setrlimit(RLIMIT_MEMLOCK, &small), 0);
	GaneshaServer g;
	std::string err;
	GaneshaOptions o;
	o.env.push_back("RPCRDMA_SOFT_PROFILE=siw");
	bool up = g.start(o, &err);
	/* only the child was to start with the small limit */
	ASSERT_EQ(setrlimit(RLIMIT_MEMLOCK, &saved), 0);
	ASSERT_TRUE(up) << err;
	EXPECT_EQ(memlock_of(g.pid), "unlimited unlimited") << g.logs();
	std::string log = slurp(g.dir + "/ganesha.log");
	EXPECT_TRUE(lines_with(log, "RLIMIT_MEMLOCK is").empty()) << g.logs();
	ASSERT_TRUE(rdma_null(g.rdma_addr, &err)) << err << "\n" << g.logs();
	g.stop();
}

} // namespace
} // namespace rrplug
