/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: memory shared with user space (area.c).
 */
#ifndef _RDMASHARE_AREA_H
#define _RDMASHARE_AREA_H

#include <linux/mm_types.h>
#include <linux/types.h>

/**
 * struct rs_area - pages mapped both in the kernel and into user space
 * @pages: the pages, each charged to the memory cgroup of the task that
 *	allocated them
 * @nr_pages: how many
 * @vaddr: their kernel mapping, contiguous
 */
struct rs_area {
	struct page **pages;
	unsigned long nr_pages;
	void *vaddr;
};

/* Runs of contiguous pages (area.c): 2 MiB at most, 256 of them wanted. */
#define RS_AREA_MAX_ORDER	9
#define RS_AREA_MAX_RUNS	256

int rs_area_alloc(struct rs_area *a, size_t size, size_t split, unsigned int order);
unsigned int rs_area_order(size_t len);
unsigned int rs_run_order(const u64 *addr, unsigned long n, unsigned int order);
void rs_area_free(struct rs_area *a);
int rs_area_mmap(struct rs_area *a, struct vm_area_struct *vma, unsigned long pgoff);

#endif /* _RDMASHARE_AREA_H */
