// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: the connecting side of an AC: CONNECT, blocking or not, and
 * the peer's answer to it (ACCEPT or REJECT).
 *
 * A blocking CONNECT (rs_ac_connect_once()) takes a shared QP to the peer,
 * pins a new AC to it, queues the CONNECT message and waits for the answer,
 * its timeout or a signal; a QP that went down before the peer answered is
 * tried once more, with a new AC on a new QP.
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
#include <linux/net.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <net/sock.h>
#include <net/tcp_states.h>

#include "ac.h"
#include "acfile.h"
#include "trace.h"
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
		qp = rs_qp_get(peer, ac->rf, &err);
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
	err = rs_ac_pin(ac, qp, RS_CTRL_CONNECT, NULL);
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
 * @to: the peer, and this end's port
 * @timeout: jiffies the CONNECT may take
 * @res: the AC file's send buffer and descriptor, reserved
 *
 * Return: 0 with the AC file in @res->nf, its CONNECT under way; or an
 * errno, @res still the caller's.
 */
int rs_ac_connect_nb(struct rs_file *rf, struct rdmashare_connect *c,
		     const struct rs_connect_to *to, unsigned long timeout,
		     struct rs_acfile_res *res)
{
	struct rs_acfile *af;
	struct rs_ac *ac;
	int ret;

	ac = rs_ac_new_conn(rf, c, to, true, false);
	if (IS_ERR(ac))
		return PTR_ERR(ac);
	af = ac->af;
	af->conn_addr = to->ss;
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
static int rs_ac_connect_once(struct rs_file *rf, struct rdmashare_connect *c,
			      const struct rs_connect_to *to, unsigned long deadline,
			      struct rs_acfile_res *res, bool *retry)
{
	struct rs_peer *peer;
	struct rs_qp *qp;
	struct rs_ac *ac;
	long left;
	int ret;

	ac = rs_ac_new_conn(rf, c, to, res, true);
	if (IS_ERR(ac))
		return PTR_ERR(ac);

	mutex_lock(&rs_peers_lock);
	peer = rs_peer_get((struct sockaddr *)&to->ss);
	mutex_unlock(&rs_peers_lock);
	ret = -ENOMEM;
	if (!peer)
		goto out_discard;
	qp = rs_qp_get_up(peer, rf, max_t(long, deadline - jiffies, 1), &ret);
	rs_peer_put(peer);
	if (!qp)
		goto out_discard;
	ret = rs_ac_pin(ac, qp, RS_CTRL_CONNECT, NULL);
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

/*
 * RDMASHARE_CONNECT_PORT: the caller's TCP socket @fd, bound and neither
 * connected nor listening, whose port the AC takes; @to gets a reference
 * of it and the port.  Only TCP: a socket that could carry descriptors
 * (SCM_RIGHTS) could hold the AC's own file, and the AC would pin it.
 */
static int rs_connect_sock(int fd, struct rs_connect_to *to)
{
	struct sockaddr_storage ss;
	struct socket *sock;
	struct sock *sk;
	int ret;

	sock = sockfd_lookup(fd, &ret);
	if (!sock)
		return ret;
	sk = sock->sk;
	ret = -EINVAL;
	if (sock->type != SOCK_STREAM || sk->sk_protocol != IPPROTO_TCP ||
	    (sk->sk_family != AF_INET && sk->sk_family != AF_INET6) ||
	    !net_eq(sock_net(sk), &init_net) || READ_ONCE(sk->sk_state) != TCP_CLOSE)
		goto out_put;
	if (kernel_getsockname(sock, (struct sockaddr *)&ss) < 0)
		goto out_put;
	/* The port is where both families have it. */
	BUILD_BUG_ON(offsetof(struct sockaddr_in, sin_port) !=
		     offsetof(struct sockaddr_in6, sin6_port));
	to->cport = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (!to->cport)
		goto out_put;
	to->sock = sock->file;
	return 0;

out_put:
	sockfd_put(sock);
	return ret;
}

int rs_ac_connect(struct rs_file *rf, struct rdmashare_connect *c, struct rs_new_file *nf)
{
	struct rs_acfile_res res, *file = NULL;
	unsigned long deadline, timeout;
	struct rs_connect_to to = {};
	bool retry = false;
	int ret;

	if ((c->flags & ~(RDMASHARE_CONNECT_FILE | RDMASHARE_CONNECT_NONBLOCK |
			  RDMASHARE_CONNECT_PORT)) || c->ac || c->resv)
		return -EINVAL;
	/* Only an AC file can be had before the connection is made. */
	if ((c->flags & RDMASHARE_CONNECT_NONBLOCK) && !(c->flags & RDMASHARE_CONNECT_FILE))
		return -EINVAL;
	if (!(c->flags & RDMASHARE_CONNECT_PORT) && c->sock)
		return -EINVAL;
	ret = rs_addr_from_user(&c->peer, &to.ss);
	if (ret)
		return ret;
	if (!rs_file_ready(rf))
		return -EINVAL;
	if (c->flags & RDMASHARE_CONNECT_PORT) {
		ret = rs_connect_sock(c->sock, &to);
		if (ret)
			return ret;
	}
	/* The AC file's send buffer and descriptor first: no AC to undo. */
	if (c->flags & RDMASHARE_CONNECT_FILE) {
		ret = rs_acfile_reserve(rf, &c->file, nf, &res);
		if (ret)
			goto out_sock;
		file = &res;
	} else if (memchr_inv(&c->file, 0, sizeof(c->file))) {
		ret = -EINVAL;
		goto out_sock;
	}
	timeout = msecs_to_jiffies(c->timeout_ms ?: READ_ONCE(rs_connect_timeout_ms));
	deadline = jiffies + timeout;

	if (c->flags & RDMASHARE_CONNECT_NONBLOCK)
		ret = rs_ac_connect_nb(rf, c, &to, timeout, file);
	else
		ret = rs_ac_connect_once(rf, c, &to, deadline, file, &retry);
	if (ret && retry && time_before(jiffies, deadline) && !signal_pending(current)) {
		retry = false;
		ret = rs_ac_connect_once(rf, c, &to, deadline, file, &retry);
	}
	if (ret && file)
		rs_acfile_unreserve(rf, file);
out_sock:
	if (to.sock)
		fput(to.sock);
	return ret;
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
