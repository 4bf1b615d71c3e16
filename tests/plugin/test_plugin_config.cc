// SPDX-License-Identifier: MIT
/*
 * test_plugin_config.cc - the RDMA block read by ganesha's own configuration
 * code, in a real ganesha: %include, ganesha's numbers, its messages in
 * ganesha.log with file and line, an unknown key warned while the rest is
 * served, a bad value or a second block refusing RDMA (TCP still served);
 * Credits the device's queues cannot hold refused when the listener starts.
 */
#include <gtest/gtest.h>

#include <regex>
#include <csignal>
#include <filesystem>
#include <unistd.h>
#include <sstream>
#include <string>
#include <vector>

#include "support/ganesha_server.h"
#include "support/rr_device_profile.h"
#include "support/nfs_client.h"

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
		/* how ganesha's messages name a line of the config: "<file>:<n>)" */
		std::string at_line(int n) const
		{
			return dir + "/ganesha.conf:" + std::to_string(n) + ")";
		}
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
	EXPECT_FALSE(lines_with(r.log, "credits 23 (").empty()) << r.log;
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
	EXPECT_NE(w[0].find(r.at_line(line)),
		  std::string::npos)
	    << w[0];
	EXPECT_NE(w[0].find(":CONFIG :WARN"), std::string::npos) << w[0];
	EXPECT_FALSE(lines_with(r.log, "credits 19 (").empty()) << r.log;
}

TEST_F(PluginConfig, BadValueIsRefusedWithFileLine)
{
	GaneshaOptions o;
	o.extra_rdma = "\tWorker_Threads = 0;\n";
	Run r = run(o);
	EXPECT_FALSE(r.served);
	int line = line_of(r.conf, "Worker_Threads");
	auto e = lines_with(r.log, r.at_line(line));
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
	/* once: the plugin reads ganesha's own parse, it does not parse again */
	int line = line_of(r.conf, "Worker_Threads = 4");
	EXPECT_EQ(lines_with(r.log, r.at_line(line)).size(),
		  1u)
	    << r.log;
	EXPECT_EQ(lines_with(r.log, "has syntax errors").size(), 1u) << r.log;
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
	auto l = lines_with(r.log, "listening on");
	ASSERT_EQ(l.size(), 1u) << r.log;
	EXPECT_NE(l[0].find("inline 8192,"), std::string::npos) << l[0];
	EXPECT_NE(l[0].find("memory budget 256 MiB;"), std::string::npos) << l[0];
}


/* Wait up to @ms for a line of ganesha.log in @dir holding @needle. */
static std::vector<std::string> wait_log(const std::string &dir, const std::string &needle,
					 int ms = 10000)
{
	for (int waited = 0;; waited += 50) {
		auto l = lines_with(slurp(dir + "/ganesha.log"), needle);
		if (!l.empty() || waited >= ms)
			return l;
		usleep(50 * 1000);
	}
}

/* Replace the first line of @path holding @from with @to. */
static bool edit_line(const std::string &path, const std::string &from, const std::string &to)
{
	std::string text = slurp(path);
	size_t at = text.find(from);
	if (at == std::string::npos)
		return false;
	size_t end = text.find('\n', at);
	size_t begin = text.rfind('\n', at);
	begin = begin == std::string::npos ? 0 : begin + 1;
	text.replace(begin, end - begin, to);
	FILE *f = fopen(path.c_str(), "w");
	if (!f)
		return false;
	bool ok = fwrite(text.data(), 1, text.size(), f) == text.size();
	return fclose(f) == 0 && ok;
}

/*
 * SIGHUP makes ganesha reread its LOG and EXPORT blocks, never the RDMA
 * block: a reload that changed RDMA settings says which ones need a
 * restart, in one WARN line; RDMA goes on with the settings it started
 * with. A reload that changed nothing of ours says nothing at the default
 * level.
 */
TEST_F(PluginConfig, SighupSaysChangedRdmaSettingsNeedARestart)
{
	GaneshaOptions o;
	o.credits = 21;
	GaneshaServer g;
	std::string err;
	ASSERT_TRUE(g.start(o, &err)) << err;
	std::string conf = g.dir + "/ganesha.conf";

	ASSERT_EQ(kill(g.pid, SIGHUP), 0);
	/* The reload runs on ganesha's signal thread and ends with this line,
	 * after the plugin's check: wait for it, so that the check below sees
	 * this reload done and the edit below cannot reach it. */
	ASSERT_FALSE(wait_log(g.dir, "Reread exports complete").empty()) << g.logs();
	EXPECT_TRUE(lines_with(slurp(g.dir + "/ganesha.log"), "reload: RDMA").empty())
	    << g.logs();

	ASSERT_TRUE(edit_line(conf, "Credits = 21;", "\tCredits = 22;\n\tWorker_Threads = 3;"))
	    << slurp(conf);
	ASSERT_EQ(kill(g.pid, SIGHUP), 0);
	auto w = wait_log(g.dir, "reload: RDMA settings changed in " + conf);
	ASSERT_EQ(w.size(), 1u) << g.logs();
	EXPECT_NE(w[0].find(":WARN :rpcrdma: reload: RDMA settings changed in " + conf +
			    " (Credits, Worker_Threads): they take effect when ganesha restarts"),
		  std::string::npos)
	    << w[0];
	/* still served, with the settings it started with */
	nfsc::Json j;
	std::string raw, why;
	ASSERT_TRUE(nfsc::read_stats(g.stats_path, &j, &raw, &why)) << why;
	auto t = nfsc::RdmaTransport::connect(g.rdma_addr, &err);
	ASSERT_TRUE(t) << err;
	nfsc::Nfs3 c(*t);
	ASSERT_EQ(c.null(), 0) << c.err();
	ASSERT_TRUE(nfsc::read_stats(g.stats_path, &j, &raw, &why)) << why;
	EXPECT_EQ(j.at("global.credit_grant"), 21.0) << raw;
	t.reset();

	/* a block made invalid: said too, RDMA still served */
	ASSERT_TRUE(edit_line(conf, "Credits = 22;", "\tCredits = 0;")) << slurp(conf);
	ASSERT_EQ(kill(g.pid, SIGHUP), 0);
	auto bad = wait_log(g.dir, "reload: the RDMA block in " + conf + " is invalid");
	ASSERT_EQ(bad.size(), 1u) << g.logs();
	EXPECT_NE(bad[0].find(":WARN :"), std::string::npos) << bad[0];
	EXPECT_TRUE(g.alive());
	g.stop();
}

/*
 * Exclude_Exports is the one RDMA setting a reload applies (ganesha rereads
 * its EXPORT blocks at the same time): an Export_Id added is refused over
 * RDMA from the next Call on, on a connection made before; one removed is
 * served again. No "take effect when ganesha restarts" warning for it.
 */
TEST_F(PluginConfig, SighupAppliesExcludeExports)
{
	GaneshaOptions o;
	o.credits = 23;
	o.extra_blocks = "EXPORT {\n\tExport_Id = 2;\n\tPath = /off;\n\tPseudo = /off;\n"
			 "\tAccess_Type = RW;\n\tSquash = No_Root_Squash;\n"
			 "\tProtocols = 3, 4;\n\tFSAL { Name = MEM; }\n}\n";
	GaneshaServer g;
	std::string err;
	ASSERT_TRUE(g.start(o, &err)) << err;
	std::string conf = g.dir + "/ganesha.conf";
	auto mt = nfsc::TcpTransport::connect("127.0.0.1", g.mnt_port, &err);
	ASSERT_TRUE(mt) << err;
	nfsc::Mount3 m(*mt);
	nfsc::Fh off, on;
	ASSERT_EQ(m.mnt("/off", &off), 0) << m.err();
	ASSERT_EQ(m.mnt("/mem", &on), 0) << m.err();
	auto t = nfsc::RdmaTransport::connect(g.rdma_addr, &err);
	ASSERT_TRUE(t) << err;
	nfsc::Nfs3 c(*t);
	nfsc::Attr a;
	ASSERT_EQ(c.getattr(off, &a), 0) << c.err();

	ASSERT_TRUE(edit_line(conf, "Credits = 23;", "\tCredits = 23;\n\tExclude_Exports = 2;"))
	    << slurp(conf);
	ASSERT_EQ(kill(g.pid, SIGHUP), 0);
	auto w = wait_log(g.dir, "reload: Exclude_Exports of " + conf + " applied: 1 Export_Id kept off RDMA");
	ASSERT_EQ(w.size(), 1u) << g.logs();
	ASSERT_FALSE(wait_log(g.dir, "Reread exports complete").empty()) << g.logs();
	EXPECT_EQ(c.getattr(off, &a), nfsc::E_RPC);
	EXPECT_EQ(c.err(), "AUTH_ERROR 7");
	/* relabelled with the other export's Export_Id: the object is checked */
	nfsc::Fh off1 = off;
	off1.b[2] = 0;
	off1.b[3] = 1;
	int st = c.getattr(off1, &a);
	/* NFS3ERR_STALE; BADHANDLE when export 1 is FSAL VFS (RR_TEST_FSAL=VFS) */
	EXPECT_TRUE(st == 70 || st == 10001) << st << " " << c.err();
	EXPECT_EQ(c.getattr(on, &a), 0) << c.err();
	EXPECT_TRUE(lines_with(slurp(g.dir + "/ganesha.log"), "reload: RDMA settings changed").empty())
	    << g.logs();

	ASSERT_TRUE(edit_line(conf, "Exclude_Exports = 2;", "")) << slurp(conf);
	ASSERT_EQ(kill(g.pid, SIGHUP), 0);
	auto back = wait_log(g.dir, "applied: 0 Export_Ids kept off RDMA");
	ASSERT_EQ(back.size(), 1u) << g.logs();
	EXPECT_EQ(c.getattr(off, &a), 0) << c.err();
	t.reset();
	g.stop();
	if (!HasFailure()) /* kept (RR_KEEP_TMP) for a failure only */
		std::filesystem::remove_all(g.last_dir);
}

/*
 * Credits within the key's range (1..16384) but beyond what the device's
 * queues hold (the soft device's queues: 65536 entries; at 16384 credits a
 * connection's send queue alone would need more) are refused when the
 * listener starts, in one CRIT line with the device's cap; ganesha serves
 * TCP. The cap itself is served, and a client connecting is granted all of
 * it: no connection fails on queue sizes at accept.
 */
TEST_F(PluginConfig, CreditsAboveTheDeviceCapAreRefusedAtStartUp)
{
	GaneshaOptions o;
	o.credits = 16384;
	o.inline_threshold = 1024; /* the cap does not depend on it; memory does */
	o.extra_rdma = "\tReceive_Memory_Budget = 0;\n"; /* no budget shrinking the grant */
	Run r = run(o);
	EXPECT_FALSE(r.served);
	auto e = lines_with(r.log, std::string("Credits 16384: device ") + rr_test_device().device +
					   " holds at most ");
	ASSERT_EQ(e.size(), 1u) << r.log;
	EXPECT_NE(e[0].find(":CRIT :rpcrdma: cannot listen on unix:"), std::string::npos) << e[0];
	EXPECT_TRUE(lines_with(r.log, "listening on").empty()) << r.log;
	std::smatch m;
	ASSERT_TRUE(std::regex_search(e[0], m, std::regex("holds at most ([0-9]+)"))) << e[0];
	uint32_t cap = uint32_t(std::stoul(m[1]));
	ASSERT_GT(cap, 64u);
	ASSERT_LT(cap, 16384u);

	o.credits = cap;
	GaneshaServer g;
	std::string err;
	ASSERT_TRUE(g.start(o, &err)) << err << g.logs();
	auto l = lines_with(slurp(g.dir + "/ganesha.log"), "listening on");
	ASSERT_EQ(l.size(), 1u) << g.logs();
	EXPECT_NE(l[0].find("credits " + std::to_string(cap) + " (device holds " +
			    std::to_string(cap) + ")"),
		  std::string::npos)
	    << l[0];
	auto t = nfsc::RdmaTransport::connect(g.rdma_addr, &err);
	ASSERT_TRUE(t) << err << g.logs();
	nfsc::Nfs3 c(*t);
	ASSERT_EQ(c.null(), 0) << c.err();
	nfsc::Json j;
	std::string raw, why;
	ASSERT_TRUE(nfsc::read_stats(g.stats_path, &j, &raw, &why)) << why;
	EXPECT_EQ(j.at("global.credit_grant"), double(cap)) << raw;
	EXPECT_EQ(j.at("global.conns_active"), 1.0) << raw;
	t.reset();
	g.stop();
}

} // namespace
} // namespace rrplug
