// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: zero copy from an application's own pages.
 *
 * An AC file write of at least zcopy_min bytes from user memory is not
 * copied into the send buffer (acfile.c): the writer's pages are pinned
 * (FOLL_PIN), charged to its user against RLIMIT_MEMLOCK and to its
 * pinned_vm as io_uring charges registered buffers (and rings.c a file's
 * areas), mapped for the AC's device for reading, and
 * the write's chunks go from them in place or placed (sender.c), as a
 * ring's SENDs go from the data area.  The write returns once its SENDs
 * completed, when the application may reuse the buffer.  rxe has no
 * on-demand paging, nor do many NICs: the pages are pinned, for as long
 * as the write takes.  A write that cannot pin (the limit, a fault, no
 * memory) is copied instead.  A signal that comes meanwhile turns what
 * is not sent yet into a copy in kernel pages (rs_zc_bounce()): once the
 * SENDs already posted from the writer's pages completed, the write
 * returns, as a copied one would.
 *
 * Lifetimes.  The write's operation holds a reference, and so does each
 * SEND that carries a chunk of it (rs_tx_item.zc), taken when the sender
 * plans the chunk: a write that fails completes while chunks of it may
 * still be in flight, and the pages stay until the last of those SENDs
 * completed.  Every SEND of a QP completes, and every operation of its
 * ACs fails, by the time the QP is destroyed; rs_ib_remove() destroys the
 * device's QPs, then waits for the device's last mapping to go
 * (rs_zc_device_gone()).  No lock is shared between writers.
 */
#include <linux/cred.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>

#include "zcopy.h"

static void rs_zc_device_put(struct rs_device *rdev)
{
	if (atomic_dec_and_test(&rdev->zc_users))
		wake_up_var(&rdev->zc_users);
}

/* @rdev may map a write's pages: false once it goes. */
static bool rs_zc_device_get(struct rs_device *rdev)
{
	atomic_inc(&rdev->zc_users);
	/* Pairs with the barrier in rs_zc_device_gone(). */
	smp_mb__after_atomic();
	if (!READ_ONCE(rdev->zc_gone))
		return true;
	rs_zc_device_put(rdev);
	return false;
}

/**
 * rs_zc_device_gone() - no write's pages are mapped for @rdev any more
 * @rdev: a device being removed, whose QPs are gone
 *
 * What they carried completed or failed; a write that pins from now on
 * copies.  Waits for writes between their pin and their queueing, which
 * then fail.
 */
void rs_zc_device_gone(struct rs_device *rdev)
{
	WRITE_ONCE(rdev->zc_gone, true);
	/* Pairs with the barrier in rs_zc_device_get(). */
	smp_mb();
	wait_var_event(&rdev->zc_users, !atomic_read(&rdev->zc_users));
}

/* Charge @zc's @n pages to the writer: its user's locked_vm, its pinned_vm. */
static int rs_zc_charge(struct rs_zc *zc, unsigned long n)
{
	struct user_struct *user = get_uid(current_user());
	long acct = rs_user_lock_mem(user, n);

	if (acct < 0) {
		free_uid(user);
		return acct;
	}
	zc->user = user;
	zc->acct = acct;
	mmgrab(current->mm);
	zc->mm = current->mm;
	atomic64_add(n, &zc->mm->pinned_vm);
	return 0;
}

static void rs_zc_uncharge(struct rs_zc *zc, unsigned long n)
{
	atomic64_sub(n, &zc->mm->pinned_vm);
	mmdrop(zc->mm);
	rs_user_unlock_mem(zc->user, zc->acct);
	free_uid(zc->user);
}

/*
 * Map @zc's @n pages for @rdev, to be read (or written, a reader's): 0, -ENODEV once the device
 * goes, or -EIO.  Ready for its first reference then.
 */
static int rs_zc_map(struct rs_zc *zc, struct rs_device *rdev, unsigned long n)
{
	enum dma_data_direction dir = zc->write ? DMA_FROM_DEVICE : DMA_TO_DEVICE;
	unsigned long i;
	u64 dma;

	if (!rs_zc_device_get(rdev))
		return -ENODEV;
	zc->map.rdev = rdev;
	zc->map.dir = dir;
	for (i = 0; i < n; i++) {
		dma = ib_dma_map_page(rdev->ibdev, zc->pages[i], 0, PAGE_SIZE, dir);
		if (ib_dma_mapping_error(rdev->ibdev, dma)) {
			rs_dma_map_unmap(&zc->map, i);
			rs_zc_device_put(rdev);
			return -EIO;
		}
		zc->map.dma[i] = dma;
	}
	zc->map.nr_pages = n;
	zc->nr_pages = n;
	kref_init(&zc->ref);
	return 0;
}

static void rs_zc_free(struct rs_zc *zc)
{
	kvfree(zc->map.dma);
	kvfree(zc->pages);
	kfree(zc);
}

/**
 * rs_zc_pin() - pin and map a writer's bytes for @rdev
 * @rdev: the device of the AC the write goes on
 * @uaddr: the first byte, in the calling process
 * @len: bytes, at least one, checked with access_ok() already
 * @write: the device writes them (a reader's buffer, sink.c), else reads
 *
 * Process context, the writer's (or reader's).  Offset 0 of the mapping is
 * @uaddr's page: the write's chunks are at offset_in_page(@uaddr) on.
 *
 * Return: the pages, with one reference; ERR_PTR(-ENOMEM) past the
 * writer's RLIMIT_MEMLOCK (its user's, all of its files and writes
 * together) or without memory, -EFAULT, -ENODEV if @rdev
 * goes, -EIO if the device cannot map them.
 */
struct rs_zc *rs_zc_pin(struct rs_device *rdev, unsigned long uaddr, size_t len, bool write)
{
	unsigned long first = uaddr & PAGE_MASK, got = 0;
	unsigned long n = (PAGE_ALIGN(uaddr + len) - first) >> PAGE_SHIFT;
	struct rs_zc *zc;
	long ret;

	if (!current->mm)
		return ERR_PTR(-EFAULT);
	zc = kzalloc(sizeof(*zc), GFP_KERNEL_ACCOUNT);
	if (!zc)
		return ERR_PTR(-ENOMEM);
	zc->pages = kvmalloc_array(n, sizeof(*zc->pages), GFP_KERNEL_ACCOUNT);
	zc->map.dma = kvmalloc_array(n, sizeof(*zc->map.dma), GFP_KERNEL_ACCOUNT);
	ret = -ENOMEM;
	if (!zc->pages || !zc->map.dma)
		goto out_free;
	ret = rs_zc_charge(zc, n);
	if (ret)
		goto out_free;
	/* Read only if the device only reads them. */
	zc->write = write;
	while (got < n) {
		ret = pin_user_pages_fast(first + (got << PAGE_SHIFT), n - got,
					  write ? FOLL_WRITE : 0, zc->pages + got);
		if (ret <= 0) {
			ret = ret ?: -EFAULT;
			goto out_unpin;
		}
		got += ret;
	}
	ret = rs_zc_map(zc, rdev, n);
	if (ret)
		goto out_unpin;
	return zc;

out_unpin:
	unpin_user_pages(zc->pages, got);
	rs_zc_uncharge(zc, n);
out_free:
	rs_zc_free(zc);
	return ERR_PTR(ret);
}

static void rs_zc_release(struct kref *ref)
{
	struct rs_zc *zc = container_of(ref, struct rs_zc, ref);
	unsigned long i;

	rs_dma_map_unmap(&zc->map, zc->nr_pages);
	rs_zc_device_put(zc->map.rdev);
	if (zc->kernel) {
		for (i = 0; i < zc->nr_pages; i++)
			__free_page(zc->pages[i]);
	} else {
		/* A reader's were written by the device. */
		unpin_user_pages_dirty_lock(zc->pages, zc->nr_pages, zc->write);
		rs_zc_uncharge(zc, zc->nr_pages);
	}
	rs_zc_free(zc);
}

/*
 * Drop a reference: the last unmaps, unpins and uncharges.  Process
 * context.  Wakes rs_zc_wait_alone().
 */
void rs_zc_put(struct rs_zc *zc)
{
	/* Only the address is used: @zc may be gone once another put. */
	if (!kref_put(&zc->ref, rs_zc_release))
		wake_up_var(zc);
}

/*
 * Wait until the caller's is the last reference to @zc: no SEND carries
 * it any more, nor does its operation.  0, or -ERESTARTSYS for a fatal
 * signal.
 */
int rs_zc_wait_alone(struct rs_zc *zc)
{
	return wait_var_event_killable(zc, kref_read(&zc->ref) == 1);
}

/**
 * rs_zc_bounce() - a copy of a writer's pages in kernel pages
 * @zc: the writer's, pinned and mapped
 *
 * For a write that a signal interrupts (acfile.c): what is not sent yet
 * goes from the copy, at the same offsets, and the write returns once the
 * SENDs already posted from @zc completed.  The copy is kernel memory,
 * charged to the memory cgroup, not pinned user memory.
 *
 * Return: the copy, mapped for @zc's device, with one reference; NULL
 * without memory or once the device goes.
 */
struct rs_zc *rs_zc_bounce(const struct rs_zc *zc)
{
	struct rs_device *rdev = zc->map.rdev;
	unsigned long got = 0;
	struct rs_zc *b;
	struct page *p;

	b = kzalloc(sizeof(*b), GFP_KERNEL_ACCOUNT);
	if (!b)
		return NULL;
	b->kernel = true;
	b->pages = kvcalloc(zc->nr_pages, sizeof(*b->pages), GFP_KERNEL_ACCOUNT);
	b->map.dma = kvmalloc_array(zc->nr_pages, sizeof(*b->map.dma), GFP_KERNEL_ACCOUNT);
	if (!b->pages || !b->map.dma)
		goto out_free;
	for (got = 0; got < zc->nr_pages; got++) {
		p = alloc_page(GFP_KERNEL_ACCOUNT);
		if (!p)
			goto out_pages;
		copy_highpage(p, zc->pages[got]);
		b->pages[got] = p;
	}
	if (rs_zc_map(b, rdev, got))
		goto out_pages;
	return b;

out_pages:
	while (got--)
		__free_page(b->pages[got]);
out_free:
	rs_zc_free(b);
	return NULL;
}

/*
 * Copy @len bytes at @off of @zc's mapping to @dst: a chunk that goes in
 * a TX buffer (pullup_max, or more SGEs than the SEND takes).
 */
void rs_zc_copy(const struct rs_zc *zc, u64 off, void *dst, u32 len)
{
	u32 part, in_page;

	while (len) {
		in_page = offset_in_page(off);
		part = min_t(u32, len, PAGE_SIZE - in_page);
		memcpy_from_page(dst, zc->pages[off >> PAGE_SHIFT], in_page, part);
		dst += part;
		off += part;
		len -= part;
	}
}
