/* SPDX-License-Identifier: MIT */
/*
 * bench_engine.c - the transport engine alone, answering every RPC Call with
 * an accepted, successful, empty Reply (what procedure 0 returns), for the
 * credit and memory benches of bench/run.sh.
 *
 *   bench_engine ADDR [--credits N] [--budget BYTES] [--max-conns N] [--srq 0|1]
 *                [--srq-depth N] [--max-per-peer N] [--idle-timeout S]
 *                [--fill-write 0|1]
 *
 * Engine defaults otherwise (rr_config_default): --budget 0 is no budget,
 * --max-per-peer 0 no per-peer cap (every unix-socket peer is 127.0.0.1).
 * --fill-write 1: a Call that offers Write chunks is answered with an opaque
 * as long as the first (up to 1 MiB), sent through it, as a READ's data:
 * from unregistered memory, so the engine copies it into a bounce buffer.
 *
 * Prints "READY" when listening. On SIGUSR1 it writes one JSON line to
 * stdout: the server's counters, the smallest and largest per-connection
 * credit grant, its own VmRSS in KiB, its thread count, and its malloc
 * heap's bytes in use and free (mallinfo2, every arena; KiB). Exits on SIGTERM/SIGINT.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fabric/fab.h"
#include "rpcrdma/rr_xprt.h"

static int sig_pipe[2] = {-1, -1};

#define FILL_MAX (1u << 20)
static uint8_t *fill_data; /* --fill-write: FILL_MAX bytes, not registered */

static void on_sig(int sig)
{
	char c = sig == SIGUSR1 ? 's' : 'q';
	ssize_t n = write(sig_pipe[1], &c, 1);

	(void)n;
}

static void on_call(void *ctx, struct rr_call *call)
{
	uint8_t *r = malloc(28);
	struct rr_reply_plan plan = {.nspans = 0, .deliverable = true};
	uint32_t w[7] = {0, htobe32(1), 0, 0, 0, 0, 0};
	struct iovec iov[2];
	int iovcnt = 1;

	(void)ctx;
	if (!r) {
		rr_call_release(call);
		return;
	}
	w[0] = htobe32(call->xid);
	iov[0].iov_base = r;
	iov[0].iov_len = 24;
	if (fill_data && call->pcl->n_write) {
		uint32_t len = call->pcl->write[0].length < FILL_MAX
				   ? (uint32_t)call->pcl->write[0].length & ~3u
				   : FILL_MAX;

		w[6] = htobe32(len);
		iov[0].iov_len = 28;
		iov[1].iov_base = fill_data;
		iov[1].iov_len = len;
		iovcnt = 2;
		plan.nspans = 1;
		plan.spans[0] = (struct rr_payload_span){.chunk = 0, .offset = 28, .length = len};
	}
	memcpy(r, w, sizeof(w));
	if (rr_reply(call, iov, iovcnt, &plan, free, r))
		fprintf(stderr, "bench_engine: rr_reply failed\n");
}

static void on_not_delivered(void *ctx, struct rr_conn *conn, uint32_t xid, void *reply_arg)
{
	(void)ctx;
	(void)conn;
	(void)xid;
	(void)reply_arg;
}

struct grants {
	uint32_t min, max;
	uint64_t n;
};

static void conn_grant(void *arg, struct rr_conn *conn, const struct rr_stats *st)
{
	struct grants *g = arg;

	(void)conn;
	if (st->credit_grant < g->min)
		g->min = st->credit_grant;
	if (st->credit_grant > g->max)
		g->max = st->credit_grant;
	g->n++;
}

/* A "Name: value" field of /proc/self/status (VmRSS in KiB, Threads). */
static long proc_status(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t n = strlen(field);
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

static void print_stats(struct rr_server *srv)
{
	struct rr_stats st;
	struct grants g = {UINT32_MAX, 0, 0};
	struct mallinfo2 mi = mallinfo2();

	rr_server_stats(srv, &st);
	rr_server_foreach_conn(srv, conn_grant, &g);
	printf("{");
#define P(name) printf("\"" #name "\":%" PRIu64 ",", (uint64_t)st.name);
	RR_STATS_FIELDS(P)
#undef P
	printf("\"conn_grant_min\":%u,\"conn_grant_max\":%u,\"conns\":%" PRIu64
	       ",\"rss_kib\":%ld,\"threads\":%ld,\"heap_used_kib\":%zu,\"heap_free_kib\":%zu}\n",
	       g.n ? g.min : 0, g.max, g.n, proc_status("VmRSS"), proc_status("Threads"),
	       (mi.uordblks + mi.hblkhd) / 1024, mi.fordblks / 1024);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct rr_upper_ops ops = {.call = on_call, .reply_not_delivered = on_not_delivered};
	struct fab_fabric *fab = NULL;
	struct rr_server *srv = NULL;
	struct rr_config cfg;
	struct sigaction sa;
	int rc;

	if (argc < 2 || argc % 2)
		goto usage;
	rr_config_default(&cfg);
	for (int i = 2; i < argc; i += 2) {
		unsigned long long v = strtoull(argv[i + 1], NULL, 0);

		if (!strcmp(argv[i], "--credits"))
			cfg.credits = (uint32_t)v;
		else if (!strcmp(argv[i], "--budget"))
			cfg.recv_mem_budget = v;
		else if (!strcmp(argv[i], "--max-conns"))
			cfg.max_conns = (uint32_t)v;
		else if (!strcmp(argv[i], "--max-per-peer"))
			cfg.max_conns_per_peer = (uint32_t)v;
		else if (!strcmp(argv[i], "--srq"))
			cfg.use_srq = v != 0;
		else if (!strcmp(argv[i], "--srq-depth"))
			cfg.srq_depth = (uint32_t)v;
		else if (!strcmp(argv[i], "--idle-timeout"))
			cfg.idle_timeout = (uint32_t)v;
		else if (!strcmp(argv[i], "--fill-write"))
			fill_data = v ? calloc(1, FILL_MAX) : NULL;
		else
			goto usage;
	}
	if (pipe(sig_pipe))
		return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (fab_open(NULL, &fab)) {
		fprintf(stderr, "bench_engine: fab_open: %s\n", fab_last_error());
		return 1;
	}
	rc = rr_server_create(fab, argv[1], &cfg, &ops, NULL, &srv);
	if (!rc)
		rc = rr_server_start(srv);
	if (rc) {
		fprintf(stderr, "bench_engine: cannot serve %s: %d (%s)\n", argv[1], rc,
			fab_last_error());
		if (srv)
			rr_server_destroy(srv);
		fab_close(fab);
		return 1;
	}
	printf("READY\n");
	fflush(stdout);
	for (;;) {
		char c;
		ssize_t n = read(sig_pipe[0], &c, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || c == 'q')
			break;
		print_stats(srv);
	}
	rr_server_destroy(srv);
	fab_close(fab);
	return 0;
usage:
	fprintf(stderr, "usage: bench_engine ADDR [--credits N] [--budget BYTES] [--max-conns N] "
			"[--srq 0|1] [--srq-depth N] [--max-per-peer N] [--idle-timeout S] "
			"[--fill-write 0|1]\n");
	return 2;
}
