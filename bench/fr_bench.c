// SPDX-License-Identifier: GPL-2.0
/*
 * fr_bench: fastremap's FASTREMAP_IOC_REMAP against mremap(2) and
 * UFFDIO_MOVE, in one process, contenders interleaved round by round (move
 * by move in workloads 1p, 6, 6m and 7).
 *
 * Runs as root with the module loaded: inside the QEMU guest (bench/run.sh
 * builds it static and boots it), or natively (bench/run.sh --native).
 *
 * Workloads (see bench/README.md), in 4 KiB pages' sizes: each is laid
 * out in the running kernel's page, PMD and PUD (tlib.h), so that on
 * arm64-16k (16 KiB, 32 MiB, 64 GiB) "2 MiB-aligned" is PMD-aligned, "by
 * 4 KiB" by one page, "64 KiB" a contiguous block (2 MiB) and a PUD-level
 * move needs 64 GiB (skipped where it does not fit in memory);
 * FASTREMAP_BENCH_LIST=1 prints the moves and runs nothing:
 *   1 pud         1 GiB private anon, 4 KiB pages, src and dst 1 GiB-aligned
 *                 (one PUD entry: the library routes it to mremap(2))
 *   1p pud_pingpong  1 moved back and forth, the contenders taking turns
 *                 move by move, the module called directly
 *                 (FASTREMAP_NO_ROUTING): its fixed cost per call
 *   2 pmd         the same, dst 2 MiB-aligned only
 *   3 pte         the same, dst misaligned by 4 KiB
 *   3c pte_contpte 1 GiB of 64 KiB mTHP, dst misaligned by 64 KiB: arm64
 *                 (6.9+) maps it in contiguous blocks, which the module
 *                 moves whole (counted: contpte=); arm64 only, skipped
 *                 without mTHP
 *   4 pte_writer  3 while a second thread writes to its own memory on the
 *                 other CPU (remote shootdowns)
 *   5 thp         1 GiB of THP (MADV_HUGEPAGE), dst 2 MiB-aligned
 *   6 folio_loop  N x {mmap 1 MiB, memset, move by 1 MiB, munmap}
 *   6m            the same with 64 KiB mTHP, where the kernel has mTHP
 *   7 gc          M moves of random 4-64 KiB runs from a 1 GiB arena into
 *                 a to-space (compaction); per move, and VMAs afterwards
 *   7b1, 7b64, 7b1024
 *                 the same, fastremap's moves made with FASTREMAP_IOC_MOVE
 *                 in batches of 1, 64 and 1024 inside one heap mapping
 *                 (mremap(2) and UFFDIO_MOVE as in 7, one call per move)
 *   7t gc_tables  whole 2 MiB runs (one PTE table each) moved one page off
 *                 into a to-space used before, its page tables kept; one
 *                 FASTREMAP_IOC_MOVE call for the arena
 *   8 memcpy      a userspace copy of the bytes workload 3 moves: the
 *                 memory-bandwidth floor of a PTE-level move
 *   9 realign     1 GiB - 3 MiB, src and dst 3 MiB past a 1 GiB boundary
 *                 (congruent, 1 MiB into a PMD), holes below both: moved
 *                 from the PMD boundary below (mremap(2) does that since
 *                 6.7, the module everywhere)
 *
 * FASTREMAP_BENCH_SWEEP=1 runs the size sweep instead (sweep.c): a page
 * to 64 GiB at each level, the library, the module called directly and
 * mremap(2).
 *
 * Each repetition sets up a fresh, touched region outside the timed
 * section, times only the move(s), and verifies every moved page's tag
 * words outside the timed section; a failed verification turns the cell
 * into an error. One extra untimed repetition per cell and contender is
 * run with the tlb:tlb_flush tracepoint enabled around the moves only.
 *
 * Statistics: the median, and a distribution-free 95% confidence interval
 * of the median from order statistics: [x(k), x(n+1-k)] with k the largest
 * rank such that P(Binomial(n, 1/2) <= k-1) <= 0.025 (n = 10: x(2), x(9),
 * coverage 97.9%). Below 6 repetitions no such k exists: min and max.
 *
 * Configuration: compile-time defaults (-DFR_BENCH_REPS=...) that the
 * environment overrides (FASTREMAP_BENCH_REPS=...); see cfg_load().
 *
 * Output: "#" header and progress lines, then one CSV block between
 * FR-BENCH-CSV-BEGIN and FR-BENCH-CSV-END. Exit status 0 when every cell
 * ran or was skipped for a stated reason, 1 when a cell failed.
 */
#define _GNU_SOURCE
#include "bench.h"

struct bench_cfg cfg;

/* Compile-time defaults; FASTREMAP_BENCH_* in the environment override. */
#ifndef FR_BENCH_REPS
#define FR_BENCH_REPS 10
#endif
#ifndef FR_BENCH_SIZE_MB
#define FR_BENCH_SIZE_MB 1024
#endif
#ifndef FR_BENCH_LOOP_N
#define FR_BENCH_LOOP_N 2000
#endif
#ifndef FR_BENCH_GC_MOVES
#define FR_BENCH_GC_MOVES 2000
#endif
#ifndef FR_BENCH_GC_ARENA_MB
#define FR_BENCH_GC_ARENA_MB 1024
#endif
#ifndef FR_BENCH_WORKLOADS
#define FR_BENCH_WORKLOADS "1,1p,2,3,4,5,6,6m,7,7b1,7b64,7b1024,8,9"
#endif
#ifndef FR_BENCH_TRACE
#define FR_BENCH_TRACE 1
#endif
#ifndef FR_BENCH_TRACE_PIDS
#define FR_BENCH_TRACE_PIDS 0
#endif
#ifndef FR_BENCH_TRACE_BUF_KB
#define FR_BENCH_TRACE_BUF_KB 16384
#endif
#ifndef FR_BENCH_FRESH
#define FR_BENCH_FRESH 0
#endif
#ifndef FR_BENCH_EMULATED
#define FR_BENCH_EMULATED 0
#endif
#ifndef FR_BENCH_SETTLE
#define FR_BENCH_SETTLE 1
#endif
#ifndef FR_BENCH_COUNT
#define FR_BENCH_COUNT 0
#endif
#ifndef FR_BENCH_SWEEP
#define FR_BENCH_SWEEP 0
#endif
/* 64 GiB: the sweep's largest size. */
#ifndef FR_BENCH_SWEEP_MAX_MB
#define FR_BENCH_SWEEP_MAX_MB 65536
#endif
#ifndef FR_BENCH_SWEEP_FULL_MB
#define FR_BENCH_SWEEP_FULL_MB 1024
#endif
#ifndef FR_BENCH_SWEEP_BUDGET_S
#define FR_BENCH_SWEEP_BUDGET_S 1320
#endif
#ifndef FR_BENCH_SWEEP_LEVELS
#define FR_BENCH_SWEEP_LEVELS "pte,pmd,thp,pud"
#endif



static long env_long(const char *name, long def, long min, long max)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	v = strtol(s, &end, 0);
	if (*end || v < min || v > max) {
		fprintf(stderr, "fr_bench: %s=%s: want %ld..%ld\n", name, s, min, max);
		exit(2);
	}
	return v;
}

static void cfg_load(void)
{
	const char *w = getenv("FASTREMAP_BENCH_WORKLOADS");

	cfg.workloads = w && *w ? w : FR_BENCH_WORKLOADS;
	cfg.reps = env_long("FASTREMAP_BENCH_REPS", FR_BENCH_REPS, 1, MAX_REPS);
	cfg.size = env_long("FASTREMAP_BENCH_SIZE_MB", FR_BENCH_SIZE_MB, 2, 1 << 20) * MiB;
	cfg.size = ALIGN_UP(cfg.size, PMD_SZ);
	cfg.loop_n = env_long("FASTREMAP_BENCH_LOOP_N", FR_BENCH_LOOP_N, 1, 100000000);
	cfg.gc_moves = env_long("FASTREMAP_BENCH_GC_MOVES", FR_BENCH_GC_MOVES, 1, 1000000);
	cfg.gc_arena = env_long("FASTREMAP_BENCH_GC_ARENA_MB", FR_BENCH_GC_ARENA_MB, 2, 1 << 20) * MiB;
	cfg.trace = env_long("FASTREMAP_BENCH_TRACE", FR_BENCH_TRACE, 0, 1);
	cfg.trace_pids = env_long("FASTREMAP_BENCH_TRACE_PIDS", FR_BENCH_TRACE_PIDS, 0, 1);
	cfg.trace_buf_kb = env_long("FASTREMAP_BENCH_TRACE_BUF_KB", FR_BENCH_TRACE_BUF_KB, 0, 1 << 22);
	cfg.fresh = env_long("FASTREMAP_BENCH_FRESH", FR_BENCH_FRESH, 0, 1);
	cfg.emulated = env_long("FASTREMAP_BENCH_EMULATED", FR_BENCH_EMULATED, 0, 1);
	cfg.settle = env_long("FASTREMAP_BENCH_SETTLE", FR_BENCH_SETTLE, 0, 1);
	cfg.count = env_long("FASTREMAP_BENCH_COUNT", FR_BENCH_COUNT, 0, 2);
	cfg.list = env_long("FASTREMAP_BENCH_LIST", 0, 0, 1);
	cfg.sweep = env_long("FASTREMAP_BENCH_SWEEP", FR_BENCH_SWEEP, 0, 1);
	cfg.sweep_max = env_long("FASTREMAP_BENCH_SWEEP_MAX_MB", FR_BENCH_SWEEP_MAX_MB, 1,
				 1 << 20) * MiB;
	cfg.sweep_full = env_long("FASTREMAP_BENCH_SWEEP_FULL_MB", FR_BENCH_SWEEP_FULL_MB, 0,
				  1 << 20) * MiB;
	cfg.sweep_budget = env_long("FASTREMAP_BENCH_SWEEP_BUDGET_S", FR_BENCH_SWEEP_BUDGET_S, 1,
				    1000000);
	w = getenv("FASTREMAP_BENCH_SWEEP_LEVELS");
	cfg.sweep_levels = w && *w ? w : FR_BENCH_SWEEP_LEVELS;
	/* The GC arena is cut into one slot per move, each >= 16 pages. */
	if ((long)(cfg.gc_arena / (16 * PG)) < cfg.gc_moves) {
		fprintf(stderr, "fr_bench: %ld GC moves need an arena of %ld MiB at least\n",
			cfg.gc_moves, (long)(cfg.gc_moves * 16 * PG / MiB));
		exit(2);
	}
}

/*
 * The TLB flush counter (tests/lib/tlb.c) for the traced repetitions:
 * every event recorded counts, workload 4's writer thread's too, and
 * FASTREMAP_BENCH_TRACE_PIDS records this process's threads only. NULL,
 * or why there are no counts.
 */
static const char *trace_setup(void)
{
	const struct t_tlb_opts o = {
		.all_pids = 1, .pid_filter = cfg.trace_pids,
		.buf_kb = cfg.trace_buf_kb, .mount = 1, .arm_per_count = 1,
	};

	if (!cfg.trace)
		return "disabled";
	return t_tlb_trace_begin(&o) ? t_tlb_trace_why() : NULL;
}

int main(void)
{
	const char *why;
	unsigned w;
	int total = 0, idx = 0, bad = 0, c;

	if (getenv("FR_BENCH_PARKER"))
		return count_parker();
	setvbuf(stdout, NULL, _IOLBF, 0);
	cfg_load();
	if (cfg.list) {
		if (cfg.sweep)
			sweep_list();
		else
			list_moves();
		return 0;
	}
	cells = calloc(NWORK, sizeof(*cells));
	if (!cells)
		return 1;
	t_start = now_us();
	open_contenders();
	settle_init();
	mincore_init();
	/* The mover on CPU 0; workload 4's writer takes CPU 1. */
	t_pin_cpu(0);
	header();
	count_init();
	why = trace_setup();
#ifdef __aarch64__
	printf("# tlb flush counting: %s\n", why ? why : "arm64: kprobe events on the module's "
	       "flush and mremap(2)'s out-of-line movers, one extra untimed repetition per cell");
#else
	printf("# tlb flush counting: %s\n", why ? why : "tlb:tlb_flush tracepoint, one extra "
	       "untimed repetition per cell");
#endif
	if (cfg.sweep) {
		bad = sweep_run();
		t_tlb_trace_end();
		printf("# done in %.1f s%s\n", (now_us() - t_start) / 1e6,
		       bad ? ": some cells FAILED" : "");
		return bad;
	}
	for (w = 0; w < NWORK; w++)
		total += selected(workloads[w].id);
	for (w = 0; w < NWORK; w++) {
		if (!selected(workloads[w].id))
			continue;
		printf("# workload %s %s: %s\n", workloads[w].id, workloads[w].name,
		       workloads[w].desc);
		run_workload(&workloads[w], w, ++idx, total);
	}
	t_tlb_trace_end();
	print_csv();
	print_count();
	for (w = 0; w < NWORK; w++)
		for (c = 0; c < NCONT; c++)
			bad |= !strncmp(cells[w][c].state, "error", 5);
	printf("# done in %.1f s%s\n", (now_us() - t_start) / 1e6,
	       bad ? ": some cells FAILED" : "");
	return bad;
}

