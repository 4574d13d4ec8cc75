// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_REMAP against mremap(2)'s semantics: moves at 4 KiB,
 * 1 MiB, 2 MiB and 1 GiB alignments up to 2 GiB, with the counters the
 * module reports; growing, shrinking, replacing and DONTUNMAP moves;
 * invalid calls, whose errno must be the one mremap(2) gives on an
 * identical twin layout and which must leave memory unchanged; the ABI
 * checks of the structure; the cases the module declines on every
 * kernel (EOPNOTSUPP, memory untouched); and the accounting of a move of
 * a part of a mapping (Committed_AS, VmFlags, VmSize, VmPeak), which must
 * be mremap(2)'s. Runs as root inside the test VM with the module loaded.
 *
 * Usage: t_remap [--selftest-mremap] [SEED]
 * --selftest-mremap (or FASTREMAP_TEST_NO_DEVICE=1) replaces the ioctl
 * with mremap(2) and skips the checks that need the module.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <sys/resource.h>
#include <linux/userfaultfd.h>
#include "tlib.h"

static int fd = -1;
static uint64_t seed;
static int have_pud = 1;	/* FASTREMAP_FEAT_MOVE_PUD */

#define RW		(PROT_READ | PROT_WRITE)
#define ANON		(MAP_PRIVATE | MAP_ANONYMOUS)
#define MM		MREMAP_MAYMOVE
#define FX		MREMAP_FIXED
#define DU		MREMAP_DONTUNMAP
/* Fill regions up to this size fully (any page size); larger ones sparsely. */
#define FULL_LIMIT	(64 * SZ_1M)

/*
 * The sizes and alignments below are written for 4 KiB pages (2 MiB PMDs,
 * 1 GiB PUDs): G() gives them at this kernel's geometry (t_geo()), the
 * same multiples of its pages, PMDs and PUDs. Test names keep the 4 KiB
 * figures on every kernel ("2M" is a PMD, "1G" a PUD, "4K" a page).
 */
#define G(v)		t_geo(v)

static const char *szstr(size_t n)
{
	static char bufs[4][32];
	static int k;
	char *b = bufs[k++ & 3];

	if (n >= SZ_1G && !(n % SZ_1G))
		snprintf(b, 32, "%zuG", n / SZ_1G);
	else if (n > SZ_1G && !(n % SZ_1M))
		snprintf(b, 32, "%zuG+%zuM", n / SZ_1G, (n % SZ_1G) / SZ_1M);
	else if (n > SZ_1G)
		snprintf(b, 32, "%zuG+%zuK", n / SZ_1G, (n % SZ_1G) >> 10);
	else if (n >= SZ_1M && !(n % SZ_1M))
		snprintf(b, 32, "%zuM", n / SZ_1M);
	else
		snprintf(b, 32, "%zuK", n >> 10);
	return b;
}

/* "" on success, " (errno ENAME)" on failure, for test names. */
static const char *err_of(const void *p)
{
	static char b[4][40];
	static int k;
	char *r = b[k++ & 3];

	if (p != MAP_FAILED)
		return "";
	snprintf(r, 40, " (errno %s)", t_errname(errno));
	return r;
}

/* ---------------------------------------------------------------------- */
/* Which pages a region has touched, and what the module should move      */

struct touch {
	size_t len;
	size_t chunk;		/* 0: every page; else one page per chunk */
	uint64_t seed;
};

static size_t touch_region(char *p, size_t len, uint64_t s, struct touch *t)
{
	t->len = len;
	t->seed = s;
	t->chunk = len <= FULL_LIMIT ? 0 : PMD_SZ;
	if (!t->chunk) {
		t_fill_pattern(p, len, s);
		return len / PG;
	}
	return t_touch_sparse(p, len, s, t->chunk);
}

/* Touched pages among region offsets [lo, hi). */
static size_t touched_in(const struct touch *t, size_t lo, size_t hi)
{
	size_t n = 0;

	if (hi > t->len)
		hi = t->len;
	if (lo >= hi)
		return 0;
	if (!t->chunk)
		return (hi - lo) / PG;
	for (size_t k = lo / t->chunk; k * t->chunk < hi; k++) {
		size_t off = t_sparse_page(t->len, t->seed, t->chunk, k);

		n += off >= lo && off < hi;
	}
	return n;
}

/* Checks the first len bytes of a touched region at p. */
static long verify_touch(const char *p, const struct touch *t, size_t len)
{
	if (!t->chunk)
		return t_verify_pattern(p, len, t->seed, 0);
	return t_verify_sparse(p, len, t->seed, t->chunk, 1);
}

struct expect {
	uint64_t pud, pmd, pte;
};

/*
 * What a move of len bytes from src to dst relocates, taking the largest
 * entry whenever both addresses are aligned for it and the rest of the
 * range covers it, as move_page_tables() does: a populated PUD entry (a
 * PMD table holding a touched page), a populated PMD entry (a PTE table),
 * or single present PTEs. Extents end at the next PMD boundary of either
 * address.
 */
static void model(uintptr_t src, uintptr_t dst, size_t len,
		  const struct touch *t, struct expect *e)
{
	size_t o = 0;

	memset(e, 0, sizeof(*e));
	while (o < len) {
		uintptr_t s = src + o, d = dst + o;
		size_t ext;

		if (have_pud && !(s % PUD_SZ) && !(d % PUD_SZ) && len - o >= PUD_SZ) {
			e->pud += touched_in(t, o, o + PUD_SZ) > 0;
			o += PUD_SZ;
			continue;
		}
		if (!(s % PMD_SZ) && !(d % PMD_SZ) && len - o >= PMD_SZ) {
			e->pmd += touched_in(t, o, o + PMD_SZ) > 0;
			o += PMD_SZ;
			continue;
		}
		ext = PMD_SZ - s % PMD_SZ;
		if (PMD_SZ - d % PMD_SZ < ext)
			ext = PMD_SZ - d % PMD_SZ;
		if (len - o < ext)
			ext = len - o;
		e->pte += touched_in(t, o, o + ext);
		o += ext;
	}
}

enum cls { C_PUD, C_PMD, C_PTE, C_MIXED };

static enum cls classify(uintptr_t src, uintptr_t dst, size_t len)
{
	if ((src - dst) % PMD_SZ)
		return C_PTE;
	if (!(src % PUD_SZ) && !(dst % PUD_SZ) && !(len % PUD_SZ))
		return C_PUD;
	if (!(src % PMD_SZ) && !(dst % PMD_SZ) && !(len % PMD_SZ))
		return C_PMD;
	return C_MIXED;
}

static const char *const cls_name[] = { "PUD", "PMD", "PTE", "mixed" };

/*
 * The counters of one move. PUD/PMD/PTE-class moves (both addresses and
 * the size aligned to the entry, or the addresses misaligned relative to
 * each other) must match the model exactly. Mixed moves (relatively
 * PMD-aligned, but starting or ending inside a PMD) only have to account
 * for every touched page once: how the partial PMDs at the edges are
 * handled is the module's choice.
 */
static void check_counts(const char *name, const struct fastremap_remap *r,
			 uintptr_t src, uintptr_t dst, size_t len,
			 const struct touch *t)
{
	enum cls c = classify(src, dst, len);
	size_t touched = touched_in(t, 0, len);
	struct expect e;

	model(src, dst, len, t, &e);
	if (!t_counted(r)) {
		tap_diag("%s: %s-level; the module should report pud/pmd/pte %llu/%llu/%llu",
			 name, cls_name[c], (unsigned long long)e.pud,
			 (unsigned long long)e.pmd, (unsigned long long)e.pte);
		return;
	}
	tap_ok(r->tlb_flushes >= 1 && r->tlb_flushes <= t_max_flushes(len),
	       "%s: one TLB flush per pass, at most %llu (got %llu)", name,
	       (unsigned long long)t_max_flushes(len),
	       (unsigned long long)r->tlb_flushes);
	if (c != C_MIXED) {
		tap_ok(r->moved_pud == e.pud && r->moved_pmd == e.pmd &&
		       r->moved_pte == e.pte && r->moved_thp == 0,
		       "%s: %s-level move: pud/pmd/thp/pte %llu/%llu/%llu/%llu, want %llu/%llu/0/%llu",
		       name, cls_name[c], (unsigned long long)r->moved_pud,
		       (unsigned long long)r->moved_pmd,
		       (unsigned long long)r->moved_thp,
		       (unsigned long long)r->moved_pte,
		       (unsigned long long)e.pud, (unsigned long long)e.pmd,
		       (unsigned long long)e.pte);
		return;
	}
	tap_ok(r->moved_thp == 0 && r->moved_pte <= touched &&
	       r->moved_pte + PT_ENTRIES * r->moved_pmd +
	       PT_ENTRIES * PT_ENTRIES * r->moved_pud >= touched,
	       "%s: mixed move accounts for all %zu touched pages: pud/pmd/thp/pte %llu/%llu/%llu/%llu",
	       name, touched, (unsigned long long)r->moved_pud,
	       (unsigned long long)r->moved_pmd, (unsigned long long)r->moved_thp,
	       (unsigned long long)r->moved_pte);
	tap_diag("%s: greedy model says pud/pmd/pte %llu/%llu/%llu", name,
		 (unsigned long long)e.pud, (unsigned long long)e.pmd,
		 (unsigned long long)e.pte);
}

/* Counters for a move whose destination the test did not choose. */
static void check_flush_only(const char *name, const struct fastremap_remap *r,
			     size_t touched)
{
	if (!t_counted(r))
		return;
	tap_ok(r->tlb_flushes == 1 && r->moved_pte <= touched &&
	       r->moved_pte + PT_ENTRIES * (r->moved_pmd + r->moved_thp) +
	       PT_ENTRIES * PT_ENTRIES * r->moved_pud >= touched,
	       "%s: one TLB flush, all %zu touched pages moved (flushes %llu, pud/pmd/thp/pte %llu/%llu/%llu/%llu)",
	       name, touched, (unsigned long long)r->tlb_flushes,
	       (unsigned long long)r->moved_pud, (unsigned long long)r->moved_pmd,
	       (unsigned long long)r->moved_thp, (unsigned long long)r->moved_pte);
}

/*
 * A private anonymous source without THP, so that the counts are PTEs
 * (not accounted only where larger than memory: t_noreserve()).
 */
static char *map_src(size_t len, size_t align, struct t_area *a)
{
	char *p = t_map_aligned(len, align, RW, ANON | t_noreserve(len), -1, 0, a);

	if (p)
		madvise(p, len, MADV_NOHUGEPAGE);
	return p;
}

/*
 * A 2 MiB-aligned source of slen bytes and a reserved destination for
 * dlen; if either cannot be had, nothing is left mapped and the test is
 * reported skipped (NULL).
 */
static char *map_pair(size_t slen, size_t dlen, size_t dst_align, struct t_area *as,
		      struct t_area *ad, char **dst, const char *name)
{
	char *src = map_src(slen, G(SZ_2M), as);

	*dst = src ? t_pick(dlen, dst_align, ad) : NULL;
	if (*dst)
		return src;
	tap_skip_test("mmap failed", "%s", name);
	if (src)
		t_release(as);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Moves: alignments and sizes                                             */

struct move_case {
	size_t src_align, dst_align, len;
};

static const struct move_case moves[] = {
	{ SZ_4K, SZ_4K, SZ_8K },
	{ SZ_1M, SZ_4K, SZ_2M },
	{ SZ_1M, SZ_1M, SZ_2M },
	{ SZ_2M, SZ_4K, SZ_4M },
	{ SZ_2M, SZ_1M, SZ_4M },
	{ SZ_2M, SZ_2M, SZ_4M },
	{ SZ_4K, SZ_2M, SZ_4M },
	{ SZ_1M, SZ_1M, 64 * SZ_1M },
	{ SZ_2M, SZ_4K, 64 * SZ_1M },
	{ SZ_2M, SZ_2M, 64 * SZ_1M },
	{ SZ_1G, SZ_1G, 64 * SZ_1M },
	{ SZ_1G, SZ_4K, SZ_1G },
	{ SZ_1G, SZ_1M, SZ_1G },
	{ SZ_1G, SZ_2M, SZ_1G },
	{ SZ_2M, SZ_1G, SZ_1G },
	{ SZ_1G, SZ_1G, SZ_1G },
	{ SZ_1G, SZ_1G, SZ_1G + SZ_4M },
	{ SZ_1G, SZ_1G, SZ_1G + SZ_8K },
	{ SZ_1G, SZ_4K, 2 * SZ_1G },
	{ SZ_1G, SZ_2M, 2 * SZ_1G },
	{ SZ_1G, SZ_1G, 2 * SZ_1G },
};

static void run_move(const struct move_case *mc4k, uint64_t s)
{
	const struct move_case m = { G(mc4k->src_align), G(mc4k->dst_align), G(mc4k->len) };
	const struct move_case *mc = &m;
	struct t_area as, ad;
	struct fastremap_remap r;
	struct touch t;
	char name[160], *src, *dst, *p;
	double t0, dt;

	snprintf(name, sizeof(name), "move %s, src %s-aligned -> dst %s-aligned",
		 szstr(mc4k->len), szstr(mc4k->src_align), szstr(mc4k->dst_align));
	src = map_src(mc->len, mc->src_align, &as);
	if (!src) {
		tap_skip_test(strerror(errno), "%s: cannot map the source", name);
		return;
	}
	touch_region(src, mc->len, s, &t);
	dst = t_pick(mc->len, mc->dst_align, &ad);
	if (!dst) {
		tap_skip_test(strerror(errno), "%s: cannot reserve the destination", name);
		t_release(&as);
		return;
	}
	t0 = t_now();
	p = t_remap(fd, src, mc->len, mc->len, MM | FX, dst, &r);
	dt = t_now() - t0;
	if (!tap_ok(p == dst, "%s: lands at the requested address%s",
		    name, err_of(p)))
		goto out;
	tap_ok(verify_touch(dst, &t, mc->len) < 0, "%s: data intact at the destination", name);
	tap_ok(t_range_unmapped(src, mc->len), "%s: old range unmapped", name);
	tap_ok(t_range_mapped_as(dst, mc->len, "rw-p"), "%s: destination mapped rw-p", name);
	check_counts(name, &r, (uintptr_t)src, (uintptr_t)dst, mc->len, &t);
	tap_diag("%s: %zu touched pages, remap took %.3f ms", name,
		 touched_in(&t, 0, mc->len), dt * 1e3);
out:
	t_release(&as);
	t_release(&ad);
}

/* ---------------------------------------------------------------------- */
/* Moves that also resize, replace or keep the source                      */

/* Grow while moving: old data at the front, zeros in the new tail. */
static void test_grow_fixed(uint64_t s)
{
	const char *name = "grow 4M -> 8M while moving (MAYMOVE|FIXED)";
	struct t_area as, ad;
	struct fastremap_remap r;
	struct touch t;
	char *dst, *src = map_pair(G(SZ_4M), 2 * G(SZ_4M), G(SZ_2M), &as, &ad, &dst, name), *p;

	if (!src)
		return;
	touch_region(src, G(SZ_4M), s, &t);
	p = t_remap(fd, src, G(SZ_4M), 2 * G(SZ_4M), MM | FX, dst, &r);
	if (tap_ok(p == dst, "%s: lands at the requested address%s", name, err_of(p))) {
		tap_ok(t_verify_pattern(dst, G(SZ_4M), s, 0) < 0, "%s: old data intact", name);
		tap_ok(t_verify_zero(dst + G(SZ_4M), G(SZ_4M), 0) < 0, "%s: new tail reads zero", name);
		tap_ok(t_range_unmapped(src, G(SZ_4M)), "%s: old range unmapped", name);
		tap_ok(t_range_mapped_as(dst, 2 * G(SZ_4M), "rw-p"), "%s: 8M mapped rw-p", name);
		check_counts(name, &r, (uintptr_t)src, (uintptr_t)dst, G(SZ_4M), &t);
	}
	t_release(&as);
	t_release(&ad);
}

/* Shrink while moving: the front moves, the old range is gone entirely. */
static void test_shrink_fixed(uint64_t s, size_t dst_align)
{
	struct t_area as, ad;
	struct fastremap_remap r;
	struct touch t;
	char name[160], *src, *dst, *p;

	snprintf(name, sizeof(name), "shrink 8M -> 4M while moving to a %s-aligned address",
		 szstr(dst_align));
	src = map_pair(2 * G(SZ_4M), G(SZ_4M), G(dst_align), &as, &ad, &dst, name);
	if (!src)
		return;
	touch_region(src, 2 * G(SZ_4M), s, &t);
	p = t_remap(fd, src, 2 * G(SZ_4M), G(SZ_4M), MM | FX, dst, &r);
	if (tap_ok(p == dst, "%s: lands at the requested address%s", name, err_of(p))) {
		/* What was touched: every page, or one a PMD above FULL_LIMIT. */
		tap_ok(verify_touch(dst, &t, G(SZ_4M)) < 0, "%s: data intact", name);
		tap_ok(t_range_unmapped(src, 2 * G(SZ_4M)), "%s: whole old range unmapped", name);
		tap_ok(t_range_mapped_as(dst, G(SZ_4M), "rw-p") &&
		       !t_range_mapped_as(dst + G(SZ_4M), PG, "rw-p"),
		       "%s: exactly 4M mapped rw-p", name);
		check_counts(name, &r, (uintptr_t)src, (uintptr_t)dst, G(SZ_4M), &t);
	}
	t_release(&as);
	t_release(&ad);
}

/*
 * MREMAP_FIXED onto an existing mapping replaces it; its neighbours, in
 * the same page tables, are untouched.
 */
static void test_fixed_replace(uint64_t s, size_t dst_align)
{
	struct t_area as, ad;
	struct fastremap_remap r;
	struct touch t;
	char name[160], *src = map_src(G(SZ_4M), G(SZ_2M), &as), *dst, *p;
	int ok;

	snprintf(name, sizeof(name), "FIXED onto an existing %s-aligned mapping",
		 szstr(dst_align));
	if (!src || !(dst = t_pick(G(SZ_4M), G(dst_align), &ad)) ||
	    mmap(dst - PG, G(SZ_4M) + 2 * PG, RW, ANON | MAP_FIXED, -1, 0) == MAP_FAILED) {
		tap_skip_test("mmap failed", "%s", name);
		goto out;
	}
	madvise(dst - PG, G(SZ_4M) + 2 * PG, MADV_NOHUGEPAGE);
	/* Neighbour, victim, neighbour: one VMA, three patterns. */
	t_fill_pattern(dst - PG, PG, s + 1);
	t_fill_pattern(dst, G(SZ_4M), s + 2);
	t_fill_pattern(dst + G(SZ_4M), PG, s + 3);
	touch_region(src, G(SZ_4M), s, &t);
	p = t_remap(fd, src, G(SZ_4M), G(SZ_4M), MM | FX, dst, &r);
	if (tap_ok(p == dst, "%s: lands at the requested address%s", name, err_of(p))) {
		tap_ok(t_verify_pattern(dst, G(SZ_4M), s, 0) < 0,
		       "%s: the destination holds the moved data", name);
		ok = t_verify_pattern(dst - PG, PG, s + 1, 0) < 0 &&
		     t_verify_pattern(dst + G(SZ_4M), PG, s + 3, 0) < 0;
		tap_ok(ok, "%s: the neighbours keep their data", name);
		tap_ok(t_range_unmapped(src, G(SZ_4M)), "%s: old range unmapped", name);
		tap_ok(t_range_mapped_as(dst - PG, G(SZ_4M) + 2 * PG, "rw-p"),
		       "%s: neighbours and destination mapped rw-p", name);
		check_counts(name, &r, (uintptr_t)src, (uintptr_t)dst, G(SZ_4M), &t);
	}
out:
	if (src)
		t_release(&as);
	if (ad.base)
		t_release(&ad);
}

/*
 * MREMAP_FIXED onto another part of the source's own VMA: unmapping the
 * target splits the VMA the source lies in, so the module must look the
 * source up again after that unmap (it skips both when the target is
 * empty). The target lies after the source or before it, which makes
 * the split keep or replace the VMA structure the source was found in.
 */
static void test_fixed_inside_own_vma(uint64_t s, int target_after)
{
	const size_t len = G(SZ_2M) + 3 * PG, span = 8 * G(SZ_2M);
	size_t src_off = target_after ? G(SZ_2M) + PG : 5 * G(SZ_2M) + PG;
	size_t dst_off = target_after ? 5 * G(SZ_2M) + 2 * PG : G(SZ_2M) + 2 * PG;
	struct fastremap_remap r;
	struct t_area a;
	char name[160], *m = map_src(span, G(SZ_2M), &a), *src, *dst, *p;
	int ok;

	snprintf(name, sizeof(name), "FIXED onto the source's own VMA, %s it",
		 target_after ? "after" : "before");
	if (!m) {
		tap_skip_test("mmap failed", "%s", name);
		return;
	}
	src = m + src_off;
	dst = m + dst_off;
	t_fill_pattern(m, span, s);
	p = t_remap(fd, src, len, len, MM | FX, dst, &r);
	if (tap_ok(p == dst, "%s: lands at the requested address%s", name, err_of(p))) {
		tap_ok(t_verify_pattern_off(dst, len, s, src_off / PG, 0) < 0,
		       "%s: the destination holds the moved data", name);
		ok = t_verify_pattern(m, src_off < dst_off ? src_off : dst_off, s, 0) < 0;
		if (target_after)
			ok = ok && t_verify_pattern_off(src + len, dst_off - src_off - len, s,
						      (src_off + len) / PG, 0) < 0 &&
			     t_verify_pattern_off(dst + len, span - dst_off - len, s,
						(dst_off + len) / PG, 0) < 0;
		else
			ok = ok && t_verify_pattern_off(dst + len, src_off - dst_off - len, s,
						      (dst_off + len) / PG, 0) < 0 &&
			     t_verify_pattern_off(src + len, span - src_off - len, s,
						(src_off + len) / PG, 0) < 0;
		tap_ok(ok, "%s: the rest of the VMA keeps its data", name);
		tap_ok(t_range_unmapped(src, len), "%s: old range unmapped", name);
		tap_ok(t_range_mapped_as(dst, len, "rw-p"), "%s: destination mapped rw-p", name);
	}
	t_release(&a);
}

/* MREMAP_DONTUNMAP: the old range stays mapped and reads zero afterwards. */
static void test_dontunmap(uint64_t s, int fixed)
{
	struct t_area as, ad = { 0 };
	struct fastremap_remap r;
	struct touch t;
	char name[160], *src = map_src(G(SZ_4M), G(SZ_2M), &as), *dst = NULL, *p;

	snprintf(name, sizeof(name), "DONTUNMAP %s", fixed ? "to a fixed address" : "anywhere");
	if (!src || (fixed && !(dst = t_pick(G(SZ_4M), G(SZ_2M), &ad)))) {
		tap_skip_test("mmap failed", "%s", name);
		if (src)
			t_release(&as);
		return;
	}
	touch_region(src, G(SZ_4M), s, &t);
	p = t_remap(fd, src, G(SZ_4M), G(SZ_4M), MM | DU | (fixed ? FX : 0), dst, &r);
	if (tap_ok(p != MAP_FAILED && (!fixed || p == dst) && p != src,
		   "%s: moves%s", name, err_of(p))) {
		tap_ok(t_verify_pattern(p, G(SZ_4M), s, 0) < 0, "%s: new range has the data", name);
		tap_ok(t_range_mapped_as(src, G(SZ_4M), "rw-p"), "%s: old range still mapped rw-p", name);
		tap_ok(t_verify_zero(src, G(SZ_4M), 0) < 0, "%s: old range reads zero", name);
		if (fixed)
			check_counts(name, &r, (uintptr_t)src, (uintptr_t)dst, G(SZ_4M), &t);
		else
			check_flush_only(name, &r, G(SZ_4M) / PG);
		if (!fixed)
			munmap(p, G(SZ_4M));
	}
	t_release(&as);
	if (fixed)
		t_release(&ad);
}

/* MAYMOVE without FIXED, growing while the next page is taken: must move. */
static void test_maymove_occupied(uint64_t s)
{
	const char *name = "MAYMOVE growth 2M -> 4M with the next page occupied";
	struct t_area as;
	struct fastremap_remap r;
	char *src = map_src(G(SZ_2M), G(SZ_2M), &as), *p;

	if (!src || mmap(src + G(SZ_2M), PG, RW, ANON | MAP_FIXED, -1, 0) == MAP_FAILED) {
		tap_skip_test("mmap failed", "%s", name);
		if (src)
			t_release(&as);
		return;
	}
	t_fill_pattern(src, G(SZ_2M), s);
	t_fill_pattern(src + G(SZ_2M), PG, s + 1);
	p = t_remap(fd, src, G(SZ_2M), G(SZ_4M), MM, NULL, &r);
	if (tap_ok(p != MAP_FAILED && p != src, "%s: moves%s", name, err_of(p))) {
		tap_ok(t_verify_pattern(p, G(SZ_2M), s, 0) < 0 &&
		       t_verify_zero(p + G(SZ_2M), G(SZ_2M), 0) < 0,
		       "%s: data intact, new tail zero", name);
		tap_ok(t_range_unmapped(src, G(SZ_2M)), "%s: old range unmapped", name);
		tap_ok(t_verify_pattern(src + G(SZ_2M), PG, s + 1, 0) < 0,
		       "%s: the occupying page is untouched", name);
		tap_ok(t_range_mapped_as(p, G(SZ_4M), "rw-p"), "%s: 4M mapped rw-p", name);
		check_flush_only(name, &r, G(SZ_2M) / PG);
		munmap(p, G(SZ_4M));
	}
	t_release(&as);
}

/* ---------------------------------------------------------------------- */
/* Cases the module declines                                               */

/*
 * What module/remap.c declines on every kernel, before any change: a
 * plain shrink, growth mremap(2) makes in place, growth of mlocked
 * memory, an old_size 0 "duplicate", and the VMAs fr_vma_supported()
 * refuses (hugetlb, userfaultfd-registered...). The ioctl must answer
 * EOPNOTSUPP there, so that the caller gets mremap(2) itself: a module
 * that moved such a mapping anyway would skip what mremap(2) does for it
 * (a userfaultfd context dropped or told of the move...), which the data
 * alone does not show. 1 if declined, 0 if it succeeded, -1 if it failed
 * otherwise (both reported). In no-device mode mremap(2) does the call,
 * and success is what it gives.
 */
static int must_decline(void *p, const char *name)
{
	int e = errno;

	if (t_nodev()) {
		if (p == MAP_FAILED)
			tap_ok(0, "%s: mremap(2) fails with %s", name, t_errname(e));
		return p == MAP_FAILED ? -1 : 0;
	}
	tap_ok(p == MAP_FAILED && e == EOPNOTSUPP,
	       "%s: declined with EOPNOTSUPP (got %s)", name,
	       p == MAP_FAILED ? t_errname(e) : "success");
	if (p != MAP_FAILED)
		return 0;
	return e == EOPNOTSUPP ? 1 : -1;
}

/* A shrink in place (no MAYMOVE). */
static void decl_shrink(uint64_t s)
{
	const char *name = "plain shrink 4M -> 2M";
	struct t_area a;
	struct fastremap_remap r;
	char *src = map_src(G(SZ_4M), G(SZ_2M), &a), *p;

	if (!src) {
		tap_skip_test("mmap failed", "%s", name);
		return;
	}
	t_fill_pattern(src, G(SZ_4M), s);
	p = t_remap(fd, src, G(SZ_4M), G(SZ_2M), 0, NULL, &r);
	switch (must_decline(p, name)) {
	case 1:
		tap_ok(t_verify_pattern(src, G(SZ_4M), s, 0) < 0 &&
		       t_range_mapped_as(src, G(SZ_4M), "rw-p"),
		       "%s: declined, memory untouched", name);
		break;
	case 0:
		tap_ok(p == src && t_verify_pattern(src, G(SZ_2M), s, 0) < 0 &&
		       t_range_mapped_as(src, G(SZ_2M), "rw-p") &&
		       t_range_unmapped(src + G(SZ_2M), G(SZ_2M)),
		       "%s: done in place, tail unmapped", name);
		break;
	}
	t_release(&a);
}

/* Growth into a free range right after the mapping. */
static void decl_grow_inplace(uint64_t s, unsigned int flags)
{
	struct t_area a;
	struct fastremap_remap r;
	char name[160], *src, *p;

	snprintf(name, sizeof(name), "growth 2M -> 4M with free space after (flags %s)",
		 t_flagstr(flags));
	/* Room for 4M in the reservation: the hole must stay inside it. */
	src = t_pick(G(SZ_4M), G(SZ_2M), &a);
	if (!src || mmap(src, G(SZ_2M), RW, ANON | MAP_FIXED, -1, 0) == MAP_FAILED) {
		tap_skip_test("mmap failed", "%s", name);
		if (src)
			t_release(&a);
		return;
	}
	madvise(src, G(SZ_2M), MADV_NOHUGEPAGE);
	munmap(src + G(SZ_2M), G(SZ_2M));	/* a hole after it */
	t_fill_pattern(src, G(SZ_2M), s);
	p = t_remap(fd, src, G(SZ_2M), G(SZ_4M), flags, NULL, &r);
	switch (must_decline(p, name)) {
	case 1:
		tap_ok(t_verify_pattern(src, G(SZ_2M), s, 0) < 0 &&
		       t_range_mapped_as(src, G(SZ_2M), "rw-p") &&
		       t_range_unmapped(src + G(SZ_2M), G(SZ_2M)),
		       "%s: declined, memory untouched", name);
		break;
	case 0:
		tap_ok(t_verify_pattern(p, G(SZ_2M), s, 0) < 0 &&
		       t_verify_zero(p + G(SZ_2M), G(SZ_2M), 0) < 0 &&
		       t_range_mapped_as(p, G(SZ_4M), "rw-p"),
		       "%s: data intact, tail zero", name);
		if (p != src) {
			tap_ok(flags & MM, "%s: moved only with MAYMOVE", name);
			tap_ok(t_range_unmapped(src, G(SZ_2M)), "%s: moved, old range unmapped", name);
			munmap(p, G(SZ_4M));
		}
		break;
	}
	t_release(&a);
}

/* Growth of an mlock()ed mapping while moving. */
static void decl_mlock_grow(uint64_t s)
{
	const char *name = "mlocked 2M grows to 4M while moving";
	struct t_area as, ad;
	struct fastremap_remap r;
	struct t_smaps sm;
	char *dst, *src = map_pair(G(SZ_2M), G(SZ_4M), G(SZ_2M), &as, &ad, &dst, name), *p;

	if (!src)
		return;
	t_fill_pattern(src, G(SZ_2M), s);
	if (mlock(src, G(SZ_2M))) {
		tap_skip_test(strerror(errno), "%s: mlock", name);
		goto out;
	}
	p = t_remap(fd, src, G(SZ_2M), G(SZ_4M), MM | FX, dst, &r);
	switch (must_decline(p, name)) {
	case 1:
		t_smaps_range((uintptr_t)src, (uintptr_t)src + G(SZ_2M), &sm);
		tap_ok(t_verify_pattern(src, G(SZ_2M), s, 0) < 0 && sm.locked_kb == (long)(G(SZ_2M) >> 10) &&
		       t_range_mapped_as(dst, G(SZ_4M), "---p"),
		       "%s: declined, memory untouched and still locked", name);
		break;
	case 0:
		t_smaps_range((uintptr_t)dst, (uintptr_t)dst + G(SZ_4M), &sm);
		tap_ok(p == dst && t_verify_pattern(dst, G(SZ_2M), s, 0) < 0 &&
		       t_verify_zero(dst + G(SZ_2M), G(SZ_2M), 0) < 0 &&
		       t_range_unmapped(src, G(SZ_2M)),
		       "%s: data intact, tail zero, old range unmapped", name);
		tap_ok(sm.locked_kb == (long)(G(SZ_4M) >> 10), "%s: all 4M locked (Locked: %ld kB)",
		       name, sm.locked_kb);
		break;
	}
	munlock(dst, G(SZ_4M));
	munlock(src, G(SZ_2M));
out:
	t_release(&as);
	t_release(&ad);
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int write_long(const char *path, long v)
{
	FILE *f = fopen(path, "we");
	int ok;

	if (!f)
		return -1;
	ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* A hugetlb mapping (only if the kernel has huge pages to give). */
static void decl_hugetlb(uint64_t s)
{
	static const char nr_path[] = "/proc/sys/vm/nr_hugepages";
	const char *name = "hugetlb 4M move";
	struct t_area as, ad;
	struct fastremap_remap r;
	long nr = read_long(nr_path);
	int bumped = 0;
	char *src, *dst, *p;

	src = t_map_aligned(G(SZ_4M), G(SZ_2M), RW, ANON | MAP_HUGETLB, -1, 0, &as);
	/* In the VM, reserve two huge pages for the test (restored below). */
	if (!src && nr >= 0 && !t_nodev() && geteuid() == 0 &&
	    write_long(nr_path, nr + 2) == 0) {
		bumped = 1;
		src = t_map_aligned(G(SZ_4M), G(SZ_2M), RW, ANON | MAP_HUGETLB, -1, 0, &as);
	}
	if (!src) {
		tap_skip_test("no huge pages available", "%s", name);
		goto out;
	}
	t_fill_pattern(src, G(SZ_4M), s);
	dst = t_pick(G(SZ_4M), G(SZ_2M), &ad);
	p = dst ? t_remap(fd, src, G(SZ_4M), G(SZ_4M), MM | FX, dst, &r) : MAP_FAILED;
	if (!dst)
		tap_skip_test("mmap failed", "%s: destination", name);
	switch (dst ? must_decline(p, name) : -2) {
	case 1:
		tap_ok(t_verify_pattern(src, G(SZ_4M), s, 0) < 0 &&
		       t_range_mapped_as(dst, G(SZ_4M), "---p"),
		       "%s: declined, memory untouched", name);
		break;
	case 0:
		tap_ok(p == dst && t_verify_pattern(dst, G(SZ_4M), s, 0) < 0 &&
		       t_range_unmapped(src, G(SZ_4M)),
		       "%s: moved, data intact, old range unmapped", name);
		break;
	}
	if (dst)
		t_release(&ad);
	t_release(&as);
out:
	if (bumped)
		write_long(nr_path, nr);
}

/* A range registered with userfaultfd (missing-page mode). */
static void decl_uffd(uint64_t s)
{
	const char *name = "userfaultfd-registered 2M move";
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	struct t_area as, ad;
	struct fastremap_remap r;
	char *src, *dst, *p;
	int ufd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (ufd < 0 || ioctl(ufd, UFFDIO_API, &api)) {
		tap_skip_test(strerror(errno), "%s: no userfaultfd", name);
		if (ufd >= 0)
			close(ufd);
		return;
	}
	src = map_src(G(SZ_2M), G(SZ_2M), &as);
	dst = src ? t_pick(G(SZ_2M), G(SZ_2M), &ad) : NULL;
	if (!dst) {
		tap_skip_test("mmap failed", "%s", name);
		goto out;
	}
	t_fill_pattern(src, G(SZ_2M), s);
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)src;
	reg.range.len = G(SZ_2M);
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(ufd, UFFDIO_REGISTER, &reg)) {
		tap_skip_test(strerror(errno), "%s: UFFDIO_REGISTER", name);
		goto out2;
	}
	p = t_remap(fd, src, G(SZ_2M), G(SZ_2M), MM | FX, dst, &r);
	switch (must_decline(p, name)) {
	case 1:
		tap_ok(t_verify_pattern(src, G(SZ_2M), s, 0) < 0 &&
		       t_range_mapped_as(dst, G(SZ_2M), "---p"),
		       "%s: declined, memory untouched", name);
		break;
	case 0:
		tap_ok(p == dst && t_verify_pattern(dst, G(SZ_2M), s, 0) < 0 &&
		       t_range_unmapped(src, G(SZ_2M)),
		       "%s: moved, data intact, old range unmapped", name);
		break;
	}
out2:
	t_release(&ad);
out:
	close(ufd);
	if (src)
		t_release(&as);
}

/* old_size 0 on a shared mapping: a second mapping of the same pages. */
static void decl_shared_dup(uint64_t s)
{
	const char *name = "old_size 0 duplicates a shared mapping";
	struct t_area a;
	struct fastremap_remap r;
	char *src = t_map_aligned(G(SZ_1M), G(SZ_1M), RW, MAP_SHARED | MAP_ANONYMOUS, -1, 0, &a);
	char *p;

	if (!src) {
		tap_skip_test("mmap failed", "%s", name);
		return;
	}
	t_fill_pattern(src, G(SZ_1M), s);
	p = t_remap(fd, src, 0, G(SZ_1M), MM, NULL, &r);
	switch (must_decline(p, name)) {
	case 1:
		tap_ok(t_verify_pattern(src, G(SZ_1M), s, 0) < 0 &&
		       t_range_mapped_as(src, G(SZ_1M), "rw-s"),
		       "%s: declined, memory untouched", name);
		break;
	case 0:
		tap_ok(p != src && t_verify_pattern(p, G(SZ_1M), s, 0) < 0 &&
		       t_verify_pattern(src, G(SZ_1M), s, 0) < 0,
		       "%s: both mappings show the data", name);
		*(volatile uint64_t *)p = 42;
		tap_ok(*(volatile uint64_t *)src == 42, "%s: and share the pages", name);
		munmap(p, G(SZ_1M));
		break;
	}
	t_release(&a);
}

/* ---------------------------------------------------------------------- */
/* Accounting of a move of a part of a mapping, against mremap(2)          */

/*
 * A private writable anonymous mapping is charged to the commit limit
 * (VM_ACCOUNT: "ac" in smaps' VmFlags). A move of a part of it keeps the
 * charge: mm/mremap.c's move_vma() hides VM_ACCOUNT while the part is
 * unmapped and gives it back to the head and the tail left behind. A
 * piece left without it is never uncharged: Committed_AS leaks when it
 * goes. The same layout moves through mremap(2) and through the ioctl,
 * each from the same state, and everything must come out the same:
 * Committed_AS after the move and after everything is unmapped, the
 * VmFlags of every piece, and the growth of VmSize and VmPeak.
 */
#define AC_LEN		(6 * G(SZ_1M))
#define AC_PIECE	(2 * G(SZ_1M))

struct acct_run {
	int moved;			/* landed, data intact */
	long commit, commit_left;	/* Committed_AS deltas (kB): moved, all unmapped */
	long vmsize, vmpeak;		/* VmSize and VmPeak deltas (kB) after the move */
	char vmas[640];			/* the pieces and their VmFlags */
};

/* The VMAs of [lo, hi) as "tag+start-+end perms flags; " into b. */
static size_t acct_vmas(char *b, size_t n, const char *tag, uintptr_t lo, uintptr_t hi)
{
	struct t_vma v[8];
	int k = t_vmas_read(lo, hi, v, ARRAY_SIZE(v));
	size_t at = 0;

	if (k < 0 || k > (int)ARRAY_SIZE(v))
		return snprintf(b, n, "%s: unreadable; ", tag);
	for (int i = 0; i < k && at < n; i++)
		at += snprintf(b + at, n - at, "%s+%#lx-+%#lx %s %s; ", tag,
			       (unsigned long)(v[i].start - lo), (unsigned long)(v[i].end - lo),
			       v[i].perms, v[i].flags);
	return at < n ? at : n;
}

static long status_kb(const char *key)
{
	return t_proc_field("/proc/self/status", key);
}

/*
 * Maps AC_LEN, moves AC_PIECE of it from @off to a new place with the
 * ioctl (or mremap(2)), and measures. VmPeak is a high-water mark that an
 * earlier test may have left far above VmSize: a PROT_NONE filler first
 * lifts VmSize to it, so that any growth of the peak shows.
 */
static void acct_run(size_t off, int use_ioctl, uint64_t s, struct acct_run *o)
{
	struct t_area as = { 0 }, ad = { 0 };
	long peak = status_kb("VmPeak"), size = status_kb("VmSize"), c0;
	size_t fill_len = peak > size ? (size_t)(peak - size) << 10 : 0;
	char *fill = fill_len ? mmap(NULL, fill_len, PROT_NONE,
				     ANON | MAP_NORESERVE, -1, 0) : NULL;
	char *src, *dst, *p = MAP_FAILED;
	size_t at;

	memset(o, 0, sizeof(*o));
	peak = status_kb("VmPeak");
	size = status_kb("VmSize");
	c0 = t_committed_kb();
	src = map_src(AC_LEN, G(SZ_2M), &as);
	dst = src ? t_pick(AC_PIECE, G(SZ_2M), &ad) : NULL;
	if (dst) {
		t_fill_pattern(src, AC_LEN, s);
		p = use_ioctl ? t_remap(fd, src + off, AC_PIECE, AC_PIECE, MM | FX, dst, NULL) :
			    t_mremap(src + off, AC_PIECE, AC_PIECE, MM | FX, dst);
	}
	o->commit = t_committed_kb() - c0;
	o->vmsize = status_kb("VmSize") - size;
	o->vmpeak = status_kb("VmPeak") - peak;
	o->moved = p == dst && t_verify_pattern_off(dst, AC_PIECE, s, off / PG, 0) < 0;
	if (src) {
		at = acct_vmas(o->vmas, sizeof(o->vmas), "src", (uintptr_t)src,
			       (uintptr_t)src + AC_LEN);
		acct_vmas(o->vmas + at, sizeof(o->vmas) - at, "dst", (uintptr_t)dst,
			  (uintptr_t)dst + AC_PIECE);
		t_release(&as);
	}
	if (dst)
		t_release(&ad);
	o->commit_left = t_committed_kb() - c0;
	if (fill && fill != MAP_FAILED)
		munmap(fill, fill_len);
}

static void test_acct_partial(uint64_t s, size_t off, const char *part)
{
	struct acct_run m, f;
	long cm = LONG_MAX, cf = LONG_MAX, lm = LONG_MAX, lf = LONG_MAX;
	char name[160];
	int tries = 0;

	snprintf(name, sizeof(name), "accounting: FIXED move of the %s (2M at +%zuM) of a 6M private mapping",
		 part, off / G(SZ_1M));
	if (t_committed_kb() < 0) {
		tap_skip_test("Committed_AS cannot be read exactly (not root)", "%s", name);
		return;
	}
	/*
	 * Committed_AS is the whole system's: another process's charge in
	 * between shows as noise. The smallest delta of each side over up to
	 * three tries, stopping at the first try where they agree.
	 */
	do {
		acct_run(off, 0, s, &m);
		acct_run(off, 1, s, &f);
		cm = m.commit < cm ? m.commit : cm;
		cf = f.commit < cf ? f.commit : cf;
		lm = m.commit_left < lm ? m.commit_left : lm;
		lf = f.commit_left < lf ? f.commit_left : lf;
	} while (++tries < 3 && (cm != cf || lm != lf));
	if (!tap_ok(m.moved && f.moved, "%s: both move, data intact (mremap(2) %s, ioctl %s)",
		    name, m.moved ? "yes" : "no", f.moved ? "yes" : "no"))
		return;
	tap_ok(cf == cm, "%s: Committed_AS after the move as with mremap(2) (%+ld kB, mremap(2) %+ld kB)",
	       name, cf, cm);
	tap_ok(lf == lm, "%s: Committed_AS once all is unmapped as with mremap(2) (%+ld kB, mremap(2) %+ld kB)",
	       name, lf, lm);
	if (!tap_ok(!strcmp(f.vmas, m.vmas), "%s: every piece's VmFlags as with mremap(2)", name)) {
		tap_diag("%s: ioctl:     %s", name, f.vmas);
		tap_diag("%s: mremap(2): %s", name, m.vmas);
	}
	tap_ok(f.vmsize == m.vmsize && f.vmpeak == m.vmpeak,
	       "%s: VmSize and VmPeak grow as with mremap(2) (%+ld/%+ld kB, mremap(2) %+ld/%+ld kB)",
	       name, f.vmsize, f.vmpeak, m.vmsize, m.vmpeak);
	tap_diag("%s: %d tries; pieces: %s", name, tries, f.vmas);
}

/* ---------------------------------------------------------------------- */
/* Invalid calls on twin layouts: the errno of mremap(2), nothing changed  */

/*
 * A twin: a 2 MiB-aligned 32 MiB reservation holding, at these offsets,
 * src (1M private anon), dst (1M private anon) directly followed by a
 * 1M hole, shm (1M shared anon), and free reserved space from W_FREE on.
 * Every FIXED destination of the invalid cases lies inside the twin or
 * beyond the user address space: a buggy call must not be able to hit
 * the program's own mappings.
 */
#define TW_LEN		(32 * SZ_1M)
#define TW_SRC		(2 * SZ_1M)
#define TW_DST		(6 * SZ_1M)
#define TW_HOLE		(7 * SZ_1M)
#define TW_SHM		(10 * SZ_1M)
#define TW_FREE		(16 * SZ_1M)	/* 16M of free reserved space */

struct twin {
	struct t_area a;
	char *b;
	uint64_t seed;
	int nmaps;
	struct t_map maps[32];
};

static int twin_build(struct twin *t, uint64_t s)
{
	memset(t, 0, sizeof(*t));
	t->seed = s;
	if (!t_reserve(TW_LEN + SZ_2M, &t->a))
		return -1;
	t->b = (char *)T_ALIGN_UP((uintptr_t)t->a.base, SZ_2M);
	if (mmap(t->b + TW_SRC, SZ_1M, RW, ANON | MAP_FIXED, -1, 0) == MAP_FAILED ||
	    mmap(t->b + TW_DST, SZ_1M, RW, ANON | MAP_FIXED, -1, 0) == MAP_FAILED ||
	    munmap(t->b + TW_HOLE, SZ_1M) ||
	    mmap(t->b + TW_SHM, SZ_1M, RW, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0) == MAP_FAILED) {
		t_release(&t->a);
		return -1;
	}
	t_fill_pattern(t->b + TW_SRC, SZ_1M, s);
	t_fill_pattern(t->b + TW_DST, SZ_1M, s + 1);
	t_fill_pattern(t->b + TW_SHM, SZ_1M, s + 2);
	return 0;
}

static void twin_snapshot(struct twin *t)
{
	t->nmaps = t_maps_read((uintptr_t)t->a.base, (uintptr_t)t->a.base + t->a.len,
			     t->maps, ARRAY_SIZE(t->maps));
}

/* Whether the twin is as it was at the snapshot; why not in *why. */
static int twin_unchanged(struct twin *t, const char **why)
{
	struct t_map now[32];
	int n = t_maps_read((uintptr_t)t->a.base, (uintptr_t)t->a.base + t->a.len,
			  now, ARRAY_SIZE(now));

	*why = "mappings changed";
	if (n != t->nmaps || n > (int)ARRAY_SIZE(now))
		return 0;
	for (int i = 0; i < n; i++)
		if (now[i].start != t->maps[i].start || now[i].end != t->maps[i].end ||
		    strcmp(now[i].perms, t->maps[i].perms) ||
		    now[i].off != t->maps[i].off || now[i].inode != t->maps[i].inode)
			return 0;
	*why = "contents changed";
	return t_verify_pattern(t->b + TW_SRC, SZ_1M, t->seed, 0) < 0 &&
	       t_verify_pattern(t->b + TW_DST, SZ_1M, t->seed + 1, 0) < 0 &&
	       t_verify_pattern(t->b + TW_SHM, SZ_1M, t->seed + 2, 0) < 0;
}

enum where { W_NULL, W_ABS, W_SRC, W_DST, W_HOLE, W_SHM, W_FREE };

#define WRAP_SIZE	((size_t)-3)	/* old_size: up to 1M past the top of the address space */

struct bad_case {
	const char *name;
	enum where old;
	long old_delta;
	size_t old_size, new_size;
	unsigned int flags;
	enum where new;
	uintptr_t new_delta;	/* W_ABS: the address itself */
	int may_decline;	/* a declinable category: EOPNOTSUPP accepted */
};

static const struct bad_case bad_cases[] = {
	{ "unknown mremap flag bit 3", W_SRC, 0, SZ_1M, SZ_1M, MM | FX | 0x8, W_DST, 0, 0 },
	{ "unknown mremap flag bit 31", W_SRC, 0, SZ_1M, SZ_1M, MM | 0x80000000u, W_NULL, 0, 0 },
	{ "FIXED without MAYMOVE", W_SRC, 0, SZ_1M, SZ_1M, FX, W_DST, 0, 0 },
	{ "DONTUNMAP without MAYMOVE", W_SRC, 0, SZ_1M, SZ_1M, DU, W_FREE, 0, 0 },
	{ "DONTUNMAP growing", W_SRC, 0, SZ_1M, 2 * SZ_1M, MM | FX | DU, W_DST, 0, 0 },
	{ "DONTUNMAP shrinking", W_SRC, 0, SZ_1M, SZ_1M / 2, MM | DU, W_NULL, 0, 0 },
	{ "misaligned old address (+1)", W_SRC, 1, SZ_1M, SZ_1M, MM | FX, W_DST, 0, 0 },
	{ "misaligned old address (+2048)", W_SRC, 2048, SZ_1M, SZ_1M, MM | FX, W_DST, 0, 0 },
	{ "misaligned new address (+1)", W_SRC, 0, SZ_1M, SZ_1M, MM | FX, W_DST, 1, 0 },
	{ "misaligned new address (+2048)", W_SRC, 0, SZ_1M, SZ_1M, MM | FX, W_DST, 2048, 0 },
	{ "new_size 0", W_SRC, 0, SZ_1M, 0, MM | FX, W_DST, 0, 0 },
	{ "new_size 0 without FIXED", W_SRC, 0, SZ_1M, 0, MM, W_NULL, 0, 0 },
	{ "destination starts inside the source", W_SRC, 0, SZ_1M, SZ_1M, MM | FX, W_SRC, SZ_1M / 2, 0 },
	{ "destination ends inside the source", W_SRC, 0, SZ_1M, SZ_1M, MM | FX, W_SRC, -(SZ_1M / 2), 0 },
	{ "destination (grown) covers the source", W_SRC, 0, SZ_1M, 3 * SZ_1M, MM | FX, W_SRC, -SZ_1M, 0 },
	{ "source unmapped", W_HOLE, 0, SZ_1M, SZ_1M, MM | FX, W_DST, 0, 0 },
	{ "source unmapped, growing without FIXED", W_HOLE, 0, SZ_1M, 2 * SZ_1M, MM, W_NULL, 0, 0 },
	{ "source runs into a hole, FIXED move", W_DST, SZ_1M / 2, SZ_1M, SZ_1M, MM | FX, W_FREE, 0, 0 },
	{ "source runs into a hole, growing", W_DST, SZ_1M / 2, SZ_1M, 2 * SZ_1M, MM, W_NULL, 0, 0 },
	{ "source spans two mappings and a hole", W_SRC, 0, 6 * SZ_1M, 6 * SZ_1M, MM | FX, W_FREE, 0, 0 },
	{ "new range beyond the user address space (0x7ffffffff000 + 1M)",
	  W_SRC, 0, SZ_1M, SZ_1M, MM | FX, W_ABS, 0x7ffffffff000UL, 0 },
	{ "new range beyond a 56-bit address space (0xfffffffffff000 + 1M)",
	  W_SRC, 0, SZ_1M, SZ_1M, MM | FX, W_ABS, 0xfffffffffff000UL, 0 },
	{ "new_addr ~0UL & ~4095", W_SRC, 0, SZ_1M, SZ_1M, MM | FX, W_ABS, ~0UL & ~4095UL, 0 },
	{ "new_size 128 TiB", W_SRC, 0, SZ_1M, 1UL << 47, MM, W_NULL, 0, 0 },
	{ "new_size ~0UL", W_SRC, 0, SZ_1M, ~0UL, MM, W_NULL, 0, 0 },
	{ "old_size ~0UL (page-aligns to 0, private mapping)", W_SRC, 0, ~0UL, SZ_1M, MM | FX, W_DST, 0, 0 },
	{ "old_size ~0UL without FIXED", W_SRC, 0, ~0UL, SZ_1M, MM, W_NULL, 0, 0 },
	{ "old range wraps around the address space", W_SRC, 0, WRAP_SIZE, SZ_1M, MM | FX, W_FREE, 0, 0 },
	{ "growing in place without MAYMOVE, next range taken", W_SRC, 0, SZ_1M, 4 * SZ_1M, 0, W_NULL, 0, 1 },
	/* Beyond even a 56-bit TASK_SIZE: 7.x refuses it before the lookup. */
	{ "source unmapped, new_size 2^59", W_HOLE, 0, 0x19000, 1UL << 59, 0, W_NULL, 0, 0 },
	{ "source unmapped, new_size 2^59, MAYMOVE", W_HOLE, 0, SZ_1M, 1UL << 59, MM, W_NULL, 0, 0 },
	{ "growing to 2^60 bytes", W_SRC, 0, SZ_1M, 1UL << 60, MM, W_NULL, 0, 1 },
};

static void *twin_addr(const struct twin *t, enum where w, uintptr_t delta)
{
	static const size_t at[] = {
		[W_SRC] = TW_SRC, [W_DST] = TW_DST, [W_HOLE] = TW_HOLE,
		[W_SHM] = TW_SHM, [W_FREE] = TW_FREE,
	};

	if (w == W_NULL)
		return NULL;
	/*
	 * Written for 4 KiB pages: the page holding the address, so that a
	 * larger page leaves it beyond the address space, not misaligned.
	 */
	if (w == W_ABS)
		return (void *)(delta & ~(PG - 1));
	return t->b + at[w] + delta;
}

struct call {
	char *old, *new_addr;
	size_t old_size, new_size;
	unsigned int flags;
};

static void make_call(const struct bad_case *bc, const struct twin *t, struct call *c)
{
	c->old = twin_addr(t, bc->old, bc->old_delta);
	c->new_addr = twin_addr(t, bc->new, bc->new_delta);
	c->old_size = bc->old_size == WRAP_SIZE ?
		      (size_t)(0 - (uintptr_t)c->old) + SZ_1M : bc->old_size;
	c->new_size = bc->new_size;
	c->flags = bc->flags;
}

/* Unmaps a successful result unless it lies in the twin. */
static void drop_result(const struct twin *t, void *p, size_t len)
{
	if (p != MAP_FAILED && ((char *)p < t->a.base || (char *)p >= t->a.base + t->a.len))
		munmap(p, len);
}

static void run_bad_case(const struct bad_case *bc, uint64_t s)
{
	struct twin ta, tb;
	struct call ca, cb;
	const char *why;
	void *p;
	int ea, eb, a_changed, same;

	if (twin_build(&ta, s)) {
		tap_skip_test("mmap failed", "invalid: %s", bc->name);
		return;
	}
	if (twin_build(&tb, s)) {
		tap_skip_test("mmap failed", "invalid: %s", bc->name);
		t_release(&ta.a);
		return;
	}
	make_call(bc, &ta, &ca);
	make_call(bc, &tb, &cb);

	/* The reference: mremap(2) on twin A. */
	twin_snapshot(&ta);
	p = t_mremap(ca.old, ca.old_size, ca.new_size, ca.flags, ca.new_addr);
	ea = errno;
	if (p != MAP_FAILED) {
		tap_skip_test("mremap(2) accepts it on this kernel", "invalid: %s", bc->name);
		drop_result(&ta, p, ca.new_size);
		goto out;
	}
	a_changed = !twin_unchanged(&ta, &why);

	/* The ioctl on twin B. */
	twin_snapshot(&tb);
	p = t_remap(fd, cb.old, cb.old_size, cb.new_size, cb.flags, cb.new_addr, NULL);
	eb = errno;
	if (p == MAP_FAILED && eb == EOPNOTSUPP && bc->may_decline)
		tap_diag("invalid: %s: declined (EOPNOTSUPP), mremap(2) says %s",
			 bc->name, t_errname(ea));
	else
		tap_ok(p == MAP_FAILED && eb == ea,
		       "invalid: %s -> %s like mremap(2) (got %s)", bc->name,
		       t_errname(ea), p == MAP_FAILED ? t_errname(eb) : "success");
	drop_result(&tb, p, cb.new_size);
	if (p != MAP_FAILED)
		goto out;
	if (t_nodev() && a_changed) {
		tap_skip_test("mremap(2) itself changes memory here",
			      "invalid: %s: memory unchanged", bc->name);
		goto out;
	}
	same = twin_unchanged(&tb, &why);
	tap_ok(same, "invalid: %s: memory unchanged%s%s%s", bc->name,
	       a_changed ? " (mremap(2) changed it)" : "", same ? "" : ": ",
	       same ? "" : why);
out:
	t_release(&ta.a);
	t_release(&tb.a);
}

/*
 * mseal()ed source: EPERM where the kernel has mseal, unless an earlier
 * check refuses the call first (7.x checks an absurd new size before it
 * looks at the source). Leaks both twins.
 */
static const struct {
	const char *name;
	size_t old_size, new_size;
	unsigned int flags;
	int fixed;		/* to the twin's free space */
} sealed_calls[] = {
	{ "a FIXED move", SZ_1M, SZ_1M, MM | FX, 1 },
	{ "growing to 2^60 bytes", 0xa000, 1UL << 60, MM, 0 },
};

static void test_sealed(uint64_t s)
{
	const char *name = "invalid: sealed source (mseal)";
	struct twin ta, tb;
	const char *why;
	void *p;
	int ea;

	if (twin_build(&ta, s)) {
		tap_skip_test("mmap failed", "%s", name);
		return;
	}
	if (twin_build(&tb, s)) {
		tap_skip_test("mmap failed", "%s", name);
		t_release(&ta.a);
		return;
	}
	if (syscall(462 /* mseal */, ta.b + TW_SRC, SZ_1M, 0) ||
	    syscall(462, tb.b + TW_SRC, SZ_1M, 0)) {
		tap_skip_test("no mseal on this kernel", "%s", name);
		t_release(&ta.a);
		t_release(&tb.a);
		return;
	}
	for (size_t k = 0; k < ARRAY_SIZE(sealed_calls); k++) {
		const char *what = sealed_calls[k].name;
		size_t os = sealed_calls[k].old_size, ns = sealed_calls[k].new_size;
		unsigned int fl = sealed_calls[k].flags;
		int fixed = sealed_calls[k].fixed;

		p = t_mremap(ta.b + TW_SRC, os, ns, fl, fixed ? ta.b + TW_FREE : NULL);
		ea = errno;
		if (p != MAP_FAILED) {
			tap_skip_test("mremap(2) accepts it on this kernel", "%s, %s", name, what);
			continue;
		}
		twin_snapshot(&tb);
		p = t_remap(fd, tb.b + TW_SRC, os, ns, fl, fixed ? tb.b + TW_FREE : NULL, NULL);
		tap_ok(p == MAP_FAILED && errno == ea, "%s, %s -> %s like mremap(2) (got %s)",
		       name, what, t_errname(ea), p == MAP_FAILED ? t_errname(errno) : "success");
		tap_ok(twin_unchanged(&tb, &why), "%s, %s: memory unchanged", name, what);
	}
	/* The twins cannot be unmapped any more: left in place. */
}

/* ---------------------------------------------------------------------- */
/* The structure's ABI                                                     */

struct abi_case {
	const char *name;
	void (*mutate)(struct fastremap_remap *r);
	int want;
};

static void m_flags(struct fastremap_remap *r) { r->flags = 1; }
static void m_flags31(struct fastremap_remap *r) { r->flags = 1u << 31; }
static void m_pad(struct fastremap_remap *r) { r->__pad0 = 1; }
static void m_res0(struct fastremap_remap *r) { r->reserved[0] = 1; }
static void m_res0hi(struct fastremap_remap *r) { r->reserved[0] = 1ULL << 63; }
static void m_size0(struct fastremap_remap *r) { r->size = 0; }
static void m_size_small(struct fastremap_remap *r) { r->size = FASTREMAP_REMAP_SIZE_VER0 - 8; }
static void m_size_huge(struct fastremap_remap *r) { r->size = 4097; }
static void m_size_max(struct fastremap_remap *r) { r->size = UINT32_MAX; }

static const struct abi_case abi_cases[] = {
	{ "flags bit 0", m_flags, EINVAL },
	{ "flags bit 31", m_flags31, EINVAL },
	{ "non-zero __pad0", m_pad, EINVAL },
	{ "non-zero reserved[0]", m_res0, EINVAL },
	{ "reserved[0] bit 63", m_res0hi, EINVAL },
	{ "size 0", m_size0, EINVAL },
	{ "size below the first published size", m_size_small, EINVAL },
	{ "size above a page", m_size_huge, EINVAL },
	{ "size UINT32_MAX", m_size_max, EINVAL },
};

/* A valid move of twin src to the free range, for the ABI tests. */
static void abi_request(const struct twin *t, struct fastremap_remap *r)
{
	t_req_init(r, t->b + TW_SRC, SZ_1M, SZ_1M, MM | FX, t->b + TW_FREE);
}

static void test_abi(uint64_t s)
{
	struct {
		struct fastremap_remap r;
		uint8_t tail[4096 - sizeof(struct fastremap_remap)];
	} big;
	struct fastremap_remap r;
	struct twin t;
	const char *why;
	long page = sysconf(_SC_PAGESIZE);
	char *edge;

	if (t_nodev()) {
		tap_skip_test("no-device mode", "ABI checks of struct fastremap_remap");
		return;
	}
	if (twin_build(&t, s)) {
		tap_skip_test("mmap failed", "ABI checks");
		return;
	}
	twin_snapshot(&t);
	for (size_t k = 0; k < ARRAY_SIZE(abi_cases); k++) {
		abi_request(&t, &r);
		abi_cases[k].mutate(&r);
		tap_errno(ioctl(fd, FASTREMAP_IOC_REMAP, &r), abi_cases[k].want,
			  "ABI: %s -> %s", abi_cases[k].name, t_errname(abi_cases[k].want));
		tap_ok(twin_unchanged(&t, &why), "ABI: %s: memory unchanged", abi_cases[k].name);
	}
	tap_errno(ioctl(fd, FASTREMAP_IOC_REMAP, NULL), EFAULT, "ABI: NULL -> EFAULT");
	tap_errno(ioctl(fd, FASTREMAP_IOC_REMAP, (void *)-4096L), EFAULT,
		  "ABI: kernel address -> EFAULT");

	/* A struct whose tail runs into an unmapped page. */
	edge = mmap(NULL, 2 * page, RW, ANON, -1, 0);
	if (edge != MAP_FAILED) {
		struct fastremap_remap *e = (void *)(edge + page - 16);

		munmap(edge + page, page);
		memset(e, 0, 16);
		e->size = sizeof(*e);
		tap_errno(ioctl(fd, FASTREMAP_IOC_REMAP, e), EFAULT,
			  "ABI: struct crossing into an unmapped page -> EFAULT");
		munmap(edge, page);
	}
	tap_ok(twin_unchanged(&t, &why), "ABI: EFAULT cases: memory unchanged");

	/* A page-sized struct with a non-zero unknown byte at its end. */
	memset(&big, 0, sizeof(big));
	abi_request(&t, &big.r);
	big.r.size = sizeof(big);
	big.tail[sizeof(big.tail) - 1] = 1;
	tap_errno(ioctl(fd, FASTREMAP_IOC_REMAP, &big), EINVAL,
		  "ABI: page-sized struct with a non-zero unknown tail -> EINVAL");
	tap_ok(twin_unchanged(&t, &why), "ABI: non-zero tail: memory unchanged");

	/* Output fields are ignored on input. */
	abi_request(&t, &r);
	r.moved_pud = r.moved_pmd = r.moved_thp = r.moved_pte = r.tlb_flushes = 77;
	tap_ok(ioctl(fd, FASTREMAP_IOC_REMAP, &r) == 0 &&
	       r.new_addr == (uintptr_t)(t.b + TW_FREE) && r.tlb_flushes == 1 &&
	       t_verify_pattern(t.b + TW_FREE, SZ_1M, s, 0) < 0,
	       "ABI: garbage in output fields is ignored on input (move done, counters rewritten)");

	/* ... and a zero tail past the known fields is accepted. */
	memset(&big, 0, sizeof(big));
	t_req_init(&big.r, t.b + TW_FREE, SZ_1M, SZ_1M, MM | FX, t.b + TW_SRC);
	big.r.size = sizeof(big);
	tap_ok(ioctl(fd, FASTREMAP_IOC_REMAP, &big) == 0 &&
	       big.r.new_addr == (uintptr_t)(t.b + TW_SRC) &&
	       t_verify_pattern(t.b + TW_SRC, SZ_1M, s, 0) < 0,
	       "ABI: page-sized struct with a zero tail is accepted and moves");
	/* The first published size, too. */
	t_req_init(&r, t.b + TW_SRC, SZ_1M, SZ_1M, MM | FX, t.b + TW_FREE);
	r.size = FASTREMAP_REMAP_SIZE_VER0;
	tap_ok(ioctl(fd, FASTREMAP_IOC_REMAP, &r) == 0 &&
	       t_verify_pattern(t.b + TW_FREE, SZ_1M, s, 0) < 0,
	       "ABI: the first published size (%d) is accepted", FASTREMAP_REMAP_SIZE_VER0);
	t_release(&t.a);
}

/* ---------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	struct fastremap_info info;
	struct rlimit rl;
	double t0 = t_now();
	uint64_t s;

	t_parse_args(&argc, argv);
	seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);
	tap_diag("pattern seed %" PRIu64 " (rerun with: t_remap %s%" PRIu64 ")", seed,
		 t_nodev() ? "--selftest-mremap " : "", seed);
	/* Generous locking limits for the mlock case. */
	rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
	setrlimit(RLIMIT_MEMLOCK, &rl);

	fd = t_open();
	if (!tap_ok(fd >= 0, "open %s (%s)", t_nodev() ? "/dev/null" : FASTREMAP_DEVICE,
		    fd < 0 ? strerror(errno) : "ok"))
		return tap_done();
	if (t_info(fd, &info) == 0 && !t_nodev()) {
		have_pud = !!(info.features & FASTREMAP_FEAT_MOVE_PUD);
		tap_diag("features %#llx: PUD moves %s", (unsigned long long)info.features,
			 have_pud ? "expected" : "not expected (counted as PMDs)");
	}

	s = seed;
	for (size_t k = 0; k < ARRAY_SIZE(moves); k++)
		run_move(&moves[k], s += 0x1000);
	test_grow_fixed(s += 0x1000);
	test_shrink_fixed(s += 0x1000, SZ_2M);
	test_shrink_fixed(s += 0x1000, SZ_4K);
	test_fixed_replace(s += 0x1000, SZ_2M);
	test_fixed_replace(s += 0x1000, SZ_4K);
	test_fixed_inside_own_vma(s += 0x1000, 1);
	test_fixed_inside_own_vma(s += 0x1000, 0);
	test_dontunmap(s += 0x1000, 1);
	test_dontunmap(s += 0x1000, 0);
	test_maymove_occupied(s += 0x1000);

	decl_shrink(s += 0x1000);
	decl_grow_inplace(s += 0x1000, 0);
	decl_grow_inplace(s += 0x1000, MM);
	decl_mlock_grow(s += 0x1000);
	decl_hugetlb(s += 0x1000);
	decl_uffd(s += 0x1000);
	decl_shared_dup(s += 0x1000);

	test_acct_partial(s += 0x1000, 0, "head");
	test_acct_partial(s += 0x1000, AC_PIECE, "middle");
	test_acct_partial(s += 0x1000, AC_LEN - AC_PIECE, "tail");

	for (size_t k = 0; k < ARRAY_SIZE(bad_cases); k++)
		run_bad_case(&bad_cases[k], s += 0x1000);
	test_abi(s += 0x1000);
	test_sealed(s += 0x1000);	/* last: leaks its twins */

	close(fd);
	tap_diag("total %.2f s", t_now() - t0);
	return tap_done();
}
