// SPDX-License-Identifier: GPL-2.0
/*
 * Before copy_vma() took keep_source (MREMAP_DONTUNMAP: never merge the
 * source into the copy), linux/mm.h declared it with five arguments
 * (5.10). Kernels that have keep_source declare it with six (6.1) or in
 * mm/'s private headers (6.12+), where this probe fails too.
 */
#include <linux/mm.h>
static struct vm_area_struct * __used fr_probe(struct vm_area_struct **v)
{
	bool need_rmap_locks;

	return copy_vma(v, 0, PAGE_SIZE, 0, &need_rmap_locks);
}
