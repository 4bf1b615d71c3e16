// SPDX-License-Identifier: MIT
/*
 * rrp_core.c - librpcrdma_core.so's entry point: attached by the preloaded
 * library (rrp_preload.c) once the version guard passed, it takes the real
 * ntirpc/ganesha functions and gives back its hooks (rrp_interpose.h).
 *
 * Two calls carry what the core needs of ganesha (rrp_host.h):
 *   svc_init(params)               - alloc_cb / free_cb for requests;
 *   svc_rqst_evchan_reg(..., xprt) - the NFS TCP listener, whose
 *                                    rendezvous_cb gives a new transport
 *                                    ganesha's NFS dispatcher.
 * Once both are seen, the RDMA block is read and served (rrp_plugin.c).
 * A third, read_log_config(tree), hands over ganesha's parsed configuration
 * at start-up and at every reload.
 */
#include <pthread.h>

#include "plugin/rrp_exports.h"
#include "plugin/rrp_host.h"
#include "plugin/rrp_interpose.h"
#include "plugin/rrp_payload.h"
#include "plugin/rrp_plugin.h"

#define EXPORTED __attribute__((visibility("default")))

struct rrp_host rrp_host;
const struct rrp_calls *rrp_real;
static const struct rrp_shim *shim;

static bool hook_svc_init(struct svc_init_params *params)
{
	rrp_host.alloc_cb = params->alloc_cb;
	rrp_host.free_cb = params->free_cb;
	return rrp_real->svc_init(params);
}

static int hook_svc_rqst_evchan_reg(uint32_t chan_id, SVCXPRT *xprt, uint32_t flags)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int ret;

	if (xprt && xprt->xp_type == XPRT_TCP_RENDEZVOUS && !rrp_host.nfs_rendezvous &&
	    __rpc_address_port(&xprt->xp_local) == rrp_plugin_nfs_port()) {
		rrp_host.nfs_rendezvous = xprt->xp_dispatch.rendezvous_cb;
		/* ganesha sets it with SVCSET_XP_FREE_USER_DATA just before. */
		rrp_host.free_user_data = xprt->xp_ops->xp_free_user_data;
	}
	ret = rrp_real->svc_rqst_evchan_reg(chan_id, xprt, flags);
	if (rrp_host.alloc_cb && rrp_host.nfs_rendezvous)
		pthread_once(&once, rrp_plugin_start);
	return ret;
}

/* ganesha's parsed configuration, at start-up and at every reload: the
 * LOG block applied first, so the plugin's lines follow it. */
static int hook_read_log_config(void *config, void *err_type)
{
	int ret = rrp_real->read_log_config(config, err_type);

	rrp_plugin_config_tree(config, err_type);
	return ret;
}

EXPORTED int rrp_core_attach(const struct rrp_shim *s, struct rrp_calls *hooks)
{
	if (!s || !s->real || !s->real->svc_init || !s->real->svc_rqst_evchan_reg)
		return -1;
	shim = s;
	rrp_real = s->real;
	hooks->svc_init = hook_svc_init;
	hooks->svc_rqst_evchan_reg = hook_svc_rqst_evchan_reg;
	hooks->clnt_vc_ncreate_svc = rrp_bc_clnt_vc_ncreate_svc;
	if (rrp_host_ops.bc_client_xprt)
		hooks->clnt_vc_get_client_xprt = rrp_bc_clnt_vc_get_client_xprt;
	hooks->clnt_req_setup = rrp_bc_clnt_req_setup;
	hooks->clnt_req_callback = rrp_bc_clnt_req_callback;
	hooks->clnt_req_wait_reply = rrp_bc_clnt_req_wait_reply;
	hooks->clnt_req_release = rrp_bc_clnt_req_release;
	hooks->get_gsh_export = rrp_exports_get_gsh_export;
	hooks->nfs4_export_check_access = rrp_exports_check_access;
	hooks->read_log_config = hook_read_log_config;
	hooks->svc_resume = rrp_xprt_svc_resume;
	return 0;
}

/* The payload arena lives in the preloaded library (rrp_payload.h). */
int rrp_payload_init(size_t small_slots, size_t large_slots, void **base, size_t *len)
{
	return shim->payload_init(small_slots, large_slots, base, len);
}

const unsigned int *rrp_payload_expect(size_t max, unsigned int n, bool aligned)
{
	return shim->payload_expect(max, n, aligned);
}

struct rrp_announce *rrp_payload_announcement(void)
{
	return shim->payload_announcement();
}

void rrp_payload_lend(const struct iovec *chunk, int n, bool (*at)(void *arg, const void *addr),
		      void *arg)
{
	shim->payload_lend(chunk, n, at, arg);
}
