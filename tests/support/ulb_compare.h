// SPDX-License-Identifier: MIT
/*
 * ulb_compare.h - field-by-field equality of what the ULB fills in: a scan
 * (struct ulb_call) and a reply plan (struct rr_reply_plan). The ULB writes
 * its arrays only up to their counts and leaves struct padding alone, so a
 * memcmp of the whole structures would compare unset bytes; these compare
 * every meaningful field, the array entries below the counts included.
 */
#pragma once

#include <cstring>

#include "rpcrdma/rr_reply.h"
#include "ulb/ulb_call.h"

static inline bool ulb_sequence_same(const struct ulb_sequence &a, const struct ulb_sequence &b)
{
	return memcmp(a.sessionid, b.sessionid, sizeof(a.sessionid)) == 0 &&
	       a.sequenceid == b.sequenceid && a.slotid == b.slotid;
}

static inline bool ulb_call_same(const struct ulb_call &a, const struct ulb_call &b)
{
	if (a.xid != b.xid || a.prog != b.prog || a.vers != b.vers || a.proc != b.proc ||
	    a.ulp != b.ulp || a.cred_flavor != b.cred_flavor || a.gss_service != b.gss_service ||
	    a.args_offset != b.args_offset || a.minorversion != b.minorversion ||
	    a.numops != b.numops || a.nops_scanned != b.nops_scanned || a.stopped != b.stopped ||
	    a.stop_opcode != b.stop_opcode || a.has_sequence != b.has_sequence ||
	    !ulb_sequence_same(a.seq, b.seq) || a.n_read_ops != b.n_read_ops ||
	    a.n_items != b.n_items || a.absent_bytes != b.absent_bytes)
		return false;
	for (uint32_t i = 0; i < a.n_read_ops && i < ULB_MAX_READ_OPS; i++) {
		const struct ulb_read_op &x = a.read_ops[i], &y = b.read_ops[i];

		if (x.op_index != y.op_index || x.kind != y.kind || x.opcode != y.opcode ||
		    x.count != y.count)
			return false;
	}
	for (uint32_t i = 0; i < a.n_items && i < ULB_MAX_ARG_ITEMS; i++) {
		const struct ulb_arg_item &x = a.items[i], &y = b.items[i];

		if (x.op_index != y.op_index || x.kind != y.kind || x.chunk != y.chunk ||
		    x.length != y.length || x.position != y.position)
			return false;
	}
	return true;
}

static inline bool rr_reply_plan_same(const struct rr_reply_plan &a, const struct rr_reply_plan &b)
{
	if (a.nspans != b.nspans || a.deliverable != b.deliverable)
		return false;
	for (unsigned i = 0; i < a.nspans && i < RR_PCL_MAX_WRITE_CHUNKS; i++) {
		const struct rr_payload_span &x = a.spans[i], &y = b.spans[i];

		if (x.chunk != y.chunk || x.offset != y.offset || x.length != y.length)
			return false;
	}
	return true;
}
