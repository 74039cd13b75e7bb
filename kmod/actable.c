// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: tables of AC ids (see actable.h).
 */
#include <kunit/visibility.h>
#include <linux/module.h>

#include "actable.h"

void rs_actable_init(struct rs_actable *t, bool cyclic)
{
	xa_init_flags(&t->xa, XA_FLAGS_ALLOC1);
	t->nr = 0;
	t->next = 0;
	t->cyclic = cyclic;
}
EXPORT_SYMBOL_IF_KUNIT(rs_actable_init);

void rs_actable_destroy(struct rs_actable *t)
{
	WARN_ON(!xa_empty(&t->xa));
	xa_destroy(&t->xa);
}
EXPORT_SYMBOL_IF_KUNIT(rs_actable_destroy);

/*
 * An id for @entry in *@id: -EMFILE when the table holds @limit entries
 * (exact when the caller serialises additions), -EBUSY when no id is free,
 * -ENOMEM.
 */
int rs_actable_add(struct rs_actable *t, void *entry, u32 *id, u32 limit, gfp_t gfp)
{
	int ret;

	xa_lock(&t->xa);
	if (t->nr >= limit) {
		ret = -EMFILE;
	} else {
		if (t->cyclic)
			ret = __xa_alloc_cyclic(&t->xa, id, entry, xa_limit_32b, &t->next, gfp);
		else
			ret = __xa_alloc(&t->xa, id, entry, xa_limit_31b, gfp);
		if (ret >= 0) {
			t->nr++;
			ret = 0;
		}
	}
	xa_unlock(&t->xa);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(rs_actable_add);

/*
 * Remove @id if it is @entry's; true if it was.  Anything else (id 0, a
 * free id, another entry's) changes nothing: an AC that never got an id has
 * id 0, and must not take another AC's (or id 0's reservation) with it.
 */
bool rs_actable_del(struct rs_actable *t, u32 id, void *entry)
{
	bool found = false;

	if (!id || !entry)
		return false;
	xa_lock(&t->xa);
	if (__xa_cmpxchg(&t->xa, id, entry, NULL, 0) == entry) {
		t->nr--;
		found = true;
	}
	xa_unlock(&t->xa);
	return found;
}
EXPORT_SYMBOL_IF_KUNIT(rs_actable_del);

/*
 * The entry at @id, if @get (called under the table's lock, e.g. to take a
 * reference, and to check that the entry may be used) agrees; else NULL.
 */
void *rs_actable_get(struct rs_actable *t, u32 id, bool (*get)(void *entry, void *arg),
		     void *arg)
{
	void *entry;

	xa_lock(&t->xa);
	entry = xa_load(&t->xa, id);
	if (entry && !get(entry, arg))
		entry = NULL;
	xa_unlock(&t->xa);
	return entry;
}
EXPORT_SYMBOL_IF_KUNIT(rs_actable_get);

/*
 * The first entry at an id >= *@id that @get agrees to (it is called under
 * the table's lock, so an entry it takes a reference to cannot go in the
 * meantime), with *@id set to its id; NULL when there is none.  Entries may
 * come and go during a walk: each is seen at most once.
 */
void *rs_actable_next(struct rs_actable *t, u32 *id, bool (*get)(void *entry, void *arg),
		      void *arg)
{
	unsigned long index = *id;
	void *entry;

	xa_lock(&t->xa);
	for (;;) {
		entry = xa_find(&t->xa, &index, U32_MAX, XA_PRESENT);
		if (!entry || get(entry, arg))
			break;
		if (index == U32_MAX) {
			entry = NULL;
			break;
		}
		index++;
	}
	xa_unlock(&t->xa);
	*id = index;
	return entry;
}
EXPORT_SYMBOL_IF_KUNIT(rs_actable_next);

u32 rs_actable_count(struct rs_actable *t)
{
	return READ_ONCE(t->nr);
}
EXPORT_SYMBOL_IF_KUNIT(rs_actable_count);
