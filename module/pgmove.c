// SPDX-License-Identifier: GPL-2.0
/*
 * Relocating page-table entries with one TLB flush.
 *
 * The kernel's mremap(2) flushes the TLB after every PTE table's worth of
 * PTEs and after every PMD or PUD entry it moves, each time before it
 * drops the page-table lock, because the page-table lock is all that keeps
 * the rmap walkers (reclaim, migration, folio_mkclean(), truncation) away
 * from the moved entries. Moving 1 GiB at PMD level costs it 512 flushes.
 *
 * This mover holds the reverse-map locks of the source VMA (i_mmap_rwsem
 * and the anon_vma lock, both for write) across the whole relocation, so
 * no rmap walker can see an entry between its move and the flush, and
 * issues one flush at the end, before those locks are released. That is
 * the difference from the single flush of the 2012 THP mremap patch
 * (CVE-2018-18281): there the locks were dropped first.
 *
 * Page tables must not be allocated with reclaim allowed while the
 * anon_vma lock is held for write: direct reclaim may wait on that very
 * lock (the deferred-split shrinker does), and the kernel never does it
 * either (see anon_vma_clone()). So the same walk runs twice: FR_PREPARE,
 * without the rmap locks, allocates every destination table and splits
 * every huge PMD that cannot move whole; FR_MOVE, under the rmap locks,
 * moves and never allocates. If FR_MOVE finds the source changed since
 * FR_PREPARE (a racing split or collapse), it stops; the caller flushes
 * what was moved, drops the locks, and prepares the rest again.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/rmap.h>
#include <linux/fs.h>
#include <linux/sched.h>
#include <linux/huge_mm.h>
#include <linux/mmu_notifier.h>
#include <linux/slab.h>
#include <asm/pgalloc.h>
#include "compat.h"
#include "arch.h"
#include "symbols.h"
#include "kfuncs.h"
#include "pgmove.h"
#include "hot.h"
#include "mutant.h"
#include "testhooks.h"

/*
 * Passes in a row that may make no progress before a move gives up: each
 * needs a racing retraction or collapse to land between its two walks.
 */
#define FR_MAX_STALLS	8

/*
 * The work one pass may do, and so how long the rmap write locks are held
 * at a time: every extent visited counts 1, a PTE-level extent one per
 * page it spans. 2^18 is a 1 GiB move at PTE level (or 512 GiB of PTE
 * tables or THPs, at PMD level): the largest pass that keeps a 1 GiB move
 * at one flush. Measured under QEMU TCG (tests/t_remap_latency.c, a
 * sparse 128 GiB misaligned move), others then wait 8-37 ms for the
 * locks; with no bound they waited 0.2-1.8 s, blocking fork, exit and
 * munmap in the fork tree and every mmap of the file meanwhile.
 */
#define FR_PASS_BUDGET	(1UL << 18)

enum fr_mode {
	FR_PREPARE,
	FR_MOVE,
};

/* Bytes from @addr to the next @size boundary of either address, or @end. */
static unsigned long fr_extent(unsigned long size, unsigned long old_addr,
			       unsigned long old_end, unsigned long new_addr)
{
	unsigned long mask = ~(size - 1), extent, next;

	next = (old_addr + size) & mask;
	/* A wrapped next gives a huge extent, cut back to old_end below. */
	extent = next - old_addr;
	if (extent > old_end - old_addr)
		extent = old_end - old_addr;
	next = (new_addr + size) & mask;
	if (extent > next - new_addr)
		extent = next - new_addr;
	return extent;
}

/*
 * FR_PREPARE allocated a table covering @size bytes around @addr. When the
 * ranges are close, that table may lie where the source is, and an
 * extent FR_PREPARE saw as empty now has a table: prepare again.
 */
static void fr_allocated(struct fr_reloc *m, unsigned long addr,
			 unsigned long size)
{
	unsigned long start = addr & ~(size - 1);

	if (start < m->src_end && start + size - 1 >= m->src_start)
		m->table_in_source = true;
}

/*
 * Whether the destination table for @new_addr maps addresses outside the
 * destination VMA: then a neighbouring VMA's faults, UFFDIO_MOVE or zaps,
 * which need only that VMA's lock, change its other entries under the
 * table's lock, and so does the copy. A table inside the VMA is reached by
 * nothing but this move (see fr_copy_table()).
 */
static inline bool fr_dst_shared(struct fr_reloc *m, unsigned long new_addr)
{
	unsigned long start = new_addr & PMD_MASK;

	return start < m->new_vma->vm_start ||
	       m->new_vma->vm_end - start < PMD_SIZE;
}

/*
 * FR_PREPARE's destination PTE table at @pmd, for @addr. __pte_alloc()
 * takes the PMD lock and adds to the mm's page-table bytes for every
 * table, two atomic operations; most of a long move's destination tables
 * are reached by nothing but the move, and need neither. A table whose
 * PMD span lies inside the destination VMA is hooked in without the lock:
 * what else populates a PMD entry (faults, GUP, the UFFDIO_ ioctls,
 * khugepaged's collapse) does so for an address of a VMA it holds locked,
 * and mmap_lock and the VMA write locks keep all of them out of this VMA
 * until the move is over; khugepaged's retraction, which needs only the
 * file's i_mmap_rwsem, clears entries under the PMD lock and never fills
 * one, and an entry it clears after this store is a table it frees, as it
 * would one __pte_alloc() hooked in (fr_relocate() prepares again). The
 * tables are counted in one update per walk, fr_count_tables(). A table
 * a neighbouring VMA shares goes through __pte_alloc(): its faults
 * populate the same entry under the PMD lock. Out of line, so that
 * fr_walk() stays inside one page (hot.h).
 */
static noinline int fr_new_table(struct fr_reloc *m, pmd_t *pmd,
				unsigned long addr)
{
	if (fr_hook_table_alloc_fails())
		return -ENOMEM;
	if (FR_PTE_ALLOC_ONE && !fr_dst_shared(m, addr)) {
		if (fr_pte_alloc_unlocked(m->mm, pmd))
			return -ENOMEM;
		m->new_tables++;
		return 0;
	}
	return fr_call(__pte_alloc, m->mm, pmd);
}

/* mm_inc_nr_ptes() for each table fr_new_table() hooked in, in one update. */
static void fr_count_tables(struct fr_reloc *m)
{
	if (m->new_tables && !FR_MUTANT(NEW_TABLE_UNCOUNTED))
		atomic_long_add((long)m->new_tables * PTRS_PER_PTE *
				sizeof(pte_t), &m->mm->pgtables_bytes);
	m->new_tables = 0;
}

/* A huge PMD, or a non-present one (THP migration or swap entry). */
static bool fr_pmd_is_huge(pmd_t pmd)
{
	return !pmd_none(pmd) && (!pmd_present(pmd) || pmd_leaf(pmd));
}

/* The source's PUD entry for @addr if it points to a PMD table, else NULL. */
static pud_t *fr_old_pud(struct mm_struct *mm, unsigned long addr)
{
	pgd_t *pgd = pgd_offset(mm, addr);
	p4d_t *p4d;
	pud_t *pud;

	if (pgd_none(*pgd) || pgd_bad(*pgd))
		return NULL;
	p4d = p4d_offset(pgd, addr);
	if (p4d_none(*p4d) || p4d_bad(*p4d))
		return NULL;
	pud = pud_offset(p4d, addr);
	if (pud_none(*pud) || pud_bad(*pud))
		return NULL;
	return pud;
}

/* The destination's PUD entry for @addr, allocating levels above it. */
static pud_t *fr_new_pud(struct fr_reloc *m, enum fr_mode mode,
			 unsigned long addr)
{
	pgd_t *pgd = pgd_offset(m->mm, addr);
	p4d_t *p4d;

	if (pgd_none(*pgd)) {
		if (mode == FR_MOVE || fr_hook_table_alloc_fails() ||
		    fr_p4d_alloc(m->mm, pgd, addr))
			return NULL;
		fr_allocated(m, addr, PGDIR_SIZE);
	}
	p4d = p4d_offset(pgd, addr);
	if (p4d_none(*p4d)) {
		if (mode == FR_MOVE || fr_hook_table_alloc_fails() ||
		    fr_call(__pud_alloc, m->mm, p4d, addr))
			return NULL;
		fr_allocated(m, addr, P4D_SIZE);
	}
	return pud_offset(p4d, addr);
}

static pmd_t *fr_new_pmd(struct fr_reloc *m, enum fr_mode mode, pud_t *pud,
			 unsigned long addr)
{
	if (pud_none(*pud)) {
		if (mode == FR_MOVE || fr_hook_table_alloc_fails() ||
		    fr_call(__pmd_alloc, m->mm, pud, addr))
			return NULL;
		fr_allocated(m, addr, PUD_SIZE);
	}
	if (pud_leaf(*pud))
		return NULL;
	return pmd_offset(pud, addr);
}

/*
 * The one place where both movers take two page-table locks of a level
 * (a source's and a destination's), lower lock address first, as
 * UFFDIO_MOVE takes its pairs (double_pt_lock(), move_pages_huge_pmd()).
 * mmap_lock held for write does not exclude every other mover: on
 * per-VMA-lock kernels UFFDIO_MOVE runs under the read locks of its own
 * two VMAs, which vma_start_write() on ours does not touch, and a page
 * table (2 MiB of PTEs, 1 GiB of PMDs) is shared by every VMA inside its
 * span. A move of ours from a table to another while UFFDIO_MOVE moves
 * between neighbours in the same two tables the other way would take the
 * same two spinlocks in opposite orders, and both CPUs would spin for
 * good. A single lock level is taken at a time: no PMD lock is taken
 * while a PTE lock is held, which keeps the kernel's PMD-then-PTE order
 * (collapse, retraction) out of the question.
 */
void fr_lock2(spinlock_t *a, spinlock_t *b)
{
	if (a > b && fr_hook_lock_swap())
		swap(a, b);
	fr_lock2_unordered(a, b);
}

void fr_lock2_unordered(spinlock_t *a, spinlock_t *b)
{
	fr_hook_lock_pair(a, b);
	spin_lock(a);
	if (b != a)
		spin_lock_nested(b, SINGLE_DEPTH_NESTING);
}

/* REMAP's pairs: the lock_unordered mutant takes the source's first. */
static inline void fr_reloc_lock2(spinlock_t *old_ptl, spinlock_t *new_ptl)
{
	if (FR_MUTANT(LOCK_UNORDERED))
		fr_lock2_unordered(old_ptl, new_ptl);
	else
		fr_lock2(old_ptl, new_ptl);
}

void fr_unlock2(spinlock_t *a, spinlock_t *b)
{
	if (b != a)
		spin_unlock(b);
	spin_unlock(a);
}

/* Counts a move of @n entries at one level in @counter; returns @n. */
static u64 fr_reloc_count(struct fr_reloc *m, u64 *counter, u64 n)
{
	if (n) {
		*counter += n;
		m->moved = true;
	}
	return n;
}

/*
 * Moves a whole PMD table from one PUD entry to another. Once per PUD:
 * kept out of fr_walk() so that the walk stays within its page.
 */
static noinline void fr_reloc_pud(struct fr_reloc *m, pud_t *old_pud, pud_t *new_pud)
{
	spinlock_t *old_ptl, *new_ptl;
	pud_t pud;

	old_ptl = pud_lockptr(m->mm, old_pud);
	new_ptl = pud_lockptr(m->mm, new_pud);
	fr_reloc_lock2(old_ptl, new_ptl);
	pud = *old_pud;
	fr_arch_pud_clear(old_pud);
	fr_arch_pud_move(m->mm, new_pud, pud);
	fr_unlock2(old_ptl, new_ptl);
	fr_reloc_count(m, &m->stats.pud, 1);
}

/*
 * Moves a whole PTE table. Returns false if the entry is no longer a
 * table once its lock is held (khugepaged may have retracted it: then
 * nothing is left to move, which the caller sees on its next read).
 */
static bool fr_reloc_pmd_table(struct fr_reloc *m, pmd_t *old_pmd,
			      pmd_t *new_pmd)
{
	spinlock_t *old_ptl, *new_ptl;
	bool moved = false;
	pmd_t pmd;

	old_ptl = pmd_lockptr(m->mm, old_pmd);
	new_ptl = pmd_lockptr(m->mm, new_pmd);
	fr_reloc_lock2(old_ptl, new_ptl);
	/* Re-check under the lock, as mm/mremap.c does since 2024. */
	pmd = *old_pmd;
	if (pmd_present(pmd) && !pmd_leaf(pmd) && pmd_none(*new_pmd)) {
		pmd_clear(old_pmd);
		pmd_populate(m->mm, new_pmd, pmd_pgtable(pmd));
		moved = true;
	}
	fr_unlock2(old_ptl, new_ptl);
	return fr_reloc_count(m, &m->stats.pmd, moved);
}

/*
 * Moves a huge PMD (or its migration entry) whole. Returns false if it is
 * no longer huge once its lock is held (split under us).
 */
static bool fr_reloc_huge_pmd(struct fr_reloc *m, unsigned long old_addr,
			     unsigned long new_addr, pmd_t *old_pmd,
			     pmd_t *new_pmd)
{
	spinlock_t *old_ptl, *new_ptl;
	bool moved = false;
	pgtable_t pgtable;
	pmd_t pmd;

	old_ptl = pmd_lockptr(m->mm, old_pmd);
	new_ptl = pmd_lockptr(m->mm, new_pmd);
	fr_reloc_lock2(old_ptl, new_ptl);
	if (fr_pmd_is_huge(*old_pmd) && pmd_none(*new_pmd)) {
		pmd = pmdp_huge_get_and_clear(m->mm, old_addr, old_pmd);
		/*
		 * An anonymous THP carries a deposited PTE table for its
		 * split; it lives with the PMD table's lock, so it follows
		 * the THP to another PMD table.
		 */
		if (new_ptl != old_ptl && vma_is_anonymous(m->old_vma) &&
		    !FR_MUTANT(THP_NO_DEPOSIT)) {
			pgtable = fr_call(pgtable_trans_huge_withdraw, m->mm,
					  old_pmd);
			fr_call(pgtable_trans_huge_deposit, m->mm, new_pmd,
				pgtable);
		}
		set_pmd_at(m->mm, new_addr, new_pmd,
			   FR_MUTANT(NO_SOFT_DIRTY) ? pmd : fr_moved_pmd(pmd));
		moved = true;
	}
	fr_unlock2(old_ptl, new_ptl);
	return fr_reloc_count(m, &m->stats.thp, moved);
}

/*
 * Moves the PTEs of one extent between two PTE tables. Every kind of entry
 * moves as it is: present pages (the zero page too), swap, migration and
 * marker entries; only the soft-dirty bit is set, as mremap(2) sets it.
 *
 * One atomic get-and-clear per entry, as the kernel does. Where a whole
 * source table moves, it is copied instead (fr_copy_table() below,
 * FR_COPY_TABLES): our one flush per pass allows copying with plain loads
 * and stores and detaching the table with one PMD clear. Counted against
 * this loop (bench/README.md, "Whole PTE tables moved by copying"), it
 * executes fewer instructions and loads and no atomic per entry, and the
 * hardware cost model makes it the faster on every modelled CPU of both
 * architectures. This loop moves the entries of
 * tables the range covers only in part (on arm64 unfolding the
 * contiguous-PTE blocks it cuts), everything under Xen PV, and everything
 * in test builds with copy_tables=0.
 */
static void __fr_hot __fr_page_aligned fr_reloc_ptes(struct fr_reloc *m, pmd_t *old_pmd,
			 unsigned long old_addr, unsigned long old_end,
			 pmd_t *new_pmd, unsigned long new_addr)
{
	spinlock_t *old_ptl, *new_ptl;
	pte_t *old_pte, *new_pte, pte;
	pmd_t pmdval = READ_ONCE(*old_pmd);
	unsigned long n = 0, nr;

	if (!pmd_present(pmdval) || pmd_leaf(pmdval))
		return;
	/*
	 * The lock of the table we read, as __pte_offset_map_lock() takes
	 * it: the live entry may have changed since (a retraction), and its
	 * lock would then be another table's. Both locks in fr_lock2()'s
	 * order, then the source checked again.
	 */
	old_ptl = pte_lockptr(m->mm, &pmdval);
	new_ptl = pte_lockptr(m->mm, new_pmd);
	fr_reloc_lock2(old_ptl, new_ptl);
	/* The table may have been retracted before we took its lock. */
	if (!pmd_same(pmdval, READ_ONCE(*old_pmd))) {
		fr_unlock2(old_ptl, new_ptl);
		return;
	}
	old_pte = pte_offset_kernel(old_pmd, old_addr);
	new_pte = pte_offset_kernel(new_pmd, new_addr);
	for (; old_addr < old_end; old_pte += nr, new_pte += nr,
	     old_addr += nr * PAGE_SIZE, new_addr += nr * PAGE_SIZE) {
		nr = 1;
		pte = fr_arch_pte_get(old_pte);
		switch (fr_arch_move_block(m->mm, pte, old_pte, old_addr,
					   old_end, new_pte, new_addr)) {
		case FR_BLOCK_KEPT:
			m->stats.contpte++;
			nr = FR_ARCH_BLOCK_PTES;
			n += nr;
			continue;
		case FR_BLOCK_UNFOLDED:
			m->stats.contpte_unfolded++;
			nr = FR_ARCH_BLOCK_PTES;
			n += nr;
			continue;
		case FR_BLOCK_CUT:
			/* Unfolded first: the part that stays loses the bit. */
			m->stats.contpte_unfolded++;
			pte = ptep_get_and_clear(m->mm, old_addr, old_pte);
			break;
		case FR_BLOCK_NONE:
			if (pte_none(pte))
				continue;
			pte = fr_arch_pte_clear(m->mm, old_addr, old_pte);
			break;
		}
		if (FR_MUTANT(NO_DIRTY) && pte_present(pte))
			pte = pte_mkclean(pte);
		fr_arch_set_pte(m->mm, new_addr, new_pte,
				FR_MUTANT(NO_SOFT_DIRTY) ? pte : fr_moved_pte(pte));
		n++;
	}
	fr_unlock2(old_ptl, new_ptl);
	fr_reloc_count(m, &m->stats.pte, n);
}

#if FR_COPY_TABLES
/*
 * The table-copying mover (x86-64, arm64): whole source tables, the PTE-level
 * moves' common case (bench/README.md, "Whole PTE tables moved by
 * copying", counts it against fr_reloc_ptes()).
 *
 * fr_reloc_ptes() pays an atomic get-and-clear per entry, as move_ptes()
 * does: once an entry is cleared, a CPU still holding a clean TLB entry
 * for it that writes faults instead of setting the dirty bit, and a dirty
 * bit set before the clear comes with the value. When a source table lies
 * wholly inside the moved range, fr_copy_table() instead copies its
 * entries into the destination table(s) with plain loads and stores and
 * leaves the source entries as they are; at the end of the pass,
 * fr_detach_tables() detaches every such table with one store to its PMD
 * entry, and after the pass's single flush fr_release_tables() carries
 * the dirty bits over and frees them, or empties them and hooks them
 * back. Why that is safe:
 *
 * - Who can touch the entries meanwhile. Everything that reads or changes
 *   PTEs in software is excluded, as for fr_reloc_ptes() (see the comment
 *   at the flush in fr_relocate()): faults and every mm walker by
 *   mmap_lock and the VMA write locks, every rmap walker (reclaim,
 *   migration, folio_mkclean(), truncation, retraction) by the rmap write
 *   locks. No other VMA maps into a source table whose whole PMD span is
 *   in the moved range (realigned or not, the range lies in one VMA and
 *   the holes next to it), so neither a per-VMA-lock fault nor
 *   UFFDIO_MOVE between neighbours can reach it; nor a destination table
 *   whose PMD span lies in the destination VMA. So the copy takes no
 *   page-table lock but that of a destination table a neighbour shares
 *   (fr_copy_table()). What remains is the hardware, which sets accessed
 *   and dirty bits with atomic updates, and lockless GUP-fast, which only
 *   reads.
 * - Both copies are valid at once until the flush: the old entry maps the
 *   page at the old address (through the table until its PMD entry is
 *   cleared, then through stale TLB and paging-structure caches), the
 *   new one at the new address. fr_reloc_ptes() allows the same from the
 *   other side: the page is mapped by a stale TLB entry the rmap cannot
 *   see until the flush, and nothing that could unmap, reclaim or
 *   write-protect it runs before then.
 * - Dirty bits. A CPU that writes through the old mapping after the copy
 *   sets the dirty bit in the old entry, which no longer reaches the new
 *   one. The detached table is not read again before the flush has
 *   completed on every CPU (freed_tables: the paging-structure caches
 *   too), after which no CPU can set a bit in it, nor reach it: its PMD
 *   entry was cleared before the flush. Then every old entry dirty where
 *   its copy is clean marks its folio dirty, as zap_pte_range() does for
 *   an entry it clears: before the rmap locks are dropped, so before
 *   reclaim, writeback's folio_mkclean() or MADV_FREE's discard can look
 *   at the folio. Marking it dirty is safe here as in zap_pte_range():
 *   the folio is mapped (by the new entry) and truncation cannot unmap it
 *   while i_mmap_rwsem is held. Only an entry copied writable and clean
 *   can gain a dirty bit (a write needs a writable TLB entry, and with
 *   mmap_lock held for write no write-protection waits for its flush;
 *   reclaim's batched one was settled by flush_tlb_batched_pending()),
 *   so the copy notes those, and only they are looked at again.
 * - Accessed bits set on old entries after the copy are not carried
 *   over: an access in that window makes the page look one scan colder
 *   to reclaim, as an access through a stale TLB entry after a
 *   get-and-clear does with mremap(2).
 * - What becomes of the detached table, after the flush and the dirty
 *   bits. On the pass that completes a move whose source the caller
 *   unmaps, it is freed (FR_FREE_TABLES: as khugepaged frees the table
 *   it retracts, fr_free_detached()), and the zap of the unmap finds no
 *   table to read. Until a move is complete, a later pass may run out
 *   of memory for tables, and the ENOMEM undo (remap.c), which moves
 *   back into the source, must find the source's tables there without
 *   allocating; a MREMAP_DONTUNMAP source stays mapped and keeps its
 *   tables. So every other pass's detached table, and every one where
 *   the module cannot free it (compat.h), is emptied with plain stores
 *   and hooked back under its PMD entry: an empty table where the source
 *   was, as move_ptes() leaves the source's tables. Who can still reach
 *   a detached table: no CPU's walker after the flush (which drops the
 *   paging-structure caches: see the arm64 item for its TLBI; on x86-64
 *   it is issued with freed_tables, which reaches every CPU of the mm,
 *   lazy ones too); lockless GUP-fast, which may have read the PMD entry
 *   before the detach and still be in the table. GUP-fast runs with
 *   interrupts off, which the grace period before the table is freed
 *   waits for, so the table outlives it (see fr_free_detached()). It
 *   sees valid entries (the move is
 *   not complete for it, as against fr_reloc_ptes() before a
 *   get-and-clear), then rechecks what it pinned through: the entry
 *   against the table, which holds none once emptied and hooked back,
 *   and (6.5+) the table against the PMD entry, which is none once
 *   freed; it drops the pin. Before 6.5 a pin through a table freed
 *   whole passes the recheck: it was taken while the page was still
 *   mapped at the old address, before the move was complete, as a pin
 *   taken before the call would have been.
 * - Partial tables. A table the range covers only partly (the first and
 *   last of an unaligned range) is shared with entries that stay, so it
 *   cannot be detached: its entries move with fr_reloc_ptes(). A
 *   misaligned move spreads one source table over two destination
 *   tables: both must exist (FR_PREPARE allocated them), else this falls
 *   back to fr_reloc_ptes() for the part the current extent covers.
 * - page_table_check (CONFIG_PAGE_TABLE_CHECK, the debug lanes) counts
 *   the mappings of every page through its hooks in set_pte_at() and the
 *   get-and-clear helpers. The copy and the emptying are raw stores
 *   (fr_arch_copy_pte(), fr_arch_pte_clear_raw(): native_set_pte() and
 *   native_pte_clear() on x86-64, WRITE_ONCE() on arm64) that pass none
 *   of them, so the count of each moved page stays the one it had: one
 *   mapping before the move, one after, the new entry, whose later unmap
 *   takes it to zero through the hooks. A copied entry left behind, or
 *   one lost, would show there as a count gone negative or a mapped page
 *   freed.
 * - arm64. The hardware sets the access flag and, with hardware dirty
 *   management (DBM), clears PTE_RDONLY of a writable entry on a write,
 *   both by atomic updates of the entry in memory, as x86's CPUs set
 *   their bits; without DBM a write to a clean entry faults, and waits
 *   for mmap_lock. The TLB invalidation of flush_tlb_range() is never
 *   leaf-only, so it drops the walk caches that hold a detached table
 *   too, and its completion (the DSB after the TLBIs) is where no CPU can
 *   translate through the old entries, nor update them, any more. Its
 *   dsb(ishst) orders the copies and the detach before the invalidation.
 *   The emptied table is hooked back after a smp_wmb() (arch.h,
 *   fr_arch_pmd_rehook()).
 * - arm64's contiguous-PTE blocks (6.9+). A source table lies wholly in
 *   the range, so no block is cut: each is copied whole, keeping its
 *   contiguous bit where it lands aligned, losing it elsewhere (arch.h,
 *   fr_arch_copy_cont()), counted as fr_reloc_ptes() counts a block moved
 *   whole (moved_contpte) or unfolded (unfolded_contpte). In a block the
 *   hardware may record a write to any of its pages in any entry of the
 *   block, as one TLB entry serves them all (which is why the kernel's
 *   contpte_ptep_get() reports the union of the block's bits for each
 *   entry). That still loses no dirty bit here: a block maps pages of a
 *   single folio (the kernel folds only such), and dirtiness is tracked
 *   per folio: rmap walkers, reclaim and writeback mark and test the
 *   folio, never the page. A write after the copy to any page of the
 *   block lands in an old entry that was either copied writable and
 *   clean, noted and read again after the flush, whose folio (the block's)
 *   is then marked dirty; or copied dirty, whose copy keeps the block's
 *   folio dirty. An old entry copied neither cannot be written through.
 *   Unfolded, the copies carry each entry's own bits where the kernel's
 *   unfold gives every entry the block's union: per-page reports (smaps)
 *   may count fewer pages young or dirty, while the folio's state, the
 *   union over its entries, is the same. A run of single entries of a
 *   large folio that the move brings into line is left single
 *   (fr_reloc_ptes() and mremap(2) try to fold it).
 */

/* The destination's PMD entry for @addr if it points to a PTE table. */
static pmd_t *fr_dst_table(struct mm_struct *mm, unsigned long addr)
{
	pud_t *pud = fr_old_pud(mm, addr);
	pmd_t *pmd, pmdval;

	if (!pud)
		return NULL;
	pmd = pmd_offset(pud, addr);
	pmdval = READ_ONCE(*pmd);
	if (!pmd_present(pmdval) || pmd_leaf(pmdval))
		return NULL;
	return pmd;
}

/*
 * A copied entry of a contiguous block (arm64): its contiguous bit as the
 * destination allows, and the block counted at its first entry. @i is its
 * index in the PMD-aligned source table, @new_addr where it goes.
 */
static inline void fr_copy_cont(struct fr_reloc *m, pte_t *pte, unsigned int i,
				unsigned long new_addr)
{
	enum fr_block b = fr_arch_copy_cont(pte, i, new_addr);

	if (i % FR_ARCH_BLOCK_PTES)
		return;
	if (b == FR_BLOCK_KEPT)
		m->stats.contpte++;
	else if (b == FR_BLOCK_UNFOLDED)
		m->stats.contpte_unfolded++;
}

/*
 * Copies entries @from to @to of the table at @old into @new_pmd's table,
 * noting in @clean which were writable and clean; under the destination
 * table's lock only if @shared (see fr_copy_table()). Plain stores: Xen
 * PV, whose set_pte() is a hypercall, never gets here (fr_copy_table()).
 * The entries are read raw (fr_arch_pte_get(): on arm64 without the
 * contiguous-PTE layer's gathering).
 */
static unsigned long __fr_hot __fr_page_aligned
fr_copy_ptes(struct fr_reloc *m, pte_t *old, unsigned int from,
	     unsigned int to, pmd_t *new_pmd, unsigned long new_addr,
	     bool shared, unsigned long *clean)
{
	spinlock_t *ptl = shared ? pte_lockptr(m->mm, new_pmd) : NULL;
	pte_t *dst = pte_offset_kernel(new_pmd, new_addr);
	pte_t *src = old + from, *end = old + to;
	unsigned long none = 0;
	bool soft = IS_ENABLED(CONFIG_MEM_SOFT_DIRTY) &&
		    !FR_MUTANT(NO_SOFT_DIRTY);
	pte_t pte;

	if (ptl)
		spin_lock(ptl);
	while (src < end) {
		unsigned int k, n;

		/*
		 * The common case, four present entries already dirty and not
		 * in contiguous blocks (fr_arch_ptes_plain()), needs the copy
		 * and nothing else: tested together, copied together. Each
		 * entry is read once either way, and written as the loop
		 * below would write it. Scalars, not an array: the kernel's
		 * stack initialisation would zero one per group.
		 */
		if (end - src >= 4) {
			pte_t p0 = fr_arch_pte_get(src), p1 = fr_arch_pte_get(src + 1);
			pte_t p2 = fr_arch_pte_get(src + 2), p3 = fr_arch_pte_get(src + 3);
			pteval_t v0 = fr_arch_pte_raw(p0), v1 = fr_arch_pte_raw(p1);
			pteval_t v2 = fr_arch_pte_raw(p2), v3 = fr_arch_pte_raw(p3);

			if (likely(fr_arch_ptes_plain(v0 & v1 & v2 & v3, v0 | v1 | v2 | v3) ||
				   FR_MUTANT(COPY_ALL_PLAIN))) {
				fr_arch_copy_pte(dst, soft ? pte_mksoft_dirty(p0) : p0);
				fr_arch_copy_pte(dst + 1, soft ? pte_mksoft_dirty(p1) : p1);
				fr_arch_copy_pte(dst + 2, soft ? pte_mksoft_dirty(p2) : p2);
				fr_arch_copy_pte(dst + 3, soft ? pte_mksoft_dirty(p3) : p3);
				src += 4;
				dst += 4;
				continue;
			}
		}
		/* fr_moved_pte(), entry by entry, read again. */
		n = min_t(unsigned long, end - src, 4);
		for (k = 0; k < n; k++, src++, dst++) {
			pte = fr_arch_pte_get(src);
			if (pte_none(pte)) {
				none++;
				continue;
			}
			if (likely(pte_present(pte))) {
				if (unlikely(fr_arch_pte_clean_writable(pte)))
					__set_bit(src - old, clean);
				if (unlikely(fr_arch_pte_cont(pte)))
					fr_copy_cont(m, &pte, src - old,
						     new_addr + ((src - old - from) << PAGE_SHIFT));
				if (soft)
					pte = pte_mksoft_dirty(pte);
			} else if (soft) {
				pte = pte_swp_mksoft_dirty(pte);
			}
			fr_arch_copy_pte(dst, pte);
		}
	}
	if (ptl)
		spin_unlock(ptl);
	return to - from - none;
}

/* Empties a detached table: plain stores, eight a round. */
static void fr_empty_table(pte_t *old)
{
	pte_t *end = old + PTRS_PER_PTE;

	for (; old < end; old += 8) {
		fr_arch_pte_clear_raw(old);
		fr_arch_pte_clear_raw(old + 1);
		fr_arch_pte_clear_raw(old + 2);
		fr_arch_pte_clear_raw(old + 3);
		fr_arch_pte_clear_raw(old + 4);
		fr_arch_pte_clear_raw(old + 5);
		fr_arch_pte_clear_raw(old + 6);
		fr_arch_pte_clear_raw(old + 7);
	}
}

/*
 * Whether the source table at @old_addr lies wholly in the range up to
 * @old_end and may be copied: what FR_PREPARE counts and FR_MOVE copies.
 * Not under Xen PV, whose set_pte() is a hypercall (fr_arch_copy_tables()).
 */
static inline bool fr_copy_whole(unsigned long old_addr, unsigned long old_end)
{
	return !(old_addr & ~PMD_MASK) && old_end - old_addr >= PMD_SIZE &&
	       fr_arch_copy_tables();
}

/*
 * Moves the whole source table at @old_pmd (@old_addr PMD-aligned) by
 * copying; see above. The first @extent bytes go to @new_pmd's table, the
 * rest to the next destination table. Returns false, having changed
 * nothing, when that cannot be done here: fr_reloc_ptes() then moves the
 * extent.
 */
static noinline bool fr_copy_table(struct fr_reloc *m, pmd_t *old_pmd,
				   unsigned long old_addr,
				   unsigned long old_end, pmd_t *new_pmd,
				   unsigned long new_addr,
				   unsigned long extent)
{
	unsigned int split = extent >> PAGE_SHIFT;
	pmd_t *new_pmd2 = NULL, pmdval;
	struct fr_copied *c;
	unsigned long n;
	pte_t *old;

	if (!fr_copy_whole(old_addr, old_end) || m->ncopied >= m->max_copied)
		return false;
	if (split < PTRS_PER_PTE) {
		new_pmd2 = fr_dst_table(m->mm, new_addr + extent);
		if (!new_pmd2)
			return false;
	}
	/*
	 * No lock for the source: its PMD entry and its table are the
	 * move's alone (see above: the whole PMD span is in the moved range,
	 * so no other VMA maps through them, and everything that could
	 * reach them through this range, faults, mm walkers, rmap walkers,
	 * khugepaged's collapse and retraction, is excluded by mmap_lock, the
	 * VMA write locks and the rmap write locks), as no lock is taken for
	 * the source entries either. No lock for a destination table inside
	 * the destination VMA, for the same reasons: FR_PREPARE allocated it
	 * or found it there, and only this move reaches it until mmap_lock is
	 * released. The table lock of a destination table shared with a
	 * neighbouring VMA is taken (fr_dst_shared()): one at each end of
	 * the range at most. fr_detach_tables() takes the PMD locks, as it
	 * writes entries of PMD tables that neighbours share.
	 */
	pmdval = READ_ONCE(*old_pmd);
	if (!pmd_present(pmdval) || pmd_leaf(pmdval))
		return false;
	c = &m->buf->c[m->ncopied++];
	bitmap_zero(c->clean, PTRS_PER_PTE);
	old = pte_offset_kernel(&pmdval, old_addr);
	n = fr_copy_ptes(m, old, 0, split, new_pmd, new_addr,
			 fr_dst_shared(m, new_addr), c->clean);
	if (new_pmd2)
		n += fr_copy_ptes(m, old, split, PTRS_PER_PTE, new_pmd2,
				  new_addr + extent,
				  fr_dst_shared(m, new_addr + extent), c->clean);

	c->old_pmd = old_pmd;
	c->pmdval = pmdval;
	c->old_addr = old_addr;
	c->new_addr = new_addr;
	c->new_pmd[0] = new_pmd;
	c->new_pmd[1] = new_pmd2;
	m->stats.pte += n;
	/* Even an empty table is detached, which needs the flush. */
	m->moved = true;
	return true;
}

static void fr_copy_begin(struct fr_reloc *m)
{
	m->ncopied = 0;
	m->max_copied = 0;
	m->want_copied = 0;
	m->buf = NULL;
}

/*
 * Room for the tables this pass may copy, as FR_PREPARE counted them, made
 * before the rmap locks (an allocation under them could wait for reclaim,
 * which takes them); none when it cannot be had, and then fr_reloc_ptes()
 * moves those tables. Sized by the count, not by the range: a move of
 * whole PMD or PUD entries copies no table, and allocates nothing.
 */
static void fr_copy_reserve(struct fr_reloc *m)
{
	if (m->want_copied <= m->max_copied || !fr_hook_copy_tables())
		return;
	kvfree(m->buf);
	m->buf = kvmalloc(struct_size(m->buf, c, m->want_copied),
			  GFP_KERNEL | __GFP_NOWARN);
	m->max_copied = m->buf ? m->want_copied : 0;
}

static void fr_copy_end(struct fr_reloc *m)
{
	kvfree(m->buf);
	m->buf = NULL;
	m->max_copied = 0;
}

/*
 * Before the flush: unhooks every table fr_copy_table() copied. Tables
 * under one PMD table share its lock, taken once for the run of them,
 * and held for one store per table: FR_PASS_BUDGET bounds the tables a
 * pass copies (512 with 4 KiB pages).
 */
static void fr_detach_tables(struct fr_reloc *m)
{
	spinlock_t *pml, *held = NULL;
	struct fr_copied *c;
	unsigned int k;

	for (k = 0; k < m->ncopied; k++) {
		c = &m->buf->c[k];
		pml = pmd_lockptr(m->mm, c->old_pmd);
		if (pml != held) {
			if (held)
				spin_unlock(held);
			spin_lock(pml);
			held = pml;
		}
		/* Nothing else may change it: see above. */
		VM_WARN_ON_ONCE(!pmd_same(*c->old_pmd, c->pmdval));
		pmd_clear(c->old_pmd);
	}
	if (held)
		spin_unlock(held);
}

/*
 * After the flush: carries the dirty bits the hardware set on detached
 * entries over to their folios, then empties each detached table with
 * plain stores and hooks it back where it was, or leaves it to
 * fr_free_copied() (@last: the pass that completed the move, of a move
 * whose source is unmapped; see above). Called with the rmap locks still
 * held. Old and new entries are read raw (fr_arch_pte_get()): in an arm64
 * contiguous block each entry's own bits, which is enough, as the folio,
 * not the page, is what is marked (see above).
 */
static void fr_release_tables(struct fr_reloc *m, bool last)
{
	bool free = FR_FREE_TABLES && m->free_tables &&
		    (last || FR_MUTANT(FREE_EVERY_PASS));
	pte_t *old, *new0, *new1 = NULL, *new;
	unsigned int k, i, split;
	struct fr_copied *c;
	spinlock_t *pml;
	pte_t pte;

	if (!m->ncopied)
		return;
	fr_hook_tables_copied(m->ncopied);
	for (k = 0; k < m->ncopied; k++) {
		c = &m->buf->c[k];
		old = pte_offset_kernel(&c->pmdval, c->old_addr);
		split = (PMD_SIZE - (c->new_addr & ~PMD_MASK)) >> PAGE_SHIFT;
		new0 = pte_offset_kernel(c->new_pmd[0], c->new_addr);
		if (c->new_pmd[1])
			new1 = pte_offset_kernel(c->new_pmd[1],
						 c->new_addr + split * PAGE_SIZE);
		for_each_set_bit(i, c->clean, PTRS_PER_PTE) {
			pte = fr_arch_pte_get(old + i);
			if (!pte_dirty(pte))
				continue;
			new = i < split ? new0 + i : new1 + (i - split);
			if (!pte_dirty(fr_arch_pte_get(new)) &&
			    !FR_MUTANT(COPY_NO_DIRTY))
				fr_mark_page_dirty(pte_page(pte));
		}
		if (free)
			continue;
		fr_empty_table(old);
		/* The entry it had (arch.h). */
		pml = pmd_lockptr(m->mm, c->old_pmd);
		spin_lock(pml);
		fr_arch_pmd_rehook(c->old_pmd, c->pmdval);
		spin_unlock(pml);
	}
	if (!free)
		m->ncopied = 0;
}

/*
 * The tables fr_release_tables() left to be freed. Once their dirty bits
 * are read nothing needs them, and nothing can reach them but a GUP-fast
 * walk begun before the detach, which fr_free_detached() waits out (see
 * above): so they are freed after the rmap locks are dropped, which
 * fork, exit and every mmap of the file in other processes wait for.
 */
static void fr_free_copied(struct fr_reloc *m)
{
	if (!FR_FREE_TABLES || !m->ncopied)
		return;
	fr_free_detached(m->mm, m->buf, m->ncopied);
	/* The module's own callback took @buf with the tables (compat.h). */
	if (FR_FREE_OWN_RCU) {
		m->buf = NULL;
		m->max_copied = 0;
	}
	m->ncopied = 0;
}
#else
static inline void fr_copy_begin(struct fr_reloc *m)
{
}

static inline void fr_copy_reserve(struct fr_reloc *m)
{
}

static inline void fr_copy_end(struct fr_reloc *m)
{
}

static inline void fr_detach_tables(struct fr_reloc *m)
{
}

static inline void fr_release_tables(struct fr_reloc *m, bool last)
{
}

static inline void fr_free_copied(struct fr_reloc *m)
{
}
#endif

/*
 * The one walk behind both modes, so that FR_MOVE takes exactly the
 * decisions FR_PREPARE provisioned for. Returns the source address it
 * stopped at: @old_end when done; earlier when FR_PREPARE could not
 * allocate, or when FR_MOVE needs a table or split that FR_PREPARE did not
 * provide because the source changed in between.
 */
static unsigned long __fr_hot __fr_page_aligned fr_walk(struct fr_reloc *m, enum fr_mode mode,
			     unsigned long old_addr, unsigned long old_end,
			     unsigned long new_addr)
{
	unsigned long budget = fr_hook_pass_budget(FR_PASS_BUDGET);
	unsigned long extent, cost = 0;
	pud_t *old_pud, *new_pud;
	pmd_t *old_pmd, *new_pmd;
	pmd_t pmd;

#if FR_COPY_TABLES
	/* The last FR_PREPARE walk before FR_MOVE counts for it. */
	if (mode == FR_PREPARE)
		m->want_copied = 0;
#endif
	for (; old_addr < old_end; old_addr += extent, new_addr += extent) {
		/*
		 * FR_PREPARE ends the pass where its work budget runs out
		 * (see FR_PASS_BUDGET); FR_MOVE then stops at the same place.
		 */
		m->spent += cost;
		if (mode == FR_PREPARE && m->spent >= budget)
			return old_addr;
		cost = 1;
		/* Sleeping is allowed here: only rwsems are held between extents. */
		cond_resched();

		extent = fr_extent(PUD_SIZE, old_addr, old_end, new_addr);
		old_pud = fr_old_pud(m->mm, old_addr);
		if (!old_pud)
			continue;
		new_pud = fr_new_pud(m, mode, new_addr);
		if (!new_pud)
			return old_addr;
		if (extent == PUD_SIZE && pud_none(*new_pud)) {
			if (mode == FR_MOVE)
				fr_reloc_pud(m, old_pud, new_pud);
			continue;
		}

		extent = fr_extent(PMD_SIZE, old_addr, old_end, new_addr);
		old_pmd = pmd_offset(old_pud, old_addr);
		pmd = READ_ONCE(*old_pmd);
		if (pmd_none(pmd))
			continue;
		new_pmd = fr_new_pmd(m, mode, new_pud, new_addr);
		if (!new_pmd)
			return old_addr;

		if (fr_pmd_is_huge(pmd)) {
			if (extent == PMD_SIZE && pmd_none(*new_pmd)) {
				if (mode == FR_PREPARE ||
				    fr_reloc_huge_pmd(m, old_addr, new_addr,
						     old_pmd, new_pmd))
					continue;
			} else if (mode == FR_PREPARE) {
				fr_split_huge_pmd(m->old_vma, old_pmd, old_addr);
			}
			pmd = READ_ONCE(*old_pmd);
			if (pmd_none(pmd))
				continue;
			if (fr_pmd_is_huge(pmd))
				return old_addr;
		}

		/* A PTE table. */
		cost = extent >> PAGE_SHIFT;
		if (extent == PMD_SIZE && pmd_none(*new_pmd)) {
			cost = 1;
			if (mode == FR_PREPARE ||
			    fr_reloc_pmd_table(m, old_pmd, new_pmd))
				continue;
			if (pmd_none(READ_ONCE(*old_pmd)))
				continue;
			return old_addr;
		}
		if (pmd_none(*new_pmd)) {
			if (mode == FR_MOVE || fr_new_table(m, new_pmd, new_addr))
				return old_addr;
			fr_allocated(m, new_addr, PMD_SIZE);
		}
		if (fr_pmd_is_huge(*new_pmd))
			return old_addr;
#if FR_COPY_TABLES
		/* A whole source table is copied. */
		if (mode == FR_PREPARE && fr_copy_whole(old_addr, old_end))
			m->want_copied++;
		if (mode == FR_MOVE &&
		    fr_copy_table(m, old_pmd, old_addr, old_end, new_pmd,
				  new_addr, extent)) {
			extent = PMD_SIZE;
			continue;
		}
#endif
		if (mode == FR_MOVE)
			fr_reloc_ptes(m, old_pmd, old_addr, old_addr + extent,
				     new_pmd, new_addr);
	}
	return old_end;
}

static void fr_rmap_lock(struct vm_area_struct *vma)
{
	if (vma->vm_file)
		i_mmap_lock_write(vma->vm_file->f_mapping);
	if (vma->anon_vma)
		anon_vma_lock_write(vma->anon_vma);
}

static void fr_rmap_unlock(struct vm_area_struct *vma)
{
	if (vma->anon_vma)
		anon_vma_unlock_write(vma->anon_vma);
	if (vma->vm_file)
		i_mmap_unlock_write(vma->vm_file->f_mapping);
}

/*
 * Can the move start at the PMD boundary below @addr instead, in @vma?
 * Only if @addr is where @vma starts and no VMA lies between the boundary
 * and @addr: then the entries there are all none, and moving them too
 * changes nothing but lets a whole PTE table move.
 */
static bool fr_can_align_down(struct vm_area_struct *vma, unsigned long addr)
{
	if (vma->vm_start != addr)
		return false;
	return !find_vma_intersection(vma->vm_mm, addr & PMD_MASK, addr);
}

/*
 * mm/mremap.c's try_realign_addr() (6.7+), on every kernel: a move whose
 * two ends are congruent modulo PMD_SIZE but start inside a PMD, and
 * which reaches the next PMD boundary, starts at the boundary below when
 * nothing else is mapped there on either side, so its first PTE table
 * moves whole rather than entry by entry. Never doing less than
 * mremap(2) does matters beyond speed: a whole table moved keeps its
 * entries' soft-dirty bits as they are, entries moved one by one become
 * soft-dirty, and a checkpointer would see the difference.
 */
static void fr_realign(struct fr_reloc *m, unsigned long *old_addr,
		       unsigned long *new_addr, unsigned long len)
{
	unsigned long off = *old_addr & ~PMD_MASK;

	if (!off || off != (*new_addr & ~PMD_MASK) || FR_MUTANT(NO_REALIGN))
		return;
	if (len < PMD_SIZE - off)
		return;
	if (!fr_can_align_down(m->old_vma, *old_addr) ||
	    !fr_can_align_down(m->new_vma, *new_addr))
		return;
	*old_addr -= off;
	*new_addr -= off;
}

unsigned long fr_relocate(struct fr_reloc *m, unsigned long old_addr,
			  unsigned long new_addr, unsigned long len)
{
	unsigned long old_end = old_addr + len, start = old_addr;
	unsigned long prepared, stop, done;
	struct mmu_notifier_range range;
	int pass, stalls = 0;

	if (!len)
		return 0;
	fr_realign(m, &old_addr, &new_addr, len);
	done = old_addr;
	m->src_start = old_addr;
	m->src_end = old_end;
	fr_copy_begin(m);
	fr_mmu_notifier_start(&range, m->old_vma, old_addr, old_end);
	while (done < old_end) {
		/*
		 * Each pass allocates only for tables the previous one
		 * created inside the source, so this settles in a few.
		 */
		pass = 0;
		do {
			m->table_in_source = false;
			m->spent = 0;
			prepared = fr_walk(m, FR_PREPARE, done, old_end,
					   new_addr + (done - old_addr));
			fr_count_tables(m);
		} while (m->table_in_source && prepared > done && ++pass < 8);
		if (prepared == done)
			break;	/* out of memory for page tables */
		fr_copy_reserve(m);
		fr_hook_prepared();
		fr_prof_lap(&m->prof_t, FR_PROF_R_PREPARE);

		/*
		 * Lock order, as in mm/rmap.c: mmap_lock (held by the
		 * caller, for write), i_mmap_rwsem, anon_vma, page-table
		 * locks (taken and dropped per entry inside the walk).
		 * The source VMA's rmap locks cover the destination too:
		 * copy_vma() gives the new VMA the same file and anon_vma
		 * (or one of the same root, which is what is locked).
		 */
		fr_rmap_lock(m->old_vma);
		/* A PTE reclaim cleared with its flush still pending must not move. */
		fr_flush_tlb_batched_pending(m->mm);
		stop = fr_walk(m, FR_MOVE, done, prepared,
			       new_addr + (done - old_addr));
		fr_prof_lap(&m->prof_t, FR_PROF_R_MOVE);
		/*
		 * The single TLB flush, for everything moved in this pass.
		 * Until it completes, other CPUs may still translate source
		 * addresses through stale TLB entries to the moved pages, or
		 * walk the moved tables through stale paging-structure
		 * caches. That is safe while nothing can free, reuse or
		 * write-protect those pages or tables, and that holds until
		 * the rmap locks below are dropped: page faults need
		 * mmap_lock or, on per-VMA-lock kernels (6.4+), the faulting
		 * VMA's read lock, which vma_start_write() on both VMAs
		 * (remap.c) excludes until mmap_lock is released; madvise,
		 * munmap, mprotect, khugepaged collapse, KSM, NUMA hinting
		 * and /proc walkers all need mmap_lock, held for write;
		 * reclaim, migration, folio_mkclean(), truncation and
		 * khugepaged's retract_page_tables() reach PTEs only
		 * through the rmap, whose locks are held for write. Entries
		 * of partly moved tables were cleared with atomic
		 * get-and-clear, so no dirty or accessed bit set before the
		 * move is lost; a write through a stale clean TLB entry
		 * must set the dirty bit, finds the source entry gone and
		 * faults. Page-table locks were dropped per entry: with all
		 * of the above excluded they only order us against lockless
		 * GUP-fast, which sees either the old or the new entry,
		 * both valid. Whole tables copied keep their old entries in
		 * tables fr_detach_tables() unhooks just before it, whose
		 * dirty bits are read only after this flush: see
		 * fr_copy_table()'s argument. The test hold comes before
		 * the detach, so that a test can write through the copied
		 * tables' old entries while both copies are live.
		 *
		 * One flush per pass, and a pass is bounded by FR_PASS_BUDGET
		 * so that the rmap write locks, which fork, exit, munmap and
		 * every mmap of the file in other processes wait for, are
		 * held for milliseconds, not for the whole of a huge move:
		 * one flush per call up to 1 GiB of PTEs or 512 GiB of
		 * whole entries, one per such pass beyond.
		 */
		if (m->moved) {
			fr_hook_unflushed();
			fr_detach_tables(m);
			if (!FR_MUTANT(NO_FLUSH))
				fr_arch_flush_moved(m->old_vma, done,
						    FR_MUTANT(FLUSH_2M) ?
						    min(stop, done + PMD_SIZE) :
						    stop);
			m->stats.flushes++;
			m->moved = false;
		}
		fr_prof_lap(&m->prof_t, FR_PROF_R_FLUSH);
		fr_release_tables(m, stop == old_end);
		fr_rmap_unlock(m->old_vma);
		fr_free_copied(m);
		fr_prof_lap(&m->prof_t, FR_PROF_R_UNLOCK);
		/*
		 * No progress although every table was prepared: the source
		 * or destination changed between the two walks. Since 6.6,
		 * retract_page_tables() (khugepaged, or MADV_COLLAPSE in any
		 * process mapping the same file) frees empty PTE tables of a
		 * file VMA under i_mmap_rwsem for read alone, so it can free
		 * a destination table FR_PREPARE just allocated. mm/mremap.c
		 * retries such a move (move_ptes() gives -EAGAIN); so do we,
		 * a bounded number of times, instead of failing with ENOMEM.
		 */
		if (stop == done) {
			if (++stalls > FR_MAX_STALLS)
				break;
			fr_hook_stalled();
			continue;
		}
		stalls = 0;
		done = stop;
	}
	fr_mmu_notifier_end(&range);
	fr_copy_end(m);
	/* Realigned, and stopped inside the first PMD: nothing of ours moved. */
	return done > start ? done - start : 0;
}

/*
 * Helpers for FASTREMAP_IOC_MOVE (move.c, move_pte.c), which moves PTEs
 * between existing VMAs with its own folio work but the same tables and
 * flush.
 */

pmd_t *fr_table_lookup(struct mm_struct *mm, unsigned long addr)
{
	pud_t *pud = fr_old_pud(mm, addr);

	return pud ? pmd_offset(pud, addr) : NULL;
}

pmd_t *fr_table_prepare(struct mm_struct *mm, unsigned long addr, bool pte)
{
	/* No source range: fr_allocated() records nothing. */
	struct fr_reloc m = { .mm = mm };
	pud_t *pud;
	pmd_t *pmd;

	pud = fr_new_pud(&m, FR_PREPARE, addr);
	if (!pud)
		return NULL;
	pmd = fr_new_pmd(&m, FR_PREPARE, pud, addr);
	if (!pmd)
		return NULL;
	if (pte && pmd_none(*pmd) &&
	    (fr_hook_table_alloc_fails() || fr_call(__pte_alloc, mm, pmd)))
		return NULL;
	return pmd;
}

void fr_flush_moved(struct vm_area_struct *vma, unsigned long start,
		    unsigned long end, struct fr_pt_stats *stats)
{
	fr_arch_flush_entries(vma, start, end);
	stats->flushes++;
}
