// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_MOVE, entry by entry: the locked half of a pass moves each
 * present PTE, swap entry and PMD-mapped THP, and re-homes the folio
 * behind it (move.c says how a pass is locked and flushed). Nothing here
 * sleeps: a busy folio or a table to prepare ends the pass (FR_RETRY).
 */
#include <linux/mm.h>
#include <linux/rmap.h>
#include <linux/pagemap.h>
#include <linux/fastremap.h>
#include "compat.h"
#include "symbols.h"
#include "kfuncs.h"
#include "arch.h"
#include "pgmove.h"
#include "move_internal.h"
#include "hot.h"
#include "mutant.h"

/* The PMD entry over @addr, or NULL if a level above it is missing. */
pmd_t *fr_move_pmd(struct fr_batch *b, struct fr_pmd_cache *c,
			  unsigned long addr)
{
	if (c->pmd && c->base == (addr & PMD_MASK))
		return c->pmd;
	c->base = addr & PMD_MASK;
	c->pmd = fr_table_lookup(b->mm, addr);
	return c->pmd;
}

/* A PMD that maps a huge page or holds a migration or swap entry. */
static bool fr_move_pmd_huge(pmd_t pmd)
{
	return !pmd_none(pmd) && (!pmd_present(pmd) || pmd_leaf(pmd));
}

/*
 * Whether @page may leave this process's page tables at all: exclusive to
 * it (not shared with a child since fork(2)) and not pinned. Asked before
 * a large folio is split too: a page that cannot move is no reason to
 * split a folio that a child may map whole.
 */
bool fr_move_page_movable(struct page *page)
{
	return (PageAnonExclusive(page) || FR_MUTANT(MOVE_NO_EXCLUSIVE)) &&
	       !folio_maybe_dma_pinned(page_folio(page));
}

/*
 * Whether the @len bytes at the source PMD @pmd are a THP of this
 * process's that may move whole: a whole, aligned PMD on both sides
 * (fr_move_extent() cut @len at both boundaries) with an anonymous folio.
 * The destination must also be none; the huge zero page is split instead.
 */
bool fr_move_thp_whole(struct fr_batch *b, pmd_t *pmd, unsigned long len)
{
	pmd_t pmdval;

	if (!pmd || len != PMD_SIZE)
		return false;
	pmdval = READ_ONCE(*pmd);
	if (!pmd_present(pmdval) || !pmd_leaf(pmdval))
		return false;
	return folio_test_anon(page_folio(pmd_page(pmdval)));
}

/* A PMD-mapped THP of this process's that must not move (nor be split). */
bool fr_move_thp_stuck(pmd_t pmd)
{
	struct page *page = pmd_page(pmd);

	return folio_test_anon(page_folio(page)) && !fr_move_page_movable(page) &&
	       !FR_MUTANT(MOVE_SPLIT_SHARED);
}

/* MOVE's pairs: the move_lock_unordered mutant takes the source's first. */
static inline void fr_move_lock2(spinlock_t *src_ptl, spinlock_t *dst_ptl)
{
	if (FR_MUTANT(MOVE_LOCK_UNORDERED))
		fr_lock2_unordered(src_ptl, dst_ptl);
	else
		fr_lock2(src_ptl, dst_ptl);
}

/* Widens the span of sources the pass flushes to [@lo, @hi). */
static void fr_move_moved(struct fr_batch *b, unsigned long lo,
			  unsigned long hi)
{
	if (b->hi <= b->lo) {
		b->lo = lo;
		b->hi = hi;
	} else {
		b->lo = min(b->lo, lo);
		b->hi = max(b->hi, hi);
	}
}

/*
 * Moves one present PTE (a small exclusive anonymous folio or the zero
 * page), counted; fr_move_entries() widens the flush span. Inlined into
 * fr_move_entries()'s loop, with everything it calls.
 */
static inline int fr_move_present(struct fr_batch *b, struct vm_area_struct *dvma,
			   unsigned long src, unsigned long dst, pte_t *src_pte,
			   pte_t *dst_pte, pte_t orig)
{
	unsigned long pfn = pte_pfn(orig);
	struct folio *folio = NULL;
	bool locked = false;
	struct page *page;
	pte_t pte;

	if (!is_zero_pfn(pfn)) {
		/*
		 * No pfn_valid(): in a private anonymous VMA (no PFN or
		 * mixed maps, fr_move_vma_ok()) a present entry that is not
		 * special maps a page with a struct page, which is what
		 * vm_normal_page() assumes too.
		 */
		if (pte_special(orig))
			return -EBUSY;
		page = pfn_to_page(pfn);
		folio = page_folio(page);
		if (!folio_test_anon(folio) || folio_test_ksm(folio))
			return -EBUSY;
		if (folio_test_large(folio))
			return fr_move_page_movable(page) ? FR_RETRY : -EBUSY;
		/*
		 * A pin is looked for once, after the clear below, which
		 * is the check that counts; a pinned page goes back as it
		 * was.
		 */
		if (!PageAnonExclusive(page) && !FR_MUTANT(MOVE_NO_EXCLUSIVE))
			return -EBUSY;
		/*
		 * The folio lock is taken only when the folio changes
		 * anon_vma. Within one anon_vma (a heap is one VMA) only
		 * the index changes, and everyone who reads it for a mapped
		 * folio already waits for us: rmap walkers (reclaim,
		 * migration, memory failure, splits, page_idle) read it
		 * after taking the anon_vma root lock, which we hold for
		 * write; faults, GUP's slow path, madvise, KSM, khugepaged,
		 * swapoff and /proc readers need mmap_lock or a VMA read
		 * lock first, excluded until the call returns. A walker
		 * that locked the folio before us still reads the index
		 * under the root lock, so it finds the folio at one place
		 * or the other, never between: the folio lock adds nothing
		 * there. The folio is small and exclusive, so no split and
		 * no other mm's rmap work can hold it meanwhile. When the
		 * anon_vma changes, a walker may already have read the old
		 * one without the root lock (folio_lock_anon_vma_read()):
		 * one that holds the folio lock must then see it unchanged,
		 * so that case trylocks as UFFDIO_MOVE does.
		 */
		if (READ_ONCE(folio->mapping) != (struct address_space *)
		    ((unsigned long)dvma->anon_vma + FR_MAPPING_ANON)) {
			if (!fr_anon_vma_may_become(fr_folio_anon_vma(folio),
						    dvma->anon_vma))
				return -EXDEV;
			if (!folio_trylock(folio)) {
				folio_get(folio);
				b->wait = folio;
				return FR_RETRY;
			}
			locked = true;
		}
	}
	pte = ptep_get_and_clear(b->mm, src, src_pte);
	if (folio) {
		/*
		 * GUP-fast pins the folio, then reads the PTE again and backs
		 * off if it changed: with the entry cleared before the pin
		 * count is read, either it sees the clear or we see its pin.
		 * ptep_get_and_clear() is an atomic exchange on both
		 * architectures the module builds for (x86 xchg, a full
		 * barrier already; arm64 xchg_relaxed, which this turns
		 * into smp_mb()), so it orders like any atomic here.
		 */
		smp_mb__after_atomic();
		if (folio_maybe_dma_pinned(folio) && !FR_MUTANT(MOVE_NO_PIN_CHECK)) {
			set_pte_at(b->mm, src, src_pte, pte);
			if (locked)
				folio_unlock(folio);
			return -EBUSY;
		}
		if (locked)
			fr_folio_move_anon(folio, dvma->anon_vma);
		if (!FR_MUTANT(MOVE_NO_INDEX))
			WRITE_ONCE(folio->index, fr_anon_page_index(dvma, dst));
	}
	/*
	 * Until the flush, another CPU may write this page through a stale
	 * clean TLB entry for @src. Were @src refilled by a later move of
	 * the batch, its dirty-bit update could land on the new entry and
	 * leave this page modified under a clean PTE, which reclaim would
	 * then drop from the swap cache. A writable entry moves dirty.
	 */
	if (pte_write(pte) && !pte_dirty(pte))
		pte = pte_mkdirty(pte);
	fr_arch_set_pte(b->mm, dst, dst_pte,
			FR_MUTANT(MOVE_NO_SOFT_DIRTY) ? pte : fr_moved_pte(pte));
	if (locked)
		folio_unlock(folio);
	b->stats.pte++;
	return 0;
}

/*
 * Moves a swap entry, and re-homes its swap-cache folio if it has one
 * that was mapped (an unmapped one read ahead gets its index when it is
 * mapped). Swapoff cannot free the device meanwhile: it must replace
 * this entry first, under this mm's mmap_lock, which we hold for write.
 */
static noinline int fr_move_swap(struct fr_batch *b, struct vm_area_struct *dvma,
			unsigned long src, unsigned long dst, pte_t *src_pte,
			pte_t *dst_pte, pte_t orig)
{
	struct folio *folio;
	swp_entry_t entry;
	pte_t pte;

	switch (fr_pte_leaf(orig, &entry)) {
	case FR_LEAF_SWAP:
		break;
	case FR_LEAF_MIGRATION:
		return FR_WAIT;
	default:
		return -EFAULT;
	}
	/* Shared with a child since fork(2). */
	if (!pte_swp_exclusive(orig))
		return -EBUSY;
	/*
	 * On 6.x this is swap_cache_get_folio() without a VMA, as shmem's
	 * swap-in calls it: a folio still marked PG_readahead (read ahead,
	 * never mapped), or PG_reclaim, the same bit (under writeback for
	 * reclaim), loses the mark and counts a readahead hit (SWAP_RA_HIT,
	 * and swapin_readahead_hits, which sizes the next cluster
	 * readahead's window). The destination's fault then credits no hit
	 * to its VMA's window, and folio_end_writeback() does not rotate
	 * the folio to the inactive tail. Readahead sizing and LRU order
	 * only, one hit per folio at most. UFFDIO_MOVE and memcg's charge
	 * moving skip the accounting with filemap_get_folio() on
	 * swap_address_space(), which needs mm/swap.h's private layout:
	 * swapper_spaces is not exported and its index changed between 6.1
	 * and 6.12 (swap_cache_index()), which no feature test can see. On
	 * 7.x the lookup counts nothing (the fault calls
	 * swap_update_readahead()).
	 *
	 * The folio is mapped nowhere (the entry is exclusive), so no rmap
	 * walk that reads its anon_vma now can miss it: folio_referenced()
	 * returns at once for a zero mapcount, folio_lock_anon_vma_read()
	 * gives up on an unmapped folio, and the walkers that go on
	 * (try_to_unmap(), migration) hold the folio lock, taken first
	 * here. folio_referenced()'s lockless caller, shrink_active_list(),
	 * keeps the folio off the LRU, so reclaim cannot have unmapped it
	 * into this entry during that walk. A lockless walker that read the
	 * old anon_vma while the folio was still mapped and locks it only
	 * after the destination's fault maps the folio again (page_idle,
	 * DAMON) meets what a move of a mapped folio leaves it: 6.1's
	 * folio_lock_anon_vma_read() does not check folio->mapping again
	 * after locking, as kernels with UFFDIO_MOVE do.
	 */
	folio = fr_swap_cache_folio(entry);
	if (folio) {
		if (folio_test_large(folio)) {
			folio_put(folio);
			return -EBUSY;
		}
		if (!folio_trylock(folio)) {
			b->wait = folio;
			return FR_RETRY;
		}
		if (folio_test_swapcache(folio) &&
		    fr_folio_swap_val(folio) == entry.val &&
		    folio_test_anon(folio)) {
			fr_folio_move_anon(folio, dvma->anon_vma);
			if (!FR_MUTANT(MOVE_NO_INDEX))
				WRITE_ONCE(folio->index,
					   fr_anon_page_index(dvma, dst));
		}
	}
	pte = ptep_get_and_clear(b->mm, src, src_pte);
	fr_arch_set_pte(b->mm, dst, dst_pte,
			FR_MUTANT(MOVE_NO_SOFT_DIRTY) ? pte : fr_moved_pte(pte));
	if (folio) {
		folio_unlock(folio);
		folio_put(folio);
	}
	b->stats.pte++;
	return 0;
}

/*
 * Moves a PMD-mapped THP whole, as move_pages_huge_pmd() does: the same
 * checks as for a small folio, the deposited PTE table follows it.
 */
static noinline int fr_move_thp(struct fr_batch *b, struct vm_area_struct *dvma,
		       unsigned long src, unsigned long dst, pmd_t *src_pmd,
		       pmd_t *dst_pmd)
{
	spinlock_t *src_ptl = pmd_lockptr(b->mm, src_pmd);
	spinlock_t *dst_ptl = pmd_lockptr(b->mm, dst_pmd);
	struct folio *folio;
	struct page *page;
	pgtable_t pgtable;
	int ret = 0;
	pmd_t pmd;

	fr_move_lock2(src_ptl, dst_ptl);
	pmd = *src_pmd;
	if (!pmd_present(pmd) || !pmd_leaf(pmd) || !pmd_none(*dst_pmd)) {
		ret = FR_RETRY;
		goto out;
	}
	page = pmd_page(pmd);
	folio = page_folio(page);
	if (!folio_test_anon(folio)) {
		ret = FR_RETRY;		/* the huge zero page: split it */
		goto out;
	}
	if (!fr_move_page_movable(page)) {
		ret = -EBUSY;
		goto out;
	}
	if (!fr_anon_vma_may_become(fr_folio_anon_vma(folio), dvma->anon_vma)) {
		ret = -EXDEV;
		goto out;
	}
	if (!folio_trylock(folio)) {
		folio_get(folio);
		b->wait = folio;
		ret = FR_RETRY;
		goto out;
	}
	pmd = pmdp_huge_get_and_clear(b->mm, src, src_pmd);
	/* As in fr_move_present(): a GUP-fast pin or our clear, seen. */
	smp_mb();
	if (folio_maybe_dma_pinned(folio)) {
		set_pmd_at(b->mm, src, src_pmd, pmd);
		folio_unlock(folio);
		ret = -EBUSY;
		goto out;
	}
	fr_folio_move_anon(folio, dvma->anon_vma);
	if (!FR_MUTANT(MOVE_NO_INDEX))
		WRITE_ONCE(folio->index, fr_anon_page_index(dvma, dst));
	if (dst_ptl != src_ptl) {
		pgtable = fr_call(pgtable_trans_huge_withdraw, b->mm, src_pmd);
		fr_call(pgtable_trans_huge_deposit, b->mm, dst_pmd, pgtable);
	}
	/* As in fr_move_present(): a writable entry moves dirty. */
	if (pmd_write(pmd))
		pmd = pmd_mkdirty(pmd);
	set_pmd_at(b->mm, dst, dst_pmd,
		   FR_MUTANT(MOVE_NO_SOFT_DIRTY) ? pmd : fr_moved_pmd(pmd));
	folio_unlock(folio);
	fr_move_moved(b, src, src + PMD_SIZE);
	b->stats.thp++;
out:
	fr_unlock2(src_ptl, dst_ptl);
	return ret;
}

/*
 * Moves up to @len bytes (inside one PTE table on each side) from @src to
 * @dst; *done is set to the bytes done, holes skipped included.
 *
 * The per-page loop of every batch, placed as fr_walk() is (hot.h): a
 * page of text of its own, and flattened, so that the checks of a
 * present entry (pfn_valid() and its section lookup, the folio tests,
 * the store) are inlined rather than left as calls out of the page per
 * entry. Swap entries and THPs, rare in a collector's heap, take calls.
 */
noinline int __fr_hot __fr_page_aligned __fr_flatten fr_move_entries(struct fr_batch *b,
			struct vm_area_struct *dvma, unsigned long src,
			unsigned long dst, unsigned long len, unsigned long *done)
{
	spinlock_t *src_ptl, *dst_ptl;
	pte_t *src_pte = NULL, *dst_pte, orig;
	pmd_t *src_pmd, *dst_pmd, spmd, dpmd;
	unsigned long n, lo = 0, hi = 0;
	int ret = 0;

	*done = 0;
	dst_pmd = fr_move_pmd(b, &b->dst_pmd, dst);
	if (!dst_pmd)
		return FR_RETRY;
	dpmd = READ_ONCE(*dst_pmd);
	if (fr_move_pmd_huge(dpmd))
		return -EEXIST;
	src_pmd = fr_move_pmd(b, &b->src_pmd, src);
	if (pmd_none(dpmd)) {
		if (!fr_move_thp_whole(b, src_pmd, len))
			return FR_RETRY;
		ret = fr_move_thp(b, dvma, src, dst, src_pmd, dst_pmd);
		if (!ret)
			*done = len;
		return ret;
	}
	spmd = src_pmd ? READ_ONCE(*src_pmd) : __pmd(0);
	if (!pmd_none(spmd) && !pmd_present(spmd))
		return FR_WAIT;		/* a THP under migration */
	if (pmd_leaf(spmd))	/* the prepare pass splits it, if it may move */
		return fr_move_thp_stuck(spmd) ? -EBUSY : FR_RETRY;

	/*
	 * The locks of the tables we read, in fr_lock2()'s order, then both
	 * entries checked again, as pgmove.c's fr_reloc_ptes() does. A source
	 * with no table has only holes: the destination's lock alone.
	 */
	dst_ptl = pte_lockptr(b->mm, &dpmd);
	src_ptl = pmd_none(spmd) ? dst_ptl : pte_lockptr(b->mm, &spmd);
	fr_move_lock2(src_ptl, dst_ptl);
	if (!pmd_same(dpmd, READ_ONCE(*dst_pmd)) ||
	    (!pmd_none(spmd) && !pmd_same(spmd, READ_ONCE(*src_pmd)))) {
		ret = FR_RETRY;
		goto out;
	}
	if (!pmd_none(spmd))
		src_pte = pte_offset_kernel(src_pmd, src);
	dst_pte = pte_offset_kernel(dst_pmd, dst);

	for (n = 0; n < len; n += PAGE_SIZE, src += PAGE_SIZE,
	     dst += PAGE_SIZE, dst_pte++, src_pte = src_pte ? src_pte + 1 : NULL) {
		if (!pte_none(ptep_get(dst_pte))) {
			ret = -EEXIST;
			break;
		}
		orig = src_pte ? ptep_get(src_pte) : __pte(0);
		if (pte_none(orig)) {
			if (!(b->flags & FASTREMAP_MOVE_ALLOW_HOLES)) {
				ret = -ENOENT;
				break;
			}
			continue;
		}
		if (pte_present(orig))
			ret = fr_move_present(b, dvma, src, dst, src_pte,
					      dst_pte, orig);
		else
			ret = fr_move_swap(b, dvma, src, dst, src_pte, dst_pte,
					   orig);
		if (ret)
			break;
		/* The span of the entries moved: their sources are flushed. */
		if (!hi)
			lo = src;
		hi = src + PAGE_SIZE;
	}
	*done = n;
	if (hi)
		fr_move_moved(b, lo, hi);
out:
	fr_unlock2(src_ptl, dst_ptl);
	return ret;
}
