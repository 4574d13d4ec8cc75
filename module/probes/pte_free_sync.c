// SPDX-License-Identifier: GPL-2.0
/*
 * Before pte_free_defer() (6.5): a detached PTE table freed as 6.1's
 * khugepaged frees one, tlb_remove_table_sync_one() (6.1, and 5.10 since
 * the GUP-fast fix of late 2022) then pte_free(). Not where the split
 * page-table lock is allocated (lock debugging): pte_free() then calls
 * ptlock_free(), which modules cannot reach.
 */
/* x86-64's asm/tlb.h needs the flush_tlb_mm_range() it hides from modules. */
#undef MODULE
#include <linux/mm.h>
#include <asm/pgalloc.h>
#include <asm/tlb.h>
#if ALLOC_SPLIT_PTLOCKS
#error "pte_free() calls ptlock_free()"
#endif
static void __used fr_probe(struct mm_struct *mm, pgtable_t table)
{
	tlb_remove_table_sync_one();
	pte_free(mm, table);
}
