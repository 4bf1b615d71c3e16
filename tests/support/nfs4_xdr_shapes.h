// SPDX-License-Identifier: MIT
/*
 * nfs4_xdr_shapes.h - encoders for the shared NFSv4 XDR types (RFC 8881
 * section 3, RFC 7862 section 4) used by the test builder; internal to
 * tests/support.
 */
#pragma once

#include "support/nfs_xdr_builder.h"

namespace nfsxdr
{
/* ---- NFSv4 shapes ---- */

static inline void stateid4(Xdr &x, uint32_t seq = 1)
{
	x.u32(seq);
	x.fixed_fill(12, 0xab);
}
static inline void verifier4(Xdr &x)
{
	x.fixed_fill(8, 0x5a);
}
static inline void nfs_fh4(Xdr &x)
{
	x.opaque(pattern(28, 0x10));
}
static inline void component4(Xdr &x, const std::string &s = "name")
{
	x.string(s);
}
static inline void bitmap4(Xdr &x, uint32_t words = 2)
{
	x.u32(words);
	for (uint32_t i = 0; i < words; i++)
		x.u32(0x00100012u + i);
}
static inline void fattr4(Xdr &x)
{
	bitmap4(x, 2);
	x.opaque(pattern(36, 0x20)); /* attrlist4 */
}
static inline void nfstime4(Xdr &x)
{
	x.i64(1700000000);
	x.u32(5000);
}
static inline void change_info4(Xdr &x)
{
	x.boolean(true);
	x.u64(41);
	x.u64(42);
}
static inline void lock_owner4(Xdr &x)
{
	x.u64(0xc11e);
	x.opaque(pattern(20, 0x30));
}
static inline void netaddr4(Xdr &x)
{
	x.string("tcp");
	x.string("192.0.2.1.8.1");
}
static inline void sessionid4(Xdr &x, const Sessionid &s)
{
	x.fixed(Bytes(s.b, s.b + 16));
}
static inline void deviceid4(Xdr &x)
{
	x.fixed_fill(16, 0xde);
}
static inline void state_protect_ops4(Xdr &x)
{
	bitmap4(x, 1);
	bitmap4(x, 3);
}
static inline void nfs_impl_id4_list(Xdr &x)
{
	x.u32(1);
	x.string("example.org");
	x.string("test-impl");
	nfstime4(x);
}
static inline void channel_attrs4(Xdr &x, bool ird)
{
	x.u32(0);	/* headerpadsize */
	x.u32(1049620); /* maxrequestsize */
	x.u32(1049480); /* maxresponsesize */
	x.u32(7584);	/* maxresponsesize_cached */
	x.u32(16);	/* maxoperations */
	x.u32(64);	/* maxrequests */
	x.u32(ird ? 1 : 0);
	if (ird)
		x.u32(16);
}
static inline void callback_sec_parms4_list(Xdr &x)
{
	x.u32(3);
	x.u32(AUTH_NONE);
	x.u32(AUTH_SYS); /* authsys_parms */
	x.u32(7);
	x.string("host");
	x.u32(0);
	x.u32(0);
	x.u32(1);
	x.u32(0);
	x.u32(RPCSEC_GSS); /* gss_cb_handles4 */
	x.u32(1);
	x.opaque(pattern(8, 1));
	x.opaque(pattern(9, 2));
}
static inline void netloc4(Xdr &x, int variant)
{
	switch (variant % 3) {
	case 0:
		x.u32(1); /* NL4_NAME */
		x.string("server.example");
		break;
	case 1:
		x.u32(2); /* NL4_URL */
		x.string("nfs://server/x");
		break;
	default:
		x.u32(3); /* NL4_NETADDR */
		netaddr4(x);
		break;
	}
}
static inline void nfsace4(Xdr &x)
{
	x.u32(0);
	x.u32(0);
	x.u32(0x1f);
	x.string("OWNER@");
}
static inline void open_delegation4(Xdr &x, int variant)
{
	switch (variant % 6) {
	case 0:
		x.u32(0); /* NONE */
		break;
	case 1:
		x.u32(1); /* READ */
		stateid4(x);
		x.boolean(false);
		nfsace4(x);
		break;
	case 2:
		x.u32(2); /* WRITE */
		stateid4(x);
		x.boolean(true);
		x.u32(2); /* NFS_LIMIT_BLOCKS: num_blocks, bytes_per_block */
		x.u32(10);
		x.u32(4096);
		nfsace4(x);
		break;
	case 3:
		x.u32(3); /* NONE_EXT */
		x.u32(1); /* WND4_CONTENTION: ond_server_will_push_deleg */
		x.boolean(true);
		break;
	case 4:
		x.u32(3); /* NONE_EXT */
		x.u32(2); /* WND4_RESOURCE: ond_server_will_signal_avail */
		x.boolean(false);
		break;
	default:
		x.u32(3); /* NONE_EXT */
		x.u32(7); /* WND4_CANCELLED: void */
		break;
	}
}
static inline void write_response4(Xdr &x)
{
	x.u32(1); /* wr_callback_id<1> */
	stateid4(x);
	x.u64(4096);
	x.u32(2); /* FILE_SYNC4 */
	verifier4(x);
}

} // namespace nfsxdr
