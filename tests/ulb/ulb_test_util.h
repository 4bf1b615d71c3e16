// SPDX-License-Identifier: MIT
/* ulb_test_util.h - build parsed chunk lists (struct rr_pcl) for ULB tests. */
#pragma once

#include <cstring>
#include <vector>

#include "rpcrdma/rr_hdr.h"

static inline void pcl_init(struct rr_pcl *p, uint32_t xid = 1)
{
	memset(p, 0, sizeof(*p));
	p->xid = xid;
	p->vers = 1;
	p->credits = 32;
}

static inline void pcl_add_read(struct rr_pcl *p, uint32_t position, uint64_t len)
{
	struct rr_chunk *c = &p->read[p->n_read++];

	c->position = position;
	c->first = p->nsegs;
	c->nsegs = 1;
	c->length = len;
	p->segs[p->nsegs++] = {0x100u + p->nsegs, uint32_t(len), 0x1000ull * p->nsegs};
}

/* A Write chunk of @len bytes in @nsegs segments; len 0 -> an empty chunk. */
static inline void pcl_add_write(struct rr_pcl *p, uint64_t len, uint16_t nsegs = 1)
{
	struct rr_chunk *c = &p->write[p->n_write++];

	c->first = p->nsegs;
	c->nsegs = len ? nsegs : 0;
	c->length = len;
	for (uint16_t i = 0; i < c->nsegs; i++)
		p->segs[p->nsegs++] = {0x200u + i, uint32_t(len / nsegs), 0x2000ull * i};
}

static inline void pcl_set_reply(struct rr_pcl *p, uint64_t len)
{
	p->has_reply = true;
	p->reply.first = p->nsegs;
	p->reply.nsegs = 1;
	p->reply.length = len;
	p->segs[p->nsegs++] = {0x300u, uint32_t(len), 0x3000ull};
}
