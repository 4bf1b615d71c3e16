// SPDX-License-Identifier: MIT
/*
 * rrp_xprt.c - one ntirpc SVCXPRT per RDMA connection, and each Call driven
 * through ganesha the way ntirpc's svc_request does it:
 *   alloc_cb -> SVC_DECODE (xdr_dplx_decode, process_cb) -> [ganesha
 *   authenticates, decodes the arguments from our XDR, executes, calls
 *   svc_sendreply -> xp_reply] -> SVCAUTH_RELEASE -> XDR_DESTROY -> free_cb.
 * The Reply is encoded into buffers of ours with READ data by reference; the
 * Upper-Layer Binding says which bytes go to which Write chunk, the engine
 * how the rest goes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rpc/rpc.h>
#include <rpc/svc_auth.h>

#include "plugin/rrp_exports.h"
#include "plugin/rrp_host.h"
#include "plugin/rrp_interpose.h"
#include "plugin/rrp_payload.h"
#include "plugin/rrp_plugin.h"
#include "plugin/rrp_slots.h"
#include "plugin/rrp_xdr.h"
#include "rpcrdma/rr_handoff.h"
#include "ulb/ulb_call.h"
#include "ulb/ulb_nfs.h"
#include "ulb/ulb_reply.h"

/*
 * Lifetime. xp_refcnt starts at 2: the transport's own reference, which
 * the first SVC_DESTROY drops (ganesha's - complete_request after x_reply
 * says XPRT_DIED, its connection manager, RPCSEC_GSS - or ours at
 * conn_down), and the engine's link (the connection's upper pointer and
 * the stats socket's client list), which conn_down drops after unlinking.
 * Each Call in flight and each backchannel CLIENT holds one more. So the
 * transport outlives both ganesha's destroy and the engine's conn_down,
 * in whichever order they come, and the last release frees it.
 */
struct rrp_xprt {
	SVCXPRT xprt;			/* first: ganesha sees only this */
	struct xp_ops ops;		/* our own copy: ganesha writes into it */
	struct rr_conn *conn;		/* the backchannel's (rrp_plugin.h) */
	/* x_unlink, on any thread, closes the connection while it is
	 * linked; conn_down unlinks it before letting it go. */
	pthread_mutex_t lock;
	bool linked;			/* (lock) conn_down has not run */
	atomic_bool unlinked;		/* SVC_DESTROY ran: Calls are dropped */
	atomic_flag refusal_logged;	/* an excluded export was refused (rrp_exports.c) */
	bool host_refused;		/* ganesha refused the client at admission */
	char peer[64];			/* for that log line: conn is gone at conn_down */
	struct rrp_client client;	/* for the stats socket (rrp_stats.c) */
};

/*
 * One request: the decode stream ganesha reads the Call from, the stream
 * its Reply is encoded into, and the queue link that takes it to a worker.
 * Two holds - the request (until ganesha destroys the decode stream) and
 * the Reply (until the engine is done with its buffers) - and the last one
 * gives it back to a free list, so a call allocates nothing in steady state.
 */
struct rrp_req {
	struct rrp_xdr_dec dec;		/* first: req->rq_xdrs points here */
	struct rrp_work work;
	struct rr_call *call;
	struct rrp_xprt *x;
	atomic_uint holds;
	bool replied;
	bool scanned;			/* ulb holds a valid scan of the Call */
	bool ddp_violation;		/* RFC 8267 section 2.5: GARBAGE_ARGS */
	struct rrp_exports_call excl;	/* the export checks' view of the Call */
	svc_req_fun_t resume_cb;	/* ganesha's, while x_resume stands in */
	struct rrp_xdr_enc enc;		/* the Reply; reused, buffer kept */
	struct rr_handoff free_link;	/* req_returned, then req_mine */
	struct ulb_call ulb;
};

/* Enough for every credit of a few busy connections; beyond, freed. */
#define RRP_REQ_FREE_MAX 256

/*
 * Free requests: any thread gives one back with a push on an rr_handoff
 * stack; requests are taken only in up_call, on an engine event thread,
 * which takes the whole stack (newest first: the one in cache) to a list of
 * its own and pops from that (docs/threading.md).
 */
static _Atomic(struct rr_handoff *) req_returned;
static atomic_uint req_nfree;		/* on the stack or a thread's list */
/* Initial-exec: the plugin is preloaded, so its TLS is static (a load, not a
 * __tls_get_addr call, per request). */
static _Thread_local struct rr_handoff *req_mine __attribute__((tls_model("initial-exec")));

static void rrp_process(void *arg);

static struct rrp_req *req_get(void)
{
	struct rr_handoff *h = req_mine ? req_mine : rr_handoff_take_all(&req_returned);
	struct rrp_req *rq;

	if (h) {
		req_mine = h->next;
		rq = RR_CONTAINER_OF(h, struct rrp_req, free_link);
		atomic_fetch_sub_explicit(&req_nfree, 1, memory_order_relaxed);
	} else {
		/* Not zeroed: the ULB scan initialises its part, and only if needed. */
		rq = malloc(sizeof(*rq));
		if (!rq)
			return NULL;
		if (rrp_xdr_enc_init(&rq->enc)) {
			free(rq);
			return NULL;
		}
		rq->work.fn = rrp_process;
		rq->work.arg = rq;
		rq->work.heap = false;
	}
	atomic_init(&rq->holds, 1);
	rq->replied = false;
	rq->scanned = false;
	rq->ddp_violation = false;
	return rq;
}

static void req_put(struct rrp_req *rq)
{
	if (atomic_fetch_sub(&rq->holds, 1) != 1)
		return;
	if (atomic_fetch_add_explicit(&req_nfree, 1, memory_order_relaxed) >= RRP_REQ_FREE_MAX) {
		atomic_fetch_sub_explicit(&req_nfree, 1, memory_order_relaxed);
		rrp_xdr_enc_fini(&rq->enc);
		free(rq);
		return;
	}
	rr_handoff_push(&req_returned, &rq->free_link);
}

static struct rrp_xprt *XP(SVCXPRT *xprt)
{
	return (struct rrp_xprt *)xprt;
}

/* A request's decode stream is the first member of its rrp_req. */
static struct rrp_req *RQ(const struct svc_req *req)
{
	return (struct rrp_req *)req->rq_xdrs;
}

/* ---- xp_ops ---------------------------------------------------------- */

static enum xprt_stat x_recv(SVCXPRT *xprt)
{
	(void)xprt; /* the engine receives; ntirpc never polls us */
	return XPRT_IDLE;
}

static enum xprt_stat x_stat(SVCXPRT *xprt)
{
	if (xprt->xp_flags & SVC_XPRT_FLAG_DESTROYED)
		return XPRT_DESTROYED;
	return XPRT_IDLE;
}

static enum xprt_stat x_decode(struct svc_req *req)
{
	XDR *xdrs = req->rq_xdrs;
	SVCXPRT *xprt = req->rq_xprt;
	enum xprt_stat stat;

	xdrs->x_op = XDR_DECODE;
	/* rpc_msg_init() less the copy of _null_auth's 400-byte body: the
	 * verifier is read only up to oa_length, here 0 (AUTH_NONE). */
	req->rq_msg.RPCM_ack.ar_verf.oa_flavor = _null_auth.oa_flavor;
	req->rq_msg.RPCM_ack.ar_verf.oa_length = _null_auth.oa_length;
	req->rq_msg.RPCM_ack.ar_results.where = NULL;
	req->rq_msg.RPCM_ack.ar_results.proc = (xdrproc_t)xdr_void;
	if (!xdr_dplx_decode(xdrs, &req->rq_msg)) {
		/* Message boundaries survive on RDMA: drop just this one. */
		atomic_fetch_add(&rrp.dropped, 1);
		return XPRT_IDLE;
	}
	if (req->rq_msg.rm_direction == CALL) {
		struct rrp_req *rq = (struct rrp_req *)xdrs;
		struct rrp_exports_call *prev;
		uint16_t id;

		if (rq->ddp_violation) {
			/* A Read chunk not at a DDP-eligible item (RFC 8267 2.5). */
			svcerr_decode(req);
			return XPRT_IDLE;
		}
		if (rrp_exports_v3_refused(&rq->dec, &req->rq_msg, &id)) {
			/* ganesha's answer when an export refuses the transport */
			rrp_xprt_note_refused(xprt, id, "NFSv3");
			svcerr_auth(req, AUTH_FAILED);
			return XPRT_IDLE;
		}
		prev = rrp_exports_dispatch_begin(&rq->excl, xprt, &req->rq_msg);
		stat = xprt->xp_dispatch.process_cb(req);
		/* XPRT_SUSPEND: rq is the resumer's now (x_resume) */
		rrp_exports_dispatch_end(prev);
		return stat;
	}
	atomic_fetch_add(&rrp.dropped, 1);
	return XPRT_IDLE;
}

/* Add the Call bytes the decoder copied so far to the plugin's counter;
 * done before the Reply goes, so a client that reads the counter after
 * its answer sees its own Call counted. */
static void count_decode_copies(struct rrp_xdr_dec *dec)
{
	if (dec->copied)
		atomic_fetch_add(&rrp.decode_copy_bytes, dec->copied);
	if (dec->in_place)
		atomic_fetch_add(&rrp.decode_in_place_bytes, dec->in_place);
	dec->copied = 0;
	dec->in_place = 0;
}

/* The engine is done with the Reply's buffers: ready the stream for reuse. */
static void reply_done(void *arg)
{
	struct rrp_req *rq = arg;

	rrp_xdr_enc_recycle(&rq->enc);
	req_put(rq);
}

/* The Reply stream, empty (a failed recycle left none: try again here). */
static struct rrp_xdr_enc *reply_stream(struct rrp_req *rq)
{
	if (rq->enc.nseg == 0 && rrp_xdr_enc_recycle(&rq->enc))
		return NULL;
	atomic_fetch_add(&rq->holds, 1);
	return &rq->enc;
}

/*
 * The Upper-Layer Binding pairs the k-th NFS Read result with the k-th Write
 * chunk and says whether the chunks can carry the payloads; the engine alone
 * sizes the rest and decides how it goes (rr_reply). A Call it could not scan
 * (another program, RPCSEC_GSS privacy) has no payloads. Where the encoder
 * kept READ data by reference, the ULB is told where, and checks it there
 * rather than walking to it.
 */
static void plan_reply(struct rrp_req *rq, const struct iovec *iov, int n,
		       struct rr_reply_plan *plan)
{
	if (rq->scanned) {
		ulb_reply_plan(&rq->ulb, iov, n, rq->call->pcl, rq->enc.ref_at, plan, NULL);
		return;
	}
	plan->nspans = 0;
	plan->deliverable = true;
}

/*
 * The Reply cannot be encoded (our stream has no room for it: a COMPOUND of
 * many READs fills its segment table; out of memory): as svc_vc does,
 * XPRT_DIED, and ganesha destroys the transport, which closes the
 * connection (x_unlink). The COMPOUND ran: its retry, on the client's next
 * connection, must not be answered by a replay that fails the same way, so
 * its slot answers NFS4ERR_RETRY_UNCACHED_REP (rrp_slots.c), as after
 * ERR_CHUNK.
 */
static enum xprt_stat reply_failed(struct rrp_req *rq)
{
	atomic_fetch_add(&rrp.replies_failed, 1);
	if (rq->scanned && rq->ulb.has_sequence)
		rrp_slots_uncache(&rq->ulb.seq);
	return XPRT_DIED;
}

static enum xprt_stat x_reply(struct svc_req *req)
{
	struct rrp_req *rq = RQ(req);
	struct iovec iov[RRP_ENC_MAX_SEG];
	struct rr_reply_plan plan;
	struct rrp_xdr_enc *enc;
	int n;

	if (rq->replied)
		return XPRT_IDLE;
	enc = reply_stream(rq);
	if (!enc)
		return reply_failed(rq);
	if (!xdr_dplx_msg(&enc->xdrs, &req->rq_msg))
		goto fail;
	if (req->rq_msg.rm_reply.rp_stat == MSG_ACCEPTED &&
	    req->rq_msg.rm_reply.rp_acpt.ar_stat == SUCCESS && req->rq_auth &&
	    !SVCAUTH_WRAP(req, &enc->xdrs))
		goto fail;
	if (enc->failed)
		goto fail;
	n = rrp_xdr_enc_iov(enc, iov);
	{
		size_t bytes = 0;

		for (int i = 0; i < n; i++)
			bytes += iov[i].iov_len;
		atomic_fetch_add_explicit(&rq->x->client.reply_bytes, bytes,
					  memory_order_relaxed);
	}
	plan_reply(rq, iov, n, &plan);
	count_decode_copies(&rq->dec);
	rq->replied = true;
	rr_reply(rq->call, iov, n, &plan, reply_done, rq);
	return XPRT_IDLE;
fail:
	reply_done(rq); /* the stream's buffers and READ data go back */
	return reply_failed(rq);
}

/*
 * An NFSv4.1+ COMPOUND is never kept in the duplicate-request cache: its
 * session slot's reply cache gives it exactly-once semantics (RFC 8881
 * section 2.10.6), and ganesha caches by minor version 0 only. Its checksum
 * would be computed for nothing, on every Call.
 */
static bool drc_may_key(const struct svc_req *req)
{
	const struct rrp_req *rq = RQ(req);

	return !(rq->scanned && rq->ulb.ulp == ULB_ULP_NFS4 && rq->ulb.minorversion >= 1);
}

/*
 * The duplicate-request cache keys on this (as svc_vc: first 256 bytes).
 * FNV-1a's step eight bytes at a time in two independent lanes, 16 bytes a
 * round, then the lanes mixed and folded so that the high bits, which the
 * multiply mixes best, reach the low ones too.
 */
static void x_checksum(struct svc_req *req, void *data, size_t length)
{
	const uint64_t prime = 1099511628211ull;
	const uint8_t *p = data;
	uint64_t a = 1469598103934665603ull, b = a ^ 1, w, v;
	size_t i = 0;

	if (!drc_may_key(req)) {
		req->rq_cksum = 0;
		return;
	}
	if (length > 256)
		length = 256;
	for (; i + 16 <= length; i += 16) {
		memcpy(&w, p + i, 8);
		memcpy(&v, p + i + 8, 8);
		a = (a ^ w) * prime;
		b = (b ^ v) * prime;
	}
	if (i + 8 <= length) {
		memcpy(&w, p + i, 8);
		a = (a ^ w) * prime;
		i += 8;
	}
	for (; i < length; i++)
		b = (b ^ p[i]) * prime;
	a = (a * prime) ^ b;
	req->rq_cksum = a ^ (a >> 29) ^ length;
}

/*
 * SVC_DESTROY, ganesha's (any thread) or conn_down's: the connection goes
 * down, as svc_vc's unlink shuts its socket. The engine closes it on its
 * own thread and then reports conn_down, which unlinks the transport; Calls
 * that arrive meanwhile are dropped (up_call). Once conn_down has run the
 * connection may be freed, so it is reached only under the lock that
 * conn_down takes to unlink.
 */
static void x_unlink(SVCXPRT *xprt, u_int flags, const char *tag, const int line)
{
	struct rrp_xprt *x = XP(xprt);

	(void)flags;
	(void)tag;
	(void)line;
	atomic_store(&x->unlinked, true);
	pthread_mutex_lock(&x->lock);
	if (x->linked)
		rr_conn_close_async(x->conn);
	pthread_mutex_unlock(&x->lock);
}

/* Last reference: ganesha's per-connection data (DRC) first, then ours. */
static void x_destroy(SVCXPRT *xprt, u_int flags, const char *tag, const int line)
{
	struct rrp_xprt *x = XP(xprt);

	(void)flags;
	(void)tag;
	(void)line;
	if (x->ops.xp_free_user_data)
		x->ops.xp_free_user_data(xprt);
	pthread_mutex_destroy(&xprt->xp_lock);
	pthread_mutex_destroy(&x->lock);
	free(x);
}

static bool x_control(SVCXPRT *xprt, const u_int rq, void *in)
{
	switch (rq) {
	case SVCGET_XP_FLAGS:
		*(u_int *)in = xprt->xp_flags;
		return true;
	case SVCSET_XP_FLAGS:
		xprt->xp_flags = (uint16_t)*(u_int *)in;
		return true;
	case SVCGET_XP_FREE_USER_DATA:
		*(svc_xprt_fun_t *)in = xprt->xp_ops->xp_free_user_data;
		return true;
	case SVCSET_XP_FREE_USER_DATA:
		/* the function itself is passed, as ntirpc's own xprts take it */
		XP(xprt)->ops.xp_free_user_data = (svc_xprt_fun_t)in;
		return true;
	default:
		return rrp_host_ops.xp_control &&
		       rrp_host_ops.xp_control(&XP(xprt)->ops, rq, in);
	}
}

/* ---- transports ------------------------------------------------------ */

static void set_addr(struct rpc_address *ra, const struct sockaddr_storage *ss)
{
	socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						  : sizeof(struct sockaddr_in);

	__rpc_address_setup(ra);
	memcpy(&ra->ss, ss, len);
	__rpc_address_set_length(ra, len);
}

/* Event thread: the SVCXPRT for a connection, made on first use. */
static struct rrp_xprt *conn_xprt(struct rr_conn *conn)
{
	struct rrp_xprt *x = rr_conn_get_upper(conn);
	struct sockaddr_storage local, remote;

	if (x)
		return x;
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->conn = conn;
	x->ops.xp_recv = x_recv;
	x->ops.xp_stat = x_stat;
	x->ops.xp_decode = x_decode;
	x->ops.xp_reply = x_reply;
	x->ops.xp_checksum = x_checksum;
	x->ops.xp_unlink = x_unlink;
	x->ops.xp_destroy = x_destroy;
	x->ops.xp_control = x_control;
	x->ops.xp_free_user_data = rrp_host.free_user_data;
	x->xprt.xp_ops = &x->ops;
	x->xprt.xp_fd = -1;
	x->xprt.xp_fd_send = -1;
	x->xprt.xp_refcnt = 2; /* its own and the engine's link (struct rrp_xprt) */
	pthread_mutex_init(&x->lock, NULL);
	x->linked = true;
	atomic_init(&x->unlinked, false);
	atomic_flag_clear(&x->refusal_logged);
	snprintf(x->peer, sizeof(x->peer), "%s", rr_conn_peer(conn));
	/* Not XPRT_RDMA: ganesha refuses a backchannel on that type. Its
	 * export checks refuse only UDP and TCP, whichever type this is, so
	 * exports are kept off RDMA by Exclude_Exports (rrp_exports.c). */
	x->xprt.xp_type = XPRT_UNKNOWN;
	x->xprt.xp_netid = (char *)"rdma";
	x->xprt.xp_tp = (char *)"rpcrdma";
	x->xprt.xp_parent = &rrp.listener; /* rendezvous ends with SVC_STAT(xp_parent) */
	pthread_mutex_init(&x->xprt.xp_lock, NULL);
	rr_conn_addrs(conn, &local, &remote);
	set_addr(&x->xprt.xp_local, &local);
	set_addr(&x->xprt.xp_remote, &remote);
	if (remote.ss_family == AF_INET6)
		x->xprt.xp_netid = (char *)"rdma6";

	/* ganesha's NFS rendezvous sets process_cb (nfs_rpc_valid_NFS). */
	rrp_host.nfs_rendezvous(&x->xprt);
	if (rrp_host_ops.xprt_admitted && !rrp_host_ops.xprt_admitted(&x->xprt)) {
		/* its Calls are dropped; the client's retransmission timer and
		 * the engine's idle bound end the connection */
		x->host_refused = true;
		rrp_log("%s: ganesha refused this client (its connection manager): "
			"its calls are dropped", x->peer);
	}
	rr_conn_set_upper(conn, x);
	x->client.conn_id = rr_conn_id(conn);
	snprintf(x->client.peer, sizeof(x->client.peer), "%s", x->peer);
	rrp_client_list(&x->client);
	return x;
}

static void up_conn_up(void *ctx, struct rr_conn *conn)
{
	(void)ctx;
	conn_xprt(conn);
}

static void up_conn_down(void *ctx, struct rr_conn *conn)
{
	struct rrp_xprt *x = rr_conn_get_upper(conn);

	(void)ctx;
	if (!x)
		return;
	rr_conn_set_upper(conn, NULL);
	/* From here no x_unlink reaches the connection: it may be freed once
	 * this returns. */
	pthread_mutex_lock(&x->lock);
	x->linked = false;
	pthread_mutex_unlock(&x->lock);
	/* x->conn is cleared there, with the clients made on it marked dead
	 * in the same critical section: one made concurrently is never left
	 * live on a freed connection. */
	rrp_bc_conn_down(&x->xprt, conn);
	rrp_client_unlist(&x->client);
	/* Its own reference, unless ganesha destroyed it first (SVC_DESTROY
	 * does it once), then the link's: freed when the last request or
	 * CLIENT lets go. */
	SVC_DESTROY(&x->xprt);
	SVC_RELEASE(&x->xprt, SVC_RELEASE_FLAG_NONE);
}

static void up_call(void *ctx, struct rr_call *call)
{
	struct rrp_xprt *x = conn_xprt(call->conn);
	struct rrp_req *rq = NULL;

	(void)ctx;
	/* Not once ganesha destroyed the transport: its connection is closing
	 * (x_unlink). */
	if (x && !x->host_refused && rrp_host.alloc_cb &&
	    !atomic_load_explicit(&x->unlinked, memory_order_relaxed))
		rq = req_get();
	if (!rq) {
		atomic_fetch_add(&rrp.dropped, 1);
		rr_call_release(call);
		return;
	}
	/* The worker may run after conn_down: keep the transport alive. */
	SVC_REF(&x->xprt, SVC_REF_FLAG_NONE);
	rq->call = call;
	rq->x = x;
	rrp_queue_work(&rq->work);
}

/*
 * A COMPOUND ran but its Reply could not be delivered (ERR_CHUNK goes
 * instead, after this): its slot's cached reply must not be replayed, so
 * the retry is answered NFS4ERR_RETRY_UNCACHED_REP (rrp_slots.c). The
 * request, still held for its Reply, knows its own SEQUENCE. A client can
 * have every Reply of its fail: the engine logs them through its rate
 * limiter (the first in full, the rest in a summary line); the slot is a
 * detail for DEBUG.
 */
static void up_not_delivered(void *ctx, struct rr_conn *conn, uint32_t xid, void *reply_arg)
{
	struct rrp_req *rq = reply_arg;

	(void)ctx;
	atomic_fetch_add(&rrp.replies_failed, 1);
	if (!rq || !rq->scanned || !rq->ulb.has_sequence)
		return;
	rrp_log_at(RRP_LOG_DEBUG, __func__,
		   "%s: xid %#x: reply not delivered (ERR_CHUNK): slot %u seq %u "
		   "will answer NFS4ERR_RETRY_UNCACHED_REP",
		   rr_conn_peer(conn), xid, rq->ulb.seq.slotid, rq->ulb.seq.sequenceid);
	rrp_slots_uncache(&rq->ulb.seq);
}

void rrp_xprt_note_refused(SVCXPRT *xprt, uint16_t id, const char *what)
{
	struct rrp_xprt *x = XP(xprt);

	if (atomic_flag_test_and_set(&x->refusal_logged))
		return;
	rrp_log("%s: %s refused Export_Id %u, which Exclude_Exports keeps off RDMA "
		"(logged once per connection)", x->peer, what, id);
}

void rrp_xprt_note_refused_handle(SVCXPRT *xprt, uint16_t id, const char *why)
{
	struct rrp_xprt *x = XP(xprt);

	if (atomic_flag_test_and_set(&x->refusal_logged))
		return;
	rrp_log("%s: refused a handle through Export_Id %u over RDMA: %s (Exclude_Exports; "
		"logged once per connection)",
		x->peer, id, why);
}

bool rrp_is_our_xprt(SVCXPRT *xprt)
{
	return xprt && xprt->xp_ops && xprt->xp_ops->xp_recv == x_recv;
}

/*
 * The rest of a suspended Call of ours, on the thread of ntirpc's
 * svc_work_pool that resumes it (svc_resume_task: this, then
 * SVCAUTH_RELEASE, XDR_DESTROY and free_cb as rrp_process would): ganesha's
 * resume callback, with the export checks armed for the Call as during its
 * dispatch (rrp_exports.h).
 */
static enum xprt_stat x_resume(struct svc_req *req)
{
	struct rrp_req *rq = RQ(req);
	svc_req_fun_t cb = rq->resume_cb;
	struct rrp_exports_call *prev;
	enum xprt_stat stat;

	/* ganesha's again, for the next suspension: a COMPOUND sets it once */
	req->rq_resume_cb = cb;
	atomic_fetch_add_explicit(&rrp.resumed, 1, memory_order_relaxed);
	prev = rrp_exports_resume_begin(&rq->excl);
	stat = cb(req);
	/* XPRT_SUSPEND: rq is the next resumer's now */
	rrp_exports_dispatch_end(prev);
	return stat;
}

/*
 * Hook of ntirpc's svc_resume(), by which ganesha (libganesha_nfsd, through
 * its PLT) has a suspended request resumed on svc_work_pool: an asynchronous
 * FSAL's READ or WRITE done, a retransmission whose original is done
 * (nfs_dupreq.c). Ours resume through x_resume. ganesha set rq_resume_cb
 * before, and the request is suspended: no other thread touches it until
 * svc_work_pool runs it.
 */
void rrp_xprt_svc_resume(struct svc_req *req)
{
	if (req && rrp_is_our_xprt(req->rq_xprt) && req->rq_resume_cb &&
	    req->rq_resume_cb != x_resume) {
		RQ(req)->resume_cb = req->rq_resume_cb;
		req->rq_resume_cb = x_resume;
	}
	rrp_real->svc_resume(req);
}

struct rr_conn *rrp_xprt_conn(SVCXPRT *xprt)
{
	return XP(xprt)->conn;
}

void rrp_xprt_forget_conn(SVCXPRT *xprt)
{
	XP(xprt)->conn = NULL;
}

const struct rr_upper_ops rrp_upper_ops = {
	.call = up_call,
	.reply_not_delivered = up_not_delivered,
	.bc_reply = rrp_bc_reply,
	.bc_error = rrp_bc_error,
	.conn_up = up_conn_up,
	.conn_down = up_conn_down,
};

/* ---- one request, on a worker ---------------------------------------- */

static void req_xdr_destroy(struct rrp_xdr_dec *dec)
{
	struct rrp_req *rq = dec->owner;

	if (!rq->replied) {
		rr_call_release(rq->call);	/* the Call's own: no reply went */
	}
	rr_call_release(rq->call);		/* our hold on its buffers */
	count_decode_copies(dec);
	req_put(rq);
}

/* A retry of a COMPOUND whose Reply was lost to ERR_CHUNK: answered here. */
static void answer_uncached(struct rrp_req *rq)
{
	struct rrp_xdr_enc *enc = reply_stream(rq);
	struct rr_reply_plan plan = {.nspans = 0, .deliverable = true};
	struct iovec iov;
	int n;

	if (!enc) {
		rq->dec.destroy(&rq->dec);
		return;
	}
	n = rrp_slots_encode_uncached(rq->call, &rq->ulb, enc->seg[0].base, enc->seg[0].cap);
	if (n < 0) {
		reply_done(rq);
		rq->dec.destroy(&rq->dec);
		return;
	}
	enc->xdrs.x_data = enc->seg[0].base + n;
	rrp_xdr_enc_iov(enc, &iov);
	rq->replied = true;
	rr_reply(rq->call, &iov, 1, &plan, reply_done, rq);
	rq->dec.destroy(&rq->dec);
}

/*
 * The ULB scan is needed when chunks came with the Call (DDP eligibility,
 * Write-chunk pairing) and for NFSv4 (its SEQUENCE slot is what ERR_CHUNK
 * retirement needs). Anything else goes inline or by Reply chunk as the
 * engine decides, without a scan.
 */
static bool needs_scan(const struct rr_call *call)
{
	const uint8_t *p = call->iov[0].iov_base;
	uint32_t prog, vers;

	if (call->pcl->n_read || call->pcl->n_write)
		return true;
	if (call->iovcnt < 1 || call->iov[0].iov_len < 20)
		return true;
	prog = (uint32_t)p[12] << 24 | (uint32_t)p[13] << 16 | (uint32_t)p[14] << 8 | p[15];
	vers = (uint32_t)p[16] << 24 | (uint32_t)p[17] << 16 | (uint32_t)p[18] << 8 | p[19];
	return prog == 100003 && vers == 4;
}

/*
 * The READ buffers ganesha is about to allocate for this Call's data that
 * will go to Write chunks: how many, each at most *max bytes, and whether
 * by posix_memalign (*aligned) or malloc, as the host adapter says its
 * release allocates them (rrp_host_ops.read_v3, read_v4; the export may
 * cap a READ below its count, never above). The k-th Read result pairs
 * with the k-th Write chunk, so a COMPOUND's first min(READs, Write chunks)
 * READs count; one below RRP_PAYLOAD_MIN never takes a slot and is not
 * counted. See rrp_payload.c.
 */
static unsigned int read_buffers_expected(const struct rrp_req *rq, size_t *max, bool *aligned)
{
	const struct ulb_call *u = &rq->ulb;
	struct rrp_host_read_alloc how;
	uint32_t paired;
	unsigned int n = 0;
	size_t most = 0;

	*max = 0;
	if (!rq->scanned)
		return 0;
	paired = u->n_read_ops < rq->call->pcl->n_write ? u->n_read_ops : rq->call->pcl->n_write;
	/* most Calls: no READ, or no Write chunk */
	if (!paired || u->prog != ULB_PROG_NFS ||
	    !(u->vers == 4 || (u->vers == 3 && u->proc == ULB_NFS3_READ)))
		return 0;
	if (paired > ULB_MAX_READ_OPS)
		paired = ULB_MAX_READ_OPS;
	how = u->vers == 4 ? rrp_host_ops.read_v4 : rrp_host_ops.read_v3;
	for (uint32_t i = 0; i < paired; i++) {
		size_t len = u->read_ops[i].count;

		if (how.rndup)
			len = (len + 3) & ~(size_t)3;
		if (len < RRP_PAYLOAD_MIN)
			continue;
		n++;
		if (len > most)
			most = len;
	}
	*max = most;
	*aligned = how.aligned;
	return n;
}

/*
 * What the stats socket shows per client: the NFS version of the Call
 * (from its RPC header, so v3 too, unscanned), and for NFSv4.1+ the
 * clientid ganesha put in the first 8 bytes of the sessionid SEQUENCE
 * carries (ganesha copies its clientid there in host byte order).
 */
static void note_client(struct rrp_xprt *x, const struct rrp_req *rq)
{
	const struct rr_call *call = rq->call;
	const uint8_t *p = call->iov[0].iov_base;
	uint32_t prog, vers, minor = 0;

	atomic_fetch_add_explicit(&x->client.call_bytes, call->len, memory_order_relaxed);
	if (call->iovcnt < 1 || call->iov[0].iov_len < 20)
		return;
	prog = (uint32_t)p[12] << 24 | (uint32_t)p[13] << 16 | (uint32_t)p[14] << 8 | p[15];
	vers = (uint32_t)p[16] << 24 | (uint32_t)p[17] << 16 | (uint32_t)p[18] << 8 | p[19];
	if (prog != ULB_PROG_NFS || vers < 2 || vers > 4)
		return;
	if (vers == 4) {
		if (!rq->scanned)
			return; /* minor version unknown: keep what we had */
		minor = rq->ulb.minorversion;
		if (minor > 2)
			return;
	}
	atomic_store_explicit(&x->client.nfs, RRP_NFS_VERS(vers, minor) + 1,
			      memory_order_relaxed);
	if (rq->scanned && rq->ulb.has_sequence) {
		uint64_t id;

		memcpy(&id, rq->ulb.seq.sessionid, sizeof(id));
		atomic_store_explicit(&x->client.clientid, id, memory_order_relaxed);
	}
}

/* This worker's announcement in the preloaded library (rrp_payload.h),
 * found once per thread. */
static _Thread_local struct rrp_announce *ann_mine __attribute__((tls_model("initial-exec")));

static inline struct rrp_announce *announcement(void)
{
	if (__builtin_expect(!ann_mine, 0))
		ann_mine = rrp_payload_announcement();
	return ann_mine;
}

/* Run one Call through ganesha (a worker: ganesha may block in the FSAL). */
static void rrp_process(void *arg)
{
	struct rrp_req *rq = arg;
	struct rr_call *call = rq->call;
	struct rrp_xprt *x = rq->x;
	struct svc_req *req;
	enum xprt_stat stat;
	struct rrp_announce *ann = NULL;
	unsigned int expect;
	size_t expect_max;
	bool lend, aligned;

	atomic_fetch_add(&rrp.requests, 1);
	rrp_xdr_dec_init(&rq->dec, call->iov, call->iovcnt);
	rq->dec.destroy = req_xdr_destroy;
	rq->dec.owner = rq;
	/* ganesha's decoded arguments may point into the Call until free_cb. */
	rr_call_hold(call);
	/* The engine hands over the Call with chunk data in place: pcl NULL. */
	if (needs_scan(call))
		rq->scanned =
			ulb_call_scan(call->iov, call->iovcnt, NULL, &rq->ulb) == ULB_SCAN_OK;
	note_client(x, rq);
	if (rq->scanned && rrp_slots_check(&rq->ulb) == RRP_SLOT_RETRY_UNCACHED) {
		answer_uncached(rq);
		SVC_RELEASE(&x->xprt, SVC_RELEASE_FLAG_NONE);
		return;
	}
	if (rq->scanned) {
		rq->ddp_violation =
			ulb_call_check_read_chunks(&rq->ulb, call->pcl) == ULB_DDP_VIOLATION;
	}

	req = rrp_host.alloc_cb(&x->xprt, &rq->dec.xdrs);
	/* READ allocates its data buffer on this thread, inside SVC_DECODE */
	expect = read_buffers_expected(rq, &expect_max, &aligned);
	if (expect) {
		ann = announcement();
		rrp_announce_expect(ann, expect_max, expect, aligned);
	}
	/* WRITE data: xdr_bytes' buffer is the chunk itself (rrp_payload.c). */
	lend = call->nchunk_data != 0;
	if (lend)
		rrp_payload_lend(call->chunk_data, call->nchunk_data, rrp_xdr_dec_at, &rq->dec);
	stat = SVC_DECODE(req);
	/* Only what was announced and is left is taken back. READ buffers
	 * not allocated (a READ that failed) must not go to the thread's next
	 * unrelated allocation. */
	if (lend)
		rrp_payload_lend(NULL, 0, NULL, NULL);
	if (ann && ann->expect_n)
		rrp_announce_expect(ann, 0, 0, false);
	if (stat != XPRT_SUSPEND) {
		if (req->rq_auth)
			SVCAUTH_RELEASE(req);
		XDR_DESTROY(req->rq_xdrs);
		rrp_host.free_cb(req, stat);
	}
	SVC_RELEASE(&x->xprt, SVC_RELEASE_FLAG_NONE);
}
