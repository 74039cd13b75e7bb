// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the gate between a peer's QPs (gate.c), driven as the
 * sender drives it: each simulated QP has a scheduler (sched.c) with its
 * ACs, and the device serves the QPs in turn, one chunk each time from a
 * QP whose gate is open.  Without the gate each QP would get an equal part.
 */
#include <kunit/test.h>
#include <linux/math64.h>
#include <linux/module.h>

#include "gate.h"

#define CHUNK		(16384 + 32)
#define QUANTUM		(16384 + 32)
#define LAT_QUANTUM	65536
#define MAX_QPS		4
#define MAX_ENTS	4

struct sim_qp {
	struct rs_sched s;
	struct rs_gate_member m;
	struct rs_sched_entity e[MAX_ENTS];
	unsigned int nr_ents;
	u64 bytes;
	u64 held;		/* times its gate was shut */
	u64 released;
};

struct sim {
	struct rs_gate g;
	struct sim_qp q[MAX_QPS];
	unsigned int n;
};

static void sim_init(struct sim *sim, unsigned int n)
{
	unsigned int i;

	memset(sim, 0, sizeof(*sim));
	rs_gate_init(&sim->g);
	sim->n = n;
	for (i = 0; i < n; i++) {
		rs_sched_init(&sim->q[i].s, QUANTUM, LAT_QUANTUM, true);
		rs_gate_member_init(&sim->q[i].m);
	}
}

/* An always backlogged AC of @weight in @band on QP @qp (flat mode). */
static struct rs_sched_entity *sim_add(struct sim *sim, unsigned int qp, u32 weight, u8 band)
{
	struct sim_qp *q = &sim->q[qp];
	struct rs_sched_entity *e = &q->e[q->nr_ents++];

	rs_sched_entity_init(e, NULL, weight, band);
	rs_sched_enqueue(&q->s, e);
	return e;
}

static void sim_release(struct sim *sim, struct sim_qp *by)
{
	struct rs_gate_member *m;

	while ((m = rs_gate_released(&sim->g, &by->s)))
		container_of(m, struct sim_qp, m)->released++;
}

/* The sender's rs_qp_gate(). */
static bool sim_gate(struct sim *sim, struct sim_qp *q, bool check)
{
	bool open = true;

	rs_gate_update(&sim->g, &q->m, &q->s);
	if (check && !rs_gate_open(&sim->g, &q->m, &q->s)) {
		q->held++;
		open = false;
	}
	sim_release(sim, q);
	return open;
}

/* @rounds turns of the device over the QPs: a chunk from each it may take. */
static void sim_run(struct sim *sim, unsigned int rounds)
{
	struct rs_sched_entity *e;
	struct sim_qp *q;
	unsigned int r, i;

	for (r = 0; r < rounds; r++) {
		for (i = 0; i < sim->n; i++) {
			q = &sim->q[i];
			if (!sim_gate(sim, q, true))
				continue;
			e = rs_sched_next(&q->s);
			if (!e)
				continue;
			rs_sched_charge(&q->s, e, CHUNK, RS_SCHED_MORE);
			q->bytes += CHUNK;
			sim_gate(sim, q, false);
		}
	}
}

static void expect_shares(struct kunit *test, struct sim *sim, const u32 *target, u32 sum)
{
	u64 total = 0, want;
	unsigned int i;

	for (i = 0; i < sim->n; i++)
		total += sim->q[i].bytes;
	for (i = 0; i < sim->n; i++) {
		want = div64_u64(total * target[i], sum);
		/* Within 2% of the whole, at most a few turns. */
		KUNIT_EXPECT_LE_MSG(test, abs((s64)sim->q[i].bytes - (s64)want),
				    div64_u64(total, 50), "QP %u: %llu bytes of %llu, want %llu",
				    i, sim->q[i].bytes, total, want);
	}
}

/* Weights 1:2:4:8, an AC per QP: the shares of one scheduler. */
static void gate_weights_test(struct kunit *test)
{
	static const u32 w[4] = { 1, 2, 4, 8 };
	struct sim *sim = kunit_kzalloc(test, sizeof(*sim), GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, sim);
	sim_init(sim, 4);
	for (i = 0; i < 4; i++)
		sim_add(sim, i, w[i], RS_BAND_NORMAL);
	sim_run(sim, 4000);
	expect_shares(test, sim, w, 15);
	/* The device served the heaviest QP whenever it came. */
	KUNIT_EXPECT_EQ(test, sim->q[3].held, 0);
	KUNIT_EXPECT_GT(test, sim->q[0].held, 0);
}

/* Three ACs on one QP, one on another, equal weights: 3:1, not 1:1. */
static void gate_uneven_test(struct kunit *test)
{
	static const u32 want[2] = { 3, 1 };
	struct sim *sim = kunit_kzalloc(test, sizeof(*sim), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, sim);
	sim_init(sim, 2);
	sim_add(sim, 0, 1, RS_BAND_NORMAL);
	sim_add(sim, 0, 1, RS_BAND_NORMAL);
	sim_add(sim, 0, 1, RS_BAND_NORMAL);
	sim_add(sim, 1, 1, RS_BAND_NORMAL);
	sim_run(sim, 4000);
	expect_shares(test, sim, want, 4);
}

/*
 * Bands: a normal AC alone on one QP, a bulk AC on the other: 3:1, as the
 * weighted bands take turns; the shares say so before any byte.
 */
static void gate_bands_test(struct kunit *test)
{
	static const u32 want[2] = { 3, 1 };
	struct sim *sim = kunit_kzalloc(test, sizeof(*sim), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, sim);
	sim_init(sim, 2);
	sim_add(sim, 0, 1, RS_BAND_NORMAL);
	sim_add(sim, 1, 5, RS_BAND_BULK);
	rs_gate_update(&sim->g, &sim->q[0].m, &sim->q[0].s);
	rs_gate_update(&sim->g, &sim->q[1].m, &sim->q[1].s);
	KUNIT_EXPECT_EQ(test, rs_gate_share(&sim->g, &sim->q[0].m, &sim->q[0].s),
			RS_GATE_ONE * 3 / 4);
	KUNIT_EXPECT_EQ(test, rs_gate_share(&sim->g, &sim->q[1].m, &sim->q[1].s),
			RS_GATE_ONE / 4);
	sim_run(sim, 4000);
	expect_shares(test, sim, want, 4);
}

/* Alone, a QP is never held, whatever it sends. */
static void gate_alone_test(struct kunit *test)
{
	struct sim *sim = kunit_kzalloc(test, sizeof(*sim), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, sim);
	sim_init(sim, 2);
	sim_add(sim, 0, 1, RS_BAND_BULK);
	sim_run(sim, 100);
	KUNIT_EXPECT_EQ(test, sim->q[0].bytes, 100 * CHUNK);
	KUNIT_EXPECT_EQ(test, sim->q[0].held, 0);
	KUNIT_EXPECT_EQ(test, rs_gate_share(&sim->g, &sim->q[0].m, &sim->q[0].s), RS_GATE_ONE);
	/* The idle QP is no member. */
	KUNIT_EXPECT_FALSE(test, sim->q[1].m.in);
}

/* @q sends alone until its gate shuts, at most @max chunks: how many. */
static unsigned int send_until_held(struct sim *sim, struct sim_qp *q, unsigned int max)
{
	unsigned int i;

	for (i = 0; i < max && sim_gate(sim, q, true); i++) {
		rs_sched_charge(&q->s, rs_sched_next(&q->s), CHUNK, RS_SCHED_MORE);
		sim_gate(sim, q, false);
	}
	return i;
}

/*
 * A QP held is released when the other one catches up, and when it leaves
 * (nothing left to send, or down): it never waits for a QP that does not
 * send.
 */
static void gate_release_test(struct kunit *test)
{
	struct sim *sim = kunit_kzalloc(test, sizeof(*sim), GFP_KERNEL);
	struct rs_sched_entity *e1;
	struct sim_qp *a, *b;

	KUNIT_ASSERT_NOT_NULL(test, sim);
	sim_init(sim, 2);
	a = &sim->q[0];
	b = &sim->q[1];
	sim_add(sim, 0, 1, RS_BAND_NORMAL);
	e1 = sim_add(sim, 1, 1, RS_BAND_NORMAL);
	sim_gate(sim, a, false);
	sim_gate(sim, b, false);
	/*
	 * A sends until it is held: its slack, 3 quanta of its own, and the
	 * chunk that crossed it.
	 */
	KUNIT_EXPECT_EQ(test, send_until_held(sim, a, 10), 4);
	KUNIT_EXPECT_TRUE(test, a->m.held);
	KUNIT_EXPECT_EQ(test, a->released, 0);
	/* B's chunk brings it back within its slack. */
	rs_sched_charge(&b->s, rs_sched_next(&b->s), CHUNK, RS_SCHED_MORE);
	sim_gate(sim, b, false);
	KUNIT_EXPECT_EQ(test, a->released, 1);
	KUNIT_EXPECT_FALSE(test, a->m.held);
	/* Held again; B runs dry: A goes at once. */
	KUNIT_EXPECT_EQ(test, send_until_held(sim, a, 10), 1);
	rs_sched_dequeue(&b->s, e1);
	sim_gate(sim, b, false);
	KUNIT_EXPECT_EQ(test, a->released, 2);
	KUNIT_EXPECT_FALSE(test, b->m.in);
	KUNIT_EXPECT_TRUE(test, sim_gate(sim, a, true));
	/* Held by a QP that goes down: released as it leaves. */
	rs_sched_enqueue(&b->s, e1);
	sim_gate(sim, b, false);
	KUNIT_EXPECT_EQ(test, send_until_held(sim, a, 10), 4);
	rs_gate_leave(&sim->g, &b->m);
	sim_release(sim, b);
	KUNIT_EXPECT_EQ(test, a->released, 3);
	KUNIT_EXPECT_EQ(test, sim->g.nr_held, 0);
}

/* The caller's slack, when over a turn: 8 chunks ahead, then held. */
static void gate_slack_test(struct kunit *test)
{
	struct sim *sim = kunit_kzalloc(test, sizeof(*sim), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, sim);
	sim_init(sim, 2);
	sim->g.slack = 8 * CHUNK;
	sim_add(sim, 0, 1, RS_BAND_NORMAL);
	sim_add(sim, 1, 1, RS_BAND_NORMAL);
	sim_gate(sim, &sim->q[0], false);
	sim_gate(sim, &sim->q[1], false);
	KUNIT_EXPECT_EQ(test, send_until_held(sim, &sim->q[0], 20), 9);
	/* Under a turn it is the turn: 3 quanta, as without. */
	sim->g.slack = CHUNK;
	sim_gate(sim, &sim->q[1], false);
	rs_sched_charge(&sim->q[1].s, rs_sched_next(&sim->q[1].s), 9 * CHUNK, RS_SCHED_MORE);
	sim_gate(sim, &sim->q[1], false);
	KUNIT_EXPECT_EQ(test, send_until_held(sim, &sim->q[0], 20), 4);
}

/*
 * A QP that joins starts at the least virtual time of the others: an idle
 * one gets no credit for its idle time, and one that sent much before it
 * went idle is at most its slack ahead.
 */
static void gate_join_test(struct kunit *test)
{
	struct sim *sim = kunit_kzalloc(test, sizeof(*sim), GFP_KERNEL);
	struct rs_sched_entity *e0;
	struct sim_qp *q0, *q1, *q2;
	u64 before, idle, slack;

	KUNIT_ASSERT_NOT_NULL(test, sim);
	sim_init(sim, 3);
	q0 = &sim->q[0];
	q1 = &sim->q[1];
	q2 = &sim->q[2];
	e0 = sim_add(sim, 0, 1, RS_BAND_NORMAL);
	sim_add(sim, 1, 1, RS_BAND_NORMAL);
	sim_run(sim, 50);
	/* QP 2 joins late, at QP 0's and 1's time: from now on, equal parts. */
	sim_add(sim, 2, 1, RS_BAND_NORMAL);
	before = q2->bytes;
	sim_gate(sim, q2, false);
	KUNIT_EXPECT_EQ(test, q2->m.vtime, min(q0->m.vtime, q1->m.vtime));
	sim_run(sim, 90);
	KUNIT_EXPECT_EQ(test, q2->bytes - before, 90 * CHUNK);
	/* QP 0 idles while the two others send on: back at their time. */
	rs_sched_dequeue(&q0->s, e0);
	sim_run(sim, 100);
	idle = q0->m.vtime;
	rs_sched_enqueue(&q0->s, e0);
	sim_gate(sim, q0, false);
	KUNIT_EXPECT_GT(test, q0->m.vtime, idle);
	KUNIT_EXPECT_EQ(test, q0->m.vtime, min(q1->m.vtime, q2->m.vtime));
	/*
	 * QP 0 sends 30 chunks at once, leaves and comes back: one slack,
	 * 3 quanta at its share of 1/3, ahead of the least.
	 */
	rs_sched_charge(&q0->s, e0, 30 * CHUNK, RS_SCHED_MORE);
	sim_gate(sim, q0, false);
	rs_sched_dequeue(&q0->s, e0);
	sim_gate(sim, q0, false);
	KUNIT_EXPECT_FALSE(test, q0->m.in);
	rs_sched_enqueue(&q0->s, e0);
	sim_gate(sim, q0, false);
	slack = div64_u64(3ULL * QUANTUM * RS_GATE_ONE, rs_gate_share(&sim->g, &q0->m, &q0->s));
	KUNIT_EXPECT_EQ(test, slack / 1000, 9ULL * QUANTUM / 1000);
	KUNIT_EXPECT_EQ(test, q0->m.vtime, min(q1->m.vtime, q2->m.vtime) + slack);
}

static struct kunit_case gate_cases[] = {
	KUNIT_CASE(gate_weights_test),
	KUNIT_CASE(gate_uneven_test),
	KUNIT_CASE(gate_bands_test),
	KUNIT_CASE(gate_alone_test),
	KUNIT_CASE(gate_release_test),
	KUNIT_CASE(gate_slack_test),
	KUNIT_CASE(gate_join_test),
	{}
};

static struct kunit_suite gate_suite = {
	.name = "rdmashare_gate",
	.test_cases = gate_cases,
};

kunit_test_suite(gate_suite);

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
