// SPDX-License-Identifier: MIT
/*
 * rpcrdma-stat: show the rpcrdma plugin's counters.
 *
 * The plugin's stats socket (RDMA { Stats_Socket }, default
 * /run/rpcrdma/stats.sock, root only) answers every connection with one JSON
 * object and closes it:
 *   {"fabric":"..","global":{counters},"plugin":{requests,dropped,
 *    replies_failed,workers},"connections":[{"peer":"..",counters..},..]}
 * (counters: RR_STATS_FIELDS in src/rpcrdma/rr_xprt.h). This tool prints it
 * as a table, or raw (--json), or refreshed every N seconds with per-second
 * rates (--watch). The JSON is read with the small parser below: no
 * dependency beyond libc.
 *
 * --check is for monitors (Nagios-style exit codes), from the "health"
 * object: 0 RDMA served on every configured listener; 1 degraded (served,
 * but a configured listener is down, e.g. the IPv6 one); 2 not served (no
 * listener up: bad Listen_Addr, port in use, no RDMA device, device
 * removed) or the socket cannot be read. One line says why.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

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

enum col_kind { C_COUNT, C_BYTES };

struct column {
	const char *head;
	const char *field;
	enum col_kind kind;
	bool rate; /* shown per second under --watch */
};

/* One row per connection and a total row from "global". */
static const struct column columns[] = {
    {"CREDITS", "credit_grant", C_COUNT, false},
    {"CALLS", "calls", C_COUNT, true},
    {"INLINE", "replies_inline", C_COUNT, false},
    {"REPLY_CH", "replies_reply_chunk", C_COUNT, false},
    {"WRITE_CH", "replies_write_chunk", C_COUNT, false},
    {"RDMA_RD", "rdma_read_bytes", C_BYTES, true},
    {"RDMA_WR", "rdma_write_bytes", C_BYTES, true},
    {"ERR_CHUNK", "err_chunk_sent", C_COUNT, false},
    {"ERR_VERS", "err_vers_sent", C_COUNT, false},
    {"REGS", "registrations", C_COUNT, false},
    {"RECV_MEM", "recv_mem_bytes", C_BYTES, false},
    {"BC_CALLS", "bc_calls", C_COUNT, false},
};
#define NCOLS (sizeof(columns) / sizeof(columns[0]))
#define PEER_WIDTH 24

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

static void fmt_cell(char *out, size_t size, const struct column *c, const struct jval *obj)
{
	unsigned long long v;

	if (!jcount(obj, c->field, &v))
		snprintf(out, size, "-");
	else if (c->kind == C_BYTES)
		fmt_bytes(out, size, v);
	else
		snprintf(out, size, "%llu", v);
}

/* Counters of the previous sample, for --watch rates. */
struct sample {
	char *peer; /* NULL for the global row */
	unsigned long long v[NCOLS];
	bool have[NCOLS];
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

static void print_head(bool rates)
{
	printf("%-*s", PEER_WIDTH, "PEER");
	for (size_t i = 0; i < NCOLS; i++) {
		printf(" %9s", columns[i].head);
		if (rates && columns[i].rate) {
			char h[32];

			snprintf(h, sizeof(h), "%s/s", columns[i].head);
			printf(" %9s", h);
		}
	}
	printf("\n");
}

/* @rates: --watch columns; @dt: seconds since @prev (0: first sample). */
static void print_row(const char *label, const struct jval *obj, bool rates,
		      const struct sample *prev, double dt, struct sample *now)
{
	printf("%-*s", PEER_WIDTH, label);
	for (size_t i = 0; i < NCOLS; i++) {
		const struct column *c = &columns[i];
		char cell[32];

		fmt_cell(cell, sizeof(cell), c, obj);
		printf(" %9s", cell);
		now->have[i] = jcount(obj, c->field, &now->v[i]);
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
		printf(" %9s", cell);
	}
	printf("\n");
}

static void print_table(const struct jval *root, struct history *hist, double now, bool watch)
{
	const struct jval *fabric = jget(root, "fabric");
	const struct jval *global = jget(root, "global");
	const struct jval *plugin = jget(root, "plugin");
	const struct jval *conns = jget(root, "connections");
	double dt = watch && hist->s ? now - hist->when : 0;
	struct history next = {0};
	unsigned long long v;
	size_t nconn = 0;

	if (conns && conns->type == J_ARR)
		for (const struct jval *c = conns->child; c; c = c->next)
			nconn++;
	printf("rpcrdma: fabric %s, %zu connection%s",
	       fabric && fabric->type == J_STR ? fabric->str : "?", nconn, nconn == 1 ? "" : "s");
	if (jcount(global, "conns_accepted", &v))
		printf(", %llu accepted", v);
	if (jcount(global, "disconnects", &v))
		printf(", %llu disconnects", v);
	printf("\n");
	if (plugin && plugin->type == J_OBJ) {
		/* Whatever counters the plugin reports, in its order. */
		printf("plugin:");
		for (const struct jval *m = plugin->child; m; m = m->next)
			if (m->type == J_NUM && m->is_uint)
				printf(" %s %llu", m->key, m->u);
		printf("\n");
	}
	printf("\n");
	print_head(watch);

	next.s = calloc(nconn + 1, sizeof(*next.s));
	if (conns && conns->type == J_ARR && next.s) {
		for (const struct jval *c = conns->child; c; c = c->next) {
			const struct jval *peer = jget(c, "peer");
			const char *name = peer && peer->type == J_STR ? peer->str : "?";
			struct sample *s = &next.s[next.n++];

			s->peer = strdup(name);
			print_row(name, c, watch, hist_find(hist, name), dt, s);
		}
	}
	if (next.s)
		print_row("TOTAL", global, watch, hist_find(hist, NULL), dt, &next.s[next.n++]);
	hist_free(hist);
	*hist = next;
	hist->when = now;
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
		"usage: rpcrdma-stat [-s SOCKET] [--json | --check] [--watch [SECONDS]] [-c COUNT]\n"
		"Show the counters of the rpcrdma plugin (NFS over RDMA for nfs-ganesha).\n"
		"  -s, --socket PATH   stats socket (default " DEFAULT_SOCKET ")\n"
		"  -j, --json          print the raw JSON\n"
		"  -k, --check         health for monitors: one line, and exit 0 when RDMA is\n"
		"                      served on every configured listener; 1 degraded (served,\n"
		"                      but a configured listener is down, e.g. IPv6); 2 not\n"
		"                      served (listener down: bad Listen_Addr, port in use, no\n"
		"                      RDMA device, device removed) or the socket unreachable\n"
		"  -w, --watch [SECS]  refresh every SECS seconds (default 1), with rates\n"
		"  -c, --count N       with --watch: stop after N refreshes\n"
		"Columns: CREDITS current grant; CALLS; INLINE / REPLY_CH / WRITE_CH replies\n"
		"sent inline, through a Reply chunk, with Write-chunk payload; RDMA_RD / RDMA_WR\n"
		"bytes moved by RDMA Read / Write; ERR_CHUNK / ERR_VERS errors sent; REGS memory\n"
		"registrations; RECV_MEM registered receive memory; BC_CALLS backchannel\n"
		"(callback) calls sent. TOTAL is the server-wide row.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"socket", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
	    {"watch", optional_argument, NULL, 'w'},  {"count", required_argument, NULL, 'c'},
	    {"check", no_argument, NULL, 'k'},
	    {"help", no_argument, NULL, 'h'},	      {NULL, 0, NULL, 0},
	};
	const char *path = DEFAULT_SOCKET;
	struct history hist = {0};
	bool json = false, watch = false;
	double interval = 1;
	long count = -1;
	int opt, status = 0;

	while ((opt = getopt_long(argc, argv, "s:jkw::c:h", opts, NULL)) != -1) {
		char *e;

		switch (opt) {
		case 'k':
			check_mode = true;
			break;
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
			print_table(root, &hist, monotonic(), watch);
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
