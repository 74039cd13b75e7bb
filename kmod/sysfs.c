// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: sysfs.
 *
 *   /sys/class/misc/rdmashare/abi_version
 *   /sys/class/misc/rdmashare/<tunable> (tunables.c)
 *   /sys/class/misc/rdmashare/devices/<ibdev>/{name,num_ports}
 *
 * Documented in Documentation/ABI/testing/sysfs-class-misc-rdmashare.
 */
#include <linux/device.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <rdma/ib_verbs.h>
#include <uapi/linux/rdmashare.h>

#include "rdmashare.h"

static struct kobject *rs_devices_kobj;

static ssize_t abi_version_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", RDMASHARE_ABI_VERSION);
}
static DEVICE_ATTR_RO(abi_version);

static struct attribute *rs_misc_attrs[] = {
	&dev_attr_abi_version.attr,
	NULL,
};

static const struct attribute_group rs_misc_group = {
	.attrs = rs_misc_attrs,
};

const struct attribute_group *rs_misc_groups[] = {
	&rs_misc_group,
	&rs_tunables_group,
	NULL,
};

/* Per RDMA device.  kobject_del() in rs_sysfs_del_device() waits for readers,
 * so ->ibdev is valid in every show().
 */
#define to_rs_device(k) container_of(k, struct rs_device, kobj)

struct rs_dev_attr {
	struct attribute attr;
	ssize_t (*show)(struct rs_device *rdev, char *buf);
};

static ssize_t name_show(struct rs_device *rdev, char *buf)
{
	return sysfs_emit(buf, "%s\n", dev_name(&rdev->ibdev->dev));
}

static ssize_t num_ports_show(struct rs_device *rdev, char *buf)
{
	return sysfs_emit(buf, "%u\n", rdev->ibdev->phys_port_cnt);
}

#define RS_DEV_ATTR_RO(_name) \
	static struct rs_dev_attr rs_dev_attr_##_name = __ATTR_RO(_name)

RS_DEV_ATTR_RO(name);
RS_DEV_ATTR_RO(num_ports);

static struct attribute *rs_dev_attrs[] = {
	&rs_dev_attr_name.attr,
	&rs_dev_attr_num_ports.attr,
	NULL,
};
ATTRIBUTE_GROUPS(rs_dev);

static ssize_t rs_dev_attr_show(struct kobject *kobj, struct attribute *attr,
				char *buf)
{
	struct rs_dev_attr *a = container_of(attr, struct rs_dev_attr, attr);

	return a->show(to_rs_device(kobj), buf);
}

static const struct sysfs_ops rs_dev_sysfs_ops = {
	.show = rs_dev_attr_show,
};

static void rs_dev_release(struct kobject *kobj)
{
	kfree(to_rs_device(kobj));
}

static const struct kobj_type rs_dev_ktype = {
	.release = rs_dev_release,
	.sysfs_ops = &rs_dev_sysfs_ops,
	.default_groups = rs_dev_groups,
};

/* From here on rdev is freed by rs_sysfs_put_device(), never by kfree(). */
void rs_sysfs_init_device(struct rs_device *rdev)
{
	kobject_init(&rdev->kobj, &rs_dev_ktype);
}

void rs_sysfs_put_device(struct rs_device *rdev)
{
	kobject_put(&rdev->kobj);
}

/* Called with rs_devices_lock held, so a rename cannot race with it. */
int rs_sysfs_add_device(struct rs_device *rdev)
{
	return kobject_add(&rdev->kobj, rs_devices_kobj, "%s",
			   dev_name(&rdev->ibdev->dev));
}

/* Removes the directory; returns once no show() runs any more. */
void rs_sysfs_del_device(struct rs_device *rdev)
{
	kobject_del(&rdev->kobj);
}

void rs_sysfs_rename_device(struct rs_device *rdev)
{
	int ret;

	ret = kobject_rename(&rdev->kobj, dev_name(&rdev->ibdev->dev));
	if (ret)
		pr_warn("rdmashare: cannot rename %s in sysfs: %d\n",
			kobject_name(&rdev->kobj), ret);
}

int rs_sysfs_init(struct device *misc_dev)
{
	rs_devices_kobj = kobject_create_and_add("devices", &misc_dev->kobj);
	return rs_devices_kobj ? 0 : -ENOMEM;
}

void rs_sysfs_exit(void)
{
	kobject_put(rs_devices_kobj);
}
