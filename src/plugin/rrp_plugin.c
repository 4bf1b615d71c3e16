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

void rrp_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "rpcrdma: %s\n", line);
	syslog(LOG_DAEMON | LOG_NOTICE, "rpcrdma: %s", line);
}

static void engine_log(const char *line)
{
	rrp_log("%s", line);
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
		rrp_log("cannot listen on %s (%s): %s", addr, rrp.cfg.fabric,
			fab_last_error());
		snprintf(rrp.start_why[slot], sizeof(rrp.start_why[slot]),
			 "cannot listen on %.56s: %.48s", addr, fab_last_error());
		rrp.srv[slot] = NULL;
		return ret;
	}
	if (payload_len) {
		ret = rr_server_add_region(rrp.srv[slot], payload_base, payload_len);
		if (ret)
			rrp_log("cannot register the payload pool: %s "
					"(READ data will be copied)", fab_last_error());
	}
	snprintf(rrp.listen[slot], sizeof(rrp.listen[slot]), "%s", addr);
	rrp.eff[slot] = ec; /* shown by the stats socket */
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
		rrp_log("RDMA block in %s is invalid (see above): RDMA not served, "
				"TCP unaffected",
			config_path());
		return;
	}
	rr_set_log_sink(engine_log);
	rrp.listeners_wanted = 1;
	ret = fab_open(rrp.cfg.fabric, &rrp.fab);
	if (ret) {
		rrp_log("fabric %s unavailable: %s: RDMA not served",
			rrp.cfg.fabric, fab_last_error());
		/* The stats socket still tells admins and monitors why. */
		snprintf(rrp.start_why[0], sizeof(rrp.start_why[0]),
			 "fabric %.16s unavailable: %.80s", rrp.cfg.fabric, fab_last_error());
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

	/* Soft_Socket: the soft fabric on a unix socket (tests, the demo) */
	if (rrp.cfg.soft_socket[0])
		snprintf(addr, sizeof(addr), "unix:%s", rrp.cfg.soft_socket);
	else
		snprintf(addr, sizeof(addr), "%s:%u", rrp.cfg.listen_addr, rrp.cfg.port);
	if (rrp.cfg.listen_addr_v6[0] && (fab_caps(rrp.fab) & FAB_CAP_V6_LISTENER))
		rrp.listeners_wanted = 2;
	start_server(addr, 0);
	if (rrp.listeners_wanted == 2) {
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
