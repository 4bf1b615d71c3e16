/* SPDX-License-Identifier: MIT */
/*
 * rrp_config.h - the RDMA block of ganesha.conf: its keys are listed once,
 * in rrp_keys.def (config_samples/ganesha-rdma.conf says what each means).
 */
#ifndef RPCRDMA_RRP_CONFIG_H
#define RPCRDMA_RRP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Export_Id is a uint16_t in ganesha: 0 (the NFSv4 pseudo root) .. 65535. */
#define RRP_EXPORT_ID_COUNT 65536

#include "plugin/rrp_keys.def"

/* Each key's member, of its type: strings hold hi bytes and a NUL,
 * Exclude_Exports one bit per Export_Id. */
#define RRP_CTYPE_BOOL bool
#define RRP_CTYPE_U16 uint16_t
#define RRP_CTYPE_U32 uint32_t
#define RRP_CTYPE_U32Z uint32_t
#define RRP_CTYPE_U64 uint64_t
#define RRP_CTYPE_MODE uint32_t
#define RRP_CTYPE_STR char
#define RRP_CTYPE_FABRIC char
#define RRP_CTYPE_GROUP char
#define RRP_CTYPE_EXPORTS uint64_t
#define RRP_DIM_BOOL(hi)
#define RRP_DIM_U16(hi)
#define RRP_DIM_U32(hi)
#define RRP_DIM_U32Z(hi)
#define RRP_DIM_U64(hi)
#define RRP_DIM_MODE(hi)
#define RRP_DIM_STR(hi) [(hi) + 1]
#define RRP_DIM_FABRIC(hi) [(hi) + 1]
#define RRP_DIM_GROUP(hi) [(hi) + 1]
#define RRP_DIM_EXPORTS(hi) [((hi) + 1) / 64]
#define RRP_CONFIG_MEMBER(a, name, type, member, lo, hi, dflt, engine)                             \
	RRP_CTYPE_##type member RRP_DIM_##type(hi);

/* The settings: one member per key of rrp_keys.def, and what follows from
 * them. */
struct rrp_config {
	RRP_KEYS(RRP_CONFIG_MEMBER, _)
	RRP_CORE_KEYS(RRP_CONFIG_MEMBER, _)
	uint32_t stats_socket_gid;	/* Stats_Socket_Group's, resolved */
	uint32_t n_exclude_exports;	/* Export_Ids set in exclude_exports */
};

/* Is Export_Id @id in Exclude_Exports? */
static inline bool rrp_config_export_excluded(const struct rrp_config *c, uint16_t id)
{
	/* a reload stores the words whole (rrp_plugin.c) */
	return __atomic_load_n(&c->exclude_exports[id / 64], __ATOMIC_RELAXED) >> (id % 64) & 1;
}


/*
 * Stats_Socket_Mode: read and write bits only (connect(2) needs write; x and
 * the setuid/sticky bits mean nothing on a socket), and always the owner's,
 * so that root's monitors keep working whatever is added for a group.
 */
#define RRP_STATS_MODE_DEFAULT 0600u
#define RRP_STATS_MODE_REQUIRED 0600u
#define RRP_STATS_MODE_ALLOWED 0666u

/* A key's default decided at start-up (Receive_Memory_Budget). */
#define RRP_KEY_AUTO UINT64_MAX
#define RRP_MEM_BUDGET_AUTO RRP_KEY_AUTO

/* The keys' table, from rrp_keys.def (which says what each column means). */
enum rrp_key_type {
	RRP_KEY_BOOL,
	RRP_KEY_U16,
	RRP_KEY_U32,
	RRP_KEY_U32Z,
	RRP_KEY_U64,
	RRP_KEY_STR,
	RRP_KEY_FABRIC,
	RRP_KEY_MODE,
	RRP_KEY_GROUP,
	RRP_KEY_EXPORTS,
};

enum rrp_key_dflt {
	RRP_DFLT_VAL,	/* dflt_num or dflt_str */
	RRP_DFLT_ENG,	/* the engine's, from rr_config_default */
	RRP_DFLT_AUTO,	/* RRP_KEY_AUTO; auto_doc says what start-up makes it */
};

struct rrp_key {
	const char *name;
	const char *block;		/* "RDMA", or "NFS_CORE_PARAM" for NFS_Port */
	enum rrp_key_type type;
	size_t off, len;		/* its member of struct rrp_config */
	uint64_t lo, hi;		/* numbers: range; MODE: bits required, allowed */
	enum rrp_key_dflt dflt;
	uint64_t dflt_num;
	const char *dflt_str;		/* STR, FABRIC, GROUP */
	const char *auto_doc;
	size_t eng_off, eng_len;	/* struct rr_config's field; eng_len 0: none */
};

extern const struct rrp_key rrp_keys[];
extern const unsigned int rrp_key_count;

#define RRP_KEY_COUNT_ONE(a, ...) +1
/* Keys in rrp_keys[]: the RDMA block's, then NFS_CORE_PARAM's. */
enum { RRP_KEY_COUNT = 0 RRP_KEYS(RRP_KEY_COUNT_ONE, _) RRP_CORE_KEYS(RRP_KEY_COUNT_ONE, _) };

/* A key of the RDMA block (not one of ganesha's own blocks). */
static inline bool rrp_key_rdma(const struct rrp_key *k)
{
	return !strcmp(k->block, "RDMA");
}

static inline bool rrp_key_is_string(const struct rrp_key *k)
{
	return k->type == RRP_KEY_STR || k->type == RRP_KEY_FABRIC || k->type == RRP_KEY_GROUP;
}

/* Read and written with rrp_key_get and rrp_key_set. */
static inline bool rrp_key_is_number(const struct rrp_key *k)
{
	return !rrp_key_is_string(k) && k->type != RRP_KEY_EXPORTS;
}

/* The key @name (compared without case) of @block; NULL if none. */
const struct rrp_key *rrp_key_find(const char *block, const char *name);
/* A number key's value (BOOL, U16, U32, U32Z, U64, MODE). */
uint64_t rrp_key_get(const struct rrp_config *c, const struct rrp_key *k);
void rrp_key_set(struct rrp_config *c, const struct rrp_key *k, uint64_t v);
/* A number key's range as the docs write it ("1..16384", "0 or 32..65536",
 * "0..1T", "0600..0666"); "" for keys without one. */
void rrp_key_range(const struct rrp_key *k, char *out, size_t len);

void rrp_config_default(struct rrp_config *cfg);
struct rr_config;
/* The keys the engine serves, into @ec (made by rr_config_default). */
void rrp_config_engine(const struct rrp_config *c, struct rr_config *ec);
/*
 * Parse @path for RDMA { ... } (and NFS_CORE_PARAM { NFS_Port }). Returns 0;
 * -ENOENT when the file has no RDMA block; -EINVAL after logging one line
 * per bad key ("RDMA: Credits: 0 is outside 1..16384").
 */
int rrp_config_parse_file(const char *path, struct rrp_config *cfg);
int rrp_config_parse_string(const char *text, struct rrp_config *cfg);
/*
 * Stats_Socket_Group: @name (a group name or number; "" = none) resolved
 * into @cfg. 0, -EINVAL when too long, -ENOENT or -errno when not a group.
 */
int rrp_config_stats_group(struct rrp_config *cfg, const char *name);
/* One Export_Id of Exclude_Exports (key @k) added to @cfg's set; -EINVAL
 * when @v is not one. Both readers' rule. */
int rrp_config_exclude(struct rrp_config *cfg, const struct rrp_key *k, const char *v);
/* Stats_Socket_Mode (key @k): octal, its required bits plus any of the
 * allowed ones, into @mode; -EINVAL otherwise. Both readers' rule. */
int rrp_config_mode(const struct rrp_key *k, const char *v, uint32_t *mode);
/*
 * The keys whose values differ between @a and @b, as "Credits, Port" in
 * @out (truncated to @len); returns how many differ.
 */
unsigned int rrp_config_diff(const struct rrp_config *a, const struct rrp_config *b, char *out,
			     size_t len);

#endif
