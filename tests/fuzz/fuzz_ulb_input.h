// SPDX-License-Identifier: MIT
/*
 * fuzz_ulb_input.h - how the ULB fuzzers read their input; shared with the
 * seed generator (tests/ulb/gen_ulb_fuzz_corpus.cc).
 *
 * call scan:  [nread:1][cutseed:1] nread x ([position:4][length:4])  stream...
 * reply walk: [ulp:1][proc:1][minor:1][gss:1][nwrite:1][has_reply:1][cutseed:1]
 *             [inline:2] [reply_len:4] nwrite x [len:4]  stream...
 */
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fuzzulb
{

constexpr unsigned kMaxChunks = 6;

static inline uint32_t be32(const uint8_t *p)
{
	return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

/* Cut [data, data+size) into iovecs at points drawn from @seed. */
static inline std::vector<iovec> cut(const uint8_t *data, size_t size, uint8_t seed)
{
	std::vector<iovec> v;
	size_t start = 0;
	uint32_t s = seed * 2654435761u + 1;

	while (start < size) {
		size_t len;

		s = s * 1103515245u + 12345u;
		if (seed == 0)
			len = size - start;
		else
			len = 1 + (s >> 16) % (seed < 16 ? seed : 64u + seed * 8u);
		if (len > size - start)
			len = size - start;
		iovec io;
		io.iov_base = const_cast<uint8_t *>(data + start);
		io.iov_len = len;
		v.push_back(io);
		start += len;
		/* sometimes an empty iovec, as a zero-length payload would give */
		if ((s & 0x700) == 0x700) {
			io.iov_base = const_cast<uint8_t *>(data + start);
			io.iov_len = 0;
			v.push_back(io);
		}
	}
	return v;
}

} // namespace fuzzulb
