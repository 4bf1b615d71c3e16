// SPDX-License-Identifier: MIT
/*
 * fab_soft_idle.c - an idle "soft" connection holds no thread.
 *
 * A connection's reader and writer (fab_soft_io.c) run while it has work and
 * end after idle_ms without any: the writer when nothing is queued to send,
 * the reader at a message boundary with nothing parked. The idle socket is
 * then watched by one thread per fabric (epoll, one-shot), which starts a
 * reader again when bytes or a hang-up arrive; posting starts a writer. So a
 * fabric holding 10,000 idle connections runs one thread, not 20,000, and
 * what bench E measures is the engine's cost, not the test fabric's
 * (src/fabric/README.md). The RNIC it stands in for has no thread per QP
 * either.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "fabric/fab_soft_int.h"

#define SOFT_IDLE_MS_DEFAULT 500u
#define WATCH_BATCH 64

static int spawn(void *(*fn)(void *), struct soft_conn *c)
{
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, fn, c);
	pthread_attr_destroy(&attr);
	return rc ? -rc : 0;
}

/* A thread could not be started: the link is as good as dead. */
static void spawn_failed_locked(struct soft_conn *c)
{
	c->dead = true;
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
}

static bool writer_has_work_locked(const struct soft_conn *c)
{
	return c->ctl_n ||
	       (c->state == SOFT_S_EST && !c->qp_err && !c->dead && c->sq_tx < c->sq_tail);
}

void soft_wake_locked(struct soft_conn *c)
{
	pthread_cond_broadcast(&c->cond);
	if (c->writer_on || c->stop || !c->io_started || !writer_has_work_locked(c))
		return;
	c->writer_on = true;
	if (spawn(soft_writer, c)) {
		c->writer_on = false;
		spawn_failed_locked(c);
	}
}

int soft_io_start(struct soft_conn *c)
{
	struct timeval tv = {.tv_sec = c->sf->idle_ms / 1000,
			     .tv_usec = (long)(c->sf->idle_ms % 1000) * 1000};
	int rc;

	/* A reader's wait for the next message ends after idle_ms
	 * (read_next_hdr); inside a message it reads on (soft_io_full). */
	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		return -errno;
	pthread_mutex_lock(&c->lock);
	c->io_started = true;
	c->reader_on = true;
	rc = spawn(soft_reader, c);
	if (rc)
		c->reader_on = false;
	else
		soft_wake_locked(c);
	pthread_mutex_unlock(&c->lock);
	return rc ? -EAGAIN : 0;
}

void soft_io_ended_locked(struct soft_conn *c, bool reader)
{
	if (reader)
		c->reader_on = false;
	else
		c->writer_on = false;
	pthread_cond_broadcast(&c->cond); /* soft_io_wait_stopped */
}

bool soft_writer_idle_locked(struct soft_conn *c)
{
	if (writer_has_work_locked(c) && !c->stop)
		return false;
	soft_io_ended_locked(c, false);
	return true;
}

void soft_io_wait_stopped(struct soft_conn *c)
{
	pthread_mutex_lock(&c->lock);
	while (c->reader_on || c->writer_on)
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

unsigned int soft_idle_ms(const struct soft_fabric *sf)
{
	return sf->idle_ms;
}

/* --- the watcher --------------------------------------------------------- */

static void *watcher(void *arg)
{
	struct soft_fabric *sf = arg;
	struct soft_watch *w = &sf->watch;
	struct epoll_event evs[WATCH_BATCH];

	for (;;) {
		int n = epoll_wait(w->epfd, evs, WATCH_BATCH, -1);

		pthread_mutex_lock(&w->lock);
		for (int i = 0; i < n; i++) {
			struct soft_conn *c = evs[i].data.ptr;
			uint64_t v;

			if (!c) {
				if (read(w->wakefd, &v, sizeof(v)) < 0 && errno != EAGAIN)
					break;
				continue;
			}
			pthread_mutex_lock(&c->lock);
			if (!c->stop && !c->reader_on) {
				c->reader_on = true;
				if (spawn(soft_reader, c)) {
					c->reader_on = false;
					spawn_failed_locked(c);
					/* no reader: report the link's end as a reader would */
					soft_reader_gone_locked(c);
				}
			}
			pthread_mutex_unlock(&c->lock);
		}
		w->seq++;
		pthread_cond_broadcast(&w->cond);
		if (w->stop) {
			pthread_mutex_unlock(&w->lock);
			return NULL;
		}
		pthread_mutex_unlock(&w->lock);
	}
}

static int watch_start(struct soft_fabric *sf)
{
	struct soft_watch *w = &sf->watch;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};

	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	w->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->epfd < 0 || w->wakefd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wakefd, &ev) ||
	    pthread_create(&w->thread, NULL, watcher, sf)) {
		if (w->epfd >= 0)
			close(w->epfd);
		if (w->wakefd >= 0)
			close(w->wakefd);
		w->epfd = w->wakefd = -1;
		return -EAGAIN;
	}
	w->started = true;
	return 0;
}

/*
 * The reader found nothing for idle_ms (c->lock held): hand the socket to
 * the watcher. False: keep reading (stopping, or the watcher is unavailable).
 */
bool soft_reader_idle_locked(struct soft_conn *c)
{
	struct soft_watch *w = &c->sf->watch;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.ptr = c};

	if (c->stop || c->park_head)
		return false;
	/* Level-triggered: bytes that came before the arming fire it at once. */
	c->reader_on = false;
	if (epoll_ctl(w->epfd, c->watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev)) {
		c->reader_on = true;
		return false;
	}
	c->watched = true;
	pthread_cond_broadcast(&c->cond);
	return true;
}

/*
 * The conn is stopping (c->stop set): after this the watcher neither holds
 * nor will be handed it, so it may be freed.
 */
void soft_watch_forget(struct soft_conn *c)
{
	struct soft_watch *w = &c->sf->watch;
	uint64_t seq;

	if (!c->watched)
		return;
	pthread_mutex_lock(&w->lock);
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	/* A batch the watcher took before the removal may still name c: wait it out. */
	seq = w->seq;
	{
		uint64_t one = 1;

		if (write(w->wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			abort();
	}
	while (w->seq == seq)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	c->watched = false;
}

/* The fabric's watcher runs from its open to its close, connections or not. */
int soft_watch_init(struct soft_fabric *sf)
{
	const char *env = getenv("RPCRDMA_SOFT_IDLE_MS");
	char *end;
	unsigned long v;

	sf->watch.epfd = sf->watch.wakefd = -1;
	pthread_mutex_init(&sf->watch.lock, NULL);
	pthread_cond_init(&sf->watch.cond, NULL);
	sf->idle_ms = SOFT_IDLE_MS_DEFAULT;
	if (env && *env) {
		errno = 0;
		v = strtoul(env, &end, 10);
		if (!errno && !*end && v >= 1 && v <= 3600000)
			sf->idle_ms = (unsigned int)v;
	}
	return watch_start(sf);
}

void soft_watch_fini(struct soft_fabric *sf)
{
	struct soft_watch *w = &sf->watch;

	if (w->started) {
		uint64_t one = 1;

		pthread_mutex_lock(&w->lock);
		w->stop = true;
		pthread_mutex_unlock(&w->lock);
		if (write(w->wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			abort();
		pthread_join(w->thread, NULL);
		close(w->epfd);
		close(w->wakefd);
	}
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
}

/* Live I/O threads of this fabric's connections (tests, bench E). */
unsigned int fab_soft_io_threads(struct fab_fabric *fab)
{
	struct soft_fabric *sf = (struct soft_fabric *)fab;
	unsigned int n = 0;

	if (!fab || fab->ops != &fab_soft_ops)
		return 0;
	pthread_mutex_lock(&sf->reg_lock);
	for (struct soft_conn *c = sf->conns; c; c = c->reg_next) {
		pthread_mutex_lock(&c->lock);
		n += c->reader_on + c->writer_on;
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&sf->reg_lock);
	return n;
}
