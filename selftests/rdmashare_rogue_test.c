// SPDX-License-Identifier: GPL-2.0
/*
 * A rogue peer (rogue.h): root on a peer host, so it passes peer
 * authentication, connects from a second address of this host and sends
 * what rdmashare must not take.  Each time only the rogue's QP goes (the
 * module disconnects it) and an AC of another peer, open before and after,
 * keeps carrying its messages, untouched:
 *  - bad_version, unknown_type, truncated: malformed messages;
 *  - out_of_window: a fifth chunk on an AC that granted four credits;
 *  - replayed: the same chunk twice;
 *  - chunk_over_slot: a chunk larger than the receive slots the accepting
 *    file set up (RDMASHARE_SETUP_SLOT_SIZE), though it fits the SRQ's
 *    buffers; no slot is written;
 *  - other_acs: chunks addressed to connection ids of ACs on other QPs are
 *    dropped (nothing reaches them, the rogue's QP even stays);
 *  - rejects_not_taken: CONNECTs to a closed port from a peer that takes no
 *    answers: its QP goes;
 *  - rnr_gives_up: a peer that posts no receives loses its QP to the
 *    finite RNR retry within seconds;
 *  - half_open: a peer that never sends the RTU of its CONNECT REQUEST
 *    loses the QP set up for it after connect_timeout_ms;
 *  - malformed_batch: a peer that speaks protocol version 2 gets batches
 *    taken (a chunk and a KEEPALIVE in one SEND), and a batch with one bad
 *    record (padding that is not zero) refused whole: its good chunk never
 *    reaches the AC;
 *  - returned_credits, returned_too_many: a peer that speaks version 3
 *    gives its credits back (RETURN), which is taken; a chunk sent with one
 *    of them afterwards, or a RETURN of more than it was granted, takes its
 *    QP down;
 *  - placed, misplaced, placed_too_long: a peer that speaks version 4 gets
 *    the rkey of the receive slots in the ACCEPT and the slots it may use;
 *    a chunk it RDMA WRITEs into the oldest of them and names in a PLACED
 *    record reaches the application intact, while a record that names
 *    another slot, or more bytes than a slot holds, takes its QP down;
 *  - forged_key, revoked_key: a version 4 peer's WRITE with an rkey it was
 *    never given, or with that of a file that closed since, fails and
 *    costs it its QP, nobody else anything;
 *  - granted_too_many: a version 4 peer that grants one AC more than 4096
 *    slots in all, 1024 at a time, loses its QP at the fifth grant;
 *  - continued, continued_alone, continued_too_long, continued_v4,
 *    continued_elsewhere, continued_joined, continued_over_credits: a peer
 *    that speaks version 5 may send the chunks after a message's first as
 *    RDMA WRITE WITH IMMEDIATE naming the AC, several slots' worth in one
 *    (the message arrives whole, rx_writes counts them), but not over more
 *    slots than it holds; one with no
 *    message in progress, one longer than the message has left, or one
 *    from a version 4 peer takes its QP down; one naming another
 *    connection id is dropped, the rogue's own message goes on;
 *  - sink_unoffered, sink_done_unknown, sink_offered_twice: a peer that
 *    speaks version 6 and sends a chunk flagged as written into a sink
 *    that was never offered, the DONE of a sink it was never offered, or
 *    offers a second sink while its first is open, loses its QP.
 * And srq.buffers_of_dead_qps: QPs that die in the middle of a message
 * leave the device's SRQ whole once the device has no QP left;
 * send_after_device_gone: a SEND on an AC whose QP and device went;
 * invalidated_key: a peer that sends with invalidate naming the rkey it
 * was given; close_unanswered_without_keepalive: the quarantine's bound
 * holds with keepalive_ms 0.
 */
#include <arpa/inet.h>

#include "common.h"
#include "rdmashare.h"
#include "rogue.h"

#include "kselftest_harness.h"

#define PORT		7700
#define ROGUE_IP	"198.18.0.202"
#define ROGUE_PORT	901

static const char *rs_ip(void)
{
	return getenv("RS_IP") ?: "127.0.0.1";
}

/*
 * The module has a QP from the rogue's address (its peer may outlive the
 * QP while an AC that failed with it is not closed yet).
 */
static int rogue_peer_listed(void)
{
	char buf[32];

	return !rs_read_file(RS_SYSFS "/peers/" ROGUE_IP "/qps", buf, sizeof(buf)) &&
	       atoi(buf) > 0;
}

FIXTURE(rogue) {
	struct rdmashare *rs;
	int l, l2, c, s;
	struct rogue r;
	int msgs;
};

/* One checked message over the legitimate AC. */
static int legit_exchange(struct __test_metadata *_metadata, FIXTURE_DATA(rogue) *self)
{
	char out[64], in[64];
	ssize_t n;

	snprintf(out, sizeof(out), "legit %d", self->msgs++);
	if (rdmashare_send(self->rs, self->c, out, strlen(out) + 1))
		return -1;
	n = rdmashare_recv(self->rs, self->s, in, sizeof(in), 20000);
	if (n != (ssize_t)strlen(out) + 1 || strcmp(in, out)) {
		TH_LOG("legit: %zd '%s'", n, n > 0 ? in : "");
		return -1;
	}
	return 0;
}

FIXTURE_SETUP(rogue)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	int ret;

	inet_pton(AF_INET, rs_ip(), &sin.sin_addr);
	self->rs = rs_open_setup(1 << 20, 64);
	ASSERT_NE(NULL, self->rs);
	self->l = rdmashare_listen(self->rs, PORT, 8);
	ASSERT_LT(0, self->l);
	self->l2 = rdmashare_listen(self->rs, PORT + 1, 8);
	ASSERT_LT(0, self->l2);
	self->c = rdmashare_connect(self->rs, (struct sockaddr *)&sin, 20000);
	ASSERT_LT(0, self->c);
	self->s = rdmashare_accept(self->rs, self->l, 20000);
	ASSERT_LT(0, self->s);
	ASSERT_EQ(0, legit_exchange(_metadata, self));

	rs_sh("ip addr del %s/32 dev veth0 2>/dev/null", ROGUE_IP);
	ASSERT_EQ(0, rs_sh("ip addr add %s/32 dev veth0", ROGUE_IP));
	usleep(200000);
	ret = rogue_open(&self->r, rs_ip(), ROGUE_IP, ROGUE_PORT);
	ASSERT_EQ(RDMA_CM_EVENT_ESTABLISHED, ret);
	ASSERT_TRUE(rogue_peer_listed());
}

FIXTURE_TEARDOWN(rogue)
{
	rogue_close(&self->r);
	rdmashare_close(self->rs);
	rs_sh("ip addr del %s/32 dev veth0 2>/dev/null", ROGUE_IP);
}

/*
 * The module dropped the rogue's QP (the rogue may not hear of it, if it
 * sent before its connection was established on the module's side); the
 * legitimate AC goes on.
 */
static void dropped_only_rogue(struct __test_metadata *_metadata,
			       FIXTURE_DATA(rogue) *self)
{
	double end = rs_now() + 20;

	while (rogue_peer_listed() && rs_now() < end)
		usleep(100000);
	EXPECT_FALSE(rogue_peer_listed());
	EXPECT_EQ(0, legit_exchange(_metadata, self));
	EXPECT_EQ(0, legit_exchange(_metadata, self));
}

TEST_F_TIMEOUT(rogue, bad_version, 90)
{
	rogue_hdr(self->r.buf, ROGUE_KEEPALIVE, 0, 0, 0, 0, 0, 0, 0, 0);
	self->r.buf[0] = 2;
	EXPECT_EQ(0, rogue_send(&self->r, ROGUE_HDR_LEN));
	dropped_only_rogue(_metadata, self);
}

TEST_F_TIMEOUT(rogue, unknown_type, 90)
{
	rogue_hdr(self->r.buf, 99, 0, 1, 1, 0, 0, 0, 0, 0);
	EXPECT_EQ(0, rogue_send(&self->r, ROGUE_HDR_LEN));
	dropped_only_rogue(_metadata, self);
}

TEST_F_TIMEOUT(rogue, truncated, 90)
{
	rogue_hdr(self->r.buf, ROGUE_KEEPALIVE, 0, 0, 0, 0, 0, 0, 0, 0);
	EXPECT_EQ(0, rogue_send(&self->r, 10));
	dropped_only_rogue(_metadata, self);
}

/*
 * CONNECT to the listener on @port as rogue connection 7; the module's
 * connection id from its ACCEPT, and the credits it granted.
 */
static int rogue_ac_to(struct rogue *r, unsigned int port, uint32_t *credits)
{
	struct rogue_conn cp = {
		.port = htonl(port), .slot_size = htonl(16384), .credits = htonl(4),
	};
	double end = rs_now() + 30;
	struct rogue_hdr h;
	struct rogue_conn acc;
	char *rx = NULL;
	size_t pos;
	int n;

	rogue_hdr(r->buf, ROGUE_CONNECT, 0, 0, 7, 0, 0, 0, sizeof(cp), 0);
	memcpy(r->buf + ROGUE_HDR_LEN, &cp, sizeof(cp));
	/* Not rogue_send(): the ACCEPT may come before the SEND's completion. */
	if (rogue_post(r, ROGUE_HDR_LEN + sizeof(cp)))
		return -1;
	while (rs_now() < end) {
		n = rogue_poll(r, 20000, &rx);
		if (!n)
			continue;	/* the CONNECT's completion */
		if (n < ROGUE_HDR_LEN)
			return -2;
		/* Each record of the SEND (version 2: there may be several). */
		for (pos = 0; pos + ROGUE_HDR_LEN <= (size_t)n;
		     pos += rogue_rec_len(ntohl(h.len))) {
			memcpy(&h, rx + pos, sizeof(h));
			if (h.version != rogue_version)
				return -3;
			if (h.type == ROGUE_ACCEPT && ntohl(h.dst_conn) == 7 &&
			    pos + ROGUE_HDR_LEN + sizeof(acc) <= (size_t)n) {
				memcpy(&acc, rx + pos + ROGUE_HDR_LEN, sizeof(acc));
				*credits = ntohl(acc.credits);
				return ntohl(h.src_conn);
			}
		}
	}
	return -ETIMEDOUT;
}

/* CONNECT to the fixture's second listener. */
static int rogue_ac(struct rogue *r, uint32_t *credits)
{
	return rogue_ac_to(r, PORT + 1, credits);
}

/* A one-chunk message number @seq of 8 bytes from rogue 7 to @dst. */
static int rogue_chunk(struct rogue *r, uint32_t dst, uint32_t seq)
{
	rogue_hdr(r->buf, ROGUE_DATA, ROGUE_F_FIRST | ROGUE_F_LAST, dst, 7, seq, 8, 0, 8, 0);
	memcpy(r->buf + ROGUE_HDR_LEN, "rogue!!", 8);
	return rogue_send(r, ROGUE_HDR_LEN + 8);
}

TEST_F_TIMEOUT(rogue, out_of_window, 90)
{
	uint32_t credits = 0, i;
	int id = rogue_ac(&self->r, &credits);

	ASSERT_LT(0, id);
	ASSERT_LT(0, credits);
	for (i = 0; i < credits; i++)
		ASSERT_EQ(0, rogue_chunk(&self->r, id, i));
	/* One more than granted: the module drops the QP. */
	rogue_chunk(&self->r, id, credits);
	dropped_only_rogue(_metadata, self);
}

/*
 * A chunk larger than the receive slots of the accepting file (1 KiB,
 * RDMASHARE_SETUP_SLOT_SIZE), which its ACCEPT named, though it fits the
 * SRQ's buffers: the rogue loses its QP, and the slots after the one it
 * would have filled keep what they had.
 */
TEST_F_TIMEOUT(rogue, chunk_over_slot, 90)
{
	struct rdmashare_setup p = {
		.flags = RDMASHARE_SETUP_SLOT_SIZE, .data_size = 4096, .rx_slots = 4,
		.rx_slot_size = 1024,
	};
	struct rdmashare *small;
	uint32_t credits = 0;
	unsigned char *area;
	size_t area_len;
	int l, id;

	small = rs_open_with(&p);
	ASSERT_NE(NULL, small);
	area = rdmashare_data(small, &area_len);
	ASSERT_EQ(p.map_size, area_len);
	memset(area + p.rx_offset, 0xee, 4 * 1024);
	l = rdmashare_listen(small, PORT + 2, 4);
	ASSERT_LT(0, l);
	id = rogue_ac_to(&self->r, PORT + 2, &credits);
	ASSERT_LT(0, id);
	ASSERT_LT(0, credits);
	rogue_hdr(self->r.buf, ROGUE_DATA, ROGUE_F_FIRST | ROGUE_F_LAST, id, 7, 0, 1025, 0,
		  1025, 0);
	memset(self->r.buf + ROGUE_HDR_LEN, 0x5a, 1025);
	rogue_send(&self->r, ROGUE_HDR_LEN + 1025);
	dropped_only_rogue(_metadata, self);
	EXPECT_EQ(NULL, memchr(area + p.rx_offset, 0x5a, 4 * 1024));
	rdmashare_close(small);
}

TEST_F_TIMEOUT(rogue, replayed, 90)
{
	uint32_t credits = 0;
	int id = rogue_ac(&self->r, &credits);

	ASSERT_LT(0, id);
	ASSERT_LE(2, credits);
	ASSERT_EQ(0, rogue_chunk(&self->r, id, 0));
	rogue_chunk(&self->r, id, 0);
	dropped_only_rogue(_metadata, self);
}

TEST_F_TIMEOUT(rogue, malformed_batch, 240)
{
	struct rdmashare_ac_stats st;
	uint32_t credits = 0;
	char in[64], *b;
	int id, ac;

	/* The fixture's rogue speaks version 1: this one offers 2. */
	rogue_close(&self->r);
	rogue_version = 2;
	ASSERT_EQ(RDMA_CM_EVENT_ESTABLISHED,
		  rogue_open(&self->r, rs_ip(), ROGUE_IP, ROGUE_PORT + 1));
	id = rogue_ac(&self->r, &credits);	/* the ACCEPT comes as version 2 */
	ASSERT_LT(0, id);
	ASSERT_LE(2, credits);
	ac = rdmashare_accept(self->rs, self->l2, 20000);
	ASSERT_LT(0, ac);

	/* A chunk and a KEEPALIVE in one SEND: taken. */
	b = self->r.buf;
	rogue_hdr(b, ROGUE_DATA, ROGUE_F_FIRST | ROGUE_F_LAST, id, 7, 0, 8, 0, 8, 0);
	memcpy(b + ROGUE_HDR_LEN, "batch 0", 8);
	rogue_hdr(b + rogue_rec_len(8), ROGUE_KEEPALIVE, 0, 0, 0, 0, 0, 0, 0, 0);
	ASSERT_EQ(0, rogue_send(&self->r, rogue_rec_len(8) + rogue_rec_len(0)));
	ASSERT_EQ(8, rdmashare_recv(self->rs, ac, in, sizeof(in), 10000));
	EXPECT_STREQ("batch 0", in);

	/* A good chunk, then one whose padding is not zero: refused whole. */
	rogue_hdr(b, ROGUE_DATA, ROGUE_F_FIRST | ROGUE_F_LAST, id, 7, 1, 8, 0, 8, 0);
	memcpy(b + ROGUE_HDR_LEN, "batch 1", 8);
	rogue_hdr(b + 40, ROGUE_DATA, ROGUE_F_FIRST | ROGUE_F_LAST, id, 7, 2, 4, 0, 4, 0);
	memcpy(b + 40 + ROGUE_HDR_LEN, "bad", 4);
	memset(b + 40 + ROGUE_HDR_LEN + 4, 0xee, 4);
	rogue_send(&self->r, 40 + rogue_rec_len(4));
	EXPECT_GT(0, rdmashare_recv(self->rs, ac, in, sizeof(in), 20000));
	ASSERT_EQ(0, rdmashare_ac_stats(self->rs, ac, &st));
	EXPECT_EQ(1, st.rx_msgs);
	dropped_only_rogue(_metadata, self);
}

/* A version 3 rogue with an AC to the fixture's second listener. */
static int rogue_v3_ac(struct __test_metadata *_metadata, FIXTURE_DATA(rogue) *self,
		       uint32_t *credits)
{
	int id;

	rogue_close(&self->r);
	rogue_version = 3;
	if (rogue_open(&self->r, rs_ip(), ROGUE_IP, ROGUE_PORT + 2) != RDMA_CM_EVENT_ESTABLISHED)
		return -1;
	id = rogue_ac(&self->r, credits);	/* the ACCEPT comes as version 3 */
	if (id <= 0 || *credits < 2)
		return -2;
	return id;
}

static int rogue_return(struct rogue *r, uint32_t dst, uint32_t n)
{
	rogue_hdr(r->buf, ROGUE_CREDIT, ROGUE_F_RETURN, dst, 7, 0, 0, 0, 0, n);
	return rogue_send(r, ROGUE_HDR_LEN);
}

TEST_F_TIMEOUT(rogue, returned_credits, 240)
{
	uint32_t credits = 0;
	int id;

	id = rogue_v3_ac(_metadata, self, &credits);
	ASSERT_LT(0, id);
	/* Every credit back: taken, the QP stays. */
	ASSERT_EQ(0, rogue_return(&self->r, id, credits));
	usleep(500000);
	EXPECT_TRUE(rogue_peer_listed());
	/* A chunk with one of them (a slot it no longer has): the QP goes. */
	rogue_chunk(&self->r, id, 0);
	dropped_only_rogue(_metadata, self);
}

TEST_F_TIMEOUT(rogue, returned_too_many, 240)
{
	uint32_t credits = 0;
	int id;

	id = rogue_v3_ac(_metadata, self, &credits);
	ASSERT_LT(0, id);
	rogue_return(&self->r, id, credits + 1);
	dropped_only_rogue(_metadata, self);
}

/* A version 4 rogue's AC: what the module's ACCEPT named. */
struct rogue_v4 {
	int id;			/* the module's connection id */
	uint32_t rkey;		/* of its receive slots */
	uint32_t slot_size;	/* their stride */
	uint32_t credits;	/* slots granted, oldest first */
	uint32_t slots[64];
};

/*
 * On the rogue's connection, its AC @src to @port: what the ACCEPT named in
 * @a, and the module's connection id.
 */
static int rogue_v4_connect(struct __test_metadata *_metadata, FIXTURE_DATA(rogue) *self,
			    unsigned int port, uint32_t src, struct rogue_v4 *a)
{
	struct rogue_conn cp = { .port = htonl(port), .slot_size = htonl(16384) };
	double end = rs_now() + 30;
	struct rogue_hdr h;
	struct rogue_conn acc;
	char *rx = NULL;
	size_t pos;
	uint32_t i;
	int n;

	/* No credits for the module: it never sends to the rogue. */
	rogue_hdr(self->r.buf, ROGUE_CONNECT, 0, 0, src, 0, 0, 0, sizeof(cp), 0);
	memcpy(self->r.buf + ROGUE_HDR_LEN, &cp, sizeof(cp));
	/* Not rogue_send(): the ACCEPT may come before the SEND's completion. */
	if (rogue_post(&self->r, ROGUE_HDR_LEN + sizeof(cp)))
		return -2;
	while (rs_now() < end) {
		n = rogue_poll(&self->r, 20000, &rx);
		if (!n)
			continue;	/* the CONNECT's completion */
		if (n < ROGUE_HDR_LEN)
			return -3;
		for (pos = 0; pos + ROGUE_HDR_LEN <= (size_t)n;
		     pos += rogue_rec_len(ntohl(h.len))) {
			memcpy(&h, rx + pos, sizeof(h));
			if (h.type != ROGUE_ACCEPT || ntohl(h.dst_conn) != src)
				continue;
			memcpy(&acc, rx + pos + ROGUE_HDR_LEN, sizeof(acc));
			a->id = ntohl(h.src_conn);
			a->rkey = ntohl(acc.rkey);
			a->slot_size = ntohl(acc.slot_size);
			a->credits = ntohl(acc.credits);
			if (a->credits > 64 ||
			    ntohl(h.len) != sizeof(acc) + 4 * a->credits)
				return -4;
			for (i = 0; i < a->credits; i++) {
				memcpy(&a->slots[i], rx + pos + ROGUE_HDR_LEN + sizeof(acc) + 4 * i, 4);
				a->slots[i] = ntohl(a->slots[i]);
			}
			TH_LOG("ACCEPT: id %d rkey %#x slot_size %u credits %u", a->id, a->rkey,
			       a->slot_size, a->credits);
			return a->id;
		}
	}
	return -5;
}

/* The version rogue_v4_ac() speaks: 4, or 5 for the tests of version 5. */
static int placed_version = 4;

/* A version 4 rogue (a new connection) and its AC 7 to @port. */
static int rogue_v4_ac(struct __test_metadata *_metadata, FIXTURE_DATA(rogue) *self,
		       unsigned int port, struct rogue_v4 *a)
{
	rogue_close(&self->r);
	rogue_version = placed_version;
	if (rogue_open(&self->r, rs_ip(), ROGUE_IP, ROGUE_PORT + 3) != RDMA_CM_EVENT_ESTABLISHED)
		return -1;
	return rogue_v4_connect(_metadata, self, port, 7, a);
}

/*
 * Message @seq of @msg_len bytes: its first chunk, @len bytes of @text,
 * written to @slot and named there by a PLACED record that says @len_said
 * bytes (the last chunk if that is @msg_len).
 */
static int rogue_place_part(struct rogue *r, const struct rogue_v4 *a, uint32_t seq,
			    uint32_t slot, const char *text, uint32_t len, uint32_t len_said,
			    uint32_t msg_len)
{
	uint32_t placed[2] = { htonl(len_said), htonl(slot) };
	uint16_t flags = ROGUE_F_FIRST | ROGUE_F_PLACED;

	if (len_said == msg_len)
		flags |= ROGUE_F_LAST;
	memset(r->buf, 0, len);
	memcpy(r->buf, text, strlen(text) + 1);
	if (rogue_write(r, len, (uint64_t)slot * a->slot_size, a->rkey))
		return -1;
	rogue_hdr(r->buf, ROGUE_DATA, flags, a->id, 7, seq, msg_len, 0, sizeof(placed), 0);
	memcpy(r->buf + ROGUE_HDR_LEN, placed, sizeof(placed));
	return rogue_send(r, ROGUE_HDR_LEN + sizeof(placed));
}

/* Message @seq, one chunk placed as rogue_place_part() does. */
static int rogue_place(struct rogue *r, const struct rogue_v4 *a, uint32_t seq,
		       uint32_t slot, const char *text, uint32_t len, uint32_t len_said)
{
	return rogue_place_part(r, a, seq, slot, text, len, len_said, len_said);
}

/* The first 64 bytes of message @seq of @msg_len bytes, placed. */
static int rogue_place_first(struct rogue *r, const struct rogue_v4 *a, uint32_t seq,
			     uint32_t slot, const char *text, uint32_t msg_len)
{
	return rogue_place_part(r, a, seq, slot, text, 64, 64, msg_len);
}

/*
 * A version 4 rogue's AC to @port, granted at least @min slots, accepted
 * on listener @l of file @rs, and a first chunk placed in the oldest slot,
 * received intact.  The accepted AC, or a negative number.
 */
static int rogue_v4_placed_at(struct __test_metadata *_metadata, FIXTURE_DATA(rogue) *self,
			      struct rdmashare *rs, int l, unsigned int port,
			      struct rogue_v4 *a, uint32_t min)
{
	char in[64] = "";
	ssize_t n;
	int ac;

	if (rogue_v4_ac(_metadata, self, port, a) <= 0 || !a->rkey || a->credits < min)
		return -1;
	ac = rdmashare_accept(rs, l, 20000);
	if (ac <= 0)
		return -2;
	n = rogue_place(&self->r, a, 0, a->slots[0], "placed 0", 64, 64);
	if (n) {
		TH_LOG("placing the first chunk: %zd", n);
		return -3;
	}
	n = rdmashare_recv(rs, ac, in, sizeof(in), 20000);
	if (n != 64 || strcmp(in, "placed 0")) {
		TH_LOG("the first chunk: %zd bytes, '%.8s'", n, in);
		return -4;
	}
	return ac;
}

static int rogue_v4_placed(struct __test_metadata *_metadata, FIXTURE_DATA(rogue) *self,
			   struct rogue_v4 *a, uint32_t min)
{
	return rogue_v4_placed_at(_metadata, self, self->rs, self->l2, PORT + 1, a, min);
}

TEST_F_TIMEOUT(rogue, placed, 240)
{
	struct rdmashare_ac_stats st;
	struct rogue_v4 a;
	char in[64];
	int ac;

	/* Into the oldest slot granted: the application reads it. */
	ac = rogue_v4_placed(_metadata, self, &a, 2);
	ASSERT_LT(0, ac);
	ASSERT_EQ(0, rogue_place(&self->r, &a, 1, a.slots[1], "placed 1", 9, 9));
	ASSERT_EQ(9, rdmashare_recv(self->rs, ac, in, sizeof(in), 10000));
	EXPECT_STREQ("placed 1", in);
	ASSERT_EQ(0, rdmashare_ac_stats(self->rs, ac, &st));
	EXPECT_EQ(2, st.rx_msgs);
	EXPECT_TRUE(rogue_peer_listed());
	rdmashare_close_ac(self->rs, ac);
}

TEST_F_TIMEOUT(rogue, misplaced, 240)
{
	struct rogue_v4 a;

	ASSERT_LT(0, rogue_v4_placed(_metadata, self, &a, 3));
	/* The third slot granted, not the oldest: the QP goes. */
	rogue_place(&self->r, &a, 1, a.slots[2], "misplaced", 64, 64);
	dropped_only_rogue(_metadata, self);
}

TEST_F_TIMEOUT(rogue, placed_too_long, 240)
{
	struct rogue_v4 a;

	ASSERT_LT(0, rogue_v4_placed(_metadata, self, &a, 2));
	/* The record says one byte more than a slot holds. */
	rogue_place(&self->r, &a, 1, a.slots[1], "too long", 64, a.slot_size + 1);
	dropped_only_rogue(_metadata, self);
}

/*
 * Version 5: @len bytes of @text written to @slot by a WRITE WITH
 * IMMEDIATE that names the module's connection @imm: the next chunk.
 */
static int rogue_continue(struct rogue *r, const struct rogue_v4 *a, uint32_t slot,
			  const char *text, uint32_t len, uint32_t imm)
{
	memset(r->buf, 0, len);
	memcpy(r->buf, text, strlen(text) + 1);
	return rogue_write_imm(r, len, (uint64_t)slot * a->slot_size, a->rkey, imm);
}

static long rogue_stat(const char *name)
{
	char path[256], buf[32];

	snprintf(path, sizeof(path), RS_SYSFS "/peers/" ROGUE_IP "/stats/%s", name);
	return rs_read_file(path, buf, sizeof(buf)) ? -1 : atol(buf);
}

/*
 * Version 5: a message's first chunk placed with its record, the next ones
 * by WRITE WITH IMMEDIATE into the next slots granted: the application
 * reads the whole message, in order.
 */
TEST_F_TIMEOUT(rogue, continued, 240)
{
	struct rdmashare_ac_stats st;
	struct rogue_v4 a;
	char in[256];
	long writes0;
	int ac;

	placed_version = 5;
	ac = rogue_v4_placed(_metadata, self, &a, 4);
	ASSERT_LT(0, ac);
	writes0 = rogue_stat("rx_writes");
	ASSERT_LE(0, writes0);
	ASSERT_EQ(0, rogue_place_first(&self->r, &a, 1, a.slots[1], "one", 192));
	ASSERT_EQ(0, rogue_continue(&self->r, &a, a.slots[2], "two", 64, a.id));
	ASSERT_EQ(0, rogue_continue(&self->r, &a, a.slots[3], "three", 64, a.id));
	memset(in, 0, sizeof(in));
	ASSERT_EQ(192, rdmashare_recv(self->rs, ac, in, sizeof(in), 10000));
	EXPECT_STREQ("one", in);
	EXPECT_STREQ("two", in + 64);
	EXPECT_STREQ("three", in + 128);
	ASSERT_EQ(0, rdmashare_ac_stats(self->rs, ac, &st));
	EXPECT_EQ(2, st.rx_msgs);
	EXPECT_EQ(4, st.rx_chunks);
	EXPECT_EQ(2, rogue_stat("rx_writes") - writes0);
	EXPECT_TRUE(rogue_peer_listed());
	rdmashare_close_ac(self->rs, ac);
}

/*
 * Version 5: one WRITE WITH IMMEDIATE for two chunks, into two slots that
 * follow each other (a slot's size, then 100 bytes): the receiver splits
 * it at its slots' size, and the message arrives whole.
 */
TEST_F_TIMEOUT(rogue, continued_joined, 240)
{
	struct rdmashare_ac_stats st;
	struct rogue_v4 a;
	uint32_t msg_len;
	char *in;
	int ac;

	placed_version = 5;
	ac = rogue_v4_placed(_metadata, self, &a, 4);
	ASSERT_LT(0, ac);
	/* A fresh file grants its slots in order. */
	ASSERT_EQ(a.slots[2] + 1, a.slots[3]);
	msg_len = 64 + a.slot_size + 100;
	in = calloc(1, msg_len);
	ASSERT_NE(NULL, in);
	ASSERT_EQ(0, rogue_place_first(&self->r, &a, 1, a.slots[1], "one", msg_len));
	memset(self->r.buf, 0, a.slot_size + 100);
	strcpy(self->r.buf, "two");
	strcpy(self->r.buf + a.slot_size, "three");
	ASSERT_EQ(0, rogue_write_imm(&self->r, a.slot_size + 100,
				     (uint64_t)a.slots[2] * a.slot_size, a.rkey, a.id));
	ASSERT_EQ(msg_len, rdmashare_recv(self->rs, ac, in, msg_len, 10000));
	EXPECT_STREQ("one", in);
	EXPECT_STREQ("two", in + 64);
	EXPECT_STREQ("three", in + 64 + a.slot_size);
	ASSERT_EQ(0, rdmashare_ac_stats(self->rs, ac, &st));
	EXPECT_EQ(4, st.rx_chunks);
	EXPECT_TRUE(rogue_peer_listed());
	free(in);
	rdmashare_close_ac(self->rs, ac);
}

/*
 * Version 5: a WRITE WITH IMMEDIATE over three slots when only two are
 * granted still: its QP goes.
 */
TEST_F_TIMEOUT(rogue, continued_over_credits, 240)
{
	struct rogue_v4 a;

	placed_version = 5;
	ASSERT_LT(0, rogue_v4_placed(_metadata, self, &a, 4));
	ASSERT_EQ(0, rogue_place_first(&self->r, &a, 1, a.slots[1], "one",
				       64 + 2 * a.slot_size + 1));
	memset(self->r.buf, 0, 2 * a.slot_size + 1);
	rogue_write_imm(&self->r, 2 * a.slot_size + 1, (uint64_t)a.slots[2] * a.slot_size,
			a.rkey, a.id);
	dropped_only_rogue(_metadata, self);
}

/* Version 5: a continuation with no message in progress. */
TEST_F_TIMEOUT(rogue, continued_alone, 240)
{
	struct rogue_v4 a;

	placed_version = 5;
	ASSERT_LT(0, rogue_v4_placed(_metadata, self, &a, 2));
	rogue_continue(&self->r, &a, a.slots[1], "alone", 64, a.id);
	dropped_only_rogue(_metadata, self);
}

/*
 * A version @version rogue's message of 128 bytes: its first 64 placed
 * with their record, then a WRITE WITH IMMEDIATE of @len bytes, which
 * costs the rogue its QP.
 */
static void continued_refused(struct __test_metadata *_metadata, FIXTURE_DATA(rogue) *self,
			      int version, uint32_t len)
{
	struct rogue_v4 a;

	placed_version = version;
	ASSERT_LT(0, rogue_v4_placed(_metadata, self, &a, 3));
	ASSERT_EQ(0, rogue_place_first(&self->r, &a, 1, a.slots[1], "first", 128));
	rogue_continue(&self->r, &a, a.slots[2], "second", len, a.id);
	dropped_only_rogue(_metadata, self);
}

/* Version 5: a continuation one byte longer than the message has left. */
TEST_F_TIMEOUT(rogue, continued_too_long, 240)
{
	continued_refused(_metadata, self, 5, 65);
}

/* A WRITE WITH IMMEDIATE from a peer that speaks version 4. */
TEST_F_TIMEOUT(rogue, continued_v4, 240)
{
	continued_refused(_metadata, self, 4, 64);
}

/*
 * Version 5: a continuation for a connection id that is not the rogue's
 * (none, or another peer's AC): dropped, as a record for it would be; the
 * rogue's own message goes on.
 */
TEST_F_TIMEOUT(rogue, continued_elsewhere, 240)
{
	struct rogue_v4 a;
	char in[256];
	int ac;

	placed_version = 5;
	ac = rogue_v4_placed(_metadata, self, &a, 4);
	ASSERT_LT(0, ac);
	ASSERT_EQ(0, rogue_place_first(&self->r, &a, 1, a.slots[1], "first", 128));
	ASSERT_EQ(0, rogue_continue(&self->r, &a, a.slots[2], "stray", 64, a.id ^ 0x800000));
	ASSERT_EQ(0, rogue_continue(&self->r, &a, a.slots[2], "stray", 64, 0));
	ASSERT_EQ(0, rogue_continue(&self->r, &a, a.slots[2], "second", 64, a.id));
	memset(in, 0, sizeof(in));
	ASSERT_EQ(128, rdmashare_recv(self->rs, ac, in, sizeof(in), 10000));
	EXPECT_STREQ("first", in);
	EXPECT_STREQ("second", in + 64);
	EXPECT_TRUE(rogue_peer_listed());
	EXPECT_EQ(0, legit_exchange(_metadata, self));
	rdmashare_close_ac(self->rs, ac);
}

/* The rogue's QP is gone: its WRITE with a key it does not hold failed. */
static void write_refused(struct __test_metadata *_metadata, FIXTURE_DATA(rogue) *self,
			  const struct rogue_v4 *a, uint32_t rkey)
{
	memset(self->r.buf, 0x66, 64);
	EXPECT_NE(0, rogue_write(&self->r, 64, (uint64_t)a->slots[1] * a->slot_size, rkey));
	dropped_only_rogue(_metadata, self);
}

TEST_F_TIMEOUT(rogue, forged_key, 240)
{
	struct rogue_v4 a;

	ASSERT_LT(0, rogue_v4_placed(_metadata, self, &a, 2));
	/* The key byte of the rkey changed: a region it was never given. */
	write_refused(_metadata, self, &a, a.rkey ^ 0x5a);
}

/*
 * A key that was good: its file closed, the rogue answered the CLOSE, the
 * AC (the file's last) went, and with the file the region.  The rogue's
 * WRITE with it fails and costs it its QP (with its AC to another file,
 * whose KEEPALIVEs find the QP broken: rxe reports no event), nobody else
 * anything; the freed slots are untouched.
 */
TEST_F_TIMEOUT(rogue, revoked_key, 240)
{
	double end = rs_now() + 20;
	struct rogue_v4 a, other;
	struct rdmashare *rs;
	char acs[32];
	int l;

	rs = rs_open_setup(1 << 20, 64);
	ASSERT_NE(NULL, rs);
	l = rdmashare_listen(rs, PORT + 2, 8);
	ASSERT_LT(0, l);
	ASSERT_LT(0, rogue_v4_placed_at(_metadata, self, rs, l, PORT + 2, &a, 2));
	ASSERT_LT(0, rogue_v4_connect(_metadata, self, PORT + 1, 8, &other));
	ASSERT_LT(0, rdmashare_accept(self->rs, self->l2, 20000));
	rdmashare_close(rs);
	rogue_hdr(self->r.buf, ROGUE_CLOSE, 0, a.id, 7, 0, 0, 0, 0, 0);
	ASSERT_EQ(0, rogue_send(&self->r, ROGUE_HDR_LEN));
	while (rs_now() < end &&
	       (rs_read_file(RS_SYSFS "/peers/" ROGUE_IP "/acs", acs, sizeof(acs)) ||
		atoi(acs) != 1))
		usleep(100000);
	ASSERT_EQ(1, atoi(acs));
	usleep(500000);		/* the file's release follows its last AC's */
	EXPECT_TRUE(rogue_peer_listed());
	write_refused(_metadata, self, &a, a.rkey);
}

/*
 * A version 4 peer that sends with invalidate, naming the rkey of the
 * slots it was given (rdmashare never does): it loses its QP, the region
 * is registered again with the next ACCEPT that names it, and a large
 * message, placed there, arrives whole (second review, finding 8).
 */
TEST_F_TIMEOUT(rogue, invalidated_key, 240)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV };
	static char out[65536], in[65536];
	struct rogue_v4 a;
	int c, s;

	ASSERT_LT(0, rogue_v4_placed(_metadata, self, &a, 2));
	rogue_hdr(self->r.buf, ROGUE_KEEPALIVE, 0, 0, 0, 0, 0, 0, 0, 0);
	sge = (struct ibv_sge){ .addr = (uintptr_t)self->r.buf, .length = ROGUE_HDR_LEN,
				.lkey = self->r.mr->lkey };
	wr.invalidate_rkey = a.rkey;
	ASSERT_EQ(0, rogue_post_wr(&self->r, &wr));
	rogue_wait_send(&self->r);
	dropped_only_rogue(_metadata, self);
	/* A new AC names the region again; a large message goes into it. */
	inet_pton(AF_INET, rs_ip(), &sin.sin_addr);
	c = rdmashare_connect(self->rs, (struct sockaddr *)&sin, 20000);
	ASSERT_LT(0, c);
	s = rdmashare_accept(self->rs, self->l, 20000);
	ASSERT_LT(0, s);
	memset(out, 0x3c, sizeof(out));
	ASSERT_EQ(0, rdmashare_send(self->rs, c, out, sizeof(out)));
	ASSERT_EQ((ssize_t)sizeof(in), rdmashare_recv(self->rs, s, in, sizeof(in), 20000));
	EXPECT_EQ(0, memcmp(in, out, sizeof(in)));
	EXPECT_EQ(0, legit_exchange(_metadata, self));
}

/*
 * With keepalive_ms 0 a CLOSE the peer never answers still costs it its
 * QP after connect_timeout_ms (the check used to ride on the keepalives
 * alone): a version 4 rogue is granted slots, the application closes the
 * AC, the rogue stays silent (second review, finding 10).
 */
TEST_F_TIMEOUT(rogue, close_unanswered_without_keepalive, 240)
{
	char ka[32], ct[32];
	struct rogue_v4 a;
	double t0;
	int ac;

	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/keepalive_ms", ka, sizeof(ka)));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/connect_timeout_ms", ct, sizeof(ct)));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/connect_timeout_ms", "2000"));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/keepalive_ms", "0"));
	ac = rogue_v4_placed(_metadata, self, &a, 2);
	ASSERT_LT(0, ac);
	ASSERT_EQ(0, rdmashare_close_ac(self->rs, ac));
	t0 = rs_now();
	while (rogue_peer_listed() && rs_now() < t0 + 20)
		usleep(100000);
	TH_LOG("the rogue's QP went after %.1f s", rs_now() - t0);
	EXPECT_FALSE(rogue_peer_listed());
	EXPECT_EQ(0, rs_write_file(RS_SYSFS "/keepalive_ms", ka));
	EXPECT_EQ(0, rs_write_file(RS_SYSFS "/connect_timeout_ms", ct));
	dropped_only_rogue(_metadata, self);
}

/*
 * Version 4: a peer may grant one AC at most RS_PROTO_MAX_WINDOW (4096)
 * slots in all.  Five CREDITs of 1024 slot indices each (one per SEND,
 * each within a record's limit): the fifth would make 5120, and the QP
 * goes down, only the rogue's.
 */
TEST_F_TIMEOUT(rogue, granted_too_many, 240)
{
	uint32_t idx, i, g;
	struct rogue_v4 a;
	int ac;

	ASSERT_LT(0, rogue_v4_ac(_metadata, self, PORT + 1, &a));
	ac = rdmashare_accept(self->rs, self->l2, 20000);
	ASSERT_LT(0, ac);
	for (g = 0; g < 5; g++) {
		rogue_hdr(self->r.buf, ROGUE_CREDIT, 0, a.id, 7, 0, 0, 0, 1024 * 4, 1024);
		for (i = 0; i < 1024; i++) {
			idx = htonl(g * 1024 + i);
			memcpy(self->r.buf + ROGUE_HDR_LEN + 4 * i, &idx, 4);
		}
		/* The fifth SEND may or may not complete before the QP goes. */
		if (rogue_send(&self->r, ROGUE_HDR_LEN + 1024 * 4)) {
			ASSERT_EQ(4, g);
			break;
		}
		/*
		 * The first four make exactly 4096, which is allowed: once the
		 * module had time to take them, the rogue's QP is still there.
		 */
		if (g == 3) {
			usleep(500000);
			ASSERT_TRUE(rogue_peer_listed());
		}
	}
	dropped_only_rogue(_metadata, self);
}

TEST_F_TIMEOUT(rogue, other_acs, 90)
{
	struct rdmashare_ac_stats st;
	uint32_t id;

	/* Every small connection id, the legitimate ACs' among them. */
	for (id = 1; id <= 64; id++) {
		rogue_hdr(self->r.buf, ROGUE_DATA, ROGUE_F_FIRST | ROGUE_F_LAST, id, id, 0, 8,
			  0, 8, 0);
		memcpy(self->r.buf + ROGUE_HDR_LEN, "forged!", 8);
		ASSERT_EQ(0, rogue_send(&self->r, ROGUE_HDR_LEN + 8));
		rogue_hdr(self->r.buf, ROGUE_CLOSE, 0, id, id, 0, 0, 0, 0, 0);
		ASSERT_EQ(0, rogue_send(&self->r, ROGUE_HDR_LEN));
	}
	/* Nothing arrived on the legitimate AC, which is still open. */
	ASSERT_EQ(0, rdmashare_ac_stats(self->rs, self->s, &st));
	EXPECT_EQ(RDMASHARE_AC_STATE_OPEN, st.state);
	EXPECT_EQ(0, st.status & RDMASHARE_AC_PEER_CLOSED);
	EXPECT_EQ(1, st.rx_msgs);
	EXPECT_EQ(0, legit_exchange(_metadata, self));
	/* Messages for nobody on its own QP: no reason to drop the rogue. */
	EXPECT_EQ(-ETIMEDOUT, rogue_wait_disconnect(&self->r, 1000));
	EXPECT_TRUE(rogue_peer_listed());
}

/*
 * A peer that asks and never takes the answers: CONNECTs to a port nobody
 * listens on, its receive buffers used up and not posted again.  The
 * module's REJECTs wait and pile up, bounded by RS_MAX_REJECTS (1024);
 * the QP goes when that bound or the transport's (RNR) retries are reached,
 * whichever comes first, and no other peer notices.
 */
TEST_F_TIMEOUT(rogue, rejects_not_taken, 180)
{
	struct rogue_conn cp = {
		.port = htonl(PORT + 9), .slot_size = htonl(16384), .credits = htonl(4),
	};
	uint32_t i;
	int ret = 0;

	self->r.no_repost = 1;
	for (i = 1; i <= 1500 && !ret; i++) {
		rogue_hdr(self->r.buf, ROGUE_CONNECT, 0, 0, i, 0, 0, 0, sizeof(cp), 0);
		memcpy(self->r.buf + ROGUE_HDR_LEN, &cp, sizeof(cp));
		ret = rogue_send(&self->r, ROGUE_HDR_LEN + sizeof(cp));
	}
	TH_LOG("%u CONNECTs sent (%d)", i - 1, ret);
	dropped_only_rogue(_metadata, self);
}

/*
 * QPs that die in the middle of a message: the rogue posts a 16 KiB SEND
 * whose second half has a bad memory key, so its rxe sends the first 8 KiB
 * and fails; the rogue leaves and the module's QP goes while it fills an
 * SRQ buffer, which rxe then never completes.  On a device of its own (the spare link, RS_TEST_NETDEV)
 * with the smallest SRQ (16 buffers), 40 such QPs would take every buffer;
 * the module makes a device's SRQ anew, every buffer posted, whenever its
 * last QP has gone (srq_renewals), so an AC over that device then still
 * carries messages that need every buffer.
 */
#define SRQ_DEV		"rxe_srq"
#define SRQ_ADDR	"198.19.0.1"
#define SRQ_ROGUE	"198.19.0.2"
#define SRQ_ROUNDS	40

static void srq_cleanup(void)
{
	rs_sh("rdma link delete " SRQ_DEV " 2>/dev/null");
	rs_sh("ip addr del " SRQ_ADDR "/24 dev %s 2>/dev/null",
	      getenv("RS_TEST_NETDEV") ?: "veth1");
	rs_sh("ip addr del " SRQ_ROGUE "/32 dev %s 2>/dev/null",
	      getenv("RS_TEST_NETDEV") ?: "veth1");
	rs_write_file(RS_SYSFS "/srq_size", "512");
}

static long srq_dev_read(const char *what)
{
	char path[256], buf[32];

	snprintf(path, sizeof(path), RS_SYSFS "/devices/" SRQ_DEV "/%s", what);
	if (rs_read_file(path, buf, sizeof(buf)))
		return -1;
	return atol(buf);
}

/*
 * A peer that posts no receives: the module's answers get RNR NAKs, and
 * the finite RNR retry (about 4 s) takes the rogue's QP down, long before
 * the idle timeout (60 s) or the bound on queued REJECTs would.
 */
TEST_F_TIMEOUT(rogue, rnr_gives_up, 90)
{
	struct rogue_conn cp = {
		.port = htonl(PORT + 9), .slot_size = htonl(16384), .credits = htonl(4),
	};
	double t0 = rs_now(), end = t0 + 30;
	uint32_t i;

	self->r.no_repost = 1;
	/* Its 16 receives take 16 REJECTs; the 17th and later get RNR NAKs. */
	for (i = 1; i <= ROGUE_RECVS + 4; i++) {
		rogue_hdr(self->r.buf, ROGUE_CONNECT, 0, 0, i, 0, 0, 0, sizeof(cp), 0);
		memcpy(self->r.buf + ROGUE_HDR_LEN, &cp, sizeof(cp));
		ASSERT_EQ(0, rogue_send(&self->r, ROGUE_HDR_LEN + sizeof(cp)));
	}
	while (rogue_peer_listed() && rs_now() < end)
		usleep(100000);
	TH_LOG("the rogue's QP went after %.1f s", rs_now() - t0);
	dropped_only_rogue(_metadata, self);
}

/* The QPs the module has from the rogue's address. */
static int rogue_qps(void)
{
	char buf[32];

	if (rs_read_file(RS_SYSFS "/peers/" ROGUE_IP "/qps", buf, sizeof(buf)))
		return -1;
	return atoi(buf);
}

/*
 * A peer that asks for a QP and never completes the handshake (no RTU for
 * the module's REP): the QP set up for it goes within connect_timeout_ms,
 * not when rdma_cm stops resending the REP (about a minute).  The rogue's
 * other QP and the legitimate AC go on.
 */
TEST_F_TIMEOUT(rogue, half_open, 90)
{
	char before[32];
	struct rogue h;
	double t0, took;
	int ret;

	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/connect_timeout_ms", before, sizeof(before)));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/connect_timeout_ms", "2000"));
	ret = rogue_connect_half(&h, rs_ip(), ROGUE_IP, ROGUE_PORT + 6);
	t0 = rs_now();
	EXPECT_EQ(RDMA_CM_EVENT_CONNECT_RESPONSE, ret);
	EXPECT_EQ(2, rogue_qps());
	while (rogue_qps() > 1 && rs_now() < t0 + 40)
		usleep(100000);
	took = rs_now() - t0;
	TH_LOG("the half-open QP went after %.1f s", took);
	EXPECT_EQ(1, rogue_qps());
	EXPECT_GT(15, took);
	if (ret == RDMA_CM_EVENT_CONNECT_RESPONSE)
		rogue_close(&h);
	EXPECT_EQ(0, rs_write_file(RS_SYSFS "/connect_timeout_ms", before));
	EXPECT_EQ(0, legit_exchange(_metadata, self));
	EXPECT_EQ(-ETIMEDOUT, rogue_wait_disconnect(&self->r, 500));
	EXPECT_TRUE(rogue_peer_listed());
}

/* rxe setup and 40 QPs are slow under emulation and in the debug kernel. */
FIXTURE(srq) {
	int unused;
};

FIXTURE_SETUP(srq)
{
}

FIXTURE_TEARDOWN(srq)
{
	srq_cleanup();
}

/*
 * The rogue's rounds, in a child process: librdmacm keeps every device
 * open while the process lives, and removing the device waits for that.
 * Returns 0, or the round that failed (1-based); -1 when the setup did.
 */
static int srq_rogue_rounds(void)
{
	struct ibv_send_wr *bad, wr = {
		.num_sge = 2, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_sge sge[2];
	struct rogue r;
	double end;
	int i, ret;

	for (i = 1; i <= SRQ_ROUNDS; i++) {
		ret = rogue_open(&r, SRQ_ADDR, SRQ_ROGUE, ROGUE_PORT);
		if (ret != RDMA_CM_EVENT_ESTABLISHED) {
			fprintf(stderr, "# round %d: rogue_open: %d\n", i, ret);
			return i;
		}
		/*
		 * 8 KiB, then a second half whose key is wrong: rxe sends the
		 * first packets, fails on the second SGE and the rogue's QP
		 * goes to the error state in the middle of the message.
		 */
		memset(r.buf, 0xa5, 16384);
		sge[0] = (struct ibv_sge){ .addr = (uintptr_t)r.buf, .length = 8192,
					   .lkey = r.mr->lkey };
		sge[1] = (struct ibv_sge){ .addr = (uintptr_t)r.buf + 8192, .length = 8192,
					   .lkey = r.mr->lkey ^ 0x5a5a00 };
		wr.sg_list = sge;
		if (ibv_post_send(r.id->qp, &wr, &bad)) {
			fprintf(stderr, "# round %d: post failed\n", i);
			return i;
		}
		ret = rogue_poll(&r, 5000, NULL);
		if (ret > -1000) {
			fprintf(stderr, "# round %d: the SEND did not fail: %d\n", i, ret);
			return i;
		}
		rogue_close(&r);
		end = rs_now() + 30;
		while (srq_dev_read("qps") > 0 && rs_now() < end)
			usleep(20000);
		if (srq_dev_read("qps")) {
			fprintf(stderr, "# round %d: the module's QP stays\n", i);
			rs_sh("cat /sys/kernel/debug/rdmashare/peers/* >&2; rdma res show qp >&2");
			return i;
		}
	}
	return 0;
}

TEST_F_TIMEOUT(srq, buffers_of_dead_qps, 600)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(PORT + 20) };
	const char *netdev = getenv("RS_TEST_NETDEV") ?: "veth1";
	static char out[16384], in[16384];
	long renewals0, renewals;
	struct rdmashare *rs;
	int i, l, c, s, status;
	double end;
	pid_t pid;

	srq_cleanup();
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/srq_size", "16"));
	ASSERT_EQ(0, rs_sh("ip addr add " SRQ_ADDR "/24 dev %s && ip addr add " SRQ_ROGUE
			   "/32 dev %s && ip link set %s up", netdev, netdev, netdev));
	ASSERT_EQ(0, rs_sh("rdma link add " SRQ_DEV " type rxe netdev %s", netdev));
	usleep(500000);
	ASSERT_EQ(16, srq_dev_read("srq_size"));
	renewals0 = srq_dev_read("stats/srq_renewals");
	EXPECT_LE(0, renewals0);

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(srq_rogue_rounds());
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("round %d failed", WEXITSTATUS(status));
	renewals = srq_dev_read("stats/srq_renewals");
	EXPECT_LE(renewals0 + SRQ_ROUNDS, renewals);

	/* 64 messages of 16 KiB, 16 in flight: every buffer of the SRQ in use. */
	inet_pton(AF_INET, SRQ_ADDR, &sin.sin_addr);
	rs = rs_open_setup(4 << 20, 64);
	ASSERT_NE(NULL, rs);
	l = rdmashare_listen(rs, PORT + 20, 4);
	ASSERT_LT(0, l);
	c = rdmashare_connect(rs, (struct sockaddr *)&sin, 20000);
	ASSERT_LT(0, c);
	s = rdmashare_accept(rs, l, 20000);
	ASSERT_LT(0, s);
	for (i = 0; i < 64; i++) {
		memset(out, i, sizeof(out));
		ASSERT_EQ(0, rdmashare_send(rs, c, out, sizeof(out)));
		if (i < 15)
			continue;
		ASSERT_EQ(sizeof(in), rdmashare_recv(rs, s, in, sizeof(in), 20000))
			TH_LOG("message %d", i - 15);
		EXPECT_EQ((i - 15) & 0xff, (unsigned char)in[sizeof(in) - 1]);
	}
	for (i = 49; i < 64; i++)
		ASSERT_EQ(sizeof(in), rdmashare_recv(rs, s, in, sizeof(in), 20000));
	rdmashare_close(rs);
	end = rs_now() + 30;
	while (srq_dev_read("qps") > 0 && rs_now() < end)
		usleep(20000);
}

/*
 * An AC whose QP went, on a device that went after it, and whose CLOSED
 * the application has not reaped: a SEND large enough to go in place
 * (8 KiB, over pullup_max) fails, and touches nothing of the device.  A
 * version 3 peer (the rogue) leaves the AC without a mapping of the data
 * area, so the SEND would map it then; the QP's device was freed under it
 * before its QP held a reference (second review, finding 1: KASAN on the
 * debug kernel).
 */
#define GONE_DEV	"rxe_gone"
#define GONE_ADDR	"198.19.1.1"
#define GONE_ROGUE	"198.19.1.2"

static void gone_cleanup(void)
{
	const char *netdev = getenv("RS_TEST_NETDEV") ?: "veth1";

	rs_sh("rdma link delete " GONE_DEV " 2>/dev/null");
	rs_sh("ip addr del " GONE_ADDR "/24 dev %s 2>/dev/null", netdev);
	rs_sh("ip addr del " GONE_ROGUE "/32 dev %s 2>/dev/null", netdev);
}

static long gone_qps(void)
{
	char buf[32];

	if (rs_read_file(RS_SYSFS "/devices/" GONE_DEV "/qps", buf, sizeof(buf)))
		return -1;
	return atol(buf);
}

/* The rogue's side, in a child (librdmacm holds the device while it lives). */
static int gone_rogue(int ready, int go)
{
	uint32_t credits = 0;
	struct rogue r;
	char c;
	int id;

	rogue_version = 3;
	if (rogue_open(&r, GONE_ADDR, GONE_ROGUE, ROGUE_PORT) != RDMA_CM_EVENT_ESTABLISHED)
		return 1;
	id = rogue_ac_to(&r, PORT + 21, &credits);
	if (id <= 0)
		return 2;
	if (write(ready, "x", 1) != 1 || read(go, &c, 1) != 1)
		return 3;
	rogue_close(&r);
	return 0;
}

TEST(send_after_device_gone)
{
	const char *netdev = getenv("RS_TEST_NETDEV") ?: "veth1";
	int ready[2], go[2], l, ac, status;
	struct rdmashare *rs;
	size_t area_len;
	double end;
	char *area;
	pid_t pid;

	gone_cleanup();
	ASSERT_EQ(0, rs_sh("ip addr add " GONE_ADDR "/24 dev %s && ip addr add " GONE_ROGUE
			   "/32 dev %s && ip link set %s up", netdev, netdev, netdev));
	ASSERT_EQ(0, rs_sh("rdma link add " GONE_DEV " type rxe netdev %s", netdev));
	usleep(500000);
	rs = rs_open_setup(1 << 20, 64);
	ASSERT_NE(NULL, rs);
	l = rdmashare_listen(rs, PORT + 21, 4);
	ASSERT_LT(0, l);
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(gone_rogue(ready[1], go[0]));
	ASSERT_EQ(1, read(ready[0], &status, 1));
	ac = rdmashare_accept(rs, l, 20000);
	ASSERT_LT(0, ac);
	/* The rogue leaves: the QP goes, the AC closes; nobody reaps that. */
	ASSERT_EQ(1, write(go[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	end = rs_now() + 30;
	while (gone_qps() > 0 && rs_now() < end)
		usleep(20000);
	ASSERT_EQ(0, gone_qps());
	ASSERT_EQ(0, rs_sh("rdma link delete " GONE_DEV));

	area = rdmashare_data(rs, &area_len);
	ASSERT_NE(NULL, area);
	memset(area, 0x5a, 8192);
	EXPECT_GT(0, rs_raw_op(rs, RDMASHARE_OP_SEND, ac, 0, 8192, 99));
	rdmashare_close(rs);
	gone_cleanup();
}


/* A version 6 SINK record of the rogue's AC 7, flags @flags. */
static int rogue_sink(struct rogue *r, const struct rogue_v4 *a, uint16_t flags, uint32_t id,
		      uint32_t off, uint32_t len, uint32_t rkey, uint64_t addr)
{
	uint32_t p[6] = { htonl(id), htonl(off), htonl(len), htonl(rkey),
			  htonl(addr >> 32), htonl((uint32_t)addr) };

	rogue_hdr(r->buf, ROGUE_SINK, flags, a->id, 7, 0, 0, 0, sizeof(p), 0);
	memcpy(r->buf + ROGUE_HDR_LEN, p, sizeof(p));
	return rogue_send(r, ROGUE_HDR_LEN + sizeof(p));
}

/* Version 6: a chunk said to be in a sink the module never offered. */
TEST_F_TIMEOUT(rogue, sink_unoffered, 240)
{
	uint32_t placed[2] = { htonl(64), htonl(1) };
	struct rogue_v4 a;

	placed_version = 6;
	ASSERT_LT(0, rogue_v4_placed(_metadata, self, &a, 2));
	rogue_hdr(self->r.buf, ROGUE_DATA, ROGUE_F_FIRST | ROGUE_F_LAST | ROGUE_F_SINK, a.id, 7,
		  1, 64, 0, sizeof(placed), 0);
	memcpy(self->r.buf + ROGUE_HDR_LEN, placed, sizeof(placed));
	rogue_send(&self->r, ROGUE_HDR_LEN + sizeof(placed));
	dropped_only_rogue(_metadata, self);
}

/* Version 6: the DONE of a sink the module never offered. */
TEST_F_TIMEOUT(rogue, sink_done_unknown, 240)
{
	struct rogue_v4 a;

	placed_version = 6;
	ASSERT_LT(0, rogue_v4_placed(_metadata, self, &a, 2));
	rogue_sink(&self->r, &a, ROGUE_F_DONE, 1, 0, 0, 0, 0);
	dropped_only_rogue(_metadata, self);
}

/*
 * Version 6: an offer is taken (the rogue's QP stays while the module's
 * end has nothing to write into it), a second one while it is open is
 * not.
 */
TEST_F_TIMEOUT(rogue, sink_offered_twice, 240)
{
	struct rogue_v4 a;

	placed_version = 6;
	ASSERT_LT(0, rogue_v4_placed(_metadata, self, &a, 2));
	ASSERT_EQ(0, rogue_sink(&self->r, &a, 0, 1, 0, 4096, 0x1234, 0x10000));
	usleep(300000);
	EXPECT_TRUE(rogue_peer_listed());
	EXPECT_EQ(0, legit_exchange(_metadata, self));
	rogue_sink(&self->r, &a, 0, 2, 0, 4096, 0x1234, 0x20000);
	dropped_only_rogue(_metadata, self);
}

TEST_HARNESS_MAIN
