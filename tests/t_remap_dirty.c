// SPDX-License-Identifier: GPL-2.0
/*
 * No dirty bit may be lost by a move.
 *
 * The module has two movers (module/pgmove.c). The per-entry one clears
 * each source entry with an atomic get-and-clear and carries the bits it
 * read (dirty and accessed included) into the destination entry; whole
 * source tables are copied instead (x86-64, arm64), their old entries
 * left live until the pass detaches them and their dirty bits carried to
 * the folios after the flush. The pass's one TLB flush comes after every
 * entry of the pass has moved. Until that flush another CPU may still hold TLB
 * entries for the source: a write through one already dirty needs no
 * page-table update, a write through a clean one must set the dirty bit,
 * finds the source entry gone and faults. A mover that lost a dirty bit
 * (a copy made with a plain load before a concurrent write set it, an
 * entry made clean by mistake) would make the page look clean:
 * MADV_FREE'd anonymous memory is then dropped by reclaim, and the write
 * is lost.
 *
 * Each round maps private anonymous memory (small pages), writes a tag to
 * every page, MADV_FREEs it (its entries become clean, its folios
 * lazily freeable), starts a writer thread that writes a new value into
 * every page in turn through the source addresses, and moves the region
 * PTE-misaligned while the writer runs; the writer stops at its first
 * fault, when the source is gone. Every write the writer saw complete
 * went into a page the move carried. MADV_PAGEOUT on the target then
 * reclaims the region at once: clean lazyfree pages are dropped (read
 * back as zero), dirty ones stay. Every page the writer wrote must hold
 * its last value; every other page its tag or zero. The same rounds run
 * with mremap(2) as a control.
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
 *
 * Last, the tables after the move: a MREMAP_DONTUNMAP source keeps its
 * emptied PTE tables, as after mremap(2), and a move whose source is
 * unmapped leaves as many page tables as mremap(2) leaves (see
 * tables_once()).
 *
 * The racing rounds hold for every mover; where test builds have the
 * table-copying mover (module/pgmove.c, fr_copy_table()), they run once
 * with it and once with the per-entry mover alone (copy_tables=0), and
 * rounds held inside the copying mover's own window follow, where a
 * write through the old address dirties an entry that no longer reaches
 * the moved page (run_held()).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include "tlib.h"

#define REGION		(32 * SZ_1M)
#define PAGES		(REGION / PG)
#define PAGES_MAX	(REGION / T_PAGE_MIN)	/* static arrays' size */
#define ROUNDS		3	/* at least; more until the writer hit a move */
#define MAX_ROUNDS	96	/* on a loaded 2-core host 24 rounds once missed every move */
#define TAG(i)		(0x7a67000000000000ULL | (uint64_t)(i))

static int fd = -1;
static int shared;	/* the memfd variant */
/* copy_tables as loaded; "" where the build has no copying mover. */
static char copy_dflt[8];

static struct {
	char *base;			/* the source, where the writer writes */
	uint64_t last[PAGES_MAX];	/* the writer's last completed write */
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

static void *writer(void *arg)
{
	volatile uint64_t *p;
	uint64_t gen, v;
	size_t i;

	(void)arg;
	t_pin_cpu(1);
	if (sigsetjmp(w_env, 1))
		return NULL;	/* the source is gone: the move is done */
	w_armed = 1;
	atomic_store(&w.ready, 1);
	while (!atomic_load(&w.go))
		;
	for (gen = 1; !atomic_load(&w.stop); gen++) {
		for (i = 0; i < PAGES && !atomic_load(&w.stop); i++) {
			/*
			 * Every fourth page is never written, so it stays
			 * clean and reclaim has pages to drop however fast
			 * the writer is against the mover: on 6.1's KASAN
			 * kernel it dirtied every page before the mover
			 * overtook it, and the check that a lost dirty bit
			 * would show had no clean page to see.
			 */
			if (i % 4 == 3)
				continue;
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
	static unsigned char vec[PAGES_MAX];
	long n = 0;

	if (mincore((void *)p, len, vec))
		return -1;
	for (size_t i = 0; i < len / PG; i++)
		n += vec[i] & 1;
	return n;
}

/*
 * Maps the round's source (at a PMD boundary, REGION bytes: shared memfd
 * pages read-faulted, or MADV_FREE'd anonymous ones, present, writable
 * and clean either way) and picks its destination a page off the source's
 * alignment (a PTE-level move). Returns 0, or -1 with *why set.
 */
static int round_setup(struct t_area *a, char **src, char **dst, int *mfd, const char **why)
{
	size_t i;

	*mfd = -1;
	if (!t_reserve(2 * REGION + 3 * PMD_SZ, a)) {
		*why = "reserve";
		return -1;
	}
	*src = (char *)T_ALIGN_UP((uintptr_t)a->base, PMD_SZ);
	*dst = *src + REGION + PMD_SZ + PG;
	if (shared) {
		*mfd = memfd_create("t_remap_dirty", MFD_CLOEXEC);
		if (*mfd < 0 || ftruncate(*mfd, REGION) ||
		    mmap(*src, REGION, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, *mfd, 0) == MAP_FAILED) {
			*why = "memfd";
			return -1;
		}
		madvise(*src, REGION, MADV_NOHUGEPAGE);
		/* Read faults: present, writable, clean entries. */
		for (i = 0; i < PAGES; i++)
			if (((volatile uint64_t *)(*src + i * PG))[0])
				break;
	} else {
		if (mmap(*src, REGION, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
			*why = "mmap";
			return -1;
		}
		madvise(*src, REGION, MADV_NOHUGEPAGE);
		for (i = 0; i < PAGES; i++)
			((uint64_t *)(*src + i * PG))[0] = TAG(i);
		if (madvise(*src, REGION, MADV_FREE)) {
			*why = "MADV_FREE";
			return -1;
		}
	}
	memset(w.last, 0, PAGES * sizeof(w.last[0]));
	w.base = *src;
	atomic_store(&w.written, 0);
	atomic_store(&w.ready, 0);
	atomic_store(&w.go, 0);
	atomic_store(&w.stop, 0);
	return 0;
}

/*
 * After the move: reclaims the destination at once (clean lazyfree or
 * never-written shared pages go, dirty ones stay) and checks that every
 * page the writer wrote holds its last value, and every other page its
 * tag or nothing. Returns 0, or -1 with *why set.
 */
static int round_check(char *dst, int mfd, struct tally *t, const char **why)
{
	static uint64_t page[T_PAGE_MAX / 8];
	long rss;
	size_t i;

	if (madvise(dst, REGION, MADV_PAGEOUT)) {
		*why = "MADV_PAGEOUT";
		return -1;
	}
	if (shared) {
		/* Dropped clean pages are holes again; read the file itself. */
		rss = resident(dst, REGION);
		if (rss < 0) {
			*why = "mincore";
			return -1;
		}
		t->dropped += PAGES - rss;
	}
	for (i = 0; i < PAGES; i++) {
		const uint64_t *p = (const uint64_t *)(dst + i * PG);

		if (shared) {
			if (pread(mfd, page, 16, i * PG) != 16) {
				*why = "pread";
				return -1;
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
	return 0;
}

/* One round; returns 0, or -1 with *why set. */
static int round_once(int use_module, struct tally *t, const char **why)
{
	struct fastremap_remap r;
	struct t_area a;
	char *src, *dst, *res;
	int mfd = -1;
	pthread_t th;
	long w0, w1;

	*why = "";
	if (round_setup(&a, &src, &dst, &mfd, why))
		goto fail;
	if (pthread_create(&th, NULL, writer, NULL)) {
		*why = "pthread_create";
		goto fail;
	}
	/*
	 * The writer spins on its CPU until now, and starts from the first
	 * page as the move starts: the mover soon overtakes it, and from
	 * then on every page it writes for the first time has been moved
	 * and not yet flushed (the window), while most pages stay clean.
	 * The move starts once the writer has written a few pages, so that
	 * its vCPU is running then: a 32 MiB move takes about a millisecond
	 * since the mover stores entries itself (arch.h), less than the
	 * host may keep a vCPU away, and on a loaded host 24 rounds in a
	 * row once found the writer not yet started.
	 */
	while (!atomic_load(&w.ready))
		;
	w0 = atomic_load(&w.written);
	atomic_store(&w.go, 1);
	while (atomic_load(&w.written) - w0 < 8)
		;
	w0 = atomic_load(&w.written);
	if (use_module)
		res = t_remap(fd, src, REGION, REGION, MREMAP_MAYMOVE | MREMAP_FIXED,
			       dst, &r);
	else
		res = t_mremap(src, REGION, REGION, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	w1 = atomic_load(&w.written);
	atomic_store(&w.stop, 1);
	pthread_join(th, NULL);
	if (res != dst) {
		*why = strerror(errno);
		goto fail;
	}
	t->during += w1 - w0;
	if (use_module && t_counted(&r))
		t->flushes += r.tlb_flushes;
	if (round_check(dst, mfd, t, why))
		goto fail;
	t_release(&a);
	close(mfd);
	return 0;
fail:
	t_release(&a);
	if (mfd >= 0)
		close(mfd);
	return -1;
}

/* @per_entry: the module's per-entry mover alone (copy_tables=0). */
static void run(int use_module, int per_entry)
{
	char name[96];
	struct tally t = { 0 };
	const char *why;
	int k, ok = 1;

	snprintf(name, sizeof(name), "%s%s, %s", use_module ? "FASTREMAP_IOC_REMAP" : "mremap(2)",
		 per_entry ? ", per-entry mover" : "",
		 shared ? "shared memfd" : "MADV_FREE'd anonymous");
	if (per_entry && t_write_str(T_PARAMS "copy_tables", "0")) {
		tap_ok(0, "%s: setting copy_tables=0", name);
		return;
	}
	/* The writer may not run at all during a move on a busy host: retry. */
	for (k = 0; k < ROUNDS || (!t.during && k < MAX_ROUNDS); k++) {
		if (round_once(use_module, &t, &why)) {
			ok = 0;
			break;
		}
	}
	if (per_entry)
		t_write_str(T_PARAMS "copy_tables", copy_dflt);
	if (!ok) {
		tap_ok(0, "%s: round %d: %s", name, k, why);
		return;
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

/*
 * The copying mover's window, held open (test builds, where
 * tables_copied tells that it ran; module/pgmove.c, fr_copy_table()). That mover
 * copies whole source tables with plain stores and leaves the source
 * entries in place until the pass detaches the tables, just before its
 * flush; a write through the old address in between sets the dirty bit
 * of the old entry, not of its copy, and the pass must carry it to the
 * folio after the flush. hold_before_flush stops the pass there, before
 * the detach: the writer then writes through the old address into pages
 * whose entries are writable and clean (every fourth page left clean, as
 * in the racing rounds), and those writes complete without a fault, as
 * the old entries are still live. Reclaim after the move must keep every
 * page so written. Deterministic: every write of the window is made
 * while the move is held in it.
 */
struct held_move {
	char *src, *dst, *res;
	struct fastremap_remap r;
	int err;
};

static void *held_mover(void *arg)
{
	struct held_move *m = arg;

	t_pin_cpu(0);
	m->res = t_remap(fd, m->src, REGION, REGION, MREMAP_MAYMOVE | MREMAP_FIXED,
			 m->dst, &m->r);
	m->err = errno;
	return NULL;
}

/* Writes a quarter of the pages left clean leave this many to write. */
#define HELD_WRITES	(PAGES - PAGES / 4)

static int held_once(struct tally *t, long *copied, int *reached, const char **why)
{
	struct held_move m = { 0 };
	pthread_t wt, mt;
	struct t_area a;
	long c0;
	int mfd = -1, wt_up = 0;
	double end;

	*why = "";
	*reached = 0;
	if (round_setup(&a, &m.src, &m.dst, &mfd, why))
		goto fail;
	c0 = t_param("tables_copied");
	if (pthread_create(&wt, NULL, writer, NULL)) {
		*why = "pthread_create";
		goto fail;
	}
	wt_up = 1;
	while (!atomic_load(&w.ready))
		;
	if (t_write_str(T_PARAMS "copy_tables", "1") ||
	    t_write_str(T_PARAMS "hold_before_flush", "1")) {
		*why = "arming copy_tables and hold_before_flush";
		goto fail;
	}
	if (pthread_create(&mt, NULL, held_mover, &m)) {
		t_write_str(T_PARAMS "hold_before_flush", "0");
		*why = "pthread_create";
		goto fail;
	}
	for (end = t_now() + 5; t_param("hold_before_flush") != 2 && t_now() < end;)
		usleep(200);
	if (t_param("hold_before_flush") == 2) {
		*reached = 1;
		/* One pass over the pages, all of it inside the hold. */
		atomic_store(&w.go, 1);
		for (end = t_now() + 5;
		     atomic_load(&w.written) < (long)HELD_WRITES && t_now() < end;)
			usleep(200);
		t->during += atomic_load(&w.written);
	}
	/*
	 * A write that faulted (an old entry gone: not the copying mover)
	 * waits for the move's mmap_lock, then finds the source unmapped:
	 * stopped here, the writer ends at that fault. A writer never let
	 * go ends at once.
	 */
	atomic_store(&w.stop, 1);
	atomic_store(&w.go, 1);
	t_write_str(T_PARAMS "hold_before_flush", "0");
	pthread_join(mt, NULL);
	pthread_join(wt, NULL);
	wt_up = 0;
	t_write_str(T_PARAMS "copy_tables", copy_dflt);
	*copied += t_param("tables_copied") - c0;
	if (m.res != m.dst) {
		*why = strerror(m.err);
		goto fail;
	}
	if (round_check(m.dst, mfd, t, why))
		goto fail;
	t_release(&a);
	close(mfd);
	return 0;
fail:
	if (wt_up) {
		atomic_store(&w.stop, 1);
		atomic_store(&w.go, 1);
		pthread_join(wt, NULL);
	}
	t_write_str(T_PARAMS "copy_tables", copy_dflt);
	t_release(&a);
	if (mfd >= 0)
		close(mfd);
	return -1;
}

static void run_held(void)
{
	char name[96];
	struct tally t = { 0 };
	const char *why;
	long copied = 0;
	int reached;

	snprintf(name, sizeof(name), "copying mover, held before the detach, %s",
		 shared ? "shared memfd" : "MADV_FREE'd anonymous");
	if (t_param("hold_before_flush") < 0 || t_param("tables_copied") < 0) {
		tap_skip_test("no copying mover in this build", "%s: writes through the old entries keep their dirty bits",
			      name);
		return;
	}
	/*
	 * What this thread touches while the move is held must be mapped
	 * already: a fault would wait for the move's mmap_lock until the
	 * hold gave up (on 6.12 a hold was missed so, the clock not yet
	 * read: the vDSO's data page, which mlockall() does not populate).
	 */
	if (!mlockall(MCL_CURRENT))
		munlockall();
	t_now();
	if (held_once(&t, &copied, &reached, &why)) {
		tap_ok(0, "%s: %s", name, why);
		return;
	}
	if (!copied) {
		tap_skip_test("no copying mover in this build (copy_tables moved no table)",
			      "%s: writes through the old entries keep their dirty bits", name);
		return;
	}
	tap_diag("%s: %ld tables copied, %ld writes during the hold, %ld kept, %ld clean pages dropped",
		 name, copied, t.during, t.kept, t.dropped);
	tap_ok(reached && t.during >= (long)HELD_WRITES,
	       "%s: the writer wrote every page it writes while the move was held (%ld writes, %zu pages)",
	       name, t.during, (size_t)HELD_WRITES);
	tap_ok(t.lost == 0 && t.corrupt == 0,
	       "%s: writes through the old entries keep their dirty bits (%ld lost, %ld corrupt)",
	       name, t.lost, t.corrupt);
	/* Else a lost dirty bit would go unseen. */
	tap_ok(t.dropped > 0, "%s: reclaim dropped clean pages (%ld): a lost dirty bit would show",
	       name, t.dropped);
}

/*
 * After a MREMAP_DONTUNMAP move the source keeps its emptied PTE tables,
 * as mremap(2)'s per-entry move leaves them (the copying mover hooks the
 * tables it detached back). Reading the source then maps the zero page
 * into those tables and allocates none (VmPTE stays); a table left
 * detached (the PMD entry none) would be allocated anew, and an entry
 * left in it would show the moved data at the source. A fresh region read
 * the same way shows that a missing table would be seen.
 * A move whose source is unmapped: the copying mover frees the source
 * tables it detached where the kernel lets it (module/compat.h), else the
 * unmap frees them, as it frees mremap(2)'s emptied ones. Either
 * way the process's page-table bytes (VmPTE) after the move must be what
 * they are after mremap(2): a freed table left counted would show there.
 * (Not THPs: khugepaged, woken by a first MADV_HUGEPAGE, may collapse the
 * zero-page ranges at any moment.)
 */
#define RH_LEN	(2 * PMD_SZ)

/* Page-table bytes of this process (VmPTE, kB), or -1. */
static long vm_pte_kb(void)
{
	return t_proc_field("/proc/self/status", "VmPTE");
}

/* Reads every page of [p, p + len): zero-page faults where nothing is. */
static long read_zeros(const char *p, size_t len)
{
	long nonzero = 0;
	size_t i;

	for (i = 0; i < len; i += PG)
		nonzero += ((const volatile uint64_t *)(p + i))[0] != 0;
	return nonzero;
}

/*
 * One move of RH_LEN, PTE-misaligned, by the module or mremap(2), with
 * MREMAP_DONTUNMAP or not. *pte_kb: with @dontunmap, the page-table
 * kB that reading the source afterwards allocated; else the change of
 * VmPTE across the move. *wrong: pages with the wrong data (at the
 * target; with @dontunmap also at the source, which must read zeros).
 * *copied: source tables the copying mover moved (0 without the count).
 */
static int tables_once(int use_module, int dontunmap, long *pte_kb,
		       long *wrong, long *copied)
{
	unsigned int flags = MREMAP_MAYMOVE | MREMAP_FIXED |
			     (dontunmap ? MREMAP_DONTUNMAP : 0);
	long before, tables = t_param("tables_copied");
	struct fastremap_remap r;
	struct t_area a;
	char *src, *dst, *res;
	size_t i;

	if (!t_reserve(2 * RH_LEN + 3 * PMD_SZ, &a))
		return -1;
	src = (char *)T_ALIGN_UP((uintptr_t)a.base, PMD_SZ);
	dst = src + RH_LEN + PMD_SZ + PG;	/* misaligned: PTE level */
	if (mmap(src, RH_LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED ||
	    madvise(src, RH_LEN, MADV_NOHUGEPAGE))
		goto fail;
	for (i = 0; i < RH_LEN / PG; i++)
		((uint64_t *)(src + i * PG))[0] = TAG(i);
	before = vm_pte_kb();
	res = use_module ? t_remap(fd, src, RH_LEN, RH_LEN, flags, dst, &r) :
			   t_mremap(src, RH_LEN, RH_LEN, flags, dst);
	if (res != dst)
		goto fail;
	*copied = tables >= 0 ? t_param("tables_copied") - tables : 0;
	*wrong = 0;
	for (i = 0; i < RH_LEN / PG; i++)
		*wrong += ((uint64_t *)(dst + i * PG))[0] != TAG(i);
	if (dontunmap) {
		before = vm_pte_kb();
		*wrong += read_zeros(src, RH_LEN);
	}
	*pte_kb = vm_pte_kb() - before;
	t_release(&a);
	return before < 0 ? -1 : 0;
fail:
	t_release(&a);
	return -1;
}

static void tables_round(int dontunmap)
{
	long kb[2] = { -1, -1 }, wrong[2] = { -1, -1 }, copied[2] = { 0, 0 };
	const char *what = dontunmap ? "DONTUNMAP source" : "unmapped source";
	int m;

	for (m = 0; m < 2; m++)
		if (tables_once(m, dontunmap, &kb[m], &wrong[m], &copied[m])) {
			tap_ok(0, "%s, %s: set-up or move failed: %s", what,
			       m ? "FASTREMAP_IOC_REMAP" : "mremap(2)", strerror(errno));
			return;
		}
	tap_diag("%s: %ld source tables moved by copying", what, copied[1]);
	tap_ok(wrong[0] == 0 && wrong[1] == 0,
	       "%s: data at the target%s (%ld and %ld pages wrong)", what,
	       dontunmap ? ", zeros at the source" : "", wrong[0], wrong[1]);
	if (dontunmap)
		tap_ok(kb[1] == kb[0],
		       "DONTUNMAP source: reading it after the move allocates as many page tables as after mremap(2) (%ld kB against %ld kB): its emptied tables are back",
		       kb[1], kb[0]);
	else
		tap_ok(kb[1] == kb[0],
		       "unmapped source: page tables after the move as after mremap(2) (VmPTE %+ld kB against %+ld kB)",
		       kb[1], kb[0]);
}

static void dontunmap_round(void)
{
	long ctl = -1, before;
	struct t_area a;
	char *p;

	tables_round(1);
	/* The control: the same reads where no table is allocate them. */
	p = t_reserve(RH_LEN + PMD_SZ, &a) ?
	    (char *)T_ALIGN_UP((uintptr_t)a.base, PMD_SZ) : NULL;
	if (p && mmap(p, RH_LEN, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == p &&
	    !madvise(p, RH_LEN, MADV_NOHUGEPAGE)) {
		before = vm_pte_kb();
		read_zeros(p, RH_LEN);
		ctl = vm_pte_kb() - before;
	}
	t_release(&a);
	tap_ok(ctl >= (long)(RH_LEN / PMD_SZ * PG / 1024),
	       "DONTUNMAP source: a missing table would show (the same reads without tables: %ld kB of page tables)",
	       ctl);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = w_segv };

	fd = t_open_args(&argc, argv);
	if (fd < 0)
		return tap_done();
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	t_pin_cpu(0);
	if (t_param("tables_copied") < 0 ||
	    t_read_str(T_PARAMS "copy_tables", copy_dflt, sizeof(copy_dflt)))
		copy_dflt[0] = 0;
	copy_dflt[strcspn(copy_dflt, "\n")] = 0;
	for (shared = 0; shared < 2; shared++) {
		run(0, 0);
		run(1, 0);
		if (copy_dflt[0])
			run(1, 1);
		run_held();
	}
	dontunmap_round();
	tables_round(0);
	return tap_done();
}
