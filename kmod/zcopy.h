/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: zero copy from an application's own pages (zcopy.c).
 */
#ifndef _RDMASHARE_ZCOPY_H
#define _RDMASHARE_ZCOPY_H

#include <linux/kref.h>
#include <linux/types.h>

#include "transport.h"

struct mm_struct;
struct page;
struct user_struct;

/**
 * struct rs_zc - a write's own pages, pinned and mapped for its AC's device
 * @ref: the write's operation holds one until it completes, each SEND that
 *	carries a chunk of it one (rs_tx_item.zc), and the writer one until
 *	it returns
 * @map: the pages as the device sees them; offset 0 is the start of the
 *	first page
 * @pages: the pinned pages (FOLL_PIN)
 * @nr_pages: how many
 * @user: the writer, whose locked_vm counts them against RLIMIT_MEMLOCK
 * @acct: pages charged to @user (0 with CAP_IPC_LOCK)
 * @mm: the writer's, whose pinned_vm counts them (a grab held)
 * @op: the operation that sends from it (acfile.c), while it may
 * @kernel: @pages are the kernel's own, a copy of a writer's
 *	(rs_zc_bounce()): nothing pinned or charged
 * @write: a reader's pages, which the device writes (sink.c)
 * @next: on the writer's list (acfile.c)
 */
struct rs_zc {
	struct kref ref;
	struct rs_dma_map map;
	struct page **pages;
	unsigned long nr_pages;
	struct user_struct *user;
	unsigned long acct;
	struct mm_struct *mm;
	struct rs_send *op;
	bool kernel;
	bool write;
	struct rs_zc *next;
};

struct rs_zc *rs_zc_pin(struct rs_device *rdev, unsigned long uaddr, size_t len, bool write);
void rs_zc_put(struct rs_zc *zc);
void rs_zc_copy(const struct rs_zc *zc, u64 off, void *dst, u32 len);
struct rs_zc *rs_zc_bounce(const struct rs_zc *zc);
int rs_zc_wait_alone(struct rs_zc *zc);
void rs_zc_device_gone(struct rs_device *rdev);

#endif /* _RDMASHARE_ZCOPY_H */
