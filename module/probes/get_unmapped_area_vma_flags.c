// SPDX-License-Identifier: GPL-2.0
/*
 * 7.3+: __get_unmapped_area(), under the inline get_unmapped_area(), takes
 * the VMA's flags as a vma_flags_t (6.10 to 7.2: a vm_flags_t).
 */
#include <linux/mm.h>
static unsigned long __used fr_probe(struct file *f)
{
	return __get_unmapped_area(f, 0, 4096, 0, 0, EMPTY_VMA_FLAGS);
}
