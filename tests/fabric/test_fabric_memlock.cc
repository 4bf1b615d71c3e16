// SPDX-License-Identifier: MIT
/*
 * test_fabric_memlock.cc - the soft provider with RPCRDMA_SOFT_MEMLOCK=1
 * charges registrations against RLIMIT_MEMLOCK as siw does (siw_umem_get,
 * root or not): each registration counts its pages, one that would pass the
 * limit fails with ENOMEM as ibv_reg_mr does there, a deregistration gives
 * its pages back, and the device says it charges (memlock_charged). The
 * limit comes from setrlimit, as ulimit -l or a unit's LimitMEMLOCK= set it.
 */
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "fabric/fab.h"

namespace
{

constexpr size_t kLimit = 1u << 20;

struct Soft {
	fab_fabric *fab = nullptr;
	fab_pd *pd = nullptr;
	rlimit saved = {};
	explicit Soft(bool charge)
	{
		getrlimit(RLIMIT_MEMLOCK, &saved);
		rlimit rl = {kLimit, saved.rlim_max};
		setrlimit(RLIMIT_MEMLOCK, &rl); /* the soft limit only: restored below */
		if (charge)
			setenv("RPCRDMA_SOFT_MEMLOCK", "1", 1);
		else
			unsetenv("RPCRDMA_SOFT_MEMLOCK");
		if (fab_open("soft", &fab) == 0)
			fab_pd_get(fab, &pd);
		unsetenv("RPCRDMA_SOFT_MEMLOCK");
	}
	~Soft()
	{
		if (fab)
			fab_close(fab);
		setrlimit(RLIMIT_MEMLOCK, &saved);
	}
};

void *pages(size_t len)
{
	void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? nullptr : p;
}

TEST(FabMemlock, RegistrationsPastTheLimitFailAndDeregistrationGivesBack)
{
	Soft s(true);
	ASSERT_TRUE(s.fab && s.pd) << fab_last_error();
	fab_limits lim = {};
	ASSERT_EQ(fab_device_limits(s.fab, &lim), 0) << fab_last_error();
	EXPECT_TRUE(lim.memlock_charged);

	void *a = pages(kLimit), *b = pages(4096);
	ASSERT_TRUE(a && b);
	fab_mr *half1 = nullptr, *half2 = nullptr, *one = nullptr;
	/* two halves fill the limit exactly; one page more does not fit */
	ASSERT_EQ(fab_mr_reg(s.pd, a, kLimit / 2, FAB_ACCESS_LOCAL_WRITE, &half1), 0);
	ASSERT_EQ(fab_mr_reg(s.pd, (char *)a + kLimit / 2, kLimit / 2, FAB_ACCESS_LOCAL_WRITE,
			     &half2),
		  0);
	EXPECT_EQ(fab_mr_reg(s.pd, b, 4096, FAB_ACCESS_LOCAL_WRITE, &one), -ENOMEM);
	EXPECT_NE(std::string(fab_last_error()).find("RLIMIT_MEMLOCK"), std::string::npos)
	    << fab_last_error();
	/* the same pages registered again count again (the kernel's pinned_vm) */
	fab_mr *again = nullptr;
	EXPECT_EQ(fab_mr_reg(s.pd, a, 4096, FAB_ACCESS_LOCAL_WRITE, &again), -ENOMEM);
	/* a deregistration gives its pages back */
	fab_mr_dereg(half2);
	ASSERT_EQ(fab_mr_reg(s.pd, b, 4096, FAB_ACCESS_LOCAL_WRITE, &one), 0);
	fab_mr_dereg(one);
	fab_mr_dereg(half1);
	munmap(a, kLimit);
	munmap(b, 4096);
}

TEST(FabMemlock, NotChargedByDefault)
{
	Soft s(false);
	ASSERT_TRUE(s.fab && s.pd) << fab_last_error();
	fab_limits lim = {};
	ASSERT_EQ(fab_device_limits(s.fab, &lim), 0) << fab_last_error();
	EXPECT_FALSE(lim.memlock_charged);
	void *a = pages(2 * kLimit);
	ASSERT_TRUE(a);
	fab_mr *mr = nullptr;
	EXPECT_EQ(fab_mr_reg(s.pd, a, 2 * kLimit, FAB_ACCESS_LOCAL_WRITE, &mr), 0);
	if (mr)
		fab_mr_dereg(mr);
	munmap(a, 2 * kLimit);
}

} // namespace
