// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: the /dev/rdmashare character device and its ioctl dispatch.
 *
 * Every command takes a size-first struct (uapi/linux/rdmashare.h).  The
 * dispatch table records, per command, the kernel's struct size and the
 * smallest size user space may pass; copy_struct_from_user() zero-extends
 * older callers and rejects unknown non-zero tail bytes of newer ones.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/nospec.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>
#include <uapi/linux/rdmashare.h>

#include "ioctl.h"
#include "rdmashare.h"
#include "sched.h"

/* Largest argument size accepted (documented in the uapi header). */
#define RS_IOCTL_MAX_SIZE	4096

static int rs_ioctl_query(struct file *filp, union rs_ioctl_buf *buf, struct rs_new_file *nf)
{
	struct rdmashare_query *q = &buf->query;

	if (q->flags)
		return -EINVAL;

	q->abi_version = RDMASHARE_ABI_VERSION;
	q->num_devices = rs_device_count();
	q->features = RDMASHARE_FEAT_RINGS | RDMASHARE_FEAT_AC | RDMASHARE_FEAT_SCHED |
		      RDMASHARE_FEAT_SHUTDOWN | RDMASHARE_FEAT_AC_STATS |
		      RDMASHARE_FEAT_DISCARD | RDMASHARE_FEAT_CQ_LIMITS |
		      RDMASHARE_FEAT_SQ_WAKEUP | RDMASHARE_FEAT_CQ_OVERFLOW |
		      RDMASHARE_FEAT_SLOT_SIZE | RDMASHARE_FEAT_AC_FILES |
		      RDMASHARE_FEAT_LISTEN_FD | RDMASHARE_FEAT_CONNECT_NONBLOCK |
		      RDMASHARE_FEAT_MSG | RDMASHARE_FEAT_FILE_SET |
		      RDMASHARE_FEAT_FILE_TIMEO | RDMASHARE_FEAT_LISTEN_ADDR |
		      RDMASHARE_FEAT_LISTEN_REUSEPORT | RDMASHARE_FEAT_CONNECT_PORT;
	return 0;
}

static int rs_ioctl_setup(struct file *filp, union rs_ioctl_buf *buf, struct rs_new_file *nf)
{
	return rs_rings_setup(filp->private_data, &buf->setup);
}

static int rs_ioctl_enter(struct file *filp, union rs_ioctl_buf *buf, struct rs_new_file *nf)
{
	return rs_enter(filp->private_data, &buf->enter);
}

static int rs_ioctl_listen(struct file *filp, union rs_ioctl_buf *buf, struct rs_new_file *nf)
{
	/* A listening file has a file of its own: this one is only the door. */
	if (buf->listen.flags & RDMASHARE_LISTEN_FD)
		return rs_lfile_listen(&buf->listen, nf);
	return rs_ac_listen(filp->private_data, &buf->listen);
}

static int rs_ioctl_connect(struct file *filp, union rs_ioctl_buf *buf, struct rs_new_file *nf)
{
	return rs_ac_connect(filp->private_data, &buf->connect, nf);
}

static int rs_ioctl_accept(struct file *filp, union rs_ioctl_buf *buf, struct rs_new_file *nf)
{
	return rs_ac_accept(filp->private_data, &buf->accept, nf);
}

static int rs_ioctl_ac_set(struct file *filp, union rs_ioctl_buf *buf, struct rs_new_file *nf)
{
	return rs_ac_set(filp->private_data, &buf->ac_set);
}

static int rs_ioctl_ac_stats(struct file *filp, union rs_ioctl_buf *buf, struct rs_new_file *nf)
{
	return rs_ac_stats(filp->private_data, &buf->ac_stats);
}

static const struct rs_ioctl_op rs_ioctl_ops[] = {
	RS_IOCTL_OP(RDMASHARE_CMD_QUERY, rs_ioctl_query,
		    struct rdmashare_query, features),
	RS_IOCTL_OP(RDMASHARE_CMD_SETUP, rs_ioctl_setup,
		    struct rdmashare_setup, resv),
	RS_IOCTL_OP(RDMASHARE_CMD_ENTER, rs_ioctl_enter,
		    struct rdmashare_enter, submitted),
	/* @local came after the listening file's fields. */
	RS_IOCTL_OP_GREW(RDMASHARE_CMD_LISTEN, rs_ioctl_listen,
			 struct rdmashare_listen, resv,
			 offsetofend(struct rdmashare_listen, rx_slots)),
	/* @sock came after the AC file's fields. */
	RS_IOCTL_OP_GREW(RDMASHARE_CMD_CONNECT, rs_ioctl_connect,
			 struct rdmashare_connect, ac,
			 offsetofend(struct rdmashare_connect, file)),
	RS_IOCTL_OP(RDMASHARE_CMD_ACCEPT, rs_ioctl_accept,
		    struct rdmashare_accept, peer),
	RS_IOCTL_OP(RDMASHARE_CMD_AC_SET, rs_ioctl_ac_set,
		    struct rdmashare_ac_set, resv),
	RS_IOCTL_OP(RDMASHARE_CMD_AC_STATS, rs_ioctl_ac_stats,
		    struct rdmashare_ac_stats, resv),
};

/*
 * Run command @cmd of @ops: copy its struct in (zero-extended, a newer
 * caller's tail checked for zeros), execute, copy it out, and install the
 * descriptor of a file it made once user space has its number.
 */
long rs_ioctl_run(struct file *filp, unsigned int cmd, unsigned long arg,
		  const struct rs_ioctl_op *ops, unsigned int nr_ops)
{
	void __user *uarg = (void __user *)arg;
	struct rs_new_file nf = { .fd = -1 };
	const struct rs_ioctl_op *op;
	union rs_ioctl_buf buf;
	unsigned int nr;
	u32 user_size;
	int ret;

	nr = _IOC_NR(cmd);
	if (cmd != _IO(RDMASHARE_TYPE, nr) || nr >= nr_ops)
		return -ENOTTY;
	op = &ops[array_index_nospec(nr, nr_ops)];
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
	nf.whole = user_size >= op->whole_size;

	ret = op->execute(filp, &buf, &nf);
	if (ret)
		return ret;

	if (copy_to_user(uarg, &buf, min_t(u32, user_size, op->size))) {
		/* Never seen: the AC file closes its AC. */
		if (nf.file) {
			put_unused_fd(nf.fd);
			fput(nf.file);
		}
		return -EFAULT;
	}
	/* Only now, with its number in user space: nothing undoes this. */
	if (nf.file)
		fd_install(nf.fd, nf.file);
	return 0;
}

static long rs_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	return rs_ioctl_run(filp, cmd, arg, rs_ioctl_ops, ARRAY_SIZE(rs_ioctl_ops));
}

static int rs_open(struct inode *inode, struct file *filp)
{
	struct rs_file *rf;
	int ret;

	/*
	 * Peers, ports and rdma_cm ids are the initial network namespace's:
	 * a process in another one (a container) must not reach them.
	 */
	if (current->nsproxy->net_ns != &init_net)
		return -EOPNOTSUPP;
	ret = nonseekable_open(inode, filp);
	if (ret)
		return ret;
	rf = rs_file_alloc();
	if (!rf)
		return -ENOMEM;
	filp->private_data = rf;
	return 0;
}

static int rs_release(struct inode *inode, struct file *filp)
{
	rs_file_release(filp->private_data);
	return 0;
}

static int rs_mmap(struct file *filp, struct vm_area_struct *vma)
{
	return rs_rings_mmap(filp->private_data, vma);
}

static __poll_t rs_poll(struct file *filp, poll_table *wait)
{
	struct rs_file *rf = filp->private_data;
	__poll_t mask = 0;

	/* Pairs with rs_rings_setup(). */
	if (!smp_load_acquire(&rf->ready))
		return EPOLLERR;
	poll_wait(filp, &rf->cq_wait, wait);
	/* CLOSED completions that waited for room, if there is some now. */
	if (rs_cq_over_fits(rf))
		rs_ac_flush_closed(rf);
	/* Pairs with the barrier in wake_up: see the tail posted before it. */
	smp_rmb();
	if (rs_cq_ready(rf))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (rs_sq_has_space(rf))
		mask |= EPOLLOUT | EPOLLWRNORM;
	return mask;
}

static const struct file_operations rs_fops = {
	.owner = THIS_MODULE,
	.open = rs_open,
	.release = rs_release,
	.unlocked_ioctl = rs_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = rs_mmap,
	.poll = rs_poll,
};

struct miscdevice rs_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "rdmashare",
	.fops = &rs_fops,
	.groups = rs_misc_groups,
	.mode = 0666,
};

/* The ABI's layouts: any change here breaks user space. */
static void rs_abi_layout_check(void)
{
	BUILD_BUG_ON(sizeof(struct rdmashare_query) != 24);
	BUILD_BUG_ON(sizeof(struct rdmashare_ring_offsets) != 32);
	BUILD_BUG_ON(sizeof(struct rdmashare_setup) != 152);
	BUILD_BUG_ON(offsetof(struct rdmashare_setup, sq_off) != 32);
	BUILD_BUG_ON(offsetof(struct rdmashare_setup, rx_slots) != 96);
	BUILD_BUG_ON(offsetof(struct rdmashare_setup, max_acs) != 120);
	BUILD_BUG_ON(offsetof(struct rdmashare_setup, files_size) != 128);
	BUILD_BUG_ON(offsetof(struct rdmashare_setup, resv) != 136);
	BUILD_BUG_ON(sizeof(struct rdmashare_addr) != 24);
	BUILD_BUG_ON(sizeof(struct rdmashare_listen) != 72);
	BUILD_BUG_ON(offsetof(struct rdmashare_listen, local) != 48);
	BUILD_BUG_ON(offsetof(struct rdmashare_listen, file) != 24);
	BUILD_BUG_ON(sizeof(struct rdmashare_file_params) != 16);
	BUILD_BUG_ON(sizeof(struct rdmashare_connect) != 64);
	BUILD_BUG_ON(offsetof(struct rdmashare_connect, sock) != 56);
	BUILD_BUG_ON(sizeof(struct rdmashare_accept) != 64);
	BUILD_BUG_ON(sizeof(struct rdmashare_enter) != 24);
	BUILD_BUG_ON(sizeof(struct rdmashare_ac_set) != 24);
	BUILD_BUG_ON(sizeof(struct rdmashare_shutdown) != 8);
	BUILD_BUG_ON(sizeof(struct rdmashare_file_info) != 104);
	BUILD_BUG_ON(offsetof(struct rdmashare_file_info, rcvtimeo_us) != 88);
	BUILD_BUG_ON(sizeof(struct rdmashare_file_set) != 40);
	BUILD_BUG_ON(offsetof(struct rdmashare_file_set, rcvtimeo_us) != 24);
	BUILD_BUG_ON(offsetof(struct rdmashare_file_info, local) != 16);
	BUILD_BUG_ON(offsetof(struct rdmashare_file_info, rx_bytes) != 64);
	BUILD_BUG_ON(RDMASHARE_BAND_LATENCY != RS_BAND_LATENCY);
	BUILD_BUG_ON(RDMASHARE_BAND_NORMAL != RS_BAND_NORMAL);
	BUILD_BUG_ON(RDMASHARE_BAND_BULK != RS_BAND_BULK);
	BUILD_BUG_ON(RDMASHARE_WEIGHT_MIN != RS_SCHED_WEIGHT_MIN);
	BUILD_BUG_ON(RDMASHARE_WEIGHT_MAX != RS_SCHED_WEIGHT_MAX);
	BUILD_BUG_ON(sizeof(struct rdmashare_sqe) != 64);
	BUILD_BUG_ON(offsetof(struct rdmashare_sqe, user_data) != 8);
	BUILD_BUG_ON(offsetof(struct rdmashare_sqe, addr) != 16);
	BUILD_BUG_ON(offsetof(struct rdmashare_sqe, len) != 24);
	BUILD_BUG_ON(sizeof(struct rdmashare_cqe) != 32);
	BUILD_BUG_ON(offsetof(struct rdmashare_cqe, res) != 8);
	BUILD_BUG_ON(offsetof(struct rdmashare_cqe, ac) != 12);
	BUILD_BUG_ON(offsetof(struct rdmashare_cqe, type) != 16);
	BUILD_BUG_ON(offsetof(struct rdmashare_cqe, addr) != 24);
	BUILD_BUG_ON(RDMASHARE_OFF_DATA < RS_DATA_SIZE_LIMIT);
	BUILD_BUG_ON(RS_DATA_SIZE_LIMIT > (RS_DATA_SIZE_LIMIT >> PAGE_SHIFT) << PAGE_SHIFT);
}

int rs_chardev_init(void)
{
	rs_abi_layout_check();
	return misc_register(&rs_miscdev);
}

void rs_chardev_exit(void)
{
	misc_deregister(&rs_miscdev);
}
