/* SPDX-License-Identifier: MIT */
/*
 * rrp_gsh.h - the part of ganesha's configuration and log interface the
 * plugin calls (libganesha_nfsd exports config_ParseFile,
 * load_config_from_parse, report_config_errors, config_errs_to_log,
 * init_error_type, config_Free, DisplayLogComponentLevel; ganesha installs
 * no header for them).
 *
 * Declared here from the layouts of config_parsing.h and analyse.h, which
 * are the same in every release of host/; a release that changes them
 * moves these declarations into its host adapter (rrp_host_abi.h). The
 * functions are found with dlsym at run time, so the core has no link-time
 * dependency on ganesha.
 */
#ifndef RPCRDMA_RRP_GSH_H
#define RPCRDMA_RRP_GSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* enum config_type */
enum rrp_gsh_type {
	RRP_GSH_UINT16 = 2,
	RRP_GSH_UINT32 = 4,
	RRP_GSH_UINT64 = 6,
	RRP_GSH_STRING = 9,
	RRP_GSH_TOKEN = 13,
	RRP_GSH_BOOL = 14,
	RRP_GSH_BLOCK = 17,
	RRP_GSH_PROC = 18,
};

#define RRP_GSH_UNIQUE 0x001 /* CONFIG_UNIQUE */
#define RRP_GSH_RELAX 0x008  /* CONFIG_RELAX: other keys are not reported */

/* struct config_error_type */
struct rrp_gsh_err {
	bool scan : 1, parse : 1, init : 1, fsal : 1, cur_exp_create_err : 1,
	    all_exp_create_err : 1, resource : 1, unique : 1, invalid : 1, missing : 1,
	    validate : 1, exists : 1, internal : 1, bogus : 1, deprecated : 1, dispose : 1;
	uint32_t errors;
	char *diag_buf;
	size_t diag_buf_size;
	FILE *fp; /* the messages, each "Config File (file:line): ...\f" */
};

/* ganesha's config_error_is_harmless(): nothing but warnings */
static inline bool rrp_gsh_err_harmless(const struct rrp_gsh_err *e)
{
	return !(e->scan || e->parse || e->init || e->fsal || e->resource || e->internal ||
		 e->invalid || e->all_exp_create_err || e->missing || e->unique || e->exists ||
		 e->dispose);
}

/* struct config_item_list */
struct rrp_gsh_token {
	const char *token;
	uint32_t value;
};

/* struct config_item; the union holds the members the plugin uses, and its
 * largest (blk, five pointers) sets its size */
struct rrp_gsh_item {
	const char *name;
	const char *altname;
	enum rrp_gsh_type type;
	int flags;
	union {
		struct {
			bool def;
		} b;
		struct {
			int minsize, maxsize;
			const char *def;
		} str;
		struct {
			uint16_t minval, maxval, def;
			bool zero_ok;
		} ui16;
		struct {
			uint32_t minval, maxval, def;
			bool zero_ok;
		} ui32;
		struct {
			uint64_t minval, maxval, def;
			bool zero_ok;
			uint32_t bit;
			size_t set_off;
		} ui64;
		struct {
			uint32_t def, mask;
			const struct rrp_gsh_token *tokens;
			size_t set_off;
		} lst;
		struct {
			void *(*init)(void *link_mem, void *self);
			struct rrp_gsh_item *params;
			int (*commit)(void *node, void *link_mem, void *self,
				      struct rrp_gsh_err *err);
			void (*display)(const char *step, void *node, void *link_mem,
					void *self);
			bool (*check)(void *self, struct rrp_gsh_err *err);
		} blk;
		struct {
			size_t set_off;
			void *(*init)(void *link_mem, void *self);
			int (*handler)(const char *token, int term_type, struct rrp_gsh_item *item,
				       void *param_addr, void *node, struct rrp_gsh_err *err);
		} proc;
	} u;
	size_t off;
};

/* struct config_block */
struct rrp_gsh_block {
	char *dbus_interface_name;
	struct rrp_gsh_item blk_desc;
};

/* The head of analyse.h's struct config_node: where a key or block was
 * written, for messages in ganesha's own "Config File (file:line)" form. */
struct rrp_gsh_node_head {
	void *node[2];
	void *blocks[2];
	const char *filename;
	int linenumber;
};

/*
 * ganesha's log numbering (log_common.h / log.h), the same in every release
 * of host/. The plugin logs under COMPONENT_DISPATCH, ganesha's own
 * component for the transports it serves: the 10th log_components_t (its
 * name in LOG { COMPONENTS } is DISPATCH; a line shows ":DISP :").
 * log_levels_t: NIV_NULL 0, FATAL 1, MAJ 2, CRIT 3, WARN 4, EVENT 5, INFO 6,
 * DEBUG 7.
 */
#define RRP_GSH_LOG_COMPONENT 9
#define RRP_GSH_NIV_CRIT 3
#define RRP_GSH_NIV_WARN 4
#define RRP_GSH_NIV_EVENT 5
#define RRP_GSH_NIV_INFO 6
#define RRP_GSH_NIV_DEBUG 7

#endif
