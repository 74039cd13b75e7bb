/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: what ac.c (an AC's objects, ids, completions and close) shares
 * with the other files of an AC's life: listen.c (LISTEN, the peer's
 * CONNECT, ACCEPT), connect.c (CONNECT and the peer's answer) and acset.c
 * (AC_SET and AC_STATS).
 */
#ifndef _RDMASHARE_AC_H
#define _RDMASHARE_AC_H

#include "transport.h"

/* The file's rings are set up: it may have ACs. */
static inline bool rs_file_ready(struct rs_file *rf)
{
	/* Pairs with rs_rings_setup(). */
	return smp_load_acquire(&rf->ready);
}

/* ac.c */
struct rs_ac *rs_ac_alloc(struct rs_file *rf, enum rs_ac_state state);
int rs_ac_add_to_file(struct rs_file *rf, struct rs_ac *ac);
int rs_ac_add_conn(struct rs_ac *ac);
void rs_ac_discard(struct rs_ac *ac);
bool rs_ac_get_any(void *entry, void *arg);
void rs_ac_post_closed(struct rs_ac *ac, int res, u16 flags, bool free_id);
bool rs_ac_take_cqe(struct rs_ac *ac);
void rs_ac_abort(struct rs_ac *ac);
void rs_ac_unquarantine(struct rs_ac *ac);

/* listen.c */
void rs_ac_close_listener(struct rs_ac *l);

#endif /* _RDMASHARE_AC_H */
