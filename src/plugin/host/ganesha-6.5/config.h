/* SPDX-License-Identifier: MIT */
/*
 * libntirpc 6.3's installed <lttng/ntirpc_traces.h> includes "config.h" from
 * its caller, to learn whether LTTng tracing is on. The plugin builds
 * without ntirpc's tracepoints: nothing to define.
 */
