// SPDX-License-Identifier: GPL-2.0
/*
 * fastremap_move(3): the same batches through the module (where there is
 * one) and through the mremap(2) fallback (FASTREMAP_MREMAP_ONLY, and on
 * the host, which has no module), with the same results: errno, done,
 * done_bytes and every page of the heap. Only the mappings differ: the
 * module leaves /proc/self/maps as it was, the fallback splits the heap.
 * Runs on the host and in the test VM.
 *
 * Usage: t_move_lib [SEED]
 */
#define _GNU_SOURCE
#include "tlib.h"
#include "fastremap.h"

#define NPAGES	256

static uint64_t seed = 3;
static int have_module;

struct lib_case {
	const char *name;
	int n;
	struct { int src, dst, len; } mv[3];	/* in pages */
	unsigned int flags;
	int err;
	int done, done_pages;
	int half;	/* HALF_*: the first move's source or length half a page off */
};

/*
 * Half a page: not a multiple of the page on any kernel, but of 4 KiB on
 * one with 16 KiB pages, where a check of 4 KiB alignment lets it through.
 */
#define HALF_LEN	1
#define HALF_SRC	2

/* Pages 0-127 hold data, 128-255 are holes; page 200 holds data too. */
static const struct lib_case cases[] = {
	{ "a batch of three", 3, { { 0, 130, 4 }, { 8, 0, 2 }, { 20, 140, 8 } }, 0, 0, 3, 0, 0 },
	{ "EEXIST part way", 2, { { 0, 150, 2 }, { 4, 198, 4 } }, 0, EEXIST, 1, 2, 0 },
	{ "ENOENT part way", 1, { { 126, 160, 4 } }, 0, ENOENT, 0, 2, 0 },
	{ "holes allowed", 1, { { 126, 160, 4 } }, FASTREMAP_MOVE_HOLES, 0, 1, 0, 0 },
	{ "overlapping sources -> EINVAL", 2, { { 0, 150, 4 }, { 2, 170, 4 } }, 0, EINVAL, 0, 0, 0 },
	{ "unknown flag -> EINVAL", 1, { { 0, 150, 1 } }, 1u << 9, EINVAL, 0, 0, 0 },
	/* mremap(2) would round the length up and move two pages. */
	{ "a page and a half -> EINVAL", 1, { { 0, 150, 1 } }, 0, EINVAL, 0, 0, HALF_LEN },
	/* The destination holds data: a scan would stop at EEXIST. */
	{ "a source half a page in -> EINVAL", 1, { { 4, 200, 1 } }, 0, EINVAL, 0, 0, HALF_SRC },
};

static char *heap_setup(struct t_area *a, uint64_t *tags)
{
	char *h = t_map_aligned(NPAGES * PG, PG, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, a);

	if (!h)
		return NULL;
	madvise(h, NPAGES * PG, MADV_NOHUGEPAGE);
	for (int i = 0; i < NPAGES; i++) {
		tags[i] = i < 128 || i == 200 ? t_tag(seed, i) : 0;
		if (tags[i])
			t_tag_fill(h + i * PG, tags[i]);
	}
	return h;
}

static void run(const struct lib_case *c, unsigned int fr_flags, const char *how)
{
	struct fastremap_move_range v[3];
	struct fastremap_move_stats st = { .size = sizeof(st) };
	uint64_t tags[NPAGES];
	struct t_area a;
	const char *why;
	char *h = heap_setup(&a, tags), *m0, *m1;
	long r, bad;

	if (!h)
		return (void)tap_ok(0, "%s: %s: set up", how, c->name);
	for (int k = 0; k < c->n; k++) {
		v[k].src = (uintptr_t)h + c->mv[k].src * PG;
		v[k].dst = (uintptr_t)h + c->mv[k].dst * PG;
		v[k].len = c->mv[k].len * PG;
	}
	if (c->half == HALF_LEN)
		v[0].len += PG / 2;
	if (c->half == HALF_SRC)
		v[0].src += PG / 2;
	m0 = t_maps_range(h, NPAGES * PG);
	r = fastremap_move(v, c->n, c->flags, fr_flags, &st);
	m1 = t_maps_range(h, NPAGES * PG);
	if (r != -c->err || st.done != (uint64_t)c->done ||
	    st.done_bytes != (uint64_t)c->done_pages * PG) {
		tap_ok(0, "%s: %s", how, c->name);
		tap_diag("want %d done %d pages %d; got %ld done %llu bytes %llu", -c->err,
			 c->done, c->done_pages, r, (unsigned long long)st.done,
			 (unsigned long long)st.done_bytes);
		goto out;
	}
	t_mv_model(tags, (uintptr_t)h, (const struct fastremap_move_vec *)v, c->n,
		 st.done, st.done_bytes);
	bad = t_mv_verify(h, NPAGES, tags, &why);
	if (bad >= 0) {
		tap_ok(0, "%s: %s: page %ld: %s", how, c->name, bad, why);
		goto out;
	}
	if (st.used_module && (!m0 || !m1 || strcmp(m0, m1))) {
		tap_ok(0, "%s: %s: the module changed the mappings", how, c->name);
		goto out;
	}
	tap_ok(st.used_module == (have_module && !fr_flags),
	       "%s: %s (%s)", how, c->name, st.used_module ? "module" : "fallback");
out:
	free(m0);
	free(m1);
	t_release(&a);
}

int main(int argc, char **argv)
{
	struct fastremap_abi_info info = { .size = sizeof(info) };
	struct fastremap_move_stats st = { .size = sizeof(st) };

	if (argc > 1)
		seed = strtoull(argv[1], NULL, 0);
	have_module = fastremap_info(&info) == 0 &&
		      (info.ioctls & FASTREMAP_IOCTL_BIT_MOVE);
	tap_diag("module with FASTREMAP_IOC_MOVE: %s", have_module ? "yes" : "no");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		run(&cases[i], 0, "default");
		run(&cases[i], FASTREMAP_MREMAP_ONLY, "mremap fallback");
	}
	tap_ok(fastremap_move(NULL, FASTREMAP_MOVE_LIMIT + 1, 0, 0, &st) == -E2BIG,
	       "count above FASTREMAP_MOVE_LIMIT -> -E2BIG");
	tap_ok(fastremap_move(NULL, 0, 0, FASTREMAP_NO_FALLBACK | FASTREMAP_MREMAP_ONLY,
			      NULL) == -EINVAL, "contradictory fr_flags -> -EINVAL");
	if (!have_module)
		tap_ok(fastremap_move(NULL, 0, 0, FASTREMAP_NO_FALLBACK, &st) == -ENODEV,
		       "FASTREMAP_NO_FALLBACK without the module -> -ENODEV");
	else
		tap_ok(fastremap_move(NULL, 0, 0, FASTREMAP_NO_FALLBACK, &st) == 0 &&
		       st.used_module, "FASTREMAP_NO_FALLBACK with the module: an empty batch");
	return tap_done();
}
