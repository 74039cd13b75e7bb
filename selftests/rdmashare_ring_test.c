// SPDX-License-Identifier: GPL-2.0
/*
 * The per-file rings: RDMASHARE_IOC_SETUP and its limits (receive slot
 * sizes too), mmap(2) of the regions with every kind of wrong offset,
 * length and protection, the SQ and CQ protocol through librdmashare,
 * ENTER's arguments, malformed SQEs, indices that user space corrupted, CQ
 * back-pressure and poll(2).
 */
#include <poll.h>
#include <sys/resource.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

static long page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

static int setup_raw(int fd, struct rdmashare_setup *p)
{
	return ioctl(fd, RDMASHARE_IOC_SETUP, p) ? -errno : 0;
}

static int enter_raw(int fd, struct rdmashare_enter *e)
{
	return ioctl(fd, RDMASHARE_IOC_ENTER, e) ? -errno : 0;
}

static int map_err(int fd, size_t len, int prot, int flags, off_t off)
{
	void *p = mmap(NULL, len, prot, flags, fd, off);

	if (p == MAP_FAILED)
		return -errno;
	munmap(p, len);
	return 0;
}

/* Submit n NOPs with user_data base..base+n-1 and reap them in order. */
static int nop_round(struct __test_metadata *_metadata, struct rdmashare *rs,
		     unsigned int n, __u64 base)
{
	struct rdmashare_cqe *cqe;
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct rdmashare_sqe *sqe = rdmashare_get_sqe(rs);

		if (!sqe)
			return -ENOSPC;
		sqe->opcode = RDMASHARE_OP_NOP;
		sqe->user_data = base + i;
	}
	EXPECT_EQ((int)n, rdmashare_submit_and_wait(rs, n, 5000));
	for (i = 0; i < n; i++) {
		if (rdmashare_peek_cqe(rs, &cqe))
			return -EAGAIN;
		EXPECT_EQ(base + i, cqe->user_data);
		EXPECT_EQ(0, cqe->res);
		EXPECT_EQ(RDMASHARE_CQE_OP, cqe->type);
		EXPECT_EQ(RDMASHARE_OP_NOP, cqe->opcode);
		rdmashare_cqe_seen(rs, cqe);
	}
	return rdmashare_cq_ready(rs) ? -EBADMSG : 0;
}

FIXTURE(raw) {
	int fd;
};

FIXTURE_SETUP(raw)
{
	self->fd = open("/dev/rdmashare", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(raw)
{
	close(self->fd);
}

TEST_F(raw, setup_defaults)
{
	struct rdmashare_query q = { .size = sizeof(q) };
	struct rdmashare_setup p = { .size = sizeof(p) };

	ASSERT_EQ(0, ioctl(self->fd, RDMASHARE_IOC_QUERY, &q));
	EXPECT_TRUE(q.features & RDMASHARE_FEAT_RINGS);
	EXPECT_TRUE(q.features & RDMASHARE_FEAT_AC);
	EXPECT_TRUE(q.features & RDMASHARE_FEAT_CQ_LIMITS);
	EXPECT_TRUE(q.features & RDMASHARE_FEAT_CQ_OVERFLOW);

	ASSERT_EQ(0, setup_raw(self->fd, &p));
	EXPECT_EQ(256, p.sq_entries);
	/* Twice the SQ plus one per receive slot, rounded up. */
	EXPECT_EQ(64, p.rx_slots);
	EXPECT_EQ(1024, p.cq_entries);
	/*
	 * ACs are not bounded by the CQ (their CLOSED completions reserve
	 * nothing); of the 960 entries beyond the slots, 60 stay free of
	 * operations that wait on the peer.
	 */
	EXPECT_EQ(65536, p.max_acs);
	EXPECT_EQ(900, p.max_waiting);
	EXPECT_EQ(4u << 20, p.data_size);
	EXPECT_EQ(16384, p.rx_slot_size);
	EXPECT_EQ(p.data_size, p.rx_offset);
	EXPECT_EQ(p.data_size + 64 * 16384, p.map_size);
	EXPECT_EQ(0, p.rings_size % page_size());
	EXPECT_GE(p.rings_size, 256 * sizeof(struct rdmashare_sqe) +
				1024 * sizeof(struct rdmashare_cqe));
	EXPECT_LT(p.sq_off.entries, p.cq_off.entries);
	EXPECT_LE(p.cq_off.entries + 1024 * sizeof(struct rdmashare_cqe), p.rings_size);
	EXPECT_NE(p.sq_off.head, p.sq_off.tail);
	EXPECT_NE(p.cq_off.head, p.cq_off.tail);

	/* Once per file. */
	EXPECT_EQ(-EBUSY, setup_raw(self->fd, &p));
}

TEST_F(raw, setup_rounding)
{
	struct rdmashare_setup p = {
		.size = sizeof(p), .sq_entries = 3, .cq_entries = 5, .data_size = 1,
		.rx_slots = 3,
	};

	ASSERT_EQ(0, setup_raw(self->fd, &p));
	EXPECT_EQ(4, p.sq_entries);
	EXPECT_EQ(8, p.cq_entries);
	EXPECT_EQ(3, p.rx_slots);
	EXPECT_EQ(page_size(), p.data_size);
}

/*
 * RDMASHARE_SETUP_SLOT_SIZE: the slot size asked for, rounded up to a
 * multiple of 64, sizes the slots' part of the data area; without the
 * flag, rx_slot_size is output only, whatever it held.
 */
TEST(setup_slot_size)
{
	static const struct { __u32 flags, in, out; } cases[] = {
		{ RDMASHARE_SETUP_SLOT_SIZE, 64, 64 },
		{ RDMASHARE_SETUP_SLOT_SIZE, 65, 128 },
		{ RDMASHARE_SETUP_SLOT_SIZE, 2048, 2048 },
		{ RDMASHARE_SETUP_SLOT_SIZE, 16384, 16384 },
		{ 0, 12345, 16384 },
	};
	struct rdmashare_query q = { .size = sizeof(q) };
	unsigned int i;
	int fd;

	fd = open("/dev/rdmashare", O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, RDMASHARE_IOC_QUERY, &q));
	EXPECT_TRUE(q.features & RDMASHARE_FEAT_SLOT_SIZE);
	close(fd);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rdmashare_setup p = {
			.size = sizeof(p), .flags = cases[i].flags, .data_size = 8192,
			.rx_slots = 100, .rx_slot_size = cases[i].in,
		};
		size_t slots;

		fd = open("/dev/rdmashare", O_RDWR);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, setup_raw(fd, &p)) TH_LOG("%u", cases[i].in);
		EXPECT_EQ(cases[i].out, p.rx_slot_size);
		slots = (100 * (size_t)cases[i].out + page_size() - 1) / page_size() * page_size();
		EXPECT_EQ(p.data_size + slots, p.map_size);
		/* The whole area maps. */
		EXPECT_EQ(0, map_err(fd, p.map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
				     RDMASHARE_OFF_DATA));
		close(fd);
	}
}

TEST(setup_bad_arguments)
{
	struct {
		const char *what;
		struct rdmashare_setup p;
		int err;
	} cases[] = {
		{ "short size", { .size = 8 }, -EINVAL },
		{ "flags", { .size = sizeof(struct rdmashare_setup), .flags = 4 }, -EINVAL },
		{ "slot size 0", { .size = sizeof(struct rdmashare_setup),
				   .flags = RDMASHARE_SETUP_SLOT_SIZE }, -EINVAL },
		{ "slot size under 64", { .size = sizeof(struct rdmashare_setup),
					  .flags = RDMASHARE_SETUP_SLOT_SIZE, .rx_slot_size = 63 },
		  -EINVAL },
		{ "slot size over max", { .size = sizeof(struct rdmashare_setup),
					  .flags = RDMASHARE_SETUP_SLOT_SIZE, .rx_slot_size = 16385 },
		  -EINVAL },
		{ "slot size huge", { .size = sizeof(struct rdmashare_setup),
				      .flags = RDMASHARE_SETUP_SLOT_SIZE, .rx_slot_size = ~0u },
		  -EINVAL },
		{ "high flag", { .size = sizeof(struct rdmashare_setup), .flags = 1u << 31 }, -EINVAL },
		{ "reserved", { .size = sizeof(struct rdmashare_setup), .resv = { 0, 1 } }, -EINVAL },
		{ "file area without its flag", { .size = sizeof(struct rdmashare_setup),
						  .files_size = 65536 }, -EINVAL },
		{ "sq over max", { .size = sizeof(struct rdmashare_setup), .sq_entries = 4097 }, -EINVAL },
		{ "sq huge", { .size = sizeof(struct rdmashare_setup), .sq_entries = ~0u }, -EINVAL },
		{ "cq below sq", { .size = sizeof(struct rdmashare_setup), .sq_entries = 64,
				   .cq_entries = 32 }, -EINVAL },
		{ "cq below sq + slots", { .size = sizeof(struct rdmashare_setup), .sq_entries = 64,
					   .rx_slots = 64, .cq_entries = 64 }, -EINVAL },
		{ "cq room under 4", { .size = sizeof(struct rdmashare_setup), .sq_entries = 2,
				       .rx_slots = 2, .cq_entries = 4 }, -EINVAL },
		{ "cq over max", { .size = sizeof(struct rdmashare_setup), .cq_entries = 65537 }, -EINVAL },
		{ "slots over max", { .size = sizeof(struct rdmashare_setup), .rx_slots = 32769 }, -EINVAL },
		{ "data over max", { .size = sizeof(struct rdmashare_setup),
				     .data_size = (256ull << 20) + 1 }, -EINVAL },
		{ "data huge", { .size = sizeof(struct rdmashare_setup), .data_size = ~0ull }, -EINVAL },
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = open("/dev/rdmashare", O_RDWR);

		ASSERT_LE(0, fd);
		EXPECT_EQ(cases[i].err, setup_raw(fd, &cases[i].p)) TH_LOG("%s", cases[i].what);
		/* A failed setup leaves the file usable. */
		struct rdmashare_setup ok = { .size = sizeof(ok), .data_size = 4096 };

		EXPECT_EQ(0, setup_raw(fd, &ok)) TH_LOG("%s: then a good setup", cases[i].what);
		close(fd);
	}
}

TEST_F(raw, mmap_before_setup)
{
	EXPECT_EQ(-EINVAL, map_err(self->fd, page_size(), PROT_READ, MAP_SHARED,
				   RDMASHARE_OFF_RINGS));
	EXPECT_EQ(-EINVAL, map_err(self->fd, page_size(), PROT_READ, MAP_SHARED,
				   RDMASHARE_OFF_DATA));
}

TEST_F(raw, enter_before_setup)
{
	struct rdmashare_enter e = { .size = sizeof(e), .to_submit = 1 };
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN | POLLOUT };

	EXPECT_EQ(-EINVAL, enter_raw(self->fd, &e));
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_TRUE(pfd.revents & POLLERR);
}

TEST_F(raw, mmap_bad)
{
	struct rdmashare_setup p = {
		.size = sizeof(p), .data_size = 4 * page_size(), .rx_slots = 1,
	};
	long pg = page_size();
	char *m;

	ASSERT_EQ(0, setup_raw(self->fd, &p));
	ASSERT_EQ(8 * pg, p.map_size);	/* 4 pages, then a 16 KiB slot */

	/* Good: each whole region, and a part of one at an offset. */
	EXPECT_EQ(0, map_err(self->fd, p.rings_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			     RDMASHARE_OFF_RINGS));
	EXPECT_EQ(0, map_err(self->fd, p.map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			     RDMASHARE_OFF_DATA));
	EXPECT_EQ(0, map_err(self->fd, 2 * pg, PROT_READ, MAP_SHARED,
			     RDMASHARE_OFF_DATA + 6 * pg));

	/* Past the end of a region, or at no region at all. */
	EXPECT_EQ(-EINVAL, map_err(self->fd, p.rings_size + pg, PROT_READ, MAP_SHARED,
				   RDMASHARE_OFF_RINGS));
	EXPECT_EQ(-EINVAL, map_err(self->fd, pg, PROT_READ, MAP_SHARED,
				   RDMASHARE_OFF_RINGS + p.rings_size));
	EXPECT_EQ(-EINVAL, map_err(self->fd, p.map_size + pg, PROT_READ, MAP_SHARED,
				   RDMASHARE_OFF_DATA));
	EXPECT_EQ(-EINVAL, map_err(self->fd, 2 * pg, PROT_READ, MAP_SHARED,
				   RDMASHARE_OFF_DATA + 7 * pg));
	EXPECT_EQ(-EINVAL, map_err(self->fd, pg, PROT_READ, MAP_SHARED,
				   RDMASHARE_OFF_DATA + p.map_size));
	EXPECT_EQ(-EINVAL, map_err(self->fd, pg, PROT_READ, MAP_SHARED,
				   RDMASHARE_OFF_DATA - pg));
	EXPECT_EQ(-EINVAL, map_err(self->fd, pg, PROT_READ, MAP_SHARED, 1ll << 40));

	/* Private or executable mappings are refused. */
	EXPECT_EQ(-EINVAL, map_err(self->fd, pg, PROT_READ, MAP_PRIVATE, RDMASHARE_OFF_DATA));
	EXPECT_EQ(-EPERM, map_err(self->fd, pg, PROT_READ | PROT_EXEC, MAP_SHARED,
				  RDMASHARE_OFF_DATA));

	/* ... and cannot become executable later. */
	m = mmap(NULL, pg, PROT_READ, MAP_SHARED, self->fd, RDMASHARE_OFF_DATA);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(-1, mprotect(m, pg, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	/* Nor grow past the region. */
	EXPECT_EQ(MAP_FAILED, mremap(m, pg, 2 * pg, MREMAP_MAYMOVE));
	munmap(m, pg);
}

/* The data area is shared: two mappings see the same bytes. */
TEST_F(raw, data_area_shared)
{
	struct rdmashare_setup p = { .size = sizeof(p), .data_size = 2 * page_size() };
	char *a, *b;

	ASSERT_EQ(0, setup_raw(self->fd, &p));
	a = mmap(NULL, p.data_size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 RDMASHARE_OFF_DATA);
	b = mmap(NULL, p.data_size, PROT_READ, MAP_SHARED, self->fd, RDMASHARE_OFF_DATA);
	ASSERT_NE(MAP_FAILED, a);
	ASSERT_NE(MAP_FAILED, b);
	EXPECT_EQ(0, b[100]);
	memset(a, 0x5a, p.data_size);
	EXPECT_EQ(0x5a, b[p.data_size - 1]);
	munmap(a, p.data_size);
	/* A mapping outlives the file descriptor. */
	close(self->fd);
	EXPECT_EQ(0x5a, b[0]);
	munmap(b, p.data_size);
	self->fd = open("/dev/rdmashare", O_RDWR);
}

TEST_F(raw, enter_bad_arguments)
{
	struct rdmashare_setup p = { .size = sizeof(p), .sq_entries = 8 };
	struct rdmashare_enter e;

	ASSERT_EQ(0, setup_raw(self->fd, &p));

	e = (struct rdmashare_enter){ .size = sizeof(e), .flags = 2 };
	EXPECT_EQ(-EINVAL, enter_raw(self->fd, &e));
	e = (struct rdmashare_enter){ .size = sizeof(e), .flags = 1u << 31 };
	EXPECT_EQ(-EINVAL, enter_raw(self->fd, &e));
	/* Wait arguments without RDMASHARE_ENTER_GETEVENTS. */
	e = (struct rdmashare_enter){ .size = sizeof(e), .min_complete = 1 };
	EXPECT_EQ(-EINVAL, enter_raw(self->fd, &e));
	e = (struct rdmashare_enter){ .size = sizeof(e), .timeout_ms = 1 };
	EXPECT_EQ(-EINVAL, enter_raw(self->fd, &e));
	/* More completions than the CQ can hold. */
	e = (struct rdmashare_enter){ .size = sizeof(e), .flags = RDMASHARE_ENTER_GETEVENTS,
				      .min_complete = p.cq_entries + 1 };
	EXPECT_EQ(-EINVAL, enter_raw(self->fd, &e));
	/* Nothing comes: the wait times out. */
	e = (struct rdmashare_enter){ .size = sizeof(e), .flags = RDMASHARE_ENTER_GETEVENTS,
				      .min_complete = 1, .timeout_ms = 50 };
	EXPECT_EQ(-ETIME, enter_raw(self->fd, &e));
	/* Short size. */
	e = (struct rdmashare_enter){ .size = 8 };
	EXPECT_EQ(-EINVAL, enter_raw(self->fd, &e));
	/* Nothing to do is fine. */
	e = (struct rdmashare_enter){ .size = sizeof(e) };
	EXPECT_EQ(0, enter_raw(self->fd, &e));
	EXPECT_EQ(0, e.submitted);
}

FIXTURE(ring) {
	struct rdmashare *rs;
	struct rdmashare_setup p;
};

FIXTURE_SETUP(ring)
{
	ASSERT_EQ(0, rdmashare_open(&self->rs, 0));
	memset(&self->p, 0, sizeof(self->p));
	self->p.sq_entries = 8;
	self->p.rx_slots = 8;
	self->p.cq_entries = 16;	/* 8 for SQEs, 8 kept for the slots */
	self->p.data_size = 4096;
	ASSERT_EQ(0, rdmashare_setup(self->rs, &self->p));
}

FIXTURE_TEARDOWN(ring)
{
	rdmashare_close(self->rs);
}

TEST_F(ring, nop_roundtrip_and_wrap)
{
	unsigned int round;

	/* Many laps around an 8-entry ring, batches of every size. */
	for (round = 0; round < 200; round++)
		ASSERT_EQ(0, nop_round(_metadata, self->rs, 1 + round % 8, round * 16));
	EXPECT_EQ(-EBUSY, rdmashare_setup(self->rs, NULL));
}

TEST_F(ring, malformed_sqes_complete_with_einval)
{
	struct rdmashare_cqe *cqe;
	struct rdmashare_sqe *sqe;
	int n = 0;

	sqe = rdmashare_get_sqe(self->rs);
	sqe->opcode = RDMASHARE_OP_LAST;	/* unknown opcode */
	sqe = rdmashare_get_sqe(self->rs);
	sqe->opcode = 0xff;
	sqe = rdmashare_get_sqe(self->rs);
	sqe->flags = 1;				/* unknown flag */
	sqe = rdmashare_get_sqe(self->rs);
	sqe->resv0 = 1;
	sqe = rdmashare_get_sqe(self->rs);
	sqe->resv1 = 1;
	sqe = rdmashare_get_sqe(self->rs);
	sqe->resv2[3] = 1;
	sqe = rdmashare_get_sqe(self->rs);
	sqe->len = 1;				/* NOP takes no data */
	sqe = rdmashare_get_sqe(self->rs);
	sqe->ac = 1;				/* ... and no AC */
	EXPECT_EQ(NULL, rdmashare_get_sqe(self->rs));
	ASSERT_EQ(8, rdmashare_submit_and_wait(self->rs, 8, 5000));
	while (!rdmashare_peek_cqe(self->rs, &cqe)) {
		EXPECT_EQ(-EINVAL, cqe->res) TH_LOG("entry %d", n);
		rdmashare_cqe_seen(self->rs, cqe);
		n++;
	}
	EXPECT_EQ(8, n);
	/* The ring still works. */
	EXPECT_EQ(0, nop_round(_metadata, self->rs, 8, 1000));
}

/* Completions never overflow: with the CQ full, the kernel takes nothing. */
TEST_F(ring, cq_full_backpressure)
{
	struct rdmashare_cqe *cqe;
	struct rdmashare_sqe *sqe;
	unsigned int i;

	for (i = 0; i < 8; i++) {
		sqe = rdmashare_get_sqe(self->rs);
		sqe->opcode = RDMASHARE_OP_NOP;
		sqe->user_data = i;
	}
	ASSERT_EQ(8, rdmashare_submit(self->rs));
	ASSERT_EQ(8, rdmashare_cq_ready(self->rs));
	for (i = 0; i < 8; i++) {
		sqe = rdmashare_get_sqe(self->rs);
		ASSERT_NE(NULL, sqe);
		sqe->opcode = RDMASHARE_OP_NOP;
		sqe->user_data = 8 + i;
	}
	EXPECT_EQ(0, rdmashare_submit(self->rs));
	/* Reap three: exactly three more go in. */
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, rdmashare_peek_cqe(self->rs, &cqe));
		EXPECT_EQ(i, cqe->user_data);
		rdmashare_cqe_seen(self->rs, cqe);
	}
	EXPECT_EQ(3, rdmashare_submit(self->rs));
	/* Reap everything, in order, nothing lost. */
	for (i = 3; i < 16; i++) {
		if (rdmashare_peek_cqe(self->rs, &cqe)) {
			ASSERT_LE(0, rdmashare_submit(self->rs));
			ASSERT_EQ(0, rdmashare_wait_cqe(self->rs, &cqe, 5000));
		}
		EXPECT_EQ(i, cqe->user_data);
		rdmashare_cqe_seen(self->rs, cqe);
	}
	EXPECT_EQ(0, rdmashare_cq_ready(self->rs));
}

/* Raw view of the shared control words, through the kernel's offsets. */
static __u32 *word(void *rings, __u32 off)
{
	return (__u32 *)((char *)rings + off);
}

TEST_F(raw, corrupted_indices)
{
	struct rdmashare_setup p = {
		.size = sizeof(p), .sq_entries = 8, .rx_slots = 8, .cq_entries = 16,
	};
	struct rdmashare_enter e = { .size = sizeof(e), .to_submit = 8 };
	struct rdmashare_sqe *sqes;
	void *rings;
	__u32 head;

	ASSERT_EQ(0, setup_raw(self->fd, &p));
	rings = mmap(NULL, p.rings_size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		     RDMASHARE_OFF_RINGS);
	ASSERT_NE(MAP_FAILED, rings);
	sqes = (void *)((char *)rings + p.sq_off.entries);
	memset(sqes, 0, 8 * sizeof(*sqes));

	/* Tail moved past the ring: refused, nothing consumed. */
	head = *word(rings, p.sq_off.head);
	*word(rings, p.sq_off.tail) = head + 9;
	EXPECT_EQ(-EINVAL, enter_raw(self->fd, &e));
	EXPECT_EQ(head, *word(rings, p.sq_off.head));
	/* Tail behind the head (a wrap-around lie): also past the ring. */
	*word(rings, p.sq_off.tail) = head - 1;
	EXPECT_EQ(-EINVAL, enter_raw(self->fd, &e));

	/* The masks and sizes in shared memory are not the kernel's. */
	*word(rings, p.sq_off.ring_mask) = ~0u;
	*word(rings, p.sq_off.ring_entries) = ~0u;
	*word(rings, p.cq_off.ring_mask) = ~0u;
	*word(rings, p.cq_off.ring_entries) = ~0u;
	*word(rings, p.sq_off.tail) = head + 2;
	ASSERT_EQ(0, enter_raw(self->fd, &e));
	EXPECT_EQ(2, e.submitted);
	EXPECT_EQ(2, *word(rings, p.cq_off.tail));

	/* A CQ head moved past the tail reads as a full CQ: nothing is taken. */
	*word(rings, p.cq_off.head) = 100;
	*word(rings, p.sq_off.tail) = head + 4;
	ASSERT_EQ(0, enter_raw(self->fd, &e));
	EXPECT_EQ(0, e.submitted);
	/* Put it right and the work goes in. */
	*word(rings, p.cq_off.head) = 2;
	ASSERT_EQ(0, enter_raw(self->fd, &e));
	EXPECT_EQ(2, e.submitted);
	EXPECT_EQ(4, *word(rings, p.cq_off.tail));
	munmap(rings, p.rings_size);
}

TEST_F(ring, poll_readiness)
{
	struct pollfd pfd = { .fd = rdmashare_fd(self->rs), .events = POLLIN | POLLOUT };
	struct rdmashare_cqe *cqe;
	struct rdmashare_sqe *sqe;

	ASSERT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLOUT, pfd.revents);

	sqe = rdmashare_get_sqe(self->rs);
	sqe->opcode = RDMASHARE_OP_NOP;
	ASSERT_EQ(1, rdmashare_submit(self->rs));
	ASSERT_EQ(1, poll(&pfd, 1, 1000));
	EXPECT_EQ(POLLIN | POLLOUT, pfd.revents);

	ASSERT_EQ(0, rdmashare_peek_cqe(self->rs, &cqe));
	rdmashare_cqe_seen(self->rs, cqe);
	pfd.events = POLLIN;
	EXPECT_EQ(0, poll(&pfd, 1, 0));
}

/* Without CAP_IPC_LOCK, the rings and the data area count against
 * RLIMIT_MEMLOCK, and closing the file gives the memory back.
 */
TEST(memlock_accounting)
{
	struct rlimit rl = { .rlim_cur = 64 << 10, .rlim_max = 64 << 10 };
	pid_t pid;
	int status;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rdmashare_setup p = { .size = sizeof(p), .data_size = 1 << 20,
					     .rx_slots = 1 };
		int fd, fd2, i;

		if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgid(65534) || setuid(65534))
			_exit(10);
		fd = open("/dev/rdmashare", O_RDWR);
		if (fd < 0)
			_exit(11);
		if (setup_raw(fd, &p) != -ENOMEM)
			_exit(12);
		p = (struct rdmashare_setup){ .size = sizeof(p), .sq_entries = 8,
					      .data_size = 32 << 10, .rx_slots = 1 };
		if (setup_raw(fd, &p))
			_exit(13);
		fd2 = open("/dev/rdmashare", O_RDWR);
		p = (struct rdmashare_setup){ .size = sizeof(p), .sq_entries = 8,
					      .data_size = 32 << 10, .rx_slots = 1 };
		if (setup_raw(fd2, &p) != -ENOMEM)
			_exit(14);
		/* Closing returns the charge, every time. */
		for (i = 0; i < 20; i++) {
			close(fd);
			fd = open("/dev/rdmashare", O_RDWR);
			p = (struct rdmashare_setup){ .size = sizeof(p), .sq_entries = 8,
						      .data_size = 32 << 10, .rx_slots = 1 };
			if (setup_raw(fd, &p))
				_exit(15);
		}
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
