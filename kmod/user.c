// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: what each local user holds, all files together, against the
 * per-user limits in sysfs (max_acs_per_user, max_listeners_per_user), so
 * that one user cannot take every port or fill the kernel with ACs.  A file
 * counts against the user who opened it, as io_uring charges the creator of
 * a ring.  An entry lives while a file of its user does.
 */
#include <linux/cred.h>
#include <linux/overflow.h>
#include <linux/refcount.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>

#include "rdmashare.h"

/**
 * struct rs_user - one local user's holdings
 * @ref: one per open file of the user
 * @uid: who
 * @nr_acs: ACs of every kind, in every state, until freed
 * @nr_listeners: ports held by LISTENs
 */
struct rs_user {
	refcount_t ref;
	kuid_t uid;
	atomic_t nr_acs;
	atomic_t nr_listeners;
};

/* Users by uid; changes under rs_users_lock. */
static DEFINE_XARRAY(rs_users);
static DEFINE_MUTEX(rs_users_lock);

/* @uid's entry, created if needed, with a reference; NULL without memory. */
struct rs_user *rs_user_get(kuid_t uid)
{
	struct rs_user *u;

	mutex_lock(&rs_users_lock);
	u = xa_load(&rs_users, __kuid_val(uid));
	if (u) {
		refcount_inc(&u->ref);
		goto out_unlock;
	}
	u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);
	if (!u)
		goto out_unlock;
	refcount_set(&u->ref, 1);
	u->uid = uid;
	if (xa_err(xa_store(&rs_users, __kuid_val(uid), u, GFP_KERNEL_ACCOUNT))) {
		kfree(u);
		u = NULL;
	}
out_unlock:
	mutex_unlock(&rs_users_lock);
	return u;
}

void rs_user_put(struct rs_user *u)
{
	if (!refcount_dec_and_mutex_lock(&u->ref, &rs_users_lock))
		return;
	xa_erase(&rs_users, __kuid_val(u->uid));
	mutex_unlock(&rs_users_lock);
	WARN_ON(atomic_read(&u->nr_acs) || atomic_read(&u->nr_listeners));
	kfree(u);
}

/* One more in @n unless it reached @limit (which may have been lowered). */
static bool rs_user_charge(atomic_t *n, unsigned int limit)
{
	int cur = atomic_read(n);

	do {
		if (cur >= limit)
			return false;
	} while (!atomic_try_cmpxchg(n, &cur, cur + 1));
	return true;
}

bool rs_user_charge_ac(struct rs_user *u)
{
	return rs_user_charge(&u->nr_acs, READ_ONCE(rs_max_acs_per_user));
}

void rs_user_uncharge_ac(struct rs_user *u)
{
	atomic_dec(&u->nr_acs);
}

bool rs_user_charge_listener(struct rs_user *u)
{
	return rs_user_charge(&u->nr_listeners, READ_ONCE(rs_max_listeners_per_user));
}

void rs_user_uncharge_listener(struct rs_user *u)
{
	atomic_dec(&u->nr_listeners);
}

/**
 * rs_user_lock_mem() - charge pages that stay resident to a user
 * @user: who makes the kernel keep them
 * @pages: how many
 *
 * Against RLIMIT_MEMLOCK in @user's locked_vm, as io_uring charges its
 * rings and registered buffers, unless the caller has CAP_IPC_LOCK.
 *
 * Return: the pages charged, to give back with rs_user_unlock_mem() (0
 * with CAP_IPC_LOCK), or -ENOMEM past the limit.
 */
long rs_user_lock_mem(struct user_struct *user, unsigned long pages)
{
	unsigned long limit, cur, new;

	if (capable(CAP_IPC_LOCK))
		return 0;
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	cur = atomic_long_read(&user->locked_vm);
	do {
		if (check_add_overflow(cur, pages, &new) || new > limit)
			return -ENOMEM;
	} while (!atomic_long_try_cmpxchg(&user->locked_vm, &cur, new));
	return pages;
}

void rs_user_unlock_mem(struct user_struct *user, unsigned long pages)
{
	atomic_long_sub(pages, &user->locked_vm);
}

/* The uid as the initial user namespace sees it, for root's listings. */
u32 rs_user_uid(const struct rs_user *u)
{
	return from_kuid_munged(&init_user_ns, u->uid);
}
