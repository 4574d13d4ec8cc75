/* SPDX-License-Identifier: GPL-2.0 */
/*
 * FASTREMAP_IOC_MOVE inside the module: the state of a call and of its
 * current pass, shared by move.c (the call and its passes), move_pte.c
 * (the entries a pass moves) and move_vec.c (the caller's vector).
 */
#ifndef FASTREMAP_MOVE_INTERNAL_H
#define FASTREMAP_MOVE_INTERNAL_H

#include <linux/mm_types.h>
#include <linux/fastremap.h>
#include "pgmove.h"

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
	/* The VMAs fr_move_vma_at() found last, the latest first. */
	struct vm_area_struct *last_vma[2];
	struct fr_pmd_cache src_pmd, dst_pmd;
	/* A folio to lock and unlock (referenced) before the next pass. */
	struct folio *wait;
	struct fr_pt_stats stats;
	u64 split;
};

/* move_pte.c: the locked half of a pass, entry by entry. */

/*
 * Moves up to @len bytes (inside one PTE table on each side) from @src to
 * @dst; *done is set to the bytes done, holes skipped included. 0, an
 * errno, FR_RETRY or FR_WAIT.
 */
int fr_move_entries(struct fr_batch *b, struct vm_area_struct *dvma,
		    unsigned long src, unsigned long dst, unsigned long len,
		    unsigned long *done);
/* The PMD entry over @addr, or NULL if a level above it is missing. */
pmd_t *fr_move_pmd(struct fr_batch *b, struct fr_pmd_cache *c,
		   unsigned long addr);
/*
 * Whether @page may leave this process's page tables at all: exclusive to
 * it and not pinned.
 */
bool fr_move_page_movable(struct page *page);
/* Whether the @len bytes at the source PMD @pmd are a THP that moves whole. */
bool fr_move_thp_whole(struct fr_batch *b, pmd_t *pmd, unsigned long len);
/* A PMD-mapped THP of this process's that must not move (nor be split). */
bool fr_move_thp_stuck(pmd_t pmd);

/* move_vec.c: the caller's vector of moves. */

struct fr_move_file;

/*
 * Everything about the vector that needs no VMA; the request structure,
 * [@req, @req + @req_len), must lie outside every range.
 */
int fr_move_check_vec(const struct fastremap_move_vec *v, u32 n,
		      unsigned long req, unsigned long req_len);
/* Reads @n moves from @u into @v: EFAULT on a fault. */
int fr_move_copy_vec(struct fastremap_move_vec *v,
		     const struct fastremap_move_vec __user *u, u32 n);
/* A buffer for @count moves (*kept: the file's), or NULL. */
struct fastremap_move_vec *fr_move_get_vec(struct fr_move_file *f,
					   u32 count, bool *kept);
void fr_move_put_vec(struct fr_move_file *f, struct fastremap_move_vec *v,
		     bool kept);

#endif /* FASTREMAP_MOVE_INTERNAL_H */
