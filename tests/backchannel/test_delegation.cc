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
#include <functional>
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
			serve_or_sleep(a, 200);
		}
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

	/* A (RDMA, back channel) holds a read delegation on a file that B
	 * (TCP) then opens for write, and gets NFS4ERR_DELAY for */
	struct Scene {
		std::string name;
		BcClient a;
		Fh fa, fb;
		Stateid osid, bsid;
		Deleg dg;
		std::unique_ptr<TcpTransport> bt;
		std::unique_ptr<Nfs4> b;
		Counters c0;
	};
	/* A's delegation; then, after @before_b (e.g. A's callback policy), B's
	 * conflicting OPEN; counters from just before B's OPEN */
	void start_scene(Scene *sc, const std::string &name,
			 const std::function<void()> &before_b = nullptr)
	{
		sc->name = name;
		sc->a = bc_client();
		ASSERT_TRUE(sc->a.c);
		ASSERT_TRUE(sc->a.c->session_flags & CONN_BACK_CHAN);
		read_deleg(sc->a, name, &sc->fa, &sc->osid, &sc->dg);
		if (HasFatalFailure())
			return;
		if (before_b)
			before_b();
		sc->b = tcp_client(&sc->bt);
		ASSERT_TRUE(sc->b);
		sc->c0 = counters();
		int rc = sc->b->open(dir, name, SHARE_WRITE, &sc->fb, &sc->bsid);
		EXPECT_EQ(rc, int(NFS4ERR_DELAY))
		    << "B's OPEN while A holds the delegation: " << sc->b->err();
	}
	/* A returns the delegation on the fore channel, as a client does; B's
	 * OPEN completes (retried past NFS4ERR_DELAY); both clients close */
	void finish_scene(Scene *sc)
	{
		NFS_OK(*sc->a.c, sc->a.c->delegreturn(sc->fa, sc->dg.sid));
		int delays = 1;
		int rc =
		    open_for_write(*sc->b, &sc->a, sc->name, &sc->fb, &sc->bsid, 20000, &delays);
		EXPECT_EQ(rc, 0) << "B's OPEN after the delegation was returned: " << sc->b->err();
		RecordProperty("b_delays", delays);
		if (rc == 0)
			NFS_OK(*sc->b, sc->b->close(sc->fb, sc->bsid));
		NFS_OK(*sc->a.c, sc->a.c->close(sc->fa, sc->osid));
		NFS_OK(*sc->b, sc->b->destroy_session());
		NFS_OK(*sc->a.c, sc->a.c->destroy_session());
	}

	static std::unique_ptr<GlusterVolume> vol;
	static std::string gluster_missing, gluster_err;
};
std::unique_ptr<GlusterVolume> Delegations::vol;
std::string Delegations::gluster_missing, Delegations::gluster_err;

TEST_F(Delegations, DelegationRecalledOverRdma)
{
	Scene sc;
	start_scene(&sc, "deleg");
	if (HasFatalFailure())
		return;
	BcClient &a = sc.a;
	ASSERT_TRUE(a.cb->serve_until([&] { return a.cb->count_op(OP_CB_RECALL) > 0; }, 20000))
	    << "no CB_RECALL reached A's RDMA connection in 20 s; callbacks seen: "
	    << a.cb->log().size() << "\n"
	    << srv->logs();
	const CbRecord r = a.cb->log().back();
	EXPECT_TRUE(r.has_seq) << r.describe();
	EXPECT_EQ(r.action, CbRecord::ANSWER);
	EXPECT_EQ(r.status, 0u) << r.describe();
	EXPECT_EQ(r.seq_status, 0u) << r.describe();
	EXPECT_EQ(r.recall_fh.b, sc.fa.b) << "CB_RECALL names another file";
	EXPECT_EQ(memcmp(r.recall_sid.other, sc.dg.sid.other, 12), 0) << "CB_RECALL stateid";
	EXPECT_EQ(memcmp(r.sessionid, a.c->sessionid(), 16), 0) << "CB_SEQUENCE session";
	EXPECT_EQ(a.cb->violations(), "");
	finish_scene(&sc);
	/* the callback went over RDMA: the plugin counted it (TCP callbacks are
	 * ganesha's own and never reach these counters) */
	Counters c1 = counters();
	if (sc.c0.calls >= 0) {
		EXPECT_EQ(c1.calls - sc.c0.calls, 1) << "bc_calls: the one CB_RECALL";
		EXPECT_EQ(c1.replies - sc.c0.replies, 1) << "bc_replies";
		EXPECT_EQ(c1.errors - sc.c0.errors, 0) << "bc_errors";
	}
}

/* RFC 8267 section 4.5 on the back channel, with ganesha's own recall: A
 * refuses the CB_RECALL with ERR_CHUNK (it ran the call, its reply is
 * lost). ganesha retries the recall a second later; the retry must use a
 * usable slot with the next sequence - the same sequence would be a replay
 * (NFS4ERR_RETRY_UNCACHED_REP), a lost slot no retry at all. A answers the
 * retry, returns the delegation, B's OPEN completes. */
TEST_F(Delegations, RecallRefusedWithErrChunkIsRetriedOnTheNextSequence)
{
	Scene sc;
	int recalls_seen = 0;
	start_scene(&sc, "refused", [&] {
		sc.a.cb->policy = [&](const CbRecord &c) {
			if (!c.has_recall)
				return CbRecord::ANSWER;
			return recalls_seen++ == 0 ? CbRecord::ERR_CHUNK : CbRecord::ANSWER;
		};
	});
	if (HasFatalFailure())
		return;
	BcClient &a = sc.a;
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
	EXPECT_EQ(r1.seq_status, 0u)
	    << "the retry is a new call on a working slot: " << r1.describe();
	EXPECT_EQ(r1.status, 0u) << r1.describe();
	EXPECT_EQ(memcmp(r1.recall_sid.other, sc.dg.sid.other, 12), 0);
	EXPECT_EQ(a.cb->violations(), "");
	EXPECT_TRUE(a.t->requester().connected()) << "ERR_CHUNK must not cost the connection";
	finish_scene(&sc);
	Counters c1 = counters();
	if (sc.c0.calls >= 0) {
		EXPECT_EQ(c1.calls - sc.c0.calls, double(recalls.size())) << "bc_calls";
		EXPECT_EQ(c1.errors - sc.c0.errors, 1) << "bc_errors: the one ERR_CHUNK";
		EXPECT_EQ(c1.replies - sc.c0.replies, double(recalls.size() - 1)) << "bc_replies";
	}
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
	int rd = -1;
	pid_t child = spawn_silent_client(
	    0x40000000 + 0x7100 + uint32_t(getpid() & 0xff),
	    [&](Nfs4 &c) {
		    Fh f;
		    Stateid s;
		    Deleg d;
		    return c.open(dir, "killed", SHARE_READ, &f, &s, &d, WANT_READ_DELEG) == 0 &&
			   d.type == uint32_t(DELEG_READ);
	    },
	    [](CbServer &cb) { return cb.count_op(OP_CB_RECALL) > 0; }, &rd);
	ASSERT_GT(child, 0);
	char x = 0;
	ASSERT_EQ(read(rd, &x, 1), 1) << "A could not mount or got no delegation\n" << srv->logs();
	ASSERT_EQ(x, 'r');
	std::unique_ptr<TcpTransport> bt;
	auto b = tcp_client(&bt);
	ASSERT_TRUE(b);
	Counters c0 = counters();
	Fh fb;
	Stateid bsid;
	int rc = b->open(dir, "killed", SHARE_WRITE, &fb, &bsid);
	EXPECT_EQ(rc, int(NFS4ERR_DELAY)) << b->err();
	ASSERT_EQ(read(rd, &x, 1), 1) << "the CB_RECALL never reached A";
	ASSERT_EQ(x, 'c');
	auto t_recall = std::chrono::steady_clock::now();
	close(rd);
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
		EXPECT_EQ(wait_connections(conns0, 3000), conns0)
		    << "the killed client's connection is still listed";
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
