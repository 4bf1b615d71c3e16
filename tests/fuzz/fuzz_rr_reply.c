// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the reply path's chunk-list consumers. One Call (its
 * Write list and Reply chunk decoded by the production rr_hdr_decode_call)
 * is answered by a fuzzer-shaped Reply and payload plan; every RDMA Write,
 * the echoed lists and the inline or Reply-chunk remainder are checked
 * against the simulated client's segments and RFC 8166 sections 3.5.4-3.5.6.
 * Layout and invariants: rr_fuzz_engine.c.
 */
#include "rr_fuzz_engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rrf_run(data, size, RRF_REPLY);
	return 0;
}
