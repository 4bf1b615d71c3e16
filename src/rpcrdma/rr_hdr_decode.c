// SPDX-License-Identifier: MIT
/*
 * rr_hdr_decode.c - decode and validate a received RPC-over-RDMA v1 header
 * into a parsed chunk list (RFC 8166 sections 3.4 and 4.2).
 *
 * Validation is stricter than the Linux server's (docs/linux-client-wire.md):
 * Read segments that overlap in the requester's memory and Read chunks whose
 * XDR positions overlap are refused here, so that the receive path can pull
 * and splice chunks blindly.
 */
#include <errno.h>
#include <string.h>

#include "rpcrdma/rr_hdr.h"
#include "rpcrdma/rr_xdr.h"

/* 1 MiB of NFS payload plus two pages of RPC header room (as the Linux
 * server sizes its Reply and Position-Zero chunks: docs/linux-client-wire.md). */
#define RR_DEFAULT_MAX_CHUNK_BYTES ((1u << 20) + 8192u)

void rr_hdr_limits_default(struct rr_hdr_limits *lim)
{
	lim->max_read_chunks = 4;
	lim->max_write_chunks = 8;
	/* The Linux client uses at most 16 (RPCRDMA_MAX_HDR_SEGS); a 1 MiB chunk of
	 * 4 KiB pages without large MRs needs 256 + a pad segment. */
	lim->max_segs_per_chunk = 257;
	lim->max_segs = RR_PCL_MAX_SEGS;
	lim->max_chunk_bytes = RR_DEFAULT_MAX_CHUNK_BYTES;
}

static const char *const result_names[RR_HDR_RESULT_COUNT] = {
	[RR_HDR_OK] = "ok",
	[RR_HDR_SHORT] = "header shorter than 16 bytes",
	[RR_HDR_BAD_VERS] = "unsupported rdma_vers",
	[RR_HDR_PROC_DONE] = "RDMA_DONE received",
	[RR_HDR_PROC_ERROR] = "RDMA_ERROR received",
	[RR_HDR_PROC_MSGP] = "RDMA_MSGP received",
	[RR_HDR_PROC_UNKNOWN] = "unknown rdma_proc",
	[RR_HDR_OVERRUN] = "chunk lists overrun the message",
	[RR_HDR_BAD_DISCRIM] = "bad list discriminator",
	[RR_HDR_UNALIGNED_POSITION] = "unaligned Read chunk position",
	[RR_HDR_TOO_MANY_CHUNKS] = "too many chunks",
	[RR_HDR_TOO_MANY_SEGS] = "too many segments",
	[RR_HDR_ZERO_LENGTH_SEG] = "zero-length segment",
	[RR_HDR_SEG_WRAPS] = "segment offset+length wraps",
	[RR_HDR_READ_SEG_OVERLAP] = "overlapping Read segments",
	[RR_HDR_READ_CHUNK_OVERLAP] = "overlapping Read chunk positions",
	[RR_HDR_CHUNK_TOO_BIG] = "chunk larger than the maximum payload",
	[RR_HDR_NOMSG_NO_CALL] = "RDMA_NOMSG without a Position-Zero Read chunk",
	[RR_HDR_MSG_WITH_PZRC] = "RDMA_MSG with a Position-Zero Read chunk",
};

const char *rr_hdr_result_name(enum rr_hdr_result r)
{
	if ((unsigned int)r >= RR_HDR_RESULT_COUNT)
		return "invalid result";
	return result_names[r];
}

enum rr_hdr_action rr_hdr_answer(enum rr_hdr_result r, size_t received_len)
{
	switch (r) {
	case RR_HDR_OK:
		return RR_ACT_PROCESS;
	case RR_HDR_BAD_VERS:
		return RR_ACT_ERR_VERS;
	case RR_HDR_PROC_DONE:
	case RR_HDR_PROC_ERROR:
		/* A responder never answers these (the Linux server drops them
		 * too: docs/linux-client-wire.md). */
		return RR_ACT_DROP;
	case RR_HDR_SHORT:
		/* An error reply needs at least the xid to be matched. */
		return received_len >= 4 ? RR_ACT_ERR_CHUNK : RR_ACT_DROP;
	default:
		return RR_ACT_ERR_CHUNK;
	}
}

/* Reads one segment, whose 16 bytes the caller has checked are there, and
 * applies the per-segment rules. */
static inline enum rr_hdr_result decode_segment(struct rr_xdr *x, struct rr_segment *seg)
{
	seg->handle = rr_xdr_load32(x->p);
	seg->length = rr_xdr_load32(x->p + 4);
	seg->offset = rr_xdr_load64(x->p + 8);
	x->p += RR_SEGMENT_LEN;
	if (seg->length == 0)
		return RR_HDR_ZERO_LENGTH_SEG;
	if (seg->offset + seg->length < seg->offset)
		return RR_HDR_SEG_WRAPS;
	return RR_HDR_OK;
}

static bool segs_overlap(const struct rr_segment *a, const struct rr_segment *b)
{
	return a->handle == b->handle && a->offset < b->offset + b->length &&
	       b->offset < a->offset + a->length;
}

/* The Read list's raw entries, in wire order: @n of them. */
struct read_entries {
	uint32_t pos[RR_PCL_MAX_SEGS];
	struct rr_segment seg[RR_PCL_MAX_SEGS];
	uint16_t order[RR_PCL_MAX_SEGS];	/* indexes, sorted by position */
	unsigned int n;
};

static enum rr_hdr_result read_entries_decode(struct rr_xdr *x, const struct rr_hdr_limits *lim,
					      struct read_entries *e)
{
	uint32_t max_segs = lim->max_segs < RR_PCL_MAX_SEGS ? lim->max_segs : RR_PCL_MAX_SEGS;

	for (;;) {
		uint32_t discrim, position;
		enum rr_hdr_result r;

		if (!rr_xdr_get32(x, &discrim))
			return RR_HDR_OVERRUN;
		if (discrim == 0)
			return RR_HDR_OK;
		if (discrim != 1)
			return RR_HDR_BAD_DISCRIM;
		if (e->n >= max_segs)
			return RR_HDR_TOO_MANY_SEGS;
		if (!rr_xdr_get32(x, &position) || rr_xdr_left(x) < RR_SEGMENT_LEN)
			return RR_HDR_OVERRUN;
		r = decode_segment(x, &e->seg[e->n]);
		if (r != RR_HDR_OK)
			return r;
		if (position & 3)
			return RR_HDR_UNALIGNED_POSITION;
		e->pos[e->n] = position;
		e->n++;
	}
}

/* Stable insertion sort of the entries' indexes by position. */
static void read_entries_sort(struct read_entries *e)
{
	for (unsigned int i = 0; i < e->n; i++) {
		e->order[i] = (uint16_t)i;
		for (unsigned int j = i; j > 0 && e->pos[e->order[j - 1]] > e->pos[e->order[j]]; j--) {
			uint16_t t = e->order[j];

			e->order[j] = e->order[j - 1];
			e->order[j - 1] = t;
		}
	}
}

/* Sorted entries into chunks: segments sharing a position form one. */
static enum rr_hdr_result read_entries_group(const struct read_entries *e,
					     const struct rr_hdr_limits *lim, struct rr_pcl *pcl)
{
	uint32_t max_chunks = lim->max_read_chunks < RR_PCL_MAX_READ_CHUNKS
				      ? lim->max_read_chunks
				      : RR_PCL_MAX_READ_CHUNKS;

	for (unsigned int i = 0; i < e->n; i++) {
		const struct rr_segment *s = &e->seg[e->order[i]];
		uint32_t pos = e->pos[e->order[i]];
		struct rr_chunk *ch;

		for (unsigned int j = 0; j < i; j++)
			if (segs_overlap(s, &e->seg[e->order[j]]))
				return RR_HDR_READ_SEG_OVERLAP;
		if (i == 0 || pos != e->pos[e->order[i - 1]]) {
			if (pcl->n_read >= max_chunks)
				return RR_HDR_TOO_MANY_CHUNKS;
			ch = &pcl->read[pcl->n_read++];
			ch->position = pos;
			ch->first = pcl->nsegs;
			ch->nsegs = 0;
			ch->length = 0;
		} else {
			ch = &pcl->read[pcl->n_read - 1];
		}
		if (ch->nsegs >= lim->max_segs_per_chunk)
			return RR_HDR_TOO_MANY_SEGS;
		pcl->segs[pcl->nsegs++] = *s;
		ch->nsegs++;
		ch->length += s->length;
		if (ch->length > lim->max_chunk_bytes)
			return RR_HDR_CHUNK_TOO_BIG;
	}
	return RR_HDR_OK;
}

/*
 * Read list: entries of (position, segment), in any order on the wire. Segments
 * sharing a position form one chunk; chunks are sorted by position and a
 * chunk's segments keep their list order (RFC 8166 section 3.4.5).
 */
static enum rr_hdr_result decode_read_list(struct rr_xdr *x, const struct rr_hdr_limits *lim,
					   struct rr_pcl *pcl)
{
	struct read_entries e;
	enum rr_hdr_result r;

	e.n = 0;
	r = read_entries_decode(x, lim, &e);
	if (r != RR_HDR_OK)
		return r;
	read_entries_sort(&e);
	r = read_entries_group(&e, lim, pcl);
	if (r != RR_HDR_OK)
		return r;
	/*
	 * A chunk at position P stands for the bytes [P, P + roundup(len)) of the
	 * Call's XDR stream; the next chunk must start at or after that. A
	 * Position-Zero chunk is the stream other chunks index into, so it is
	 * not compared.
	 */
	for (unsigned int i = 1; i < pcl->n_read; i++) {
		const struct rr_chunk *prev = &pcl->read[i - 1];

		if (prev->position == 0)
			continue;
		if ((uint64_t)pcl->read[i].position < prev->position + rr_xdr_roundup(prev->length))
			return RR_HDR_READ_CHUNK_OVERLAP;
	}
	return RR_HDR_OK;
}

/* One Write chunk (also the body of the Reply chunk): nseg, segments. */
static enum rr_hdr_result decode_write_chunk(struct rr_xdr *x, const struct rr_hdr_limits *lim,
					     struct rr_pcl *pcl, struct rr_chunk *ch)
{
	uint32_t nseg, i;
	uint32_t max_segs = lim->max_segs < RR_PCL_MAX_SEGS ? lim->max_segs : RR_PCL_MAX_SEGS;

	if (!rr_xdr_get32(x, &nseg))
		return RR_HDR_OVERRUN;
	if (nseg > lim->max_segs_per_chunk || nseg > max_segs - pcl->nsegs)
		return RR_HDR_TOO_MANY_SEGS;
	/* Check the whole array fits before walking it. */
	if ((uint64_t)nseg * RR_SEGMENT_LEN > rr_xdr_left(x))
		return RR_HDR_OVERRUN;
	ch->position = 0;
	ch->first = pcl->nsegs;
	ch->nsegs = 0;
	ch->length = 0;
	for (i = 0; i < nseg; i++) {
		struct rr_segment *s = &pcl->segs[pcl->nsegs];
		enum rr_hdr_result r = decode_segment(x, s);

		if (r != RR_HDR_OK)
			return r;
		pcl->nsegs++;
		ch->nsegs++;
		ch->length += s->length;
		if (ch->length > lim->max_chunk_bytes)
			return RR_HDR_CHUNK_TOO_BIG;
	}
	return RR_HDR_OK;
}

static enum rr_hdr_result decode_write_list(struct rr_xdr *x, const struct rr_hdr_limits *lim,
					    struct rr_pcl *pcl)
{
	uint32_t max_chunks = lim->max_write_chunks < RR_PCL_MAX_WRITE_CHUNKS
				      ? lim->max_write_chunks
				      : RR_PCL_MAX_WRITE_CHUNKS;

	for (;;) {
		uint32_t discrim;
		enum rr_hdr_result r;

		if (!rr_xdr_get32(x, &discrim))
			return RR_HDR_OVERRUN;
		if (discrim == 0)
			return RR_HDR_OK;
		if (discrim != 1)
			return RR_HDR_BAD_DISCRIM;
		if (pcl->n_write >= max_chunks)
			return RR_HDR_TOO_MANY_CHUNKS;
		r = decode_write_chunk(x, lim, pcl, &pcl->write[pcl->n_write]);
		if (r != RR_HDR_OK)
			return r;
		pcl->n_write++;
	}
}

static enum rr_hdr_result decode_reply_chunk(struct rr_xdr *x, const struct rr_hdr_limits *lim,
					     struct rr_pcl *pcl)
{
	uint32_t discrim;

	if (!rr_xdr_get32(x, &discrim))
		return RR_HDR_OVERRUN;
	if (discrim == 0)
		return RR_HDR_OK;
	if (discrim != 1)
		return RR_HDR_BAD_DISCRIM;
	pcl->has_reply = true;
	return decode_write_chunk(x, lim, pcl, &pcl->reply);
}

static enum rr_hdr_result decode_lists(struct rr_xdr *x, const struct rr_hdr_limits *lim,
				       struct rr_pcl *pcl)
{
	static const uint8_t no_chunks[3 * RR_XDR_UNIT];
	enum rr_hdr_result r;

	/* Most calls carry no chunks: three zero discriminators, taken in one
	 * step (what the three list decoders would conclude). */
	if (rr_xdr_left(x) >= sizeof(no_chunks) && !memcmp(x->p, no_chunks, sizeof(no_chunks))) {
		x->p += sizeof(no_chunks);
		return RR_HDR_OK;
	}
	/* An empty Read list (every call but a WRITE's) without the Read
	 * list's sorting machinery. */
	if (rr_xdr_left(x) >= RR_XDR_UNIT && rr_xdr_load32(x->p) == 0) {
		x->p += RR_XDR_UNIT;
		r = RR_HDR_OK;
	} else {
		r = decode_read_list(x, lim, pcl);
	}
	if (r == RR_HDR_OK)
		r = decode_write_list(x, lim, pcl);
	if (r == RR_HDR_OK)
		r = decode_reply_chunk(x, lim, pcl);
	return r;
}

/* The fixed part: xid, vers, credit, proc (RFC 8166 section 4.2). */
static enum rr_hdr_result decode_fixed(struct rr_xdr *x, size_t len, struct rr_pcl *pcl)
{
	pcl->n_read = 0;
	pcl->n_write = 0;
	pcl->has_reply = false;
	pcl->nsegs = 0;
	pcl->hdr_len = 0;
	if (len < RR_HDR_FIXED_LEN) {
		pcl->xid = len >= 4 ? rr_xdr_load32(x->p) : 0;
		pcl->vers = 0;
		pcl->credits = 0;
		pcl->proc = 0;
		return RR_HDR_SHORT;
	}
	pcl->xid = rr_xdr_load32(x->p);
	pcl->vers = rr_xdr_load32(x->p + 4);
	pcl->credits = rr_xdr_load32(x->p + 8);
	pcl->proc = rr_xdr_load32(x->p + 12);
	x->p += RR_HDR_FIXED_LEN;
	if (pcl->vers != RR_VERSION)
		return RR_HDR_BAD_VERS;
	return RR_HDR_OK;
}

enum rr_hdr_result rr_hdr_decode_call(const void *buf, size_t len,
				      const struct rr_hdr_limits *lim, struct rr_pcl *pcl)
{
	struct rr_xdr x;
	enum rr_hdr_result r;

	rr_xdr_init(&x, buf, len);
	r = decode_fixed(&x, len, pcl);
	if (r != RR_HDR_OK)
		return r;

	switch (pcl->proc) {
	case RR_PROC_MSG:
	case RR_PROC_NOMSG:
		break;
	case RR_PROC_MSGP:
		return RR_HDR_PROC_MSGP;
	case RR_PROC_DONE:
		return RR_HDR_PROC_DONE;
	case RR_PROC_ERROR:
		return RR_HDR_PROC_ERROR;
	default:
		return RR_HDR_PROC_UNKNOWN;
	}

	r = decode_lists(&x, lim, pcl);
	if (r != RR_HDR_OK)
		return r;
	pcl->hdr_len = (uint32_t)(len - rr_xdr_left(&x));

	/* RFC 8166 section 3.5.3: a Long Call's message is the Position-Zero chunk. */
	if (pcl->proc == RR_PROC_NOMSG && (pcl->n_read == 0 || pcl->read[0].position != 0))
		return RR_HDR_NOMSG_NO_CALL;
	if (pcl->proc == RR_PROC_MSG && pcl->n_read > 0 && pcl->read[0].position == 0)
		return RR_HDR_MSG_WITH_PZRC;
	return RR_HDR_OK;
}

enum rr_hdr_result rr_hdr_decode_reply(const void *buf, size_t len,
				       const struct rr_hdr_limits *lim, struct rr_pcl *pcl,
				       struct rr_reply_info *info)
{
	struct rr_xdr x;
	enum rr_hdr_result r;

	memset(info, 0, sizeof(*info));
	rr_xdr_init(&x, buf, len);
	r = decode_fixed(&x, len, pcl);
	info->xid = pcl->xid;
	info->vers = pcl->vers;
	info->credits = pcl->credits;
	info->proc = pcl->proc;
	if (r != RR_HDR_OK)
		return r;

	switch (pcl->proc) {
	case RR_PROC_MSG:
	case RR_PROC_NOMSG:
		r = decode_lists(&x, lim, pcl);
		if (r == RR_HDR_OK)
			pcl->hdr_len = (uint32_t)(len - rr_xdr_left(&x));
		return r;
	case RR_PROC_ERROR:
		if (!rr_xdr_get32(&x, &info->err))
			return RR_HDR_OVERRUN;
		if (info->err == RR_ERR_VERS &&
		    (!rr_xdr_get32(&x, &info->vers_low) || !rr_xdr_get32(&x, &info->vers_high)))
			return RR_HDR_OVERRUN;
		pcl->hdr_len = (uint32_t)(len - rr_xdr_left(&x));
		return RR_HDR_OK;
	case RR_PROC_MSGP:
		return RR_HDR_PROC_MSGP;
	case RR_PROC_DONE:
		return RR_HDR_PROC_DONE;
	default:
		return RR_HDR_PROC_UNKNOWN;
	}
}
