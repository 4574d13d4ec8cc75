// SPDX-License-Identifier: GPL-2.0
/* vma_lookup() (5.14+): the VMA containing an address, or NULL. */
#include <linux/mm.h>
static struct vm_area_struct * __used fr_probe(struct mm_struct *mm)
{
	return vma_lookup(mm, 0);
}
