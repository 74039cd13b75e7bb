/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: ring index arithmetic.
 *
 * The submission and completion rings shared with user space use
 * free-running 32-bit indices, as io_uring does: the producer advances the
 * tail, the consumer the head, both wrap at 2^32 and a slot is index & mask.
 * The ring holds "entries" slots, a power of two, so tail - head (mod 2^32)
 * is the number of filled slots and must never exceed "entries".  Indices
 * written by user space are untrusted: a tail moved past the ring, or a head
 * moved past the tail, must be detected, never acted upon.
 *
 * Pure arithmetic, no ib_core: tests/ring_kunit.c drives it directly.
 */
#ifndef _RDMASHARE_RING_H
#define _RDMASHARE_RING_H

#include <linux/errno.h>
#include <linux/log2.h>
#include <linux/types.h>

/* Upper bound of any ring's size, so that slot counts fit in an int. */
#define RS_RING_ENTRIES_MAX	0x10000u

/*
 * Is @entries a valid ring size: a power of two in [@min, @max], and at most
 * RS_RING_ENTRIES_MAX?  Every other helper here assumes a valid size.
 */
static inline bool rs_ring_entries_valid(u32 entries, u32 min, u32 max)
{
	return entries >= min && entries <= max &&
	       entries <= RS_RING_ENTRIES_MAX && is_power_of_2(entries);
}

/* Slots in use between @head and @tail; meaningful only if valid. */
static inline u32 rs_ring_used(u32 head, u32 tail)
{
	return tail - head;
}

/* The slot of free-running index @idx in a ring of @entries (power of 2). */
static inline u32 rs_ring_slot(u32 idx, u32 entries)
{
	return idx & (entries - 1);
}

/*
 * Consumer side (the kernel reading the SQ): how many entries may be taken
 * from @head, given the tail @tail published by user space?  At most @max.
 * Returns -EINVAL when @tail is more than @entries ahead of @head, which only
 * a buggy or hostile producer can do.
 */
static inline int rs_ring_to_consume(u32 head, u32 tail, u32 entries, u32 max)
{
	u32 used = rs_ring_used(head, tail);

	if (used > entries)
		return -EINVAL;
	return used < max ? used : max;
}

/*
 * Producer side (the kernel filling the CQ): how many free slots are there,
 * given our private @tail and the head @head published by user space?
 * Returns -EINVAL when @head is ahead of @tail or more than @entries behind
 * it: the consumer moved its head to where it cannot be.
 */
static inline int rs_ring_free(u32 head, u32 tail, u32 entries)
{
	u32 used = rs_ring_used(head, tail);

	if (used > entries)
		return -EINVAL;
	return entries - used;
}

/*
 * CQ room.  Of a CQ of @cq_entries, @rx_slots entries are kept for RECV
 * completions; the rest, the room, is reserved before work is taken on.
 * Some reservations are held for as long as the peer likes: a SEND's,
 * CLOSE's or SHUTDOWN's queued behind credits.  They get at most a share of
 * the room, so that completions that do not wait (NOP, RELEASE, errors)
 * always find some: an application that reaps its CQ can always RELEASE,
 * and so return the credits that its peer's stalled SENDs wait for.  (An
 * AC's CLOSED completion reserves nothing: it waits in the kernel when
 * there is no room, see rs_cq_post_over().)
 *
 * struct rs_cq_limits - what a CQ's room is split into
 * @room: entries beyond the RECV ones
 * @waiting: operations waiting on the peer at once
 *
 * What they may not take, @room - @waiting, is at least 1.
 */
struct rs_cq_limits {
	u32 room;
	u32 waiting;
};

/* The smallest room: a waiting operation, and room for the others. */
#define RS_CQ_ROOM_MIN	4u

/* Split a CQ's room; -EINVAL if it is below RS_CQ_ROOM_MIN. */
static inline int rs_cq_limits(u32 cq_entries, u32 rx_slots, struct rs_cq_limits *l)
{
	u32 spare;

	if (cq_entries < rx_slots || cq_entries - rx_slots < RS_CQ_ROOM_MIN)
		return -EINVAL;
	l->room = cq_entries - rx_slots;
	spare = l->room / 16 ?: 1;
	l->waiting = l->room - spare;
	return 0;
}

#endif /* _RDMASHARE_RING_H */
