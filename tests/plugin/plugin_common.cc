// SPDX-License-Identifier: MIT
#include "plugin/plugin_common.h"

#include <unistd.h>

#include <atomic>

namespace rrplug
{

GaneshaOptions PluginTest::options;
std::unique_ptr<GaneshaServer> PluginTest::srv;
std::string PluginTest::skip_why;
std::string PluginTest::start_err;

void PluginTest::SetUpTestSuite()
{
	skip_why.clear();
	start_err.clear();
	if (!GaneshaServer::available(&skip_why))
		return;
	srv.reset(new GaneshaServer());
	if (!srv->start(options, &start_err))
		srv.reset();
}

void PluginTest::TearDownTestSuite()
{
	srv.reset();
	options = GaneshaOptions(); /* the next suite starts from the defaults */
}

void PluginTest::SetUp()
{
	if (!skip_why.empty())
		GTEST_SKIP() << "plugin tests need ganesha and the plugin: " << skip_why;
	ASSERT_TRUE(srv) << "ganesha did not start: " << start_err;
	ASSERT_TRUE(srv->alive()) << "ganesha is not running:\n" << srv->logs();
}

void PluginTest::TearDown()
{
	if (HasFailure() && srv)
		fprintf(stderr, "%s\n", srv->logs().c_str());
}

std::unique_ptr<nfsc::RdmaTransport> PluginTest::rdma()
{
	std::string err;
	auto t = nfsc::RdmaTransport::connect(srv->rdma_addr, &err);
	EXPECT_TRUE(t) << "RDMA connect to " << srv->rdma_addr << ": " << err;
	return t;
}

std::unique_ptr<nfsc::TcpTransport> PluginTest::tcp_nfs()
{
	std::string err;
	auto t = nfsc::TcpTransport::connect("127.0.0.1", srv->nfs_port, &err);
	EXPECT_TRUE(t) << err;
	return t;
}

std::unique_ptr<nfsc::TcpTransport> PluginTest::tcp_mnt()
{
	std::string err;
	auto t = nfsc::TcpTransport::connect("127.0.0.1", srv->mnt_port, &err);
	EXPECT_TRUE(t) << err;
	return t;
}

nfsc::Fh PluginTest::mount3()
{
	nfsc::Fh root;
	auto t = tcp_mnt();
	if (!t)
		return root;
	nfsc::Mount3 m(*t);
	int rc = m.mnt("/mem", &root);
	EXPECT_EQ(rc, 0) << "MNT /mem: " << m.err();
	return root;
}

bool PluginTest::stats(nfsc::Json *j, std::string *why)
{
	if (srv->stats_path.empty()) {
		*why = "this plugin build has no Stats_Socket";
		return false;
	}
	std::string raw;
	return nfsc::read_stats(srv->stats_path, j, &raw, why);
}

double PluginTest::stat(const std::string &key)
{
	nfsc::Json j;
	std::string why;
	if (!stats(&j, &why))
		return -1;
	double v = j.at("global." + key);
	EXPECT_GE(v, 0) << "global." << key << " missing from the stats socket";
	return v;
}

std::string PluginTest::unique(const std::string &prefix)
{
	static std::atomic<unsigned> n{0};
	return prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(n++);
}

} // namespace rrplug
