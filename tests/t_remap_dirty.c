// SPDX-License-Identifier: GPL-2.0
/*
 * No dirty bit may be lost by a move (issue 12, item 2).
 *
 * pgmove.c moves a source PTE table that lies wholly in the range by
 * copying its entries and detaching it before the flush; until the flush a
 * CPU may still write through the old entries, and the dirty bit the
 * hardware then sets lands in the old table, which the module must carry
 * over to the folio after the flush. A page whose dirty bit is lost looks
 * clean: MADV_FREE'd anonymous memory is then dropped by reclaim, and the
 * write is lost.
 *
 * Each round maps private anonymous memory (4 KiB pages), writes a tag to
 * every page, MADV_FREEs it (its entries become clean, its folios
 * lazily freeable), starts a writer thread that writes a new value into
 * every page in turn through the source addresses, and moves the region
 * PTE-misaligned (so every source table is copied whole) while the
 * writer runs; the writer stops at its first fault, when the source is
 * gone. Every write the writer saw complete went into a page the move
 * carried. MADV_PAGEOUT on the target then reclaims the region at once:
 * clean lazyfree pages are dropped (read back as zero), dirty ones stay.
 * Every page the writer wrote must hold its last value; every other page
 * its tag or zero. The same rounds run with mremap(2) as a control.
 *
 * The shared variant does the same with a memfd mapped MAP_SHARED: its
 * pages are read-faulted first (writable, clean entries; tmpfs needs no
 * write notification), the writer's stores set the dirty bits, and after
 * MADV_PAGEOUT a clean page leaves the page cache. The file is then read
 * back through the descriptor (pread), not through the mapping: every
 * page the writer wrote must hold its last value there.
 *
 * The test checks that it can see a loss: some clean pages must have been
 * dropped, and the writer must have written pages while the move ran.
 * Whether a free-running writer hits the window depends on the host's
 * scheduling, so one more round per variant makes it certain: the test
 * build's hold_before_detach parameter stops the move after it copied the
 * tables and before it detaches them, and the test writes every page
 * through the source addresses then (no fault: the old entries are still
 * present), before it lets the move go on.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include "remap_util.h"

#ifndef MADV_FREE
#define MADV_FREE	8
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT	21
#endif

#define REGION		(32 * SZ_1M)
#define PAGES		(REGION / PG)
#define ROUNDS		3	/* at least; more until the writer hit a move */
#define MAX_ROUNDS	24
#define TAG(i)		(0x7a67000000000000ULL | (uint64_t)(i))

static int fd = -1;
static int shared;	/* the memfd variant */

static struct {
	char *base;			/* the source, where the writer writes */
	uint64_t last[PAGES];		/* the writer's last completed write */
	atomic_long written;		/* completed writes */
	atomic_int ready, go, stop;
} w;

static __thread sigjmp_buf w_env;
static __thread volatile int w_armed;

static void w_segv(int sig)
{
	if (!w_armed) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	siglongjmp(w_env, 1);
}

/* Mover and writer on different CPUs, so that they run at the same time. */
static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *writer(void *arg)
{
	volatile uint64_t *p;
	uint64_t gen, v;
	size_t i;

	(void)arg;
	pin(1);
	if (sigsetjmp(w_env, 1))
		return NULL;	/* the source is gone: the move is done */
	w_armed = 1;
	atomic_store(&w.ready, 1);
	while (!atomic_load(&w.go))
		;
	for (gen = 1; !atomic_load(&w.stop); gen++) {
		for (i = 0; i < PAGES && !atomic_load(&w.stop); i++) {
			v = gen << 32 | i;
			p = (volatile uint64_t *)(w.base + i * PG) + 1;
			*p = v;
			w.last[i] = v;
			atomic_fetch_add(&w.written, 1);
		}
	}
	w_armed = 0;
	return NULL;
}

struct tally {
	long lost, corrupt, dropped, kept, during, flushes;
};

/* Resident pages of [p, p + len), by mincore(2); -1 on error. */
static long resident(const void *p, size_t len)
{
	static unsigned char vec[PAGES];
	long n = 0;

	if (mincore((void *)p, len, vec))
		return -1;
	for (size_t i = 0; i < len / PG; i++)
		n += vec[i] & 1;
	return n;
}

/* One round; returns 0, or -1 with *why set. */
static int round_once(int use_module, struct tally *t, const char **why)
{
	struct fastremap_remap r;
	struct fr_area a;
	char *src, *dst, *res;
	static uint64_t page[PG / 8];
	int mfd = -1;
	pthread_t th;
	long w0, w1, rss;
	size_t i;

	*why = "";
	if (!fr_reserve(2 * REGION + 3 * SZ_2M, &a)) {
		*why = "reserve";
		return -1;
	}
	src = (char *)FR_ALIGN_UP((uintptr_t)a.base, SZ_2M);
	/* 4 KiB off the source's alignment: every source table is whole. */
	dst = src + REGION + SZ_2M + PG;
	if (shared) {
		mfd = memfd_create("t_remap_dirty", MFD_CLOEXEC);
		if (mfd < 0 || ftruncate(mfd, REGION) ||
		    mmap(src, REGION, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, mfd, 0) == MAP_FAILED) {
			*why = "memfd";
			goto fail;
		}
		madvise(src, REGION, MADV_NOHUGEPAGE);
		/* Read faults: present, writable, clean entries. */
		for (i = 0; i < PAGES; i++)
			if (((volatile uint64_t *)(src + i * PG))[0])
				break;
	} else {
		if (mmap(src, REGION, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
			*why = "mmap";
			goto fail;
		}
		madvise(src, REGION, MADV_NOHUGEPAGE);
		for (i = 0; i < PAGES; i++)
			((uint64_t *)(src + i * PG))[0] = TAG(i);
		if (madvise(src, REGION, MADV_FREE)) {
			*why = "MADV_FREE";
			goto fail;
		}
	}
	memset(w.last, 0, sizeof(w.last));
	w.base = src;
	atomic_store(&w.written, 0);
	atomic_store(&w.ready, 0);
	atomic_store(&w.go, 0);
	atomic_store(&w.stop, 0);
	if (pthread_create(&th, NULL, writer, NULL)) {
		*why = "pthread_create";
		goto fail;
	}
	/*
	 * The writer spins on its CPU until now, and starts from the first
	 * page as the move starts: the mover soon overtakes it, and from
	 * then on every page it writes for the first time lies in a table
	 * already copied (the window), while most pages stay clean.
	 */
	while (!atomic_load(&w.ready))
		;
	w0 = atomic_load(&w.written);
	atomic_store(&w.go, 1);
	if (use_module)
		res = fr_remap(fd, src, REGION, REGION, MREMAP_MAYMOVE | MREMAP_FIXED,
			       dst, &r);
	else
		res = sys_mremap(src, REGION, REGION, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	w1 = atomic_load(&w.written);
	atomic_store(&w.stop, 1);
	pthread_join(th, NULL);
	if (res != dst) {
		*why = strerror(errno);
		goto fail;
	}
	t->during += w1 - w0;
	if (use_module && fr_counted(&r))
		t->flushes += r.tlb_flushes;
	/* Reclaim now: clean lazyfree pages go, dirty ones stay. */
	if (madvise(dst, REGION, MADV_PAGEOUT)) {
		*why = "MADV_PAGEOUT";
		goto fail;
	}
	if (shared) {
		/* Dropped clean pages are holes again; read the file itself. */
		rss = resident(dst, REGION);
		if (rss < 0) {
			*why = "mincore";
			goto fail;
		}
		t->dropped += PAGES - rss;
	}
	for (i = 0; i < PAGES; i++) {
		const uint64_t *p = (const uint64_t *)(dst + i * PG);

		if (shared) {
			if (pread(mfd, page, 16, i * PG) != 16) {
				*why = "pread";
				goto fail;
			}
			p = page;
		}

		if (w.last[i]) {
			if (p[1] != w.last[i]) {
				if (t->lost < 5)
					tap_diag("page %zu: wrote %#llx, reads %#llx %#llx",
						 i, (unsigned long long)w.last[i],
						 (unsigned long long)p[0],
						 (unsigned long long)p[1]);
				t->lost++;
			} else {
				t->kept++;
			}
		} else if (!p[0] && !p[1]) {
			t->dropped += !shared;
		} else if (shared || p[0] != TAG(i)) {
			t->corrupt++;
		}
	}
	fr_release(&a);
	close(mfd);
	return 0;
fail:
	fr_release(&a);
	if (mfd >= 0)
		close(mfd);
	return -1;
}

static void run(int use_module)
{
	char name[64];
	struct tally t = { 0 };
	const char *why;
	int k;

	snprintf(name, sizeof(name), "%s, %s", use_module ? "FASTREMAP_IOC_REMAP" : "mremap(2)",
		 shared ? "shared memfd" : "MADV_FREE'd anonymous");
	/* The writer may not run at all during a move on a busy host: retry. */
	for (k = 0; k < ROUNDS || (!t.during && k < MAX_ROUNDS); k++) {
		if (round_once(use_module, &t, &why)) {
			tap_ok(0, "%s: round %d: %s", name, k, why);
			return;
		}
	}
	tap_diag("%s: %d rounds of %zu MiB: %ld pages written and kept, %ld clean pages dropped, %ld writes while the move ran",
		 name, k, REGION / SZ_1M, t.kept, t.dropped, t.during);
	tap_ok(t.lost == 0 && t.corrupt == 0,
	       "%s: a writer during the move loses no write to reclaim (%ld lost, %ld corrupt)",
	       name, t.lost, t.corrupt);
	/* Else a lost dirty bit would go unseen. */
	tap_ok(t.dropped > 0, "%s: reclaim dropped clean pages (%ld): a lost dirty bit would show",
	       name, t.dropped);
	/* The window under test is the module's; mremap(2) is the control. */
	if (!use_module)
		return;
	tap_ok(t.during > 0, "%s: the writer wrote while the move ran (%ld writes in %d rounds)",
	       name, t.during, k);
	if (t.flushes)
		tap_ok(t.flushes == k, "%s: one TLB flush per move (%ld in %d)",
		       name, t.flushes, k);
}

#define HOLD	"/sys/module/fastremap/parameters/hold_before_detach"

static struct {
	char *src, *dst, *res;
	struct fastremap_remap r;
	int err;
} mv;

static void *mover(void *arg)
{
	(void)arg;
	mv.res = fr_remap(fd, mv.src, REGION, REGION, MREMAP_MAYMOVE | MREMAP_FIXED,
			  mv.dst, &mv.r);
	mv.err = errno;
	return NULL;
}

/*
 * The round with the move held in its window: every page is written for
 * the first time after its table was copied, before it is detached.
 * Nothing here may fault while the move holds mmap_lock: what it touches
 * is touched before.
 */
static void held_round(void)
{
	char name[64], buf[16];
	struct fr_area a;
	long lost = 0, rss = -1;
	int mfd = -1, waited;
	pthread_t th;
	size_t i;

	snprintf(name, sizeof(name), "held in the window, %s",
		 shared ? "shared memfd" : "MADV_FREE'd anonymous");
	if (fr_read_str(HOLD, buf, sizeof(buf)) || fr_write_str(HOLD, "0")) {
		tap_ok(0, "%s: the test build's hold_before_detach parameter", name);
		return;
	}
	if (!fr_reserve(2 * REGION + 3 * SZ_2M, &a)) {
		tap_ok(0, "%s: reserve", name);
		return;
	}
	mv.src = (char *)FR_ALIGN_UP((uintptr_t)a.base, SZ_2M);
	mv.dst = mv.src + REGION + SZ_2M + PG;
	if (shared) {
		mfd = memfd_create("t_remap_dirty", MFD_CLOEXEC);
		if (mfd < 0 || ftruncate(mfd, REGION) ||
		    mmap(mv.src, REGION, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			 mfd, 0) == MAP_FAILED)
			goto fail;
		madvise(mv.src, REGION, MADV_NOHUGEPAGE);
		for (i = 0; i < PAGES; i++)
			if (((volatile uint64_t *)(mv.src + i * PG))[0])
				break;
	} else {
		if (mmap(mv.src, REGION, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			goto fail;
		madvise(mv.src, REGION, MADV_NOHUGEPAGE);
		for (i = 0; i < PAGES; i++)
			((uint64_t *)(mv.src + i * PG))[0] = TAG(i);
		if (madvise(mv.src, REGION, MADV_FREE))
			goto fail;
	}
	memset(w.last, 0, sizeof(w.last));
	if (fr_write_str(HOLD, "1") || pthread_create(&th, NULL, mover, NULL))
		goto fail;
	for (waited = 0; waited < 2000; waited++) {
		if (!fr_read_str(HOLD, buf, sizeof(buf)) && !strcmp(buf, "2"))
			break;
		usleep(5000);
	}
	if (waited < 2000) {
		for (i = 0; i < PAGES; i++) {
			w.last[i] = 0x5a00000000000000ULL | i;
			((volatile uint64_t *)(mv.src + i * PG))[1] = w.last[i];
		}
	} else {
		memset(w.last, 0, sizeof(w.last));
	}
	fr_write_str(HOLD, "0");
	pthread_join(th, NULL);
	if (!tap_ok(waited < 2000 && mv.res == mv.dst,
		    "%s: the move stopped at the hold and finished (%s)", name,
		    mv.res == mv.dst ? "moved" : strerror(mv.err)))
		goto fail;
	if (madvise(mv.dst, REGION, MADV_PAGEOUT))
		goto fail;
	if (shared)
		rss = resident(mv.dst, REGION);
	for (i = 0; i < PAGES; i++) {
		uint64_t v = ((const uint64_t *)(mv.dst + i * PG))[1];

		if (shared && pread(mfd, &v, 8, i * PG + 8) != 8)
			goto fail;
		lost += v != w.last[i];
	}
	tap_ok(lost == 0 && mv.r.moved_pte == PAGES,
	       "%s: all %zu pages written through the old entries in the window kept (%ld lost; %llu PTEs moved)",
	       name, (size_t)PAGES, lost, (unsigned long long)mv.r.moved_pte);
	if (shared)
		tap_diag("%s: %ld of %zu pages resident after MADV_PAGEOUT", name, rss,
			 (size_t)PAGES);
	fr_release(&a);
	close(mfd);
	return;
fail:
	fr_write_str(HOLD, "0");
	tap_ok(0, "%s: set-up or check failed: %s", name, strerror(errno));
	fr_release(&a);
	if (mfd >= 0)
		close(mfd);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = w_segv };

	fr_parse_args(&argc, argv);
	fd = fr_open();
	if (!tap_ok(fd >= 0, "open the device"))
		return tap_done();
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	pin(0);
	for (shared = 0; shared < 2; shared++) {
		run(0);
		run(1);
		if (!fr_nodev())
			held_round();
	}
	return tap_done();
}
