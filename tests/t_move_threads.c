// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_MOVE with the mutators running, as a compacting collector
 * runs it: the collector stops the mutators only for the pages it moves
 * (and frees, with MADV_DONTNEED, to keep holes to move into), and every
 * other page of the heap stays live. Mutator threads read,
 * check and rewrite random pages, fill holes (a fresh page faulted in
 * while a batch may hold the locks), write to zero pages (COW) and page
 * single pages out (where swap can be had), all the time; the collector
 * thread claims the pages of a batch (sources and destinations), moves
 * them with one call, updates the model and releases them. A page is
 * owned by one side at a time (a per-page state word), so every page's
 * content is known exactly: each mutator checks the page it takes, the
 * collector checks the pages it moved, and the whole heap is checked
 * against the model with the mutators stopped, every few batches and at
 * the end. Each batch must move in full with one TLB flush, and
 * /proc/self/maps over the heap must not change.
 *
 * Why a collector must be able to rely on this: a batch takes the page
 * table locks of tables whose other entries the mutators are using, and a
 * hole the collector just emptied may be refilled by a mutator at once
 * (a write through a stale TLB entry for a moved source would land in
 * the moved page).
 *
 * First, two calls on one open file, made deterministic with the
 * test-only hold_before_flush: thread A's batch, in passes of one page,
 * stops before its first flush; thread B's batch on the same file starts
 * meanwhile, reads its vector and waits for mmap_lock. A's later passes
 * must still read A's vector, not B's (a vector buffer kept per file is
 * one call's at a time), and each batch must move its own pages.
 *
 * Usage: t_move_threads [SEED [BATCHES]]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include "tlib.h"

#define HEAP		(4 * SZ_1M)
#define NPAGES		(HEAP / PG)
#define NPAGES_MAX	(HEAP / T_PAGE_MIN)	/* static arrays' size */
#define MUTATORS	3
#define MAX_MOVES	64
/* Pageouts in all: each is slow under TCG and holds mmap_lock. */
#define MAX_PAGEOUTS	400

/* Who owns a page: nobody, a mutator, or the collector. */
enum { FREE, MUTATOR, GC };

static int fd = -1;
static uint64_t seed = 1;
static int batches = 100;
static int swap_on;

static char *heap;
static uint64_t tags[NPAGES_MAX];	/* the model: owned with the page */
static _Atomic unsigned char owner[NPAGES_MAX];
static atomic_int stop, paused, parked;
static atomic_long ops, fills, cows, pageouts, bad_pages;
static _Atomic(const char *) first_bad;
static atomic_long first_bad_page = -1;

static uint64_t rnd(uint64_t *s, uint64_t n)
{
	return t_xorshift64(s) % n;
}

#define SV_HOLD		T_PARAMS "hold_before_flush"
#define SV_N		16	/* moves per call: more than fit on the stack */
#define SV_PAGES	(4 * SV_N)

static struct fastremap_move_vec sv_vec[2][SV_N];
static struct fastremap_move sv_res[2];
static atomic_int sv_go[2], sv_ret[2], sv_err[2], sv_tid[2];

/* Thread A (0) or B (1): its batch on the shared file when told. */
static void *sv_caller(void *arg)
{
	int k = (int)(uintptr_t)arg;

	atomic_store(&sv_tid[k], (int)syscall(SYS_gettid));
	while (!atomic_load(&sv_go[k]))
		sched_yield();
	atomic_store(&sv_ret[k], t_move(fd, sv_vec[k], SV_N, 0, &sv_res[k]));
	atomic_store(&sv_err[k], errno);
	return NULL;
}

/* Whether thread @tid sleeps uninterruptibly (B waiting for mmap_lock). */
static int sv_sleeping(int tid)
{
	char path[64], b[256], *p;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	if (t_read_str(path, b, sizeof(b)))
		return 0;
	p = strrchr(b, ')');
	return p && p[1] == ' ' && p[2] == 'D';
}

/*
 * A's batch moves pages 0..SV_N-1 to the holes 2*SV_N.., B's the next
 * SV_N pages to the holes after those; B calls while A is held.
 */
static void shared_vec_case(void)
{
	const char *d = "a second call on the file while the first is held keeps the "
			"first call's vector";
	static uint64_t want[SV_PAGES];
	pthread_t t[2];
	struct t_area a;
	const char *why = "";
	int held = 0, blocked = 0, started = 0;
	long bad;
	double t0;
	char *h;

	if (t_param("hold_before_flush") < 0) {
		tap_ok(0, "%s: no test hook hold_before_flush (a test build of the module)", d);
		return;
	}
	h = t_map_aligned(SV_PAGES * PG, PMD_SZ, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &a);
	if (!h || madvise(h, SV_PAGES * PG, MADV_NOHUGEPAGE)) {
		tap_ok(0, "%s: map", d);
		return;
	}
	for (size_t i = 0; i < SV_PAGES; i++)
		want[i] = 0;
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < SV_N; i++) {
			size_t src = k * SV_N + i, dst = 2 * SV_N + k * SV_N + i;

			want[dst] = t_tag(seed ^ 0x5ec, src);
			t_tag_fill(h + src * PG, want[dst]);
			sv_vec[k][i] = (struct fastremap_move_vec){
				(uintptr_t)h + src * PG, (uintptr_t)h + dst * PG, PG };
		}
	/*
	 * Nothing that may fault during the hold (mmap_lock is held for
	 * write): every call made then is made once before, and B's vector
	 * and result are written above.
	 */
	memset(sv_res, 0, sizeof(sv_res));
	t_move(fd, sv_vec[0], 0, 0, &sv_res[0]);
	(void)sv_sleeping((int)syscall(SYS_gettid));
	if (t_mv_set_pass(1) || t_write_str(SV_HOLD, "0") || t_now() < 0) {
		tap_ok(0, "%s: set move_pass_pages", d);
		goto out;
	}
	for (int k = 0; k < 2; k++)
		if (pthread_create(&t[k], NULL, sv_caller, (void *)(uintptr_t)k)) {
			tap_ok(0, "%s: pthread_create", d);
			goto out;
		}
	started = 1;
	while (!atomic_load(&sv_tid[0]) || !atomic_load(&sv_tid[1]))
		sched_yield();
	if (t_write_str(SV_HOLD, "1"))
		goto release;
	atomic_store(&sv_go[0], 1);
	t0 = t_now();
	while (!(held = t_param("hold_before_flush") == 2) && t_now() < t0 + 8)
		usleep(1000);
	if (!held)
		goto release;
	atomic_store(&sv_go[1], 1);
	t0 = t_now();
	while (!(blocked = sv_sleeping(atomic_load(&sv_tid[1]))) && t_now() < t0 + 4)
		usleep(1000);
	/* B has read its vector: it sleeps on the lock A's call holds. */
	usleep(20000);
release:
	t_write_str(SV_HOLD, "0");
	atomic_store(&sv_go[0], 1);
	atomic_store(&sv_go[1], 1);
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	started = 0;
	bad = t_mv_verify(h, SV_PAGES, want, &why);
	tap_diag("A: %s, done %llu, %llu flushes; B: %s, done %llu; held %d, B blocked %d",
		 atomic_load(&sv_ret[0]) ? strerror(atomic_load(&sv_err[0])) : "ok",
		 (unsigned long long)sv_res[0].done, (unsigned long long)sv_res[0].tlb_flushes,
		 atomic_load(&sv_ret[1]) ? strerror(atomic_load(&sv_err[1])) : "ok",
		 (unsigned long long)sv_res[1].done, held, blocked);
	if (bad >= 0)
		tap_diag("page %ld: %s", bad, why);
	tap_ok(held && blocked && !atomic_load(&sv_ret[0]) && !atomic_load(&sv_ret[1]) &&
	       sv_res[0].done == SV_N && sv_res[1].done == SV_N && bad < 0,
	       "%s (A %s, B %s, every page where its own batch put it: %s)", d,
	       held ? "held before its flush" : "never held",
	       blocked ? "called during the hold" : "never waited", bad < 0 ? "yes" : "no");
out:
	if (started)
		for (int k = 0; k < 2; k++) {
			atomic_store(&sv_go[k], 1);
			pthread_join(t[k], NULL);
		}
	t_write_str(SV_HOLD, "0");
	t_mv_set_pass(0);
	t_release(&a);
}

static void report_bad(size_t i, const char *what)
{
	const char *none = NULL;

	atomic_fetch_add(&bad_pages, 1);
	if (atomic_compare_exchange_strong(&first_bad, &none, what))
		atomic_store(&first_bad_page, (long)i);
}

/* Whether page i holds what the model says (read through its mapping). */
static int page_right(size_t i)
{
	const volatile uint64_t *w = (const volatile uint64_t *)(heap + i * PG);

	if (tags[i] == MV_ZERO)
		return !w[0] && !w[PAGE_WORDS - 1];
	return w[0] == tags[i] && w[PAGE_WORDS - 1] == ~tags[i];
}

static void *mutator(void *arg)
{
	uint64_t s = t_mix64(seed + (uintptr_t)arg) | 1;

	while (!atomic_load(&stop)) {
		size_t i = rnd(&s, NPAGES);
		unsigned char want = FREE;
		int op = rnd(&s, 32);

		if (atomic_load(&paused)) {
			atomic_fetch_add(&parked, 1);
			while (atomic_load(&paused) && !atomic_load(&stop))
				sched_yield();
			atomic_fetch_sub(&parked, 1);
			continue;
		}
		if (!atomic_compare_exchange_strong_explicit(&owner[i], &want, MUTATOR,
							     memory_order_acquire,
							     memory_order_relaxed))
			continue;
		if (!tags[i]) {
			/* A hole: leave most alone, fill some (a fault-in). */
			if (op == 0 && rnd(&s, 8) == 0) {
				tags[i] = t_mix64(s + i) | 1;
				t_tag_fill(heap + i * PG, tags[i]);
				atomic_fetch_add(&fills, 1);
			}
		} else if (!page_right(i)) {
			report_bad(i, "a mutator found another page's data");
		} else if (tags[i] == MV_ZERO) {
			if (op < 8) {
				tags[i] = t_mix64(s ^ i) | 1;
				t_tag_fill(heap + i * PG, tags[i]);
				atomic_fetch_add(&cows, 1);
			}
		} else if (op < 16) {
			tags[i] = t_mix64(tags[i]) | 1;
			t_tag_fill(heap + i * PG, tags[i]);
		} else if (op == 31 && swap_on && atomic_load(&pageouts) < MAX_PAGEOUTS &&
			   rnd(&s, 64) == 0) {
			madvise(heap + i * PG, PG, MADV_PAGEOUT);
			atomic_fetch_add(&pageouts, 1);
		}
		atomic_fetch_add(&ops, 1);
		atomic_store_explicit(&owner[i], FREE, memory_order_release);
	}
	return NULL;
}

/* Takes page i for the collector, waiting out a mutator that holds it. */
static void claim(size_t i)
{
	unsigned char want;

	for (;;) {
		want = FREE;
		if (atomic_compare_exchange_weak_explicit(&owner[i], &want, GC,
							  memory_order_acquire,
							  memory_order_relaxed))
			return;
		sched_yield();
	}
}

static void release(size_t i)
{
	atomic_store_explicit(&owner[i], FREE, memory_order_release);
}

/*
 * One batch: moves of 1-4 pages, each claimed before it is checked
 * against the model (a mutator may have filled a hole meanwhile): data
 * at the source, holes at the destination, no page used twice. *claimed
 * lists the claimed pages (to release after the call).
 */
static uint32_t gen_batch(struct fastremap_move_vec *v, uint32_t want, uint64_t *s,
			  size_t *claimed, size_t *nclaimed)
{
	static uint8_t mine[NPAGES_MAX];
	uint32_t n = 0;

	*nclaimed = 0;
	memset(mine, 0, NPAGES);
	for (int tries = 0; n < want && tries < 4000; tries++) {
		size_t len = 1 + rnd(s, 4), sp = rnd(s, NPAGES - len), dp = rnd(s, NPAGES - len);
		size_t c0 = *nclaimed;
		int ok = sp + len <= dp || dp + len <= sp;

		for (size_t k = 0; ok && k < len; k++)
			ok = !mine[sp + k] && !mine[dp + k];
		if (!ok)
			continue;
		for (size_t k = 0; k < len; k++) {
			claim(sp + k);
			claim(dp + k);
			claimed[(*nclaimed)++] = sp + k;
			claimed[(*nclaimed)++] = dp + k;
		}
		for (size_t k = 0; ok && k < len; k++)
			ok = tags[sp + k] && !tags[dp + k];
		if (!ok) {
			while (*nclaimed > c0)
				release(claimed[--*nclaimed]);
			continue;
		}
		for (size_t k = 0; k < len; k++)
			mine[sp + k] = mine[dp + k] = 1;
		v[n].src = (uintptr_t)heap + sp * PG;
		v[n].dst = (uintptr_t)heap + dp * PG;
		v[n].len = len * PG;
		n++;
	}
	return n;
}

/* Stops the mutators, checks every page against the model, lets them go. */
static long check_all(const char **why)
{
	long bad;

	atomic_store(&paused, 1);
	while (atomic_load(&parked) < MUTATORS)
		sched_yield();
	/* Parked threads own nothing: each releases a page before parking. */
	bad = t_mv_verify(heap, NPAGES, tags, why);
	atomic_store(&paused, 0);
	return bad;
}

int main(int argc, char **argv)
{
	static struct fastremap_move_vec v[MAX_MOVES];
	static size_t claimed[MAX_MOVES * 32];
	pthread_t th[MUTATORS];
	struct fastremap_move res;
	struct t_area a;
	uint64_t s;
	const char *why = "";
	char *maps0, *maps1;
	int fails = 0, flush_bad = 0, maps_bad = 0, moved_bad = 0, checks = 0;
	int multi = 0, multi_seen = 0, pass_set = 0;
	unsigned long nmoves = 0, npages = 0;
	long bad = -1, freed = 0;
	double t0 = t_now();

	if (argc > 1)
		seed = strtoull(argv[1], NULL, 0);
	if (argc > 2)
		batches = atoi(argv[2]);
	tap_diag("seed %llu, %d batches, %d mutator threads", (unsigned long long)seed,
		 batches, MUTATORS);
	fd = t_open_mover();
	if (fd < 0)
		return tap_done();
	shared_vec_case();
	why = t_swap_setup();
	swap_on = !*why;
	if (!swap_on)
		tap_diag("no single-page pageouts: %s", why);
	heap = t_map_aligned(HEAP, PMD_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0, &a);
	if (!heap) {
		tap_ok(0, "map the heap");
		return tap_done();
	}
	madvise(heap, HEAP, MADV_NOHUGEPAGE);
	s = seed ^ 0x7e4d;
	for (size_t i = 0; i < NPAGES; i++) {
		uint64_t r = rnd(&s, 100);

		tags[i] = 0;
		if (r < 50) {
			tags[i] = t_tag(seed, i);
			t_tag_fill(heap + i * PG, tags[i]);
		} else if (r < 55) {
			(void)*(volatile char *)(heap + i * PG);
			tags[i] = MV_ZERO;
		}
	}
	bad = t_mv_verify(heap, NPAGES, tags, &why);
	if (!tap_ok(bad < 0, "the heap is as the model says before the threads start")) {
		tap_diag("page %ld: %s", bad, why);
		return tap_done();
	}
	maps0 = t_maps_range(heap, HEAP);
	for (uintptr_t t = 0; t < MUTATORS; t++)
		if (pthread_create(&th[t], NULL, mutator, (void *)(t + 1))) {
			tap_ok(0, "start the mutators");
			return tap_done();
		}

	for (int b = 0; b < batches && bad < 0; b++) {
		long fill = atomic_load(&fills);
		size_t nclaimed;
		uint32_t n;
		int r, e;

		/*
		 * The collector frees as many pages as the mutators filled
		 * (garbage, dropped with MADV_DONTNEED): the heap keeps its
		 * share of holes to move into.
		 */
		for (int t = 0; freed < fill && t < 1000; t++) {
			size_t i = rnd(&s, NPAGES);

			claim(i);
			if (tags[i] && tags[i] != MV_ZERO) {
				madvise(heap + i * PG, PG, MADV_DONTNEED);
				tags[i] = 0;
				freed++;
			}
			release(i);
		}
		/*
		 * The second half in passes of 5 pages, as batches past the
		 * module's pass bound run: each must still move in full.
		 */
		if (b == batches / 2) {
			pass_set = !t_mv_set_pass(5);
			multi = 1;
		}
		n = gen_batch(v, 1 + rnd(&s, MAX_MOVES), &s, claimed, &nclaimed);

		r = t_move(fd, v, n, 0, &res);
		e = errno;
		if (r || res.done != n) {
			tap_diag("batch %d of %u moves: %s, done %llu bytes %llu", b, n,
				 r ? strerror(e) : "ok", (unsigned long long)res.done,
				 (unsigned long long)res.done_bytes);
			fails++;
		}
		flush_bad += n && (multi ? res.tlb_flushes < 1 : res.tlb_flushes != 1);
		multi_seen += multi && res.tlb_flushes > 1;
		t_mv_model(tags, (uintptr_t)heap, v, n, res.done, res.done_bytes);
		/* The moved pages, while still ours: read at their new place. */
		for (uint32_t k = 0; k < n; k++) {
			size_t d = (v[k].dst - (uintptr_t)heap) / PG;

			for (size_t p = 0; p < v[k].len / PG; p++)
				if (tags[d + p] && !page_right(d + p)) {
					if (!moved_bad++)
						tap_diag("batch %d: moved page %zu holds other data",
							 b, d + p);
				}
			nmoves++;
			npages += v[k].len / PG;
		}
		while (nclaimed)
			release(claimed[--nclaimed]);
		if (b % 10 == 9) {
			bad = check_all(&why);
			checks++;
			maps1 = t_maps_range(heap, HEAP);
			if (!maps0 || !maps1 || strcmp(maps0, maps1)) {
				if (!maps_bad++)
					tap_diag("batch %d: maps before:\n%s# after:\n%s", b,
						 maps0 ? maps0 : "?", maps1 ? maps1 : "?");
			}
			free(maps1);
		}
	}
	atomic_store(&stop, 1);
	for (int t = 0; t < MUTATORS; t++)
		pthread_join(th[t], NULL);
	t_mv_set_pass(0);
	if (bad < 0) {
		bad = t_mv_verify(heap, NPAGES, tags, &why);
		checks++;
	}
	maps1 = t_maps_range(heap, HEAP);
	maps_bad += !maps0 || !maps1 || strcmp(maps0, maps1);
	tap_diag("%lu moves (%lu pages) in %d batches, %.1f s; mutators: %ld page visits, "
		 "%ld holes filled, %ld zero pages written, %ld pageouts; collector: %ld freed",
		 nmoves, npages, batches, t_now() - t0, atomic_load(&ops), atomic_load(&fills),
		 atomic_load(&cows), atomic_load(&pageouts), freed);
	tap_ok(!fails, "every batch moved in full (%d failed)", fails);
	tap_ok(!flush_bad, "one TLB flush per batch, one at least per batch of short passes "
	       "(%d batches otherwise)", flush_bad);
	tap_ok(pass_set && multi_seen > 0,
	       "the second half ran in passes of 5 pages, %d batches in more than one", multi_seen);
	tap_ok(!moved_bad, "every moved page holds its data at its destination (%d wrong)",
	       moved_bad);
	tap_ok(!atomic_load(&bad_pages),
	       "every page a mutator took held what it last held (%ld wrong, first: page %ld, %s)",
	       atomic_load(&bad_pages), atomic_load(&first_bad_page),
	       atomic_load(&first_bad) ? atomic_load(&first_bad) : "none");
	if (!tap_ok(bad < 0, "every page of the heap right, checked %d times with the mutators "
		    "stopped", checks))
		tap_diag("page %ld: %s", bad, why);
	tap_ok(!maps_bad, "/proc/self/maps over the heap unchanged");
	tap_ok(atomic_load(&ops) > 1000 && atomic_load(&fills) > (long)batches &&
	       nmoves > 8UL * batches,
	       "the mutators ran beside the batches (%ld visits, %ld fills), %lu moves in %d batches",
	       atomic_load(&ops), atomic_load(&fills), nmoves, batches);
	free(maps0);
	free(maps1);
	t_release(&a);
	if (swap_on)
		t_swap_off();
	return tap_done();
}
