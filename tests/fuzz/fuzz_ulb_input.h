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
#include <cstring>
#include <vector>

#include "ulb/ulb_reply.h"

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

/* Split a call-scan input; false if it is too short. */
static inline bool decode_call_input(const uint8_t *data, size_t size, struct rr_pcl *pcl,
				     const uint8_t **stream, size_t *len, uint8_t *seed)
{
	if (size < 2)
		return false;
	unsigned nread = data[0] % (kMaxChunks + 1);
	*seed = data[1];
	data += 2;
	size -= 2;
	if (size < nread * 8u)
		return false;
	memset(pcl, 0, sizeof(*pcl));
	for (unsigned i = 0; i < nread; i++) {
		pcl->read[i].position = be32(data) & ~3u;
		pcl->read[i].length = be32(data + 4) & 0xffffff;
		pcl->read[i].nsegs = 1;
		data += 8;
		size -= 8;
	}
	pcl->n_read = uint16_t(nread);
	*stream = data;
	*len = size;
	return true;
}

/* Split a reply-walk input into a synthetic Call, chunk lists and limits. */
static inline bool decode_reply_input(const uint8_t *data, size_t size, struct ulb_call *call,
				      struct rr_pcl *pcl, const uint8_t **stream, size_t *len,
				      uint8_t *seed)
{
	static const uint32_t progs[][2] = {
	    {100003, 4}, {100003, 3}, {100003, 2}, {100005, 3}, {100227, 3},
	};

	if (size < 13)
		return false;
	unsigned which = data[0] % 5;
	uint32_t proc = data[1] % 16;
	uint32_t minor = data[2] % 3;
	uint32_t gss = data[3] % 4;
	unsigned nwrite = data[4] % (kMaxChunks + 1);
	bool has_reply = data[5] & 1;
	*seed = data[6];
	/* data[7], data[8]: unused (an inline threshold once; the Reply's
	 * shape is the transport's), kept so that the corpus stays valid */
	uint32_t reply_len = be32(data + 9) & 0xfffff;
	data += 13;
	size -= 13;
	if (size < nwrite * 4u)
		return false;

	memset(call, 0, sizeof(*call));
	call->prog = progs[which][0];
	call->vers = progs[which][1];
	call->proc = which == 0 ? 1 : proc;
	call->ulp = ulb_ulp_of(call->prog, call->vers);
	call->minorversion = minor;
	call->gss_service = gss;
	if (gss)
		call->cred_flavor = 6;

	memset(pcl, 0, sizeof(*pcl));
	for (unsigned i = 0; i < nwrite; i++) {
		uint32_t l = be32(data) & 0xfffff;

		pcl->write[i].length = l;
		pcl->write[i].nsegs = l ? 1 + (data[0] >> 5) : 0;
		data += 4;
		size -= 4;
	}
	pcl->n_write = uint16_t(nwrite);
	pcl->has_reply = has_reply;
	pcl->reply.nsegs = has_reply ? 1 : 0;
	pcl->reply.length = reply_len;
	*stream = data;
	*len = size;
	return true;
}

} // namespace fuzzulb
