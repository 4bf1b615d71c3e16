// SPDX-License-Identifier: MIT
/*
 * plugin_common.h - gtest fixture for the plugin suites: one real ganesha
 * (MEM export /mem, NFSv3 and v4, RDMA on the soft fabric) per test program
 * run, with helpers to reach it over RDMA and TCP and to read its stats.
 */
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/ganesha_server.h"
#include "support/rr_device_profile.h"
#include "support/nfs_client.h"

namespace rrplug
{

class PluginTest : public ::testing::Test
{
      protected:
	static void SetUpTestSuite();
	static void TearDownTestSuite();
	void SetUp() override;
	void TearDown() override;

	/* connect over the soft fabric / TCP; nullptr (with a test failure) on error */
	std::unique_ptr<nfsc::RdmaTransport> rdma();
	/* rdma() with every DDP-eligible item through chunks, Calls and Replies */
	std::unique_ptr<nfsc::RdmaTransport> rdma_chunks();
	std::unique_ptr<nfsc::TcpTransport> tcp_nfs();
	std::unique_ptr<nfsc::TcpTransport> tcp_mnt();
	/* MOUNT v3 MNT /mem over TCP */
	nfsc::Fh mount3();
	/* the stats socket's JSON; false when there is none (reason in @why) */
	bool stats(nfsc::Json *j, std::string *why);
	/* global.<key> from the stats socket; -1 when there is no stats socket */
	double stat(const std::string &key);
	static std::string unique(const std::string &prefix);
	/*
	 * One RDMA client per file, all at once, each with a connection of its
	 * own: @rounds WRITEs of growing sizes, each READ back and checksummed
	 * (client i mixes DDP policies by i). Returns each client's error, ""
	 * when all its rounds passed.
	 */
	static std::vector<std::string> parallel_write_read(const std::vector<nfsc::Fh> &files,
							    int rounds);

	static GaneshaOptions options;
	static std::unique_ptr<GaneshaServer> srv;
	static std::string skip_why;
	static std::string start_err;
};

/* NFS call must return 0 (NFS OK); otherwise print the client's error and shape. */
#define NFS_OK(cl, expr)                                                                           \
	do {                                                                                       \
		int rc_ = (expr);                                                                  \
		ASSERT_EQ(rc_, 0) << #expr << ": " << (cl).err() << " [" << (cl).last().shape      \
				  << "]";                                                          \
	} while (0)

} // namespace rrplug
