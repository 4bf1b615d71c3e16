// SPDX-License-Identifier: MIT
/*
 * test_delegation.cc - delegation recall by ganesha itself over the RDMA
 * back channel (issue #9; RFC 8881 section 10.4, RFC 8167, RFC 8267
 * section 4.5), no callback shim: real ganesha 4.3 + the rpcrdma plugin on
 * the soft fabric exporting a real single-brick GlusterFS volume with
 * FSAL GLUSTER - in Debian's ganesha 4.3 the one FSAL that declares
 * delegations and implements lease_op2 (MEM and VFS do neither).
 *
 *  - A (NFSv4.1 over RDMA, back channel on its connection) holds a read
 *    delegation; B (TCP) opens for write and gets NFS4ERR_DELAY; ganesha
 *    sends CB_RECALL on A's RDMA connection (bc_calls / bc_replies); A
 *    answers and DELEGRETURNs; B's OPEN completes.
 *  - A answers the CB_RECALL with RDMA_ERROR / ERR_CHUNK: ganesha retries
 *    the recall on the same slot with the next sequence (the slot was
 *    retired, not lost or replayed), A answers it, B's OPEN completes.
 *  - A is killed with the CB_RECALL in flight: the call completes at once,
 *    ganesha keeps serving (TCP and RDMA), A's connection leaves the stats
 *    (within one lease time: ganesha 4.3 crashes when it later revokes a
 *    delegation whose recall never got through - see the test).
 *
 * Skipped, with the reason, only where glusterd or ganesha's FSAL GLUSTER is
 * not installed (ci/install-deps.sh installs both); RR_BC_REQUIRE_DELEG=1
 * makes that a failure. Any refused delegation is a failure.
 */
#include "backchannel/bc_fixture.h"
#include "backchannel/gluster_volume.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace rrplug
{
namespace
{

class Delegations : public Backchannel
{
      public:
	static void SetUpTestSuite()
	{
		skip_why.clear();
		start_err.clear();
		gluster_err.clear();
		gluster_missing.clear();
		/* no ganesha or plugin here (e.g. the sanitizer build): SetUp skips */
		if (!GaneshaServer::available(&skip_why))
			return;
		if (!GlusterVolume::available(&gluster_missing))
			return;
		vol.reset(new GlusterVolume());
		if (!vol->up("rrdeleg", &gluster_err)) {
			vol.reset();
			return;
		}
		delegation_options();
		options.gluster_host = vol->host;
		options.gluster_volume = vol->volume;
		PluginTest::SetUpTestSuite();
		if (!srv)
			return;
		/* FSAL GLUSTER keeps the fd of a file it created open, as the
		 * object's global fd, without a lease id; the brick's leases
		 * xlator then refuses every lease on that file ("Unable to get fd
		 * ctx": glfs_lease EPERM, ganesha grants no delegation). So the
		 * files are created first and ganesha restarted: its gfapi
		 * connection going away closes those fds in the brick. */
		if (!make_files(&start_err)) {
			srv.reset();
			return;
		}
		srv.reset(new GaneshaServer());
		if (!srv->start(options, &start_err))
			srv.reset();
	}
	static void TearDownTestSuite()
	{
		PluginTest::TearDownTestSuite(); /* ganesha first: it holds the volume */
		vol.reset();
	}

      protected:
	static constexpr const char *kDir = "deleg";
	static constexpr const char *kFiles[] = {"deleg", "refused", "killed"};

	/* kDir/kFiles[] over NFSv3 (TCP) */
	static bool make_files(std::string *err)
	{
		std::string e;
		auto tm = TcpTransport::connect("127.0.0.1", srv->mnt_port, &e);
		auto tn = TcpTransport::connect("127.0.0.1", srv->nfs_port, &e);
		if (!tm || !tn) {
			*err = "connect: " + e;
			return false;
		}
		Mount3 m(*tm);
		Nfs3 c(*tn);
		Fh root, d, f;
		if (m.mnt("/mem", &root) || c.mkdir(root, kDir, 0777, &d)) {
			*err = "MNT / MKDIR: " + m.err() + c.err();
			return false;
		}
		for (const char *name : kFiles)
			if (c.create(d, name, 0666, &f)) {
				*err = std::string("CREATE ") + name + ": " + c.err();
				return false;
			}
		return true;
	}

	void SetUp() override
	{
		if (skip_why.empty() && !gluster_missing.empty()) {
			const char *req = getenv("RR_BC_REQUIRE_DELEG");
			if (req && *req == '1')
				FAIL() << "RR_BC_REQUIRE_DELEG=1 but " << gluster_missing;
			GTEST_SKIP() << "delegation recall needs FSAL GLUSTER: " << gluster_missing;
		}
		if (skip_why.empty()) {
			ASSERT_TRUE(vol) << "the GlusterFS volume did not start: " << gluster_err;
		}
		Backchannel::SetUp();
		if (IsSkipped() || HasFatalFailure())
			return;
		/* the files made before ganesha's restart, not the test's own dir */
		NFS_OK(*tc, tc->lookup(root, kDir, &dir));
	}

	/* A read delegation for A on @name: FSAL GLUSTER declares them, so a
	 * refusal is a failure, with ganesha's reason from its log. */
	void read_deleg(BcClient &a, const std::string &name, Fh *f, Stateid *open_sid, Deleg *dg)
	{
		NFS_OK(*a.c, a.c->open(dir, name, SHARE_READ, f, open_sid, dg, WANT_READ_DELEG));
		ASSERT_EQ(dg->type, uint32_t(DELEG_READ))
		    << "ganesha granted no read delegation (why_no_delegation4 " << dg->why_none
		    << ") on FSAL GLUSTER\n"
		    << srv->logs();
	}

	/* B opens @name for write until it stops getting NFS4ERR_DELAY, as a
	 * client does, serving A's callbacks between tries (A may be null).
	 * Returns the last status. */
	int open_for_write(Nfs4 &b, BcClient *a, const std::string &name, Fh *f, Stateid *sid,
			   int timeout_ms, int *delays)
	{
		auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
		int rc;
		for (;;) {
			rc = b.open(dir, name, SHARE_WRITE, f, sid);
			if (rc != int(NFS4ERR_DELAY) || std::chrono::steady_clock::now() > end)
				return rc;
			(*delays)++;
			if (a && a->cb)
				a->cb->serve_until([] { return false; }, 200);
			else
				std::this_thread::sleep_for(std::chrono::milliseconds(200));
		}
	}

	struct Counters {
		double calls = -1, replies = -1, errors = -1;
	};
	Counters counters()
	{
		Counters c;
		c.calls = stat_at("global.bc_calls");
		c.replies = stat_at("global.bc_replies");
		c.errors = stat_at("global.bc_errors");
		return c;
	}

	std::unique_ptr<Nfs4> tcp_client(std::unique_ptr<TcpTransport> *t)
	{
		*t = tcp_nfs();
		if (!*t)
			return nullptr;
		std::unique_ptr<Nfs4> c(new Nfs4(**t));
		int rc = c->mount();
		EXPECT_EQ(rc, 0) << "B's mount: " << c->err();
		return rc ? nullptr : std::move(c);
	}

	static std::unique_ptr<GlusterVolume> vol;
	static std::string gluster_missing, gluster_err;
};
std::unique_ptr<GlusterVolume> Delegations::vol;
std::string Delegations::gluster_missing, Delegations::gluster_err;

TEST_F(Delegations, DelegationRecalledOverRdma)
{
	BcClient a = bc_client();
	ASSERT_TRUE(a.c);
	ASSERT_TRUE(a.c->session_flags & CONN_BACK_CHAN);
	Fh fa;
	Stateid osid;
	Deleg dg;
	read_deleg(a, "deleg", &fa, &osid, &dg);
	if (HasFatalFailure())
		return;
	Counters c0 = counters();

	/* B over TCP wants to write: the delegation must be recalled */
	std::unique_ptr<TcpTransport> bt;
	auto b = tcp_client(&bt);
	ASSERT_TRUE(b);
	Fh fb;
	Stateid bsid;
	int rc = b->open(dir, "deleg", SHARE_WRITE, &fb, &bsid);
	EXPECT_EQ(rc, int(NFS4ERR_DELAY)) << "B's OPEN while A holds the delegation: " << b->err();

	ASSERT_TRUE(a.cb->serve_until([&] { return a.cb->count_op(OP_CB_RECALL) > 0; }, 20000))
	    << "no CB_RECALL reached A's RDMA connection in 20 s; callbacks seen: "
	    << a.cb->log().size() << "\n"
	    << srv->logs();
	const CbRecord r = a.cb->log().back();
	EXPECT_TRUE(r.has_seq) << r.describe();
	EXPECT_EQ(r.action, CbRecord::ANSWER);
	EXPECT_EQ(r.status, 0u) << r.describe();
	EXPECT_EQ(r.seq_status, 0u) << r.describe();
	EXPECT_EQ(r.recall_fh.b, fa.b) << "CB_RECALL names another file";
	EXPECT_EQ(memcmp(r.recall_sid.other, dg.sid.other, 12), 0) << "CB_RECALL stateid";
	EXPECT_EQ(memcmp(r.sessionid, a.c->sessionid(), 16), 0) << "CB_SEQUENCE session";
	EXPECT_EQ(a.cb->violations(), "");
	/* A returns the delegation on the fore channel, as a client does */
	NFS_OK(*a.c, a.c->delegreturn(fa, dg.sid));

	int delays = rc == int(NFS4ERR_DELAY) ? 1 : 0;
	if (rc == int(NFS4ERR_DELAY))
		rc = open_for_write(*b, &a, "deleg", &fb, &bsid, 20000, &delays);
	EXPECT_EQ(rc, 0) << "B's OPEN after the delegation was returned: " << b->err();
	RecordProperty("b_delays", delays);
	/* the callback went over RDMA: the plugin counted it (TCP callbacks are
	 * ganesha's own and never reach these counters) */
	Counters c1 = counters();
	if (c0.calls >= 0) {
		EXPECT_EQ(c1.calls - c0.calls, 1) << "bc_calls: the one CB_RECALL";
		EXPECT_EQ(c1.replies - c0.replies, 1) << "bc_replies";
		EXPECT_EQ(c1.errors - c0.errors, 0) << "bc_errors";
	}
	if (rc == 0)
		NFS_OK(*b, b->close(fb, bsid));
	NFS_OK(*a.c, a.c->close(fa, osid));
	NFS_OK(*b, b->destroy_session());
	NFS_OK(*a.c, a.c->destroy_session());
}

/* RFC 8267 section 4.5 on the back channel, with ganesha's own recall: A
 * refuses the CB_RECALL with ERR_CHUNK (it ran the call, its reply is
 * lost). ganesha retries the recall a second later; the retry must use a
 * usable slot with the next sequence - the same sequence would be a replay
 * (NFS4ERR_RETRY_UNCACHED_REP), a lost slot no retry at all. A answers the
 * retry, returns the delegation, B's OPEN completes. */
TEST_F(Delegations, RecallRefusedWithErrChunkIsRetriedOnTheNextSequence)
{
	BcClient a = bc_client();
	ASSERT_TRUE(a.c);
	Fh fa;
	Stateid osid;
	Deleg dg;
	read_deleg(a, "refused", &fa, &osid, &dg);
	if (HasFatalFailure())
		return;
	int recalls_seen = 0;
	a.cb->policy = [&](const CbRecord &c) {
		if (!c.has_recall)
			return CbRecord::ANSWER;
		return recalls_seen++ == 0 ? CbRecord::ERR_CHUNK : CbRecord::ANSWER;
	};
	Counters c0 = counters();
	std::unique_ptr<TcpTransport> bt;
	auto b = tcp_client(&bt);
	ASSERT_TRUE(b);
	Fh fb;
	Stateid bsid;
	int rc = b->open(dir, "refused", SHARE_WRITE, &fb, &bsid);
	EXPECT_EQ(rc, int(NFS4ERR_DELAY)) << b->err();

	ASSERT_TRUE(a.cb->serve_until([&] { return a.cb->count_op(OP_CB_RECALL) >= 2; }, 20000))
	    << "ganesha did not retry the refused CB_RECALL in 20 s; callbacks seen: "
	    << a.cb->log().size() << "\n"
	    << srv->logs();
	std::vector<CbRecord> recalls;
	for (const CbRecord &c : a.cb->log())
		if (c.has_recall)
			recalls.push_back(c);
	ASSERT_GE(recalls.size(), 2u);
	const CbRecord &r0 = recalls[0], &r1 = recalls[1];
	EXPECT_EQ(r0.action, CbRecord::ERR_CHUNK) << r0.describe();
	EXPECT_EQ(r1.action, CbRecord::ANSWER) << r1.describe();
	EXPECT_EQ(r1.slot, r0.slot) << "ganesha has one back-channel slot per session here";
	EXPECT_EQ(r1.seq, r0.seq + 1) << "the retry must advance the retired slot's sequence\n"
				       << r0.describe() << "\n"
				       << r1.describe();
	EXPECT_EQ(r1.seq_status, 0u) << "the retry is a new call on a working slot: "
				     << r1.describe();
	EXPECT_EQ(r1.status, 0u) << r1.describe();
	EXPECT_EQ(memcmp(r1.recall_sid.other, dg.sid.other, 12), 0);
	EXPECT_EQ(a.cb->violations(), "");
	EXPECT_TRUE(a.t->requester().connected()) << "ERR_CHUNK must not cost the connection";

	NFS_OK(*a.c, a.c->delegreturn(fa, dg.sid));
	int delays = 1;
	rc = open_for_write(*b, &a, "refused", &fb, &bsid, 20000, &delays);
	EXPECT_EQ(rc, 0) << "B's OPEN after the delegation was returned: " << b->err();
	Counters c1 = counters();
	if (c0.calls >= 0) {
		EXPECT_EQ(c1.calls - c0.calls, double(recalls.size())) << "bc_calls";
		EXPECT_EQ(c1.errors - c0.errors, 1) << "bc_errors: the one ERR_CHUNK";
		EXPECT_EQ(c1.replies - c0.replies, double(recalls.size() - 1)) << "bc_replies";
	}
	if (rc == 0)
		NFS_OK(*b, b->close(fb, bsid));
	NFS_OK(*a.c, a.c->close(fa, osid));
	NFS_OK(*b, b->destroy_session());
	NFS_OK(*a.c, a.c->destroy_session());
}

/* A dies with ganesha's CB_RECALL in flight: the call completes at once with
 * the connection (RPC_CANTRECV, ganesha logs "call result: 4"), not by its
 * timeout; ganesha keeps serving B over TCP and a new RDMA client with a back
 * channel; B still gets NFS4ERR_DELAY (the dead client's delegation stands
 * until ganesha revokes it); A's connection leaves the stats; the plugin
 * counted the call and no reply.
 *
 * Bounded to one lease time (10 s) after the recall, then ganesha is
 * restarted for the next tests, because ganesha 4.3 itself cannot get rid of
 * a delegation whose recall is pending, whatever the transport:
 *  - it re-reserves the client's lease with every recall retry, so the
 *    reaper never expires the dead client;
 *  - after two lease times delegrecall_task revokes the delegation and then
 *    drops its last state reference after release_op_context():
 *    dec_nfs4_state_ref dereferences a NULL op_ctx and ganesha dies (SIGSEGV;
 *    fixed upstream after 4.3 by 336abcba0, "free_state may not always be
 *    able to be called with a valid export");
 *  - a restarted client (same owner) makes CREATE_SESSION expire the old
 *    one, and revoke_owner_delegs() spins: state_deleg_revoke() skips a
 *    delegation whose recall is in progress, so the loop never ends. */
TEST_F(Delegations, ClientKilledWithRecallInFlight)
{
	Json j0;
	std::string why;
	size_t conns0 = stats(&j0, &why) ? connections(j0) : size_t(-1);
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	pid_t child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		close(p[0]);
		std::string err;
		auto t = RdmaTransport::connect(srv->rdma_addr, &err);
		if (!t)
			_exit(2);
		Nfs4 c(*t);
		c.back_channel = true;
		c.cb_program = 0x40000000 + 0x7100 + uint32_t(getpid() & 0xff);
		CbServer cb(t->requester(), c.cb_program);
		cb.policy = [](const CbRecord &) { return CbRecord::IGNORE; };
		if (c.mount())
			_exit(3);
		cb.set_session(c.sessionid());
		Fh f;
		Stateid s;
		Deleg d;
		if (c.open(dir, "killed", SHARE_READ, &f, &s, &d, WANT_READ_DELEG) ||
		    d.type != uint32_t(DELEG_READ))
			_exit(4);
		if (write(p[1], "r", 1) != 1)
			_exit(5);
		cb.serve_until([&] { return cb.count_op(OP_CB_RECALL) > 0; }, 30000);
		if (write(p[1], "c", 1) != 1)
			_exit(6);
		pause();
		_exit(0);
	}
	close(p[1]);
	char x = 0;
	ASSERT_EQ(read(p[0], &x, 1), 1) << "A could not mount or got no delegation\n"
					<< srv->logs();
	ASSERT_EQ(x, 'r');
	std::unique_ptr<TcpTransport> bt;
	auto b = tcp_client(&bt);
	ASSERT_TRUE(b);
	Counters c0 = counters();
	Fh fb;
	Stateid bsid;
	int rc = b->open(dir, "killed", SHARE_WRITE, &fb, &bsid);
	EXPECT_EQ(rc, int(NFS4ERR_DELAY)) << b->err();
	ASSERT_EQ(read(p[0], &x, 1), 1) << "the CB_RECALL never reached A";
	ASSERT_EQ(x, 'c');
	auto t_recall = std::chrono::steady_clock::now();
	close(p[0]);
	kill(child, SIGKILL);
	int st;
	ASSERT_EQ(waitpid(child, &st, 0), child);

	/* the recall in flight fails with the connection, at once */
	const std::string failed = "call result: 4, marking CB channel down";
	auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
	while (slurp(srv->dir + "/ganesha.log").find(failed) == std::string::npos &&
	       std::chrono::steady_clock::now() < until)
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
	EXPECT_NE(slurp(srv->dir + "/ganesha.log").find(failed), std::string::npos)
	    << "ganesha's CB_RECALL did not complete with RPC_CANTRECV within 5 s";

	/* ganesha keeps serving: TCP, and RDMA with a back channel */
	Attr at;
	NFS_OK(*b, b->getattr(dir, &at));
	{
		BcClient c = bc_client();
		ASSERT_TRUE(c.c);
		NFS_OK(*c.c, c.c->getattr(dir, &at));
		NFS_OK(*c.c, c.c->destroy_session());
	}
	/* the delegation is still the dead A's: B waits, as it must */
	rc = b->open(dir, "killed", SHARE_WRITE, &fb, &bsid);
	EXPECT_EQ(rc, int(NFS4ERR_DELAY)) << "B's OPEN while dead A holds the delegation";
	/* A's connection leaves the stats; the recall counted, never answered */
	if (conns0 != size_t(-1)) {
		Json j;
		size_t n = size_t(-1);
		until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
		while (std::chrono::steady_clock::now() < until) {
			ASSERT_TRUE(stats(&j, &why)) << why;
			n = connections(j);
			if (n == conns0)
				break;
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
		}
		EXPECT_EQ(n, conns0) << "the killed client's connection is still listed";
		Counters c1 = counters();
		EXPECT_EQ(c1.calls - c0.calls, 1) << "bc_calls: the CB_RECALL A never answered";
		EXPECT_EQ(c1.replies - c0.replies, 0) << "bc_replies";
	}
	NFS_OK(*b, b->destroy_session());
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
		      std::chrono::steady_clock::now() - t_recall)
		      .count();
	RecordProperty("ms_checked_after_recall", int(ms));
	ASSERT_LT(ms, 10000) << "checks ran past one lease time";
	ASSERT_TRUE(srv->alive()) << srv->logs();
	/* a fresh ganesha for what follows (see above: 4.3 cannot drop the
	 * dead client's delegation without crashing) */
	srv.reset(new GaneshaServer());
	ASSERT_TRUE(srv->start(options, &start_err)) << start_err;
}

} // namespace
} // namespace rrplug
