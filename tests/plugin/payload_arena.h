// SPDX-License-Identifier: MIT
// The READ payload pool's arena as test_rrp_payload and
// test_rrp_payload_threads see it: one per process (the pool maps it once,
// like the plugin), kSmall small and kLarge large slots.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

extern "C" {
#include "plugin/rrp_payload.h"
}

namespace rrp_test {

constexpr size_t kSmall = 8, kLarge = 2;

struct Arena {
	uint8_t *base = nullptr;
	size_t len = 0;
	bool has(const void *p) const
	{
		auto a = static_cast<const uint8_t *>(p);
		return a >= base && a < base + len;
	}
};

inline const Arena &arena()
{
	static Arena a = [] {
		Arena r;
		void *b = nullptr;
		EXPECT_EQ(0, rrp_payload_init(kSmall, kLarge, &b, &r.len));
		r.base = static_cast<uint8_t *>(b);
		return r;
	}();
	return a;
}

} // namespace rrp_test
