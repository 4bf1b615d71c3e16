// SPDX-License-Identifier: MIT
/*
 * nfs4_xdr_samples.cc - sample arguments and NFS4_OK results for every NFSv4
 * operation 3..75, encoded from the XDR of RFC 7530 section 16, RFC 8881
 * section 18, RFC 7862 section 15 and RFC 8276 section 8. Variants pick
 * different union arms.
 */
#include "support/nfs4_xdr_shapes.h"

namespace nfsxdr
{

void Compound::op_sample(uint32_t op, int v)
{
	Sessionid sid;

	for (int i = 0; i < 16; i++)
		sid.b[i] = uint8_t(0xa0 + i);
	switch (op) {
	case PUTFH:
		op_putfh(pattern(32, 1));
		return;
	case LOOKUP:
		op_lookup("file");
		return;
	case READ:
		op_read(4096, 8192);
		return;
	case READ_PLUS:
		op_read_plus(0, 65536);
		return;
	case READLINK:
		op_readlink();
		return;
	case WRITE:
		op_write(0, pattern(100 + v, 5));
		return;
	case SEQUENCE:
		op_sequence(sid, 9, 2);
		return;
	case GETATTR:
		op_getattr();
		return;
	default:
		break;
	}
	x.u32(op);
	switch (op) {
	case ACCESS:
		x.u32(0x3f);
		break;
	case CLOSE:
		x.u32(1);
		stateid4(x);
		break;
	case COMMIT:
		x.u64(0);
		x.u32(0);
		break;
	case CREATE:
		switch (v % 4) {
		case 0:
			x.u32(5); /* NF4LNK */
			items.push_back(x.item(pattern(13, 1)));
			break;
		case 1:
			x.u32(3); /* NF4BLK: specdata4 */
			x.u32(8);
			x.u32(1);
			break;
		case 2:
			x.u32(2); /* NF4DIR */
			break;
		default:
			x.u32(7); /* NF4FIFO */
			break;
		}
		component4(x, "obj");
		fattr4(x);
		break;
	case DELEGPURGE:
	case RENEW:
	case DESTROY_CLIENTID:
		x.u64(0x1122334455667788ull);
		break;
	case DELEGRETURN:
	case FREE_STATEID:
	case OFFLOAD_CANCEL:
	case OFFLOAD_STATUS:
		stateid4(x);
		break;
	case GETFH:
	case LOOKUPP:
	case PUTPUBFH:
	case PUTROOTFH:
	case RESTOREFH:
	case SAVEFH:
		break;
	case LINK:
	case REMOVE:
	case SECINFO:
	case GETXATTR:
	case REMOVEXATTR:
		component4(x, "target");
		break;
	case LOCK:
		x.u32(2); /* WRITE_LT */
		x.boolean(false);
		x.u64(0);
		x.u64(~0ull);
		if (v % 2 == 0) {
			x.boolean(true); /* open_to_lock_owner4 */
			x.u32(1);
			stateid4(x);
			x.u32(0);
			lock_owner4(x);
		} else {
			x.boolean(false); /* exist_lock_owner4 */
			stateid4(x);
			x.u32(3);
		}
		break;
	case LOCKT:
		x.u32(1);
		x.u64(0);
		x.u64(100);
		lock_owner4(x);
		break;
	case LOCKU:
		x.u32(1);
		x.u32(4);
		stateid4(x);
		x.u64(0);
		x.u64(100);
		break;
	case NVERIFY:
	case VERIFY:
		fattr4(x);
		break;
	case OPEN:
		x.u32(1);	/* seqid */
		x.u32(3);	/* share_access */
		x.u32(0);	/* share_deny */
		lock_owner4(x); /* open_owner4 has the same shape */
		if (v % 2 == 0) {
			x.u32(1);	  /* OPEN4_CREATE */
			x.u32(v % 8 / 2); /* createmode4 0..3 */
			switch (v % 8 / 2) {
			case 0:
			case 1:
				fattr4(x);
				break;
			case 2:
				verifier4(x);
				break;
			default:
				verifier4(x);
				fattr4(x);
				break;
			}
		} else {
			x.u32(0); /* OPEN4_NOCREATE */
		}
		x.u32(uint32_t(v % 7)); /* open_claim_type4 */
		switch (v % 7) {
		case 0:
		case 3:
			component4(x, "f");
			break;
		case 1:
			x.u32(1);
			break;
		case 2:
			stateid4(x);
			component4(x, "f");
			break;
		case 5:
			stateid4(x);
			break;
		default:
			break;
		}
		break;
	case OPENATTR:
		x.boolean(true);
		break;
	case OPEN_CONFIRM:
		stateid4(x);
		x.u32(2);
		break;
	case OPEN_DOWNGRADE:
		stateid4(x);
		x.u32(2);
		x.u32(1);
		x.u32(0);
		break;
	case READDIR:
		x.u64(0);
		verifier4(x);
		x.u32(4096);
		x.u32(32768);
		bitmap4(x, 2);
		break;
	case RENAME:
		component4(x, "old");
		component4(x, "new");
		break;
	case SETATTR:
		stateid4(x);
		fattr4(x);
		break;
	case SETCLIENTID:
		verifier4(x);
		x.opaque(pattern(40, 7));
		x.u32(0x40000000);
		netaddr4(x);
		x.u32(1);
		break;
	case SETCLIENTID_CONFIRM:
		x.u64(5);
		verifier4(x);
		break;
	case RELEASE_LOCKOWNER:
		lock_owner4(x);
		break;
	case BACKCHANNEL_CTL:
		x.u32(0x40000000);
		callback_sec_parms4_list(x);
		break;
	case BIND_CONN_TO_SESSION:
		sessionid4(x, sid);
		x.u32(3); /* CDFC4_FORE_OR_BOTH */
		x.boolean(true);
		break;
	case EXCHANGE_ID:
		verifier4(x);
		x.opaque(pattern(24, 9)); /* co_ownerid */
		x.u32(0x101);
		x.u32(uint32_t(v % 3)); /* state_protect_how4 */
		if (v % 3 == 1) {
			state_protect_ops4(x);
		} else if (v % 3 == 2) {
			state_protect_ops4(x);
			x.u32(1); /* ssp_hash_algs<> */
			x.opaque(pattern(9, 1));
			x.u32(2); /* ssp_encr_algs<> */
			x.opaque(pattern(9, 2));
			x.opaque(pattern(11, 3));
			x.u32(16); /* window */
			x.u32(2);  /* num_gss_handles */
		}
		nfs_impl_id4_list(x);
		break;
	case CREATE_SESSION:
		x.u64(0x77);
		x.u32(1);
		x.u32(3);
		channel_attrs4(x, false);
		channel_attrs4(x, true);
		x.u32(0x40000000);
		callback_sec_parms4_list(x);
		break;
	case DESTROY_SESSION:
		sessionid4(x, sid);
		break;
	case GET_DIR_DELEGATION:
		x.boolean(false);
		bitmap4(x, 1);
		nfstime4(x);
		nfstime4(x);
		bitmap4(x, 2);
		bitmap4(x, 2);
		break;
	case GETDEVICEINFO:
		deviceid4(x);
		x.u32(1); /* LAYOUT4_NFSV4_1_FILES */
		x.u32(4096);
		bitmap4(x, 1);
		break;
	case GETDEVICELIST:
		x.u32(1);
		x.u32(16);
		x.u64(0);
		verifier4(x);
		break;
	case LAYOUTCOMMIT:
		x.u64(0);
		x.u64(8192);
		x.boolean(false);
		stateid4(x);
		x.boolean(true); /* newoffset4 */
		x.u64(8191);
		x.boolean(v % 2 == 0); /* newtime4 */
		if (v % 2 == 0)
			nfstime4(x);
		x.u32(1); /* layoutupdate4: type, body */
		x.opaque(pattern(5, 1));
		break;
	case LAYOUTGET:
		x.boolean(false);
		x.u32(1);
		x.u32(1); /* LAYOUTIOMODE4_READ */
		x.u64(0);
		x.u64(~0ull);
		x.u64(4096);
		stateid4(x);
		x.u32(4096);
		break;
	case LAYOUTRETURN:
		x.boolean(false);
		x.u32(1);
		x.u32(3); /* LAYOUTIOMODE4_ANY */
		if (v % 2 == 0) {
			x.u32(1); /* LAYOUTRETURN4_FILE */
			x.u64(0);
			x.u64(~0ull);
			stateid4(x);
			x.opaque(pattern(6, 2));
		} else {
			x.u32(3); /* LAYOUTRETURN4_ALL */
		}
		break;
	case SECINFO_NO_NAME:
		x.u32(1); /* SECINFO_STYLE4_PARENT */
		break;
	case SET_SSV:
		x.opaque(pattern(32, 4));
		x.opaque(pattern(20, 5));
		break;
	case TEST_STATEID:
		x.u32(3);
		stateid4(x, 1);
		stateid4(x, 2);
		stateid4(x, 3);
		break;
	case WANT_DELEGATION:
		x.u32(1); /* OPEN4_SHARE_ACCESS_WANT_READ_DELEG-ish */
		if (v % 2 == 0) {
			x.u32(4); /* CLAIM_FH */
		} else {
			x.u32(1); /* CLAIM_PREVIOUS */
			x.u32(1);
		}
		break;
	case RECLAIM_COMPLETE:
		x.boolean(false);
		break;
	case ALLOCATE:
	case DEALLOCATE:
		stateid4(x);
		x.u64(0);
		x.u64(1 << 20);
		break;
	case COPY:
		stateid4(x, 1);
		stateid4(x, 2);
		x.u64(0);
		x.u64(0);
		x.u64(1 << 20);
		x.boolean(true);
		x.boolean(false);
		x.u32(2); /* ca_source_server<> */
		netloc4(x, v);
		netloc4(x, v + 1);
		break;
	case COPY_NOTIFY:
		stateid4(x);
		netloc4(x, v + 2);
		break;
	case IO_ADVISE:
		stateid4(x);
		x.u64(0);
		x.u64(4096);
		bitmap4(x, 1);
		break;
	case LAYOUTERROR:
		x.u64(0);
		x.u64(4096);
		stateid4(x);
		x.u32(2); /* device_error4<> */
		for (int i = 0; i < 2; i++) {
			deviceid4(x);
			x.u32(10005);
			x.u32(READ);
		}
		break;
	case LAYOUTSTATS:
		x.u64(0);
		x.u64(4096);
		stateid4(x);
		x.u64(1); /* io_info4 read */
		x.u64(4096);
		x.u64(2); /* io_info4 write */
		x.u64(8192);
		deviceid4(x);
		x.u32(1); /* layoutupdate4 */
		x.opaque(pattern(3, 3));
		break;
	case SEEK:
		stateid4(x);
		x.u64(0);
		x.u32(1); /* NFS4_CONTENT_HOLE */
		break;
	case WRITE_SAME:
		stateid4(x);
		x.u32(0);		  /* UNSTABLE4 */
		x.u64(0);		  /* adb_offset */
		x.u64(512);		  /* adb_block_size */
		x.u64(8);		  /* adb_block_count */
		x.u64(0);		  /* adb_reloff_blocknum */
		x.u32(0);		  /* adb_block_num */
		x.u64(0);		  /* adb_reloff_pattern */
		x.opaque(pattern(16, 6)); /* adb_pattern */
		break;
	case CLONE:
		stateid4(x, 1);
		stateid4(x, 2);
		x.u64(0);
		x.u64(4096);
		x.u64(4096);
		break;
	case SETXATTR:
		x.u32(0); /* SETXATTR4_EITHER */
		component4(x, "user.k");
		x.opaque(pattern(17, 8));
		break;
	case LISTXATTRS:
		x.u64(0);
		x.u32(4096);
		break;
	default:
		break;
	}
}

void CompoundRes::res_sample(uint32_t op, int v)
{
	Sessionid sid;

	for (int i = 0; i < 16; i++)
		sid.b[i] = uint8_t(i);
	if (op == SEQUENCE) {
		res_sequence(sid, 1, 0);
		return;
	}
	x.u32(op);
	x.u32(0); /* NFS4_OK */
	switch (op) {
	case ACCESS:
		x.u32(0x3f);
		x.u32(0x1f);
		break;
	case CLOSE:
	case LOCK:
	case LOCKU:
	case OPEN_CONFIRM:
	case OPEN_DOWNGRADE:
		stateid4(x);
		break;
	case COMMIT:
		verifier4(x);
		break;
	case CREATE:
		change_info4(x);
		bitmap4(x, 2);
		break;
	case GETATTR:
		fattr4(x);
		break;
	case GETFH:
		nfs_fh4(x);
		break;
	case LINK:
	case REMOVE:
	case SETXATTR:
	case REMOVEXATTR:
		change_info4(x);
		break;
	case OPEN:
		stateid4(x);
		change_info4(x);
		x.u32(4); /* rflags */
		bitmap4(x, 1);
		open_delegation4(x, v);
		break;
	case READDIR:
		verifier4(x);
		for (int i = 0; i < 3; i++) { /* entry4 list */
			x.boolean(true);
			x.u64(uint64_t(i + 3));
			component4(x, "entry" + std::to_string(i));
			fattr4(x);
		}
		x.boolean(false);
		x.boolean(true); /* eof */
		break;
	case RENAME:
		change_info4(x);
		change_info4(x);
		break;
	case SECINFO:
	case SECINFO_NO_NAME:
		x.u32(2); /* secinfo4<> */
		x.u32(RPCSEC_GSS);
		x.opaque(pattern(11, 1)); /* oid */
		x.u32(0);		  /* qop */
		x.u32(1);		  /* RPC_GSS_SVC_NONE */
		x.u32(AUTH_SYS);
		break;
	case SETATTR:
		bitmap4(x, 2);
		break;
	case SETCLIENTID:
		x.u64(9);
		verifier4(x);
		break;
	case WRITE:
		x.u32(4096);
		x.u32(2);
		verifier4(x);
		break;
	case BIND_CONN_TO_SESSION:
		sessionid4(x, sid);
		x.u32(1);
		x.boolean(false);
		break;
	case EXCHANGE_ID:
		x.u64(0x99);
		x.u32(1);
		x.u32(0x10001);
		x.u32(uint32_t(v % 3)); /* state_protect4_r */
		if (v % 3 == 1) {
			state_protect_ops4(x);
		} else if (v % 3 == 2) {
			state_protect_ops4(x);
			x.u32(1);  /* hash_alg */
			x.u32(2);  /* encr_alg */
			x.u32(32); /* ssv_len */
			x.u32(16); /* window */
			x.u32(2);  /* handles<> */
			x.opaque(pattern(4, 1));
			x.opaque(pattern(5, 2));
		}
		x.u64(7);		  /* so_minor_id */
		x.opaque(pattern(10, 3)); /* so_major_id */
		x.opaque(pattern(6, 4));  /* server_scope */
		nfs_impl_id4_list(x);
		break;
	case CREATE_SESSION:
		sessionid4(x, sid);
		x.u32(1);
		x.u32(0);
		channel_attrs4(x, true);
		channel_attrs4(x, false);
		break;
	case GET_DIR_DELEGATION:
		if (v % 2 == 0) {
			x.u32(0); /* GDD4_OK */
			verifier4(x);
			stateid4(x);
			bitmap4(x, 1);
			bitmap4(x, 2);
			bitmap4(x, 1);
		} else {
			x.u32(1); /* GDD4_UNAVAIL */
			x.boolean(true);
		}
		break;
	case GETDEVICEINFO:
		x.u32(1);
		x.opaque(pattern(40, 5)); /* da_addr_body */
		bitmap4(x, 1);
		break;
	case GETDEVICELIST:
		x.u64(1);
		verifier4(x);
		x.u32(2);
		deviceid4(x);
		deviceid4(x);
		x.boolean(true);
		break;
	case LAYOUTCOMMIT:
		x.boolean(true);
		x.u64(8192);
		break;
	case LAYOUTGET:
		x.boolean(false);
		stateid4(x);
		x.u32(1); /* layout4<> */
		x.u64(0);
		x.u64(~0ull);
		x.u32(1);
		x.u32(1); /* layout_content4: type, body */
		x.opaque(pattern(30, 6));
		break;
	case LAYOUTRETURN:
		x.boolean(true);
		stateid4(x);
		break;
	case SET_SSV:
		x.opaque(pattern(20, 7));
		break;
	case TEST_STATEID:
		x.u32(2);
		x.u32(0);
		x.u32(10025);
		break;
	case WANT_DELEGATION:
		open_delegation4(x, v + 1);
		break;
	case COPY:
		write_response4(x);
		x.boolean(true);
		x.boolean(false);
		break;
	case COPY_NOTIFY:
		nfstime4(x);
		stateid4(x);
		x.u32(1);
		netloc4(x, v);
		break;
	case IO_ADVISE:
		bitmap4(x, 1);
		break;
	case OFFLOAD_STATUS:
		x.u64(4096);
		x.u32(1);
		x.u32(0);
		break;
	case SEEK:
		x.boolean(false);
		x.u64(8192);
		break;
	case WRITE_SAME:
		write_response4(x);
		break;
	case GETXATTR:
		x.opaque(pattern(9, 9));
		break;
	case LISTXATTRS:
		x.u64(2);
		x.u32(2);
		component4(x, "user.a");
		component4(x, "user.bb");
		x.boolean(true);
		break;
	default:
		/* status-only results */
		break;
	}
}

} // namespace nfsxdr
