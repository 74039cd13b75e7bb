// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA device tracking: a Soft-RoCE device added after the module loaded is
 * seen by it (sysfs and QUERY), follows a rename, and its removal is
 * handled cleanly, also while ACs use it: they fail, ACs on other devices
 * keep working, and a new connect over the device once it is back works;
 * the peer's counters show the QPs lost and the reconnects.
 * The srq_size tunable applies to devices added after the write;
 * connect_timeout_ms bounds a CONNECT to an address nobody answers for.
 * Uses the guest's spare veth end (RS_TEST_NETDEV, default veth1) for the
 * extra rxe device, with its own address (HP_ADDR) for the ACs.
 */
#include <arpa/inet.h>
#include <time.h>

#include "common.h"

#include "kselftest_harness.h"

#define HP_NAME "rxe_hp"
#define HP_RENAMED "rxe_hp2"
#define HP_ADDR "198.19.0.1"
#define HP_PORT 7500

static int num_devices(void)
{
	struct rdmashare_query q = { .size = sizeof(q) };
	int fd, ret;

	fd = open("/dev/rdmashare", O_RDWR);
	if (fd < 0)
		return -errno;
	ret = ioctl(fd, RDMASHARE_IOC_QUERY, &q) ? -errno : (int)q.num_devices;
	close(fd);
	return ret;
}

FIXTURE(hotplug) {
	const char *netdev;
};

FIXTURE_SETUP(hotplug)
{
	char path[128];

	self->netdev = getenv("RS_TEST_NETDEV") ?: "veth1";
	snprintf(path, sizeof(path), "/sys/class/net/%s", self->netdev);
	if (!rs_path_exists(path))
		SKIP(return, "no spare netdev %s", self->netdev);
	if (rs_sh("command -v rdma >/dev/null"))
		SKIP(return, "no rdma tool (iproute2)");
	/* Leftovers from an earlier failed run. */
	rs_sh("rdma link delete " HP_NAME " 2>/dev/null");
	rs_sh("rdma link delete " HP_RENAMED " 2>/dev/null");
}

FIXTURE_TEARDOWN(hotplug)
{
	rs_sh("rdma link delete " HP_NAME " 2>/dev/null");
	rs_sh("rdma link delete " HP_RENAMED " 2>/dev/null");
	rs_sh("ip addr del " HP_ADDR "/24 dev %s 2>/dev/null", self->netdev);
}

static struct sockaddr_in sin_of(const char *ip, unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &sin.sin_addr);
	return sin;
}

/* A message each way between the two ends of an AC; 0 or why not. */
static int exchange(struct rdmashare *rs, int c, int s)
{
	char out[300] = "ping", in[300];
	ssize_t n;

	if (rdmashare_send(rs, c, out, sizeof(out)))
		return -1;
	n = rdmashare_recv(rs, s, in, sizeof(in), 20000);
	if (n != sizeof(out) || strcmp(in, "ping"))
		return n < 0 ? (int)n : -1000;
	strcpy(out, "pong");
	if (rdmashare_send(rs, s, out, sizeof(out)))
		return -2;
	n = rdmashare_recv(rs, c, in, sizeof(in), 20000);
	if (n != sizeof(out) || strcmp(in, "pong"))
		return n < 0 ? (int)n : -1001;
	return 0;
}

/* rxe setup is slow under emulation and in the debug kernel: be generous. */
TEST_F_TIMEOUT(hotplug, add_rename_remove, 180)
{
	char buf[64];
	int before;

	before = num_devices();
	ASSERT_LE(1, before);
	ASSERT_EQ(before, rs_count_dir(RS_SYSFS "/devices"));

	ASSERT_EQ(0, rs_sh("rdma link add %s type rxe netdev %s", HP_NAME, self->netdev));
	EXPECT_EQ(before + 1, num_devices());
	ASSERT_TRUE(rs_path_exists(RS_SYSFS "/devices/" HP_NAME));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/devices/" HP_NAME "/name", buf, sizeof(buf)));
	EXPECT_STREQ(HP_NAME, buf);
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/devices/" HP_NAME "/num_ports", buf, sizeof(buf)));
	EXPECT_STREQ("1", buf);

	ASSERT_EQ(0, rs_sh("rdma dev set %s name %s", HP_NAME, HP_RENAMED));
	EXPECT_FALSE(rs_path_exists(RS_SYSFS "/devices/" HP_NAME));
	ASSERT_TRUE(rs_path_exists(RS_SYSFS "/devices/" HP_RENAMED));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/devices/" HP_RENAMED "/name", buf, sizeof(buf)));
	EXPECT_STREQ(HP_RENAMED, buf);

	ASSERT_EQ(0, rs_sh("rdma link delete %s", HP_RENAMED));
	EXPECT_FALSE(rs_path_exists(RS_SYSFS "/devices/" HP_RENAMED));
	EXPECT_EQ(before, num_devices());
	EXPECT_EQ(before, rs_count_dir(RS_SYSFS "/devices"));
}

/* A reader holding a sysfs file of a device open while it goes away. */
TEST_F_TIMEOUT(hotplug, remove_with_sysfs_open, 180)
{
	char buf[64];
	ssize_t n;
	int fd;

	ASSERT_EQ(0, rs_sh("rdma link add %s type rxe netdev %s", HP_NAME, self->netdev));
	fd = open(RS_SYSFS "/devices/" HP_NAME "/name", O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rs_sh("rdma link delete %s", HP_NAME));
	n = pread(fd, buf, sizeof(buf), 0);
	EXPECT_EQ(-1, n);
	EXPECT_EQ(ENODEV, errno);
	close(fd);
}

/* Devices coming and going while files are open and being queried. */
TEST_F_TIMEOUT(hotplug, churn_while_open, 300)
{
	int fd, i;

	fd = open("/dev/rdmashare", O_RDWR);
	ASSERT_LE(0, fd);
	for (i = 0; i < 3; i++) {
		struct rdmashare_query q = { .size = sizeof(q) };

		ASSERT_EQ(0, rs_sh("rdma link add %s type rxe netdev %s", HP_NAME, self->netdev));
		ASSERT_EQ(0, ioctl(fd, RDMASHARE_IOC_QUERY, &q));
		ASSERT_EQ(0, rs_sh("rdma link delete %s", HP_NAME));
	}
	close(fd);
}

/*
 * The device goes while ACs use it: its ACs fail (on both ends), the
 * removal completes, an AC on another device in the same file keeps
 * working, and once the device is back a new connect over it works.  The
 * failed ACs keep the peer, whose counters show both QPs (the connecting
 * and the accepting one: the host talks to itself) lost, then replaced.
 */
TEST_F_TIMEOUT(hotplug, remove_with_acs_open, 300)
{
	struct sockaddr_in hp = sin_of(HP_ADDR, HP_PORT);
	struct sockaddr_in main_addr = sin_of(getenv("RS_IP") ?: "127.0.0.1", HP_PORT);
	int l, c1, s1, c2, s2, c3, s3;
	struct rdmashare *rs;
	struct timespec t0, t1;
	char buf[16];
	ssize_t n;

	ASSERT_EQ(0, rs_sh("ip addr add " HP_ADDR "/24 dev %s", self->netdev));
	ASSERT_EQ(0, rs_sh("rdma link add %s type rxe netdev %s", HP_NAME, self->netdev));

	rs = rs_open_setup(1 << 20, 64);
	ASSERT_NE(NULL, rs);
	l = rdmashare_listen(rs, HP_PORT, 8);
	ASSERT_LE(0, l);
	/* One AC over the hot-plugged device, one over the guest's rxe0. */
	c1 = rdmashare_connect(rs, (struct sockaddr *)&hp, 30000);
	ASSERT_LE(0, c1);
	s1 = rdmashare_accept(rs, l, 20000);
	ASSERT_LE(0, s1);
	c2 = rdmashare_connect(rs, (struct sockaddr *)&main_addr, 30000);
	ASSERT_LE(0, c2);
	s2 = rdmashare_accept(rs, l, 20000);
	ASSERT_LE(0, s2);
	ASSERT_EQ(0, exchange(rs, c1, s1));
	ASSERT_EQ(0, exchange(rs, c2, s2));
	EXPECT_EQ(2, rs_peer_stat(HP_ADDR, "qps_up"));
	EXPECT_EQ(0, rs_peer_stat(HP_ADDR, "qps_lost"));

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_EQ(0, rs_sh("rdma link delete %s", HP_NAME));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	TH_LOG("device removed in %.1f s with 2 AC ends on it",
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	EXPECT_FALSE(rs_path_exists(RS_SYSFS "/devices/" HP_NAME));

	/* Both ends failed, with the reason; sending on them fails too. */
	n = rdmashare_recv(rs, c1, buf, sizeof(buf), 20000);
	EXPECT_TRUE(n == -ENODEV || n == -ECONNRESET) TH_LOG("c1: %zd", n);
	n = rdmashare_recv(rs, s1, buf, sizeof(buf), 20000);
	EXPECT_TRUE(n == -ENODEV || n == -ECONNRESET) TH_LOG("s1: %zd", n);
	EXPECT_GT(0, rdmashare_send(rs, c1, buf, sizeof(buf)));

	/* The other device's AC is untouched. */
	ASSERT_EQ(0, exchange(rs, c2, s2));
	EXPECT_EQ(2, rs_peer_stat(HP_ADDR, "qps_lost"));
	EXPECT_EQ(0, rs_peer_stat(HP_ADDR, "reconnects"));

	/* The device is back: a new transport over it. */
	ASSERT_EQ(0, rs_sh("rdma link add %s type rxe netdev %s", HP_NAME, self->netdev));
	c3 = rdmashare_connect(rs, (struct sockaddr *)&hp, 30000);
	ASSERT_LE(0, c3);
	s3 = rdmashare_accept(rs, l, 20000);
	ASSERT_LE(0, s3);
	ASSERT_EQ(0, exchange(rs, c3, s3));
	EXPECT_EQ(4, rs_peer_stat(HP_ADDR, "qps_up"));
	EXPECT_EQ(2, rs_peer_stat(HP_ADDR, "reconnects"));

	/* And it goes again with the file still open; then the file closes. */
	ASSERT_EQ(0, rs_sh("rdma link delete %s", HP_NAME));
	ASSERT_EQ(0, exchange(rs, c2, s2));
	rdmashare_close(rs);
}

/* srq_size: refused values keep it; a device added later gets the new one. */
TEST_F_TIMEOUT(hotplug, srq_size, 180)
{
	static const char *const bad[] = { "0", "15", "65537", "x", "\n", "-1" };
	char before[32], v[32], first[512];
	unsigned int i;

	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/srq_size", before, sizeof(before)));
	EXPECT_STREQ("512", before);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, rs_write_file(RS_SYSFS "/srq_size", bad[i])) TH_LOG("%s", bad[i]);
		ASSERT_EQ(0, rs_read_file(RS_SYSFS "/srq_size", v, sizeof(v)));
		EXPECT_STREQ(before, v);
	}
	/* A device there before: its SRQ as it was. */
	ASSERT_EQ(0, rs_first_device(first, sizeof(first) - 16));
	strcat(first, "/srq_size");

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/srq_size", "64"));
	ASSERT_EQ(0, rs_sh("rdma link add %s type rxe netdev %s", HP_NAME, self->netdev));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/devices/" HP_NAME "/srq_size", v, sizeof(v)));
	EXPECT_STREQ("64", v);
	ASSERT_EQ(0, rs_read_file(first, v, sizeof(v)));
	EXPECT_STREQ("512", v);
	EXPECT_EQ(0, rs_write_file(RS_SYSFS "/srq_size", before));
}

/* Seconds a CONNECT with no timeout of its own takes to fail, *@err why. */
static double timed_connect(struct rdmashare *rs, const struct sockaddr_in *to, int *err)
{
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	*err = rdmashare_connect(rs, (const struct sockaddr *)to, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
}

/*
 * A CONNECT that gives no timeout waits connect_timeout_ms: towards an
 * address on the spare link that nobody owns (no ARP answer, which rdma_cm
 * gives up on after 5 s), 1500 ms and 300 ms end in ETIMEDOUT after about
 * that long.
 */
TEST_F_TIMEOUT(hotplug, connect_timeout, 120)
{
	struct sockaddr_in nobody = sin_of("198.19.0.77", HP_PORT);
	char before[32];
	struct rdmashare *rs;
	double slow, fast;
	int err;

	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/connect_timeout_ms", before, sizeof(before)));
	EXPECT_STREQ("10000", before);
	ASSERT_EQ(0, rs_sh("ip addr add " HP_ADDR "/24 dev %s", self->netdev));
	ASSERT_EQ(0, rs_sh("rdma link add %s type rxe netdev %s", HP_NAME, self->netdev));
	rs = rs_open_setup(1 << 20, 64);
	ASSERT_NE(NULL, rs);

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/connect_timeout_ms", "1500"));
	slow = timed_connect(rs, &nobody, &err);
	EXPECT_EQ(-ETIMEDOUT, err);
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/connect_timeout_ms", "300"));
	fast = timed_connect(rs, &nobody, &err);
	EXPECT_EQ(-ETIMEDOUT, err);
	TH_LOG("connect_timeout_ms 1500: %.2f s, 300: %.2f s", slow, fast);
	EXPECT_LE(1.4, slow);
	EXPECT_GE(4.5, slow);
	EXPECT_LE(0.25, fast);
	EXPECT_GT(slow - 0.8, fast);
	EXPECT_EQ(0, rs_write_file(RS_SYSFS "/connect_timeout_ms", before));
	rdmashare_close(rs);
}

TEST_HARNESS_MAIN
