// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: AC files.
 *
 * An AC file is one AC as a file of its own, a byte stream like a connected
 * stream socket's: read(2), write(2), poll(2) and close(2), for programs
 * (and a preload library) that want a descriptor per connection rather
 * than a file's rings.  The AC is still an AC of the /dev/rdmashare file
 * that made it (RDMASHARE_CONNECT_FILE, or ACCEPT on a listener with
 * RDMASHARE_LISTEN_FILES): on that file's shared QP, in its scheduler
 * group, with its receive slots.  Only its SQEs and completions are gone:
 *
 * - Receiving: recv.c hands each chunk, in its slot, to the AC file's queue
 *   (rs_acfile_deliver()) instead of posting a RECV completion; read(2)
 *   copies from the oldest slot on and gives each slot back as it empties,
 *   as a RELEASE does.  Chunks that come before the file exists (while the
 *   AC waits in a listener's backlog) wait in the queue.
 * - Sending: write(2) copies into the AC file's send buffer, a ring in the
 *   maker's file area (the data area past the receive slots, never mapped
 *   to user space), and queues each contiguous piece as a SEND
 *   (rs_ac_queue()) that the sender takes as any other: copied when small,
 *   sent in place when large.  Their completions (rs_acfile_op_done())
 *   free the ring from its tail.
 * - Closing: the file's release gives back what was not read, drops what
 *   still comes, and queues a CLOSE after the writes; the AC goes once that
 *   went out, and the send buffer when the AC is freed, when nothing can
 *   send from it any more.
 *
 * The AC holds the maker's rs_file (its memory: the data area, the slots),
 * not its struct file: when the maker's last descriptor goes (the process
 * exits), its listeners and other ACs close at once, while an AC file, open
 * or closed with data still to send, goes on (rs_file_release()).  A closed
 * one's data waits for the peer's credits rs_linger_ms at most; then it is
 * dropped and the AC closed (rs_acfile_linger()), as TCP bounds an
 * orphaned socket.
 */
#include <linux/anon_inodes.h>
#include <linux/bitmap.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/sockios.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <asm/ioctls.h>

#include "acfile.h"
#include "compat.h"
#include "ioctl.h"
#include "sink.h"
#include "transport.h"
#include "zcopy.h"

/*
 * rs_linger_ms after the AC file's release, its CLOSE still waits behind
 * data the peer has not granted room for: the data is dropped and the AC
 * closed, the peer told, so that nothing of a process that is gone waits
 * on a peer that does not read.  (The protocol's CLOSE has no reason: the
 * peer's end sees the end of the stream.)
 */
static void rs_acfile_linger(struct work_struct *work)
{
	struct rs_acfile *af = container_of(to_delayed_work(work), struct rs_acfile, linger);
	struct rs_ac *ac = af->ac;

	if (READ_ONCE(ac->state) != RS_AC_CLOSED)
		rs_ac_close_tell(ac, -ECONNRESET, true);
	rs_ac_put(ac);
}

static void rs_acfile_cork_timeout(struct work_struct *work);

static void rs_acfile_free_pages(struct rs_file *rf, u32 page, u32 pages)
{
	unsigned long flags;

	spin_lock_irqsave(&rf->files_lock, flags);
	bitmap_clear(rf->files_map, page, pages);
	spin_unlock_irqrestore(&rf->files_lock, flags);
}

/*
 * The send buffer and the descriptor of an AC file that @rf is to make,
 * before its AC exists: a failure here costs no connection.
 */
int rs_acfile_reserve(struct rs_file *rf, struct rdmashare_file_params *p,
		      struct rs_new_file *nf, struct rs_acfile_res *res)
{
	unsigned long flags, start;
	u64 len;
	int fd;

	/* A caller that cannot see the descriptor's field gets none. */
	if (!nf->whole || (p->flags & ~(RDMASHARE_FILE_NONBLOCK | RDMASHARE_FILE_CLOEXEC)) ||
	    p->fd || p->resv)
		return -EINVAL;
	len = PAGE_ALIGN((u64)(p->sndbuf ?: RS_ACFILE_SNDBUF));
	if (!rf->files_pages || len >> PAGE_SHIFT > rf->files_pages)
		return -EINVAL;
	res->pages = len >> PAGE_SHIFT;

	spin_lock_irqsave(&rf->files_lock, flags);
	start = bitmap_find_next_zero_area(rf->files_map, rf->files_pages, 0, res->pages, 0);
	if (start < rf->files_pages)
		bitmap_set(rf->files_map, start, res->pages);
	spin_unlock_irqrestore(&rf->files_lock, flags);
	if (start >= rf->files_pages)
		return -ENOSPC;
	res->page = start;

	fd = get_unused_fd_flags(p->flags & RDMASHARE_FILE_CLOEXEC ? O_CLOEXEC : 0);
	if (fd < 0) {
		rs_acfile_free_pages(rf, res->page, res->pages);
		return fd;
	}
	res->fd = fd;
	res->flags = p->flags;
	res->nf = nf;
	return 0;
}

/* What rs_acfile_reserve() took, for an AC file that was not made. */
void rs_acfile_unreserve(struct rs_file *rf, struct rs_acfile_res *res)
{
	put_unused_fd(res->fd);
	rs_acfile_free_pages(rf, res->page, res->pages);
}

/*
 * AC files' structs: a cache of their own, as sockets have, since one is
 * 4.4 KiB and would take a kmalloc-8k object; charged to their owners.
 */
static struct kmem_cache *rs_acfile_cache;

int __init rs_acfile_cache_init(void)
{
	rs_acfile_cache = kmem_cache_create("rdmashare_acfile", sizeof(struct rs_acfile), 0,
					    SLAB_ACCOUNT, NULL);
	return rs_acfile_cache ? 0 : -ENOMEM;
}

void rs_acfile_cache_exit(void)
{
	kmem_cache_destroy(rs_acfile_cache);
}

/* @ac, not yet in any table, will be an AC file's: its chunks queue up. */
int rs_acfile_attach(struct rs_ac *ac)
{
	struct rs_acfile *af;

	af = kmem_cache_zalloc(rs_acfile_cache, GFP_KERNEL);
	if (!af)
		return -ENOMEM;
	mutex_init(&af->read_lock);
	mutex_init(&af->write_lock);
	spin_lock_init(&af->lock);
	INIT_DELAYED_WORK(&af->linger, rs_acfile_linger);
	INIT_DELAYED_WORK(&af->cork, rs_acfile_cork_timeout);
	rs_acfile_connect_init(af);
	af->ac = ac;
	ac->af = af;
	return 0;
}

/*
 * Called from rs_ac_free(): nothing sends from the send buffer any more,
 * if rs_acfile_sndbuf_gone() did not give it back already.
 */
void rs_acfile_free(struct rs_ac *ac)
{
	struct rs_acfile *af = ac->af;

	rs_sink_ac_free(ac);
	if (af->sndbuf_len)
		rs_acfile_free_pages(ac->rf, af->page, af->sndbuf_len >> PAGE_SHIFT);
	if (af->old_pages)
		rs_acfile_free_pages(ac->rf, af->old_page, af->old_pages);
	mutex_destroy(&af->read_lock);
	mutex_destroy(&af->write_lock);
	mutex_destroy(&af->conn_lock);
	kmem_cache_free(rs_acfile_cache, af);
}

/* Called with the file's rx_lock held: the chunk in slot @idx is @ac's next. */
void rs_acfile_deliver(struct rs_ac *ac, u32 idx, u32 len)
{
	struct rs_rx_slot *slots = ac->rf->slots;
	struct rs_acfile *af = ac->af;

	lockdep_assert_held(&ac->rf->rx_lock);
	slots[idx].len = len;
	slots[idx].file = true;
	if (af->rx_n)
		slots[af->rx_tail].next = idx;
	else
		af->rx_head = idx;
	af->rx_tail = idx;
	WRITE_ONCE(af->rx_n, af->rx_n + 1);
}

/*
 * Wake the AC file's waiters for what changed: @key is the poll events
 * that may have come (0: any), so that an edge-triggered epoll of the
 * others is not woken (readers and writers that sleep take every wake).
 */
void rs_acfile_wake(struct rs_ac *ac, __poll_t key)
{
	/* Pairs with the barrier of adding a waiter: the change is seen. */
	if (!wq_has_sleeper(&ac->wait))
		return;
	if (key)
		wake_up_poll(&ac->wait, key);
	else
		wake_up_all(&ac->wait);
}

/*
 * Called with the file's rx_lock held: the oldest chunk is read; its slot
 * goes back (the caller passes the id returned to rs_rx_slot_back()).
 */
static u32 rs_acfile_pop(struct rs_ac *ac)
{
	struct rs_file *rf = ac->rf;
	struct rs_acfile *af = ac->af;
	u32 idx = af->rx_head;

	af->rx_head = rf->slots[idx].next;
	WRITE_ONCE(af->rx_n, af->rx_n - 1);
	af->rx_cursor = 0;
	return rs_rx_slot_free_locked(rf, idx);
}

/*
 * Nobody reads @ac's chunks any more: those that came go back, and those
 * still coming are dropped (recv.c).
 */
void rs_acfile_drain(struct rs_ac *ac)
{
	struct rs_file *rf = ac->rf;
	u32 conn;

	for (;;) {
		spin_lock_irq(&rf->rx_lock);
		ac->rx_done = true;
		if (!ac->af->rx_n) {
			spin_unlock_irq(&rf->rx_lock);
			return;
		}
		conn = rs_acfile_pop(ac);
		spin_unlock_irq(&rf->rx_lock);
		rs_rx_slot_back(rf, ac, conn);
	}
}

/*
 * Called with the AC file's lock held.  Once the file is released and
 * every write it queued completed, no SEND points at the send buffer any
 * more: it goes back to the maker's file area now, not when the AC goes
 * (after its CLOSE and the peer's), so that the next AC file finds room.
 * Not after a write failed: the AC ended under it, and its chunks may
 * still be in flight until rs_acfile_free().
 */
static void rs_acfile_sndbuf_gone(struct rs_ac *ac)
{
	struct rs_acfile *af = ac->af;

	lockdep_assert_held(&af->lock);
	if (!af->released || af->tx_error || af->op_tail != af->op_head || !af->sndbuf_len)
		return;
	rs_acfile_free_pages(ac->rf, af->page, af->sndbuf_len >> PAGE_SHIFT);
	af->sndbuf_len = 0;
}

/*
 * A write's SEND completed (@res its length) or failed; the send buffer is
 * free up to the oldest write that has not completed.  The CLOSE of the
 * release ends the AC in rs_ac_send_done().
 */
void rs_acfile_op_done(struct rs_ac *ac, struct rs_send *op, int res)
{
	struct rs_acfile *af = ac->af;
	unsigned long flags;
	struct rs_zc *zc;
	u32 i;

	if (op == &af->close_op) {
		/* Out, or failed: the AC is done, nothing lingers. */
		if (cancel_delayed_work(&af->linger))
			rs_ac_put(ac);
		return;
	}
	if (op == &af->shut_op)
		return;
	spin_lock_irqsave(&af->lock, flags);
	if (res < 0 && !af->tx_error) {
		af->tx_error = res;
		af->tx_fail_at = af->tx_tail;
	}
	af->op_done[op - af->ops] = true;
	/* Its SENDs that carried chunks may hold the pages on. */
	zc = op->zc;
	op->zc = NULL;
	while (af->op_tail != af->op_head) {
		i = af->op_tail % RS_ACFILE_OPS;
		if (!af->op_done[i])
			break;
		af->op_done[i] = false;
		af->tx_tail += af->ops[i].len;
		if (!af->ops[i].user_pages)
			af->sndbuf_used -= af->ops[i].len;
		af->op_tail++;
	}
	/* The old buffer's writes are done: none still sends from it. */
	if (af->old_pages && !af->tx_error && (s32)(af->op_tail - af->old_until) >= 0) {
		rs_acfile_free_pages(ac->rf, af->old_page, af->old_pages);
		af->old_pages = 0;
	}
	rs_acfile_sndbuf_gone(ac);
	spin_unlock_irqrestore(&af->lock, flags);
	if (zc)
		rs_zc_put(zc);
	rs_acfile_wake(ac, EPOLLOUT | EPOLLWRNORM);
}

/*
 * What a reader finds when no chunk waits: 1 if more may come, 0 at the end
 * of the stream (the peer shut down or closed), or the error the AC closed
 * with.  The peer's end comes after its last chunk, which is queued by the
 * time the end is seen.
 */
static int rs_acfile_rx_end(struct rs_ac *ac)
{
	/* Never opened (refused, timed out): its error, not an end. */
	if (READ_ONCE(ac->state) == RS_AC_CLOSED && !READ_ONCE(ac->remote_id))
		return READ_ONCE(ac->error);
	if (READ_ONCE(ac->peer_shut) || READ_ONCE(ac->peer_closed) || READ_ONCE(ac->af->rx_shut))
		return 0;
	if (READ_ONCE(ac->state) == RS_AC_CLOSED)
		return READ_ONCE(ac->error);
	return 1;
}

static bool rs_acfile_readable(struct rs_ac *ac)
{
	return READ_ONCE(ac->af->rx_n) || rs_acfile_rx_end(ac) <= 0;
}

/* Why a write fails now, or 0. */
static int rs_acfile_tx_err(struct rs_ac *ac)
{
	int err = READ_ONCE(ac->af->tx_error);

	if (err)
		return err;
	/* Closed with an error (refused, reset): that, before the end. */
	if (READ_ONCE(ac->state) == RS_AC_CLOSED && READ_ONCE(ac->error))
		return READ_ONCE(ac->error);
	if (READ_ONCE(ac->peer_closed) || READ_ONCE(ac->af->shut))
		return -EPIPE;
	if (READ_ONCE(ac->state) == RS_AC_CLOSED)
		return -EPIPE;
	return 0;
}

/*
 * Room for a write: bytes of the send buffer and a write of the ring, once
 * the AC is connected (a non-blocking CONNECT gives the file before).
 */
static bool rs_acfile_room(struct rs_ac *ac)
{
	struct rs_acfile *af = ac->af;

	return READ_ONCE(ac->state) != RS_AC_CONNECTING &&
	       READ_ONCE(af->sndbuf_used) < READ_ONCE(af->sndbuf_len) &&
	       READ_ONCE(af->op_head) - READ_ONCE(af->op_tail) < RS_ACFILE_OPS;
}

static bool rs_acfile_writable(struct rs_ac *ac)
{
	return rs_acfile_tx_err(ac) || rs_acfile_room(ac);
}

/* Bytes a read would return now. */
static u32 rs_acfile_rx_bytes(struct rs_ac *ac)
{
	struct rs_file *rf = ac->rf;
	struct rs_acfile *af = ac->af;
	u32 i, idx, n = 0;

	spin_lock_irq(&rf->rx_lock);
	for (i = 0, idx = af->rx_head; i < af->rx_n; i++, idx = rf->slots[idx].next)
		n += rf->slots[idx].len;
	n -= af->rx_n ? af->rx_cursor : 0;
	spin_unlock_irq(&rf->rx_lock);
	return n;
}

/*
 * How a read or a write goes: read(2) and write(2) with the file's flags
 * and the iocb's, or RDMASHARE_IOC_RECVMSG and SENDMSG with a socket
 * call's.
 */
#define RS_IO_NOWAIT	BIT(0)	/* EAGAIN for what would wait */
#define RS_IO_TRYLOCK	BIT(1)	/* not even for another reader or writer */
#define RS_IO_PEEK	BIT(2)	/* MSG_PEEK: the bytes stay */
#define RS_IO_WAITALL	BIT(3)	/* MSG_WAITALL */
#define RS_IO_NOSIGNAL	BIT(4)	/* MSG_NOSIGNAL */
#define RS_IO_MORE	BIT(5)	/* MSG_MORE: hold the last piece */

/* The most a write with MSG_MORE waits for the next one, as TCP_CORK. */
#define RS_ACFILE_CORK_MS	200

static unsigned int rs_acfile_iocb_how(struct kiocb *iocb)
{
	unsigned int how = 0;

	if (iocb->ki_filp->f_flags & O_NONBLOCK)
		how |= RS_IO_NOWAIT;
	/*
	 * A reader holds its lock while it waits for data, so IOCB_NOWAIT
	 * (RWF_NOWAIT, io_uring) only tries it: EAGAIN.
	 */
	if (iocb->ki_flags & IOCB_NOWAIT)
		how |= RS_IO_NOWAIT | RS_IO_TRYLOCK;
	return how;
}

/* The read or write lock. */
static int rs_acfile_lock(struct mutex *lock, unsigned int how)
{
	if (how & RS_IO_TRYLOCK)
		return mutex_trylock(lock) ? 0 : -EAGAIN;
	return mutex_lock_interruptible(lock) ? -ERESTARTSYS : 0;
}

/* A timeout of SO_RCVTIMEO's or SO_SNDTIMEO's, in jiffies: 0 is none. */
long rs_acfile_timeo(u64 us)
{
	u32 rem;
	u64 secs;

	/* No timeout, the common case: no division on every read and write. */
	if (!us)
		return MAX_SCHEDULE_TIMEOUT;
	secs = div_u64_rem(us, USEC_PER_SEC, &rem);
	/* As sock_set_timeout(): longer than can be waited is for good. */
	if (secs >= MAX_SCHEDULE_TIMEOUT / HZ - 1)
		return MAX_SCHEDULE_TIMEOUT;
	return secs * HZ + usecs_to_jiffies(rem);
}

/* Count @n bytes of @i for the AC's peer and device. */
static void rs_acfile_count(struct rs_ac *ac, enum rs_stat i, u64 n)
{
	struct rs_qp *qp = READ_ONCE(ac->qp);

	if (qp && n)
		rs_qp_stat(qp, i, n);
}

/*
 * Copy what waits, from the oldest chunk on, taking nothing.  Only the
 * reader, whose lock is held, takes chunks, so the ones seen stay, and
 * their lengths and links were written before rx_n counted them.
 */
static size_t rs_acfile_peek_copy(struct rs_ac *ac, struct iov_iter *to, bool *fault)
{
	struct rs_file *rf = ac->rf;
	struct rs_acfile *af = ac->af;
	u32 i, n, idx, off, take;
	size_t done = 0, copied;

	spin_lock_irq(&rf->rx_lock);
	n = af->rx_n;
	idx = af->rx_head;
	off = af->rx_cursor;
	spin_unlock_irq(&rf->rx_lock);
	for (i = 0; i < n && iov_iter_count(to); i++, idx = rf->slots[idx].next, off = 0) {
		take = min_t(size_t, rf->slots[idx].len - off, iov_iter_count(to));
		copied = copy_to_iter(rf->data + rf->rx_offset + (size_t)idx * rf->rx_slot_size +
				      off, take, to);
		done += copied;
		if (copied < take) {
			*fault = true;
			break;
		}
	}
	return done;
}

static bool rs_acfile_peekable(struct rs_ac *ac, size_t want)
{
	return rs_acfile_rx_bytes(ac) >= want || rs_acfile_rx_end(ac) <= 0;
}

/*
 * MSG_PEEK: once something waits (with MSG_WAITALL, all that is asked for,
 * unless the stream ends first), copy it and leave it.
 */
static ssize_t rs_acfile_peek(struct rs_ac *ac, struct iov_iter *to, unsigned int how,
			      long *timeo)
{
	size_t want = how & RS_IO_WAITALL ? iov_iter_count(to) : 1;
	bool fault = false;
	size_t done;
	int end, ret;

	for (;;) {
		end = rs_acfile_rx_end(ac);
		/* As in a read: the end seen, the chunks before it are too. */
		smp_rmb();
		if (rs_acfile_rx_bytes(ac) >= want || end <= 0)
			break;
		if (how & RS_IO_NOWAIT) {
			if (READ_ONCE(ac->af->rx_n))
				break;
			return -EAGAIN;
		}
		ret = rs_acfile_wait(ac, rs_acfile_peekable(ac, want), timeo);
		if (ret)
			return ret;
	}
	done = rs_acfile_peek_copy(ac, to, &fault);
	if (done)
		return done;
	return fault ? -EFAULT : end;
}

/*
 * Reads: read(2), readv(2) and RDMASHARE_IOC_RECVMSG.  A fault copies what
 * it can: the bytes copied are read, and the read returns them, or EFAULT
 * if there are none.
 */
/*
 * Does a read that finds nothing to read offer its own buffer to the
 * peer (sink.c)?  If it may wait and has zcopy_min bytes of user memory
 * in one piece, once per call.
 */
static bool rs_acfile_sink_wanted(struct rs_ac *ac, struct iov_iter *to, unsigned int how)
{
	u32 min = READ_ONCE(rs_zcopy_min);

	return min && iov_iter_count(to) >= min && !(how & RS_IO_NOWAIT) &&
	       user_backed_iter(to) && rs_iter_user_seg(to).iov_len >= min &&
	       READ_ONCE(ac->state) == RS_AC_OPEN;
}

static ssize_t rs_acfile_recv(struct rs_ac *ac, struct iov_iter *to, unsigned int how)
{
	struct rs_acfile *af = ac->af;
	struct rs_file *rf = ac->rf;
	u32 idx, have, take, conn;
	long timeo = rs_acfile_timeo(READ_ONCE(af->rcvtimeo_us));
	size_t done = 0, copied;
	bool empty, gone, sunk = false;
	ssize_t ret = 0;
	int end;

	if (!iov_iter_count(to))
		return 0;
	ret = rs_acfile_lock(&af->read_lock, how);
	if (ret)
		return ret;
	if (how & RS_IO_PEEK) {
		ret = rs_acfile_peek(ac, to, how, &timeo);
		if (ret > 0)
			rs_acfile_count(ac, RS_STAT_READ_COPIED, ret);
		goto out;
	}
	while (iov_iter_count(to)) {
		end = rs_acfile_rx_end(ac);
		/* The end seen, all chunks before it are seen: see above. */
		smp_rmb();
		spin_lock_irq(&rf->rx_lock);
		empty = !af->rx_n;
		idx = af->rx_head;
		have = empty ? 0 : rf->slots[idx].len - af->rx_cursor;
		spin_unlock_irq(&rf->rx_lock);
		if (empty) {
			if (end <= 0 || (done && !(how & RS_IO_WAITALL))) {
				ret = end;
				break;
			}
			if (how & RS_IO_NOWAIT) {
				ret = -EAGAIN;
				break;
			}
			if (!sunk && rs_acfile_sink_wanted(ac, to, how)) {
				/* Written into @to, or not: then as before. */
				sunk = true;
				ret = rs_sink_read(ac, to, &timeo);
				if (ret < 0)
					break;
				done += ret;
				continue;
			}
			ret = rs_acfile_wait(ac, rs_acfile_readable(ac), &timeo);
			if (ret)
				break;
			continue;
		}
		/* Only this reader takes chunks: the slot stays while it copies. */
		take = min_t(size_t, have, iov_iter_count(to));
		copied = copy_to_iter(rf->data + rf->rx_offset + (size_t)idx * rf->rx_slot_size +
				      af->rx_cursor, take, to);
		done += copied;
		rs_acfile_count(ac, RS_STAT_READ_COPIED, copied);
		spin_lock_irq(&rf->rx_lock);
		af->rx_cursor += copied;
		gone = af->rx_cursor == rf->slots[idx].len;
		if (gone)
			conn = rs_acfile_pop(ac);
		spin_unlock_irq(&rf->rx_lock);
		if (gone)
			rs_rx_slot_back(rf, ac, conn);
		if (copied < take) {
			ret = -EFAULT;
			break;
		}
	}
out:
	mutex_unlock(&af->read_lock);
	return done ? done : ret;
}

static ssize_t rs_acfile_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	return rs_acfile_recv(iocb->ki_filp->private_data, to, rs_acfile_iocb_how(iocb));
}

/*
 * Called with the write lock held: the write that MSG_MORE held back, if
 * any, is queued.  If it cannot be (the AC is closing), its bytes are
 * dropped, as a reset drops what TCP had not sent.
 */
static int rs_acfile_push(struct rs_ac *ac)
{
	struct rs_acfile *af = ac->af;
	struct rs_send *op;
	int ret;

	lockdep_assert_held(&af->write_lock);
	if (!af->corked)
		return 0;
	af->corked = false;
	op = &af->ops[(af->op_head - 1) % RS_ACFILE_OPS];
	ret = rs_ac_queue(ac, op, NULL);
	if (ret) {
		/* Not queued: nothing newer was, nothing older waits on it. */
		spin_lock_irq(&af->lock);
		af->tx_head -= op->len;
		af->sndbuf_used -= op->len;
		af->op_head--;
		spin_unlock_irq(&af->lock);
		af->tx_at = af->tx_at >= op->len ? af->tx_at - op->len
						 : af->tx_at + af->sndbuf_len - op->len;
	}
	return ret;
}

/*
 * MSG_MORE's bytes have waited RS_ACFILE_CORK_MS: they go.  A writer that
 * holds the lock now queues them, or arms this again, when it ends.
 */
static void rs_acfile_cork_timeout(struct work_struct *work)
{
	struct rs_acfile *af = container_of(to_delayed_work(work), struct rs_acfile, cork);

	if (!mutex_trylock(&af->write_lock))
		return;
	rs_acfile_push(af->ac);
	mutex_unlock(&af->write_lock);
}

/*
 * Called with the write lock held: @len bytes were copied to the send
 * buffer at tx_at.  They join the write MSG_MORE held back if they follow
 * it, or become a write of their own, held back too.
 */
static void rs_acfile_add(struct rs_ac *ac, u32 len)
{
	struct rs_acfile *af = ac->af;
	struct rs_send *op;

	if (af->corked) {
		op = &af->ops[(af->op_head - 1) % RS_ACFILE_OPS];
		op->len += len;
		spin_lock_irq(&af->lock);
		af->tx_head += len;
		af->sndbuf_used += len;
		spin_unlock_irq(&af->lock);
	} else {
		op = &af->ops[af->op_head % RS_ACFILE_OPS];
		memset(op, 0, sizeof(*op));
		op->opcode = RDMASHARE_OP_SEND;
		op->file = true;
		op->addr = af->sndbuf + af->tx_at;
		op->len = len;
		op->user_data = af->tx_head;
		spin_lock_irq(&af->lock);
		af->tx_head += len;
		af->sndbuf_used += len;
		af->op_head++;
		spin_unlock_irq(&af->lock);
		af->corked = true;
	}
	af->tx_at += len;
	if (af->tx_at == af->sndbuf_len)
		af->tx_at = 0;
}

/*
 * Whether @len more bytes at tx_at can join the held-back write: they
 * follow it in the buffer, and the message stays within the protocol's.
 */
static bool rs_acfile_joins(struct rs_acfile *af, u32 len)
{
	struct rs_send *op = &af->ops[(af->op_head - 1) % RS_ACFILE_OPS];

	return af->corked && op->addr + op->len == af->sndbuf + af->tx_at &&
	       op->len + len <= RS_PROTO_MAX_MSG;
}

/*
 * Called with the write lock held: the send buffer becomes @len bytes
 * (whole pages) of the maker's file area.  New writes go to the new
 * buffer; those queued finish in the old one, which goes back once the
 * last of them completed (rs_acfile_op_done()).  A smaller one with
 * nothing in flight shrinks in place.  -ENOSPC if the area has no room,
 * -EBUSY while an older buffer still waits to go back.
 */
static int rs_acfile_resize(struct rs_ac *ac, u32 len)
{
	struct rs_acfile *af = ac->af;
	struct rs_file *rf = ac->rf;
	u32 pages = len >> PAGE_SHIFT, old_page, old_pages = 0;
	unsigned long flags, start;
	int ret;

	if (len == af->sndbuf_len)
		return 0;
	/* A write held back must not run on into the new buffer. */
	ret = rs_acfile_push(ac);
	if (ret)
		return ret;
	if (READ_ONCE(af->old_pages))
		return -EBUSY;
	/* Smaller, with nothing in flight: its tail goes back, in place. */
	spin_lock_irq(&af->lock);
	if (len < af->sndbuf_len && af->op_tail == af->op_head) {
		old_page = af->page + pages;
		old_pages = (af->sndbuf_len >> PAGE_SHIFT) - pages;
		WRITE_ONCE(af->sndbuf_len, len);
		af->tx_at = 0;
	}
	spin_unlock_irq(&af->lock);
	if (old_pages) {
		rs_acfile_free_pages(rf, old_page, old_pages);
		return 0;
	}
	spin_lock_irqsave(&rf->files_lock, flags);
	start = bitmap_find_next_zero_area(rf->files_map, rf->files_pages, 0, pages, 0);
	if (start < rf->files_pages)
		bitmap_set(rf->files_map, start, pages);
	spin_unlock_irqrestore(&rf->files_lock, flags);
	if (start >= rf->files_pages)
		return -ENOSPC;

	spin_lock_irq(&af->lock);
	old_page = af->page;
	if (af->op_tail == af->op_head) {
		old_pages = af->sndbuf_len >> PAGE_SHIFT;
	} else {
		af->old_page = af->page;
		af->old_pages = af->sndbuf_len >> PAGE_SHIFT;
		af->old_until = af->op_head;
	}
	af->page = start;
	af->sndbuf = rf->files_offset + ((u64)start << PAGE_SHIFT);
	WRITE_ONCE(af->sndbuf_len, len);
	af->tx_at = 0;
	spin_unlock_irq(&af->lock);
	/* Nothing was in flight: the old buffer goes back now. */
	if (old_pages)
		rs_acfile_free_pages(rf, old_page, old_pages);
	return 0;
}

/*
 * Called with the write lock held by a writer that found the send buffer
 * full: if the AC could send (it has the peer's credits: the bytes wait
 * for acknowledgements, not for a reader) and nobody named the size, the
 * buffer doubles, up to sndbuf_max and the room in the file area, as
 * TCP's grows with its window.  True if it grew.
 */
static bool rs_acfile_grow(struct rs_ac *ac)
{
	struct rs_acfile *af = ac->af;
	u32 max = READ_ONCE(rs_sndbuf_max) & PAGE_MASK;

	if (af->sndbuf_set || af->sndbuf_len >= max || !READ_ONCE(ac->send_credits) ||
	    READ_ONCE(af->op_head) - READ_ONCE(af->op_tail) >= RS_ACFILE_OPS ||
	    READ_ONCE(ac->state) != RS_AC_OPEN)
		return false;
	return !rs_acfile_resize(ac, min(af->sndbuf_len * 2, max));
}

/* The most of a write one SEND from the writer's own pages takes. */
#define RS_ACFILE_ZC_MAX	SZ_1M
/*
 * The most of a write copied before it is queued: the sender takes it
 * (rxe sends it from its own context) while the next piece is copied.
 */
#define RS_ACFILE_PIPE		SZ_64K

/*
 * Do @from's next bytes go from the writer's own pages (zcopy.c)?  If
 * they are user memory, at least zcopy_min bytes of it in one piece
 * (@seg), and the write may wait for its SENDs: not O_NONBLOCK,
 * MSG_DONTWAIT, MSG_MORE or TCP_CORK.
 */
static bool rs_acfile_zc_wanted(struct rs_ac *ac, struct iov_iter *from, unsigned int how,
				struct iovec *seg)
{
	u32 min = READ_ONCE(rs_zcopy_min);

	if (!min || iov_iter_count(from) < min || (how & (RS_IO_NOWAIT | RS_IO_MORE)) ||
	    !user_backed_iter(from) || READ_ONCE(ac->state) != RS_AC_OPEN)
		return false;
	*seg = rs_iter_user_seg(from);
	return seg->iov_len >= min;
}

/*
 * Called with the write lock held: the first RS_ACFILE_ZC_MAX bytes at
 * most of @seg, @from's next, are a SEND from the writer's own pages,
 * queued after what MSG_MORE held back; *@last becomes the number after
 * its operation's, and the pages join the writer's *@list (a reference
 * of its own).  The bytes queued; 0 if they are to be copied (no room in
 * the ring of writes, pages that cannot be pinned or mapped); -ENOMEM
 * past RLIMIT_MEMLOCK or without memory; or why the AC cannot send.
 */
static ssize_t rs_acfile_send_zc(struct rs_ac *ac, struct iov_iter *from,
				 const struct iovec *seg, u32 *last, struct rs_zc **list)
{
	size_t len = min_t(size_t, seg->iov_len, RS_ACFILE_ZC_MAX);
	struct rs_qp *qp = READ_ONCE(ac->qp);
	struct rs_acfile *af = ac->af;
	struct rs_device *rdev;
	struct rs_send *op;
	struct rs_zc *zc;
	int ret;

	ret = rs_acfile_push(ac);
	if (ret)
		return ret;
	rdev = qp ? READ_ONCE(qp->rdev) : NULL;
	if (!rdev || READ_ONCE(af->op_head) - READ_ONCE(af->op_tail) >= RS_ACFILE_OPS)
		return 0;
	zc = rs_zc_pin(rdev, (unsigned long)seg->iov_base, len, false);
	if (IS_ERR(zc))
		return PTR_ERR(zc) == -ENOMEM ? -ENOMEM : 0;
	op = &af->ops[af->op_head % RS_ACFILE_OPS];
	memset(op, 0, sizeof(*op));
	op->opcode = RDMASHARE_OP_SEND;
	op->file = true;
	op->user_pages = true;
	op->addr = offset_in_page(seg->iov_base);
	op->len = len;
	op->user_data = af->tx_head;
	op->zc = zc;
	zc->op = op;
	/* The writer's: the operation's may go as soon as it is queued. */
	kref_get(&zc->ref);
	spin_lock_irq(&af->lock);
	af->tx_head += len;
	af->op_head++;
	spin_unlock_irq(&af->lock);
	ret = rs_ac_queue(ac, op, NULL);
	if (ret) {
		/* Not queued: nothing newer was, nothing older waits on it. */
		spin_lock_irq(&af->lock);
		af->tx_head -= len;
		af->op_head--;
		spin_unlock_irq(&af->lock);
		op->zc = NULL;
		rs_zc_put(zc);
		rs_zc_put(zc);
		return ret;
	}
	zc->next = *list;
	*list = zc;
	*last = af->op_head;
	iov_iter_advance(from, len);
	rs_acfile_count(ac, RS_STAT_TX_ZCOPY, len);
	return len;
}

static bool rs_acfile_zc_done(struct rs_ac *ac, u32 last)
{
	return (s32)(READ_ONCE(ac->af->op_tail) - last) >= 0 || rs_acfile_tx_err(ac);
}

/* Called with @ac's QP's lock held: is @op still queued, not all sent? */
static bool rs_acfile_op_queued(struct rs_ac *ac, const struct rs_send *op)
{
	const struct rs_send *o;

	list_for_each_entry(o, &ac->sendq, node)
		if (o == op)
			return true;
	return false;
}

/*
 * A signal came while a write's pages were on the wire: what its SENDs
 * have not taken yet goes from a copy in kernel pages (rs_zc_bounce()),
 * at the same offsets; then only the SENDs posted from the writer's pages
 * keep them, which complete without the peer's reader.  0 once none does
 * (the write is then as good as copied), or -ERESTARTSYS for a fatal
 * signal.  Without memory for a copy, a piece keeps its pages, and the
 * wait is for it to be sent.
 */
static int rs_acfile_zc_bounce(struct rs_ac *ac, struct rs_zc *list)
{
	struct rs_qp *qp = ac->qp;
	struct rs_zc *zc, *b;
	bool queued;
	u32 unsent;
	int ret;

	for (zc = list; zc; zc = zc->next) {
		b = rs_zc_bounce(zc);
		if (!b)
			continue;
		spin_lock_irq(&qp->lock);
		/* Queued, it has not completed: its pages are its own. */
		queued = rs_acfile_op_queued(ac, zc->op) && zc->op->zc == zc;
		if (queued) {
			zc->op->zc = b;
			unsent = zc->op->len - zc->op->sent;
		}
		spin_unlock_irq(&qp->lock);
		/* The operation's reference to the pages, or the unused copy. */
		rs_zc_put(queued ? zc : b);
		if (queued)
			rs_acfile_count(ac, RS_STAT_WRITE_COPIED, unsent);
	}
	for (zc = list; zc; zc = zc->next) {
		ret = rs_zc_wait_alone(zc);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * A write from the writer's own pages returns once its SENDs completed:
 * then the pages are the writer's again.  Or once the stream failed (the
 * AC closed, or was shut down for writing under the write): then it
 * returns the bytes from @start on (its first) that went before, if any,
 * in *@done, or the error; what the peer gets of the rest is not known,
 * as for any write that fails, and its SENDs keep the pages until they
 * are done.  A signal ends the wait as it ends a TCP writer's, once no
 * SEND reads the writer's pages (rs_acfile_zc_bounce()): the write
 * returns what it wrote (-ERESTARTSYS, *@done as it is).  The writer's
 * references go.
 */
static int rs_acfile_zc_wait(struct rs_ac *ac, struct rs_zc **list, u32 last, u32 start,
			     size_t *done)
{
	struct rs_acfile *af = ac->af;
	struct rs_zc *zc, *next;
	int ret, err = 0;
	bool passed;
	s32 good;

	if (!*list)
		return 0;
	ret = wait_event_interruptible(ac->wait, rs_acfile_zc_done(ac, last));
	if (ret) {
		err = rs_acfile_zc_bounce(ac, *list) ?: ret;
		goto out_put;
	}
	spin_lock_irq(&af->lock);
	passed = (s32)(af->op_tail - last) >= 0;
	err = af->tx_error;
	good = (err ? af->tx_fail_at : af->tx_tail) - start;
	spin_unlock_irq(&af->lock);
	if (passed && !err)
		goto out_put;
	*done = good > 0 ? min_t(size_t, *done, good) : 0;
	err = err ?: rs_acfile_tx_err(ac);
out_put:
	for (zc = *list; zc; zc = next) {
		next = zc->next;
		rs_zc_put(zc);
	}
	*list = NULL;
	return err;
}

/*
 * Writes: write(2), writev(2), splice(2) and sendfile(2) into the AC file
 * (iter_file_splice_write()), and RDMASHARE_IOC_SENDMSG.  A fault sends
 * what was copied before it: the write returns those bytes, or EFAULT if
 * there are none.  Each contiguous piece, RS_ACFILE_PIPE at most, is a
 * SEND; with RS_IO_MORE the last one waits for the next write
 * (rs_acfile_add()), which it joins.  Pieces of user
 * memory of zcopy_min bytes or more go from the writer's pages instead
 * (rs_acfile_zc_wanted()); such a write returns when they went.
 */
static ssize_t rs_acfile_send(struct rs_ac *ac, struct iov_iter *from, unsigned int how)
{
	struct rs_acfile *af = ac->af;
	struct rs_file *rf = ac->rf;
	long timeo = rs_acfile_timeo(READ_ONCE(af->sndtimeo_us));
	struct rs_zc *zc_list = NULL;
	size_t done = 0, copied;
	u32 used, take, start, zc_last = 0;
	struct iovec seg;
	ssize_t ret = 0;

	if (!iov_iter_count(from))
		return 0;
	ret = rs_acfile_lock(&af->write_lock, how);
	if (ret)
		return ret;
	if (af->cork_on)
		how |= RS_IO_MORE;
	start = af->tx_head;
	while (iov_iter_count(from)) {
		ret = rs_acfile_tx_err(ac);
		if (ret)
			break;
		if (rs_acfile_zc_wanted(ac, from, how, &seg)) {
			ret = rs_acfile_send_zc(ac, from, &seg, &zc_last, &zc_list);
			if (ret > 0) {
				done += ret;
				continue;
			}
			if (ret == -ENOMEM && zc_list) {
				/* Past RLIMIT_MEMLOCK: this write's pages go back first. */
				mutex_unlock(&af->write_lock);
				ret = rs_acfile_zc_wait(ac, &zc_list, zc_last, start, &done);
				if (!ret && mutex_lock_killable(&af->write_lock))
					ret = -EINTR;
				if (ret)
					goto out_unlocked;
				continue;
			}
			if (ret && ret != -ENOMEM)
				break;
			ret = 0;	/* copied */
		}
		if (!rs_acfile_room(ac)) {
			/* What was held back goes, or room may never come. */
			ret = rs_acfile_push(ac);
			if (ret)
				break;
			/* Full while the peer has room: the stream wants more. */
			if (rs_acfile_grow(ac))
				continue;
			if (how & RS_IO_NOWAIT) {
				ret = -EAGAIN;
				break;
			}
			/*
			 * Not with the lock held: room comes only when the
			 * peer grants credits, and SHUTDOWN takes the lock
			 * (a TCP writer waits for memory without its socket
			 * lock too).  Another writer may go first meanwhile.
			 */
			mutex_unlock(&af->write_lock);
			ret = rs_acfile_wait(ac, rs_acfile_writable(ac), &timeo);
			if (!ret && mutex_lock_interruptible(&af->write_lock))
				ret = -ERESTARTSYS;
			if (ret)
				goto out_unlocked;
			continue;
		}
		/* Completions only free room: it can only have grown since. */
		spin_lock_irq(&af->lock);
		used = af->sndbuf_used;
		spin_unlock_irq(&af->lock);
		take = min3(iov_iter_count(from), (size_t)(af->sndbuf_len - used),
			    (size_t)(af->sndbuf_len - af->tx_at));
		/* Pipelined: a piece goes while the next is copied. */
		take = min_t(u32, take, RS_ACFILE_PIPE);
		if (af->corked && !rs_acfile_joins(af, take)) {
			ret = rs_acfile_push(ac);
			if (ret)
				break;
			continue;
		}
		copied = copy_from_iter(rf->data + af->sndbuf + af->tx_at, take, from);
		if (!copied) {
			ret = -EFAULT;
			break;
		}
		rs_acfile_count(ac, RS_STAT_WRITE_COPIED, copied);
		rs_acfile_add(ac, copied);
		done += copied;
		if (!(how & RS_IO_MORE)) {
			ret = rs_acfile_push(ac);
			if (ret) {
				done -= min_t(size_t, done, copied);
				break;
			}
		}
		/* A fault: what was copied before it is written, and no more. */
		if (copied < take)
			break;
	}
	/*
	 * Held back (MSG_MORE, or a fault after it): not for long, counted
	 * from the first byte held.  Nothing held: an older timer must not
	 * cut the next hold short.
	 */
	if (af->corked)
		queue_delayed_work(rs_wq, &af->cork, msecs_to_jiffies(RS_ACFILE_CORK_MS));
	else
		cancel_delayed_work(&af->cork);
	mutex_unlock(&af->write_lock);
out_unlocked:
	/* From the writer's pages: it returns once they went, or failed. */
	if (zc_list)
		ret = rs_acfile_zc_wait(ac, &zc_list, zc_last, start, &done);
	if (done)
		return done;
	if (ret == -EPIPE && !(how & RS_IO_NOSIGNAL))
		send_sig(SIGPIPE, current, 0);
	return ret;
}

static ssize_t rs_acfile_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	return rs_acfile_send(iocb->ki_filp->private_data, from, rs_acfile_iocb_how(iocb));
}

static __poll_t rs_acfile_poll(struct file *filp, poll_table *wait)
{
	struct rs_ac *ac = filp->private_data;
	__poll_t mask = 0;
	int end;

	poll_wait(filp, &ac->wait, wait);
	end = rs_acfile_rx_end(ac);
	/* As in read: the end seen, the chunks before it are too. */
	smp_rmb();
	if (READ_ONCE(ac->af->rx_n) || end <= 0)
		mask |= EPOLLIN | EPOLLRDNORM;
	if (READ_ONCE(ac->peer_shut) || READ_ONCE(ac->peer_closed) || READ_ONCE(ac->af->rx_shut))
		mask |= EPOLLRDHUP;
	if (rs_acfile_writable(ac))
		mask |= EPOLLOUT | EPOLLWRNORM;
	/* Closed, or shut both ways here (as TCP's SHUTDOWN_MASK). */
	if (READ_ONCE(ac->state) == RS_AC_CLOSED ||
	    (READ_ONCE(ac->af->rx_shut) && READ_ONCE(ac->af->shut)))
		mask |= EPOLLHUP;
	if (READ_ONCE(ac->af->so_error))
		mask |= EPOLLERR;
	return mask;
}

/*
 * The last descriptor is gone: what came and was not read goes back, and
 * the AC closes once what was written went out (as a CLOSE from the SQ
 * would), or at once if it closed already.
 */
static int rs_acfile_release(struct inode *inode, struct file *filp)
{
	struct rs_ac *ac = filp->private_data;
	struct rs_send *op = &ac->af->close_op;

	/* A CONNECT still under way ends here (ECONNABORTED). */
	rs_acfile_connect_stop(ac);
	rs_acfile_drain(ac);
	/* What MSG_MORE held back goes before the CLOSE. */
	cancel_delayed_work_sync(&ac->af->cork);
	mutex_lock(&ac->af->write_lock);
	rs_acfile_push(ac);
	mutex_unlock(&ac->af->write_lock);
	spin_lock_irq(&ac->af->lock);
	ac->af->released = true;
	rs_acfile_sndbuf_gone(ac);
	spin_unlock_irq(&ac->af->lock);
	op->opcode = RDMASHARE_OP_CLOSE;
	op->file = true;
	/* Armed first: the CLOSE may complete before rs_ac_queue() returns. */
	kref_get(&ac->ref);
	queue_delayed_work(rs_wq, &ac->af->linger, msecs_to_jiffies(READ_ONCE(rs_linger_ms)));
	if (rs_ac_queue(ac, op, NULL)) {
		if (cancel_delayed_work(&ac->af->linger))
			rs_ac_put(ac);
		/* Closed under it, by the peer or an error: only the id is left. */
		rs_ac_do_close(ac, 0, true);
		rs_ac_del_from_file(ac);
	}
	rs_ac_put(ac);
	return 0;
}

/*
 * SHUT_RD: a reader waiting now wakes to the end, and what came or comes
 * is dropped (rx_done, as at the release), once no reader copies from it.
 */
static int rs_acfile_shut_rd(struct rs_ac *ac)
{
	struct rs_acfile *af = ac->af;

	WRITE_ONCE(af->rx_shut, true);
	rs_acfile_wake(ac, 0);
	if (mutex_lock_interruptible(&af->read_lock))
		return -ERESTARTSYS;
	rs_acfile_drain(ac);
	mutex_unlock(&af->read_lock);
	return 0;
}

/* SHUT_WR: after the writes, a SHUTDOWN; once. */
static int rs_acfile_shut_wr(struct rs_ac *ac)
{
	struct rs_acfile *af = ac->af;
	struct rs_send *op = &af->shut_op;
	int ret = 0;

	/*
	 * After the writes that hold the lock now: a writer holds it while
	 * it copies, which a fault (userfaultfd) can make long, never while
	 * it waits for room.
	 */
	if (mutex_lock_interruptible(&af->write_lock))
		return -ERESTARTSYS;
	if (!af->shut) {
		ret = rs_acfile_push(ac);
		op->opcode = RDMASHARE_OP_SHUTDOWN;
		op->file = true;
		if (!ret)
			ret = rs_ac_queue(ac, op, NULL);
		WRITE_ONCE(af->shut, !ret);
	}
	mutex_unlock(&af->write_lock);
	if (!ret)
		rs_acfile_wake(ac, 0);
	return ret;
}

/* RDMASHARE_IOC_SHUTDOWN: shutdown(2). */
static int rs_acfile_shutdown(struct file *filp, union rs_ioctl_buf *buf,
			      struct rs_new_file *nf)
{
	struct rs_ac *ac = filp->private_data;
	u32 how = buf->shutdown.flags ?: RDMASHARE_SHUTDOWN_WR;
	int ret = 0;

	if (how & ~(RDMASHARE_SHUTDOWN_RD | RDMASHARE_SHUTDOWN_WR))
		return -EINVAL;
	if (how & RDMASHARE_SHUTDOWN_RD)
		ret = rs_acfile_shut_rd(ac);
	if (!ret && (how & RDMASHARE_SHUTDOWN_WR))
		ret = rs_acfile_shut_wr(ac);
	return ret;
}

/*
 * The MSG_* flags that RDMASHARE_IOC_RECVMSG and SENDMSG refuse: those a
 * TCP socket gives a meaning this stream does not have.  As TCP's, the
 * others it has no use for (MSG_NOSIGNAL on a read, MSG_CONFIRM, ...) are
 * ignored: programs pass them.
 */
#define RS_MSG_RECV_NO	(MSG_OOB | MSG_TRUNC | MSG_ERRQUEUE)
#define RS_MSG_SEND_NO	(MSG_OOB | MSG_FASTOPEN)

/* RDMASHARE_IOC_RECVMSG and SENDMSG: recvmsg(2) and sendmsg(2). */
static int rs_acfile_msg(struct file *filp, union rs_ioctl_buf *buf, bool out)
{
	struct rdmashare_msg *m = &buf->msg;
	struct iovec iovstack[UIO_FASTIOV], *iov = iovstack;
	struct rs_ac *ac = filp->private_data;
	unsigned int how = 0;
	struct iov_iter iter;
	ssize_t ret;

	if (m->flags || m->resv)
		return -EINVAL;
	if (m->msg_flags & (out ? RS_MSG_SEND_NO : RS_MSG_RECV_NO))
		return -EOPNOTSUPP;
	if (filp->f_flags & O_NONBLOCK)
		how |= RS_IO_NOWAIT;
	/* For this call alone, so not behind a reader that waits either. */
	if (m->msg_flags & MSG_DONTWAIT)
		how |= RS_IO_NOWAIT | RS_IO_TRYLOCK;
	if (m->msg_flags & MSG_PEEK)
		how |= RS_IO_PEEK;
	if (m->msg_flags & MSG_WAITALL)
		how |= RS_IO_WAITALL;
	if (m->msg_flags & MSG_NOSIGNAL)
		how |= RS_IO_NOSIGNAL;
	if (m->msg_flags & MSG_MORE)
		how |= RS_IO_MORE;
	ret = import_iovec(out ? ITER_SOURCE : ITER_DEST, u64_to_user_ptr(m->iov), m->iovcnt,
			   ARRAY_SIZE(iovstack), &iov, &iter);
	if (ret < 0)
		return ret;
	ret = out ? rs_acfile_send(ac, &iter, how) : rs_acfile_recv(ac, &iter, how);
	kfree(iov);
	/* At most MAX_RW_COUNT (import_iovec()): an int. */
	return ret;
}

static int rs_acfile_recvmsg(struct file *filp, union rs_ioctl_buf *buf, struct rs_new_file *nf)
{
	return rs_acfile_msg(filp, buf, false);
}

static int rs_acfile_sendmsg(struct file *filp, union rs_ioctl_buf *buf, struct rs_new_file *nf)
{
	return rs_acfile_msg(filp, buf, true);
}

/* RDMASHARE_IOC_AC_SET on the AC file's own AC. */
static int rs_acfile_set(struct file *filp, union rs_ioctl_buf *buf, struct rs_new_file *nf)
{
	struct rdmashare_ac_set *a = &buf->ac_set;
	int ret;

	if (a->ac)
		return -EINVAL;
	ret = rs_ac_set_check(a);
	if (!ret)
		rs_ac_set_one(filp->private_data, a);
	return ret;
}

/* RDMASHARE_IOC_AC_STATS of the AC file's own AC. */
static int rs_acfile_stats(struct file *filp, union rs_ioctl_buf *buf,
			   struct rs_new_file *nf)
{
	struct rdmashare_ac_stats *st = &buf->ac_stats;
	int ret;

	if (st->ac)
		return -EINVAL;
	ret = rs_ac_stats_check(st);
	if (!ret)
		rs_ac_stats_one(filp->private_data, st);
	return ret;
}

/* Bytes written whose SENDs have not completed (the peer has not acked). */
static u32 rs_acfile_tx_bytes(struct rs_ac *ac)
{
	struct rs_acfile *af = ac->af;
	u32 n;

	spin_lock_irq(&af->lock);
	n = af->tx_head - af->tx_tail;
	spin_unlock_irq(&af->lock);
	return n;
}

/* RDMASHARE_IOC_FILE_INFO: a socket's SO_ERROR, names and queues. */
static int rs_acfile_info(struct file *filp, union rs_ioctl_buf *buf, struct rs_new_file *nf)
{
	struct rdmashare_file_info *fi = &buf->file_info;
	struct rs_ac *ac = filp->private_data;
	struct rs_acfile *af = ac->af;

	if ((fi->flags & ~RDMASHARE_INFO_TAKE_ERROR) || fi->resv)
		return -EINVAL;
	if (fi->flags & RDMASHARE_INFO_TAKE_ERROR)
		fi->error = xchg(&af->so_error, 0);
	else
		fi->error = READ_ONCE(af->so_error);
	switch (READ_ONCE(ac->state)) {
	case RS_AC_CONNECTING:
		fi->state = RDMASHARE_AC_STATE_CONNECTING;
		break;
	case RS_AC_OPEN:
		fi->state = RDMASHARE_AC_STATE_OPEN;
		break;
	default:
		fi->state = RDMASHARE_AC_STATE_CLOSED;
		break;
	}
	rs_ac_addrs(ac, &fi->local, &fi->peer);
	fi->rx_bytes = rs_acfile_rx_bytes(ac);
	fi->tx_bytes = rs_acfile_tx_bytes(ac);
	fi->sndbuf = READ_ONCE(af->sndbuf_len);
	fi->cork = READ_ONCE(af->cork_on);
	fi->rcvtimeo_us = READ_ONCE(af->rcvtimeo_us);
	fi->sndtimeo_us = READ_ONCE(af->sndtimeo_us);
	return 0;
}

#define RS_FILE_SET_KNOWN	(RDMASHARE_FILE_SET_SNDBUF | RDMASHARE_FILE_SET_CORK | \
				 RDMASHARE_FILE_SET_RCVTIMEO | RDMASHARE_FILE_SET_SNDTIMEO)

/*
 * RDMASHARE_IOC_FILE_SET: SO_SNDBUF (a buffer of that size, which stays;
 * the old size if the file area has no room), TCP_CORK, SO_RCVTIMEO and
 * SO_SNDTIMEO.
 */
static int rs_acfile_file_set(struct file *filp, union rs_ioctl_buf *buf,
			      struct rs_new_file *nf)
{
	struct rdmashare_file_set *fs = &buf->file_set;
	struct rs_ac *ac = filp->private_data;
	struct rs_acfile *af = ac->af;
	u64 len;
	int ret = 0;

	if (!fs->flags || (fs->flags & ~RS_FILE_SET_KNOWN) || fs->resv)
		return -EINVAL;
	if ((fs->flags & RDMASHARE_FILE_SET_CORK) && fs->cork > 1)
		return -EINVAL;
	if ((fs->flags & RDMASHARE_FILE_SET_SNDBUF) && !fs->sndbuf)
		return -EINVAL;
	if (mutex_lock_interruptible(&af->write_lock))
		return -ERESTARTSYS;
	if (fs->flags & RDMASHARE_FILE_SET_SNDBUF) {
		len = clamp_t(u64, PAGE_ALIGN((u64)fs->sndbuf), PAGE_SIZE,
			      max_t(u32, READ_ONCE(rs_sndbuf_max) & PAGE_MASK, PAGE_SIZE));
		ret = rs_acfile_resize(ac, len);
		/* As setsockopt(2): the size it could have, no error. */
		if (ret == -ENOSPC)
			ret = 0;
		if (!ret)
			af->sndbuf_set = true;
		fs->sndbuf = af->sndbuf_len;
	}
	if (!ret && (fs->flags & RDMASHARE_FILE_SET_CORK)) {
		WRITE_ONCE(af->cork_on, fs->cork);
		if (!fs->cork)
			ret = rs_acfile_push(ac);
	}
	/* For the next read or write: one waiting now keeps its own. */
	if (!ret && (fs->flags & RDMASHARE_FILE_SET_RCVTIMEO))
		WRITE_ONCE(af->rcvtimeo_us, fs->rcvtimeo_us);
	if (!ret && (fs->flags & RDMASHARE_FILE_SET_SNDTIMEO))
		WRITE_ONCE(af->sndtimeo_us, fs->sndtimeo_us);
	mutex_unlock(&af->write_lock);
	return ret;
}

static const struct rs_ioctl_op rs_acfile_ioctl_ops[] = {
	RS_IOCTL_OP(RDMASHARE_CMD_AC_SET, rs_acfile_set, struct rdmashare_ac_set, resv),
	RS_IOCTL_OP(RDMASHARE_CMD_AC_STATS, rs_acfile_stats, struct rdmashare_ac_stats, resv),
	RS_IOCTL_OP(RDMASHARE_CMD_SHUTDOWN, rs_acfile_shutdown, struct rdmashare_shutdown, flags),
	RS_IOCTL_OP(RDMASHARE_CMD_FILE_INFO, rs_acfile_info, struct rdmashare_file_info, resv),
	RS_IOCTL_OP(RDMASHARE_CMD_SENDMSG, rs_acfile_sendmsg, struct rdmashare_msg, resv),
	RS_IOCTL_OP(RDMASHARE_CMD_RECVMSG, rs_acfile_recvmsg, struct rdmashare_msg, resv),
	RS_IOCTL_OP(RDMASHARE_CMD_FILE_SET, rs_acfile_file_set, struct rdmashare_file_set, resv),
};

/*
 * FIONREAD (SIOCINQ) and SIOCOUTQ answer as TCP's do, with an int: the
 * bytes a read would return now, and the bytes written and not yet
 * acknowledged.  The rest are rdmashare's own.
 */
static long rs_acfile_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct rs_ac *ac = filp->private_data;

	switch (cmd) {
	case SIOCINQ:
		return put_user((int)rs_acfile_rx_bytes(ac), (int __user *)arg);
	case SIOCOUTQ:
		return put_user((int)rs_acfile_tx_bytes(ac), (int __user *)arg);
	}
	return rs_ioctl_run(filp, cmd, arg, rs_acfile_ioctl_ops, ARRAY_SIZE(rs_acfile_ioctl_ops));
}

static const struct file_operations rs_acfile_fops = {
	.owner = THIS_MODULE,
	.read_iter = rs_acfile_read_iter,
	.write_iter = rs_acfile_write_iter,
	.splice_write = iter_file_splice_write,
	.poll = rs_acfile_poll,
	.unlocked_ioctl = rs_acfile_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.release = rs_acfile_release,
};

/*
 * The AC file of @ac, which opened, with what rs_acfile_reserve() took: its
 * descriptor is installed once the ioctl's answer is out (chardev.c).  On
 * failure @res is still the caller's.
 */
int rs_acfile_bind(struct rs_ac *ac, struct rs_acfile_res *res,
		   struct rdmashare_file_params *p)
{
	struct rs_acfile *af = ac->af;
	struct file *file;

	file = anon_inode_getfile("[rdmashare-ac]", &rs_acfile_fops, ac,
				  O_RDWR | (res->flags & RDMASHARE_FILE_NONBLOCK ? O_NONBLOCK : 0));
	if (IS_ERR(file))
		return PTR_ERR(file);
	/* No lseek, pread or pwrite: a stream. */
	stream_open(file_inode(file), file);
	/* IOCB_NOWAIT gets EAGAIN for what would wait: RWF_NOWAIT, io_uring. */
	file->f_mode |= FMODE_NOWAIT;
	kref_get(&ac->ref);		/* the file's */
	af->bound = true;
	af->page = res->page;
	af->sndbuf = ac->rf->files_offset + ((u64)res->page << PAGE_SHIFT);
	af->sndbuf_len = res->pages << PAGE_SHIFT;
	res->nf->file = file;
	res->nf->fd = res->fd;
	p->fd = res->fd;
	p->sndbuf = af->sndbuf_len;
	return 0;
}
