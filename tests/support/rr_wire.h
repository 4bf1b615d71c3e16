// SPDX-License-Identifier: MIT
/*
 * rr_wire.h - an independent RPC-over-RDMA v1 message builder for tests,
 * written from RFC 8166 section 4.2's XDR, sharing no code with src/rpcrdma.
 * It appends big-endian XDR words; helpers name the RFC's structures.
 */
#pragma once

#include <cstdint>
#include <vector>

namespace rrtest {

struct Seg {
	uint32_t handle;
	uint32_t length;
	uint64_t offset;
};

struct ReadEntry {
	uint32_t position;
	Seg seg;
};

class Wire {
      public:
	std::vector<uint8_t> b;

	Wire &u32(uint32_t v)
	{
		b.push_back(uint8_t(v >> 24));
		b.push_back(uint8_t(v >> 16));
		b.push_back(uint8_t(v >> 8));
		b.push_back(uint8_t(v));
		return *this;
	}
	Wire &u64(uint64_t v)
	{
		return u32(uint32_t(v >> 32)).u32(uint32_t(v));
	}
	/* struct xdr_rdma_segment { handle; length; offset; } */
	Wire &seg(const Seg &s)
	{
		return u32(s.handle).u32(s.length).u64(s.offset);
	}
	/* rdma_xid, rdma_vers, rdma_credit, rdma_proc */
	Wire &fixed(uint32_t xid, uint32_t vers, uint32_t credit, uint32_t proc)
	{
		return u32(xid).u32(vers).u32(credit).u32(proc);
	}
	/* optional xdr_read_list: (1, position, segment)* then 0 */
	Wire &read_list(const std::vector<ReadEntry> &entries)
	{
		for (const auto &e : entries)
			u32(1).u32(e.position).seg(e.seg);
		return u32(0);
	}
	/* xdr_write_chunk: counted array of segments */
	Wire &write_chunk(const std::vector<Seg> &segs)
	{
		u32(uint32_t(segs.size()));
		for (const auto &s : segs)
			seg(s);
		return *this;
	}
	/* optional xdr_write_list: (1, write_chunk)* then 0 */
	Wire &write_list(const std::vector<std::vector<Seg>> &chunks)
	{
		for (const auto &c : chunks)
			u32(1).write_chunk(c);
		return u32(0);
	}
	/* optional xdr_write_chunk rdma_reply */
	Wire &reply_chunk(const std::vector<Seg> *segs)
	{
		if (!segs)
			return u32(0);
		return u32(1).write_chunk(*segs);
	}
	Wire &bytes(const std::vector<uint8_t> &v)
	{
		b.insert(b.end(), v.begin(), v.end());
		return *this;
	}
};

} // namespace rrtest
