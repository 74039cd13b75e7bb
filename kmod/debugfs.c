// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: debugfs, for root.
 *
 *   /sys/kernel/debug/rdmashare/peers/<addr>
 *   /sys/kernel/debug/rdmashare/listeners
 *
 * listeners: a line per listening port, with the user and process that own
 * it and its backlog.  peers: one file per peer: its shared QPs and, for each, the ACs pinned to it
 * with their owner, state and send side (weight, band, credits, queued
 * bytes, the scheduler's deficit) and counters.  A snapshot per QP, under
 * that QP's lock; the format is for people and may change.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "transport.h"

static struct dentry *rs_debugfs_root;
static struct dentry *rs_debugfs_peers;

static const char *rs_ac_state_name(enum rs_ac_state state)
{
	switch (state) {
	case RS_AC_LISTEN:
		return "listen";
	case RS_AC_CONNECTING:
		return "connecting";
	case RS_AC_OPEN:
		return "open";
	default:
		return "closed";
	}
}

static const char *rs_qp_state_name(enum rs_qp_state state)
{
	switch (state) {
	case RS_QP_CONNECTING:
		return "connecting";
	case RS_QP_UP:
		return "up";
	default:
		return "down";
	}
}

/* Called with @qp's lock held. */
static void rs_debugfs_show_ac(struct seq_file *m, struct rs_ac *ac)
{
	u64 queued;
	u32 ops = rs_ac_queued(ac, &queued);

	seq_printf(m, "  conn %u remote %u pid %d comm %s ac %u port %u cport %u state %s%s%s%s\n",
		   ac->id, ac->remote_id, ac->rf->tgid, ac->rf->comm, ac->fid, ac->port, ac->cport,
		   rs_ac_state_name(READ_ONCE(ac->state)),
		   ac->shut_queued ? " shut" : "",
		   READ_ONCE(ac->peer_shut) ? " peer_shut" : "",
		   READ_ONCE(ac->peer_closed) ? " peer_closed" : "");
	seq_printf(m, "    weight %u band %u app_weight %u credits %u rx_slots %u queued_ops %u queued_bytes %llu deficit %lld\n",
		   ac->se.dn.weight, ac->se.band, READ_ONCE(ac->rf->sched_weight),
		   ac->send_credits, READ_ONCE(ac->rx_reserved), ops, queued,
		   ac->se.dn.deficit);
	seq_printf(m, "    tx_msgs %llu tx_bytes %llu tx_chunks %llu credit_stalls %llu\n",
		   ac->tx_msgs, ac->tx_bytes, ac->tx_chunks, ac->credit_stalls);
	/*
	 * Slots on demand (credit.c): read without the file's rx_lock;
	 * rx_granted: version 4, slots the peer holds credits for.
	 */
	seq_printf(m, "    credits_out %u want_sent %d rx_held %u rx_granted %u%s%s%s\n",
		   ac->credits_out, ac->want_sent, READ_ONCE(ac->rx_held), ac->rx_sent.n,
		   list_empty_careful(&ac->rx_want_node) ? "" : " wanting",
		   READ_ONCE(ac->rx_peer_wants) ? " peer_wants" : "",
		   READ_ONCE(ac->rx_reclaim) ? " reclaim" : "");
}

static int rs_debugfs_peer_show(struct seq_file *m, void *v)
{
	struct rs_peer *peer = m->private;
	struct rs_qp *qp;
	struct rs_ac *ac;
	u32 quar;

	seq_printf(m, "peer %pISc qps %d acs %d\n", &peer->addr,
		   atomic_read(&peer->nr_qps), atomic_read(&peer->nr_acs));
	mutex_lock(&peer->qps_lock);
	list_for_each_entry(qp, &peer->qps, peer_node) {
		spin_lock_irq(&qp->lock);
		quar = 0;
		list_for_each_entry(ac, &qp->quarantined, quar_node)
			quar++;
		seq_printf(m, "qp %u %s %s%s acs %u inflight %u inflight_bytes %u tx_free %u quarantined %u drain_kBps %u version %u\n",
			   qp->qp_num, rs_qp_state_name(qp->state),
			   qp->active ? "active" : "passive", qp->loop ? " loop" : "",
			   qp->nr_acs, qp->tx_inflight, qp->tx_inflight_bytes,
			   qp->nr_tx_free, quar, qp->drain.rate, READ_ONCE(qp->version));
		list_for_each_entry(ac, &qp->acs, qp_node)
			rs_debugfs_show_ac(m, ac);
		spin_unlock_irq(&qp->lock);
	}
	mutex_unlock(&peer->qps_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rs_debugfs_peer);

/*
 * Called with rs_peers_lock held.  The file's show() takes the peer's
 * qps_lock, never rs_peers_lock, so removing it under that lock (which
 * waits for readers) is safe.  Without debugfs the peer works all the same.
 */
void rs_debugfs_add_peer(struct rs_peer *peer)
{
	char name[64];		/* an IPv6 address takes at most 45 */

	snprintf(name, sizeof(name), "%pISc", &peer->addr);
	peer->debugfs = debugfs_create_file(name, 0400, rs_debugfs_peers, peer,
					    &rs_debugfs_peer_fops);
}

void rs_debugfs_del_peer(struct rs_peer *peer)
{
	debugfs_remove(peer->debugfs);
	peer->debugfs = NULL;
}

static int rs_debugfs_listeners_show(struct seq_file *m, void *v)
{
	rs_listeners_show(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rs_debugfs_listeners);

void rs_debugfs_init(void)
{
	rs_debugfs_root = debugfs_create_dir(KBUILD_MODNAME, NULL);
	rs_debugfs_peers = debugfs_create_dir("peers", rs_debugfs_root);
	debugfs_create_file("listeners", 0400, rs_debugfs_root, NULL,
			    &rs_debugfs_listeners_fops);
}

void rs_debugfs_exit(void)
{
	debugfs_remove(rs_debugfs_root);
}
