/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Everything that differs between the kernels fastremap supports, as the
 * Kbuild feature probes in probes/ decide it (their answers are in
 * compat-generated.h), never by version numbers. Core code is written
 * against the newest API; older kernels get a shim of that API here. The
 * types of the internal functions symlist.h names are chosen here too;
 * the calls to those functions are kfuncs.h's.
 */
#ifndef FASTREMAP_COMPAT_H
#define FASTREMAP_COMPAT_H

#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/huge_mm.h>
#include <linux/highmem.h>
#include <linux/mmu_notifier.h>
#include <linux/percpu_counter.h>
#include <linux/security.h>
#include <linux/rmap.h>
#include <linux/swap.h>
#include <linux/swapops.h>
#include "compat-generated.h"
#include "mutant.h"
#if defined(FR_HAVE_SOFTLEAF)
#include <linux/leafops.h>
#endif

/*
 * FASTREMAP_IOC_MOVE needs folios (5.16+): before them the module is
 * built without it (ENOTTY, absent from INFO): move_none.c stands in for
 * move*.c (Kbuild). REMAP needs no folio.
 */
#if defined(FR_HAVE_FOLIO)
#define FR_MOVE_SUPPORTED 1
#else
#define FR_MOVE_SUPPORTED 0
#endif

/*
 * A page whose dirty bit an entry no longer carries, marked dirty as
 * zap_pte_range() does: folio_mark_dirty() where there are folios,
 * set_page_dirty() before them (5.10, 5.15).
 */
static inline void fr_mark_page_dirty(struct page *page)
{
#if defined(FR_HAVE_FOLIO)
	folio_mark_dirty(page_folio(page));
#else
	set_page_dirty(page);
#endif
}

/* vma_lookup() (5.14+): find_vma(), if the VMA found contains @addr. */
#if !defined(FR_HAVE_VMA_LOOKUP)
static inline struct vm_area_struct *vma_lookup(struct mm_struct *mm,
						unsigned long addr)
{
	struct vm_area_struct *vma = find_vma(mm, addr);

	if (vma && addr < vma->vm_start)
		return NULL;
	return vma;
}
#endif

/* Whether a mapping's vm_ops veto or track a split (split before 5.11). */
static inline bool fr_vm_ops_may_split(const struct vm_operations_struct *ops)
{
#if defined(FR_HAVE_VM_OPS_MAY_SPLIT)
	return ops->may_split;
#else
	return ops->split;
#endif
}

/*
 * kmap_local_page() (5.11+). Without highmem (x86-64 and arm64, the only
 * architectures supported) every page has its kernel address already.
 */
#if !defined(FR_HAVE_KMAP_LOCAL)
#ifdef CONFIG_HIGHMEM
#error "fastremap needs kmap_local_page() on a kernel with highmem"
#endif
static inline void *kmap_local_page(struct page *page)
{
	return page_address(page);
}

static inline void kunmap_local(void *addr)
{
}
#endif

/*
 * Whether the kernel's mremap(2) moves whole PUD entries (5.11+ on x86-64
 * and arm64): a Kconfig symbol 5.10 does not have, so a feature test.
 */
#define FR_MREMAP_MOVES_PUD IS_ENABLED(CONFIG_HAVE_MOVE_PUD)

/*
 * Freeing PTE tables detached outside an mmu_gather, after an RCU grace
 * period, which lockless GUP-fast (interrupts off) cannot outlast:
 * pte_free_defer() (6.5+), as khugepaged frees the table it retracts, a
 * callback per table (its pte_free() reaches functions modules cannot
 * call); before it, FR_FREE_OWN_RCU: the module's own RCU callback calls
 * pte_free() for all the tables of a pass (FR_HAVE_PTE_FREE: not with
 * lock debugging, where pte_free() calls the unexported ptlock_free()).
 * Where the kernel has neither, the table-copying mover empties the
 * source tables of a move whose source is unmapped and hooks them back
 * (pgmove.c, fr_release_tables()).
 */
#if defined(FR_HAVE_PTE_FREE_DEFER)
#define FR_FREE_TABLES 1
#define FR_FREE_OWN_RCU 0
#elif defined(FR_HAVE_PTE_FREE)
#define FR_FREE_TABLES 1
#define FR_FREE_OWN_RCU 1
#else
#define FR_FREE_TABLES 0
#define FR_FREE_OWN_RCU 0
#endif

/*
 * A PTE table allocated by pte_alloc_one(), so that a move hooks in the
 * destination tables only it can reach without __pte_alloc()'s PMD lock
 * and counter update per table (pgmove.c, fr_new_table(); pgalloc.c):
 * x86's pte_alloc_one() is its own, internal (symlist.h); elsewhere the
 * generic inline, FR_HAVE_PTE_ALLOC_ONE (not with lock debugging, where
 * it calls the unexported ptlock_alloc()).
 */
#if defined(CONFIG_X86_64) || defined(FR_HAVE_PTE_ALLOC_ONE)
#define FR_PTE_ALLOC_ONE 1
#else
#define FR_PTE_ALLOC_ONE 0
#endif

/* Per-VMA locks (6.4+): write-lock a VMA before changing what it maps. */
#if defined(FR_HAVE_VMA_START_WRITE)
#define FR_PER_VMA_LOCK IS_ENABLED(CONFIG_PER_VMA_LOCK)
#else
#define FR_PER_VMA_LOCK 0
static inline void vma_start_write(struct vm_area_struct *vma) { }
#endif

/*
 * A local the kernel's automatic stack initialisation (Debian builds with
 * INIT_STACK_ALL_ZERO) leaves alone, where the compiler can: one the code
 * writes whole before reading it. Kernels before 5.19 do not define it.
 */
#ifndef __uninitialized
#define __uninitialized
#endif

/*
 * Shadow stacks (x86 6.6+, arm64 GCS 6.13+); VM_NONE where the kernel or
 * its configuration has none, so that testing for it is always false.
 */
#ifndef VM_SHADOW_STACK
#define VM_SHADOW_STACK VM_NONE
#endif

/* vm_flags became read-only with modifiers in 6.3. */
#if !defined(FR_HAVE_VM_FLAGS_SET)
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma,
				  vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/* 7.x keeps the anon_vma lock helpers private: the lock is the root's rwsem. */
#if !defined(FR_HAVE_ANON_VMA_LOCK_WRITE)
static inline void anon_vma_lock_write(struct anon_vma *anon_vma)
{
	down_write(&anon_vma->root->rwsem);
}

static inline void anon_vma_unlock_write(struct anon_vma *anon_vma)
{
	up_write(&anon_vma->root->rwsem);
}
#endif

/* mseal(2) (6.10+): sealed VMAs cannot be moved or unmapped. */
static inline bool fr_vma_sealed(struct vm_area_struct *vma)
{
#ifdef VM_SEALED
	return vma->vm_flags & VM_SEALED;
#else
	return false;
#endif
}

/* Kernel IBT built in: kprobes skip a function's ENDBR64 (or its seal). */
#define FR_KERNEL_IBT IS_ENABLED(CONFIG_X86_KERNEL_IBT)

/*
 * Types of the internal functions that no public header declares (on
 * some supported kernel), for symlist.h. tests/harness/check-decls.sh compares
 * each with the declaration in that kernel's own source, so a kernel that
 * changes one fails the test build instead of being miscalled.
 */
typedef void (fr_flush_tlb_batched_pending_fn)(struct mm_struct *mm);
/* asm/tlbflush.h declares it for built-in code only: decls.c checks it. */
typedef void (fr_flush_tlb_mm_range_fn)(struct mm_struct *mm,
					unsigned long start, unsigned long end,
					unsigned int stride_shift,
					bool freed_tables);
typedef void (fr_unlink_anon_vmas_fn)(struct vm_area_struct *vma);
/*
 * copy_vma() takes keep_source (MREMAP_DONTUNMAP) from 6.1 on: the fix
 * that added it reached Debian 12's 6.1 as a backport. Without it (5.10)
 * copy_vma() may merge an unfaulted source into its copy, and mremap(2)
 * of those kernels allows MREMAP_DONTUNMAP on private anonymous VMAs
 * only: there the module declines MREMAP_DONTUNMAP of any other source,
 * and of one never faulted (fr_remap_locked()). From 7.3 a VMA has an
 * anonymous page offset of its own, which copy_vma() takes too; before,
 * the file offset was both. The stable kernels got keep_source at
 * different points: 6.18.15's mm/vma.h declares copy_vma() without it
 * (FR_HAVE_COPY_VMA_MM_5). A headers package has no mm/: there the
 * kernel's BTF, where the build has one, gives copy_vma()'s arguments
 * instead (probes/copy_vma_mm_5.btf); with neither, the module assumes
 * keep_source.
 */
#if defined(FR_HAVE_COPY_VMA_5) || defined(FR_HAVE_COPY_VMA_MM_5)
typedef struct vm_area_struct *(fr_copy_vma_fn)(struct vm_area_struct **vmap,
						 unsigned long addr,
						 unsigned long len,
						 pgoff_t pgoff,
						 bool *need_rmap_locks);
#define FR_COPY_VMA_KEEP_SOURCE 0
/*
 * 5.10's mremap(2) checks a MREMAP_FIXED or MREMAP_DONTUNMAP target before
 * it looks up the source, unmaps the target and a shrinking source's tail
 * before that lookup, and answers a plain call that does not grow without
 * any lookup at all.
 */
#if defined(FR_HAVE_COPY_VMA_5)
#define FR_MREMAP_5_ORDER 1
#else
#define FR_MREMAP_5_ORDER 0
#endif
#define fr_anon_page_index(vma, addr)	linear_page_index(vma, addr)
#elif defined(FR_HAVE_VMA_ANON_PGOFF)
typedef struct vm_area_struct *(fr_copy_vma_fn)(struct vm_area_struct **vmap,
						 unsigned long addr,
						 unsigned long len,
						 pgoff_t pgoff,
						 pgoff_t anon_pgoff,
						 bool *need_rmap_locks,
						 bool keep_source);
#define FR_COPY_VMA_KEEP_SOURCE 1
#define FR_MREMAP_5_ORDER 0
/* The index an anonymous folio mapped at @addr has (no checks: any VMA). */
#define fr_anon_page_index(vma, addr)	__linear_anon_page_index(vma, addr)
#else
typedef struct vm_area_struct *(fr_copy_vma_fn)(struct vm_area_struct **vmap,
						 unsigned long addr,
						 unsigned long len,
						 pgoff_t pgoff,
						 bool *need_rmap_locks,
						 bool keep_source);
#define FR_COPY_VMA_KEEP_SOURCE 1
#define FR_MREMAP_5_ORDER 0
#define fr_anon_page_index(vma, addr)	linear_page_index(vma, addr)
#endif
#if defined(FR_HAVE_VMA_FLAGS_T)
typedef bool (fr_may_expand_vm_fn)(struct mm_struct *mm,
				   const vma_flags_t *flags,
				   unsigned long npages);
#else
typedef bool (fr_may_expand_vm_fn)(struct mm_struct *mm, vm_flags_t flags,
				   unsigned long npages);
#endif
/*
 * From 6.17 mremap(2) checks the new length, and a MREMAP_FIXED target,
 * before it looks up the source (check_mremap_params()), and moves a
 * plain MREMAP_FIXED source that spans several VMAs (vma_multi_allowed()).
 * No header says so: the probes read mm/mremap.c where the build has the
 * kernel's source. check_mremap_params() itself is older (6.15), so they
 * look for what the 6.17 series that made both changes added:
 * vma_remap_struct's vmi_needs_invalidate, which the kernel's BTF also
 * records, where the build has one but no source (the probes' .btf
 * files). vma_flags_t (7.0) came after both, so with it they are certain.
 * With none of these (a headers package without BTF) the module follows
 * 6.16 and earlier: such a 6.17 or 6.18 answers some invalid calls with
 * another errno than mremap(2), and EFAULT to a multi-VMA move that
 * mremap(2) makes. The mutant swaps the orders.
 */
#if defined(FR_HAVE_MREMAP_CHECK_PARAMS) || defined(FR_HAVE_VMA_FLAGS_T)
#define FR_MREMAP_EARLY_TARGET_CHECKS (!FR_MUTANT(ERRNO_ORDER))
#else
#define FR_MREMAP_EARLY_TARGET_CHECKS FR_MUTANT(ERRNO_ORDER)
#endif
#if defined(FR_HAVE_MREMAP_MULTI_VMA) || defined(FR_HAVE_VMA_FLAGS_T)
#define FR_MREMAP_MULTI_VMA_MOVES 1
#else
#define FR_MREMAP_MULTI_VMA_MOVES 0
#endif
/*
 * Whether mremap(2) checks a target it is named before it looks up the
 * source (5.10 and 7.x), or in mremap_to() after the source checks (6.x).
 */
#define FR_MREMAP_TARGET_FIRST \
	(FR_MREMAP_EARLY_TARGET_CHECKS || FR_MREMAP_5_ORDER)

/* 7.x keeps __anon_vma_prepare() in mm/internal.h; 6.x in linux/rmap.h. */
typedef int (fr___anon_vma_prepare_fn)(struct vm_area_struct *vma);
#if defined(FR_HAVE_FOLIO)
/* mm/swap.h: the swap-cache folio of a swap entry, with a reference. */
#if defined(FR_HAVE_SWAP_ADDRESS_SPACE)
typedef struct folio *(fr_swap_cache_get_folio_fn)(swp_entry_t entry,
						   struct vm_area_struct *vma,
						   unsigned long addr);
#else
typedef struct folio *(fr_swap_cache_get_folio_fn)(swp_entry_t entry);
#endif
#endif /* FR_HAVE_FOLIO */

/* What a non-present, non-none PTE holds, for FASTREMAP_IOC_MOVE. */
enum fr_leaf {
	FR_LEAF_SWAP,
	FR_LEAF_MIGRATION,
	FR_LEAF_OTHER,	/* device, hwpoison, marker entries */
};

static inline enum fr_leaf fr_pte_leaf(pte_t pte, swp_entry_t *entry)
{
#if defined(FR_HAVE_SOFTLEAF)
	softleaf_t e = softleaf_from_pte(pte);

	*entry = e;
	if (softleaf_is_swap(e))
		return FR_LEAF_SWAP;
	if (softleaf_is_migration(e))
		return FR_LEAF_MIGRATION;
#else
	swp_entry_t e = pte_to_swp_entry(pte);

	*entry = e;
	if (!non_swap_entry(e))
		return FR_LEAF_SWAP;
	if (is_migration_entry(e))
		return FR_LEAF_MIGRATION;
#endif
	return FR_LEAF_OTHER;
}

#if defined(FR_HAVE_FOLIO)
/* The swap entry a swap-cache folio caches (folio->swap since 6.6). */
static inline unsigned long fr_folio_swap_val(struct folio *folio)
{
	return (unsigned long)folio->private;
}

/*
 * folio_move_anon_rmap() (not exported): the folio's anon_vma becomes
 * @anon_vma, written at once with its type bit so that a lockless
 * folio_test_anon() never sees one without the other.
 */
#ifdef FOLIO_MAPPING_ANON
#define FR_MAPPING_ANON	FOLIO_MAPPING_ANON
#else
#define FR_MAPPING_ANON	PAGE_MAPPING_ANON
#endif

static inline void fr_folio_move_anon(struct folio *folio,
				      struct anon_vma *anon_vma)
{
	WRITE_ONCE(folio->mapping, (struct address_space *)
		   ((unsigned long)anon_vma + FR_MAPPING_ANON));
}

/* The anon_vma of an anonymous folio that is not KSM's. */
static inline struct anon_vma *fr_folio_anon_vma(struct folio *folio)
{
	return (struct anon_vma *)((unsigned long)READ_ONCE(folio->mapping) -
				   FR_MAPPING_ANON);
}

/*
 * Whether a mapped folio of @from may become @to's. An rmap walker that
 * holds no folio lock (folio_referenced() from shrink_active_list(),
 * page_idle, DAMON) reads folio->mapping, then takes that anon_vma's root
 * lock. Kernels with UFFDIO_MOVE read folio->mapping again under the lock
 * and start over if it changed. Older ones rely on a mapped folio's
 * anon_vma changing only to a descendant of it (do_wp_page()'s reuse),
 * which keeps the old one alive, and the folio in its tree, for as long
 * as the folio is mapped: there only such a change is allowed.
 */
static inline bool fr_anon_vma_may_become(struct anon_vma *from,
					  struct anon_vma *to)
{
#if !defined(FR_HAVE_UFFDIO_MOVE)
	for (; to != from; to = to->parent)
		if (to->parent == to)
			return false;
#endif
	return true;
}
#endif /* FR_HAVE_FOLIO */

#endif /* FASTREMAP_COMPAT_H */
