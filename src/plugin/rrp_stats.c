// SPDX-License-Identifier: MIT
/*
 * rrp_stats.c - counters for admins and tests: a unix socket (root only)
 * that answers every connection with one JSON object and closes:
 *   {"fabric":..,"server":{"listen":[..],"uptime_s":..,"settings":{..}},
 *    "global":{counters..},"plugin":{counters..,"workers":..},
 *    "connections":[{"peer":..,"nfs":..,"clientid":..,counters..},..],
 *    "health":{"serving":..,"why":..,"listeners":..,"listeners_serving":..}}
 * Counter names and order come from rr_counters.def (docs/counters.md).
 * rpcrdma-stat reads it; so do the plugin tests.
 *
 * The answer is built in memory from a copy of the connection list (taken
 * under the server's lock, which the event thread needs to list and unlist
 * connections) and only then written, non-blocking, within a deadline: a
 * reader that stops reading costs its own answer, never RDMA service.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "plugin/rrp_plugin.h"

/* The whole answer must be taken within this; then the reader is dropped. */
#define RRP_STATS_WRITE_MS 3000
/* Room for connections that arrive between counting and copying them. */
#define RRP_STATS_SNAP_SLACK 16
/* Copies retried this often when connections keep arriving faster. */
#define RRP_STATS_SNAP_TRIES 4

static int listen_fd = -1;
/* The socket we bound (@sock_name in the directory held open as @sock_dfd),
 * removed at exit only while it is still that one. */
static int sock_dfd = -1;
static char sock_name[sizeof(((struct sockaddr_un *)0)->sun_path)];
static dev_t sock_dev;
static ino_t sock_ino;
/* When the plugin started serving (rrp_stats_start), for uptime_s. */
static struct timespec started;

/* Per-client records (rrp_client), listed by the event threads at
 * conn_up/conn_down and copied by the stats thread; joined to the engine's
 * connections by rr_conn_id (a peer string need not be unique). */
static pthread_mutex_t clients_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rrp_client *clients;
static uint32_t nclients;

void rrp_client_list(struct rrp_client *cl)
{
	pthread_mutex_lock(&clients_lock);
	cl->next = clients;
	clients = cl;
	nclients++;
	pthread_mutex_unlock(&clients_lock);
}

void rrp_client_unlist(struct rrp_client *cl)
{
	pthread_mutex_lock(&clients_lock);
	for (struct rrp_client **pp = &clients; *pp; pp = &(*pp)->next) {
		if (*pp == cl) {
			*pp = cl->next;
			nclients--;
			break;
		}
	}
	pthread_mutex_unlock(&clients_lock);
}

long rrp_clients_snapshot(struct rrp_client_snap **out)
{
	struct rrp_client_snap *s;
	uint32_t n = 0;

	/* Allocated under the lock: the count cannot change in between, and
	 * the list is at most Max_Connections long per listener. */
	pthread_mutex_lock(&clients_lock);
	s = calloc(nclients + 1, sizeof(*s));
	for (struct rrp_client *c = clients; s && c; c = c->next, n++) {
		s[n].conn_id = c->conn_id;
		snprintf(s[n].peer, sizeof(s[n].peer), "%s", c->peer);
		s[n].nfs = atomic_load_explicit(&c->nfs, memory_order_relaxed);
		s[n].clientid = atomic_load_explicit(&c->clientid, memory_order_relaxed);
#define CP(a, name, type, scope, kind, meaning)                                                   \
	s[n].name = atomic_load_explicit(&c->name, memory_order_relaxed);
		RRP_CONN_COUNTERS(CP, ~)
#undef CP
	}
	pthread_mutex_unlock(&clients_lock);
	if (!s)
		return -ENOMEM;
	*out = s;
	return n;
}

static const struct rrp_client_snap *client_find(const struct rrp_client_snap *c, long n,
						 uintptr_t id)
{
	for (long i = 0; i < n; i++)
		if (c[i].conn_id == id)
			return &c[i];
	return NULL;
}

/* A connection's plugin-side fields: NFS version, clientid, byte counts. */
static void put_client(FILE *f, const struct rrp_client_snap *c)
{
	if (c && c->nfs) {
		uint32_t v = c->nfs - 1;

		if (v >> 8 == 4)
			fprintf(f, "\"nfs\":\"4.%u\",", v & 0xff);
		else
			fprintf(f, "\"nfs\":\"%u\",", v >> 8);
	}
	if (c && c->clientid)
		fprintf(f, "\"clientid\":\"%016llx\",", (unsigned long long)c->clientid);
#define PUTC(a, name, type, scope, kind, meaning)                                                 \
	fprintf(f, "\"" #name "\":%llu,", c ? (unsigned long long)c->name : 0ull);
	RRP_CONN_COUNTERS(PUTC, ~)
#undef PUTC
}

/* A device name as a JSON string: names are [A-Za-z0-9_ ()]; anything else
 * (a provider's surprise) becomes '?'. */
static const char *json_safe(const char *in)
{
	static _Thread_local char out[64];
	size_t i;

	for (i = 0; in[i] && i + 1 < sizeof(out); i++)
		out[i] = in[i] == '"' || in[i] == '\\' || (unsigned char)in[i] < 0x20 ? '?' : in[i];
	out[i] = 0;
	return out;
}

/* What is served: listeners, uptime and the engine settings in effect. */
static void put_server(FILE *f)
{
	const struct rr_config *e = NULL;
	const struct rr_served *sv = NULL;
	struct timespec now;
	const char *sep = "";

	clock_gettime(CLOCK_MONOTONIC, &now);
	fprintf(f, "\"server\":{\"listen\":[");
	for (int i = 0; i < 2; i++) {
		if (!rrp.listen[i][0])
			continue;
		fprintf(f, "%s\"%s\"", sep, rrp.listen[i]);
		sep = ",";
		if (!e) {
			e = &rrp.eff[i];
			sv = &rrp.served[i];
		}
	}
	fprintf(f, "],\"uptime_s\":%lld,\"settings\":", (long long)(now.tv_sec - started.tv_sec));
	if (!e) {
		fprintf(f, "null},");
		return;
	}
	fprintf(f,
		"{\"device\":\"%s\",\"credits\":%u,\"credits_cap\":%u,\"inline_size\":%u,"
		"\"use_srq\":%s,\"srq_depth\":%u,"
		"\"recv_mem_budget\":%llu,\"read_sink_budget\":%llu,\"max_connections\":%u,"
		"\"max_connections_per_peer\":%u,\"peer_prefix_v4\":%u,\"peer_prefix_v6\":%u,"
		"\"max_rdma_read_depth\":%u,"
		"\"handshake_timeout\":%u,\"idle_timeout\":%u,\"workers\":%u}},",
		json_safe(sv->device), e->credits, sv->credits_cap, e->inline_size,
		e->use_srq ? "true" : "false",
		e->use_srq ? (e->srq_depth ? e->srq_depth : RR_SRQ_DEFAULT_DEPTH) : 0,
		(unsigned long long)e->recv_mem_budget, (unsigned long long)e->sink_budget,
		e->max_conns, e->max_conns_per_peer,
		e->peer_prefix_v4, e->peer_prefix_v6, e->max_ord, e->handshake_timeout,
		e->idle_timeout, rrp.nworkers);
}

static void put_stats(FILE *f, const struct rr_stats *st)
{
	const char *sep = "";

#define PUT(name)                                                                                  \
	fprintf(f, "%s\"" #name "\":%llu", sep, (unsigned long long)st->name);                    \
	sep = ",";
	RR_STATS_FIELDS(PUT)
#undef PUT
}

/*
 * Copy @srv's connections into memory of our own (*@out, freed by the
 * caller); returns how many, or -ENOMEM. The count is bounded by the
 * server's Max_Connections.
 */
static long snapshot_conns(struct rr_server *srv, struct rr_conn_snap **out)
{
	uint32_t room = rr_server_snapshot_conns(srv, NULL, 0) + RRP_STATS_SNAP_SLACK;

	for (int i = 0; i < RRP_STATS_SNAP_TRIES; i++) {
		struct rr_conn_snap *s = malloc((size_t)room * sizeof(*s));
		uint32_t n;

		if (!s)
			return -ENOMEM;
		n = rr_server_snapshot_conns(srv, s, room);
		if (n <= room) {
			*out = s;
			return n;
		}
		free(s);
		room = n + RRP_STATS_SNAP_SLACK;
	}
	return -ENOMEM;
}

/* The JSON answer in memory (*@buf, freed by the caller); 0 or -errno. */
static int build_json(char **buf, size_t *len)
{
	struct rr_stats total, st;
	bool first = true;
	FILE *f = open_memstream(buf, len);
	int ret = 0;
	struct rrp_health h;
	struct rrp_client_snap *cl = NULL;
	long ncl;

	if (!f)
		return -errno;
	memset(&total, 0, sizeof(total));
	for (int i = 0; i < 2; i++) {
		if (!rrp.srv[i])
			continue;
		rr_server_stats(rrp.srv[i], &st);
#define ADD(name) total.name += st.name;
		RR_STATS_FIELDS(ADD)
#undef ADD
	}
	fprintf(f, "{\"fabric\":\"%s\",", rrp.cfg.fabric);
	put_server(f);
	fprintf(f, "\"global\":{");
	put_stats(f, &total);
	fprintf(f, "},\"plugin\":{");
#define PUTP(a, name, type, scope, kind, meaning)                                                 \
	fprintf(f, "\"" #name "\":%llu,", (unsigned long long)atomic_load(&rrp.name));
	RRP_COUNTERS(PUTP, ~)
#undef PUTP
	fprintf(f, "\"workers\":%u},\"connections\":[", rrp.nworkers);
	ncl = rrp_clients_snapshot(&cl);
	if (ncl < 0)
		ncl = 0;
	for (int i = 0; i < 2 && !ret; i++) {
		struct rr_conn_snap *s = NULL;
		long n;

		if (!rrp.srv[i])
			continue;
		n = snapshot_conns(rrp.srv[i], &s);
		if (n < 0) {
			ret = (int)n;
			break;
		}
		for (long k = 0; k < n; k++) {
			fprintf(f, "%s{\"peer\":\"%s\",", first ? "" : ",", s[k].peer);
			put_client(f, client_find(cl, ncl, s[k].id));
			put_stats(f, &s[k].st);
			fputc('}', f);
			first = false;
		}
		free(s);
	}
	free(cl);
	rrp_health(&h);
	fprintf(f,
		"],\"health\":{\"serving\":%s,\"why\":\"%s\",\"listeners\":%u,"
		"\"listeners_serving\":%u}}",
		h.serving ? "true" : "false", h.why, h.listeners, h.listeners_serving);
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	if (ret) {
		free(*buf);
		*buf = NULL;
	}
	return ret;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* All of @p to the non-blocking @fd within RRP_STATS_WRITE_MS; 0 or -errno. */
static int send_all(int fd, const char *p, size_t len)
{
	int64_t deadline = now_ms() + RRP_STATS_WRITE_MS;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		int64_t left;

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		poll(&pfd, 1, (int)left);
	}
	return 0;
}

static void *stats_thread(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "rpcrdma-stats");
	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		char *buf = NULL;
		size_t len = 0;

		if (fd < 0) {
			if (errno == EBADF || errno == EINVAL)
				return NULL;
			if (errno != EINTR && errno != ECONNABORTED)
				usleep(100000); /* EMFILE, ENOMEM: let it pass */
			continue;
		}
		if (!build_json(&buf, &len) && send_all(fd, buf, len) == -ETIMEDOUT)
			rrp_log("stats socket: a reader took more than %d ms for %zu bytes: dropped",
				RRP_STATS_WRITE_MS, len);
		free(buf);
		close(fd);
	}
}

/*
 * A unix socket's bind or connect by @name inside the directory @dfd, never
 * by its whole path: the path was checked through @dfd (stats_open), and
 * resolving it again would follow whatever a component above now names.
 * AF_UNIX has no bindat/connectat, so a short-lived thread of our own takes
 * a private working directory (unshare(CLONE_FS): cwd and umask become its
 * own, the process's stay as they are), fchdir()s to @dfd and uses the bare
 * name (docs/threading.md, "The stats socket's directory").
 */
struct at_dir_op {
	int dfd;
	int fd;
	const char *name;
	bool bind;	  /* else connect */
	int ret;	  /* 0 or -errno */
	const char *what; /* the call that failed */
};

static void *at_dir_main(void *arg)
{
	struct at_dir_op *op = arg;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", op->name);
	op->ret = 0;
	if (unshare(CLONE_FS)) {
		op->what = "unshare(CLONE_FS)";
	} else if (fchdir(op->dfd)) {
		op->what = "fchdir";
	} else if (op->bind) {
		/* The node is created 0600 from the start: Linux gives it the
		 * socket inode's mode less the umask, so fchmod before bind, and
		 * a umask (this thread's alone) that allows no more. */
		fchmod(op->fd, 0600);
		umask(0177);
		if (bind(op->fd, (struct sockaddr *)&sa, sizeof(sa)))
			op->what = "bind";
	} else if (connect(op->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		op->what = "connect";
	}
	if (op->what)
		op->ret = -errno;
	return NULL;
}

static int at_dir(struct at_dir_op *op)
{
	pthread_t t;
	int ret;

	op->what = NULL;
	ret = pthread_create(&t, NULL, at_dir_main, op);
	if (ret) {
		op->what = "pthread_create";
		return op->ret = -ret;
	}
	pthread_join(t, NULL);
	return op->ret;
}

/* Is a listener answering at @name in @dfd? 1 yes, 0 stale (ECONNREFUSED),
 * -errno (@what the call that failed). */
static int socket_live(int dfd, const char *name, const char **what)
{
	struct at_dir_op op = {.dfd = dfd, .name = name};
	int ret;

	op.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (op.fd < 0) {
		*what = "socket";
		return -errno;
	}
	/* non-blocking: a full backlog (EAGAIN) still means someone listens */
	ret = at_dir(&op);
	if (ret == -ECONNREFUSED)
		ret = 0;
	else if (ret && ret != -EAGAIN && ret != -EINPROGRESS)
		*what = op.what;
	else
		ret = 1;
	close(op.fd);
	return ret;
}

/* Does a directory of @dir_mode keep out the group or others the socket admits? */
static bool dir_mode_lacks_search(mode_t dir_mode)
{
	mode_t m = rrp.cfg.stats_socket_mode;

	return ((m & 060) && !(dir_mode & 011)) || ((m & 006) && !(dir_mode & 001));
}

static void stats_remove(void)
{
	struct stat st;

	/* only our own socket: never a later instance's, never anything else */
	if (sock_dfd >= 0 && !fstatat(sock_dfd, sock_name, &st, AT_SYMLINK_NOFOLLOW) &&
	    S_ISSOCK(st.st_mode) && st.st_dev == sock_dev && st.st_ino == sock_ino)
		unlinkat(sock_dfd, sock_name, 0);
}

/*
 * The socket's last directory when it is missing (/run/rpcrdma): 0700, plus
 * search (never read or write) for the group or others Stats_Socket_Mode lets
 * in, and then the socket's group, so those it names can reach the socket.
 * An existing directory is the admin's: never changed (stats_open warns).
 */
static void stats_mkdir(const char *dir)
{
	mode_t m = 0700;
	int dfd;

	if (rrp.cfg.stats_socket_mode & 060)
		m |= 010;
	if (rrp.cfg.stats_socket_mode & 006)
		m |= 001;
	if (mkdir(dir, 0700))
		return;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	/* on failure it stays root's: stats_open's warning then says so */
	if (rrp.cfg.stats_socket_group[0] && (m & 010) &&
	    fchown(dfd, (uid_t)-1, (gid_t)rrp.cfg.stats_socket_gid))
		m &= ~(mode_t)010;
	if (fchmod(dfd, m)) {
		/* it stays 0700: stats_open's warning says so */
	}
	close(dfd);
}

/*
 * Stats_Socket_Group and Stats_Socket_Mode on the socket just bound (0600,
 * ours): group first, then mode, so it is never open to the wrong group.
 * The directory only root (or we) can change (stats_open checked it), so
 * @name is still our socket. 0 or -errno with @why.
 */
static int stats_set_access(int dfd, const char *name, char *why, size_t whylen)
{
	const struct rrp_config *c = &rrp.cfg;
	struct stat st;

	if (c->stats_socket_group[0] &&
	    fchownat(dfd, name, (uid_t)-1, (gid_t)c->stats_socket_gid, AT_SYMLINK_NOFOLLOW)) {
		snprintf(why, whylen, "Stats_Socket_Group %s (gid %u): %s", c->stats_socket_group,
			 c->stats_socket_gid, strerror(errno));
		return -errno;
	}
	if (c->stats_socket_mode != 0600 && fchmodat(dfd, name, c->stats_socket_mode, 0)) {
		snprintf(why, whylen, "Stats_Socket_Mode %04o: %s", c->stats_socket_mode,
			 strerror(errno));
		return -errno;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISSOCK(st.st_mode) ||
	    (st.st_mode & 07777) != c->stats_socket_mode) {
		snprintf(why, whylen, "the bound socket's mode is %04o, not Stats_Socket_Mode %04o",
			 (unsigned int)(st.st_mode & 07777), c->stats_socket_mode);
		return -EPERM;
	}
	return 0;
}

/*
 * Bind and listen on @path; on refusal, @why says why (for the one log line).
 * Nothing but a stale socket is ever removed from @path, nothing is created
 * through a symlink, and the directory must be one only root (or we) can
 * change: otherwise another user could swap the path between our checks.
 * Every step after the directory's open goes through that open directory,
 * the liveness probe and the bind included (at_dir): a component above it
 * renamed meanwhile changes nothing.
 */
static int stats_open(const char *path, char *why, size_t whylen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[sizeof(sa.sun_path)];
	const char *name = path;
	char *slash;
	struct at_dir_op bop = {0};
	const char *what = "";
	struct stat st;
	int dfd, fd = -1, ret;
	mode_t dir_mode = 0;

	if (!path[0] || strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, whylen, "empty or longer than %zu bytes", sizeof(sa.sun_path) - 1);
		return -EINVAL;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash) {
		snprintf(dir, sizeof(dir), ".");
	} else {
		name = path + (slash - dir) + 1;
		if (slash == dir)
			slash[1] = 0; /* "/" itself */
		else
			*slash = 0;
		stats_mkdir(dir);
	}
	if (!name[0]) {
		snprintf(why, whylen, "names a directory");
		return -EINVAL;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		ret = -errno;
		snprintf(why, whylen, "its directory %s: %s", dir, strerror(errno));
		return ret;
	}
	ret = -EPERM;
	if (fstat(dfd, &st)) {
		ret = -errno;
		snprintf(why, whylen, "its directory %s: %s", dir, strerror(errno));
		goto out;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(why, whylen, "its directory %s is owned by uid %u, not root",
			 dir, (unsigned int)st.st_uid);
		goto out;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, whylen, "its directory %s is writable by group or others (mode %04o)",
			 dir, (unsigned int)(st.st_mode & 07777));
		goto out;
	}
	dir_mode = st.st_mode & 07777;
	if (!fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		int live;

		ret = -EEXIST;
		if (S_ISLNK(st.st_mode)) {
			snprintf(why, whylen, "a symlink is there (left alone)");
			goto out;
		}
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(why, whylen, "something other than a socket is there (left alone)");
			goto out;
		}
		live = socket_live(dfd, name, &what);
		if (live) {
			ret = live > 0 ? -EADDRINUSE : live;
			if (live > 0)
				snprintf(why, whylen, "held by a live instance");
			else
				snprintf(why, whylen, "a socket is there (left alone): %s: %s",
					 what, strerror(-live));
			goto out;
		}
		/* stale: its listener is gone (a crash, SIGKILL) */
		if (unlinkat(dfd, name, 0) && errno != ENOENT) {
			ret = -errno;
			snprintf(why, whylen, "removing a stale socket: %s", strerror(errno));
			goto out;
		}
	} else if (errno != ENOENT) {
		ret = -errno;
		snprintf(why, whylen, "%s", strerror(errno));
		goto out;
	}

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, whylen, "socket: %s", strerror(errno));
		goto out;
	}
	bop.dfd = dfd;
	bop.fd = fd;
	bop.name = name;
	bop.bind = true;
	ret = at_dir(&bop);
	if (ret) {
		snprintf(why, whylen, "%s: %s", bop.what, strerror(-ret));
		goto out;
	}
	/* bind does not follow a symlink: what is there now is our socket */
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISSOCK(st.st_mode) ||
	    (st.st_mode & 077)) {
		ret = -EPERM;
		snprintf(why, whylen, "the bound socket is not private (mode %04o)",
			 (unsigned int)(st.st_mode & 07777));
		unlinkat(dfd, name, 0);
		goto out;
	}
	ret = stats_set_access(dfd, name, why, whylen);
	if (ret) {
		unlinkat(dfd, name, 0);
		goto out;
	}
	if (dir_mode_lacks_search(dir_mode))
		rrp_log("stats socket %s: Stats_Socket_Mode %04o, but its directory %s (mode "
			"%04o) lets only its owner through",
			path, rrp.cfg.stats_socket_mode, dir, (unsigned int)dir_mode);
	if (listen(fd, 8)) {
		ret = -errno;
		snprintf(why, whylen, "listen: %s", strerror(errno));
		unlinkat(dfd, name, 0);
		goto out;
	}
	snprintf(sock_name, sizeof(sock_name), "%s", name);
	sock_dev = st.st_dev;
	sock_ino = st.st_ino;
	sock_dfd = dfd; /* held for stats_remove */
	return fd;
out:
	if (fd >= 0)
		close(fd);
	close(dfd);
	return ret;
}

int rrp_stats_start(const char *path)
{
	char why[192];
	pthread_t t;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &started);
	ret = stats_open(path, why, sizeof(why));
	if (ret < 0) {
		rrp_log("stats socket %s refused: %s; RDMA served without stats", path, why);
		return ret;
	}
	listen_fd = ret;
	/* ganesha's clean stop returns from main: exit handlers run there */
	atexit(stats_remove);
	ret = -pthread_create(&t, NULL, stats_thread, NULL);
	if (ret)
		rrp_log("stats socket %s: no thread: %s", path, strerror(-ret));
	return ret;
}
