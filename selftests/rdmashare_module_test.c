// SPDX-License-Identifier: GPL-2.0
/*
 * Module lifetime: an open /dev/rdmashare pins the module, so unloading it
 * is refused (EWOULDBLOCK, "in use") and the open file keeps working; once closed the
 * module unloads and loads again.  Needs RS_MODULE (the path of
 * rdmashare.ko), which the test guests set.
 */
#include <sys/syscall.h>

#include "common.h"

#include "kselftest_harness.h"

static int delete_module(const char *name)
{
	return syscall(__NR_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

static int load_module(const char *path)
{
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(__NR_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	return ret;
}

TEST(unload_refused_while_open)
{
	const char *ko = getenv("RS_MODULE");
	struct rdmashare_query q = { .size = sizeof(q) };
	int fd;

	if (!ko || !*ko)
		SKIP(return, "RS_MODULE is not set");
	ASSERT_TRUE(rs_path_exists("/sys/module/rdmashare"));

	fd = open("/dev/rdmashare", O_RDWR);
	ASSERT_LE(0, fd);

	/* The kernel refuses to stop a module that is in use: EWOULDBLOCK. */
	EXPECT_EQ(-EWOULDBLOCK, delete_module("rdmashare"));
	EXPECT_TRUE(rs_path_exists("/sys/module/rdmashare"));
	EXPECT_EQ(0, ioctl(fd, RDMASHARE_IOC_QUERY, &q));
	EXPECT_EQ(RDMASHARE_ABI_VERSION, q.abi_version);

	close(fd);
	ASSERT_EQ(0, delete_module("rdmashare"));
	EXPECT_FALSE(rs_path_exists("/dev/rdmashare"));
	EXPECT_FALSE(rs_path_exists("/sys/module/rdmashare"));

	/* Loading again finds the devices that are already there. */
	ASSERT_EQ(0, load_module(ko));
	EXPECT_LE(1, rs_count_dir(RS_SYSFS "/devices"));
	fd = open("/dev/rdmashare", O_RDWR);
	ASSERT_LE(0, fd);
	q.size = sizeof(q);
	EXPECT_EQ(0, ioctl(fd, RDMASHARE_IOC_QUERY, &q));
	EXPECT_LE(1, q.num_devices);
	close(fd);
}

TEST(load_twice_refused)
{
	const char *ko = getenv("RS_MODULE");

	if (!ko || !*ko)
		SKIP(return, "RS_MODULE is not set");
	ASSERT_TRUE(rs_path_exists("/sys/module/rdmashare"));
	EXPECT_EQ(-EEXIST, load_module(ko));
}

TEST_HARNESS_MAIN
