// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: consuming the submission queue (RDMASHARE_IOC_ENTER).
 *
 * The caller's thread copies each SQE out of the shared ring once, validates
 * the copy and hands the operation on to its AC (send.c), whose QP's sender
 * may then post it from this thread (sender.c).  Every
 * consumed SQE yields exactly one completion, whose CQ slot is reserved
 * before the SQE is consumed: of the kind its opcode says (rings.c), so a
 * SEND finds no room once the file's waiting operations reached their
 * limit, while a RELEASE still does.
 *
 * With RDMASHARE_SETUP_SQ_WAKEUP, the completion of a file's operation on
 * the wire consumes the SQ too (rs_sq_poll(), from the completion handler),
 * so that while traffic flows the application need not enter the kernel to
 * submit; RDMASHARE_SQ_NEED_WAKEUP tells it when it must.  A completion
 * consumes a bounded batch: the QP it came on is shared by every tenant,
 * so the rest goes to the file's work item, and past a bound to the
 * application's own ENTER.
 */
#include <linux/jiffies.h>
#include <linux/nospec.h>
#include <linux/sched/signal.h>
#include <linux/string.h>

#include "rdmashare.h"
#include "ring.h"
#include "transport.h"

/*
 * The CQ reservation an SQE takes, by its opcode alone: the kind its
 * completion gives back, whether it comes at once or later.
 */
static enum rs_cq_kind rs_sqe_cq_kind(const struct rdmashare_sqe *sqe)
{
	switch (sqe->opcode) {
	case RDMASHARE_OP_SEND:
	case RDMASHARE_OP_CLOSE:
	case RDMASHARE_OP_SHUTDOWN:
		return RS_CQ_WAIT;
	default:
		return RS_CQ_NOW;
	}
}

void rs_complete_op(struct rs_file *rf, const struct rdmashare_sqe *sqe, int res)
{
	struct rdmashare_cqe cqe = {
		.user_data = sqe->user_data,
		.res = res,
		.ac = sqe->ac,
		.type = RDMASHARE_CQE_OP,
		.opcode = sqe->opcode,
	};

	rs_cq_post(rf, &cqe, rs_sqe_cq_kind(sqe));
}

/* Fields every SQE must leave zero, whatever its opcode. */
static bool rs_sqe_reserved_clear(const struct rdmashare_sqe *sqe)
{
	return !sqe->flags && !sqe->resv0 && !sqe->resv1 &&
	       !memchr_inv(sqe->resv2, 0, sizeof(sqe->resv2));
}

/* Start one operation; it completes, now or later, exactly once. */
static void rs_submit_one(struct rs_file *rf, const struct rdmashare_sqe *sqe)
{
	if (!rs_sqe_reserved_clear(sqe)) {
		rs_complete_op(rf, sqe, -EINVAL);
		return;
	}

	switch (sqe->opcode) {
	case RDMASHARE_OP_NOP:
		if (sqe->ac || sqe->addr || sqe->len) {
			rs_complete_op(rf, sqe, -EINVAL);
			return;
		}
		rs_complete_op(rf, sqe, 0);
		return;
	case RDMASHARE_OP_SEND:
	case RDMASHARE_OP_RELEASE:
	case RDMASHARE_OP_CLOSE:
	case RDMASHARE_OP_SHUTDOWN:
		rs_ac_submit(rf, sqe);
		return;
	default:
		rs_complete_op(rf, sqe, -EINVAL);
		return;
	}
}

/* Called with submit_lock held: consume up to @to_submit SQEs, in order. */
static int rs_sq_consume(struct rs_file *rf, u32 to_submit)
{
	struct rdmashare_sqe sqe;
	int avail, n;
	u32 tail, slot;

	lockdep_assert_held(&rf->submit_lock);
	/* Pairs with the application's store-release: its SQEs are written. */
	tail = smp_load_acquire(&rf->rings->sq.tail);
	avail = rs_ring_to_consume(rf->sq_head, tail, rf->sq_entries, to_submit);
	if (avail < 0)
		return avail;
	for (n = 0; n < avail; n++) {
		slot = array_index_nospec(rs_ring_slot(rf->sq_head, rf->sq_entries),
					  rf->sq_entries);
		/* Read the entry once; validate and use only the copy. */
		memcpy(&sqe, &rf->sqes[slot], sizeof(sqe));
		/* No room for its completion: it stays, and so do those after. */
		if (!rs_cq_reserve(rf, rs_sqe_cq_kind(&sqe)))
			break;
		rf->sq_head++;
		rs_submit_one(rf, &sqe);
	}
	/* The SQEs were copied out before their slots are handed back. */
	smp_store_release(&rf->rings->sq.head, rf->sq_head);
	return n;
}

/*
 * Called with submit_lock held, after consuming: may the application leave
 * what it publishes next to the kernel?  Only while an operation of the file
 * is on the wire (its completion will consume the SQ) and nothing was left
 * in the SQ (no CQ room: the application reaps, then calls ENTER).  True if
 * the application must call ENTER.
 */
static bool rs_sq_need_wakeup(struct rs_file *rf)
{
	bool need;

	need = !atomic_read(&rf->ops_on_wire) ||
	       READ_ONCE(rf->rings->sq.tail) != rf->sq_head;
	if (need)
		atomic_or(RDMASHARE_SQ_NEED_WAKEUP, &rf->rings->sq_flags);
	else
		atomic_andnot(RDMASHARE_SQ_NEED_WAKEUP, &rf->rings->sq_flags);
	/*
	 * The flag before the tail: pairs with the application's barrier
	 * between its tail and its reading of the flag.
	 */
	smp_mb();
	return need;
}

/* Rounds of the SQ one consumer makes after it set the flag. */
#define RS_SQ_RECHECK	8

/*
 * SQEs a completion consumes for a file at most, in the shared QP's
 * completion handler; the file's own work item takes the rest, up to
 * RS_SQ_WORK_ROUNDS such batches, after which the application must enter
 * the kernel itself.
 */
#define RS_SQ_POLL_BUDGET	64
#define RS_SQ_WORK_ROUNDS	16

/*
 * Called with submit_lock held: consume up to @to_submit SQEs, then publish
 * the flag.  Once the flag is set, SQEs the application published while it
 * still read clear are this caller's to consume: it looks at the tail
 * again, while @budget lasts (of SQEs, in all).
 */
static int rs_sq_run(struct rs_file *rf, u32 to_submit, u32 budget)
{
	int n, more, round;

	n = rs_sq_consume(rf, min(to_submit, budget));
	if (!rf->sq_wakeup)
		return n;
	if (n < 0) {
		/* A tail out of range: ENTER reports it. */
		atomic_or(RDMASHARE_SQ_NEED_WAKEUP, &rf->rings->sq_flags);
		return n;
	}
	for (round = 0; round < RS_SQ_RECHECK && (u32)n < budget && rs_sq_need_wakeup(rf);
	     round++) {
		more = rs_sq_consume(rf, budget - n);
		if (more <= 0)
			break;
		n += more;
	}
	return n;
}

/*
 * Consume what the application published since (RDMASHARE_SETUP_SQ_WAKEUP),
 * @budget SQEs at most.  If another consumer holds submit_lock, it is told
 * to look again before it leaves instead; nothing here waits.  Process
 * context.  Returns the SQEs it consumed; @budget of them if it stopped
 * there (more may wait).
 */
static u32 rs_sq_poll_some(struct rs_file *rf, u32 budget)
{
	u32 consumed = 0;
	int n;

	set_bit(RS_SQ_POLL_PENDING, &rf->sq_poll);
	/* Pairs with the barrier after the holder's unlock. */
	smp_mb__after_atomic();
	while (consumed < budget && mutex_trylock(&rf->submit_lock)) {
		clear_bit(RS_SQ_POLL_PENDING, &rf->sq_poll);
		/* Cleared before looking at the SQ. */
		smp_mb__after_atomic();
		/* Once the file's release began, only it touches the ACs. */
		if (!READ_ONCE(rf->closing)) {
			n = rs_sq_run(rf, U32_MAX, budget - consumed);
			if (n > 0)
				consumed += n;
		}
		mutex_unlock(&rf->submit_lock);
		/* Unlocked before looking at RS_SQ_POLL_PENDING. */
		smp_mb();
		if (!test_bit(RS_SQ_POLL_PENDING, &rf->sq_poll))
			break;
	}
	/* Stopped by the budget: whoever goes on looks at the SQ. */
	if (consumed >= budget)
		set_bit(RS_SQ_POLL_PENDING, &rf->sq_poll);
	return consumed;
}

/*
 * More SQEs than a completion takes: RS_SQ_WORK_ROUNDS more batches, in
 * the file's work item rather than in a shared QP's completion handler;
 * then the application is told to enter the kernel for the rest.
 */
static void rs_sq_work(struct work_struct *work)
{
	struct rs_file *rf = container_of(work, struct rs_file, sq_work);
	int round;

	for (round = 0; round < RS_SQ_WORK_ROUNDS; round++) {
		if (rs_sq_poll_some(rf, RS_SQ_POLL_BUDGET) < RS_SQ_POLL_BUDGET)
			goto out;
		cond_resched();
	}
	mutex_lock(&rf->submit_lock);
	atomic_or(RDMASHARE_SQ_NEED_WAKEUP, &rf->rings->sq_flags);
	mutex_unlock(&rf->submit_lock);
out:
	rs_file_put(rf);
}

/* Called by rs_file_alloc(). */
void rs_sq_work_init(struct rs_file *rf)
{
	INIT_WORK(&rf->sq_work, rs_sq_work);
}

/*
 * A completion of one of @rf's operations on the wire: consume what the
 * application published since, RS_SQ_POLL_BUDGET SQEs at most here; the
 * file's work item takes what is left.  Returns the SQEs it consumed.
 */
u32 rs_sq_poll(struct rs_file *rf)
{
	u32 n = rs_sq_poll_some(rf, RS_SQ_POLL_BUDGET);

	if (n >= RS_SQ_POLL_BUDGET) {
		kref_get(&rf->ref);
		if (!queue_work(rs_wq, &rf->sq_work))
			rs_file_put(rf);
	}
	return n;
}

static int rs_submit(struct rs_file *rf, u32 to_submit)
{
	u32 more;
	int n;

	mutex_lock(&rf->submit_lock);
	n = rs_sq_run(rf, to_submit, U32_MAX);
	mutex_unlock(&rf->submit_lock);
	if (rf->sq_wakeup) {
		/*
		 * A completion that found the lock taken left the SQ to us:
		 * what it would have consumed counts as this ENTER's.
		 */
		smp_mb();
		if (test_bit(RS_SQ_POLL_PENDING, &rf->sq_poll)) {
			more = rs_sq_poll_some(rf, U32_MAX);
			if (n >= 0)
				n += more;
		}
	}
	return n;
}

int rs_enter(struct rs_file *rf, struct rdmashare_enter *e)
{
	long timeout = MAX_SCHEDULE_TIMEOUT;
	int submitted = 0;
	long ret;

	if (e->flags & ~RDMASHARE_ENTER_GETEVENTS)
		return -EINVAL;
	if (!(e->flags & RDMASHARE_ENTER_GETEVENTS) && (e->min_complete || e->timeout_ms))
		return -EINVAL;
	/* Pairs with rs_rings_setup(). */
	if (!smp_load_acquire(&rf->ready))
		return -EINVAL;

	if (e->to_submit) {
		submitted = rs_submit(rf, e->to_submit);
		if (submitted < 0)
			return submitted;
	}
	e->submitted = submitted;
	/*
	 * CLOSED completions that waited for room, after the SQ: a CLOSE of
	 * such an AC takes its CLOSED back (the CLOSE's completion says it).
	 */
	rs_ac_flush_closed(rf);

	if (!(e->flags & RDMASHARE_ENTER_GETEVENTS) || !e->min_complete)
		return 0;
	if (e->min_complete > rf->cq_entries)
		return submitted ? 0 : -EINVAL;
	if (e->timeout_ms)
		timeout = msecs_to_jiffies(e->timeout_ms);
	if (READ_ONCE(rs_busy_poll_us) && rs_cq_ready(rf) < e->min_complete) {
		unsigned long start = jiffies;

		if (rs_busy_poll(rf, e->min_complete, e->timeout_ms) &&
		    rs_cq_ready(rf) >= e->min_complete)
			return 0;
		/* The time polled counts against the timeout. */
		if (e->timeout_ms)
			timeout = max_t(long, timeout - (long)(jiffies - start), 1);
	}

	/*
	 * Woken by every completion posted: one that waits for room may
	 * fit now (the application reaped meanwhile).
	 */
	for (;;) {
		ret = rs_sleep_poll(rf, e->min_complete, timeout);
		if (ret <= 0 || rs_cq_ready(rf) >= e->min_complete)
			break;
		rs_ac_flush_closed(rf);
		if (rs_cq_ready(rf) >= e->min_complete)
			break;
		timeout = ret;
	}
	if (submitted || ret > 0)
		return 0;
	if (ret == -ERESTARTSYS)
		return -EINTR;
	return -ETIME;
}
