// SPDX-License-Identifier: MIT
/*
 * rr_transport_fixture.h - shared pieces of the transport integration tests:
 * the test program's calls (tests/transport/rr_test_prog.h) built with the
 * independent builders, a fixture that runs rr_test_server in its own
 * process, and reply checks.
 */
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "support/rr_eventually.h"
#include "support/rr_onc.h"
#include "support/rr_device_profile.h"
#include "support/rr_requester.h"
#include "transport/rr_server_proc.h"
#include "transport/rr_test_prog.h"

namespace rrtest {

/* An RPC Call of the test program and where its opaque<> data starts. */
struct TestCall {
	std::vector<uint8_t> rpc;
	size_t data_pos = 0;	/* first data byte of the opaque<> argument */
	size_t data_len = 0;
	uint32_t xid = 0;
};

inline TestCall call_null(uint32_t xid)
{
	TestCall c;
	c.xid = xid;
	c.rpc = rpc_call_header(xid, RRT_PROG, RRT_VERS, RRT_PROC_NULL).b;
	return c;
}

inline TestCall call_hold(uint32_t xid)
{
	TestCall c;
	c.xid = xid;
	c.rpc = rpc_call_header(xid, RRT_PROG, RRT_VERS, RRT_PROC_HOLD).b;
	return c;
}

/* ECHO or SINK with @data as the opaque<> argument. */
inline TestCall call_data(uint32_t xid, uint32_t proc, const std::vector<uint8_t> &data,
			  bool auth_sys = false)
{
	TestCall c;
	c.xid = xid;
	Wire w = rpc_call_header(xid, RRT_PROG, RRT_VERS, proc, auth_sys);
	c.data_pos = w.b.size() + 4;
	c.data_len = data.size();
	w.opaque(data);
	c.rpc = w.b;
	return c;
}

/* DELAY: @data echoed @ms later from the server's worker thread. */
inline TestCall call_delay(uint32_t xid, uint32_t ms, const std::vector<uint8_t> &data)
{
	TestCall c;
	c.xid = xid;
	Wire w = rpc_call_header(xid, RRT_PROG, RRT_VERS, RRT_PROC_DELAY);
	w.u32(ms);
	c.data_pos = w.b.size() + 4;
	c.data_len = data.size();
	w.opaque(data);
	c.rpc = w.b;
	return c;
}

inline TestCall call_source(uint32_t xid, uint32_t len, uint32_t seed)
{
	TestCall c;
	c.xid = xid;
	Wire w = rpc_call_header(xid, RRT_PROG, RRT_VERS, RRT_PROC_SOURCE);
	w.u32(len).u32(seed);
	c.rpc = w.b;
	return c;
}

inline std::vector<uint8_t> pattern(uint32_t seed, size_t len)
{
	std::vector<uint8_t> v(len);
	for (size_t i = 0; i < len; i++)
		v[i] = rrt_pattern(seed, i);
	return v;
}

inline std::vector<uint8_t> random_bytes(std::mt19937 &rng, size_t len)
{
	std::vector<uint8_t> v(len);
	for (auto &b : v)
		b = uint8_t(rng());
	return v;
}

inline uint32_t fnv(const std::vector<uint8_t> &v)
{
	return rrt_fnv1a(RRT_FNV_INIT, v.data(), v.size());
}

/* Read-chunk spec moving the call's opaque data into one Read chunk. */
inline CallSpec read_spec(const TestCall &c, uint32_t segs = 1)
{
	CallSpec s;
	s.mode = CallSpec::READ;
	s.reads.push_back({c.data_pos, c.data_len});
	s.read_segs = segs;
	return s;
}

/* A checked, successful RPC reply: returns the offset of the results. */
inline ::testing::AssertionResult rpc_success(const Reply &r, uint32_t xid, size_t *results_off)
{
	if (!r.ok())
		return ::testing::AssertionFailure() << "protocol violations: " << r.describe();
	if (r.proc == RDMA_ERROR)
		return ::testing::AssertionFailure() << "RDMA_ERROR instead of a reply: "
						     << r.describe();
	RpcReply p = rpc_parse_reply(r.rpc);
	if (!p.parsed)
		return ::testing::AssertionFailure() << "RPC reply: " << p.why << " " << r.describe();
	if (p.xid != xid)
		return ::testing::AssertionFailure() << "RPC xid " << p.xid << " != " << xid;
	if (p.reply_stat != RPC_MSG_ACCEPTED || p.accept_stat != RPC_SUCCESS)
		return ::testing::AssertionFailure() << "reply_stat " << p.reply_stat
						     << " accept_stat " << p.accept_stat;
	*results_off = p.results_off;
	return ::testing::AssertionSuccess();
}

/* A SINK's reply: the length and FNV-1a of @data, the bytes the call carried. */
inline ::testing::AssertionResult sink_result(const Reply &r, uint32_t xid,
					      const std::vector<uint8_t> &data)
{
	size_t off;
	auto a = rpc_success(r, xid, &off);
	if (!a)
		return a;
	XdrReader x(r.rpc.data() + off, r.rpc.size() - off);
	uint32_t len = x.u32(), sum = x.u32();
	if (len != data.size())
		return ::testing::AssertionFailure() << "SINK length " << len << " != " << data.size();
	if (sum != fnv(data))
		return ::testing::AssertionFailure()
		       << "SINK checksum " << sum << " != " << fnv(data)
		       << ": the data pulled into the sink is not the client's";
	return ::testing::AssertionSuccess();
}

/* The reply carries opaque<> == @want (inline or in Write chunk 0). */
inline ::testing::AssertionResult opaque_result(const Reply &r, uint32_t xid,
						const std::vector<uint8_t> &want)
{
	size_t off;
	auto a = rpc_success(r, xid, &off);
	if (!a)
		return a;
	std::vector<uint8_t> got;
	std::string why;
	if (!reply_opaque(r, off, 0, &got, &why))
		return ::testing::AssertionFailure() << why << " " << r.describe();
	if (got.size() != want.size())
		return ::testing::AssertionFailure() << "result length " << got.size()
						     << " != " << want.size();
	for (size_t i = 0; i < got.size(); i++)
		if (got[i] != want[i])
			return ::testing::AssertionFailure()
			       << "result byte " << i << " is " << int(got[i]) << ", want "
			       << int(want[i]) << " (" << r.describe() << ")";
	if (r.rpc.size() != off + 4 + ((want.size() + 3) & ~size_t(3)) &&
	    r.rpc.size() != off + 4)
		return ::testing::AssertionFailure() << "trailing bytes after the result";
	return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult is_err_chunk(const Reply &r, uint32_t xid)
{
	if (!r.ok())
		return ::testing::AssertionFailure() << r.describe();
	if (r.proc != RDMA_ERROR || r.err != ERR_CHUNK || r.xid != xid)
		return ::testing::AssertionFailure() << "expected ERR_CHUNK for xid " << xid
						     << ", got " << r.describe();
	return ::testing::AssertionSuccess();
}

/* A running rr_test_server and helpers to connect to it. */
class TransportTest : public ::testing::Test {
      protected:
	ServerProc srv;
	std::vector<std::unique_ptr<Requester>> reqs;
	/* which server to run; override before SetUp via the constructor */
	ServerProc::Opts sopts;
	bool server_must_exit_clean = true;

	void SetUp() override
	{
		ASSERT_TRUE(srv.start(sopts)) << srv.why();
	}
	/* The server's count of connections it still holds (freed ones leave
	 * the list), once it is @want or @tries polls 50 ms apart went by. */
	uint64_t conns_listed_when(uint64_t want, int tries = 100)
	{
		uint64_t listed = srv.stats()["conns_listed"];

		for (int i = 0; i < tries && listed != want; i++) {
			usleep(50000);
			listed = srv.stats()["conns_listed"];
		}
		return listed;
	}
	/* The server's count of calls handed to the upper layer once it has
	 * reached @n (or after 10 s), @r progressed meanwhile so that its
	 * Sends and the Reads of its chunks go ahead. */
	uint64_t ul_calls_reach(uint64_t n, Requester *r)
	{
		uint64_t seen = 0;

		eventually([&] {
			r->progress(0);
			seen = srv.stats()["ul_calls"];
			return seen >= n;
		});
		return seen;
	}
	/* The server's count of calls handed to the upper layer, once it has
	 * moved off @from and then stayed unchanged for 300 ms of wall time
	 * (or after 10 s), every requester progressed meanwhile. Timed by the
	 * clock: progress() returns at once while a client reaps its own
	 * completions, so counting its rounds is no measure of time. */
	uint64_t ul_calls_settled(uint64_t from)
	{
		using Clock = std::chrono::steady_clock;
		uint64_t seen = srv.stats()["ul_calls"];
		auto changed = Clock::now();

		eventually([&] {
			for (auto &r : reqs)
				r->progress(0);
			uint64_t now = srv.stats()["ul_calls"];
			if (now != seen) {
				seen = now;
				changed = Clock::now();
			}
			return seen != from && Clock::now() - changed >= std::chrono::milliseconds(300);
		});
		return seen;
	}
	void TearDown() override
	{
		if (IsSkipped())
			return; /* skipped before the server started */
		for (auto &r : reqs) {
			if (r) {
				EXPECT_EQ(r->zero_grants(), 0u) << "the server granted 0 credits";
			}
		}
		reqs.clear();
		int rc = srv.stop(&final_stats);
		if (HasFailure()) {
			std::string line;
			for (const auto &kv : final_stats)
				line += " " + kv.first + "=" + std::to_string(kv.second);
			fprintf(stderr, "server stats at exit:%s\n", line.c_str());
		}
		if (server_must_exit_clean) {
			EXPECT_EQ(rc, 0) << "rr_test_server did not exit cleanly (ASan/LSan or crash)";
			if (rc == 0) {
				EXPECT_EQ(final_stats["destroyed"], 1u);
				EXPECT_EQ(final_stats["ul_conn_up"], final_stats["ul_conn_down"])
					<< "every conn_up needs its conn_down by rr_server_destroy";
			}
		}
	}

	Requester *connect(RequesterOptions o = RequesterOptions())
	{
		o.addr = srv.addr();
		std::string err;
		auto r = Requester::connect(o, &err);
		EXPECT_TRUE(r) << "connect " << o.addr << ": " << err;
		if (!r)
			return nullptr;
		reqs.push_back(std::move(r));
		return reqs.back().get();
	}

	/* NULL round trip: the connection (and server) still answer. */
	::testing::AssertionResult ping(Requester *q)
	{
		uint32_t x = q->next_xid();
		Reply r;
		if (!q->call(call_null(x).rpc, CallSpec(), &r))
			return ::testing::AssertionFailure() << "NULL got no reply: "
							     << q->last_error();
		size_t off;
		return rpc_success(r, x, &off);
	}

	std::map<std::string, uint64_t> final_stats;
};

} // namespace rrtest
