/* SPDX-License-Identifier: MIT */
/*
 * rrp_version.h - the version guard: the plugin reaches into ganesha and
 * ntirpc by structure layout and captured callbacks, so it only activates in
 * the exact ntirpc and ganesha it was built against.
 */
#ifndef RPCRDMA_RRP_VERSION_H
#define RPCRDMA_RRP_VERSION_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rrp_version_expect {
	const char *ntirpc_tag;	    /* symbol version node, "NTIRPC_X.Y" */
	const char *ntirpc_soname;  /* "libntirpc.so.X.Y" */
	const char *ganesha_soname; /* "libganesha_nfsd.so.X.Y" */
};

/* Check this process against @e: 0 when it matches, else -1 with the reason
 * (one line, no newline) in @why. No logging. */
int rrp_version_check(const struct rrp_version_expect *e, char *why, size_t len);

/* The check against the versions the plugin was built for, done once; on a
 * mismatch it logs one line and returns false from then on. */
bool rrp_version_ok(void);

/* The symbol version node of the ntirpc built against, "NTIRPC_X.Y". */
const char *rrp_version_ntirpc_tag(void);

#ifdef __cplusplus
}
#endif

#endif
