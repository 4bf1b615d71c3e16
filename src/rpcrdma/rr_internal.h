/* SPDX-License-Identifier: MIT */
/*
 * rr_internal.h - private structures of the transport engine, shared by its
 * stage files (README.md lists them in data-path order; docs/architecture.md
 * walks the data path).
 */
#ifndef RPCRDMA_RR_INTERNAL_H
#define RPCRDMA_RR_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "fabric/fab.h"
#include "rpcrdma/rr_cm_private.h"
#include "rpcrdma/rr_handoff.h"
#include "rpcrdma/rr_xprt.h"

/* ---- registered buffer pools (rr_pool.c) ---- */

/* Fixed-size buffers carved from one registration, handed out LIFO. */
struct rr_pool {
	uint8_t *mem;			/* mmap'd: never from an interposed allocator */
	size_t map_len;			/* rr_pool_bytes(buf_size, count) */
	size_t buf_size;
	uint32_t count;
	struct fab_mr *mr;
	pthread_mutex_t lock;
	uint32_t nfree;
	uint32_t *free_idx;
};

int rr_pool_init(struct rr_pool *p, struct fab_pd *pd, size_t buf_size, uint32_t count,
		 unsigned int access);
void rr_pool_fini(struct rr_pool *p);
/* What a pool of @count buffers of @buf_size pins: whole pages. */
#define RR_PAGE_SIZE 4096u
size_t rr_pool_bytes(size_t buf_size, uint32_t count);
void *rr_pool_get(struct rr_pool *p);
bool rr_pool_owns(const struct rr_pool *p, const void *addr, size_t len);

/*
 * Sinks: registered buffers for Read chunk data and the reply path's bounce
 * buffers (a Long Reply's body, payload copies), one pool per event thread
 * and protection domain, shared by that thread's connections. Only its
 * event thread takes buffers (and so grows the pool); any thread gives one
 * back, lock-free. The shape below is one thread's share (sink_shape_evt).
 *
 * Sized to the data: a few classes (4 KiB, 64 KiB, and one chunk's worth,
 * buf_size), the smallest that fits, so a 64-byte chunk pins 4 KiB, not
 * 1 MiB. Small classes are carved from larger registrations and fall back
 * to the next class when full.
 *
 * Shared fairly, by bytes held (the class size of each buffer):
 *   - every connection may always hold RR_SINK_RESERVE_BIG full-size
 *     buffers' worth (one full Read chunk and one full Long Reply): the
 *     full-size class is bounded to cover every connection's reserve;
 *   - beyond that it draws on a shared part of RR_BIG_MAX full-size
 *     buffers, up to one full-size buffer per credit it granted (at least
 *     one Call's chunks, at most RR_SINK_SHARE_MAX);
 *   - a Read whose sink is refused waits on its own connection's queue and
 *     is retried whenever any sink comes back: so one connection's held
 *     calls stall only that connection, and another's Reads and Long
 *     Replies find their reserve.
 *
 * A buffer is a call's from the post of its Read (or the build of its
 * Reply) until the call is done (its Send completed); a connection owns
 * none between calls. Its reserve is a claim on the class's bound, kept
 * whether the memory is made or not; slabs wholly free for RR_SINK_IDLE_S
 * are given back (rr_big_tick), so an idle connection pins no sink memory.
 */
#define RR_BIG_MAX 256		/* full-size buffers in the shared part */
#define RR_BIG_PREALLOC 8	/* registered when the pool is made */
#define RR_SINK_RESERVE_BIG 2	/* full-size buffers every connection may hold */
#define RR_SINK_SHARE_MAX (RR_BIG_MAX / 4)	/* a connection's shared part, at most */
#define RR_SINK_CLASSES 3
#define RR_SINK_REF_SHIFT 28	/* sink reference: class << shift | slot */

/* One registration of a class; mem NULL: not mapped (never, or given back). */
struct rr_sink_slab {
	uint8_t *mem;
	struct fab_mr *mr;
	uint32_t nfree;			/* free buffers, counted by the tick */
	uint8_t idle_ticks;		/* seconds wholly free and untouched */
	bool taken;			/* a buffer was taken since the last tick */
};

struct rr_sink_class {
	size_t size;			/* of each buffer */
	uint32_t per_slab;		/* buffers per registration */
	uint32_t max;			/* slots at most */
	uint32_t n;			/* slots registered now (event thread) */
	uint32_t nslab;			/* slab indices used: [0, nslab), holes unmapped */
	uint32_t free_top;		/* event thread's free slots: slot+1, 0 = none */
	bool all_free;			/* the last tick found every slot free */
	_Atomic uint32_t returned;	/* slots given back, slot+1 chain, 0 = none */
	uint32_t *next;			/* [max]: slot+1 below each free slot, 0 = bottom */
	struct rr_sink_slab *slab;	/* [max / per_slab] */
};

/* Seconds a sink slab stays wholly free before it is given back. */
#define RR_SINK_IDLE_S 5u

struct rr_bigpool {
	struct rr_server *srv;		/* its sink_pool_bytes */
	struct fab_pd *pd;
	size_t buf_size;		/* the largest class: one chunk plus an XDR pad */
	uint64_t reserve;		/* bytes each connection may always hold */
	int64_t shared_cap;		/* bytes held beyond reserves, all connections */
	uint32_t prealloc;		/* full-size buffers registered when made */
	uint64_t made;			/* bytes registered now, all classes */
	uint64_t read_budget;		/* Read sinks may grow it this far; 0: no bound */
	_Atomic int64_t shared_used;
	unsigned int nclass;
	struct rr_sink_class cls[RR_SINK_CLASSES];	/* ascending sizes */
	struct rr_sendpool *sends;	/* the same thread's and device's send pool */
	/* Connections whose next call waits for sinks the pool is short of,
	 * oldest first: served in that order as sinks come back (rr_read.c).
	 * stuck_at: puts when the first of them last failed (RR_SINK_UNTRIED:
	 * it has not tried since it became the first). */
	struct rr_conn *wait_head, *wait_tail;
	_Atomic uint64_t puts;		/* buffers (or budget) given back, ever */
	uint64_t stuck_at;
};
#define RR_SINK_UNTRIED UINT64_MAX

/* The small sink classes carve their buffers out of registrations of this
 * many bytes; the full-size class registers each buffer alone. */
#define RR_SINK_SLAB (256u * 1024u)

/*
 * A device's sink pool: slabs of each small class, full-size buffers in the
 * shared part, and those registered up front. By default the shared part is
 * RR_BIG_MAX and the up-front ones come on top; under sink_mem_max the
 * shared part is at least what one connection needs beyond its reserve for
 * a whole Call's chunks, the small classes one slab each, and what is left
 * goes a quarter to the small classes, the rest to the shared part; the
 * up-front ones come out of the shared part.
 */
struct rr_sink_shape {
	size_t big;
	unsigned int nsmall;
	size_t small_size[RR_SINK_CLASSES - 1];
	uint32_t small_slabs[RR_SINK_CLASSES - 1];
	uint32_t shared;
	uint32_t big_max; /* the full-size class's slots */
	uint32_t prealloc;
};
/* One event thread's pool on a device (rr_sink_shape.c). */
void rr_sink_shape(const struct rr_config *cfg, struct rr_sink_shape *s);
/* One event thread's share of sink_budget (0: none), for @big-byte buffers. */
uint64_t rr_sink_read_budget(const struct rr_config *cfg, size_t big);

struct rr_conn;
struct rr_bigpool *rr_big_create(struct rr_server *srv, struct fab_pd *pd);
/* The most bytes one device's sink pool can register. */
uint64_t rr_big_bound_bytes(const struct rr_config *cfg);
void rr_big_destroy(struct rr_bigpool *bp);
/* Event thread: register up to @n full-size buffers ahead of use. */
void rr_big_prealloc(struct rr_bigpool *bp, uint32_t n, uint64_t *registrations);
/* What a buffer is for: a Read sink's growth of the pool is bounded by its
 * read_budget (rr_config.sink_budget), a Reply's bounce buffer's is not. */
enum rr_sink_use { RR_SINK_READ, RR_SINK_BOUNCE };
/* Event thread: a free buffer of at least @len bytes for @c (its lkey and
 * reference), charged to @c; NULL when @c is at its share or the pool is
 * short: retry when a sink comes back. */
void *rr_big_get(struct rr_bigpool *bp, struct rr_conn *c, uint64_t len, enum rr_sink_use use,
		 uint32_t *lkey, uint32_t *ref);
/* Whether @c's share leaves room for a buffer of @len bytes: when it does
 * not, @c waits for its own calls, not for the pool. */
bool rr_big_within_share(const struct rr_bigpool *bp, const struct rr_conn *c, uint64_t len);
/* Any thread: the buffer @ref that @c took is free again. */
void rr_big_put(struct rr_bigpool *bp, struct rr_conn *c, uint32_t ref);
/* Event thread: the same for a buffer its call could not use (the rest of
 * its sinks did not fit): nothing came back that a waiter had not seen. */
void rr_big_unget(struct rr_bigpool *bp, struct rr_conn *c, uint32_t ref);
/* Event thread: lkey of [addr, addr+len) if it lies in one registration, else false. */
bool rr_big_lkey(struct rr_bigpool *bp, const void *addr, size_t len, uint32_t *lkey);
/* Once a second on the pool's thread: slabs wholly free for RR_SINK_IDLE_S
 * are unregistered and unmapped (a put for the waiters, if any went). */
void rr_big_tick(struct rr_bigpool *bp);

/* ---- counters ---- */

/* Atomic twins of struct rr_stats: sink_bytes of a connection is its
 * charge (rr_big_get). */
#define RR_COUNTERS_MEMBER_(a, name, type, scope, kind, meaning) _Atomic type name;
struct rr_counters {
	RR_COUNTERS(RR_COUNTERS_MEMBER_, ~)
};

/* A scope-server counter (rr_counters.def): the server's row only. */
#define RR_SRV_STAT_ADD(srv, field, n)                                                             \
	atomic_fetch_add_explicit(&(srv)->st.field, (n), memory_order_relaxed)
#define RR_SRV_STAT_SUB(srv, field, n) RR_SRV_STAT_ADD(srv, field, -(uint64_t)(n))
#define RR_STAT_SUB(conn, field, n) RR_STAT_ADD(conn, field, -(uint64_t)(n))
#define RR_STAT_ADD(conn, field, n)                                                                \
	do {                                                                                       \
		atomic_fetch_add_explicit(&(conn)->st.field, (n), memory_order_relaxed);           \
		atomic_fetch_add_explicit(&(conn)->srv->st.field, (n), memory_order_relaxed);      \
	} while (0)

void rr_counters_read(struct rr_counters *c, struct rr_stats *out);

/* ---- calls: one per receive buffer (rr_recv.c, rr_read.c) ---- */

#define RR_REPLY_MAX_IOV 64	/* iovecs of a Reply handed in from another thread */

enum rr_call_state {
	RR_CALL_FREE,		/* buffer idle, not posted */
	RR_CALL_POSTED,		/* receive posted */
	RR_CALL_READING,	/* waiting for / pulling Read chunks */
	RR_CALL_UPPER,		/* handed to the upper layer */
	RR_CALL_REPLYING,	/* reply posted, waiting for the Send completion */
};

struct rr_call_ctx {
	struct rr_call call;		/* public part handed up */
	struct rr_conn *conn;
	enum rr_call_state state;
	uint8_t *buf;			/* receive buffer (conn->recv_pool or srq) */
	struct rr_srq *srq;		/* non-NULL: buf belongs to the shared pool */
	uint32_t srq_lkey;
	uint32_t recv_len;
	/* The message's chunk lists, from its arrival until the context is
	 * posted again (rr_pcl_pool.c); NULL while posted or free. */
	struct rr_pcl *pcl;
	void *sink[RR_PCL_MAX_READ_CHUNKS];	/* Read chunk data, sink pool */
	uint32_t sink_lkey[RR_PCL_MAX_READ_CHUNKS];
	/* iWARP: each sink's own registration, remote-writable only while its
	 * Reads are in flight (rr_read.c) */
	struct fab_mr *sink_mr[RR_PCL_MAX_READ_CHUNKS];
	uint32_t sink_ref[RR_PCL_MAX_READ_CHUNKS];
	uint32_t nsinks;		/* sink[i] may be set only below this */
	uint32_t reads_total;		/* segments to pull */
	uint32_t reads_posted;
	uint32_t reads_done;
	bool read_failed;
	bool queued;			/* on conn->read_head list */
	bool has_ref;			/* holds a connection reference */
	/* An error Reply waiting for a send context (rr_reply_error), or
	 * RR_ACT_PROCESS */
	uint8_t err_act;
	/* A Reply handed in off the event thread, waiting to be built there. */
	struct iovec rep_iov[RR_REPLY_MAX_IOV];
	int rep_iovcnt;
	struct rr_reply_plan rep_plan;
	rr_reply_done_fn rep_done;
	void *rep_arg;
	struct rr_handoff rep_link;	/* conn->rep_stack */
	struct rr_handoff free_link;	/* conn->returned_calls */
	_Atomic int holds;		/* upper + reply in flight; freed at 0 */
	struct rr_call_ctx *next;	/* conn->read_head or conn->free_calls */
};

/* ---- RDMA Read and Write work requests (rr_rw.c) ---- */

/*
 * A chain of work requests being built, over arrays its owner provides: the
 * RDMA Reads of Read chunks (rr_read.c, on the stack, one post per batch) or
 * the RDMA Writes ahead of a Reply's Send (rr_reply.c, inside the send
 * context). rr_rw_reserve may swap in larger arrays from the heap; the
 * context keeps them, and rr_rw_fini frees them.
 */
struct rr_rw_ctx {
	struct fab_send_wr *wr;
	struct fab_sge *sge;
	uint32_t nwr, max_wr;		/* built, room */
	uint32_t nsge, max_sge;
	bool wr_heap, sge_heap;		/* grown: freed by rr_rw_fini */
};

/* A run of registered bytes to write from. */
struct rr_rw_piece {
	const uint8_t *addr;
	uint32_t len;
	uint32_t lkey;
};

#define RR_RW_MAX_PIECES 64	/* pieces of one payload span */
/* The most SGEs one RDMA Write gathers; a connection on a device that takes
 * fewer gathers what it takes (rr_conn.write_sge), in more Writes. */
#define RR_RW_SGE_MAX 16

/* SGEs a Write gathers on a device with @lim. */
/* iWARP: withdraw sink @i's own remote-write registration, if it has one
 * (rr_read.c: when its Reads complete; rr_call.c: a call freed before). */
static inline void rr_sink_unexpose(struct rr_call_ctx *ctx, unsigned int i)
{
	if (ctx->sink_mr[i]) {
		fab_mr_dereg(ctx->sink_mr[i]);
		ctx->sink_mr[i] = NULL;
	}
}

static inline uint32_t rr_write_sge(const struct fab_limits *lim)
{
	return lim->max_send_sge < RR_RW_SGE_MAX ? lim->max_send_sge : RR_RW_SGE_MAX;
}

static inline void rr_rw_init(struct rr_rw_ctx *rw, struct fab_send_wr *wr, uint32_t max_wr,
			      struct fab_sge *sge, uint32_t max_sge)
{
	*rw = (struct rr_rw_ctx){.wr = wr, .sge = sge, .max_wr = max_wr, .max_sge = max_sge};
}

/* The next work request, zeroed and chained after the last; NULL when full. */
static inline struct fab_send_wr *rr_rw_next_wr(struct rr_rw_ctx *rw)
{
	struct fab_send_wr *wr;

	if (rw->nwr >= rw->max_wr)
		return NULL;
	wr = &rw->wr[rw->nwr];
	*wr = (struct fab_send_wr){0};
	if (rw->nwr)
		rw->wr[rw->nwr - 1].next = wr;
	rw->nwr++;
	return wr;
}

struct rr_conn;
/* Room for @nwr work requests and @nsge SGEs, growing the arrays (never in
 * the middle of a chain: growing moves them). */
bool rr_rw_reserve(struct rr_rw_ctx *rw, uint32_t nwr, uint32_t nsge);
void rr_rw_fini(struct rr_rw_ctx *rw);
/* The RDMA Read of the @k-th segment (in chunk order) of @pcl's Read list
 * into the sinks, one per chunk, tagged @wr_id; false when @rw is full. */
bool rr_rw_read_seg(struct rr_rw_ctx *rw, const struct rr_pcl *pcl, uint32_t k,
		    void *const *sink, const uint32_t *sink_lkey, uint64_t wr_id);
/* RDMA Writes placing @pc into the segments of @ch in order, each gathering
 * at most @sge_per_wr pieces; false when the chunk is too small or @rw runs
 * out of room. */
bool rr_rw_write_chunk(struct rr_rw_ctx *rw, const struct rr_pcl *pcl, const struct rr_chunk *ch,
		       const struct rr_rw_piece *pc, int npc, uint32_t sge_per_wr);
/* The most work requests one Reply's chain needs (its Writes and its Send)
 * when a Write gathers at most @sge_per_wr pieces. */
uint32_t rr_rw_reply_max_wr(uint32_t sge_per_wr);
struct rr_send_ctx;
/* Bytes [@off, @off + @len) of a stream of iovecs as registered pieces;
 * false when some lie outside memory the engine knows (or too many pieces). */
bool rr_rw_pieces(struct rr_send_ctx *s, const struct iovec *iov, int iovcnt, uint64_t off,
		  uint64_t len, struct rr_rw_piece *pc, int *npc);
/*
 * Registrations one Reply may make on an own_pd connection: its payload
 * pieces take at most RR_LENT_PIECES, so that each of its bounce buffers
 * (one per Write chunk and the Reply chunk's) always finds room.
 */
#define RR_LENT_PIECES 8u
#define RR_LENT_MAX (RR_LENT_PIECES + RR_PCL_MAX_WRITE_CHUNKS + 1)
/* @len bytes at @addr, memory of the device's PD, registered in @s's
 * connection's own PD until @s is released; false when it cannot be. */
bool rr_rw_lend(struct rr_send_ctx *s, void *addr, size_t len, uint32_t *lkey);
/* Copy bytes [@off, @off + @len) of a stream of iovecs to @dst. */
void rr_rw_copy(const struct iovec *iov, int iovcnt, uint64_t off, uint64_t len, uint8_t *dst);
/* Event thread: post the chain at @first, one doorbell. On failure the
 * connection closes (@what says what failed) and *bad is the first work
 * request the provider did not take (NULL: none was taken). */
int rr_rw_post(struct rr_conn *c, struct fab_send_wr *first, struct fab_send_wr **bad,
	       const char *what);

/* ---- sends (rr_send.c: queue and completions; rr_reply.c builds) ---- */

/* Work requests of one reply: small replies use the arrays inside the
 * context; a reply naming many segments grows them once, and the context
 * keeps them, so steady state allocates nothing. */
/* Small: every context of a device's pool carries them, idle or not (a
 * Reply with Writes grows its context's once, rr_rw_reserve). */
#define RR_SEND_SMALL_WR 2
#define RR_SEND_SMALL_SGE 4
#define RR_SEND_MAX_SGE (RR_PCL_MAX_SEGS + 144)
/* every work request carries at least one SGE: a device that gathers one
 * per Write reaches this */
#define RR_SEND_MAX_WR RR_SEND_MAX_SGE

struct rr_send_chunk;

struct rr_send_ctx {
	struct rr_conn *conn;		/* whose Reply it carries now */
	struct rr_send_chunk *chunk;	/* where it and its buffer live */
	uint8_t *hdr;			/* its chunk's pool: header + inline body */
	uint32_t lkey;			/* of hdr */
	void *bounce[RR_PCL_MAX_WRITE_CHUNKS + 1];	/* sink pool buffers */
	uint32_t bounce_ref[RR_PCL_MAX_WRITE_CHUNKS + 1];
	unsigned int nbounce;
	/* own_pd connections: this Reply's registrations (rr_rw_lend), an
	 * array of RR_LENT_MAX made at the first */
	struct fab_mr **lent;
	unsigned int nlent;
	struct rr_call_ctx *call;	/* released on completion; NULL for errors */
	rr_reply_done_fn done;
	void *done_arg;
	struct rr_send_ctx *next_pending;	/* conn->pend_head: waits for SQ room */
	struct rr_send_ctx *next_quiet;	/* conn->quiet_head */
	uint32_t seq;			/* post order on the send queue */
	bool bc;			/* from the reverse-direction reserve */
	bool quiet;			/* an unsignalled Send: no completion of its own */
	struct rr_handoff handoff;	/* conn->offthread_sends */
	/* The Writes and the Send; rw.nwr is the send-queue slots it holds,
	 * and sge[0] is the Send's. */
	struct rr_rw_ctx rw;
	struct fab_send_wr wr_small[RR_SEND_SMALL_WR];
	struct fab_sge sge_small[RR_SEND_SMALL_SGE];
	struct rr_send_ctx *next_free;
};

/*
 * Send contexts come in chunks, each with its buffers in one registration:
 * a connection's own chunk holds the reverse direction's (made at accept:
 * those calls come from any thread), and the Replies' come from the pool of
 * its device and event thread (struct rr_sendpool).
 */
struct rr_send_chunk {
	struct rr_send_chunk *next;
	struct rr_pool pool;
	uint32_t n;
	uint32_t nfree;			/* on its pool's free list (counted by the tick) */
	uint32_t idle_ticks;		/* seconds it has been wholly free */
	struct rr_send_ctx ctx[];
};

/*
 * The Replies' send contexts and buffers of the connections of one event
 * thread on one device (protection domain): taken when a Reply is built,
 * back at its completion, so an idle connection holds none (issue #33;
 * svcrdma likewise makes send contexts on demand). Only that thread uses
 * it: no lock on the per-call path. A connection on a PD of its own
 * (iWARP) has a pool of its own.
 *
 * Every connection may always hold RR_SEND_RESERVE contexts: the pool keeps
 * that many free for each connection below it (owed), made when the
 * connection first takes one and counted against the budget at admission
 * (its claim), so a busy neighbour never leaves it unable to answer.
 * Beyond its reserve a connection takes what is free past what is owed, or
 * grows the pool within the budget, up to one context per receive and
 * RR_QUIET_SENDS more (its credits bound it, RFC 8166 section 3.3);
 * otherwise its Reply waits for a context (rr_send_ctx_wait): its own
 * Sends' completions bring one back. Chunks that stay wholly free are
 * given back once a second (rr_sendpool_tick).
 */
struct rr_sendpool {
	struct rr_server *srv;
	struct fab_pd *pd;
	struct rr_send_chunk *chunks;
	/* LIFO through next_free: every joined connection's reserve not in
	 * use (what it is owed), then what is spare. */
	struct rr_send_ctx *free;
	uint32_t spare;			/* free beyond what is owed */
	uint32_t nconns;		/* joined */
	uint64_t made_bytes;		/* registered (pinned_bytes) */
	uint64_t claimed;		/* the joined connections' claims */
	uint64_t charged;		/* budget: made_bytes beyond claimed */
	/* Connections whose Replies wait for a context (through sp_wait_next). */
	struct rr_conn *wait_head, *wait_tail;
	/* Contexts of freed connections (unsignalled Sends retired with the
	 * QP, rr_conn_free on evt[0]): any thread, lock-free. */
	_Atomic(struct rr_handoff *) returned;
};

/* What a connection's reserve claims of the budget at admission. */
uint64_t rr_sendpool_claim(const struct rr_config *cfg);
/* rr_sendpool_get and rr_sendpool_put (below, inline) past their common
 * case: the first Reply joins the pool, a connection past its reserve takes
 * what is spare or grows the pool; a context back wakes a connection that
 * waits. */
__attribute__((cold)) struct rr_send_ctx *rr_sendpool_get_slow(struct rr_conn *c);
__attribute__((cold)) void rr_sendpool_put_slow(struct rr_conn *c);
/* Event thread: @c's Replies wait for a context of its pool. */
void rr_sendpool_wait(struct rr_conn *c);
/* Event thread, no reference left: @c leaves its pool (its unsignalled
 * contexts go back with its QP, rr_sendpool_orphans). */
void rr_sendpool_leave(struct rr_conn *c);
/* After @c's QP is gone (any thread): its unsignalled contexts are free;
 * a pool of its own is freed. */
void rr_sendpool_orphans(struct rr_conn *c);
/* Once a second on the pool's thread: chunks wholly free for a while (at
 * once when no connection is joined) are given back. */
void rr_sendpool_tick(struct rr_sendpool *sp);
/* After the last connection, srv->lock held or no other thread running:
 * everything, its charge off the budget. */
void rr_sendpool_destroy(struct rr_sendpool *sp);

/*
 * Reply contexts every connection may always hold. Fewer than that may be
 * unsignalled Sends (rr_reply.c, RR_QUIET_MAX), so a connection that waits
 * for a context (it holds at least this many) holds one that is not quiet:
 * a signalled Send posted, whose completion brings its own back and retires
 * the quiet ones before it; or a chain queued for send-queue room, which
 * goes once a completion frees some (the queued quiet Sends are counted
 * too, and the send queue is deeper than they and the largest chain
 * together: rr_conn_sq_depth), or one built in this wake-up and posted at
 * its end.
 */
#define RR_SEND_RESERVE 8u
/* Contexts a pool grows by for a connection past its reserve, at most. */
#define RR_SENDPOOL_GROW 16u
/* Seconds a chunk stays wholly free before it is given back. */
#define RR_SENDPOOL_IDLE_S 5u

/* ---- connections (rr_conn.c) ---- */

enum rr_conn_state {
	RR_CONN_ACCEPTING,
	RR_CONN_UP,
	RR_CONN_CLOSING,	/* disconnect started; waiting for references */
};

struct rr_evt;

struct rr_conn {
	struct rr_server *srv;
	/* The event thread that owns it (docs/threading.md): evt[0], the
	 * listener's, while the accept sets it up; its home from the hand-over
	 * on (rr_accept.c). */
	struct rr_evt *evt;
	struct rr_evt *home;
	struct fab_conn *fc;
	struct fab_cq *cq;
	struct fab_pd *pd;		/* its QP's: own_pd, or the device's */
	struct rr_bigpool *big;		/* sink pool of the device's PD */
	struct rr_conn *sink_wait_next;	/* on big's queue of waiters (event thread) */
	bool sink_waiting;
	/* A Reply found no bounce buffer (rr_reply.c): it waits on ctx_wait
	 * and is tried again once big's puts moved past reply_stuck_at. */
	bool sinks_short;
	bool replies_starved;
	uint64_t reply_stuck_at;
	char peer[80];
	void *upper;

	pthread_mutex_t lock;		/* state, reverse-direction counters and reserve */
	enum rr_conn_state state;
	bool down_reported;
	bool in_epoll;
	_Atomic int refs;		/* event thread + calls + sends in flight */

	uint32_t credits;		/* the grant carried in every message */
	uint32_t nrecv;			/* receive buffers (= call contexts) */
	uint32_t post_target;		/* receives kept posted */
	uint32_t repost_at;		/* post_target - recv_batch: a batch is due at or below */
	uint32_t posted;		/* receives currently posted (event thread) */
	uint32_t sq_depth;
	uint32_t sq_avail;		/* event thread */
	uint32_t ord;			/* RDMA Reads we may have outstanding */
	uint32_t reads_in_flight;
	bool reads_held;		/* handling a poll: Reads wait for its end */
	struct rr_inline_limits inl;
	bool send_w_inv;
	uint32_t write_sge;		/* SGEs one RDMA Write gathers on this device */
	bool tagged_sinks;		/* iWARP: Read sinks need remote write (rr_read.c) */
	/* iWARP: a protection domain of the connection's own (rr_accept.c),
	 * freed after everything registered in it; NULL elsewhere. pd is it
	 * when set, the device's shared one otherwise. */
	struct fab_pd *own_pd;
	/* Work requests of a Reply this size or larger are signalled, so the
	 * device copies their bytes as they go (siw: FAB_ZERO_COPY_MIN;
	 * UINT32_MAX elsewhere; rr_reply.c, reply_send) */
	uint32_t signal_from;
	uint64_t recv_mem;		/* receive-buffer bytes (recv_mem_bytes) */
	uint64_t pinned;		/* all bytes counted against the budget */
	/* Bounds (rr_admit.c): the peer's address prefix (IPv4 as v4-mapped)
	 * for the per-peer cap, and the clocks of the handshake, idle and Send
	 * timeouts (event thread). Only messages that do something count as
	 * activity: Calls, answers to our callbacks; never what is dropped or
	 * refused with an RDMA_ERROR. */
	uint8_t peer_ip[16];
	bool peer_known;
	bool had_msg;			/* a first message arrived */
	uint64_t heard;			/* messages that count as activity */
	uint64_t act_seen;		/* heard at the last tick */
	uint64_t accepted_at;		/* rr_now_s() */
	uint64_t quiet_since;		/* rr_now_s() of the last activity */
	/* Signalled Sends posted and not completed, completions of any Send,
	 * and since when none completed while some were out (a peer that
	 * never posts receives holds a Send in RNR retry for ever). */
	uint32_t sends_out;
	uint64_t sends_done, sends_done_seen;
	uint64_t send_wait_since;
	/* The reverse direction (rr_backchannel.c), under lock: the client's
	 * backchannel credits (RFC 8167 section 3) and the XIDs of our calls
	 * awaiting an answer, bc_xids[0..bc_outstanding), one credit each.
	 * bc_outstanding < bc_grant <= RR_MAX_BC_CREDITS when one is added. */
	uint32_t bc_grant;
	uint32_t bc_outstanding;
	uint32_t bc_xids[RR_MAX_BC_CREDITS];

	struct rr_pool recv_pool;
	struct rr_call_ctx *calls;	/* nrecv contexts */
	struct rr_send_chunk *send_chunks;	/* the reverse direction's (made at accept) */
	struct rr_send_ctx *free_bc_sends;	/* reverse-direction calls (lock) */
	uint32_t nsends;			/* at most: replies' + the reverse direction's */
	uint32_t nsends_bc;			/* the reverse direction's, all in send_chunks */
	/* Replies' contexts: from sp, the pool of its device and thread (or of
	 * its own PD), joined at the first Reply (event thread). */
	struct rr_sendpool *sp;
	struct rr_sendpool *own_sp;		/* own_pd: a pool of its own */
	uint32_t sends_held;			/* taken from sp, not yet back */
	bool sp_waiting;			/* on sp's wait list */
	bool sp_kicked;				/* woken for a context, not yet run */
	struct rr_conn *sp_wait_next;
	/* Replies waiting for a send context the budget could not give yet:
	 * they go, in order, as this connection's Sends complete (event thread). */
	struct rr_handoff *ctx_wait_head, *ctx_wait_tail;	/* through rep_link */
	struct rr_call_ctx *read_head, *read_tail;	/* waiting for reads (event thread) */
	struct rr_call_ctx *free_calls;			/* not posted (event thread) */
	/* Calls given back by other threads: a lock-free stack that
	 * rr_recv_refill moves to free_calls. */
	_Atomic(struct rr_handoff *) returned_calls;
	struct rr_send_ctx *pend_head, *pend_tail;	/* built, waiting for SQ room (event thread) */
	/* While the Replies handed over in one wake-up are built: chains with
	 * their queue slots taken, posted together at the end (event thread). */
	struct rr_send_ctx *batch_head, *batch_tail;
	bool batching;
	/* Unsignalled Sends posted, oldest first: a completion retires those
	 * posted before it (event thread). */
	struct rr_send_ctx *quiet_head, *quiet_tail;
	uint32_t quiet_out;			/* unsignalled, built and not yet retired */
	uint32_t post_seq;			/* Sends posted (event thread) */
	/* Replies handed in off the event thread, and chains built there,
	 * newest first: pushed lock-free, taken whole by the event thread. */
	_Atomic(struct rr_handoff *) rep_stack;
	_Atomic(struct rr_handoff *) offthread_sends;
	/* On evt->ready: one of the stacks above has work (rr_conn_kick). */
	struct rr_handoff ready_link;
	atomic_bool ready_queued;
	/* Handed from the listener's thread to its home (evt->adopt), and at
	 * the end back to it (evt->dead): fab_conn_destroy is the CM
	 * channel's thread's (rr_evt.c). */
	struct rr_handoff adopt_link;
	/* CM events the listener's thread took for it, 1u << type, and the
	 * upper layer's close (RR_CM_UPPER_CLOSE), handled on its home thread
	 * at the next visit (rr_conn_kick). */
	_Atomic uint32_t cm_pending;
	/* The upper layer asked for the close (rr_conn_close_async, any
	 * thread): done on its home thread at the next visit. */
	atomic_bool close_wanted;
	atomic_bool gone;		/* closing: no longer counted by the per-peer cap */
	bool peer_counted;		/* in srv->peers' count (srv->lock) */
	bool disconnected;				/* fab_disconnect called */

	/* Shared receive queue mode: no receive buffers of its own; its home
	 * thread's pool. */
	struct rr_srq *srq;
	_Atomic uint32_t srq_held;	/* pool receives this conn's messages hold */
	uint32_t srq_held_max;		/* more means the client overran its grant */

	struct rr_counters st;
	struct rr_conn *next;		/* srv->conns (srv->lock) */
	struct rr_conn **pprev;
	struct rr_conn *evt_next;	/* evt->conns (its event thread only) */
};

/* Largest message the client can receive inline on @c (RFC 8797
 * negotiated), never more than our send buffers: the engine's alone, it
 * decides how each Reply goes (rr_reply.c). */
uint32_t rr_conn_max_inline_send(const struct rr_conn *c);

/* ---- shared receive pools (rr_srq.c) ---- */

/* A client's Send that finds the pool empty retries after this long: the
 * event thread gives buffers back within a call's time, so a short wait. */
#define RR_SRQ_RNR_TIMER_US 640
#define RR_SRQ_DEVICES 4	/* devices (protection domains) with pools */

struct rr_srq_chunk {
	struct rr_pool pool;		/* one registration */
	struct rr_call_ctx *calls;
	uint32_t ncalls;
};

/*
 * One event thread's pool on one device (docs/threading.md): that thread
 * alone posts and grows it. evt[0] makes it and, until a connection of its
 * thread is handed over (handed), may fit it under its thread's srq_lock;
 * it frees it at a device's release or at the end, when no connection is
 * left.
 */
struct rr_srq {
	struct rr_server *srv;
	struct rr_evt *evt;		/* the thread whose pool it is */
	struct fab_srq *fsrq;
	struct fab_pd *pd;		/* connections on another PD use their own receives */
	unsigned int dev;		/* its index in each thread's srq[] */
	bool handed;			/* a connection of evt's has it (evt[0] only) */
	uint32_t bound;			/* most receives the pool grows to */
	uint32_t chunk;			/* the first registration; each later one doubles the pool */
	uint32_t low_water;		/* grow when fewer stay posted */
	bool starved;			/* fell below low_water since the last refill */
	uint32_t nbufs;			/* registered so far */
	uint64_t bytes;			/* their registered bytes (rr_pool_bytes) */
	/* Atomic only for a connection freed on evt[0], whose last flushed
	 * receive it counts off (rr_conn_free). */
	_Atomic uint32_t posted;
	uint32_t nchunks, maxchunks;
	struct rr_srq_chunk *chunks;	/* maxchunks */
	/* Free contexts, through free_link: any thread gives back, the
	 * pool's thread takes them all to post; about how many there are. */
	_Atomic(struct rr_handoff *) returned;
	_Atomic uint32_t nreturned;
};

/* evt[0]: @home's pool on @pd, every thread's made (its first chunk
 * posted) on the device's first use; NULL: per-connection receives. Before
 * the connection's grant. */
struct rr_srq *rr_srq_for(struct rr_server *srv, struct rr_evt *home, struct fab_pd *pd);
/* evt[0], after the grant: @q and the device's pools no connection has yet
 * grow to one client's window, within what the budget has left. */
void rr_srq_fit(struct rr_server *srv, struct rr_srq *q);
/* @q's thread, adopting a connection of @q's: the same for @q. */
void rr_srq_adopt(struct rr_srq *q);
/* @q's thread: post every free buffer, growing the pool when it runs low. */
void rr_srq_refill(struct rr_srq *q);
/* Any thread with no live connection at hand: buffers went back to @q;
 * refill it here on its thread, or wake that thread to (rr_srq_woken). */
void rr_srq_kick(struct rr_srq *q);
/* @c's thread (or evt[0] setting @c up): before a message is processed. */
void rr_srq_recv_refill(struct rr_conn *c);
/* Any thread: @ctx, a call of @c's, is done with; its buffer goes back. */
void rr_srq_call_freed(struct rr_conn *c, struct rr_call_ctx *ctx);
/* Any thread: a pool buffer is free again (posted at the next refill). */
void rr_srq_put(struct rr_call_ctx *ctx);
/* @e's thread, its hand-over pass: refill its pools if woken. */
void rr_srq_woken(struct rr_evt *e);
/* After the last connection is gone: every thread's pools. */
void rr_srq_destroy(struct rr_server *srv);
/* The receives one pool may grow to under @cfg (before the device's say). */
uint32_t rr_srq_bound(const struct rr_config *cfg);
/* Every event thread's pool at its bound, the device's (@max_srq_wr) if
 * smaller, at most the budget; 0 without Use_SRQ. */
uint64_t rr_srq_pools_bytes(const struct rr_config *cfg, uint32_t max_srq_wr);

/* ---- admission and bounds (rr_admit.c) ---- */

enum rr_refuse_why {
	RR_REFUSE_MAX_CONNS,	/* Max_Connections */
	RR_REFUSE_PEER,		/* Max_Connections_Per_Peer */
	RR_REFUSE_MEM,		/* Receive_Memory_Budget */
	RR_REFUSE_OTHER,	/* a bad request or no memory for it */
	RR_REFUSE_NWHY,
};

/*
 * A log that a peer cannot flood (rr_config.c): per interval, the first
 * event in full, the rest counted by kind for one summary line once the
 * interval is over. Refused connection requests have one, connection
 * events (connected, closing, freed) another; the counters count every
 * event, logged or not.
 */
#define RR_REFUSE_LOG_S 5
#define RR_RATELOG_KINDS 4
struct rr_ratelog {
	pthread_mutex_t lock;		/* events come from any thread */
	const char *what;		/* "connection request(s) refused" */
	const char *const *names;	/* [RR_RATELOG_KINDS], NULL past the last */
	uint64_t quiet_until;		/* rr_now_s(): log in full from then on */
	uint64_t since;			/* first event not logged in full */
	/* Events not logged in full: changed under the lock, read without
	 * it by the summary's test of whether there is anything to do. */
	_Atomic uint32_t held;
	uint32_t kind[RR_RATELOG_KINDS];
};

void rr_ratelog_init(struct rr_ratelog *r, const char *what, const char *const *names);
void rr_ratelog_fini(struct rr_ratelog *r);
/* An event of @kind: log it (printf-like) if it is the interval's first,
 * else hold it for the summary. */
void rr_ratelog(struct rr_ratelog *r, unsigned int kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* One line for the events held, once their interval is over (@flush: now). */
void rr_ratelog_summary(struct rr_ratelog *r, bool flush);

enum rr_conn_event {
	RR_EV_CONNECTED,	/* conns_accepted */
	RR_EV_CLOSING,		/* disconnects */
	RR_EV_FREED,		/* conns_freed */
};

/* A client can have every one of its Calls' Replies fail (one per Call):
 * their lines go through a limiter of their own. */
enum rr_reply_event {
	RR_EV_NOT_DELIVERED,	/* not_delivered: ERR_CHUNK went instead */
};

uint64_t rr_now_s(void);
/* Is @ip (as rr_peer_key writes it) an IPv4 address, v4-mapped? */
static inline bool rr_ip_is_v4(const uint8_t ip[16])
{
	for (int i = 0; i < 10; i++)
		if (ip[i])
			return false;
	return ip[10] == 0xff && ip[11] == 0xff;
}

struct sockaddr_storage;
/* @ss's address with all but its first @prefix_v4 (IPv4, v4-mapped) or
 * @prefix_v6 bits zeroed; false for another family. */
bool rr_peer_key(const struct sockaddr_storage *ss, unsigned int prefix_v4,
		 unsigned int prefix_v6, uint8_t ip[16]);
/* The peer of a connection request as rr_admit_peer counts it: its
 * address's prefix (Peer_Prefix_V4 / _V6), IPv4 as v4-mapped IPv6. */
bool rr_admit_peer_ip(const struct rr_config *cfg, struct fab_conn *fc, uint8_t ip[16]);
/* evt[0], srv->lock held: may @ip open one more connection? */
bool rr_admit_peer(struct rr_server *srv, const uint8_t ip[16]);
/* srv->lock held: @c, listed, counts for its peer until it closes (drop). */
void rr_admit_peer_add(struct rr_server *srv, struct rr_conn *c);
void rr_admit_peer_drop(struct rr_server *srv, struct rr_conn *c);
/* Event thread: count a refused connection request and log it (rate-limited). */
void rr_admit_refuse(struct rr_server *srv, const char *peer, enum rr_refuse_why why,
		     const char *detail);
/* Each event thread, once a second: its connections' handshake, idle and
 * Send timeouts; evt[0] also the log summaries. */
void rr_admit_tick(struct rr_evt *e);
/* Set-up: the rate-limited logs. */
void rr_admit_init(struct rr_server *srv);
/* After the event thread: log the events still held for a summary. */
void rr_admit_fini(struct rr_server *srv);
/* Send contexts (and send buffers) of a connection with @nrecv receives. */
uint32_t rr_conn_nsends(const struct rr_config *cfg, uint32_t nrecv);
/* The reverse direction's send contexts: made with the first chunk. */
uint32_t rr_conn_nsends_bc(const struct rr_config *cfg);
/* What one connection with @credits pins at most: all its send buffers,
 * and its receive buffers when it has its own (@own_recv). */
uint64_t rr_conn_pinned(const struct rr_config *cfg, uint32_t credits, bool own_recv);
/* What it pins when accepted: the first send chunk instead of all. */
uint64_t rr_conn_pinned_at_accept(const struct rr_config *cfg, uint32_t credits, bool own_recv);
/* Send queue entries of a connection with @nsends contexts, Read depth @ord,
 * on a device whose Writes gather @write_sge pieces. */
uint32_t rr_conn_sq_depth(uint32_t nsends, uint32_t ord, uint32_t write_sge);
/* The most credits whose queues fit @lim (0: not even one). */
uint32_t rr_credits_cap(const struct rr_config *cfg, const struct fab_limits *lim);
/* The listener's device against the settings (rr_server.c): fills
 * srv->served, or fails with the reason in rr_last_error(). */
int rr_server_fit_device(struct rr_server *srv);
/* Set rr_last_error(); returns @err. */
int rr_set_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- server (rr_server.c) and its event threads (rr_evt.c) ---- */

/*
 * Connection requests the listener may have waiting for the event thread:
 * after a restart every client reconnects at once, and a request past a
 * full queue is dropped and retried by the client a second or more later
 * (TCP's SYN timer; the soft fabric, iWARP). The kernel caps it at
 * net.core.somaxconn (4096 by default); the IB CM does not use it
 * (docs/admission.md).
 */
#define RR_LISTEN_BACKLOG 4096

/*
 * One event thread (docs/threading.md): its own epoll, kick eventfd, timer,
 * connections and shared receive pools. evt[0] also takes the listener's CM
 * events; a connection it accepts for another thread is handed over whole
 * (adopt), and given back at its end for fab_conn_destroy (dead).
 */
struct rr_evt {
	struct rr_server *srv;
	unsigned int idx;
	int epfd;
	int kickfd;			/* eventfd: wake this thread (edge-triggered) */
	bool kick_drain_due;		/* reset its counter at the next kick (rr_evt.c) */
	int timerfd;			/* once a second: its connections' timeouts */
	atomic_bool kick_pending;	/* a wake-up is written and not yet handled */
	/* Connections other threads queued work on, each once, each holding a
	 * reference: a wake-up visits these, not every connection. */
	_Atomic(struct rr_handoff *) ready;
	/* Accepted by evt[0] for this thread, through adopt_link. */
	_Atomic(struct rr_handoff *) adopt;
	/* evt[0] only: other threads' connections, freed but for what is the
	 * CM channel's thread's to destroy (rr_conn_free). */
	_Atomic(struct rr_handoff *) dead;
	atomic_bool close_all;		/* device removed: close every connection */
	/* device released: drop this thread's sink pools (rr_evt_drop_pools) */
	atomic_bool drop_pools;
	/* adopt, dead, close_all, drop_pools or srq_wake has work: one test
	 * per wake-up */
	atomic_bool handover;
	bool reads_starved;		/* a Read waits for a big buffer (this thread) */
	struct rr_conn *conns;		/* its own, through evt_next (this thread) */
	uint32_t nconns;		/* on conns (this thread) */
	_Atomic uint32_t nclosing;	/* on conns and closing: rr_conn_reap has work */
	_Atomic uint32_t load;		/* connections given to it and not freed */
	/* Its shared receive pools, one per device (Use_SRQ, rr_srq.c):
	 * listed and freed by evt[0] under srq_lock, which this thread takes
	 * only to refill them all when woken (srq_wake). */
	pthread_mutex_t srq_lock;
	struct rr_srq *srq[RR_SRQ_DEVICES];
	unsigned int nsrq;
	atomic_bool srq_wake;
	/* Parsed chunk lists of calls in progress (rr_pcl_pool.c): free ones
	 * (this thread), and those other threads gave back. */
	struct rr_handoff *pcl_free;
	_Atomic(struct rr_handoff *) pcl_returned;
	pthread_t thread;
	bool started;
};

/* Chunk lists for calls in progress (rr_pcl_pool.c). @e's thread: one for a
 * message just received (NULL: out of memory), one back to the free list. */
struct rr_pcl *rr_pcl_take(struct rr_evt *e);
void rr_pcl_put(struct rr_evt *e, struct rr_pcl *p);
/* Any thread: back to @e's pool, lock-free. */
void rr_pcl_return(struct rr_evt *e, struct rr_pcl *p);
/* Any thread: freed outright (a connection's contexts at its end). */
void rr_pcl_free(struct rr_pcl *p);
/* @e's thread, once a second: what came back, and the free list trimmed. */
void rr_pcl_tick(struct rr_evt *e);
/* The event thread has stopped: everything freed. */
void rr_pcl_pool_fini(struct rr_evt *e);

#define RR_PEER_BUCKETS 4096		/* per-peer counts' hash (a power of 2) */
struct rr_peer_count;

#define RR_BIGPOOLS 4			/* devices (protection domains) per event thread */

struct rr_server {
	struct fab_fabric *fab;
	struct rr_config cfg;
	struct rr_upper_ops ops;
	void *ctx;
	struct fab_channel *ch;
	struct fab_listener *listener;
	struct rr_evt *evt;		/* [nevt]; evt[0] is the listener's */
	unsigned int nevt;
	unsigned int next_evt;		/* round robin among the least loaded (evt[0]) */
	bool started;
	_Atomic bool stopping;
	atomic_bool dev_gone;		/* device removed: adopted connections close */

	pthread_mutex_t lock;		/* conns list, bigpools, budget, peers */
	/* Live connections per peer (rr_admit.c), RR_PEER_BUCKETS chains. */
	struct rr_peer_count **peers;
	struct rr_conn *conns;		/* every connection, through next/pprev */
	_Atomic uint32_t nconns;	/* on conns; changed under lock */
	uint64_t recv_mem_used;		/* all bytes counted against the budget */
	/* Sink pools: per event thread (its connections only take from its
	 * own: no lock between threads), per device. Only evt[0] adds them
	 * (rr_server_bigpool: the pointer, then the count with release, once
	 * made); each thread's tick reads its own count (acquire) and pointers
	 * without the lock, so only that thread drops them (the device gone:
	 * rr_evt_drop_pools) or none runs (shutdown). */
	_Atomic(struct rr_bigpool *) bigpools[RR_MAX_EVENT_THREADS][RR_BIGPOOLS];
	_Atomic unsigned int nbigpools[RR_MAX_EVENT_THREADS];
	/* event threads asked to drop their pools and not done yet */
	_Atomic unsigned int pools_dropping;
	struct fab_mr *regions[RR_MAX_REGIONS];	/* upper layer's payload pools */
	struct fab_pd *region_pd;
	unsigned int nregions;

	struct rr_served served;	/* what it serves with (rr_server_create) */

	struct rr_ratelog refusals;
	struct rr_ratelog conn_events;
	struct rr_ratelog reply_events;	/* Replies not delivered (rr_reply.c) */

	struct rr_counters st;

	/* Listener life cycle and health (rr_listener.c). */
	char listen_addr[192];		   /* given to fab_listen, again after a removal */
	void *region_addr[RR_MAX_REGIONS]; /* re-registered on the new device */
	size_t region_len[RR_MAX_REGIONS];
	bool dev_lost;			 /* device gone: tearing down or re-listening */
	bool dev_releasing;		 /* the event threads are asked to drop theirs */
	bool dev_released;		 /* everything we had on it is given back */
	struct timespec relisten_at;	 /* next fab_listen try (CLOCK_MONOTONIC) */
	struct timespec relisten_logged; /* last "still no device" line */
	/* Under lock: what rr_server_health reports. */
	bool serving;
	char why[RR_HEALTH_WHY_LEN];
	uint64_t device_removals, relisten_tries;
};

/* Set-up: event thread @idx's epoll, kick eventfd and timer (evt[0]: and
 * the CM channel); rr_evt_fini closes what was made, even after a failure. */
int rr_evt_init(struct rr_server *srv, unsigned int idx);
void rr_evt_fini(struct rr_evt *e);
/* Teardown: stop the threads (or, never started, close what they would
 * have), then free every connection left. */
void rr_evt_stop(struct rr_server *srv);

/* Event thread: a device went away (any FAB_CM_DEVICE_REMOVAL). */
void rr_listener_device_lost(struct rr_server *srv, const struct fab_cm_event *ev);
/* Event thread, every loop: release, then re-listen every RR_RELISTEN_S. */
void rr_listener_tick(struct rr_server *srv);
/* Set-up: the first listen worked on @addr. */
void rr_listener_init(struct rr_server *srv, const char *addr);

/* Wake one event thread; every one of the server's. */
void rr_evt_kick(struct rr_evt *e);
void rr_server_kick(struct rr_server *srv);
/*
 * Any thread, holding a reference to @c that this consumes: work was pushed
 * on one of @c's hand-off stacks; wake the event thread to run it. Take the
 * reference (rr_conn_get) before the push - once pushed, the event thread
 * may finish the work and let the connection go.
 */
void rr_conn_kick(struct rr_conn *c);

/* The event thread this is (NULL on every other thread).
 * Initial-exec: the plugin is preloaded, so its TLS is static - a load,
 * not a __tls_get_addr call, on every test below. */
extern _Thread_local struct rr_evt *rr_this_event_thread
	__attribute__((tls_model("initial-exec")));

/*
 * Every call into the fabric happens on the event thread: the kernel refuses
 * verbs commands from a thread whose credentials changed since the device
 * was opened (ib_safe_file_access), and ganesha's workers switch credentials
 * per request. Other threads queue work and kick. True on @srv's event
 * thread, or before it runs (set-up is single-threaded).
 */
static inline bool rr_on_conn_thread(const struct rr_conn *c)
{
	return rr_this_event_thread == c->evt || !c->srv->started;
}

/* True on evt[0], the listener's thread, or before the threads run. */
static inline bool rr_on_listener_thread(const struct rr_server *srv)
{
	return !srv->started || rr_this_event_thread == srv->evt;
}

/* A big buffer of @c's was given back. Reads waiting for one are retried at
 * the next wake-up; on its thread there may be none coming, so make one
 * (off it, the caller's hand-off wakes that thread anyway). */
static inline void rr_big_returned(struct rr_conn *c)
{
	if (rr_on_conn_thread(c) && c->evt->reads_starved)
		rr_evt_kick(c->evt);
}

/*
 * @e's sink pools, on @e's thread, without srv->lock: evt[0] publishes a
 * pool, then the count with release (rr_server_bigpool), so the count read
 * with acquire covers the pools below it. Only @e itself drops them (the
 * device gone: rr_evt_drop_pools), between its own uses.
 */
static inline unsigned int rr_evt_npools(const struct rr_evt *e)
{
	return atomic_load_explicit(&e->srv->nbigpools[e->idx], memory_order_acquire);
}

static inline struct rr_bigpool *rr_evt_pool(const struct rr_evt *e, unsigned int i)
{
	return atomic_load_explicit(&e->srv->bigpools[e->idx][i], memory_order_relaxed);
}

/* @bp's thread: pump the connections waiting for its sinks, in turn. */
void rr_read_serve_waiters(struct rr_bigpool *bp);
/* @c's thread, as it closes: off its pool's queue of waiters. */
void rr_read_forget_waiter(struct rr_conn *c);

/* Event thread: build the Replies and post the chains other threads queued. */
void rr_send_run_deferred(struct rr_conn *c);
/* @e's sink pool on @pd, made (and filled a little) on first use. */
struct rr_bigpool *rr_server_bigpool(struct rr_server *srv, struct rr_evt *e, struct fab_pd *pd);
/* @e's thread (or none running): its sink pools unpublished and freed. */
void rr_evt_drop_pools(struct rr_evt *e);
int rr_evt_epoll_add(struct rr_evt *e, int fd, void *tag);
void rr_evt_epoll_del(struct rr_evt *e, int fd);
/* evt[0], after the accept: @c goes to its home thread (or stays here). */
void rr_conn_hand_over(struct rr_conn *c);
/* An event thread for a new connection: the least loaded. */
struct rr_evt *rr_server_pick_evt(struct rr_server *srv);

/* connection stages */
void rr_conn_connect_request(struct rr_server *srv, const struct fab_cm_event *ev);
void rr_conn_cm_event(struct rr_conn *c, const struct fab_cm_event *ev);
/* Accepting to up, once: its ESTABLISHED, or its first message if that
 * comes first (its thread). */
void rr_conn_established(struct rr_conn *c);
void rr_conn_close(struct rr_conn *c, const char *why);
/* Everything a connection holds, and the connection (rr_conn.c). */
void rr_conn_free(struct rr_conn *c);
void rr_conn_get(struct rr_conn *c);
void rr_conn_put(struct rr_conn *c);
/* Off the server's list, its budget and counters given back (rr_conn_free
 * follows). */
void rr_conn_forget(struct rr_conn *c);
/* Reap connections whose references are gone (@e's thread). */
void rr_conn_reap(struct rr_evt *e);
/* cm_pending: rr_conn_close_async's close, beside the CM events' bits */
#define RR_CM_UPPER_CLOSE (1u << 31)
_Static_assert(FAB_CM_QP_ERROR < 31, "the CM events' bits stay below the close's");
/* The CM events evt[0] handed over (cm_pending), on @c's thread. */
void rr_conn_cm_pending(struct rr_conn *c);
void rr_conn_poll_cq(struct rr_conn *c);

/* receive stages */
void rr_recv_post_batch(struct rr_conn *c);
/*
 * Top @c's receives back up (rr_recv.c), on its event thread. The test is
 * inline: it runs at every message, Reply and call release, and a batch is
 * due once in recv_batch of them.
 */
static inline void rr_recv_refill(struct rr_conn *c)
{
	if (c->srq)
		rr_srq_recv_refill(c);
	else if (c->posted <= c->repost_at)
		rr_recv_post_batch(c);
}
void rr_recv_complete(struct rr_conn *c, const struct fab_wc *wc);
void rr_call_dispatch(struct rr_call_ctx *ctx);
void rr_call_free(struct rr_call_ctx *ctx);
/* Drop one hold on a dispatched call; the last one frees it. */
void rr_call_put(struct rr_call_ctx *ctx);

/* read stages */
void rr_read_start(struct rr_call_ctx *ctx);
void rr_read_complete(struct rr_conn *c, const struct fab_wc *wc);
void rr_read_pump(struct rr_conn *c);

/* reply build (rr_reply.c) */
/* Event thread: RDMA_ERROR (@act: ERR_VERS or ERR_CHUNK) for @ctx's XID,
 * posted now or, with no send context, in turn behind the connection's
 * Replies that wait for one; it consumes one hold of @ctx, whose receive
 * (and credit) stays taken until then. */
void rr_reply_error(struct rr_call_ctx *ctx, enum rr_hdr_action act);
/* @ctx's Read sinks back to their pool (an error Reply may wait without). */
void rr_call_put_sinks(struct rr_call_ctx *ctx);
/* Event thread: build and post (or queue) a Reply to @call now. */
int rr_reply_now(struct rr_call *call, const struct iovec *iov, int iovcnt,
		 const struct rr_reply_plan *plan, rr_reply_done_fn done, void *done_arg);
/* Replies on their way (rr_reply_queue.c): no send context for it now, the
 * Reply is kept in its call and waits for one (rr_send_ctx_wait). */
void rr_reply_wait(struct rr_call_ctx *ctx, const struct iovec *iov, int iovcnt,
		   const struct rr_reply_plan *plan, rr_reply_done_fn done, void *done_arg);

/* Send pools (rr_sendpool.c), their per-call part: inline, as a Reply
 * takes and gives back a context each (bench A). */
static inline struct rr_send_ctx *rr_sendpool_take(struct rr_conn *c, struct rr_sendpool *sp)
{
	struct rr_send_ctx *s = sp->free;

	sp->free = s->next_free;
	c->sends_held++;
	s->conn = c;
	return s;
}

/* Event thread: a context from @c's pool for one of @c's Replies (joining
 * the pool on the first); NULL when none may be had now. Below its reserve
 * one is always free for it: no accounting to do. */
static inline struct rr_send_ctx *rr_sendpool_get(struct rr_conn *c)
{
	c->sp_kicked = false;
	if (__builtin_expect(c->sp && c->sends_held < RR_SEND_RESERVE, 1))
		return rr_sendpool_take(c, c->sp);
	return rr_sendpool_get_slow(c);
}

/* Event thread: @s back to its pool, waking a connection that waits. */
static inline void rr_sendpool_put(struct rr_conn *c, struct rr_send_ctx *s)
{
	struct rr_sendpool *sp = c->sp;

	s->next_free = sp->free;
	sp->free = s;
	if (--c->sends_held >= RR_SEND_RESERVE)
		sp->spare++;
	if (c->ctx_wait_head || sp->wait_head)
		rr_sendpool_put_slow(c);
}

/* send queue (rr_send.c) */
/* The reverse direction's free context, under the lock; NULL when none. */
struct rr_send_ctx *rr_send_bc_ctx_take(struct rr_conn *c);

/* A send context of @c's, reset, with a connection reference; NULL when none
 * is free. Event thread, except a reverse-direction call's (@bc). A free
 * context holds no bounce buffer, lent registration, call or callback
 * (rr_send_ctx_release, and an unsignalled Send has none). */
static inline struct rr_send_ctx *rr_send_ctx_get(struct rr_conn *c, bool bc)
{
	struct rr_send_ctx *s = bc ? rr_send_bc_ctx_take(c) : rr_sendpool_get(c);

	if (!s)
		return NULL;
	s->rw.nwr = 0;
	s->rw.nsge = 1; /* sge[0] is the Send's */
	s->next_pending = NULL;
	rr_conn_get(c);
	return s;
}
void rr_send_chunks_free(struct rr_conn *c);
/* The lkey of [@addr, @addr + @len) when it lies in @s's send buffer or
 * one of its connection's own. */
bool rr_send_lkey(const struct rr_send_ctx *s, const void *addr, size_t len, uint32_t *lkey);
/* @n contexts of @c's reverse direction, @pinned bytes registered for them. */
int rr_send_chunk_add(struct rr_conn *c, uint32_t n, uint64_t *pinned);
/* A chunk of @n contexts in @pd (@srv's buffer size); NULL when it cannot be made. */
struct rr_send_chunk *rr_send_chunk_make(struct rr_server *srv, struct fab_pd *pd, uint32_t n);
void rr_send_chunk_free(struct rr_send_chunk *ch);
/* Event thread: no send context now and none may be made (budget); the
 * Reply described in @ctx's rep_* waits for one of this connection's. */
void rr_send_ctx_wait(struct rr_conn *c, struct rr_call_ctx *ctx);
/* Give a send context back with what it holds (bounce buffers, the caller's
 * memory, the call, its connection reference). */
void rr_send_ctx_release(struct rr_send_ctx *s);
/* The Send that ends the chain in @s: sge[0], @len bytes of s->hdr,
 * unsignalled until the caller says; NULL when @s is full. */
struct fab_send_wr *rr_send_wr(struct rr_send_ctx *s, uint32_t len);
/* A built chain: posted now, queued until the send queue has room, or (off
 * the event thread) handed over to it. */
void rr_send_post(struct rr_conn *c, struct rr_send_ctx *s);
/* Event thread: the chains built while c->batching, as one post. */
void rr_send_post_batch(struct rr_conn *c);
/* Event thread: the chains other threads handed over go now (or are given
 * back if the connection is closing). */
void rr_send_post_offthread(struct rr_conn *c);
void rr_send_complete(struct rr_conn *c, const struct fab_wc *wc);
/* Closing: give back replies that never got send-queue room. */
void rr_send_drop_pending(struct rr_conn *c);

/* backchannel (rr_backchannel.c) */
/* The answer to our reverse-direction call @xid (an RDMA_ERROR): its credit
 * given back; false when @xid is not outstanding (never ours, answered or
 * abandoned already), and nothing changes. */
bool rr_bc_answered(struct rr_conn *c, uint32_t xid);
/* A reverse-direction Reply arrived in @ctx: up to the upper layer when it
 * answers an outstanding call, else dropped; then @ctx is freed. */
void rr_bc_reply_received(struct rr_conn *c, struct rr_call_ctx *ctx);

/*
 * An inline Reply's Send carries copies only, so it needs no completion to
 * free anything but its own context: up to this many go unsignalled, and the
 * next signalled Send's completion retires them (RC completes a send queue
 * in order). It spares the event thread a wake-up per call. Each connection
 * has this many send contexts beyond one per receive, so an unsignalled
 * context never leaves a Reply without one. At most RR_SEND_RESERVE - 2 are
 * out at once (rr_reply.c, RR_QUIET_MAX and RR_SEND_RESERVE say why).
 */
#define RR_QUIET_SENDS 8u
/* So a connection's bound (rr_conn_nsends) never falls within its reserve,
 * which rr_sendpool_get takes from without looking at the bound. */
_Static_assert(RR_QUIET_SENDS >= RR_SEND_RESERVE, "the bound covers the reserve");

/* wr_id tags: low bits of the context pointers (all 8-byte aligned). */
#define RR_WRID_RECV 0x1u
#define RR_WRID_READ 0x2u
#define RR_WRID_SEND 0x3u
#define RR_WRID_WRITE 0x4u		/* unsignalled Writes: only errors complete */
#define RR_WRID_MASK 0x7u

void rr_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 0, or -EINVAL for a configuration out of its documented ranges (rr_config.c). */
int rr_config_check(const struct rr_config *c);

#endif
