// SPDX-License-Identifier: GPL-2.0
/*
 * RDMASHARE_SETUP_SQ_WAKEUP, on one host (Soft-RoCE loopback, RS_IP):
 *  - flags: a file set up with it starts with RDMASHARE_SQ_NEED_WAKEUP set
 *    (nothing on the wire), one set up without it has no flag; an SQE
 *    published on an idle file is not consumed until ENTER; QUERY reports
 *    the feature; unknown SETUP flags are still EINVAL;
 *  - stream: a client that follows the contract to the letter (publish the
 *    tail, full barrier, ENTER only if the flag is set) streams 2000
 *    messages to a reader in another process: every message arrives, in
 *    order, with fewer submitting ENTERs than 3 in 4 messages (the
 *    completions of its SENDs consumed the rest: a few percent where rxe
 *    completes late), and the flag is set again once everything completed;
 *  - library: rdmashare_send() and rdmashare_recv() on handles set up with
 *    the flag echo messages of every size around the chunk size;
 *  - close: a file closed while its SENDs are on the wire and SQEs wait
 *    for a completion to consume them goes cleanly (KASAN, kmemleak and
 *    lockdep watch on the debug kernel), and the module serves the next
 *    pair;
 *  - busy_poll: with busy_poll_us set, a ping-pong with an echo server in
 *    another process has its waits in ENTER poll the QP's CQ themselves
 *    (the device's busy_polled grows; it does not with busy_poll_us 0),
 *    every message intact; values over 10000 us are refused; a wait for what never comes still ends at its
 *    timeout, and a signal still ends it;
 *  - sleep_poll: with sleep_poll_us set, the same ping-pong's sleeping
 *    waits answer their QP's completion events themselves (the device's
 *    sleep_polled grows; it does not with sleep_poll_us 0), every message
 *    intact; values over 10000 us are refused; a wait that offered still
 *    ends at its timeout, and a signal still ends it; and so do the
 *    blocking reads of a ping-pong on AC files;
 *  - completion_budget: a completion consumes 64 SQEs, the file's work
 *    item 1024 more, then ENTER is asked for;
 *  - starved_poller: a busy poller that does not get the CPU does not
 *    hold up another process's completions on the same QP;
 *  - starved_sleeper: nor does a sleeping waiter that a completion event
 *    woke to poll the QP and that then does not get the CPU (a real-time
 *    spinner holds its CPU): the work takes the event over after
 *    sleep_poll_us.
 */
#include <arpa/inet.h>
#include <sched.h>
#include <poll.h>
#include <stdatomic.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT	7900
#define NMSG	2000
#define DEPTH	32
#define MSG	64

static struct sockaddr_in addr_of(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

/* A handle and a second view of its rings, for the words the library hides. */
struct raw {
	struct rdmashare *rs;
	struct rdmashare_setup p;
	void *rings;
	unsigned int *sq_head, *sq_tail, *sq_flags;
};

static int raw_open(struct raw *r, __u32 flags, unsigned int slots)
{
	memset(r, 0, sizeof(*r));
	r->p.flags = flags;
	r->p.data_size = 4 << 20;
	r->p.rx_slots = slots;
	r->rs = rs_open_with(&r->p);
	if (!r->rs)
		return -1;
	r->rings = mmap(NULL, r->p.rings_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			rdmashare_fd(r->rs), RDMASHARE_OFF_RINGS);
	if (r->rings == MAP_FAILED)
		return -1;
	r->sq_head = (unsigned int *)((char *)r->rings + r->p.sq_off.head);
	r->sq_tail = (unsigned int *)((char *)r->rings + r->p.sq_off.tail);
	r->sq_flags = (unsigned int *)((char *)r->rings + r->p.sq_off.flags);
	return 0;
}

static void raw_close(struct raw *r)
{
	if (r->rings && r->rings != MAP_FAILED)
		munmap(r->rings, r->p.rings_size);
	rdmashare_close(r->rs);
}

static unsigned int load_acquire(unsigned int *p)
{
	return atomic_load_explicit((_Atomic unsigned int *)p, memory_order_acquire);
}

/* Publish @tail; true if the kernel asks for ENTER (the contract). */
static bool publish(struct raw *r, unsigned int tail)
{
	atomic_store_explicit((_Atomic unsigned int *)r->sq_tail, tail, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	return load_acquire(r->sq_flags) & RDMASHARE_SQ_NEED_WAKEUP;
}

static int enter(struct raw *r, unsigned int to_submit, unsigned int wait)
{
	struct rdmashare_enter e = {
		.size = sizeof(e), .to_submit = to_submit, .min_complete = wait,
		.flags = wait ? RDMASHARE_ENTER_GETEVENTS : 0, .timeout_ms = wait ? 10000 : 0,
	};

	return ioctl(rdmashare_fd(r->rs), RDMASHARE_IOC_ENTER, &e) ? -errno : (int)e.submitted;
}

TEST(flags)
{
	struct rdmashare_query q = { .size = sizeof(q) };
	struct rdmashare_setup bad = { .flags = 2 };
	struct rdmashare_sqe *sqe;
	struct rdmashare *rs;
	struct raw a, b;
	unsigned int tail;

	ASSERT_EQ(0, raw_open(&a, RDMASHARE_SETUP_SQ_WAKEUP, 64));
	ASSERT_EQ(0, raw_open(&b, 0, 64));
	ASSERT_EQ(0, rdmashare_query(a.rs, &q));
	EXPECT_TRUE(q.features & RDMASHARE_FEAT_SQ_WAKEUP);
	EXPECT_EQ(RDMASHARE_SQ_NEED_WAKEUP, *a.sq_flags);
	EXPECT_EQ(0, *b.sq_flags);

	/* Idle: published is not consumed... */
	tail = *a.sq_tail;
	sqe = rdmashare_get_sqe(a.rs);
	ASSERT_NE(NULL, sqe);
	sqe->opcode = RDMASHARE_OP_NOP;
	sqe->user_data = 77;
	EXPECT_TRUE(publish(&a, tail + 1));
	usleep(200000);
	EXPECT_EQ(tail, load_acquire(a.sq_head));
	/* ... until ENTER; and nothing on the wire keeps the flag set. */
	EXPECT_EQ(1, enter(&a, 1, 0));
	EXPECT_EQ(tail + 1, load_acquire(a.sq_head));
	EXPECT_EQ(0, rs_op_result(a.rs, 77));
	EXPECT_EQ(RDMASHARE_SQ_NEED_WAKEUP, *a.sq_flags);
	raw_close(&a);
	raw_close(&b);

	/* Unknown flags: EINVAL as before. */
	ASSERT_EQ(0, rdmashare_open(&rs, 0));
	EXPECT_EQ(-EINVAL, rdmashare_setup(rs, &bad));
	bad.flags = 1u << 31;
	EXPECT_EQ(-EINVAL, rdmashare_setup(rs, &bad));
	rdmashare_close(rs);
}

/* The reader: NMSG messages on one AC, in order; exit status 0 if so. */
static int reader(int ready_fd, unsigned int port)
{
	struct rdmashare *rs = rs_open_setup(4 << 20, 64);
	unsigned char buf[MSG];
	int l, ac, i;

	if (!rs)
		return 10;
	l = rdmashare_listen(rs, port, 4);
	if (l < 0 || write(ready_fd, "r", 1) != 1)
		return 11;
	ac = rdmashare_accept(rs, l, 60000);
	if (ac < 0)
		return 12;
	for (i = 0; i < NMSG; i++) {
		if (rdmashare_recv(rs, ac, buf, sizeof(buf), 60000) != MSG)
			return 13;
		if (memcmp(buf, &i, sizeof(i)) || buf[MSG - 1] != (unsigned char)i)
			return 14;
	}
	if (rdmashare_recv(rs, ac, buf, sizeof(buf), 60000) != -EPIPE)
		return 15;
	rdmashare_close(rs);
	return 0;
}

FIXTURE(wk) {
	char credits[32];
	char busy_poll[32];
	char sleep_poll[32];
};

FIXTURE_SETUP(wk)
{
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/credits_per_ac", self->credits,
				  sizeof(self->credits)));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/busy_poll_us", self->busy_poll,
				  sizeof(self->busy_poll)));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/sleep_poll_us", self->sleep_poll,
				  sizeof(self->sleep_poll)));
}

FIXTURE_TEARDOWN(wk)
{
	rs_write_file(RS_SYSFS "/credits_per_ac", self->credits);
	rs_write_file(RS_SYSFS "/busy_poll_us", self->busy_poll);
	rs_write_file(RS_SYSFS "/sleep_poll_us", self->sleep_poll);
}

TEST_F_TIMEOUT(wk, stream, 240)
{
	struct sockaddr_in sin = addr_of(PORT);
	unsigned int tail, sent = 0, done = 0, enters = 0, waits = 0, submitted = 0;
	char dev[512], path[600], v[32];
	struct rdmashare_sqe *sqe;
	struct rdmashare_cqe *cqe;
	long polled0, polled;
	unsigned char *data;
	struct rs_fifo f;
	struct raw c;
	int ac, i, ret;
	pid_t pid;

	ASSERT_EQ(0, rs_first_device(dev, sizeof(dev)));
	snprintf(path, sizeof(path), "%s/stats/sq_polled", dev);
	ASSERT_EQ(0, rs_read_file(path, v, sizeof(v)));
	polled0 = atol(v);

	/* Credits to spare: the SENDs wait for the wire, not for the reader. */
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/credits_per_ac", "64"));
	pid = rs_fork_ready(reader, PORT);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, raw_open(&c, RDMASHARE_SETUP_SQ_WAKEUP, 64));
	ac = rdmashare_connect(c.rs, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, ac);
	data = rdmashare_data(c.rs, NULL);
	tail = *c.sq_tail;

	/* Traffic flows: what it posts is in flight while it posts more. */
	ASSERT_EQ(0, rs_fifo_begin(&f));
	while (done < NMSG) {
		/* Reap in user space. */
		while (!rdmashare_peek_cqe(c.rs, &cqe)) {
			ASSERT_EQ(RDMASHARE_CQE_OP, cqe->type);
			ASSERT_EQ(MSG, cqe->res);
			rdmashare_cqe_seen(c.rs, cqe);
			done++;
		}
		/* Publish what the depth allows; enter only when asked to. */
		while (sent < NMSG && sent - done < DEPTH) {
			unsigned char *m = data + (sent % (2 * DEPTH)) * MSG;

			i = sent;
			memcpy(m, &i, sizeof(i));
			memset(m + sizeof(i), (unsigned char)i, MSG - sizeof(i));
			sqe = rdmashare_get_sqe(c.rs);
			ASSERT_NE(NULL, sqe);
			sqe->opcode = RDMASHARE_OP_SEND;
			sqe->ac = ac;
			sqe->addr = (sent % (2 * DEPTH)) * MSG;
			sqe->len = MSG;
			sqe->user_data = sent;
			sent++;
			if (publish(&c, ++tail)) {
				ret = enter(&c, tail - load_acquire(c.sq_head), 0);
				ASSERT_LE(0, ret);
				submitted += ret;
				enters++;
			}
		}
		/* Full depth, nothing reaped: wait (and submit what waits). */
		if (!rdmashare_cq_ready(c.rs) && done < NMSG) {
			ret = enter(&c, tail - load_acquire(c.sq_head), 1);
			ASSERT_LE(0, ret);
			submitted += ret;
			waits++;
		}
	}
	ASSERT_EQ(0, rs_fifo_end(&f));
	/*
	 * Without completions consuming the SQ, every message would need an
	 * ENTER.  How often the wire runs dry between two messages depends
	 * on the kernel: rxe on 6.12 completes SENDs from a work item, later
	 * than 6.1's tasklets.  Left to chance, 6.12 took 10-82 ENTERs and
	 * 6.1 884-1504; with rs_fifo_begin(), 6.1 took 152-1099 in ten runs
	 * and 6.12 about 350 (the completions then run mostly while the
	 * sender waits, so each wait costs an ENTER after it).
	 */
	ASSERT_EQ(0, rs_read_file(path, v, sizeof(v)));
	polled = atol(v) - polled0;
	TH_LOG("%u messages: %u submitting ENTERs, %u waits, %u SQEs taken by them; the device's sq_polled +%ld",
	       NMSG, enters, waits, submitted, polled);
	EXPECT_GT(NMSG * 3 / 4, enters);
	/* Each SQE was taken by an ENTER or by a completion, and counted once. */
	EXPECT_EQ(NMSG, submitted + polled);
	/* Everything completed: nothing on the wire, the flag is back. */
	EXPECT_EQ(RDMASHARE_SQ_NEED_WAKEUP, *c.sq_flags);
	raw_close(&c);
	EXPECT_EQ(0, rs_wait_child(pid));
}

/* Echo server on a handle set up with the flag. */
static int echo_server(int ready_fd, unsigned int port)
{
	static unsigned char buf[1 << 20];
	struct raw s;
	int l, ac;
	ssize_t n;

	if (raw_open(&s, RDMASHARE_SETUP_SQ_WAKEUP, 256))
		return 10;
	l = rdmashare_listen(s.rs, port, 4);
	if (l < 0 || write(ready_fd, "r", 1) != 1)
		return 11;
	ac = rdmashare_accept(s.rs, l, 60000);
	if (ac < 0)
		return 12;
	for (;;) {
		n = rdmashare_recv(s.rs, ac, buf, sizeof(buf), 60000);
		if (n == -EPIPE)
			break;
		if (n < 0)
			return 13;
		if (rdmashare_send(s.rs, ac, buf, n))
			return 14;
	}
	if (rdmashare_flush(s.rs, 10000))
		return 15;
	raw_close(&s);
	return 0;
}

TEST_F_TIMEOUT(wk, library_echo, 240)
{
	static const size_t sizes[] = { 1, 63, 64, 4095, 4096, 4097, 16383, 16384,
					16385, 65536, 300000 };
	static unsigned char out[300000], in[300000];
	struct sockaddr_in sin = addr_of(PORT + 1);
	unsigned int i;
	int ac, round;
	struct raw c;
	pid_t pid;

	pid = rs_fork_ready(echo_server, PORT + 1);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, raw_open(&c, RDMASHARE_SETUP_SQ_WAKEUP, 256));
	ac = rdmashare_connect(c.rs, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, ac);
	for (round = 0; round < 3; round++) {
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			size_t k;

			for (k = 0; k < sizes[i]; k++)
				out[k] = (unsigned char)(k * 7 + i + round);
			ASSERT_EQ(0, rdmashare_send(c.rs, ac, out, sizes[i]));
			ASSERT_EQ((ssize_t)sizes[i],
				  rdmashare_recv(c.rs, ac, in, sizeof(in), 60000));
			ASSERT_EQ(0, memcmp(out, in, sizes[i])) TH_LOG("size %zu", sizes[i]);
		}
	}
	ASSERT_EQ(0, rdmashare_close_ac(c.rs, ac));
	ASSERT_EQ(0, rdmashare_flush(c.rs, 10000));
	raw_close(&c);
	EXPECT_EQ(0, rs_wait_child(pid));
}

TEST_F_TIMEOUT(wk, close_while_polled, 240)
{
	struct sockaddr_in sin = addr_of(PORT + 2);
	struct rdmashare *s, *c2;
	unsigned char buf[MSG];
	int l, ac, sac, round, k;
	unsigned int tail;
	struct raw c;

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/credits_per_ac", "64"));
	s = rs_open_setup(4 << 20, 256);
	ASSERT_NE(NULL, s);
	l = rdmashare_listen(s, PORT + 2, 16);
	ASSERT_LE(0, l);
	for (round = 0; round < 10; round++) {
		ASSERT_EQ(0, raw_open(&c, RDMASHARE_SETUP_SQ_WAKEUP, 64));
		ac = rdmashare_connect(c.rs, (struct sockaddr *)&sin, 20000);
		ASSERT_LE(0, ac);
		sac = rdmashare_accept(s, l, 20000);
		ASSERT_LE(0, sac);
		tail = *c.sq_tail;
		/* SENDs on the wire, more published behind them, then close. */
		for (k = 0; k < 48; k++) {
			struct rdmashare_sqe *sqe = rdmashare_get_sqe(c.rs);

			ASSERT_NE(NULL, sqe);
			sqe->opcode = RDMASHARE_OP_SEND;
			sqe->ac = ac;
			sqe->addr = k * MSG;
			sqe->len = MSG;
			if (publish(&c, ++tail) && k < 8)
				ASSERT_LE(0, enter(&c, tail - load_acquire(c.sq_head), 0));
		}
		raw_close(&c);
		/* What reached the server is whole; then its AC closes. */
		for (;;) {
			ssize_t n = rdmashare_recv(s, sac, buf, sizeof(buf), 20000);

			if (n < 0) {
				EXPECT_TRUE(n == -EPIPE || n == -ECONNRESET ||
					    n == -ECONNABORTED) TH_LOG("%zd", n);
				break;
			}
			ASSERT_EQ(MSG, n);
		}
		ASSERT_EQ(0, rdmashare_close_ac(s, sac));
	}
	rdmashare_close(s);

	/* The module still serves a pair. */
	c2 = rs_open_setup(1 << 20, 64);
	s = rs_open_setup(1 << 20, 64);
	ASSERT_NE(NULL, c2);
	ASSERT_NE(NULL, s);
	l = rdmashare_listen(s, PORT + 3, 4);
	ASSERT_LE(0, l);
	sin = addr_of(PORT + 3);
	ac = rdmashare_connect(c2, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, ac);
	sac = rdmashare_accept(s, l, 20000);
	ASSERT_LE(0, sac);
	memset(buf, 5, sizeof(buf));
	ASSERT_EQ(0, rdmashare_send(c2, ac, buf, sizeof(buf)));
	ASSERT_EQ(MSG, rdmashare_recv(s, sac, buf, sizeof(buf), 20000));
	rdmashare_close(c2);
	rdmashare_close(s);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/*
 * Sysfs knob @knob: values out of range refused; then 200 round trips with
 * an echo server (port @port) with the knob 0 and with it @on, the
 * device's counter @stat's growth in each into @polled.  The connected
 * handle and AC are left in *@c and *@ac, the server in *@pid.
 */
static void poll_round_trips(struct __test_metadata *_metadata, const char *knob,
			     const char *on, const char *stat, unsigned int port,
			     struct raw *c, int *ac, pid_t *pid, long polled[2])
{
	struct sockaddr_in sin = addr_of(port);
	unsigned char out[MSG], in[MSG];
	char path[128], v[32];
	int mode, i;
	long before;

	snprintf(path, sizeof(path), RS_SYSFS "/%s", knob);
	ASSERT_EQ(0, rs_write_file(path, "10000"));
	EXPECT_EQ(-EINVAL, rs_write_file(path, "10001"));
	EXPECT_EQ(-EINVAL, rs_write_file(path, "-1"));
	EXPECT_EQ(-EINVAL, rs_write_file(path, "4294967296"));
	EXPECT_EQ(-EINVAL, rs_write_file(path, "1ms"));
	ASSERT_EQ(0, rs_read_file(path, v, sizeof(v)));
	EXPECT_STREQ("10000", v);

	*pid = rs_fork_ready(echo_server, port);
	ASSERT_LT(0, *pid);
	ASSERT_EQ(0, raw_open(c, RDMASHARE_SETUP_SQ_WAKEUP, 256));
	*ac = rdmashare_connect(c->rs, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, *ac);
	for (mode = 0; mode < 2; mode++) {
		ASSERT_EQ(0, rs_write_file(path, mode ? on : "0"));
		before = rs_device_stat(stat);
		ASSERT_LE(0, before);
		for (i = 0; i < 200; i++) {
			memset(out, 0, sizeof(out));
			snprintf((char *)out, sizeof(out), "round trip %d of mode %d", i, mode);
			ASSERT_EQ(0, rdmashare_send(c->rs, *ac, out, sizeof(out)));
			ASSERT_EQ(MSG, rdmashare_recv(c->rs, *ac, in, sizeof(in), 20000));
			ASSERT_EQ(0, memcmp(out, in, sizeof(out))) TH_LOG("round trip %d", i);
		}
		polled[mode] = rs_device_stat(stat) - before;
	}
	TH_LOG("completions counted in %s in 200 round trips: %ld with %s 0, %ld with %s",
	       stat, polled[0], knob, polled[1], on);
	EXPECT_EQ(0, polled[0]);
	EXPECT_LT(0, polled[1]);
}

/* A wait on @r for what never comes ends at its timeout, and at a signal. */
static void wait_ends(struct __test_metadata *_metadata, struct raw *r)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct rdmashare_cqe *cqe;
	double t;

	t = now_ms();
	EXPECT_EQ(-ETIME, rdmashare_wait_cqe(r->rs, &cqe, 100));
	t = now_ms() - t;
	EXPECT_LE(90, t);
	EXPECT_GE(2000, t);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	alarm(1);
	EXPECT_EQ(-EINTR, rdmashare_wait_cqe(r->rs, &cqe, 20000));
}

TEST_F_TIMEOUT(wk, busy_poll, 240)
{
	long polled[2];
	struct raw c, idle;
	pid_t pid;
	int ac;

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/sleep_poll_us", "0"));
	poll_round_trips(_metadata, "busy_poll_us", "2000", "busy_polled", PORT + 4,
			 &c, &ac, &pid, polled);
	ASSERT_EQ(0, rdmashare_close_ac(c.rs, ac));
	ASSERT_EQ(0, rdmashare_flush(c.rs, 10000));
	raw_close(&c);
	EXPECT_EQ(0, rs_wait_child(pid));

	/* Nothing to come: the wait ends at its timeout, busy polling or not. */
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/busy_poll_us", "10000"));
	ASSERT_EQ(0, raw_open(&idle, 0, 16));
	wait_ends(_metadata, &idle);
	raw_close(&idle);
}

/*
 * @len bytes from @fd, each read after a poll() of at most 5 s (@polled)
 * or blocking in read() itself; false if they did not come.
 */
static bool read_all(int fd, unsigned char *buf, size_t len, bool polled)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t n;

	while (len) {
		if (polled && poll(&pfd, 1, 5000) != 1)
			return false;
		n = read(fd, buf, len);
		if (n <= 0)
			return false;
		buf += n;
		len -= n;
	}
	return true;
}

TEST_F_TIMEOUT(wk, sleep_poll, 240)
{
	struct rdmashare_setup p = {
		.flags = RDMASHARE_SETUP_FILES, .files_size = 1 << 20,
		.data_size = 1 << 20, .rx_slots = 64,
	};
	struct sockaddr_in sin = addr_of(PORT + 11);
	unsigned char out[MSG], in[MSG];
	int ac, l, cfd, sfd, mode, i;
	struct rdmashare *rs;
	long polled[2];
	struct raw c;
	pid_t pid;

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/busy_poll_us", "0"));
	poll_round_trips(_metadata, "sleep_poll_us", "1000", "sleep_polled", PORT + 8,
			 &c, &ac, &pid, polled);
	/*
	 * Nothing to come: a wait that offers to poll the QP (the file has
	 * had its completions) ends at its timeout, and at a signal.
	 */
	ASSERT_EQ(0, rdmashare_flush(c.rs, 10000));
	wait_ends(_metadata, &c);
	ASSERT_EQ(0, rdmashare_close_ac(c.rs, ac));
	ASSERT_EQ(0, rdmashare_flush(c.rs, 10000));
	raw_close(&c);
	EXPECT_EQ(0, rs_wait_child(pid));

	/* AC files: their blocking reads answer the events too. */
	rs = rs_open_with(&p);
	ASSERT_NE(NULL, rs);
	l = rdmashare_listen_files(rs, PORT + 11, 4);
	ASSERT_LE(0, l);
	cfd = rdmashare_connect_file(rs, (struct sockaddr *)&sin, 20000, 0, 0);
	ASSERT_LE(0, cfd);
	sfd = rdmashare_accept_file(rs, l, 20000, 0, 0);
	ASSERT_LE(0, sfd);
	/* A lost message fails the test; it does not hang it. */
	ASSERT_EQ(0, rdmashare_file_set_timeout(cfd, SO_RCVTIMEO, 20000000));
	ASSERT_EQ(0, rdmashare_file_set_timeout(sfd, SO_RCVTIMEO, 20000000));
	for (mode = 0; mode < 2; mode++) {
		ASSERT_EQ(0, rs_write_file(RS_SYSFS "/sleep_poll_us", mode ? "1000" : "0"));
		polled[mode] = rs_device_stat("sleep_polled");
		for (i = 0; i < 200; i++) {
			memset(out, i + mode, sizeof(out));
			ASSERT_EQ(MSG, write(cfd, out, MSG));
			ASSERT_TRUE(read_all(sfd, in, MSG, false));
			ASSERT_EQ(MSG, write(sfd, in, MSG));
			ASSERT_TRUE(read_all(cfd, in, MSG, false));
			ASSERT_EQ(0, memcmp(in, out, MSG)) TH_LOG("round trip %d", i);
		}
		polled[mode] = rs_device_stat("sleep_polled") - polled[mode];
	}
	TH_LOG("AC files: completions sleep-polled in 200 round trips: %ld with 0, %ld with 1000",
	       polled[0], polled[1]);
	EXPECT_EQ(0, polled[0]);
	EXPECT_LT(0, polled[1]);
	close(cfd);
	close(sfd);
	rdmashare_close(rs);
}

/*
 * One SEND's completion consumes a bounded part of what the file published
 * (second review, finding 6): the SEND waits for the server's only slot
 * while 3000 NOPs are published without ENTER; when the slot comes back
 * and the SEND completes, 64 SQEs go in the completion handler and 1024
 * in the file's work item, then the flag asks for ENTER, which takes the
 * rest.  (All 3000 used to go in the shared QP's completion handler.)
 */
#define FLOOD	3000

TEST_F_TIMEOUT(wk, completion_budget, 120)
{
	struct sockaddr_in sin = addr_of(PORT + 5);
	struct rdmashare *s = rs_open_setup(1 << 20, 1);
	struct rdmashare_ac_stats st;
	struct rdmashare_sqe *sqe;
	unsigned int tail0, head, i;
	char buf[MSG] = "x";
	struct raw c;
	int l, ac, sac;

	ASSERT_NE(NULL, s);
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/credits_per_ac", "1"));
	memset(&c, 0, sizeof(c));
	c.p.flags = RDMASHARE_SETUP_SQ_WAKEUP;
	c.p.sq_entries = 4096;
	c.p.cq_entries = 8192;
	c.p.data_size = 1 << 20;
	c.p.rx_slots = 16;
	c.rs = rs_open_with(&c.p);
	ASSERT_NE(NULL, c.rs);
	c.rings = mmap(NULL, c.p.rings_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       rdmashare_fd(c.rs), RDMASHARE_OFF_RINGS);
	ASSERT_NE(MAP_FAILED, c.rings);
	c.sq_head = (unsigned int *)((char *)c.rings + c.p.sq_off.head);
	c.sq_tail = (unsigned int *)((char *)c.rings + c.p.sq_off.tail);
	c.sq_flags = (unsigned int *)((char *)c.rings + c.p.sq_off.flags);

	l = rdmashare_listen(s, PORT + 5, 4);
	ASSERT_LT(0, l);
	ac = rdmashare_connect(c.rs, (struct sockaddr *)&sin, 20000);
	ASSERT_LT(0, ac);
	sac = rdmashare_accept(s, l, 20000);
	ASSERT_LT(0, sac);
	/* The first takes the only slot; the second waits for it. */
	ASSERT_EQ(0, rdmashare_send(c.rs, ac, buf, sizeof(buf)));
	ASSERT_EQ(0, rdmashare_send(c.rs, ac, buf, sizeof(buf)));
	usleep(300000);
	ASSERT_EQ(load_acquire(c.sq_tail), load_acquire(c.sq_head));
	ASSERT_EQ(0, rdmashare_ac_stats(c.rs, ac, &st));
	ASSERT_EQ(1, st.queued_ops);

	tail0 = load_acquire(c.sq_tail);
	for (i = 0; i < FLOOD; i++) {
		sqe = rdmashare_get_sqe(c.rs);
		ASSERT_NE(NULL, sqe);
		sqe->opcode = RDMASHARE_OP_NOP;
		sqe->user_data = 1000 + i;
	}
	publish(&c, tail0 + FLOOD);
	usleep(300000);
	EXPECT_EQ(tail0, load_acquire(c.sq_head));

	/* The slot comes back: the waiting SEND goes and completes. */
	EXPECT_EQ(MSG, rdmashare_recv(s, sac, buf, sizeof(buf), 20000));
	rdmashare_submit(s);	/* its RELEASE */
	usleep(2000000);
	head = load_acquire(c.sq_head);
	ASSERT_EQ(0, rdmashare_ac_stats(c.rs, ac, &st));
	EXPECT_EQ(2, st.tx_msgs);
	TH_LOG("%u of %u NOPs consumed without ENTER", head - tail0, FLOOD);
	EXPECT_GE(64 + 1024 + 64, head - tail0);
	EXPECT_LT(0, head - tail0);
	EXPECT_TRUE(load_acquire(c.sq_flags) & RDMASHARE_SQ_NEED_WAKEUP);
	/* ENTER takes the rest; every NOP completes. */
	EXPECT_EQ(tail0 + FLOOD - head, (unsigned int)enter(&c, tail0 + FLOOD - head, 0));
	EXPECT_EQ(0, rs_op_result(c.rs, 1000 + FLOOD - 1));
	EXPECT_EQ(MSG, rdmashare_recv(s, sac, buf, sizeof(buf), 20000));
	raw_close(&c);
	rdmashare_close(s);
}

/*
 * A poller that does not run holds up nobody's completions (second
 * review, finding 5): a process at SCHED_IDLE busy-polls the shared QP in
 * ENTER, on a CPU that a spinner keeps busy; a ping-pong between two AC
 * files on the same QPs, on the other CPU, takes about as long as without
 * them (measured first, in the same run).  An AC file's read sleeps and
 * does not poll: its completions come from the CQ work alone, which
 * completion events used not to queue while a busy poller was in ENTER,
 * running or not.  The kernel preempts fully meanwhile (PREEMPT_DYNAMIC's
 * debugfs switch), so that the spinner can take the CPU from a poller
 * inside ENTER; with voluntary preemption the poller leaves ENTER first.
 * A kernel without the switch (the debug kernel) runs it as it is: the
 * test then guards the fix without being able to show the stall.
 */
#define PREEMPT_MODE	"/sys/kernel/debug/sched/preempt"

/* The current mode in @PREEMPT_MODE's list ("none (voluntary) full"). */
static int preempt_mode(char *mode, size_t len)
{
	char buf[128], *open, *close;

	if (rs_read_file(PREEMPT_MODE, buf, sizeof(buf)))
		return -1;
	open = strchr(buf, '(');
	close = open ? strchr(open, ')') : NULL;
	if (!close || (size_t)(close - open) > len)
		return -1;
	snprintf(mode, len, "%.*s", (int)(close - open - 1), open + 1);
	return 0;
}

/*
 * Which waiter starves on CPU 0: a busy poller (SCHED_IDLE, beside a
 * spinner of the normal class) or a sleeper (of the normal class, beside a
 * real-time spinner).  Set before the children fork.
 */
static bool starve_sleeper;

static int starved_poller(int ready_fd, unsigned int port)
{
	struct sockaddr_in sin = addr_of(port);
	struct sched_param sp = { 0 };
	struct rdmashare_cqe *cqe;
	char buf[MSG] = "poll";
	cpu_set_t cpus;
	struct raw r;
	int l, c, s;

	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus) ||
	    (!starve_sleeper && sched_setscheduler(0, SCHED_IDLE, &sp)))
		return 10;
	if (raw_open(&r, 0, 64))
		return 11;
	l = rdmashare_listen(r.rs, port, 4);
	c = rdmashare_connect(r.rs, (struct sockaddr *)&sin, 20000);
	s = rdmashare_accept(r.rs, l, 20000);
	if (l < 0 || c < 0 || s < 0)
		return 12;
	/*
	 * A delivery to the connecting end: its waits poll the QP that the
	 * AC file ping-pong's replies come on (the connecting side's).
	 */
	if (rdmashare_send(r.rs, s, buf, sizeof(buf)) ||
	    rdmashare_recv(r.rs, c, buf, sizeof(buf), 20000) != MSG)
		return 13;
	if (write(ready_fd, "r", 1) != 1)
		return 14;
	for (;;)
		rdmashare_wait_cqe(r.rs, &cqe, 10);
}

static int spinner(int ready_fd, unsigned int port)
{
	struct sched_param sp = { .sched_priority = 1 };
	volatile unsigned long n = 0;
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus) ||
	    (starve_sleeper && sched_setscheduler(0, SCHED_FIFO, &sp)) ||
	    write(ready_fd, "r", 1) != 1)
		return 10;
	for (;;)
		n++;
}

/*
 * @n round trips of MSG bytes between AC files @cfd and @sfd, ms; -1 if
 * one went wrong or they took over @limit ms.
 */
static double round_trips(int cfd, int sfd, int n, double limit)
{
	unsigned char out[MSG], in[MSG];
	double t = now_ms();
	int i;

	for (i = 0; i < n; i++) {
		memset(out, i, sizeof(out));
		if (write(cfd, out, MSG) != MSG || !read_all(sfd, in, MSG, true) ||
		    write(sfd, in, MSG) != MSG || !read_all(cfd, in, MSG, true) ||
		    memcmp(in, out, MSG) || now_ms() - t > limit)
			return -1;
	}
	return now_ms() - t;
}

/*
 * Round trips on AC files (their waits neither busy- nor sleep-poll) while
 * a waiter of another process on the same QP starves on CPU 0; @port and
 * @port + 1.
 */
static void starved(struct __test_metadata *_metadata, bool sleeper, unsigned int port)
{
	struct rdmashare_setup p = {
		.flags = RDMASHARE_SETUP_FILES, .files_size = 1 << 20,
		.data_size = 1 << 20, .rx_slots = 64,
	};
	struct sockaddr_in sin = addr_of(port);
	pid_t poller, spin;
	double base, loaded;
	struct rdmashare *rs;
	int l, cfd, sfd;
	char mode[32] = "";
	cpu_set_t cpus;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs");
	if (preempt_mode(mode, sizeof(mode)))
		TH_LOG("no " PREEMPT_MODE ": the kernel's own preemption");
	CPU_ZERO(&cpus);
	CPU_SET(1, &cpus);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpus), &cpus));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/busy_poll_us", sleeper ? "0" : "10000"));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/sleep_poll_us", sleeper ? "1000" : "0"));
	starve_sleeper = sleeper;
	rs = rs_open_with(&p);
	ASSERT_NE(NULL, rs);
	l = rdmashare_listen_files(rs, port, 4);
	ASSERT_LE(0, l);
	cfd = rdmashare_connect_file(rs, (struct sockaddr *)&sin, 20000, 0, 0);
	ASSERT_LE(0, cfd);
	sfd = rdmashare_accept_file(rs, l, 20000, 0, 0);
	ASSERT_LE(0, sfd);
	ASSERT_LT(0, round_trips(cfd, sfd, 20, 60000));
	base = round_trips(cfd, sfd, 200, 60000);
	ASSERT_LT(0, base);

	if (mode[0])
		ASSERT_EQ(0, rs_write_file(PREEMPT_MODE, "full"));
	poller = rs_fork_ready(starved_poller, port + 1);
	spin = rs_fork_ready(spinner, 0);
	/* Ten times the time alone fails anyway: no need to wait longer. */
	loaded = poller > 0 && spin > 0 ? round_trips(cfd, sfd, 200, 10 * base + 2000) : -1;
	if (spin > 0)
		kill(spin, SIGKILL);
	if (poller > 0)
		kill(poller, SIGKILL);
	waitpid(spin, NULL, 0);
	waitpid(poller, NULL, 0);
	if (mode[0])
		EXPECT_EQ(0, rs_write_file(PREEMPT_MODE, mode));
	ASSERT_LT(0, poller);
	ASSERT_LT(0, spin);
	TH_LOG("200 round trips: %.0f ms alone, %.0f ms beside a starved %s (%.2fx%s)",
	       base, loaded, sleeper ? "sleeper" : "poller", loaded / base,
	       loaded < 0 ? ", over 10x or failed" : "");
	EXPECT_LT(0, loaded);
	/* 12x for the poller on c24c091~1 (stock 6.12 guest); about 1x since. */
	EXPECT_GT(3 * base + 100, loaded);
	close(cfd);
	close(sfd);
	rdmashare_close(rs);
}

TEST_F_TIMEOUT(wk, starved_poller, 240)
{
	starved(_metadata, false, PORT + 6);
}

TEST_F_TIMEOUT(wk, starved_sleeper, 240)
{
	starved(_metadata, true, PORT + 9);
}

TEST_HARNESS_MAIN
