// SPDX-License-Identifier: GPL-2.0
/*
 * Per-AC statistics (RDMASHARE_IOC_AC_STATS), on one host:
 *  - counts: after N messages of S bytes, both ends show exactly N
 *    messages, N * S bytes and the chunks the chunk size makes of them;
 *    state, port, weight, band and QP are reported;
 *  - queued: with one credit per AC and a receiver that does not read, the
 *    sender shows its queued operations and bytes, no credit, a stall; all
 *    drain once the receiver reads;
 *  - status: SHUTDOWN and the peer's SHUTDOWN and CLOSE show;
 *  - errors: flags, unknown ids, another file's AC, a short struct;
 *  - debugfs: root's listing of a peer's QPs and ACs names this process,
 *    its ACs, their weights and counters; another user cannot read it;
 *  - sysfs: the device's and the peer's counters move by exactly the
 *    messages, bytes and chunks sent (the host talks to itself, so it sends
 *    and receives each one), the kernel copied each payload byte once each
 *    way (with pullup_max 1 MiB), the SENDs' bytes cover the records and no
 *    SEND is larger than a
 *    receive buffer, their QP and AC gauges follow, and the peer's
 *    directory goes with its last QP;
 *  - verbs: "rdma resource show" names rdmashare as the owner of its QPs
 *    (one CQ each), its PD, its SRQ and its cm_ids;
 *  - coalescing: 8 ACs' small messages, queued at once, travel several to a
 *    SEND (tx_sends below the records posted) with coalesce_max 4096, one
 *    to a SEND with 0, every message intact and in order either way; a
 *    value over 1 MiB is EINVAL;
 *  - autocork: with credits to spare, messages sent one system call each
 *    still share SENDs while one is in flight (autocork 1), go as they
 *    come without it (autocork 0: they share only once the TX buffers run
 *    out, far less), and share again when inflight_max lets only one SEND
 *    fly; the tunables refuse values out of range;
 *  - zero copy: with pullup_max 4096 the chunks over 4096 bytes go from the
 *    data area itself, page aligned or not, padded or not, from a receive
 *    slot too (an echo), straight into the peer's receive slots (version 4
 *    places them: neither side copies a byte of them), and only the others
 *    are copied (tx_copied, rx_copied); placed chunks after a message's
 *    first need no SEND (version 5: WRITE WITH IMMEDIATE, rx_writes), and
 *    the chunks of a message that go to slots one after the other share
 *    an RDMA WRITE (tx_writes), so do placed records' with coalesce_max
 *    raised; with pullup_max
 *    1 MiB all are copied again, both ways; every byte arrives intact; a
 *    value over 1 MiB is EINVAL;
 *  - bulk_yields: bulk traffic gives the QP a drain rate (debugfs); with
 *    bulk_delay_us 1, its large chunks then wait while anything is in
 *    flight once a small message went (bulk_held counts it), with
 *    bulk_delay_us 0 never; every message arrives intact; values over
 *    100000 are EINVAL.
 */
#include <arpa/inet.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT	7800

static struct sockaddr_in addr_of(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

/* A connected pair over a listener on @port: *@cac in @c, *@sac in @s. */
static int pair(struct rdmashare *c, struct rdmashare *s, unsigned int port,
		int *cac, int *sac)
{
	struct sockaddr_in sin = addr_of(port);
	int l;

	l = rdmashare_listen(s, port, 4);
	if (l < 0)
		return l;
	*cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	if (*cac < 0)
		return *cac;
	*sac = rdmashare_accept(s, l, 20000);
	return *sac < 0 ? *sac : l;
}

static long read_long(const char *path)
{
	char buf[32];

	if (rs_read_file(path, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

FIXTURE(st) {
	struct rdmashare *c, *s;
	char credits[32];
	char coalesce[32];
	char autocork[32];
	char inflight[32];
	char bulk[32];
	char pullup[32];
};

FIXTURE_SETUP(st)
{
	self->c = rs_open_setup(4 << 20, 64);
	self->s = rs_open_setup(4 << 20, 64);
	ASSERT_NE(NULL, self->c);
	ASSERT_NE(NULL, self->s);
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/credits_per_ac", self->credits,
				  sizeof(self->credits)));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/coalesce_max", self->coalesce,
				  sizeof(self->coalesce)));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/autocork", self->autocork,
				  sizeof(self->autocork)));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/inflight_max", self->inflight,
				  sizeof(self->inflight)));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/bulk_delay_us", self->bulk, sizeof(self->bulk)));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/pullup_max", self->pullup,
				  sizeof(self->pullup)));
}

FIXTURE_TEARDOWN(st)
{
	rdmashare_close(self->c);
	rdmashare_close(self->s);
	rs_write_file(RS_SYSFS "/credits_per_ac", self->credits);
	rs_write_file(RS_SYSFS "/coalesce_max", self->coalesce);
	rs_write_file(RS_SYSFS "/autocork", self->autocork);
	rs_write_file(RS_SYSFS "/inflight_max", self->inflight);
	rs_write_file(RS_SYSFS "/bulk_delay_us", self->bulk);
	rs_write_file(RS_SYSFS "/pullup_max", self->pullup);
}

TEST_F_TIMEOUT(st, counts, 120)
{
	const size_t len = 40000;
	const int n = 7;
	struct rdmashare_ac_stats cs, ss;
	long chunk = read_long(RS_SYSFS "/chunk_size");
	long chunks = (len + chunk - 1) / chunk;
	char *buf = malloc(len);
	int cac, sac, i;

	ASSERT_NE(NULL, buf);
	ASSERT_LT(0, chunk);
	ASSERT_LE(0, pair(self->c, self->s, PORT, &cac, &sac));
	ASSERT_EQ(0, rdmashare_set_weight(self->s, sac, 7));
	memset(buf, 0x5a, len);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, rdmashare_send(self->c, cac, buf, len));
	for (i = 0; i < n; i++)
		ASSERT_EQ((ssize_t)len, rdmashare_recv(self->s, sac, buf, len, 10000));
	ASSERT_EQ(0, rdmashare_flush(self->c, 10000));

	ASSERT_EQ(0, rdmashare_ac_stats(self->c, cac, &cs));
	ASSERT_EQ(0, rdmashare_ac_stats(self->s, sac, &ss));
	EXPECT_EQ(RDMASHARE_AC_STATE_OPEN, cs.state);
	EXPECT_EQ(RDMASHARE_AC_STATE_OPEN, ss.state);
	EXPECT_EQ(0, cs.status);
	EXPECT_EQ(PORT, cs.port);
	EXPECT_EQ(PORT, ss.port);
	EXPECT_EQ(1, cs.weight);
	EXPECT_EQ(7, ss.weight);
	EXPECT_EQ(RDMASHARE_BAND_NORMAL, cs.band);
	EXPECT_NE(0, cs.qp_num);
	EXPECT_NE(0, ss.qp_num);
	EXPECT_EQ(n, cs.tx_msgs);
	EXPECT_EQ(n * len, cs.tx_bytes);
	EXPECT_EQ(n * chunks, cs.tx_chunks);
	EXPECT_EQ(0, cs.rx_msgs);
	EXPECT_EQ(n, ss.rx_msgs);
	EXPECT_EQ(n * len, ss.rx_bytes);
	EXPECT_EQ(n * chunks, ss.rx_chunks);
	EXPECT_EQ(0, ss.tx_msgs);
	EXPECT_EQ(0, cs.queued_ops);
	EXPECT_EQ(0, cs.queued_bytes);
	free(buf);
}

/* chunk_size: a message goes in chunks of that many bytes, at once. */
TEST_F_TIMEOUT(st, chunk_size, 120)
{
	struct rdmashare_ac_stats cs, ss;
	char chunk[32], buf[10000];
	int cac, sac;

	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/chunk_size", chunk, sizeof(chunk)));
	ASSERT_LE(0, pair(self->c, self->s, PORT + 7, &cac, &sac));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/chunk_size", "1000"));
	memset(buf, 0x3c, sizeof(buf));
	ASSERT_EQ(0, rdmashare_send(self->c, cac, buf, sizeof(buf)));
	ASSERT_EQ((ssize_t)sizeof(buf), rdmashare_recv(self->s, sac, buf, sizeof(buf), 10000));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/chunk_size", chunk));
	ASSERT_EQ(0, rdmashare_flush(self->c, 10000));
	ASSERT_EQ(0, rdmashare_ac_stats(self->c, cac, &cs));
	ASSERT_EQ(0, rdmashare_ac_stats(self->s, sac, &ss));
	EXPECT_EQ(10, cs.tx_chunks);
	EXPECT_EQ(10, ss.rx_chunks);
	EXPECT_EQ(sizeof(buf), ss.rx_bytes);
}

TEST_F_TIMEOUT(st, queued, 120)
{
	struct rdmashare_ac_stats cs;
	char msg[100] = "queued";
	int cac, sac, i;

	/* One receive slot: a window of one credit. */
	rdmashare_close(self->s);
	self->s = rs_open_setup(4 << 20, 1);
	ASSERT_NE(NULL, self->s);
	ASSERT_LE(0, pair(self->c, self->s, PORT + 1, &cac, &sac));
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, rdmashare_send(self->c, cac, msg, sizeof(msg)));
	/* The first goes with the one credit; the others wait for it. */
	for (i = 0; i < 50; i++) {
		ASSERT_EQ(0, rdmashare_ac_stats(self->c, cac, &cs));
		if (cs.tx_msgs == 1)
			break;
		usleep(100000);
	}
	usleep(300000);
	ASSERT_EQ(0, rdmashare_ac_stats(self->c, cac, &cs));
	EXPECT_EQ(1, cs.tx_msgs);
	EXPECT_EQ(0, cs.send_credits);
	EXPECT_EQ(4, cs.queued_ops);
	EXPECT_EQ(4 * sizeof(msg), cs.queued_bytes);
	EXPECT_EQ(1, cs.credit_stalls);

	for (i = 0; i < 5; i++)
		ASSERT_EQ((ssize_t)sizeof(msg),
			  rdmashare_recv(self->s, sac, msg, sizeof(msg), 10000));
	ASSERT_EQ(0, rdmashare_flush(self->c, 10000));
	ASSERT_EQ(0, rdmashare_ac_stats(self->c, cac, &cs));
	EXPECT_EQ(5, cs.tx_msgs);
	EXPECT_EQ(0, cs.queued_ops);
	EXPECT_EQ(0, cs.queued_bytes);
	/* One credit at a time: every message but the first waited for one. */
	EXPECT_EQ(4, cs.credit_stalls);
}

TEST_F_TIMEOUT(st, status, 120)
{
	struct rdmashare_ac_stats cs, ss;
	int l, cac, sac, i;

	l = pair(self->c, self->s, PORT + 2, &cac, &sac);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, rdmashare_ac_stats(self->s, l, &ss));
	EXPECT_EQ(RDMASHARE_AC_STATE_LISTEN, ss.state);
	EXPECT_EQ(PORT + 2, ss.port);

	ASSERT_EQ(0, rdmashare_shutdown(self->c, cac));
	EXPECT_EQ(-EPIPE, rdmashare_recv(self->s, sac, NULL, 0, 10000));
	ASSERT_EQ(0, rdmashare_ac_stats(self->c, cac, &cs));
	ASSERT_EQ(0, rdmashare_ac_stats(self->s, sac, &ss));
	EXPECT_EQ(RDMASHARE_AC_SHUT, cs.status);
	EXPECT_EQ(RDMASHARE_AC_PEER_SHUT, ss.status);
	EXPECT_EQ(RDMASHARE_AC_STATE_OPEN, ss.state);

	ASSERT_EQ(0, rdmashare_close_ac(self->c, cac));
	for (i = 0; i < 100; i++) {
		ASSERT_EQ(0, rdmashare_ac_stats(self->s, sac, &ss));
		if (ss.state == RDMASHARE_AC_STATE_CLOSED)
			break;
		usleep(100000);
	}
	EXPECT_EQ(RDMASHARE_AC_STATE_CLOSED, ss.state);
	EXPECT_TRUE(ss.status & RDMASHARE_AC_PEER_CLOSED);
}

TEST_F(st, errors)
{
	struct rdmashare_ac_stats st = { .size = sizeof(st) };
	int fd = rdmashare_fd(self->s), l;

	l = rdmashare_listen(self->s, PORT + 3, 4);
	ASSERT_LE(0, l);
	st.ac = l;
	st.flags = 1;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_AC_STATS, &st));
	EXPECT_EQ(EINVAL, errno);
	st.flags = 0;
	st.resv1 = 1;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_AC_STATS, &st));
	EXPECT_EQ(EINVAL, errno);
	st.resv1 = 0;
	st.resv[3] = 1;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_AC_STATS, &st));
	EXPECT_EQ(EINVAL, errno);
	st.resv[3] = 0;
	st.size = 8;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_AC_STATS, &st));
	EXPECT_EQ(EINVAL, errno);
	st.size = sizeof(st);
	st.ac = 4242;
	EXPECT_EQ(-1, ioctl(fd, RDMASHARE_IOC_AC_STATS, &st));
	EXPECT_EQ(ENOENT, errno);
	/* The listener is the server's; the client's file cannot name it. */
	EXPECT_EQ(-ENOENT, rdmashare_ac_stats(self->c, l, &st));
	EXPECT_EQ(0, rdmashare_ac_stats(self->s, l, &st));
}

TEST_F_TIMEOUT(st, debugfs_listing, 120)
{
	char path[256], want[256], *buf = calloc(1, 65536);
	int cac, sac, fd, st;
	ssize_t n;
	pid_t pid;

	ASSERT_NE(NULL, buf);
	ASSERT_LE(0, pair(self->c, self->s, PORT + 5, &cac, &sac));
	ASSERT_EQ(0, rdmashare_set_weight(self->c, cac, 9));
	ASSERT_EQ(0, rdmashare_send(self->c, cac, "debugfs", 7));
	ASSERT_EQ(7, rdmashare_recv(self->s, sac, buf, 64, 10000));
	ASSERT_EQ(0, rdmashare_flush(self->c, 10000));

	snprintf(path, sizeof(path), "/sys/kernel/debug/rdmashare/peers/%s",
		 getenv("RS_IP") ?: "127.0.0.1");
	fd = open(path, O_RDONLY);
	ASSERT_LE(0, fd) TH_LOG("%s: %s", path, strerror(errno));
	n = read(fd, buf, 65535);
	close(fd);
	ASSERT_LT(0, n);
	buf[n] = 0;
	snprintf(want, sizeof(want), "peer %s qps 2 acs 2\n", getenv("RS_IP") ?: "127.0.0.1");
	EXPECT_EQ(0, strncmp(buf, want, strlen(want))) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, " up active")) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, " up passive")) TH_LOG("%s", buf);
	snprintf(want, sizeof(want), " pid %d comm rdmashare_stats ac %d port %d cport 0 state open\n",
		 getpid(), cac, PORT + 5);
	EXPECT_NE(NULL, strstr(buf, want)) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "    weight 9 band 1 app_weight 1 ")) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "    tx_msgs 1 tx_bytes 7 tx_chunks 1 ")) TH_LOG("%s", buf);

	/* Another user: the file is root's. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		fd = open(path, O_RDONLY);
		_exit(fd < 0 && errno == EACCES ? 0 : 11);
	}
	waitpid(pid, &st, 0);
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st)) TH_LOG("child %#x", st);
	free(buf);
}

TEST_F_TIMEOUT(st, verbs_owner, 120)
{
	struct rdmashare_ac_stats cs, ss;
	char lqpn[64];
	int cac, sac, qps;

	ASSERT_LE(0, pair(self->c, self->s, PORT + 6, &cac, &sac));
	ASSERT_EQ(0, rdmashare_ac_stats(self->c, cac, &cs));
	ASSERT_EQ(0, rdmashare_ac_stats(self->s, sac, &ss));

	/* Both ends' QPs are rdmashare's, in RTS, not rdma_cm's. */
	snprintf(lqpn, sizeof(lqpn), " lqpn %u ", cs.qp_num);
	EXPECT_EQ(1, rs_count_res("qp", lqpn, "[rdmashare]"));
	snprintf(lqpn, sizeof(lqpn), " lqpn %u ", ss.qp_num);
	EXPECT_EQ(1, rs_count_res("qp", lqpn, "[rdmashare]"));
	qps = count_rdmashare_qps();
	EXPECT_LE(2, qps);
	EXPECT_EQ(qps, rs_count_res("qp", "[rdmashare]", " state RTS "));
	EXPECT_EQ(0, rs_count_res("qp", "[rdma_cm]", NULL));

	/* A CQ per QP; the device's PD and SRQ. */
	EXPECT_EQ(qps, rs_count_res("cq", "[rdmashare]", NULL));
	EXPECT_LE(1, rs_count_res("pd", "[rdmashare]", NULL));
	EXPECT_LE(1, rs_count_res("srq", "[rdmashare]", NULL));

	/* The listener and each QP's cm_id. */
	EXPECT_LE(qps + 1, rs_count_res("cm_id", "[rdmashare]", NULL));
	EXPECT_LE(1, rs_count_res("cm_id", "[rdmashare]", " state LISTEN "));
}

/* The counters of one sysfs object (a device's or a peer's directory). */
struct counters {
	long tx_msgs, tx_bytes, tx_chunks, rx_msgs, rx_bytes, rx_chunks, qps_up;
	long tx_sends, tx_wire_bytes, tx_copied, rx_copied, tx_writes, rx_writes;
	long bulk_held;
};

static int read_counters(const char *dir, struct counters *c)
{
	char path[1024];

#define RD(f) do {							\
		snprintf(path, sizeof(path), "%s/stats/" #f, dir);	\
		c->f = read_long(path);					\
		if (c->f < 0)						\
			return -1;					\
	} while (0)
	RD(tx_msgs);
	RD(tx_bytes);
	RD(tx_chunks);
	RD(rx_msgs);
	RD(rx_bytes);
	RD(rx_chunks);
	RD(qps_up);
	RD(tx_sends);
	RD(tx_wire_bytes);
	RD(tx_copied);
	RD(rx_copied);
	RD(tx_writes);
	RD(rx_writes);
	RD(bulk_held);
#undef RD
	return 0;
}

static long read_in(const char *dir, const char *file)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return read_long(path);
}

TEST_F_TIMEOUT(st, sysfs_counters, 180)
{
	const size_t big = 40000, small = 100;
	struct counters d0, d1, p0, p1;
	char dev[512], peer[512], idle[32];
	long chunk = read_long(RS_SYSFS "/chunk_size");
	long chunks = 5 * ((big + chunk - 1) / chunk) + 3;
	long bytes = 5 * big + 3 * small;
	char *buf = calloc(1, big);
	int cac, sac, i;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, rs_first_device(dev, sizeof(dev)));
	snprintf(peer, sizeof(peer), RS_SYSFS "/peers/%s", getenv("RS_IP") ?: "127.0.0.1");

	/* Start from no QP: the peer's directory must come with its first. */
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/idle_timeout_ms", idle, sizeof(idle)));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/idle_timeout_ms", "100"));
	ASSERT_EQ(0, rs_wait_qps(0, 30));
	EXPECT_FALSE(rs_path_exists(peer));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/pullup_max", "1048576"));
	ASSERT_EQ(0, read_counters(dev, &d0));

	ASSERT_LE(0, pair(self->c, self->s, PORT + 4, &cac, &sac));
	ASSERT_TRUE(rs_path_exists(peer));
	ASSERT_EQ(0, read_counters(peer, &p0));
	/* Both QPs of the loopback and both ends of the AC are the peer's. */
	EXPECT_EQ(2, p0.qps_up);
	EXPECT_EQ(2, read_in(peer, "qps"));
	EXPECT_EQ(2, read_in(peer, "acs"));
	EXPECT_EQ(2, read_in(dev, "qps"));
	EXPECT_EQ(2, read_in(dev, "acs"));

	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, rdmashare_send(self->c, cac, buf, big));
	for (i = 0; i < 5; i++)
		ASSERT_EQ((ssize_t)big, rdmashare_recv(self->s, sac, buf, big, 10000));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, rdmashare_send(self->s, sac, buf, small));
	for (i = 0; i < 3; i++)
		ASSERT_EQ((ssize_t)small, rdmashare_recv(self->c, cac, buf, big, 10000));
	ASSERT_EQ(0, rdmashare_flush(self->c, 10000));
	ASSERT_EQ(0, rdmashare_flush(self->s, 10000));

	ASSERT_EQ(0, read_counters(dev, &d1));
	ASSERT_EQ(0, read_counters(peer, &p1));
	EXPECT_EQ(8, p1.tx_msgs - p0.tx_msgs);
	EXPECT_EQ(bytes, p1.tx_bytes - p0.tx_bytes);
	EXPECT_EQ(chunks, p1.tx_chunks - p0.tx_chunks);
	EXPECT_EQ(8, p1.rx_msgs - p0.rx_msgs);
	EXPECT_EQ(bytes, p1.rx_bytes - p0.rx_bytes);
	EXPECT_EQ(chunks, p1.rx_chunks - p0.rx_chunks);
	EXPECT_EQ(8, d1.tx_msgs - d0.tx_msgs);
	EXPECT_EQ(bytes, d1.tx_bytes - d0.tx_bytes);
	EXPECT_EQ(chunks, d1.rx_chunks - d0.rx_chunks);
	/* Every payload byte copied once each way: no chunk goes in place. */
	EXPECT_EQ(bytes, p1.tx_copied - p0.tx_copied);
	EXPECT_EQ(bytes, p1.rx_copied - p0.rx_copied);
	EXPECT_EQ(bytes, d1.tx_copied - d0.tx_copied);
	/*
	 * The SENDs carried the payload, a header per record and padding,
	 * none more than a receive buffer (a header and the largest chunk).
	 */
	EXPECT_LE(bytes + 32 * chunks, p1.tx_wire_bytes - p0.tx_wire_bytes);
	EXPECT_GE((p1.tx_sends - p0.tx_sends) *
		  (read_long("/sys/module/rdmashare/parameters/max_chunk_size") + 32),
		  p1.tx_wire_bytes - p0.tx_wire_bytes);
	EXPECT_EQ(2, d1.qps_up - d0.qps_up);
	EXPECT_LT(0, read_in(dev, "stats/srq_refills"));
	EXPECT_GT(0, read_in(peer, "stats/srq_refills"));	/* devices only */

	ASSERT_EQ(0, rdmashare_close_ac(self->c, cac));
	ASSERT_EQ(-EPIPE, rdmashare_recv(self->s, sac, buf, big, 10000));
	ASSERT_EQ(0, rdmashare_close_ac(self->s, sac));
	ASSERT_EQ(0, rdmashare_flush(self->s, 10000));
	EXPECT_EQ(0, rs_wait_qps(0, 30));
	EXPECT_FALSE(rs_path_exists(peer));
	EXPECT_EQ(0, read_in(dev, "qps"));
	EXPECT_EQ(0, read_in(dev, "acs"));
	rs_write_file(RS_SYSFS "/idle_timeout_ms", idle);
	free(buf);
}

/* @n messages on each of @nac ACs, one system call each, and back. */
static int coalesce_msgs(struct rdmashare *c, struct rdmashare *s, const int *cac,
			 const int *sac, int nac, int n)
{
	unsigned char buf[64];
	int a, i, ret;

	for (i = 0; i < n; i++) {
		for (a = 0; a < nac; a++) {
			memset(buf, a * 37 + i, sizeof(buf));
			ret = rdmashare_send(c, cac[a], buf, sizeof(buf));
			if (ret)
				return ret;
		}
	}
	for (a = 0; a < nac; a++) {
		for (i = 0; i < n; i++) {
			if (rdmashare_recv(s, sac[a], buf, sizeof(buf), 10000) != sizeof(buf))
				return -EIO;
			if (buf[0] != (unsigned char)(a * 37 + i) ||
			    buf[63] != (unsigned char)(a * 37 + i))
				return -EBADMSG;
		}
	}
	return rdmashare_flush(c, 10000);
}

/*
 * One round of the coalescing test: records and SENDs posted meanwhile,
 * with the sends in flight while more are posted (rs_fifo_begin()).
 */
static int coalesce_round(struct rdmashare *c, struct rdmashare *s, const int *cac,
			  const int *sac, int nac, int n, const char *dev,
			  long *records, long *sends)
{
	long r0, s0, r1, s1;
	struct rs_fifo f;
	int ret, ret2;

	r0 = read_in(dev, "stats/tx_chunks") + read_in(dev, "stats/ctrl_tx");
	s0 = read_in(dev, "stats/tx_sends");
	ret = rs_fifo_begin(&f);
	if (ret)
		return ret;
	ret = coalesce_msgs(c, s, cac, sac, nac, n);
	ret2 = rs_fifo_end(&f);
	if (ret || ret2)
		return ret ?: ret2;
	r1 = read_in(dev, "stats/tx_chunks") + read_in(dev, "stats/ctrl_tx");
	s1 = read_in(dev, "stats/tx_sends");
	if (r0 < 0 || s0 < 0 || r1 < 0 || s1 < 0)
		return -ENOENT;
	*records = r1 - r0;
	*sends = s1 - s0;
	return 0;
}

TEST_F_TIMEOUT(st, coalescing, 180)
{
	int cac[8], sac[8], a, l = -1;
	long records, sends;
	char dev[512];

	ASSERT_EQ(0, rs_first_device(dev, sizeof(dev)));
	EXPECT_EQ(-EINVAL, rs_write_file(RS_SYSFS "/coalesce_max", "1048577"));
	for (a = 0; a < 8; a++) {
		struct sockaddr_in sin = addr_of(PORT + 9);

		if (l < 0) {
			l = rdmashare_listen(self->s, PORT + 9, 8);
			ASSERT_LE(0, l);
		}
		cac[a] = rdmashare_connect(self->c, (struct sockaddr *)&sin, 20000);
		ASSERT_LE(0, cac[a]);
		sac[a] = rdmashare_accept(self->s, l, 20000);
		ASSERT_LE(0, sac[a]);
	}

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/coalesce_max", "4096"));
	ASSERT_EQ(0, coalesce_round(self->c, self->s, cac, sac, 8, 32, dev, &records, &sends));
	TH_LOG("coalesce_max 4096: %ld records in %ld SENDs", records, sends);
	EXPECT_LE(256, records);
	EXPECT_GT(records, sends);

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/coalesce_max", "0"));
	ASSERT_EQ(0, coalesce_round(self->c, self->s, cac, sac, 8, 32, dev, &records, &sends));
	TH_LOG("coalesce_max 0: %ld records in %ld SENDs", records, sends);
	EXPECT_LE(256, records);
	EXPECT_EQ(records, sends);
}

/*
 * 8 ACs with 64 credits each: 32 messages each, one rdmashare_send() (one
 * system call) apiece, so that nothing but autocork and inflight_max makes
 * them share a SEND.  Records per SEND on the device, both directions (the
 * receiver's credits too).
 *
 * Autocork gathers only what comes while a SEND is in flight, which
 * coalesce_round() makes sure of.
 */
static int cork_round(struct rdmashare *c, struct rdmashare *s, const char *autocork,
		      const char *inflight, const int *cac, const int *sac,
		      const char *dev, double *fill)
{
	long records, sends;
	int ret;

	ret = rs_write_file(RS_SYSFS "/autocork", autocork);
	if (!ret)
		ret = rs_write_file(RS_SYSFS "/inflight_max", inflight);
	if (!ret)
		ret = coalesce_round(c, s, cac, sac, 8, 32, dev, &records, &sends);
	if (ret)
		return ret;
	if (records < 256 || sends <= 0)
		return -ERANGE;
	*fill = (double)records / sends;
	return 0;
}

TEST_F_TIMEOUT(st, autocork, 240)
{
	/* Slots for 8 ACs of 64 credits. */
	struct rdmashare *c = rs_open_setup(4 << 20, 512);
	struct rdmashare *s = rs_open_setup(4 << 20, 512);
	int cac[8], sac[8], a, l = -1;
	double on, off, capped;
	char dev[512];

	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(0, rs_first_device(dev, sizeof(dev)));
	EXPECT_EQ(-EINVAL, rs_write_file(RS_SYSFS "/autocork", "2"));
	EXPECT_EQ(-EINVAL, rs_write_file(RS_SYSFS "/inflight_max", "0"));
	EXPECT_EQ(-EINVAL, rs_write_file(RS_SYSFS "/inflight_max", "1073741825"));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/credits_per_ac", "64"));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/coalesce_max", "4096"));
	for (a = 0; a < 8; a++) {
		struct sockaddr_in sin = addr_of(PORT + 10);

		if (l < 0) {
			l = rdmashare_listen(s, PORT + 10, 8);
			ASSERT_LE(0, l);
		}
		cac[a] = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
		ASSERT_LE(0, cac[a]);
		sac[a] = rdmashare_accept(s, l, 20000);
		ASSERT_LE(0, sac[a]);
	}

	ASSERT_EQ(0, cork_round(c, s, "0", "1073741824", cac, sac, dev, &off));
	ASSERT_EQ(0, cork_round(c, s, "1", "1073741824", cac, sac, dev, &on));
	ASSERT_EQ(0, cork_round(c, s, "0", "1", cac, sac, dev, &capped));
	TH_LOG("records per SEND: autocork %.2f, none %.2f, inflight_max 1 %.2f",
	       on, off, capped);
	EXPECT_LE(2.0, on);
	EXPECT_LE(2.0, capped);
	EXPECT_GT(on, off);
	rdmashare_close(c);
	rdmashare_close(s);
}

static void fill_at(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 9));
}

/* Bytes the sender copies of a @len message: its chunks up to @pullup. */
static long copied_of(long len, long chunk, long pullup)
{
	long copied = 0, part;

	for (; len > 0; len -= part) {
		part = len < chunk ? len : chunk;
		if (part <= pullup)
			copied += part;
	}
	return copied;
}

/* Queue a SEND of @len bytes at @off of @c's data area on @ac (@tag). */
static int queue_send(struct rdmashare *c, int ac, size_t off, __u32 len, __u64 tag)
{
	struct rdmashare_sqe *sqe = rdmashare_get_sqe(c);

	if (!sqe)
		return -EBUSY;
	sqe->opcode = RDMASHARE_OP_SEND;
	sqe->ac = ac;
	sqe->addr = off;
	sqe->len = len;
	sqe->user_data = tag;
	return 0;
}

/* SEND @len bytes at @off of @c's data area on @ac, and wait for it. */
static int send_at(struct rdmashare *c, int ac, size_t off, __u32 len, __u64 tag)
{
	int ret = queue_send(c, ac, off, len, tag);

	if (ret)
		return ret;
	ret = rdmashare_submit(c);
	if (ret < 0)
		return ret;
	ret = rs_op_result(c, tag);
	return ret == (int)len ? 0 : (ret < 0 ? ret : -EIO);
}

/*
 * Fill @len bytes at @off of @c's data area from @seed, SEND them on @cac
 * (@tag), receive them on @sac of @s and check them: 0, or -1.
 */
static int send_checked(struct rdmashare *c, struct rdmashare *s, int cac, int sac,
			size_t off, __u32 len, int seed, __u64 tag)
{
	unsigned char *in = malloc(len), *out = malloc(len), *data;
	size_t size;
	int ret = -1;

	data = rdmashare_data(c, &size);
	if (!in || !out || !data || off + len > size)
		goto out;
	fill_at(data + off, len, seed);
	if (send_at(c, cac, off, len, tag) ||
	    rdmashare_recv(s, sac, in, len, 10000) != (ssize_t)len)
		goto out;
	fill_at(out, len, seed);
	ret = memcmp(in, out, len) ? -1 : 0;
out:
	free(in);
	free(out);
	return ret;
}

TEST_F_TIMEOUT(st, zero_copy, 180)
{
	static const struct { size_t off; __u32 len; } msgs[] = {
		{ 1 << 20, 65536 },		/* page aligned, whole chunks */
		{ (2 << 20) + 100, 40001 },	/* unaligned, padded */
		{ (3 << 20) + 4095, 20000 },	/* its last chunk is copied */
		{ (3 << 20) + 65536, 3000 },	/* copied */
	};
	long chunk = read_long(RS_SYSFS "/chunk_size"), want = 0, bytes = 0, writes[4], imm[4];
	unsigned char *in = malloc(65536), *out = malloc(65536), *data;
	struct rdmashare_cqe *cqe;
	struct counters d0, d1;
	__u64 slot[8];
	__u32 got[8];
	int cac, sac, i, n;
	char dev[512];
	size_t size;

	ASSERT_NE(NULL, in);
	ASSERT_NE(NULL, out);
	ASSERT_LT(4096, chunk);
	ASSERT_EQ(0, rs_first_device(dev, sizeof(dev)));
	EXPECT_EQ(-EINVAL, rs_write_file(RS_SYSFS "/pullup_max", "1048577"));
	EXPECT_EQ(-EINVAL, rs_write_file(RS_SYSFS "/pullup_max", "-1"));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/pullup_max", "4096"));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/coalesce_max", "4096"));
	/*
	 * Joins are counted here, not the hold for small messages: a small
	 * message less than 10 ms before a large one would cap its WRITEs at
	 * what the QP drains in bulk_delay_us (bulk_yields tests that).
	 */
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/bulk_delay_us", "0"));
	/*
	 * A server with 512 slots of a chunk (16 KiB): 8 MiB, more pages
	 * than rxe's memory regions take (512), which only runs of
	 * contiguous pages make fit (area.c).
	 */
	rdmashare_close(self->s);
	self->s = rs_open_setup(4 << 20, 512);
	ASSERT_NE(NULL, self->s);
	ASSERT_LE(0, pair(self->c, self->s, PORT + 11, &cac, &sac));
	data = rdmashare_data(self->c, &size);
	ASSERT_NE(NULL, data);
	ASSERT_LE((size_t)(4 << 20), size);

	/*
	 * In place from the application's part of the data area, into the
	 * receive slots: the first message's chunks are all over pullup_max,
	 * and not one of their bytes is copied on either side.
	 */
	for (i = 0; i < (int)(sizeof(msgs) / sizeof(msgs[0])); i++) {
		ASSERT_EQ(0, read_counters(dev, &d0));
		ASSERT_EQ(0, send_checked(self->c, self->s, cac, sac, msgs[i].off, msgs[i].len,
					  i, i + 1)) TH_LOG("message %d", i);
		ASSERT_EQ(0, read_counters(dev, &d1));
		want = copied_of(msgs[i].len, chunk, 4096);
		TH_LOG("pullup_max 4096: %ld of %u bytes copied sending, %ld receiving",
		       d1.tx_copied - d0.tx_copied, msgs[i].len, d1.rx_copied - d0.rx_copied);
		EXPECT_EQ(msgs[i].len, d1.tx_bytes - d0.tx_bytes);
		EXPECT_EQ(want, d1.tx_copied - d0.tx_copied);
		EXPECT_EQ(want, d1.rx_copied - d0.rx_copied);
		bytes += want;
		writes[i] = d1.tx_writes - d0.tx_writes;
		imm[i] = d1.rx_writes - d0.rx_writes;
	}
	EXPECT_EQ(0, copied_of(msgs[0].len, chunk, 4096));
	/*
	 * Placed chunks over coalesce_max (4096) go alone: the first a WRITE
	 * and a SEND, the others (version 5) WRITE WITH IMMEDIATE, one for
	 * those that go on into the next slots; a copied chunk that continues
	 * a message has its SEND.
	 */
	TH_LOG("64 KiB in %ld chunks: %ld WRITEs, %ld WITH IMMEDIATE", 65536 / chunk,
	       writes[0], imm[0]);
	EXPECT_EQ(1, writes[0] - imm[0]);
	EXPECT_LE(1, imm[0]);
	EXPECT_GE(65536 / chunk - 1, imm[0]);
	EXPECT_EQ(0, imm[2]);
	EXPECT_EQ(0, imm[3]);
	EXPECT_LT(bytes, 65536 + 40001 + 20000 + 3000);

	/*
	 * With coalesce_max 64 KiB the first message's chunks go, one SEND
	 * for their records, into the AC's next slots, one after the other
	 * (granted in ascending order): their WRITEs join (one or two, not
	 * one per chunk).
	 */
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/coalesce_max", "65536"));
	ASSERT_EQ(0, read_counters(dev, &d0));
	ASSERT_EQ(0, send_checked(self->c, self->s, cac, sac, msgs[0].off, msgs[0].len, 5, 5));
	/* The library gathers RELEASEs: the slots go back now, for the echo. */
	ASSERT_LE(0, rdmashare_submit(self->s));
	ASSERT_EQ(0, read_counters(dev, &d1));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/coalesce_max", "4096"));
	TH_LOG("coalesce_max 65536: RDMA WRITEs for the 64 KiB message: %ld (%ld chunks)",
	       d1.tx_writes - d0.tx_writes, 65536 / chunk);
	EXPECT_EQ(0, d1.tx_copied - d0.tx_copied);
	EXPECT_EQ(0, d1.rx_copied - d0.rx_copied);
	EXPECT_LE(1, d1.tx_writes - d0.tx_writes);
	EXPECT_GE(2, d1.tx_writes - d0.tx_writes);
	EXPECT_EQ(0, d1.rx_writes - d0.rx_writes);

	/* An echo straight from the receive slots (raw CQ on the server). */
	fill_at(data + msgs[1].off, msgs[1].len, 9);
	ASSERT_EQ(0, send_at(self->c, cac, msgs[1].off, msgs[1].len, 9));
	ASSERT_EQ(0, read_counters(dev, &d0));
	for (n = 0, size = 0; size < msgs[1].len;) {
		ASSERT_GT(8, n);
		ASSERT_EQ(0, rdmashare_wait_cqe(self->s, &cqe, 10000));
		/* The library's last RELEASEs complete too. */
		if (cqe->type == RDMASHARE_CQE_RECV) {
			ASSERT_EQ(sac, cqe->ac);
			slot[n] = cqe->addr;
			got[n] = cqe->res;
			size += got[n++];
		}
		rdmashare_cqe_seen(self->s, cqe);
	}
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, send_at(self->s, sac, slot[i], got[i], 100 + i));
	for (i = 0, size = 0; i < n; size += got[i++]) {
		struct rdmashare_sqe *sqe;

		ASSERT_EQ((ssize_t)got[i], rdmashare_recv(self->c, cac, in, 65536, 10000));
		fill_at(out, msgs[1].len, 9);
		ASSERT_EQ(0, memcmp(in, out + size, got[i])) TH_LOG("chunk %d", i);
		sqe = rdmashare_get_sqe(self->s);
		ASSERT_NE(NULL, sqe);
		sqe->opcode = RDMASHARE_OP_RELEASE;
		sqe->ac = sac;
		sqe->addr = slot[i];
		sqe->user_data = 200 + i;
		ASSERT_LE(0, rdmashare_submit(self->s));
		ASSERT_EQ(0, rs_op_result(self->s, 200 + i));
	}
	ASSERT_EQ(0, read_counters(dev, &d1));
	want = 0;
	for (i = 0; i < n; i++)
		want += copied_of(got[i], chunk, 4096);
	EXPECT_EQ(msgs[1].len, d1.tx_bytes - d0.tx_bytes);
	EXPECT_EQ(want, d1.tx_copied - d0.tx_copied);
	EXPECT_EQ(want, d1.rx_copied - d0.rx_copied);

	/* pullup_max 1 MiB: everything copied again, both ways. */
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/pullup_max", "1048576"));
	ASSERT_EQ(0, read_counters(dev, &d0));
	ASSERT_EQ(0, send_checked(self->c, self->s, cac, sac, msgs[1].off, msgs[1].len, 5, 5));
	ASSERT_EQ(0, read_counters(dev, &d1));
	EXPECT_EQ(msgs[1].len, d1.tx_copied - d0.tx_copied);
	EXPECT_EQ(msgs[1].len, d1.rx_copied - d0.rx_copied);
	free(in);
	free(out);
}

/*
 * @rounds times, a 64-byte message on @small and a 256 KiB one on @big,
 * submitted together, received intact on @ssmall and @sbig of @s.
 */
static int small_and_bulk(struct rdmashare *c, struct rdmashare *s, int small, int big,
			  int ssmall, int sbig, int rounds)
{
	const __u32 big_len = 256 << 10;
	unsigned char *in = malloc(big_len), *out = malloc(big_len), *data;
	int i, ret = -1;
	size_t size;

	data = rdmashare_data(c, &size);
	if (!in || !out || !data || size < (2 << 20) + big_len)
		goto out;
	for (i = 0; i < rounds; i++) {
		fill_at(data + (1 << 20), 64, i);
		fill_at(data + (2 << 20), big_len, i + 100);
		if (queue_send(c, small, 1 << 20, 64, 2 * i + 1) ||
		    queue_send(c, big, 2 << 20, big_len, 2 * i + 2) ||
		    rdmashare_submit(c) < 0 ||
		    rs_op_result(c, 2 * i + 1) != 64 || rs_op_result(c, 2 * i + 2) != (int)big_len)
			goto out;
		fill_at(out, 64, i);
		if (rdmashare_recv(s, ssmall, in, 64, 10000) != 64 || memcmp(in, out, 64))
			goto out;
		fill_at(out, big_len, i + 100);
		if (rdmashare_recv(s, sbig, in, big_len, 10000) != (ssize_t)big_len ||
		    memcmp(in, out, big_len))
			goto out;
	}
	ret = 0;
out:
	free(in);
	free(out);
	return ret;
}

/*
 * The drain rate (kB/s) debugfs shows for the QP that sends (the active
 * one) to this host itself; -1 if there is none.
 */
static long active_drain(void)
{
	char path[256], *buf = calloc(1, 65536), *qp;
	long rate = -1;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/kernel/debug/rdmashare/peers/%s",
		 getenv("RS_IP") ?: "127.0.0.1");
	fd = open(path, O_RDONLY);
	if (!buf || fd < 0)
		goto out;
	n = read(fd, buf, 65535);
	if (n <= 0)
		goto out;
	buf[n] = 0;
	qp = strstr(buf, " up active");
	qp = qp ? strstr(qp, " drain_kBps ") : NULL;
	if (qp)
		rate = strtol(qp + strlen(" drain_kBps "), NULL, 10);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rate;
}

/*
 * bulk_delay_us: while small messages go on a QP, its large chunks wait
 * while it has what it drains in that long in flight (bulk_held counts
 * it), so that a small message waits behind little; 0 turns it off.  The
 * rate comes from bulk traffic (no hold until it came).  Every
 * message arrives intact either way; over 100 ms is EINVAL.
 */
TEST_F_TIMEOUT(st, bulk_yields, 180)
{
	struct sockaddr_in sin = addr_of(PORT + 12);
	int cac[2], sac[2], l;
	struct counters d0, d1;
	char dev[512];
	long rate;

	ASSERT_EQ(0, rs_first_device(dev, sizeof(dev)));
	EXPECT_EQ(-EINVAL, rs_write_file(RS_SYSFS "/bulk_delay_us", "100001"));
	EXPECT_EQ(-EINVAL, rs_write_file(RS_SYSFS "/bulk_delay_us", "-1"));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/pullup_max", "4096"));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/credits_per_ac", "32"));
	rdmashare_close(self->s);
	self->s = rs_open_setup(4 << 20, 512);
	ASSERT_NE(NULL, self->s);
	/* A bulk AC and a small one, on the same QP. */
	l = pair(self->c, self->s, PORT + 12, &cac[0], &sac[0]);
	ASSERT_LE(0, l);
	cac[1] = rdmashare_connect(self->c, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, cac[1]);
	sac[1] = rdmashare_accept(self->s, l, 20000);
	ASSERT_LE(0, sac[1]);

	/* Bulk alone, nothing held: the QP learns its drain rate. */
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/bulk_delay_us", "0"));
	ASSERT_EQ(0, small_and_bulk(self->c, self->s, cac[1], cac[0], sac[1], sac[0], 8));
	rate = active_drain();
	TH_LOG("drain rate after bulk: %ld kB/s", rate);
	EXPECT_LT(0, rate);

	/* Held: what is in flight drains in more than 1 us. */
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/bulk_delay_us", "1"));
	ASSERT_EQ(0, read_counters(dev, &d0));
	ASSERT_EQ(0, small_and_bulk(self->c, self->s, cac[1], cac[0], sac[1], sac[0], 8));
	ASSERT_EQ(0, read_counters(dev, &d1));
	TH_LOG("bulk_delay_us 1: large chunks held %ld times", d1.bulk_held - d0.bulk_held);
	EXPECT_LT(0, d1.bulk_held - d0.bulk_held);

	/* Off: never held for small messages. */
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/bulk_delay_us", "0"));
	ASSERT_EQ(0, read_counters(dev, &d0));
	ASSERT_EQ(0, small_and_bulk(self->c, self->s, cac[1], cac[0], sac[1], sac[0], 8));
	ASSERT_EQ(0, read_counters(dev, &d1));
	EXPECT_EQ(0, d1.bulk_held - d0.bulk_held);
}

TEST_HARNESS_MAIN
