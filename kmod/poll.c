// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: polling a QP's completion queue, from a work item or from a
 * thread that waits for completions (busy polling).
 *
 * Each QP has one CQ for its sends and for the receives it took from the
 * device's SRQ (qp.c).  When the device signals a completion
 * (rs_cq_event()), the QP's poll work runs on rs_cq_wq, a per-CPU
 * high-priority workqueue, as ib_core's IB_POLL_WORKQUEUE would run it, and
 * hands every work completion to its ib_cqe's done() in process context.
 *
 * With busy_poll_us set, a thread that waits in RDMASHARE_IOC_ENTER for
 * completions polls, for at most that long, the CQ of the QP that last
 * delivered to its file (rs_file.poll_qp), in its own context, before it
 * sleeps: its completions need neither the work item nor a wake-up (net's
 * napi_busy_loop() model).  Whoever polls owns the CQ (RS_CQ_OWNED), so
 * that completions are handled by one context at a time and in the order
 * the device gave them, as the receive path needs.  A work that finds the
 * CQ owned leaves RS_CQ_MISSED; the owner arms the CQ again (a busy
 * poller) or queues the work again (the work) when it lets go, and the
 * last busy poller to stop queues the work if an event is still
 * unanswered.  Every event queues the work, busy pollers or not: a poller
 * may be off the CPU (preempted, throttled), and the QP is every tenant's.
 * For the same reason a thread that the
 * scheduler runs last (SCHED_IDLE, or a positive nice value) does not
 * busy-poll at all: while it holds the CQ for a batch, nobody else polls.
 *
 * Sleep polling (sleep_poll_us, off by default): a thread that goes to
 * sleep in ENTER (after busy polling, or without) or in an AC file's read
 * or write (rs_wait_sleep_polling()) offers to answer the next event of
 * the QP it waits on itself (rs_qp.poll_sleeper).  The event then wakes
 * that thread instead of queueing the work, and the thread polls the CQ
 * in its own context: one wake-up from the completion to the application
 * instead of two (the work's, then the application's), as a kernel ULP
 * that polls from the thread it wakes has.  The event hands the thread only what any owner
 * has (the CQ, unarmed, until whoever polls arms it again), and a thread
 * that is slow to run must not hold the other tenants' completions up:
 * the event also starts rs_qp.poll_timer, which queues the work if the
 * thread has not taken the CQ within sleep_poll_us (NAPI's busy polling
 * with gro_flush_timeout as the watchdog).  One thread at a time offers,
 * per QP; threads the scheduler runs last do not (see below).
 *
 * A busy poller finds its QP by id (rs_cq_ids), under RCU: QP memory is
 * freed after a grace period (qp.c), and the CQ is destroyed only by the
 * teardown, which sets RS_CQ_DEAD (under rs_qp.poll_lock, which a busy
 * poller holds to queue the work) and then takes RS_CQ_OWNED for good.
 */
#include <linux/hrtimer.h>
#include <linux/rcupdate.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "transport.h"

/* Completions fetched from the device at a time; the work's budget. */
#define RS_CQ_BATCH	16
#define RS_CQ_BUDGET	256

enum {
	RS_CQ_OWNED,	/* a context polls the CQ */
	RS_CQ_MISSED,	/* an event came while it did */
	RS_CQ_DEAD,	/* the CQ is being destroyed: nobody polls */
};

static struct workqueue_struct *rs_cq_wq;
/* Ids from 1: a file's rs_file.poll_qp 0 is none. */
static DEFINE_XARRAY_ALLOC1(rs_cq_ids);
static u32 rs_cq_next_id;

static int rs_cq_process(struct rs_qp *qp, int budget)
{
	int i, n, done = 0;

	while (done < budget) {
		n = ib_poll_cq(qp->cq, min(RS_CQ_BATCH, budget - done), qp->wcs);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++) {
			struct ib_wc *wc = &qp->wcs[i];

			/* Every work request this module posts names its ib_cqe. */
			if (wc->wr_cqe)
				wc->wr_cqe->done(qp->cq, wc);
			else
				WARN_ON_ONCE(wc->status == IB_WC_SUCCESS);
		}
		done += n;
		if (n < RS_CQ_BATCH || done >= budget)
			break;
		/* The handlers may have done a tenant's work: let others run. */
		cond_resched();
	}
	return done;
}

/* Own the CQ; a context that cannot leaves the owner an event to replay. */
static bool rs_cq_claim(struct rs_qp *qp, bool event)
{
	if (!test_and_set_bit_lock(RS_CQ_OWNED, &qp->poll_state))
		goto owned;
	if (!event)
		return false;
	set_bit(RS_CQ_MISSED, &qp->poll_state);
	/* Pairs with rs_cq_unclaim(): the owner sees MISSED, or left. */
	smp_mb__after_atomic();
	if (test_and_set_bit_lock(RS_CQ_OWNED, &qp->poll_state))
		return false;
owned:
	if (test_bit(RS_CQ_DEAD, &qp->poll_state)) {
		clear_bit_unlock(RS_CQ_OWNED, &qp->poll_state);
		return false;
	}
	return true;
}

static void rs_cq_unclaim(struct rs_qp *qp)
{
	clear_bit_unlock(RS_CQ_OWNED, &qp->poll_state);
	/* Pairs with rs_cq_claim(): it sees the CQ free, or we see MISSED. */
	smp_mb__after_atomic();
	if (test_and_clear_bit(RS_CQ_MISSED, &qp->poll_state))
		queue_work(rs_cq_wq, &qp->poll_work);
}

/* An event came: poll @qp's CQ, then arm it again; how many were polled. */
static int rs_cq_answer(struct rs_qp *qp)
{
	int done;

	if (!rs_cq_claim(qp, true))
		return 0;
	/* What came before the claim is polled now. */
	clear_bit(RS_CQ_MISSED, &qp->poll_state);
	done = rs_cq_process(qp, RS_CQ_BUDGET);
	if (done >= RS_CQ_BUDGET ||
	    ib_req_notify_cq(qp->cq, IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS) > 0)
		queue_work(rs_cq_wq, &qp->poll_work);
	rs_cq_unclaim(qp);
	return done;
}

static void rs_cq_work(struct work_struct *work)
{
	rs_cq_answer(container_of(work, struct rs_qp, poll_work));
}

/*
 * A sleep poller did not take the event in time: the work answers it, on
 * the CPU that took the event (the timer is pinned), not on the poller's.
 */
static enum hrtimer_restart rs_cq_timer(struct hrtimer *timer)
{
	struct rs_qp *qp = container_of(timer, struct rs_qp, poll_timer);

	queue_work(rs_cq_wq, &qp->poll_work);
	return HRTIMER_NORESTART;
}

/*
 * The device's completion event, in whatever context it raises it: to the
 * thread that sleeps on the QP, if one does, else to the work.  The task
 * is freed after a grace period (it may have left ENTER since the swap).
 */
static void rs_cq_event(struct ib_cq *cq, void *ctx)
{
	struct rs_qp *qp = ctx;
	struct task_struct *t;

	rcu_read_lock();
	/* No atomic write on the events that no thread waits for. */
	t = READ_ONCE(qp->poll_sleeper) ? xchg(&qp->poll_sleeper, NULL) : NULL;
	if (t) {
		hrtimer_start(&qp->poll_timer,
			      ns_to_ktime((u64)READ_ONCE(rs_sleep_poll_us) * NSEC_PER_USEC),
			      HRTIMER_MODE_REL_PINNED);
		wake_up_process(t);
		rcu_read_unlock();
		return;
	}
	rcu_read_unlock();
	queue_work(rs_cq_wq, &qp->poll_work);
}

/* @qp's CQ, @qp->cq_size entries, armed; polled from rs_cq_wq. */
int rs_cq_create(struct rs_qp *qp, struct ib_device *ibdev)
{
	static atomic_t vector = ATOMIC_INIT(0);
	struct ib_cq_init_attr attr = { .cqe = qp->cq_size };
	struct ib_cq *cq;
	int ret;

	qp->wcs = kcalloc(RS_CQ_BATCH, sizeof(*qp->wcs), GFP_KERNEL);
	if (!qp->wcs)
		return -ENOMEM;
	if (ibdev->num_comp_vectors > 1)
		attr.comp_vector = (u32)atomic_inc_return(&vector) % ibdev->num_comp_vectors;
	qp->poll_state = 0;
	spin_lock_init(&qp->poll_lock);
	INIT_WORK(&qp->poll_work, rs_cq_work);
	qp->poll_sleeper = NULL;
	hrtimer_init(&qp->poll_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED);
	qp->poll_timer.function = rs_cq_timer;
	cq = ib_create_cq(ibdev, rs_cq_event, NULL, qp, &attr);
	if (IS_ERR(cq)) {
		ret = PTR_ERR(cq);
		goto out_free;
	}
	qp->cq = cq;
	ret = xa_alloc_cyclic(&rs_cq_ids, &qp->poll_id, qp, XA_LIMIT(1, INT_MAX),
			      &rs_cq_next_id, GFP_KERNEL);
	if (ret < 0)
		goto out_destroy;
	ret = ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
	if (ret)
		goto out_erase;
	return 0;

out_erase:
	xa_erase(&rs_cq_ids, qp->poll_id);
	qp->poll_id = 0;
out_destroy:
	ib_destroy_cq(cq);
	qp->cq = NULL;
out_free:
	kfree(qp->wcs);
	qp->wcs = NULL;
	return ret;
}

/*
 * Process context, the QP's drain done (every completion that mattered was
 * handled), before the QP is destroyed: the batch that handled the drain's
 * completion may hold more of the QP's, which read the QP (wc->qp).  No
 * poller touches the CQ after this; what it still holds is dropped.
 */
void rs_cq_stop(struct rs_qp *qp)
{
	/* Only the teardown marks the CQ dead, once. */
	if (test_bit(RS_CQ_DEAD, &qp->poll_state))
		return;
	xa_erase(&rs_cq_ids, qp->poll_id);
	WRITE_ONCE(qp->poll_id, 0);
	/* A busy poller queues the work under the lock, before this or never. */
	spin_lock(&qp->poll_lock);
	set_bit(RS_CQ_DEAD, &qp->poll_state);
	spin_unlock(&qp->poll_lock);
	/* Pairs with rs_cq_claim(): a later owner sees DEAD. */
	smp_mb();
	/* A busy poller holds it for a batch at most. */
	while (test_and_set_bit_lock(RS_CQ_OWNED, &qp->poll_state))
		usleep_range(50, 100);
}

/* Process context, the QP destroyed. */
void rs_cq_destroy(struct rs_qp *qp)
{
	rs_cq_stop(qp);
	ib_destroy_cq(qp->cq);
	qp->cq = NULL;
	/* No event now: a work queued before finds the CQ dead. */
	hrtimer_cancel(&qp->poll_timer);
	cancel_work_sync(&qp->poll_work);
	kfree(qp->wcs);
	qp->wcs = NULL;
}

/*
 * A completion of @qp's was posted to @rf's CQ: a waiter in @rf busy-polls
 * that QP.
 */
void rs_file_note_qp(struct rs_file *rf, struct rs_qp *qp)
{
	u32 id = READ_ONCE(qp->poll_id);

	if (READ_ONCE(rf->poll_qp) != id)
		WRITE_ONCE(rf->poll_qp, id);
}

/* The QP @rf noted, with a reference, if its CQ is still there. */
static struct rs_qp *rs_file_poll_qp(struct rs_file *rf)
{
	u32 id = READ_ONCE(rf->poll_qp);
	struct rs_qp *qp;

	if (!id)
		return NULL;
	rcu_read_lock();
	qp = xa_load(&rs_cq_ids, id);
	if (qp && !kref_get_unless_zero(&qp->ref))
		qp = NULL;
	rcu_read_unlock();
	return qp;
}

/*
 * One round of busy polling on @qp; a no-op if another context polls it.
 * A work that found the CQ owned meanwhile left it unarmed: arm it, as the
 * work would have; completions that are there already are the next
 * round's.
 */
static void rs_cq_busy_poll(struct rs_qp *qp)
{
	int done;

	if (!rs_cq_claim(qp, false))
		return;
	done = rs_cq_process(qp, RS_CQ_BATCH);
	if (done)
		rs_qp_stat(qp, RS_STAT_BUSY_POLLED, done);
	if (test_and_clear_bit(RS_CQ_MISSED, &qp->poll_state) &&
	    ib_req_notify_cq(qp->cq, IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS) > 0)
		set_bit(RS_CQ_MISSED, &qp->poll_state);
	clear_bit_unlock(RS_CQ_OWNED, &qp->poll_state);
}

/* A thread stops busy-polling @qp: an event left unanswered goes to the work. */
static void rs_cq_busy_end(struct rs_qp *qp)
{
	/* Pairs with rs_cq_claim(): a work that found the CQ owned set MISSED. */
	smp_mb();
	if (!test_bit(RS_CQ_MISSED, &qp->poll_state))
		return;
	/* Not once the teardown marked the CQ dead: it cancels the work after. */
	spin_lock(&qp->poll_lock);
	if (!test_bit(RS_CQ_DEAD, &qp->poll_state))
		queue_work(rs_cq_wq, &qp->poll_work);
	spin_unlock(&qp->poll_lock);
}

/*
 * Called from ENTER before it sleeps for @min_complete completions: poll
 * for up to rs_busy_poll_us (and @timeout_ms, if not 0), giving the CPU up
 * whenever the scheduler asks, with what came meanwhile left to the work
 * item (a poller that does not run must not hold the QP's events up).
 * True if what ENTER waits for is there (or a signal is).
 */
bool rs_busy_poll(struct rs_file *rf, u32 min_complete, u32 timeout_ms)
{
	u64 us = READ_ONCE(rs_busy_poll_us);
	struct rs_qp *qp;
	bool ready;
	u64 end;

	/* Not a thread that may wait long for the CPU: see above. */
	if (current->policy == SCHED_IDLE || task_nice(current) > 0)
		return false;
	qp = rs_file_poll_qp(rf);

	if (timeout_ms)
		us = min_t(u64, us, (u64)timeout_ms * USEC_PER_MSEC);
	end = local_clock() + us * NSEC_PER_USEC;

	for (;;) {
		if (qp)
			rs_cq_busy_poll(qp);
		ready = rs_cq_ready(rf) >= min_complete || rs_cq_over_fits(rf) ||
			signal_pending(current);
		if (ready || local_clock() >= end)
			break;
		if (need_resched()) {
			if (qp)
				rs_cq_busy_end(qp);
			cond_resched();
		}
		cpu_relax();
	}
	if (qp) {
		rs_cq_busy_end(qp);
		rs_qp_put(qp);
	}
	return ready;
}

/*
 * A thread about to sleep for completions of @qp (NULL: none known):
 * offer to answer its next event (see above).  True if it did; it must
 * then call rs_sleep_withdraw() once awake, and wake up (besides for its
 * own condition) when rs_sleep_taken().
 */
bool rs_sleep_offer(struct rs_qp *qp)
{
	if (!qp || !READ_ONCE(rs_sleep_poll_us) || current->policy == SCHED_IDLE ||
	    task_nice(current) > 0)
		return false;
	/* Another thread offered already: the work, or it, wakes us. */
	return !cmpxchg(&qp->poll_sleeper, NULL, current);
}

/* Has an event taken this thread's offer? */
bool rs_sleep_taken(struct rs_qp *qp)
{
	return READ_ONCE(qp->poll_sleeper) != current;
}

/*
 * Withdraw the offer, awake; if an event took it, answer the event.  True
 * if it did (what this thread waits for may have come).
 */
bool rs_sleep_withdraw(struct rs_qp *qp)
{
	int done;

	if (cmpxchg(&qp->poll_sleeper, current, NULL) == current)
		return false;
	hrtimer_try_to_cancel(&qp->poll_timer);
	done = rs_cq_answer(qp);
	if (done)
		rs_qp_stat(qp, RS_STAT_SLEEP_POLLED, done);
	return true;
}

/*
 * Called from ENTER to sleep until @rf has @min_complete completions (or
 * one that waits for room fits), a signal or @timeout jiffies, answering
 * the events of the QP @rf noted.  What
 * wait_event_interruptible_timeout() returns.
 */
long rs_sleep_poll(struct rs_file *rf, u32 min_complete, long timeout)
{
	struct rs_qp *qp = NULL;
	long ret;

	if (READ_ONCE(rs_sleep_poll_us))
		qp = rs_file_poll_qp(rf);
	ret = rs_wait_sleep_polling(qp, rf->cq_wait,
				    rs_cq_ready(rf) >= min_complete || rs_cq_over_fits(rf),
				    timeout);
	if (qp)
		rs_qp_put(qp);
	return ret;
}

int rs_poll_init(void)
{
	rs_cq_wq = alloc_workqueue("rdmashare_cq", WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	return rs_cq_wq ? 0 : -ENOMEM;
}

void rs_poll_exit(void)
{
	destroy_workqueue(rs_cq_wq);
	WARN_ON(!xa_empty(&rs_cq_ids));
	xa_destroy(&rs_cq_ids);
}
