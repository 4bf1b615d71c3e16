// SPDX-License-Identifier: MIT
/*
 * test_fabric_conformance.cc - RC semantics every fab.h provider must show.
 *
 * Written once against fab.h. CI runs it on "soft"; with a device, run it on
 * "verbs" with RPCRDMA_FABRIC=verbs RPCRDMA_FABRIC_ADDR=<local IP>. Cases that
 * only make sense on "soft" (its fault hooks, unix sockets) skip on "verbs".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <dirent.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <sys/wait.h>

#include <set>
#include <vector>

#ifdef FAB_WITH_VERBS
#include <netdb.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#endif

#include "fabric/fab_soft.h"
#include "fab_test_util.h"

using namespace fabtest;

namespace
{

/*
 * The RNR timer a receiver asks for when it wants its peer's Sends to wait
 * for a receive: the engine's (rr_accept.c, 640 us), not the IB CM's 655 ms.
 * On rdma_rxe an RNR wait longer than the sender's local ACK timeout (537 ms
 * since Linux 6.2's CM) is counted as a transport retry (docs/soft-roce.md).
 */
constexpr uint32_t kRnrTimerUs = 640;

/*
 * Linux's siw does not check the remote-read right of the memory an RDMA Read
 * Request names: it sends the response after siw_check_sgl_tx(pd, wqe, 0),
 * with no permission asked (6.1, siw_qp_tx.c, siw_qp_sq_process). A region
 * without remote read is read all the same (docs/devices.md).
 */
constexpr const char *kSiwReadRights =
    "siw answers an RDMA Read without checking the remote-read right "
    "(siw_qp_tx.c: siw_check_sgl_tx(pd, wqe, 0)); a device limit, not ours";

/* The running kernel is at least major.minor. */
bool kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma, mi;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma > major || (ma == major && mi >= minor);
}

/* The vendor id of the verbs device behind RPCRDMA_FABRIC_ADDR (0: none). */
uint32_t verbs_device_vendor()
{
#ifdef FAB_WITH_VERBS
	const char *ip = getenv("RPCRDMA_FABRIC_ADDR");
	struct addrinfo hints = {}, *ai = nullptr;
	struct rdma_cm_id *id = nullptr;
	struct ibv_device_attr a;
	uint32_t vendor = 0;

	hints.ai_flags = AI_NUMERICHOST;
	if (!ip || getaddrinfo(ip, nullptr, &hints, &ai))
		return 0;
	/* binding to the local address ties the id to that address's device */
	if (!rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP)) {
		if (!rdma_bind_addr(id, ai->ai_addr) && id->verbs && !ibv_query_device(id->verbs, &a))
			vendor = a.vendor_id;
		rdma_destroy_id(id);
	}
	freeaddrinfo(ai);
	return vendor;
#else
	return 0;
#endif
}

/*
 * The verbs device is rdma_rxe (Soft-RoCE): vendor id 0xFFFFFF (RXE_VENDOR_ID,
 * the kernel's rxe_param.h). Only there do the deviations of
 * docs/soft-roce.md get accepted.
 */
bool verbs_device_is_rxe()
{
	return verbs_device_vendor() == 0xFFFFFF;
}

/* The verbs device is siw (soft-iWARP): vendor id 0x626d74 (SIW_VENDOR_ID, siw.h). */
bool verbs_device_is_siw()
{
	return verbs_device_vendor() == 0x626d74;
}

class FabConf : public ::testing::Test
{
      protected:
	struct fab_fabric *fab = nullptr;
	struct fab_channel *sch = nullptr, *cch = nullptr;
	struct fab_cq *s_scq = nullptr, *s_rcq = nullptr, *c_scq = nullptr, *c_rcq = nullptr;
	struct fab_listener *lis = nullptr;
	struct fab_conn *sc = nullptr, *cc = nullptr;
	struct fab_pd *pd = nullptr;
	struct fab_qp_caps caps = {32, 32, 4, 4, nullptr};
	std::string addr;
	bool soft = false;
	/* an iWARP device on verbs (siw, iw_cxgb4, irdma in iWARP mode), and
	 * the SGEs one RDMA Read may scatter into there */
	bool iwarp = false;
	uint32_t read_sge = 2;
	struct fab_cm_event s_req = {}, c_est = {};
	bool own_pd = false; /* connect_pair gives the accepting side a PD of its own */
	struct fab_pd *sc_pd = nullptr; /* that PD, freed after the test's regions */

	void SetUp() override
	{
		int rc = fab_open(nullptr, &fab);

		if (rc == -ENODEV)
			GTEST_SKIP() << "no RDMA device: " << fab_last_error();
		ASSERT_EQ(rc, 0) << fab_last_error();
		soft = provider_is_soft(fab);
		struct fab_limits lim = {};
		if (!soft && !fab_device_limits(fab, &lim)) {
			iwarp = lim.transport == FAB_TRANSPORT_IWARP;
			read_sge = lim.max_read_sge;
		}
		ASSERT_EQ(fab_channel_create(fab, &sch), 0);
		ASSERT_EQ(fab_channel_create(fab, &cch), 0);
		pump_register(sch);
		pump_register(cch);
		ASSERT_EQ(fab_cq_create(fab, 64, &s_scq), 0);
		ASSERT_EQ(fab_cq_create(fab, 64, &s_rcq), 0);
		ASSERT_EQ(fab_cq_create(fab, 64, &c_scq), 0);
		ASSERT_EQ(fab_cq_create(fab, 64, &c_rcq), 0);
		ASSERT_EQ(fab_pd_get(fab, &pd), 0);
	}

	void TearDown() override
	{
		fab_conn_destroy(sc);
		fab_conn_destroy(cc);
		fab_listener_destroy(lis);
		fab_cq_destroy(s_scq);
		fab_cq_destroy(s_rcq);
		fab_cq_destroy(c_scq);
		fab_cq_destroy(c_rcq);
		pump_unregister(sch);
		pump_unregister(cch);
		fab_channel_destroy(sch);
		fab_channel_destroy(cch);
		fab_close(fab);
	}

	void listen(bool tcp = false)
	{
		ASSERT_EQ(listen_any(fab, sch, tcp, &addr, &lis), 0) << fab_last_error();
	}

	/* Connect cc -> sc; before accepting, prepost server receives via prepost(). */
	template <typename F>
	void connect_pair(F prepost, const struct fab_conn_param *cp = nullptr,
			  const struct fab_conn_param *ap = nullptr)
	{
		struct fab_conn_param def = {};
		struct fab_cm_event ev;

		def.responder_resources = 4;
		def.initiator_depth = 4;
		if (!lis)
			listen();
		ASSERT_EQ(
		    fab_connect(fab, cch, addr.c_str(), c_scq, c_rcq, &caps, cp ? cp : &def, &cc),
		    0)
		    << fab_last_error();
		ASSERT_TRUE(wait_event_type(sch, FAB_CM_CONNECT_REQUEST, &s_req));
		sc = s_req.conn;
		EXPECT_EQ(s_req.listener, lis);
		if (own_pd) {
			ASSERT_EQ(fab_conn_own_pd(sc, &sc_pd), 0) << fab_last_error();
		}
		ASSERT_EQ(fab_conn_create_qp(sc, s_scq, s_rcq, &caps), 0) << fab_last_error();
		prepost();
		ASSERT_EQ(fab_accept(sc, ap ? ap : &def), 0) << fab_last_error();
		ASSERT_TRUE(wait_event_type(cch, FAB_CM_ESTABLISHED, &c_est));
		EXPECT_EQ(c_est.conn, cc);
		ASSERT_TRUE(wait_event_type(sch, FAB_CM_ESTABLISHED, &ev));
		EXPECT_EQ(ev.conn, sc);
	}

	void connect_pair()
	{
		connect_pair([] {});
	}

	/*
	 * The peer refused what the client's WR id asked of it (a bad STag,
	 * bounds or rights). IB and RoCE answer with a NAK: the WR completes
	 * with a remote access error. iWARP (RDMAP over TCP) does not: a Write
	 * is done once TCP has it, and the responder that finds the fault
	 * sends a TERMINATE and closes the stream (siw: siw_init_terminate,
	 * then the connection drops). So there the WR may complete with any
	 * status, or be left for the flush, and what must hold is that the
	 * connection ends on both sides. Each test checks the memory itself.
	 */
	void expect_remote_error(uint64_t id)
	{
		if (!iwarp) {
			expect_wc(c_scq, id, FAB_WC_REM_ACCESS_ERR);
			return;
		}
		expect_connection_ends();
	}

	/* ch is told its connection ended: DISCONNECTED, or before it the
	 * asynchronous QP error that a TERMINATE raises (siw) */
	bool told_end(struct fab_channel *ch)
	{
		struct fab_cm_event ev;

		while (wait_event(ch, &ev))
			if (ev.type == FAB_CM_DISCONNECTED || ev.type == FAB_CM_QP_ERROR)
				return true;
		return false;
	}

	/* Both sides are told the connection ended. */
	void expect_connection_ends()
	{
		EXPECT_TRUE(told_end(cch)) << "the connecting side was not told";
		EXPECT_TRUE(told_end(sch)) << "the accepting side was not told";
	}

	/* Expect the next completion on cq to be (id, status). */
	void expect_wc(struct fab_cq *cq, uint64_t id, enum fab_wc_status st,
		       struct fab_wc *out = nullptr)
	{
		struct fab_wc wc;

		ASSERT_TRUE(wait_wc(cq, &wc)) << "no completion for wr_id " << id;
		EXPECT_EQ(wc.wr_id, id);
		EXPECT_EQ(wc.status, st) << "wr_id " << id;
		if (out)
			*out = wc;
	}
};

TEST_F(FabConf, WriteThenSendOrdering)
{
	Buf target, msg, src, cmsg;

	ASSERT_EQ(target.reg(pd, 256 * 1024, kAll), 0);
	ASSERT_EQ(msg.reg(pd, 256, kAll), 0);
	connect_pair([&] { ASSERT_EQ(post_one_recv(sc, msg, 0, 256, 7), 0); });
	ASSERT_EQ(src.reg(fab_conn_pd(cc), 256 * 1024, kAll), 0);
	ASSERT_EQ(cmsg.reg(fab_conn_pd(cc), 256, kAll), 0);
	src.fill(3);
	cmsg.fill(9);
	/* Four unsignalled Writes, then the Send that announces them. */
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(post_one_send(cc, FAB_WR_RDMA_WRITE, src, i * 65536, 65536, 100 + i,
					false, target.raddr(i * 65536), target.mr->rkey),
			  0);
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, cmsg, 0, 64, 200), 0);
	struct fab_wc wc;
	expect_wc(s_rcq, 7, FAB_WC_SUCCESS, &wc);
	EXPECT_EQ(wc.opcode, FAB_WC_RECV);
	EXPECT_EQ(wc.byte_len, 64u);
	EXPECT_EQ(wc.conn, sc);
	EXPECT_TRUE(target.check(3)) << "Writes not visible when the Send arrived";
	EXPECT_EQ(memcmp(msg.p(), cmsg.p(), 64), 0);
	expect_wc(c_scq, 200, FAB_WC_SUCCESS, &wc);
	EXPECT_EQ(wc.opcode, FAB_WC_SEND);
	EXPECT_EQ(wc.conn, cc);
	EXPECT_TRUE(cq_quiet(c_scq)) << "unsignalled Writes produced completions";

	struct fab_stats st;
	fab_get_stats(fab, &st);
	EXPECT_GE(st.wr_posted[FAB_WR_RDMA_WRITE], 4u);
	EXPECT_GE(st.bytes[FAB_WR_RDMA_WRITE], 4u * 65536);
	EXPECT_GE(st.wr_posted[FAB_WR_SEND], 1u);
	EXPECT_GE(st.registrations, 4u);
}

TEST_F(FabConf, RdmaRead)
{
	Buf remote, local;

	ASSERT_EQ(remote.reg(pd, 100000, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_READ), 0);
	remote.fill(5);
	connect_pair();
	/* iWARP: the Read's response is tagged placement into the sink, which
	 * needs remote write (docs/devices.md) */
	ASSERT_EQ(local.reg(fab_conn_pd(cc), 100000,
			    FAB_ACCESS_LOCAL_WRITE | (iwarp ? FAB_ACCESS_REMOTE_WRITE : 0)),
		  0);
	/* Two SGEs on the local side scatter one Read, where the device takes
	 * two (iWARP: one, max_sge_rd) */
	struct fab_sge sg[2] = {local.sge(0, 30000), local.sge(30000, 70000)};
	if (read_sge < 2)
		sg[0] = local.sge(0, 100000);
	struct fab_send_wr wr = {};
	wr.wr_id = 11;
	wr.opcode = FAB_WR_RDMA_READ;
	wr.sg_list = sg;
	wr.num_sge = read_sge < 2 ? 1 : 2;
	wr.signaled = true;
	wr.remote_addr = remote.raddr();
	wr.rkey = remote.mr->rkey;
	ASSERT_EQ(fab_post_send(cc, &wr, nullptr), 0);
	struct fab_wc wc;
	expect_wc(c_scq, 11, FAB_WC_SUCCESS, &wc);
	EXPECT_EQ(wc.opcode, FAB_WC_RDMA_READ);
	EXPECT_TRUE(local.check(5));
}

TEST_F(FabConf, RnrMovesBothQpsToError)
{
	Buf b, sb;

	ASSERT_EQ(b.reg(pd, 4096, kAll), 0);
	connect_pair(); /* no receives posted on the server */
	ASSERT_EQ(sb.reg(fab_conn_pd(cc), 4096, kAll), 0);
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, sb, 0, 64, 1), 0);
	if (iwarp) {
		/* no RNR on iWARP: the receiver terminates the connection */
		expect_connection_ends();
		return;
	}
	expect_wc(c_scq, 1, FAB_WC_RNR_RETRY_EXC_ERR);
	/* The sender's QP is in error: what follows is flushed. */
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, sb, 0, 64, 2), 0);
	expect_wc(c_scq, 2, FAB_WC_WR_FLUSH_ERR);
	if (!soft)
		return; /* on IB the responder QP survives an RNR NAK */
	ASSERT_EQ(post_one_recv(sc, b, 0, 4096, 3), 0);
	expect_wc(s_rcq, 3, FAB_WC_WR_FLUSH_ERR);
}

/*
 * With rnr_retry_count 7 (retry forever) a Send waits for the receive instead.
 * As in IB CM, the count a side gives at connect/accept is the one its PEER
 * uses: the accepting side's 7 lets the connecting side's Send wait. The
 * short RNR timer makes the Send retry many times while it waits; the
 * connecting side's retry_count stays 0, so a transport timeout fails it.
 */
TEST_F(FabConf, RnrRetryWaitsForAReceive)
{
	Buf b, sb;
	struct fab_conn_param cp = {}, ap = {};

	if (iwarp)
		GTEST_SKIP() << "iWARP has no RNR retry: a Send that finds no receive ends the "
				"connection (RnrMovesBothQpsToError)";
	cp.responder_resources = 4;
	cp.initiator_depth = 4;
	ap.responder_resources = 4;
	ap.initiator_depth = 4;
	ap.rnr_retry_count = 7;
	ap.rnr_timer_us = kRnrTimerUs;
	ASSERT_EQ(b.reg(pd, 4096, kAll), 0);
	connect_pair([] {}, &cp, &ap);
	ASSERT_EQ(sb.reg(fab_conn_pd(cc), 4096, kAll), 0);
	sb.fill(8);
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, sb, 0, 64, 1), 0);
	EXPECT_TRUE(cq_quiet(c_scq, 50));
	ASSERT_EQ(post_one_recv(sc, b, 0, 4096, 2), 0);
	expect_wc(s_rcq, 2, FAB_WC_SUCCESS);
	expect_wc(c_scq, 1, FAB_WC_SUCCESS);
	EXPECT_EQ(memcmp(b.p(), sb.p(), 64), 0);
}

/* A Send stuck retrying RNR does not hide the sender's disconnect from the receiver. */
TEST_F(FabConf, DisconnectDuringRnrRetry)
{
	Buf sb;
	struct fab_conn_param cp = {}, ap = {};
	struct fab_cm_event ev;

	if (iwarp)
		GTEST_SKIP() << "iWARP has no RNR retry: a Send that finds no receive ends the "
				"connection (RnrMovesBothQpsToError)";
	ap.responder_resources = 4;
	ap.initiator_depth = 4;
	ap.rnr_retry_count = 7; /* the connecting side's Sends retry forever */
	connect_pair([] {}, &cp, &ap);
	ASSERT_EQ(sb.reg(fab_conn_pd(cc), 4096, kAll), 0);
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, sb, 0, 64, 1), 0);
	usleep(30000);
	ASSERT_EQ(fab_disconnect(cc), 0);
	expect_wc(c_scq, 1, FAB_WC_WR_FLUSH_ERR);
	ASSERT_TRUE(wait_event_type(cch, FAB_CM_DISCONNECTED, &ev));
	ASSERT_TRUE(wait_event_type(sch, FAB_CM_DISCONNECTED, &ev));
	EXPECT_EQ(ev.conn, sc);
}

TEST_F(FabConf, BadRkeyIsRemoteAccessError)
{
	Buf target, src;

	ASSERT_EQ(target.reg(pd, 4096, kAll), 0);
	connect_pair();
	ASSERT_EQ(src.reg(fab_conn_pd(cc), 4096, kAll), 0);
	ASSERT_EQ(post_one_send(cc, FAB_WR_RDMA_WRITE, src, 0, 512, 1, true, target.raddr(),
				target.mr->rkey ^ 0x00ffff00u),
		  0);
	if (iwarp) {
		expect_remote_error(1);
		EXPECT_EQ(target.p()[0], 0) << "a refused Write touched memory";
		return;
	}
	expect_wc(c_scq, 1, FAB_WC_REM_ACCESS_ERR);
	ASSERT_EQ(post_one_send(cc, FAB_WR_RDMA_WRITE, src, 0, 512, 2, true, target.raddr(),
				target.mr->rkey),
		  0);
	expect_wc(c_scq, 2, FAB_WC_WR_FLUSH_ERR);
}

/*
 * What the transport's iWARP Read sinks rely on (docs/devices.md, "iWARP"):
 * a sink registered with remote write for its Read, and deregistered when
 * the Read completes, takes no Write afterwards. The peer saw the sink's
 * STag in the Read Request (iWARP carries it on the wire) and replays it:
 * the Write fails and the sink keeps the bytes its Read placed.
 */
TEST_F(FabConf, SinkStagDeadAfterItsRead)
{
	Buf src, sink, replay;

	connect_pair();
	ASSERT_EQ(src.reg(pd, 8192, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_READ), 0);
	src.fill(3);
	ASSERT_EQ(sink.reg(fab_conn_pd(cc), 8192,
			   FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE),
		  0);
	ASSERT_EQ(post_one_send(cc, FAB_WR_RDMA_READ, sink, 0, 8192, 21, true, src.raddr(),
				src.mr->rkey),
		  0);
	expect_wc(c_scq, 21, FAB_WC_SUCCESS);
	ASSERT_TRUE(sink.check(3));

	uint32_t stag = sink.mr->rkey;
	fab_mr_dereg(sink.mr);
	sink.mr = nullptr;
	ASSERT_EQ(replay.reg(fab_conn_pd(sc), 4096, kAll), 0);
	replay.fill(9);
	ASSERT_EQ(post_one_send(sc, FAB_WR_RDMA_WRITE, replay, 0, 512, 22, true, sink.raddr(), stag),
		  0);
	if (iwarp)
		expect_connection_ends(); /* TERMINATE, see expect_remote_error */
	else
		expect_wc(s_scq, 22, FAB_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(sink.check(3)) << "a Write by a withdrawn STag changed the sink";
}

/*
 * A connection with a protection domain of its own (fab_conn_own_pd, as
 * svcrdma gives each connection one): what is registered there with remote
 * write takes Writes from that connection's peer, and none from the peer of
 * another connection that names the same STag. This is what keeps a Read
 * sink on iWARP, exposed while its Read is in flight, out of every other
 * peer's reach (docs/devices.md).
 */
TEST_F(FabConf, OwnPdStagReachableThroughItsConnectionOnly)
{
	Buf region, src, src2;

	own_pd = true;
	connect_pair();
	struct fab_pd *own = fab_conn_pd(sc);
	ASSERT_EQ(own, sc_pd);
	EXPECT_NE(own, pd) << "the connection kept the device's protection domain";
	ASSERT_EQ(region.reg(own, 4096, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE), 0)
	    << fab_last_error();
	ASSERT_EQ(src.reg(fab_conn_pd(cc), 4096, kAll), 0);
	src.fill(5);
	ASSERT_EQ(post_one_send(cc, FAB_WR_RDMA_WRITE, src, 0, 4096, 1, true, region.raddr(),
				region.mr->rkey),
		  0);
	expect_wc(c_scq, 1, FAB_WC_SUCCESS);
	/* iWARP completes a Write once TCP has it: placement may follow */
	for (int i = 0; i < 200 && !region.check(5); i++)
		usleep(10000);
	ASSERT_TRUE(region.check(5)) << "its own connection's Write did not land";

	/* A second connection to the same listener, in the device's PD. */
	struct fab_cq *c2_scq = nullptr, *c2_rcq = nullptr;
	struct fab_conn *cc2 = nullptr, *sc2 = nullptr;
	struct fab_conn_param def = {};
	struct fab_cm_event ev;
	def.responder_resources = 4;
	def.initiator_depth = 4;
	ASSERT_EQ(fab_cq_create(fab, 64, &c2_scq), 0);
	ASSERT_EQ(fab_cq_create(fab, 64, &c2_rcq), 0);
	ASSERT_EQ(fab_connect(fab, cch, addr.c_str(), c2_scq, c2_rcq, &caps, &def, &cc2), 0)
	    << fab_last_error();
	ASSERT_TRUE(wait_event_type(sch, FAB_CM_CONNECT_REQUEST, &ev));
	sc2 = ev.conn;
	ASSERT_EQ(fab_conn_create_qp(sc2, s_scq, s_rcq, &caps), 0) << fab_last_error();
	ASSERT_EQ(fab_accept(sc2, &def), 0) << fab_last_error();
	ASSERT_TRUE(wait_event_type(cch, FAB_CM_ESTABLISHED, &ev));
	ASSERT_TRUE(wait_event_type(sch, FAB_CM_ESTABLISHED, &ev));

	ASSERT_EQ(src2.reg(fab_conn_pd(cc2), 4096, kAll), 0);
	src2.fill(9);
	ASSERT_EQ(post_one_send(cc2, FAB_WR_RDMA_WRITE, src2, 0, 4096, 2, true, region.raddr(),
				region.mr->rkey),
		  0);
	if (iwarp) {
		/* TERMINATE: connection 2 ends (see expect_remote_error) */
		EXPECT_TRUE(told_end(cch)) << "the writing side was not told";
	} else {
		expect_wc(c2_scq, 2, FAB_WC_REM_ACCESS_ERR);
	}
	usleep(100000); /* a Write that wrongly went through has landed by now */
	EXPECT_TRUE(region.check(5)) << "another connection's peer wrote into the region";

	fab_conn_destroy(sc2);
	fab_conn_destroy(cc2);
	fab_cq_destroy(c2_scq);
	fab_cq_destroy(c2_rcq);
	fab_conn_destroy(sc);
	sc = nullptr;
	fab_mr_dereg(region.mr);
	region.mr = nullptr;
	fab_pd_free(sc_pd);
}

TEST_F(FabConf, OutOfBoundsIsRemoteAccessError)
{
	Buf target, src;

	ASSERT_EQ(target.reg(pd, 4096, kAll), 0);
	connect_pair();
	ASSERT_EQ(src.reg(fab_conn_pd(cc), 4096, kAll), 0);
	/* Ends 8 bytes past the region. */
	ASSERT_EQ(post_one_send(cc, FAB_WR_RDMA_READ, src, 0, 64, 1, true, target.raddr(4096 - 56),
				target.mr->rkey),
		  0);
	expect_remote_error(1);
}

TEST_F(FabConf, WriteOutOfBoundsIsRemoteAccessError)
{
	Buf target, src;

	ASSERT_EQ(target.reg(pd, 4096, kAll), 0);
	connect_pair();
	ASSERT_EQ(src.reg(fab_conn_pd(cc), 8192, kAll), 0);
	ASSERT_EQ(post_one_send(cc, FAB_WR_RDMA_WRITE, src, 0, 4097, 1, true, target.raddr(),
				target.mr->rkey),
		  0);
	expect_remote_error(1);
	EXPECT_EQ(target.p()[0], 0) << "a failed Write touched memory";
}

TEST_F(FabConf, AccessRightsViolation)
{
	Buf ro, src;

	/* Readable only: a Write must fail on the owning side. */
	ASSERT_EQ(ro.reg(pd, 4096, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_READ), 0);
	connect_pair();
	ASSERT_EQ(src.reg(fab_conn_pd(cc), 4096, kAll), 0);
	src.fill(1);
	ASSERT_EQ(
	    post_one_send(cc, FAB_WR_RDMA_WRITE, src, 0, 128, 1, true, ro.raddr(), ro.mr->rkey), 0);
	expect_remote_error(1);
	EXPECT_EQ(ro.p()[0], 0);
}

TEST_F(FabConf, ReadNeedsRemoteReadRight)
{
	Buf wo, dst;

	if (iwarp && verbs_device_is_siw())
		GTEST_SKIP() << kSiwReadRights;
	ASSERT_EQ(wo.reg(pd, 4096, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE), 0);
	connect_pair();
	ASSERT_EQ(dst.reg(fab_conn_pd(cc), 4096, kAll), 0);
	ASSERT_EQ(
	    post_one_send(cc, FAB_WR_RDMA_READ, dst, 0, 128, 1, true, wo.raddr(), wo.mr->rkey), 0);
	expect_remote_error(1);
}

/* Local write only (what the transport's Read sinks get): the memory is the
 * target of the owner's own RDMA Read responses, and no peer may write or
 * read it whatever key it presents (verbs: IBV_ACCESS_LOCAL_WRITE alone). */
TEST_F(FabConf, LocalWriteOnlyRefusesRemoteWrite)
{
	Buf lw, src;

	ASSERT_EQ(lw.reg(pd, 4096, FAB_ACCESS_LOCAL_WRITE), 0);
	connect_pair();
	ASSERT_EQ(src.reg(fab_conn_pd(cc), 4096, kAll), 0);
	src.fill(1);
	ASSERT_EQ(
	    post_one_send(cc, FAB_WR_RDMA_WRITE, src, 0, 128, 1, true, lw.raddr(), lw.mr->rkey), 0);
	expect_remote_error(1);
	EXPECT_EQ(lw.p()[0], 0) << "a refused Write touched memory";
}

TEST_F(FabConf, LocalWriteOnlyRefusesRemoteRead)
{
	Buf lw, dst;

	if (iwarp && verbs_device_is_siw())
		GTEST_SKIP() << kSiwReadRights;
	ASSERT_EQ(lw.reg(pd, 4096, FAB_ACCESS_LOCAL_WRITE), 0);
	connect_pair();
	ASSERT_EQ(dst.reg(fab_conn_pd(cc), 4096, kAll), 0);
	ASSERT_EQ(
	    post_one_send(cc, FAB_WR_RDMA_READ, dst, 0, 128, 1, true, lw.raddr(), lw.mr->rkey), 0);
	expect_remote_error(1);
}

TEST_F(FabConf, SendWithInvalidate)
{
	if (!soft)
		GTEST_SKIP() << "remote invalidate needs FRWR-registered MRs on verbs";
	Buf cbuf, crecv, smsg, ssrc;

	connect_pair();
	/* The requester (client) exposes cbuf; the responder invalidates it with its reply. */
	ASSERT_EQ(cbuf.reg(fab_conn_pd(cc), 4096, kAll), 0);
	ASSERT_EQ(crecv.reg(fab_conn_pd(cc), 1024, kAll), 0);
	ASSERT_EQ(smsg.reg(pd, 1024, kAll), 0);
	ASSERT_EQ(ssrc.reg(pd, 4096, kAll), 0);
	ASSERT_EQ(post_one_recv(cc, crecv, 0, 1024, 50), 0);
	/* Before: the Write works. */
	ASSERT_EQ(post_one_send(sc, FAB_WR_RDMA_WRITE, ssrc, 0, 256, 1, true, cbuf.raddr(),
				cbuf.mr->rkey),
		  0);
	expect_wc(s_scq, 1, FAB_WC_SUCCESS);
	ASSERT_EQ(
	    post_one_send(sc, FAB_WR_SEND_WITH_INV, smsg, 0, 100, 2, true, 0, 0, cbuf.mr->rkey), 0);
	expect_wc(s_scq, 2, FAB_WC_SUCCESS);
	struct fab_wc wc;
	expect_wc(c_rcq, 50, FAB_WC_SUCCESS, &wc);
	EXPECT_TRUE(wc.with_inv);
	EXPECT_EQ(wc.inv_rkey, cbuf.mr->rkey);
	EXPECT_EQ(wc.byte_len, 100u);
	/* After: the invalidated rkey is refused. */
	ASSERT_EQ(post_one_send(sc, FAB_WR_RDMA_WRITE, ssrc, 0, 256, 3, true, cbuf.raddr(),
				cbuf.mr->rkey),
		  0);
	expect_wc(s_scq, 3, FAB_WC_REM_ACCESS_ERR);
}

/*
 * Device removal (FAB_CM_DEVICE_REMOVAL, fab.h): every conn and the listener
 * are told, posted work flushes, and nothing new can be made on the fabric
 * until the device is back; then fab_listen works again. On verbs a real
 * removal (rdma link delete) is the interop VM's test (ci/vm); here the soft
 * provider's simulation, which client and server share.
 */
TEST_F(FabConf, DeviceRemovalFlushesAndListensAgain)
{
	Buf sb, cb;
	struct fab_cm_event ev;
	struct fab_mr *mr = nullptr;
	struct fab_pd *p2 = nullptr;
	struct fab_cq *cq2 = nullptr;
	struct fab_listener *l2 = nullptr;
	std::string a2;
	bool lis_told = false, sc_told = false;

	if (!soft)
		GTEST_SKIP() << "needs the soft provider's simulated removal";
	ASSERT_EQ(sb.reg(pd, 4096, kAll), 0);
	connect_pair([&] {
		for (int i = 0; i < 4; i++)
			ASSERT_EQ(post_one_recv(sc, sb, i * 1024, 1024, 10 + i), 0);
	});
	ASSERT_EQ(cb.reg(fab_conn_pd(cc), 4096, kAll), 0);
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(post_one_recv(cc, cb, i * 1024, 1024, 20 + i), 0);

	ASSERT_EQ(fab_soft_device_remove(fab), 0);
	/* The server's channel: one event for the listener, one for its conn. */
	for (int i = 0; i < 2 && wait_event_type(sch, FAB_CM_DEVICE_REMOVAL, &ev); i++) {
		EXPECT_EQ(ev.status, -ENODEV);
		if (ev.conn == sc)
			sc_told = true;
		else if (!ev.conn && ev.listener == lis)
			lis_told = true;
	}
	EXPECT_TRUE(sc_told && lis_told) << "conn told " << sc_told << ", listener " << lis_told;
	ASSERT_TRUE(wait_event_type(cch, FAB_CM_DEVICE_REMOVAL, &ev));
	EXPECT_EQ(ev.conn, cc);
	for (int i = 0; i < 4; i++)
		expect_wc(s_rcq, 10 + i, FAB_WC_WR_FLUSH_ERR);
	for (int i = 0; i < 2; i++)
		expect_wc(c_rcq, 20 + i, FAB_WC_WR_FLUSH_ERR);
	/* No DISCONNECTED follows a removal. */
	usleep(100000);
	EXPECT_FALSE(wait_event(sch, &ev, 0)) << "unexpected event " << ev.type;

	/* Gone: nothing new can be made. */
	EXPECT_EQ(fab_pd_get(fab, &p2), -ENODEV);
	EXPECT_EQ(fab_mr_reg(pd, sb.p(), 4096, FAB_ACCESS_LOCAL_WRITE, &mr), -ENODEV);
	EXPECT_EQ(fab_cq_create(fab, 16, &cq2), -ENODEV);
	EXPECT_EQ(listen_any(fab, sch, false, &a2, &l2), -ENODEV);
	/* What was made before is the user's to destroy, as on verbs. */
	fab_conn_destroy(sc);
	fab_conn_destroy(cc);
	fab_listener_destroy(lis);
	sc = cc = nullptr;
	lis = nullptr;

	ASSERT_EQ(fab_soft_device_restore(fab), 0);
	connect_pair([&] { ASSERT_EQ(post_one_recv(sc, sb, 0, 1024, 30), 0); });
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, cb, 0, 64, 31), 0);
	expect_wc(s_rcq, 30, FAB_WC_SUCCESS);
	expect_wc(c_scq, 31, FAB_WC_SUCCESS);
}

TEST_F(FabConf, DisconnectFlushesEverything)
{
	Buf sb, cb;

	ASSERT_EQ(sb.reg(pd, 4096, kAll), 0);
	connect_pair([&] {
		for (int i = 0; i < 4; i++)
			ASSERT_EQ(post_one_recv(sc, sb, i * 1024, 1024, 10 + i), 0);
	});
	ASSERT_EQ(cb.reg(fab_conn_pd(cc), 4096, kAll), 0);
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(post_one_recv(cc, cb, i * 1024, 1024, 20 + i), 0);
	ASSERT_EQ(fab_disconnect(cc), 0);
	struct fab_cm_event ev;
	ASSERT_TRUE(wait_event_type(cch, FAB_CM_DISCONNECTED, &ev));
	EXPECT_EQ(ev.conn, cc);
	ASSERT_TRUE(wait_event_type(sch, FAB_CM_DISCONNECTED, &ev));
	EXPECT_EQ(ev.conn, sc);
	for (int i = 0; i < 2; i++)
		expect_wc(c_rcq, 20 + i, FAB_WC_WR_FLUSH_ERR);
	if (soft) {
		for (int i = 0; i < 4; i++)
			expect_wc(s_rcq, 10 + i, FAB_WC_WR_FLUSH_ERR);
	} else {
		/* rdma_cm leaves the passive QP's state to the consumer. */
		ASSERT_EQ(fab_disconnect(sc), 0);
		for (int i = 0; i < 4; i++)
			expect_wc(s_rcq, 10 + i, FAB_WC_WR_FLUSH_ERR);
	}
	/* A second disconnect is harmless and raises no new event. */
	EXPECT_EQ(fab_disconnect(cc), 0);
	EXPECT_FALSE(wait_event(cch, &ev, 100));
}

TEST_F(FabConf, PrivateDataOnConnectAndAccept)
{
	uint8_t req[FAB_PRIVATE_DATA_MAX], rep[40];
	struct fab_conn_param cp = {}, ap = {};

	for (size_t i = 0; i < sizeof(req); i++)
		req[i] = (uint8_t)(0xa0 + i);
	for (size_t i = 0; i < sizeof(rep); i++)
		rep[i] = (uint8_t)(0x30 + i);
	cp.private_data = req;
	cp.private_data_len = sizeof(req);
	cp.responder_resources = 3;
	cp.initiator_depth = 5;
	ap.private_data = rep;
	ap.private_data_len = sizeof(rep);
	ap.responder_resources = 5;
	ap.initiator_depth = 3;
	connect_pair([] {}, &cp, &ap);
	ASSERT_GE(s_req.private_data_len, sizeof(req));
	EXPECT_EQ(memcmp(s_req.private_data, req, sizeof(req)), 0);
	/* Depths arrive in the receiver's view (as rdma_cm reports them): the
	 * Reads the server may issue are the client's responder_resources. */
	EXPECT_EQ(s_req.responder_resources, 5);
	EXPECT_EQ(s_req.initiator_depth, 3);
	/* IB pads the REP's private data; the bytes sent come first. */
	ASSERT_GE(c_est.private_data_len, sizeof(rep));
	EXPECT_EQ(memcmp(c_est.private_data, rep, sizeof(rep)), 0);
	if (iwarp) {
		/* iw_cm hands the connecting side the depths as the accepting
		 * side gave them, not turned into the receiver's view as IB CM
		 * does (measured on siw, Linux 6.1). A server sizes its Reads
		 * from the request's depths above, which agree on both. */
		EXPECT_EQ(c_est.responder_resources, 5);
		EXPECT_EQ(c_est.initiator_depth, 3);
	} else {
		EXPECT_EQ(c_est.responder_resources, 3);
		EXPECT_EQ(c_est.initiator_depth, 5);
	}
	EXPECT_NE(std::string(fab_conn_peer(sc)), "");
}

TEST_F(FabConf, PrivateDataOnReject)
{
	uint8_t rej[20];
	struct fab_cm_event ev;

	for (size_t i = 0; i < sizeof(rej); i++)
		rej[i] = (uint8_t)(0x11 * i);
	listen();
	struct fab_conn_param cp = {};
	ASSERT_EQ(fab_connect(fab, cch, addr.c_str(), c_scq, c_rcq, &caps, &cp, &cc), 0);
	ASSERT_TRUE(wait_event_type(sch, FAB_CM_CONNECT_REQUEST, &ev));
	sc = ev.conn;
	ASSERT_EQ(fab_reject(sc, rej, sizeof(rej)), 0);
	ASSERT_TRUE(wait_event_type(cch, FAB_CM_REJECTED, &ev));
	EXPECT_EQ(ev.conn, cc);
	ASSERT_GE(ev.private_data_len, sizeof(rej));
	EXPECT_EQ(memcmp(ev.private_data, rej, sizeof(rej)), 0);
	/* Too much private data is refused up front. */
	uint8_t big[FAB_PRIVATE_DATA_MAX + 1] = {};
	EXPECT_EQ(fab_reject(sc, big, sizeof(big)), -EINVAL);
}

TEST_F(FabConf, ConnectToNobodyIsConnectError)
{
	if (!soft)
		GTEST_SKIP() << "address resolution timing differs on verbs";
	struct fab_cm_event ev;

	ASSERT_EQ(fab_connect(fab, cch, "unix:/tmp/rr-fab-nobody-listens.sock", c_scq, c_rcq, &caps,
			      nullptr, &cc),
		  0);
	ASSERT_TRUE(wait_event_type(cch, FAB_CM_CONNECT_ERROR, &ev));
	EXPECT_EQ(ev.conn, cc);
	EXPECT_LT(ev.status, 0);
	fab_conn_destroy(cc);
	cc = nullptr;
	ASSERT_EQ(fab_connect(fab, cch, "tcp:127.0.0.1:1", c_scq, c_rcq, &caps, nullptr, &cc), 0);
	ASSERT_TRUE(wait_event_type(cch, FAB_CM_CONNECT_ERROR, &ev));
	EXPECT_EQ(ev.status, -ECONNREFUSED);
}

TEST_F(FabConf, ReceiveTooSmallIsLengthError)
{
	Buf sb, cb;

	ASSERT_EQ(sb.reg(pd, 4096, kAll), 0);
	connect_pair([&] {
		ASSERT_EQ(post_one_recv(sc, sb, 0, 16, 1), 0);
		ASSERT_EQ(post_one_recv(sc, sb, 16, 16, 2), 0);
	});
	ASSERT_EQ(cb.reg(fab_conn_pd(cc), 4096, kAll), 0);
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, cb, 0, 64, 9), 0);
	/*
	 * IB (responder class C error, completion status "Local Length
	 * Error"): LOC_LEN_ERR at the receiver. Soft-RoCE (rdma_rxe, Linux
	 * 6.1 in ci/vm) completes the receive with Local QP Operation Error
	 * instead - the spec's status for a malformed WQE, which is the path
	 * rxe takes because its copy_data() fails with -EINVAL (it NAKs the
	 * sender with Remote Operation Error, as for a malformed WQE, not
	 * Invalid Request). That one alternative, on verbs only.
	 */
	struct fab_wc rw;
	ASSERT_TRUE(wait_wc(s_rcq, &rw));
	EXPECT_EQ(rw.wr_id, 1u);
	if (soft || rw.status != FAB_WC_LOC_QP_OP_ERR) {
		EXPECT_EQ(rw.status, FAB_WC_LOC_LEN_ERR);
	}
	expect_wc(s_rcq, 2, FAB_WC_WR_FLUSH_ERR);
	if (iwarp) {
		/* the sender's Send was done when TCP had it; the receiver's
		 * TERMINATE ends the connection instead of a NAK */
		expect_connection_ends();
		return;
	}
	struct fab_wc wc;
	ASSERT_TRUE(wait_wc(c_scq, &wc));
	EXPECT_EQ(wc.wr_id, 9u);
	EXPECT_NE(wc.status, FAB_WC_SUCCESS);
}

TEST_F(FabConf, ChainWithOneSignalledCompletion)
{
	Buf target, msg, src;

	ASSERT_EQ(target.reg(pd, 3 * 8192, kAll), 0);
	ASSERT_EQ(msg.reg(pd, 256, kAll), 0);
	connect_pair([&] { ASSERT_EQ(post_one_recv(sc, msg, 0, 256, 1), 0); });
	ASSERT_EQ(src.reg(fab_conn_pd(cc), 3 * 8192 + 256, kAll), 0);
	src.fill(4);
	struct fab_sge sg[4];
	struct fab_send_wr wr[4] = {};
	for (int i = 0; i < 3; i++) {
		sg[i] = src.sge(i * 8192, 8192);
		wr[i].wr_id = 100 + i;
		wr[i].opcode = FAB_WR_RDMA_WRITE;
		wr[i].remote_addr = target.raddr(i * 8192);
		wr[i].rkey = target.mr->rkey;
	}
	sg[3] = src.sge(3 * 8192, 32);
	wr[3].wr_id = 200;
	wr[3].opcode = FAB_WR_SEND;
	wr[3].signaled = true;
	for (int i = 0; i < 4; i++) {
		wr[i].sg_list = &sg[i];
		wr[i].num_sge = 1;
		wr[i].next = i < 3 ? &wr[i + 1] : nullptr;
	}
	ASSERT_EQ(fab_post_send(cc, wr, nullptr), 0);
	expect_wc(c_scq, 200, FAB_WC_SUCCESS);
	EXPECT_TRUE(cq_quiet(c_scq));
	expect_wc(s_rcq, 1, FAB_WC_SUCCESS);
	EXPECT_TRUE(target.check(4));
}

TEST_F(FabConf, CqFdBecomesReadableAfterArm)
{
	Buf sb, cb;

	ASSERT_EQ(sb.reg(pd, 4096, kAll), 0);
	connect_pair([&] { ASSERT_EQ(post_one_recv(sc, sb, 0, 4096, 1), 0); });
	ASSERT_EQ(cb.reg(fab_conn_pd(cc), 4096, kAll), 0);
	ASSERT_EQ(fab_cq_arm(s_rcq), 0);
	struct pollfd p = {fab_cq_fd(s_rcq), POLLIN, 0};
	EXPECT_EQ(poll(&p, 1, 0), 0) << "fd readable with nothing completed";
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, cb, 0, 8, 2), 0);
	ASSERT_EQ(poll(&p, 1, 5000), 1);
	EXPECT_EQ(fab_cq_get_event(s_rcq), 0);
	struct fab_wc wc;
	ASSERT_EQ(fab_cq_poll(s_rcq, &wc, 1), 1);
	EXPECT_EQ(wc.wr_id, 1u);
	EXPECT_EQ(poll(&p, 1, 0), 0);
	expect_wc(c_scq, 2, FAB_WC_SUCCESS); /* cb stays ours until then */
}

TEST_F(FabConf, BadLkeyIsLocalProtectionError)
{
	Buf target, src;

	ASSERT_EQ(target.reg(pd, 4096, kAll), 0);
	connect_pair();
	ASSERT_EQ(src.reg(fab_conn_pd(cc), 4096, kAll), 0);
	src.fill(6);
	struct fab_sge s = src.sge(0, 64);
	s.lkey ^= 0x00ffff00u;
	struct fab_send_wr wr = {};
	wr.wr_id = 1;
	wr.opcode = FAB_WR_RDMA_WRITE;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.signaled = true;
	wr.remote_addr = target.raddr();
	wr.rkey = target.mr->rkey;
	int rc = fab_post_send(cc, &wr, nullptr);
	if (rc == 0) {
		/*
		 * IB: an lkey that names no valid region for the access is a
		 * "Local Protection Error". rdma_rxe reports otherwise, and
		 * only rxe gets these alternatives (docs/soft-roce.md):
		 * - Linux 6.1: Local QP Operation Error (its copy_data() fails
		 *   with -EINVAL, which its requester turns into LOC_QP_OP_ERR;
		 *   only -EFAULT becomes LOC_PROT_ERR);
		 * - since Linux 6.4: WR_FLUSH_ERR for the failing WR itself (its
		 *   requester moves the whole QP to ERR and the completer then
		 *   flushes every WQE, the failed one too, so its status is lost).
		 */
		struct fab_wc wc;
		ASSERT_TRUE(wait_wc(c_scq, &wc));
		EXPECT_EQ(wc.wr_id, 1u);
		bool rxe = !soft && (wc.status == FAB_WC_LOC_QP_OP_ERR ||
				     wc.status == FAB_WC_WR_FLUSH_ERR) && verbs_device_is_rxe();
		/* siw completes every failed transmit with Local QP Operation
		 * Error (siw_qp_tx.c, siw_qp_sq_process's tx_error) */
		bool siw = iwarp && wc.status == FAB_WC_LOC_QP_OP_ERR && verbs_device_is_siw();
		if (!siw && (!rxe || (wc.status == FAB_WC_WR_FLUSH_ERR && !kernel_at_least(6, 4)))) {
			EXPECT_EQ(wc.status, FAB_WC_LOC_PROT_ERR);
		}
	} else
		EXPECT_EQ(rc, -EINVAL);
	/* whatever the status said, nothing of src reached the target */
	for (size_t i = 0; i < 64; i++)
		ASSERT_EQ(target.p()[i], 0) << "byte " << i << " was written";
}

TEST_F(FabConf, DisconnectFlushesOutstandingSends)
{
	if (!soft)
		GTEST_SKIP() << "needs the soft completion-delay hook";
	Buf target, src;

	ASSERT_EQ(target.reg(pd, 65536, kAll), 0);
	connect_pair();
	ASSERT_EQ(src.reg(fab_conn_pd(cc), 65536, kAll), 0);
	struct fab_soft_fault f = {};
	f.delay_us = 200000; /* answers arrive after we hang up */
	ASSERT_EQ(fab_soft_fault_set(cc, &f), 0);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(post_one_send(cc, FAB_WR_RDMA_WRITE, src, 0, 1024, i, false,
					target.raddr(), target.mr->rkey),
			  0);
	ASSERT_EQ(fab_disconnect(cc), 0);
	for (int i = 0; i < 3; i++)
		expect_wc(c_scq, i, FAB_WC_WR_FLUSH_ERR); /* unsignalled, but failed */
	struct fab_cm_event ev;
	ASSERT_TRUE(wait_event_type(cch, FAB_CM_DISCONNECTED, &ev));
	ASSERT_TRUE(wait_event_type(sch, FAB_CM_DISCONNECTED, &ev));
	/* Posting on a disconnected QP flushes at once. */
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, src, 0, 8, 9), 0);
	expect_wc(c_scq, 9, FAB_WC_WR_FLUSH_ERR);
}

TEST_F(FabConf, TwoConnsShareOneCq)
{
	Buf sb, cb;
	struct fab_conn *cc2, *sc2;
	struct fab_cm_event ev;

	ASSERT_EQ(sb.reg(pd, 8192, kAll), 0);
	connect_pair([&] { ASSERT_EQ(post_one_recv(sc, sb, 0, 4096, 1), 0); });
	ASSERT_EQ(fab_connect(fab, cch, addr.c_str(), c_scq, c_rcq, &caps, nullptr, &cc2), 0);
	ASSERT_TRUE(wait_event_type(sch, FAB_CM_CONNECT_REQUEST, &ev));
	sc2 = ev.conn;
	ASSERT_EQ(fab_conn_create_qp(sc2, s_scq, s_rcq, &caps), 0);
	ASSERT_EQ(post_one_recv(sc2, sb, 4096, 4096, 2), 0);
	ASSERT_EQ(fab_accept(sc2, nullptr), 0);
	ASSERT_TRUE(wait_event_type(cch, FAB_CM_ESTABLISHED, &ev));
	ASSERT_TRUE(wait_event_type(sch, FAB_CM_ESTABLISHED, &ev));
	ASSERT_EQ(cb.reg(fab_conn_pd(cc), 4096, kAll), 0);
	fab_conn_set_context(sc2, &cb);
	EXPECT_EQ(fab_conn_get_context(sc2), &cb);
	ASSERT_EQ(post_one_send(cc2, FAB_WR_SEND, cb, 0, 10, 20), 0);
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, cb, 0, 10, 10), 0);
	for (int i = 0; i < 2; i++) {
		struct fab_wc wc;

		ASSERT_TRUE(wait_wc(s_rcq, &wc));
		EXPECT_EQ(wc.status, FAB_WC_SUCCESS);
		EXPECT_EQ(wc.conn, wc.wr_id == 1 ? sc : sc2);
	}
	for (int i = 0; i < 2; i++) {
		struct fab_wc wc;

		ASSERT_TRUE(wait_wc(c_scq, &wc));
		EXPECT_EQ(wc.conn, wc.wr_id == 10 ? cc : cc2);
	}
	fab_conn_destroy(cc2);
	fab_conn_destroy(sc2);
}

/* ---- shared receive queue ---- */

class FabSrq : public FabConf
{
      protected:
	struct fab_srq *srq = nullptr;
	struct fab_conn *cc2 = nullptr, *sc2 = nullptr;

	void TearDown() override
	{
		fab_conn_destroy(cc2);
		fab_conn_destroy(sc2);
		fab_conn_destroy(sc);
		sc = nullptr;
		if (srq) {
			EXPECT_EQ(fab_srq_destroy(srq), 0) << fab_last_error();
		}
		FabConf::TearDown();
	}

	/* One more client connection whose server side takes receives from srq. */
	void connect_srq(struct fab_conn **c_out, struct fab_conn **s_out, uint8_t rnr_retry)
	{
		struct fab_qp_caps sq = caps;
		struct fab_conn_param p = {};
		struct fab_cm_event ev;

		p.responder_resources = 4;
		p.initiator_depth = 4;
		p.rnr_retry_count = rnr_retry; /* what the client's Sends to us use */
		/* the engine's timer, so a wait for an SRQ buffer retries soon */
		p.rnr_timer_us = rnr_retry ? kRnrTimerUs : 0;
		sq.srq = srq;
		if (!lis)
			listen();
		ASSERT_EQ(fab_connect(fab, cch, addr.c_str(), c_scq, c_rcq, &caps, &p, c_out), 0)
		    << fab_last_error();
		ASSERT_TRUE(wait_event_type(sch, FAB_CM_CONNECT_REQUEST, &ev));
		*s_out = ev.conn;
		ASSERT_EQ(fab_conn_create_qp(*s_out, s_scq, s_rcq, &sq), 0) << fab_last_error();
		ASSERT_EQ(fab_accept(*s_out, &p), 0) << fab_last_error();
		ASSERT_TRUE(wait_event_type(cch, FAB_CM_ESTABLISHED, &ev));
		ASSERT_TRUE(wait_event_type(sch, FAB_CM_ESTABLISHED, &ev));
		EXPECT_EQ(ev.conn, *s_out);
	}
};

/* Receives posted once serve Sends from several QPs; each completion names its QP. */
TEST_F(FabSrq, ReceivesServeSeveralQpsAndNameTheConnection)
{
	Buf rb, c1, c2;

	ASSERT_EQ(fab_srq_create(pd, 16, 1, &srq), 0) << fab_last_error();
	ASSERT_EQ(rb.reg(pd, 6 * 256, kAll), 0);
	for (int i = 0; i < 6; i++)
		ASSERT_EQ(post_one_srq_recv(srq, rb, i * 256, 256, 100 + i), 0) << fab_last_error();
	connect_srq(&cc, &sc, 0);
	connect_srq(&cc2, &sc2, 0);
	ASSERT_EQ(post_one_recv(sc, rb, 0, 256, 1), -EINVAL) << "QP on an SRQ took its own receive";
	ASSERT_EQ(c1.reg(fab_conn_pd(cc), 64, kAll), 0);
	ASSERT_EQ(c2.reg(fab_conn_pd(cc2), 64, kAll), 0);
	memset(c1.p(), 0x11, 64);
	memset(c2.p(), 0x22, 64);
	/* Interleaved: 3 from each client, in posting order per QP. */
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, c1, 0, 10 + i, 10 + i), 0);
		ASSERT_EQ(post_one_send(cc2, FAB_WR_SEND, c2, 0, 20 + i, 20 + i), 0);
	}
	std::set<uint64_t> seen;
	uint32_t next_len[2] = {10, 20};
	for (int i = 0; i < 6; i++) {
		struct fab_wc wc;

		ASSERT_TRUE(wait_wc(s_rcq, &wc));
		ASSERT_EQ(wc.status, FAB_WC_SUCCESS);
		EXPECT_EQ(wc.opcode, FAB_WC_RECV);
		ASSERT_GE(wc.wr_id, 100u);
		ASSERT_LT(wc.wr_id, 106u);
		EXPECT_TRUE(seen.insert(wc.wr_id).second) << "receive completed twice";
		uint8_t who = rb.p()[(wc.wr_id - 100) * 256];
		ASSERT_TRUE(who == 0x11 || who == 0x22);
		EXPECT_EQ(wc.conn, who == 0x11 ? sc : sc2) << "completion names the wrong QP";
		EXPECT_EQ(wc.byte_len, next_len[who == 0x22]++) << "out of order on one QP";
	}
	for (int i = 0; i < 6; i++) {
		struct fab_wc wc;

		ASSERT_TRUE(wait_wc(c_scq, &wc));
		EXPECT_EQ(wc.status, FAB_WC_SUCCESS) << "send " << wc.wr_id;
	}
	EXPECT_TRUE(cq_quiet(s_rcq, 50));
}

/* rnr_retry 7: a Send finding the SRQ empty waits, then lands once one is posted. */
TEST_F(FabSrq, EmptySrqWithRnrRetryDelaysThenDelivers)
{
	Buf rb, cb;

	if (iwarp)
		GTEST_SKIP() << "iWARP has no RNR retry: a Send that finds the SRQ empty ends the "
				"connection (EmptySrqWithRnrRetryZeroFailsTheSender)";
	ASSERT_EQ(fab_srq_create(pd, 4, 1, &srq), 0) << fab_last_error();
	ASSERT_EQ(rb.reg(pd, 4096, kAll), 0);
	connect_srq(&cc, &sc, 7);
	ASSERT_EQ(cb.reg(fab_conn_pd(cc), 4096, kAll), 0);
	cb.fill(4);
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, cb, 0, 128, 1), 0);
	EXPECT_TRUE(cq_quiet(c_scq, 60)) << "Send completed with no receive posted";
	EXPECT_TRUE(cq_quiet(s_rcq, 1));
	ASSERT_EQ(post_one_srq_recv(srq, rb, 0, 4096, 2), 0);
	struct fab_wc wc;
	expect_wc(s_rcq, 2, FAB_WC_SUCCESS, &wc);
	EXPECT_EQ(wc.conn, sc);
	expect_wc(c_scq, 1, FAB_WC_SUCCESS);
	EXPECT_EQ(memcmp(rb.p(), cb.p(), 128), 0);
}

/* rnr_retry 0: an empty SRQ fails the sender exactly as an empty per-QP queue does. */
TEST_F(FabSrq, EmptySrqWithRnrRetryZeroFailsTheSender)
{
	Buf rb, cb;

	ASSERT_EQ(fab_srq_create(pd, 4, 1, &srq), 0) << fab_last_error();
	ASSERT_EQ(rb.reg(pd, 4096, kAll), 0);
	connect_srq(&cc, &sc, 0);
	ASSERT_EQ(cb.reg(fab_conn_pd(cc), 4096, kAll), 0);
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, cb, 0, 64, 1), 0);
	if (iwarp) {
		/* no RNR on iWARP: the receiver terminates the connection */
		expect_connection_ends();
	} else {
		expect_wc(c_scq, 1, FAB_WC_RNR_RETRY_EXC_ERR);
		ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, cb, 0, 64, 2), 0);
		expect_wc(c_scq, 2, FAB_WC_WR_FLUSH_ERR);
	}
	/* The SRQ is not the failed QP's: a receive posted now stays for others. */
	ASSERT_EQ(post_one_srq_recv(srq, rb, 0, 4096, 3), 0);
	EXPECT_TRUE(cq_quiet(s_rcq, 50)) << "an SRQ receive was flushed by one QP's error";
}

/*
 * Tearing one connection down leaves the SRQ's receives posted for the
 * others; destroy refuses while a QP is attached and, once none is, discards
 * what is still posted without completions.
 */
TEST_F(FabSrq, TeardownKeepsReceivesAndDestroyDiscardsThem)
{
	Buf rb, cb;
	struct fab_cm_event ev;

	ASSERT_EQ(fab_srq_create(pd, 8, 1, &srq), 0) << fab_last_error();
	ASSERT_EQ(rb.reg(pd, 4 * 512, kAll), 0);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(post_one_srq_recv(srq, rb, i * 512, 512, 50 + i), 0);
	connect_srq(&cc, &sc, 0);
	connect_srq(&cc2, &sc2, 0);
	ASSERT_EQ(fab_disconnect(sc), 0);
	ASSERT_TRUE(wait_event_type(cch, FAB_CM_DISCONNECTED, &ev));
	ASSERT_TRUE(wait_event_type(sch, FAB_CM_DISCONNECTED, &ev));
	fab_conn_destroy(sc);
	sc = nullptr;
	EXPECT_TRUE(cq_quiet(s_rcq, 50)) << "SRQ receives flushed by one connection's teardown";
	ASSERT_EQ(cb.reg(fab_conn_pd(cc2), 512, kAll), 0);
	ASSERT_EQ(post_one_send(cc2, FAB_WR_SEND, cb, 0, 100, 7), 0);
	struct fab_wc wc;
	expect_wc(s_rcq, 50, FAB_WC_SUCCESS, &wc);
	EXPECT_EQ(wc.conn, sc2);
	expect_wc(c_scq, 7, FAB_WC_SUCCESS);
	EXPECT_EQ(fab_srq_destroy(srq), -EBUSY) << "destroyed under an attached QP";
	fab_conn_destroy(sc2);
	sc2 = nullptr;
	ASSERT_EQ(fab_srq_destroy(srq), 0) << fab_last_error();
	srq = nullptr;
	EXPECT_TRUE(cq_quiet(s_rcq, 50)) << "destroy completed discarded receives";
}

/* Depth is a hard bound; bad receives are refused at post time. */
TEST_F(FabSrq, DepthAndBadReceivesAreRefused)
{
	Buf rb;

	ASSERT_EQ(fab_srq_create(pd, 2, 1, &srq), 0) << fab_last_error();
	ASSERT_EQ(rb.reg(pd, 4096, kAll), 0);
	ASSERT_EQ(post_one_srq_recv(srq, rb, 0, 100, 1), 0);
	ASSERT_EQ(post_one_srq_recv(srq, rb, 100, 100, 2), 0);
	struct fab_srq *none = nullptr;
	EXPECT_EQ(fab_srq_create(pd, 0, 1, &none), -EINVAL);
	EXPECT_EQ(none, nullptr);
	if (!soft)
		return; /* devices may round an SRQ's depth and SGE count up */
	EXPECT_EQ(post_one_srq_recv(srq, rb, 200, 100, 3), -ENOMEM) << "posted past the depth";
	struct fab_sge sg[2] = {rb.sge(0, 10), rb.sge(10, 10)};
	struct fab_recv_wr wr = {};
	wr.sg_list = sg;
	wr.num_sge = 2; /* the SRQ takes one SGE */
	EXPECT_EQ(fab_post_srq_recv(srq, &wr, nullptr), -EINVAL);
}

TEST_F(FabConf, StatsCountReceivesAndRegistrations)
{
	Buf sb, cb;
	struct fab_stats a, b;

	fab_get_stats(fab, &a);
	ASSERT_EQ(sb.reg(pd, 4096, kAll), 0);
	connect_pair([&] { ASSERT_EQ(post_one_recv(sc, sb, 0, 4096, 1), 0); });
	ASSERT_EQ(cb.reg(fab_conn_pd(cc), 4096, kAll), 0);
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, cb, 0, 300, 2), 0);
	expect_wc(s_rcq, 1, FAB_WC_SUCCESS);
	expect_wc(c_scq, 2, FAB_WC_SUCCESS);
	fab_get_stats(fab, &b);
	EXPECT_EQ(b.registrations - a.registrations, 2u);
	EXPECT_EQ(b.recv_posted - a.recv_posted, 1u);
	EXPECT_EQ(b.recv_bytes - a.recv_bytes, 300u);
	EXPECT_EQ(b.wr_posted[FAB_WR_SEND] - a.wr_posted[FAB_WR_SEND], 1u);
	EXPECT_EQ(b.bytes[FAB_WR_SEND] - a.bytes[FAB_WR_SEND], 300u);
}

/* Threads of this process, as the kernel lists them. */
static unsigned int process_threads()
{
	unsigned int n = 0;
	DIR *d = opendir("/proc/self/task");

	if (!d)
		return 0;
	while (struct dirent *e = readdir(d))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Until the process runs at most @max threads, or 10 s pass. */
static unsigned int settle_threads(unsigned int max)
{
	unsigned int n = process_threads();

	for (int i = 0; i < 1000 && n > max; i++) {
		usleep(10000);
		n = process_threads();
	}
	return n;
}

/*
 * The soft provider stands in for an RNIC, which runs no thread per QP: an
 * idle connection must hold none either (fab_soft_idle.c), or a test of
 * 10,000 connections measures the fabric. Idle connections still carry
 * every kind of work and still hear their peer leave.
 */
TEST_F(FabConf, IdleConnectionsHoldNoThread)
{
	if (!soft)
		GTEST_SKIP() << "soft provider property";
	const unsigned int kConns = 200;
	Buf sb, cb, remote;
	std::vector<struct fab_conn *> scs, ccs;
	struct fab_conn_param def = {};
	struct fab_cm_event ev;

	def.responder_resources = 4;
	def.initiator_depth = 4;
	listen();
	/* The listener's thread is running; one more may come: the idle watcher. */
	unsigned int base = process_threads();
	for (unsigned int i = 0; i < kConns; i++) {
		struct fab_conn *c, *s;

		ASSERT_EQ(fab_connect(fab, cch, addr.c_str(), c_scq, c_rcq, &caps, &def, &c), 0)
		    << fab_last_error();
		ccs.push_back(c);
		ASSERT_TRUE(wait_event_type(sch, FAB_CM_CONNECT_REQUEST, &ev));
		s = ev.conn;
		scs.push_back(s);
		ASSERT_EQ(fab_conn_create_qp(s, s_scq, s_rcq, &caps), 0) << fab_last_error();
		ASSERT_EQ(fab_accept(s, &def), 0) << fab_last_error();
		ASSERT_TRUE(wait_event_type(cch, FAB_CM_ESTABLISHED, &ev));
		ASSERT_TRUE(wait_event_type(sch, FAB_CM_ESTABLISHED, &ev));
	}
	unsigned int idle = settle_threads(base + 1);
	EXPECT_LE(idle, base + 1) << kConns << " idle connection pairs hold threads";

	/* Sends, Writes and Reads on a connection that went idle. */
	ASSERT_EQ(sb.reg(pd, 4096, kAll), 0);
	ASSERT_EQ(remote.reg(pd, 65536, kAll), 0);
	ASSERT_EQ(cb.reg(fab_conn_pd(ccs[7]), 65536, kAll), 0);
	ASSERT_EQ(post_one_recv(scs[7], sb, 0, 4096, 1), 0);
	cb.fill(4);
	ASSERT_EQ(post_one_send(ccs[7], FAB_WR_RDMA_WRITE, cb, 0, 65536, 2, false, remote.raddr(),
				remote.mr->rkey),
		  0);
	ASSERT_EQ(post_one_send(ccs[7], FAB_WR_SEND, cb, 0, 100, 3), 0);
	expect_wc(s_rcq, 1, FAB_WC_SUCCESS);
	expect_wc(c_scq, 3, FAB_WC_SUCCESS);
	EXPECT_TRUE(remote.check(4));
	remote.fill(6);
	ASSERT_EQ(post_one_send(ccs[7], FAB_WR_RDMA_READ, cb, 0, 65536, 4, true, remote.raddr(),
				remote.mr->rkey),
		  0);
	expect_wc(c_scq, 4, FAB_WC_SUCCESS);
	EXPECT_TRUE(cb.check(6));
	/* ... and the server answering on its own idle connection. */
	ASSERT_EQ(post_one_recv(ccs[9], cb, 0, 4096, 5), 0);
	ASSERT_EQ(post_one_send(scs[9], FAB_WR_SEND, sb, 0, 64, 6), 0);
	expect_wc(c_rcq, 5, FAB_WC_SUCCESS);
	expect_wc(s_scq, 6, FAB_WC_SUCCESS);

	/* Idle again; a peer leaving is still heard. */
	EXPECT_LE(settle_threads(base + 1), base + 1);
	ASSERT_EQ(fab_disconnect(ccs[11]), 0);
	ASSERT_TRUE(wait_event_type(sch, FAB_CM_DISCONNECTED, &ev));
	EXPECT_EQ(ev.conn, scs[11]);
	for (auto *c : ccs)
		fab_conn_destroy(c);
	for (auto *c : scs)
		fab_conn_destroy(c);
	EXPECT_EQ(fab_soft_io_threads(fab), 0u);
}

/* Both sides pull and push megabytes at each other at once: nobody may stall. */
TEST_F(FabConf, BidirectionalBulkDoesNotDeadlock)
{
	const size_t MB = 1 << 20;
	const int N = 8;
	Buf sbuf, cbuf;

	ASSERT_EQ(sbuf.reg(pd, 2 * N * MB, kAll), 0);
	connect_pair();
	ASSERT_EQ(cbuf.reg(fab_conn_pd(cc), 2 * N * MB, kAll), 0);
	sbuf.fill(21);
	cbuf.fill(42);
	/* First half of each buffer is the source the peer reads; second half is written into. */
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(post_one_send(sc, FAB_WR_RDMA_READ, sbuf, (N + i) * MB, MB, 100 + i, true,
					cbuf.raddr(i * MB), cbuf.mr->rkey),
			  0);
		ASSERT_EQ(post_one_send(cc, FAB_WR_RDMA_WRITE, cbuf, i * MB, MB, 200 + i, true,
					sbuf.raddr(i * MB), sbuf.mr->rkey),
			  0);
	}
	for (int i = 0; i < N; i++) {
		expect_wc(s_scq, 100 + i, FAB_WC_SUCCESS);
		expect_wc(c_scq, 200 + i, FAB_WC_SUCCESS);
	}
	/* Server read the client's pattern; the client wrote its own pattern over the server's. */
	for (size_t i = 0; i < N * MB; i += 4093) {
		ASSERT_EQ(sbuf.p()[N * MB + i], (uint8_t)(i * 7 + 42)) << i;
		ASSERT_EQ(sbuf.p()[i], (uint8_t)(i * 7 + 42)) << i;
	}
}

/* --- soft-only: fault hooks -------------------------------------------------- */

TEST_F(FabConf, SoftFaultFailNextRead)
{
	if (!soft)
		GTEST_SKIP() << "soft fault injection";
	Buf remote, local;

	ASSERT_EQ(remote.reg(pd, 4096, kAll), 0);
	connect_pair();
	ASSERT_EQ(local.reg(fab_conn_pd(cc), 4096, kAll), 0);
	struct fab_soft_fault f = {};
	f.fail_next_read = true;
	ASSERT_EQ(fab_soft_fault_set(cc, &f), 0);
	ASSERT_EQ(post_one_send(cc, FAB_WR_RDMA_READ, local, 0, 64, 1, true, remote.raddr(),
				remote.mr->rkey),
		  0);
	expect_wc(c_scq, 1, FAB_WC_REM_ACCESS_ERR);
}

TEST_F(FabConf, SoftFaultDropAfterWrs)
{
	if (!soft)
		GTEST_SKIP() << "soft fault injection";
	Buf target, src;
	struct fab_soft_fault f = {};

	ASSERT_EQ(target.reg(pd, 65536, kAll), 0);
	f.drop_after_wrs = 2;
	ASSERT_EQ(fab_soft_fault_set_fabric(fab, &f), 0);
	connect_pair();
	ASSERT_EQ(src.reg(fab_conn_pd(cc), 65536, kAll), 0);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(post_one_send(cc, FAB_WR_RDMA_WRITE, src, 0, 1024, i, true,
					target.raddr(), target.mr->rkey),
			  0);
	struct fab_cm_event ev;
	ASSERT_TRUE(wait_event_type(cch, FAB_CM_DISCONNECTED, &ev));
	ASSERT_TRUE(wait_event_type(sch, FAB_CM_DISCONNECTED, &ev));
	int ok = 0, flushed = 0;
	struct fab_wc wc;
	for (int i = 0; i < 4; i++) {
		ASSERT_TRUE(wait_wc(c_scq, &wc));
		EXPECT_EQ(wc.wr_id, (uint64_t)i) << "completions out of order";
		ok += wc.status == FAB_WC_SUCCESS;
		flushed += wc.status == FAB_WC_WR_FLUSH_ERR;
	}
	EXPECT_LE(ok, 2);
	EXPECT_GE(flushed, 2);
}

TEST_F(FabConf, SoftFaultDelayAndParse)
{
	if (!soft)
		GTEST_SKIP() << "soft fault injection";
	struct fab_soft_fault f;

	ASSERT_EQ(fab_soft_fault_parse("drop_after_bytes=100,drop_after_wrs=3,fail_next_read=1,"
				       "fail_next_write=1,delay_us=20000",
				       &f),
		  0);
	EXPECT_EQ(f.drop_after_bytes, 100u);
	EXPECT_EQ(f.drop_after_wrs, 3u);
	EXPECT_TRUE(f.fail_next_read);
	EXPECT_TRUE(f.fail_next_write);
	EXPECT_EQ(f.delay_us, 20000u);
	EXPECT_EQ(fab_soft_fault_parse("bogus=1", &f), -EINVAL);
	EXPECT_EQ(fab_soft_fault_parse("delay_us=abc", &f), -EINVAL);

	Buf target, src;
	ASSERT_EQ(target.reg(pd, 4096, kAll), 0);
	connect_pair();
	ASSERT_EQ(src.reg(fab_conn_pd(cc), 4096, kAll), 0);
	struct fab_soft_fault d = {};
	d.delay_us = 50000;
	ASSERT_EQ(fab_soft_fault_set(cc, &d), 0);
	long t0 = now_ms();
	ASSERT_EQ(post_one_send(cc, FAB_WR_RDMA_WRITE, src, 0, 64, 1, true, target.raddr(),
				target.mr->rkey),
		  0);
	expect_wc(c_scq, 1, FAB_WC_SUCCESS);
	EXPECT_GE(now_ms() - t0, 45);
}

TEST_F(FabConf, SoftFaultDropAfterBytes)
{
	if (!soft)
		GTEST_SKIP() << "soft fault injection";
	Buf target, src;
	struct fab_soft_fault f = {};

	ASSERT_EQ(target.reg(pd, 1 << 20, kAll), 0);
	connect_pair();
	ASSERT_EQ(src.reg(fab_conn_pd(cc), 1 << 20, kAll), 0);
	f.drop_after_bytes = 100000;
	ASSERT_EQ(fab_soft_fault_set(cc, &f), 0);
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(post_one_send(cc, FAB_WR_RDMA_WRITE, src, 0, 65536, i, true,
					target.raddr(), target.mr->rkey),
			  0);
	struct fab_cm_event ev;
	ASSERT_TRUE(wait_event_type(cch, FAB_CM_DISCONNECTED, &ev));
	ASSERT_TRUE(wait_event_type(sch, FAB_CM_DISCONNECTED, &ev));
	int ok = 0;
	for (int i = 0; i < 8; i++) {
		struct fab_wc wc;

		ASSERT_TRUE(wait_wc(c_scq, &wc));
		ok += wc.status == FAB_WC_SUCCESS;
	}
	EXPECT_LE(ok, 2);
}

TEST_F(FabConf, SoftFaultFromEnvironment)
{
	if (!soft)
		GTEST_SKIP() << "soft fault injection";
	struct fab_fabric *f2;

	setenv("RPCRDMA_SOFT_FAULT", "fail_next_write=1", 1);
	int rc = fab_open("soft", &f2);
	unsetenv("RPCRDMA_SOFT_FAULT");
	ASSERT_EQ(rc, 0);
	setenv("RPCRDMA_SOFT_FAULT", "nonsense=1", 1);
	struct fab_fabric *bad = nullptr;
	EXPECT_EQ(fab_open("soft", &bad), -EINVAL);
	unsetenv("RPCRDMA_SOFT_FAULT");

	/* Rebuild the fixture on the faulty fabric. */
	TearDown();
	sch = cch = nullptr;
	s_scq = s_rcq = c_scq = c_rcq = nullptr;
	sc = cc = nullptr;
	lis = nullptr;
	fab = f2;
	ASSERT_EQ(fab_channel_create(fab, &sch), 0);
	ASSERT_EQ(fab_channel_create(fab, &cch), 0);
	pump_register(sch);
	pump_register(cch);
	ASSERT_EQ(fab_cq_create(fab, 64, &s_scq), 0);
	ASSERT_EQ(fab_cq_create(fab, 64, &s_rcq), 0);
	ASSERT_EQ(fab_cq_create(fab, 64, &c_scq), 0);
	ASSERT_EQ(fab_cq_create(fab, 64, &c_rcq), 0);
	ASSERT_EQ(fab_pd_get(fab, &pd), 0);
	Buf target, src;
	ASSERT_EQ(target.reg(pd, 4096, kAll), 0);
	connect_pair();
	ASSERT_EQ(src.reg(fab_conn_pd(cc), 4096, kAll), 0);
	ASSERT_EQ(post_one_send(cc, FAB_WR_RDMA_WRITE, src, 0, 64, 1, true, target.raddr(),
				target.mr->rkey),
		  0);
	expect_wc(c_scq, 1, FAB_WC_REM_ACCESS_ERR);
}

/*
 * The soft listener reads each new stream's CONN_REQ as it comes, many at
 * once (fab_soft_accept.c): a stream that connects and sends nothing, or
 * half a header, must not hold up the next connection (it did, for ever:
 * the handshake's receive timeout had become a retry), and is dropped after
 * the handshake timeout (5 s); one that sends junk is dropped at once.
 */
TEST_F(FabConf, SoftSilentStreamsDoNotHoldUpTheListener)
{
	if (!soft)
		GTEST_SKIP() << "raw TCP streams at the soft provider's listener";
	listen(true);
	int port = std::stoi(addr.substr(addr.rfind(':') + 1));
	sockaddr_in sin = {};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(uint16_t(port));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	auto raw = [&](const void *bytes, size_t n) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		EXPECT_GE(fd, 0);
		EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)), 0);
		if (n) {
			EXPECT_EQ(send(fd, bytes, n, 0), ssize_t(n));
		}
		return fd;
	};
	/* closed by the listener: EOF (or a reset) within @ms */
	auto closed_within = [](int fd, int ms) {
		pollfd p = {fd, POLLIN, 0};
		char b;
		return poll(&p, 1, ms) == 1 && recv(fd, &b, 1, MSG_DONTWAIT) <= 0;
	};
	const uint8_t half[3] = {1, 0, 0};
	uint8_t junk[32]; /* more than a header (24 bytes) */
	memset(junk, 0xee, sizeof(junk));
	int silent = raw(nullptr, 0), partial = raw(half, sizeof(half));
	int bad = raw(junk, sizeof(junk));

	connect_pair();
	/* served while the silent ones still wait for their bytes */
	EXPECT_FALSE(closed_within(silent, 0)) << "the silent stream is gone already";
	EXPECT_TRUE(closed_within(bad, 2000)) << "junk instead of a CONN_REQ is kept";
	/* and they go after the handshake timeout */
	EXPECT_TRUE(closed_within(silent, 8000)) << "a silent stream is kept for ever";
	EXPECT_TRUE(closed_within(partial, 2000)) << "half a CONN_REQ is kept for ever";
	close(silent);
	close(partial);
	close(bad);
}

TEST_F(FabConf, SoftTcpIpv6Loopback)
{
	if (!soft)
		GTEST_SKIP() << "soft address syntax";
	Buf sb, cb;

	addr = "tcp:[::1]:" + std::to_string(30000 + (getpid() * 16 + 15) % 20000);
	int rc = fab_listen(fab, sch, addr.c_str(), 4, &lis);
	if (rc)
		GTEST_SKIP() << "no IPv6 loopback: " << fab_last_error();
	ASSERT_EQ(sb.reg(pd, 4096, kAll), 0);
	connect_pair([&] { ASSERT_EQ(post_one_recv(sc, sb, 0, 4096, 1), 0); });
	EXPECT_EQ(std::string(fab_conn_peer(sc)).rfind("[::1]:", 0), 0u) << fab_conn_peer(sc);
	ASSERT_EQ(cb.reg(fab_conn_pd(cc), 4096, kAll), 0);
	ASSERT_EQ(post_one_send(cc, FAB_WR_SEND, cb, 0, 32, 2), 0);
	expect_wc(s_rcq, 1, FAB_WC_SUCCESS);
	expect_wc(c_scq, 2, FAB_WC_SUCCESS);
}

/* --- two processes --------------------------------------------------------------- */

/*
 * The helper (fab_peer_helper) connects to us, advertising a 64 KiB region in
 * its private data. We Read it, Write a new pattern, then Send; it checks its
 * memory and answers with a Send carrying 1 (good) or 0.
 */
class FabTwoProc : public FabConf
{
      protected:
	void run(bool tcp)
	{
		if (!soft)
			GTEST_SKIP() << "the helper speaks the soft provider";
		listen(tcp);
		pid_t pid = fork();
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			execl(FAB_PEER_HELPER, FAB_PEER_HELPER, addr.c_str(), (char *)nullptr);
			_exit(127);
		}
		Buf rmsg, smsg, local;
		struct fab_cm_event ev;
		ASSERT_EQ(rmsg.reg(pd, 256, kAll), 0);
		ASSERT_EQ(smsg.reg(pd, 256, kAll), 0);
		ASSERT_EQ(local.reg(pd, 65536, kAll), 0);
		ASSERT_TRUE(wait_event_type(sch, FAB_CM_CONNECT_REQUEST, &s_req));
		sc = s_req.conn;
		ASSERT_EQ(s_req.private_data_len, 16);
		uint64_t raddr;
		uint32_t rkey, rlen;
		memcpy(&raddr, s_req.private_data, 8);
		memcpy(&rkey, s_req.private_data + 8, 4);
		memcpy(&rlen, s_req.private_data + 12, 4);
		ASSERT_EQ(rlen, 65536u);
		ASSERT_EQ(fab_conn_create_qp(sc, s_scq, s_rcq, &caps), 0);
		ASSERT_EQ(post_one_recv(sc, rmsg, 128, 128, 5), 0); /* hello */
		ASSERT_EQ(post_one_recv(sc, rmsg, 0, 128, 1), 0);   /* verdict */
		struct fab_conn_param ap = {};
		ASSERT_EQ(fab_accept(sc, &ap), 0);
		ASSERT_TRUE(wait_event_type(sch, FAB_CM_ESTABLISHED, &ev));
		expect_wc(s_rcq, 5, FAB_WC_SUCCESS);
		ASSERT_EQ(
		    post_one_send(sc, FAB_WR_RDMA_READ, local, 0, 65536, 2, true, raddr, rkey), 0);
		expect_wc(s_scq, 2, FAB_WC_SUCCESS);
		EXPECT_TRUE(local.check(77)) << "Read did not fetch the helper's pattern";
		local.fill(13);
		ASSERT_EQ(
		    post_one_send(sc, FAB_WR_RDMA_WRITE, local, 0, 65536, 3, false, raddr, rkey),
		    0);
		ASSERT_EQ(post_one_send(sc, FAB_WR_SEND, smsg, 0, 8, 4), 0);
		expect_wc(s_scq, 4, FAB_WC_SUCCESS);
		struct fab_wc wc;
		expect_wc(s_rcq, 1, FAB_WC_SUCCESS, &wc);
		EXPECT_EQ(wc.byte_len, 4u);
		uint32_t verdict;
		memcpy(&verdict, rmsg.p(), 4);
		EXPECT_EQ(verdict, 1u) << "helper saw wrong data after Write-then-Send";
		ASSERT_EQ(fab_disconnect(sc), 0);
		int status = 0;
		long end = now_ms() + 5000;
		pid_t w;
		while ((w = waitpid(pid, &status, WNOHANG)) == 0 && now_ms() < end)
			usleep(10000);
		if (w == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			FAIL() << "helper did not exit";
		}
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(WEXITSTATUS(status), 0);
	}
};

TEST_F(FabTwoProc, UnixSocket)
{
	run(false);
}

TEST_F(FabTwoProc, TcpLoopback)
{
	run(true);
}

/* --- verbs without a device ----------------------------------------------------- */

TEST(FabVerbs, NoDeviceIsCleanEnodev)
{
	struct fab_fabric *f = nullptr;
	int rc = fab_open("verbs", &f);

	if (rc == 0) {
		fab_close(f);
		GTEST_SKIP() << "an RDMA device is present";
	}
	EXPECT_EQ(rc, -ENODEV);
	EXPECT_EQ(f, nullptr);
	EXPECT_NE(std::string(fab_last_error()), "");
}

/*
 * Each soft device profile enforces what it states (docs/devices.md): its
 * queue sizes, SGEs per work request and per Read, Read depths, SRQ and
 * Send With Invalidate; iWARP ones refuse a Read into a sink without remote
 * write, as the tagged Read Response would be.
 */
class FabProfile : public FabConf, public ::testing::WithParamInterface<const char *>
{
      protected:
	struct fab_limits lim = {};

	void SetUp() override
	{
		FabConf::SetUp();
		if (IsSkipped() || HasFatalFailure())
			return;
		if (!soft)
			GTEST_SKIP() << "profiles are the soft provider's";
		ASSERT_EQ(fab_soft_profile_set(fab, GetParam()), 0) << fab_last_error();
		ASSERT_EQ(fab_soft_profile(GetParam(), &lim), 0);
		caps = {32, 32, lim.max_send_sge, lim.max_recv_sge, nullptr};
	}
	void pair(uint8_t depth)
	{
		struct fab_conn_param p = {};
		p.responder_resources = p.initiator_depth = depth;
		connect_pair([]() {}, &p, &p);
	}
};

TEST_P(FabProfile, EnforcesItsLimits)
{
	struct fab_limits dev, lis_lim;
	struct fab_cq *cq = nullptr;
	struct fab_srq *srq = nullptr;

	ASSERT_EQ(fab_device_limits(fab, &dev), 0);
	EXPECT_EQ(dev.max_send_sge, lim.max_send_sge);
	EXPECT_EQ(dev.max_read_sge, lim.max_read_sge);
	EXPECT_EQ(dev.max_rd_atom, lim.max_rd_atom);
	EXPECT_EQ(dev.transport, lim.transport);
	EXPECT_EQ(dev.send_with_inv, lim.send_with_inv);
	EXPECT_EQ(fab_cq_create(fab, int(lim.max_cqe) + 1, &cq), -EINVAL);
	if (lim.max_srq_wr) {
		EXPECT_EQ(fab_srq_create(pd, lim.max_srq_wr + 1, 1, &srq), -EINVAL);
	} else {
		EXPECT_EQ(fab_srq_create(pd, 16, 1, &srq), -EOPNOTSUPP);
	}

	/* a Read depth beyond the device's is refused at connect */
	struct fab_qp_caps c1 = caps;
	struct fab_conn_param deep = {};
	struct fab_conn *bad = nullptr;
	deep.responder_resources = uint8_t(lim.max_rd_atom + 1);
	listen();
	if (lim.max_rd_atom < 254) {
		EXPECT_EQ(fab_connect(fab, cch, addr.c_str(), c_scq, c_rcq, &c1, &deep, &bad),
			  -EINVAL);
	}
	/* a QP with one SGE more than the device's is refused */
	c1.max_send_sge = lim.max_send_sge + 1;
	EXPECT_EQ(fab_connect(fab, cch, addr.c_str(), c_scq, c_rcq, &c1, nullptr, &bad), -EINVAL);

	pair(uint8_t(lim.max_rd_atom < 4 ? lim.max_rd_atom : 4));
	ASSERT_EQ(fab_conn_limits(cc, &dev), 0);
	EXPECT_EQ(dev.max_send_sge, lim.max_send_sge);
	ASSERT_EQ(fab_listener_limits(lis, &lis_lim), 0);
	EXPECT_EQ(lis_lim.max_read_sge, lim.max_read_sge);

	Buf remote, plain, tagged;
	ASSERT_EQ(remote.reg(pd, 8192, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_READ), 0);
	remote.fill(7);
	ASSERT_EQ(plain.reg(fab_conn_pd(cc), 8192, FAB_ACCESS_LOCAL_WRITE), 0);
	ASSERT_EQ(tagged.reg(fab_conn_pd(cc),
			     8192, FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_WRITE), 0);

	/* one SGE more than a Read takes is refused at post */
	std::vector<struct fab_sge> sg;
	for (uint32_t i = 0; i <= lim.max_read_sge; i++)
		sg.push_back(tagged.sge(i * 16, 16));
	struct fab_send_wr wr = {};
	wr.opcode = FAB_WR_RDMA_READ;
	wr.sg_list = sg.data();
	wr.num_sge = int(sg.size());
	wr.signaled = true;
	wr.remote_addr = remote.raddr();
	wr.rkey = remote.mr->rkey;
	EXPECT_EQ(fab_post_send(cc, &wr, nullptr), -EINVAL);

	/* Send With Invalidate only where the device has it */
	struct fab_sge s = tagged.sge(0, 16);
	struct fab_send_wr inv = {};
	inv.opcode = FAB_WR_SEND_WITH_INV;
	inv.sg_list = &s;
	inv.num_sge = 1;
	inv.invalidate_rkey = remote.mr->rkey;
	if (!lim.send_with_inv) {
		EXPECT_EQ(fab_post_send(cc, &inv, nullptr), -EINVAL);
	}

	/* a one-SGE Read: into a local-write-only sink it works on RoCE and
	 * fails with a remote-access error on iWARP; a tagged sink works */
	struct fab_sge one = plain.sge(0, 4096);
	wr.wr_id = 21;
	wr.sg_list = &one;
	wr.num_sge = 1;
	ASSERT_EQ(fab_post_send(cc, &wr, nullptr), 0);
	if (lim.transport == FAB_TRANSPORT_IWARP) {
		expect_wc(c_scq, 21, FAB_WC_REM_ACCESS_ERR);
		EXPECT_FALSE(plain.check(7));
		return;
	}
	expect_wc(c_scq, 21, FAB_WC_SUCCESS);
	EXPECT_TRUE(plain.check(7, 0, 4096));
}

INSTANTIATE_TEST_SUITE_P(Profiles, FabProfile,
			 ::testing::Values("rxe", "mlx5", "irdma", "bnxt_re", "cxgb4", "siw", "min"));

TEST(FabProfileNames, UnknownProfileIsRefused)
{
	struct fab_fabric *f = nullptr;
	struct fab_limits lim;

	EXPECT_EQ(fab_soft_profile("nonsense", &lim), -EINVAL);
	ASSERT_EQ(fab_open("soft", &f), 0);
	EXPECT_EQ(fab_soft_profile_set(f, "nonsense"), -EINVAL);
	fab_close(f);
	setenv("RPCRDMA_SOFT_PROFILE", "nonsense", 1);
	EXPECT_EQ(fab_open("soft", &f), -EINVAL);
	unsetenv("RPCRDMA_SOFT_PROFILE");
}

TEST(FabOpen, UnknownProviderAndEnvDefault)
{
	struct fab_fabric *f = nullptr;

	EXPECT_EQ(fab_open("nonsense", &f), -EINVAL);
	EXPECT_NE(std::string(fab_last_error()).find("nonsense"), std::string::npos);
	ASSERT_EQ(fab_open("soft", &f), 0);
	EXPECT_EQ(std::string(fab_name(f)), "soft");
	fab_close(f);
}

} // namespace
