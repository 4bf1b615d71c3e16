// SPDX-License-Identifier: MIT
/*
 * Soak: several connections, each keeping its full credit grant in flight,
 * random call/reply shapes and sizes, for a bounded time (RR_SOAK_SECONDS,
 * default 3). Every reply is checked by the requester and every payload byte
 * compared: the test fails on a single corrupted byte, protocol violation,
 * lost reply or zero grant.
 */
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "fabric/fab_soft.h"
#include "transport/rr_transport_fixture.h"

using namespace rrtest;

namespace {

struct Outcome {
	std::atomic<uint64_t> calls{0}, bytes{0}, corrupt{0}, violations{0}, lost{0}, errors{0};
	std::mutex lock;
	std::string first_failure;

	void fail(const std::string &why)
	{
		std::lock_guard<std::mutex> g(lock);
		if (first_failure.empty())
			first_failure = why;
	}
};

/* One call in flight and what its reply must hold. */
struct Expectation {
	enum Kind { OPAQUE, SINK } kind;
	std::vector<uint8_t> data;	/* OPAQUE: the result; SINK: the argument */
};

/* A random call: shape, sizes, chunks. */
static std::vector<uint8_t> random_call(std::mt19937 &rng, uint32_t xid, uint32_t inline_max,
					CallSpec *spec, Expectation *e)
{
	*spec = CallSpec();
	auto size = [&](uint32_t max) {
		/* mostly small, sometimes large */
		switch (rng() % 4) {
		case 0:
			return uint32_t(rng() % 64);
		case 1:
			return uint32_t(rng() % 2048);
		case 2:
			return uint32_t(rng() % 32768);
		default:
			return uint32_t(rng() % max);
		}
	};
	auto write_chunk = [&](uint32_t len) {
		WriteChunkSpec w;
		uint32_t nseg = 1 + rng() % 8;
		uint32_t per = (len + nseg - 1) / nseg;
		if (per == 0)
			per = 1;
		w.segs.assign(nseg, per);
		w.pad = (len & 3) && (rng() % 2);
		return w;
	};
	switch (rng() % 6) {
	case 0: { /* ECHO inline (both ways when small) */
		auto d = random_bytes(rng, rng() % (inline_max / 2));
		TestCall c = call_data(xid, RRT_PROC_ECHO, d, rng() % 2);
		*e = {Expectation::OPAQUE, d};
		if (rng() % 2)
			spec->reply = {inline_max};
		return c.rpc;
	}
	case 1: { /* ECHO: Read chunk in, Write chunk out */
		auto d = random_bytes(rng, 1 + size(256 * 1024));
		TestCall c = call_data(xid, RRT_PROC_ECHO, d);
		*spec = read_spec(c, 1 + rng() % 4);
		spec->writes.push_back(write_chunk(uint32_t(d.size())));
		*e = {Expectation::OPAQUE, d};
		return c.rpc;
	}
	case 2: { /* SINK via Long Call, sometimes with a data chunk */
		auto d = random_bytes(rng, size(128 * 1024));
		TestCall c = call_data(xid, RRT_PROC_SINK, d, rng() % 2);
		spec->mode = CallSpec::LONG;
		spec->pz_segs = 1 + rng() % 3;
		if (!d.empty() && rng() % 2) {
			spec->reads.push_back({c.data_pos, c.data_len});
			spec->read_segs = 1 + rng() % 3;
		}
		*e = {Expectation::SINK, d};
		return c.rpc;
	}
	case 3: { /* SOURCE into a Write chunk */
		uint32_t len = size(512 * 1024);
		uint32_t seed = rng();
		spec->writes.push_back(write_chunk(len));
		*e = {Expectation::OPAQUE, pattern(seed, len)};
		return call_source(xid, len, seed).rpc;
	}
	case 4: { /* SOURCE as a Long Reply */
		uint32_t len = inline_max + rng() % (64 * 1024);
		uint32_t seed = rng();
		uint32_t nseg = 1 + rng() % 4;
		spec->reply.assign(nseg, (len + 64) / nseg + 64);
		*e = {Expectation::OPAQUE, pattern(seed, len)};
		return call_source(xid, len, seed).rpc;
	}
	default: { /* SINK with a Read chunk */
		auto d = random_bytes(rng, 1 + size(256 * 1024));
		TestCall c = call_data(xid, RRT_PROC_SINK, d);
		*spec = read_spec(c, 1 + rng() % 4);
		*e = {Expectation::SINK, d};
		return c.rpc;
	}
	}
}

static void check(const Reply &r, uint32_t xid, const Expectation &e, Outcome *o)
{
	if (!r.ok()) {
		o->violations++;
		o->fail(r.describe());
		return;
	}
	if (e.kind == Expectation::OPAQUE) {
		auto a = opaque_result(r, xid, e.data);
		if (!a) {
			o->corrupt++;
			o->fail(a.message());
		}
		o->bytes += e.data.size();
		return;
	}
	size_t off;
	auto a = rpc_success(r, xid, &off);
	if (!a) {
		o->errors++;
		o->fail(a.message());
		return;
	}
	XdrReader x(r.rpc.data() + off, r.rpc.size() - off);
	if (x.u32() != e.data.size() || x.u32() != fnv(e.data) || x.bad) {
		o->corrupt++;
		o->fail("SINK hash mismatch");
	}
	o->bytes += e.data.size();
}

static void drive(Requester *q, unsigned seed, std::chrono::steady_clock::time_point end,
		  Outcome *o)
{
	std::mt19937 rng(seed);
	std::map<uint32_t, Expectation> inflight;
	std::vector<uint32_t> order;
	auto reap_one = [&]() {
		uint32_t x = order.front();
		order.erase(order.begin());
		Reply r;
		if (!q->wait(x, &r, 20000)) {
			o->lost++;
			o->fail("no reply to xid " + std::to_string(x) + ": " + q->last_error());
			inflight.erase(x);
			return false;
		}
		check(r, x, inflight[x], o);
		inflight.erase(x);
		o->calls++;
		return true;
	};
	while (std::chrono::steady_clock::now() < end) {
		/* fill the grant */
		while (q->outstanding() < q->grant()) {
			CallSpec spec;
			Expectation e;
			uint32_t xid = q->next_xid();
			auto rpc = random_call(rng, xid, q->inline_send() - 512, &spec, &e);
			int64_t rc = q->post(rpc, spec);
			if (rc == -EMSGSIZE)
				continue;	/* header plus inline part too big: skip */
			if (rc < 0) {
				o->errors++;
				o->fail("post: " + std::to_string(rc));
				return;
			}
			inflight[xid] = std::move(e);
			order.push_back(xid);
		}
		if (!reap_one())
			return;
	}
	while (!order.empty())
		if (!reap_one())
			return;
}

/* Per-connection receives, and a shared receive queue smaller than the
 * connections' grants together (their bursts wait out RNRs). */
class Soak : public TransportTest, public ::testing::WithParamInterface<bool> {
      protected:
	Soak()
	{
		sopts.args = {"--credits", "16"};
		if (GetParam())
			sopts.args.insert(sopts.args.end(), {"--srq", "1", "--srq-depth", "32"});
	}
};

INSTANTIATE_TEST_SUITE_P(Receives, Soak, ::testing::Values(false, true),
			 [](const ::testing::TestParamInfo<bool> &i) {
				 return std::string(i.param ? "SharedQueue" : "PerConnection");
			 });

TEST_P(Soak, ConnectionsTimesFullCreditsRandomShapes)
{
	const char *env = getenv("RR_SOAK_SECONDS");
	int secs = env ? atoi(env) : 3;
	const int nconn = 4;
	std::vector<Requester *> qs;
	for (int i = 0; i < nconn; i++) {
		Requester *q = connect();
		ASSERT_NE(q, nullptr);
		ASSERT_TRUE(ping(q));
		ASSERT_EQ(q->grant(), 16u);
		qs.push_back(q);
	}
	Outcome o;
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(secs);
	std::vector<std::thread> ts;
	for (int i = 0; i < nconn; i++)
		ts.emplace_back(drive, qs[i], 1000u + i, end, &o);
	for (auto &t : ts)
		t.join();
	fprintf(stderr, "soak: %d connections, %llu calls, %llu payload bytes in %d s\n", nconn,
		(unsigned long long)o.calls.load(), (unsigned long long)o.bytes.load(), secs);
	EXPECT_EQ(o.corrupt.load(), 0u) << o.first_failure;
	EXPECT_EQ(o.violations.load(), 0u) << o.first_failure;
	EXPECT_EQ(o.lost.load(), 0u) << o.first_failure;
	EXPECT_EQ(o.errors.load(), 0u) << o.first_failure;
	EXPECT_GT(o.calls.load(), 0u);
	for (auto *q : qs)
		EXPECT_TRUE(q->connected());
	auto st = srv.stats();
	EXPECT_EQ(st["conns_active"], uint64_t(nconn));
}

/*
 * While stable connections soak, others connect, start big Reads and Writes
 * and vanish (or have their link cut) mid-flight. Buffers the engine frees on
 * those teardowns must never carry a late RDMA byte into a stable
 * connection's call or reply: zero corrupted bytes there.
 */
static void churn(const std::string &addr, unsigned seed, std::chrono::steady_clock::time_point end,
		  std::atomic<uint64_t> *cycles, Outcome *o)
{
	std::mt19937 rng(seed);
	while (std::chrono::steady_clock::now() < end) {
		RequesterOptions opt;
		opt.addr = addr;
		std::string err;
		auto q = Requester::connect(opt, &err);
		if (!q) {
			o->errors++;
			o->fail("churn connect: " + err);
			return;
		}
		Reply r;
		if (!q->call(call_null(q->next_xid()).rpc, CallSpec(), &r)) {
			o->errors++;
			o->fail("churn NULL: " + q->last_error());
			return;
		}
		if (rng() % 3 == 0) {
			fab_soft_fault f = {};
			f.drop_after_bytes = 1 + rng() % 400000;
			fab_soft_fault_set(q->conn(), &f);
		}
		for (uint32_t i = 0, n = 1 + rng() % 6; i < n; i++) {
			CallSpec spec;
			Expectation e;
			auto rpc = random_call(rng, q->next_xid(), q->inline_send() - 512, &spec, &e);
			spec.force = true;
			q->post(rpc, spec);
		}
		/* replies the server will send after this connection is gone */
		for (uint32_t i = 0, n = rng() % 3; i < n; i++) {
			auto d = random_bytes(rng, 1 + rng() % 60000);
			TestCall c = call_delay(q->next_xid(), rng() % 30, d);
			CallSpec spec = read_spec(c, 1 + rng() % 2);
			spec.writes.push_back({{65536}, false});
			spec.force = true;
			q->post(c.rpc, spec);
		}
		q->progress(int(rng() % 5));
		q.reset();
		(*cycles)++;
	}
}

TEST_P(Soak, StableConnectionsUnaffectedByChurn)
{
	const char *env = getenv("RR_SOAK_SECONDS");
	int secs = env ? atoi(env) : 3;
	const int nconn = 3;
	std::vector<Requester *> qs;
	for (int i = 0; i < nconn; i++) {
		Requester *q = connect();
		ASSERT_NE(q, nullptr);
		ASSERT_TRUE(ping(q));
		qs.push_back(q);
	}
	Outcome o, co;
	std::atomic<uint64_t> cycles{0};
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(secs);
	std::vector<std::thread> ts;
	for (int i = 0; i < nconn; i++)
		ts.emplace_back(drive, qs[i], 2000u + i, end, &o);
	ts.emplace_back(churn, srv.addr(), 99u, end, &cycles, &co);
	for (auto &t : ts)
		t.join();
	fprintf(stderr, "churn soak: %llu stable calls, %llu churned connections\n",
		(unsigned long long)o.calls.load(), (unsigned long long)cycles.load());
	EXPECT_EQ(o.corrupt.load(), 0u) << o.first_failure;
	EXPECT_EQ(o.violations.load(), 0u) << o.first_failure;
	EXPECT_EQ(o.lost.load(), 0u) << o.first_failure;
	EXPECT_EQ(o.errors.load(), 0u) << o.first_failure;
	EXPECT_EQ(co.errors.load(), 0u) << co.first_failure;
	EXPECT_GT(cycles.load(), 0u);
	for (auto *q : qs)
		EXPECT_TRUE(q->connected());
	/* Every churned connection is freed, not only reported down: a call
	 * that keeps a reference would hold its connection (and the server's
	 * exit) for ever. A generous deadline: teardown is slow under load. */
	EXPECT_EQ(conns_listed_when(uint64_t(nconn), 400), uint64_t(nconn))
	    << "churned connections still held by the engine";
}

} // namespace
