// SPDX-License-Identifier: MIT
/*
 * rrp_preload.c - librpcrdma_ganesha.so, the library ganesha preloads.
 *
 * It needs nothing but libc, so it can never keep ganesha from starting:
 * not on another release, not after a forced install, not with rdma-core or
 * the core library removed. It holds what must be in the preloaded object:
 *  - the interposed ntirpc and ganesha entry points (rrp_interpose.h), each
 *    forwarding to the core's hook or to the real function;
 *  - the allocator calls of the READ payload arena (rrp_payload.c);
 *  - the version guard (rrp_version.c);
 *  - RLIMIT_MEMLOCK raised before ganesha's main (raise_memlock below).
 * The first interposed call (svc_init, early in ganesha's start) checks the
 * versions, then dlopen()s librpcrdma_core.so from this library's own folder
 * and attaches it. Whatever fails is one log line, and every call then goes
 * straight to ganesha's and ntirpc's own functions.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <syslog.h>

#include "plugin/rrp_interpose.h"
#include "plugin/rrp_memlock.h"
#include "plugin/rrp_payload.h"
#include "plugin/rrp_version.h"

#define EXPORTED __attribute__((visibility("default")))

static struct rrp_calls real_calls;
static struct rrp_calls hooks;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* One line, cut at 768 bytes (a path may be up to PATH_MAX). */
static __attribute__((format(printf, 1, 2))) void shim_log(const char *fmt, ...)
{
	char line[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "rpcrdma: %s\n", line);
	syslog(LOG_DAEMON | LOG_WARNING, "rpcrdma: %s", line);
}

static void *next_sym(const char *name)
{
	void *p = dlvsym(RTLD_NEXT, name, rrp_version_ntirpc_tag());

	return p ? p : dlsym(RTLD_NEXT, name);
}

static void resolve_real(void)
{
#define RRP_RESOLVE(ret, name, params, args) real_calls.name = (ret(*) params)next_sym(#name);
	RRP_INTERPOSED(RRP_RESOLVE)
	RRP_INTERPOSED_VOID(RRP_RESOLVE)
#undef RRP_RESOLVE
	real_calls.put_gsh_export =
	    (void (*)(void *, bool, char *, int, char *))dlsym(RTLD_NEXT, "_put_gsh_export");
}

/* librpcrdma_core.so beside this library. */
static int core_path(char *out, size_t len)
{
	Dl_info self;
	const char *slash;

	if (!dladdr((void *)core_path, &self) || !self.dli_fname)
		return -1;
	slash = strrchr(self.dli_fname, '/');
	if (!slash)
		return snprintf(out, len, "%s", RRP_CORE_SONAME) >= (int)len ? -1 : 0;
	return snprintf(out, len, "%.*s/%s", (int)(slash - self.dli_fname), self.dli_fname,
			RRP_CORE_SONAME) >= (int)len
		   ? -1
		   : 0;
}

/*
 * Registered memory is pinned memory, and siw charges it to RLIMIT_MEMLOCK
 * even for root (docs/devices.md). ganesha drops CAP_SYS_RESOURCE early in
 * its start (nfs_init.c, lower_my_caps), long before the core registers
 * anything, and from then on the limit can rise no further than its hard
 * limit. So it is raised here, while the process may: to unlimited with
 * CAP_SYS_RESOURCE, else to the hard limit. The core tries again at start-up
 * and says what is still missing.
 */
static __attribute__((constructor)) void raise_memlock(void)
{
	rrp_memlock_raise();
}

static const struct rrp_shim shim = {
    .real = &real_calls,
    .payload_init = rrp_payload_init,
    .payload_expect = rrp_payload_expect,
    .payload_announcement = rrp_payload_announcement,
    .payload_lend = rrp_payload_lend,
};

static void load(void)
{
	struct rrp_calls core_hooks = {0};
	char path[PATH_MAX];
	rrp_core_attach_fn attach;
	void *h;

	resolve_real();
	if (!rrp_version_ok())
		return; /* logged there, naming both versions */
	if (core_path(path, sizeof(path))) {
		shim_log("cannot locate %s: RDMA not served, ganesha runs without it",
			 RRP_CORE_SONAME);
		return;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		shim_log("cannot load the core library: %s: RDMA not served, ganesha runs "
			 "without it",
			 dlerror());
		return;
	}
	attach = (rrp_core_attach_fn)dlsym(h, RRP_CORE_ENTRY);
	if (!attach || attach(&shim, &core_hooks)) {
		shim_log("%s refused to attach%s: RDMA not served, ganesha runs without it", path,
			 attach ? "" : " (no entry point)");
		return;
	}
	hooks = core_hooks;
}

#define RRP_FORWARD(ret, name, params, args)                                                       \
	EXPORTED ret name params                                                                   \
	{                                                                                          \
		pthread_once(&load_once, load);                                                    \
		return (hooks.name ? hooks.name : real_calls.name)args;                            \
	}
RRP_INTERPOSED(RRP_FORWARD)
#undef RRP_FORWARD

#define RRP_FORWARD_VOID(ret, name, params, args)                                                  \
	EXPORTED ret name params                                                                   \
	{                                                                                          \
		pthread_once(&load_once, load);                                                    \
		(hooks.name ? hooks.name : real_calls.name)args;                                   \
	}
RRP_INTERPOSED_VOID(RRP_FORWARD_VOID)
#undef RRP_FORWARD_VOID
