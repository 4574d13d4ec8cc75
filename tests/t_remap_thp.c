// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_REMAP on transparent huge pages: a PMD-aligned move keeps
 * every THP whole (same AnonHugePages at the destination, moved_thp), a
 * move misaligned by a page splits them and moves PTEs, a move of a
 * range ending inside a THP moves the whole ones and splits the last, and
 * THPs moved into another GiB (another PMD table) take their deposited
 * PTE tables along: splitting and unmapping them there withdraws those.
 * Skips when the kernel has no THP or gives none to a MADV_HUGEPAGE
 * region. Runs as root inside the test VM with the module loaded.
 *
 * Usage: t_remap_thp [--selftest-mremap] [SEED]
 */
#define _GNU_SOURCE
#include "tlib.h"

#define RW	(PROT_READ | PROT_WRITE)
#define ANON	(MAP_PRIVATE | MAP_ANONYMOUS)
#define MM	MREMAP_MAYMOVE
#define FX	MREMAP_FIXED
#define LEN	(4 * PMD_SZ)	/* four THPs */
#define THP_KB	((long)(PMD_SZ >> 10))
#define PART	(PMD_SZ + PMD_SZ / 2)	/* one whole THP, half of the next */

static int fd = -1;

static long anon_huge_kb(const void *p, size_t len)
{
	struct t_smaps sm;

	if (t_smaps_range((uintptr_t)p, (uintptr_t)p + len, &sm))
		return -1;
	return sm.anon_huge_kb;
}

/* THP is configured and not disabled. */
static int thp_usable(const char **why)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
	char buf[128] = "";

	if (!f) {
		*why = "no /sys/kernel/mm/transparent_hugepage (THP not configured)";
		return 0;
	}
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	tap_diag("transparent_hugepage/enabled: %.*s", (int)strcspn(buf, "\n"), buf);
	if (strstr(buf, "[never]")) {
		*why = "THP disabled ([never])";
		return 0;
	}
	return 1;
}

/* A PMD-aligned MADV_HUGEPAGE region of len bytes, filled. */
static char *map_thp(size_t len, uint64_t s, struct t_area *a)
{
	char *p = t_map_aligned(len, PMD_SZ, RW, ANON, -1, 0, a);

	if (!p)
		return NULL;
	if (madvise(p, len, MADV_HUGEPAGE)) {
		t_release(a);
		return NULL;
	}
	t_fill_pattern(p, len, s);
	return p;
}

static void diag_counts(const char *name, const struct fastremap_remap *r)
{
	if (t_counted(r))
		tap_diag("%s: pud/pmd/thp/pte %llu/%llu/%llu/%llu, %llu TLB flush(es)",
			 name, (unsigned long long)r->moved_pud,
			 (unsigned long long)r->moved_pmd,
			 (unsigned long long)r->moved_thp,
			 (unsigned long long)r->moved_pte,
			 (unsigned long long)r->tlb_flushes);
}

/*
 * Moves the LEN bytes at from to a place aligned to align (t_pick()), and
 * checks that they landed with their data and left from unmapped: the
 * destination, or NULL (skipped or failed, said).
 */
static char *move_to(const char *name, char *from, size_t align, struct t_area *a,
		     uint64_t seed, struct fastremap_remap *r)
{
	char *d = t_pick(LEN, align, a), *p;

	if (!d) {
		tap_skip_test("cannot reserve", "%s", name);
		return NULL;
	}
	p = t_remap(fd, from, LEN, LEN, MM | FX, d, r);
	if (!tap_ok(p == d, "%s: lands at the requested address (%s)", name,
		    p == MAP_FAILED ? t_errname(errno) : "ok"))
		return NULL;
	tap_ok(t_verify_pattern(d, LEN, seed, 0) < 0, "%s: data intact", name);
	tap_ok(t_range_unmapped(from, LEN), "%s: old range unmapped", name);
	return d;
}

int main(int argc, char **argv)
{
	struct t_area as, a1, a2 = { 0 }, a3 = { 0 }, a4 = { 0 }, a5 = { 0 }, a6 = { 0 };
	struct fastremap_remap r;
	const char *why;
	char *src, *d1, *d2, *d3, *d4, *p, name[64];
	long ahp, nthp, ahp2;
	uint64_t seed;

	t_parse_args(&argc, argv);
	seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);
	tap_diag("pattern seed %" PRIu64, seed);
	if (!thp_usable(&why)) {
		tap_skip_test(why, "THP moves");
		return tap_done();
	}
	fd = t_open();
	if (!tap_ok(fd >= 0, "open the device (%s)", fd < 0 ? strerror(errno) : "ok"))
		return tap_done();

	src = map_thp(LEN, seed, &as);
	if (!tap_ok(src != NULL, "map a %zuM-aligned %zuM MADV_HUGEPAGE region", PMD_SZ >> 20,
		    LEN >> 20))
		return tap_done();
	ahp = anon_huge_kb(src, LEN);
	nthp = ahp / THP_KB;
	tap_diag("AnonHugePages after touching: %ld kB (%ld THPs of 4)", ahp, nthp);
	if (ahp <= 0) {
		tap_skip_test("AnonHugePages stays 0 after touching", "THP moves");
		t_release(&as);
		close(fd);
		return tap_done();
	}

	/* 1. PMD-aligned: every THP moves whole. */
	snprintf(name, sizeof(name), "THP move to a %zuM-aligned address", PMD_SZ >> 20);
	d1 = move_to(name, src, PMD_SZ, &a1, seed, &r);
	if (!d1)
		goto out;
	ahp2 = anon_huge_kb(d1, LEN);
	tap_ok(ahp2 == ahp, "%s: AnonHugePages %ld kB at the destination, was %ld kB",
	       name, ahp2, ahp);
	diag_counts(name, &r);
	if (t_counted(&r)) {
		tap_ok(r.moved_thp == (uint64_t)nthp && r.moved_thp > 0,
		       "%s: moved_thp %llu == THPs %ld", name,
		       (unsigned long long)r.moved_thp, nthp);
		tap_ok(r.moved_pte == 0 && r.moved_pud == 0 &&
		       r.moved_pmd == (uint64_t)(4 - nthp),
		       "%s: no PTEs moved, PTE tables only where no THP (%ld)", name, 4 - nthp);
		tap_ok(r.tlb_flushes == 1, "%s: one TLB flush (got %llu)", name,
		       (unsigned long long)r.tlb_flushes);
	}

	/* 2. Misaligned by a page: THPs are split, their PTEs move. */
	snprintf(name, sizeof(name), "THP move to a %zuK-misaligned address", PG >> 10);
	d2 = move_to(name, d1, PG, &a2, seed, &r);	/* page- but not 2-page-aligned */
	if (!d2)
		goto out2;
	ahp2 = anon_huge_kb(d2, LEN);
	tap_ok(ahp2 == 0, "%s: no PMD-mapped THP at the destination (AnonHugePages %ld kB)",
	       name, ahp2);
	diag_counts(name, &r);
	if (t_counted(&r)) {
		tap_ok(r.moved_thp == 0 && r.moved_pmd == 0 && r.moved_pud == 0 &&
		       r.moved_pte == LEN / PG,
		       "%s: all %lu pages moved as PTEs (pte %llu)", name, LEN / PG,
		       (unsigned long long)r.moved_pte);
		tap_ok(r.tlb_flushes == 1, "%s: one TLB flush (got %llu)", name,
		       (unsigned long long)r.tlb_flushes);
	}

	/* 3. A range ending inside a THP: whole ones move, the last splits. */
	snprintf(name, sizeof(name), "THP move of %zuM (one whole THP, half of the next)",
		 PART >> 20);
	p = map_thp(LEN, seed + 1, &a3);
	if (!p || anon_huge_kb(p, LEN) != 4 * THP_KB) {
		tap_skip_test("not all four THPs allocated", "%s", name);
		goto out2;
	}
	d3 = t_pick(PART, PMD_SZ, &a4);
	if (!d3) {
		tap_skip_test("cannot reserve", "%s", name);
		goto out2;
	}
	src = p;
	p = t_remap(fd, src, PART, PART, MM | FX, d3, &r);
	if (!tap_ok(p == d3, "%s: lands at the requested address (%s)", name,
		    p == MAP_FAILED ? t_errname(errno) : "ok"))
		goto out2;
	tap_ok(t_verify_pattern(d3, PART, seed + 1, 0) < 0, "%s: moved data intact", name);
	tap_ok(t_verify_pattern_off(src + PART, LEN - PART, seed + 1,
				  PART / PG, 0) < 0,
	       "%s: the data left behind is intact", name);
	tap_ok(t_range_unmapped(src, PART) &&
	       t_range_mapped_as(src + PART, LEN - PART, "rw-p"),
	       "%s: only the moved range is gone", name);
	ahp2 = anon_huge_kb(d3, PART);
	tap_ok(ahp2 == THP_KB, "%s: the whole THP is still PMD-mapped (AnonHugePages %ld kB)",
	       name, ahp2);
	diag_counts(name, &r);
	if (t_counted(&r)) {
		tap_ok(r.moved_thp == 1 && r.moved_pte == PMD_SZ / 2 / PG && r.moved_pmd == 0,
		       "%s: thp 1, pte %zu (got thp %llu, pte %llu, pmd %llu)", name, PMD_SZ / 2 / PG,
		       (unsigned long long)r.moved_thp, (unsigned long long)r.moved_pte,
		       (unsigned long long)r.moved_pmd);
		tap_ok(r.tlb_flushes == 1, "%s: one TLB flush (got %llu)", name,
		       (unsigned long long)r.tlb_flushes);
	}

	/*
	 * 4. Into another GiB: the destination's whole PUD lies in a fresh
	 * reservation, so the THPs land in another PMD table, and each one's
	 * deposited PTE table (kept with the PMD table on split-PMD-lock
	 * kernels) must go with it. Splitting one there and unmapping them
	 * all withdraw those tables from the new PMD table: a table left
	 * behind is withdrawn as nothing, and the kernel oopses.
	 */
	snprintf(name, sizeof(name), "THPs moved whole into another GiB");
	p = map_thp(LEN, seed + 2, &a5);
	if (!p || anon_huge_kb(p, LEN) != 4 * THP_KB) {
		tap_skip_test("not all four THPs allocated", "%s", name);
		goto out2;
	}
	d4 = t_pick(PUD_SZ, PUD_SZ, &a6);
	if (!d4) {
		tap_skip_test("cannot reserve", "%s", name);
		goto out2;
	}
	src = p;
	p = t_remap(fd, src, LEN, LEN, MM | FX, d4, &r);
	if (!tap_ok(p == d4, "%s: lands at the requested address (%s)", name,
		    p == MAP_FAILED ? t_errname(errno) : "ok"))
		goto out2;
	tap_ok(t_verify_pattern(d4, LEN, seed + 2, 0) < 0 && t_range_unmapped(src, LEN) &&
	       anon_huge_kb(d4, LEN) == 4 * THP_KB,
	       "%s: data intact, source gone, all four PMD-mapped", name);
	diag_counts(name, &r);
	if (t_counted(&r))
		tap_ok(r.moved_thp == 4 && r.moved_pte == 0 && r.moved_pmd == 0,
		       "%s: thp 4 (got thp %llu, pte %llu, pmd %llu)", name,
		       (unsigned long long)r.moved_thp, (unsigned long long)r.moved_pte,
		       (unsigned long long)r.moved_pmd);
	/* A page zapped inside the first THP splits its PMD. */
	madvise(d4 + PG, PG, MADV_DONTNEED);
	tap_ok(t_verify_pattern_off(d4 + PMD_SZ, LEN - PMD_SZ, seed + 2, PMD_SZ / PG, 0) < 0 &&
	       anon_huge_kb(d4, LEN) == 3 * THP_KB,
	       "%s: split one there, the other three intact and PMD-mapped", name);
	tap_ok(munmap(d4, LEN) == 0 && t_range_unmapped(d4, LEN),
	       "%s: split and unmapped at the destination", name);
out2:
	t_release(&a2);
	t_release(&a3);
	t_release(&a4);
	t_release(&a5);
	t_release(&a6);
out:
	t_release(&a1);
	t_release(&as);
	close(fd);
	return tap_done();
}
