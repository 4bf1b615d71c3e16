// SPDX-License-Identifier: MIT
/*
 * nfs_client.cc - transports, the strict reply reader, checksums and the
 * stats reader of the test NFS client (see nfs_client.h). The NFS
 * procedures are in nfs3_client.cc and nfs4_client.cc.
 */
#include "support/nfs_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace nfsc
{

static uint32_t get32(const uint8_t *p)
{
	return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

static size_t round4(size_t n)
{
	return (n + 3) & ~size_t(3);
}

/* ---------------- TCP with record marking (RFC 5531 section 11) ---------------- */

std::unique_ptr<TcpTransport> TcpTransport::connect(const std::string &host, uint16_t port,
						    std::string *err, int timeout_ms)
{
	std::unique_ptr<TcpTransport> t(new TcpTransport());
	t->timeout_ms_ = timeout_ms;
	t->fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t->fd_ < 0) {
		*err = std::string("socket: ") + strerror(errno);
		return nullptr;
	}
	sockaddr_in sin = {};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	if (inet_pton(AF_INET, host.c_str(), &sin.sin_addr) != 1) {
		*err = "bad IPv4 address " + host;
		return nullptr;
	}
	if (::connect(t->fd_, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)) < 0) {
		*err = "connect " + host + ":" + std::to_string(port) + ": " + strerror(errno);
		return nullptr;
	}
	int one = 1;
	setsockopt(t->fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return t;
}

TcpTransport::~TcpTransport()
{
	if (fd_ >= 0)
		close(fd_);
}

static bool read_full(int fd, uint8_t *p, size_t n, int timeout_ms, std::string *err)
{
	auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
	while (n) {
		int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(
				   deadline - std::chrono::steady_clock::now())
				   .count());
		if (left <= 0) {
			*err = "tcp: reply timed out";
			return false;
		}
		pollfd pfd = {fd, POLLIN, 0};
		int rc = poll(&pfd, 1, left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			continue;
		ssize_t got = ::read(fd, p, n);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0) {
			*err = got == 0 ? "tcp: connection closed by server"
					: std::string("tcp: read: ") + strerror(errno);
			return false;
		}
		p += got;
		n -= size_t(got);
	}
	return true;
}

bool TcpTransport::call(const Bytes &rpc, const CallOpts &, TransportReply *r, std::string *err)
{
	*r = TransportReply();
	if (fd_ < 0) {
		*err = "tcp: not connected";
		return false;
	}
	if (rpc.size() < 4 || rpc.size() > 0x7fffffff) {
		*err = "tcp: bad call size";
		return false;
	}
	/* one record, one fragment: last-fragment bit + length */
	Bytes rec(4);
	uint32_t mark = 0x80000000u | uint32_t(rpc.size());
	rec[0] = uint8_t(mark >> 24);
	rec[1] = uint8_t(mark >> 16);
	rec[2] = uint8_t(mark >> 8);
	rec[3] = uint8_t(mark);
	rec.insert(rec.end(), rpc.begin(), rpc.end());
	size_t off = 0;
	while (off < rec.size()) {
		ssize_t n = ::send(fd_, rec.data() + off, rec.size() - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*err = std::string("tcp: send: ") + strerror(errno);
			return false;
		}
		off += size_t(n);
	}
	uint32_t xid = get32(rpc.data());
	for (;;) {
		Bytes msg;
		for (;;) {
			uint8_t h[4];
			if (!read_full(fd_, h, 4, timeout_ms_, err))
				return false;
			uint32_t m = get32(h);
			uint32_t len = m & 0x7fffffff;
			if (msg.size() + len > (64u << 20)) {
				*err = "tcp: reply record over 64 MiB";
				return false;
			}
			size_t at = msg.size();
			msg.resize(at + len);
			if (len && !read_full(fd_, msg.data() + at, len, timeout_ms_, err))
				return false;
			if (m & 0x80000000u)
				break;
		}
		if (msg.size() >= 4 && get32(msg.data()) == xid) {
			r->rpc = std::move(msg);
			r->shape = "tcp";
			return true;
		}
		/* a reply to an earlier, abandoned call: skip it */
	}
}

/* ---------------- RPC-over-RDMA ---------------- */

std::unique_ptr<RdmaTransport> RdmaTransport::connect(const std::string &addr, std::string *err)
{
	return connect(addr, rrtest::RequesterOptions(), err);
}

std::unique_ptr<RdmaTransport> RdmaTransport::connect(const std::string &addr,
						      rrtest::RequesterOptions o, std::string *err)
{
	std::unique_ptr<RdmaTransport> t(new RdmaTransport());
	if (o.addr.empty())
		o.addr = addr;
	if (!o.provider) {
		o.provider = "soft";
		if (const char *p = getenv("RPCRDMA_FABRIC"))
			o.provider = p;
	}
	t->req_ = rrtest::Requester::connect(o, err);
	if (!t->req_)
		return nullptr;
	return t;
}

/* @n bytes in @k segments (the last takes the remainder); 4-byte aligned but the last */
static std::vector<uint32_t> split(uint32_t n, uint32_t k)
{
	std::vector<uint32_t> v;
	if (k <= 1 || n < 4 * k)
		return {n};
	uint32_t each = (n / k) & ~3u;
	for (uint32_t i = 0; i + 1 < k; i++)
		v.push_back(each);
	v.push_back(n - each * (k - 1));
	return v;
}

static const char *mode_name(rrtest::CallSpec::Mode m)
{
	switch (m) {
	case rrtest::CallSpec::INLINE:
		return "inline";
	case rrtest::CallSpec::READ:
		return "read-chunk";
	default:
		return "long-call";
	}
}

bool RdmaTransport::call(const Bytes &rpc, const CallOpts &o, TransportReply *r, std::string *err)
{
	*r = TransportReply();
	int64_t xid = post(rpc, o, err);
	return xid >= 0 && collect(uint32_t(xid), r, err);
}

int64_t RdmaTransport::post(const Bytes &rpc, const CallOpts &o, std::string *err)
{
	rrtest::Requester &q = *req_;
	rrtest::CallSpec spec;
	size_t inl = q.inline_recv();

	/* Reply resources as the Linux client offers them (RFC 8166 section 3.5,
	 * docs/linux-client-wire.md). */
	size_t payload_sum = 0;
	for (uint32_t p : o.payloads)
		payload_sum += round4(p);
	bool ddp = false;
	if (!o.payloads.empty() && policy.reply_ddp != Ddp::NEVER)
		ddp = policy.reply_ddp == Ddp::ALWAYS || o.reply_max + payload_sum + 64 > inl;
	if (ddp)
		for (uint32_t p : o.payloads)
			spec.writes.push_back({split(p, policy.write_segs), policy.pad && (p & 3)});
	size_t inline_reply = o.reply_max + (ddp ? 0 : payload_sum);
	size_t reply_hdr = 32 + 24 * spec.writes.size();
	if (policy.reply_chunk > 0)
		spec.reply = split(uint32_t(policy.reply_chunk), policy.reply_segs);
	else if (policy.reply_chunk < 0 && inline_reply + reply_hdr > inl)
		spec.reply = split(uint32_t(round4(inline_reply)), policy.reply_segs);
	spec.read_segs = policy.read_segs;

	/* The Call: inline, Read chunk at the data item, or Long Call. */
	int64_t rc;
	if (policy.long_call) {
		spec.mode = rrtest::CallSpec::LONG;
		if (policy.long_call_items)
			spec.reads = o.items;
		rc = q.post(rpc, spec);
	} else if (!o.items.empty() && policy.call_ddp == Ddp::ALWAYS) {
		spec.mode = rrtest::CallSpec::READ;
		spec.reads = o.items;
		rc = q.post(rpc, spec);
	} else {
		spec.mode = rrtest::CallSpec::INLINE;
		rc = q.post(rpc, spec);
		if (rc == -EMSGSIZE && !o.items.empty() && policy.call_ddp != Ddp::NEVER) {
			spec.mode = rrtest::CallSpec::READ;
			spec.reads = o.items;
			rc = q.post(rpc, spec);
		}
		if (rc == -EMSGSIZE) {
			spec.mode = rrtest::CallSpec::LONG;
			spec.reads.clear();
			rc = q.post(rpc, spec);
		}
	}
	last_spec = spec;
	if (rc < 0) {
		*err = std::string("rdma: post (") + mode_name(spec.mode) +
		       "): " + strerror(int(-rc)) + " " + q.last_error();
		return rc;
	}
	modes_[uint32_t(rc)] = spec.mode;
	return rc;
}

bool RdmaTransport::collect(uint32_t xid, TransportReply *r, std::string *err)
{
	rrtest::Requester &q = *req_;
	*r = TransportReply();
	rrtest::CallSpec::Mode mode = modes_[xid];
	modes_.erase(xid);
	rrtest::Reply rep;
	if (!q.wait(xid, &rep, policy.timeout_ms)) {
		*err = std::string("rdma: no reply (") +
		       (q.connected() ? "timeout" : "disconnected") + ") " + q.last_error();
		return false;
	}
	last_reply = rep;
	if (!rep.ok()) {
		*err = "rdma: reply violates RFC 8166: " + rep.describe();
		return false;
	}
	r->shape = mode_name(mode);
	if (rep.proc == rrtest::RDMA_ERROR) {
		r->rdma_error = true;
		r->rdma_err = rep.err;
		r->shape += " -> RDMA_ERROR";
		return true;
	}
	r->rpc = rep.rpc;
	r->chunks = rep.write_data;
	bool wrote = false;
	for (const auto &c : r->chunks)
		wrote |= !c.empty();
	r->shape += rep.proc == rrtest::RDMA_NOMSG ? " -> reply-chunk" : " -> inline";
	if (wrote)
		r->shape += "+write-chunk";
	return true;
}

/* ---------------- strict reader ---------------- */

bool Dec::fail(const std::string &why)
{
	if (ok_)
		why_ = why + " at reply offset " + std::to_string(off_);
	ok_ = false;
	return false;
}

uint32_t Dec::u32()
{
	if (!ok_)
		return 0;
	if (left() < 4) {
		fail("reply truncated (u32)");
		return 0;
	}
	uint32_t v = get32(r_.rpc.data() + off_);
	off_ += 4;
	return v;
}

uint64_t Dec::u64()
{
	uint64_t hi = u32();
	return hi << 32 | u32();
}

bool Dec::boolean()
{
	uint32_t v = u32();
	if (v > 1)
		fail("bool is " + std::to_string(v));
	return v == 1;
}

void Dec::fixed(size_t n, uint8_t *out)
{
	if (!ok_)
		return;
	if (left() < round4(n)) {
		fail("reply truncated (opaque[" + std::to_string(n) + "])");
		return;
	}
	if (out)
		memcpy(out, r_.rpc.data() + off_, n);
	for (size_t k = n; k < round4(n); k++)
		if (r_.rpc[off_ + k]) {
			fail("non-zero XDR pad");
			return;
		}
	off_ += round4(n);
}

void Dec::skip(size_t n)
{
	fixed(n, nullptr);
}

Bytes Dec::opaque(uint32_t max)
{
	uint32_t n = u32();
	if (!ok_)
		return {};
	if (n > max) {
		fail("opaque<" + std::to_string(max) + "> of " + std::to_string(n));
		return {};
	}
	Bytes b(n);
	fixed(n, b.data());
	return ok_ ? b : Bytes();
}

std::string Dec::string(uint32_t max)
{
	Bytes b = opaque(max);
	return std::string(b.begin(), b.end());
}

Bytes Dec::payload(uint32_t max)
{
	uint32_t n = u32();
	if (!ok_)
		return {};
	if (n > max) {
		fail("payload of " + std::to_string(n) + " bytes, at most " + std::to_string(max));
		return {};
	}
	size_t c = chunk_;
	if (c < r_.chunks.size())
		chunk_++;
	if (c < r_.chunks.size() && !r_.chunks[c].empty()) {
		/* RFC 8166 section 3.4.6: the data went by RDMA Write; inline goes on */
		if (r_.chunks[c].size() != n) {
			fail("payload length " + std::to_string(n) + " but Write chunk " +
			     std::to_string(c) + " holds " + std::to_string(r_.chunks[c].size()));
			return {};
		}
		return r_.chunks[c];
	}
	Bytes b(n);
	fixed(n, b.data());
	return ok_ ? b : Bytes();
}

bool Dec::end()
{
	if (!ok_)
		return false;
	if (left())
		return fail(std::to_string(left()) + " unexpected trailing bytes");
	for (size_t c = chunk_; c < r_.chunks.size(); c++)
		if (!r_.chunks[c].empty())
			return fail("Write chunk " + std::to_string(c) + " filled but unused");
	return true;
}

bool rpc_reply_ok(Dec &d, uint32_t xid, std::string *why)
{
	uint32_t rxid = d.u32();
	uint32_t mtype = d.u32();
	uint32_t stat = d.u32();
	if (!d.ok()) {
		*why = d.why();
		return false;
	}
	if (rxid != xid || mtype != 1) {
		*why = "not the reply to xid " + std::to_string(xid);
		return false;
	}
	if (stat == 1) { /* MSG_DENIED */
		uint32_t rs = d.u32();
		*why = rs == 0 ? "RPC_MISMATCH" : "AUTH_ERROR " + std::to_string(d.u32());
		return false;
	}
	if (stat != 0) {
		*why = "bad reply_stat " + std::to_string(stat);
		return false;
	}
	d.u32();       /* verf flavor */
	d.opaque(400); /* verf body (RFC 5531 section 8.2) */
	uint32_t acc = d.u32();
	if (!d.ok()) {
		*why = d.why();
		return false;
	}
	static const char *names[] = {"SUCCESS",      "PROG_UNAVAIL", "PROG_MISMATCH",
				      "PROC_UNAVAIL", "GARBAGE_ARGS", "SYSTEM_ERR"};
	if (acc != 0) {
		*why = std::string("RPC accept_stat ") + (acc < 6 ? names[acc] : "?");
		return false;
	}
	return true;
}

/* ---------------- Client plumbing ---------------- */

void Client::header(nfsxdr::Xdr &x, uint32_t *xid, uint32_t prog, uint32_t vers, uint32_t proc)
{
	*xid = t_.next_xid();
	nfsxdr::rpc_call_header_sys(x, *xid, prog, vers, proc, uid, gid, machine);
}

int Client::rdma_error(const TransportReply &r)
{
	err_ = r.rdma_err == rrtest::ERR_CHUNK	? "RDMA_ERROR ERR_CHUNK"
	       : r.rdma_err == rrtest::ERR_VERS ? "RDMA_ERROR ERR_VERS"
						: "RDMA_ERROR ?";
	return E_RDMA_ERROR;
}

int Client::rpc(nfsxdr::Xdr &x, const CallOpts &o, std::unique_ptr<Dec> *d)
{
	std::string e;
	last_ = TransportReply();
	err_.clear();
	if (!t_.call(x.buf, o, &last_, &e))
		return fail(e);
	if (last_.rdma_error)
		return rdma_error(last_);
	d->reset(new Dec(last_));
	if (!rpc_reply_ok(**d, get32(x.buf.data()), &e))
		return fail(e);
	return 0;
}

/* ---------------- checksums and data ---------------- */

uint32_t crc32c(const uint8_t *p, size_t n, uint32_t crc)
{
	static uint32_t table[256];
	static bool init = false;
	if (!init) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
			table[i] = c;
		}
		init = true;
	}
	crc = ~crc;
	while (n--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

Bytes test_data(size_t n, uint32_t seed)
{
	Bytes b(n);
	uint64_t s = 0x9e3779b97f4a7c15ull ^ seed;
	for (size_t i = 0; i < n; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		b[i] = uint8_t(s);
	}
	return b;
}

/* ---------------- stats socket JSON ---------------- */

namespace
{
struct JP {
	const std::string &s;
	size_t i = 0;
	std::string err;
	void ws()
	{
		while (i < s.size() && strchr(" \t\r\n", s[i]))
			i++;
	}
	bool value(Json *v, int depth)
	{
		if (depth > 32)
			return bad("too deep");
		ws();
		if (i >= s.size())
			return bad("unexpected end");
		char c = s[i];
		if (c == '{') {
			v->kind = Json::OBJ;
			i++;
			ws();
			if (i < s.size() && s[i] == '}') {
				i++;
				return true;
			}
			for (;;) {
				ws();
				std::string k;
				if (!str(&k))
					return false;
				ws();
				if (i >= s.size() || s[i] != ':')
					return bad("':' expected");
				i++;
				Json m;
				if (!value(&m, depth + 1))
					return false;
				v->obj.emplace_back(k, std::move(m));
				ws();
				if (i < s.size() && s[i] == ',') {
					i++;
					continue;
				}
				if (i < s.size() && s[i] == '}') {
					i++;
					return true;
				}
				return bad("',' or '}' expected");
			}
		}
		if (c == '[') {
			v->kind = Json::ARR;
			i++;
			ws();
			if (i < s.size() && s[i] == ']') {
				i++;
				return true;
			}
			for (;;) {
				Json m;
				if (!value(&m, depth + 1))
					return false;
				v->arr.push_back(std::move(m));
				ws();
				if (i < s.size() && s[i] == ',') {
					i++;
					continue;
				}
				if (i < s.size() && s[i] == ']') {
					i++;
					return true;
				}
				return bad("',' or ']' expected");
			}
		}
		if (c == '"') {
			v->kind = Json::STR;
			return str(&v->str);
		}
		if (!s.compare(i, 4, "true") || !s.compare(i, 5, "false")) {
			v->kind = Json::BOOL;
			v->b = s[i] == 't';
			i += v->b ? 4 : 5;
			return true;
		}
		if (!s.compare(i, 4, "null")) {
			i += 4;
			return true;
		}
		char *end = nullptr;
		v->num = strtod(s.c_str() + i, &end);
		if (end == s.c_str() + i)
			return bad("value expected");
		v->kind = Json::NUM;
		i = size_t(end - s.c_str());
		return true;
	}
	bool str(std::string *out)
	{
		if (i >= s.size() || s[i] != '"')
			return bad("string expected");
		i++;
		while (i < s.size() && s[i] != '"') {
			if (s[i] == '\\' && i + 1 < s.size()) {
				i++;
				char e = s[i];
				if (e == 'u') {
					i += 4; /* not needed by the stats socket: keep a '?' */
					out->push_back('?');
				} else {
					out->push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
				}
				i++;
				continue;
			}
			out->push_back(s[i++]);
		}
		if (i >= s.size())
			return bad("unterminated string");
		i++;
		return true;
	}
	bool bad(const char *why)
	{
		err = std::string(why) + " at " + std::to_string(i);
		return false;
	}
};
} // namespace

const Json *Json::get(const std::string &k) const
{
	for (const auto &m : obj)
		if (m.first == k)
			return &m.second;
	return nullptr;
}

double Json::at(const std::string &path, double dflt) const
{
	const Json *v = this;
	size_t a = 0;
	while (v && a <= path.size()) {
		size_t b = path.find('.', a);
		if (b == std::string::npos)
			b = path.size();
		v = v->get(path.substr(a, b - a));
		a = b + 1;
	}
	return v && v->kind == NUM ? v->num : dflt;
}

bool json_parse(const std::string &text, Json *out, std::string *err)
{
	JP p{text, 0, std::string()};
	*out = Json();
	if (!p.value(out, 0)) {
		*err = "json: " + p.err;
		return false;
	}
	p.ws();
	if (p.i != text.size()) {
		*err = "json: trailing bytes";
		return false;
	}
	return true;
}

bool read_stats(const std::string &path, Json *out, std::string *raw, std::string *err)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*err = std::string("socket: ") + strerror(errno);
		return false;
	}
	sockaddr_un sun = {};
	sun.sun_family = AF_UNIX;
	if (path.size() >= sizeof(sun.sun_path)) {
		close(fd);
		*err = "stats socket path too long";
		return false;
	}
	memcpy(sun.sun_path, path.c_str(), path.size());
	if (::connect(fd, reinterpret_cast<sockaddr *>(&sun), sizeof(sun)) < 0) {
		*err = "connect " + path + ": " + strerror(errno);
		close(fd);
		return false;
	}
	std::string text;
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
	for (;;) {
		if (std::chrono::steady_clock::now() > deadline) {
			*err = "stats socket: no EOF within 5 s";
			close(fd);
			return false;
		}
		pollfd pfd = {fd, POLLIN, 0};
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		char buf[4096];
		ssize_t n = ::read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*err = std::string("stats socket read: ") + strerror(errno);
			close(fd);
			return false;
		}
		if (n == 0)
			break;
		text.append(buf, size_t(n));
		if (text.size() > (16u << 20)) {
			*err = "stats socket: over 16 MiB";
			close(fd);
			return false;
		}
	}
	close(fd);
	if (raw)
		*raw = text;
	return json_parse(text, out, err);
}

} // namespace nfsc
