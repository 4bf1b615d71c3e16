// SPDX-License-Identifier: MIT
/*
 * fab_verbs_cm.c - the "verbs" provider's connection management on
 * librdmacm: the fabric (device discovery), event channels that also carry
 * the devices' asynchronous events, listeners, connect (address and route
 * resolution handled internally), accept / reject / disconnect, teardown.
 *
 * rdma-core rules kept here: every CM event is copied out (private data
 * included) and acked before the caller can destroy the id it concerns; a QP
 * is moved to error (flushing its work requests) before it is destroyed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "fabric/fab_verbs_int.h"

static int parse_addr(const char *addr, struct sockaddr_storage *ss, bool passive)
{
	char host[256], *port;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai;
	int rc;

	if (!addr || strlen(addr) >= sizeof(host))
		return fab_set_error(-EINVAL, "verbs: bad address");
	strcpy(host, addr);
	port = strrchr(host, ':');
	if (!port)
		return fab_set_error(-EINVAL, "verbs: \"%s\" has no port", addr);
	*port++ = '\0';
	if (host[0] == '[') {
		size_t l = strlen(host);

		if (l < 2 || host[l - 1] != ']')
			return fab_set_error(-EINVAL, "verbs: bad IPv6 address \"%s\"", addr);
		host[l - 1] = '\0';
		memmove(host, host + 1, l - 1);
	}
	if (passive)
		hints.ai_flags |= AI_PASSIVE;
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (rc)
		return fab_set_error(-EADDRNOTAVAIL, "verbs: cannot resolve \"%s\": %s", addr,
				     gai_strerror(rc));
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

static void peer_name(struct rdma_cm_id *id, char *buf, size_t len)
{
	struct sockaddr *sa = rdma_get_peer_addr(id);
	char h[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, h, sizeof(h));
		snprintf(buf, len, "%s:%u", h, ntohs(rdma_get_dst_port(id)));
	} else if (sa->sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, h, sizeof(h));
		snprintf(buf, len, "[%s]:%u", h, ntohs(rdma_get_dst_port(id)));
	} else {
		snprintf(buf, len, "?");
	}
}

/* --- channel -------------------------------------------------------------- */

static int vb_channel_create(struct fab_fabric *fab, struct fab_channel **out)
{
	struct vb_fabric *vf = (struct vb_fabric *)fab;
	struct vb_channel *ch = calloc(1, sizeof(*ch));
	struct epoll_event ee = {.events = EPOLLIN};
	int fl;

	if (!ch)
		return fab_set_error(-ENOMEM, "verbs: out of memory");
	ch->fab = fab;
	ch->ec = rdma_create_event_channel();
	if (!ch->ec) {
		int err = errno ? -errno : -ENODEV;

		free(ch);
		return fab_set_error(err, "verbs: rdma_create_event_channel: %s", strerror(-err));
	}
	fl = fcntl(ch->ec->fd, F_GETFL);
	fcntl(ch->ec->fd, F_SETFL, fl | O_NONBLOCK);
	ch->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ch->epfd < 0) {
		rdma_destroy_event_channel(ch->ec);
		free(ch);
		return fab_set_error(-errno, "verbs: epoll_create1 failed");
	}
	epoll_ctl(ch->epfd, EPOLL_CTL_ADD, ch->ec->fd, &ee);
	ch->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ch->tfd >= 0) {
		struct itimerspec its = {
		    .it_interval = {.tv_sec = VB_DEV_CHECK_MS / 1000,
				    .tv_nsec = (VB_DEV_CHECK_MS % 1000) * 1000000L}};

		its.it_value = its.it_interval;
		timerfd_settime(ch->tfd, 0, &its, NULL);
		epoll_ctl(ch->epfd, EPOLL_CTL_ADD, ch->tfd, &ee);
	}
	pthread_mutex_lock(&vf->lock);
	for (int i = 0; vf->list && vf->list[i]; i++)
		epoll_ctl(ch->epfd, EPOLL_CTL_ADD, vf->list[i]->async_fd, &ee);
	ch->next = vf->chans;
	vf->chans = ch;
	pthread_mutex_unlock(&vf->lock);
	*out = (struct fab_channel *)ch;
	return 0;
}

static void vb_channel_destroy(struct fab_channel *fch)
{
	struct vb_channel *ch = (struct vb_channel *)fch;
	struct vb_fabric *vf = (struct vb_fabric *)ch->fab;

	pthread_mutex_lock(&vf->lock);
	for (struct vb_channel **pp = &vf->chans; *pp; pp = &(*pp)->next) {
		if (*pp == ch) {
			*pp = ch->next;
			break;
		}
	}
	pthread_mutex_unlock(&vf->lock);
	if (ch->tfd >= 0)
		close(ch->tfd);
	close(ch->epfd);
	rdma_destroy_event_channel(ch->ec);
	free(ch);
}

static int vb_channel_fd(const struct fab_channel *ch)
{
	return ((const struct vb_channel *)ch)->epfd;
}

static struct vb_conn *conn_alloc(struct vb_fabric *vf, struct vb_channel *ch)
{
	struct vb_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->h.fab = &vf->base;
	c->kind = VB_CONN;
	c->vf = vf;
	c->ch = ch;
	return c;
}

static void fill_conn_event(struct fab_cm_event *ev, const struct rdma_cm_event *e)
{
	uint8_t len = e->param.conn.private_data_len;

	if (len > FAB_PRIVATE_DATA_MAX)
		len = FAB_PRIVATE_DATA_MAX;
	if (!e->param.conn.private_data)
		len = 0;
	memcpy(ev->private_data, e->param.conn.private_data, len);
	ev->private_data_len = len;
	ev->responder_resources = e->param.conn.responder_resources;
	ev->initiator_depth = e->param.conn.initiator_depth;
}

/* The active side's internal steps: route, then QP + rdma_connect. */
static int active_step(struct vb_conn *c, enum rdma_cm_event_type t)
{
	int rc;

	if (t == RDMA_CM_EVENT_ADDR_RESOLVED)
		return rdma_resolve_route(c->id, VB_RESOLVE_MS) ? -errno : 0;
	rc = vb_create_qp(c, c->scq, c->rcq, &c->caps);
	if (rc)
		return rc;
	c->param.private_data = c->pdata;
	return rdma_connect(c->id, &c->param) ? -errno : 0;
}

/* Translate one CM event; returns 1 if *ev is for the caller, 0 if internal. */
static int translate_cm(struct vb_channel *ch, struct rdma_cm_event *e, struct fab_cm_event *ev,
			struct rdma_cm_id **orphan)
{
	struct vb_fabric *vf = (struct vb_fabric *)ch->fab;
	void *ctx = e->id->context;
	struct vb_conn *c = ctx && ((struct vb_conn *)ctx)->kind == VB_CONN ? ctx : NULL;
	int rc;

	memset(ev, 0, sizeof(*ev));
	ev->conn = (struct fab_conn *)c;
	ev->status = e->status;
	switch (e->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		c = conn_alloc(vf, ch);
		if (!c) {
			rdma_reject(e->id, NULL, 0);
			*orphan = e->id; /* destroyed once the event is acked */
			return 0;
		}
		c->id = e->id;
		c->l = e->listen_id->context;
		e->id->context = c;
		peer_name(e->id, c->peer, sizeof(c->peer));
		ev->type = FAB_CM_CONNECT_REQUEST;
		ev->conn = (struct fab_conn *)c;
		ev->listener = (struct fab_listener *)c->l;
		fill_conn_event(ev, e);
		return 1;
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (!c)
			return 0;
		rc = active_step(c, e->event);
		if (!rc)
			return 0;
		fab_set_error(rc, "verbs: connect to %s failed: %s", c->peer, strerror(-rc));
		ev->type = FAB_CM_CONNECT_ERROR;
		ev->status = rc;
		return 1;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		ev->type = FAB_CM_CONNECT_ERROR;
		ev->status = e->status < 0 ? e->status : -EHOSTUNREACH;
		return c != NULL;
	case RDMA_CM_EVENT_REJECTED:
		ev->type = FAB_CM_REJECTED;
		ev->status = -ECONNREFUSED;
		fill_conn_event(ev, e);
		return c != NULL;
	case RDMA_CM_EVENT_ESTABLISHED:
		ev->type = FAB_CM_ESTABLISHED;
		if (c && c->l)
			ev->listener = (struct fab_listener *)c->l;
		fill_conn_event(ev, e);
		return c != NULL;
	case RDMA_CM_EVENT_DISCONNECTED:
		/*
		 * On IB CM (and RoCE) the peer's DREQ lands here: the kernel
		 * does not answer it, and the side that disconnected gets its
		 * own DISCONNECTED only when our DREP arrives (or after the
		 * DREQ times out, many seconds later). Answer it now, as every
		 * rdma_cm consumer must; this also moves our QP to error, so
		 * its work requests flush, as on the side that disconnected.
		 */
		if (c && !c->disconnecting) {
			c->disconnecting = true;
			rdma_disconnect(e->id);
		}
		ev->type = FAB_CM_DISCONNECTED;
		return c != NULL;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* The kernel already destroyed its side of the id; librdmacm
		 * closes the device once every id, QP, MR and PD on it is gone. */
		atomic_store(&vf->stale, true);
		ev->type = FAB_CM_DEVICE_REMOVAL;
		ev->status = -ENODEV;
		if (c && c->qp) {
			struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

			/* Flush what is posted: no DREQ will ever do it. */
			c->disconnecting = true;
			ibv_modify_qp(c->qp, &a, IBV_QP_STATE);
		}
		if (!c && ctx)
			ev->listener = ctx;
		return 1;
	default:
		return 0; /* TIMEWAIT_EXIT, ADDR_CHANGE, ... */
	}
}

/*
 * QP fatal and device fatal async events become CM events. A device's async
 * events are read by whichever channel gets there first: a device fatal one
 * is kept in vf->dead, so every other channel reports it too (check_devices).
 */
static int poll_async(struct vb_channel *ch, struct fab_cm_event *ev)
{
	struct vb_fabric *vf = (struct vb_fabric *)ch->fab;

	for (int i = 0; vf->list && vf->list[i]; i++) {
		struct ibv_async_event ae;
		int out = 0;

		while (!out && ibv_get_async_event(vf->list[i], &ae) == 0) {
			memset(ev, 0, sizeof(*ev));
			switch (ae.event_type) {
			case IBV_EVENT_QP_FATAL:
			case IBV_EVENT_QP_REQ_ERR:
			case IBV_EVENT_QP_ACCESS_ERR:
				ev->type = FAB_CM_QP_ERROR;
				ev->conn = ae.element.qp->qp_context;
				ev->status = -EIO;
				out = 1;
				break;
			case IBV_EVENT_DEVICE_FATAL:
				/* A device that can disassociate (mlx5) says so
				 * this way; every object on it is dead. */
				atomic_store(&vf->stale, true);
				pthread_mutex_lock(&vf->lock);
				vf->dead |= 1u << (i & 31);
				ch->gone_reported |= 1u << (i & 31);
				pthread_mutex_unlock(&vf->lock);
				ev->type = FAB_CM_DEVICE_REMOVAL;
				ev->status = -ENODEV;
				out = 1;
				break;
			/* PORT_ERR (link down) is not a removal: connections
			 * fail by their own retries, and the port may come
			 * back under the same device. */
			default:
				break;
			}
			ibv_ack_async_event(&ae);
		}
		if (out)
			return 1;
	}
	return 0;
}

/*
 * A device whose driver cannot disassociate (rxe, most software devices)
 * is unregistered only after every process closed it, and until then it
 * sends neither a CM nor an async event to ids that are not bound to it (a
 * wildcard listener) - but its uverbs node goes away first. Look for that.
 */
static int check_devices(struct vb_channel *ch, struct fab_cm_event *ev)
{
	struct vb_fabric *vf = (struct vb_fabric *)ch->fab;
	uint64_t ticks;
	int out = 0;

	if (ch->tfd < 0 || read(ch->tfd, &ticks, sizeof(ticks)) != sizeof(ticks))
		return 0;
	pthread_mutex_lock(&vf->lock);
	for (int i = 0; vf->list && vf->list[i] && i < 32; i++) {
		struct ibv_device *d = vf->list[i]->device;

		if (ch->gone_reported & (1u << i))
			continue;
		if (!(vf->dead & (1u << i)) && access(d->dev_path, F_OK) == 0 &&
		    access(d->ibdev_path, F_OK) == 0)
			continue;
		vf->dead |= 1u << i;
		ch->gone_reported |= 1u << i;
		atomic_store(&vf->stale, true);
		memset(ev, 0, sizeof(*ev));
		ev->type = FAB_CM_DEVICE_REMOVAL;
		ev->status = -ENODEV;
		fab_set_error(-ENODEV, "verbs: device %s was removed", d->name);
		out = 1;
		break;
	}
	pthread_mutex_unlock(&vf->lock);
	return out;
}

static int vb_channel_get_event(struct fab_channel *fch, struct fab_cm_event *ev)
{
	struct vb_channel *ch = (struct vb_channel *)fch;
	struct rdma_cm_event *e;

	while (rdma_get_cm_event(ch->ec, &e) == 0) {
		struct rdma_cm_id *orphan = NULL;
		int mine = translate_cm(ch, e, ev, &orphan);

		/* Everything needed is copied; ack before anyone can destroy the id. */
		rdma_ack_cm_event(e);
		if (orphan)
			rdma_destroy_id(orphan);
		if (mine)
			return 0;
	}
	if (poll_async(ch, ev))
		return 0;
	if (check_devices(ch, ev))
		return 0;
	return -EAGAIN;
}

/*
 * After a removal, with nothing of the user's left on the dead device: drop
 * our PDs there and our hold on the old device list (librdmacm closes a
 * removed device when its last holder lets go, and only then can the kernel
 * finish unregistering it), then take the current list.
 */
static int vb_refresh(struct vb_fabric *vf)
{
	struct epoll_event ee = {.events = EPOLLIN};
	struct ibv_context **list;
	int n = 0;

	pthread_mutex_lock(&vf->lock);
	list = rdma_get_devices(&n);
	for (int i = 0; i < vf->ndev;) {
		bool live = false;
		int ret;

		for (int j = 0; list && list[j]; j++)
			live |= list[j] == vf->devs[i].ctx;
		if (live) {
			i++;
			continue;
		}
		ret = ibv_dealloc_pd(vf->devs[i].pd->pd);
		if (ret) {
			pthread_mutex_unlock(&vf->lock);
			if (list)
				rdma_free_devices(list);
			return fab_set_error(-ret,
					     "verbs: a removed device still holds our memory "
					     "registrations: %s",
					     strerror(ret));
		}
		free(vf->devs[i].pd);
		vf->devs[i] = vf->devs[--vf->ndev];
	}
	if (vf->list)
		rdma_free_devices(vf->list);
	vf->list = list;
	vf->dead = 0;
	for (struct vb_channel *ch = vf->chans; ch; ch = ch->next)
		ch->gone_reported = 0;
	for (int i = 0; list && list[i]; i++) {
		int fl = fcntl(list[i]->async_fd, F_GETFL);

		fcntl(list[i]->async_fd, F_SETFL, fl | O_NONBLOCK);
		for (struct vb_channel *ch = vf->chans; ch; ch = ch->next)
			epoll_ctl(ch->epfd, EPOLL_CTL_ADD, list[i]->async_fd, &ee);
	}
	atomic_store(&vf->stale, !list || n == 0);
	pthread_mutex_unlock(&vf->lock);
	if (!list || n == 0)
		return fab_set_error(-ENODEV, "verbs: no RDMA device");
	return 0;
}

/* --- listener / connect ------------------------------------------------------ */

static int vb_listen(struct fab_fabric *fab, struct fab_channel *fch, const char *addr, int backlog,
		     struct fab_listener **out)
{
	struct vb_channel *ch = (struct vb_channel *)fch;
	struct sockaddr_storage ss;
	struct vb_listener *l;
	int rc;

	if (atomic_load(&((struct vb_fabric *)fab)->stale)) {
		rc = vb_refresh((struct vb_fabric *)fab);
		if (rc)
			return rc;
	}
	rc = parse_addr(addr, &ss, true);
	if (rc)
		return rc;
	l = calloc(1, sizeof(*l));
	if (!l)
		return fab_set_error(-ENOMEM, "verbs: out of memory");
	l->h.fab = fab;
	l->kind = VB_LISTENER;
	l->ch = ch;
	if (rdma_create_id(ch->ec, &l->id, NULL, RDMA_PS_TCP)) {
		rc = fab_set_error(-errno, "verbs: rdma_create_id: %s", strerror(errno));
		free(l);
		return rc;
	}
	/* The id's context must tell listeners from conns: point at the kind field's owner. */
	l->id->context = l;
	if (rdma_bind_addr(l->id, (struct sockaddr *)&ss) ||
	    rdma_listen(l->id, backlog > 0 ? backlog : 16)) {
		rc = fab_set_error(-errno, "verbs: bind/listen %s: %s", addr, strerror(errno));
		rdma_destroy_id(l->id);
		free(l);
		return rc;
	}
	*out = (struct fab_listener *)l;
	return 0;
}

/* How @ctx's device carries RC: iWARP by its transport, else RoCE when its
 * first port's link layer is Ethernet. */
static enum fab_transport vb_transport(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;

	if (ctx->device->transport_type == IBV_TRANSPORT_IWARP)
		return FAB_TRANSPORT_IWARP;
	if (!ibv_query_port(ctx, 1, &pa) && pa.link_layer == IBV_LINK_LAYER_ETHERNET)
		return FAB_TRANSPORT_ROCE;
	return FAB_TRANSPORT_IB;
}

static uint32_t vb_attr(int v)
{
	return v > 0 ? (uint32_t)v : 0;
}

/* soft-iWARP's vendor id, "bmt" (the kernel's siw.h): its unsignalled work
 * requests go to TCP without a copy (fab_limits.unsignalled_zero_copy) */
#define SIW_VENDOR_ID 0x626d74

/* Fold one device's attributes into @out (the first sets them): each limit
 * the smaller, each feature only if every device has it. */
static int vb_limits_add(struct ibv_context *ctx, struct fab_limits *out, bool first)
{
	struct ibv_device_attr a;
	struct fab_limits d = {0};

	if (ibv_query_device(ctx, &a))
		return fab_set_error(-errno, "verbs: ibv_query_device(%s): %s",
				     ibv_get_device_name(ctx->device), strerror(errno));
	d.max_qp_wr = vb_attr(a.max_qp_wr);
	d.max_cqe = vb_attr(a.max_cqe);
	d.max_srq_wr = a.max_srq ? vb_attr(a.max_srq_wr) : 0;
	d.max_send_sge = d.max_recv_sge = vb_attr(a.max_sge);
	/* 0 from a provider that does not say: a Read then takes what a Write does */
	d.max_read_sge = a.max_sge_rd > 0 ? vb_attr(a.max_sge_rd) : d.max_send_sge;
	d.max_rd_atom = vb_attr(a.max_qp_init_rd_atom); /* our Reads: the initiator's side */
	d.send_with_inv = !!(a.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS);
	d.transport = vb_transport(ctx);
	d.max_inline = 0; /* a QP's inline size is known only once made; Sends here never inline */
	if (d.transport == FAB_TRANSPORT_IWARP && d.max_read_sge > 1)
		d.max_read_sge = 1; /* one tagged sink per Read on the wire */
	d.memlock_charged = !strncmp(ibv_get_device_name(ctx->device), "siw", 3);
	d.unsignalled_zero_copy = a.vendor_id == SIW_VENDOR_ID;
	if (first) {
		memcpy(d.device, out->device, sizeof(d.device)); /* the caller's name stays */
		*out = d;
		return 0;
	}
	uint32_t *dst[] = {&out->max_qp_wr, &out->max_cqe, &out->max_srq_wr, &out->max_send_sge,
			   &out->max_recv_sge, &out->max_read_sge, &out->max_rd_atom};
	const uint32_t have[] = {d.max_qp_wr, d.max_cqe, d.max_srq_wr, d.max_send_sge,
				 d.max_recv_sge, d.max_read_sge, d.max_rd_atom};

	for (size_t i = 0; i < sizeof(have) / sizeof(have[0]); i++)
		if (have[i] < *dst[i])
			*dst[i] = have[i];
	out->send_with_inv = out->send_with_inv && d.send_with_inv;
	out->memlock_charged = out->memlock_charged || d.memlock_charged;
	out->unsignalled_zero_copy = out->unsignalled_zero_copy || d.unsignalled_zero_copy;
	/* iWARP's rules are the stricter: they hold if any device needs them */
	if (d.transport == FAB_TRANSPORT_IWARP)
		out->transport = FAB_TRANSPORT_IWARP;
	return 0;
}

static int vb_conn_limits(struct fab_conn *fc, struct fab_limits *out)
{
	struct vb_conn *c = (struct vb_conn *)fc;

	if (!c->id || !c->id->verbs)
		return fab_set_error(-ENODEV, "verbs: connection has no device yet");
	snprintf(out->device, sizeof(out->device), "%s",
		 ibv_get_device_name(c->id->verbs->device));
	return vb_limits_add(c->id->verbs, out, true);
}

/* Every device librdmacm knows and is not gone, folded. */
static int vb_device_limits(struct fab_fabric *fab, struct fab_limits *out)
{
	struct vb_fabric *vf = (struct vb_fabric *)fab;
	char names[sizeof(out->device)] = "";
	size_t used = 0;
	int n = 0, rc = 0;

	pthread_mutex_lock(&vf->lock);
	for (int i = 0; !rc && vf->list && vf->list[i]; i++) {
		if (vf->dead & (1u << (i & 31)))
			continue;
		rc = vb_limits_add(vf->list[i], out, n == 0);
		if (used < sizeof(names))
			used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
						 n ? " " : "",
						 ibv_get_device_name(vf->list[i]->device));
		n++;
	}
	pthread_mutex_unlock(&vf->lock);
	if (rc)
		return rc;
	if (n == 0)
		return fab_set_error(-ENODEV, "verbs: no RDMA device");
	if (n == 1)
		snprintf(out->device, sizeof(out->device), "%s", names);
	else
		snprintf(out->device, sizeof(out->device), "%d devices (%.40s)", n, names);
	return 0;
}

/* A listener bound to a device's address accepts on that device only; a
 * wildcard one on any device librdmacm knows. */
static int vb_listener_limits(struct fab_listener *fl, struct fab_limits *out)
{
	struct vb_listener *l = (struct vb_listener *)fl;

	if (l->id->verbs) {
		snprintf(out->device, sizeof(out->device), "%s",
			 ibv_get_device_name(l->id->verbs->device));
		return vb_limits_add(l->id->verbs, out, true);
	}
	return vb_device_limits(l->h.fab, out);
}

static void vb_listener_destroy(struct fab_listener *fl)
{
	struct vb_listener *l = (struct vb_listener *)fl;

	rdma_destroy_id(l->id);
	free(l);
}

static int vb_connect(struct fab_fabric *fab, struct fab_channel *fch, const char *addr,
		      struct fab_cq *send_cq, struct fab_cq *recv_cq,
		      const struct fab_qp_caps *caps, const struct fab_conn_param *param,
		      struct fab_conn **out)
{
	struct vb_fabric *vf = (struct vb_fabric *)fab;
	struct vb_channel *ch = (struct vb_channel *)fch;
	struct sockaddr_storage ss;
	struct vb_conn *c;
	int rc;

	if (!caps || !send_cq || !recv_cq)
		return fab_set_error(-EINVAL, "verbs: connect needs CQs and caps");
	rc = parse_addr(addr, &ss, false);
	if (rc)
		return rc;
	c = conn_alloc(vf, ch);
	if (!c)
		return fab_set_error(-ENOMEM, "verbs: out of memory");
	snprintf(c->peer, sizeof(c->peer), "%s", addr);
	c->scq = (struct vb_cq *)send_cq;
	c->rcq = (struct vb_cq *)recv_cq;
	c->caps = *caps;
	if (param) {
		c->param.private_data_len = param->private_data_len;
		if (param->private_data_len)
			memcpy(c->pdata, param->private_data, param->private_data_len);
		c->param.responder_resources = param->responder_resources;
		c->param.initiator_depth = param->initiator_depth;
		c->param.rnr_retry_count = param->rnr_retry_count;
		c->param.retry_count = param->retry_count;
	}
	c->param.private_data = c->pdata;
	if (rdma_create_id(ch->ec, &c->id, c, RDMA_PS_TCP)) {
		rc = fab_set_error(-errno, "verbs: rdma_create_id: %s", strerror(errno));
		free(c);
		return rc;
	}
	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&ss, VB_RESOLVE_MS)) {
		rc =
		    fab_set_error(-errno, "verbs: rdma_resolve_addr %s: %s", addr, strerror(errno));
		rdma_destroy_id(c->id);
		free(c);
		return rc;
	}
	*out = (struct fab_conn *)c;
	return 0;
}

static int vb_conn_create_qp(struct fab_conn *fc, struct fab_cq *send_cq, struct fab_cq *recv_cq,
			     const struct fab_qp_caps *caps)
{
	struct vb_conn *c = (struct vb_conn *)fc;

	if (c->qp || !caps || !send_cq || !recv_cq)
		return fab_set_error(-EINVAL, "verbs: create_qp: bad arguments");
	return vb_create_qp(c, (struct vb_cq *)send_cq, (struct vb_cq *)recv_cq, caps);
}

/* The IB encoding of an RNR NAK timer (IBTA table 45): the smallest code that
 * waits at least @us; code 0 means the longest, 655.36 ms. */
static uint8_t vb_rnr_timer_code(uint32_t us)
{
	static const uint32_t ten_us[32] = {
		65536, 1,    2,	   3,	 4,    6,    8,	    12,	   16,	  24,	 32,
		48,    64,   96,   128,	 192,  256,  384,   512,   768,	  1024,	 1536,
		2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};

	for (uint8_t code = 1; code < 32; code++)
		if ((uint64_t)ten_us[code] * 10 >= us)
			return code;
	return 0;
}

static int vb_accept(struct fab_conn *fc, const struct fab_conn_param *param)
{
	struct vb_conn *c = (struct vb_conn *)fc;
	struct rdma_conn_param p = {0};

	if (param) {
		p.private_data = param->private_data;
		p.private_data_len = param->private_data_len;
		p.responder_resources = param->responder_resources;
		p.initiator_depth = param->initiator_depth;
		p.rnr_retry_count = param->rnr_retry_count;
		p.retry_count = param->retry_count;
	}
	if (rdma_accept(c->id, &p))
		return fab_set_error(-errno, "verbs: rdma_accept: %s", strerror(errno));
	/* rdma_accept left the QP in RTS with the CM's RNR timer; RTS->RTS may
	 * change it. Not fatal: a failure only makes RNR retries slow. */
	if (param && param->rnr_timer_us && c->qp) {
		struct ibv_qp_attr a = {.min_rnr_timer = vb_rnr_timer_code(param->rnr_timer_us)};
		int ret = ibv_modify_qp(c->qp, &a, IBV_QP_MIN_RNR_TIMER);

		if (ret && vb_debug())
			fprintf(stderr, "verbs: setting the RNR timer: %s\n", strerror(ret));
	}
	return 0;
}

static int vb_reject(struct fab_conn *fc, const void *pdata, uint8_t len)
{
	struct vb_conn *c = (struct vb_conn *)fc;

	if (rdma_reject(c->id, pdata, len))
		return fab_set_error(-errno, "verbs: rdma_reject: %s", strerror(errno));
	return 0;
}

static int vb_disconnect(struct fab_conn *fc)
{
	struct vb_conn *c = (struct vb_conn *)fc;

	c->disconnecting = true;
	if (rdma_disconnect(c->id)) {
		int err = errno;

		/* No CM any more (device removal): still flush the QP. */
		if (c->qp) {
			struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

			ibv_modify_qp(c->qp, &a, IBV_QP_STATE);
		}
		if (err != EINVAL)
			return fab_set_error(-err, "verbs: rdma_disconnect: %s", strerror(err));
	}
	return 0;
}

static void vb_conn_destroy(struct fab_conn *fc)
{
	struct vb_conn *c = (struct vb_conn *)fc;

	if (c->qp) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

		/* Flush outstanding WRs before the QP goes away. */
		ibv_modify_qp(c->qp, &a, IBV_QP_STATE);
		vb_qpmap_del(c->vf, c->qp->qp_num);
		rdma_destroy_qp(c->id);
	}
	rdma_destroy_id(c->id);
	free(c);
}

static struct fab_pd *vb_conn_pd(struct fab_conn *fc)
{
	struct vb_conn *c = (struct vb_conn *)fc;

	if (c->own_pd)
		return (struct fab_pd *)c->own_pd;
	return (struct fab_pd *)vb_pd_for(c->vf, c->id->verbs);
}

static int vb_conn_own_pd(struct fab_conn *fc, struct fab_pd **out)
{
	struct vb_conn *c = (struct vb_conn *)fc;
	struct vb_pd *pd;

	if (c->qp || c->own_pd || !c->id->verbs)
		return fab_set_error(-EINVAL, "verbs: own PD: not a fresh passive conn");
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return fab_set_error(-ENOMEM, "verbs: out of memory for PD");
	pd->fab = &c->vf->base;
	pd->ctx = c->id->verbs;
	pd->pd = ibv_alloc_pd(c->id->verbs);
	if (!pd->pd) {
		int err = errno ? errno : ENOMEM;

		free(pd);
		return fab_set_error(-err, "verbs: ibv_alloc_pd: %s", strerror(err));
	}
	pd->own = true;
	c->own_pd = pd;
	*out = (struct fab_pd *)pd;
	return 0;
}

static void vb_pd_free(struct fab_pd *fpd)
{
	struct vb_pd *pd = (struct vb_pd *)fpd;
	int err;

	if (!pd->own) /* a device's cached one lives as long as the fabric */
		return;
	err = ibv_dealloc_pd(pd->pd);
	if (err) /* a region still registered in it: the caller's bug */
		fab_set_error(-err, "verbs: ibv_dealloc_pd: %s", strerror(err));
	free(pd);
}

static const char *vb_conn_peer(const struct fab_conn *fc)
{
	return ((const struct vb_conn *)fc)->peer;
}

static void vb_copy_addr(const struct sockaddr *sa, struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (sa && sa->sa_family == AF_INET)
		memcpy(out, sa, sizeof(struct sockaddr_in));
	else if (sa && sa->sa_family == AF_INET6)
		memcpy(out, sa, sizeof(struct sockaddr_in6));
}

static int vb_conn_addrs(const struct fab_conn *fc, struct sockaddr_storage *local,
			 struct sockaddr_storage *remote)
{
	const struct vb_conn *c = (const struct vb_conn *)fc;

	if (local)
		vb_copy_addr(rdma_get_local_addr(c->id), local);
	if (remote)
		vb_copy_addr(rdma_get_peer_addr(c->id), remote);
	return 0;
}

/* --- fabric --------------------------------------------------------------------- */

static void vb_close(struct fab_fabric *fab)
{
	struct vb_fabric *vf = (struct vb_fabric *)fab;

	for (int i = 0; i < vf->ndev; i++) {
		ibv_dealloc_pd(vf->devs[i].pd->pd);
		free(vf->devs[i].pd);
	}
	if (vf->list)
		rdma_free_devices(vf->list);
	free(vf->map);
	pthread_mutex_destroy(&vf->lock);
	free(vf);
}

int fab_verbs_open(struct fab_fabric **out)
{
	struct ibv_device **devs;
	struct vb_fabric *vf;
	int n = 0;

	/* Look before librdmacm does: with no device it must fail cleanly. */
	devs = ibv_get_device_list(&n);
	if (devs)
		ibv_free_device_list(devs);
	if (!devs || n == 0)
		return fab_set_error(-ENODEV, "verbs: no RDMA device found (ibv_get_device_list)");
	vf = calloc(1, sizeof(*vf));
	if (!vf)
		return fab_set_error(-ENOMEM, "verbs: out of memory");
	vf->base.ops = &fab_verbs_ops;
	pthread_mutex_init(&vf->lock, NULL);
	vf->list = rdma_get_devices(&n);
	if (!vf->list || n == 0) {
		vb_close(&vf->base);
		return fab_set_error(-ENODEV, "verbs: librdmacm sees no RDMA device");
	}
	for (int i = 0; vf->list[i]; i++) {
		int fl = fcntl(vf->list[i]->async_fd, F_GETFL);

		fcntl(vf->list[i]->async_fd, F_SETFL, fl | O_NONBLOCK);
	}
	*out = &vf->base;
	return 0;
}

const struct fab_ops fab_verbs_ops = {
    .name = "verbs",
    .caps = FAB_CAP_V6_LISTENER,
    .close = vb_close,
    .channel_create = vb_channel_create,
    .channel_destroy = vb_channel_destroy,
    .channel_fd = vb_channel_fd,
    .channel_get_event = vb_channel_get_event,
    .listen = vb_listen,
    .listener_destroy = vb_listener_destroy,
    .listener_limits = vb_listener_limits,
    .conn_limits = vb_conn_limits,
    .device_limits = vb_device_limits,
    .connect = vb_connect,
    .conn_create_qp = vb_conn_create_qp,
    .accept = vb_accept,
    .reject = vb_reject,
    .disconnect = vb_disconnect,
    .conn_destroy = vb_conn_destroy,
    .conn_pd = vb_conn_pd,
    .conn_own_pd = vb_conn_own_pd,
    .pd_free = vb_pd_free,
    .conn_cq_create = vb_conn_cq_create,
    .conn_peer = vb_conn_peer,
    .conn_addrs = vb_conn_addrs,
    .pd_get = vb_pd_get,
    .mr_reg = vb_mr_reg,
    .mr_dereg = vb_mr_dereg,
    .cq_create = vb_cq_create,
    .cq_destroy = vb_cq_destroy,
    .cq_fd = vb_cq_fd,
    .cq_get_event = vb_cq_get_event,
    .cq_arm = vb_cq_arm,
    .cq_poll = vb_cq_poll,
    .post_send = vb_post_send,
    .post_recv = vb_post_recv,
    .srq_create = vb_srq_create,
    .srq_destroy = vb_srq_destroy,
    .post_srq_recv = vb_post_srq_recv,
};
