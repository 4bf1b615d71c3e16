// SPDX-License-Identifier: MIT
// The plugin's version guard (src/plugin/rrp_version.c) in a process that
// links libntirpc 4.3 but not ganesha: libntirpc stands in for the "ganesha"
// object where a loaded library is needed.
#include <gtest/gtest.h>

#include <string>

#include "plugin/rrp_version.h"

TEST(VersionGuard, MatchingVersionsPass)
{
	struct rrp_version_expect e = {"NTIRPC_4.3", "libntirpc.so.4.3", "libntirpc.so.4.3"};
	char why[256] = "";
	EXPECT_EQ(rrp_version_check(&e, why, sizeof(why)), 0) << why;
}

TEST(VersionGuard, OtherNtirpcSymbolVersionRefused)
{
	struct rrp_version_expect e = {"NTIRPC_4.4", "libntirpc.so.4.3", "libntirpc.so.4.3"};
	char why[256] = "";
	EXPECT_EQ(rrp_version_check(&e, why, sizeof(why)), -1);
	EXPECT_EQ(std::string(why), "built for ntirpc NTIRPC_4.4 (libntirpc.so.4.3), found libntirpc.so.4.3");
}

TEST(VersionGuard, OtherNtirpcSonameRefused)
{
	struct rrp_version_expect e = {"NTIRPC_4.3", "libntirpc.so.5.0", "libntirpc.so.4.3"};
	char why[256] = "";
	EXPECT_EQ(rrp_version_check(&e, why, sizeof(why)), -1);
	EXPECT_NE(std::string(why).find("found libntirpc.so.4.3"), std::string::npos) << why;
}

TEST(VersionGuard, OtherOrMissingGaneshaRefused)
{
	struct rrp_version_expect e = {"NTIRPC_4.3", "libntirpc.so.4.3", "libntirpc.so.9.9"};
	char why[256] = "";
	EXPECT_EQ(rrp_version_check(&e, why, sizeof(why)), -1);
	EXPECT_EQ(std::string(why), "built for ganesha libntirpc.so.9.9, found libntirpc.so.4.3");

	struct rrp_version_expect g = {"NTIRPC_4.3", "libntirpc.so.4.3", "libganesha_nfsd.so.4.3"};
	EXPECT_EQ(rrp_version_check(&g, why, sizeof(why)), -1);
	EXPECT_EQ(std::string(why), "built for ganesha libganesha_nfsd.so.4.3, found no libganesha_nfsd");
}

TEST(VersionGuard, BuiltInExpectationNeedsGanesha)
{
	// This test process has ntirpc 4.3 but no ganesha: the guard says no, once.
	testing::internal::CaptureStderr();
	EXPECT_FALSE(rrp_version_ok());
	EXPECT_FALSE(rrp_version_ok());
	std::string err = testing::internal::GetCapturedStderr();
	EXPECT_EQ(err, "rpcrdma: version mismatch: built for ganesha libganesha_nfsd.so.4.3, found no "
		       "libganesha_nfsd: plugin inactive, RDMA not served, ganesha runs without it\n");
}
