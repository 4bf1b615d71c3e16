// SPDX-License-Identifier: MIT
/*
 * fab_test_util.h - small helpers shared by the fabric tests: waiting for CM
 * events and completions with a timeout, registered buffers, and a connected
 * pair of conns inside one process.
 */
#ifndef RPCRDMA_TESTS_FAB_TEST_UTIL_H
#define RPCRDMA_TESTS_FAB_TEST_UTIL_H

#include <gtest/gtest.h>

#include <poll.h>
#include <unistd.h>

#include <errno.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "fabric/fab.h"

namespace fabtest
{

inline long now_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
		   std::chrono::steady_clock::now().time_since_epoch())
	    .count();
}

inline bool provider_is_soft(struct fab_fabric *fab)
{
	return std::string(fab_name(fab)) == "soft";
}

/* A fresh listen address: unix socket on "soft", RPCRDMA_FABRIC_ADDR:port on "verbs". */
inline std::string listen_addr(struct fab_fabric *fab, bool tcp = false)
{
	static std::atomic<int> seq{0};
	int n = seq++;

	if (!provider_is_soft(fab)) {
		const char *ip = getenv("RPCRDMA_FABRIC_ADDR");
		std::string h = ip ? ip : "127.0.0.1";
		int port = 30000 + (getpid() * 16 + n) % 20000;

		if (h.find(':') != std::string::npos)
			h = "[" + h + "]";
		return h + ":" + std::to_string(port);
	}
	if (tcp)
		return "tcp:127.0.0.1:" + std::to_string(30000 + (getpid() * 16 + n) % 20000);
	return "unix:/tmp/rr-fab-" + std::to_string(getpid()) + "-" + std::to_string(n) + ".sock";
}

/*
 * Listen on a fresh address; the machine is shared, so a TCP port another
 * process holds (-EADDRINUSE) just means: try the next one.
 */
inline int listen_any(struct fab_fabric *fab, struct fab_channel *ch, bool tcp, std::string *addr,
		      struct fab_listener **out)
{
	int rc = -EADDRINUSE;

	for (int i = 0; i < 32 && rc == -EADDRINUSE; i++) {
		*addr = listen_addr(fab, tcp);
		rc = fab_listen(fab, ch, addr->c_str(), 8, out);
	}
	return rc;
}

/*
 * CM event pump. On "verbs" the active side's address and route steps only
 * advance while its channel is read, so a test waiting on the server's
 * channel must keep reading the client's too. Channels registered here are
 * all read while waiting; events for the others are kept for later.
 */
inline std::map<struct fab_channel *, std::deque<struct fab_cm_event>> &cm_pending()
{
	static std::map<struct fab_channel *, std::deque<struct fab_cm_event>> m;
	return m;
}

inline void pump_register(struct fab_channel *ch)
{
	cm_pending()[ch];
}

inline void pump_unregister(struct fab_channel *ch)
{
	cm_pending().erase(ch);
}

/* Next CM event on ch within timeout_ms; false on timeout. */
inline bool wait_event(struct fab_channel *ch, struct fab_cm_event *ev, int timeout_ms = 5000)
{
	auto &pend = cm_pending();
	long end = now_ms() + timeout_ms;

	for (;;) {
		auto it = pend.find(ch);
		if (it != pend.end() && !it->second.empty()) {
			*ev = it->second.front();
			it->second.pop_front();
			return true;
		}
		if (fab_channel_get_event(ch, ev) == 0)
			return true;
		std::vector<struct pollfd> p;
		p.push_back({fab_channel_fd(ch), POLLIN, 0});
		for (auto &kv : pend) {
			struct fab_cm_event o;

			if (kv.first == ch)
				continue;
			while (fab_channel_get_event(kv.first, &o) == 0)
				kv.second.push_back(o);
			p.push_back({fab_channel_fd(kv.first), POLLIN, 0});
		}
		long left = end - now_ms();
		if (left <= 0)
			return false;
		poll(p.data(), p.size(), (int)(left < 20 ? left : 20));
	}
}

inline bool wait_event_type(struct fab_channel *ch, enum fab_cm_event_type t,
			    struct fab_cm_event *ev, int timeout_ms = 5000)
{
	if (!wait_event(ch, ev, timeout_ms))
		return false;
	EXPECT_EQ(ev->type, t) << "got CM event " << ev->type;
	return ev->type == t;
}

/* One completion from cq within timeout_ms, using the arm / fd / re-poll pattern. */
inline bool wait_wc(struct fab_cq *cq, struct fab_wc *wc, int timeout_ms = 5000)
{
	long end = now_ms() + timeout_ms;

	for (;;) {
		if (fab_cq_poll(cq, wc, 1) == 1)
			return true;
		fab_cq_arm(cq);
		if (fab_cq_poll(cq, wc, 1) == 1)
			return true;
		long left = end - now_ms();
		if (left <= 0)
			return false;
		struct pollfd p = {fab_cq_fd(cq), POLLIN, 0};
		if (poll(&p, 1, (int)left) > 0)
			fab_cq_get_event(cq);
	}
}

/* No completion shows up within ms. */
inline bool cq_quiet(struct fab_cq *cq, int ms = 100)
{
	struct fab_wc wc;

	usleep(ms * 1000);
	return fab_cq_poll(cq, &wc, 1) == 0;
}

struct Buf {
	std::vector<uint8_t> mem;
	struct fab_mr *mr = nullptr;

	Buf() = default;
	Buf(const Buf &) = delete;
	Buf &operator=(const Buf &) = delete;
	~Buf()
	{
		if (mr)
			fab_mr_dereg(mr);
	}
	int reg(struct fab_pd *pd, size_t len, unsigned int access)
	{
		mem.assign(len, 0);
		return fab_mr_reg(pd, mem.data(), len, access, &mr);
	}
	uint8_t *p()
	{
		return mem.data();
	}
	uint64_t raddr(size_t off = 0)
	{
		return (uint64_t)(uintptr_t)(mem.data() + off);
	}
	struct fab_sge sge(size_t off, uint32_t len)
	{
		struct fab_sge s = {mem.data() + off, len, mr->lkey};
		return s;
	}
	void fill(uint8_t seed)
	{
		for (size_t i = 0; i < mem.size(); i++)
			mem[i] = (uint8_t)(i * 7 + seed);
	}
	bool check(uint8_t seed, size_t off = 0, size_t len = SIZE_MAX)
	{
		if (len == SIZE_MAX)
			len = mem.size() - off;
		for (size_t i = off; i < off + len; i++)
			if (mem[i] != (uint8_t)(i * 7 + seed))
				return false;
		return true;
	}
};

const unsigned int kAll = FAB_ACCESS_LOCAL_WRITE | FAB_ACCESS_REMOTE_READ | FAB_ACCESS_REMOTE_WRITE;

/* One receive of b[off, off+len) to a QP's queue (c) or to an SRQ (q). */
inline int post_one_recv_to(struct fab_conn *c, struct fab_srq *q, Buf &b, size_t off,
			    uint32_t len, uint64_t id)
{
	struct fab_sge s = b.sge(off, len);
	struct fab_recv_wr wr = {};

	wr.wr_id = id;
	wr.sg_list = &s;
	wr.num_sge = 1;
	return q ? fab_post_srq_recv(q, &wr, nullptr) : fab_post_recv(c, &wr, nullptr);
}

inline int post_one_recv(struct fab_conn *c, Buf &b, size_t off, uint32_t len, uint64_t id)
{
	return post_one_recv_to(c, nullptr, b, off, len, id);
}

inline int post_one_srq_recv(struct fab_srq *q, Buf &b, size_t off, uint32_t len, uint64_t id)
{
	return post_one_recv_to(nullptr, q, b, off, len, id);
}

inline int post_one_send(struct fab_conn *c, enum fab_wr_opcode op, Buf &b, size_t off,
			 uint32_t len, uint64_t id, bool signaled = true, uint64_t raddr = 0,
			 uint32_t rkey = 0, uint32_t inv = 0)
{
	struct fab_sge s = b.sge(off, len);
	struct fab_send_wr wr = {};

	wr.wr_id = id;
	wr.opcode = op;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.signaled = signaled;
	wr.remote_addr = raddr;
	wr.rkey = rkey;
	wr.invalidate_rkey = inv;
	return fab_post_send(c, &wr, nullptr);
}

} // namespace fabtest

#endif
