// SPDX-License-Identifier: MIT
/*
 * rrp_plugin.c - start-up: read the RDMA block, open the fabric, start the
 * transport engine on the configured listeners and the worker pool.
 *
 * Any failure here is logged in one line and leaves ganesha exactly as it
 * would be without the plugin: TCP service is never affected.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <syslog.h>

#include "fabric/fab.h"
#include "plugin/rrp_host.h"
#include "plugin/rrp_payload.h"
#include "plugin/rrp_plugin.h"

struct rrp_plugin rrp;

static bool config_loaded;

/*
 * ganesha's log, found at run time: libganesha_nfsd exports it, and the
 * plugin has no link-time dependency on ganesha (unit tests and tools load
 * the core without it, and then get stderr and syslog as before).
 */
typedef void (*gsh_display_log_fn)(int component, const char *file, int line,
				   const char *function, int level, const char *fmt, ...);
static struct {
	pthread_once_t once;
	gsh_display_log_fn display;
	int **levels;			/* component_log_level: int[COMPONENT_COUNT] */
} gsh_log = { .once = PTHREAD_ONCE_INIT };

static void gsh_log_find(void)
{
	gsh_log.display = (gsh_display_log_fn)dlsym(RTLD_DEFAULT, "DisplayLogComponentLevel");
	gsh_log.levels = dlsym(RTLD_DEFAULT, "component_log_level");
	if (!gsh_log.levels)
		gsh_log.display = NULL;
}

static const int gsh_level[] = {
	[RRP_LOG_CRIT] = RRP_HOST_NIV_CRIT,
	[RRP_LOG_WARN] = RRP_HOST_NIV_WARN,
	[RRP_LOG_EVENT] = RRP_HOST_NIV_EVENT,
	[RRP_LOG_INFO] = RRP_HOST_NIV_INFO,
	[RRP_LOG_DEBUG] = RRP_HOST_NIV_DEBUG,
};

void rrp_log_at(enum rrp_log_level level, const char *func, const char *fmt, ...)
{
	int niv = gsh_level[level];
	char line[512];
	va_list ap;

	pthread_once(&gsh_log.once, gsh_log_find);
	/* ganesha's Log* macros test the component's level before calling in:
	 * DisplayLogComponentLevel itself writes whatever it is given. */
	if (gsh_log.display && *gsh_log.levels &&
	    (*gsh_log.levels)[RRP_HOST_LOG_COMPONENT] < niv)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (gsh_log.display && *gsh_log.levels) {
		gsh_log.display(RRP_HOST_LOG_COMPONENT, "rpcrdma", 0, func, niv,
				"rpcrdma: %s", line);
		return;
	}
	fprintf(stderr, "rpcrdma: %s\n", line);
	syslog(LOG_DAEMON | (niv <= RRP_HOST_NIV_WARN ? LOG_WARNING : LOG_NOTICE),
	       "rpcrdma: %s", line);
}

/* The engine's lines carry no level: they are events of a connection or a
 * listener, and the ones that matter more say so in their words. */
static void engine_log(const char *line)
{
	rrp_log_at(RRP_LOG_EVENT, "rpcrdma_engine", "%s", line);
}

/* The configuration file ganesha was started with. */
static const char *config_path(void)
{
	const char *env = getenv("RPCRDMA_CONFIG");
	char **p;

	if (env && *env)
		return env;
	p = dlsym(RTLD_DEFAULT, "nfs_config_path");
	if (p && *p)
		return *p;
	return "/etc/ganesha/ganesha.conf";
}

static int load_config(void)
{
	static int result;

	if (config_loaded)
		return result;
	config_loaded = true;
	rrp_config_default(&rrp.cfg);
	result = rrp_config_parse_file(config_path(), &rrp.cfg);
	return result;
}

uint16_t rrp_plugin_nfs_port(void)
{
	load_config();
	return rrp.cfg.nfs_port;
}

static enum xprt_stat listener_stat(SVCXPRT *xprt)
{
	(void)xprt;
	return XPRT_IDLE;
}

static void *payload_base;
static size_t payload_len;

/* Half the pool in 64 KiB buffers, half in 1 MiB ones (see rrp_payload.c). */
static void payload_pool_init(void)
{
	size_t bytes = (size_t)rrp.cfg.payload_pool_mb << 20;
	size_t small = bytes / 2 / RRP_PAYLOAD_SMALL;
	size_t large = bytes / 2 / RRP_PAYLOAD_LARGE;

	if (!bytes || rrp_payload_init(small, large, &payload_base, &payload_len)) {
		payload_len = 0;
		return;
	}
	rrp_log("READ payload pool: %zu x 64 KiB + %zu x 1 MiB, registered once",
		small, large);
}

static int start_server(const char *addr, int slot)
{
	struct rr_config ec;
	int ret;

	rr_config_default(&ec);
	ec.credits = rrp.cfg.credits;
	ec.inline_size = rrp.cfg.inline_threshold;
	ec.max_conns = rrp.cfg.max_connections;
	ec.max_conns_per_peer = rrp.cfg.max_conns_per_peer;
	ec.handshake_timeout = rrp.cfg.handshake_timeout;
	ec.idle_timeout = rrp.cfg.idle_timeout;
	if (rrp.cfg.recv_mem_budget != RRP_MEM_BUDGET_AUTO)
		ec.recv_mem_budget = rrp.cfg.recv_mem_budget;
	ec.use_srq = rrp.cfg.use_srq;
	ec.srq_depth = rrp.cfg.srq_depth;
	ec.max_ord = (uint8_t)rrp.cfg.max_ord;
	ret = rr_server_create(rrp.fab, addr, &ec, &rrp_upper_ops, &rrp, &rrp.srv[slot]);
	if (ret) {
		rrp_crit("cannot listen on %s (%s): %s", addr, rrp.cfg.fabric,
			fab_last_error());
		snprintf(rrp.start_why[slot], sizeof(rrp.start_why[slot]),
			 "cannot listen on %.56s: %.48s", addr, fab_last_error());
		rrp.srv[slot] = NULL;
		return ret;
	}
	if (payload_len) {
		ret = rr_server_add_region(rrp.srv[slot], payload_base, payload_len);
		if (ret)
			rrp_warn("cannot register the payload pool: %s "
					"(READ data will be copied)", fab_last_error());
	}
	ret = rr_server_start(rrp.srv[slot]);
	if (ret) {
		snprintf(rrp.start_why[slot], sizeof(rrp.start_why[slot]),
			 "cannot start the RDMA event thread: %s", strerror(-ret));
		return ret;
	}
	rrp_log("NFS over RDMA listening on %s (fabric %s, credits %u, inline %u, "
		"memory budget %llu MiB, %u connections, %u per peer; built for %s)",
		addr, rrp.cfg.fabric, ec.credits, ec.inline_size,
		(unsigned long long)(ec.recv_mem_budget >> 20), ec.max_conns,
		ec.max_conns_per_peer, RRP_HOST_NAME);
	return 0;
}

void rrp_plugin_start(void)
{
	char addr[192];
	int ret;

	ret = load_config();

	if (ret == -ENOENT || (!ret && !rrp.cfg.enable)) {
		rrp_log("no enabled RDMA block in %s: RDMA not served",
			config_path());
		return;
	}
	if (ret) {
		rrp_crit("RDMA block in %s is invalid (see above): RDMA not served, "
				"TCP unaffected",
			config_path());
		return;
	}
	rr_set_log_sink(engine_log);
	rrp.listeners_wanted = rrp.cfg.listen_addr_v6[0] && strcmp(rrp.cfg.fabric, "soft") ? 2 : 1;
	ret = fab_open(rrp.cfg.fabric, &rrp.fab);
	if (ret) {
		rrp_crit("fabric %s unavailable: %s: RDMA not served",
			rrp.cfg.fabric, fab_last_error());
		/* The stats socket still tells admins and monitors why. */
		snprintf(rrp.start_why[0], sizeof(rrp.start_why[0]),
			 "fabric %.16s unavailable: %.80s", rrp.cfg.fabric, fab_last_error());
		rrp.listeners_wanted = 1;
		if (rrp.cfg.stats_socket[0])
			rrp_stats_start(rrp.cfg.stats_socket);
		return;
	}

	rrp.listener_ops.xp_stat = listener_stat;
	rrp.listener.xp_ops = &rrp.listener_ops;
	rrp.listener.xp_type = XPRT_RDMA_RENDEZVOUS;
	rrp.listener.xp_fd = -1;

	payload_pool_init();
	rrp.nworkers = rrp.cfg.workers;
	rrp.workers = calloc(rrp.nworkers, sizeof(*rrp.workers));
	for (unsigned int i = 0; rrp.workers && i < rrp.nworkers; i++)
		pthread_create(&rrp.workers[i], NULL, rrp_worker_main, NULL);

	if (!strcmp(rrp.cfg.fabric, "soft") && rrp.cfg.soft_socket[0])
		snprintf(addr, sizeof(addr), "unix:%s", rrp.cfg.soft_socket);
	else if (!strcmp(rrp.cfg.fabric, "soft"))
		snprintf(addr, sizeof(addr), "tcp:%s:%u", rrp.cfg.listen_addr, rrp.cfg.port);
	else
		snprintf(addr, sizeof(addr), "%s:%u", rrp.cfg.listen_addr, rrp.cfg.port);
	start_server(addr, 0);
	if (rrp.cfg.listen_addr_v6[0] && strcmp(rrp.cfg.fabric, "soft")) {
		snprintf(addr, sizeof(addr), "[%s]:%u", rrp.cfg.listen_addr_v6, rrp.cfg.port);
		start_server(addr, 1);
	}
	if (rrp.cfg.stats_socket[0])
		rrp_stats_start(rrp.cfg.stats_socket);
}

/* The why, made safe to print inside a JSON string. */
static void json_safe(char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			*s = '\'';
		else if ((unsigned char)*s < 0x20)
			*s = ' ';
}

void rrp_health(struct rrp_health *out)
{
	memset(out, 0, sizeof(*out));
	out->listeners = rrp.listeners_wanted;
	for (unsigned int i = 0; i < rrp.listeners_wanted && i < 2; i++) {
		struct rr_health h;
		const char *why = rrp.start_why[i];

		if (rrp.srv[i]) {
			rr_server_health(rrp.srv[i], &h);
			if (h.serving) {
				out->listeners_serving++;
				continue;
			}
			why = h.why;
		} else if (!why[0]) {
			why = "listener not started";
		}
		if (!out->why[0])
			snprintf(out->why, sizeof(out->why), "%s", why);
	}
	out->serving = out->listeners_serving > 0;
	json_safe(out->why);
}
