// SPDX-License-Identifier: MIT
/*
 * fuzz_ulb_reply_walk.cc - libFuzzer target: the Reply walker on arbitrary
 * bytes for a synthetic Call and Write/Reply chunk list. Checks that every
 * span lies in the stream and in its chunk, spans are ordered and disjoint,
 * and that the answer does not depend on how the stream is cut, nor on the
 * encoder's word on where the READ data is.
 */
#include <cstring>

#include "fuzz/fuzz_ulb_input.h"
#include "support/ulb_compare.h"
#include "ulb/ulb_reply.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	using namespace fuzzulb;
	static struct rr_pcl pcl;
	static struct ulb_call call;
	uint8_t seed;

	if (!decode_reply_input(data, size, &call, &pcl, &data, &size, &seed))
		return 0;
	const unsigned nwrite = pcl.n_write;

	struct rr_reply_plan p1, p2;
	struct ulb_reply_info i1, i2;
	std::vector<iovec> whole = cut(data, size, 0);
	std::vector<iovec> pieces = cut(data, size, seed);
	enum ulb_reply_result r1 =
	    ulb_reply_plan(&call, whole.data(), int(whole.size()), &pcl, 0, &p1, &i1);
	enum ulb_reply_result r2 =
	    ulb_reply_plan(&call, pieces.data(), int(pieces.size()), &pcl, 0, &p2, &i2);

	CHECK(r1 == r2);
	CHECK(rr_reply_plan_same(p1, p2));
	CHECK(i1.n_read_results == i2.n_read_results && i1.bad_chunk == i2.bad_chunk);
	CHECK(p1.deliverable == (r1 == ULB_REPLY_OK));
	CHECK(i1.reply_len == size);
	if (!p1.deliverable)
		CHECK(p1.nspans == 0);
	uint64_t prev_end = 0;
	int prev_chunk = -1;
	for (unsigned i = 0; i < p1.nspans; i++) {
		const struct rr_payload_span *s = &p1.spans[i];

		CHECK(s->chunk < nwrite);
		CHECK(int(s->chunk) > prev_chunk);
		CHECK(s->length > 0);
		CHECK(s->length <= pcl.write[s->chunk].length);
		CHECK(s->offset >= prev_end);
		CHECK(s->offset + ((s->length + 3ull) & ~3ull) <= size);
		prev_end = s->offset + ((s->length + 3ull) & ~3ull);
		prev_chunk = s->chunk;
	}
	/* The encoder's word on where READ data went changes nothing: an
	 * honest one (where the walk found it) nor any other. */
	const uint64_t other = (seed * 4099ull) % (size + 64);
	for (uint64_t hint : {p1.nspans ? p1.spans[0].offset : other, other}) {
		struct rr_reply_plan ph;
		struct ulb_reply_info ih;
		enum ulb_reply_result rh = ulb_reply_plan(&call, pieces.data(), int(pieces.size()),
							  &pcl, hint, &ph, &ih);
		CHECK(rh == r1);
		CHECK(rr_reply_plan_same(p1, ph));
		CHECK(ih.n_read_results == i1.n_read_results && ih.bad_chunk == i1.bad_chunk);
	}
	return 0;
}
