// SPDX-License-Identifier: GPL-2.0
/*
 * What a local user may do (Documentation/design.rst, "Security"), on one
 * host (Soft-RoCE loopback to the guest's own address, RS_IP):
 *  - privileged_port: a user without CAP_NET_BIND_SERVICE cannot LISTEN
 *    below 1024 (EACCES), can above; root can below;
 *  - listeners_per_user: past max_listeners_per_user a user's LISTEN fails
 *    with EMFILE, another user's does not; a closed listener makes room;
 *  - acs_per_user: past max_acs_per_user a user's LISTEN fails with EMFILE,
 *    and a CONNECT to that user's listener is refused;
 *  - other_netns: a process in another network namespace cannot open the
 *    device (EOPNOTSUPP);
 *  - memcg: the memory of a file with 1024 ACs (its data area and the ACs)
 *    is charged to the memory cgroup of the process that made them;
 *  - close_frees_id: a CLOSE that fails because the peer closed the AC
 *    while the CLOSE waited behind credit-stalled SENDs still frees the id;
 *  - connect_timeout_shared: CONNECTs with a 1 ms timeout do not take down
 *    the QP that another CONNECT waits for.
 */
#include <arpa/inet.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT		7800
#define NOBODY		65534

static struct sockaddr_in addr_of(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

/* A tunable's value, to put back after a test. */
static unsigned long tunable(const char *name)
{
	char path[256], buf[64];

	snprintf(path, sizeof(path), RS_SYSFS "/%s", name);
	if (rs_read_file(path, buf, sizeof(buf)))
		return 0;
	return strtoul(buf, NULL, 0);
}

static int set_tunable(const char *name, unsigned long v)
{
	char path[256], buf[64];

	snprintf(path, sizeof(path), RS_SYSFS "/%s", name);
	snprintf(buf, sizeof(buf), "%lu", v);
	return rs_write_file(path, buf);
}

/* The tunables the tests change, put back whatever happens to a test. */
static const char *const limits[] = {
	"max_listeners_per_user", "max_acs_per_user", "idle_timeout_ms",
};

FIXTURE(limits)
{
	unsigned long saved[3];
};

FIXTURE_SETUP(limits)
{
	unsigned int i;

	for (i = 0; i < 3; i++)
		self->saved[i] = tunable(limits[i]);
}

FIXTURE_TEARDOWN(limits)
{
	unsigned int i;

	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, set_tunable(limits[i], self->saved[i]));
}

/* Become @uid for good (in a child). */
static int become(uid_t uid)
{
	return setgroups(0, NULL) || setgid(uid) || setuid(uid) ? -1 : 0;
}

/* Wait for a child; its exit status, or -1. */
static int child_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* Close a listener and wait until the kernel has done it. */
static int close_listener(struct rdmashare *rs, int l)
{
	int ret = rdmashare_close_ac(rs, l);

	return ret ?: rdmashare_flush(rs, 10000);
}

TEST(privileged_port)
{
	struct rdmashare *rs;
	pid_t pid;
	int l;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (become(NOBODY))
			_exit(10);
		rs = rs_open_setup(0, 0);
		if (!rs)
			_exit(11);
		if (rdmashare_listen(rs, 700, 4) != -EACCES)
			_exit(12);
		if (rdmashare_listen(rs, 1023, 4) != -EACCES)
			_exit(13);
		if (rdmashare_listen(rs, PORT, 4) <= 0)
			_exit(14);
		rdmashare_close(rs);
		_exit(0);
	}
	EXPECT_EQ(0, child_status(pid));

	rs = rs_open_setup(0, 0);
	ASSERT_NE(NULL, rs);
	l = rdmashare_listen(rs, 700, 4);
	EXPECT_LT(0, l);
	rdmashare_close(rs);
}

TEST_F(limits, listeners_per_user)
{
	int go[2], done[2], l;
	struct rdmashare *rs;
	char c = 0;
	pid_t pid;

	ASSERT_EQ(0, set_tunable("max_listeners_per_user", 3));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int ls[3], i;

		if (become(NOBODY))
			_exit(10);
		rs = rs_open_setup(1 << 16, 1);
		if (!rs)
			_exit(11);
		for (i = 0; i < 3; i++) {
			ls[i] = rdmashare_listen(rs, PORT + 10 + i, 4);
			if (ls[i] <= 0) {
				fprintf(stderr, "# listen %d: %d\n", i, ls[i]);
				_exit(12);
			}
		}
		if (rdmashare_listen(rs, PORT + 13, 4) != -EMFILE)
			_exit(13);
		/* A second file of the same user counts too. */
		{
			struct rdmashare *rs2 = rs_open_setup(1 << 16, 1);

			if (!rs2 || rdmashare_listen(rs2, PORT + 13, 4) != -EMFILE)
				_exit(14);
			rdmashare_close(rs2);
		}
		/* Held: the parent (another user) listens meanwhile. */
		if (write(done[1], "x", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(15);
		if (close_listener(rs, ls[0]))
			_exit(16);
		if (rdmashare_listen(rs, PORT + 13, 4) <= 0)
			_exit(17);
		rdmashare_close(rs);
		_exit(0);
	}
	close(done[1]);
	ASSERT_EQ(1, read(done[0], &c, 1)) {
		TH_LOG("child: %d", child_status(pid));
	}
	rs = rs_open_setup(0, 0);
	ASSERT_NE(NULL, rs);
	l = rdmashare_listen(rs, PORT + 14, 4);
	EXPECT_LT(0, l);
	ASSERT_EQ(1, write(go[1], "x", 1));
	EXPECT_EQ(0, child_status(pid));
	rdmashare_close(rs);
}

TEST_F(limits, acs_per_user)
{
	struct sockaddr_in sin = addr_of(PORT + 20);
	int go[2], done[2], ac;
	struct rdmashare *rs;
	char c = 0;
	pid_t pid;

	ASSERT_EQ(0, set_tunable("max_acs_per_user", 4));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int i;

		if (become(NOBODY))
			_exit(10);
		rs = rs_open_setup(0, 0);
		if (!rs)
			_exit(11);
		for (i = 0; i < 4; i++) {
			int ret = rdmashare_listen(rs, PORT + 20 + i, 4);

			if (ret <= 0) {
				fprintf(stderr, "# listen %d: %d\n", i, ret);
				_exit(12);
			}
		}
		if (rdmashare_listen(rs, PORT + 24, 4) != -EMFILE)
			_exit(13);
		if (write(done[1], "x", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(15);
		rdmashare_close(rs);
		_exit(0);
	}
	close(done[1]);
	ASSERT_EQ(1, read(done[0], &c, 1)) {
		TH_LOG("child: %d", child_status(pid));
	}
	/* Root is another user: its CONNECT gets an AC, the listener's cannot. */
	rs = rs_open_setup(0, 0);
	ASSERT_NE(NULL, rs);
	ac = rdmashare_connect(rs, (struct sockaddr *)&sin, 20000);
	EXPECT_EQ(-ECONNREFUSED, ac);
	ASSERT_EQ(1, write(go[1], "x", 1));
	EXPECT_EQ(0, child_status(pid));
	rdmashare_close(rs);
}

TEST(other_netns)
{
	pid_t pid;
	int fd;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (unshare(CLONE_NEWNET))
			_exit(10);
		fd = open("/dev/rdmashare", O_RDWR);
		_exit(fd < 0 && errno == EOPNOTSUPP ? 0 : 11);
	}
	EXPECT_EQ(0, child_status(pid));
	/* And in the module's namespace it opens. */
	fd = open("/dev/rdmashare", O_RDWR);
	EXPECT_LE(0, fd);
	close(fd);
}

#define CG_RS	"rdmashare-test"

/*
 * The child, in the test cgroup: a file with a 4 MiB data area, then 1024
 * listening ACs; reports what each step added to the cgroup.
 */
static int memcg_child(int out)
{
	long cur0, cur1, slab1, cur2, slab2;
	struct rdmashare *rs;
	long res[2];
	int i;

	if (set_tunable("max_listeners_per_user", 4096))
		return 10;
	cur0 = rs_cg_current(CG_RS);
	rs = rs_open_setup(4 << 20, 0);
	if (!rs)
		return 11;
	cur1 = rs_cg_current(CG_RS);
	slab1 = rs_cg_stat(CG_RS, "slab");
	for (i = 0; i < 1024; i++) {
		int ret = rdmashare_listen(rs, 20000 + i, 1);

		if (ret <= 0) {
			fprintf(stderr, "# listen %d: %d\n", i, ret);
			return 12;
		}
	}
	cur2 = rs_cg_current(CG_RS);
	slab2 = rs_cg_stat(CG_RS, "slab");
	res[0] = cur1 - cur0;
	res[1] = slab2 - slab1;
	fprintf(stderr, "# memcg: data area +%ld bytes; 1024 ACs: +%ld bytes, slab +%ld\n",
		res[0], cur2 - cur1, res[1]);
	rdmashare_close(rs);
	return write(out, res, sizeof(res)) == sizeof(res) ? 0 : 13;
}

TEST_F_TIMEOUT(limits, memcg, 120)
{
	long res[2] = { 0, 0 };
	int p[2];
	pid_t pid;

	ASSERT_EQ(0, rs_cg_make(CG_RS));
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (rs_cg_move(CG_RS, getpid()))
			_exit(20);
		_exit(memcg_child(p[1]));
	}
	close(p[1]);
	EXPECT_EQ(0, child_status(pid));
	EXPECT_EQ(sizeof(res), read(p[0], res, sizeof(res)));
	/* The 4 MiB data area and the slots after it (memcg charges in batches). */
	EXPECT_LE(4L << 20, res[0]);
	/* 1024 ACs of several hundred bytes each, and their table entries. */
	EXPECT_LE(256L << 10, res[1]);
	rmdir(RS_CG "/" CG_RS);
}

TEST(close_frees_id)
{
	struct rdmashare *c = rs_open_setup(1 << 20, 64);
	struct rdmashare *s = rs_open_setup(1 << 20, 8);
	struct sockaddr_in sin = addr_of(PORT + 30);
	struct rdmashare_ac_stats st;
	struct rdmashare_sqe *sqe;
	char msg[100] = "stalled";
	int l, cac, sac, i, res;

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	l = rdmashare_listen(s, PORT + 30, 4);
	ASSERT_LT(0, l);
	cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LT(0, cac);
	sac = rdmashare_accept(s, l, 20000);
	ASSERT_LT(0, sac);
	/* More SENDs than slots: the receiver never releases one. */
	for (i = 0; i < 12; i++)
		ASSERT_EQ(0, rdmashare_send(c, cac, msg, sizeof(msg)));
	usleep(300000);
	ASSERT_EQ(0, rdmashare_ac_stats(c, cac, &st));
	ASSERT_LT(0, st.queued_ops);
	/* A CLOSE behind them, then the peer's close. */
	sqe = rdmashare_get_sqe(c);
	ASSERT_NE(NULL, sqe);
	sqe->opcode = RDMASHARE_OP_CLOSE;
	sqe->ac = cac;
	sqe->user_data = 4242;
	ASSERT_LE(0, rdmashare_submit(c));
	ASSERT_EQ(0, rdmashare_close_ac(s, sac));
	res = rs_op_result(c, 4242);
	EXPECT_EQ(-EPIPE, res);
	/* Whatever its result, the CLOSE freed the id. */
	EXPECT_EQ(-ENOENT, rdmashare_ac_stats(c, cac, &st));
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * Connect to @port again and again with a 1 ms timeout, for @secs or until
 * one gets through (the QP is up then).
 */
static void short_connects(unsigned int port, double secs)
{
	struct sockaddr_in sin = addr_of(port);
	double end = rs_now() + secs;
	struct rdmashare *rs;
	int ac;

	rs = rs_open_setup(0, 0);
	if (!rs)
		_exit(1);
	while (rs_now() < end) {
		ac = rdmashare_connect(rs, (struct sockaddr *)&sin, 1);
		if (ac > 0)
			break;
	}
	rdmashare_close(rs);
	_exit(0);
}

TEST_F_TIMEOUT(limits, connect_timeout_shared, 180)
{
	struct sockaddr_in sin = addr_of(PORT + 40);
	struct rdmashare *s, *c;
	int l, ac, sac, round;
	pid_t pid;

	s = rs_open_setup(0, 0);
	ASSERT_NE(NULL, s);
	l = rdmashare_listen(s, PORT + 40, 256);
	ASSERT_LT(0, l);
	for (round = 0; round < 4; round++) {
		/* No QP to the host: the next CONNECT sets one up. */
		ASSERT_EQ(0, set_tunable("idle_timeout_ms", 1));
		ASSERT_EQ(0, rs_wait_qps(0, 20));
		ASSERT_EQ(0, set_tunable("idle_timeout_ms", 600000));

		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			short_connects(PORT + 40, 4);
		usleep(20000);
		c = rs_open_setup(0, 0);
		ASSERT_NE(NULL, c);
		ac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
		EXPECT_LT(0, ac) {
			TH_LOG("round %d: %d", round, ac);
		}
		EXPECT_EQ(0, child_status(pid));
		rdmashare_close(c);
		/* The backlog of the short CONNECTs that made it. */
		while ((sac = rdmashare_accept(s, l, 1)) > 0)
			rdmashare_close_ac(s, sac);
	}
	rdmashare_close(s);
}

TEST_HARNESS_MAIN
