// SPDX-License-Identifier: MIT
/*
 * fab_soft_profile.c - the device profiles of the "soft" provider: the
 * limits and semantics of a real RDMA device, so the layers above run on
 * this machine exactly as they would on that device (docs/devices.md has
 * each figure's source in the driver). The soft provider enforces the
 * profile it was opened with: a QP, CQ or SRQ beyond it is refused when
 * made, a work request beyond it when posted, and an iWARP profile keeps
 * iWARP's rules (a Read sink needs remote write; no RNR retry).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/fab_soft_int.h"

#define KI 1024u

/* name, transport, max_qp_wr, max_cqe, max_srq_wr, send SGEs, recv SGEs,
 * Read SGEs, Read depth, inline bytes, Send With Invalidate */
#define PROFILE(n, t, qp, cqe, srq, ssge, rsge, rdsge, rd, inl, swi)                            \
	{                                                                                      \
		.name = n, .lim = {.max_qp_wr = qp, .max_cqe = cqe, .max_srq_wr = srq,          \
				   .max_send_sge = ssge, .max_recv_sge = rsge,                 \
				   .max_read_sge = rdsge, .max_rd_atom = rd, .max_inline = inl, \
				   .send_with_inv = swi, .transport = t }                      \
	}

/*
 * Each as ibv_query_device reports it on Linux 6.1 (max_sge is the smaller
 * of the send and receive SGEs there; docs/devices.md gives every figure's
 * constant and file). Queue sizes beyond what this provider holds
 * (SOFT_MAX_*) are cut to it: they bound sizing, not behaviour.
 */
static const struct soft_profile {
	const char *name;
	struct fab_limits lim;
} profiles[] = {
	/* the provider's own: the largest a test may ask for */
	PROFILE("soft", FAB_TRANSPORT_ROCE, SOFT_MAX_WR, SOFT_MAX_CQE, SOFT_MAX_WR, SOFT_MAX_SGE,
		SOFT_MAX_SGE, SOFT_MAX_SGE, SOFT_MAX_RD_ATOM, 0, true),
	/* Soft-RoCE (rxe_param.h: RXE_MAX_SGE, RXE_MAX_SGE_RD, RXE_MAX_QP_INIT_RD_ATOM) */
	PROFILE("rxe", FAB_TRANSPORT_ROCE, KI * KI, 32 * KI - 1, KI * KI, 32, 32, 32, 128, 512,
		true),
	/* ConnectX-5/6 (mlx5_ib_query_device, MLX5_MAX_SGE_RD; firmware's sizes) */
	PROFILE("mlx5", FAB_TRANSPORT_ROCE, 32 * KI, 4 * KI * KI - 1, 32 * KI - 1, 30, 30, 30, 16,
		0, true),
	/* Intel E810 in RoCEv2 mode (irdma: IRDMA_MAX_WQ_FRAGMENT_COUNT,
	 * IRDMA_MAX_SGE_RD, IRDMA_MAX_QP_WRS; no SRQ before gen3) */
	PROFILE("irdma", FAB_TRANSPORT_ROCE, 4063, KI * KI - 2, 0, 13, 13, 13, 127, 101, true),
	/* Broadcom NetXtreme-E gen P5 (bnxt_re: max_qp_sges 6,
	 * BNXT_QPLIB_MAX_OUT_RD_ATOM; firmware's queue sizes) */
	PROFILE("bnxt_re", FAB_TRANSPORT_ROCE, 64 * KI - 1, KI * KI - 1, 64 * KI - 1, 6, 6, 6, 126,
		96, true),
	/* Chelsio T5/T6 (iw_cxgb4: T4_MAX_RECV_SGE 4 bounds max_sge, max_sge_rd 1,
	 * c4iw_max_read_depth 32) */
	PROFILE("cxgb4", FAB_TRANSPORT_IWARP, 8190, 65518, 8190, 4, 4, 1, 32, 280, true),
	/* soft-iWARP (siw-abi.h SIW_MAX_SGE; siw.h SIW_MAX_SGE_RD, SIW_MAX_ORD_QP,
	 * SIW_MAX_QP_WR, SIW_MAX_SRQ_WR, SIW_MAX_INLINE) */
	PROFILE("siw", FAB_TRANSPORT_IWARP, 32 * KI, 3276800, 327680, 6, 6, 1, 128, 80, true),
	/* the least an RC device may offer: one SGE everywhere, one Read in
	 * flight, no SRQ, no Send With Invalidate; what every feature must
	 * survive (queues as a small NIC's) */
	PROFILE("min", FAB_TRANSPORT_ROCE, 16 * KI, 64 * KI, 0, 1, 1, 1, 1, 0, false),
};

/*
 * RPCRDMA_SOFT_MEMLOCK=1: every registration is charged against
 * RLIMIT_MEMLOCK, as siw charges it (root or not), whatever the profile.
 * Off by default: the suites' figures are those of a process with
 * CAP_IPC_LOCK on a device that honours it.
 */
bool soft_memlock_charged(void)
{
	const char *e = getenv("RPCRDMA_SOFT_MEMLOCK");

	return e && e[0] == '1';
}

static uint32_t cut(uint32_t v, uint32_t max)
{
	return v < max ? v : max;
}

static const struct soft_profile *profile_find(const char *name)
{
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (!strcmp(profiles[i].name, name))
			return &profiles[i];
	return NULL;
}

int fab_soft_profile(const char *name, struct fab_limits *out)
{
	const struct soft_profile *p = profile_find(name && name[0] ? name : "soft");

	if (!p)
		return -EINVAL;
	*out = p->lim;
	out->max_qp_wr = cut(out->max_qp_wr, SOFT_MAX_WR);
	out->max_srq_wr = cut(out->max_srq_wr, SOFT_MAX_WR);
	out->max_cqe = cut(out->max_cqe, SOFT_MAX_CQE);
	out->max_rd_atom = cut(out->max_rd_atom, SOFT_MAX_RD_ATOM);
	out->memlock_charged = soft_memlock_charged();
	/* siw's zero-copy transmit of unsignalled work requests: said, so the
	 * engine's rule runs here; this provider copies when it sends */
	out->unsignalled_zero_copy = !strcmp(p->name, "siw");
	if (p == profiles) /* the provider's own */
		snprintf(out->device, sizeof(out->device), "soft");
	else
		snprintf(out->device, sizeof(out->device), "soft (%s)", p->name);
	return 0;
}

struct fab_limits soft_lim(struct soft_fabric *sf)
{
	struct fab_limits lim;

	pthread_mutex_lock(&sf->lock);
	lim = sf->lim;
	pthread_mutex_unlock(&sf->lock);
	return lim;
}

int fab_soft_profile_set(struct fab_fabric *fab, const char *name)
{
	struct soft_fabric *sf = (struct soft_fabric *)fab;
	struct fab_limits lim;

	if (!fab || strcmp(fab_name(fab), "soft"))
		return -EINVAL;
	if (fab_soft_profile(name, &lim))
		return fab_set_error(-EINVAL, "soft: no device profile \"%s\"", name);
	pthread_mutex_lock(&sf->lock);
	sf->lim = lim;
	pthread_mutex_unlock(&sf->lock);
	return 0;
}
