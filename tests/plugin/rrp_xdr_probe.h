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

/*
 * The encode stream's xdr_putbufs as ganesha's READ results call it: per
 * READ a length word, then a uio made with no reference (calloc) of @vios
 * vios (@first for the first READ, @vios for the others: 1, or 2 as ganesha
 * 6 splits an unaligned tail); when putbufs fails,
 * ganesha releases the uio once and the Reply is given up (its COMPOUND
 * encodes no further READ). Then the stream is recycled, as when the
 * engine is done with a Reply. Counts, over the @nreads READs (at most
 * 64): @put, putbufs that succeeded; @made, uios made; @freed, uios whose
 * release brought them to no reference (each frees it); @over, releases
 * of a uio already freed. Returns 0, or -1 when the stream cannot be made.
 */
struct rrp_probe_bufs {
	int put, made, freed, over;
};
int rrp_probe_putbufs(int nreads, int first, int vios, struct rrp_probe_bufs *out);

#ifdef __cplusplus
}
#endif
#endif
