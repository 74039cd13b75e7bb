// SPDX-License-Identifier: GPL-2.0
/*
 * rs_kqp_floor: the measurements, once both QPs are up.
 *
 * Ping-pong: ep[0] stamps the time, posts a SEND of the round trip's
 * number and waits for its receive completion; ep[1] waits for the
 * request's, checks the number and sends it back.  The round trip is the
 * time from before ep[0]'s SEND to after its receive completion.
 *
 * Stream: ep[0] posts @count SENDs, at most @window of them not known
 * complete; ep[1] checks each message's number and reposts its receive.
 * The rate is the receiver's: its messages from the first completion it
 * polled to the last, as rs-stream's server counts.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/timekeeping.h>

#include "kqp.h"

/* The run goes on, unless a thread failed, a signal came or a stop. */
static int kqp_check_stop(struct kqp_run *run)
{
	if (READ_ONCE(run->abort))
		return -ECANCELED;
	if (current->flags & PF_KTHREAD) {
		if (kthread_should_stop())
			return -EINTR;
	} else if (signal_pending(current)) {
		return -EINTR;
	}
	return 0;
}

/*
 * Up to @nwc completions of @kcq, at least one, waiting the run's way; or
 * an error.
 */
static int kqp_wait(struct kqp_ep *ep, struct kqp_cq *kcq, int nwc)
{
	struct kqp_run *run = ep->run;
	unsigned long deadline = jiffies + msecs_to_jiffies(KQP_WAIT_MS);
	long left;
	int n;

	for (;;) {
		n = ib_poll_cq(kcq->cq, nwc, ep->wc);
		if (n)
			return n;
		n = kqp_check_stop(run);
		if (n)
			return n;
		left = (long)(deadline - jiffies);
		if (left <= 0)
			return -ETIMEDOUT;
		if (run->p.wait == KQP_POLL) {
			cond_resched();
			continue;
		}
		/* Empty: arm it; a completion that came meanwhile is polled. */
		WRITE_ONCE(kcq->event, false);
		n = ib_req_notify_cq(kcq->cq, IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS);
		if (n < 0)
			return n;
		if (n > 0)
			continue;
		left = wait_event_interruptible_timeout(ep->wq, READ_ONCE(kcq->event) ||
							kqp_check_stop(run),
							left);
		if (left < 0)
			return -EINTR;
	}
}

static int kqp_wc_check(const struct ib_wc *wc, enum ib_wc_opcode opcode)
{
	if (wc->status != IB_WC_SUCCESS) {
		pr_warn("work completion %llu: %s\n", wc->wr_id, ib_wc_status_msg(wc->status));
		return -EIO;
	}
	if (wc->opcode != opcode) {
		pr_warn("work completion %llu: opcode %d\n", wc->wr_id, wc->opcode);
		return -EIO;
	}
	return 0;
}

/* Wait for signalled sends to complete. */
static int kqp_reap_sends(struct kqp_ep *ep)
{
	int i, n, ret;

	n = kqp_wait(ep, &ep->scq, KQP_BATCH);
	for (i = 0; i < n; i++) {
		ret = kqp_wc_check(&ep->wc[i], IB_WC_SEND);
		if (ret)
			return ret;
		/* Every send up to a signalled one is complete. */
		ep->done = (u32)ep->wc[i].wr_id + 1;
	}
	return n < 0 ? n : 0;
}

/*
 * A SEND of message @seq, once the window has room; signalled every
 * ep->signal sends, and when @last.
 */
static int kqp_send(struct kqp_ep *ep, u64 seq, bool last)
{
	struct ib_device *dev = ep->id->device;
	u32 size = ep->run->p.size;
	struct ib_sge sge = {
		.length = size,
		.lkey = ep->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_id = ep->posted,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
	};
	struct kqp_buf *buf;
	int ret;

	while (ep->posted - ep->done >= ep->nr_tx) {
		ret = kqp_reap_sends(ep);
		if (ret)
			return ret;
	}
	/* The buffer's last send is complete: the window. */
	buf = &ep->tx[ep->posted % ep->nr_tx];
	ib_dma_sync_single_for_cpu(dev, buf->dma, size, DMA_TO_DEVICE);
	memcpy(buf->data, &seq, sizeof(seq));
	ib_dma_sync_single_for_device(dev, buf->dma, size, DMA_TO_DEVICE);
	sge.addr = buf->dma;
	if (ep->inline_data) {
		/* The CPU copies it now, from its kernel address. */
		sge.addr = (uintptr_t)buf->data;
		wr.send_flags = IB_SEND_INLINE;
	}
	if (last || ep->posted % ep->signal == ep->signal - 1)
		wr.send_flags |= IB_SEND_SIGNALED;
	ret = ib_post_send(ep->id->qp, &wr, NULL);
	if (ret)
		return ret;
	ep->posted++;
	return 0;
}

/* The receive buffers @idx posted (again), in one call. */
int kqp_post_recvs(struct kqp_ep *ep, const u32 *idx, int n)
{
	u32 size = ep->run->p.size;
	int i;

	for (i = 0; i < n; i++) {
		ep->rsge[i] = (struct ib_sge) {
			.addr = ep->rx[idx[i]].dma,
			.length = size,
			.lkey = ep->pd->local_dma_lkey,
		};
		ep->rwr[i] = (struct ib_recv_wr) {
			.wr_id = idx[i],
			.next = i + 1 < n ? &ep->rwr[i + 1] : NULL,
			.sg_list = &ep->rsge[i],
			.num_sge = 1,
		};
	}
	return ib_post_recv(ep->id->qp, ep->rwr, NULL);
}

/* A receive completion: the message @seq, of the run's size? */
static int kqp_recv_check(struct kqp_ep *ep, const struct ib_wc *wc, u64 seq)
{
	u32 size = ep->run->p.size;
	struct kqp_buf *buf;
	u64 got;
	int ret;

	ret = kqp_wc_check(wc, IB_WC_RECV);
	if (ret)
		return ret;
	if (wc->wr_id >= ep->nr_rx || wc->byte_len != size) {
		pr_warn("receive %llu: %u bytes\n", wc->wr_id, wc->byte_len);
		return -EPROTO;
	}
	buf = &ep->rx[wc->wr_id];
	ib_dma_sync_single_for_cpu(ep->id->device, buf->dma, size, DMA_FROM_DEVICE);
	memcpy(&got, buf->data, sizeof(got));
	ib_dma_sync_single_for_device(ep->id->device, buf->dma, size, DMA_FROM_DEVICE);
	if (got != seq) {
		pr_warn("message %llu: got %llu\n", seq, got);
		return -EPROTO;
	}
	return 0;
}

/* One message @seq received and its buffer reposted. */
static int kqp_recv_one(struct kqp_ep *ep, u64 seq)
{
	u32 idx;
	int n;

	n = kqp_wait(ep, &ep->rcq, 1);
	if (n < 0)
		return n;
	n = kqp_recv_check(ep, &ep->wc[0], seq);
	if (n)
		return n;
	idx = ep->wc[0].wr_id;
	return kqp_post_recvs(ep, &idx, 1);
}

/* ep[1]'s half of a ping-pong: each request answered with its number. */
static int kqp_pong(struct kqp_run *run)
{
	struct kqp_ep *ep = &run->ep[1];
	u32 i;
	int ret;

	for (i = 0; i < run->p.count; i++) {
		ret = kqp_recv_one(ep, i);
		if (!ret)
			ret = kqp_send(ep, i, false);
		if (ret)
			return ret;
	}
	return 0;
}

/* ep[1]'s half of a stream: every message received and checked. */
static int kqp_sink(struct kqp_run *run)
{
	struct kqp_ep *ep = &run->ep[1];
	u32 idx[KQP_BATCH];
	u64 now;
	int i, n, ret;

	while (run->msgs < run->p.count) {
		n = kqp_wait(ep, &ep->rcq, KQP_BATCH);
		if (n < 0)
			return n;
		now = ktime_get_ns();
		if (!run->msgs)
			run->t_first = now;
		for (i = 0; i < n; i++) {
			ret = kqp_recv_check(ep, &ep->wc[i], run->msgs);
			if (ret)
				return ret;
			idx[i] = ep->wc[i].wr_id;
			run->msgs++;
			run->bytes += ep->wc[i].byte_len;
		}
		run->t_last = now;
		ret = kqp_post_recvs(ep, idx, n);
		if (ret)
			return ret;
	}
	return 0;
}

static int kqp_peer_thread(void *arg)
{
	struct kqp_run *run = arg;
	int ret;

	complete(&run->peer_ready);
	ret = run->p.kind == KQP_PINGPONG ? kqp_pong(run) : kqp_sink(run);
	if (ret)
		kqp_abort(run, ret);
	complete(&run->peer_done);
	/* kqp_peer_stop() collects the result. */
	set_current_state(TASK_INTERRUPTIBLE);
	while (!kthread_should_stop()) {
		schedule();
		set_current_state(TASK_INTERRUPTIBLE);
	}
	__set_current_state(TASK_RUNNING);
	return ret;
}

/*
 * ep[1]'s thread, finished (when @ret is 0: it has done its part, or
 * failed) and stopped; the run's first error, or @ret.
 */
static int kqp_peer_stop(struct kqp_run *run, struct task_struct *task, int ret)
{
	int peer;

	if (!ret && wait_for_completion_interruptible(&run->peer_done))
		ret = -EINTR;
	if (ret)
		kqp_abort(run, ret);
	peer = kthread_stop(task);
	return READ_ONCE(run->error) ?: ret ?: peer;
}

/* ep[0]'s half of a ping-pong: each round trip timed. */
static int kqp_ping(struct kqp_run *run)
{
	struct kqp_ep *ep = &run->ep[0];
	u64 t0, rtt;
	int ret;
	u32 i;

	for (i = 0; i < run->p.count; i++) {
		t0 = ktime_get_ns();
		ret = kqp_send(ep, i, false);
		if (!ret)
			ret = kqp_recv_one(ep, i);
		if (ret)
			return ret;
		rtt = ktime_get_ns() - t0;
		run->rtt[i] = min_t(u64, rtt, U32_MAX);
	}
	return 0;
}

/* ep[0]'s half of a stream: every message sent and complete. */
static int kqp_source(struct kqp_run *run)
{
	struct kqp_ep *ep = &run->ep[0];
	int ret = 0;
	u32 i;

	for (i = 0; i < run->p.count && !ret; i++)
		ret = kqp_send(ep, i, i + 1 == run->p.count);
	while (!ret && ep->done != ep->posted)
		ret = kqp_reap_sends(ep);
	return ret;
}

/* The command's measurement: ep[0]'s half here, ep[1]'s in a thread. */
int kqp_measure(struct kqp_run *run)
{
	struct task_struct *task;
	int ret;

	task = kthread_run(kqp_peer_thread, run, "rs_kqp_floor");
	if (IS_ERR(task))
		return PTR_ERR(task);
	/*
	 * Not before it runs: a receiver that starts late would find a batch
	 * waiting and count it in no time.
	 */
	if (wait_for_completion_interruptible(&run->peer_ready))
		ret = -EINTR;
	else
		ret = run->p.kind == KQP_PINGPONG ? kqp_ping(run) : kqp_source(run);
	return kqp_peer_stop(run, task, ret);
}
