// SPDX-License-Identifier: MIT
/*
 * test_plugin_nfs4.cc - NFSv4.1 through real ganesha + the rpcrdma plugin
 * on the soft fabric: session set-up, OPEN/WRITE/READ/CLOSE with data in
 * Read/Write chunks and checksums, READLINK by Write chunk and inline,
 * CREATE(NF4LNK) with its linkdata in a Read chunk, a big READDIR through a
 * Reply chunk, a Long Call, ERR_CHUNK for a COMPOUND reply that fits
 * nowhere (and the session slot recovering after it, and its log lines
 * bounded when it repeats), DESTROY_SESSION.
 */
#include "support/plugin_common.h"

#include <algorithm>
#include <chrono>
#include <regex>
#include <set>

#include <unistd.h>

#include "support/rr_eventually.h"

using namespace nfsc;

namespace rrplug
{
namespace
{

class Nfs4Rdma : public PluginTest
{
      protected:
	void SetUp() override
	{
		PluginTest::SetUp();
		if (IsSkipped() || HasFatalFailure())
			return;
		t = rdma();
		ASSERT_TRUE(t);
		c.reset(new Nfs4(*t));
		NFS_OK(*c, c->null());
		NFS_OK(*c, c->mount());
		NFS_OK(*c, c->lookup_path("/mem", &root));
		/* a directory of our own: OPEN cannot make one, so use v3 MKDIR over TCP */
		Fh r3 = mount3();
		auto tt = tcp_nfs();
		ASSERT_TRUE(tt);
		Nfs3 c3(*tt);
		dname = unique("d4");
		Fh d3;
		NFS_OK(c3, c3.mkdir(r3, dname, 0755, &d3));
		NFS_OK(*c, c->lookup(root, dname, &dir));
	}
	/* 100 names of about 100 bytes: their READDIR is over 4 KiB. */
	static std::vector<std::string> names100(const std::string &prefix, char fill)
	{
		std::vector<std::string> v;
		for (int i = 0; i < 100; i++)
			v.push_back(prefix + std::to_string(i) + std::string(100, fill));
		return v;
	}
	/* Files @names in our directory, made over TCP v3 (fast). */
	void create_over_tcp(const std::vector<std::string> &names)
	{
		Fh r3 = mount3();
		auto tt = tcp_nfs();
		ASSERT_TRUE(tt);
		Nfs3 c3(*tt);
		Fh d3;
		NFS_OK(c3, c3.lookup(r3, dname, &d3));
		for (const auto &nm : names) {
			Fh f;
			NFS_OK(c3, c3.create(d3, nm, 0644, &f));
		}
	}
	void TearDown() override
	{
		if (c && t && t->requester().connected() && !IsSkipped()) {
			EXPECT_EQ(c->destroy_session(), 0) << c->err();
		}
		PluginTest::TearDown();
	}
	Fh root, dir;
	std::string dname;
	std::unique_ptr<RdmaTransport> t;
	std::unique_ptr<Nfs4> c;
};

TEST_F(Nfs4Rdma, SessionOpenGetattrClose)
{
	Attr a;
	NFS_OK(*c, c->getattr(root, &a));
	EXPECT_EQ(a.type, 2u);
	Fh f;
	Stateid sid;
	NFS_OK(*c, c->open_create(dir, "file", &f, &sid));
	NFS_OK(*c, c->getattr(f, &a));
	EXPECT_EQ(a.type, 1u);
	EXPECT_EQ(a.size, 0u);
	EXPECT_EQ(a.mode & 0777, 0644u);
	NFS_OK(*c, c->close(f, sid));
	NFS_OK(*c, c->remove(dir, "file"));
	Fh g;
	EXPECT_EQ(c->lookup(dir, "file", &g), 2) << "NFS4ERR_NOENT";
}

TEST_F(Nfs4Rdma, WriteReadThroughChunks)
{
	t->policy.call_ddp = Ddp::ALWAYS;
	t->policy.reply_ddp = Ddp::ALWAYS;
	for (size_t n : {size_t(1), size_t(4095), size_t(1) << 20, (size_t(1) << 20) + 3}) {
		SCOPED_TRACE("length " + std::to_string(n));
		Fh f;
		Stateid sid;
		NFS_OK(*c, c->open_create(dir, "f" + std::to_string(n), &f, &sid));
		Bytes data = test_data(n, uint32_t(n) * 3);
		Json j;
		std::string why;
		ASSERT_TRUE(stats(&j, &why)) << why;
		double inplace0 = j.at("plugin.decode_in_place_bytes");
		NFS_OK(*c, c->write(f, sid, 0, data));
		EXPECT_EQ(t->last_spec.mode, rrtest::CallSpec::READ);
		ASSERT_TRUE(stats(&j, &why)) << why;
		EXPECT_EQ(j.at("plugin.decode_in_place_bytes") - inplace0, double(n))
			<< "WRITE4args data decoded in the Read chunk's own buffer";
		Bytes back;
		bool eof = false;
		NFS_OK(*c, c->read(f, sid, 0, uint32_t(n), &back, &eof));
		ASSERT_EQ(t->last_spec.writes.size(), 1u);
		EXPECT_EQ(t->last_spec.writes[0].pad, (n & 3) != 0);
		ASSERT_EQ(c->last().chunks.size(), 1u);
		EXPECT_EQ(c->last().chunks[0].size(), n) << "READ data came by RDMA Write";
		ASSERT_EQ(back.size(), n);
		EXPECT_EQ(crc32c(back), crc32c(data));
		Attr a;
		NFS_OK(*c, c->getattr(f, &a));
		EXPECT_EQ(a.size, n);
		NFS_OK(*c, c->close(f, sid));
	}
}

TEST_F(Nfs4Rdma, WriteOverRdmaReadOverTcp)
{
	Fh f;
	Stateid sid;
	NFS_OK(*c, c->open_create(dir, "x", &f, &sid));
	Bytes data = test_data((1 << 20) + 3, 99);
	NFS_OK(*c, c->write(f, sid, 0, data));
	NFS_OK(*c, c->close(f, sid));
	auto tt = tcp_nfs();
	ASSERT_TRUE(tt);
	Nfs4 tc(*tt);
	NFS_OK(tc, tc.mount());
	Fh tf;
	Stateid ts;
	NFS_OK(tc, tc.open_create(dir, "x", &tf, &ts));
	Bytes back;
	bool eof;
	NFS_OK(tc, tc.read(tf, ts, 0, uint32_t(data.size()), &back, &eof));
	EXPECT_EQ(crc32c(back), crc32c(data));
	NFS_OK(tc, tc.close(tf, ts));
	NFS_OK(tc, tc.destroy_session());
}

TEST_F(Nfs4Rdma, ReadlinkWriteChunkAndInlineSymlinkReadChunk)
{
	std::string target = "../target/" + std::string(500, 'L') + "/x";
	t->policy.call_ddp = Ddp::ALWAYS;
	NFS_OK(*c, c->symlink(dir, "sl", target));
	EXPECT_EQ(t->last_spec.mode, rrtest::CallSpec::READ) << "linkdata in a Read chunk";
	t->policy.call_ddp = Ddp::AUTO;
	Fh l;
	NFS_OK(*c, c->lookup(dir, "sl", &l));
	std::string got;
	t->policy.reply_ddp = Ddp::ALWAYS;
	NFS_OK(*c, c->readlink(l, &got));
	EXPECT_EQ(got, target);
	ASSERT_EQ(c->last().chunks.size(), 1u);
	EXPECT_EQ(c->last().chunks[0].size(), target.size());
	t->policy.reply_ddp = Ddp::NEVER;
	NFS_OK(*c, c->readlink(l, &got));
	EXPECT_EQ(got, target);
	EXPECT_EQ(c->last().shape, "inline -> inline");
}

TEST_F(Nfs4Rdma, BigReaddirThroughReplyChunk)
{
	/* 300 files with long names, created over TCP v3 (fast), listed over RDMA v4 */
	std::vector<std::string> made;
	for (int i = 0; i < 300; i++)
		made.push_back("n" + std::to_string(i) + "-" + std::string(200, 'a' + i % 26));
	ASSERT_NO_FATAL_FAILURE(create_over_tcp(made));
	std::set<std::string> names(made.begin(), made.end());
	std::vector<DirEntry> ents;
	bool eof = false;
	NFS_OK(*c, c->readdir_once(dir, 0, 65536, &ents, &eof));
	EXPECT_EQ(c->last().shape, "inline -> reply-chunk");
	NFS_OK(*c, c->readdir(dir, &ents, 65536));
	std::set<std::string> got;
	for (const auto &e : ents)
		got.insert(e.name);
	EXPECT_EQ(got, names);
	/* Long Call in, Long Reply out */
	t->policy.long_call = true;
	ents.clear();
	NFS_OK(*c, c->readdir_once(dir, 0, 65536, &ents, &eof));
	EXPECT_EQ(c->last().shape, "long-call -> reply-chunk");
	EXPECT_GT(ents.size(), 100u);
}

TEST_F(Nfs4Rdma, LongCallWrite)
{
	Fh f;
	Stateid sid;
	NFS_OK(*c, c->open_create(dir, "long", &f, &sid));
	t->policy.long_call = true;
	Bytes data = test_data(20000, 5);
	NFS_OK(*c, c->write(f, sid, 0, data));
	EXPECT_EQ(c->last().shape, "long-call -> inline");
	t->policy.long_call = false;
	Bytes back;
	bool eof;
	NFS_OK(*c, c->read(f, sid, 0, 20000, &back, &eof));
	EXPECT_EQ(crc32c(back), crc32c(data));
	NFS_OK(*c, c->close(f, sid));
}

/* RFC 8166 section 3.5.4 / docs/linux-client-wire.md (the Linux client retries
 * on the same slot and sequence after ERR_CHUNK): the COMPOUND ran but its reply
 * fits neither inline nor the Reply chunk: ERR_CHUNK, then the session slot
 * recovers (the retry must not be answered by a replay that fails again). */
TEST_F(Nfs4Rdma, ReplyTooBigGetsErrChunkAndSessionRecovers)
{
	ASSERT_NO_FATAL_FAILURE(create_over_tcp(names100("e", 'z')));
	for (bool cachethis : {false, true}) {
		SCOPED_TRACE(cachethis ? "cachethis" : "no cachethis");
		c->cachethis = cachethis;
		t->policy.reply_chunk = 64;
		std::vector<DirEntry> ents;
		bool eof;
		uint32_t seq_before = c->slot_seqid();
		double errs = stat("err_chunk_sent");
		int rc = c->readdir_once(dir, 0, 65536, &ents, &eof);
		if (errs >= 0) {
			EXPECT_EQ(stat("err_chunk_sent"), errs + 1);
		}
		EXPECT_EQ(rc, E_RDMA_ERROR) << c->err() << " [" << c->last().shape << "]";
		EXPECT_EQ(c->last().rdma_err, uint32_t(rrtest::ERR_CHUNK));
		EXPECT_EQ(c->slot_seqid(), seq_before)
		    << "like Linux: no seqid bump after ERR_CHUNK";
		EXPECT_TRUE(t->requester().connected());
		t->policy.reply_chunk = -1;
		c->cachethis = false;
		uint32_t rec = c->seq_recoveries;
		Attr a;
		NFS_OK(*c, c->getattr(dir, &a));
		EXPECT_EQ(c->seq_recoveries, rec + 1)
		    << "the retried seqid should get NFS4ERR_RETRY_UNCACHED_REP, then the next "
		       "seqid works";
		ents.clear();
		NFS_OK(*c, c->readdir(dir, &ents));
		EXPECT_EQ(ents.size(), 100u);
	}
	NFS_OK(*c, c->null());
}

/*
 * A client can have the Reply of every COMPOUND it sends fail (here: a Reply
 * chunk too short for a READDIR). Each is one ERR_CHUNK, counted; its log
 * line goes through the engine's rate limiter, as connection events and
 * refusals do: per 5 s (RR_REFUSE_LOG_S) the first in full, the rest held
 * for one summary line - not one line each in ganesha's log.
 */
TEST_F(Nfs4Rdma, RepeatedUndeliverableRepliesAreABoundedNumberOfLogLines)
{
	constexpr int kFails = 20;
	const std::string log_path = srv->dir + "/ganesha.log";
	const std::string line = "reply not delivered"; /* the plugin's line too, before */
	const std::string summary = "more Reply(s) not delivered";
	ASSERT_NO_FATAL_FAILURE(create_over_tcp(names100("u", 'y'))); /* a READDIR of over 4 KiB */
	size_t lines0 = lines_with(slurp(log_path), line).size();
	size_t summaries0 = lines_with(slurp(log_path), summary).size();
	double errs = stat("err_chunk_sent");
	auto t0 = std::chrono::steady_clock::now();
	for (int i = 0; i < kFails; i++) {
		SCOPED_TRACE("failure " + std::to_string(i));
		std::vector<DirEntry> ents;
		bool eof;
		t->policy.reply_chunk = 64;
		EXPECT_EQ(c->readdir_once(dir, 0, 65536, &ents, &eof), E_RDMA_ERROR) << c->err();
		t->policy.reply_chunk = -1;
		Attr a;
		NFS_OK(*c, c->getattr(dir, &a)); /* the slot recovers */
	}
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	if (errs >= 0) {
		EXPECT_EQ(stat("err_chunk_sent"), errs + kFails) << "every one counted";
	}
	ASSERT_TRUE(t->requester().connected());
	size_t lines = lines_with(slurp(log_path), line).size() - lines0;
	/* At most one line in full and one summary per 5 s interval. */
	size_t bound = 2 * (size_t(secs / 5) + 2);
	printf("%d undeliverable Replies in %.1f s: %zu lines in full (bound %zu)\n", kFails, secs,
	       lines, bound);
	EXPECT_LE(lines, bound) << "one log line per undeliverable Reply";
	/* What was held is summed up once its interval is over: with the
	 * lines in full, every one is in the log. */
	std::vector<std::string> sums;
	auto renewed = std::chrono::steady_clock::now();
	EXPECT_TRUE(rrtest::eventually(
	    [&] {
		    sums = lines_with(slurp(log_path), summary);
		    if (std::chrono::steady_clock::now() - renewed > std::chrono::seconds(2)) {
			    Attr a; /* the session's lease (10 s) outlives the wait */
			    c->getattr(dir, &a);
			    renewed = std::chrono::steady_clock::now();
		    }
		    return sums.size() > summaries0;
	    },
	    15000))
	    << "no summary line of the held ones";
	static const std::regex held_re(R"((\d+) more Reply\(s\) not delivered)");
	unsigned long held = 0;
	for (size_t i = summaries0; i < sums.size(); i++) {
		std::smatch m;
		if (std::regex_search(sums[i], m, held_re))
			held += std::stoul(m[1]);
	}
	EXPECT_GE(lines + held, size_t(kFails)) << "some were neither logged nor summed up";
}

/* RFC 8267 section 5.4: the i-th Write chunk goes with the i-th READ. */
TEST_F(Nfs4Rdma, TwoReadsInOneCompoundPairWithTwoWriteChunks)
{
	Fh f;
	Stateid sid;
	NFS_OK(*c, c->open_create(dir, "two", &f, &sid));
	Bytes data = test_data(300000, 12);
	NFS_OK(*c, c->write(f, sid, 0, data));
	t->policy.reply_ddp = Ddp::ALWAYS;
	std::vector<Bytes> got;
	double copies0 = stat("payload_copies");
	ASSERT_GE(copies0, 0) << "no stats socket";
	NFS_OK(*c, c->read_multi(f, sid, {{0, 100001}, {200000, 65536}}, &got));
	/* two READ buffers announced, both from the payload pool */
	EXPECT_EQ(stat("payload_copies") - copies0, 0) << "a READ of the COMPOUND bounced";
	ASSERT_EQ(got.size(), 2u);
	ASSERT_EQ(c->last().chunks.size(), 2u);
	EXPECT_EQ(c->last().chunks[0].size(), 100001u);
	EXPECT_EQ(c->last().chunks[1].size(), 65536u);
	EXPECT_TRUE(std::equal(got[0].begin(), got[0].end(), data.begin()));
	EXPECT_TRUE(std::equal(got[1].begin(), got[1].end(), data.begin() + 200000));
	/* the first READ past EOF: its chunk comes back empty, the second is used */
	NFS_OK(*c, c->read_multi(f, sid, {{400000, 4096}, {1000, 5000}}, &got));
	ASSERT_EQ(c->last().chunks.size(), 2u);
	EXPECT_EQ(c->last().chunks[0].size(), 0u);
	EXPECT_EQ(got[0].size(), 0u);
	EXPECT_EQ(c->last().chunks[1].size(), 5000u);
	EXPECT_TRUE(std::equal(got[1].begin(), got[1].end(), data.begin() + 1000));
	NFS_OK(*c, c->close(f, sid));
}

/* The same client with minorversion 2 (RFC 7862): session, I/O through chunks. */
TEST_F(PluginTest, Nfs42SessionAndChunkedIo)
{
	auto t = rdma();
	ASSERT_TRUE(t);
	t->policy.call_ddp = Ddp::ALWAYS;
	t->policy.reply_ddp = Ddp::ALWAYS;
	Nfs4 c(*t, 2);
	NFS_OK(c, c.mount());
	Fh root, f;
	NFS_OK(c, c.lookup_path("/mem", &root));
	Stateid sid;
	NFS_OK(c, c.open_create(root, unique("v42"), &f, &sid));
	Bytes data = test_data((1 << 20) + 1, 42);
	NFS_OK(c, c.write(f, sid, 0, data));
	Bytes back;
	bool eof;
	NFS_OK(c, c.read(f, sid, 0, uint32_t(data.size()), &back, &eof));
	EXPECT_EQ(crc32c(back), crc32c(data));
	/*
	 * READ_PLUS is not DDP-eligible (RFC 8267 section 6): a Write chunk offered
	 * with it must come back unused (read_plus() fails otherwise), and the
	 * result must be what ganesha's own TCP transport gives. (With FSAL_MEM,
	 * ganesha 4.3 answers READ_PLUS with no contents and eof false, ganesha 6.5
	 * NFS4ERR_NOTSUPP, on TCP too.)
	 */
	auto tt = tcp_nfs();
	ASSERT_TRUE(tt);
	Nfs4 tc(*tt, 2);
	NFS_OK(tc, tc.mount());
	Fh tf;
	Stateid tsid;
	NFS_OK(tc, tc.open_create(root, "rp-" + std::to_string(getpid()), &tf, &tsid));
	NFS_OK(tc, tc.write(tf, tsid, 0, data));
	Bytes tback;
	bool teof = false;
	int trc = tc.read_plus(tf, tsid, 0, 200000, false, &tback, &teof);
	Fh rf;
	Stateid rsid;
	NFS_OK(c, c.open_create(root, "rp-" + std::to_string(getpid()), &rf, &rsid));
	back.clear(); /* read_plus() leaves both alone on an error status */
	eof = false;
	int rc = c.read_plus(rf, rsid, 0, 200000, true, &back, &eof);
	printf("READ_PLUS of 200000 bytes: TCP status %d, %zu bytes, eof %d; RDMA (Write chunk "
	       "offered) status %d, %zu bytes, eof %d [%s]\n",
	       trc, tback.size(), teof, rc, back.size(), eof, c.last().shape.c_str());
	EXPECT_EQ(rc, trc) << c.err();
	EXPECT_EQ(back, tback);
	EXPECT_EQ(eof, teof);
	NFS_OK(tc, tc.close(tf, tsid));
	NFS_OK(tc, tc.destroy_session());
	NFS_OK(c, c.close(rf, rsid));
	NFS_OK(c, c.close(f, sid));
	NFS_OK(c, c.destroy_session());
}

} // namespace
} // namespace rrplug
