// SPDX-License-Identifier: MIT
/*
 * fab_soft_accept.c - the "soft" listener's accept thread.
 *
 * It takes every stream the kernel has queued and reads each one's CONN_REQ
 * as its bytes arrive, many at once (non-blocking sockets, one poll set), so
 * that no peer holds up the others: not one that connects and never sends
 * (a probe, a client that died between connect and CONN_REQ), not one slow
 * to send in a reconnect storm of thousands. Each has
 * SOFT_HANDSHAKE_TIMEOUT_S for its CONN_REQ; at most SOFT_ACCEPT_PENDING are
 * read at once, the rest wait in the kernel's accept queue (the listen
 * backlog, docs/admission.md). A complete CONN_REQ becomes a connection and
 * its CONNECT_REQUEST (soft_listener_request), in the order they complete.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fabric/fab_soft_int.h"

#define SOFT_HANDSHAKE_TIMEOUT_S 5
#define SOFT_ACCEPT_PENDING 1024
#define SOFT_ACCEPT_RETRY_MS 100

/* A stream whose CONN_REQ is still coming. */
struct soft_pending {
	int fd;
	uint64_t deadline_ms;
	size_t got;
	union {
		struct soft_hdr h;
		uint8_t b[sizeof(struct soft_hdr) + FAB_PRIVATE_DATA_MAX];
	} m;
};

/* Bytes of the CONN_REQ still wanted (0: complete), or -1 when what came is
 * no CONN_REQ. */
static long wanted(const struct soft_pending *p)
{
	size_t len;

	if (p->got < sizeof(p->m.h))
		return (long)(sizeof(p->m.h) - p->got);
	len = le32toh(p->m.h.len);
	if (p->m.h.type != SOFT_CONN_REQ || le32toh(p->m.h.b) != SOFT_MAGIC ||
	    len > FAB_PRIVATE_DATA_MAX)
		return -1;
	return (long)(sizeof(p->m.h) + len - p->got);
}

/* Read what has come; true while the stream stays pending. */
static bool pending_read(struct soft_listener *l, struct soft_pending *p)
{
	long want = wanted(p);

	while (want > 0) {
		ssize_t n = recv(p->fd, p->m.b + p->got, (size_t)want, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		if (n <= 0)
			goto drop;
		p->got += (size_t)n;
		want = wanted(p);
	}
	if (want < 0 || atomic_load(&l->dead)) /* junk; or no device since the accept */
		goto drop;
	/* The connection's own I/O blocks (with the timeouts soft_io_start sets). */
	fcntl(p->fd, F_SETFL, fcntl(p->fd, F_GETFL) & ~O_NONBLOCK);
	soft_listener_request(l, p->fd, &p->m.h, p->m.b + sizeof(p->m.h));
	return false;
drop:
	close(p->fd);
	return false;
}

/* Accept what the kernel has queued, up to the bound; returns the count
 * pending. Out of descriptors (EMFILE...): *retry_ms says when to try again,
 * the kernel's queue holds the streams meanwhile. */
static int accept_some(struct soft_listener *l, struct soft_pending *pend, int n,
		       uint64_t *retry_ms)
{
	while (n < SOFT_ACCEPT_PENDING) {
		/* accept4 is a GNU extension: the flags after, as before */
		int fd = accept(l->fd, NULL, NULL);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				*retry_ms = (uint64_t)soft_now_ms() + SOFT_ACCEPT_RETRY_MS;
			break;
		}
		if (atomic_load(&l->dead)) {
			close(fd); /* no device: the peer sees its connect fail */
			continue;
		}
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		memset(&pend[n], 0, sizeof(pend[n]));
		pend[n].fd = fd;
		pend[n].deadline_ms = (uint64_t)soft_now_ms() + SOFT_HANDSHAKE_TIMEOUT_S * 1000;
		n++;
	}
	return n;
}

void *soft_accept_thread(void *arg)
{
	struct soft_listener *l = arg;
	struct soft_pending *pend = calloc(SOFT_ACCEPT_PENDING, sizeof(*pend));
	struct pollfd *pfd = calloc(SOFT_ACCEPT_PENDING + 2, sizeof(*pfd));
	uint64_t retry_ms = 0;
	int n = 0;

	if (!pend || !pfd)
		goto out;
	for (;;) {
		uint64_t now = (uint64_t)soft_now_ms(), next = UINT64_MAX;
		bool listen = n < SOFT_ACCEPT_PENDING && retry_ms <= now;
		int timeout, k = 0, rc;

		/* Past their time: dropped, the order kept. */
		for (int i = 0; i < n; i++) {
			if (pend[i].deadline_ms <= now) {
				close(pend[i].fd);
				continue;
			}
			if (pend[i].deadline_ms < next)
				next = pend[i].deadline_ms;
			pend[k++] = pend[i];
		}
		n = k;
		if (!listen && retry_ms > now && retry_ms < next)
			next = retry_ms;
		pfd[0] = (struct pollfd){.fd = l->wake, .events = POLLIN};
		/* full: the kernel's queue holds the rest until some complete */
		pfd[1] = (struct pollfd){.fd = listen ? l->fd : -1, .events = POLLIN};
		for (int i = 0; i < n; i++)
			pfd[2 + i] = (struct pollfd){.fd = pend[i].fd, .events = POLLIN};
		timeout = next == UINT64_MAX ? -1 : (int)(next - now + 1);
		rc = poll(pfd, (nfds_t)n + 2, timeout);
		if (rc < 0 && errno != EINTR)
			break;
		if (rc <= 0)
			continue;
		if (pfd[0].revents)
			break;
		k = 0;
		for (int i = 0; i < n; i++) {
			if (pfd[2 + i].revents && !pending_read(l, &pend[i]))
				continue;
			pend[k++] = pend[i];
		}
		n = k;
		if (pfd[1].revents)
			n = accept_some(l, pend, n, &retry_ms);
	}
out:
	for (int i = 0; i < n; i++)
		close(pend[i].fd);
	free(pend);
	free(pfd);
	return NULL;
}
