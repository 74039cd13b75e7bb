// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: encoding and validation of wire headers (see proto.h).
 *
 * Everything received is untrusted until rs_proto_decode() accepted it: a
 * peer running another version, or a corrupted message, must be rejected
 * here and never reach the connection state machine.
 */
#include <kunit/visibility.h>
#include <linux/bitops.h>
#include <linux/errno.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/string.h>

#include "proto.h"

struct rs_wire_hdr {
	u8 version;
	u8 type;
	__be16 flags;
	__be32 dst_conn;
	__be32 src_conn;
	__be32 seq;
	__be32 msg_len;
	__be32 offset;
	__be32 len;
	__be32 credits;
} __packed;

struct rs_wire_conn {
	__be32 port;
	__be32 slot_size;
	__be32 credits;
	__be32 rkey;
} __packed;

struct rs_wire_placed {
	__be32 len;
	__be32 slot;
} __packed;

struct rs_wire_reject {
	__be32 error;
} __packed;

struct rs_wire_sink {
	__be32 id;
	__be32 off;
	__be32 len;
	__be32 rkey;
	__be64 addr;
} __packed;

static_assert(sizeof(struct rs_wire_hdr) == RS_HDR_LEN);
static_assert(sizeof(struct rs_wire_conn) == RS_CONN_PARAMS_LEN);
static_assert(sizeof(struct rs_wire_reject) == RS_REJECT_LEN);
static_assert(sizeof(struct rs_wire_placed) == RS_PLACED_LEN);
static_assert(sizeof(struct rs_wire_sink) == RS_SINK_LEN);

/*
 * Payload length that a message of @type must carry, given the data length
 * for DATA; -EINVAL for an unknown type.
 */
int rs_proto_payload_len(u8 type, u32 data_len)
{
	switch (type) {
	case RS_MSG_DATA:
		return data_len;
	case RS_MSG_CONNECT:
	case RS_MSG_ACCEPT:
		return RS_CONN_PARAMS_LEN;
	case RS_MSG_REJECT:
		return RS_REJECT_LEN;
	case RS_MSG_SINK:
		return RS_SINK_LEN;
	case RS_MSG_CLOSE:
	case RS_MSG_CREDIT:
	case RS_MSG_KEEPALIVE:
		return 0;
	}
	return -EINVAL;
}
EXPORT_SYMBOL_IF_KUNIT(rs_proto_payload_len);

/*
 * Version 6: a SINK record.  An offer names a buffer of at least a byte
 * (a stream offset may be anything); CANCEL names only the offer, DONE the
 * offer and the bytes written, which the receiver checks against what it
 * saw.
 */
static int rs_proto_check_sink(const struct rs_proto_msg *m, u8 version)
{
	const struct rs_sink_params *s = &m->sink;

	if (version < 6 || !m->dst_conn || !m->src_conn || m->credits)
		return -EBADMSG;
	if (m->seq || m->msg_len || m->offset)
		return -EBADMSG;
	switch (m->flags) {
	case 0:
		if (!s->len || s->len > RS_PROTO_MAX_MSG || !s->rkey)
			return -EBADMSG;
		return 0;
	case RS_F_CANCEL:
		if (s->off || s->len || s->rkey || s->addr)
			return -EBADMSG;
		return 0;
	case RS_F_DONE:
		if (s->off || s->len > RS_PROTO_MAX_MSG || s->rkey || s->addr)
			return -EBADMSG;
		return 0;
	}
	return -EBADMSG;
}

/*
 * Checks shared by encode and decode; @max_chunk bounds DATA payloads,
 * @version says which flags a CREDIT may carry.
 */
static int rs_proto_check(const struct rs_proto_msg *m, u8 version, u32 max_chunk)
{
	bool conn = m->type == RS_MSG_CONNECT || m->type == RS_MSG_ACCEPT;
	int want = rs_proto_payload_len(m->type, m->len);
	bool first, last;
	u32 chunk, end;

	if (m->credits > RS_PROTO_MAX_CREDITS)
		return -EBADMSG;
	if (version >= 4) {
		/* Only CREDIT, CONNECT and ACCEPT grant, a slot index each. */
		if (m->type != RS_MSG_CREDIT && m->credits)
			return -EBADMSG;
		if ((conn && m->conn.credits > RS_PROTO_MAX_WINDOW) ||
		    (m->type == RS_MSG_CREDIT && m->credits > RS_PROTO_MAX_WINDOW))
			return -EBADMSG;
		if (m->type == RS_MSG_CREDIT && !rs_proto_slots_off(m, version))
			want = m->credits * RS_SLOT_IDX_LEN;
		else if (conn)
			want = RS_CONN_PARAMS_LEN + m->conn.credits * RS_SLOT_IDX_LEN;
	}
	if (want < 0 || (u32)want != m->len)
		return -EBADMSG;

	switch (m->type) {
	case RS_MSG_DATA:
		if (m->flags & ~RS_F_DATA_MASK)
			return -EBADMSG;
		if (!m->dst_conn || !m->src_conn)
			return -EBADMSG;
		if (m->len > max_chunk || m->msg_len > RS_PROTO_MAX_MSG)
			return -EBADMSG;
		chunk = m->len;
		if (m->flags & (RS_F_PLACED | RS_F_SINK)) {
			/*
			 * Version 4: where a chunk of data went, never none;
			 * version 6: or that it went to the sink, not both.
			 */
			if (version < 4 || m->len != RS_PLACED_LEN || !m->placed.len ||
			    m->placed.len > RS_PROTO_MAX_CHUNK)
				return -EBADMSG;
			if ((m->flags & RS_F_SINK) &&
			    (version < 6 || (m->flags & RS_F_PLACED)))
				return -EBADMSG;
			chunk = m->placed.len;
		}
		if (check_add_overflow(m->offset, chunk, &end) || end > m->msg_len)
			return -EBADMSG;
		first = m->offset == 0;
		last = end == m->msg_len;
		if (!!(m->flags & RS_F_FIRST) != first ||
		    !!(m->flags & RS_F_LAST) != last)
			return -EBADMSG;
		/* Only an empty message may have an empty chunk. */
		if (!chunk && m->msg_len)
			return -EBADMSG;
		return 0;
	case RS_MSG_CONNECT:
		if (m->dst_conn || !m->src_conn || !m->conn.port)
			return -EBADMSG;
		/* From version 7 the port's high bits are the cport. */
		if ((m->conn.cport && version < 7) || (version >= 7 && m->conn.port > U16_MAX))
			return -EBADMSG;
		break;
	case RS_MSG_ACCEPT:
		if (!m->dst_conn || !m->src_conn || m->conn.port || m->conn.cport)
			return -EBADMSG;
		break;
	case RS_MSG_REJECT:
		if (!m->dst_conn || !m->error || m->error > MAX_ERRNO)
			return -EBADMSG;
		break;
	case RS_MSG_CLOSE:
		if (!m->dst_conn || !m->src_conn || (m->flags & ~RS_F_HALF))
			return -EBADMSG;
		/* A control message: no data fields. */
		if (m->seq || m->msg_len || m->offset)
			return -EBADMSG;
		return 0;
	case RS_MSG_CREDIT:
		if (!m->dst_conn || !m->src_conn)
			return -EBADMSG;
		if (!m->flags)
			break;
		/* One flag; a RECLAIM grants nothing, a RETURN gives some back. */
		if (version < 3 || (m->flags & ~RS_F_CREDIT_MASK) || hweight16(m->flags) != 1)
			return -EBADMSG;
		if ((m->flags & RS_F_RECLAIM) && m->credits)
			return -EBADMSG;
		if ((m->flags & RS_F_RETURN) && !m->credits)
			return -EBADMSG;
		if (m->seq || m->msg_len || m->offset)
			return -EBADMSG;
		return 0;
	case RS_MSG_KEEPALIVE:
		if (m->dst_conn || m->src_conn || m->credits)
			return -EBADMSG;
		break;
	case RS_MSG_SINK:
		return rs_proto_check_sink(m, version);
	}
	if (conn) {
		if (m->conn.slot_size < RS_PROTO_MIN_SLOT ||
		    m->conn.slot_size > RS_PROTO_MAX_CHUNK ||
		    m->conn.credits > RS_PROTO_MAX_CREDITS)
			return -EBADMSG;
		/* Placement came with version 4. */
		if (version < 4 && m->conn.rkey)
			return -EBADMSG;
	}
	/* Control messages carry no data fields. */
	if (m->flags || m->seq || m->msg_len || m->offset)
		return -EBADMSG;
	return 0;
}

/**
 * rs_proto_encode() - write the header (and control payload) of @m
 * @m: the message; for DATA, @m->len bytes of payload follow the header
 * @version: the QP's protocol version
 * @buf: where to write
 * @buf_len: room at @buf
 *
 * The caller writes a DATA payload, from version 4 the slot indices a
 * record grants (rs_proto_put_slots() at rs_proto_slots_off()), and, from
 * version 2, the padding up to rs_proto_rec_len() (zeroes).
 *
 * Return: bytes written (the header, plus the payload of a control message
 * but for its slot indices, or of a placed chunk's record), -ENOSPC when
 * @buf is too small, -EINVAL for an invalid message.
 */
int rs_proto_encode(const struct rs_proto_msg *m, u8 version, void *buf,
		    size_t buf_len)
{
	struct rs_wire_hdr *h = buf;
	void *p = (u8 *)buf + RS_HDR_LEN;
	struct rs_wire_conn *wc = p;
	struct rs_wire_reject *wr = p;
	struct rs_wire_placed *wp = p;
	struct rs_wire_sink *ws = p;
	size_t total = RS_HDR_LEN;
	int slots;

	if (rs_proto_check(m, version, RS_PROTO_MAX_CHUNK))
		return -EINVAL;
	if (version < RS_PROTO_VERSION_MIN || version > RS_PROTO_VERSION)
		return -EINVAL;
	slots = rs_proto_slots_off(m, version);
	if (m->type != RS_MSG_DATA || (m->flags & (RS_F_PLACED | RS_F_SINK)))
		total += slots >= 0 ? slots : m->len;
	if (buf_len < total)
		return -ENOSPC;

	h->version = version;
	h->type = m->type;
	h->flags = cpu_to_be16(m->flags);
	h->dst_conn = cpu_to_be32(m->dst_conn);
	h->src_conn = cpu_to_be32(m->src_conn);
	h->seq = cpu_to_be32(m->seq);
	h->msg_len = cpu_to_be32(m->msg_len);
	h->offset = cpu_to_be32(m->offset);
	h->len = cpu_to_be32(m->len);
	h->credits = cpu_to_be32(m->credits);

	switch (m->type) {
	case RS_MSG_CONNECT:
	case RS_MSG_ACCEPT:
		wc->port = cpu_to_be32(m->conn.port | (u32)m->conn.cport << 16);
		wc->slot_size = cpu_to_be32(m->conn.slot_size);
		wc->credits = cpu_to_be32(m->conn.credits);
		wc->rkey = cpu_to_be32(m->conn.rkey);
		break;
	case RS_MSG_REJECT:
		wr->error = cpu_to_be32(m->error);
		break;
	case RS_MSG_DATA:
		if (m->flags & (RS_F_PLACED | RS_F_SINK)) {
			wp->len = cpu_to_be32(m->placed.len);
			wp->slot = cpu_to_be32(m->placed.slot);
		}
		break;
	case RS_MSG_SINK:
		ws->id = cpu_to_be32(m->sink.id);
		ws->off = cpu_to_be32(m->sink.off);
		ws->len = cpu_to_be32(m->sink.len);
		ws->rkey = cpu_to_be32(m->sink.rkey);
		ws->addr = cpu_to_be64(m->sink.addr);
		break;
	}
	return total;
}
EXPORT_SYMBOL_IF_KUNIT(rs_proto_encode);

/**
 * rs_proto_decode() - parse and validate one record
 * @buf: the record
 * @buf_len: its length: the header and exactly its payload
 * @version: the QP's protocol version
 * @max_chunk: largest DATA payload this host accepts
 * @m: the decoded message
 *
 * For DATA, the payload is at @buf + RS_HDR_LEN, @m->len bytes; flagged
 * RS_F_PLACED, it was written to the slot @m->placed says, RS_F_SINK to
 * the reader's sink.
 *
 * Return: 0; -EPROTONOSUPPORT for another protocol version; -EBADMSG for a
 * truncated, inconsistent or unknown message.
 */
int rs_proto_decode(const void *buf, size_t buf_len, u8 version, u32 max_chunk,
		    struct rs_proto_msg *m)
{
	const struct rs_wire_hdr *h = buf;
	const void *p = (const u8 *)buf + RS_HDR_LEN;
	const struct rs_wire_conn *wc = p;
	const struct rs_wire_reject *wr = p;
	const struct rs_wire_placed *wp = p;
	const struct rs_wire_sink *ws = p;

	if (buf_len < RS_HDR_LEN)
		return -EBADMSG;
	if (h->version != version)
		return -EPROTONOSUPPORT;

	memset(m, 0, sizeof(*m));
	m->type = h->type;
	m->flags = be16_to_cpu(h->flags);
	m->dst_conn = be32_to_cpu(h->dst_conn);
	m->src_conn = be32_to_cpu(h->src_conn);
	m->seq = be32_to_cpu(h->seq);
	m->msg_len = be32_to_cpu(h->msg_len);
	m->offset = be32_to_cpu(h->offset);
	m->len = be32_to_cpu(h->len);
	m->credits = be32_to_cpu(h->credits);

	if (m->type == 0 || m->type > RS_MSG_TYPE_MAX)
		return -EBADMSG;
	/* The SEND must hold exactly the header and its payload. */
	if (buf_len - RS_HDR_LEN != m->len)
		return -EBADMSG;

	switch (m->type) {
	case RS_MSG_CONNECT:
	case RS_MSG_ACCEPT:
		if (m->len < RS_CONN_PARAMS_LEN)
			return -EBADMSG;
		m->conn.port = be32_to_cpu(wc->port);
		if (version >= 7 && m->type == RS_MSG_CONNECT) {
			m->conn.cport = m->conn.port >> 16;
			m->conn.port &= U16_MAX;
		}
		m->conn.slot_size = be32_to_cpu(wc->slot_size);
		m->conn.credits = be32_to_cpu(wc->credits);
		m->conn.rkey = be32_to_cpu(wc->rkey);
		break;
	case RS_MSG_DATA:
		if (!(m->flags & (RS_F_PLACED | RS_F_SINK)))
			break;
		if (m->len != RS_PLACED_LEN)
			return -EBADMSG;
		m->placed.len = be32_to_cpu(wp->len);
		m->placed.slot = be32_to_cpu(wp->slot);
		break;
	case RS_MSG_REJECT:
		if (m->len != RS_REJECT_LEN)
			return -EBADMSG;
		m->error = be32_to_cpu(wr->error);
		break;
	case RS_MSG_SINK:
		if (m->len != RS_SINK_LEN)
			return -EBADMSG;
		m->sink.id = be32_to_cpu(ws->id);
		m->sink.off = be32_to_cpu(ws->off);
		m->sink.len = be32_to_cpu(ws->len);
		m->sink.rkey = be32_to_cpu(ws->rkey);
		m->sink.addr = be64_to_cpu(ws->addr);
		break;
	}
	return rs_proto_check(m, version, max_chunk);
}
EXPORT_SYMBOL_IF_KUNIT(rs_proto_decode);

/**
 * rs_proto_next() - the next record of a received SEND
 * @buf: the SEND
 * @len: its length
 * @pos: in: where the record starts (0 for the first); out: the next one
 * @version: the QP's protocol version
 * @max_chunk: largest DATA payload this host accepts
 * @m: the decoded record; a DATA payload is at @buf + (in) *@pos +
 *     RS_HDR_LEN
 *
 * Return: 1 with @m decoded; 0 after the last record; -EBADMSG or
 * -EPROTONOSUPPORT when the SEND is malformed (an empty SEND is).
 */
int rs_proto_next(const void *buf, size_t len, size_t *pos, u8 version,
		  u32 max_chunk, struct rs_proto_msg *m)
{
	const struct rs_wire_hdr *h;
	size_t left, rec;
	u32 plen;
	int ret;

	if (*pos > len)
		return -EBADMSG;
	if (*pos == len)
		return len ? 0 : -EBADMSG;
	left = len - *pos;
	if (left < RS_HDR_LEN)
		return -EBADMSG;
	h = (const void *)((const u8 *)buf + *pos);
	plen = be32_to_cpu(h->len);
	if (plen > left - RS_HDR_LEN)
		return -EBADMSG;
	rec = rs_proto_rec_len(version, plen);
	if (rec > left)
		return -EBADMSG;
	/* Version 1: one record, the whole SEND. */
	if (version < 2 && (*pos || rec != len))
		return -EBADMSG;
	if (rec > RS_HDR_LEN + plen &&
	    memchr_inv((const u8 *)h + RS_HDR_LEN + plen, 0, rec - RS_HDR_LEN - plen))
		return -EBADMSG;
	ret = rs_proto_decode(h, RS_HDR_LEN + plen, version, max_chunk, m);
	if (ret)
		return ret;
	*pos += rec;
	return 1;
}
EXPORT_SYMBOL_IF_KUNIT(rs_proto_next);

/**
 * rs_proto_check_batch() - validate every record of a received SEND
 * @buf: the SEND
 * @len: its length
 * @version: the QP's protocol version
 * @max_chunk: largest DATA payload this host accepts
 *
 * A SEND is taken whole or not at all: the receiver checks it with this
 * before it acts on any record.
 *
 * Return: the number of records (>= 1), or -EBADMSG, -EPROTONOSUPPORT.
 */
int rs_proto_check_batch(const void *buf, size_t len, u8 version, u32 max_chunk)
{
	struct rs_proto_msg m;
	size_t pos = 0;
	int n = 0, ret;

	while ((ret = rs_proto_next(buf, len, &pos, version, max_chunk, &m)) > 0)
		n++;
	return ret ? ret : n;
}
EXPORT_SYMBOL_IF_KUNIT(rs_proto_check_batch);

/**
 * rs_proto_put_slots() - write the slot indices a record grants
 * @payload: where they go (the record's payload, at rs_proto_slots_off())
 * @slots: the indices
 * @n: how many
 */
void rs_proto_put_slots(void *payload, const u32 *slots, u32 n)
{
	__be32 *p = payload;
	u32 i;

	for (i = 0; i < n; i++)
		p[i] = cpu_to_be32(slots[i]);
}
EXPORT_SYMBOL_IF_KUNIT(rs_proto_put_slots);

/**
 * rs_proto_get_slot() - the @i-th slot index a decoded record grants
 * @payload: its indices (the record's payload, at rs_proto_slots_off())
 * @i: which, below the record's grant
 *
 * Return: the index; the peer's to check against its own slots.
 */
u32 rs_proto_get_slot(const void *payload, u32 i)
{
	return be32_to_cpup((const __be32 *)payload + i);
}
EXPORT_SYMBOL_IF_KUNIT(rs_proto_get_slot);

/**
 * rs_proto_continue() - the DATA record a WRITE WITH IMMEDIATE stands for
 * @m: the record, decoded as if it had come
 * @version: the QP's protocol version
 * @dst_conn: the immediate data: the receiver's connection id
 * @src_conn: the peer's id for that AC
 * @seq: the message in progress on the AC: its number,
 * @msg_len: its length,
 * @offset: and the bytes of it received so far
 * @len: bytes the WRITE placed
 *
 * Version 5: a placed chunk that continues a message may come without a
 * record.  It goes to the oldest slot granted (RS_SLOT_OLDEST in
 * @m->placed.slot) and must fit the message: one in progress (@offset not
 * 0), at least a byte, no further than @msg_len; it is the last one if it
 * reaches @msg_len.
 *
 * Return: 0, or -EBADMSG (the peer's protocol error).
 */
int rs_proto_continue(struct rs_proto_msg *m, u8 version, u32 dst_conn, u32 src_conn,
		      u32 seq, u32 msg_len, u32 offset, u32 len)
{
	memset(m, 0, sizeof(*m));
	if (version < 5 || !offset)
		return -EBADMSG;
	m->type = RS_MSG_DATA;
	m->flags = RS_F_PLACED;
	m->dst_conn = dst_conn;
	m->src_conn = src_conn;
	m->seq = seq;
	m->msg_len = msg_len;
	m->offset = offset;
	m->len = RS_PLACED_LEN;
	m->placed.len = len;
	m->placed.slot = RS_SLOT_OLDEST;
	/* Going further than @msg_len fails the check. */
	if (offset <= msg_len && len == msg_len - offset)
		m->flags |= RS_F_LAST;
	return rs_proto_check(m, version, RS_PLACED_LEN);
}
EXPORT_SYMBOL_IF_KUNIT(rs_proto_continue);

/*
 * The errno a REJECT from the peer gives the CONNECT: only the ones a peer's
 * rdmashare sends (ECONNREFUSED: no listener, a full backlog or file;
 * ENOBUFS: no receive slot or CQ room); anything else, which only a broken
 * or hostile peer sends, reads as ECONNREFUSED.  Never a value user space
 * must not see, such as the kernel-internal ERESTARTSYS.  Negative.
 */
int rs_proto_reject_errno(u32 error)
{
	switch (error) {
	case ENOBUFS:
		return -ENOBUFS;
	default:
		return -ECONNREFUSED;
	}
}
EXPORT_SYMBOL_IF_KUNIT(rs_proto_reject_errno);
