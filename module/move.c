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
 *
 * This file holds the call, the VMA checks, the prepare half of a pass
 * and the pass loop; move_pte.c moves the entries, move_vec.c reads and
 * checks the caller's vector.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/rmap.h>
#include <linux/pagemap.h>
#include <linux/sched/signal.h>
#include <linux/userfaultfd_k.h>
#include <linux/fastremap.h>
#include "compat.h"
#include "symbols.h"
#include "kfuncs.h"
#include "pgmove.h"
#include "uaccess.h"
#include "move.h"
#include "move_internal.h"
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
 * The VMA holding @addr. A batch mostly moves between two VMAs (a heap
 * and its to-space, or one heap), and each move is looked up several
 * times, alternating source and destination: the two VMAs found last are
 * tried first. VMAs cannot change under the batch: mmap_lock is held for
 * write.
 */
static struct vm_area_struct *fr_move_vma_at(struct fr_batch *b,
					     unsigned long addr)
{
	struct vm_area_struct *vma;
	int k;

	for (k = 0; k < ARRAY_SIZE(b->last_vma); k++) {
		vma = b->last_vma[k];
		if (vma && addr >= vma->vm_start && addr < vma->vm_end)
			return vma;
	}
	vma = vma_lookup(b->mm, addr);
	if (vma) {
		b->last_vma[1] = b->last_vma[0];
		b->last_vma[0] = vma;
	}
	return vma;
}

/* [addr, addr + len) inside one VMA, which is returned. */
static struct vm_area_struct *fr_move_range_vma(struct fr_batch *b,
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
		src = fr_move_range_vma(b, b->v[k].src, b->v[k].len);
		dst = fr_move_range_vma(b, b->v[k].dst, b->v[k].len);
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

/* The folio a present PTE maps, if it is an ordinary one. */
static struct folio *fr_move_pte_folio(pte_t pte)
{
	unsigned long pfn = pte_pfn(pte);

	if (is_zero_pfn(pfn) || pte_special(pte) || !pfn_valid(pfn))
		return NULL;
	return page_folio(pfn_to_page(pfn));
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
	unsigned long pfn;
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
		if (!pte_present(ptent) || pte_special(ptent))
			continue;
		pfn = pte_pfn(ptent);
		if (is_zero_pfn(pfn))
			continue;
		if (PageCompound(pfn_to_page(pfn)))
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
			fr_hook_unflushed();
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
			/* Something moved: the latest VMA found is set. */
			fr_flush_moved(b->last_vma[0], b->lo, b->hi,
				       &b->stats);
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
	/*
	 * Small batches (a single move, most often) need no allocation.
	 * Neither is read before it is written (fr_copy_request() writes
	 * all of @req): not zeroed first, per call.
	 */
	struct fastremap_move_vec small[FR_MOVE_SMALL] __uninitialized;
	struct fastremap_move req __uninitialized;
	struct fr_batch b = {};
	struct fastremap_move_vec *v = small;
	unsigned long req_start;
	bool kept = false;
	u32 usize, len;
	long ret;
	u64 t, t0 = fr_hook_prof_clock();

	ret = fr_copy_request(&req, FASTREMAP_MOVE_SIZE_VER0, uarg, &usize,
			      FR_MOVE_FLAGS);
	if (ret)
		return ret;
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

