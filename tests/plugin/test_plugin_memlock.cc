// SPDX-License-Identifier: MIT
/*
 * test_plugin_memlock.cc - real ganesha + rpcrdma plugin under an
 * RLIMIT_MEMLOCK far below what the default settings register, on the soft
 * fabric charging every registration against it as siw does
 * (RPCRDMA_SOFT_MEMLOCK=1; the launcher lowers the limit as a unit's
 * LimitMEMLOCK= would, and root here cannot raise it back). Issue #36
 * item 6: one clear line with the figure needed and how to give it, and
 * RDMA served within the limit (rrp_plugin.c: memlock_fit) or not at all,
 * never one registration failing on a connection.
 */
#include "plugin/plugin_common.h"

#include <sstream>

using namespace nfsc;

namespace rrplug
{
namespace
{

constexpr uint64_t kMemlock = 6u << 20;

/* Lines of @text holding @needle. */
static std::vector<std::string> lines_with(const std::string &text, const std::string &needle)
{
	std::vector<std::string> out;
	std::istringstream in(text);
	std::string l;

	while (std::getline(in, l))
		if (l.find(needle) != std::string::npos)
			out.push_back(l);
	return out;
}

/*
 * A limit below the worst case of the Read sinks' bound (their shared part
 * alone is over 256 MiB at the default chunk size) cannot be served within
 * by shrinking Max_Connections and the pools, so RDMA is refused at start:
 * one line, the stats socket's health saying why, no connection admitted and
 * then failed, TCP served. (This machine's hard limit is 8 MiB, so a limit
 * the plugin serves within, smaller, cannot be set here: docs/devices.md.)
 */
TEST(Memlock, TooSmallRefusedAtStartInOneLine)
{
	std::string why;
	if (!GaneshaServer::available(&why))
		GTEST_SKIP() << "plugin tests need ganesha and the plugin: " << why;
	GaneshaOptions o;
	o.memlock = kMemlock;
	o.env.push_back("RPCRDMA_SOFT_MEMLOCK=1");
	o.ready_line = "RLIMIT_MEMLOCK";
	GaneshaServer g;
	std::string err;
	ASSERT_TRUE(g.start(o, &err)) << err;
	std::string log = slurp(g.dir + "/ganesha.log") + slurp(g.dir + "/stderr.log");

	/* exactly one line, naming the limit, the need and the ways to give it */
	auto said = lines_with(log, "RLIMIT_MEMLOCK");
	ASSERT_EQ(said.size(), 1u) << log;
	const std::string &line = said[0];
	printf("the line: %s\n", line.c_str());
	EXPECT_NE(line.find("RLIMIT_MEMLOCK is 6 MiB"), std::string::npos) << line;
	EXPECT_NE(line.find("would register up to"), std::string::npos) << line;
	EXPECT_NE(line.find("RDMA not served there, TCP unaffected"), std::string::npos) << line;
	EXPECT_NE(line.find("LimitMEMLOCK=infinity"), std::string::npos) << line;
	EXPECT_NE(line.find("ulimit -l unlimited"), std::string::npos) << line;
	EXPECT_NE(line.find("--ulimit memlock=-1"), std::string::npos) << line;
	EXPECT_TRUE(lines_with(log, "NFS over RDMA listening").empty()) << log;

	/* the stats socket says why */
	Json j;
	std::string raw;
	bool ok = false;
	for (int i = 0; i < 50 && !ok; i++) {
		ok = nfsc::read_stats(g.stats_path, &j, &raw, &err);
		if (!ok)
			usleep(100000);
	}
	ASSERT_TRUE(ok) << err;
	const Json *h = j.get("health");
	ASSERT_TRUE(h) << raw;
	const Json *serving = h->get("serving"), *hw = h->get("why");
	ASSERT_TRUE(serving && hw) << raw;
	EXPECT_FALSE(serving->b) << raw;
	EXPECT_NE(hw->str.find("RLIMIT_MEMLOCK 6 MiB"), std::string::npos) << raw;

	/* a client is refused at connect, nothing fails on a connection */
	for (int i = 0; i < 3; i++) {
		rrtest::RequesterOptions ro;
		ro.connect_timeout_ms = 2000;
		EXPECT_FALSE(RdmaTransport::connect(g.rdma_addr, ro, &err));
	}
	EXPECT_TRUE(g.alive());
	log = slurp(g.dir + "/ganesha.log") + slurp(g.dir + "/stderr.log");
	EXPECT_TRUE(lines_with(log, "setup failed").empty()) << log;
	EXPECT_TRUE(lines_with(log, "Cannot allocate memory").empty()) << log;
	EXPECT_TRUE(lines_with(log, "cannot register").empty()) << log;
	EXPECT_EQ(lines_with(log, "RLIMIT_MEMLOCK").size(), 1u);
}

} // namespace
} // namespace rrplug
