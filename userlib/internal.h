/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/* librdmashare: private declarations. */
#ifndef LIBRDMASHARE_INTERNAL_H
#define LIBRDMASHARE_INTERNAL_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/socket.h>

#include "rdmashare.h"

/* Barriers named like the kernel's, as liburing does. */
#define rs_smp_load_acquire(p) \
	atomic_load_explicit((_Atomic __typeof__(*(p)) *)(p), memory_order_acquire)
#define rs_smp_store_release(p, v) \
	atomic_store_explicit((_Atomic __typeof__(*(p)) *)(p), (v), memory_order_release)

struct rs_sq {
	unsigned int *khead;	/* kernel's, read with acquire */
	unsigned int *ktail;	/* ours, published with release */
	unsigned int *kflags;	/* kernel's: RDMASHARE_SQ_* */
	int wakeup;		/* set up with RDMASHARE_SETUP_SQ_WAKEUP */
	unsigned int mask;
	unsigned int entries;
	unsigned int tail;	/* next SQE to hand out */
	struct rdmashare_sqe *sqes;
};

struct rs_cq {
	unsigned int *khead;	/* ours, published with release */
	unsigned int *ktail;	/* kernel's, read with acquire */
	unsigned int mask;
	unsigned int entries;
	struct rdmashare_cqe *cqes;
};

/*
 * A received chunk waiting for rdmashare_recv(): in its slot, or copied out
 * (@copy) and its slot given back.  The start of a message that a call
 * began to read and gave up on is one chunk, copied (@drop: too long for
 * that call, its bytes are not kept and the message is dropped).  A chunk
 * read whose slot could not be given back yet waits in rs->owed (@ac).
 */
struct rs_chunk {
	struct rs_chunk *next;
	__u64 addr;
	__u32 len;
	__u32 msg_len;
	int more;
	int drop;
	__u32 ac;
	char *copy;
};

/* What the library knows of one AC. */
struct rs_acst {
	struct rs_chunk *head, *tail;	/* received, in order */
	int open;			/* handed to the application (rs_new_ac()) */
	int closed;			/* a CLOSED completion came */
	int close_res;
	int eof;			/* the peer shut down: receives no more */
	int shut;			/* SHUTDOWN submitted: sends no more */
	int closing;			/* CLOSE submitted, not completed */
	int send_err;			/* the first failed SEND's error */
	unsigned int ready_next;	/* next in the ready FIFO, or 0 */
	int ready;			/* in the ready FIFO */
};

/* A free extent of the application's part of the data area. */
struct rs_extent {
	struct rs_extent *next;
	size_t off;
	size_t len;
};

struct rdmashare {
	int fd;
	void *rings;
	size_t rings_size;
	void *data;
	size_t data_size;
	struct rs_sq sq;
	struct rs_cq cq;
	size_t tx_size;			/* the application's part */
	__u64 rx_offset;
	struct rs_acst *acs;		/* by AC id */
	unsigned int nr_acs;
	struct rs_extent *free_tx;	/* sorted by offset; NULL when all is in use */
	int tx_ready;			/* free_tx was set up */
	unsigned long inflight;		/* library SENDs not yet completed */
	unsigned int waiting;		/* library SENDs, CLOSEs, SHUTDOWNs not completed */
	unsigned int max_waiting;	/* how many the kernel takes; 0: no limit */
	unsigned int held;		/* slots holding chunks not read yet */
	struct rs_chunk *owed;		/* read, their RELEASE not queued yet */
	int reading;			/* the AC rdmashare_recv() reads, or 0 */
	unsigned int ready_head;	/* ACs with something to read: a FIFO */
	unsigned int ready_tail;	/* of ids (0: none) for recv_any */
};

/* ioctl(2); returns a negative errno on failure. */
int rs_ioctl(struct rdmashare *rs, unsigned long cmd, void *arg);
void rs_rings_unmap(struct rdmashare *rs);
int rs_kernel_takes(struct rdmashare *rs);

/*
 * RDMASHARE_IOC_SHUTDOWN's flags for shutdown(2)'s @how, or -EINVAL; the
 * preload library's too.  SHUT_WR is 0, which a module without
 * RDMASHARE_SHUTDOWN_RD takes as well.
 */
static inline int rs_shut_flags(int how)
{
	switch (how) {
	case SHUT_RD:
		return RDMASHARE_SHUTDOWN_RD;
	case SHUT_WR:
		return 0;
	case SHUT_RDWR:
		return RDMASHARE_SHUTDOWN_RD | RDMASHARE_SHUTDOWN_WR;
	}
	return -EINVAL;
}

#endif
