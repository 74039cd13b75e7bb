/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * librdmashare: user-space library for /dev/rdmashare.
 *
 * Functions return 0 (or a non-negative value) on success and a negative
 * errno on failure, like liburing; errno itself is left alone.
 */
#ifndef LIBRDMASHARE_H
#define LIBRDMASHARE_H

#include <linux/rdmashare.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Path of the rdmashare character device. */
#define RDMASHARE_DEV_PATH "/dev/rdmashare"

/** struct rdmashare - an open /dev/rdmashare file (opaque). */
struct rdmashare;

/**
 * rdmashare_open() - open /dev/rdmashare
 * @out: receives the new handle on success
 * @flags: must be 0
 *
 * The file is opened close-on-exec.
 *
 * Return: 0, or -EINVAL for unknown flags, -ENOMEM, or the errno of open(2)
 * (-ENOENT when the module is not loaded).
 */
int rdmashare_open(struct rdmashare **out, unsigned int flags);

/**
 * rdmashare_close() - close the file and free the handle
 * @rs: handle from rdmashare_open(); NULL is ignored
 */
void rdmashare_close(struct rdmashare *rs);

/**
 * rdmashare_fd() - the file descriptor behind a handle
 * @rs: handle from rdmashare_open()
 *
 * Return: the descriptor, for poll(2) and friends; still owned by @rs.
 */
int rdmashare_fd(const struct rdmashare *rs);

/**
 * rdmashare_query() - ask the module for its ABI version and devices
 * @rs: handle from rdmashare_open()
 * @q: filled in on success
 *
 * Return: 0, or the negative errno of RDMASHARE_IOC_QUERY.
 */
int rdmashare_query(struct rdmashare *rs, struct rdmashare_query *q);

#ifdef __cplusplus
}
#endif

#endif /* LIBRDMASHARE_H */
