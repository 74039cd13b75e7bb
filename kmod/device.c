// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: RDMA device tracking.
 *
 * An ib_client follows RDMA devices as they are registered and unregistered.
 * Each device gets a struct rs_device holding the protection domain that all
 * of rdmashare's verbs objects on that device use.  ib_core calls
 * rs_ib_remove() before the device goes away; everything rdmashare created on
 * the device must be released before it returns
 * (Documentation/infiniband/core_locking.rst).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "rdmashare.h"
#include "transport.h"
#include "zcopy.h"

/* Protects rs_devices and the sysfs names of its entries. */
DEFINE_MUTEX(rs_devices_lock);
LIST_HEAD(rs_devices);

static struct ib_client rs_ib_client;

int rs_device_count(void)
{
	struct rs_device *rdev;
	int n = 0;

	mutex_lock(&rs_devices_lock);
	list_for_each_entry(rdev, &rs_devices, list)
		n++;
	mutex_unlock(&rs_devices_lock);
	return n;
}

struct rs_device *rs_device_get_by_ibdev(struct ib_device *ibdev)
{
	return ib_get_client_data(ibdev, &rs_ib_client);
}

/*
 * A reference to @rdev's memory: its fields stay readable after the device
 * is removed (rs_ib_remove() has released its verbs objects by then).
 */
struct rs_device *rs_device_get(struct rs_device *rdev)
{
	kobject_get(&rdev->kobj);
	return rdev;
}

void rs_device_put(struct rs_device *rdev)
{
	rs_sysfs_put_device(rdev);
}

int rs_device_post_recv(struct rs_device *rdev, struct rs_rx_buf *rx)
{
	struct ib_sge sge = {
		.addr = rx->dma,
		.length = rdev->rx_buf_size,
		.lkey = rdev->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &rx->cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	ib_dma_sync_single_for_device(rdev->ibdev, rx->dma, rdev->rx_buf_size,
				      DMA_FROM_DEVICE);
	return ib_post_srq_recv(rdev->srq, &wr, NULL);
}

static void rs_rx_free(struct rs_device *rdev, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		ib_dma_unmap_single(rdev->ibdev, rdev->rx_bufs[i].dma,
				    rdev->rx_buf_size, DMA_FROM_DEVICE);
		kfree(rdev->rx_bufs[i].buf);
	}
	kvfree(rdev->rx_bufs);
	rdev->rx_bufs = NULL;
}

static struct ib_srq *rs_srq_alloc(struct rs_device *rdev)
{
	struct ib_srq_init_attr attr = {
		.attr = { .max_wr = rdev->srq_size, .max_sge = 1 },
		.srq_type = IB_SRQT_BASIC,
	};

	return ib_create_srq(rdev->pd, &attr);
}

/* Post every buffer; the SRQ is new, no QP uses it yet. */
static int rs_srq_fill(struct rs_device *rdev)
{
	int ret;
	u32 i;

	atomic_set(&rdev->rx_posted, 0);
	for (i = 0; i < rdev->srq_size; i++) {
		ret = rs_device_post_recv(rdev, &rdev->rx_bufs[i]);
		if (ret)
			return ret;
		atomic_inc(&rdev->rx_posted);
	}
	return 0;
}

/*
 * The SRQ and its buffers; undone by rs_srq_destroy().  Receive completions
 * arrive on the CQ of the QP that took the buffer.
 */
static int rs_srq_create(struct rs_device *rdev)
{
	struct ib_device *ibdev = rdev->ibdev;
	u32 n;
	int ret;

	if (!ibdev->attrs.max_srq || !ibdev->attrs.max_srq_wr) {
		pr_info("%s: no SRQ support, not used\n", dev_name(&ibdev->dev));
		return -EOPNOTSUPP;
	}
	rdev->srq_size = min_t(u32, READ_ONCE(rs_srq_size), ibdev->attrs.max_srq_wr);
	rdev->rx_buf_size = RS_HDR_LEN + rs_chunk_size;

	rdev->srq = rs_srq_alloc(rdev);
	if (IS_ERR(rdev->srq)) {
		ret = PTR_ERR(rdev->srq);
		rdev->srq = NULL;
		return ret;
	}

	ret = -ENOMEM;
	rdev->rx_bufs = kvcalloc(rdev->srq_size, sizeof(*rdev->rx_bufs), GFP_KERNEL);
	if (!rdev->rx_bufs)
		goto out_destroy_srq;
	for (n = 0; n < rdev->srq_size; n++) {
		struct rs_rx_buf *rx = &rdev->rx_bufs[n];

		rx->rdev = rdev;
		rx->cqe.done = rs_rx_done;
		rx->buf = kmalloc(rdev->rx_buf_size, GFP_KERNEL);
		if (!rx->buf)
			goto out_free_bufs;
		rx->dma = ib_dma_map_single(ibdev, rx->buf, rdev->rx_buf_size,
					    DMA_FROM_DEVICE);
		if (ib_dma_mapping_error(ibdev, rx->dma)) {
			kfree(rx->buf);
			goto out_free_bufs;
		}
	}
	ret = rs_srq_fill(rdev);
	if (ret)
		goto out_free_bufs;
	return 0;

out_free_bufs:
	/* No QP uses the SRQ yet: its posted buffers never complete. */
	ib_destroy_srq(rdev->srq);
	rdev->srq = NULL;
	rs_rx_free(rdev, n);
	return ret;
out_destroy_srq:
	ib_destroy_srq(rdev->srq);
	rdev->srq = NULL;
	return ret;
}

/*
 * Every QP on the device is gone, and with it every completion that could
 * repost a buffer: the posted buffers just go with the SRQ.
 */
static void rs_srq_destroy(struct rs_device *rdev)
{
	ib_destroy_srq(rdev->srq);
	rdev->srq = NULL;
	rs_rx_free(rdev, rdev->srq_size);
}

/*
 * The device's last QP was destroyed: a new SRQ with every buffer posted.
 *
 * A QP that dies in the middle of a message received into an SRQ buffer
 * may keep that buffer without ever completing it (rxe's flush_recv_queue()
 * flushes only a QP's own RQ and drops the SRQ WQE it was filling), and a
 * receive completion still in a CQ when rs_cq_destroy() runs is dropped too:
 * such buffers count as posted and are gone.  With no QP left, no QP or
 * completion handler holds any buffer, so every one of them goes back.
 * Until then, each QP that died mid-message costs at most one buffer.  If a
 * new SRQ cannot be had, the old one stays as it is.
 */
static void rs_srq_renew(struct rs_device *rdev)
{
	struct ib_srq *srq;
	int ret;

	lockdep_assert_held(&rs_peers_lock);
	srq = rs_srq_alloc(rdev);
	if (IS_ERR(srq)) {
		pr_warn_ratelimited("%s: cannot renew the SRQ: %ld\n",
				    dev_name(&rdev->ibdev->dev), PTR_ERR(srq));
		return;
	}
	ib_destroy_srq(rdev->srq);
	rdev->srq = srq;
	ret = rs_srq_fill(rdev);
	if (ret)
		pr_warn_ratelimited("%s: SRQ renewed with %d of %u buffers: %d\n",
				    dev_name(&rdev->ibdev->dev),
				    atomic_read(&rdev->rx_posted), rdev->srq_size, ret);
	rs_stat_add(&rdev->stats, RS_STAT_SRQ_RENEWALS, 1);
}

/* A QP of the device was destroyed (after its SQ was drained). */
void rs_device_qp_destroyed(struct rs_device *rdev)
{
	mutex_lock(&rs_peers_lock);
	if (atomic_dec_and_test(&rdev->nr_qps) && !rdev->removing)
		rs_srq_renew(rdev);
	mutex_unlock(&rs_peers_lock);
}

static int rs_ib_add(struct ib_device *ibdev)
{
	struct rs_device *rdev;
	int ret;

	rdev = kzalloc(sizeof(*rdev), GFP_KERNEL);
	if (!rdev)
		return -ENOMEM;
	if (rs_stats_init(&rdev->stats)) {
		kfree(rdev);
		return -ENOMEM;
	}
	rdev->ibdev = ibdev;
	INIT_LIST_HEAD(&rdev->list);
	INIT_LIST_HEAD(&rdev->dma_maps);
	atomic_set(&rdev->nr_qps, 0);
	rs_sysfs_init_device(rdev);

	rdev->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(rdev->pd)) {
		ret = PTR_ERR(rdev->pd);
		pr_err("%s: cannot allocate a PD: %d\n", dev_name(&ibdev->dev), ret);
		goto out_put;
	}

	ret = rs_srq_create(rdev);
	if (ret)
		goto out_dealloc_pd;
	ret = rs_park_init(rdev);
	if (ret)
		goto out_destroy_srq;

	mutex_lock(&rs_devices_lock);
	ret = rs_sysfs_add_device(rdev);
	if (ret) {
		mutex_unlock(&rs_devices_lock);
		goto out_park_exit;
	}
	list_add_tail(&rdev->list, &rs_devices);
	ib_set_client_data(ibdev, &rs_ib_client, rdev);
	mutex_unlock(&rs_devices_lock);

	pr_info("%s: added\n", dev_name(&ibdev->dev));
	return 0;

out_park_exit:
	rs_park_exit(rdev);
out_destroy_srq:
	rs_srq_destroy(rdev);
out_dealloc_pd:
	ib_dealloc_pd(rdev->pd);
out_put:
	rs_sysfs_put_device(rdev);
	return ret;
}

static void rs_ib_remove(struct ib_device *ibdev, void *client_data)
{
	struct rs_device *rdev = client_data;

	mutex_lock(&rs_devices_lock);
	list_del(&rdev->list);
	mutex_unlock(&rs_devices_lock);

	pr_info("%s: removed\n", dev_name(&ibdev->dev));
	/*
	 * No new QP on the device from now on (rs_qp_create_ib()); then every
	 * QP on it, with its ACs, goes.  ib_core forgets @rdev only after this
	 * returns, when it is freed: a lookup from now on finds nothing.
	 */
	mutex_lock(&rs_peers_lock);
	rdev->removing = true;
	ib_set_client_data(ibdev, &rs_ib_client, NULL);
	mutex_unlock(&rs_peers_lock);
	rs_qps_down_device(rdev);
	rs_zc_device_gone(rdev);
	rs_dma_maps_device_gone(rdev);
	rs_park_exit(rdev);
	rs_sysfs_del_device(rdev);
	rs_srq_destroy(rdev);
	ib_dealloc_pd(rdev->pd);
	rs_sysfs_put_device(rdev);
}

static void rs_ib_rename(struct ib_device *ibdev, void *client_data)
{
	struct rs_device *rdev = client_data;

	mutex_lock(&rs_devices_lock);
	rs_sysfs_rename_device(rdev);
	mutex_unlock(&rs_devices_lock);
}

static struct ib_client rs_ib_client = {
	.name = KBUILD_MODNAME,
	.add = rs_ib_add,
	.remove = rs_ib_remove,
	.rename = rs_ib_rename,
};

int rs_ib_init(void)
{
	return ib_register_client(&rs_ib_client);
}

void rs_ib_exit(void)
{
	ib_unregister_client(&rs_ib_client);
}
