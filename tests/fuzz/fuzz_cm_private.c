// SPDX-License-Identifier: MIT
/* libFuzzer target: RFC 8797 private data parser and negotiation. */
#include <stdint.h>
#include <stdlib.h>

#include "rpcrdma/rr_cm_private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_cm_private p;
	struct rr_inline_limits l;

	rr_cm_private_decode(data, size, &p);
	if (p.send_size < 1024 || p.send_size > 256 * 1024 || p.recv_size < 1024 ||
	    p.recv_size > 256 * 1024)
		abort();
	rr_cm_negotiate(4096, 4096, &p, &l);
	if (l.max_send > 4096 || l.max_recv > 4096 || l.max_send < 1024 || l.max_recv < 1024)
		abort();
	return 0;
}
