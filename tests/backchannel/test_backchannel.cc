// SPDX-License-Identifier: MIT
/*
 * test_backchannel.cc - NFSv4.1 callbacks over RPC-over-RDMA (RFC 8167,
 * RFC 8267 sections 4.4.2 and 4.5) through real ganesha 4.3 + the rpcrdma
 * plugin on the soft fabric (issue #9).
 *
 * Backchannel (ganesha as it is, FSAL MEM):
 *  - CREATE_SESSION with CONN_BACK_CHAN (AUTH_NONE and AUTH_SYS callback
 *    security) gets a back channel on the client's own RDMA connection (the
 *    plugin's "backchannel up");
 *  - (delegation recall by ganesha itself needs an FSAL that delegates:
 *    test_delegation.cc, on FSAL GLUSTER);
 *  - fore channel: ERR_CHUNK for a COMPOUND reply that fits nowhere, the
 *    retry gets NFS4ERR_RETRY_UNCACHED_REP, the next sequence works (800
 *    rounds, with and without cachethis).
 * ShimCallbacks (ganesha + tests/backchannel/cb_shim.c preloaded before the
 * plugin, which sends callbacks through the CLIENT ganesha made for the back
 * channel, with ganesha's own ntirpc calls - see cb_shim.c):
 *  - CB_NULL and CB_SEQUENCE+CB_RECALL answered over RDMA, counted in
 *    bc_calls / bc_replies;
 *  - a callback refused with ERR_CHUNK completes at once with an error
 *    (bc_errors), and the next one on the same slot (next sequence) works;
 *  - an unanswered callback times out; one larger than the client's announced
 *    inline size is never sent; a client whose posted buffers are smaller than
 *    announced loses only its own connection;
 *  - a client killed with a callback in flight: the call completes with
 *    RPC_CANTRECV, later calls fail at once, ganesha keeps serving, the
 *    connection leaves the stats.
 */
#include "backchannel/bc_fixture.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

namespace rrplug
{
namespace
{

TEST_F(Backchannel, CreateSessionGetsBackChannelOverRdma)
{
	for (uint32_t sec : {uint32_t(nfsxdr::AUTH_NONE), uint32_t(nfsxdr::AUTH_SYS)}) {
		SCOPED_TRACE(sec == nfsxdr::AUTH_NONE ? "AUTH_NONE callbacks"
						      : "AUTH_SYS callbacks");
		size_t before = 0, pos = 0;
		std::string e0 = slurp(srv->dir + "/ganesha.log");
		while ((pos = e0.find("backchannel up", pos)) != std::string::npos)
			before++, pos++;
		BcClient a = bc_client(sec);
		ASSERT_TRUE(a.c);
		EXPECT_TRUE(a.c->session_flags & CONN_BACK_CHAN)
		    << "CREATE_SESSION did not grant CONN_BACK_CHAN (csr_flags "
		    << a.c->session_flags << ")";
		std::string e1 = slurp(srv->dir + "/ganesha.log");
		size_t after = 0;
		pos = 0;
		while ((pos = e1.find("backchannel up", pos)) != std::string::npos)
			after++, pos++;
		EXPECT_EQ(after, before + 1) << "the plugin did not log 'backchannel up':\n" << e1;
		Attr at;
		NFS_OK(*a.c, a.c->getattr(dir, &at));
		EXPECT_EQ(a.cb->violations(), "");
		NFS_OK(*a.c, a.c->destroy_session());
	}
}

/* A client streaming reverse-direction Replies nobody asked for: the engine
 * drops each (global.dropped) before the plugin sees it, so none is copied
 * or queued for ganesha's workers (each was, on the old engine, the queue
 * growing with the client's stream while the receives were reposted at
 * once). ganesha keeps serving the connection. */
TEST_F(Backchannel, UnaskedCallbackRepliesAreDropped)
{
	constexpr uint32_t kUnasked = 3000;
	BcClient a = bc_client();
	ASSERT_TRUE(a.c);
	rrtest::Requester &rq = a.t->requester();
	double dropped0 = stat_at("global.dropped"), replies0 = stat_at("global.bc_replies");
	Attr at;
	for (uint32_t i = 0; i < kUnasked; i++) {
		uint32_t xid = 0x6b000000u + i;
		Bytes rpc;
		for (uint32_t w : {xid, 1u, 0u, 0u, 0u, 0u}) /* REPLY, accepted, SUCCESS */
			for (int k = 3; k >= 0; k--)
				rpc.push_back(uint8_t(w >> (8 * k)));
		ASSERT_EQ(rq.send_bc_reply(xid, rpc, 2), 0);
		/* a few at a time: they take the server's receives, not credits */
		if (i % 8 == 7) {
			NFS_OK(*a.c, a.c->getattr(dir, &at));
		}
	}
	NFS_OK(*a.c, a.c->getattr(dir, &at));
	if (dropped0 >= 0) {
		EXPECT_EQ(stat_at("global.bc_replies") - replies0, kUnasked);
		EXPECT_EQ(stat_at("global.dropped") - dropped0, kUnasked)
		    << "unasked Replies were handed to the plugin";
	}
	ASSERT_TRUE(srv->alive()) << srv->logs();
	EXPECT_TRUE(rq.connected());
	NFS_OK(*a.c, a.c->destroy_session());
}

/* RFC 8267 section 4.5 / docs/linux-client-wire.md (the Linux client retries a
 * lost reply on the same slot and sequence), fore channel: the COMPOUND ran,
 * its reply fit nowhere (ERR_CHUNK); the retry on the same slot and sequence
 * must get NFS4ERR_RETRY_UNCACHED_REP - never a replay of the cached reply,
 * which would fail with ERR_CHUNK again - and the next sequence works. With
 * cachethis ganesha holds the whole reply, so a retry that slips past the
 * plugin's slot table is replayed and fails again. Repeated many times: the
 * plugin must mark the slot before it sends ERR_CHUNK, or a client that
 * retries at once (as this one does) wins the race now and then (seen before
 * 14b1e8c: about 1 in 100 cachethis rounds). */
TEST_F(Backchannel, ForeChannelErrChunkRetryGetsRetryUncachedRep)
{
	auto t = rdma();
	ASSERT_TRUE(t);
	Nfs4 c(*t);
	NFS_OK(c, c.mount());
	Fh d;
	NFS_OK(c, c.lookup(root, dname, &d));
	for (int i = 0; i < 40; i++)
		make_file("e" + std::to_string(i) + std::string(100, 'z'));
	int replays = 0;
	const int rounds = 800;
	for (int round = 0; round < rounds; round++) {
		SCOPED_TRACE("round " + std::to_string(round));
		c.cachethis = round % 2 == 0;
		t->policy.reply_chunk = 64;
		std::vector<DirEntry> ents;
		bool eof;
		uint32_t seq_before = c.slot_seqid();
		int rc = c.readdir_once(d, 0, 65536, &ents, &eof);
		ASSERT_EQ(rc, E_RDMA_ERROR) << c.err() << " [" << c.last().shape << "]";
		ASSERT_EQ(c.last().rdma_err, uint32_t(rrtest::ERR_CHUNK));
		ASSERT_EQ(c.slot_seqid(), seq_before)
		    << "no seqid bump after ERR_CHUNK (like Linux)";
		t->policy.reply_chunk = -1;
		c.cachethis = false;
		c.recovery_statuses.clear();
		Attr a;
		rc = c.getattr(d, &a);
		if (rc == E_RDMA_ERROR) {
			/* the retry was answered by a replay of the lost reply */
			replays++;
			ADD_FAILURE()
			    << "retry of slot 0 seq " << seq_before
			    << (round % 2 == 0 ? " (cachethis)" : "")
			    << " got ERR_CHUNK again: ganesha replayed the cached reply, "
			       "so the plugin had not yet marked the slot uncached when the "
			       "retry arrived (not_delivered() in rr_reply.c must call "
			       "reply_not_delivered() before it sends ERR_CHUNK)";
			/* by now the slot is marked: the same retry again recovers */
			ASSERT_TRUE(t->requester().connected());
			ASSERT_EQ(c.getattr(d, &a), 0) << c.err();
			continue;
		}
		ASSERT_EQ(rc, 0) << c.err();
		ASSERT_EQ(c.recovery_statuses.size(), 1u) << "one recovery expected";
		EXPECT_EQ(c.recovery_statuses[0], 10068) << "NFS4ERR_RETRY_UNCACHED_REP";
		EXPECT_EQ(c.slot_seqid(), seq_before + 2) << "retry seq, then the next seq works";
	}
	RecordProperty("replayed_after_err_chunk", replays);
	std::vector<DirEntry> all;
	NFS_OK(c, c.readdir(d, &all));
	EXPECT_EQ(all.size(), 40u);
	NFS_OK(c, c.destroy_session());
}

/* ---- callbacks driven through the real ganesha process ------------------ */

#ifndef RR_CB_SHIM_SO
#define RR_CB_SHIM_SO "" /* not built (no plugin in this build): RR_CB_SHIM_SO env */
#endif

enum : int {
	RPC_SUCCESS_ = 0,
	RPC_CANTDECODERES_ = 2,
	RPC_CANTSEND_ = 3,
	RPC_CANTRECV_ = 4,
	RPC_TIMEDOUT_ = 5,
};

std::string hex(const Bytes &b)
{
	static const char *d = "0123456789abcdef";
	std::string s;
	for (uint8_t c : b) {
		s += d[c >> 4];
		s += d[c & 15];
	}
	return s;
}

/* CB_COMPOUND4args { tag, minorversion 1, callback_ident, [CB_SEQUENCE,
 * CB_RECALL when @fh is set] } (RFC 8881 section 20) */
Bytes cb_compound(const uint8_t sid[16], uint32_t seq, uint32_t slot, const Fh *fh,
		  const std::string &tag = "")
{
	nfsxdr::Xdr x;
	x.string(tag);
	x.u32(1);
	x.u32(0);
	x.u32(fh ? 2 : 1);
	x.u32(OP_CB_SEQUENCE);
	x.fixed(Bytes(sid, sid + 16));
	x.u32(seq);
	x.u32(slot);
	x.u32(slot);
	x.boolean(false);
	x.u32(0); /* referring call lists */
	if (fh) {
		x.u32(OP_CB_RECALL);
		x.u32(1); /* stateid: made up, the client only records it */
		x.fixed_fill(12, 0xab);
		x.boolean(false);
		x.opaque(fh->b);
	}
	return x.buf;
}

/*
 * ganesha 4.3 + MEM never sends a callback by itself (no delegations), so
 * these tests preload tests/backchannel/cb_shim.c before the plugin: it
 * keeps the CLIENT ganesha makes for each back channel and sends CB_NULL /
 * CB_COMPOUND through it with ganesha's own ntirpc calls, on command.
 */
class ShimCallbacks : public Backchannel
{
      public:
	static void SetUpTestSuite()
	{
		sock = "/tmp/rrcbshim-" + std::to_string(getpid()) + ".sock";
		const char *env_so = getenv("RR_CB_SHIM_SO");
		std::string so = env_so && *env_so ? env_so : RR_CB_SHIM_SO;
		if (so.empty() || access(so.c_str(), R_OK)) {
			PluginTest::TearDownTestSuite();
			skip_why = "the test-only callback shim (cb_shim.c) is not built here; "
				   "set RR_CB_SHIM_SO";
			return;
		}
		options = GaneshaOptions();
		options.extra_log = "\tCOMPONENTS { NFS_CB = FULL_DEBUG; }\n";
		options.preload_first = so;
		options.env = {"RR_CB_SHIM_SOCK=" + sock};
		PluginTest::SetUpTestSuite();
	}
	static void TearDownTestSuite()
	{
		PluginTest::TearDownTestSuite();
		unlink(sock.c_str());
	}

      protected:
	static std::string sock;

	/* one command to the shim; its one-line answer ("" on failure) */
	static std::string shim(const std::string &cmd)
	{
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		sockaddr_un sun = {};
		sun.sun_family = AF_UNIX;
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock.c_str());
		if (fd < 0 || connect(fd, reinterpret_cast<sockaddr *>(&sun), sizeof(sun))) {
			if (fd >= 0)
				close(fd);
			return "";
		}
		std::string line = cmd + "\n";
		if (write(fd, line.data(), line.size()) != ssize_t(line.size())) {
			close(fd);
			return "";
		}
		std::string out;
		char buf[256];
		ssize_t n;
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			out.append(buf, size_t(n));
		close(fd);
		return out;
	}

	/* a shim command that blocks on the callback: run it while @a serves */
	std::string shim_serving(BcClient &a, const std::string &cmd, int timeout_ms = 15000)
	{
		std::atomic<bool> done{false};
		std::string out;
		std::thread th([&] {
			out = shim(cmd);
			done = true;
		});
		a.cb->serve_until([&] { return done.load(); }, timeout_ms);
		th.join();
		return out;
	}

	/* send a CB_COMPOUND; its shim call id (or -1, with a test failure);
	 * @send_st: what CLNT_CALL_BACK returned (must be RPC_SUCCESS if null) */
	int compound(uint32_t prog, int tmo_s, const Bytes &args, int *send_st = nullptr)
	{
		std::string r = shim("compound " + std::to_string(prog) + " " +
				     std::to_string(tmo_s) + " " + hex(args));
		int id = -1, st = -1;
		if (sscanf(r.c_str(), "id %d send %d", &id, &st) != 2) {
			ADD_FAILURE() << "shim: " << r;
			return -1;
		}
		if (send_st)
			*send_st = st;
		else
			EXPECT_EQ(st, 0) << "CLNT_CALL_BACK failed at once: clnt_stat " << st;
		return id;
	}

	/* wait for call @id, serving @a meanwhile (unless null); its clnt_stat */
	int result(BcClient *a, int id, uint32_t *cbstatus, int timeout_ms = 15000)
	{
		auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
		for (;;) {
			std::string r = shim("result " + std::to_string(id));
			int st;
			unsigned cbs;
			if (sscanf(r.c_str(), "done %d %u", &st, &cbs) == 2) {
				if (cbstatus)
					*cbstatus = cbs;
				return st;
			}
			if (r != "pending\n") {
				ADD_FAILURE() << "shim: " << r;
				return -1;
			}
			if (std::chrono::steady_clock::now() > end) {
				ADD_FAILURE() << "callback " << id << " not completed in "
					      << timeout_ms << " ms";
				return -1;
			}
			serve_or_sleep(a, 20);
		}
	}
};
std::string ShimCallbacks::sock;

TEST_F(ShimCallbacks, CbNullOverRdma)
{
	BcClient a = bc_client();
	ASSERT_TRUE(a.c);
	Counters c0 = counters();
	std::string r = shim_serving(a, "null " + std::to_string(a.c->cb_program));
	EXPECT_EQ(r, "stat 0\n") << "CB_NULL through the plugin's CLIENT";
	ASSERT_EQ(a.cb->count_proc(CB_NULL_PROC), 1u);
	const CbRecord &rec = a.cb->log().back();
	EXPECT_EQ(rec.prog, a.c->cb_program);
	EXPECT_EQ(rec.vers, 1u);
	EXPECT_EQ(a.cb->violations(), "");
	Counters c1 = counters();
	if (c0.calls >= 0) {
		EXPECT_EQ(c1.calls - c0.calls, 1) << "bc_calls";
		EXPECT_EQ(c1.replies - c0.replies, 1) << "bc_replies";
		EXPECT_EQ(c1.errors - c0.errors, 0) << "bc_errors";
	}
	/* the fore channel is unaffected */
	Attr at;
	NFS_OK(*a.c, a.c->getattr(dir, &at));
	NFS_OK(*a.c, a.c->destroy_session());
}

TEST_F(ShimCallbacks, CbRecallAnsweredOverRdma)
{
	Fh f = make_file("recalled");
	BcClient a = bc_client();
	ASSERT_TRUE(a.c);
	Counters c0 = counters();
	for (uint32_t i = 1; i <= 3; i++) {
		SCOPED_TRACE("callback " + std::to_string(i));
		int id = compound(a.c->cb_program, 10,
				  cb_compound(a.c->sessionid(), a.cb->slot_seq(0) + 1, 0, &f));
		ASSERT_GE(id, 0);
		uint32_t cbs = 99;
		EXPECT_EQ(result(&a, id, &cbs), RPC_SUCCESS_);
		EXPECT_EQ(cbs, 0u) << "CB_COMPOUND status";
		ASSERT_EQ(a.cb->count_op(OP_CB_RECALL), i);
		const CbRecord &rec = a.cb->log().back();
		EXPECT_EQ(rec.recall_fh.b, f.b);
		EXPECT_EQ(rec.seq, i);
		EXPECT_EQ(rec.seq_status, 0u);
	}
	EXPECT_EQ(a.cb->violations(), "");
	Counters c1 = counters();
	if (c0.calls >= 0) {
		EXPECT_EQ(c1.calls - c0.calls, 3) << "bc_calls";
		EXPECT_EQ(c1.replies - c0.replies, 3) << "bc_replies";
	}
	NFS_OK(*a.c, a.c->destroy_session());
}

/* RFC 8267 section 4.5 for the back channel: the client refuses a callback
 * with ERR_CHUNK; the server-side call completes with an error at once (no
 * timeout), the client's backchannel credit comes back, and the next
 * callback - with the next sequence on the same slot - succeeds. */
TEST_F(ShimCallbacks, CallbackRefusedWithErrChunkThenNextSucceeds)
{
	Fh f = make_file("refused");
	BcClient a = bc_client();
	ASSERT_TRUE(a.c);
	bool refuse = true;
	a.cb->policy = [&](const CbRecord &) {
		return refuse ? CbRecord::ERR_CHUNK : CbRecord::ANSWER;
	};
	Counters c0 = counters();
	for (int kind = 0; kind < 2; kind++) {
		SCOPED_TRACE(kind == 0 ? "CB_NULL" : "CB_COMPOUND");
		refuse = true;
		auto t0 = std::chrono::steady_clock::now();
		if (kind == 0) {
			std::string r = shim_serving(a, "null " + std::to_string(a.c->cb_program));
			int st = -1;
			ASSERT_EQ(sscanf(r.c_str(), "stat %d", &st), 1) << r;
			EXPECT_EQ(st, RPC_CANTDECODERES_) << "a CB_NULL refused with ERR_CHUNK";
		} else {
			uint32_t seq = a.cb->slot_seq(0) + 1;
			int id = compound(a.c->cb_program, 10,
					  cb_compound(a.c->sessionid(), seq, 0, &f));
			ASSERT_GE(id, 0);
			EXPECT_EQ(result(&a, id, nullptr), RPC_CANTDECODERES_);
			EXPECT_EQ(a.cb->slot_seq(0), seq) << "the refused call counted as executed";
		}
		auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
			      std::chrono::steady_clock::now() - t0)
			      .count();
		EXPECT_LT(ms, 3000) << "the refusal must complete the call, not its timeout";
		EXPECT_EQ(a.cb->log().back().action, CbRecord::ERR_CHUNK);
		/* the next callback goes through */
		refuse = false;
		if (kind == 0) {
			EXPECT_EQ(shim_serving(a, "null " + std::to_string(a.c->cb_program)),
				  "stat 0\n")
			    << "the CB_NULL after a refused one";
		} else {
			uint32_t seq = a.cb->slot_seq(0) + 1;
			int id = compound(a.c->cb_program, 10,
					  cb_compound(a.c->sessionid(), seq, 0, &f));
			ASSERT_GE(id, 0);
			uint32_t cbs = 99;
			EXPECT_EQ(result(&a, id, &cbs), RPC_SUCCESS_)
			    << "the callback after a refused one (sequence " << seq << ")";
			EXPECT_EQ(cbs, 0u);
			EXPECT_EQ(a.cb->log().back().seq_status, 0u)
			    << a.cb->log().back().describe();
		}
	}
	Counters c1 = counters();
	if (c0.calls >= 0) {
		EXPECT_EQ(c1.calls - c0.calls, 4) << "bc_calls";
		EXPECT_EQ(c1.errors - c0.errors, 2) << "bc_errors: the two ERR_CHUNK answers";
		EXPECT_EQ(c1.replies - c0.replies, 2) << "bc_replies";
	}
	EXPECT_TRUE(a.t->requester().connected());
	Attr at;
	NFS_OK(*a.c, a.c->getattr(dir, &at));
	NFS_OK(*a.c, a.c->destroy_session());
}

/* A callback the client never answers completes with RPC_TIMEDOUT after
 * its timeout; the connection and the fore channel keep working. */
TEST_F(ShimCallbacks, UnansweredCallbackTimesOut)
{
	BcClient a = bc_client();
	ASSERT_TRUE(a.c);
	a.cb->policy = [](const CbRecord &) { return CbRecord::IGNORE; };
	auto t0 = std::chrono::steady_clock::now();
	int id = compound(a.c->cb_program, 2, cb_compound(a.c->sessionid(), 1, 0, nullptr));
	ASSERT_GE(id, 0);
	EXPECT_EQ(result(&a, id, nullptr, 10000), RPC_TIMEDOUT_);
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
		      std::chrono::steady_clock::now() - t0)
		      .count();
	EXPECT_GE(ms, 1900);
	EXPECT_LT(ms, 5000);
	Attr at;
	NFS_OK(*a.c, a.c->getattr(dir, &at));
	NFS_OK(*a.c, a.c->destroy_session());
}

/* The client process dies while a callback is in flight: the call completes
 * (connection lost, not a 30 s timeout), ganesha keeps serving RDMA and TCP,
 * and the connection leaves the stats. */
TEST_F(ShimCallbacks, ClientKilledWithCallbackInFlight)
{
	Json j0;
	std::string why;
	size_t conns0 = stats(&j0, &why) ? connections(j0) : size_t(-1);
	uint32_t prog = 0x40000000 + 0x7000 + uint32_t(getpid() & 0xfff);
	int rd = -1;
	pid_t child = spawn_silent_client(
	    prog, nullptr, [](CbServer &cb) { return cb.count_proc(CB_COMPOUND_PROC) > 0; }, &rd);
	ASSERT_GT(child, 0);
	char x = 0;
	ASSERT_EQ(read(rd, &x, 1), 1) << "the child could not mount";
	ASSERT_EQ(x, 'r');
	uint8_t zero_sid[16] = {};
	int id = compound(prog, 30, cb_compound(zero_sid, 1, 0, nullptr));
	ASSERT_GE(id, 0);
	ASSERT_EQ(read(rd, &x, 1), 1) << "the callback never reached the child";
	ASSERT_EQ(x, 'c');
	close(rd);
	kill(child, SIGKILL);
	int st;
	ASSERT_EQ(waitpid(child, &st, 0), child);
	auto t0 = std::chrono::steady_clock::now();
	int rs = result(nullptr, id, nullptr, 20000);
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
		      std::chrono::steady_clock::now() - t0)
		      .count();
	EXPECT_EQ(rs, RPC_CANTRECV_) << "the in-flight callback fails with the connection";
	EXPECT_LT(ms, 10000) << "completed by the connection loss, not by the 30 s timeout";
	/* a later callback on the dead back channel fails at once */
	std::string r = shim("null " + std::to_string(prog));
	EXPECT_EQ(r, "stat " + std::to_string(RPC_CANTSEND_) + "\n");
	shim("drop " + std::to_string(prog));
	ASSERT_TRUE(srv->alive()) << srv->logs();
	/* ganesha keeps serving: a new RDMA client with its own back channel, and TCP */
	{
		BcClient b = bc_client();
		ASSERT_TRUE(b.c);
		EXPECT_EQ(shim_serving(b, "null " + std::to_string(b.c->cb_program)), "stat 0\n");
		Attr at;
		NFS_OK(*b.c, b.c->getattr(dir, &at));
		NFS_OK(*b.c, b.c->destroy_session());
	}
	Attr at;
	NFS_OK(*tc, tc->getattr(dir, &at));
	if (conns0 != size_t(-1)) {
		EXPECT_EQ(wait_connections(conns0, 10000), conns0)
		    << "the killed client's connection is still listed";
	}
}

/* RFC 8167 section 3 (and RFC 8166 credits): reverse-direction calls stay
 * within the client's backchannel grant, counted apart from the forward
 * channel. The client grants 2 in its replies: with two callbacks held
 * unanswered a third is not sent (it fails after the plugin's credit wait),
 * the held ones time out (which gives their credits back), their late
 * replies are received and dropped (they answer nothing), and the next
 * callback works. */
TEST_F(ShimCallbacks, BackchannelGrantRespectedAndLateRepliesReturnCredits)
{
	BcClient a = bc_client();
	ASSERT_TRUE(a.c);
	const uint8_t *sid = a.c->sessionid();
	/* one answered callback: our reply grants 2 */
	int id = compound(a.c->cb_program, 5, cb_compound(sid, 1, 0, nullptr));
	ASSERT_GE(id, 0);
	ASSERT_EQ(result(&a, id, nullptr), RPC_SUCCESS_);
	EXPECT_GE(a.cb->log().back().rdma_credits, 1u) << "a call's rdma_credit is never 0";
	a.cb->policy = [](const CbRecord &) { return CbRecord::DEFER; };
	int h1 = compound(a.c->cb_program, 2, cb_compound(sid, 2, 0, nullptr));
	ASSERT_TRUE(a.cb->serve_until([&] { return a.cb->deferred() == 1; }, 5000));
	int h2 = compound(a.c->cb_program, 2, cb_compound(sid, 3, 0, nullptr));
	ASSERT_TRUE(a.cb->serve_until([&] { return a.cb->deferred() == 2; }, 5000))
	    << "the second callback within a grant of 2 did not arrive";
	/* a third exceeds the grant: the shim blocks in CLNT_CALL_BACK meanwhile */
	std::atomic<bool> done{false};
	int third_st = -1, third_id = -1;
	std::thread th([&] {
		std::string r = shim("compound " + std::to_string(a.c->cb_program) + " 2 " +
				     hex(cb_compound(sid, 4, 0, nullptr)));
		if (sscanf(r.c_str(), "id %d send %d", &third_id, &third_st) != 2)
			third_st = -2;
		done = true;
	});
	a.cb->serve_until([&] { return done.load(); }, 10000);
	th.join();
	EXPECT_EQ(third_st, RPC_CANTSEND_) << "a third callback beyond the client's grant of 2";
	EXPECT_EQ(a.cb->log().size(), 3u) << "the client received a callback beyond its grant";
	EXPECT_EQ(result(&a, h1, nullptr), RPC_TIMEDOUT_);
	EXPECT_EQ(result(&a, h2, nullptr), RPC_TIMEDOUT_);
	/* the late replies: received, dropped by the engine */
	Counters c0 = counters();
	EXPECT_EQ(a.cb->send_deferred(), 2u);
	a.cb->policy = nullptr;
	/* the server counts them as their receives complete: serve until it
	 * has (without a stats socket nothing tells: serve 200 ms) */
	if (c0.replies >= 0)
		a.cb->serve_until([&] { return stat_at("global.bc_replies") - c0.replies >= 2; },
				  10000);
	else
		a.cb->serve_until([] { return false; }, 200);
	Counters c1 = counters();
	if (c0.replies >= 0) {
		EXPECT_EQ(c1.replies - c0.replies, 2) << "late replies still count as replies";
	}
	id = compound(a.c->cb_program, 5, cb_compound(sid, 4, 0, nullptr));
	ASSERT_GE(id, 0);
	uint32_t cbs = 99;
	EXPECT_EQ(result(&a, id, &cbs), RPC_SUCCESS_) << "a callback after the late replies";
	EXPECT_EQ(cbs, 0u);
	EXPECT_EQ(a.cb->violations(), "");
	Attr at;
	NFS_OK(*a.c, a.c->getattr(dir, &at));
	NFS_OK(*a.c, a.c->destroy_session());
}

/* Callbacks the client never answers, its whole grant of them, time out,
 * and each gives its backchannel credit back then: the next callbacks are
 * sent at once (they were refused for ever: the engine's count of
 * callbacks awaiting an answer never came down). The timed-out ones' late
 * replies come while the next two hold the grant: they are dropped and free
 * neither's credit, and those two complete with their own replies. */
TEST_F(ShimCallbacks, TimedOutCallbacksGiveTheirCreditsBack)
{
	BcClient a = bc_client();
	ASSERT_TRUE(a.c);
	const uint8_t *sid = a.c->sessionid();
	const uint32_t prog = a.c->cb_program;
	/* one answered callback: our reply grants 2 */
	int id = compound(prog, 5, cb_compound(sid, 1, 0, nullptr));
	ASSERT_GE(id, 0);
	ASSERT_EQ(result(&a, id, nullptr), RPC_SUCCESS_);
	/* the grant's worth held unanswered until they time out */
	a.cb->policy = [](const CbRecord &) { return CbRecord::DEFER; };
	int h1 = compound(prog, 1, cb_compound(sid, 2, 0, nullptr));
	ASSERT_TRUE(a.cb->serve_until([&] { return a.cb->deferred() == 1; }, 5000));
	int h2 = compound(prog, 1, cb_compound(sid, 3, 0, nullptr));
	ASSERT_TRUE(a.cb->serve_until([&] { return a.cb->deferred() == 2; }, 5000));
	EXPECT_EQ(result(&a, h1, nullptr), RPC_TIMEDOUT_);
	EXPECT_EQ(result(&a, h2, nullptr), RPC_TIMEDOUT_);
	/* two more: sent at once, within the grant the timeouts gave back */
	std::vector<int> next;
	for (uint32_t seq : {4u, 5u}) {
		auto t0 = std::chrono::steady_clock::now();
		int send_st = -1;
		int h = compound(prog, 10, cb_compound(sid, seq, 0, nullptr), &send_st);
		auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
			      std::chrono::steady_clock::now() - t0)
			      .count();
		ASSERT_GE(h, 0);
		next.push_back(h);
		EXPECT_EQ(send_st, RPC_SUCCESS_)
		    << "callback seq " << seq << " after the grant's worth timed out";
		EXPECT_LT(ms, 1500) << "it waited for a credit";
		if (send_st != RPC_SUCCESS_)
			break;
		ASSERT_TRUE(a.cb->serve_until([&] { return a.cb->deferred() == seq - 1; }, 5000));
	}
	if (HasFailure())
		return;
	/* all four replies now: two late, two the answers */
	Counters c0 = counters();
	double dropped0 = stat_at("global.dropped");
	EXPECT_EQ(a.cb->send_deferred(), 4u);
	a.cb->policy = nullptr;
	uint32_t cbs = 99;
	for (int h : next) {
		EXPECT_EQ(result(&a, h, &cbs), RPC_SUCCESS_);
		EXPECT_EQ(cbs, 0u);
	}
	if (c0.replies >= 0) {
		a.cb->serve_until([&] { return stat_at("global.bc_replies") - c0.replies >= 4; },
				  10000);
		EXPECT_EQ(stat_at("global.bc_replies") - c0.replies, 4) << "all four received";
		EXPECT_EQ(stat_at("global.dropped") - dropped0, 2) << "the two late ones dropped";
	}
	/* and the grant is whole again */
	id = compound(prog, 5, cb_compound(sid, 6, 0, nullptr));
	ASSERT_GE(id, 0);
	EXPECT_EQ(result(&a, id, &cbs), RPC_SUCCESS_);
	EXPECT_EQ(cbs, 0u);
	EXPECT_EQ(a.cb->violations(), "");
	Attr at;
	NFS_OK(*a.c, a.c->getattr(dir, &at));
	NFS_OK(*a.c, a.c->destroy_session());
}

/* Hostile answers to callbacks: a reply whose RPC xid names no call, a
 * reply the RPC layer rejects (MSG_DENIED), a reply too short to be one,
 * and an RDMA_ERROR with an unknown code. Each callback still completes
 * (by error or by its timeout), ganesha survives, and a proper callback on a
 * (possibly new) connection works afterwards. */
TEST_F(ShimCallbacks, HostileCallbackAnswersAreSurvived)
{
	struct Case {
		const char *name;
		std::function<void(rrtest::Requester &, const CbRecord &)> answer;
	};
	auto be = [](std::initializer_list<uint32_t> w) {
		Bytes b;
		for (uint32_t v : w)
			for (int i = 3; i >= 0; i--)
				b.push_back(uint8_t(v >> (8 * i)));
		return b;
	};
	std::vector<Case> cases = {
	    {"reply with another RPC xid",
	     [&](rrtest::Requester &r, const CbRecord &c) {
		     r.send_bc_reply(c.rdma_xid,
				     be({c.rdma_xid ^ 0x5a5a5a5au, 1, 0, 0, 0, 0, 0, 0, 0}));
	     }},
	    {"MSG_DENIED (AUTH_ERROR)",
	     [&](rrtest::Requester &r, const CbRecord &c) {
		     r.send_bc_reply(c.rdma_xid, be({c.rdma_xid, 1, 1, 1, 1}));
	     }},
	    {"reply of 4 bytes",
	     [&](rrtest::Requester &r, const CbRecord &c) {
		     r.send_bc_reply(c.rdma_xid, be({c.rdma_xid}));
	     }},
	    {"accepted reply cut after the header",
	     [&](rrtest::Requester &r, const CbRecord &c) {
		     r.send_bc_reply(c.rdma_xid, be({c.rdma_xid, 1, 0, 0, 0, 0}));
	     }},
	    {"RDMA_ERROR with code 77",
	     [&](rrtest::Requester &r, const CbRecord &c) { r.send_bc_error(c.rdma_xid, 77); }}};
	for (const Case &k : cases) {
		SCOPED_TRACE(k.name);
		BcClient a = bc_client();
		ASSERT_TRUE(a.c);
		rrtest::Requester &rq = a.t->requester();
		a.cb->policy = [&](const CbRecord &c) {
			k.answer(rq, c);
			return CbRecord::IGNORE;
		};
		auto t0 = std::chrono::steady_clock::now();
		int id = compound(a.c->cb_program, 2, cb_compound(a.c->sessionid(), 1, 0, nullptr));
		ASSERT_GE(id, 0);
		int st = result(&a, id, nullptr, 8000);
		auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
			      std::chrono::steady_clock::now() - t0)
			      .count();
		EXPECT_NE(st, RPC_SUCCESS_) << "a hostile answer must not count as success";
		EXPECT_LT(ms, 5000);
		RecordProperty(std::string(k.name), "clnt_stat " + std::to_string(st) + " after " +
							std::to_string(ms) + " ms");
		printf("  %-40s -> clnt_stat %d after %lld ms, connection %s\n", k.name, st,
		       (long long)ms, rq.connected() ? "up" : "closed");
		ASSERT_TRUE(srv->alive()) << srv->logs();
		BcClient b = bc_client();
		ASSERT_TRUE(b.c);
		EXPECT_EQ(shim_serving(b, "null " + std::to_string(b.c->cb_program)), "stat 0\n")
		    << "a proper callback after the hostile one";
		if (rq.connected() && a.c)
			a.c->destroy_session();
		NFS_OK(*b.c, b.c->destroy_session());
	}
}

/* RFC 8167 / RFC 8267 section 4.4.2: callbacks go inline only, within the
 * receive buffers the client announced (RFC 8797 CM private data). A client
 * that announced 1 KB gets no callback larger than that: the call fails at
 * once (RPC_CANTENCODEARGS), nothing reaches the wire, and smaller callbacks
 * still work. */
TEST_F(ShimCallbacks, CallbackLargerThanClientInlineIsNotSent)
{
	Fh f = make_file("big");
	rrtest::RequesterOptions ro;
	ro.priv.recv_size = 1024;
	BcClient a = bc_client(nfsxdr::AUTH_NONE, &ro);
	ASSERT_TRUE(a.c);
	ASSERT_EQ(a.t->requester().inline_recv(), 1024u);
	Counters c0 = counters();
	Bytes big =
	    cb_compound(a.c->sessionid(), a.cb->slot_seq(0) + 1, 0, &f, std::string(1200, 't'));
	int send_st = -1;
	int id = compound(a.c->cb_program, 5, big, &send_st);
	ASSERT_GE(id, 0);
	EXPECT_EQ(send_st, 1) << "RPC_CANTENCODEARGS: larger than the client's inline threshold";
	EXPECT_EQ(result(&a, id, nullptr, 5000), 1);
	a.cb->serve_until([] { return false; }, 200);
	EXPECT_EQ(a.cb->log().size(), 0u) << "the oversize callback reached the client";
	EXPECT_TRUE(a.t->requester().connected());
	Counters c1 = counters();
	if (c0.calls >= 0) {
		EXPECT_EQ(c1.calls - c0.calls, 0) << "bc_calls counted an unsent callback";
	}
	/* a callback that fits goes through, on the same slot and sequence */
	uint32_t cbs = 99;
	id = compound(a.c->cb_program, 5,
		      cb_compound(a.c->sessionid(), a.cb->slot_seq(0) + 1, 0, &f, "small"));
	ASSERT_GE(id, 0);
	EXPECT_EQ(result(&a, id, &cbs), RPC_SUCCESS_);
	EXPECT_EQ(cbs, 0u);
	EXPECT_EQ(a.cb->violations(), "");
	NFS_OK(*a.c, a.c->destroy_session());
}

/* A client that posts receive buffers smaller than it announced (4 KB
 * announced, 1 KB posted) cannot take a 2 KB callback: its connection
 * breaks. The callback in flight completes (not by timeout), ganesha keeps
 * serving, other clients' back channels work. */
TEST_F(ShimCallbacks, ClientWithShrunkReceiveBuffersLosesOnlyItsConnection)
{
	Fh f = make_file("shrunk");
	rrtest::RequesterOptions ro;
	ro.recv_buf_size = 1024; /* announced: the default 4096 */
	BcClient a = bc_client(nfsxdr::AUTH_NONE, &ro);
	ASSERT_TRUE(a.c);
	ASSERT_EQ(a.t->requester().inline_recv(), 4096u);
	Bytes big =
	    cb_compound(a.c->sessionid(), a.cb->slot_seq(0) + 1, 0, &f, std::string(2000, 's'));
	auto t0 = std::chrono::steady_clock::now();
	int id = compound(a.c->cb_program, 20, big);
	ASSERT_GE(id, 0);
	int st = result(&a, id, nullptr, 20000);
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
		      std::chrono::steady_clock::now() - t0)
		      .count();
	EXPECT_NE(st, RPC_SUCCESS_);
	EXPECT_NE(st, RPC_TIMEDOUT_) << "completed by the connection loss, not the timeout";
	EXPECT_LT(ms, 10000);
	EXPECT_EQ(a.cb->log().size(), 0u) << "the callback cannot have been received";
	EXPECT_TRUE(a.t->requester().wait_disconnected(5000))
	    << "a Send larger than the posted receive buffer must break the connection";
	ASSERT_TRUE(srv->alive()) << srv->logs();
	BcClient b = bc_client();
	ASSERT_TRUE(b.c);
	EXPECT_EQ(shim_serving(b, "null " + std::to_string(b.c->cb_program)), "stat 0\n");
	NFS_OK(*b.c, b.c->destroy_session());
}

} // namespace
} // namespace rrplug
