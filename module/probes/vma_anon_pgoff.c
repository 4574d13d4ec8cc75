// SPDX-License-Identifier: GPL-2.0
/*
 * A VMA's anonymous page offset apart from its file one (7.3): the
 * anonymous folios of a MAP_PRIVATE file mapping are indexed by it, and
 * copy_vma() takes the destination's as an argument of its own.
 */
#include <linux/pagemap.h>
static pgoff_t __used fr_probe(struct vm_area_struct *vma, unsigned long addr)
{
	return __linear_anon_page_index(vma, addr);
}
