// SPDX-License-Identifier: MIT
/*
 * The RDMA block of ganesha.conf (src/plugin/rrp_config.c): defaults, every
 * key, ganesha's syntax (case, comments, quotes, other blocks), and bad
 * values named key by key so the admin sees which one and ganesha keeps TCP.
 */
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <unistd.h>

extern "C" {
#include "plugin/rrp_config.h"
}
#include "rpcrdma/rr_xprt.h"


namespace {

/* Parse @text, capturing what the parser writes to stderr. */
int parse(const std::string &text, rrp_config *c, std::string *err)
{
	char path[] = "/tmp/rrp_config_errXXXXXX";
	int fd = mkstemp(path);
	int saved = dup(2);

	fflush(stderr);
	dup2(fd, 2);
	rrp_config_default(c);
	int rc = rrp_config_parse_string(text.c_str(), c);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	lseek(fd, 0, SEEK_SET);
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	unlink(path);
	err->assign(buf, n > 0 ? size_t(n) : 0);
	return rc;
}

TEST(RrpConfig, DefaultsMatchTheSample)
{
	rrp_config c;
	rrp_config_default(&c);
	EXPECT_TRUE(c.enable);
	EXPECT_EQ(c.port, 20049);
	EXPECT_STREQ(c.fabric, "verbs");
	EXPECT_EQ(c.credits, 64u);
	EXPECT_EQ(c.inline_threshold, 4096u);
	/* 0: what the budget holds, decided by the engine (rr_max_conns_for_budget) */
	EXPECT_EQ(c.max_connections, 0u);
	EXPECT_EQ(c.max_conns_per_peer, 64u);
	/* one IPv4 address, one IPv6 /64 */
	EXPECT_EQ(c.peer_prefix_v4, 32u);
	EXPECT_EQ(c.peer_prefix_v6, 64u);
	EXPECT_EQ(c.handshake_timeout, 30u);
	/* no peer holds a slot for ever: past the Linux client's own 5 minutes */
	EXPECT_EQ(c.idle_timeout, 360u);
	/* derived from the machine by the engine (rr_mem_budget_default) */
	EXPECT_EQ(c.recv_mem_budget, RRP_MEM_BUDGET_AUTO);
	EXPECT_FALSE(c.use_srq);
	EXPECT_EQ(c.srq_depth, 0u);
	EXPECT_EQ(c.max_ord, 16u);
	EXPECT_EQ(c.workers, 8u);
	EXPECT_EQ(c.payload_pool_mb, 80u);
	EXPECT_STREQ(c.stats_socket, "/run/rpcrdma/stats.sock");
	EXPECT_EQ(c.stats_socket_mode, 0600u); /* root only */
	EXPECT_STREQ(c.stats_socket_group, "");
	EXPECT_EQ(c.nfs_port, 2049);
}

/*
 * A key decided at start-up and not set takes the engine's own default;
 * Event_Threads is 32 bits wide, so the "not set" mark is stored cut to 32
 * bits and must still read as not set (it once reached the engine as
 * 4294967295 threads, and every plugin test's ganesha refused to serve).
 */
TEST(RrpConfig, AutoKeysNotSetTakeTheEnginesDefault)
{
	rrp_config c;
	rr_config e;
	std::string err;

	ASSERT_EQ(parse("RDMA { Credits = 8; }", &c, &err), 0) << err;
	EXPECT_EQ(rrp_key_get(&c, rrp_key_find("RDMA", "Event_Threads")), RRP_KEY_AUTO);
	rr_config_default(&e);
	rrp_config_engine(&c, &e);
	EXPECT_EQ(e.event_threads, rr_event_threads_default());
	EXPECT_GE(e.event_threads, 1u);
	EXPECT_LE(e.event_threads, 4u);
	EXPECT_EQ(e.credits, 8u);

	ASSERT_EQ(parse("RDMA { Event_Threads = 3; }", &c, &err), 0) << err;
	rr_config_default(&e);
	rrp_config_engine(&c, &e);
	EXPECT_EQ(e.event_threads, 3u);

	std::string bad;
	EXPECT_NE(parse("RDMA { Event_Threads = 0; }", &c, &bad), 0);
	EXPECT_NE(bad.find("Event_Threads"), std::string::npos) << bad;
	EXPECT_NE(parse("RDMA { Event_Threads = 65; }", &c, &bad), 0);
}

TEST(RrpConfig, EveryKeyInGaneshaSyntax)
{
	rrp_config c;
	std::string err;
	const char *text = R"(
# a ganesha.conf with other blocks around
NFS_CORE_PARAM { nfs_port = 12049; Protocols = 3, 4; }
EXPORT { Export_Id = 1; Path = /x; FSAL { Name = MEM; } }
rdma {
	ENABLE = yes;            # names are case-insensitive, as in ganesha
	Listen_Addr = 10.0.0.1;
	Listen_Addr_v6 = "::";
	Port = 20050;
	Fabric = soft;
	Soft_Socket = "/run/x.sock";
	Credits = 128;
	Inline_Threshold = 8192;
	Max_Connections = 10;
	Max_Connections_Per_Peer = 3;
	Peer_Prefix_V4 = 24;
	peer_prefix_v6 = 56;
	Handshake_Timeout = 7;
	Idle_Timeout = 600;
	Receive_Memory_Budget = 64M;
	use_srq = TRUE;
	SRQ_Depth = 4096;
	Max_RDMA_Read_Depth = 4;
	Worker_Threads = 3;
	Payload_Pool_MB = 0;
	Stats_Socket = "";
}
)";
	ASSERT_EQ(parse(text, &c, &err), 0) << err;
	EXPECT_EQ(err, "");
	EXPECT_TRUE(c.enable);
	EXPECT_STREQ(c.listen_addr, "10.0.0.1");
	EXPECT_STREQ(c.listen_addr_v6, "::");
	EXPECT_EQ(c.port, 20050);
	EXPECT_STREQ(c.fabric, "soft");
	EXPECT_STREQ(c.soft_socket, "/run/x.sock");
	EXPECT_EQ(c.credits, 128u);
	EXPECT_EQ(c.inline_threshold, 8192u);
	EXPECT_EQ(c.max_connections, 10u);
	EXPECT_EQ(c.max_conns_per_peer, 3u);
	EXPECT_EQ(c.peer_prefix_v4, 24u);
	EXPECT_EQ(c.peer_prefix_v6, 56u);
	EXPECT_EQ(c.handshake_timeout, 7u);
	EXPECT_EQ(c.idle_timeout, 600u);
	EXPECT_EQ(c.recv_mem_budget, 64ull << 20);
	EXPECT_TRUE(c.use_srq);
	EXPECT_EQ(c.srq_depth, 4096u);
	EXPECT_EQ(c.max_ord, 4u);
	EXPECT_EQ(c.workers, 3u);
	EXPECT_EQ(c.payload_pool_mb, 0u);
	EXPECT_STREQ(c.stats_socket, "");
	EXPECT_EQ(c.nfs_port, 12049) << "NFS_CORE_PARAM.NFS_Port finds ganesha's listener";
}

TEST(RrpConfig, NoRdmaBlockMeansNotServed)
{
	rrp_config c;
	std::string err;
	EXPECT_EQ(parse("NFS_CORE_PARAM { NFS_Port = 2049; }", &c, &err), -ENOENT);
}

TEST(RrpConfig, DisabledBlockParses)
{
	rrp_config c;
	std::string err;
	ASSERT_EQ(parse("RDMA { Enable = false; }", &c, &err), 0);
	EXPECT_FALSE(c.enable);
}

struct Bad {
	const char *line;
	const char *key;
};

TEST(RrpConfig, BadValuesAreNamedKeyByKey)
{
	const Bad rows[] = {
		{"Credits = 0;", "Credits"},
		{"Credits = 16385;", "Credits"},
		{"Inline_Threshold = 512;", "Inline_Threshold"},
		{"Inline_Threshold = 70000;", "Inline_Threshold"},
		{"Port = 0;", "Port"},
		{"Port = 70000;", "Port"},
		{"Max_Connections = -3;", "Max_Connections"},
		{"Max_RDMA_Read_Depth = 256;", "Max_RDMA_Read_Depth"},
		{"Worker_Threads = many;", "Worker_Threads"},
		{"Receive_Memory_Budget = 12Q;", "Receive_Memory_Budget"},
		{"Fabric = infiniband;", "Fabric"},
		{"Enable = maybe;", "Enable"},
		{"Use_SRQ = perhaps;", "Use_SRQ"},
		{"SRQ_Depth = 16;", "SRQ_Depth"}, /* below one growth step */
		{"SRQ_Depth = 65537;", "SRQ_Depth"},
		{"Max_Connections_Per_Peer = 65537;", "Max_Connections_Per_Peer"},
		{"Handshake_Timeout = 86401;", "Handshake_Timeout"},
		{"Idle_Timeout = -1;", "Idle_Timeout"},
		{"Peer_Prefix_V4 = 33;", "Peer_Prefix_V4"},
		{"Peer_Prefix_V6 = 129;", "Peer_Prefix_V6"},
		{"Credit = 4;", "Credit"}, /* a misspelt key is not silently ignored */
		{"Exclude_Exports = 1, 65536;", "Exclude_Exports"},
		{"Exclude_Exports = 1, two;", "Exclude_Exports"},
		{"Exclude_Exports = -1;", "Exclude_Exports"},
		{"Exclude_Exports = 7 }", "Exclude_Exports"}, /* no ';' */
	};
	for (const Bad &b : rows) {
		rrp_config c;
		std::string err;
		std::string text = std::string("RDMA {\n Credits = 8;\n ") + b.line + "\n}\n";
		EXPECT_EQ(parse(text, &c, &err), -EINVAL) << b.line;
		EXPECT_NE(err.find("RDMA: "), std::string::npos) << err;
		EXPECT_NE(err.find(b.key), std::string::npos)
			<< b.line << ": message was: " << err;
		EXPECT_NE(err.find("line 3"), std::string::npos) << err;
	}
}

/* Exclude_Exports: a list of Export_Ids the way ganesha writes lists. */
TEST(RrpConfig, ExcludeExportsList)
{
	rrp_config c;
	std::string err;
	rrp_config_default(&c);
	EXPECT_EQ(c.n_exclude_exports, 0u) << "default: every export over RDMA";
	for (unsigned id = 0; id < RRP_EXPORT_ID_COUNT; id++)
		ASSERT_FALSE(rrp_config_export_excluded(&c, uint16_t(id))) << id;

	const char *text = R"(
EXPORT { Export_Id = 9; Path = /x; Protocols = 3, 4; FSAL { Name = MEM; } }
RDMA {
	Exclude_Exports = 2, 3 ,4,0x10,
		65535;
	Credits = 16;
}
)";
	ASSERT_EQ(parse(text, &c, &err), 0) << err;
	EXPECT_EQ(err, "");
	EXPECT_EQ(c.n_exclude_exports, 5u);
	for (unsigned id : {2u, 3u, 4u, 16u, 65535u})
		EXPECT_TRUE(rrp_config_export_excluded(&c, uint16_t(id))) << id;
	for (unsigned id : {0u, 1u, 5u, 9u, 15u, 17u, 65534u})
		EXPECT_FALSE(rrp_config_export_excluded(&c, uint16_t(id))) << id;
	EXPECT_EQ(c.credits, 16u) << "the key after the list is read";

	/* a repeated key replaces the list; a repeated id counts once */
	ASSERT_EQ(parse("RDMA { Exclude_Exports = 1; Exclude_Exports = 0, 0, 7; }", &c, &err), 0)
		<< err;
	EXPECT_EQ(c.n_exclude_exports, 2u);
	EXPECT_FALSE(rrp_config_export_excluded(&c, 1));
	EXPECT_TRUE(rrp_config_export_excluded(&c, 0));
	EXPECT_TRUE(rrp_config_export_excluded(&c, 7));
}

/* What a reload compares (rrp_config_diff): the keys whose values differ,
 * by name, in the table's order; string keys by their text only. */
TEST(RrpConfig, DiffNamesTheKeysThatChanged)
{
	struct rrp_config a, b;
	char keys[128];

	rrp_config_default(&a);
	rrp_config_default(&b);
	ASSERT_EQ(rrp_config_parse_string("RDMA { Credits = 32; Stats_Socket = /run/a; }", &a), 0);
	ASSERT_EQ(rrp_config_parse_string("RDMA { Credits = 32; Stats_Socket = /run/a; }", &b), 0);
	EXPECT_EQ(rrp_config_diff(&a, &b, keys, sizeof(keys)), 0u);
	EXPECT_STREQ(keys, "");

	/* bytes after a string's NUL are no value */
	snprintf(b.stats_socket, sizeof(b.stats_socket), "/run/abcdef");
	snprintf(b.stats_socket, sizeof(b.stats_socket), "/run/a");
	EXPECT_EQ(rrp_config_diff(&a, &b, keys, sizeof(keys)), 0u);

	ASSERT_EQ(rrp_config_parse_string("RDMA { Credits = 48; Stats_Socket = /run/b; "
					  "Exclude_Exports = 7; }",
					  &b),
		  0);
	EXPECT_EQ(rrp_config_diff(&a, &b, keys, sizeof(keys)), 3u);
	EXPECT_STREQ(keys, "Credits, Stats_Socket, Exclude_Exports");
	/* a short buffer: the count stays whole, the names are cut */
	char small[10];
	EXPECT_EQ(rrp_config_diff(&a, &b, small, sizeof(small)), 3u);
	EXPECT_EQ(std::string(small), "Credits, ");
}

TEST(RrpConfig, GarbageNeverCrashes)
{
	const char *texts[] = {"RDMA {", "RDMA { Credits = ", "}}}}", "RDMA { = = ; }",
			       "\"unterminated", "RDMA { Port = 1 } RDMA { Port = 2; }",
			       "RDMA { Exclude_Exports = ", "RDMA { Exclude_Exports = ,,, ; }",
			       "RDMA { Exclude_Exports = { } }"};
	for (const char *t : texts) {
		rrp_config c;
		std::string err;
		(void)parse(t, &c, &err);
		EXPECT_GE(c.port, 1) << t;
	}
}

} // namespace
