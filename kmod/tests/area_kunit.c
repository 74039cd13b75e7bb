// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the data area's runs of contiguous pages (area.c): the
 * run order a list of page addresses allows (what a memory region's page
 * size can be), the order wanted for a size, and an allocation split where
 * the receive slots start.
 */
#include <kunit/test.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "area.h"

#define NR	64

static u64 addrs[NR];

/* @n addresses from @base, page after page. */
static void fill(u64 base, unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		addrs[i] = base + i * PAGE_SIZE;
}

/* Contiguous and aligned: as large as asked; misaligned: smaller. */
static void run_order_contiguous_test(struct kunit *test)
{
	fill(0x40000000, NR);
	KUNIT_EXPECT_EQ(test, rs_run_order(addrs, NR, 9), 9);
	KUNIT_EXPECT_EQ(test, rs_run_order(addrs, NR, 3), 3);
	KUNIT_EXPECT_EQ(test, rs_run_order(addrs, 5, 9), 9);	/* one short run */
	fill(0x40000000 + 4 * PAGE_SIZE, NR);
	KUNIT_EXPECT_EQ(test, rs_run_order(addrs, NR, 9), 2);
	fill(0x40000000 + PAGE_SIZE, NR);
	KUNIT_EXPECT_EQ(test, rs_run_order(addrs, NR, 9), 0);
	KUNIT_EXPECT_EQ(test, rs_run_order(addrs, 1, 9), 0);
}

/* A break in contiguity bounds the runs to where it falls. */
static void run_order_gaps_test(struct kunit *test)
{
	unsigned long i;

	fill(0x40000000, NR);
	for (i = 16; i < NR; i++)
		addrs[i] += 0x100000;		/* a jump at 16: runs of 16 */
	KUNIT_EXPECT_EQ(test, rs_run_order(addrs, NR, 9), 4);
	for (i = 40; i < NR; i++)
		addrs[i] += 0x200000;		/* and at 40: runs of 8 */
	KUNIT_EXPECT_EQ(test, rs_run_order(addrs, NR, 9), 3);
	addrs[41] += PAGE_SIZE;			/* and at 41, 42: single pages */
	KUNIT_EXPECT_EQ(test, rs_run_order(addrs, NR, 9), 0);

	/* Runs of 4, each aligned, in reverse order: still runs of 4. */
	for (i = 0; i < 16; i++)
		addrs[i] = 0x40000000 + (15 - i / 4 * 4 - 3 + i % 4) * PAGE_SIZE;
	KUNIT_EXPECT_EQ(test, rs_run_order(addrs, 16, 9), 2);
}

/* The order for a size: at most 256 runs, within the bounds. */
static void area_order_test(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, rs_area_order(PAGE_SIZE), PAGE_ALLOC_COSTLY_ORDER);
	KUNIT_EXPECT_EQ(test, rs_area_order(256 * PAGE_SIZE << PAGE_ALLOC_COSTLY_ORDER),
			PAGE_ALLOC_COSTLY_ORDER);
	KUNIT_EXPECT_EQ(test, rs_area_order((256 * PAGE_SIZE << PAGE_ALLOC_COSTLY_ORDER) + 1),
			PAGE_ALLOC_COSTLY_ORDER + 1);
	KUNIT_EXPECT_EQ(test, rs_area_order(256 * PAGE_SIZE << 6), 6);
	KUNIT_EXPECT_EQ(test, rs_area_order((size_t)SZ_1G * 4), RS_AREA_MAX_ORDER);
}

/*
 * An area of 3 + 40 pages split after the third: zeroed, distinct pages,
 * and from the split on (at least) runs of 8 contiguous pages (the test runs where
 * memory is plentiful: the allocator has them).
 */
static void area_alloc_split_test(struct kunit *test)
{
	unsigned long i, j, first = 3, n = 43;
	struct rs_area a;
	u64 *pa;

	KUNIT_EXPECT_EQ(test, rs_area_alloc(&a, n * PAGE_SIZE, n * PAGE_SIZE, 3), -EINVAL);
	KUNIT_EXPECT_EQ(test, rs_area_alloc(&a, n * PAGE_SIZE, 100, 3), -EINVAL);
	KUNIT_EXPECT_EQ(test, rs_area_alloc(&a, n * PAGE_SIZE, 0, RS_AREA_MAX_ORDER + 1),
			-EINVAL);
	KUNIT_ASSERT_EQ(test, rs_area_alloc(&a, n * PAGE_SIZE, first * PAGE_SIZE, 3), 0);
	KUNIT_EXPECT_EQ(test, a.nr_pages, n);
	pa = kunit_kcalloc(test, n, sizeof(*pa), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, pa);
	for (i = 0; i < n; i++) {
		pa[i] = (u64)page_to_pfn(a.pages[i]) << PAGE_SHIFT;
		for (j = 0; j < i; j++)
			KUNIT_EXPECT_NE(test, pa[i], pa[j]);
		KUNIT_EXPECT_EQ(test, page_count(a.pages[i]), 1);
	}
	KUNIT_EXPECT_TRUE(test, !memchr_inv(a.vaddr, 0, n * PAGE_SIZE));
	KUNIT_EXPECT_EQ(test, rs_run_order(pa + first, n - first, 3), 3);
	/* The kernel mapping is the pages in order. */
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_PTR_EQ(test, vmalloc_to_page(a.vaddr + i * PAGE_SIZE), a.pages[i]);
	rs_area_free(&a);
	KUNIT_EXPECT_NULL(test, a.pages);
}

static struct kunit_case area_cases[] = {
	KUNIT_CASE(run_order_contiguous_test),
	KUNIT_CASE(run_order_gaps_test),
	KUNIT_CASE(area_order_test),
	KUNIT_CASE(area_alloc_split_test),
	{}
};

static struct kunit_suite area_suite = {
	.name = "rdmashare_area",
	.test_cases = area_cases,
};

kunit_test_suite(area_suite);

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
