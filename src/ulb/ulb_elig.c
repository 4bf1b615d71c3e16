// SPDX-License-Identifier: MIT
/*
 * ulb_elig.c - which XDR items may travel in chunks (RFC 8267).
 */
#include <stddef.h>

#include "ulb/ulb_elig.h"
#include "ulb/ulb_nfs.h"
#include "ulb/ulb_priv.h"
#include "ulb/ulb_test_hooks.h"

/* Indexed by procedure / operation number: one bounds check and one load per
 * lookup (the reply walk asks once per COMPOUND result). */

/* RFC 8267 section 3 */
static const struct ulb_elig_row ulb_elig_nfs2[ULB_NFS2_SYMLINK + 1] = {
    [ULB_NFS2_READLINK] = {ULB_ITEM_NONE, ULB_ITEM_READLINK_PATH},
    [ULB_NFS2_READ] = {ULB_ITEM_NONE, ULB_ITEM_READ_DATA},
    [ULB_NFS2_WRITE] = {ULB_ITEM_WRITE_DATA, ULB_ITEM_NONE},
    [ULB_NFS2_SYMLINK] = {ULB_ITEM_SYMLINK_PATH, ULB_ITEM_NONE},
};

static const struct ulb_elig_row ulb_elig_nfs3[ULB_NFS3_SYMLINK + 1] = {
    [ULB_NFS3_READLINK] = {ULB_ITEM_NONE, ULB_ITEM_READLINK_PATH},
    [ULB_NFS3_READ] = {ULB_ITEM_NONE, ULB_ITEM_READ_DATA},
    [ULB_NFS3_WRITE] = {ULB_ITEM_WRITE_DATA, ULB_ITEM_NONE},
    [ULB_NFS3_SYMLINK] = {ULB_ITEM_SYMLINK_PATH, ULB_ITEM_NONE},
};

/* RFC 8267 section 4.1: COMPOUND operations */
const struct ulb_elig_row ulb_elig_nfs4[ULB_ELIG_NFS4_ROWS] = {
    [ULB_OP_CREATE] = {ULB_ITEM_SYMLINK_PATH, ULB_ITEM_NONE},
    [ULB_OP_READ] = {ULB_ITEM_NONE, ULB_ITEM_READ_DATA},
    [ULB_OP_READLINK] = {ULB_ITEM_NONE, ULB_ITEM_READLINK_PATH},
    [ULB_OP_WRITE] = {ULB_ITEM_WRITE_DATA, ULB_ITEM_NONE},
    [ULB_OP_READ_PLUS] = {ULB_ITEM_NONE, ULB_ITEM_READ_PLUS_DATA},
};

#define ULB_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const struct ulb_elig_row *ulb_elig_find(enum ulb_ulp ulp, uint32_t proc)
{
	switch (ulp) {
	case ULB_ULP_NFS2:
		return proc < ULB_ARRAY_SIZE(ulb_elig_nfs2) ? &ulb_elig_nfs2[proc] : NULL;
	case ULB_ULP_NFS3:
		return proc < ULB_ARRAY_SIZE(ulb_elig_nfs3) ? &ulb_elig_nfs3[proc] : NULL;
	case ULB_ULP_NFS4:
		return proc < ULB_ARRAY_SIZE(ulb_elig_nfs4) ? &ulb_elig_nfs4[proc] : NULL;
	default:
		/* MOUNT, NLM, NSM (section 3.1.1), NFSACL (3.1.2): nothing eligible */
		return NULL;
	}
}

enum ulb_ulp ulb_ulp_of(uint32_t prog, uint32_t vers)
{
	switch (prog) {
	case ULB_PROG_NFS:
		if (vers == 2)
			return ULB_ULP_NFS2;
		if (vers == 3)
			return ULB_ULP_NFS3;
		if (vers == 4)
			return ULB_ULP_NFS4;
		return ULB_ULP_OTHER;
	case ULB_PROG_MOUNT:
		return ULB_ULP_MOUNT;
	case ULB_PROG_NLM:
		return ULB_ULP_NLM;
	case ULB_PROG_NSM:
		return ULB_ULP_NSM;
	case ULB_PROG_NFSACL:
		return ULB_ULP_NFSACL;
	default:
		return ULB_ULP_OTHER;
	}
}

const char *ulb_ulp_name(enum ulb_ulp ulp)
{
	static const char *const names[] = {"other", "nfs2", "nfs3", "nfs4",
					    "mount", "nlm",  "nsm",  "nfsacl"};

	if ((unsigned int)ulp < ULB_ARRAY_SIZE(names))
		return names[ulp];
	return "?";
}

enum ulb_item ulb_elig_arg(enum ulb_ulp ulp, uint32_t proc_or_op)
{
	const struct ulb_elig_row *r = ulb_elig_find(ulp, proc_or_op);

	return r ? (enum ulb_item)r->arg : ULB_ITEM_NONE;
}

enum ulb_item ulb_elig_res(enum ulb_ulp ulp, uint32_t proc_or_op, uint32_t minor)
{
	switch (ulp) {
	case ULB_ULP_NFS2:
		return proc_or_op < ULB_ARRAY_SIZE(ulb_elig_nfs2)
			   ? (enum ulb_item)ulb_elig_nfs2[proc_or_op].res
			   : ULB_ITEM_NONE;
	case ULB_ULP_NFS3:
		return proc_or_op < ULB_ARRAY_SIZE(ulb_elig_nfs3)
			   ? (enum ulb_item)ulb_elig_nfs3[proc_or_op].res
			   : ULB_ITEM_NONE;
	case ULB_ULP_NFS4:
		return ulb_elig_res4(proc_or_op, minor);
	default:
		return ULB_ITEM_NONE;
	}
}
