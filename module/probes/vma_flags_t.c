// SPDX-License-Identifier: GPL-2.0
/*
 * The 7.x VMA-flags rework (vma_flags_t). It came with the mremap(2)
 * rework whose internals compat.h follows: copy_vma() takes keep_source,
 * may_expand_vm() takes vma_flags_t, and mremap checks its target address
 * before looking up the source. No public header declares those
 * internals, so this type is the nearest feature to test for.
 */
#include <linux/mm_types.h>
static vma_flags_t __used fr_probe;
