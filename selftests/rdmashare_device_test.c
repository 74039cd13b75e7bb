// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA device tracking: a Soft-RoCE device added after the module loaded is
 * seen by it (sysfs and QUERY), follows a rename, and its removal is
 * handled cleanly.  Uses the guest's spare veth end (RS_TEST_NETDEV,
 * default veth1) for the extra rxe device.
 */
#include "common.h"

#include "kselftest_harness.h"

#define HP_NAME "rxe_hp"
#define HP_RENAMED "rxe_hp2"

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

TEST_HARNESS_MAIN
