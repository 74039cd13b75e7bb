// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: round-robin scheduling of the ACs sharing a QP (see sched.h).
 */
#include <kunit/visibility.h>
#include <linux/module.h>

#include "sched.h"

void rs_sched_init(struct rs_sched *s)
{
	INIT_LIST_HEAD(&s->active);
	s->nr_active = 0;
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_init);

void rs_sched_entity_init(struct rs_sched_entity *e)
{
	INIT_LIST_HEAD(&e->node);
	e->queued = false;
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_entity_init);

/* @e has something to send; queuing twice is harmless. */
void rs_sched_enqueue(struct rs_sched *s, struct rs_sched_entity *e)
{
	if (e->queued)
		return;
	list_add_tail(&e->node, &s->active);
	e->queued = true;
	s->nr_active++;
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_enqueue);

/* @e has nothing to send, or cannot send (no credits), or is going away. */
void rs_sched_dequeue(struct rs_sched *s, struct rs_sched_entity *e)
{
	if (!e->queued)
		return;
	list_del_init(&e->node);
	e->queued = false;
	s->nr_active--;
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_dequeue);

/* The entity whose turn it is, still queued; NULL when none is active. */
struct rs_sched_entity *rs_sched_next(struct rs_sched *s)
{
	return list_first_entry_or_null(&s->active, struct rs_sched_entity, node);
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_next);

/*
 * The sender sent @bytes for @e, the entity rs_sched_next() returned.  With
 * @more, @e can send again and goes to the back of the line; without, it
 * leaves the active list.
 */
void rs_sched_charge(struct rs_sched *s, struct rs_sched_entity *e, u32 bytes,
		     bool more)
{
	rs_sched_dequeue(s, e);
	if (more)
		rs_sched_enqueue(s, e);
}
EXPORT_SYMBOL_IF_KUNIT(rs_sched_charge);
