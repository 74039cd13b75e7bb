// SPDX-License-Identifier: GPL-2.0
/*
 * rs_kqp_floor: the two QPs, connected through the in-kernel rdma_cm, and
 * their teardown.
 *
 * A listening id on the command's address takes the CONNECT REQUEST of
 * ep[0]'s id, which resolves that address and its route.  Each end's verbs
 * resources are created in its rdma_cm handler (ROUTE_RESOLVED for ep[0],
 * CONNECT_REQUEST for ep[1]), its receives posted, then it connects or
 * accepts; the command's thread waits for both ends' ESTABLISHED.
 * Handlers store an error and complete ep->established; they never destroy
 * an id the thread owns.  The thread tears everything down in a fixed
 * order, from any partial setup: the listener (its handlers have finished
 * when rdma_destroy_id() returns), each end's handlers stopped (closing,
 * under the handler lock), disconnect, the QPs (nothing is posted any
 * more: the run is over), the CQs, the buffers, the PDs, the ids.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <net/net_namespace.h>

#include <rdma/ib_cm.h>

#include "kqp.h"

/* Tell both ends' threads to stop; the first error is the run's. */
void kqp_abort(struct kqp_run *run, int error)
{
	cmpxchg(&run->error, 0, error);
	WRITE_ONCE(run->abort, true);
	wake_up(&run->ep[0].wq);
	wake_up(&run->ep[1].wq);
}

/* The device's completion event: the only thing it does is the wake-up. */
static void kqp_cq_event(struct ib_cq *cq, void *ctx)
{
	struct kqp_cq *kcq = ctx;

	WRITE_ONCE(kcq->event, true);
	wake_up(&kcq->ep->wq);
}

static int kqp_cq_create(struct kqp_ep *ep, struct kqp_cq *kcq, u32 entries)
{
	struct ib_cq_init_attr attr = { .cqe = entries };
	struct ib_cq *cq;

	kcq->ep = ep;
	cq = ib_create_cq(ep->id->device, kqp_cq_event, NULL, kcq, &attr);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	kcq->cq = cq;
	return 0;
}

static void kqp_buf_free(struct ib_device *dev, struct kqp_buf *buf, u32 size,
			 enum dma_data_direction dir)
{
	ib_dma_unmap_single(dev, buf->dma, size, dir);
	kfree(buf->data);
}

/* @n buffers, each allocated and mapped. */
static void kqp_bufs_free(struct ib_device *dev, struct kqp_buf *bufs, u32 n, u32 size,
			  enum dma_data_direction dir)
{
	u32 i;

	if (!bufs)
		return;
	for (i = 0; i < n; i++)
		kqp_buf_free(dev, &bufs[i], size, dir);
	kfree(bufs);
}

static struct kqp_buf *kqp_bufs_alloc(struct ib_device *dev, u32 n, u32 size,
				      enum dma_data_direction dir)
{
	struct kqp_buf *bufs;
	u32 i;

	bufs = kcalloc(n, sizeof(*bufs), GFP_KERNEL);
	if (!bufs)
		return NULL;
	for (i = 0; i < n; i++) {
		bufs[i].data = kzalloc(size, GFP_KERNEL);
		if (!bufs[i].data)
			goto out_free;
		bufs[i].dma = ib_dma_map_single(dev, bufs[i].data, size, dir);
		if (ib_dma_mapping_error(dev, bufs[i].dma)) {
			kfree(bufs[i].data);
			goto out_free;
		}
	}
	return bufs;

out_free:
	kqp_bufs_free(dev, bufs, i, size, dir);
	return NULL;
}

/* What kqp_ep_create_ib() created, in reverse order; any partial setup. */
static void kqp_ep_destroy_ib(struct kqp_ep *ep)
{
	struct ib_device *dev = ep->id->device;
	u32 size = ep->run->p.size;

	if (ep->id->qp)
		rdma_destroy_qp(ep->id);
	if (ep->scq.cq)
		ib_destroy_cq(ep->scq.cq);
	ep->scq.cq = NULL;
	if (ep->rcq.cq)
		ib_destroy_cq(ep->rcq.cq);
	ep->rcq.cq = NULL;
	kqp_bufs_free(dev, ep->tx, ep->nr_tx, size, DMA_TO_DEVICE);
	ep->tx = NULL;
	kqp_bufs_free(dev, ep->rx, ep->nr_rx, size, DMA_FROM_DEVICE);
	ep->rx = NULL;
	if (ep->pd)
		ib_dealloc_pd(ep->pd);
	ep->pd = NULL;
}

/* The QP, inline sends if the device takes @size bytes so. */
static int kqp_qp_create(struct kqp_ep *ep)
{
	struct ib_qp_init_attr attr = {
		.send_cq = ep->scq.cq,
		.recv_cq = ep->rcq.cq,
		.cap = {
			.max_send_wr = ep->nr_tx,
			.max_recv_wr = ep->nr_rx,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};
	u32 size = ep->run->p.size;
	int ret;

	if (size <= KQP_INLINE_MAX) {
		attr.cap.max_inline_data = size;
		ret = rdma_create_qp(ep->id, ep->pd, &attr);
		if (!ret) {
			ep->inline_data = attr.cap.max_inline_data >= size;
			return 0;
		}
		attr.cap.max_inline_data = 0;
	}
	ep->inline_data = false;
	return rdma_create_qp(ep->id, ep->pd, &attr);
}

/*
 * In @ep's rdma_cm handler, the id on its device: PD, CQs, buffers, the
 * QP, every receive posted.  A stream's sender posts no receives of its
 * own, nor does its receiver send: one buffer each for those.
 */
static int kqp_ep_create_ib(struct kqp_ep *ep)
{
	const struct kqp_params *p = &ep->run->p;
	struct ib_device *dev = ep->id->device;
	bool sender = ep == &ep->run->ep[0];
	u32 i, j, idx[KQP_BATCH];
	int ret, n;

	ep->nr_tx = p->kind == KQP_PINGPONG || sender ? p->window : 1;
	ep->nr_rx = p->kind == KQP_PINGPONG || !sender ? p->rx : 1;
	ep->signal = max(1U, ep->nr_tx / 2);
	if (ep->nr_tx > dev->attrs.max_qp_wr || ep->nr_rx > dev->attrs.max_qp_wr ||
	    ep->nr_tx > dev->attrs.max_cqe || ep->nr_rx > dev->attrs.max_cqe)
		return -EINVAL;

	ep->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(ep->pd)) {
		ret = PTR_ERR(ep->pd);
		ep->pd = NULL;
		return ret;
	}
	ret = kqp_cq_create(ep, &ep->scq, ep->nr_tx);
	if (ret)
		goto out_destroy;
	ret = kqp_cq_create(ep, &ep->rcq, ep->nr_rx);
	if (ret)
		goto out_destroy;
	ret = -ENOMEM;
	ep->tx = kqp_bufs_alloc(dev, ep->nr_tx, p->size, DMA_TO_DEVICE);
	ep->rx = kqp_bufs_alloc(dev, ep->nr_rx, p->size, DMA_FROM_DEVICE);
	if (!ep->tx || !ep->rx)
		goto out_destroy;
	ret = kqp_qp_create(ep);
	if (ret)
		goto out_destroy;
	/* An RNR NAK's wait is 655 ms unless set: 0.64 ms, as perftest's. */
	ret = rdma_set_min_rnr_timer(ep->id, IB_RNR_TIMER_000_64);
	if (ret)
		goto out_destroy;
	for (i = 0; i < ep->nr_rx; i += n) {
		n = min_t(u32, KQP_BATCH, ep->nr_rx - i);
		for (j = 0; j < n; j++)
			idx[j] = i + j;
		ret = kqp_post_recvs(ep, idx, n);
		if (ret)
			goto out_destroy;
	}
	return 0;

out_destroy:
	kqp_ep_destroy_ib(ep);
	return ret;
}

static void kqp_conn_param(struct rdma_conn_param *param)
{
	memset(param, 0, sizeof(*param));
	param->retry_count = 7;
	param->rnr_retry_count = 7;	/* for ever: the receiver reposts */
}

/* @ep failed to connect, or its connection went: the run stops. */
static void kqp_ep_fail(struct kqp_ep *ep, int error)
{
	if (!ep->cm_error)
		ep->cm_error = error;
	complete(&ep->established);
	kqp_abort(ep->run, error);
}

/* The listener's handler, on the connecting end's REQ: ep[1] accepts it. */
static int kqp_cm_request(struct kqp_ep *ep, struct rdma_cm_id *id)
{
	struct rdma_conn_param param;
	int ret;

	if (ep->id || READ_ONCE(ep->run->abort)) {
		rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		return 1;	/* rdma_cm destroys the id */
	}
	id->context = ep;
	ep->id = id;
	ret = kqp_ep_create_ib(ep);
	if (!ret) {
		kqp_conn_param(&param);
		ret = rdma_accept(id, &param);	/* rejects if it fails */
		if (ret)
			kqp_ep_destroy_ib(ep);
	} else {
		rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	}
	if (!ret)
		return 0;
	ep->id = NULL;
	kqp_ep_fail(ep, ret);
	return 1;
}

static int kqp_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kqp_ep *ep = id->context;
	struct rdma_conn_param param;
	int ret = 0;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return kqp_cm_request(ep, id);
	if (id != ep->id) {
		/* The listener (its context is ep[1]). */
		if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
			kqp_abort(ep->run, -ENODEV);
		return 0;
	}
	if (ep->closing)
		return 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, KQP_CM_TIMEOUT_MS);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = kqp_ep_create_ib(ep);
		if (ret)
			break;
		kqp_conn_param(&param);
		ret = rdma_connect_locked(id, &param);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		complete(&ep->established);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		ret = -EHOSTUNREACH;
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
		ret = -ETIMEDOUT;
		break;
	case RDMA_CM_EVENT_REJECTED:
		ret = -ECONNREFUSED;
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* The thread stops and destroys the id, which removal waits for. */
		ret = -ENODEV;
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		ret = -ECONNRESET;
		break;
	default:
		break;
	}
	if (ret)
		kqp_ep_fail(ep, ret);
	return 0;
}

static struct rdma_cm_id *kqp_create_id(struct kqp_ep *ep)
{
	return rdma_create_id(&init_net, kqp_cm_handler, ep, RDMA_PS_TCP, IB_QPT_RC);
}

static int kqp_wait_established(struct kqp_ep *ep)
{
	long left;

	left = wait_for_completion_interruptible_timeout(&ep->established,
							 msecs_to_jiffies(3 * KQP_CM_TIMEOUT_MS));
	if (left < 0)
		return -EINTR;
	if (!left)
		return -ETIMEDOUT;
	return ep->cm_error;
}

/* Listen, connect, wait until both ends are up. */
int kqp_connect(struct kqp_run *run)
{
	struct sockaddr *addr = (struct sockaddr *)&run->p.addr;
	struct rdma_cm_id *id;
	int i, ret;

	for (i = 0; i < 2; i++) {
		run->ep[i].run = run;
		init_waitqueue_head(&run->ep[i].wq);
		init_completion(&run->ep[i].established);
	}

	run->stage = "listen";
	id = kqp_create_id(&run->ep[1]);
	if (IS_ERR(id))
		return PTR_ERR(id);
	run->listen = id;
	ret = rdma_bind_addr(id, addr);
	if (!ret)
		ret = rdma_listen(id, 1);
	if (ret)
		return ret;

	run->stage = "connect";
	id = kqp_create_id(&run->ep[0]);
	if (IS_ERR(id))
		return PTR_ERR(id);
	run->ep[0].id = id;
	ret = rdma_resolve_addr(id, NULL, addr, KQP_CM_TIMEOUT_MS);
	if (ret)
		return ret;
	ret = kqp_wait_established(&run->ep[0]);
	if (ret)
		return ret;
	run->stage = "accept";
	return kqp_wait_established(&run->ep[1]);
}

/* Any partial setup of kqp_connect(); the run is over. */
void kqp_disconnect(struct kqp_run *run)
{
	int i;

	if (run->listen)
		rdma_destroy_id(run->listen);
	run->listen = NULL;
	/* ep[1]'s id, if any, is ours now. */
	for (i = 0; i < 2; i++) {
		struct kqp_ep *ep = &run->ep[i];

		if (!ep->id)
			continue;
		rdma_lock_handler(ep->id);
		ep->closing = true;
		rdma_unlock_handler(ep->id);
	}
	for (i = 0; i < 2; i++) {
		if (run->ep[i].id && run->ep[i].id->qp)
			rdma_disconnect(run->ep[i].id);
	}
	for (i = 0; i < 2; i++) {
		struct kqp_ep *ep = &run->ep[i];

		if (!ep->id)
			continue;
		kqp_ep_destroy_ib(ep);
		rdma_destroy_id(ep->id);
		ep->id = NULL;
	}
}
