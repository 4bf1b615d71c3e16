// SPDX-License-Identifier: MIT
/*
 * ulb_nfs4_args.c - skip the arguments of every NFSv4 operation by its XDR
 * definition: RFC 7530 section 16 (3..39), RFC 8881 section 18 (40..58),
 * RFC 7862 section 15 (59..71), RFC 8276 section 8 (72..75).
 */
#include <string.h>

#include "ulb/ulb_priv.h"

#define SKIP(n) ulb_xdr_skip(x, (n))
#define U32(v) ulb_xdr_u32(x, (v))
#define BOOL(v) ulb_xdr_bool(x, (v))
#define OPAQUE(max) ulb_xdr_opaque(x, (max), NULL, NULL)
#define STATEID SKIP(ULB_NFS4_STATEID_LEN)
#define FH OPAQUE(ULB_NFS4_FHSIZE)
#define COMPONENT OPAQUE(ULB_MAX_OPAQUE)

bool ulb_x_bitmap4(struct ulb_xdr *x)
{
	uint32_t n;

	return ulb_xdr_count(x, ULB_MAX_BITMAP_WORDS, 4, &n) && SKIP((uint64_t)n * 4);
}

/* fattr4: attrmask, attr_vals (RFC 7530 section 3.3.12) */
bool ulb_x_fattr4(struct ulb_xdr *x)
{
	return ulb_x_bitmap4(x) && OPAQUE(ULB_MAX_OPAQUE);
}

/* netaddr4: na_r_netid, na_r_addr (RFC 7530 section 3.3.9) */
bool ulb_x_netaddr4(struct ulb_xdr *x)
{
	return OPAQUE(ULB_MAX_OPAQUE) && OPAQUE(ULB_MAX_OPAQUE);
}

/* netloc4 (RFC 7862 section 4.10) */
bool ulb_x_netloc4(struct ulb_xdr *x)
{
	uint32_t type;

	if (!U32(&type))
		return false;
	switch (type) {
	case 1: /* NL4_NAME */
	case 2: /* NL4_URL */
		return OPAQUE(ULB_MAX_OPAQUE);
	case 3: /* NL4_NETADDR */
		return ulb_x_netaddr4(x);
	default:
		return ulb_xdr_fail(x);
	}
}

/* lock_owner4 / open_owner4 / state_owner4: clientid, owner<NFS4_OPAQUE_LIMIT> */
bool ulb_x_lock_owner4(struct ulb_xdr *x)
{
	return SKIP(8) && OPAQUE(ULB_NFS4_OPAQUE_LIMIT);
}

/* state_protect_ops4: spo_must_enforce, spo_must_allow */
bool ulb_x_state_protect_ops4(struct ulb_xdr *x)
{
	return ulb_x_bitmap4(x) && ulb_x_bitmap4(x);
}

/* nfs_impl_id4 <1>: domain, name, date */
bool ulb_x_nfs_impl_id4_array(struct ulb_xdr *x)
{
	uint32_t n;

	if (!ulb_xdr_count(x, 1, 4, &n))
		return false;
	if (n == 1)
		return OPAQUE(ULB_MAX_OPAQUE) && OPAQUE(ULB_MAX_OPAQUE) &&
		       SKIP(ULB_NFS4_NFSTIME_LEN);
	return true;
}

/* channel_attrs4: six count4, ca_rdma_ird<1> (RFC 8881 section 18.36) */
bool ulb_x_channel_attrs4(struct ulb_xdr *x)
{
	uint32_t n;

	return SKIP(24) && ulb_xdr_count(x, 1, 4, &n) && SKIP((uint64_t)n * 4);
}

/* callback_sec_parms4<> (RFC 8881 section 18.36) */
static bool ulb_x_callback_sec_parms4_array(struct ulb_xdr *x)
{
	uint32_t n, i, flavor, ngids;

	if (!ulb_xdr_count(x, ULB_MAX_ARRAY, 4, &n))
		return false;
	for (i = 0; i < n; i++) {
		if (!U32(&flavor))
			return false;
		switch (flavor) {
		case ULB_AUTH_NONE:
			break;
		case ULB_AUTH_SYS:
			/* authsys_parms: stamp, machinename<255>, uid, gid, gids<16> */
			if (!SKIP(4) || !OPAQUE(255) || !SKIP(8) ||
			    !ulb_xdr_count(x, 16, 4, &ngids) || !SKIP((uint64_t)ngids * 4))
				return false;
			break;
		case ULB_RPCSEC_GSS:
			/* gss_cb_handles4: service, handle_from_server, handle_from_client */
			if (!SKIP(4) || !OPAQUE(ULB_MAX_OPAQUE) || !OPAQUE(ULB_MAX_OPAQUE))
				return false;
			break;
		default:
			return ulb_xdr_fail(x);
		}
	}
	return true;
}

/* createhow4 (RFC 8881 section 18.16) */
static bool ulb_x_createhow4(struct ulb_xdr *x)
{
	uint32_t mode;

	if (!U32(&mode))
		return false;
	switch (mode) {
	case 0: /* UNCHECKED4 */
	case 1: /* GUARDED4 */
		return ulb_x_fattr4(x);
	case 2: /* EXCLUSIVE4 */
		return SKIP(ULB_NFS4_VERIFIER_LEN);
	case 3: /* EXCLUSIVE4_1: cva_verf, cva_attrs */
		return SKIP(ULB_NFS4_VERIFIER_LEN) && ulb_x_fattr4(x);
	default:
		return ulb_xdr_fail(x);
	}
}

/* open_claim4 (RFC 8881 section 18.16) */
static bool ulb_x_open_claim4(struct ulb_xdr *x)
{
	uint32_t claim;

	if (!U32(&claim))
		return false;
	switch (claim) {
	case 0: /* CLAIM_NULL: file */
	case 3: /* CLAIM_DELEGATE_PREV: file_delegate_prev */
		return COMPONENT;
	case 1: /* CLAIM_PREVIOUS: delegate_type */
		return SKIP(4);
	case 2: /* CLAIM_DELEGATE_CUR: delegate_stateid, file */
		return STATEID && COMPONENT;
	case 4: /* CLAIM_FH */
	case 6: /* CLAIM_DELEG_PREV_FH */
		return true;
	case 5: /* CLAIM_DELEG_CUR_FH: oc_delegate_stateid */
		return STATEID;
	default:
		return ulb_xdr_fail(x);
	}
}

static bool ulb_args_open(struct ulb_xdr *x)
{
	uint32_t opentype;

	/* seqid, share_access, share_deny, owner */
	if (!SKIP(12) || !ulb_x_lock_owner4(x) || !U32(&opentype))
		return false;
	if (opentype == 1 && !ulb_x_createhow4(x)) /* OPEN4_CREATE */
		return false;
	if (opentype > 1)
		return ulb_xdr_fail(x);
	return ulb_x_open_claim4(x);
}

/* CREATE4args: objtype (createtype4), objname, createattrs */
static bool ulb_args_create(struct ulb_scan *s)
{
	struct ulb_xdr *x = &s->x;
	uint32_t type;

	if (!U32(&type))
		return false;
	switch (type) {
	case ULB_NF4LNK: /* linkdata: DDP-eligible (RFC 8267 section 4.1) */
		if (!ulb_scan_item(s, ULB_ITEM_SYMLINK_PATH, ULB_MAX_OPAQUE))
			return false;
		break;
	case ULB_NF4BLK:
	case ULB_NF4CHR: /* devdata: specdata4 */
		if (!SKIP(8))
			return false;
		break;
	default: /* NF4SOCK, NF4FIFO, NF4DIR and the rest: void */
		break;
	}
	return COMPONENT && ulb_x_fattr4(x);
}

static bool ulb_args_lock(struct ulb_xdr *x)
{
	bool new_lock_owner;

	/* locktype, reclaim, offset, length, locker4 */
	if (!SKIP(4) || !BOOL(NULL) || !SKIP(16) || !BOOL(&new_lock_owner))
		return false;
	if (new_lock_owner) /* open_seqid, open_stateid, lock_seqid, lock_owner */
		return SKIP(4 + ULB_NFS4_STATEID_LEN + 4) && ulb_x_lock_owner4(x);
	return SKIP(ULB_NFS4_STATEID_LEN + 4); /* lock_stateid, lock_seqid */
}

static bool ulb_args_exchange_id(struct ulb_xdr *x)
{
	uint32_t how, n;

	/* eia_clientowner (verifier, ownerid), eia_flags */
	if (!SKIP(ULB_NFS4_VERIFIER_LEN) || !OPAQUE(ULB_NFS4_OPAQUE_LIMIT) || !SKIP(4) ||
	    !U32(&how))
		return false;
	switch (how) {
	case 0: /* SP4_NONE */
		break;
	case 1: /* SP4_MACH_CRED */
		if (!ulb_x_state_protect_ops4(x))
			return false;
		break;
	case 2: /* SP4_SSV: ops, hash_algs<>, encr_algs<>, window, num_gss_handles */
	{
		int k;
		uint32_t i;

		if (!ulb_x_state_protect_ops4(x))
			return false;
		for (k = 0; k < 2; k++) {
			if (!ulb_xdr_count(x, ULB_MAX_ARRAY, 4, &n))
				return false;
			for (i = 0; i < n; i++)
				if (!OPAQUE(ULB_MAX_OPAQUE))
					return false;
		}
		if (!SKIP(8))
			return false;
		break;
	}
	default:
		return ulb_xdr_fail(x);
	}
	return ulb_x_nfs_impl_id4_array(x);
}

/* newoffset4 / newtime4 / newsize4-style optional: bool then @len bytes */
static bool ulb_x_optional(struct ulb_xdr *x, uint64_t len)
{
	bool present;

	return BOOL(&present) && (!present || SKIP(len));
}

static bool ulb_args_layoutreturn(struct ulb_xdr *x)
{
	uint32_t type;

	/* reclaim, layout_type, iomode, layoutreturn4 */
	if (!BOOL(NULL) || !SKIP(8) || !U32(&type))
		return false;
	if (type == 1) /* LAYOUTRETURN4_FILE: offset, length, stateid, lrf_body */
		return SKIP(16 + ULB_NFS4_STATEID_LEN) && OPAQUE(ULB_MAX_OPAQUE);
	if (type == 2 || type == 3) /* FSID, ALL */
		return true;
	return ulb_xdr_fail(x);
}

/* deleg_claim4 (RFC 8881 section 18.49) */
static bool ulb_args_want_delegation(struct ulb_xdr *x)
{
	uint32_t claim;

	if (!SKIP(4) || !U32(&claim))
		return false;
	switch (claim) {
	case 4: /* CLAIM_FH */
	case 6: /* CLAIM_DELEG_PREV_FH */
		return true;
	case 1: /* CLAIM_PREVIOUS: dc_delegate_type */
		return SKIP(4);
	default:
		return ulb_xdr_fail(x);
	}
}

static bool ulb_args_copy(struct ulb_xdr *x)
{
	uint32_t n, i;

	/* src, dst stateids; src_offset, dst_offset, count; consecutive, synchronous */
	if (!SKIP(2 * ULB_NFS4_STATEID_LEN + 24) || !BOOL(NULL) || !BOOL(NULL))
		return false;
	if (!ulb_xdr_count(x, ULB_MAX_ARRAY, 4, &n)) /* ca_source_server<> */
		return false;
	for (i = 0; i < n; i++)
		if (!ulb_x_netloc4(x))
			return false;
	return true;
}

/* Every operation but the everyday ones below: apart, so that those need
 * no stack frame of this size. */
static __attribute__((noinline)) bool ulb_skip_args_other(struct ulb_scan *s, uint32_t op)
{
	struct ulb_xdr *x = &s->x;
	struct ulb_call *c = s->c;
	uint32_t n;

	switch (op) {
	case ULB_OP_ACCESS:
		return SKIP(4);
	case ULB_OP_CLOSE: /* seqid, open_stateid */
		return SKIP(4 + ULB_NFS4_STATEID_LEN);
	case ULB_OP_COMMIT: /* offset, count */
		return SKIP(12);
	case ULB_OP_CREATE:
		return ulb_args_create(s);
	case ULB_OP_DELEGPURGE: /* clientid */
		return SKIP(8);
	case ULB_OP_DELEGRETURN:
		return STATEID;
	case ULB_OP_GETFH:
		return true;
	case ULB_OP_LINK: /* newname */
		return COMPONENT;
	case ULB_OP_LOCK:
		return ulb_args_lock(x);
	case ULB_OP_LOCKT: /* locktype, offset, length, owner */
		return SKIP(20) && ulb_x_lock_owner4(x);
	case ULB_OP_LOCKU: /* locktype, seqid, lock_stateid, offset, length */
		return SKIP(8 + ULB_NFS4_STATEID_LEN + 16);
	case ULB_OP_LOOKUP:
		return COMPONENT;
	case ULB_OP_LOOKUPP:
		return true;
	case ULB_OP_NVERIFY:
	case ULB_OP_VERIFY:
		return ulb_x_fattr4(x);
	case ULB_OP_OPEN:
		return ulb_args_open(x);
	case ULB_OP_OPENATTR: /* createdir */
		return BOOL(NULL);
	case ULB_OP_OPEN_CONFIRM: /* open_stateid, seqid */
		return SKIP(ULB_NFS4_STATEID_LEN + 4);
	case ULB_OP_OPEN_DOWNGRADE: /* open_stateid, seqid, share_access, share_deny */
		return SKIP(ULB_NFS4_STATEID_LEN + 12);
	case ULB_OP_PUTPUBFH:
	case ULB_OP_PUTROOTFH:
		return true;
	case ULB_OP_READDIR: /* cookie, cookieverf, dircount, maxcount, attr_request */
		return SKIP(8 + ULB_NFS4_VERIFIER_LEN + 8) && ulb_x_bitmap4(x);
	case ULB_OP_READLINK:
		ulb_scan_read_op(c, s->op_index, op, ULB_ITEM_READLINK_PATH, 0);
		return true;
	case ULB_OP_REMOVE: /* target */
		return COMPONENT;
	case ULB_OP_RENAME: /* oldname, newname */
		return COMPONENT && COMPONENT;
	case ULB_OP_RENEW: /* clientid */
		return SKIP(8);
	case ULB_OP_RESTOREFH:
	case ULB_OP_SAVEFH:
		return true;
	case ULB_OP_SECINFO: /* name */
		return COMPONENT;
	case ULB_OP_SETATTR: /* stateid, obj_attributes */
		return STATEID && ulb_x_fattr4(x);
	case ULB_OP_SETCLIENTID:
		/* client (verifier, id), callback (cb_program, cb_location), callback_ident */
		return SKIP(ULB_NFS4_VERIFIER_LEN) && OPAQUE(ULB_NFS4_OPAQUE_LIMIT) && SKIP(4) &&
		       ulb_x_netaddr4(x) && SKIP(4);
	case ULB_OP_SETCLIENTID_CONFIRM: /* clientid, setclientid_confirm */
		return SKIP(8 + ULB_NFS4_VERIFIER_LEN);
	case ULB_OP_RELEASE_LOCKOWNER:
		return ulb_x_lock_owner4(x);
	case ULB_OP_BACKCHANNEL_CTL: /* bca_cb_program, bca_sec_parms<> */
		return SKIP(4) && ulb_x_callback_sec_parms4_array(x);
	case ULB_OP_BIND_CONN_TO_SESSION: /* sessid, dir, use_conn_in_rdma_mode */
		return SKIP(ULB_NFS4_SESSIONID_LEN + 4) && BOOL(NULL);
	case ULB_OP_EXCHANGE_ID:
		return ulb_args_exchange_id(x);
	case ULB_OP_CREATE_SESSION:
		/* clientid, sequence, flags, fore, back, cb_program, sec_parms<> */
		return SKIP(16) && ulb_x_channel_attrs4(x) && ulb_x_channel_attrs4(x) && SKIP(4) &&
		       ulb_x_callback_sec_parms4_array(x);
	case ULB_OP_DESTROY_SESSION:
		return SKIP(ULB_NFS4_SESSIONID_LEN);
	case ULB_OP_FREE_STATEID:
		return STATEID;
	case ULB_OP_GET_DIR_DELEGATION:
		/* signal_deleg_avail, notification_types, child/dir attr delay,
		 * child/dir attributes */
		return BOOL(NULL) && ulb_x_bitmap4(x) && SKIP(2 * ULB_NFS4_NFSTIME_LEN) &&
		       ulb_x_bitmap4(x) && ulb_x_bitmap4(x);
	case ULB_OP_GETDEVICEINFO: /* device_id, layout_type, maxcount, notify_types */
		return SKIP(ULB_NFS4_DEVICEID_LEN + 8) && ulb_x_bitmap4(x);
	case ULB_OP_GETDEVICELIST: /* layout_type, maxdevices, cookie, cookieverf */
		return SKIP(16 + ULB_NFS4_VERIFIER_LEN);
	case ULB_OP_LAYOUTCOMMIT:
		/* offset, length, reclaim, stateid, last_write_offset, time_modify,
		 * layoutupdate (type, body) */
		return SKIP(16) && BOOL(NULL) && STATEID && ulb_x_optional(x, 8) &&
		       ulb_x_optional(x, ULB_NFS4_NFSTIME_LEN) && SKIP(4) && OPAQUE(ULB_MAX_OPAQUE);
	case ULB_OP_LAYOUTGET:
		/* signal_layout_avail, layout_type, iomode, offset, length, minlength,
		 * stateid, maxcount */
		return BOOL(NULL) && SKIP(8 + 24 + ULB_NFS4_STATEID_LEN + 4);
	case ULB_OP_LAYOUTRETURN:
		return ulb_args_layoutreturn(x);
	case ULB_OP_SECINFO_NO_NAME: /* secinfo_style4 */
		return SKIP(4);
	case ULB_OP_SET_SSV: /* ssv, digest */
		return OPAQUE(ULB_MAX_OPAQUE) && OPAQUE(ULB_MAX_OPAQUE);
	case ULB_OP_TEST_STATEID: /* stateids<> */
		return ulb_xdr_count(x, ULB_MAX_ARRAY, ULB_NFS4_STATEID_LEN, &n) &&
		       SKIP((uint64_t)n * ULB_NFS4_STATEID_LEN);
	case ULB_OP_WANT_DELEGATION:
		return ulb_args_want_delegation(x);
	case ULB_OP_DESTROY_CLIENTID:
		return SKIP(8);
	case ULB_OP_RECLAIM_COMPLETE: /* rca_one_fs */
		return BOOL(NULL);
	case ULB_OP_ALLOCATE:
	case ULB_OP_DEALLOCATE: /* stateid, offset, length */
		return SKIP(ULB_NFS4_STATEID_LEN + 16);
	case ULB_OP_COPY:
		return ulb_args_copy(x);
	case ULB_OP_COPY_NOTIFY: /* src_stateid, destination_server */
		return STATEID && ulb_x_netloc4(x);
	case ULB_OP_IO_ADVISE: /* stateid, offset, count, hints */
		return SKIP(ULB_NFS4_STATEID_LEN + 16) && ulb_x_bitmap4(x);
	case ULB_OP_LAYOUTERROR:
		/* offset, length, stateid, errors<> of (deviceid, status, opnum) */
		return SKIP(16 + ULB_NFS4_STATEID_LEN) &&
		       ulb_xdr_count(x, ULB_MAX_ARRAY, ULB_NFS4_DEVICEID_LEN + 8, &n) &&
		       SKIP((uint64_t)n * (ULB_NFS4_DEVICEID_LEN + 8));
	case ULB_OP_LAYOUTSTATS:
		/* offset, length, stateid, read, write (io_info4), deviceid, layoutupdate */
		return SKIP(16 + ULB_NFS4_STATEID_LEN + 32 + ULB_NFS4_DEVICEID_LEN + 4) &&
		       OPAQUE(ULB_MAX_OPAQUE);
	case ULB_OP_OFFLOAD_CANCEL:
	case ULB_OP_OFFLOAD_STATUS:
		return STATEID;
	case ULB_OP_SEEK: /* stateid, offset, what */
		return SKIP(ULB_NFS4_STATEID_LEN + 12);
	case ULB_OP_WRITE_SAME:
		/* stateid, stable, app_data_block4 (offset, block_size, block_count,
		 * reloff_blocknum, block_num, reloff_pattern, pattern) */
		return SKIP(ULB_NFS4_STATEID_LEN + 4 + 32 + 4 + 8) && OPAQUE(ULB_MAX_OPAQUE);
	case ULB_OP_CLONE: /* src, dst stateids, src_offset, dst_offset, count */
		return SKIP(2 * ULB_NFS4_STATEID_LEN + 24);
	case ULB_OP_GETXATTR:
	case ULB_OP_REMOVEXATTR: /* name */
		return COMPONENT;
	case ULB_OP_SETXATTR: /* option, name, value */
		return SKIP(4) && COMPONENT && OPAQUE(ULB_MAX_OPAQUE);
	case ULB_OP_LISTXATTRS: /* cookie, maxcount */
		return SKIP(12);
	default:
		return ulb_xdr_fail(x);
	}
}

/* The operations of nearly every COMPOUND - the Linux client's SEQUENCE,
 * PUTFH, READ, WRITE, GETATTR - then the rest. */
bool ulb_nfs4_skip_args(struct ulb_scan *s, uint32_t op)
{
	struct ulb_xdr *x = &s->x;
	struct ulb_call *c = s->c;
	uint8_t buf[ULB_XDR_TAKE_MAX];
	const uint8_t *h;

	switch (op) {
	case ULB_OP_SEQUENCE:
		/* sessionid, sequenceid, slotid, highest_slotid, cachethis: one take */
		h = ulb_xdr_take(x, ULB_NFS4_SESSIONID_LEN + 16, buf);
		if (!h)
			return false;
		if (ulb_xdr_load32(h + ULB_NFS4_SESSIONID_LEN + 12) > 1) /* a bool */
			return ulb_xdr_fail(x);
		if (s->op_index == 0) {
			memcpy(c->seq.sessionid, h, sizeof(c->seq.sessionid));
			c->seq.sequenceid = ulb_xdr_load32(h + ULB_NFS4_SESSIONID_LEN);
			c->seq.slotid = ulb_xdr_load32(h + ULB_NFS4_SESSIONID_LEN + 4);
			c->has_sequence = true;
		}
		return true;
	case ULB_OP_PUTFH:
		return FH;
	case ULB_OP_READ:
	case ULB_OP_READ_PLUS: /* stateid, offset, count: one take */
		h = ulb_xdr_take(x, ULB_NFS4_STATEID_LEN + 12, buf);
		if (!h)
			return false;
		ulb_scan_read_op(c, s->op_index, op,
				 op == ULB_OP_READ ? ULB_ITEM_READ_DATA : ULB_ITEM_READ_PLUS_DATA,
				 ulb_xdr_load32(h + ULB_NFS4_STATEID_LEN + 8));
		return true;
	case ULB_OP_WRITE: /* stateid, offset, stable, data */
		if (!SKIP(ULB_NFS4_STATEID_LEN + 12))
			return false;
		return ulb_scan_item(s, ULB_ITEM_WRITE_DATA, ULB_MAX_OPAQUE);
	case ULB_OP_GETATTR:
		return ulb_x_bitmap4(x);
	default:
		return ulb_skip_args_other(s, op);
	}
}
