// SPDX-License-Identifier: MIT
/*
 * rrp_stats.c - counters for admins and tests: a unix socket (root only)
 * that answers every connection with one JSON object and closes:
 *   {"global": {counters...}, "plugin": {...}, "connections": [{"peer":..,...}],
 *    "health": {"serving":..,"why":..,"listeners":..,"listeners_serving":..}}
 * rpcrdma-stat reads it; so do the plugin tests.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "plugin/rrp_plugin.h"

static int listen_fd = -1;

static void put_stats(FILE *f, const struct rr_stats *st)
{
	const char *sep = "";

#define PUT(name)                                                                                  \
	fprintf(f, "%s\"" #name "\":%llu", sep, (unsigned long long)st->name);                    \
	sep = ",";
	RR_STATS_FIELDS(PUT)
#undef PUT
}

struct conn_walk {
	FILE *f;
	bool first;
};

static void put_conn(void *arg, struct rr_conn *conn, const struct rr_stats *st)
{
	struct conn_walk *w = arg;

	fprintf(w->f, "%s{\"peer\":\"%s\",", w->first ? "" : ",", rr_conn_peer(conn));
	put_stats(w->f, st);
	fputc('}', w->f);
	w->first = false;
}

static void write_json(FILE *f)
{
	struct rr_stats total, st;
	struct conn_walk w = {.f = f, .first = true};
	struct rrp_health h;

	memset(&total, 0, sizeof(total));
	for (int i = 0; i < 2; i++) {
		if (!rrp.srv[i])
			continue;
		rr_server_stats(rrp.srv[i], &st);
#define ADD(name) total.name += st.name;
		RR_STATS_FIELDS(ADD)
#undef ADD
	}
	fprintf(f, "{\"fabric\":\"%s\",\"global\":{", rrp.cfg.fabric);
	put_stats(f, &total);
	fprintf(f, "},\"plugin\":{\"requests\":%llu,\"dropped\":%llu,\"replies_failed\":%llu,"
		   "\"workers\":%u,\"decode_copy_bytes\":%llu,\"decode_in_place_bytes\":%llu},"
		   "\"connections\":[",
		(unsigned long long)atomic_load(&rrp.requests),
		(unsigned long long)atomic_load(&rrp.dropped),
		(unsigned long long)atomic_load(&rrp.replies_failed), rrp.nworkers,
		(unsigned long long)atomic_load(&rrp.decode_copy_bytes),
		(unsigned long long)atomic_load(&rrp.decode_in_place_bytes));
	for (int i = 0; i < 2; i++)
		if (rrp.srv[i])
			rr_server_foreach_conn(rrp.srv[i], put_conn, &w);
	rrp_health(&h);
	fprintf(f,
		"],\"health\":{\"serving\":%s,\"why\":\"%s\",\"listeners\":%u,"
		"\"listeners_serving\":%u}}",
		h.serving ? "true" : "false", h.why, h.listeners, h.listeners_serving);
}

static void *stats_thread(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "rpcrdma-stats");
	for (;;) {
		int fd = accept(listen_fd, NULL, NULL);
		FILE *f;

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		f = fdopen(fd, "w");
		if (!f) {
			close(fd);
			continue;
		}
		write_json(f);
		fclose(f);
	}
}

int rrp_stats_start(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	pthread_t t;
	char dir[sizeof(sa.sun_path)];
	char *slash;

	if (!path[0] || strlen(path) >= sizeof(sa.sun_path))
		return -EINVAL;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		mkdir(dir, 0700); /* /run/rpcrdma: root only */
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0)
		return -errno;
	if (bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(listen_fd, 8)) {
		int err = -errno;

		close(listen_fd);
		listen_fd = -1;
		rrp_log("stats socket %s: %s", path, strerror(-err));
		return err;
	}
	chmod(path, 0600);
	return -pthread_create(&t, NULL, stats_thread, NULL);
}
