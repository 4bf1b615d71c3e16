// SPDX-License-Identifier: MIT
/*
 * rr_evt.c - the event threads (docs/threading.md, "Event threads"): each
 * connection's completion queue, wake-ups and timeouts are handled on the
 * one event thread it belongs to, so the receive path needs no locks of its
 * own. evt[0] also takes the listener's connection management events and
 * hands each accepted connection to the least loaded thread, which adopts
 * it; at its end the connection goes back to evt[0] to be freed. Starting
 * and stopping the threads is here too; rr_server.c makes and frees what
 * they serve with. Upper layers answer calls from their own threads
 * through rr_reply() (rr_reply.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "rpcrdma/rr_internal.h"

#define TAG_CM ((void *)1)
#define TAG_KICK ((void *)2)
#define TAG_TIMER ((void *)3)
/*
 * CM events taken per turn of the event loop. A reconnect storm queues
 * thousands of connection requests at once; taken all in one go, the
 * completions of the connections already admitted (their first Calls) and
 * the hand-offs would wait behind the whole storm. The channel's fd stays
 * readable while events are left (level-triggered), so the next turn takes
 * the next batch, in order (docs/admission.md).
 */
#define RR_CM_BATCH 32

_Thread_local struct rr_evt *rr_this_event_thread;

/*
 * The eventfd and epoll calls of the hand-off path, through syscall(): no
 * thread of ours is ever cancelled, and libc's wrappers spend more on the
 * cancellation bookkeeping around these calls than on the calls themselves.
 */
static void kickfd_write(int fd)
{
	uint64_t one = 1;

	if (syscall(SYS_write, fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		rr_log("kick: %s", strerror(errno));
}

/*
 * The kick eventfd is watched edge-triggered: every write queues a new
 * event whether or not the counter was read, so handle_kick need not read
 * it (one system call less per hand-off). It still resets the counter at
 * its first wake-up after each tick, far below where writes would fail;
 * only there, before kick_pending is cleared: a read between a write and
 * the wake-up it queued would leave nothing to report, and the kicker's
 * flag set for good.
 */
static void kickfd_drain(int fd)
{
	uint64_t v;

	if (syscall(SYS_read, fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		rr_log("kick read: %s", strerror(errno));
}

/*
 * Wake an event thread. While a wake-up is pending it will see whatever was
 * queued before it clears the flag (handle_kick), so one write serves every
 * thread queueing until then: a worker's Reply and its call release cost one
 * eventfd write, not two.
 */
void rr_evt_kick(struct rr_evt *e)
{
	if (atomic_exchange(&e->kick_pending, true))
		return;
	kickfd_write(e->kickfd);
}

void rr_server_kick(struct rr_server *srv)
{
	for (unsigned int i = 0; i < srv->nevt; i++)
		rr_evt_kick(&srv->evt[i]);
}

void rr_conn_kick(struct rr_conn *c)
{
	struct rr_evt *e = c->evt;

	if (atomic_exchange(&c->ready_queued, true)) {
		/* Queued and not yet visited: the visit comes after the flag is
		 * cleared, so it sees this work too. The queued entry has its
		 * own reference, so this one is never the last. */
		rr_conn_put(c);
		return;
	}
	rr_handoff_push(&e->ready, &c->ready_link); /* the reference goes with it */
	rr_evt_kick(e);
}

static int epoll_add(struct rr_evt *e, int fd, uint32_t events, void *tag)
{
	struct epoll_event ev = {.events = events, .data.ptr = tag};

	return epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

int rr_evt_epoll_add(struct rr_evt *e, int fd, void *tag)
{
	return epoll_add(e, fd, EPOLLIN, tag);
}

void rr_evt_epoll_del(struct rr_evt *e, int fd)
{
	epoll_ctl(e->epfd, EPOLL_CTL_DEL, fd, NULL);
}

/*
 * Fewest connections first; among equals, the next in turn, so that a
 * burst of connections on an idle server is spread too. evt[0] counts one
 * connection more than it has: it also takes every CM event.
 */
struct rr_evt *rr_server_pick_evt(struct rr_server *srv)
{
	unsigned int best = 0;
	uint32_t best_load = UINT32_MAX;

	for (unsigned int k = 0; k < srv->nevt; k++) {
		unsigned int i = (srv->next_evt + k) % srv->nevt;
		uint32_t load = atomic_load_explicit(&srv->evt[i].load, memory_order_relaxed);

		if (i == 0 && srv->nevt > 1)
			load++;
		if (load < best_load) {
			best = i;
			best_load = load;
		}
	}
	srv->next_evt = (best + 1) % srv->nevt;
	atomic_fetch_add_explicit(&srv->evt[best].load, 1, memory_order_relaxed);
	return &srv->evt[best];
}

void rr_evt_fini(struct rr_evt *e)
{
	rr_pcl_pool_fini(e);
	pthread_mutex_destroy(&e->srq_lock);
	if (e->epfd >= 0)
		close(e->epfd);
	if (e->kickfd >= 0)
		close(e->kickfd);
	if (e->timerfd >= 0)
		close(e->timerfd);
}

/* An event thread's epoll with its kick eventfd and its once-a-second timer
 * (timeouts; on evt[0] the log summaries too), and on evt[0] the listener's
 * CM channel. */
int rr_evt_init(struct rr_server *srv, unsigned int idx)
{
	struct rr_evt *e = &srv->evt[idx];
	struct itimerspec its = {.it_interval = {1, 0}, .it_value = {1, 0}};
	int ret;

	e->srv = srv;
	e->idx = idx;
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	e->kickfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	e->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (e->epfd < 0 || e->kickfd < 0 || e->timerfd < 0)
		return -errno;
	if (timerfd_settime(e->timerfd, 0, &its, NULL))
		return -errno;
	ret = epoll_add(e, e->kickfd, EPOLLIN | EPOLLET, TAG_KICK); /* kickfd_drain says why */
	if (!ret)
		ret = rr_evt_epoll_add(e, e->timerfd, TAG_TIMER);
	if (!ret && idx == 0)
		ret = rr_evt_epoll_add(e, fab_channel_fd(srv->ch), TAG_CM);
	return ret;
}

/*
 * A CM event of a connection another thread owns: handed over as a bit
 * (rr_conn_cm_event needs only the type), unless it is closing already - then
 * the event changes nothing, and its owner may be letting it go. The check
 * and the reference under c->lock: a connection not yet closing still holds
 * its owner's own reference (dropped only after it is marked closing).
 */
static void cm_forward(struct rr_conn *c, const struct fab_cm_event *ev)
{
	bool live;

	pthread_mutex_lock(&c->lock);
	live = c->state != RR_CONN_CLOSING;
	if (live) {
		atomic_fetch_or(&c->cm_pending, 1u << ev->type);
		rr_conn_get(c);
	}
	pthread_mutex_unlock(&c->lock);
	if (live)
		rr_conn_kick(c);
}

static void handle_cm(struct rr_server *srv)
{
	struct fab_cm_event ev;

	for (int n = 0; n < RR_CM_BATCH && fab_channel_get_event(srv->ch, &ev) == 0; n++) {
		struct rr_conn *c;

		if (ev.type == FAB_CM_CONNECT_REQUEST) {
			/* No listener: a request queued before a device removal. */
			if (atomic_load(&srv->stopping) || srv->dev_lost)
				fab_reject(ev.conn, NULL, 0), fab_conn_destroy(ev.conn);
			else
				rr_conn_connect_request(srv, &ev);
			continue;
		}
		if (ev.type == FAB_CM_DEVICE_REMOVAL) {
			/* Closes this connection with all the others (rr_listener.c). */
			rr_listener_device_lost(srv, &ev);
			continue;
		}
		c = ev.conn ? fab_conn_get_context(ev.conn) : NULL;
		if (!c)
			continue;
		if (c->evt == srv->evt)
			rr_conn_cm_event(c, &ev);
		else
			cm_forward(c, &ev);
	}
}

/* Connections evt[0] accepted for this thread: from now on its own. */
static void adopt(struct rr_evt *e)
{
	struct rr_server *srv = e->srv;

	for (struct rr_handoff *h = rr_handoff_take(&e->adopt); h;) {
		struct rr_conn *c = RR_CONTAINER_OF(h, struct rr_conn, adopt_link);
		int ret;

		h = h->next;
		c->evt_next = e->conns;
		e->conns = c;
		e->nconns++;
		/* The CQ was armed at set-up: what completed since is an event
		 * its fd still holds, seen at the next epoll_wait. */
		ret = rr_evt_epoll_add(e, fab_cq_fd(c->cq), c);
		if (ret)
			rr_conn_close(c, "its completion queue cannot be watched");
		else
			c->in_epoll = true;
		/* Its pool is this thread's alone from now on. */
		if (c->srq)
			rr_srq_adopt(c->srq);
		if (atomic_load(&srv->dev_gone))
			rr_conn_close(c, "device removed");
	}
}

/* evt[0]: the rest of other threads' connections, freed there. */
static void bury(struct rr_evt *e)
{
	for (struct rr_handoff *h = rr_handoff_take(&e->dead); h;) {
		struct rr_conn *c = RR_CONTAINER_OF(h, struct rr_conn, adopt_link);

		h = h->next;
		rr_conn_forget(c);
		rr_conn_free(c);
	}
}

static void close_all(struct rr_evt *e, const char *why)
{
	for (struct rr_conn *c = e->conns; c; c = c->evt_next)
		rr_conn_close(c, why);
}

/* Connections coming and going between threads, and a device removal: rare,
 * so out of the wake-up's own code (bench A: Event_Threads = 1 costs what
 * one thread did). */
static __attribute__((noinline)) void handovers(struct rr_evt *e)
{
	/* An exchange, as kick_pending: what was pushed before the flag is seen. */
	(void)atomic_exchange(&e->handover, false);
	if (e->idx == 0)
		bury(e);
	adopt(e);
	if (atomic_exchange(&e->close_all, false))
		close_all(e, "device removed");
	/* Its own pools, on its own thread: its tick may be using one. */
	if (atomic_exchange(&e->drop_pools, false)) {
		rr_evt_drop_pools(e);
		/* the last one wakes evt[0], which re-listens once all are done */
		if (atomic_fetch_sub_explicit(&e->srv->pools_dropping, 1, memory_order_release) == 1)
			rr_evt_kick(&e->srv->evt[0]);
	}
	rr_srq_woken(e);
}

/* This thread's sink pools, each serving the connections that wait for it. */
static void serve_sink_waiters(struct rr_evt *e)
{
	unsigned int n = rr_evt_npools(e);

	for (unsigned int i = 0; i < n; i++) {
		struct rr_bigpool *bp = rr_evt_pool(e, i);

		if (bp && bp->wait_head)
			rr_read_serve_waiters(bp);
	}
}

/* Work that other threads asked for: Replies, refills, queued reads. */
static void handle_kick(struct rr_evt *e)
{
	struct rr_handoff *h;

	if (__builtin_expect(e->kick_drain_due, 0)) {
		e->kick_drain_due = false;
		kickfd_drain(e->kickfd);
	}
	/*
	 * Before the visits: work queued after this point kicks again. An
	 * exchange, not a store: as a read-modify-write it acquires what a
	 * kicker that found the flag still set had pushed, so no later load
	 * here can miss it (a plain store orders nothing after it on arm64).
	 */
	(void)atomic_exchange(&e->kick_pending, false);
	if (atomic_load_explicit(&e->handover, memory_order_relaxed))
		handovers(e);
	for (h = rr_handoff_take(&e->ready); h;) {
		struct rr_conn *c = RR_CONTAINER_OF(h, struct rr_conn, ready_link);

		h = h->next; /* before the flag: c may be pushed again after it */
		(void)atomic_exchange(&c->ready_queued, false); /* as kick_pending above */
		if (atomic_load_explicit(&c->cm_pending, memory_order_relaxed))
			rr_conn_cm_pending(c);
		/* Even when closing: queued Replies must release their calls. */
		rr_send_run_deferred(c);
		if (c->state != RR_CONN_CLOSING) {
			rr_recv_refill(c);
			rr_read_pump(c);
		} else if (c->srq) {
			rr_srq_refill(c->srq); /* what its calls gave back */
		}
		rr_conn_put(c); /* the ready stack's */
	}
	/* Big buffers are shared by every connection of this thread: one given
	 * back may be what a Read elsewhere waits for. Those waiting for a
	 * pool go first, in turn; then a walk for the rest (rare). */
	if (e->reads_starved) {
		e->reads_starved = false;
		serve_sink_waiters(e);
		for (struct rr_conn *c = e->conns; c; c = c->evt_next) {
			if (c->state == RR_CONN_CLOSING)
				continue;
			rr_read_pump(c);
			/* a Reply short of a bounce buffer, once one came back */
			if (c->replies_starved &&
			    atomic_load_explicit(&c->big->puts, memory_order_acquire) !=
				c->reply_stuck_at) {
				c->replies_starved = false;
				rr_send_run_deferred(c);
			}
		}
	}
}

static void *event_thread(void *arg)
{
	struct rr_evt *e = arg;
	struct rr_server *srv = e->srv;
	struct epoll_event evs[32];
	struct timespec deadline = {0};
	bool closing = false;
	char name[16];

	rr_this_event_thread = e;
	/* for top -H, perf, strace */
	if (srv->nevt == 1)
		snprintf(name, sizeof(name), "rpcrdma-event");
	else
		snprintf(name, sizeof(name), "rpcrdma-event%u", e->idx);
	prctl(PR_SET_NAME, name);
	for (;;) {
		/*
		 * Sleeps as soon as there is nothing to do. Polling the CQs and the
		 * hand-offs for a while first (and a worker polling its queue) was
		 * tried in the rxe VM: 50 us cost up to 13 % of the 4 KiB IOPS, 400 us
		 * up to half - the cores a poller holds are the ones the client and a
		 * software device need. Not offered until measured where cores
		 * are to spare.
		 */
		int n = (int)syscall(SYS_epoll_wait, e->epfd, evs, 32, 100);

		for (int i = 0; i < n; i++) {
			void *tag = evs[i].data.ptr;

			if (tag == TAG_CM) {
				handle_cm(srv);
			} else if (tag == TAG_KICK) {
				handle_kick(e);
			} else if (tag == TAG_TIMER) {
				uint64_t ticks;

				if (read(e->timerfd, &ticks, sizeof(ticks)) == sizeof(ticks))
					rr_admit_tick(e);
				e->kick_drain_due = true;
			} else {
				struct rr_conn *c = tag;

				fab_cq_get_event(c->cq);
				rr_conn_poll_cq(c);
			}
		}
		rr_conn_reap(e);
		if (e->idx == 0)
			rr_listener_tick(srv);

		if (atomic_load(&srv->stopping)) {
			struct timespec now;

			clock_gettime(CLOCK_MONOTONIC, &now);
			if (!closing) {
				closing = true;
				deadline = now;
				deadline.tv_sec += 10;
			}
			/* Each turn: a connection adopted since is closed too. */
			adopt(e);
			close_all(e, "server shutting down");
			if (e->nconns == 0)
				break;
			if (now.tv_sec > deadline.tv_sec) {
				rr_log("%u connection(s) still referenced at shutdown", e->nconns);
				break;
			}
		}
	}
	return NULL;
}

int rr_server_start(struct rr_server *srv)
{
	int ret = 0;

	/* started before the threads run, so each knows itself at once */
	srv->started = true;
	for (unsigned int i = 0; i < srv->nevt && !ret; i++) {
		ret = pthread_create(&srv->evt[i].thread, NULL, event_thread, &srv->evt[i]);
		srv->evt[i].started = ret == 0;
	}
	if (ret) {
		/* Nothing was accepted yet: stop those that run. */
		atomic_store(&srv->stopping, true);
		for (unsigned int i = 0; i < srv->nevt; i++) {
			if (srv->evt[i].started) {
				rr_evt_kick(&srv->evt[i]);
				pthread_join(srv->evt[i].thread, NULL);
				srv->evt[i].started = false;
			}
		}
		atomic_store(&srv->stopping, false);
		srv->started = false;
		return -ret;
	}
	return 0;
}

/* After the threads: connections handed over to a thread that had already
 * stopped, and those its threads left to evt[0] to free. */
static void free_leftovers(struct rr_server *srv)
{
	for (unsigned int i = 0; i < srv->nevt; i++) {
		struct rr_evt *e = &srv->evt[i];

		for (struct rr_handoff *h = rr_handoff_take(&e->adopt); h;) {
			struct rr_conn *c = RR_CONTAINER_OF(h, struct rr_conn, adopt_link);

			h = h->next;
			rr_conn_forget(c);
			rr_conn_free(c);
		}
	}
	bury(&srv->evt[0]);
}

void rr_evt_stop(struct rr_server *srv)
{
	atomic_store(&srv->stopping, true);
	if (srv->started) {
		rr_server_kick(srv);
		/* evt[0] last: the others hand it their connections' ends. */
		for (unsigned int i = srv->nevt; i-- > 0;)
			if (srv->evt[i].started)
				pthread_join(srv->evt[i].thread, NULL);
		free_leftovers(srv);
	} else {
		for (unsigned int i = 0; i < srv->nevt; i++)
			close_all(&srv->evt[i], "server shutting down");
	}
}
