// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libps's wire format: a 48-byte little-endian header, then the payload.
 * Every field is checked on receipt against what the op allows and what
 * the receiver knows (ps_limits), so that a peer cannot make us read past
 * a buffer, allocate without bound or act on a key that is not ours.
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <string.h>

#include "ps_int.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v);
	put16(p + 2, v >> 16);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v);
	put32(p + 4, v >> 32);
}

static uint16_t get16(const uint8_t *p)
{
	return p[0] | (uint16_t)p[1] << 8;
}

static uint32_t get32(const uint8_t *p)
{
	return get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

void ps_msg_encode(const struct ps_msg *m, uint8_t *buf)
{
	put32(buf, PS_MAGIC);
	buf[4] = PS_WIRE_VERSION;
	buf[5] = m->op;
	put16(buf + 6, m->flags);
	put32(buf + 8, m->sender);
	put32(buf + 12, m->req_id);
	put64(buf + 16, m->key);
	put64(buf + 24, m->iter);
	put32(buf + 32, m->total);
	put32(buf + 36, m->offset);
	put32(buf + 40, m->length);
	put32(buf + 44, (uint32_t)m->status);
}

static bool is_data_op(uint8_t op)
{
	return op == PS_OP_INIT || op == PS_OP_PUSH || op == PS_OP_PULL || op == PS_OP_PUSHPULL;
}

/* Whether a message of this op and direction carries the key's values. */
static bool carries_values(const struct ps_msg *m)
{
	if (m->flags & PS_F_RESP)
		return !m->status && (m->op == PS_OP_PULL || m->op == PS_OP_PUSHPULL);
	return m->op == PS_OP_INIT || m->op == PS_OP_PUSH || m->op == PS_OP_PUSHPULL;
}

/*
 * Decode and check a header.  -EPROTO for anything a correct peer never
 * sends, -EMSGSIZE for a payload over the limit, -EINVAL for a short buffer.
 */
int ps_msg_decode(const uint8_t *buf, size_t len, const struct ps_limits *lim,
		  struct ps_msg *m)
{
	uint32_t nodes;

	if (len < PS_HDR_LEN)
		return -EINVAL;
	m->magic = get32(buf);
	m->version = buf[4];
	m->op = buf[5];
	m->flags = get16(buf + 6);
	m->sender = get32(buf + 8);
	m->req_id = get32(buf + 12);
	m->key = get64(buf + 16);
	m->iter = get64(buf + 24);
	m->total = get32(buf + 32);
	m->offset = get32(buf + 36);
	m->length = get32(buf + 40);
	m->status = (int32_t)get32(buf + 44);

	if (m->magic != PS_MAGIC || m->version != PS_WIRE_VERSION)
		return -EPROTO;
	if (m->op < PS_OP_HELLO || m->op > PS_OP_MAX || (m->flags & ~PS_F_ALL))
		return -EPROTO;
	if (m->length > lim->max_msg)
		return -EMSGSIZE;
	/* Only answers carry a status, an errno's range at most. */
	if (m->flags & PS_F_RESP ? m->status > 0 || m->status < -4095 : m->status != 0)
		return -EPROTO;
	nodes = m->flags & PS_F_WORKER ? lim->num_workers : lim->num_servers;
	if (m->sender >= (nodes ? nodes : PS_MAX_NODES) && m->sender != UINT32_MAX)
		return -EPROTO;
	/* Any rank only in a HELLO, asking for the next free one. */
	if (m->sender == UINT32_MAX && (m->op != PS_OP_HELLO || (m->flags & PS_F_RESP)))
		return -EPROTO;
	if (m->status && m->length)
		return -EPROTO;

	if (!is_data_op(m->op)) {
		if (m->key || m->iter || m->total || m->offset)
			return -EPROTO;
		/* A HELLO's payload is its address or the roster: checked by their decoders. */
		if (m->op != PS_OP_HELLO && m->length)
			return -EPROTO;
		return 0;
	}
	if (lim->key_max && m->key >= lim->key_max)
		return -EPROTO;
	if (!m->total || m->offset >= m->total)
		return -EPROTO;
	if (!carries_values(m))
		return m->length ? -EPROTO : 0;
	if (!m->length || m->length % sizeof(float) ||
	    m->length / sizeof(float) > m->total - m->offset)
		return -EPROTO;
	return 0;
}

/* Family codes on the wire, not the host's AF_ values. */
#define PS_WIRE_INET	4
#define PS_WIRE_INET6	6

void ps_addr_encode(const struct sockaddr_storage *ss, uint8_t *buf)
{
	const struct sockaddr_in6 *s6 = (const void *)ss;
	const struct sockaddr_in *s4 = (const void *)ss;

	memset(buf, 0, PS_ADDR_LEN);
	if (ss->ss_family == AF_INET) {
		put16(buf, PS_WIRE_INET);
		put16(buf + 2, ntohs(s4->sin_port));
		memcpy(buf + 4, &s4->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		put16(buf, PS_WIRE_INET6);
		put16(buf + 2, ntohs(s6->sin6_port));
		memcpy(buf + 4, &s6->sin6_addr, 16);
	}
}

/* 0, or -EPROTO for an unknown family, a port 0 or bytes where none belong. */
int ps_addr_decode(const uint8_t *buf, struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *s6 = (void *)ss;
	struct sockaddr_in *s4 = (void *)ss;
	static const uint8_t zero[12];
	uint16_t fam = get16(buf), port = get16(buf + 2);

	memset(ss, 0, sizeof(*ss));
	if (!port)
		return -EPROTO;
	if (fam == PS_WIRE_INET) {
		if (memcmp(buf + 8, zero, 12))
			return -EPROTO;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		memcpy(&s4->sin_addr, buf + 4, 4);
		return 0;
	}
	if (fam == PS_WIRE_INET6) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		memcpy(&s6->sin6_addr, buf + 4, 16);
		return 0;
	}
	return -EPROTO;
}

size_t ps_roster_len(uint32_t num_servers)
{
	return PS_ROSTER_LEN + (size_t)num_servers * PS_ADDR_LEN;
}

void ps_roster_encode(const struct ps_roster *r, uint8_t *buf)
{
	uint32_t lr, s;

	memcpy(&lr, &r->lr, sizeof(lr));
	put32(buf, r->num_servers);
	put32(buf + 4, r->num_workers);
	put32(buf + 8, r->mode);
	put32(buf + 12, r->rank);
	put32(buf + 16, lr);
	put32(buf + 20, r->big_bound);
	put64(buf + 24, r->key_max);
	/* Server 0's address is the one everybody reached it at. */
	memset(buf + PS_ROSTER_LEN, 0, PS_ADDR_LEN);
	for (s = 1; s < r->num_servers; s++)
		ps_addr_encode(&r->addrs[s], buf + PS_ROSTER_LEN + s * PS_ADDR_LEN);
}

/*
 * Decode a roster for a worker or a server; r->addrs must have room for
 * PS_MAX_NODES entries.  -EPROTO for anything out of range.
 */
int ps_roster_decode(const uint8_t *buf, size_t len, bool worker, struct ps_roster *r)
{
	uint32_t lr, s;
	int ret;

	if (len < PS_ROSTER_LEN)
		return -EPROTO;
	r->num_servers = get32(buf);
	r->num_workers = get32(buf + 4);
	r->mode = get32(buf + 8);
	r->rank = get32(buf + 12);
	lr = get32(buf + 16);
	memcpy(&r->lr, &lr, sizeof(lr));
	r->big_bound = get32(buf + 20);
	r->key_max = get64(buf + 24);
	if (!r->num_servers || r->num_servers > PS_MAX_NODES ||
	    !r->num_workers || r->num_workers > PS_MAX_NODES)
		return -EPROTO;
	if (len != ps_roster_len(r->num_servers))
		return -EPROTO;
	if (r->mode > PS_ASYNC || !isfinite(r->lr) || !r->big_bound ||
	    r->key_max < r->num_servers)
		return -EPROTO;
	if (r->rank >= (worker ? r->num_workers : r->num_servers) || (!worker && !r->rank))
		return -EPROTO;
	for (s = 1; s < r->num_servers; s++) {
		ret = ps_addr_decode(buf + PS_ROSTER_LEN + s * PS_ADDR_LEN, &r->addrs[s]);
		if (ret)
			return ret;
	}
	memset(&r->addrs[0], 0, sizeof(r->addrs[0]));
	return 0;
}
