/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Hooks the test suite drives, compiled only into test builds
 * (FR_TEST_HOOKS, set by scripts/build-module.sh; see Kbuild). The module
 * DKMS and `make install` build has none: each hook is then a constant.
 */
#ifndef FASTREMAP_TESTHOOKS_H
#define FASTREMAP_TESTHOOKS_H

#include <linux/spinlock_types.h>
#include <linux/types.h>
#ifdef FR_TEST_HOOKS
#include <linux/sched/clock.h>
#endif

/*
 * move_prof: FASTREMAP_IOC_MOVE's phases (ns) and counts, then
 * FASTREMAP_IOC_REMAP's (FR_PROF_R_*).
 */
enum fr_prof_slot {
	FR_PROF_VEC, FR_PROF_VMAS, FR_PROF_PREPARE, FR_PROF_LOCK,
	FR_PROF_MOVE, FR_PROF_FLUSH, FR_PROF_UNLOCK,
	FR_PROF_CALLS, FR_PROF_MOVES, FR_PROF_PAGES, FR_PROF_PASSES,
	FR_PROF_TOTAL, FR_PROF_ENTRY, FR_PROF_MMLOCK, FR_PROF_NOTIFY, FR_PROF_EXIT,
	FR_PROF_R_CALLS, FR_PROF_R_ENTRY, FR_PROF_R_MMLOCK, FR_PROF_R_CHECKS,
	FR_PROF_R_TARGET, FR_PROF_R_COPYVMA, FR_PROF_R_PREPARE, FR_PROF_R_MOVE,
	FR_PROF_R_FLUSH, FR_PROF_R_UNLOCK, FR_PROF_R_UNMAP, FR_PROF_R_TAIL,
	FR_PROF_R_EXIT, FR_PROF_R_TOTAL,
	FR_PROF_N
};

#ifdef FR_TEST_HOOKS
/* fail_table_alloc=N: the Nth page-table allocation on fails. */
bool fr_hook_table_alloc_fails(void);
/*
 * hold_after_prepare=1: the next relocation stops after preparing its
 * tables, before it takes the rmap locks, reads 2 while it waits there,
 * and goes on when 0 is written (or after 10 s).
 */
void fr_hook_prepared(void);
/*
 * hold_before_flush=1: the next pass of either ioctl that moved entries
 * stops before its TLB flush, with every lock of the pass held (and the
 * tables the copying mover copied not yet detached), reads 2 while it
 * waits there, and goes on when 0 is written (or after 10 s).
 */
void fr_hook_unflushed(void);
/* prepare_retries: how often a pass stalled and the move prepared again. */
void fr_hook_stalled(void);
/* pass_budget=N: passes of N units instead of @dflt (0: @dflt). */
unsigned long fr_hook_pass_budget(unsigned long dflt);
/* move_pass_pages=N: FASTREMAP_IOC_MOVE passes of N pages (0: @dflt). */
unsigned long fr_hook_move_pass_pages(unsigned long dflt);
/*
 * copy_tables=0: FASTREMAP_IOC_REMAP moves every PTE with the per-entry
 * mover, as where the copying one is not compiled in (pgmove.c,
 * FR_COPY_TABLES), so that the bench can count and the tests check it
 * alone; 1, the default, is what release builds do.
 */
bool fr_hook_copy_tables(void);
/*
 * tables_copied: source PTE tables the copying mover has moved, in all
 * (defined where it is compiled in, FR_COPY_TABLES).
 */
void fr_hook_tables_copied(unsigned int n);
void fr_hook_prof_add(enum fr_prof_slot slot, u64 n);
/*
 * lock_pairs: "pairs P swapped S descending D": pairs of two distinct
 * page-table locks taken, those fr_lock2() was handed higher address first
 * and swapped, and those taken higher address first. Any write zeroes
 * them; writing "probe" also makes fr_lock2() take the next pair it is
 * handed higher first as it is (the detector's positive control: a test
 * with no other mover running).
 */
void fr_hook_lock_pair(const spinlock_t *first, const spinlock_t *second);
/* Whether fr_lock2() swaps a pair handed to it higher address first. */
bool fr_hook_lock_swap(void);
/* A clock for move_prof: 0 in builds without it, where nothing is added. */
#define fr_hook_prof_clock()	local_clock()

/* At unload: what the hooks registered with the kernel goes. */
void fr_hooks_exit(void);
#else
static inline bool fr_hook_table_alloc_fails(void)
{
	return false;
}

static inline void fr_hook_prepared(void)
{
}

static inline void fr_hook_unflushed(void)
{
}

static inline void fr_hook_stalled(void)
{
}

static inline unsigned long fr_hook_pass_budget(unsigned long dflt)
{
	return dflt;
}

static inline unsigned long fr_hook_move_pass_pages(unsigned long dflt)
{
	return dflt;
}

static inline bool fr_hook_copy_tables(void)
{
	return true;
}

static inline void fr_hook_tables_copied(unsigned int n)
{
}

static inline void fr_hook_prof_add(enum fr_prof_slot slot, u64 n)
{
}

static inline void fr_hook_lock_pair(const spinlock_t *first,
				     const spinlock_t *second)
{
}

static inline bool fr_hook_lock_swap(void)
{
	return true;
}

#define fr_hook_prof_clock()	0ULL

static inline void fr_hooks_exit(void)
{
}
#endif

/* Adds the time since *t to @slot of move_prof (test builds), and restarts *t. */
static inline void fr_prof_lap(u64 *t, enum fr_prof_slot slot)
{
	u64 now = fr_hook_prof_clock();

	fr_hook_prof_add(slot, now - *t);
	*t = now;
}

#endif /* FASTREMAP_TESTHOOKS_H */
