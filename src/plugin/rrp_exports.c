// SPDX-License-Identifier: MIT
/*
 * rrp_exports.c - exports kept off RDMA: RDMA { Exclude_Exports = 2, 3; }.
 *
 * ganesha cannot say this itself: its EXPORT/CLIENT `Transports` takes
 * only UDP and TCP, and the transport checks in its NFSv3 dispatcher and in
 * nfs4_export_check_access() refuse only those two types, so any other
 * transport type (ours is XPRT_UNKNOWN, rrp_xprt.c) passes them. The plugin
 * refuses at the same two places, with the answers ganesha gives a client
 * whose transport an export does not allow:
 *  - NFSv3 (and NFSACL): every Call but NULL begins with a file handle, and
 *    ganesha takes the Call's export from that handle's Export_Id before
 *    anything runs; a Call naming an excluded export is answered AUTH_ERROR
 *    / AUTH_FAILED here, before ganesha sees it. MOUNT is not served over
 *    RDMA at all (ganesha's NFS dispatcher answers PROG_UNAVAIL), so an
 *    RDMA client mounts over TCP and is refused at its first NFS call.
 *    RPCSEC_GSS Calls, whose arguments may be wrapped, are left to ganesha's
 *    own lookup of that export, get_gsh_export() (hooked below): it finds
 *    no export for them, and ganesha answers NFS3ERR_STALE.
 *  - NFSv4: every way into an export - PUTFH, PUTROOTFH, a LOOKUP or LOOKUPP
 *    across a junction, READDIR's junction entries, SECINFO - goes through
 *    nfs4_export_check_access(), which libganesha_nfsd exports for its FSALs
 *    and calls through its PLT, so the preloaded definition receives those
 *    calls (rrp_preload.c) and hands them to the hook below. It runs
 *    ganesha's check, then answers NFS4ERR_ACCESS for an excluded export
 *    when the request came over RDMA; ganesha turns that into
 *    NFS4ERR_NOENT on LOOKUP and leaves the entry out of READDIR, as for an
 *    export a client may not see.
 * Both decide by the Export_Id in the handle, which the client wrote: a
 * handle of an excluded export relabelled with an allowed Export_Id gets
 * past them, and ganesha resolves it through the allowed export anyway
 * (MDCACHE finds any object it holds by the FSAL's bytes alone; FSAL MEM
 * looks a handle up among all its exports' objects; FSAL VFS accepts any
 * object of a file system the export claims). So the object a handle
 * resolves to is checked too, whatever the Export_Id: each export's
 * exp_ops.create_handle (MDCACHE's, the same for every export) is wrapped
 * the first time the plugin sees the export, and over RDMA the object it
 * returns must (A) be on the file system of the export's root (the fsid
 * ganesha's FSAL gave the object: the device for VFS, the creating
 * export for MEM) and (B) that file system must not be the root's of an
 * excluded export. What (A) refuses beside relabelled handles: objects on a
 * file system mounted below an allowed export's root. What (B) refuses: every
 * object of an allowed export that shares its file system with an excluded
 * one, since a handle does not say where in the file system it points
 * (README, Exclude_Exports). A refused handle is NFS3ERR_STALE /
 * NFS4ERR_STALE: not a handle of that export.
 * Every part of a Call of ours is checked, on whichever thread ganesha runs
 * it. ganesha suspends a Call at an asynchronous FSAL's READ or WRITE
 * (FSAL MEM's Async_Type, CEPH's nonblocking I/O) or while a retransmission
 * waits for its original, and has ntirpc's svc_resume() run the rest on a
 * thread of svc_work_pool: a COMPOUND goes on there with its next PUTFH. So
 * what the checks know of a Call (struct rrp_exports_call) is kept in its
 * request, and the hook of svc_resume() (rrp_xprt.c, x_resume) arms it on
 * the resuming thread as the worker did for the dispatch. Not chosen: the
 * request found from ganesha's op_ctx - an op context is not always in a
 * request (ganesha's own threads keep theirs on the stack), so the request
 * it would give could not be validated before it is read.
 * Not covered: pNFS data-server handles, which ganesha resolves by the data
 * server's id with the FSAL's ds_permissions and make_ds_handle, reaching
 * neither hook (README says so).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "plugin/rrp_exports.h"
#include "plugin/rrp_host.h"
#include "plugin/rrp_interpose.h"
#include "plugin/rrp_plugin.h"
#include "ulb/ulb_nfs.h"

/* nfsstat4 (RFC 8881 section 15.1) */
#define RRP_NFS4ERR_ACCESS 13

/* The last procedure of each program ganesha reads a handle from (RFC 1813). */
#define RRP_NFS3_PROC_LAST 21	/* COMMIT */
#define RRP_NFSACL3_PROC_LAST 2 /* SETACL */

/* A Call ganesha's dispatcher takes a file handle's export for. */
static bool names_export(const struct rpc_msg *msg)
{
	if (!rrp.cfg.n_exclude_exports || msg->cb_vers != 3 || msg->cb_proc == 0)
		return false;
	return (msg->cb_prog == ULB_PROG_NFS && msg->cb_proc <= RRP_NFS3_PROC_LAST) ||
	       (msg->cb_prog == ULB_PROG_NFSACL && msg->cb_proc <= RRP_NFSACL3_PROC_LAST);
}

bool rrp_exports_v3_refused(struct rrp_xdr_dec *dec, const struct rpc_msg *msg, uint16_t *id)
{
	XDR *xdrs = &dec->xdrs;
	uint64_t copied = dec->copied;
	uint32_t len, word;
	u_int pos;
	bool ok;

	if (!names_export(msg) || msg->cb_cred.oa_flavor == RPCSEC_GSS)
		return false;
	/* Peek at nfs_fh3's length and first word; the stream is put back. */
	pos = XDR_GETPOS(xdrs);
	ok = XDR_GETUINT32(xdrs, &len) && len >= RRP_GSH_FH3_MIN && len <= ULB_NFS3_FHSIZE &&
	     XDR_GETUINT32(xdrs, &word);
	XDR_SETPOS(xdrs, pos);
	dec->copied = copied;
	/* Not ganesha's handle: ganesha answers NFS3ERR_BADHANDLE itself. */
	if (!ok || word >> 24 != RRP_GSH_FH_VERSION)
		return false;
	*id = (uint16_t)(word & 0xffff); /* bytes 2..3, network order */
	return rrp_config_export_excluded(&rrp.cfg, *id);
}

/*
 * The Call of ours whose part this thread runs in ganesha, NULL otherwise:
 * its dispatch on our worker, or its resume on ntirpc's svc_work_pool
 * (rrp_xprt.c hooks svc_resume(), the only way ganesha resumes a suspended
 * request). Kept in the request, not the thread: a COMPOUND suspended at an
 * asynchronous READ goes on, PUTFH and all, on another thread.
 */
static _Thread_local struct rrp_exports_call *this_call __attribute__((tls_model("initial-exec")));

struct rrp_exports_call *rrp_exports_resume_begin(struct rrp_exports_call *c)
{
	struct rrp_exports_call *prev = this_call;

	this_call = c;
	return prev;
}

/* A Call's first part is armed as its resumes are, once its state is set. */
struct rrp_exports_call *rrp_exports_dispatch_begin(struct rrp_exports_call *c, SVCXPRT *xprt,
						    const struct rpc_msg *msg)
{
	c->xprt = xprt;
	c->v3_lookup = names_export(msg);
	return rrp_exports_resume_begin(c);
}

/* Once a Call is suspended its request belongs to whoever resumes it: only
 * the thread's pointer is put back. */
void rrp_exports_dispatch_end(struct rrp_exports_call *prev)
{
	this_call = prev;
}

/* ---- the object a handle resolves to ---------------------------------- */

/* This thread's ganesha op_ctx (a TLS pointer of libganesha_nfsd). */
static void *op_ctx_now(void)
{
	static _Thread_local void **slot __attribute__((tls_model("initial-exec")));

	if (!slot)
		slot = dlsym(RTLD_DEFAULT, "op_ctx"); /* this thread's instance */
	return slot ? *slot : NULL;
}

/* fsal_status_t and the FSAL errors of fsal_types.h */
struct rrp_fsal_status {
	int major;
	int minor;
};
#define RRP_ERR_FSAL_STALE 151

typedef struct rrp_fsal_status (*create_handle_fn)(void *exp, void *desc, void **obj, void *attrs);

static void *load_ptr(const void *base, size_t off)
{
	void *p;

	memcpy(&p, (const uint8_t *)base + off, sizeof(p));
	return p;
}

struct fsid {
	uint64_t major, minor;
};

static struct fsid obj_fsid(const void *obj)
{
	struct fsid f;

	memcpy(&f, (const uint8_t *)obj + RRP_HOST_OBJ_FSID, sizeof(f));
	return f;
}

static bool fsid_eq(struct fsid a, struct fsid b)
{
	return a.major == b.major && a.minor == b.minor;
}

/* Logged once each: the layout does not hold, an export cannot be wrapped. */
static atomic_flag root_bad_logged = ATOMIC_FLAG_INIT;
static atomic_flag wrap_bad_logged = ATOMIC_FLAG_INIT;

/* An export's root object, when its layout is the one expected. */
static void *export_root(void *gexp)
{
	void *root = load_ptr(gexp, RRP_HOST_EXPORT_ROOT_OBJ);
	uint32_t type;

	if (!root)
		return NULL;
	memcpy(&type, (uint8_t *)root + RRP_HOST_OBJ_TYPE, sizeof(type));
	if (type != RRP_HOST_OBJ_DIRECTORY) {
		if (!atomic_flag_test_and_set(&root_bad_logged))
			rrp_log("ganesha's export root objects are not those of %s: with "
				"Exclude_Exports set, no handle is served over RDMA",
				rrp_host_ops.name);
		return NULL;
	}
	return root;
}

/*
 * The file systems of the excluded exports' roots, read again at most once
 * a second (and at once after a reload), so that an export added or moved
 * (DBus AddExport, SIGHUP) counts within a second; a seqlock lets the
 * checks read them without a lock.
 */
#define EXCL_FS_MAX 64
static struct {
	pthread_mutex_t lock;
	atomic_uint seq;
	atomic_llong next_ms; /* refresh due at this CLOCK_MONOTONIC_COARSE ms */
	atomic_uint n;
	atomic_bool overflow; /* more than EXCL_FS_MAX: every export shares */
	_Atomic uint64_t major[EXCL_FS_MAX], minor[EXCL_FS_MAX];
	_Atomic uint16_t id[EXCL_FS_MAX];	 /* an excluded export on it, for the log */
	uint8_t logged[RRP_EXPORT_ID_COUNT / 8]; /* allowed exports said to share */
} excl = {.lock = PTHREAD_MUTEX_INITIALIZER};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The exports sharing an excluded export's file system are named in the
 * log at start-up and after a reload, by a scan of every Export_Id. */
static atomic_bool scan_pending = true;

/* The excluded Export_Ids as a list, made again after a reload: a refresh
 * need not walk the whole set (RRP_EXPORT_ID_COUNT bits). */
#define EXCL_IDS_MAX 256
static uint16_t excl_ids[EXCL_IDS_MAX];
static unsigned int n_excl_ids; /* > EXCL_IDS_MAX: walk the set */
static atomic_bool ids_stale = true;

void rrp_exports_refresh(void)
{
	atomic_store(&ids_stale, true);
	atomic_store(&scan_pending, true);
	atomic_store(&excl.next_ms, 0);
}

static int excl_find(struct fsid f);
static void log_shared(uint16_t id, int shared);

static void scan_shared(void)
{
	unsigned int id;

	for (id = 0; id < RRP_EXPORT_ID_COUNT; id++) {
		void *e, *root;
		int shared;

		if (rrp_config_export_excluded(&rrp.cfg, (uint16_t)id))
			continue;
		e = rrp_real->get_gsh_export((uint16_t)id);
		if (!e)
			continue;
		root = export_root(e);
		shared = root ? excl_find(obj_fsid(root)) : -1;
		if (shared >= 0)
			log_shared((uint16_t)id, shared);
		rrp_real->put_gsh_export(e, false, (char *)__FILE__, __LINE__, (char *)__func__);
	}
}

/* Add file system @f of excluded export @id to the table being written. */
static void excl_add(struct fsid f, uint16_t id, unsigned int *n, bool *over)
{
	unsigned int i;

	for (i = 0; i < *n; i++)
		if (atomic_load_explicit(&excl.major[i], memory_order_relaxed) == f.major &&
		    atomic_load_explicit(&excl.minor[i], memory_order_relaxed) == f.minor)
			return;
	if (*n == EXCL_FS_MAX) {
		*over = true;
		return;
	}
	atomic_store_explicit(&excl.major[*n], f.major, memory_order_relaxed);
	atomic_store_explicit(&excl.minor[*n], f.minor, memory_order_relaxed);
	atomic_store_explicit(&excl.id[*n], id, memory_order_relaxed);
	(*n)++;
}

static void excl_list(void)
{
	unsigned int w;

	n_excl_ids = 0;
	for (w = 0; w < RRP_EXPORT_ID_COUNT / 64; w++) {
		uint64_t bits = __atomic_load_n(&rrp.cfg.exclude_exports[w], __ATOMIC_RELAXED);

		for (; bits; bits &= bits - 1, n_excl_ids++)
			if (n_excl_ids < EXCL_IDS_MAX)
				excl_ids[n_excl_ids] = (uint16_t)(w * 64 + __builtin_ctzll(bits));
	}
}

/* Excluded export @id's root file system into the table being written. */
static void excl_read(uint16_t id, unsigned int *n, bool *over)
{
	void *e = rrp_real->get_gsh_export(id);
	void *root = e ? export_root(e) : NULL;

	if (root)
		excl_add(obj_fsid(root), id, n, over);
	if (e)
		rrp_real->put_gsh_export(e, false, (char *)__FILE__, __LINE__, (char *)__func__);
}

static void excl_refresh(long long now)
{
	unsigned int n = 0, i;
	bool over = false;

	if (pthread_mutex_trylock(&excl.lock))
		return; /* another thread refreshes: use what is there */
	if (now < atomic_load(&excl.next_ms)) {
		pthread_mutex_unlock(&excl.lock);
		return;
	}
	if (atomic_exchange(&ids_stale, false))
		excl_list();
	atomic_fetch_add_explicit(&excl.seq, 1, memory_order_acq_rel); /* odd: writing */
	if (n_excl_ids <= EXCL_IDS_MAX) {
		for (i = 0; i < n_excl_ids; i++)
			excl_read(excl_ids[i], &n, &over);
	} else {
		for (i = 0; i < RRP_EXPORT_ID_COUNT; i++)
			if (rrp_config_export_excluded(&rrp.cfg, (uint16_t)i))
				excl_read((uint16_t)i, &n, &over);
	}
	atomic_store_explicit(&excl.n, n, memory_order_relaxed);
	atomic_store_explicit(&excl.overflow, over, memory_order_relaxed);
	atomic_fetch_add_explicit(&excl.seq, 1, memory_order_acq_rel); /* even: done */
	atomic_store(&excl.next_ms, now + 1000);
	/* at start-up the roots may not be set yet: scan once they are */
	if (n && atomic_exchange(&scan_pending, false))
		scan_shared();
	pthread_mutex_unlock(&excl.lock);
}

void rrp_exports_start(void)
{
	if (rrp.cfg.n_exclude_exports && rrp_real->get_gsh_export && rrp_real->put_gsh_export)
		excl_refresh(now_ms());
}

/* The excluded export whose root is on file system @f, or -1. */
static int excl_find(struct fsid f)
{
	unsigned int seq, n, i;
	int found;

	do {
		seq = atomic_load_explicit(&excl.seq, memory_order_acquire);
		found = atomic_load_explicit(&excl.overflow, memory_order_relaxed) ? 0 : -1;
		n = atomic_load_explicit(&excl.n, memory_order_relaxed);
		for (i = 0; i < n && found < 0; i++)
			if (atomic_load_explicit(&excl.major[i], memory_order_relaxed) == f.major &&
			    atomic_load_explicit(&excl.minor[i], memory_order_relaxed) == f.minor)
				found = atomic_load_explicit(&excl.id[i], memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
	} while ((seq & 1) || seq != atomic_load_explicit(&excl.seq, memory_order_relaxed));
	return found;
}

static int excl_on(struct fsid f)
{
	long long now = now_ms();

	if (now >= atomic_load_explicit(&excl.next_ms, memory_order_relaxed))
		excl_refresh(now);
	return excl_find(f);
}

static void log_shared(uint16_t id, int shared)
{
	if (!(__atomic_fetch_or(&excl.logged[id / 8], (uint8_t)(1u << (id % 8)), __ATOMIC_RELAXED) &
	      (1u << (id % 8))))
		rrp_log("Export_Id %u shares its file system with Export_Id %d, which "
			"Exclude_Exports keeps off RDMA: no handle of Export_Id %u is served "
			"over RDMA either (a handle does not say where in a file system it points)",
			id, shared, id);
}

/*
 * May an RDMA Call reach @obj, which a handle resolved to through op_ctx's
 * export? Its export's Export_Id was checked already (not excluded).
 */
static bool object_allowed(SVCXPRT *xprt, void *obj)
{
	uint8_t *ctx = op_ctx_now();
	void *exp = ctx ? load_ptr(ctx, RRP_HOST_OP_CTX_EXPORT) : NULL;
	void *root = exp ? export_root(exp) : NULL;
	struct fsid f;
	uint16_t id;
	int shared;

	if (!root)
		return false;
	f = obj_fsid(root);
	memcpy(&id, (uint8_t *)exp + RRP_HOST_EXPORT_ID, sizeof(id));
	if (!fsid_eq(obj_fsid(obj), f)) {
		rrp_xprt_note_refused_handle(xprt, id,
					     "its object is not on the export's file system");
		return false;
	}
	shared = excl_on(f);
	if (shared < 0 || shared == id)
		return shared < 0;
	log_shared(id, shared);
	rrp_xprt_note_refused_handle(xprt, id,
				     "the export shares its file system with an excluded one");
	return false;
}

static _Atomic(create_handle_fn) real_create_handle;

/* MDCACHE's create_handle, wrapped: see the top of this file. */
static struct rrp_fsal_status create_handle(void *exp, void *desc, void **obj, void *attrs)
{
	create_handle_fn real = atomic_load_explicit(&real_create_handle, memory_order_relaxed);
	struct rrp_fsal_status st = real(exp, desc, obj, attrs);
	struct rrp_exports_call *c = this_call;
	SVCXPRT *xprt = c ? c->xprt : NULL;
	void (*put_ref)(void *obj);

	if (st.major || !xprt || !*obj || !rrp.cfg.n_exclude_exports || object_allowed(xprt, *obj))
		return st;
	put_ref = load_ptr(load_ptr(*obj, RRP_HOST_OBJ_OPS), RRP_HOST_OBJ_OPS_PUT_REF);
	put_ref(*obj);
	*obj = NULL;
	return (struct rrp_fsal_status){RRP_ERR_FSAL_STALE, ESTALE};
}

/* Is @fn in libganesha_nfsd (where MDCACHE is)? */
static bool in_ganesha(void *fn)
{
	Dl_info a, b;

	return fn && dladdr(fn, &a) && dladdr((void *)rrp_real->get_gsh_export, &b) &&
	       a.dli_fbase == b.dli_fbase;
}

/*
 * Wrap the create_handle of ganesha export @gexp (struct gsh_export *):
 * false when it cannot be, and then no handle of it is served over RDMA.
 */
static bool wrap_export(void *gexp)
{
	uint8_t *fexp = load_ptr(gexp, RRP_HOST_EXPORT_FSAL_EXPORT);
	create_handle_fn *slot, cur, real;

	if (!fexp)
		return false;
	slot = (create_handle_fn *)(fexp + RRP_HOST_FSAL_EXPORT_CREATE_HANDLE);
	cur = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (cur == create_handle)
		return true;
	real = atomic_load(&real_create_handle);
	if (!real && in_ganesha((void *)cur)) {
		atomic_compare_exchange_strong(&real_create_handle, &real, cur);
		real = atomic_load(&real_create_handle);
	}
	if (!real || cur != real) {
		if (!atomic_flag_test_and_set(&wrap_bad_logged))
			rrp_log("an export's create_handle is not MDCACHE's of %s: with "
				"Exclude_Exports set, such exports are refused over RDMA",
				rrp_host_ops.name);
		return false;
	}
	__atomic_compare_exchange_n(slot, &cur, create_handle, false, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
	return true;
}

/* An NFSv3 Call for an excluded export: refused (out of line, rare). */
static __attribute__((noinline, cold)) void *v3_refused(SVCXPRT *xprt, uint16_t id)
{
	rrp_xprt_note_refused(xprt, id, "NFSv3");
	return NULL;
}

/* With Exclude_Exports set: the export, its create_handle wrapped
 * (wrap_export), or none for the armed dispatch (@xprt) when it cannot be. */
static __attribute__((noinline)) void *get_export_wrapped(uint16_t id, SVCXPRT *xprt)
{
	void *exp = rrp_real->get_gsh_export(id);

	if (exp && !wrap_export(exp) && xprt) {
		rrp_real->put_gsh_export(exp, false, (char *)__FILE__, __LINE__, (char *)__func__);
		return NULL;
	}
	return exp;
}

/*
 * Hook of libganesha_nfsd's struct gsh_export *get_gsh_export(uint16_t),
 * which it calls through its PLT (interposed by rrp_preload.c). The NFSv3
 * dispatcher's lookup of the Call's export is the first call during a
 * Call's dispatch, or during its resume where ganesha suspended it before
 * (a retransmission waiting for its original, which ganesha dispatches
 * anew on the resuming thread if the original was dropped); later ones (and
 * every other thread's) pass through. Every NFSv3 Call passes here: the
 * rest is out of line, so that with nothing excluded this is a few tests
 * and a tail call.
 */
void *rrp_exports_get_gsh_export(uint16_t id)
{
	struct rrp_exports_call *c = this_call;
	SVCXPRT *xprt = NULL;

	if (c && c->v3_lookup) {
		c->v3_lookup = false;
		xprt = c->xprt;
		if (rrp_config_export_excluded(&rrp.cfg, id))
			return v3_refused(xprt, id);
	}
	if (rrp.cfg.n_exclude_exports)
		return get_export_wrapped(id, xprt);
	return rrp_real->get_gsh_export(id);
}

/* ---- NFSv4: ganesha's export check, interposed ------------------------ */

enum layout { LAYOUT_UNKNOWN, LAYOUT_OK, LAYOUT_BAD };

/*
 * The offsets of rrp_host.h, checked once: the export op_ctx names must be
 * the one get_gsh_export() finds by the Export_Id read from it. An Export_Id
 * read as 0 proves nothing (a wrong offset reading 0 in the pseudo root
 * finds the pseudo root): that request is decided by the lookup, and the
 * question stays open for an export whose Export_Id is not 0. An export
 * removed meanwhile also leaves it open.
 */
static enum layout layout_check(void *exp, uint16_t id)
{
	void *found;

	if (!rrp_real->get_gsh_export || !rrp_real->put_gsh_export)
		return LAYOUT_BAD;
	found = rrp_real->get_gsh_export(id);
	if (!found)
		return LAYOUT_UNKNOWN;
	rrp_real->put_gsh_export(found, false, (char *)__FILE__, __LINE__, (char *)__func__);
	return found == exp ? LAYOUT_OK : LAYOUT_BAD;
}

/*
 * May the current NFSv4 request, which came over RDMA, enter the export
 * ganesha's op_ctx names? Not when it is excluded, nor when the layout
 * cannot be trusted (refused rather than let an excluded export through).
 */
static bool v4_export_allowed(SVCXPRT *xprt)
{
	static _Atomic int layout = LAYOUT_UNKNOWN;
	static atomic_flag bad_logged = ATOMIC_FLAG_INIT;
	uint8_t *ctx = op_ctx_now();
	uint8_t *exp;
	uint16_t id;
	int l;

	if (!ctx)
		return false;
	memcpy(&exp, ctx + RRP_HOST_OP_CTX_EXPORT, sizeof(exp));
	if (!exp)
		return false;
	memcpy(&id, exp + RRP_HOST_EXPORT_ID, sizeof(id));
	l = atomic_load_explicit(&layout, memory_order_relaxed);
	if (l == LAYOUT_UNKNOWN) {
		l = layout_check(exp, id);
		if (l == LAYOUT_BAD || (l == LAYOUT_OK && id != 0))
			atomic_store_explicit(&layout, l, memory_order_relaxed);
	}
	if (l == LAYOUT_BAD) {
		if (!atomic_flag_test_and_set(&bad_logged))
			rrp_log("ganesha's export structures are not those of %s: with "
				"Exclude_Exports set, NFSv4 over RDMA is refused every export",
				rrp_host_ops.name);
		return false;
	}
	if (l == LAYOUT_UNKNOWN)
		return false;
	if (rrp_config_export_excluded(&rrp.cfg, id)) {
		rrp_xprt_note_refused(xprt, id, "NFSv4");
		return false;
	}
	/* the objects its handles resolve to are checked too */
	return wrap_export(exp);
}

/* Hook of libganesha_nfsd's nfsstat4 nfs4_export_check_access(struct
 * svc_req *), interposed by rrp_preload.c. */
int rrp_exports_check_access(struct svc_req *req)
{
	/* ganesha's check first: it sets op_ctx's permissions and credentials. */
	int st = rrp_real->nfs4_export_check_access(req);

	if (!rrp.cfg.n_exclude_exports || !req || !rrp_is_our_xprt(req->rq_xprt))
		return st;
	return v4_export_allowed(req->rq_xprt) ? st : RRP_NFS4ERR_ACCESS;
}
