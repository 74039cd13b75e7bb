// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: listening files.
 *
 * A listening file is a service port as a descriptor of its own, as a
 * listening stream socket is: poll(2) reports EPOLLIN while a connection
 * waits in its backlog, RDMASHARE_IOC_ACCEPT on it gives the next one as an
 * AC file (acfile.c), and its last close stops listening.  Any
 * /dev/rdmashare file makes one (LISTEN with RDMASHARE_LISTEN_FD), set up
 * or not: the listening file has a file of its own behind it, an rs_file
 * that no application maps (the smallest rings, a page of data area, the
 * receive slots and a file area of max_files send buffers), set up and
 * charged to the caller as its SETUP would be.  Its listener is that
 * file's, with RDMASHARE_LISTEN_FILES, so the connections are those of
 * any listener of AC files: on the shared QPs, in that file's scheduler
 * group, with its receive slots.
 *
 * The listening file holds its rs_file (the reference rs_file_alloc()
 * gives) and its listener.  Its release is the rs_file's: the listener
 * closes and its backlog is aborted, while the AC files it gave go on, as
 * they go on without any maker (acfile.c), and keep the memory until the
 * last of them is freed.  Nothing ties it to the file that made it, so it
 * may outlive it, across fork(2) and exec(2), as a socket does.
 */
#include <linux/anon_inodes.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/poll.h>
#include <linux/slab.h>

#include "acfile.h"
#include "ioctl.h"
#include "transport.h"

/* AC files of a listening file whose maker names no number. */
#define RS_LFILE_FILES		64

/**
 * struct rs_lfile - a listening file (file->private_data)
 * @l: its listener (a reference), an AC of its own rs_file
 * @sndbuf: bytes of each AC file's send buffer
 */
struct rs_lfile {
	struct rs_ac *l;
	u32 sndbuf;
};

static __poll_t rs_lfile_poll(struct file *filp, poll_table *wait)
{
	struct rs_lfile *lf = filp->private_data;
	struct rs_ac *l = lf->l;
	__poll_t mask = 0;

	poll_wait(filp, &l->wait, wait);
	if (READ_ONCE(l->backlog_len))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (READ_ONCE(l->state) != RS_AC_LISTEN)
		mask |= EPOLLERR | EPOLLHUP;
	return mask;
}

static int rs_lfile_release(struct inode *inode, struct file *filp)
{
	struct rs_lfile *lf = filp->private_data;
	struct rs_ac *l = lf->l;

	/* The listener holds its rs_file until it is put. */
	rs_file_release(l->rf);
	rs_ac_put(l);
	kfree(lf);
	return 0;
}

/*
 * RDMASHARE_IOC_ACCEPT: the listener's next connection as an AC file, with
 * the listening file's send buffer size and the caller's flags.
 */
static int rs_lfile_accept(struct file *filp, union rs_ioctl_buf *buf, struct rs_new_file *nf)
{
	struct rs_lfile *lf = filp->private_data;
	struct rdmashare_accept *a = &buf->accept;
	u32 flags = a->flags;
	int ret;

	if (a->listen_ac || a->file.sndbuf ||
	    (flags & ~(RDMASHARE_ACCEPT_NONBLOCK | RDMASHARE_ACCEPT_FILE)))
		return -EINVAL;
	a->listen_ac = lf->l->fid;
	a->flags |= RDMASHARE_ACCEPT_FILE;
	if ((filp->f_flags & O_NONBLOCK) && !a->timeout_ms)
		a->flags |= RDMASHARE_ACCEPT_NONBLOCK;
	a->file.sndbuf = lf->sndbuf;
	ret = rs_ac_accept(lf->l->rf, a, nf);
	/* Ids of the listening file's own rs_file mean nothing to the caller. */
	a->listen_ac = 0;
	a->ac = 0;
	a->flags = flags;
	return ret;
}

static const struct rs_ioctl_op rs_lfile_ioctl_ops[] = {
	RS_IOCTL_OP(RDMASHARE_CMD_ACCEPT, rs_lfile_accept, struct rdmashare_accept, peer),
};

static long rs_lfile_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	return rs_ioctl_run(filp, cmd, arg, rs_lfile_ioctl_ops, ARRAY_SIZE(rs_lfile_ioctl_ops));
}

static const struct file_operations rs_lfile_fops = {
	.owner = THIS_MODULE,
	.poll = rs_lfile_poll,
	.unlocked_ioctl = rs_lfile_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.release = rs_lfile_release,
};

/* The parameters of RDMASHARE_LISTEN_FD, checked; *@files_size computed. */
static int rs_lfile_check(const struct rdmashare_listen *l, struct rs_new_file *nf,
			  u32 *files, u32 *sndbuf, u64 *files_size)
{
	/* A caller that cannot see the descriptor's field gets none. */
	if (!nf->whole || !(l->flags & RDMASHARE_LISTEN_FD) ||
	    (l->flags & ~(RDMASHARE_LISTEN_FD | RDMASHARE_LISTEN_ADDR | RDMASHARE_LISTEN_V6ONLY |
			  RDMASHARE_LISTEN_REUSEPORT)) ||
	    l->ac || l->resv ||
	    (l->file.flags & ~(RDMASHARE_FILE_NONBLOCK | RDMASHARE_FILE_CLOEXEC)) ||
	    l->file.fd || l->file.resv)
		return -EINVAL;
	*files = l->max_files ?: RS_LFILE_FILES;
	*sndbuf = PAGE_ALIGN((u64)(l->file.sndbuf ?: RS_ACFILE_SNDBUF));
	*files_size = (u64)*files * *sndbuf;
	if (!*sndbuf || *files_size > READ_ONCE(rs_data_size_max))
		return -EINVAL;
	return 0;
}

/**
 * rs_lfile_listen() - RDMASHARE_IOC_LISTEN with RDMASHARE_LISTEN_FD
 * @l: the caller's arguments
 * @nf: gets the listening file, installed once the answer is out
 *
 * Return: 0, or the errors of SETUP and LISTEN, -EMFILE.
 */
int rs_lfile_listen(struct rdmashare_listen *l, struct rs_new_file *nf)
{
	struct rdmashare_setup p = { .flags = RDMASHARE_SETUP_FILES, .sq_entries = 1,
				     .data_size = PAGE_SIZE, .rx_slots = l->rx_slots };
	struct rdmashare_listen fl = {
		.flags = RDMASHARE_LISTEN_FILES | (l->flags & ~RDMASHARE_LISTEN_FD),
		.port = l->port, .backlog = l->backlog, .local = l->local,
	};
	struct rs_lfile *lf;
	struct rs_file *rf;
	struct file *file;
	u32 files, sndbuf;
	int fd, flags, ret;

	ret = rs_lfile_check(l, nf, &files, &sndbuf, &p.files_size);
	if (ret)
		return ret;
	lf = kzalloc(sizeof(*lf), GFP_KERNEL_ACCOUNT);
	if (!lf)
		return -ENOMEM;
	lf->sndbuf = sndbuf;
	ret = -ENOMEM;
	rf = rs_file_alloc();
	if (!rf)
		goto out_free;
	ret = rs_rings_setup(rf, &p);
	if (ret)
		goto out_release;
	ret = rs_ac_listen(rf, &fl);
	if (ret)
		goto out_release;
	lf->l = rs_ac_lookup_user(rf, fl.ac);
	if (!lf->l) {
		ret = -ENOENT;	/* never: nothing else knows the file */
		goto out_release;
	}
	fd = get_unused_fd_flags(l->file.flags & RDMASHARE_FILE_CLOEXEC ? O_CLOEXEC : 0);
	if (fd < 0) {
		ret = fd;
		goto out_put;
	}
	flags = O_RDWR | (l->file.flags & RDMASHARE_FILE_NONBLOCK ? O_NONBLOCK : 0);
	file = anon_inode_getfile("[rdmashare-listen]", &rs_lfile_fops, lf, flags);
	if (IS_ERR(file)) {
		ret = PTR_ERR(file);
		put_unused_fd(fd);
		goto out_put;
	}
	/* From here the file's release undoes it all. */
	nf->file = file;
	nf->fd = fd;
	l->file.fd = fd;
	l->file.sndbuf = sndbuf;
	l->max_files = files;
	l->rx_slots = p.rx_slots;
	return 0;

out_put:
	rs_ac_put(lf->l);
out_release:
	rs_file_release(rf);
out_free:
	kfree(lf);
	return ret;
}
