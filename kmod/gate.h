/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: the gate between the QPs to one peer.  Documentation/
 * scheduler.rst has the algorithm.
 *
 * Each QP has a scheduler of its own (sched.h), and the device serves the
 * QPs to a peer in turn (rxe runs each QP in its own work item; a NIC
 * arbitrates between send queues): on their own, the QPs would get equal
 * parts of the link, whatever the weights of their ACs.  The gate makes a
 * QP's part the one its active groups have in the peer: each QP with data
 * to send is a member, with a virtual time that grows by the bytes it
 * sends over its share; a QP takes a chunk only while its virtual time is
 * at most one normal band's turn, or what it keeps in flight if more (in
 * its own bytes), past the least of the other members', and a member that
 * falls behind releases those it held.
 *
 * A QP's share is what one scheduler over the peer would give its active
 * classes: the bands' parts as rs_sched_next() serves them (normal and bulk
 * 3:1 by sched_quantum, the latency band latency_quantum per turn of a
 * weighted band), each band's part split by the weights of the classes
 * active in it.  Exact when each group (application) is on one QP, as
 * placement keeps it (qp.c); a group spread over several counts in full
 * on each.
 *
 * No locking of its own: the caller holds the peer's gate lock around
 * every call.
 */
#ifndef _RDMASHARE_GATE_H
#define _RDMASHARE_GATE_H

#include <linux/bits.h>
#include <linux/list.h>
#include <linux/types.h>

#include "sched.h"

/* A share of 1, the whole peer, in fixed point. */
#define RS_GATE_ONE	BIT(16)

/**
 * struct rs_gate - the QPs to one peer that have data to send
 * @members: rs_gate_member.node, in the order they joined
 * @wsum: the members' active class weights per band, summed
 * @nr_held: members held (rs_gate_member.held)
 * @slack: bytes of its own a QP may run ahead at least (the caller's:
 *	what a QP keeps in flight, so that its pipeline stays full while
 *	the others catch up)
 */
struct rs_gate {
	struct list_head members;
	u64 wsum[RS_SCHED_BANDS];
	unsigned int nr_held;
	u32 slack;
};

/**
 * struct rs_gate_member - a QP in its peer's gate
 * @node: in rs_gate.members while @in
 * @vtime: bytes sent over the share they were sent at (bytes at a share
 *	of 1); compared as a difference, so it may wrap
 * @served: the scheduler's rs_sched.served at the last update
 * @wsum: the scheduler's rs_sched_band.wsum at the last update
 * @in: the QP has data to send: a member
 * @held: refused a chunk; released (and kicked) once it may go
 */
struct rs_gate_member {
	struct list_head node;
	u64 vtime;
	u64 served;
	u64 wsum[RS_SCHED_BANDS];
	bool in;
	bool held;
};

void rs_gate_init(struct rs_gate *g);
void rs_gate_member_init(struct rs_gate_member *m);
u32 rs_gate_share(const struct rs_gate *g, const struct rs_gate_member *m,
		  const struct rs_sched *s);
void rs_gate_update(struct rs_gate *g, struct rs_gate_member *m, const struct rs_sched *s);
void rs_gate_leave(struct rs_gate *g, struct rs_gate_member *m);
bool rs_gate_open(struct rs_gate *g, struct rs_gate_member *m, const struct rs_sched *s);
struct rs_gate_member *rs_gate_released(struct rs_gate *g, const struct rs_sched *s);

#endif /* _RDMASHARE_GATE_H */
