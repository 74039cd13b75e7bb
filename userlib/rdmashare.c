// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librdmashare: opening /dev/rdmashare and the control ioctls.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "rdmashare.h"
#include "internal.h"

int rdmashare_open(struct rdmashare **out, unsigned int flags)
{
	struct rdmashare *rs;
	int err;

	if (flags)
		return -EINVAL;

	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return -ENOMEM;

	rs->fd = open(RDMASHARE_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (rs->fd < 0) {
		err = -errno;
		free(rs);
		return err;
	}
	*out = rs;
	return 0;
}

static void rs_free_chunks(struct rs_chunk *c)
{
	struct rs_chunk *n;

	for (; c; c = n) {
		n = c->next;
		free(c->copy);
		free(c);
	}
}

void rdmashare_close(struct rdmashare *rs)
{
	struct rs_extent *e;
	unsigned int i;

	if (!rs)
		return;
	rs_rings_unmap(rs);
	close(rs->fd);
	for (i = 0; i < rs->nr_acs; i++)
		rs_free_chunks(rs->acs[i].head);
	rs_free_chunks(rs->owed);
	free(rs->acs);
	while ((e = rs->free_tx)) {
		rs->free_tx = e->next;
		free(e);
	}

	free(rs);
}

int rdmashare_fd(const struct rdmashare *rs)
{
	return rs->fd;
}

int rs_ioctl(struct rdmashare *rs, unsigned long cmd, void *arg)
{
	int ret;

	ret = ioctl(rs->fd, cmd, arg);
	return ret < 0 ? -errno : ret;
}

int rdmashare_query(struct rdmashare *rs, struct rdmashare_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	return rs_ioctl(rs, RDMASHARE_IOC_QUERY, q);
}
