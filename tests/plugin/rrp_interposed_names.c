// SPDX-License-Identifier: MIT
/* The names rrp_interpose.h lists, for test_rrp_interpose.cc (ntirpc's
 * headers are C only). */
#include <stddef.h>

#include "plugin/rrp_interpose.h"

const char *const rrp_interposed_names[] = {
#define RRP_NAME(ret, name, params, args) #name,
	RRP_INTERPOSED(RRP_NAME)
	RRP_INTERPOSED_VOID(RRP_NAME)
#undef RRP_NAME
	NULL,
};
