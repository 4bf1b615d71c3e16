// SPDX-License-Identifier: MIT
/*
 * rpcrdma_demo_client - mount ganesha over RPC-over-RDMA (soft fabric or
 * verbs) with the test NFS client, write N MiB, read it back, verify a
 * checksum, and print a transcript with timings and the server's counters.
 * NFSv4.1 (session) and NFSv3 (MOUNT over TCP, NFS over RDMA). Exit 0 on
 * success, 1 on any failure, 2 on bad usage.
 *
 *   rpcrdma_demo_client --rdma unix:/tmp/x/rdma.sock [--host 127.0.0.1]
 *       [--mnt-port 20048] [--mib 8] [--file-mib 1] [--stats /tmp/x/stats.sock]
 *       [--export /mem] [--no-v3] [--no-v4]
 */
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "support/nfs_client.h"

using namespace nfsc;
using Clock = std::chrono::steady_clock;

namespace
{

struct Args {
	std::string rdma, host = "127.0.0.1", stats, exp = "/mem";
	int mnt_port = 20048;
	int nfs_port = 0; /* with it: the same runs over ganesha's TCP, for comparison */
	unsigned mib = 8, file_mib = 1;
	bool v3 = true, v4 = true;
};

double ms_since(Clock::time_point t)
{
	return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

void row(const char *what, const char *extra)
{
	printf("  %-40s ok  %s\n", what, extra);
}

struct Result {
	std::string what;
	double mibs;
};
std::vector<Result> results;

void rate(const char *what, double ms, unsigned mib, const Client &c)
{
	printf("  %-40s ok  %9.2f ms %8.1f MiB/s  [%s]\n", what, ms, mib / (ms / 1000),
	       c.last().shape.c_str());
}

bool step(const char *what, int rc, const Client &c, Clock::time_point t0)
{
	if (rc == 0) {
		printf("  %-40s ok  %9.2f ms                 [%s]\n", what, ms_since(t0),
		       c.last().shape.c_str());
		return true;
	}
	printf("  %-40s FAILED (%d) %s [%s]\n", what, rc, c.err().c_str(), c.last().shape.c_str());
	return false;
}

#define STEP(what, cl, expr)                                                                       \
	do {                                                                                       \
		auto t0_ = Clock::now();                                                           \
		if (!step(what, (expr), cl, t0_))                                                  \
			return false;                                                              \
	} while (0)

void print_stats(const std::string &path, const char *when)
{
	if (path.empty())
		return;
	Json j;
	std::string raw, err;
	if (!read_stats(path, &j, &raw, &err)) {
		printf("server counters (%s): unavailable: %s\n", when, err.c_str());
		return;
	}
	printf("server counters (%s):", when);
	const Json *g = j.get("global");
	int k = 0;
	if (g)
		for (const auto &m : g->obj)
			if (m.second.kind == Json::NUM)
				printf("%s%s=%.0f", k++ % 4 ? "  " : "\n    ", m.first.c_str(),
				       m.second.num);
	const Json *c = j.get("connections");
	printf("\n    connections listed: %zu\n", c && c->kind == Json::ARR ? c->arr.size() : 0);
}

/*
 * What the RDMA runs showed, from the server's own counters since the
 * connection was up: the calls, which of them moved data by RDMA Read (Read
 * chunks) and RDMA Write (Write and Reply chunks), and that none of that
 * data was copied; the registrations per call (0 but on iWARP, where each
 * READ and WRITE registers its buffer: docs/devices.md). False when no data
 * went by a chunk or some was copied.
 */
bool print_proved(const std::string &path, const Json &up)
{
	Json now;
	std::string raw, err;
	if (!read_stats(path, &now, &raw, &err)) {
		printf("what this run showed: server counters unavailable: %s\n", err.c_str());
		return false;
	}
	auto d = [&](const char *key) {
		std::string k = std::string("global.") + key;
		return now.at(k) - up.at(k);
	};
	double calls = d("calls");
	printf("what this run showed (server counters, RDMA runs, after the connection was up):\n");
	printf("  %-44s %.0f\n", "calls served over RPC-over-RDMA", calls);
	printf("  %-44s %.0f (%.0f bytes pulled by RDMA Read)\n",
	       "calls whose data came in Read chunks", d("calls_with_read_chunks"),
	       d("rdma_read_bytes"));
	printf("  %-44s %.0f by Write chunks, %.0f by Reply chunks (%.0f bytes by RDMA Write)\n",
	       "Replies that went by RDMA Write", d("replies_write_chunk"),
	       d("replies_reply_chunk"), d("rdma_write_bytes"));
	printf("  %-44s %.0f bytes\n", "payload copied (payload_copies)", d("payload_copies"));
	printf("  %-44s %.0f in %.0f calls (%.3f per call)\n",
	       "memory registrations (registrations)", d("registrations"), calls,
	       calls ? d("registrations") / calls : 0.0);
	return d("calls_with_read_chunks") > 0 && d("replies_write_chunk") > 0 &&
	       d("payload_copies") == 0;
}

bool run_v4(const Args &a, Transport &t)
{
	const char *over = t.name() == "tcp" ? "TCP" : "RPC-over-RDMA";
	printf("NFSv4.1 over %s\n", over);
	Nfs4 c(t);
	Fh root;
	STEP("NULL", c, c.null());
	STEP("EXCHANGE_ID", c, c.exchange_id());
	STEP("CREATE_SESSION", c, c.create_session());
	STEP("RECLAIM_COMPLETE", c, c.reclaim_complete());
	STEP(("PUTROOTFH LOOKUP " + a.exp + " GETFH").c_str(), c, c.lookup_path(a.exp, &root));
	unsigned files = (a.mib + a.file_mib - 1) / a.file_mib;
	size_t fsize = size_t(a.file_mib) << 20;
	std::vector<Fh> fh(files);
	std::vector<Stateid> sid(files);
	std::vector<uint32_t> sum(files);
	for (unsigned i = 0; i < files; i++) {
		std::string name = "demo-v4-" + t.name() + "-" + std::to_string(getpid()) + "-" +
				   std::to_string(i);
		auto t0 = Clock::now();
		int rc = c.open_create(root, name, &fh[i], &sid[i]);
		if (rc)
			return step(("OPEN " + name).c_str(), rc, c, t0);
	}
	row(("OPEN (create) " + std::to_string(files) + " files").c_str(), "");
	auto t0 = Clock::now();
	for (unsigned i = 0; i < files; i++) {
		Bytes data = test_data(fsize, 1000 + i);
		sum[i] = crc32c(data);
		for (size_t off = 0; off < fsize; off += 1 << 20) {
			Bytes part(data.begin() + off,
				   data.begin() + std::min(fsize, off + (1 << 20)));
			int rc = c.write(fh[i], sid[i], off, part);
			if (rc)
				return step("WRITE", rc, c, t0);
		}
	}
	double wms = ms_since(t0);
	rate(("WRITE " + std::to_string(files * a.file_mib) + " MiB, 1 MiB FILE_SYNC4").c_str(),
	     wms, files * a.file_mib, c);
	results.push_back(
	    {std::string("NFSv4.1 WRITE ") + over, files * a.file_mib / (wms / 1000)});
	t0 = Clock::now();
	for (unsigned i = 0; i < files; i++) {
		Bytes all;
		for (size_t off = 0; off < fsize; off += 1 << 20) {
			Bytes part;
			bool eof;
			int rc = c.read(fh[i], sid[i], off, 1 << 20, &part, &eof);
			if (rc)
				return step("READ", rc, c, t0);
			all.insert(all.end(), part.begin(), part.end());
		}
		if (crc32c(all) != sum[i] || all.size() != fsize) {
			printf(
			    "  READ file %u: CHECKSUM MISMATCH (%zu bytes, crc32c %08x != %08x)\n",
			    i, all.size(), crc32c(all), sum[i]);
			return false;
		}
	}
	double rms = ms_since(t0);
	rate(("READ " + std::to_string(files * a.file_mib) + " MiB + crc32c check").c_str(), rms,
	     files * a.file_mib, c);
	results.push_back({std::string("NFSv4.1 READ ") + over, files * a.file_mib / (rms / 1000)});
	for (unsigned i = 0; i < files; i++) {
		auto t1 = Clock::now();
		int rc = c.close(fh[i], sid[i]);
		if (rc)
			return step("CLOSE", rc, c, t1);
	}
	row(("CLOSE " + std::to_string(files) + " files").c_str(), "");
	STEP("DESTROY_SESSION", c, c.destroy_session());
	return true;
}

bool run_v3(const Args &a, Transport &t)
{
	const char *over = t.name() == "tcp" ? "TCP" : "RPC-over-RDMA";
	printf("NFSv3 over %s (MOUNT over TCP %s:%d)\n", over, a.host.c_str(), a.mnt_port);
	std::string err;
	auto mt = TcpTransport::connect(a.host, uint16_t(a.mnt_port), &err);
	if (!mt) {
		printf("  MOUNT connect FAILED: %s\n", err.c_str());
		return false;
	}
	Mount3 m(*mt);
	Fh root;
	STEP(("MOUNT MNT " + a.exp + " (TCP)").c_str(), m, m.mnt(a.exp, &root));
	Nfs3 c(t);
	STEP("NULL", c, c.null());
	Attr at;
	STEP("GETATTR /", c, c.getattr(root, &at));
	unsigned files = (a.mib + a.file_mib - 1) / a.file_mib;
	size_t fsize = size_t(a.file_mib) << 20;
	std::vector<Fh> fh(files);
	for (unsigned i = 0; i < files; i++) {
		std::string name = "demo-v3-" + t.name() + "-" + std::to_string(getpid()) + "-" +
				   std::to_string(i);
		auto t0 = Clock::now();
		int rc = c.create(root, name, 0644, &fh[i]);
		if (rc)
			return step(("CREATE " + name).c_str(), rc, c, t0);
	}
	row(("CREATE " + std::to_string(files) + " files").c_str(), "");
	std::vector<uint32_t> sum(files);
	auto t0 = Clock::now();
	for (unsigned i = 0; i < files; i++) {
		Bytes data = test_data(fsize, 2000 + i);
		sum[i] = crc32c(data);
		for (size_t off = 0; off < fsize; off += 1 << 20) {
			Bytes part(data.begin() + off,
				   data.begin() + std::min(fsize, off + (1 << 20)));
			int rc = c.write(fh[i], off, part);
			if (rc)
				return step("WRITE", rc, c, t0);
		}
	}
	double wms = ms_since(t0);
	rate(("WRITE " + std::to_string(files * a.file_mib) + " MiB, 1 MiB FILE_SYNC").c_str(), wms,
	     files * a.file_mib, c);
	results.push_back({std::string("NFSv3 WRITE ") + over, files * a.file_mib / (wms / 1000)});
	t0 = Clock::now();
	for (unsigned i = 0; i < files; i++) {
		Bytes all;
		for (size_t off = 0; off < fsize; off += 1 << 20) {
			Bytes part;
			bool eof;
			int rc = c.read(fh[i], off, 1 << 20, &part, &eof);
			if (rc)
				return step("READ", rc, c, t0);
			all.insert(all.end(), part.begin(), part.end());
		}
		if (crc32c(all) != sum[i] || all.size() != fsize) {
			printf("  READ file %u: CHECKSUM MISMATCH (%zu bytes)\n", i, all.size());
			return false;
		}
	}
	double rms = ms_since(t0);
	rate(("READ " + std::to_string(files * a.file_mib) + " MiB + crc32c check").c_str(), rms,
	     files * a.file_mib, c);
	results.push_back({std::string("NFSv3 READ ") + over, files * a.file_mib / (rms / 1000)});
	for (unsigned i = 0; i < files; i++) {
		auto t1 = Clock::now();
		int rc = c.remove(root, "demo-v3-" + t.name() + "-" + std::to_string(getpid()) +
					    "-" + std::to_string(i));
		if (rc)
			return step("REMOVE", rc, c, t1);
	}
	row(("REMOVE " + std::to_string(files) + " files").c_str(), "");
	return true;
}

int usage()
{
	fprintf(stderr, "usage: rpcrdma_demo_client --rdma unix:PATH|tcp:HOST:PORT [--host IP] "
			"[--mnt-port N] [--nfs-port N (compare with TCP)] [--mib N] [--file-mib N] "
			"[--stats PATH] [--export PATH] "
			"[--no-v3] [--no-v4]\n");
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	Args a;
	for (int i = 1; i < argc; i++) {
		std::string k = argv[i];
		auto val = [&]() -> const char * { return i + 1 < argc ? argv[++i] : nullptr; };
		const char *v = nullptr;
		if (k == "--no-v3") {
			a.v3 = false;
			continue;
		}
		if (k == "--no-v4") {
			a.v4 = false;
			continue;
		}
		if (!(v = val()))
			return usage();
		if (k == "--rdma")
			a.rdma = v;
		else if (k == "--host")
			a.host = v;
		else if (k == "--mnt-port")
			a.mnt_port = atoi(v);
		else if (k == "--nfs-port")
			a.nfs_port = atoi(v);
		else if (k == "--mib")
			a.mib = unsigned(atoi(v));
		else if (k == "--file-mib")
			a.file_mib = unsigned(atoi(v));
		else if (k == "--stats")
			a.stats = v;
		else if (k == "--export")
			a.exp = v;
		else
			return usage();
	}
	if (a.rdma.empty() || a.mib == 0 || a.file_mib == 0)
		return usage();

	printf("rpcrdma demo: %u MiB each way, NFS over RPC-over-RDMA at %s\n", a.mib,
	       a.rdma.c_str());
	print_stats(a.stats, "before");
	auto t0 = Clock::now();
	std::string err;
	auto t = RdmaTransport::connect(a.rdma, &err);
	if (!t) {
		printf("RDMA connect to %s FAILED: %s\n", a.rdma.c_str(), err.c_str());
		return 1;
	}
	rrtest::Requester &q = t->requester();
	printf("connected in %.2f ms: inline send %u / recv %u bytes, server CM private data %s\n",
	       ms_since(t0), q.inline_send(), q.inline_recv(),
	       q.server_priv_valid() ? "valid (RFC 8797)" : "absent");
	/* the connection is set up: what the server counts from here is the I/O's */
	Json up;
	std::string raw_up, err_up;
	bool have_up = !a.stats.empty() && read_stats(a.stats, &up, &raw_up, &err_up);
	bool ok = true;
	if (a.v4)
		ok = run_v4(a, *t) && ok;
	if (ok && a.v3)
		ok = run_v3(a, *t) && ok;
	t.reset();
	/* the server learns of the disconnect asynchronously: give it a moment */
	for (int i = 0; i < 20 && !a.stats.empty(); i++) {
		Json j;
		std::string raw, e;
		if (!read_stats(a.stats, &j, &raw, &e) || j.at("global.conns_active") == 0)
			break;
		usleep(50000);
	}
	print_stats(a.stats, "after");
	if (have_up && !print_proved(a.stats, up)) {
		printf("the counters do not show zero-copy chunk transfers\n");
		ok = false;
	}
	if (ok && a.nfs_port) {
		auto tt = TcpTransport::connect(a.host, uint16_t(a.nfs_port), &err);
		if (!tt) {
			printf("TCP connect to %s:%d FAILED: %s\n", a.host.c_str(), a.nfs_port,
			       err.c_str());
			ok = false;
		} else {
			printf("the same runs over ganesha's own TCP transport (%s:%d), for "
			       "comparison\n",
			       a.host.c_str(), a.nfs_port);
			if (a.v4)
				ok = run_v4(a, *tt) && ok;
			if (ok && a.v3)
				ok = run_v3(a, *tt) && ok;
		}
		if (ok) {
			printf("throughput (MiB/s, one client, one call at a time, soft fabric on "
			       "loopback):\n");
			printf("  the soft fabric stands in for an RNIC with sockets and threads on "
			       "this machine's cores: these figures compare two code paths here, "
			       "not RDMA with TCP on a network (bench/RESULTS.md has what carries "
			       "over: instructions per call)\n");
			for (const auto &r : results)
				if (r.what.find("RPC-over-RDMA") != std::string::npos) {
					std::string base =
					    r.what.substr(0, r.what.find(" RPC-over-RDMA"));
					for (const auto &q2 : results)
						if (q2.what == base + " TCP")
							printf("  %-16s RDMA %8.1f   TCP %8.1f   "
							       "ratio %.2f\n",
							       base.c_str(), r.mibs, q2.mibs,
							       r.mibs / q2.mibs);
				}
		}
	}
	printf("%s\n", ok ? "demo: SUCCESS" : "demo: FAILED");
	return ok ? 0 : 1;
}
