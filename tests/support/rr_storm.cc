// SPDX-License-Identifier: MIT
/*
 * rr_storm.cc - the client side of a reconnect storm (rr_storm.h).
 */
#include "support/rr_storm.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>

namespace rrtest {

namespace {

/* A round of progress over every connection still in play; returns the
 * events handled. */
int storm_round(const StormOptions &o, StormResult *out, size_t started)
{
	int handled = 0;

	for (size_t i = 0; i < started; i++) {
		StormConn &c = out->conns[i];

		if (!c.r || c.state == StormState::REFUSED || c.state == StormState::FAILED ||
		    (c.state == StormState::UP && c.t_reply > 0))
			continue;
		handled += c.r->progress(0);
		if (c.state == StormState::PENDING) {
			if (c.r->connected()) {
				c.state = StormState::UP;
				c.t_answer = storm_now();
				c.xid = c.r->next_xid();
				int64_t x = c.r->post(o.call(c.xid), CallSpec());
				if (x < 0) {
					c.state = StormState::FAILED;
					c.err =
					    "post: " + std::to_string(x) + " " + c.r->last_error();
				}
				handled++;
			} else if (c.r->connect_failed()) {
				c.state =
				    c.r->rejected() ? StormState::REFUSED : StormState::FAILED;
				c.t_answer = storm_now();
				c.err = c.r->last_error();
				handled++;
			}
			continue;
		}
		/* UP, call out */
		if (c.r->wait(c.xid, &c.reply, 0)) {
			c.t_reply = storm_now();
			handled++;
		} else if (!c.r->connected()) {
			c.state = StormState::FAILED;
			c.err = "lost before its first Reply: " + c.r->last_error();
			handled++;
		}
	}
	return handled;
}

bool storm_settled(const StormResult *out)
{
	for (const auto &c : out->conns)
		if (c.state == StormState::PENDING || (c.state == StormState::UP && !c.t_reply))
			return false;
	return true;
}

} // namespace

double storm_now()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
	    .count();
}

int storm_run(const StormOptions &o, fab_fabric *fab, StormResult *out)
{
	if (!o.call || !o.conns || !fab)
		return -EINVAL;
	out->conns.clear();
	out->conns.resize(o.conns);
	for (unsigned i = 0; i < o.conns; i++) {
		StormConn &c = out->conns[i];
		RequesterOptions ro;
		std::string err;

		ro.addr = o.addr;
		ro.fabric = fab;
		ro.recv_bufs = o.recv_bufs;
		if (!o.sources.empty()) {
			c.source = o.sources[i % o.sources.size()];
			setenv("RPCRDMA_SOFT_SOURCE_ADDR", c.source.c_str(), 1);
		}
		c.t_req = storm_now();
		if (i == 0)
			out->t_first_req = c.t_req;
		c.r = Requester::start(ro, &err);
		if (!c.r) {
			c.state = StormState::FAILED;
			c.t_answer = storm_now();
			c.err = "start: " + err;
		}
		/* Those already answered make their call now, as a client would. */
		if (i % 128 == 127)
			storm_round(o, out, i + 1);
	}
	unsetenv("RPCRDMA_SOFT_SOURCE_ADDR");
	out->t_last_req = storm_now();

	double end = storm_now() + o.timeout_ms / 1000.0;
	while (!storm_settled(out) && storm_now() < end)
		if (!storm_round(o, out, o.conns))
			usleep(1000); /* nothing moved: let the server run */

	out->up = out->refused = out->failed = out->pending = out->replied = 0;
	for (const auto &c : out->conns) {
		switch (c.state) {
		case StormState::UP:
			out->up++;
			if (c.handshake() > out->max_handshake_up)
				out->max_handshake_up = c.handshake();
			if (c.t_reply) {
				out->replied++;
				if (c.t_reply > out->t_last_reply)
					out->t_last_reply = c.t_reply;
			}
			break;
		case StormState::REFUSED:
			out->refused++;
			if (c.handshake() > out->max_handshake_refused)
				out->max_handshake_refused = c.handshake();
			break;
		case StormState::FAILED:
			out->failed++;
			if (out->first_error.empty())
				out->first_error = c.err;
			break;
		case StormState::PENDING:
			out->pending++;
			break;
		}
	}
	return 0;
}

} // namespace rrtest
