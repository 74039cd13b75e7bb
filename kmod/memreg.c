// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: memory registration, a file's data area made visible to an
 * RDMA device.
 *
 * The data area is kernel pages (area.c), so the device may read it without
 * pinning anything of the process: each page is DMA-mapped once per (file,
 * device), the first time the file sends a chunk large enough to go from
 * the data area itself (sender.c), and the mapping lasts as long as the
 * file (rtrs's client and nvme-rdma post such pages as SGEs with the PD's
 * local DMA lkey; no memory region is needed for the device to read them).
 * A SEND names each page of its payload in an SGE of its own: the pages are
 * not contiguous, neither in the kernel's address space as the device sees
 * it (rxe reads page_address()) nor behind an IOMMU.
 *
 * Lifetimes.  A mapping goes when its file is freed, which is after every
 * SEND that named it completed (a posted SEND holds its AC, an AC its
 * file); or when its device goes, which is after every QP on the device
 * was destroyed (rs_ib_remove()); whichever comes first unmaps, under
 * rs_dma_maps_lock.  Nobody reads a mapping without holding a reference
 * that keeps both: the sender reads it for a QP that is up, under
 * RS_XMIT_BUSY, which the QP's teardown waits for.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "transport.h"

/* Every mapping's place on its file's and its device's list. */
static DEFINE_MUTEX(rs_dma_maps_lock);

static void rs_dma_map_unmap(struct rs_dma_map *map, unsigned long n)
{
	struct ib_device *ibdev = map->rdev->ibdev;

	while (n--)
		ib_dma_unmap_page(ibdev, map->dma[n], PAGE_SIZE, DMA_BIDIRECTIONAL);
}

/* Called with rs_dma_maps_lock held. */
static struct rs_dma_map *rs_dma_map_create(struct rs_file *rf, struct rs_device *rdev)
{
	struct ib_device *ibdev = rdev->ibdev;
	struct rs_area *a = &rf->data_area;
	struct rs_dma_map *map;
	unsigned long i;

	map = kzalloc(sizeof(*map), GFP_KERNEL_ACCOUNT);
	if (!map)
		return NULL;
	map->dma = kvcalloc(a->nr_pages, sizeof(*map->dma), GFP_KERNEL_ACCOUNT);
	if (!map->dma)
		goto out_free;
	map->rdev = rdev;
	for (i = 0; i < a->nr_pages; i++) {
		map->dma[i] = ib_dma_map_page(ibdev, a->pages[i], 0, PAGE_SIZE,
					      DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(ibdev, map->dma[i]))
			goto out_unmap;
		cond_resched();
	}
	map->nr_pages = a->nr_pages;
	list_add(&map->file_node, &rf->dma_maps);
	list_add(&map->dev_node, &rdev->dma_maps);
	return map;

out_unmap:
	rs_dma_map_unmap(map, i);
	kvfree(map->dma);
out_free:
	kfree(map);
	return NULL;
}

/**
 * rs_dma_map_get() - @rf's data area as @rdev sees it
 * @rf: a file whose rings are set up
 * @rdev: a device one of its ACs sends on
 *
 * Maps the data area on first use.  Process context; the memory is charged
 * to the file's memory cgroup.
 *
 * Return: the mapping, valid until the file is freed or the device goes;
 * NULL if it cannot be had (no memory, a device on its way out): the
 * caller copies instead.
 */
struct rs_dma_map *rs_dma_map_get(struct rs_file *rf, struct rs_device *rdev)
{
	struct mem_cgroup *old;
	struct rs_dma_map *map;

	mutex_lock(&rs_dma_maps_lock);
	list_for_each_entry(map, &rf->dma_maps, file_node) {
		if (map->rdev == rdev)
			goto out_unlock;
	}
	map = NULL;
	if (rdev->dma_maps_gone)
		goto out_unlock;
	old = set_active_memcg(rf->memcg);
	map = rs_dma_map_create(rf, rdev);
	set_active_memcg(old);
out_unlock:
	mutex_unlock(&rs_dma_maps_lock);
	return map;
}

/* The file is freed: nothing of its mappings is in use any more. */
void rs_dma_maps_free(struct rs_file *rf)
{
	struct rs_dma_map *map, *tmp;

	mutex_lock(&rs_dma_maps_lock);
	list_for_each_entry_safe(map, tmp, &rf->dma_maps, file_node) {
		if (map->rdev) {
			rs_dma_map_unmap(map, map->nr_pages);
			list_del(&map->dev_node);
		}
		list_del(&map->file_node);
		kvfree(map->dma);
		kfree(map);
	}
	mutex_unlock(&rs_dma_maps_lock);
}

/*
 * @rdev goes, and every QP on it is gone: unmap the files' data areas from
 * it.  The mappings themselves stay with their files, which may still hold
 * ACs (closed) that once used them; they are never read again.
 */
void rs_dma_maps_device_gone(struct rs_device *rdev)
{
	struct rs_dma_map *map, *tmp;

	mutex_lock(&rs_dma_maps_lock);
	rdev->dma_maps_gone = true;
	list_for_each_entry_safe(map, tmp, &rdev->dma_maps, dev_node) {
		rs_dma_map_unmap(map, map->nr_pages);
		list_del(&map->dev_node);
		map->rdev = NULL;
	}
	mutex_unlock(&rs_dma_maps_lock);
}

/**
 * rs_dma_map_sges() - SGEs for bytes of a mapped data area
 * @map: the mapping
 * @lkey: the device's local DMA lkey
 * @off: offset in the data area
 * @len: bytes, within the area
 * @sge: filled with one SGE per page touched
 * @max: entries of @sge
 *
 * The pages are handed to the device: the CPU (the application) wrote them.
 *
 * Return: the number of SGEs, or 0 if more than @max are needed.
 */
u32 rs_dma_map_sges(const struct rs_dma_map *map, u32 lkey, u64 off, u32 len,
		    struct ib_sge *sge, u32 max)
{
	struct ib_device *ibdev = map->rdev->ibdev;
	u32 n = 0, part, in_page;
	unsigned long idx;

	if (DIV_ROUND_UP(offset_in_page(off) + len, PAGE_SIZE) > max)
		return 0;
	while (len) {
		idx = off >> PAGE_SHIFT;
		in_page = offset_in_page(off);
		part = min_t(u32, len, PAGE_SIZE - in_page);
		ib_dma_sync_single_for_device(ibdev, map->dma[idx], PAGE_SIZE,
					      DMA_BIDIRECTIONAL);
		sge[n].addr = map->dma[idx] + in_page;
		sge[n].length = part;
		sge[n].lkey = lkey;
		n++;
		off += part;
		len -= part;
	}
	return n;
}
