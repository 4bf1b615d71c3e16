// SPDX-License-Identifier: MIT
/*
 * fab.c - provider selection and dispatch for the fab.h interface.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/fab_internal.h"

static _Thread_local char fab_errbuf[256];

int fab_set_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fab_errbuf, sizeof(fab_errbuf), fmt, ap);
	va_end(ap);
	return err;
}

const char *fab_last_error(void)
{
	return fab_errbuf;
}

int fab_open(const char *provider, struct fab_fabric **out)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!provider || !*provider)
		provider = getenv("RPCRDMA_FABRIC");
	if (!provider || !*provider)
		provider = "soft";
	if (strcmp(provider, "soft") == 0)
		return fab_soft_open(out);
	if (strcmp(provider, "verbs") == 0) {
#ifdef FAB_WITH_VERBS
		return fab_verbs_open(out);
#else
		/* Built without rdma-core: no verbs device can ever be opened. */
		return fab_set_error(-ENODEV, "verbs provider not built (RPCRDMA_WITH_VERBS=OFF)");
#endif
	}
	return fab_set_error(-EINVAL, "unknown fabric provider \"%s\" (soft, verbs)", provider);
}

void fab_close(struct fab_fabric *fab)
{
	if (fab)
		fab->ops->close(fab);
}

const char *fab_name(const struct fab_fabric *fab)
{
	return fab->ops->name;
}

unsigned int fab_caps(const struct fab_fabric *fab)
{
	return fab->ops->caps;
}

void fab_get_stats(const struct fab_fabric *fab, struct fab_stats *out)
{
	const struct fab_counters *c = &fab->cnt;

	for (int i = 0; i < 4; i++) {
		out->wr_posted[i] = atomic_load(&c->wr_posted[i]);
		out->bytes[i] = atomic_load(&c->bytes[i]);
	}
	out->recv_posted = atomic_load(&c->recv_posted);
	out->recv_bytes = atomic_load(&c->recv_bytes);
	out->registrations = atomic_load(&c->registrations);
	out->deregistrations = atomic_load(&c->deregistrations);
	out->unsignalled_page_wrs = atomic_load(&c->unsignalled_page_wrs);
}

int fab_channel_create(struct fab_fabric *fab, struct fab_channel **out)
{
	return fab->ops->channel_create(fab, out);
}

void fab_channel_destroy(struct fab_channel *ch)
{
	if (ch)
		fab_of(ch)->ops->channel_destroy(ch);
}

int fab_channel_fd(const struct fab_channel *ch)
{
	return fab_of(ch)->ops->channel_fd(ch);
}

int fab_channel_get_event(struct fab_channel *ch, struct fab_cm_event *ev)
{
	return fab_of(ch)->ops->channel_get_event(ch, ev);
}

int fab_listen(struct fab_fabric *fab, struct fab_channel *ch, const char *addr, int backlog,
	       struct fab_listener **out)
{
	return fab->ops->listen(fab, ch, addr, backlog, out);
}

void fab_listener_destroy(struct fab_listener *l)
{
	if (l)
		fab_of(l)->ops->listener_destroy(l);
}

int fab_listener_limits(struct fab_listener *l, struct fab_limits *out)
{
	memset(out, 0, sizeof(*out));
	return fab_of(l)->ops->listener_limits(l, out);
}

int fab_conn_limits(struct fab_conn *c, struct fab_limits *out)
{
	memset(out, 0, sizeof(*out));
	return fab_of(c)->ops->conn_limits(c, out);
}

int fab_device_limits(struct fab_fabric *fab, struct fab_limits *out)
{
	memset(out, 0, sizeof(*out));
	return fab->ops->device_limits(fab, out);
}

const char *fab_transport_name(enum fab_transport t)
{
	switch (t) {
	case FAB_TRANSPORT_IB:
		return "InfiniBand";
	case FAB_TRANSPORT_ROCE:
		return "RoCE";
	case FAB_TRANSPORT_IWARP:
		return "iWARP";
	}
	return "unknown";
}

int fab_connect(struct fab_fabric *fab, struct fab_channel *ch, const char *addr,
		struct fab_cq *send_cq, struct fab_cq *recv_cq, const struct fab_qp_caps *caps,
		const struct fab_conn_param *param, struct fab_conn **out)
{
	if (param && param->private_data_len > FAB_PRIVATE_DATA_MAX)
		return fab_set_error(-EINVAL, "private data longer than %d bytes",
				     FAB_PRIVATE_DATA_MAX);
	return fab->ops->connect(fab, ch, addr, send_cq, recv_cq, caps, param, out);
}

int fab_conn_create_qp(struct fab_conn *c, struct fab_cq *send_cq, struct fab_cq *recv_cq,
		       const struct fab_qp_caps *caps)
{
	return fab_of(c)->ops->conn_create_qp(c, send_cq, recv_cq, caps);
}

int fab_accept(struct fab_conn *c, const struct fab_conn_param *param)
{
	if (param && param->private_data_len > FAB_PRIVATE_DATA_MAX)
		return fab_set_error(-EINVAL, "private data longer than %d bytes",
				     FAB_PRIVATE_DATA_MAX);
	return fab_of(c)->ops->accept(c, param);
}

int fab_reject(struct fab_conn *c, const void *private_data, uint8_t len)
{
	if (len > FAB_PRIVATE_DATA_MAX)
		return fab_set_error(-EINVAL, "private data longer than %d bytes",
				     FAB_PRIVATE_DATA_MAX);
	return fab_of(c)->ops->reject(c, private_data, len);
}

int fab_disconnect(struct fab_conn *c)
{
	return fab_of(c)->ops->disconnect(c);
}

void fab_conn_destroy(struct fab_conn *c)
{
	if (c)
		fab_of(c)->ops->conn_destroy(c);
}

struct fab_pd *fab_conn_pd(struct fab_conn *c)
{
	return fab_of(c)->ops->conn_pd(c);
}

int fab_conn_own_pd(struct fab_conn *c, struct fab_pd **out)
{
	return fab_of(c)->ops->conn_own_pd(c, out);
}

void fab_pd_free(struct fab_pd *pd)
{
	if (pd)
		fab_of(pd)->ops->pd_free(pd);
}

const char *fab_conn_peer(const struct fab_conn *c)
{
	return fab_of(c)->ops->conn_peer(c);
}

int fab_conn_addrs(const struct fab_conn *c, struct sockaddr_storage *local,
		   struct sockaddr_storage *remote)
{
	return fab_of(c)->ops->conn_addrs(c, local, remote);
}

void fab_conn_set_context(struct fab_conn *c, void *ctx)
{
	((struct fab_conn_head *)c)->ctx = ctx;
}

void *fab_conn_get_context(const struct fab_conn *c)
{
	return ((const struct fab_conn_head *)c)->ctx;
}

int fab_pd_get(struct fab_fabric *fab, struct fab_pd **out)
{
	return fab->ops->pd_get(fab, out);
}

int fab_mr_reg(struct fab_pd *pd, void *addr, size_t len, unsigned int access, struct fab_mr **out)
{
	return fab_of(pd)->ops->mr_reg(pd, addr, len, access, out);
}

void fab_mr_dereg(struct fab_mr *mr)
{
	if (mr)
		fab_of(mr->prov)->ops->mr_dereg(mr);
}

int fab_cq_create(struct fab_fabric *fab, int depth, struct fab_cq **out)
{
	return fab->ops->cq_create(fab, depth, out);
}

int fab_conn_cq_create(struct fab_conn *c, int depth, struct fab_cq **out)
{
	return fab_of(c)->ops->conn_cq_create(c, depth, out);
}

void fab_cq_destroy(struct fab_cq *cq)
{
	if (cq)
		fab_of(cq)->ops->cq_destroy(cq);
}

int fab_cq_fd(const struct fab_cq *cq)
{
	return fab_of(cq)->ops->cq_fd(cq);
}

int fab_cq_get_event(struct fab_cq *cq)
{
	return fab_of(cq)->ops->cq_get_event(cq);
}

int fab_cq_arm(struct fab_cq *cq)
{
	return fab_of(cq)->ops->cq_arm(cq);
}

int fab_cq_poll(struct fab_cq *cq, struct fab_wc *wc, int n)
{
	return fab_of(cq)->ops->cq_poll(cq, wc, n);
}

int fab_post_send(struct fab_conn *c, struct fab_send_wr *wr, struct fab_send_wr **bad)
{
	return fab_of(c)->ops->post_send(c, wr, bad);
}

int fab_post_recv(struct fab_conn *c, struct fab_recv_wr *wr, struct fab_recv_wr **bad)
{
	return fab_of(c)->ops->post_recv(c, wr, bad);
}

int fab_srq_create(struct fab_pd *pd, uint32_t max_wr, uint32_t max_sge, struct fab_srq **out)
{
	if (!pd || !out || max_wr == 0 || max_sge == 0)
		return fab_set_error(-EINVAL, "SRQ needs a PD, a depth and at least one SGE");
	return fab_of(pd)->ops->srq_create(pd, max_wr, max_sge, out);
}

int fab_srq_destroy(struct fab_srq *srq)
{
	return srq ? fab_of(srq)->ops->srq_destroy(srq) : 0;
}

int fab_post_srq_recv(struct fab_srq *srq, struct fab_recv_wr *wr, struct fab_recv_wr **bad)
{
	return fab_of(srq)->ops->post_srq_recv(srq, wr, bad);
}
