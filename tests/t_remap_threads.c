// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_REMAP while other threads run: a mover thread moves a
 * 64 MiB region back and forth between two reserved areas (MAYMOVE|FIXED),
 * 50 times per run, and checks its pattern after every move.
 *
 * Locked runs: two workers read and write their own words of the region
 *   through the address the mover publishes, under a rwlock the mover
 *   write-holds around each move (writer-preferring, so that it gets in).
 *   Every word a worker reads must be the value it last wrote: nothing may
 *   be lost or corrupted across moves.
 * Remote runs: the other threads stay off the region's current address: a
 *   writer stores to its own memory, so that the mm is live on another CPU
 *   and each move's TLB flush must reach it (a shootdown), and a prober on
 *   that CPU reads the region just before a move and, once the move is
 *   over, the old address again. That read must fault: if it returns data,
 *   the other CPU kept a stale TLB entry for the old address.
 *
 * Each run is done once with both areas PMD-aligned (PMD moves) and
 * once with the second one a page off (PTE moves). Runs as root inside the
 * test VM with the module loaded.
 *
 * Usage: t_remap_threads [--selftest-mremap] [SEED]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include "tlib.h"

#define REGION		(64 * SZ_1M)
#define NPAGES		(REGION / PG)
#define MOVES		50
#define NWORKERS	2	/* locked runs; worker w owns word w of each page */
#define OWN_WORDS	2	/* words at the start of each page left to the workers */
#define SAMPLE		(64 * PG)

static int fd = -1;
static uint64_t seed;
static char *areas[2];
static _Atomic(char *) cur;		/* where the region is */
static atomic_ulong seq;		/* odd while a move is in progress */
static atomic_int stop;
static atomic_ulong armed;		/* seq at which the prober loaded a TLB entry */
static pthread_rwlock_t lock;
static uint64_t *expect[NWORKERS];	/* per page: the worker's last value */
static int cpu_a = -1, cpu_b = -1;	/* mover; remote threads */
static cpu_set_t all_cpus;

struct wstat {
	int w;			/* the worker's index */
	long ops, bad;
	long first_page;
	uint64_t first_got, first_want;
};

/* Pattern words OWN_WORDS.. of page k of the region at p: -1 or bad offset. */
static long check_pattern_page(const char *p, size_t k)
{
	uint64_t buf[T_PAGE_MAX / sizeof(uint64_t)];
	const volatile uint64_t *w = (const void *)(p + k * PG);

	t_pattern_page(buf, seed, k);
	for (size_t i = OWN_WORDS; i < PAGE_WORDS; i++)
		if (w[i] != buf[i])
			return k * PG + i * 8;
	return -1;
}

/* Sampled (step pages) or full check of pattern and worker words. */
static long check_region(const char *p, size_t step, int words)
{
	long bad;

	for (size_t k = 0; k < NPAGES; k += step) {
		if ((bad = check_pattern_page(p, k)) >= 0)
			return bad;
		for (int w = 0; words && w < NWORKERS; w++)
			if (((const volatile uint64_t *)(p + k * PG))[w] != expect[w][k])
				return k * PG + w * 8;
	}
	return -1;
}

static void pin(int cpu)
{
	cpu_set_t s;

	if (cpu < 0)
		return;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

/* ---------------------------------------------------------------------- */
/* Locked runs                                                             */

static void *locked_worker(void *arg)
{
	struct wstat *st = arg;
	int w = st->w;
	uint64_t rng = t_mix64(seed + w) | 1;

	/* One worker on the other CPU, the other anywhere. */
	if (w == 0)
		pin(cpu_b);
	else
		pthread_setaffinity_np(pthread_self(), sizeof(all_cpus), &all_cpus);
	st->first_page = -1;
	while (!atomic_load(&stop)) {
		char *p;

		pthread_rwlock_rdlock(&lock);
		p = atomic_load(&cur);
		for (int i = 0; i < 64; i++) {
			size_t k = t_xorshift64(&rng) % NPAGES;
			volatile uint64_t *word = (uint64_t *)(p + k * PG) + w;
			uint64_t v = *word;

			if (v != expect[w][k] && st->bad++ == 0) {
				st->first_page = k;
				st->first_got = v;
				st->first_want = expect[w][k];
			}
			*word = expect[w][k] = expect[w][k] + 1;
			st->ops++;
		}
		pthread_rwlock_unlock(&lock);
	}
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Remote runs                                                             */

struct rstat {
	long writes, writer_bad;
	long probes, faults, stale, skipped;
	unsigned long stale_seq;
	uint64_t stale_val;
};

static void *remote_writer(void *arg)
{
	struct rstat *st = arg;
	static uint64_t own[SZ_1M / 8];
	uint64_t n = 0;

	pin(cpu_b);
	while (!atomic_load(&stop)) {
		for (size_t i = 0; i < ARRAY_SIZE(own); i += 8)
			own[i] = n + i;
		for (size_t i = 0; i < ARRAY_SIZE(own); i += 8)
			if (own[i] != n + i)
				st->writer_bad++;
		n++;
		st->writes++;
	}
	return NULL;
}

static void *remote_prober(void *arg)
{
	struct rstat *st = arg;
	uint64_t rng = t_mix64(seed ^ 0x5157) | 1;

	pin(cpu_b);
	while (!atomic_load(&stop)) {
		unsigned long s1 = atomic_load(&seq), s2;
		char *p;
		uint64_t v;

		if (s1 & 1) {
			sched_yield();
			continue;
		}
		p = atomic_load(&cur) + (t_xorshift64(&rng) % NPAGES) * PG + 16;
		/* Load a TLB entry for the current address... */
		if (t_probe_read(p, &v) || atomic_load(&seq) != s1)
			continue;
		atomic_store(&armed, s1);	/* (the mover waits for this) */
		/* ... wait for exactly one move to complete... */
		while ((s2 = atomic_load(&seq)) == s1 || (s2 & 1)) {
			if (atomic_load(&stop))
				return NULL;
			sched_yield();	/* lets the writer run on this CPU */
		}
		if (s2 != s1 + 2) {
			st->skipped++;
			continue;
		}
		/* ... and read the old address: it must fault. */
		st->probes++;
		if (t_probe_read(p, &v)) {
			st->faults++;
		} else if (atomic_load(&seq) == s2) {
			if (st->stale++ == 0) {
				st->stale_seq = s2;
				st->stale_val = v;
			}
		}
	}
	return NULL;
}

/* ---------------------------------------------------------------------- */

struct run {
	const char *name;
	int remote;
	int misaligned;
};

/* A name's "%zu" is the page's size in KiB. */
static const struct run runs[] = {
	{ "locked workers, PMD-aligned", 0, 0 },
	{ "locked workers, %zuK-misaligned", 0, 1 },
	{ "remote TLB, PMD-aligned", 1, 0 },
	{ "remote TLB, %zuK-misaligned", 1, 1 },
};

static void do_run(const struct run *rn)
{
	struct wstat ws[NWORKERS];
	struct rstat rs;
	pthread_t t[NWORKERS];
	char *dst[2] = { areas[0], areas[1] + (rn->misaligned ? PG : 0) };
	long bad_data = -1, bad_flush = 0, move_fail = 0;
	int nthreads = 0, at;
	double t0 = t_now();
	char name[48];

	snprintf(name, sizeof(name), rn->name, PG >> 10);

	memset(ws, 0, sizeof(ws));
	memset(&rs, 0, sizeof(rs));
	atomic_store(&stop, 0);
	at = atomic_load(&cur) == dst[0] ? 0 : 1;
	if (!rn->remote) {
		for (int w = 0; w < NWORKERS; w++) {
			ws[w].w = w;
			nthreads += !pthread_create(&t[w], NULL, locked_worker, &ws[w]);
		}
	} else {
		nthreads += !pthread_create(&t[0], NULL, remote_writer, &rs);
		nthreads += !pthread_create(&t[1], NULL, remote_prober, &rs);
	}
	tap_ok(nthreads == 2, "%s: threads started", name);
	usleep(20000);

	for (int i = 0; i < MOVES; i++) {
		struct fastremap_remap r;
		char *to = dst[at ^ 1], *p;

		/* Give the prober the chance to load a TLB entry first. */
		for (int w = 0; rn->remote && cpu_b >= 0 && w < 500 &&
		     atomic_load(&armed) != atomic_load(&seq); w++)
			usleep(100);
		if (!rn->remote)
			pthread_rwlock_wrlock(&lock);
		atomic_fetch_add(&seq, 1);
		p = t_remap(fd, atomic_load(&cur), REGION, REGION,
			     MREMAP_MAYMOVE | MREMAP_FIXED, to, &r);
		if (p == to) {
			atomic_store(&cur, p);
			at ^= 1;
		}
		atomic_fetch_add(&seq, 1);
		if (!rn->remote)
			pthread_rwlock_unlock(&lock);
		if (p != to) {
			tap_diag("%s: move %d failed: %s", name, i, strerror(errno));
			move_fail++;
			break;
		}
		if (t_counted(&r) && r.tlb_flushes != 1)
			bad_flush++;
		/* The pattern words are the mover's, whatever the workers do. */
		if (bad_data < 0) {
			for (size_t k = (i * 7) % 64; k < NPAGES && bad_data < 0; k += SAMPLE / PG)
				bad_data = check_pattern_page(p, k);
			if (bad_data < 0)
				bad_data = check_pattern_page(p, NPAGES - 1);
			if (bad_data >= 0)
				tap_diag("%s: after move %d: pattern broken at offset %#lx",
					 name, i, bad_data);
		}
		usleep(2000);
	}
	atomic_store(&stop, 1);
	for (int k = 0; k < nthreads; k++)
		pthread_join(t[k], NULL);

	tap_ok(!move_fail, "%s: %d moves of 64M done", name, MOVES);
	tap_ok(bad_data < 0, "%s: pattern intact after every move (sampled)", name);
	if (!t_nodev())
		tap_ok(bad_flush == 0, "%s: every move reports one TLB flush (%ld did not)",
		       name, bad_flush);
	if (!rn->remote) {
		long ops = 0, bad = 0;

		for (int w = 0; w < NWORKERS; w++) {
			ops += ws[w].ops;
			bad += ws[w].bad;
			if (ws[w].bad)
				tap_diag("%s: worker %d: page %ld: read %#llx, wrote %#llx last",
					 name, w, ws[w].first_page,
					 (unsigned long long)ws[w].first_got,
					 (unsigned long long)ws[w].first_want);
		}
		tap_ok(bad == 0 && ops > 0,
		       "%s: workers' words survive the moves (%ld accesses, %ld wrong)",
		       name, ops, bad);
	} else {
		tap_diag("%s: writer %ld rounds; prober %ld probes of an old address, %ld faulted, %ld skipped",
			 name, rs.writes, rs.probes, rs.faults, rs.skipped);
		tap_ok(rs.writer_bad == 0 && rs.writes > 0,
		       "%s: the writer's own memory is intact", name);
		if (rs.stale)
			tap_diag("%s: first stale read after move seq %lu: %#llx", name,
				 rs.stale_seq, (unsigned long long)rs.stale_val);
		tap_ok(rs.stale == 0,
		       "%s: no read through a stale TLB entry of the old address (%ld)",
		       name, rs.stale);
		if (cpu_b >= 0)
			tap_ok(rs.faults > 0, "%s: the prober did see old addresses fault (%ld)",
			       name, rs.faults);
	}
	tap_ok(check_region(atomic_load(&cur), 1, 1) < 0,
	       "%s: whole region intact at the end (pattern and workers' words)", name);
	tap_diag("%s: %.2f s", name, t_now() - t0);
}

int main(int argc, char **argv)
{
	struct t_area a[2];
	pthread_rwlockattr_t ra;
	char *p;

	t_parse_args(&argc, argv);
	seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);
	tap_diag("pattern seed %" PRIu64, seed);
	t_probe_init();
	if (!sched_getaffinity(0, sizeof(all_cpus), &all_cpus)) {
		for (int c = 0; c < CPU_SETSIZE; c++) {
			if (!CPU_ISSET(c, &all_cpus))
				continue;
			if (cpu_a < 0)
				cpu_a = c;
			else if (cpu_b < 0)
				cpu_b = c;
		}
	}
	if (cpu_b < 0) {
		tap_diag("one CPU only: no remote TLB shootdowns to test");
		cpu_a = -1;
	} else {
		tap_diag("mover on CPU %d, remote threads on CPU %d", cpu_a, cpu_b);
	}

	fd = t_open();
	if (!tap_ok(fd >= 0, "open the device (%s)", fd < 0 ? strerror(errno) : "ok"))
		return tap_done();
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&lock, &ra);
	for (int w = 0; w < NWORKERS; w++)
		expect[w] = calloc(NPAGES, sizeof(uint64_t));

	areas[0] = t_pick(REGION, PMD_SZ, &a[0]);
	areas[1] = t_pick(REGION + PG, PMD_SZ, &a[1]);
	p = areas[0] && areas[1] ?
	    mmap(areas[0], REGION, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) : MAP_FAILED;
	if (!tap_ok(p != MAP_FAILED && expect[0] && expect[1], "map the 64M region"))
		return tap_done();
	madvise(p, REGION, MADV_NOHUGEPAGE);
	t_fill_pattern(p, REGION, seed);
	for (size_t k = 0; k < NPAGES; k++)
		for (int w = 0; w < NWORKERS; w++)
			((uint64_t *)(p + k * PG))[w] = 0;
	atomic_store(&cur, p);

	pin(cpu_a);
	for (size_t k = 0; k < ARRAY_SIZE(runs); k++)
		do_run(&runs[k]);

	t_release(&a[0]);
	t_release(&a[1]);
	close(fd);
	return tap_done();
}
