// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare: memory registration, a file's data area made visible to an
 * RDMA device.
 *
 * The data area is kernel pages (area.c), so the device may read it without
 * pinning anything of the process: each page is DMA-mapped once per (file,
 * device), and the mapping lasts as long as the file (rtrs's client and
 * nvme-rdma post such pages as SGEs with the PD's local DMA lkey; no memory
 * region is needed for the device to read them).
 *
 * Mapping a data area takes a call per page and a memory region over the
 * slots: milliseconds for a large one, too long for a shared QP's
 * completion handler, whose time is every tenant's.  So it is done in the
 * file's own calls: a CONNECT maps for its QP's device, a LISTEN for every
 * device there is (its ACCEPTs are sent from the handler).  Elsewhere a
 * mapping is only looked up (rs_dma_map_find()); one that is missing (a
 * device added since the LISTEN, a version 3 QP, no memory) is made by the
 * file's map work meanwhile, and chunks are copied until it is there.
 * A SEND names its payload in an SGE per run of pages that the device sees
 * contiguous (rxe reads page_address(); without an IOMMU that is the runs
 * area.c allocates), a page each at worst.
 *
 * Version 4 also lets peers write chunks into the file's receive slots
 * (RDMA WRITE, the zero copy of the receiving side): a memory region over
 * the slots, zero based, slot i at i * rx_slot_size, registered by a fast
 * registration work request that rides, unsignaled, with the SEND whose
 * CONNECT or ACCEPT first names its rkey (rs_rx_mr_claim(), sender.c).
 * Until that SEND completed, only its QP may name the rkey: on that QP the
 * registration comes first, on another nothing orders the two.  The region
 * lasts as long as the mapping.  Its rkey is the file's on the device, not
 * an AC's: a peer that has it could write into any of the file's slots,
 * not only those it holds credits for; the receiver checks the slot each
 * placed chunk names (recv.c), but cannot see a write into another.  Peers
 * are authenticated rdmashare hosts (cm.c); memory windows bound to a
 * QP would narrow it, but the kernel's verbs cannot bind them.
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
#include <linux/scatterlist.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "area.h"
#include "transport.h"

/* Every mapping's place on its file's and its device's list. */
static DEFINE_MUTEX(rs_dma_maps_lock);

/* The device no longer sees the first @n pages of @map. */
void rs_dma_map_unmap(struct rs_dma_map *map, unsigned long n)
{
	struct ib_device *ibdev = map->rdev->ibdev;

	while (n--)
		ib_dma_unmap_page(ibdev, map->dma[n], PAGE_SIZE, map->dir);
}

/*
 * The memory region over @rf's receive slots: their pages go into its page
 * list now, its registration rides with a SEND (rs_rx_mr_claim()).  The
 * list takes one entry per run of pages contiguous on the device (area.c),
 * the largest runs the mapping is made of that the device takes as its
 * page size.  None if the device has no fast registration or takes fewer
 * entries than the slots need: chunks are then copied.
 */
static void rs_rx_mr_create(struct rs_dma_map *map, struct rs_file *rf)
{
	struct ib_device *ibdev = map->rdev->ibdev;
	unsigned long first = rf->rx_offset >> PAGE_SHIFT, pages, i;
	struct scatterlist *sgl, *sg;
	unsigned int order;
	struct ib_mr *mr;
	u64 len;
	u32 n, run;

	map->rx_off = rf->rx_offset;
	map->rx_len = (u64)rf->rx_slots * rf->rx_slot_size;
	pages = DIV_ROUND_UP(map->rx_len, PAGE_SIZE);
	if (!(ibdev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) ||
	    first + pages > map->nr_pages)
		return;
	order = rs_run_order(map->dma + first, pages, RS_AREA_MAX_ORDER);
	while (order && !(ibdev->attrs.page_size_cap & (PAGE_SIZE << order)))
		order--;
	run = PAGE_SIZE << order;
	len = (u64)pages << PAGE_SHIFT;
	n = DIV_ROUND_UP_ULL(len, run);
	if (n > ibdev->attrs.max_fast_reg_page_list_len)
		return;
	sgl = kvmalloc_array(n, sizeof(*sgl), GFP_KERNEL);
	if (!sgl)
		return;
	sg_init_table(sgl, n);
	for_each_sg(sgl, sg, n, i) {
		sg_dma_address(sg) = map->dma[first + (i << order)];
		sg_dma_len(sg) = min_t(u64, run, len - (u64)i * run);
	}
	mr = ib_alloc_mr(map->rdev->pd, IB_MR_TYPE_MEM_REG, n);
	if (IS_ERR(mr))
		goto out_free;
	if (ib_map_mr_sg_zbva(mr, sgl, n, NULL, run) != n) {
		ib_dereg_mr(mr);
		goto out_free;
	}
	map->rx_mr = mr;
out_free:
	kvfree(sgl);
}

/* Called with rs_dma_maps_lock held: the device no longer sees @map. */
static void rs_dma_map_release(struct rs_dma_map *map)
{
	if (map->rx_mr)
		ib_dereg_mr(map->rx_mr);
	map->rx_mr = NULL;
	rs_dma_map_unmap(map, map->nr_pages);
	list_del(&map->dev_node);
	map->rdev = NULL;
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
	map->dir = DMA_BIDIRECTIONAL;
	for (i = 0; i < a->nr_pages; i++) {
		map->dma[i] = ib_dma_map_page(ibdev, a->pages[i], 0, PAGE_SIZE,
					      DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(ibdev, map->dma[i]))
			goto out_unmap;
		cond_resched();
	}
	map->nr_pages = a->nr_pages;
	spin_lock_init(&map->rx_lock);
	rs_rx_mr_create(map, rf);
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

/**
 * rs_dma_map_find() - @rf's data area as @rdev sees it, if it is mapped
 * @rf: a file whose rings are set up
 * @rdev: a device one of its ACs uses
 *
 * Never maps, and never waits for a mapping under way: if the mapping is
 * not there (or cannot be looked at now), the file's map work is asked to
 * make it, and the caller copies meanwhile.  Any context that may sleep,
 * a completion handler included.
 *
 * Return: the mapping, as rs_dma_map_get() gives it, or NULL.
 */
struct rs_dma_map *rs_dma_map_find(struct rs_file *rf, struct rs_device *rdev)
{
	struct rs_dma_map *map;

	if (mutex_trylock(&rs_dma_maps_lock)) {
		list_for_each_entry(map, &rf->dma_maps, file_node) {
			if (map->rdev == rdev) {
				mutex_unlock(&rs_dma_maps_lock);
				return map;
			}
		}
		mutex_unlock(&rs_dma_maps_lock);
	}
	if (READ_ONCE(rdev->dma_maps_gone) || READ_ONCE(rf->closing))
		return NULL;
	kref_get(&rf->ref);
	if (!queue_work(rs_wq, &rf->map_work))
		rs_file_put(rf);
	return NULL;
}

/**
 * rs_dma_maps_prepare() - map @rf's data area for every device
 * @rf: a file whose rings are set up
 *
 * Process context (a LISTEN, or the file's map work).  A device added later
 * is mapped for when an AC first looks for it (rs_dma_map_find()).
 */
void rs_dma_maps_prepare(struct rs_file *rf)
{
	struct rs_device *rdev;

	/* Listed devices are not removed yet: rs_ib_remove() unlists first. */
	mutex_lock(&rs_devices_lock);
	list_for_each_entry(rdev, &rs_devices, list) {
		if (READ_ONCE(rf->closing))
			break;
		rs_dma_map_get(rf, rdev);
	}
	mutex_unlock(&rs_devices_lock);
}

static void rs_dma_map_work(struct work_struct *work)
{
	struct rs_file *rf = container_of(work, struct rs_file, map_work);

	rs_dma_maps_prepare(rf);
	rs_file_put(rf);
}

/* Called by rs_file_alloc(). */
void rs_dma_maps_init(struct rs_file *rf)
{
	INIT_LIST_HEAD(&rf->dma_maps);
	INIT_WORK(&rf->map_work, rs_dma_map_work);
}

/* The file is freed: nothing of its mappings is in use any more. */
void rs_dma_maps_free(struct rs_file *rf)
{
	struct rs_dma_map *map, *tmp;

	mutex_lock(&rs_dma_maps_lock);
	list_for_each_entry_safe(map, tmp, &rf->dma_maps, file_node) {
		if (map->rdev)
			rs_dma_map_release(map);
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
	list_for_each_entry_safe(map, tmp, &rdev->dma_maps, dev_node)
		rs_dma_map_release(map);
	mutex_unlock(&rs_dma_maps_lock);
}

/**
 * rs_dma_map_nr_sges() - SGEs for bytes of a mapped data area
 * @map: the mapping
 * @off: offset in the data area
 * @len: bytes, within the area, at least one
 *
 * Return: how many SGEs rs_dma_map_sges() takes for them: one per run of
 * pages contiguous on the device (area.c).
 */
u32 rs_dma_map_nr_sges(const struct rs_dma_map *map, u64 off, u32 len)
{
	unsigned long idx = off >> PAGE_SHIFT, end = (off + len - 1) >> PAGE_SHIFT;
	u32 n = 1;

	for (; idx < end; idx++)
		n += map->dma[idx + 1] != map->dma[idx] + PAGE_SIZE;
	return n;
}

/**
 * rs_dma_map_fit() - the bytes of a mapped data area that SGEs take
 * @map: the mapping
 * @off: offset in the data area
 * @len: bytes, within the area, at least one
 * @max: SGEs, at least one
 *
 * Return: how many of the @len bytes at @off go in @max SGEs of
 * rs_dma_map_sges() (one per run of pages contiguous on the device): at
 * least the first page's part.
 */
u32 rs_dma_map_fit(const struct rs_dma_map *map, u64 off, u32 len, u32 max)
{
	u32 fit = min_t(u32, len, PAGE_SIZE - offset_in_page(off)), n = 1;
	unsigned long idx = off >> PAGE_SHIFT;

	while (fit < len) {
		if (map->dma[idx + 1] != map->dma[idx] + PAGE_SIZE && ++n > max)
			break;
		idx++;
		fit = min_t(u32, len, fit + PAGE_SIZE);
	}
	return fit;
}

/**
 * rs_dma_map_sges() - SGEs for bytes of a mapped data area
 * @map: the mapping
 * @lkey: the device's local DMA lkey
 * @off: offset in the data area
 * @len: bytes, within the area
 * @sge: filled with one SGE per run of pages contiguous on the device
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
	u64 addr;

	while (len) {
		idx = off >> PAGE_SHIFT;
		in_page = offset_in_page(off);
		part = min_t(u32, len, PAGE_SIZE - in_page);
		addr = map->dma[idx] + in_page;
		/*
		 * Only these bytes (dma_sync_single_range_for_device()'s
		 * way): under bounce buffering a whole page would carry
		 * stale bytes over a slot the device just filled.
		 */
		ib_dma_sync_single_for_device(ibdev, addr, part, map->dir);
		if (n && sge[n - 1].addr + sge[n - 1].length == addr) {
			sge[n - 1].length += part;
		} else {
			if (n == max)
				return 0;
			sge[n].addr = addr;
			sge[n].length = part;
			sge[n].lkey = lkey;
			n++;
		}
		off += part;
		len -= part;
	}
	return n;
}

/**
 * rs_dma_map_sync_for_cpu() - bytes the device wrote, for the CPU to read
 * @map: the mapping
 * @off: offset in the data area
 * @len: bytes, within the area
 */
void rs_dma_map_sync_for_cpu(const struct rs_dma_map *map, u64 off, u32 len)
{
	u32 part, in_page;

	/*
	 * Only these bytes: a slot may share its page with others that the
	 * CPU wrote (a copied chunk) or the device fills now.
	 */
	while (len) {
		in_page = offset_in_page(off);
		part = min_t(u32, len, PAGE_SIZE - in_page);
		ib_dma_sync_single_for_cpu(map->rdev->ibdev, map->dma[off >> PAGE_SHIFT] + in_page,
					   part, map->dir);
		off += part;
		len -= part;
	}
}

/**
 * rs_rx_mr_claim() - the rkey a CONNECT or ACCEPT on @qp may name
 * @m: the file's mapping for @qp's device
 * @qp: the QP the record goes on
 * @reg: in: the SEND has room for a registration; out: it must carry this
 *	one (rs_rx_mr_reg_wr()), and tell how it went (rs_rx_mr_registered())
 *
 * Called with @qp's lock held, by the sender.
 *
 * Return: the rkey, or 0: no region, its registration failed, or rides
 * with a SEND on another QP that has not completed yet.
 */
u32 rs_rx_mr_claim(struct rs_dma_map *m, const struct rs_qp *qp, bool *reg)
{
	bool may_reg = *reg;
	u32 rkey = 0;

	*reg = false;
	if (!m->rx_mr)
		return 0;
	spin_lock(&m->rx_lock);
	switch (m->rx_state) {
	case RS_RX_MR_NONE:
		if (!may_reg)
			break;
		m->rx_state = RS_RX_MR_POSTED;
		m->rx_reg_qp = qp;
		*reg = true;
		rkey = m->rx_mr->rkey;
		break;
	case RS_RX_MR_POSTED:
		if (m->rx_reg_qp == qp)
			rkey = m->rx_mr->rkey;
		break;
	case RS_RX_MR_VALID:
		rkey = m->rx_mr->rkey;
		break;
	case RS_RX_MR_FAILED:
		break;
	}
	spin_unlock(&m->rx_lock);
	return rkey;
}

/**
 * rs_rx_mr_invalidated() - a peer invalidated @rkey on @rdev
 * @rdev: the device
 * @rkey: the rkey it named
 *
 * If it is a file's receive region, the region is registered again with
 * the next CONNECT or ACCEPT that names it (rs_rx_mr_claim()).  Process
 * context.
 */
void rs_rx_mr_invalidated(struct rs_device *rdev, u32 rkey)
{
	struct rs_dma_map *map;

	mutex_lock(&rs_dma_maps_lock);
	list_for_each_entry(map, &rdev->dma_maps, dev_node) {
		if (!map->rx_mr || map->rx_mr->rkey != rkey)
			continue;
		spin_lock_irq(&map->rx_lock);
		if (map->rx_state == RS_RX_MR_VALID)
			map->rx_state = RS_RX_MR_NONE;
		spin_unlock_irq(&map->rx_lock);
	}
	mutex_unlock(&rs_dma_maps_lock);
}

/**
 * rs_mr_reg_wr() - the work request that registers @mr for the peer to write
 * @mr: a fast registration region, its pages mapped
 * @wr: filled but for its wr_cqe and next
 */
void rs_mr_reg_wr(struct ib_mr *mr, struct ib_reg_wr *wr)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr.opcode = IB_WR_REG_MR;
	wr->mr = mr;
	wr->key = mr->rkey;
	wr->access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
}

/**
 * rs_rx_mr_reg_wr() - the work request that registers @map's region
 * @map: a mapping rs_rx_mr_claim() said to register
 * @wr: filled but for its wr_cqe and next
 */
void rs_rx_mr_reg_wr(struct rs_dma_map *map, struct ib_reg_wr *wr)
{
	rs_mr_reg_wr(map->rx_mr, wr);
}

/**
 * rs_rx_mr_registered() - the SEND that carried @map's registration completed
 * @map: the mapping
 * @ok: it did, successfully (so did the registration before it); otherwise
 *	it failed or never went, and the region is never named
 */
void rs_rx_mr_registered(struct rs_dma_map *map, bool ok)
{
	unsigned long flags;

	spin_lock_irqsave(&map->rx_lock, flags);
	if (!WARN_ON_ONCE(map->rx_state != RS_RX_MR_POSTED))
		map->rx_state = ok ? RS_RX_MR_VALID : RS_RX_MR_FAILED;
	map->rx_reg_qp = NULL;
	spin_unlock_irqrestore(&map->rx_lock, flags);
}
