// SPDX-License-Identifier: GPL-2.0
/*
 * pte_free_defer() (6.5+): frees a PTE table detached outside an
 * mmu_gather after an RCU grace period, as khugepaged's
 * retract_page_tables() does. Defined with THP only.
 */
#include <linux/mm.h>
#include <linux/pgtable.h>
#ifndef CONFIG_TRANSPARENT_HUGEPAGE
#error "pte_free_defer() is defined with THP only"
#endif
static void __used fr_probe(struct mm_struct *mm, pgtable_t table)
{
	pte_free_defer(mm, table);
}
