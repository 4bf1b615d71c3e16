// SPDX-License-Identifier: MIT
/*
 * The engine fuzzers' committed inputs (tests/fuzz/corpus/rr_call and
 * rr_reply) as a plain test, so every build - not only the clang fuzz
 * build - runs each message shape and each fixed finding through the
 * recording fabric and its checks (rr_fuzz_engine.c). Each input runs in
 * a child process: a failed check aborts it.
 */
#include <dirent.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" {
#include "fuzz/rr_fuzz_engine.h"
}

namespace
{

std::vector<std::string> inputs(const std::string &dir)
{
	std::vector<std::string> v;
	DIR *d = opendir(dir.c_str());

	if (!d)
		return v;
	while (struct dirent *e = readdir(d))
		if (e->d_name[0] != '.')
			v.push_back(dir + "/" + e->d_name);
	closedir(d);
	std::sort(v.begin(), v.end());
	return v;
}

void run_all(const char *sub, enum rrf_mode mode)
{
	std::vector<std::string> files = inputs(std::string(RR_FUZZ_SEEDS) + "/" + sub);

	ASSERT_GE(files.size(), 10u) << "seed corpus missing: " << RR_FUZZ_SEEDS << "/" << sub;
	for (const auto &f : files) {
		std::ifstream in(f, std::ios::binary);
		std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)),
				       std::istreambuf_iterator<char>());

		EXPECT_EXIT(
		    {
			    rrf_run(b.data(), b.size(), mode);
			    /* twice: the second input meets the first one's connection */
			    rrf_run(b.data(), b.size(), mode);
			    _exit(0);
		    },
		    ::testing::ExitedWithCode(0), "")
		    << f;
	}
}

} // namespace

TEST(RrFuzzSeeds, CallShapes)
{
	run_all("rr_call", RRF_CALL);
}

TEST(RrFuzzSeeds, ReplyShapes)
{
	run_all("rr_reply", RRF_REPLY);
}
