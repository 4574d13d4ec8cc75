// SPDX-License-Identifier: GPL-2.0
/*
 * The 7.x VMA-flags rework (vma_flags_t). It came with the mremap(2)
 * rework whose internals compat.h follows: may_expand_vm() takes
 * vma_flags_t, and mremap checks its target address before looking up
 * the source and moves sources that span several VMAs. No public header declares those
 * internals, so this type is the nearest feature a header shows; the
 * kernel's source or BTF, where the build has either, tell them apart
 * on the 6.17 and 6.18 that have the mremap changes without this type
 * (mremap_*.src, mremap_*.btf).
 */
#include <linux/mm_types.h>
static vma_flags_t __used fr_probe;
