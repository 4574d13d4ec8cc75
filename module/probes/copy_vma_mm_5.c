// SPDX-License-Identifier: GPL-2.0
/*
 * mm/vma.h declares copy_vma() with five arguments: an mm/ that moved it
 * out of linux/mm.h (6.10) but predates keep_source (6.18.15 does). Only a
 * build against the kernel's source tree sees mm/; against a headers
 * package the kernel's BTF answers instead (copy_vma_mm_5.btf: the
 * arguments of its copy_vma()). mm/'s headers are built-in code's:
 * asm/tlb.h, which vma_internal.h includes, needs what MODULE hides.
 */
#undef MODULE
#include <linux/mm.h>
#include <../mm/vma_internal.h>
#include <../mm/vma.h>
static struct vm_area_struct * __used fr_probe(struct vm_area_struct **v)
{
	bool need_rmap_locks;

	return copy_vma(v, 0, PAGE_SIZE, 0, &need_rmap_locks);
}
