// SPDX-License-Identifier: MIT
/* test_ulb_elig.cc - DDP-eligibility tables against RFC 8267 sections 3 and 4.1. */
#include <gtest/gtest.h>

#include "ulb/ulb_elig.h"
#include "ulb/ulb_nfs.h"
#include "ulb/ulb_test_hooks.h"

TEST(UlbElig, UlpOfProgram)
{
	EXPECT_EQ(ulb_ulp_of(100003, 2), ULB_ULP_NFS2);
	EXPECT_EQ(ulb_ulp_of(100003, 3), ULB_ULP_NFS3);
	EXPECT_EQ(ulb_ulp_of(100003, 4), ULB_ULP_NFS4);
	EXPECT_EQ(ulb_ulp_of(100003, 5), ULB_ULP_OTHER);
	EXPECT_EQ(ulb_ulp_of(100005, 3), ULB_ULP_MOUNT);
	EXPECT_EQ(ulb_ulp_of(100021, 4), ULB_ULP_NLM);
	EXPECT_EQ(ulb_ulp_of(100024, 1), ULB_ULP_NSM);
	EXPECT_EQ(ulb_ulp_of(100227, 3), ULB_ULP_NFSACL);
	EXPECT_STREQ(ulb_ulp_name(ULB_ULP_NFSACL), "nfsacl");
}

TEST(UlbElig, Nfs3)
{
	/* RFC 1813 procedure numbers: WRITE 7, SYMLINK 10, READ 6, READLINK 5 */
	EXPECT_EQ(ulb_elig_arg(ULB_ULP_NFS3, 7), ULB_ITEM_WRITE_DATA);
	EXPECT_EQ(ulb_elig_arg(ULB_ULP_NFS3, 10), ULB_ITEM_SYMLINK_PATH);
	EXPECT_EQ(ulb_elig_res(ULB_ULP_NFS3, 6, 0), ULB_ITEM_READ_DATA);
	EXPECT_EQ(ulb_elig_res(ULB_ULP_NFS3, 5, 0), ULB_ITEM_READLINK_PATH);
	for (uint32_t p = 0; p < 22; p++) {
		if (p != 7 && p != 10) {
			EXPECT_EQ(ulb_elig_arg(ULB_ULP_NFS3, p), ULB_ITEM_NONE) << p;
		}
		if (p != 5 && p != 6) {
			EXPECT_EQ(ulb_elig_res(ULB_ULP_NFS3, p, 0), ULB_ITEM_NONE) << p;
		}
	}
}

TEST(UlbElig, Nfs2)
{
	/* RFC 1094: WRITE 8, SYMLINK 13, READ 6, READLINK 5 */
	EXPECT_EQ(ulb_elig_arg(ULB_ULP_NFS2, 8), ULB_ITEM_WRITE_DATA);
	EXPECT_EQ(ulb_elig_arg(ULB_ULP_NFS2, 13), ULB_ITEM_SYMLINK_PATH);
	EXPECT_EQ(ulb_elig_res(ULB_ULP_NFS2, 6, 0), ULB_ITEM_READ_DATA);
	EXPECT_EQ(ulb_elig_res(ULB_ULP_NFS2, 5, 0), ULB_ITEM_READLINK_PATH);
	EXPECT_EQ(ulb_elig_arg(ULB_ULP_NFS2, 7), ULB_ITEM_NONE); /* WRITECACHE */
}

TEST(UlbElig, AuxiliaryProtocolsHaveNothing)
{
	for (auto ulp : {ULB_ULP_MOUNT, ULB_ULP_NLM, ULB_ULP_NSM, ULB_ULP_NFSACL, ULB_ULP_OTHER})
		for (uint32_t p = 0; p < 64; p++) {
			EXPECT_EQ(ulb_elig_arg(ulp, p), ULB_ITEM_NONE);
			EXPECT_EQ(ulb_elig_res(ulp, p, 2), ULB_ITEM_NONE);
		}
}

TEST(UlbElig, Nfs4)
{
	EXPECT_EQ(ulb_elig_arg(ULB_ULP_NFS4, 38), ULB_ITEM_WRITE_DATA);	 /* WRITE */
	EXPECT_EQ(ulb_elig_arg(ULB_ULP_NFS4, 6), ULB_ITEM_SYMLINK_PATH); /* CREATE */
	EXPECT_EQ(ulb_elig_res(ULB_ULP_NFS4, 25, 0), ULB_ITEM_READ_DATA);
	EXPECT_EQ(ulb_elig_res(ULB_ULP_NFS4, 27, 0), ULB_ITEM_READLINK_PATH);
	EXPECT_EQ(ulb_elig_res(ULB_ULP_NFS4, 68, 2), ULB_ITEM_READ_PLUS_DATA);
	EXPECT_EQ(ulb_elig_res(ULB_ULP_NFS4, 68, 1), ULB_ITEM_NONE); /* 4.2 and newer */
	int nread = 0;
	for (uint32_t op = 3; op <= 75; op++)
		nread += ulb_elig_res(ULB_ULP_NFS4, op, 2) != ULB_ITEM_NONE;
	EXPECT_EQ(nread, 3);
}
