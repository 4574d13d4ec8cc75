/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The page-table mover: relocates the entries of a range of one VMA to a
 * range of another, at the largest level alignment allows, with one TLB
 * flush. It knows nothing of mremap(2): remap.c does the VMA bookkeeping
 * around it, and a batched move inside existing VMAs can drive it the
 * same way (several fr_relocate() calls, then one flush per batch is the
 * natural extension of fr_relocate()'s own loop).
 */
#ifndef FASTREMAP_PGMOVE_H
#define FASTREMAP_PGMOVE_H

#include <linux/mm.h>

struct fr_pt_stats {
	u64 pud;	/* whole PUD entries (tables of PMDs) moved */
	u64 pmd;	/* whole PTE tables moved */
	u64 thp;	/* PMD-mapped huge pages (or their migration entries) moved */
	u64 pte;	/* PTEs moved */
	u64 flushes;	/* range TLB flushes issued */
	u64 contpte;	/* contiguous-PTE blocks moved whole, still one */
	u64 contpte_unfolded;	/* ... moved as single entries (cut, misaligned) */
};

/*
 * The table-copying mover (pgmove.c): x86-64 and arm64 (arch.h has what
 * differs). Test builds can turn it off (copy_tables=0, testhooks.h) to
 * count or test the per-entry mover alone.
 */
#if defined(CONFIG_X86_64) || defined(CONFIG_ARM64)
#define FR_COPY_TABLES	1
/*
 * A source PTE table whose entries were copied: detached before the
 * flush; after it, its dirty bits carried over, then freed, or emptied
 * and hooked back.
 */
struct fr_copied {
	pmd_t *old_pmd;		/* its PMD entry, cleared just before the flush */
	pmd_t pmdval;		/* the table */
	unsigned long old_addr;	/* the PMD-aligned source address it mapped */
	unsigned long new_addr;	/* where its first entry went */
	pmd_t *new_pmd[2];	/* the destination tables, below and above the split */
	/* Entries copied writable and clean: the only ones a CPU can dirty. */
	DECLARE_BITMAP(clean, PTRS_PER_PTE);
};

/*
 * The room for the tables a pass copies; when they are freed at once, it
 * goes with them to the RCU callback that frees them (kfuncs.c).
 */
struct fr_copy_buf {
	struct rcu_head rcu;
	unsigned int n;
	struct fr_copied c[];
};
#else
#define FR_COPY_TABLES	0
#endif

struct fr_reloc {
	struct mm_struct *mm;
	struct vm_area_struct *old_vma;
	struct vm_area_struct *new_vma;
	struct fr_pt_stats stats;
	bool moved;	/* something moved since the last flush */
	/*
	 * The caller unmaps the source range once the move is complete
	 * (not MREMAP_DONTUNMAP): the copying mover may free the source
	 * tables it detached instead of hooking them back.
	 */
	bool free_tables;
	/* Internal to fr_relocate(): the source range, and whether FR_PREPARE
	 * allocated a table where the source is.
	 */
	unsigned long src_start, src_end;
	bool table_in_source;
	unsigned long spent;	/* work done by this pass so far */
	unsigned int new_tables;	/* tables hooked in, not yet counted */
	u64 prof_t;	/* move_prof's clock (test builds) */
#if FR_COPY_TABLES
	/* Tables detached by this pass, room for how many, and how many
	 * whole source tables FR_PREPARE found for it.
	 */
	struct fr_copy_buf *buf;
	unsigned int ncopied, max_copied, want_copied;
#endif
};

/*
 * Moves the page-table entries of [old_addr, old_addr + len) in
 * m->old_vma to new_addr in m->new_vma. Returns how many bytes, from
 * old_addr on, were relocated: len, or less when a page table could not
 * be allocated (the caller moves that much back).
 *
 * The caller holds mmap_lock for write and has write-locked both VMAs;
 * the destination range holds no entries.
 */
unsigned long fr_relocate(struct fr_reloc *m, unsigned long old_addr,
			  unsigned long new_addr, unsigned long len);

/* For move.c: the same tables, entry marks and flush, without the VMA work. */

/* The PMD entry over @addr if the levels above it exist, else NULL. */
pmd_t *fr_table_lookup(struct mm_struct *mm, unsigned long addr);
/*
 * The PMD entry over @addr, allocating every level above it and, with
 * @pte, a PTE table below it if it is none; NULL when out of memory. It
 * may be a huge PMD: the caller reads it. Sleeps: call without rmap locks.
 */
pmd_t *fr_table_prepare(struct mm_struct *mm, unsigned long addr, bool pte);
/*
 * A moved entry as the destination gets it: soft-dirty, as mremap(2)
 * marks moved entries. Inline: both movers call it per entry, from their
 * hot pages (hot.h).
 */
static inline pte_t fr_moved_pte(pte_t pte)
{
#ifdef CONFIG_MEM_SOFT_DIRTY
	if (pte_present(pte))
		pte = pte_mksoft_dirty(pte);
	else
		pte = pte_swp_mksoft_dirty(pte);
#endif
	return pte;
}

static inline pmd_t fr_moved_pmd(pmd_t pmd)
{
#ifdef CONFIG_MEM_SOFT_DIRTY
	if (pmd_present(pmd))
		pmd = pmd_mksoft_dirty(pmd);
	else
		pmd = pmd_swp_mksoft_dirty(pmd);
#endif
	return pmd;
}

/*
 * Two page-table locks of one level, in the order every mover of the
 * kernel's takes such a pair (pgmove.c says why); either may be the other.
 */
void fr_lock2(spinlock_t *a, spinlock_t *b);
/* The pair taken @a first: make check-mutants' lock order mutants only. */
void fr_lock2_unordered(spinlock_t *a, spinlock_t *b);
void fr_unlock2(spinlock_t *a, spinlock_t *b);

/*
 * One range TLB flush for entries moved out of [start, end), of @vma's mm
 * (any VMA of it); no table freed.
 */
void fr_flush_moved(struct vm_area_struct *vma, unsigned long start,
		    unsigned long end, struct fr_pt_stats *stats);

#endif /* FASTREMAP_PGMOVE_H */
