// SPDX-License-Identifier: MIT
/*
 * fab_peer_helper.c - the far end of the two-process conformance tests.
 *
 * Usage: fab_peer_helper ADDR. Connects over "soft", advertising a 64 KiB
 * region (private data: addr u64, rkey u32, len u32) filled with pattern 77,
 * posts its receive and then says hello with a 4-byte Send (the peer must
 * not Send to us before that, as an RPC server waits for the first call).
 * On the first received Send it checks the region holds pattern 13 (written
 * by the peer before that Send) and answers with a 4-byte Send: 1 or 0.
 * Exits 0 once the peer disconnects, non-zero on any failure or after 10 s.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fabric/fab.h"

#define REGION (64 * 1024)

static int fail(const char *what)
{
	fprintf(stderr, "fab_peer_helper: %s: %s\n", what, fab_last_error());
	return 1;
}

int main(int argc, char **argv)
{
	static unsigned char region[REGION], rbuf[256], sbuf[256];
	struct fab_qp_caps caps = {16, 16, 2, 2, NULL};
	struct fab_conn_param cp = {0};
	struct fab_fabric *fab;
	struct fab_channel *ch;
	struct fab_cq *scq, *rcq;
	struct fab_pd *pd;
	struct fab_mr *mr, *rmr, *smr;
	struct fab_conn *c;
	unsigned char pdata[16];
	uint64_t a;
	bool replied = false;
	time_t end = time(NULL) + 10;

	if (argc != 2)
		return 2;
	for (size_t i = 0; i < REGION; i++)
		region[i] = (unsigned char)(i * 7 + 77);
	if (fab_open("soft", &fab) || fab_channel_create(fab, &ch) ||
	    fab_cq_create(fab, 16, &scq) || fab_cq_create(fab, 16, &rcq) || fab_pd_get(fab, &pd))
		return fail("setup");
	if (fab_mr_reg(pd, region, REGION, 7, &mr) || fab_mr_reg(pd, rbuf, sizeof(rbuf), 1, &rmr) ||
	    fab_mr_reg(pd, sbuf, sizeof(sbuf), 1, &smr))
		return fail("mr_reg");
	a = (uintptr_t)region;
	memcpy(pdata, &a, 8);
	memcpy(pdata + 8, &mr->rkey, 4);
	memcpy(pdata + 12, &(uint32_t){REGION}, 4);
	cp.private_data = pdata;
	cp.private_data_len = sizeof(pdata);
	if (fab_connect(fab, ch, argv[1], scq, rcq, &caps, &cp, &c))
		return fail("connect");
	{
		struct fab_sge s = {rbuf, sizeof(rbuf), rmr->lkey};
		struct fab_recv_wr wr = {.wr_id = 1, .sg_list = &s, .num_sge = 1};

		if (fab_post_recv(c, &wr, NULL))
			return fail("post_recv");
	}
	{
		/* As an RPC client does: speak first, once our receive is posted. */
		static unsigned char hello[4] = {'h', 'i', '!', 0};
		struct fab_sge s = {hello, sizeof(hello), smr->lkey};
		struct fab_send_wr wr = {
		    .wr_id = 3, .opcode = FAB_WR_SEND, .sg_list = &s, .num_sge = 1};

		memcpy(sbuf + 128, hello, sizeof(hello));
		s.addr = sbuf + 128;
		if (fab_post_send(c, &wr, NULL))
			return fail("post_send hello");
	}
	while (time(NULL) < end) {
		struct pollfd p[2] = {{fab_channel_fd(ch), POLLIN, 0}, {fab_cq_fd(rcq), POLLIN, 0}};
		struct fab_cm_event ev;
		struct fab_wc wc;

		fab_cq_arm(rcq);
		while (fab_cq_poll(rcq, &wc, 1) == 1) {
			uint32_t ok = 1;
			struct fab_sge s = {sbuf, 4, smr->lkey};
			struct fab_send_wr wr = {.wr_id = 2,
						 .opcode = FAB_WR_SEND,
						 .sg_list = &s,
						 .num_sge = 1,
						 .signaled = true};

			if (wc.status != FAB_WC_SUCCESS || replied)
				continue;
			for (size_t i = 0; i < REGION; i++)
				if (region[i] != (unsigned char)(i * 7 + 13))
					ok = 0;
			memcpy(sbuf, &ok, 4);
			if (fab_post_send(c, &wr, NULL))
				return fail("post_send");
			replied = true;
		}
		while (fab_channel_get_event(ch, &ev) == 0) {
			if (ev.type == FAB_CM_DISCONNECTED) {
				fab_conn_destroy(c);
				fab_mr_dereg(mr);
				fab_mr_dereg(rmr);
				fab_mr_dereg(smr);
				fab_cq_destroy(scq);
				fab_cq_destroy(rcq);
				fab_channel_destroy(ch);
				fab_close(fab);
				return replied ? 0 : 3;
			}
			if (ev.type != FAB_CM_ESTABLISHED)
				return fail("unexpected CM event");
		}
		poll(p, 2, 100);
		fab_cq_get_event(rcq);
	}
	return 4;
}
