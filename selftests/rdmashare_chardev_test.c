// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/rdmashare: open and close, ioctl dispatch and the size-first argument
 * rules of uapi/linux/rdmashare.h, checked with every kind of bad input.
 */
#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

FIXTURE(chardev) {
	int fd;
};

FIXTURE_SETUP(chardev)
{
	self->fd = open("/dev/rdmashare", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open /dev/rdmashare: %s", strerror(errno));
}

FIXTURE_TEARDOWN(chardev)
{
	close(self->fd);
}

static int query(int fd, void *arg)
{
	return ioctl(fd, RDMASHARE_IOC_QUERY, arg) ? -errno : 0;
}

TEST(open_close_many)
{
	int fds[64], i;

	for (i = 0; i < 64; i++) {
		fds[i] = open("/dev/rdmashare", O_RDWR);
		ASSERT_LE(0, fds[i]);
	}
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, close(fds[i]));
}

TEST(open_readonly_and_nonseekable)
{
	int fd = open("/dev/rdmashare", O_RDONLY);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, lseek(fd, 0, SEEK_SET));
	EXPECT_EQ(ESPIPE, errno);
	close(fd);
}

TEST(library_open_query)
{
	struct rdmashare_query q;
	struct rdmashare *rs;

	ASSERT_EQ(-EINVAL, rdmashare_open(&rs, 1));
	ASSERT_EQ(0, rdmashare_open(&rs, 0));
	ASSERT_LE(0, rdmashare_fd(rs));
	ASSERT_EQ(0, rdmashare_query(rs, &q));
	EXPECT_EQ(RDMASHARE_ABI_VERSION, q.abi_version);
	rdmashare_close(rs);
}

TEST_F(chardev, unknown_ioctl_enotty)
{
	struct rdmashare_query q = { .size = sizeof(q) };
	const unsigned long bad[] = {
		_IO(RDMASHARE_TYPE, 0x7f),		/* unused number */
		_IO(RDMASHARE_TYPE, 0xff),
		_IOWR(RDMASHARE_TYPE, RDMASHARE_CMD_QUERY, struct rdmashare_query),
		_IOR(RDMASHARE_TYPE, RDMASHARE_CMD_QUERY, __u32),
		_IO(RDMASHARE_TYPE + 1, RDMASHARE_CMD_QUERY),	/* other type */
		0,
		0xffffffff,
		FIONREAD,
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-1, ioctl(self->fd, bad[i], &q)) TH_LOG("cmd %#lx", bad[i]);
		EXPECT_EQ(ENOTTY, errno) TH_LOG("cmd %#lx", bad[i]);
	}
	/* The file still works. */
	EXPECT_EQ(0, query(self->fd, &q));
}

TEST_F(chardev, query)
{
	struct rdmashare_query q = { .size = sizeof(q) };
	char buf[32];

	ASSERT_EQ(0, query(self->fd, &q));
	EXPECT_EQ(sizeof(q), q.size);
	EXPECT_EQ(RDMASHARE_ABI_VERSION, q.abi_version);
	EXPECT_LE(1, q.num_devices);
	EXPECT_EQ(0, q.flags);

	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/abi_version", buf, sizeof(buf)));
	EXPECT_EQ(RDMASHARE_ABI_VERSION, atoi(buf));
	EXPECT_EQ((int)q.num_devices, rs_count_dir(RS_SYSFS "/devices"));
}

TEST_F(chardev, query_short_size)
{
	struct rdmashare_query q;
	__u32 sizes[] = { 0, 1, 4, 8, sizeof(q) - 8, sizeof(q) - 1 };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		memset(&q, 0, sizeof(q));
		q.size = sizes[i];
		EXPECT_EQ(-EINVAL, query(self->fd, &q)) TH_LOG("size %u", sizes[i]);
		/* Nothing was written back. */
		EXPECT_EQ(0, q.abi_version);
	}
}

TEST_F(chardev, query_long_size)
{
	struct {
		struct rdmashare_query q;
		__u8 tail[64];
	} big;

	/* A newer caller's zero tail is accepted and left alone. */
	memset(&big, 0, sizeof(big));
	big.q.size = sizeof(big);
	ASSERT_EQ(0, query(self->fd, &big));
	EXPECT_EQ(RDMASHARE_ABI_VERSION, big.q.abi_version);

	/* A non-zero byte the kernel does not know gets E2BIG. */
	memset(&big, 0, sizeof(big));
	big.q.size = sizeof(big);
	big.tail[63] = 1;
	EXPECT_EQ(-E2BIG, query(self->fd, &big));

	/* More than a page is never a struct this ABI will have. */
	memset(&big, 0, sizeof(big));
	big.q.size = 4097;
	EXPECT_EQ(-E2BIG, query(self->fd, &big));
	big.q.size = ~0u;
	EXPECT_EQ(-E2BIG, query(self->fd, &big));
}

/* A size running into unmapped memory faults instead of reading it. */
TEST_F(chardev, query_size_past_mapping)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct rdmashare_query *q;
	char *mem;

	mem = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	ASSERT_EQ(0, mprotect(mem + pg, pg, PROT_NONE));
	q = (struct rdmashare_query *)(mem + pg - sizeof(*q));
	q->size = sizeof(*q) + 64;
	EXPECT_EQ(-EFAULT, query(self->fd, q));
	/* The exact size at the same place works. */
	q->size = sizeof(*q);
	EXPECT_EQ(0, query(self->fd, q));
	munmap(mem, 2 * pg);
}

TEST_F(chardev, query_flags_rejected)
{
	struct rdmashare_query q = { .size = sizeof(q) };
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		q.flags = 1u << bit;
		EXPECT_EQ(-EINVAL, query(self->fd, &q)) TH_LOG("flag bit %u", bit);
	}
}

TEST_F(chardev, query_bad_pointer)
{
	EXPECT_EQ(-EFAULT, query(self->fd, NULL));
	EXPECT_EQ(-EFAULT, query(self->fd, (void *)16));
	EXPECT_EQ(-EFAULT, query(self->fd, (void *)-1L));
}

TEST_F(chardev, query_outputs_ignored_on_input)
{
	struct rdmashare_query q = {
		.size = sizeof(q),
		.abi_version = 0xdead,
		.num_devices = 0xbeef,
		.features = ~0ull,
	};

	ASSERT_EQ(0, query(self->fd, &q));
	EXPECT_EQ(RDMASHARE_ABI_VERSION, q.abi_version);
	EXPECT_NE(0xbeef, q.num_devices);
}

TEST_HARNESS_MAIN
