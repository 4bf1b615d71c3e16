// SPDX-License-Identifier: MIT
/*
 * fab_bench.c - fabric throughput between two processes, beside memcpy.
 *
 * Usage: fab_bench [-t] [-a ADDR] [-S | -C] [-s SECONDS] [-q DEPTH]
 *   -t  TCP on 127.0.0.1 instead of a unix socket
 *   -a  fabric address to use (e.g. tcp:10.0.0.1:20049 between namespaces)
 *   -S  run only the target (serving side); -C only the driver (connects to -a)
 * The provider comes from RPCRDMA_FABRIC (default soft). The process forks:
 * the child owns a 16 MiB registered region and echoes 64-byte Sends; the
 * parent drives RDMA Write and RDMA Read at 4 KiB, 64 KiB and 1 MiB with DEPTH
 * requests in flight, then 64-byte Send round trips, and prints each figure
 * with memcpy measured in the same run and the ratio.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fabric/fab.h"

#define REGION (16u << 20)
#define MSG 64

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static _Noreturn void die(const char *what)
{
	fprintf(stderr, "fab_bench: %s: %s\n", what, fab_last_error());
	exit(1);
}

static int wait_wc(struct fab_cq *cq, struct fab_wc *wc, int n)
{
	for (;;) {
		int got = fab_cq_poll(cq, wc, n);
		struct pollfd p = {fab_cq_fd(cq), POLLIN, 0};

		if (got)
			return got;
		fab_cq_arm(cq);
		got = fab_cq_poll(cq, wc, n);
		if (got)
			return got;
		if (poll(&p, 1, 5000) <= 0)
			return -ETIMEDOUT;
		fab_cq_get_event(cq);
	}
}

static int wait_ev(struct fab_channel *ch, struct fab_cm_event *ev, int ms)
{
	double end = now() + ms / 1000.0;

	while (fab_channel_get_event(ch, ev)) {
		struct pollfd p = {fab_channel_fd(ch), POLLIN, 0};
		int left = (int)((end - now()) * 1000);

		if (left <= 0)
			return -ETIMEDOUT;
		poll(&p, 1, left);
	}
	return 0;
}

static void post_recv(struct fab_conn *c, void *buf, struct fab_mr *mr, uint64_t id)
{
	struct fab_sge s = {buf, MSG, mr->lkey};
	struct fab_recv_wr wr = {.wr_id = id, .sg_list = &s, .num_sge = 1};

	if (fab_post_recv(c, &wr, NULL))
		die("post_recv");
}

static void post_send(struct fab_conn *c, enum fab_wr_opcode op, void *buf, uint32_t len,
		      struct fab_mr *mr, uint64_t raddr, uint32_t rkey, uint64_t id)
{
	struct fab_sge s = {buf, len, mr->lkey};
	struct fab_send_wr wr = {.wr_id = id,
				 .opcode = op,
				 .sg_list = &s,
				 .num_sge = 1,
				 .signaled = true,
				 .remote_addr = raddr,
				 .rkey = rkey};

	if (fab_post_send(c, &wr, NULL))
		die("post_send");
}

/* Child: expose a region, echo every Send, leave when disconnected. */
static int target(const char *addr)
{
	struct fab_qp_caps caps = {64, 64, 1, 1, NULL};
	struct fab_fabric *fab;
	struct fab_channel *ch;
	struct fab_listener *l;
	struct fab_cq *cq;
	struct fab_pd *pd;
	struct fab_mr *mr, *mmr;
	struct fab_cm_event ev;
	struct fab_conn *c;
	unsigned char *region = malloc(REGION), *msgs = malloc(64 * MSG);
	unsigned char pdata[16];
	uint64_t a = (uintptr_t)region;
	struct fab_conn_param ap = {.private_data = pdata, .private_data_len = 16};

	if (fab_open(NULL, &fab) || fab_channel_create(fab, &ch) || fab_cq_create(fab, 256, &cq) ||
	    fab_pd_get(fab, &pd) || fab_listen(fab, ch, addr, 4, &l))
		die("target setup");
	memset(region, 1, REGION);
	if (fab_mr_reg(pd, region, REGION, 7, &mr) || fab_mr_reg(pd, msgs, 64 * MSG, 1, &mmr))
		die("target mr");
	memcpy(pdata, &a, 8);
	memcpy(pdata + 8, &mr->rkey, 4);
	memcpy(pdata + 12, &(uint32_t){REGION}, 4);
	if (wait_ev(ch, &ev, 10000) || ev.type != FAB_CM_CONNECT_REQUEST)
		die("target: no connect request");
	c = ev.conn;
	if (fab_conn_create_qp(c, cq, cq, &caps))
		die("target qp");
	for (int i = 0; i < 32; i++)
		post_recv(c, msgs + i * MSG, mmr, i);
	if (fab_accept(c, &ap))
		die("accept");
	for (;;) {
		struct fab_wc wc[16];
		int n;

		while (fab_channel_get_event(ch, &ev) == 0)
			if (ev.type == FAB_CM_DISCONNECTED)
				goto out;
		n = wait_wc(cq, wc, 16);
		if (n == -ETIMEDOUT)
			continue;
		for (int i = 0; i < n; i++) {
			if (wc[i].status != FAB_WC_SUCCESS)
				goto out;
			if (wc[i].opcode != FAB_WC_RECV)
				continue;
			/* Echo from the receive buffer, then give it back. */
			post_send(c, FAB_WR_SEND, msgs + wc[i].wr_id * MSG, MSG, mmr, 0, 0,
				  1000 + wc[i].wr_id);
			post_recv(c, msgs + wc[i].wr_id * MSG, mmr, wc[i].wr_id);
		}
	}
out:
	fab_conn_destroy(c);
	fab_listener_destroy(l);
	fab_mr_dereg(mr);
	fab_mr_dereg(mmr);
	fab_cq_destroy(cq);
	fab_channel_destroy(ch);
	fab_close(fab);
	free(region);
	free(msgs);
	return 0;
}

static double memcpy_bw(unsigned char *dst, unsigned char *src, uint32_t size, double secs)
{
	double t0 = now(), t;
	uint64_t bytes = 0, off = 0;

	do {
		for (int i = 0; i < 64; i++) {
			memcpy(dst + off, src + off, size);
			bytes += size;
			off = (off + size) % (REGION - size + 1);
			off -= off % size;
		}
		t = now() - t0;
	} while (t < secs);
	return bytes / t;
}

int main(int argc, char **argv)
{
	struct fab_qp_caps caps = {64, 64, 1, 1, NULL};
	double secs = 0.5;
	int depth = 16, opt, tcp = 0;
	char addr[128];
	pid_t pid;

	const char *user_addr = NULL;
	int only = 0;

	while ((opt = getopt(argc, argv, "ta:SCs:q:")) != -1) {
		if (opt == 't')
			tcp = 1;
		else if (opt == 'a')
			user_addr = optarg;
		else if (opt == 'S' || opt == 'C')
			only = opt;
		else if (opt == 's')
			secs = atof(optarg);
		else if (opt == 'q')
			depth = atoi(optarg);
		else
			return 2;
	}
	if (depth < 1 || depth > 60)
		depth = 16;
	if (tcp)
		snprintf(addr, sizeof(addr), "tcp:127.0.0.1:%d", 40000 + getpid() % 20000);
	else
		snprintf(addr, sizeof(addr), "unix:/tmp/rr-fab-bench-%d.sock", (int)getpid());
	if (user_addr)
		snprintf(addr, sizeof(addr), "%s", user_addr);
	if (only == 'S')
		return target(addr);
	if ((only == 'C') && !user_addr)
		return 2;
	pid = only == 'C' ? 0 : fork();
	if (pid < 0)
		return 1;
	if (pid == 0 && only != 'C')
		return target(addr);

	struct fab_fabric *fab;
	struct fab_channel *ch;
	struct fab_cq *cq;
	struct fab_pd *pd;
	struct fab_mr *mr;
	struct fab_conn *c = NULL;
	struct fab_cm_event ev;
	struct fab_stats st0, st1;
	unsigned char *buf = malloc(REGION), *src = malloc(REGION);
	uint64_t raddr = 0;
	uint32_t rkey = 0;

	if (fab_open(NULL, &fab) || fab_channel_create(fab, &ch) || fab_cq_create(fab, 256, &cq) ||
	    fab_pd_get(fab, &pd))
		die("setup");
	memset(buf, 2, REGION);
	memset(src, 3, REGION);
	if (fab_mr_reg(pd, buf, REGION, 7, &mr))
		die("mr");
	/* The child may not be listening yet: retry for a few seconds. */
	for (int tries = 0; tries < 100; tries++) {
		if (fab_connect(fab, ch, addr, cq, cq, &caps, NULL, &c))
			die("connect");
		if (wait_ev(ch, &ev, 5000))
			die("no CM event");
		if (ev.type == FAB_CM_ESTABLISHED)
			break;
		fab_conn_destroy(c);
		c = NULL;
		usleep(20000);
	}
	if (!c)
		die("could not connect");
	memcpy(&raddr, ev.private_data, 8);
	memcpy(&rkey, ev.private_data + 8, 4);
	fab_get_stats(fab, &st0);

	printf("fab_bench: provider %s, %s, %d in flight, %.2f s per figure\n", fab_name(fab), addr,
	       depth, secs);
	printf("%-12s %8s %12s %12s %8s\n", "op", "size", "fabric MB/s", "memcpy MB/s", "ratio");
	static const uint32_t sizes[] = {4096, 65536, 1u << 20};
	for (int opi = 0; opi < 2; opi++) {
		enum fab_wr_opcode op = opi ? FAB_WR_RDMA_READ : FAB_WR_RDMA_WRITE;

		for (int si = 0; si < 3; si++) {
			uint32_t size = sizes[si];
			uint32_t slots = REGION / size;
			uint64_t done = 0, posted = 0;
			double t0 = now(), t;
			struct fab_wc wc[64];

			for (; posted < (uint64_t)depth; posted++)
				post_send(c, op, buf + (posted % slots) * size, size, mr,
					  raddr + (posted % slots) * size, rkey, posted);
			do {
				int n = wait_wc(cq, wc, 64);

				if (n < 0)
					die("completion timeout");
				for (int i = 0; i < n; i++) {
					if (wc[i].status != FAB_WC_SUCCESS)
						die("bad completion");
					done++;
					post_send(c, op, buf + (posted % slots) * size, size, mr,
						  raddr + (posted % slots) * size, rkey, posted);
					posted++;
				}
				t = now() - t0;
			} while (t < secs);
			double bw = done * (double)size / t;
			while (done < posted) {
				int n = wait_wc(cq, wc, 64);

				if (n < 0)
					die("drain timeout");
				done += (uint64_t)n;
			}
			double mbw = memcpy_bw(src, buf, size, secs / 2);
			printf("%-12s %8u %12.1f %12.1f %8.3f\n", opi ? "RDMA Read" : "RDMA Write",
			       size, bw / 1e6, mbw / 1e6, bw / mbw);
		}
	}

	/* 64-byte Send round trips: one in flight. */
	{
		struct fab_mr *mmr;
		unsigned char *msgs = malloc(2 * MSG);
		uint64_t rts = 0;
		double t0, t;

		memset(msgs, 5, 2 * MSG);
		if (fab_mr_reg(pd, msgs, 2 * MSG, 1, &mmr))
			die("mr");
		t0 = now();
		do {
			struct fab_wc wc[4];
			int got_recv = 0;

			post_recv(c, msgs + MSG, mmr, 1);
			post_send(c, FAB_WR_SEND, msgs, MSG, mmr, 0, 0, 2);
			while (!got_recv) {
				int n = wait_wc(cq, wc, 4);

				if (n < 0)
					die("round trip timeout");
				for (int i = 0; i < n; i++) {
					if (wc[i].status != FAB_WC_SUCCESS)
						die("bad send completion");
					if (wc[i].opcode == FAB_WC_RECV)
						got_recv = 1;
				}
			}
			rts++;
			t = now() - t0;
		} while (t < secs);
		/* The Send's own completion may trail the echo. */
		{
			struct fab_wc wc[4];

			usleep(10000);
			while (fab_cq_poll(cq, wc, 4) > 0)
				;
		}
		double mops = memcpy_bw(src, buf, MSG, secs / 2) / MSG;
		printf("%-12s %8u %12.0f %12.0f %8.6f   (round trips/s vs 64 B memcpy/s)\n",
		       "Send RT", MSG, rts / t, mops, (rts / t) / mops);
		fab_mr_dereg(mmr);
		free(msgs);
	}
	fab_get_stats(fab, &st1);
	printf("registrations during the run: %llu (steady state should be 0 per op)\n",
	       (unsigned long long)(st1.registrations - st0.registrations - 1));

	fab_disconnect(c);
	if (pid > 0) {
		int status;

		waitpid(pid, &status, 0);
	}
	fab_conn_destroy(c);
	fab_mr_dereg(mr);
	fab_cq_destroy(cq);
	fab_channel_destroy(ch);
	fab_close(fab);
	free(buf);
	free(src);
	return 0;
}
