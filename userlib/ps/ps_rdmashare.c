// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The rdmashare transport: a node's connections are ACs of one rdmashare
 * file (a process runs one node), whose rings libps drives itself through
 * librdmashare's ring calls; the connection calls (listen, connect) are the
 * library's, which reap nothing while none of its own operations is
 * outstanding, so that the CQ stays ours.
 *
 * Sending: the data area's first RSX_RING bytes are a ring that takes
 * copies (headers, small payloads, values from ordinary memory), a SEND
 * per run of them; the rest is a pool of buffers (ps_pool.c) that libps
 * places payloads in (a server's answers, ps_buf_alloc()), sent where they
 * are, with no copy, the SEND holding a reference to its buffer until it
 * completes.  At most max_waiting SENDs and CLOSEs are outstanding, so
 * that a RELEASE always finds its way into the kernel.
 *
 * Receiving: the file's CQ is reaped by whichever call comes first, and
 * each chunk filed by AC; recv() copies from the receive slot into the
 * destination libps picked (the caller's buffer, a worker's row) and gives
 * the slot back.  RELEASEs are gathered and submitted in batches, when an
 * AC runs dry, and before every wait (ready()), never left behind a wait.
 *
 * The ring descriptor is shared by every connection: ready() tells the
 * connection layer who has chunks filed already.  Asked of one connection,
 * it reaps the CQ for all, and the completions it takes no longer raise
 * the descriptor: if it took any, it says true whoever they were for, so
 * that the caller looks at every connection again before it sleeps (else
 * a connection asked before would sleep with its chunks filed).  A
 * listening AC gives no event of its own: an AC in its backlog shows when
 * its first chunk comes (libps's connecting side always speaks first), and
 * ready() on the listener says so.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "rdmashare.h"
#include "ps_int.h"

#define RSX_RING	(4u << 20)	/* copies: the start of the data area */
#define RSX_SEND_MAX	(256u << 10)	/* bytes copied into one SEND at most */
#define RSX_RX_SLOTS	256		/* receive slots of the file */
#define RSX_BATCH	16		/* RELEASEs gathered before a submit */
#define RSX_ACS_MAX	(1u << 20)	/* AC ids are small numbers */
#define RSX_LINGER_MS	5000		/* fini() waits this long at most */

/* user_data of an SQE: the kind in bits 60-63, then a value. */
enum { RSX_UD_RING = 1, RSX_UD_POOL, RSX_UD_RELEASE, RSX_UD_CLOSE };
#define RSX_UD(kind, v)	((uint64_t)(kind) << 60 | (v))
#define RSX_UD_KIND(ud)	((unsigned int)((ud) >> 60))
#define RSX_UD_VAL(ud)	((ud) & ((1ull << 60) - 1))

/* A received chunk in its slot, or (owed) a slot to give back. */
struct rsx_chunk {
	struct rsx_chunk *next;
	uint64_t addr;
	uint32_t len, pos;
	uint32_t ac;
};

/* An AC to close once the file may have another operation outstanding. */
struct rsx_close {
	struct rsx_close *next;
	uint32_t ac;
};

/* What the transport knows of an AC id of the file. */
struct rsx_ac {
	struct rsx_chunk *head, *tail;
	int end;		/* 1: the peer's end; < 0: the AC's error */
	bool claimed;		/* a connection's (else in a backlog, or free) */
	bool closing;		/* CLOSE queued: what comes is given back */
};

/* A SEND of bytes copied into the ring. */
struct rsx_rec {
	uint32_t off, len;
	bool done;
};

struct ps_tr_ctx {
	struct rdmashare *rs;
	char *data;
	struct ps_ring ring;
	struct rsx_rec *recs;		/* a FIFO, as the ring is used */
	unsigned int rec_mask, rec_head, rec_tail;
	struct ps_pool pool;
	unsigned int waiting, max_waiting;
	unsigned int filled;		/* SQEs filled in and not taken */
	struct rsx_chunk *owed, **owed_tail;
	unsigned int nowed;
	struct rsx_close *closes, **closes_tail;
	struct rsx_ac *acs;
	unsigned int nacs;
	unsigned long tx_gen;		/* bumped as SENDs complete */
	unsigned long reaped;		/* completions reaped, all told */
};

struct ps_tr_conn {
	struct ps_tr_ctx *x;
	uint32_t ac;
	bool listener;
	struct sockaddr_storage addr;	/* the listener's, or the peer's */
	unsigned long blocked;		/* tx_gen + 1 when a send found no room */
};

static struct rsx_ac *rsx_acst(struct ps_tr_ctx *x, uint32_t ac)
{
	struct rsx_ac *n;
	unsigned int want;

	if (ac < x->nacs)
		return &x->acs[ac];
	if (ac >= RSX_ACS_MAX)
		return NULL;
	for (want = x->nacs ? x->nacs : 64; want <= ac; want *= 2)
		;
	n = realloc(x->acs, want * sizeof(*n));
	if (!n)
		return NULL;
	memset(n + x->nacs, 0, (want - x->nacs) * sizeof(*n));
	x->acs = n;
	x->nacs = want;
	return &x->acs[ac];
}

/* @c's slot is to be given back (with the next submission). */
static void rsx_owe(struct ps_tr_ctx *x, struct rsx_chunk *c)
{
	c->next = NULL;
	*x->owed_tail = c;
	x->owed_tail = &c->next;
	x->nowed++;
}

/* An AC's chunks all go back; it is forgotten but for @closing. */
static void rsx_forget(struct ps_tr_ctx *x, struct rsx_ac *st, bool closing)
{
	struct rsx_chunk *c = st->head, *next;

	for (; c; c = next) {
		next = c->next;
		rsx_owe(x, c);
	}
	memset(st, 0, sizeof(*st));
	st->closing = closing;
}

static void rsx_sent(struct ps_tr_ctx *x, const struct rdmashare_cqe *cqe)
{
	struct rsx_ac *st = rsx_acst(x, cqe->ac);

	x->waiting--;
	x->tx_gen++;
	if (cqe->res < 0 && st && !st->closing && st->end >= 0)
		st->end = cqe->res;
}

/* File one completion; -ENOMEM leaves it in the CQ for later. */
static int rsx_cqe(struct ps_tr_ctx *x, const struct rdmashare_cqe *cqe)
{
	struct rsx_ac *st = rsx_acst(x, cqe->ac);
	struct rsx_chunk *c;
	struct rsx_rec *r;

	switch (cqe->type) {
	case RDMASHARE_CQE_RECV:
		c = malloc(sizeof(*c));
		if (!st || !c) {
			free(c);
			return -ENOMEM;
		}
		*c = (struct rsx_chunk){ .addr = cqe->addr, .len = cqe->res, .ac = cqe->ac };
		if (st->closing) {
			rsx_owe(x, c);
			break;
		}
		if (st->tail)
			st->tail->next = c;
		else
			st->head = c;
		st->tail = c;
		break;
	case RDMASHARE_CQE_CLOSED:
		if (!st)
			return -ENOMEM;
		if (cqe->flags & RDMASHARE_CQE_F_DISCARD)
			rsx_forget(x, st, false);
		else if (cqe->res < 0)
			st->end = cqe->res;
		else if (!st->end)
			st->end = 1;
		break;
	case RDMASHARE_CQE_OP:
		switch (RSX_UD_KIND(cqe->user_data)) {
		case RSX_UD_RING:
			r = &x->recs[RSX_UD_VAL(cqe->user_data) & x->rec_mask];
			r->done = true;
			while (x->rec_head != x->rec_tail &&
			       (r = &x->recs[x->rec_head & x->rec_mask])->done) {
				ps_ring_free(&x->ring, r->off, r->len);
				x->rec_head++;
			}
			rsx_sent(x, cqe);
			break;
		case RSX_UD_POOL:
			ps_pool_put(&x->pool, x->data + RSX_UD_VAL(cqe->user_data));
			rsx_sent(x, cqe);
			break;
		case RSX_UD_CLOSE:
			/* The id is free again. */
			x->waiting--;
			if (st)
				rsx_forget(x, st, false);
			break;
		}
		break;
	}
	return 0;
}

/* File what the CQ holds; the number of completions. */
static unsigned int rsx_reap(struct ps_tr_ctx *x)
{
	struct rdmashare_cqe *cqe;
	unsigned int n = 0;

	while (!rdmashare_peek_cqe(x->rs, &cqe) && !rsx_cqe(x, cqe)) {
		rdmashare_cqe_seen(x->rs, cqe);
		n++;
	}
	x->reaped += n;
	return n;
}

static struct rdmashare_sqe *rsx_get_sqe(struct ps_tr_ctx *x)
{
	struct rdmashare_sqe *sqe = rdmashare_get_sqe(x->rs);

	if (sqe)
		x->filled++;
	return sqe;
}

/* The RELEASEs owed, then the CLOSEs that may go, as the SQ has room. */
static void rsx_queue_owed(struct ps_tr_ctx *x)
{
	struct rdmashare_sqe *sqe;
	struct rsx_chunk *c;
	struct rsx_close *cl;

	while ((c = x->owed) && (sqe = rsx_get_sqe(x))) {
		sqe->opcode = RDMASHARE_OP_RELEASE;
		sqe->ac = c->ac;
		sqe->addr = c->addr;
		sqe->user_data = RSX_UD(RSX_UD_RELEASE, 0);
		x->owed = c->next;
		if (!x->owed)
			x->owed_tail = &x->owed;
		x->nowed--;
		free(c);
	}
	while ((cl = x->closes) && x->waiting < x->max_waiting && (sqe = rsx_get_sqe(x))) {
		sqe->opcode = RDMASHARE_OP_CLOSE;
		sqe->ac = cl->ac;
		sqe->user_data = RSX_UD(RSX_UD_CLOSE, cl->ac);
		x->waiting++;
		x->closes = cl->next;
		if (!x->closes)
			x->closes_tail = &x->closes;
		free(cl);
	}
}

/*
 * Hand the kernel what is queued.  It takes an SQE only with CQ room for
 * its completion: reap and go on while that lets it take more.
 */
static int rsx_submit(struct ps_tr_ctx *x)
{
	int ret;

	for (;;) {
		rsx_queue_owed(x);
		if (!x->filled)
			return 0;
		ret = rdmashare_submit(x->rs);
		if (ret < 0)
			return ret;
		x->filled -= ret;
		if (!rsx_reap(x) && !ret)
			return 0;
		if (!x->filled && !x->owed && (!x->closes || x->waiting >= x->max_waiting))
			return 0;
	}
}

static int rsx_open(size_t pool_size, struct ps_tr_ctx **out)
{
	struct rdmashare_setup p;
	struct ps_tr_ctx *x;
	unsigned int n;
	int ret;

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->owed_tail = &x->owed;
	x->closes_tail = &x->closes;
	ret = rdmashare_open(&x->rs, 0);
	if (ret)
		goto out_free;
	pool_size = (pool_size + PS_POOL_PAGE - 1) & ~(size_t)(PS_POOL_PAGE - 1);
	/* Less pool, down to none, while the memory is not to be had. */
	for (;;) {
		memset(&p, 0, sizeof(p));
		p.data_size = RSX_RING + pool_size;
		p.rx_slots = RSX_RX_SLOTS;
		ret = rdmashare_setup(x->rs, &p);
		if (ret != -ENOMEM || !pool_size)
			break;
		pool_size = pool_size / 2 & ~(size_t)(PS_POOL_PAGE - 1);
	}
	if (ret)
		goto out_close;
	x->data = rdmashare_data(x->rs, NULL);
	x->ring.size = RSX_RING;
	x->max_waiting = p.max_waiting ? p.max_waiting : p.sq_entries;
	for (n = 1; n < x->max_waiting; n *= 2)
		;
	x->recs = calloc(n, sizeof(*x->recs));
	x->rec_mask = n - 1;
	ret = -ENOMEM;
	if (!x->recs)
		goto out_close;
	ret = ps_pool_init(&x->pool, x->data + RSX_RING, p.data_size - RSX_RING);
	if (ret)
		goto out_close;
	*out = x;
	return 0;

out_close:
	free(x->recs);
	rdmashare_close(x->rs);
out_free:
	free(x);
	return ret;
}

static void rsx_fini(struct ps_tr_ctx *x, int timeout_ms)
{
	int64_t deadline = ps_now_ms() + (timeout_ms < RSX_LINGER_MS ? timeout_ms : RSX_LINGER_MS);
	struct rdmashare_cqe *cqe;
	struct rsx_close *cl;
	unsigned int i;
	int left;

	/*
	 * What was sent goes out before the file's close ends its ACs.  A
	 * completion stays in the CQ until it is reaped (rdmashare_wait_cqe()
	 * returns at once while one is there): reap what came, wait only when
	 * nothing did, and give up on a completion that cannot be filed.
	 */
	while (!rsx_submit(x) && (x->waiting || x->closes) && (left = ps_left_ms(deadline))) {
		if (rsx_reap(x))
			continue;
		if (rdmashare_wait_cqe(x->rs, &cqe, left) || !rsx_reap(x))
			break;
	}
	rdmashare_close(x->rs);
	for (i = 0; i < x->nacs; i++)
		rsx_forget(x, &x->acs[i], false);
	while (x->owed) {
		struct rsx_chunk *next = x->owed->next;

		free(x->owed);
		x->owed = next;
	}
	while ((cl = x->closes)) {
		x->closes = cl->next;
		free(cl);
	}
	ps_pool_fini(&x->pool);
	free(x->recs);
	free(x->acs);
	free(x);
}

static int rsx_new(struct ps_tr_ctx *x, uint32_t ac, bool listener, const struct sockaddr *sa,
		   socklen_t len, struct ps_tr_conn **out)
{
	struct ps_tr_conn *c = calloc(1, sizeof(*c));
	struct rsx_ac *st;

	/* What the kernel said of the id before it was this AC's is in the CQ. */
	rsx_reap(x);
	st = rsx_acst(x, ac);
	if (!c || !st) {
		free(c);
		return -ENOMEM;
	}
	st->claimed = true;
	c->x = x;
	c->ac = ac;
	c->listener = listener;
	if (sa)
		memcpy(&c->addr, sa, len < sizeof(c->addr) ? len : sizeof(c->addr));
	*out = c;
	return 0;
}

static uint16_t sa_port(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port :
						 ((const struct sockaddr_in *)sa)->sin_port);
}

static void sa_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

/*
 * rdmashare listens on service ports of every address.  Port 0 asks for
 * any: the first free one from a place that differs by process.
 */
static int rsx_listen(struct ps_tr_ctx *x, const struct sockaddr *sa, socklen_t len,
		      struct ps_tr_conn **out)
{
	unsigned int port = sa_port(sa), tries = port ? 1 : 1000, i;
	int ac = -EINVAL, ret;

	for (i = 0; i < tries; i++) {
		if (tries > 1)
			port = 20000 + (getpid() * 7 + i) % 40000;
		ac = rdmashare_listen(x->rs, port, 256);
		if (ac != -EADDRINUSE)
			break;
	}
	if (ac < 0)
		return ac;
	ret = rsx_new(x, ac, true, sa, len, out);
	if (ret)
		return ret;
	sa_set_port(&(*out)->addr, port);
	return 0;
}

static int rsx_connect(struct ps_tr_ctx *x, const struct sockaddr *sa, socklen_t len,
		       int timeout_ms, struct ps_tr_conn **out)
{
	int ac = rdmashare_connect(x->rs, sa, timeout_ms > 0 ? timeout_ms : 1);

	return ac < 0 ? ac : rsx_new(x, ac, false, sa, len, out);
}

static int rsx_accept(struct ps_tr_conn *l, struct ps_tr_conn **out)
{
	struct rdmashare_accept a = {
		.size = sizeof(a), .flags = RDMASHARE_ACCEPT_NONBLOCK, .listen_ac = l->ac,
	};

	/* librdmashare's accept waits at least a millisecond: the ioctl does not. */
	if (ioctl(rdmashare_fd(l->x->rs), RDMASHARE_IOC_ACCEPT, &a) < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return rsx_new(l->x, a.ac, false, NULL, 0, out);
}

/* Ring bytes for a SEND of @len; its record's index, or -1 for no room. */
static long long rsx_ring_alloc(struct ps_tr_ctx *x, uint32_t len)
{
	long long off = ps_ring_alloc(&x->ring, (len + 63) & ~63u);

	if (off < 0)
		return -1;
	x->recs[x->rec_tail & x->rec_mask] = (struct rsx_rec){
		.off = off, .len = (len + 63) & ~63u,
	};
	return x->rec_tail++;
}

/* Copy @n bytes of @iov, from piece @i at @off on, to @dst. */
static void iov_copy(char *dst, const struct iovec *iov, int i, size_t off, size_t n)
{
	size_t k;

	for (; n; i++, off = 0) {
		k = iov[i].iov_len - off;
		if (k > n)
			k = n;
		memcpy(dst, (const char *)iov[i].iov_base + off, k);
		dst += k;
		n -= k;
	}
}

/* Bytes from piece @i at @off on, up to the first piece in the pool, at most @max. */
static size_t iov_plain(struct ps_tr_ctx *x, const struct iovec *iov, int cnt, int i, size_t off,
			size_t max)
{
	size_t n = 0;

	for (; i < cnt && n < max; i++, off = 0) {
		if (iov[i].iov_len > off &&
		    ps_pool_has(&x->pool, (const char *)iov[i].iov_base + off))
			break;
		n += iov[i].iov_len - off;
	}
	return n < max ? n : max;
}

static ssize_t rsx_sendv(struct ps_tr_conn *c, const struct iovec *iov, int cnt)
{
	struct ps_tr_ctx *x = c->x;
	struct rdmashare_sqe *sqe;
	size_t total = 0, off = 0, n;
	uint32_t tail;
	long long rec;
	const char *p;
	uint64_t ud;
	int i = 0, end;

	rsx_reap(x);
	end = x->acs[c->ac].end;
	if (end < 0)
		return end;
	if (end > 0)
		return -EPIPE;
	while (i < cnt && x->waiting < x->max_waiting) {
		if (off == iov[i].iov_len) {
			i++;
			off = 0;
			continue;
		}
		p = (const char *)iov[i].iov_base + off;
		tail = x->ring.tail;
		rec = -1;
		if (ps_pool_has(&x->pool, p)) {
			/* In the pool: sent from where it is. */
			n = iov[i].iov_len - off;
			ud = RSX_UD(RSX_UD_POOL, p - x->data);
		} else {
			n = iov_plain(x, iov, cnt, i, off, RSX_SEND_MAX);
			rec = rsx_ring_alloc(x, n);
			if (rec < 0 && n > 4096)
				rec = rsx_ring_alloc(x, n = 4096);
			if (rec < 0)
				break;
			ud = RSX_UD(RSX_UD_RING, rec);
		}
		sqe = rsx_get_sqe(x);
		if (!sqe && !rsx_submit(x))
			sqe = rsx_get_sqe(x);
		if (!sqe) {
			/* Not a copy of the ring: rsx_submit() may have freed some of it. */
			if (rec >= 0) {
				x->rec_tail--;
				ps_ring_unalloc(&x->ring, tail);
			}
			break;
		}
		sqe->opcode = RDMASHARE_OP_SEND;
		sqe->ac = c->ac;
		sqe->len = n;
		sqe->user_data = ud;
		if (rec >= 0) {
			sqe->addr = x->recs[rec & x->rec_mask].off;
			iov_copy(x->data + sqe->addr, iov, i, off, n);
		} else {
			sqe->addr = p - x->data;
			ps_pool_get(&x->pool, p);
		}
		x->waiting++;
		total += n;
		/* On past the bytes sent. */
		while (n) {
			size_t k = iov[i].iov_len - off;

			if (!k) {
				i++;
				off = 0;
				continue;
			}
			k = k < n ? k : n;
			off += k;
			n -= k;
		}
	}
	rsx_submit(x);
	if (!total) {
		c->blocked = x->tx_gen + 1;
		return -EAGAIN;
	}
	c->blocked = 0;
	return total;
}

static ssize_t rsx_recv(struct ps_tr_conn *c, void *buf, size_t len)
{
	struct ps_tr_ctx *x = c->x;
	struct rsx_chunk *ch;
	struct rsx_ac *st;
	size_t got = 0, n;

	rsx_reap(x);
	st = &x->acs[c->ac];
	while (got < len && (ch = st->head)) {
		n = ch->len - ch->pos < len - got ? ch->len - ch->pos : len - got;
		memcpy((char *)buf + got, x->data + ch->addr + ch->pos, n);
		ch->pos += n;
		got += n;
		if (ch->pos < ch->len)
			break;
		st->head = ch->next;
		if (!st->head)
			st->tail = NULL;
		rsx_owe(x, ch);
	}
	/* Slots go back a batch at a time, and all once the AC ran dry. */
	if (x->nowed >= RSX_BATCH || (!st->head && x->nowed)) {
		rsx_submit(x);
		st = &x->acs[c->ac];
	}
	if (got)
		return got;
	if (st->end)
		return st->end < 0 ? st->end : 0;
	return -EAGAIN;
}

static int rsx_poll_fd(struct ps_tr_conn *c)
{
	return rdmashare_fd(c->x->rs);
}

/* Completions, of receives and of sends alike, are what there is to wait for. */
static short rsx_poll_events(struct ps_tr_conn *c __attribute__((unused)),
			     bool sending __attribute__((unused)))
{
	return POLLIN;
}

static bool rsx_ready(struct ps_tr_conn *c)
{
	struct ps_tr_ctx *x = c->x;
	unsigned long reaped = x->reaped;
	struct rsx_ac *st;
	unsigned int i;

	rsx_reap(x);
	rsx_submit(x);
	/* Taken off the descriptor: maybe for a connection asked before. */
	if (x->reaped != reaped)
		return true;
	if (c->listener) {
		for (i = 0; i < x->nacs; i++) {
			st = &x->acs[i];
			if (!st->claimed && !st->closing && (st->head || st->end))
				return true;
		}
		return false;
	}
	st = &x->acs[c->ac];
	return st->head || st->end || (c->blocked && c->blocked != x->tx_gen + 1);
}

/*
 * The listener's address and port; a connection's, the address this host
 * reaches its peer from (the route's source: rdma_cm's is the same).
 */
static int rsx_local_addr(struct ps_tr_conn *c, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);
	int fd, ret = 0;

	if (c->listener) {
		*ss = c->addr;
		return 0;
	}
	fd = socket(c->addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&c->addr, ps_addr_len(&c->addr)) ||
	    getsockname(fd, (struct sockaddr *)ss, &len))
		ret = -errno;
	close(fd);
	return ret;
}

/* CLOSE goes after the AC's SENDs; what came and comes is given back. */
static void rsx_close(struct ps_tr_conn *c)
{
	struct ps_tr_ctx *x = c->x;
	struct rsx_close *cl = malloc(sizeof(*cl));

	rsx_forget(x, &x->acs[c->ac], true);
	if (cl) {
		cl->ac = c->ac;
		cl->next = NULL;
		*x->closes_tail = cl;
		x->closes_tail = &cl->next;
	}
	rsx_submit(x);
	free(c);
}

static void *rsx_buf_alloc(struct ps_tr_ctx *x, size_t len)
{
	return ps_pool_alloc(&x->pool, len);
}

static bool rsx_buf_put(struct ps_tr_ctx *x, void *p)
{
	return ps_pool_put_own(&x->pool, p);
}

const struct ps_transport ps_rdmashare = {
	.name = "rdmashare",
	.open = rsx_open,
	.fini = rsx_fini,
	.listen = rsx_listen,
	.connect = rsx_connect,
	.accept = rsx_accept,
	.sendv = rsx_sendv,
	.recv = rsx_recv,
	.poll_fd = rsx_poll_fd,
	.poll_events = rsx_poll_events,
	.ready = rsx_ready,
	.local_addr = rsx_local_addr,
	.close = rsx_close,
	.buf_alloc = rsx_buf_alloc,
	.buf_put = rsx_buf_put,
};
