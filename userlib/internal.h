/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/* librdmashare: private declarations. */
#ifndef LIBRDMASHARE_INTERNAL_H
#define LIBRDMASHARE_INTERNAL_H

struct rdmashare {
	int fd;
};

/* ioctl(2) that retries on EINTR; returns a negative errno on failure. */
int rs_ioctl(struct rdmashare *rs, unsigned long cmd, void *arg);

#endif
