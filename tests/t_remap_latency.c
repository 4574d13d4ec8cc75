// SPDX-License-Identifier: GPL-2.0
/*
 * How long a huge move keeps other processes waiting.
 *
 * The module holds the rmap write locks (the anon_vma root's rwsem, shared
 * by a whole fork tree, and the file's i_mmap_rwsem) while it moves a
 * pass, so every other process that needs them waits: fork and exit in
 * the same fork tree, and mmap or munmap of the same file anywhere. A pass
 * is bounded (FR_PASS_BUDGET in pgmove.c), so a 64 GiB misaligned move
 * must not stall them for long. Each scenario runs the same move through
 * mremap(2) and through the module, in the same boot, while a process on
 * the other CPU loops over the waiting operation, and a thread pinned to
 * the mover's CPU sleeps 1 ms at a time (the move must yield the CPU:
 * cond_resched() between extents).
 *
 * The regions are sparse (one page per PMD) so that 128 GiB fits in the
 * guest; a misaligned move still visits every PTE slot of them.
 *
 * What is measured, so that a busy host (QEMU's vCPUs descheduled for
 * hundreds of milliseconds at a time) can neither fake nor hide it:
 * - the longest wait on a lock, from the scheduler's own statistics
 *   (block_max in /proc/thread-self/sched: time spent uninterruptible, as
 *   in down_write(); time the host took the vCPU away is not in it) of the
 *   probe and of each child it forks. Bound: LOCKWAIT_MS. Measured under
 *   QEMU TCG on a host busy with four other guests: a bounded pass made
 *   others wait 8-37 ms, mremap(2) 0-2 ms, and with the bound taken out of
 *   the module the same move made them wait 197 ms (fork tree) and 1820 ms
 *   (file); the walk that allocates the destination tables runs without
 *   the locks and is not in it. Each scenario also runs that control, the
 *   module with its bound lifted through the test-only pass_budget, and
 *   requires the wait to be seen there: the instrument is not blind.
 * - how many of its 1 ms sleeps the pinned thread completed during the
 *   move: at least one per WAKE_EVERY_MS of it (a mover that never yields
 *   leaves it none; a busy host leaves it a few percent of the ideal).
 * A host that takes a vCPU away while the mover holds a lock still
 * lengthens a wait (seen: 103 ms on 6.12 at load 14), and one that starves
 * the probe can hide the control's wait (seen: 24 ms). So a scenario runs
 * up to ATTEMPTS times and its verdict is that of the first run that meets
 * every check, or of the last run: a mover that holds the locks for the
 * whole move fails every run (its waits are the control's), while noise
 * rarely strikes three runs in a row.
 *
 * FASTREMAP_IOC_MOVE holds the anon_vma root's lock per pass too
 * (FR_MOVE_PASS_PAGES in move.c): a last scenario makes the fork tree
 * wait on a batch over a sparse heap of half the size, with the same
 * bound, the same pinned thread, and its control, the pass bound lifted
 * through the test-only move_pass_pages. (With a quarter, 16,384 pages,
 * the control's wait was 80-117 ms against the 100 ms it must reach, and
 * a loaded arm64 6.1 guest missed it three runs in a row.)
 *
 * The mremap(2) run is the reference the figures are read against; it
 * checks nothing of the module's. --no-mremap leaves it out (make check's
 * arm64 lane, where mremap(2)'s 65,536 flushes make it 11-17 s of each
 * scenario; tests/harness/run.sh), every check of the module unchanged.
 *
 * Usage: t_remap_latency [GiB] [--no-mremap]
 * (GiB: the size of the move; by default 128 scaled by GEOM)
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/wait.h>
#include "tlib.h"

#define LOCKWAIT_MS	100.0	/* the bound on the longest lock wait */
#define ATTEMPTS	3	/* runs of a scenario before its verdict */
#define WAKE_EVERY_MS	100.0	/* the pinned thread: a sleep per this much move */
#define SCHEDSTATS	"/proc/sys/kernel/sched_schedstats"
#define BUDGET		T_PARAMS "pass_budget"
#define MOVE_PASS	T_PARAMS "move_pass_pages"
#define CHUNK		PMD_SZ

/*
 * Sizes are given for 4 KiB pages and scaled by the page size (GEOM), so
 * that a move visits as many PTE slots, and a batch moves as many pages, on
 * every page size: the unbounded controls then hold the locks as long as
 * on 4 KiB pages. A batch's pages are MOVE_STEP apart (a PMD on 4 KiB
 * pages; with one page per 32 MiB PMD, 16 KiB pages gave the batch a
 * quarter of the pages, and its control no wait worth measuring).
 */
#define GEOM		(PG / 4096)
#define MOVE_STEP	(SZ_2M * GEOM)

static size_t len;
static int fd = -1;

/* Shared between the mover and the probe process. */
struct probe {
	volatile int phase;	/* 0 before the move, 1 during, 2 after */
	volatile int ready;
	volatile long iters[3];
	volatile double worst_ms[3];
	volatile double block_ms;	/* longest uninterruptible wait in phase 1 */
};

/* This task's block_max from /proc/self/sched, in ms; -1 if none. */
static double block_max_ms(void)
{
	char buf[8192], *p;
	int f = open("/proc/thread-self/sched", O_RDONLY | O_CLOEXEC);
	ssize_t n = f < 0 ? -1 : read(f, buf, sizeof(buf) - 1);

	if (f >= 0)
		close(f);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strstr(buf, "block_max");
	p = p ? strchr(p, ':') : NULL;
	return p ? strtod(p + 1, NULL) : -1;
}

static double now_ms(void)
{
	return t_now() * 1e3;
}

/*
 * The probe's operation: fork and exit, or map and unmap a page of @memfd.
 * In the fork tree both sides wait: fork() in the probe (anon_vma_fork())
 * and the child's unmap of its page of the region (unlink_anon_vmas(),
 * which exit would do), each counted in its own task's statistics.
 */
static void probe_loop(struct probe *pr, int memfd, char *page)
{
	int last = 0;

	t_pin_cpu(1);
	pr->ready = 1;
	while (pr->phase < 2) {
		int ph = pr->phase;
		double t0 = now_ms(), dt;

		/* Writing 0 resets this task's scheduler statistics. */
		if (ph == 1 && last == 0)
			t_write_str("/proc/thread-self/sched", "0");
		last = ph;

		if (memfd < 0) {
			pid_t pid = fork();

			if (pid == 0) {
				double b;

				munmap(page, PG);
				b = block_max_ms();
				if (ph == 1 && b > pr->block_ms)
					pr->block_ms = b;
				_exit(0);
			}
			waitpid(pid, NULL, 0);
		} else {
			void *p = mmap(NULL, PG, PROT_READ, MAP_SHARED, memfd, 0);

			if (p != MAP_FAILED)
				munmap(p, PG);
		}
		dt = now_ms() - t0;
		pr->iters[ph]++;
		if (dt > pr->worst_ms[ph])
			pr->worst_ms[ph] = dt;
		if (ph == 1) {
			double b = block_max_ms();

			if (b > pr->block_ms)
				pr->block_ms = b;
		}
	}
}

/* A thread on the mover's CPU: how late do its 1 ms sleeps wake? */
static volatile int wake_phase;	/* as struct probe's phase; 3: stop */
static double wake_worst_ms;
static long wake_count;

static void *waker(void *arg)
{
	(void)arg;
	t_pin_cpu(0);
	while (wake_phase < 3) {
		int ph = wake_phase;
		double t0 = now_ms(), late;

		usleep(1000);
		late = now_ms() - t0 - 1.0;
		if (ph == 1 && late > wake_worst_ms)
			wake_worst_ms = late;
		wake_count += ph == 1;
	}
	return NULL;
}

/* A region of @len bytes, a page past a PMD boundary, one page per chunk touched. */
static char *make_region(struct t_area *a, int memfd)
{
	char *p = t_pick(len + PG, PMD_SZ, a);

	if (!p)
		return NULL;
	p += PG;
	if (mmap(p, len, PROT_READ | PROT_WRITE,
		 (memfd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED) |
		 MAP_FIXED | MAP_NORESERVE, memfd, 0) == MAP_FAILED)
		return NULL;
	for (size_t off = 0; off < len; off += CHUNK)
		*(volatile uint64_t *)(p + off) = off ^ 0xfeed;
	return p;
}

static long check_region(const char *p)
{
	for (size_t off = 0; off < len; off += CHUNK)
		if (*(const volatile uint64_t *)(p + off) != (off ^ 0xfeed))
			return off;
	return -1;
}

struct result {
	double move_ms, worst_ms, base_ms, block_ms, wake_ms;
	long iters, wakes;
	int ok;
};

/*
 * The measured window around one move: the probe's baseline, then the
 * pinned thread and the probe's phase 1 from here to window_end().
 */
static void window_begin(struct probe *pr, pthread_t *wt)
{
	while (!pr->ready)
		usleep(1000);
	usleep(200 * 1000);	/* the baseline */
	wake_phase = 0;
	wake_worst_ms = 0;
	wake_count = 0;
	pthread_create(wt, NULL, waker, NULL);
	usleep(20 * 1000);
	pr->phase = 1;
	wake_phase = 1;
}

/* Ends the window (an iteration blocked by the move ends first) into @res. */
static void window_end(struct probe *pr, pthread_t wt, pid_t pid, struct result *res)
{
	wake_phase = 2;
	usleep(20 * 1000);
	pr->phase = 2;
	wake_phase = 3;
	pthread_join(wt, NULL);
	waitpid(pid, NULL, 0);
	res->worst_ms = pr->worst_ms[1];
	res->base_ms = pr->worst_ms[0];
	res->block_ms = pr->block_ms;
	res->iters = pr->iters[1];
	res->wake_ms = wake_worst_ms;
	res->wakes = wake_count;
}

/* A run's start: *res cleared, the probe's shared page, the mover on CPU 0. */
static struct probe *run_begin(struct result *res)
{
	struct probe *pr;

	memset(res, 0, sizeof(*res));
	pr = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (pr == MAP_FAILED)
		return NULL;
	t_pin_cpu(0);
	return pr;
}

/*
 * One run: @shared picks the scenario, @use_module the mover (0 mremap(2),
 * 1 the module, 2 the module with its pass bound lifted). The probe
 * is a child of this process, so for the anonymous scenario it belongs to
 * the region's fork tree (and keeps one page of it, hence its anon_vma).
 */
static void run(int shared, int use_module, struct result *res)
{
	struct t_area sa, da;
	struct probe *pr;
	pthread_t wt;
	char *src, *dst, *p;
	int memfd = -1;
	pid_t pid;
	double t0;

	pr = run_begin(res);
	if (!pr)
		return;
	if (shared) {
		memfd = memfd_create("fr_latency", 0);
		if (memfd < 0 || ftruncate(memfd, len))
			return;
	}
	src = make_region(&sa, memfd);
	dst = t_pick(len, PMD_SZ, &da);
	if (!src || !dst)
		goto out;
	pid = fork();
	if (pid == 0) {
		/* Keep one page of the region: the anon_vma stays shared. */
		munmap(src + PG, len - PG);
		probe_loop(pr, memfd, src);
		_exit(0);
	}
	window_begin(pr, &wt);
	t0 = now_ms();
	if (use_module == 2 && t_write_str(BUDGET, "18446744073709551615"))
		p = NULL;	/* no test hook: the control cannot run */
	else if (use_module)
		p = t_remap(fd, src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst, NULL);
	else
		p = t_mremap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	res->move_ms = now_ms() - t0;
	if (use_module == 2)
		t_write_str(BUDGET, "0");
	window_end(pr, wt, pid, res);
	res->ok = p == dst && check_region(dst) < 0;
out:
	t_release(&sa);
	t_release(&da);
	if (memfd >= 0)
		close(memfd);
	munmap(pr, PG);
}

/*
 * The same for FASTREMAP_IOC_MOVE: one batch over a sparse heap of
 * @len / 2 bytes with holes allowed, whose passes hold the heap's
 * anon_vma root lock (MOVE_PASS in move.c bounds them); @use_module 2
 * lifts the bound (the test-only move_pass_pages). The probe keeps a page
 * of the heap outside the batch (a page it shares would stop the batch
 * with EBUSY).
 */
static void run_move(int use_module, struct result *res)
{
	struct probe *pr = run_begin(res);
	size_t mlen = len / 2;
	struct fastremap_move_vec v;
	struct fastremap_move mres = { 0 };
	struct t_area ha;
	char *heap, *src, *dst;
	pthread_t wt;
	int r = -1;
	pid_t pid;
	double t0;

	if (!pr)
		return;
	heap = t_map_aligned(2 * mlen + PMD_SZ, PMD_SZ, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, &ha);
	if (!heap)
		goto unmap;
	src = heap + PMD_SZ;
	dst = src + mlen;
	*(volatile char *)heap = 1;
	for (size_t off = 0; off < mlen; off += MOVE_STEP)
		*(volatile uint64_t *)(src + off) = off ^ 0xfeed;
	pid = fork();
	if (pid == 0) {
		munmap(heap + PG, 2 * mlen + PMD_SZ - PG);
		probe_loop(pr, -1, heap);
		_exit(0);
	}
	while (!pr->ready)
		usleep(1000);
	/*
	 * fork(2) left every page shared until written: each written again
	 * is this process's alone (the child has unmapped its copies).
	 */
	for (size_t off = 0; off < mlen; off += MOVE_STEP)
		*(volatile uint64_t *)(src + off) = off ^ 0xfeed;
	window_begin(pr, &wt);
	v = (struct fastremap_move_vec){ (uintptr_t)src, (uintptr_t)dst, mlen };
	t0 = now_ms();
	if (use_module != 2 || !t_write_str(MOVE_PASS, "1099511627776"))
		r = t_move(fd, &v, 1, FASTREMAP_MOVE_ALLOW_HOLES, &mres);
	res->move_ms = now_ms() - t0;
	if (use_module == 2)
		t_write_str(MOVE_PASS, "0");
	window_end(pr, wt, pid, res);
	res->ok = r == 0 && mres.done == 1;
	if (!res->ok)
		tap_diag("  the batch: %s, done %llu, %llu PTEs", r ? strerror(errno) : "ok",
			 (unsigned long long)mres.done, (unsigned long long)mres.moved_pte);
	for (size_t off = 0; res->ok && off < mlen; off += MOVE_STEP)
		res->ok = *(volatile uint64_t *)(dst + off) == (off ^ 0xfeed);
	t_release(&ha);
unmap:
	munmap(pr, PG);
}

/* One scenario's verdict, from its last run (see the top of this file). */
static void report(const char *what, int attempt, int with_ref, const char *ref,
		   const struct result *m, const struct result *f, const struct result *u)
{
	if (with_ref)
		tap_diag("  %s:  move %.0f ms; longest lock wait %.1f ms; worst operation %.1f ms of %ld (before the move %.1f ms); mover's CPU: %ld sleeps, worst %.1f ms late",
			 ref, m->move_ms, m->block_ms, m->worst_ms, m->iters, m->base_ms,
			 m->wakes, m->wake_ms);
	else
		tap_diag("  %s:  not run", ref);
	tap_diag("  fastremap:  move %.0f ms; longest lock wait %.1f ms; worst operation %.1f ms of %ld (before the move %.1f ms); mover's CPU: %ld sleeps, worst %.1f ms late",
		 f->move_ms, f->block_ms, f->worst_ms, f->iters, f->base_ms, f->wakes, f->wake_ms);
	tap_diag("  control, the module without its pass bound (test-only parameter): move %.0f ms; longest lock wait %.1f ms",
		 u->move_ms, u->block_ms);
	tap_ok(u->ok && u->block_ms >= LOCKWAIT_MS,
	       "%s: control: without the pass bound the wait is seen (%.1f ms >= %.0f ms; run %d)",
	       what, u->block_ms, LOCKWAIT_MS, attempt);
	tap_ok(m->ok && f->ok, "%s: %s succeeded, data intact", what,
	       with_ref ? "both moves" : "the module's move");
	tap_ok(f->iters >= 3, "%s: the probe ran during the move (%ld times)", what, f->iters);
	tap_ok(f->block_ms >= 0 && f->block_ms < LOCKWAIT_MS,
	       "%s: longest lock wait %.1f ms < %.0f ms (move %.0f ms)",
	       what, f->block_ms, LOCKWAIT_MS, f->move_ms);
	tap_ok(f->wakes >= (long)(f->move_ms / WAKE_EVERY_MS),
	       "%s: a thread on the mover's CPU ran during the move (%ld 1 ms sleeps in %.0f ms)",
	       what, f->wakes, f->move_ms);
}

/* Whether a run of a scenario meets every check. */
static int passed(const struct result *m, const struct result *f, const struct result *u)
{
	return u->ok && u->block_ms >= LOCKWAIT_MS && m->ok && f->ok && f->iters >= 3 &&
	       f->block_ms >= 0 && f->block_ms < LOCKWAIT_MS &&
	       f->wakes >= (long)(f->move_ms / WAKE_EVERY_MS);
}

int main(int argc, char **argv)
{
	static const char *const what[] = {
		"fork+exit in the same fork tree (anon_vma root)",
		"mmap+munmap of a page of the same file (i_mmap_rwsem)",
	};
	struct result m, f, u;
	char was[8] = "0";
	int with_mremap = 1;

	len = 128 * SZ_1G * GEOM;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-mremap"))
			with_mremap = 0;
		else
			len = strtoul(argv[i], NULL, 0) * SZ_1G;
	}
	fd = t_open();
	if (!tap_ok(fd >= 0, "open %s", FASTREMAP_DEVICE))
		return tap_done();
	t_read_str(SCHEDSTATS, was, sizeof(was));
	if (!tap_ok(t_write_str(SCHEDSTATS, "1") == 0 && block_max_ms() >= 0,
		    "scheduler statistics on (block_max in /proc/thread-self/sched)"))
		return tap_done();
	for (int shared = 0; shared < 2; shared++) {
		int attempt;

		for (attempt = 1; attempt <= ATTEMPTS; attempt++) {
			if (with_mremap)
				run(shared, 0, &m);
			else
				m = (struct result){ .ok = 1, .move_ms = -1, .block_ms = -1 };
			run(shared, 1, &f);
			run(shared, 2, &u);
			tap_diag("%s during a %zu GiB misaligned move (run %d of at most %d):",
				 what[shared], len / SZ_1G, attempt, ATTEMPTS);
			if (with_mremap)
				tap_diag("  mremap(2):  move %.0f ms; longest lock wait %.1f ms; fastremap: %.1f ms; control: %.1f ms",
					 m.move_ms, m.block_ms, f.block_ms, u.block_ms);
			else
				tap_diag("  longest lock wait: fastremap: %.1f ms; control: %.1f ms",
					 f.block_ms, u.block_ms);
			if (passed(&m, &f, &u))
				break;
		}
		if (attempt > ATTEMPTS)
			attempt = ATTEMPTS;
		if (with_mremap)
			printf("# FR-STATS lockwait_%s_mremap_ms=%.0f\n", shared ? "file" : "fork",
			       m.block_ms);
		printf("# FR-STATS lockwait_%s_fastremap_ms=%.0f lockwait_%s_unbounded_ms=%.0f\n",
		       shared ? "file" : "fork", f.block_ms, shared ? "file" : "fork", u.block_ms);
		report(what[shared], attempt, with_mremap, "mremap(2)", &m, &f, &u);
	}
	/* FASTREMAP_IOC_MOVE: no reference run (UFFDIO_MOVE holds no such lock). */
	if (t_move_supported(fd)) {
		const char *w = "fork+exit in the same fork tree during a FASTREMAP_IOC_MOVE batch";
		int attempt;

		m = (struct result){ .ok = 1, .move_ms = -1, .block_ms = -1 };
		for (attempt = 1; attempt <= ATTEMPTS; attempt++) {
			run_move(1, &f);
			run_move(2, &u);
			tap_diag("%s of a %zu GiB sparse heap (run %d of at most %d): longest lock wait: fastremap: %.1f ms; control: %.1f ms",
				 w, len / 2 / SZ_1G, attempt, ATTEMPTS, f.block_ms, u.block_ms);
			if (passed(&m, &f, &u))
				break;
		}
		if (attempt > ATTEMPTS)
			attempt = ATTEMPTS;
		printf("# FR-STATS lockwait_move_fastremap_ms=%.0f lockwait_move_unbounded_ms=%.0f\n",
		       f.block_ms, u.block_ms);
		report(w, attempt, 0, "reference", &m, &f, &u);
	}
	t_write_str(SCHEDSTATS, was);
	return tap_done();
}
