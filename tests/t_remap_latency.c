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
 * the other CPU loops over the waiting operation and records its worst
 * latency, and a thread pinned to the mover's CPU records how late its
 * 1 ms sleeps wake up (the move must yield the CPU: cond_resched()).
 *
 * The regions are sparse (one page per 2 MiB) so that 64 GiB fits in the
 * guest; a misaligned move still visits every PTE slot of them.
 *
 * The bound: the worst wait must be under a quarter of the move's own
 * duration. An unbounded pass holds the locks for the whole move, so the
 * probe iteration caught by it waits about as long as the move (measured:
 * 0.9-1.0 of it); a bounded pass (about 15-30 ms under QEMU TCG, of a
 * move of 1-2 s) leaves waits of a few percent of it. A ratio, not a
 * number of milliseconds, so that an emulator slowed down by a busy host
 * slows both sides alike.
 * Usage: t_remap_latency [GiB]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/wait.h>
#include "remap_util.h"

#define BOUND_SHARE	4	/* worst wait < move duration / BOUND_SHARE */
#define CHUNK		SZ_2M

static size_t len = 64 * SZ_1G;
static int fd = -1;

/* Shared between the mover and the probe process. */
struct probe {
	volatile int phase;	/* 0 before the move, 1 during, 2 after */
	volatile int ready;
	volatile long iters[3];
	volatile double worst_ms[3];
};

static double now_ms(void)
{
	return fr_now() * 1e3;
}

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

/* The probe's operation: fork and exit, or map and unmap a page of @memfd. */
static void probe_loop(struct probe *pr, int memfd)
{
	pin(1);
	pr->ready = 1;
	while (pr->phase < 2) {
		int ph = pr->phase;
		double t0 = now_ms(), dt;

		if (memfd < 0) {
			pid_t pid = fork();

			if (pid == 0)
				_exit(0);
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
	}
}

/* A thread on the mover's CPU: how late do its 1 ms sleeps wake? */
static volatile int wake_stop;
static double wake_worst_ms;

static void *waker(void *arg)
{
	(void)arg;
	pin(0);
	while (!wake_stop) {
		double t0 = now_ms(), late;

		usleep(1000);
		late = now_ms() - t0 - 1.0;
		if (late > wake_worst_ms)
			wake_worst_ms = late;
	}
	return NULL;
}

/* A region of @len bytes, 4 KiB past a 2 MiB boundary, one page per chunk touched. */
static char *make_region(struct fr_area *a, int memfd)
{
	char *p = fr_pick(len + PG, SZ_2M, a);

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
	double move_ms, worst_ms, base_ms, wake_ms;
	long iters;
	int ok;
};

/*
 * One run: @shared picks the scenario, @use_module the mover. The probe
 * is a child of this process, so for the anonymous scenario it belongs to
 * the region's fork tree (and keeps one page of it, hence its anon_vma).
 */
static void run(int shared, int use_module, struct result *res)
{
	struct fr_area sa, da;
	struct probe *pr;
	pthread_t wt;
	char *src, *dst, *p;
	int memfd = -1;
	pid_t pid;
	double t0;

	memset(res, 0, sizeof(*res));
	pr = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (pr == MAP_FAILED)
		return;
	if (shared) {
		memfd = memfd_create("fr_latency", 0);
		if (memfd < 0 || ftruncate(memfd, len))
			return;
	}
	pin(0);
	src = make_region(&sa, memfd);
	dst = fr_pick(len, SZ_2M, &da);
	if (!src || !dst)
		goto out;
	pid = fork();
	if (pid == 0) {
		/* Keep one page of the region: the anon_vma stays shared. */
		munmap(src + PG, len - PG);
		probe_loop(pr, memfd);
		_exit(0);
	}
	while (!pr->ready)
		usleep(1000);
	usleep(200 * 1000);	/* the baseline */
	wake_stop = 0;
	wake_worst_ms = 0;
	pthread_create(&wt, NULL, waker, NULL);
	usleep(20 * 1000);
	pr->phase = 1;
	t0 = now_ms();
	if (use_module)
		p = fr_remap(fd, src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst, NULL);
	else
		p = sys_mremap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	res->move_ms = now_ms() - t0;
	usleep(20 * 1000);	/* an iteration blocked by the move ends */
	pr->phase = 2;
	wake_stop = 1;
	pthread_join(wt, NULL);
	waitpid(pid, NULL, 0);
	res->worst_ms = pr->worst_ms[1];
	res->base_ms = pr->worst_ms[0];
	res->iters = pr->iters[1];
	res->wake_ms = wake_worst_ms;
	res->ok = p == dst && check_region(dst) < 0;
out:
	fr_release(&sa);
	fr_release(&da);
	if (memfd >= 0)
		close(memfd);
	munmap(pr, PG);
}

int main(int argc, char **argv)
{
	static const char *const what[] = {
		"fork+exit in the same fork tree (anon_vma root)",
		"mmap+munmap of a page of the same file (i_mmap_rwsem)",
	};
	struct result m, f;

	if (argc > 1)
		len = strtoul(argv[1], NULL, 0) * SZ_1G;
	fd = fr_open();
	if (!tap_ok(fd >= 0, "open %s", FASTREMAP_DEVICE))
		return tap_done();
	for (int shared = 0; shared < 2; shared++) {
		run(shared, 0, &m);
		run(shared, 1, &f);
		tap_diag("%s during a %zu GiB misaligned move:", what[shared], len / SZ_1G);
		tap_diag("  mremap(2):  move %.0f ms, worst %.1f ms over %ld (baseline worst %.1f ms), co-pinned wake-up %.1f ms late",
			 m.move_ms, m.worst_ms, m.iters, m.base_ms, m.wake_ms);
		tap_diag("  fastremap:  move %.0f ms, worst %.1f ms over %ld (baseline worst %.1f ms), co-pinned wake-up %.1f ms late",
			 f.move_ms, f.worst_ms, f.iters, f.base_ms, f.wake_ms);
		printf("# FR-STATS latency_%s_mremap_ms=%.0f latency_%s_fastremap_ms=%.0f\n",
		       shared ? "file" : "fork", m.worst_ms, shared ? "file" : "fork", f.worst_ms);
		tap_ok(m.ok && f.ok, "%s: both moves succeeded, data intact", what[shared]);
		tap_ok(f.iters >= 3, "%s: the probe ran during the move (%ld times)",
		       what[shared], f.iters);
		tap_ok(f.worst_ms < f.move_ms / BOUND_SHARE,
		       "%s: worst latency %.1f ms < a quarter of the move's %.0f ms",
		       what[shared], f.worst_ms, f.move_ms);
		tap_ok(f.wake_ms < f.move_ms / BOUND_SHARE,
		       "%s: a thread on the mover's CPU woke at most %.1f ms late (< a quarter of the move)",
		       what[shared], f.wake_ms);
	}
	return tap_done();
}
