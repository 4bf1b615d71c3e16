/* SPDX-License-Identifier: MIT */
/* rrp_xdr_probe.c: the plugin's decode stream's position and data-buffer
 * operations, for test_rrp_xdr.cc. Each call opens a stream over @iov, moves
 * it to @at (SETPOS), then makes the one call named. -2: the move failed. */
#ifndef RPCRDMA_RRP_XDR_PROBE_H
#define RPCRDMA_RRP_XDR_PROBE_H

#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* x_iovcount(start, len) */
int rrp_probe_iovcount(const struct iovec *iov, int n, unsigned int at, unsigned int start,
		       unsigned int len);
/* x_fillbufs(start, len) into @out: the buffers' count, -1 when it refused
 * without writing, -3 when it wrote and refused, -4 on a malformed buffer. */
int rrp_probe_fillbufs(const struct iovec *iov, int n, unsigned int at, unsigned int start,
		       unsigned int len, struct iovec *out, int max, unsigned long *in_place);
/* x_setpostn(pos): 1 with x_getpostn and x_data after it, 0 when refused. */
int rrp_probe_setpos(const struct iovec *iov, int n, unsigned int at, unsigned int pos,
		     unsigned int *getpos, const void **data);

#ifdef __cplusplus
}
#endif
#endif
