// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for listeners' addresses (laddr.c): LISTEN's address read as
 * bind(2) reads it, which listeners of a port may coexist (as listening TCP
 * sockets may, SO_REUSEPORT's included), and which one a connection that
 * reached an address goes to.
 */
#include <kunit/test.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/module.h>
#include <uapi/linux/rdmashare.h>

#include "laddr.h"

#define PORT	7000

static struct rdmashare_addr v4(u8 a, u8 b, u8 c, u8 d)
{
	struct rdmashare_addr x = { .family = AF_INET, .addr = { a, b, c, d } };

	return x;
}

/* An IPv6 address 2001:db8::@last, or :: for 0. */
static struct rdmashare_addr v6(u8 last)
{
	struct rdmashare_addr x = { .family = AF_INET6 };

	if (last) {
		x.addr[0] = 0x20;
		x.addr[1] = 0x01;
		x.addr[2] = 0x0d;
		x.addr[3] = 0xb8;
		x.addr[15] = last;
	}
	return x;
}

static struct rdmashare_addr v4mapped(u8 a, u8 b, u8 c, u8 d)
{
	struct rdmashare_addr x = { .family = AF_INET6,
				    .addr = { [10] = 0xff, [11] = 0xff, a, b, c, d } };

	return x;
}

static struct rs_laddr la(struct kunit *test, struct rdmashare_addr a, bool v6only)
{
	struct rs_laddr l;

	KUNIT_EXPECT_EQ(test, rs_laddr_from_user(&l, &a, PORT, v6only), 0);
	return l;
}

static struct sockaddr_storage local4(u8 a, u8 b, u8 c, u8 d)
{
	struct sockaddr_storage ss = {};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	u8 bytes[4] = { a, b, c, d };

	sin->sin_family = AF_INET;
	memcpy(&sin->sin_addr, bytes, 4);
	return ss;
}

static struct sockaddr_storage local6(struct rdmashare_addr a)
{
	struct sockaddr_storage ss = {};
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

	sin6->sin6_family = AF_INET6;
	memcpy(&sin6->sin6_addr, a.addr, 16);
	return ss;
}

/* What LISTEN refuses, as bind(2) would. */
static void laddr_bad_test(struct kunit *test)
{
	struct rdmashare_addr a = v4(10, 0, 0, 1);
	struct rs_laddr l;

	a.addr[4] = 1;		/* past the IPv4 address */
	KUNIT_EXPECT_EQ(test, rs_laddr_from_user(&l, &a, PORT, false), -EINVAL);
	a = v4(224, 0, 0, 1);
	KUNIT_EXPECT_EQ(test, rs_laddr_from_user(&l, &a, PORT, false), -EINVAL);
	a = v4(255, 255, 255, 255);
	KUNIT_EXPECT_EQ(test, rs_laddr_from_user(&l, &a, PORT, false), -EINVAL);
	a = v4(10, 0, 0, 1);
	a.port = PORT + 1;
	KUNIT_EXPECT_EQ(test, rs_laddr_from_user(&l, &a, PORT, false), -EINVAL);
	a.port = PORT;
	KUNIT_EXPECT_EQ(test, rs_laddr_from_user(&l, &a, PORT, false), 0);
	KUNIT_EXPECT_EQ(test, rs_laddr_from_user(&l, &a, PORT, true), -EINVAL);
	a = v6(1);
	a.addr[0] = 0xff;	/* multicast */
	KUNIT_EXPECT_EQ(test, rs_laddr_from_user(&l, &a, PORT, false), -EINVAL);
	a = v4mapped(10, 0, 0, 1);
	KUNIT_EXPECT_EQ(test, rs_laddr_from_user(&l, &a, PORT, true), -EINVAL);
	a.family = 0;
	KUNIT_EXPECT_EQ(test, rs_laddr_from_user(&l, &a, PORT, false), -EAFNOSUPPORT);
	a.family = AF_UNIX;
	KUNIT_EXPECT_EQ(test, rs_laddr_from_user(&l, &a, PORT, false), -EAFNOSUPPORT);
}

/* Which listeners of a port can coexist: those no connection could reach both. */
static void laddr_overlap_test(struct kunit *test)
{
	struct rs_laddr all, any4, any6, any6only, a1, a2, m1, b1, b2;

	rs_laddr_all(&all);
	any4 = la(test, v4(0, 0, 0, 0), false);
	any6 = la(test, v6(0), false);
	any6only = la(test, v6(0), true);
	a1 = la(test, v4(10, 0, 0, 1), false);
	a2 = la(test, v4(10, 0, 0, 2), false);
	m1 = la(test, v4mapped(10, 0, 0, 1), false);
	b1 = la(test, v6(1), false);
	b2 = la(test, v6(2), false);

	/* No address: it takes everything. */
	KUNIT_EXPECT_TRUE(test, rs_laddr_overlap(&all, &a1));
	KUNIT_EXPECT_TRUE(test, rs_laddr_overlap(&b1, &all));
	KUNIT_EXPECT_TRUE(test, rs_laddr_overlap(&all, &any6only));
	/* Different addresses, different families: side by side. */
	KUNIT_EXPECT_FALSE(test, rs_laddr_overlap(&a1, &a2));
	KUNIT_EXPECT_FALSE(test, rs_laddr_overlap(&b1, &b2));
	KUNIT_EXPECT_FALSE(test, rs_laddr_overlap(&a1, &b1));
	KUNIT_EXPECT_FALSE(test, rs_laddr_overlap(&any4, &any6only));
	KUNIT_EXPECT_FALSE(test, rs_laddr_overlap(&any4, &b1));
	KUNIT_EXPECT_FALSE(test, rs_laddr_overlap(&any6only, &a1));
	/* The same address, a wildcard over it, a dual-stack wildcard. */
	KUNIT_EXPECT_TRUE(test, rs_laddr_overlap(&a1, &a1));
	KUNIT_EXPECT_TRUE(test, rs_laddr_overlap(&a1, &m1));
	KUNIT_EXPECT_TRUE(test, rs_laddr_overlap(&any4, &a1));
	KUNIT_EXPECT_TRUE(test, rs_laddr_overlap(&b1, &any6only));
	KUNIT_EXPECT_TRUE(test, rs_laddr_overlap(&any6, &any4));
	KUNIT_EXPECT_TRUE(test, rs_laddr_overlap(&any6, &a2));
	KUNIT_EXPECT_TRUE(test, rs_laddr_overlap(&any6, &any6only));
}

/* SO_REUSEPORT: one user's listeners on the same addresses, all sharing. */
static void laddr_conflict_test(struct kunit *test)
{
	struct rs_laddr all, any4, a1, m1, a2, b1;

	rs_laddr_all(&all);
	any4 = la(test, v4(0, 0, 0, 0), false);
	a1 = la(test, v4(10, 0, 0, 1), false);
	m1 = la(test, v4mapped(10, 0, 0, 1), false);
	a2 = la(test, v4(10, 0, 0, 2), false);
	b1 = la(test, v6(1), false);

	/* Not shared: as overlap says, whoever the user. */
	KUNIT_EXPECT_TRUE(test, rs_laddr_conflict(&a1, &a1, true));
	KUNIT_EXPECT_TRUE(test, rs_laddr_conflict(&all, &all, true));
	KUNIT_EXPECT_FALSE(test, rs_laddr_conflict(&a1, &a2, false));
	KUNIT_EXPECT_FALSE(test, rs_laddr_conflict(&a1, &b1, false));
	/* One of the two shares: still a conflict. */
	a1.share = true;
	KUNIT_EXPECT_TRUE(test, rs_laddr_conflict(&a1, &m1, true));
	KUNIT_EXPECT_TRUE(test, rs_laddr_conflict(&m1, &a1, true));
	/* Both, the same address (an IPv4-mapped one is the IPv4 one). */
	m1.share = true;
	KUNIT_EXPECT_FALSE(test, rs_laddr_conflict(&a1, &m1, true));
	KUNIT_EXPECT_FALSE(test, rs_laddr_conflict(&a1, &a1, true));
	/* Another user's. */
	KUNIT_EXPECT_TRUE(test, rs_laddr_conflict(&a1, &m1, false));
	/* A wildcard over the address, both sharing: not the same addresses. */
	any4.share = true;
	KUNIT_EXPECT_TRUE(test, rs_laddr_conflict(&any4, &a1, true));
	all.share = true;
	KUNIT_EXPECT_TRUE(test, rs_laddr_conflict(&all, &any4, true));
	KUNIT_EXPECT_FALSE(test, rs_laddr_conflict(&all, &all, true));
	/* Not overlapping at all: no conflict, sharing or not. */
	b1.share = true;
	KUNIT_EXPECT_FALSE(test, rs_laddr_conflict(&a1, &b1, false));
}

/* Where a connection goes, by the address it reached. */
static void laddr_match_test(struct kunit *test)
{
	struct sockaddr_storage at_a1 = local4(10, 0, 0, 1), at_a2 = local4(10, 0, 0, 2);
	struct sockaddr_storage at_m1 = local6(v4mapped(10, 0, 0, 1)), at_b1 = local6(v6(1));
	struct sockaddr_storage unknown = {};
	struct rs_laddr all, any4, any6, any6only, a1, b1;

	rs_laddr_all(&all);
	any4 = la(test, v4(0, 0, 0, 0), false);
	any6 = la(test, v6(0), false);
	any6only = la(test, v6(0), true);
	a1 = la(test, v4(10, 0, 0, 1), false);
	b1 = la(test, v6(1), false);

	KUNIT_EXPECT_TRUE(test, rs_laddr_match(&all, &at_a1));
	KUNIT_EXPECT_TRUE(test, rs_laddr_match(&all, &at_b1));
	KUNIT_EXPECT_TRUE(test, rs_laddr_match(&all, &unknown));

	KUNIT_EXPECT_TRUE(test, rs_laddr_match(&a1, &at_a1));
	KUNIT_EXPECT_TRUE(test, rs_laddr_match(&a1, &at_m1));
	KUNIT_EXPECT_FALSE(test, rs_laddr_match(&a1, &at_a2));
	KUNIT_EXPECT_FALSE(test, rs_laddr_match(&a1, &at_b1));
	KUNIT_EXPECT_FALSE(test, rs_laddr_match(&a1, &unknown));

	KUNIT_EXPECT_TRUE(test, rs_laddr_match(&any4, &at_a2));
	KUNIT_EXPECT_FALSE(test, rs_laddr_match(&any4, &at_b1));

	KUNIT_EXPECT_TRUE(test, rs_laddr_match(&any6, &at_a1));
	KUNIT_EXPECT_TRUE(test, rs_laddr_match(&any6, &at_b1));
	KUNIT_EXPECT_FALSE(test, rs_laddr_match(&any6only, &at_a1));
	KUNIT_EXPECT_FALSE(test, rs_laddr_match(&any6only, &at_m1));
	KUNIT_EXPECT_TRUE(test, rs_laddr_match(&any6only, &at_b1));

	KUNIT_EXPECT_TRUE(test, rs_laddr_match(&b1, &at_b1));
	KUNIT_EXPECT_FALSE(test, rs_laddr_match(&b1, &at_a1));
}

static struct kunit_case laddr_cases[] = {
	KUNIT_CASE(laddr_bad_test),
	KUNIT_CASE(laddr_overlap_test),
	KUNIT_CASE(laddr_conflict_test),
	KUNIT_CASE(laddr_match_test),
	{}
};

static struct kunit_suite laddr_suite = {
	.name = "rdmashare_laddr",
	.test_cases = laddr_cases,
};

kunit_test_suite(laddr_suite);

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
