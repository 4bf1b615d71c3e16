/* SPDX-License-Identifier: MIT */
/*
 * rr_device_profile.h - the device the tests run on: the soft provider's
 * profile from RPCRDMA_SOFT_PROFILE (fab_soft.h), as ctest's per-profile
 * runs set it. Tests whose expectations differ by device (Send With
 * Invalidate, SRQ, iWARP's per-Read registrations, Read depth) ask here.
 */
#ifndef RR_TEST_DEVICE_PROFILE_H
#define RR_TEST_DEVICE_PROFILE_H

#include <cstdlib>
#include <string>

#include "fabric/fab_soft.h"

static inline fab_limits rr_test_device()
{
	fab_limits lim = {};
	const char *p = std::getenv("RPCRDMA_SOFT_PROFILE");

	if (fab_soft_profile(p, &lim))
		fab_soft_profile(nullptr, &lim);
	return lim;
}

/* Whether Use_SRQ gets a shared receive queue there: the device must have
 * one, and not be iWARP, where a Send that finds no receive ends the
 * connection (docs/devices.md). */
static inline bool rr_test_device_srq()
{
	fab_limits lim = rr_test_device();

	return lim.max_srq_wr && lim.transport != FAB_TRANSPORT_IWARP;
}

/* The profile's name, for skip reasons and messages. */
static inline std::string rr_test_device_name()
{
	const char *p = std::getenv("RPCRDMA_SOFT_PROFILE");

	return p && *p ? p : "soft";
}

#endif
