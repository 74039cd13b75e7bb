/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A rogue peer for the selftests: a user-space librdmacm/verbs client that
 * connects to rdmashare's rdma_cm port as a peer's module would, then sends
 * whatever the test builds, well-formed or not (rdmashare's wire format,
 * kmod/proto.h, written out here independently of the module's code).
 */
#ifndef RDMASHARE_SELFTEST_ROGUE_H
#define RDMASHARE_SELFTEST_ROGUE_H

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

#define ROGUE_CM_PORT	18861
#define ROGUE_HDR_LEN	32
#define ROGUE_BUF	(64 << 10)
#define ROGUE_RECVS	16

enum {
	ROGUE_DATA = 1, ROGUE_CONNECT, ROGUE_ACCEPT, ROGUE_REJECT, ROGUE_CLOSE,
	ROGUE_CREDIT, ROGUE_KEEPALIVE, ROGUE_SINK,
};
#define ROGUE_F_FIRST	1
#define ROGUE_F_LAST	2
#define ROGUE_F_PLACED	4	/* DATA, version 4 */
#define ROGUE_F_SINK	8	/* DATA, version 6 */
#define ROGUE_F_DONE	2	/* SINK, version 6 */
#define ROGUE_F_WANT	1	/* CREDIT, version 3 */
#define ROGUE_F_RECLAIM	2
#define ROGUE_F_RETURN	4

struct rogue_hdr {
	uint8_t version;
	uint8_t type;
	uint16_t flags;
	uint32_t dst_conn, src_conn, seq, msg_len, offset, len, credits;
} __attribute__((packed));

struct rogue_conn {
	uint32_t port, slot_size, credits, rkey;	/* rkey: version 4 */
} __attribute__((packed));

/*
 * The protocol version the rogue offers and writes: 1, one record per SEND;
 * 2, batches of records padded to 8 bytes; 3, CREDIT flags too; 4, credits
 * that name slots, placed chunks (a test sets it before rogue_open()).
 */
static int rogue_version = 1;

/* Bytes a record with @len bytes of payload takes in a SEND. */
static inline size_t rogue_rec_len(uint32_t len)
{
	size_t n = ROGUE_HDR_LEN + (size_t)len;

	return rogue_version >= 2 ? (n + 7) & ~(size_t)7 : n;
}

struct rogue {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *buf;		/* [0, ROGUE_BUF): send; then ROGUE_RECVS receive buffers */
	int no_repost;		/* receives taken are not posted again */
	uint64_t send_seq;	/* number of the last send posted, */
	uint64_t send_done;	/* and of the last one completed */
};

/* A send's wr_id: this bit and a sequence number; a receive's: its index + 1. */
#define ROGUE_SEND_ID	(1ULL << 63)

/* The next rdma_cm event within @ms; its type, or -1. */
static inline int rogue_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int type;

	if (poll(&pfd, 1, ms) != 1 || rdma_get_cm_event(ch, &ev))
		return -1;
	type = ev->event;
	rdma_ack_cm_event(ev);
	return type;
}

static inline int rogue_post_recv(struct rogue *r, int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)r->buf + (size_t)(i + 1) * ROGUE_BUF,
		.length = ROGUE_BUF,
		.lkey = r->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i + 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(r->id->qp, &wr, &bad);
}

static inline void rogue_close(struct rogue *r)
{
	if (r->id && r->id->qp)
		rdma_destroy_qp(r->id);
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->id)
		rdma_destroy_id(r->id);
	if (r->ch)
		rdma_destroy_event_channel(r->ch);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* The private data of a CONNECT REQUEST, rogue_version's (4 or 8 bytes). */
static inline struct rdma_conn_param rogue_param(unsigned char priv[8])
{
	struct rdma_conn_param param = {
		.private_data = priv,
		.private_data_len = rogue_version >= 2 ? 8 : 4,
		.retry_count = 6,
		.rnr_retry_count = 7,
	};

	/* The version; from version 2, the receive buffer size (big endian). */
	priv[0] = rogue_version;
	priv[1] = priv[2] = priv[3] = 0;
	priv[4] = ROGUE_BUF >> 24;
	priv[5] = (ROGUE_BUF >> 16) & 0xff;
	priv[6] = (ROGUE_BUF >> 8) & 0xff;
	priv[7] = ROGUE_BUF & 0xff;
	return param;
}

/*
 * An id bound to @src (NULL: the route's) and @src_port (0: any), with the
 * route to @dst_ip's rdmashare resolved; 0 or -errno (@r closed).
 */
static inline int rogue_resolve(struct rogue *r, const char *dst_ip, const char *src,
				unsigned int src_port)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(ROGUE_CM_PORT) };
	struct sockaddr_in from = { .sin_family = AF_INET, .sin_port = htons(src_port) };
	int ret;

	memset(r, 0, sizeof(*r));
	inet_pton(AF_INET, dst_ip, &dst.sin_addr);
	inet_pton(AF_INET, src ?: "0.0.0.0", &from.sin_addr);
	r->ch = rdma_create_event_channel();
	if (!r->ch)
		return -errno;
	if (rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP)) {
		ret = -errno;
		r->id = NULL;
		goto fail;
	}
	if ((src || src_port) && rdma_bind_addr(r->id, (struct sockaddr *)&from)) {
		ret = -errno;
		goto fail;
	}
	ret = -EHOSTUNREACH;
	if (rdma_resolve_addr(r->id, NULL, (struct sockaddr *)&dst, 5000) ||
	    rogue_event(r->ch, 10000) != RDMA_CM_EVENT_ADDR_RESOLVED)
		goto fail;
	if (rdma_resolve_route(r->id, 5000) ||
	    rogue_event(r->ch, 10000) != RDMA_CM_EVENT_ROUTE_RESOLVED)
		goto fail;
	return 0;
fail:
	rogue_close(r);
	return ret;
}

/*
 * Send @r's CONNECT REQUEST with @param and wait for the answer: @want
 * (keep @r), or @r closed and the event that came instead, or -errno.
 */
static inline int rogue_request(struct rogue *r, struct rdma_conn_param *param, int want)
{
	int ret, ev;

	if (rdma_connect(r->id, param)) {
		ret = -errno;
		rogue_close(r);
		return ret;
	}
	ev = rogue_event(r->ch, 20000);
	if (ev == want)
		return ev;
	rogue_close(r);
	return ev < 0 ? -ETIMEDOUT : ev;
}

/*
 * Connect to @dst's rdmashare from @src (NULL: the route's) and @src_port
 * (0: any), with receive buffers posted; the event that ended the attempt
 * (RDMA_CM_EVENT_ESTABLISHED: connected, keep @r; otherwise closed), or
 * -errno of a step that failed.
 */
static inline int rogue_open(struct rogue *r, const char *dst_ip, const char *src,
			     unsigned int src_port)
{
	unsigned char priv[8];
	struct rdma_conn_param param = rogue_param(priv);
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16, .max_recv_wr = ROGUE_RECVS, .max_send_sge = 2,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	int ret, i;

	ret = rogue_resolve(r, dst_ip, src, src_port);
	if (ret)
		return ret;
	ret = -ENOMEM;
	r->buf = calloc(ROGUE_RECVS + 1, ROGUE_BUF);
	r->cq = ibv_create_cq(r->id->verbs, 64, NULL, NULL, 0);
	if (!r->buf || !r->cq)
		goto fail;
	qa.send_cq = r->cq;
	qa.recv_cq = r->cq;
	if (rdma_create_qp(r->id, NULL, &qa)) {
		ret = -errno;
		goto fail;
	}
	r->mr = ibv_reg_mr(r->id->qp->pd, r->buf, (size_t)(ROGUE_RECVS + 1) * ROGUE_BUF,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!r->mr)
		goto fail;
	for (i = 0; i < ROGUE_RECVS; i++)
		if (rogue_post_recv(r, i))
			goto fail;
	return rogue_request(r, &param, RDMA_CM_EVENT_ESTABLISHED);
fail:
	rogue_close(r);
	return ret;
}

/*
 * Half a connection: a CONNECT REQUEST naming a QP number that no QP has,
 * and no RTU for the module's answer.  The event that came
 * (RDMA_CM_EVENT_CONNECT_RESPONSE: the module accepted and waits for the
 * RTU; keep @r, rdma_cm sends none without rdma_establish()), or -errno.
 */
static inline int rogue_connect_half(struct rogue *r, const char *dst_ip, const char *src,
				     unsigned int src_port)
{
	unsigned char priv[8];
	struct rdma_conn_param param = rogue_param(priv);
	int ret;

	ret = rogue_resolve(r, dst_ip, src, src_port);
	if (ret)
		return ret;
	param.qp_num = 0xbad;
	return rogue_request(r, &param, RDMA_CM_EVENT_CONNECT_RESPONSE);
}

static inline void rogue_hdr(void *p, uint8_t type, uint16_t flags, uint32_t dst,
			     uint32_t src, uint32_t seq, uint32_t msg_len, uint32_t offset,
			     uint32_t len, uint32_t credits)
{
	struct rogue_hdr h = {
		.version = rogue_version, .type = type, .flags = htons(flags),
		.dst_conn = htonl(dst), .src_conn = htonl(src), .seq = htonl(seq),
		.msg_len = htonl(msg_len), .offset = htonl(offset), .len = htonl(len),
		.credits = htonl(credits),
	};

	memcpy(p, &h, sizeof(h));
}

/*
 * Wait up to @ms for a completion: a receive's byte count and *@recv set
 * (the buffer posted again), a send's 0; -wc.status - 1000 on an error
 * completion, -ETIMEDOUT.
 */
static inline int rogue_poll(struct rogue *r, int ms, char **recv)
{
	struct ibv_wc wc;
	int n, i;

	for (i = 0; i < ms; i++) {
		n = ibv_poll_cq(r->cq, 1, &wc);
		if (n < 0)
			return -EIO;
		if (!n) {
			usleep(1000);
			continue;
		}
		if (wc.wr_id & ROGUE_SEND_ID)
			r->send_done = wc.wr_id & ~ROGUE_SEND_ID;
		if (wc.status != IBV_WC_SUCCESS)
			return -1000 - (int)wc.status;
		if (wc.wr_id && !(wc.wr_id & ROGUE_SEND_ID)) {
			if (recv)
				*recv = r->buf + wc.wr_id * ROGUE_BUF;
			if (!r->no_repost)
				rogue_post_recv(r, wc.wr_id - 1);
			return wc.byte_len;
		}
		return 0;
	}
	return -ETIMEDOUT;
}

/* Post @wr (signaled); 0 or an error.  Its completion sets send_done. */
static inline int rogue_post_wr(struct rogue *r, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	wr->wr_id = ROGUE_SEND_ID | ++r->send_seq;
	wr->send_flags = IBV_SEND_SIGNALED;
	return ibv_post_send(r->id->qp, wr, &bad) ? -errno : 0;
}

/*
 * Wait for the completion of the send posted last: 0, or its error.  What
 * comes before it (receives, which are dropped: tests that want them poll;
 * completions of earlier sends) is skipped.
 */
static inline int rogue_wait_send(struct rogue *r)
{
	char *rx;
	int ret;

	for (;;) {
		ret = rogue_poll(r, 10000, &rx);
		if (ret <= 0 && r->send_done == r->send_seq)
			return ret;
		if (ret < 0 && ret > -1000)
			return ret;	/* timed out */
	}
}

/*
 * Post a SEND of @len bytes from the send buffer; its completion comes to
 * rogue_poll() as 0.  0 or an error.
 */
static inline int rogue_post(struct rogue *r, size_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)r->buf, .length = len, .lkey = r->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND };

	return rogue_post_wr(r, &wr);
}

/* Send @len bytes from the send buffer; 0 once it completed, or an error. */
static inline int rogue_send(struct rogue *r, size_t len)
{
	int ret = rogue_post(r, len);

	return ret ? ret : rogue_wait_send(r);
}

/*
 * RDMA WRITE @len bytes from the send buffer to @raddr of @rkey at the
 * module, with the immediate @imm (host order, sent big endian) if
 * @with_imm; 0 once it completed, or an error.
 */
static inline int rogue_write_op(struct rogue *r, size_t len, uint64_t raddr, uint32_t rkey,
				 bool with_imm, uint32_t imm)
{
	struct ibv_sge sge = { .addr = (uintptr_t)r->buf, .length = len, .lkey = r->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1,
		.opcode = with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
		.imm_data = htonl(imm),
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};
	int ret = rogue_post_wr(r, &wr);

	return ret ? ret : rogue_wait_send(r);
}

static inline int rogue_write(struct rogue *r, size_t len, uint64_t raddr, uint32_t rkey)
{
	return rogue_write_op(r, len, raddr, rkey, false, 0);
}

/* Version 5: a WRITE WITH IMMEDIATE, @imm the module's connection id. */
static inline int rogue_write_imm(struct rogue *r, size_t len, uint64_t raddr, uint32_t rkey,
				  uint32_t imm)
{
	return rogue_write_op(r, len, raddr, rkey, true, imm);
}

/* Wait up to @ms for the module to disconnect; 0 if it did. */
static inline int rogue_wait_disconnect(struct rogue *r, int ms)
{
	int ev;

	while ((ev = rogue_event(r->ch, ms)) >= 0)
		if (ev == RDMA_CM_EVENT_DISCONNECTED)
			return 0;
	return -ETIMEDOUT;
}

#endif
