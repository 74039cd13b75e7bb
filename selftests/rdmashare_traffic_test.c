// SPDX-License-Identifier: GPL-2.0
/*
 * Traffic over one shared QP pair (Soft-RoCE loopback to the guest's own
 * address, RS_IP):
 *  - many_acs: 8 client processes open 128 ACs each (1024) to one peer and
 *    send numbered, checksummed messages of mixed sizes, 64 B to 4 MiB; the
 *    receivers check each arrives exactly once, in order, intact, and the
 *    host has 2 rdmashare QPs (one each way), not 1024;
 *  - slow_receiver: an AC whose reader never reads does not stall another
 *    AC on the same QP;
 *  - close_in_flight: messages queued before a close all arrive, then the
 *    close;
 *  - kill_sender: a sender killed with SIGKILL mid-transfer shows up as a
 *    closed AC at the peer, promptly.
 * Leaks are caught by kmemleak in the debug kernel.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <time.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT_BASE	7200
#define NPROC		8
#define ACS_PER_PROC	128
#define ROUNDS		3
#define MAGIC		0x52534d47u

struct msg_hdr {
	__u32 magic;
	__u32 proc;
	__u32 ac;
	__u32 round;
	__u32 len;
	__u32 sum;
};

static struct sockaddr_in addr_of(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

static __u32 fnv(const unsigned char *p, size_t n)
{
	__u32 h = 2166136261u;

	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

/* Mixed sizes: mostly small, around the chunk size, and a few large. */
static size_t msg_size(unsigned int proc, unsigned int ac, unsigned int round)
{
	static const size_t small[] = {
		64, 100, 1000, 4096, 16383, 16384, 16385, 40000,
	};

	if (ac == (proc * 7 + round * 13) % ACS_PER_PROC) {
		if (round == 0)
			return 4 << 20;
		if (round == 1)
			return 1 << 20;
	}
	return small[(proc + ac * 3 + round) % 8];
}

static void make_msg(unsigned char *buf, size_t len, unsigned int proc,
		     unsigned int ac, unsigned int round)
{
	struct msg_hdr h = { MAGIC, proc, ac, round, len, 0 };
	size_t i;

	for (i = sizeof(h); i < len; i++)
		buf[i] = (unsigned char)(i * 13 + proc * 7 + ac * 3 + round);
	h.sum = fnv(buf + sizeof(h), len - sizeof(h));
	memcpy(buf, &h, sizeof(h));
}

/* Receiver for one client process: its 128 ACs, every message checked. */
static int receiver(int ready_fd, unsigned int proc)
{
	unsigned char *buf = malloc(4 << 20);
	struct rdmashare *rs = rs_open_setup(1 << 20, ACS_PER_PROC * 4);
	int l, acs[ACS_PER_PROC];
	unsigned int i, r;
	struct msg_hdr h;
	ssize_t n;

	if (!rs || !buf)
		return 20;
	l = rdmashare_listen(rs, PORT_BASE + proc, ACS_PER_PROC);
	if (l < 0)
		return 21;
	if (write(ready_fd, "r", 1) != 1)
		return 22;
	for (i = 0; i < ACS_PER_PROC; i++) {
		acs[i] = rdmashare_accept(rs, l, 120000);
		if (acs[i] < 0)
			return 23;
	}
	/* The client sends its AC index first: map accepted ACs to it. */
	for (i = 0; i < ACS_PER_PROC; i++) {
		__u32 idx;

		if (rdmashare_recv(rs, acs[i], &idx, sizeof(idx), 120000) != sizeof(idx) ||
		    idx >= ACS_PER_PROC)
			return 24;
		acs[i] = acs[i] | (idx << 20);
	}
	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < ACS_PER_PROC; i++) {
			int ac = acs[i] & 0xfffff;
			unsigned int idx = acs[i] >> 20;

			n = rdmashare_recv(rs, ac, buf, 4 << 20, 120000);
			if (n < (ssize_t)sizeof(h))
				return 25;
			memcpy(&h, buf, sizeof(h));
			if (h.magic != MAGIC || h.proc != proc || h.ac != idx)
				return 26;
			if (h.round != r)	/* lost, duplicated or reordered */
				return 27;
			if (h.len != n || n != (ssize_t)msg_size(proc, idx, r))
				return 28;
			if (h.sum != fnv(buf + sizeof(h), n - sizeof(h)))
				return 29;
		}
	}
	/* Nothing more: each AC's next event is the close. */
	for (i = 0; i < ACS_PER_PROC; i++) {
		if (rdmashare_recv(rs, acs[i] & 0xfffff, buf, 4 << 20, 120000) != -EPIPE)
			return 30;
		if (rdmashare_close_ac(rs, acs[i] & 0xfffff))
			return 31;
	}
	rdmashare_close(rs);
	free(buf);
	return 0;
}

static int sender(int go_fd, int conn_fd, unsigned int proc)
{
	unsigned char *buf = malloc(4 << 20);
	/* Every AC sets slots aside for what comes back, even if nothing does. */
	struct rdmashare *rs = rs_open_setup(16 << 20, ACS_PER_PROC * 4);
	struct sockaddr_in sin = addr_of(PORT_BASE + proc);
	int acs[ACS_PER_PROC];
	unsigned int i, r;
	char c;

	if (!rs || !buf)
		return 40;
	for (i = 0; i < ACS_PER_PROC; i++) {
		acs[i] = rdmashare_connect(rs, (struct sockaddr *)&sin, 60000);
		if (acs[i] < 0)
			return 41;
		if (rdmashare_send(rs, acs[i], &i, sizeof(i)))
			return 42;
	}
	/* Connected: wait until the parent has counted the QPs. */
	if (write(conn_fd, "c", 1) != 1 || read(go_fd, &c, 1) != 1)
		return 43;
	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < ACS_PER_PROC; i++) {
			size_t len = msg_size(proc, i, r);

			make_msg(buf, len, proc, i, r);
			if (rdmashare_send(rs, acs[i], buf, len))
				return 44;
		}
	}
	if (rdmashare_flush(rs, 120000))
		return 45;
	for (i = 0; i < ACS_PER_PROC; i++)
		if (rdmashare_close_ac(rs, acs[i]))
			return 46;
	rdmashare_close(rs);
	free(buf);
	return 0;
}

static int wait_all(pid_t *pids, int n, int *codes)
{
	int i, status, bad = 0;

	for (i = 0; i < n; i++) {
		codes[i] = -1;
		if (waitpid(pids[i], &status, 0) == pids[i] && WIFEXITED(status))
			codes[i] = WEXITSTATUS(status);
		bad += codes[i] != 0;
	}
	return bad;
}

FIXTURE(traffic) {
	int unused;
};

FIXTURE_SETUP(traffic)
{
}

FIXTURE_TEARDOWN(traffic)
{
}

TEST_F_TIMEOUT(traffic, many_acs, 900)
{
	pid_t rpids[NPROC], spids[NPROC];
	int codes[NPROC], ready[2], go[2], conn[2], i, qps;
	struct timespec t0, t1;
	char c;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(conn));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < NPROC; i++) {
		rpids[i] = fork();
		ASSERT_LE(0, rpids[i]);
		if (!rpids[i])
			_exit(receiver(ready[1], i));
	}
	close(ready[1]);
	for (i = 0; i < NPROC; i++)
		ASSERT_EQ(1, read(ready[0], &c, 1));
	for (i = 0; i < NPROC; i++) {
		spids[i] = fork();
		ASSERT_LE(0, spids[i]);
		if (!spids[i])
			_exit(sender(go[0], conn[1], i));
	}
	/* A sender that fails closes its end: the read sees EOF, not a hang. */
	close(conn[1]);
	close(go[0]);
	for (i = 0; i < NPROC; i++)
		ASSERT_EQ(1, read(conn[0], &c, 1));

	/* 1024 ACs are open: one QP each way, whatever the number of ACs. */
	qps = count_rdmashare_qps();
	TH_LOG("%d ACs open, rdmashare QPs on this host: %d", NPROC * ACS_PER_PROC, qps);
	EXPECT_EQ(2, qps);
	for (i = 0; i < NPROC; i++)
		ASSERT_EQ(1, write(go[1], "g", 1));

	EXPECT_EQ(0, wait_all(spids, NPROC, codes));
	for (i = 0; i < NPROC; i++)
		EXPECT_EQ(0, codes[i]) TH_LOG("sender %d", i);
	EXPECT_EQ(0, wait_all(rpids, NPROC, codes));
	for (i = 0; i < NPROC; i++)
		EXPECT_EQ(0, codes[i]) TH_LOG("receiver %d", i);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	TH_LOG("%d messages checked in %.1f s", NPROC * ACS_PER_PROC * ROUNDS,
	       t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9);
}

/* A reader that never reads AC "stuck" must not hold up AC "live". */
TEST_F_TIMEOUT(traffic, slow_receiver, 300)
{
	static unsigned char buf[64 << 10];
	struct sockaddr_in sin = addr_of(PORT_BASE + 100);
	struct rdmashare *srv = rs_open_setup(1 << 20, 64), *cli = rs_open_setup(8 << 20, 16);
	int l, stuck_s, live_s, stuck_c, live_c, i;

	ASSERT_NE(NULL, srv);
	ASSERT_NE(NULL, cli);
	l = rdmashare_listen(srv, PORT_BASE + 100, 4);
	ASSERT_LT(0, l);
	stuck_c = rdmashare_connect(cli, (struct sockaddr *)&sin, 30000);
	ASSERT_LT(0, stuck_c);
	stuck_s = rdmashare_accept(srv, l, 30000);
	ASSERT_LT(0, stuck_s);
	live_c = rdmashare_connect(cli, (struct sockaddr *)&sin, 30000);
	ASSERT_LT(0, live_c);
	live_s = rdmashare_accept(srv, l, 30000);
	ASSERT_LT(0, live_s);

	/* 64 x 64 KiB on the stuck AC: far more than its credits. */
	memset(buf, 0xab, sizeof(buf));
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, rdmashare_send(cli, stuck_c, buf, sizeof(buf)));
	/* The live AC still flows, both ways. */
	for (i = 0; i < 50; i++) {
		memset(buf, i, 1000);
		ASSERT_EQ(0, rdmashare_send(cli, live_c, buf, 1000));
		ASSERT_EQ(1000, rdmashare_recv(srv, live_s, buf, sizeof(buf), 30000));
		ASSERT_EQ(i, buf[999]);
		ASSERT_EQ(0, rdmashare_send(srv, live_s, buf, 10));
		ASSERT_EQ(10, rdmashare_recv(cli, live_c, buf, sizeof(buf), 30000));
	}
	/* Now read the stuck AC: everything is there, in order. */
	for (i = 0; i < 64; i++) {
		ASSERT_EQ((ssize_t)sizeof(buf),
			  rdmashare_recv(srv, stuck_s, buf, sizeof(buf), 60000));
		ASSERT_EQ(0xab, buf[sizeof(buf) - 1]);
	}
	rdmashare_close(cli);
	rdmashare_close(srv);
}

/* Close right after queueing: every message arrives, then the close. */
TEST_F_TIMEOUT(traffic, close_in_flight, 300)
{
	static unsigned char buf[100000];
	struct sockaddr_in sin = addr_of(PORT_BASE + 101);
	struct rdmashare *srv = rs_open_setup(1 << 20, 64), *cli = rs_open_setup(4 << 20, 16);
	int l, s, c, i;

	ASSERT_NE(NULL, srv);
	ASSERT_NE(NULL, cli);
	l = rdmashare_listen(srv, PORT_BASE + 101, 4);
	c = rdmashare_connect(cli, (struct sockaddr *)&sin, 30000);
	ASSERT_LT(0, c);
	s = rdmashare_accept(srv, l, 30000);
	ASSERT_LT(0, s);
	for (i = 0; i < 20; i++) {
		memset(buf, i, sizeof(buf));
		ASSERT_EQ(0, rdmashare_send(cli, c, buf, sizeof(buf)));
	}
	/* Close while the sends are queued: they go first. */
	ASSERT_EQ(0, rdmashare_close_ac(cli, c));
	for (i = 0; i < 20; i++) {
		ASSERT_EQ((ssize_t)sizeof(buf), rdmashare_recv(srv, s, buf, sizeof(buf), 60000));
		ASSERT_EQ(i, buf[sizeof(buf) - 1]);
	}
	EXPECT_EQ(-EPIPE, rdmashare_recv(srv, s, buf, sizeof(buf), 60000));
	/* SEND on a closed AC fails; closing it is fine. */
	EXPECT_EQ(0, rdmashare_close_ac(srv, s));
	rdmashare_close(cli);
	/* The whole file closed with ACs open: the peer sees the closes. */
	cli = rs_open_setup(1 << 20, 16);
	c = rdmashare_connect(cli, (struct sockaddr *)&sin, 30000);
	ASSERT_LT(0, c);
	s = rdmashare_accept(srv, l, 30000);
	ASSERT_LT(0, s);
	ASSERT_EQ(0, rdmashare_send(cli, c, buf, 100));
	ASSERT_EQ(0, rdmashare_flush(cli, 30000));
	rdmashare_close(cli);
	EXPECT_EQ(100, rdmashare_recv(srv, s, buf, sizeof(buf), 60000));
	EXPECT_EQ(-EPIPE, rdmashare_recv(srv, s, buf, sizeof(buf), 60000));
	rdmashare_close(srv);
}

/* SIGKILL a sender mid-transfer: its peer AC closes, promptly. */
TEST_F_TIMEOUT(traffic, kill_sender, 300)
{
	static unsigned char buf[256 << 10];
	struct sockaddr_in sin = addr_of(PORT_BASE + 102);
	struct rdmashare *srv = rs_open_setup(1 << 20, 64);
	int l, s, fds[2], got = 0;
	struct timespec t0, t1;
	pid_t pid;
	ssize_t n;
	char c;

	ASSERT_NE(NULL, srv);
	l = rdmashare_listen(srv, PORT_BASE + 102, 4);
	ASSERT_LT(0, l);
	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rdmashare *cli = rs_open_setup(32 << 20, 16);
		int ac = cli ? rdmashare_connect(cli, (struct sockaddr *)&sin, 30000) : -1;

		if (ac < 0 || write(fds[1], "c", 1) != 1)
			_exit(1);
		for (;;)	/* until killed */
			if (rdmashare_send(cli, ac, buf, sizeof(buf)))
				_exit(2);
	}
	ASSERT_EQ(1, read(fds[0], &c, 1));
	s = rdmashare_accept(srv, l, 30000);
	ASSERT_LT(0, s);
	/* Some data is flowing... */
	for (got = 0; got < 5; got++)
		ASSERT_EQ((ssize_t)sizeof(buf), rdmashare_recv(srv, s, buf, sizeof(buf), 60000));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* ... then whatever was in flight, then the close. */
	while ((n = rdmashare_recv(srv, s, buf, sizeof(buf), 60000)) == sizeof(buf))
		got++;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_EQ(-EPIPE, n);
	TH_LOG("%d messages, then the close %.2f s after the kill", got,
	       t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	EXPECT_LT(t1.tv_sec - t0.tv_sec, 30);
	EXPECT_EQ(0, rdmashare_close_ac(srv, s));
	rdmashare_close(srv);
}

TEST_HARNESS_MAIN
