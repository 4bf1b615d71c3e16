// SPDX-License-Identifier: MIT
/*
 * ulb_nfs4_res.c - skip the result of every NFSv4 operation that has no
 * DDP-eligible item, by its XDR definition (RFC 7530 section 16, RFC 8881
 * section 18, RFC 7862 section 15, RFC 8276 section 8). The status word has
 * been read; most results carry data only in their NFS4_OK arm.
 */
#include "ulb/ulb_priv.h"

#define SKIP(n) ulb_xdr_skip(x, (n))
#define U32(v) ulb_xdr_u32(x, (v))
#define BOOL(v) ulb_xdr_bool(x, (v))
#define OPAQUE(max) ulb_xdr_opaque(x, (max), NULL, NULL)
#define STATEID SKIP(ULB_NFS4_STATEID_LEN)
#define CINFO SKIP(ULB_NFS4_CHANGE_INFO_LEN)

/* nfsace4: type, flag, access_mask, who */
static bool ulb_x_nfsace4(struct ulb_xdr *x)
{
	return SKIP(12) && OPAQUE(ULB_MAX_OPAQUE);
}

/* open_delegation4 (RFC 8881 section 18.16) */
static bool ulb_x_open_delegation4(struct ulb_xdr *x)
{
	uint32_t type, u;

	if (!U32(&type))
		return false;
	switch (type) {
	case 0: /* OPEN_DELEGATE_NONE */
		return true;
	case 1: /* READ: stateid, recall, permissions */
		return STATEID && BOOL(NULL) && ulb_x_nfsace4(x);
	case 2: /* WRITE: stateid, recall, space_limit, permissions */
		if (!STATEID || !BOOL(NULL) || !U32(&u))
			return false;
		if (u != 1 && u != 2) /* NFS_LIMIT_SIZE, NFS_LIMIT_BLOCKS */
			return ulb_xdr_fail(x);
		return SKIP(8) && ulb_x_nfsace4(x);
	case 3: /* OPEN_DELEGATE_NONE_EXT: open_none_delegation4 */
		if (!U32(&u))
			return false;
		if (u == ULB_WND4_CONTENTION || u == ULB_WND4_RESOURCE)
			return BOOL(NULL);
		return true;
	default:
		return ulb_xdr_fail(x);
	}
}

/* LOCK4denied: offset, length, locktype, owner */
static bool ulb_x_lock4denied(struct ulb_xdr *x)
{
	return SKIP(20) && ulb_x_lock_owner4(x);
}

/* SECINFO4resok: secinfo4<> */
static bool ulb_x_secinfo4_array(struct ulb_xdr *x)
{
	uint32_t n, i, flavor;

	if (!ulb_xdr_count(x, ULB_MAX_ARRAY, 4, &n))
		return false;
	for (i = 0; i < n; i++) {
		if (!U32(&flavor))
			return false;
		/* RPCSEC_GSS: rpcsec_gss_info (oid, qop, service) */
		if (flavor == ULB_RPCSEC_GSS && (!OPAQUE(ULB_MAX_OPAQUE) || !SKIP(8)))
			return false;
	}
	return true;
}

/* READDIR4resok: cookieverf, dirlist4 (entries linked by value_follows, eof) */
static bool ulb_x_readdir_res(struct ulb_xdr *x)
{
	bool more;

	if (!SKIP(ULB_NFS4_VERIFIER_LEN) || !BOOL(&more))
		return false;
	/* each entry consumes at least 16 bytes, so this loop ends */
	while (more) {
		if (!SKIP(8) || !OPAQUE(ULB_MAX_OPAQUE) || !ulb_x_fattr4(x) || !BOOL(&more))
			return false;
	}
	return BOOL(NULL);
}

static bool ulb_x_exchange_id_res(struct ulb_xdr *x)
{
	uint32_t how, n, i;

	/* clientid, sequenceid, flags, state_protect */
	if (!SKIP(16) || !U32(&how))
		return false;
	switch (how) {
	case 0:
		break;
	case 1:
		if (!ulb_x_state_protect_ops4(x))
			return false;
		break;
	case 2: /* ssv_prot_info4: ops, hash_alg, encr_alg, ssv_len, window, handles<> */
		if (!ulb_x_state_protect_ops4(x) || !SKIP(16) ||
		    !ulb_xdr_count(x, ULB_MAX_ARRAY, 4, &n))
			return false;
		for (i = 0; i < n; i++)
			if (!OPAQUE(ULB_MAX_OPAQUE))
				return false;
		break;
	default:
		return ulb_xdr_fail(x);
	}
	/* server_owner (minor_id, major_id), server_scope, server_impl_id<1> */
	return SKIP(8) && OPAQUE(ULB_NFS4_OPAQUE_LIMIT) && OPAQUE(ULB_NFS4_OPAQUE_LIMIT) &&
	       ulb_x_nfs_impl_id4_array(x);
}

/* write_response4: callback_id<1>, count, committed, writeverf */
static bool ulb_x_write_response4(struct ulb_xdr *x)
{
	uint32_t n;

	return ulb_xdr_count(x, 1, ULB_NFS4_STATEID_LEN, &n) &&
	       SKIP((uint64_t)n * ULB_NFS4_STATEID_LEN) && SKIP(12 + ULB_NFS4_VERIFIER_LEN);
}

static bool ulb_x_layoutget_res(struct ulb_xdr *x)
{
	uint32_t n, i;

	/* return_on_close, stateid, layout<> (offset, length, iomode, type, body) */
	if (!BOOL(NULL) || !STATEID || !ulb_xdr_count(x, ULB_MAX_ARRAY, 28, &n))
		return false;
	for (i = 0; i < n; i++)
		if (!SKIP(24) || !OPAQUE(ULB_MAX_OPAQUE))
			return false;
	return true;
}

static bool ulb_x_ok_arm(struct ulb_xdr *x, uint32_t op)
{
	uint32_t n, i, u;

	switch (op) {
	case ULB_OP_ACCESS: /* supported, access */
		return SKIP(8);
	case ULB_OP_CLOSE:
	case ULB_OP_LOCK:
	case ULB_OP_LOCKU:
	case ULB_OP_OPEN_CONFIRM:
	case ULB_OP_OPEN_DOWNGRADE:
		return STATEID;
	case ULB_OP_COMMIT:
		return SKIP(ULB_NFS4_VERIFIER_LEN);
	case ULB_OP_CREATE: /* cinfo, attrset */
		return CINFO && ulb_x_bitmap4(x);
	case ULB_OP_GETATTR:
		return ulb_x_fattr4(x);
	case ULB_OP_GETFH:
		return OPAQUE(ULB_NFS4_FHSIZE);
	case ULB_OP_LINK:
	case ULB_OP_REMOVE:
	case ULB_OP_SETXATTR:
	case ULB_OP_REMOVEXATTR:
		return CINFO;
	case ULB_OP_OPEN: /* stateid, cinfo, rflags, attrset, delegation */
		return STATEID && CINFO && SKIP(4) && ulb_x_bitmap4(x) && ulb_x_open_delegation4(x);
	case ULB_OP_READDIR:
		return ulb_x_readdir_res(x);
	case ULB_OP_RENAME: /* source_cinfo, target_cinfo */
		return SKIP(2 * ULB_NFS4_CHANGE_INFO_LEN);
	case ULB_OP_SECINFO:
	case ULB_OP_SECINFO_NO_NAME:
		return ulb_x_secinfo4_array(x);
	case ULB_OP_SETCLIENTID: /* clientid, setclientid_confirm */
		return SKIP(8 + ULB_NFS4_VERIFIER_LEN);
	case ULB_OP_WRITE: /* count, committed, writeverf */
		return SKIP(8 + ULB_NFS4_VERIFIER_LEN);
	case ULB_OP_BIND_CONN_TO_SESSION: /* sessid, dir, use_conn_in_rdma_mode */
		return SKIP(ULB_NFS4_SESSIONID_LEN + 4) && BOOL(NULL);
	case ULB_OP_EXCHANGE_ID:
		return ulb_x_exchange_id_res(x);
	case ULB_OP_CREATE_SESSION: /* sessionid, sequence, flags, fore, back */
		return SKIP(ULB_NFS4_SESSIONID_LEN + 8) && ulb_x_channel_attrs4(x) &&
		       ulb_x_channel_attrs4(x);
	case ULB_OP_GET_DIR_DELEGATION: /* GET_DIR_DELEGATION4res_non_fatal */
		if (!U32(&u))
			return false;
		if (u == 0) /* GDD4_OK: cookieverf, stateid, three bitmaps */
			return SKIP(ULB_NFS4_VERIFIER_LEN + ULB_NFS4_STATEID_LEN) &&
			       ulb_x_bitmap4(x) && ulb_x_bitmap4(x) && ulb_x_bitmap4(x);
		if (u == 1) /* GDD4_UNAVAIL: will_signal_deleg_avail */
			return BOOL(NULL);
		return ulb_xdr_fail(x);
	case ULB_OP_GETDEVICEINFO: /* device_addr (type, body), notification */
		return SKIP(4) && OPAQUE(ULB_MAX_OPAQUE) && ulb_x_bitmap4(x);
	case ULB_OP_GETDEVICELIST: /* cookie, cookieverf, deviceid_list<>, eof */
		return SKIP(8 + ULB_NFS4_VERIFIER_LEN) &&
		       ulb_xdr_count(x, ULB_MAX_ARRAY, ULB_NFS4_DEVICEID_LEN, &n) &&
		       SKIP((uint64_t)n * ULB_NFS4_DEVICEID_LEN) && BOOL(NULL);
	case ULB_OP_LAYOUTGET:
		return ulb_x_layoutget_res(x);
	case ULB_OP_LAYOUTRETURN: /* layoutreturn_stateid: present, stateid */
	{
		bool present;

		return BOOL(&present) && (!present || STATEID);
	}
	case ULB_OP_SEQUENCE: /* sessionid, sequenceid, slotid, highest, target_highest, flags */
		return SKIP(ULB_NFS4_SESSIONID_LEN + 20);
	case ULB_OP_SET_SSV:
	case ULB_OP_GETXATTR:
		return OPAQUE(ULB_MAX_OPAQUE);
	case ULB_OP_TEST_STATEID: /* status_codes<> */
		return ulb_xdr_count(x, ULB_MAX_ARRAY, 4, &n) && SKIP((uint64_t)n * 4);
	case ULB_OP_WANT_DELEGATION:
		return ulb_x_open_delegation4(x);
	case ULB_OP_COPY: /* response, requirements (consecutive, synchronous) */
		return ulb_x_write_response4(x) && BOOL(NULL) && BOOL(NULL);
	case ULB_OP_COPY_NOTIFY: /* lease_time, stateid, source_server<> */
		if (!SKIP(ULB_NFS4_NFSTIME_LEN) || !STATEID ||
		    !ulb_xdr_count(x, ULB_MAX_ARRAY, 4, &n))
			return false;
		for (i = 0; i < n; i++)
			if (!ulb_x_netloc4(x))
				return false;
		return true;
	case ULB_OP_IO_ADVISE: /* hints */
		return ulb_x_bitmap4(x);
	case ULB_OP_OFFLOAD_STATUS: /* count, complete<1> */
		return SKIP(8) && ulb_xdr_count(x, 1, 4, &n) && SKIP((uint64_t)n * 4);
	case ULB_OP_SEEK: /* eof, offset */
		return BOOL(NULL) && SKIP(8);
	case ULB_OP_WRITE_SAME:
		return ulb_x_write_response4(x);
	case ULB_OP_LISTXATTRS: /* cookie, names<>, eof */
		if (!SKIP(8) || !ulb_xdr_count(x, ULB_MAX_ARRAY, 4, &n))
			return false;
		for (i = 0; i < n; i++)
			if (!OPAQUE(ULB_MAX_OPAQUE))
				return false;
		return BOOL(NULL);
	default:
		/* status-only results */
		return true;
	}
}

bool ulb_nfs4_skip_res(struct ulb_xdr *x, uint32_t op, uint32_t status)
{
	/* Result arms that exist beside NFS4_OK */
	switch (op) {
	case ULB_OP_SETATTR: /* attrsset follows every status */
		return ulb_x_bitmap4(x);
	case ULB_OP_LAYOUTCOMMIT: /* newsize4: sizechanged, size */
		if (status == ULB_NFS4_OK) {
			bool present;

			return BOOL(&present) && (!present || SKIP(8));
		}
		break;
	case ULB_OP_LOCK:
	case ULB_OP_LOCKT:
		if (status == ULB_NFS4ERR_DENIED)
			return ulb_x_lock4denied(x);
		if (op == ULB_OP_LOCKT)
			return true;
		break;
	case ULB_OP_SETCLIENTID:
		if (status == ULB_NFS4ERR_CLID_INUSE)
			return ulb_x_netaddr4(x);
		break;
	case ULB_OP_GETDEVICEINFO:
		if (status == ULB_NFS4ERR_TOOSMALL) /* mincount */
			return SKIP(4);
		break;
	case ULB_OP_LAYOUTGET:
		if (status == ULB_NFS4ERR_LAYOUTTRYLATER) /* will_signal_layout_avail */
			return BOOL(NULL);
		break;
	case ULB_OP_COPY:
		if (status == ULB_NFS4ERR_OFFLOAD_NO_REQS) /* requirements */
			return BOOL(NULL) && BOOL(NULL);
		break;
	default:
		break;
	}
	if (status != ULB_NFS4_OK)
		return true;
	return ulb_x_ok_arm(x, op);
}
