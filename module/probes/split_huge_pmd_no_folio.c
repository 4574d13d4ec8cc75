// SPDX-License-Identifier: GPL-2.0
/* 7.x: __split_huge_pmd() lost its folio argument. */
#include <linux/mm.h>
#include <linux/huge_mm.h>
static void __used fr_probe(struct vm_area_struct *v, pmd_t *p)
{
	__split_huge_pmd(v, p, 0, false);
}
