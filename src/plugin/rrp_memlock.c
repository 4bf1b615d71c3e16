// SPDX-License-Identifier: MIT
/*
 * rrp_memlock.c - registered memory is pinned memory, and some kernels
 * charge it against RLIMIT_MEMLOCK whoever the process is: soft-iWARP
 * (siw_umem_get) does even for root, where rxe and mlx5 let CAP_IPC_LOCK
 * pass (ib_umem_get). A limit too small for what the plugin will register
 * fails registrations connection by connection; so it is raised where the
 * process may, before the first registration, and otherwise said once, with
 * the figure needed and how to give it (docs/devices.md).
 */
#include <stdint.h>
#include <sys/resource.h>

#include "plugin/rrp_plugin.h"

/* As high as this process may set it: unlimited with CAP_SYS_RESOURCE (root,
 * a package's LimitMEMLOCK=infinity), else up to the hard limit. The
 * preloaded library did the same before ganesha's main (rrp_preload.c), while
 * ganesha still had CAP_SYS_RESOURCE; this covers a core loaded otherwise. */
void rrp_memlock_raise(void)
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

static unsigned long long mib_up(uint64_t bytes)
{
	return (unsigned long long)((bytes + (1u << 20) - 1) >> 20);
}

bool rrp_memlock_fits(uint64_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return true;
	rrp_warn("RLIMIT_MEMLOCK is %llu MiB, and the RDMA settings may register up to %llu MiB: "
		 "devices that charge registrations to it (siw, and others without CAP_IPC_LOCK) "
		 "will refuse them; give ganesha LimitMEMLOCK=infinity (the package's systemd "
		 "drop-in does), --ulimit memlock=-1 in a container, or lower "
		 "Receive_Memory_Budget, Max_Connections or Payload_Pool_MB",
		 mib_up(rl.rlim_cur), mib_up(need));
	return false;
}
