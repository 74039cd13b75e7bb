// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: the gate between the QPs to one peer (see gate.h and
 * Documentation/scheduler.rst).
 */
#include <kunit/visibility.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/module.h>

#include "gate.h"

void rs_gate_init(struct rs_gate *g)
{
	INIT_LIST_HEAD(&g->members);
	memset(g->wsum, 0, sizeof(g->wsum));
	g->nr_held = 0;
	g->slack = 0;
}
EXPORT_SYMBOL_IF_KUNIT(rs_gate_init);

void rs_gate_member_init(struct rs_gate_member *m)
{
	memset(m, 0, sizeof(*m));
	INIT_LIST_HEAD(&m->node);
}
EXPORT_SYMBOL_IF_KUNIT(rs_gate_member_init);

/*
 * @m's share of the peer, out of RS_GATE_ONE: per band, the bytes a turn of
 * one scheduler over the peer gives it (@s has the quanta: the tunables),
 * times @m's part of the band's active weight.  At least 1 for a member.
 */
u32 rs_gate_share(const struct rs_gate *g, const struct rs_gate_member *m,
		  const struct rs_sched *s)
{
	u64 bw[RS_SCHED_BANDS] = {}, sum = 0, share = 0;
	unsigned int weighted = 0;
	int i;

	if (g->wsum[RS_BAND_NORMAL]) {
		bw[RS_BAND_NORMAL] = (u64)RS_BAND_NORMAL_WEIGHT * s->quantum;
		weighted++;
	}
	if (g->wsum[RS_BAND_BULK]) {
		bw[RS_BAND_BULK] = (u64)RS_BAND_BULK_WEIGHT * s->quantum;
		weighted++;
	}
	/* Its quantum per turn of each weighted band; all of it alone. */
	if (g->wsum[RS_BAND_LATENCY])
		bw[RS_BAND_LATENCY] = (u64)max(weighted, 1U) * s->latency_quantum;
	for (i = 0; i < RS_SCHED_BANDS; i++) {
		sum += bw[i];
		if (g->wsum[i])
			share += div64_u64(m->wsum[i] * RS_GATE_ONE, g->wsum[i]) * bw[i];
	}
	if (!sum)
		return RS_GATE_ONE;
	return clamp_t(u64, div64_u64(share, sum), 1, RS_GATE_ONE);
}
EXPORT_SYMBOL_IF_KUNIT(rs_gate_share);

/*
 * How far past the others @m may run: one normal band's turn of its own,
 * or the gate's slack if more.
 */
static u64 rs_gate_slack(const struct rs_gate *g, const struct rs_gate_member *m,
			 const struct rs_sched *s)
{
	u64 turn = max_t(u64, (u64)RS_BAND_NORMAL_WEIGHT * s->quantum, g->slack);

	return div64_u64(turn * RS_GATE_ONE, rs_gate_share(g, m, s));
}

/* The least virtual time of the members other than @m; false if none. */
static bool rs_gate_vmin(const struct rs_gate *g, const struct rs_gate_member *m, u64 *vmin)
{
	const struct rs_gate_member *o;
	bool any = false;

	list_for_each_entry(o, &g->members, node) {
		if (o == m)
			continue;
		if (!any || (s64)(o->vtime - *vmin) < 0)
			*vmin = o->vtime;
		any = true;
	}
	return any;
}

/* @m's weights in the totals, from @s (or none). */
static void rs_gate_set_wsum(struct rs_gate *g, struct rs_gate_member *m,
			     const struct rs_sched *s)
{
	int i;

	for (i = 0; i < RS_SCHED_BANDS; i++) {
		g->wsum[i] -= m->wsum[i];
		m->wsum[i] = s ? s->band[i].wsum : 0;
		g->wsum[i] += m->wsum[i];
	}
}

/* @m has nothing to send, or its QP goes: out, holding no one. */
void rs_gate_leave(struct rs_gate *g, struct rs_gate_member *m)
{
	if (m->held)
		g->nr_held--;
	m->held = false;
	if (!m->in)
		return;
	rs_gate_set_wsum(g, m, NULL);
	list_del_init(&m->node);
	m->in = false;
}
EXPORT_SYMBOL_IF_KUNIT(rs_gate_leave);

/*
 * @s, @m's scheduler, may have sent and changed: its bytes since the last
 * update advance @m's virtual time at the share it had (unless it is the
 * only member), its active weights replace @m's in the totals, and @m
 * joins (with data to send) or leaves (without).  A QP that joins starts
 * no further behind the others than the least of them, and no further
 * ahead than its slack: an idle QP has no credit to spend, and a past
 * burst no debt.
 */
void rs_gate_update(struct rs_gate *g, struct rs_gate_member *m, const struct rs_sched *s)
{
	u64 delta = s->served - m->served, vmin, slack;

	m->served = s->served;
	/* Alone, it is compared with no one: a QP that joins starts here. */
	if (m->in && delta && !list_is_singular(&g->members))
		m->vtime += div64_u64(delta * RS_GATE_ONE, rs_gate_share(g, m, s));
	if (!s->nr_active) {
		rs_gate_leave(g, m);
		return;
	}
	rs_gate_set_wsum(g, m, s);
	if (m->in)
		return;
	if (rs_gate_vmin(g, m, &vmin)) {
		slack = rs_gate_slack(g, m, s);
		if ((s64)(m->vtime - vmin) < 0)
			m->vtime = vmin;
		else if ((s64)(m->vtime - vmin) > (s64)slack)
			m->vtime = vmin + slack;
	}
	list_add_tail(&m->node, &g->members);
	m->in = true;
}
EXPORT_SYMBOL_IF_KUNIT(rs_gate_update);

/* May @m take a chunk: not past the others by more than its slack? */
static bool rs_gate_may(const struct rs_gate *g, const struct rs_gate_member *m,
			const struct rs_sched *s)
{
	u64 vmin;

	if (!m->in || !rs_gate_vmin(g, m, &vmin))
		return true;
	return (s64)(m->vtime - vmin) <= (s64)rs_gate_slack(g, m, s);
}

/*
 * May @m, updated, take a chunk now?  If not, it is held: a later
 * rs_gate_released() returns it once the others caught up.
 */
bool rs_gate_open(struct rs_gate *g, struct rs_gate_member *m, const struct rs_sched *s)
{
	if (rs_gate_may(g, m, s))
		return true;
	if (!m->held)
		g->nr_held++;
	m->held = true;
	return false;
}
EXPORT_SYMBOL_IF_KUNIT(rs_gate_open);

/*
 * A member held that may go now, no longer held (the caller kicks its
 * QP), or NULL.  Called after every update until NULL.
 */
struct rs_gate_member *rs_gate_released(struct rs_gate *g, const struct rs_sched *s)
{
	struct rs_gate_member *m;

	if (!g->nr_held)
		return NULL;
	list_for_each_entry(m, &g->members, node) {
		if (m->held && rs_gate_may(g, m, s)) {
			m->held = false;
			g->nr_held--;
			return m;
		}
	}
	return NULL;
}
EXPORT_SYMBOL_IF_KUNIT(rs_gate_released);
