// SPDX-License-Identifier: MIT
/*
 * rr_onc.h - ONC RPC v2 messages for tests (RFC 5531 section 9): build a Call,
 * parse a Reply. Independent of src/; shares nothing with the server.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/rr_wire.h"

namespace rrtest {

enum : uint32_t {
	RPC_CALL = 0,
	RPC_REPLY = 1,
	RPC_MSG_ACCEPTED = 0,
	RPC_MSG_DENIED = 1,
	RPC_SUCCESS = 0,
	RPC_PROG_UNAVAIL = 1,
	RPC_PROG_MISMATCH = 2,
	RPC_PROC_UNAVAIL = 3,
	RPC_GARBAGE_ARGS = 4,
	RPC_SYSTEM_ERR = 5,
	AUTH_NONE = 0,
	AUTH_SYS = 1,
};

/* The call header up to (not including) the procedure's arguments. */
inline Wire rpc_call_header(uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
			    bool auth_sys = false)
{
	Wire w;
	w.u32(xid).u32(RPC_CALL).u32(2).u32(prog).u32(vers).u32(proc);
	if (auth_sys) {
		/* authsys_parms: stamp, machinename<255>, uid, gid, gids<16> */
		Wire c;
		const char host[] = "rrtest-host";
		c.u32(0x12345678).opaque(host, sizeof(host) - 1).u32(1000).u32(1000);
		c.u32(2).u32(10).u32(1000);
		w.u32(AUTH_SYS).opaque(c.b);
	} else {
		w.u32(AUTH_NONE).u32(0);
	}
	w.u32(AUTH_NONE).u32(0); /* verifier */
	return w;
}

struct RpcReply {
	bool parsed = false;
	std::string why;	/* parse failure */
	uint32_t xid = 0;
	uint32_t reply_stat = 0;
	uint32_t accept_stat = 0;
	size_t results_off = 0;	/* offset of the results in the message */
};

inline RpcReply rpc_parse_reply(const std::vector<uint8_t> &m)
{
	RpcReply r;
	XdrReader x(m);
	r.xid = x.u32();
	if (x.u32() != RPC_REPLY) {
		r.why = "msg_type is not REPLY";
		return r;
	}
	r.reply_stat = x.u32();
	if (r.reply_stat != RPC_MSG_ACCEPTED) {
		r.parsed = !x.bad;
		r.results_off = x.offset();
		return r;
	}
	x.u32(); /* verifier flavor */
	uint32_t vlen = x.u32();
	if (vlen > 400) {
		r.why = "verifier too long";
		return r;
	}
	x.opaque(vlen, nullptr);
	r.accept_stat = x.u32();
	if (x.bad) {
		r.why = "reply truncated";
		return r;
	}
	r.results_off = x.offset();
	r.parsed = true;
	return r;
}

} // namespace rrtest
