/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The module's calls of the internal kernel functions symlist.h names,
 * where a call needs more than fr_call() (symbols.h): the arguments of
 * the kernel at hand (compat.h), or the work an inline of the kernel's
 * does around an unexported function. kfuncs.c defines them.
 */
#ifndef FASTREMAP_KFUNCS_H
#define FASTREMAP_KFUNCS_H

#include <linux/mm_types.h>
#include <linux/swap.h>

struct mmu_notifier_range;
struct folio;
struct fr_copy_buf;

/* Folded (arm64's four levels have no P4D), it is mm.h's inline. */
int fr_p4d_alloc(struct mm_struct *mm, pgd_t *pgd, unsigned long addr);

/* A PTE reclaim cleared with its flush still pending must not move. */
void fr_flush_tlb_batched_pending(struct mm_struct *mm);

/*
 * @anon_pgoff: the anonymous page offset the destination starts at
 * (fr_anon_page_index() of the source address), which only 7.3+ keeps
 * apart from @pgoff.
 */
struct vm_area_struct *fr_copy_vma(struct vm_area_struct **vmap,
				   unsigned long addr, unsigned long len,
				   pgoff_t pgoff, pgoff_t anon_pgoff,
				   bool *need_rmap_locks, bool keep_source);

bool fr_may_expand_vm(struct mm_struct *mm, struct vm_area_struct *vma,
		      unsigned long npages);

/* get_unmapped_area() became an inline over an internal function in 6.10. */
unsigned long fr_get_unmapped_area(struct file *file, unsigned long addr,
				   unsigned long len, unsigned long pgoff,
				   unsigned long flags);

void fr_split_huge_pmd(struct vm_area_struct *vma, pmd_t *pmd,
		       unsigned long addr);

/* The committed-memory counter's inline helpers use unexported data. */
void fr_vm_acct_memory(long pages);
void fr_vm_unacct_memory(long pages);

int fr_max_map_count(void);

/*
 * mmu notifiers, as mmu_notifier_invalidate_range_start/_end() do it
 * (those inlines call the unexported functions directly).
 */
void fr_mmu_notifier_start(struct mmu_notifier_range *range,
			   struct vm_area_struct *vma, unsigned long start,
			   unsigned long end);
void fr_mmu_notifier_end(struct mmu_notifier_range *range);

/*
 * Could the VMA grow in place by @delta? mm/mremap.c's vma_expandable():
 * mremap(2) grows in place when it can, which is not a move.
 */
bool fr_vma_expandable(struct vm_area_struct *vma, unsigned long delta);

/*
 * After a MREMAP_DONTUNMAP move the source stays mapped, empty: mm/mremap.c
 * drops its mlock and, when the whole VMA moved, its anon_vma links, and
 * gives it the page offset of an unfaulted anonymous VMA. copy_vma() was
 * told to keep the source apart; were it merged into the destination
 * anyway, its anon_vma would still map the moved pages, so leave it be.
 */
void fr_dontunmap_complete(struct vm_area_struct *vma,
			   struct vm_area_struct *new_vma, unsigned long start,
			   unsigned long len);

/*
 * The swap-cache folio of @entry, referenced, or NULL. The caller keeps
 * the device from being swapped off otherwise (see move_pte.c). On 6.x
 * the lookup also clears PG_readahead (alias PG_reclaim) and counts a
 * readahead hit if it was set; fr_move_swap() says why that is kept.
 */
struct folio *fr_swap_cache_folio(swp_entry_t entry);

/* Splits a locked large folio into small ones: split_folio(). */
int fr_split_folio(struct folio *folio);

/*
 * __pte_alloc() without the PMD lock and the page-table count: a zeroed
 * PTE table for a user @mm hooked in at @pmd, which must be empty and
 * which the caller alone can reach (pgalloc.c). 0 or -ENOMEM. Only where
 * compat.h's FR_PTE_ALLOC_ONE says a module can allocate one.
 */
int fr_pte_alloc_unlocked(struct mm_struct *mm, pmd_t *pmd);

/*
 * Frees the @n PTE tables in @buf the table-copying mover detached
 * (pgmove.c), once no lockless walker can still be in them, and takes
 * them off the mm's page-table bytes; with FR_FREE_OWN_RCU (compat.h)
 * @buf goes with them. Only where compat.h's FR_FREE_TABLES says the
 * kernel lets a module free them.
 */
void fr_free_detached(struct mm_struct *mm, struct fr_copy_buf *buf,
		      unsigned int n);

#endif /* FASTREMAP_KFUNCS_H */
