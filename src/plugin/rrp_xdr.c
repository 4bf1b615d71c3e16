// SPDX-License-Identifier: MIT
/*
 * rrp_xdr.c - XDR streams of our own for ntirpc: decode in place over the
 * transport's iovecs, encode with READ payloads kept by reference.
 *
 * ntirpc's inline helpers (xdr_getuint32, XDR_INLINE, ...) read and write
 * through x_data up to x_v.vio_tail (decode) or x_v.vio_wrap (encode) and
 * only call the ops below when the current buffer cannot satisfy them, so
 * x_data / x_v / x_base always describe the current buffer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/rrp_host.h"
#include "plugin/rrp_xdr.h"

/* The current buffer, as ntirpc's inline paths see it: x_v, which x_base
 * (XDR_VIO) points at too, so the two can never disagree. */
static void set_vio(XDR *x, uint8_t *base, size_t len, size_t cap)
{
	x->x_v.vio_base = base;
	x->x_v.vio_head = base;
	x->x_v.vio_tail = base + len;
	x->x_v.vio_wrap = base + cap;
	x->x_v.vio_length = (uint32_t)cap;
	x->x_v.vio_type = VIO_DATA;
	x->x_base = &x->x_v;
}

/*
 * @n bytes, @w <= n <= 2w, as two fixed-size moves of @w that overlap in
 * the middle: both loaded before either is stored. Always inlined with a
 * constant @w, so each is a register or vector move, not a memcpy call.
 */
static inline __attribute__((always_inline)) void copy_two_ends(uint8_t *d, const uint8_t *s,
								 size_t n, size_t w)
{
	uint8_t a[16], b[16];

	memcpy(a, s, w);
	memcpy(b, s + n - w, w);
	memcpy(d, a, w);
	memcpy(d + n - w, b, w);
}

/*
 * ganesha's XDR moves many short opaques (NFSv4 session ids, stateids,
 * verifiers, handles) through getbytes/putbytes: up to 32 bytes are copied
 * here with fixed-size moves, the rest by memcpy.
 */
static inline void copy_bytes(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	if (n > 32)
		memcpy(d, s, n);
	else if (n >= 16)
		copy_two_ends(d, s, n, 16);
	else if (n >= 8)
		copy_two_ends(d, s, n, 8);
	else if (n >= 4)
		copy_two_ends(d, s, n, 4);
	else
		for (size_t i = 0; i < n; i++)
			d[i] = s[i];
}

/* A stream's XDR header, each field set once (set_vio fills x_v, x_base and
 * x_data after): a memset of it compiles to a rep stos of 13 words. */
static void xdr_header(XDR *x, enum xdr_op op, const struct xdr_ops *ops)
{
	x->x_ops = ops;
	x->x_public = NULL;
	x->x_private = NULL;
	x->x_lib[0] = NULL;
	x->x_lib[1] = NULL;
	x->x_handy = 0;
	x->x_flags = 0;
	x->x_op = op;
}

/* ---- decode ---------------------------------------------------------- */

static struct rrp_xdr_dec *DEC(XDR *x)
{
	return (struct rrp_xdr_dec *)x;
}

static void dec_select(struct rrp_xdr_dec *d, int i, size_t off)
{
	uint8_t *b = d->iov[i].iov_base;

	d->cur = i;
	set_vio(&d->xdrs, b, d->iov[i].iov_len, d->iov[i].iov_len);
	d->xdrs.x_data = b + off;
}

/* Step past exhausted iovecs so that an item starting a new iovec can be
 * taken in place (XDR_INLINE) instead of copied. */
static void dec_settle(struct rrp_xdr_dec *d)
{
	while (d->xdrs.x_data >= d->xdrs.x_v.vio_tail && d->cur + 1 < d->iovcnt)
		dec_select(d, d->cur + 1, 0);
}

static __attribute__((noinline)) bool dec_getbytes_slow(XDR *x, char *buf, u_int n);

/* The usual case, kept free of calls: a copy out of the current iovec that
 * leaves bytes in it (so nothing to settle). */
static bool dec_getbytes(XDR *x, char *buf, u_int n)
{
	const uint8_t *src = x->x_data;

	if (__builtin_expect((size_t)(x->x_v.vio_tail - src) <= n, 0))
		return dec_getbytes_slow(x, buf, n);
	if (__builtin_expect(buf == (const char *)src, 0))
		return dec_getbytes_slow(x, buf, n);
	x->x_data = (uint8_t *)src + n;
	DEC(x)->copied += n;
	copy_bytes(buf, src, n);
	return true;
}

static bool dec_getbytes_slow(XDR *x, char *buf, u_int n)
{
	struct rrp_xdr_dec *d = DEC(x);

	if (x->x_data == x->x_v.vio_tail)
		dec_settle(d);
	/* All in this iovec (almost always): in place when the destination is
	 * the data itself (a lent chunk, rrp_payload.c), else one copy. */
	if ((size_t)(x->x_v.vio_tail - x->x_data) >= n) {
		if (buf == (char *)x->x_data) {
			d->in_place += n;
		} else {
			memcpy(buf, x->x_data, n);
			d->copied += n;
		}
		x->x_data += n;
		if (x->x_data == x->x_v.vio_tail)
			dec_settle(d);
		return true;
	}
	while (n) {
		size_t left;

		dec_settle(d);
		left = (size_t)(x->x_v.vio_tail - x->x_data);
		if (left == 0)
			return false;
		if (left > n)
			left = n;
		memcpy(buf, x->x_data, left);
		d->copied += left;
		x->x_data += left;
		buf += left;
		n -= (u_int)left;
	}
	dec_settle(d);
	return true;
}

static bool dec_getunit(XDR *x, uint32_t *v)
{
	uint32_t be;

	if (!dec_getbytes(x, (char *)&be, sizeof(be)))
		return false;
	*v = ntohl(be);
	return true;
}

static u_int dec_getpostn(XDR *x)
{
	struct rrp_xdr_dec *d = DEC(x);

	return d->start[d->cur] + (u_int)(x->x_data - x->x_v.vio_base);
}

/* The last iovec starting at or before @pos; the iovecs tile the stream in
 * order, so the search starts at the current one when it can (a SETPOS
 * after a data item is almost always a step forward). */
static int dec_last_at_or_before(const struct rrp_xdr_dec *d, u_int pos)
{
	int i = pos >= d->start[d->cur] ? d->cur : 0;

	while (i + 1 < d->iovcnt && d->start[i + 1] <= pos)
		i++;
	return i;
}

static bool dec_setpostn(XDR *x, u_int pos)
{
	struct rrp_xdr_dec *d = DEC(x);
	int i = dec_last_at_or_before(d, pos);

	if (pos < d->start[i] || pos - d->start[i] > d->iov[i].iov_len)
		return false;
	dec_select(d, i, pos - d->start[i]);
	dec_settle(d);
	return true;
}

static void dec_destroy(XDR *x)
{
	struct rrp_xdr_dec *d = DEC(x);

	if (d->destroy)
		d->destroy(d);
}

static bool no_put(XDR *x, const uint32_t v)
{
	(void)x;
	(void)v;
	return false;
}

static bool no_putbytes(XDR *x, const char *b, u_int n)
{
	(void)x;
	(void)b;
	(void)n;
	return false;
}

static bool no_control(XDR *x, int req, void *info)
{
	(void)x;
	(void)req;
	(void)info;
	return false;
}

static bool no_bufs(XDR *x, xdr_uio *uio, u_int flags)
{
	(void)x;
	(void)uio;
	(void)flags;
	return false;
}

static bool no_newbuf(XDR *x)
{
	(void)x;
	return false;
}

/*
 * Data by position: a host whose ntirpc has xdr_ops calls for it (the host
 * adapter's dec_ops adds them) asks the stream how many buffers hold a
 * Call's data and takes those buffers in place: a Read chunk's sink is one
 * of our iovecs at the chunk's position, so the data stays where the RDMA
 * Read put it.
 */
/* The iovec holding stream offset @pos (a later one at a boundary), or -1.
 * The first such iovec at or after one starting at or before @pos is the
 * first overall (the iovecs tile the stream in order): the search starts at
 * the current iovec when it can, since data is asked for where the stream
 * stands. */
static int dec_iov_at(const struct rrp_xdr_dec *d, u_int pos)
{
	for (int i = pos >= d->start[d->cur] ? d->cur : 0; i < d->iovcnt; i++)
		if (pos >= d->start[i] && pos - d->start[i] < d->iov[i].iov_len)
			return i;
	return -1;
}

/*
 * How many buffers hold @len bytes from @start (ntirpc: x_iovcount). 0 when
 * the stream holds fewer: ntirpc answers -1, which ganesha takes as a count
 * over IOV_MAX and answers with a buffer of the client's data length; 0
 * makes the FILLBUFS below fail instead, and the Call is GARBAGE_ARGS.
 */
static int dec_iovcount(XDR *x, u_int start, u_int len)
{
	struct rrp_xdr_dec *d = DEC(x);
	int i = dec_iov_at(d, start), n = 0;
	u_int off;

	/* past the iovec found, the stream holds d->end - start bytes */
	if (i < 0 || len > d->end - start)
		return 0;
	for (off = start - d->start[i]; len; i++, off = 0) {
		size_t here = d->iov[i].iov_len - off;

		if (!here)
			continue;
		n++;
		len -= here < len ? (u_int)here : len;
	}
	return n;
}

/* Those buffers, in place (ntirpc: x_fillbufs): @vio has room for what
 * x_iovcount said; nothing is written unless all @len bytes are there. */
static bool dec_fillbufs(XDR *x, u_int start, xdr_vio *vio, u_int len)
{
	struct rrp_xdr_dec *d = DEC(x);
	int i;
	u_int off;

	if (len == 0)
		return true;
	i = dec_iov_at(d, start);
	if (i < 0 || len > d->end - start)
		return false;
	for (off = start - d->start[i]; len; i++, off = 0) {
		uint8_t *b = (uint8_t *)d->iov[i].iov_base + off;
		size_t here = d->iov[i].iov_len - off;

		if (!here)
			continue;
		if (here > len)
			here = len;
		vio->vio_base = b;
		vio->vio_head = b;
		vio->vio_tail = b + here;
		vio->vio_wrap = b + here;
		vio->vio_length = (uint32_t)here;
		vio->vio_type = VIO_DATA;
		vio++;
		d->in_place += here;
		len -= (u_int)here;
	}
	return true;
}

static int no_iovcount(XDR *x, u_int a, u_int b)
{
	(void)x;
	(void)a;
	(void)b;
	return -1;
}

static bool no_fillbufs(XDR *x, u_int a, xdr_vio *v, u_int b)
{
	(void)x;
	(void)a;
	(void)v;
	(void)b;
	return false;
}

static bool no_allochdrs(XDR *x, u_int a, xdr_vio *v, int b)
{
	(void)x;
	(void)a;
	(void)v;
	(void)b;
	return false;
}

static struct xdr_ops dec_ops = {
	.x_getunit = dec_getunit,
	.x_putunit = no_put,
	.x_getbytes = dec_getbytes,
	.x_putbytes = no_putbytes,
	.x_getpostn = dec_getpostn,
	.x_setpostn = dec_setpostn,
	.x_destroy = dec_destroy,
	.x_control = no_control,
	.x_getbufs = no_bufs,
	.x_putbufs = no_bufs,
	.x_newbuf = no_newbuf,
	.x_iovcount = dec_iovcount,
	.x_fillbufs = dec_fillbufs,
	.x_allochdrs = no_allochdrs,
};

/* The members the host's ntirpc adds (rrp_host.h), before any stream opens:
 * at load, as the table of a static library is. */
__attribute__((constructor)) static void dec_ops_host(void)
{
	if (rrp_host_ops.dec_ops)
		rrp_host_ops.dec_ops(&dec_ops);
}

bool rrp_xdr_dec_at(void *dec, const void *addr)
{
	struct rrp_xdr_dec *d = dec;
	const uint8_t *x = d->xdrs.x_data;

	if (x == addr)
		return true;
	/* Inline fast paths leave x_data at the end of an iovec, unsettled. */
	return x == d->xdrs.x_v.vio_tail && d->cur + 1 < d->iovcnt &&
	       d->iov[d->cur + 1].iov_base == addr;
}

void rrp_xdr_dec_init(struct rrp_xdr_dec *d, const struct iovec *iov, int iovcnt)
{
	static const uint8_t empty[4];
	static const struct iovec none = {(void *)empty, 0};
	u_int off = 0;

	xdr_header(&d->xdrs, XDR_DECODE, &dec_ops);
	if (iovcnt <= 0) {
		iov = &none;
		iovcnt = 1;
	}
	if (iovcnt > RRP_DEC_MAX_IOV)
		iovcnt = RRP_DEC_MAX_IOV;
	d->iov = iov;
	d->iovcnt = iovcnt;
	d->copied = 0;
	d->in_place = 0;
	for (int i = 0; i < iovcnt; i++) {
		d->start[i] = off;
		off += (u_int)iov[i].iov_len;
	}
	d->end = off;
	d->cur = 0;
	dec_select(d, 0, 0);
	dec_settle(d);
}

/* ---- encode ---------------------------------------------------------- */

/*
 * Encode buffers are recycled: a Reply's buffers live until its Send
 * completes, then come back here, so steady state allocates nothing.
 */
#define ENC_CACHE_MAX 512

static pthread_mutex_t enc_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static void *enc_cache[ENC_CACHE_MAX];
static unsigned int enc_cached;

static void *enc_buf_get(void)
{
	void *b = NULL;

	pthread_mutex_lock(&enc_cache_lock);
	if (enc_cached)
		b = enc_cache[--enc_cached];
	pthread_mutex_unlock(&enc_cache_lock);
	return b ? b : malloc(RRP_ENC_BUF);
}

static void enc_buf_put(void *b)
{
	pthread_mutex_lock(&enc_cache_lock);
	if (enc_cached < ENC_CACHE_MAX) {
		enc_cache[enc_cached++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&enc_cache_lock);
	free(b);
}

static struct rrp_xdr_enc *ENC(XDR *x)
{
	return (struct rrp_xdr_enc *)x;
}

/* Make @base (@cap bytes) the current segment; @owned: ours to give back. */
static void enc_open_seg(XDR *x, uint8_t *base, size_t cap, bool owned)
{
	struct rrp_xdr_enc *e = ENC(x);
	struct rrp_enc_seg *s = &e->seg[e->nseg++];

	s->base = base;
	s->cap = cap;
	s->len = 0;
	s->owned = owned;
	s->uio = NULL;
	set_vio(x, base, 0, cap);
	x->x_data = base;
}

/* Close the current own buffer at x_data; open a new one. */
static bool enc_newbuf(XDR *x)
{
	struct rrp_xdr_enc *e = ENC(x);
	void *b;

	if (e->nseg > 0 && e->seg[e->nseg - 1].cap)
		e->seg[e->nseg - 1].len = (size_t)(x->x_data - e->seg[e->nseg - 1].base);
	if (e->nseg >= RRP_ENC_MAX_SEG) {
		e->failed = true;
		return false;
	}
	b = e->nkeep ? e->keep[--e->nkeep] : enc_buf_get();
	if (!b) {
		e->failed = true;
		return false;
	}
	enc_open_seg(x, b, RRP_ENC_BUF, true);
	return true;
}

static __attribute__((noinline)) bool enc_putbytes_slow(XDR *x, const char *buf, u_int n);

/* The usual case, kept free of calls but the copy: room in the buffer. */
static bool enc_putbytes(XDR *x, const char *buf, u_int n)
{
	uint8_t *dst = x->x_data;

	if (__builtin_expect((size_t)(x->x_v.vio_wrap - dst) >= n, 1)) {
		x->x_data = dst + n;
		copy_bytes(dst, buf, n);
		return true;
	}
	return enc_putbytes_slow(x, buf, n);
}

static bool enc_putbytes_slow(XDR *x, const char *buf, u_int n)
{
	while (n) {
		size_t room = (size_t)(x->x_v.vio_wrap - x->x_data);

		if (room == 0) {
			if (!enc_newbuf(x))
				return false;
			continue;
		}
		if (room > n)
			room = n;
		memcpy(x->x_data, buf, room);
		x->x_data += room;
		buf += room;
		n -= (u_int)room;
	}
	return true;
}

static bool enc_putunit(XDR *x, const uint32_t v)
{
	uint32_t be = htonl(v);

	return enc_putbytes(x, (const char *)&be, sizeof(be));
}

static u_int enc_getpostn(XDR *x)
{
	struct rrp_xdr_enc *e = ENC(x);
	u_int pos = 0;

	for (int i = 0; i < e->nseg - 1; i++)
		pos += (u_int)e->seg[i].len;
	return pos + (u_int)(x->x_data - e->seg[e->nseg - 1].base);
}

/* Only repositioning inside the current buffer is supported (ntirpc uses it
 * to back-patch a length written moments before). */
static bool enc_setpostn(XDR *x, u_int pos)
{
	struct rrp_xdr_enc *e = ENC(x);
	u_int before = enc_getpostn(x) - (u_int)(x->x_data - e->seg[e->nseg - 1].base);

	if (pos < before || pos - before > e->seg[e->nseg - 1].cap)
		return false;
	x->x_data = e->seg[e->nseg - 1].base + (pos - before);
	return true;
}

/* What is left of a buffer worth going on in after a payload (its pad and
 * the rest of the Reply) rather than opening another. */
#define ENC_TAIL_MIN 256

/*
 * A host that splits a payload's tail (rrp_host_ops.enc_split_tail) puts a
 * payload whose length is not a multiple of 4 as the FSAL's buffers less the
 * last len % 4 bytes, then a 4-byte buffer of its own holding those bytes and
 * the zero pad: the room right after the uio's vio array. That buffer is not
 * registered, so the payload's Write chunk would be bounced whole. The bytes
 * are still in the FSAL's buffer, just past the previous vio (they were
 * copied out of it): when that shape is what @uio holds, the previous
 * segment takes them back and the last one keeps only the pad. The byte
 * stream is the same.
 */
static void enc_untrim(const struct rrp_enc_seg *before, xdr_uio *uio, struct rrp_enc_seg *seg)
{
	const xdr_vio *last, *prev;
	uint32_t be, len, n;
	uint64_t sum = 0;

	if (uio->uio_count < 2 || before->len < sizeof(be))
		return;
	last = &uio->uio_vio[uio->uio_count - 1];
	prev = last - 1;
	if (last->vio_head != (uint8_t *)&uio->uio_vio[uio->uio_count] ||
	    last->vio_tail - last->vio_head != BYTES_PER_XDR_UNIT)
		return;
	/* the opaque's length, encoded just before the data */
	memcpy(&be, before->base + before->len - sizeof(be), sizeof(be));
	len = ntohl(be);
	n = len % BYTES_PER_XDR_UNIT;
	for (u_int i = 0; i + 1 < uio->uio_count; i++)
		sum += (uint64_t)(uio->uio_vio[i].vio_tail - uio->uio_vio[i].vio_head);
	if (!n || sum != len - n || memcmp(prev->vio_tail, last->vio_head, n))
		return;
	seg[0].len += n;
	seg[1].base += n;
	seg[1].len -= n;
}

/*
 * putbufs refused @uio. ganesha makes a uio with no reference (calloc) and,
 * when putbufs fails, releases it once and gives up the Reply
 * (xdr_READ4resok_encode, xdr_READ3resok_encode, xdr_dirlist*,
 * xdr_io_data_encode): the caller gets exactly one reference, whatever the
 * segments took (each released with the stream, enc_release). So the uio
 * and its READ buffer are freed once, when the last of those goes.
 */
static bool enc_putbufs_refused(struct rrp_xdr_enc *e, xdr_uio *uio)
{
	e->failed = true;
	uio->uio_references++;
	return false;
}

/* READ data by reference: one segment per vio, released with the reply.
 * Encoding then goes on in the rest of the buffer it interrupted. */
static bool enc_putbufs(XDR *x, xdr_uio *uio, u_int flags)
{
	struct rrp_xdr_enc *e = ENC(x);
	struct rrp_enc_seg *before = &e->seg[e->nseg - 1];
	uint8_t *tail;
	size_t left;

	(void)flags;
	/* Room for every vio and for the segment encoding goes on in, found
	 * before any reference is taken: a COMPOUND of many READs fills the
	 * table (two segments each), and the Reply is then given up whole. */
	if (e->failed || (size_t)e->nseg + uio->uio_count + 1 > RRP_ENC_MAX_SEG)
		return enc_putbufs_refused(e, uio);
	if (!e->ref_at)
		e->ref_at = enc_getpostn(x);
	before->len = (size_t)(x->x_data - before->base);
	tail = before->base + before->len;
	left = before->cap - before->len;
	for (size_t i = 0; i < uio->uio_count; i++) {
		xdr_vio *v = &uio->uio_vio[i];
		struct rrp_enc_seg *s = &e->seg[e->nseg++];

		s->base = v->vio_head;
		s->len = (size_t)(v->vio_tail - v->vio_head);
		s->cap = 0;
		s->owned = false;
		s->uio = uio;
		uio->uio_references++;
	}
	if (rrp_host_ops.enc_split_tail && uio->uio_count >= 2)
		enc_untrim(before, uio, &e->seg[e->nseg - 2]);
	if (left >= ENC_TAIL_MIN) {
		enc_open_seg(x, tail, left, false);
		return true;
	}
	/* No buffer for the rest (out of memory): the segments keep theirs. */
	return enc_newbuf(x) || enc_putbufs_refused(e, uio);
}

static void enc_destroy(XDR *x)
{
	(void)x; /* rrp_xdr_enc_fini releases; the reply owns the buffers */
}

static const struct xdr_ops enc_ops = {
	.x_getunit = NULL,
	.x_putunit = enc_putunit,
	.x_getbytes = NULL,
	.x_putbytes = enc_putbytes,
	.x_getpostn = enc_getpostn,
	.x_setpostn = enc_setpostn,
	.x_destroy = enc_destroy,
	.x_control = no_control,
	.x_getbufs = no_bufs,
	.x_putbufs = enc_putbufs,
	.x_newbuf = enc_newbuf,
	.x_iovcount = no_iovcount,
	.x_fillbufs = no_fillbufs,
	.x_allochdrs = no_allochdrs,
};

/* An empty stream; its buffers come from @e->keep while there are any. Only the
 * header is cleared: segments are written before they are read. */
static int enc_open(struct rrp_xdr_enc *e)
{
	xdr_header(&e->xdrs, XDR_ENCODE, &enc_ops);
	e->nseg = 0;
	e->failed = false;
	e->ref_at = 0;
	if (!enc_newbuf(&e->xdrs)) {
		/* no current buffer: nothing for ntirpc's inline paths */
		memset(&e->xdrs.x_v, 0, sizeof(e->xdrs.x_v));
		e->xdrs.x_base = NULL;
		e->xdrs.x_data = NULL;
		return -ENOMEM;
	}
	return 0;
}

int rrp_xdr_enc_init(struct rrp_xdr_enc *e)
{
	e->nkeep = 0;
	return enc_open(e);
}

int rrp_xdr_enc_iov(struct rrp_xdr_enc *e, struct iovec *iov)
{
	int n = 0;

	e->seg[e->nseg - 1].len = (size_t)(e->xdrs.x_data - e->seg[e->nseg - 1].base);
	for (int i = 0; i < e->nseg; i++) {
		if (e->seg[i].len == 0)
			continue;
		iov[n].iov_base = e->seg[i].base;
		iov[n].iov_len = e->seg[i].len;
		n++;
	}
	return n;
}

/* Give back what the stream holds; with @keep, up to RRP_ENC_KEEP own
 * buffers stay in e->keep for the next stream (in the order they were used). */
static void enc_release(struct rrp_xdr_enc *e, bool keep)
{
	/* Most Replies: one buffer of ours, kept for the next stream. */
	if (e->nseg == 1 && e->seg[0].owned && keep && e->nkeep < RRP_ENC_KEEP) {
		e->keep[e->nkeep++] = e->seg[0].base;
		e->nseg = 0;
		return;
	}
	for (int i = e->nseg - 1; i >= 0; i--) {
		struct rrp_enc_seg *s = &e->seg[i];

		if (s->owned && keep && e->nkeep < RRP_ENC_KEEP)
			e->keep[e->nkeep++] = s->base;
		else if (s->owned)
			enc_buf_put(s->base);
		else if (s->uio && s->uio->uio_release)
			/* a referenced vio (only those have a uio): one release
			 * each, as ntirpc's ioq does */
			s->uio->uio_release(s->uio, UIO_FLAG_NONE);
	}
	e->nseg = 0;
}

void rrp_xdr_enc_fini(struct rrp_xdr_enc *e)
{
	enc_release(e, false);
	while (e->nkeep)
		enc_buf_put(e->keep[--e->nkeep]);
}

int rrp_xdr_enc_recycle(struct rrp_xdr_enc *e)
{
	enc_release(e, true);
	return enc_open(e);
}
