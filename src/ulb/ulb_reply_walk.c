// SPDX-License-Identifier: MIT
/*
 * ulb_reply_walk.c - pair the NFS Read results of an encoded Reply with the
 * Call's Write chunks (RFC 8267 sections 3, 4.1.1, 4.3) and check that each
 * payload fits its chunk (RFC 8166 section 3.5.5). What stays inline, and
 * whether it fits, is the transport's (rpcrdma/rr_reply.c).
 */
#include <string.h>

#include "ulb/ulb_priv.h"
#include "ulb/ulb_reply.h"

struct ulb_walk {
	struct ulb_xdr x;
	const struct rr_pcl *pcl;
	struct rr_reply_plan *plan;
	struct ulb_reply_info *info;
	uint32_t next_chunk; /* Write chunk of the next NFS Read result */
};

static bool ulb_chunk_nonempty(const struct rr_chunk *ch)
{
	return ch->nsegs > 0 && ch->length > 0;
}

/* One NFS Read result's data item, @len bytes at stream offset @data, read
 * and skipped: pair it with Write chunk @chunk. */
static inline __attribute__((always_inline)) bool ulb_walk_data(struct ulb_walk *w, uint32_t chunk,
							  uint32_t len, uint64_t data)
{
	const struct rr_chunk *ch;

	if (!w->pcl || chunk >= w->pcl->n_write || chunk >= RR_PCL_MAX_WRITE_CHUNKS)
		return true; /* no chunk left: inline */
	ch = &w->pcl->write[chunk];
	if (!ulb_chunk_nonempty(ch))
		return true; /* empty chunk: the client wants it inline */
	if (len > ch->length) {
		if (w->info->result == ULB_REPLY_OK) {
			w->info->result = ULB_REPLY_WRITE_CHUNK_TOO_SMALL;
			w->info->bad_chunk = (int)chunk;
		}
		return true;
	}
	if (len == 0)
		return true; /* nothing to write: the chunk is echoed empty */
	if (w->plan->nspans < RR_PCL_MAX_WRITE_CHUNKS) {
		struct rr_payload_span *sp = &w->plan->spans[w->plan->nspans++];

		sp->chunk = (uint16_t)chunk;
		sp->offset = data;
		sp->length = len;
	}
	return true;
}

/* One NFS Read result's data item at the cursor: opaque<>. */
static bool ulb_walk_item(struct ulb_walk *w, uint32_t chunk)
{
	uint32_t len;
	uint64_t data;

	if (!ulb_xdr_opaque(&w->x, ULB_MAX_OPAQUE, &len, &data))
		return false;
	return ulb_walk_data(w, chunk, len, data);
}

/* READ_PLUS4res NFS4_OK arm: rpr_eof, rpr_contents<> (RFC 7862 section 15.10) */
static bool ulb_walk_read_plus(struct ulb_walk *w, uint32_t chunk)
{
	struct ulb_xdr *x = &w->x;
	uint32_t n, i, type;
	bool first_data = true;

	if (!ulb_xdr_bool(x, NULL) || !ulb_xdr_count(x, ULB_MAX_ARRAY, 4, &n))
		return false;
	if (n > ULB_READ_PLUS_MAX_CONTENTS && w->info->result == ULB_REPLY_OK)
		w->info->result = ULB_REPLY_READ_PLUS_TOO_MANY;
	for (i = 0; i < n; i++) {
		if (!ulb_xdr_u32(x, &type))
			return false;
		if (type == ULB_NFS4_CONTENT_DATA) { /* d_offset, d_data */
			if (!ulb_xdr_skip(x, 8))
				return false;
			if (first_data) {
				/* the chunk carries the first data content only */
				first_data = false;
				if (!ulb_walk_item(w, chunk))
					return false;
			} else if (!ulb_xdr_opaque(x, ULB_MAX_OPAQUE, NULL, NULL)) {
				return false;
			}
		} else if (type == ULB_NFS4_CONTENT_HOLE) { /* di_offset, di_length */
			if (!ulb_xdr_skip(x, 16))
				return false;
		} else {
			return ulb_xdr_fail(x);
		}
	}
	return true;
}

/* COMPOUND4res: status, tag, resarray<> (RFC 8881 section 16.2.2) */
static bool ulb_walk_compound(struct ulb_walk *w, uint32_t minor)
{
	struct ulb_xdr *x = &w->x;
	uint8_t buf[ULB_XDR_TAKE_MAX];
	uint32_t n, i, op, status;
	uint32_t last = ulb_op_last(minor);

	if (!ulb_xdr_skip(x, 4) || !ulb_xdr_opaque(x, ULB_MAX_TAG_LEN, NULL, NULL) ||
	    !ulb_xdr_count(x, ULB_MAX_COMPOUND_OPS, 8, &n))
		return false;
	for (i = 0; i < n; i++) {
		const uint8_t *h = ulb_xdr_take(x, 8, buf); /* resop, its status */

		if (!h)
			return false;
		op = ulb_xdr_load32(h);
		status = ulb_xdr_load32(h + 4);
		if (op == ULB_OP_ILLEGAL)
			continue;
		if (ulb_elig_res4(op, minor) != ULB_ITEM_NONE) {
			uint32_t chunk = w->next_chunk++;

			w->info->n_read_results++;
			if (status != ULB_NFS4_OK)
				continue;	 /* no data item: chunk echoed empty */
			if (op == ULB_OP_READ) { /* READ4resok: eof, data */
				if (!ulb_xdr_bool(x, NULL) || !ulb_walk_item(w, chunk))
					return false;
			} else if (op == ULB_OP_READLINK) { /* READLINK4resok: link */
				if (!ulb_walk_item(w, chunk))
					return false;
			} else if (!ulb_walk_read_plus(w, chunk)) {
				return false;
			}
			continue;
		}
		if (op < ULB_OP_FIRST || op > last)
			return ulb_xdr_fail(x);
		if (!ulb_nfs4_skip_res(x, op, status))
			return false;
	}
	return true;
}

/* v2/v3 READ and READLINK results (RFC 1094 section 2.2, RFC 1813 section 3.3) */
static bool ulb_walk_legacy(struct ulb_walk *w, const struct ulb_call *call)
{
	struct ulb_xdr *x = &w->x;
	enum ulb_item item = ulb_elig_res(call->ulp, call->proc, 0);
	uint8_t buf[ULB_XDR_TAKE_MAX];
	const uint8_t *h;
	uint32_t status, attrs_follow;

	if (item == ULB_ITEM_NONE)
		return true;
	w->info->n_read_results++;
	w->next_chunk++;
	if (call->ulp == ULB_ULP_NFS3) {
		h = ulb_xdr_here(x) >= 8 + ULB_NFS3_FATTR_LEN + 12 ? x->p : NULL;
		if (h && item == ULB_ITEM_READ_DATA && ulb_xdr_load32(h) == 0 &&
		    ulb_xdr_load32(h + 4) == 1) {
			/* READ3resok with attributes, in place: status, attributes_follow,
			 * fattr3, count, eof, then the data's length word */
			uint32_t len = ulb_xdr_load32(h + 8 + ULB_NFS3_FATTR_LEN + 8);
			uint64_t data;

			x->p += 8 + ULB_NFS3_FATTR_LEN + 12;
			data = ulb_xdr_pos(x);
			if (!ulb_xdr_skip(x, ulb_xdr_round4(len)))
				return false;
			return ulb_walk_data(w, 0, len, data);
		}
		/* status, post_op_attr (a bool, then fattr3 when true) */
		h = ulb_xdr_take(x, 8, buf);
		if (!h)
			return false;
		status = ulb_xdr_load32(h);
		attrs_follow = ulb_xdr_load32(h + 4);
		if (attrs_follow > 1)
			return ulb_xdr_fail(x);
		/* the attributes, and READ3resok's count and eof: one skip */
		if (!ulb_xdr_skip(x, (attrs_follow ? ULB_NFS3_FATTR_LEN : 0) +
					 (status == 0 && item == ULB_ITEM_READ_DATA ? 8 : 0)))
			return false;
		if (status != 0)
			return true;
	} else {
		if (!ulb_xdr_u32(x, &status))
			return false;
		if (status != 0)
			return true;
		if (item == ULB_ITEM_READ_DATA && !ulb_xdr_skip(x, ULB_NFS2_FATTR_LEN))
			return false;
	}
	return ulb_walk_item(w, 0);
}

/* RPC Reply (RFC 5531 section 9) to a scanned Call, then its results. */
static bool ulb_walk_rpc(struct ulb_walk *w, const struct ulb_call *call)
{
	struct ulb_xdr *x = &w->x;
	uint8_t buf[ULB_XDR_TAKE_MAX];
	const uint8_t *h;
	uint32_t verf_len;

	h = ulb_xdr_here(x) >= 24 ? x->p : NULL;
	if (h && ulb_xdr_load32(h + 4) == ULB_RPC_REPLY &&
	    ulb_xdr_load32(h + 8) == ULB_RPC_MSG_ACCEPTED && ulb_xdr_load32(h + 16) == 0) {
		/* xid, REPLY, MSG_ACCEPTED, an empty verifier (AUTH_NONE, AUTH_SYS),
		 * accept_stat: in place, one bounds check */
		x->p += 24;
		h += 20;
	} else {
		h = ulb_xdr_take(x, 12, buf); /* xid, REPLY, reply_stat */
		if (!h || ulb_xdr_load32(h + 4) != ULB_RPC_REPLY)
			return false;
		if (ulb_xdr_load32(h + 8) == ULB_RPC_MSG_DENIED)
			return true;
		if (ulb_xdr_load32(h + 8) != ULB_RPC_MSG_ACCEPTED)
			return false;
		/* verf (AUTH_NONE, AUTH_SYS, RPCSEC_GSS: any opaque_auth) */
		h = ulb_xdr_take(x, 8, buf);
		if (!h)
			return false;
		verf_len = ulb_xdr_load32(h + 4);
		if (verf_len > ULB_MAX_AUTH_BYTES)
			return ulb_xdr_fail(x);
		if (!ulb_xdr_skip(x, ulb_xdr_round4(verf_len)))
			return false;
		h = ulb_xdr_take(x, 4, buf); /* accept_stat */
		if (!h)
			return false;
	}
	if (ulb_xdr_load32(h) != ULB_RPC_SUCCESS || call->gss_service == ULB_GSS_SVC_PRIVACY)
		return true;
	/* integrity: rpc_gss_integ_data length and seq_num wrap the results */
	if (call->gss_service == ULB_GSS_SVC_INTEGRITY && !ulb_xdr_skip(x, 8))
		return false;
	if (call->ulp == ULB_ULP_NFS4 && call->proc == ULB_NFS4_PROC_COMPOUND)
		return ulb_walk_compound(w, call->minorversion);
	if (call->ulp == ULB_ULP_NFS2 || call->ulp == ULB_ULP_NFS3)
		return ulb_walk_legacy(w, call);
	return true;
}

/* SEQUENCE, PUTFH, READ */
#define ULB_READ_LAST_OPS 3u

/*
 * The encoder's word on where the READ data went (as the Linux server's
 * transport takes its NFS server's: docs/linux-client-wire.md), for the Linux client's READ: the
 * COMPOUND SEQUENCE, PUTFH, READ, which, answered in full, has the READ's
 * data at the very end of the Reply.
 */
static bool ulb_read_last_shape(const struct ulb_call *call)
{
	return call->ulp == ULB_ULP_NFS4 && call->proc == ULB_NFS4_PROC_COMPOUND &&
	       call->gss_service == 0 && !call->stopped && call->numops == ULB_READ_LAST_OPS &&
	       call->n_read_ops == 1 && call->read_ops[0].opcode == ULB_OP_READ &&
	       call->read_ops[0].op_index == ULB_READ_LAST_OPS - 1;
}

/* Reply bytes of that COMPOUND before the READ data, after its tag: the
 * result count; SEQUENCE4res (op, status, sessionid, sequenceid, slotid,
 * highest_slotid, target_highest_slotid, status_flags); PUTFH4res (op,
 * status); the READ result's head (op, status, eof, the data's length). */
#define ULB_READ_LAST_SEQ 4u
#define ULB_READ_LAST_PUTFH (ULB_READ_LAST_SEQ + 8u + ULB_NFS4_SESSIONID_LEN + 20u)
#define ULB_READ_LAST_READ (ULB_READ_LAST_PUTFH + 8u)
#define ULB_READ_LAST_DATA (ULB_READ_LAST_READ + 16u)

/* A result's head in place: @op, answered NFS4_OK. */
static inline __attribute__((always_inline)) bool ulb_res_ok_at(const uint8_t *p, uint32_t op)
{
	return ulb_xdr_load32(p) == op && ulb_xdr_load32(p + 4) == ULB_NFS4_OK;
}

/*
 * Checked, not trusted, in place in the first iovec (the encoder's head
 * buffer, which ends where the payload begins): the RPC Reply header, the
 * COMPOUND's status and three results, each op and status where that shape
 * puts them - so @data is where the walk would find the READ data, whatever
 * the Call said - and the end of the stream right after the data and its
 * pad. Fills the plan as the walk would and returns true; false (nothing
 * filled): walk.
 */
static bool ulb_read_last_in_place(struct ulb_walk *w, const struct iovec *iov, uint64_t total,
				   uint64_t data)
{
	const uint8_t *h = iov[0].iov_base, *r;
	uint64_t tag;
	uint32_t len;

	/* xid, REPLY, MSG_ACCEPTED, an empty verifier, SUCCESS; status, tag */
	if (data > iov[0].iov_len || data < 32 + ULB_READ_LAST_DATA ||
	    ulb_xdr_load32(h + 4) != ULB_RPC_REPLY ||
	    ulb_xdr_load32(h + 8) != ULB_RPC_MSG_ACCEPTED || ulb_xdr_load32(h + 16) != 0 ||
	    ulb_xdr_load32(h + 20) != ULB_RPC_SUCCESS || ulb_xdr_load32(h + 24) != ULB_NFS4_OK ||
	    ulb_xdr_load32(h + 28) > ULB_MAX_TAG_LEN)
		return false;
	tag = ulb_xdr_round4(ulb_xdr_load32(h + 28));
	if (data != 32 + tag + ULB_READ_LAST_DATA)
		return false;
	r = h + 32 + tag;
	len = ulb_xdr_load32(r + ULB_READ_LAST_READ + 12);
	if (ulb_xdr_load32(r) != ULB_READ_LAST_OPS ||
	    !ulb_res_ok_at(r + ULB_READ_LAST_SEQ, ULB_OP_SEQUENCE) ||
	    !ulb_res_ok_at(r + ULB_READ_LAST_PUTFH, ULB_OP_PUTFH) ||
	    !ulb_res_ok_at(r + ULB_READ_LAST_READ, ULB_OP_READ) ||
	    ulb_xdr_load32(r + ULB_READ_LAST_READ + 8) > 1 || len > ULB_MAX_OPAQUE ||
	    total - data != ulb_xdr_round4(len))
		return false;
	w->info->n_read_results = 1;
	w->next_chunk = 1;
	return ulb_walk_data(w, 0, len, data);
}

enum ulb_reply_result ulb_reply_plan(const struct ulb_call *call, const struct iovec *iov,
				     int iovcnt, const struct rr_pcl *pcl, uint64_t read_data,
				     struct rr_reply_plan *plan, struct ulb_reply_info *info)
{
	struct ulb_reply_info local;
	struct ulb_walk w;
	uint64_t total;
	bool ok;

	if (!info)
		info = &local;
	memset(info, 0, sizeof(*info));
	/* spans[] is written up to nspans and never read beyond */
	plan->nspans = 0;
	plan->deliverable = false;
	info->bad_chunk = -1;
	w.pcl = pcl;
	w.plan = plan;
	w.info = info;
	w.next_chunk = 0;
	total = ulb_xdr_iov_len(iov, iovcnt);
	info->reply_len = total;

	/* No Read operation in the Call: no result to pair with a Write chunk,
	 * nothing to walk for (most NFSv4 COMPOUNDs: the walk would cost more
	 * than the rest of the plan). */
	ok = call->n_read_ops == 0 ||
	     (read_data && iovcnt > 0 && ulb_read_last_shape(call) &&
	      ulb_read_last_in_place(&w, iov, total, read_data));
	if (!ok) {
		ulb_xdr_init_len(&w.x, iov, iovcnt, total);
		ok = ulb_walk_rpc(&w, call) && !w.x.err;
	}
	if (!ok)
		info->result = ULB_REPLY_GARBAGE;
	plan->deliverable = info->result == ULB_REPLY_OK;
	if (!plan->deliverable)
		plan->nspans = 0;
	return info->result;
}
