/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: ioctl dispatch, shared by /dev/rdmashare and AC files
 * (chardev.c).
 */
#ifndef _RDMASHARE_IOCTL_H
#define _RDMASHARE_IOCTL_H

#include <linux/stddef.h>
#include <uapi/linux/rdmashare.h>

struct file;
struct rs_new_file;

union rs_ioctl_buf {
	__u32 size;
	struct rdmashare_query query;
	struct rdmashare_setup setup;
	struct rdmashare_enter enter;
	struct rdmashare_listen listen;
	struct rdmashare_connect connect;
	struct rdmashare_accept accept;
	struct rdmashare_ac_set ac_set;
	struct rdmashare_ac_stats ac_stats;
	struct rdmashare_shutdown shutdown;
	struct rdmashare_file_info file_info;
	struct rdmashare_msg msg;
	struct rdmashare_file_set file_set;
};

/*
 * A command: the kernel's struct size, the smallest size user space may
 * pass, and what it does.
 */
struct rs_ioctl_op {
	unsigned int size;
	unsigned int min_size;
	unsigned int whole_size;
	int (*execute)(struct file *filp, union rs_ioctl_buf *buf, struct rs_new_file *nf);
};

#define RS_IOCTL_OP(_nr, _fn, _struct, _last)				\
	RS_IOCTL_OP_GREW(_nr, _fn, _struct, _last, sizeof(_struct))

/*
 * A command whose struct grew after the fields that say what descriptor it
 * made: a caller whose struct ends at @_whole bytes still gets one
 * (struct rs_new_file's @whole).
 */
#define RS_IOCTL_OP_GREW(_nr, _fn, _struct, _last, _whole)		\
	[_nr] = {							\
		.size = sizeof(_struct),				\
		.min_size = offsetofend(_struct, _last),		\
		.whole_size = (_whole),					\
		.execute = _fn,						\
	}

long rs_ioctl_run(struct file *filp, unsigned int cmd, unsigned long arg,
		  const struct rs_ioctl_op *ops, unsigned int nr_ops);

#endif /* _RDMASHARE_IOCTL_H */
