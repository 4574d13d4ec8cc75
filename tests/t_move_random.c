// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_MOVE as a compacting collector uses it: seeded random
 * batches of moves of 1-16 pages inside one heap, some refilling what an
 * earlier move of the same batch emptied, some moving a page twice, with
 * holes (FASTREMAP_MOVE_ALLOW_HOLES), zero pages and, where swap can be
 * had, paged-out runs among them. After every batch: every page of the
 * heap is checked against the model (its tag, or a hole still a hole),
 * /proc/self/maps has the same lines, the batch took one TLB flush. Two
 * heaps: small pages only (MADV_NOHUGEPAGE), and THP-backed
 * (MADV_HUGEPAGE) with holes punched, so that moves cut PTE-mapped large
 * folios and whole THPs and the module must split them first; khugepaged
 * may collapse behind them but not fill a hole (t_mv_holes_kept()).
 *
 * Usage: t_move_random [SEED [BATCHES]]
 */
#define _GNU_SOURCE
#include "tlib.h"

#define HEAP		(32 * SZ_1M)
#define NPAGES		(HEAP / PG)
#define NPAGES_MAX	(HEAP / T_PAGE_MIN)	/* static arrays' size */
#define MAX_MOVES	512

static int fd = -1;
static uint64_t seed = 1, rng;
static int batches = 12;

static size_t rnd(size_t n)
{
	return t_xorshift64(&rng) % n;
}

/*
 * One batch, generated against a working copy of the model so that each
 * move is valid when its turn comes: a source with data (or any source,
 * with holes allowed), an empty destination, sources pairwise disjoint,
 * destinations pairwise disjoint.
 */
static uint32_t gen_batch(const uint64_t *tags, struct fastremap_move_vec *v,
			  uint32_t want, char *heap, int holes)
{
	static uint64_t work[NPAGES_MAX];
	static uint8_t used_src[NPAGES_MAX], used_dst[NPAGES_MAX];
	uint32_t n = 0;

	memcpy(work, tags, NPAGES * sizeof(work[0]));
	memset(used_src, 0, NPAGES);
	memset(used_dst, 0, NPAGES);
	for (int tries = 0; n < want && tries < 200000; tries++) {
		size_t len = 1 + rnd(16), s = rnd(NPAGES - len), d = rnd(NPAGES - len);

		if (t_mv_fits(work, used_src, used_dst, s, d, len, holes))
			t_mv_add(&v[n++], heap, work, used_src, used_dst, s, d, len);
	}
	return n;
}

/*
 * One heap's batches. @pass: the module's passes are that many pages
 * (t_mv_set_pass()), so that batches run in several passes as those past
 * the built-in bound do; each must still move in full.
 */
static void run_heap(const char *name, int thp, int swap, unsigned long pass)
{
	static uint64_t tags[NPAGES_MAX];
	static struct fastremap_move_vec v[MAX_MOVES];
	struct fastremap_move res;
	struct t_area a;
	char *heap, *maps0, *maps1;
	const char *why;
	int fails = 0, flushes_bad = 0, maps_bad = 0, split = 0, multi = 0;
	uint64_t moved = 0, nmoves = 0;
	long bad;

	if (pass && t_mv_set_pass(pass))
		return (void)tap_ok(0, "%s: set move_pass_pages (a test build)", name);
	heap = t_map_aligned(HEAP, PMD_SZ, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &a);
	if (!heap) {
		t_mv_set_pass(0);
		return (void)tap_ok(0, "%s: map the heap", name);
	}
	if (thp)
		t_mv_holes_kept(0);
	madvise(heap, HEAP, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	rng = seed ^ (thp ? 0x7457 : 0x5eed);
	for (size_t i = 0; i < NPAGES; i++) {
		tags[i] = 0;
		/* THP: every page has data, holes are punched below. */
		if (thp || rnd(100) < 55) {
			tags[i] = t_tag(seed, i);
			t_tag_fill(heap + i * PG, tags[i]);
		}
	}
	if (thp) {
		struct t_smaps sm;

		t_smaps_range((uintptr_t)heap, (uintptr_t)heap + HEAP, &sm);
		tap_diag("%s: %ld kB of %lu in THPs before holes are punched", name,
			 sm.anon_huge_kb, HEAP >> 10);
		for (int k = 0; k < 600; k++) {
			size_t len = 1 + rnd(24), s = rnd(NPAGES - len);

			madvise(heap + s * PG, len * PG, MADV_DONTNEED);
			for (size_t i = 0; i < len; i++)
				tags[s + i] = 0;
		}
	}
	/* Zero pages among the holes: read, never written. */
	for (int k = 0; k < 200; k++) {
		size_t i = rnd(NPAGES);

		if (!tags[i]) {
			(void)*(volatile char *)(heap + i * PG);
			tags[i] = MV_ZERO;
		}
	}
	bad = t_mv_verify(heap, NPAGES, tags, &why);
	if (!tap_ok(bad < 0, "%s: the heap is as the model says before any move", name)) {
		tap_diag("page %ld: %s", bad, why);
		t_mv_holes_kept(1);
		t_release(&a);
		return;
	}

	for (int b = 0; b < batches; b++) {
		uint32_t want = b % 3 == 0 ? 1 + rnd(8) : MAX_MOVES / 2 + rnd(MAX_MOVES / 2);
		int holes = b % 4 == 3;
		uint32_t n;
		int r, e;

		if (swap) {
			for (int k = 0; k < 16; k++) {
				size_t s = rnd(NPAGES - 32);

				madvise(heap + s * PG, 32 * PG, MADV_PAGEOUT);
			}
		}
		n = gen_batch(tags, v, want, heap, holes);
		maps0 = t_maps_range(heap, HEAP);
		r = t_move(fd, v, n, holes ? FASTREMAP_MOVE_ALLOW_HOLES : 0, &res);
		e = errno;
		maps1 = t_maps_range(heap, HEAP);
		if (r || res.done != n) {
			tap_diag("%s: batch %d of %u moves: %s, done %llu bytes %llu", name, b, n,
				 r ? strerror(e) : "ok", (unsigned long long)res.done,
				 (unsigned long long)res.done_bytes);
			fails++;
		}
		flushes_bad += pass ? res.moved_pte && !res.tlb_flushes : res.tlb_flushes > 1;
		multi += res.tlb_flushes > 1;
		if (!maps0 || !maps1 || strcmp(maps0, maps1)) {
			maps_bad++;
			tap_diag("%s: batch %d: maps before:\n%s# after:\n%s", name, b,
				 maps0 ? maps0 : "?", maps1 ? maps1 : "?");
		}
		free(maps0);
		free(maps1);
		t_mv_model(tags, (uintptr_t)heap, v, n, res.done, res.done_bytes);
		moved += res.moved_pte;
		split += res.split;
		nmoves += n;
		bad = t_mv_verify(heap, NPAGES, tags, &why);
		if (bad >= 0) {
			tap_ok(0, "%s: batch %d: page %ld: %s", name, b, bad, why);
			t_mv_holes_kept(1);
			t_mv_set_pass(0);
			t_release(&a);
			return;
		}
	}
	tap_diag("%s: %llu moves, %llu PTEs moved, %d large folios split", name,
		 (unsigned long long)nmoves, (unsigned long long)moved, split);
	tap_ok(!fails, "%s: %d batches succeeded in full", name, batches);
	if (pass)
		tap_ok(!flushes_bad && multi > 0,
		       "%s: a flush per pass that moved, %d batches in several", name, multi);
	else
		tap_ok(!flushes_bad, "%s: one TLB flush per batch", name);
	tap_ok(!maps_bad, "%s: /proc/self/maps unchanged by every batch", name);
	tap_ok(1, "%s: every page right after every batch", name);
	if (thp)
		tap_ok(split > 0, "%s: moves cut large folios, which were split (%d)", name, split);
	t_mv_holes_kept(1);
	t_mv_set_pass(0);
	t_release(&a);
}

int main(int argc, char **argv)
{
	const char *why;

	if (argc > 1)
		seed = strtoull(argv[1], NULL, 0);
	if (argc > 2)
		batches = atoi(argv[2]);
	tap_diag("seed %llu, %d batches", (unsigned long long)seed, batches);
	fd = t_open_mover();
	if (fd < 0)
		return tap_done();
	run_heap("small pages", 0, 0, 0);
	run_heap("THP heap", 1, 0, 0);
	run_heap("small pages, passes of 7 pages", 0, 0, 7);
	why = t_swap_setup();
	if (*why) {
		tap_skip_test(why, "small pages with paged-out runs");
	} else {
		run_heap("small pages with paged-out runs", 0, 1, 0);
		t_swap_off();
	}
	return tap_done();
}
