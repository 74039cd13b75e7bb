/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: differences between the kernels it builds for (6.1 and 6.12).
 *
 * Features are detected from the kernel's headers by kmod/Kbuild (RS_HAVE_*),
 * not by version number, so distribution backports are picked up.
 */
#ifndef _RDMASHARE_COMPAT_H
#define _RDMASHARE_COMPAT_H

#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/uio.h>

/* vm_flags became read-only behind vm_flags_{set,clear}() in 6.3. */
static inline void rs_vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)
{
#ifdef RS_HAVE_VM_FLAGS_CLEAR
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

static inline void rs_vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
#ifdef RS_HAVE_VM_FLAGS_CLEAR
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

/*
 * The user memory @i's next bytes are in, to the end of their segment
 * (@i is ITER_UBUF or ITER_IOVEC).  The current iovec is iter_iov() from
 * 6.4 on, iov_iter_iovec() before.
 */
static inline struct iovec rs_iter_user_seg(const struct iov_iter *i)
{
	if (iter_is_ubuf(i))
		return (struct iovec) {
			.iov_base = i->ubuf + i->iov_offset, .iov_len = i->count,
		};
#ifdef RS_HAVE_ITER_IOV
	return (struct iovec) {
		.iov_base = iter_iov(i)->iov_base + i->iov_offset,
		.iov_len = min(i->count, iter_iov(i)->iov_len - i->iov_offset),
	};
#else
	return iov_iter_iovec(i);
#endif
}

#endif /* _RDMASHARE_COMPAT_H */
