// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: zero copy into a reader's own pages (protocol version 6).
 *
 * A blocking AC file read of at least zcopy_min bytes of user memory that
 * finds nothing to read offers its buffer to the peer, as SDP's SinkAvail
 * does: the pages are pinned for writing (zcopy.c: charged to the reader
 * against RLIMIT_MEMLOCK and its pinned_vm), mapped for the AC's device,
 * and registered as a memory region by a fast registration work request
 * that rides, unsignaled, with the SEND of the SINK record naming it
 * (sender.c).  The peer's next chunks for the AC then go straight into
 * it: an RDMA WRITE each and a DATA record flagged RS_F_SINK, no receive
 * slot and no copy on either side, until the buffer is full or the
 * message ends; then its DONE record says how many bytes it wrote.  If the
 * peer's stream was already past the offer's byte (chunks in flight), it
 * declines at once: DONE with 0, and the read copies from the slots as
 * before.  The read returns once the DONE came.
 *
 * The pages go back only when no WRITE into them can come any more: the
 * DONE came, the peer shut its end down or closed it (its records come in
 * order after its WRITEs), or the QP went down.  A signal sends a CANCEL
 * and waits for the DONE, so that the read returns exactly the bytes that
 * are in the buffer; a fatal signal leaves the buffer to the AC file
 * (rs_acfile.sink) until then, and bytes that still land in it are lost
 * to the stream, which ends the AC.  The region is deregistered before
 * the pages are unpinned: a peer that wrote after all would fail its own
 * QP, never write into memory that is no longer the reader's.  rxe has no
 * on-demand paging: the pages are pinned for as long as the read waits.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/sched/signal.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include <rdma/ib_verbs.h>

#include "acfile.h"
#include "compat.h"
#include "sink.h"
#include "transport.h"
#include "zcopy.h"

/* A sink takes at most this much: a reader's larger buffer offers a part. */
#define RS_SINK_MAX	SZ_4M

static void rs_sink_release(struct kref *ref)
{
	struct rs_sink *s = container_of(ref, struct rs_sink, ref);

	/* The device no longer writes through the region, then the pages go. */
	if (s->mr)
		ib_dereg_mr(s->mr);
	if (s->zc)
		rs_zc_put(s->zc);
	kfree(s);
}

/* Drop a reference: the last deregisters and unpins.  Process context. */
void rs_sink_put(struct rs_sink *s)
{
	kref_put(&s->ref, rs_sink_release);
}

/*
 * A sink over the reader's @len bytes at @uaddr, for @qp's device: at
 * most RS_SINK_MAX bytes and the pages one region takes.  ERR_PTR() if
 * the device has no fast registration, the pages cannot be pinned (the
 * limit, a fault) or mapped: the read copies.
 */
static struct rs_sink *rs_sink_new(struct rs_qp *qp, unsigned long uaddr, size_t len)
{
	struct ib_device *ibdev = qp->rdev->ibdev;
	unsigned int sg_off = offset_in_page(uaddr);
	u32 max_pages = ibdev->attrs.max_fast_reg_page_list_len;
	struct scatterlist *sgl, *sg;
	unsigned long n, i;
	struct rs_sink *s;
	int ret;

	if (!(ibdev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) || !max_pages)
		return ERR_PTR(-EOPNOTSUPP);
	len = min_t(size_t, len, RS_SINK_MAX);
	len = min_t(size_t, len, (size_t)max_pages * PAGE_SIZE - sg_off);
	n = DIV_ROUND_UP(sg_off + len, PAGE_SIZE);
	s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s)
		return ERR_PTR(-ENOMEM);
	kref_init(&s->ref);
	s->len = len;
	s->zc = rs_zc_pin(qp->rdev, uaddr, len, true);
	if (IS_ERR(s->zc)) {
		ret = PTR_ERR(s->zc);
		s->zc = NULL;
		goto out_put;
	}
	ret = -ENOMEM;
	sgl = kvmalloc_array(n, sizeof(*sgl), GFP_KERNEL);
	if (!sgl)
		goto out_put;
	/* Exactly the reader's bytes: the first page from @sg_off on. */
	sg_init_table(sgl, n);
	for_each_sg(sgl, sg, n, i) {
		sg_dma_address(sg) = s->zc->map.dma[i];
		sg_dma_len(sg) = PAGE_SIZE;
	}
	sg_dma_len(sg_last(sgl, n)) = sg_off + len - (n - 1) * PAGE_SIZE;
	s->mr = ib_alloc_mr(qp->rdev->pd, IB_MR_TYPE_MEM_REG, n);
	if (IS_ERR(s->mr)) {
		ret = PTR_ERR(s->mr);
		s->mr = NULL;
		goto out_sgl;
	}
	ret = ib_map_mr_sg(s->mr, sgl, n, &sg_off, PAGE_SIZE);
	if (ret != n) {
		ret = ret < 0 ? ret : -EINVAL;
		goto out_sgl;
	}
	kvfree(sgl);
	return s;

out_sgl:
	kvfree(sgl);
out_put:
	rs_sink_put(s);
	return ERR_PTR(ret);
}

/**
 * rs_sink_offer_params() - the SINK record that offers @s
 * @s: the sink
 * @m: a record whose ids are set: it becomes the offer
 */
void rs_sink_offer_params(const struct rs_sink *s, struct rs_proto_msg *m)
{
	m->type = RS_MSG_SINK;
	m->len = RS_SINK_LEN;
	m->sink.id = s->id;
	m->sink.off = s->off;
	m->sink.len = s->len;
	m->sink.rkey = s->mr->rkey;
	m->sink.addr = s->mr->iova;
}

/* Called with the file's rx_lock held: @s leaves @ac's file. */
static bool rs_sink_unlink(struct rs_ac *ac, struct rs_sink *s)
{
	lockdep_assert_held(&ac->rf->rx_lock);
	if (ac->af->sink != s)
		return false;
	ac->af->sink = NULL;
	return true;
}

/*
 * Can no WRITE into @s come any more?  Its DONE came, or the peer's end
 * is done sending (its records follow its WRITEs), or the QP is gone.
 */
static bool rs_sink_over(struct rs_ac *ac, const struct rs_sink *s)
{
	return READ_ONCE(s->done) || READ_ONCE(ac->peer_shut) || READ_ONCE(ac->peer_closed) ||
	       READ_ONCE(ac->qp_lost);
}

static bool rs_sink_wait_first(struct rs_ac *ac, const struct rs_sink *s)
{
	return rs_sink_over(ac, s) || READ_ONCE(ac->af->rx_shut);
}

/*
 * The reader wants its buffer back before it is full: a CANCEL, which the
 * peer answers with the DONE; or, if the offer has not gone yet, nothing
 * to ask: it never will, and the sink is over.
 */
static void rs_sink_cancel(struct rs_ac *ac, struct rs_sink *s)
{
	struct rs_qp *qp = ac->qp;
	bool unsent;

	spin_lock_irq(&qp->lock);
	unsent = ac->sink_offer == s;
	if (unsent) {
		ac->sink_offer = NULL;
		ac->ctrl_pending &= ~RS_CTRL_SINK;
	} else {
		ac->sink_cancel = s->id;
		rs_ac_ctrl(ac, RS_CTRL_SINK_CANCEL);
	}
	spin_unlock_irq(&qp->lock);
	if (!unsent) {
		rs_qp_push(qp);
		return;
	}
	rs_sink_put(s);		/* the offer's */
	spin_lock_irq(&ac->rf->rx_lock);
	WRITE_ONCE(s->done, true);
	unsent = rs_sink_unlink(ac, s);
	spin_unlock_irq(&ac->rf->rx_lock);
	if (unsent)
		rs_sink_put(s);	/* the file's */
}

/*
 * Called with the file's read lock held: offer @s for the stream's next
 * byte, if nothing waits to be read.  False if the read should copy.
 */
static bool rs_sink_offer(struct rs_ac *ac, struct rs_sink *s)
{
	struct rs_acfile *af = ac->af;
	struct rs_qp *qp = ac->qp;
	struct rs_file *rf = ac->rf;
	bool ok;

	spin_lock_irq(&rf->rx_lock);
	ok = !af->rx_n && !af->sink && !ac->rx_done;
	if (ok) {
		s->id = ++af->sink_seq;
		s->off = (u32)ac->rx_bytes;
		kref_get(&s->ref);		/* the file's */
		af->sink = s;
	}
	spin_unlock_irq(&rf->rx_lock);
	if (!ok)
		return false;
	spin_lock_irq(&qp->lock);
	ok = qp->state == RS_QP_UP && READ_ONCE(ac->state) == RS_AC_OPEN &&
	     !list_empty(&ac->qp_node);
	if (ok) {
		kref_get(&s->ref);		/* the offer's */
		ac->sink_offer = s;
		rs_ac_ctrl(ac, RS_CTRL_SINK);
	}
	spin_unlock_irq(&qp->lock);
	if (ok) {
		rs_qp_push(qp);
		return true;
	}
	spin_lock_irq(&rf->rx_lock);
	ok = rs_sink_unlink(ac, s);
	spin_unlock_irq(&rf->rx_lock);
	if (ok)
		rs_sink_put(s);
	return false;
}

/**
 * rs_sink_read() - read into the reader's own pages (see above)
 * @ac: an AC file's AC, open, with nothing to read; its read lock held
 * @to: the read's buffer, user memory of at least zcopy_min bytes
 * @timeo: how long the read may still wait (SO_RCVTIMEO), in jiffies; keeps
 *	what is left
 *
 * Return: the bytes the peer wrote into @to (advanced past them); 0 if it
 * wrote none (declined, or the buffer could not be offered): the caller
 * reads as before; -ERESTARTSYS for a signal that came before any byte,
 * -EAGAIN if the time ran out first, -EINTR for a fatal signal.
 */
ssize_t rs_sink_read(struct rs_ac *ac, struct iov_iter *to, long *timeo)
{
	struct iovec seg = rs_iter_user_seg(to);
	struct rs_acfile *af = ac->af;
	struct rs_qp *qp = READ_ONCE(ac->qp);
	struct rs_file *rf = ac->rf;
	struct rs_sink *s;
	bool took;
	u32 filled;
	int ret;

	if (!qp || qp->version < 6 || !seg.iov_len)
		return 0;
	s = rs_sink_new(qp, (unsigned long)seg.iov_base, seg.iov_len);
	if (IS_ERR(s))
		return 0;
	if (!rs_sink_offer(ac, s)) {
		rs_sink_put(s);
		return 0;
	}
	/* A signal or the timeout: the peer is asked for the sink back. */
	ret = rs_acfile_wait(ac, rs_sink_wait_first(ac, s), timeo);
	if (!rs_sink_over(ac, s)) {
		rs_sink_cancel(ac, s);
		if (wait_event_killable(ac->wait, rs_sink_over(ac, s))) {
			spin_lock_irq(&rf->rx_lock);
			if (af->sink == s)
				s->orphan = true;
			spin_unlock_irq(&rf->rx_lock);
			rs_sink_put(s);
			return -EINTR;
		}
	}
	spin_lock_irq(&rf->rx_lock);
	took = rs_sink_unlink(ac, s);
	filled = s->filled;
	spin_unlock_irq(&rf->rx_lock);
	if (took)
		rs_sink_put(s);		/* the file's */
	/* What the device wrote, for the CPU, while the mapping is ours. */
	if (filled)
		rs_dma_map_sync_for_cpu(&s->zc->map, offset_in_page(seg.iov_base), filled);
	rs_sink_put(s);			/* the reader's: the pages go back */
	if (!filled)
		return ret;
	iov_iter_advance(to, filled);
	rs_qp_stat(qp, RS_STAT_RX_ZCOPY, filled);
	return filled;
}

/*
 * The peer's DONE for the AC file's sink: the bytes it wrote, which its
 * DATA records said.  A DONE for a sink the file no longer has comes after
 * the peer's end, which took it (rs_sink_read()), or once the AC closed
 * here; any other is a protocol error.
 */
static int rs_sink_done(struct rs_ac *ac, const struct rs_proto_msg *m)
{
	struct rs_file *rf = ac->rf;
	struct rs_sink *s = NULL;
	bool lost = false;
	int ret = 0;

	if (!ac->af)
		return -EPROTO;
	spin_lock_irq(&rf->rx_lock);
	if (ac->af->sink && ac->af->sink->id == m->sink.id &&
	    (ac->af->sink->filled == m->sink.len || ac->rx_done)) {
		s = ac->af->sink;
		ac->af->sink = NULL;
		WRITE_ONCE(s->done, true);
		lost = s->orphan && s->filled;
	} else if (!ac->rx_done && !READ_ONCE(ac->peer_shut) && !READ_ONCE(ac->peer_closed)) {
		ret = -EPROTO;
	}
	spin_unlock_irq(&rf->rx_lock);
	if (!s)
		return ret;
	rs_acfile_wake(ac, 0);
	rs_sink_put(s);
	/* Its reader was killed: the bytes in it are the stream's, lost. */
	if (lost)
		rs_ac_close_tell(ac, -ECONNRESET, false);
	return 0;
}

/*
 * The peer offers its sink for @ac's stream, or asks for it back.  One
 * offer at a time: the next comes once its DONE went.  It is declined if
 * this end's stream is past its byte (chunks in flight), or closing.
 */
static int rs_sink_peer(struct rs_qp *qp, struct rs_ac *ac, const struct rs_proto_msg *m,
			bool *kick)
{
	struct rs_peer_sink *ps = &ac->psink;
	int ret = 0;

	spin_lock_irq(&qp->lock);
	if (m->flags & RS_F_CANCEL) {
		/* One that ended already has its DONE on the way, or owed. */
		if (ps->open && ps->id == m->sink.id) {
			ps->open = false;
			rs_ac_ctrl(ac, RS_CTRL_SINK_DONE);
			/* What waits needs credits again. */
			rs_ac_after_chunk(ac);
			*kick = true;
		}
		goto out_unlock;
	}
	if (ps->open || (ac->ctrl_pending & RS_CTRL_SINK_DONE)) {
		ret = -EPROTO;
		goto out_unlock;
	}
	ps->id = m->sink.id;
	ps->len = m->sink.len;
	ps->rkey = m->sink.rkey;
	ps->addr = m->sink.addr;
	ps->filled = 0;
	ps->open = (u32)ac->tx_bytes == m->sink.off && !ac->shut_queued;
	if (!ps->open)
		rs_ac_ctrl(ac, RS_CTRL_SINK_DONE);
	else if (rs_ac_can_send(ac) && ac->state == RS_AC_OPEN)
		rs_sched_enqueue(&qp->sched, &ac->se);
	*kick = true;
out_unlock:
	spin_unlock_irq(&qp->lock);
	return ret;
}

/**
 * rs_sink_recv() - a SINK record from the peer, for @ac
 * @qp: the QP it came on
 * @ac: the AC it names, open, the peer's
 * @m: the record
 * @kick: set if the sender has work
 *
 * Return: 0, or -EPROTO for a record that does not fit (the caller takes
 * the QP down).
 */
int rs_sink_recv(struct rs_qp *qp, struct rs_ac *ac, const struct rs_proto_msg *m, bool *kick)
{
	if (m->flags & RS_F_DONE)
		return rs_sink_done(ac, m);
	return rs_sink_peer(qp, ac, m, kick);
}

/**
 * rs_sink_recv_data() - a DATA record flagged RS_F_SINK, for @ac
 * @ac: the AC it names
 * @m: the record: the peer wrote @m->placed.len bytes into the sink
 *	@m->placed.slot names, after those it wrote before
 *
 * Called with the file's rx_lock held, the record checked against the
 * message in progress.
 *
 * Return: true if it fits the AC file's sink: that sink, still open, the
 * stream at its next byte, room for the bytes.
 */
bool rs_sink_recv_data(struct rs_ac *ac, const struct rs_proto_msg *m)
{
	struct rs_sink *s = ac->af ? ac->af->sink : NULL;
	u32 len = m->placed.len;

	lockdep_assert_held(&ac->rf->rx_lock);
	if (!s || s->done || s->id != m->placed.slot ||
	    (u32)ac->rx_bytes != s->off + s->filled || len > s->len - s->filled)
		return false;
	s->filled += len;
	return true;
}

/* @ac is freed: its sinks, if any are left, go (no WRITE comes any more). */
void rs_sink_ac_free(struct rs_ac *ac)
{
	if (ac->sink_offer)
		rs_sink_put(ac->sink_offer);
	ac->sink_offer = NULL;
	if (ac->af && ac->af->sink)
		rs_sink_put(ac->af->sink);
	if (ac->af)
		ac->af->sink = NULL;
}
