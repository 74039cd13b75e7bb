// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: shared RC QPs and their connection management (rdma_cm).
 *
 * The module listens on one rdma_cm port (module parameter "cm_port") on
 * every address.  The first AC towards a peer creates an active QP
 * (resolve address, resolve route, connect); later ACs reuse the peer's QPs,
 * up to rs_qps_per_peer of them, each AC on the least loaded one.  A
 * CONNECT_REQUEST from a peer creates a passive QP, which this host's ACs
 * use as well.  All QPs of a device share its SRQ; each has its own CQ.  A
 * QP that has had no AC for rs_idle_timeout_ms is disconnected.
 *
 * rdmashare creates its QPs and CQs and moves the QPs through INIT, RTR and
 * RTS itself, with the attributes rdma_cm derives from the connection, so
 * that ib_core's resource tracking ("rdma resource show") names this module
 * as their owner, not rdma_cm or ib_core.  The active side therefore gets
 * CONNECT_RESPONSE, not ESTABLISHED, and answers it with rdma_accept().
 *
 * Teardown order (rs_qp_down_work): mark the QP down, disconnect, fail
 * every pinned AC, unlist it from the peer and the device, drain the send
 * queue (every posted TX completes and drops its references), stop the
 * sender, destroy the QP (then the slots kept for closed ACs are free:
 * rs_qp_quarantine_end()) and the cm_id, free the CQ and the TX buffers.
 * What is left is memory that ACs may still point to, freed with the last
 * reference.  rdma_cm handlers never destroy their own cm_id once
 * a QP owns it: the down work does, in process context.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in6.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <net/sock.h>

#include <rdma/ib_cm.h>

#include "trace.h"
#include "transport.h"

unsigned int rs_cm_port = 18861;
module_param_named(cm_port, rs_cm_port, uint, 0444);
MODULE_PARM_DESC(cm_port, "rdma_cm port rdmashare listens on and connects to (18861)");

#define RS_CM_TIMEOUT_MS	5000
/*
 * Transport retries before a QP fails: a lost peer is noticed after about
 * (retries + 1) ACK timeouts.  Not 7, which rxe takes as "forever".
 */
#define RS_RETRY_COUNT		6
/*
 * RNR retries: finite (7 would be "forever"), so that a peer that posts no
 * receives costs only its own QP.  rdma_cm's minimum RNR timer is the
 * largest (655 ms): a QP fails after about 4 s of RNR NAKs in a row, which
 * with credits only a peer that takes nothing, or a receive path stalled as
 * long, causes.
 */
#define RS_RNR_RETRY_COUNT	6
/*
 * Private data of the REQ and of the REP: the newest protocol version the
 * active side speaks, and in the REP the one the passive side chose (the
 * lower of the two newest); from version 2, the size of the sender's
 * receive buffers, which bounds a batch (proto.h).  Version 1 sends the
 * first four bytes only.
 */
struct rs_cm_priv {
	u8 version;
	u8 resv[3];
	__be32 rx_size;
} __packed;

#define RS_CM_PRIV_V1_LEN	4

/*
 * The version and the peer's receive buffer size from its private data;
 * @newest is the newest the other side allows (the REP must not exceed the
 * REQ's).  A peer that sends none, an older version than this host speaks,
 * or receive buffers too small for a control record is refused.
 */
static int rs_cm_priv_parse(struct rs_qp *qp, const void *data, u8 len, u8 newest)
{
	const struct rs_cm_priv *priv = data;
	u32 rx_size;

	if (!data || len < RS_CM_PRIV_V1_LEN || priv->version < RS_PROTO_VERSION_MIN)
		return -EPROTO;
	qp->version = min(priv->version, newest);
	qp->peer_rx_size = 0;
	if (qp->version < 2)
		return 0;
	if (len < sizeof(*priv))
		return -EPROTO;
	rx_size = be32_to_cpu(priv->rx_size);
	if (rx_size < RS_HDR_LEN + RS_CONN_PARAMS_LEN)
		return -EPROTO;
	qp->peer_rx_size = min_t(u32, rx_size, RS_HDR_LEN + RS_PROTO_MAX_CHUNK);
	return 0;
}

/* This host's private data for @version. */
static void rs_cm_priv_init(struct rs_qp *qp, u8 version, struct rs_cm_priv *priv,
			    struct rdma_conn_param *param)
{
	memset(priv, 0, sizeof(*priv));
	priv->version = version;
	priv->rx_size = cpu_to_be32(qp->rdev->rx_buf_size);
	param->private_data = priv;
	param->private_data_len = version < 2 ? RS_CM_PRIV_V1_LEN : sizeof(*priv);
}

static struct rdma_cm_id *rs_listen_id;
struct workqueue_struct *rs_wq;

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
	kfree(qp);
	rs_peer_put(peer);
}

void rs_qp_put(struct rs_qp *qp)
{
	kref_put(&qp->ref, rs_qp_release);
}

static void rs_qp_down_work(struct work_struct *work);
static void rs_qp_connect_work(struct work_struct *work);

/*
 * A QP that carries ACs sends a KEEPALIVE every rs_keepalive_ms: RC retries
 * then notice a peer that is gone, even when nothing else is in flight.
 */
static void rs_qp_keepalive(struct work_struct *work)
{
	struct rs_qp *qp = container_of(to_delayed_work(work), struct rs_qp, keepalive);
	unsigned int ms = READ_ONCE(rs_keepalive_ms);
	bool ping, stuck;
	struct rs_ac *ac;

	spin_lock_irq(&qp->lock);
	if (qp->state != RS_QP_UP) {
		spin_unlock_irq(&qp->lock);
		return;
	}
	ping = !list_empty(&qp->acs);
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
	if (ms)
		queue_delayed_work(rs_wq, &qp->keepalive, msecs_to_jiffies(ms));
}

/* Called with rs_peers_lock held: rs_keepalive_ms changed. */
void rs_qp_keepalive_changed(struct rs_qp *qp)
{
	unsigned int ms = READ_ONCE(rs_keepalive_ms);

	spin_lock_irq(&qp->lock);
	if (qp->state == RS_QP_UP) {
		if (ms)
			mod_delayed_work(rs_wq, &qp->keepalive, msecs_to_jiffies(ms));
		else
			cancel_delayed_work(&qp->keepalive);
	}
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
 */
static void rs_qp_idle(struct work_struct *work)
{
	struct rs_qp *qp = container_of(to_delayed_work(work), struct rs_qp, idle_work);
	bool idle;

	mutex_lock(&rs_peers_lock);
	spin_lock_irq(&qp->lock);
	idle = qp->state == RS_QP_UP && !qp->nr_acs && !atomic_read(&qp->nr_waiters) &&
	       READ_ONCE(rs_idle_timeout_ms);
	spin_unlock_irq(&qp->lock);
	if (idle)
		rs_qp_down(qp, -ETIMEDOUT);
	mutex_unlock(&rs_peers_lock);
}

/* Called with rs_peers_lock held: rs_idle_timeout_ms changed. */
void rs_qp_idle_changed(struct rs_qp *qp)
{
	spin_lock_irq(&qp->lock);
	if (READ_ONCE(rs_idle_timeout_ms))
		rs_qp_arm_idle(qp);
	else
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

static struct rs_qp *rs_qp_alloc(struct rs_peer *peer, bool active)
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
static int rs_qp_ready(struct rs_qp *qp)
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
static int rs_qp_create_ib(struct rs_qp *qp)
{
	struct ib_device *ibdev = qp->cm_id->device;
	struct ib_qp_init_attr attr = {};
	int ret;

	/* rs_ib_remove() sets removing under the same lock, then takes the
	 * device's QPs down: a QP created before is among them.
	 */
	lockdep_assert_held(&rs_peers_lock);
	qp->rdev = rs_device_get_by_ibdev(ibdev);
	if (!qp->rdev || !qp->rdev->srq || qp->rdev->removing)
		return -ENODEV;

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
	qp->cq = ib_alloc_cq_any(ibdev, qp, qp->cq_size, IB_POLL_WORKQUEUE);
	if (IS_ERR(qp->cq)) {
		ret = PTR_ERR(qp->cq);
		qp->cq = NULL;
		return ret;
	}

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
	ib_free_cq(qp->cq);
	qp->cq = NULL;
	return ret;
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
		ib_free_cq(qp->cq);
		rs_qp_tx_free(qp);
	}
	qp->cq = NULL;
	/* Its completions are handled or dropped: the device may renew its SRQ. */
	if (had_qp)
		rs_device_qp_destroyed(qp->rdev);

	if (listed)
		rs_qp_put(qp);		/* the peer list's reference */
	rs_qp_put(qp);			/* rs_qp_down()'s */
}

static int rs_cm_connect_req(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct rs_cm_priv *priv = ev->param.conn.private_data;
	struct sockaddr *src = (struct sockaddr *)&id->route.addr.dst_addr;
	struct rdma_conn_param param = {};
	struct rs_cm_priv reply;
	struct rs_peer *peer;
	struct rs_qp *qp;
	int ret;

	if (ev->param.conn.private_data_len < RS_CM_PRIV_V1_LEN ||
	    priv->version < RS_PROTO_VERSION_MIN) {
		pr_warn_ratelimited("rejected a peer speaking another protocol\n");
		rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		return 1;
	}
	/* Only a peer's rdmashare: see rs_cm_bind_secure(). */
	if (rs_addr_port(src) >= PROT_SOCK) {
		pr_warn_ratelimited("rejected %pISc: port %u is not a privileged one\n",
				    src, rs_addr_port(src));
		atomic_long_inc(&rs_refused_peers);
		rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		return 1;
	}

	mutex_lock(&rs_peers_lock);
	peer = rs_peer_get(src);
	if (!peer) {
		mutex_unlock(&rs_peers_lock);
		goto reject;
	}
	if (rs_qps_capped(peer)) {
		pr_warn_ratelimited("rejected %pISc: QP limit reached\n", src);
		atomic_long_inc(&rs_refused_peers);
		mutex_unlock(&rs_peers_lock);
		rs_peer_put(peer);
		goto reject;
	}
	qp = rs_qp_alloc(peer, false);
	if (!qp) {
		mutex_unlock(&rs_peers_lock);
		rs_peer_put(peer);
		goto reject;
	}
	qp->cm_id = id;
	qp->loop = rs_addr_equal((struct sockaddr *)&id->route.addr.src_addr,
				 (struct sockaddr *)&id->route.addr.dst_addr);
	id->context = qp;
	ret = rs_cm_priv_parse(qp, priv, ev->param.conn.private_data_len, RS_PROTO_VERSION);
	if (ret) {
		pr_warn_ratelimited("rejected %pISc: bad protocol parameters\n", src);
		goto out_unlock;
	}
	ret = rs_qp_create_ib(qp);
	if (ret)
		goto out_unlock;
	kref_get(&qp->ref);		/* the peer list's */
	rs_peer_add_qp(peer, qp);
	mutex_unlock(&rs_peers_lock);

	ret = rs_qp_ready(qp);
	if (ret) {
		rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	} else {
		rs_cm_priv_init(qp, qp->version, &reply, &param);
		param.qp_num = qp->qp_num;
		param.srq = 1;
		param.rnr_retry_count = RS_RNR_RETRY_COUNT;
		param.retry_count = RS_RETRY_COUNT;
		ret = rdma_accept(id, &param);	/* rejects if it fails */
	}
	if (ret) {
		rs_qp_down(qp, ret);
		/* The down work destroys the id. */
	}
	rs_qp_put(qp);
	return 0;

out_unlock:
	mutex_unlock(&rs_peers_lock);
	/* The handler's return value destroys the id, not the free work. */
	qp->cm_id = NULL;
	rs_qp_put(qp);
reject:
	rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	return 1;
}

/* The connection is up: the QP's ACs may send. */
static void rs_qp_established(struct rs_qp *qp)
{
	unsigned int ms;
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
	ms = READ_ONCE(rs_keepalive_ms);
	if (up && ms)
		queue_delayed_work(rs_wq, &qp->keepalive, msecs_to_jiffies(ms));
}

static int rs_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rs_qp *qp = id->context;
	struct rdma_conn_param param = {};
	struct rs_cm_priv priv;
	int ret;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return rs_cm_connect_req(id, ev);
	if (!qp)		/* the listener */
		return 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, RS_CM_TIMEOUT_MS);
		if (ret)
			rs_qp_down(qp, ret);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (READ_ONCE(qp->state) == RS_QP_DOWN)
			break;
		mutex_lock(&rs_peers_lock);
		ret = rs_qp_create_ib(qp);
		mutex_unlock(&rs_peers_lock);
		if (!ret) {
			rs_cm_priv_init(qp, RS_PROTO_VERSION, &priv, &param);
			param.qp_num = qp->qp_num;
			param.srq = 1;
			param.rnr_retry_count = RS_RNR_RETRY_COUNT;
			param.retry_count = RS_RETRY_COUNT;
			ret = rdma_connect_locked(id, &param);
		}
		if (ret)
			rs_qp_down(qp, ret);
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		/* The peer's REP: ready the QP, then send the RTU. */
		if (READ_ONCE(qp->state) == RS_QP_DOWN) {
			/* The down work may be destroying the QP. */
			rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
			break;
		}
		ret = rs_cm_priv_parse(qp, ev->param.conn.private_data,
				       ev->param.conn.private_data_len, RS_PROTO_VERSION);
		if (ret)
			pr_warn_ratelimited("QP %u: the peer's REP has bad protocol parameters\n",
					    qp->qp_num);
		else
			ret = rs_qp_ready(qp);
		if (ret)
			rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		else
			ret = rdma_accept(id, NULL);	/* rejects if it fails */
		if (ret)
			rs_qp_down(qp, ret);
		else
			rs_qp_established(qp);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		rs_qp_established(qp);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		rs_qp_down(qp, -EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
		rs_qp_down(qp, -ETIMEDOUT);
		break;
	case RDMA_CM_EVENT_REJECTED:
		rs_qp_down(qp, -ECONNREFUSED);
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		rs_qp_down(qp, -ECONNRESET);
		break;
	default:
		break;
	}
	return 0;
}

/*
 * Called with rs_peers_lock held: the QP of @peer a new AC should use, or
 * NULL when a new one should be connected.  Up to rs_qps_per_peer QPs (up,
 * or being connected by this host) carry the ACs; each new AC goes to the
 * least loaded, counting the CONNECTs that wait for a QP.
 */
static struct rs_qp *rs_qp_choose(struct rs_peer *peer)
{
	unsigned int want = READ_ONCE(rs_qps_per_peer), n = 0;
	u32 load, best_load = U32_MAX;
	struct rs_qp *qp, *best = NULL;
	enum rs_qp_state state;

	lockdep_assert_held(&rs_peers_lock);
	list_for_each_entry(qp, &peer->qps, peer_node) {
		state = READ_ONCE(qp->state);
		if (state == RS_QP_DOWN || qp->loop ||
		    (state == RS_QP_CONNECTING && !qp->active))
			continue;
		n++;
		load = READ_ONCE(qp->nr_acs) + atomic_read(&qp->nr_waiters);
		if (load < best_load || (load == best_load && state == RS_QP_UP)) {
			best = qp;
			best_load = load;
		}
	}
	if (n < want && best_load && !rs_qps_capped(peer))
		return NULL;
	return best;
}

/*
 * Peer authentication (Documentation/design.rst, "Security").  A CONNECT
 * REQUEST is accepted only from a privileged port (below PROT_SOCK), which
 * only a process with CAP_NET_BIND_SERVICE can bind, as NFS's "secure
 * ports": what connects is the peer's rdmashare (or its root), never a user
 * process.  An active QP's cm_id is therefore bound to one, from the connect
 * work (a kernel thread has the capability whoever's CONNECT started it).
 * With SO_REUSEADDR semantics among rdmashare's ids, so that every QP need
 * not have a port of its own; the ports are still spread over the range,
 * and one that another privileged process holds is skipped.
 */
#define RS_SECURE_PORT_MIN	665
#define RS_SECURE_PORT_MAX	(PROT_SOCK - 1)

static atomic_t rs_next_port = ATOMIC_INIT(0);
atomic_long_t rs_refused_peers = ATOMIC_LONG_INIT(0);
atomic_t rs_nr_qps = ATOMIC_INIT(0);

u16 rs_addr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
}

static void rs_addr_set_port(struct sockaddr_storage *ss, u16 port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static int rs_cm_bind_secure(struct rdma_cm_id *id, sa_family_t family)
{
	const u32 n = RS_SECURE_PORT_MAX - RS_SECURE_PORT_MIN + 1;
	struct sockaddr_storage any = { .ss_family = family };
	u32 i, first;
	int ret;

	ret = rdma_set_reuseaddr(id, 1);
	if (ret)
		return ret;
	first = (u32)atomic_inc_return(&rs_next_port);
	for (i = 0; i < n; i++) {
		rs_addr_set_port(&any, RS_SECURE_PORT_MIN + (first + i) % n);
		ret = rdma_bind_addr(id, (struct sockaddr *)&any);
		if (ret != -EADDRINUSE && ret != -EADDRNOTAVAIL)
			return ret;
	}
	return ret;
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
 * An active QP's first step, bind and address resolution, off the caller's
 * CONNECT: the down work cancels it (or waits for it) before it destroys the
 * cm_id, so that no setup call runs on a cm_id being destroyed.
 */
static void rs_qp_connect_work(struct work_struct *work)
{
	struct rs_qp *qp = container_of(work, struct rs_qp, connect_work);
	struct sockaddr_storage dst;
	int ret;

	if (READ_ONCE(qp->state) == RS_QP_DOWN)
		goto out_put;
	memcpy(&dst, &qp->peer->addr, sizeof(dst));
	rs_addr_set_port(&dst, rs_cm_port);
	ret = rs_cm_bind_secure(qp->cm_id, dst.ss_family);
	if (!ret)
		ret = rdma_resolve_addr(qp->cm_id, NULL, (struct sockaddr *)&dst,
					RS_CM_TIMEOUT_MS);
	if (ret) {
		pr_warn_ratelimited("cannot connect to %pISc: %d\n", &dst, ret);
		rs_qp_down(qp, ret);
	}
out_put:
	rs_qp_put(qp);
}

/*
 * A QP to @peer that is up, connecting one if needed, waiting at most
 * @timeout jiffies.  Returns it with a reference, counted as a waiter
 * until the caller calls rs_qp_unwait(); or NULL and *@err.
 */
struct rs_qp *rs_qp_get_up(struct rs_peer *peer, long timeout, int *err)
{
	struct rs_qp *qp;
	bool down;
	long left;
	int ret;

	mutex_lock(&rs_peers_lock);
	qp = rs_qp_choose(peer);
	if (qp) {
		kref_get(&qp->ref);
		atomic_inc(&qp->nr_waiters);
		mutex_unlock(&rs_peers_lock);
		goto wait;
	}

	ret = -ENOBUFS;
	if (rs_qps_capped(peer))
		goto out_unlock;
	ret = -ENOMEM;
	qp = rs_qp_alloc(peer, true);
	if (!qp)
		goto out_unlock;
	kref_get(&peer->ref);
	qp->cm_id = rdma_create_id(&init_net, rs_cm_handler, qp, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(qp->cm_id)) {
		ret = PTR_ERR(qp->cm_id);
		qp->cm_id = NULL;
		rs_qp_put(qp);
		goto out_unlock;
	}
	kref_get(&qp->ref);		/* the peer list's; the first is ours */
	atomic_inc(&qp->nr_waiters);
	rs_peer_add_qp(peer, qp);
	kref_get(&qp->ref);		/* the connect work's */
	queue_work(rs_wq, &qp->connect_work);
	mutex_unlock(&rs_peers_lock);

wait:
	left = wait_event_interruptible_timeout(qp->wait, qp->state != RS_QP_CONNECTING,
						timeout);
	if (left > 0 && qp->state == RS_QP_UP)
		return qp;
	if (left < 0) {
		*err = -EINTR;
	} else if (!left) {
		*err = -ETIMEDOUT;
		/*
		 * rdma_cm may retry a REQ to a silent peer for minutes: give
		 * up on this QP so that the next CONNECT starts afresh, unless
		 * other CONNECTs still wait for it (theirs may be longer).
		 */
		mutex_lock(&rs_peers_lock);
		spin_lock_irq(&qp->lock);
		down = qp->state == RS_QP_CONNECTING && atomic_read(&qp->nr_waiters) == 1;
		spin_unlock_irq(&qp->lock);
		if (down)
			rs_qp_down(qp, -ETIMEDOUT);
		mutex_unlock(&rs_peers_lock);
	} else {
		*err = qp->error ?: -ECONNRESET;
	}
	rs_qp_unwait(qp);
	rs_qp_put(qp);
	return NULL;

out_unlock:
	mutex_unlock(&rs_peers_lock);
	*err = ret;
	return NULL;
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

int rs_cm_init(void)
{
	if (!rs_cm_port || rs_cm_port > 65535) {
		pr_err("cm_port=%u: not a port\n", rs_cm_port);
		return -EINVAL;
	}
	rs_wq = alloc_workqueue("rdmashare", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!rs_wq)
		return -ENOMEM;
	return 0;
}

/*
 * Listen for peers, once the devices are known; rs_cm_unlisten() stops
 * before they are released, so that no CONNECT REQUEST creates a QP on a
 * device being removed at module exit.
 */
int rs_cm_listen(void)
{
	struct sockaddr_in6 any = {
		.sin6_family = AF_INET6,
		.sin6_addr = IN6ADDR_ANY_INIT,
		.sin6_port = htons(rs_cm_port),
	};
	int ret;

	rs_listen_id = rdma_create_id(&init_net, rs_cm_handler, NULL, RDMA_PS_TCP,
				      IB_QPT_RC);
	if (IS_ERR(rs_listen_id))
		return PTR_ERR(rs_listen_id);
	ret = rdma_set_afonly(rs_listen_id, 0);
	if (ret)
		goto out_destroy_id;
	ret = rdma_bind_addr(rs_listen_id, (struct sockaddr *)&any);
	if (ret) {
		pr_err("cannot bind rdma_cm port %u: %d\n", rs_cm_port, ret);
		goto out_destroy_id;
	}
	ret = rdma_listen(rs_listen_id, 128);
	if (ret)
		goto out_destroy_id;
	return 0;

out_destroy_id:
	rdma_destroy_id(rs_listen_id);
	return ret;
}

/* No new peers: the listener's handlers have finished when this returns. */
void rs_cm_unlisten(void)
{
	rdma_destroy_id(rs_listen_id);
}

/* Module exit: every file is closed; take down the idle QPs left. */
void rs_cm_exit(void)
{
	rs_peers_down(NULL);
	flush_workqueue(rs_wq);
	destroy_workqueue(rs_wq);
}
