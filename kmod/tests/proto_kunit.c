// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the wire format (proto.c): every message type round
 * trips, every malformed header is rejected, a version 2 batch is taken
 * whole or refused whole, version 3's CREDIT flags are checked, and
 * version 4's grants carry their slot indices and ride on nothing else,
 * and its placed chunks say only where they went.
 */
#include <kunit/test.h>
#include <linux/module.h>

#include "proto.h"

#define BUF_LEN (RS_HDR_LEN + 64)

static const struct rs_proto_msg good_msgs[] = {
	{ .type = RS_MSG_DATA, .flags = RS_F_FIRST | RS_F_LAST, .dst_conn = 1,
	  .src_conn = 2, .seq = 7, .msg_len = 40, .offset = 0, .len = 40, .credits = 3 },
	{ .type = RS_MSG_DATA, .flags = RS_F_FIRST, .dst_conn = 0xffffffff,
	  .src_conn = 9, .seq = 0xffffffff, .msg_len = 1000, .offset = 0, .len = 64 },
	{ .type = RS_MSG_DATA, .flags = 0, .dst_conn = 5, .src_conn = 6,
	  .msg_len = 1000, .offset = 64, .len = 64 },
	{ .type = RS_MSG_DATA, .flags = RS_F_LAST, .dst_conn = 5, .src_conn = 6,
	  .msg_len = 1000, .offset = 936, .len = 64 },
	{ .type = RS_MSG_DATA, .flags = RS_F_FIRST | RS_F_LAST, .dst_conn = 5,
	  .src_conn = 6, .msg_len = 0, .offset = 0, .len = 0 },
	{ .type = RS_MSG_CONNECT, .src_conn = 11, .len = RS_CONN_PARAMS_LEN,
	  .conn = { .port = 0x42, .slot_size = 65536, .credits = 8 } },
	{ .type = RS_MSG_ACCEPT, .dst_conn = 11, .src_conn = 12, .credits = 0,
	  .len = RS_CONN_PARAMS_LEN, .conn = { .slot_size = 4096, .credits = 16 } },
	{ .type = RS_MSG_REJECT, .dst_conn = 11, .len = RS_REJECT_LEN,
	  .error = ECONNREFUSED },
	{ .type = RS_MSG_CLOSE, .dst_conn = 11, .src_conn = 12 },
	{ .type = RS_MSG_CREDIT, .dst_conn = 11, .src_conn = 12,
	  .credits = RS_PROTO_MAX_CREDITS },
	{ .type = RS_MSG_KEEPALIVE },
	{ .type = RS_MSG_CLOSE, .flags = RS_F_HALF, .dst_conn = 11, .src_conn = 12,
	  .credits = 2 },
};

static void msg_desc(const struct rs_proto_msg *m, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "type %u flags %#x len %u",
		 m->type, m->flags, m->len);
}

KUNIT_ARRAY_PARAM(good_msg, good_msgs, msg_desc);

/* Encode, decode, compare; the SEND length is the header plus the payload. */
static void proto_roundtrip_test(struct kunit *test)
{
	const struct rs_proto_msg *m = test->param_value;
	u8 buf[BUF_LEN];
	struct rs_proto_msg out;
	int n;

	memset(buf, 0xa5, sizeof(buf));
	n = rs_proto_encode(m, 1, buf, sizeof(buf));
	KUNIT_ASSERT_GE(test, n, RS_HDR_LEN);
	if (m->type == RS_MSG_DATA)
		KUNIT_EXPECT_EQ(test, n, RS_HDR_LEN);
	else
		KUNIT_EXPECT_EQ(test, n, RS_HDR_LEN + (int)m->len);

	KUNIT_ASSERT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + m->len, 1, 65536, &out), 0);
	KUNIT_EXPECT_EQ(test, out.type, m->type);
	KUNIT_EXPECT_EQ(test, out.flags, m->flags);
	KUNIT_EXPECT_EQ(test, out.dst_conn, m->dst_conn);
	KUNIT_EXPECT_EQ(test, out.src_conn, m->src_conn);
	KUNIT_EXPECT_EQ(test, out.seq, m->seq);
	KUNIT_EXPECT_EQ(test, out.msg_len, m->msg_len);
	KUNIT_EXPECT_EQ(test, out.offset, m->offset);
	KUNIT_EXPECT_EQ(test, out.len, m->len);
	KUNIT_EXPECT_EQ(test, out.credits, m->credits);
	if (m->type == RS_MSG_CONNECT || m->type == RS_MSG_ACCEPT) {
		KUNIT_EXPECT_EQ(test, out.conn.port, m->conn.port);
		KUNIT_EXPECT_EQ(test, out.conn.slot_size, m->conn.slot_size);
		KUNIT_EXPECT_EQ(test, out.conn.credits, m->conn.credits);
	}
	if (m->type == RS_MSG_REJECT)
		KUNIT_EXPECT_EQ(test, out.error, m->error);

	/* One byte short or long of the SEND is malformed. */
	KUNIT_EXPECT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + m->len + 1, 1, 65536, &out),
			-EBADMSG);
	if (RS_HDR_LEN + m->len > 0)
		KUNIT_EXPECT_EQ(test,
				rs_proto_decode(buf, RS_HDR_LEN + m->len - 1, 1, 65536, &out),
				-EBADMSG);
}

/* A header patched after encoding: which byte, what value, what error. */
struct bad_case {
	const char *name;
	int base;		/* index into good_msgs */
	unsigned int off;	/* byte offset in the encoded message */
	u8 val;
	int err;
};

static const struct bad_case bad_cases[] = {
	{ "version 0",			0, 0, 0, -EPROTONOSUPPORT },
	{ "version 2",			0, 0, 2, -EPROTONOSUPPORT },
	{ "type 0",			0, 1, 0, -EBADMSG },
	{ "type too big",		0, 1, RS_MSG_TYPE_MAX + 1, -EBADMSG },
	{ "type 255",			0, 1, 255, -EBADMSG },
	{ "unknown data flag",		0, 3, 0x0b, -EBADMSG },
	{ "high flag bits",		0, 2, 0x80, -EBADMSG },
	{ "data without FIRST",		0, 3, RS_F_LAST, -EBADMSG },
	{ "data without LAST",		0, 3, RS_F_FIRST, -EBADMSG },
	{ "FIRST at offset 64",		2, 3, RS_F_FIRST, -EBADMSG },
	{ "LAST before the end",	2, 3, RS_F_LAST, -EBADMSG },
	{ "data dst_conn 0",		0, 7, 0, -EBADMSG },
	{ "msg_len short of chunk",	0, 19, 39, -EBADMSG },
	{ "msg_len over max",		1, 16, 0x40, -EBADMSG },
	{ "offset past msg_len",	3, 21, 0x10, -EBADMSG },
	{ "offset huge",		3, 20, 0xff, -EBADMSG },
	{ "len over max_chunk",		1, 26, 0x02, -EBADMSG },
	{ "credits over max",		0, 28, 0x01, -EBADMSG },
	{ "connect with dst_conn",	5, 7, 1, -EBADMSG },
	{ "connect port 0",		5, 35, 0, -EBADMSG },
	{ "connect with seq",		5, 15, 1, -EBADMSG },
	{ "connect with flags",		5, 3, RS_F_FIRST, -EBADMSG },
	{ "connect slot size 0",	5, 37, 0, -EBADMSG },
	{ "connect rkey below v4",	5, 47, 1, -EBADMSG },
	{ "accept with port",		6, 35, 1, -EBADMSG },
	{ "reject error 0",		7, 35, 0, -EBADMSG },
	{ "close src_conn 0",		8, 11, 0, -EBADMSG },
	{ "close unknown flag",		11, 3, RS_F_HALF | 0x02, -EBADMSG },
	{ "close with seq",		11, 15, 1, -EBADMSG },
	{ "credit with HALF",		9, 3, RS_F_HALF, -EBADMSG },
	{ "credit with msg_len",	9, 19, 1, -EBADMSG },
	{ "keepalive with dst_conn",	10, 7, 1, -EBADMSG },
	{ "keepalive with credits",	10, 31, 1, -EBADMSG },
	{ "keepalive with len",		10, 27, 4, -EBADMSG },
};

static void bad_desc(const struct bad_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(bad, bad_cases, bad_desc);

static void proto_malformed_test(struct kunit *test)
{
	const struct bad_case *c = test->param_value;
	const struct rs_proto_msg *m = &good_msgs[c->base];
	u8 buf[BUF_LEN];
	struct rs_proto_msg out;
	u32 send_len = RS_HDR_LEN + m->len;

	KUNIT_ASSERT_GE(test, rs_proto_encode(m, 1, buf, sizeof(buf)), RS_HDR_LEN);
	KUNIT_ASSERT_EQ(test, rs_proto_decode(buf, send_len, 1, 65536, &out), 0);
	KUNIT_ASSERT_LT(test, c->off, send_len);
	buf[c->off] = c->val;
	KUNIT_EXPECT_EQ(test, rs_proto_decode(buf, send_len, 1, 65536, &out), c->err);
}

/* A header cut short, an oversized chunk for this host, and the encoder. */
static void proto_limits_test(struct kunit *test)
{
	struct rs_proto_msg m = good_msgs[1], out;
	u8 buf[BUF_LEN];
	int i;

	KUNIT_ASSERT_EQ(test, rs_proto_encode(&m, 1, buf, sizeof(buf)), RS_HDR_LEN);
	for (i = 0; i < RS_HDR_LEN; i++)
		KUNIT_EXPECT_EQ(test, rs_proto_decode(buf, i, 1, 65536, &out), -EBADMSG);
	/* 64-byte chunk against a host accepting 32-byte chunks. */
	KUNIT_EXPECT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + 64, 1, 32, &out), -EBADMSG);

	/* The encoder refuses what the decoder would refuse. */
	m.flags = RS_F_LAST;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 1, buf, sizeof(buf)), -EINVAL);
	m = good_msgs[5];
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 1, buf, RS_HDR_LEN), -ENOSPC);
	m.type = 0;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 1, buf, sizeof(buf)), -EINVAL);
	m.type = RS_MSG_TYPE_MAX + 1;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 1, buf, sizeof(buf)), -EINVAL);
	KUNIT_EXPECT_EQ(test, rs_proto_payload_len(RS_MSG_TYPE_MAX + 1, 0), -EINVAL);

	/* A receive slot of at least RS_PROTO_MIN_SLOT bytes. */
	m = good_msgs[5];
	m.conn.slot_size = RS_PROTO_MIN_SLOT - 1;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 1, buf, sizeof(buf)), -EINVAL);
	m.conn.slot_size = RS_PROTO_MIN_SLOT;
	KUNIT_ASSERT_EQ(test, rs_proto_encode(&m, 1, buf, sizeof(buf)),
			RS_HDR_LEN + RS_CONN_PARAMS_LEN);
	KUNIT_EXPECT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + RS_CONN_PARAMS_LEN, 1, 65536,
					      &out), 0);
	KUNIT_EXPECT_EQ(test, out.conn.slot_size, RS_PROTO_MIN_SLOT);
	buf[RS_HDR_LEN + 7] = RS_PROTO_MIN_SLOT - 1;	/* slot_size's low byte */
	KUNIT_EXPECT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + RS_CONN_PARAMS_LEN, 1, 65536,
					      &out), -EBADMSG);
}

/*
 * Version 3's CREDIT flags: one of them, a RECLAIM with no grant, a RETURN
 * with credits; an older version takes none, and no other message has them.
 */
static void proto_credit_flags_test(struct kunit *test)
{
	static const struct {
		u16 flags;
		u32 credits;
		bool ok;
	} cases[] = {
		{ RS_F_WANT, 0, true },
		{ RS_F_WANT, 5, true },
		{ RS_F_RECLAIM, 0, true },
		{ RS_F_RETURN, 3, true },
		{ RS_F_RECLAIM, 1, false },
		{ RS_F_RETURN, 0, false },
		{ RS_F_WANT | RS_F_RECLAIM, 0, false },
		{ RS_F_WANT | RS_F_RETURN, 2, false },
		{ BIT(3), 0, false },
		{ BIT(15), 0, false },
	};
	struct rs_proto_msg m = { .type = RS_MSG_CREDIT, .dst_conn = 3, .src_conn = 4 };
	struct rs_proto_msg out;
	u8 buf[BUF_LEN];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		m.flags = cases[i].flags;
		m.credits = cases[i].credits;
		if (!cases[i].ok) {
			KUNIT_EXPECT_EQ_MSG(test, rs_proto_encode(&m, 3, buf, sizeof(buf)),
					    -EINVAL, "case %u", i);
			continue;
		}
		KUNIT_ASSERT_EQ_MSG(test, rs_proto_encode(&m, 3, buf, sizeof(buf)), RS_HDR_LEN,
				    "case %u", i);
		KUNIT_ASSERT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN, 3, 65536, &out), 0);
		KUNIT_EXPECT_EQ(test, out.flags, m.flags);
		KUNIT_EXPECT_EQ(test, out.credits, m.credits);
		/* The same record from a version 2 peer is malformed. */
		buf[0] = 2;
		KUNIT_EXPECT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN, 2, 65536, &out), -EBADMSG);
		KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 2, buf, sizeof(buf)), -EINVAL);
	}
	/* Not on other types: a KEEPALIVE, an ACCEPT with WANT. */
	m = good_msgs[6];
	m.flags = RS_F_WANT;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 3, buf, sizeof(buf)), -EINVAL);
	m = good_msgs[10];
	m.flags = RS_F_RECLAIM;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 3, buf, sizeof(buf)), -EINVAL);
}

/*
 * Version 4: a CREDIT, CONNECT or ACCEPT carries the indices of the slots
 * it grants, exactly as many as it grants, at most RS_PROTO_MAX_WINDOW; no
 * other record grants; RETURN and RECLAIM carry none.
 */
static void proto_named_credits_test(struct kunit *test)
{
	static const u32 slots[] = { 7, 0, 0xffffffff, 3 };
	struct rs_proto_msg m = { .type = RS_MSG_CREDIT, .dst_conn = 3, .src_conn = 4,
				  .credits = 4, .len = 16 };
	struct rs_proto_msg out;
	u8 buf[BUF_LEN];
	unsigned int i;

	/* A grant, and a grant with WANT: the indices round trip. */
	KUNIT_ASSERT_EQ(test, rs_proto_slots_off(&m, 4), 0);
	KUNIT_ASSERT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)), RS_HDR_LEN);
	rs_proto_put_slots(buf + RS_HDR_LEN, slots, 4);
	KUNIT_ASSERT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + 16, 4, 65536, &out), 0);
	KUNIT_EXPECT_EQ(test, out.credits, 4);
	for (i = 0; i < ARRAY_SIZE(slots); i++)
		KUNIT_EXPECT_EQ(test, rs_proto_get_slot(buf + RS_HDR_LEN, i), slots[i]);
	KUNIT_EXPECT_EQ(test, buf[RS_HDR_LEN + 3], 7);		/* big endian */
	m.flags = RS_F_WANT;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)), RS_HDR_LEN);
	/* As many indices as credits. */
	m.len = 12;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)), -EINVAL);
	m.flags = 0;
	m.len = 0;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)), -EINVAL);
	/* A version 3 CREDIT has no payload. */
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 3, buf, sizeof(buf)), RS_HDR_LEN);
	KUNIT_EXPECT_EQ(test, rs_proto_slots_off(&m, 3), -1);
	/* At most a window. */
	m.credits = RS_PROTO_MAX_WINDOW + 1;
	m.len = m.credits * RS_SLOT_IDX_LEN;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)), -EINVAL);
	/* RETURN and RECLAIM name nothing. */
	m.credits = 2;
	m.len = 0;
	m.flags = RS_F_RETURN;
	KUNIT_EXPECT_EQ(test, rs_proto_slots_off(&m, 4), -1);
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)), RS_HDR_LEN);
	m.len = 8;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)), -EINVAL);

	/* A CONNECT's indices follow its parameters. */
	m = good_msgs[5];
	m.conn.credits = 2;
	m.len = RS_CONN_PARAMS_LEN + 8;
	KUNIT_ASSERT_EQ(test, rs_proto_slots_off(&m, 4), RS_CONN_PARAMS_LEN);
	KUNIT_ASSERT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)),
			RS_HDR_LEN + RS_CONN_PARAMS_LEN);
	rs_proto_put_slots(buf + RS_HDR_LEN + RS_CONN_PARAMS_LEN, slots, 2);
	KUNIT_ASSERT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + m.len, 4, 65536, &out), 0);
	KUNIT_EXPECT_EQ(test, out.conn.credits, 2);
	KUNIT_EXPECT_EQ(test, rs_proto_get_slot(buf + RS_HDR_LEN + RS_CONN_PARAMS_LEN, 1), 0);
	/* Without them, or as version 3 with them: malformed. */
	KUNIT_EXPECT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + RS_CONN_PARAMS_LEN, 4, 65536,
					      &out), -EBADMSG);
	buf[0] = 3;
	KUNIT_EXPECT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + m.len, 3, 65536, &out),
			-EBADMSG);

	/* No DATA, CLOSE or header of a CONNECT grants. */
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&good_msgs[0], 4, buf, sizeof(buf)), -EINVAL);
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&good_msgs[0], 3, buf, sizeof(buf)), RS_HDR_LEN);
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&good_msgs[11], 4, buf, sizeof(buf)), -EINVAL);
	m.credits = 1;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)), -EINVAL);
}

/*
 * Version 4: a placed chunk's record carries its length and slot, and the
 * checks of a chunk apply to that length; a CONNECT names its rkey.
 */
static void proto_placed_test(struct kunit *test)
{
	struct rs_proto_msg m = { .type = RS_MSG_DATA, .flags = RS_F_FIRST | RS_F_PLACED,
				  .dst_conn = 3, .src_conn = 4, .seq = 9, .msg_len = 20000,
				  .len = RS_PLACED_LEN,
				  .placed = { .len = 16384, .slot = 0x01020304 } };
	struct rs_proto_msg out;
	u8 buf[BUF_LEN];

	KUNIT_ASSERT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)),
			RS_HDR_LEN + RS_PLACED_LEN);
	KUNIT_EXPECT_EQ(test, buf[RS_HDR_LEN + 2], 0x40);	/* 16384, big endian */
	KUNIT_EXPECT_EQ(test, buf[RS_HDR_LEN + 4], 0x01);
	KUNIT_ASSERT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + RS_PLACED_LEN, 4, 64, &out), 0);
	KUNIT_EXPECT_EQ(test, out.flags, m.flags);
	KUNIT_EXPECT_EQ(test, out.placed.len, 16384);
	KUNIT_EXPECT_EQ(test, out.placed.slot, 0x01020304);
	KUNIT_EXPECT_EQ(test, rs_proto_chunk_len(&out), 16384);
	/* Its payload cut short, or a version 3 QP: malformed. */
	KUNIT_EXPECT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + 4, 4, 64, &out), -EBADMSG);
	buf[0] = 3;
	KUNIT_EXPECT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + RS_PLACED_LEN, 3, 64, &out),
			-EBADMSG);
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 3, buf, sizeof(buf)), -EINVAL);

	/* FIRST and LAST follow the placed length. */
	m.placed.len = 20000;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)), -EINVAL);
	m.flags |= RS_F_LAST;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)),
			RS_HDR_LEN + RS_PLACED_LEN);
	m.offset = 1;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)), -EINVAL);
	m.offset = 0;
	/* Nothing placed, more than a SEND may carry, a payload not 8 bytes. */
	m.placed.len = 0;
	m.msg_len = 0;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)), -EINVAL);
	m.placed.len = RS_PROTO_MAX_CHUNK + 1;
	m.msg_len = m.placed.len;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)), -EINVAL);
	m.placed.len = 100;
	m.msg_len = 100;
	m.len = 12;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)), -EINVAL);

	/* The rkey of a CONNECT round trips from version 4 on. */
	m = good_msgs[5];
	m.conn.credits = 0;	/* version 4: a grant names its slots */
	m.conn.rkey = 0xdeadbeef;
	KUNIT_ASSERT_EQ(test, rs_proto_encode(&m, 4, buf, sizeof(buf)),
			RS_HDR_LEN + RS_CONN_PARAMS_LEN);
	KUNIT_EXPECT_EQ(test, buf[RS_HDR_LEN + 12], 0xde);
	KUNIT_ASSERT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + m.len, 4, 64, &out), 0);
	KUNIT_EXPECT_EQ(test, out.conn.rkey, 0xdeadbeef);
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 3, buf, sizeof(buf)), -EINVAL);

	/* Flags are per type: a RETURN (PLACED's bit today) places nothing. */
	m = (struct rs_proto_msg){ .type = RS_MSG_CREDIT, .flags = RS_F_RETURN,
				   .dst_conn = 3, .src_conn = 4, .credits = 2 };
	KUNIT_EXPECT_FALSE(test, rs_proto_placed(&m));
	KUNIT_EXPECT_EQ(test, rs_proto_chunk_len(&m), 0);
}

/*
 * Version 7: a CONNECT carries the connecting end's port in the high half
 * of its port word, which an older version reads as a service port; an
 * ACCEPT carries none.
 */
static void proto_cport_test(struct kunit *test)
{
	struct rs_proto_msg m = good_msgs[5], out;
	u8 buf[BUF_LEN];

	m.conn.credits = 0;	/* version 4 on: a grant names its slots */
	m.conn.cport = 0xbeef;
	KUNIT_ASSERT_EQ(test, rs_proto_encode(&m, 7, buf, sizeof(buf)),
			RS_HDR_LEN + RS_CONN_PARAMS_LEN);
	KUNIT_EXPECT_EQ(test, buf[RS_HDR_LEN], 0xbe);
	KUNIT_EXPECT_EQ(test, buf[RS_HDR_LEN + 3], 0x42);
	KUNIT_ASSERT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + m.len, 7, 64, &out), 0);
	KUNIT_EXPECT_EQ(test, out.conn.port, 0x42);
	KUNIT_EXPECT_EQ(test, out.conn.cport, 0xbeef);

	/* None before version 7; a service port past 16 bits from it on. */
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), -EINVAL);
	m.conn.cport = 0;
	m.conn.port = 0x10042;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 7, buf, sizeof(buf)), -EINVAL);
	/* Version 6 reads the whole word as the service port. */
	KUNIT_ASSERT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)),
			RS_HDR_LEN + RS_CONN_PARAMS_LEN);
	buf[0] = 7;
	KUNIT_ASSERT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + m.len, 7, 64, &out), 0);
	KUNIT_EXPECT_EQ(test, out.conn.port, 0x42);
	KUNIT_EXPECT_EQ(test, out.conn.cport, 1);
	buf[0] = 6;
	KUNIT_ASSERT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + m.len, 6, 64, &out), 0);
	KUNIT_EXPECT_EQ(test, out.conn.port, 0x10042);
	KUNIT_EXPECT_EQ(test, out.conn.cport, 0);
	/* A cport without a service port is no CONNECT. */
	buf[0] = 7;
	buf[RS_HDR_LEN + 2] = 0;
	buf[RS_HDR_LEN + 3] = 0;
	KUNIT_EXPECT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + m.len, 7, 64, &out), -EBADMSG);

	/* An ACCEPT has no port of either kind. */
	m = good_msgs[6];
	m.conn.credits = 0;
	KUNIT_ASSERT_EQ(test, rs_proto_encode(&m, 7, buf, sizeof(buf)),
			RS_HDR_LEN + RS_CONN_PARAMS_LEN);
	buf[RS_HDR_LEN] = 0x01;
	KUNIT_EXPECT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + m.len, 7, 64, &out), -EBADMSG);
	m.conn.cport = 1;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 7, buf, sizeof(buf)), -EINVAL);
}

/*
 * Version 6: a SINK record offers a reader's buffer (all fields), asks for
 * it back (CANCEL: the id only) or ends it (DONE: the id and the bytes
 * written); a DATA chunk written into a sink says so and its length, never
 * placed in a slot as well.
 */
static void proto_sink_test(struct kunit *test)
{
	struct rs_proto_msg m = { .type = RS_MSG_SINK, .dst_conn = 3, .src_conn = 4,
				  .len = RS_SINK_LEN,
				  .sink = { .id = 7, .off = 0xfffffff0, .len = 2 << 20,
					    .rkey = 0x11223344, .addr = 0x0102030405060708ULL } };
	struct rs_proto_msg out;
	u8 buf[BUF_LEN];

	KUNIT_ASSERT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), RS_HDR_LEN + RS_SINK_LEN);
	KUNIT_EXPECT_EQ(test, buf[RS_HDR_LEN + 16], 0x01);	/* addr, big endian */
	KUNIT_EXPECT_EQ(test, buf[RS_HDR_LEN + 23], 0x08);
	KUNIT_ASSERT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + RS_SINK_LEN, 6, 64, &out), 0);
	KUNIT_EXPECT_EQ(test, out.sink.id, 7);
	KUNIT_EXPECT_EQ(test, out.sink.off, 0xfffffff0);
	KUNIT_EXPECT_EQ(test, out.sink.len, 2 << 20);
	KUNIT_EXPECT_EQ(test, out.sink.rkey, 0x11223344);
	KUNIT_EXPECT_EQ(test, out.sink.addr, 0x0102030405060708ULL);
	/* Cut short, or on a version 5 QP. */
	KUNIT_EXPECT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + 16, 6, 64, &out), -EBADMSG);
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 5, buf, sizeof(buf)), -EINVAL);
	/* An offer of nothing, of more than a message, without a region. */
	m.sink.len = 0;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), -EINVAL);
	m.sink.len = RS_PROTO_MAX_MSG + 1;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), -EINVAL);
	m.sink.len = 4096;
	m.sink.rkey = 0;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), -EINVAL);
	m.sink.rkey = 1;
	/* Credits, data fields, no AC: refused. */
	m.credits = 1;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), -EINVAL);
	m.credits = 0;
	m.seq = 1;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), -EINVAL);
	m.seq = 0;
	m.dst_conn = 0;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), -EINVAL);
	m.dst_conn = 3;

	/* CANCEL names only the offer; DONE the offer and a count. */
	m.flags = RS_F_CANCEL;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), -EINVAL);
	m.sink = (struct rs_sink_params){ .id = 7 };
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), RS_HDR_LEN + RS_SINK_LEN);
	m.flags = RS_F_DONE;
	m.sink.len = 12345;
	KUNIT_ASSERT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), RS_HDR_LEN + RS_SINK_LEN);
	KUNIT_ASSERT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + RS_SINK_LEN, 6, 64, &out), 0);
	KUNIT_EXPECT_EQ(test, out.flags, RS_F_DONE);
	KUNIT_EXPECT_EQ(test, out.sink.len, 12345);
	m.sink.rkey = 5;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), -EINVAL);
	m.sink.rkey = 0;
	m.flags = RS_F_DONE | RS_F_CANCEL;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), -EINVAL);
	m.flags = BIT(2);
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), -EINVAL);

	/* A chunk in the sink: its length, the sink's id. */
	m = (struct rs_proto_msg){ .type = RS_MSG_DATA, .flags = RS_F_FIRST | RS_F_SINK,
				   .dst_conn = 3, .src_conn = 4, .seq = 2, .msg_len = 300000,
				   .len = RS_PLACED_LEN, .placed = { .len = 262144, .slot = 7 } };
	KUNIT_ASSERT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), RS_HDR_LEN + RS_PLACED_LEN);
	KUNIT_ASSERT_EQ(test, rs_proto_decode(buf, RS_HDR_LEN + RS_PLACED_LEN, 6, 64, &out), 0);
	KUNIT_EXPECT_TRUE(test, rs_proto_sunk(&out));
	KUNIT_EXPECT_FALSE(test, rs_proto_placed(&out));
	KUNIT_EXPECT_EQ(test, rs_proto_chunk_len(&out), 262144);
	KUNIT_EXPECT_EQ(test, out.placed.slot, 7);
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 5, buf, sizeof(buf)), -EINVAL);
	m.flags |= RS_F_PLACED;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), -EINVAL);
	m.flags &= ~RS_F_PLACED;
	m.placed.len = RS_PROTO_MAX_CHUNK + 1;
	m.msg_len = m.placed.len;
	m.flags |= RS_F_LAST;
	KUNIT_EXPECT_EQ(test, rs_proto_encode(&m, 6, buf, sizeof(buf)), -EINVAL);
}

/* The header is big endian on the wire whatever the host. */
static void proto_byte_order_test(struct kunit *test)
{
	struct rs_proto_msg m = good_msgs[0];
	u8 buf[BUF_LEN];

	m.seq = 0x01020304;
	m.credits = 0;		/* version 4: only CREDITs grant */
	KUNIT_ASSERT_EQ(test, rs_proto_encode(&m, RS_PROTO_VERSION, buf, sizeof(buf)),
			RS_HDR_LEN);
	KUNIT_EXPECT_EQ(test, buf[0], RS_PROTO_VERSION);
	KUNIT_EXPECT_EQ(test, buf[1], RS_MSG_DATA);
	KUNIT_EXPECT_EQ(test, buf[3], RS_F_FIRST | RS_F_LAST);
	KUNIT_EXPECT_EQ(test, buf[12], 0x01);
	KUNIT_EXPECT_EQ(test, buf[15], 0x04);
}

/* Version 2: every good message in one SEND, each record padded. */
static size_t batch_build(u8 *buf, size_t room, size_t *ends)
{
	size_t pos = 0;
	unsigned int i;
	int n;

	memset(buf, 0xa5, room);
	for (i = 0; i < ARRAY_SIZE(good_msgs); i++) {
		const struct rs_proto_msg *m = &good_msgs[i];
		size_t rec = rs_proto_rec_len(2, m->len);

		n = rs_proto_encode(m, 2, buf + pos, room - pos);
		if (n < RS_HDR_LEN || pos + rec > room)
			return 0;
		if (m->type == RS_MSG_DATA)
			memset(buf + pos + RS_HDR_LEN, i, m->len);
		memset(buf + pos + RS_HDR_LEN + m->len, 0, rec - RS_HDR_LEN - m->len);
		pos += rec;
		ends[i] = pos;
	}
	return pos;
}

#define BATCH_ROOM 1024

static void proto_batch_test(struct kunit *test)
{
	size_t ends[ARRAY_SIZE(good_msgs)], len, pos = 0, start;
	struct rs_proto_msg out;
	unsigned int i;
	u8 *buf;

	buf = kunit_kzalloc(test, BATCH_ROOM, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	len = batch_build(buf, BATCH_ROOM, ends);
	KUNIT_ASSERT_GT(test, len, 0);
	KUNIT_EXPECT_EQ(test, len % RS_REC_ALIGN, 0);
	KUNIT_EXPECT_EQ(test, rs_proto_check_batch(buf, len, 2, 65536),
			(int)ARRAY_SIZE(good_msgs));

	/* In order, each record where it was put, its payload intact. */
	for (i = 0; i < ARRAY_SIZE(good_msgs); i++) {
		start = pos;
		KUNIT_ASSERT_EQ(test, rs_proto_next(buf, len, &pos, 2, 65536, &out), 1);
		KUNIT_EXPECT_EQ(test, pos, ends[i]);
		KUNIT_EXPECT_EQ(test, out.type, good_msgs[i].type);
		KUNIT_EXPECT_EQ(test, out.len, good_msgs[i].len);
		KUNIT_EXPECT_EQ(test, out.credits, good_msgs[i].credits);
		if (out.type == RS_MSG_DATA && out.len)
			KUNIT_EXPECT_EQ(test, buf[start + RS_HDR_LEN + out.len - 1], i);
	}
	KUNIT_EXPECT_EQ(test, rs_proto_next(buf, len, &pos, 2, 65536, &out), 0);

	/* The same records as version 1 SENDs: one each, not padded. */
	KUNIT_EXPECT_EQ(test, rs_proto_check_batch(buf, ends[0], 1, 65536), -EPROTONOSUPPORT);
	KUNIT_ASSERT_EQ(test, rs_proto_encode(&good_msgs[0], 1, buf, BATCH_ROOM), RS_HDR_LEN);
	KUNIT_EXPECT_EQ(test, rs_proto_check_batch(buf, RS_HDR_LEN + good_msgs[0].len, 1,
						   65536), 1);
}

/* One flaw anywhere makes the whole SEND malformed. */
static void proto_batch_malformed_test(struct kunit *test)
{
	size_t ends[ARRAY_SIZE(good_msgs)], len;
	u8 *buf, *copy;

	buf = kunit_kzalloc(test, BATCH_ROOM, GFP_KERNEL);
	copy = kunit_kzalloc(test, BATCH_ROOM, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_ASSERT_NOT_NULL(test, copy);
	len = batch_build(buf, BATCH_ROOM, ends);
	KUNIT_ASSERT_GT(test, len, 0);
	/* The REJECT's 4-byte payload is followed by 4 bytes of padding. */
	KUNIT_ASSERT_EQ(test, ends[7] - ends[6], rs_proto_rec_len(2, RS_REJECT_LEN));

	/* Empty, cut short anywhere, or with bytes after the last record. */
	KUNIT_EXPECT_EQ(test, rs_proto_check_batch(buf, 0, 2, 65536), -EBADMSG);
	KUNIT_EXPECT_EQ(test, rs_proto_check_batch(buf, len - 1, 2, 65536), -EBADMSG);
	KUNIT_EXPECT_EQ(test, rs_proto_check_batch(buf, ends[3] + 16, 2, 65536), -EBADMSG);
	KUNIT_EXPECT_EQ(test, rs_proto_check_batch(buf, len + 8, 2, 65536), -EBADMSG);

	/* Padding that is not zero. */
	memcpy(copy, buf, len);
	copy[ends[7] - 1] = 1;
	KUNIT_EXPECT_EQ(test, rs_proto_check_batch(copy, len, 2, 65536), -EBADMSG);

	/* A record of another version in the middle. */
	memcpy(copy, buf, len);
	copy[ends[4]] = 1;
	KUNIT_EXPECT_EQ(test, rs_proto_check_batch(copy, len, 2, 65536), -EPROTONOSUPPORT);

	/* A length that runs past the SEND, or wraps. */
	memcpy(copy, buf, len);
	copy[ends[5] + 26] = 0x40;
	KUNIT_EXPECT_EQ(test, rs_proto_check_batch(copy, len, 2, 65536), -EBADMSG);
	memset(copy + ends[5] + 24, 0xff, 4);
	KUNIT_EXPECT_EQ(test, rs_proto_check_batch(copy, len, 2, 65536), -EBADMSG);

	/* A bad header in the last record. */
	memcpy(copy, buf, len);
	copy[ends[10] + 3] = RS_F_HALF | 0x02;	/* close with an unknown flag */
	KUNIT_EXPECT_EQ(test, rs_proto_check_batch(copy, len, 2, 65536), -EBADMSG);

	/* Version 1: a second record after the first. */
	KUNIT_ASSERT_EQ(test, rs_proto_encode(&good_msgs[8], 1, copy, BATCH_ROOM), RS_HDR_LEN);
	KUNIT_ASSERT_EQ(test, rs_proto_encode(&good_msgs[9], 1, copy + RS_HDR_LEN,
					      BATCH_ROOM - RS_HDR_LEN), RS_HDR_LEN);
	KUNIT_EXPECT_EQ(test, rs_proto_check_batch(copy, RS_HDR_LEN, 1, 65536), 1);
	KUNIT_EXPECT_EQ(test, rs_proto_check_batch(copy, 2 * RS_HDR_LEN, 1, 65536), -EBADMSG);
}

/*
 * Version 5: a WRITE WITH IMMEDIATE stands for the next chunk of the
 * message in progress, in the oldest slot granted: it needs one in
 * progress, at least a byte and no more than the message has left, and is
 * the last when it ends the message.  Nothing before version 5 has them.
 */
static void proto_continue_test(struct kunit *test)
{
	struct rs_proto_msg m;

	/* The second of four 16 KiB chunks, then the last. */
	KUNIT_ASSERT_EQ(test, rs_proto_continue(&m, 5, 3, 4, 9, 65536, 16384, 16384), 0);
	KUNIT_EXPECT_EQ(test, m.type, RS_MSG_DATA);
	KUNIT_EXPECT_EQ(test, m.flags, RS_F_PLACED);
	KUNIT_EXPECT_TRUE(test, rs_proto_placed(&m));
	KUNIT_EXPECT_EQ(test, rs_proto_chunk_len(&m), 16384);
	KUNIT_EXPECT_EQ(test, m.dst_conn, 3);
	KUNIT_EXPECT_EQ(test, m.src_conn, 4);
	KUNIT_EXPECT_EQ(test, m.seq, 9);
	KUNIT_EXPECT_EQ(test, m.msg_len, 65536);
	KUNIT_EXPECT_EQ(test, m.offset, 16384);
	KUNIT_EXPECT_EQ(test, m.placed.slot, RS_SLOT_OLDEST);
	KUNIT_ASSERT_EQ(test, rs_proto_continue(&m, 5, 3, 4, 9, 65536, 49152, 16384), 0);
	KUNIT_EXPECT_EQ(test, m.flags, RS_F_PLACED | RS_F_LAST);
	/* A short last chunk; the smallest. */
	KUNIT_ASSERT_EQ(test, rs_proto_continue(&m, 5, 3, 4, 0, 40001, 32768, 7233), 0);
	KUNIT_EXPECT_EQ(test, m.flags, RS_F_PLACED | RS_F_LAST);
	KUNIT_ASSERT_EQ(test, rs_proto_continue(&m, 5, 3, 4, 0, 2, 1, 1), 0);
	KUNIT_EXPECT_EQ(test, m.flags, RS_F_PLACED | RS_F_LAST);

	/* Before version 5: never. */
	KUNIT_EXPECT_EQ(test, rs_proto_continue(&m, 4, 3, 4, 9, 65536, 16384, 16384), -EBADMSG);
	/* No message in progress. */
	KUNIT_EXPECT_EQ(test, rs_proto_continue(&m, 5, 3, 4, 9, 0, 0, 16384), -EBADMSG);
	KUNIT_EXPECT_EQ(test, rs_proto_continue(&m, 5, 3, 4, 9, 65536, 0, 16384), -EBADMSG);
	/* Empty, one byte too many, past the end, wrapping round. */
	KUNIT_EXPECT_EQ(test, rs_proto_continue(&m, 5, 3, 4, 9, 65536, 16384, 0), -EBADMSG);
	KUNIT_EXPECT_EQ(test, rs_proto_continue(&m, 5, 3, 4, 9, 65536, 49152, 16385), -EBADMSG);
	KUNIT_EXPECT_EQ(test, rs_proto_continue(&m, 5, 3, 4, 9, 65536, 65536, 1), -EBADMSG);
	KUNIT_EXPECT_EQ(test, rs_proto_continue(&m, 5, 3, 4, 9, 65536, 16384, U32_MAX),
			-EBADMSG);
	KUNIT_EXPECT_EQ(test, rs_proto_continue(&m, 5, 3, 4, 9, RS_PROTO_MAX_MSG,
						RS_PROTO_MAX_MSG - 16, RS_PROTO_MAX_CHUNK + 1),
			-EBADMSG);
	/* An AC with no peer id yet, or id 0. */
	KUNIT_EXPECT_EQ(test, rs_proto_continue(&m, 5, 3, 0, 9, 65536, 16384, 16384), -EBADMSG);
	KUNIT_EXPECT_EQ(test, rs_proto_continue(&m, 5, 0, 4, 9, 65536, 16384, 16384), -EBADMSG);
}

/*
 * A peer's REJECT chooses the CONNECT's errno only among those rdmashare
 * sends; the kernel-internal restart codes and anything else read as
 * ECONNREFUSED.
 */
static void proto_reject_errno_test(struct kunit *test)
{
	static const u32 other[] = {
		1, EINTR, EPERM, ETIMEDOUT, ECONNRESET, 512 /* ERESTARTSYS */,
		513, 514, 516 /* ERESTART_RESTARTBLOCK */, MAX_ERRNO, MAX_ERRNO + 1, U32_MAX,
	};
	unsigned int i;

	KUNIT_EXPECT_EQ(test, rs_proto_reject_errno(ECONNREFUSED), -ECONNREFUSED);
	KUNIT_EXPECT_EQ(test, rs_proto_reject_errno(ENOBUFS), -ENOBUFS);
	for (i = 0; i < ARRAY_SIZE(other); i++)
		KUNIT_EXPECT_EQ_MSG(test, rs_proto_reject_errno(other[i]), -ECONNREFUSED,
				    "error %u", other[i]);
}

static struct kunit_case proto_test_cases[] = {
	KUNIT_CASE_PARAM(proto_roundtrip_test, good_msg_gen_params),
	KUNIT_CASE_PARAM(proto_malformed_test, bad_gen_params),
	KUNIT_CASE(proto_limits_test),
	KUNIT_CASE(proto_byte_order_test),
	KUNIT_CASE(proto_credit_flags_test),
	KUNIT_CASE(proto_named_credits_test),
	KUNIT_CASE(proto_placed_test),
	KUNIT_CASE(proto_sink_test),
	KUNIT_CASE(proto_cport_test),
	KUNIT_CASE(proto_continue_test),
	KUNIT_CASE(proto_reject_errno_test),
	KUNIT_CASE(proto_batch_test),
	KUNIT_CASE(proto_batch_malformed_test),
	{}
};

static struct kunit_suite proto_test_suite = {
	.name = "rdmashare_proto",
	.test_cases = proto_test_cases,
};

kunit_test_suite(proto_test_suite);

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
