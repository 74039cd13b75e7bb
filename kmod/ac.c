// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: abstract connections (ACs).
 *
 * An AC is a pair of ends on two hosts, each end owned by a file, both
 * pinned to the shared QP the handshake ran on.  Its handshake, data and
 * close are messages on that QP (proto.h); no QP or rdma_cm exchange is
 * made per AC.
 *
 * Ids: each end has a host-wide connection id (rs_conns), used on the wire,
 * and a file-local id (rs_file.acs), the only one user space sees.  A file
 * cannot name another file's ACs.
 *
 * Flow control: a chunk goes only with a credit, a receive slot of the
 * receiving file promised to the AC (credit.c).
 *
 * Completions: each operation holds a CQ reservation from its SQE
 * (submit.c); an AC's CLOSED completion holds none, and waits in the kernel
 * when the CQ has no room for it (rs_ac_post_closed()), so that a file's
 * ACs are not bounded by its CQ.
 *
 * Close: a CLOSE message tells the peer that this end is gone; one flagged
 * RS_F_HALF (an RDMASHARE_OP_SHUTDOWN) only that no more data comes.  The
 * receiving end of a HALF stays open for sending and posts its CLOSED
 * completion flagged RDMASHARE_CQE_F_HALF.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/jiffies.h>
#include <linux/memcontrol.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <net/sock.h>

#include "acfile.h"
#include "actable.h"
#include "trace.h"
#include "transport.h"

/* Connection ids, host-wide; 0 is never used. */
static struct rs_actable rs_conns = RS_ACTABLE_INIT(rs_conns, true);
/* Listening ACs by service port. */
static DEFINE_XARRAY(rs_ports);

static void rs_ac_abort(struct rs_ac *ac);
static void rs_ac_unquarantine(struct rs_ac *ac);

/* ---- files ---- */

struct rs_file *rs_file_alloc(void)
{
	struct rs_file *rf;

	rf = kzalloc(sizeof(*rf), GFP_KERNEL_ACCOUNT);
	if (!rf)
		return NULL;
	rf->owner = rs_user_get(current_uid());
	if (!rf->owner) {
		kfree(rf);
		return NULL;
	}
	rf->memcg = get_mem_cgroup_from_mm(current->mm);
	rs_rings_init(rf);
	rs_sq_work_init(rf);
	rf->tgid = task_tgid_nr(current);
	get_task_comm(rf->comm, current);
	kref_init(&rf->ref);
	mutex_init(&rf->ac_lock);
	rs_actable_init(&rf->acs, false);
	rf->sched_weight = RS_SCHED_WEIGHT_DEFAULT;
	spin_lock_init(&rf->rx_lock);
	spin_lock_init(&rf->files_lock);
	INIT_LIST_HEAD(&rf->rx_wanting);
	INIT_LIST_HEAD(&rf->rx_lenders);
	rs_dma_maps_init(rf);
	return rf;
}

static void rs_file_free(struct kref *ref)
{
	struct rs_file *rf = container_of(ref, struct rs_file, ref);

	rs_actable_destroy(&rf->acs);
	rs_dma_maps_free(rf);
	rs_rings_free(rf);
	mem_cgroup_put(rf->memcg);
	rs_user_put(rf->owner);
	kfree(rf);
}

void rs_file_put(struct rs_file *rf)
{
	kref_put(&rf->ref, rs_file_free);
}

/* ---- AC objects ---- */

static void rs_ac_free(struct kref *ref)
{
	struct rs_ac *ac = container_of(ref, struct rs_ac, ref);

	if (ac->af)
		rs_acfile_free(ac);
	if (ac->qp)
		rs_qp_put(ac->qp);
	rs_user_uncharge_ac(ac->rf->owner);
	rs_file_put(ac->rf);
	kvfree(ac->tx_slots);
	kfree(ac);
}

void rs_ac_put(struct rs_ac *ac)
{
	kref_put(&ac->ref, rs_ac_free);
}

/*
 * A new AC of @rf, counted against its owner's max_acs_per_user (-EMFILE
 * past it), charged to the caller's memory cgroup (or the active one).
 */
static struct rs_ac *rs_ac_alloc(struct rs_file *rf, enum rs_ac_state state)
{
	struct rs_ac *ac;

	if (!rs_user_charge_ac(rf->owner))
		return ERR_PTR(-EMFILE);
	ac = kzalloc(sizeof(*ac), GFP_KERNEL_ACCOUNT);
	if (!ac) {
		rs_user_uncharge_ac(rf->owner);
		return ERR_PTR(-ENOMEM);
	}
	kref_init(&ac->ref);
	kref_get(&rf->ref);
	ac->rf = rf;
	ac->state = state;
	init_waitqueue_head(&ac->wait);
	INIT_LIST_HEAD(&ac->qp_node);
	INIT_LIST_HEAD(&ac->backlog);
	INIT_LIST_HEAD(&ac->backlog_node);
	INIT_LIST_HEAD(&ac->sendq);
	INIT_LIST_HEAD(&ac->ctrl_node);
	INIT_LIST_HEAD(&ac->rx_want_node);
	INIT_LIST_HEAD(&ac->rx_lend_node);
	INIT_LIST_HEAD(&ac->quar_node);
	INIT_LIST_HEAD(&ac->closed.node);
	rs_sched_entity_init(&ac->se, NULL, RS_SCHED_WEIGHT_DEFAULT, RS_BAND_NORMAL);
	return ac;
}

/* A file-local id for @ac; the table holds a reference. */
static int rs_ac_add_to_file(struct rs_file *rf, struct rs_ac *ac)
{
	int ret;

	kref_get(&ac->ref);
	mutex_lock(&rf->ac_lock);
	if (rf->closing)
		ret = -EBADF;
	else
		ret = rs_actable_add(&rf->acs, ac, &ac->fid,
				     READ_ONCE(rs_max_acs_per_file), GFP_KERNEL);
	mutex_unlock(&rf->ac_lock);
	if (ret)
		rs_ac_put(ac);
	return ret;
}

void rs_ac_del_from_file(struct rs_ac *ac)
{
	struct rs_file *rf = ac->rf;
	bool found;

	mutex_lock(&rf->ac_lock);
	found = rs_actable_del(&rf->acs, ac->fid, ac);
	mutex_unlock(&rf->ac_lock);
	if (found)
		rs_ac_put(ac);
}

static bool rs_ac_get_any(void *entry, void *arg)
{
	kref_get(&((struct rs_ac *)entry)->ref);
	return true;
}

struct rs_ac *rs_ac_lookup_fid(struct rs_file *rf, u32 fid)
{
	return rs_actable_get(&rf->acs, fid, rs_ac_get_any, NULL);
}

/* Only an AC whose id the application was given. */
static bool rs_ac_get_handed_out(void *entry, void *arg)
{
	struct rs_ac *ac = entry;

	if (!READ_ONCE(ac->handed_out))
		return false;
	kref_get(&ac->ref);
	return true;
}

/*
 * The AC @fid as the application may name it: not one whose CONNECT is
 * still running, nor one waiting in a backlog for ACCEPT.
 */
struct rs_ac *rs_ac_lookup_user(struct rs_file *rf, u32 fid)
{
	return rs_actable_get(&rf->acs, fid, rs_ac_get_handed_out, NULL);
}

/* A host-wide connection id; the table holds a reference. */
static int rs_ac_add_conn(struct rs_ac *ac)
{
	int ret;

	kref_get(&ac->ref);
	ret = rs_actable_add(&rs_conns, ac, &ac->id, U32_MAX, GFP_KERNEL);
	if (ret)
		rs_ac_put(ac);
	return ret;
}

static void rs_ac_del_conn(struct rs_ac *ac)
{
	if (rs_actable_del(&rs_conns, ac->id, ac))
		rs_ac_put(ac);
}

/* Only an AC pinned to the QP the message came on. */
static bool rs_ac_get_on_qp(void *entry, void *arg)
{
	struct rs_ac *ac = entry;

	if (ac->qp != arg)
		return false;
	kref_get(&ac->ref);
	return true;
}

/* The AC @id of a message that arrived on @qp, if it belongs there. */
struct rs_ac *rs_ac_lookup_conn(struct rs_qp *qp, u32 id)
{
	return rs_actable_get(&rs_conns, id, rs_ac_get_on_qp, qp);
}

/*
 * Undo a new AC that never opened: out of both tables, its slots back to
 * the file.  Each step is a no-op if it was not done, or if a close (the
 * file's release) did it already.
 */
static void rs_ac_discard(struct rs_ac *ac)
{
	rs_ac_del_conn(ac);
	rs_ac_del_from_file(ac);
	rs_rx_close(ac);
}

/* ---- control messages ---- */

/*
 * Called with qp->lock held: queue a control message.  Only for an AC still
 * pinned to the QP: rs_ac_finish() unpins under the same lock, and a
 * finished AC must not go back on the QP's list (it may be freed).
 */
void rs_ac_ctrl(struct rs_ac *ac, u32 bit)
{
	lockdep_assert_held(&ac->qp->lock);
	if (list_empty(&ac->qp_node))
		return;
	ac->ctrl_pending |= bit;
	if (list_empty(&ac->ctrl_node))
		list_add_tail(&ac->ctrl_node, &ac->qp->ctrl);
}

/* ---- completions ---- */

/* The completion of an operation that was queued for the sender. */
static void rs_ac_op_cqe(struct rs_ac *ac, u8 opcode, u64 user_data, int res)
{
	struct rdmashare_cqe cqe = {
		.user_data = user_data,
		.res = res,
		.ac = ac->fid,
		.type = RDMASHARE_CQE_OP,
		.opcode = opcode,
	};

	rs_cq_post(ac->rf, &cqe, RS_CQ_WAIT);
}

/*
 * The AC's CLOSED completion, with @res and @flags; @free_id: its id is
 * freed once the completion is in the CQ.  Posted now, or once the CQ has
 * room (rs_ac_flush_closed()), still before any completion for the id that
 * could come after it: none comes for the AC any more but those of the
 * application's own CLOSE, which takes this one back first
 * (rs_ac_cancel_closed()), and a new AC gets the id only once it is free.
 */
static void rs_ac_post_closed(struct rs_ac *ac, int res, u16 flags, bool free_id)
{
	/* An AC file's readers and pollers see the end in the AC itself. */
	if (ac->af) {
		if (free_id)
			rs_ac_del_from_file(ac);
		wake_up_all(&ac->wait);
		return;
	}
	ac->closed = (struct rs_cq_over) {
		.cqe = {
			.res = res,
			.ac = ac->fid,
			.type = RDMASHARE_CQE_CLOSED,
			.flags = flags,
		},
	};
	INIT_LIST_HEAD(&ac->closed.node);
	ac->closed_free_id = free_id;
	kref_get(&ac->ref);
	if (!rs_cq_post_over(ac->rf, &ac->closed))
		return;			/* the overflow list has the reference */
	if (free_id)
		rs_ac_del_from_file(ac);
	rs_ac_put(ac);
}

/* CLOSED completions that waited for CQ room, as far as there is some. */
void rs_ac_flush_closed(struct rs_file *rf)
{
	struct rs_cq_over *o, *tmp;
	struct rs_ac *ac;
	LIST_HEAD(done);

	if (list_empty_careful(&rf->cq_overflow))
		return;
	rs_cq_flush_over(rf, &done);
	list_for_each_entry_safe(o, tmp, &done, node) {
		ac = container_of(o, struct rs_ac, closed);
		list_del_init(&o->node);
		if (ac->closed_free_id)
			rs_ac_del_from_file(ac);
		rs_ac_put(ac);
	}
}

/* The application closes the AC: a CLOSED that waits for room is moot. */
void rs_ac_cancel_closed(struct rs_ac *ac)
{
	if (rs_cq_cancel_over(ac->rf, &ac->closed))
		rs_ac_put(ac);
}

/*
 * An operation ended: its memory goes back to the pool, then its completion
 * gives back its CQ reservation (see rs_op_get()).
 */
void rs_op_done(struct rs_ac *ac, struct rs_send *op, int res)
{
	u64 user_data = op->user_data;
	u8 opcode = op->opcode;

	if (!res && opcode == RDMASHARE_OP_SEND)
		res = op->len;
	if (op->file) {
		trace_rdmashare_op_done(ac, opcode, user_data, res);
		rs_acfile_op_done(ac, op, res);
		return;
	}
	rs_op_put(ac->rf, op);
	/*
	 * A CLOSE frees the id, after its completion (rs_ac_finish()): from
	 * that completion on, the application can no longer name the AC.
	 */
	if (opcode == RDMASHARE_OP_CLOSE) {
		WRITE_ONCE(ac->handed_out, false);
		rs_ac_cancel_closed(ac);
	}
	trace_rdmashare_op_done(ac, opcode, user_data, res);
	rs_ac_op_cqe(ac, opcode, user_data, res);
}

/* The AC's CLOSED completion: true for the one caller that may post it. */
static bool rs_ac_take_cqe(struct rs_ac *ac)
{
	bool first;

	mutex_lock(&ac->rf->ac_lock);
	first = !ac->cqe_used;
	ac->cqe_used = true;
	mutex_unlock(&ac->rf->ac_lock);
	return first;
}

/*
 * The AC is finished on this host: out of the scheduler, its queued
 * operations fail with @error, no more messages reach it.  Called once,
 * by whoever moved it to RS_AC_CLOSED.
 */
static void rs_ac_finish(struct rs_ac *ac, int error)
{
	struct rs_send *op, *tmp;
	bool close = false;
	LIST_HEAD(ops);

	if (ac->qp) {
		spin_lock_irq(&ac->qp->lock);
		rs_sched_dequeue(&ac->qp->sched, &ac->se);
		list_del_init(&ac->ctrl_node);
		ac->ctrl_pending = 0;
		list_splice_init(&ac->sendq, &ops);
		rs_qp_unpin_locked(ac->qp, ac);
		spin_unlock_irq(&ac->qp->lock);
	}
	list_for_each_entry_safe(op, tmp, &ops, node) {
		if (op->opcode == RDMASHARE_OP_CLOSE)
			close = true;
		rs_op_done(ac, op, error);
	}
	/* No RECV completion for it after this. */
	spin_lock_irq(&ac->rf->rx_lock);
	ac->rx_done = true;
	spin_unlock_irq(&ac->rf->rx_lock);
	/*
	 * Its id may be reused once it is out of the table; one in quarantine
	 * stays there, so that the peer's CLOSE finds it.
	 */
	if (!rs_rx_close(ac))
		rs_ac_del_conn(ac);
	/*
	 * Every completion of a CLOSE frees the id, a failed one too: after
	 * the last completion for the AC, so that a new AC with the id comes
	 * after them in the CQ (librdmashare relies on that order).
	 */
	if (close)
		rs_ac_del_from_file(ac);
}

/*
 * Close @ac for @error; true for the one caller that did.  The CLOSED
 * completion is posted when the application has the AC and did not close it
 * itself (@by_app), unless a HALF one was; otherwise its CQ reservation is
 * returned.  An AC still in a listener's backlog keeps the reservation:
 * ACCEPT or the listener's close decides, under the same lock.
 */
bool rs_ac_do_close(struct rs_ac *ac, int error, bool by_app)
{
	struct rs_file *rf = ac->rf;
	enum rs_ac_state old;
	bool in_backlog;

	mutex_lock(&rf->ac_lock);
	old = ac->state;
	if (old == RS_AC_CLOSED) {
		mutex_unlock(&rf->ac_lock);
		return false;
	}
	ac->error = error;
	/* An AC file's pending error, until FILE_INFO takes it (SO_ERROR). */
	if (ac->af && error)
		WRITE_ONCE(ac->af->so_error, error);
	WRITE_ONCE(ac->state, RS_AC_CLOSED);
	/* Its ACCEPT or CONNECT, still running, says what the CQ gets. */
	in_backlog = !list_empty(&ac->backlog_node) || ac->in_connect;
	mutex_unlock(&rf->ac_lock);
	wake_up_all(&ac->wait);

	rs_ac_finish(ac, error ?: -EPIPE);
	/*
	 * An application that queued a CLOSE closed the AC itself: that
	 * CLOSE's completion tells it, not a CLOSED one (which would come
	 * after the id was freed).  Read after rs_ac_finish() took the QP's
	 * lock: a CLOSE queued before is seen, none is queued after.  The
	 * peer's answer to that CLOSE can arrive before its own completion:
	 * the AC still closed by the application, and the trace says so.
	 */
	by_app = by_app || READ_ONCE(ac->close_queued);
	trace_rdmashare_ac_close(ac, error, by_app);
	if (in_backlog || !rs_ac_take_cqe(ac))
		return true;
	if (old == RS_AC_OPEN && !by_app)
		rs_ac_post_closed(ac, error, 0, false);
	return true;
}

/* The QP went down under the AC (peer lost, device removed). */
void rs_ac_qp_down(struct rs_ac *ac, int error)
{
	WRITE_ONCE(ac->qp_lost, true);
	rs_ac_do_close(ac, error ?: -ECONNRESET, false);
}

/* ---- LISTEN, CONNECT, ACCEPT ---- */

static bool rs_file_ready(struct rs_file *rf)
{
	/* Pairs with rs_rings_setup(). */
	return smp_load_acquire(&rf->ready);
}

int rs_ac_listen(struct rs_file *rf, struct rdmashare_listen *l)
{
	struct rs_ac *ac;
	int ret;

	if ((l->flags & ~RDMASHARE_LISTEN_FILES) || l->resv || l->ac ||
	    memchr_inv(&l->file, 0, sizeof(l->file)) || l->max_files || l->rx_slots)
		return -EINVAL;
	if (!l->port || l->port > 65535 || !l->backlog || l->backlog > READ_ONCE(rs_backlog_max))
		return -EINVAL;
	if (!rs_file_ready(rf))
		return -EINVAL;
	/* AC files need a file area for their send buffers. */
	if ((l->flags & RDMASHARE_LISTEN_FILES) && !rf->files_pages)
		return -EINVAL;
	/* Privileged ports as for sockets: a service there can be trusted. */
	if (l->port < PROT_SOCK && !capable(CAP_NET_BIND_SERVICE))
		return -EACCES;

	ac = rs_ac_alloc(rf, RS_AC_LISTEN);
	if (IS_ERR(ac))
		return PTR_ERR(ac);
	ac->port = l->port;
	ac->backlog_max = l->backlog;
	ac->files = l->flags & RDMASHARE_LISTEN_FILES;
	ret = rs_ac_add_to_file(rf, ac);
	if (ret)
		goto out_put;
	ret = -EMFILE;
	if (!rs_user_charge_listener(rf->owner)) {
		rs_ac_del_from_file(ac);
		goto out_put;
	}
	ret = xa_insert(&rs_ports, ac->port, ac, GFP_KERNEL_ACCOUNT);
	if (ret) {
		ret = ret == -EBUSY ? -EADDRINUSE : ret;
		rs_user_uncharge_listener(rf->owner);
		rs_ac_del_from_file(ac);
		goto out_put;
	}
	kref_get(&ac->ref);		/* the port table's */
	WRITE_ONCE(ac->handed_out, true);
	l->ac = ac->fid;
	/* Its ACs' first messages go from the completion handler. */
	rs_dma_maps_prepare(rf);
out_put:
	rs_ac_put(ac);
	return ret;
}

static int rs_addr_from_user(const struct rdmashare_addr *a,
			     struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	if (!a->port || a->port > 65535)
		return -EINVAL;
	switch (a->family) {
	case AF_INET:
		if (memchr_inv(a->addr + 4, 0, sizeof(a->addr) - 4))
			return -EINVAL;
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, a->addr, 4);
		if (ipv4_is_zeronet(sin->sin_addr.s_addr) ||
		    ipv4_is_multicast(sin->sin_addr.s_addr) ||
		    ipv4_is_lbcast(sin->sin_addr.s_addr))
			return -EINVAL;
		return 0;
	case AF_INET6:
		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, a->addr, 16);
		if (ipv6_addr_any(&sin6->sin6_addr) ||
		    ipv6_addr_is_multicast(&sin6->sin6_addr))
			return -EINVAL;
		return 0;
	}
	return -EAFNOSUPPORT;
}

void rs_addr_to_user(const struct sockaddr_storage *ss, struct rdmashare_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = ss->ss_family;
	if (ss->ss_family == AF_INET)
		memcpy(a->addr, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	else
		memcpy(a->addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
}

/**
 * rs_ac_addrs() - the addresses of @ac's two ends, as a socket names them
 * @ac: an AC that connects or was accepted
 * @local: gets this end's: the QP's address, with the service port for an
 *	accepted AC; all 0 while the AC has no QP
 * @peer: gets the peer's, with the service port for a connecting AC
 */
void rs_ac_addrs(struct rs_ac *ac, struct rdmashare_addr *local, struct rdmashare_addr *peer)
{
	struct rs_qp *qp = READ_ONCE(ac->qp);
	bool connects = !ac->accepted;

	memset(local, 0, sizeof(*local));
	if (qp && qp->local.ss_family) {
		rs_addr_to_user(&qp->local, local);
		local->port = connects ? 0 : ac->port;
	}
	if (qp)
		rs_addr_to_user(&qp->peer->addr, peer);
	else if (ac->af)
		rs_addr_to_user(&ac->af->conn_addr, peer);
	else
		memset(peer, 0, sizeof(*peer));
	peer->port = connects ? ac->port : 0;
}

/*
 * Pin @ac to @qp (taking over the caller's QP reference on success), give
 * it the receive slots it opens with, and queue its first control message.
 * -ECONNRESET if the QP is down already, -ECONNABORTED if the AC was closed
 * meanwhile (its file is going away), -ENOBUFS if a version 1 or 2 AC finds
 * no slot.  From version 4 on, the file's data area is mapped for the QP's
 * device by now, if it can be: the first CONNECT or ACCEPT names the slots'
 * rkey, and the chunks go in place from the start.  A CONNECT maps it here,
 * in the caller's context; an ACCEPT, sent from the completion handler,
 * finds what the LISTEN mapped (memreg.c).
 *
 * The AC's state is checked under its file's ac_lock, which rs_ac_do_close()
 * holds to close it: either the close sees ac->qp set and rs_ac_finish()
 * unpins the AC, or the pin sees the AC closed and leaves it alone.
 */
int rs_ac_pin(struct rs_ac *ac, struct rs_qp *qp, u32 ctrl)
{
	struct rs_dma_map *map = NULL;
	struct rs_qp_group *spare;
	int ret = 0;

	spare = kzalloc(sizeof(*spare), GFP_KERNEL_ACCOUNT);
	if (!spare)
		return -ENOMEM;
	/* Without a mapping (no memory), chunks are copied. */
	if (qp->version >= 4 && ctrl == RS_CTRL_CONNECT)
		map = rs_dma_map_get(ac->rf, qp->rdev);
	else if (qp->version >= 4)
		map = rs_dma_map_find(ac->rf, qp->rdev);
	mutex_lock(&ac->rf->ac_lock);
	spin_lock_irq(&ac->rf->rx_lock);
	spin_lock(&qp->lock);
	if (ac->state == RS_AC_CLOSED) {
		ret = -ECONNABORTED;
	} else if (qp->state == RS_QP_DOWN) {
		ret = -ECONNRESET;
	} else if (!rs_rx_open_locked(ac, qp)) {
		ret = -ENOBUFS;
	} else {
		ac->qp = qp;
		ac->map = map;
		rs_qp_pin_locked(qp, ac, &spare);
		rs_ac_ctrl(ac, ctrl);
	}
	spin_unlock(&qp->lock);
	spin_unlock_irq(&ac->rf->rx_lock);
	mutex_unlock(&ac->rf->ac_lock);
	kfree(spare);
	if (!ret)
		rs_qp_push(qp);
	return ret;
}

/*
 * The CONNECT that made @ac returns: true if the AC is open, and the
 * application has its id from now on.  Until now nothing posted a CLOSED
 * completion for it (rs_ac_do_close(), rs_ac_peer_shut()): a HALF one that
 * came meanwhile is posted now, after the chunks before it.  If not open,
 * that stays so: the CONNECT closes the AC and voids what it received.
 */
static bool rs_ac_connect_end(struct rs_ac *ac)
{
	struct rs_file *rf = ac->rf;
	bool open, half;

	mutex_lock(&rf->ac_lock);
	open = ac->state == RS_AC_OPEN;
	if (open)
		ac->in_connect = false;
	half = open && READ_ONCE(ac->peer_shut) && !ac->cqe_used;
	if (half)
		ac->cqe_used = true;
	if (open && !ac->af)
		WRITE_ONCE(ac->handed_out, true);
	mutex_unlock(&rf->ac_lock);
	if (half)
		rs_ac_post_closed(ac, 0, RDMASHARE_CQE_F_HALF, false);
	return open;
}

/*
 * Called once @ac closed: whether a chunk for it reached its file's CQ.
 * rs_ac_finish() set rx_done under the same lock: none comes after.
 */
static bool rs_ac_received(struct rs_ac *ac)
{
	bool got;

	spin_lock_irq(&ac->rf->rx_lock);
	got = ac->rx_chunks;
	spin_unlock_irq(&ac->rf->rx_lock);
	return got;
}

/*
 * One attempt at a CONNECT.  *@retry says that the AC's QP went down before
 * the peer answered, so that the peer never saw the AC or lost it with the
 * QP (an idle peer may take its QP down as the CONNECT goes out): a new
 * attempt builds a new QP.
 */
/**
 * rs_ac_new_conn() - a new AC of @rf's that is to CONNECT to @port
 * @rf: the file
 * @port: the peer's service port
 * @file: the AC is an AC file's
 * @in_connect: the CONNECT's caller decides what the CQ gets (rs_ac.in_connect)
 *
 * In both tables, CONNECTING; not pinned to a QP yet.
 *
 * Return: the AC (the caller's reference), or an ERR_PTR().
 */
struct rs_ac *rs_ac_new_conn(struct rs_file *rf, u32 port, bool file, bool in_connect)
{
	struct rs_ac *ac;
	int ret;

	ac = rs_ac_alloc(rf, RS_AC_CONNECTING);
	if (IS_ERR(ac))
		return ac;
	ac->port = port;
	ac->in_connect = in_connect;
	/* An AC file's chunks go to it from the first. */
	if (file) {
		ret = rs_acfile_attach(ac);
		if (ret)
			goto out_discard;
	}
	ret = rs_ac_add_to_file(rf, ac);
	if (ret)
		goto out_discard;
	ret = rs_ac_add_conn(ac);
	if (ret)
		goto out_discard;
	return ac;

out_discard:
	rs_ac_discard(ac);
	rs_ac_put(ac);
	return ERR_PTR(ret);
}

/*
 * A new AC that was not pinned, and is closed for @error: its tables, and
 * what it received (an AC file's), go.
 */
void rs_ac_abandon(struct rs_ac *ac, int error)
{
	rs_ac_do_close(ac, error, true);
	if (ac->af)
		rs_acfile_drain(ac);
	rs_ac_del_from_file(ac);
}

static int rs_ac_connect_once(struct rs_file *rf, struct rdmashare_connect *c,
			      const struct sockaddr_storage *ss, unsigned long deadline,
			      struct rs_acfile_res *res, bool *retry)
{
	struct rs_peer *peer;
	struct rs_qp *qp;
	struct rs_ac *ac;
	long left;
	int ret;

	ac = rs_ac_new_conn(rf, c->peer.port, res, true);
	if (IS_ERR(ac))
		return PTR_ERR(ac);

	mutex_lock(&rs_peers_lock);
	peer = rs_peer_get((struct sockaddr *)ss);
	mutex_unlock(&rs_peers_lock);
	ret = -ENOMEM;
	if (!peer)
		goto out_discard;
	qp = rs_qp_get_up(peer, max_t(long, deadline - jiffies, 1), &ret);
	rs_peer_put(peer);
	if (!qp)
		goto out_discard;
	ret = rs_ac_pin(ac, qp, RS_CTRL_CONNECT);
	if (ret) {
		rs_qp_unwait(qp);
		rs_qp_put(qp);
		*retry = ret == -ECONNRESET;
		goto out_discard;
	}
	rs_qp_unwait(qp);

	left = wait_event_interruptible_timeout(ac->wait,
						READ_ONCE(ac->state) != RS_AC_CONNECTING,
						max_t(long, deadline - jiffies, 1));
	if (rs_ac_connect_end(ac)) {
		c->ac = ac->fid;
		if (!res) {
			rs_ac_put(ac);
			return 0;
		}
		ret = rs_acfile_bind(ac, res, &c->file);
		if (!ret) {
			rs_ac_put(ac);
			return 0;
		}
		/* Opened, and closed again: nobody can have it. */
		rs_acfile_drain(ac);
		rs_ac_close_tell(ac, ret, true);
		rs_ac_del_from_file(ac);
		rs_ac_put(ac);
		return ret;
	}
	ret = left < 0 ? -EINTR : !left ? -ETIMEDOUT : ac->error;
	if (!rs_ac_do_close(ac, ret, true))
		ret = ac->error;
	/*
	 * The peer's ACCEPT may have come just before the close: its end is
	 * open and is told (a no-op if the peer never opened it, or closed
	 * it), and what it sent went to a queue or the CQ, under an id the
	 * application never learned.
	 */
	rs_ac_tell_closed(ac, false);
	*retry = READ_ONCE(ac->qp_lost);
	if (ac->af)
		rs_acfile_drain(ac);
	if (!ac->af && rs_ac_received(ac))
		rs_ac_post_closed(ac, -ECONNABORTED, RDMASHARE_CQE_F_DISCARD, true);
	else
		rs_ac_del_from_file(ac);
	rs_ac_put(ac);
	return ret;

out_discard:
	rs_ac_discard(ac);
	rs_ac_put(ac);
	return ret;
}

int rs_ac_connect(struct rs_file *rf, struct rdmashare_connect *c, struct rs_new_file *nf)
{
	struct rs_acfile_res res, *file = NULL;
	unsigned long deadline, timeout;
	struct sockaddr_storage ss;
	bool retry = false;
	int ret;

	if ((c->flags & ~(RDMASHARE_CONNECT_FILE | RDMASHARE_CONNECT_NONBLOCK)) || c->ac)
		return -EINVAL;
	/* Only an AC file can be had before the connection is made. */
	if ((c->flags & RDMASHARE_CONNECT_NONBLOCK) && !(c->flags & RDMASHARE_CONNECT_FILE))
		return -EINVAL;
	ret = rs_addr_from_user(&c->peer, &ss);
	if (ret)
		return ret;
	if (!rs_file_ready(rf))
		return -EINVAL;
	/* The AC file's send buffer and descriptor first: no AC to undo. */
	if (c->flags & RDMASHARE_CONNECT_FILE) {
		ret = rs_acfile_reserve(rf, &c->file, nf, &res);
		if (ret)
			return ret;
		file = &res;
	} else if (memchr_inv(&c->file, 0, sizeof(c->file))) {
		return -EINVAL;
	}
	timeout = msecs_to_jiffies(c->timeout_ms ?: READ_ONCE(rs_connect_timeout_ms));
	deadline = jiffies + timeout;

	if (c->flags & RDMASHARE_CONNECT_NONBLOCK)
		ret = rs_ac_connect_nb(rf, c, &ss, timeout, file);
	else
		ret = rs_ac_connect_once(rf, c, &ss, deadline, file, &retry);
	if (ret && retry && time_before(jiffies, deadline) && !signal_pending(current)) {
		retry = false;
		ret = rs_ac_connect_once(rf, c, &ss, deadline, file, &retry);
	}
	if (ret && file)
		rs_acfile_unreserve(rf, file);
	return ret;
}

/*
 * The oldest AC of @l's backlog, or NULL; *@closed if it closed there.
 * With @cqe, its CQ reservation is taken in the same critical section (*@cqe
 * says whether it was still there): a CLOSE from the peer cannot take it
 * once the AC is out of the backlog.
 */
static struct rs_ac *rs_backlog_pop(struct rs_ac *l, bool *closed, bool *cqe)
{
	struct rs_ac *ac;

	mutex_lock(&l->rf->ac_lock);
	ac = list_first_entry_or_null(&l->backlog, struct rs_ac, backlog_node);
	if (ac) {
		list_del_init(&ac->backlog_node);
		l->backlog_len--;
		*closed = ac->state == RS_AC_CLOSED;
		if (cqe) {
			*cqe = !ac->cqe_used;
			ac->cqe_used = true;
		}
	}
	mutex_unlock(&l->rf->ac_lock);
	return ac;
}

int rs_ac_accept(struct rs_file *rf, struct rdmashare_accept *a, struct rs_new_file *nf)
{
	struct rs_acfile_res res;
	struct rs_ac *l, *ac = NULL;
	bool closed = false;
	long timeout, left;
	int ret;

	if (a->flags & ~(RDMASHARE_ACCEPT_NONBLOCK | RDMASHARE_ACCEPT_FILE) || a->resv || a->ac)
		return -EINVAL;
	if ((a->flags & RDMASHARE_ACCEPT_NONBLOCK) && a->timeout_ms)
		return -EINVAL;
	l = rs_ac_lookup_user(rf, a->listen_ac);
	if (!l)
		return -ENOENT;
	/* A listener's ACs are AC files or not, and ACCEPT says which it wants. */
	if (l->state != RS_AC_LISTEN || l->files != !!(a->flags & RDMASHARE_ACCEPT_FILE)) {
		rs_ac_put(l);
		return -EINVAL;
	}
	/* An AC file's send buffer and descriptor first: none is lost then. */
	if (l->files) {
		ret = rs_acfile_reserve(rf, &a->file, nf, &res);
		if (ret) {
			rs_ac_put(l);
			return ret;
		}
	} else if (memchr_inv(&a->file, 0, sizeof(a->file))) {
		rs_ac_put(l);
		return -EINVAL;
	}

	timeout = a->timeout_ms ? msecs_to_jiffies(a->timeout_ms) : MAX_SCHEDULE_TIMEOUT;
	for (;;) {
		ac = rs_backlog_pop(l, &closed, NULL);
		if (ac || (a->flags & RDMASHARE_ACCEPT_NONBLOCK))
			break;
		left = wait_event_interruptible_timeout(l->wait,
							!list_empty(&l->backlog) ||
							READ_ONCE(l->state) != RS_AC_LISTEN,
							timeout);
		if (left <= 0 || READ_ONCE(l->state) != RS_AC_LISTEN) {
			ret = left < 0 ? -EINTR : left ? -EINVAL : -ETIME;
			goto out_unreserve;
		}
		timeout = left;
	}
	ret = -EAGAIN;
	if (!ac)
		goto out_unreserve;
	rs_ac_put(l);

	a->ac = ac->fid;
	rs_addr_to_user(&ac->qp->peer->addr, &a->peer);
	if (ac->af) {
		/* Its end, if it came, is in the AC: the file's readers see it. */
		ret = rs_acfile_bind(ac, &res, &a->file);
		if (ret) {
			rs_acfile_unreserve(rf, &res);
			rs_acfile_drain(ac);
			rs_ac_abort(ac);
			rs_ac_del_from_file(ac);
		}
		rs_ac_put(ac);		/* the backlog's */
		return ret;
	}
	WRITE_ONCE(ac->handed_out, true);
	/*
	 * An AC that closed in the backlog is handed out all the same: its
	 * CLOSED completion tells the application; so does the HALF one of a
	 * peer that shut down meanwhile (after the AC's RECVs, all in).
	 */
	if (closed && rs_ac_take_cqe(ac))
		rs_ac_post_closed(ac, ac->error, 0, false);
	else if (!closed && READ_ONCE(ac->peer_shut) && rs_ac_take_cqe(ac))
		rs_ac_post_closed(ac, 0, RDMASHARE_CQE_F_HALF, false);
	rs_ac_put(ac);			/* the backlog's */
	return 0;

out_unreserve:
	if (l->files)
		rs_acfile_unreserve(rf, &res);
	rs_ac_put(l);
	return ret;
}

/* ---- CLOSE (send.c hands it over) ---- */

/* CLOSE of a listener: no new connections; the backlog is closed. */
static void rs_ac_close_listener(struct rs_ac *l)
{
	struct rs_file *rf = l->rf;
	struct rs_ac *ac;

	if (xa_cmpxchg(&rs_ports, l->port, l, NULL, 0) == l) {
		rs_user_uncharge_listener(rf->owner);
		rs_ac_put(l);
	}
	mutex_lock(&rf->ac_lock);
	l->state = RS_AC_CLOSED;
	mutex_unlock(&rf->ac_lock);
	wake_up_all(&l->wait);
	for (;;) {
		bool closed = false, cqe = false;

		ac = rs_backlog_pop(l, &closed, &cqe);
		if (!ac)
			break;
		if (!closed)
			rs_ac_abort(ac);
		/* Nobody reads an AC file's chunks that nobody accepted. */
		if (ac->af)
			rs_acfile_drain(ac);
		/*
		 * Never the application's, but the chunks it received are in
		 * the CQ under its id: a DISCARD CLOSED after them voids them,
		 * and the id is free once it is in the CQ.
		 */
		if (cqe && ac->rx_chunks)
			rs_ac_post_closed(ac, -ECONNABORTED, RDMASHARE_CQE_F_DISCARD, true);
		else
			rs_ac_del_from_file(ac);
		rs_ac_put(ac);		/* the backlog's */
	}
}

/*
 * CLOSE: of a listener, at once; of an open AC, queued as a message for the
 * peer (rs_ac_send()); of an AC closed under the application, only its id
 * is left to free.
 */
void rs_ac_close(struct rs_ac *ac, const struct rdmashare_sqe *sqe)
{
	struct rs_file *rf = ac->rf;

	switch (READ_ONCE(ac->state)) {
	case RS_AC_LISTEN:
		rs_ac_close_listener(ac);
		rs_ac_del_from_file(ac);
		rs_complete_op(rf, sqe, 0);
		return;
	case RS_AC_OPEN:
		if (!READ_ONCE(ac->peer_closed)) {
			/*
			 * Completes when the CLOSE message went out, after a
			 * SHUTDOWN too: the peer may still send until then.
			 */
			rs_ac_send(ac, sqe);
			return;
		}
		fallthrough;
	default:
		/* Closed by the peer or by an error: only the id is left. */
		rs_ac_do_close(ac, 0, true);
		rs_ac_cancel_closed(ac);
		rs_ac_del_from_file(ac);
		rs_complete_op(rf, sqe, 0);
		return;
	}
}

/* ---- what the peer does to an AC (recv.c hands it over) ---- */

/*
 * Owe the peer a REJECT (@error) for its CONNECT, or a CLOSE (@src) for an
 * AC this host no longer has.  @own: for one of this host's ACs that a file
 * closed (bounded by the ACs, which are charged), not for what the peer
 * sent (bounded by RS_MAX_REJECTS).
 */
void rs_qp_stray(struct rs_qp *qp, u32 dst, u32 src, u32 error, bool own)
{
	struct rs_reject *rej;
	bool full = false;

	rej = kzalloc(sizeof(*rej), own ? GFP_KERNEL_ACCOUNT : GFP_KERNEL);
	if (!rej)
		return;		/* the peer's CONNECT times out */
	rej->dst = dst;
	rej->src = src;
	rej->error = error;
	rej->own = own;
	spin_lock_irq(&qp->lock);
	if (qp->state == RS_QP_DOWN) {
		/* Nothing goes out any more; the peer's ends fail with it. */
	} else if (!own && qp->nr_rejects >= RS_MAX_REJECTS) {
		/* A peer that asks faster than it takes the answers. */
		full = true;
	} else {
		list_add_tail(&rej->node, &qp->rejects);
		if (!own)
			qp->nr_rejects++;
		rej = NULL;
	}
	spin_unlock_irq(&qp->lock);
	kfree(rej);
	if (full) {
		pr_warn_ratelimited("QP %u: more than %u answers owed to the peer: taking it down\n",
				    qp->qp_num, RS_MAX_REJECTS);
		rs_qp_stat(qp, RS_STAT_ERRORS, 1);
		rs_qp_down(qp, -ENOBUFS);
	}
	rs_qp_push(qp);
}

/*
 * A CONNECT for the listener @l: a new AC in its backlog, or the errno of
 * the REJECT to send.
 */
static int rs_recv_connect_to(struct rs_qp *qp, const struct rs_proto_msg *m,
			      const void *payload, struct rs_ac *l)
{
	struct rs_file *rf = l->rf;
	int error = -ENOBUFS;
	struct rs_ac *ac;

	ac = rs_ac_alloc(rf, RS_AC_OPEN);
	if (IS_ERR(ac))
		return PTR_ERR(ac) == -EMFILE ? -ECONNREFUSED : -ENOBUFS;
	/* What the listener was set to (RDMASHARE_IOC_AC_SET) passes on. */
	rs_sched_entity_init(&ac->se, NULL, READ_ONCE(l->se.dn.weight), READ_ONCE(l->se.band));
	ac->port = l->port;
	ac->accepted = true;
	ac->remote_id = m->src_conn;
	if (qp->version >= 4 && m->conn.credits) {
		/* Nobody else sees the AC yet. */
		if (rs_ac_slots_room(ac, m->conn.credits))
			goto out_discard;
		rs_ac_got_slots(ac, payload + RS_CONN_PARAMS_LEN, m->conn.credits);
	} else {
		ac->send_credits = m->conn.credits;
	}
	ac->peer_slot_size = min_t(u32, m->conn.slot_size, rs_chunk_size);
	ac->peer_stride = m->conn.slot_size;
	ac->peer_rkey = m->conn.rkey;
	/* An AC file's chunks go to it from the first, before ACCEPT. */
	if (l->files && rs_acfile_attach(ac))
		goto out_discard;

	mutex_lock(&rf->ac_lock);
	if (l->state != RS_AC_LISTEN || l->backlog_len >= l->backlog_max) {
		mutex_unlock(&rf->ac_lock);
		error = -ECONNREFUSED;
		goto out_discard;
	}
	mutex_unlock(&rf->ac_lock);
	if (rs_ac_add_to_file(rf, ac)) {
		error = -ECONNREFUSED;	/* the file is full, like its backlog */
		goto out_discard;
	}
	if (rs_ac_add_conn(ac))
		goto out_discard;
	kref_get(&qp->ref);
	error = rs_ac_pin(ac, qp, RS_CTRL_ACCEPT);
	if (error) {
		/* No slot for it, or the file is closing. */
		if (error != -ENOBUFS)
			error = -ECONNREFUSED;
		rs_qp_put(qp);
		goto out_discard;
	}
	mutex_lock(&rf->ac_lock);
	if (l->state != RS_AC_LISTEN) {
		/*
		 * The listener closed meanwhile.  Its ACCEPT may have gone out:
		 * a CLOSE for the peer's end if so, a REJECT if not.
		 */
		mutex_unlock(&rf->ac_lock);
		rs_ac_abort(ac);
		rs_ac_del_from_file(ac);
		rs_ac_put(ac);
		return -ECONNREFUSED;
	}
	kref_get(&ac->ref);		/* the backlog's */
	list_add_tail(&ac->backlog_node, &l->backlog);
	l->backlog_len++;
	mutex_unlock(&rf->ac_lock);
	wake_up_all(&l->wait);
	trace_rdmashare_ac_open(ac);
	rs_ac_put(ac);
	return 0;

out_discard:
	rs_ac_discard(ac);
	rs_ac_put(ac);
	return error;
}

/*
 * A peer's CONNECT.  What it makes this host allocate is charged to the
 * memory cgroup of the listener's file, as if its owner had allocated it.
 */
void rs_ac_peer_connect(struct rs_qp *qp, const struct rs_proto_msg *m, const void *payload)
{
	int error = -ECONNREFUSED;
	struct mem_cgroup *old;
	struct rs_ac *l;

	xa_lock(&rs_ports);
	l = xa_load(&rs_ports, m->conn.port);
	if (l)
		kref_get(&l->ref);
	xa_unlock(&rs_ports);
	if (l) {
		old = set_active_memcg(l->rf->memcg);
		error = rs_recv_connect_to(qp, m, payload, l);
		set_active_memcg(old);
		rs_ac_put(l);
	}
	if (error)
		rs_qp_stray(qp, m->src_conn, 0, -error, false);
}

/*
 * The peer sends no more (its SHUTDOWN), and said so after its last chunk:
 * the AC's CLOSED completion, flagged HALF, follows the last RECV.  The AC
 * stays open for sending.
 */
void rs_ac_peer_shut(struct rs_ac *ac)
{
	struct rs_file *rf = ac->rf;
	bool post;

	WRITE_ONCE(ac->peer_shut, true);
	mutex_lock(&rf->ac_lock);
	/*
	 * In a backlog, ACCEPT posts it (a closing listener voids the AC);
	 * while its CONNECT runs, the CONNECT does (rs_ac_connect_end()).
	 */
	post = ac->state == RS_AC_OPEN && !ac->cqe_used && list_empty(&ac->backlog_node) &&
	       !ac->in_connect;
	if (post)
		ac->cqe_used = true;
	mutex_unlock(&rf->ac_lock);
	if (post)
		rs_ac_post_closed(ac, 0, RDMASHARE_CQE_F_HALF, false);
}

/* The peer's ACCEPT for @ac's CONNECT. */
void rs_ac_peer_accept(struct rs_qp *qp, struct rs_ac *ac, const struct rs_proto_msg *m,
		       const void *payload)
{
	bool opened;

	/* No room for its grant: the AC closes, its peer's end below. */
	if (qp->version >= 4 && m->conn.credits &&
	    READ_ONCE(ac->state) == RS_AC_CONNECTING &&
	    rs_ac_slots_room(ac, m->conn.credits))
		rs_ac_do_close(ac, -ENOMEM, false);
	spin_lock_irq(&qp->lock);
	if (ac->state == RS_AC_CONNECTING) {
		ac->remote_id = m->src_conn;
		if (qp->version >= 4) {
			rs_ac_got_slots(ac, payload + RS_CONN_PARAMS_LEN, m->conn.credits);
			/* What the CONNECT did not grant. */
			rs_ac_grant_soon(ac);
		} else {
			rs_ac_got_credits(ac, m->conn.credits);
		}
		ac->peer_slot_size = min_t(u32, m->conn.slot_size, rs_chunk_size);
		ac->peer_stride = m->conn.slot_size;
		ac->peer_rkey = m->conn.rkey;
	} else if (!ac->remote_id) {
		/* Closed, and kept while the peer may fill its slots. */
		ac->remote_id = m->src_conn;
	}
	spin_unlock_irq(&qp->lock);
	mutex_lock(&ac->rf->ac_lock);
	opened = ac->state == RS_AC_CONNECTING;
	if (opened)
		WRITE_ONCE(ac->state, RS_AC_OPEN);
	mutex_unlock(&ac->rf->ac_lock);
	wake_up_all(&ac->wait);
	if (opened)
		trace_rdmashare_ac_open(ac);
	else
		rs_ac_tell_closed(ac, false);	/* it closed first: so does the peer's end */
}

/* The peer's REJECT (@error) of @ac's CONNECT. */
void rs_ac_peer_reject(struct rs_qp *qp, struct rs_ac *ac, u32 error)
{
	/* The peer never opened its end: nothing of it fills a slot. */
	if (ac->remote_id)
		return;
	spin_lock_irq(&qp->lock);
	ac->peer_closed = true;
	spin_unlock_irq(&qp->lock);
	if (READ_ONCE(ac->state) == RS_AC_CONNECTING)
		rs_ac_do_close(ac, rs_proto_reject_errno(error), false);
	rs_ac_unquarantine(ac);
}

/* The peer's CLOSE of its end of @ac (not a HALF one: rs_ac_peer_shut()). */
void rs_ac_peer_close(struct rs_qp *qp, struct rs_ac *ac)
{
	spin_lock_irq(&qp->lock);
	ac->peer_closed = true;
	spin_unlock_irq(&qp->lock);
	rs_ac_do_close(ac, 0, false);
	/*
	 * The peer sends no more: slots this end kept for it are free.
	 * Version 4: answered, so that the peer gets its own back.
	 */
	rs_ac_unquarantine(ac);
	if (qp->version >= 4)
		rs_ac_tell_closed(ac, true);
}

/* ---- file release ---- */

/*
 * Owe the peer a CLOSE for @ac, which closed, if the peer knows the AC and
 * has not been told: unless its end closed first, or (@answer, version 4)
 * even then, as the answer that ends its quarantine.
 */
void rs_ac_tell_closed(struct rs_ac *ac, bool answer)
{
	struct rs_qp *qp = ac->qp;
	bool tell;

	if (!qp)
		return;
	spin_lock_irq(&qp->lock);
	tell = ac->remote_id && !ac->close_sent && (answer || !ac->peer_closed) &&
	       qp->state != RS_QP_DOWN;
	if (tell)
		ac->close_sent = true;
	spin_unlock_irq(&qp->lock);
	if (tell)
		rs_qp_stray(qp, ac->remote_id, ac->id, 0, true);
}

/*
 * Close @ac for @error as rs_ac_do_close() does, and tell its peer: for an
 * AC that this end drops while its QP stays up.
 */
void rs_ac_close_tell(struct rs_ac *ac, int error, bool by_app)
{
	if (rs_ac_do_close(ac, error, by_app))
		rs_ac_tell_closed(ac, false);
}

/* @ac's quarantine is over: its id goes, and the quarantine's reference. */
static void rs_ac_unquarantine(struct rs_ac *ac)
{
	if (!rs_rx_unquarantine(ac))
		return;
	rs_ac_del_conn(ac);
	rs_ac_put(ac);
}

/*
 * The teardown destroyed @qp: nothing fills a slot any more, the ACs in
 * quarantine on it end it, and none starts it.
 */
void rs_qp_quarantine_end(struct rs_qp *qp)
{
	struct rs_ac *ac;

	spin_lock_irq(&qp->lock);
	qp->quar_over = true;
	while ((ac = list_first_entry_or_null(&qp->quarantined, struct rs_ac, quar_node))) {
		kref_get(&ac->ref);
		spin_unlock_irq(&qp->lock);
		rs_ac_unquarantine(ac);
		rs_ac_put(ac);
		spin_lock_irq(&qp->lock);
	}
	spin_unlock_irq(&qp->lock);
}

/* Close @ac because its file is going away: tell the peer, drop it. */
static void rs_ac_abort(struct rs_ac *ac)
{
	rs_ac_close_tell(ac, -ECONNABORTED, true);
}

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

/*
 * For root's debugfs listing: every listening port with its owner (the
 * user and the process that opened the file) and its backlog.
 */
void rs_listeners_show(struct seq_file *m)
{
	unsigned long port;
	struct rs_ac *l;

	xa_lock(&rs_ports);
	xa_for_each(&rs_ports, port, l)
		seq_printf(m, "port %lu uid %u pid %d comm %s ac %u backlog %u/%u\n",
			   port, rs_user_uid(l->rf->owner), l->rf->tgid, l->rf->comm, l->fid,
			   READ_ONCE(l->backlog_len), l->backlog_max);
	xa_unlock(&rs_ports);
}

/* The last close of the file: every AC closes but AC files' (which go on
 * without it), the memory goes when the last AC reference does.
 */
void rs_file_release(struct rs_file *rf)
{
	struct rs_cq_over *o, *tmp;
	struct rs_ac *ac;
	LIST_HEAD(left);
	u32 id;

	/* Under submit_lock too: no completion consumes the SQ after this. */
	mutex_lock(&rf->submit_lock);
	mutex_lock(&rf->ac_lock);
	rf->closing = true;
	mutex_unlock(&rf->ac_lock);
	mutex_unlock(&rf->submit_lock);

	/*
	 * A reference taken under the table's lock: a CLOSE completing now
	 * takes its AC out of the table, and may drop its last reference.
	 */
	for (id = 1; (ac = rs_actable_next(&rf->acs, &id, rs_ac_get_any, NULL)); id++) {
		/*
		 * An AC file's AC is its own, open or closing: its file, or
		 * its linger work, ends it (acfile.c).
		 */
		if (ac->af && ac->af->bound) {
			rs_ac_put(ac);
			continue;
		}
		if (READ_ONCE(ac->state) == RS_AC_LISTEN)
			rs_ac_close_listener(ac);
		else
			rs_ac_abort(ac);
		rs_ac_del_from_file(ac);
		rs_ac_put(ac);
	}
	/* CLOSED completions that waited for room: nobody reaps them now. */
	rs_cq_kill_over(rf, &left);
	list_for_each_entry_safe(o, tmp, &left, node) {
		list_del_init(&o->node);
		rs_ac_put(container_of(o, struct rs_ac, closed));
	}
	rs_file_put(rf);
}
