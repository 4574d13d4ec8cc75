/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Everything that differs between the kernels fastremap supports lives
 * here, decided by the Kbuild feature probes in probes/ (their answers are
 * in compat-generated.h), never by version numbers. Core code is written
 * against the newest API; older kernels get a shim of that API here.
 */
#ifndef FASTREMAP_COMPAT_H
#define FASTREMAP_COMPAT_H

#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include "compat-generated.h"

/* Per-VMA locks: write-lock a VMA before changing what it maps. */
#if defined(FR_HAVE_VMA_START_WRITE)
#define FR_PER_VMA_LOCK IS_ENABLED(CONFIG_PER_VMA_LOCK)
#else
#define FR_PER_VMA_LOCK 0
static inline void vma_start_write(struct vm_area_struct *vma) { }
#endif

#if !defined(FR_HAVE_VM_FLAGS_SET)
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma,
				  vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/* Is kernel IBT enforced right now (built in, and the CPU enforces it)? */
static inline bool fr_kernel_ibt_enforced(void)
{
#if defined(CONFIG_X86_KERNEL_IBT)
	return cpu_feature_enabled(X86_FEATURE_IBT);
#else
	return false;
#endif
}

#endif /* FASTREMAP_COMPAT_H */
