// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: memory shared with user space, the rings and the data area of
 * a file.
 *
 * Single pages allocated with GFP_KERNEL_ACCOUNT, so that they count in the
 * memory cgroup of the process that set the file up (vmalloc_user() does not
 * charge, and the vmalloc call that would is not exported), mapped
 * contiguously in the kernel with vmap() and into user space with
 * vm_insert_pages(), as io_uring maps its rings.  The page array is what a
 * memory registration of the area will use.
 */
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "area.h"
#include "compat.h"

static void rs_area_free_pages(struct page **pages, unsigned long n)
{
	while (n--)
		__free_page(pages[n]);
}

/* @size bytes (page aligned), zeroed; undone by rs_area_free(). */
int rs_area_alloc(struct rs_area *a, size_t size)
{
	unsigned long i, n = size >> PAGE_SHIFT;

	memset(a, 0, sizeof(*a));
	if (!n || !PAGE_ALIGNED(size))
		return -EINVAL;
	a->pages = kvcalloc(n, sizeof(*a->pages), GFP_KERNEL_ACCOUNT);
	if (!a->pages)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		a->pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN);
		if (!a->pages[i])
			goto out_free;
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

void rs_area_free(struct rs_area *a)
{
	if (!a->pages)
		return;
	vunmap(a->vaddr);
	rs_area_free_pages(a->pages, a->nr_pages);
	kvfree(a->pages);
	memset(a, 0, sizeof(*a));
}

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
