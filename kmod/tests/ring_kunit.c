// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the ring index arithmetic in ring.h, with emphasis on the
 * 2^32 wrap of the free-running indices and on indices user space corrupted.
 */
#include <kunit/test.h>
#include <linux/module.h>

#include "ring.h"

struct ring_case {
	const char *name;
	u32 head;
	u32 tail;
	u32 entries;
	u32 max;
	int to_consume;		/* rs_ring_to_consume(head, tail, entries, max) */
	int free;		/* rs_ring_free(head, tail, entries) */
};

static const struct ring_case ring_cases[] = {
	{ "empty at zero",	0, 0, 8, 8, 0, 8 },
	{ "one entry",		0, 1, 8, 8, 1, 7 },
	{ "full",		0, 8, 8, 8, 8, 0 },
	{ "capped by max",	0, 8, 8, 3, 3, 0 },
	{ "tail past ring",	0, 9, 8, 8, -EINVAL, -EINVAL },
	{ "empty before wrap",	0xffffffffu, 0xffffffffu, 8, 8, 0, 8 },
	{ "straddles wrap",	0xfffffffdu, 2, 8, 8, 5, 3 },
	{ "full across wrap",	0xfffffffcu, 4, 8, 8, 8, 0 },
	{ "past ring at wrap",	0xfffffffcu, 5, 8, 8, -EINVAL, -EINVAL },
	{ "head ahead of tail",	10, 9, 8, 8, -EINVAL, -EINVAL },
	{ "head ahead at wrap",	1, 0xffffffffu, 8, 8, -EINVAL, -EINVAL },
	{ "largest ring full",	0xfffff000u, 0x0000f000u, RS_RING_ENTRIES_MAX, 16, 16, 0 },
	{ "largest ring empty",	0xfffff000u, 0xfffff000u, RS_RING_ENTRIES_MAX,
	  RS_RING_ENTRIES_MAX, 0, RS_RING_ENTRIES_MAX },
	{ "huge distance",	0, 0x80000000u, 4096, 4096, -EINVAL, -EINVAL },
};

static void ring_case_desc(const struct ring_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ring, ring_cases, ring_case_desc);

static void ring_accounting_test(struct kunit *test)
{
	const struct ring_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, rs_ring_to_consume(c->head, c->tail, c->entries, c->max),
			c->to_consume);
	KUNIT_EXPECT_EQ(test, rs_ring_free(c->head, c->tail, c->entries), c->free);
}

/* Walk a producer and a consumer across the wrap and check every step. */
static void ring_wrap_walk_test(struct kunit *test)
{
	const u32 entries = 16;
	u32 head = 0xffffffffu - 100, tail = head;
	u32 produced = 0, consumed = 0;
	int i;

	for (i = 0; i < 400; i++) {
		int space = rs_ring_free(head, tail, entries);
		int n = (i % 5) + 1;

		KUNIT_ASSERT_GE(test, space, 0);
		n = min(n, space);
		tail += n;
		produced += n;

		n = rs_ring_to_consume(head, tail, entries, (i % 3) + 1);
		KUNIT_ASSERT_GE(test, n, 0);
		head += n;
		consumed += n;
		KUNIT_ASSERT_EQ(test, rs_ring_used(head, tail), produced - consumed);
		KUNIT_ASSERT_LE(test, rs_ring_used(head, tail), entries);
	}
	/* The walk really crossed 2^32. */
	KUNIT_EXPECT_LT(test, head, 0x1000u);
	KUNIT_EXPECT_GT(test, consumed, 101u);
}

static void ring_slot_test(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, rs_ring_slot(0, 8), 0u);
	KUNIT_EXPECT_EQ(test, rs_ring_slot(9, 8), 1u);
	KUNIT_EXPECT_EQ(test, rs_ring_slot(0xffffffffu, 8), 7u);
	/* Consecutive indices across the wrap land in consecutive slots. */
	KUNIT_EXPECT_EQ(test, rs_ring_slot(0xffffffffu + 1u, 8), 0u);
	KUNIT_EXPECT_EQ(test, rs_ring_slot(0xfffffffeu, 4096), 4094u);
}

static void ring_entries_valid_test(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, rs_ring_entries_valid(64, 8, 4096));
	KUNIT_EXPECT_TRUE(test, rs_ring_entries_valid(8, 8, 4096));
	KUNIT_EXPECT_TRUE(test, rs_ring_entries_valid(4096, 8, 4096));
	KUNIT_EXPECT_FALSE(test, rs_ring_entries_valid(0, 0, 4096));
	KUNIT_EXPECT_FALSE(test, rs_ring_entries_valid(4, 8, 4096));
	KUNIT_EXPECT_FALSE(test, rs_ring_entries_valid(8192, 8, 4096));
	KUNIT_EXPECT_FALSE(test, rs_ring_entries_valid(100, 8, 4096));
	KUNIT_EXPECT_FALSE(test, rs_ring_entries_valid(0xffffffffu, 8, 0xffffffffu));
	KUNIT_EXPECT_TRUE(test, rs_ring_entries_valid(RS_RING_ENTRIES_MAX, 8, ~0u));
	KUNIT_EXPECT_FALSE(test, rs_ring_entries_valid(RS_RING_ENTRIES_MAX * 2, 8, ~0u));
}

/* The CQ's room: waiting operations get all but a sixteenth, at least one. */
static void ring_cq_limits_test(struct kunit *test)
{
	struct rs_cq_limits l;
	u32 cq, rx;

	KUNIT_ASSERT_EQ(test, rs_cq_limits(1024, 64, &l), 0);
	KUNIT_EXPECT_EQ(test, l.room, 960u);
	KUNIT_EXPECT_EQ(test, l.waiting, 900u);
	KUNIT_ASSERT_EQ(test, rs_cq_limits(16, 8, &l), 0);
	KUNIT_EXPECT_EQ(test, l.waiting, 7u);
	KUNIT_EXPECT_EQ(test, rs_cq_limits(4, 1, &l), -EINVAL);
	KUNIT_EXPECT_EQ(test, rs_cq_limits(4, 8, &l), -EINVAL);

	for (cq = 1; cq <= RS_RING_ENTRIES_MAX; cq *= 2) {
		for (rx = 0; rx <= cq; rx += rx < 16 ? 1 : rx / 3) {
			if (rs_cq_limits(cq, rx, &l)) {
				KUNIT_EXPECT_LT(test, cq - rx, RS_CQ_ROOM_MIN);
				continue;
			}
			KUNIT_EXPECT_GE(test, l.waiting, 1u);
			KUNIT_EXPECT_LT(test, l.waiting, l.room);
			KUNIT_EXPECT_EQ(test, l.room, cq - rx);
		}
	}
}

static struct kunit_case ring_test_cases[] = {
	KUNIT_CASE_PARAM(ring_accounting_test, ring_gen_params),
	KUNIT_CASE(ring_wrap_walk_test),
	KUNIT_CASE(ring_slot_test),
	KUNIT_CASE(ring_entries_valid_test),
	KUNIT_CASE(ring_cq_limits_test),
	{}
};

static struct kunit_suite ring_test_suite = {
	.name = "rdmashare_ring",
	.test_cases = ring_test_cases,
};

kunit_test_suite(ring_test_suite);

MODULE_DESCRIPTION("KUnit tests for rdmashare's pure logic");
MODULE_LICENSE("GPL");
