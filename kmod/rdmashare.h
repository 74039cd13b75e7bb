/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: internal declarations shared by the module's files.
 */
#ifndef _RDMASHARE_H
#define _RDMASHARE_H

#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>

struct ib_device;
struct ib_pd;

/**
 * struct rs_device - one RDMA device the module uses
 * @ibdev: the ib_core device; valid until rs_ib_remove() returns
 * @pd: protection domain for everything rdmashare creates on @ibdev
 * @list: entry in rs_devices, under rs_devices_lock
 * @kobj: /sys/class/misc/rdmashare/devices/<name>
 */
struct rs_device {
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct list_head list;
	struct kobject kobj;
};

/* device.c: ib_client tracking RDMA devices as they come and go */
extern struct mutex rs_devices_lock;
extern struct list_head rs_devices;
int rs_device_count(void);
int rs_ib_init(void);
void rs_ib_exit(void);

/* sysfs.c: attributes of the misc device and of each RDMA device */
extern const struct attribute_group *rs_misc_groups[];
int rs_sysfs_init(struct device *misc_dev);
void rs_sysfs_exit(void);
void rs_sysfs_init_device(struct rs_device *rdev);
void rs_sysfs_put_device(struct rs_device *rdev);
int rs_sysfs_add_device(struct rs_device *rdev);
void rs_sysfs_del_device(struct rs_device *rdev);
void rs_sysfs_rename_device(struct rs_device *rdev);

/* chardev.c: /dev/rdmashare */
extern struct miscdevice rs_miscdev;
int rs_chardev_init(void);
void rs_chardev_exit(void);

#endif /* _RDMASHARE_H */
