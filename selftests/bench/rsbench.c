// SPDX-License-Identifier: GPL-2.0
/*
 * rsbench: the rdmashare side of the scheduler benchmark, the counterpart
 * of mutexqp (same workload, same output records).
 *
 * N sender threads stream messages to one server over /dev/rdmashare.  Each
 * thread has its own handle (an open file: an "application" to the
 * scheduler) and one AC to the server; all ACs to the server share the
 * module's QP(s) to it (qps_per_peer).  A thread keeps at most -d DEPTH
 * SENDs outstanding from DEPTH slots of its data area, with the raw ring
 * API: one SQE and one submit per message, as mutexqp posts one work
 * request per message (RDMASHARE_SETUP_SQ_WAKEUP: the submit enters the
 * kernel only when the kernel asks for it).
 *
 * Every message starts with a struct rb_hdr (sender id, flags, length,
 * number of bulk senders, depth, sequence), the same 32 bytes as mutexqp's
 * header.  Optionally (-P) one more thread, with a handle and AC of its own,
 * does ping-pongs (-L bytes, default 64) while the bulk threads stream, and
 * prints p50/p99 round-trip times; like mutexqp it stops at the first bulk
 * thread's end, so that only RTTs taken under load count.  At the end the
 * main thread sends END (seq = data messages sent) on a control AC; the
 * server prints its counts once it has them all and echoes END back.
 *
 * The server uses one handle and reaps its CQ directly: RECV completions
 * carry the chunk's bytes (res), the message's length (user_data) and
 * RDMASHARE_CQE_F_MORE on all but the last chunk; each slot is RELEASEd at
 * once.  It counts bytes per sender over the window mutexqp uses: it opens
 * when every bulk sender has delivered one message (that message is not
 * counted) and closes when the first sender's last message arrives
 * (counted) or, with -B, once the window holds that many bytes.  Bytes are
 * whole messages, header included.  It checks every sender's sequence.
 *
 * Output is machine readable, one record per line, "key value" pairs, the
 * records of mutexqp with mode "rdmashare" (print_results(), client_report()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "rdmashare.h"

#define RB_MAGIC	0x52534231u	/* "RSB1" */
#define RB_PORT		7400
#define RB_MAX_SENDERS	4096
#define RB_ECHO_SLOTS	16
#define RB_ECHO_MAX	65536		/* longest ping or END message */
#define RB_BATCH	64		/* CQEs reaped between submits */
#define RB_SYSFS	"/sys/class/misc/rdmashare/"

/* The server's user_data: bit 63 an echo SEND (slot in the low bits). */
#define RB_UD_ECHO	(1ULL << 63)
#define RB_UD_RELEASE	(1ULL << 62)
#define RB_UD_CLOSE	(1ULL << 61)

enum {
	RB_F_DATA = 1,
	RB_F_LAST = 2,	/* a sender's last data message */
	RB_F_PING = 4,	/* echo me */
	RB_F_END = 8,	/* end of the run; seq = data messages sent */
};

/* At the start of every message; 32 bytes, as mutexqp's struct mq_hdr. */
struct rb_hdr {
	uint32_t magic;
	uint16_t sender;
	uint16_t flags;
	uint32_t len;		/* whole message, header included */
	uint16_t bulk;		/* bulk senders in the run */
	uint16_t depth;
	uint64_t seq;
	uint64_t ts;
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2))) __attribute__((noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "rsbench: ");
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

static void *xzalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

static size_t align64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

static struct rdmashare *rs_new(size_t data_size, unsigned int rx_slots,
				unsigned int sq_entries)
{
	/* One submit per message, but a system call only when the kernel asks. */
	struct rdmashare_setup p = {
		.flags = RDMASHARE_SETUP_SQ_WAKEUP,
		.data_size = data_size,
		.rx_slots = rx_slots,
		.sq_entries = sq_entries,
	};
	struct rdmashare *rs;
	int ret;

	ret = rdmashare_open(&rs, 0);
	if (ret)
		die("%s: %s", RDMASHARE_DEV_PATH, strerror(-ret));
	ret = rdmashare_setup(rs, &p);
	if (ret)
		die("setup (data %zu, %u slots): %s", data_size, rx_slots,
		    strerror(-ret));
	return rs;
}

/* An SQE; the SQ is sized so that a submit always makes room. */
static struct rdmashare_sqe *get_sqe(struct rdmashare *rs)
{
	struct rdmashare_sqe *sqe = rdmashare_get_sqe(rs);
	int ret;

	if (sqe)
		return sqe;
	ret = rdmashare_submit(rs);
	if (ret < 0)
		die("submit: %s", strerror(-ret));
	sqe = rdmashare_get_sqe(rs);
	if (!sqe)
		die("the SQ stays full");
	return sqe;
}

/* ------------------------------------------------------------------------
 * Server
 */

struct sstat {
	uint64_t run_bytes, run_msgs;
	uint64_t win_bytes, win_msgs;
	uint64_t next_seq;
	bool seen, done;
};

struct session {
	bool active, printed;
	unsigned int id, bulk, depth, len;
	struct sstat *st;
	unsigned int nseen;
	int win;		/* 0 waiting, 1 open, 2 closed */
	bool win_valid;
	double t_first, t_last, t_win0, t_win1;
	uint64_t run_bytes, run_msgs, win_bytes, win_msgs, pings, errors;
	bool end_seen;
	uint64_t end_expected;
	uint32_t end_ac;
	int end_slot;
	unsigned int end_len;
};

/* Per AC id of the server's file. */
struct acst {
	bool known;		/* handed out by ACCEPT */
	bool open;		/* not CLOSEd by us yet */
	bool hdr_ok;
	struct rb_hdr hdr;	/* the current message's, from its first chunk */
	uint64_t got;		/* bytes of the current message so far */
	int echo;		/* echo slot of the current message, or -1 */
};

static struct {
	struct rdmashare *rs;
	char *data;
	int listen_ac;
	struct acst *acs;
	unsigned int nr_acs, open_acs;
	size_t echo_size;
	bool echo_busy[RB_ECHO_SLOTS];
	struct session s;
	uint64_t win_target;
	unsigned int slots;
	bool once;
	double done_at;		/* END echoed: waiting for the ACs to close */
} srv;

static struct acst *acst(uint32_t ac)
{
	unsigned int want, i;

	if (ac < srv.nr_acs)
		return &srv.acs[ac];
	want = srv.nr_acs ? srv.nr_acs : 64;
	while (want <= ac)
		want *= 2;
	srv.acs = realloc(srv.acs, want * sizeof(*srv.acs));
	if (!srv.acs)
		die("out of memory");
	memset(srv.acs + srv.nr_acs, 0, (want - srv.nr_acs) * sizeof(*srv.acs));
	for (i = srv.nr_acs; i < want; i++)
		srv.acs[i].echo = -1;
	srv.nr_acs = want;
	return &srv.acs[ac];
}

/* Take every connection waiting in the backlog. */
static void server_accept_all(void)
{
	struct rdmashare_accept a;
	struct acst *st;

	for (;;) {
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.flags = RDMASHARE_ACCEPT_NONBLOCK;
		a.listen_ac = srv.listen_ac;
		if (ioctl(rdmashare_fd(srv.rs), RDMASHARE_IOC_ACCEPT, &a) < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			die("accept: %s", strerror(errno));
		}
		st = acst(a.ac);
		st->known = true;
		if (!st->open) {
			st->open = true;
			srv.open_acs++;
		}
	}
}

static void session_reset(void)
{
	struct sstat *st = srv.s.st;
	unsigned int id = srv.s.id;

	memset(&srv.s, 0, sizeof(srv.s));
	if (!st)
		st = xzalloc(RB_MAX_SENDERS * sizeof(*st));
	memset(st, 0, RB_MAX_SENDERS * sizeof(*st));
	srv.s.st = st;
	srv.s.id = id + 1;
	srv.s.end_slot = -1;
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

static long sysfs_long(const char *name)
{
	char path[128], buf[64];
	FILE *f;
	long v = -1;

	snprintf(path, sizeof(path), RB_SYSFS "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 0);
	fclose(f);
	return v;
}

static void sysfs_str(const char *name, char *buf, size_t len)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), RB_SYSFS "%s", name);
	snprintf(buf, len, "-");
	f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(buf, len, f))
		snprintf(buf, len, "-");
	buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* The scheduler's settings, for the record. */
static void print_tunables(void)
{
	char mode[32];

	sysfs_str("sched_mode", mode, sizeof(mode));
	printf("tunables split %ld chunk_size %ld credits_per_ac %ld sched_mode %s sched_quantum %ld qps_per_peer %ld\n",
	       sysfs_long("split"), sysfs_long("chunk_size"),
	       sysfs_long("credits_per_ac"), mode, sysfs_long("sched_quantum"),
	       sysfs_long("qps_per_peer"));
}

/*
 * The server's report, one record per line (as mutexqp's):
 *   result session S mode rdmashare conns C senders N len L depth D
 *   sender ID bytes B msgs M          window counts: the shares
 *   sender_run ID bytes B msgs M      the whole run
 *   window valid V bytes B msgs M elapsed_s T MBps X msgps X jain J
 *   total bytes B msgs M elapsed_s T MBps X msgps X pings P
 *   errors N                          bad messages, sequence gaps
 *   tunables ...
 *   end
 * MBps is 10^6 bytes/s.  total covers the first to the last data message.
 * conns is the number of ACs open in the server's file.
 */
static void print_results(void)
{
	struct session *s = &srv.s;
	uint64_t *wb = xzalloc((s->bulk + 1) * sizeof(*wb));
	double wt = s->t_win1 - s->t_win0, rt = s->t_last - s->t_first;
	unsigned int i;

	printf("result session %u mode rdmashare conns %u senders %u len %u depth %u\n",
	       s->id, srv.open_acs, s->bulk, s->len, s->depth);
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
	printf("errors %" PRIu64 "\n", s->errors);
	print_tunables();
	printf("end\n");
	fflush(stdout);
	free(wb);
}

static int echo_get(void)
{
	int i;

	for (i = 0; i < RB_ECHO_SLOTS; i++) {
		if (!srv.echo_busy[i]) {
			srv.echo_busy[i] = true;
			return i;
		}
	}
	return -1;
}

static void server_echo(uint32_t ac, int slot, unsigned int len)
{
	struct rdmashare_sqe *sqe = get_sqe(srv.rs);

	sqe->opcode = RDMASHARE_OP_SEND;
	sqe->ac = ac;
	sqe->addr = (uint64_t)slot * srv.echo_size;
	sqe->len = len;
	sqe->user_data = RB_UD_ECHO | (unsigned int)slot;
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
		if ((flags & RB_F_LAST) ||
		    (srv.win_target && s->win_bytes >= srv.win_target))
			s->win = 2;
	}
	if ((flags & RB_F_LAST) && !st->done) {
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
		fprintf(stderr, "rsbench: server: %" PRIu64
			" data messages, client says %" PRIu64 "\n",
			s->run_msgs, s->end_expected);
	print_results();
	s->printed = true;
	server_echo(s->end_ac, s->end_slot, s->end_len);
}

static void server_bad(const char *what, uint32_t ac)
{
	fprintf(stderr, "rsbench: server: AC %u: %s\n", ac, what);
	srv.s.errors++;
}

/* The last chunk of a message on @ac arrived. */
static void server_message(uint32_t ac, struct acst *st)
{
	struct session *s = &srv.s;
	struct rb_hdr *h = &st->hdr;
	struct sstat *ss;
	int echo = st->echo;

	st->echo = -1;
	if (!st->hdr_ok || h->len != st->got) {
		server_bad("bad message", ac);
		goto out_free;
	}
	if (!s->active) {
		s->active = true;
		s->bulk = h->bulk;
		s->depth = h->depth;
	}
	if (h->flags & RB_F_PING) {
		s->pings++;
		if (echo < 0) {
			server_bad("echo slots full, ping dropped", ac);
			return;
		}
		server_echo(ac, echo, h->len);
		return;
	}
	if (h->flags & RB_F_END) {
		if (echo < 0) {
			server_bad("no echo slot for END", ac);
			return;
		}
		s->end_seen = true;
		s->end_expected = h->seq;
		s->end_ac = ac;
		s->end_slot = echo;
		s->end_len = h->len;
		server_maybe_finish();
		return;
	}
	if (h->sender >= s->bulk || h->bulk != s->bulk) {
		server_bad("sender out of range", ac);
		goto out_free;
	}
	ss = &s->st[h->sender];
	if (h->seq != ss->next_seq)
		server_bad("sequence gap", ac);
	ss->next_seq = h->seq + 1;
	if (!s->len)
		s->len = h->len;
	account(h->sender, h->len, h->flags, now_s());
	server_maybe_finish();
out_free:
	if (echo >= 0)
		srv.echo_busy[echo] = false;
}

static void server_recv(const struct rdmashare_cqe *cqe)
{
	struct acst *st = acst(cqe->ac);
	const char *p = srv.data + cqe->addr;
	struct rdmashare_sqe *sqe;
	size_t n = cqe->res;

	if (!st->known)
		server_accept_all();
	if (!st->got) {
		st->hdr_ok = false;
		st->echo = -1;
		if (n >= sizeof(st->hdr)) {
			memcpy(&st->hdr, p, sizeof(st->hdr));
			st->hdr_ok = st->hdr.magic == RB_MAGIC &&
				     st->hdr.len == cqe->user_data;
		}
		if (st->hdr_ok && (st->hdr.flags & (RB_F_PING | RB_F_END)) &&
		    st->hdr.len <= srv.echo_size)
			st->echo = echo_get();
	}
	if (st->echo >= 0 && st->got + n <= srv.echo_size)
		memcpy(srv.data + (size_t)st->echo * srv.echo_size + st->got, p, n);
	st->got += n;

	/* The CQE was seen already: the slot may go back. */
	sqe = get_sqe(srv.rs);
	sqe->opcode = RDMASHARE_OP_RELEASE;
	sqe->ac = cqe->ac;
	sqe->addr = cqe->addr;
	sqe->user_data = RB_UD_RELEASE;

	if (!(cqe->flags & RDMASHARE_CQE_F_MORE)) {
		server_message(cqe->ac, st);
		st->got = 0;
	}
}

static void server_close(uint32_t ac)
{
	struct acst *st = acst(ac);
	struct rdmashare_sqe *sqe;

	if (!st->open)
		return;
	st->open = false;
	srv.open_acs--;
	if (st->echo >= 0)
		srv.echo_busy[st->echo] = false;
	st->echo = -1;
	st->got = 0;
	sqe = get_sqe(srv.rs);
	sqe->opcode = RDMASHARE_OP_CLOSE;
	sqe->ac = ac;
	sqe->user_data = RB_UD_CLOSE | ac;
}

static void server_cqe(const struct rdmashare_cqe *cqe)
{
	struct session *s = &srv.s;

	switch (cqe->type) {
	case RDMASHARE_CQE_RECV:
		server_recv(cqe);
		break;
	case RDMASHARE_CQE_CLOSED:
		if (!acst(cqe->ac)->known)
			server_accept_all();
		if (cqe->res < 0)
			fprintf(stderr, "rsbench: server: AC %u lost: %s\n",
				cqe->ac, strerror(-cqe->res));
		server_close(cqe->ac);
		break;
	case RDMASHARE_CQE_OP:
		if (cqe->user_data & RB_UD_ECHO) {
			int slot = cqe->user_data & (RB_ECHO_SLOTS - 1);

			srv.echo_busy[slot] = false;
			if (cqe->res < 0)
				fprintf(stderr, "rsbench: server: echo on AC %u: %s\n",
					cqe->ac, strerror(-cqe->res));
			if (s->printed && slot == s->end_slot && !srv.done_at)
				srv.done_at = now_s();
		} else if (cqe->res < 0) {
			fprintf(stderr, "rsbench: server: %s on AC %u: %s\n",
				cqe->user_data & RB_UD_CLOSE ? "CLOSE" :
				cqe->user_data & RB_UD_RELEASE ? "RELEASE" : "op",
				cqe->ac, strerror(-cqe->res));
		}
		if (cqe->user_data & RB_UD_CLOSE)
			acst(cqe->ac)->known = false;
		break;
	}
}

static void run_server(unsigned int port)
{
	size_t data_size;
	int ret;

	srv.echo_size = RB_ECHO_MAX;
	data_size = RB_ECHO_SLOTS * srv.echo_size;
	/* Room in the SQ for a RELEASE per slot, echoes and CLOSEs. */
	srv.rs = rs_new(data_size, srv.slots, 1024);
	srv.data = rdmashare_data(srv.rs, NULL);
	srv.listen_ac = rdmashare_listen(srv.rs, port, 1024);
	if (srv.listen_ac < 0)
		die("listen on port %u: %s", port, strerror(-srv.listen_ac));
	session_reset();
	printf("listening port %u slots %u\n", port, srv.slots);
	fflush(stdout);

	for (;;) {
		struct rdmashare_cqe *cqe, copy;
		unsigned int n = 0;

		ret = rdmashare_submit_and_wait(srv.rs, 1, 100);
		if (ret < 0 && ret != -ETIME && ret != -EINTR)
			die("submit_and_wait: %s", strerror(-ret));
		while (!rdmashare_peek_cqe(srv.rs, &cqe)) {
			copy = *cqe;
			rdmashare_cqe_seen(srv.rs, cqe);
			server_cqe(&copy);
			if (!(++n % RB_BATCH)) {
				ret = rdmashare_submit(srv.rs);
				if (ret < 0)
					die("submit: %s", strerror(-ret));
			}
		}
		if (!n)
			server_accept_all();

		/* The session is over once its ACs closed (5 s at most). */
		if (srv.done_at && (!srv.open_acs || now_s() - srv.done_at > 5)) {
			if (srv.open_acs)
				fprintf(stderr, "rsbench: server: %u ACs still open\n",
					srv.open_acs);
			if (srv.once)
				break;
			srv.done_at = 0;
			session_reset();
		}
	}
	rdmashare_submit(srv.rs);
	rdmashare_close(srv.rs);
}

/* ------------------------------------------------------------------------
 * Client
 */

struct sender {
	unsigned int idx;	/* sender id on the wire */
	struct rdmashare *rs;
	int ac;
	char *data;
	size_t slot_size;
	unsigned int depth, outstanding;
	unsigned int *free_slots, nfree;
	pthread_t th;
	/* results */
	uint64_t msgs, bytes, waits;
	double t0, t1;
	double *rtt;
	size_t nrtt;
};

static struct {
	const char *host;
	struct sockaddr_storage addr;
	unsigned int threads, depth, npings;
	size_t len, ping_len;
	uint64_t nmsgs;
	bool pingpong;
	struct sender **senders;
	pthread_barrier_t start;
	atomic_uint bulk_done;
} cli;

static void resolve(const char *host, unsigned int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char svc[16];
	int err;

	snprintf(svc, sizeof(svc), "%u", port);
	err = getaddrinfo(host, svc, &hints, &ai);
	if (err)
		die("getaddrinfo %s: %s", host, gai_strerror(err));
	memcpy(&cli.addr, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
}

/* Reap the completions of a bulk sender's SENDs; with @wait, one at least. */
static void sender_reap(struct sender *s, bool wait)
{
	struct rdmashare_cqe *cqe;
	int ret;

	if (wait) {
		/* Submits what is pending, too. */
		ret = rdmashare_submit_and_wait(s->rs, 1, 0);
		if (ret < 0 && ret != -EINTR)
			die("sender %u: wait: %s", s->idx, strerror(-ret));
	}
	while (!rdmashare_peek_cqe(s->rs, &cqe)) {
		switch (cqe->type) {
		case RDMASHARE_CQE_OP:
			if (cqe->res < 0)
				die("sender %u: SEND: %s", s->idx, strerror(-cqe->res));
			s->free_slots[s->nfree++] = cqe->user_data;
			s->outstanding--;
			break;
		case RDMASHARE_CQE_CLOSED:
			die("sender %u: the server closed the AC (%d)", s->idx, cqe->res);
		default:
			die("sender %u: unexpected completion type %u", s->idx, cqe->type);
		}
		rdmashare_cqe_seen(s->rs, cqe);
	}
}

static void sender_post(struct sender *s, uint16_t flags, uint64_t seq, size_t len)
{
	struct rdmashare_sqe *sqe;
	struct rb_hdr *h;
	unsigned int slot;
	int ret;

	if (s->outstanding == s->depth)
		s->waits++;
	while (s->outstanding == s->depth)
		sender_reap(s, true);
	slot = s->free_slots[--s->nfree];
	h = (struct rb_hdr *)(s->data + slot * s->slot_size);
	h->magic = RB_MAGIC;
	h->sender = s->idx;
	h->flags = flags;
	h->len = len;
	h->bulk = cli.threads;
	h->depth = cli.depth;
	h->seq = seq;
	sqe = get_sqe(s->rs);
	sqe->opcode = RDMASHARE_OP_SEND;
	sqe->ac = s->ac;
	sqe->addr = slot * s->slot_size;
	sqe->len = len;
	sqe->user_data = slot;
	s->outstanding++;
	ret = rdmashare_submit(s->rs);
	if (ret < 0)
		die("sender %u: submit: %s", s->idx, strerror(-ret));
	sender_reap(s, false);
}

static void *bulk_thread(void *arg)
{
	struct sender *s = arg;
	uint64_t i;

	pthread_barrier_wait(&cli.start);
	s->t0 = now_s();
	for (i = 0; i < cli.nmsgs; i++)
		sender_post(s, RB_F_DATA | (i == cli.nmsgs - 1 ? RB_F_LAST : 0),
			    i, cli.len);
	while (s->outstanding)
		sender_reap(s, true);
	s->t1 = now_s();
	s->msgs = cli.nmsgs;
	s->bytes = cli.nmsgs * cli.len;
	atomic_fetch_add(&cli.bulk_done, 1);
	return NULL;
}

/* Send one message with the socket-like API and wait for its echo. */
static void ping_one(struct sender *s, uint16_t flags, uint64_t seq, size_t len,
		     char *buf)
{
	struct rb_hdr *h = (struct rb_hdr *)buf;
	ssize_t n;
	int ret;

	memset(buf, 0, len);
	h->magic = RB_MAGIC;
	h->sender = s->idx;
	h->flags = flags;
	h->len = len;
	h->bulk = cli.threads;
	h->depth = cli.depth;
	h->seq = seq;
	ret = rdmashare_send(s->rs, s->ac, buf, len);
	if (ret)
		die("sender %u: send: %s", s->idx, strerror(-ret));
	n = rdmashare_recv(s->rs, s->ac, buf, len, 60000);
	if (n < 0)
		die("sender %u: recv: %s", s->idx, strerror(-n));
	if ((size_t)n != len || h->magic != RB_MAGIC || !(h->flags & flags) ||
	    h->seq != seq)
		die("sender %u: bad echo (%zd bytes, seq %" PRIu64 ", expected %" PRIu64 ")",
		    s->idx, n, h->seq, seq);
}

static void *ping_thread(void *arg)
{
	struct sender *s = arg;
	char *buf = xzalloc(cli.ping_len);
	unsigned int i;
	double t;

	pthread_barrier_wait(&cli.start);
	s->t0 = now_s();
	for (i = 0; i < cli.npings; i++) {
		/* Only RTTs taken while the bulk threads stream count. */
		if (cli.threads && atomic_load(&cli.bulk_done))
			break;
		t = now_s();
		ping_one(s, RB_F_PING, i, cli.ping_len, buf);
		s->rtt[s->nrtt++] = (now_s() - t) * 1e6;
	}
	s->t1 = now_s();
	s->msgs = s->nrtt;
	s->bytes = s->nrtt * cli.ping_len;
	free(buf);
	return NULL;
}

/* A handle and an AC to the server; bulk senders get DEPTH slots of LEN. */
static struct sender *sender_new(unsigned int idx, unsigned int depth, size_t len,
				 bool raw)
{
	struct sender *s = xzalloc(sizeof(*s));
	size_t data_size;
	unsigned int i;

	s->idx = idx;
	s->depth = depth;
	s->slot_size = align64(len);
	data_size = raw ? s->slot_size * depth : 2 * align64(RB_ECHO_MAX);
	/* No receive slots needed beyond the default credit window. */
	s->rs = rs_new(data_size, 0, depth < 128 ? 256 : 2 * depth);
	s->data = rdmashare_data(s->rs, NULL);
	s->free_slots = xzalloc(depth * sizeof(*s->free_slots));
	for (i = 0; i < depth; i++)
		s->free_slots[s->nfree++] = depth - 1 - i;
	s->ac = rdmashare_connect(s->rs, (struct sockaddr *)&cli.addr, 0);
	if (s->ac < 0)
		die("connect %s: %s", cli.host, strerror(-s->ac));
	cli.senders[idx] = s;
	return s;
}

static void sender_free(struct sender *s)
{
	int ret;

	ret = rdmashare_close_ac(s->rs, s->ac);
	if (ret)
		fprintf(stderr, "rsbench: close AC: %s\n", strerror(-ret));
	rdmashare_flush(s->rs, 5000);
	rdmashare_close(s->rs);
	free(s->free_slots);
	free(s->rtt);
	free(s);
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
 * The client's report (mutexqp's records; conns counts ACs):
 *   client mode rdmashare threads T len L msgs N depth D wait event spin_us 0 conns C
 *   thread ID msgs N bytes B elapsed_s T MBps X
 *   client_total bytes B msgs N elapsed_s T MBps X msgps X
 *   depth_waits N        posts that waited for a SEND completion
 *   pingpong count N len L p50_us X p99_us X min_us X max_us X mean_us X
 *   tunables ...
 */
static void client_report(double t0, double t1)
{
	uint64_t bytes = 0, msgs = 0, waits = 0;
	double el = t1 - t0;
	unsigned int i;

	printf("client mode rdmashare threads %u len %zu msgs %" PRIu64
	       " depth %u wait event spin_us 0 conns %u\n",
	       cli.threads, cli.len, cli.nmsgs, cli.depth,
	       cli.threads + cli.pingpong + 1);
	for (i = 0; i < cli.threads; i++) {
		struct sender *s = cli.senders[i];
		double e = s->t1 - s->t0;

		printf("thread %u msgs %" PRIu64 " bytes %" PRIu64
		       " elapsed_s %.6f MBps %.3f\n", i, s->msgs, s->bytes, e,
		       e > 0 ? s->bytes / e / 1e6 : 0);
		bytes += s->bytes;
		msgs += s->msgs;
		waits += s->waits;
	}
	if (cli.threads)
		printf("client_total bytes %" PRIu64 " msgs %" PRIu64
		       " elapsed_s %.6f MBps %.3f msgps %.1f\n", bytes, msgs, el,
		       el > 0 ? bytes / el / 1e6 : 0, el > 0 ? msgs / el : 0);
	printf("depth_waits %" PRIu64 "\n", waits);
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
	print_tunables();
	fflush(stdout);
}

static void run_client(void)
{
	unsigned int i, nthr, ping_idx = cli.threads, ctl_idx = cli.threads + 1;
	char *buf = xzalloc(sizeof(struct rb_hdr));
	struct sender *ctl;
	double t0, t1;

	cli.senders = xzalloc((cli.threads + 2) * sizeof(*cli.senders));
	for (i = 0; i < cli.threads; i++)
		sender_new(i, cli.depth, cli.len, true);
	if (cli.pingpong) {
		struct sender *s = sender_new(ping_idx, 1, cli.ping_len, false);

		s->rtt = xzalloc((cli.npings + 1) * sizeof(double));
	}
	ctl = sender_new(ctl_idx, 1, sizeof(struct rb_hdr), false);

	nthr = cli.threads + cli.pingpong;
	if (pthread_barrier_init(&cli.start, NULL, nthr + 1))
		die("pthread_barrier_init failed");
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
	ping_one(ctl, RB_F_END, cli.threads * cli.nmsgs, sizeof(struct rb_hdr), buf);

	client_report(t0, t1);

	for (i = 0; i < cli.threads + 2; i++)
		if (cli.senders[i])
			sender_free(cli.senders[i]);
	free(cli.senders);
	free(buf);
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	}
	if (*end || end == s)
		die("bad size '%s'", s);
	return v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rsbench -s [-p PORT] [-B BYTES] [--slots N] [--once]\n"
		"       rsbench -c HOST [-p PORT] -t THREADS -l BYTES -n MSGS [-d DEPTH]\n"
		"               [-P|--pingpong-thread] [--pings N] [--ping-len BYTES]\n"
		"  -t        bulk sender threads, each with its own handle and AC\n"
		"  -d        SENDs outstanding per thread (default 16)\n"
		"  -P        one more thread does ping-pongs while the others stream\n"
		"            (-t 0 -P: ping-pong alone); --pings N (default 1000)\n"
		"  -B        server: close the share window after this many bytes\n"
		"  --slots   server: receive slots of its file (default 2048); each\n"
		"            AC takes credits_per_ac of them\n"
		"  --once    server: exit after one run\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "client", required_argument, NULL, 'c' },
		{ "port", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },
		{ "length", required_argument, NULL, 'l' },
		{ "msgs", required_argument, NULL, 'n' },
		{ "depth", required_argument, NULL, 'd' },
		{ "pingpong-thread", no_argument, NULL, 'P' },
		{ "pings", required_argument, NULL, 'N' },
		{ "ping-len", required_argument, NULL, 'L' },
		{ "window-bytes", required_argument, NULL, 'B' },
		{ "slots", required_argument, NULL, 'S' },
		{ "once", no_argument, NULL, '1' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int port = RB_PORT;
	bool server = false;
	int o;

	cli.threads = 1;
	cli.depth = 16;
	cli.len = 64;
	cli.nmsgs = 1000;
	cli.npings = 1000;
	cli.ping_len = 64;
	srv.slots = 2048;

	while ((o = getopt_long(argc, argv, "sc:p:t:l:n:d:PN:L:B:S:1h",
				opts, NULL)) != -1) {
		switch (o) {
		case 's':
			server = true;
			break;
		case 'c':
			cli.host = optarg;
			break;
		case 'p':
			port = strtoul(optarg, NULL, 0);
			break;
		case 't':
			cli.threads = strtoul(optarg, NULL, 0);
			break;
		case 'l':
			cli.len = parse_size(optarg);
			break;
		case 'n':
			cli.nmsgs = strtoull(optarg, NULL, 0);
			break;
		case 'd':
			cli.depth = strtoul(optarg, NULL, 0);
			break;
		case 'P':
			cli.pingpong = true;
			break;
		case 'N':
			cli.npings = strtoul(optarg, NULL, 0);
			break;
		case 'L':
			cli.ping_len = parse_size(optarg);
			break;
		case 'B':
			srv.win_target = parse_size(optarg);
			break;
		case 'S':
			srv.slots = strtoul(optarg, NULL, 0);
			break;
		case '1':
			srv.once = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || server == !!cli.host || !port || port > 65535)
		usage();
	signal(SIGPIPE, SIG_IGN);

	if (server) {
		setvbuf(stdout, NULL, _IOLBF, 0);
		run_server(port);
		return 0;
	}
	if (cli.len < sizeof(struct rb_hdr) || cli.ping_len < sizeof(struct rb_hdr))
		die("messages must be at least %zu bytes", sizeof(struct rb_hdr));
	if (cli.ping_len > RB_ECHO_MAX)
		die("--ping-len: at most %d bytes", RB_ECHO_MAX);
	if (!cli.depth || cli.depth > 65535 || cli.threads + 2 > RB_MAX_SENDERS)
		die("bad -d or -t");
	if (cli.len > 0xffffffffULL)
		die("-l: at most 4 GiB - 1");
	if (!cli.threads && !cli.pingpong)
		die("nothing to do: -t 0 without -P");
	if (!cli.nmsgs && cli.threads)
		die("-n must be positive");
	resolve(cli.host, port);
	run_client();
	return 0;
}
