// SPDX-License-Identifier: GPL-2.0
/*
 * Realignment of congruent moves that start inside a PMD.
 *
 * Since 6.7 mremap(2) moves [old, old + len) from the PMD boundary below
 * old when old and new are congruent modulo a PMD, each is where its VMA
 * starts, nothing is mapped between the boundary and it on either side,
 * and the move reaches the next boundary (try_realign_addr()): the first
 * PTE table then moves whole, and its entries keep their soft-dirty bits
 * (entries moved one by one become soft-dirty). The module does the same
 * on every kernel, 6.1 included.
 *
 * Each case builds its layout inside a reservation with holes where the
 * PMDs below the source and the target start, fills the source (no THP),
 * clears soft-dirty (`echo 4 > /proc/self/clear_refs`), moves it with
 * MREMAP_FIXED, and checks the data, the module's counters (whole tables
 * against single PTEs) and how many moved pages read soft-dirty. The same
 * layout is moved by mremap(2) as a reference: on a kernel that realigns,
 * both must agree page for page; on one that does not (6.1), the module
 * still realigns, and only its own expectation is checked. Kernels that
 * track no soft-dirty bits (Debian's arm64) check the counters alone.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include "tlib.h"

#define SPAN		(4 * PMD_SZ)	/* the hole around each end */

static int fd = -1;
static int soft_dirty;	/* the kernel tracks soft-dirty bits */

struct rcase {
	char name[96];
	size_t off;		/* start of both ends inside their PMD */
	size_t len;
	int src_neighbour;	/* a page mapped at the source's PMD boundary */
	int dst_neighbour;	/* ... at the target's */
	int realigns;		/* the module must move the first table whole */
};

/*
 * The cases, their offset and length in half PMDs plus pages (1 MiB and
 * 4 KiB with 4 KiB pages); a name's two "%s" are the offset and the length.
 */
static const struct rspec {
	const char *name;
	int off_half, off_pages, len_half, len_pages;
	int src_neighbour, dst_neighbour, realigns;
} specs[] = {
	{ "%s into a PMD, %s", 1, 0, 3, 0, 0, 0, 1 },
	{ "%s into a PMD, %s", 0, 1, 4, -1, 0, 0, 1 },
	{ "%s into a PMD, exactly to the boundary", 1, 0, 1, 0, 0, 0, 1 },
	{ "last page of a PMD%.0s, %s", 2, -1, 2, 1, 0, 0, 1 },
	{ "%s into a PMD, %s (ends inside a PMD)", 1, 0, 5, 3, 0, 0, 1 },
	/* Where realigning would reach another mapping, or gain nothing. */
	{ "a mapping below the source in its PMD", 1, 0, 3, 0, 1, 0, 0 },
	{ "a mapping below the target in its PMD", 1, 0, 3, 0, 0, 1, 0 },
	{ "ends before the boundary", 1, 0, 1, -1, 0, 0, 0 },
};

/* Half PMDs plus pages: "3 MiB", "4 KiB", "5 MiB + 12 KiB" (into buf). */
static const char *size_name(char *buf, size_t n, int half, int pages)
{
	size_t mib = half * (PMD_SZ / 2) >> 20, kib = (pages < 0 ? -pages : pages) * PG >> 10;

	if (!half)
		snprintf(buf, n, "%zu KiB", kib);
	else if (!pages)
		snprintf(buf, n, "%zu MiB", mib);
	else
		snprintf(buf, n, "%zu MiB %c %zu KiB", mib, pages < 0 ? '-' : '+', kib);
	return buf;
}

/* A case at this kernel's page and PMD sizes. */
static void case_at(const struct rspec *sp, struct rcase *c)
{
	char o[64], l[64];

	snprintf(c->name, sizeof(c->name), sp->name,
		 size_name(o, sizeof(o), sp->off_half, sp->off_pages),
		 size_name(l, sizeof(l), sp->len_half, sp->len_pages));
	c->off = sp->off_half * (PMD_SZ / 2) + sp->off_pages * PG;
	c->len = sp->len_half * (PMD_SZ / 2) + sp->len_pages * PG;
	c->src_neighbour = sp->src_neighbour;
	c->dst_neighbour = sp->dst_neighbour;
	c->realigns = sp->realigns;
}

struct result {
	long sd;		/* soft-dirty pages at the target */
	struct fastremap_remap r;
};

/*
 * Lays out [hole of SPAN at A][PROT_NONE][hole of SPAN at B][PROT_NONE]
 * inside a reservation, maps the source at A + off, fills it, and moves
 * it to B + off. Returns 0, or -1 with *why set.
 */
static int run_case(const struct rcase *c, int use_module, struct result *out,
		    const char **why)
{
	struct t_area a;
	char *base, *A, *B, *src, *dst, *res;
	long pres, sd;
	int ret = -1;

	memset(out, 0, sizeof(*out));
	*why = "";
	base = t_reserve(3 * SPAN + 2 * PMD_SZ, &a);
	if (!base) {
		*why = "reserve";
		return -1;
	}
	A = (char *)T_ALIGN_UP((uintptr_t)base + PG, PMD_SZ);
	B = A + SPAN + PMD_SZ;
	src = A + c->off;
	dst = B + c->off;
	if (munmap(A, SPAN) || munmap(B, SPAN)) {
		*why = "holes";
		goto out;
	}
	/* Read-only neighbours: they never merge with the moved mapping. */
	if ((c->src_neighbour &&
	     mmap(A, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) ||
	    (c->dst_neighbour &&
	     mmap(B, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)) {
		*why = "neighbour";
		goto out;
	}
	if (mmap(src, c->len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		*why = "source";
		goto out;
	}
	/* Small pages only: whole tables against single PTEs is the point. */
	madvise(src, c->len, MADV_NOHUGEPAGE);
	t_fill_pattern(src, c->len, 71);
	sd = soft_dirty && t_clear_soft_dirty() ? -1 : t_soft_dirty_pages(src, c->len, &pres);
	if (sd < 0 || (soft_dirty && sd) || pres != (long)(c->len / PG)) {
		*why = "soft-dirty still set after clear_refs, or pages not present";
		goto out;
	}
	if (use_module)
		res = t_remap(fd, src, c->len, c->len, MREMAP_MAYMOVE | MREMAP_FIXED,
			       dst, &out->r);
	else
		res = t_mremap(src, c->len, c->len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	if (res != dst) {
		*why = strerror(errno);
		goto out;
	}
	if (t_verify_pattern(dst, c->len, 71, 0) >= 0) {
		*why = "wrong data at the target";
		goto out;
	}
	if (!t_range_unmapped(src, c->len)) {
		*why = "the source is still mapped";
		goto out;
	}
	if ((c->src_neighbour && !t_range_mapped_as(A, PG, "r--p")) ||
	    (c->dst_neighbour && !t_range_mapped_as(B, PG, "r--p"))) {
		*why = "a neighbour changed";
		goto out;
	}
	out->sd = t_soft_dirty_pages(dst, c->len, &pres);
	if (out->sd < 0 || pres != (long)(c->len / PG)) {
		*why = "pagemap of the target";
		goto out;
	}
	ret = 0;
out:
	t_release(&a);
	return ret;
}

/*
 * What the module must report: whole tables for every PMD the (realigned)
 * range covers entirely, single PTEs for the pages of partial PMDs; and
 * which pages end up soft-dirty (those moved one by one).
 */
static void expect(const struct rcase *c, uint64_t *pmd, uint64_t *pte)
{
	size_t start = c->realigns ? 0 : c->off, end = c->off + c->len;

	*pmd = 0;
	*pte = 0;
	while (start < end) {
		size_t next = (start + PMD_SZ) & ~(PMD_SZ - 1);

		if (!(start % PMD_SZ) && next <= end) {
			(*pmd)++;
		} else {
			size_t e = next < end ? next : end;
			size_t s = start > c->off ? start : c->off;

			*pte += (e - s) / PG;
		}
		start = next;
	}
}

static void test_case(const struct rcase *c)
{
	struct result fr, mr;
	const char *why, *mwhy;
	uint64_t pmd, pte;
	int fr_err = run_case(c, 1, &fr, &why);
	int mr_err = run_case(c, 0, &mr, &mwhy);

	if (!tap_ok(!fr_err, "%s: the module's move%s%s", c->name,
		    *why ? ": " : "", why))
		return;
	if (mr_err) {
		tap_skip_test(mwhy, "%s: mremap(2) reference", c->name);
		return;
	}
	expect(c, &pmd, &pte);
	if (!soft_dirty)
		goto counters;
	/* Soft-dirty pages are exactly the ones moved as single PTEs. */
	tap_ok(fr.sd == (long)pte,
	       "%s: %ld moved pages soft-dirty, want %llu (mremap(2) on this kernel: %ld)",
	       c->name, fr.sd, (unsigned long long)pte, mr.sd);
	if (mr.sd == (long)pte || !c->realigns)
		tap_ok(fr.sd == mr.sd, "%s: as mremap(2): %ld soft-dirty pages",
		       c->name, mr.sd);
	else
		tap_diag("%s: mremap(2) on this kernel does not realign (%ld soft-dirty pages)",
			 c->name, mr.sd);
counters:
	if (!t_counted(&fr.r))
		return;
	tap_ok(fr.r.moved_pmd == pmd && fr.r.moved_pte == pte &&
	       fr.r.moved_pud == 0 && fr.r.moved_thp == 0 && fr.r.tlb_flushes == 1,
	       "%s: pud/pmd/thp/pte %llu/%llu/%llu/%llu, want 0/%llu/0/%llu, flushes %llu",
	       c->name, (unsigned long long)fr.r.moved_pud,
	       (unsigned long long)fr.r.moved_pmd, (unsigned long long)fr.r.moved_thp,
	       (unsigned long long)fr.r.moved_pte, (unsigned long long)pmd,
	       (unsigned long long)pte, (unsigned long long)fr.r.tlb_flushes);
}

int main(int argc, char **argv)
{
	char *fresh;
	long pres;

	fd = t_open_args(&argc, argv);
	if (fd < 0)
		return tap_done();
	/* A page written after clear_refs reads soft-dirty where it is tracked. */
	soft_dirty = !access("/proc/self/clear_refs", W_OK) && !t_clear_soft_dirty();
	fresh = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fresh == MAP_FAILED)
		return tap_done();
	*(volatile char *)fresh = 1;
	soft_dirty = soft_dirty && t_soft_dirty_pages(fresh, PG, &pres) == 1;
	munmap(fresh, PG);
	/* The counters still tell whole tables from single PTEs. */
	if (!soft_dirty)
		tap_skip_test("the kernel does not track soft-dirty",
			      "realignment: the moved pages' soft-dirty bits, against mremap(2)'s");
	for (size_t k = 0; k < ARRAY_SIZE(specs); k++) {
		struct rcase c;

		case_at(&specs[k], &c);
		test_case(&c);
	}
	return tap_done();
}
