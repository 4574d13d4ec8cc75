/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal kernel functions fastremap calls but modules cannot link
 * against. They are named here and in the table of symbols.c, nowhere else:
 * each is resolved once at load, and a missing one fails the load with its
 * name.
 */
#ifndef FASTREMAP_SYMBOLS_H
#define FASTREMAP_SYMBOLS_H

#ifndef FASTREMAP_COMPAT_H
#error "include compat.h, which includes this header"
#endif

/*
 * The functions and data themselves. Where a public header declares a
 * function, typeof() gives the type each kernel declares, so a changed
 * signature breaks the build instead of the call; compat.h types the rest.
 * Every field must also be named in the table in symbols.c; the build
 * checks that the two agree in number.
 */
struct fr_symbols {
	/* page tables */
	typeof(&__p4d_alloc) __p4d_alloc;
	typeof(&__pud_alloc) __pud_alloc;
	typeof(&__pmd_alloc) __pmd_alloc;
	typeof(&__pte_alloc) __pte_alloc;
	typeof(&__split_huge_pmd) __split_huge_pmd;
	typeof(&pgtable_trans_huge_deposit) pgtable_trans_huge_deposit;
	typeof(&pgtable_trans_huge_withdraw) pgtable_trans_huge_withdraw;
	/* TLB and secondary MMUs */
	fr_flush_tlb_mm_range_t flush_tlb_mm_range;
	fr_mm_fn_t flush_tlb_batched_pending;
	typeof(&__mmu_notifier_invalidate_range_start) __mmu_notifier_invalidate_range_start;
	typeof(&__mmu_notifier_invalidate_range_end) __mmu_notifier_invalidate_range_end;
	/* VMAs and their accounting */
	fr_copy_vma_t copy_vma;
	typeof(&do_munmap) do_munmap;
	typeof(&vm_stat_account) vm_stat_account;
	fr_may_expand_vm_t may_expand_vm;
	typeof(&security_vm_enough_memory_mm) security_vm_enough_memory_mm;
	fr_vma_fn_t unlink_anon_vmas;
#if defined(FR_HAVE_GET_UNMAPPED_AREA_6)
	typeof(&__get_unmapped_area) __get_unmapped_area;
#endif
	/* data */
	struct percpu_counter *vm_committed_as;
	s32 *vm_committed_as_batch;
	int *sysctl_max_map_count;
};

/* Filled by fr_symbols_resolve() before the device is registered. */
extern struct fr_symbols fr_sym;

int fr_symbols_resolve(void);
/* One line per symbol, "name status", for the device's sysfs attribute. */
ssize_t fr_symbols_show(char *buf, size_t size);

#endif /* FASTREMAP_SYMBOLS_H */
