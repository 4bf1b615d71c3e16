// SPDX-License-Identifier: MIT
/*
 * fab_soft_cm.c - the "soft" provider's connection management: the fabric,
 * event channels, listeners (one accept thread each, fab_soft_accept.c),
 * connect / accept / reject / disconnect, connection teardown, and
 * fault-injection settings.
 *
 * CM exchange on the stream: the active side sends CONN_REQ with its private
 * data and RDMA Read depths; the passive side answers CONN_REP or CONN_REJ.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fabric/fab_soft_int.h"

#define SOFT_CONNECT_TIMEOUT_S 5

/* --- event channel ------------------------------------------------------- */

static int soft_channel_create(struct fab_fabric *fab, struct fab_channel **out)
{
	struct soft_channel *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return fab_set_error(-ENOMEM, "soft: out of memory for channel");
	ch->fab = fab;
	ch->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ch->efd < 0) {
		free(ch);
		return fab_set_error(-errno, "soft: eventfd: %s", strerror(errno));
	}
	pthread_mutex_init(&ch->lock, NULL);
	*out = (struct fab_channel *)ch;
	return 0;
}

static void conn_free(struct soft_conn *c);

static void soft_channel_destroy(struct fab_channel *fch)
{
	struct soft_channel *ch = (struct soft_channel *)fch;
	struct soft_evnode *n;

	/* Requests never handed out have no owner but us. */
	while ((n = ch->head)) {
		ch->head = n->next;
		if (n->ev.type == FAB_CM_CONNECT_REQUEST)
			conn_free((struct soft_conn *)n->ev.conn);
		free(n);
	}
	close(ch->efd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
}

static int soft_channel_fd(const struct fab_channel *ch)
{
	return ((const struct soft_channel *)ch)->efd;
}

/* The fd is readable exactly while events are queued. */
void soft_event_push(struct soft_channel *ch, const struct fab_cm_event *ev)
{
	struct soft_evnode *n = malloc(sizeof(*n));
	uint64_t one = 1;

	if (!n)
		return;
	n->ev = *ev;
	n->next = NULL;
	pthread_mutex_lock(&ch->lock);
	if (ch->tail)
		ch->tail->next = n;
	else
		ch->head = n;
	ch->tail = n;
	if (write(ch->efd, &one, sizeof(one)) < 0) {
		/* cannot overflow: one per event */
	}
	pthread_mutex_unlock(&ch->lock);
}

static int soft_channel_get_event(struct fab_channel *fch, struct fab_cm_event *ev)
{
	struct soft_channel *ch = (struct soft_channel *)fch;
	struct soft_evnode *n;
	uint64_t v;

	pthread_mutex_lock(&ch->lock);
	n = ch->head;
	if (!n) {
		pthread_mutex_unlock(&ch->lock);
		return -EAGAIN;
	}
	ch->head = n->next;
	if (!ch->head) {
		ch->tail = NULL;
		if (read(ch->efd, &v, sizeof(v)) < 0) {
			/* already clear */
		}
	}
	pthread_mutex_unlock(&ch->lock);
	*ev = n->ev;
	free(n);
	return 0;
}

/* Drop queued events about a conn being destroyed ("no events follow"). */
static void channel_forget(struct soft_channel *ch, struct soft_conn *c)
{
	struct soft_evnode **pp, *n;
	uint64_t v;

	pthread_mutex_lock(&ch->lock);
	for (pp = &ch->head; (n = *pp);) {
		if (n->ev.conn == (struct fab_conn *)c) {
			*pp = n->next;
			free(n);
		} else {
			pp = &n->next;
		}
	}
	ch->tail = NULL;
	for (n = ch->head; n; n = n->next)
		ch->tail = n;
	if (!ch->head && read(ch->efd, &v, sizeof(v)) < 0) {
		/* already clear */
	}
	pthread_mutex_unlock(&ch->lock);
}

void soft_cm_deliver_locked(struct soft_conn *c, enum fab_cm_event_type type, int status,
			    const void *pdata, uint8_t plen, uint8_t rr, uint8_t id)
{
	struct fab_cm_event ev = {
	    .type = type,
	    .conn = (struct fab_conn *)c,
	    .listener = (struct fab_listener *)c->listener,
	    .status = status,
	    .private_data_len = plen,
	    .responder_resources = rr,
	    .initiator_depth = id,
	};

	if (type == FAB_CM_DISCONNECTED) {
		if (c->disc_event)
			return;
		c->disc_event = true;
	}
	if (plen)
		memcpy(ev.private_data, pdata, plen);
	soft_event_push(c->ch, &ev);
}

/* --- addresses ------------------------------------------------------------ */

struct soft_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	bool is_unix;
};

static int parse_addr(const char *addr, struct soft_addr *out, bool passive)
{
	char host[256], *port;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!addr)
		return fab_set_error(-EINVAL, "soft: no address");
	if (strncmp(addr, "unix:", 5) == 0) {
		struct sockaddr_un *sun = (struct sockaddr_un *)&out->ss;

		if (strlen(addr + 5) == 0 || strlen(addr + 5) >= sizeof(sun->sun_path))
			return fab_set_error(-EINVAL, "soft: bad unix path in \"%s\"", addr);
		sun->sun_family = AF_UNIX;
		strcpy(sun->sun_path, addr + 5);
		out->len = sizeof(*sun);
		out->is_unix = true;
		return 0;
	}
	if (strncmp(addr, "tcp:", 4) == 0)
		addr += 4;
	if (strlen(addr) >= sizeof(host))
		return fab_set_error(-EINVAL, "soft: address too long");
	strcpy(host, addr);
	port = strrchr(host, ':');
	if (!port)
		return fab_set_error(-EINVAL, "soft: \"%s\" has no port", addr);
	*port++ = '\0';
	if (host[0] == '[') {
		size_t l = strlen(host);

		if (l < 2 || host[l - 1] != ']')
			return fab_set_error(-EINVAL, "soft: bad IPv6 address \"%s\"", addr);
		host[l - 1] = '\0';
		memmove(host, host + 1, l - 1);
	}
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (rc)
		return fab_set_error(-EADDRNOTAVAIL, "soft: cannot resolve \"%s\": %s", addr,
				     gai_strerror(rc));
	memcpy(&out->ss, ai->ai_addr, ai->ai_addrlen);
	out->len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static void peer_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char h[INET6_ADDRSTRLEN] = "?";

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0) {
		snprintf(buf, len, "?");
		return;
	}
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s->sin_addr, h, sizeof(h));
		snprintf(buf, len, "%s:%u", h, ntohs(s->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &s->sin6_addr, h, sizeof(h));
		snprintf(buf, len, "[%s]:%u", h, ntohs(s->sin6_port));
	} else {
		snprintf(buf, len, "unix");
	}
}

static void tune_socket(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* fails on unix: fine */
}

/* --- connections ---------------------------------------------------------- */

static struct soft_conn *conn_alloc(struct soft_fabric *sf, struct soft_channel *ch)
{
	struct soft_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->h.fab = &sf->base;
	c->sf = sf;
	c->pd = sf->pd;
	c->ch = ch;
	c->fd = -1;
	pthread_mutex_init(&c->lock, NULL);
	{
		pthread_condattr_t ca;

		/* the I/O threads' idle waits are timed on the monotonic clock */
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_mutex_lock(&sf->lock);
	c->fault = sf->fault;
	pthread_mutex_unlock(&sf->lock);
	pthread_mutex_lock(&sf->reg_lock);
	c->reg_next = sf->conns;
	if (sf->conns)
		sf->conns->reg_prev = &c->reg_next;
	c->reg_prev = &sf->conns;
	sf->conns = c;
	pthread_mutex_unlock(&sf->reg_lock);
	return c;
}

static void conn_free(struct soft_conn *c)
{
	pthread_mutex_lock(&c->sf->reg_lock);
	*c->reg_prev = c->reg_next;
	if (c->reg_next)
		c->reg_next->reg_prev = c->reg_prev;
	pthread_mutex_unlock(&c->sf->reg_lock);
	if (c->fd >= 0)
		close(c->fd);
	soft_qp_free(c);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static int send_cm(int fd, uint8_t type, const struct fab_conn_param *p, const void *pdata,
		   uint8_t plen)
{
	struct {
		struct soft_hdr h;
		uint8_t pd[FAB_PRIVATE_DATA_MAX];
	} m;

	memset(&m, 0, sizeof(m));
	m.h.type = type;
	m.h.len = htole32(plen);
	if (p)
		m.h.a =
		    htole64((uint64_t)p->responder_resources | (uint64_t)p->initiator_depth << 8);
	m.h.b = htole32(SOFT_MAGIC);
	if (p)
		m.h.c = htole32(p->rnr_retry_count);
	if (plen)
		memcpy(m.pd, pdata, plen);
	return soft_io_full(fd, &m, sizeof(m.h) + plen, false) ? -EPIPE : 0;
}

/*
 * RPCRDMA_SOFT_SOURCE_ADDR=IP: an active tcp connection binds this source
 * address first (127.0.0.2 and up are all loopback; IPv6 ones must be
 * assigned), so tests can show the server peers that differ by address.
 * Used only when its family is the destination's. Unset: the kernel's choice.
 */
static int bind_source(int fd, const struct soft_addr *dst)
{
	const char *src = getenv("RPCRDMA_SOFT_SOURCE_ADDR");
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6};

	if (!src || !*src || dst->is_unix)
		return 0;
	if (dst->ss.ss_family == AF_INET && inet_pton(AF_INET, src, &sin.sin_addr) == 1)
		return bind(fd, (struct sockaddr *)&sin, sizeof(sin));
	if (dst->ss.ss_family == AF_INET6 && inet_pton(AF_INET6, src, &sin6.sin6_addr) == 1)
		return bind(fd, (struct sockaddr *)&sin6, sizeof(sin6));
	errno = EINVAL;
	return -1;
}

/* connect(2) bounded by SOFT_CONNECT_TIMEOUT_S, so an unreachable host cannot stall the caller. */
static int connect_timed(int fd, const struct soft_addr *sa)
{
	int fl = fcntl(fd, F_GETFL), err = 0, rc;
	socklen_t el = sizeof(err);
	struct pollfd p = {.fd = fd, .events = POLLOUT};

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	rc = connect(fd, (const struct sockaddr *)&sa->ss, sa->len);
	if (rc < 0 && (errno == EINPROGRESS || errno == EAGAIN)) {
		rc = poll(&p, 1, SOFT_CONNECT_TIMEOUT_S * 1000);
		if (rc == 0) {
			errno = ETIMEDOUT;
			rc = -1;
		} else if (rc > 0) {
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
			errno = err;
			rc = err ? -1 : 0;
		}
	}
	fcntl(fd, F_SETFL, fl);
	return rc;
}

static int soft_param_fit(struct soft_conn *c, const struct fab_conn_param *param,
			  struct fab_conn_param *out);

static int soft_connect(struct fab_fabric *fab, struct fab_channel *fch, const char *addr,
			struct fab_cq *send_cq, struct fab_cq *recv_cq,
			const struct fab_qp_caps *caps, const struct fab_conn_param *param,
			struct fab_conn **out)
{
	struct soft_fabric *sf = (struct soft_fabric *)fab;
	struct fab_conn_param fit;
	struct soft_conn *c;
	struct soft_addr sa;
	int rc;

	if (!fch || !caps || !out)
		return fab_set_error(-EINVAL, "soft: connect needs a channel, caps and out");
	rc = soft_present(sf);
	if (!rc)
		rc = parse_addr(addr, &sa, false);
	if (rc)
		return rc;
	c = conn_alloc(sf, (struct soft_channel *)fch);
	if (!c)
		return fab_set_error(-ENOMEM, "soft: out of memory for conn");
	rc = soft_qp_alloc(c, send_cq, recv_cq, caps);
	if (!rc)
		rc = soft_param_fit(c, param, &fit);
	if (rc) {
		conn_free(c);
		return rc;
	}
	param = param ? &fit : NULL;
	snprintf(c->peer, sizeof(c->peer), "%s", addr);
	c->fd = socket(sa.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		rc = fab_set_error(-errno, "soft: socket: %s", strerror(errno));
		conn_free(c);
		return rc;
	}
	/* Loopback and namespaces answer at once; failure is reported as an event. */
	if (bind_source(c->fd, &sa) < 0 || connect_timed(c->fd, &sa) < 0 ||
	    send_cm(c->fd, SOFT_CONN_REQ, param, param ? param->private_data : NULL,
		    param ? param->private_data_len : 0)) {
		int err = errno ? -errno : -ECONNREFUSED;

		fab_set_error(err, "soft: connect %s: %s", addr, strerror(-err));
		c->state = SOFT_S_CLOSED;
		pthread_mutex_lock(&c->lock);
		soft_cm_deliver_locked(c, FAB_CM_CONNECT_ERROR, err, NULL, 0, 0, 0);
		pthread_mutex_unlock(&c->lock);
		*out = (struct fab_conn *)c;
		return 0;
	}
	tune_socket(c->fd);
	/* IB CM: the RNR retry count a side sends is what the PEER uses for
	 * its Sends toward that side; ours governs how long Sends to us wait. */
	c->peer_rnr_retry = param ? param->rnr_retry_count : 0;
	c->state = SOFT_S_CONNECTING;
	rc = soft_io_start(c);
	if (rc) {
		conn_free(c);
		return fab_set_error(rc, "soft: cannot start connection threads");
	}
	*out = (struct fab_conn *)c;
	return 0;
}

static int soft_conn_create_qp(struct fab_conn *fc, struct fab_cq *send_cq, struct fab_cq *recv_cq,
			       const struct fab_qp_caps *caps)
{
	struct soft_conn *c = soft_conn(fc);

	if (c->has_qp || c->state != SOFT_S_REQ || !caps)
		return fab_set_error(-EINVAL, "soft: create_qp: not a fresh passive conn");
	return soft_qp_alloc(c, send_cq, recv_cq, caps);
}

static int soft_accept(struct fab_conn *fc, const struct fab_conn_param *param)
{
	struct soft_conn *c = soft_conn(fc);
	struct fab_conn_param fit;
	int rc;

	if (c->state != SOFT_S_REQ || !c->has_qp)
		return fab_set_error(-EINVAL, "soft: accept: no pending request or no QP");
	rc = soft_param_fit(c, param, &fit);
	if (rc)
		return rc;
	param = param ? &fit : NULL;
	rc = send_cm(c->fd, SOFT_CONN_REP, param, param ? param->private_data : NULL,
		     param ? param->private_data_len : 0);
	if (rc)
		return fab_set_error(rc, "soft: accept: peer went away");
	/* Queue ESTABLISHED before the reader can queue a DISCONNECTED. */
	pthread_mutex_lock(&c->lock);
	c->peer_rnr_retry = param ? param->rnr_retry_count : 0; /* see soft_connect */
	c->state = SOFT_S_EST;
	soft_cm_deliver_locked(c, FAB_CM_ESTABLISHED, 0, NULL, 0, 0, 0);
	pthread_mutex_unlock(&c->lock);
	rc = soft_io_start(c);
	if (rc) {
		c->state = SOFT_S_CLOSED;
		return fab_set_error(rc, "soft: cannot start connection threads");
	}
	return 0;
}

static int soft_reject(struct fab_conn *fc, const void *pdata, uint8_t len)
{
	struct soft_conn *c = soft_conn(fc);
	int rc;

	if (c->state != SOFT_S_REQ)
		return fab_set_error(-EINVAL, "soft: reject: no pending request");
	rc = send_cm(c->fd, SOFT_CONN_REJ, NULL, pdata, len);
	c->state = SOFT_S_CLOSED;
	shutdown(c->fd, SHUT_RDWR);
	return rc ? fab_set_error(rc, "soft: reject: peer went away") : 0;
}

static int soft_disconnect(struct fab_conn *fc)
{
	struct soft_conn *c = soft_conn(fc);

	pthread_mutex_lock(&c->lock);
	if (c->state == SOFT_S_EST || c->state == SOFT_S_CONNECTING) {
		bool est = c->state == SOFT_S_EST;

		c->state = SOFT_S_CLOSED;
		if (!c->dead)
			soft_ctl_push_locked(c, SOFT_DISC, 0, 0, NULL);
		soft_qp_error_locked(c, false);
		if (est)
			soft_cm_deliver_locked(c, FAB_CM_DISCONNECTED, 0, NULL, 0, 0, 0);
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static void soft_conn_destroy(struct fab_conn *fc)
{
	struct soft_conn *c = soft_conn(fc);

	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	soft_watch_forget(c);
	soft_io_wait_stopped(c);
	channel_forget(c->ch, c);
	if (c->has_qp) {
		soft_cq_forget(c->scq, c);
		soft_cq_forget(c->rcq, c);
	}
	conn_free(c);
}

static int soft_conn_cq_create(struct fab_conn *fc, int depth, struct fab_cq **out)
{
	return soft_cq_create(fc ? soft_conn(fc)->h.fab : NULL, depth, out);
}

static struct fab_pd *soft_conn_pd(struct fab_conn *fc)
{
	return (struct fab_pd *)soft_conn(fc)->pd;
}

static int soft_conn_own_pd(struct fab_conn *fc, struct fab_pd **out)
{
	struct soft_conn *c = soft_conn(fc);
	struct soft_pd *pd;

	if (c->has_qp || c->pd != c->sf->pd || c->state != SOFT_S_REQ)
		return fab_set_error(-EINVAL, "soft: own PD: not a fresh passive conn");
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return fab_set_error(-ENOMEM, "soft: out of memory for PD");
	pd->fab = &c->sf->base;
	pd->own = true;
	c->pd = pd;
	*out = (struct fab_pd *)pd;
	return 0;
}

static void soft_pd_free(struct fab_pd *fpd)
{
	struct soft_pd *pd = (struct soft_pd *)fpd;

	if (pd->own) /* the fabric's own lives as long as the fabric */
		free(pd);
}

static const char *soft_conn_peer(const struct fab_conn *fc)
{
	return ((const struct soft_conn *)fc)->peer;
}

/* A unix-socket peer has no IP identity: present 127.0.0.1 with a port
 * derived from the socket, unique among open connections. */
static void soft_addr_of(int fd, bool peer, struct sockaddr_storage *out)
{
	socklen_t sl = sizeof(*out);
	int ret;

	memset(out, 0, sizeof(*out));
	ret = peer ? getpeername(fd, (struct sockaddr *)out, &sl)
		   : getsockname(fd, (struct sockaddr *)out, &sl);
	if (ret == 0 && (out->ss_family == AF_INET || out->ss_family == AF_INET6))
		return;
	memset(out, 0, sizeof(*out));
	struct sockaddr_in *sin = (struct sockaddr_in *)out;

	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin->sin_port = htons(peer ? (uint16_t)(40000 + fd) : 20049);
}

static int soft_conn_addrs(const struct fab_conn *fc, struct sockaddr_storage *local,
			   struct sockaddr_storage *remote)
{
	const struct soft_conn *c = (const struct soft_conn *)fc;

	if (local)
		soft_addr_of(c->fd, false, local);
	if (remote)
		soft_addr_of(c->fd, true, remote);
	return 0;
}

/* --- listener -------------------------------------------------------------- */

/* A complete CONN_REQ on @fd, checked (fab_soft_accept.c): the connection
 * and its CONNECT_REQUEST. */
void soft_listener_request(struct soft_listener *l, int fd, const struct soft_hdr *h,
			   const uint8_t *pd)
{
	struct soft_conn *c;
	uint64_t a = le64toh(h->a);

	tune_socket(fd);
	c = conn_alloc((struct soft_fabric *)l->fab, l->ch);
	if (!c) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->listener = l;
	c->state = SOFT_S_REQ;
	peer_name(fd, c->peer, sizeof(c->peer));
	pthread_mutex_lock(&c->lock);
	/* Receiver's view, as rdma_cm reports it: the Reads we may issue are
	 * the peer's responder_resources (fab.h). */
	soft_cm_deliver_locked(c, FAB_CM_CONNECT_REQUEST, 0, pd, (uint8_t)le32toh(h->len),
			       (uint8_t)(a >> 8), (uint8_t)a);
	pthread_mutex_unlock(&c->lock);
}

static int soft_listen(struct fab_fabric *fab, struct fab_channel *ch, const char *addr,
		       int backlog, struct fab_listener **out)
{
	struct soft_listener *l;
	struct soft_addr sa;
	int rc, one = 1;

	if (!ch || !out)
		return fab_set_error(-EINVAL, "soft: listen needs a channel");
	rc = soft_present((struct soft_fabric *)fab);
	if (rc)
		return rc;
	rc = parse_addr(addr, &sa, true);
	if (rc)
		return rc;
	l = calloc(1, sizeof(*l));
	if (!l)
		return fab_set_error(-ENOMEM, "soft: out of memory for listener");
	l->fab = fab;
	l->ch = (struct soft_channel *)ch;
	l->wake = eventfd(0, EFD_CLOEXEC);
	l->fd = socket(sa.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0 || l->wake < 0) {
		rc = fab_set_error(-errno, "soft: socket: %s", strerror(errno));
		goto fail;
	}
	if (sa.is_unix) {
		snprintf(l->path, sizeof(l->path), "%s", ((struct sockaddr_un *)&sa.ss)->sun_path);
		unlink(l->path);
	} else {
		setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	}
	if (bind(l->fd, (struct sockaddr *)&sa.ss, sa.len) < 0) {
		rc = fab_set_error(-errno, "soft: bind %s: %s", addr, strerror(errno));
		l->path[0] = '\0';
		goto fail;
	}
	/* The kernel caps the backlog at net.core.somaxconn. */
	if (listen(l->fd, backlog > 0 ? backlog : 16) < 0) {
		rc = fab_set_error(-errno, "soft: listen %s: %s", addr, strerror(errno));
		goto fail;
	}
	/* The accept thread never blocks in accept (fab_soft_accept.c). */
	fcntl(l->fd, F_SETFL, fcntl(l->fd, F_GETFL) | O_NONBLOCK);
	if (pthread_create(&l->thread, NULL, soft_accept_thread, l)) {
		rc = fab_set_error(-EAGAIN, "soft: cannot start listener thread");
		goto fail;
	}
	pthread_mutex_lock(&((struct soft_fabric *)fab)->reg_lock);
	l->next = ((struct soft_fabric *)fab)->listeners;
	((struct soft_fabric *)fab)->listeners = l;
	pthread_mutex_unlock(&((struct soft_fabric *)fab)->reg_lock);
	*out = (struct fab_listener *)l;
	return 0;
fail:
	if (l->path[0])
		unlink(l->path);
	if (l->fd >= 0)
		close(l->fd);
	if (l->wake >= 0)
		close(l->wake);
	free(l);
	return rc;
}

static int soft_device_limits(struct fab_fabric *fab, struct fab_limits *out)
{
	*out = soft_lim((struct soft_fabric *)fab);
	return 0;
}

static int soft_listener_limits(struct fab_listener *fl, struct fab_limits *out)
{
	return soft_device_limits(((struct soft_listener *)fl)->fab, out);
}

static int soft_conn_limits(struct fab_conn *fc, struct fab_limits *out)
{
	struct soft_conn *c = soft_conn(fc);

	*out = c->has_qp ? c->lim : soft_lim(c->sf);
	return 0;
}

/*
 * A connection's RDMA Read depths, as librdmacm checks them: 255 means the
 * device's own, anything else beyond it is refused (-EINVAL). iWARP has no
 * RNR retry: a Send that finds no receive is fatal whatever the peer asked.
 */
static int soft_param_fit(struct soft_conn *c, const struct fab_conn_param *param,
			  struct fab_conn_param *out)
{
	uint8_t max = (uint8_t)c->lim.max_rd_atom;

	if (!param)
		return 0;
	*out = *param;
	if (out->initiator_depth == SOFT_RD_ATOM_DEVICE)
		out->initiator_depth = max;
	if (out->responder_resources == SOFT_RD_ATOM_DEVICE)
		out->responder_resources = max;
	if (out->initiator_depth > max || out->responder_resources > max)
		return fab_set_error(-EINVAL,
				     "soft: RDMA Read depth %u/%u, the device (%s) takes %u",
				     out->initiator_depth, out->responder_resources,
				     c->lim.device, max);
	if (c->lim.transport == FAB_TRANSPORT_IWARP)
		out->rnr_retry_count = 0;
	return 0;
}

static void soft_listener_destroy(struct fab_listener *fl)
{
	struct soft_listener *l = (struct soft_listener *)fl;
	struct soft_fabric *sf = (struct soft_fabric *)l->fab;
	struct soft_listener **pp;
	uint64_t one = 1;

	pthread_mutex_lock(&sf->reg_lock);
	for (pp = &sf->listeners; *pp; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	}
	pthread_mutex_unlock(&sf->reg_lock);
	if (write(l->wake, &one, sizeof(one)) < 0) {
		/* cannot fail on a fresh eventfd */
	}
	pthread_join(l->thread, NULL);
	close(l->fd);
	close(l->wake);
	if (l->path[0])
		unlink(l->path);
	free(l);
}

/* --- fabric and faults ------------------------------------------------------ */

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return (errno || end == s || *end) ? -EINVAL : 0;
}

int fab_soft_fault_parse(const char *spec, struct fab_soft_fault *out)
{
	char buf[512], *tok, *save = NULL;

	memset(out, 0, sizeof(*out));
	if (!spec)
		return 0;
	if (strlen(spec) >= sizeof(buf))
		return fab_set_error(-EINVAL, "soft: fault spec too long");
	strcpy(buf, spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		uint64_t v;

		if (!eq || parse_u64(eq + 1, &v))
			return fab_set_error(-EINVAL, "soft: bad fault item \"%s\"", tok);
		*eq = '\0';
		if (!strcmp(tok, "drop_after_bytes"))
			out->drop_after_bytes = v;
		else if (!strcmp(tok, "drop_after_wrs"))
			out->drop_after_wrs = v;
		else if (!strcmp(tok, "fail_next_read"))
			out->fail_next_read = v != 0;
		else if (!strcmp(tok, "fail_next_write"))
			out->fail_next_write = v != 0;
		else if (!strcmp(tok, "delay_us") && v <= 10000000)
			out->delay_us = (uint32_t)v;
		else if (!strcmp(tok, "read_delay_ms") && v <= 60000)
			out->read_delay_ms = (uint32_t)v;
		else if (!strcmp(tok, "dereg_delay_ms") && v <= 60000)
			out->dereg_delay_ms = (uint32_t)v;
		else
			return fab_set_error(-EINVAL, "soft: unknown fault \"%s\"", tok);
	}
	return 0;
}

int fab_soft_fault_set_fabric(struct fab_fabric *fab, const struct fab_soft_fault *f)
{
	struct soft_fabric *sf = (struct soft_fabric *)fab;

	if (!fab || fab->ops != &fab_soft_ops || !f)
		return fab_set_error(-EINVAL, "fault injection needs the soft provider");
	pthread_mutex_lock(&sf->lock);
	sf->fault = *f;
	pthread_mutex_unlock(&sf->lock);
	return 0;
}

int fab_soft_fault_set(struct fab_conn *fc, const struct fab_soft_fault *f)
{
	struct soft_conn *c = soft_conn(fc);

	if (!fc || fab_of(fc)->ops != &fab_soft_ops || !f)
		return fab_set_error(-EINVAL, "fault injection needs the soft provider");
	pthread_mutex_lock(&c->lock);
	c->fault = *f;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int fab_soft_last_read_sink(struct fab_fabric *fab, uint64_t *addr, uint32_t *key)
{
	struct soft_fabric *sf = (struct soft_fabric *)fab;

	if (!fab || fab->ops != &fab_soft_ops)
		return fab_set_error(-EINVAL, "needs the soft provider");
	*key = atomic_load(&sf->last_read_sink_key);
	*addr = atomic_load(&sf->last_read_sink_addr);
	return *addr ? 0 : -EINVAL;
}

int fab_soft_device_remove(struct fab_fabric *fab)
{
	struct soft_fabric *sf = (struct soft_fabric *)fab;

	if (!fab || fab->ops != &fab_soft_ops)
		return -EINVAL;
	pthread_mutex_lock(&sf->reg_lock);
	atomic_store(&sf->removed, true);
	for (struct soft_listener *l = sf->listeners; l; l = l->next) {
		struct fab_cm_event ev = {.type = FAB_CM_DEVICE_REMOVAL,
					  .listener = (struct fab_listener *)l,
					  .status = -ENODEV};

		if (atomic_exchange(&l->dead, true))
			continue;
		soft_event_push(l->ch, &ev);
	}
	/*
	 * First choose every conn the removal takes and stop their
	 * DISCONNECTED events: a peer on this same fabric hears our DISC
	 * below, and must report the removal, not a disconnect.
	 */
	for (struct soft_conn *c = sf->conns; c; c = c->reg_next) {
		pthread_mutex_lock(&c->lock);
		c->dev_removed = !c->stop && (c->state == SOFT_S_EST || c->state == SOFT_S_CONNECTING ||
					      c->state == SOFT_S_REQ);
		if (c->dev_removed) {
			c->dev_removed_req = c->state == SOFT_S_REQ;
			c->disc_event = true;
		}
		pthread_mutex_unlock(&c->lock);
	}
	for (struct soft_conn *c = sf->conns; c; c = c->reg_next) {
		struct fab_cm_event ev = {.type = FAB_CM_DEVICE_REMOVAL,
					  .conn = (struct fab_conn *)c,
					  .listener = (struct fab_listener *)c->listener,
					  .status = -ENODEV};
		enum soft_state was;

		if (!c->dev_removed)
			continue;
		pthread_mutex_lock(&c->lock);
		/* As a dying HCA: the QP goes to error, the peer loses the link.
		 * A request still queued (REQ) is refused: its owner must not
		 * accept it (fab_accept fails). */
		was = c->state;
		c->state = SOFT_S_CLOSED;
		if (!c->dead && (was == SOFT_S_EST || was == SOFT_S_CONNECTING))
			soft_ctl_push_locked(c, SOFT_DISC, 0, 0, NULL);
		soft_qp_error_locked(c, false);
		if (!c->dev_removed_req)
			soft_event_push(c->ch, &ev);
		else if (c->fd >= 0)
			shutdown(c->fd, SHUT_RDWR);
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&sf->reg_lock);
	return 0;
}

int fab_soft_device_restore(struct fab_fabric *fab)
{
	if (!fab || fab->ops != &fab_soft_ops)
		return -EINVAL;
	atomic_store(&((struct soft_fabric *)fab)->removed, false);
	return 0;
}

static void soft_close(struct fab_fabric *fab)
{
	struct soft_fabric *sf = (struct soft_fabric *)fab;

	soft_watch_fini(sf);
	pthread_mutex_destroy(&sf->lock);
	pthread_mutex_destroy(&sf->reg_lock);
	free(sf->mrs);
	free(sf->pd);
	free(sf);
}

int fab_soft_open(struct fab_fabric **out)
{
	struct soft_fabric *sf = calloc(1, sizeof(*sf));
	const char *env = getenv("RPCRDMA_SOFT_FAULT");
	int rc;

	if (!sf)
		return fab_set_error(-ENOMEM, "soft: out of memory");
	sf->base.ops = &fab_soft_ops;
	sf->pd = calloc(1, sizeof(*sf->pd));
	if (!sf->pd) {
		free(sf);
		return fab_set_error(-ENOMEM, "soft: out of memory");
	}
	sf->pd->fab = &sf->base;
	pthread_mutex_init(&sf->lock, NULL);
	pthread_mutex_init(&sf->reg_lock, NULL);
	if (soft_watch_init(sf)) {
		soft_close(&sf->base);
		return fab_set_error(-EAGAIN, "soft: cannot start the idle watcher");
	}
	if (env && *env) {
		rc = fab_soft_fault_parse(env, &sf->fault);
		if (rc) {
			soft_close(&sf->base);
			return rc;
		}
	}
	env = getenv("RPCRDMA_SOFT_PROFILE");
	if (fab_soft_profile(env, &sf->lim)) {
		rc = fab_set_error(-EINVAL, "soft: RPCRDMA_SOFT_PROFILE=%s: no such device profile",
				   env);
		soft_close(&sf->base);
		return rc;
	}
	sf->memlock = sf->lim.memlock_charged;
	*out = &sf->base;
	return 0;
}

const struct fab_ops fab_soft_ops = {
    .name = "soft",
    .caps = 0,
    .close = soft_close,
    .channel_create = soft_channel_create,
    .channel_destroy = soft_channel_destroy,
    .channel_fd = soft_channel_fd,
    .channel_get_event = soft_channel_get_event,
    .listen = soft_listen,
    .listener_destroy = soft_listener_destroy,
    .listener_limits = soft_listener_limits,
    .conn_limits = soft_conn_limits,
    .device_limits = soft_device_limits,
    .connect = soft_connect,
    .conn_create_qp = soft_conn_create_qp,
    .accept = soft_accept,
    .reject = soft_reject,
    .disconnect = soft_disconnect,
    .conn_destroy = soft_conn_destroy,
    .conn_pd = soft_conn_pd,
    .conn_own_pd = soft_conn_own_pd,
    .pd_free = soft_pd_free,
    .conn_cq_create = soft_conn_cq_create,
    .conn_peer = soft_conn_peer,
    .conn_addrs = soft_conn_addrs,
    .pd_get = soft_pd_get,
    .mr_reg = soft_mr_reg,
    .mr_dereg = soft_mr_dereg,
    .cq_create = soft_cq_create,
    .cq_destroy = soft_cq_destroy,
    .cq_fd = soft_cq_fd,
    .cq_get_event = soft_cq_get_event,
    .cq_arm = soft_cq_arm,
    .cq_poll = soft_cq_poll,
    .post_send = soft_post_send,
    .post_recv = soft_post_recv,
    .srq_create = soft_srq_create,
    .srq_destroy = soft_srq_destroy,
    .post_srq_recv = soft_post_srq_recv,
};
