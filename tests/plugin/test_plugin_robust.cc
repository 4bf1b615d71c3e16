// SPDX-License-Identifier: MIT
/*
 * test_plugin_robust.cc - real ganesha + rpcrdma plugin: TCP clients are
 * served before, during and after RDMA traffic; an RDMA client SIGKILLed in
 * the middle of big WRITEs leaks nothing (the server keeps serving and the
 * stats socket's connection list drains to empty); the stats socket's
 * counters: no registrations and no payload copies per I/O in steady state.
 */
#include "support/plugin_common.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <chrono>
#include <thread>

using namespace nfsc;

namespace rrplug
{
namespace
{

class Robust : public PluginTest
{
      protected:
	void SetUp() override
	{
		PluginTest::SetUp();
		if (IsSkipped() || HasFatalFailure())
			return;
		root = mount3();
		ASSERT_FALSE(root.empty());
		tt = tcp_nfs();
		ASSERT_TRUE(tt);
		tc.reset(new Nfs3(*tt));
		NFS_OK(*tc, tc->mkdir(root, unique("r"), 0755, &dir));
	}
	/* one WRITE + READ + checksum over TCP */
	void tcp_roundtrip(Nfs3 &c, const std::string &name, size_t n)
	{
		Fh f;
		NFS_OK(c, c.create(dir, name, 0644, &f));
		Bytes data = test_data(n, uint32_t(n));
		NFS_OK(c, c.write(f, 0, data));
		Bytes back;
		bool eof;
		NFS_OK(c, c.read(f, 0, uint32_t(n), &back, &eof));
		ASSERT_EQ(crc32c(back), crc32c(data));
	}
	Fh root, dir;
	std::unique_ptr<TcpTransport> tt;
	std::unique_ptr<Nfs3> tc;
};

TEST_F(Robust, TcpServedBeforeDuringAfterRdma)
{
	tcp_roundtrip(*tc, "before", 100000);
	std::atomic<bool> stop{false};
	std::atomic<int> tcp_ok{0}, tcp_bad{0};
	std::string tcp_err;
	std::thread th([&] {
		std::string err;
		auto t2 = TcpTransport::connect("127.0.0.1", srv->nfs_port, &err);
		if (!t2) {
			tcp_err = err;
			tcp_bad++;
			return;
		}
		Nfs3 c(*t2);
		Fh f;
		if (c.create(dir, "during-tcp", 0644, &f)) {
			tcp_err = c.err();
			tcp_bad++;
			return;
		}
		for (int i = 0; !stop && i < 100000; i++) {
			Bytes data = test_data(65536 + i, uint32_t(i));
			Bytes back;
			bool eof;
			if (c.write(f, 0, data) ||
			    c.read(f, 0, uint32_t(data.size()), &back, &eof) ||
			    crc32c(back.data(), data.size()) != crc32c(data)) {
				tcp_err = c.err();
				tcp_bad++;
				return;
			}
			tcp_ok++;
		}
	});
	auto t = rdma();
	ASSERT_TRUE(t);
	Nfs3 rc(*t);
	t->policy.call_ddp = Ddp::ALWAYS;
	t->policy.reply_ddp = Ddp::ALWAYS;
	Fh f;
	EXPECT_EQ(rc.create(dir, "during-rdma", 0644, &f), 0) << rc.err();
	/* 2 s and 5 round trips at least, and on until the TCP thread has
	 * done one of its own (it may start late on a loaded machine), for
	 * 20 s at most */
	auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
	auto latest = until + std::chrono::seconds(18);
	int rdma_ok = 0;
	while (std::chrono::steady_clock::now() < until || rdma_ok < 5 ||
	       (!tcp_ok && !tcp_bad && std::chrono::steady_clock::now() < latest)) {
		Bytes data = test_data(300000 + rdma_ok, uint32_t(rdma_ok));
		Bytes back;
		bool eof;
		ASSERT_EQ(rc.write(f, 0, data), 0) << rc.err();
		ASSERT_EQ(rc.read(f, 0, uint32_t(data.size()), &back, &eof), 0) << rc.err();
		ASSERT_EQ(crc32c(back), crc32c(data));
		rdma_ok++;
		if (rdma_ok > 1000)
			break;
	}
	stop = true;
	th.join();
	EXPECT_EQ(tcp_bad, 0) << tcp_err;
	EXPECT_GT(tcp_ok, 0);
	printf("concurrent: %d RDMA and %d TCP write+read round trips\n", rdma_ok, tcp_ok.load());
	t.reset();
	tcp_roundtrip(*tc, "after", 100000);
}

/*
 * Child: connect over RDMA and WRITE 1 MiB through Read chunks (the server
 * RDMA-Reads from us) or READ 1 MiB into Write chunks (the server RDMA-Writes
 * to us) until killed.
 */
[[noreturn]] static void io_child(const std::string &addr, const Fh &f, int mode, int notify_fd)
{
	std::string err;
	auto t = RdmaTransport::connect(addr, &err);
	if (!t)
		_exit(2);
	bool reads = mode == 1;
	t->policy.call_ddp = Ddp::ALWAYS;
	t->policy.reply_ddp = Ddp::ALWAYS;
	t->policy.long_call = mode == 2; /* WRITEs as Long Calls: the server pulls the PZRC */
	Nfs3 c(*t);
	Bytes data = test_data(1 << 20, 1);
	if (mode == 3) {
		/* as many 256 KiB WRITEs in flight as the grant allows, forever */
		if (c.null())
			_exit(5);
		Bytes piece(data.begin(), data.begin() + (256 << 10));
		std::vector<uint32_t> inflight;
		for (int i = 0;; i++) {
			while (inflight.size() < t->requester().grant()) {
				CallOpts o;
				nfsxdr::Xdr x =
				    c.write_call(f, uint64_t(inflight.size() % 4) << 18, piece, &o);
				int64_t xid = t->post(x.buf, o, &err);
				if (xid < 0)
					_exit(6);
				inflight.push_back(uint32_t(xid));
			}
			TransportReply r;
			if (!t->collect(inflight.front(), &r, &err) ||
			    c.write_reply(r, inflight.front(), piece.size(), nullptr))
				_exit(7);
			inflight.erase(inflight.begin());
			if (i == 0 && write(notify_fd, "x", 1) != 1)
				_exit(4);
		}
	}
	for (int i = 0;; i++) {
		Bytes back;
		bool eof;
		int rc = reads ? c.read(f, 0, 1 << 20, &back, &eof)
			       : c.write(f, uint64_t(i % 2) << 20, data);
		if (rc)
			_exit(3);
		/* tell the parent once the first call worked, then keep going */
		if (i == 0 && write(notify_fd, "x", 1) != 1)
			_exit(4);
	}
}

static size_t connections(const Json &j)
{
	const Json *c = j.get("connections");
	return c && c->kind == Json::ARR ? c->arr.size() : size_t(-1);
}

TEST_F(Robust, KilledRdmaClientMidTransferLeaksNothing)
{
	Fh f;
	NFS_OK(*tc, tc->create(dir, "victim", 0644, &f));
	NFS_OK(*tc, tc->write(f, 0, test_data(1 << 20, 2)));
	static const char *modes[] = {"WRITE", "READ", "Long Call WRITE", "pipelined WRITEs"};
	for (int round = 0; round < 12; round++) {
		int mode = round % 4;
		SCOPED_TRACE(std::string(modes[mode]) + " round " + std::to_string(round));
		int p[2];
		ASSERT_EQ(pipe(p), 0);
		pid_t child = fork();
		ASSERT_GE(child, 0);
		if (child == 0) {
			close(p[0]);
			io_child(srv->rdma_addr, f, mode, p[1]);
		}
		close(p[1]);
		char x;
		ASSERT_EQ(read(p[0], &x, 1), 1) << "the child's first call failed";
		close(p[0]);
		std::this_thread::sleep_for(std::chrono::milliseconds(10 + 7 * round));
		kill(child, SIGKILL);
		int st;
		ASSERT_EQ(waitpid(child, &st, 0), child);
		ASSERT_TRUE(WIFSIGNALED(st)) << "the child ended by itself: " << st;
	}
	ASSERT_TRUE(srv->alive()) << srv->logs();
	/* the server keeps serving RDMA and TCP */
	{
		auto t = rdma();
		ASSERT_TRUE(t);
		Nfs3 c(*t);
		NFS_OK(c, c.null());
		Bytes data = test_data((1 << 20) + 3, 8);
		NFS_OK(c, c.write(f, 0, data));
		Bytes back;
		bool eof;
		NFS_OK(c, c.read(f, 0, uint32_t(data.size()), &back, &eof));
		EXPECT_EQ(crc32c(back), crc32c(data));
	}
	tcp_roundtrip(*tc, "after-kill", 4096);
	Json j;
	std::string why;
	if (!stats(&j, &why))
		GTEST_SKIP() << "server survived and serves; connection count not checked: " << why;
	auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	while (connections(j) != 0 && std::chrono::steady_clock::now() < until) {
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		ASSERT_TRUE(stats(&j, &why)) << why;
	}
	EXPECT_EQ(connections(j), 0u) << "RDMA connections still listed after every client left";
	EXPECT_EQ(j.at("global.conns_active"), 0) << "global.conns_active after every client left";
	EXPECT_GE(j.at("global.conns_accepted"), 13);
}

static long rss_kib(pid_t pid)
{
	FILE *f = fopen(("/proc/" + std::to_string(pid) + "/status").c_str(), "r");
	if (!f)
		return -1;
	char line[256];
	long v = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Connection churn: each client mounts (v3 NULL/GETATTR, v4.1 session) and
 * leaves; ganesha's memory must not grow with the number of connections. */
TEST_F(Robust, ConnectionChurnDoesNotGrowServerMemory)
{
	auto churn = [&](int n) {
		for (int i = 0; i < n; i++) {
			auto t = rdma();
			ASSERT_TRUE(t);
			Nfs3 c3(*t);
			Attr a;
			ASSERT_EQ(c3.getattr(root, &a), 0) << c3.err();
			Nfs4 c4(*t);
			ASSERT_EQ(c4.mount(), 0) << c4.err();
			ASSERT_EQ(c4.destroy_session(), 0) << c4.err();
		}
	};
	churn(40); /* warm-up: pools, caches, ganesha's client records */
	if (HasFatalFailure())
		return;
	usleep(300000);
	long before = rss_kib(srv->pid);
	churn(150);
	if (HasFatalFailure())
		return;
	usleep(300000);
	long after = rss_kib(srv->pid);
	printf("ganesha VmRSS %ld KiB -> %ld KiB over 150 connections (%+.1f KiB each)\n", before,
	       after, double(after - before) / 150);
	Json j;
	std::string why;
	if (stats(&j, &why)) {
		auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
		while (j.at("global.conns_active") != 0 &&
		       std::chrono::steady_clock::now() < until) {
			usleep(100000);
			ASSERT_TRUE(stats(&j, &why)) << why;
		}
		EXPECT_EQ(j.at("global.conns_active"), 0);
	}
	/* each connection posts credits x inline-size receive buffers: a leak of
	 * even one connection's buffers per connection would add > 128 KiB each */
	EXPECT_LT(after - before, 150 * 32) << "more than 32 KiB of server memory per connection";
}

/* The stats socket lists each live connection with its own counters. */
TEST_F(Robust, StatsSocketListsConnectionsWithTheirCounters)
{
	Json j;
	std::string why;
	if (!stats(&j, &why))
		GTEST_SKIP() << "no stats socket: " << why;
	auto a = rdma(), b = rdma();
	ASSERT_TRUE(a && b);
	Nfs3 ca(*a), cb(*b);
	for (int i = 0; i < 3; i++)
		NFS_OK(ca, ca.null());
	for (int i = 0; i < 7; i++)
		NFS_OK(cb, cb.null());
	ASSERT_TRUE(stats(&j, &why)) << why;
	const Json *conns = j.get("connections");
	ASSERT_TRUE(conns && conns->kind == Json::ARR);
	ASSERT_EQ(conns->arr.size(), 2u);
	std::multiset<double> calls;
	for (const auto &c : conns->arr) {
		const Json *peer = c.get("peer");
		ASSERT_TRUE(peer && peer->kind == Json::STR);
		EXPECT_FALSE(peer->str.empty());
		calls.insert(c.at("calls"));
	}
	EXPECT_EQ(calls, (std::multiset<double>{3, 7}));
	EXPECT_EQ(j.at("global.conns_active"), 2);
	const Json *fab = j.get("fabric");
	ASSERT_TRUE(fab && fab->kind == Json::STR);
	EXPECT_EQ(fab->str, "soft");
	EXPECT_GE(j.at("plugin.requests"), 10);
}

/*
 * Many calls in flight on one connection (up to the credit grant), as the
 * Linux client keeps them: READs into Write chunks and WRITEs from Read
 * chunks at distinct offsets, replies collected in any order, every byte
 * checked. The plugin runs them on its worker pool concurrently.
 */
TEST_F(Robust, PipelinedReadsAndWritesOnOneConnection)
{
	auto t = rdma_chunks();
	ASSERT_TRUE(t);
	Nfs3 c(*t);
	NFS_OK(c, c.null()); /* the first reply brings the real credit grant */
	uint32_t grant = t->requester().grant();
	ASSERT_GE(grant, 2u);
	const uint32_t piece = 32768 + 12, npieces = 60; /* ~1.9 MiB: fits Inode_Size */
	Fh f;
	NFS_OK(c, c.create(dir, "pipe", 0644, &f));
	Bytes all = test_data(size_t(piece) * npieces, 5);
	for (int pass = 0; pass < 2; pass++) {
		bool reads = pass == 1;
		std::map<uint32_t, uint32_t> inflight; /* xid -> piece */
		uint32_t next = 0, done = 0, peak = 0;
		while (done < npieces) {
			while (next < npieces && inflight.size() < grant) {
				CallOpts o;
				uint64_t off = uint64_t(next) * piece;
				nfsxdr::Xdr x = reads
						    ? c.read_call(f, off, piece, &o)
						    : c.write_call(f, off,
								   Bytes(all.begin() + off,
									 all.begin() + off + piece),
								   &o);
				std::string err;
				int64_t xid = t->post(x.buf, o, &err);
				ASSERT_GE(xid, 0) << err;
				inflight[uint32_t(xid)] = next++;
				peak = std::max<uint32_t>(peak, uint32_t(inflight.size()));
			}
			/* collect the newest first: replies may come in any order */
			auto it = std::prev(inflight.end());
			TransportReply r;
			std::string err;
			ASSERT_TRUE(t->collect(it->first, &r, &err)) << err;
			uint64_t off = uint64_t(it->second) * piece;
			if (reads) {
				Bytes b;
				bool eof;
				ASSERT_EQ(c.read_reply(r, it->first, piece, &b, &eof), 0)
				    << c.err();
				ASSERT_EQ(b.size(), piece);
				ASSERT_TRUE(std::equal(b.begin(), b.end(), all.begin() + off))
				    << "piece " << it->second;
			} else {
				ASSERT_EQ(c.write_reply(r, it->first, piece, nullptr), 0)
				    << c.err();
			}
			inflight.erase(it);
			done++;
		}
		printf("%s: %u calls of %u bytes, up to %u in flight (grant %u)\n",
		       reads ? "READ" : "WRITE", npieces, piece, peak, grant);
		EXPECT_GT(peak, 1u);
	}
}

/* accept_stat of an RPC reply (RFC 5531 section 9), or -1 */
static int accept_stat(const rrtest::Reply &r, uint32_t xid)
{
	TransportReply tr;
	tr.rpc = r.rpc;
	Dec d(tr);
	if (d.u32() != xid || d.u32() != 1 || d.u32() != 0)
		return -1;
	d.u32();
	d.opaque(400);
	uint32_t st = d.u32();
	return d.ok() ? int(st) : -1;
}

/* Faulty calls get their RFC answers and the connection keeps serving. */
TEST_F(Robust, FaultyCallsAnsweredConnectionSurvives)
{
	auto t = rdma();
	ASSERT_TRUE(t);
	rrtest::Requester &q = t->requester();
	Nfs3 c(*t);
	NFS_OK(c, c.null());
	auto call = [&](nfsxdr::Xdr &x, const rrtest::CallSpec &spec, rrtest::Reply *r) {
		ASSERT_TRUE(q.call(x.buf, spec, r, 5000)) << q.last_error();
		EXPECT_TRUE(r->ok()) << r->describe();
	};
	/* rdma_vers 2: ERR_VERS with low = high = 1 (RFC 8166 section 4.5) */
	{
		nfsxdr::Xdr x;
		uint32_t xid = t->next_xid();
		nfsxdr::rpc_call_header_sys(x, xid, PROG_NFS, 3, 0, 0, 0, "rr");
		rrtest::CallSpec spec;
		spec.vers = 2;
		rrtest::Reply r;
		call(x, spec, &r);
		EXPECT_EQ(r.proc, uint32_t(rrtest::RDMA_ERROR));
		EXPECT_EQ(r.err, uint32_t(rrtest::ERR_VERS));
		EXPECT_EQ(r.vers_low, 1u);
		EXPECT_EQ(r.vers_high, 1u);
	}
	struct Case {
		const char *what;
		uint32_t prog, vers, proc;
		int expect;
	} cases[] = {
	    {"unknown program", 100099, 1, 0, 1 /* PROG_UNAVAIL */},
	    {"NFS version 5", PROG_NFS, 5, 0, 2 /* PROG_MISMATCH */},
	    {"NFSv3 procedure 99", PROG_NFS, 3, 99, 3 /* PROC_UNAVAIL */},
	    {"NFSv3 GETATTR with truncated arguments", PROG_NFS, 3, 1, 4 /* GARBAGE_ARGS */},
	};
	for (const auto &k : cases) {
		SCOPED_TRACE(k.what);
		nfsxdr::Xdr x;
		uint32_t xid = t->next_xid();
		nfsxdr::rpc_call_header_sys(x, xid, k.prog, k.vers, k.proc, 0, 0, "rr");
		if (k.expect == 4) {
			x.u32(64); /* nfs_fh3 of 64 bytes, 8 present */
			x.u64(0x1122334455667788ull);
		}
		rrtest::Reply r;
		call(x, rrtest::CallSpec(), &r);
		EXPECT_EQ(r.proc, uint32_t(rrtest::RDMA_MSG));
		EXPECT_EQ(accept_stat(r, xid), k.expect);
	}
	/* a file handle is not DDP-eligible (RFC 8267 section 4.3): a GETATTR whose
	 * fh rides in a Read chunk is refused with GARBAGE_ARGS: only the
	 * DDP-eligible items of docs/architecture.md may be moved by RDMA */
	{
		nfsxdr::Xdr x;
		uint32_t xid = t->next_xid();
		nfsxdr::rpc_call_header_sys(x, xid, PROG_NFS, 3, 1, 0, 0, "rr");
		nfsxdr::Item it = x.item(root.b);
		rrtest::CallSpec spec;
		spec.mode = rrtest::CallSpec::READ;
		spec.reads = {{size_t(it.position), it.length}};
		rrtest::Reply r;
		call(x, spec, &r);
		EXPECT_EQ(r.proc, uint32_t(rrtest::RDMA_MSG));
		EXPECT_EQ(accept_stat(r, xid), 4) << "GETATTR with its fh in a Read chunk";
	}
	/* the same in NFSv4: a LOOKUP name in a Read chunk */
	{
		nfsxdr::Xdr x;
		uint32_t xid = t->next_xid();
		nfsxdr::rpc_call_header_sys(x, xid, PROG_NFS, 4, 1, 0, 0, "rr");
		x.string("bad");
		x.u32(0); /* minorversion 0: no session needed */
		x.u32(2);
		x.u32(nfsxdr::PUTROOTFH);
		x.u32(nfsxdr::LOOKUP);
		std::string name = "mem";
		nfsxdr::Item it = x.item(Bytes(name.begin(), name.end()));
		rrtest::CallSpec spec;
		spec.mode = rrtest::CallSpec::READ;
		spec.reads = {{size_t(it.position), it.length}};
		rrtest::Reply r;
		call(x, spec, &r);
		EXPECT_EQ(r.proc, uint32_t(rrtest::RDMA_MSG));
		EXPECT_EQ(accept_stat(r, xid), 4) << "LOOKUP with its name in a Read chunk";
	}
	/* a Write chunk offered with a GETATTR stays unused (echoed empty) */
	{
		nfsxdr::Xdr x;
		uint32_t xid = t->next_xid();
		nfsxdr::rpc_call_header_sys(x, xid, PROG_NFS, 3, 1, 0, 0, "rr");
		x.opaque(root.b);
		rrtest::CallSpec spec;
		spec.writes = {{{4096}, false}};
		rrtest::Reply r;
		call(x, spec, &r);
		EXPECT_EQ(accept_stat(r, xid), 0);
		ASSERT_EQ(r.write_echo.size(), 1u);
		ASSERT_EQ(r.write_echo[0].size(), 1u);
		EXPECT_EQ(r.write_echo[0][0].length, 0u);
	}
	Attr a;
	NFS_OK(c, c.getattr(root, &a));
	NFS_OK(c, c.null());
}

/* Several RDMA clients at once, each on its own connection and thread. */
TEST_F(Robust, ParallelRdmaClients)
{
	const int nthreads = 6, rounds = 15;
	std::vector<Fh> files(nthreads);
	for (int i = 0; i < nthreads; i++)
		NFS_OK(*tc, tc->create(dir, "par" + std::to_string(i), 0644, &files[i]));
	auto errs = parallel_write_read(files, rounds);
	for (int i = 0; i < nthreads; i++)
		EXPECT_EQ(errs[i], "") << "client " << i;
}

/* Counters from the stats socket across a batch of same-sized I/Os. */
TEST_F(Robust, SteadyStateCounters)
{
	Json j0;
	std::string why;
	if (!stats(&j0, &why))
		GTEST_SKIP() << "no stats socket: " << why;
	auto t = rdma_chunks();
	ASSERT_TRUE(t);
	Nfs3 c3(*t);
	Nfs4 c4(*t);
	NFS_OK(c4, c4.mount());
	Fh f3, f4, d4;
	NFS_OK(c3, c3.create(dir, "steady3", 0644, &f3));
	Fh r4;
	NFS_OK(c4, c4.lookup_path("/mem", &r4));
	Stateid sid;
	std::string d4name = unique("s4");
	Fh d3;
	NFS_OK(c3, c3.mkdir(root, d4name, 0755, &d3));
	NFS_OK(c4, c4.lookup(r4, d4name, &d4)); /* v3 and v4 handles differ */
	NFS_OK(c4, c4.open_create(d4, "steady4", &f4, &sid));
	const size_t n = 256 * 1024;
	Bytes data = test_data(n, 77);
	enum Kind { W3, R3, W4, R4 };
	const char *names[] = {"NFSv3 WRITE", "NFSv3 READ", "NFSv4.1 WRITE", "NFSv4.1 READ"};
	auto one = [&](Kind k) {
		Bytes back;
		bool eof;
		switch (k) {
		case W3:
			ASSERT_EQ(c3.write(f3, 0, data), 0) << c3.err();
			break;
		case R3:
			ASSERT_EQ(c3.read(f3, 0, uint32_t(n), &back, &eof), 0) << c3.err();
			ASSERT_EQ(crc32c(back), crc32c(data));
			break;
		case W4:
			ASSERT_EQ(c4.write(f4, sid, 0, data), 0) << c4.err();
			break;
		case R4:
			ASSERT_EQ(c4.read(f4, sid, 0, uint32_t(n), &back, &eof), 0) << c4.err();
			ASSERT_EQ(crc32c(back), crc32c(data));
			break;
		}
	};
	/*
	 * Warm-up. The engine's big-buffer pool registers a buffer whenever none
	 * is free and buffers come back only when a call is released, which can
	 * lag the client's next call; so warm up at the full credit window once
	 * (the most buffers this connection can ever hold), then sequentially.
	 */
	for (int pass = 0; pass < 2; pass++) {
		std::vector<std::pair<uint32_t, bool>> inflight;
		uint32_t grant = t->requester().grant();
		for (uint32_t i = 0; i < grant; i++) {
			CallOpts o;
			bool rd = pass == 1;
			nfsxdr::Xdr x = rd ? c3.read_call(f3, 0, uint32_t(n), &o)
					   : c3.write_call(f3, 0, data, &o);
			int64_t xid = t->post(x.buf, o, &why);
			ASSERT_GE(xid, 0) << why;
			inflight.push_back({uint32_t(xid), rd});
		}
		for (const auto &p : inflight) {
			TransportReply r;
			ASSERT_TRUE(t->collect(p.first, &r, &why)) << why;
			Bytes back;
			bool eof;
			ASSERT_EQ(p.second ? c3.read_reply(r, p.first, uint32_t(n), &back, &eof)
					   : c3.write_reply(r, p.first, n, nullptr),
				  0)
			    << c3.err();
		}
	}
	for (int i = 0; i < 16; i++)
		for (Kind k : {W3, R3, W4, R4})
			one(k);
	if (HasFatalFailure())
		return;
	const int ios = 8;
	printf("steady state, %d I/Os of %zu bytes each through Read/Write chunks:\n", ios, n);
	for (Kind k : {W3, R3, W4, R4}) {
		Json a, b;
		std::string raw;
		ASSERT_TRUE(read_stats(srv->stats_path, &a, &raw, &why)) << why;
		for (int i = 0; i < ios; i++)
			one(k);
		if (HasFatalFailure())
			return;
		ASSERT_TRUE(read_stats(srv->stats_path, &b, &raw, &why)) << why;
		auto delta = [&](const char *key) {
			std::string p = std::string("global.") + key;
			EXPECT_GE(a.at(p), 0) << p << " missing from the stats: " << raw;
			return b.at(p) - a.at(p);
		};
		double regs = delta("registrations"), copies = delta("payload_copies");
		double calls = delta("calls");
		double dec_copied = b.at("plugin.decode_copy_bytes") - a.at("plugin.decode_copy_bytes");
		double dec_in_place =
		    b.at("plugin.decode_in_place_bytes") - a.at("plugin.decode_in_place_bytes");
		double rd = delta("rdma_read_bytes"), wr = delta("rdma_write_bytes");
		printf("  %-14s calls %+4g  registrations/IO %.3f  payload_copies/IO %.1f  "
		       "decode_copy_bytes/IO %.0f  rdma_read_bytes/IO %.0f  rdma_write_bytes/IO %.0f\n",
		       names[k], calls, regs / ios, copies / ios, dec_copied / ios, rd / ios, wr / ios);
		std::string tag =
		    std::string(names[k]).substr(0, 5) + (k == W3 || k == W4 ? "w" : "r");
		RecordProperty(tag + "_registrations_per_io", std::to_string(regs / ios));
		RecordProperty(tag + "_payload_copies_per_io", std::to_string(copies / ios));
		EXPECT_EQ(calls, ios) << names[k];
		/* iWARP: each WRITE's Read chunk sink is registered for its
		 * Read alone, and each READ's payload buffer for its Reply in
		 * the connection's own PD (docs/devices.md); elsewhere none
		 * per I/O */
		bool own_pd = rr_test_device().transport == FAB_TRANSPORT_IWARP;
		EXPECT_EQ(regs, own_pd ? ios : 0)
		    << names[k] << ": registrations per I/O in steady state on "
		    << rr_test_device_name();
		EXPECT_EQ(copies, 0) << names[k]
				     << ": the plugin must not copy payload (READ data is "
					"written from the FSAL's buffer, WRITE data read into place)";
		if (k == W3 || k == W4) {
			EXPECT_GE(rd, double(n) * ios) << names[k] << ": data pulled by RDMA Read";
			EXPECT_EQ(dec_in_place, double(n) * ios)
			    << names[k] << ": WRITE data decoded where the RDMA Read put it";
		} else {
			EXPECT_GE(wr, double(n) * ios) << names[k] << ": data pushed by RDMA Write";
		}
		EXPECT_LT(dec_copied / ios, 1024.0)
		    << names[k] << ": the decoder copies handles and credentials, not payload";
	}
	NFS_OK(c4, c4.close(f4, sid));
	NFS_OK(c4, c4.destroy_session());
}

/*
 * A server with the smallest inline threshold (1024, the RFC 8166 default)
 * and 2 credits: the client's AUTO policy now picks chunks for mid-sized
 * calls and replies, as a Linux client talking to such a server would.
 */
class SmallInline : public PluginTest
{
      protected:
	static void SetUpTestSuite()
	{
		options.inline_threshold = 1024;
		options.credits = 2;
		PluginTest::SetUpTestSuite();
	}
};

TEST_F(SmallInline, Nfs3AndNfs4AutoShapes)
{
	Fh root = mount3();
	ASSERT_FALSE(root.empty());
	auto t = rdma();
	ASSERT_TRUE(t);
	EXPECT_EQ(t->requester().inline_send(), 1024u);
	EXPECT_EQ(t->requester().inline_recv(), 1024u);
	Nfs3 c(*t);
	Fh d, f;
	std::string dn = unique("si");
	NFS_OK(c, c.mkdir(root, dn, 0755, &d));
	NFS_OK(c, c.create(d, "f", 0644, &f));
	for (size_t n : {size_t(200), size_t(900), size_t(1500), size_t(5000), size_t(65537)}) {
		SCOPED_TRACE("length " + std::to_string(n));
		Bytes data = test_data(n, uint32_t(n));
		NFS_OK(c, c.write(f, 0, data));
		EXPECT_EQ(t->last_spec.mode,
			  n > 800 ? rrtest::CallSpec::READ : rrtest::CallSpec::INLINE);
		Bytes back;
		bool eof;
		NFS_OK(c, c.read(f, 0, uint32_t(n), &back, &eof));
		EXPECT_EQ(t->last_spec.writes.empty(), n < 600);
		EXPECT_EQ(crc32c(back), crc32c(data));
	}
	/* a 900-byte symlink: its READLINK reply needs a Write chunk here */
	std::string target(900, 's');
	Fh l;
	NFS_OK(c, c.symlink(d, "l", target, &l));
	std::string got;
	NFS_OK(c, c.readlink(l, &got));
	EXPECT_EQ(got, target);
	/* 40 names: a READDIR reply of a few KiB goes by Reply chunk */
	for (int i = 0; i < 40; i++) {
		Fh x;
		NFS_OK(c, c.create(d, "n" + std::to_string(i) + std::string(60, 'k'), 0644, &x));
	}
	std::vector<DirEntry> ents;
	NFS_OK(c, c.readdir(d, &ents, 8192));
	EXPECT_EQ(ents.size(), 44u); /* . .. f l + 40 */
	/* NFSv4.1 session: its GETATTR/OPEN replies stay inline, I/O via chunks */
	Nfs4 c4(*t);
	NFS_OK(c4, c4.mount());
	Fh r4, d4, f4;
	NFS_OK(c4, c4.lookup_path("/mem/" + dn, &d4));
	Stateid sid;
	NFS_OK(c4, c4.open_create(d4, "g", &f4, &sid));
	Bytes data = test_data(100000, 4);
	NFS_OK(c4, c4.write(f4, sid, 0, data));
	Bytes back;
	bool eof;
	NFS_OK(c4, c4.read(f4, sid, 0, 100000, &back, &eof));
	EXPECT_EQ(crc32c(back), crc32c(data));
	ents.clear();
	NFS_OK(c4, c4.readdir(d4, &ents, 8192));
	EXPECT_EQ(ents.size(), 43u); /* v4 READDIR has no . and .. */
	NFS_OK(c4, c4.close(f4, sid));
	NFS_OK(c4, c4.destroy_session());
}

/*
 * ganesha stops on SIGTERM while RDMA clients are connected, with calls in
 * flight and a v4.1 session open: the plugin must not hold shutdown up.
 * Baseline first: the same stop with no RDMA client.
 */
TEST(PluginShutdown, SigtermWithActiveRdmaClientsExitsPromptly)
{
	std::string why;
	if (!GaneshaServer::available(&why))
		GTEST_SKIP() << "plugin tests need ganesha and the plugin: " << why;
	for (bool clients : {false, true}) {
		SCOPED_TRACE(clients ? "with RDMA clients" : "no RDMA client");
		GaneshaServer s;
		ASSERT_TRUE(s.start(GaneshaOptions(), &why)) << why;
		std::vector<std::unique_ptr<RdmaTransport>> ts;
		std::vector<std::unique_ptr<Nfs4>> cs;
		if (clients) {
			for (int i = 0; i < 3; i++) {
				auto t = RdmaTransport::connect(s.rdma_addr, &why);
				ASSERT_TRUE(t) << why;
				cs.emplace_back(new Nfs4(*t));
				ASSERT_EQ(cs.back()->mount(), 0) << cs.back()->err();
				ts.push_back(std::move(t));
			}
			/* a few NULLs left in flight on the first connection */
			Nfs3 c3(*ts[0]);
			for (int i = 0; i < 4; i++) {
				nfsxdr::Xdr x;
				nfsxdr::rpc_call_header_sys(x, ts[0]->next_xid(), PROG_NFS, 3, 0, 0,
							    0, "rr");
				ASSERT_GE(ts[0]->post(x.buf, CallOpts(), &why), 0) << why;
			}
		}
		auto t0 = std::chrono::steady_clock::now();
		std::string logs = s.logs();
		int st = 0;
		bool clean = s.stop(8000, &st);
		double secs =
		    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		printf("%s: SIGTERM -> exit in %.2f s (%s, status %#x)\n",
		       clients ? "3 RDMA clients" : "no RDMA client", secs,
		       clean ? "clean" : "had to SIGKILL", st);
		EXPECT_TRUE(clean) << "ganesha ignored SIGTERM for 8 s";
		ts.clear();
	}
}

/* The soft fabric listening on TCP (Listen_Addr/Port) rather than a unix socket. */
class SoftOverTcp : public PluginTest
{
      protected:
	static void SetUpTestSuite()
	{
		options.soft_tcp = true;
		PluginTest::SetUpTestSuite();
	}
};

TEST_F(SoftOverTcp, Nfs3WriteReadThroughChunks)
{
	ASSERT_EQ(srv->rdma_addr.rfind("tcp:", 0), 0u);
	Fh root = mount3();
	ASSERT_FALSE(root.empty());
	auto t = rdma_chunks();
	ASSERT_TRUE(t);
	Nfs3 c(*t);
	Fh f;
	NFS_OK(c, c.create(root, unique("tcpfab"), 0644, &f));
	Bytes data = test_data((1 << 20) + 3, 31);
	NFS_OK(c, c.write(f, 0, data));
	Bytes back;
	bool eof;
	NFS_OK(c, c.read(f, 0, uint32_t(data.size()), &back, &eof));
	EXPECT_EQ(crc32c(back), crc32c(data));
}

/* Max_Connections = 2: a third client is turned away; the two keep working;
 * once one leaves, a new client gets in. */
class MaxConnections : public PluginTest
{
      protected:
	static void SetUpTestSuite()
	{
		options.extra_rdma = "\tMax_Connections = 2;\n";
		PluginTest::SetUpTestSuite();
	}
};

TEST_F(MaxConnections, ThirdClientRefusedUntilOneLeaves)
{
	auto a = rdma(), b = rdma();
	ASSERT_TRUE(a && b);
	Nfs3 ca(*a), cb(*b);
	NFS_OK(ca, ca.null());
	NFS_OK(cb, cb.null());
	std::string err;
	auto c = RdmaTransport::connect(srv->rdma_addr, &err);
	bool refused = !c;
	if (c) {
		/* accepted at the CM level: it must not be served */
		Nfs3 cc(*c);
		c->policy.timeout_ms = 2000;
		refused = cc.null() != 0;
	}
	EXPECT_TRUE(refused) << "a third connection was served with Max_Connections = 2";
	c.reset();
	NFS_OK(ca, ca.null());
	NFS_OK(cb, cb.null());
	a.reset();
	/* the server sees the disconnect asynchronously: retry for a while */
	bool in = false;
	for (int i = 0; i < 50 && !in; i++) {
		auto d = RdmaTransport::connect(srv->rdma_addr, &err);
		if (d) {
			Nfs3 cd(*d);
			d->policy.timeout_ms = 2000;
			in = cd.null() == 0;
		}
		if (!in)
			usleep(100000);
	}
	EXPECT_TRUE(in) << "no new client admitted after one of two left: " << err;
	NFS_OK(cb, cb.null());
}

} // namespace
} // namespace rrplug
