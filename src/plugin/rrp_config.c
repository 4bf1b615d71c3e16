// SPDX-License-Identifier: MIT
/*
 * rrp_config.c - the RDMA block's keys: defaults, and a standalone reader
 * of ganesha's syntax for processes without ganesha (tools, unit tests).
 *
 * Inside ganesha the block is read by ganesha's own configuration code
 * (rrp_plugin.c, load_config_ganesha), with the same keys, ranges and
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

void rrp_config_default(struct rrp_config *c)
{
	memset(c, 0, sizeof(*c));
	c->enable = true;
	snprintf(c->listen_addr, sizeof(c->listen_addr), "0.0.0.0");
	c->port = RR_NFS_RDMA_PORT;
	snprintf(c->fabric, sizeof(c->fabric), "verbs");
	c->credits = 64;
	c->inline_threshold = 4096;
	c->max_connections = 1024;
	/* The engine's defaults (rr_config_default says why). */
	c->max_conns_per_peer = 64;
	c->peer_prefix_v4 = 32;
	c->peer_prefix_v6 = 64;
	c->handshake_timeout = 30;
	c->idle_timeout = 360;
	c->recv_mem_budget = RRP_MEM_BUDGET_AUTO;
	c->max_ord = 16;
	c->workers = 8;
	c->payload_pool_mb = 80;
	c->nfs_port = 2049;
	snprintf(c->stats_socket, sizeof(c->stats_socket), "/run/rpcrdma/stats.sock");
	c->stats_socket_mode = RRP_STATS_MODE_DEFAULT;
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

static int set_range(const char *key, const char *v, uint64_t lo, uint64_t hi, uint64_t *out,
		     int line)
{
	uint64_t n;

	if (!parse_u64(v, &n) || n < lo || n > hi) {
		fprintf(stderr, "rpcrdma: RDMA: %s: \"%s\" is outside %llu..%llu (line %d)\n", key,
			v, (unsigned long long)lo, (unsigned long long)hi, line);
		return -EINVAL;
	}
	*out = n;
	return 0;
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
static int export_list_token(struct rrp_config *c, const char *key, const char *tok, int line)
{
	char item[32];
	const char *p = tok;
	int ret = 0;

	while (*p) {
		size_t n = strcspn(p, ",");
		unsigned long id;
		char *end;

		if (n && n < sizeof(item)) {
			memcpy(item, p, n);
			item[n] = 0;
			errno = 0;
			id = strtoul(item, &end, 0);
			if (errno || *end || item[0] == '-' || id >= RRP_EXPORT_ID_COUNT) {
				fprintf(stderr,
					"rpcrdma: RDMA: %s: \"%s\" is not an Export_Id "
					"(0..%u, line %d)\n",
					key, item, RRP_EXPORT_ID_COUNT - 1, line);
				ret = -EINVAL;
			} else if (!rrp_config_export_excluded(c, (uint16_t)id)) {
				c->exclude_exports[id / 64] |= 1ull << (id % 64);
				c->n_exclude_exports++;
			}
		} else if (n) {
			fprintf(stderr, "rpcrdma: RDMA: %s: value too long (line %d)\n", key, line);
			ret = -EINVAL;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return ret;
}

/* Stats_Socket_Mode = 0660; - octal always, as chmod(1) reads it. */
static int set_stats_mode(struct rrp_config *c, const char *key, const char *v, int line)
{
	unsigned long m;
	char *end;

	errno = 0;
	m = strtoul(v, &end, 8);
	if (errno || end == v || *end || *v == '-' ||
	    (m & ~(unsigned long)RRP_STATS_MODE_ALLOWED) ||
	    (m & RRP_STATS_MODE_REQUIRED) != RRP_STATS_MODE_REQUIRED) {
		fprintf(stderr,
			"rpcrdma: RDMA: %s: \"%s\" is not a socket mode: octal, %04o plus any "
			"of %04o (line %d)\n",
			key, v, RRP_STATS_MODE_REQUIRED,
			RRP_STATS_MODE_ALLOWED & ~RRP_STATS_MODE_REQUIRED, line);
		return -EINVAL;
	}
	c->stats_socket_mode = (uint32_t)m;
	return 0;
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

static int rdma_key(struct rrp_config *c, const char *key, const char *v, int line)
{
	uint64_t n = 0;
	int ret;

	if (!strcasecmp(key, "Enable") || !strcasecmp(key, "Use_SRQ")) {
		bool *dst = !strcasecmp(key, "Enable") ? &c->enable : &c->use_srq;

		if (!parse_bool(v, dst)) {
			fprintf(stderr, "rpcrdma: RDMA: %s: \"%s\" is not true/false (line %d)\n",
				key, v, line);
			return -EINVAL;
		}
		return 0;
	}
	if (!strcasecmp(key, "SRQ_Depth")) {
		ret = set_range(key, v, 0, RR_SRQ_MAX_DEPTH, &n, line);
		if (!ret && n && n < RR_SRQ_MIN_DEPTH) {
			fprintf(stderr,
				"rpcrdma: RDMA: SRQ_Depth: %llu is neither 0 nor in %u..%u (line %d)\n",
				(unsigned long long)n, RR_SRQ_MIN_DEPTH, RR_SRQ_MAX_DEPTH, line);
			ret = -EINVAL;
		}
		c->srq_depth = (uint32_t)(ret ? c->srq_depth : n);
		return ret;
	}
	if (!strcasecmp(key, "Listen_Addr"))
		return set_string(key, v, c->listen_addr, sizeof(c->listen_addr), line);
	if (!strcasecmp(key, "Listen_Addr_v6"))
		return set_string(key, v, c->listen_addr_v6, sizeof(c->listen_addr_v6), line);
	if (!strcasecmp(key, "Stats_Socket"))
		return set_string(key, v, c->stats_socket, sizeof(c->stats_socket), line);
	if (!strcasecmp(key, "Stats_Socket_Mode"))
		return set_stats_mode(c, key, v, line);
	if (!strcasecmp(key, "Stats_Socket_Group"))
		return set_stats_group(c, key, v, line);
	if (!strcasecmp(key, "Soft_Socket"))
		return set_string(key, v, c->soft_socket, sizeof(c->soft_socket), line);
	if (!strcasecmp(key, "Fabric")) {
		if (strcasecmp(v, "verbs") && strcasecmp(v, "soft")) {
			fprintf(stderr, "rpcrdma: RDMA: Fabric: \"%s\" is not verbs or soft (line %d)\n",
				v, line);
			return -EINVAL;
		}
		return set_string(key, v, c->fabric, sizeof(c->fabric), line);
	}
	if (!strcasecmp(key, "Port")) {
		ret = set_range(key, v, 1, 65535, &n, line);
		c->port = (uint16_t)(ret ? c->port : n);
		return ret;
	}
	if (!strcasecmp(key, "Credits")) {
		ret = set_range(key, v, 1, RR_MAX_CREDITS, &n, line);
		c->credits = (uint32_t)(ret ? c->credits : n);
		return ret;
	}
	if (!strcasecmp(key, "Inline_Threshold")) {
		ret = set_range(key, v, 1024, 65536, &n, line);
		c->inline_threshold = (uint32_t)(ret ? c->inline_threshold : n);
		return ret;
	}
	if (!strcasecmp(key, "Max_Connections")) {
		ret = set_range(key, v, 1, 65536, &n, line);
		c->max_connections = (uint32_t)(ret ? c->max_connections : n);
		return ret;
	}
	if (!strcasecmp(key, "Max_Connections_Per_Peer")) {
		ret = set_range(key, v, 0, 65536, &n, line);
		c->max_conns_per_peer = (uint32_t)(ret ? c->max_conns_per_peer : n);
		return ret;
	}
	if (!strcasecmp(key, "Peer_Prefix_V4") || !strcasecmp(key, "Peer_Prefix_V6")) {
		bool v4 = !strcasecmp(key, "Peer_Prefix_V4");
		uint32_t *dst = v4 ? &c->peer_prefix_v4 : &c->peer_prefix_v6;

		ret = set_range(key, v, 0, v4 ? 32 : 128, &n, line);
		*dst = (uint32_t)(ret ? *dst : n);
		return ret;
	}
	if (!strcasecmp(key, "Handshake_Timeout") || !strcasecmp(key, "Idle_Timeout")) {
		uint32_t *dst =
		    !strcasecmp(key, "Idle_Timeout") ? &c->idle_timeout : &c->handshake_timeout;

		ret = set_range(key, v, 0, RR_MAX_TIMEOUT, &n, line);
		*dst = (uint32_t)(ret ? *dst : n);
		return ret;
	}
	if (!strcasecmp(key, "Receive_Memory_Budget")) {
		ret = set_range(key, v, 0, 1ull << 40, &n, line);
		c->recv_mem_budget = ret ? c->recv_mem_budget : n;
		return ret;
	}
	if (!strcasecmp(key, "Max_RDMA_Read_Depth")) {
		ret = set_range(key, v, 1, 255, &n, line);
		c->max_ord = (uint32_t)(ret ? c->max_ord : n);
		return ret;
	}
	if (!strcasecmp(key, "Payload_Pool_MB")) {
		ret = set_range(key, v, 0, 65536, &n, line);
		c->payload_pool_mb = (uint32_t)(ret ? c->payload_pool_mb : n);
		return ret;
	}
	if (!strcasecmp(key, "Worker_Threads")) {
		ret = set_range(key, v, 1, 256, &n, line);
		c->workers = (uint32_t)(ret ? c->workers : n);
		return ret;
	}
	fprintf(stderr, "rpcrdma: RDMA: unknown key \"%s\" (line %d)\n", key, line);
	return -EINVAL;
}

int rrp_config_parse_string(const char *text, struct rrp_config *c)
{
	struct lexer lx = {.p = text, .line = 1};
	char tok[256], key[256], val[256], block[256] = "";
	int depth = 0, ret = 0;
	bool in_rdma = false, saw_rdma = false;

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
		if (in_rdma && depth == 1 && !strcasecmp(key, "Exclude_Exports")) {
			/* A list: every token up to ';' (a repeated key replaces it). */
			bool closed = false;

			memset(c->exclude_exports, 0, sizeof(c->exclude_exports));
			c->n_exclude_exports = 0;
			while (next_token(&lx, tok, sizeof(tok))) {
				closed = !strcmp(tok, ";");
				if (closed || (tok[0] && !tok[1] && strchr("{}=", tok[0])))
					break;
				if (export_list_token(c, key, tok, lx.line))
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
		} else if (depth == 1 && !strcasecmp(block, "NFS_CORE_PARAM") &&
			   !strcasecmp(key, "NFS_Port")) {
			uint64_t n;

			if (parse_u64(val, &n) && n > 0 && n < 65536)
				c->nfs_port = (uint16_t)n;
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

/* Every key, where its value lives, and whether it is a string (bytes past
 * its NUL are no value). The derived stats_socket_gid and the count of
 * excluded exports follow from keys listed here. */
#define RRP_KEY(name, member, str) { name, offsetof(struct rrp_config, member), \
				     sizeof(((struct rrp_config *)0)->member), str }
static const struct {
	const char *name;
	size_t off, len;
	bool str;
} config_keys[] = {
	RRP_KEY("Enable", enable, false),
	RRP_KEY("Listen_Addr", listen_addr, true),
	RRP_KEY("Listen_Addr_v6", listen_addr_v6, true),
	RRP_KEY("Port", port, false),
	RRP_KEY("Fabric", fabric, true),
	RRP_KEY("Soft_Socket", soft_socket, true),
	RRP_KEY("Credits", credits, false),
	RRP_KEY("Inline_Threshold", inline_threshold, false),
	RRP_KEY("Max_Connections", max_connections, false),
	RRP_KEY("Max_Connections_Per_Peer", max_conns_per_peer, false),
	RRP_KEY("Peer_Prefix_V4", peer_prefix_v4, false),
	RRP_KEY("Peer_Prefix_V6", peer_prefix_v6, false),
	RRP_KEY("Handshake_Timeout", handshake_timeout, false),
	RRP_KEY("Idle_Timeout", idle_timeout, false),
	RRP_KEY("Receive_Memory_Budget", recv_mem_budget, false),
	RRP_KEY("Use_SRQ", use_srq, false),
	RRP_KEY("SRQ_Depth", srq_depth, false),
	RRP_KEY("Max_RDMA_Read_Depth", max_ord, false),
	RRP_KEY("Worker_Threads", workers, false),
	RRP_KEY("Payload_Pool_MB", payload_pool_mb, false),
	RRP_KEY("Stats_Socket", stats_socket, true),
	RRP_KEY("Stats_Socket_Mode", stats_socket_mode, false),
	RRP_KEY("Stats_Socket_Group", stats_socket_group, true),
	RRP_KEY("Exclude_Exports", exclude_exports, false),
	RRP_KEY("NFS_CORE_PARAM NFS_Port", nfs_port, false),
};
#undef RRP_KEY

unsigned int rrp_config_diff(const struct rrp_config *a, const struct rrp_config *b, char *out,
			     size_t len)
{
	unsigned int n = 0;
	size_t used = 0;

	if (len)
		out[0] = 0;
	for (size_t i = 0; i < sizeof(config_keys) / sizeof(config_keys[0]); i++) {
		const char *pa = (const char *)a + config_keys[i].off;
		const char *pb = (const char *)b + config_keys[i].off;
		int w;

		if (config_keys[i].str ? !strncmp(pa, pb, config_keys[i].len)
				       : !memcmp(pa, pb, config_keys[i].len))
			continue;
		n++;
		if (used >= len)
			continue;
		w = snprintf(out + used, len - used, "%s%s", n > 1 ? ", " : "",
			     config_keys[i].name);
		used += w > 0 ? (size_t)w : 0;
	}
	return n;
}
