// SPDX-License-Identifier: MIT
/*
 * rrp_version.c - refuse to activate outside the ntirpc and ganesha the
 * plugin was built for.
 *
 * ntirpc: the version node of its symbols (NTIRPC_<NTIRPC_VERSION> from
 * <ntirpc/version.h> at build time) must resolve svc_init with dlvsym, and
 * the loaded libntirpc must carry the soname libntirpc.so.<NTIRPC_VERSION>.
 * ganesha exports no version symbol; its soname carries major.minor
 * (libganesha_nfsd.so.X.Y), read from the loaded object's DT_SONAME.
 * On a mismatch the interposers capture nothing and pass every call through,
 * so ganesha runs exactly as it would without the plugin.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include <ntirpc/version.h>

#include "plugin/rrp_host.h"
#include "plugin/rrp_version.h"

/* The host adapter's; a test builds the guard for another ganesha. */
#ifndef RRP_GANESHA_SONAME
#define RRP_GANESHA_SONAME RRP_HOST_GANESHA_SONAME
#endif

#define RRP_NTIRPC_TAG "NTIRPC_" NTIRPC_VERSION
#define RRP_NTIRPC_SONAME "libntirpc.so." NTIRPC_VERSION

struct soname_walk {
	const char *prefix; /* "libntirpc.so." */
	char found[128];    /* soname of the first object that starts with it */
};

/* The soname of a loaded object: DT_SONAME, or the file's base name. */
static void object_soname(const struct dl_phdr_info *info, char *out, size_t len)
{
	const char *name = strrchr(info->dlpi_name, '/');

	name = name ? name + 1 : info->dlpi_name;
	snprintf(out, len, "%s", name);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const ElfW(Dyn) * d;
		ElfW(Addr) strtab = 0, soname = 0;
		bool have_soname = false;

		if (ph->p_type != PT_DYNAMIC)
			continue;
		d = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		for (; d->d_tag != DT_NULL; d++) {
			if (d->d_tag == DT_STRTAB)
				strtab = d->d_un.d_ptr;
			if (d->d_tag == DT_SONAME) {
				soname = d->d_un.d_val;
				have_soname = true;
			}
		}
		if (!strtab || !have_soname)
			return;
		/* ld.so relocates DT_STRTAB in place on most targets, not all. */
		if (strtab < info->dlpi_addr)
			strtab += info->dlpi_addr;
		snprintf(out, len, "%s", (const char *)(strtab + soname));
		return;
	}
}

static int find_soname(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct soname_walk *w = arg;
	char so[sizeof(w->found)];

	(void)size;
	if (!info->dlpi_name || !info->dlpi_name[0])
		return 0;
	object_soname(info, so, sizeof(so));
	if (strncmp(so, w->prefix, strlen(w->prefix)))
		return 0;
	snprintf(w->found, sizeof(w->found), "%s", so);
	return 1;
}

/* The soname of the loaded object whose soname starts with @prefix, or "". */
static void loaded(const char *prefix, char *out, size_t len)
{
	struct soname_walk w = {.prefix = prefix};

	dl_iterate_phdr(find_soname, &w);
	snprintf(out, len, "%s", w.found);
}

/* "libntirpc.so.X.Y" -> "libntirpc.so." */
static void soname_stem(const char *soname, char *out, size_t len)
{
	const char *so = strstr(soname, ".so.");

	snprintf(out, len, "%.*s", so ? (int)(so - soname + 4) : (int)strlen(soname), soname);
}

int rrp_version_check(const struct rrp_version_expect *e, char *why, size_t len)
{
	char stem[64], ntirpc[128], ganesha[128];

	soname_stem(e->ntirpc_soname, stem, sizeof(stem));
	loaded(stem, ntirpc, sizeof(ntirpc));
	soname_stem(e->ganesha_soname, stem, sizeof(stem));
	loaded(stem, ganesha, sizeof(ganesha));

	if (dlvsym(RTLD_DEFAULT, "svc_init", e->ntirpc_tag) && !strcmp(ntirpc, e->ntirpc_soname) &&
	    !strcmp(ganesha, e->ganesha_soname))
		return 0;
	/* Both sides in full, whichever differs: what an admin compares. */
	snprintf(why, len, "built for %s with %s (%s), found %s with %s", e->ganesha_soname,
		 e->ntirpc_soname, e->ntirpc_tag, ganesha[0] ? ganesha : "no libganesha_nfsd",
		 ntirpc[0] ? ntirpc : "no libntirpc");
	return -1;
}

static bool version_ok;

static void check_once(void)
{
	static const struct rrp_version_expect built = {
	    .ntirpc_tag = RRP_NTIRPC_TAG,
	    .ntirpc_soname = RRP_NTIRPC_SONAME,
	    .ganesha_soname = RRP_GANESHA_SONAME,
	};
	char why[512];

	version_ok = rrp_version_check(&built, why, sizeof(why)) == 0;
	if (version_ok)
		return;
	fprintf(stderr,
		"rpcrdma: version mismatch: %s: plugin inactive, RDMA not served, "
		"ganesha runs without it\n",
		why);
	/* Under the stock unit ganesha has daemonized by now, stderr is
	 * /dev/null: the same line goes to the journal through syslog. */
	syslog(LOG_DAEMON | LOG_WARNING,
	       "rpcrdma: version mismatch: %s: plugin inactive, RDMA not served, "
	       "ganesha runs without it",
	       why);
}

bool rrp_version_ok(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, check_once);
	return version_ok;
}

const char *rrp_version_ntirpc_tag(void)
{
	return RRP_NTIRPC_TAG;
}
