// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The connection layer of servers and workers: frames messages over a
 * transport's byte stream, keeps at most `pipeline` requests in flight per
 * connection (the rest wait in order), and runs one poll(2) round at a
 * time, so that a node makes progress only inside its own calls and needs
 * no thread.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ps_int.h"

#define PS_IOV_MAX	32
/* Messages read from one connection in a round, so that none starves. */
#define PS_READ_BUDGET	64

/* What servers and workers take from @cfg alike; -EINVAL for a bad one. */
int ps_node_init(struct ps_node *n, const struct ps_config *cfg, const struct ps_node_ops *ops,
		 bool is_worker)
{
	memset(n, 0, sizeof(*n));
	n->tr = ps_transport_find(cfg->transport);
	if (!n->tr || !cfg->root_host || !cfg->root_port || cfg->rank >= PS_MAX_NODES)
		return -EINVAL;
	n->ops = ops;
	n->lim.max_msg = cfg->max_msg ? cfg->max_msg : 64 << 20;
	n->pipeline = cfg->pipeline ? cfg->pipeline : 16;
	n->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 30000;
	n->rank = cfg->rank < 0 ? UINT32_MAX : (uint32_t)cfg->rank;
	n->is_worker = is_worker;
	n->addrs = calloc(PS_MAX_NODES, sizeof(*n->addrs));
	if (!n->addrs)
		return -ENOMEM;
	if (!n->tr->open)
		return 0;
	return n->tr->open(cfg->buf_size ? cfg->buf_size : 32 << 20, &n->trx);
}

/* @len bytes the transport sends from without a copy, else malloc()'s. */
void *ps_node_buf(struct ps_node *n, size_t len)
{
	void *p = NULL;

	if (n->tr->buf_alloc && n->trx)
		p = n->tr->buf_alloc(n->trx, len);
	return p ? p : malloc(len ? len : 1);
}

void ps_node_buf_free(struct ps_node *n, void *p)
{
	if (p && !(n->tr->buf_put && n->trx && n->tr->buf_put(n->trx, p)))
		free(p);
}

static void out_free(struct ps_node *n, struct ps_out *o)
{
	while (o) {
		struct ps_out *next = o->next;

		ps_node_buf_free(n, o->owned);
		free(o);
		o = next;
	}
}

static void conn_free(struct ps_node *n, struct ps_conn *c)
{
	if (c->tc)
		n->tr->close(c->tc);
	out_free(n, c->oq);
	out_free(n, c->waitq);
	free(c->scratch);
	free(c);
}

void ps_node_fini(struct ps_node *n)
{
	unsigned int i;

	for (i = 0; i < n->nconns; i++)
		conn_free(n, n->conns[i]);
	free(n->conns);
	if (n->listener)
		n->tr->close(n->listener);
	if (n->trx)
		n->tr->fini(n->trx, n->timeout_ms);
	free(n->addrs);
	memset(n, 0, sizeof(*n));
}

/* A connection on transport connection @tc (taken, closed on failure). */
struct ps_conn *ps_node_add(struct ps_node *n, struct ps_tr_conn *tc)
{
	struct ps_conn *c, **conns;

	if (n->nconns == n->cap) {
		conns = realloc(n->conns, (n->cap * 2 + 8) * sizeof(*conns));
		if (!conns)
			goto out_close;
		n->conns = conns;
		n->cap = n->cap * 2 + 8;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto out_close;
	c->tc = tc;
	n->conns[n->nconns++] = c;
	return c;

out_close:
	n->tr->close(tc);
	return NULL;
}

/*
 * Connect to @ss, trying again until @deadline while nobody listens there
 * yet (the nodes of a job start in any order).
 */
int ps_node_connect(struct ps_node *n, const struct sockaddr_storage *ss, int64_t deadline,
		    struct ps_conn **out)
{
	struct ps_tr_conn *tc;
	int ret;

	for (;;) {
		ret = n->tr->connect(n->trx, (const struct sockaddr *)ss, ps_addr_len(ss),
				     ps_left_ms(deadline), &tc);
		if (!ret)
			break;
		if (ret != -ECONNREFUSED && ret != -ETIMEDOUT && ret != -EAGAIN)
			return ret;
		if (!ps_left_ms(deadline))
			return -ETIMEDOUT;
		usleep(20000);
	}
	*out = ps_node_add(n, tc);
	return *out ? 0 : -ENOMEM;
}

/*
 * Close @c at once, so that its peer sees the end now, and tell the owner;
 * @err is 0 for a peer that shut down cleanly.  Freed after the round.
 */
void ps_conn_drop(struct ps_node *n, struct ps_conn *c, int err)
{
	if (c->dead)
		return;
	c->dead = true;
	n->tr->close(c->tc);
	c->tc = NULL;
	n->ops->on_lost(n, c, err);
}

void *ps_conn_scratch(struct ps_conn *c, size_t len)
{
	void *p;

	if (len <= c->scratch_len)
		return c->scratch;
	p = realloc(c->scratch, len);
	if (!p)
		return NULL;
	c->scratch = p;
	c->scratch_len = len;
	return p;
}

/* Write what the transport takes now. */
static void conn_flush(struct ps_node *n, struct ps_conn *c)
{
	struct iovec iov[PS_IOV_MAX];
	struct ps_out *o;
	ssize_t sent;
	size_t off;
	int cnt;

	while (c->oq && !c->dead) {
		cnt = 0;
		for (o = c->oq; o && cnt + 2 <= PS_IOV_MAX; o = o->next) {
			off = o->done;
			if (off < PS_HDR_LEN) {
				iov[cnt].iov_base = o->hdr + off;
				iov[cnt++].iov_len = PS_HDR_LEN - off;
				off = PS_HDR_LEN;
			}
			if (o->plen > off - PS_HDR_LEN) {
				iov[cnt].iov_base = (char *)o->payload + (off - PS_HDR_LEN);
				iov[cnt++].iov_len = o->plen - (off - PS_HDR_LEN);
			}
		}
		sent = n->tr->sendv(c->tc, iov, cnt);
		if (sent == -EAGAIN)
			return;
		if (sent < 0) {
			ps_conn_drop(n, c, -ECONNRESET);
			return;
		}
		n->tx_bytes += sent;
		while (sent > 0) {
			o = c->oq;
			off = PS_HDR_LEN + o->plen - o->done;
			if ((size_t)sent < off) {
				o->done += sent;
				break;
			}
			sent -= off;
			c->oq = o->next;
			o->next = NULL;
			out_free(n, o);
		}
		if (!c->oq)
			c->oq_tail = NULL;
	}
}

static void enqueue(struct ps_out **head, struct ps_out **tail, struct ps_out *o)
{
	if (*tail)
		(*tail)->next = o;
	else
		*head = o;
	*tail = o;
}

/*
 * Send @m with @plen bytes of @payload after it: borrowed until sent, or
 * @owned (freed once sent, also on failure).  A request waits while the
 * connection has `pipeline` requests without an answer.
 */
int ps_conn_send(struct ps_node *n, struct ps_conn *c, struct ps_msg *m, const void *payload,
		 size_t plen, void *owned)
{
	struct ps_out *o;

	if (c->dead) {
		ps_node_buf_free(n, owned);
		return -ECONNRESET;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		ps_node_buf_free(n, owned);
		return -ENOMEM;
	}
	m->length = plen;
	m->sender = n->rank;
	m->flags |= n->is_worker ? PS_F_WORKER : 0;
	ps_msg_encode(m, o->hdr);
	o->payload = payload;
	o->plen = plen;
	o->owned = owned;
	if (!(m->flags & PS_F_RESP)) {
		if (c->inflight >= n->pipeline) {
			enqueue(&c->waitq, &c->waitq_tail, o);
			return 0;
		}
		c->inflight++;
	}
	enqueue(&c->oq, &c->oq_tail, o);
	conn_flush(n, c);
	return 0;
}

/* An answer came: a request that waited for the pipeline may go. */
static int conn_answered(struct ps_node *n, struct ps_conn *c)
{
	struct ps_out *o;

	if (!c->inflight)
		return -EPROTO;
	c->inflight--;
	while (c->waitq && c->inflight < n->pipeline) {
		o = c->waitq;
		c->waitq = o->next;
		if (!c->waitq)
			c->waitq_tail = NULL;
		o->next = NULL;
		c->inflight++;
		enqueue(&c->oq, &c->oq_tail, o);
	}
	conn_flush(n, c);
	return 0;
}

static int conn_complete(struct ps_node *n, struct ps_conn *c)
{
	int ret = 0;

	c->hgot = 0;
	c->in_payload = false;
	if (c->msg.flags & PS_F_RESP)
		ret = conn_answered(n, c);
	if (!ret && !c->dead)
		ret = n->ops->on_msg(n, c, &c->msg, c->dest);
	return ret;
}

/* Read and handle the messages that are there, a few at most. */
static void conn_read(struct ps_node *n, struct ps_conn *c)
{
	int budget = PS_READ_BUDGET, ret;
	ssize_t r;

	while (!c->dead && budget > 0) {
		if (!c->in_payload)
			r = n->tr->recv(c->tc, c->hbuf + c->hgot, PS_HDR_LEN - c->hgot);
		else
			r = n->tr->recv(c->tc, (char *)c->dest + c->pgot, c->msg.length - c->pgot);
		if (r == -EAGAIN)
			return;
		if (r <= 0) {
			/* The end after a clean shutdown, between messages, is no loss. */
			ps_conn_drop(n, c, !r && c->shut && !c->hgot ? 0 : -ECONNRESET);
			return;
		}
		n->rx_bytes += r;
		if (!c->in_payload) {
			c->hgot += r;
			if (c->hgot < PS_HDR_LEN)
				continue;
			ret = ps_msg_decode(c->hbuf, PS_HDR_LEN, &n->lim, &c->msg);
			c->dest = NULL;
			c->status = 0;
			if (!ret)
				ret = n->ops->on_hdr(n, c, &c->msg, &c->dest);
			if (!ret && c->msg.length && !c->dest)
				ret = -EPROTO;
			if (ret) {
				ps_conn_drop(n, c, ret);
				return;
			}
			if (c->msg.length) {
				c->in_payload = true;
				c->pgot = 0;
				continue;
			}
		} else {
			c->pgot += r;
			if (c->pgot < c->msg.length)
				continue;
		}
		ret = conn_complete(n, c);
		if (ret) {
			ps_conn_drop(n, c, ret);
			return;
		}
		budget--;
	}
}

static void node_reap(struct ps_node *n)
{
	unsigned int i, j;

	for (i = j = 0; i < n->nconns; i++) {
		if (n->conns[i]->dead)
			conn_free(n, n->conns[i]);
		else
			n->conns[j++] = n->conns[i];
	}
	n->nconns = j;
}

static short conn_events(struct ps_node *n, struct ps_conn *c)
{
	if (n->tr->poll_events)
		return n->tr->poll_events(c->tc, c->oq);
	return POLLIN | (c->oq ? POLLOUT : 0);
}

static bool tr_ready(struct ps_node *n, struct ps_tr_conn *tc)
{
	return n->tr->ready && n->tr->ready(tc);
}

/*
 * One round: wait at most @timeout_ms (-1: for good) for any connection or
 * the listener, then write, accept and read what can be.  -ENOTCONN when
 * there is nothing left to wait for.
 */
int ps_node_progress(struct ps_node *n, int timeout_ms)
{
	struct pollfd pfd[n->nconns + 1];
	struct ps_conn *conn[n->nconns + 1];
	struct ps_tr_conn *tc;
	unsigned int i, cnt = 0, first = 0;
	bool now = false;
	int ret;

	if (n->listener && n->accepting) {
		pfd[0].fd = n->tr->poll_fd(n->listener);
		pfd[0].events = POLLIN;
		now |= tr_ready(n, n->listener);
		cnt = first = 1;
	}
	for (i = 0; i < n->nconns; i++) {
		if (n->conns[i]->dead)
			continue;
		conn[cnt] = n->conns[i];
		pfd[cnt].fd = n->tr->poll_fd(conn[cnt]->tc);
		pfd[cnt].events = conn_events(n, conn[cnt]);
		now |= tr_ready(n, conn[cnt]->tc);
		cnt++;
	}
	if (!cnt)
		return -ENOTCONN;
	ret = poll(pfd, cnt, now ? 0 : timeout_ms);
	if (ret < 0)
		return errno == EINTR ? 0 : -errno;
	if (first && (pfd[0].revents || tr_ready(n, n->listener))) {
		while (n->tr->accept(n->listener, &tc) == 0)
			ps_node_add(n, tc);
	}
	for (i = first; i < cnt; i++) {
		short ev = pfd[i].revents;

		if (conn[i]->dead)
			continue;
		/* Any event on a transport's own events, or work it holds: try both. */
		if ((ev && n->tr->poll_events) || tr_ready(n, conn[i]->tc))
			ev |= POLLIN | POLLOUT;
		if (ev & (POLLOUT | POLLERR | POLLHUP))
			conn_flush(n, conn[i]);
		if (ev & (POLLIN | POLLERR | POLLHUP))
			conn_read(n, conn[i]);
	}
	node_reap(n);
	return 0;
}

/* Make progress until every connection wrote all it has, or @deadline. */
int ps_node_flush(struct ps_node *n, int64_t deadline)
{
	unsigned int i;
	bool busy;
	int ret;

	for (;;) {
		busy = false;
		for (i = 0; i < n->nconns; i++)
			busy |= !n->conns[i]->dead && n->conns[i]->oq;
		if (!busy)
			return 0;
		if (!ps_left_ms(deadline))
			return -ETIMEDOUT;
		ret = ps_node_progress(n, ps_left_ms(deadline));
		if (ret)
			return ret;
	}
}
