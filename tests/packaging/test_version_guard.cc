// SPDX-License-Identifier: MIT
// The plugin's version guard (src/plugin/rrp_version.c) in a process that
// links the libntirpc it was built against but not ganesha: libntirpc stands
// in for the "ganesha" object where a loaded library is needed.
#include <gtest/gtest.h>

#include <string>

#include <ntirpc/version.h>

#include "plugin/rrp_version.h"

// This build's ntirpc, e.g. "NTIRPC_6.3" and "libntirpc.so.6.3".
#define TAG "NTIRPC_" NTIRPC_VERSION
#define SO "libntirpc.so." NTIRPC_VERSION

TEST(VersionGuard, MatchingVersionsPass)
{
	struct rrp_version_expect e = {TAG, SO, SO};
	char why[256] = "";
	EXPECT_EQ(rrp_version_check(&e, why, sizeof(why)), 0) << why;
}

TEST(VersionGuard, OtherNtirpcSymbolVersionRefused)
{
	struct rrp_version_expect e = {"NTIRPC_0.1", SO, SO};
	char why[256] = "";
	EXPECT_EQ(rrp_version_check(&e, why, sizeof(why)), -1);
	EXPECT_EQ(std::string(why), "built for " SO " with " SO " (NTIRPC_0.1), found " SO " with " SO);
}

TEST(VersionGuard, OtherNtirpcSonameRefused)
{
	struct rrp_version_expect e = {TAG, "libntirpc.so.0.1", SO};
	char why[256] = "";
	EXPECT_EQ(rrp_version_check(&e, why, sizeof(why)), -1);
	EXPECT_NE(std::string(why).find("found " SO), std::string::npos) << why;
}

TEST(VersionGuard, OtherOrMissingGaneshaRefused)
{
	struct rrp_version_expect e = {TAG, SO, "libntirpc.so.9.9"};
	char why[256] = "";
	EXPECT_EQ(rrp_version_check(&e, why, sizeof(why)), -1);
	EXPECT_EQ(std::string(why), "built for libntirpc.so.9.9 with " SO " (" TAG "), found " SO " with " SO);

	struct rrp_version_expect g = {TAG, SO, "libganesha_nfsd.so.4.3"};
	EXPECT_EQ(rrp_version_check(&g, why, sizeof(why)), -1);
	EXPECT_EQ(std::string(why), "built for libganesha_nfsd.so.4.3 with " SO " (" TAG "), found no libganesha_nfsd with " SO);
}

TEST(VersionGuard, BuiltInExpectationNeedsGanesha)
{
	// This test process has ntirpc but no ganesha: the guard says no, once.
	testing::internal::CaptureStderr();
	EXPECT_FALSE(rrp_version_ok());
	EXPECT_FALSE(rrp_version_ok());
	std::string err = testing::internal::GetCapturedStderr();
	EXPECT_EQ(err, "rpcrdma: version mismatch: built for libganesha_nfsd.so." RPCRDMA_GANESHA_VERSION
		       " with " SO " (" TAG "), found no libganesha_nfsd with " SO ": plugin inactive, "
		       "RDMA not served, ganesha runs without it\n");
}
