// SPDX-License-Identifier: MIT
/*
 * test_fabric_leaks.cc - connections must not leak fds, threads or memory:
 * count /proc/self/fd and /proc/self/task around many connect/close cycles
 * (memory is LeakSanitizer's job in the sanitizer build).
 */
#include <dirent.h>
#include <malloc.h>

#include <thread>

#include "fab_test_util.h"
#include "support/rr_eventually.h"

using namespace fabtest;

namespace
{

int count_dir(const char *path)
{
	DIR *d = opendir(path);
	int n = 0;

	if (!d)
		return -1;
	while (struct dirent *e = readdir(d))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Threads exit asynchronously from the kernel's view (a joined thread can
 * still be listed until it is reaped): wait for the count, by the clock. */
int settled_tasks(int want)
{
	int n = -1;

	rrtest::eventually([&] {
		n = count_dir("/proc/self/task");
		return n == want;
	});
	return n;
}

/*
 * Threads before the cycles. ThreadSanitizer's runtime starts a background
 * thread of its own at the first pthread_create: create (and join) one
 * first, so that thread is in the baseline and only ours are compared.
 */
int baseline_tasks()
{
	std::thread([] {}).join();
	return count_dir("/proc/self/task");
}

/* fds and threads back to where they were; the heap did not grow after round 1
 * (ASan builds: LeakSanitizer finds what this misses). */
void expect_nothing_left(int fds0, int tasks0, size_t heap1)
{
	EXPECT_EQ(count_dir("/proc/self/fd"), fds0);
	size_t heap2 = mallinfo2().uordblks;
	EXPECT_LT(heap2, heap1 + 64 * 1024) << "heap grew by " << (heap2 - heap1) << " bytes";
	EXPECT_EQ(settled_tasks(tasks0), tasks0);
}

void one_cycle(struct fab_fabric *fab, struct fab_channel *sch, struct fab_channel *cch,
	       struct fab_cq *cq, struct fab_listener *lis, const std::string &addr, int i)
{
	struct fab_qp_caps caps = {8, 8, 1, 1, nullptr};
	struct fab_conn *cc = nullptr, *sc;
	struct fab_cm_event ev;
	struct fab_pd *pd;
	Buf sb, cb;

	(void)lis;
	ASSERT_EQ(fab_pd_get(fab, &pd), 0);
	ASSERT_EQ(sb.reg(pd, 4096, kAll), 0);
	ASSERT_EQ(cb.reg(pd, 4096, kAll), 0);
	ASSERT_EQ(fab_connect(fab, cch, addr.c_str(), cq, cq, &caps, nullptr, &cc), 0);
	ASSERT_TRUE(wait_event_type(sch, FAB_CM_CONNECT_REQUEST, &ev));
	sc = ev.conn;
	ASSERT_EQ(fab_conn_create_qp(sc, cq, cq, &caps), 0);
	ASSERT_EQ(post_one_recv(sc, sb, 0, 4096, 1), 0);
	ASSERT_EQ(post_one_recv(sc, sb, 0, 4096, 2), 0);
	ASSERT_EQ(fab_accept(sc, nullptr), 0);
	ASSERT_TRUE(wait_event_type(cch, FAB_CM_ESTABLISHED, &ev));
	ASSERT_TRUE(wait_event_type(sch, FAB_CM_ESTABLISHED, &ev));
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, cb, 0, 100, 3), 0);
	/* Alternate who hangs up; odd cycles destroy with work still outstanding. */
	if (i % 2 == 0) {
		struct fab_wc wc;

		ASSERT_TRUE(wait_wc(cq, &wc));
		ASSERT_TRUE(wait_wc(cq, &wc));
		ASSERT_EQ(fab_disconnect(sc), 0);
		ASSERT_TRUE(wait_event_type(cch, FAB_CM_DISCONNECTED, &ev));
		ASSERT_TRUE(wait_event_type(sch, FAB_CM_DISCONNECTED, &ev));
	}
	fab_conn_destroy(cc);
	fab_conn_destroy(sc);
	struct fab_wc wc[16];
	while (fab_cq_poll(cq, wc, 16) > 0)
		;
}

TEST(FabLeaks, ConnectCloseCyclesLeaveNothingBehind)
{
	struct fab_fabric *fab;
	struct fab_channel *sch, *cch;
	struct fab_listener *lis;
	struct fab_cq *cq;

	if (fab_open(nullptr, &fab) == -ENODEV)
		GTEST_SKIP() << "no RDMA device";
	/* Warm up once so lazily created process state is not counted. */
	ASSERT_EQ(fab_channel_create(fab, &sch), 0);
	fab_channel_destroy(sch);

	int fds0 = count_dir("/proc/self/fd"), tasks0 = baseline_tasks();
	size_t heap1 = 0;
	for (int round = 0; round < 4; round++) {
		/* Heap in use after a first round (lazy one-time allocations settled). */
		if (round == 1)
			heap1 = mallinfo2().uordblks;
		std::string addr;

		ASSERT_EQ(fab_channel_create(fab, &sch), 0);
		ASSERT_EQ(fab_channel_create(fab, &cch), 0);
		pump_register(sch);
		pump_register(cch);
		ASSERT_EQ(fab_cq_create(fab, 64, &cq), 0);
		/* odd rounds: TCP */
		ASSERT_EQ(listen_any(fab, sch, round % 2 == 1, &addr, &lis), 0) << fab_last_error();
		for (int i = 0; i < 20; i++) {
			one_cycle(fab, sch, cch, cq, lis, addr, i);
			if (HasFatalFailure())
				return;
		}
		/* A request nobody accepted is freed with its channel. */
		struct fab_conn *cc;
		struct fab_qp_caps caps = {4, 4, 1, 1, nullptr};
		struct fab_cm_event ev;
		struct fab_conn *cc2;
		ASSERT_EQ(fab_connect(fab, cch, addr.c_str(), cq, cq, &caps, nullptr, &cc), 0);
		ASSERT_TRUE(wait_event(sch, &ev));
		fab_conn_destroy(ev.conn); /* taken, never accepted */
		ASSERT_EQ(fab_connect(fab, cch, addr.c_str(), cq, cq, &caps, nullptr, &cc2), 0);
		struct pollfd p = {fab_channel_fd(sch), POLLIN, 0};
		ASSERT_EQ(poll(&p, 1, 5000), 1); /* queued, never taken */
		pump_unregister(sch);
		pump_unregister(cch);
		fab_listener_destroy(lis);
		fab_channel_destroy(sch);
		fab_conn_destroy(cc);
		fab_conn_destroy(cc2);
		fab_cq_destroy(cq);
		fab_channel_destroy(cch);
	}
	expect_nothing_left(fds0, tasks0, heap1);
	fab_close(fab);
}

/* An SRQ shared by connections that come and go, then destroyed with receives posted. */
TEST(FabLeaks, SrqCyclesLeaveNothingBehind)
{
	struct fab_fabric *fab;
	struct fab_channel *sch, *cch;
	struct fab_listener *lis;
	struct fab_cq *cq;
	struct fab_pd *pd;

	if (fab_open(nullptr, &fab) == -ENODEV)
		GTEST_SKIP() << "no RDMA device";
	ASSERT_EQ(fab_channel_create(fab, &sch), 0);
	fab_channel_destroy(sch);
	ASSERT_EQ(fab_pd_get(fab, &pd), 0);

	int fds0 = count_dir("/proc/self/fd"), tasks0 = baseline_tasks();
	size_t heap1 = 0;
	for (int round = 0; round < 4; round++) {
		struct fab_srq *srq;
		std::string addr;
		Buf rb, cb;

		if (round == 1)
			heap1 = mallinfo2().uordblks;
		ASSERT_EQ(fab_channel_create(fab, &sch), 0);
		ASSERT_EQ(fab_channel_create(fab, &cch), 0);
		pump_register(sch);
		pump_register(cch);
		ASSERT_EQ(fab_cq_create(fab, 64, &cq), 0);
		ASSERT_EQ(fab_srq_create(pd, 32, 1, &srq), 0) << fab_last_error();
		ASSERT_EQ(rb.reg(pd, 32 * 256, kAll), 0);
		ASSERT_EQ(cb.reg(pd, 256, kAll), 0);
		for (int i = 0; i < 32; i++)
			ASSERT_EQ(post_one_srq_recv(srq, rb, i * 256, 256, i), 0);
		ASSERT_EQ(listen_any(fab, sch, round % 2 == 1, &addr, &lis), 0) << fab_last_error();
		for (int i = 0; i < 10; i++) {
			struct fab_qp_caps ccaps = {8, 8, 1, 1, nullptr}, scaps = {8, 0, 1, 0, srq};
			struct fab_conn *cc, *sc;
			struct fab_cm_event ev;
			struct fab_wc wc[16];

			ASSERT_EQ(fab_connect(fab, cch, addr.c_str(), cq, cq, &ccaps, nullptr, &cc),
				  0);
			ASSERT_TRUE(wait_event_type(sch, FAB_CM_CONNECT_REQUEST, &ev));
			sc = ev.conn;
			ASSERT_EQ(fab_conn_create_qp(sc, cq, cq, &scaps), 0) << fab_last_error();
			ASSERT_EQ(fab_accept(sc, nullptr), 0);
			ASSERT_TRUE(wait_event_type(cch, FAB_CM_ESTABLISHED, &ev));
			ASSERT_TRUE(wait_event_type(sch, FAB_CM_ESTABLISHED, &ev));
			ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, cb, 0, 100, 100), 0);
			ASSERT_TRUE(wait_wc(cq, &wc[0]));
			ASSERT_TRUE(wait_wc(cq, &wc[1]));
			fab_conn_destroy(cc);
			fab_conn_destroy(sc);
			while (fab_cq_poll(cq, wc, 16) > 0)
				;
		}
		pump_unregister(sch);
		pump_unregister(cch);
		fab_listener_destroy(lis);
		/* 22 receives still posted: discarded with the SRQ. */
		ASSERT_EQ(fab_srq_destroy(srq), 0) << fab_last_error();
		fab_cq_destroy(cq);
		fab_channel_destroy(sch);
		fab_channel_destroy(cch);
	}
	expect_nothing_left(fds0, tasks0, heap1);
	fab_close(fab);
}

} // namespace
