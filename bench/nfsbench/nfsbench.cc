// SPDX-License-Identifier: MIT
/*
 * nfsbench.cc - drive NFSv3 operations at a server over RPC-over-RDMA (the
 * independent requester of tests/support) or over TCP (RFC 5531 record
 * marking), the same calls on both, for bench/run.sh; and their NFSv4.1
 * COMPOUNDs at queue depth 1 (the v41 ops, nfsbench_v41.cc).
 *
 *   nfsbench (--rdma FABADDR | --tcp HOST:PORT) [--mount HOST:PORT --export PATH]
 *            --op null|getattr|read4k|write4k|read1m|write1m
 *            [--qd N] [--conns N] [--count N | --secs S] [--warmup N] [--sync]
 *            (--conns, RDMA only: N connections from this one thread, each
 *            kept at --qd calls, served in turn; --warmup runs on each)
 *   nfsbench (--rdma FABADDR | --tcp HOST:PORT) [--export PATH]
 *            --op v41getattr|v41read4k|v41write4k|v41read1m|v41write1m
 *            [--count N] [--warmup N] [--sync]
 *   nfsbench --rdma FABADDR --idle N --hold S [--junk K] [--io 1]
 *            open N idle connections (one NULL call each), hold them S
 *            seconds or until the server has closed them all; the first K
 *            send a message the server drops (too short for a header) every
 *            second instead of staying quiet; --io 1: before going idle,
 *            every connection at once a 1 MiB WRITE (its data in a Read
 *            chunk), then every one at once a 1 MiB READ (a Write chunk)
 *   nfsbench --rdma FABADDR --storm N [--start-at T] [--hold S]
 *                                                 N connections at once
 *
 * With --mount it gets the export's root handle by MOUNT v3 over TCP, creates
 * (UNCHECKED) the file "bench.dat" and fills 1 MiB of it; without --mount only
 * "null" works (any RPC program answers procedure 0 - the engine bench server
 * answers every call that way). READ offers one Write chunk for the data;
 * WRITE moves the data in a Read chunk when the Call exceeds the inline size
 * (as the Linux client does). Prints one JSON line: ops, seconds, ops/s, MB/s,
 * and over RDMA the smallest credit grant seen in any reply and how many
 * replies carried a zero grant or a protocol violation. With --sync it
 * prints "WARM" after set-up and warm-up and waits for a line on stdin before
 * the measured calls, and prints "END" after its JSON line and waits again
 * before disconnecting (so a profiler can be zeroed and dumped around
 * exactly the measured calls).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nfsbench_v41.h"
#include "support/nfs_xdr_builder.h"
#include "support/rr_requester.h"
#include "support/rr_storm.h"

using nfsxdr::Bytes;
using nfsxdr::Xdr;

namespace {

enum : uint32_t {
	NFS_PROG = 100003,
	MOUNT_PROG = 100005,
	NFSPROC3_NULL = 0,
	NFSPROC3_GETATTR = 1,
	NFSPROC3_READ = 6,
	NFSPROC3_WRITE = 7,
	NFSPROC3_CREATE = 8,
	MOUNTPROC3_MNT = 1,
};

[[noreturn]] void die(const std::string &m)
{
	fprintf(stderr, "nfsbench: %s\n", m.c_str());
	exit(1);
}

/* RPC Call header with AUTH_SYS uid 0 gid 0 (the export squashes nothing). */
void call_header(Xdr &x, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc)
{
	x.u32(xid);
	x.u32(0);
	x.u32(2);
	x.u32(prog);
	x.u32(vers);
	x.u32(proc);
	Xdr a;
	a.u32(1);
	a.string("nfsbench");
	a.u32(0);
	a.u32(0);
	a.u32(0);
	x.u32(1); /* AUTH_SYS */
	x.opaque(a.buf);
	x.u32(0);
	x.u32(0);
}

/* Reads an RPC Reply; returns the offset of the results, or 0 when not SUCCESS. */
struct Rd {
	const uint8_t *p;
	size_t n, off = 0;
	bool bad = false;
	uint32_t u32()
	{
		if (off + 4 > n) {
			bad = true;
			return 0;
		}
		uint32_t v = uint32_t(p[off]) << 24 | uint32_t(p[off + 1]) << 16 |
			     uint32_t(p[off + 2]) << 8 | p[off + 3];
		off += 4;
		return v;
	}
	void skip(size_t k)
	{
		if (off + k > n)
			bad = true;
		else
			off += k;
	}
	Bytes opaque()
	{
		uint32_t l = u32();
		if (bad || off + l > n) {
			bad = true;
			return {};
		}
		Bytes b(p + off, p + off + l);
		off += (l + 3) & ~3u;
		return b;
	}
};

bool reply_results(Rd &r)
{
	r.u32(); /* xid */
	if (r.u32() != 1 || r.u32() != 0)
		return false;
	r.u32();
	uint32_t vl = r.u32();
	r.skip((vl + 3) & ~3u);
	return r.u32() == 0 && !r.bad;
}

/* One call: the RPC message, and for RDMA which item may go in a Read chunk. */
struct Op {
	Bytes rpc;
	bool has_item = false;
	nfsxdr::Item item{};
	uint32_t read_count = 0; /* READ: offer a Write chunk this long */
	size_t payload = 0;      /* bytes of file data moved */
};

struct Spec {
	std::string op;
	Bytes fh;
	uint32_t size = 0;
	Bytes data;
};

Op build(const Spec &s, uint32_t xid, uint64_t seq)
{
	Op o;
	Xdr x;
	uint64_t span = s.size ? (1u << 20) / s.size : 1;
	uint64_t off = s.size ? (seq % span) * s.size : 0;

	if (s.op == "null") {
		call_header(x, xid, NFS_PROG, 3, NFSPROC3_NULL);
	} else if (s.op == "getattr") {
		call_header(x, xid, NFS_PROG, 3, NFSPROC3_GETATTR);
		x.opaque(s.fh);
	} else if (s.op.rfind("read", 0) == 0) {
		call_header(x, xid, NFS_PROG, 3, NFSPROC3_READ);
		x.opaque(s.fh);
		x.u64(off);
		x.u32(s.size);
		o.read_count = s.size;
		o.payload = s.size;
	} else {
		call_header(x, xid, NFS_PROG, 3, NFSPROC3_WRITE);
		x.opaque(s.fh);
		x.u64(off);
		x.u32(s.size);
		x.u32(0); /* UNSTABLE */
		o.item = x.item(s.data);
		o.has_item = true;
		o.payload = s.size;
	}
	o.rpc = std::move(x.buf);
	return o;
}

/* ------------------------------------------------------------------ TCP */

int tcp_connect(const std::string &hp)
{
	auto c = hp.rfind(':');
	if (c == std::string::npos)
		die("bad HOST:PORT " + hp);
	sockaddr_in sa{};
	sa.sin_family = AF_INET;
	sa.sin_port = htons(uint16_t(atoi(hp.c_str() + c + 1)));
	if (inet_pton(AF_INET, hp.substr(0, c).c_str(), &sa.sin_addr) != 1)
		die("bad address " + hp);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (sockaddr *)&sa, sizeof(sa)))
		die("connect " + hp + ": " + strerror(errno));
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Pipelined record-marking client on one socket (nonblocking, poll). */
class Tcp
{
      public:
	explicit Tcp(const std::string &hp) : fd_(tcp_connect(hp))
	{
		fcntl(fd_, F_SETFL, O_NONBLOCK);
	}
	~Tcp()
	{
		close(fd_);
	}
	void send(const Bytes &rpc)
	{
		uint32_t mark = htonl(0x80000000u | uint32_t(rpc.size()));
		size_t at = out_.size();
		out_.resize(at + 4 + rpc.size());
		memcpy(&out_[at], &mark, 4);
		memcpy(&out_[at + 4], rpc.data(), rpc.size());
		pending_++;
	}
	/* Run I/O until one complete reply is in @out. */
	void recv(Bytes *out)
	{
		for (;;) {
			if (take(out))
				return;
			pollfd p{fd_, short(POLLIN | (out_.size() > sent_ ? POLLOUT : 0)), 0};
			if (poll(&p, 1, 10000) <= 0)
				die("tcp: no reply in 10 s");
			if (p.revents & POLLOUT) {
				ssize_t k = ::send(fd_, out_.data() + sent_, out_.size() - sent_,
						   MSG_NOSIGNAL);
				if (k < 0 && errno != EAGAIN)
					die(std::string("tcp send: ") + strerror(errno));
				if (k > 0)
					sent_ += size_t(k);
				if (sent_ == out_.size()) {
					out_.clear();
					sent_ = 0;
				} else if (sent_ > (4u << 20)) {
					out_.erase(out_.begin(), out_.begin() + long(sent_));
					sent_ = 0;
				}
			}
			if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
				size_t at = in_.size();
				in_.resize(at + (1u << 20));
				ssize_t k = ::recv(fd_, in_.data() + at, 1u << 20, 0);
				in_.resize(at + (k > 0 ? size_t(k) : 0));
				if (k == 0)
					die("tcp: server closed the connection");
				if (k < 0 && errno != EAGAIN)
					die(std::string("tcp recv: ") + strerror(errno));
			}
		}
	}
	unsigned pending() const
	{
		return pending_;
	}

      private:
	bool take(Bytes *out)
	{
		size_t at = 0;
		out->clear();
		for (;;) {
			if (in_.size() - at < 4)
				return false;
			uint32_t m;
			memcpy(&m, &in_[at], 4);
			m = ntohl(m);
			size_t l = m & 0x7fffffffu;
			if (in_.size() - at - 4 < l)
				return false;
			out->insert(out->end(), in_.begin() + long(at + 4),
				    in_.begin() + long(at + 4 + l));
			at += 4 + l;
			if (m & 0x80000000u)
				break;
		}
		in_.erase(in_.begin(), in_.begin() + long(at));
		pending_--;
		return true;
	}
	int fd_;
	Bytes out_, in_;
	size_t sent_ = 0;
	unsigned pending_ = 0;
};

Bytes tcp_call(const std::string &hp, const Bytes &rpc)
{
	Tcp t(hp);
	Bytes r;
	t.send(rpc);
	t.recv(&r);
	return r;
}

/* ------------------------------------------------------------------ RDMA */

struct Stats {
	uint64_t ops = 0, errors = 0, zero = 0, viol = 0;
	uint32_t min_credit = UINT32_MAX, max_credit = 0;
	std::string first_err;
};

class Client
{
      public:
	virtual ~Client() = default;
	virtual void post(const Op &op, uint32_t xid) = 0;
	/* Completes the oldest call; fills @rpc with the RPC Reply. */
	virtual void complete(Bytes *rpc, Stats *st) = 0;
	virtual unsigned room() = 0;
};

class TcpClient : public Client
{
      public:
	explicit TcpClient(const std::string &hp) : t_(hp)
	{
	}
	void post(const Op &op, uint32_t) override
	{
		t_.send(op.rpc);
	}
	void complete(Bytes *rpc, Stats *) override
	{
		t_.recv(rpc);
	}
	unsigned room() override
	{
		return 1u << 30;
	}

      private:
	Tcp t_;
};

class RdmaClient : public Client
{
      public:
	explicit RdmaClient(const std::string &addr, std::string *why = nullptr)
	{
		rrtest::RequesterOptions o;
		o.addr = addr;
		std::string err;
		r_ = rrtest::Requester::connect(o, &err);
		if (!r_ && why)
			*why = err;
		else if (!r_)
			die("rdma connect " + addr + ": " + err);
	}
	bool ok() const
	{
		return r_ != nullptr;
	}
	void post(const Op &op, uint32_t) override
	{
		rrtest::CallSpec spec;
		if (op.read_count)
			spec.writes.push_back(rrtest::WriteChunkSpec{{op.read_count}, false});
		if (op.has_item && op.rpc.size() + 64 > r_->inline_send()) {
			spec.mode = rrtest::CallSpec::READ;
			spec.reads.push_back({size_t(op.item.position), op.item.length});
		}
		int64_t x = r_->post(op.rpc, spec);
		if (x < 0)
			die("rdma post: " + std::to_string(x) + " " + r_->last_error());
		q_.push_back(uint32_t(x));
	}
	void complete(Bytes *rpc, Stats *st) override
	{
		rrtest::Reply rep;
		uint32_t xid = q_.front();
		q_.pop_front();
		if (!r_->wait(xid, &rep, 10000))
			die("rdma: no reply in 10 s: " + r_->last_error());
		if (rep.credits == 0)
			st->zero++;
		st->min_credit = std::min(st->min_credit, rep.credits);
		st->max_credit = std::max(st->max_credit, rep.credits);
		if (!rep.ok()) {
			if (!st->viol)
				st->first_err = rep.describe();
			st->viol++;
		}
		*rpc = std::move(rep.rpc);
	}
	unsigned room() override
	{
		unsigned g = r_->grant();
		return g > q_.size() ? g - unsigned(q_.size()) : 0;
	}
	rrtest::Requester *req()
	{
		return r_.get();
	}
      private:
	std::unique_ptr<rrtest::Requester> r_;
	std::deque<uint32_t> q_;
};

/* ------------------------------------------------------------------ setup */

Bytes mount_root(const std::string &hp, const std::string &path)
{
	Xdr x;
	call_header(x, 0x4d4e5400, MOUNT_PROG, 3, MOUNTPROC3_MNT);
	x.string(path);
	Bytes r = tcp_call(hp, x.buf);
	Rd d{r.data(), r.size()};
	if (!reply_results(d) || d.u32() != 0)
		die("MOUNT " + path + " failed");
	Bytes fh = d.opaque();
	if (d.bad || fh.empty())
		die("MOUNT: bad reply");
	return fh;
}

/* One synchronous call through @c; returns the RPC reply. */
Bytes sync_call(Client &c, const Op &o, uint32_t xid)
{
	Stats st;
	Bytes r;
	c.post(o, xid);
	c.complete(&r, &st);
	return r;
}

Bytes create_file(Client &c, const Bytes &dir, uint32_t xid)
{
	Xdr x;
	call_header(x, xid, NFS_PROG, 3, NFSPROC3_CREATE);
	x.opaque(dir);
	x.string("bench.dat");
	x.u32(0);       /* UNCHECKED */
	x.u32(1);       /* set mode */
	x.u32(0644);
	for (int i = 0; i < 5; i++)
		x.u32(0); /* uid gid size atime mtime: don't set */
	Op o;
	o.rpc = x.buf;
	Bytes r = sync_call(c, o, xid);
	Rd d{r.data(), r.size()};
	if (!reply_results(d))
		die("CREATE: RPC failed");
	uint32_t st = d.u32();
	if (st != 0)
		die("CREATE: NFS status " + std::to_string(st));
	if (!d.u32())
		die("CREATE: no handle returned");
	Bytes fh = d.opaque();
	if (d.bad)
		die("CREATE: bad reply");
	return fh;
}

struct Opts {
	std::string rdma, tcp, mount, exp = "/mem", op = "null";
	unsigned qd = 1, conns = 1, idle = 0, storm = 0, junk = 0, io = 0;
	uint64_t count = 0, warmup = 0;
	double secs = 0, hold = 0, start_at = 0;
	bool sync = false;
};

/* --sync: tell the driver on stdout, wait for a line on stdin. */
void sync_point(const Opts &o, const char *what)
{
	if (!o.sync)
		return;
	printf("%s\n", what);
	fflush(stdout);
	char line[64];
	if (!fgets(line, sizeof(line), stdin))
		return;
}

void usage()
{
	fprintf(stderr,
		"usage: nfsbench (--rdma FABADDR | --tcp HOST:PORT) [--mount HOST:PORT]"
		" [--export PATH] --op null|getattr|read4k|write4k|read1m|write1m [--qd N] [--conns N]"
		" [--count N | --secs S] [--warmup N] [--sync]\n"
		"       nfsbench (--rdma FABADDR | --tcp HOST:PORT) [--export PATH]"
		" --op v41getattr|v41read4k|v41write4k|v41read1m|v41write1m [--count N]"
		" [--warmup N] [--sync]\n"
		"       nfsbench --rdma FABADDR --idle N --hold SECONDS [--junk K] [--io 1]\n"
		"       nfsbench --rdma FABADDR --storm N [--start-at UNIX_TIME] [--hold SECONDS]\n");
	exit(2);
}

int idle_conns(const Opts &o)
{
	std::vector<std::unique_ptr<RdmaClient>> v;
	std::vector<double> last; /* each one's NULL reply: its last activity */
	Stats st;
	unsigned refused = 0;
	std::string why;
	for (unsigned i = 0; i < o.idle; i++) {
		std::unique_ptr<RdmaClient> c(new RdmaClient(o.rdma, &why));
		if (!c->ok()) {
			refused++; /* e.g. the receive-memory budget is spent */
			continue;
		}
		v.push_back(std::move(c));
		uint32_t xid = v.back()->req()->next_xid();
		v.back()->post(build(Spec{"null", {}, 0, {}}, xid, 0), xid);
		Bytes r;
		v.back()->complete(&r, &st);
		last.push_back(nfsbench_now());
	}
	/* --io: the same I/O on every connection at once, as many clients
	 * that all wrote and read a file before going quiet. */
	uint64_t io_ops = 0;
	for (const char *op : {"write1m", "read1m"}) {
		if (!o.io)
			break;
		Spec sp{op, {}, 1u << 20, {}};
		if (sp.op == "write1m")
			sp.data.assign(sp.size, 0x5a);
		for (auto &c : v) {
			uint32_t xid = c->req()->next_xid();
			c->post(build(sp, xid, 0), xid);
		}
		for (size_t i = 0; i < v.size(); i++) {
			Bytes r;
			v[i]->complete(&r, &st);
			Rd d{r.data(), r.size()};
			if (!reply_results(d))
				die(std::string("--io: ") + op + " failed");
			io_ops++;
			last[i] = nfsbench_now();
		}
	}
	printf("{\"idle_conns\":%u,\"connected\":%zu,\"refused\":%u,\"min_credit\":%u,"
	       "\"max_credit\":%u,\"zero_grants\":%llu,\"io_ops\":%llu,\"violations\":%llu,"
	       "\"refusal\":\"%s\"}\n",
	       o.idle, v.size(), refused, st.min_credit == UINT32_MAX ? 0 : st.min_credit,
	       st.max_credit, (unsigned long long)st.zero, (unsigned long long)io_ops,
	       (unsigned long long)st.viol, refused ? why.substr(0, 80).c_str() : "");
	fflush(stdout);
	/*
	 * Keep every connection serviced while held; the junk senders post
	 * their dropped message each second. Each close is timed from that
	 * connection's NULL reply; once the server has closed them all, one
	 * more JSON line says when.
	 */
	std::vector<double> closed(v.size(), 0);
	size_t nclosed = 0, njunk = std::min<size_t>(o.junk, v.size());
	uint64_t junk_sent = 0;
	double end = nfsbench_now() + o.hold, next_junk = nfsbench_now() + 1;
	while (nfsbench_now() < end && nclosed < v.size()) {
		bool junk_now = nfsbench_now() >= next_junk;
		if (junk_now)
			next_junk += 1;
		for (size_t i = 0; i < v.size(); i++) {
			if (closed[i])
				continue;
			auto *r = v[i]->req();
			r->progress(0);
			if (r->connected() && i < njunk && junk_now) {
				if (r->post_raw({0xde, 0xad}, 0, false) >= 0)
					junk_sent++;
			}
			if (!r->connected()) {
				closed[i] = nfsbench_now() - last[i];
				nclosed++;
			}
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	if (!v.empty()) {
		double imin = 1e9, imax = 0, jmin = 1e9, jmax = 0;
		size_t open = 0;
		for (size_t i = 0; i < v.size(); i++) {
			if (!closed[i]) {
				open++;
				continue;
			}
			double &lo = i < njunk ? jmin : imin, &hi = i < njunk ? jmax : imax;
			lo = std::min(lo, closed[i]);
			hi = std::max(hi, closed[i]);
		}
		printf("{\"still_open\":%zu,\"idle_closed_min_s\":%.1f,\"idle_closed_max_s\":%.1f,"
		       "\"junk\":%zu,\"junk_sent\":%llu,\"junk_closed_min_s\":%.1f,"
		       "\"junk_closed_max_s\":%.1f}\n",
		       open, imax ? imin : 0, imax, njunk, (unsigned long long)junk_sent,
		       jmax ? jmin : 0, jmax);
		fflush(stdout);
	}
	return 0;
}

double wall_now()
{
	timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return double(ts.tv_sec) + ts.tv_nsec / 1e9;
}

/*
 * --storm N: a reconnect storm's share of one client host (tests/support/
 * rr_storm.h): N connection requests at once from this process's source
 * address (RPCRDMA_SOFT_SOURCE_ADDR), at --start-at (wall clock, so that
 * several processes start together), a NULL call on each as soon as it is
 * up. One JSON line; times are wall-clock seconds, comparable across
 * processes. Then the connections are held (serviced) for --hold seconds.
 */
int storm(const Opts &o)
{
	fab_fabric *fab = nullptr;
	if (fab_open(nullptr, &fab))
		die(std::string("fab_open: ") + fab_last_error());
	rrtest::StormOptions so;
	so.addr = o.rdma;
	so.conns = o.storm;
	const char *src = getenv("RPCRDMA_SOFT_SOURCE_ADDR");
	if (src && *src)
		so.sources.push_back(src);
	so.call = [](uint32_t xid) { return build(Spec{"null", {}, 0, {}}, xid, 0).rpc; };
	/* a 2-core machine takes a minute for 9,000 without SRQ: time to report, not a bound */
	so.timeout_ms = 300000;
	while (o.start_at > 0 && wall_now() < o.start_at)
		std::this_thread::sleep_for(std::chrono::microseconds(200));
	/* steady to wall clock, once */
	double off = wall_now() - rrtest::storm_now();
	rrtest::StormResult r;
	if (rrtest::storm_run(so, fab, &r))
		die("storm: bad options");
	uint32_t gmin = UINT32_MAX, gmax = 0;
	unsigned viol = 0;
	for (const auto &c : r.conns) {
		if (!c.t_reply)
			continue;
		gmin = std::min(gmin, c.reply.credits);
		gmax = std::max(gmax, c.reply.credits);
		viol += !c.reply.ok() || c.reply.proc == rrtest::RDMA_ERROR;
	}
	std::string err = r.first_error.substr(0, 80);
	for (auto &ch : err)
		if (ch == '"' || ch == '\\')
			ch = '\'';
	printf("{\"storm\":%u,\"up\":%u,\"refused\":%u,\"failed\":%u,\"pending\":%u,"
	       "\"replied\":%u,\"bad_replies\":%u,\"t_first_req\":%.6f,\"t_last_req\":%.6f,"
	       "\"t_last_reply\":%.6f,\"max_handshake_up\":%.6f,\"max_handshake_refused\":%.6f,"
	       "\"grant_min\":%u,\"grant_max\":%u,\"error\":\"%s\"}\n",
	       o.storm, r.up, r.refused, r.failed, r.pending, r.replied, viol, r.t_first_req + off,
	       r.t_last_req + off, r.t_last_reply ? r.t_last_reply + off : 0.0, r.max_handshake_up,
	       r.max_handshake_refused, gmin == UINT32_MAX ? 0 : gmin, gmax, err.c_str());
	fflush(stdout);
	double end = nfsbench_now() + o.hold;
	while (nfsbench_now() < end) {
		for (auto &c : r.conns)
			if (c.r && c.state == rrtest::StormState::UP)
				c.r->progress(0);
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	r.conns.clear();
	fab_close(fab);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	Opts o;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&]() -> std::string {
			if (i + 1 >= argc)
				usage();
			return argv[++i];
		};
		if (a == "--rdma")
			o.rdma = val();
		else if (a == "--tcp")
			o.tcp = val();
		else if (a == "--mount")
			o.mount = val();
		else if (a == "--export")
			o.exp = val();
		else if (a == "--op")
			o.op = val();
		else if (a == "--qd")
			o.qd = unsigned(std::stoul(val()));
		else if (a == "--conns")
			o.conns = unsigned(std::stoul(val()));
		else if (a == "--count")
			o.count = std::stoull(val());
		else if (a == "--secs")
			o.secs = std::stod(val());
		else if (a == "--warmup")
			o.warmup = std::stoull(val());
		else if (a == "--idle")
			o.idle = unsigned(std::stoul(val()));
		else if (a == "--io")
			o.io = unsigned(std::stoul(val()));
		else if (a == "--hold")
			o.hold = std::stod(val());
		else if (a == "--storm")
			o.storm = unsigned(std::stoul(val()));
		else if (a == "--start-at")
			o.start_at = std::stod(val());
		else if (a == "--junk")
			o.junk = unsigned(std::stoul(val()));
		else if (a == "--sync")
			o.sync = true;
		else
			usage();
	}
	if (o.rdma.empty() == o.tcp.empty() || o.qd < 1 || o.conns < 1 ||
	    (o.conns > 1 && o.rdma.empty()))
		usage();
	if (o.idle)
		return idle_conns(o);
	if (o.storm)
		return storm(o);
	if (!o.count && o.secs <= 0)
		o.count = 1000;

	std::unique_ptr<Client> c;
	if (!o.rdma.empty())
		c.reset(new RdmaClient(o.rdma));
	else
		c.reset(new TcpClient(o.tcp));
	uint32_t xid = 0x20000000u ^ uint32_t(getpid() << 8);
	auto next = [&]() {
		if (!o.rdma.empty())
			return static_cast<RdmaClient *>(c.get())->req()->next_xid();
		return xid++;
	};

	if (o.op.rfind("v41", 0) == 0) {
		V41Run r;
		if (o.qd != 1 || o.secs > 0)
			die("v4.1 ops run --count calls at queue depth 1 (one session slot)");
		r.rdma = o.rdma;
		r.tcp = o.tcp;
		r.exp = o.exp;
		r.op = o.op.substr(3);
		if (r.op != "getattr" && r.op != "read4k" && r.op != "write4k" &&
		    r.op != "read1m" && r.op != "write1m")
			usage();
		r.count = o.count;
		r.warmup = o.warmup;
		r.sync = [&o](const char *what) { sync_point(o, what); };
		return nfsbench_v41(r);
	}

	Spec s;
	s.op = o.op;
	if (o.op == "read4k" || o.op == "write4k")
		s.size = 4096;
	else if (o.op == "read1m" || o.op == "write1m")
		s.size = 1u << 20;
	else if (o.op != "null" && o.op != "getattr")
		usage();
	if (o.op != "null") {
		if (o.mount.empty())
			die("--op " + o.op + " needs --mount");
		Bytes root = mount_root(o.mount, o.exp);
		s.fh = create_file(*c, root, next());
		/* Fill the first MiB so READs return data. */
		Spec w{"write1m", s.fh, 1u << 20, nfsxdr::pattern(1u << 20, 7)};
		uint32_t x = next();
		Bytes r = sync_call(*c, build(w, x, 0), x);
		Rd d{r.data(), r.size()};
		if (!reply_results(d) || d.u32() != 0)
			die("WRITE (fill) failed");
	}
	if (s.size && o.op[0] == 'w')
		s.data = nfsxdr::pattern(s.size, 1);

	/* --conns: the others, each with its own requester and XIDs. */
	std::vector<std::unique_ptr<RdmaClient>> more_conns;
	std::vector<Client *> all{c.get()};
	for (unsigned i = 1; i < o.conns; i++) {
		more_conns.emplace_back(new RdmaClient(o.rdma));
		all.push_back(more_conns.back().get());
	}

	Stats st;
	uint64_t seq = 0, done = 0, bytes = 0;
	auto issue_on = [&](size_t ci) {
		uint32_t x = ci ? static_cast<RdmaClient *>(all[ci])->req()->next_xid() : next();
		Op op = build(s, x, seq++);
		all[ci]->post(op, x);
	};
	auto reap_on = [&](size_t ci) {
		Bytes r;
		all[ci]->complete(&r, &st);
		Rd d{r.data(), r.size()};
		if (!reply_results(d) || (o.op != "null" && d.u32() != 0)) {
			if (!st.errors)
				st.first_err = "RPC or NFS error in reply";
			st.errors++;
		}
		done++;
	};
	std::vector<unsigned> inflight(all.size(), 0);
	/* Warm-up: run @warmup ops at the same depth first (registration caches,
	 * pools, grants), not timed; on every connection. */
	for (size_t ci = 0; ci < all.size(); ci++) {
		for (uint64_t i = 0; i < o.warmup; i++) {
			issue_on(ci);
			reap_on(ci);
		}
	}
	uint64_t warm = seq;
	done = 0;
	sync_point(o, "WARM");
	double t0 = nfsbench_now(), end = o.secs > 0 ? t0 + o.secs : 0;
	uint64_t target = o.count;
	for (;;) {
		bool more = end ? nfsbench_now() < end : seq - warm < target;
		unsigned busy = 0;

		for (size_t ci = 0; ci < all.size(); ci++) {
			while (more && inflight[ci] < o.qd && all[ci]->room() > 0) {
				issue_on(ci);
				inflight[ci]++;
				more = end ? true : seq - warm < target;
			}
		}
		for (size_t ci = 0; ci < all.size(); ci++) {
			if (!inflight[ci])
				continue;
			reap_on(ci);
			inflight[ci]--;
			bytes += s.size;
			busy++;
		}
		if (!busy)
			break;
	}
	double dt = nfsbench_now() - t0;
	printf("{\"transport\":\"%s\",\"op\":\"%s\",\"qd\":%u,\"conns\":%u,\"ops\":%llu,\"secs\":%.4f,"
	       "\"ops_per_s\":%.1f,\"MBps\":%.2f,\"errors\":%llu,\"min_credit\":%u,"
	       "\"max_credit\":%u,\"zero_grants\":%llu,\"violations\":%llu,\"first_err\":\"%s\"}\n",
	       o.rdma.empty() ? "tcp" : "rdma", o.op.c_str(), o.qd, o.conns, (unsigned long long)done, dt,
	       done / dt, bytes / dt / 1e6, (unsigned long long)st.errors,
	       st.min_credit == UINT32_MAX ? 0 : st.min_credit, st.max_credit,
	       (unsigned long long)st.zero, (unsigned long long)st.viol, st.first_err.c_str());
	fflush(stdout);
	sync_point(o, "END");
	return st.errors || st.zero || st.viol ? 1 : 0;
}
