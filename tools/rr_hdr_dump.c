// SPDX-License-Identifier: MIT
/*
 * rr-hdr-dump: decode RPC-over-RDMA v1 headers given as hex (one message per
 * line, whitespace ignored) and print the parsed chunk list or the named
 * validation result with the answer a responder gives.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "rpcrdma/rr_hdr.h"

static const char *const actions[] = {"process", "reply ERR_VERS", "reply ERR_CHUNK", "drop"};

static void print_chunk(const char *what, const struct rr_pcl *p, const struct rr_chunk *c)
{
	printf("  %s pos=%u segs=%u len=%llu:", what, c->position, c->nsegs,
	       (unsigned long long)c->length);
	for (unsigned int i = 0; i < c->nsegs; i++) {
		const struct rr_segment *s = &p->segs[c->first + i];

		printf(" [h=%#x l=%u o=%#llx]", s->handle, s->length, (unsigned long long)s->offset);
	}
	printf("\n");
}

int main(void)
{
	static char line[65536];
	static unsigned char buf[32768];
	struct rr_hdr_limits lim;
	struct rr_pcl pcl;

	rr_hdr_limits_default(&lim);
	while (fgets(line, sizeof(line), stdin)) {
		size_t n = 0;
		int hi = -1;

		for (char *c = line; *c && n < sizeof(buf); c++) {
			int v;

			if (isspace((unsigned char)*c))
				continue;
			if (!isxdigit((unsigned char)*c))
				break;
			v = isdigit((unsigned char)*c) ? *c - '0' : (tolower(*c) - 'a' + 10);
			if (hi < 0) {
				hi = v;
			} else {
				buf[n++] = (unsigned char)(hi << 4 | v);
				hi = -1;
			}
		}
		if (n == 0)
			continue;
		enum rr_hdr_result r = rr_hdr_decode_call(buf, n, &lim, &pcl);
		printf("%zu bytes: xid=%#x vers=%u credits=%u proc=%u -> %s (%s)\n", n, pcl.xid,
		       pcl.vers, pcl.credits, pcl.proc, rr_hdr_result_name(r),
		       actions[rr_hdr_answer(r, n)]);
		if (r != RR_HDR_OK)
			continue;
		for (unsigned int i = 0; i < pcl.n_read; i++)
			print_chunk("read ", &pcl, &pcl.read[i]);
		for (unsigned int i = 0; i < pcl.n_write; i++)
			print_chunk("write", &pcl, &pcl.write[i]);
		if (pcl.has_reply)
			print_chunk("reply", &pcl, &pcl.reply);
		printf("  inline RPC message at offset %u\n", pcl.hdr_len);
	}
	return 0;
}
