// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: the listening side of an AC.
 *
 * LISTEN puts an AC of the caller's file in the host's port table
 * (rs_ports): a port's listeners take connections on addresses that do not
 * overlap (laddr.h), or share the same ones (SO_REUSEPORT).  A peer's
 * CONNECT for a port goes to the listener that takes the address it
 * reached (in turn among those that share it), and makes a
 * new AC in the listener's file, pinned to the QP it came on, answered with
 * ACCEPT at once and kept in the listener's backlog; RDMASHARE_IOC_ACCEPT
 * hands it to the application (as an AC file if the listener makes them).
 * A full backlog, a full file or a closed listener answers REJECT instead.
 * Closing the listener takes it out of the table and closes what its
 * backlog holds.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/memcontrol.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <net/sock.h>

#include "ac.h"
#include "acfile.h"
#include "trace.h"
#include "transport.h"

/*
 * Listening ACs by service port: the first of each port's, the others
 * chained from it by rs_ac.port_next; under rs_ports_lock, as is
 * rs_ports_turn, which deals a shared port's connections in turn.
 */
static DEFINE_XARRAY(rs_ports);
static DEFINE_MUTEX(rs_ports_lock);
static unsigned int rs_ports_turn;

/* @l into the port table, with the table's reference, unless a listener conflicts. */
static int rs_ports_add(struct rs_ac *l)
{
	u32 uid = rs_user_uid(l->rf->owner);
	struct rs_ac *head, *o;
	int ret = 0;

	mutex_lock(&rs_ports_lock);
	head = xa_load(&rs_ports, l->port);
	for (o = head; o; o = o->port_next) {
		if (rs_laddr_conflict(&o->laddr, &l->laddr, rs_user_uid(o->rf->owner) == uid)) {
			ret = -EADDRINUSE;
			goto out;
		}
	}
	if (head) {
		l->port_next = head->port_next;
		head->port_next = l;
	} else {
		ret = xa_insert(&rs_ports, l->port, l, GFP_KERNEL_ACCOUNT);
	}
	if (!ret)
		kref_get(&l->ref);
out:
	mutex_unlock(&rs_ports_lock);
	return ret;
}

/* @l out of the port table: true if it was there (the caller drops its reference). */
static bool rs_ports_del(struct rs_ac *l)
{
	struct rs_ac **pp, *head;
	bool found = false;

	mutex_lock(&rs_ports_lock);
	head = xa_load(&rs_ports, l->port);
	if (head == l) {
		/* Replacing an entry allocates nothing. */
		if (l->port_next)
			WARN_ON(xa_is_err(xa_store(&rs_ports, l->port, l->port_next, GFP_KERNEL)));
		else
			xa_erase(&rs_ports, l->port);
		found = true;
	} else if (head) {
		for (pp = &head->port_next; *pp; pp = &(*pp)->port_next) {
			if (*pp == l) {
				*pp = l->port_next;
				found = true;
				break;
			}
		}
	}
	l->port_next = NULL;
	mutex_unlock(&rs_ports_lock);
	return found;
}

/*
 * The listener of @port that takes connections to @local, with a
 * reference.  Several share it (SO_REUSEPORT): the next in turn whose
 * backlog has room, else the next in turn (which refuses).
 */
static struct rs_ac *rs_ports_find(u32 port, const struct sockaddr_storage *local)
{
	unsigned int n = 0, i = 0, rank, best = UINT_MAX;
	struct rs_ac *head, *l, *turn = NULL, *room = NULL;

	mutex_lock(&rs_ports_lock);
	head = xa_load(&rs_ports, port);
	for (l = head; l; l = l->port_next)
		n += rs_laddr_match(&l->laddr, local);
	for (l = head; l && n; l = l->port_next) {
		if (!rs_laddr_match(&l->laddr, local))
			continue;
		rank = (i++ + n - rs_ports_turn % n) % n;
		if (!rank)
			turn = l;
		if (rank < best && READ_ONCE(l->backlog_len) < l->backlog_max) {
			best = rank;
			room = l;
		}
	}
	l = room ?: turn;
	if (l)
		kref_get(&l->ref);
	if (n > 1)
		rs_ports_turn++;
	mutex_unlock(&rs_ports_lock);
	return l;
}

int rs_ac_listen(struct rs_file *rf, struct rdmashare_listen *l)
{
	struct rs_laddr laddr;
	struct rs_ac *ac;
	int ret;

	if ((l->flags & ~(RDMASHARE_LISTEN_FILES | RDMASHARE_LISTEN_ADDR |
			  RDMASHARE_LISTEN_V6ONLY | RDMASHARE_LISTEN_REUSEPORT)) ||
	    l->resv || l->ac || memchr_inv(&l->file, 0, sizeof(l->file)) || l->max_files ||
	    l->rx_slots)
		return -EINVAL;
	if (!l->port || l->port > 65535 || !l->backlog || l->backlog > READ_ONCE(rs_backlog_max))
		return -EINVAL;
	if (!(l->flags & RDMASHARE_LISTEN_ADDR) &&
	    ((l->flags & RDMASHARE_LISTEN_V6ONLY) || memchr_inv(&l->local, 0, sizeof(l->local))))
		return -EINVAL;
	if (l->flags & RDMASHARE_LISTEN_ADDR) {
		ret = rs_laddr_from_user(&laddr, &l->local, l->port,
					 l->flags & RDMASHARE_LISTEN_V6ONLY);
		if (ret)
			return ret;
	} else {
		rs_laddr_all(&laddr);
	}
	laddr.share = l->flags & RDMASHARE_LISTEN_REUSEPORT;
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
	ac->laddr = laddr;
	ret = rs_ac_add_to_file(rf, ac);
	if (ret)
		goto out_put;
	ret = -EMFILE;
	if (!rs_user_charge_listener(rf->owner)) {
		rs_ac_del_from_file(ac);
		goto out_put;
	}
	ret = rs_ports_add(ac);
	if (ret) {
		rs_user_uncharge_listener(rf->owner);
		rs_ac_del_from_file(ac);
		goto out_put;
	}
	WRITE_ONCE(ac->handed_out, true);
	l->ac = ac->fid;
	/* Its ACs' first messages go from the completion handler. */
	rs_dma_maps_prepare(rf);
out_put:
	rs_ac_put(ac);
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
	a->peer.port = ac->cport;
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

/* CLOSE of a listener: no new connections; the backlog is closed. */
void rs_ac_close_listener(struct rs_ac *l)
{
	struct rs_file *rf = l->rf;
	struct rs_ac *ac;

	if (rs_ports_del(l)) {
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
	ac->cport = m->conn.cport;
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
	error = rs_ac_pin(ac, qp, RS_CTRL_ACCEPT, l);
	if (error) {
		/* No slot for it, the listener closed, or the file is closing. */
		if (error != -ENOBUFS)
			error = -ECONNREFUSED;
		rs_qp_put(qp);
		goto out_discard;
	}
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

	l = rs_ports_find(m->conn.port, &qp->local);
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
 * For root's debugfs listing: every listening port with its owner (the
 * user and the process that opened the file) and its backlog.
 */
void rs_listeners_show(struct seq_file *m)
{
	unsigned long port;
	struct rs_ac *head, *l;

	mutex_lock(&rs_ports_lock);
	xa_for_each(&rs_ports, port, head) {
		for (l = head; l; l = l->port_next) {
			seq_printf(m, "port %lu uid %u pid %d comm %s ac %u backlog %u/%u",
				   port, rs_user_uid(l->rf->owner), l->rf->tgid, l->rf->comm,
				   l->fid, READ_ONCE(l->backlog_len), l->backlog_max);
			if (l->laddr.any)
				seq_printf(m, " on%s%s any", l->laddr.v4 ? " ipv4" : "",
					   l->laddr.v6 ? " ipv6" : "");
			else if (l->laddr.v4)
				seq_printf(m, " on %pI4", l->laddr.addr);
			else
				seq_printf(m, " on %pI6c", l->laddr.addr);
			seq_puts(m, l->laddr.share ? " reuseport\n" : "\n");
		}
	}
	mutex_unlock(&rs_ports_lock);
}
