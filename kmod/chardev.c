// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: the /dev/rdmashare character device and its ioctl dispatch.
 *
 * Every command takes a size-first struct (uapi/linux/rdmashare.h).  The
 * dispatch table records, per command, the kernel's struct size and the
 * smallest size user space may pass; copy_struct_from_user() zero-extends
 * older callers and rejects unknown non-zero tail bytes of newer ones.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/uaccess.h>
#include <uapi/linux/rdmashare.h>

#include "rdmashare.h"

/* Largest argument size accepted (documented in the uapi header). */
#define RS_IOCTL_MAX_SIZE	4096

union rs_ioctl_buf {
	__u32 size;
	struct rdmashare_query query;
};

struct rs_ioctl_op {
	unsigned int size;
	unsigned int min_size;
	int (*execute)(struct file *filp, union rs_ioctl_buf *buf);
};

static int rs_ioctl_query(struct file *filp, union rs_ioctl_buf *buf)
{
	struct rdmashare_query *q = &buf->query;

	if (q->flags)
		return -EINVAL;

	q->abi_version = RDMASHARE_ABI_VERSION;
	q->num_devices = rs_device_count();
	q->features = 0;
	return 0;
}

#define RS_IOCTL_OP(_nr, _fn, _struct, _last)				\
	[_nr] = {					\
		.size = sizeof(_struct),				\
		.min_size = offsetofend(_struct, _last),		\
		.execute = _fn,						\
	}

static const struct rs_ioctl_op rs_ioctl_ops[] = {
	RS_IOCTL_OP(RDMASHARE_CMD_QUERY, rs_ioctl_query,
		    struct rdmashare_query, features),
};

static long rs_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	const struct rs_ioctl_op *op;
	union rs_ioctl_buf buf;
	unsigned int nr;
	u32 user_size;
	int ret;

	nr = _IOC_NR(cmd);
	if (cmd != _IO(RDMASHARE_TYPE, nr) || nr >= ARRAY_SIZE(rs_ioctl_ops))
		return -ENOTTY;
	op = &rs_ioctl_ops[array_index_nospec(nr, ARRAY_SIZE(rs_ioctl_ops))];
	if (!op->execute)
		return -ENOTTY;

	if (get_user(user_size, (u32 __user *)uarg))
		return -EFAULT;
	if (user_size < op->min_size)
		return -EINVAL;
	/* Bound the zero check of a newer caller's tail. */
	if (user_size > RS_IOCTL_MAX_SIZE)
		return -E2BIG;

	ret = copy_struct_from_user(&buf, op->size, uarg, user_size);
	if (ret)
		return ret;

	ret = op->execute(filp, &buf);
	if (ret)
		return ret;

	if (copy_to_user(uarg, &buf, min_t(u32, user_size, op->size)))
		return -EFAULT;
	return 0;
}

static int rs_open(struct inode *inode, struct file *filp)
{
	return nonseekable_open(inode, filp);
}

static int rs_release(struct inode *inode, struct file *filp)
{
	return 0;
}

static const struct file_operations rs_fops = {
	.owner = THIS_MODULE,
	.open = rs_open,
	.release = rs_release,
	.unlocked_ioctl = rs_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

struct miscdevice rs_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "rdmashare",
	.fops = &rs_fops,
	.groups = rs_misc_groups,
	.mode = 0666,
};

int rs_chardev_init(void)
{
	return misc_register(&rs_miscdev);
}

void rs_chardev_exit(void)
{
	misc_deregister(&rs_miscdev);
}
