// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the transport header decoder, both directions. Beyond
 * "no crash", it checks one property: a header that decodes OK re-encodes to
 * a header that decodes to the same chunk lists.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/rr_hdr.h"

static struct rr_pcl a, b;

static void same_chunks(const struct rr_chunk *x, const struct rr_chunk *y)
{
	if (x->position != y->position || x->nsegs != y->nsegs || x->length != y->length)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t enc[RR_PCL_MAX_SEGS * 24 + 64];
	struct rr_hdr_limits lim;
	struct rr_reply_info info;
	enum rr_hdr_result r;
	ssize_t n;
	unsigned int i;

	rr_hdr_limits_default(&lim);
	r = rr_hdr_decode_call(data, size, &lim, &a);
	(void)rr_hdr_answer(r, size);
	(void)rr_hdr_result_name(r);
	if (r == RR_HDR_OK) {
		if (a.hdr_len > size)
			abort();
		n = rr_hdr_encode_call(enc, sizeof(enc), &a);
		if (n < 0 || (size_t)n != a.hdr_len)
			abort();
		if (rr_hdr_decode_call(enc, (size_t)n, &lim, &b) != RR_HDR_OK)
			abort();
		if (b.n_read != a.n_read || b.n_write != a.n_write || b.has_reply != a.has_reply)
			abort();
		for (i = 0; i < a.n_read; i++)
			same_chunks(&a.read[i], &b.read[i]);
		for (i = 0; i < a.n_write; i++)
			same_chunks(&a.write[i], &b.write[i]);
		if (a.has_reply)
			same_chunks(&a.reply, &b.reply);
		n = rr_hdr_encode_reply(enc, sizeof(enc), &a, 1, RR_PROC_MSG, NULL, 0);
		if (n < 0)
			abort();
	}
	(void)rr_hdr_decode_reply(data, size, &lim, &b, &info);
	return 0;
}
