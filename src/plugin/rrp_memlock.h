/* SPDX-License-Identifier: MIT */
/*
 * rrp_memlock.h - RLIMIT_MEMLOCK as high as this process may set it:
 * unlimited with CAP_SYS_RESOURCE (root, a package's LimitMEMLOCK=infinity),
 * else up to the hard limit. Called twice: by the preloaded library before
 * ganesha's main, while ganesha still has CAP_SYS_RESOURCE (it drops it early,
 * nfs_init.c lower_my_caps), and by the core before its first registration,
 * for a core loaded otherwise (docs/devices.md).
 */
#ifndef RPCRDMA_RRP_MEMLOCK_H
#define RPCRDMA_RRP_MEMLOCK_H

#include <sys/resource.h>

static inline void rrp_memlock_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return;
	if (!setrlimit(RLIMIT_MEMLOCK, &(struct rlimit){RLIM_INFINITY, RLIM_INFINITY}))
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_MEMLOCK, &rl);
	}
}

#endif /* RPCRDMA_RRP_MEMLOCK_H */
