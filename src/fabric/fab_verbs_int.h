/* SPDX-License-Identifier: MIT */
/*
 * fab_verbs_int.h - private structures of the "verbs" provider (rdma-core).
 */
#ifndef RPCRDMA_FAB_VERBS_INT_H
#define RPCRDMA_FAB_VERBS_INT_H

#include <pthread.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "fabric/fab_internal.h"

#define VB_MAX_DEVS 16
#define VB_RESOLVE_MS 2000

struct vb_pd {
	struct fab_fabric *fab;
	struct ibv_pd *pd;
	struct ibv_context *ctx;
	bool own; /* a connection's (fab_conn_own_pd), freed by fab_pd_free */
};

/* One cached PD per ibv_context (the contexts librdmacm opened). */
struct vb_dev {
	struct ibv_context *ctx;
	struct vb_pd *pd;
};

struct vb_qpmap {
	uint32_t qpn;
	struct vb_conn *c;
};

struct vb_fabric {
	struct fab_fabric base;
	pthread_mutex_t lock;
	struct ibv_context **list; /* rdma_get_devices() */
	struct vb_dev devs[VB_MAX_DEVS];
	int ndev;
	struct vb_qpmap *map; /* qp_num -> conn, for fab_wc.conn */
	uint32_t nmap, capmap;
	/*
	 * Device removal: a device of list[] is gone (CM or async event, or
	 * its uverbs node vanished). list[] and the PDs cached on it stay
	 * until the next fab_listen, which the user calls once it released
	 * everything it had there; that one re-reads the device list.
	 */
	_Atomic bool stale;
	uint32_t dead;		  /* bit i: list[i] is known to be gone (lock) */
	struct vb_channel *chans; /* their epoll sets get new devices' async fds */
};

struct vb_mr {
	struct fab_fabric *fab;
	struct fab_mr pub;
	struct ibv_mr *mr;
};

struct vb_cq {
	struct fab_fabric *fab;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
};

struct vb_channel {
	struct fab_fabric *fab;
	struct rdma_event_channel *ec;
	int epfd;		 /* CM channel fd + every device's async fd + tfd */
	int tfd;		 /* timerfd: look for vanished devices (VB_DEV_CHECK_MS) */
	struct vb_channel *next; /* vf->chans */
	/* bit i: list[i]'s removal reported on this channel. Each channel
	 * (each server: IPv4, IPv6) must hear of it, to let go of its part. */
	uint32_t gone_reported;
};

/* How often a channel looks whether its devices still exist: a device
 * whose kernel removal waits for us to close it sends no event at all. */
#define VB_DEV_CHECK_MS 1000

struct vb_srq {
	struct fab_fabric *fab;
	struct vb_pd *pd;
	struct ibv_srq *srq;
};

enum vb_kind { VB_CONN = 1, VB_LISTENER };

/* Listeners and conns share a head so an id's context tells them apart. */
struct vb_listener {
	struct fab_conn_head h;
	enum vb_kind kind;
	struct vb_channel *ch;
	struct rdma_cm_id *id;
};

struct vb_conn {
	struct fab_conn_head h;
	enum vb_kind kind;
	struct vb_fabric *vf;
	struct vb_channel *ch;
	struct vb_listener *l;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	struct vb_pd *own_pd; /* fab_conn_own_pd (the caller frees it); else the device's */
	bool disconnecting; /* fab_disconnect was called (we sent the DREQ, or the DREP) */
	char peer[128];
	/* active side: what to use once the route resolves */
	struct vb_cq *scq, *rcq;
	struct fab_qp_caps caps;
	struct rdma_conn_param param;
	uint8_t pdata[FAB_PRIVATE_DATA_MAX];
};

struct vb_pd *vb_pd_for(struct vb_fabric *vf, struct ibv_context *ctx);
int vb_create_qp(struct vb_conn *c, struct vb_cq *scq, struct vb_cq *rcq,
		 const struct fab_qp_caps *caps);
void vb_qpmap_del(struct vb_fabric *vf, uint32_t qpn);

int vb_pd_get(struct fab_fabric *fab, struct fab_pd **out);
int vb_mr_reg(struct fab_pd *pd, void *addr, size_t len, unsigned int access, struct fab_mr **out);
void vb_mr_dereg(struct fab_mr *mr);
int vb_cq_create(struct fab_fabric *fab, int depth, struct fab_cq **out);
int vb_conn_cq_create(struct fab_conn *c, int depth, struct fab_cq **out);
void vb_cq_destroy(struct fab_cq *cq);
int vb_cq_fd(const struct fab_cq *cq);
int vb_cq_get_event(struct fab_cq *cq);
int vb_cq_arm(struct fab_cq *cq);
int vb_cq_poll(struct fab_cq *cq, struct fab_wc *wc, int n);
int vb_post_send(struct fab_conn *c, struct fab_send_wr *wr, struct fab_send_wr **bad);
int vb_post_recv(struct fab_conn *c, struct fab_recv_wr *wr, struct fab_recv_wr **bad);
int vb_srq_create(struct fab_pd *pd, uint32_t max_wr, uint32_t max_sge, struct fab_srq **out);
int vb_srq_destroy(struct fab_srq *srq);
int vb_post_srq_recv(struct fab_srq *srq, struct fab_recv_wr *wr, struct fab_recv_wr **bad);

/* RPCRDMA_FABRIC_DEBUG=1 in the environment (fab_verbs_data.c). */
bool vb_debug(void);

#endif /* RPCRDMA_FAB_VERBS_INT_H */
