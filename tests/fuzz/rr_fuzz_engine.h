/* SPDX-License-Identifier: MIT */
/*
 * rr_fuzz_engine.h - drives the transport engine's chunk-list consumers
 * (rr_recv.c, rr_read.c, rr_reply.c, rr_rw.c) on a recording fabric for the libFuzzer
 * targets fuzz_rr_call and fuzz_rr_reply. See rr_fuzz_engine.c for the input
 * layout and the invariants checked; any violation aborts.
 */
#ifndef RR_FUZZ_ENGINE_H
#define RR_FUZZ_ENGINE_H

#include <stddef.h>
#include <stdint.h>

enum rrf_mode {
	RRF_CALL,	/* up to 3 Calls in flight, each answered by a short inline Reply */
	RRF_REPLY,	/* one Call, answered by a fuzzer-shaped Reply and payload plan */
};

void rrf_run(const uint8_t *data, size_t size, enum rrf_mode mode);

#endif
