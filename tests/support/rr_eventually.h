// SPDX-License-Identifier: MIT
/*
 * rr_eventually.h - the tests' one way to wait for something another thread
 * or process does asynchronously: ask for the condition itself, bounded by
 * the steady clock. Never a count of rounds or a fixed sleep: on a loaded CI
 * machine (two cores, sanitizers, another test beside) rounds can pass in
 * microseconds or the other side can run seconds late.
 */
#pragma once

#include <unistd.h>

#include <chrono>

namespace rrtest {

/* Asks @done every 10 ms until it says yes or @ms of wall time went by; its
 * last answer. The bound is generous, since a loaded CI machine runs the
 * other side slowly; a wait that is met returns at once. */
template <typename Done> bool eventually(Done done, int ms = 10000)
{
	const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);

	while (!done()) {
		if (std::chrono::steady_clock::now() >= end)
			return done();
		usleep(10000);
	}
	return true;
}

} // namespace rrtest
