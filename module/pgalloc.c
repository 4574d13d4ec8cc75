// SPDX-License-Identifier: GPL-2.0
/*
 * A PTE table hooked in without the PMD lock, where only the caller can
 * reach the entry (pgmove.c, fr_new_table(), says when): pte_alloc_one(),
 * which __pte_alloc() calls before it takes the lock (compat.h,
 * FR_PTE_ALLOC_ONE, says where a module can). x86's is an internal
 * function, called through its static call; elsewhere it is the generic
 * inline, whose page-table constructor on 7.x kernels skips the split
 * page-table lock for init_mm's tables, and modules cannot reference
 * init_mm. Only user mms are passed here, never init_mm, so in this file
 * init_mm names no object at all: a null pointer, which no mm matches.
 * The definition must come before every header.
 */
#if !defined(CONFIG_X86_64)
#define init_mm (*fr_no_init_mm)
#endif

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <asm/pgalloc.h>
#include "compat.h"
#include "symbols.h"
#include "kfuncs.h"

#if FR_PTE_ALLOC_ONE
#if !defined(CONFIG_X86_64)
struct mm_struct *fr_no_init_mm;
#endif

int fr_pte_alloc_unlocked(struct mm_struct *mm, pmd_t *pmd)
{
#if defined(CONFIG_X86_64)
	pgtable_t table = fr_call(pte_alloc_one, mm);
#else
	pgtable_t table = pte_alloc_one(mm);
#endif

	if (!table)
		return -ENOMEM;
	/* pmd_install()'s: the zeroed table is seen before its entry. */
	smp_wmb();
	pmd_populate(mm, pmd, table);
	return 0;
}
#endif
