// SPDX-License-Identifier: MIT
/*
 * fuzz_ulb_call_scan.cc - libFuzzer target: the Call scanner and the
 * Read-chunk check on arbitrary bytes, cut into arbitrary iovecs, with an
 * arbitrary Read list. Invariants are checked with __builtin_trap().
 */
#include <cstring>

#include "fuzz/fuzz_ulb_input.h"
#include "support/ulb_compare.h"
#include "ulb/ulb_call.h"
#include "ulb/ulb_test_hooks.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	using namespace fuzzulb;
	static struct rr_pcl pcl; /* large; not on the stack */
	static struct ulb_call c1, c2;

	uint8_t seed;

	if (!decode_call_input(data, size, &pcl, &data, &size, &seed))
		return 0;
	const unsigned nread = pcl.n_read;

	std::vector<iovec> whole = cut(data, size, 0);
	std::vector<iovec> pieces = cut(data, size, seed);

	/* the same stream gives the same answer however it is cut */
	enum ulb_scan_result r1 = ulb_call_scan(whole.data(), int(whole.size()), &pcl, &c1);
	enum ulb_scan_result r2 = ulb_call_scan(pieces.data(), int(pieces.size()), &pcl, &c2);
	CHECK(r1 == r2);
	CHECK(ulb_call_same(c1, c2));
	ulb_call_check_read_chunks(&c1, &pcl);

	/* items lie inside the Call (chunk bytes counted in place) and in order */
	unsigned n = c1.n_items < ULB_MAX_ARG_ITEMS ? c1.n_items : ULB_MAX_ARG_ITEMS;
	uint64_t prev_end = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct ulb_arg_item *it = &c1.items[i];

		CHECK(it->position >= prev_end);
		CHECK(it->chunk < int(nread));
		if (it->chunk < 0 && r1 == ULB_SCAN_OK)
			CHECK(it->position + it->length <= size + c1.absent_bytes);
		prev_end = it->position + it->length;
	}
	CHECK(c1.nops_scanned <= c1.numops);
	CHECK(c1.n_read_ops <= c1.nops_scanned + 1 || c1.ulp != ULB_ULP_NFS4);

	/* and without a Read list */
	ulb_call_scan(pieces.data(), int(pieces.size()), nullptr, &c2);
	ulb_call_check_read_chunks(&c2, &pcl);
	CHECK(c2.absent_bytes == 0);

	struct ulb_sequence seq;
	ulb_cb_scan_sequence(pieces.data(), int(pieces.size()), &seq);
	return 0;
}
