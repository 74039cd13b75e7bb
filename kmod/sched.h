/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: the scheduler interface between a shared QP's sender and the
 * ACs that have data to send on it.
 *
 * The sender asks for the next AC to serve and reports what it sent; the
 * scheduler decides the order.  This is round robin, one chunk per turn; the
 * weighted fair queue replaces it behind the same calls.  No ib_core and no
 * locking of its own: the caller holds the QP's lock around every call.
 */
#ifndef _RDMASHARE_SCHED_H
#define _RDMASHARE_SCHED_H

#include <linux/list.h>
#include <linux/types.h>

struct rs_sched {
	struct list_head active;	/* rs_sched_entity.node, in turn order */
	unsigned int nr_active;
};

struct rs_sched_entity {
	struct list_head node;		/* in rs_sched.active while queued */
	bool queued;
};

void rs_sched_init(struct rs_sched *s);
void rs_sched_entity_init(struct rs_sched_entity *e);
void rs_sched_enqueue(struct rs_sched *s, struct rs_sched_entity *e);
void rs_sched_dequeue(struct rs_sched *s, struct rs_sched_entity *e);
struct rs_sched_entity *rs_sched_next(struct rs_sched *s);
void rs_sched_charge(struct rs_sched *s, struct rs_sched_entity *e, u32 bytes,
		     bool more);

#endif /* _RDMASHARE_SCHED_H */
