// SPDX-License-Identifier: MIT
/*
 * test_plugin_config.cc - the RDMA block read by ganesha's own configuration
 * code, in a real ganesha: %include, ganesha's numbers, its messages in
 * ganesha.log with file and line, an unknown key warned while the rest is
 * served, a bad value or a second block refusing RDMA (TCP still served).
 */
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "plugin/ganesha_server.h"

namespace rrplug
{
namespace
{

/* The line number of the first line of @dir/@file holding @needle. */
static int line_of(const std::string &conf_text, const std::string &needle)
{
	std::istringstream in(conf_text);
	int n = 0;
	for (std::string l; std::getline(in, l);) {
		n++;
		if (l.find(needle) != std::string::npos)
			return n;
	}
	return -1;
}

class PluginConfig : public ::testing::Test
{
      protected:
	void SetUp() override
	{
		std::string why;
		if (!GaneshaServer::available(&why))
			GTEST_SKIP() << "plugin tests need ganesha and the plugin: " << why;
		setenv("RR_KEEP_TMP", "1", 1); /* the config and log outlive a failed start */
	}
	void TearDown() override
	{
		unsetenv("RR_KEEP_TMP");
	}

	/* ganesha with @o; the log and config text, whether RDMA was served */
	struct Run {
		bool served = false;
		std::string err, log, conf, rdma_conf, dir;
	};
	static Run run(GaneshaOptions o)
	{
		Run r;
		GaneshaServer g;
		r.served = g.start(o, &r.err);
		r.dir = r.served ? g.dir : g.last_dir;
		r.log = slurp(r.dir + "/ganesha.log");
		r.conf = slurp(r.dir + "/ganesha.conf");
		r.rdma_conf = slurp(r.dir + "/rdma.conf");
		if (r.served)
			g.stop();
		std::string cmd = "rm -rf '" + r.dir + "'";
		if (!getenv("RR_KEEP_LOG") && !r.dir.empty() && r.dir.rfind("/tmp/", 0) == 0)
			(void)!system(cmd.c_str());
		return r;
	}
};

TEST_F(PluginConfig, RdmaBlockInAnIncludedFileIsServed)
{
	GaneshaOptions o;
	o.rdma_in_include = true;
	o.credits = 23;
	Run r = run(o);
	ASSERT_TRUE(r.served) << r.err;
	EXPECT_EQ(line_of(r.conf, "RDMA {"), -1) << "the block is not in the file itself";
	EXPECT_NE(line_of(r.rdma_conf, "RDMA {"), -1);
	EXPECT_EQ(lines_with(r.log, "listening on").size(), 1u) << r.log;
	EXPECT_FALSE(lines_with(r.log, "credits 23,").empty()) << r.log;
}

TEST_F(PluginConfig, UnknownKeyIsWarnedWithFileLineAndTheRestServed)
{
	GaneshaOptions o;
	o.credits = 19;
	o.extra_rdma = "\tFrobnicate_Level = 3;\n";
	Run r = run(o);
	ASSERT_TRUE(r.served) << r.err;
	int line = line_of(r.conf, "Frobnicate_Level");
	auto w = lines_with(r.log, "Frobnicate_Level");
	ASSERT_FALSE(w.empty()) << r.log;
	EXPECT_NE(w[0].find(r.dir + "/ganesha.conf:" + std::to_string(line) + ")"),
		  std::string::npos)
	    << w[0];
	EXPECT_NE(w[0].find(":CONFIG :WARN"), std::string::npos) << w[0];
	EXPECT_FALSE(lines_with(r.log, "credits 19,").empty()) << r.log;
}

TEST_F(PluginConfig, BadValueIsRefusedWithFileLine)
{
	GaneshaOptions o;
	o.extra_rdma = "\tWorker_Threads = 0;\n";
	Run r = run(o);
	EXPECT_FALSE(r.served);
	int line = line_of(r.conf, "Worker_Threads");
	auto e = lines_with(r.log, r.dir + "/ganesha.conf:" + std::to_string(line) + ")");
	ASSERT_FALSE(e.empty()) << r.dir << "\n" << r.err << "\n" << r.log;
	EXPECT_NE(e[0].find(":CONFIG :CRIT"), std::string::npos) << e[0];
	EXPECT_FALSE(lines_with(r.log, "rpcrdma: RDMA block in").empty()) << r.log;
	EXPECT_FALSE(lines_with(r.log, "RDMA not served").empty()) << r.log;
	EXPECT_TRUE(lines_with(r.log, "listening on").empty()) << r.log;
}

TEST_F(PluginConfig, SyntaxErrorIsReportedWithFileLine)
{
	GaneshaOptions o;
	o.extra_rdma = "\tIdle_Timeout = 30\n\tWorker_Threads = 4;\n"; /* no ';' */
	Run r = run(o);
	EXPECT_FALSE(r.served);
	/* ganesha's parser: "Config file (<file>:<line>) error: syntax error" */
	bool crit_with_line = false;
	for (const auto &l : lines_with(r.log, r.dir + "/ganesha.conf:"))
		crit_with_line |= l.find(":CONFIG :CRIT") != std::string::npos;
	EXPECT_TRUE(crit_with_line) << r.log;
	EXPECT_FALSE(lines_with(r.log, "has syntax errors").empty()) << r.log;
	EXPECT_FALSE(lines_with(r.log, "RDMA not served").empty()) << r.log;
	EXPECT_TRUE(lines_with(r.log, "listening on").empty()) << r.log;
}

TEST_F(PluginConfig, BlockGivenTwiceIsRefused)
{
	GaneshaOptions o;
	o.extra_blocks = "RDMA {\n\tCredits = 8;\n}\n";
	Run r = run(o);
	EXPECT_FALSE(r.served);
	int line = -1;
	{
		/* the second "RDMA {" */
		std::istringstream in(r.conf);
		int n = 0, seen = 0;
		for (std::string l; std::getline(in, l);)
			if (++n && l.rfind("RDMA {", 0) == 0 && ++seen == 2)
				line = n;
	}
	auto e = lines_with(r.log, "given twice");
	ASSERT_FALSE(e.empty()) << r.dir << "\n" << r.err << "\n" << r.log;
	EXPECT_NE(e[0].find("ganesha.conf:" + std::to_string(line) + ")"), std::string::npos)
	    << e[0];
	EXPECT_TRUE(lines_with(r.log, "listening on").empty()) << r.log;
}

TEST_F(PluginConfig, SizeWrittenTheGaneshaWayIsAccepted)
{
	GaneshaOptions o;
	o.extra_rdma = "\tInline_Threshold = 0x2000;\n\tReceive_Memory_Budget = 0x10000000;\n";
	Run r = run(o);
	ASSERT_TRUE(r.served) << r.err;
	EXPECT_FALSE(lines_with(r.log, "inline 8192, memory budget 256 MiB").empty()) << r.log;
}

} // namespace
} // namespace rrplug
