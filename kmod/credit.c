// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: receive slots and credits.
 *
 * A file's receive slots are one pool (rs_file.rx_unreserved).  A chunk goes
 * only with a credit, a slot promised to its AC (rs_ac.rx_reserved), so it
 * always finds one: the SRQ buffer is copied out at once and a slow reader
 * stalls its own senders only.  When the application releases a slot, the
 * slot goes back to its AC as a credit for the sender, or to the pool.
 *
 * Versions 1 and 2 (the AC's QP negotiated them): an AC sets
 * rs_credits_per_ac slots of the pool aside when it opens and keeps them;
 * with none left, no AC (ENOBUFS).
 *
 * Version 3, slots on demand: an AC's window (slots promised to it or
 * holding its chunks) comes from the pool as it receives, within its fair
 * share, the file's slots divided among its ACs that receive (those with a
 * window, or waiting for one).  It opens with what the pool can spare, up to
 * rs_credits_per_ac and its share, possibly nothing.  A sender with data
 * and no credit says so once (WANT); the receiving end grants from the pool,
 * or queues the AC in its file's FIFO of wanting ACs.  While that FIFO is
 * not empty, every slot that is released or given back goes to its oldest
 * AC, one each, so every AC that wants gets its turn whatever the others
 * do, and no AC needs slots set aside before it receives.  While it is
 * empty, a released slot goes back to its AC if the AC is within its share
 * (with one more from the pool if the peer had used every credit it had:
 * the window grows), and to the pool if not (the window shrinks).  Credits are
 * never revoked, only withheld: a slot stays promised until the peer sends
 * into it or gives it back.  A WANT that finds the pool empty has the AC
 * that has lent its slots longest asked for its unused credits (RECLAIM);
 * its peer gives them back (RETURN) at once if it has nothing to send, or
 * once it has sent what it has, so the slots of ACs gone idle come back.
 *
 * Version 4, credits name slots: a slot is picked from the file's free list
 * when it is promised to an AC (rs_rx_pick()), and an AC keeps its promised
 * slots in the order they were granted; a chunk takes the oldest one, a
 * RETURN gives back the oldest ones, so both ends agree on which slot each
 * chunk uses (the sender keeps the indices it was granted, in the same
 * order, for direct placement).  The slots granted to an AC that closes
 * stay out of the pool until the peer's CLOSE or the QP's end
 * (quarantine): a peer that writes into them cannot reach an AC they are
 * lent to next.  A version 4 end answers a CLOSE with its own (ac.c), so
 * that the closing end gets them back.
 *
 * Locks: rf->rx_lock for the receiving end, outside the QP's lock, which
 * covers the sending end (send_credits, credits_out, control bits) and an
 * AC's chains of slots (rx_sent, rx_unsent; the file's free list is under
 * rx_lock).
 */
#include <linux/log2.h>
#include <linux/memcontrol.h>
#include <linux/slab.h>
#include <linux/sched/mm.h>
#include <linux/sort.h>

#include "trace.h"
#include "transport.h"

/* ---- version 4: chains of slots, under the QP's lock ---- */

static void rs_fifo_push(struct rs_file *rf, struct rs_slot_fifo *f, u32 idx)
{
	if (f->n)
		rf->slots[f->tail].next = idx;
	else
		f->head = idx;
	f->tail = idx;
	f->n++;
}

static u32 rs_fifo_pop(struct rs_file *rf, struct rs_slot_fifo *f)
{
	u32 idx = f->head;

	f->head = rf->slots[idx].next;
	f->n--;
	return idx;
}

/*
 * Called with rx_lock and the QP's lock held: @n more slots promised to
 * @ac and not granted yet, taken from the free list now (version 4).
 */
static void rs_rx_pick(struct rs_ac *ac, u32 n)
{
	struct rs_file *rf = ac->rf;

	if (!ac->rx_named)
		return;
	while (n--) {
		if (WARN_ON_ONCE(!rf->nr_rx_free))
			return;
		rs_fifo_push(rf, &ac->rx_unsent, rf->rx_free[--rf->nr_rx_free]);
	}
}

/* Likewise: the oldest @n slots of @f back to the free list. */
static void rs_rx_drop(struct rs_ac *ac, struct rs_slot_fifo *f, u32 n)
{
	struct rs_file *rf = ac->rf;

	while (n-- && f->n)
		rf->rx_free[rf->nr_rx_free++] = rs_fifo_pop(rf, f);
}

/* ---- the receiving end, under rf->rx_lock ---- */

/* @ac's window changed: is it one of the file's receiving ACs now? */
static void rs_rx_active(struct rs_ac *ac)
{
	bool active = ac->rx_ondemand && !ac->rx_done &&
		      (ac->rx_reserved || ac->rx_held || !list_empty(&ac->rx_want_node));

	if (active == ac->rx_active)
		return;
	ac->rx_active = active;
	if (active)
		ac->rf->rx_active++;
	else
		ac->rf->rx_active--;
}

/*
 * The window an AC may grow to: an equal share of the file's slots, within
 * what a version 4 sender keeps track of.
 */
static u32 rs_rx_fair(struct rs_file *rf)
{
	return clamp(rf->rx_slots / max(rf->rx_active, 1U), 1U, RS_PROTO_MAX_WINDOW / 2);
}

static u32 rs_rx_window(struct rs_ac *ac)
{
	return ac->rx_reserved + ac->rx_held;
}

/* @n more slots promised to @ac: it is the youngest lender now. */
static void rs_rx_lend(struct rs_ac *ac, u32 n)
{
	lockdep_assert_held(&ac->rf->rx_lock);
	if (!n)
		return;
	ac->rx_reserved += n;
	ac->rx_reclaim = false;
	if (ac->rx_ondemand)
		list_move_tail(&ac->rx_lend_node, &ac->rf->rx_lenders);
	rs_rx_active(ac);
}

static void rs_rx_unlend(struct rs_ac *ac, u32 n)
{
	lockdep_assert_held(&ac->rf->rx_lock);
	ac->rx_reserved -= n;
	if (!ac->rx_reserved)
		list_del_init(&ac->rx_lend_node);
	rs_rx_active(ac);
}

/*
 * @n credits for @ac's sender: sent with its next record, or on their own
 * when @now or once half its window is owed.  A grant at half the window,
 * the sender still holding the other half, is not urgent: it goes with the
 * next SEND that autocork lets go (a completion away), so that the grants
 * of many ACs share SENDs.  A grant @now, or one the peer asked for (its
 * WANT came), goes at once.  True if the QP's sender has work.
 */
static bool rs_rx_grant(struct rs_ac *ac, u32 n, bool now)
{
	struct rs_qp *qp = ac->qp;
	bool owed;

	spin_lock(&qp->lock);
	ac->credits_out += n;
	rs_rx_pick(ac, n);
	owed = ac->credits_out && (now || ac->credits_out >= max(rs_rx_window(ac) / 2, 1U));
	if (owed) {
		if (now || ac->rx_peer_wants)
			ac->grant_urgent = true;
		rs_ac_ctrl(ac, RS_CTRL_CREDIT);
	}
	spin_unlock(&qp->lock);
	if (owed)
		ac->rx_peer_wants = false;
	return owed;
}

/*
 * Called with rx_lock held: a slot of the pool to the oldest wanting AC;
 * that AC (a reference), whose QP the caller pushes, or NULL.
 */
static struct rs_ac *rs_rx_serve_one(struct rs_file *rf)
{
	struct rs_ac *ac;

	ac = list_first_entry_or_null(&rf->rx_wanting, struct rs_ac, rx_want_node);
	if (!ac || !rf->rx_unreserved)
		return NULL;
	list_del_init(&ac->rx_want_node);
	rf->rx_unreserved--;
	rs_rx_lend(ac, 1);
	rs_rx_grant(ac, 1, true);
	rs_rx_active(ac);
	kref_get(&ac->ref);
	return ac;
}

/* The pool to the wanting ACs, one slot each in turn. */
static void rs_rx_serve(struct rs_file *rf)
{
	struct rs_ac *ac;

	for (;;) {
		spin_lock_irq(&rf->rx_lock);
		ac = rs_rx_serve_one(rf);
		spin_unlock_irq(&rf->rx_lock);
		if (!ac)
			return;
		rs_qp_push(ac->qp);
		rs_ac_put(ac);
	}
}

/*
 * Called from rs_ac_pin() with the file's rx_lock and @qp's lock held: the
 * slots @ac opens with.  False if a version 1 or 2 AC gets none.
 */
bool rs_rx_open_locked(struct rs_ac *ac, struct rs_qp *qp)
{
	struct rs_file *rf = ac->rf;
	u32 n;

	lockdep_assert_held(&rf->rx_lock);
	ac->rx_ondemand = qp->version >= 3;
	ac->rx_named = qp->version >= 4;
	n = min(rf->rx_unreserved, READ_ONCE(rs_credits_per_ac));
	/* Within what a version 4 sender keeps track of. */
	if (ac->rx_named)
		n = min(n, RS_PROTO_MAX_WINDOW / 2);
	/* Those who asked first come first; a share counts this AC in. */
	if (ac->rx_ondemand && !list_empty(&rf->rx_wanting))
		n = 0;
	else if (ac->rx_ondemand)
		n = min(n, max(rf->rx_slots / (rf->rx_active + 1), 1U));
	if (!n)
		return ac->rx_ondemand;
	rf->rx_unreserved -= n;
	rs_rx_lend(ac, n);
	/*
	 * Granted with the CONNECT or ACCEPT; from version 4, what one record
	 * does not name follows in CREDITs (once the peer's id is known).
	 */
	ac->credits_out = n;
	/* What the CONNECT or ACCEPT does not name is all the peer gets. */
	ac->grant_urgent = true;
	rs_rx_pick(ac, n);
	return true;
}

/*
 * Version 4, called with rx_lock and the QP's lock held: may the peer still
 * fill the slots granted to @ac, which closed?  Until the peer's CLOSE says
 * that it sends no more (RC delivers it after everything it sent before)
 * or the QP is destroyed, they stay out of the pool: the AC waits on its
 * QP's quarantined list (a reference), and keeps its file and data area.
 */
static bool rs_rx_quarantine(struct rs_ac *ac, struct rs_qp *qp)
{
	if (!list_empty(&ac->quar_node))
		return true;
	if (!ac->rx_sent.n || ac->peer_closed || qp->quar_over)
		return false;
	kref_get(&ac->ref);
	ac->quar_since = jiffies;
	list_add_tail(&ac->quar_node, &qp->quarantined);
	return true;
}

/*
 * The AC receives no more (rx_done is set): its promised slots go back, but
 * those its peer may still fill (version 4).  True if some are kept: the
 * AC is in quarantine until rs_rx_unquarantine().
 */
bool rs_rx_close(struct rs_ac *ac)
{
	struct rs_file *rf = ac->rf;
	bool serve, kept = false;
	u32 n;

	spin_lock_irq(&rf->rx_lock);
	if (ac->rx_named && ac->qp) {
		spin_lock(&ac->qp->lock);
		rs_rx_drop(ac, &ac->rx_unsent, ac->rx_unsent.n);
		ac->credits_out = 0;
		kept = rs_rx_quarantine(ac, ac->qp);
		if (!kept)
			rs_rx_drop(ac, &ac->rx_sent, ac->rx_sent.n);
		spin_unlock(&ac->qp->lock);
	}
	n = kept ? ac->rx_sent.n : 0;
	rf->rx_unreserved += ac->rx_reserved - n;
	ac->rx_reserved = n;
	list_del_init(&ac->rx_lend_node);
	list_del_init(&ac->rx_want_node);
	rs_rx_active(ac);
	serve = rf->rx_unreserved && !list_empty(&rf->rx_wanting);
	spin_unlock_irq(&rf->rx_lock);
	if (serve)
		rs_rx_serve(rf);
	return kept;
}

/*
 * @ac's quarantine ends (its peer's CLOSE came, or its QP was destroyed):
 * the slots it kept go back.  False if it was not in quarantine; if it was,
 * the caller drops the quarantine's reference.
 */
bool rs_rx_unquarantine(struct rs_ac *ac)
{
	struct rs_file *rf = ac->rf;
	bool was, serve;

	if (!ac->qp)
		return false;
	spin_lock_irq(&rf->rx_lock);
	spin_lock(&ac->qp->lock);
	was = !list_empty(&ac->quar_node);
	if (was) {
		list_del_init(&ac->quar_node);
		rs_rx_drop(ac, &ac->rx_sent, ac->rx_sent.n);
	}
	spin_unlock(&ac->qp->lock);
	if (was) {
		rf->rx_unreserved += ac->rx_reserved;
		ac->rx_reserved = 0;
	}
	serve = was && rf->rx_unreserved && !list_empty(&rf->rx_wanting);
	spin_unlock_irq(&rf->rx_lock);
	if (serve)
		rs_rx_serve(rf);
	return was;
}

/*
 * Called with rx_lock held: a chunk for @ac arrived; the slot it goes to in
 * *@idx (version 4: the oldest granted), or false without credit.  A chunk
 * the peer placed (@placed) must be in that slot, *@idx on entry, unless
 * that is RS_SLOT_OLDEST (version 5: a WRITE WITH IMMEDIATE names none).
 */
bool rs_rx_take(struct rs_ac *ac, bool placed, u32 *idx)
{
	struct rs_file *rf = ac->rf;

	if (!ac->rx_reserved)
		return false;
	if (ac->rx_named) {
		spin_lock(&ac->qp->lock);
		if (!ac->rx_sent.n ||
		    (placed && *idx != RS_SLOT_OLDEST && ac->rx_sent.head != *idx)) {
			spin_unlock(&ac->qp->lock);
			return false;
		}
		*idx = rs_fifo_pop(rf, &ac->rx_sent);
		/* Its last credit: what is left is owed, not sent yet. */
		ac->rx_full = !ac->rx_sent.n;
		spin_unlock(&ac->qp->lock);
	} else {
		if (placed || WARN_ON_ONCE(!rf->nr_rx_free))
			return false;
		*idx = rf->rx_free[--rf->nr_rx_free];
		ac->rx_full = ac->rx_reserved - 1 == READ_ONCE(ac->credits_out);
	}
	ac->rx_held++;
	rs_rx_unlend(ac, 1);
	return true;
}

/*
 * A slot that held a chunk of the AC @conn came back (its file's free list
 * has it already); @ac is the AC its id names now, or NULL.  It goes back
 * to that AC if the AC still receives and nobody waits for slots;
 * otherwise to the pool and the wanting ACs.
 */
void rs_rx_slot_back(struct rs_file *rf, struct rs_ac *ac, u32 conn)
{
	bool mine, pooled = true, push = false;
	u32 n = 1;

	spin_lock_irq(&rf->rx_lock);
	mine = ac && ac->id == conn;
	if (mine) {
		ac->rx_held--;
		rs_rx_active(ac);
	}
	if (mine && !ac->rx_done && READ_ONCE(ac->state) == RS_AC_OPEN &&
	    !READ_ONCE(ac->peer_closed) && !READ_ONCE(ac->peer_shut) &&
	    (!ac->rx_ondemand ||
	     (list_empty(&rf->rx_wanting) && rs_rx_window(ac) < rs_rx_fair(rf)))) {
		/* Slow start: the peer used up its window, so it grows. */
		if (ac->rx_ondemand && ac->rx_full && rf->rx_unreserved &&
		    rs_rx_window(ac) + 2 <= rs_rx_fair(rf)) {
			rf->rx_unreserved--;
			n++;
		}
		rs_rx_lend(ac, n);
		push = rs_rx_grant(ac, n, false);
		pooled = false;
	} else {
		rf->rx_unreserved++;
		pooled = !list_empty(&rf->rx_wanting);
		/* Its window shrinks: what it owes its waiting peer goes now. */
		if (mine && ac->rx_peer_wants && !ac->rx_done)
			push = rs_rx_grant(ac, 0, true);
	}
	spin_unlock_irq(&rf->rx_lock);
	if (push)
		rs_qp_push(ac->qp);
	if (pooled)
		rs_rx_serve(rf);
}

/*
 * Called with rx_lock held, the pool empty, for @ac that wants slots: ask
 * the AC that has lent its slots longest for its unused credits: any AC if
 * @ac has no window at all (so that it cannot wait forever), else only one
 * above its fair share.  Credits it owes and has not sent go back to the
 * pool at once, unless they are on their way or its peer waits for them
 * (a CREDIT is queued, or its WANT came).  That AC (a reference), or NULL.
 */
static struct rs_ac *rs_rx_reclaim(struct rs_file *rf, struct rs_ac *ac)
{
	bool any = !rs_rx_window(ac);
	struct rs_ac *v;
	u32 owed;

	list_for_each_entry(v, &rf->rx_lenders, rx_lend_node) {
		if (v == ac || v->rx_reclaim || (!any && rs_rx_window(v) <= rs_rx_fair(rf)))
			continue;
		spin_lock(&v->qp->lock);
		owed = (v->ctrl_pending & RS_CTRL_CREDIT) || v->rx_peer_wants ?
		       0 : v->credits_out;
		v->credits_out -= owed;
		if (v->rx_named)
			rs_rx_drop(v, &v->rx_unsent, owed);
		if (v->rx_reserved > owed)
			rs_ac_ctrl(v, RS_CTRL_RECLAIM);
		spin_unlock(&v->qp->lock);
		rf->rx_unreserved += owed;
		rs_rx_unlend(v, owed);
		if (!v->rx_reserved)
			return NULL;
		v->rx_reclaim = true;
		list_move_tail(&v->rx_lend_node, &rf->rx_lenders);
		kref_get(&v->ref);
		return v;
	}
	return NULL;
}

/*
 * Called with rx_lock held: @ac's peer waits for the credits owed.  A grant
 * of them queued already, lazy (rs_rx_grant()), goes at once now: true if
 * the QP's sender has work.  Otherwise the releases send them at half the
 * window, at once.
 */
static bool rs_rx_peer_waits(struct rs_ac *ac)
{
	struct rs_qp *qp = ac->qp;
	bool queued;

	spin_lock(&qp->lock);
	queued = ac->ctrl_pending & RS_CTRL_CREDIT;
	if (queued)
		ac->grant_urgent = true;
	spin_unlock(&qp->lock);
	if (!queued)
		ac->rx_peer_wants = true;
	return queued;
}

/* @ac's peer has data and no credit (WANT). */
void rs_rx_want(struct rs_ac *ac)
{
	struct rs_file *rf = ac->rf;
	struct rs_ac *victim = NULL;
	bool push = false, serve, shrinks;
	u32 n;

	spin_lock_irq(&rf->rx_lock);
	if (ac->rx_done || !ac->rx_ondemand || !list_empty(&ac->rx_want_node)) {
		/* Closed, not on demand, or queued already. */
	} else if (ac->rx_reserved) {
		/*
		 * Credits are on their way (the WANT crossed them), or owed:
		 * its releases send those at half its window, unless the
		 * window shrinks (others want slots, or it is above its
		 * share) or nothing is left to release; then they go now.
		 */
		shrinks = !ac->rx_held || !list_empty(&rf->rx_wanting) ||
			  rs_rx_window(ac) > rs_rx_fair(rf);
		if (READ_ONCE(ac->credits_out) && shrinks)
			push = rs_rx_grant(ac, 0, true);
		else if (READ_ONCE(ac->credits_out))
			push = rs_rx_peer_waits(ac);
	} else if (rf->rx_unreserved && list_empty(&rf->rx_wanting)) {
		/*
		 * Up to its share.  A reader behind, its share full of what
		 * it has not read, gets half a share: fed the slot or two its
		 * reads free meanwhile, the peer would send one small message
		 * a SEND, each for a WANT and a grant (TCP's silly window
		 * syndrome).  The window shrinks back as it reads.
		 */
		n = rs_rx_fair(rf) > ac->rx_held ? rs_rx_fair(rf) - ac->rx_held
						 : max(rs_rx_fair(rf) / 2, 1U);
		n = min3(rf->rx_unreserved, n, max(ac->rx_held, 1U));
		rf->rx_unreserved -= n;
		rs_rx_lend(ac, n);
		push = rs_rx_grant(ac, n, true);
	} else {
		list_add_tail(&ac->rx_want_node, &rf->rx_wanting);
		rs_rx_active(ac);
		if (!rf->rx_unreserved)
			victim = rs_rx_reclaim(rf, ac);
	}
	serve = rf->rx_unreserved && !list_empty(&rf->rx_wanting);
	spin_unlock_irq(&rf->rx_lock);
	if (push)
		rs_qp_push(ac->qp);
	if (victim) {
		rs_qp_push(victim->qp);
		rs_ac_put(victim);
	}
	if (serve)
		rs_rx_serve(rf);
}

/*
 * @ac's peer gave @n unused credits back (RETURN): -EPROTO if it holds
 * fewer.
 */
int rs_rx_returned(struct rs_ac *ac, u32 n)
{
	struct rs_file *rf = ac->rf;
	u32 held;

	spin_lock_irq(&rf->rx_lock);
	if (ac->rx_done || !ac->rx_ondemand) {
		/* Closed: the slots went back already. */
		spin_unlock_irq(&rf->rx_lock);
		return 0;
	}
	spin_lock(&ac->qp->lock);
	held = ac->rx_reserved - ac->credits_out;
	if (n <= held && ac->rx_named)
		rs_rx_drop(ac, &ac->rx_sent, n);
	spin_unlock(&ac->qp->lock);
	if (n > held) {
		spin_unlock_irq(&rf->rx_lock);
		return -EPROTO;
	}
	rs_rx_unlend(ac, n);
	rf->rx_unreserved += n;
	ac->rx_reclaim = false;
	spin_unlock_irq(&rf->rx_lock);
	rs_rx_serve(rf);
	return 0;
}

/* ---- the sending end, under the QP's lock ---- */

/* Its next operation is a SEND: a chunk needs credits. */
static bool rs_ac_has_send(struct rs_ac *ac)
{
	struct rs_send *op;

	op = list_first_entry_or_null(&ac->sendq, struct rs_send, node);
	return op && op->opcode == RDMASHARE_OP_SEND;
}

/* The sender takes the credits to grant with a record (before version 4). */
u32 rs_ac_take_credits(struct rs_ac *ac)
{
	u32 n = ac->credits_out;

	lockdep_assert_held(&ac->qp->lock);
	ac->credits_out = 0;
	return n;
}

static int rs_slot_cmp(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Version 4: the sender takes up to @max credits to grant with a CREDIT,
 * CONNECT or ACCEPT record, their slots' indices into @slots; what is left
 * goes in another CREDIT, once the peer's id for the AC is known (a
 * CONNECT's leftovers wait for the ACCEPT).  The number taken.
 *
 * Named in ascending order (the peer uses them in the order named): the
 * chunks of a message the peer sends into them are then consecutive on
 * both sides where the slots are, and their WRITEs join (sender.c).
 * Without the sort, a window that grew by a fresh slot per slot released
 * interleaves two runs for good: a chunk per WRITE.
 */
u32 rs_ac_take_grant(struct rs_ac *ac, u32 *slots, u32 max)
{
	u32 i, n = min3(ac->credits_out, ac->rx_unsent.n, max);

	lockdep_assert_held(&ac->qp->lock);
	for (i = 0; i < n; i++)
		slots[i] = rs_fifo_pop(ac->rf, &ac->rx_unsent);
	if (n > 1)
		sort(slots, n, sizeof(*slots), rs_slot_cmp, NULL);
	for (i = 0; i < n; i++)
		rs_fifo_push(ac->rf, &ac->rx_sent, slots[i]);
	ac->credits_out -= n;
	if (ac->credits_out && ac->remote_id)
		rs_ac_ctrl(ac, RS_CTRL_CREDIT);
	return n;
}

/*
 * Version 4: grants of @ac's credits ride only in CREDIT records: one goes
 * right after a record that would have carried them before.
 */
void rs_ac_grant_soon(struct rs_ac *ac)
{
	lockdep_assert_held(&ac->qp->lock);
	if (ac->credits_out && ac->remote_id)
		rs_ac_ctrl(ac, RS_CTRL_CREDIT);
}

/* The peer's slots @ac holds into @ring of @cap entries; the old ring. */
static u32 *rs_ac_slots_move(struct rs_ac *ac, u32 *ring, u32 cap)
{
	u32 i, *old = ac->tx_slots;

	for (i = 0; i < ac->send_credits; i++)
		ring[i] = ac->tx_slots[(ac->tx_slots_head + i) & (ac->tx_slots_cap - 1)];
	ac->tx_slots = ring;
	ac->tx_slots_head = 0;
	ac->tx_slots_cap = cap;
	return old;
}

/*
 * Version 4: room in @ac's ring for @n more of the peer's slots, made
 * outside the QP's lock (@ac->qp is NULL for an AC nobody else sees yet).
 * Only the QP's completion handler adds slots, so only it calls this.
 * -EPROTO if the peer would grant more than RS_PROTO_MAX_WINDOW, -ENOMEM.
 */
int rs_ac_slots_room(struct rs_ac *ac, u32 n)
{
	u32 have = READ_ONCE(ac->send_credits), cap, *ring, *old;
	struct mem_cgroup *memcg;

	if (have + n > RS_PROTO_MAX_WINDOW)
		return -EPROTO;
	if (have + n <= ac->tx_slots_cap)
		return 0;
	cap = roundup_pow_of_two(max(have + n, 8U));
	memcg = set_active_memcg(ac->rf->memcg);
	ring = kvmalloc_array(cap, sizeof(*ring), GFP_KERNEL_ACCOUNT);
	set_active_memcg(memcg);
	if (!ring)
		return -ENOMEM;
	/* The sender may have used some meanwhile, never added any. */
	if (ac->qp) {
		spin_lock_irq(&ac->qp->lock);
		old = rs_ac_slots_move(ac, ring, cap);
		spin_unlock_irq(&ac->qp->lock);
	} else {
		old = rs_ac_slots_move(ac, ring, cap);
	}
	kvfree(old);
	return 0;
}

/*
 * Version 4: the peer granted @n slots, their indices in @payload (the
 * caller made room).  Called with the QP's lock held, or before anyone else
 * sees @ac.
 */
void rs_ac_got_slots(struct rs_ac *ac, const void *payload, u32 n)
{
	u32 i, at = ac->tx_slots_head + ac->send_credits;

	for (i = 0; i < n; i++)
		ac->tx_slots[(at + i) & (ac->tx_slots_cap - 1)] = rs_proto_get_slot(payload, i);
	ac->send_credits += n;
	ac->want_sent = false;
	if (ac->qp)
		trace_rdmashare_credit_grant(ac, n);
}

/* Version 4: the peer's oldest slot granted to @ac, which has credits. */
u32 rs_ac_peek_slot(struct rs_ac *ac)
{
	lockdep_assert_held(&ac->qp->lock);
	return ac->tx_slots[ac->tx_slots_head];
}

/* Version 4: a chunk uses the peer's oldest slot granted; its index. */
u32 rs_ac_take_slot(struct rs_ac *ac)
{
	u32 idx = ac->tx_slots[ac->tx_slots_head];

	lockdep_assert_held(&ac->qp->lock);
	ac->tx_slots_head = (ac->tx_slots_head + 1) & (ac->tx_slots_cap - 1);
	ac->send_credits--;
	return idx;
}

/* The peer granted @n credits. */
void rs_ac_got_credits(struct rs_ac *ac, u32 n)
{
	lockdep_assert_held(&ac->qp->lock);
	ac->send_credits += n;
	ac->want_sent = false;
	trace_rdmashare_credit_grant(ac, n);
}

/*
 * @ac has data and no credit: counted, and on demand (version 3) its peer is
 * asked once.
 */
static void rs_ac_stalled(struct rs_ac *ac)
{
	ac->credit_stalls++;
	rs_qp_stat(ac->qp, RS_STAT_CREDIT_STALLS, 1);
	trace_rdmashare_credit_stall(ac, 0);
	if (ac->qp->version >= 3 && !ac->want_sent) {
		ac->want_sent = true;
		rs_ac_ctrl(ac, RS_CTRL_WANT);
	}
}

/* A SEND was queued on @ac, the first of its queue. */
void rs_ac_queued_send(struct rs_ac *ac)
{
	lockdep_assert_held(&ac->qp->lock);
	if (!ac->send_credits)
		rs_ac_stalled(ac);
}

/*
 * The sender took a record of @ac: its data waits for credits now, or it
 * has sent all it had and gives back credits its peer asked for.
 */
void rs_ac_after_chunk(struct rs_ac *ac)
{
	lockdep_assert_held(&ac->qp->lock);
	if (rs_ac_has_send(ac)) {
		/* The peer's sink (sink.c) takes chunks without credits. */
		if (!ac->send_credits && !ac->psink.open)
			rs_ac_stalled(ac);
	} else if (ac->give_back && !ac->close_sent) {
		ac->give_back = false;
		if (ac->send_credits)
			rs_ac_ctrl(ac, RS_CTRL_RETURN);
	}
}

/* The peer asks for @ac's unused credits (RECLAIM). */
void rs_ac_reclaimed(struct rs_ac *ac)
{
	lockdep_assert_held(&ac->qp->lock);
	if (rs_ac_has_send(ac))
		ac->give_back = true;
	else if (ac->send_credits)
		rs_ac_ctrl(ac, RS_CTRL_RETURN);
}

/* The credits a RETURN gives back: all, unless data came meanwhile. */
u32 rs_ac_take_return(struct rs_ac *ac)
{
	u32 n = ac->send_credits;

	lockdep_assert_held(&ac->qp->lock);
	if (rs_ac_has_send(ac)) {
		ac->give_back = true;
		return 0;
	}
	/* Version 4: the oldest n, that is all of them. */
	ac->send_credits = 0;
	ac->tx_slots_head = 0;
	return n;
}

/* A WANT still says something: data, and no credit came since. */
bool rs_ac_take_want(struct rs_ac *ac)
{
	lockdep_assert_held(&ac->qp->lock);
	return ac->want_sent && !ac->send_credits && rs_ac_has_send(ac);
}
