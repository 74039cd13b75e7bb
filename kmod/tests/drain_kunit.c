// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for a QP's drain rate (drain.c): what a busy link completes
 * over the time it takes, no sample while the window is small, the
 * smoothing, and the window a delay gives.
 */
#include <kunit/test.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/time64.h>

#include "drain.h"

#define FILL	SZ_32K

/*
 * @n completions of @done bytes, @gap_ns apart from @t, with @left bytes
 * in flight after each; returns the time of the last one.  As in
 * sender.c, the time is 0 where rs_drain_timed() says it is not read: a
 * sample that used it would be wrong below.
 */
static u64 completions(struct rs_drain *d, u64 t, int n, u32 done, u64 gap_ns, u32 left)
{
	while (n--) {
		t += gap_ns;
		rs_drain_complete(d, rs_drain_timed(d, left, FILL) ? t : 0, done, left, FILL);
	}
	return t;
}

/* 16 KiB every 250 us, the link never idle: 65536 bytes per ms. */
static void drain_busy_rate_test(struct kunit *test)
{
	struct rs_drain d = {};
	u64 t;

	KUNIT_EXPECT_EQ(test, rs_drain_window(&d, 250, SZ_128K), SZ_128K);
	t = completions(&d, 1000 * NSEC_PER_MSEC, 4, SZ_16K, 250 * NSEC_PER_USEC, SZ_64K);
	/* The first completion starts the sample; three came since: 750 us. */
	KUNIT_EXPECT_EQ(test, d.rate, 0);
	t = completions(&d, t, 1, SZ_16K, 250 * NSEC_PER_USEC, SZ_64K);
	KUNIT_EXPECT_EQ(test, d.rate, 65536);
	/* 250 us of it: 16384 bytes; 0 us: no hold; a cap over all. */
	KUNIT_EXPECT_EQ(test, rs_drain_window(&d, 250, SZ_128K), SZ_16K);
	KUNIT_EXPECT_EQ(test, rs_drain_window(&d, 0, SZ_128K), SZ_128K);
	KUNIT_EXPECT_EQ(test, rs_drain_window(&d, 100000, SZ_128K), SZ_128K);
	KUNIT_EXPECT_EQ(test, rs_drain_window(&d, 1, SZ_128K), 65);
	/* Steady: the same rate. */
	completions(&d, t, 40, SZ_16K, 250 * NSEC_PER_USEC, SZ_64K);
	KUNIT_EXPECT_EQ(test, d.rate, 65536);
}

/*
 * Under the fill the link waits for the window, not the other way round:
 * no sample, whatever the gaps, and a rate known stays.
 */
static void drain_small_window_test(struct kunit *test)
{
	struct rs_drain d = {};
	u64 t;

	t = completions(&d, NSEC_PER_SEC, 100, SZ_16K, 2 * NSEC_PER_MSEC, FILL - 1);
	KUNIT_EXPECT_EQ(test, d.rate, 0);
	KUNIT_EXPECT_FALSE(test, d.running);
	t = completions(&d, t, 5, SZ_16K, 250 * NSEC_PER_USEC, SZ_64K);
	KUNIT_EXPECT_EQ(test, d.rate, 65536);
	/* The window shrinks, then completions come slowly: no sample. */
	t = completions(&d, t, 1, SZ_16K, 250 * NSEC_PER_USEC, SZ_16K);
	completions(&d, t, 100, SZ_16K, 4 * NSEC_PER_MSEC, SZ_16K);
	KUNIT_EXPECT_EQ(test, d.rate, 65536);
}

/*
 * The completion that ends a busy period still counts (the link had its
 * bytes until then); the idle time after it does not.
 */
static void drain_idle_gap_test(struct kunit *test)
{
	struct rs_drain d = {};
	u64 t;

	t = completions(&d, NSEC_PER_SEC, 3, SZ_16K, 250 * NSEC_PER_USEC, SZ_64K);
	t = completions(&d, t, 1, SZ_16K, 250 * NSEC_PER_USEC, 0);
	KUNIT_EXPECT_EQ(test, d.rate, 0);	/* 750 us, under a sample */
	/* A second later the link is busy again. */
	t = completions(&d, t + NSEC_PER_SEC, 5, SZ_16K, 250 * NSEC_PER_USEC, SZ_64K);
	KUNIT_EXPECT_EQ(test, d.rate, 65536);
}

/* A new rate weighs a quarter: 65536 then 4x that gives 114688. */
static void drain_smoothing_test(struct kunit *test)
{
	struct rs_drain d = {};
	u64 t;

	t = completions(&d, NSEC_PER_SEC, 5, SZ_16K, 250 * NSEC_PER_USEC, SZ_64K);
	KUNIT_EXPECT_EQ(test, d.rate, 65536);
	completions(&d, t, 16, SZ_16K, 250 * NSEC_PER_USEC / 4, SZ_64K);
	KUNIT_EXPECT_EQ(test, d.rate, (3 * 65536 + 4 * 65536) / 4);
}

/* A window is at least a byte; huge rates and delays do not overflow. */
static void drain_window_bounds_test(struct kunit *test)
{
	struct rs_drain d = { .rate = 1 };

	KUNIT_EXPECT_EQ(test, rs_drain_window(&d, 1, SZ_128K), 1);
	d.rate = U32_MAX;
	KUNIT_EXPECT_EQ(test, rs_drain_window(&d, 100000, SZ_1G), SZ_1G);
	KUNIT_EXPECT_EQ(test, rs_drain_window(&d, 100000, U32_MAX), U32_MAX);
}

static struct kunit_case drain_cases[] = {
	KUNIT_CASE(drain_busy_rate_test),
	KUNIT_CASE(drain_small_window_test),
	KUNIT_CASE(drain_idle_gap_test),
	KUNIT_CASE(drain_smoothing_test),
	KUNIT_CASE(drain_window_bounds_test),
	{}
};

static struct kunit_suite drain_suite = {
	.name = "rdmashare_drain",
	.test_cases = drain_cases,
};

kunit_test_suite(drain_suite);

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
