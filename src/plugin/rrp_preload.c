// SPDX-License-Identifier: MIT
/*
 * rrp_preload.c - the host interface by interposition (LD_PRELOAD).
 *
 * ganesha.nfsd links libntirpc dynamically, so a preloaded definition of an
 * ntirpc function receives ganesha's calls; the real one is found with
 * dlvsym(RTLD_NEXT, name, "NTIRPC_4.3"). Two calls carry what we need:
 *   svc_init(params)              - alloc_cb / free_cb for requests;
 *   svc_rqst_evchan_reg(..., xprt) - the NFS TCP listener, whose
 *                                   rendezvous_cb gives a new transport
 *                                   ganesha's NFS dispatcher.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "plugin/rrp_host.h"
#include "plugin/rrp_version.h"

#define NTIRPC_VERSION_TAG "NTIRPC_4.3"

struct rrp_host rrp_host;

static void *real_sym(const char *name)
{
	void *p = dlvsym(RTLD_NEXT, name, NTIRPC_VERSION_TAG);

	if (!p)
		p = dlsym(RTLD_NEXT, name);
	if (!p)
		fprintf(stderr, "rpcrdma: %s not found in libntirpc (%s): plugin inactive\n", name,
			NTIRPC_VERSION_TAG);
	return p;
}

__attribute__((visibility("default"))) bool svc_init(struct svc_init_params *params)
{
	bool (*real)(struct svc_init_params *) = (bool (*)(struct svc_init_params *))real_sym("svc_init");

	if (!real)
		return false;
	if (rrp_version_ok()) {
		rrp_host.alloc_cb = params->alloc_cb;
		rrp_host.free_cb = params->free_cb;
	}
	return real(params);
}

__attribute__((visibility("default"))) int svc_rqst_evchan_reg(uint32_t chan_id, SVCXPRT *xprt,
							 uint32_t flags)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int (*real)(uint32_t, SVCXPRT *, uint32_t) =
		(int (*)(uint32_t, SVCXPRT *, uint32_t))real_sym("svc_rqst_evchan_reg");
	int ret;

	if (!real)
		return -1;
	if (rrp_version_ok() && xprt && xprt->xp_type == XPRT_TCP_RENDEZVOUS &&
	    !rrp_host.nfs_rendezvous &&
	    __rpc_address_port(&xprt->xp_local) == rrp_plugin_nfs_port()) {
		rrp_host.nfs_rendezvous = xprt->xp_dispatch.rendezvous_cb;
		/* ganesha sets it with SVCSET_XP_FREE_USER_DATA just before. */
		rrp_host.free_user_data = xprt->xp_ops->xp_free_user_data;
	}
	ret = real(chan_id, xprt, flags);
	if (rrp_host.alloc_cb && rrp_host.nfs_rendezvous)
		pthread_once(&once, rrp_plugin_start);
	return ret;
}
