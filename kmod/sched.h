/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: the scheduler between a shared QP's sender and the ACs that
 * have data to send on it.  Documentation/scheduler.rst has the algorithm.
 *
 * Three levels, each a deficit round robin with DRR++ new/old lists (as in
 * sch_fq_codel) so that an entity that just became active goes first for
 * one quantum:
 *
 *   band    RS_BAND_LATENCY is served first, but at most latency_quantum
 *           bytes per turn of the weighted bands, which share the rest by
 *           their fixed band weights (sch_fq style)
 *   group   an application (an open file) in a band, by its weight; or,
 *           in flat mode, every entity is a group of its own
 *   entity  an AC, by its weight
 *
 * Every chunk costs O(1): one pick, one charge.  An entity that cannot send
 * for want of credits leaves with rs_sched_charge(..., RS_SCHED_BLOCKED) or
 * rs_sched_block() and keeps its deficit; when it comes back it joins the
 * old list, without the new-entity boost.
 *
 * No ib_core and no locking of its own: the caller holds the QP's lock
 * around every call.  Groups are the caller's: it initialises one per
 * application and QP, points entities at it, and frees it once no entity
 * uses it (rs_sched_group_idle()).
 */
#ifndef _RDMASHARE_SCHED_H
#define _RDMASHARE_SCHED_H

#include <linux/list.h>
#include <linux/types.h>

enum rs_sched_band_id {
	RS_BAND_LATENCY,
	RS_BAND_NORMAL,
	RS_BAND_BULK,
	RS_SCHED_BANDS
};

#define RS_SCHED_WEIGHT_MIN	1
#define RS_SCHED_WEIGHT_MAX	1000
#define RS_SCHED_WEIGHT_DEFAULT	1

/* Weights of the weighted bands, as sch_fq's 3:1 between its lower bands. */
#define RS_BAND_NORMAL_WEIGHT	3
#define RS_BAND_BULK_WEIGHT	1

/* Bytes per unit of weight and per turn: at least the largest chunk. */
#define RS_SCHED_QUANTUM_MIN	256
#define RS_SCHED_QUANTUM_MAX	(16U << 20)

/* Where an rs_drr_node is. */
enum {
	RS_DRR_IDLE,
	RS_DRR_NEW,
	RS_DRR_OLD,
};

/* A DRR++ list: nodes that just became active (new) go before the others. */
struct rs_drr {
	struct list_head new_list;
	struct list_head old_list;
};

struct rs_drr_node {
	struct list_head node;
	s64 deficit;
	u32 weight;
	u8 where;		/* RS_DRR_* */
	bool kept;		/* left blocked: deficit kept, comes back old */
};

/* A group's part in one band: its active entities there. */
struct rs_sched_class {
	struct rs_drr_node dn;		/* in the band's group list */
	struct rs_drr ents;
	unsigned int nr;		/* active entities */
	u32 active_weight;		/* its weight in rs_sched_band.wsum */
};

struct rs_sched_group {
	struct rs_sched_class cls[RS_SCHED_BANDS];
	unsigned int users;		/* entities pointing here (cur) */
};

struct rs_sched_entity {
	struct rs_drr_node dn;		/* in its class's entity list */
	struct rs_sched_group *group;	/* its application's, set by the caller */
	struct rs_sched_group *cur;	/* the group it is scheduled in, or NULL */
	struct rs_sched_group own;	/* its group in flat mode */
	u8 band;
	bool queued;
};

struct rs_sched_band {
	struct rs_drr_node dn;		/* weighted bands: in rs_sched.wbands */
	struct rs_drr groups;
	unsigned int nr;		/* active classes */
	u64 wsum;			/* their weights, as they became active */
};

/**
 * struct rs_sched - the scheduler of one shared QP
 * @band: the bands
 * @wbands: active weighted bands, in turn order
 * @latency_deficit: what the latency band may still send this turn
 * @quantum: bytes per turn per unit of weight
 * @latency_quantum: the latency band's bytes per turn of a weighted band
 * @flat: new activations schedule every entity as its own group
 * @nr_active: active entities
 * @served: bytes charged, ever (the peer's gate, gate.h, reads it)
 */
struct rs_sched {
	struct rs_sched_band band[RS_SCHED_BANDS];
	struct list_head wbands;
	s64 latency_deficit;
	u32 quantum;
	u32 latency_quantum;
	bool flat;
	unsigned int nr_active;
	u64 served;
};

/* What rs_sched_charge() is told of the entity after its chunk. */
enum rs_sched_after {
	RS_SCHED_MORE,		/* can send again */
	RS_SCHED_EMPTY,		/* nothing left to send */
	RS_SCHED_BLOCKED,	/* data left, no credit */
};

void rs_sched_init(struct rs_sched *s, u32 quantum, u32 latency_quantum, bool flat);
void rs_sched_set_params(struct rs_sched *s, u32 quantum, u32 latency_quantum, bool flat);
void rs_sched_group_init(struct rs_sched_group *g, u32 weight);
void rs_sched_group_set_weight(struct rs_sched_group *g, u32 weight);
bool rs_sched_group_idle(const struct rs_sched_group *g);
void rs_sched_entity_init(struct rs_sched_entity *e, struct rs_sched_group *g,
			  u32 weight, u8 band);
void rs_sched_entity_set_weight(struct rs_sched_entity *e, u32 weight);
void rs_sched_entity_set_band(struct rs_sched *s, struct rs_sched_entity *e, u8 band);
void rs_sched_enqueue(struct rs_sched *s, struct rs_sched_entity *e);
void rs_sched_block(struct rs_sched *s, struct rs_sched_entity *e);
void rs_sched_dequeue(struct rs_sched *s, struct rs_sched_entity *e);
struct rs_sched_entity *rs_sched_next(struct rs_sched *s);
void rs_sched_charge(struct rs_sched *s, struct rs_sched_entity *e, u32 bytes,
		     enum rs_sched_after after);

#endif /* _RDMASHARE_SCHED_H */
