// SPDX-License-Identifier: GPL-2.0
/* 6.6+: pte_free_defer() frees a PTE table after an RCU grace period. */
#include <linux/mm.h>
#include <linux/pgtable.h>
static void __used fr_probe(struct mm_struct *mm, pgtable_t p)
{
	pte_free_defer(mm, p);
}
