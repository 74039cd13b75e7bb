// SPDX-License-Identifier: GPL-2.0
/*
 * Many ACs on few resources:
 *  - acs_4096: a process with the default SETUP sizes (64 receive slots, a
 *    1024-entry CQ) opens 4096 ACs to one peer, whose file has the default
 *    sizes too, and echoes messages on all of them, every byte checked:
 *    receive slots are lent as ACs receive (protocol version 3), and an
 *    AC's CLOSED completion takes no CQ entry in advance;
 *  - closed_overflow: 40 ACs of a file with a 16-entry CQ all close at
 *    once: the CLOSED completions that find no room wait in the kernel
 *    (RDMASHARE_SQ_CQ_OVERFLOW) and come, each once, as the CQ is reaped;
 *  - closed_overflow_cancelled: the same, but the application CLOSEs the
 *    ACs whose CLOSED waits: an AC's CLOSED comes before its CLOSE's
 *    completion or not at all, and some never come;
 *  - procs_x_acs: RS_SCALE_PROCS client processes (4; make scale: 16)
 *    with RS_SCALE_ACS ACs each (512; 1024) to as many servers, all on
 *    the one QP pair to this host: every AC echoes its messages, each
 *    checked; the kernel's slab per AC end is reported (and must stay
 *    under 16 KiB);
 *  - shared_window: 4 processes stream 64-byte messages on 2 ACs each to
 *    one file with 4 slots per AC that reads them in turn, as
 *    "rs-stream -a 8 -P 4" does (it stalled once: a WANT that came while
 *    credits were owed was dropped, and the window then shrank).
 */
#include <arpa/inet.h>
#include <sys/mman.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT		8100
#define NR_ACS		4096
#define ROUNDS		2
#define MSG		64

static struct sockaddr_in addr_of(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

static void fill(unsigned char *buf, unsigned int ac, unsigned int round)
{
	unsigned int i;

	for (i = 0; i < MSG; i++)
		buf[i] = (unsigned char)(ac * 31 + round * 7 + i);
}

/* ACs a server accepts (scale_server()): set before it is forked. */
static int server_acs = NR_ACS;

/* The peer: accepts server_acs ACs, then echoes ROUNDS messages on each. */
static int scale_server(int ready_fd, unsigned int port)
{
	struct rdmashare_setup p = {};
	int l, i, r, nr = server_acs;
	unsigned char buf[256];
	struct rdmashare *rs;
	int *acs;
	ssize_t n;

	acs = calloc(nr, sizeof(*acs));
	rs = rs_open_with(&p);
	if (!rs || !acs)
		return 10;
	l = rdmashare_listen(rs, port, 1024);
	if (l < 0)
		return 11;
	if (write(ready_fd, "r", 1) != 1)
		return 12;
	for (i = 0; i < nr; i++) {
		acs[i] = rdmashare_accept(rs, l, 120000);
		if (acs[i] < 0)
			return 13;
	}
	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < nr; i++) {
			/* Not the order they were sent in. */
			int k = (i * 7 + r) % nr;

			n = rdmashare_recv(rs, acs[k], buf, sizeof(buf), 120000);
			if (n != MSG)
				return 14;
			if (rdmashare_send(rs, acs[k], buf, n))
				return 15;
		}
	}
	if (rdmashare_flush(rs, 120000))
		return 16;
	/* The client closes first; this end's ACs see it. */
	for (i = 0; i < nr; i++)
		if (rdmashare_recv(rs, acs[i], buf, sizeof(buf), 120000) != -EPIPE)
			return 17;
	rdmashare_close(rs);
	free(acs);
	return 0;
}

FIXTURE(scale) {
	int unused;
};

FIXTURE_SETUP(scale)
{
}

FIXTURE_TEARDOWN(scale)
{
}

TEST_F_TIMEOUT(scale, acs_4096, 600)
{
	struct sockaddr_in sin = addr_of(PORT);
	unsigned char out[MSG], in[256];
	struct rdmashare_setup p = {};
	static int acs[NR_ACS];
	struct rdmashare *rs;
	double t0;
	pid_t pid;
	int i, r;

	pid = rs_fork_ready(scale_server, PORT);
	ASSERT_LT(0, pid);
	rs = rs_open_with(&p);
	ASSERT_NE(NULL, rs);
	EXPECT_EQ(64, p.rx_slots);
	EXPECT_EQ(1024, p.cq_entries);
	EXPECT_LE(NR_ACS, p.max_acs);
	t0 = rs_now();
	for (i = 0; i < NR_ACS; i++) {
		acs[i] = rdmashare_connect(rs, (struct sockaddr *)&sin, 30000);
		ASSERT_LT(0, acs[i]) TH_LOG("AC %d: %s", i, strerror(-acs[i]));
	}
	TH_LOG("%d ACs open in %.1f s", NR_ACS, rs_now() - t0);
	t0 = rs_now();
	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < NR_ACS; i++) {
			fill(out, i, r);
			ASSERT_EQ(0, rdmashare_send(rs, acs[i], out, MSG)) TH_LOG("AC %d", i);
		}
		for (i = NR_ACS - 1; i >= 0; i--) {
			ASSERT_EQ(MSG, rdmashare_recv(rs, acs[i], in, sizeof(in), 60000))
				TH_LOG("round %d AC %d", r, i);
			fill(out, i, r);
			ASSERT_EQ(0, memcmp(out, in, MSG)) TH_LOG("round %d AC %d", r, i);
		}
	}
	TH_LOG("%d messages echoed in %.1f s", NR_ACS * ROUNDS, rs_now() - t0);
	rdmashare_close(rs);
	EXPECT_EQ(0, rs_wait_child(pid));
}

/* ---- one file's slots shared by ACs that stream ---- */

#define SW_PROCS	4
#define SW_ACS		2
#define SW_MSGS		600

static int sw_client(int ready_fd, unsigned int port)
{
	struct rdmashare_setup p = { .flags = RDMASHARE_SETUP_SQ_WAKEUP, .rx_slots = 8 };
	struct sockaddr_in sin = addr_of(port);
	unsigned char buf[MSG] = {};
	struct rdmashare *rs;
	int ac[SW_ACS], a, i;

	rs = rs_open_with(&p);
	if (!rs)
		return 10;
	for (a = 0; a < SW_ACS; a++) {
		ac[a] = rdmashare_connect(rs, (struct sockaddr *)&sin, 20000);
		if (ac[a] < 0)
			return 11;
	}
	if (write(ready_fd, "r", 1) != 1)
		return 12;
	for (i = 0; i < SW_MSGS; i++) {
		for (a = 0; a < SW_ACS; a++) {
			memcpy(buf, &i, sizeof(i));
			if (rdmashare_send(rs, ac[a], buf, MSG))
				return 13;
		}
	}
	if (rdmashare_flush(rs, 60000))
		return 14;
	rdmashare_close(rs);
	return 0;
}

TEST_F_TIMEOUT(scale, shared_window, 240)
{
	struct rdmashare_setup p = { .flags = RDMASHARE_SETUP_SQ_WAKEUP,
				     .rx_slots = 4 * SW_PROCS * SW_ACS };
	int acs[SW_PROCS * SW_ACS], seq[SW_PROCS * SW_ACS] = {}, l, i, k;
	pid_t pids[SW_PROCS];
	unsigned char buf[MSG];
	struct rdmashare *rs;
	double t0;

	rs = rs_open_with(&p);
	ASSERT_NE(NULL, rs);
	l = rdmashare_listen(rs, PORT + 3, SW_PROCS * SW_ACS);
	ASSERT_LT(0, l);
	for (i = 0; i < SW_PROCS; i++) {
		pids[i] = rs_fork_ready(sw_client, PORT + 3);
		ASSERT_LT(0, pids[i]);
	}
	for (i = 0; i < SW_PROCS * SW_ACS; i++) {
		acs[i] = rdmashare_accept(rs, l, 20000);
		ASSERT_LT(0, acs[i]);
	}
	t0 = rs_now();
	for (k = 0; k < SW_MSGS; k++) {
		for (i = 0; i < SW_PROCS * SW_ACS; i++) {
			ASSERT_EQ(MSG, rdmashare_recv(rs, acs[i], buf, sizeof(buf), 30000))
				TH_LOG("message %d of AC %d", k, i);
			ASSERT_EQ(0, memcmp(buf, &seq[i], sizeof(seq[i])));
			seq[i]++;
		}
	}
	TH_LOG("%d messages in %.1f s", SW_MSGS * SW_PROCS * SW_ACS, rs_now() - t0);
	for (i = 0; i < SW_PROCS; i++)
		EXPECT_EQ(0, rs_wait_child(pids[i]));
	rdmashare_close(rs);
}

/* ---- CLOSED completions beyond the CQ's room ---- */

#define NR_SMALL	40

struct small {
	struct rdmashare *srv, *cli;
	struct rdmashare_setup p;
	void *rings;
	unsigned int *sq_flags;
	int acs[NR_SMALL];
};

/*
 * A server file with a 16-entry CQ (4 slots, 8 SQEs) and NR_SMALL ACs from
 * a client, whose file then closes: every server AC gets a CLOSED.
 */
static int small_setup(struct __test_metadata *_metadata, struct small *s, unsigned int port)
{
	struct sockaddr_in sin = addr_of(port);
	int l, i, c;

	s->p = (struct rdmashare_setup){ .sq_entries = 8, .cq_entries = 16, .rx_slots = 4 };
	s->srv = rs_open_with(&s->p);
	s->cli = rs_open_setup(1 << 20, 64);
	if (!s->srv || !s->cli)
		return -1;
	/* The rings once more, to read the SQ flags. */
	s->rings = mmap(NULL, s->p.rings_size, PROT_READ, MAP_SHARED, rdmashare_fd(s->srv),
			RDMASHARE_OFF_RINGS);
	if (s->rings == MAP_FAILED)
		return -2;
	s->sq_flags = (unsigned int *)((char *)s->rings + s->p.sq_off.flags);
	l = rdmashare_listen(s->srv, port, NR_SMALL);
	if (l < 0)
		return -3;
	for (i = 0; i < NR_SMALL; i++) {
		c = rdmashare_connect(s->cli, (struct sockaddr *)&sin, 20000);
		s->acs[i] = rdmashare_accept(s->srv, l, 20000);
		if (c < 0 || s->acs[i] < 0)
			return -4;
	}
	rdmashare_close(s->cli);
	s->cli = NULL;
	/* The CQ takes 12 (16, less 4 kept for RECVs into free slots): more wait. */
	for (i = 0; i < 200 && !(__atomic_load_n(s->sq_flags, __ATOMIC_ACQUIRE) &
				 RDMASHARE_SQ_CQ_OVERFLOW); i++)
		usleep(50000);
	return __atomic_load_n(s->sq_flags, __ATOMIC_ACQUIRE) & RDMASHARE_SQ_CQ_OVERFLOW ? 0 : -5;
}

static int small_index(struct small *s, __u32 ac)
{
	int i;

	for (i = 0; i < NR_SMALL; i++)
		if ((__u32)s->acs[i] == ac)
			return i;
	return -1;
}

TEST_F_TIMEOUT(scale, closed_overflow, 120)
{
	struct rdmashare_cqe *cqe;
	int seen[NR_SMALL] = {}, got = 0, i, first = 0;
	struct small s = {};

	ASSERT_EQ(0, small_setup(_metadata, &s, PORT + 1));
	/* What is in the CQ now, without ENTER: fewer than all. */
	while (!rdmashare_peek_cqe(s.srv, &cqe)) {
		ASSERT_EQ(RDMASHARE_CQE_CLOSED, cqe->type);
		i = small_index(&s, cqe->ac);
		ASSERT_LE(0, i);
		seen[i]++;
		first++;
		rdmashare_cqe_seen(s.srv, cqe);
	}
	TH_LOG("%d CLOSED in the CQ at first, %d waited", first, NR_SMALL - first);
	EXPECT_GT(NR_SMALL, first);
	/* ENTERs (waits) bring the rest, each AC's once. */
	for (got = first; got < NR_SMALL; got++) {
		ASSERT_EQ(0, rdmashare_wait_cqe(s.srv, &cqe, 5000)) TH_LOG("%d of %d", got, NR_SMALL);
		ASSERT_EQ(RDMASHARE_CQE_CLOSED, cqe->type);
		EXPECT_EQ(0, cqe->res);
		i = small_index(&s, cqe->ac);
		ASSERT_LE(0, i);
		seen[i]++;
		rdmashare_cqe_seen(s.srv, cqe);
	}
	for (i = 0; i < NR_SMALL; i++) {
		EXPECT_EQ(1, seen[i]) TH_LOG("AC %d", s.acs[i]);
	}
	EXPECT_NE(0, rdmashare_wait_cqe(s.srv, &cqe, 500));
	EXPECT_EQ(0, *s.sq_flags & RDMASHARE_SQ_CQ_OVERFLOW);
	/* The ids are still the application's: CLOSE frees them. */
	for (i = 0; i < NR_SMALL; i++)
		EXPECT_EQ(0, rdmashare_close_ac(s.srv, s.acs[i]));
	munmap(s.rings, s.p.rings_size);
	rdmashare_close(s.srv);
}

TEST_F_TIMEOUT(scale, closed_overflow_cancelled, 120)
{
	int closed[NR_SMALL] = {}, done[NR_SMALL] = {}, order[NR_SMALL];
	int ndone = 0, none = 0, i, next;
	struct rdmashare_sqe *sqe;
	struct rdmashare_cqe *cqe;
	struct small s = {};
	double end;

	ASSERT_EQ(0, small_setup(_metadata, &s, PORT + 2));
	/* What is in the CQ: those ACs are closed last. */
	while (!rdmashare_peek_cqe(s.srv, &cqe)) {
		i = small_index(&s, cqe->ac);
		ASSERT_LE(0, i);
		closed[i]++;
		rdmashare_cqe_seen(s.srv, cqe);
	}
	for (i = 0, next = 0; i < NR_SMALL; i++)
		if (!closed[i])
			order[next++] = i;
	for (i = 0; i < NR_SMALL; i++)
		if (closed[i])
			order[next++] = i;
	/* CLOSE every AC, a few at a time (the SQ has 8 entries). */
	for (next = 0, end = rs_now() + 30; ndone < NR_SMALL; ) {
		ASSERT_GT(end, rs_now());
		while (next < NR_SMALL && (sqe = rdmashare_get_sqe(s.srv))) {
			sqe->opcode = RDMASHARE_OP_CLOSE;
			sqe->ac = s.acs[order[next]];
			sqe->user_data = order[next++];
		}
		ASSERT_LE(0, rdmashare_submit(s.srv));
		while (!rdmashare_peek_cqe(s.srv, &cqe)) {
			i = small_index(&s, cqe->ac);
			ASSERT_LE(0, i);
			if (cqe->type == RDMASHARE_CQE_CLOSED) {
				/* Never after the AC's CLOSE completed. */
				EXPECT_EQ(0, done[i]) TH_LOG("AC %d", s.acs[i]);
				closed[i]++;
			} else {
				ASSERT_EQ(RDMASHARE_CQE_OP, cqe->type);
				EXPECT_EQ(RDMASHARE_OP_CLOSE, cqe->opcode);
				EXPECT_EQ(0, cqe->res);
				EXPECT_EQ(i, (int)cqe->user_data);
				done[i]++;
				ndone++;
			}
			rdmashare_cqe_seen(s.srv, cqe);
		}
		usleep(1000);
	}
	for (i = 0; i < NR_SMALL; i++) {
		EXPECT_EQ(1, done[i]) TH_LOG("AC %d", s.acs[i]);
		EXPECT_GE(1, closed[i]) TH_LOG("AC %d", s.acs[i]);
		none += !closed[i];
	}
	/* The first CLOSEs found their AC's CLOSED waiting, and took it. */
	TH_LOG("%d of %d ACs had no CLOSED", none, NR_SMALL);
	EXPECT_LT(0, none);
	/* Nothing for them comes after. */
	EXPECT_NE(0, rdmashare_wait_cqe(s.srv, &cqe, 500));
	EXPECT_EQ(0, *s.sq_flags & RDMASHARE_SQ_CQ_OVERFLOW);
	munmap(s.rings, s.p.rings_size);
	rdmashare_close(s.srv);
}

/* ---- many processes' ACs on one QP ---- */

#define PX_PORT		(PORT + 40)
#define PX_PROCS	4	/* RS_SCALE_PROCS; make scale: 16 */
#define PX_ACS		512	/* RS_SCALE_ACS; make scale: 1024 */

static unsigned int env_uint(const char *name, unsigned int def)
{
	const char *v = getenv(name);

	return v && *v ? (unsigned int)strtoul(v, NULL, 0) : def;
}

/* Kernel slab memory, bytes (/proc/meminfo's Slab). */
static long slab_bytes(void)
{
	char buf[8192], *p;

	if (rs_read_file("/proc/meminfo", buf, sizeof(buf)))
		return -1;
	p = strstr(buf, "\nSlab:");
	return p ? strtol(p + 7, NULL, 10) * 1024 : -1;
}

/*
 * Client @nr of procs_x_acs: @acs ACs to its server's port, "o" on @open_fd
 * once all are open, then, once @go_fd says so, ROUNDS messages echoed on
 * each, every byte checked.
 */
static int px_client(unsigned int port, int acs, int open_fd, int go_fd)
{
	struct sockaddr_in sin = addr_of(port);
	unsigned char out[MSG], in[256];
	struct rdmashare_setup p = {};
	struct rdmashare *rs;
	int i, r, *ac;
	char c;

	ac = calloc(acs, sizeof(*ac));
	rs = rs_open_with(&p);
	if (!rs || !ac)
		return 20;
	for (i = 0; i < acs; i++) {
		ac[i] = rdmashare_connect(rs, (struct sockaddr *)&sin, 120000);
		if (ac[i] < 0)
			return 21;
	}
	if (write(open_fd, "o", 1) != 1 || read(go_fd, &c, 1) != 1)
		return 22;
	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < acs; i++) {
			fill(out, i, r);
			if (rdmashare_send(rs, ac[i], out, MSG))
				return 23;
		}
		for (i = acs - 1; i >= 0; i--) {
			fill(out, i, r);
			if (rdmashare_recv(rs, ac[i], in, sizeof(in), 120000) != MSG ||
			    memcmp(out, in, MSG))
				return 24;
		}
	}
	rdmashare_close(rs);
	free(ac);
	return 0;
}

/*
 * RS_SCALE_PROCS processes with RS_SCALE_ACS ACs each (4 x 512 in make
 * check, 16 x 1024 in make scale) to as many servers on this host, all on
 * the one QP pair to this host's own address (qps_per_peer 1): every AC
 * echoes ROUNDS messages, each checked.  The kernel's slab memory while
 * they are all open, per AC end, is reported and bounded.
 */
TEST_F_TIMEOUT(scale, procs_x_acs, 3600)
{
	unsigned int procs = env_uint("RS_SCALE_PROCS", PX_PROCS);
	unsigned int acs = env_uint("RS_SCALE_ACS", PX_ACS);
	int openp[2], gop[2], st, bad = 0;
	long slab0, slab1, per_end;
	pid_t pids[2 * 64];
	char qpp[16] = "";
	unsigned int i;
	double t0;
	char c;

	ASSERT_GE(64, procs);
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/qps_per_peer", qpp, sizeof(qpp)));
	if (atoi(qpp) != 1)
		SKIP(return, "qps_per_peer is %s, not 1", qpp);
	ASSERT_EQ(0, pipe(openp));
	ASSERT_EQ(0, pipe(gop));
	slab0 = slab_bytes();
	t0 = rs_now();
	server_acs = acs;
	for (i = 0; i < procs; i++) {
		pids[2 * i] = rs_fork_ready(scale_server, PX_PORT + i);
		ASSERT_LT(0, pids[2 * i]);
		pids[2 * i + 1] = fork();
		ASSERT_LE(0, pids[2 * i + 1]);
		if (!pids[2 * i + 1]) {
			close(openp[0]);
			close(gop[1]);
			_exit(px_client(PX_PORT + i, acs, openp[1], gop[0]));
		}
	}
	close(openp[1]);
	close(gop[0]);
	for (i = 0; i < procs; i++)
		ASSERT_EQ(1, read(openp[0], &c, 1)) TH_LOG("%u of %u clients open", i, procs);
	slab1 = slab_bytes();
	per_end = (slab1 - slab0) / (2L * procs * acs);
	TH_LOG("%u ACs (x2 ends) open in %.1f s over %d rdmashare QPs; slab %+ld KiB, %ld bytes per AC end",
	       procs * acs, rs_now() - t0, count_rdmashare_qps(), (slab1 - slab0) >> 10,
	       per_end);
	/* The QP pair to this host: its two ends. */
	EXPECT_EQ(2, count_rdmashare_qps());
	EXPECT_GT(16384, per_end);
	t0 = rs_now();
	for (i = 0; i < procs; i++)
		ASSERT_EQ(1, write(gop[1], "g", 1));
	for (i = 0; i < 2 * procs; i++) {
		st = rs_wait_child(pids[i]);
		if (st)
			TH_LOG("%s %u exited %d", i % 2 ? "client" : "server", i / 2, st);
		bad += !!st;
	}
	TH_LOG("%u messages echoed in %.1f s", procs * acs * ROUNDS, rs_now() - t0);
	EXPECT_EQ(0, bad);
}

TEST_HARNESS_MAIN
