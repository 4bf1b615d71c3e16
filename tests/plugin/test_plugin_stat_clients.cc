// SPDX-License-Identifier: MIT
/*
 * test_plugin_stat_clients.cc - rpcrdma-stat's per-client view against a
 * real ganesha with the plugin on the soft fabric: an NFSv3 client and an
 * NFSv4.1 client (the independent clients of tests/support) connected at
 * once must show as two rows with their own NFS version, the v4.1 one with
 * the clientid ganesha gave it in EXCHANGE_ID (the plugin reads it from the
 * sessionid SEQUENCE carries: a different source, so a real check), calls
 * and bytes of their own; the "server" object names the listener and the
 * settings this ganesha was started with; the default table fits 100
 * columns.
 */
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "support/plugin_common.h"

namespace rrplug
{
namespace
{

using nfsc::Fh;
using nfsc::Json;
using nfsc::Nfs3;
using nfsc::Nfs4;

std::string run_stat(const std::string &args, int *status)
{
	std::string cmd = std::string(RPCRDMA_STAT_BIN) + " " + args + " 2>&1", out;
	FILE *p = popen(cmd.c_str(), "r");
	char buf[4096];
	size_t n;

	*status = -1;
	if (!p)
		return out;
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		out.append(buf, n);
	int st = pclose(p);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

const Json *conn_with(const Json &j, const std::string &nfs)
{
	const Json *conns = j.get("connections");
	if (!conns)
		return nullptr;
	for (const Json &c : conns->arr) {
		const Json *v = c.get("nfs");
		if (v && v->kind == Json::STR && v->str == nfs)
			return &c;
	}
	return nullptr;
}

double num(const Json &o, const std::string &k)
{
	const Json *v = o.get(k);
	return v && v->kind == Json::NUM ? v->num : -1;
}

class StatClients : public PluginTest
{
      protected:
	static void SetUpTestSuite()
	{
		options.credits = 24; /* not the default: the settings must say so */
		options.soft_tcp = true; /* peers with addresses, as on a network */
		PluginTest::SetUpTestSuite();
	}
	void SetUp() override
	{
		PluginTest::SetUp();
		if (IsSkipped() || HasFatalFailure())
			return;
		if (srv->stats_path.empty())
			GTEST_SKIP() << "this plugin build has no Stats_Socket";
	}
};

TEST_F(StatClients, TwoClientsOfDifferentNfsVersions)
{
	Fh root3 = mount3();
	auto t3 = rdma();
	auto t4 = rdma();
	ASSERT_TRUE(t3 && t4);
	Nfs3 c3(*t3);
	Nfs4 c4(*t4);
	nfsc::Attr a;
	Fh root4;

	NFS_OK(c3, c3.null());
	for (int i = 0; i < 5; i++)
		NFS_OK(c3, c3.getattr(root3, &a));
	NFS_OK(c4, c4.mount());
	NFS_OK(c4, c4.lookup_path("/mem", &root4));
	NFS_OK(c4, c4.getattr(root4, &a));
	ASSERT_NE(c4.clientid(), 0u);

	Json j;
	std::string why;
	ASSERT_TRUE(stats(&j, &why)) << why;
	const Json *v3 = conn_with(j, "3");
	const Json *v41 = conn_with(j, "4.1");
	ASSERT_TRUE(v3) << "no NFSv3 connection in the stats";
	ASSERT_TRUE(v41) << "no NFSv4.1 connection in the stats";
	ASSERT_NE(v3, v41);

	char want[32];
	snprintf(want, sizeof(want), "%016llx", (unsigned long long)c4.clientid());
	const Json *cid = v41->get("clientid");
	ASSERT_TRUE(cid && cid->kind == Json::STR) << "the v4.1 connection has no clientid";
	EXPECT_EQ(cid->str, want) << "clientid from SEQUENCE's sessionid vs EXCHANGE_ID's";
	EXPECT_EQ(v3->get("clientid"), nullptr) << "NFSv3 has no clientid";

	// NULL + 5 GETATTR on v3; the v4.1 client's COMPOUNDs on the other.
	EXPECT_GE(num(*v3, "calls"), 6);
	EXPECT_GE(num(*v41, "calls"), 4);
	for (const Json *c : {v3, v41}) {
		EXPECT_GT(num(*c, "call_bytes"), 0);
		EXPECT_GT(num(*c, "reply_bytes"), 0);
		EXPECT_EQ(num(*c, "credit_grant"), 24);
	}
	// The v3 client's 6 Calls are at least 6 RPC headers (40 bytes each).
	EXPECT_GE(num(*v3, "call_bytes"), 6 * 40);

	// What is served, and with which settings.
	const Json *server = j.get("server");
	ASSERT_TRUE(server);
	const Json *listen = server->get("listen");
	ASSERT_TRUE(listen && listen->arr.size() == 1);
	/* the client dials tcp:HOST:PORT; the server listens on HOST:PORT */
	std::string served = srv->rdma_addr.rfind("tcp:", 0) == 0 ? srv->rdma_addr.substr(4)
								   : srv->rdma_addr;
	EXPECT_EQ(listen->arr[0].str, served);
	EXPECT_EQ(j.at("server.settings.credits"), 24);
	/* the device's cap: more than granted, at most the key's range */
	double cap = j.at("server.settings.credits_cap");
	EXPECT_GT(cap, 24);
	EXPECT_LE(cap, 16384);
	const Json *set = server->get("settings");
	ASSERT_TRUE(set && set->get("device"));
	EXPECT_EQ(set->get("device")->str, rr_test_device().device);
	EXPECT_GE(j.at("server.uptime_s"), 0);
	EXPECT_GE(j.at("global.conns_refused"), 0);
	EXPECT_GE(j.at("global.conns_failed"), 0);

	// The tool: both rows, each with its version, within 100 columns.
	int st;
	std::string out = run_stat("-s " + srv->stats_path, &st);
	ASSERT_EQ(st, 0) << out;
	if (getenv("RR_SHOW_STAT")) /* for a look at the real thing */
		printf("%s", out.c_str());
	EXPECT_NE(out.find("on " + served), std::string::npos) << out;
	EXPECT_NE(out.find("credits 24 (device holds " + std::to_string(int(cap)) + ")"),
		  std::string::npos)
	    << out;
	EXPECT_NE(out.find("device soft"), std::string::npos) << out;
	const std::string p3 = v3->get("peer")->str, p41 = v41->get("peer")->str;
	size_t at3 = out.find(p3 + " "), at41 = out.find(p41 + " ");
	if (at3 == std::string::npos) /* a long peer has a line of its own */
		at3 = out.find(p3 + "\n");
	if (at41 == std::string::npos)
		at41 = out.find(p41 + "\n");
	ASSERT_NE(at3, std::string::npos) << out;
	ASSERT_NE(at41, std::string::npos) << out;
	auto row = [&](size_t at) {
		/* the peer's line, and the next one when the peer stood alone */
		size_t end = out.find('\n', at);
		std::string line = out.substr(at, end - at);
		if (line.find(' ') == std::string::npos)
			line += out.substr(end, out.find('\n', end + 1) - end);
		return line;
	};
	EXPECT_NE(row(at3).find(" 3 "), std::string::npos) << out;
	EXPECT_NE(row(at41).find(" 4.1 "), std::string::npos) << out;
	EXPECT_NE(row(at41).find(want), std::string::npos) << out;
	size_t start = 0;
	while (start < out.size()) {
		size_t end = out.find('\n', start);
		if (end == std::string::npos)
			end = out.size();
		EXPECT_LE(end - start, 100u) << out.substr(start, end - start);
		start = end + 1;
	}
	EXPECT_EQ(c4.destroy_session(), 0) << c4.err();
}

// --check against this ganesha: healthy while it serves (the listener-down
// and socket-missing cases: tests/packaging, GaneshaPackaging.Check*).
TEST_F(StatClients, CheckHealthy)
{
	int st;
	std::string out = run_stat("--check -s " + srv->stats_path, &st);
	EXPECT_EQ(st, 0) << out;
	EXPECT_EQ(out.rfind("RDMA OK: serving on 1 listener(s)", 0), 0u) << out;
}

} // namespace
} // namespace rrplug
