// SPDX-License-Identifier: GPL-2.0
/*
 * The calls of internal kernel functions that need more than fr_call():
 * kfuncs.h says what each is for.
 */
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/huge_mm.h>
#include <linux/mmu_notifier.h>
#include <linux/percpu_counter.h>
#include <linux/security.h>
#include <linux/swap.h>
#include <asm/pgalloc.h>
#include "compat.h"
#include "symbols.h"
#include "pgmove.h"
#include "kfuncs.h"

int fr_p4d_alloc(struct mm_struct *mm, pgd_t *pgd, unsigned long addr)
{
#if defined(__PAGETABLE_P4D_FOLDED)
	return __p4d_alloc(mm, pgd, addr);
#else
	return fr_call(__p4d_alloc, mm, pgd, addr);
#endif
}

void fr_flush_tlb_batched_pending(struct mm_struct *mm)
{
#if defined(CONFIG_ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH)
	fr_call(flush_tlb_batched_pending, mm);
#endif
}

struct vm_area_struct *fr_copy_vma(struct vm_area_struct **vmap,
				   unsigned long addr, unsigned long len,
				   pgoff_t pgoff, pgoff_t anon_pgoff,
				   bool *need_rmap_locks, bool keep_source)
{
#if !FR_COPY_VMA_KEEP_SOURCE
	/*
	 * No keep_source: fr_remap_locked() leaves MREMAP_DONTUNMAP of a
	 * source this copy_vma() could merge with to mremap(2).
	 */
	return fr_call(copy_vma, vmap, addr, len, pgoff, need_rmap_locks);
#elif defined(FR_HAVE_VMA_ANON_PGOFF)
	return fr_call(copy_vma, vmap, addr, len, pgoff, anon_pgoff,
		       need_rmap_locks, keep_source);
#else
	return fr_call(copy_vma, vmap, addr, len, pgoff, need_rmap_locks,
		       keep_source);
#endif
}

bool fr_may_expand_vm(struct mm_struct *mm, struct vm_area_struct *vma,
		      unsigned long npages)
{
#if defined(FR_HAVE_VMA_FLAGS_T)
	vma_flags_t flags = vma->flags;

	return fr_call(may_expand_vm, mm, &flags, npages);
#else
	return fr_call(may_expand_vm, mm, vma->vm_flags, npages);
#endif
}

unsigned long fr_get_unmapped_area(struct file *file, unsigned long addr,
				   unsigned long len, unsigned long pgoff,
				   unsigned long flags)
{
#if defined(FR_HAVE_GET_UNMAPPED_AREA_VMA_FLAGS)
	return fr_call(__get_unmapped_area, file, addr, len, pgoff, flags,
		       EMPTY_VMA_FLAGS);
#elif defined(FR_HAVE_GET_UNMAPPED_AREA_6)
	return fr_call(__get_unmapped_area, file, addr, len, pgoff, flags, 0);
#else
	return get_unmapped_area(file, addr, len, pgoff, flags);
#endif
}

void fr_split_huge_pmd(struct vm_area_struct *vma, pmd_t *pmd,
		       unsigned long addr)
{
#if defined(FR_HAVE_SPLIT_HUGE_PMD_NO_FOLIO)
	fr_call(__split_huge_pmd, vma, pmd, addr, false);
#else
	fr_call(__split_huge_pmd, vma, pmd, addr, false, NULL);
#endif
}

void fr_vm_acct_memory(long pages)
{
	percpu_counter_add_batch(fr_sym.vm_committed_as, pages,
				 *fr_sym.vm_committed_as_batch);
}

void fr_vm_unacct_memory(long pages)
{
	fr_vm_acct_memory(-pages);
}

int fr_max_map_count(void)
{
	return READ_ONCE(*fr_sym.sysctl_max_map_count);
}

void fr_mmu_notifier_start(struct mmu_notifier_range *range,
			   struct vm_area_struct *vma, unsigned long start,
			   unsigned long end)
{
#if defined(FR_HAVE_MMU_NOTIFIER_RANGE_INIT_VMA)
	mmu_notifier_range_init(range, MMU_NOTIFY_UNMAP, 0, vma, vma->vm_mm,
				start, end);
#else
	mmu_notifier_range_init(range, MMU_NOTIFY_UNMAP, 0, vma->vm_mm, start,
				end);
#endif
	might_sleep();
	if (mm_has_notifiers(range->mm) && !FR_MUTANT(NO_NOTIFY)) {
		range->flags |= MMU_NOTIFIER_RANGE_BLOCKABLE;
		fr_call(__mmu_notifier_invalidate_range_start, range);
	}
}

void fr_mmu_notifier_end(struct mmu_notifier_range *range)
{
	if (!mm_has_notifiers(range->mm) || FR_MUTANT(NO_NOTIFY))
		return;
#if defined(FR_HAVE_MMU_NOTIFIER_END_ONLY_END)
	fr_call(__mmu_notifier_invalidate_range_end, range, false);
#else
	fr_call(__mmu_notifier_invalidate_range_end, range);
#endif
}

bool fr_vma_expandable(struct vm_area_struct *vma, unsigned long delta)
{
	unsigned long end = vma->vm_end + delta;

	if (end < vma->vm_end)
		return false;
	if (find_vma_intersection(vma->vm_mm, vma->vm_end, end))
		return false;
	if (fr_get_unmapped_area(NULL, vma->vm_start, end - vma->vm_start, 0,
				 MAP_FIXED) & ~PAGE_MASK)
		return false;
	return true;
}

void fr_dontunmap_complete(struct vm_area_struct *vma,
			   struct vm_area_struct *new_vma, unsigned long start,
			   unsigned long len)
{
	vm_flags_clear(vma, VM_LOCKED | VM_LOCKONFAULT);
	if (new_vma == vma || vma->vm_start != start ||
	    vma->vm_end != start + len)
		return;
	fr_call(unlink_anon_vmas, vma);
#if defined(FR_HAVE_VMA_ANON_PGOFF)
	/*
	 * Unfaulted again: 7.3 keeps an unfaulted VMA's anonymous offset at
	 * vm_start's page, as mm/vma.h's private vma_set_anon_pgoff() sets it.
	 */
#ifdef CONFIG_64BIT
	vma->__vm_anon_pgoff_hi = (vma->vm_start >> PAGE_SHIFT) >> 32;
#endif
	vma->__vm_anon_pgoff_lo = (vma->vm_start >> PAGE_SHIFT) & GENMASK(31, 0);
#endif
	if (vma_is_anonymous(vma) && !vma->vm_file)
		vma->vm_pgoff = vma->vm_start >> PAGE_SHIFT;
}

#if defined(FR_HAVE_FOLIO)
struct folio *fr_swap_cache_folio(swp_entry_t entry)
{
#if defined(FR_HAVE_SWAP_ADDRESS_SPACE)
	return fr_call(swap_cache_get_folio, entry, NULL, 0);
#else
	return fr_call(swap_cache_get_folio, entry);
#endif
}

int fr_split_folio(struct folio *folio)
{
#if defined(FR_HAVE_SPLIT_FOLIO_TO_LIST)
	return fr_call(split_folio_to_list, folio, NULL);
#else
	return fr_call(split_huge_page_to_list, &folio->page, NULL);
#endif
}
#endif /* FR_HAVE_FOLIO */

#if FR_FREE_TABLES && FR_COPY_TABLES
#if FR_FREE_OWN_RCU
static void fr_free_tables_rcu(struct rcu_head *head)
{
	struct fr_copy_buf *buf = container_of(head, struct fr_copy_buf, rcu);
	unsigned int k;

	/* As pte_free_defer()'s callback: no mm is needed, nor may be live. */
	for (k = 0; k < buf->n; k++)
		pte_free(NULL, pmd_pgtable(buf->c[k].pmdval));
	kvfree(buf);
}
#endif

/*
 * After an RCU grace period (see compat.h): lockless GUP-fast walks with
 * interrupts off, which the grace period waits out, so no walker is left
 * in a table when it is freed. pte_free_defer() per table where the
 * kernel has it; else one callback of the module's for all of a pass's
 * tables, which takes @buf with them. Not
 * page_table_check_pte_clear_range() as the kernel's retraction: the
 * entries left in a freed table were copied, not unmapped; their pages
 * are counted once, by the copies.
 */
void fr_free_detached(struct mm_struct *mm, struct fr_copy_buf *buf,
		      unsigned int n)
{
#if !FR_FREE_OWN_RCU
	unsigned int k;

	for (k = 0; k < n; k++)
		fr_call(pte_free_defer, mm, pmd_pgtable(buf->c[k].pmdval));
#else
	buf->n = n;
	call_rcu(&buf->rcu, fr_free_tables_rcu);
#endif
	/* mm_dec_nr_ptes() for each, in one update. */
	if (!FR_MUTANT(FREE_NO_NR_PTES))
		atomic_long_sub((long)n * PTRS_PER_PTE * sizeof(pte_t),
				&mm->pgtables_bytes);
}
#endif /* FR_FREE_TABLES && FR_COPY_TABLES */
