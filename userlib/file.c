// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librdmashare: the socket calls of AC files, for new code.
 *
 * An AC file is read and written like a connected stream socket, but it is
 * not a socket: send(2), recv(2) and shutdown(2) fail on it with ENOTSOCK.
 * These are their counterparts, over RDMASHARE_IOC_SENDMSG, RECVMSG and
 * SHUTDOWN, with the MSG_* flags and the how of the socket calls; and the
 * socket options that mean something to an AC file, SO_SNDBUF, TCP_CORK,
 * SO_RCVTIMEO and SO_SNDTIMEO, over RDMASHARE_IOC_FILE_SET.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "rdmashare.h"
#include "internal.h"

/* RDMASHARE_IOC_SENDMSG (@out) or RECVMSG of @iov with @flags. */
static ssize_t rs_file_msg(int fd, const struct iovec *iov, int iovcnt, int flags, int out)
{
	struct rdmashare_msg m = {
		.size = sizeof(m), .iov = (uintptr_t)iov, .iovcnt = iovcnt, .msg_flags = flags,
	};
	int n;

	if (iovcnt < 0)
		return -EINVAL;
	n = ioctl(fd, out ? RDMASHARE_IOC_SENDMSG : RDMASHARE_IOC_RECVMSG, &m);
	return n < 0 ? -errno : n;
}

ssize_t rdmashare_file_sendv(int fd, const struct iovec *iov, int iovcnt, int flags)
{
	return rs_file_msg(fd, iov, iovcnt, flags, 1);
}

ssize_t rdmashare_file_recvv(int fd, const struct iovec *iov, int iovcnt, int flags)
{
	return rs_file_msg(fd, iov, iovcnt, flags, 0);
}

ssize_t rdmashare_file_send(int fd, const void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rs_file_msg(fd, &iov, 1, flags, 1);
}

ssize_t rdmashare_file_recv(int fd, void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rs_file_msg(fd, &iov, 1, flags, 0);
}

int rdmashare_file_shutdown(int fd, int how)
{
	struct rdmashare_shutdown sh = { .size = sizeof(sh) };
	int flags = rs_shut_flags(how);

	if (flags < 0)
		return flags;
	sh.flags = flags;
	return ioctl(fd, RDMASHARE_IOC_SHUTDOWN, &sh) < 0 ? -errno : 0;
}

int rdmashare_file_set_sndbuf(int fd, unsigned int bytes)
{
	struct rdmashare_file_set fs = {
		.size = sizeof(fs), .flags = RDMASHARE_FILE_SET_SNDBUF, .sndbuf = bytes,
	};

	if (ioctl(fd, RDMASHARE_IOC_FILE_SET, &fs) < 0)
		return -errno;
	return fs.sndbuf > INT_MAX ? INT_MAX : (int)fs.sndbuf;
}

int rdmashare_file_set_cork(int fd, int on)
{
	struct rdmashare_file_set fs = {
		.size = sizeof(fs), .flags = RDMASHARE_FILE_SET_CORK, .cork = !!on,
	};

	return ioctl(fd, RDMASHARE_IOC_FILE_SET, &fs) < 0 ? -errno : 0;
}

int rdmashare_file_set_timeout(int fd, int which, uint64_t usecs)
{
	struct rdmashare_file_set fs = { .size = sizeof(fs) };

	if (which == SO_RCVTIMEO) {
		fs.flags = RDMASHARE_FILE_SET_RCVTIMEO;
		fs.rcvtimeo_us = usecs;
	} else if (which == SO_SNDTIMEO) {
		fs.flags = RDMASHARE_FILE_SET_SNDTIMEO;
		fs.sndtimeo_us = usecs;
	} else {
		return -EINVAL;
	}
	return ioctl(fd, RDMASHARE_IOC_FILE_SET, &fs) < 0 ? -errno : 0;
}
