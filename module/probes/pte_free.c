// SPDX-License-Identifier: GPL-2.0
/*
 * pte_free() from a module: not where the split page-table lock is
 * allocated (lock debugging), as pte_free() then calls ptlock_free(),
 * which modules cannot reach.
 */
#include <linux/mm.h>
#include <asm/pgalloc.h>
#if ALLOC_SPLIT_PTLOCKS
#error "pte_free() calls ptlock_free()"
#endif
static void __used fr_probe(struct mm_struct *mm, pgtable_t table)
{
	pte_free(mm, table);
}
