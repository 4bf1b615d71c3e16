// SPDX-License-Identifier: MIT
/*
 * cb_shim.c - a test-only library preloaded into ganesha *before* the
 * rpcrdma plugin, standing in for ganesha's own callback simulator (cbsim, a
 * DBus service that Debian's 4.3 build leaves out).
 *
 * ganesha 4.3 sends NFSv4.1 callbacks only to recall delegations, and with
 * FSAL MEM or VFS it grants none; this shim lets the backchannel tests drive
 * the plugin's backchannel CLIENT inside the real ganesha process anyway:
 *  - it sees every clnt_vc_ncreate_svc ganesha makes for a session's back
 *    channel (CREATE_SESSION with CONN_BACK_CHAN), passes it on to the next
 *    definition (the plugin, for RDMA connections) and keeps a reference to
 *    the CLIENT it returns, by callback program;
 *  - on a command from the test (unix socket $RR_CB_SHIM_SOCK, one command
 *    per connection) it makes a callback with the ntirpc calls ganesha makes:
 *      "null PROG"                 CB_NULL: clnt_req_fill, clnt_req_setup,
 *                                  CLNT_CALL_WAIT (as rpc_cb_null) -> "stat N"
 *      "compound PROG TMO HEX"     CB_COMPOUND with these argument bytes:
 *                                  clnt_req_setup, CLNT_CALL_BACK with a
 *                                  completion (as nfs_rpc_call) -> "id N"
 *      "result ID"                 "pending" or "done STAT CBSTATUS"
 *      "drop PROG"                 release the CLIENT reference
 * Nothing here is part of the product; the plugin is not changed by it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rpc/rpc.h>
#include <rpc/clnt.h>

#define EXPORTED __attribute__((visibility("default")))
#define MAX_CLIENTS 64
#define MAX_CALLS 1024

struct kept {
	uint32_t prog;
	CLIENT *clnt;
};

struct shim_call {
	struct clnt_req cc; /* first */
	int id;
	uint32_t *words;
	size_t nwords;
	uint32_t cbstatus;
};

struct result {
	int state; /* 0 unused, 1 pending, 2 done */
	int stat;
	uint32_t cbstatus;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept kept[MAX_CLIENTS];
static struct result results[MAX_CALLS];
static int next_id;
static AUTH *none_auth;

EXPORTED CLIENT *clnt_vc_ncreate_svc(const SVCXPRT *xprt, const rpcprog_t prog,
				     const rpcvers_t vers, const uint32_t flags)
{
	CLIENT *(*next)(const SVCXPRT *, rpcprog_t, rpcvers_t, uint32_t) =
	    (CLIENT * (*)(const SVCXPRT *, rpcprog_t, rpcvers_t, uint32_t))
		dlsym(RTLD_NEXT, "clnt_vc_ncreate_svc");
	CLIENT *c = next ? next(xprt, prog, vers, flags) : NULL;
	CLIENT *old = NULL;

	if (!c || CLNT_FAILURE(c))
		return c;
	CLNT_REF(c, CLNT_REF_FLAG_NONE);
	pthread_mutex_lock(&lock);
	int slot = -1;
	for (int i = 0; i < MAX_CLIENTS; i++) {
		if (kept[i].clnt && kept[i].prog == (uint32_t)prog) {
			slot = i;
			break;
		}
		if (!kept[i].clnt && slot < 0)
			slot = i;
	}
	if (slot >= 0) {
		old = kept[slot].clnt;
		kept[slot].prog = (uint32_t)prog;
		kept[slot].clnt = c;
	}
	pthread_mutex_unlock(&lock);
	if (old)
		CLNT_RELEASE(old, CLNT_RELEASE_FLAG_NONE);
	if (slot < 0)
		CLNT_RELEASE(c, CLNT_RELEASE_FLAG_NONE);
	fprintf(stderr, "cb_shim: back channel CLIENT for program %u kept\n", (unsigned)prog);
	return c;
}

static CLIENT *get_client(uint32_t prog)
{
	CLIENT *c = NULL;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (kept[i].clnt && kept[i].prog == prog) {
			c = kept[i].clnt;
			CLNT_REF(c, CLNT_REF_FLAG_NONE);
		}
	pthread_mutex_unlock(&lock);
	return c;
}

static bool put_words(XDR *x, void *where)
{
	struct shim_call *sc = where;

	for (size_t i = 0; i < sc->nwords; i++)
		if (!XDR_PUTUINT32(x, sc->words[i]))
			return false;
	return true;
}

static bool get_status(XDR *x, void *where)
{
	struct shim_call *sc = where;

	return XDR_GETUINT32(x, &sc->cbstatus);
}

static void call_free(struct clnt_req *cc, size_t size)
{
	struct shim_call *sc = (struct shim_call *)cc;

	(void)size;
	free(sc->words);
	free(sc);
}

/* Completion, as ganesha's nfs_rpc_call_process: record, then release. */
static void call_done(struct clnt_req *cc)
{
	struct shim_call *sc = (struct shim_call *)cc;

	pthread_mutex_lock(&lock);
	results[sc->id].state = 2;
	results[sc->id].stat = cc->cc_error.re_status;
	results[sc->id].cbstatus = sc->cbstatus;
	pthread_mutex_unlock(&lock);
	fprintf(stderr, "cb_shim: callback %d completed: clnt_stat %d\n", sc->id,
		cc->cc_error.re_status);
	clnt_req_release(cc);
}

static void plain_free(struct clnt_req *cc, size_t size)
{
	(void)size;
	free(cc);
}

static void do_null(uint32_t prog, char *out, size_t outsz)
{
	CLIENT *c = get_client(prog);
	struct clnt_req *cc;
	struct timespec tmo = {5, 0};
	enum clnt_stat st;

	if (!c) {
		snprintf(out, outsz, "error no client for program %u\n", prog);
		return;
	}
	cc = calloc(1, sizeof(*cc));
	clnt_req_fill(cc, c, none_auth, 0 /* CB_NULL */, (xdrproc_t)(void (*)(void))xdr_void, NULL,
		      (xdrproc_t)(void (*)(void))xdr_void, NULL);
	cc->cc_free_cb = plain_free;
	st = clnt_req_setup(cc, tmo);
	if (st == RPC_SUCCESS) {
		cc->cc_refreshes = 1;
		st = CLNT_CALL_WAIT(cc);
	}
	clnt_req_release(cc);
	CLNT_RELEASE(c, CLNT_RELEASE_FLAG_NONE);
	snprintf(out, outsz, "stat %d\n", (int)st);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void do_compound(uint32_t prog, int tmo_s, const char *hex, char *out, size_t outsz)
{
	size_t n = strlen(hex) / 2;
	CLIENT *c;
	struct shim_call *sc;
	struct timespec tmo = {tmo_s, 0};
	enum clnt_stat st;
	int id;

	if (n == 0 || n % 4) {
		snprintf(out, outsz, "error arguments must be whole XDR words\n");
		return;
	}
	c = get_client(prog);
	if (!c) {
		snprintf(out, outsz, "error no client for program %u\n", prog);
		return;
	}
	sc = calloc(1, sizeof(*sc));
	sc->nwords = n / 4;
	sc->words = calloc(sc->nwords, 4);
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		sc->words[i / 4] |= (uint32_t)((hi << 4) | lo) << (8 * (3 - i % 4));
	}
	pthread_mutex_lock(&lock);
	id = next_id++ % MAX_CALLS;
	results[id].state = 1;
	pthread_mutex_unlock(&lock);
	sc->id = id;
	clnt_req_fill(&sc->cc, c, none_auth, 1 /* CB_COMPOUND */,
		      (xdrproc_t)(void (*)(void))put_words, sc,
		      (xdrproc_t)(void (*)(void))get_status, sc);
	sc->cc.cc_size = sizeof(*sc);
	sc->cc.cc_free_cb = call_free;
	st = clnt_req_setup(&sc->cc, tmo);
	if (st == RPC_SUCCESS) {
		sc->cc.cc_process_cb = call_done;
		st = CLNT_CALL_BACK(&sc->cc);
	}
	CLNT_RELEASE(c, CLNT_RELEASE_FLAG_NONE);
	if (st != RPC_SUCCESS) {
		pthread_mutex_lock(&lock);
		results[id].state = 2;
		results[id].stat = st;
		pthread_mutex_unlock(&lock);
		clnt_req_release(&sc->cc);
	}
	snprintf(out, outsz, "id %d send %d\n", id, (int)st);
}

static void do_result(int id, char *out, size_t outsz)
{
	pthread_mutex_lock(&lock);
	if (id < 0 || id >= MAX_CALLS || results[id].state == 0)
		snprintf(out, outsz, "error no such call\n");
	else if (results[id].state == 1)
		snprintf(out, outsz, "pending\n");
	else
		snprintf(out, outsz, "done %d %u\n", results[id].stat, results[id].cbstatus);
	pthread_mutex_unlock(&lock);
}

static void do_drop(uint32_t prog, char *out, size_t outsz)
{
	CLIENT *c = NULL;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (kept[i].clnt && kept[i].prog == prog) {
			c = kept[i].clnt;
			kept[i].clnt = NULL;
		}
	pthread_mutex_unlock(&lock);
	if (c)
		CLNT_RELEASE(c, CLNT_RELEASE_FLAG_NONE);
	snprintf(out, outsz, "%s\n", c ? "dropped" : "none");
}

static void *serve(void *arg)
{
	int lfd = (int)(intptr_t)arg;

	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		static char buf[1 << 17];
		char out[256];
		size_t got = 0;
		ssize_t r;
		unsigned prog = 0;
		int a = 0;

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		while (got < sizeof(buf) - 1 &&
		       (r = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0) {
			got += (size_t)r;
			if (buf[got - 1] == '\n')
				break;
		}
		buf[got] = 0;
		if (got && buf[got - 1] == '\n')
			buf[got - 1] = 0;
		out[0] = 0;
		if (sscanf(buf, "null %u", &prog) == 1) {
			do_null(prog, out, sizeof(out));
		} else if (sscanf(buf, "compound %u %d", &prog, &a) == 2) {
			const char *hex = strrchr(buf, ' ');
			do_compound(prog, a, hex ? hex + 1 : "", out, sizeof(out));
		} else if (sscanf(buf, "result %d", &a) == 1) {
			do_result(a, out, sizeof(out));
		} else if (sscanf(buf, "drop %u", &prog) == 1) {
			do_drop(prog, out, sizeof(out));
		} else {
			snprintf(out, sizeof(out), "error unknown command\n");
		}
		if (write(fd, out, strlen(out)) < 0) {
			/* the test went away */
		}
		close(fd);
	}
}

__attribute__((constructor)) static void shim_init(void)
{
	const char *path = getenv("RR_CB_SHIM_SOCK");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	pthread_t t;
	int fd;

	if (!path || !*path)
		return;
	none_auth = authnone_ncreate();
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 16)) {
		fprintf(stderr, "cb_shim: cannot listen on %s: %s\n", path, strerror(errno));
		return;
	}
	pthread_create(&t, NULL, serve, (void *)(intptr_t)fd);
	pthread_detach(t);
	fprintf(stderr, "cb_shim: listening on %s\n", path);
}
