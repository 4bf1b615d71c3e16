// SPDX-License-Identifier: MIT
/*
 * ganesha_server.cc - see ganesha_server.h.
 */
#include "support/ganesha_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>
#include <thread>

#ifndef RR_PLUGIN_SO
#define RR_PLUGIN_SO ""
#endif
#ifndef RR_GANESHA_NFSD
#define RR_GANESHA_NFSD "/usr/bin/ganesha.nfsd"
#endif

namespace rrplug
{

static std::string env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

std::string GaneshaServer::plugin_path()
{
	return env_or("RPCRDMA_PLUGIN_SO", RR_PLUGIN_SO);
}

std::string GaneshaServer::ganesha_path()
{
	return env_or("GANESHA_NFSD", RR_GANESHA_NFSD);
}

bool GaneshaServer::available(std::string *why)
{
	if (access(ganesha_path().c_str(), X_OK)) {
		*why = ganesha_path() + " is not installed (set GANESHA_NFSD)";
		return false;
	}
	if (plugin_path().empty() || access(plugin_path().c_str(), R_OK)) {
		*why = "the plugin library '" + plugin_path() +
		       "' is missing (not built? set RPCRDMA_PLUGIN_SO)";
		return false;
	}
	return true;
}

std::string slurp(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

std::vector<std::string> lines_with(const std::string &text, const std::string &needle)
{
	std::vector<std::string> out;
	std::istringstream in(text);
	for (std::string l; std::getline(in, l);)
		if (l.find(needle) != std::string::npos)
			out.push_back(l);
	return out;
}

bool unix_connectable(const std::string &path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	sockaddr_un sun = {};
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path.c_str());
	bool ok = connect(fd, reinterpret_cast<sockaddr *>(&sun), sizeof(sun)) == 0;
	close(fd);
	return ok;
}

bool ensure_rpcbind(std::string *err)
{
	if (unix_connectable("/run/rpcbind.sock"))
		return true;
	mkdir("/run/rpcbind", 0755);
	int rc = system("rpcbind -w");
	for (int i = 0; i < 50; i++) {
		if (unix_connectable("/run/rpcbind.sock"))
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	}
	*err = "rpcbind did not start (system() returned " + std::to_string(rc) + ")";
	return false;
}

uint16_t free_port(uint16_t avoid1, uint16_t avoid2, uint16_t avoid3)
{
	for (int tries = 0; tries < 200; tries++) {
		int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		sockaddr_in sin = {};
		sin.sin_family = AF_INET;
		sin.sin_port = 0;
		socklen_t sl = sizeof(sin);
		if (bind(t, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)) ||
		    getsockname(t, reinterpret_cast<sockaddr *>(&sin), &sl)) {
			close(t);
			continue;
		}
		uint16_t p = ntohs(sin.sin_port);
		int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		bool unused = bind(u, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)) == 0;
		close(u);
		close(t);
		/* ganesha binds tcp6 and udp6 as well */
		sockaddr_in6 sin6 = {};
		sin6.sin6_family = AF_INET6;
		sin6.sin6_port = htons(p);
		for (int type : {SOCK_STREAM, SOCK_DGRAM}) {
			int s6 = socket(AF_INET6, type | SOCK_CLOEXEC, 0);
			if (s6 >= 0 && bind(s6, reinterpret_cast<sockaddr *>(&sin6), sizeof(sin6)))
				unused = false;
			if (s6 >= 0)
				close(s6);
		}
		if (unused && p != avoid1 && p != avoid2 && p != avoid3 && p > 1024)
			return p;
	}
	return 0;
}

GaneshaServer::~GaneshaServer()
{
	stop();
}

bool GaneshaServer::alive()
{
	if (pid <= 0)
		return false;
	int st;
	pid_t r = waitpid(pid, &st, WNOHANG);
	if (r == pid) {
		pid = -1;
		return false;
	}
	return true;
}

std::string GaneshaServer::logs() const
{
	if (dir.empty())
		return "";
	std::string s = slurp(dir + "/stderr.log");
	std::string l = slurp(dir + "/ganesha.log");
	if (l.size() > 6000)
		l = "..." + l.substr(l.size() - 6000);
	return "--- ganesha stderr ---\n" + s + "--- ganesha log (tail) ---\n" + l;
}

bool tcp_connectable(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_in sin = {};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bool ok = connect(fd, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)) == 0;
	close(fd);
	return ok;
}

bool GaneshaServer::start(const GaneshaOptions &o, std::string *err)
{
	/*
	 * ganesha unsets and re-sets its rpcbind registrations at start-up; two
	 * instances starting at once (parallel ctest, other users of this host)
	 * can make one exit with "Cannot register NFS V3 on UDP". That is the
	 * host's shared rpcbind, not the plugin: start again after a pause.
	 * Likewise a port free_port found free can be taken before ganesha
	 * binds it (another test's outgoing connection gets it as its
	 * ephemeral port): ganesha stops with "Address already in use", and the
	 * next attempt
	 * picks new ports.
	 */
	for (int attempt = 0;; attempt++) {
		if (start_once(o, err))
			return true;
		bool host_race = err->find("Cannot register") != std::string::npos ||
				 (err->find("Cannot bind") != std::string::npos &&
				  err->find("Address already in use") != std::string::npos);
		if (attempt >= 4 || !host_race)
			return false;
		std::this_thread::sleep_for(std::chrono::milliseconds(200 + (getpid() % 7) * 100));
	}
}

/* the EXPORT's FSAL sub-block: MEM, VFS or GLUSTER (gfapi logs beside ganesha's) */
static std::string fsal_block(const GaneshaOptions &o, const std::string &dir)
{
	if (!o.fsal.empty())
		return o.fsal;
	if (!o.gluster_volume.empty())
		return "Name = GLUSTER; Hostname = \"" + o.gluster_host + "\"; Volume = \"" +
		       o.gluster_volume + "\"; glfs_log = \"" + dir + "/gfapi.log\";";
	return o.vfs_dir.empty() ? "Name = MEM;" : "Name = VFS;";
}

/*
 * A ":CONFIG :CRIT" line of ganesha's about our own config. Not those about
 * what this release does not know: ganesha 5.9 reports a block or key it
 * does not own (RDMA, MEM without FSAL MEM, allow_set_io_flusher_fail) as
 * CRIT and goes on; 4.3 and 6.5 say WARN.
 */
static bool config_rejected(const std::string &log)
{
	std::istringstream in(log);
	std::string line;

	while (std::getline(in, line)) {
		if (line.find(":CONFIG :CRIT") == std::string::npos)
			continue;
		if (line.find("Unknown block (") != std::string::npos ||
		    line.find("Unknown parameter (allow_set_io_flusher_fail)") != std::string::npos)
			continue;
		return true;
	}
	return false;
}

bool GaneshaServer::start_once(const GaneshaOptions &opts, std::string *err)
{
	GaneshaOptions o = opts;

	if (!available(err))
		return false;
	if (!ensure_rpcbind(err))
		return false;
	char tmpl[] = "/tmp/rrplug.XXXXXX";
	if (!mkdtemp(tmpl)) {
		*err = std::string("mkdtemp: ") + strerror(errno);
		return false;
	}
	dir = tmpl;
	mkdir((dir + "/recov").c_str(), 0755);
	/*
	 * RR_TEST_FSAL=VFS: a directory of the test's own with FSAL VFS where a
	 * test asks for FSAL MEM (Debian's ganesha 5.9 FSAL MEM aborts on
	 * NFSv3 REMOVE, over TCP too: the suites run on 5.9 this way).
	 */
	const char *fsal = getenv("RR_TEST_FSAL");
	if (fsal && !strcmp(fsal, "VFS") && o.vfs_dir.empty() && o.gluster_volume.empty()) {
		/* ganesha 5.9 and 6.5 refuse a VFS export on tmpfs (/tmp in the
		 * release roots): RR_TEST_VFS_BASE names a disk-backed folder */
		const char *base = getenv("RR_TEST_VFS_BASE");
		std::string t = std::string(base ? base : dir.c_str()) + "/rrvfs.XXXXXX";
		std::vector<char> b(t.begin(), t.end());
		b.push_back('\0');
		if (!mkdtemp(b.data())) {
			*err = std::string("mkdtemp ") + t + ": " + strerror(errno);
			return false;
		}
		o.vfs_dir = b.data();
		chmod(o.vfs_dir.c_str(), 0777);
	}
	nfs_port = o.nfs_port ? o.nfs_port : free_port(0, 0, 0);
	mnt_port = o.mnt_port ? o.mnt_port : free_port(nfs_port, 0, 0);
	uint16_t nlm = free_port(nfs_port, mnt_port, 0);
	uint16_t rq = free_port(nfs_port, mnt_port, nlm);
	if (!nfs_port || !mnt_port || !nlm || !rq) {
		*err = "no free ports";
		return false;
	}
	uint16_t rdma_port = !o.soft_tcp ? 0 : o.rdma_port ? o.rdma_port
							   : free_port(nfs_port, mnt_port, nlm);
	rdma_addr = o.soft_tcp ? "tcp:127.0.0.1:" + std::to_string(rdma_port)
			       : "unix:" + dir + "/rdma.sock";
	stats_path = o.stats ? dir + "/stats.sock" : "";

	std::ostringstream c;
	c << "NFS_CORE_PARAM {\n"
	  << "\tNFS_Port = " << nfs_port << ";\n\tMNT_Port = " << mnt_port << ";\n"
	  << "\tNLM_Port = " << nlm << ";\n\tRquota_Port = " << rq << ";\n"
	  << "\tProtocols = 3, 4;\n\tEnable_NLM = false;\n\tEnable_RQUOTA = false;\n"
	  << "\tMaxRPCSendBufferSize = 4194304;\n\tMaxRPCRecvBufferSize = 4194304;\n"
	  /* ganesha 6 stops without CAP_SYS_RESOURCE otherwise; 4.3 and 5.9 warn
	   * that they do not know the key */
	  << "\tallow_set_io_flusher_fail = true;\n"
	  /* NFSv3 MOUNT by the pseudo path /mem, whatever the export's Path */
	  << (o.vfs_dir.empty() && o.export_path.empty() ? "" : "\tMount_Path_Pseudo = true;\n")
	  << "}\n"
	  << "NFSV4 {\n\tGraceless = " << (o.graceless ? "true" : "false")
	  << ";\n\tLease_Lifetime = " << o.lease_lifetime
	  << ";\n\tGrace_Period = " << o.grace_period << ";\n"
	  << "\tRecoveryRoot = " << dir << "/recov;\n"
	  << o.extra_nfsv4 << "}\n"
	  << "EXPORT {\n\tExport_Id = 1;\n\tPath = "
	  << (!o.export_path.empty() ? o.export_path
	      : o.vfs_dir.empty() ? std::string("/mem") : o.vfs_dir)
	  << ";\n\tPseudo = /mem;\n"
	  << "\tAccess_Type = RW;\n\tSquash = No_Root_Squash;\n\tProtocols = 3, 4;\n"
	  << "\tMaxRead = 4194304;\n\tMaxWrite = 4194304;\n"
	  << o.extra_export << "\tFSAL { " << fsal_block(o, dir)
	  << " }\n}\n"
	  /* FSAL_MEM keeps file data only up to Inode_Size bytes (default 0: none) */
	  << "MEM {\n\tInode_Size = " << o.mem_inode_size << ";\n" << o.extra_mem << "}\n";
	/* the RDMA block, in the file itself or in one it %includes */
	std::ostringstream rdma_file;
	std::ostream &r = o.rdma_in_include ? static_cast<std::ostream &>(rdma_file) : c;
	if (o.rdma_in_include)
		c << "%include \"" << dir << "/rdma.conf\"\n";
	r << "RDMA {\n\tEnable = true;\n\tFabric = soft;\n"
	  << (o.soft_tcp ? "\tListen_Addr = 127.0.0.1;\n\tPort = " + std::to_string(rdma_port)
			 : "\tSoft_Socket = " + dir + "/rdma.sock")
	  << ";\n"
	  << "\tCredits = " << o.credits << ";\n";
	if (o.inline_threshold)
		r << "\tInline_Threshold = " << o.inline_threshold << ";\n";
	if (!stats_path.empty())
		r << "\tStats_Socket = " << stats_path << ";\n";
	/* The suites again over several event threads (docs/threading.md). */
	if (getenv("RPCRDMA_TEST_EVENT_THREADS") && o.extra_rdma.find("Event_Threads") == std::string::npos)
		r << "\tEvent_Threads = " << atoi(getenv("RPCRDMA_TEST_EVENT_THREADS")) << ";\n";
	r << o.extra_rdma << "}\n";
	if (o.rdma_in_include) {
		std::ofstream f(dir + "/rdma.conf");
		f << rdma_file.str();
		if (!f) {
			*err = "cannot write " + dir + "/rdma.conf";
			return false;
		}
	}
	c << "LOG {\n\tDefault_Log_Level = EVENT;\n"
	  << o.extra_log << "}\n"
	  << o.extra_blocks;
	std::string conf = dir + "/ganesha.conf";
	{
		std::ofstream f(conf);
		f << c.str();
		if (!f) {
			*err = "cannot write " + conf;
			return false;
		}
	}

	std::string gan = ganesha_path(), plug = plugin_path();
	std::string logf = dir + "/ganesha.log", pidf = dir + "/ganesha.pid";
	std::string errf = dir + "/stderr.log";
	pid = fork();
	if (pid < 0) {
		*err = std::string("fork: ") + strerror(errno);
		return false;
	}
	if (pid == 0) {
		setpgid(0, 0);
		int fd = open(errf.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (o.preload_first.empty())
			setenv("LD_PRELOAD", plug.c_str(), 1);
		else
			setenv("LD_PRELOAD", (o.preload_first + ":" + plug).c_str(), 1);
		for (const auto &e : o.env) {
			size_t eq = e.find('=');
			if (eq != std::string::npos)
				setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
		}
		if (o.memlock) {
			struct rlimit rl = {o.memlock, o.memlock};
			if (setrlimit(RLIMIT_MEMLOCK, &rl))
				_exit(126);
		}
		execl(gan.c_str(), "ganesha.nfsd", "-F", "-f", conf.c_str(), "-L", logf.c_str(),
		      "-p", pidf.c_str(), static_cast<char *>(nullptr));
		_exit(127);
	}
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.start_s);
	bool listening = o.ready_line.empty();
	while (!listening && std::chrono::steady_clock::now() < deadline) {
		/* the plugin's lines are in ganesha's log; the preloaded
		 * library's, before the core is loaded, on stderr */
		std::string s = slurp(errf) + slurp(logf);
		if (s.find(o.ready_line) != std::string::npos) {
			listening = true;
			break;
		}
		if (s.find("RDMA not served") != std::string::npos) {
			*err = "the plugin does not serve RDMA:\n" + logs();
			stop();
			return false;
		}
		if (!alive()) {
			*err = "ganesha exited at start-up:\n" + logs();
			stop();
			return false;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	if (!listening) {
		*err = "no 'NFS over RDMA listening' line within " + std::to_string(o.start_s) +
		       " s:\n" + logs();
		stop();
		return false;
	}
	while (std::chrono::steady_clock::now() < deadline + std::chrono::seconds(o.start_s / 2)) {
		/* a config error leaves ganesha up without the export: fail loudly */
		if (config_rejected(slurp(logf))) {
			*err = "ganesha rejected the generated config:\n" + logs();
			stop();
			return false;
		}
		/* the ports open before the exports are ready: wait for the banner too */
		if (slurp(logf).find("NFS SERVER INITIALIZED") != std::string::npos &&
		    tcp_connectable(nfs_port) && tcp_connectable(mnt_port))
			return true;
		if (!alive())
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	*err = "ganesha never finished start-up (banner, TCP ports):\n" + logs();
	stop();
	return false;
}

void GaneshaServer::crash()
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		int st;
		waitpid(pid, &st, 0);
		pid = -1;
	}
	stop();
}

bool GaneshaServer::stop(int grace_ms, int *status)
{
	bool clean = true;
	if (pid > 0) {
		kill(pid, SIGTERM);
		auto deadline =
		    std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
		int st;
		bool gone = false;
		while (std::chrono::steady_clock::now() < deadline) {
			if (waitpid(pid, &st, WNOHANG) == pid) {
				gone = true;
				break;
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		}
		if (!gone) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			clean = false;
		}
		if (status)
			*status = st;
		pid = -1;
	}
	if (!dir.empty()) {
		const char *keep = getenv("RR_KEEP_TMP");
		if (!keep || strcmp(keep, "1")) {
			std::string cmd = "rm -rf '" + dir + "'";
			if (system(cmd.c_str()) != 0) {
				/* best effort */
			}
		}
		last_dir = dir;
		dir.clear();
	}
	return clean;
}

} // namespace rrplug
