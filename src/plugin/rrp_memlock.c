// SPDX-License-Identifier: MIT
/*
 * rrp_memlock.c - registered memory is pinned memory, and some kernels
 * charge it against RLIMIT_MEMLOCK whoever the process is: soft-iWARP
 * (siw_umem_get) does even for root, where rxe and mlx5 let CAP_IPC_LOCK
 * pass (ib_umem_get). A limit too small for what the plugin will register
 * would fail registrations connection by connection; so it is raised where
 * the process may, before the first registration, and where it still binds
 * the plugin serves within it (rrp_plugin.c: memlock_fit) or not at all,
 * saying so in one line with the figure needed and how to give it
 * (docs/devices.md).
 */
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "plugin/rrp_memlock.h"
#include "plugin/rrp_plugin.h"

/* CAP_IPC_LOCK lifts the limit for devices that ask ib_umem_get. */
static bool cap_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return false;
	return data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective & CAP_TO_MASK(CAP_IPC_LOCK);
}

uint64_t rrp_memlock_limit(const struct rr_served *sv, bool soft)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	/* The soft provider pins nothing unless it stands for siw
	 * (RPCRDMA_SOFT_MEMLOCK); other devices honour CAP_IPC_LOCK. */
	if (!sv->memlock_charged && (soft || cap_ipc_lock()))
		return UINT64_MAX;
	return rl.rlim_cur;
}

static unsigned long long mib_up(uint64_t bytes)
{
	return (unsigned long long)((bytes + (1u << 20) - 1) >> 20);
}

void rrp_memlock_say(const char *addr, const char *device, uint64_t limit, uint64_t need,
		     uint64_t least, const char *served)
{
	char head[192];

	snprintf(head, sizeof(head),
		 "RLIMIT_MEMLOCK is %llu MiB, and the RDMA settings on %s would register up to "
		 "%llu MiB (device %s counts registrations against it)",
		 (unsigned long long)(limit >> 20), addr, mib_up(need), device);
	if (served)
		rrp_warn("%s: serving within it with %s; to serve the settings, give ganesha at "
			 "least %llu MiB: LimitMEMLOCK=infinity in its systemd drop-in (the "
			 "package's does), ulimit -l unlimited before starting it, or --ulimit "
			 "memlock=-1 for its container",
			 head, served, mib_up(need));
	else
		rrp_crit("%s: too small to serve within (one connection and its Read sinks "
			 "need %llu MiB): RDMA not served there, TCP unaffected; give "
			 "ganesha at least %llu MiB: LimitMEMLOCK=infinity in its systemd drop-in "
			 "(the package's does), ulimit -l unlimited before starting it, or "
			 "--ulimit memlock=-1 for its container",
			 head, mib_up(least), mib_up(need));
}
