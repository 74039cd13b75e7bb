// SPDX-License-Identifier: GPL-2.0
/*
 * The ABI fuzzer (rsfuzz.c) with a fixed seed, short enough for make
 * check: 3 processes share RS_FUZZ_CALLS (default 20000) calls, at most 90
 * s, AC files included, while a Soft-RoCE device comes and goes on the
 * spare link (RS_TEST_NETDEV, default veth1; without the link, rsfuzz says
 * so and runs without).  rsfuzz fails if a worker hangs or dies, if the
 * module stops carrying messages, or if ACs are left once every file is
 * closed; the guest's verdict adds KASAN, lockdep, kmemleak and a clean
 * unload.  make fuzz runs it long with a random seed (selftests/vm/fuzz.sh).
 */
#include <libgen.h>
#include <limits.h>

#include "common.h"

#include "kselftest_harness.h"

#define SEED	20261130

FIXTURE(fuzz) {
	char tool[PATH_MAX];
};

FIXTURE_SETUP(fuzz)
{
	char self_path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);

	ASSERT_LT(0, n);
	self_path[n] = 0;
	snprintf(self->tool, sizeof(self->tool), "%s/rsfuzz", dirname(self_path));
	ASSERT_EQ(0, access(self->tool, X_OK));
}

FIXTURE_TEARDOWN(fuzz)
{
}

TEST_F_TIMEOUT(fuzz, fixed_seed, 400)
{
	const char *n = getenv("RS_FUZZ_CALLS") ?: "20000";
	const char *netdev = getenv("RS_TEST_NETDEV") ?: "veth1";

	EXPECT_EQ(0, rs_sh("%s -s %d -n %s -p 3 -t 90 -d %s >&2", self->tool, SEED, n, netdev));
}

TEST_HARNESS_MAIN
