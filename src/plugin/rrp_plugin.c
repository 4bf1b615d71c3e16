// SPDX-License-Identifier: MIT
/*
 * rrp_plugin.c - start-up: read the RDMA block, open the fabric, start the
 * transport engine on the configured listeners and the worker pool.
 *
 * Any failure here is logged in one line and leaves ganesha exactly as it
 * would be without the plugin: TCP service is never affected.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <syslog.h>

#include "fabric/fab.h"
#include "plugin/rrp_exports.h"
#include "plugin/rrp_gsh.h"
#include "plugin/rrp_host.h"
#include "plugin/rrp_payload.h"
#include "plugin/rrp_memlock.h"
#include "plugin/rrp_plugin.h"

struct rrp_plugin rrp;

static bool config_loaded;

/*
 * ganesha's log, found at run time: libganesha_nfsd exports it, and the
 * plugin has no link-time dependency on ganesha (unit tests and tools load
 * the core without it, and then get stderr and syslog as before).
 */
typedef void (*gsh_display_log_fn)(int component, const char *file, int line,
				   const char *function, int level, const char *fmt, ...);
static struct {
	pthread_once_t once;
	gsh_display_log_fn display;
	int **levels;			/* component_log_level: int[COMPONENT_COUNT] */
} gsh_log = { .once = PTHREAD_ONCE_INIT };

static void gsh_log_find(void)
{
	*(void **)&gsh_log.display = dlsym(RTLD_DEFAULT, "DisplayLogComponentLevel");
	gsh_log.levels = dlsym(RTLD_DEFAULT, "component_log_level");
	if (!gsh_log.levels)
		gsh_log.display = NULL;
}

static const int gsh_level[] = {
	[RRP_LOG_CRIT] = RRP_GSH_NIV_CRIT,
	[RRP_LOG_WARN] = RRP_GSH_NIV_WARN,
	[RRP_LOG_EVENT] = RRP_GSH_NIV_EVENT,
	[RRP_LOG_INFO] = RRP_GSH_NIV_INFO,
	[RRP_LOG_DEBUG] = RRP_GSH_NIV_DEBUG,
};

void rrp_log_at(enum rrp_log_level level, const char *func, const char *fmt, ...)
{
	int niv = gsh_level[level];
	/* The longest line, RLIMIT_MEMLOCK's, runs past 600 bytes with a
	 * long listener path; ganesha's own buffer (LOG_BUFF_LEN) is 2048. */
	char line[1024];
	va_list ap;

	pthread_once(&gsh_log.once, gsh_log_find);
	/* ganesha's Log* macros test the component's level before calling in:
	 * DisplayLogComponentLevel itself writes whatever it is given. */
	if (gsh_log.display && *gsh_log.levels &&
	    (*gsh_log.levels)[RRP_GSH_LOG_COMPONENT] < niv)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (gsh_log.display && *gsh_log.levels) {
		gsh_log.display(RRP_GSH_LOG_COMPONENT, "rpcrdma", 0, func, niv,
				"rpcrdma: %s", line);
		return;
	}
	fprintf(stderr, "rpcrdma: %s\n", line);
	syslog(LOG_DAEMON | (niv <= RRP_GSH_NIV_WARN ? LOG_WARNING : LOG_NOTICE),
	       "rpcrdma: %s", line);
}

/* The engine's lines carry no level: they are events of a connection or a
 * listener, and the ones that matter more say so in their words. */
static void engine_log(const char *line)
{
	rrp_log_at(RRP_LOG_EVENT, "rpcrdma_engine", "%s", line);
}

/* The configuration file ganesha was started with. */
static const char *config_path(void)
{
	const char *env = getenv("RPCRDMA_CONFIG");
	char **p;

	if (env && *env)
		return env;
	p = dlsym(RTLD_DEFAULT, "nfs_config_path");
	if (p && *p)
		return *p;
	return "/etc/ganesha/ganesha.conf";
}

/*
 * The RDMA block read by ganesha's own configuration code: the file ganesha
 * was started with, parsed by config_ParseFile (so %include, quoting and
 * numbers - decimal, 0x hex, 0 octal - are ganesha's), loaded with a block
 * description of every key with its range and default, its messages
 * written to ganesha.log by report_config_errors with file and line: an
 * unknown key is a WARN and the rest applies, a bad value or a second RDMA
 * block is a CRIT and RDMA is not served.
 */
struct gsh_conf {
	void *(*parse)(char *path, struct rrp_gsh_err *err);		/* config_ParseFile */
	int (*load)(void *tree, struct rrp_gsh_block *blk, void *param, bool unique,
		    struct rrp_gsh_err *err);			/* load_config_from_parse */
	/* report_config_errors (an int in some releases, unused here) */
	void (*report)(struct rrp_gsh_err *err, void *dest,
		       void (*logger)(char *msg, void *dest, struct rrp_gsh_err *err));
	void (*to_log)(char *msg, void *dest, struct rrp_gsh_err *err); /* config_errs_to_log */
	bool (*init_err)(struct rrp_gsh_err *err);			/* init_error_type */
	void (*free_tree)(void *tree);					/* config_Free */
};

/* The block as ganesha's loader fills it, with the items gsh_item makes
 * of rrp_keys[]. */
struct gsh_rdma {
	struct rrp_config *cfg;		/* where commit puts the block's values */
	struct rrp_config v;		/* numbers, booleans, Exclude_Exports */
	char *str[RRP_KEY_COUNT];	/* STR and GROUP keys, by index; ganesha's malloc */
	uint32_t fabric;		/* index in fabric_tokens */
	unsigned int blocks;		/* RDMA blocks committed */
	int errors;
};

static const struct rrp_gsh_token fabric_tokens[] = {
	{ "verbs", 0 }, { "soft", 1 }, { NULL, 0 },
};

/* A message in ganesha's own form, where ganesha reports its own. */
static void gsh_conf_error(void *node, struct rrp_gsh_err *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void gsh_conf_error(void *node, struct rrp_gsh_err *err, const char *fmt, ...)
{
	const struct rrp_gsh_node_head *n = node;
	va_list ap;

	if (!err->fp)
		return;
	fprintf(err->fp, "Config File (%s:%d): ", n && n->filename ? n->filename : "?",
		n ? n->linenumber : 0);
	va_start(ap, fmt);
	vfprintf(err->fp, fmt, ap);
	va_end(ap);
	fputc('\f', err->fp);
}

static void gsh_rdma_release(struct gsh_rdma *r)
{
	for (unsigned int i = 0; i < RRP_KEY_COUNT; i++) {
		free(r->str[i]);
		r->str[i] = NULL;
	}
}

/* init(NULL, self): the top-level block's memory; init(link, NULL): the
 * block about to be loaded (the same); init(link, self): release it. */
static void *gsh_rdma_init(void *link_mem, void *self)
{
	if (!link_mem)
		return self;
	if (!self)
		return link_mem == (void *)~0UL ? NULL : link_mem;
	gsh_rdma_release(self);
	return NULL;
}

static bool copy_str(void *node, struct rrp_gsh_err *err, const char *key, const char *v,
		     char *dst, size_t len)
{
	if (!v) {
		dst[0] = 0;
		return true;
	}
	if (strlen(v) >= len) {
		gsh_conf_error(node, err, "%s: value too long (at most %zu bytes)", key, len - 1);
		return false;
	}
	snprintf(dst, len, "%s", v);
	return true;
}

/* Checks ganesha's item types cannot express, then the values into cfg. */
static int gsh_rdma_commit(void *node, void *link_mem, void *self, struct rrp_gsh_err *err)
{
	struct gsh_rdma *r = self;
	struct rrp_config *c = r->cfg;
	int bad = 0;

	(void)link_mem;
	if (++r->blocks > 1) {
		gsh_conf_error(node, err, "RDMA block given twice: only one is allowed");
		err->unique = true;
		bad++;
	}
	for (unsigned int i = 0; i < rrp_key_count; i++) {
		const struct rrp_key *k = &rrp_keys[i];
		const char *s = r->str[i] ? r->str[i] : "";
		char *dst = (char *)c + k->off;

		if (!rrp_key_rdma(k))
			continue;
		switch (k->type) {
		case RRP_KEY_STR:
			bad += !copy_str(node, err, k->name, r->str[i], dst, k->len);
			break;
		case RRP_KEY_FABRIC:
			snprintf(dst, k->len, "%s", fabric_tokens[r->fabric ? 1 : 0].token);
			break;
		case RRP_KEY_GROUP:
			/* resolved now, so a typo is reported here with its line */
			if (rrp_config_stats_group(c, s)) {
				gsh_conf_error(node, err, "%s: \"%s\" is not a group", k->name, s);
				bad++;
			}
			break;
		case RRP_KEY_EXPORTS:
			memcpy(dst, (const char *)&r->v + k->off, k->len);
			c->n_exclude_exports = r->v.n_exclude_exports;
			break;
		default:
			memcpy(dst, (const char *)&r->v + k->off, k->len);
		}
	}
	if (bad) {
		err->invalid = true;
		err->errors += bad;
	}
	r->errors += bad;
	return bad;
}

/* Exclude_Exports = 2, 3; - each value a term of its own in ganesha's tree. */
static int gsh_exclude_token(const char *token, int term_type, struct rrp_gsh_item *item,
			     void *param_addr, void *node, struct rrp_gsh_err *err)
{
	const struct rrp_key *k = rrp_key_find("RDMA", item->name);

	(void)term_type;
	if (!rrp_config_exclude(param_addr, k, token))
		return 0;
	gsh_conf_error(node, err, "%s: \"%s\" is not an Export_Id (%llu..%llu)", k->name, token,
		       (unsigned long long)k->lo, (unsigned long long)k->hi);
	err->invalid = true;
	return 1;
}

/* Stats_Socket_Mode = 0660; - octal always, as chmod(1) reads it (ganesha's
 * numbers would take 0x1b0 or a decimal 432 too). */
static int gsh_mode_token(const char *token, int term_type, struct rrp_gsh_item *item,
			  void *param_addr, void *node, struct rrp_gsh_err *err)
{
	const struct rrp_key *k = rrp_key_find("RDMA", item->name);

	(void)term_type;
	if (!rrp_config_mode(k, token, param_addr))
		return 0;
	gsh_conf_error(node, err,
		       "%s: \"%s\" is not a socket mode: octal, %04llo plus any of %04llo",
		       k->name, token, (unsigned long long)k->lo,
		       (unsigned long long)(k->hi & ~k->lo));
	err->invalid = true;
	return 1;
}

static void *gsh_mode_init(void *link_mem, void *self)
{
	(void)link_mem;
	if (self)
		*(uint32_t *)self = RRP_STATS_MODE_DEFAULT;
	return self;
}

static void *gsh_exclude_init(void *link_mem, void *self)
{
	(void)link_mem;
	return self;
}

/*
 * ganesha's item for key @k (index @i), its default from @d: numbers,
 * booleans and Export_Ids land in the struct rrp_config at @v_off of the
 * block's memory, strings in slot @i of the char * array at @str_off, the
 * fabric's token at @tok_off; gsh_rdma_commit copies them into the
 * configuration.
 */
static void gsh_item(struct rrp_gsh_item *it, const struct rrp_key *k, unsigned int i,
		     const struct rrp_config *d, size_t v_off, size_t str_off, size_t tok_off)
{
	uint64_t def = 0;
	const char *sdef = (const char *)d + k->off;

	memset(it, 0, sizeof(*it));
	it->name = k->name;
	it->off = v_off + k->off;
	if (rrp_key_is_number(k))
		def = rrp_key_get(d, k);
	switch (k->type) {
	case RRP_KEY_BOOL:
		it->type = RRP_GSH_BOOL;
		it->u.b.def = def != 0;
		break;
	case RRP_KEY_U16:
		it->type = RRP_GSH_UINT16;
		it->u.ui16.minval = (uint16_t)k->lo;
		it->u.ui16.maxval = (uint16_t)k->hi;
		it->u.ui16.def = (uint16_t)def;
		it->u.ui16.zero_ok = !k->lo;
		break;
	case RRP_KEY_U32:
	case RRP_KEY_U32Z:
		it->type = RRP_GSH_UINT32;
		it->u.ui32.minval = (uint32_t)k->lo;
		it->u.ui32.maxval = (uint32_t)k->hi;
		it->u.ui32.def = (uint32_t)def;
		it->u.ui32.zero_ok = !k->lo || k->type == RRP_KEY_U32Z;
		break;
	case RRP_KEY_U64:
		it->type = RRP_GSH_UINT64;
		it->u.ui64.minval = k->lo;
		it->u.ui64.maxval = k->hi;
		it->u.ui64.def = def;
		it->u.ui64.zero_ok = !k->lo;
		break;
	case RRP_KEY_STR:
	case RRP_KEY_GROUP:
		it->type = RRP_GSH_STRING;
		it->u.str.maxsize = 4096; /* copy_str says when it is too long */
		it->u.str.def = sdef[0] ? sdef : NULL;
		it->off = str_off + i * sizeof(char *);
		break;
	case RRP_KEY_FABRIC:
		it->type = RRP_GSH_TOKEN;
		it->u.lst.tokens = fabric_tokens;
		it->u.lst.def = strcmp(sdef, fabric_tokens[0].token) ? 1 : 0;
		it->off = tok_off;
		break;
	case RRP_KEY_MODE:
		it->type = RRP_GSH_PROC;
		it->u.proc.init = gsh_mode_init;
		it->u.proc.handler = gsh_mode_token;
		break;
	case RRP_KEY_EXPORTS:
		/* the handler sets bits of the whole struct rrp_config */
		it->type = RRP_GSH_PROC;
		it->u.proc.init = gsh_exclude_init;
		it->u.proc.handler = gsh_exclude_token;
		it->off = v_off;
		break;
	}
}

/* NFS_CORE_PARAM { NFS_Port }: only that key, others are ganesha's business. */
struct gsh_core {
	struct rrp_config v;
};

static void *gsh_core_init(void *link_mem, void *self)
{
	if (!link_mem)
		return self;
	if (!self)
		return link_mem == (void *)~0UL ? NULL : link_mem;
	return NULL;
}

static int gsh_core_commit(void *node, void *link_mem, void *self, struct rrp_gsh_err *err)
{
	(void)node;
	(void)link_mem;
	(void)self;
	(void)err;
	return 0;
}

/* The RDMA block (and NFS_Port) from ganesha's parsed @tree into @c, the
 * messages into ganesha.log; -ENOENT when the tree has no RDMA block. */
static int gsh_load_tree(void *tree, struct rrp_config *c, const struct gsh_conf *g)
{
	struct rrp_gsh_item items[RRP_KEY_COUNT + 1], core_items[RRP_KEY_COUNT + 1];
	struct rrp_gsh_block blk = {
		.blk_desc = { .name = "RDMA", .type = RRP_GSH_BLOCK,
			      .u.blk = { .init = gsh_rdma_init, .params = items,
					 .commit = gsh_rdma_commit } },
	};
	struct rrp_gsh_block core_blk = {
		.blk_desc = { .name = "NFS_CORE_PARAM", .type = RRP_GSH_BLOCK,
			      .flags = RRP_GSH_RELAX,
			      .u.blk = { .init = gsh_core_init, .params = core_items,
					 .commit = gsh_core_commit } },
	};
	struct gsh_rdma r = { .cfg = c };
	struct gsh_core core;
	unsigned int n = 0, n_core = 0;
	struct rrp_gsh_err err;
	int found, ret = 0;

	rrp_config_default(&core.v);
	for (unsigned int i = 0; i < rrp_key_count; i++) {
		const struct rrp_key *k = &rrp_keys[i];

		if (rrp_key_rdma(k))
			gsh_item(&items[n++], k, i, &core.v, offsetof(struct gsh_rdma, v),
				 offsetof(struct gsh_rdma, str), offsetof(struct gsh_rdma, fabric));
		else
			gsh_item(&core_items[n_core++], k, i, &core.v,
				 offsetof(struct gsh_core, v), 0, 0);
	}
	memset(&items[n], 0, sizeof(items[n]));
	memset(&core_items[n_core], 0, sizeof(core_items[n_core]));

	memset(&err, 0, sizeof(err));
	if (!g->init_err(&err))
		return -ENOMEM;
	(void)g->load(tree, &core_blk, &core, false, &err);
	for (unsigned int i = 0; i < rrp_key_count; i++)
		if (!rrp_key_rdma(&rrp_keys[i]))
			memcpy((char *)c + rrp_keys[i].off, (char *)&core.v + rrp_keys[i].off,
			       rrp_keys[i].len);
	found = g->load(tree, &blk, &r, false, &err);
	if (r.errors || found < 0 || !rrp_gsh_err_harmless(&err))
		ret = -EINVAL;
	else if (!r.blocks)
		ret = -ENOENT;
	g->report(&err, NULL, g->to_log);
	gsh_rdma_release(&r);
	return ret;
}

/*
 * Did ganesha's parse of the file leave anything out? ganesha (at least
 * one release of host/) goes on after a syntax error with what it could
 * parse, flagging nothing but its message; a statement lost that way may be one of the RDMA block's, so
 * RDMA is not served from a file with any.
 */
static bool gsh_parse_clean(void *tree, struct rrp_gsh_err *err)
{
	if (err->fp)
		fflush(err->fp);
	return tree && !err->errors && !err->diag_buf_size && rrp_gsh_err_harmless(err);
}

/* ganesha's configuration functions; false in a process without ganesha
 * (tools, unit tests). */
static bool gsh_conf_find(struct gsh_conf *g)
{
	*(void **)&g->parse = dlsym(RTLD_DEFAULT, "config_ParseFile");
	*(void **)&g->load = dlsym(RTLD_DEFAULT, "load_config_from_parse");
	*(void **)&g->report = dlsym(RTLD_DEFAULT, "report_config_errors");
	*(void **)&g->to_log = dlsym(RTLD_DEFAULT, "config_errs_to_log");
	*(void **)&g->init_err = dlsym(RTLD_DEFAULT, "init_error_type");
	*(void **)&g->free_tree = dlsym(RTLD_DEFAULT, "config_Free");
	return g->parse && g->load && g->report && g->to_log && g->init_err && g->free_tree;
}

/* The file parsed by ganesha's parser here (RPCRDMA_CONFIG names another
 * file than ganesha's, or ganesha never gave us its tree). */
static int gsh_load_file(const char *path, struct rrp_config *c, const struct gsh_conf *g)
{
	struct rrp_gsh_err err;
	void *tree;
	int ret;

	memset(&err, 0, sizeof(err));
	if (!g->init_err(&err))
		return -ENOMEM;
	tree = g->parse((char *)path, &err);
	if (!gsh_parse_clean(tree, &err)) {
		g->report(&err, NULL, g->to_log);
		if (tree)
			g->free_tree(tree);
		rrp_crit("%s has syntax errors (the CONFIG lines): RDMA not served, TCP unaffected",
			 path);
		return -EINVAL;
	}
	ret = gsh_load_tree(tree, c, g);
	g->free_tree(tree);
	return ret;
}

static int config_result;
static _Atomic bool started; /* rrp_plugin_start ran: a later tree is a reload */

static int load_config(void)
{
	struct gsh_conf g;

	if (config_loaded)
		return config_result;
	config_loaded = true;
	rrp_config_default(&rrp.cfg);
	if (gsh_conf_find(&g)) {
		config_result = gsh_load_file(config_path(), &rrp.cfg, &g);
	} else {
		config_result = rrp_config_parse_file(config_path(), &rrp.cfg);
	}
	return config_result;
}

/* ganesha's own tree is of the file the plugin reads (config_path) unless
 * RPCRDMA_CONFIG names another. */
static bool tree_is_ours(void *tree)
{
	char **p = dlsym(RTLD_DEFAULT, "nfs_config_path");

	return tree && p && *p && !strcmp(config_path(), *p);
}

/*
 * A reload's Exclude_Exports takes effect at once: ganesha rereads its
 * EXPORT blocks at the same reload, and an export newly excluded must not
 * stay reachable until a restart. Each word of the set is stored whole, so
 * a check reads an Export_Id as either set or not; a Call already past its
 * check finishes.
 */
static bool apply_exclusions(const struct rrp_config *n)
{
	unsigned int w;

	if (!memcmp(rrp.cfg.exclude_exports, n->exclude_exports, sizeof(n->exclude_exports)))
		return false;
	for (w = 0; w < RRP_EXPORT_ID_COUNT / 64; w++)
		__atomic_store_n(&rrp.cfg.exclude_exports[w], n->exclude_exports[w],
				 __ATOMIC_RELAXED);
	__atomic_store_n(&rrp.cfg.n_exclude_exports, n->n_exclude_exports, __ATOMIC_RELEASE);
	rrp_exports_refresh();
	rrp_log("reload: Exclude_Exports of %s applied: %u Export_Id%s kept off RDMA",
		config_path(), n->n_exclude_exports, n->n_exclude_exports == 1 ? "" : "s");
	return true;
}

/* SIGHUP: ganesha rereads its LOG and EXPORT blocks, not ours. Apply
 * Exclude_Exports; say so when the other RDMA settings in the file are not
 * the ones served. */
static void reload_check(void *tree, const struct gsh_conf *g)
{
	struct rrp_config *n = malloc(sizeof(*n));
	char keys[256];
	bool applied = false;
	int ret;

	if (!n)
		return;
	rrp_config_default(n);
	ret = tree_is_ours(tree) ? gsh_load_tree(tree, n, g) : gsh_load_file(config_path(), n, g);
	if (ret == -ENOENT) {
		n->enable = false;
		ret = 0;
	}
	if (!ret && !config_result)
		applied = apply_exclusions(n);
	if (ret)
		rrp_warn("reload: the RDMA block in %s is invalid (the CONFIG lines); RDMA goes "
			 "on as it started until ganesha restarts",
			 config_path());
	else if (config_result)
		rrp_warn("reload: RDMA was not served at start-up; the RDMA block of %s takes "
			 "effect when ganesha restarts",
			 config_path());
	else if (rrp_config_diff(&rrp.cfg, n, keys, sizeof(keys)))
		rrp_warn("reload: RDMA settings changed in %s (%s): they take effect when "
			 "ganesha restarts; RDMA goes on with the ones it started with",
			 config_path(), keys);
	else if (!applied)
		rrp_log_at(RRP_LOG_INFO, __func__, "reload: RDMA settings unchanged");
	free(n);
}

/*
 * ganesha hands its parsed configuration to read_log_config at start-up,
 * and again at every reload (SIGHUP, reread_config). At start-up the RDMA
 * block is read from that same tree, so the file is parsed once and its
 * syntax errors are in the log once, as ganesha wrote them; at a reload
 * the block is compared with the settings served.
 */
void rrp_plugin_config_tree(void *tree, void *ganesha_err)
{
	struct gsh_conf g;

	if (!gsh_conf_find(&g))
		return;
	if (atomic_load(&started)) {
		reload_check(tree, &g);
		return;
	}
	if (config_loaded || !tree_is_ours(tree))
		return;
	config_loaded = true;
	rrp_config_default(&rrp.cfg);
	if (!gsh_parse_clean(tree, ganesha_err)) {
		/* ganesha reports its own parse messages */
		rrp_crit("%s has syntax errors (the CONFIG lines): RDMA not served, TCP unaffected",
			 config_path());
		config_result = -EINVAL;
		return;
	}
	config_result = gsh_load_tree(tree, &rrp.cfg, &g);
}

uint16_t rrp_plugin_nfs_port(void)
{
	load_config();
	return rrp.cfg.nfs_port;
}

static enum xprt_stat listener_stat(SVCXPRT *xprt)
{
	(void)xprt;
	return XPRT_IDLE;
}

static void *payload_base;
static size_t payload_len;

static bool payload_done;

/* Half the pool in 64 KiB buffers, half in 1 MiB ones (see rrp_payload.c);
 * once, at the first listener, which may have made it smaller (memlock_fit). */
static void payload_pool_init(uint64_t bytes)
{
	size_t small = bytes / 2 / RRP_PAYLOAD_SMALL;
	size_t large = bytes / 2 / RRP_PAYLOAD_LARGE;

	if (payload_done)
		return;
	payload_done = true;
	if (!bytes || rrp_payload_init(small, large, &payload_base, &payload_len))
		payload_len = 0;
}

/* Whole MiB, rounded up: a bound must not read smaller than it is. */
static unsigned long long mib(uint64_t bytes)
{
	return (unsigned long long)((bytes + (1u << 20) - 1) >> 20);
}

/* A budget as the start-up line says it: whole MiB, or none (0). */
static void mib_or_none(uint64_t bytes, char *out, size_t len)
{
	if (bytes)
		snprintf(out, len, "%llu MiB", mib(bytes));
	else
		snprintf(out, len, "none");
}

/*
 * One line says what a listener serves and the most memory its settings
 * let it register (connections within the budget, the shared receive pool,
 * Read sinks, the READ payload pool; bounds, not what is in use).
 */
static void log_served(const char *addr, int slot, size_t payload_bytes)
{
	const struct rr_config *ec = &rrp.eff[slot];
	struct rr_served sv = rrp.served[slot];
	char conns[48], budget[32], sinks[32];

	if (ec->max_conns_per_peer)
		snprintf(conns, sizeof(conns), "%u connections (%u per peer)", ec->max_conns,
			 ec->max_conns_per_peer);
	else
		snprintf(conns, sizeof(conns), "%u connections", ec->max_conns);
	mib_or_none(ec->recv_mem_budget, budget, sizeof(budget));
	mib_or_none(ec->sink_budget, sinks, sizeof(sinks));
	rrp_log("NFS over RDMA listening on %s: fabric %s, device %s (%s; %u SGEs a Write, "
		"%u a Read, Send With Invalidate %s), credits %u (device holds %u), inline %u, "
		"RDMA Read depth %u, SRQ %s, event threads %u, %s, memory budget %s; "
		"registered memory at most %llu MiB (connections %llu, shared receives %llu, "
		"Read sinks %llu (Read chunks' data within %s), READ payload pool %llu); "
		"built for %s",
		addr, rrp.cfg.fabric, sv.device, sv.transport, sv.write_sge, sv.read_sge,
		sv.send_with_inv ? "yes" : "no", sv.credits, sv.credits_cap, sv.inline_size,
		sv.ord, sv.srq ? "on" : "off", ec->event_threads, conns, budget,
		mib(sv.mem_conns + sv.mem_srq + sv.mem_sinks + payload_bytes), mib(sv.mem_conns),
		mib(sv.mem_srq), mib(sv.mem_sinks), sinks, mib(payload_bytes), rrp_host_ops.name);
}

/* What a listener's settings may register: the start-up line's sum, and on
 * iWARP the sinks once more (each Read registers its sink again while it is
 * in flight, and the kernel counts those pages again). */
static uint64_t reg_need(const struct rr_served *sv, uint64_t payload)
{
	uint64_t sinks = sv->mem_sinks;

	/* iWARP: a sink in flight is registered again for its Read, and the
	 * memory a Reply's Writes read (a READ payload slot, a bounce buffer
	 * of the sink pool) again in its connection's PD (docs/devices.md) */
	if (!strcmp(sv->transport, "iWARP")) {
		sinks *= 2;
		payload *= 2;
	}
	return sv->mem_conns + sv->mem_srq + sinks + payload;
}

/* Registrations the listeners started so far may make (both count: each
 * registers the payload pool and its own buffers). */
static uint64_t locked_planned;

/*
 * The settings against RLIMIT_MEMLOCK where it binds (rrp_memlock.c): a
 * limit registrations would pass fails them one connection at a time, so
 * the listener is made again with Max_Connections, Receive_Memory_Budget,
 * the shared pool's bound, the Read sinks' bound (sink_mem_max), the READ
 * payload pool and Event_Threads scaled down together until all it may register fits
 * (7/8 of what is left: a margin for the parts that do not scale), and one
 * line says so; or, when not even one connection fits, RDMA is not served
 * there. 0 or -ENOMEM; @ec, @sv and @payload are the settings served.
 */
static int memlock_fit(const char *addr, int slot, struct rr_config *ec, struct rr_served *sv,
		       uint64_t *payload)
{
	uint64_t limit = rrp_memlock_limit(sv, !strcmp(rrp.cfg.fabric, "soft"));
	uint64_t need = reg_need(sv, *payload), first_need = need, left;
	struct rr_config want = *ec;
	uint64_t want_payload = *payload, want_sinks = sv->mem_sinks;
	char served[256];
	int ret;

	if (limit == UINT64_MAX || need <= limit - (limit < locked_planned ? limit : locked_planned))
		goto fits;
	left = limit > locked_planned ? limit - locked_planned : 0;
	for (int tries = 0; tries < 6 && need > left; tries++) {
		uint64_t num = left - left / 8, den = need;
		uint64_t conns = sv->mem_conns;

		ec->max_conns = (uint32_t)((uint64_t)ec->max_conns * num / den);
		if (ec->max_conns == 0)
			ec->max_conns = 1;
		if (ec->max_conns_per_peer > ec->max_conns)
			ec->max_conns_per_peer = ec->max_conns;
		ec->recv_mem_budget = conns * num / den;
		if (ec->recv_mem_budget == 0)
			ec->recv_mem_budget = 1;
		/* the engine keeps what one connection needs (rr_big_bound_bytes) */
		ec->sink_mem_max = sv->mem_sinks * num / den;
		if (ec->sink_mem_max == 0)
			ec->sink_mem_max = 1;
		/* whole 2 MiB: one 1 MiB buffer in each half, else none */
		*payload = (*payload * num / den) & ~(uint64_t)((2u << 20) - 1);
		/* each event thread has Read sinks of its own, each pool with a
		 * floor (docs/threading.md): halved, to one at most */
		if (ec->event_threads > 1)
			ec->event_threads /= 2;
		if (ec->use_srq) {
			/* mem_srq is every event thread's pool; the depth is each's */
			uint64_t d = sv->mem_srq / ec->inline_size * num / den / ec->event_threads;

			ec->srq_depth = d < RR_SRQ_MIN_DEPTH ? RR_SRQ_MIN_DEPTH : (uint32_t)d;
		}
		rr_server_destroy(rrp.srv[slot]);
		rrp.srv[slot] = NULL;
		ret = rr_server_create(rrp.fab, addr, ec, &rrp_upper_ops, &rrp, &rrp.srv[slot]);
		if (ret) {
			rrp.srv[slot] = NULL;
			break;
		}
		rr_server_served(rrp.srv[slot], sv);
		need = reg_need(sv, *payload);
	}
	if (!rrp.srv[slot] || need > left) {
		rrp_memlock_say(addr, sv->device, limit, first_need, need, NULL);
		snprintf(rrp.start_why[slot], sizeof(rrp.start_why[slot]),
			 "RLIMIT_MEMLOCK %llu MiB: too small for one RDMA connection",
			 (unsigned long long)(limit >> 20));
		if (rrp.srv[slot])
			rr_server_destroy(rrp.srv[slot]);
		rrp.srv[slot] = NULL;
		return -ENOMEM;
	}
	snprintf(served, sizeof(served),
		 "Max_Connections %u, Receive_Memory_Budget %llu MiB, Payload_Pool_MB %llu, "
		 "Read sinks %llu MiB, Event_Threads %u (set: %u, %llu MiB, %llu, %llu MiB, %u)",
		 ec->max_conns, mib(ec->recv_mem_budget), (unsigned long long)(*payload >> 20),
		 mib(sv->mem_sinks), ec->event_threads, want.max_conns, mib(want.recv_mem_budget),
		 (unsigned long long)(want_payload >> 20), mib(want_sinks), want.event_threads);
	rrp_memlock_say(addr, sv->device, limit, first_need, need, served);
fits:
	locked_planned += need;
	return 0;
}

static int start_server(const char *addr, int slot)
{
	struct rr_config ec;
	struct rr_served sv;
	size_t registered = 0;
	uint64_t payload;
	int ret;

	rr_config_default(&ec);
	rrp_config_engine(&rrp.cfg, &ec);
	rrp_memlock_raise(); /* before the first registration */
	ret = rr_server_create(rrp.fab, addr, &ec, &rrp_upper_ops, &rrp, &rrp.srv[slot]);
	if (ret) {
		rrp_crit("cannot listen on %s (%s): %s: RDMA not served there, TCP unaffected", addr,
			 rrp.cfg.fabric, rr_last_error());
		snprintf(rrp.start_why[slot], sizeof(rrp.start_why[slot]),
			 "cannot listen on %.56s: %.48s", addr, rr_last_error());
		rrp.srv[slot] = NULL;
		return ret;
	}
	/* Nothing is registered yet: the limit is met here, not per connection. */
	payload = payload_done ? payload_len : (uint64_t)rrp.cfg.payload_pool_mb << 20;
	rr_server_served(rrp.srv[slot], &sv);
	ec.max_conns = sv.max_conns; /* 0: the engine chose it from the budget */
	ret = memlock_fit(addr, slot, &ec, &sv, &payload);
	if (ret)
		return ret;
	payload_pool_init(payload);
	if (payload_len) {
		ret = rr_server_add_region(rrp.srv[slot], payload_base, payload_len);
		if (ret)
			rrp_warn("cannot register the payload pool: %s "
					"(READ data will be copied)", fab_last_error());
		else
			registered = payload_len;
	}
	snprintf(rrp.listen[slot], sizeof(rrp.listen[slot]), "%s", addr);
	rr_server_served(rrp.srv[slot], &sv);
	ec.max_ord = (uint8_t)sv.ord; /* the device's, if smaller */
	rrp.eff[slot] = ec; /* shown by the stats socket */
	rrp.served[slot] = sv;
	ret = rr_server_start(rrp.srv[slot]);
	if (ret) {
		snprintf(rrp.start_why[slot], sizeof(rrp.start_why[slot]),
			 "cannot start the RDMA event thread: %s", strerror(-ret));
		return ret;
	}
	log_served(addr, slot, registered);
	return 0;
}

void rrp_plugin_start(void)
{
	char addr[192];
	int ret;

	ret = load_config();
	atomic_store(&started, true);

	if (ret == -ENOENT || (!ret && !rrp.cfg.enable)) {
		rrp_log("no enabled RDMA block in %s: RDMA not served",
			config_path());
		return;
	}
	if (ret) {
		rrp_crit("RDMA block in %s is invalid (see the CONFIG lines): RDMA not served, "
				"TCP unaffected",
			config_path());
		return;
	}
	rr_set_log_sink(engine_log);
	rrp.listeners_wanted = 1;
	ret = fab_open(rrp.cfg.fabric, &rrp.fab);
	if (ret) {
		rrp_crit("fabric %s unavailable: %s: RDMA not served",
			rrp.cfg.fabric, fab_last_error());
		/* The stats socket still tells admins and monitors why. */
		snprintf(rrp.start_why[0], sizeof(rrp.start_why[0]),
			 "fabric %.16s unavailable: %.80s", rrp.cfg.fabric, fab_last_error());
		if (rrp.cfg.stats_socket[0])
			rrp_stats_start(rrp.cfg.stats_socket);
		return;
	}

	rrp.listener_ops.xp_stat = listener_stat;
	rrp.listener.xp_ops = &rrp.listener_ops;
	rrp.listener.xp_type = XPRT_RDMA_RENDEZVOUS;
	rrp.listener.xp_fd = -1;

	rrp.nworkers = rrp.cfg.workers;
	rrp.workers = calloc(rrp.nworkers, sizeof(*rrp.workers));
	for (unsigned int i = 0; rrp.workers && i < rrp.nworkers; i++)
		pthread_create(&rrp.workers[i], NULL, rrp_worker_main, NULL);

	/* Soft_Socket: the soft fabric on a unix socket (tests, the demo) */
	if (rrp.cfg.soft_socket[0])
		snprintf(addr, sizeof(addr), "unix:%s", rrp.cfg.soft_socket);
	else
		snprintf(addr, sizeof(addr), "%s:%u", rrp.cfg.listen_addr, rrp.cfg.port);
	if (rrp.cfg.listen_addr_v6[0] && (fab_caps(rrp.fab) & FAB_CAP_V6_LISTENER))
		rrp.listeners_wanted = 2;
	start_server(addr, 0);
	if (rrp.listeners_wanted == 2) {
		snprintf(addr, sizeof(addr), "[%s]:%u", rrp.cfg.listen_addr_v6, rrp.cfg.port);
		start_server(addr, 1);
	}
	if (rrp.cfg.stats_socket[0])
		rrp_stats_start(rrp.cfg.stats_socket);
	rrp_exports_start();
}

/* The why, made safe to print inside a JSON string. */
static void json_safe(char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			*s = '\'';
		else if ((unsigned char)*s < 0x20)
			*s = ' ';
}

void rrp_health(struct rrp_health *out)
{
	memset(out, 0, sizeof(*out));
	out->listeners = rrp.listeners_wanted;
	for (unsigned int i = 0; i < rrp.listeners_wanted && i < 2; i++) {
		struct rr_health h;
		const char *why = rrp.start_why[i];

		if (rrp.srv[i]) {
			rr_server_health(rrp.srv[i], &h);
			if (h.serving) {
				out->listeners_serving++;
				continue;
			}
			why = h.why;
		} else if (!why[0]) {
			why = "listener not started";
		}
		if (!out->why[0])
			snprintf(out->why, sizeof(out->why), "%s", why);
	}
	out->serving = out->listeners_serving > 0;
	json_safe(out->why);
}
