// SPDX-License-Identifier: MIT
/*
 * rr_admit.c - what a peer that need not be authenticated may hold of the
 * server: connections per peer address, registered memory for all
 * connections (the budget counts receive AND send buffers), how long a
 * connection may sit without its first message, idle, or with a Send the
 * peer never completes, and refusal and connection logs that a peer
 * retrying or reconnecting in a loop cannot flood.
 */
#include <errno.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rpcrdma/rr_internal.h"

uint64_t rr_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

/* Does RLIMIT_MEMLOCK bind this process? CAP_IPC_LOCK lifts it (mlock(2)). */
static bool memlock_binds(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return true;
	return !(data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective & CAP_TO_MASK(CAP_IPC_LOCK));
}

uint64_t rr_mem_budget_default(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	/* An eighth of RAM: registered pages cannot be swapped or reclaimed,
	 * and the page cache, ganesha's caches and the READ payload pool need
	 * the rest. At the defaults (1,179,648 B a connection) that is about
	 * 1,000 connections on 8 GiB. */
	uint64_t budget = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize / 8 : 0;
	struct rlimit rl;

	if (!budget)
		budget = 1ull << 30; /* sysconf failed: what 8 GiB would give */
	/* Registrations past RLIMIT_MEMLOCK fail; half of it for connections,
	 * the other half for the payload pool and the Read sinks. */
	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY && memlock_binds() &&
	    rl.rlim_cur / 2 < budget)
		budget = rl.rlim_cur / 2;
	return budget ? budget : 1;
}

uint32_t rr_conn_nsends_bc(const struct rr_config *cfg)
{
	/* A reverse-direction call's Send may complete after its answer: twice
	 * the backchannel grant we provision keeps callbacks from waiting. */
	return 2 * (cfg->bc_credits ? cfg->bc_credits : 1);
}

uint32_t rr_conn_nsends(const struct rr_config *cfg, uint32_t nrecv)
{
	return nrecv + RR_QUIET_SENDS + rr_conn_nsends_bc(cfg);
}

uint32_t rr_conn_sq_depth(uint32_t nsends, uint32_t ord, uint32_t write_sge)
{
	/* Reads are bounded by ord; replies queue when the SQ is short, and
	 * the largest Reply's chain always fits. */
	return 2 * nsends + ord + rr_rw_reply_max_wr(write_sge);
}

/* Would the queues of a connection granted @credits fit @lim? conn_setup
 * sizes them so: its receives (none of its own with the SRQ), its sends,
 * and one CQ for both. */
static bool queues_fit(const struct rr_config *cfg, uint32_t credits, const struct fab_limits *lim)
{
	uint32_t nrecv = 2 * credits + cfg->bc_credits + cfg->recv_batch;
	uint32_t sq = rr_conn_sq_depth(rr_conn_nsends(cfg, nrecv), cfg->max_ord,
				       rr_write_sge(lim));

	return sq <= lim->max_qp_wr && (cfg->use_srq || nrecv <= lim->max_qp_wr) &&
	       (uint64_t)nrecv + sq <= lim->max_cqe;
}

uint32_t rr_credits_cap(const struct rr_config *cfg, const struct fab_limits *lim)
{
	uint32_t lo = 0, hi = RR_MAX_CREDITS; /* fits at lo (0: trivially) */

	if (queues_fit(cfg, hi, lim))
		return hi;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (queues_fit(cfg, mid, lim))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

uint64_t rr_conn_pinned(const struct rr_config *cfg, uint32_t credits, bool own_recv)
{
	uint32_t nrecv = 2 * credits + cfg->bc_credits + cfg->recv_batch;
	uint64_t bytes = rr_pool_bytes(cfg->inline_size, rr_conn_nsends(cfg, nrecv));

	if (own_recv)
		bytes += rr_pool_bytes(cfg->inline_size, nrecv);
	return bytes;
}

uint64_t rr_conn_pinned_at_accept(const struct rr_config *cfg, uint32_t credits, bool own_recv)
{
	uint32_t nrecv = 2 * credits + cfg->bc_credits + cfg->recv_batch;
	uint64_t bytes = rr_pool_bytes(cfg->inline_size, rr_conn_nsends_bc(cfg)) +
			 rr_sendpool_claim(cfg);

	if (own_recv)
		bytes += rr_pool_bytes(cfg->inline_size, nrecv);
	return bytes;
}

/* IPv4 as v4-mapped IPv6, so a dual-stack listener counts a peer once. */
static bool ip_key(const struct sockaddr_storage *ss, uint8_t ip[16])
{
	memset(ip, 0, 16);
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;

		ip[10] = ip[11] = 0xff;
		memcpy(ip + 12, &s->sin_addr, 4);
		return true;
	}
	if (ss->ss_family == AF_INET6) {
		memcpy(ip, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
		return true;
	}
	return false;
}

bool rr_peer_key(const struct sockaddr_storage *ss, unsigned int prefix_v4,
		 unsigned int prefix_v6, uint8_t ip[16])
{
	unsigned int bits;

	if (!ip_key(ss, ip))
		return false;
	/* A v4-mapped address is an IPv4 peer: its prefix counts after the map. */
	bits = rr_ip_is_v4(ip) ? 96 + (prefix_v4 < 32 ? prefix_v4 : 32)
			       : (prefix_v6 < 128 ? prefix_v6 : 128);
	for (unsigned int i = bits / 8; i < 16; i++)
		ip[i] &= i == bits / 8 ? (uint8_t)(0xff00u >> (bits % 8)) : 0;
	return true;
}

bool rr_admit_peer_ip(const struct rr_config *cfg, struct fab_conn *fc, uint8_t ip[16])
{
	struct sockaddr_storage remote;

	memset(&remote, 0, sizeof(remote));
	return fab_conn_addrs(fc, NULL, &remote) == 0 &&
	       rr_peer_key(&remote, cfg->peer_prefix_v4, cfg->peer_prefix_v6, ip);
}

/*
 * Connections per peer (its address prefix), kept as they are listed and as
 * they close, so that a connection request costs one lookup, not a walk of
 * every connection (quadratic in a reconnect storm). Closing connections no
 * longer count: a client that reconnects at once must not wait for the old
 * one's last reference. A hash of chains under srv->lock; a peer's entry
 * goes with its last connection.
 */
struct rr_peer_count {
	struct rr_peer_count *next;
	uint8_t ip[16];
	uint32_t n;
};

static uint32_t peer_hash(const uint8_t ip[16])
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (int i = 0; i < 16; i++)
		h = (h ^ ip[i]) * 16777619u;
	return h & (RR_PEER_BUCKETS - 1);
}

static struct rr_peer_count **peer_find(struct rr_server *srv, const uint8_t ip[16])
{
	struct rr_peer_count **pp = &srv->peers[peer_hash(ip)];

	while (*pp && memcmp((*pp)->ip, ip, 16))
		pp = &(*pp)->next;
	return pp;
}

bool rr_admit_peer(struct rr_server *srv, const uint8_t ip[16])
{
	uint32_t cap = srv->cfg.max_conns_per_peer;
	struct rr_peer_count *p;

	if (!cap || !srv->peers)
		return true;
	p = *peer_find(srv, ip);
	return !p || p->n < cap;
}

void rr_admit_peer_add(struct rr_server *srv, struct rr_conn *c)
{
	struct rr_peer_count **pp, *p;

	if (!c->peer_known || atomic_load_explicit(&c->gone, memory_order_relaxed))
		return;
	if (!srv->peers)
		srv->peers = calloc(RR_PEER_BUCKETS, sizeof(*srv->peers));
	if (!srv->peers)
		return; /* out of memory: this one goes uncounted */
	pp = peer_find(srv, c->peer_ip);
	p = *pp;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return;
		memcpy(p->ip, c->peer_ip, 16);
		*pp = p;
	}
	p->n++;
	c->peer_counted = true;
}

void rr_admit_peer_drop(struct rr_server *srv, struct rr_conn *c)
{
	struct rr_peer_count **pp, *p;

	if (!c->peer_counted)
		return;
	c->peer_counted = false;
	pp = peer_find(srv, c->peer_ip);
	p = *pp;
	if (p && --p->n == 0) {
		*pp = p->next;
		free(p);
	}
}

static const char *const why_name[RR_RATELOG_KINDS] = {
    [RR_REFUSE_MAX_CONNS] = "connection cap",
    [RR_REFUSE_PEER] = "per-peer cap",
    [RR_REFUSE_MEM] = "memory budget",
    [RR_REFUSE_OTHER] = "other",
};

static const char *const event_name[RR_RATELOG_KINDS] = {
    [RR_EV_CONNECTED] = "connected",
    [RR_EV_CLOSING] = "closing",
    [RR_EV_FREED] = "freed",
};

static const char *const reply_event_name[RR_RATELOG_KINDS] = {
    [RR_EV_NOT_DELIVERED] = "ERR_CHUNK sent",
};

void rr_admit_init(struct rr_server *srv)
{
	rr_ratelog_init(&srv->refusals, "connection request(s) refused", why_name);
	rr_ratelog_init(&srv->conn_events, "connection event(s)", event_name);
	rr_ratelog_init(&srv->reply_events, "Reply(s) not delivered", reply_event_name);
}

void rr_admit_refuse(struct rr_server *srv, const char *peer, enum rr_refuse_why why,
		     const char *detail)
{
	RR_SRV_STAT_ADD(srv, conns_refused, 1);
	if (why == RR_REFUSE_PEER)
		RR_SRV_STAT_ADD(srv, conns_refused_peer, 1);
	else if (why == RR_REFUSE_MEM)
		RR_SRV_STAT_ADD(srv, conns_refused_mem, 1);
	rr_ratelog(&srv->refusals, why, "%s: refused: %s", peer, detail);
}

void rr_admit_fini(struct rr_server *srv)
{
	/* Events still held for a summary are not lost at shutdown. */
	rr_ratelog_summary(&srv->refusals, true);
	rr_ratelog_summary(&srv->conn_events, true);
	rr_ratelog_summary(&srv->reply_events, true);
	rr_ratelog_fini(&srv->refusals);
	rr_ratelog_fini(&srv->conn_events);
	rr_ratelog_fini(&srv->reply_events);
	for (unsigned int i = 0; srv->peers && i < RR_PEER_BUCKETS; i++)
		while (srv->peers[i]) {
			struct rr_peer_count *p = srv->peers[i];

			srv->peers[i] = p->next;
			free(p);
		}
	free(srv->peers);
	srv->peers = NULL;
}

/*
 * A Send the peer never completes: with no receive posted on its side and
 * an RNR retry count of 7 it is retried for ever, and the connection's
 * references with it. Sends complete in order, so no completion for
 * send_timeout while some are out is a peer that stopped receiving.
 */
static bool send_stuck(const struct rr_config *cfg, struct rr_conn *c, uint64_t now)
{
	if (!c->sends_out || c->sends_done != c->sends_done_seen) {
		c->sends_done_seen = c->sends_done;
		c->send_wait_since = now;
		return false;
	}
	return cfg->send_timeout && now - c->send_wait_since >= cfg->send_timeout;
}

static void note_activity(struct rr_conn *c, uint64_t now)
{
	if (c->heard != c->act_seen) {
		c->act_seen = c->heard;
		c->had_msg = true;
		c->quiet_since = now;
	} else if (atomic_load(&c->refs) > 1) {
		/* Calls or Sends in flight: the upper layer is working, the
		 * peer waits for it (a Send the peer holds up: send_stuck). */
		c->quiet_since = now;
	}
}

static bool quiet_too_long(const struct rr_config *cfg, const struct rr_conn *c, uint64_t now)
{
	if (!c->had_msg)
		return cfg->handshake_timeout && now - c->accepted_at >= cfg->handshake_timeout;
	return cfg->idle_timeout && now - c->quiet_since >= cfg->idle_timeout;
}

static void conn_timeouts(struct rr_server *srv, struct rr_conn *c, uint64_t now)
{
	const struct rr_config *cfg = &srv->cfg;
	char why[96];

	note_activity(c, now);
	if (quiet_too_long(cfg, c, now)) {
		/* A message that came while this thread was busy elsewhere (a
		 * storm of connection requests) waits in the CQ, not yet
		 * counted: it is heard before the peer is judged silent. */
		rr_conn_poll_cq(c);
		if (c->state == RR_CONN_CLOSING)
			return;
		note_activity(c, now);
	}
	if (send_stuck(cfg, c, now)) {
		snprintf(why, sizeof(why), "a Send without completion for %u s (no receive posted)",
			 cfg->send_timeout);
	} else if (quiet_too_long(cfg, c, now)) {
		if (c->had_msg)
			snprintf(why, sizeof(why), "idle for %u s", cfg->idle_timeout);
		else
			snprintf(why, sizeof(why), "no first message within %u s",
				 cfg->handshake_timeout);
	} else {
		return;
	}
	RR_STAT_ADD(c, conns_timed_out, 1);
	rr_conn_close(c, why);
}

void rr_admit_tick(struct rr_evt *e)
{
	struct rr_server *srv = e->srv;
	const struct rr_config *cfg = &srv->cfg;
	uint64_t now = rr_now_s();
	bool timeouts = cfg->handshake_timeout || cfg->idle_timeout || cfg->send_timeout;
	unsigned int n;

	for (struct rr_conn *c = e->conns; c; c = c->evt_next) {
		if (c->state == RR_CONN_CLOSING)
			continue;
		if (timeouts)
			conn_timeouts(srv, c, now);
		/* iWARP: a send pool of its own gives back what a burst grew */
		if (c->own_sp)
			rr_sendpool_tick(c->own_sp);
	}
	/* This thread's sink and send pools give back what stays free. */
	n = rr_evt_npools(e);
	for (unsigned int i = 0; i < n; i++) {
		struct rr_bigpool *bp = rr_evt_pool(e, i);

		if (!bp)
			continue; /* not expected: only this thread drops them */
		rr_big_tick(bp);
		if (bp->sends)
			rr_sendpool_tick(bp->sends);
	}
	/* Reads or Replies short of a buffer: tried again at least each
	 * second, whatever gave back. A slab unmapped above moved its pool's
	 * puts; nothing else may be coming back to wake them. */
	if (e->reads_starved)
		rr_evt_kick(e);
	rr_pcl_tick(e);
	if (e->idx)
		return;
	rr_ratelog_summary(&srv->refusals, false);
	rr_ratelog_summary(&srv->conn_events, false);
	rr_ratelog_summary(&srv->reply_events, false);
}
