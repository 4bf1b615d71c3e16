// SPDX-License-Identifier: MIT
/*
 * ulb_call_scan.c - walk an NFS Call: RPC header (RFC 5531 section 9),
 * v2/v3 arguments of the procedures with eligible items (RFC 1094, RFC 1813),
 * and the COMPOUND4args envelope (RFC 8881 section 16.2).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "ulb/ulb_priv.h"
#include "ulb/ulb_test_hooks.h"

/* The item's length word (@len) has been read: record the item, skip its bytes. */
static bool ulb_scan_item_data(struct ulb_scan *s, enum ulb_item kind, uint32_t len)
{
	struct ulb_call *c = s->c;
	const struct rr_pcl *pcl = s->pcl;
	uint64_t position;
	int chunk = -1;
	unsigned int i;

	/* Positions count the whole Call, chunk data in place (RFC 8166 section 3.5.3). */
	position = ulb_xdr_pos(&s->x) + c->absent_bytes;
	if (pcl) {
		for (i = 0; i < pcl->n_read && i < RR_PCL_MAX_READ_CHUNKS; i++) {
			if (pcl->read[i].position != 0 && pcl->read[i].position == position) {
				chunk = (int)i;
				break;
			}
		}
	}
	if (c->n_items < ULB_MAX_ARG_ITEMS) {
		struct ulb_arg_item *it = &c->items[c->n_items];

		it->op_index = s->op_index;
		it->kind = (uint16_t)kind;
		it->chunk = (int16_t)chunk;
		it->length = len;
		it->position = position;
	}
	c->n_items++;
	if (chunk >= 0) {
		/* The Read chunk carries the bytes and the pad; nothing of it is inline. */
		c->absent_bytes += ulb_xdr_round4(len);
		return true;
	}
	return ulb_xdr_skip(&s->x, ulb_xdr_round4(len));
}

bool ulb_scan_item(struct ulb_scan *s, enum ulb_item kind, uint32_t max)
{
	uint32_t len;

	if (!ulb_xdr_u32(&s->x, &len))
		return false;
	if (len > max)
		return ulb_xdr_fail(&s->x);
	return ulb_scan_item_data(s, kind, len);
}

/* sattr3 (RFC 1813 section 2.6) */
static bool ulb_x_sattr3(struct ulb_xdr *x)
{
	bool set;
	uint32_t how;
	int i;

	for (i = 0; i < 3; i++) { /* mode, uid, gid */
		if (!ulb_xdr_bool(x, &set) || (set && !ulb_xdr_skip(x, 4)))
			return false;
	}
	if (!ulb_xdr_bool(x, &set) || (set && !ulb_xdr_skip(x, 8))) /* size */
		return false;
	for (i = 0; i < 2; i++) { /* atime, mtime: time_how */
		if (!ulb_xdr_u32(x, &how))
			return false;
		if (how > 2)
			return ulb_xdr_fail(x);
		if (how == 2 && !ulb_xdr_skip(x, 8))
			return false;
	}
	return true;
}

static bool ulb_scan_nfs3(struct ulb_scan *s)
{
	struct ulb_xdr *x = &s->x;
	uint8_t buf[ULB_XDR_TAKE_MAX];
	const uint8_t *h;

	switch (s->c->proc) {
	case ULB_NFS3_READLINK:
		if (!ulb_xdr_opaque(x, ULB_NFS3_FHSIZE, NULL, NULL))
			return false;
		ulb_scan_read_op(s->c, 0, ULB_NFS3_READLINK, ULB_ITEM_READLINK_PATH, 0);
		return true;
	case ULB_NFS3_READ: /* file, offset, count */
		h = x->p;
		if (ulb_xdr_here(x) >= 4 && ulb_xdr_load32(h) <= ULB_NFS3_FHSIZE &&
		    ulb_xdr_here(x) >= 4 + ulb_xdr_round4(ulb_xdr_load32(h)) + 12) {
			/* in place: one check once the handle's length is known */
			h += 4 + ulb_xdr_round4(ulb_xdr_load32(h));
			x->p = h + 12;
			ulb_scan_read_op(s->c, 0, ULB_NFS3_READ, ULB_ITEM_READ_DATA,
					 ulb_xdr_load32(h + 8));
			return true;
		}
		if (!ulb_xdr_opaque(x, ULB_NFS3_FHSIZE, NULL, NULL))
			return false;
		h = ulb_xdr_take(x, 12, buf);
		if (!h)
			return false;
		ulb_scan_read_op(s->c, 0, ULB_NFS3_READ, ULB_ITEM_READ_DATA, ulb_xdr_load32(h + 8));
		return true;
	case ULB_NFS3_WRITE:
		/* file, offset, count, stable, data */
		h = x->p;
		if (ulb_xdr_here(x) >= 4 && ulb_xdr_load32(h) <= ULB_NFS3_FHSIZE &&
		    ulb_xdr_here(x) >= 4 + ulb_xdr_round4(ulb_xdr_load32(h)) + 20) {
			/* in place up to the data's length word */
			h += 4 + ulb_xdr_round4(ulb_xdr_load32(h)) + 16;
			x->p = h + 4;
			if (ulb_xdr_load32(h) > ULB_MAX_OPAQUE)
				return ulb_xdr_fail(x);
			return ulb_scan_item_data(s, ULB_ITEM_WRITE_DATA, ulb_xdr_load32(h));
		}
		if (!ulb_xdr_opaque(x, ULB_NFS3_FHSIZE, NULL, NULL) || !ulb_xdr_skip(x, 16))
			return false;
		return ulb_scan_item(s, ULB_ITEM_WRITE_DATA, ULB_MAX_OPAQUE);
	case ULB_NFS3_SYMLINK:
		/* where (dir, name), symlink (attributes, data) */
		if (!ulb_xdr_opaque(x, ULB_NFS3_FHSIZE, NULL, NULL) ||
		    !ulb_xdr_opaque(x, ULB_MAX_OPAQUE, NULL, NULL) || !ulb_x_sattr3(x))
			return false;
		return ulb_scan_item(s, ULB_ITEM_SYMLINK_PATH, ULB_MAX_OPAQUE);
	default:
		return true;
	}
}

static bool ulb_scan_nfs2(struct ulb_scan *s)
{
	struct ulb_xdr *x = &s->x;
	uint32_t count;

	switch (s->c->proc) {
	case ULB_NFS2_READLINK:
		if (!ulb_xdr_skip(x, ULB_NFS2_FHSIZE))
			return false;
		ulb_scan_read_op(s->c, 0, ULB_NFS2_READLINK, ULB_ITEM_READLINK_PATH, 0);
		return true;
	case ULB_NFS2_READ:
		/* file, offset, count, totalcount */
		if (!ulb_xdr_skip(x, ULB_NFS2_FHSIZE + 4) || !ulb_xdr_u32(x, &count) ||
		    !ulb_xdr_skip(x, 4))
			return false;
		ulb_scan_read_op(s->c, 0, ULB_NFS2_READ, ULB_ITEM_READ_DATA, count);
		return true;
	case ULB_NFS2_WRITE:
		/* file, beginoffset, offset, totalcount, data */
		if (!ulb_xdr_skip(x, ULB_NFS2_FHSIZE + 12))
			return false;
		return ulb_scan_item(s, ULB_ITEM_WRITE_DATA, ULB_NFS2_MAXDATA);
	case ULB_NFS2_SYMLINK:
		/* from (dir, name), to (path), attributes */
		if (!ulb_xdr_skip(x, ULB_NFS2_FHSIZE) ||
		    !ulb_xdr_opaque(x, ULB_NFS2_MAXNAMLEN, NULL, NULL) ||
		    !ulb_scan_item(s, ULB_ITEM_SYMLINK_PATH, ULB_NFS2_MAXPATHLEN))
			return false;
		return ulb_xdr_skip(x, ULB_NFS2_SATTR_LEN);
	default:
		return true;
	}
}

/*
 * SEQUENCE, then PUTFH - how nearly every NFSv4.1+ COMPOUND starts - and a
 * READ, WRITE or GETATTR after them (the Linux client's READ, WRITE and
 * GETATTR), in place: one bounds check for the first two, one for the
 * third, instead of one per field. The same arguments ulb_nfs4_skip_args()
 * takes (RFC 8881 sections 18.46, 18.19, 18.22, 18.32, 18.7). Returns how many operations it
 * took, 0 when the Call does not start so or the window does not hold
 * them; the loop goes on from there (and finds a latched error, if WRITE's
 * data ran past the end).
 */
static uint32_t ulb_scan_v41_prefix(struct ulb_scan *s)
{
	struct ulb_call *c = s->c;
	struct ulb_xdr *x = &s->x;
	const uint8_t *h = x->p;
	size_t here = ulb_xdr_here(x);
	uint64_t fh;

	/* SEQUENCE: op, sessionid, sequenceid, slotid, highest_slotid, cachethis;
	 * PUTFH: op, the handle's length, the handle */
	if (c->numops < 2 || here < 44 || ulb_xdr_load32(h) != ULB_OP_SEQUENCE ||
	    ulb_xdr_load32(h + 32) > 1 || ulb_xdr_load32(h + 36) != ULB_OP_PUTFH)
		return 0;
	fh = ulb_xdr_load32(h + 40);
	if (fh > ULB_NFS4_FHSIZE || here < 44 + ulb_xdr_round4(fh))
		return 0;
	memcpy(c->seq.sessionid, h + 4, sizeof(c->seq.sessionid));
	c->seq.sequenceid = ulb_xdr_load32(h + 20);
	c->seq.slotid = ulb_xdr_load32(h + 24);
	c->has_sequence = true;
	h += 44 + ulb_xdr_round4(fh);
	here -= 44 + ulb_xdr_round4(fh);
	x->p = h;
	if (c->numops < 3 || here < 4)
		return 2;
	switch (ulb_xdr_load32(h)) {
	case ULB_OP_READ: /* op, stateid, offset, count */
		if (here < 32)
			return 2;
		ulb_scan_read_op(c, 2, ULB_OP_READ, ULB_ITEM_READ_DATA, ulb_xdr_load32(h + 28));
		x->p = h + 32;
		return 3;
	case ULB_OP_WRITE: /* op, stateid, offset, stable, the data's length; the data */
		if (here < 36 || ulb_xdr_load32(h + 32) > ULB_MAX_OPAQUE)
			return 2;
		x->p = h + 36;
		s->op_index = 2;
		return ulb_scan_item_data(s, ULB_ITEM_WRITE_DATA, ulb_xdr_load32(h + 32)) ? 3 : 2;
	case ULB_OP_GETATTR: /* op, bitmap4: its word count, the words */
		if (here < 8 || ulb_xdr_load32(h + 4) > ULB_MAX_BITMAP_WORDS ||
		    here < 8 + 4 * (size_t)ulb_xdr_load32(h + 4))
			return 2;
		x->p = h + 8 + 4 * (size_t)ulb_xdr_load32(h + 4);
		return 3;
	default:
		return 2;
	}
}

/* COMPOUND4args (RFC 8881 section 16.2.1) */
static bool ulb_scan_compound(struct ulb_scan *s)
{
	struct ulb_call *c = s->c;
	struct ulb_xdr *x = &s->x;
	uint32_t i, op, last;

	if (!ulb_xdr_opaque(x, ULB_MAX_TAG_LEN, NULL, NULL) || !ulb_xdr_u32(x, &c->minorversion) ||
	    !ulb_xdr_u32(x, &c->numops))
		return false;
	if (c->minorversion > 2 || c->numops > ULB_MAX_COMPOUND_OPS) {
		/* MINOR_VERS_MISMATCH or RESOURCE before any operation runs */
		c->stopped = true;
		return true;
	}
	last = ulb_op_last(c->minorversion);
	i = c->minorversion ? ulb_scan_v41_prefix(s) : 0; /* SEQUENCE is v4.1+ */
	c->nops_scanned = i;
	for (; i < c->numops; i++) {
		if (!ulb_xdr_u32(x, &op))
			return false;
		if (op < ULB_OP_FIRST || op > last) {
			/* The server answers OP_ILLEGAL and runs nothing after it. */
			c->stopped = true;
			c->stop_opcode = op;
			return true;
		}
		s->op_index = (uint16_t)i;
		if (!ulb_nfs4_skip_args(s, op))
			return false;
		c->nops_scanned++;
	}
	return true;
}

/*
 * The RPC Call header (RFC 5531 section 9) up to the arguments. The fixed
 * words are taken in runs (xid..rpcvers, prog..cred length, verifier head),
 * each bounds-checked once.
 */
static enum ulb_scan_result ulb_scan_rpc_hdr(struct ulb_xdr *x, struct ulb_call *c)
{
	uint8_t buf[ULB_XDR_TAKE_MAX];
	const uint8_t *h, *h2;
	uint32_t cred_len, verf_len, service = 0, gss_proc = 0;
	uint64_t cred_pad;

	if (ulb_xdr_here(x) >= 32) {
		/* both runs in place: one bounds check */
		h = x->p;
		x->p += 32;
		h2 = h + 12;
	} else {
		h = ulb_xdr_take(x, 12, buf); /* xid, mtype, rpcvers */
		if (!h)
			return ULB_SCAN_NOT_CALL;
		h2 = NULL;
	}
	c->xid = ulb_xdr_load32(h);
	if (ulb_xdr_load32(h + 4) != ULB_RPC_CALL || ulb_xdr_load32(h + 8) != ULB_RPC_VERS)
		return ULB_SCAN_NOT_CALL;
	h = h2 ? h2 : ulb_xdr_take(x, 20, buf); /* prog, vers, proc, cred flavor and length */
	if (!h)
		return ULB_SCAN_GARBAGE;
	c->prog = ulb_xdr_load32(h);
	c->vers = ulb_xdr_load32(h + 4);
	c->proc = ulb_xdr_load32(h + 8);
	c->cred_flavor = ulb_xdr_load32(h + 12);
	cred_len = ulb_xdr_load32(h + 16);
	c->ulp = ulb_ulp_of(c->prog, c->vers);
	if (cred_len > ULB_MAX_AUTH_BYTES)
		return ULB_SCAN_GARBAGE;
	cred_pad = ulb_xdr_round4(cred_len);
	/* RPCSEC_GSS: the cred body says how the arguments are wrapped (RFC 2203
	 * section 5.3.1): version, gss_proc, seq_num, service */
	if (c->cred_flavor == ULB_RPCSEC_GSS && cred_len >= 16) {
		h = ulb_xdr_take(x, 16, buf);
		if (!h)
			return ULB_SCAN_GARBAGE;
		gss_proc = ulb_xdr_load32(h + 4);
		service = ulb_xdr_load32(h + 12);
		cred_pad -= 16;
	}
	if (c->cred_flavor != ULB_RPCSEC_GSS && ulb_xdr_here(x) >= cred_pad + 8 &&
	    ulb_xdr_load32(x->p + cred_pad + 4) == 0) {
		/* the credential and an empty verifier (AUTH_NONE), in place */
		x->p += cred_pad + 8;
		return ULB_SCAN_OK;
	}
	if (!ulb_xdr_skip(x, cred_pad))
		return ULB_SCAN_GARBAGE;
	h = ulb_xdr_take(x, 8, buf); /* verifier flavor, length */
	if (!h)
		return ULB_SCAN_GARBAGE;
	verf_len = ulb_xdr_load32(h + 4);
	if (verf_len > ULB_MAX_AUTH_BYTES || !ulb_xdr_skip(x, ulb_xdr_round4(verf_len)))
		return ULB_SCAN_GARBAGE;
	if (c->cred_flavor == ULB_RPCSEC_GSS) {
		c->gss_service = service;
		if (cred_len < 16 || gss_proc != ULB_GSS_PROC_DATA ||
		    service == ULB_GSS_SVC_PRIVACY)
			return ULB_SCAN_OPAQUE;
		if (service == ULB_GSS_SVC_INTEGRITY) {
			/* rpc_gss_integ_data: databody_integ<> = seq_num, then the args */
			if (!ulb_xdr_skip(x, 8))
				return ULB_SCAN_GARBAGE;
		} else if (service != ULB_GSS_SVC_NONE) {
			return ULB_SCAN_GARBAGE;
		}
	}
	return ULB_SCAN_OK;
}

enum ulb_scan_result ulb_call_scan(const struct iovec *iov, int iovcnt, const struct rr_pcl *pcl,
				   struct ulb_call *c)
{
	struct ulb_scan s;
	struct ulb_xdr *x = &s.x;
	enum ulb_scan_result r;
	bool ok;

	/* The header and the counts only: the arrays are written up to their
	 * counts and never read beyond (clearing all of it is 2 KiB a call). */
	memset(c, 0, offsetof(struct ulb_call, read_ops));
	c->n_items = 0;
	c->absent_bytes = 0;
	ulb_xdr_init(x, iov, iovcnt);
	s.pcl = pcl;
	s.c = c;
	s.op_index = 0;

	r = ulb_scan_rpc_hdr(x, c);
	if (r != ULB_SCAN_OK)
		return r;
	c->args_offset = ulb_xdr_pos(x);

	switch (c->ulp) {
	case ULB_ULP_NFS2:
		ok = ulb_scan_nfs2(&s);
		break;
	case ULB_ULP_NFS3:
		ok = ulb_scan_nfs3(&s);
		break;
	case ULB_ULP_NFS4:
		ok = c->proc == ULB_NFS4_PROC_COMPOUND ? ulb_scan_compound(&s) : true;
		break;
	default:
		/* MOUNT, NLM, NSM, NFSACL and the rest: nothing eligible to find */
		ok = true;
		break;
	}
	return ok && !x->err ? ULB_SCAN_OK : ULB_SCAN_GARBAGE;
}

_Static_assert(ULB_MAX_ARG_ITEMS <= 64, "the used-item mask is one uint64_t");

enum ulb_ddp_result ulb_call_check_read_chunks(const struct ulb_call *c, const struct rr_pcl *pcl)
{
	uint64_t used = 0; /* bit j: items[j] has its chunk */
	unsigned int i, j, nitems;

	if (!pcl)
		return ULB_DDP_OK;
	nitems = c->n_items < ULB_MAX_ARG_ITEMS ? c->n_items : ULB_MAX_ARG_ITEMS;
	for (i = 0; i < pcl->n_read && i < RR_PCL_MAX_READ_CHUNKS; i++) {
		const struct rr_chunk *ch = &pcl->read[i];
		bool found = false;

		if (ch->position == 0)
			continue; /* Position-Zero: the Call itself (Long Call) */
		for (j = 0; j < nitems; j++) {
			const struct ulb_arg_item *it = &c->items[j];

			if (it->position != ch->position)
				continue;
			/* the item's bytes, with or without its XDR pad */
			if ((used >> j & 1u) || ch->length < it->length ||
			    ch->length > ulb_xdr_round4(it->length))
				return ULB_DDP_VIOLATION;
			used |= (uint64_t)1 << j;
			found = true;
			break;
		}
		if (!found)
			return ULB_DDP_VIOLATION;
	}
	return ULB_DDP_OK;
}

int ulb_cb_scan_sequence(const struct iovec *iov, int iovcnt, struct ulb_sequence *seq)
{
	struct ulb_xdr x;
	uint32_t w[6], flavor, numops, op;
	int i;

	ulb_xdr_init(&x, iov, iovcnt);
	/* xid, CALL, rpcvers, prog, vers, proc */
	for (i = 0; i < 6; i++)
		if (!ulb_xdr_u32(&x, &w[i]))
			return -EINVAL;
	if (w[1] != ULB_RPC_CALL || w[2] != ULB_RPC_VERS || w[5] != ULB_CB_PROC_COMPOUND)
		return -EINVAL;
	if (!ulb_x_opaque_auth(&x, &flavor) || !ulb_x_opaque_auth(&x, &flavor))
		return -EINVAL;
	/* CB_COMPOUND4args: tag, minorversion, callback_ident, argarray<> */
	if (!ulb_xdr_opaque(&x, ULB_MAX_TAG_LEN, NULL, NULL) || !ulb_xdr_skip(&x, 8) ||
	    !ulb_xdr_u32(&x, &numops) || numops == 0 || !ulb_xdr_u32(&x, &op) ||
	    op != ULB_OP_CB_SEQUENCE)
		return -EINVAL;
	if (!ulb_xdr_bytes(&x, seq->sessionid, sizeof(seq->sessionid)) ||
	    !ulb_xdr_u32(&x, &seq->sequenceid) || !ulb_xdr_u32(&x, &seq->slotid))
		return -EINVAL;
	return 0;
}

