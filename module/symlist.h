/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The internal kernel functions fastremap calls but modules cannot link
 * against, named here and nowhere else but symbols.c. Each has a static
 * call of the module's own, fr_sc_<name>, called as fr_call(name, ...)
 * (symbols.h says why). Its type is the function's own declaration where
 * a public header has one, so the compiler checks every call against the
 * kernel's prototype; else the compat.h type fr_<name>_fn, which decls.c
 * or tests/harness/check-decls.sh compare with the kernel's declaration.
 *
 * symbols.c defines and resolves each one (a missing definition fails the
 * module's link; a definition the resolver table misses fails the load's
 * self-check). tests/harness/check-ko.sh expands this file with the
 * preprocessor to know which static calls a built module must contain.
 */
#ifndef FASTREMAP_SYMLIST_H
#define FASTREMAP_SYMLIST_H

/*
 * What the entries name: the kernel's declarations, and compat.h's types.
 * (scripts/ expand this list with cpp alone, without __KERNEL__.)
 */
#ifdef __KERNEL__
#include <linux/kallsyms.h>
#include <linux/static_call.h>
#include <asm/pgalloc.h>
#include "compat.h"
#endif

/* Resolved first, through a kprobe; it resolves all the others. */
DECLARE_STATIC_CALL(fr_sc_kallsyms_lookup_name, kallsyms_lookup_name);

/* page tables */
/* A folded level's allocator is an inline of mm.h (arm64: no P4D). */
#if !defined(__PAGETABLE_P4D_FOLDED)
DECLARE_STATIC_CALL(fr_sc___p4d_alloc, __p4d_alloc);
#endif
DECLARE_STATIC_CALL(fr_sc___pud_alloc, __pud_alloc);
DECLARE_STATIC_CALL(fr_sc___pmd_alloc, __pmd_alloc);
DECLARE_STATIC_CALL(fr_sc___pte_alloc, __pte_alloc);
/* x86's own; the generic one is an inline (compat.h, FR_PTE_ALLOC_ONE). */
#if defined(CONFIG_X86_64)
DECLARE_STATIC_CALL(fr_sc_pte_alloc_one, pte_alloc_one);
#endif
#if defined(FR_HAVE_PTE_FREE_DEFER)
DECLARE_STATIC_CALL(fr_sc_pte_free_defer, pte_free_defer);
#endif
DECLARE_STATIC_CALL(fr_sc___split_huge_pmd, __split_huge_pmd);
DECLARE_STATIC_CALL(fr_sc_pgtable_trans_huge_deposit,
		    pgtable_trans_huge_deposit);
DECLARE_STATIC_CALL(fr_sc_pgtable_trans_huge_withdraw,
		    pgtable_trans_huge_withdraw);

/* folios and the swap cache (FASTREMAP_IOC_MOVE, which needs folios) */
DECLARE_STATIC_CALL(fr_sc___anon_vma_prepare, fr___anon_vma_prepare_fn);
#if defined(FR_HAVE_FOLIO)
DECLARE_STATIC_CALL(fr_sc_swap_cache_get_folio, fr_swap_cache_get_folio_fn);
#if defined(FR_HAVE_SPLIT_FOLIO_TO_LIST)
DECLARE_STATIC_CALL(fr_sc_split_folio_to_list, split_folio_to_list);
#else
DECLARE_STATIC_CALL(fr_sc_split_huge_page_to_list, split_huge_page_to_list);
#endif
#endif

/* TLB and secondary MMUs */
/* TLB and secondary MMUs (arm64's range flush is inline: arch.h) */
#if defined(CONFIG_X86_64)
DECLARE_STATIC_CALL(fr_sc_flush_tlb_mm_range, fr_flush_tlb_mm_range_fn);
#endif
/* Without batched unmap flushes it is an empty inline (arm64 before 6.5). */
#if defined(CONFIG_ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH)
DECLARE_STATIC_CALL(fr_sc_flush_tlb_batched_pending,
		    fr_flush_tlb_batched_pending_fn);
#endif
DECLARE_STATIC_CALL(fr_sc___mmu_notifier_invalidate_range_start,
		    __mmu_notifier_invalidate_range_start);
DECLARE_STATIC_CALL(fr_sc___mmu_notifier_invalidate_range_end,
		    __mmu_notifier_invalidate_range_end);

/*
 * arm64: functions its headers' inlines (set_pte_at(), flush_tlb_range())
 * call but the kernel does not export. symbols.c defines each name as a
 * forwarder to the function its static call resolved.
 */
#if defined(CONFIG_ARM64) && defined(CONFIG_ARM64_MTE)
DECLARE_STATIC_CALL(fr_sc_mte_sync_tags, mte_sync_tags);
#endif
/* 7.x: an SME erratum's workaround, in every TLB flush. */
#if defined(CONFIG_ARM64) && defined(CONFIG_ARM64_ERRATUM_4193714)
DECLARE_STATIC_CALL(fr_sc_sme_do_dvmsync, sme_do_dvmsync);
#endif
#if defined(CONFIG_ARM64) && defined(CONFIG_MMU_NOTIFIER) && \
	defined(FR_HAVE_MMU_NOTIFIER_ARCH_SECONDARY_TLBS)
DECLARE_STATIC_CALL(fr_sc___mmu_notifier_arch_invalidate_secondary_tlbs,
		    __mmu_notifier_arch_invalidate_secondary_tlbs);
#endif

/* VMAs and their accounting */
DECLARE_STATIC_CALL(fr_sc_copy_vma, fr_copy_vma_fn);
DECLARE_STATIC_CALL(fr_sc_do_munmap, do_munmap);
DECLARE_STATIC_CALL(fr_sc_vm_stat_account, vm_stat_account);
DECLARE_STATIC_CALL(fr_sc_may_expand_vm, fr_may_expand_vm_fn);
DECLARE_STATIC_CALL(fr_sc_security_vm_enough_memory_mm,
		    security_vm_enough_memory_mm);
DECLARE_STATIC_CALL(fr_sc_unlink_anon_vmas, fr_unlink_anon_vmas_fn);
/*
 * get_unmapped_area() became an inline over an internal function in 6.10
 * (whose last argument became a vma_flags_t in 7.3).
 */
#if defined(FR_HAVE_GET_UNMAPPED_AREA_6) || \
	defined(FR_HAVE_GET_UNMAPPED_AREA_VMA_FLAGS)
DECLARE_STATIC_CALL(fr_sc___get_unmapped_area, __get_unmapped_area);
#endif

#endif /* FASTREMAP_SYMLIST_H */
