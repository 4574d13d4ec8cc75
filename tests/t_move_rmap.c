// SPDX-License-Identifier: GPL-2.0
/*
 * An rmap walker must not act on a moved page before the batch's flush.
 *
 * FASTREMAP_IOC_MOVE flushes once per pass, after every entry of the pass
 * has moved. Until then another CPU may still write a moved page through
 * a stale TLB entry for its source. Faults, GUP and everything else that
 * walks page tables are kept out by mmap_lock; what keeps out the walkers
 * that reach a page through its folio (reclaim, migration, compaction,
 * memory failure) is the anon_vma root lock, held for write from the
 * first moved entry until after the flush. Were it not held, a migration
 * could copy a moved page while the stale entry still writes the old
 * copy: its own flush covers the page's new address only.
 *
 * Soft offlining (sysfs soft_offline_page, a physical address) migrates
 * one page from outside the process, without its mmap_lock, through
 * try_to_migrate(), and waits for nothing else: it is that walker, made
 * deterministic. Each round:
 * - a prober thread on CPU 1 keeps incrementing a counter in the first
 *   page of the source, so its TLB holds a writable entry for it; each
 *   time it reads back first the page's tag and what it wrote last, so
 *   that the first access that does not go through that page (after the
 *   flush: the source is an empty part of the heap again) is seen, with
 *   the last value written, also where that access was the write (7.2
 *   showed it once in about twenty rounds: the write faulted in a fresh
 *   page, which then read back the prober's own value);
 * - the main thread on CPU 0 moves the source with one call, which the
 *   module's test-only hold_before_flush parameter stops after its
 *   entries moved, before the flush, with every lock of the pass held;
 * - during the hold a helper thread soft-offlines the page, and another
 *   releases the hold as soon as the offline has returned, or after
 *   HOLD_WAIT seconds.
 * The offline must not complete during the hold (the walker waits for the
 * batch), it must complete after it (the page is at a new physical
 * address), and the moved page must hold the last value the prober wrote
 * before the flush: on hardware, a migration during the hold loses the
 * writes made after its copy. (Under QEMU TCG the migration's one-page
 * flush was seen to drop the prober's entry for the source as well: with
 * the anon_vma lock planted away, the prober wrote nothing between the
 * offline's return and the release. There the order is what fails.)
 *
 * Every thread runs with its memory locked in (mlockall before the heaps
 * exist): a fault during the hold would wait for the mover's mmap_lock.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include "tlib.h"

#define ROUNDS		3
#define NPG		16		/* pages per move */
#define HOLD_WAIT	2.0		/* seconds the release waits for the offline */
#define CW		8		/* the prober's word in the page */
#define HOLD		T_PARAMS "hold_before_flush"
#define OFFLINE		"/sys/devices/system/memory/soft_offline_page"

enum { IDLE, RUN, QUIT };

static struct {
	volatile uint64_t *volatile word;
	atomic_int phase;
	atomic_long iters;
	atomic_int turned;	/* a read found something else */
	uint64_t last, seen;	/* the last value written; what was read */
	atomic_int wrong_cpu;
} pr;

static struct {
	atomic_int go;		/* the round the helpers are to serve, + 1 */
	char paddr[32];
	atomic_int saw_hold, started_held, o_done, o_err, during_hold;
	atomic_int released, r_done;
	double t_hold, t_offline, t_release;
} ctl;

static void *prober(void *arg)
{
	(void)arg;
	if (t_pin_cpu(1) || sched_getcpu() != 1)
		atomic_store(&pr.wrong_cpu, 1);
	for (;;) {
		int ph = atomic_load(&pr.phase);
		volatile uint64_t *w, *tag;
		uint64_t last, v, t;

		if (ph == QUIT)
			return NULL;
		if (ph != RUN || atomic_load(&pr.turned)) {
			usleep(100);
			continue;
		}
		w = pr.word;
		tag = w - CW;
		last = *w;
		while (atomic_load(&pr.phase) == RUN) {
			/*
			 * The page's tag first, then the word: a fresh page
			 * shows as a changed word, or, when the flush came
			 * between the read and the write (which then faulted in
			 * a fresh page holding only that write), as a zero tag
			 * beside the word just written. The moved page then
			 * holds the write before.
			 */
			t = *tag;
			v = *w;
			if (v != last || !t) {
				pr.seen = v != last ? v : 0;
				pr.last = v != last ? last : last - 1;
				atomic_store(&pr.turned, 1);
				break;
			}
			*w = ++last;
			atomic_fetch_add(&pr.iters, 1);
		}
	}
}

/* Waits (up to 10 s) for round @r's call to reach the hold. */
static int wait_hold(int r)
{
	while (atomic_load(&ctl.go) != r + 1) {
		/* The run ended, or round @r never started its call. */
		if (atomic_load(&ctl.go) < 0 || atomic_load(&ctl.go) > r + 1)
			return 0;
		usleep(200);
	}
	for (int i = 0; i < 20000; i++) {
		if (t_param("hold_before_flush") == 2)
			return 1;
		usleep(500);
	}
	return 0;
}

/* Soft-offlines the page during the hold; says whether it completed during it. */
static void *offliner(void *arg)
{
	for (int r = 0; r < ROUNDS; r++) {
		int e;

		if (!wait_hold(r)) {
			atomic_store(&ctl.o_done, 1);
			continue;
		}
		atomic_store(&ctl.saw_hold, 1);
		atomic_store(&ctl.started_held, !atomic_load(&ctl.released));
		e = t_write_str(OFFLINE, ctl.paddr);
		atomic_store(&ctl.during_hold, !atomic_load(&ctl.released));
		ctl.t_offline = t_now();
		atomic_store(&ctl.o_err, -e);
		atomic_store(&ctl.o_done, 1);
	}
	return arg;
}

/* Releases the hold once the offline returned, or after HOLD_WAIT s. */
static void *releaser(void *arg)
{
	for (int r = 0; r < ROUNDS; r++) {
		if (wait_hold(r)) {
			ctl.t_hold = t_now();
			while (!atomic_load(&ctl.o_done) &&
			       t_now() < ctl.t_hold + HOLD_WAIT)
				usleep(500);
		}
		atomic_store(&ctl.released, 1);
		ctl.t_release = t_now();
		t_write_str(HOLD, "0");
		atomic_store(&ctl.r_done, 1);
	}
	return arg;
}

static int wait_flag(atomic_int *f, double secs)
{
	double end = t_now() + secs;

	while (!atomic_load(f))
		if (t_now() > end)
			return 0;
		else
			usleep(500);
	return 1;
}

static struct t_area areas[ROUNDS];

/* One round; returns the number of failed checks. */
static int round_once(int fd, int r)
{
	struct fastremap_move_vec v;
	struct fastremap_move out;
	uint64_t pm[NPG * 2], pfn, tags[NPG * 2], start;
	const char *why = "";
	char *heap, *src, *dst;
	int ret, e, fails = 0;
	long iters0, bad;

	heap = t_map_aligned(2 * NPG * PG, PMD_SZ, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &areas[r]);
	if (!tap_ok(heap != NULL, "round %d: map the heap", r))
		return 1;
	madvise(heap, 2 * NPG * PG, MADV_NOHUGEPAGE);
	src = heap;
	dst = heap + NPG * PG;
	memset(tags, 0, sizeof(tags));
	for (int i = 0; i < NPG; i++) {
		tags[i] = t_tag(r + 1, i);
		t_tag_fill(src + i * PG, tags[i]);
	}
	start = (0x524d4150ULL << 32) | ((uint64_t)r << 24);	/* "RMAP" */
	((volatile uint64_t *)src)[CW] = start;
	if (t_pagemap(src, 1, pm) || !(pm[0] & PM_PRESENT) || !PM_PFN(pm[0])) {
		tap_ok(0, "round %d: the source's first page and its frame number (pagemap %#llx)",
		       r, (unsigned long long)pm[0]);
		return 1;
	}
	pfn = PM_PFN(pm[0]);
	snprintf(ctl.paddr, sizeof(ctl.paddr), "%#llx", (unsigned long long)(pfn * PG));

	/* The prober's entry for the source is in CPU 1's TLB, writable and dirty. */
	atomic_store(&pr.turned, 0);
	pr.word = (volatile uint64_t *)src + CW;
	iters0 = atomic_load(&pr.iters);
	atomic_store(&pr.phase, RUN);
	for (int i = 0; i < 20000 && atomic_load(&pr.iters) < iters0 + 2000; i++)
		usleep(100);

	atomic_store(&ctl.o_done, 0);
	atomic_store(&ctl.r_done, 0);
	atomic_store(&ctl.released, 0);
	atomic_store(&ctl.saw_hold, 0);
	atomic_store(&ctl.during_hold, 0);
	atomic_store(&ctl.started_held, 0);
	if (!tap_ok(t_write_str(HOLD, "1") == 0, "round %d: arm hold_before_flush", r))
		return 1;
	atomic_store(&ctl.go, r + 1);

	v = (struct fastremap_move_vec){ (uintptr_t)src, (uintptr_t)dst, NPG * PG };
	ret = t_move(fd, &v, 1, 0, &out);
	e = errno;
	wait_flag(&ctl.r_done, 15);
	wait_flag(&ctl.o_done, 15);
	/* After the call the prober's next read goes to a fresh page. */
	wait_flag(&pr.turned, 10);
	atomic_store(&pr.phase, IDLE);
	t_write_str(HOLD, "0");

	fails += !tap_ok(ret == 0 && out.done == 1,
			 "round %d: the batch moved (%s, done %llu)", r,
			 ret ? t_errname(e) : "ret 0", (unsigned long long)out.done);
	fails += !tap_ok(atomic_load(&ctl.saw_hold) && atomic_load(&ctl.started_held),
			 "round %d: the call stopped before its flush, and the soft offline began there",
			 r);
	fails += !tap_ok(!atomic_load(&ctl.during_hold),
			 "round %d: the soft offline of a moved page did not complete before the batch's flush (it returned %.3f s after the hold began, the hold was released after %.3f s)",
			 r, ctl.t_offline - ctl.t_hold, ctl.t_release - ctl.t_hold);
	fails += !tap_ok(atomic_load(&ctl.o_err) == 0,
			 "round %d: the soft offline of %s succeeded (%s)", r, ctl.paddr,
			 t_errname(atomic_load(&ctl.o_err)));
	if (t_pagemap(heap, 2 * NPG, pm))
		memset(pm, 0, sizeof(pm));
	fails += !tap_ok((pm[NPG] & PM_PRESENT) && PM_PFN(pm[NPG]) != pfn,
			 "round %d: the moved page went to another frame (%#llx -> %#llx)", r,
			 (unsigned long long)pfn, (unsigned long long)PM_PFN(pm[NPG]));
	fails += !tap_ok(atomic_load(&pr.turned) && pr.seen == 0,
			 "round %d: after the call the prober's reads of the source found an empty page (read %#llx after %ld writes)",
			 r, (unsigned long long)pr.seen, atomic_load(&pr.iters) - iters0);
	fails += !tap_ok(((volatile uint64_t *)dst)[CW] == pr.last,
			 "round %d: the moved page holds the prober's last write before the flush (%#llx, last written %#llx: %lld writes lost)",
			 r, (unsigned long long)((volatile uint64_t *)dst)[CW],
			 (unsigned long long)pr.last,
			 (long long)(pr.last - ((volatile uint64_t *)dst)[CW]));

	/* The rest of the heap: moved, tags intact; the source's first page is the prober's. */
	for (int i = 0; i < NPG; i++) {
		tags[NPG + i] = tags[i];
		tags[i] = 0;
	}
	bad = t_mv_verify(heap + PG, 2 * NPG - 1, tags + 1, &why);
	fails += !tap_ok(bad < 0, "round %d: every other page is where the move put it%s%s",
			 r, bad < 0 ? "" : ": ", bad < 0 ? "" : why);
	return fails;
}

int main(int argc, char **argv)
{
	pthread_t tp, to, tr;
	int fd, fails = 0;

	fd = t_open_smp(&argc, argv, "an rmap walker waits for the batch's flush");
	if (fd < 0)
		return tap_done();
	if (!t_move_supported(fd))
		return tap_done();
	if (access(OFFLINE, W_OK)) {
		tap_skip_test("no " OFFLINE " (CONFIG_MEMORY_FAILURE)",
			      "an rmap walker waits for the batch's flush");
		return tap_done();
	}
	if (!tap_ok(t_param("hold_before_flush") >= 0, "test hook hold_before_flush present"))
		return tap_done();
	/* The vDSO's pages too: mlockall() does not populate special mappings. */
	if (t_now() < 0 || sched_getcpu() < 0)
		return tap_done();
	tap_diag("%d rounds: %d pages moved in one call, held before the flush; the first soft-offlined meanwhile",
		 ROUNDS, NPG);

	if (!tap_ok(t_pin_cpu(0) == 0 && pthread_create(&tp, NULL, prober, NULL) == 0 &&
		    pthread_create(&to, NULL, offliner, NULL) == 0 &&
		    pthread_create(&tr, NULL, releaser, NULL) == 0,
		    "the prober on CPU 1, two helpers and this thread on CPU 0"))
		return tap_done();
	/* Everything the threads touch during a hold is mapped from now on. */
	if (!tap_ok(mlockall(MCL_CURRENT) == 0, "mlockall(MCL_CURRENT) (%s)", strerror(errno)))
		return tap_done();

	for (int r = 0; r < ROUNDS; r++)
		fails += round_once(fd, r);
	atomic_store(&ctl.go, -1);
	atomic_store(&pr.phase, QUIT);
	pthread_join(tp, NULL);
	pthread_join(to, NULL);
	pthread_join(tr, NULL);
	munlockall();
	for (int r = 0; r < ROUNDS; r++)
		t_release(&areas[r]);
	tap_ok(!atomic_load(&pr.wrong_cpu), "the prober ran on CPU 1");
	tap_diag("%d checks failed", fails);
	return tap_done();
}
