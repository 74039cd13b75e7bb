/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: AC files, a byte stream over one AC (acfile.c).
 */
#ifndef _RDMASHARE_ACFILE_H
#define _RDMASHARE_ACFILE_H

#include <linux/mutex.h>
#include <linux/sizes.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "rdmashare.h"

struct rs_ac;
struct rs_sink;
struct rdmashare_file_params;

/* Writes of an AC file queued and not completed, at most. */
#define RS_ACFILE_OPS		64
/* The send buffer of an AC file whose maker names no size. */
#define RS_ACFILE_SNDBUF	SZ_64K

/**
 * struct rs_acfile - what an AC file needs of its AC (rs_ac.af)
 * @ac: the AC (no reference: it holds this)
 * @rx_head: the oldest slot that holds a chunk not read yet
 * @rx_tail: the newest
 * @rx_n: slots from @rx_head to @rx_tail (rs_rx_slot.next links them)
 * @rx_cursor: bytes of @rx_head's chunk read already
 * @read_lock: one reader at a time
 * @write_lock: one writer at a time
 * @lock: protects @tx_head, @tx_tail, @sndbuf_used, @op_head, @op_tail, @op_done,
 *	@tx_error, @tx_fail_at, @released, @old_page, @old_pages and @old_until, and
 *	@page, @sndbuf and @sndbuf_len against rs_acfile_sndbuf_gone() (the
 *	write lock too, for a change)
 * @tx_head: bytes written, ever (modulo 2^32)
 * @tx_tail: bytes of them whose SEND completed
 * @sndbuf_used: bytes of the send buffer that writes hold until they
 *	complete, in order (a write from its own pages holds none: zcopy.c)
 * @tx_at: where the next write goes in the send buffer (@write_lock)
 * @op_head: writes queued, ever; each has @ops[its number % RS_ACFILE_OPS]
 * @op_tail: writes completed, in order
 * @op_done: a write completed, ahead of an older one
 * @tx_error: the first write that failed, its error
 * @tx_fail_at: @tx_tail then: the bytes before it went
 * @bound: the AC file exists (its AC stays when its maker's file is
 *	released: rs_file_release())
 * @linger: after the AC file's release, ends the AC if its CLOSE has not
 *	gone out within rs_linger_ms (a reference held while pending)
 * @page: the send buffer's first page in the file area
 * @sndbuf: the send buffer's offset in the data area
 * @sndbuf_len: its length, 0 until the AC file exists and once the
 *	buffer went back (rs_acfile_sndbuf_gone())
 * @released: the AC file's last descriptor is gone
 * @sndbuf_set: SO_SNDBUF named its size: it no longer grows (@write_lock)
 * @cork_on: TCP_CORK: every write is held back as with MSG_MORE
 * @rcvtimeo_us: SO_RCVTIMEO: how long a blocking read waits, 0: for as
 *	long as it takes
 * @sndtimeo_us: SO_SNDTIMEO: the same for a write waiting for room
 * @old_page: the send buffer before the last change of size, while
 *	writes queued before it may still send from it
 * @old_pages: its pages, 0 once it went back
 * @old_until: @op_head at the change: it goes back when @op_tail gets
 *	there
 * @close_op: the CLOSE that the AC file's release queues
 * @shut_op: the SHUTDOWN of RDMASHARE_IOC_SHUTDOWN
 * @shut: @shut_op was queued (@write_lock)
 * @rx_shut: SHUT_RD: reads end, what comes is dropped
 * @corked: the newest write, @ops[(@op_head - 1) % RS_ACFILE_OPS], is not
 *	queued yet: MSG_MORE held it back for the next (@write_lock)
 * @cork: queues it, RS_ACFILE_CORK_MS after
 * @ops: the writes
 * @so_error: the error the AC closed with, until RDMASHARE_IOC_FILE_INFO
 *	takes it (a socket's SO_ERROR)
 * @conn_lock: orders the steps of a non-blocking CONNECT, its timer and
 *	the release (connect.c)
 * @conn_addr: where it connects
 * @conn_qp: the QP it waits for, with a reference, counted as a waiter
 * @conn_wait: on @conn_qp's wait queue while it waits
 * @conn_work: the next step, once @conn_qp is up or down
 * @conn_timer: ends it at its deadline
 * @conn_retried: it tried a second QP already
 * @sink: version 6: the reader's buffer the peer may write into, from its
 *	offer until no WRITE can come (a reference), under the file's rx_lock
 *	(sink.c)
 * @sink_seq: the number of the newest (@read_lock)
 *
 * The receive queue is under the file's rx_lock; the rest of the AC's
 * state (open, closed, the peer's end) is the AC's own.
 */
struct rs_acfile {
	struct rs_ac *ac;
	u32 rx_head;
	u32 rx_tail;
	u32 rx_n;
	u32 rx_cursor;
	struct mutex read_lock;		/* one reader */
	struct mutex write_lock;	/* one writer */
	spinlock_t lock;		/* the send buffer's ring */
	u32 tx_head;
	u32 tx_tail;
	u32 sndbuf_used;
	u32 tx_at;
	u32 op_head;
	u32 op_tail;
	int tx_error;
	u32 tx_fail_at;
	bool released;
	bool sndbuf_set;
	bool cork_on;
	u64 rcvtimeo_us;
	u64 sndtimeo_us;
	u32 old_page;
	u32 old_pages;
	u32 old_until;
	bool bound;
	struct delayed_work linger;
	u32 page;
	u64 sndbuf;
	u32 sndbuf_len;
	bool op_done[RS_ACFILE_OPS];
	struct rs_send close_op;
	struct rs_send shut_op;
	bool shut;
	bool rx_shut;
	bool corked;
	struct delayed_work cork;
	struct rs_send ops[RS_ACFILE_OPS];
	int so_error;
	struct mutex conn_lock;		/* non-blocking CONNECT */
	struct sockaddr_storage conn_addr;
	struct rs_qp *conn_qp;
	struct wait_queue_entry conn_wait;
	struct work_struct conn_work;
	struct delayed_work conn_timer;
	bool conn_retried;
	struct rs_sink *sink;
	u32 sink_seq;
};

/*
 * What an AC file is made with before its AC opens: its send buffer's
 * pages in the file area and its descriptor.
 */
struct rs_acfile_res {
	u32 page;
	u32 pages;
	int fd;
	u32 flags;
	struct rs_new_file *nf;
};

int rs_acfile_reserve(struct rs_file *rf, struct rdmashare_file_params *p,
		      struct rs_new_file *nf, struct rs_acfile_res *res);
void rs_acfile_unreserve(struct rs_file *rf, struct rs_acfile_res *res);
int rs_acfile_cache_init(void);
void rs_acfile_cache_exit(void);
int rs_acfile_attach(struct rs_ac *ac);
int rs_acfile_bind(struct rs_ac *ac, struct rs_acfile_res *res,
		   struct rdmashare_file_params *p);
void rs_acfile_free(struct rs_ac *ac);
void rs_acfile_deliver(struct rs_ac *ac, u32 idx, u32 len);
void rs_acfile_wake(struct rs_ac *ac, __poll_t key);
void rs_acfile_drain(struct rs_ac *ac);
void rs_acfile_op_done(struct rs_ac *ac, struct rs_send *op, int res);

/* connect.c: non-blocking CONNECT of AC files */
struct rdmashare_connect;
struct rs_connect_to;
void rs_acfile_connect_init(struct rs_acfile *af);
int rs_ac_connect_nb(struct rs_file *rf, struct rdmashare_connect *c,
		     const struct rs_connect_to *to, unsigned long timeout,
		     struct rs_acfile_res *res);
void rs_acfile_connect_stop(struct rs_ac *ac);

/*
 * Wait on @ac's queue for @cond, at most *@timeo jiffies (SO_RCVTIMEO,
 * SO_SNDTIMEO), which keeps what is left: 0 once @cond holds, -EAGAIN
 * when the time ran out (as a socket's), -ERESTARTSYS for a signal.  The
 * waiter answers the completion events of @ac's QP itself while it
 * sleeps (rs_wait_sleep_polling(), transport.h).
 */
#define rs_acfile_wait(ac, cond, timeo)					\
({									\
	struct rs_ac *__ac = (ac);					\
	long *__timeo = (timeo);					\
	long __left = rs_wait_sleep_polling(READ_ONCE(__ac->qp), __ac->wait, \
					    cond, *__timeo);		\
									\
	if (__left > 0)							\
		*__timeo = __left;					\
	__left > 0 ? 0 : __left ? (int)__left : -EAGAIN;		\
})

long rs_acfile_timeo(u64 us);

#endif /* _RDMASHARE_ACFILE_H */
