// SPDX-License-Identifier: MIT
/*
 * ganesha_server.h - start a real /usr/bin/ganesha.nfsd with the rpcrdma
 * plugin preloaded, on the soft fabric, in a temp directory of its own with
 * unique ports; tear it down (SIGTERM, then SIGKILL) when done.
 *
 * Paths come from CMake (RR_PLUGIN_SO, RR_GANESHA_NFSD) and may be
 * overridden with RPCRDMA_PLUGIN_SO and GANESHA_NFSD in the environment.
 * RR_KEEP_TMP=1 keeps the temp directory (config, logs) for inspection.
 */
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rrplug
{

struct GaneshaOptions {
	uint32_t credits = 32;
	uint32_t inline_threshold = 0;	    /* 0: the plugin's default */
	bool stats = true;		    /* add Stats_Socket when the plugin knows the key */
	uint64_t mem_inode_size = 2u << 20; /* MEM FSAL stores this much data per file */
	bool soft_tcp = false;	  /* soft fabric on tcp:127.0.0.1:<port> instead of a unix socket */
	std::string extra_rdma;	  /* more "Key = value;" lines for the RDMA block */
	std::string extra_nfsv4;  /* more lines for the NFSV4 block */
	std::string extra_export; /* more lines for the EXPORT block (e.g. Delegations) */
	std::string extra_log;	  /* more lines for the LOG block (e.g. COMPONENTS) */
	std::string extra_blocks; /* more top-level blocks (e.g. a second EXPORT) */
	std::string extra_mem;	  /* more lines for the MEM block (e.g. Async_Threads) */
	bool rdma_in_include = false; /* the RDMA block in rdma.conf, %included */
	/* start() waits for this plugin line; empty: for ganesha's banner only
	 * (a LOG block that hides the plugin's events) */
	std::string ready_line = "NFS over RDMA listening on";
	/* non-empty: export this directory with FSAL VFS (still as /mem) instead of MEM */
	std::string vfs_dir;
	/* non-empty: export this GlusterFS volume on that host with FSAL GLUSTER
	 * (still as /mem), instead of MEM or VFS */
	std::string gluster_host, gluster_volume;
	/* a test library preloaded before the plugin, and NAME=value pairs for
	 * ganesha's environment (e.g. for such a library) */
	std::string preload_first;
	std::vector<std::string> env;
	/* non-zero: ganesha's RLIMIT_MEMLOCK, soft and hard (bytes), set in the
	 * launcher as a unit's LimitMEMLOCK= or ulimit -l would */
	uint64_t memlock = 0;
	/* non-zero: these ports instead of free ones (a head restarted after a
	 * crash keeps its addresses; the soft fabric's tcp port with soft_tcp) */
	uint16_t nfs_port = 0, mnt_port = 0, rdma_port = 0;
	/* the NFSV4 block's grace settings (seconds) */
	bool graceless = true;
	uint32_t lease_lifetime = 10, grace_period = 10;
	/* non-empty: the EXPORT's FSAL block contents (e.g. "Name = CEPH;") and
	 * its Path, instead of MEM, VFS or GLUSTER; NFSv3 mounts /mem still */
	std::string fsal, export_path;
	/* seconds start() waits for the plugin's line, then as long again for
	 * the banner (a clustered head waits for its peers at start-up) */
	int start_s = 20;
};

class GaneshaServer
{
      public:
	static std::string plugin_path();
	static std::string ganesha_path();
	/* false (with @why) when the binary or the plugin is missing */
	static bool available(std::string *why);

	GaneshaServer() = default;
	~GaneshaServer();
	GaneshaServer(const GaneshaServer &) = delete;
	GaneshaServer &operator=(const GaneshaServer &) = delete;

	/* Start and wait for the plugin's "listening" line (20 s) and the TCP port. */
	bool start(const GaneshaOptions &o, std::string *err);
	/*
	 * SIGTERM, then SIGKILL after @grace_ms; removes the temp dir unless kept.
	 * Returns true when ganesha exited on SIGTERM within the grace period
	 * (@status gets its wait status), false when it had to be killed.
	 */
	bool stop(int grace_ms = 5000, int *status = nullptr);
	/* SIGKILL at once (a crash: no shutdown, no state written), then stop() */
	void crash();
	bool alive();
	/* ganesha's stderr and log, for failure messages */
	std::string logs() const;

	std::string dir;
	std::string last_dir; /* dir before stop() (kept with RR_KEEP_TMP=1) */
	std::string rdma_addr;	/* "unix:<dir>/rdma.sock" or "tcp:127.0.0.1:<port>" */
	std::string stats_path; /* empty when the plugin has no stats socket */
	uint16_t nfs_port = 0;
	uint16_t mnt_port = 0;
	pid_t pid = -1;

      private:
	bool start_once(const GaneshaOptions &o, std::string *err);
};

/* Start rpcbind (-w) unless it answers on /run/rpcbind.sock. */
bool ensure_rpcbind(std::string *err);

/* Whether a stream socket at @path, or on 127.0.0.1:@port, accepts. */
bool unix_connectable(const std::string &path);
bool tcp_connectable(uint16_t port);

/*
 * A port free for TCP and UDP on IPv4 and IPv6 (ganesha binds all four),
 * other than the three given; 0 if none was found. Another process can take
 * it before ganesha binds it: see GaneshaServer::start.
 */
uint16_t free_port(uint16_t avoid1 = 0, uint16_t avoid2 = 0, uint16_t avoid3 = 0);

/* A whole file ("" if unreadable), and the lines of @text holding @needle. */
std::string slurp(const std::string &path);
std::vector<std::string> lines_with(const std::string &text, const std::string &needle);

} // namespace rrplug
