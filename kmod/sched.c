// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: hierarchical deficit round robin over the ACs sharing a QP
 * (see sched.h and Documentation/scheduler.rst).
 */
#include <kunit/visibility.h>
#include <linux/minmax.h>
#include <linux/module.h>

#include "sched.h"

static const u32 rs_band_weight[RS_SCHED_BANDS] = {
	[RS_BAND_NORMAL] = RS_BAND_NORMAL_WEIGHT,
	[RS_BAND_BULK] = RS_BAND_BULK_WEIGHT,
};

/* ---- one DRR++ level ---- */

static void rs_drr_init(struct rs_drr *d)
{
	INIT_LIST_HEAD(&d->new_list);
	INIT_LIST_HEAD(&d->old_list);
}

static void rs_drr_node_init(struct rs_drr_node *n, u32 weight)
{
	INIT_LIST_HEAD(&n->node);
	n->deficit = 0;
	n->weight = weight;
	n->where = RS_DRR_IDLE;
	n->kept = false;
}

static s64 rs_drr_quantum(const struct rs_sched *s, const struct rs_drr_node *n)
{
	return (s64)s->quantum * n->weight;
}

/*
 * @n becomes active: at the back of the new list with a fresh quantum.  If
 * it left blocked, it comes back to the old list with what it had: at the
 * front when its turn was not over (deficit left), so that it finishes the
 * turn, else at the back.
 */
static void rs_drr_activate(struct rs_sched *s, struct rs_drr *d, struct rs_drr_node *n)
{
	if (n->where != RS_DRR_IDLE)
		return;
	if (n->kept) {
		n->kept = false;
		if (n->deficit > 0)
			list_add(&n->node, &d->old_list);
		else
			list_add_tail(&n->node, &d->old_list);
		n->where = RS_DRR_OLD;
	} else {
		n->deficit = rs_drr_quantum(s, n);
		list_add_tail(&n->node, &d->new_list);
		n->where = RS_DRR_NEW;
	}
}

/* @n leaves; with @keep its deficit stays for when it comes back. */
static void rs_drr_deactivate(struct rs_drr_node *n, bool keep)
{
	if (n->where != RS_DRR_IDLE) {
		list_del_init(&n->node);
		n->where = RS_DRR_IDLE;
	}
	n->kept = keep;
}

/*
 * The node whose turn it is: the head of the new list, else of the old one,
 * once it has deficit left.  A node out of deficit gets its quantum (more
 * than one if a chunk larger than the quantum left it deep in debt) and goes
 * to the back of the old list.  Each node is refilled at most once per pass,
 * and the next node was refilled before: O(1) per chunk.
 */
static struct rs_drr_node *rs_drr_pick(struct rs_sched *s, struct rs_drr *d)
{
	struct rs_drr_node *n;

	for (;;) {
		n = list_first_entry_or_null(&d->new_list, struct rs_drr_node, node);
		if (!n)
			n = list_first_entry_or_null(&d->old_list, struct rs_drr_node, node);
		if (!n || n->deficit > 0)
			return n;
		do {
			n->deficit += rs_drr_quantum(s, n);
		} while (n->deficit <= 0);
		list_move_tail(&n->node, &d->old_list);
		n->where = RS_DRR_OLD;
	}
}

/* ---- the scheduler ---- */

void rs_sched_set_params(struct rs_sched *s, u32 quantum, u32 latency_quantum, bool flat)
{
	s->quantum = clamp(quantum, RS_SCHED_QUANTUM_MIN, RS_SCHED_QUANTUM_MAX);
	s->latency_quantum = clamp(latency_quantum, RS_SCHED_QUANTUM_MIN,
				   RS_SCHED_QUANTUM_MAX);
	s->flat = flat;
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_set_params);

void rs_sched_init(struct rs_sched *s, u32 quantum, u32 latency_quantum, bool flat)
{
	int i;

	for (i = 0; i < RS_SCHED_BANDS; i++) {
		rs_drr_node_init(&s->band[i].dn, rs_band_weight[i]);
		rs_drr_init(&s->band[i].groups);
		s->band[i].nr = 0;
		s->band[i].wsum = 0;
	}
	INIT_LIST_HEAD(&s->wbands);
	s->nr_active = 0;
	s->served = 0;
	rs_sched_set_params(s, quantum, latency_quantum, flat);
	s->latency_deficit = s->latency_quantum;
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_init);

void rs_sched_group_init(struct rs_sched_group *g, u32 weight)
{
	int i;

	for (i = 0; i < RS_SCHED_BANDS; i++) {
		rs_drr_node_init(&g->cls[i].dn, weight);
		rs_drr_init(&g->cls[i].ents);
		g->cls[i].nr = 0;
	}
	g->users = 0;
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_group_init);

/* Takes effect at the group's next quantum. */
void rs_sched_group_set_weight(struct rs_sched_group *g, u32 weight)
{
	int i;

	for (i = 0; i < RS_SCHED_BANDS; i++)
		g->cls[i].dn.weight = weight;
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_group_set_weight);

/* No entity is scheduled in @g: the caller may free it. */
bool rs_sched_group_idle(const struct rs_sched_group *g)
{
	return !g->users;
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_group_idle);

void rs_sched_entity_init(struct rs_sched_entity *e, struct rs_sched_group *g,
			  u32 weight, u8 band)
{
	rs_drr_node_init(&e->dn, weight);
	rs_sched_group_init(&e->own, weight);
	e->group = g;
	e->cur = NULL;
	e->band = band < RS_SCHED_BANDS ? band : RS_BAND_NORMAL;
	e->queued = false;
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_entity_init);

/* Takes effect at the entity's next quantum. */
void rs_sched_entity_set_weight(struct rs_sched_entity *e, u32 weight)
{
	e->dn.weight = weight;
	rs_sched_group_set_weight(&e->own, weight);
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_entity_set_weight);

/*
 * @e moves to @band.  An active entity leaves its band with its accounting
 * and joins the new one as a new entity.
 */
void rs_sched_entity_set_band(struct rs_sched *s, struct rs_sched_entity *e, u8 band)
{
	bool queued = e->queued;

	if (band >= RS_SCHED_BANDS || band == e->band)
		return;
	rs_sched_dequeue(s, e);
	e->band = band;
	if (queued)
		rs_sched_enqueue(s, e);
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_entity_set_band);

/* @e can send: it joins its class, the class its band, the band the turns. */
void rs_sched_enqueue(struct rs_sched *s, struct rs_sched_entity *e)
{
	struct rs_sched_band *b = &s->band[e->band];
	struct rs_sched_class *c;

	if (e->queued)
		return;
	if (!e->cur) {
		e->cur = s->flat || !e->group ? &e->own : e->group;
		e->cur->users++;
	}
	c = &e->cur->cls[e->band];
	rs_drr_activate(s, &c->ents, &e->dn);
	e->queued = true;
	s->nr_active++;
	if (c->nr++)
		return;
	rs_drr_activate(s, &b->groups, &c->dn);
	c->active_weight = c->dn.weight;
	b->wsum += c->active_weight;
	if (b->nr++ || e->band == RS_BAND_LATENCY)
		return;
	/* A weighted band joins the turns with a fresh quantum. */
	b->dn.deficit = rs_drr_quantum(s, &b->dn);
	list_add_tail(&b->dn.node, &s->wbands);
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_enqueue);

/* @e leaves the active lists; with @keep it keeps its deficits. */
static void rs_sched_leave(struct rs_sched *s, struct rs_sched_entity *e, bool keep)
{
	struct rs_sched_band *b = &s->band[e->band];
	struct rs_sched_class *c = &e->cur->cls[e->band];

	rs_drr_deactivate(&e->dn, keep);
	e->queued = false;
	s->nr_active--;
	if (--c->nr)
		return;
	rs_drr_deactivate(&c->dn, keep);
	b->wsum -= c->active_weight;
	if (--b->nr || e->band == RS_BAND_LATENCY)
		return;
	list_del_init(&b->dn.node);
}

/* @e has data but no credit: out of the turns, its deficits kept. */
void rs_sched_block(struct rs_sched *s, struct rs_sched_entity *e)
{
	if (e->queued)
		rs_sched_leave(s, e, true);
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_block);

/* @e has nothing to send, or goes away: out, and nothing kept. */
void rs_sched_dequeue(struct rs_sched *s, struct rs_sched_entity *e)
{
	if (e->queued)
		rs_sched_leave(s, e, false);
	e->dn.kept = false;
	if (e->cur) {
		struct rs_sched_class *c = &e->cur->cls[e->band];

		/* The class forgets a deficit kept for this entity. */
		if (!c->nr)
			c->dn.kept = false;
		e->cur->users--;
		e->cur = NULL;
	}
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_dequeue);

/*
 * The band to serve: the latency band while it has deficit, or when nothing
 * else waits; otherwise the weighted bands in turn, and each turn that ends
 * gives the latency band its quantum back (never more than one quantum).
 */
static struct rs_sched_band *rs_sched_pick_band(struct rs_sched *s)
{
	struct rs_sched_band *lat = &s->band[RS_BAND_LATENCY], *b;

	if (lat->nr) {
		if (s->latency_deficit > 0)
			return lat;
		if (list_empty(&s->wbands)) {
			s->latency_deficit += s->latency_quantum;
			if (s->latency_deficit <= 0)
				s->latency_deficit = s->latency_quantum;
			return lat;
		}
	}
	for (;;) {
		b = list_first_entry_or_null(&s->wbands, struct rs_sched_band, dn.node);
		if (!b || b->dn.deficit > 0)
			return b;
		/* Positive again, so that it sends before the next turn ends. */
		do {
			b->dn.deficit += rs_drr_quantum(s, &b->dn);
		} while (b->dn.deficit <= 0);
		list_move_tail(&b->dn.node, &s->wbands);
		s->latency_deficit = min_t(s64, s->latency_deficit + s->latency_quantum,
					   s->latency_quantum);
		if (lat->nr && s->latency_deficit > 0)
			return lat;
	}
}

/* The entity whose turn it is, still queued; NULL when none is active. */
struct rs_sched_entity *rs_sched_next(struct rs_sched *s)
{
	struct rs_sched_band *b;
	struct rs_sched_class *c;
	struct rs_drr_node *n;

	if (!s->nr_active)
		return NULL;
	b = rs_sched_pick_band(s);
	if (WARN_ON_ONCE(!b))
		return NULL;
	n = rs_drr_pick(s, &b->groups);
	if (WARN_ON_ONCE(!n))
		return NULL;
	c = container_of(n, struct rs_sched_class, dn);
	n = rs_drr_pick(s, &c->ents);
	if (WARN_ON_ONCE(!n))
		return NULL;
	return container_of(n, struct rs_sched_entity, dn);
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_next);

/*
 * The sender sent @bytes (header included) for @e, which rs_sched_next()
 * returned; @after says whether @e can send again.
 */
void rs_sched_charge(struct rs_sched *s, struct rs_sched_entity *e, u32 bytes,
		     enum rs_sched_after after)
{
	s->served += bytes;
	if (e->queued) {
		e->dn.deficit -= bytes;
		e->cur->cls[e->band].dn.deficit -= bytes;
		if (e->band == RS_BAND_LATENCY)
			s->latency_deficit -= bytes;
		else
			s->band[e->band].dn.deficit -= bytes;
	}
	if (after == RS_SCHED_BLOCKED)
		rs_sched_block(s, e);
	else if (after == RS_SCHED_EMPTY)
		rs_sched_dequeue(s, e);
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_charge);
