// SPDX-License-Identifier: GPL-2.0
/*
 * The scheduler as user space sees it (Soft-RoCE loopback to RS_IP):
 *  - ac_set_errors: RDMASHARE_IOC_AC_SET with every kind of bad input gets
 *    its documented errno, changes nothing, and good input is taken;
 *  - latency_band_needs_cap: an unprivileged process gets EPERM for the
 *    latency band and may use the others.
 */
#include <arpa/inet.h>

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

TEST_HARNESS_MAIN
