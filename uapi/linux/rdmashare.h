/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * rdmashare: one shared RDMA transport for every application on a host.
 *
 * User-space ABI of /dev/rdmashare.  See Documentation/userspace-api.rst.
 *
 * Rules that every command follows:
 *  - Each ioctl argument starts with "__u32 size", the size of the struct as
 *    the caller knows it.  A smaller size than the first published version of
 *    the struct is rejected with -EINVAL; a larger one is accepted when every
 *    byte the kernel does not know is zero (else -E2BIG); a size above 4096
 *    gets -E2BIG.  Output fields are copied back up to the caller's size.
 *  - Unknown flags and non-zero reserved fields are rejected with -EINVAL.
 *  - An unknown command gets -ENOTTY.
 */
#ifndef _UAPI_LINUX_RDMASHARE_H
#define _UAPI_LINUX_RDMASHARE_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* Bumped on any incompatible change; also in sysfs as "abi_version". */
#define RDMASHARE_ABI_VERSION	1

#define RDMASHARE_TYPE		0xDA

/* Command numbers: RDMASHARE_IOC_* is _IO(RDMASHARE_TYPE, RDMASHARE_CMD_*). */
enum {
	RDMASHARE_CMD_QUERY = 0x00
};

/**
 * struct rdmashare_query - RDMASHARE_IOC_QUERY
 * @size: sizeof(struct rdmashare_query)
 * @flags: must be 0
 * @abi_version: out, RDMASHARE_ABI_VERSION of the running module
 * @num_devices: out, RDMA devices the module currently uses
 * @features: out, RDMASHARE_FEAT_* the module supports
 */
struct rdmashare_query {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 num_devices;
	__aligned_u64 features;
};

#define RDMASHARE_IOC_QUERY	_IO(RDMASHARE_TYPE, RDMASHARE_CMD_QUERY)

#endif /* _UAPI_LINUX_RDMASHARE_H */
