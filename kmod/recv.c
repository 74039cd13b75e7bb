// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: the receive path.
 *
 * A SEND from a peer lands in a buffer of the device's SRQ; its completion
 * (rs_rx_done()) checks the whole batch of records (proto.c), then takes
 * them in order: a DATA chunk goes to a receive slot of its AC's file and
 * a RECV completion to the file's CQ (copied from the SEND, or version 4
 * written into the slot by the peer already and only named by the record),
 * credits go to the AC's sender (credit.c), and what opens or closes an AC
 * goes to the AC layer (ac.c, rs_ac_peer_*()).  From version 5 a chunk
 * that continues a message may come as an RDMA WRITE WITH IMMEDIATE
 * instead: it consumed a buffer too, but left it untouched; the immediate
 * names the AC, and the chunk is that AC's next (rs_recv_imm()).  The
 * buffer goes back to the SRQ before the completion returns: nothing waits
 * for an application.
 *
 * Anything from the network is untrusted: a record that does not fit what
 * this end granted or expects takes its QP down, and only that QP.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/math64.h>
#include <linux/nospec.h>
#include <linux/poll.h>

#include <rdma/ib_verbs.h>

#include "acfile.h"
#include "rdmashare.h"
#include "sink.h"
#include "transport.h"

/* Called with the file's rx_lock held: @m's @len bytes came for @ac. */
static void rs_recv_account(struct rs_ac *ac, const struct rs_proto_msg *m, u32 len)
{
	ac->rx_off += len;
	ac->rx_chunks++;
	ac->rx_bytes += len;
	if (m->flags & RS_F_LAST) {
		ac->rx_seq++;
		ac->rx_off = 0;
		ac->rx_msgs++;
	}
}

/*
 * A DATA chunk into a receive slot of the AC's file: copied from the SEND,
 * or (version 4, RS_F_PLACED) written there by the peer already, into the
 * slot the record names, which must be the oldest this end granted and
 * within a slot of the memory region it named (rs_rx_mr_claim()); a WRITE
 * WITH IMMEDIATE (version 5) names none and took the oldest.  The slot it
 * went to in *@taken, if not NULL.
 */
static int rs_recv_data(struct rs_ac *ac, const struct rs_proto_msg *m, const void *payload,
			u32 *taken)
{
	bool placed = rs_proto_placed(m), sunk = rs_proto_sunk(m);
	u32 len = rs_proto_chunk_len(m);
	struct rs_file *rf = ac->rf;
	struct rdmashare_cqe cqe = {};
	struct rs_rx_slot *slot;
	size_t at;
	u32 idx;

	/*
	 * The slot size this end named in its CONNECT or ACCEPT bounds a
	 * chunk, but for one written into a reader's sink.
	 */
	if ((len > rf->rx_slot_size && !sunk) || (placed && !READ_ONCE(ac->rx_rkey)))
		return -EPROTO;
	spin_lock_irq(&rf->rx_lock);
	if (ac->rx_done) {
		/* Closed here while the chunk was on its way: dropped. */
		spin_unlock_irq(&rf->rx_lock);
		return 0;
	}
	if (READ_ONCE(ac->peer_shut))
		goto proto;		/* data after the peer's SHUTDOWN */
	if (m->offset) {
		if (m->seq != ac->rx_seq || m->offset != ac->rx_off ||
		    m->msg_len != ac->rx_msg_len)
			goto proto;
	} else {
		if (m->seq != ac->rx_seq || ac->rx_off)
			goto proto;
		ac->rx_msg_len = m->msg_len;
	}
	if (sunk) {
		/* Version 6: in the reader's sink (sink.c), not in a slot. */
		if (!rs_sink_recv_data(ac, m))
			goto proto;
		rs_recv_account(ac, m, len);
		spin_unlock_irq(&rf->rx_lock);
		return 0;
	}
	idx = m->placed.slot;
	if (!rs_rx_take(ac, placed, &idx))
		goto proto;		/* sent without a credit, or misplaced */
	if (taken)
		*taken = idx;
	slot = &rf->slots[idx];
	slot->fid = ac->fid;
	slot->conn = ac->id;
	at = rf->rx_offset + (size_t)idx * rf->rx_slot_size;
	if (placed) {
		rs_dma_map_sync_for_cpu(ac->map, at, len);
	} else {
		memcpy(rf->data + at, payload, len);
		rs_qp_stat(ac->qp, RS_STAT_RX_COPIED, len);
	}

	rs_recv_account(ac, m, len);
	if (ac->af) {
		/* An AC file's: read(2) takes it (acfile.c). */
		rs_acfile_deliver(ac, idx, len);
		spin_unlock_irq(&rf->rx_lock);
		rs_acfile_wake(ac, EPOLLIN | EPOLLRDNORM);
		rs_file_note_qp(rf, ac->qp);
		return 0;
	}
	cqe.user_data = m->msg_len;
	cqe.res = len;
	cqe.ac = ac->fid;
	cqe.type = RDMASHARE_CQE_RECV;
	cqe.flags = (m->flags & RS_F_LAST) ? 0 : RDMASHARE_CQE_F_MORE;
	cqe.addr = at;
	/* Under rx_lock: the slot cannot be released before its index is set. */
	slot->file = false;
	slot->cq_idx = rs_cq_post_rx(rf, &cqe);
	spin_unlock_irq(&rf->rx_lock);
	rs_file_note_qp(rf, ac->qp);
	return 0;
proto:
	spin_unlock_irq(&rf->rx_lock);
	return -EPROTO;
}

/*
 * What a record says of credits, once the AC it names had it: a grant, and
 * from version 3 a CREDIT's flag.  True if the sender has new work.
 */
static bool rs_recv_credits(struct rs_qp *qp, struct rs_ac *ac, const struct rs_proto_msg *m,
			    const void *payload)
{
	/* A full CLOSE's credits are moot; a HALF's are still needed. */
	bool full_close = m->type == RS_MSG_CLOSE && !(m->flags & RS_F_HALF);
	bool ret = m->type == RS_MSG_CREDIT && (m->flags & RS_F_RETURN);
	bool named = !rs_proto_slots_off(m, qp->version);
	bool kick = false;
	int err;

	if (ret) {
		if (!rs_rx_returned(ac, m->credits))
			return false;
		pr_warn_ratelimited("AC %u: the peer gave back %u credits it did not have\n",
				    ac->id, m->credits);
		rs_qp_stat(qp, RS_STAT_ERRORS, 1);
		rs_qp_down(qp, -EPROTO);
		return false;
	}
	/* Version 4: the ring of the peer's slots grows outside the lock. */
	if (named) {
		err = rs_ac_slots_room(ac, m->credits);
		if (err == -EPROTO) {
			pr_warn_ratelimited("AC %u: the peer granted more than %u credits\n",
					    ac->id, RS_PROTO_MAX_WINDOW);
			rs_qp_stat(qp, RS_STAT_ERRORS, 1);
			rs_qp_down(qp, -EPROTO);
			return false;
		}
		if (err) {
			rs_ac_close_tell(ac, err, false);
			return false;
		}
	}
	spin_lock_irq(&qp->lock);
	if (m->credits && !full_close) {
		if (named)
			rs_ac_got_slots(ac, payload, m->credits);
		else
			rs_ac_got_credits(ac, m->credits);
		if (rs_ac_can_send(ac) && ac->state == RS_AC_OPEN) {
			rs_sched_enqueue(&qp->sched, &ac->se);
			kick = true;
		}
	}
	if (m->type == RS_MSG_CREDIT && (m->flags & RS_F_RECLAIM)) {
		rs_ac_reclaimed(ac);
		kick = true;
	}
	spin_unlock_irq(&qp->lock);
	if (m->type == RS_MSG_CREDIT && (m->flags & RS_F_WANT))
		rs_rx_want(ac);
	return kick;
}

/*
 * A record from the peer, for the AC it names.  True if the sender has new
 * work (credits came): the caller pushes once per SEND, not per record.
 */
static bool rs_recv(struct rs_qp *qp, const struct rs_proto_msg *m, const void *payload)
{
	bool kick = false;
	struct rs_ac *ac;

	if (m->type == RS_MSG_KEEPALIVE)
		return false;	/* its arrival was the point */
	if (m->type == RS_MSG_CONNECT) {
		rs_ac_peer_connect(qp, m, payload);
		return false;
	}
	ac = rs_ac_lookup_conn(qp, m->dst_conn);
	if (!ac) {
		/* An ACCEPT for a CONNECT given up on: close the peer's end. */
		if (m->type == RS_MSG_ACCEPT)
			rs_qp_stray(qp, m->src_conn, m->dst_conn, 0, false);
		return false;
	}

	switch (m->type) {
	case RS_MSG_ACCEPT:
		rs_ac_peer_accept(qp, ac, m, payload);
		break;
	case RS_MSG_REJECT:
		rs_ac_peer_reject(qp, ac, m->error);
		break;
	case RS_MSG_DATA:
		if (ac->remote_id != m->src_conn || READ_ONCE(ac->state) != RS_AC_OPEN)
			break;
		if (rs_recv_data(ac, m, payload, NULL)) {
			pr_warn_ratelimited("AC %u: protocol error from the peer: seq %u/%u offset %u/%u len %u/%u reserved %u\n",
					    ac->id, m->seq, ac->rx_seq, m->offset, ac->rx_off,
					    m->msg_len, ac->rx_msg_len, ac->rx_reserved);
			rs_qp_stat(qp, RS_STAT_ERRORS, 1);
			rs_qp_down(qp, -EPROTO);
		}
		break;
	case RS_MSG_SINK:
		if (ac->remote_id != m->src_conn || READ_ONCE(ac->state) != RS_AC_OPEN)
			break;
		if (rs_sink_recv(qp, ac, m, &kick)) {
			pr_warn_ratelimited("AC %u: protocol error from the peer: SINK %#x id %u len %u\n",
					    ac->id, m->flags, m->sink.id, m->sink.len);
			rs_qp_stat(qp, RS_STAT_ERRORS, 1);
			rs_qp_down(qp, -EPROTO);
		}
		break;
	case RS_MSG_CLOSE:
		if (ac->remote_id != m->src_conn)
			break;
		if (m->flags & RS_F_HALF)
			rs_ac_peer_shut(ac);
		else
			rs_ac_peer_close(qp, ac);
		break;
	}

	if (ac->remote_id == m->src_conn)
		kick |= rs_recv_credits(qp, ac, m, payload);
	rs_ac_put(ac);
	return kick || m->type == RS_MSG_ACCEPT;
}

/*
 * Version 5: a WRITE WITH IMMEDIATE of @len bytes came for the AC the
 * immediate @conn names: the next chunks of the message in progress on it,
 * a DATA record each without the record.  The peer wrote them to the
 * oldest slot granted and on into the next ones, a slot's size each (the
 * last may be shorter): they are checked as records (rs_proto_continue(),
 * rs_recv_data()), and each slot must follow the one before.  A WRITE no
 * message expects, one longer than the message has left, or one over slots
 * that do not follow each other takes the QP down (chunks before the one
 * refused were delivered: the AC fails with the QP).
 */
static void rs_recv_imm(struct rs_qp *qp, u32 conn, u32 len)
{
	u32 seq, msg_len, off, done, chunk, slot = RS_SLOT_OLDEST;
	struct rs_proto_msg m;
	struct rs_file *rf;
	struct rs_ac *ac;
	bool closed;

	ac = rs_ac_lookup_conn(qp, conn);
	if (!ac)
		return;		/* closed here: as its records are, dropped */
	if (READ_ONCE(ac->state) != RS_AC_OPEN)
		goto out;
	rf = ac->rf;
	spin_lock_irq(&rf->rx_lock);
	closed = ac->rx_done;
	seq = ac->rx_seq;
	msg_len = ac->rx_msg_len;
	off = ac->rx_off;
	spin_unlock_irq(&rf->rx_lock);
	if (closed)
		goto out;
	/* All of it within the message, then chunk by chunk. */
	if (rs_proto_continue(&m, qp->version, conn, ac->remote_id, seq, msg_len, off, len))
		goto proto;
	for (done = 0; done < len; done += chunk) {
		chunk = min(len - done, rf->rx_slot_size);
		if (rs_proto_continue(&m, qp->version, conn, ac->remote_id, seq, msg_len,
				      off + done, chunk))
			goto proto;
		m.placed.slot = slot;
		if (rs_recv_data(ac, &m, NULL, &slot))
			goto proto;
		rs_qp_count_msg(qp, &m, true);
		slot++;
	}
out:
	rs_ac_put(ac);
	return;
proto:
	pr_warn_ratelimited("AC %u: protocol error from the peer: %u bytes written at offset %u/%u\n",
			    ac->id, len, off, msg_len);
	rs_qp_stat(qp, RS_STAT_ERRORS, 1);
	rs_qp_down(qp, -EPROTO);
	rs_ac_put(ac);
}

/*
 * A SEND arrived on one of the device's QPs: check every record of it, take
 * them in order, give the buffer back to the SRQ.  A SEND
 * with one bad record is refused whole, before any record acts.  Everything
 * is copied out before this returns, so the SRQ never waits for an
 * application.
 */
void rs_rx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rs_rx_buf *rx = container_of(wc->wr_cqe, struct rs_rx_buf, cqe);
	struct rs_device *rdev = rx->rdev;
	/* Valid: a QP is destroyed only after its CQ was drained (qp.c). */
	struct rs_qp *qp = wc->qp->qp_context;
	u32 max_chunk = rdev->rx_buf_size - RS_HDR_LEN;
	struct rs_proto_msg m;
	size_t pos = 0, at;
	bool push = false;
	int ret;

	/* Posted buffers fell to a quarter of the SRQ: the refills lag. */
	if (atomic_dec_return(&rdev->rx_posted) == rdev->srq_size / 4)
		rs_stat_add(&rdev->stats, RS_STAT_SRQ_LOW, 1);
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			pr_err_ratelimited("%s: receive failed: %s\n",
					   dev_name(&rdev->ibdev->dev),
					   ib_wc_status_msg(wc->status));
			rs_qp_stat(qp, RS_STAT_ERRORS, 1);
		}
		/* A QP that failed returns the buffer it held: post it again. */
		goto repost;
	}

	/*
	 * rdmashare never sends with invalidate: a peer that names a file's
	 * rkey so undoes the region every peer places into.  It loses its QP;
	 * the region is registered again with the next CONNECT or ACCEPT that
	 * names it.
	 */
	if (wc->wc_flags & IB_WC_WITH_INVALIDATE) {
		pr_warn_ratelimited("%s: QP %u: the peer invalidated rkey %#x\n",
				    dev_name(&rdev->ibdev->dev), qp->qp_num,
				    wc->ex.invalidate_rkey);
		rs_qp_stat(qp, RS_STAT_ERRORS, 1);
		rs_qp_down(qp, -EPROTO);
		rs_rx_mr_invalidated(rdev, wc->ex.invalidate_rkey);
		goto repost;
	}
	if (wc->opcode == IB_WC_RECV_RDMA_WITH_IMM) {
		/* The buffer holds nothing: the WRITE went to a slot. */
		rs_qp_stat(qp, RS_STAT_RX_WRITES, 1);
		if (qp->version >= 5) {
			rs_recv_imm(qp, be32_to_cpu(wc->ex.imm_data), wc->byte_len);
			goto repost;
		}
		pr_warn_ratelimited("%s: QP %u: a WRITE WITH IMMEDIATE on protocol version %u\n",
				    dev_name(&rdev->ibdev->dev), qp->qp_num, qp->version);
		rs_qp_stat(qp, RS_STAT_ERRORS, 1);
		rs_qp_down(qp, -EPROTO);
		goto repost;
	}
	ib_dma_sync_single_for_cpu(rdev->ibdev, rx->dma, rdev->rx_buf_size,
				   DMA_FROM_DEVICE);
	ret = rs_proto_check_batch(rx->buf, wc->byte_len, qp->version, max_chunk);
	if (ret < 0) {
		/* A broken or hostile peer: it loses its QP, nobody else. */
		pr_warn_ratelimited("%s: QP %u: malformed message: %d\n",
				    dev_name(&rdev->ibdev->dev), qp->qp_num, ret);
		rs_qp_stat(qp, RS_STAT_ERRORS, 1);
		rs_qp_down(qp, -EPROTO);
		goto repost;
	}
	rs_qp_stat(qp, RS_STAT_RX_SENDS, 1);
	for (at = 0; rs_proto_next(rx->buf, wc->byte_len, &pos, qp->version,
				   max_chunk, &m) > 0; at = pos) {
		/* A record refused took the QP down: no more. */
		if (READ_ONCE(qp->state) == RS_QP_DOWN)
			break;
		rs_qp_count_msg(qp, &m, true);
		push |= rs_recv(qp, &m, rx->buf + at + RS_HDR_LEN);
	}
	/* Credits came: what waited for them goes, from here. */
	if (push)
		rs_qp_push(qp);
repost:
	ret = rs_device_post_recv(rdev, rx);
	if (ret) {
		pr_err_ratelimited("%s: cannot repost a receive buffer: %d\n",
				   dev_name(&rdev->ibdev->dev), ret);
		return;
	}
	atomic_inc(&rdev->rx_posted);
	rs_stat_add(&rdev->stats, RS_STAT_SRQ_REFILLS, 1);
}

/*
 * RELEASE: the application is done with a receive slot whose RECV
 * completion it reaped; the slot goes back as a credit (credit.c).
 */
void rs_rx_release(struct rs_file *rf, const struct rdmashare_sqe *sqe)
{
	struct rs_rx_slot *slot;
	struct rs_ac *ac = NULL;
	u32 idx, conn, rem;
	u64 off;

	if (sqe->len || sqe->addr < rf->rx_offset)
		goto inval;
	/* div_u64_rem(): no 64-bit division helpers on 32-bit builds. */
	off = div_u64_rem(sqe->addr - rf->rx_offset, rf->rx_slot_size, &rem);
	if (rem || off >= rf->rx_slots)
		goto inval;
	idx = array_index_nospec((u32)off, rf->rx_slots);
	ac = rs_ac_lookup_fid(rf, sqe->ac);
	spin_lock_irq(&rf->rx_lock);
	slot = &rf->slots[idx];
	/*
	 * Owned by that AC, and its RECV completion was reaped.  An AC file's
	 * slot is its reader's; the id may name an AC file's AC now and the
	 * slot still be a closed ring AC's.
	 */
	if (!slot->fid || slot->fid != sqe->ac || slot->file ||
	    (s32)(rs_cq_head(rf) - slot->cq_idx) <= 0) {
		spin_unlock_irq(&rf->rx_lock);
		goto inval;
	}
	conn = rs_rx_slot_free_locked(rf, idx);
	spin_unlock_irq(&rf->rx_lock);

	/*
	 * Back to its AC as a credit, or to the pool if the id names another
	 * AC now (a discarded one's slot).
	 */
	rs_rx_slot_back(rf, ac, conn);
	if (ac)
		rs_ac_put(ac);
	rs_complete_op(rf, sqe, 0);
	return;
inval:
	if (ac)
		rs_ac_put(ac);
	rs_complete_op(rf, sqe, -EINVAL);
}

/*
 * Called with rx_lock held: slot @idx is free again (on the file's free
 * list); the host-wide id of the AC that had it.
 */
u32 rs_rx_slot_free_locked(struct rs_file *rf, u32 idx)
{
	struct rs_rx_slot *slot = &rf->slots[idx];

	lockdep_assert_held(&rf->rx_lock);
	slot->fid = 0;
	rf->rx_free[rf->nr_rx_free++] = idx;
	return slot->conn;
}
