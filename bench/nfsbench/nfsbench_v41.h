/* SPDX-License-Identifier: MIT */
/*
 * nfsbench_v41.h - nfsbench's NFSv4.1 operations (nfsbench_v41.cc).
 */
#ifndef RPCRDMA_NFSBENCH_V41_H
#define RPCRDMA_NFSBENCH_V41_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

/* Seconds on the steady clock: what nfsbench (v3 and v4.1) times calls by. */
inline double nfsbench_now()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
	    .count();
}

struct V41Run {
	std::string rdma, tcp;	/* one of them: FABADDR, or HOST:PORT */
	std::string exp;	/* the export's pseudo path */
	std::string op;		/* getattr read4k write4k read1m write1m (without "v41") */
	uint64_t count = 0, warmup = 0;
	std::function<void(const char *)> sync; /* nfsbench's --sync points */
};

/* One session, one slot, queue depth 1; prints nfsbench's JSON line.
 * Returns the exit status. */
int nfsbench_v41(const V41Run &r);

#endif
