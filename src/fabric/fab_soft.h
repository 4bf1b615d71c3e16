/* SPDX-License-Identifier: MIT */
/*
 * fab_soft.h - fault injection for the "soft" provider (tests and demos).
 *
 * A fault set on the fabric is the default copied into every connection
 * created afterwards; a fault set on a connection applies to it alone. The
 * environment variable RPCRDMA_SOFT_FAULT, read by fab_open("soft"), sets
 * the fabric default for whole-process tests, e.g.
 *   RPCRDMA_SOFT_FAULT="drop_after_bytes=65536,fail_next_read=1,delay_us=200"
 */
#ifndef RPCRDMA_FAB_SOFT_H
#define RPCRDMA_FAB_SOFT_H

#include <stdbool.h>
#include <stdint.h>

#include "fabric/fab.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fab_soft_fault {
	uint64_t drop_after_bytes; /* 0: off; else drop the link once this many bytes went out */
	uint64_t drop_after_wrs; /* 0: off; else drop the link after this many send WRs went out */
	bool fail_next_read;	 /* next RDMA Read issued here fails: REM_ACCESS_ERR */
	bool fail_next_write;	 /* next RDMA Write issued here fails: REM_ACCESS_ERR */
	uint32_t delay_us;	 /* delay each completion delivered by the I/O thread */
	uint32_t read_delay_ms;	 /* answer each RDMA Read Request this late (a Read held in flight) */
	uint32_t dereg_delay_ms; /* fabric-wide: each deregistration takes this long */
};

/* Parse "key=value,..." (the RPCRDMA_SOFT_FAULT syntax); -EINVAL on a bad key or value. */
int fab_soft_fault_parse(const char *spec, struct fab_soft_fault *out);
/* Default for connections created from now on; -EINVAL if fab is not "soft". */
int fab_soft_fault_set_fabric(struct fab_fabric *fab, const struct fab_soft_fault *f);
/* This connection only, effective for work requests transmitted from now on. */
int fab_soft_fault_set(struct fab_conn *c, const struct fab_soft_fault *f);

/*
 * The sink (local address and key) of the last RDMA Read posted on any QP
 * of @fab: on iWARP the STag the Read Request names to the peer (RFC 5040
 * section 4.4), so tests can stand in for a peer that learned it. -EINVAL
 * if fab is not "soft" or no Read was posted.
 */
int fab_soft_last_read_sink(struct fab_fabric *fab, uint64_t *addr, uint32_t *key);

/*
 * Device profiles: the limits and semantics of a real device (rxe, mlx5,
 * irdma, bnxt_re, cxgb4, siw, min; docs/devices.md), enforced by the
 * provider. RPCRDMA_SOFT_PROFILE, read by fab_open("soft"), picks one for
 * the whole process ("soft", the provider's own, when unset).
 * fab_soft_profile: a profile's limits, -EINVAL for an unknown name.
 * fab_soft_profile_set: the fabric's profile from now on (before any
 * listener or connection: objects keep the limits they were made with).
 */
int fab_soft_profile(const char *name, struct fab_limits *out);
int fab_soft_profile_set(struct fab_fabric *fab, const char *name);

/*
 * Simulated device removal: every listener and connection of @fab gets
 * FAB_CM_DEVICE_REMOVAL (connections: QP to error, posted work flushes, the
 * peer sees a disconnect; listeners: connection attempts are refused), and
 * until fab_soft_device_restore new listeners, connections, PDs, MRs, CQs
 * and SRQs fail with -ENODEV. -EINVAL if fab is not "soft".
 */
int fab_soft_device_remove(struct fab_fabric *fab);
int fab_soft_device_restore(struct fab_fabric *fab);

/*
 * Reader and writer threads running now over all of this fabric's
 * connections: an idle connection has none (fab_soft_idle.c;
 * RPCRDMA_SOFT_IDLE_MS, default 500, is how long "idle" takes).
 */
unsigned int fab_soft_io_threads(struct fab_fabric *fab);

#ifdef __cplusplus
}
#endif
#endif /* RPCRDMA_FAB_SOFT_H */
