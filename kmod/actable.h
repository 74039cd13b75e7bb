/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: tables of AC ids.  A file numbers its ACs from 1, reusing the
 * smallest free id (what user space sees); the host numbers every AC end
 * cyclically for the wire, so that a stale message cannot reach a new AC
 * that reused an id at once.  Id 0 is never handed out.  No ib_core: KUnit
 * tests it (kmod/tests/actable_kunit.c).
 */
#ifndef _RDMASHARE_ACTABLE_H
#define _RDMASHARE_ACTABLE_H

#include <linux/types.h>
#include <linux/xarray.h>

/**
 * struct rs_actable - AC ids
 * @xa: id -> entry, under its own lock
 * @nr: entries in @xa
 * @next: the next id to try, when @cyclic
 * @cyclic: ids go round (wire ids) instead of smallest first (file ids)
 */
struct rs_actable {
	struct xarray xa;
	u32 nr;
	u32 next;
	bool cyclic;
};

#define RS_ACTABLE_INIT(name, _cyclic) {				\
	.xa = XARRAY_INIT((name).xa, XA_FLAGS_ALLOC1),			\
	.cyclic = (_cyclic),						\
}

void rs_actable_init(struct rs_actable *t, bool cyclic);
void rs_actable_destroy(struct rs_actable *t);
int rs_actable_add(struct rs_actable *t, void *entry, u32 *id, u32 limit, gfp_t gfp);
bool rs_actable_del(struct rs_actable *t, u32 id, void *entry);
void *rs_actable_get(struct rs_actable *t, u32 id, bool (*get)(void *entry, void *arg),
		     void *arg);
void *rs_actable_next(struct rs_actable *t, u32 *id, bool (*get)(void *entry, void *arg),
		      void *arg);
u32 rs_actable_count(struct rs_actable *t);

#endif /* _RDMASHARE_ACTABLE_H */
