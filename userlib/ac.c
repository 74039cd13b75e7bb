// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librdmashare: abstract connections with a socket-like API.
 *
 * rdmashare_send() copies the message into the application's part of the
 * data area (a first-fit allocator, "the buffer manager") and submits a
 * SEND; the buffer is reused once the SEND completes.  rdmashare_recv()
 * gathers a message's chunks from their receive slots, copies them out and
 * releases the slots, which returns credits to the sender.  Completions are
 * reaped by whichever call needs them and filed by AC.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdmashare.h"
#include "internal.h"

/*
 * user_data of the library's own operations: bit 63, the kind in bits 60
 * to 62; SENDs carry their buffer's offset (bits 30 to 59) and length (bits
 * 0 to 29), CLOSEs and SHUTDOWNs their AC.
 */
#define RS_UD_LIB	(1ULL << 63)
enum { RS_UD_SEND, RS_UD_RELEASE, RS_UD_CLOSE, RS_UD_SHUT };
#define RS_UD(kind)	(RS_UD_LIB | ((__u64)(kind) << 60))
#define RS_UD_KIND(ud)	((unsigned int)((ud) >> 60) & 7)
#define RS_UD_MAX	0x3fffffffULL	/* offsets and lengths */

/* AC ids are small file-local numbers; anything larger is not an AC. */
#define RS_ACST_MAX	(1U << 24)

static struct rs_acst *rs_acst(struct rdmashare *rs, __u32 ac)
{
	struct rs_acst *n;
	unsigned int want;

	if (ac < rs->nr_acs)
		return &rs->acs[ac];
	if (ac >= RS_ACST_MAX)
		return NULL;
	want = rs->nr_acs ? rs->nr_acs : 64;
	while (want <= ac)
		want *= 2;
	n = realloc(rs->acs, want * sizeof(*n));
	if (!n)
		return NULL;
	memset(n + rs->nr_acs, 0, (want - rs->nr_acs) * sizeof(*n));
	rs->acs = n;
	rs->nr_acs = want;
	return &rs->acs[ac];
}

/* ---- the buffer manager: first fit over [0, tx_size) ---- */

/*
 * Once: the whole area is free.  (An empty free list later means that all of
 * it is in use, not that it was never set up.)
 */
static int rs_tx_init(struct rdmashare *rs)
{
	if (rs->tx_ready || !rs->tx_size)
		return 0;
	rs->free_tx = calloc(1, sizeof(*rs->free_tx));
	if (!rs->free_tx)
		return -ENOMEM;
	rs->free_tx->len = rs->tx_size;
	rs->tx_ready = 1;
	return 0;
}

static size_t rs_align(size_t len)
{
	return (len + 63) & ~(size_t)63;
}

static long long rs_tx_alloc(struct rdmashare *rs, size_t len)
{
	struct rs_extent **pp, *e;
	size_t off;

	len = rs_align(len ? len : 1);
	for (pp = &rs->free_tx; (e = *pp); pp = &e->next) {
		if (e->len < len)
			continue;
		off = e->off;
		e->off += len;
		e->len -= len;
		if (!e->len) {
			*pp = e->next;
			free(e);
		}
		return off;
	}
	return -1;
}

static void rs_tx_free(struct rdmashare *rs, size_t off, size_t len)
{
	struct rs_extent *prev = NULL, *e = rs->free_tx, *n;

	len = rs_align(len ? len : 1);
	while (e && e->off < off) {
		prev = e;
		e = e->next;
	}
	/* Merge with the extent before, after, or both. */
	if (prev && prev->off + prev->len == off) {
		prev->len += len;
		if (e && prev->off + prev->len == e->off) {
			prev->len += e->len;
			prev->next = e->next;
			free(e);
		}
		return;
	}
	if (e && off + len == e->off) {
		e->off = off;
		e->len += len;
		return;
	}
	n = malloc(sizeof(*n));
	if (!n)
		return;		/* the space is lost, not corrupted */
	n->off = off;
	n->len = len;
	n->next = e;
	if (prev)
		prev->next = n;
	else
		rs->free_tx = n;
}

/* ---- ACs with something to read, for rdmashare_recv_any() ---- */

/*
 * @ac got a chunk or its end: at the tail of the ready FIFO, unless it is
 * in it already.  Entries may go stale (rdmashare_recv() read the AC, or it
 * was closed); rdmashare_recv_any() skips those, and those of an AC still in
 * a listener's backlog (its chunks come before its ACCEPT), which
 * rs_new_ac() queues again when it hands the AC out.
 */
static void rs_ready_push(struct rdmashare *rs, unsigned int ac)
{
	struct rs_acst *st = &rs->acs[ac];

	if (st->ready)
		return;
	st->ready = 1;
	st->ready_next = 0;
	if (rs->ready_tail)
		rs->acs[rs->ready_tail].ready_next = ac;
	else
		rs->ready_head = ac;
	rs->ready_tail = ac;
}

static unsigned int rs_ready_pop(struct rdmashare *rs)
{
	unsigned int ac = rs->ready_head;

	if (ac) {
		rs->ready_head = rs->acs[ac].ready_next;
		if (!rs->ready_head)
			rs->ready_tail = 0;
		rs->acs[ac].ready = 0;
	}
	return ac;
}

/* ---- completions ---- */

static void rs_release(struct rdmashare *rs, int ac, struct rs_chunk *c);

static void rs_put_release(struct rdmashare_sqe *sqe, __u32 ac, __u64 addr)
{
	sqe->opcode = RDMASHARE_OP_RELEASE;
	sqe->ac = ac;
	sqe->addr = addr;
	sqe->user_data = RS_UD(RS_UD_RELEASE);
}

/*
 * File one completion; the CQ slot is handed back.  But for -ENOMEM: then
 * the completion stays in the CQ for the next reap, so that neither a
 * chunk and its slot nor an AC's end is lost.
 */
static int rs_file_cqe(struct rdmashare *rs, struct rdmashare_cqe *cqe)
{
	struct rs_acst *st;
	struct rs_chunk *c;
	__u32 ac;

	switch (cqe->type) {
	case RDMASHARE_CQE_RECV:
		st = rs_acst(rs, cqe->ac);
		c = calloc(1, sizeof(*c));
		if (!st || !c) {
			free(c);
			return -ENOMEM;
		}
		c->addr = cqe->addr;
		rs->held++;
		if (st->closing) {
			/* For an AC being closed: nobody will read it. */
			ac = cqe->ac;
			rdmashare_cqe_seen(rs, cqe);
			rs_release(rs, ac, c);
			return 0;
		}
		c->len = cqe->res;
		c->msg_len = cqe->user_data;
		c->more = !!(cqe->flags & RDMASHARE_CQE_F_MORE);
		if (st->tail)
			st->tail->next = c;
		else
			st->head = c;
		st->tail = c;
		rs_ready_push(rs, cqe->ac);
		break;
	case RDMASHARE_CQE_CLOSED:
		st = rs_acst(rs, cqe->ac);
		if (!st)
			return -ENOMEM;
		if (cqe->flags & RDMASHARE_CQE_F_DISCARD) {
			/*
			 * Never ours: give its chunks' slots back, forget
			 * what came for it.  What the application did with a
			 * new AC that has the id already (CLOSE, SHUTDOWN) is
			 * the new AC's, and stays.
			 */
			c = st->head;
			st->head = NULL;
			st->tail = NULL;
			st->closed = 0;
			st->close_res = 0;
			st->eof = 0;
			ac = cqe->ac;
			rdmashare_cqe_seen(rs, cqe);
			while (c) {
				struct rs_chunk *next = c->next;

				rs_release(rs, ac, c);
				c = next;
			}
			return 0;
		}
		/* HALF: the peer shut down; this end still sends. */
		if (cqe->flags & RDMASHARE_CQE_F_HALF) {
			st->eof = 1;
		} else {
			st->closed = 1;
			st->close_res = cqe->res;
		}
		/*
		 * Kept for an AC this end is closing too (its CLOSE's
		 * completion forgets it), in case the CLOSE is not queued
		 * after all (rdmashare_close_ac() failed); but nobody reads it.
		 */
		if (!st->closing)
			rs_ready_push(rs, cqe->ac);
		break;
	case RDMASHARE_CQE_OP:
		if (!(cqe->user_data & RS_UD_LIB))
			break;	/* the application's own operation */
		st = rs_acst(rs, cqe->ac);
		if (RS_UD_KIND(cqe->user_data) != RS_UD_RELEASE)
			rs->waiting--;
		switch (RS_UD_KIND(cqe->user_data)) {
		case RS_UD_CLOSE:
			/*
			 * The id is free again: forget what is left, but for
			 * its place in the ready FIFO (a stale entry).
			 */
			if (st) {
				unsigned int next = st->ready_next;
				int ready = st->ready;

				memset(st, 0, sizeof(*st));
				st->ready_next = next;
				st->ready = ready;
			}
			break;
		case RS_UD_SEND:
			rs_tx_free(rs, (cqe->user_data >> 30) & RS_UD_MAX,
				   cqe->user_data & RS_UD_MAX);
			rs->inflight--;
			/* fall through */
		case RS_UD_SHUT:
			if (cqe->res < 0 && st && !st->send_err)
				st->send_err = cqe->res;
			break;
		}
		break;
	}
	rdmashare_cqe_seen(rs, cqe);
	return 0;
}

/*
 * Before any wait: the chunks of ACs other than @ac (the one being read, or
 * 0) are copied out and their slots given back.  A file's receive slots are
 * shared by its ACs and lent as they receive, so slots held for ACs that
 * nobody reads now could keep what the wait is for (@ac's next chunk, a
 * completion of a SEND that the peer cannot take until this end reads)
 * from ever coming.  As far as the SQ has room for the RELEASEs (the caller
 * submits them); -ENOMEM if a copy fails (its slot stays held).
 */
static int rs_copy_out_others(struct rdmashare *rs, int ac)
{
	struct rdmashare_sqe *sqe;
	struct rs_chunk *c;
	unsigned int i;

	for (i = 1; i < rs->nr_acs && rs->held; i++) {
		if ((int)i == ac)
			continue;
		for (c = rs->acs[i].head; c; c = c->next) {
			if (c->copy)
				continue;
			sqe = rdmashare_get_sqe(rs);
			if (!sqe && rdmashare_submit(rs) >= 0)
				sqe = rdmashare_get_sqe(rs);
			if (!sqe)
				return 0;
			c->copy = malloc(c->len ? c->len : 1);
			if (!c->copy) {
				sqe->opcode = RDMASHARE_OP_NOP;
				sqe->user_data = RS_UD(RS_UD_RELEASE);
				return -ENOMEM;
			}
			memcpy(c->copy, (char *)rs->data + c->addr, c->len);
			rs->held--;
			rs_put_release(sqe, i, c->addr);
		}
	}
	return 0;
}

/*
 * The RELEASEs of the chunks read whose slots could not be given back then
 * (rs_release()), as far as the SQ has room; the caller submits them.
 */
static void rs_queue_owed(struct rdmashare *rs)
{
	struct rdmashare_sqe *sqe;
	struct rs_chunk *c;

	while ((c = rs->owed) && (sqe = rdmashare_get_sqe(rs))) {
		rs->owed = c->next;
		rs_put_release(sqe, c->ac, c->addr);
		free(c);
	}
}

/* Submit the SQ, with the RELEASEs owed that it has room for once it was. */
static int rs_submit(struct rdmashare *rs)
{
	int ret;

	rs_queue_owed(rs);
	ret = rdmashare_submit(rs);
	if (ret < 0 || !rs->owed)
		return ret;
	rs_queue_owed(rs);
	return rdmashare_submit(rs);
}

/* Reap what is there; with @wait, wait for at least one first. */
static int rs_reap(struct rdmashare *rs, int wait, unsigned int timeout_ms)
{
	struct rdmashare_cqe *cqe;
	int ret;

	if (wait && rs->held) {
		ret = rs_copy_out_others(rs, rs->reading);
		if (ret)
			return ret;
	}
	ret = rs_submit(rs);
	if (ret < 0)
		return ret;
	if (wait) {
		ret = rdmashare_wait_cqe(rs, &cqe, timeout_ms);
		if (ret)
			return ret;
	}
	while (!rdmashare_peek_cqe(rs, &cqe)) {
		ret = rs_file_cqe(rs, cqe);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Submit the SQ.  The kernel consumes an SQE only with CQ room for its
 * completion: while it leaves some in the SQ, file the completions that
 * wait (or the next one) and submit again, or a SEND could sit in the SQ
 * while its peer waits for it.  Unless the kernel takes them by itself
 * (RDMASHARE_SETUP_SQ_WAKEUP, with an operation on the wire).
 */
static int rs_push(struct rdmashare *rs)
{
	int ret;

	for (;;) {
		ret = rs_submit(rs);
		if (ret < 0)
			return ret;
		if (rs->sq.tail == rs_smp_load_acquire(rs->sq.khead) ||
		    rs_kernel_takes(rs))
			return 0;
		ret = rs_reap(rs, 1, 0);
		if (ret)
			return ret;
	}
}

/* RELEASEs the library lets gather before it submits them. */
#define RS_RELEASE_BATCH	16

/*
 * After a RELEASE: publish it, but submit only once RS_RELEASE_BATCH
 * entries wait.  Everything that waits for a completion submits first
 * (rs_reap()), and so does every SEND, so a receiver that runs dry gives
 * its slots back at once, and one that keeps up gives them back a batch
 * per system call.
 */
static int rs_push_release(struct rdmashare *rs)
{
	rs_smp_store_release(rs->sq.ktail, rs->sq.tail);
	if (rs->sq.tail - rs_smp_load_acquire(rs->sq.khead) < RS_RELEASE_BATCH)
		return 0;
	return rs_push(rs);
}

/*
 * An SQE in *@sqe, reaping and submitting until one is free: 0, or the
 * error of the reap that failed.
 */
static int rs_sqe(struct rdmashare *rs, struct rdmashare_sqe **sqe)
{
	int ret;

	while (!(*sqe = rdmashare_get_sqe(rs))) {
		ret = rs_reap(rs, 1, 0);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Room for a SEND, CLOSE or SHUTDOWN.  No more of these are outstanding
 * than the kernel takes at once (max_waiting): otherwise one could wait in
 * the SQ, for SENDs that wait for the peer's credits, ahead of the RELEASE
 * that returns the peer its own (struct rdmashare_enter).
 */
static int rs_wait_room(struct rdmashare *rs)
{
	int ret;

	while (rs->max_waiting && rs->waiting >= rs->max_waiting) {
		ret = rs_reap(rs, 1, 0);
		if (ret)
			return ret;
	}
	return 0;
}

/* An SQE for a SEND or SHUTDOWN, counted as waiting: as rs_sqe(). */
static int rs_wait_sqe(struct rdmashare *rs, struct rdmashare_sqe **sqe)
{
	int ret;

	ret = rs_wait_room(rs);
	if (!ret)
		ret = rs_sqe(rs, sqe);
	if (!ret)
		rs->waiting++;
	return ret;
}

/*
 * @ac was just handed out by LISTEN, CONNECT or ACCEPT.  Whatever the
 * kernel said of the id before is in the CQ already: reap it, if there can
 * be any such thing.  If an earlier AC with the same id is still closing
 * here, its CLOSE completion is there (the kernel reuses an id only after
 * it): reap up to it.  So is the DISCARD CLOSED of a backlog AC that had the
 * id, which voids what came for that AC (if nothing of that AC was filed,
 * its completions come in order before the new AC's, and one reap files
 * them all), and the completion of a SEND or SHUTDOWN that named the id
 * while no AC had it (-ENOENT: only while a library operation is
 * outstanding).  Otherwise nothing is reaped: a program that reads the CQ
 * itself keeps its completions.  What this end did with the id before is
 * not the new AC's: its send error and shutdown are forgotten.  What came
 * for the new AC before it was accepted (chunks, a HALF CLOSED) is kept.
 */
static int rs_new_ac(struct rdmashare *rs, int ac)
{
	static const struct rs_acst none;
	struct rs_acst *st;
	int ret;

	st = rs_acst(rs, ac);
	if (rs->waiting || (st && !st->closing && memcmp(st, &none, sizeof(none)))) {
		ret = rs_reap(rs, 0, 0);
		if (ret)
			return ret;
	}
	for (;;) {
		st = rs_acst(rs, ac);
		if (!st)
			return -ENOMEM;
		if (!st->closing)
			break;
		ret = rs_reap(rs, 1, 0);
		if (ret)
			return ret;
	}
	st->send_err = 0;
	st->shut = 0;
	st->open = 1;
	/* What came before the accept is readable from now on. */
	if (st->head || st->closed || st->eof)
		rs_ready_push(rs, ac);
	return ac;
}

/* ---- connection calls ---- */

int rdmashare_listen(struct rdmashare *rs, unsigned int port, unsigned int backlog)
{
	struct rdmashare_listen l = {
		.size = sizeof(l), .port = port, .backlog = backlog,
	};
	int ret;

	ret = rs_ioctl(rs, RDMASHARE_IOC_LISTEN, &l);
	return ret ? ret : rs_new_ac(rs, l.ac);
}

static int rs_addr_in(const struct sockaddr *sa, struct rdmashare_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		a->family = AF_INET;
		a->port = ntohs(in->sin_port);
		memcpy(a->addr, &in->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		a->family = AF_INET6;
		a->port = ntohs(in6->sin6_port);
		memcpy(a->addr, &in6->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

int rdmashare_connect(struct rdmashare *rs, const struct sockaddr *addr,
		      unsigned int timeout_ms)
{
	struct rdmashare_connect c = { .size = sizeof(c), .timeout_ms = timeout_ms };
	int ret;

	ret = rs_addr_in(addr, &c.peer);
	if (ret)
		return ret;
	ret = rs_ioctl(rs, RDMASHARE_IOC_CONNECT, &c);
	if (ret)
		return ret;
	return rs_new_ac(rs, c.ac);
}

/* @a as a sockaddr in @sa, cut to *@len bytes; *@len set to its whole size. */
static void rs_addr_out(const struct rdmashare_addr *a, struct sockaddr *sa, socklen_t *len)
{
	struct sockaddr_storage ss = { .ss_family = a->family };
	struct sockaddr_in6 *in6 = (void *)&ss;
	struct sockaddr_in *in = (void *)&ss;
	socklen_t n;

	if (a->family == AF_INET) {
		in->sin_port = htons(a->port);
		memcpy(&in->sin_addr, a->addr, 4);
		n = sizeof(*in);
	} else {
		in6->sin6_port = htons(a->port);
		memcpy(&in6->sin6_addr, a->addr, 16);
		n = sizeof(*in6);
	}
	memcpy(sa, &ss, n < *len ? n : *len);
	*len = n;
}

int rdmashare_accept_peer(struct rdmashare *rs, int listen_ac, unsigned int timeout_ms,
			  struct sockaddr *peer, socklen_t *peer_len)
{
	struct rdmashare_accept a = {
		.size = sizeof(a), .listen_ac = listen_ac, .timeout_ms = timeout_ms,
	};
	int ret;

	ret = rs_ioctl(rs, RDMASHARE_IOC_ACCEPT, &a);
	if (ret)
		return ret;
	if (peer && peer_len)
		rs_addr_out(&a.peer, peer, peer_len);
	/* Chunks may have come before the accept: they are kept. */
	return rs_new_ac(rs, a.ac);
}

int rdmashare_accept(struct rdmashare *rs, int listen_ac, unsigned int timeout_ms)
{
	return rdmashare_accept_peer(rs, listen_ac, timeout_ms, NULL, NULL);
}

int rdmashare_listen_files(struct rdmashare *rs, unsigned int port, unsigned int backlog)
{
	struct rdmashare_listen l = {
		.size = sizeof(l), .flags = RDMASHARE_LISTEN_FILES, .port = port,
		.backlog = backlog,
	};
	int ret;

	ret = rs_ioctl(rs, RDMASHARE_IOC_LISTEN, &l);
	return ret ? ret : rs_new_ac(rs, l.ac);
}

int rdmashare_accept_file(struct rdmashare *rs, int listen_ac, unsigned int timeout_ms,
			  unsigned int sndbuf, unsigned int flags)
{
	struct rdmashare_accept a = {
		.size = sizeof(a), .flags = RDMASHARE_ACCEPT_FILE, .listen_ac = listen_ac,
		.timeout_ms = timeout_ms, .file = { .flags = flags, .sndbuf = sndbuf },
	};
	int ret;

	/* The AC is the file's alone: not one of this handle's. */
	ret = rs_ioctl(rs, RDMASHARE_IOC_ACCEPT, &a);
	return ret ? ret : a.file.fd;
}

/* CONNECT of an AC file, with the CONNECT flags @how besides. */
static int rs_connect_file(struct rdmashare *rs, const struct sockaddr *addr,
			   unsigned int timeout_ms, unsigned int sndbuf, unsigned int flags,
			   unsigned int how)
{
	struct rdmashare_connect c = {
		.size = sizeof(c), .flags = RDMASHARE_CONNECT_FILE | how,
		.timeout_ms = timeout_ms, .file = { .flags = flags, .sndbuf = sndbuf },
	};
	int ret;

	ret = rs_addr_in(addr, &c.peer);
	if (ret)
		return ret;
	ret = rs_ioctl(rs, RDMASHARE_IOC_CONNECT, &c);
	return ret ? ret : c.file.fd;
}

int rdmashare_connect_file(struct rdmashare *rs, const struct sockaddr *addr,
			   unsigned int timeout_ms, unsigned int sndbuf, unsigned int flags)
{
	return rs_connect_file(rs, addr, timeout_ms, sndbuf, flags, 0);
}

int rdmashare_connect_start(struct rdmashare *rs, const struct sockaddr *addr,
			    unsigned int timeout_ms, unsigned int sndbuf, unsigned int flags)
{
	return rs_connect_file(rs, addr, timeout_ms, sndbuf, flags, RDMASHARE_CONNECT_NONBLOCK);
}

int rdmashare_file_info(int fd, struct rdmashare_file_info *fi, unsigned int flags)
{
	memset(fi, 0, sizeof(*fi));
	fi->size = sizeof(*fi);
	fi->flags = flags;
	return ioctl(fd, RDMASHARE_IOC_FILE_INFO, fi) < 0 ? -errno : 0;
}

int rdmashare_file_error(int fd)
{
	struct rdmashare_file_info fi;
	int ret;

	ret = rdmashare_file_info(fd, &fi, RDMASHARE_INFO_TAKE_ERROR);
	return ret ? ret : fi.error;
}

/* LISTEN of a listening file: its descriptor, or a negative errno. */
static int rs_listen_fd(struct rdmashare_listen *l)
{
	int fd, ret;

	/* Any /dev/rdmashare file makes one; the listening file needs none. */
	fd = open(RDMASHARE_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = ioctl(fd, RDMASHARE_IOC_LISTEN, l) < 0 ? -errno : l->file.fd;
	close(fd);
	return ret;
}

int rdmashare_listen_fd(unsigned int port, unsigned int backlog, unsigned int max_files,
			unsigned int flags)
{
	struct rdmashare_listen l = {
		.size = sizeof(l), .flags = RDMASHARE_LISTEN_FD, .port = port,
		.backlog = backlog, .file = { .flags = flags & ~RDMASHARE_LISTEN_FD_REUSEPORT },
		.max_files = max_files,
	};

	if (flags & RDMASHARE_LISTEN_FD_REUSEPORT)
		l.flags |= RDMASHARE_LISTEN_REUSEPORT;
	return rs_listen_fd(&l);
}

int rdmashare_listen_fd_at(const struct sockaddr *addr, unsigned int backlog,
			   unsigned int max_files, unsigned int flags)
{
	struct rdmashare_listen l = {
		.size = sizeof(l), .flags = RDMASHARE_LISTEN_FD | RDMASHARE_LISTEN_ADDR,
		.backlog = backlog,
		.file = { .flags = flags & ~(RDMASHARE_LISTEN_FD_V6ONLY |
					     RDMASHARE_LISTEN_FD_REUSEPORT) },
		.max_files = max_files,
	};
	int ret;

	if (!addr)
		return -EINVAL;
	ret = rs_addr_in(addr, &l.local);
	if (ret)
		return ret;
	l.port = l.local.port;
	if (flags & RDMASHARE_LISTEN_FD_V6ONLY)
		l.flags |= RDMASHARE_LISTEN_V6ONLY;
	if (flags & RDMASHARE_LISTEN_FD_REUSEPORT)
		l.flags |= RDMASHARE_LISTEN_REUSEPORT;
	/* A module that knows no addresses finds a tail it does not know. */
	ret = rs_listen_fd(&l);
	return ret == -E2BIG ? -EINVAL : ret;
}

int rdmashare_accept_fd(int lfd, struct sockaddr *peer, socklen_t *peer_len,
			unsigned int flags)
{
	struct rdmashare_accept a = {
		.size = sizeof(a), .flags = RDMASHARE_ACCEPT_FILE, .file = { .flags = flags },
	};

	if (ioctl(lfd, RDMASHARE_IOC_ACCEPT, &a) < 0)
		return -errno;
	if (peer && peer_len)
		rs_addr_out(&a.peer, peer, peer_len);
	return a.file.fd;
}

int rdmashare_shutdown_file(int fd)
{
	struct rdmashare_shutdown sh = { .size = sizeof(sh) };

	return ioctl(fd, RDMASHARE_IOC_SHUTDOWN, &sh) < 0 ? -errno : 0;
}

int rdmashare_send(struct rdmashare *rs, int ac, const void *buf, size_t len)
{
	struct rdmashare_sqe *sqe;
	struct rs_acst *st;
	long long off;
	int ret;

	if (len > RS_UD_MAX)
		return -EMSGSIZE;
	/* A failed SEND or a closed AC: the error, not a message into nowhere. */
	st = rs_acst(rs, ac);
	if (!st)
		return -ENOMEM;
	if (st->send_err)
		return st->send_err;
	if (st->closed)
		return st->close_res ? st->close_res : -EPIPE;
	if (st->shut)
		return -EPIPE;
	ret = rs_tx_init(rs);
	if (ret)
		return ret;
	while ((off = rs_tx_alloc(rs, len)) < 0) {
		if (!rs->inflight)
			return -EMSGSIZE;	/* larger than the whole area */
		ret = rs_reap(rs, 1, 0);
		if (ret)
			return ret;
	}
	memcpy((char *)rs->data + off, buf, len);
	ret = rs_wait_sqe(rs, &sqe);
	if (ret) {
		rs_tx_free(rs, off, len);
		return ret;
	}
	sqe->opcode = RDMASHARE_OP_SEND;
	sqe->ac = ac;
	sqe->addr = off;
	sqe->len = len;
	sqe->user_data = RS_UD(RS_UD_SEND) | ((__u64)off << 30) | len;
	rs->inflight++;
	return rs_push(rs);
}

/*
 * Give a chunk's slot back (unless it was copied out), then forget it: a
 * RELEASE, submitted later (rs_push_release()).  Without an SQE (the reap
 * that would free one failed: its error shows in the caller's next wait),
 * the chunk waits in rs->owed, its slot still held, until rs_queue_owed()
 * finds one; the slot is never lost.
 */
static void rs_release(struct rdmashare *rs, int ac, struct rs_chunk *c)
{
	struct rdmashare_sqe *sqe;

	if (!c->copy) {
		rs->held--;
		if (rs_sqe(rs, &sqe)) {
			c->ac = ac;
			c->next = rs->owed;
			rs->owed = c;
			return;
		}
		rs_put_release(sqe, ac, c->addr);
	}
	free(c->copy);
	free(c);
}

/*
 * A wait for the rest of @ac's message failed with @err: what was read of
 * it, @got bytes at @buf (not kept with @drop: the message is too long for
 * this call and is dropped), goes back to the head of the AC as one chunk,
 * so that the next call returns the whole message (or -EMSGSIZE).  @err, or
 * -ENOMEM when the message is lost.
 */
static int rs_unread(struct rdmashare *rs, int ac, const void *buf, size_t got,
		     size_t msg_len, int drop, int err)
{
	struct rs_chunk *c = calloc(1, sizeof(*c));
	struct rs_acst *st = rs_acst(rs, ac);

	if (c)
		c->copy = malloc(got && !drop ? got : 1);
	if (!st || !c || !c->copy) {
		if (c)
			free(c->copy);
		free(c);
		return -ENOMEM;
	}
	if (!drop)
		memcpy(c->copy, buf, got);
	c->len = got;
	c->msg_len = msg_len;
	c->more = 1;
	c->drop = drop;
	c->next = st->head;
	st->head = c;
	if (!st->tail)
		st->tail = c;
	rs_ready_push(rs, ac);
	return err;
}

/*
 * Chunks are copied out and their slots released as they come, so a message
 * larger than the AC's credit window still flows.  A call that gives up in
 * the middle of a message puts back what it read (rs_unread()).
 */
ssize_t rdmashare_recv(struct rdmashare *rs, int ac, void *buf, size_t len,
		       unsigned int timeout_ms)
{
	int more = 1, begun = 0, drop = 0, ret;
	size_t msg_len = 0, got = 0;
	struct rs_acst *st;
	struct rs_chunk *c;

	while (more) {
		st = rs_acst(rs, ac);
		if (!st)
			return -ENOMEM;
		c = st->head;
		if (!c) {
			/* A message cut off by the close is dropped. */
			if (st->closed)
				return st->close_res ? st->close_res : -EPIPE;
			if (st->eof)
				return -EPIPE;
			rs->reading = ac;
			ret = rs_reap(rs, 1, timeout_ms);
			rs->reading = 0;
			if (ret && begun)
				return rs_unread(rs, ac, buf, got, msg_len, drop || msg_len > len,
						 ret);
			if (ret)
				return ret;
			continue;
		}
		st->head = c->next;
		if (!st->head)
			st->tail = NULL;
		begun = 1;
		msg_len = c->msg_len;
		drop |= c->drop;
		if (!drop && got + c->len <= len)
			memcpy((char *)buf + got, c->copy ? c->copy : (char *)rs->data + c->addr,
			       c->len);
		got += c->len;
		more = c->more;
		rs_release(rs, ac, c);
		/* The RELEASEs stay queued: only a message not read whole is at stake. */
		ret = rs_push_release(rs);
		if (ret < 0 && more)
			return rs_unread(rs, ac, buf, got, msg_len, drop || msg_len > len, ret);
	}
	if (msg_len > len || drop)
		return -EMSGSIZE;
	return msg_len;
}

ssize_t rdmashare_recv_any(struct rdmashare *rs, int *ac, void *buf, size_t len,
			   unsigned int timeout_ms)
{
	struct rs_acst *st;
	unsigned int id;
	ssize_t ret;

	if (!ac)
		return -EINVAL;
	for (;;) {
		while ((id = rs_ready_pop(rs))) {
			st = &rs->acs[id];
			/*
			 * Read by rdmashare_recv(), closed by this end: stale;
			 * not accepted yet: not the application's to read.
			 */
			if (!st->open || st->closing || (!st->head && !st->closed && !st->eof))
				continue;
			*ac = id;
			ret = rdmashare_recv(rs, id, buf, len, timeout_ms);
			/*
			 * Behind the others if it has more (its end
			 * included); an end or error is reported once.
			 */
			st = &rs->acs[id];
			if ((ret >= 0 || ret == -EMSGSIZE) &&
			    (st->head || st->closed || st->eof))
				rs_ready_push(rs, id);
			return ret;
		}
		ret = rs_reap(rs, 1, timeout_ms);
		if (ret)
			return ret;
	}
}

int rdmashare_close_ac(struct rdmashare *rs, int ac)
{
	struct rdmashare_sqe *sqe;
	struct rs_chunk *c, *next;
	struct rs_acst *st;
	int ret;

	/* The wait comes first: if it fails, the AC is as it was. */
	ret = rs_wait_room(rs);
	if (ret)
		return ret;
	/*
	 * Unread chunks go back, and so does what comes from now on
	 * (rs_file_cqe()).  The releases may reap, which may move rs->acs.
	 */
	st = rs_acst(rs, ac);
	c = st ? st->head : NULL;
	if (st) {
		st->head = NULL;
		st->tail = NULL;
		st->closing = 1;
	}
	for (; c; c = next) {
		next = c->next;
		rs_release(rs, ac, c);
	}
	/* Queued behind the AC's SENDs; its completion frees the id. */
	ret = rs_sqe(rs, &sqe);
	if (ret) {
		/* Not queued: the AC stays open, its unread messages dropped. */
		st = rs_acst(rs, ac);
		if (st)
			st->closing = 0;
		return ret;
	}
	rs->waiting++;
	sqe->opcode = RDMASHARE_OP_CLOSE;
	sqe->ac = ac;
	sqe->user_data = RS_UD(RS_UD_CLOSE) | (__u32)ac;
	/* An error here leaves the CLOSE queued: the next submission takes it. */
	return rs_push(rs);
}

int rdmashare_ac_stats(struct rdmashare *rs, int ac, struct rdmashare_ac_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	st->ac = ac;
	return rs_ioctl(rs, RDMASHARE_IOC_AC_STATS, st);
}

int rdmashare_shutdown(struct rdmashare *rs, int ac)
{
	struct rdmashare_sqe *sqe;
	struct rs_acst *st;
	int ret;

	st = rs_acst(rs, ac);
	if (!st)
		return -ENOMEM;
	if (st->closed || st->shut || st->closing)
		return -EPIPE;
	/* Queued behind the AC's SENDs, like a CLOSE. */
	ret = rs_wait_sqe(rs, &sqe);
	if (ret)
		return ret;
	sqe->opcode = RDMASHARE_OP_SHUTDOWN;
	sqe->ac = ac;
	sqe->user_data = RS_UD(RS_UD_SHUT) | (__u32)ac;
	/* The wait may have reaped, which may move rs->acs. */
	rs_acst(rs, ac)->shut = 1;
	/* An error here leaves the SHUTDOWN queued: the next submission takes it. */
	return rs_push(rs);
}

int rdmashare_flush(struct rdmashare *rs, unsigned int timeout_ms)
{
	int ret;

	while (rs->inflight) {
		ret = rs_reap(rs, 1, timeout_ms);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- scheduling ---- */

static int rs_ac_set(struct rdmashare *rs, __u32 ac, __u32 flags, __u32 weight,
		     __u32 band)
{
	struct rdmashare_ac_set a = {
		.size = sizeof(a), .flags = flags, .ac = ac, .weight = weight,
		.band = band,
	};

	return rs_ioctl(rs, RDMASHARE_IOC_AC_SET, &a);
}

int rdmashare_set_weight(struct rdmashare *rs, int ac, unsigned int weight)
{
	if (ac < 0)
		return -ENOENT;
	return rs_ac_set(rs, ac, RDMASHARE_AC_SET_WEIGHT, weight, 0);
}

int rdmashare_set_band(struct rdmashare *rs, int ac, unsigned int band)
{
	if (ac < 0)
		return -ENOENT;
	return rs_ac_set(rs, ac, RDMASHARE_AC_SET_BAND, 0, band);
}

int rdmashare_set_app_weight(struct rdmashare *rs, unsigned int weight)
{
	return rs_ac_set(rs, RDMASHARE_AC_FILE, RDMASHARE_AC_SET_WEIGHT, weight, 0);
}
