// SPDX-License-Identifier: MIT
/*
 * test_rrp_interpose.cc - the preloaded library exports every entry point
 * rrp_interpose.h lists. Its version script (rrp_exports.map) hides all
 * else, so an entry point listed in one and not the other compiles, links
 * and is silently never called by ganesha.
 */
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <string>

/* rrp_interposed_names.c: rrp_interpose.h's list, NULL-terminated */
extern "C" const char *const rrp_interposed_names[];

namespace
{

std::string real(const char *path)
{
	char buf[PATH_MAX];
	return realpath(path, buf) ? std::string(buf) : std::string(path);
}

TEST(RrpInterpose, PreloadedLibraryExportsEveryInterposedEntryPoint)
{
	const char *env = getenv("RPCRDMA_PLUGIN_SO");
	std::string so = env && *env ? env : RR_PLUGIN_SO;
	/* local: nothing of it interposes anything in this process */
	void *h = dlopen(so.c_str(), RTLD_LAZY | RTLD_LOCAL);
	ASSERT_TRUE(h) << dlerror();
	int n = 0;
	for (const char *const *it = rrp_interposed_names; *it; it++, n++) {
		const char *name = *it;
		void *p = dlsym(h, name);
		ASSERT_NE(p, nullptr) << name << " is not exported by " << so;
		Dl_info where;
		ASSERT_NE(dladdr(p, &where), 0) << name;
		EXPECT_EQ(real(where.dli_fname), real(so.c_str()))
		    << name << " resolves outside the preloaded library";
	}
	EXPECT_GE(n, 10) << "the list is rrp_interpose.h's RRP_INTERPOSED";
	dlclose(h);
}

} // namespace
