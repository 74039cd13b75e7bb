// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: memory shared with user space, the rings and the data area of
 * a file.
 *
 * Pages allocated with GFP_KERNEL_ACCOUNT, so that they count in the memory
 * cgroup of the process that set the file up (vmalloc_user() does not
 * charge, and the vmalloc call that would is not exported), mapped
 * contiguously in the kernel with vmap() and into user space with
 * vm_insert_pages(), as io_uring maps its rings.  The page array is what a
 * memory registration of the area will use.
 *
 * The data area comes in runs of physically contiguous pages where the
 * page allocator has them at hand (split_page(): each page is still one of
 * its own to map and free): a memory region over the receive slots then
 * takes one entry per run, not per page, and fits a device's page list
 * (rxe takes 512 entries, 2 MiB of 4 KiB pages), and a SEND or a WRITE
 * takes one SGE per run (memreg.c).  Runs are aligned to their size from
 * the start of the area and from a split point, where the receive slots
 * start.  Where a run cannot be had, smaller ones or single pages do.
 */
#include <linux/gfp.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include <kunit/visibility.h>

#include "area.h"
#include "compat.h"

static void rs_area_free_pages(struct page **pages, unsigned long n)
{
	while (n--)
		__free_page(pages[n]);
}

/*
 * The order of the run that starts at page @i of @n: at most @order, aligned
 * to its size from @split if @i is past it (else from 0), and not crossing
 * @split or the end.
 */
static unsigned int rs_area_run_order(unsigned long i, unsigned long n,
				      unsigned long split, unsigned int order)
{
	unsigned long base = i >= split ? split : 0;
	unsigned long end = i >= split ? n : split;

	if (i > base)
		order = min_t(unsigned int, order, __ffs(i - base));
	while (order && i + (1UL << order) > end)
		order--;
	return order;
}

/*
 * Pages from @pages on, from one allocation of 1 << @order contiguous pages
 * if it can be had, else of fewer, zeroed.
 *
 * Return: how many, 0 if not even a single page could be had.
 */
static unsigned long rs_area_alloc_run(struct page **pages, unsigned int order)
{
	gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN;
	struct page *page;
	unsigned long j;

	for (;; order--) {
		/* A run is a convenience: no reclaim or compaction effort. */
		page = alloc_pages(order ? gfp | __GFP_NORETRY : gfp, order);
		if (page || !order)
			break;
	}
	if (!page)
		return 0;
	split_page(page, order);
	for (j = 0; j < (1UL << order); j++)
		pages[j] = page + j;
	return 1UL << order;
}

/**
 * rs_area_alloc() - allocate and map an area
 * @a: the area
 * @size: its bytes, page aligned
 * @split: where a second part starts, page aligned (0: one part)
 * @order: its pages in runs of up to 1 << @order contiguous pages, aligned
 *	in their part
 *
 * Zeroed; undone by rs_area_free().
 *
 * Return: 0, -EINVAL for a bad size, or -ENOMEM.
 */
int rs_area_alloc(struct rs_area *a, size_t size, size_t split, unsigned int order)
{
	unsigned long i = 0, n = size >> PAGE_SHIFT, first = split >> PAGE_SHIFT, got;

	memset(a, 0, sizeof(*a));
	if (!n || !PAGE_ALIGNED(size) || !PAGE_ALIGNED(split) || split >= size ||
	    order > RS_AREA_MAX_ORDER)
		return -EINVAL;
	a->pages = kvcalloc(n, sizeof(*a->pages), GFP_KERNEL_ACCOUNT);
	if (!a->pages)
		return -ENOMEM;
	while (i < n) {
		/* After a smaller run than asked, the next ones align again. */
		got = rs_area_alloc_run(a->pages + i, rs_area_run_order(i, n, first, order));
		if (!got)
			goto out_free;
		i += got;
		cond_resched();
	}
	a->vaddr = vmap(a->pages, n, VM_MAP, PAGE_KERNEL);
	if (!a->vaddr)
		goto out_free;
	a->nr_pages = n;
	return 0;

out_free:
	rs_area_free_pages(a->pages, i);
	kvfree(a->pages);
	a->pages = NULL;
	return -ENOMEM;
}
EXPORT_SYMBOL_IF_KUNIT(rs_area_alloc);

/**
 * rs_area_order() - the runs for @len bytes of receive slots
 * @len: bytes
 *
 * Return: the order of the smallest runs that make up @len bytes in at
 * most RS_AREA_MAX_RUNS of them, but not below PAGE_ALLOC_COSTLY_ORDER
 * (runs up to that size are common) nor above RS_AREA_MAX_ORDER.
 */
unsigned int rs_area_order(size_t len)
{
	unsigned long runs = DIV_ROUND_UP(DIV_ROUND_UP(len, PAGE_SIZE), RS_AREA_MAX_RUNS);
	unsigned int order = runs > 1 ? order_base_2(runs) : 0;

	return clamp_t(unsigned int, order, PAGE_ALLOC_COSTLY_ORDER, RS_AREA_MAX_ORDER);
}
EXPORT_SYMBOL_IF_KUNIT(rs_area_order);

/**
 * rs_run_order() - the runs a list of page addresses is made of
 * @addr: the address of each page (a device's DMA addresses)
 * @n: entries of @addr
 * @order: the largest order to consider
 *
 * Pure: KUnit tests it.
 *
 * Return: the largest order, at most @order, such that @addr is runs of
 * 1 << order pages from its start (the last one may be shorter), each
 * contiguous and aligned to its size.
 */
unsigned int rs_run_order(const u64 *addr, unsigned long n, unsigned int order)
{
	unsigned long i, mask;

	for (;; order--) {
		mask = (1UL << order) - 1;
		for (i = 0; i < n; i++) {
			if (i & mask) {
				if (addr[i] != addr[i - 1] + PAGE_SIZE)
					break;
			} else if (addr[i] & ((PAGE_SIZE << order) - 1)) {
				break;
			}
		}
		if (i == n || !order)
			return order;
	}
}
EXPORT_SYMBOL_IF_KUNIT(rs_run_order);

void rs_area_free(struct rs_area *a)
{
	if (!a->pages)
		return;
	vunmap(a->vaddr);
	rs_area_free_pages(a->pages, a->nr_pages);
	kvfree(a->pages);
	memset(a, 0, sizeof(*a));
}
EXPORT_SYMBOL_IF_KUNIT(rs_area_free);

/*
 * Map the area from page @pgoff on into @vma, whose length the caller
 * checked against the area.  Neither growing nor in core dumps, as
 * remap_vmalloc_range() would have it.
 */
int rs_area_mmap(struct rs_area *a, struct vm_area_struct *vma, unsigned long pgoff)
{
	unsigned long n = vma_pages(vma);

	if (pgoff >= a->nr_pages || n > a->nr_pages - pgoff)
		return -EINVAL;
	rs_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	return vm_insert_pages(vma, vma->vm_start, a->pages + pgoff, &n);
}
