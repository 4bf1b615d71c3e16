/* SPDX-License-Identifier: MIT */
/*
 * rr_test_server.c - the transport engine serving the test RPC program
 * (tests/transport/rr_test_prog.h) over ONC RPC (RFC 5531), for the
 * integration tests, which run it as a separate process.
 *
 *   rr_test_server ADDR [--credits N] [--inline N] [--max-conns N] [--recv-mem BYTES]
 *                       [--srq 0|1] [--srq-depth N] [--max-chunk BYTES]
 *                       [--max-per-peer N] [--handshake-timeout S] [--idle-timeout S]
 *                       [--send-timeout S] [--peer-prefix-v4 BITS] [--peer-prefix-v6 BITS]
 *                       [--sink-mem BYTES] [--sink-budget BYTES] [--event-threads N]
 *
 * Event threads: 1 unless --event-threads or RPCRDMA_TEST_EVENT_THREADS
 * says otherwise.
 * Opens the fabric named by RPCRDMA_FABRIC (default soft; RPCRDMA_SOFT_FAULT
 * applies), listens on ADDR, prints "READY" on stdout, then reads commands
 * on stdin: "stats" prints the server's rr_server_stats as one JSON line;
 * "device-remove" / "device-restore" simulate the soft fabric's device going
 * away and coming back (fab_soft_device_remove / _restore).
 * On stdin EOF or SIGTERM it prints the stats once more, tears everything
 * down and exits 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fabric/fab.h"
#include "fabric/fab_soft.h"
#include "rpcrdma/rr_xprt.h"
/* Only for the sink hook and STALL below: engine-internal fields the tests
 * read (a Read sink, the event thread's index). */
#include "rpcrdma/rr_internal.h"
#include "transport/rr_test_prog.h"

/* RFC 5531 section 9 */
enum {
	MSG_CALL = 0,
	MSG_REPLY = 1,
	MSG_ACCEPTED = 0,
	MSG_DENIED = 1,
	SUCCESS = 0,
	PROG_UNAVAIL = 1,
	PROG_MISMATCH = 2,
	PROC_UNAVAIL = 3,
	GARBAGE_ARGS = 4,
	RPC_MISMATCH = 0,
	MAX_AUTH_BYTES = 400,
};

static int sig_pipe[2] = {-1, -1};

/* What the upper layer saw; printed with the engine's stats. */
static atomic_ulong log_refused_lines, log_lines;
static atomic_ulong ul_calls, ul_not_delivered, ul_not_delivered_own, ul_conn_up, ul_conn_down, ul_held_released;
/* Reverse-direction answers handed up (bc_reply, bc_error), and the RPC xid
 * of the last Reply. */
static atomic_ulong ul_bc_replies, ul_bc_errors, ul_bc_last_xid;
static atomic_ulong ul_closes, ul_closes_late;

/* --- reading the Call: a byte stream over the call's iovecs --------------- */

struct stream {
	const struct rr_call *call;
	size_t off;
	bool bad;
};

/* Copy @n bytes at @off of the call into @dst; false past the end. */
static bool call_copy(const struct rr_call *c, size_t off, void *dst, size_t n)
{
	uint8_t *d = dst;

	if (off > c->len || n > c->len - off)
		return false;
	for (int i = 0; i < c->iovcnt && n; i++) {
		size_t l = c->iov[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		size_t k = l - off < n ? l - off : n;

		memcpy(d, (const uint8_t *)c->iov[i].iov_base + off, k);
		d += k;
		n -= k;
		off = 0;
	}
	return n == 0;
}

/* iovecs naming bytes [off, off + n) of the call without copying them. */
static int call_slice(const struct rr_call *c, size_t off, size_t n, struct iovec *out, int max)
{
	int k = 0;

	for (int i = 0; i < c->iovcnt && n; i++) {
		size_t l = c->iov[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		if (k == max)
			return -1;
		size_t take = l - off < n ? l - off : n;

		out[k].iov_base = (uint8_t *)c->iov[i].iov_base + off;
		out[k].iov_len = take;
		k++;
		n -= take;
		off = 0;
	}
	return n ? -1 : k;
}

static uint32_t get32(struct stream *s)
{
	uint8_t b[4];

	if (s->bad || !call_copy(s->call, s->off, b, 4)) {
		s->bad = true;
		return 0;
	}
	s->off += 4;
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void skip_opaque(struct stream *s, uint32_t len)
{
	size_t padded = ((size_t)len + 3) & ~(size_t)3;

	if (s->bad || s->off + padded > s->call->len) {
		s->bad = true;
		return;
	}
	s->off += padded;
}

/* --- building the Reply ---------------------------------------------------- */

#define REPLY_IOV_MAX (RR_CALL_MAX_IOV + 2)

/* One reply's memory, freed by the engine's done callback. */
struct reply_buf {
	uint32_t xid;		/* of the Call it answers */
	uint8_t hdr[64];	/* RPC reply header and small results */
	size_t hdr_len;
	uint8_t pad[4];		/* zero XDR pad after payload */
	uint8_t *data;		/* SOURCE payload (malloc), or NULL */
	struct iovec iov[REPLY_IOV_MAX];
	int iovcnt;
};

static void reply_done(void *arg)
{
	struct reply_buf *rb = arg;

	free(rb->data);
	free(rb);
}

static void put32(struct reply_buf *rb, uint32_t v)
{
	uint8_t *p = rb->hdr + rb->hdr_len;

	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	rb->hdr_len += 4;
}

/* xid, REPLY, MSG_ACCEPTED, AUTH_NONE verifier, @stat */
static struct reply_buf *reply_start(uint32_t xid, uint32_t stat)
{
	struct reply_buf *rb = calloc(1, sizeof(*rb));

	if (!rb)
		return NULL;
	rb->xid = xid;
	put32(rb, xid);
	put32(rb, MSG_REPLY);
	put32(rb, MSG_ACCEPTED);
	put32(rb, 0);
	put32(rb, 0);
	put32(rb, stat);
	return rb;
}

static void send_reply(struct rr_call *call, struct reply_buf *rb, struct rr_reply_plan *plan)
{
	struct rr_reply_plan none = {.nspans = 0, .deliverable = true};

	if (!rb) {
		rr_call_release(call);
		return;
	}
	if (rb->iovcnt == 0) {
		rb->iov[0].iov_base = rb->hdr;
		rb->iov[0].iov_len = rb->hdr_len;
		rb->iovcnt = 1;
	}
	int rc = rr_reply(call, rb->iov, rb->iovcnt, plan ? plan : &none, reply_done, rb);

	/* -ENOTCONN: the connection went down first; the engine dropped it */
	if (rc && rc != -ENOTCONN)
		fprintf(stderr, "rr_test_server: rr_reply: %d\n", rc);
}

static void reply_stat(struct rr_call *call, uint32_t xid, uint32_t stat)
{
	send_reply(call, reply_start(xid, stat), NULL);
}

/*
 * Reply whose results are one opaque<> of @len bytes given as @data iovecs.
 * With a Write chunk the payload is span 0 for chunk 0 (deliverable only if
 * the chunk can hold it); otherwise it is plain reply bytes and the engine
 * chooses inline or Reply chunk.
 */
static void reply_opaque(struct rr_call *call, struct reply_buf *rb,
			 const struct iovec *data, int ndata, uint32_t len)
{
	struct rr_reply_plan plan = {.nspans = 0, .deliverable = true};
	uint32_t padlen = (4 - (len & 3)) & 3;

	put32(rb, len);
	rb->iov[0].iov_base = rb->hdr;
	rb->iov[0].iov_len = rb->hdr_len;
	rb->iovcnt = 1;
	for (int i = 0; i < ndata; i++)
		rb->iov[rb->iovcnt++] = data[i];
	if (padlen) {
		rb->iov[rb->iovcnt].iov_base = rb->pad;
		rb->iov[rb->iovcnt].iov_len = padlen;
		rb->iovcnt++;
	}
	if (call->pcl->n_write > 0) {
		plan.nspans = 1;
		plan.spans[0].chunk = 0;
		plan.spans[0].offset = rb->hdr_len;
		plan.spans[0].length = len;
		if (len > call->pcl->write[0].length)
			plan.deliverable = false;
	}
	send_reply(call, rb, &plan);
}

/* --- per-connection state: HOLD calls ---------------------------------------- */

/*
 * The test server keeps its own table of connections rather than using
 * rr_conn_set_upper(), so that it depends on as little of the API as it can.
 */
struct conn_state {
	struct conn_state *next;
	struct rr_conn *conn;
	struct rr_call **held;
	size_t nheld, cap;
};

static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static struct conn_state *conns;

static struct conn_state *conn_find_locked(struct rr_conn *conn)
{
	struct conn_state *cs;

	for (cs = conns; cs; cs = cs->next)
		if (cs->conn == conn)
			return cs;
	return NULL;
}

static void hold_call(struct rr_call *call)
{
	struct conn_state *cs;

	pthread_mutex_lock(&conns_lock);
	cs = conn_find_locked(call->conn);
	if (cs && cs->nheld == cs->cap) {
		size_t ncap = cs->cap ? cs->cap * 2 : 64;
		struct rr_call **n = realloc(cs->held, ncap * sizeof(*n));

		if (n) {
			cs->held = n;
			cs->cap = ncap;
		}
	}
	if (cs && cs->nheld < cs->cap) {
		cs->held[cs->nheld++] = call;
		call = NULL;
	}
	pthread_mutex_unlock(&conns_lock);
	if (call)
		rr_call_release(call);
}

/*
 * CLOSE: a thread of the upper layer's closes @conn. It may use the
 * connection only while it is listed: on_conn_down unlists it under the
 * same lock before the engine may free it (rr_xprt.h, rr_conn_close_async).
 */
static void *close_thread(void *arg)
{
	struct rr_conn *conn = arg;
	bool listed;

	pthread_mutex_lock(&conns_lock);
	listed = conn_find_locked(conn) != NULL;
	if (listed)
		rr_conn_close_async(conn);
	pthread_mutex_unlock(&conns_lock);
	atomic_fetch_add(listed ? &ul_closes : &ul_closes_late, 1);
	return NULL;
}

static void close_from_threads(struct rr_call *call, uint32_t n)
{
	struct rr_conn *conn = call->conn;

	rr_call_release(call); /* never answered */
	for (uint32_t i = 0; i < n; i++) {
		pthread_attr_t at;
		pthread_t t;

		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &at, close_thread, conn))
			close_thread(conn);
		pthread_attr_destroy(&at);
	}
}

static void on_conn_up(void *ctx, struct rr_conn *conn)
{
	struct conn_state *cs = calloc(1, sizeof(*cs));

	(void)ctx;
	atomic_fetch_add(&ul_conn_up, 1);
	if (!cs)
		return;
	cs->conn = conn;
	pthread_mutex_lock(&conns_lock);
	cs->next = conns;
	conns = cs;
	pthread_mutex_unlock(&conns_lock);
}

static void on_conn_down(void *ctx, struct rr_conn *conn)
{
	struct conn_state **pp, *cs = NULL;

	(void)ctx;
	atomic_fetch_add(&ul_conn_down, 1);
	pthread_mutex_lock(&conns_lock);
	for (pp = &conns; *pp; pp = &(*pp)->next) {
		if ((*pp)->conn == conn) {
			cs = *pp;
			*pp = cs->next;
			break;
		}
	}
	pthread_mutex_unlock(&conns_lock);
	if (!cs)
		return;
	for (size_t i = 0; i < cs->nheld; i++)
		rr_call_release(cs->held[i]);
	atomic_fetch_add(&ul_held_released, cs->nheld);
	free(cs->held);
	free(cs);
}

static void on_not_delivered(void *ctx, struct rr_conn *conn, uint32_t xid, void *reply_arg)
{
	const struct reply_buf *rb = reply_arg;

	atomic_fetch_add(&ul_not_delivered, 1);
	/* the Reply's own done_arg, its done not yet run */
	if (rb && rb->xid == xid)
		atomic_fetch_add(&ul_not_delivered_own, 1);
	(void)ctx;
	(void)conn;
}

/* --- the reverse direction (RFC 8167) ---------------------------------------- */

static void on_bc_reply(void *ctx, struct rr_conn *conn, const void *msg, size_t len,
			uint32_t credits)
{
	const uint8_t *m = msg;

	(void)ctx;
	(void)conn;
	(void)credits;
	if (len >= 4)
		atomic_store(&ul_bc_last_xid,
			     (unsigned long)m[0] << 24 | m[1] << 16 | m[2] << 8 | m[3]);
	atomic_fetch_add(&ul_bc_replies, 1);
}

static void on_bc_error(void *ctx, struct rr_conn *conn, uint32_t xid, uint32_t err)
{
	(void)ctx;
	(void)conn;
	(void)xid;
	(void)err;
	atomic_fetch_add(&ul_bc_errors, 1);
}

/* RRT_BC_PROG's NULL procedure, with AUTH_NONE (RFC 5531 section 9). */
static int bc_call(struct rr_conn *conn, uint32_t xid)
{
	uint32_t w[] = {htonl(xid), htonl(MSG_CALL), htonl(2), htonl(RRT_BC_PROG), htonl(1), 0,
			0, 0, 0, 0};
	struct iovec iov = {w, sizeof(w)};

	return rr_conn_bc_send(conn, xid, &iov, 1);
}

/* --- DELAY: replies sent later from worker threads ------------------------ */

/* Several, so that Replies on one connection are built and posted by
 * different threads at once (rr_reply's send_lock). */
#define DELAY_WORKERS 4

struct delayed {
	struct delayed *next;
	struct rr_call *call;
	struct reply_buf *rb;
	struct iovec data[RR_CALL_MAX_IOV];
	int n;
	uint32_t len;
	struct timespec due;
};

static pthread_mutex_t delay_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t delay_cond = PTHREAD_COND_INITIALIZER;
static struct delayed *delay_list;
static bool delay_stop;
static pthread_t delay_threads[DELAY_WORKERS];
static atomic_ulong ul_delayed_replies;

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static int delayed_add(struct rr_call *call, struct reply_buf *rb, const struct iovec *data, int n,
		       uint32_t len, uint32_t ms)
{
	struct delayed *d = calloc(1, sizeof(*d));

	if (!d)
		return -1;
	d->call = call;
	d->rb = rb;
	memcpy(d->data, data, (size_t)n * sizeof(*data));
	d->n = n;
	d->len = len;
	clock_gettime(CLOCK_REALTIME, &d->due);
	d->due.tv_sec += ms / 1000;
	d->due.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (d->due.tv_nsec >= 1000000000L) {
		d->due.tv_sec++;
		d->due.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&delay_lock);
	d->next = delay_list;
	delay_list = d;
	pthread_cond_signal(&delay_cond);
	pthread_mutex_unlock(&delay_lock);
	return 0;
}

/* Answers each DELAY call when due - also after its connection went down,
 * which the engine must absorb (rr_xprt.h: it drops the reply). On stop,
 * everything left is answered at once. */
static void *delay_worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&delay_lock);
	for (;;) {
		struct delayed **pp, *d = NULL, *first = NULL;
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		for (pp = &delay_list; *pp; pp = &(*pp)->next) {
			if (delay_stop || !ts_before(&now, &(*pp)->due)) {
				d = *pp;
				*pp = d->next;
				break;
			}
			if (!first || ts_before(&(*pp)->due, &first->due))
				first = *pp;
		}
		if (d) {
			pthread_mutex_unlock(&delay_lock);
			/* Count first: the client may read the stats as soon as
			 * the reply reaches it. */
			atomic_fetch_add(&ul_delayed_replies, 1);
			reply_opaque(d->call, d->rb, d->data, d->n, d->len);
			free(d);
			pthread_mutex_lock(&delay_lock);
			continue;
		}
		if (delay_stop)
			break;
		if (first)
			pthread_cond_timedwait(&delay_cond, &delay_lock, &first->due);
		else
			pthread_cond_wait(&delay_cond, &delay_lock);
	}
	pthread_mutex_unlock(&delay_lock);
	return NULL;
}

/* --- the program ------------------------------------------------------------ */

/*
 * The first Read sink of the latest call that had one: its address and the
 * key of its registration, printed with the stats. A server-side hook: the
 * engine never advertises a sink, so this is how a test plays a peer that
 * guessed the key (on the soft fabric an lkey is also the rkey).
 */
static _Atomic uint64_t last_sink_addr, last_sink_key;

static void note_sink(const struct rr_call *call)
{
	const struct rr_call_ctx *ctx = (const struct rr_call_ctx *)call; /* call comes first */

	if (call->nchunk_data < 1 || ctx->nsinks < 1)
		return;
	atomic_store(&last_sink_key, ctx->sink_lkey[0]);
	atomic_store(&last_sink_addr, (uint64_t)(uintptr_t)ctx->sink[0]);
}

static void on_call(void *ctx, struct rr_call *call)
{
	struct stream s = {.call = call};
	uint32_t xid, mtype, rpcvers, prog, vers, proc, flavor, alen;

	(void)ctx;
	note_sink(call);
	atomic_fetch_add(&ul_calls, 1);
	xid = get32(&s);
	mtype = get32(&s);
	if (s.bad || mtype != MSG_CALL) {
		rr_call_release(call);	/* not a Call: drop (RFC 5531 gives no answer) */
		return;
	}
	rpcvers = get32(&s);
	prog = get32(&s);
	vers = get32(&s);
	proc = get32(&s);
	for (int i = 0; i < 2; i++) {	/* credential, verifier */
		flavor = get32(&s);
		alen = get32(&s);
		(void)flavor;
		if (alen > MAX_AUTH_BYTES)
			s.bad = true;
		skip_opaque(&s, alen);
	}
	if (s.bad) {
		reply_stat(call, xid, GARBAGE_ARGS);
		return;
	}
	if (rpcvers != 2) {
		struct reply_buf *rb = calloc(1, sizeof(*rb));

		if (rb) {
			rb->xid = xid;
			put32(rb, xid);
			put32(rb, MSG_REPLY);
			put32(rb, MSG_DENIED);
			put32(rb, RPC_MISMATCH);
			put32(rb, 2);
			put32(rb, 2);
		}
		send_reply(call, rb, NULL);
		return;
	}
	if (prog != RRT_PROG) {
		reply_stat(call, xid, PROG_UNAVAIL);
		return;
	}
	if (vers != RRT_VERS) {
		struct reply_buf *rb = reply_start(xid, PROG_MISMATCH);

		if (rb) {
			put32(rb, RRT_VERS);
			put32(rb, RRT_VERS);
		}
		send_reply(call, rb, NULL);
		return;
	}

	switch (proc) {
	case RRT_PROC_NULL:
		if (s.off != call->len) {
			reply_stat(call, xid, GARBAGE_ARGS);
			return;
		}
		reply_stat(call, xid, SUCCESS);
		return;
	case RRT_PROC_ECHO:
	case RRT_PROC_SINK:
	case RRT_PROC_DELAY: {
		uint32_t delay_ms = proc == RRT_PROC_DELAY ? get32(&s) : 0;
		uint32_t len = get32(&s);
		size_t at = s.off;
		struct iovec data[RR_CALL_MAX_IOV];
		int n;

		skip_opaque(&s, len);
		if (s.bad || len > RRT_MAX_DATA || s.off != call->len) {
			reply_stat(call, xid, GARBAGE_ARGS);
			return;
		}
		n = call_slice(call, at, len, data, RR_CALL_MAX_IOV);
		if (n < 0) {
			reply_stat(call, xid, GARBAGE_ARGS);
			return;
		}
		struct reply_buf *rb = reply_start(xid, SUCCESS);

		if (!rb) {
			rr_call_release(call);
			return;
		}
		if (proc == RRT_PROC_SINK) {
			uint32_t h = RRT_FNV_INIT;

			for (int i = 0; i < n; i++)
				h = rrt_fnv1a(h, data[i].iov_base, data[i].iov_len);
			put32(rb, len);
			put32(rb, h);
			send_reply(call, rb, NULL);
			return;
		}
		if (proc == RRT_PROC_DELAY) {
			if (delay_ms > 10000 || delayed_add(call, rb, data, n, len, delay_ms)) {
				free(rb);
				reply_stat(call, xid, GARBAGE_ARGS);
			}
			return;
		}
		/* zero-copy: the result points into the call's own buffers */
		reply_opaque(call, rb, data, n, len);
		return;
	}
	case RRT_PROC_SOURCE: {
		uint32_t len = get32(&s);
		uint32_t seed = get32(&s);

		if (s.bad || len > RRT_MAX_DATA || s.off != call->len) {
			reply_stat(call, xid, GARBAGE_ARGS);
			return;
		}
		struct reply_buf *rb = reply_start(xid, SUCCESS);

		if (!rb) {
			rr_call_release(call);
			return;
		}
		rb->data = malloc(len ? len : 1);
		if (!rb->data) {
			free(rb);
			rr_call_release(call);
			return;
		}
		for (uint32_t i = 0; i < len; i++)
			rb->data[i] = rrt_pattern(seed, i);
		struct iovec d = {.iov_base = rb->data, .iov_len = len};

		reply_opaque(call, rb, &d, len ? 1 : 0, len);
		return;
	}
	case RRT_PROC_HOLD:
		hold_call(call);
		return;
	case RRT_PROC_CLOSE: {
		uint32_t n = get32(&s);

		if (s.bad || n < 1 || n > 8 || s.off != call->len) {
			reply_stat(call, xid, GARBAGE_ARGS);
			return;
		}
		close_from_threads(call, n);
		return;
	}
	case RRT_PROC_STALL: {
		/* Holds up the connection's own event thread: the thread delivers
		 * calls (on_call runs on it), so this is that thread busy. */
		uint32_t ms = get32(&s);
		struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
		const struct rr_evt *e = rr_this_event_thread;

		if (s.bad || ms > 10000 || s.off != call->len) {
			reply_stat(call, xid, GARBAGE_ARGS);
			return;
		}
		nanosleep(&ts, NULL);
		struct reply_buf *rb = reply_start(xid, SUCCESS);

		if (!rb) {
			rr_call_release(call);
			return;
		}
		put32(rb, e ? e->idx : UINT32_MAX);
		send_reply(call, rb, NULL);
		return;
	}
	case RRT_PROC_BC_CALL:
	case RRT_PROC_BC_ABANDON: {
		uint32_t bxid = get32(&s);
		struct reply_buf *rb;
		int ret;

		if (s.bad || s.off != call->len) {
			reply_stat(call, xid, GARBAGE_ARGS);
			return;
		}
		ret = proc == RRT_PROC_BC_CALL ? bc_call(call->conn, bxid)
					       : rr_conn_bc_abandon(call->conn, bxid);
		rb = reply_start(xid, SUCCESS);
		if (!rb) {
			rr_call_release(call);
			return;
		}
		put32(rb, (uint32_t)ret);
		send_reply(call, rb, NULL);
		return;
	}
	case RRT_PROC_CHUNKS: {
		struct reply_buf *rb = reply_start(xid, SUCCESS);

		if (!rb) {
			rr_call_release(call);
			return;
		}
		put32(rb, (uint32_t)call->nchunk_data);
		for (int i = 0; i < call->nchunk_data; i++) {
			const struct iovec *cd = &call->chunk_data[i];
			uint32_t element = 0, at = 0;
			size_t off = 0;

			for (int j = 0; j < call->iovcnt; j++) {
				if (call->iov[j].iov_base == cd->iov_base &&
				    call->iov[j].iov_len == cd->iov_len) {
					element = 1;
					at = (uint32_t)off;
					break;
				}
				off += call->iov[j].iov_len;
			}
			put32(rb, (uint32_t)cd->iov_len);
			put32(rb, rrt_fnv1a(RRT_FNV_INIT, cd->iov_base, cd->iov_len));
			put32(rb, element);
			put32(rb, at);
		}
		send_reply(call, rb, NULL);
		return;
	}
	default:
		reply_stat(call, xid, PROC_UNAVAIL);
		return;
	}
}

/* --- main --------------------------------------------------------------------- */

/*
 * The upper layer's counters, read in one place. print_stats() reads them
 * before the engine's: the engine counts a call (and note_sink() records
 * its sink) before handing it up, so a snapshot that shows a call counted
 * here also shows everything that happened to it on the way.
 */
struct upper_counts {
	unsigned long calls, not_delivered, not_delivered_own, conn_up, conn_down, held_released,
	    delayed_replies, bc_replies, bc_errors, bc_last_xid, closes, closes_late;
	uint64_t sink_addr, sink_key;
};

static struct upper_counts read_upper(void)
{
	struct upper_counts u = {
		.calls = atomic_load(&ul_calls),
		.not_delivered = atomic_load(&ul_not_delivered),
		.not_delivered_own = atomic_load(&ul_not_delivered_own),
		.conn_up = atomic_load(&ul_conn_up),
		.conn_down = atomic_load(&ul_conn_down),
		.held_released = atomic_load(&ul_held_released),
		.delayed_replies = atomic_load(&ul_delayed_replies),
		.bc_replies = atomic_load(&ul_bc_replies),
		.bc_errors = atomic_load(&ul_bc_errors),
		.bc_last_xid = atomic_load(&ul_bc_last_xid),
		.closes = atomic_load(&ul_closes),
		.closes_late = atomic_load(&ul_closes_late),
		.sink_addr = atomic_load(&last_sink_addr),
		.sink_key = atomic_load(&last_sink_key),
	};
	return u;
}

static void print_upper(const struct upper_counts *u)
{
	printf("\"ul_calls\":%lu,\"ul_not_delivered\":%lu,\"ul_not_delivered_own\":%lu,"
	       "\"ul_conn_up\":%lu,"
	       "\"ul_conn_down\":%lu,\"ul_held_released\":%lu,\"ul_delayed_replies\":%lu,"
	       "\"ul_bc_replies\":%lu,\"ul_bc_errors\":%lu,\"ul_bc_last_xid\":%lu,"
	       "\"ul_closes\":%lu,\"ul_closes_late\":%lu",
	       u->calls, u->not_delivered, u->not_delivered_own, u->conn_up, u->conn_down,
	       u->held_released, u->delayed_replies, u->bc_replies, u->bc_errors, u->bc_last_xid,
	       u->closes, u->closes_late);
}

static void count_conn(void *arg, struct rr_conn *conn, const struct rr_stats *st)
{
	(void)conn;
	(void)st;
	(*(unsigned long *)arg)++;
}

static struct fab_fabric *the_fab;

static void print_stats(struct rr_server *srv)
{
	struct rr_stats st;
	struct rr_health h;
	struct fab_stats fs;
	unsigned long listed = 0;
	const struct upper_counts u = read_upper();

	memset(&st, 0, sizeof(st));
	rr_server_stats(srv, &st);
	/* Connections the engine still holds, closing ones included: a leaked
	 * reference shows here long after conns_active dropped. */
	rr_server_foreach_conn(srv, count_conn, &listed);
#define F(x) "\"" #x "\":%" PRIu64
	printf("{" F(conns_accepted) "," F(conns_active) "," F(calls) "," F(calls_with_read_chunks)
	       "," F(long_calls) "," F(replies_inline) "," F(replies_reply_chunk) ","
	       F(replies_write_chunk) "," F(rdma_read_bytes) "," F(rdma_write_bytes) ","
	       F(err_chunk_sent) "," F(err_vers_sent) "," F(dropped) "," F(not_delivered) ","
	       F(rnr_disconnects) "," F(disconnects) "," F(send_w_inv) "," F(sends_unsignalled) "," F(send_posts) "," F(read_posts) ","
	       F(registrations) ","
	       F(payload_copies) "," F(recv_mem_bytes) "," F(bc_calls) "," F(bc_replies) "," F(bc_errors) ","
	       F(pinned_bytes) ","
	       F(conns_refused) "," F(conns_refused_peer) "," F(conns_refused_mem) ","
	       F(conns_timed_out) "," F(conns_freed) "," F(sink_bytes) "," F(sink_pool_bytes) ","
	       F(last_sink_addr) "," F(last_sink_key) "," F(send_ctx_grown) "," F(send_ctx_waits)
	       "," F(reply_sink_waits) ",\"credit_grant\":%u,",
	       st.conns_accepted, st.conns_active, st.calls, st.calls_with_read_chunks,
	       st.long_calls, st.replies_inline, st.replies_reply_chunk, st.replies_write_chunk,
	       st.rdma_read_bytes, st.rdma_write_bytes, st.err_chunk_sent, st.err_vers_sent,
	       st.dropped, st.not_delivered, st.rnr_disconnects, st.disconnects, st.send_w_inv,
	       st.sends_unsignalled, st.send_posts, st.read_posts, st.registrations, st.payload_copies, st.recv_mem_bytes, st.bc_calls, st.bc_replies, st.bc_errors,
	       st.pinned_bytes, st.conns_refused, st.conns_refused_peer, st.conns_refused_mem,
	       st.conns_timed_out, st.conns_freed, st.sink_bytes, st.sink_pool_bytes, u.sink_addr, u.sink_key,
	       st.send_ctx_grown, st.send_ctx_waits, st.reply_sink_waits, st.credit_grant);
#undef F
	printf("\"conns_listed\":%lu,\"log_refused_lines\":%lu,\"log_lines\":%lu,", listed,
	       atomic_load(&log_refused_lines), atomic_load(&log_lines));
	/* Health, and the memory regions the fabric still has registered. */
	rr_server_health(srv, &h);
	fab_get_stats(the_fab, &fs);
	printf("\"serving\":%d,\"device_removals\":%" PRIu64 ",\"relisten_tries\":%" PRIu64
	       ",\"fab_mrs_live\":%" PRIu64 ",\"fab_unsignalled_page_wrs\":%" PRIu64 ",",
	       h.serving ? 1 : 0, h.device_removals, h.relisten_tries,
	       fs.registrations - fs.deregistrations, fs.unsignalled_page_wrs);
	{
		uint64_t a = 0;
		uint32_t k = 0;

		fab_soft_last_read_sink(the_fab, &a, &k); /* 0s on verbs */
		printf("\"fab_read_sink_addr\":%" PRIu64 ",\"fab_read_sink_key\":%u,", a, k);
	}
	print_upper(&u);
	printf("}\n");
	fflush(stdout);
}

/* The engine's log lines, all and those about refused connections,
 * counted (the tests bound them) and passed on to stderr as the default
 * sink would. */
static void log_line(const char *line)
{
	atomic_fetch_add(&log_lines, 1);
	if (strstr(line, "refused"))
		atomic_fetch_add(&log_refused_lines, 1);
	fprintf(stderr, "rpcrdma: %s\n", line);
}

static void on_term(int sig)
{
	ssize_t rc;

	(void)sig;
	rc = write(sig_pipe[1], "x", 1);
	(void)rc;
}

static int usage(void)
{
	fprintf(stderr, "usage: rr_test_server ADDR [--credits N] [--inline N] [--max-conns N] "
			"[--recv-mem BYTES] [--srq 0|1] [--srq-depth N] [--max-chunk BYTES]\n"
			"                      [--max-per-peer N] [--handshake-timeout S] "
			"[--idle-timeout S]\n"
			"                      [--send-timeout S] [--peer-prefix-v4 BITS] "
			"[--peer-prefix-v6 BITS]\n"
			"                      [--sink-mem BYTES] [--sink-budget BYTES] "
			"[--event-threads N]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct rr_upper_ops ops = {
		.call = on_call,
		.reply_not_delivered = on_not_delivered,
		.bc_reply = on_bc_reply,
		.bc_error = on_bc_error,
		.conn_up = on_conn_up,
		.conn_down = on_conn_down,
	};
	struct fab_fabric *fab = NULL;
	struct rr_server *srv = NULL;
	struct rr_config cfg;
	struct sigaction sa;
	struct upper_counts after;
	char line[256];
	size_t used = 0;
	int rc;

	if (argc < 2)
		return usage();
	rr_set_log_sink(log_line);
	rr_config_default(&cfg);
	/* One event thread unless asked: the suites run again with more
	 * (tests/transport/CMakeLists.txt, RPCRDMA_TEST_EVENT_THREADS). */
	cfg.event_threads = 1;
	if (getenv("RPCRDMA_TEST_EVENT_THREADS"))
		cfg.event_threads = (uint32_t)strtoul(getenv("RPCRDMA_TEST_EVENT_THREADS"), NULL, 0);
	/* Options come in pairs: --name value. */
	for (int i = 2; i < argc; i += 2) {
		if (i + 1 >= argc)
			return usage();
		unsigned long v = strtoul(argv[i + 1], NULL, 0);

		if (!strcmp(argv[i], "--credits"))
			cfg.credits = (uint32_t)v;
		else if (!strcmp(argv[i], "--inline"))
			cfg.inline_size = (uint32_t)v;
		else if (!strcmp(argv[i], "--max-conns"))
			cfg.max_conns = (uint32_t)v;
		else if (!strcmp(argv[i], "--recv-mem"))
			cfg.recv_mem_budget = v;
		else if (!strcmp(argv[i], "--max-per-peer"))
			cfg.max_conns_per_peer = (uint32_t)v;
		else if (!strcmp(argv[i], "--handshake-timeout"))
			cfg.handshake_timeout = (uint32_t)v;
		else if (!strcmp(argv[i], "--idle-timeout"))
			cfg.idle_timeout = (uint32_t)v;
		else if (!strcmp(argv[i], "--send-timeout"))
			cfg.send_timeout = (uint32_t)v;
		else if (!strcmp(argv[i], "--peer-prefix-v4"))
			cfg.peer_prefix_v4 = (uint8_t)v;
		else if (!strcmp(argv[i], "--peer-prefix-v6"))
			cfg.peer_prefix_v6 = (uint8_t)v;
		else if (!strcmp(argv[i], "--srq"))
			cfg.use_srq = v != 0;
		else if (!strcmp(argv[i], "--srq-depth"))
			cfg.srq_depth = (uint32_t)v;
		else if (!strcmp(argv[i], "--max-chunk"))
			cfg.limits.max_chunk_bytes = (uint32_t)v; /* also sizes the big buffers */
		else if (!strcmp(argv[i], "--sink-mem"))
			cfg.sink_mem_max = (uint64_t)v;
		else if (!strcmp(argv[i], "--sink-budget"))
			cfg.sink_budget = (uint64_t)v;
		else if (!strcmp(argv[i], "--event-threads"))
			cfg.event_threads = (uint32_t)v;
		else
			return usage();
	}

	if (pipe(sig_pipe))
		return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	rc = fab_open(NULL, &fab);
	if (rc) {
		fprintf(stderr, "rr_test_server: fab_open: %s\n", fab_last_error());
		return 1;
	}
	the_fab = fab;
	rc = rr_server_create(fab, argv[1], &cfg, &ops, NULL, &srv);
	if (!rc)
		rc = rr_server_start(srv);
	if (rc) {
		fprintf(stderr, "rr_test_server: cannot serve %s: %d (%s)\n", argv[1], rc,
			fab_last_error());
		if (srv)
			rr_server_destroy(srv);
		fab_close(fab);
		return 1;
	}
	for (int i = 0; i < DELAY_WORKERS; i++) {
		if (pthread_create(&delay_threads[i], NULL, delay_worker, NULL)) {
			fprintf(stderr, "rr_test_server: cannot start delay workers\n");
			_exit(1);
		}
	}
	printf("READY\n");
	fflush(stdout);

	for (;;) {
		struct pollfd fds[2] = {{0, POLLIN, 0}, {sig_pipe[0], POLLIN, 0}};

		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (fds[1].revents)
			break;
		if (!fds[0].revents)
			continue;
		ssize_t n = read(0, line + used, sizeof(line) - 1 - used);

		if (n <= 0)
			break;
		used += (size_t)n;
		line[used] = 0;
		char *nl;

		while ((nl = strchr(line, '\n'))) {
			*nl = 0;
			if (!strcmp(line, "stats"))
				print_stats(srv);
			else if (!strcmp(line, "device-remove"))
				printf("{\"device_remove\":%d}\n", -fab_soft_device_remove(fab)),
				    fflush(stdout);
			else if (!strcmp(line, "device-restore"))
				printf("{\"device_restore\":%d}\n", -fab_soft_device_restore(fab)),
				    fflush(stdout);
			memmove(line, nl + 1, used - (size_t)(nl + 1 - line) + 1);
			used -= (size_t)(nl + 1 - line);
		}
		if (used == sizeof(line) - 1)
			used = 0;
	}
	print_stats(srv);
	/* answer what is still delayed before the engine goes away */
	pthread_mutex_lock(&delay_lock);
	delay_stop = true;
	pthread_cond_broadcast(&delay_cond);
	pthread_mutex_unlock(&delay_lock);
	for (int i = 0; i < DELAY_WORKERS; i++)
		pthread_join(delay_threads[i], NULL);
	rr_server_destroy(srv);
	/* after teardown: every conn_up had its conn_down, held calls released */
	after = read_upper();
	printf("{\"destroyed\":1,");
	print_upper(&after);
	printf("}\n");
	fflush(stdout);
	fab_close(fab);
	close(sig_pipe[0]);
	close(sig_pipe[1]);
	return 0;
}
