/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdmashare: differences between the kernels it builds for (6.1 and 6.12).
 *
 * Features are detected from the kernel's headers by kmod/Kbuild (RS_HAVE_*),
 * not by version number, so distribution backports are picked up.
 */
#ifndef _RDMASHARE_COMPAT_H
#define _RDMASHARE_COMPAT_H

#include <linux/mm.h>

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

#endif /* _RDMASHARE_COMPAT_H */
