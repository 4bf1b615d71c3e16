// SPDX-License-Identifier: MIT
/*
 * fab_soft_mem.c - the "soft" provider's completion queues (a ring plus an
 * eventfd that fires once per arm, like a completion channel) and memory
 * registration (one PD per fabric; keys index a table, with a generation
 * byte so a stale rkey does not match a reused slot).
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include "fabric/fab_soft_int.h"

/* --- completion queues -------------------------------------------------- */

int soft_cq_create(struct fab_fabric *fab, int depth, struct fab_cq **out)
{
	struct soft_fabric *sf = (struct soft_fabric *)fab;
	struct fab_limits lim = soft_lim(sf);
	struct soft_cq *cq;

	if (soft_present(sf))
		return -ENODEV;
	if (depth > (int)lim.max_cqe)
		return fab_set_error(-EINVAL, "soft: CQ of %d entries, device %s takes %u", depth,
				     lim.device, lim.max_cqe);
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return fab_set_error(-ENOMEM, "soft: out of memory for CQ");
	cq->fab = fab;
	/* the ring grows as completions queue up (soft_cq_push): an idle
	 * connection's CQ stays small whatever its depth */
	cq->cap = depth > 0 && depth < 16 ? (uint32_t)depth : 16;
	cq->ring = calloc(cq->cap, sizeof(*cq->ring));
	cq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!cq->ring || cq->efd < 0) {
		if (cq->efd >= 0)
			close(cq->efd);
		free(cq->ring);
		free(cq);
		return fab_set_error(-ENOMEM, "soft: cannot create CQ");
	}
	pthread_mutex_init(&cq->lock, NULL);
	*out = (struct fab_cq *)cq;
	return 0;
}

void soft_cq_destroy(struct fab_cq *fcq)
{
	struct soft_cq *cq = (struct soft_cq *)fcq;

	close(cq->efd);
	pthread_mutex_destroy(&cq->lock);
	free(cq->ring);
	free(cq);
}

int soft_cq_fd(const struct fab_cq *fcq)
{
	return ((const struct soft_cq *)fcq)->efd;
}

int soft_cq_get_event(struct fab_cq *fcq)
{
	struct soft_cq *cq = (struct soft_cq *)fcq;
	uint64_t v;

	if (read(cq->efd, &v, sizeof(v)) != sizeof(v))
		return -EAGAIN;
	return 0;
}

int soft_cq_arm(struct fab_cq *fcq)
{
	struct soft_cq *cq = (struct soft_cq *)fcq;

	pthread_mutex_lock(&cq->lock);
	cq->armed = true;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

int soft_cq_poll(struct fab_cq *fcq, struct fab_wc *wc, int n)
{
	struct soft_cq *cq = (struct soft_cq *)fcq;
	int i;

	pthread_mutex_lock(&cq->lock);
	for (i = 0; i < n && cq->n; i++) {
		wc[i] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->cap;
		cq->n--;
	}
	pthread_mutex_unlock(&cq->lock);
	return i;
}

/* Never drops a completion: a full ring grows (a real CQ would overrun). */
void soft_cq_push(struct soft_cq *cq, const struct fab_wc *wc)
{
	pthread_mutex_lock(&cq->lock);
	if (cq->n == cq->cap) {
		uint32_t ncap = cq->cap * 2;
		struct fab_wc *r = malloc(ncap * sizeof(*r));

		if (!r) {
			pthread_mutex_unlock(&cq->lock);
			return;
		}
		for (uint32_t i = 0; i < cq->n; i++)
			r[i] = cq->ring[(cq->head + i) % cq->cap];
		free(cq->ring);
		cq->ring = r;
		cq->head = 0;
		cq->cap = ncap;
	}
	cq->ring[(cq->head + cq->n) % cq->cap] = *wc;
	cq->n++;
	if (cq->armed) {
		uint64_t one = 1;

		cq->armed = false;
		if (write(cq->efd, &one, sizeof(one)) < 0) {
			/* counter full cannot happen with one write per arm */
		}
	}
	pthread_mutex_unlock(&cq->lock);
}

/* A destroyed conn's completions stay queued, with conn cleared (verbs: unknown qp_num). */
void soft_cq_forget(struct soft_cq *cq, struct soft_conn *c)
{
	pthread_mutex_lock(&cq->lock);
	for (uint32_t i = 0; i < cq->n; i++) {
		struct fab_wc *w = &cq->ring[(cq->head + i) % cq->cap];

		if (w->conn == (struct fab_conn *)c)
			w->conn = NULL;
	}
	pthread_mutex_unlock(&cq->lock);
}

/* --- memory ------------------------------------------------------------- */

int soft_pd_get(struct fab_fabric *fab, struct fab_pd **out)
{
	if (soft_present((struct soft_fabric *)fab))
		return -ENODEV;
	*out = (struct fab_pd *)((struct soft_fabric *)fab)->pd;
	return 0;
}

/*
 * Pages registered by this process, as the kernel's mm->pinned_vm: each
 * registration counts its pages again, and one past RLIMIT_MEMLOCK fails
 * with ENOMEM, as ibv_reg_mr does on siw (siw_umem_get). Only with
 * RPCRDMA_SOFT_MEMLOCK=1 (soft_memlock_charged).
 */
static _Atomic uint64_t soft_pinned_pages;

static int memlock_charge(struct soft_fabric *sf, const void *addr, size_t len, uint64_t *pages)
{
	uintptr_t first = (uintptr_t)addr & ~(uintptr_t)4095;
	uint64_t n = ((uintptr_t)addr + len - first + 4095) / 4096;
	struct rlimit rl;
	uint64_t now;

	*pages = 0;
	if (!sf->memlock)
		return 0;
	now = atomic_fetch_add(&soft_pinned_pages, n) + n;
	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    now > rl.rlim_cur / 4096) {
		atomic_fetch_sub(&soft_pinned_pages, n);
		return fab_set_error(-ENOMEM,
				     "soft: registering %zu bytes: %llu pages locked would pass "
				     "RLIMIT_MEMLOCK (%llu bytes): Cannot allocate memory",
				     len, (unsigned long long)now, (unsigned long long)rl.rlim_cur);
	}
	*pages = n;
	return 0;
}

int soft_mr_reg(struct fab_pd *pd, void *addr, size_t len, unsigned int access, struct fab_mr **out)
{
	struct soft_fabric *sf = (struct soft_fabric *)fab_of(pd);
	struct soft_mr *mr;
	uint32_t idx;

	if (soft_present(sf))
		return -ENODEV;
	if (!addr || !len || (access & ~7u))
		return fab_set_error(-EINVAL, "soft: bad MR arguments");
	/* As ibv_reg_mr: remote write needs local write. */
	if ((access & FAB_ACCESS_REMOTE_WRITE) && !(access & FAB_ACCESS_LOCAL_WRITE))
		return fab_set_error(-EINVAL, "soft: REMOTE_WRITE needs LOCAL_WRITE");
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return fab_set_error(-ENOMEM, "soft: out of memory for MR");
	if (memlock_charge(sf, addr, len, &mr->pinned_pages)) {
		free(mr);
		return -ENOMEM;
	}
	pthread_mutex_lock(&sf->lock);
	for (idx = 1; idx < sf->nmrs && sf->mrs[idx]; idx++)
		;
	if (idx >= sf->nmrs) {
		uint32_t n = sf->nmrs ? sf->nmrs * 2 : 64;
		struct soft_mr **t;

		if (n > (1u << 24) || !(t = realloc(sf->mrs, n * sizeof(*t)))) {
			pthread_mutex_unlock(&sf->lock);
			atomic_fetch_sub(&soft_pinned_pages, mr->pinned_pages);
			free(mr);
			return fab_set_error(-ENOMEM, "soft: MR table full");
		}
		memset(t + sf->nmrs, 0, (n - sf->nmrs) * sizeof(*t));
		sf->mrs = t;
		idx = sf->nmrs ? sf->nmrs : 1;
		sf->nmrs = n;
	}
	sf->gen++;
	mr->fab = &sf->base;
	mr->pd = (struct soft_pd *)pd;
	mr->valid = true;
	mr->pub.addr = addr;
	mr->pub.length = len;
	mr->pub.access = access;
	mr->pub.lkey = mr->pub.rkey = idx << 8 | (sf->gen & 0xff);
	mr->pub.prov = mr;
	sf->mrs[idx] = mr;
	pthread_mutex_unlock(&sf->lock);
	fab_count(&sf->base.cnt.registrations, 1);
	*out = &mr->pub;
	return 0;
}

void soft_mr_dereg(struct fab_mr *pub)
{
	struct soft_mr *mr = pub->prov;
	struct soft_fabric *sf = (struct soft_fabric *)mr->fab;
	uint32_t delay_ms;

	pthread_mutex_lock(&sf->lock);
	delay_ms = sf->fault.dereg_delay_ms;
	pthread_mutex_unlock(&sf->lock);
	if (delay_ms) /* fault injection: a slow device; the MR stays valid meanwhile */
		usleep((useconds_t)delay_ms * 1000);
	pthread_mutex_lock(&sf->lock);
	sf->mrs[pub->rkey >> 8] = NULL;
	pthread_mutex_unlock(&sf->lock);
	fab_count(&sf->base.cnt.deregistrations, 1);
	atomic_fetch_sub(&soft_pinned_pages, mr->pinned_pages);
	free(mr);
}

static struct soft_mr *soft_mr_lookup_locked(struct soft_fabric *sf, uint32_t key)
{
	uint32_t idx = key >> 8;

	if (idx == 0 || idx >= sf->nmrs || !sf->mrs[idx] || sf->mrs[idx]->pub.rkey != key)
		return NULL;
	return sf->mrs[idx];
}

static bool mr_covers(const struct soft_mr *mr, uint64_t addr, uint64_t len)
{
	uint64_t start = (uintptr_t)mr->pub.addr;

	return addr >= start && addr - start <= mr->pub.length &&
	       len <= mr->pub.length - (addr - start);
}

/* Responder-side check of an incoming RDMA Read/Write: valid rkey, in bounds, right granted. */
bool soft_remote_ok(struct soft_fabric *sf, const struct soft_pd *pd, uint32_t rkey, uint64_t addr, uint32_t len,
		    unsigned int need)
{
	struct soft_mr *mr;
	bool ok;

	if (len == 0)
		return true;
	pthread_mutex_lock(&sf->lock);
	mr = soft_mr_lookup_locked(sf, rkey);
	ok = mr && mr->pd == pd && mr->valid && (mr->pub.access & need) &&
	     mr_covers(mr, addr, len);
	pthread_mutex_unlock(&sf->lock);
	return ok;
}

bool soft_local_ok(struct soft_fabric *sf, const struct soft_pd *pd, const struct fab_sge *sge, int n, bool write)
{
	bool ok = true;

	pthread_mutex_lock(&sf->lock);
	for (int i = 0; i < n && ok; i++) {
		struct soft_mr *mr;

		if (!sge[i].length)
			continue;
		mr = soft_mr_lookup_locked(sf, sge[i].lkey);
		ok = mr && mr->pd == pd && mr_covers(mr, (uintptr_t)sge[i].addr, sge[i].length) &&
		     (!write || (mr->pub.access & FAB_ACCESS_LOCAL_WRITE));
	}
	pthread_mutex_unlock(&sf->lock);
	return ok;
}

/* iWARP: a Read's sink is the target of the peer's tagged Read Response,
 * so each of its buffers must grant remote write. */
bool soft_sink_tagged_ok(struct soft_fabric *sf, const struct soft_pd *pd, const struct fab_sge *sge, int n)
{
	bool ok = true;

	pthread_mutex_lock(&sf->lock);
	for (int i = 0; i < n && ok; i++) {
		struct soft_mr *mr = soft_mr_lookup_locked(sf, sge[i].lkey);

		ok = mr && mr->pd == pd && (mr->pub.access & FAB_ACCESS_REMOTE_WRITE);
	}
	pthread_mutex_unlock(&sf->lock);
	return ok;
}

void soft_invalidate_rkey(struct soft_fabric *sf, uint32_t rkey)
{
	struct soft_mr *mr;

	pthread_mutex_lock(&sf->lock);
	mr = soft_mr_lookup_locked(sf, rkey);
	if (mr)
		mr->valid = false;
	pthread_mutex_unlock(&sf->lock);
}
