// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the receive path's chunk-list consumers. Up to three
 * messages (transport header + Call, decoded by the production
 * rr_hdr_decode_call) arrive on one connection; their Read chunks are pulled
 * from a simulated client and each Call is assembled, checked byte for byte
 * against RFC 8166 section 3.5.3, and answered by a short inline Reply.
 * Layout and invariants: rr_fuzz_engine.c.
 */
#include "rr_fuzz_engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rrf_run(data, size, RRF_CALL);
	return 0;
}
