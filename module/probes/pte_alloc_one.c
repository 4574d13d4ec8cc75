// SPDX-License-Identifier: GPL-2.0
/*
 * The generic pte_alloc_one(), an inline, from a module: not where the
 * architecture has its own (x86's is internal: symlist.h), nor where the
 * split page-table lock is allocated (lock debugging), as ptlock_init()
 * then calls ptlock_alloc(), which modules cannot reach.
 */
#include <linux/mm.h>
#include <asm/pgalloc.h>
#ifdef __HAVE_ARCH_PTE_ALLOC_ONE
#error "the architecture's own pte_alloc_one()"
#endif
#if ALLOC_SPLIT_PTLOCKS
#error "ptlock_init() calls ptlock_alloc()"
#endif
static pgtable_t __used fr_probe(struct mm_struct *mm)
{
	return pte_alloc_one(mm);
}
