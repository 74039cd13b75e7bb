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

static int rs_ib_add(struct ib_device *ibdev)
{
	struct rs_device *rdev;
	int ret;

	rdev = kzalloc(sizeof(*rdev), GFP_KERNEL);
	if (!rdev)
		return -ENOMEM;
	rdev->ibdev = ibdev;
	INIT_LIST_HEAD(&rdev->list);
	rs_sysfs_init_device(rdev);

	rdev->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(rdev->pd)) {
		ret = PTR_ERR(rdev->pd);
		pr_err("%s: cannot allocate a PD: %d\n", dev_name(&ibdev->dev), ret);
		goto out_put;
	}

	mutex_lock(&rs_devices_lock);
	ret = rs_sysfs_add_device(rdev);
	if (ret) {
		mutex_unlock(&rs_devices_lock);
		goto out_dealloc_pd;
	}
	list_add_tail(&rdev->list, &rs_devices);
	ib_set_client_data(ibdev, &rs_ib_client, rdev);
	mutex_unlock(&rs_devices_lock);

	pr_info("%s: added\n", dev_name(&ibdev->dev));
	return 0;

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
	rs_sysfs_del_device(rdev);
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
