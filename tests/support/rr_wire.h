// SPDX-License-Identifier: MIT
/*
 * rr_wire.h - an independent RPC-over-RDMA v1 message builder for tests,
 * written from RFC 8166 section 4.2's XDR, sharing no code with src/rpcrdma.
 * It appends big-endian XDR words; helpers name the RFC's structures.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
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

/* Reads big-endian XDR words from a byte range; any overrun sets bad. */
class XdrReader {
      public:
	XdrReader(const uint8_t *p, size_t n) : p_(p), n_(n)
	{
	}
	explicit XdrReader(const std::vector<uint8_t> &v) : p_(v.data()), n_(v.size())
	{
	}
	bool bad = false;

	uint32_t u32()
	{
		if (n_ - off_ < 4 || off_ > n_) {
			bad = true;
			off_ = n_;
			return 0;
		}
		const uint8_t *q = p_ + off_;
		off_ += 4;
		return uint32_t(q[0]) << 24 | uint32_t(q[1]) << 16 | uint32_t(q[2]) << 8 | q[3];
	}
	uint64_t u64()
	{
		uint64_t hi = u32();
		return hi << 32 | u32();
	}
	Seg seg()
	{
		Seg s;
		s.handle = u32();
		s.length = u32();
		s.offset = u64();
		return s;
	}
	/* Fixed-length opaque of n bytes plus its XDR pad. */
	bool opaque(size_t n, std::vector<uint8_t> *out)
	{
		size_t padded = (n + 3) & ~size_t(3);
		if (n_ - off_ < padded) {
			bad = true;
			off_ = n_;
			return false;
		}
		if (out)
			out->assign(p_ + off_, p_ + off_ + n);
		off_ += padded;
		return true;
	}
	size_t offset() const
	{
		return off_;
	}
	size_t left() const
	{
		return n_ - off_;
	}
	const uint8_t *cur() const
	{
		return p_ + off_;
	}

      private:
	const uint8_t *p_;
	size_t n_;
	size_t off_ = 0;
};

inline bool operator==(const Seg &a, const Seg &b)
{
	return a.handle == b.handle && a.length == b.length && a.offset == b.offset;
}

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
	Wire &bytes(const void *p, size_t n)
	{
		const uint8_t *q = static_cast<const uint8_t *>(p);
		b.insert(b.end(), q, q + n);
		return *this;
	}
	/* XDR variable-length opaque<>: length, bytes, zero pad to 4. */
	Wire &opaque(const void *p, size_t n)
	{
		u32(uint32_t(n));
		bytes(p, n);
		while (b.size() & 3)
			b.push_back(0);
		return *this;
	}
	Wire &opaque(const std::vector<uint8_t> &v)
	{
		return opaque(v.data(), v.size());
	}
};

} // namespace rrtest
