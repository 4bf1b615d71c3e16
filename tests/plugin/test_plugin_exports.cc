// SPDX-License-Identifier: MIT
/*
 * test_plugin_exports.cc - RDMA { Exclude_Exports }: real ganesha with two
 * MEM exports, /mem (Export_Id 1) and /off (Export_Id 2), and
 * `Exclude_Exports = 2;`. Over RDMA, export 2 is out of reach: NFSv3 calls
 * on its handle (from MNT, which Linux does over TCP) are refused
 * AUTH_ERROR/AUTH_FAILED and do nothing; NFSv4.1 PUTROOTFH + LOOKUP of /off
 * is NFS4ERR_NOENT, the pseudo root's READDIR leaves it out, and PUTFH of its
 * handle is NFS4ERR_ACCESS - ganesha's answers for an export whose
 * Transports refuse the client's. Export 1 works over RDMA, and export 2
 * works over TCP, for both versions. Export 3 (/udp, `Transports = UDP;`)
 * shows ganesha's own answers over TCP, which those over RDMA must match.
 * A second ganesha excludes Export_Id 0, the NFSv4 pseudo root.
 */
#include "support/plugin_common.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

using namespace nfsc;

namespace rrplug
{
namespace
{

constexpr int NFS4ERR_NOENT = 2;
constexpr int NFS4ERR_ACCESS = 13;
constexpr int NFS3ERR_NOENT = 2;
constexpr int NFS3ERR_STALE = 70;
constexpr int NFS4ERR_STALE = 70;
constexpr int ERR_BADHANDLE = 10001; /* NFS3ERR_ and NFS4ERR_BADHANDLE */

/* A relabelled handle refused: STALE, or BADHANDLE where export 1 is of
 * another FSAL than the handle (RR_TEST_FSAL=VFS) and ganesha says so. */
::testing::AssertionResult refused(int status)
{
	if (status == 70 || status == ERR_BADHANDLE)
		return ::testing::AssertionSuccess();
	return ::testing::AssertionFailure() << "status " << status << ", not STALE (70) or BADHANDLE";
}

/*
 * @fh with another Export_Id: ganesha's handles (nfs_fh.h, the same for
 * NFSv3 and v4) are a version byte 0x43, a flags byte, then the Export_Id in
 * network order; what follows is the FSAL's and is left as it is.
 */
Fh relabel(const Fh &fh, uint16_t id)
{
	Fh r = fh;
	EXPECT_GE(r.b.size(), 4u);
	EXPECT_EQ(r.b.size() >= 1 ? r.b[0] : 0, 0x43);
	if (r.b.size() >= 4) {
		r.b[2] = uint8_t(id >> 8);
		r.b[3] = uint8_t(id);
	}
	return r;
}


class Exports : public PluginTest
{
      protected:
	static void SetUpTestSuite()
	{
		options.extra_rdma = "\tExclude_Exports = 2;\n";
		options.extra_blocks = "EXPORT {\n\tExport_Id = 2;\n\tPath = /off;\n"
				       "\tPseudo = /off;\n\tAccess_Type = RW;\n"
				       "\tSquash = No_Root_Squash;\n\tProtocols = 3, 4;\n"
				       "\tFSAL { Name = MEM; }\n}\n"
				       /* ganesha's own refusal of a transport, to compare */
				       "EXPORT {\n\tExport_Id = 3;\n\tPath = /udp;\n"
				       "\tPseudo = /udp;\n\tAccess_Type = RW;\n"
				       "\tProtocols = 3, 4;\n\tTransports = UDP;\n"
				       "\tFSAL { Name = MEM; }\n}\n";
		PluginTest::SetUpTestSuite();
	}
	void SetUp() override
	{
		PluginTest::SetUp();
		if (IsSkipped() || HasFatalFailure())
			return;
		tt = tcp_nfs();
		ASSERT_TRUE(tt);
		rt = rdma();
		ASSERT_TRUE(rt);
	}
	/* MOUNT v3 MNT @path over TCP */
	Fh mnt(const std::string &path)
	{
		Fh root;
		auto t = tcp_mnt();
		if (!t)
			return root;
		Mount3 m(*t);
		int rc = m.mnt(path, &root);
		EXPECT_EQ(rc, 0) << "MNT " << path << ": " << m.err();
		return root;
	}
	std::unique_ptr<TcpTransport> tt;
	std::unique_ptr<RdmaTransport> rt;
};

TEST_F(Exports, Nfs3RefusedOverRdmaOnlyForTheExcludedExport)
{
	Fh on = mnt("/mem"), off = mnt("/off");
	ASSERT_FALSE(on.empty());
	ASSERT_FALSE(off.empty());
	Nfs3 tc(*tt), rc(*rt);
	Attr a;

	/* TCP: both exports */
	NFS_OK(tc, tc.getattr(off, &a));
	EXPECT_EQ(a.type, 2u);
	NFS_OK(tc, tc.getattr(on, &a));
	std::string name = unique("f");
	Fh f;
	NFS_OK(tc, tc.create(off, name, 0644, &f));

	/* RDMA: the excluded export refuses every call, as ganesha refuses a
	 * transport an export does not allow (AUTH_FAILED = 7, RFC 5531 section 9) */
	EXPECT_EQ(rc.getattr(off, &a), E_RPC);
	EXPECT_EQ(rc.err(), "AUTH_ERROR 7");
	Fh g;
	EXPECT_EQ(rc.lookup(off, name, &g), E_RPC);
	EXPECT_EQ(rc.err(), "AUTH_ERROR 7");
	EXPECT_EQ(rc.getattr(f, &a), E_RPC);
	EXPECT_EQ(rc.err(), "AUTH_ERROR 7");
	/* a refused WRITE or CREATE does nothing */
	EXPECT_EQ(rc.write(f, 0, test_data(1000, 7)), E_RPC);
	EXPECT_EQ(rc.err(), "AUTH_ERROR 7");
	std::string made = unique("made");
	EXPECT_EQ(rc.create(off, made, 0644, &g), E_RPC);
	NFS_OK(tc, tc.getattr(f, &a));
	EXPECT_EQ(a.size, 0u);
	EXPECT_EQ(tc.lookup(off, made, &g), 2) << "NFS3ERR_NOENT: " << tc.err();

	/* MOUNT is not an RDMA program (ganesha's NFS dispatcher): PROG_UNAVAIL */
	Mount3 rm(*rt);
	Fh none;
	EXPECT_EQ(rm.mnt("/off", &none), E_RPC);
	EXPECT_EQ(rm.err(), "RPC accept_stat PROG_UNAVAIL");
	EXPECT_EQ(rm.mnt("/mem", &none), E_RPC);

	/* RDMA: the other export, on the same connection */
	NFS_OK(rc, rc.getattr(on, &a));
	EXPECT_EQ(a.type, 2u);
	Fh h;
	NFS_OK(rc, rc.create(on, name, 0644, &h));
	Bytes data = test_data(200000, 3);
	NFS_OK(rc, rc.write(h, 0, data));
	Bytes back;
	bool eof = false;
	NFS_OK(rc, rc.read(h, 0, uint32_t(data.size()), &back, &eof));
	EXPECT_EQ(crc32c(back), crc32c(data));
	NFS_OK(rc, rc.remove(on, name));

	/* TCP still reaches the excluded export after all that */
	NFS_OK(tc, tc.remove(off, name));
}

TEST_F(Exports, Nfs4RefusedOverRdmaOnlyForTheExcludedExport)
{
	Nfs4 tc(*tt), rc(*rt);
	NFS_OK(tc, tc.mount());
	NFS_OK(rc, rc.mount());
	Fh off_tcp, on, off, root;
	Attr a;

	/* TCP: the pseudo fs leads to both */
	NFS_OK(tc, tc.lookup_path("/off", &off_tcp));
	NFS_OK(tc, tc.getattr(off_tcp, &a));
	EXPECT_EQ(a.type, 2u);
	NFS_OK(tc, tc.lookup_path("/", &root));
	std::vector<DirEntry> ents;
	NFS_OK(tc, tc.readdir(root, &ents));
	auto has = [&](const std::string &n) {
		return std::any_of(ents.begin(), ents.end(),
				   [&](const DirEntry &e) { return e.name == n; });
	};
	EXPECT_TRUE(has("off"));
	EXPECT_TRUE(has("mem"));

	/* RDMA: PUTROOTFH + LOOKUP hides it, READDIR leaves it out, and its
	 * handle (from TCP) is refused */
	EXPECT_EQ(rc.lookup_path("/off", &off), NFS4ERR_NOENT) << rc.err();
	NFS_OK(rc, rc.lookup_path("/", &root));
	NFS_OK(rc, rc.readdir(root, &ents));
	EXPECT_FALSE(has("off"));
	EXPECT_TRUE(has("mem"));
	EXPECT_EQ(rc.getattr(off_tcp, &a), NFS4ERR_ACCESS) << rc.err();

	/* RDMA: the other export works, data included */
	NFS_OK(rc, rc.lookup_path("/mem", &on));
	std::string name = unique("f4");
	Fh f;
	Stateid sid;
	NFS_OK(rc, rc.open_create(on, name, &f, &sid));
	Bytes data = test_data(150000, 4);
	NFS_OK(rc, rc.write(f, sid, 0, data));
	Bytes back;
	bool eof = false;
	NFS_OK(rc, rc.read(f, sid, 0, uint32_t(data.size()), &back, &eof));
	EXPECT_EQ(crc32c(back), crc32c(data));
	NFS_OK(rc, rc.close(f, sid));
	NFS_OK(rc, rc.remove(on, name));

	/* TCP: still reaches it */
	NFS_OK(tc, tc.lookup_path("/off", &off_tcp));
	NFS_OK(tc, tc.open_create(off_tcp, name, &f, &sid));
	NFS_OK(tc, tc.close(f, sid));
	NFS_OK(tc, tc.remove(off_tcp, name));
	EXPECT_EQ(rc.destroy_session(), 0) << rc.err();
	EXPECT_EQ(tc.destroy_session(), 0) << tc.err();
}

/*
 * A handle of the excluded export relabelled with the allowed one's
 * Export_Id (issue #32): ganesha resolves it through the allowed export
 * (MDCACHE finds the object by the FSAL's bytes, FSAL MEM among all its
 * exports' objects), so the plugin checks the object it resolves to. Over
 * RDMA every call on such a handle is NFS3ERR_STALE and does nothing; the
 * allowed export's own handles still work.
 */
TEST_F(Exports, Nfs3RelabelledHandleRefused)
{
	Fh off = mnt("/off"), on = mnt("/mem");
	ASSERT_FALSE(off.empty());
	ASSERT_FALSE(on.empty());
	Nfs3 tc(*tt), rc(*rt);
	std::string name = unique("secret");
	Fh f;
	NFS_OK(tc, tc.create(off, name, 0644, &f));
	Bytes data = test_data(4000, 9);
	NFS_OK(tc, tc.write(f, 0, data));

	Fh off1 = relabel(off, 1), f1 = relabel(f, 1);
	Attr a;
	EXPECT_TRUE(refused(rc.getattr(off1, &a))) << rc.err();
	EXPECT_TRUE(refused(rc.getattr(f1, &a))) << rc.err();
	Fh g;
	EXPECT_TRUE(refused(rc.lookup(off1, name, &g))) << rc.err();
	Bytes back;
	bool eof = false;
	EXPECT_TRUE(refused(rc.read(f1, 0, 4000, &back, &eof))) << rc.err();
	EXPECT_TRUE(back.empty());
	std::string made = unique("made");
	EXPECT_TRUE(refused(rc.create(off1, made, 0644, &g))) << rc.err();
	EXPECT_TRUE(refused(rc.write(f1, 0, test_data(100, 1)))) << rc.err();

	/* nothing happened in the excluded export */
	EXPECT_EQ(tc.lookup(off, made, &g), NFS3ERR_NOENT) << tc.err();
	NFS_OK(tc, tc.read(f, 0, 4000, &back, &eof));
	EXPECT_EQ(crc32c(back), crc32c(data));
	/* the allowed export's own handles, on the same connection */
	NFS_OK(rc, rc.getattr(on, &a));
	EXPECT_EQ(a.type, 2u);
	NFS_OK(rc, rc.create(on, name, 0644, &g));
	NFS_OK(rc, rc.remove(on, name));
	NFS_OK(tc, tc.remove(off, name));
}

/* The same over NFSv4.1: PUTFH of the relabelled handle, then GETATTR,
 * LOOKUP, OPEN or READ, is NFS4ERR_STALE. */
TEST_F(Exports, Nfs4RelabelledHandleRefused)
{
	Nfs4 tc(*tt), rc(*rt);
	NFS_OK(tc, tc.mount());
	NFS_OK(rc, rc.mount());
	Fh off, on, f;
	Stateid sid;
	NFS_OK(tc, tc.lookup_path("/off", &off));
	std::string name = unique("secret4");
	NFS_OK(tc, tc.open_create(off, name, &f, &sid));
	Bytes data = test_data(3000, 5);
	NFS_OK(tc, tc.write(f, sid, 0, data));
	NFS_OK(tc, tc.close(f, sid));

	Fh off1 = relabel(off, 1), f1 = relabel(f, 1);
	Attr a;
	EXPECT_TRUE(refused(rc.getattr(off1, &a))) << rc.err();
	EXPECT_TRUE(refused(rc.getattr(f1, &a))) << rc.err();
	Fh g;
	EXPECT_TRUE(refused(rc.lookup(off1, name, &g))) << rc.err();
	Stateid rsid;
	EXPECT_TRUE(refused(rc.open(off1, name, 1, &g, &rsid))) << rc.err();
	Bytes back;
	bool eof = false;
	Stateid anon; /* the anonymous stateid: all zeros */
	EXPECT_TRUE(refused(rc.read(f1, anon, 0, 3000, &back, &eof))) << rc.err();
	EXPECT_TRUE(back.empty());
	std::string made = unique("made4");
	EXPECT_TRUE(refused(rc.open_create(off1, made, &g, &rsid))) << rc.err();
	EXPECT_EQ(tc.lookup(off, made, &g), NFS4ERR_NOENT) << tc.err();

	/* the allowed export's own handles */
	NFS_OK(rc, rc.lookup_path("/mem", &on));
	NFS_OK(rc, rc.getattr(on, &a));
	EXPECT_EQ(a.type, 2u);
	NFS_OK(tc, tc.remove(off, name));
	EXPECT_EQ(rc.destroy_session(), 0) << rc.err();
	EXPECT_EQ(tc.destroy_session(), 0) << tc.err();
}

/*
 * SECINFO of the excluded export's junction answers what LOOKUP answers,
 * NFS4ERR_NOENT: over RDMA the export is not there. SECINFO_NO_NAME (the
 * current FH's own flavors) never gets that far: PUTFH of its handle is
 * refused first. Over TCP SECINFO lists its flavors.
 */
TEST_F(Exports, Nfs4SecinfoHidesTheExcludedJunction)
{
	Nfs4 tc(*tt), rc(*rt);
	NFS_OK(tc, tc.mount());
	NFS_OK(rc, rc.mount());
	Fh root, off_tcp, g;
	std::vector<uint32_t> fl;
	NFS_OK(rc, rc.lookup_path("/", &root));
	EXPECT_EQ(rc.lookup(root, "off", &g), NFS4ERR_NOENT) << rc.err();
	EXPECT_EQ(rc.secinfo(root, "off", &fl), NFS4ERR_NOENT) << rc.err();
	NFS_OK(rc, rc.secinfo(root, "mem", &fl));
	EXPECT_FALSE(fl.empty());
	NFS_OK(tc, tc.secinfo(root, "off", &fl));
	EXPECT_FALSE(fl.empty());
	NFS_OK(tc, tc.lookup_path("/off", &off_tcp));
	EXPECT_EQ(rc.secinfo_no_name(off_tcp, 0, &fl), NFS4ERR_ACCESS) << rc.err();
	/* ganesha's own answers over TCP for an export whose Transports refuse
	 * TCP: the same */
	EXPECT_EQ(tc.secinfo(root, "udp", &fl), NFS4ERR_NOENT) << tc.err();
	EXPECT_EQ(rc.destroy_session(), 0) << rc.err();
	EXPECT_EQ(tc.destroy_session(), 0) << tc.err();
}

/* ganesha's own refusal of a transport (TCP, by `Transports = UDP;`): the
 * answers the plugin gives over RDMA for an excluded export. */
TEST_F(Exports, GaneshaRefusesATransportTheSameWay)
{
	auto mt = tcp_mnt();
	ASSERT_TRUE(mt);
	Mount3 m(*mt);
	Fh h;
	/* MNT does not look at the transport; the NFS calls are refused */
	NFS_OK(m, m.mnt("/udp", &h));
	Nfs3 t3(*tt);
	Attr a;
	EXPECT_EQ(t3.getattr(h, &a), E_RPC);
	EXPECT_EQ(t3.err(), "AUTH_ERROR 7");

	Nfs4 tc(*tt);
	NFS_OK(tc, tc.mount());
	Fh root, udp;
	EXPECT_EQ(tc.lookup_path("/udp", &udp), NFS4ERR_NOENT) << tc.err();
	NFS_OK(tc, tc.lookup_path("/", &root));
	std::vector<DirEntry> ents;
	NFS_OK(tc, tc.readdir(root, &ents));
	for (const DirEntry &e : ents)
		EXPECT_NE(e.name, "udp");
	EXPECT_EQ(tc.destroy_session(), 0) << tc.err();
}

/* The refusal is logged once per connection, naming the Export_Id. */
TEST_F(Exports, RefusalLoggedOncePerConnection)
{
	const std::string line = "NFSv3 refused Export_Id 2, which Exclude_Exports keeps off RDMA";
	auto count = [&] {
		std::string logs = srv->logs();
		size_t n = 0;
		for (size_t at = logs.find(line); at != std::string::npos;
		     at = logs.find(line, at + 1))
			n++;
		return n;
	};
	Fh off = mnt("/off");
	ASSERT_FALSE(off.empty());
	size_t before = count();
	Nfs3 rc(*rt);
	Attr a;
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(rc.getattr(off, &a), E_RPC);
	EXPECT_EQ(count(), before + 1) << srv->logs();
}

/*
 * An asynchronous FSAL: FSAL MEM with Async_Type = fixed (and MEM's
 * Async_Threads) completes each READ on a thread of its own Async_Delay
 * microseconds later, so ganesha suspends the COMPOUND at the READ and
 * resumes the rest with svc_resume() on ntirpc's svc_work_pool, not on the
 * plugin's worker. What follows the resume is checked as what came before
 * it: PUTFH of the excluded export's handle relabelled with the allowed
 * Export_Id, after an asynchronous READ of an allowed file in the same
 * COMPOUND, is NFS4ERR_STALE, and its READ never runs.
 */
class ExportsAsync : public Exports
{
      protected:
	static void SetUpTestSuite()
	{
		options.extra_rdma = "\tExclude_Exports = 2;\n";
		options.extra_mem = "\tAsync_Threads = 2;\n";
		options.fsal = "Name = MEM; Async_Type = fixed; Async_Delay = 1000;";
		options.extra_blocks = "EXPORT {\n\tExport_Id = 2;\n\tPath = /off;\n"
				       "\tPseudo = /off;\n\tAccess_Type = RW;\n"
				       "\tSquash = No_Root_Squash;\n\tProtocols = 3, 4;\n"
				       "\tFSAL { Name = MEM; }\n}\n";
		PluginTest::SetUpTestSuite();
	}
	/* Calls of ours ganesha resumed so far (the plugin counts them) */
	double stat_resumed()
	{
		nfsc::Json j;
		std::string why;
		EXPECT_TRUE(stats(&j, &why)) << why;
		double n = j.at("plugin.resumed");
		EXPECT_GE(n, 0) << "plugin.resumed missing from the stats socket";
		return n;
	}
};

TEST_F(ExportsAsync, Nfs4RelabelledHandleRefusedAfterAResume)
{
	Nfs4 tc(*tt), rc(*rt);
	NFS_OK(tc, tc.mount());
	NFS_OK(rc, rc.mount());
	Fh on, off, pub, sec;
	Stateid sid;
	NFS_OK(tc, tc.lookup_path("/mem", &on));
	NFS_OK(tc, tc.lookup_path("/off", &off));
	std::string pub_name = unique("pub"), sec_name = unique("secret");
	Bytes pub_data = test_data(3000, 12), sec_data = test_data(3000, 13);
	NFS_OK(tc, tc.open_create(on, pub_name, &pub, &sid));
	NFS_OK(tc, tc.write(pub, sid, 0, pub_data));
	NFS_OK(tc, tc.close(pub, sid));
	NFS_OK(tc, tc.open_create(off, sec_name, &sec, &sid));
	NFS_OK(tc, tc.write(sec, sid, 0, sec_data));
	NFS_OK(tc, tc.close(sec, sid));

	Fh sec1 = relabel(sec, 1);
	Stateid anon;
	Bytes back;
	bool eof = false;
	/* alone, as ever */
	EXPECT_TRUE(refused(rc.read(sec1, anon, 0, 3000, &back, &eof))) << rc.err();
	EXPECT_TRUE(back.empty());
	/* after an asynchronous READ: each of several tries, since the READ
	 * may complete before ganesha would suspend */
	double resumed0 = stat_resumed();
	for (int i = 0; i < 20; i++) {
		std::vector<Bytes> got;
		int st = rc.read_fhs({{pub, 0, 3000}, {sec1, 0, 3000}}, anon, &got);
		EXPECT_TRUE(refused(st)) << "try " << i << ": " << rc.err();
		ASSERT_GE(got.size(), 1u) << "try " << i << ": " << rc.err();
		EXPECT_EQ(crc32c(got[0]), crc32c(pub_data));
		if (got.size() > 1) {
			ADD_FAILURE() << "try " << i << ": the excluded export's file was read over "
				      << "RDMA after a resume"
				      << (crc32c(got[1]) == crc32c(sec_data) ? ", its data included" : "");
			break;
		}
	}
	/* ganesha did suspend and resume them */
	EXPECT_GT(stat_resumed(), resumed0) << "no COMPOUND was resumed: Async_Type not in effect";
	/* the allowed export's own handles, after resumes too */
	std::vector<Bytes> got;
	NFS_OK(rc, rc.read_fhs({{pub, 0, 3000}, {pub, 0, 3000}}, anon, &got));
	ASSERT_EQ(got.size(), 2u);
	EXPECT_EQ(crc32c(got[1]), crc32c(pub_data));
	/* TCP reaches both, after a resume too */
	NFS_OK(tc, tc.read_fhs({{pub, 0, 3000}, {sec, 0, 3000}}, anon, &got));
	ASSERT_EQ(got.size(), 2u);
	EXPECT_EQ(crc32c(got[1]), crc32c(sec_data));
	NFS_OK(tc, tc.remove(on, pub_name));
	NFS_OK(tc, tc.remove(off, sec_name));
	EXPECT_EQ(rc.destroy_session(), 0) << rc.err();
	EXPECT_EQ(tc.destroy_session(), 0) << tc.err();
}

/* NFSv3: an asynchronous READ is served over RDMA through the resume, and
 * the excluded export's handle relabelled is refused as ever (ganesha
 * resolves an NFSv3 Call's one handle before anything can suspend). */
TEST_F(ExportsAsync, Nfs3ReadResumedAndRelabelledHandleRefused)
{
	Fh on = mnt("/mem"), off = mnt("/off");
	ASSERT_FALSE(on.empty());
	ASSERT_FALSE(off.empty());
	Nfs3 tc(*tt), rc(*rt);
	std::string name = unique("async3");
	Fh pub, sec;
	Bytes pub_data = test_data(5000, 14), sec_data = test_data(5000, 15);
	NFS_OK(tc, tc.create(on, name, 0644, &pub));
	NFS_OK(tc, tc.write(pub, 0, pub_data));
	NFS_OK(tc, tc.create(off, name, 0644, &sec));
	NFS_OK(tc, tc.write(sec, 0, sec_data));

	double resumed0 = stat_resumed();
	Bytes back;
	bool eof = false;
	for (int i = 0; i < 5; i++) {
		NFS_OK(rc, rc.read(pub, 0, 5000, &back, &eof));
		EXPECT_EQ(crc32c(back), crc32c(pub_data));
		back.clear();
		EXPECT_TRUE(refused(rc.read(relabel(sec, 1), 0, 5000, &back, &eof))) << rc.err();
		EXPECT_TRUE(back.empty());
	}
	EXPECT_GT(stat_resumed(), resumed0) << "no READ was resumed: Async_Type not in effect";
	NFS_OK(tc, tc.remove(on, name));
	NFS_OK(tc, tc.remove(off, name));
}

/* Export_Id 0, the NFSv4 pseudo root, excluded: PUTROOTFH is refused over
 * RDMA, while handles of the exports themselves (from TCP) still work. */
class ExportsRoot : public PluginTest
{
      protected:
	static void SetUpTestSuite()
	{
		options.extra_rdma = "\tExclude_Exports = 0;\n";
		PluginTest::SetUpTestSuite();
	}
};

TEST_F(ExportsRoot, PseudoRootOffRdma)
{
	auto tt = tcp_nfs();
	auto rt = rdma();
	ASSERT_TRUE(tt && rt);
	Nfs4 tc(*tt), rc(*rt);
	NFS_OK(tc, tc.mount());
	NFS_OK(rc, rc.mount());
	Fh root, mem;
	NFS_OK(tc, tc.lookup_path("/", &root));
	NFS_OK(tc, tc.lookup_path("/mem", &mem));
	EXPECT_EQ(rc.lookup_path("/", &root), NFS4ERR_ACCESS) << rc.err();
	EXPECT_EQ(rc.lookup_path("/mem", &mem), NFS4ERR_ACCESS) << rc.err();
	Attr a;
	EXPECT_EQ(rc.getattr(root, &a), NFS4ERR_ACCESS) << rc.err();
	NFS_OK(rc, rc.getattr(mem, &a));
	EXPECT_EQ(a.type, 2u);
	/* NFSv3 never enters the pseudo root: export 1 over RDMA as ever */
	Fh r3 = mount3();
	ASSERT_FALSE(r3.empty());
	Nfs3 c3(*rt);
	NFS_OK(c3, c3.getattr(r3, &a));
	EXPECT_EQ(rc.destroy_session(), 0) << rc.err();
	EXPECT_EQ(tc.destroy_session(), 0) << tc.err();
}

/*
 * FSAL VFS: export 1 and the excluded export 2 (/off) in directories of
 * their own, on one file system (ExportsVfsShared) or on two
 * (ExportsVfsApart: export 2 on /dev/shm, a tmpfs). ganesha resolves a
 * relabelled handle through export 1 whenever MDCACHE holds the object or
 * the file system is one export 1 claims.
 */
std::string make_dir(const std::string &base)
{
	std::string t = base + "/rrexcl.XXXXXX";
	std::vector<char> b(t.begin(), t.end());
	b.push_back('\0');
	if (!mkdtemp(b.data()))
		return "";
	chmod(b.data(), 0777);
	return b.data();
}

/* Where the VFS exports' directories go: RR_TEST_VFS_BASE, else the test's
 * working directory (in the build tree: ganesha 5.9 and 6.5 refuse a VFS
 * export on tmpfs, which /tmp is in the release roots). */
std::string vfs_base()
{
	const char *base = getenv("RR_TEST_VFS_BASE");
	if (base)
		return base;
	char cwd[4096];
	return getcwd(cwd, sizeof(cwd)) ? cwd : "/tmp";
}

class ExportsVfs : public PluginTest
{
      protected:
	static void set_up(const std::string &dir1, const std::string &dir2)
	{
		dirs = {dir1, dir2};
		options = GaneshaOptions();
		options.vfs_dir = dir1;
		options.extra_rdma = "\tExclude_Exports = 2;\n";
		options.extra_blocks = "EXPORT {\n\tExport_Id = 2;\n\tPath = " + dir2 +
				       ";\n\tPseudo = /off;\n\tAccess_Type = RW;\n"
				       "\tSquash = No_Root_Squash;\n\tProtocols = 3, 4;\n"
				       "\tFSAL { Name = VFS; }\n}\n";
		PluginTest::SetUpTestSuite();
	}
	static void TearDownTestSuite()
	{
		PluginTest::TearDownTestSuite();
		for (const std::string &d : dirs)
			if (!d.empty())
				std::filesystem::remove_all(d);
		options = GaneshaOptions();
	}
	void SetUp() override
	{
		/* ganesha 5.9 and 6.5 refuse a VFS export on tmpfs (a CONFIG line) */
		if (!srv && skip_why.empty() && dirs.size() == 2 && dirs[1].rfind("/dev/shm/", 0) == 0 &&
		    start_err.find("rejected the generated config") != std::string::npos)
			GTEST_SKIP() << "this ganesha does not export a tmpfs folder: " << start_err;
		PluginTest::SetUp();
		if (IsSkipped() || HasFatalFailure())
			return;
		tt = tcp_nfs();
		ASSERT_TRUE(tt);
		rt = rdma();
		ASSERT_TRUE(rt);
		auto m = tcp_mnt();
		ASSERT_TRUE(m);
		Mount3 m3(*m);
		if (m3.mnt("/off", &off) != 0)
			GTEST_SKIP() << "ganesha does not export " << options.extra_blocks
				     << " here: " << m3.err();
		ASSERT_EQ(m3.mnt("/mem", &on), 0) << m3.err();
	}
	/*
	 * NFSv3 over RDMA on export 2's handles relabelled with Export_Id 1:
	 * NFS3ERR_STALE for each call, nothing done; export 1's own root gets
	 * @own_status.
	 */
	void nfs3_relabelled(int own_status)
	{
		Nfs3 tc(*tt), rc(*rt);
		std::string name = unique("secret");
		Fh f;
		NFS_OK(tc, tc.create(off, name, 0644, &f));
		Bytes data = test_data(5000, 11);
		NFS_OK(tc, tc.write(f, 0, data));

		Fh off1 = relabel(off, 1), f1 = relabel(f, 1);
		Attr a;
		EXPECT_EQ(rc.getattr(off1, &a), NFS3ERR_STALE) << rc.err();
		Fh g;
		EXPECT_EQ(rc.lookup(off1, name, &g), NFS3ERR_STALE) << rc.err();
		Bytes back;
		bool eof = false;
		EXPECT_EQ(rc.read(f1, 0, 5000, &back, &eof), NFS3ERR_STALE) << rc.err();
		EXPECT_TRUE(back.empty());
		std::string made = unique("made");
		EXPECT_EQ(rc.create(off1, made, 0644, &g), NFS3ERR_STALE) << rc.err();
		EXPECT_EQ(tc.lookup(off, made, &g), NFS3ERR_NOENT) << tc.err();

		EXPECT_EQ(rc.getattr(on, &a), own_status) << rc.err();
		NFS_OK(tc, tc.getattr(on, &a));
		NFS_OK(tc, tc.remove(off, name));
	}
	/* The same over NFSv4.1. */
	void nfs4_relabelled(int own_status)
	{
		Nfs4 tc(*tt), rc(*rt);
		NFS_OK(tc, tc.mount());
		NFS_OK(rc, rc.mount());
		Fh off4, f;
		Stateid sid;
		NFS_OK(tc, tc.lookup_path("/off", &off4));
		std::string name = unique("secret4");
		NFS_OK(tc, tc.open_create(off4, name, &f, &sid));
		Bytes data = test_data(3000, 6);
		NFS_OK(tc, tc.write(f, sid, 0, data));
		NFS_OK(tc, tc.close(f, sid));

		Fh off1 = relabel(off4, 1), f1 = relabel(f, 1);
		Attr a;
		EXPECT_EQ(rc.getattr(f1, &a), NFS4ERR_STALE) << rc.err();
		Fh g;
		EXPECT_EQ(rc.lookup(off1, name, &g), NFS4ERR_STALE) << rc.err();
		Stateid rsid;
		EXPECT_EQ(rc.open(off1, name, 1, &g, &rsid), NFS4ERR_STALE) << rc.err();
		Bytes back;
		bool eof = false;
		Stateid anon;
		EXPECT_EQ(rc.read(f1, anon, 0, 3000, &back, &eof), NFS4ERR_STALE) << rc.err();
		EXPECT_TRUE(back.empty());

		Fh on4;
		NFS_OK(tc, tc.lookup_path("/mem", &on4));
		EXPECT_EQ(rc.getattr(on4, &a), own_status) << rc.err();
		NFS_OK(tc, tc.remove(off4, name));
		EXPECT_EQ(rc.destroy_session(), 0) << rc.err();
		EXPECT_EQ(tc.destroy_session(), 0) << tc.err();
	}
	static std::vector<std::string> dirs;
	std::unique_ptr<TcpTransport> tt;
	std::unique_ptr<RdmaTransport> rt;
	Fh off, on;
};
std::vector<std::string> ExportsVfs::dirs;

/* One file system: a handle does not say where in it an object is, so no
 * handle of export 1 is served over RDMA either (README, Exclude_Exports),
 * and the log says why once. TCP serves both. */
class ExportsVfsShared : public ExportsVfs
{
      protected:
	static void SetUpTestSuite()
	{
		std::string base = vfs_base();
		set_up(make_dir(base), make_dir(base));
	}
};

TEST_F(ExportsVfsShared, Nfs3RelabelledHandleRefused)
{
	/* said at start-up, before ganesha serves */
	std::string logs = srv->logs();
	size_t said = logs.find("Export_Id 1 shares its file system with Export_Id 2");
	EXPECT_NE(said, std::string::npos) << logs;
	EXPECT_LT(said, logs.find("NFS SERVER INITIALIZED")) << logs;
	nfs3_relabelled(NFS3ERR_STALE);
}

TEST_F(ExportsVfsShared, Nfs4RelabelledHandleRefused)
{
	nfs4_relabelled(NFS4ERR_STALE);
}

/* Two file systems: export 1 is served over RDMA as ever (the plugin's
 * check does not over-refuse); export 2's objects are not, through export
 * 1's Export_Id - FSAL VFS refuses those itself too (its wire_to_host
 * accepts only file systems the export claims), on the old plugin as well. */
class ExportsVfsApart : public ExportsVfs
{
      protected:
	static void SetUpTestSuite()
	{
		set_up(make_dir(vfs_base()), make_dir("/dev/shm"));
	}
};

TEST_F(ExportsVfsApart, Nfs3RelabelledHandleRefused)
{
	nfs3_relabelled(0);
}

TEST_F(ExportsVfsApart, Nfs4RelabelledHandleRefused)
{
	nfs4_relabelled(0);
}

} // namespace
} // namespace rrplug
