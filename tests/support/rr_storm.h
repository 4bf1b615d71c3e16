// SPDX-License-Identifier: MIT
/*
 * rr_storm.h - a reconnect storm from the client side, as after a server
 * restart: N connection requests from several source addresses sent at once
 * (Requester::start, none waits for its answer), then each connection, as
 * soon as it is established, makes one call. Every connection's timeline is
 * kept: when its request went out, when the server answered it (established
 * or refused), when its first Reply came. One thread drives them all over
 * one shared fabric, so thousands fit one process.
 *
 * The source address of a connection is RPCRDMA_SOFT_SOURCE_ADDR when its
 * request is sent (the soft fabric binds it; all of 127/8 is loopback):
 * connection i comes from sources[i % sources.size()], so the peers'
 * requests interleave as they would from many hosts.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "support/rr_requester.h"

namespace rrtest {

struct StormOptions {
	std::string addr;		  /* the server: tcp:HOST:PORT */
	std::vector<std::string> sources; /* IPv4 source addresses; empty: the kernel's */
	unsigned conns = 0;		  /* connection requests in all */
	uint32_t recv_bufs = 4;		  /* receives a client keeps posted: one call at a time */
	int timeout_ms = 60000;		  /* for every connection to be answered and called */
	/* The one call each established connection makes (xid given). */
	std::function<std::vector<uint8_t>(uint32_t xid)> call;
};

enum class StormState { PENDING, UP, REFUSED, FAILED };

struct StormConn {
	std::string source;
	StormState state = StormState::PENDING;
	double t_req = 0;    /* request sent (seconds, steady clock) */
	double t_answer = 0; /* established, refused or failed */
	double t_reply = 0;  /* first Reply received; 0: none */
	uint32_t xid = 0;
	Reply reply; /* the first Reply */
	std::string err;
	std::unique_ptr<Requester> r;

	/* connect to established (or to refused) */
	double handshake() const
	{
		return t_answer > 0 ? t_answer - t_req : 0;
	}
};

struct StormResult {
	std::vector<StormConn> conns;
	double t_first_req = 0;	 /* the first request went out */
	double t_last_req = 0;	 /* the last request went out */
	double t_last_reply = 0; /* the last first Reply came */
	unsigned up = 0, refused = 0, failed = 0, pending = 0, replied = 0;
	double max_handshake_up = 0;	  /* longest connect-to-established */
	double max_handshake_refused = 0; /* longest connect-to-refused */
	std::string first_error;	  /* of a failed connection, for the report */
};

/* Steady clock in seconds (the timelines above). */
double storm_now();

/*
 * Run the storm; connections stay open in @out (their Requesters) until it
 * is destroyed. @fab: the fabric every connection shares. Returns 0, or a
 * negative errno when the storm could not be run at all.
 */
int storm_run(const StormOptions &o, fab_fabric *fab, StormResult *out);

} // namespace rrtest
