// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the AC id tables (actable.c): file ids (smallest free
 * first, from 1, a limit), wire ids (cyclic, across the 2^32 wrap), and
 * removals that must not touch what is not theirs.
 */
#include <kunit/test.h>
#include <linux/module.h>

#include "actable.h"

static int entries[64];		/* their addresses are the entries */

static bool get_yes(void *entry, void *arg)
{
	(*(int *)arg)++;
	return true;
}

static bool get_no(void *entry, void *arg)
{
	return false;
}

/* File ids: 1, 2, 3...; a freed id comes back first; the limit holds. */
static void actable_file_ids_test(struct kunit *test)
{
	struct rs_actable t;
	u32 id, i;
	int calls = 0;

	rs_actable_init(&t, false);
	for (i = 0; i < 8; i++) {
		KUNIT_ASSERT_EQ(test, rs_actable_add(&t, &entries[i], &id, 8, GFP_KERNEL), 0);
		KUNIT_EXPECT_EQ(test, id, i + 1);
	}
	KUNIT_EXPECT_EQ(test, rs_actable_count(&t), 8);
	KUNIT_EXPECT_EQ(test, rs_actable_add(&t, &entries[8], &id, 8, GFP_KERNEL), -EMFILE);

	KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, 3, &entries[2]));
	KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, 6, &entries[5]));
	KUNIT_EXPECT_EQ(test, rs_actable_count(&t), 6);
	KUNIT_ASSERT_EQ(test, rs_actable_add(&t, &entries[9], &id, 8, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, id, 3);
	KUNIT_ASSERT_EQ(test, rs_actable_add(&t, &entries[10], &id, 8, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, id, 6);

	/* Lookups: the callback decides. */
	KUNIT_EXPECT_PTR_EQ(test, rs_actable_get(&t, 3, get_yes, &calls), &entries[9]);
	KUNIT_EXPECT_EQ(test, calls, 1);
	KUNIT_EXPECT_NULL(test, rs_actable_get(&t, 3, get_no, NULL));
	KUNIT_EXPECT_NULL(test, rs_actable_get(&t, 0, get_yes, &calls));
	KUNIT_EXPECT_NULL(test, rs_actable_get(&t, 9, get_yes, &calls));
	KUNIT_EXPECT_NULL(test, rs_actable_get(&t, U32_MAX, get_yes, &calls));
	KUNIT_EXPECT_EQ(test, calls, 1);

	/* A lower limit stops additions, keeps what is there. */
	KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, 1, &entries[0]));
	KUNIT_EXPECT_EQ(test, rs_actable_add(&t, &entries[11], &id, 4, GFP_KERNEL), -EMFILE);
	KUNIT_EXPECT_EQ(test, rs_actable_count(&t), 7);

	for (i = 1; i <= 8; i++) {
		void *e = rs_actable_get(&t, i, get_yes, &calls);

		if (e)
			KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, i, e));
	}
	KUNIT_EXPECT_EQ(test, rs_actable_count(&t), 0);
	rs_actable_destroy(&t);
}

/*
 * What is not the caller's stays: id 0 (an AC that never got an id), a
 * free id, another entry's id.  Id 0 is never handed out afterwards.
 */
static void actable_del_not_mine_test(struct kunit *test)
{
	struct rs_actable t;
	u32 id, a, b;

	rs_actable_init(&t, false);
	KUNIT_ASSERT_EQ(test, rs_actable_add(&t, &entries[0], &a, 100, GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, rs_actable_add(&t, &entries[1], &b, 100, GFP_KERNEL), 0);

	KUNIT_EXPECT_FALSE(test, rs_actable_del(&t, 0, &entries[5]));
	KUNIT_EXPECT_FALSE(test, rs_actable_del(&t, 0, NULL));
	KUNIT_EXPECT_FALSE(test, rs_actable_del(&t, 7, &entries[5]));
	KUNIT_EXPECT_FALSE(test, rs_actable_del(&t, a, &entries[1]));
	KUNIT_EXPECT_FALSE(test, rs_actable_del(&t, a, NULL));
	KUNIT_EXPECT_EQ(test, rs_actable_count(&t), 2);
	KUNIT_EXPECT_PTR_EQ(test, rs_actable_get(&t, a, get_no, NULL), NULL);
	KUNIT_EXPECT_PTR_EQ(test, xa_load(&t.xa, a), &entries[0]);
	KUNIT_EXPECT_PTR_EQ(test, xa_load(&t.xa, b), &entries[1]);

	/* Id 0 stays reserved: new ids are never 0. */
	KUNIT_ASSERT_EQ(test, rs_actable_add(&t, &entries[2], &id, 100, GFP_KERNEL), 0);
	KUNIT_EXPECT_NE(test, id, 0);
	KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, id, &entries[2]));
	KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, a, &entries[0]));
	KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, b, &entries[1]));
	KUNIT_ASSERT_EQ(test, rs_actable_add(&t, &entries[3], &id, 100, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, id, 1);
	KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, id, &entries[3]));
	rs_actable_destroy(&t);
}

/* Wire ids go round: a freed id is not reused at once; 2^32 wraps to 1. */
static void actable_cyclic_test(struct kunit *test)
{
	struct rs_actable t;
	u32 id, first;

	rs_actable_init(&t, true);
	KUNIT_ASSERT_EQ(test, rs_actable_add(&t, &entries[0], &first, U32_MAX, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, first, 1);
	KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, first, &entries[0]));
	KUNIT_ASSERT_EQ(test, rs_actable_add(&t, &entries[1], &id, U32_MAX, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, id, 2);

	/* Near the top: U32_MAX - 1, U32_MAX, then round to the smallest free. */
	t.next = U32_MAX - 1;
	KUNIT_ASSERT_EQ(test, rs_actable_add(&t, &entries[2], &id, U32_MAX, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, id, U32_MAX - 1);
	KUNIT_ASSERT_EQ(test, rs_actable_add(&t, &entries[3], &id, U32_MAX, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, id, U32_MAX);
	KUNIT_ASSERT_EQ(test, rs_actable_add(&t, &entries[4], &id, U32_MAX, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, id, 1);
	KUNIT_ASSERT_EQ(test, rs_actable_add(&t, &entries[5], &id, U32_MAX, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, id, 3);	/* 2 is taken */
	KUNIT_EXPECT_EQ(test, rs_actable_count(&t), 5);

	KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, 2, &entries[1]));
	KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, U32_MAX - 1, &entries[2]));
	KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, U32_MAX, &entries[3]));
	KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, 1, &entries[4]));
	KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, 3, &entries[5]));
	KUNIT_EXPECT_EQ(test, rs_actable_count(&t), 0);
	rs_actable_destroy(&t);
}

static bool get_even(void *entry, void *arg)
{
	return ((int *)entry - entries) % 2 == 0;
}

/*
 * Walks: every entry once, in id order, those the callback refuses
 * skipped, and entries removed during the walk (as a close completing
 * while a file is released) not seen after their removal.
 */
static void actable_walk_test(struct kunit *test)
{
	struct rs_actable t;
	u32 id, i, seen = 0;
	int calls = 0;
	void *e;

	rs_actable_init(&t, false);
	for (i = 0; i < 10; i++) {
		KUNIT_ASSERT_EQ(test, rs_actable_add(&t, &entries[i], &id, 100, GFP_KERNEL), 0);
		KUNIT_ASSERT_EQ(test, id, i + 1);
	}
	for (id = 1; (e = rs_actable_next(&t, &id, get_yes, &calls)); id++) {
		KUNIT_EXPECT_PTR_EQ(test, e, &entries[id - 1]);
		seen++;
		/* The walk removes the entry after the next one. */
		if (id + 2 <= 10 && (id % 3) == 1)
			KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, id + 2, &entries[id + 1]));
	}
	/* 10 entries, 3 removed ahead of the walk (ids 3, 6, 9). */
	KUNIT_EXPECT_EQ(test, seen, 7);
	KUNIT_EXPECT_EQ(test, calls, 7);
	KUNIT_EXPECT_EQ(test, rs_actable_count(&t), 7);

	/* Refused entries are skipped: only the even ones (ids 1, 5, 7). */
	seen = 0;
	for (id = 1; (e = rs_actable_next(&t, &id, get_even, NULL)); id++) {
		KUNIT_EXPECT_EQ(test, ((int *)e - entries) % 2, 0);
		seen++;
	}
	KUNIT_EXPECT_EQ(test, seen, 3);
	id = U32_MAX;
	KUNIT_EXPECT_NULL(test, rs_actable_next(&t, &id, get_yes, &calls));

	for (id = 1; (e = rs_actable_next(&t, &id, get_yes, &calls)); id++)
		KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, id, e));
	KUNIT_EXPECT_EQ(test, rs_actable_count(&t), 0);
	rs_actable_destroy(&t);
}

/* Churn: the count always matches the table, lookups find what is there. */
static void actable_churn_test(struct kunit *test)
{
	u32 ids[64] = {}, seed = 42, i, step, n = 0, in_xa;
	struct rs_actable t;
	unsigned long idx;
	void *e;

	rs_actable_init(&t, false);
	for (step = 0; step < 20000; step++) {
		seed = seed * 1103515245 + 12345;
		i = (seed >> 8) % 64;
		if (ids[i]) {
			KUNIT_ASSERT_TRUE(test, rs_actable_del(&t, ids[i], &entries[i]));
			ids[i] = 0;
			n--;
		} else if (!rs_actable_add(&t, &entries[i], &ids[i], 48, GFP_KERNEL)) {
			n++;
		} else {
			KUNIT_ASSERT_EQ(test, n, 48);
			ids[i] = 0;
		}
		KUNIT_ASSERT_EQ(test, rs_actable_count(&t), n);
	}
	in_xa = 0;
	xa_for_each(&t.xa, idx, e)
		in_xa++;
	KUNIT_EXPECT_EQ(test, in_xa, n);
	for (i = 0; i < 64; i++) {
		if (!ids[i])
			continue;
		KUNIT_EXPECT_LE(test, ids[i], 48);
		KUNIT_EXPECT_TRUE(test, rs_actable_del(&t, ids[i], &entries[i]));
	}
	rs_actable_destroy(&t);
}

static struct kunit_case actable_cases[] = {
	KUNIT_CASE(actable_file_ids_test),
	KUNIT_CASE(actable_del_not_mine_test),
	KUNIT_CASE(actable_cyclic_test),
	KUNIT_CASE(actable_walk_test),
	KUNIT_CASE(actable_churn_test),
	{}
};

static struct kunit_suite actable_suite = {
	.name = "rdmashare_actable",
	.test_cases = actable_cases,
};

kunit_test_suite(actable_suite);

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
