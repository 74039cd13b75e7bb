// SPDX-License-Identifier: GPL-2.0
/*
 * The scheduler as user space sees it (Soft-RoCE loopback to RS_IP):
 *  - ac_set_errors: RDMASHARE_IOC_AC_SET with every kind of bad input gets
 *    its documented errno, changes nothing, and good input is taken;
 *  - latency_band_needs_cap: an unprivileged process gets EPERM for the
 *    latency band and may use the others;
 *  - sched_tunables: bad writes to the scheduler's sysfs files;
 *  - shares: senders that are all backlogged on one QP get shares of the
 *    bytes delivered as their weights say: 8 equal processes (Jain's index
 *    >= 0.99), ACs weighted 1:2:4:8 in four processes (each within 5%),
 *    and a process with 100 ACs against one with 1 (equal, in app mode);
 *    and the same with 4 QPs per peer, the senders spread over them;
 *  - quanta: the length of the turns two backlogged ACs take follows
 *    sched_quantum, and that of a latency-band AC sched_latency_quantum;
 *  - head_of_line: a 64-byte message sent while a 16 MiB message is under
 *    way on another AC of the same QP arrives after at most a few of the
 *    big message's chunks; with split off it waits for the big one's end.
 * Shares are counted in bytes received while every sender is backlogged,
 * so they do not depend on the machine's speed.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <math.h>
#include <time.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT	7600

static struct sockaddr_in addr_of(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

static int ac_set(struct rdmashare *rs, __u32 size, __u32 flags, __u32 ac,
		  __u32 weight, __u32 band, __u32 resv)
{
	struct rdmashare_ac_set a = {
		.size = size, .flags = flags, .ac = ac, .weight = weight,
		.band = band, .resv = resv,
	};

	return ioctl(rdmashare_fd(rs), RDMASHARE_IOC_AC_SET, &a) ? -errno : 0;
}

FIXTURE(acs) {
	struct rdmashare *rs;
	struct rdmashare *other;
	int l, c, s, other_l;
};

FIXTURE_SETUP(acs)
{
	struct sockaddr_in sin = addr_of(PORT);

	self->rs = rs_open_setup(1 << 20, 64);
	ASSERT_NE(NULL, self->rs);
	self->other = rs_open_setup(1 << 20, 64);
	ASSERT_NE(NULL, self->other);
	self->l = rdmashare_listen(self->rs, PORT, 8);
	ASSERT_LE(0, self->l);
	self->other_l = rdmashare_listen(self->other, PORT + 1, 8);
	ASSERT_LE(0, self->other_l);
	self->c = rdmashare_connect(self->rs, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, self->c);
	self->s = rdmashare_accept(self->rs, self->l, 20000);
	ASSERT_LE(0, self->s);
}

FIXTURE_TEARDOWN(acs)
{
	rdmashare_close(self->rs);
	rdmashare_close(self->other);
}

TEST_F(acs, ac_set_errors)
{
	const __u32 W = RDMASHARE_AC_SET_WEIGHT, B = RDMASHARE_AC_SET_BAND;
	const __u32 sz = sizeof(struct rdmashare_ac_set);
	struct rdmashare_query q = { .size = sizeof(q) };
	struct rdmashare *rs = self->rs;
	char big[64] = {}, out[100] = "after", in[100];
	struct rdmashare_ac_set *a = (void *)big;

	ASSERT_EQ(0, rdmashare_query(rs, &q));
	EXPECT_TRUE(q.features & RDMASHARE_FEAT_SCHED);

	/* Flags: none, unknown. */
	EXPECT_EQ(-EINVAL, ac_set(rs, sz, 0, self->c, 2, 1, 0));
	EXPECT_EQ(-EINVAL, ac_set(rs, sz, 1U << 2, self->c, 2, 1, 0));
	EXPECT_EQ(-EINVAL, ac_set(rs, sz, W | (1U << 31), self->c, 2, 1, 0));
	/* Weight and band out of range; a band for the file. */
	EXPECT_EQ(-EINVAL, ac_set(rs, sz, W, self->c, 0, 0, 0));
	EXPECT_EQ(-EINVAL, ac_set(rs, sz, W, self->c, RDMASHARE_WEIGHT_MAX + 1, 0, 0));
	EXPECT_EQ(-EINVAL, ac_set(rs, sz, W, self->c, 0xffffffffu, 0, 0));
	EXPECT_EQ(-EINVAL, ac_set(rs, sz, B, self->c, 0, 3, 0));
	EXPECT_EQ(-EINVAL, ac_set(rs, sz, B, self->c, 0, 0xffffffffu, 0));
	EXPECT_EQ(-EINVAL, ac_set(rs, sz, B, RDMASHARE_AC_FILE, 0, 1, 0));
	EXPECT_EQ(-EINVAL, ac_set(rs, sz, W, RDMASHARE_AC_FILE, 0, 0, 0));
	/* Reserved, short and long sizes. */
	EXPECT_EQ(-EINVAL, ac_set(rs, sz, W, self->c, 2, 0, 1));
	EXPECT_EQ(-EINVAL, ac_set(rs, sz - 4, W, self->c, 2, 0, 0));
	a->size = sizeof(big);
	a->flags = W;
	a->ac = self->c;
	a->weight = 2;
	EXPECT_EQ(0, ioctl(rdmashare_fd(rs), RDMASHARE_IOC_AC_SET, a));
	big[sizeof(big) - 1] = 1;
	EXPECT_EQ(-1, ioctl(rdmashare_fd(rs), RDMASHARE_IOC_AC_SET, a));
	EXPECT_EQ(E2BIG, errno);
	/* ACs that are not there, or not this file's. */
	EXPECT_EQ(-ENOENT, ac_set(rs, sz, W, 0, 2, 0, 0));
	EXPECT_EQ(-ENOENT, ac_set(rs, sz, W, 12345, 2, 0, 0));
	EXPECT_EQ(-ENOENT, ac_set(rs, sz, W, 0x7fffffffu, 2, 0, 0));
	EXPECT_EQ(-ENOENT, ac_set(self->other, sz, W, self->c + 100, 2, 0, 0));
	EXPECT_EQ(-ENOENT, rdmashare_set_weight(rs, -1, 2));

	/* Good ones: the AC, both ends, a listener, the file, every band. */
	EXPECT_EQ(0, rdmashare_set_weight(rs, self->c, RDMASHARE_WEIGHT_MIN));
	EXPECT_EQ(0, rdmashare_set_weight(rs, self->s, RDMASHARE_WEIGHT_MAX));
	EXPECT_EQ(0, rdmashare_set_weight(rs, self->l, 7));
	EXPECT_EQ(0, rdmashare_set_app_weight(rs, 5));
	EXPECT_EQ(0, rdmashare_set_band(rs, self->c, RDMASHARE_BAND_BULK));
	EXPECT_EQ(0, rdmashare_set_band(rs, self->c, RDMASHARE_BAND_LATENCY));
	EXPECT_EQ(0, rdmashare_set_band(rs, self->c, RDMASHARE_BAND_NORMAL));
	EXPECT_EQ(0, ac_set(rs, sz, W | B, self->s, 3, RDMASHARE_BAND_BULK, 0));

	/* The AC still carries data both ways. */
	ASSERT_EQ(0, rdmashare_send(rs, self->c, out, sizeof(out)));
	ASSERT_EQ(sizeof(in), rdmashare_recv(rs, self->s, in, sizeof(in), 20000));
	EXPECT_STREQ("after", in);
	ASSERT_EQ(0, rdmashare_send(rs, self->s, out, sizeof(out)));
	ASSERT_EQ(sizeof(in), rdmashare_recv(rs, self->c, in, sizeof(in), 20000));
}

TEST_F(acs, latency_band_needs_cap)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rdmashare *rs;
		int l;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		rs = rs_open_setup(1 << 20, 64);
		if (!rs)
			_exit(11);
		l = rdmashare_listen(rs, PORT + 2, 4);
		if (l < 0)
			_exit(12);
		if (rdmashare_set_band(rs, l, RDMASHARE_BAND_LATENCY) != -EPERM)
			_exit(13);
		if (rdmashare_set_band(rs, l, RDMASHARE_BAND_BULK))
			_exit(14);
		if (rdmashare_set_band(rs, l, RDMASHARE_BAND_NORMAL))
			_exit(15);
		if (rdmashare_set_weight(rs, l, 9) || rdmashare_set_app_weight(rs, 9))
			_exit(16);
		rdmashare_close(rs);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* ---- tunables ---- */

TEST(sched_tunables)
{
	static const struct {
		const char *file;
		const char *bad[6];
	} t[] = {
		{ "sched_quantum", { "16415", "0", "16777217", "x", "\n", "-1" } },
		{ "sched_latency_quantum", { "255", "16777217", "y", "\n", "1 ", "-5" } },
		{ "sched_mode", { "apps", "", "flat flat", "1", "\n", "FLATX" } },
		{ "chunk_size", { "63", "16385", "0", "z", "\n", "-64" } },
		{ "split", { "2", "-1", "on", "\n", "10", "0x2" } },
		{ "credits_per_ac", { "0", "65537", "q", "\n", "-4", "1e3" } },
	};
	char path[128], before[32], after[32];
	unsigned int i, j;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(path, sizeof(path), RS_SYSFS "/%s", t[i].file);
		ASSERT_EQ(0, rs_read_file(path, before, sizeof(before))) TH_LOG("%s", path);
		for (j = 0; j < 6; j++) {
			if (!t[i].bad[j][0])
				continue;	/* an empty write(2) reaches nothing */
			EXPECT_EQ(-EINVAL, rs_write_file(path, t[i].bad[j]))
				TH_LOG("%s <- '%s'", t[i].file, t[i].bad[j]);
			ASSERT_EQ(0, rs_read_file(path, after, sizeof(after)));
			EXPECT_STREQ(before, after);
		}
	}
	/* Defaults, and the mode's two names. */
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/sched_quantum", before, sizeof(before)));
	EXPECT_STREQ("16416", before);
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/chunk_size", before, sizeof(before)));
	EXPECT_STREQ("16384", before);
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/sched_mode", before, sizeof(before)));
	EXPECT_STREQ("app", before);
	EXPECT_EQ(0, rs_write_file(RS_SYSFS "/sched_mode", "flat\n"));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/sched_mode", after, sizeof(after)));
	EXPECT_STREQ("flat", after);
	EXPECT_EQ(0, rs_write_file(RS_SYSFS "/sched_mode", "app"));
}

/* ---- shares ---- */

#define SHARE_PORT	7700
#define SHARE_MSG	(64 << 10)
#define QUANTA_MSG	(4 << 20)	/* sched.quanta: 4096 chunks of 1 KiB */

/* Tunables a share test changes, restored by the fixture. */
static const char *const saved_names[] = {
	"sched_mode", "credits_per_ac", "split", "chunk_size", "sched_quantum",
	"sched_latency_quantum", "coalesce_max", "qps_per_peer",
};
#define NR_SAVED	(sizeof(saved_names) / sizeof(saved_names[0]))

FIXTURE(sched) {
	char saved[NR_SAVED][32];
	pid_t pids[128];
	int npids;
};

FIXTURE_SETUP(sched)
{
	char path[128];
	unsigned int i;

	for (i = 0; i < NR_SAVED; i++) {
		snprintf(path, sizeof(path), RS_SYSFS "/%s", saved_names[i]);
		ASSERT_EQ(0, rs_read_file(path, self->saved[i], sizeof(self->saved[i])));
	}
	self->npids = 0;
}

FIXTURE_TEARDOWN(sched)
{
	char path[128];
	int i;

	for (i = 0; i < self->npids; i++) {
		kill(self->pids[i], SIGKILL);
		waitpid(self->pids[i], NULL, 0);
	}
	for (i = 0; i < (int)NR_SAVED; i++) {
		snprintf(path, sizeof(path), RS_SYSFS "/%s", saved_names[i]);
		rs_write_file(path, self->saved[i]);
	}
}

/*
 * A sender process: @nacs ACs to the receiver in @band, weights from
 * @weights (NULL: default), then messages of @len bytes on them in turn,
 * forever.
 */
static void sender(unsigned int port, unsigned int nacs, const unsigned int *weights,
		   unsigned int band, size_t len, int ready_fd)
{
	struct sockaddr_in sin = addr_of(port);
	static unsigned char buf[QUANTA_MSG];
	struct rdmashare *rs;
	int ac[128];
	unsigned int i;
	size_t size;
	void *data;

	rs = rs_open_setup(16 << 20, 512);
	if (!rs)
		_exit(10);
	/*
	 * Its pages faulted in before it counts as started: a sender's first
	 * pass through its 16 MiB outlasts the whole count at its share.
	 */
	data = rdmashare_data(rs, &size);
	if (!data)
		_exit(16);
	memset(data, 0, size);
	for (i = 0; i < nacs; i++) {
		ac[i] = rdmashare_connect(rs, (struct sockaddr *)&sin, 30000);
		if (ac[i] < 0)
			_exit(11);
		if (weights && rdmashare_set_weight(rs, ac[i], weights[i]))
			_exit(12);
		if (band != RDMASHARE_BAND_NORMAL && rdmashare_set_band(rs, ac[i], band))
			_exit(15);
	}
	if (write(ready_fd, "r", 1) != 1)
		_exit(13);
	memset(buf, 0x5a, sizeof(buf));
	for (i = 0; ; i = (i + 1) % nacs)
		if (rdmashare_send(rs, ac[i], buf, len))
			_exit(14);
}

static pid_t start_band_sender(struct __test_metadata *_metadata, unsigned int port,
			       unsigned int nacs, const unsigned int *weights,
			       unsigned int band, size_t len)
{
	int fds[2];
	pid_t pid;
	char c;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (!pid) {
		close(fds[0]);
		sender(port, nacs, weights, band, len, fds[1]);
	}
	close(fds[1]);
	if (read(fds[0], &c, 1) != 1) {
		TH_LOG("a sender did not start");
		pid = -1;
	}
	close(fds[0]);
	return pid;
}

static pid_t start_sender(struct __test_metadata *_metadata, unsigned int port,
			  unsigned int nacs, const unsigned int *weights, size_t len)
{
	return start_band_sender(_metadata, port, nacs, weights, RDMASHARE_BAND_NORMAL, len);
}

/* Give a received slot back to the kernel. */
static int release_slot(struct rdmashare *rs, const struct rdmashare_cqe *cqe)
{
	struct rdmashare_sqe *sqe = rdmashare_get_sqe(rs);

	if (!sqe) {
		if (rdmashare_submit(rs) < 0)
			return -1;
		sqe = rdmashare_get_sqe(rs);
		if (!sqe)
			return -1;
	}
	sqe->opcode = RDMASHARE_OP_RELEASE;
	sqe->ac = cqe->ac;
	sqe->addr = cqe->addr;
	return 0;
}

/*
 * The receiver's loop over the raw CQ: every chunk is counted for its AC
 * (index in @acs) and its slot given back.  Counting starts once every AC
 * has delivered more than @warm bytes (all are backlogged, and past their
 * start), and stops after @limit bytes.
 */
static int receive_shares(struct rdmashare *rs, const int *acs, unsigned int n,
			  unsigned long long warm, unsigned long long limit,
			  unsigned long long *bytes)
{
	unsigned long long total = 0, seen[128] = {};
	struct rdmashare_cqe *cqe;
	unsigned int i, started = 0;

	memset(bytes, 0, n * sizeof(*bytes));
	while (total < limit) {
		if (rdmashare_wait_cqe(rs, &cqe, 30000))
			return -1;
		if (cqe->type == RDMASHARE_CQE_RECV) {
			for (i = 0; i < n && acs[i] != (int)cqe->ac; i++)
				;
			if (i == n || release_slot(rs, cqe))
				return -2;
			if (started == n) {
				bytes[i] += cqe->res;
				total += cqe->res;
			} else if (seen[i] <= warm) {
				seen[i] += cqe->res;
				if (seen[i] > warm)
					started++;
			}
		} else if (cqe->type == RDMASHARE_CQE_CLOSED) {
			return -3;
		}
		rdmashare_cqe_seen(rs, cqe);
		/* Slots go back once the CQ is drained (or the SQ full). */
		if (!rdmashare_cq_ready(rs) && rdmashare_submit(rs) < 0)
			return -4;
	}
	return 0;
}

static double jain(const unsigned long long *x, unsigned int n)
{
	double sum = 0, sq = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		sum += x[i];
		sq += (double)x[i] * x[i];
	}
	return sq ? sum * sum / (n * sq) : 0;
}

static struct rdmashare *listen_on(unsigned int port, unsigned int slots, int *l)
{
	struct rdmashare *rs = rs_open_setup(1 << 20, slots);

	if (!rs)
		return NULL;
	*l = rdmashare_listen(rs, port, 128);
	return *l < 0 ? NULL : rs;
}

/*
 * @qps QPs per peer from here on: with several, the senders' ACs spread
 * over them and the peer's gate keeps the shares across them.  Returns
 * the gate's count of chunks held so far, for spread_out().
 */
static long set_qps(struct __test_metadata *_metadata, unsigned int qps)
{
	char v[16];

	snprintf(v, sizeof(v), "%u", qps);
	EXPECT_EQ(0, rs_write_file(RS_SYSFS "/qps_per_peer", v));
	return rs_peer_stat(getenv("RS_IP") ?: "127.0.0.1", "gate_held");
}

/*
 * With @qps above 1: the senders' ACs went out on at least @want QPs of
 * their own, and the gate held some of them (since @held), so that the
 * shares measured are the gate's doing, not those of one QP's scheduler.
 */
static void spread_out(struct __test_metadata *_metadata, unsigned int qps, int want,
		       long held)
{
	long now = rs_peer_stat(getenv("RS_IP") ?: "127.0.0.1", "gate_held");

	if (qps == 1)
		return;
	TH_LOG("%d rdmashare QPs, the gate held a QP %ld times", count_rdmashare_qps(),
	       now - held);
	/* Each connecting side's QP has its passive end on this host. */
	EXPECT_LE(2 * want, count_rdmashare_qps());
	EXPECT_LT(held, now);
}

/*
 * 8 sender processes, one AC each, equal weights: Jain's index >= 0.99,
 * counted once each AC delivered 1 MiB.  Every AC gets a window of 256
 * slots, which the receiver's 4096 hold whatever the order the ACs came
 * in: with the default window (4, and what the receiver lends as ACs
 * come) the last two senders on 4 QPs got 0.63-0.81x the others' bytes
 * (Jain 0.976-0.988 on 6.1 and 6.12), and 0.9999 with these windows.
 */
static void equal_shares(struct __test_metadata *_metadata, FIXTURE_DATA(sched) *self,
			 unsigned int port, unsigned int qps)
{
	unsigned long long bytes[8];
	int l, acs[8], i;
	struct rdmashare *rs;
	long held;
	double j;

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/credits_per_ac", "256"));
	held = set_qps(_metadata, qps);
	rs = listen_on(port, 4096, &l);
	ASSERT_NE(NULL, rs);
	for (i = 0; i < 8; i++) {
		self->pids[self->npids] = start_sender(_metadata, port, 1, NULL, SHARE_MSG);
		ASSERT_LT(0, self->pids[self->npids++]);
		acs[i] = rdmashare_accept(rs, l, 30000);
		ASSERT_LE(0, acs[i]);
	}
	ASSERT_EQ(0, receive_shares(rs, acs, 8, 1ULL << 20, 48ULL << 20, bytes));
	j = jain(bytes, 8);
	for (i = 0; i < 8; i++)
		TH_LOG("sender %d: %llu bytes", i, bytes[i]);
	TH_LOG("Jain's index %.4f", j);
	EXPECT_LE(0.99, j);
	spread_out(_metadata, qps, qps, held);
	rdmashare_close(rs);
}

TEST_F_TIMEOUT(sched, equal_shares, 600)
{
	equal_shares(_metadata, self, SHARE_PORT, 1);
}

/*
 * Four processes, one AC each, AC weights 1:2:4:8 (flat mode, where each AC
 * stands alone): each share within 5% of its target.  The credit window
 * must cover what an AC can send while its credits travel back (through a
 * receiver that may lag behind on a busy guest), or the window, not the
 * scheduler, sets its rate.
 */
static void weighted_shares(struct __test_metadata *_metadata, FIXTURE_DATA(sched) *self,
			    unsigned int port, unsigned int qps)
{
	static const unsigned int w[4] = { 1, 2, 4, 8 };
	unsigned long long bytes[4], total = 0;
	int l, acs[4], i;
	struct rdmashare *rs;
	double share, target;
	long held;

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/sched_mode", "flat"));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/credits_per_ac", "256"));
	held = set_qps(_metadata, qps);
	rs = listen_on(port, 2048, &l);
	ASSERT_NE(NULL, rs);
	for (i = 0; i < 4; i++) {
		self->pids[self->npids] = start_sender(_metadata, port, 1, &w[i], SHARE_MSG);
		ASSERT_LT(0, self->pids[self->npids++]);
		acs[i] = rdmashare_accept(rs, l, 30000);
		ASSERT_LE(0, acs[i]);
	}
	ASSERT_EQ(0, receive_shares(rs, acs, 4, 0, 64ULL << 20, bytes));
	for (i = 0; i < 4; i++)
		total += bytes[i];
	for (i = 0; i < 4; i++) {
		share = (double)bytes[i] / total;
		target = w[i] / 15.0;
		TH_LOG("weight %u: share %.4f, target %.4f", w[i], share, target);
		EXPECT_GE(0.05 * target, fabs(share - target));
	}
	spread_out(_metadata, qps, 4, held);
	rdmashare_close(rs);
}

TEST_F_TIMEOUT(sched, weighted_shares, 600)
{
	weighted_shares(_metadata, self, SHARE_PORT + 1, 1);
}

/*
 * A process with 100 ACs and one with 1: equal shares in app mode.  The
 * single AC's window must cover what it sends while its credits travel
 * back, or the window, not the scheduler, sets its rate.  A receiving
 * file lends each of its ACs up to an equal share of its slots (credit.c),
 * here 8192 / 101, 81 chunks: 2048 slots (20 each) left the single AC
 * short whenever the receiver lagged a few milliseconds (on a loaded
 * debug guest: shares of 0.44), and 256 slots take it down to 0.16.  With
 * several QPs per peer, the 100 ACs share one (placement keeps a file's
 * ACs together) and the single AC has another.
 */
static void two_level_shares(struct __test_metadata *_metadata, FIXTURE_DATA(sched) *self,
			     unsigned int port, unsigned int qps)
{
	unsigned long long bytes[101], many = 0, total;
	int l, acs[101], i;
	struct rdmashare *rs;
	double share;
	long held;

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/sched_mode", "app"));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/credits_per_ac", "4"));
	held = set_qps(_metadata, qps);
	rs = listen_on(port, 8192, &l);
	ASSERT_NE(NULL, rs);
	/* Messages of one chunk, so that many of the 100 ACs have data queued. */
	self->pids[self->npids] = start_sender(_metadata, port, 100, NULL, 16384);
	ASSERT_LT(0, self->pids[self->npids++]);
	for (i = 0; i < 100; i++) {
		acs[i] = rdmashare_accept(rs, l, 30000);
		ASSERT_LE(0, acs[i]);
	}
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/credits_per_ac", "256"));
	self->pids[self->npids] = start_sender(_metadata, port, 1, NULL, SHARE_MSG);
	ASSERT_LT(0, self->pids[self->npids++]);
	acs[100] = rdmashare_accept(rs, l, 30000);
	ASSERT_LE(0, acs[100]);
	ASSERT_EQ(0, receive_shares(rs, acs, 101, 0, 48ULL << 20, bytes));
	for (i = 0; i < 100; i++)
		many += bytes[i];
	total = many + bytes[100];
	share = (double)bytes[100] / total;
	TH_LOG("process with 100 ACs: %llu bytes, process with 1 AC: %llu bytes (share %.4f)",
	       many, bytes[100], share);
	EXPECT_GE(0.05 * 0.5, fabs(share - 0.5));
	spread_out(_metadata, qps, 2, held);
	rdmashare_close(rs);
}

TEST_F_TIMEOUT(sched, two_level_shares, 600)
{
	two_level_shares(_metadata, self, SHARE_PORT + 2, 1);
}

/*
 * The same with 4 QPs per peer: each sender on a QP of its own (the 100
 * ACs of one process on one), and the peer's gate (gate.h) gives each QP
 * the share its ACs have, where the device alone would serve the QPs in
 * turn: weights 1:2:4:8 got 24-27% each without it.
 */
TEST_F_TIMEOUT(sched, equal_shares_four_qps, 600)
{
	equal_shares(_metadata, self, SHARE_PORT + 5, 4);
}

TEST_F_TIMEOUT(sched, weighted_shares_four_qps, 600)
{
	weighted_shares(_metadata, self, SHARE_PORT + 6, 4);
}

TEST_F_TIMEOUT(sched, two_level_shares_four_qps, 600)
{
	two_level_shares(_metadata, self, SHARE_PORT + 7, 4);
}

/* ---- quanta ---- */

static int cmp_uint(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return x < y ? -1 : x > y;
}

/*
 * Once both ACs of @acs have delivered a chunk, receive @n more and return
 * the median length of the runs of consecutive chunks of @acs[@which]: the
 * order of the wire, since both ride one QP into one receiving file.  The
 * median, not the mean: a run that grew while the other AC was briefly out
 * of credits or of queued messages (its sender not scheduled on a loaded
 * host) is an outlier, not a turn.  Slots go back in batches, whenever the
 * CQ is drained or RELEASE_BATCH were reaped, so that this receiver keeps
 * up with the QP and its slack never exhausts a sender's credit window.
 * On a CLOSED (-3), *@closed_ac is the index in @acs of the AC it names
 * (-1: another) and *@closed_res its result.
 */
#define RELEASE_BATCH	32

static double median_run(struct rdmashare *rs, const int *acs, int which, unsigned int n,
			 int *closed_ac, int *closed_res)
{
	unsigned int got = 0, nruns = 0, unsent = 0, *runs;
	struct rdmashare_cqe *cqe;
	bool seen[2] = {};
	double res = -5;
	int i, last = -1;

	runs = calloc(n, sizeof(*runs));
	if (!runs)
		return -5;
	while (got < n) {
		if (rdmashare_wait_cqe(rs, &cqe, 30000))
			goto out;
		if (cqe->type == RDMASHARE_CQE_RECV) {
			i = (int)cqe->ac == acs[0] ? 0 : (int)cqe->ac == acs[1] ? 1 : -1;
			if (i < 0 || release_slot(rs, cqe)) {
				res = -2;
				goto out;
			}
			unsent++;
			if (seen[0] && seen[1]) {
				got++;
				if (i == which) {
					nruns += last != which;
					runs[nruns - 1]++;
				}
				last = i;
			}
			seen[i] = true;
		} else if (cqe->type == RDMASHARE_CQE_CLOSED) {
			/* Which AC, and why: the caller logs it. */
			*closed_ac = (int)cqe->ac == acs[0] ? 0 : (int)cqe->ac == acs[1] ? 1 : -1;
			*closed_res = cqe->res;
			res = -3;
			goto out;
		}
		rdmashare_cqe_seen(rs, cqe);
		if (!rdmashare_cq_ready(rs) || unsent >= RELEASE_BATCH) {
			if (rdmashare_submit(rs) < 0) {
				res = -4;
				goto out;
			}
			unsent = 0;
		}
	}
	/* The last run may have been cut short: not counted. */
	if (nruns > 1)
		nruns--;
	qsort(runs, nruns, sizeof(*runs), cmp_uint);
	res = nruns ? (nruns % 2 ? runs[nruns / 2] :
		       (runs[nruns / 2 - 1] + runs[nruns / 2]) / 2.0) : 0;
out:
	free(runs);
	return res;
}

/*
 * Chunks of 1 KiB (1056 bytes with the header) and room for long turns (512
 * credits): two backlogged processes take turns of sched_quantum bytes
 * (about 15 chunks with 16416), eight times as long with eight times the
 * quantum; a latency-band AC next to a normal one takes turns of
 * sched_latency_quantum bytes.  The longest turns (124 chunks) stay
 * within half the credit window, the part of it that a receiver that keeps
 * up gives back as the turn goes (credits return when half a window was
 * used): an AC out of credits would end its band's turn early.  With 256
 * credits, turns of 124 chunks came out as 57 in one run in 15.  Turns show only while the QP is what limits the senders:
 * with coalescing (coalesce_max), the QP carries 1 KiB chunks faster than
 * this one receiver releases them, the ACs wait for credits, and an AC
 * that waits leaves the round (seen: latency turns of 35 chunks instead of
 * 16, 238 credit stalls), so coalescing is off here.  Nor may a sender run
 * dry: with 64 KiB messages (64 chunks, half a long turn) an AC whose
 * process was not scheduled in time left the round with nothing queued,
 * and turns of 124 chunks came out as 30 (3 runs in 10 on stock 6.12);
 * messages of 4 MiB keep every AC backlogged whatever the processes do.
 * And the receiver runs at SCHED_FIFO: preempted by the senders for a
 * time slice, it fell a credit window (256 chunks) behind, and an AC that
 * ran out of credits ended its turn early (50 instead of 124, with 40
 * credit stalls in the run).
 */
TEST_F_TIMEOUT(sched, quanta, 600)
{
	static const struct {
		const char *quantum;
		const char *latency_quantum;
		unsigned int band;	/* of the first AC; the second's is normal */
	} cfg[] = {
		{ "16416", "65536", RDMASHARE_BAND_NORMAL },
		{ "131328", "65536", RDMASHARE_BAND_NORMAL },
		{ "16416", "16416", RDMASHARE_BAND_LATENCY },
		{ "16416", "131328", RDMASHARE_BAND_LATENCY },
	};
	unsigned int port = SHARE_PORT + 4, c, i, try;
	struct rs_fifo f;
	int l, acs[2], closed_ac, closed_res, status;
	double run[4];
	long stalls;
	struct rdmashare *rs;

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/chunk_size", "1024"));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/credits_per_ac", "512"));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/coalesce_max", "0"));
	for (c = 0; c < 4; c++) {
		ASSERT_EQ(0, rs_write_file(RS_SYSFS "/sched_quantum", cfg[c].quantum));
		ASSERT_EQ(0, rs_write_file(RS_SYSFS "/sched_latency_quantum",
					   cfg[c].latency_quantum));
		rs = listen_on(port, 2048, &l);
		ASSERT_NE(NULL, rs);
		for (i = 0; i < 2; i++) {
			self->pids[self->npids] = start_band_sender(_metadata, port, 1, NULL,
								    i ? RDMASHARE_BAND_NORMAL :
									cfg[c].band, QUANTA_MSG);
			ASSERT_LT(0, self->pids[self->npids++]);
			acs[i] = rdmashare_accept(rs, l, 30000);
			ASSERT_LE(0, acs[i]);
		}
		/* The receiver keeps up: it preempts the senders' copies. */
		ASSERT_EQ(0, rs_fifo_begin(&f));
		for (try = 0; try < 3; try++) {
			stalls = rs_device_stat("credit_stalls");
			run[c] = median_run(rs, acs, 0, 3000, &closed_ac, &closed_res);
			stalls = rs_device_stat("credit_stalls") - stalls;
			if (run[c] == -3)
				TH_LOG("the AC of sender %d (-1: neither) closed: %d", closed_ac,
				       closed_res);
			TH_LOG("sched_quantum %s, sched_latency_quantum %s: %s AC's turns of %.1f chunks (%ld credit stalls)",
			       cfg[c].quantum, cfg[c].latency_quantum,
			       cfg[c].band == RDMASHARE_BAND_LATENCY ? "latency" : "normal",
			       run[c], stalls);
			/* Turns measured while an AC waited for credits are not the scheduler's. */
			if (!stalls)
				break;
		}
		ASSERT_EQ(0, rs_fifo_end(&f));
		while (self->npids) {
			kill(self->pids[--self->npids], SIGKILL);
			/* A sender that ended by itself says why (sender()'s _exit). */
			if (waitpid(self->pids[self->npids], &status, 0) > 0 &&
			    (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL))
				TH_LOG("sender %u ended with status %#x", self->npids, status);
		}
		rdmashare_close(rs);
	}
	for (c = 0; c < 4; c += 2) {
		EXPECT_LE(7, run[c]);
		EXPECT_GE(31, run[c]);
		EXPECT_LE(4 * run[c], run[c + 1]);
	}
}

/* ---- head-of-line blocking ---- */

#define BIG	(16 << 20)
#define HOL_K	32	/* big chunks received before the small message goes */

/*
 * One thread drives both ends, so that no wakeup latency blurs the count:
 * file @snd sends BIG bytes on @big; once HOL_K of its chunks were received
 * on @rcv, 64 bytes go on @small.  Returns the big message's chunks that
 * arrived after the small message was submitted and before it arrived, or
 * -1 if the small message came after the big one's end.
 */
static int hol_run(struct rdmashare *snd, int big, int small,
		   struct rdmashare *rcv, int rbig, int rsmall)
{
	static unsigned char buf[BIG];
	unsigned int seen = 0, ahead = 0;
	struct rdmashare_cqe *cqe;
	bool sent = false;

	memset(buf, 0xbb, sizeof(buf));
	if (rdmashare_send(snd, big, buf, BIG))
		return -100;
	for (;;) {
		if (rdmashare_wait_cqe(rcv, &cqe, 30000))
			return -101;
		if (cqe->type != RDMASHARE_CQE_RECV) {
			rdmashare_cqe_seen(rcv, cqe);
			continue;
		}
		if (release_slot(rcv, cqe))
			return -102;
		if ((int)cqe->ac == rsmall) {
			rdmashare_cqe_seen(rcv, cqe);
			return sent ? (int)ahead : -103;
		}
		if ((int)cqe->ac != rbig)
			return -104;
		seen++;
		if (sent)
			ahead++;
		if (!(cqe->flags & RDMASHARE_CQE_F_MORE)) {
			rdmashare_cqe_seen(rcv, cqe);
			return -1;	/* the big message ended first */
		}
		rdmashare_cqe_seen(rcv, cqe);
		if (rdmashare_submit(rcv) < 0)
			return -105;
		if (seen == HOL_K && !sent) {
			if (rdmashare_send(snd, small, "sixty-four bytes", 64))
				return -106;
			sent = true;
		}
	}
}

/* Drain what is left of the big message. */
static int hol_drain(struct rdmashare *rcv)
{
	struct rdmashare_cqe *cqe;
	bool more = true;

	while (more) {
		if (rdmashare_wait_cqe(rcv, &cqe, 60000))
			return -1;
		if (cqe->type == RDMASHARE_CQE_RECV) {
			if (release_slot(rcv, cqe))
				return -1;
			more = cqe->flags & RDMASHARE_CQE_F_MORE;
		}
		rdmashare_cqe_seen(rcv, cqe);
		if (rdmashare_submit(rcv) < 0)
			return -1;
	}
	return 0;
}

TEST_F_TIMEOUT(sched, head_of_line, 600)
{
	struct sockaddr_in sin = addr_of(SHARE_PORT + 3);
	int l, big, small, rbig, rsmall, ahead, window;
	struct rdmashare *snd, *rcv;
	char v[16];

	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/credits_per_ac", v, sizeof(v)));
	window = atoi(v);
	snd = rs_open_setup(32 << 20, 64);
	ASSERT_NE(NULL, snd);
	/*
	 * Receive windows grow to an equal share of the receiver's slots:
	 * with twice credits_per_ac slots, each of the two ACs keeps
	 * credits_per_ac of them.
	 */
	rcv = rs_open_setup(1 << 20, 2 * window);
	ASSERT_NE(NULL, rcv);
	l = rdmashare_listen(rcv, SHARE_PORT + 3, 4);
	ASSERT_LT(0, l);
	big = rdmashare_connect(snd, (struct sockaddr *)&sin, 30000);
	ASSERT_LE(0, big);
	rbig = rdmashare_accept(rcv, l, 30000);
	ASSERT_LE(0, rbig);
	small = rdmashare_connect(snd, (struct sockaddr *)&sin, 30000);
	ASSERT_LE(0, small);
	rsmall = rdmashare_accept(rcv, l, 30000);
	ASSERT_LE(0, rsmall);

	/*
	 * Split on: the small message goes after at most the big message's
	 * chunks already in flight (its credit window) and one more.
	 */
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/split", "1"));
	ahead = hol_run(snd, big, small, rcv, rbig, rsmall);
	TH_LOG("split on: %d chunks of the 16 MiB message arrived ahead of the 64-byte one (bound %d)",
	       ahead, window + 1);
	EXPECT_LE(0, ahead);
	EXPECT_GE(window + 1, ahead);
	ASSERT_EQ(0, hol_drain(rcv));
	ASSERT_EQ(0, rdmashare_flush(snd, 60000));

	/* Split off: the small message waits for the whole big one. */
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/split", "0"));
	ahead = hol_run(snd, big, small, rcv, rbig, rsmall);
	TH_LOG("split off: %d (-1: the 64-byte message waited for the end of the 16 MiB one)",
	       ahead);
	EXPECT_EQ(-1, ahead);
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/split", "1"));
	rdmashare_close(snd);
	rdmashare_close(rcv);
}

TEST_HARNESS_MAIN
