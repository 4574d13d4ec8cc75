/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fr_bench's parts (bench/README.md): the contenders (contenders.c),
 * helpers and workload 4's writer thread (util.c), the workloads
 * (workloads.c, workloads_gc.c), the size sweep (sweep.c), the statistics
 * (stats.c) and the report (report.c), configured and run by fr_bench.c. The TLB flushes are
 * counted by the test library's counter (tests/lib/tlb.c). Declarations
 * only.
 */
#ifndef FR_BENCH_H
#define FR_BENCH_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before including bench.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include <linux/fastremap.h>
#include "fastremap.h"
#include "tlib.h"


#define KiB (1UL << 10)
#define MiB (1UL << 20)
#define GiB (1UL << 30)
/*
 * The running kernel's page, PMD and PUD are tlib.h's PG, PMD_SZ and
 * PUD_SZ (tests/lib/geom.c reads them before main()): 4 KiB, 2 MiB and
 * 1 GiB on x86-64 and arm64's 4 KiB kernels, 16 KiB, 32 MiB and 64 GiB on
 * arm64-16k. The workloads are laid out in these units.
 */
#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((a) - 1))
#define MAX_REPS 1000

/* The configuration (cfg_load(), fr_bench.c). */
struct bench_cfg {
	int reps;
	size_t size;		/* workloads 1-5, 8: a multiple of PMD_SZ */
	long loop_n;		/* workload 6 */
	long gc_moves;		/* workload 7 */
	size_t gc_arena;
	const char *workloads;
	int trace, trace_pids, trace_buf_kb, emulated, fresh, settle;
	int count;		/* markers for the counting plugin (count.c); 2: and kallsyms */
	int list;		/* print the moves of the selected workloads, run none */
	/* The size sweep (sweep.c) instead of the workloads. */
	int sweep, sweep_budget;	/* budget: seconds, after which larger sizes are skipped */
	size_t sweep_max, sweep_full;	/* the largest size; the largest populated whole */
	const char *sweep_levels;
};
extern struct bench_cfg cfg;

/* ---- contenders ---- */

enum { C_FR, C_MREMAP, C_UFFD, C_MEMCPY, NCONT };
extern const char *const cont_name[NCONT];

extern int frfd, uffd;
extern char fr_unavail[96], uffd_unavail[96];
extern struct fastremap_info fr_info;

/* What fastremap reported for the moves of one repetition. */
struct frstats {
	uint64_t pud, pmd, thp, pte, flushes, calls;
	uint64_t contpte, unfolded;	/* arm64's contiguous-PTE blocks */
	uint64_t module;	/* calls the module made (the others: routed to mremap(2)) */
};

/*
 * Workloads 2-5 and 9 must measure the module: a routed or declined call
 * is an error. Workload 1p calls it directly (FASTREMAP_NO_ROUTING), for
 * the module's own cost of a PUD-level move, which the library routes.
 */
extern int need_module, direct_module;

void open_contenders(void);
int uffd_register(void *addr, size_t len);
/*
 * One timed move of contender c, traced (tr_on()) and counted into *st;
 * its time in *us. 0 or -errno.
 */
int timed_move(int c, char *src, size_t len, char *dst, struct frstats *st, double *us);

/* ---- helpers (util.c) ---- */

double now_us(void);
extern unsigned char *mincore_vec;
void mincore_init(void);
int check_source_gone(int c, char *src, size_t len);
long count_vmas(uintptr_t lo, uintptr_t hi);
long anon_huge_kb(void);
int writer_create(int cpu);
void writer_go(void);
void writer_stop(void);
void writer_destroy(void);

/* ---- workloads ---- */

enum { K_MOVE, K_LOOP, K_GC, K_COPY, K_PINGPONG };

/*
 * An offset in the running kernel's units (geo_off()): half PMDs, arm64's
 * contiguous-PTE blocks (CONT_SZ) and pages, added up.
 */
struct geo_off {
	unsigned half_pmds, conts, pages;
};
size_t geo_off(struct geo_off o);

/* Which mTHP size a workload enables (workload.mthp, mthp_size()). */
enum { MTHP_NONE, MTHP_64K, MTHP_CONT };

struct workload {
	const char *id, *name, *desc;
	int kind;
	struct geo_off dst_off;	/* K_MOVE: destination offset from a PUD boundary */
	int thp, writer, mthp;
	unsigned conts;		/* bitmask of contenders */
	int batch;		/* K_GC: fastremap's moves per FASTREMAP_IOC_MOVE, or 0 */
	/*
	 * K_MOVE: the source starts this far past a PUD boundary, with a
	 * hole below it (and below the destination) back to the boundary.
	 */
	struct geo_off src_off;
	/*
	 * 1: fastremap is the library as programs call it, which may route
	 * the moves to mremap(2); 2: the module, called directly.
	 */
	int route;
	/*
	 * 1: the module's test-build parameter copy_tables is 0 for this
	 * workload (every PTE moved by the per-entry mover, not whole tables
	 * by copying), 1 again after it.
	 */
	int per_entry;
	/*
	 * K_MOVE: 1: every move's destination is a fresh address, FRESH_GAP
	 * past the source's region and never mapped before (no page tables
	 * above it), one per move; 0: the same destination every repetition.
	 */
	int fresh_dst;
	/*
	 * K_GC: 1: every live run is one whole PTE table's span (a PMD-aligned
	 * PMD_SZ), moved one page off into a to-space used before (populated,
	 * then MADV_DONTNEED: its page tables kept), as a collector's
	 * semispaces are in their steady state; one run per PMD_SZ of the
	 * arena, not FASTREMAP_BENCH_GC_MOVES.
	 */
	int tables;
};

#define B(c) (1u << (c))	/* a contender in workload.conts */
extern const struct workload workloads[];
extern const unsigned nwork;
#define NWORK nwork

struct cell {
	int n;
	double us[MAX_REPS];
	int rep[MAX_REPS];	/* the repetition each of us[] came from */
	char state[128];		/* "" while fine, else "error: ..." or "skip: ..." */
	struct t_tlb_counts fc;	/* the traced repetition's TLB flushes */
	int fc_valid;
	double ops;		/* moves in the traced repetition */
	struct frstats st;	/* fastremap's counters in the traced repetition */
	long vmas[MAX_REPS];	/* K_GC: VMAs after each repetition */
	int nvmas;
	long thp_kb, mthp_allocs;
};

/* One repetition's result. */
struct rep {
	double us;		/* per move */
	double ops;
	long vmas, thp_kb, mthp_allocs;
	struct frstats st;
};

/*
 * Per-move times of one repetition, one row per contender: paired
 * workloads report each contender's median move, which one stall of the
 * host (hundreds of milliseconds, landing on one contender's move) cannot
 * move as it moves a mean of 2000.
 */
struct move_times {
	double *t[NCONT];
	long n;
};

extern int traced_rep;
#define TRACED_LOOP_N 200
/* The mTHP size workload w enables (0: none), and a file of its sysfs directory. */
size_t mthp_size(const struct workload *w);
void mthp_path(char *buf, size_t n, const struct workload *w, const char *file);
/*
 * Why workload w cannot run on this kernel and machine (a "skip: ..."
 * reason into msg), or 0.
 */
int workload_unfit(const struct workload *w, char *msg, size_t msz);
void list_moves(void);

int fail(char *msg, size_t size, const char *what, int err);
void pool_free(void);
void settle_init(void);
int settle(int c);
int rep_move(const struct workload *w, int c, int rep, struct rep *out,
	     char *msg, size_t msz);
int move_times_init(struct move_times *mt, int ncs, long n);
double move_times_median(struct move_times *mt, int k);
void move_times_free(struct move_times *mt);
int rep_pingpong(const struct workload *w, const int *cs, int ncs, int rep,
		 struct rep *outs, int *bad, char *msg, size_t msz);
int rep_loop(const struct workload *w, const int *cs, int ncs, int rep,
	     struct rep *outs, int *bad, char *msg, size_t msz);
int run_rep(const struct workload *w, const int *cs, int ncs, int rep,
	    struct rep *outs, int *bad, char *msg, size_t msz);
int paired(const struct workload *w);

/*
 * ---- counting (count.c): markers for bench/plugin/fr_count.c ----
 * count_wi and count_rep name the repetition running; count_id(c, len)
 * sends the next region's id (before the clock starts), count_open() and
 * count_end() bracket the move itself; count_init() tells the plugin
 * where the IPI handlers are and starts the CPU 1 parker; count_rep_done()
 * records a repetition's moves and entries for the table print_count()
 * prints. count_parker() is fr_bench as that parker (FR_BENCH_PARKER=1).
 */
extern int count_wi, count_rep;
int count_parker(void);
void count_init(void);
void count_id(int c, size_t len);
void count_open(void);
void count_end(void);
void count_rep_reset(void);
void count_rep_done(int c, const struct rep *r);
void print_count(void);

/* ---- the size sweep (sweep.c) ---- */

/* Runs the sweep and prints its CSV block: 0, or 1 when a cell failed. */
int sweep_run(void);
/* FASTREMAP_BENCH_LIST=1 with the sweep: its moves, one line each. */
void sweep_list(void);

/* ---- statistics ---- */

int cmp_double(const void *a, const void *b);
int median_ci(const double *v, int n, double *med, double *lo, double *hi);

/* ---- reporting ---- */

extern double t_start;
extern struct cell (*cells)[NCONT];
void header(void);
/* The kernel's release, with the architecture where it does not name it. */
const char *bench_kernel(void);
#if defined(__aarch64__)
#define FR_BENCH_ARCH "arm64"
#else
#define FR_BENCH_ARCH "amd64"
#endif
int selected(const char *id);
void run_workload(const struct workload *w, int wi, int widx, int wtotal);
void print_csv(void);

#endif /* FR_BENCH_H */
