/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal kernel functions fastremap calls but modules cannot link
 * against. They are named here and in the table of symbols.c, nowhere else:
 * each is resolved once at load, and a missing one fails the load with its
 * name.
 */
#ifndef FASTREMAP_SYMBOLS_H
#define FASTREMAP_SYMBOLS_H

#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include "compat.h"

/*
 * Functions the kernel's headers hide from modules (x86's tlbflush.h
 * declares these only #ifndef MODULE) get their type here.
 */
typedef void (*fr_flush_tlb_mm_range_t)(struct mm_struct *mm,
					 unsigned long start,
					 unsigned long end,
					 unsigned int stride_shift,
					 bool freed_tables);

/*
 * The functions themselves. Where the public headers declare one, typeof()
 * gives the type each kernel declares, so a changed signature breaks the
 * build instead of the call. Every field must also be named in the table
 * in symbols.c; the build checks that the two agree in number.
 */
struct fr_symbols {
	fr_flush_tlb_mm_range_t flush_tlb_mm_range;
	typeof(&__pte_alloc) __pte_alloc;
	typeof(&__pmd_alloc) __pmd_alloc;
	typeof(&__pud_alloc) __pud_alloc;
	typeof(&__mmu_notifier_invalidate_range_start) __mmu_notifier_invalidate_range_start;
	typeof(&__mmu_notifier_invalidate_range_end) __mmu_notifier_invalidate_range_end;
};

/* Filled by fr_symbols_resolve() before the device is registered. */
extern struct fr_symbols fr_sym;

int fr_symbols_resolve(void);
/* One line per symbol, "name status", for the device's sysfs attribute. */
ssize_t fr_symbols_show(char *buf, size_t size);

#endif /* FASTREMAP_SYMBOLS_H */
