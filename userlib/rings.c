// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librdmashare: the mmap'd submission and completion rings.
 *
 * Layout comes from the kernel (struct rdmashare_setup's offsets); the
 * library owns the SQ tail and the CQ head and publishes them with
 * store-release, and reads the kernel's indices with load-acquire.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rdmashare.h"
#include "internal.h"

static void *rs_at(void *base, unsigned int off)
{
	return (char *)base + off;
}

void rs_rings_unmap(struct rdmashare *rs)
{
	if (rs->data)
		munmap(rs->data, rs->data_size);
	if (rs->rings)
		munmap(rs->rings, rs->rings_size);
	rs->data = NULL;
	rs->rings = NULL;
}

int rdmashare_setup(struct rdmashare *rs, struct rdmashare_setup *p)
{
	struct rdmashare_setup local;
	void *rings, *data;
	int ret;

	if (rs->rings)
		return -EBUSY;
	if (!p) {
		memset(&local, 0, sizeof(local));
		p = &local;
	}
	p->size = sizeof(*p);
	ret = rs_ioctl(rs, RDMASHARE_IOC_SETUP, p);
	if (ret)
		return ret;

	rings = mmap(NULL, p->rings_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		     rs->fd, RDMASHARE_OFF_RINGS);
	if (rings == MAP_FAILED)
		return -errno;
	data = mmap(NULL, p->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    rs->fd, RDMASHARE_OFF_DATA);
	if (data == MAP_FAILED) {
		ret = -errno;
		munmap(rings, p->rings_size);
		return ret;
	}

	rs->rings = rings;
	rs->rings_size = p->rings_size;
	rs->data = data;
	rs->data_size = p->map_size;
	rs->tx_size = p->data_size;
	rs->rx_offset = p->rx_offset;
	rs->max_waiting = p->max_waiting;

	rs->sq.khead = rs_at(rings, p->sq_off.head);
	rs->sq.ktail = rs_at(rings, p->sq_off.tail);
	rs->sq.kflags = rs_at(rings, p->sq_off.flags);
	rs->sq.wakeup = !!(p->flags & RDMASHARE_SETUP_SQ_WAKEUP);
	rs->sq.mask = *(unsigned int *)rs_at(rings, p->sq_off.ring_mask);
	rs->sq.entries = *(unsigned int *)rs_at(rings, p->sq_off.ring_entries);
	rs->sq.sqes = rs_at(rings, p->sq_off.entries);
	rs->sq.tail = *rs->sq.ktail;

	rs->cq.khead = rs_at(rings, p->cq_off.head);
	rs->cq.ktail = rs_at(rings, p->cq_off.tail);
	rs->cq.mask = *(unsigned int *)rs_at(rings, p->cq_off.ring_mask);
	rs->cq.entries = *(unsigned int *)rs_at(rings, p->cq_off.ring_entries);
	rs->cq.cqes = rs_at(rings, p->cq_off.entries);
	return 0;
}

void *rdmashare_data(struct rdmashare *rs, size_t *size)
{
	if (size)
		*size = rs->data_size;
	return rs->data;
}

struct rdmashare_sqe *rdmashare_get_sqe(struct rdmashare *rs)
{
	struct rs_sq *sq = &rs->sq;
	unsigned int head = rs_smp_load_acquire(sq->khead);
	struct rdmashare_sqe *sqe;

	if (sq->tail - head >= sq->entries)
		return NULL;
	sqe = &sq->sqes[sq->tail & sq->mask];
	sq->tail++;
	memset(sqe, 0, sizeof(*sqe));
	return sqe;
}

static int rs_enter(struct rdmashare *rs, unsigned int to_submit,
		    unsigned int wait_nr, unsigned int timeout_ms)
{
	struct rdmashare_enter e = {
		.size = sizeof(e),
		.to_submit = to_submit,
		.min_complete = wait_nr,
		.timeout_ms = wait_nr ? timeout_ms : 0,
		.flags = wait_nr ? RDMASHARE_ENTER_GETEVENTS : 0,
	};
	int ret;

	ret = rs_ioctl(rs, RDMASHARE_IOC_ENTER, &e);
	return ret < 0 ? ret : (int)e.submitted;
}

/*
 * RDMASHARE_SETUP_SQ_WAKEUP: does the kernel take what was just published
 * by itself?  The tail is published before the flag is read (a full
 * barrier: the kernel sets the flag, then looks at the tail).
 */
int rs_kernel_takes(struct rdmashare *rs)
{
	if (!rs->sq.wakeup)
		return 0;
	atomic_thread_fence(memory_order_seq_cst);
	return !(rs_smp_load_acquire(rs->sq.kflags) & RDMASHARE_SQ_NEED_WAKEUP);
}

int rdmashare_submit_and_wait(struct rdmashare *rs, unsigned int wait_nr,
			      unsigned int timeout_ms)
{
	unsigned int pending;

	/* The SQEs are written before the tail that covers them. */
	rs_smp_store_release(rs->sq.ktail, rs->sq.tail);
	pending = rs->sq.tail - rs_smp_load_acquire(rs->sq.khead);
	if (!pending && !wait_nr)
		return 0;
	/* In flight: a completion takes them, no system call. */
	if (!wait_nr && rs_kernel_takes(rs))
		return pending;
	return rs_enter(rs, pending, wait_nr, timeout_ms);
}

int rdmashare_submit(struct rdmashare *rs)
{
	return rdmashare_submit_and_wait(rs, 0, 0);
}

unsigned int rdmashare_cq_ready(struct rdmashare *rs)
{
	return rs_smp_load_acquire(rs->cq.ktail) - *rs->cq.khead;
}

int rdmashare_peek_cqe(struct rdmashare *rs, struct rdmashare_cqe **cqe)
{
	unsigned int head = *rs->cq.khead;

	if (rs_smp_load_acquire(rs->cq.ktail) == head)
		return -EAGAIN;
	*cqe = &rs->cq.cqes[head & rs->cq.mask];
	return 0;
}

int rdmashare_wait_cqe(struct rdmashare *rs, struct rdmashare_cqe **cqe,
		       unsigned int timeout_ms)
{
	int ret;

	for (;;) {
		if (!rdmashare_peek_cqe(rs, cqe))
			return 0;
		ret = rs_enter(rs, 0, 1, timeout_ms);
		if (ret < 0)
			return ret;
	}
}

void rdmashare_cqe_seen(struct rdmashare *rs, struct rdmashare_cqe *cqe)
{
	(void)cqe;
	/* Done with the entry before the kernel may reuse its slot. */
	rs_smp_store_release(rs->cq.khead, *rs->cq.khead + 1);
}
