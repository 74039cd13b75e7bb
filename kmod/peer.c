// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: remote peers.  A peer is a remote address; it owns the shared
 * QPs towards that address (qp.c, cm.c).  Peers live while a QP does, with a
 * sysfs directory of their counters (sysfs.c), which go with them.
 */
#include <linux/inet.h>
#include <linux/slab.h>
#include <rdma/ib_addr.h>

#include "transport.h"

/* Protects rs_peers and every peer's list of QPs. */
DEFINE_MUTEX(rs_peers_lock);
static LIST_HEAD(rs_peers);

/* Same address, whatever the ports. */
bool rs_addr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return ipv6_addr_equal(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr);
}

/* Called with rs_peers_lock held: find or create the peer at @addr. */
struct rs_peer *rs_peer_get(const struct sockaddr *addr)
{
	struct rs_peer *peer;

	lockdep_assert_held(&rs_peers_lock);
	list_for_each_entry(peer, &rs_peers, node) {
		if (rs_addr_equal((struct sockaddr *)&peer->addr, addr)) {
			kref_get(&peer->ref);
			return peer;
		}
	}
	peer = kzalloc(sizeof(*peer), GFP_KERNEL);
	if (!peer)
		return NULL;
	if (rs_stats_init(&peer->stats)) {
		kfree(peer);
		return NULL;
	}
	kref_init(&peer->ref);
	INIT_LIST_HEAD(&peer->qps);
	mutex_init(&peer->qps_lock);
	spin_lock_init(&peer->gate_lock);
	rs_gate_init(&peer->gate);
	memcpy(&peer->addr, addr, rdma_addr_size(addr));
	rs_sysfs_init_peer(peer);
	rs_sysfs_add_peer(peer);
	rs_debugfs_add_peer(peer);
	list_add(&peer->node, &rs_peers);
	return peer;
}

/* Called with rs_peers_lock held: @qp joins @peer's QPs. */
void rs_peer_add_qp(struct rs_peer *peer, struct rs_qp *qp)
{
	lockdep_assert_held(&rs_peers_lock);
	mutex_lock(&peer->qps_lock);
	list_add_tail(&qp->peer_node, &peer->qps);
	mutex_unlock(&peer->qps_lock);
	atomic_inc(&peer->nr_qps);
	atomic_inc(&rs_nr_qps);
}

/* Called with rs_peers_lock held: @qp leaves them; false if it was not there. */
bool rs_peer_del_qp(struct rs_peer *peer, struct rs_qp *qp)
{
	bool listed;

	lockdep_assert_held(&rs_peers_lock);
	mutex_lock(&peer->qps_lock);
	listed = !list_empty(&qp->peer_node);
	list_del_init(&qp->peer_node);
	mutex_unlock(&peer->qps_lock);
	if (listed) {
		atomic_dec(&peer->nr_qps);
		atomic_dec(&rs_nr_qps);
	}
	return listed;
}

static void rs_peer_release(struct kref *ref)
{
	struct rs_peer *peer = container_of(ref, struct rs_peer, ref);

	list_del(&peer->node);
	/* Under the lock: a new peer at this address gets the names. */
	rs_debugfs_del_peer(peer);
	rs_sysfs_del_peer(peer);
	mutex_unlock(&rs_peers_lock);
	WARN_ON(!list_empty(&peer->qps));
	rs_sysfs_put_peer(peer);
}

void rs_peer_put(struct rs_peer *peer)
{
	kref_put_mutex(&peer->ref, rs_peer_release, &rs_peers_lock);
}

/* Call @fn on every QP of every peer, with rs_peers_lock held. */
static void rs_peers_apply(void (*fn)(struct rs_qp *qp))
{
	struct rs_peer *peer;
	struct rs_qp *qp;

	mutex_lock(&rs_peers_lock);
	list_for_each_entry(peer, &rs_peers, node)
		list_for_each_entry(qp, &peer->qps, peer_node)
			fn(qp);
	mutex_unlock(&rs_peers_lock);
}

/* rs_idle_timeout_ms changed: restart the idle timers with the new value. */
void rs_peers_idle_changed(void)
{
	rs_peers_apply(rs_qp_idle_changed);
}

/* rs_keepalive_ms changed: every QP up probes with the new period. */
void rs_peers_keepalive_changed(void)
{
	rs_peers_apply(rs_qp_keepalive_changed);
}

/* A scheduler tunable changed: every QP uses the new values from now on. */
void rs_qps_sched_changed(void)
{
	rs_peers_apply(rs_qp_sched_changed);
}

/* Take down every QP (on @rdev, or everywhere when NULL). */
void rs_peers_down(struct rs_device *rdev)
{
	struct rs_peer *peer;
	struct rs_qp *qp;

	mutex_lock(&rs_peers_lock);
	list_for_each_entry(peer, &rs_peers, node)
		list_for_each_entry(qp, &peer->qps, peer_node)
			if (!rdev || !qp->rdev || qp->rdev == rdev)
				rs_qp_down(qp, -ENODEV);
	mutex_unlock(&rs_peers_lock);
}
