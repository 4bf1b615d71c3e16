// SPDX-License-Identifier: MIT
#include "support/plugin_common.h"

#include <unistd.h>

#include <atomic>

#include <thread>

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

std::unique_ptr<nfsc::RdmaTransport> PluginTest::rdma_chunks()
{
	auto t = rdma();
	if (t) {
		t->policy.call_ddp = nfsc::Ddp::ALWAYS;
		t->policy.reply_ddp = nfsc::Ddp::ALWAYS;
	}
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
		*why = "ganesha was started without a Stats_Socket";
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

std::vector<std::string> PluginTest::parallel_write_read(const std::vector<nfsc::Fh> &files,
							  int rounds)
{
	using nfsc::Ddp;
	std::vector<std::string> errs(files.size());
	std::vector<std::thread> th;

	for (size_t i = 0; i < files.size(); i++)
		th.emplace_back([&, i] {
			std::string err;
			auto t = nfsc::RdmaTransport::connect(srv->rdma_addr, &err);
			if (!t) {
				errs[i] = err;
				return;
			}
			t->policy.call_ddp = i % 2 ? Ddp::ALWAYS : Ddp::AUTO;
			t->policy.reply_ddp = i % 3 ? Ddp::ALWAYS : Ddp::AUTO;
			nfsc::Nfs3 c(*t);
			for (int r = 0; r < rounds; r++) {
				nfsc::Bytes data =
				    nfsc::test_data(1000 + 37000 * r + i, uint32_t(i * 100 + r));
				nfsc::Bytes back;
				bool eof;
				if (c.write(files[i], 0, data) ||
				    c.read(files[i], 0, uint32_t(data.size()), &back, &eof)) {
					errs[i] = c.err();
					return;
				}
				if (nfsc::crc32c(back) != nfsc::crc32c(data)) {
					errs[i] = "checksum mismatch in round " + std::to_string(r);
					return;
				}
			}
		});
	for (auto &x : th)
		x.join();
	return errs;
}

std::string PluginTest::unique(const std::string &prefix)
{
	static std::atomic<unsigned> n{0};
	return prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(n++);
}

} // namespace rrplug
