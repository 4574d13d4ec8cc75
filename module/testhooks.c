// SPDX-License-Identifier: GPL-2.0
/*
 * Test builds only: hooks that let the test suite reach the mover's rare
 * paths deterministically. See testhooks.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/mmu_notifier.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <linux/wait.h>
#include "compat-generated.h"
#include "pgmove.h"
#include "testhooks.h"

static int fr_param_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read((atomic_t *)kp->arg));
}

static atomic_t fail_table_alloc = ATOMIC_INIT(0);

static int fr_set_fail(const char *val, const struct kernel_param *kp)
{
	int n, ret = kstrtoint(val, 0, &n);

	if (ret || n < 0)
		return -EINVAL;
	atomic_set(&fail_table_alloc, n);
	return 0;
}

static const struct kernel_param_ops fr_fail_ops = {
	.set = fr_set_fail,
	.get = fr_param_get,
};
module_param_cb(fail_table_alloc, &fr_fail_ops, &fail_table_alloc, 0600);
MODULE_PARM_DESC(fail_table_alloc,
		 "fail page-table allocations from the Nth on (tests only)");

bool fr_hook_table_alloc_fails(void)
{
	int n = atomic_read(&fail_table_alloc);

	if (n == 1)
		return true;
	if (n > 1)
		atomic_cmpxchg(&fail_table_alloc, n, n - 1);
	return false;
}

enum { FR_HOLD_OFF, FR_HOLD_ARMED, FR_HOLD_WAITING };
static DECLARE_WAIT_QUEUE_HEAD(fr_hold_wq);

static int fr_set_hold(const char *val, const struct kernel_param *kp)
{
	int n, ret = kstrtoint(val, 0, &n);

	if (ret || (n != FR_HOLD_OFF && n != FR_HOLD_ARMED))
		return -EINVAL;
	atomic_set((atomic_t *)kp->arg, n);
	wake_up_all(&fr_hold_wq);
	return 0;
}

static const struct kernel_param_ops fr_hold_ops = {
	.set = fr_set_hold,
	.get = fr_param_get,
};

/* Waits at an armed hold until the test writes 0 (or 10 s pass). */
static void fr_hold(atomic_t *hold, const char *name)
{
	if (atomic_cmpxchg(hold, FR_HOLD_ARMED, FR_HOLD_WAITING) != FR_HOLD_ARMED)
		return;
	if (!wait_event_timeout(fr_hold_wq,
				atomic_read(hold) != FR_HOLD_WAITING, 10 * HZ))
		pr_warn("%s: nobody released the hold in 10 s\n", name);
	atomic_set(hold, FR_HOLD_OFF);
}

static atomic_t hold_after_prepare = ATOMIC_INIT(FR_HOLD_OFF);
module_param_cb(hold_after_prepare, &fr_hold_ops, &hold_after_prepare, 0600);
MODULE_PARM_DESC(hold_after_prepare,
		 "1: hold the next move between preparing and moving until 0 is written (tests only)");
static atomic_t hold_before_flush = ATOMIC_INIT(FR_HOLD_OFF);
module_param_cb(hold_before_flush, &fr_hold_ops, &hold_before_flush, 0600);
MODULE_PARM_DESC(hold_before_flush,
		 "1: hold the next pass that moved entries before its flush until 0 is written (tests only)");

void fr_hook_prepared(void)
{
	fr_hold(&hold_after_prepare, "hold_after_prepare");
}

void fr_hook_unflushed(void)
{
	fr_hold(&hold_before_flush, "hold_before_flush");
}

static atomic_t prepare_retries = ATOMIC_INIT(0);

static const struct kernel_param_ops fr_count_ops = {
	.get = fr_param_get,
};
module_param_cb(prepare_retries, &fr_count_ops, &prepare_retries, 0400);
MODULE_PARM_DESC(prepare_retries,
		 "passes that stalled and were prepared again (tests only)");

void fr_hook_stalled(void)
{
	atomic_inc(&prepare_retries);
}

/*
 * Let the tests run moves in many passes of a few units or pages, and
 * compare a bounded pass with an unbounded one in one boot.
 */
static unsigned long pass_budget;
module_param(pass_budget, ulong, 0600);
MODULE_PARM_DESC(pass_budget,
		 "units of work per pass, 0 for the built-in bound (tests only)");
static unsigned long move_pass_pages;
module_param(move_pass_pages, ulong, 0600);
MODULE_PARM_DESC(move_pass_pages,
		 "pages per FASTREMAP_IOC_MOVE pass, 0 for the built-in bound (tests only)");

/* *@param if the test set it, else @dflt. */
static unsigned long fr_bound(unsigned long *param, unsigned long dflt)
{
	unsigned long n = READ_ONCE(*param);

	return n ? n : dflt;
}

unsigned long fr_hook_pass_budget(unsigned long dflt)
{
	return fr_bound(&pass_budget, dflt);
}

unsigned long fr_hook_move_pass_pages(unsigned long dflt)
{
	return fr_bound(&move_pass_pages, dflt);
}

/* Counting and testing the per-entry mover alone, in one boot with the other. */
static bool copy_tables = true;
module_param(copy_tables, bool, 0600);
MODULE_PARM_DESC(copy_tables,
		 "0: move every PTE entry by entry, not whole tables by copying (tests and bench only)");

bool fr_hook_copy_tables(void)
{
	return READ_ONCE(copy_tables);
}

/*
 * What the copying mover moved; the parameter exists only where the copying
 * mover is compiled in (FR_COPY_TABLES), so that a test knows.
 */
#if FR_COPY_TABLES
static atomic_t tables_copied = ATOMIC_INIT(0);
module_param_cb(tables_copied, &fr_count_ops, &tables_copied, 0400);
MODULE_PARM_DESC(tables_copied,
		 "source PTE tables moved by copying (tests only)");

void fr_hook_tables_copied(unsigned int n)
{
	pr_info_once("copy_tables: a pass moved %u PTE tables by copying\n", n);
	atomic_add(n, &tables_copied);
}
#endif

/*
 * Where FASTREMAP_IOC_MOVE's time goes: nanoseconds per phase, summed
 * over calls, with the calls, moves and pages they made, and the same for
 * FASTREMAP_IOC_REMAP (r_*) (read as one line; any write resets it). The
 * bench's workloads 7 and 1p are profiled with it.
 */
static atomic64_t move_prof[FR_PROF_N];
static const char *const fr_prof_names[FR_PROF_N] = {
	[FR_PROF_VEC] = "vec",
	[FR_PROF_VMAS] = "vmas",
	[FR_PROF_PREPARE] = "prepare",
	[FR_PROF_LOCK] = "lock",
	[FR_PROF_MOVE] = "move",
	[FR_PROF_FLUSH] = "flush",
	[FR_PROF_UNLOCK] = "unlock",
	[FR_PROF_CALLS] = "calls",
	[FR_PROF_MOVES] = "moves",
	[FR_PROF_PAGES] = "pages",
	[FR_PROF_PASSES] = "passes",
	[FR_PROF_TOTAL] = "total",
	[FR_PROF_ENTRY] = "entry",
	[FR_PROF_MMLOCK] = "mmlock",
	[FR_PROF_NOTIFY] = "notify",
	[FR_PROF_EXIT] = "exit",
	[FR_PROF_R_CALLS] = "r_calls",
	[FR_PROF_R_ENTRY] = "r_entry",
	[FR_PROF_R_MMLOCK] = "r_mmlock",
	[FR_PROF_R_CHECKS] = "r_checks",
	[FR_PROF_R_TARGET] = "r_target",
	[FR_PROF_R_COPYVMA] = "r_copyvma",
	[FR_PROF_R_PREPARE] = "r_prepare",
	[FR_PROF_R_MOVE] = "r_move",
	[FR_PROF_R_FLUSH] = "r_flush",
	[FR_PROF_R_UNLOCK] = "r_unlock",
	[FR_PROF_R_UNMAP] = "r_unmap",
	[FR_PROF_R_TAIL] = "r_tail",
	[FR_PROF_R_EXIT] = "r_exit",
	[FR_PROF_R_TOTAL] = "r_total",
};

static int fr_prof_get(char *buf, const struct kernel_param *kp)
{
	int i, n = 0;

	for (i = 0; i < FR_PROF_N; i++)
		n += sysfs_emit_at(buf, n, "%s%s %lld", i ? " " : "",
				   fr_prof_names[i],
				   (long long)atomic64_read(&move_prof[i]));
	return n + sysfs_emit_at(buf, n, "\n");
}

static int fr_prof_reset(const char *val, const struct kernel_param *kp)
{
	int i;

	for (i = 0; i < FR_PROF_N; i++)
		atomic64_set(&move_prof[i], 0);
	return 0;
}

static const struct kernel_param_ops fr_prof_ops = {
	.set = fr_prof_reset,
	.get = fr_prof_get,
};
module_param_cb(move_prof, &fr_prof_ops, NULL, 0600);
MODULE_PARM_DESC(move_prof,
		 "FASTREMAP_IOC_MOVE's time per phase in ns, calls, moves, pages; a write resets (tests only)");

void fr_hook_prof_add(enum fr_prof_slot slot, u64 n)
{
	atomic64_add(n, &move_prof[slot]);
}

static atomic64_t fr_lock_pairs, fr_lock_swapped, fr_lock_descending;
static atomic_t fr_lock_probe = ATOMIC_INIT(0);

void fr_hook_lock_pair(const spinlock_t *first, const spinlock_t *second)
{
	if (first == second)
		return;
	atomic64_inc(&fr_lock_pairs);
	if (first > second)
		atomic64_inc(&fr_lock_descending);
}

bool fr_hook_lock_swap(void)
{
	if (atomic_xchg(&fr_lock_probe, 0))
		return false;
	atomic64_inc(&fr_lock_swapped);
	return true;
}

static int fr_lock_pairs_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "pairs %lld swapped %lld descending %lld\n",
			  (long long)atomic64_read(&fr_lock_pairs),
			  (long long)atomic64_read(&fr_lock_swapped),
			  (long long)atomic64_read(&fr_lock_descending));
}

static int fr_lock_pairs_set(const char *val, const struct kernel_param *kp)
{
	atomic64_set(&fr_lock_pairs, 0);
	atomic64_set(&fr_lock_swapped, 0);
	atomic64_set(&fr_lock_descending, 0);
	atomic_set(&fr_lock_probe, sysfs_streq(val, "probe"));
	return 0;
}

static const struct kernel_param_ops fr_lock_pairs_ops = {
	.set = fr_lock_pairs_set,
	.get = fr_lock_pairs_get,
};
module_param_cb(lock_pairs, &fr_lock_pairs_ops, NULL, 0600);
MODULE_PARM_DESC(lock_pairs,
		 "page-table lock pairs taken, swapped into address order, taken higher first; a write zeroes, \"probe\": the next pair handed higher first is taken so (tests only)");

/*
 * A test build's mmu notifier on the writer's mm: writing 1 to its
 * parameter registers it (an earlier registration goes, and @reset
 * clears what it gathered), 0 unregisters it, and so does the unload.
 */
struct fr_mn_hook {
	struct mmu_notifier mn;
	bool registered;
};

static DEFINE_MUTEX(fr_mn_lock);

/*
 * Unregistering is safe after the mm's exit too: the exit already took
 * the notifier off the mm, and this only drops the mm's count.
 */
static void fr_mn_unregister(struct fr_mn_hook *h)
{
	if (h->registered)
		mmu_notifier_unregister(&h->mn, h->mn.mm);
	h->registered = false;
}

/*
 * Always inlined, so that @reset is a direct call: a call through a
 * pointer would go through a retpoline thunk (check-ko refuses those).
 */
static __always_inline int fr_mn_set(struct fr_mn_hook *h, const char *val,
				     void (*reset)(void))
{
	int n, ret = kstrtoint(val, 0, &n);

	if (ret || (n != 0 && n != 1))
		return -EINVAL;
	if (n && !current->mm)
		return -EINVAL;
	mutex_lock(&fr_mn_lock);
	fr_mn_unregister(h);
	reset();
	if (n) {
		ret = mmu_notifier_register(&h->mn, current->mm);
		h->registered = !ret;
	}
	mutex_unlock(&fr_mn_lock);
	return ret;
}

static void fr_mn_exit(struct fr_mn_hook *h)
{
	mutex_lock(&fr_mn_lock);
	fr_mn_unregister(h);
	mutex_unlock(&fr_mn_lock);
}

/*
 * record_invalidations: what a secondary MMU (KVM, VFIO, RDMA ODP, a GPU's
 * SVM) is told of the writer's mm. Writing 1 registers an mmu notifier on
 * the writer's mm that records each invalidate_range_start() and _end()
 * (an earlier registration and its records go); reading lists them in
 * order, "s START END EVENT" or "e START END EVENT" each, then "lost N"
 * for those past FR_REC_MAX; 0 unregisters.
 */
#define FR_REC_MAX	64

static struct {
	char kind;
	u8 event;
	unsigned long start, end;
} fr_rec[FR_REC_MAX];
static unsigned int fr_rec_n, fr_rec_lost;
static DEFINE_SPINLOCK(fr_rec_lock);

static void fr_rec_add(char kind, const struct mmu_notifier_range *range)
{
	spin_lock(&fr_rec_lock);
	if (fr_rec_n < FR_REC_MAX) {
		fr_rec[fr_rec_n].kind = kind;
		fr_rec[fr_rec_n].event = range->event;
		fr_rec[fr_rec_n].start = range->start;
		fr_rec[fr_rec_n].end = range->end;
		fr_rec_n++;
	} else {
		fr_rec_lost++;
	}
	spin_unlock(&fr_rec_lock);
}

static int fr_rec_start(struct mmu_notifier *mn,
			const struct mmu_notifier_range *range)
{
	fr_rec_add('s', range);
	return 0;
}

static void fr_rec_end(struct mmu_notifier *mn,
		       const struct mmu_notifier_range *range)
{
	fr_rec_add('e', range);
}

static const struct mmu_notifier_ops fr_rec_mn_ops = {
	.invalidate_range_start = fr_rec_start,
	.invalidate_range_end = fr_rec_end,
};

static void fr_rec_reset(void)
{
	spin_lock(&fr_rec_lock);
	fr_rec_n = 0;
	fr_rec_lost = 0;
	spin_unlock(&fr_rec_lock);
}

static struct fr_mn_hook fr_rec_hook = {
	.mn.ops = &fr_rec_mn_ops,
};

static int fr_set_record(const char *val, const struct kernel_param *kp)
{
	return fr_mn_set(&fr_rec_hook, val, fr_rec_reset);
}

static int fr_get_record(char *buf, const struct kernel_param *kp)
{
	unsigned int i;
	int n = 0;

	spin_lock(&fr_rec_lock);
	for (i = 0; i < fr_rec_n; i++)
		n += sysfs_emit_at(buf, n, "%c %#lx %#lx %u\n", fr_rec[i].kind,
				   fr_rec[i].start, fr_rec[i].end,
				   fr_rec[i].event);
	n += sysfs_emit_at(buf, n, "lost %u\n", fr_rec_lost);
	spin_unlock(&fr_rec_lock);
	return n;
}

static const struct kernel_param_ops fr_record_ops = {
	.set = fr_set_record,
	.get = fr_get_record,
};
module_param_cb(record_invalidations, &fr_record_ops, NULL, 0600);
MODULE_PARM_DESC(record_invalidations,
		 "1: record the mmu notifier invalidations of the writer's mm (read: the list), 0: stop (tests only)");

#if defined(FR_HAVE_MMU_NOTIFIER_ARCH_SECONDARY_TLBS)
/*
 * count_flushes: a TLB flush counter for one process, mremap(2)'s flushes
 * included, where no tracepoint counts them. Since 6.6 every user TLB
 * flush of an mm that has an mmu notifier (arm64's flush_tlb_range(),
 * flush_tlb_mm() and flush_tlb_page(), x86's flush_tlb_mm_range()) calls
 * the notifiers' arch_invalidate_secondary_tlbs() once: writing 1
 * registers a notifier on the writer's mm that counts those calls (and
 * zeroes the count), reading gives the count, 0 unregisters.
 */
static atomic_t fr_flush_count = ATOMIC_INIT(0);

static void fr_count_flush(struct mmu_notifier *mn, struct mm_struct *mm,
			   unsigned long start, unsigned long end)
{
	atomic_inc(&fr_flush_count);
}

static const struct mmu_notifier_ops fr_flush_mn_ops = {
	.arch_invalidate_secondary_tlbs = fr_count_flush,
};

static void fr_flush_reset(void)
{
	atomic_set(&fr_flush_count, 0);
}

static struct fr_mn_hook fr_flush_hook = {
	.mn.ops = &fr_flush_mn_ops,
};

static int fr_set_count_flushes(const char *val, const struct kernel_param *kp)
{
	return fr_mn_set(&fr_flush_hook, val, fr_flush_reset);
}

static const struct kernel_param_ops fr_count_flushes_ops = {
	.set = fr_set_count_flushes,
	.get = fr_param_get,
};
module_param_cb(count_flushes, &fr_count_flushes_ops, &fr_flush_count, 0600);
MODULE_PARM_DESC(count_flushes,
		 "1: count the TLB flushes of the writer's mm (read: the count), 0: stop (tests only)");

static void fr_flush_exit(void)
{
	fr_mn_exit(&fr_flush_hook);
}
#else
static void fr_flush_exit(void)
{
}
#endif

void fr_hooks_exit(void)
{
	fr_flush_exit();
	fr_mn_exit(&fr_rec_hook);
}
