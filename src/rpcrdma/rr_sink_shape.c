// SPDX-License-Identifier: MIT
/*
 * rr_sink_shape.c - how big the Read sink pools may grow (policy in
 * rr_internal.h above struct rr_bigpool): the classes, the shared part and
 * the reserves under the configured bounds (sink_mem_max, sink_budget),
 * each event thread's share, and the bound the start-up line states. The
 * pools themselves are rr_pool.c's.
 */
#include <stdint.h>
#include <string.h>

#include "rpcrdma/rr_internal.h"

static const size_t sink_class_size[] = {4096, 65536};
static const uint32_t sink_class_slabs[] = {16, 64}; /* 4 MiB and 16 MiB at most */
_Static_assert(sizeof(sink_class_size) / sizeof(sink_class_size[0]) == RR_SINK_CLASSES - 1,
	       "one full-size class above the small ones");

/* One chunk's worth plus room for an XDR pad. */
static size_t big_buf_size(uint64_t max_chunk_bytes)
{
	return (max_chunk_bytes + 4 + 4095) & ~(size_t)4095;
}

/* The whole device's pool, as if one event thread served it. */
static void sink_shape_one(const struct rr_config *cfg, struct rr_sink_shape *s)
{
	uint32_t reserve = RR_SINK_RESERVE_BIG * cfg->max_conns;
	uint32_t min_shared;
	uint64_t fixed, left;

	memset(s, 0, sizeof(*s));
	s->big = big_buf_size(cfg->limits.max_chunk_bytes);
	while (s->nsmall < sizeof(sink_class_size) / sizeof(sink_class_size[0]) &&
	       sink_class_size[s->nsmall] < s->big) {
		s->small_size[s->nsmall] = sink_class_size[s->nsmall];
		s->small_slabs[s->nsmall] = sink_class_slabs[s->nsmall];
		s->nsmall++;
	}
	s->shared = RR_BIG_MAX;
	s->prealloc = RR_BIG_PREALLOC;
	s->big_max = RR_BIG_MAX + reserve + RR_BIG_PREALLOC;
	if (!cfg->sink_mem_max)
		return;
	min_shared = cfg->limits.max_read_chunks > RR_SINK_RESERVE_BIG
			 ? cfg->limits.max_read_chunks - RR_SINK_RESERVE_BIG
			 : 1;
	fixed = (uint64_t)s->big * (reserve + min_shared) + (uint64_t)RR_SINK_SLAB * s->nsmall;
	left = cfg->sink_mem_max > fixed ? cfg->sink_mem_max - fixed : 0;
	for (unsigned int i = 0; i < s->nsmall; i++) {
		uint64_t more = left / 4 / s->nsmall / RR_SINK_SLAB;

		if (more > sink_class_slabs[i] - 1)
			more = sink_class_slabs[i] - 1;
		s->small_slabs[i] = 1 + (uint32_t)more;
		left -= more * RR_SINK_SLAB;
	}
	s->shared =
	    min_shared + (uint32_t)(left / s->big < RR_BIG_MAX ? left / s->big : RR_BIG_MAX);
	if (s->shared > RR_BIG_MAX)
		s->shared = RR_BIG_MAX;
	s->big_max = s->shared + reserve;
	s->prealloc = s->shared < RR_BIG_PREALLOC ? s->shared : RR_BIG_PREALLOC;
}

/*
 * One event thread's share of it (each has a pool of its own, so that no
 * lock is taken between them): the shared part, the small classes and the
 * up-front buffers divided among the threads, never below one slab, one
 * buffer, or what one connection needs for a whole Call's chunks. The
 * reserves stay every connection's: a connection is on one thread only.
 */
void rr_sink_shape(const struct rr_config *cfg, struct rr_sink_shape *s)
{
	uint32_t n = cfg->event_threads > 1 ? cfg->event_threads : 1;
	uint32_t min_shared = cfg->limits.max_read_chunks > RR_SINK_RESERVE_BIG
				  ? cfg->limits.max_read_chunks - RR_SINK_RESERVE_BIG
				  : 1;
	uint32_t reserve;

	sink_shape_one(cfg, s);
	if (n == 1)
		return;
	reserve = s->big_max - s->shared - (cfg->sink_mem_max ? 0 : s->prealloc);
	for (unsigned int i = 0; i < s->nsmall; i++)
		s->small_slabs[i] = s->small_slabs[i] / n ? s->small_slabs[i] / n : 1;
	if (s->shared > min_shared)
		s->shared = s->shared / n > min_shared ? s->shared / n : min_shared;
	s->prealloc = s->prealloc / n ? s->prealloc / n : 1;
	if (s->prealloc > s->shared)
		s->prealloc = s->shared;
	s->big_max = s->shared + reserve + (cfg->sink_mem_max ? 0 : s->prealloc);
}

/*
 * One event thread's share of Read_Sink_Budget on a device (0: no bound),
 * never below a whole Call's chunks, each in a buffer or slab of its own:
 * a Call whose sinks do not fit holds none (rr_read.c), so one always fits
 * when the pool has nothing out.
 */
uint64_t rr_sink_read_budget(const struct rr_config *cfg, size_t big)
{
	uint32_t n = cfg->event_threads > 1 ? cfg->event_threads : 1;
	uint64_t floor = (uint64_t)cfg->limits.max_read_chunks *
			 (big > RR_SINK_SLAB ? big : RR_SINK_SLAB);
	uint64_t share = cfg->sink_budget / n;

	if (!cfg->sink_budget)
		return 0;
	return share > floor ? share : floor;
}

uint64_t rr_big_bound_bytes(const struct rr_config *cfg)
{
	uint32_t n = cfg->event_threads > 1 ? cfg->event_threads : 1;
	struct rr_sink_shape s;
	uint64_t bytes, reserve;

	rr_sink_shape(cfg, &s);
	/* Each thread's pool, but every connection's reserve once. */
	reserve = (uint64_t)RR_SINK_RESERVE_BIG * cfg->max_conns;
	bytes = (uint64_t)s.big * ((uint64_t)n * (s.big_max - reserve) + reserve);
	for (unsigned int i = 0; i < s.nsmall; i++)
		bytes += (uint64_t)n * RR_SINK_SLAB * s.small_slabs[i];
	return bytes;
}

