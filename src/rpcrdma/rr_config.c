// SPDX-License-Identifier: MIT
/*
 * rr_config.c - the engine's defaults and bounds (the values of the Linux
 * server's that they follow: docs/linux-client-wire.md), its log sink, and
 * the rate-limited logs a peer cannot flood.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <errno.h>
#include <sched.h>
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

static void vlog(const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof(line), fmt, ap);
	if (log_sink)
		log_sink(line);
	else
		fprintf(stderr, "rpcrdma: %s\n", line);
}

void rr_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void rr_ratelog_init(struct rr_ratelog *r, const char *what, const char *const *names)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	r->what = what;
	r->names = names;
}

void rr_ratelog_fini(struct rr_ratelog *r)
{
	pthread_mutex_destroy(&r->lock);
}

void rr_ratelog(struct rr_ratelog *r, unsigned int kind, const char *fmt, ...)
{
	uint64_t now = rr_now_s();
	uint32_t held;
	bool full;
	va_list ap;

	pthread_mutex_lock(&r->lock);
	held = atomic_load_explicit(&r->held, memory_order_relaxed);
	full = now >= r->quiet_until && !held;
	if (full) {
		r->quiet_until = now + RR_REFUSE_LOG_S;
	} else {
		if (!held)
			r->since = now;
		atomic_store_explicit(&r->held, held + 1, memory_order_relaxed);
		r->kind[kind]++;
	}
	pthread_mutex_unlock(&r->lock);
	if (!full)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void rr_ratelog_summary(struct rr_ratelog *r, bool flush)
{
	char kinds[160];
	uint64_t now, since;
	uint32_t held;
	size_t n = 0;

	/* Once a second on evt[0], nearly always with nothing held: no clock,
	 * no lock. One held meanwhile waits for the next summary, as it would
	 * had it come after this one. */
	if (!atomic_load_explicit(&r->held, memory_order_relaxed))
		return;
	now = rr_now_s();
	pthread_mutex_lock(&r->lock);
	held = atomic_load_explicit(&r->held, memory_order_relaxed);
	if (!held || (now < r->quiet_until && !flush)) {
		pthread_mutex_unlock(&r->lock);
		return;
	}
	if (now < r->since)
		now = r->since;
	since = r->since; /* rr_ratelog sets it again once the lock is free */
	kinds[0] = 0;
	for (int i = 0; i < RR_RATELOG_KINDS && r->names[i]; i++)
		if (r->kind[i] && n < sizeof(kinds))
			n += (size_t)snprintf(kinds + n, sizeof(kinds) - n, "%s%s %u",
					      n ? ", " : "", r->names[i], r->kind[i]);
	atomic_store_explicit(&r->held, 0, memory_order_relaxed);
	memset(r->kind, 0, sizeof(r->kind));
	r->quiet_until = now + RR_REFUSE_LOG_S;
	pthread_mutex_unlock(&r->lock);
	rr_log("%u more %s in the last %llu s (%s)", held, r->what,
	       (unsigned long long)(now > since ? now - since : 1), kinds);
}

uint32_t rr_event_threads_default(void)
{
	cpu_set_t set;
	int cores = 1;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		cores = CPU_COUNT(&set);
	/* The workers, the clients' side of a software device and the device
	 * itself need cores too: one event thread per two (bench/RESULTS.md,
	 * Event threads), and past four the listener's one thread and the
	 * shared counters bound it before the event threads do. */
	cores /= 2;
	return cores < 1 ? 1 : cores > 4 ? 4 : (uint32_t)cores;
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
	/* What the budget holds (rr_max_conns_for_budget): a head with the
	 * memory for 10,000 idle connections serves them. */
	cfg->max_conns = 0;
	/* The Linux client opens one connection per server and mount options,
	 * nconnect up to 16 of them: 64 leaves room for several such clients
	 * behind one address (NAT, containers). */
	cfg->max_conns_per_peer = 64;
	/* The Linux client sends its first Call as soon as it is connected. */
	cfg->handshake_timeout = 30;
	/* Longer than the Linux client's own idle disconnect (xprtrdma's
	 * RPCRDMA_IDLE_DISC_TO, 5 minutes) and four NFSv4 leases (90 s at
	 * most: a mounted v4.1 client sends SEQUENCE within each), so it never
	 * cuts a live client first; a peer that went quiet gives its slot
	 * back within 6 minutes instead of never. */
	cfg->idle_timeout = 360;
	/* A Send the peer leaves without a completion: a live peer acks or
	 * fails it within the RC retry timeout (seconds); longer is an RNR
	 * retry a peer that never posts receives can make last for ever. */
	cfg->send_timeout = 30;
	/* One IPv6 host holds a whole /64 (SLAAC, privacy addresses); an
	 * IPv4 address is what a host has, and a /24 is often a whole
	 * cluster's subnet. */
	cfg->peer_prefix_v4 = 32;
	cfg->peer_prefix_v6 = 64;
	cfg->recv_mem_budget = rr_mem_budget_default();
	cfg->sink_budget = rr_mem_budget_default();
	cfg->event_threads = rr_event_threads_default();
	rr_hdr_limits_default(&cfg->limits);
}

uint32_t rr_max_conns_for_budget(const struct rr_config *cfg)
{
	uint64_t budget = cfg->recv_mem_budget, per, n;

	if (!budget)
		return RR_MAX_CONNS_NO_BUDGET;
	budget -= rr_srq_pools_bytes(cfg, UINT32_MAX);
	per = rr_conn_pinned_at_accept(cfg, cfg->credits, !cfg->use_srq);
	n = per ? budget / per : RR_MAX_CONNS_AUTO;
	return n < 1 ? 1 : n > RR_MAX_CONNS_AUTO ? RR_MAX_CONNS_AUTO : (uint32_t)n;
}

int rr_config_check(const struct rr_config *c)
{
	if (c->credits < 1 || c->credits > RR_MAX_CREDITS)
		return -EINVAL;
	if (c->inline_size < RR_MIN_INLINE || c->inline_size > RR_MAX_INLINE)
		return -EINVAL;
	if (c->bc_credits > RR_MAX_BC_CREDITS)
		return -EINVAL;
	if (c->max_ord < 1 || c->limits.max_chunk_bytes < c->inline_size)
		return -EINVAL;
	if (c->srq_depth && (c->srq_depth < RR_SRQ_MIN_DEPTH || c->srq_depth > RR_SRQ_MAX_DEPTH))
		return -EINVAL;
	if (c->handshake_timeout > RR_MAX_TIMEOUT || c->idle_timeout > RR_MAX_TIMEOUT ||
	    c->send_timeout > RR_MAX_TIMEOUT)
		return -EINVAL;
	if (c->peer_prefix_v4 > 32 || c->peer_prefix_v6 > 128)
		return -EINVAL;
	if (c->event_threads < 1 || c->event_threads > RR_MAX_EVENT_THREADS)
		return -EINVAL;
	if (c->limits.max_read_chunks > RR_PCL_MAX_READ_CHUNKS ||
	    c->limits.max_write_chunks > RR_PCL_MAX_WRITE_CHUNKS ||
	    c->limits.max_segs > RR_PCL_MAX_SEGS)
		return -EINVAL;
	return 0;
}
