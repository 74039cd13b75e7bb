// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: an AC's settings and statistics (RDMASHARE_IOC_AC_SET and
 * RDMASHARE_IOC_AC_STATS), for a file's ACs and AC files' alike.  A pinned
 * AC's scheduler entity changes under its QP's lock; an AC without a QP
 * keeps what it is given until it gets one.
 */
#include <linux/capability.h>
#include <linux/string.h>

#include "ac.h"
#include "actable.h"
#include "transport.h"

/* The application's weight, on every QP where it has ACs and later ones. */
static void rs_file_set_weight(struct rs_file *rf, u32 weight)
{
	struct rs_ac *ac;
	u32 fid;

	mutex_lock(&rf->ac_lock);
	rf->sched_weight = weight;
	mutex_unlock(&rf->ac_lock);
	for (fid = 1; (ac = rs_actable_next(&rf->acs, &fid, rs_ac_get_any, NULL)); fid++) {
		if (ac->qp) {
			spin_lock_irq(&ac->qp->lock);
			if (ac->group)
				rs_sched_group_set_weight(&ac->group->g, weight);
			spin_unlock_irq(&ac->qp->lock);
		}
		rs_ac_put(ac);
	}
}

/* @s: the scheduler of the AC's QP (its lock held), or NULL before it has one. */
static void rs_ac_set_sched(struct rs_ac *ac, struct rs_sched *s,
			    const struct rdmashare_ac_set *a)
{
	if (a->flags & RDMASHARE_AC_SET_WEIGHT)
		rs_sched_entity_set_weight(&ac->se, a->weight);
	if (!(a->flags & RDMASHARE_AC_SET_BAND))
		return;
	if (s)
		rs_sched_entity_set_band(s, &ac->se, a->band);
	else
		WRITE_ONCE(ac->se.band, a->band);
}

/* RDMASHARE_IOC_AC_SET's checks, for a file's AC or an AC file's. */
int rs_ac_set_check(const struct rdmashare_ac_set *a)
{
	const u32 known = RDMASHARE_AC_SET_WEIGHT | RDMASHARE_AC_SET_BAND;

	if (!a->flags || (a->flags & ~known) || a->resv)
		return -EINVAL;
	if ((a->flags & RDMASHARE_AC_SET_WEIGHT) &&
	    (a->weight < RS_SCHED_WEIGHT_MIN || a->weight > RS_SCHED_WEIGHT_MAX))
		return -EINVAL;
	if (a->flags & RDMASHARE_AC_SET_BAND) {
		if (a->band >= RS_SCHED_BANDS || a->ac == RDMASHARE_AC_FILE)
			return -EINVAL;
		if (a->band == RS_BAND_LATENCY && !capable(CAP_NET_ADMIN))
			return -EPERM;
	}
	return 0;
}

/* RDMASHARE_IOC_AC_SET's change, checked, to @ac. */
void rs_ac_set_one(struct rs_ac *ac, const struct rdmashare_ac_set *a)
{
	struct rs_qp *qp;

	/* Pinned ACs change under the QP's lock; the others have no QP yet. */
	qp = READ_ONCE(ac->qp);
	if (qp) {
		spin_lock_irq(&qp->lock);
		rs_ac_set_sched(ac, &qp->sched, a);
		spin_unlock_irq(&qp->lock);
	} else {
		rs_ac_set_sched(ac, NULL, a);
	}
}

int rs_ac_set(struct rs_file *rf, struct rdmashare_ac_set *a)
{
	struct rs_ac *ac;
	int ret;

	ret = rs_ac_set_check(a);
	if (ret)
		return ret;
	if (a->ac == RDMASHARE_AC_FILE) {
		rs_file_set_weight(rf, a->weight);
		return 0;
	}

	ac = rs_ac_lookup_user(rf, a->ac);
	if (!ac)
		return -ENOENT;
	rs_ac_set_one(ac, a);
	rs_ac_put(ac);
	return 0;
}

/* RDMASHARE_IOC_AC_STATS: a snapshot, each side under its own lock. */
int rs_ac_stats(struct rs_file *rf, struct rdmashare_ac_stats *st)
{
	struct rs_ac *ac;
	int ret;

	ret = rs_ac_stats_check(st);
	if (ret)
		return ret;
	ac = rs_ac_lookup_user(rf, st->ac);
	if (!ac)
		return -ENOENT;
	rs_ac_stats_one(ac, st);
	rs_ac_put(ac);
	return 0;
}

/* Reserved fields may carry input one day: zero now. */
int rs_ac_stats_check(const struct rdmashare_ac_stats *st)
{
	if (st->flags || st->resv0 || st->resv1 || memchr_inv(st->resv, 0, sizeof(st->resv)))
		return -EINVAL;
	return 0;
}

/* The snapshot of @ac into @st, which gets its id in its file. */
void rs_ac_stats_one(struct rs_ac *ac, struct rdmashare_ac_stats *st)
{
	struct rs_file *rf = ac->rf;
	u32 size = st->size;
	struct rs_qp *qp;

	memset(st, 0, sizeof(*st));
	st->size = size;
	st->ac = ac->fid;
	switch (READ_ONCE(ac->state)) {
	case RS_AC_LISTEN:
		st->state = RDMASHARE_AC_STATE_LISTEN;
		break;
	case RS_AC_OPEN:
		st->state = RDMASHARE_AC_STATE_OPEN;
		break;
	default:
		st->state = RDMASHARE_AC_STATE_CLOSED;
		break;
	}
	st->port = ac->port;
	qp = READ_ONCE(ac->qp);
	if (qp) {
		spin_lock_irq(&qp->lock);
		st->weight = ac->se.dn.weight;
		st->band = ac->se.band;
		st->qp_num = qp->qp_num;
		st->status = (ac->shut_queued ? RDMASHARE_AC_SHUT : 0) |
			     (READ_ONCE(ac->peer_shut) ? RDMASHARE_AC_PEER_SHUT : 0) |
			     (READ_ONCE(ac->peer_closed) ? RDMASHARE_AC_PEER_CLOSED : 0);
		st->send_credits = ac->send_credits;
		st->deficit = ac->se.dn.deficit;
		st->queued_ops = rs_ac_queued(ac, &st->queued_bytes);
		st->tx_msgs = ac->tx_msgs;
		st->tx_bytes = ac->tx_bytes;
		st->tx_chunks = ac->tx_chunks;
		st->credit_stalls = ac->credit_stalls;
		spin_unlock_irq(&qp->lock);
	} else {
		st->weight = READ_ONCE(ac->se.dn.weight);
		st->band = READ_ONCE(ac->se.band);
	}
	spin_lock_irq(&rf->rx_lock);
	st->rx_slots = ac->rx_reserved;
	st->rx_msgs = ac->rx_msgs;
	st->rx_bytes = ac->rx_bytes;
	st->rx_chunks = ac->rx_chunks;
	spin_unlock_irq(&rf->rx_lock);
}
