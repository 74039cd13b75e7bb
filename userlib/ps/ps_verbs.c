// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The verbs transport: an RC queue pair per connection, set up with
 * rdma_cm, the design rdmashare replaces, written as a baseline to measure
 * it against: what a careful application does on its own.
 *
 *  - Receives are posted ahead, VB_RX buffers of VB_BUF bytes per
 *    connection, and posted again in batches as they are read; each SEND
 *    fills one.  Credits say how many the peer has posted: every SEND
 *    carries the ones freed since in its immediate data, and a SEND of no
 *    bytes carries them alone once half of them are owed.  The last credit
 *    is kept for that, so that neither end can stall.
 *  - Sends are batched: what one sendv() takes is a chain of work requests
 *    posted with one ibv_post_send(), signalled only at the chain's end
 *    and every VB_SIGNAL requests (RC completes in order, so one
 *    completion retires every request before it).  Up to VB_SGE pieces go
 *    in one request: bytes in ordinary memory copied into a registered
 *    ring, buffers of the node's registered pool (ps_buf_alloc(), a
 *    server's answers) sent where they are.  Small requests with nothing
 *    from the pool go inline where the device allows it.
 *  - Each connection has its CQ and completion channel; its descriptor is
 *    an epoll of that channel and of its rdma_cm event channel, which
 *    brings the peer's disconnect.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "ps_int.h"

#define VB_RX		32		/* receives posted per connection */
#define VB_BUF		(64u << 10)	/* bytes of a receive, so of one SEND */
#define VB_SQ		128		/* send work requests */
#define VB_SIGNAL	16		/* a signalled one at least this often */
#define VB_SGE		4		/* pieces of one request */
#define VB_TXRING	(1u << 20)	/* copies of what is sent */
#define VB_INLINE	64		/* inline bytes asked for */
#define VB_REPOST	8		/* receives posted again at once */
#define VB_LINGER_MS	2000		/* close() waits for its sends this long */
#define VB_WR_RECV	(1ull << 63)

/* A device the node's connections are on: its PD and the pool's MR. */
struct vb_dev {
	struct vb_dev *next;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_mr *pool_mr;
};

struct ps_tr_ctx {
	struct vb_dev *devs;
	void *pool_mem;
	size_t pool_size;
	struct ps_pool pool;
};

/* What a send work request holds until it completes. */
struct vb_wr {
	uint32_t ring_off, ring_len;
	const void *pool[VB_SGE];
	int npool;
};

struct ps_tr_conn {
	struct ps_tr_ctx *x;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	bool listener;
	int epfd;
	struct vb_dev *dev;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint32_t max_inline;
	unsigned int max_sge;
	char *rx;
	struct ibv_mr *rx_mr;
	/* completed receives, in order: buffer and bytes; the first read up to rx_pos */
	uint32_t rxq[VB_RX], rxq_len[VB_RX];
	unsigned int rxq_head, rxq_tail, rx_pos;
	uint32_t repost[VB_RX];
	unsigned int nrepost;
	unsigned int credits;		/* receives the peer has posted for us */
	unsigned int owed;		/* posted again, not told to the peer yet */
	char *tx;
	struct ibv_mr *tx_mr;
	struct ps_ring ring;
	struct vb_wr wrs[VB_SQ];
	struct ibv_send_wr wrq[VB_SQ];	/* the chain being built */
	uint64_t posted, done;		/* send requests posted, completed */
	uint64_t signalled;		/* the last signalled one */
	unsigned long tx_gen, blocked;	/* as rdmashare's: room came since -EAGAIN */
	unsigned int cq_events;
	bool gone;			/* the peer disconnected */
	int err;
};

static int vb_open(size_t pool_size, struct ps_tr_ctx **out)
{
	struct ps_tr_ctx *x = calloc(1, sizeof(*x));
	int ret;

	if (!x)
		return -ENOMEM;
	x->pool_size = pool_size;
	x->pool_mem = mmap(NULL, pool_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
	if (x->pool_mem == MAP_FAILED) {
		free(x);
		return -ENOMEM;
	}
	ret = ps_pool_init(&x->pool, x->pool_mem, pool_size);
	if (ret) {
		munmap(x->pool_mem, pool_size);
		free(x);
		return ret;
	}
	*out = x;
	return 0;
}

static void vb_fini(struct ps_tr_ctx *x, int timeout_ms __attribute__((unused)))
{
	struct vb_dev *d;

	while ((d = x->devs)) {
		x->devs = d->next;
		if (d->pool_mr)
			ibv_dereg_mr(d->pool_mr);
		ibv_dealloc_pd(d->pd);
		free(d);
	}
	ps_pool_fini(&x->pool);
	munmap(x->pool_mem, x->pool_size);
	free(x);
}

/* The node's PD on @verbs, and its pool registered there. */
static struct vb_dev *vb_dev(struct ps_tr_ctx *x, struct ibv_context *verbs)
{
	struct vb_dev *d;

	for (d = x->devs; d; d = d->next)
		if (d->verbs == verbs)
			return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->verbs = verbs;
	d->pd = ibv_alloc_pd(verbs);
	if (!d->pd) {
		free(d);
		return NULL;
	}
	/* Without the pool's MR its buffers are copied like any others. */
	d->pool_mr = ibv_reg_mr(d->pd, x->pool_mem, x->pool_size, IBV_ACCESS_LOCAL_WRITE);
	d->next = x->devs;
	x->devs = d;
	return d;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ? -errno : 0;
}

/* Wait (at most until @deadline) for @id's next event, which must be @want. */
static int vb_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		    int64_t deadline)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int ret, status;

	ret = poll(&p, 1, ps_left_ms(deadline));
	if (ret <= 0)
		return ret ? -errno : -ETIMEDOUT;
	if (rdma_get_cm_event(ch, &ev))
		return -errno;
	ret = ev->event;
	status = ev->status;
	rdma_ack_cm_event(ev);
	if ((int)want == ret)
		return 0;
	switch (ret) {
	case RDMA_CM_EVENT_REJECTED:
		return -ECONNREFUSED;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return status < 0 ? status : -EHOSTUNREACH;
	case RDMA_CM_EVENT_UNREACHABLE:
		return -ETIMEDOUT;
	default:
		return -ECONNRESET;
	}
}

static int vb_post_recvs(struct ps_tr_conn *c, const uint32_t *bufs, unsigned int n)
{
	struct ibv_recv_wr wr[VB_RX], *bad;
	struct ibv_sge sge[VB_RX];
	unsigned int i;

	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge){
			.addr = (uintptr_t)(c->rx + (size_t)bufs[i] * VB_BUF), .length = VB_BUF,
			.lkey = c->rx_mr->lkey,
		};
		wr[i] = (struct ibv_recv_wr){
			.wr_id = VB_WR_RECV | bufs[i], .sg_list = &sge[i], .num_sge = 1,
			.next = i + 1 < n ? &wr[i + 1] : NULL,
		};
	}
	return ibv_post_recv(c->qp, wr, &bad) ? -EIO : 0;
}

/*
 * The connection's verbs objects on @c->id's device: CQ and channel, QP,
 * receive buffers (posted) and send ring; and the epoll of its channels.
 */
static int vb_setup(struct ps_tr_ctx *x, struct ps_tr_conn *c)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = VB_SQ, .max_recv_wr = VB_RX, .max_send_sge = VB_SGE,
			 .max_recv_sge = 1, .max_inline_data = VB_INLINE },
	};
	struct epoll_event ev = { .events = EPOLLIN };
	uint32_t bufs[VB_RX];
	unsigned int i;

	c->x = x;
	c->dev = vb_dev(x, c->id->verbs);
	if (!c->dev)
		return -ENOMEM;
	c->cc = ibv_create_comp_channel(c->id->verbs);
	if (!c->cc || set_nonblock(c->cc->fd))
		return -EIO;
	c->cq = ibv_create_cq(c->id->verbs, VB_SQ + VB_RX, c, c->cc, 0);
	if (!c->cq || ibv_req_notify_cq(c->cq, 0))
		return -EIO;
	qa.send_cq = qa.recv_cq = c->cq;
	if (rdma_create_qp(c->id, c->dev->pd, &qa)) {
		/* No inline data on this device. */
		qa.cap.max_inline_data = 0;
		if (rdma_create_qp(c->id, c->dev->pd, &qa))
			return -errno;
	}
	c->qp = c->id->qp;
	c->max_inline = qa.cap.max_inline_data;
	c->max_sge = qa.cap.max_send_sge < VB_SGE ? qa.cap.max_send_sge : VB_SGE;
	c->rx = malloc((size_t)VB_RX * VB_BUF);
	c->tx = malloc(VB_TXRING);
	if (!c->rx || !c->tx)
		return -ENOMEM;
	c->rx_mr = ibv_reg_mr(c->dev->pd, c->rx, (size_t)VB_RX * VB_BUF, IBV_ACCESS_LOCAL_WRITE);
	c->tx_mr = ibv_reg_mr(c->dev->pd, c->tx, VB_TXRING, 0);
	if (!c->rx_mr || !c->tx_mr)
		return -errno;
	c->ring.size = VB_TXRING;
	c->credits = VB_RX;
	for (i = 0; i < VB_RX; i++)
		bufs[i] = i;
	if (vb_post_recvs(c, bufs, VB_RX))
		return -EIO;
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->epfd < 0 || set_nonblock(c->ch->fd) ||
	    epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->cc->fd, &ev) ||
	    epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->ch->fd, &ev))
		return -errno;
	return 0;
}

static struct ps_tr_conn *vb_conn_new(void)
{
	struct ps_tr_conn *c = calloc(1, sizeof(*c));

	if (c)
		c->epfd = -1;
	return c;
}

/* Retire the send requests up to @seq (RC completes them in order). */
static void vb_retire(struct ps_tr_conn *c, uint64_t seq)
{
	struct vb_wr *w;
	int i;

	while (c->done < seq) {
		w = &c->wrs[c->done++ % VB_SQ];
		if (w->ring_len)
			ps_ring_free(&c->ring, w->ring_off, w->ring_len);
		for (i = 0; i < w->npool; i++)
			ps_pool_put(&c->x->pool, w->pool[i]);
		memset(w, 0, sizeof(*w));
	}
	c->tx_gen++;
}

static void vb_free(struct ps_tr_conn *c)
{
	if (c->qp) {
		vb_retire(c, c->posted);
		rdma_destroy_qp(c->id);
	}
	if (c->rx_mr)
		ibv_dereg_mr(c->rx_mr);
	if (c->tx_mr)
		ibv_dereg_mr(c->tx_mr);
	free(c->rx);
	free(c->tx);
	if (c->cq) {
		ibv_ack_cq_events(c->cq, c->cq_events);
		ibv_destroy_cq(c->cq);
	}
	if (c->cc)
		ibv_destroy_comp_channel(c->cc);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->ch)
		rdma_destroy_event_channel(c->ch);
	if (c->epfd >= 0)
		close(c->epfd);
	free(c);
}

static struct rdma_conn_param vb_param(void)
{
	return (struct rdma_conn_param){
		.responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
		.rnr_retry_count = 7,
	};
}

static int vb_listen(struct ps_tr_ctx *x, const struct sockaddr *sa, socklen_t len,
		     struct ps_tr_conn **out)
{
	struct ps_tr_conn *c = vb_conn_new();
	int ret = -ENOMEM;

	(void)len;
	if (!c)
		return ret;
	c->x = x;
	c->listener = true;
	c->ch = rdma_create_event_channel();
	if (!c->ch || set_nonblock(c->ch->fd) || rdma_create_id(c->ch, &c->id, c, RDMA_PS_TCP) ||
	    rdma_bind_addr(c->id, (struct sockaddr *)sa) || rdma_listen(c->id, 256)) {
		ret = -errno;
		vb_free(c);
		return ret ? ret : -EIO;
	}
	*out = c;
	return 0;
}

static int vb_connect(struct ps_tr_ctx *x, const struct sockaddr *sa, socklen_t len,
		      int timeout_ms, struct ps_tr_conn **out)
{
	int64_t deadline = ps_now_ms() + timeout_ms;
	struct rdma_conn_param p = vb_param();
	struct ps_tr_conn *c = vb_conn_new();
	int ret = -ENOMEM;

	(void)len;
	if (!c)
		return ret;
	c->ch = rdma_create_event_channel();
	if (!c->ch || rdma_create_id(c->ch, &c->id, c, RDMA_PS_TCP)) {
		ret = -errno;
		goto out_free;
	}
	ret = rdma_resolve_addr(c->id, NULL, (struct sockaddr *)sa, timeout_ms > 0 ? timeout_ms : 1);
	if (!ret)
		ret = vb_event(c->ch, RDMA_CM_EVENT_ADDR_RESOLVED, deadline);
	if (!ret)
		ret = rdma_resolve_route(c->id, ps_left_ms(deadline) ? ps_left_ms(deadline) : 1);
	if (!ret)
		ret = vb_event(c->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline);
	if (!ret)
		ret = vb_setup(x, c);
	if (!ret)
		ret = rdma_connect(c->id, &p) ? -errno : 0;
	if (!ret)
		ret = vb_event(c->ch, RDMA_CM_EVENT_ESTABLISHED, deadline);
	if (ret)
		goto out_free;
	*out = c;
	return 0;

out_free:
	vb_free(c);
	return ret < 0 ? ret : -EIO;
}

static int vb_accept(struct ps_tr_conn *l, struct ps_tr_conn **out)
{
	struct rdma_conn_param p = vb_param();
	struct rdma_cm_event *ev;
	struct ps_tr_conn *c;
	struct rdma_cm_id *id;
	int ret;

	for (;;) {
		if (rdma_get_cm_event(l->ch, &ev))
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		id = ev->id;
		ret = ev->event;
		rdma_ack_cm_event(ev);
		if (ret == RDMA_CM_EVENT_CONNECT_REQUEST)
			break;
	}
	c = vb_conn_new();
	if (!c) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return -ENOMEM;
	}
	c->id = id;
	c->ch = rdma_create_event_channel();
	ret = c->ch ? 0 : -errno;
	if (!ret)
		ret = rdma_migrate_id(id, c->ch) ? -errno : 0;
	if (!ret)
		ret = vb_setup(l->x, c);
	if (!ret)
		ret = rdma_accept(id, &p) ? -errno : 0;
	if (ret) {
		rdma_reject(id, NULL, 0);
		vb_free(c);
		return ret;
	}
	*out = c;
	return 0;
}

/*
 * Take what the rdma_cm channel and the CQ have: receives queued for
 * reading (their credits counted), send requests retired, the peer's
 * disconnect noted.  The completion channel's events are left alone: see
 * vb_poll().
 */
static void vb_reap(struct ps_tr_conn *c)
{
	struct rdma_cm_event *ev;
	struct ibv_wc wc[32];
	int n, i;

	while (!rdma_get_cm_event(c->ch, &ev)) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
		    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT)
			c->gone = true;
		rdma_ack_cm_event(ev);
	}
	while ((n = ibv_poll_cq(c->cq, 32, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				/* Flushed once the QP went down: the end, not its cause. */
				if (!c->err && !(c->gone && wc[i].status == IBV_WC_WR_FLUSH_ERR))
					c->err = -ECONNRESET;
				if (!(wc[i].wr_id & VB_WR_RECV))
					vb_retire(c, wc[i].wr_id);
				continue;
			}
			if (!(wc[i].wr_id & VB_WR_RECV)) {
				vb_retire(c, wc[i].wr_id);
				continue;
			}
			if (wc[i].wc_flags & IBV_WC_WITH_IMM) {
				c->credits += ntohl(wc[i].imm_data);
				c->tx_gen++;
			}
			/* Credits alone: the buffer goes back at once. */
			if (!wc[i].byte_len) {
				c->repost[c->nrepost++] = wc[i].wr_id & ~VB_WR_RECV;
				continue;
			}
			c->rxq[c->rxq_tail % VB_RX] = wc[i].wr_id & ~VB_WR_RECV;
			c->rxq_len[c->rxq_tail % VB_RX] = wc[i].byte_len;
			c->rxq_tail++;
		}
	}
	if (n < 0 && !c->err)
		c->err = -EIO;
}

/*
 * vb_reap(), the completion channel's events taken (and acknowledged) first.
 * An event disarms the CQ until the next ibv_req_notify_cq(), so events are
 * taken only before vb_ready() arms it, never after: one that comes after
 * the arming stays in the channel, whose descriptor then wakes the next
 * poll(), and that round takes it and arms the CQ again.
 */
static void vb_poll(struct ps_tr_conn *c)
{
	struct ibv_cq *cq;
	void *ctx;

	while (!ibv_get_cq_event(c->cc, &cq, &ctx))
		c->cq_events++;
	if (c->cq_events >= 64) {
		ibv_ack_cq_events(c->cq, c->cq_events);
		c->cq_events = 0;
	}
	vb_reap(c);
}

/*
 * Post a chain of @n requests.  The last is signalled, and so is any
 * request VB_SIGNAL after the last signalled one.
 */
static int vb_post(struct ps_tr_conn *c, struct ibv_send_wr *wr, unsigned int n)
{
	struct ibv_send_wr *bad;
	unsigned int i;

	for (i = 0; i < n; i++) {
		wr[i].wr_id = c->posted + i + 1;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		if (i + 1 == n || wr[i].wr_id - c->signalled >= VB_SIGNAL) {
			wr[i].send_flags |= IBV_SEND_SIGNALED;
			c->signalled = wr[i].wr_id;
		}
	}
	if (ibv_post_send(c->qp, wr, &bad))
		return -EIO;
	c->posted += n;
	return 0;
}

/*
 * The credits owed, alone, once half the receives are owed.  A message of
 * credits takes a receive too, so it must grant many: the peer at its last
 * credit (the others spent) means that this end holds all the rest, read
 * or about to be, and so owes at least half; small grants could bounce
 * between two ends that both wait for two credits to send data.
 */
static void vb_credit(struct ps_tr_conn *c)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND_WITH_IMM };

	if (c->owed < VB_RX / 2 || !c->credits || c->posted - c->done >= VB_SQ || c->err ||
	    c->gone)
		return;
	wr.imm_data = htonl(c->owed);
	if (vb_post(c, &wr, 1))
		return;
	c->credits--;
	c->owed = 0;
}

/* A piece of a request: part of one of sendv()'s pieces. */
struct vb_piece {
	const char *p;
	size_t len;
	bool pool;
};

#define VB_PIECES	16

/*
 * The pieces of the next request from @iov's piece *@i at *@off on (moved
 * past them): at most VB_BUF bytes, in at most max_sge scatter entries
 * once plain pieces side by side are copied together; how many.
 */
static int vb_pieces(struct ps_tr_conn *c, const struct iovec *iov, int cnt, int *i,
		     size_t *off, struct vb_piece *pc, size_t *total)
{
	bool mr = c->dev->pool_mr;
	unsigned int nsge = 0;
	struct vb_piece q;
	int n = 0;

	*total = 0;
	while (*i < cnt && *total < VB_BUF && n < VB_PIECES) {
		q.p = (const char *)iov[*i].iov_base + *off;
		q.len = iov[*i].iov_len - *off;
		if (!q.len) {
			(*i)++;
			*off = 0;
			continue;
		}
		if (q.len > VB_BUF - *total)
			q.len = VB_BUF - *total;
		q.pool = mr && ps_pool_has(&c->x->pool, q.p);
		if (q.pool || !n || pc[n - 1].pool) {
			if (nsge == c->max_sge)
				break;
			nsge++;
		}
		pc[n++] = q;
		*total += q.len;
		*off += q.len;
	}
	return n;
}

/* Request @wr's scatter list from @pc: inline, or copies into the ring and pool buffers. */
static int vb_fill(struct ps_tr_conn *c, struct ibv_send_wr *wr, struct ibv_sge *sge,
		   const struct vb_piece *pc, int n, size_t total)
{
	struct vb_wr *w = &c->wrs[(c->posted + (wr - c->wrq)) % VB_SQ];
	size_t plain = 0, o = 0;
	long long at = 0;
	int k, ns = 0;

	for (k = 0; k < n; k++)
		plain += pc[k].pool ? 0 : pc[k].len;
	if (plain == total && total <= c->max_inline && n <= (int)c->max_sge) {
		/* Small and from ordinary memory: inline, no copy of ours. */
		for (k = 0; k < n; k++)
			sge[k] = (struct ibv_sge){ .addr = (uintptr_t)pc[k].p, .length = pc[k].len };
		wr->send_flags = IBV_SEND_INLINE;
		wr->num_sge = n;
		return 0;
	}
	plain = (plain + 63) & ~(size_t)63;
	if (plain && (at = ps_ring_alloc(&c->ring, plain)) < 0)
		return -EAGAIN;
	*w = (struct vb_wr){ .ring_off = at, .ring_len = plain };
	for (k = 0; k < n; k++) {
		if (pc[k].pool) {
			sge[ns++] = (struct ibv_sge){
				.addr = (uintptr_t)pc[k].p, .length = pc[k].len,
				.lkey = c->dev->pool_mr->lkey,
			};
			ps_pool_get(&c->x->pool, pc[k].p);
			w->pool[w->npool++] = pc[k].p;
			continue;
		}
		memcpy(c->tx + at + o, pc[k].p, pc[k].len);
		if (k && !pc[k - 1].pool)
			sge[ns - 1].length += pc[k].len;
		else
			sge[ns++] = (struct ibv_sge){
				.addr = (uintptr_t)(c->tx + at + o), .length = pc[k].len,
				.lkey = c->tx_mr->lkey,
			};
		o += pc[k].len;
	}
	wr->num_sge = ns;
	return 0;
}

static ssize_t vb_sendv(struct ps_tr_conn *c, const struct iovec *iov, int cnt)
{
	struct ibv_sge sge[VB_SQ][VB_SGE];
	struct vb_piece pc[VB_PIECES];
	size_t total, sent = 0, off = 0, ioff;
	unsigned int nwr = 0;
	int i = 0, ii, n;

	vb_poll(c);
	if (c->err)
		return c->err;
	if (c->gone)
		return -EPIPE;
	/* The last credit and request are kept for credits alone. */
	while (c->credits - nwr >= 2 && c->posted - c->done + nwr + 1 < VB_SQ) {
		ii = i;
		ioff = off;
		n = vb_pieces(c, iov, cnt, &ii, &ioff, pc, &total);
		if (!n)
			break;
		c->wrq[nwr] = (struct ibv_send_wr){
			.opcode = IBV_WR_SEND_WITH_IMM, .sg_list = sge[nwr],
			.imm_data = htonl(nwr ? 0 : c->owed),
		};
		if (vb_fill(c, &c->wrq[nwr], sge[nwr], pc, n, total))
			break;
		nwr++;
		sent += total;
		i = ii;
		off = ioff;
	}
	if (nwr) {
		if (vb_post(c, c->wrq, nwr)) {
			c->err = -EIO;
			return c->err;
		}
		c->credits -= nwr;
		c->owed = 0;
		c->blocked = 0;
		return sent;
	}
	c->blocked = c->tx_gen + 1;
	return -EAGAIN;
}

/* Post the read receives again, and tell the peer when it needs to know. */
static void vb_repost(struct ps_tr_conn *c)
{
	if (c->nrepost && !vb_post_recvs(c, c->repost, c->nrepost)) {
		c->owed += c->nrepost;
		c->nrepost = 0;
	}
	vb_credit(c);
}

static ssize_t vb_recv(struct ps_tr_conn *c, void *buf, size_t len)
{
	size_t got = 0, n;
	uint32_t b, blen;

	vb_poll(c);
	while (got < len && c->rxq_head != c->rxq_tail) {
		b = c->rxq[c->rxq_head % VB_RX];
		blen = c->rxq_len[c->rxq_head % VB_RX];
		n = blen - c->rx_pos < len - got ? blen - c->rx_pos : len - got;
		memcpy((char *)buf + got, c->rx + (size_t)b * VB_BUF + c->rx_pos, n);
		got += n;
		c->rx_pos += n;
		if (c->rx_pos < blen)
			break;
		c->rx_pos = 0;
		c->rxq_head++;
		c->repost[c->nrepost++] = b;
	}
	if (c->nrepost >= VB_REPOST || (c->rxq_head == c->rxq_tail && c->nrepost))
		vb_repost(c);
	if (got)
		return got;
	if (c->err)
		return c->err;
	return c->gone ? 0 : -EAGAIN;
}

static int vb_poll_fd(struct ps_tr_conn *c)
{
	return c->listener ? c->ch->fd : c->epfd;
}

static short vb_poll_events(struct ps_tr_conn *c __attribute__((unused)),
			    bool sending __attribute__((unused)))
{
	return POLLIN;
}

/*
 * Events are asked for again, then the CQ read once more (its event, if one
 * came meanwhile, left for poll() to see): none is missed.
 */
static bool vb_ready(struct ps_tr_conn *c)
{
	if (c->listener)
		return false;
	vb_poll(c);
	vb_repost(c);
	if (ibv_req_notify_cq(c->cq, 0) && !c->err)
		c->err = -EIO;
	vb_reap(c);
	return c->rxq_head != c->rxq_tail || c->err || c->gone ||
	       (c->blocked && c->blocked != c->tx_gen + 1);
}

static int vb_local_addr(struct ps_tr_conn *c, struct sockaddr_storage *ss)
{
	struct sockaddr *sa = rdma_get_local_addr(c->id);

	memset(ss, 0, sizeof(*ss));
	memcpy(ss, sa, sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
						   sizeof(struct sockaddr_in));
	return 0;
}

/* What was posted goes out (a while at most), then the peer sees the end. */
static void vb_close(struct ps_tr_conn *c)
{
	int64_t deadline = ps_now_ms() + VB_LINGER_MS;
	struct pollfd p;

	if (!c->listener) {
		p = (struct pollfd){ .fd = c->epfd, .events = POLLIN };
		while (c->done < c->posted && !c->err && !c->gone && ps_left_ms(deadline)) {
			if (!vb_ready(c))
				poll(&p, 1, ps_left_ms(deadline));
		}
		rdma_disconnect(c->id);
	}
	vb_free(c);
}

static void *vb_buf_alloc(struct ps_tr_ctx *x, size_t len)
{
	return ps_pool_alloc(&x->pool, len);
}

static bool vb_buf_put(struct ps_tr_ctx *x, void *p)
{
	return ps_pool_put_own(&x->pool, p);
}

const struct ps_transport ps_verbs = {
	.name = "verbs",
	.open = vb_open,
	.fini = vb_fini,
	.listen = vb_listen,
	.connect = vb_connect,
	.accept = vb_accept,
	.sendv = vb_sendv,
	.recv = vb_recv,
	.poll_fd = vb_poll_fd,
	.poll_events = vb_poll_events,
	.ready = vb_ready,
	.local_addr = vb_local_addr,
	.close = vb_close,
	.buf_alloc = vb_buf_alloc,
	.buf_put = vb_buf_put,
};
