// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: the shared RC QPs' life, apart from connection management
 * (cm.c, rdma_cm).
 *
 * A QP (struct rs_qp) is made for a peer, active (this host connects) or
 * passive (the peer did), and lives on the peer's list while it may carry
 * ACs; new ACs go to the least loaded of up to rs_qps_per_peer QPs
 * (rs_qp_choose()).  rdmashare creates the verbs QP and its CQ itself
 * (rs_qp_create_ib()) and moves it through INIT, RTR and RTS with the
 * attributes rdma_cm derives from the connection (rs_qp_ready()), so that
 * "rdma resource show" names this module as their owner.  A QP with ACs
 * sends keepalives; one that has had no AC for rs_idle_timeout_ms goes
 * down.
 *
 * Teardown order (rs_qp_down_work): mark the QP down, disconnect, fail
 * every pinned AC, unlist it from the peer and the device, drain the send
 * queue (every posted TX completes and drops its references), stop the
 * sender, destroy the QP (then the slots kept for closed ACs are free:
 * rs_qp_quarantine_end()) and the cm_id, free the CQ and the TX buffers.
 * What is left is memory that ACs may still point to, freed with the last
 * reference.  rdma_cm handlers never destroy their own cm_id once
 * a QP owns it: the down work does, in process context (but see
 * rs_cm_device_removal()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/slab.h>

#include "trace.h"
#include "transport.h"

atomic_t rs_nr_qps = ATOMIC_INIT(0);

/* The last reference: verbs resources are gone already (or never were). */
static void rs_qp_release(struct kref *ref)
{
	struct rs_qp *qp = container_of(ref, struct rs_qp, ref);
	struct rs_peer *peer = qp->peer;
	struct rs_reject *rej, *tmp;

	WARN_ON(qp->qp || qp->cq);
	/* Answers owed to a peer that is gone. */
	list_for_each_entry_safe(rej, tmp, &qp->rejects, node)
		kfree(rej);
	if (qp->rdev)
		rs_device_put(qp->rdev);
	/* A busy poller may have looked it up just now (poll.c). */
	kfree_rcu(qp, rcu);
	rs_peer_put(peer);
}

void rs_qp_put(struct rs_qp *qp)
{
	kref_put(&qp->ref, rs_qp_release);
}

static void rs_qp_down_work(struct work_struct *work);

/*
 * How often the keepalive work runs: every rs_keepalive_ms, or, with
 * keepalives off, every rs_connect_timeout_ms, to bound the quarantine.
 */
static unsigned long rs_qp_keepalive_period(void)
{
	return msecs_to_jiffies(READ_ONCE(rs_keepalive_ms) ?: READ_ONCE(rs_connect_timeout_ms));
}

/*
 * A QP that carries ACs sends a KEEPALIVE every rs_keepalive_ms: RC retries
 * then notice a peer that is gone, even when nothing else is in flight.  A
 * peer that leaves a CLOSE unanswered past rs_connect_timeout_ms loses the
 * QP, keepalives or not.
 */
static void rs_qp_keepalive(struct work_struct *work)
{
	struct rs_qp *qp = container_of(to_delayed_work(work), struct rs_qp, keepalive);
	bool ping, stuck;
	struct rs_ac *ac;

	spin_lock_irq(&qp->lock);
	if (qp->state != RS_QP_UP) {
		spin_unlock_irq(&qp->lock);
		return;
	}
	ping = READ_ONCE(rs_keepalive_ms) && !list_empty(&qp->acs);
	if (ping)
		qp->ping_pending = true;
	/* Version 4: a CLOSE unanswered keeps slots from the file's ACs. */
	ac = list_first_entry_or_null(&qp->quarantined, struct rs_ac, quar_node);
	stuck = ac && time_after(jiffies, ac->quar_since +
				 msecs_to_jiffies(READ_ONCE(rs_connect_timeout_ms)));
	spin_unlock_irq(&qp->lock);
	if (stuck) {
		pr_warn_ratelimited("QP %u: the peer did not answer a CLOSE: taking it down\n",
				    qp->qp_num);
		rs_qp_stat(qp, RS_STAT_ERRORS, 1);
		rs_qp_down(qp, -ETIMEDOUT);
		return;
	}
	if (ping)
		rs_qp_kick(qp);
	queue_delayed_work(rs_wq, &qp->keepalive, rs_qp_keepalive_period());
}

/* Called with rs_peers_lock held: rs_keepalive_ms changed. */
void rs_qp_keepalive_changed(struct rs_qp *qp)
{
	spin_lock_irq(&qp->lock);
	if (qp->state == RS_QP_UP)
		mod_delayed_work(rs_wq, &qp->keepalive, rs_qp_keepalive_period());
	spin_unlock_irq(&qp->lock);
}

/* Called with the QP's lock held, when it may have become idle. */
static void rs_qp_arm_idle(struct rs_qp *qp)
{
	unsigned int ms = READ_ONCE(rs_idle_timeout_ms);

	lockdep_assert_held(&qp->lock);
	if (ms && qp->state == RS_QP_UP && !qp->nr_acs)
		mod_delayed_work(rs_wq, &qp->idle_work, msecs_to_jiffies(ms));
}

/*
 * The idle timer: a QP without ACs and without CONNECTs waiting for it goes
 * down.  rs_peers_lock keeps new CONNECTs from choosing it meanwhile.  A
 * peer's CONNECT already on the wire fails with the QP; the peer's
 * rs_ac_connect() then tries once more on a new QP.
 *
 * Before that, the same timer bounds a passive QP's setup
 * (rs_qp_arm_setup()): one the peer has not established by then goes too.
 */
static void rs_qp_idle(struct work_struct *work)
{
	struct rs_qp *qp = container_of(to_delayed_work(work), struct rs_qp, idle_work);
	bool idle;

	mutex_lock(&rs_peers_lock);
	spin_lock_irq(&qp->lock);
	idle = qp->state == RS_QP_UP && !qp->nr_acs && !atomic_read(&qp->nr_waiters) &&
	       READ_ONCE(rs_idle_timeout_ms);
	idle |= qp->state == RS_QP_CONNECTING && !qp->active;
	spin_unlock_irq(&qp->lock);
	if (idle)
		rs_qp_down(qp, -ETIMEDOUT);
	mutex_unlock(&rs_peers_lock);
}

/*
 * A passive QP about to accept: it has connect_timeout_ms to be
 * established.  A peer whose RTU never comes (it gave up on its CONNECT
 * and its REJ was lost, or it never meant to send one) would otherwise
 * hold the QP for as long as rdma_cm resends the REP, about a minute.
 * Once up, the QP arms the idle timer in its stead (rs_qp_established()).
 */
void rs_qp_arm_setup(struct rs_qp *qp)
{
	mod_delayed_work(rs_wq, &qp->idle_work,
			 msecs_to_jiffies(READ_ONCE(rs_connect_timeout_ms)));
}

/* Called with rs_peers_lock held: rs_idle_timeout_ms changed. */
void rs_qp_idle_changed(struct rs_qp *qp)
{
	spin_lock_irq(&qp->lock);
	if (READ_ONCE(rs_idle_timeout_ms))
		rs_qp_arm_idle(qp);
	else if (qp->state == RS_QP_UP)		/* not a passive QP's setup */
		cancel_delayed_work(&qp->idle_work);
	spin_unlock_irq(&qp->lock);
}

/* The scheduler parameters from the tunables. */
static void rs_qp_sched_params(struct rs_qp *qp)
{
	rs_sched_set_params(&qp->sched, READ_ONCE(rs_sched_quantum),
			    READ_ONCE(rs_sched_latency_quantum),
			    READ_ONCE(rs_sched_flat));
}

/* Called with rs_peers_lock held: a scheduler tunable changed. */
void rs_qp_sched_changed(struct rs_qp *qp)
{
	spin_lock_irq(&qp->lock);
	rs_qp_sched_params(qp);
	spin_unlock_irq(&qp->lock);
	/* e.g. split back on: what waited may go now. */
	rs_qp_kick(qp);
}

/*
 * Called with the QP's lock held: @ac uses @qp from now on, scheduled in
 * its file's group there.  *@spare is a zeroed group the caller allocated;
 * it is used (and set to NULL) if the file has no group on @qp yet.
 */
void rs_qp_pin_locked(struct rs_qp *qp, struct rs_ac *ac, struct rs_qp_group **spare)
{
	struct rs_qp_group *grp;

	lockdep_assert_held(&qp->lock);
	list_for_each_entry(grp, &qp->groups, node)
		if (grp->rf == ac->rf)
			goto found;
	grp = *spare;
	*spare = NULL;
	grp->rf = ac->rf;
	rs_sched_group_init(&grp->g, READ_ONCE(ac->rf->sched_weight));
	list_add_tail(&grp->node, &qp->groups);
found:
	grp->nr_acs++;
	ac->group = grp;
	ac->se.group = &grp->g;
	list_add_tail(&ac->qp_node, &qp->acs);
	qp->nr_acs++;
	atomic_inc(&qp->peer->nr_acs);
	if (qp->rdev)
		atomic_inc(&qp->rdev->nr_acs);
}

/*
 * Called with the QP's lock held: @ac, if pinned, no longer uses @qp.  It
 * leaves the scheduler here, before its group may go.
 */
void rs_qp_unpin_locked(struct rs_qp *qp, struct rs_ac *ac)
{
	struct rs_qp_group *grp = ac->group;

	lockdep_assert_held(&qp->lock);
	if (list_empty(&ac->qp_node))
		return;
	list_del_init(&ac->qp_node);
	rs_sched_dequeue(&qp->sched, &ac->se);
	/* Its last AC with data gone, the QP holds none of the others. */
	rs_qp_gate(qp, RS_GATE_SYNC);
	if (qp->hol_ac == ac)
		qp->hol_ac = NULL;
	ac->se.group = NULL;
	ac->group = NULL;
	if (!--grp->nr_acs) {
		WARN_ON(!rs_sched_group_idle(&grp->g));
		list_del(&grp->node);
		kfree(grp);
	}
	qp->nr_acs--;
	atomic_dec(&qp->peer->nr_acs);
	if (qp->rdev)
		atomic_dec(&qp->rdev->nr_acs);
	rs_qp_arm_idle(qp);
}

/* The CONNECT that rs_qp_get_up() returned @qp to has pinned its AC, or failed. */
void rs_qp_unwait(struct rs_qp *qp)
{
	atomic_dec(&qp->nr_waiters);
}

struct rs_qp *rs_qp_alloc(struct rs_peer *peer, bool active)
{
	struct rs_qp *qp;

	qp = kzalloc(sizeof(*qp), GFP_KERNEL);
	if (!qp)
		return NULL;
	kref_init(&qp->ref);
	qp->peer = peer;
	qp->active = active;
	qp->state = RS_QP_CONNECTING;
	init_waitqueue_head(&qp->wait);
	spin_lock_init(&qp->lock);
	rs_sched_init(&qp->sched, READ_ONCE(rs_sched_quantum),
		      READ_ONCE(rs_sched_latency_quantum), READ_ONCE(rs_sched_flat));
	rs_gate_member_init(&qp->gm);
	INIT_LIST_HEAD(&qp->groups);
	INIT_LIST_HEAD(&qp->ctrl);
	INIT_LIST_HEAD(&qp->rejects);
	INIT_LIST_HEAD(&qp->acs);
	INIT_LIST_HEAD(&qp->quarantined);
	INIT_LIST_HEAD(&qp->peer_node);
	INIT_WORK(&qp->send_work, rs_sender_work);
	INIT_WORK(&qp->down_work, rs_qp_down_work);
	INIT_WORK(&qp->connect_work, rs_qp_connect_work);
	INIT_DELAYED_WORK(&qp->keepalive, rs_qp_keepalive);
	INIT_DELAYED_WORK(&qp->idle_work, rs_qp_idle);
	atomic_set(&qp->nr_waiters, 0);
	return qp;
}

static void rs_qp_event(struct ib_event *ev, void *ctx)
{
	struct rs_qp *qp = ctx;

	switch (ev->event) {
	case IB_EVENT_COMM_EST:
		/* A receive before the RTU: the connection is up. */
		rdma_notify(qp->cm_id, ev->event);
		break;
	case IB_EVENT_QP_FATAL:
	case IB_EVENT_QP_ACCESS_ERR:
	case IB_EVENT_QP_REQ_ERR:
		pr_warn_ratelimited("QP %u: %s\n", qp->qp_num, ib_event_msg(ev->event));
		rs_qp_down(qp, -EIO);
		break;
	default:
		break;
	}
}

/* Move the QP to @state with the attributes rdma_cm has for the connection. */
static int rs_qp_modify(struct rs_qp *qp, enum ib_qp_state state)
{
	struct ib_qp_attr attr = { .qp_state = state };
	int mask, ret;

	ret = rdma_init_qp_attr(qp->cm_id, &attr, &mask);
	if (ret)
		return ret;
	/*
	 * A passive QP's RNR retries are what the peer's REQ asked for (the
	 * IB CM lets the requester choose them), 7 meaning "forever": never
	 * more than ours, whoever connected.
	 */
	if ((mask & IB_QP_RNR_RETRY) && attr.rnr_retry > RS_RNR_RETRY_COUNT)
		attr.rnr_retry = RS_RNR_RETRY_COUNT;
	return ib_modify_qp(qp->qp, &attr, mask);
}

/*
 * RTR and RTS, once the peer's REQ or REP is in.  With an iWARP device the
 * iw_cm moves the QP itself.
 */
int rs_qp_ready(struct rs_qp *qp)
{
	int ret;

	if (!rdma_cap_ib_cm(qp->cm_id->device, qp->cm_id->port_num))
		return 0;
	/* INIT again with what the CM now knows, as rdma_cm does. */
	ret = rs_qp_modify(qp, IB_QPS_INIT);
	if (ret)
		return ret;
	ret = rs_qp_modify(qp, IB_QPS_RTR);
	if (ret)
		return ret;
	return rs_qp_modify(qp, IB_QPS_RTS);
}

/*
 * Verbs resources of a QP whose cm_id knows its device: its CQ, its TX
 * buffers and the QP, in INIT.
 */
int rs_qp_create_ib(struct rs_qp *qp)
{
	struct ib_device *ibdev = qp->cm_id->device;
	struct ib_qp_init_attr attr = {};
	struct rs_device *rdev;
	int ret;

	/* rs_ib_remove() sets removing under the same lock, then takes the
	 * device's QPs down: a QP created before is among them.
	 */
	lockdep_assert_held(&rs_peers_lock);
	rdev = rs_device_get_by_ibdev(ibdev);
	if (!rdev || !rdev->srq || rdev->removing)
		return -ENODEV;
	/*
	 * The QP, and the ACs that keep it after it went down, may outlive
	 * the device: the reference keeps @rdev (not its verbs objects) until
	 * the QP is freed, so that a late SEND finds dma_maps_gone set.
	 */
	qp->rdev = rs_device_get(rdev);

	/*
	 * A SEND takes a work request, and its registrations and WRITEs one
	 * each (sender.c), all of which complete when the QP is flushed.
	 */
	qp->send_depth = min_t(u32, READ_ONCE(rs_send_depth),
			       (ibdev->attrs.max_qp_wr - 1) / RS_TX_WRS_MAX);
	/*
	 * One CQ for sends and receives: draining the SQ then also flushes
	 * every receive completion that points at the QP.  Room for every
	 * send work request (+1 for the drain WR) and every SRQ buffer, or
	 * cq_depth if that is more (and the device allows it).
	 */
	qp->cq_size = qp->send_depth * RS_TX_WRS_MAX + 1 + qp->rdev->srq_size;
	qp->cq_size = max_t(u32, qp->cq_size,
			    min_t(u32, READ_ONCE(rs_cq_depth), ibdev->attrs.max_cqe));
	ret = rs_cq_create(qp, ibdev);
	if (ret)
		return ret;

	ret = rs_qp_tx_init(qp);
	if (ret)
		goto out_free_cq;

	attr.event_handler = rs_qp_event;
	attr.qp_context = qp;
	attr.send_cq = qp->cq;
	attr.recv_cq = qp->cq;
	attr.srq = qp->rdev->srq;
	attr.cap.max_send_wr = qp->send_depth * RS_TX_WRS_MAX + 1;
	/* Chunks sent in place take a page each (sender.c). */
	attr.cap.max_send_sge = min_t(u32, RS_TX_MAX_SGE, ibdev->attrs.max_send_sge);
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.qp_type = IB_QPT_RC;
	qp->qp = ib_create_qp(qp->rdev->pd, &attr);
	if (IS_ERR(qp->qp)) {
		ret = PTR_ERR(qp->qp);
		qp->qp = NULL;
		goto out_tx_free;
	}
	qp->qp_num = qp->qp->qp_num;
	qp->max_send_sge = min_t(u32, attr.cap.max_send_sge, RS_TX_MAX_SGE);
	ret = rs_qp_modify(qp, IB_QPS_INIT);
	if (ret)
		goto out_destroy_qp;
	atomic_inc(&qp->rdev->nr_qps);
	return 0;

out_destroy_qp:
	ib_destroy_qp(qp->qp);
	qp->qp = NULL;
out_tx_free:
	rs_qp_tx_free(qp);
out_free_cq:
	rs_cq_destroy(qp);
	return ret;
}

/* The connection is up: the QP's ACs may send. */
void rs_qp_established(struct rs_qp *qp)
{
	bool up;

	spin_lock_irq(&qp->lock);
	up = qp->state == RS_QP_CONNECTING;
	if (up)
		qp->state = RS_QP_UP;
	rs_qp_arm_idle(qp);
	spin_unlock_irq(&qp->lock);
	if (up) {
		trace_rdmashare_qp_up(qp, 0);
		rs_qp_stat(qp, RS_STAT_QPS_UP, 1);
		if (atomic_add_unless(&qp->peer->nr_lost, -1, 0))
			rs_qp_stat(qp, RS_STAT_RECONNECTS, 1);
	}
	wake_up_all(&qp->wait);
	rs_qp_kick(qp);
	if (up)
		queue_delayed_work(rs_wq, &qp->keepalive, rs_qp_keepalive_period());
}

/*
 * Take the QP out of service: nothing new is queued on it, its ACs fail,
 * the teardown runs in rs_qp_down_work.  Idempotent, any context.
 */
void rs_qp_down(struct rs_qp *qp, int error)
{
	unsigned long flags;
	bool first;

	spin_lock_irqsave(&qp->lock, flags);
	first = qp->state != RS_QP_DOWN;
	if (first) {
		qp->state = RS_QP_DOWN;
		qp->error = error;
		/* Out of the gate before the send work is cancelled. */
		rs_qp_gate(qp, RS_GATE_IDLE);
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	if (!first)
		return;
	trace_rdmashare_qp_down(qp, error);
	wake_up_all(&qp->wait);
	kref_get(&qp->ref);
	queue_work(rs_wq, &qp->down_work);
}

static void rs_qp_down_work(struct work_struct *work)
{
	struct rs_qp *qp = container_of(work, struct rs_qp, down_work);
	bool listed, had_qp, park = false, lost = false;
	struct rs_ac *ac;

	/*
	 * The state is DOWN: the connect work has not started, and will not,
	 * or it has finished with the cm_id; once a handler running now has
	 * finished, no handler creates verbs resources any more.
	 */
	if (cancel_work_sync(&qp->connect_work))
		rs_qp_put(qp);		/* the connect work's */
	if (qp->cm_id) {
		rdma_lock_handler(qp->cm_id);
		rdma_unlock_handler(qp->cm_id);
	}
	if (qp->qp) {
		/* Flush what is in flight before the peer hears of it. */
		struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

		ib_modify_qp(qp->qp, &attr, IB_QP_STATE);
		/* With the port down, not now: the cm_id waits (park.c). */
		park = rs_park_wanted(qp->rdev, qp->cm_id);
		if (!park)
			rdma_disconnect(qp->cm_id);
	}

	/* Fail every pinned AC; each drops its reference to the QP. */
	spin_lock_irq(&qp->lock);
	while ((ac = list_first_entry_or_null(&qp->acs, struct rs_ac, qp_node))) {
		rs_qp_unpin_locked(qp, ac);
		kref_get(&ac->ref);
		spin_unlock_irq(&qp->lock);
		rs_ac_qp_down(ac, qp->error);
		rs_ac_put(ac);
		lost = true;
		spin_lock_irq(&qp->lock);
	}
	spin_unlock_irq(&qp->lock);
	if (lost) {
		rs_qp_stat(qp, RS_STAT_QPS_LOST, 1);
		atomic_inc(&qp->peer->nr_lost);
	}

	mutex_lock(&rs_peers_lock);
	listed = rs_peer_del_qp(qp->peer, qp);
	mutex_unlock(&rs_peers_lock);

	/*
	 * The sender stops first (the state is DOWN: nothing queues it again,
	 * and the teardown becomes the sender for good), so that nothing is
	 * posted after the drain.  Then every posted send completes (flushed)
	 * and drops its references; every receive completion queued before it
	 * has been handled.
	 */
	cancel_work_sync(&qp->send_work);
	rs_qp_xmit_stop(qp);
	cancel_delayed_work_sync(&qp->keepalive);
	cancel_delayed_work_sync(&qp->idle_work);
	if (qp->qp)
		ib_drain_sq(qp->qp);

	had_qp = qp->qp;
	if (qp->cq)
		rs_cq_stop(qp);
	if (qp->qp)
		ib_destroy_qp(qp->qp);
	qp->qp = NULL;
	/* Nothing fills a receive slot now. */
	rs_qp_quarantine_end(qp);
	/* Parked only now: nothing of the QP (its event handler) uses it. */
	if (qp->cm_id && !(park && rs_park_cm_id(qp->rdev, qp->cm_id))) {
		if (park)
			rdma_disconnect(qp->cm_id);
		rdma_destroy_id(qp->cm_id);
	}
	qp->cm_id = NULL;
	/* The CQ goes first: no completion can use a TX buffer after that. */
	if (qp->cq) {
		rs_cq_destroy(qp);
		rs_qp_tx_free(qp);
	}
	/* Its completions are handled or dropped: the device may renew its SRQ. */
	if (had_qp)
		rs_device_qp_destroyed(qp->rdev);

	if (listed)
		rs_qp_put(qp);		/* the peer list's reference */
	rs_qp_put(qp);			/* rs_qp_down()'s */
}

/*
 * Called with rs_peers_lock held: does @qp carry, or is it about to carry,
 * an AC of @rf's?  The last file to choose it, while CONNECTs still wait
 * to pin their ACs there, is about to.
 */
static bool rs_qp_has_file(struct rs_qp *qp, const struct rs_file *rf)
{
	struct rs_qp_group *grp;
	bool found = false;

	if (qp->last_rf == rf && atomic_read(&qp->nr_waiters))
		return true;
	spin_lock_irq(&qp->lock);
	list_for_each_entry(grp, &qp->groups, node) {
		if (grp->rf == rf) {
			found = true;
			break;
		}
	}
	spin_unlock_irq(&qp->lock);
	return found;
}

/*
 * Called with rs_peers_lock held: the QP of @peer a new AC of @rf's should
 * use, or NULL when a new one should be connected.  Up to rs_qps_per_peer
 * QPs (up, or being connected by this host; the first ones, if it was
 * lowered while more were up) carry the ACs.  In app mode
 * the ACs of one file share a QP, so that the scheduler there weighs them
 * against each other and the peer's gate weighs the file as one group
 * (gate.h); a file's first AC, and in flat mode every AC, goes to the
 * least loaded QP, counting the CONNECTs that wait for one.
 */
struct rs_qp *rs_qp_choose(struct rs_peer *peer, const struct rs_file *rf)
{
	unsigned int want = READ_ONCE(rs_qps_per_peer), n = 0;
	bool affine = want > 1 && !READ_ONCE(rs_sched_flat);
	u32 load, best_load = U32_MAX;
	struct rs_qp *qp, *best = NULL;
	enum rs_qp_state state;

	lockdep_assert_held(&rs_peers_lock);
	list_for_each_entry(qp, &peer->qps, peer_node) {
		state = READ_ONCE(qp->state);
		if (state == RS_QP_DOWN || qp->loop ||
		    (state == RS_QP_CONNECTING && !qp->active))
			continue;
		if (affine && rs_qp_has_file(qp, rf)) {
			best = qp;
			goto out;
		}
		/* Past rs_qps_per_peer, lowered since: no new file's ACs. */
		if (n++ >= want)
			continue;
		load = READ_ONCE(qp->nr_acs) + atomic_read(&qp->nr_waiters);
		if (load < best_load || (load == best_load && state == RS_QP_UP)) {
			best = qp;
			best_load = load;
		}
	}
	if (n < want && best_load && !rs_qps_capped(peer))
		return NULL;
out:
	if (best)
		best->last_rf = rf;
	return best;
}

/*
 * Called with rs_peers_lock held: @peer has as many QPs as it may have, or
 * the host has (rs_max_qps_per_peer, rs_max_qps).  QPs going down count
 * until they are gone.
 */
bool rs_qps_capped(struct rs_peer *peer)
{
	lockdep_assert_held(&rs_peers_lock);
	return atomic_read(&peer->nr_qps) >= READ_ONCE(rs_max_qps_per_peer) ||
	       atomic_read(&rs_nr_qps) >= READ_ONCE(rs_max_qps);
}

/*
 * ib_client.remove: take down every QP on @rdev and wait until none of them
 * holds a verbs resource.  QPs still connecting have no QP number yet: they
 * are found through the peers.
 */
void rs_qps_down_device(struct rs_device *rdev)
{
	rs_peers_down(rdev);
	/* Down works of QPs taken down by now have finished after this. */
	flush_workqueue(rs_wq);
	WARN_ON(atomic_read(&rdev->nr_qps));
}
