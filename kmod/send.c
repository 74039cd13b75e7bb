// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: an application's operations on its ACs, from the SQ.
 *
 * submit.c hands each SQE over (rs_ac_submit()): a RELEASE gives a receive
 * slot back (recv.c), a CLOSE of a listener or of an AC already closed
 * under it is done at once (ac.c), and a SEND, SHUTDOWN or CLOSE of an open
 * AC is queued on the AC for its QP's sender (rs_ac_send()), which posts it
 * (sender.c) from this thread when the sender is idle.  Its completion
 * comes back through rs_ac_send_done() once it went out or failed.
 *
 * A SEND's chunks over pullup_max go from the data area in place: the
 * first such SEND maps the file's data area for the AC's device (memreg.c).
 */
#include "rdmashare.h"
#include "transport.h"

/*
 * Queue @op, a SEND, SHUTDOWN or CLOSE, on @ac for its QP's sender: 0, or
 * why not (@op is the caller's again); *@dup_close, if not NULL, says
 * whether a CLOSE was queued already.
 */
int rs_ac_queue(struct rs_ac *ac, struct rs_send *op, bool *dup_close)
{
	struct rs_dma_map *map = NULL;
	struct rs_device *rdev;
	int err = 0;

	/* Not pinned to a QP yet: an AC file's CONNECT under way (connect.c). */
	if (!READ_ONCE(ac->qp))
		return READ_ONCE(ac->error) ?: -ENOTCONN;
	/*
	 * Its chunks over pullup_max go from the data area in place, once it
	 * is mapped for the device (sender.c); without a mapping, copied.
	 * Only looked up: this may be a shared QP's completion handler
	 * consuming the SQ (memreg.c).  Not for an AC that cannot send
	 * (checked again below, under the lock): its device may be gone, and
	 * the QP's reference keeps only rdev's memory, in which
	 * dma_maps_gone says so.
	 */
	if (op->opcode == RDMASHARE_OP_SEND && !ac->map &&
	    op->len > READ_ONCE(rs_pullup_max) &&
	    READ_ONCE(ac->state) == RS_AC_OPEN &&
	    READ_ONCE(ac->qp->state) != RS_QP_DOWN) {
		rdev = READ_ONCE(ac->qp->rdev);
		if (rdev)
			map = rs_dma_map_find(ac->rf, rdev);
	}

	spin_lock_irq(&ac->qp->lock);
	if (map)
		ac->map = map;
	if (dup_close)
		*dup_close = ac->close_queued;
	if (ac->peer_closed)
		err = -EPIPE;
	else if (READ_ONCE(ac->state) != RS_AC_OPEN || ac->qp->state == RS_QP_DOWN)
		err = ac->error ?: -ENOTCONN;
	else if (ac->close_queued || (ac->shut_queued && op->opcode != RDMASHARE_OP_CLOSE))
		err = -EPIPE;
	if (!err) {
		/* A SEND's number comes with its first chunk (sender.c). */
		if (op->opcode == RDMASHARE_OP_CLOSE)
			ac->close_queued = true;
		if (op->opcode != RDMASHARE_OP_SEND)
			ac->shut_queued = true;
		list_add_tail(&op->node, &ac->sendq);
		if (list_is_singular(&ac->sendq) && op->opcode == RDMASHARE_OP_SEND)
			rs_ac_queued_send(ac);
		if (rs_ac_can_send(ac))
			rs_sched_enqueue(&ac->qp->sched, &ac->se);
	}
	spin_unlock_irq(&ac->qp->lock);
	if (!err)
		rs_qp_push(ac->qp);
	return err;
}

/* SEND, SHUTDOWN, or CLOSE of an open AC, from an SQE. */
void rs_ac_send(struct rs_ac *ac, const struct rdmashare_sqe *sqe)
{
	struct rs_file *rf = ac->rf;
	bool dup_close;
	struct rs_send *op;
	int err;

	if (sqe->len > RS_PROTO_MAX_MSG || sqe->addr > rf->map_size ||
	    sqe->len > rf->map_size - sqe->addr) {
		rs_complete_op(rf, sqe, -EINVAL);
		return;
	}
	op = rs_op_get(rf);
	if (!op) {
		rs_complete_op(rf, sqe, -ENOMEM);
		return;
	}
	op->opcode = sqe->opcode;
	op->user_data = sqe->user_data;
	op->addr = sqe->addr;
	op->len = sqe->len;
	err = rs_ac_queue(ac, op, &dup_close);
	if (!err)
		return;
	rs_op_put(rf, op);
	/*
	 * The first CLOSE of an AC that closed under it (the peer's CLOSE, a
	 * lost QP) still frees the id, as any CLOSE does.
	 */
	if (sqe->opcode == RDMASHARE_OP_CLOSE && !dup_close) {
		rs_ac_do_close(ac, 0, true);
		WRITE_ONCE(ac->handed_out, false);
		rs_ac_cancel_closed(ac);
		rs_complete_op(rf, sqe, 0);
		rs_ac_del_from_file(ac);
		return;
	}
	rs_complete_op(rf, sqe, err);
}

/* SEND, RELEASE, CLOSE and SHUTDOWN from submit.c; each completes once. */
void rs_ac_submit(struct rs_file *rf, const struct rdmashare_sqe *sqe)
{
	bool ctrl = sqe->opcode != RDMASHARE_OP_SEND;
	struct rs_ac *ac;

	if (sqe->opcode == RDMASHARE_OP_RELEASE) {
		rs_rx_release(rf, sqe);
		return;
	}
	ac = rs_ac_lookup_user(rf, sqe->ac);
	if (!ac) {
		rs_complete_op(rf, sqe, -ENOENT);
		return;
	}
	if (ctrl && (sqe->addr || sqe->len))
		rs_complete_op(rf, sqe, -EINVAL);
	else if (sqe->opcode == RDMASHARE_OP_CLOSE)
		rs_ac_close(ac, sqe);
	else if (READ_ONCE(ac->state) == RS_AC_LISTEN)
		rs_complete_op(rf, sqe, -EINVAL);
	else
		rs_ac_send(ac, sqe);
	rs_ac_put(ac);
}

/* A SEND or CLOSE went out (status 0) or failed. */
void rs_ac_send_done(struct rs_ac *ac, struct rs_send *op, int status)
{
	bool close = op->opcode == RDMASHARE_OP_CLOSE;

	/*
	 * A CLOSE's AC receives no more before its completion (a chunk the
	 * peer sent before it saw the CLOSE is dropped), and frees the id
	 * after it (see rs_ac_finish()): nothing for the AC follows that
	 * completion in the CQ, and a new AC's completions all do.
	 */
	if (close)
		rs_ac_do_close(ac, 0, true);
	rs_op_done(ac, op, status);
	if (close)
		rs_ac_del_from_file(ac);
}
