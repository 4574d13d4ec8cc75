// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_MOVE: a vector of page moves inside existing private
 * anonymous VMAs, in order, with one TLB flush for the batch and no VMA
 * change. What UFFDIO_MOVE (mm/userfaultfd.c, 6.8+) does for one range,
 * on every supported kernel, for many ranges at once.
 *
 * Pages move, not bytes: each PTE leaves the source for the destination,
 * and the folio behind it is re-homed as move_present_pte() and
 * move_swap_pte() re-home it: its anon_vma becomes the destination VMA's
 * and its index the destination's page offset, under the anon_vma lock,
 * and under the folio lock too when the anon_vma changes (see
 * fr_move_present()). Only folios exclusive to this process move.
 *
 * A call runs in passes. Each pass first prepares, sleeping, with
 * mmap_lock held for write but no rmap lock: it allocates the destination
 * page tables, splits huge PMDs and large folios in the sources (a large
 * folio needs its lock and the anon_vma lock to split, so it cannot be
 * split below). Then, under the anon_vma root lock, it moves PTEs and
 * never sleeps for a folio: a folio lock is only tried, because the
 * normal order is folio lock, then anon_vma lock (reclaim, migration).
 * On a busy folio the pass ends: what moved is flushed, the locks are
 * dropped, the folio's lock is waited for, and the next pass goes on from
 * the same page. A pass is bounded (FR_MOVE_PASS_PAGES) so that the
 * anon_vma lock, which fork, exit and reclaim of these pages wait for, is
 * not held for a huge batch at once.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/rmap.h>
#include <linux/sort.h>
#include <linux/slab.h>
#include <linux/pagemap.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/uaccess.h>
#include <linux/userfaultfd_k.h>
#include <linux/fastremap.h>
#include "compat.h"
#include "arch.h"
#include "pgmove.h"
#include "remap.h"
#include "move.h"
#include "hot.h"
#include "mutant.h"
#include "testhooks.h"

#define FR_MOVE_FLAGS		FASTREMAP_MOVE_ALLOW_HOLES

/* Vectors up to this many moves are copied to the stack (192 bytes). */
#define FR_MOVE_SMALL		8

/* Pages one pass may move: a 1 GiB batch of PTEs still takes one flush. */
#define FR_MOVE_PASS_PAGES	(1UL << 18)

/*
 * Passes in a row that may end without progress: a folio whose split
 * keeps failing (extra references), or a lock that is taken again each
 * time, gives EBUSY; a migration that does not finish gives EAGAIN.
 */
#define FR_MOVE_MAX_STALLS	64

/* Internal results of a pass: end it, drop the locks, and go on. */
#define FR_RETRY	1	/* prepare again (split, table), or wait for b->wait */
#define FR_WAIT		2	/* a migration entry: let the migration finish */

/*
 * The PMD entry over one 2 MiB of address space, kept between extents:
 * consecutive moves mostly share a source or destination table. The
 * pointer stays valid for the whole call: PMD tables are freed only with
 * mmap_lock held for write, which the call holds; what the entry holds
 * is read again at each use.
 */
struct fr_pmd_cache {
	unsigned long base;
	pmd_t *pmd;
};

struct fr_batch {
	struct mm_struct *mm;
	const struct fastremap_move_vec *v;
	u32 count;
	u32 flags;
	/* The anon_vma whose root lock is held while entries move. */
	struct anon_vma *anon_vma;
	/* Progress: v[i] is the next move, off bytes of it are done. */
	u32 i;
	unsigned long off;
	/* The end of the current pass, as a position like (i, off). */
	u32 end_i;
	unsigned long end_off;
	/* How far this call's prepare passes have reached, likewise. */
	u32 prep_i;
	unsigned long prep_off;
	/* The span of source addresses moved since the last flush. */
	unsigned long lo, hi;
	/* The VMA fr_move_vma_at() found last. */
	struct vm_area_struct *last_vma;
	struct fr_pmd_cache src_pmd, dst_pmd;
	/* A folio to lock and unlock (referenced) before the next pass. */
	struct folio *wait;
	struct fr_move_stats stats;
	u64 split;
};


struct fr_range {
	unsigned long start, end;
};

static int fr_range_cmp(const void *a, const void *b)
{
	const struct fr_range *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

/* EINVAL if any two of @n ranges overlap (sorts @r). */
static int fr_ranges_disjoint(struct fr_range *r, u32 n)
{
	u32 k;

	sort(r, n, sizeof(*r), fr_range_cmp, NULL);
	for (k = 1; k < n; k++)
		if (r[k].start < r[k - 1].end)
			return -EINVAL;
	return 0;
}

static bool fr_overlap(unsigned long a, unsigned long alen, unsigned long b,
		       unsigned long blen)
{
	return a < b + blen && b < a + alen;
}

/*
 * Whether sources and destinations both come in address order, each past
 * the end of the one before: then no two overlap, without a sort. A
 * compacting collector's vector usually does (it walks from-space in
 * order and bumps a pointer in to-space).
 */
static bool fr_vec_ascending(const struct fastremap_move_vec *v, u32 n)
{
	u32 k;

	for (k = 1; k < n; k++)
		if (v[k].src < v[k - 1].src + v[k - 1].len ||
		    v[k].dst < v[k - 1].dst + v[k - 1].len)
			return false;
	return true;
}

/*
 * Everything about the vector that needs no VMA: alignment, bounds,
 * overlaps, and the request structure outside every range (the result
 * is written there after the moves: inside a source it would fault a
 * fresh page in, inside a destination it would overwrite moved memory).
 */
static int fr_move_check_vec(const struct fastremap_move_vec *v, u32 n,
			     unsigned long req, unsigned long req_len)
{
	struct fr_range *r;
	int ret = 0;
	u32 k;

	for (k = 0; k < n; k++) {
		if (!v[k].len || offset_in_page(v[k].src | v[k].dst | v[k].len))
			return -EINVAL;
		if (v[k].len > TASK_SIZE || v[k].src > TASK_SIZE - v[k].len ||
		    v[k].dst > TASK_SIZE - v[k].len)
			return -EINVAL;
		if (fr_overlap(v[k].src, v[k].len, v[k].dst, v[k].len))
			return -EINVAL;
		if (fr_overlap(req, req_len, v[k].src, v[k].len) ||
		    fr_overlap(req, req_len, v[k].dst, v[k].len))
			return -EINVAL;
	}
	if (n == 1 || fr_vec_ascending(v, n))
		return 0;
	r = kvmalloc_array(n, sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	for (k = 0; k < n; k++)
		r[k] = (struct fr_range){ v[k].src, v[k].src + v[k].len };
	ret = fr_ranges_disjoint(r, n);
	if (!ret) {
		for (k = 0; k < n; k++)
			r[k] = (struct fr_range){ v[k].dst, v[k].dst + v[k].len };
		ret = fr_ranges_disjoint(r, n);
	}
	kvfree(r);
	return ret;
}

/* The VMAs pages can move between: private anonymous memory only. */
static int fr_move_vma_ok(struct vm_area_struct *vma)
{
	if (fr_vma_sealed(vma))
		return -EPERM;
	/*
	 * A shadow stack holds return addresses the CPU checks: moving its
	 * pages would move the frames under a running thread (UFFDIO_MOVE
	 * refuses it too, vma_move_compatible()).
	 */
	if (!vma_is_anonymous(vma) || is_vm_hugetlb_page(vma) ||
	    (vma->vm_flags & (VM_SHARED | VM_MAYSHARE | VM_IO | VM_PFNMAP |
			      VM_MIXEDMAP | VM_SHADOW_STACK)))
		return -EINVAL;
	/* An mlocked folio is counted per VMA: munlock is not ours to do. */
	if (vma->vm_flags & (VM_LOCKED | VM_LOCKONFAULT))
		return -EINVAL;
	/* Its missing and write-protect faults belong to the monitor. */
	if (userfaultfd_armed(vma))
		return -EOPNOTSUPP;
	return 0;
}

/*
 * The VMA holding @addr. A batch mostly stays inside one heap, and each
 * move is looked up several times: the last VMA found is tried first.
 * VMAs cannot change under the batch: mmap_lock is held for write.
 */
static struct vm_area_struct *fr_move_vma_at(struct fr_batch *b,
					     unsigned long addr)
{
	struct vm_area_struct *vma = b->last_vma;

	if (vma && addr >= vma->vm_start && addr < vma->vm_end)
		return vma;
	vma = vma_lookup(b->mm, addr);
	b->last_vma = vma;
	return vma;
}

/* [addr, addr + len) inside one VMA, which is returned. */
static struct vm_area_struct *fr_move_vma(struct fr_batch *b,
					  unsigned long addr,
					  unsigned long len)
{
	struct vm_area_struct *vma = fr_move_vma_at(b, addr);

	if (!vma || len > vma->vm_end - addr)
		return NULL;
	return vma;
}

/*
 * The checks that need the VMAs, all made before anything changes; then
 * anon_vmas for destinations that will receive folios, and the per-VMA
 * write locks. Every anon_vma that folios leave or join must share one
 * root: that root's lock is what excludes the rmap walkers.
 */
static int fr_move_check_vmas(struct fr_batch *b)
{
	struct vm_area_struct *src, *dst, *psrc = NULL, *pdst = NULL;
	struct anon_vma *root = NULL;
	u32 k;
	int ret;

	/* A heap's moves mostly share one pair of VMAs: each pair is checked once. */
	for (k = 0; k < b->count; k++) {
		src = fr_move_vma(b, b->v[k].src, b->v[k].len);
		dst = fr_move_vma(b, b->v[k].dst, b->v[k].len);
		if (!src || !dst)
			return -EFAULT;
		if (src == psrc && dst == pdst)
			continue;
		psrc = src;
		pdst = dst;
		ret = fr_move_vma_ok(src);
		if (!ret)
			ret = fr_move_vma_ok(dst);
		if (ret)
			return ret;
		/* A writable PTE must not land in a read-only VMA. */
		if ((src->vm_flags & VM_ACCESS_FLAGS) !=
		    (dst->vm_flags & VM_ACCESS_FLAGS) ||
		    pgprot_val(src->vm_page_prot) !=
		    pgprot_val(dst->vm_page_prot))
			return -EINVAL;
		if (!src->anon_vma)
			continue;
		if (dst->anon_vma && dst->anon_vma->root != src->anon_vma->root)
			return -EXDEV;
		if (root && root != src->anon_vma->root)
			return -EXDEV;
		root = src->anon_vma->root;
	}
	/* Checked: now anon_vmas where folios will arrive, and the VMA write locks. */
	for (k = 0, psrc = pdst = NULL; k < b->count; k++) {
		src = fr_move_vma_at(b, b->v[k].src);
		dst = fr_move_vma_at(b, b->v[k].dst);
		if (src == psrc && dst == pdst)
			continue;
		psrc = src;
		pdst = dst;
		if (src->anon_vma && !dst->anon_vma) {
			if (fr_call(__anon_vma_prepare, dst))
				return -ENOMEM;
			/* It may have found a neighbour's, or made its own. */
			if (dst->anon_vma->root != src->anon_vma->root)
				return -EXDEV;
		}
		if (src->anon_vma)
			b->anon_vma = src->anon_vma;
		vma_start_write(src);
		vma_start_write(dst);
	}
	return 0;
}

/* Bytes from @a to the next PMD boundary of either address, at most @len. */
static unsigned long fr_move_extent(unsigned long a, unsigned long b,
				    unsigned long len)
{
	unsigned long n = PMD_SIZE - (a & ~PMD_MASK);

	n = min(n, PMD_SIZE - (b & ~PMD_MASK));
	return min(n, len);
}

/* Where the pass that starts at (b->i, b->off) ends. */
static void fr_move_plan(struct fr_batch *b)
{
	unsigned long left = fr_hook_move_pass_pages(FR_MOVE_PASS_PAGES) << PAGE_SHIFT;
	unsigned long off = b->off;
	u32 k;

	for (k = b->i; k < b->count; k++, off = 0) {
		if (b->v[k].len - off > left) {
			b->end_i = k;
			b->end_off = off + left;
			return;
		}
		left -= b->v[k].len - off;
	}
	b->end_i = b->count;
	b->end_off = 0;
}

/* The part [*s, *e) of move @k inside the current pass; false if none. */
static bool fr_move_seg(struct fr_batch *b, u32 k, unsigned long *s,
			unsigned long *e)
{
	if (k > b->end_i || (k == b->end_i && !b->end_off) || k >= b->count)
		return false;
	*s = k == b->i ? b->off : 0;
	*e = k == b->end_i ? b->end_off : b->v[k].len;
	return *s < *e;
}

/* The PMD entry over @addr, or NULL if a level above it is missing. */
static pmd_t *fr_move_pmd(struct fr_batch *b, struct fr_pmd_cache *c,
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

/* The folio a present PTE maps, if it is an ordinary one. */
static struct folio *fr_move_pte_folio(pte_t pte)
{
	unsigned long pfn = pte_pfn(pte);

	if (is_zero_pfn(pfn) || pte_special(pte) || !pfn_valid(pfn))
		return NULL;
	return page_folio(pfn_to_page(pfn));
}

/*
 * Whether @page may leave this process's page tables at all: exclusive to
 * it (not shared with a child since fork(2)) and not pinned. Asked before
 * a large folio is split too: a page that cannot move is no reason to
 * split a folio that a child may map whole.
 */
static bool fr_move_page_movable(struct page *page)
{
	return (PageAnonExclusive(page) || FR_MUTANT(MOVE_NO_EXCLUSIVE)) &&
	       !folio_maybe_dma_pinned(page_folio(page));
}

/*
 * The first address of [addr, end) in the PTE table under @pmd that may
 * map a large folio, or @end. Most runs hold small folios only: this
 * looks without the lock. The table cannot go (mmap_lock is held for
 * write); an entry changing meanwhile is seen again by the locked pass,
 * which retries the prepare pass. Every page of every move passes here:
 * a hot loop (hot.h).
 */
static noinline unsigned long __fr_hot __fr_page_aligned __fr_flatten fr_move_scan(pmd_t *pmd,
			unsigned long addr, unsigned long end)
{
	pmd_t pmdval = READ_ONCE(*pmd);
	pte_t *pte;

	if (!pmd_present(pmdval) || pmd_leaf(pmdval))
		return end;
	pte = pte_offset_kernel(&pmdval, addr);
	for (; addr < end; addr += PAGE_SIZE, pte++) {
		pte_t ptent = ptep_get(pte);

		/*
		 * A hint, on every page of every move: no pfn_valid() here.
		 * In a private anonymous VMA (fr_move_vma_ok() refuses PFN
		 * and mixed maps) a present entry that is not special maps
		 * a page with a struct page, as vm_normal_page() assumes;
		 * the zero page is special or the zero pfn. The locked pass
		 * checks each entry in full.
		 */
		if (!pte_present(ptent) || pte_special(ptent) ||
		    is_zero_pfn(pte_pfn(ptent)))
			continue;
		if (PageCompound(pte_page(ptent)))
			break;
	}
	return addr;
}

/*
 * Splits the large anonymous folios mapped in [addr, end) of one PTE
 * table, so that the locked pass finds small ones. A failed split is left
 * for the locked pass to see (it ends the pass, and a bounded number of
 * retries gives EBUSY).
 */
static void fr_move_split(struct fr_batch *b, pmd_t *pmd, unsigned long addr,
			  unsigned long end)
{
	struct folio *folio;
	spinlock_t *ptl;
	pmd_t pmdval;
	pte_t *pte;

	if (fr_move_scan(pmd, addr, end) >= end)
		return;
again:
	pmdval = READ_ONCE(*pmd);
	if (!pmd_present(pmdval) || pmd_leaf(pmdval))
		return;
	ptl = pte_lockptr(b->mm, &pmdval);
	spin_lock(ptl);
	if (!pmd_same(pmdval, READ_ONCE(*pmd))) {
		spin_unlock(ptl);
		return;
	}
	pte = pte_offset_kernel(pmd, addr);
	for (; addr < end; addr += PAGE_SIZE, pte++) {
		pte_t ptent = ptep_get(pte);

		if (!pte_present(ptent))
			continue;
		folio = fr_move_pte_folio(ptent);
		if (!folio || !folio_test_large(folio) ||
		    !folio_test_anon(folio) ||
		    (!fr_move_page_movable(pte_page(ptent)) &&
		     !FR_MUTANT(MOVE_SPLIT_SHARED)))
			continue;
		folio_get(folio);
		spin_unlock(ptl);
		/* mmap_lock, then the folio lock: the order faults take. */
		folio_lock(folio);
		if (folio_test_large(folio) && !fr_split_folio(folio))
			b->split++;
		folio_unlock(folio);
		folio_put(folio);
		cond_resched();
		addr += PAGE_SIZE;
		goto again;
	}
	spin_unlock(ptl);
}

/*
 * Whether the @len bytes at the source PMD @pmd are a THP of this
 * process's that may move whole: a whole, aligned PMD on both sides
 * (fr_move_extent() cut @len at both boundaries) with an anonymous folio.
 * The destination must also be none; the huge zero page is split instead.
 */
static bool fr_move_thp_whole(struct fr_batch *b, pmd_t *pmd, unsigned long len)
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
static bool fr_move_thp_stuck(pmd_t pmd)
{
	struct page *page = pmd_page(pmd);

	return folio_test_anon(page_folio(page)) && !fr_move_page_movable(page) &&
	       !FR_MUTANT(MOVE_SPLIT_SHARED);
}

/*
 * The sleeping half of a pass: destination tables, and sources without
 * huge PMDs or large folios, except THPs that move whole. ENOMEM if a table cannot be allocated.
 */
static int fr_move_prepare(struct fr_batch *b)
{
	unsigned long s, e, n, src, dst;
	struct vm_area_struct *vma;
	pmd_t *pmd, *dpmd;
	u32 k;

	for (k = b->i; fr_move_seg(b, k, &s, &e); k++) {
		vma = fr_move_vma_at(b, b->v[k].src);
		for (; s < e; s += n) {
			src = b->v[k].src + s;
			dst = b->v[k].dst + s;
			n = fr_move_extent(src, dst, e - s);
			cond_resched();
			/*
			 * A pass after a retry starts where the last one
			 * stopped: that extent is prepared again, and what
			 * the last prepare reached beyond it is ready still,
			 * so that each retry costs an extent, not a pass.
			 * With mmap_lock held for write nothing but rmap
			 * walkers (splits, which leave less to do) changes
			 * it, and the locked pass retries where it finds a
			 * change.
			 */
			if ((k != b->i || s != b->off) &&
			    (k < b->prep_i || (k == b->prep_i && s + n <= b->prep_off)))
				continue;
			pmd = fr_move_pmd(b, &b->src_pmd, src);
			/* A THP the move takes whole needs no table, no split. */
			if (fr_move_thp_whole(b, pmd, n)) {
				dpmd = fr_table_prepare(b->mm, dst, false);
				if (dpmd && pmd_none(READ_ONCE(*dpmd)))
					continue;
			}
			dpmd = fr_move_pmd(b, &b->dst_pmd, dst);
			if (!dpmd || pmd_none(READ_ONCE(*dpmd))) {
				dpmd = fr_table_prepare(b->mm, dst, true);
				if (!dpmd)
					return -ENOMEM;
				b->dst_pmd.base = dst & PMD_MASK;
				b->dst_pmd.pmd = dpmd;
			}
			if (!pmd || pmd_none(READ_ONCE(*pmd)))
				continue;
			/*
			 * Else it is mapped by PTEs first (the folio split
			 * below), unless it cannot move: the locked pass
			 * stops there with EBUSY, nothing split.
			 */
			if (pmd_present(*pmd) && pmd_leaf(*pmd)) {
				if (fr_move_thp_stuck(*pmd))
					continue;
				fr_split_huge_pmd(vma, pmd, src & PMD_MASK);
			}
			fr_move_split(b, pmd, src, src + n);
		}
	}
	b->prep_i = b->end_i;
	b->prep_off = b->end_off;
	return 0;
}

static void fr_move_moved(struct fr_batch *b, unsigned long src)
{
	if (b->hi <= b->lo) {
		b->lo = src;
		b->hi = src + PAGE_SIZE;
	} else {
		b->lo = min(b->lo, src);
		b->hi = max(b->hi, src + PAGE_SIZE);
	}
	b->stats.pte++;
}

/*
 * Moves one present PTE (a small exclusive anonymous folio or the zero
 * page). Inlined into fr_move_entries()'s loop, with everything it calls.
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
		if (!folio_test_anon(folio) || folio_test_ksm(folio) ||
		    !fr_move_page_movable(page))
			return -EBUSY;
		if (folio_test_large(folio))
			return FR_RETRY;
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
		if (folio_maybe_dma_pinned(folio)) {
			set_pte_at(b->mm, src, src_pte, pte);
			if (locked)
				folio_unlock(folio);
			return -EBUSY;
		}
		if (locked)
			fr_folio_move_anon(folio, dvma->anon_vma);
		if (!FR_MUTANT(MOVE_NO_INDEX))
			WRITE_ONCE(folio->index, linear_page_index(dvma, dst));
	}
	/*
	 * Until the flush, another CPU may write this page through a stale
	 * clean TLB entry for @src. Were @src refilled by a later move of
	 * the batch, its dirty-bit update could land on the new entry and
	 * leave this page modified under a clean PTE, which reclaim would
	 * then drop from the swap cache. A writable entry moves dirty.
	 */
	if (pte_write(pte))
		pte = pte_mkdirty(pte);
	fr_arch_set_pte(b->mm, dst, dst_pte, fr_moved_pte(pte));
	if (locked)
		folio_unlock(folio);
	fr_move_moved(b, src);
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
					   linear_page_index(dvma, dst));
		}
	}
	pte = ptep_get_and_clear(b->mm, src, src_pte);
	fr_arch_set_pte(b->mm, dst, dst_pte, fr_moved_pte(pte));
	if (folio) {
		folio_unlock(folio);
		folio_put(folio);
	}
	fr_move_moved(b, src);
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

	fr_lock2(src_ptl, dst_ptl);
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
		WRITE_ONCE(folio->index, linear_page_index(dvma, dst));
	if (dst_ptl != src_ptl) {
		pgtable = fr_call(pgtable_trans_huge_withdraw, b->mm, src_pmd);
		fr_call(pgtable_trans_huge_deposit, b->mm, dst_pmd, pgtable);
	}
	/* As in fr_move_present(): a writable entry moves dirty. */
	if (pmd_write(pmd))
		pmd = pmd_mkdirty(pmd);
	set_pmd_at(b->mm, dst, dst_pmd, fr_moved_pmd(pmd));
	folio_unlock(folio);
	b->stats.thp++;
	if (b->hi <= b->lo) {
		b->lo = src;
		b->hi = src + PMD_SIZE;
	} else {
		b->lo = min(b->lo, src);
		b->hi = max(b->hi, src + PMD_SIZE);
	}
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
static noinline int __fr_hot __fr_page_aligned __fr_flatten fr_move_entries(struct fr_batch *b,
			struct vm_area_struct *dvma, unsigned long src,
			unsigned long dst, unsigned long len, unsigned long *done)
{
	spinlock_t *src_ptl, *dst_ptl;
	pte_t *src_pte = NULL, *dst_pte, orig;
	pmd_t *src_pmd, *dst_pmd, spmd, dpmd;
	unsigned long n;
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
	 * entries checked again, as pgmove.c's fr_move_ptes() does. A source
	 * with no table has only holes: the destination's lock alone.
	 */
	dst_ptl = pte_lockptr(b->mm, &dpmd);
	src_ptl = pmd_none(spmd) ? dst_ptl : pte_lockptr(b->mm, &spmd);
	fr_lock2(src_ptl, dst_ptl);
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
	}
	*done = n;
out:
	fr_unlock2(src_ptl, dst_ptl);
	return ret;
}

/* The locked half of a pass: moves from (b->i, b->off) to the pass end. */
static int fr_move_locked(struct fr_batch *b)
{
	unsigned long s, e, n, done;
	struct vm_area_struct *dvma;
	int ret;

	while (fr_move_seg(b, b->i, &s, &e)) {
		dvma = fr_move_vma_at(b, b->v[b->i].dst);
		for (; s < e; s += n) {
			/*
			 * Only the anon_vma rwsem is held between extents: a
			 * pass of 2^18 pages must not keep this CPU from
			 * everything else on it.
			 */
			cond_resched();
			n = fr_move_extent(b->v[b->i].src + s,
					   b->v[b->i].dst + s, e - s);
			ret = fr_move_entries(b, dvma, b->v[b->i].src + s,
					      b->v[b->i].dst + s, n, &done);
			b->off += done;
			if (ret)
				return ret;
		}
		if (b->off == b->v[b->i].len) {
			b->i++;
			b->off = 0;
		}
	}
	return 0;
}

static int fr_move_batch(struct fr_batch *b)
{
	struct mmu_notifier_range range;
	unsigned long lo = ULONG_MAX, hi = 0;
	u32 stalls = 0, k, i;
	unsigned long off;
	int ret = 0;
	u64 t;

	t = fr_hook_prof_clock();
	/* Secondary MMUs drop every source at once, for the whole call. */
	for (k = 0; k < b->count; k++) {
		lo = min_t(unsigned long, lo, b->v[k].src);
		hi = max_t(unsigned long, hi, b->v[k].src + b->v[k].len);
	}
	fr_mmu_notifier_start(&range, fr_move_vma_at(b, b->v[0].src), lo, hi);
	fr_prof_lap(&t, FR_PROF_NOTIFY);
	while (b->i < b->count) {
		t = fr_hook_prof_clock();
		fr_hook_prof_add(FR_PROF_PASSES, 1);
		fr_move_plan(b);
		ret = fr_move_prepare(b);
		fr_prof_lap(&t, FR_PROF_PREPARE);
		if (ret)
			break;
		i = b->i;
		off = b->off;
		if (b->anon_vma && !FR_MUTANT(MOVE_NO_RMAP_LOCK))
			anon_vma_lock_write(b->anon_vma);
		/* A PTE reclaim cleared with its flush still pending must not move. */
		fr_flush_tlb_batched_pending(b->mm);
		fr_prof_lap(&t, FR_PROF_LOCK);
		ret = fr_move_locked(b);
		fr_prof_lap(&t, FR_PROF_MOVE);
		if (b->hi > b->lo)
			fr_hook_move_unflushed();
		/*
		 * The flush, one per pass: until it completes other CPUs may
		 * still reach moved pages through stale TLB entries for their
		 * sources. Nothing can free, reuse or write-protect those
		 * pages before it: faults need mmap_lock, held for write, or
		 * on per-VMA-lock kernels the VMA read locks that
		 * vma_start_write() excludes until mmap_lock is released;
		 * madvise, munmap, mprotect, khugepaged, KSM, NUMA hinting
		 * and /proc readers need mmap_lock too; reclaim, migration,
		 * folio splits and every other rmap walker need the anon_vma
		 * root lock, held for write until after the flush. GUP-fast
		 * sees the old entry or the new one, each mapping the page,
		 * and its pins are checked at the move. A write through a
		 * stale clean entry faults on the cleared source, or, were
		 * the source refilled, finds the moved entry already dirty
		 * (fr_move_present()).
		 */
		if (b->hi > b->lo && FR_MUTANT(MOVE_NO_FLUSH)) {
			b->stats.flushes++;
			b->lo = b->hi = 0;
		} else if (b->hi > b->lo) {
			fr_flush_moved(b->mm, b->lo, b->hi, &b->stats);
			b->lo = b->hi = 0;
		}
		fr_prof_lap(&t, FR_PROF_FLUSH);
		if (b->anon_vma && !FR_MUTANT(MOVE_NO_RMAP_LOCK))
			anon_vma_unlock_write(b->anon_vma);
		if (b->wait) {
			/* The owner may need the anon_vma lock: wait for it now. */
			folio_lock(b->wait);
			folio_unlock(b->wait);
			folio_put(b->wait);
			b->wait = NULL;
		}
		fr_prof_lap(&t, FR_PROF_UNLOCK);
		/*
		 * A pass ends cleanly at its bound, or early for a retry;
		 * either way the batch goes on until its last move or an
		 * error. Only passes that move nothing count as stalls.
		 */
		if (ret < 0 || (!ret && FR_MUTANT(MOVE_ONE_PASS)))
			break;
		if (b->i != i || b->off != off)
			stalls = 0;
		else if (++stalls > FR_MOVE_MAX_STALLS) {
			ret = ret == FR_WAIT ? -EAGAIN : -EBUSY;
			break;
		}
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		if (ret == FR_WAIT)
			schedule_timeout_uninterruptible(1);
		ret = 0;
	}
	t = fr_hook_prof_clock();
	fr_mmu_notifier_end(&range);
	fr_prof_lap(&t, FR_PROF_NOTIFY);
	return ret;
}

/*
 * The vector, read in one user-access window with 8-byte loads: a fault
 * gives EFAULT. x86's copy_from_user() is a "rep movsb" on CPUs with
 * fast short moves, which emulators (QEMU's TCG) run a byte at a time.
 */
static int fr_move_copy_vec(struct fastremap_move_vec *v,
			    const struct fastremap_move_vec __user *u, u32 n)
{
	u32 k;

	if (!user_access_begin(u, (size_t)n * sizeof(*u)))
		return -EFAULT;
	for (k = 0; k < n; k++) {
		unsafe_get_user(v[k].src, &u[k].src, efault);
		unsafe_get_user(v[k].dst, &u[k].dst, efault);
		unsafe_get_user(v[k].len, &u[k].len, efault);
	}
	user_access_end();
	return 0;
efault:
	user_access_end();
	return -EFAULT;
}

/*
 * Vectors up to this many moves (64 KiB) are read into a buffer kept with
 * the open file: a collector calls again and again, and a fresh buffer
 * per call costs as much as reading the vector, because Debian's kernels
 * zero every allocation (init_on_alloc), at a byte per step under QEMU's
 * TCG. The buffer grows to the largest such vector seen, rounded up to a
 * power of two of moves, so that a collector's usual batch allocates once.
 * Longer vectors, and calls that find the buffer in use by another
 * thread's call on the same file, allocate their own.
 */
#define FR_MOVE_KEEP	(SZ_64K / sizeof(struct fastremap_move_vec))

struct fr_move_file {
	unsigned long busy;		/* bit 0: a call is using vec */
	struct fastremap_move_vec *vec;
	u32 cap;			/* moves vec holds */
};

int fr_move_open(struct file *file)
{
	struct fr_move_file *f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);

	if (!f)
		return -ENOMEM;
	file->private_data = f;
	return 0;
}

void fr_move_release(struct file *file)
{
	struct fr_move_file *f = file->private_data;

	kvfree(f->vec);
	kfree(f);
}

/*
 * A buffer for @count moves: the file's if no other call holds it (*kept
 * set), else a new one. fr_move_put_vec() gives it back.
 */
static struct fastremap_move_vec *fr_move_get_vec(struct fr_move_file *f,
						  u32 count, bool *kept)
{
	u32 cap;

	*kept = false;
	if (count <= FR_MOVE_KEEP &&
	    (!test_and_set_bit_lock(0, &f->busy) || FR_MUTANT(MOVE_SHARED_VEC))) {
		if (f->cap < count) {
			cap = min_t(u32, roundup_pow_of_two(count), FR_MOVE_KEEP);
			kvfree(f->vec);
			f->vec = kvmalloc_array(cap, sizeof(*f->vec),
						GFP_KERNEL_ACCOUNT);
			f->cap = f->vec ? cap : 0;
		}
		if (f->vec) {
			*kept = true;
			return f->vec;
		}
		clear_bit_unlock(0, &f->busy);
	}
	return kvmalloc_array(count, sizeof(*f->vec), GFP_KERNEL_ACCOUNT);
}

static void fr_move_put_vec(struct fr_move_file *f,
			    struct fastremap_move_vec *v, bool kept)
{
	if (kept)
		clear_bit_unlock(0, &f->busy);
	else
		kvfree(v);
}

/* The outputs, done to tlb_flushes: every size the ABI accepts has them. */
#define FR_MOVE_OUT		offsetof(struct fastremap_move, done)
#define FR_MOVE_OUT_LEN		(offsetof(struct fastremap_move, reserved) - FR_MOVE_OUT)
static_assert(offsetof(struct fastremap_move, reserved) <= FASTREMAP_MOVE_SIZE_VER0);

static int fr_move_put_result(void __user *uarg, const struct fastremap_move *req)
{
	return fr_copy_out((char __user *)uarg + FR_MOVE_OUT,
			   (const char *)req + FR_MOVE_OUT, FR_MOVE_OUT_LEN);
}

long fr_ioctl_move(struct file *file, void __user *uarg)
{
	/* Small batches (a single move, most often) need no allocation. */
	struct fastremap_move_vec small[FR_MOVE_SMALL];
	struct fastremap_move req;
	struct fr_batch b = {};
	struct fastremap_move_vec *v = small;
	unsigned long req_start;
	bool kept = false;
	u32 usize, len;
	long ret;
	u64 t, t0 = fr_hook_prof_clock();

	ret = fr_copy_in(&req, sizeof(req), FASTREMAP_MOVE_SIZE_VER0, uarg,
			 &usize);
	if (ret)
		return ret;
	if ((req.flags & ~FR_MOVE_FLAGS) || req.__pad0 ||
	    memchr_inv(req.reserved, 0, sizeof(req.reserved)))
		return -EINVAL;
	if (req.count > FASTREMAP_MOVE_MAX)
		return -E2BIG;
	/* The outputs start at zero; prove they can be written back. */
	req.done = req.done_bytes = req.moved_pte = req.moved_thp = 0;
	req.split = req.tlb_flushes = 0;
	len = min_t(u32, usize, sizeof(req));
	if (fr_move_put_result(uarg, &req))
		return -EFAULT;
	if (!req.count)
		return 0;

	if (req.count > FR_MOVE_SMALL) {
		v = fr_move_get_vec(file->private_data, req.count, &kept);
		if (!v)
			return -ENOMEM;
	}
	ret = fr_move_copy_vec(v, u64_to_user_ptr(req.moves), req.count);
	if (ret)
		goto out;
	t = fr_hook_prof_clock();
	fr_hook_prof_add(FR_PROF_ENTRY, t - t0);
	req_start = untagged_addr((unsigned long)uarg);
	ret = fr_move_check_vec(v, req.count, req_start, len);
	fr_prof_lap(&t, FR_PROF_VEC);
	if (ret)
		goto out;

	b.mm = current->mm;
	b.v = v;
	b.count = req.count;
	b.flags = req.flags;
	if (mmap_write_lock_killable(b.mm)) {
		ret = -EINTR;
		goto out;
	}
	fr_prof_lap(&t, FR_PROF_MMLOCK);
	ret = fr_move_check_vmas(&b);
	fr_prof_lap(&t, FR_PROF_VMAS);
	if (!ret)
		ret = fr_move_batch(&b);
	t = fr_hook_prof_clock();
	mmap_write_unlock(b.mm);
	fr_hook_prof_add(FR_PROF_CALLS, 1);
	fr_hook_prof_add(FR_PROF_MOVES, b.i);
	fr_hook_prof_add(FR_PROF_PAGES, b.stats.pte);

	req.done = b.i;
	req.done_bytes = b.off;
	req.moved_pte = b.stats.pte;
	req.moved_thp = b.stats.thp;
	req.split = b.split;
	req.tlb_flushes = b.stats.flushes;
	if (fr_move_put_result(uarg, &req) && !ret)
		ret = -EFAULT;
out:
	if (v != small)
		fr_move_put_vec(file->private_data, v, kept);
	fr_prof_lap(&t, FR_PROF_EXIT);
	fr_prof_lap(&t0, FR_PROF_TOTAL);
	return ret;
}
