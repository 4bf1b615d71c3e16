/* SPDX-License-Identifier: MIT */
/*
 * rrp_interpose.h - the entry points of ntirpc and ganesha the plugin
 * interposes, and the hand-over between its two libraries.
 *
 * librpcrdma_ganesha.so (rrp_preload.c, preloaded) needs nothing but libc:
 * a preloaded object that cannot load its dependencies stops ganesha, so
 * everything that needs libntirpc, libganesha_nfsd or rdma-core lives in
 * librpcrdma_core.so, which the preloaded library dlopen()s only after the
 * version guard passed. A failed dlopen is one log line; ganesha serves TCP.
 *
 * Interposed definitions must be in the preloaded object, so each one there
 * forwards: to the core's hook when the core is attached and has one, else
 * to the real function (RTLD_NEXT of the preloaded object). The core reaches
 * the real functions through the same table (struct rrp_calls).
 */
#ifndef RPCRDMA_RRP_INTERPOSE_H
#define RPCRDMA_RRP_INTERPOSE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#include <rpc/svc.h>
#include <rpc/clnt.h>

/*
 * X(return type, name, (parameters), (arguments)). An entry point missing
 * from the running release (clnt_vc_get_client_xprt in some: rrp_host.h)
 * is simply never called.
 */
#define RRP_INTERPOSED(X)                                                                     \
	X(bool, svc_init, (struct svc_init_params * params), (params))                        \
	X(int, svc_rqst_evchan_reg, (uint32_t chan_id, SVCXPRT * xprt, uint32_t flags),        \
	  (chan_id, xprt, flags))                                                            \
	X(CLIENT *, clnt_vc_ncreate_svc,                                                      \
	  (const SVCXPRT *xprt, const rpcprog_t prog, const rpcvers_t vers,                   \
	   const uint32_t flags),                                                             \
	  (xprt, prog, vers, flags))                                                          \
	X(SVCXPRT *, clnt_vc_get_client_xprt, (const CLIENT *clnt), (clnt))                   \
	X(enum clnt_stat, clnt_req_setup, (struct clnt_req * cc, struct timespec timeout),     \
	  (cc, timeout))                                                                      \
	X(enum clnt_stat, clnt_req_callback, (struct clnt_req * cc), (cc))                    \
	X(enum clnt_stat, clnt_req_wait_reply, (struct clnt_req * cc), (cc))                  \
	X(int, clnt_req_release, (struct clnt_req * cc), (cc))                                \
	X(void *, get_gsh_export, (uint16_t id), (id))                                        \
	X(int, nfs4_export_check_access, (struct svc_req * req), (req))                       \
	X(int, read_log_config, (void *config, void *err_type), (config, err_type))

/* The same for those that return nothing: svc_resume(), by which ganesha has
 * ntirpc resume a suspended request (rrp_xprt.c). */
#define RRP_INTERPOSED_VOID(X) X(void, svc_resume, (struct svc_req * req), (req))

#define RRP_CALL_FIELD(ret, name, params, args) ret(*name) params;
struct rrp_calls {
	RRP_INTERPOSED(RRP_CALL_FIELD)
	RRP_INTERPOSED_VOID(RRP_CALL_FIELD)
	/* not interposed, called by the core only */
	void (*put_gsh_export)(void *exp, bool config, char *file, int line, char *function);
};
#undef RRP_CALL_FIELD

struct rrp_announce;

/* What the preloaded library gives the core. */
struct rrp_shim {
	const struct rrp_calls *real;	/* ganesha's and ntirpc's own */
	/* The READ payload arena and the lending of WRITE data (rrp_payload.h):
	 * the allocator they interpose must be the preloaded one. */
	int (*payload_init)(size_t small_slots, size_t large_slots, void **base, size_t *len);
	const unsigned int *(*payload_expect)(size_t max, unsigned int n, bool aligned);
	struct rrp_announce *(*payload_announcement)(void);
	void (*payload_lend)(const struct iovec *chunk, int n,
			     bool (*at)(void *arg, const void *addr), void *arg);
};

/* The core's one exported symbol: takes @shim (kept), fills @hooks. */
#define RRP_CORE_ENTRY "rrp_core_attach"
#define RRP_CORE_SONAME "librpcrdma_core.so"
typedef int (*rrp_core_attach_fn)(const struct rrp_shim *shim, struct rrp_calls *hooks);
int rrp_core_attach(const struct rrp_shim *shim, struct rrp_calls *hooks);

/* In the core: the real functions, once attached. */
extern const struct rrp_calls *rrp_real;

#endif
