/* SPDX-License-Identifier: MIT */
/*
 * rrp_payload_test_hooks.h - the payload pool's own counts, for its tests
 * only; not an interface: nothing outside rrp_payload.c and tests/ includes
 * this.
 */
#ifndef RPCRDMA_RRP_PAYLOAD_TEST_HOOKS_H
#define RPCRDMA_RRP_PAYLOAD_TEST_HOOKS_H

#include <stdint.h>

/* READ buffers served from the arena, and announced ones that were not. */
void rrp_payload_stats(uint64_t *served, uint64_t *fallbacks);
/* Bytes lent so far (process lifetime). */
uint64_t rrp_payload_lent_bytes(void);

#endif
