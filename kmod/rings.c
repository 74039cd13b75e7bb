// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: the rings and the data area of a file.
 *
 * RDMASHARE_IOC_SETUP allocates, once per file, the rings mapping (control
 * words, SQEs, CQEs) and the data area with vmalloc_user(), charges them to
 * the caller's RLIMIT_MEMLOCK as io_uring does, and reports the layout with
 * offsetof(), so user space hard-codes nothing.
 *
 * Barriers (the contract of uapi/linux/rdmashare.h): the kernel reads the
 * SQ tail and the CQ head with smp_load_acquire() and publishes the SQ head
 * and the CQ tail with smp_store_release().  Its own indices, masks and
 * sizes live in struct rs_file, never read back from the shared memory.
 *
 * The CQ never overflows: a completion slot is reserved (rs_cq_reserve())
 * before work that will complete is accepted, so when the application stops
 * reaping, the kernel stops accepting instead of dropping completions.
 */
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/nospec.h>
#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/vmalloc.h>

#include "area.h"
#include "compat.h"
#include "proto.h"
#include "rdmashare.h"
#include "ring.h"

#define RS_OFF_DATA_PGOFF	(RDMASHARE_OFF_DATA >> PAGE_SHIFT)

void rs_rings_init(struct rs_file *rf)
{
	mutex_init(&rf->setup_lock);
	mutex_init(&rf->submit_lock);
	spin_lock_init(&rf->cq_lock);
	INIT_LIST_HEAD(&rf->cq_overflow);
	init_waitqueue_head(&rf->cq_wait);
}

/*
 * Charge @pages to the file's user against RLIMIT_MEMLOCK, and to the
 * process's pinned_vm, as io_uring does for its rings and registered
 * buffers: the pages stay resident for the file's life.
 */
static int rs_account_mem(struct rs_file *rf, unsigned long pages)
{
	long acct = rs_user_lock_mem(rf->user, pages);

	if (acct < 0)
		return acct;
	rf->acct_pages = acct;
	if (current->mm) {
		mmgrab(current->mm);
		rf->mm_account = current->mm;
		atomic64_add(pages, &rf->mm_account->pinned_vm);
		rf->pinned_pages = pages;
	}
	return 0;
}

void rs_rings_free(struct rs_file *rf)
{
	kvfree(rf->ops);
	rf->ops = NULL;
	kvfree(rf->slots);
	kvfree(rf->rx_free);
	kvfree(rf->files_map);
	rf->slots = NULL;
	rf->rx_free = NULL;
	rf->files_map = NULL;
	rs_area_free(&rf->data_area);
	rs_area_free(&rf->rings_area);
	if (rf->user) {
		rs_user_unlock_mem(rf->user, rf->acct_pages);
		free_uid(rf->user);
	}
	if (rf->mm_account) {
		atomic64_sub(rf->pinned_pages, &rf->mm_account->pinned_vm);
		mmdrop(rf->mm_account);
		rf->mm_account = NULL;
		rf->pinned_pages = 0;
	}
	rf->data = NULL;
	rf->rings = NULL;
	rf->user = NULL;
	rf->acct_pages = 0;
}

/* Round a requested ring size up to a power of two within the limits. */
static int rs_ring_size(u32 want, u32 dflt, u32 max, u32 *out)
{
	if (!want)
		want = dflt;
	if (want > max)
		return -EINVAL;
	*out = roundup_pow_of_two(want);
	return 0;
}

static void rs_fill_offsets(struct rdmashare_ring_offsets *o, size_t ctl,
			    size_t mask, size_t entries, size_t flags,
			    size_t array)
{
	o->head = ctl + offsetof(struct rs_ring_ctl, head);
	o->tail = ctl + offsetof(struct rs_ring_ctl, tail);
	o->ring_mask = mask;
	o->ring_entries = entries;
	o->flags = flags;
	o->entries = array;
	memset(o->resv, 0, sizeof(o->resv));
}

int rs_rings_setup(struct rs_file *rf, struct rdmashare_setup *p)
{
	size_t sqes_off, cqes_off, rings_size, data_size, map_size, files_size = 0;
	u32 sq_entries, cq_entries, rx_slots, slot_size = rs_chunk_size, i;
	int ret;

	if ((p->flags & ~(RDMASHARE_SETUP_SQ_WAKEUP | RDMASHARE_SETUP_SLOT_SIZE |
			  RDMASHARE_SETUP_FILES)) || p->resv[0] || p->resv[1])
		return -EINVAL;
	/* The file area: AC files' send buffers (acfile.c). */
	if (p->flags & RDMASHARE_SETUP_FILES) {
		if (!p->files_size || p->files_size > READ_ONCE(rs_data_size_max))
			return -EINVAL;
		files_size = PAGE_ALIGN((size_t)p->files_size);
	} else if (p->files_size) {
		return -EINVAL;
	}
	if (p->flags & RDMASHARE_SETUP_SLOT_SIZE) {
		if (p->rx_slot_size < RS_PROTO_MIN_SLOT || p->rx_slot_size > rs_chunk_size)
			return -EINVAL;
		slot_size = min_t(u32, ALIGN(p->rx_slot_size, RS_SLOT_ALIGN), rs_chunk_size);
	}
	ret = rs_ring_size(p->sq_entries, rs_sq_entries_default, rs_sq_entries_max,
			   &sq_entries);
	if (ret)
		return ret;
	rx_slots = p->rx_slots ?: rs_rx_slots_default;
	if (rx_slots > rs_rx_slots_max)
		return -EINVAL;
	/*
	 * The CQ holds a completion per SQ entry plus one per receive slot
	 * (RECV completions never wait for room, see rs_cq_reserve()).
	 */
	ret = rs_ring_size(p->cq_entries ?:
			   max(2 * sq_entries, RS_CQ_ROOM_MIN) + rx_slots, 0,
			   2 * rs_sq_entries_max + rs_rx_slots_max, &cq_entries);
	if (ret)
		return ret;
	if (cq_entries < sq_entries + rx_slots || cq_entries > RS_RING_ENTRIES_MAX)
		return -EINVAL;
	ret = rs_cq_limits(cq_entries, rx_slots, &rf->cq_limits);
	if (ret)
		return ret;

	/* Checked as the u64 it is: size_t may be narrower. */
	if (p->data_size > READ_ONCE(rs_data_size_max))
		return -EINVAL;
	data_size = p->data_size ?: rs_data_size_default;
	data_size = PAGE_ALIGN(data_size);
	map_size = data_size + PAGE_ALIGN((size_t)rx_slots * slot_size);

	sqes_off = ALIGN(sizeof(struct rs_rings), SMP_CACHE_BYTES);
	cqes_off = sqes_off + array_size(sq_entries, sizeof(struct rdmashare_sqe));
	rings_size = PAGE_ALIGN(cqes_off +
				array_size(cq_entries, sizeof(struct rdmashare_cqe)));

	mutex_lock(&rf->setup_lock);
	if (rf->ready) {
		ret = -EBUSY;
		goto out_unlock;
	}

	rf->user = get_uid(current_user());
	ret = rs_account_mem(rf, (rings_size + map_size + files_size) >> PAGE_SHIFT);
	if (ret)
		goto out_free;

	ret = rs_area_alloc(&rf->rings_area, rings_size, 0, 0);
	if (ret)
		goto out_free;
	rf->rings = rf->rings_area.vaddr;
	ret = rs_area_alloc(&rf->data_area, map_size + files_size, data_size,
			    rs_area_order(map_size - data_size));
	if (ret)
		goto out_free;
	rf->data = rf->data_area.vaddr;
	ret = -ENOMEM;
	rf->slots = kvcalloc(rx_slots, sizeof(*rf->slots), GFP_KERNEL_ACCOUNT);
	rf->rx_free = kvcalloc(rx_slots, sizeof(*rf->rx_free), GFP_KERNEL_ACCOUNT);
	rf->ops = kvcalloc(rf->cq_limits.waiting, sizeof(*rf->ops), GFP_KERNEL_ACCOUNT);
	if (!rf->slots || !rf->rx_free || !rf->ops)
		goto out_free;
	if (files_size) {
		rf->files_map = kvcalloc(BITS_TO_LONGS(files_size >> PAGE_SHIFT),
					 sizeof(unsigned long), GFP_KERNEL_ACCOUNT);
		if (!rf->files_map)
			goto out_free;
	}
	rf->files_offset = map_size;
	rf->files_pages = files_size >> PAGE_SHIFT;
	init_llist_head(&rf->op_free);
	for (i = 0; i < rf->cq_limits.waiting; i++)
		llist_add(&rf->ops[i].free_node, &rf->op_free);
	for (i = 0; i < rx_slots; i++)
		rf->rx_free[i] = rx_slots - 1 - i;
	rf->nr_rx_free = rx_slots;
	rf->rx_slots = rx_slots;
	rf->rx_unreserved = rx_slots;
	rf->rx_slot_size = slot_size;
	rf->rx_offset = data_size;
	rf->map_size = map_size;

	rf->rings_size = rings_size;
	rf->data_size = data_size;
	rf->sqes = (void *)rf->rings + sqes_off;
	rf->cqes = (void *)rf->rings + cqes_off;
	rf->sq_entries = sq_entries;
	rf->cq_entries = cq_entries;
	rf->rings->sq_ring_mask = sq_entries - 1;
	rf->rings->cq_ring_mask = cq_entries - 1;
	rf->rings->sq_ring_entries = sq_entries;
	rf->rings->cq_ring_entries = cq_entries;
	/* Nothing on the wire yet: ENTER submits. */
	rf->sq_wakeup = p->flags & RDMASHARE_SETUP_SQ_WAKEUP;
	if (rf->sq_wakeup)
		atomic_set(&rf->rings->sq_flags, RDMASHARE_SQ_NEED_WAKEUP);

	p->sq_entries = sq_entries;
	p->cq_entries = cq_entries;
	p->data_size = data_size;
	p->rings_size = rings_size;
	p->rx_slots = rx_slots;
	p->rx_slot_size = slot_size;
	p->rx_offset = data_size;
	p->map_size = map_size;
	p->files_size = files_size;
	p->max_acs = READ_ONCE(rs_max_acs_per_file);
	p->max_waiting = rf->cq_limits.waiting;
	rs_fill_offsets(&p->sq_off, offsetof(struct rs_rings, sq),
			offsetof(struct rs_rings, sq_ring_mask),
			offsetof(struct rs_rings, sq_ring_entries),
			offsetof(struct rs_rings, sq_flags), sqes_off);
	rs_fill_offsets(&p->cq_off, offsetof(struct rs_rings, cq),
			offsetof(struct rs_rings, cq_ring_mask),
			offsetof(struct rs_rings, cq_ring_entries),
			offsetof(struct rs_rings, cq_flags), cqes_off);

	/* Pairs with the smp_load_acquire() of every user of the rings. */
	smp_store_release(&rf->ready, true);
	mutex_unlock(&rf->setup_lock);
	return 0;

out_free:
	rs_rings_free(rf);
out_unlock:
	mutex_unlock(&rf->setup_lock);
	return ret;
}

/*
 * mmap(2) of a region: RDMASHARE_OFF_RINGS or RDMASHARE_OFF_DATA, possibly
 * at a page offset inside it.  Shared mappings only, never executable.
 */
int rs_rings_mmap(struct rs_file *rf, struct vm_area_struct *vma)
{
	unsigned long len = vma->vm_end - vma->vm_start;
	unsigned long pgoff = vma->vm_pgoff, pages;
	struct rs_area *region;

	/* Pairs with rs_rings_setup(): the regions are complete once ready. */
	if (!smp_load_acquire(&rf->ready))
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;

	/* Not the file area: AC files' send buffers are the kernel's. */
	if (pgoff >= RS_OFF_DATA_PGOFF) {
		region = &rf->data_area;
		pgoff -= RS_OFF_DATA_PGOFF;
		pages = rf->map_size >> PAGE_SHIFT;
	} else {
		region = &rf->rings_area;
		pages = region->nr_pages;
	}
	if (pgoff >= pages || len > (pages - pgoff) << PAGE_SHIFT)
		return -EINVAL;

	rs_vm_flags_clear(vma, VM_MAYEXEC);
	return rs_area_mmap(region, vma, pgoff);
}

/*
 * Room for one more completion, with the head and tail given and @reserved
 * entries promised.  A CQ head that user space moved where it cannot be
 * reads as a full CQ.
 *
 * @rx_slots entries stay free for RECV completions, which never reserve: a
 * slot's CQE is posted only for a chunk in that slot, and a slot is given
 * back only after its CQE was reaped (recv.c), so there are never more
 * unreaped RECV completions than slots.  (Not one per free slot: a slot
 * given back after its CQE was reaped may bring a RECV again, while the
 * entry that reaping freed may be reserved already.)
 */
static bool rs_cq_room_in(struct rs_file *rf, u32 head, u32 tail, u32 reserved)
{
	int free = rs_ring_free(head, tail, rf->cq_entries);

	return free > 0 && (u32)free > reserved + rf->rx_slots;
}

static bool rs_cq_room(struct rs_file *rf)
{
	lockdep_assert_held(&rf->cq_lock);
	/* Pairs with the application's store-release of the head it reaped. */
	return rs_cq_room_in(rf, smp_load_acquire(&rf->rings->cq.head), rf->cq_tail,
			     rf->cq_reserved);
}

/*
 * Reserve a completion slot for @kind; false if there is none.
 * Reservations that wait on the peer stay within @cq_limits (ring.h), so
 * that some room is always left for completions that do not.
 */
bool rs_cq_reserve(struct rs_file *rf, enum rs_cq_kind kind)
{
	unsigned long flags;
	bool ok = false;

	spin_lock_irqsave(&rf->cq_lock, flags);
	if (!rs_cq_room(rf))
		goto out;
	if (kind == RS_CQ_WAIT) {
		if (rf->cq_waiting >= rf->cq_limits.waiting)
			goto out;
		rf->cq_waiting++;
	}
	rf->cq_reserved++;
	ok = true;
out:
	spin_unlock_irqrestore(&rf->cq_lock, flags);
	return ok;
}

/* Called with cq_lock held: a reservation of @kind is used or returned. */
static void rs_cq_drop(struct rs_file *rf, enum rs_cq_kind kind)
{
	u32 *count = kind == RS_CQ_WAIT ? &rf->cq_waiting : NULL;

	lockdep_assert_held(&rf->cq_lock);
	if (!WARN_ON_ONCE(!rf->cq_reserved))
		rf->cq_reserved--;
	if (count && !WARN_ON_ONCE(!*count))
		(*count)--;
}

/* Give back a reservation that will not be used. */
void rs_cq_unreserve(struct rs_file *rf, enum rs_cq_kind kind)
{
	unsigned long flags;

	spin_lock_irqsave(&rf->cq_lock, flags);
	rs_cq_drop(rf, kind);
	spin_unlock_irqrestore(&rf->cq_lock, flags);
}

/* Called with cq_lock held; returns the index of the new entry. */
static u32 rs_cq_write(struct rs_file *rf, const struct rdmashare_cqe *cqe)
{
	u32 slot, idx = rf->cq_tail;

	slot = array_index_nospec(rs_ring_slot(idx, rf->cq_entries), rf->cq_entries);
	memcpy(&rf->cqes[slot], cqe, sizeof(*cqe));
	rf->cq_tail++;
	/* The entry is visible before the tail that covers it. */
	smp_store_release(&rf->rings->cq.tail, rf->cq_tail);
	return idx;
}

/* Post a completion into a slot reserved by rs_cq_reserve(rf, @kind). */
u32 rs_cq_post(struct rs_file *rf, const struct rdmashare_cqe *cqe, enum rs_cq_kind kind)
{
	unsigned long flags;
	u32 idx;

	spin_lock_irqsave(&rf->cq_lock, flags);
	rs_cq_drop(rf, kind);
	idx = rs_cq_write(rf, cqe);
	spin_unlock_irqrestore(&rf->cq_lock, flags);
	wake_up_interruptible_poll(&rf->cq_wait, EPOLLIN | EPOLLRDNORM);
	return idx;
}

/* Post a RECV completion: room is guaranteed by the slot accounting. */
u32 rs_cq_post_rx(struct rs_file *rf, const struct rdmashare_cqe *cqe)
{
	unsigned long flags;
	u32 idx;

	spin_lock_irqsave(&rf->cq_lock, flags);
	idx = rs_cq_write(rf, cqe);
	spin_unlock_irqrestore(&rf->cq_lock, flags);
	wake_up_interruptible_poll(&rf->cq_wait, EPOLLIN | EPOLLRDNORM);
	return idx;
}

/*
 * Post @o's completion if the CQ has room for it and nothing waits before
 * it; otherwise it waits on the overflow list (false: the caller's
 * reference to what holds @o goes with it) and the application is told to
 * call ENTER.  Once the file is released, it is dropped.
 */
bool rs_cq_post_over(struct rs_file *rf, struct rs_cq_over *o)
{
	unsigned long flags;
	bool posted = false;

	spin_lock_irqsave(&rf->cq_lock, flags);
	if (rf->cq_dead) {
		o->queued = false;
		spin_unlock_irqrestore(&rf->cq_lock, flags);
		return true;
	}
	if (list_empty(&rf->cq_overflow) && rs_cq_room(rf)) {
		rs_cq_write(rf, &o->cqe);
		posted = true;
	} else {
		o->queued = true;
		list_add_tail(&o->node, &rf->cq_overflow);
		atomic_or(RDMASHARE_SQ_CQ_OVERFLOW, &rf->rings->sq_flags);
	}
	spin_unlock_irqrestore(&rf->cq_lock, flags);
	if (posted)
		wake_up_interruptible_poll(&rf->cq_wait, EPOLLIN | EPOLLRDNORM);
	return posted;
}

/*
 * Post what waits on the overflow list while the CQ has room; what was
 * posted moves to @done, for the caller to drop its references.
 */
void rs_cq_flush_over(struct rs_file *rf, struct list_head *done)
{
	struct rs_cq_over *o;
	unsigned long flags;

	spin_lock_irqsave(&rf->cq_lock, flags);
	while ((o = list_first_entry_or_null(&rf->cq_overflow, struct rs_cq_over, node)) &&
	       rs_cq_room(rf)) {
		rs_cq_write(rf, &o->cqe);
		o->queued = false;
		list_move_tail(&o->node, done);
	}
	if (list_empty(&rf->cq_overflow))
		atomic_andnot(RDMASHARE_SQ_CQ_OVERFLOW, &rf->rings->sq_flags);
	spin_unlock_irqrestore(&rf->cq_lock, flags);
	if (!list_empty(done))
		wake_up_interruptible_poll(&rf->cq_wait, EPOLLIN | EPOLLRDNORM);
}

/*
 * Without the lock, for a waiter's condition: something waits for room, and
 * there may be some now (rs_cq_flush_over() decides).
 */
bool rs_cq_over_fits(struct rs_file *rf)
{
	return !list_empty_careful(&rf->cq_overflow) &&
	       rs_cq_room_in(rf, READ_ONCE(rf->rings->cq.head), READ_ONCE(rf->cq_tail),
			     READ_ONCE(rf->cq_reserved));
}

/* Take @o off the overflow list: true if it waited there. */
bool rs_cq_cancel_over(struct rs_file *rf, struct rs_cq_over *o)
{
	unsigned long flags;
	bool queued;

	spin_lock_irqsave(&rf->cq_lock, flags);
	queued = o->queued;
	if (queued) {
		o->queued = false;
		list_del_init(&o->node);
		if (list_empty(&rf->cq_overflow))
			atomic_andnot(RDMASHARE_SQ_CQ_OVERFLOW, &rf->rings->sq_flags);
	}
	spin_unlock_irqrestore(&rf->cq_lock, flags);
	return queued;
}

/* The file is released: nothing is posted any more; what waits moves to @left. */
void rs_cq_kill_over(struct rs_file *rf, struct list_head *left)
{
	struct rs_cq_over *o;
	unsigned long flags;

	spin_lock_irqsave(&rf->cq_lock, flags);
	rf->cq_dead = true;
	list_for_each_entry(o, &rf->cq_overflow, node)
		o->queued = false;
	list_splice_init(&rf->cq_overflow, left);
	spin_unlock_irqrestore(&rf->cq_lock, flags);
}

/* The head the application published: everything before it was reaped. */
u32 rs_cq_head(struct rs_file *rf)
{
	/* Pairs with the application's store-release. */
	return smp_load_acquire(&rf->rings->cq.head);
}

/* Completions waiting to be reaped (a corrupted head reads as "some"). */
u32 rs_cq_ready(struct rs_file *rf)
{
	return READ_ONCE(rf->cq_tail) - READ_ONCE(rf->rings->cq.head);
}

/* Room in the SQ for the application (a corrupted tail reads as none). */
bool rs_sq_has_space(struct rs_file *rf)
{
	return rs_ring_free(READ_ONCE(rf->sq_head), READ_ONCE(rf->rings->sq.tail),
			    rf->sq_entries) > 0;
}

/*
 * An operation that will wait on the peer, for an SQE that reserved its
 * completion (RS_CQ_WAIT): there are as many as such reservations, and one
 * goes back to the pool before its completion returns the reservation, so
 * the pool is never empty here.  Called under submit_lock, the pool's only
 * consumer (llist_del_first()'s rule).
 */
struct rs_send *rs_op_get(struct rs_file *rf)
{
	struct llist_node *n;
	struct rs_send *op;

	lockdep_assert_held(&rf->submit_lock);
	n = llist_del_first(&rf->op_free);
	if (WARN_ON_ONCE(!n))
		return NULL;
	op = llist_entry(n, struct rs_send, free_node);
	memset(op, 0, sizeof(*op));
	return op;
}

void rs_op_put(struct rs_file *rf, struct rs_send *op)
{
	llist_add(&op->free_node, &rf->op_free);
}
