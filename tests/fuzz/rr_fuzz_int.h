/* SPDX-License-Identifier: MIT */
/*
 * rr_fuzz_int.h - what the engine fuzzers' recording fabric
 * (rr_fuzz_fabric.c), simulated client and model (rr_fuzz_client.c) and
 * driver (rr_fuzz_engine.c) share: the checks' abort, the bounds, the state
 * of one input.
 */
#ifndef RR_FUZZ_INT_H
#define RR_FUZZ_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "fabric/fab_internal.h"
#include "rpcrdma/rr_internal.h"
#include "rr_fuzz_engine.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "rr_fuzz_engine: %s:%d: check failed: %s\n", __FILE__,    \
				__LINE__, #cond);                                                  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#define RRF_MAX_MSGS 3
#define RRF_MAX_SEGS 256
#define RRF_MAX_CHUNK_BYTES 32768u	/* the server's max_chunk_bytes (>= inline_size) */
#define RRF_INLINE 4096u
#define RRF_REGION_LEN 65536u
#define RRF_MAX_REPLY 40000u
#define RRF_CQ_MAX 8192
#define RRF_MAX_MR 1024
#define RRF_MAX_PEND_WRITES 1024
#define RRF_MAX_RANGES 512

/* ---- the simulated client: what each message offered ---- */

struct mseg {
	uint32_t handle, length;
	uint64_t offset;
	uint32_t position;	/* Read segments */
	uint32_t reads;		/* RDMA Reads that named it */
	uint8_t *mem;		/* Write/Reply segments: client memory, once written */
	uint8_t *written;
};

struct mchunk {
	uint32_t position;
	unsigned int first, nsegs;	/* into msg.rseg (Read) or msg.wseg */
	uint64_t length;
};

struct range {
	const uint8_t *p;
	size_t len;
};

struct msg {
	const uint8_t *bytes;
	size_t len;
	/* independent parse */
	bool parsed;
	uint32_t xid, proc;
	size_t hdr_len;
	struct mseg rseg[RRF_MAX_SEGS];
	unsigned int nrseg;
	struct mchunk rch[RRF_MAX_SEGS];
	unsigned int nrch;
	struct mseg wseg[RRF_MAX_SEGS];
	unsigned int nwseg;
	struct mchunk wch[RRF_MAX_SEGS];
	unsigned int nwch;
	bool has_reply;
	struct mchunk reply;	/* into wseg */
	uint8_t *expect_call;	/* section 3.5.3 reconstruction, built at dispatch */
	size_t expect_len;
	bool splice_bad;
	bool bc_reply;
	/* engine side */
	struct rr_call_ctx *ctx;
	bool delivered, dispatched, released, replied;
	struct range rd[RRF_MAX_RANGES];	/* where this call's Reads landed */
	unsigned int nrd;
	/* the Reply handed in and what the model expects of it */
	uint8_t *stream;
	size_t stream_len;
	struct iovec iov[4];
	int iovcnt;
	struct rr_reply_plan plan;
	int expect_proc;	/* RR_PROC_MSG / NOMSG / ERROR, once replied */
	uint8_t *expect_inline;
	size_t expect_inline_len;
	size_t expect_hdr;
	int done_calls;
	bool not_delivered;
	int answers;		/* Sends that carried this xid */
};

/* ---- the recording fabric ---- */

struct rrf_obj {
	struct fab_fabric *fab;
	int fd;
};

struct rrf_conn {
	struct fab_conn_head h;
	struct fab_qp_caps caps;
	bool has_qp, error;
};

struct rrf_mr {
	struct fab_fabric *fab;
	struct fab_mr mr;
};

struct rrf_recv {
	uint64_t wr_id;
	void *addr;
	uint32_t len;
};

struct pend_write {
	uint32_t rkey;
	uint64_t raddr;
	uint32_t len;
	uint8_t *data;
};

struct rrf_state {
	struct fab_fabric fab;
	struct rrf_obj chan, lis, pd;
	struct rrf_mr *mrs[RRF_MAX_MR];
	unsigned int nmr;
	uint32_t next_key;
	struct rrf_conn *conn;	/* this input's */
	struct rrf_obj *cq;
	struct fab_wc cqe[RRF_CQ_MAX];
	uint64_t cqe_seq[RRF_CQ_MAX];	/* send-queue position, 0 for receives */
	unsigned int ncqe, polled, limit;
	struct rrf_recv rq[256];
	unsigned int nrq;
	uint64_t sq_posted, sq_retired;
	unsigned int wr_count, fault_wr;	/* fault_wr 0: none, else WR number + 1 */
	uint64_t read_bytes, write_bytes;
	struct pend_write pw[RRF_MAX_PEND_WRITES];
	unsigned int npw;
	/* this input */
	enum rrf_mode mode;
	struct msg msgs[RRF_MAX_MSGS + 1];	/* + idle_check's */
	unsigned int nmsgs;
	const uint8_t *pool;
	size_t npool;
	uint32_t client_recv;	/* the client's receive buffers: our Sends' limit */
	bool offer_inv;
	bool reply_later, release_only, offthread;
};

extern struct rrf_state F;

extern struct rr_server *srv;
extern bool verbose;		/* RRF_VERBOSE set: one line per Call and per Send */
extern uint8_t *region;		/* registered with the server: zero-copy Replies */
extern unsigned int base_mrs;	/* MRs the server holds besides its big pool */
extern const struct fab_ops rrf_ops;

/* rr_fuzz_fabric.c: the recording provider */
void rrf_check_sge(const struct fab_sge *sge, unsigned int access);
void rrf_push_cqe(const struct fab_wc *wc, uint64_t seq);

/* rr_fuzz_client.c: the model - a message's independent parse, the Call
 * and Reply it must produce */
void rrf_parse_msg(struct msg *m);
struct msg *rrf_msg_of_ctx(const void *ctx);
void rrf_check_call(struct msg *m, struct rr_call *call);
void rrf_expect_reply(struct msg *m, const struct rr_reply_plan *plan, bool given);
/* ... and the client carrying out what the fabric was given */
void rrf_client_read(const struct fab_send_wr *wr);
void rrf_client_write(const struct fab_send_wr *wr);
void rrf_client_send(const uint8_t *p, size_t n, bool inv, uint32_t inv_rkey);
void rrf_clear_pending_writes(void);

#endif
