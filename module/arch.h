/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the page-table mover needs from each architecture, written once per
 * architecture: the page size it supports, the single TLB flush that
 * covers a pass of moved entries and tables, and how a moved PUD entry is
 * written.
 */
#ifndef FASTREMAP_ARCH_H
#define FASTREMAP_ARCH_H

#include <linux/mm.h>
#include <asm/pgalloc.h>
#include <asm/tlbflush.h>
/* fr_call(), and x86's flush, an internal function. */
#include "symbols.h"

/*
 * The mover works in the kernel's own units (PAGE_SIZE, PTRS_PER_PTE,
 * PMD_SIZE, PUD_SIZE, CONT_PTES), and is tested with 4 KiB pages (512
 * entries per table: 2 MiB PMDs, 1 GiB PUDs) and with arm64's 16 KiB
 * (Debian's arm64-16k flavour: 2048 entries, 32 MiB PMDs, 64 GiB PUDs,
 * 2 MiB contiguous-PTE blocks). 64 KiB pages (a PMD of 512 MiB, three
 * levels) are untested: refuse to build there rather than move entries
 * nobody has seen moved.
 */
#if PAGE_SHIFT != 12 && PAGE_SHIFT != 14
#error "fastremap supports 4 KiB and 16 KiB pages only; this kernel's pages are neither (e.g. 64 KiB): build against a 4 KiB- or 16 KiB-page kernel"
#endif

/*
 * What fr_arch_move_block() did with the entry at the source address:
 * nothing (move entry by entry), or moved a block of FR_ARCH_BLOCK_PTES
 * whole, kept contiguous at the destination or written there as single
 * entries; or found a block the move cuts, which the caller's
 * ptep_get_and_clear() unfolds (the kernel's own break-before-make).
 */
enum fr_block {
	FR_BLOCK_NONE,
	FR_BLOCK_KEPT,
	FR_BLOCK_UNFOLDED,
	FR_BLOCK_CUT,
};

#if defined(CONFIG_X86_64)
/*
 * The range flush of x86 is internal (flush_tlb_mm_range()); freed_tables
 * = true, since whole tables moved: it also invalidates the paging-
 * structure caches that may still point at them.
 */
static inline void fr_arch_flush_moved(struct vm_area_struct *vma,
				       unsigned long start, unsigned long end)
{
	fr_call(flush_tlb_mm_range, vma->vm_mm, start, end, PAGE_SHIFT, true);
}

/*
 * Entries moved, no table freed (FASTREMAP_IOC_MOVE): leaf caches only.
 * @vma: any VMA of the mm.
 */
static inline void fr_arch_flush_entries(struct vm_area_struct *vma,
					 unsigned long start, unsigned long end)
{
	fr_call(flush_tlb_mm_range, vma->vm_mm, start, end, PAGE_SHIFT, false);
}

/* A PMD table moves to @new_pud: a fresh entry, as mm/mremap.c makes it. */
static inline void fr_arch_pud_move(struct mm_struct *mm, pud_t *new_pud,
				    pud_t pud)
{
	pud_populate(mm, new_pud, pud_pgtable(pud));
}

static inline void fr_arch_pud_clear(pud_t *pudp)
{
	pud_clear(pudp);
}

/*
 * One moved entry. set_pte_at() ends in set_pte(), a paravirt call that
 * only Xen PV overrides (PARAVIRT_XXL, which Debian's kernels have);
 * everywhere else the kernel patches it into a call of native_set_pte()
 * in its own text: once per entry, out of the mover's page (hot.h), as
 * arm64's out-of-line store was. Outside Xen PV it is one store, made
 * here. set_pte_at()'s other work is page-table checking
 * (CONFIG_PAGE_TABLE_CHECK: off in Debian's kernels, on in the debug
 * lanes', which keep set_pte_at()) and, on 6.12, the lazy MMU mode,
 * another paravirt hook that only Xen PV implements.
 */
static inline void fr_arch_set_pte(struct mm_struct *mm, unsigned long addr,
				   pte_t *ptep, pte_t pte)
{
#ifndef CONFIG_PAGE_TABLE_CHECK
	if (!cpu_feature_enabled(X86_FEATURE_XENPV)) {
		native_set_pte(ptep, pte);
		return;
	}
#endif
	set_pte_at(mm, addr, ptep, pte);
}

/*
 * The table-copying mover (pgmove.c, fr_copy_table()) writes and clears
 * entries with plain stores that pass no page-table check (see there),
 * and never under Xen PV, whose set_pte() is a hypercall. Always inline:
 * merely inline, gcc lays out fr_copy_table() around the test otherwise
 * than when it was written there.
 */
static __always_inline bool fr_arch_copy_tables(void)
{
	return !cpu_feature_enabled(X86_FEATURE_XENPV);
}

/*
 * An entry a CPU may still dirty through a stale TLB entry: present,
 * writable, clean. x86's flags in the low bits, tested together (the
 * generic accessors mask the PFN off first, with a load per entry); a
 * PROT_NONE entry is not writable, a shadow-stack one already dirty. Not
 * special: fr_release_tables() marks the page of each such entry dirty,
 * and a special entry may have none (fr_vma_supported() declines the
 * mappings that hold them; this keeps the page lookup safe regardless).
 */
static inline bool fr_arch_pte_clean_writable(pte_t pte)
{
	return (native_pte_val(pte) &
		(_PAGE_PRESENT | _PAGE_RW | _PAGE_DIRTY | _PAGE_SPECIAL)) ==
	       (_PAGE_PRESENT | _PAGE_RW);
}

/* An entry's value, not through paravirt's pte_val() (see above). */
static inline pteval_t fr_arch_pte_raw(pte_t pte)
{
	return native_pte_val(pte);
}

/*
 * Whether entries whose values ANDed give @all and ORed give @any are
 * each present and in need of nothing but the copy (pgmove.c's copy
 * loop): dirty already, so not writable and clean; x86 has no contiguous
 * blocks.
 */
static inline bool fr_arch_ptes_plain(pteval_t all, pteval_t any)
{
	return (all & (_PAGE_PRESENT | _PAGE_DIRTY)) == (_PAGE_PRESENT | _PAGE_DIRTY);
}

static inline void fr_arch_copy_pte(pte_t *ptep, pte_t pte)
{
	native_set_pte(ptep, pte);
}

static inline void fr_arch_pte_clear_raw(pte_t *ptep)
{
	native_pte_clear(NULL, 0, ptep);
}

/*
 * A detached table hooked back with the entry it had: pmd_populate()
 * adds only Xen PV's paravirt_alloc_pte(), and copying is never done
 * there.
 */
static inline void fr_arch_pmd_rehook(pmd_t *pmdp, pmd_t pmd)
{
	native_set_pmd(pmdp, pmd);
}

/* x86 has no contiguous-PTE blocks (the stubs below the arch sections). */
#define FR_ARCH_BLOCK_PTES	1
#elif defined(CONFIG_ARM64)
/*
 * arm64's flush_tlb_range() is inline: range TLBI where the CPU has it
 * (FEAT_TLBIRANGE, which -cpu max emulates), per-page TLBI for short
 * ranges, the whole ASID past MAX_DVM_OPS; never leaf-only, so the walk
 * caches holding the moved tables are invalidated too. Its own inner
 * helper, __flush_tlb_range(), changed arguments in 7.x; this one did not.
 * Out of line: arm64 has no TLB flush tracepoint, so tests/t_remap_tlb
 * counts this function's calls with a kprobe, apart from the module's
 * own counter. Not cloned either: unstable's gcc made it
 * "fr_arch_flush_moved.isra.0" (IPA-SRA drops the unused VMA fields), a
 * name the kprobe cannot find.
 */
static noinline __noclone __maybe_unused void
fr_arch_flush_moved(struct vm_area_struct *vma, unsigned long start,
		    unsigned long end)
{
	flush_tlb_range(vma, start, end);
}

/*
 * The same for entries of several VMAs (FASTREMAP_IOC_MOVE): @vma is any
 * VMA of the mm, as flush_tlb_range() reads only the VMA's mm.
 */
static inline void fr_arch_flush_entries(struct vm_area_struct *vma,
					 unsigned long start, unsigned long end)
{
	fr_arch_flush_moved(vma, start, end);
}

/*
 * A user PUD entry written as set_pud() writes it, without set_pud()'s
 * test for the kernel's own top-level table. Where the PUD level is folded
 * at boot (16 KiB pages with 52-bit addresses, Debian's arm64-16k: a CPU
 * without LPA2 pages with 3 levels), set_pud() compares the entry's
 * address with swapper_pg_dir, which no module can link to; a user mm's
 * tables are never that one. The barriers are set_pud()'s after a valid
 * entry (the walker sees the store before anything that follows; 7.x
 * defers them in lazy-MMU mode, which the mover never enters).
 */
static inline void fr_arch_set_pud(pud_t *pudp, pud_t pud)
{
	WRITE_ONCE(*pudp, pud);
	if (pud_valid(pud)) {
		dsb(ishst);
		isb();
	}
}

static inline void fr_arch_pud_clear(pud_t *pudp)
{
	fr_arch_set_pud(pudp, __pud(0));
}

/*
 * The moved entry itself: arm64's pud_populate() compares the mm with
 * init_mm, which is not exported, to choose PXN or UXN (and 7.x adds the
 * table access flag); the entry the source's pud_populate() made for this
 * same user mm already has the bits, and the table it points to moves
 * unchanged.
 */
static inline void fr_arch_pud_move(struct mm_struct *mm, pud_t *new_pud,
				    pud_t pud)
{
	fr_arch_set_pud(new_pud, pud);
}

/*
 * The table-copying mover (pgmove.c, fr_copy_table()): plain stores of
 * user entries, as __set_pte() makes them (WRITE_ONCE(); a barrier only
 * for a valid kernel entry, which these never are) without set_ptes()'s
 * work around it: page-table checking, which the copy must not pass (see
 * pgmove.c), the contiguous-PTE layer's unfold and fold (fr_copy_cont()
 * handles the bit instead), and the cache and tag maintenance of a page
 * newly mapped, done when the page was first mapped and not undone
 * since: the moved pages are the same, still mapped. The flush that
 * follows begins with the dsb(ishst) that orders these stores before it.
 */
static inline bool fr_arch_copy_tables(void)
{
	return true;
}

/*
 * An entry a CPU may still dirty through a stale TLB entry: valid,
 * writable (PTE_WRITE, the hardware's DBM bit), clean (PTE_RDONLY still
 * set, so the hardware has not dirtied it, and no software PTE_DIRTY): a
 * write through it makes the hardware clear PTE_RDONLY, or, without
 * hardware dirty management, faults. Tested together, as pte_valid(),
 * pte_write(), pte_dirty() and pte_special() test them one by one. A
 * PROT_NONE entry is present but not valid, so no CPU can write through
 * it. Not special: fr_release_tables() looks up the page of each such
 * entry (see the x86-64 variant).
 */
static inline bool fr_arch_pte_clean_writable(pte_t pte)
{
	return (pte_val(pte) &
		(PTE_VALID | PTE_WRITE | PTE_RDONLY | PTE_DIRTY | PTE_SPECIAL)) ==
	       (PTE_VALID | PTE_WRITE | PTE_RDONLY);
}

static inline pteval_t fr_arch_pte_raw(pte_t pte)
{
	return pte_val(pte);
}

/*
 * Whether entries whose values ANDed give @all and ORed give @any are
 * each present and in need of nothing but the copy (pgmove.c's copy
 * loop): valid, PTE_RDONLY clear (so not writable and clean: the
 * hardware may write through it already), and not in a contiguous block
 * (fr_arch_pte_cont()).
 */
static inline bool fr_arch_ptes_plain(pteval_t all, pteval_t any)
{
	return (all & PTE_VALID) && !(any & (PTE_RDONLY | PTE_CONT));
}

static inline void fr_arch_copy_pte(pte_t *ptep, pte_t pte)
{
	WRITE_ONCE(*ptep, pte);
}

static inline void fr_arch_pte_clear_raw(pte_t *ptep)
{
	WRITE_ONCE(*ptep, __pte(0));
}

/*
 * A detached table hooked back with the entry it had, after its entries
 * were emptied with plain stores: smp_wmb() orders those before the
 * entry, as pmd_install() orders a new table's zeroing before
 * pmd_populate(), so that no walker finds the table through the entry
 * and then an old entry in it. set_pmd() adds the barriers after a valid
 * table entry, as pmd_populate() ends in it; the entry is the one the
 * source's pmd_populate() made for this mm.
 */
static inline void fr_arch_pmd_rehook(pmd_t *pmdp, pmd_t pmd)
{
	/* The emptied entries before the table entry that reaches them. */
	smp_wmb();
	set_pmd(pmdp, pmd);
}

#ifdef CONFIG_ARM64_CONTPTE
#define FR_ARCH_BLOCK_PTES	CONT_PTES

/*
 * For the table-copying mover: an entry of a contiguous block. Valid
 * entries only: a swap entry's offset spans the bit's position.
 */
static inline bool fr_arch_pte_cont(pte_t pte)
{
	return pte_valid_cont(pte);
}

/*
 * The copy of the entry of a contiguous block at index @i of a PMD-
 * aligned source table, going to @new_addr. The block lies wholly in the
 * copied table, and each of its entries is copied as it is, with its own
 * access and dirty bits (pgmove.c's argument for the copying mover says
 * why that loses no dirty bit). Where the destination is congruent modulo CONT_PTE_SIZE, the
 * block lands aligned on the same pages: it keeps the contiguous bit and
 * stays one (FR_BLOCK_KEPT). Elsewhere its entries lose the bit and are
 * written as single entries (FR_BLOCK_UNFOLDED), as fr_arch_move_cont()
 * writes such a block.
 */
static inline enum fr_block fr_arch_copy_cont(pte_t *pte, unsigned int i,
					      unsigned long new_addr)
{
	if (!((new_addr ^ ((unsigned long)i << PAGE_SHIFT)) &
	      (CONT_PTE_SIZE - 1)))
		return FR_BLOCK_KEPT;
	*pte = pte_mknoncont(*pte);
	return FR_BLOCK_UNFOLDED;
}

/*
 * A single entry, one outside any contiguous block (6.9+). The public
 * ptep_get(), ptep_get_and_clear() and set_pte_at() each load the entry
 * they are given again to test its contiguous bit: three loads of the
 * source entry and one of the destination per moved entry, where the
 * mover has loaded the source entry once and fr_arch_move_block() has
 * tested that bit (under the page-table lock, which every fold and
 * unfold takes), and a destination entry is always none. The mover calls
 * the raw helpers the public ones end in (page-table checking and
 * set_pte_at()'s cache and tag maintenance are in them) and keeps only
 * set_pte_at()'s attempt to fold the destination's block after its last
 * entry, which its inline test makes once in CONT_PTES entries: a block
 * whose pages the move brought into line becomes one, as after
 * mremap(2). A block the move cuts is unfolded by the public
 * ptep_get_and_clear() first (FR_BLOCK_CUT). Counted on 7.2, in
 * bench/README.md ("Counts measured").
 */
#define FR_ARCH_PTE_RAW	1

static inline pte_t fr_arch_pte_get(pte_t *ptep)
{
	return __ptep_get(ptep);
}

static inline pte_t fr_arch_pte_clear(struct mm_struct *mm, unsigned long addr,
				      pte_t *ptep)
{
	return __ptep_get_and_clear(mm, addr, ptep);
}

/*
 * Inlined whole (flatten): 7.x's __set_ptes() ends in __set_ptes_anysz(),
 * written for any count and three page sizes, which gcc 15 keeps out of
 * line as a ".constprop" clone in .text: each entry moved called out of
 * the mover's page (tests/harness/check-placement.sh fails a hot function
 * that calls such a clone). For one 4 KiB entry it folds down to a few
 * tests and a store.
 */
static inline __attribute__((flatten)) void
fr_arch_set_pte(struct mm_struct *mm, unsigned long addr, pte_t *ptep, pte_t pte)
{
	pte = pte_mknoncont(pte);
	__set_ptes(mm, addr, ptep, pte, 1);
	contpte_try_fold(mm, addr, ptep, pte);
}

/*
 * Contiguous PTEs (6.9+): the kernel maps a large folio's aligned 64 KiB
 * as a block of CONT_PTES entries with the contiguous bit, one TLB entry
 * for all. The public ptep_get_and_clear() would unfold such a block
 * before clearing one entry, and set_pte_at() refold it at the
 * destination: each a break-before-make with a TLB flush of its own, two
 * per block. A block lying wholly inside the extent moves instead as the
 * kernel's batched clears take it (contpte_get_and_clear_full_ptes()):
 * every entry cleared raw, under the page-table lock, and the move's one
 * flush later covers the stale block. Where the destination is congruent
 * modulo the block, the entries are written as they were, contiguous bit
 * included: same pages, same attributes, now at an aligned address, so
 * the block stays one. Elsewhere they are written as single entries. A
 * block the extent cuts is left to the caller's per-entry path, whose
 * ptep_get_and_clear() unfolds it: the part that stays must lose the bit.
 */
static noinline __attribute__((flatten)) __maybe_unused enum fr_block
fr_arch_move_cont(struct mm_struct *mm, pte_t *old_pte, unsigned long old_addr,
		  unsigned long old_end, pte_t *new_pte, unsigned long new_addr)
{
	bool keep = !((old_addr ^ new_addr) & (CONT_PTE_SIZE - 1));
	pte_t pte;
	int i;

	if (old_addr & (CONT_PTE_SIZE - 1) || old_end - old_addr < CONT_PTE_SIZE)
		return FR_BLOCK_CUT;
	/*
	 * The kernel keeps a block whole (every entry valid, contiguous,
	 * consecutive pages); if one ever is not, unfold it.
	 */
	pte = __ptep_get(old_pte);
	for (i = 1; i < CONT_PTES; i++) {
		pte_t e = __ptep_get(old_pte + i);

		if (!pte_valid_cont(e) || pte_pfn(e) != pte_pfn(pte) + i)
			return FR_BLOCK_CUT;
	}
	/*
	 * Cleared entry by entry, written as one run of CONT_PTES (as
	 * contpte_convert() and 7.x's batched move_ptes()
	 * write a block) carrying the block's gathered dirty and young
	 * bits: the hardware sets them per entry, and contpte_ptep_get()
	 * already reports their union for every entry of the block, so no
	 * reader sees a difference, and no dirty bit is lost.
	 */
	pte = __ptep_get_and_clear(mm, old_addr, old_pte);
	for (i = 1; i < CONT_PTES; i++) {
		pte_t e = __ptep_get_and_clear(mm, old_addr + i * PAGE_SIZE,
					       old_pte + i);

		if (pte_dirty(e))
			pte = pte_mkdirty(pte);
		if (pte_young(e))
			pte = pte_mkyoung(pte);
	}
	__set_ptes(mm, new_addr, new_pte, keep ? pte : pte_mknoncont(pte),
		   CONT_PTES);
	return keep ? FR_BLOCK_KEPT : FR_BLOCK_UNFOLDED;
}

/*
 * Called for every entry the mover visits: only the test is inline. The
 * block's move is out of line, once per block: inlined, it made fr_walk()
 * larger than the page it must fit in (hot.h), and its __set_ptes() of a
 * whole block, left to gcc, became a ".constprop" clone of the kernel's
 * inline, which check-placement.sh rejects in a hot function.
 */
static inline enum fr_block
fr_arch_move_block(struct mm_struct *mm, pte_t pte, pte_t *old_pte,
		   unsigned long old_addr, unsigned long old_end,
		   pte_t *new_pte, unsigned long new_addr)
{
	if (!pte_valid_cont(pte))
		return FR_BLOCK_NONE;
	return fr_arch_move_cont(mm, old_pte, old_addr, old_end, new_pte, new_addr);
}
#else
/* No contiguous blocks in user mappings before 6.9 (the stubs below). */
#define FR_ARCH_BLOCK_PTES	1

/* As set_pte_at() writes it (flatten: see above). */
static inline __attribute__((flatten)) void
fr_arch_set_pte(struct mm_struct *mm, unsigned long addr, pte_t *ptep, pte_t pte)
{
	set_pte_at(mm, addr, ptep, pte);
}
#endif /* CONFIG_ARM64_CONTPTE */
#else
#error "fastremap supports x86-64 and arm64"
#endif

#if FR_ARCH_BLOCK_PTES == 1
/* No contiguous-PTE blocks: x86-64, and arm64 before 6.9. */
static inline bool fr_arch_pte_cont(pte_t pte)
{
	return false;
}

static inline enum fr_block fr_arch_copy_cont(pte_t *pte, unsigned int i,
					      unsigned long new_addr)
{
	return FR_BLOCK_NONE;
}

static inline enum fr_block
fr_arch_move_block(struct mm_struct *mm, pte_t pte, pte_t *old_pte,
		   unsigned long old_addr, unsigned long old_end,
		   pte_t *new_pte, unsigned long new_addr)
{
	return FR_BLOCK_NONE;
}
#endif

#ifndef FR_ARCH_PTE_RAW
/*
 * The entry the mover reads and clears: without contiguous PTEs the
 * kernel's own helpers load it once each.
 */
static inline pte_t fr_arch_pte_get(pte_t *ptep)
{
	return ptep_get(ptep);
}

static inline pte_t fr_arch_pte_clear(struct mm_struct *mm, unsigned long addr,
				      pte_t *ptep)
{
	return ptep_get_and_clear(mm, addr, ptep);
}
#endif

#endif /* FASTREMAP_ARCH_H */
