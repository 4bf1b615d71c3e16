/* SPDX-License-Identifier: MIT */
/*
 * ulb_test_hooks.h - entry points of the ULB that only its tests and
 * fuzzers call; not an interface: nothing outside src/ulb/ and tests/
 * includes this.
 */
#ifndef ULB_ULB_TEST_HOOKS_H
#define ULB_ULB_TEST_HOOKS_H

#include <sys/uio.h>

#include "ulb/ulb_call.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The eligible argument item of a procedure (v2/v3) or operation (v4; CREATE
 * only in its NF4LNK arm), or ULB_ITEM_NONE: the table the Call scan reads.
 */
enum ulb_item ulb_elig_arg(enum ulb_ulp ulp, uint32_t proc_or_op);

/*
 * Backchannel: find CB_SEQUENCE, the first operation of a CB_COMPOUND Call
 * (RFC 8881 section 20.9). 0 or -EINVAL.
 */
int ulb_cb_scan_sequence(const struct iovec *iov, int iovcnt, struct ulb_sequence *seq);

#ifdef __cplusplus
}
#endif
#endif
