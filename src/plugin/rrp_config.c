// SPDX-License-Identifier: MIT
/*
 * rrp_config.c - the RDMA block's keys: their table (from rrp_keys.def),
 * defaults, the copy into the engine's configuration, the reload diff, and
 * a standalone reader of ganesha's syntax for processes without ganesha
 * (tools, unit tests).
 *
 * Inside ganesha the block is read by ganesha's own configuration code
 * (rrp_plugin.c, gsh_load_tree), from the same table of keys, ranges and
 * defaults; this reader follows that syntax: blocks `Name { ... }`,
 * `Key = value;`, `#` comments, quoted strings, names compared without case.
 */
#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugin/rrp_config.h"
#include "rpcrdma/rr_proto.h"
#include "rpcrdma/rr_xprt.h"

#define MAX_CONFIG_BYTES (1u << 20)

/*
 * rrp_keys[]: one row per line of rrp_keys.def. The dflt and engine columns
 * are read by pasting: VAL(v), ENG, AUTO(how); TO(field), NONE.
 */
#define NUM_OF_VAL(v) (v)
#define NUM_OF_ENG 0
#define NUM_OF_AUTO(how) RRP_KEY_AUTO
#define STR_OF_VAL(v) (v)
#define NUM_BOOL(d) NUM_OF_##d
#define NUM_U16(d) NUM_OF_##d
#define NUM_U32(d) NUM_OF_##d
#define NUM_U32Z(d) NUM_OF_##d
#define NUM_U64(d) NUM_OF_##d
#define NUM_MODE(d) NUM_OF_##d
#define NUM_STR(d) 0
#define NUM_FABRIC(d) 0
#define NUM_GROUP(d) 0
#define NUM_EXPORTS(d) 0
#define STR_STR(d) STR_OF_##d
#define STR_FABRIC(d) STR_OF_##d
#define STR_GROUP(d) STR_OF_##d
#define STR_BOOL(d) NULL
#define STR_U16(d) NULL
#define STR_U32(d) NULL
#define STR_U32Z(d) NULL
#define STR_U64(d) NULL
#define STR_MODE(d) NULL
#define STR_EXPORTS(d) NULL
#define KIND_VAL(v) RRP_DFLT_VAL
#define KIND_ENG RRP_DFLT_ENG
#define KIND_AUTO(how) RRP_DFLT_AUTO
#define HOW_VAL(v) NULL
#define HOW_ENG NULL
#define HOW_AUTO(how) how
#define ENG_OFF_TO(f) offsetof(struct rr_config, f)
#define ENG_OFF_NONE 0
#define ENG_LEN_TO(f) sizeof(((struct rr_config *)0)->f)
#define ENG_LEN_NONE 0

#define KEY_ROW(block, name, type, member, lo, hi, dflt, engine)                                   \
	{ #name, block, RRP_KEY_##type, offsetof(struct rrp_config, member),                       \
	  sizeof(((struct rrp_config *)0)->member), lo, hi, KIND_##dflt, NUM_##type(dflt),         \
	  STR_##type(dflt), HOW_##dflt, ENG_OFF_##engine, ENG_LEN_##engine },
#define RDMA_ROW(a, ...) KEY_ROW("RDMA", __VA_ARGS__)
#define CORE_ROW(a, ...) KEY_ROW("NFS_CORE_PARAM", __VA_ARGS__)

const struct rrp_key rrp_keys[] = { RRP_KEYS(RDMA_ROW, _) RRP_CORE_KEYS(CORE_ROW, _) };
const unsigned int rrp_key_count = sizeof(rrp_keys) / sizeof(rrp_keys[0]);

/* The engine's field holds the whole range; ENG has a field to take it
 * from. */
#define LEN_MAX(n) ((n) >= 8 ? UINT64_MAX : (1ull << ((8 * (n)) & 63)) - 1)
#define KEY_CHECK(a, name, type, member, lo, hi, dflt, engine)                                     \
	_Static_assert(!ENG_LEN_##engine || (uint64_t)(hi) <= LEN_MAX(ENG_LEN_##engine),           \
		       #name ": the engine's field is narrower than its range");                   \
	_Static_assert(KIND_##dflt != RRP_DFLT_ENG || ENG_LEN_##engine,                            \
		       #name ": ENG default without TO(field)");
RRP_KEYS(KEY_CHECK, _)
RRP_CORE_KEYS(KEY_CHECK, _)

static uint64_t get_int(const void *p, size_t len)
{
	switch (len) {
	case 1:
		return *(const uint8_t *)p;
	case 2:
		return *(const uint16_t *)p;
	case 4:
		return *(const uint32_t *)p;
	default:
		return *(const uint64_t *)p;
	}
}

static void put_int(void *p, size_t len, uint64_t v)
{
	switch (len) {
	case 1:
		*(uint8_t *)p = (uint8_t)v;
		break;
	case 2:
		*(uint16_t *)p = (uint16_t)v;
		break;
	case 4:
		*(uint32_t *)p = (uint32_t)v;
		break;
	default:
		*(uint64_t *)p = v;
	}
}

uint64_t rrp_key_get(const struct rrp_config *c, const struct rrp_key *k)
{
	uint64_t v;

	if (k->type == RRP_KEY_BOOL)
		return *(const bool *)((const char *)c + k->off);
	v = get_int((const char *)c + k->off, k->len);
	/* RRP_KEY_AUTO in a member narrower than 64 bits (Event_Threads) is
	 * stored cut to its width, all ones: read it back whole. */
	if (k->dflt == RRP_DFLT_AUTO && k->len < sizeof(v) && v == (1ull << (8 * k->len)) - 1)
		return RRP_KEY_AUTO;
	return v;
}

void rrp_key_set(struct rrp_config *c, const struct rrp_key *k, uint64_t v)
{
	if (k->type == RRP_KEY_BOOL)
		*(bool *)((char *)c + k->off) = v != 0;
	else
		put_int((char *)c + k->off, k->len, v);
}

/* 1099511627776 as 1T: sizes of a GiB or more the way people write them. */
static void size_text(uint64_t n, char *out, size_t len)
{
	static const char unit[] = "KMGT";
	int u = -1;

	if (n >= 1ull << 30)
		while (n % 1024 == 0 && u < 3)
			n /= 1024, u++;
	if (u >= 0)
		snprintf(out, len, "%llu%c", (unsigned long long)n, unit[u]);
	else
		snprintf(out, len, "%llu", (unsigned long long)n);
}

void rrp_key_range(const struct rrp_key *k, char *out, size_t len)
{
	char hi[32];

	size_text(k->hi, hi, sizeof(hi));
	switch (k->type) {
	case RRP_KEY_U16:
	case RRP_KEY_U32:
	case RRP_KEY_U64:
	case RRP_KEY_EXPORTS:
		snprintf(out, len, "%llu..%s", (unsigned long long)k->lo, hi);
		break;
	case RRP_KEY_U32Z:
		snprintf(out, len, "0 or %llu..%s", (unsigned long long)k->lo, hi);
		break;
	case RRP_KEY_MODE:
		snprintf(out, len, "%04llo..%04llo", (unsigned long long)k->lo,
			 (unsigned long long)k->hi);
		break;
	default:
		snprintf(out, len, "%s", "");
	}
}

void rrp_config_default(struct rrp_config *c)
{
	struct rr_config e;

	memset(c, 0, sizeof(*c));
	rr_config_default(&e);
	for (unsigned int i = 0; i < rrp_key_count; i++) {
		const struct rrp_key *k = &rrp_keys[i];

		if (k->dflt == RRP_DFLT_ENG)
			rrp_key_set(c, k, get_int((const char *)&e + k->eng_off, k->eng_len));
		else if (k->dflt == RRP_DFLT_AUTO)
			rrp_key_set(c, k, RRP_KEY_AUTO);
		else if (rrp_key_is_string(k))
			snprintf((char *)c + k->off, k->len, "%s", k->dflt_str);
		else if (rrp_key_is_number(k))
			rrp_key_set(c, k, k->dflt_num);
	}
}

void rrp_config_engine(const struct rrp_config *c, struct rr_config *ec)
{
	for (unsigned int i = 0; i < rrp_key_count; i++) {
		const struct rrp_key *k = &rrp_keys[i];
		uint64_t v;

		if (!k->eng_len)
			continue;
		v = rrp_key_get(c, k);
		/* not set: the engine's own (rr_config_default) */
		if (k->dflt == RRP_DFLT_AUTO && v == RRP_KEY_AUTO)
			continue;
		put_int((char *)ec + k->eng_off, k->eng_len, v);
	}
}

struct lexer {
	const char *p;
	int line;
};

/* Next token: a word, a quoted string, or one of { } = ; */
static bool next_token(struct lexer *lx, char *tok, size_t len)
{
	size_t n = 0;

	for (;;) {
		while (isspace((unsigned char)*lx->p)) {
			if (*lx->p == '\n')
				lx->line++;
			lx->p++;
		}
		if (*lx->p != '#')
			break;
		while (*lx->p && *lx->p != '\n')
			lx->p++;
	}
	if (!*lx->p)
		return false;
	if (strchr("{}=;", *lx->p)) {
		tok[0] = *lx->p++;
		tok[1] = 0;
		return true;
	}
	if (*lx->p == '"') {
		lx->p++;
		while (*lx->p && *lx->p != '"') {
			if (n + 1 < len)
				tok[n++] = *lx->p;
			lx->p++;
		}
		if (*lx->p)
			lx->p++;
		tok[n] = 0;
		return true;
	}
	while (*lx->p && !isspace((unsigned char)*lx->p) && !strchr("{}=;#", *lx->p)) {
		if (n + 1 < len)
			tok[n++] = *lx->p;
		lx->p++;
	}
	tok[n] = 0;
	return true;
}

static bool parse_u64(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long n;
	uint64_t mul = 1;

	errno = 0;
	n = strtoull(v, &end, 0);
	if (errno || end == v || *v == '-')
		return false;
	if (*end == 'K' || *end == 'k')
		mul = 1024, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1024 * 1024, end++;
	else if (*end == 'G' || *end == 'g')
		mul = 1024ull * 1024 * 1024, end++;
	if (*end)
		return false;
	*out = (uint64_t)n * mul;
	return true;
}

static bool parse_bool(const char *v, bool *out)
{
	if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcmp(v, "1")) {
		*out = true;
		return true;
	}
	if (!strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcmp(v, "0")) {
		*out = false;
		return true;
	}
	return false;
}

static int set_number(struct rrp_config *c, const struct rrp_key *k, const char *v, int line)
{
	char range[48];
	uint64_t n;

	if (parse_u64(v, &n) && ((n >= k->lo && n <= k->hi) || (!n && k->type == RRP_KEY_U32Z))) {
		rrp_key_set(c, k, n);
		return 0;
	}
	rrp_key_range(k, range, sizeof(range));
	fprintf(stderr, "rpcrdma: RDMA: %s: \"%s\" is %s %s (line %d)\n", k->name, v,
		k->type == RRP_KEY_U32Z ? "not" : "outside", range, line);
	return -EINVAL;
}

static int set_string(const char *key, const char *v, char *dst, size_t len, int line)
{
	if (strlen(v) >= len) {
		fprintf(stderr, "rpcrdma: RDMA: %s: value too long (line %d)\n", key, line);
		return -EINVAL;
	}
	snprintf(dst, len, "%s", v);
	return 0;
}

/*
 * Exclude_Exports = 2, 3; - a list the way ganesha writes them (Protocols =
 * 3, 4;): the values end at ';' and may be split by commas, spaces or both,
 * so one token may hold several ("2,3") or none (",").
 */
static int export_list_token(struct rrp_config *c, const struct rrp_key *k, const char *tok,
			     int line)
{
	char item[32];
	const char *p = tok;
	int ret = 0;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (n && n < sizeof(item)) {
			memcpy(item, p, n);
			item[n] = 0;
			if (rrp_config_exclude(c, k, item)) {
				fprintf(stderr,
					"rpcrdma: RDMA: %s: \"%s\" is not an Export_Id "
					"(%llu..%llu, line %d)\n",
					k->name, item, (unsigned long long)k->lo,
					(unsigned long long)k->hi, line);
				ret = -EINVAL;
			}
		} else if (n) {
			fprintf(stderr, "rpcrdma: RDMA: %s: value too long (line %d)\n", k->name,
				line);
			ret = -EINVAL;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return ret;
}

int rrp_config_exclude(struct rrp_config *c, const struct rrp_key *k, const char *v)
{
	unsigned long id;
	char *end;

	errno = 0;
	id = strtoul(v, &end, 0);
	if (errno || end == v || *end || *v == '-' || id < k->lo || id > k->hi)
		return -EINVAL;
	if (!rrp_config_export_excluded(c, (uint16_t)id)) {
		c->exclude_exports[id / 64] |= 1ull << (id % 64);
		c->n_exclude_exports++;
	}
	return 0;
}

/* Stats_Socket_Mode = 0660; - octal always, as chmod(1) reads it. */
int rrp_config_mode(const struct rrp_key *k, const char *v, uint32_t *mode)
{
	unsigned long m;
	char *end;

	errno = 0;
	m = strtoul(v, &end, 8);
	if (errno || end == v || *end || *v == '-' || (m & ~k->hi) || (m & k->lo) != k->lo)
		return -EINVAL;
	*mode = (uint32_t)m;
	return 0;
}

static int set_stats_mode(struct rrp_config *c, const struct rrp_key *k, const char *v, int line)
{
	if (!rrp_config_mode(k, v, (uint32_t *)((char *)c + k->off)))
		return 0;
	fprintf(stderr,
		"rpcrdma: RDMA: %s: \"%s\" is not a socket mode: octal, %04llo plus any of %04llo "
		"(line %d)\n",
		k->name, v, (unsigned long long)k->lo, (unsigned long long)(k->hi & ~k->lo), line);
	return -EINVAL;
}

/*
 * Stats_Socket_Group = name or number; resolved here so a typo is reported
 * with its line at start-up, not when the socket is made.
 */
int rrp_config_stats_group(struct rrp_config *c, const char *v)
{
	struct group gr, *res = NULL;
	char buf[4096];
	unsigned long gid;
	char *end;
	int err;

	c->stats_socket_group[0] = 0;
	if (!v[0])
		return 0;
	if (strlen(v) >= sizeof(c->stats_socket_group))
		return -EINVAL;
	errno = 0;
	gid = strtoul(v, &end, 10);
	if (!errno && !*end && *v != '-' && gid < (gid_t)-1) {
		c->stats_socket_gid = (uint32_t)gid;
	} else {
		err = getgrnam_r(v, &gr, buf, sizeof(buf), &res);
		if (err || !res)
			return err ? -err : -ENOENT;
		c->stats_socket_gid = (uint32_t)res->gr_gid;
	}
	snprintf(c->stats_socket_group, sizeof(c->stats_socket_group), "%s", v);
	return 0;
}

static int set_stats_group(struct rrp_config *c, const char *key, const char *v, int line)
{
	int ret = rrp_config_stats_group(c, v);

	if (ret == -EINVAL)
		fprintf(stderr, "rpcrdma: RDMA: %s: value too long (line %d)\n", key, line);
	else if (ret)
		fprintf(stderr, "rpcrdma: RDMA: %s: \"%s\" is not a group: %s (line %d)\n", key, v,
			ret == -ENOENT ? "no such group" : strerror(-ret), line);
	return ret ? -EINVAL : 0;
}

const struct rrp_key *rrp_key_find(const char *block, const char *name)
{
	for (unsigned int i = 0; i < rrp_key_count; i++)
		if (!strcasecmp(rrp_keys[i].block, block) && !strcasecmp(rrp_keys[i].name, name))
			return &rrp_keys[i];
	return NULL;
}

/* One Key = value; of the RDMA block (Exclude_Exports, a list, is read by
 * the caller). */
static int rdma_key(struct rrp_config *c, const char *key, const char *v, int line)
{
	const struct rrp_key *k = rrp_key_find("RDMA", key);
	bool b;

	if (!k) {
		fprintf(stderr, "rpcrdma: RDMA: unknown key \"%s\" (line %d)\n", key, line);
		return -EINVAL;
	}
	switch (k->type) {
	case RRP_KEY_BOOL:
		if (!parse_bool(v, &b)) {
			fprintf(stderr, "rpcrdma: RDMA: %s: \"%s\" is not true/false (line %d)\n",
				k->name, v, line);
			return -EINVAL;
		}
		rrp_key_set(c, k, b);
		return 0;
	case RRP_KEY_FABRIC:
		if (strcasecmp(v, "verbs") && strcasecmp(v, "soft")) {
			fprintf(stderr,
				"rpcrdma: RDMA: %s: \"%s\" is not verbs or soft (line %d)\n",
				k->name, v, line);
			return -EINVAL;
		}
		/* fall through */
	case RRP_KEY_STR:
		return set_string(k->name, v, (char *)c + k->off, k->len, line);
	case RRP_KEY_MODE:
		return set_stats_mode(c, k, v, line);
	case RRP_KEY_GROUP:
		return set_stats_group(c, k->name, v, line);
	case RRP_KEY_EXPORTS:
		return export_list_token(c, k, v, line);
	default:
		return set_number(c, k, v, line);
	}
}

int rrp_config_parse_string(const char *text, struct rrp_config *c)
{
	struct lexer lx = {.p = text, .line = 1};
	char tok[256], key[256], val[256], block[256] = "";
	int depth = 0, ret = 0;
	bool in_rdma = false, saw_rdma = false;
	const struct rrp_key *ck;

	while (next_token(&lx, tok, sizeof(tok))) {
		if (!strcmp(tok, "}")) {
			if (depth > 0)
				depth--;
			if (depth == 0)
				in_rdma = false;
			continue;
		}
		if (!strcmp(tok, "{") || !strcmp(tok, "=") || !strcmp(tok, ";"))
			continue;
		/* tok is a name: a block opens or a key takes a value */
		snprintf(key, sizeof(key), "%s", tok);
		if (!next_token(&lx, tok, sizeof(tok)))
			break;
		if (!strcmp(tok, "{")) {
			if (depth == 0) {
				snprintf(block, sizeof(block), "%s", key);
				in_rdma = !strcasecmp(key, "RDMA");
				saw_rdma |= in_rdma;
			}
			depth++;
			continue;
		}
		if (strcmp(tok, "="))
			continue;
		if (in_rdma && depth == 1 && (ck = rrp_key_find("RDMA", key)) &&
		    ck->type == RRP_KEY_EXPORTS) {
			/* A list: every token up to ';' (a repeated key replaces it). */
			bool closed = false;

			memset(c->exclude_exports, 0, sizeof(c->exclude_exports));
			c->n_exclude_exports = 0;
			while (next_token(&lx, tok, sizeof(tok))) {
				closed = !strcmp(tok, ";");
				if (closed || (tok[0] && !tok[1] && strchr("{}=", tok[0])))
					break;
				if (export_list_token(c, ck, tok, lx.line))
					ret = -EINVAL;
			}
			if (!closed) {
				fprintf(stderr, "rpcrdma: RDMA: %s: no ';' (line %d)\n", key,
					lx.line);
				ret = -EINVAL;
				if (!strcmp(tok, "}"))
					depth = 0, in_rdma = false;
			}
			continue;
		}
		if (!next_token(&lx, val, sizeof(val)))
			break;
		if (in_rdma && depth == 1) {
			if (rdma_key(c, key, val, lx.line))
				ret = -EINVAL;
		} else if (depth == 1 && (ck = rrp_key_find(block, key)) && !rrp_key_rdma(ck)) {
			uint64_t n;

			/* ganesha's own key: ganesha reports a bad value */
			if (parse_u64(val, &n) && n >= ck->lo && n <= ck->hi)
				rrp_key_set(c, ck, n);
		}
	}
	if (ret)
		return ret;
	return saw_rdma ? 0 : -ENOENT;
}

int rrp_config_parse_file(const char *path, struct rrp_config *c)
{
	FILE *f = fopen(path, "r");
	char *text;
	size_t n;
	int ret;

	if (!f) {
		fprintf(stderr, "rpcrdma: cannot read %s: %s\n", path, strerror(errno));
		return -errno;
	}
	text = malloc(MAX_CONFIG_BYTES + 1);
	if (!text) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(text, 1, MAX_CONFIG_BYTES, f);
	text[n] = 0;
	fclose(f);
	ret = rrp_config_parse_string(text, c);
	free(text);
	return ret;
}

unsigned int rrp_config_diff(const struct rrp_config *a, const struct rrp_config *b, char *out,
			     size_t len)
{
	unsigned int n = 0;
	size_t used = 0;

	if (len)
		out[0] = 0;
	/* the derived stats_socket_gid and n_exclude_exports follow their keys */
	for (unsigned int i = 0; i < rrp_key_count; i++) {
		const struct rrp_key *k = &rrp_keys[i];
		const char *pa = (const char *)a + k->off;
		const char *pb = (const char *)b + k->off;
		bool rdma = rrp_key_rdma(k);
		int w;

		/* bytes past a string's NUL are no value */
		if (rrp_key_is_string(k) ? !strncmp(pa, pb, k->len) : !memcmp(pa, pb, k->len))
			continue;
		n++;
		if (used >= len)
			continue;
		w = snprintf(out + used, len - used, "%s%s%s%s", n > 1 ? ", " : "",
			     rdma ? "" : k->block, rdma ? "" : " ", k->name);
		used += w > 0 ? (size_t)w : 0;
	}
	return n;
}
