/* SPDX-License-Identifier: MIT */
/*
 * rrp_config.h - the RDMA block of ganesha.conf (see
 * config_samples/ganesha-rdma.conf for every key, default and range).
 */
#ifndef RPCRDMA_RRP_CONFIG_H
#define RPCRDMA_RRP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Export_Id is a uint16_t in ganesha: 0 (the NFSv4 pseudo root) .. 65535. */
#define RRP_EXPORT_ID_COUNT 65536

struct rrp_config {
	bool enable;
	char listen_addr[64];		/* Listen_Addr: IPv4 (or "0.0.0.0") */
	char listen_addr_v6[64];	/* Listen_Addr_v6: "" = none */
	uint16_t port;			/* Port */
	char fabric[16];		/* Fabric: "verbs" or "soft" */
	char soft_socket[108];		/* Soft_Socket: unix socket path for "soft" */
	uint32_t credits;		/* Credits */
	uint32_t inline_threshold;	/* Inline_Threshold */
	uint32_t max_connections;	/* Max_Connections */
	uint32_t max_conns_per_peer;	/* Max_Connections_Per_Peer; 0 = no cap */
	uint32_t peer_prefix_v4;	/* Peer_Prefix_V4: bits naming an IPv4 peer */
	uint32_t peer_prefix_v6;	/* Peer_Prefix_V6: bits naming an IPv6 peer */
	uint32_t handshake_timeout;	/* Handshake_Timeout, seconds; 0 = none */
	uint32_t idle_timeout;		/* Idle_Timeout, seconds; 0 = none */
	/* Receive_Memory_Budget, bytes; 0 = none; RRP_MEM_BUDGET_AUTO: the
	 * engine's default from the machine (rr_mem_budget_default) */
	uint64_t recv_mem_budget;
	bool use_srq;			/* Use_SRQ: one shared receive pool */
	uint32_t srq_depth;		/* SRQ_Depth: pool bound; 0 = derived */
	uint32_t max_ord;		/* Max_RDMA_Read_Depth */
	uint32_t workers;		/* Worker_Threads */
	uint32_t payload_pool_mb;	/* Payload_Pool_MB: registered READ buffers */
	char stats_socket[108];		/* Stats_Socket: "" = none */
	uint32_t stats_socket_mode;	/* Stats_Socket_Mode: 0600 + any of 0066 */
	/* Stats_Socket_Group as given ("" = the process's group) and its gid */
	char stats_socket_group[64];
	uint32_t stats_socket_gid;
	uint16_t nfs_port;		/* NFS_CORE_PARAM.NFS_Port, to find ganesha's listener */
	/* Exclude_Exports: one bit per Export_Id kept off RDMA (rrp_exports.c) */
	uint64_t exclude_exports[RRP_EXPORT_ID_COUNT / 64];
	uint32_t n_exclude_exports;	/* Export_Ids set above */
};

/* Is Export_Id @id in Exclude_Exports? */
static inline bool rrp_config_export_excluded(const struct rrp_config *c, uint16_t id)
{
	/* a reload stores the words whole (rrp_plugin.c) */
	return __atomic_load_n(&c->exclude_exports[id / 64], __ATOMIC_RELAXED) >> (id % 64) & 1;
}

#define RRP_MEM_BUDGET_AUTO UINT64_MAX

/*
 * Stats_Socket_Mode: read and write bits only (connect(2) needs write; x and
 * the setuid/sticky bits mean nothing on a socket), and always the owner's,
 * so that root's monitors keep working whatever is added for a group.
 */
#define RRP_STATS_MODE_DEFAULT 0600u
#define RRP_STATS_MODE_REQUIRED 0600u
#define RRP_STATS_MODE_ALLOWED 0666u

void rrp_config_default(struct rrp_config *cfg);
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
/*
 * The keys whose values differ between @a and @b, as "Credits, Port" in
 * @out (truncated to @len); returns how many differ.
 */
unsigned int rrp_config_diff(const struct rrp_config *a, const struct rrp_config *b, char *out,
			     size_t len);

#endif
