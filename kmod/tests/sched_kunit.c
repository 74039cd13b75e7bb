// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the scheduler (sched.c), driven as the sender drives it:
 * rs_sched_next() picks an entity, rs_sched_charge() bills its chunk.  A
 * simulated entity has a backlog of chunks and, optionally, credits.
 */
#include <kunit/test.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "sched.h"

#define CHUNK		16384
#define HDR		32
#define QUANTUM		16384
#define LAT_QUANTUM	65536

#define WINDOW_MAX	8

struct sim_ent {
	struct rs_sched_entity se;
	u64 backlog;		/* chunks left; U64_MAX: always backlogged */
	u32 chunk;		/* bytes per chunk */
	u32 credits;		/* U32_MAX: unlimited */
	u64 bytes;		/* served, headers included */
	u64 chunks;
	/* With @recycle, a credit comes back @delay steps after its chunk. */
	bool recycle;
	u32 delay;
	u64 ret[WINDOW_MAX];
	unsigned int ret_head, ret_len;
};

struct sim {
	struct rs_sched s;
	struct sim_ent *ents;
	unsigned int n;
	struct rs_sched_group *groups;
	unsigned int ngroups;
	u64 total;
	u64 steps;
	u64 blocks;		/* times an entity ran out of credits */
};

static struct sim *sim_new(struct kunit *test, unsigned int n, unsigned int ngroups,
			   bool flat)
{
	struct sim *sim = kunit_kzalloc(test, sizeof(*sim), GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, sim);
	sim->ents = kunit_kcalloc(test, n, sizeof(*sim->ents), GFP_KERNEL);
	sim->groups = kunit_kcalloc(test, ngroups ?: 1, sizeof(*sim->groups), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, sim->ents);
	KUNIT_ASSERT_NOT_NULL(test, sim->groups);
	sim->n = n;
	sim->ngroups = ngroups;
	rs_sched_init(&sim->s, QUANTUM, LAT_QUANTUM, flat);
	for (i = 0; i < ngroups; i++)
		rs_sched_group_init(&sim->groups[i], RS_SCHED_WEIGHT_DEFAULT);
	for (i = 0; i < n; i++) {
		rs_sched_entity_init(&sim->ents[i].se, ngroups ? &sim->groups[0] : NULL,
				     RS_SCHED_WEIGHT_DEFAULT, RS_BAND_NORMAL);
		sim->ents[i].chunk = CHUNK;
		sim->ents[i].credits = U32_MAX;
		sim->ents[i].backlog = U64_MAX;
	}
	return sim;
}

static bool sim_can_send(const struct sim_ent *e)
{
	return e->backlog && e->credits;
}

static void sim_enqueue(struct sim *sim, unsigned int i)
{
	if (sim_can_send(&sim->ents[i]))
		rs_sched_enqueue(&sim->s, &sim->ents[i].se);
}

/* Credits due back by step @now return; a blocked entity comes back. */
static void sim_return_credits(struct sim *sim, u64 now)
{
	struct sim_ent *e;
	unsigned int i;

	for (i = 0; i < sim->n; i++) {
		e = &sim->ents[i];
		while (e->ret_len && e->ret[e->ret_head] <= now) {
			e->ret_head = (e->ret_head + 1) % WINDOW_MAX;
			e->ret_len--;
			if (!e->credits++)
				sim_enqueue(sim, i);
		}
	}
}

/* One chunk; returns the index served, or -1 when nothing is active. */
static int sim_step(struct sim *sim)
{
	struct rs_sched_entity *se;
	enum rs_sched_after after;
	struct sim_ent *e;

	sim_return_credits(sim, sim->steps);
	sim->steps++;
	se = rs_sched_next(&sim->s);
	if (!se)
		return -1;
	e = container_of(se, struct sim_ent, se);
	if (e->backlog != U64_MAX)
		e->backlog--;
	if (e->credits != U32_MAX)
		e->credits--;
	if (e->recycle) {
		e->ret[(e->ret_head + e->ret_len) % WINDOW_MAX] = sim->steps + e->delay;
		e->ret_len++;
	}
	/* Fairness is in bytes on the wire, headers included. */
	e->bytes += e->chunk + HDR;
	e->chunks++;
	sim->total += e->chunk + HDR;
	if (sim_can_send(e)) {
		after = RS_SCHED_MORE;
	} else if (e->backlog) {
		after = RS_SCHED_BLOCKED;
		sim->blocks++;
	} else {
		after = RS_SCHED_EMPTY;
	}
	rs_sched_charge(&sim->s, se, e->chunk + HDR, after);
	return e - sim->ents;
}

static void sim_run(struct sim *sim, unsigned int steps)
{
	while (steps--)
		if (sim_step(sim) < 0)
			break;
}

/* |share - target| <= 1% of target, in parts per million. */
static void expect_share(struct kunit *test, u64 got, u64 total, u64 num, u64 den)
{
	u64 share = div64_u64(got * 1000000, total);
	u64 target = div64_u64(num * 1000000, den);
	u64 diff = share > target ? share - target : target - share;

	KUNIT_EXPECT_LE_MSG(test, diff * 100, target,
			    "share %llu ppm, target %llu ppm", share, target);
}

/* ---- weights ---- */

struct weight_case {
	const char *name;
	unsigned int n;
	u32 w[8];
	u32 chunk[8];		/* 0: CHUNK */
};

static const struct weight_case weight_cases[] = {
	{ "equal 8",		8, { 1, 1, 1, 1, 1, 1, 1, 1 } },
	{ "1:2:4:8",		4, { 1, 2, 4, 8 } },
	{ "1:1000",		2, { 1, 1000 } },
	{ "3:5:7",		3, { 3, 5, 7 } },
	{ "mixed chunks",	4, { 1, 1, 2, 2 }, { 64, 16384, 1000, 9000 } },
	{ "small chunks 1:3",	2, { 1, 3 }, { 64, 64 } },
};

static void weight_case_desc(const struct weight_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(weight, weight_cases, weight_case_desc);

/* Backlogged entities converge to w_i / sum(w), in bytes, within 1%. */
static void sched_weights_test(struct kunit *test)
{
	const struct weight_case *c = test->param_value;
	struct sim *sim = sim_new(test, c->n, 0, true);
	u64 sum = 0, steps;
	unsigned int i;

	for (i = 0; i < c->n; i++) {
		rs_sched_entity_set_weight(&sim->ents[i].se, c->w[i]);
		if (c->chunk[i])
			sim->ents[i].chunk = c->chunk[i];
		sum += c->w[i];
		sim_enqueue(sim, i);
	}
	/* Long enough for many rounds of the heaviest weight. */
	steps = 2000 * sum;
	if (c->chunk[0] && c->chunk[0] < 1024)
		steps *= 20;
	sim_run(sim, min_t(u64, steps, 4000000));
	for (i = 0; i < c->n; i++)
		expect_share(test, sim->ents[i].bytes, sim->total, c->w[i], sum);
}

/* ---- two levels ---- */

/* A process with 1000 ACs and one with 1 AC: equal shares in app mode. */
static void sched_two_level_test(struct kunit *test)
{
	struct sim *sim = sim_new(test, 1001, 2, false);
	u64 big = 0;
	unsigned int i;

	sim->ents[1000].se.group = &sim->groups[1];
	for (i = 0; i < 1001; i++)
		sim_enqueue(sim, i);
	sim_run(sim, 60000);
	for (i = 0; i < 1000; i++)
		big += sim->ents[i].bytes;
	expect_share(test, big, sim->total, 1, 2);
	expect_share(test, sim->ents[1000].bytes, sim->total, 1, 2);
	/* Inside the big process, its ACs share equally too. */
	for (i = 0; i < 1000; i += 97)
		KUNIT_EXPECT_EQ(test, sim->ents[i].chunks, sim->ents[0].chunks);
}

/* The same in flat mode: each AC is its own group, 1000:1. */
static void sched_flat_test(struct kunit *test)
{
	struct sim *sim = sim_new(test, 1001, 2, true);
	unsigned int i;

	sim->ents[1000].se.group = &sim->groups[1];
	for (i = 0; i < 1001; i++)
		sim_enqueue(sim, i);
	/* 100 rounds of 1001 chunks */
	sim_run(sim, 100100);
	expect_share(test, sim->ents[1000].bytes, sim->total, 1, 1001);
}

/* Group weights: 1:3 between two applications of 1 and 5 ACs. */
static void sched_group_weight_test(struct kunit *test)
{
	struct sim *sim = sim_new(test, 6, 2, false);
	u64 a = 0;
	unsigned int i;

	rs_sched_group_set_weight(&sim->groups[1], 3);
	for (i = 1; i < 6; i++)
		sim->ents[i].se.group = &sim->groups[1];
	for (i = 0; i < 6; i++)
		sim_enqueue(sim, i);
	sim_run(sim, 100000);
	a = sim->ents[0].bytes;
	expect_share(test, a, sim->total, 1, 4);
}

/* ---- bands ---- */

/*
 * Latency, normal and bulk all backlogged: nobody starves, the latency
 * band never sends more than its quantum plus a chunk in a row while the
 * others wait, and normal:bulk is 3:1.
 */
static void sched_bands_test(struct kunit *test)
{
	struct sim *sim = sim_new(test, 3, 0, true);
	u64 run = 0, max_run = 0;
	unsigned int i;
	int who;

	for (i = 0; i < 3; i++) {
		rs_sched_entity_init(&sim->ents[i].se, NULL, 1, i);
		sim_enqueue(sim, i);
	}
	for (i = 0; i < 100000; i++) {
		who = sim_step(sim);
		if (who == RS_BAND_LATENCY) {
			run += CHUNK + HDR;
			max_run = max(max_run, run);
		} else {
			run = 0;
		}
	}
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_GT(test, sim->ents[i].chunks, 0);
	KUNIT_EXPECT_LE_MSG(test, max_run, (u64)LAT_QUANTUM + CHUNK + HDR,
			    "the latency band sent %llu bytes in a row", max_run);
	expect_share(test, sim->ents[RS_BAND_NORMAL].bytes,
		     sim->ents[RS_BAND_NORMAL].bytes + sim->ents[RS_BAND_BULK].bytes, 3, 4);
	/* The latency band's share: its quantum against a normal band turn. */
	KUNIT_EXPECT_LE(test, sim->ents[RS_BAND_LATENCY].bytes * 100, sim->total * 70);
}

/* Alone, the latency band is not limited; it goes first when it wakes. */
static void sched_latency_first_test(struct kunit *test)
{
	struct sim *sim = sim_new(test, 2, 0, true);

	rs_sched_entity_init(&sim->ents[0].se, NULL, 1, RS_BAND_LATENCY);
	rs_sched_entity_init(&sim->ents[1].se, NULL, 1, RS_BAND_BULK);
	sim->ents[0].backlog = 100;
	sim_enqueue(sim, 0);
	sim_run(sim, 100);
	KUNIT_EXPECT_EQ(test, sim->ents[0].chunks, 100);
	KUNIT_EXPECT_EQ(test, sim->s.nr_active, 0);

	sim_enqueue(sim, 1);
	sim_run(sim, 1000);
	sim->ents[0].backlog = 1;
	sim_enqueue(sim, 0);
	/* Its quantum came back while bulk ran alone: it is next. */
	KUNIT_EXPECT_EQ(test, sim_step(sim), 0);
}

/* ---- chunking and the sparse boost ---- */

/*
 * A bulk AC sends a 16 MiB message in chunks; a 64-byte message on another
 * AC is served right after the chunk in progress, in both modes.
 */
static void sched_interleave_test(struct kunit *test)
{
	bool flat;

	for (flat = false; ; flat = true) {
		struct sim *sim = sim_new(test, 2, 1, flat);
		unsigned int before;
		int who;

		sim->ents[0].backlog = (16 << 20) / CHUNK;
		sim_enqueue(sim, 0);
		sim_run(sim, 37);
		before = sim->ents[0].chunks;
		sim->ents[1].backlog = 1;
		sim->ents[1].chunk = 64;
		sim_enqueue(sim, 1);
		while ((who = sim_step(sim)) == 0)
			;
		KUNIT_EXPECT_EQ(test, who, 1);
		/* At most one more chunk of the big message went first. */
		KUNIT_EXPECT_LE(test, sim->ents[0].chunks - before, 1);
		KUNIT_EXPECT_LT(test, sim->ents[0].chunks, (16 << 20) / CHUNK);
		if (flat)
			break;
	}
}

/* Many bulk ACs: a newly active small AC still overtakes all of them. */
static void sched_sparse_boost_test(struct kunit *test)
{
	struct sim *sim = sim_new(test, 9, 0, true);
	u64 before = 0;
	unsigned int i;

	for (i = 0; i < 8; i++)
		sim_enqueue(sim, i);
	sim_run(sim, 1000);
	for (i = 0; i < 8; i++)
		before += sim->ents[i].chunks;
	sim->ents[8].backlog = 1;
	sim->ents[8].chunk = 64;
	sim_enqueue(sim, 8);
	KUNIT_EXPECT_EQ(test, sim_step(sim), 8);
}

/* ---- credits ---- */

/*
 * Entities with one credit each, which comes back before the next chunk:
 * every chunk leaves the entity blocked, and it returns with its deficit to
 * finish its turn, so the weights hold exactly as if it never left.  (Were
 * a block to end its turn, all three would get equal shares.)
 */
static void sched_credits_test(struct kunit *test)
{
	struct sim *sim = sim_new(test, 3, 0, true);
	unsigned int i;
	u64 idle = 0;

	for (i = 0; i < 3; i++) {
		rs_sched_entity_set_weight(&sim->ents[i].se, 1 << i);
		sim->ents[i].credits = 1;
		sim->ents[i].recycle = true;
		sim->ents[i].delay = 0;
		sim_enqueue(sim, i);
	}
	for (i = 0; i < 100000; i++)
		if (sim_step(sim) < 0)
			idle++;
	KUNIT_EXPECT_EQ(test, idle, 0);
	KUNIT_EXPECT_EQ(test, sim->blocks, 100000);
	for (i = 0; i < 3; i++)
		expect_share(test, sim->ents[i].bytes, sim->total, 1 << i, 7);
}

/*
 * Blocked mid-turn, an entity keeps its deficit and comes back at the
 * front of the old list; blocked at the end of its turn, at the back; and a
 * blocked entity gets no new-entity boost.
 */
static void sched_block_resume_test(struct kunit *test)
{
	struct sim *sim = sim_new(test, 3, 0, true);
	struct rs_sched_entity *e0 = &sim->ents[0].se;
	s64 deficit;
	unsigned int i;

	rs_sched_entity_set_weight(e0, 4);
	for (i = 0; i < 3; i++)
		sim_enqueue(sim, i);
	/* Entity 0 is first (new list) with 4 chunks of quantum: send one. */
	KUNIT_EXPECT_EQ(test, sim_step(sim), 0);
	deficit = e0->dn.deficit;
	KUNIT_EXPECT_GT(test, deficit, 0);
	rs_sched_block(&sim->s, e0);
	KUNIT_EXPECT_FALSE(test, e0->queued);
	KUNIT_EXPECT_TRUE(test, e0->dn.kept);
	KUNIT_EXPECT_EQ(test, sim_step(sim), 1);
	sim_enqueue(sim, 0);
	KUNIT_EXPECT_EQ(test, e0->dn.deficit, deficit);
	KUNIT_EXPECT_EQ(test, e0->dn.where, RS_DRR_OLD);
	KUNIT_EXPECT_PTR_EQ(test, list_first_entry(&e0->cur->cls[RS_BAND_NORMAL].ents.old_list,
						   struct rs_drr_node, node), &e0->dn);

	/* Out of deficit when it blocks: back of the old list. */
	while (e0->dn.deficit > 0)
		KUNIT_ASSERT_GE(test, sim_step(sim), 0);
	rs_sched_block(&sim->s, e0);
	sim_enqueue(sim, 0);
	KUNIT_EXPECT_PTR_EQ(test, list_last_entry(&sim->s.band[RS_BAND_NORMAL].groups.old_list,
						  struct rs_drr_node, node),
			    &e0->cur->cls[RS_BAND_NORMAL].dn);

	/* Emptied, then active again: a new entity, fresh quantum. */
	rs_sched_dequeue(&sim->s, e0);
	KUNIT_EXPECT_FALSE(test, e0->dn.kept);
	sim_enqueue(sim, 0);
	KUNIT_EXPECT_EQ(test, e0->dn.where, RS_DRR_NEW);
	KUNIT_EXPECT_EQ(test, e0->dn.deficit, 4 * QUANTUM);
}

/* ---- churn ---- */

/*
 * ACs join and leave (and block) at random while others stay backlogged:
 * the counts stay consistent, nothing active starves, groups empty out.
 */
static void sched_churn_test(struct kunit *test)
{
	struct sim *sim = sim_new(test, 64, 4, false);
	u32 seed = 12345;
	unsigned int i, step;
	u64 last[64] = {};

	for (i = 0; i < 64; i++) {
		rs_sched_entity_init(&sim->ents[i].se, &sim->groups[i % 4],
				     1 + i % 5, i % RS_SCHED_BANDS);
	}
	for (step = 0; step < 100000; step++) {
		seed = seed * 1103515245 + 12345;
		i = (seed >> 8) % 64;
		switch ((seed >> 20) % 8) {
		case 0:
			rs_sched_dequeue(&sim->s, &sim->ents[i].se);
			sim->ents[i].backlog = 0;
			break;
		case 1:
			rs_sched_block(&sim->s, &sim->ents[i].se);
			sim->ents[i].credits = 0;
			break;
		case 2:
		case 3:
			sim->ents[i].backlog = 1 + (seed >> 24) % 20;
			sim->ents[i].credits = U32_MAX;
			sim_enqueue(sim, i);
			break;
		default:
			sim_step(sim);
			break;
		}
	}
	/* Entities 0..7 backlogged for good: each is served within a bound. */
	for (i = 0; i < 8; i++) {
		sim->ents[i].backlog = U64_MAX;
		sim->ents[i].credits = U32_MAX;
		sim_enqueue(sim, i);
		last[i] = sim->ents[i].chunks;
	}
	sim_run(sim, 20000);
	for (i = 0; i < 8; i++)
		KUNIT_EXPECT_GT(test, sim->ents[i].chunks, last[i]);
	/* Everyone leaves: the scheduler and the groups are empty. */
	for (i = 0; i < 64; i++)
		rs_sched_dequeue(&sim->s, &sim->ents[i].se);
	KUNIT_EXPECT_EQ(test, sim->s.nr_active, 0);
	KUNIT_EXPECT_NULL(test, rs_sched_next(&sim->s));
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_TRUE(test, rs_sched_group_idle(&sim->groups[i]));
	for (i = 0; i < RS_SCHED_BANDS; i++)
		KUNIT_EXPECT_EQ(test, sim->s.band[i].nr, 0);
	KUNIT_EXPECT_TRUE(test, list_empty(&sim->s.wbands));
}

/* A mode switch applies to entities as they next become active. */
static void sched_mode_switch_test(struct kunit *test)
{
	struct sim *sim = sim_new(test, 3, 2, false);
	unsigned int i;

	sim->ents[2].se.group = &sim->groups[1];
	for (i = 0; i < 3; i++)
		sim_enqueue(sim, i);
	KUNIT_EXPECT_PTR_EQ(test, sim->ents[0].se.cur, &sim->groups[0]);
	rs_sched_set_params(&sim->s, QUANTUM, LAT_QUANTUM, true);
	KUNIT_EXPECT_PTR_EQ(test, sim->ents[0].se.cur, &sim->groups[0]);
	rs_sched_dequeue(&sim->s, &sim->ents[0].se);
	sim_enqueue(sim, 0);
	KUNIT_EXPECT_PTR_EQ(test, sim->ents[0].se.cur, &sim->ents[0].se.own);
	sim_run(sim, 30000);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_GT(test, sim->ents[i].chunks, 0);
}

/* ---- coalescing ---- */

/* Six entities over three bands, two groups, mixed weights and chunks. */
static void sim_mixed(struct sim *sim)
{
	static const u32 chunk[6] = { 64, 16384, 1000, 9000, 64, 4096 };
	static const u8 band[6] = { RS_BAND_LATENCY, RS_BAND_NORMAL, RS_BAND_NORMAL,
				    RS_BAND_BULK, RS_BAND_NORMAL, RS_BAND_BULK };
	unsigned int i;

	rs_sched_group_set_weight(&sim->groups[1], 3);
	for (i = 0; i < 6; i++) {
		rs_sched_entity_init(&sim->ents[i].se, &sim->groups[i & 1], 1 + i % 3,
				     band[i]);
		sim->ents[i].chunk = chunk[i];
	}
	sim->ents[0].backlog = 700;
	sim->ents[2].credits = 2;
	sim->ents[2].recycle = true;
	sim->ents[2].delay = 7;
	sim->ents[4].credits = 1;
	sim->ents[4].recycle = true;
	sim->ents[4].delay = 3;
	sim->ents[5].backlog = 2000;
	for (i = 0; i < 6; i++)
		sim_enqueue(sim, i);
}

/*
 * Coalescing (sender.c) asks rs_sched_next() for the next entity and, when
 * its chunk does not fit in the SEND being filled, charges nothing and asks
 * again for the next SEND.  A pick that is not charged must change nothing:
 * a sender that peeks 0, 1 or 2 times before each chunk serves the same
 * entities in the same order, with the same charges, as one that never
 * peeks (no event between the peek and the pick, as in the sender).
 */
static void sched_peek_test(struct kunit *test)
{
	struct sim *a = sim_new(test, 6, 2, false), *b = sim_new(test, 6, 2, false);
	unsigned int i, p;
	int wa, wb;

	sim_mixed(a);
	sim_mixed(b);
	for (i = 0; i < 20000; i++) {
		sim_return_credits(b, b->steps);
		for (p = 0; p < i % 3; p++)
			rs_sched_next(&b->s);
		wa = sim_step(a);
		wb = sim_step(b);
		KUNIT_ASSERT_EQ_MSG(test, wa, wb, "step %u", i);
	}
	for (i = 0; i < 6; i++) {
		KUNIT_EXPECT_EQ(test, a->ents[i].bytes, b->ents[i].bytes);
		KUNIT_EXPECT_EQ(test, a->ents[i].se.dn.deficit, b->ents[i].se.dn.deficit);
		KUNIT_EXPECT_GT(test, a->ents[i].chunks, 0);
	}
	KUNIT_EXPECT_EQ(test, a->blocks, b->blocks);
	KUNIT_EXPECT_GT(test, a->blocks, 0);
}

static struct kunit_case sched_cases[] = {
	KUNIT_CASE_PARAM(sched_weights_test, weight_gen_params),
	KUNIT_CASE(sched_two_level_test),
	KUNIT_CASE(sched_flat_test),
	KUNIT_CASE(sched_group_weight_test),
	KUNIT_CASE(sched_bands_test),
	KUNIT_CASE(sched_latency_first_test),
	KUNIT_CASE(sched_interleave_test),
	KUNIT_CASE(sched_sparse_boost_test),
	KUNIT_CASE(sched_credits_test),
	KUNIT_CASE(sched_block_resume_test),
	KUNIT_CASE(sched_churn_test),
	KUNIT_CASE(sched_mode_switch_test),
	KUNIT_CASE(sched_peek_test),
	{}
};

static struct kunit_suite sched_suite = {
	.name = "rdmashare_sched",
	.test_cases = sched_cases,
};

kunit_test_suite(sched_suite);

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
