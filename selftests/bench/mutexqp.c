// SPDX-License-Identifier: GPL-2.0
/*
 * mutexqp: the user-space baseline rdmashare is compared against.
 *
 * N sender threads stream IBV_WR_SEND messages to one server over rxe:
 *
 *   -m mutex  ONE RC QP (one send CQ) shared by all threads; every
 *             ibv_post_send() and every ibv_poll_cq() on the send CQ is done
 *             under one pthread mutex, FaRM style.  Whoever polls dispatches
 *             the completions to their owners (wr_id carries the sender).
 *   -m qp     one RC QP with its own CQs per thread, no shared lock.
 *
 * Every message starts with a struct mq_hdr (sender id, sequence, length,
 * flags).  Each sender keeps at most -d DEPTH signaled sends outstanding
 * from a registered buffer of DEPTH slots.  Optionally (-P) one more thread
 * does ping-pongs (send, wait for the server's echo) on the same QP (mutex
 * mode) or on its own QP (qp mode) while the bulk threads stream, and prints
 * p50/p99 round-trip times.  At the end the client sends an END control
 * message; the server then prints its counts and echoes END back.
 *
 * The server counts bytes per sender.  The shares are counted over a window
 * in which all bulk senders are backlogged: it opens when every sender has
 * delivered one message (that message is not counted) and closes when the
 * first sender's last message arrives (counted) or, with -B, once the window
 * holds that many bytes.  Bytes are whole messages, header included.
 *
 * Flow control: credits, so that the server never runs out of posted
 * receives.  ("Enough receives" alone is not enough: a send completes when
 * it is acked, not when the server has reposted its receive, so a server
 * that sleeps a moment gets more than DEPTH messages per thread; an RNR NAK
 * then costs rdma_cm's default RNR timer, 655 ms.)  The server posts R
 * receives per QP (2 * DEPTH * threads on the QP + 8, capped by --recv-mem)
 * and tells R in the accept's private data.  The client registers one
 * 64-bit word per QP and sends its address in the connect's private data;
 * the server RDMA-WRITEs its running count of posted receives there, every
 * R/4 reposts (no receive, no completion on the client).  A client may send
 * on a QP while its sends there are fewer than that count; it checks under
 * the same lock as the post.  rnr_retry_count is 7 (retry forever) all the
 * same, as a safety net; rxe's hw_counters (rcvd_rnr_err) show whether it
 * ever fired.
 *
 * Waiting (-w): "event" (default) polls for --spin-us (default 50) and then
 * blocks on a completion channel, which keeps the 2-vCPU TCG guests usable;
 * "poll" busy-polls (sched_yield() between empty polls), as FaRM does on
 * real hardware.  In mutex mode one thread at a time sleeps on the shared
 * send CQ's channel; the others sleep on their own condition variable and
 * are woken by whoever reaps their completions.
 *
 * Output is machine readable, one record per line, "key value" pairs; see
 * print_results() (server) and client_report() (client).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define MQ_MAGIC	0x4d515031u	/* "MQP1" */
#define MQ_HELLO_MAGIC	0x4d514831u	/* "MQH1" */
#define MQ_PORT		"18620"
#define MQ_MAX_SENDERS	4096
#define MQ_CLIENT_RECVS	16		/* echo receives per client QP */
#define MQ_ECHO_SLOTS	16		/* echo sends per server QP */
#define MQ_POLL_BATCH	32
#define MQ_TAG_SEND	(1ULL << 63)	/* server wr_id: a send, not a recv */
#define MQ_TAG_CREDIT	(1ULL << 62)	/* server wr_id: a credit write */

enum {
	MQ_F_DATA = 1,
	MQ_F_LAST = 2,	/* a sender's last data message */
	MQ_F_PING = 4,	/* echo me */
	MQ_F_END = 8,	/* end of the run; seq = data messages sent */
};

/* At the start of every message. */
struct mq_hdr {
	uint32_t magic;
	uint16_t sender;
	uint16_t flags;
	uint32_t len;		/* whole message, header included */
	uint32_t rsvd;
	uint64_t seq;
	uint64_t ts;
};

/* rdma_cm private data of every connection request (RC: 56 bytes max). */
struct mq_hello {
	uint32_t magic;
	uint32_t session;
	uint64_t credit_addr;	/* the client's credit word, */
	uint32_t credit_rkey;	/* remote-writable */
	uint16_t conn;		/* this connection's index ... */
	uint16_t nconns;	/* ... of this many in the session */
	uint16_t senders;	/* threads using this QP (bulk, ping, control) */
	uint16_t bulk;		/* bulk senders in the whole session */
	uint32_t depth;
	uint32_t len;		/* receive buffer size needed */
	uint8_t mode;		/* 0 qp, 1 mutex */
	uint8_t pad[3];
};

/* rdma_cm private data of the accept. */
struct mq_accept {
	uint32_t magic;
	uint32_t nrecv;		/* receives posted: the initial credits */
};

enum wait_mode { WAIT_EVENT, WAIT_POLL };

static enum wait_mode wait_mode = WAIT_EVENT;
static double spin_s = 50e-6;	/* event mode: poll this long before sleeping */
static int verbose;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "mutexqp: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("pause");
#endif
}

static void *xzalloc(size_t n)
{
	void *p = calloc(1, n);

	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

static void *xbuf(size_t n)
{
	void *p;

	if (posix_memalign(&p, 4096, n ? n : 1))
		die("out of memory (%zu bytes)", n);
	memset(p, 0, n);
	return p;
}

static struct ibv_mr *xreg(struct ibv_pd *pd, void *p, size_t n)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, p, n, IBV_ACCESS_LOCAL_WRITE);

	if (!mr)
		die("ibv_reg_mr(%zu bytes): %s", n, strerror(errno));
	return mr;
}

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr, char *base,
		      size_t slot_size, unsigned int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(base + (size_t)slot * slot_size),
		.length = slot_size,
		.lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = slot,
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;
	int err = ibv_post_recv(qp, &wr, &bad);

	if (err)
		die("ibv_post_recv: %s", strerror(err));
}

static struct rdma_cm_event *cm_wait(struct rdma_event_channel *ch,
				     enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event: %s", strerror(errno));
	if (ev->event != want)
		die("rdma_cm: got %s (status %d), expected %s",
		    rdma_event_str(ev->event), ev->status,
		    rdma_event_str(want));
	return ev;
}

/* ------------------------------------------------------------------------
 * Server
 */

struct sconn {
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *rmr, *emr, *cmr;
	char *rbuf, *ebuf;
	uint64_t *cbuf;		/* credit write sources, a ring */
	size_t rslot;
	unsigned int nrecv;
	unsigned int echo_next, echo_out;
	unsigned int credit_next, credit_out;
	uint64_t posted, advertised;	/* receives posted, credits given */
	struct mq_hello hello;
	struct sconn *next;
};

struct sstat {
	uint64_t run_bytes, run_msgs;
	uint64_t win_bytes, win_msgs;
	bool seen, done;
};

struct session {
	bool active, printed;
	uint32_t id;
	unsigned int nconns, bulk;
	struct mq_hello h0;
	struct sstat *st;
	unsigned int nseen;
	int win;		/* 0 waiting, 1 open, 2 closed */
	bool win_valid;
	double t_first, t_last, t_win0, t_win1;
	uint64_t run_bytes, run_msgs, win_bytes, win_msgs, pings;
	bool end_seen;
	uint64_t end_expected;
	struct sconn *end_conn;
	struct mq_hdr end_hdr;
};

static struct {
	struct rdma_event_channel *cm;
	struct rdma_cm_id *listen;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct sconn *conns;
	struct session s;
	uint64_t win_target;
	size_t recv_mem;
	bool once;
	unsigned int sessions;
} srv;

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		die("fcntl: %s", strerror(errno));
}

static void session_reset(void)
{
	struct sstat *st = srv.s.st;

	memset(&srv.s, 0, sizeof(srv.s));
	if (!st)
		st = xzalloc(MQ_MAX_SENDERS * sizeof(*st));
	memset(st, 0, MQ_MAX_SENDERS * sizeof(*st));
	srv.s.st = st;
}

static double jain(const uint64_t *x, unsigned int n)
{
	double sum = 0, sq = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		sum += (double)x[i];
		sq += (double)x[i] * (double)x[i];
	}
	return sq > 0 ? sum * sum / (n * sq) : 0;
}

/*
 * The server's report, one record per line:
 *   result session S mode M conns C senders N len L depth D
 *   sender ID bytes B msgs M          window counts: the shares
 *   sender_run ID bytes B msgs M      the whole run
 *   window valid V bytes B msgs M elapsed_s T MBps X msgps X jain J
 *   total bytes B msgs M elapsed_s T MBps X msgps X pings P
 *   end
 * MBps is 10^6 bytes/s.  total covers the first to the last data message.
 */
static void print_results(void)
{
	struct session *s = &srv.s;
	uint64_t *wb = xzalloc((s->bulk + 1) * sizeof(*wb));
	double wt = s->t_win1 - s->t_win0, rt = s->t_last - s->t_first;
	unsigned int i;

	printf("result session %u mode %s conns %u senders %u len %u depth %u\n",
	       s->id, s->h0.mode ? "mutex" : "qp", s->nconns, s->bulk,
	       s->h0.len, s->h0.depth);
	for (i = 0; i < s->bulk; i++) {
		printf("sender %u bytes %" PRIu64 " msgs %" PRIu64 "\n", i,
		       s->st[i].win_bytes, s->st[i].win_msgs);
		wb[i] = s->st[i].win_bytes;
	}
	for (i = 0; i < s->bulk; i++)
		printf("sender_run %u bytes %" PRIu64 " msgs %" PRIu64 "\n", i,
		       s->st[i].run_bytes, s->st[i].run_msgs);
	if (wt <= 0)
		wt = 0;
	printf("window valid %d bytes %" PRIu64 " msgs %" PRIu64
	       " elapsed_s %.6f MBps %.3f msgps %.1f jain %.4f\n",
	       s->win_valid, s->win_bytes, s->win_msgs, wt,
	       wt > 0 ? s->win_bytes / wt / 1e6 : 0,
	       wt > 0 ? s->win_msgs / wt : 0, s->bulk ? jain(wb, s->bulk) : 0);
	if (rt <= 0)
		rt = 0;
	printf("total bytes %" PRIu64 " msgs %" PRIu64
	       " elapsed_s %.6f MBps %.3f msgps %.1f pings %" PRIu64 "\n",
	       s->run_bytes, s->run_msgs, rt, rt > 0 ? s->run_bytes / rt / 1e6 : 0,
	       rt > 0 ? s->run_msgs / rt : 0, s->pings);
	printf("end\n");
	fflush(stdout);
	free(wb);
}

static void server_echo(struct sconn *c, const void *msg, size_t len)
{
	struct ibv_send_wr wr = {
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_sge sge = { .length = len, .lkey = c->emr->lkey };
	unsigned int slot;
	char *p;
	int err;

	if (c->echo_out >= MQ_ECHO_SLOTS) {
		fprintf(stderr, "mutexqp: server: echo slots full, dropped\n");
		return;
	}
	slot = c->echo_next++ % MQ_ECHO_SLOTS;
	p = c->ebuf + (size_t)slot * c->rslot;
	memcpy(p, msg, len);
	sge.addr = (uintptr_t)p;
	wr.wr_id = MQ_TAG_SEND | slot;
	wr.sg_list = &sge;
	err = ibv_post_send(c->qp, &wr, &bad);
	if (err) {
		fprintf(stderr, "mutexqp: server: echo post_send: %s\n",
			strerror(err));
		return;
	}
	c->echo_out++;
}

static void account(unsigned int id, uint32_t len, uint16_t flags, double t)
{
	struct session *s = &srv.s;
	struct sstat *st = &s->st[id];

	if (!s->run_msgs)
		s->t_first = t;
	s->t_last = t;
	s->run_bytes += len;
	s->run_msgs++;
	st->run_bytes += len;
	st->run_msgs++;

	if (!st->seen) {
		st->seen = true;
		if (++s->nseen == s->bulk && !s->win) {
			/* Everybody is backlogged from now on. */
			s->win = 1;
			s->win_valid = true;
			s->t_win0 = t;
		}
	} else if (s->win == 1) {
		st->win_bytes += len;
		st->win_msgs++;
		s->win_bytes += len;
		s->win_msgs++;
		s->t_win1 = t;
		if ((flags & MQ_F_LAST) ||
		    (srv.win_target && s->win_bytes >= srv.win_target))
			s->win = 2;
	}
	if ((flags & MQ_F_LAST) && !st->done) {
		st->done = true;
		/* Somebody finished before all had started: no valid window. */
		if (!s->win) {
			s->win = 2;
			s->win_valid = false;
		}
	}
}

static void server_maybe_finish(void)
{
	struct session *s = &srv.s;

	if (!s->end_seen || s->printed || s->run_msgs < s->end_expected)
		return;
	if (s->run_msgs > s->end_expected)
		fprintf(stderr, "mutexqp: server: %" PRIu64
			" data messages, client says %" PRIu64 "\n",
			s->run_msgs, s->end_expected);
	print_results();
	s->printed = true;
	server_echo(s->end_conn, &s->end_hdr, sizeof(s->end_hdr));
}

static void server_recv(struct sconn *c, struct ibv_wc *wc)
{
	unsigned int slot = wc->wr_id;
	struct mq_hdr *h = (void *)(c->rbuf + (size_t)slot * c->rslot);
	struct session *s = &srv.s;

	if (wc->byte_len < sizeof(*h) || h->magic != MQ_MAGIC ||
	    h->len != wc->byte_len) {
		fprintf(stderr, "mutexqp: server: bad message (%u bytes)\n",
			wc->byte_len);
	} else if (h->flags & MQ_F_PING) {
		s->pings++;
		server_echo(c, h, wc->byte_len);
	} else if (h->flags & MQ_F_END) {
		s->end_seen = true;
		s->end_expected = h->seq;
		s->end_conn = c;
		s->end_hdr = *h;
	} else if (h->sender >= s->bulk) {
		fprintf(stderr, "mutexqp: server: sender %u out of range\n",
			h->sender);
	} else {
		account(h->sender, wc->byte_len, h->flags, now_s());
	}
	post_recv(c->qp, c->rmr, c->rbuf, c->rslot, slot);
	c->posted++;
	server_maybe_finish();
}

/* Give the client the receives reposted since the last update. */
static void server_credit(struct sconn *c)
{
	struct ibv_send_wr wr = {
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_sge sge = { .length = sizeof(uint64_t), .lkey = c->cmr->lkey };
	unsigned int slot;
	int err;

	/*
	 * Every R/4 reposts.  No deadlock: a client out of credits has had
	 * all its messages received, and then posted - advertised = R.
	 */
	if (c->posted - c->advertised < (c->nrecv + 3) / 4 ||
	    c->credit_out >= MQ_ECHO_SLOTS)
		return;		/* a write completion brings us back */
	slot = c->credit_next++ % MQ_ECHO_SLOTS;
	c->cbuf[slot] = c->posted;
	sge.addr = (uintptr_t)&c->cbuf[slot];
	wr.wr_id = MQ_TAG_CREDIT | slot;
	wr.sg_list = &sge;
	wr.wr.rdma.remote_addr = c->hello.credit_addr;
	wr.wr.rdma.rkey = c->hello.credit_rkey;
	err = ibv_post_send(c->qp, &wr, &bad);
	if (err) {
		fprintf(stderr, "mutexqp: server: credit write: %s\n", strerror(err));
		return;
	}
	c->credit_out++;
	c->advertised = c->posted;
}

/* Returns the number of completions handled. */
static int server_poll_cq(struct sconn *c)
{
	struct ibv_wc wc[MQ_POLL_BATCH];
	int n, i, total = 0;

	do {
		n = ibv_poll_cq(c->cq, MQ_POLL_BATCH, wc);
		if (n < 0)
			die("ibv_poll_cq failed");
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
					fprintf(stderr, "mutexqp: server: completion error: %s\n",
						ibv_wc_status_str(wc[i].status));
			}
			if (wc[i].wr_id & MQ_TAG_CREDIT)
				c->credit_out--;
			else if (wc[i].wr_id & MQ_TAG_SEND)
				c->echo_out--;
			else if (wc[i].status == IBV_WC_SUCCESS)
				server_recv(c, &wc[i]);
		}
		total += n;
	} while (n == MQ_POLL_BATCH);
	if (total)
		server_credit(c);
	return total;
}

static void server_conn_destroy(struct sconn *c)
{
	struct sconn **pp;

	for (pp = &srv.conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	if (c->qp)
		rdma_destroy_qp(c->id);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->rmr)
		ibv_dereg_mr(c->rmr);
	if (c->emr)
		ibv_dereg_mr(c->emr);
	if (c->cmr)
		ibv_dereg_mr(c->cmr);
	free(c->rbuf);
	free(c->ebuf);
	free(c->cbuf);
	rdma_destroy_id(c->id);
	free(c);

	if (!srv.conns && srv.s.active) {
		if (!srv.s.printed) {
			fprintf(stderr, "mutexqp: server: session %u ended without END\n",
				srv.s.id);
			printf("aborted session %u\n", srv.s.id);
			fflush(stdout);
		}
		srv.sessions++;
		session_reset();
		if (srv.once)
			exit(0);
	}
}

static void server_connect_request(struct rdma_cm_id *id,
				   const struct mq_hello *h)
{
	struct mq_accept acc = { .magic = MQ_HELLO_MAGIC };
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_conn_param cp = { 0 };
	struct ibv_device_attr da;
	struct session *s = &srv.s;
	struct sconn *c;
	size_t want, budget;
	unsigned int i;

	if (h->magic != MQ_HELLO_MAGIC || !h->depth || h->len < sizeof(struct mq_hdr) ||
	    h->bulk > MQ_MAX_SENDERS || !h->senders || !h->nconns) {
		fprintf(stderr, "mutexqp: server: bad connection request\n");
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	if (s->active && (h->session != s->id || s->printed)) {
		fprintf(stderr, "mutexqp: server: busy with session %u, rejecting %u\n",
			s->id, h->session);
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	if (!s->active) {
		s->active = true;
		s->id = h->session;
		s->nconns = h->nconns;
		s->bulk = h->bulk;
		s->h0 = *h;
	}

	if (!srv.ctx) {
		srv.ctx = id->verbs;
		srv.pd = ibv_alloc_pd(srv.ctx);
		srv.cch = ibv_create_comp_channel(srv.ctx);
		if (!srv.pd || !srv.cch)
			die("ibv_alloc_pd/ibv_create_comp_channel: %s",
			    strerror(errno));
		set_nonblock(srv.cch->fd);
	} else if (srv.ctx != id->verbs) {
		die("server: connections on more than one RDMA device");
	}
	if (ibv_query_device(srv.ctx, &da))
		die("ibv_query_device failed");

	c = xzalloc(sizeof(*c));
	c->id = id;
	c->hello = *h;
	c->rslot = h->len;
	want = 2 * (size_t)h->depth * h->senders + 8;
	budget = srv.recv_mem / h->nconns / c->rslot;
	c->nrecv = want;
	if (c->nrecv > budget)
		c->nrecv = budget;
	if (c->nrecv > (unsigned int)da.max_qp_wr - 1)
		c->nrecv = da.max_qp_wr - 1;
	if (c->nrecv < 4)
		c->nrecv = 4;
	if (c->nrecv < (size_t)h->depth * h->senders)
		fprintf(stderr, "mutexqp: server: %u receives for up to %zu messages in flight on QP %u: credits will throttle (--recv-mem)\n",
			c->nrecv, (size_t)h->depth * h->senders, h->conn);
	if (verbose)
		fprintf(stderr, "mutexqp: server: conn %u/%u senders %u depth %u len %u: %u receives\n",
			h->conn, h->nconns, h->senders, h->depth, h->len, c->nrecv);

	c->cq = ibv_create_cq(srv.ctx, c->nrecv + 2 * MQ_ECHO_SLOTS + 4, c,
			      srv.cch, 0);
	if (!c->cq)
		die("ibv_create_cq: %s", strerror(errno));
	if (ibv_req_notify_cq(c->cq, 0))
		die("ibv_req_notify_cq failed");
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 2 * MQ_ECHO_SLOTS + 4;
	qa.cap.max_recv_wr = c->nrecv;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, srv.pd, &qa))
		die("rdma_create_qp: %s", strerror(errno));
	c->qp = id->qp;
	id->context = c;

	c->rbuf = xbuf((size_t)c->nrecv * c->rslot);
	c->rmr = xreg(srv.pd, c->rbuf, (size_t)c->nrecv * c->rslot);
	c->ebuf = xbuf((size_t)MQ_ECHO_SLOTS * c->rslot);
	c->emr = xreg(srv.pd, c->ebuf, (size_t)MQ_ECHO_SLOTS * c->rslot);
	c->cbuf = xbuf(MQ_ECHO_SLOTS * sizeof(uint64_t));
	c->cmr = xreg(srv.pd, c->cbuf, MQ_ECHO_SLOTS * sizeof(uint64_t));
	for (i = 0; i < c->nrecv; i++)
		post_recv(c->qp, c->rmr, c->rbuf, c->rslot, i);
	c->posted = c->advertised = c->nrecv;
	acc.nrecv = c->nrecv;

	c->next = srv.conns;
	srv.conns = c;

	cp.private_data = &acc;
	cp.private_data_len = sizeof(acc);
	cp.responder_resources = 0;
	cp.initiator_depth = 0;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;		/* infinite: see the top comment */
	if (rdma_accept(id, &cp)) {
		fprintf(stderr, "mutexqp: server: rdma_accept: %s\n", strerror(errno));
		server_conn_destroy(c);
	}
}

static void server_cm_events(void)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(srv.cm, &ev)) {
		enum rdma_cm_event_type type = ev->event;
		struct rdma_cm_id *id = ev->id;
		struct mq_hello h = { 0 };

		if (type == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    ev->param.conn.private_data &&
		    ev->param.conn.private_data_len >= sizeof(h))
			memcpy(&h, ev->param.conn.private_data, sizeof(h));
		if (verbose)
			fprintf(stderr, "mutexqp: server: %s\n", rdma_event_str(type));
		rdma_ack_cm_event(ev);

		switch (type) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			server_connect_request(id, &h);
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_REJECTED:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
			if (id->context) {
				struct sconn *c = id->context;

				rdma_disconnect(id);
				/* Whatever completed before the disconnect counts. */
				server_poll_cq(c);
				server_conn_destroy(c);
			}
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			die("server: RDMA device removed");
		default:
			break;
		}
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		die("rdma_get_cm_event: %s", strerror(errno));
}

static void server_cq_events(void)
{
	struct ibv_cq *cq;
	void *ctx;

	if (!srv.cch)
		return;
	while (!ibv_get_cq_event(srv.cch, &cq, &ctx)) {
		ibv_ack_cq_events(cq, 1);
		if (ibv_req_notify_cq(cq, 0))
			die("ibv_req_notify_cq failed");
	}
}

static int server_poll_all(void)
{
	struct sconn *c, *next;
	int n = 0;

	for (c = srv.conns; c; c = next) {
		next = c->next;
		n += server_poll_cq(c);
	}
	return n;
}

static void run_server(const char *port)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE, .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	unsigned long spins = 0;
	double spin_end = 0;
	int err;

	session_reset();
	srv.cm = rdma_create_event_channel();
	if (!srv.cm)
		die("rdma_create_event_channel: %s", strerror(errno));
	set_nonblock(srv.cm->fd);
	if (rdma_create_id(srv.cm, &srv.listen, NULL, RDMA_PS_TCP))
		die("rdma_create_id: %s", strerror(errno));
	err = getaddrinfo(NULL, port, &hints, &ai);
	if (err)
		die("getaddrinfo: %s", gai_strerror(err));
	if (rdma_bind_addr(srv.listen, ai->ai_addr))
		die("rdma_bind_addr: %s", strerror(errno));
	freeaddrinfo(ai);
	if (rdma_listen(srv.listen, 64))
		die("rdma_listen: %s", strerror(errno));
	printf("listening port %s wait %s spin_us %.0f\n", port,
	       wait_mode == WAIT_EVENT ? "event" : "poll", spin_s * 1e6);
	fflush(stdout);

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = srv.cm->fd, .events = POLLIN },
			{ .fd = srv.cch ? srv.cch->fd : -1, .events = POLLIN },
		};

		if (wait_mode == WAIT_POLL) {
			if (server_poll_all() || (++spins & 1023))
				continue;
			server_cm_events();
			continue;
		}
		server_cq_events();
		if (server_poll_all()) {
			spin_end = now_s() + spin_s;
			continue;
		}
		if (now_s() < spin_end)
			continue;
		server_cm_events();
		if (poll(pfd, 2, 1000) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
	}
}

/* ------------------------------------------------------------------------
 * Client
 */

struct conn {
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	struct ibv_cq *scq, *rcq;
	struct ibv_comp_channel *sch, *rch;
	struct ibv_mr *rmr;
	char *rbuf;
	size_t rslot;
	bool shared;		/* mutex mode: the lock below is used */
	pthread_mutex_t lock;
	bool waiter;		/* a thread sleeps on sch */
	bool rarmed;
	_Atomic uint64_t *credit;	/* written by the server */
	struct ibv_mr *cmr;
	uint64_t sent;		/* under lock */
	/* statistics, under lock */
	uint64_t locks, contended, credit_waits;
};

struct sender {
	unsigned int idx;	/* sender id on the wire, wr_id >> 32 */
	struct conn *c;
	unsigned int depth;
	unsigned int outstanding;	/* under c->lock */
	size_t slot_size;
	char *buf;
	struct ibv_mr *mr;
	uint64_t seq;
	pthread_t th;
	bool ping;
	pthread_cond_t cond;	/* mutex mode: sleeping for completions */
	bool sleeping;
	unsigned int limit;
	/* results */
	uint64_t msgs, bytes;
	double t0, t1;
	double *rtt;
	size_t nrtt;
};

static struct {
	const char *host, *port;
	bool mutex;
	unsigned int threads, depth, npings;
	size_t len, ping_len;
	uint64_t nmsgs;
	bool pingpong;
	unsigned int nconns;
	struct conn *conns;
	struct sender **senders;	/* by idx */
	unsigned int nsenders;
	pthread_barrier_t start;
	atomic_uint bulk_done;
	struct ibv_pd *pd;
	struct rdma_event_channel *cm;
} cli;

static void conn_lock(struct conn *c)
{
	if (!c->shared)
		return;
	if (pthread_mutex_trylock(&c->lock)) {
		pthread_mutex_lock(&c->lock);
		c->contended++;
	}
	c->locks++;
}

static void conn_unlock(struct conn *c)
{
	if (c->shared)
		pthread_mutex_unlock(&c->lock);
}

/* Reap send completions and credit their owners.  Under c->lock. */
static int drain_send_cq(struct conn *c)
{
	struct ibv_wc wc[MQ_POLL_BATCH];
	struct sender *s;
	int n, i;

	n = ibv_poll_cq(c->scq, MQ_POLL_BATCH, wc);
	if (n < 0)
		die("ibv_poll_cq failed");
	for (i = 0; i < n; i++) {
		unsigned int idx = wc[i].wr_id >> 32;

		if (wc[i].status != IBV_WC_SUCCESS)
			die("send completion error: %s (sender %u)",
			    ibv_wc_status_str(wc[i].status), idx);
		if (idx >= cli.nsenders)
			die("bad wr_id %#" PRIx64, (uint64_t)wc[i].wr_id);
		s = cli.senders[idx];
		s->outstanding--;
		if (s->sleeping && s->outstanding <= s->limit) {
			s->sleeping = false;
			pthread_cond_signal(&s->cond);
		}
	}
	return n;
}

/* The channel has no sleeper any more: wake a thread to take over. */
static void handoff(struct conn *c)
{
	unsigned int i;

	for (i = 0; i < cli.nsenders; i++) {
		struct sender *s = cli.senders[i];

		if (s && s->c == c && s->sleeping) {
			s->sleeping = false;
			pthread_cond_signal(&s->cond);
			return;
		}
	}
}

/* Event mode: poll for spin_s before sleeping.  True when c moved. */
static bool spin_send_cq(struct conn *c)
{
	double end = now_s() + spin_s;
	int k;

	while (now_s() < end) {
		conn_unlock(c);
		for (k = 0; k < 32; k++)
			cpu_relax();
		conn_lock(c);
		if (drain_send_cq(c) > 0)
			return true;
	}
	return false;
}

/* Wait, under c->lock, until s has at most @limit sends outstanding. */
static void wait_outstanding(struct sender *s, unsigned int limit)
{
	struct conn *c = s->c;
	bool spun = false;
	struct ibv_cq *cq;
	void *ctx;

	while (s->outstanding > limit) {
		if (drain_send_cq(c) > 0)
			continue;
		if (wait_mode == WAIT_POLL) {
			conn_unlock(c);
			sched_yield();
			conn_lock(c);
			continue;
		}
		if (!spun && spin_s > 0) {
			spun = true;
			if (spin_send_cq(c))
				continue;
		}
		if (c->waiter) {
			/* Somebody sleeps on the channel; we get woken. */
			s->sleeping = true;
			s->limit = limit;
			while (s->sleeping)
				pthread_cond_wait(&s->cond, &c->lock);
			continue;
		}
		c->waiter = true;
		if (ibv_req_notify_cq(c->scq, 0))
			die("ibv_req_notify_cq failed");
		if (drain_send_cq(c) > 0) {
			c->waiter = false;
			continue;
		}
		conn_unlock(c);
		if (ibv_get_cq_event(c->sch, &cq, &ctx))
			die("ibv_get_cq_event failed");
		ibv_ack_cq_events(cq, 1);
		conn_lock(c);
		c->waiter = false;
		if (c->shared)
			handoff(c);
	}
}

/* Wait, under c->lock, for a credit: a receive posted on the server. */
static void wait_credit(struct conn *c)
{
	unsigned int spins = 0;

	if (c->sent < atomic_load(c->credit))
		return;
	c->credit_waits++;
	while (c->sent >= atomic_load(c->credit)) {
		conn_unlock(c);
		if (wait_mode == WAIT_POLL || ++spins < 64) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
		conn_lock(c);
	}
}

static void post_msg(struct sender *s, uint16_t flags, uint64_t seq, size_t len)
{
	struct ibv_send_wr wr = {
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_sge sge = { .length = len, .lkey = s->mr->lkey };
	struct conn *c = s->c;
	struct mq_hdr *h;
	unsigned int slot;
	int err;

	conn_lock(c);
	wait_outstanding(s, s->depth - 1);
	wait_credit(c);
	slot = s->seq++ % s->depth;
	h = (void *)(s->buf + slot * s->slot_size);
	h->magic = MQ_MAGIC;
	h->sender = s->idx;
	h->flags = flags;
	h->len = len;
	h->seq = seq;
	sge.addr = (uintptr_t)h;
	wr.wr_id = ((uint64_t)s->idx << 32) | slot;
	wr.sg_list = &sge;
	err = ibv_post_send(c->qp, &wr, &bad);
	if (err)
		die("ibv_post_send: %s", strerror(err));
	s->outstanding++;
	c->sent++;
	conn_unlock(c);
}

static void drain_all(struct sender *s)
{
	conn_lock(s->c);
	wait_outstanding(s, 0);
	conn_unlock(s->c);
}

/* Wait for one echo on c; only one thread at a time receives on a QP. */
static void wait_echo(struct conn *c, struct mq_hdr *out)
{
	double spin_end = now_s() + spin_s;
	struct ibv_wc wc;
	struct ibv_cq *cq;
	void *ctx;
	int n;

	for (;;) {
		n = ibv_poll_cq(c->rcq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq failed");
		if (n) {
			if (wc.status != IBV_WC_SUCCESS)
				die("receive completion error: %s",
				    ibv_wc_status_str(wc.status));
			memcpy(out, c->rbuf + wc.wr_id * c->rslot, sizeof(*out));
			post_recv(c->qp, c->rmr, c->rbuf, c->rslot, wc.wr_id);
			return;
		}
		if (wait_mode == WAIT_POLL || now_s() < spin_end)
			continue;
		if (!c->rarmed) {
			if (ibv_req_notify_cq(c->rcq, 0))
				die("ibv_req_notify_cq failed");
			c->rarmed = true;
			continue;
		}
		if (ibv_get_cq_event(c->rch, &cq, &ctx))
			die("ibv_get_cq_event failed");
		ibv_ack_cq_events(cq, 1);
		c->rarmed = false;
	}
}

static void *bulk_thread(void *arg)
{
	struct sender *s = arg;
	uint64_t i;

	pthread_barrier_wait(&cli.start);
	s->t0 = now_s();
	for (i = 0; i < cli.nmsgs; i++)
		post_msg(s, MQ_F_DATA | (i == cli.nmsgs - 1 ? MQ_F_LAST : 0),
			 i, cli.len);
	drain_all(s);
	s->t1 = now_s();
	s->msgs = cli.nmsgs;
	s->bytes = cli.nmsgs * cli.len;
	atomic_fetch_add(&cli.bulk_done, 1);
	return NULL;
}

static void *ping_thread(void *arg)
{
	struct sender *s = arg;
	struct mq_hdr h;
	unsigned int i;
	double t;

	pthread_barrier_wait(&cli.start);
	s->t0 = now_s();
	for (i = 0; i < cli.npings; i++) {
		/* Only RTTs taken while the bulk threads stream count. */
		if (cli.threads && atomic_load(&cli.bulk_done))
			break;
		t = now_s();
		post_msg(s, MQ_F_PING, i, cli.ping_len);
		wait_echo(s->c, &h);
		if (h.magic != MQ_MAGIC || !(h.flags & MQ_F_PING) || h.seq != i)
			die("bad echo (seq %" PRIu64 ", expected %u)", h.seq, i);
		s->rtt[s->nrtt++] = (now_s() - t) * 1e6;
	}
	drain_all(s);
	s->t1 = now_s();
	s->msgs = s->nrtt;
	s->bytes = s->nrtt * cli.ping_len;
	return NULL;
}

static struct sender *sender_new(unsigned int idx, struct conn *c,
				 unsigned int depth, size_t len)
{
	struct sender *s = xzalloc(sizeof(*s));

	s->idx = idx;
	s->c = c;
	s->depth = depth;
	s->slot_size = (len + 63) & ~(size_t)63;
	s->buf = xbuf(s->slot_size * depth);
	s->mr = xreg(cli.pd, s->buf, s->slot_size * depth);
	pthread_cond_init(&s->cond, NULL);
	cli.senders[idx] = s;
	return s;
}

static void conn_setup(struct conn *c, unsigned int idx, unsigned int senders,
		       unsigned int max_send, uint32_t session)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_conn_param cp = { 0 };
	struct rdma_cm_event *ev;
	struct mq_hello h = { 0 };
	struct mq_accept acc;
	struct addrinfo *ai;
	unsigned int i;
	int err;

	if (rdma_create_id(cli.cm, &c->id, c, RDMA_PS_TCP))
		die("rdma_create_id: %s", strerror(errno));
	err = getaddrinfo(cli.host, cli.port, &hints, &ai);
	if (err)
		die("getaddrinfo %s: %s", cli.host, gai_strerror(err));
	if (rdma_resolve_addr(c->id, NULL, ai->ai_addr, 2000))
		die("rdma_resolve_addr: %s", strerror(errno));
	freeaddrinfo(ai);
	rdma_ack_cm_event(cm_wait(cli.cm, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(c->id, 2000))
		die("rdma_resolve_route: %s", strerror(errno));
	rdma_ack_cm_event(cm_wait(cli.cm, RDMA_CM_EVENT_ROUTE_RESOLVED));

	if (!cli.pd) {
		cli.pd = ibv_alloc_pd(c->id->verbs);
		if (!cli.pd)
			die("ibv_alloc_pd: %s", strerror(errno));
	}
	c->sch = ibv_create_comp_channel(c->id->verbs);
	c->rch = ibv_create_comp_channel(c->id->verbs);
	if (!c->sch || !c->rch)
		die("ibv_create_comp_channel: %s", strerror(errno));
	c->scq = ibv_create_cq(c->id->verbs, max_send + 1, c, c->sch, 0);
	c->rcq = ibv_create_cq(c->id->verbs, MQ_CLIENT_RECVS + 1, c, c->rch, 0);
	if (!c->scq || !c->rcq)
		die("ibv_create_cq: %s", strerror(errno));
	qa.send_cq = c->scq;
	qa.recv_cq = c->rcq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = max_send;
	qa.cap.max_recv_wr = MQ_CLIENT_RECVS;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(c->id, cli.pd, &qa))
		die("rdma_create_qp: %s", strerror(errno));
	c->qp = c->id->qp;

	c->rslot = (cli.ping_len + 63) & ~(size_t)63;	/* >= the header */
	c->rbuf = xbuf(c->rslot * MQ_CLIENT_RECVS);
	c->rmr = xreg(cli.pd, c->rbuf, c->rslot * MQ_CLIENT_RECVS);
	for (i = 0; i < MQ_CLIENT_RECVS; i++)
		post_recv(c->qp, c->rmr, c->rbuf, c->rslot, i);
	pthread_mutex_init(&c->lock, NULL);
	c->shared = cli.mutex;
	c->credit = xbuf(64);
	c->cmr = ibv_reg_mr(cli.pd, (void *)c->credit, sizeof(uint64_t),
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!c->cmr)
		die("ibv_reg_mr: %s", strerror(errno));

	h.magic = MQ_HELLO_MAGIC;
	h.credit_addr = (uintptr_t)c->credit;
	h.credit_rkey = c->cmr->rkey;
	h.session = session;
	h.conn = idx;
	h.nconns = cli.nconns;
	h.senders = senders;
	h.bulk = cli.threads;
	h.depth = cli.depth;
	h.len = cli.len > cli.ping_len ? cli.len : cli.ping_len;
	h.mode = cli.mutex;
	cp.private_data = &h;
	cp.private_data_len = sizeof(h);
	cp.responder_resources = 0;
	cp.initiator_depth = 0;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;		/* infinite: see the top comment */
	if (rdma_connect(c->id, &cp))
		die("rdma_connect: %s", strerror(errno));
	ev = cm_wait(cli.cm, RDMA_CM_EVENT_ESTABLISHED);
	if (!ev->param.conn.private_data ||
	    ev->param.conn.private_data_len < sizeof(acc))
		die("no credits in the server's accept");
	memcpy(&acc, ev->param.conn.private_data, sizeof(acc));
	rdma_ack_cm_event(ev);
	if (acc.magic != MQ_HELLO_MAGIC || !acc.nrecv)
		die("bad accept from the server");
	atomic_store(c->credit, acc.nrecv);
}

static void conn_teardown(struct conn *c)
{
	rdma_disconnect(c->id);
	rdma_destroy_qp(c->id);
	ibv_destroy_cq(c->scq);
	ibv_destroy_cq(c->rcq);
	ibv_destroy_comp_channel(c->sch);
	ibv_destroy_comp_channel(c->rch);
	ibv_dereg_mr(c->rmr);
	ibv_dereg_mr(c->cmr);
	free(c->rbuf);
	free((void *)c->credit);
	rdma_destroy_id(c->id);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(p / 100.0 * (n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

/*
 * The client's report:
 *   client mode M threads T len L msgs N depth D wait W conns C
 *   thread ID msgs N bytes B elapsed_s T MBps X
 *   client_total bytes B msgs N elapsed_s T MBps X msgps X
 *   lock acquisitions N contended N             (mutex mode)
 *   credit_waits N       posts that waited for a server receive
 *   pingpong count N len L p50_us X p99_us X min_us X max_us X mean_us X
 */
static void client_report(double t0, double t1)
{
	uint64_t bytes = 0, msgs = 0, waits = 0;
	double el = t1 - t0;
	unsigned int i;

	printf("client mode %s threads %u len %zu msgs %" PRIu64 " depth %u wait %s spin_us %.0f conns %u\n",
	       cli.mutex ? "mutex" : "qp", cli.threads, cli.len, cli.nmsgs,
	       cli.depth, wait_mode == WAIT_EVENT ? "event" : "poll",
	       spin_s * 1e6, cli.nconns);
	for (i = 0; i < cli.threads; i++) {
		struct sender *s = cli.senders[i];
		double e = s->t1 - s->t0;

		printf("thread %u msgs %" PRIu64 " bytes %" PRIu64
		       " elapsed_s %.6f MBps %.3f\n", i, s->msgs, s->bytes, e,
		       e > 0 ? s->bytes / e / 1e6 : 0);
		bytes += s->bytes;
		msgs += s->msgs;
	}
	if (cli.threads)
		printf("client_total bytes %" PRIu64 " msgs %" PRIu64
		       " elapsed_s %.6f MBps %.3f msgps %.1f\n", bytes, msgs, el,
		       el > 0 ? bytes / el / 1e6 : 0, el > 0 ? msgs / el : 0);
	if (cli.mutex)
		printf("lock acquisitions %" PRIu64 " contended %" PRIu64 "\n",
		       cli.conns[0].locks, cli.conns[0].contended);
	for (i = 0; i < cli.nconns; i++)
		waits += cli.conns[i].credit_waits;
	printf("credit_waits %" PRIu64 "\n", waits);
	if (cli.pingpong) {
		struct sender *s = cli.senders[cli.threads];
		double sum = 0;
		size_t k;

		qsort(s->rtt, s->nrtt, sizeof(double), cmp_double);
		for (k = 0; k < s->nrtt; k++)
			sum += s->rtt[k];
		printf("pingpong count %zu len %zu p50_us %.1f p99_us %.1f min_us %.1f max_us %.1f mean_us %.1f\n",
		       s->nrtt, cli.ping_len, pct(s->rtt, s->nrtt, 50),
		       pct(s->rtt, s->nrtt, 99), s->nrtt ? s->rtt[0] : 0,
		       s->nrtt ? s->rtt[s->nrtt - 1] : 0,
		       s->nrtt ? sum / s->nrtt : 0);
	}
	fflush(stdout);
}

static void run_client(void)
{
	unsigned int i, nthr, ping_idx, ctl_idx;
	struct sender *ctl;
	struct mq_hdr h;
	uint32_t session;
	double t0, t1;

	session = (uint32_t)getpid() ^ (uint32_t)time(NULL);
	ping_idx = cli.threads;
	ctl_idx = cli.threads + 1;
	cli.nsenders = cli.threads + 2;
	cli.senders = xzalloc(cli.nsenders * sizeof(*cli.senders));
	if (cli.mutex)
		cli.nconns = 1;
	else
		cli.nconns = cli.threads + cli.pingpong + (cli.threads + cli.pingpong == 0);
	cli.conns = xzalloc(cli.nconns * sizeof(*cli.conns));
	cli.cm = rdma_create_event_channel();
	if (!cli.cm)
		die("rdma_create_event_channel: %s", strerror(errno));

	for (i = 0; i < cli.nconns; i++) {
		unsigned int senders, max_send;

		if (cli.mutex) {
			senders = cli.threads + cli.pingpong + 1;
			max_send = cli.depth * cli.threads + 2 * cli.pingpong + 1;
		} else {
			senders = 1 + (i == 0);		/* + control on QP 0 */
			max_send = (i < cli.threads ? cli.depth : 2) + (i == 0);
		}
		conn_setup(&cli.conns[i], i, senders, max_send, session);
	}

	for (i = 0; i < cli.threads; i++)
		sender_new(i, &cli.conns[cli.mutex ? 0 : i], cli.depth, cli.len);
	if (cli.pingpong) {
		struct sender *s = sender_new(ping_idx,
					      &cli.conns[cli.mutex ? 0 : cli.threads],
					      2, cli.ping_len);

		s->ping = true;
		s->rtt = xzalloc((cli.npings + 1) * sizeof(double));
	}
	ctl = sender_new(ctl_idx, &cli.conns[0], 1, sizeof(struct mq_hdr));

	nthr = cli.threads + cli.pingpong;
	pthread_barrier_init(&cli.start, NULL, nthr + 1);
	for (i = 0; i < cli.threads; i++)
		if (pthread_create(&cli.senders[i]->th, NULL, bulk_thread, cli.senders[i]))
			die("pthread_create failed");
	if (cli.pingpong &&
	    pthread_create(&cli.senders[ping_idx]->th, NULL, ping_thread,
			   cli.senders[ping_idx]))
		die("pthread_create failed");
	pthread_barrier_wait(&cli.start);
	t0 = now_s();
	for (i = 0; i < nthr; i++)
		pthread_join(cli.senders[i]->th, NULL);
	t1 = now_s();

	/* END: seq = data messages sent; the server echoes it when done. */
	post_msg(ctl, MQ_F_END, cli.threads * cli.nmsgs, sizeof(struct mq_hdr));
	drain_all(ctl);
	wait_echo(&cli.conns[0], &h);
	if (h.magic != MQ_MAGIC || !(h.flags & MQ_F_END))
		die("bad END echo");

	client_report(t0, t1);

	for (i = 0; i < cli.nconns; i++)
		conn_teardown(&cli.conns[i]);
	rdma_destroy_event_channel(cli.cm);
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end || end == s)
		die("bad size '%s'", s);
	return v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: mutexqp -s [-p PORT] [-w event|poll] [--spin-us US] [-B BYTES]\n"
		"                  [--recv-mem BYTES] [--once] [-v]\n"
		"       mutexqp -c HOST [-p PORT] -m mutex|qp -t THREADS -l BYTES -n MSGS\n"
		"               [-d DEPTH] [-w event|poll] [--spin-us US] [-P|--pingpong-thread]\n"
		"               [--pings N] [--ping-len BYTES] [-v]\n"
		"  -m mutex  one RC QP shared by all threads under one mutex (FaRM style)\n"
		"  -m qp     one RC QP (own CQs) per thread, no shared lock\n"
		"  -d        sends outstanding per thread (default 16)\n"
		"  -P        one more thread does ping-pongs while the others stream\n"
		"            (-t 0 -P: ping-pong alone); --pings N (default 1000)\n"
		"  -B        server: close the share window after this many bytes\n"
		"  -w        wait on completion channels (event, default) or busy-poll\n"
		"  --spin-us event mode: poll this long before sleeping (default 50)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "client", required_argument, NULL, 'c' },
		{ "port", required_argument, NULL, 'p' },
		{ "mode", required_argument, NULL, 'm' },
		{ "threads", required_argument, NULL, 't' },
		{ "length", required_argument, NULL, 'l' },
		{ "msgs", required_argument, NULL, 'n' },
		{ "depth", required_argument, NULL, 'd' },
		{ "wait", required_argument, NULL, 'w' },
		{ "pingpong-thread", no_argument, NULL, 'P' },
		{ "pings", required_argument, NULL, 'N' },
		{ "ping-len", required_argument, NULL, 'L' },
		{ "window-bytes", required_argument, NULL, 'B' },
		{ "recv-mem", required_argument, NULL, 'R' },
		{ "once", no_argument, NULL, '1' },
		{ "spin-us", required_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool server = false, mode_set = false;
	int o;

	cli.port = MQ_PORT;
	cli.threads = 1;
	cli.depth = 16;
	cli.len = 64;
	cli.nmsgs = 1000;
	cli.npings = 1000;
	cli.ping_len = 64;
	srv.recv_mem = 256ULL << 20;

	while ((o = getopt_long(argc, argv, "sc:p:m:t:l:n:d:w:PN:L:B:R:1S:vh",
				opts, NULL)) != -1) {
		switch (o) {
		case 's': server = true; break;
		case 'c': cli.host = optarg; break;
		case 'p': cli.port = optarg; break;
		case 'm':
			if (!strcmp(optarg, "mutex"))
				cli.mutex = true;
			else if (!strcmp(optarg, "qp"))
				cli.mutex = false;
			else
				usage();
			mode_set = true;
			break;
		case 't': cli.threads = strtoul(optarg, NULL, 0); break;
		case 'l': cli.len = parse_size(optarg); break;
		case 'n': cli.nmsgs = strtoull(optarg, NULL, 0); break;
		case 'd': cli.depth = strtoul(optarg, NULL, 0); break;
		case 'w':
			if (!strcmp(optarg, "event"))
				wait_mode = WAIT_EVENT;
			else if (!strcmp(optarg, "poll"))
				wait_mode = WAIT_POLL;
			else
				usage();
			break;
		case 'P': cli.pingpong = true; break;
		case 'N': cli.npings = strtoul(optarg, NULL, 0); break;
		case 'L': cli.ping_len = parse_size(optarg); break;
		case 'B': srv.win_target = parse_size(optarg); break;
		case 'R': srv.recv_mem = parse_size(optarg); break;
		case '1': srv.once = true; break;
		case 'S': spin_s = strtod(optarg, NULL) * 1e-6; break;
		case 'v': verbose = 1; break;
		default: usage();
		}
	}
	if (optind != argc || server == !!cli.host)
		usage();
	signal(SIGPIPE, SIG_IGN);

	if (server) {
		setvbuf(stdout, NULL, _IOLBF, 0);
		run_server(cli.port);
		return 0;
	}
	if (!mode_set)
		die("client: -m mutex|qp is required");
	if (cli.len < sizeof(struct mq_hdr) || cli.ping_len < sizeof(struct mq_hdr))
		die("messages must be at least %zu bytes", sizeof(struct mq_hdr));
	if (!cli.depth || cli.threads + 2 > MQ_MAX_SENDERS)
		die("bad -d or -t");
	if (!cli.threads && !cli.pingpong)
		die("nothing to do: -t 0 without -P");
	if (!cli.nmsgs && cli.threads)
		die("-n must be positive");
	run_client();
	return 0;
}
