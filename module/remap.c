// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_REMAP: mremap(2) for the calling process.
 *
 * The VMA work is the kernel's own (copy_vma() creates the destination
 * VMA, do_munmap() removes the source), so accounting, rmap offsets,
 * merging and limits stay the kernel's; pgmove.c moves the page tables.
 *
 * Errors: the parameter checks, the source lookup and the seal check give
 * what mremap(2) gives on the same kernel, in the same order. Everything
 * else mremap(2) would check after unmapping the destination or the
 * source's tail, this code checks first, so a failing call changes
 * nothing. Cases where kernels differ in ways that are not errors (a
 * plain move of a source spanning several VMAs, which 6.17 and later
 * perform and earlier kernels refuse with EFAULT; mlocked growth, which
 * populates) and cases
 * this module does not handle are declined with EOPNOTSUPP before any
 * change, so the caller can use mremap(2) and get exactly its behaviour.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/pagemap.h>
#include <linux/uaccess.h>
#include <linux/userfaultfd_k.h>
#include <linux/fastremap.h>
#include "compat.h"
#include "symbols.h"
#include "kfuncs.h"
#include "pgmove.h"
#include "remap.h"
#include "uaccess.h"
#include "testhooks.h"
#include "mutant.h"

/* "Use mremap(2)": nothing was changed. */
#define FR_DECLINE	(-EOPNOTSUPP)

#define FR_MREMAP_FLAGS	(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)

struct fr_remap {
	unsigned long addr, old_len, new_len, new_addr, flags;
	/* Where the caller's request structure is: the result goes there. */
	unsigned long req_start, req_end;
	unsigned long charged;	/* pages charged to the commit limit */
	struct fr_pt_stats stats;
	u64 prof_t;	/* move_prof's clock (test builds) */
};

/* VMAs whose moves need more than copying entries and VMA bookkeeping. */
static bool fr_vma_supported(struct vm_area_struct *vma)
{
	if (is_vm_hugetlb_page(vma) || vma_is_dax(vma))
		return false;
	if (vma->vm_flags & (VM_IO | VM_PFNMAP | VM_MIXEDMAP | VM_DONTEXPAND))
		return false;
	/*
	 * A shadow stack's guard gap and the token checks of the arch's
	 * shadow-stack code are mremap(2)'s to keep, not ours.
	 */
	if (vma->vm_flags & VM_SHADOW_STACK)
		return false;
	/* KSM: mremap(2) unmerges first (ksm_madvise), which is not ours. */
	if (vma->vm_flags & VM_MERGEABLE)
		return false;
	if (userfaultfd_armed(vma) && !FR_MUTANT(UFFD_MOVED))
		return false;
	if (FR_MUTANT(DECLINE_SHARED) && vma->vm_file)
		return false;
	/* Special mappings (vDSO...) track their address through these. */
	if (vma->vm_ops &&
	    (vma->vm_ops->mremap || fr_vm_ops_may_split(vma->vm_ops)))
		return false;
	return true;
}

/*
 * The destination of a MREMAP_FIXED move is unmapped first. Refuse what
 * that unmap would refuse (sealed), and decline what it would report to
 * userfaultfd, before anything is changed. *@mapped: whether anything is
 * mapped there, so that an empty target is not looked up a second time.
 */
static long fr_check_target(struct mm_struct *mm, unsigned long start,
			    unsigned long end, bool *mapped)
{
	struct vm_area_struct *vma = find_vma_intersection(mm, start, end);

	*mapped = vma;
	for (; vma; vma = find_vma_intersection(mm, vma->vm_end, end)) {
		if (fr_vma_sealed(vma))
			return -EPERM;
		if (userfaultfd_armed(vma))
			return FR_DECLINE;
	}
	return 0;
}

/* The checks mremap(2) makes on the destination address. */
static long fr_check_new_addr(struct fr_remap *r)
{
	if (offset_in_page(r->new_addr))
		return -EINVAL;
	if (r->new_len > TASK_SIZE || r->new_addr > TASK_SIZE - r->new_len)
		return -EINVAL;
	/* The ranges must not overlap. */
	if (r->addr + r->old_len > r->new_addr &&
	    r->new_addr + r->new_len > r->addr)
		return -EINVAL;
	return 0;
}

/* The page offset @addr has in @vma's object (file, or anonymous). */
static unsigned long fr_pgoff(struct vm_area_struct *vma, unsigned long addr)
{
	return vma->vm_pgoff + ((addr - vma->vm_start) >> PAGE_SHIFT);
}

static bool fr_overlaps(unsigned long start, unsigned long end,
			unsigned long addr, unsigned long len)
{
	return start < addr + len && addr < end;
}

/*
 * The result is written to the request structure after the move. Were it
 * inside a range the call changes, that write would land on moved memory
 * (in a MREMAP_FIXED target), fault (in a source that is unmapped now,
 * losing the new address) or fault a fresh page into an emptied
 * DONTUNMAP source; mremap(2) writes no user memory at all. So such a
 * call is left to mremap(2). Called under mmap_lock with every address
 * final, just before the commit charge, so a call that fails its checks
 * still gets mremap(2)'s errno.
 */
static long fr_check_request(struct fr_remap *r)
{
	if (fr_overlaps(r->req_start, r->req_end, r->addr, r->old_len))
		return FR_DECLINE;
	if (fr_overlaps(r->req_start, r->req_end, r->new_addr, r->new_len))
		return FR_DECLINE;
	return 0;
}

/*
 * Moves [addr, addr + old_len) to new_addr, new_len long. This is
 * mm/mremap.c's move_vma() with our page-table mover: copy the VMA, move
 * the entries (moving them back if that fails), then unmap the source
 * with its commit charge kept by the new VMA.
 */
static long fr_remap_vma(struct mm_struct *mm, struct vm_area_struct *vma,
			struct fr_remap *r)
{
	bool dontunmap = r->flags & MREMAP_DONTUNMAP;
	unsigned long addr = r->addr, old_len = r->old_len;
	unsigned long new_addr = r->new_addr, new_len = r->new_len;
	unsigned long vm_flags = vma->vm_flags, hiwater_vm, moved;
	unsigned long account_start = 0, account_end = 0;
	struct vm_area_struct *new_vma, *v;
	struct fr_reloc fwd = {}, back = {};
	bool need_rmap_locks;
	long err = 0;

	if (!FR_MUTANT(NO_OLD_VMA_LOCK))
		vma_start_write(vma);
	/*
	 * A copy_vma() without keep_source (compat.h) merges a copy with its
	 * source only where it gives the copy a new page offset: a source
	 * never faulted, without an anon_vma. Given one, it cannot.
	 */
	if (!FR_COPY_VMA_KEEP_SOURCE && dontunmap && !vma->anon_vma &&
	    fr_call(__anon_vma_prepare, vma)) {
		fr_vm_unacct_memory(r->charged);
		return -ENOMEM;
	}
	/* need_rmap_locks is not used: the mover always takes them. */
	new_vma = fr_copy_vma(&vma, new_addr, new_len, fr_pgoff(vma, addr),
			      fr_anon_page_index(vma, addr), &need_rmap_locks,
			      dontunmap);
	if (!new_vma) {
		fr_vm_unacct_memory(r->charged);
		return -ENOMEM;
	}
	if (!FR_MUTANT(NO_NEW_VMA_LOCK))
		vma_start_write(new_vma);

	fr_prof_lap(&r->prof_t, FR_PROF_R_COPYVMA);

	fwd.mm = mm;
	fwd.old_vma = vma;
	fwd.new_vma = new_vma;
	fwd.prof_t = r->prof_t;
	fwd.free_tables = !dontunmap;
	moved = fr_relocate(&fwd, addr, new_addr, old_len);
	r->prof_t = fwd.prof_t;
	r->stats = fwd.stats;
	if (moved < old_len) {
		/* Out of memory for page tables: put back what moved. */
		back.mm = mm;
		back.old_vma = new_vma;
		back.new_vma = vma;
		/* Its source, the new range, is unmapped below. */
		back.free_tables = true;
		if (!FR_MUTANT(UNDO_NO_MOVE_BACK))
			fr_relocate(&back, new_addr, addr, moved);
		r->stats.flushes += back.stats.flushes;
		err = -ENOMEM;
		if (FR_MUTANT(UNDO_LEAK_VMA))
			return err;
		/*
		 * What the move added to the commit charge goes back, as
		 * mremap(2) gives it back; with MREMAP_DONTUNMAP the unmap of
		 * the new range below does it (its VM_ACCOUNT stays).
		 */
		if (!dontunmap && !FR_MUTANT(UNDO_LEAK_CHARGE))
			fr_vm_unacct_memory(r->charged);
		/* Now the new range is the one to unmap. */
		vma = new_vma;
		addr = new_addr;
		old_len = new_len;
	}

	/*
	 * Keep the commit charge: the source's VM_ACCOUNT is hidden while it
	 * is unmapped and given back to what is left of it.
	 */
	if ((vm_flags & VM_ACCOUNT) && !dontunmap) {
		vm_flags_clear(vma, VM_ACCOUNT);
		if (vma->vm_start < addr)
			account_start = vma->vm_start;
		if (vma->vm_end > addr + old_len)
			account_end = vma->vm_end;
	}

	/* total_vm peaks for a moment: keep that out of the high-water mark. */
	hiwater_vm = mm->hiwater_vm;
	fr_call(vm_stat_account, mm, vma->vm_flags, new_len >> PAGE_SHIFT);

	if (!err && dontunmap) {
		fr_dontunmap_complete(vma, new_vma, addr, old_len);
		mm->hiwater_vm = hiwater_vm;
		return new_addr;
	}

	if (fr_call(do_munmap, mm, addr, old_len, NULL) < 0) {
		/* Could not split the VMA: keep the accounting right. */
		if ((vm_flags & VM_ACCOUNT) && !dontunmap)
			fr_vm_acct_memory(old_len >> PAGE_SHIFT);
		account_start = 0;
		account_end = 0;
	}
	fr_prof_lap(&r->prof_t, FR_PROF_R_UNMAP);
	if ((vm_flags & VM_LOCKED) && !FR_MUTANT(LOCKED_VM))
		mm->locked_vm += new_len >> PAGE_SHIFT;
	mm->hiwater_vm = hiwater_vm;

	if (account_start) {
		v = vma_lookup(mm, addr - 1);
		if (v)
			vm_flags_set(v, VM_ACCOUNT);
	}
	if (account_end && !FR_MUTANT(TAIL_NO_ACCOUNT)) {
		v = vma_lookup(mm, addr + old_len);
		if (v)
			vm_flags_set(v, VM_ACCOUNT);
	}
	return err ? err : (long)new_addr;
}

/* Charges the commit limit for what the move adds, before any change. */
static long fr_charge(struct mm_struct *mm, struct vm_area_struct *vma,
		      struct fr_remap *r)
{
	unsigned long pages;

	if (!(vma->vm_flags & VM_ACCOUNT))
		return 0;
	if (r->flags & MREMAP_DONTUNMAP)
		pages = r->new_len >> PAGE_SHIFT;
	else if (r->new_len > r->old_len)
		pages = (r->new_len - r->old_len) >> PAGE_SHIFT;
	else
		return 0;
	if (fr_call(security_vm_enough_memory_mm, mm, pages))
		return -ENOMEM;
	r->charged = pages;
	return 0;
}

/* Checks for a resize, as mremap(2) makes them (vma_to_resize()). */
static long fr_check_resize(struct mm_struct *mm, struct vm_area_struct *vma,
			    struct fr_remap *r, unsigned long old_len)
{
	unsigned long pgoff;

	if (old_len > vma->vm_end - r->addr)
		return -EFAULT;
	if (r->new_len == old_len)
		return 0;
	pgoff = vma->vm_pgoff + ((r->addr - vma->vm_start) >> PAGE_SHIFT);
	if (pgoff + (r->new_len >> PAGE_SHIFT) < pgoff)
		return -EINVAL;
	if (r->new_len < old_len)
		return 0;
	/* Growth of mlocked memory populates it: mremap(2)'s job. */
	if (vma->vm_flags & VM_LOCKED)
		return FR_DECLINE;
	if (!fr_may_expand_vm(mm, vma, (r->new_len - old_len) >> PAGE_SHIFT))
		return -ENOMEM;
	return 0;
}

/*
 * The source range of a MREMAP_FIXED or MREMAP_DONTUNMAP call, checked as
 * mremap(2) checks it, but before anything is unmapped. A zero old_len
 * "duplicates" a shared mapping, which is not a move, and is refused for
 * a private one.
 */
static long fr_check_source(struct vm_area_struct *vma, struct fr_remap *r)
{
	unsigned long len = min(r->old_len, r->new_len);

	if (!r->old_len) {
		if (vma->vm_flags & (VM_SHARED | VM_MAYSHARE))
			return FR_DECLINE;
		/*
		 * 6.1-6.16 unmap a MREMAP_FIXED target before this check: a
		 * target over the source leaves nothing to look up.
		 */
		if (!FR_MREMAP_EARLY_TARGET_CHECKS &&
		    (r->flags & MREMAP_FIXED) && r->new_addr <= r->addr &&
		    r->addr - r->new_addr < r->new_len)
			return -EFAULT;
		return -EINVAL;
	}
	/* Shrinking while moving unmaps the tail first, with munmap's checks. */
	if (r->old_len > r->new_len &&
	    r->old_len - r->new_len > TASK_SIZE - (r->addr + r->new_len))
		return -EINVAL;
	if (len > vma->vm_end - r->addr) {
		/* 6.17+ moves every VMA of a plain move; before, it refuses. */
		if (FR_MREMAP_MULTI_VMA_MOVES && (r->flags & MREMAP_FIXED) &&
		    r->old_len == r->new_len)
			return FR_DECLINE;
		return -EFAULT;
	}
	/* A shrinking move whose tail spans other VMAs: left to mremap(2). */
	if (r->old_len > vma->vm_end - r->addr)
		return FR_DECLINE;
	return 0;
}

/*
 * Where the move goes: mremap(2)'s get_unmapped_area() at @addr (with
 * MAP_FIXED, only checked there), then the checks that need the final
 * address, and the commit charge: the last steps before any change.
 */
static long fr_place(struct mm_struct *mm, struct vm_area_struct *vma,
		     struct fr_remap *r, unsigned long addr,
		     unsigned long map_flags)
{
	unsigned long res;
	long err;

	if (vma->vm_flags & VM_MAYSHARE)
		map_flags |= MAP_SHARED;
	res = fr_get_unmapped_area(vma->vm_file, addr, r->new_len,
				   fr_pgoff(vma, r->addr), map_flags);
	if (IS_ERR_VALUE(res))
		return res;
	if (!(map_flags & MAP_FIXED))
		r->new_addr = res;
	err = fr_check_request(r);
	if (!err)
		err = fr_charge(mm, vma, r);
	if (!err)
		fr_prof_lap(&r->prof_t, FR_PROF_R_CHECKS);
	return err;
}

/* MREMAP_FIXED and/or MREMAP_DONTUNMAP: mm/mremap.c's mremap_to(). */
static long fr_remap_to(struct mm_struct *mm, struct vm_area_struct *vma,
			struct fr_remap *r)
{
	unsigned long map_flags = 0;
	bool target_mapped = false, unmapped = false;
	long err;

	if (!FR_MREMAP_TARGET_FIRST) {
		err = fr_check_new_addr(r);
		if (err)
			return err;
	}
	/*
	 * 5.10's mremap(2) refuses MREMAP_DONTUNMAP of other VMAs (after it
	 * unmapped a MREMAP_FIXED target: a failing call here changes
	 * nothing, as everywhere).
	 */
	if (FR_MREMAP_5_ORDER && (r->flags & MREMAP_DONTUNMAP) &&
	    (!vma_is_anonymous(vma) || (vma->vm_flags & VM_SHARED)))
		return -EINVAL;
	err = fr_check_source(vma, r);
	if (err)
		return err;
	err = fr_check_resize(mm, vma, r, min(r->old_len, r->new_len));
	if (err)
		return err;
	if (r->flags & MREMAP_DONTUNMAP) {
		if (vma->vm_flags & VM_LOCKED)
			return FR_DECLINE;
		if (!fr_may_expand_vm(mm, vma, r->old_len >> PAGE_SHIFT))
			return -ENOMEM;
	}
	if (r->flags & MREMAP_FIXED) {
		map_flags |= MAP_FIXED;
		err = fr_check_target(mm, r->new_addr, r->new_addr + r->new_len,
				      &target_mapped);
		if (err)
			return err;
	}
	/*
	 * With MAP_FIXED fr_place() only validates the address and does not
	 * depend on what is mapped there, so it can run before the unmap
	 * below.
	 */
	err = fr_place(mm, vma, r, r->new_addr, map_flags);
	if (err)
		return err;

	/*
	 * Changes start here. An empty target is not unmapped: do_munmap()
	 * would find nothing there (mmap_lock has been held for write since
	 * fr_check_target() looked) and return 0, its other errors being
	 * those of fr_check_new_addr(). That is one maple-tree walk less.
	 */
	if (target_mapped && !FR_MUTANT(TARGET_NOT_UNMAPPED)) {
		err = fr_call(do_munmap, mm, r->new_addr, r->new_len, NULL);
		if (err)
			goto fail;
		unmapped = true;
	}
	if (r->old_len > r->new_len) {
		err = fr_call(do_munmap, mm, r->addr + r->new_len,
			      r->old_len - r->new_len, NULL);
		if (err)
			goto fail;
		r->old_len = r->new_len;
		unmapped = true;
	}
	/* Either unmap may have split or freed the source's VMA. */
	if (unmapped)
		vma = vma_lookup(mm, r->addr);
	if (!vma) {
		err = -EFAULT;
		goto fail;
	}
	fr_prof_lap(&r->prof_t, FR_PROF_R_TARGET);
	return fr_remap_vma(mm, vma, r);
fail:
	fr_vm_unacct_memory(r->charged);
	return err;
}

/* Growth without MREMAP_FIXED: moves only where mremap(2) would move. */
static long fr_remap_grow(struct mm_struct *mm, struct vm_area_struct *vma,
			  struct fr_remap *r)
{
	long err;

	if (!r->old_len)
		return (vma->vm_flags & (VM_SHARED | VM_MAYSHARE)) ?
		       FR_DECLINE : -EINVAL;
	/*
	 * A new length beyond TASK_SIZE goes on like any other (6.17 and
	 * later refused it above): mremap(2)'s get_unmapped_area() answers
	 * ENOMEM, after the checks of its source. With 4-level paging 128 TiB
	 * is such a length.
	 */
	err = fr_check_resize(mm, vma, r, r->old_len);
	if (err)
		return err;
	/* mremap(2) grows in place where it can: not a move. */
	if (r->old_len == vma->vm_end - r->addr &&
	    fr_vma_expandable(vma, r->new_len - r->old_len))
		return FR_DECLINE;
	if (!(r->flags & MREMAP_MAYMOVE))
		return -ENOMEM;
	err = fr_place(mm, vma, r, 0, 0);
	if (err)
		return err;
	return fr_remap_vma(mm, vma, r);
}

static long fr_remap_locked(struct mm_struct *mm, struct fr_remap *r)
{
	struct vm_area_struct *vma;

	/* Near the map-count limit kernels differ in when they refuse. */
	if (mm->map_count + 6 > fr_max_map_count())
		return FR_DECLINE;
	/* 5.10: a plain shrink unmaps, and no change answers, unlooked. */
	if (FR_MREMAP_5_ORDER && !(r->flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) &&
	    r->old_len >= r->new_len)
		return r->old_len == r->new_len ? r->addr : FR_DECLINE;
	vma = vma_lookup(mm, r->addr);
	if (!vma)
		return -EFAULT;
	if (fr_vma_sealed(vma))
		return -EPERM;
	if (!fr_vma_supported(vma))
		return FR_DECLINE;
	if (r->flags & (MREMAP_FIXED | MREMAP_DONTUNMAP))
		return fr_remap_to(mm, vma, r);
	if (r->old_len == r->new_len)
		return r->addr;
	/* A plain shrink is an munmap of the tail: nothing to relocate. */
	if (r->old_len > r->new_len)
		return FR_DECLINE;
	return fr_remap_grow(mm, vma, r);
}

static long fr_remap(struct fr_remap *r, unsigned long old_len_raw,
		     unsigned long new_len_raw)
{
	struct mm_struct *mm = current->mm;
	long ret;

	if (r->flags & ~FR_MREMAP_FLAGS)
		return -EINVAL;
	if ((r->flags & MREMAP_FIXED) && !(r->flags & MREMAP_MAYMOVE))
		return -EINVAL;
	if (r->flags & MREMAP_DONTUNMAP) {
		if (!(r->flags & MREMAP_MAYMOVE))
			return -EINVAL;
		/* Kernels compare these before or after page-aligning. */
		if (old_len_raw != new_len_raw)
			return PAGE_ALIGN(old_len_raw) == PAGE_ALIGN(new_len_raw) ?
			       FR_DECLINE : -EINVAL;
	}
	if (offset_in_page(r->addr))
		return -EINVAL;
	r->old_len = PAGE_ALIGN(old_len_raw);
	r->new_len = PAGE_ALIGN(new_len_raw);
	if (!r->new_len)
		return -EINVAL;
	/* 6.17+'s check_mremap_params() checks the new length first. */
	if (FR_MREMAP_EARLY_TARGET_CHECKS && r->new_len > TASK_SIZE)
		return -EINVAL;
	if (FR_MREMAP_TARGET_FIRST &&
	    (r->flags & (MREMAP_FIXED | MREMAP_DONTUNMAP))) {
		ret = fr_check_new_addr(r);
		if (ret)
			return ret;
	}

	if (mmap_write_lock_killable(mm))
		return -EINTR;
	fr_prof_lap(&r->prof_t, FR_PROF_R_MMLOCK);
	ret = fr_remap_locked(mm, r);
	mmap_write_unlock(mm);
	fr_prof_lap(&r->prof_t, FR_PROF_R_TAIL);
	return ret;
}

/*
 * The pages of the caller's request, pinned for the call, so that the
 * result of a move that was made can always be written (see
 * FASTREMAP_FEAT_REMAP_PINNED): a copy_to_user() after the move could
 * fail if another thread unmapped them meanwhile, and the caller would
 * learn of the move through nothing but that EFAULT. A request is at
 * most a page: two pages at most.
 */
struct fr_req_pages {
	struct page *pages[2];
	unsigned long addr;
	u32 len;
	int n;
};

static long fr_req_pin(struct fr_req_pages *rp, void __user *uarg, u32 len)
{
	unsigned long first = (unsigned long)uarg & PAGE_MASK;
	unsigned long last = ((unsigned long)uarg + len - 1) & PAGE_MASK;
	int n = (last - first) / PAGE_SIZE + 1;
	int got;

	got = pin_user_pages_fast(first, n, FOLL_WRITE, rp->pages);
	if (got != n) {
		if (got > 0)
			unpin_user_pages(rp->pages, got);
		return -EFAULT;
	}
	rp->addr = (unsigned long)uarg;
	rp->len = len;
	rp->n = n;
	return 0;
}

/* Writes @src to the pinned request and unpins it. */
static void fr_req_write(struct fr_req_pages *rp, const void *src)
{
	unsigned long off = offset_in_page(rp->addr);
	u32 done = 0;
	int i;

	for (i = 0; i < rp->n; i++) {
		u32 chunk = min_t(u32, rp->len - done, PAGE_SIZE - off);
		void *k = kmap_local_page(rp->pages[i]);

		memcpy(k + off, src + done, chunk);
		kunmap_local(k);
		flush_dcache_page(rp->pages[i]);
		done += chunk;
		off = 0;
	}
	unpin_user_pages_dirty_lock(rp->pages, rp->n, true);
}

long fr_ioctl_remap(void __user *uarg)
{
	struct fastremap_remap req;
	struct fr_req_pages rp;
	struct fr_remap r = {};
	u64 t0 = fr_hook_prof_clock();
	u32 usize, len;
	long ret;

	r.prof_t = t0;
	ret = fr_copy_request(&req, FASTREMAP_REMAP_SIZE_VER0, uarg, &usize, 0);
	if (ret)
		return ret;
	len = min_t(u32, usize, sizeof(req));
	/* Writable and held before anything moves: a move is never lost. */
	ret = fr_req_pin(&rp, uarg, len);
	if (ret)
		return ret;

	fr_prof_lap(&r.prof_t, FR_PROF_R_ENTRY);
	r.req_start = untagged_addr((unsigned long)uarg);
	r.req_end = r.req_start + len;
	r.addr = untagged_addr(req.old_addr);
	r.new_addr = req.new_addr;
	r.flags = req.mremap_flags;
	ret = fr_remap(&r, req.old_size, req.new_size);
	if (IS_ERR_VALUE(ret)) {
		unpin_user_pages(rp.pages, rp.n);
		return ret;
	}

	req.new_addr = ret;
	req.moved_pud = r.stats.pud;
	req.moved_pmd = r.stats.pmd;
	req.moved_thp = r.stats.thp;
	req.moved_pte = r.stats.pte;
	req.tlb_flushes = r.stats.flushes;
	req.moved_contpte = r.stats.contpte;
	req.unfolded_contpte = r.stats.contpte_unfolded;
	fr_req_write(&rp, &req);
	fr_prof_lap(&r.prof_t, FR_PROF_R_EXIT);
	fr_hook_prof_add(FR_PROF_R_TOTAL, r.prof_t - t0);
	fr_hook_prof_add(FR_PROF_R_CALLS, 1);
	return 0;
}
