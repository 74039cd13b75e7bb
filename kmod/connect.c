// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: non-blocking CONNECT of AC files.
 *
 * With RDMASHARE_CONNECT_NONBLOCK, CONNECT returns the AC file at once, in
 * the CONNECTING state, as connect(2) on a non-blocking socket returns
 * EINPROGRESS: poll(2) reports EPOLLOUT once the peer accepted, EPOLLERR
 * and EPOLLHUP once the connection failed, and RDMASHARE_IOC_FILE_INFO
 * gives the error (SO_ERROR).  One thread may have many under way; none
 * waits for them.  What the blocking CONNECT does in order, waiting in
 * between (rs_ac_connect_once()), is done here in steps, each started by
 * what the one before waited for (rs_ac_conn_step()):
 *
 * 1. a shared QP to the peer (rs_qp_get()), held with a reference and
 *    counted as a waiter; while it connects, an entry on its wait queue
 *    (rs_acfile.conn_wait), whose wake-up queues the AC file's connect
 *    work once the QP is up or down;
 * 2. once it is up, the AC is pinned to it and its CONNECT queued
 *    (rs_ac_pin()), the QP reference becoming the AC's; a QP that went
 *    down ends the CONNECT with its error;
 * 3. the peer's ACCEPT or REJECT then opens or closes the AC, as for any
 *    CONNECT (ac.c), and wakes the AC file's waiters.
 *
 * A timer (rs_acfile.conn_timer: the caller's timeout, or
 * connect_timeout_ms) ends a CONNECT that has not opened by then with
 * ETIMEDOUT, and gives up on a QP that no other CONNECT waits for, as the
 * blocking CONNECT does; the AC file's release ends it with ECONNABORTED.
 * rs_acfile.conn_lock orders the steps, the timer and the release.  The
 * work and the timer hold no reference of the AC: the release, which
 * holds one (the file's), cancels both after ending the CONNECT, and
 * nothing queues them again.
 *
 * A QP that went down just as the CONNECT went out (an idle peer may take
 * it down then) is tried once more on a new one, as the blocking CONNECT
 * does.  One lost after the CONNECT went out is not: the AC file has its
 * AC, and the blocking CONNECT would retry with a new AC.  The caller sees
 * ECONNRESET, and may connect again.
 */
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/wait.h>

#include "acfile.h"
#include "transport.h"

/* Called with conn_lock held: @af no longer waits on its QP's queue. */
static void rs_ac_conn_unwatch(struct rs_acfile *af)
{
	wait_queue_head_t *wq = &af->conn_qp->wait;
	unsigned long flags;

	/* The wake-up may have taken it off already: list_del_init() twice. */
	spin_lock_irqsave(&wq->lock, flags);
	list_del_init(&af->conn_wait.entry);
	spin_unlock_irqrestore(&wq->lock, flags);
}

/*
 * Called with conn_lock held: the CONNECT of @ac ends with @error.  The QP
 * it waited for is let go (given up on, if it timed out); the AC closes,
 * and a peer that accepted meanwhile is told.
 */
static void rs_ac_conn_end(struct rs_ac *ac, int error)
{
	struct rs_acfile *af = ac->af;
	struct rs_qp *qp = af->conn_qp;

	lockdep_assert_held(&af->conn_lock);
	if (qp) {
		rs_ac_conn_unwatch(af);
		af->conn_qp = NULL;
		/* Before it stops counting as a waiter: rs_qp_give_up() counts. */
		if (error == -ETIMEDOUT)
			rs_qp_give_up(qp);
		rs_qp_unwait(qp);
		rs_qp_put(qp);
	}
	if (rs_ac_do_close(ac, error, true))
		rs_ac_tell_closed(ac, false);
}

/* Called with conn_lock held: the next step of @ac's CONNECT, if any. */
static void rs_ac_conn_step(struct rs_ac *ac)
{
	struct rs_acfile *af = ac->af;
	struct rs_peer *peer;
	struct rs_qp *qp;
	int err;

	lockdep_assert_held(&af->conn_lock);
again:
	/* Ended, or pinned: the peer's answer does the rest. */
	if (READ_ONCE(ac->state) != RS_AC_CONNECTING || READ_ONCE(ac->qp))
		return;
	qp = af->conn_qp;
	if (!qp) {
		mutex_lock(&rs_peers_lock);
		peer = rs_peer_get((struct sockaddr *)&af->conn_addr);
		mutex_unlock(&rs_peers_lock);
		if (!peer) {
			rs_ac_conn_end(ac, -ENOMEM);
			return;
		}
		qp = rs_qp_get(peer, &err);
		rs_peer_put(peer);
		if (!qp) {
			rs_ac_conn_end(ac, err);
			return;
		}
		af->conn_qp = qp;
	}
	/* On the queue before the state is read: a change after wakes it. */
	add_wait_queue(&qp->wait, &af->conn_wait);
	if (READ_ONCE(qp->state) == RS_QP_CONNECTING)
		return;
	rs_ac_conn_unwatch(af);
	if (READ_ONCE(qp->state) != RS_QP_UP) {
		rs_ac_conn_end(ac, READ_ONCE(qp->error) ?: -ECONNRESET);
		return;
	}
	af->conn_qp = NULL;
	err = rs_ac_pin(ac, qp, RS_CTRL_CONNECT);
	rs_qp_unwait(qp);
	if (!err)
		return;		/* the QP's reference is the AC's now */
	rs_qp_put(qp);
	if (err == -ECONNRESET && !af->conn_retried) {
		af->conn_retried = true;
		goto again;
	}
	rs_ac_conn_end(ac, err);
}

/*
 * The wake-up of the QP's wait queue, under its lock, in any context: once
 * the QP is no longer connecting, off the queue, and the next step queued.
 * conn_qp is stable meanwhile: it changes only after the entry is off the
 * queue, under the same lock.
 */
static int rs_ac_conn_wake(struct wait_queue_entry *wq_entry, unsigned int mode, int sync,
			   void *key)
{
	struct rs_acfile *af = container_of(wq_entry, struct rs_acfile, conn_wait);

	if (READ_ONCE(af->conn_qp->state) == RS_QP_CONNECTING)
		return 0;
	list_del_init(&wq_entry->entry);
	queue_work(rs_wq, &af->conn_work);
	return 1;
}

static void rs_ac_conn_work(struct work_struct *work)
{
	struct rs_acfile *af = container_of(work, struct rs_acfile, conn_work);

	mutex_lock(&af->conn_lock);
	rs_ac_conn_step(af->ac);
	mutex_unlock(&af->conn_lock);
}

static void rs_ac_conn_timeout(struct work_struct *work)
{
	struct rs_acfile *af = container_of(to_delayed_work(work), struct rs_acfile, conn_timer);
	struct rs_ac *ac = af->ac;

	mutex_lock(&af->conn_lock);
	if (READ_ONCE(ac->state) == RS_AC_CONNECTING)
		rs_ac_conn_end(ac, -ETIMEDOUT);
	mutex_unlock(&af->conn_lock);
}

/* Called by rs_acfile_attach(). */
void rs_acfile_connect_init(struct rs_acfile *af)
{
	mutex_init(&af->conn_lock);
	init_waitqueue_func_entry(&af->conn_wait, rs_ac_conn_wake);
	INIT_WORK(&af->conn_work, rs_ac_conn_work);
	INIT_DELAYED_WORK(&af->conn_timer, rs_ac_conn_timeout);
}

/**
 * rs_ac_connect_nb() - RDMASHARE_IOC_CONNECT with RDMASHARE_CONNECT_NONBLOCK
 * @rf: the file that makes the AC
 * @c: the caller's arguments, checked
 * @ss: the peer
 * @timeout: jiffies the CONNECT may take
 * @res: the AC file's send buffer and descriptor, reserved
 *
 * Return: 0 with the AC file in @res->nf, its CONNECT under way; or an
 * errno, @res still the caller's.
 */
int rs_ac_connect_nb(struct rs_file *rf, struct rdmashare_connect *c,
		     const struct sockaddr_storage *ss, unsigned long timeout,
		     struct rs_acfile_res *res)
{
	struct rs_acfile *af;
	struct rs_ac *ac;
	int ret;

	ac = rs_ac_new_conn(rf, c->peer.port, true, false);
	if (IS_ERR(ac))
		return PTR_ERR(ac);
	af = ac->af;
	af->conn_addr = *ss;
	ret = rs_acfile_bind(ac, res, &c->file);
	if (ret) {
		rs_ac_abandon(ac, ret);
		rs_ac_put(ac);
		return ret;
	}
	/* From here on the AC file's release ends what is under way. */
	c->ac = ac->fid;
	queue_delayed_work(rs_wq, &af->conn_timer, timeout);
	mutex_lock(&af->conn_lock);
	rs_ac_conn_step(ac);
	mutex_unlock(&af->conn_lock);
	rs_ac_put(ac);
	return 0;
}

/*
 * The AC file's release: a CONNECT still under way ends (ECONNABORTED),
 * and neither its work nor its timer runs after this.
 */
void rs_acfile_connect_stop(struct rs_ac *ac)
{
	struct rs_acfile *af = ac->af;

	mutex_lock(&af->conn_lock);
	if (READ_ONCE(ac->state) == RS_AC_CONNECTING)
		rs_ac_conn_end(ac, -ECONNABORTED);
	mutex_unlock(&af->conn_lock);
	cancel_work_sync(&af->conn_work);
	cancel_delayed_work_sync(&af->conn_timer);
}
