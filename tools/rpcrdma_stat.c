// SPDX-License-Identifier: MIT
/*
 * rpcrdma-stat: show the rpcrdma plugin's counters.
 *
 * The plugin's stats socket (RDMA { Stats_Socket }, default
 * /run/rpcrdma/stats.sock, root only) answers every connection with one JSON
 * object and closes it (rrp_stats.c):
 *   {"fabric":"..","server":{"listen":[..],"uptime_s":..,"settings":{..}},
 *    "global":{counters},"plugin":{counters,"workers":..},
 *    "connections":[{"peer":"..","nfs":"4.1","clientid":"..",counters..},..],
 *    "health":{..}}
 * (counters: src/rpcrdma/rr_counters.def, compiled in for --counters). This
 * tool prints it as a table of clients that fits 100 columns, or the
 * engine's counters (--wide), or raw (--json), or refreshed every N seconds
 * with per-second rates (--watch). The JSON is read with the small parser
 * below: no dependency beyond libc.
 *
 * --check is for monitors (Nagios-style exit codes), from the "health"
 * object: 0 RDMA served on every configured listener; 1 degraded (served,
 * but a configured listener is down, e.g. the IPv6 one); 2 not served (no
 * listener up: bad Listen_Addr, port in use, no RDMA device, device
 * removed) or the socket cannot be read. One line says why.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rpcrdma/rr_counters.def"

#define DEFAULT_SOCKET "/run/rpcrdma/stats.sock"
/* Bounds on what we accept from the socket. */
#define MAX_REPLY (16u << 20)
#define MAX_DEPTH 32

/* ---- a small JSON reader ---------------------------------------------- */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype type;
	char *key;	      /* member name when inside an object */
	char *str;	      /* J_STR */
	double num;	      /* J_NUM */
	unsigned long long u; /* J_NUM when a non-negative integer */
	bool is_uint, b;
	struct jval *child, *next; /* J_ARR / J_OBJ members, in order */
};

struct jparser {
	const char *p, *end;
	int depth;
};

static void jfree(struct jval *v)
{
	while (v) {
		struct jval *n = v->next;

		jfree(v->child);
		free(v->key);
		free(v->str);
		free(v);
		v = n;
	}
}

static void jskip_ws(struct jparser *jp)
{
	while (jp->p < jp->end &&
	       (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' || *jp->p == '\r'))
		jp->p++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A JSON string at jp->p (the opening quote) as a new C string (UTF-8). */
static char *jparse_string(struct jparser *jp)
{
	size_t cap = 16, n = 0;
	char *s;

	if (jp->p >= jp->end || *jp->p != '"')
		return NULL;
	jp->p++;
	s = malloc(cap);
	if (!s)
		return NULL;
	while (jp->p < jp->end && *jp->p != '"') {
		unsigned int c = (unsigned char)*jp->p++;

		if (c < 0x20)
			goto bad;
		if (c == '\\') {
			if (jp->p >= jp->end)
				goto bad;
			c = (unsigned char)*jp->p++;
			switch (c) {
			case '"':
			case '\\':
			case '/':
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'n':
				c = '\n';
				break;
			case 'r':
				c = '\r';
				break;
			case 't':
				c = '\t';
				break;
			case 'u':
				c = 0;
				for (int i = 0; i < 4; i++) {
					int h = jp->p < jp->end ? hexval(*jp->p++) : -1;

					if (h < 0)
						goto bad;
					c = c << 4 | (unsigned int)h;
				}
				break;
			default:
				goto bad;
			}
		}
		if (n + 4 >= cap) {
			char *t = realloc(s, cap *= 2);

			if (!t)
				goto bad;
			s = t;
		}
		if (c < 0x80) {
			s[n++] = (char)c;
		} else if (c < 0x800) { /* \u escapes only; raw bytes are < 0x100 */
			s[n++] = (char)(0xc0 | c >> 6);
			s[n++] = (char)(0x80 | (c & 0x3f));
		} else {
			s[n++] = (char)(0xe0 | c >> 12);
			s[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			s[n++] = (char)(0x80 | (c & 0x3f));
		}
	}
	if (jp->p >= jp->end)
		goto bad;
	jp->p++;
	s[n] = 0;
	return s;
bad:
	free(s);
	return NULL;
}

static struct jval *jparse_value(struct jparser *jp);

static struct jval *jparse_members(struct jparser *jp, struct jval *v, char close, bool named)
{
	struct jval **tail = &v->child;

	jp->p++;
	jskip_ws(jp);
	if (jp->p < jp->end && *jp->p == close) {
		jp->p++;
		return v;
	}
	for (;;) {
		char *key = NULL;
		struct jval *m;

		jskip_ws(jp);
		if (named) {
			key = jparse_string(jp);
			if (!key)
				return NULL;
			jskip_ws(jp);
			if (jp->p >= jp->end || *jp->p != ':') {
				free(key);
				return NULL;
			}
			jp->p++;
		}
		m = jparse_value(jp);
		if (!m) {
			free(key);
			return NULL;
		}
		m->key = key;
		*tail = m;
		tail = &m->next;
		jskip_ws(jp);
		if (jp->p < jp->end && *jp->p == ',') {
			jp->p++;
			continue;
		}
		if (jp->p < jp->end && *jp->p == close) {
			jp->p++;
			return v;
		}
		return NULL;
	}
}

static bool jmatch(struct jparser *jp, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(jp->end - jp->p) < n || memcmp(jp->p, word, n))
		return false;
	jp->p += n;
	return true;
}

static struct jval *jparse_value(struct jparser *jp)
{
	struct jval *v = calloc(1, sizeof(*v));
	bool ok = true;

	if (!v)
		return NULL;
	jskip_ws(jp);
	if (jp->p >= jp->end || ++jp->depth > MAX_DEPTH) {
		free(v);
		return NULL;
	}
	switch (*jp->p) {
	case '{':
		v->type = J_OBJ;
		ok = jparse_members(jp, v, '}', true) != NULL;
		break;
	case '[':
		v->type = J_ARR;
		ok = jparse_members(jp, v, ']', false) != NULL;
		break;
	case '"':
		v->type = J_STR;
		v->str = jparse_string(jp);
		ok = v->str != NULL;
		break;
	case 't':
		v->type = J_BOOL;
		v->b = true;
		ok = jmatch(jp, "true");
		break;
	case 'f':
		v->type = J_BOOL;
		ok = jmatch(jp, "false");
		break;
	case 'n':
		ok = jmatch(jp, "null");
		break;
	default: {
		const char *s = jp->p;
		char buf[64], *e;
		size_t n = 0;

		while (s + n < jp->end && n < sizeof(buf) - 1 && strchr("+-0123456789.eE", s[n]))
			n++;
		memcpy(buf, s, n);
		buf[n] = 0;
		v->type = J_NUM;
		if (n == 0 || n == sizeof(buf) - 1) {
			ok = false;
			break;
		}
		errno = 0;
		v->num = strtod(buf, &e);
		ok = *e == 0;
		if (ok && buf[0] != '-' && !strpbrk(buf, ".eE")) {
			v->u = strtoull(buf, &e, 10);
			v->is_uint = errno == 0 && *e == 0;
		}
		jp->p += n;
	}
	}
	jp->depth--;
	if (!ok) {
		jfree(v);
		return NULL;
	}
	return v;
}

static struct jval *jparse(const char *text, size_t len)
{
	struct jparser jp = {.p = text, .end = text + len};
	struct jval *v = jparse_value(&jp);

	jskip_ws(&jp);
	if (v && jp.p != jp.end) {
		jfree(v);
		return NULL;
	}
	return v;
}

static const struct jval *jget(const struct jval *obj, const char *key)
{
	if (!obj || obj->type != J_OBJ)
		return NULL;
	for (const struct jval *m = obj->child; m; m = m->next)
		if (!strcmp(m->key, key))
			return m;
	return NULL;
}

/* An unsigned counter, or false when absent or not a non-negative integer. */
static bool jcount(const struct jval *obj, const char *key, unsigned long long *out)
{
	const struct jval *v = jget(obj, key);

	if (!v || v->type != J_NUM || !v->is_uint)
		return false;
	*out = v->u;
	return true;
}

/* ---- the stats socket ------------------------------------------------- */

/* --check: fetch() keeps its complaint here for the one-line verdict. */
static bool check_mode;
static char fetch_err[256];

/* Read the whole answer; returns a malloc'd NUL-terminated buffer or NULL. */
static char *fetch(const char *path, size_t *len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t cap = 65536, n = 0;
	char *buf;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "rpcrdma-stat: socket path too long: %s\n", path);
		return NULL;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (check_mode && (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))) {
		snprintf(fetch_err, sizeof(fetch_err), "cannot connect to %s: %s", path,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (fd < 0 || (!check_mode && connect(fd, (struct sockaddr *)&sa, sizeof(sa)))) {
		fprintf(
		    stderr,
		    "rpcrdma-stat: cannot connect to %s: %s\n"
		    "  (is ganesha running with the rpcrdma plugin and RDMA { Stats_Socket } set? "
		    "The socket is root only.)\n",
		    path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc(cap + 1);
	while (buf) {
		ssize_t r;

		if (n == cap) {
			char *t = cap >= MAX_REPLY ? NULL : realloc(buf, cap * 2 + 1);

			if (!t) {
				fprintf(stderr, "rpcrdma-stat: answer from %s too large\n", path);
				free(buf);
				buf = NULL;
				break;
			}
			buf = t;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "rpcrdma-stat: read %s: %s\n", path, strerror(errno));
			free(buf);
			buf = NULL;
			break;
		}
		if (r == 0) {
			buf[n] = 0;
			*len = n;
			break;
		}
		n += (size_t)r;
	}
	close(fd);
	return buf;
}

/* ---- the table -------------------------------------------------------- */

/* The default view must fit this many columns (issue: an 80-100 column
 * terminal); --wide shows more counters and may not. */
#define TABLE_WIDTH 100

enum col_kind {
	C_COUNT,	/* a counter */
	C_BYTES,	/* a byte counter, shown with K/M/G */
	C_STR,		/* a string member ("nfs", "clientid") */
	C_SUM,		/* the sum of the counters named in field, '+' between */
};

struct column {
	const char *head;
	const char *field;
	enum col_kind kind;
	int width;
	bool rate; /* shown per second under --watch */
};

/*
 * The default view: one row per client. ERRS sums what went wrong for it:
 * ERR_CHUNK and ERR_VERS answers and messages dropped without an answer.
 */
static const struct column client_columns[] = {
    {"NFS", "nfs", C_STR, 3, false},
    {"CLIENTID", "clientid", C_STR, 16, false},
    {"CRED", "credit_grant", C_COUNT, 4, false},
    {"CALLS", "calls", C_COUNT, 7, true},
    {"BYTES_IN", "call_bytes", C_BYTES, 8, true},
    {"BYTES_OUT", "reply_bytes", C_BYTES, 9, true},
    {"RDMA_RD", "rdma_read_bytes", C_BYTES, 8, false},
    {"RDMA_WR", "rdma_write_bytes", C_BYTES, 8, false},
    {"ERRS", "err_chunk_sent+err_vers_sent+dropped", C_SUM, 6, false},
};

/* --wide: the engine's counters by Reply shape, as before. */
static const struct column wide_columns[] = {
    {"CREDITS", "credit_grant", C_COUNT, 9, false},
    {"CALLS", "calls", C_COUNT, 9, true},
    {"INLINE", "replies_inline", C_COUNT, 9, false},
    {"REPLY_CH", "replies_reply_chunk", C_COUNT, 9, false},
    {"WRITE_CH", "replies_write_chunk", C_COUNT, 9, false},
    {"RDMA_RD", "rdma_read_bytes", C_BYTES, 9, true},
    {"RDMA_WR", "rdma_write_bytes", C_BYTES, 9, true},
    {"ERR_CHUNK", "err_chunk_sent", C_COUNT, 9, false},
    {"ERR_VERS", "err_vers_sent", C_COUNT, 9, false},
    {"REGS", "registrations", C_COUNT, 9, false},
    {"RECV_MEM", "recv_mem_bytes", C_BYTES, 9, false},
    {"BC_CALLS", "bc_calls", C_COUNT, 9, false},
};
#define MAX_COLS 16
#define PEER_WIDTH 21
#define WIDE_PEER_WIDTH 24

struct view {
	const struct column *cols;
	size_t ncols;
	int peer_width;
};

static void fmt_bytes(char *out, size_t size, unsigned long long v)
{
	static const char units[] = "KMGTPE";
	double d = (double)v;
	int u = -1;

	if (v < 1024) {
		snprintf(out, size, "%llu", v);
		return;
	}
	while (d >= 1024 && u < 5) {
		d /= 1024;
		u++;
	}
	snprintf(out, size, d < 10 ? "%.1f%c" : "%.0f%c", d, units[u]);
}

/* @v in @width characters: whole when it fits, else in thousands (k M G T P E). */
static void fmt_count(char *out, size_t size, unsigned long long v, int width)
{
	static const char units[] = "kMGTPE";
	double d = (double)v;
	int u = -1;

	if (snprintf(out, size, "%llu", v) <= width)
		return;
	while (d >= 1000 && u < 5) {
		d /= 1000;
		u++;
	}
	snprintf(out, size, d < 10 ? "%.1f%c" : "%.0f%c", d, units[u]);
}

/* A column's counter value; false when the answer lacks it (or part of a sum). */
static bool col_value(const struct column *c, const struct jval *obj, unsigned long long *out)
{
	char name[64];
	const char *f = c->field;

	if (c->kind == C_STR)
		return false;
	if (c->kind != C_SUM)
		return jcount(obj, f, out);
	*out = 0;
	while (*f) {
		size_t n = strcspn(f, "+");
		unsigned long long v;

		snprintf(name, sizeof(name), "%.*s", (int)n, f);
		if (!jcount(obj, name, &v))
			return false;
		*out += v;
		f += n + (f[n] == '+');
	}
	return true;
}

static void fmt_cell(char *out, size_t size, const struct column *c, const struct jval *obj)
{
	unsigned long long v;

	if (c->kind == C_STR) {
		const struct jval *s = jget(obj, c->field);

		/* cut to the column: the default view must stay within TABLE_WIDTH */
		snprintf(out, size, "%.*s", c->width,
			 s && s->type == J_STR && s->str[0] ? s->str : "-");
	} else if (!col_value(c, obj, &v)) {
		snprintf(out, size, "-");
	} else if (c->kind == C_BYTES) {
		fmt_bytes(out, size, v);
	} else {
		fmt_count(out, size, v, c->width);
	}
}

/* Counters of the previous sample, for --watch rates. */
struct sample {
	char *peer; /* NULL for the global row */
	unsigned long long v[MAX_COLS];
	bool have[MAX_COLS];
};

struct history {
	struct sample *s;
	size_t n;
	double when;
};

static const struct sample *hist_find(const struct history *h, const char *peer)
{
	for (size_t i = 0; h && i < h->n; i++)
		if ((peer == NULL) == (h->s[i].peer == NULL) &&
		    (!peer || !strcmp(peer, h->s[i].peer)))
			return &h->s[i];
	return NULL;
}

static void hist_free(struct history *h)
{
	for (size_t i = 0; i < h->n; i++)
		free(h->s[i].peer);
	free(h->s);
	h->s = NULL;
	h->n = 0;
}

static void print_head(const struct view *vw, bool rates)
{
	printf("%-*s", vw->peer_width, "PEER");
	for (size_t i = 0; i < vw->ncols; i++) {
		const struct column *c = &vw->cols[i];

		if (c->kind == C_STR)
			printf(" %-*s", c->width, c->head);
		else
			printf(" %*s", c->width, c->head);
		if (rates && c->rate) {
			char h[32];

			snprintf(h, sizeof(h), "%s/s", c->head);
			printf(" %*s", c->width, h);
		}
	}
	printf("\n");
}

/* @rates: --watch columns; @dt: seconds since @prev (0: first sample). */
static void print_row(const struct view *vw, const char *label, const struct jval *obj,
		      bool rates, const struct sample *prev, double dt, struct sample *now)
{
	/* A peer wider than its column gets a line of its own (IPv6). */
	if ((int)strlen(label) > vw->peer_width)
		printf("%s\n%-*s", label, vw->peer_width, "");
	else
		printf("%-*s", vw->peer_width, label);
	for (size_t i = 0; i < vw->ncols; i++) {
		const struct column *c = &vw->cols[i];
		char cell[64];

		fmt_cell(cell, sizeof(cell), c, obj);
		if (c->kind == C_STR)
			printf(" %-*s", c->width, cell);
		else
			printf(" %*s", c->width, cell);
		now->have[i] = col_value(c, obj, &now->v[i]);
		if (!rates || !c->rate)
			continue;
		if (dt > 0 && prev && prev->have[i] && now->have[i] && now->v[i] >= prev->v[i]) {
			double r = (double)(now->v[i] - prev->v[i]) / dt;

			if (c->kind == C_BYTES)
				fmt_bytes(cell, sizeof(cell), (unsigned long long)(r + 0.5));
			else
				snprintf(cell, sizeof(cell), "%.0f", r);
		} else {
			snprintf(cell, sizeof(cell), "-");
		}
		printf(" %*s", c->width, cell);
	}
	printf("\n");
}

/* Header lines: items joined by ", ", wrapped before TABLE_WIDTH. */
struct words {
	int col;
	bool first;
};

static void words_start(struct words *w, const char *label)
{
	w->col = printf("%s", label);
	w->first = true;
}

static void words_add(struct words *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void words_add(struct words *w, const char *fmt, ...)
{
	char item[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(item, sizeof(item), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (!w->first && w->col + 2 + n > TABLE_WIDTH) {
		printf(",\n ");
		w->col = 1;
	} else if (!w->first) {
		w->col += printf(",");
	}
	w->col += printf(" %s", item);
	w->first = false;
}

static void words_end(struct words *w)
{
	(void)w;
	printf("\n");
}

static void fmt_uptime(char *out, size_t size, unsigned long long s)
{
	if (s >= 86400)
		snprintf(out, size, "%llud%02lluh%02llum", s / 86400, s / 3600 % 24, s / 60 % 60);
	else if (s >= 3600)
		snprintf(out, size, "%lluh%02llum%02llus", s / 3600, s / 60 % 60, s % 60);
	else if (s >= 60)
		snprintf(out, size, "%llum%02llus", s / 60, s % 60);
	else
		snprintf(out, size, "%llus", s);
}

/* What is served, and with what settings (the "server" object). */
static void print_server(const struct jval *root)
{
	const struct jval *fabric = jget(root, "fabric");
	const struct jval *srv = jget(root, "server");
	const struct jval *listen = jget(srv, "listen");
	const struct jval *set = jget(srv, "settings");
	const struct jval *h = jget(root, "health");
	const struct jval *serving = jget(h, "serving");
	const struct jval *why = jget(h, "why");
	unsigned long long v, v2;
	struct words w;
	char b[32];

	words_start(&w, "rpcrdma:");
	if (serving && serving->type == J_BOOL) {
		char on[256] = "";
		size_t n = 0;

		/* "serving on A and B" */
		if (listen && listen->type == J_ARR)
			for (const struct jval *l = listen->child; l && n < sizeof(on); l = l->next)
				if (l->type == J_STR)
					n += (size_t)snprintf(on + n, sizeof(on) - n, "%s%s",
							      n ? " and " : " on ", l->str);
		words_add(&w, "%s%s", serving->b ? "serving" : "NOT SERVING", on);
	}
	words_add(&w, "fabric %s", fabric && fabric->type == J_STR ? fabric->str : "?");
	if (jcount(srv, "uptime_s", &v)) {
		fmt_uptime(b, sizeof(b), v);
		words_add(&w, "up %s", b);
	}
	words_end(&w);
	if (serving && serving->type == J_BOOL && why && why->type == J_STR && why->str[0])
		printf("down: %s\n", why->str);
	if (set && set->type == J_OBJ) {
		const struct jval *srq = jget(set, "use_srq");

		const struct jval *dev = jget(set, "device");

		words_start(&w, "settings:");
		if (dev && dev->type == J_STR && dev->str[0])
			words_add(&w, "device %s", dev->str);
		if (jcount(set, "credits", &v) && jcount(set, "credits_cap", &v2))
			words_add(&w, "credits %llu (device holds %llu)", v, v2);
		else if (jcount(set, "credits", &v))
			words_add(&w, "credits %llu", v);
		if (jcount(set, "inline_size", &v))
			words_add(&w, "inline %llu", v);
		if (srq && srq->type == J_BOOL && srq->b && jcount(set, "srq_depth", &v))
			words_add(&w, "SRQ on (depth %llu)", v);
		else if (srq && srq->type == J_BOOL)
			words_add(&w, "SRQ off");
		if (jcount(set, "recv_mem_budget", &v)) {
			fmt_bytes(b, sizeof(b), v);
			words_add(&w, "budget %s", v ? b : "none");
		}
		/* caps: connections in all (per peer address; 0: no cap) */
		if (jcount(set, "max_connections", &v) &&
		    jcount(set, "max_connections_per_peer", &v2))
			words_add(&w, "conns %llu (%llu/peer)", v, v2);
		if (jcount(set, "max_rdma_read_depth", &v))
			words_add(&w, "read depth %llu", v);
		words_end(&w);
	}
}

static void print_table(const struct jval *root, struct history *hist, double now, bool watch,
			bool wide)
{
	static const struct view views[] = {
	    {client_columns, sizeof(client_columns) / sizeof(client_columns[0]), PEER_WIDTH},
	    {wide_columns, sizeof(wide_columns) / sizeof(wide_columns[0]), WIDE_PEER_WIDTH},
	};
	const struct view *vw = &views[wide];
	const struct jval *global = jget(root, "global");
	const struct jval *plugin = jget(root, "plugin");
	const struct jval *conns = jget(root, "connections");
	double dt = watch && hist->s ? now - hist->when : 0;
	struct history next = {0};
	unsigned long long v, v2;
	size_t nconn = 0;
	struct words w;

	if (conns && conns->type == J_ARR)
		for (const struct jval *c = conns->child; c; c = c->next)
			nconn++;
	print_server(root);
	words_start(&w, "connections:");
	words_add(&w, "%zu open", nconn);
	if (jcount(global, "conns_accepted", &v))
		words_add(&w, "%llu accepted", v);
	if (jcount(global, "conns_refused", &v)) {
		unsigned long long mem = 0;

		v2 = 0;
		jcount(global, "conns_refused_peer", &v2);
		jcount(global, "conns_refused_mem", &mem);
		words_add(&w, "%llu refused (peer cap %llu, budget %llu)", v, v2, mem);
	}
	if (jcount(global, "conns_failed", &v))
		words_add(&w, "%llu failed", v);
	if (jcount(global, "conns_timed_out", &v))
		words_add(&w, "%llu timed out", v);
	if (jcount(global, "disconnects", &v))
		words_add(&w, "%llu closed", v);
	words_end(&w);
	if (plugin && plugin->type == J_OBJ) {
		/* Whatever counters the plugin reports, in its order. */
		words_start(&w, "plugin:");
		for (const struct jval *m = plugin->child; m; m = m->next)
			if (m->type == J_NUM && m->is_uint) {
				/* one item per counter, no comma: "requests 100 dropped 0" */
				char num[24];
				int len = snprintf(num, sizeof(num), "%llu", m->u);

				if (w.col + 2 + (int)strlen(m->key) + len > TABLE_WIDTH) {
					printf("\n ");
					w.col = 1;
				}
				w.col += printf(" %s %llu", m->key, m->u);
			}
		words_end(&w);
	}
	printf("\n");
	print_head(vw, watch);

	next.s = calloc(nconn + 1, sizeof(*next.s));
	if (conns && conns->type == J_ARR && next.s) {
		for (const struct jval *c = conns->child; c; c = c->next) {
			const struct jval *peer = jget(c, "peer");
			const char *name = peer && peer->type == J_STR ? peer->str : "?";
			struct sample *s = &next.s[next.n++];

			s->peer = strdup(name);
			print_row(vw, name, c, watch, hist_find(hist, name), dt, s);
		}
	}
	if (next.s)
		print_row(vw, "TOTAL", global, watch, hist_find(hist, NULL), dt,
			  &next.s[next.n++]);
	hist_free(hist);
	*hist = next;
	hist->when = now;
}

/* ---- the counter list (rr_counters.def) --------------------------------- */

struct counter_doc {
	const char *name, *type, *scope, *kind, *meaning;
};

#define DOC_(a, name, type, scope, kind, meaning) {#name, #type, #scope, #kind, meaning},
static const struct counter_doc engine_doc[] = {RR_COUNTERS(DOC_, ~)};
static const struct counter_doc plugin_doc[] = {RRP_COUNTERS(DOC_, ~)};
static const struct counter_doc client_doc[] = {RRP_CONN_COUNTERS(DOC_, ~)};
#undef DOC_

static void print_doc(const char *title, const char *where, const struct counter_doc *d,
		      size_t n, bool md)
{
	if (md)
		printf("\n### %s\n\n%s\n\n| counter | scope | kind | meaning |\n|---|---|---|---|\n",
		       title, where);
	else
		printf("%s (%s):\n", title, where);
	for (size_t i = 0; i < n; i++)
		if (md)
			printf("| `%s` | %s | %s | %s |\n", d[i].name, d[i].scope, d[i].kind,
			       d[i].meaning);
		else
			printf("  %-24s %-7s %-10s %s\n", d[i].name, d[i].scope, d[i].kind,
			       d[i].meaning);
}

/* --counters: every counter with its meaning; --counters-md for docs/counters.md. */
static void print_counters(bool md)
{
#define N_(x) (sizeof(x) / sizeof(x[0]))
	print_doc("Engine", "JSON \"global\" and each of \"connections\"", engine_doc,
		  N_(engine_doc), md);
	print_doc("Plugin", "JSON \"plugin\"", plugin_doc, N_(plugin_doc), md);
	print_doc("Per client", "JSON \"connections\" only", client_doc, N_(client_doc), md);
#undef N_
}

static double monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * --check: one line and the exit status monitors expect (0 OK, 1 WARNING,
 * 2 CRITICAL). @text is NULL when the socket could not be read.
 */
static int check(const char *path, const char *text, size_t len)
{
	struct jval *root = text ? jparse(text, len) : NULL;
	const struct jval *h = jget(root, "health");
	const struct jval *serving = jget(h, "serving");
	const struct jval *why = jget(h, "why");
	unsigned long long want = 1, up = 0;
	int status;

	if (!text) {
		printf("RDMA CRITICAL: stats socket unreachable: %s\n", fetch_err);
		return 2;
	}
	if (!serving || serving->type != J_BOOL) {
		printf("RDMA CRITICAL: %s gave no health (plugin too old, or not its socket)\n",
		       path);
		jfree(root);
		return 2;
	}
	jcount(h, "listeners", &want);
	jcount(h, "listeners_serving", &up);
	if (!serving->b) {
		printf("RDMA CRITICAL: not serving: %s\n",
		       why && why->type == J_STR && why->str[0] ? why->str : "no listener up");
		status = 2;
	} else if (up < want) {
		printf("RDMA WARNING: degraded: %llu of %llu listeners up: %s\n", up, want,
		       why && why->type == J_STR ? why->str : "");
		status = 1;
	} else {
		const struct jval *conns = jget(root, "connections");
		unsigned long n = 0;

		for (const struct jval *c = conns ? conns->child : NULL; c; c = c->next)
			n++;
		printf("RDMA OK: serving on %llu listener(s), %lu connection(s)\n", up, n);
		status = 0;
	}
	jfree(root);
	return status;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rpcrdma-stat [-s SOCKET] [--json | --check | --wide] [--watch [SECONDS]]\n"
		"                    [-c COUNT] | --counters | --counters-md\n"
		"Show the rpcrdma plugin (NFS over RDMA for nfs-ganesha): what it serves, with\n"
		"which settings, since when, and one row per connected client.\n"
		"  -s, --socket PATH   stats socket (default " DEFAULT_SOCKET ")\n"
		"  -j, --json          print the raw JSON (for machines)\n"
		"  -l, --wide          the engine's counters by Reply shape (wider than 100)\n"
		"  -k, --check         health for monitors: one line, and exit 0 when RDMA is\n"
		"                      served on every configured listener; 1 degraded (served,\n"
		"                      but a configured listener is down, e.g. IPv6); 2 not\n"
		"                      served (listener down: bad Listen_Addr, port in use, no\n"
		"                      RDMA device, device removed) or the socket unreachable\n"
		"  -w, --watch [SECS]  refresh every SECS seconds (default 1), with rates\n"
		"  -c, --count N       with --watch: stop after N refreshes\n"
		"      --counters      list every counter with its meaning (--counters-md: as\n"
		"                      the Markdown of docs/counters.md)\n"
		"Client columns: NFS version (3, 4.0, 4.1, 4.2) of its last Call; CLIENTID\n"
		"(NFSv4.1+: ganesha's clientid, hex, from the session its SEQUENCE names);\n"
		"CRED credits granted; CALLS; BYTES_IN / BYTES_OUT bytes of Calls and Replies;\n"
		"RDMA_RD / RDMA_WR bytes moved by RDMA Read / Write; ERRS RDMA_ERROR answers\n"
		"sent and messages dropped. TOTAL is the server-wide row.\n"
		"--wide columns: CREDITS; CALLS; INLINE / REPLY_CH / WRITE_CH replies sent\n"
		"inline, through a Reply chunk, with Write-chunk payload; RDMA_RD / RDMA_WR;\n"
		"ERR_CHUNK / ERR_VERS errors sent; REGS memory registrations; RECV_MEM\n"
		"registered receive memory; BC_CALLS backchannel (callback) calls sent.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"socket", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
	    {"watch", optional_argument, NULL, 'w'},  {"count", required_argument, NULL, 'c'},
	    {"check", no_argument, NULL, 'k'},	      {"wide", no_argument, NULL, 'l'},
	    {"counters", no_argument, NULL, 'C'},     {"counters-md", no_argument, NULL, 'M'},
	    {"help", no_argument, NULL, 'h'},	      {NULL, 0, NULL, 0},
	};
	const char *path = DEFAULT_SOCKET;
	struct history hist = {0};
	bool json = false, watch = false, wide = false;
	double interval = 1;
	long count = -1;
	int opt, status = 0;

	while ((opt = getopt_long(argc, argv, "s:jklw::c:h", opts, NULL)) != -1) {
		char *e;

		switch (opt) {
		case 'k':
			check_mode = true;
			break;
		case 'l':
			wide = true;
			break;
		case 'C':
		case 'M':
			print_counters(opt == 'M');
			return 0;
		case 's':
			path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'w':
			watch = true;
			/* "--watch 2": take a following number as the interval. */
			if (!optarg && optind < argc && argv[optind][0] >= '0' &&
			    argv[optind][0] <= '9')
				optarg = argv[optind++];
			if (optarg) {
				interval = strtod(optarg, &e);
				if (*e || interval <= 0 || interval > 86400) {
					fprintf(stderr, "rpcrdma-stat: bad interval: %s\n", optarg);
					return 2;
				}
			}
			break;
		case 'c':
			count = strtol(optarg, &e, 10);
			if (*e || count < 1) {
				fprintf(stderr, "rpcrdma-stat: bad count: %s\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (check_mode) {
		size_t len = 0;
		char *text = fetch(path, &len);
		int st = check(path, text, len);

		free(text);
		return st;
	}
	if (!watch)
		count = 1;
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);

	for (long n = 0; count < 0 || n < count; n++) {
		size_t len = 0;
		char *text = fetch(path, &len);
		struct jval *root;

		if (!text) {
			status = 1;
			break;
		}
		root = jparse(text, len);
		if (!root || root->type != J_OBJ) {
			fprintf(stderr, "rpcrdma-stat: %s did not answer with a JSON object\n",
				path);
			jfree(root);
			free(text);
			status = 1;
			break;
		}
		if (watch && isatty(STDOUT_FILENO))
			printf("\033[H\033[2J");
		if (json) {
			fputs(text, stdout);
			if (len == 0 || text[len - 1] != '\n')
				putchar('\n');
		} else {
			print_table(root, &hist, monotonic(), watch, wide);
		}
		if (watch && !json && count != 1)
			printf("\n");
		fflush(stdout);
		jfree(root);
		free(text);
		if (count < 0 || n + 1 < count)
			if (watch) {
				struct timespec ts = {
				    .tv_sec = (time_t)interval,
				    .tv_nsec = (long)((interval - (double)(time_t)interval) * 1e9)};

				while (nanosleep(&ts, &ts) && errno == EINTR)
					;
			}
	}
	hist_free(&hist);
	return status;
}
