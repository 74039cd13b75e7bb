// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: the sender of a shared QP.
 *
 * One sender at a time posts every send on a QP, so applications never
 * contend for the QP: they queue operations on their ACs (send.c) and push.
 * Whoever pushes first becomes the sender (RS_XMIT_BUSY, RDS's
 * acquire_in_xmit): the application's ENTER, the completion handler, a
 * receive that brought credits; the work item only when a caller's budget
 * ran out.  Each round takes, under the QP's lock, one unit of work in this
 * order: a REJECT owed to a peer, a control message of an AC, then the next
 * chunk of the AC the scheduler picks, and appends it to the SEND being
 * built, the payload copied into its registered TX buffer outside the lock,
 * or, for a chunk over pullup_max, read by the device from the data area
 * itself (zero copy: a SEND of its own, the header and padding from the TX
 * buffer and an SGE per page of payload, memreg.c).  From version 4 on, a
 * chunk over pullup_max for a peer that named its slots' rkey is placed:
 * an RDMA WRITE from the data area into the slot its credit names, then
 * its record in the SEND (zero copy on both sides); from version 5 on, one
 * that continues a message and goes alone is a WRITE WITH IMMEDIATE, no
 * SEND (the peer knows the message, the immediate names the AC), which
 * the message's next chunks join while they go to the next slots.
 * With protocol version 2 a SEND takes unit after unit while the next fits
 * in the peer's receive buffer (and RS_TX_BATCH_MAX records): the scheduler
 * decides exactly as it would for one SEND per unit, only the packing
 * differs.  Chunks larger than coalesce_max (and every unit, with
 * coalesce_max 0) go alone, placed ones too: the peer hears of a placed
 * chunk only with its SEND, and sixteen of them behind one SEND kept a
 * 64 KiB stream's receiver waiting (rxe: 47-55 MB/s against 61-67 alone).
 *
 * Autocork: a SEND goes at once when nothing is in flight; otherwise it
 * waits for a completion, gathering what comes in the meantime, unless it
 * is full or carries control records (credits), and no SEND is posted
 * while inflight_max bytes are in flight.  While small messages go on the
 * QP, a large chunk (placed or in place) is not even taken while the QP
 * has what it drains in bulk_delay_us in flight (rs_tx_bulk_max(),
 * drain.c): a small message that comes waits behind what is in flight
 * only, about that long.
 * A chunk needs one credit (a receive slot at the peer); an AC without
 * credits leaves the scheduler until the peer grants more.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "sink.h"
#include "trace.h"
#include "transport.h"
#include "zcopy.h"

static void rs_tx_done(struct ib_cq *cq, struct ib_wc *wc);
static void rs_tx_wr_failed(struct ib_cq *cq, struct ib_wc *wc);

int rs_qp_tx_init(struct rs_qp *qp)
{
	struct ib_device *ibdev = qp->rdev->ibdev;
	size_t len = RS_HDR_LEN + rs_chunk_size;
	u32 i;

	qp->tx = kvcalloc(qp->send_depth, sizeof(*qp->tx), GFP_KERNEL);
	qp->tx_free = kvcalloc(qp->send_depth, sizeof(*qp->tx_free), GFP_KERNEL);
	qp->wrs = kzalloc(sizeof(*qp->wrs), GFP_KERNEL);
	if (!qp->tx || !qp->tx_free || !qp->wrs)
		goto out_free;
	for (i = 0; i < qp->send_depth; i++) {
		struct rs_tx *tx = &qp->tx[i];

		tx->qp = qp;
		tx->cqe.done = rs_tx_done;
		tx->err_cqe.done = rs_tx_wr_failed;
		tx->buf = kmalloc(len, GFP_KERNEL);
		if (!tx->buf)
			goto out_free;
		tx->dma = ib_dma_map_single(ibdev, tx->buf, len, DMA_TO_DEVICE);
		if (ib_dma_mapping_error(ibdev, tx->dma)) {
			kfree(tx->buf);
			tx->buf = NULL;
			goto out_free;
		}
		qp->tx_free[qp->nr_tx_free++] = i;
	}
	return 0;

out_free:
	rs_qp_tx_free(qp);
	return -ENOMEM;
}

void rs_qp_tx_free(struct rs_qp *qp)
{
	struct ib_device *ibdev = qp->rdev->ibdev;
	u32 i;

	for (i = 0; qp->tx && i < qp->send_depth; i++) {
		if (!qp->tx[i].buf)
			continue;
		ib_dma_unmap_single(ibdev, qp->tx[i].dma, RS_HDR_LEN + rs_chunk_size,
				    DMA_TO_DEVICE);
		kfree(qp->tx[i].buf);
	}
	kvfree(qp->tx);
	kvfree(qp->tx_free);
	kfree(qp->wrs);
	qp->tx = NULL;
	qp->tx_free = NULL;
	qp->wrs = NULL;
	qp->nr_tx_free = 0;
}

/*
 * Something may be sendable: run the sender from the work item (if the QP
 * is up), for callers that may not post themselves.  The state is read
 * under the QP's lock, which rs_qp_down() takes to mark the QP down: once
 * the teardown cancelled the work, no kick queues it again.
 */
void rs_qp_kick(struct rs_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->lock, flags);
	if (qp->state == RS_QP_UP)
		queue_work(rs_wq, &qp->send_work);
	spin_unlock_irqrestore(&qp->lock, flags);
}

/*
 * The SEND of @tx completed with @status, or was never posted (@posted
 * false): its records' operations complete, in order, and the buffer is
 * free again.
 */
static void rs_tx_release(struct rs_qp *qp, struct rs_tx *tx, int status, bool posted)
{
	struct rs_file *poll[RS_TX_BATCH_MAX];
	u32 i, j, fill, nr_poll = 0;
	struct rs_tx_item *it;
	struct rs_file *rf;
	u64 now;

	/*
	 * A registration that went with a SEND that made it is valid.  First:
	 * the mapping is the file's, which its AC's reference below may free.
	 */
	for (i = 0; i < tx->nr_regs; i++)
		rs_rx_mr_registered(tx->regs[i], posted && !status);
	tx->nr_regs = 0;
	if (tx->sink_reg)
		rs_sink_put(tx->sink_reg);
	tx->sink_reg = NULL;
	for (i = 0; i < tx->nr_items; i++) {
		it = &tx->items[i];
		if (it->op) {
			rf = it->ac->rf;
			rs_file_note_qp(rf, qp);
			rs_ac_send_done(it->ac, it->op, status);
			atomic_dec(&rf->ops_on_wire);
			/* Its completion consumes the file's SQ (submit.c). */
			for (j = 0; j < nr_poll && poll[j] != rf; j++)
				;
			if (rf->sq_wakeup && j == nr_poll) {
				kref_get(&rf->ref);
				poll[nr_poll++] = rf;
			}
		}
		if (it->zc)
			rs_zc_put(it->zc);
		rs_ac_put(it->ac);
	}
	tx->nr_items = 0;
	tx->nr_writes = 0;
	spin_lock_irq(&qp->lock);
	if (posted) {
		qp->tx_inflight--;
		qp->tx_inflight_bytes -= tx->len + tx->placed_bytes;
		fill = 2 * READ_ONCE(rs_tx_chunk);
		now = rs_drain_timed(&qp->drain, qp->tx_inflight_bytes, fill) ? ktime_get_ns() : 0;
		rs_drain_complete(&qp->drain, now, tx->len + tx->placed_bytes,
				  qp->tx_inflight_bytes, fill);
	}
	qp->tx_free[qp->nr_tx_free++] = tx - qp->tx;
	spin_unlock_irq(&qp->lock);

	for (j = 0; j < nr_poll; j++) {
		rs_qp_stat(qp, RS_STAT_SQ_POLLED, rs_sq_poll(poll[j]));
		rs_file_put(poll[j]);
	}
}

/*
 * A SEND completed: what waited for it (a corked batch, a TX buffer, room
 * under inflight_max) goes now, from here.
 */
static void rs_tx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rs_tx *tx = container_of(wc->wr_cqe, struct rs_tx, cqe);
	struct rs_qp *qp = tx->qp;
	int status = 0;

	if (wc->status != IB_WC_SUCCESS) {
		status = -ECONNRESET;
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			pr_warn_ratelimited("QP %u: send failed: %s\n", qp->qp_num,
					    ib_wc_status_msg(wc->status));
			rs_qp_stat(qp, RS_STAT_ERRORS, 1);
		}
		rs_qp_down(qp, status);
	}
	rs_tx_release(qp, tx, status, true);
	rs_qp_push(qp);
}

/*
 * A registration or WRITE that goes before a SEND failed (it completes
 * only then, or flushed): so does the SEND, whose completion follows.
 */
static void rs_tx_wr_failed(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rs_tx *tx = container_of(wc->wr_cqe, struct rs_tx, err_cqe);
	struct rs_qp *qp = tx->qp;

	if (wc->status == IB_WC_SUCCESS)
		return;
	if (wc->status != IB_WC_WR_FLUSH_ERR) {
		pr_warn_ratelimited("QP %u: a WRITE or registration failed: %s\n",
				    qp->qp_num, ib_wc_status_msg(wc->status));
		rs_qp_stat(qp, RS_STAT_ERRORS, 1);
	}
	rs_qp_down(qp, -ECONNRESET);
}

/* What one round of the sender decided to send, taken under the lock. */
struct rs_tx_plan {
	struct rs_proto_msg m;
	const void *src;		/* DATA payload to copy, or */
	const struct rs_dma_map *zc_map;	/* one to send in place, */
	u64 zc_off;			/* from here in the data area, or */
	struct rs_zc *zc;		/* a write's own pages (reference taken), */
	bool zc_copy;			/* the payload to copy from them at zc_off, or */
	struct rs_tx_write write;	/* one written to the peer's slot, */
	bool imm;			/* announced by its immediate only */
	struct rs_dma_map *reg;		/* a registration the SEND carries, */
	struct rs_sink *sink;		/* or a sink's (reference taken) */
	struct rs_ac *ac;		/* reference taken */
	struct rs_send *op;		/* completes with this send */
	bool lazy;			/* a grant the peer does not wait for */
	bool append;			/* @op's bytes go in @tx's tail record */
	u32 slots[RS_GRANT_MAX];	/* version 4: the slots it grants */
};

/*
 * Version 4: the credits a CONNECT, ACCEPT or CREDIT grants, their slots
 * into @p; before, the count.
 */
static u32 rs_plan_grant(struct rs_qp *qp, struct rs_ac *ac, struct rs_tx_plan *p)
{
	if (qp->version < 4)
		return rs_ac_take_credits(ac);
	return rs_ac_take_grant(ac, p->slots, RS_GRANT_MAX);
}

/*
 * The credits a DATA or CLOSE record carries: before version 4 all that
 * are owed, from version 4 none (a CREDIT record follows, with the slots).
 */
static u32 rs_plan_piggyback(struct rs_qp *qp, struct rs_ac *ac)
{
	if (qp->version < 4)
		return rs_ac_take_credits(ac);
	rs_ac_grant_soon(ac);
	return 0;
}

/* Version 4: how many slots a CONNECT, ACCEPT or CREDIT @m grants. */
static u32 rs_plan_granted(const struct rs_proto_msg *m)
{
	return m->type == RS_MSG_CREDIT ? m->credits : m->conn.credits;
}

/* Bytes of the largest control record (a grant of RS_GRANT_MAX slots). */
static u32 rs_ctrl_max(struct rs_qp *qp)
{
	if (qp->version < 4)
		return RS_CONN_PARAMS_LEN;
	return RS_CONN_PARAMS_LEN + RS_GRANT_MAX * RS_SLOT_IDX_LEN;
}

/* What rs_plan() found. */
enum rs_plan_res {
	RS_PLAN_NONE,		/* nothing to send now */
	RS_PLAN_UNIT,		/* a unit, in the plan */
	RS_PLAN_FULL,		/* a unit that does not join this SEND */
};

/*
 * Called with qp->lock held: where @op's payload is as the device sees it:
 * its AC's data area, or the writer's own pages (zcopy.c); NULL if the
 * data area is not mapped (yet).
 */
static const struct rs_dma_map *rs_op_map(const struct rs_ac *ac, const struct rs_send *op)
{
	return op->zc ? &op->zc->map : ac->map;
}

/*
 * Called with qp->lock held: does a chunk of @len bytes at @off of @map
 * go in place (zero copy)?  If it is larger than pullup_max, @map is
 * there, and the SEND can take its SGEs: the header, one per run of
 * contiguous pages of payload, the padding.
 */
static bool rs_tx_in_place(struct rs_qp *qp, const struct rs_dma_map *map, u64 off, u32 len)
{
	u32 sges;

	if (!map || len <= READ_ONCE(rs_pullup_max))
		return false;
	sges = 1 + rs_dma_map_nr_sges(map, off, len);
	if (rs_proto_rec_len(qp->version, len) > RS_HDR_LEN + len)
		sges++;
	return sges <= qp->max_send_sge;
}

/*
 * Called with qp->lock held: is a chunk of @ac of @len bytes at @off of
 * @map placed (version 4, zero copy on both sides)?  If it is larger than
 * pullup_max, the peer named its slots' rkey, @map is there, a WRITE can
 * take its runs of pages and @tx has room for one more.
 */
static bool rs_tx_placed(struct rs_qp *qp, struct rs_ac *ac, const struct rs_dma_map *map,
			 const struct rs_tx *tx, u64 off, u32 len)
{
	if (!ac->peer_rkey || !map || tx->nr_writes == RS_TX_MAX_WRITES ||
	    len <= READ_ONCE(rs_pullup_max))
		return false;
	return rs_dma_map_nr_sges(map, off, len) <= qp->max_send_sge;
}

/* Does @w continue @tx's last WRITE (rs_tx_write_join())? */
static bool rs_tx_write_joins(const struct rs_qp *qp, const struct rs_tx *tx,
			      const struct rs_tx_write *w)
{
	const struct rs_tx_write *last;

	if (!tx->nr_writes)
		return false;
	last = &tx->writes[tx->nr_writes - 1];
	return last->map == w->map && last->rkey == w->rkey &&
	       last->off + last->len == w->off && last->raddr + last->len == w->raddr &&
	       rs_dma_map_nr_sges(last->map, last->off, last->len + w->len) <= qp->max_send_sge;
}

/*
 * How long large chunks keep to bulk_delay_us after a small message: a few
 * of its round trips behind bulk on rxe, so that a ping-pong keeps it.
 */
#define RS_SMALL_RECENT_MS	10

/*
 * Called with qp->lock held: the bytes in flight past which no large chunk
 * is taken, and which one WRITE may take at most (half of it), so that a
 * small message does not wait behind large chunks: inflight_max, or while
 * small messages go on @qp what it drains in bulk_delay_us, if less.
 */
static u32 rs_tx_bulk_max(const struct rs_qp *qp)
{
	u32 max = READ_ONCE(rs_inflight_max);

	if (qp->small_at &&
	    time_before(jiffies, qp->small_at + msecs_to_jiffies(RS_SMALL_RECENT_MS) + 1))
		max = rs_drain_window(&qp->drain, READ_ONCE(rs_bulk_delay_us), max);
	return max;
}

/*
 * Called with qp->lock held, @tx a WRITE WITH IMMEDIATE (version 5): does
 * the next chunk of @ac, @len bytes at @off of @map, continue it into the
 * peer's oldest slot granted?  Then it joins, up to half of inflight_max
 * in all, so that a small message never waits behind one large WRITE; the
 * receiver splits it at its slots' size.
 */
static bool rs_tx_imm_joins(struct rs_qp *qp, struct rs_ac *ac, const struct rs_dma_map *map,
			    const struct rs_tx *tx, u64 off, u32 len)
{
	struct rs_tx_write w = {
		.map = map, .off = off, .len = len, .rkey = ac->peer_rkey,
		.raddr = (u64)rs_ac_peek_slot(ac) * ac->peer_stride,
	};
	u32 max = min_t(u32, rs_tx_bulk_max(qp) / 2, RS_PROTO_MAX_CHUNK);

	return tx->imm_conn == ac->remote_id && tx->placed_bytes + len <= max &&
	       rs_tx_write_joins(qp, tx, &w);
}

/*
 * Called with qp->lock held: the rkey a CONNECT or ACCEPT of @ac names
 * (version 4), the registration @p carries for it if it is the first.
 */
static u32 rs_plan_rkey(struct rs_qp *qp, struct rs_ac *ac, const struct rs_tx *tx,
			struct rs_tx_plan *p)
{
	bool reg = tx->nr_regs < RS_TX_MAX_REGS;
	u32 rkey;

	if (qp->version < 4 || !ac->map)
		return 0;
	rkey = rs_rx_mr_claim(ac->map, qp, &reg);
	if (reg)
		p->reg = ac->map;
	WRITE_ONCE(ac->rx_rkey, rkey);
	return rkey;
}

/*
 * Called with qp->lock held: @ac's SINK record that @bits owes, into @p:
 * this end's offer (with its registration), its CANCEL, or the DONE of
 * the peer's sink (sink.c).
 */
static void rs_plan_sink_ctrl(struct rs_ac *ac, u32 bits, struct rs_tx_plan *p)
{
	if (bits & RS_CTRL_SINK_DONE) {
		ac->ctrl_pending &= ~RS_CTRL_SINK_DONE;
		p->m.type = RS_MSG_SINK;
		p->m.flags = RS_F_DONE;
		p->m.len = RS_SINK_LEN;
		p->m.sink.id = ac->psink.id;
		p->m.sink.len = ac->psink.filled;
	} else if (bits & RS_CTRL_SINK) {
		ac->ctrl_pending &= ~RS_CTRL_SINK;
		if (!ac->sink_offer)
			return;
		rs_sink_offer_params(ac->sink_offer, &p->m);
		p->sink = ac->sink_offer;	/* the offer's reference */
		ac->sink_offer = NULL;
	} else {
		ac->ctrl_pending &= ~RS_CTRL_SINK_CANCEL;
		p->m.type = RS_MSG_SINK;
		p->m.flags = RS_F_CANCEL;
		p->m.len = RS_SINK_LEN;
		p->m.sink.id = ac->sink_cancel;
	}
}

/*
 * Called with qp->lock held: the peer's sink ends, its DONE is @p; what
 * waits needs credits again.
 */
static void rs_plan_sink_end(struct rs_ac *ac, struct rs_tx_plan *p)
{
	ac->psink.open = false;
	p->m.dst_conn = ac->remote_id;
	p->m.src_conn = ac->id;
	rs_plan_sink_ctrl(ac, RS_CTRL_SINK_DONE, p);
	rs_ac_after_chunk(ac);
	kref_get(&ac->ref);
	p->ac = ac;
}

/*
 * Called with qp->lock held: bytes of @op's next chunk into the peer's
 * sink: as much as it and the sink take, up to half of what may be in
 * flight (a small message waits behind no more), in as many runs of
 * pages as a WRITE takes.
 */
static u32 rs_plan_sink_len(struct rs_qp *qp, struct rs_ac *ac, const struct rs_dma_map *map,
			    const struct rs_send *op)
{
	u32 len = min(op->len - op->sent, ac->psink.len - ac->psink.filled);
	u32 max = max(rs_tx_bulk_max(qp) / 2, READ_ONCE(rs_tx_chunk));

	len = min3(len, max, (u32)RS_PROTO_MAX_CHUNK);
	return rs_dma_map_fit(map, op->addr + op->sent, len, qp->max_send_sge);
}

/* Called with qp->lock held: does a SEND follow @op on @ac already? */
static bool rs_ac_send_next(const struct rs_ac *ac, const struct rs_send *op)
{
	return !list_is_last(&op->node, &ac->sendq) &&
	       list_next_entry(op, node)->opcode == RDMASHARE_OP_SEND;
}

/*
 * Called with qp->lock held: @p is a chunk of @len bytes at @off of @map
 * into the peer's sink (version 6), the last of what @ac has queued if
 * @last; the sink ends with it if it is full or nothing more waits: the
 * reader has what there is.
 */
static void rs_plan_sink_chunk(struct rs_ac *ac, struct rs_tx_plan *p,
			       const struct rs_dma_map *map, u64 off, u32 len, bool last)
{
	struct rs_peer_sink *ps = &ac->psink;

	p->m.flags |= RS_F_SINK;
	p->m.len = RS_PLACED_LEN;
	p->m.placed.len = len;
	p->m.placed.slot = ps->id;
	p->write.map = map;
	p->write.off = off;
	p->write.len = len;
	p->write.rkey = ps->rkey;
	p->write.raddr = ps->addr + ps->filled;
	ps->filled += len;
	if (ps->filled == ps->len || last) {
		ps->open = false;
		rs_ac_ctrl(ac, RS_CTRL_SINK_DONE);
	}
}

/*
 * Called with qp->lock held: what @qp owes its peer for no AC, into @p: a
 * KEEPALIVE, a REJECT, or a CLOSE for an AC this host lacks.
 */
static bool rs_plan_qp_ctrl(struct rs_qp *qp, struct rs_tx_plan *p)
{
	struct rs_reject *rej;

	if (qp->ping_pending) {
		qp->ping_pending = false;
		p->m.type = RS_MSG_KEEPALIVE;
		return true;
	}

	rej = list_first_entry_or_null(&qp->rejects, struct rs_reject, node);
	if (!rej)
		return false;
	list_del(&rej->node);
	if (!rej->own)
		qp->nr_rejects--;
	p->m.dst_conn = rej->dst;
	if (rej->src) {
		p->m.type = RS_MSG_CLOSE;
		p->m.src_conn = rej->src;
	} else {
		p->m.type = RS_MSG_REJECT;
		p->m.len = RS_REJECT_LEN;
		p->m.error = rej->error;
	}
	kfree(rej);
	return true;
}

/*
 * Called with qp->lock held: the oldest control record an AC owes, into
 * @p: RS_PLAN_UNIT, RS_PLAN_FULL if it does not go in @tx, RS_PLAN_NONE
 * if none is owed.
 */
static enum rs_plan_res rs_plan_ac_ctrl(struct rs_qp *qp, const struct rs_tx *tx,
					struct rs_tx_plan *p)
{
	struct rs_ac *ac;

	while ((ac = list_first_entry_or_null(&qp->ctrl, struct rs_ac, ctrl_node))) {
		u32 bits = ac->ctrl_pending;

		/* A SEND registers one sink at most. */
		if ((bits & RS_CTRL_SINK) && tx->sink_reg)
			return RS_PLAN_FULL;
		p->m.dst_conn = ac->remote_id;
		p->m.src_conn = ac->id;
		if (bits & RS_CTRL_CONNECT) {
			ac->ctrl_pending &= ~RS_CTRL_CONNECT;
			p->m.type = RS_MSG_CONNECT;
			p->m.len = RS_CONN_PARAMS_LEN;
			p->m.conn.port = ac->port;
			/* An older peer sees none: getpeername() says 0. */
			if (qp->version >= 7)
				p->m.conn.cport = ac->cport;
			p->m.conn.slot_size = ac->rf->rx_slot_size;
			p->m.conn.credits = rs_plan_grant(qp, ac, p);
			p->m.conn.rkey = rs_plan_rkey(qp, ac, tx, p);
		} else if (bits & RS_CTRL_ACCEPT) {
			ac->ctrl_pending &= ~RS_CTRL_ACCEPT;
			p->m.type = RS_MSG_ACCEPT;
			p->m.len = RS_CONN_PARAMS_LEN;
			p->m.conn.slot_size = ac->rf->rx_slot_size;
			p->m.conn.credits = rs_plan_grant(qp, ac, p);
			p->m.conn.rkey = rs_plan_rkey(qp, ac, tx, p);
		} else if (bits & (RS_CTRL_SINK | RS_CTRL_SINK_CANCEL | RS_CTRL_SINK_DONE)) {
			rs_plan_sink_ctrl(ac, bits, p);
		} else if (bits & RS_CTRL_RETURN) {
			ac->ctrl_pending &= ~RS_CTRL_RETURN;
			p->m.type = RS_MSG_CREDIT;
			p->m.flags = RS_F_RETURN;
			p->m.credits = rs_ac_take_return(ac);
		} else if (bits & RS_CTRL_RECLAIM) {
			ac->ctrl_pending &= ~RS_CTRL_RECLAIM;
			p->m.type = RS_MSG_CREDIT;
			p->m.flags = RS_F_RECLAIM;
		} else if ((bits & (RS_CTRL_CREDIT | RS_CTRL_WANT)) && !ac->remote_id) {
			/* Not before the ACCEPT: that brings the peer's id. */
			ac->ctrl_pending &= ~(RS_CTRL_CREDIT | RS_CTRL_WANT);
		} else if (bits & (RS_CTRL_CREDIT | RS_CTRL_WANT)) {
			/* A grant, a WANT, or both in one record. */
			ac->ctrl_pending &= ~(RS_CTRL_CREDIT | RS_CTRL_WANT);
			p->m.type = RS_MSG_CREDIT;
			p->lazy = !ac->grant_urgent;
			p->m.credits = rs_plan_grant(qp, ac, p);
			if (!ac->credits_out)
				ac->grant_urgent = false;
			if ((bits & RS_CTRL_WANT) && rs_ac_take_want(ac))
				p->m.flags = RS_F_WANT;
		}
		/* Version 4: a grant's slot indices are in its payload. */
		if (rs_proto_slots_off(&p->m, qp->version) >= 0)
			p->m.len += rs_plan_granted(&p->m) * RS_SLOT_IDX_LEN;
		if (!ac->ctrl_pending)
			list_del_init(&ac->ctrl_node);
		/* Nothing left to say: credits went with data, or came. */
		if (!p->m.type || (p->m.type == RS_MSG_CREDIT && !p->m.credits &&
				   !(p->m.flags & (RS_F_WANT | RS_F_RECLAIM)))) {
			memset(p, 0, sizeof(*p));
			continue;
		}
		kref_get(&ac->ref);
		p->ac = ac;
		return RS_PLAN_UNIT;
	}
	return RS_PLAN_NONE;
}

/*
 * Called with qp->lock held: the peer's gate (gate.h) learns what @qp's
 * scheduler sent and whether it has data left, and the QPs it held that
 * may go now are kicked (a member is not down: rs_qp_down() takes it out
 * under both locks before its send work can be cancelled).  With
 * RS_GATE_CHECK, whether @qp may take a chunk now; if not, it is kicked in
 * turn.  With RS_GATE_IDLE it leaves, whatever its scheduler holds: with
 * split off, a message's AC out of credits keeps the QP (rs_plan_pick()).
 *
 * With one QP per peer there is nothing to share (a host that talks to
 * itself has two, one each way), and the gate costs a lock per chunk:
 * off, once each QP has left it (its own fields, which only it sets).
 */
bool rs_qp_gate(struct rs_qp *qp, enum rs_gate_op op)
{
	bool gated = READ_ONCE(rs_qps_per_peer) > 1;
	struct rs_peer *peer = qp->peer;
	struct rs_gate_member *m;
	bool open = true;

	lockdep_assert_held(&qp->lock);
	if (!gated && !qp->gm.in)
		return true;
	spin_lock(&peer->gate_lock);
	peer->gate.slack = READ_ONCE(rs_inflight_max);
	if (qp->state == RS_QP_UP && gated && op != RS_GATE_IDLE)
		rs_gate_update(&peer->gate, &qp->gm, &qp->sched);
	else
		rs_gate_leave(&peer->gate, &qp->gm);
	if (op == RS_GATE_CHECK && !rs_gate_open(&peer->gate, &qp->gm, &qp->sched)) {
		rs_qp_stat(qp, RS_STAT_GATE_HELD, 1);
		open = false;
	}
	while ((m = rs_gate_released(&peer->gate, &qp->sched)))
		queue_work(rs_wq, &container_of(m, struct rs_qp, gm)->send_work);
	spin_unlock(&peer->gate_lock);
	return open;
}

/*
 * Called with qp->lock held: the scheduler's next AC that can send; the
 * others leave it.  With split off, a message once started keeps the QP
 * to its last chunk, waiting for credits if need be, as one large send
 * would: the head-of-line blocking that splitting avoids, for comparison.
 * NULL if none can send now.
 */
static struct rs_ac *rs_plan_pick(struct rs_qp *qp)
{
	struct rs_sched_entity *se;
	struct rs_ac *ac = qp->hol_ac;

	if (ac && !READ_ONCE(rs_split)) {
		if (!rs_ac_can_send(ac))
			return NULL;	/* its credits kick the sender */
	} else {
		ac = NULL;
	}
	qp->hol_ac = NULL;
	while (!ac) {
		se = rs_sched_next(&qp->sched);
		if (!se)
			return NULL;
		ac = container_of(se, struct rs_ac, se);
		if (rs_ac_can_send(ac))
			break;
		rs_sched_charge(&qp->sched, se, 0, rs_ac_sched_after(ac));
		ac = NULL;
	}
	return ac;
}

/*
 * Called with qp->lock held: the DATA record of @op's next chunk of @len
 * bytes into @p, its payload in @map: written into the peer's sink
 * (@sink), placed in its slot (@placed), sent in place (@zc), or copied.
 */
static void rs_plan_chunk(struct rs_qp *qp, struct rs_ac *ac, struct rs_send *op,
			  const struct rs_dma_map *map, u32 len, bool sink, bool placed, bool zc,
			  struct rs_tx_plan *p)
{
	u32 slot = 0;

	p->m.type = RS_MSG_DATA;
	if (!op->sent)
		op->seq = ac->tx_seq++;
	p->m.seq = op->seq;
	p->m.msg_len = op->len;
	/* A small message: large chunks make way a while (0: none yet). */
	if (!op->sent && op->len <= READ_ONCE(rs_pullup_max))
		qp->small_at = jiffies ?: 1;
	p->m.offset = op->sent;
	p->m.len = len;
	if (!op->sent)
		p->m.flags |= RS_F_FIRST;
	/*
	 * Version 6: into the peer's sink, no credit.  Version 4: the chunk
	 * goes to the peer's oldest slot granted.
	 */
	if (!sink && qp->version >= 4)
		slot = rs_ac_take_slot(ac);
	else if (!sink)
		ac->send_credits--;
	if (sink) {
		rs_plan_sink_chunk(ac, p, map, op->addr + op->sent, len,
				   op->sent + len == op->len && !rs_ac_send_next(ac, op));
	} else if (placed) {
		p->m.flags |= RS_F_PLACED;
		p->m.len = RS_PLACED_LEN;
		p->m.placed.len = len;
		p->m.placed.slot = slot;
		p->write.map = map;
		p->write.off = op->addr + op->sent;
		p->write.len = len;
		p->write.rkey = ac->peer_rkey;
		p->write.raddr = (u64)slot * ac->peer_stride;
	} else if (zc) {
		p->zc_map = map;
		p->zc_off = op->addr + op->sent;
	} else if (op->zc) {
		p->zc_copy = true;
		p->zc_off = op->addr + op->sent;
	} else {
		p->src = ac->rf->data + op->addr + op->sent;
	}
	/* The SEND keeps the pages until it completes. */
	if (op->zc) {
		kref_get(&op->zc->ref);
		p->zc = op->zc;
	}
	op->sent += len;
	if (op->sent == op->len) {
		p->m.flags |= RS_F_LAST;
		list_del(&op->node);
		p->op = op;
	} else {
		qp->hol_ac = ac;	/* mid-message; see rs_plan_pick() */
	}
	ac->tx_chunks++;
	ac->tx_bytes += len;
	if (p->op)
		ac->tx_msgs++;
	rs_sched_charge(&qp->sched, &ac->se, RS_HDR_LEN + len, rs_ac_sched_after(ac));
}

/*
 * Called with qp->lock held: @ac's next unit into @p, as rs_plan() says:
 * a chunk, a CLOSE or SHUTDOWN, or the DONE of the peer's sink before them.
 */
static enum rs_plan_res rs_plan_op(struct rs_qp *qp, const struct rs_tx *tx,
				   struct rs_tx_plan *p, struct rs_ac *ac, size_t room, bool empty,
				   u32 join_max)
{
	struct rs_send *op = list_first_entry(&ac->sendq, struct rs_send, node);
	bool zc = false, placed = false, sink = false;
	const struct rs_dma_map *map;
	u32 len = 0, rec;

	map = op->opcode == RDMASHARE_OP_SEND ? rs_op_map(ac, op) : NULL;
	if (ac->psink.open && (!map || op->sent == op->len)) {
		/*
		 * Version 6: the peer's sink ends before a CLOSE, an empty
		 * message, or a chunk that cannot be written (the data area
		 * not mapped yet).
		 */
		if (tx->imm_conn)
			return RS_PLAN_FULL;
		rs_plan_sink_end(ac, p);
		return RS_PLAN_UNIT;
	}
	if (op->opcode == RDMASHARE_OP_SEND) {
		sink = ac->psink.open;
		if (sink) {
			if (tx->nr_writes == RS_TX_MAX_WRITES)
				return RS_PLAN_FULL;
			len = rs_plan_sink_len(qp, ac, map, op);
		} else {
			len = min3(op->len - op->sent, ac->peer_slot_size, READ_ONCE(rs_tx_chunk));
			placed = rs_tx_placed(qp, ac, map, tx, op->addr + op->sent, len);
		}
		zc = !placed && !sink && rs_tx_in_place(qp, map, op->addr + op->sent, len);
		/*
		 * While small messages go (rs_tx_bulk_max() under
		 * inflight_max), a large chunk waits, first in line, until
		 * less than that is in flight (what the SEND holds goes): the
		 * scheduler chooses again when it can go, and a small message
		 * that comes meanwhile (a new flow, served first) does not
		 * wait behind it.  inflight_max holds SENDs once they are
		 * built (rs_tx_may_post()).
		 */
		if ((placed || zc || sink) && qp->tx_inflight &&
		    qp->tx_inflight_bytes >= rs_tx_bulk_max(qp) &&
		    qp->tx_inflight_bytes < READ_ONCE(rs_inflight_max)) {
			rs_qp_stat(qp, RS_STAT_BULK_HELD, 1);
			return RS_PLAN_FULL;
		}
		/*
		 * Version 5: a placed chunk that continues a message and goes
		 * alone needs no record: a WRITE WITH IMMEDIATE, which the
		 * next chunks join while they go on into the next slots.
		 */
		p->imm = placed && op->sent && len > join_max && qp->version >= 5;
		rec = placed || sink ? RS_PLACED_LEN : len;
		if (tx->imm_conn) {
			if (!p->imm || !rs_tx_imm_joins(qp, ac, map, tx, op->addr + op->sent, len))
				return RS_PLAN_FULL;
		} else if (rs_proto_rec_len(qp->version, rec) > room ||
			   (!empty && (len > join_max || zc))) {
			return RS_PLAN_FULL;
		}
	} else if (tx->imm_conn) {
		return RS_PLAN_FULL;		/* a CLOSE: a record */
	}
	p->m.dst_conn = ac->remote_id;
	p->m.src_conn = ac->id;
	/* A full CLOSE's credits are moot. */
	if (op->opcode != RDMASHARE_OP_CLOSE || qp->version < 4)
		p->m.credits = rs_plan_piggyback(qp, ac);

	if (op->opcode == RDMASHARE_OP_CLOSE) {
		list_del(&op->node);
		p->m.type = RS_MSG_CLOSE;
		p->op = op;
		ac->close_sent = true;
		rs_sched_dequeue(&qp->sched, &ac->se);
	} else if (op->opcode == RDMASHARE_OP_SHUTDOWN) {
		/* A CLOSE may follow it. */
		list_del(&op->node);
		p->m.type = RS_MSG_CLOSE;
		p->m.flags = RS_F_HALF;
		p->op = op;
		rs_sched_charge(&qp->sched, &ac->se, RS_HDR_LEN, rs_ac_sched_after(ac));
	} else {
		rs_plan_chunk(qp, ac, op, map, len, sink, placed, zc, p);
	}
	rs_ac_after_chunk(ac);
	kref_get(&ac->ref);
	p->ac = ac;
	return RS_PLAN_UNIT;
}

/*
 * Called with qp->lock held: may @tx's tail record, a whole message of an
 * AC file copied into it, take that AC's next write too?  An AC file is a
 * byte stream, in which nothing tells writes apart, so a small one that
 * comes while the SEND waits (autocork) is appended to it, as TCP appends
 * to a segment not sent yet: no record, no credit and no slot of its own,
 * and its reader empties one slot where it would have emptied one per
 * write.  Up to @join_max bytes, a chunk the peer's slot takes; the
 * scheduler is charged its bytes, and an AC waiting for credits (whose
 * record took its last) may still append.
 */
static bool rs_plan_append(struct rs_qp *qp, const struct rs_tx *tx, struct rs_tx_plan *p,
			   size_t room, u32 join_max)
{
	struct rs_ac *ac = tx->tail_ac;
	struct rs_send *op, *next;
	u32 len;

	op = list_first_entry_or_null(&ac->sendq, struct rs_send, node);
	if (!op || op->opcode != RDMASHARE_OP_SEND || !op->file || op->sent || op->zc ||
	    ac->psink.open)
		return false;
	len = tx->tail_m.len + op->len;
	if (len > join_max || len > ac->peer_slot_size || len > READ_ONCE(rs_tx_chunk) ||
	    rs_proto_rec_len(qp->version, len) -
	    rs_proto_rec_len(qp->version, tx->tail_m.len) > room)
		return false;
	p->m = tx->tail_m;
	p->m.msg_len = len;
	p->m.len = len;
	p->append = true;
	p->src = ac->rf->data + op->addr;
	list_del(&op->node);
	op->sent = op->len;
	p->op = op;
	ac->tx_bytes += op->len;
	qp->small_at = jiffies ?: 1;
	rs_sched_charge(&qp->sched, &ac->se, op->len, rs_ac_sched_after(ac));
	/* A SEND next and no credit: it stalled already, with its record. */
	next = list_first_entry_or_null(&ac->sendq, struct rs_send, node);
	if (ac->send_credits || !next || next->opcode != RDMASHARE_OP_SEND)
		rs_ac_after_chunk(ac);
	kref_get(&ac->ref);
	p->ac = ac;
	return true;
}

/*
 * Called with qp->lock held: the next unit to send for @tx, if it takes at
 * most @room bytes of the SEND and, unless the SEND is @empty, is not a
 * chunk of more than @join_max bytes (copied, placed or in place) nor one
 * that goes in place.  In this order: what the QP owes for no AC, an AC's
 * control record, then the next unit of the AC the scheduler picks.  A
 * unit that does not fit stays first in line (RS_PLAN_FULL): nothing
 * changed but what the scheduler would have done anyway on the way to it.
 */
static enum rs_plan_res rs_plan(struct rs_qp *qp, const struct rs_tx *tx, struct rs_tx_plan *p,
				size_t room, bool empty, u32 join_max)
{
	struct rs_ac *ac, *hol = qp->hol_ac;
	enum rs_plan_res res;

	/* The slot indices are written only as far as a grant goes. */
	memset(p, 0, offsetof(struct rs_tx_plan, slots));
	if (room < rs_proto_rec_len(qp->version, rs_ctrl_max(qp)))
		return RS_PLAN_FULL;
	/* A WRITE WITH IMMEDIATE has no SEND for records to join. */
	if (tx->imm_conn && (qp->ping_pending || !list_empty(&qp->rejects) ||
			     !list_empty(&qp->ctrl)))
		return RS_PLAN_FULL;
	if (tx->tail_ac && rs_plan_append(qp, tx, p, room, join_max)) {
		rs_qp_gate(qp, RS_GATE_SYNC);
		return RS_PLAN_UNIT;
	}
	if (rs_plan_qp_ctrl(qp, p))
		return RS_PLAN_UNIT;
	res = rs_plan_ac_ctrl(qp, tx, p);
	if (res != RS_PLAN_NONE)
		return res;
	/* The peer's other QPs may be owed their share first. */
	if (!rs_qp_gate(qp, RS_GATE_CHECK))
		return RS_PLAN_NONE;
	ac = rs_plan_pick(qp);
	if (!ac) {
		rs_qp_gate(qp, RS_GATE_IDLE);	/* until credits kick it */
		return RS_PLAN_NONE;
	}
	res = rs_plan_op(qp, tx, p, ac, room, empty, join_max);
	if (res == RS_PLAN_FULL)
		qp->hol_ac = hol;
	else
		rs_qp_gate(qp, RS_GATE_SYNC);
	return res;
}

/*
 * Post @tx's SEND: its buffer, or for a chunk in place the header from the
 * buffer, the payload's pages, the padding from the buffer (zeroes).  The
 * registrations and the WRITEs of placed chunks it carries go first, in
 * one chain, unsignaled: the SEND's completion says they made it.
 */
static int rs_post(struct rs_qp *qp, struct rs_tx *tx)
{
	u32 lkey = qp->rdev->pd->local_dma_lkey, buf_len = tx->len, pad, n, i;
	struct ib_send_wr *head = NULL, **link = &head;
	struct rs_tx_wrs *w = qp->wrs;
	struct ib_sge *sge = w->sge;

	if (tx->sink_reg) {
		rs_mr_reg_wr(tx->sink_reg->mr, &w->sink_reg);
		w->sink_reg.wr.wr_cqe = &tx->err_cqe;
		*link = &w->sink_reg.wr;
		link = &w->sink_reg.wr.next;
	}
	for (i = 0; i < tx->nr_regs; i++) {
		rs_rx_mr_reg_wr(tx->regs[i], &w->reg[i]);
		w->reg[i].wr.wr_cqe = &tx->err_cqe;
		*link = &w->reg[i].wr;
		link = &w->reg[i].wr.next;
	}
	for (i = 0; i < tx->nr_writes; i++) {
		const struct rs_tx_write *x = &tx->writes[i];
		struct ib_rdma_wr *r = &w->write[i];

		memset(r, 0, sizeof(*r));
		r->wr.opcode = IB_WR_RDMA_WRITE;
		r->wr.wr_cqe = &tx->err_cqe;
		r->wr.sg_list = w->write_sge[i];
		/* rs_tx_placed() counted them. */
		r->wr.num_sge = rs_dma_map_sges(x->map, lkey, x->off, x->len, w->write_sge[i],
						qp->max_send_sge);
		if (WARN_ON_ONCE(!r->wr.num_sge))
			return -EINVAL;
		r->remote_addr = x->raddr;
		r->rkey = x->rkey;
		*link = &r->wr;
		link = &r->wr.next;
	}
	if (tx->imm_conn) {
		/* Version 5: the WRITE is all of it, its immediate the AC. */
		struct ib_rdma_wr *r = &w->write[tx->nr_writes - 1];

		r->wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
		r->wr.ex.imm_data = cpu_to_be32(tx->imm_conn);
		r->wr.wr_cqe = &tx->cqe;
		r->wr.send_flags = IB_SEND_SIGNALED;
		return ib_post_send(qp->qp, head, NULL);
	}

	if (tx->zc_map) {
		pad = tx->len - RS_HDR_LEN - tx->zc_len;
		buf_len = RS_HDR_LEN + pad;
	}
	sge[0].addr = tx->dma;
	sge[0].length = tx->zc_map ? RS_HDR_LEN : buf_len;
	sge[0].lkey = lkey;
	n = 1;
	ib_dma_sync_single_for_device(qp->rdev->ibdev, tx->dma, buf_len, DMA_TO_DEVICE);
	if (tx->zc_map) {
		/* rs_tx_in_place() counted them. */
		n += rs_dma_map_sges(tx->zc_map, lkey, tx->zc_off, tx->zc_len, sge + 1,
				     qp->max_send_sge - 1 - !!pad);
		if (WARN_ON_ONCE(n == 1))
			return -EINVAL;
		if (pad) {
			sge[n].addr = tx->dma + RS_HDR_LEN;
			sge[n].length = pad;
			sge[n].lkey = lkey;
			n++;
		}
	}
	memset(&w->send, 0, sizeof(w->send));
	w->send.wr_cqe = &tx->cqe;
	w->send.sg_list = sge;
	w->send.num_sge = n;
	w->send.opcode = IB_WR_SEND;
	w->send.send_flags = IB_SEND_SIGNALED;
	*link = &w->send;
	return ib_post_send(qp->qp, head, NULL);
}

/* Bytes one SEND may take: this host's TX buffer, the peer's RX buffer. */
static size_t rs_tx_room(struct rs_qp *qp)
{
	size_t room = RS_HDR_LEN + rs_chunk_size;

	if (qp->version >= 2)
		room = min_t(size_t, room, qp->peer_rx_size);
	return room;
}

/*
 * @w continues @tx's last WRITE on both sides (the next chunk of a message
 * into the next slot): that WRITE takes it, if its pages fit the SGEs.  One
 * work request where there were two, and one ACK from rxe, which asks for
 * one at the end of every request.  Placed chunks share a SEND only when
 * coalesce_max is raised above pullup_max.
 */
static bool rs_tx_write_join(const struct rs_qp *qp, struct rs_tx *tx,
			     const struct rs_tx_write *w)
{
	if (!rs_tx_write_joins(qp, tx, w))
		return false;
	tx->writes[tx->nr_writes - 1].len += w->len;
	return true;
}

/*
 * @p's write appended to @tx's tail record (rs_plan_append()): the header
 * says the message is longer, its payload and padding grow, and the
 * records after it (control records only: another DATA record would be
 * the tail) move up.
 */
static int rs_tx_append(struct rs_qp *qp, struct rs_tx *tx, const struct rs_tx_plan *p)
{
	u32 old = tx->tail_m.len, add = p->m.len - old;
	size_t old_rec = rs_proto_rec_len(qp->version, old);
	size_t rec = rs_proto_rec_len(qp->version, p->m.len);
	void *dst = tx->buf + tx->tail_off;
	int ret;

	memmove(dst + rec, dst + old_rec, tx->len - tx->tail_off - old_rec);
	ret = rs_proto_encode(&p->m, qp->version, dst, RS_HDR_LEN);
	if (WARN_ON_ONCE(ret < 0))
		return ret;
	memcpy(dst + RS_HDR_LEN + old, p->src, add);
	memset(dst + RS_HDR_LEN + p->m.len, 0, rec - RS_HDR_LEN - p->m.len);
	tx->len += rec - old_rec;
	tx->tail_m = p->m;
	rs_qp_stat(qp, RS_STAT_TX_COPIED, add);
	rs_qp_stat(qp, RS_STAT_TX_BYTES, add);
	rs_qp_stat(qp, RS_STAT_TX_APPENDED, 1);
	return 0;
}

/*
 * Append @p's record to @tx (rs_plan() made sure it fits): the header, a
 * DATA payload copied from the data area (unless it goes in place: then
 * @tx is empty, and the payload is for rs_post()), the padding.  The
 * record's AC (if any) and operation stay with @tx until its SEND completes.
 */
static int rs_tx_add(struct rs_qp *qp, struct rs_tx *tx, const struct rs_tx_plan *p)
{
	size_t room = RS_HDR_LEN + rs_chunk_size - tx->len, rec;
	void *dst = tx->buf + tx->len;
	int len, slots;

	/* Told how it went when @tx completes, or never goes. */
	if (p->reg)
		tx->regs[tx->nr_regs++] = p->reg;
	if (p->imm) {
		/* No record: @tx is this WRITE WITH IMMEDIATE (rs_plan() joins). */
		if (!rs_tx_write_join(qp, tx, &p->write))
			tx->writes[tx->nr_writes++] = p->write;
		tx->placed_bytes += p->write.len;
		tx->imm_conn = p->m.dst_conn;
		goto items;
	}
	if (p->append) {
		len = rs_tx_append(qp, tx, p);
		if (len)
			return len;
		goto items;
	}
	len = rs_proto_encode(&p->m, qp->version, dst, room);
	rec = rs_proto_rec_len(qp->version, p->m.len);
	if (WARN_ON_ONCE(len < 0 || rec > room))
		return len < 0 ? len : -ENOSPC;
	slots = rs_proto_slots_off(&p->m, qp->version);
	if (slots >= 0)
		rs_proto_put_slots(dst + RS_HDR_LEN + slots, p->slots, rs_plan_granted(&p->m));
	if (p->sink)
		tx->sink_reg = p->sink;
	if (rs_proto_placed(&p->m) || rs_proto_sunk(&p->m)) {
		/* Its record is all of it the SEND carries. */
		if (!rs_tx_write_join(qp, tx, &p->write))
			tx->writes[tx->nr_writes++] = p->write;
		tx->placed_bytes += p->write.len;
		memset(dst + len, 0, rec - len);
	} else if (p->zc_map) {
		/* The padding follows the header in the buffer. */
		tx->zc_map = p->zc_map;
		tx->zc_off = p->zc_off;
		tx->zc_len = p->m.len;
		memset(dst + RS_HDR_LEN, 0, rec - RS_HDR_LEN - p->m.len);
	} else {
		if (p->zc_copy) {
			rs_zc_copy(p->zc, p->zc_off, dst + RS_HDR_LEN, p->m.len);
			rs_qp_stat(qp, RS_STAT_TX_COPIED, p->m.len);
		} else if (p->m.type == RS_MSG_DATA) {
			memcpy(dst + RS_HDR_LEN, p->src, p->m.len);
			rs_qp_stat(qp, RS_STAT_TX_COPIED, p->m.len);
		}
		memset(dst + RS_HDR_LEN + p->m.len, 0, rec - RS_HDR_LEN - p->m.len);
	}
	/* An AC file's whole message, copied: its next writes may follow. */
	if (p->m.type == RS_MSG_DATA) {
		tx->tail_ac = p->src && p->op && p->op->file &&
			      (p->m.flags & RS_F_FIRST) ? p->ac : NULL;
		tx->tail_off = tx->len;
		tx->tail_m = p->m;
	}
	tx->len += rec;
	/*
	 * The peer may wait for it: not held back (rs_tx_may_post()).  A
	 * WANT alone is for this end's own stalled sender, and a grant at
	 * half the peer's window leaves it the other half (rs_rx_grant()):
	 * they ride with the next SEND, which goes once the one in flight
	 * completes.
	 */
	if (p->m.type != RS_MSG_DATA && p->m.type != RS_MSG_KEEPALIVE &&
	    !(p->m.type == RS_MSG_CREDIT && !(p->m.flags & ~RS_F_WANT) &&
	      (!p->m.credits || p->lazy)))
		tx->urgent = true;
items:
	if (p->ac) {		/* not for a KEEPALIVE or a REJECT */
		tx->items[tx->nr_items].ac = p->ac;
		tx->items[tx->nr_items].op = p->op;
		tx->items[tx->nr_items].zc = p->zc;
		tx->nr_items++;
		if (p->op)
			atomic_inc(&p->ac->rf->ops_on_wire);
	}
	if (p->append)
		return 0;	/* counted by rs_tx_append(), no message of its own */
	trace_rdmashare_msg_post(qp, &p->m);
	rs_qp_count_msg(qp, &p->m, false);
	return 0;
}

/*
 * Called with qp->lock held: may the SEND being built go now?  At once when
 * nothing is in flight.  Otherwise (autocork) only once it is closed, so
 * that what comes in the meantime joins it, or holds a control record the
 * peer may be waiting for (credits above all); and only while the bytes in
 * flight are under inflight_max, which bounds what a new message waits
 * behind: a completion posts it.
 */
static bool rs_tx_may_post(struct rs_qp *qp, struct rs_tx *tx)
{
	if (!qp->tx_inflight)
		return true;
	if (!tx->closed && !tx->urgent && READ_ONCE(rs_autocork))
		return false;
	return qp->tx_inflight_bytes < READ_ONCE(rs_inflight_max);
}

/*
 * The sender: called with RS_XMIT_BUSY held.  Each round plans one unit
 * under the QP's lock and appends it to the open SEND outside it; a SEND
 * is posted once nothing more joins it now and rs_tx_may_post() agrees.
 * Returns true if it stopped after @budget SENDs (work may be left: the
 * caller hands over to the work item).
 */
static bool rs_xmit(struct rs_qp *qp, u32 budget)
{
	struct rs_ac *unit_ac = NULL;
	enum rs_plan_res res;
	struct rs_tx_plan plan;
	bool posted = true;
	u32 join_max, writes;
	struct rs_tx *tx;
	int ret;

	for (;;) {
		spin_lock_irq(&qp->lock);
		if (qp->state != RS_QP_UP)
			goto out_unlock;
		tx = qp->tx_open;
		if (!tx) {
			/* All in flight: a completion comes. */
			if (!qp->nr_tx_free)
				goto out_unlock;
			tx = &qp->tx[qp->tx_free[--qp->nr_tx_free]];
			tx->len = 0;
			tx->closed = false;
			tx->urgent = false;
			tx->zc_map = NULL;
			tx->placed_bytes = 0;
			tx->imm_conn = 0;
			tx->tail_ac = NULL;
			qp->tx_open = tx;
		}
		if (!tx->closed) {
			/*
			 * Version 2: a SEND takes what comes next while it
			 * fits, but a chunk over coalesce_max has one of its
			 * own.  Version 1: one unit per SEND.
			 */
			join_max = qp->version >= 2 ? READ_ONCE(rs_coalesce_max) : 0;
			res = rs_plan(qp, tx, &plan, rs_tx_room(qp) - tx->len, !tx->len,
				      join_max);
			if (res == RS_PLAN_UNIT) {
				spin_unlock_irq(&qp->lock);
				ret = rs_tx_add(qp, tx, &plan);
				if (ret)
					goto fail_plan;
				if (!join_max || tx->nr_items == RS_TX_BATCH_MAX || plan.zc_map ||
				    tx->nr_writes == RS_TX_MAX_WRITES ||
				    (plan.m.type == RS_MSG_DATA && !plan.imm &&
				     rs_proto_chunk_len(&plan.m) > join_max))
					tx->closed = true;
				continue;
			}
			if (res == RS_PLAN_FULL)
				tx->closed = true;
		}
		/* Nothing joins it now. */
		if (!tx->len && !tx->imm_conn) {
			qp->tx_free[qp->nr_tx_free++] = tx - qp->tx;
			qp->tx_open = NULL;
			goto out_unlock;
		}
		if (!rs_tx_may_post(qp, tx))
			goto out_unlock;
		qp->tx_open = NULL;
		qp->tx_inflight++;
		qp->tx_inflight_bytes += tx->len + tx->placed_bytes;
		spin_unlock_irq(&qp->lock);

		/* Its completion may release it before rs_post() returns. */
		writes = tx->nr_writes;
		ret = rs_post(qp, tx);
		if (ret)
			goto fail;
		/* Only the sender opens @tx again: its sizes hold. */
		if (tx->len) {
			rs_qp_stat(qp, RS_STAT_TX_SENDS, 1);
			rs_qp_stat(qp, RS_STAT_TX_WIRE_BYTES, tx->len);
		}
		rs_qp_stat(qp, RS_STAT_TX_PLACED, tx->placed_bytes);
		rs_qp_stat(qp, RS_STAT_TX_WRITES, writes);
		if (!--budget)
			return true;
	}

out_unlock:
	spin_unlock_irq(&qp->lock);
	return false;

fail_plan:
	/*
	 * The unit that did not make it into the SEND, then the SEND; its AC
	 * last, as the registration it may have added is its file's.
	 */
	if (plan.op)
		rs_ac_send_done(plan.ac, plan.op, -EIO);
	if (plan.zc)
		rs_zc_put(plan.zc);
	/* rs_tx_add() gave it to @tx, or failed before. */
	if (plan.sink && tx->sink_reg != plan.sink)
		rs_sink_put(plan.sink);
	unit_ac = plan.ac;
	spin_lock_irq(&qp->lock);
	qp->tx_open = NULL;
	spin_unlock_irq(&qp->lock);
	posted = false;		/* not counted in flight */
fail:
	pr_warn_ratelimited("QP %u: cannot post a send: %d\n", qp->qp_num, ret);
	rs_qp_stat(qp, RS_STAT_ERRORS, 1);
	rs_qp_down(qp, -EIO);
	rs_tx_release(qp, tx, -EIO, posted);
	if (unit_ac)
		rs_ac_put(unit_ac);
	return false;
}

/* SENDs one caller posts before it leaves the rest to the work item. */
#define RS_XMIT_BUDGET	16

/*
 * Something may be sendable: send it from here if nobody is the sender
 * (RDS's acquire_in_xmit), so that neither an application's SEND nor a
 * completion waits for a work item.  A caller that finds the sender busy
 * marks the QP pending; the sender looks again before it lets go.  Process
 * context only.
 */
void rs_qp_push(struct rs_qp *qp)
{
	bool more;

	set_bit(RS_XMIT_PENDING, &qp->xmit_flags);
	/* Pairs with the barrier after the sender let go of RS_XMIT_BUSY. */
	smp_mb__after_atomic();
	while (!test_and_set_bit_lock(RS_XMIT_BUSY, &qp->xmit_flags)) {
		clear_bit(RS_XMIT_PENDING, &qp->xmit_flags);
		/* Cleared before the sender looks at the queues. */
		smp_mb__after_atomic();
		more = rs_xmit(qp, RS_XMIT_BUDGET);
		clear_bit_unlock(RS_XMIT_BUSY, &qp->xmit_flags);
		/*
		 * Let go before looking at RS_XMIT_PENDING (pairs with the
		 * barrier after a pusher set it) and at the waitqueue of
		 * rs_qp_xmit_stop().
		 */
		smp_mb__after_atomic();
		wake_up_var(&qp->xmit_flags);
		if (more) {
			rs_qp_kick(qp);
			return;
		}
		if (!test_bit(RS_XMIT_PENDING, &qp->xmit_flags))
			return;
	}
}

void rs_sender_work(struct work_struct *work)
{
	rs_qp_push(container_of(work, struct rs_qp, send_work));
}

/*
 * The teardown, once the QP is down and the work item cancelled: become the
 * sender for good, so that nothing is posted any more, and complete what
 * the SEND being built holds.
 */
void rs_qp_xmit_stop(struct rs_qp *qp)
{
	struct rs_tx *tx;

	wait_var_event(&qp->xmit_flags,
		       !test_and_set_bit_lock(RS_XMIT_BUSY, &qp->xmit_flags));
	spin_lock_irq(&qp->lock);
	tx = qp->tx_open;
	qp->tx_open = NULL;
	spin_unlock_irq(&qp->lock);
	if (tx)
		rs_tx_release(qp, tx, -ECONNRESET, false);
}
