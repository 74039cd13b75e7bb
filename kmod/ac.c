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
 * LISTEN, ACCEPT and the peer's CONNECT are in listen.c; CONNECT and the
 * peer's answer in connect.c; AC_SET and AC_STATS in acset.c.
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

#include "ac.h"
#include "acfile.h"
#include "actable.h"
#include "trace.h"
#include "transport.h"

/* Connection ids, host-wide; 0 is never used. */
static struct rs_actable rs_conns = RS_ACTABLE_INIT(rs_conns, true);

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
	if (ac->port_sock)
		fput(ac->port_sock);	/* nobody else has the AC now */
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
struct rs_ac *rs_ac_alloc(struct rs_file *rf, enum rs_ac_state state)
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
int rs_ac_add_to_file(struct rs_file *rf, struct rs_ac *ac)
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

bool rs_ac_get_any(void *entry, void *arg)
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
int rs_ac_add_conn(struct rs_ac *ac)
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
void rs_ac_discard(struct rs_ac *ac)
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
void rs_ac_post_closed(struct rs_ac *ac, int res, u16 flags, bool free_id)
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
bool rs_ac_take_cqe(struct rs_ac *ac)
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
	 * A connection never made keeps no port: the socket may connect over
	 * TCP instead (the preload's fallback), and its close must not wait
	 * for this AC to be freed.
	 */
	if (old == RS_AC_CONNECTING) {
		struct file *sock = xchg(&ac->port_sock, NULL);

		if (sock)
			fput(sock);
	}
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

/* ---- what CONNECT and ACCEPT share: names, a QP, a new AC ---- */

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
 *	accepted AC, its own (rs_ac.cport) for a connecting one; all 0 while
 *	the AC has no QP
 * @peer: gets the peer's, with the service port for a connecting AC, the
 *	one the peer's CONNECT named for an accepted one
 */
void rs_ac_addrs(struct rs_ac *ac, struct rdmashare_addr *local, struct rdmashare_addr *peer)
{
	struct rs_qp *qp = READ_ONCE(ac->qp);
	bool connects = !ac->accepted;

	memset(local, 0, sizeof(*local));
	if (qp && qp->local.ss_family) {
		rs_addr_to_user(&qp->local, local);
		local->port = connects ? ac->cport : ac->port;
	}
	if (qp)
		rs_addr_to_user(&qp->peer->addr, peer);
	else if (ac->af)
		rs_addr_to_user(&ac->af->conn_addr, peer);
	else
		memset(peer, 0, sizeof(*peer));
	peer->port = connects ? ac->port : ac->cport;
}

/*
 * Pin @ac to @qp (taking over the caller's QP reference on success), give
 * it the receive slots it opens with, and queue its first control message.
 * With @l, the listener of @ac's file that takes it, @ac joins @l's backlog
 * in the same critical section, before its ACCEPT can go out: a peer whose
 * connect() returned finds the connection to accept.
 * -ECONNRESET if the QP is down already, -ECONNABORTED if the AC was closed
 * meanwhile (its file is going away), -ECONNREFUSED if @l stopped listening
 * or its backlog filled, -ENOBUFS if a version 1 or 2 AC finds no slot.
 * From version 4 on, the file's data area is mapped for the QP's device by
 * now, if it can be: the first CONNECT or ACCEPT names the slots' rkey, and
 * the chunks go in place from the start.  A CONNECT maps it here,
 * in the caller's context; an ACCEPT, sent from the completion handler,
 * finds what the LISTEN mapped (memreg.c).
 *
 * The AC's state is checked under its file's ac_lock, which rs_ac_do_close()
 * holds to close it: either the close sees ac->qp set and rs_ac_finish()
 * unpins the AC, or the pin sees the AC closed and leaves it alone.
 */
int rs_ac_pin(struct rs_ac *ac, struct rs_qp *qp, u32 ctrl, struct rs_ac *l)
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
	} else if (l && (l->state != RS_AC_LISTEN || l->backlog_len >= l->backlog_max)) {
		ret = -ECONNREFUSED;
	} else if (!rs_rx_open_locked(ac, qp)) {
		ret = -ENOBUFS;
	} else {
		ac->qp = qp;
		ac->map = map;
		rs_qp_pin_locked(qp, ac, &spare);
		if (l) {
			kref_get(&ac->ref);	/* the backlog's */
			list_add_tail(&ac->backlog_node, &l->backlog);
			l->backlog_len++;
		}
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

/**
 * rs_ac_new_conn() - a new AC of @rf's that is to CONNECT to @c's peer
 * @rf: the file
 * @c: the CONNECT's arguments, checked
 * @to: the peer, and the socket whose port the AC takes, of which the AC
 *	holds a reference of its own
 * @file: the AC is an AC file's
 * @in_connect: the CONNECT's caller decides what the CQ gets (rs_ac.in_connect)
 *
 * In both tables, CONNECTING; not pinned to a QP yet.
 *
 * Return: the AC (the caller's reference), or an ERR_PTR().
 */
struct rs_ac *rs_ac_new_conn(struct rs_file *rf, const struct rdmashare_connect *c,
			     const struct rs_connect_to *to, bool file, bool in_connect)
{
	struct rs_ac *ac;
	int ret;

	ac = rs_ac_alloc(rf, RS_AC_CONNECTING);
	if (IS_ERR(ac))
		return ac;
	ac->port = c->peer.port;
	if (to->sock) {
		ac->port_sock = get_file(to->sock);
		ac->cport = to->cport;
	}
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

/* ---- CLOSE (send.c hands it over) ---- */

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
		WRITE_ONCE(ac->handed_out, false);
		rs_complete_op(rf, sqe, 0);
		rs_ac_del_from_file(ac);
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
		/*
		 * Closed by the peer or by an error: only the id is left,
		 * freed after the completion (see rs_ac_finish()): a peer's
		 * CONNECT that takes it meanwhile must not have its first
		 * message in the CQ before this CLOSE's completion.
		 */
		rs_ac_do_close(ac, 0, true);
		WRITE_ONCE(ac->handed_out, false);
		rs_ac_cancel_closed(ac);
		rs_complete_op(rf, sqe, 0);
		rs_ac_del_from_file(ac);
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
void rs_ac_unquarantine(struct rs_ac *ac)
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
void rs_ac_abort(struct rs_ac *ac)
{
	rs_ac_close_tell(ac, -ECONNABORTED, true);
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
