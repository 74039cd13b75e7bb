// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: one shared RDMA transport for every application on a host.
 *
 * Module entry points.  The order matters: /dev/rdmashare and its sysfs
 * directory exist before the ib_client is registered, because adding a device
 * creates its sysfs entry below the misc device; on exit the client goes
 * first, so every device is torn down before the directory disappears.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <uapi/linux/rdmashare.h>

#include "acfile.h"
#include "rdmashare.h"
#include "transport.h"

static int __init rs_init(void)
{
	int ret;

	ret = rs_params_check();
	if (ret)
		return ret;

	ret = rs_acfile_cache_init();
	if (ret)
		return ret;

	ret = rs_chardev_init();
	if (ret)
		goto out_cache_exit;

	ret = rs_sysfs_init(rs_miscdev.this_device);
	if (ret)
		goto out_chardev_exit;

	rs_debugfs_init();
	ret = rs_poll_init();
	if (ret)
		goto out_debugfs_exit;

	ret = rs_cm_init();
	if (ret)
		goto out_poll_exit;

	ret = rs_ib_init();
	if (ret)
		goto out_cm_exit;

	ret = rs_cm_listen();
	if (ret)
		goto out_ib_exit;

	pr_info("loaded, ABI version %d\n", RDMASHARE_ABI_VERSION);
	return 0;

out_ib_exit:
	rs_ib_exit();
out_cm_exit:
	rs_cm_exit();
out_poll_exit:
	rs_poll_exit();
out_debugfs_exit:
	rs_debugfs_exit();
	rs_sysfs_exit();
out_chardev_exit:
	rs_chardev_exit();
out_cache_exit:
	rs_acfile_cache_exit();
	return ret;
}

static void __exit rs_exit(void)
{
	rs_cm_unlisten();
	rs_ib_exit();
	rs_cm_exit();
	rs_poll_exit();
	rs_debugfs_exit();
	rs_sysfs_exit();
	rs_chardev_exit();
	rs_acfile_cache_exit();
	pr_info("unloaded\n");
}

module_init(rs_init);
module_exit(rs_exit);

MODULE_AUTHOR("The rdmashare developers");
MODULE_DESCRIPTION("Shared RDMA transport: many connections over few QPs");
MODULE_LICENSE("GPL");
