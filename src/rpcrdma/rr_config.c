// SPDX-License-Identifier: MIT
/*
 * rr_config.c - the engine's defaults and bounds (the values of the Linux
 * server's that they follow: docs/linux-client-wire.md), and its log sink.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"

static void (*log_sink)(const char *line);
static _Thread_local char last_error[256];

int rr_set_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err;
}

const char *rr_last_error(void)
{
	return last_error;
}

void rr_set_log_sink(void (*sink)(const char *line))
{
	log_sink = sink;
}

void rr_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_sink)
		log_sink(line);
	else
		fprintf(stderr, "rpcrdma: %s\n", line);
}

void rr_config_default(struct rr_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	/* The Linux server's values: docs/linux-client-wire.md */
	cfg->credits = 64;
	cfg->bc_credits = 2;
	cfg->recv_batch = 8;
	cfg->inline_size = 4096;
	cfg->max_ord = 16;
	cfg->max_conns = 1024;
	/* The Linux client opens one connection per server and mount options,
	 * nconnect up to 16 of them: 64 leaves room for several such clients
	 * behind one address (NAT, containers). */
	cfg->max_conns_per_peer = 64;
	/* The Linux client sends its first Call as soon as it is connected. */
	cfg->handshake_timeout = 30;
	/* None: the Linux client keeps an idle mount's connection open, and
	 * closing it costs a reconnect at the next I/O. */
	cfg->idle_timeout = 0;
	cfg->recv_mem_budget = rr_mem_budget_default();
	rr_hdr_limits_default(&cfg->limits);
}

int rr_config_check(const struct rr_config *c)
{
	if (c->credits < 1 || c->credits > RR_MAX_CREDITS)
		return -EINVAL;
	if (c->inline_size < 1024 || c->inline_size > 65536)
		return -EINVAL;
	if (c->max_ord < 1 || c->limits.max_chunk_bytes < c->inline_size)
		return -EINVAL;
	if (c->srq_depth && (c->srq_depth < RR_SRQ_MIN_DEPTH || c->srq_depth > RR_SRQ_MAX_DEPTH))
		return -EINVAL;
	if (c->handshake_timeout > RR_MAX_TIMEOUT || c->idle_timeout > RR_MAX_TIMEOUT)
		return -EINVAL;
	if (c->limits.max_read_chunks > RR_PCL_MAX_READ_CHUNKS ||
	    c->limits.max_write_chunks > RR_PCL_MAX_WRITE_CHUNKS ||
	    c->limits.max_segs > RR_PCL_MAX_SEGS)
		return -EINVAL;
	return 0;
}
