// SPDX-License-Identifier: GPL-2.0
/*
 * A PTE table allocated without hooking it in: pte_alloc_one(), which
 * __pte_alloc() calls before it takes the PMD lock (compat.h,
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
#if defined(CONFIG_X86_64)
pgtable_t fr_pte_alloc_one(struct mm_struct *mm)
{
	return fr_call(pte_alloc_one, mm);
}
#else
struct mm_struct *fr_no_init_mm;

pgtable_t fr_pte_alloc_one(struct mm_struct *mm)
{
	return pte_alloc_one(mm);
}
#endif
#endif
