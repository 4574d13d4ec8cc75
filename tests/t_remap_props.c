// SPDX-License-Identifier: GPL-2.0
/*
 * Properties of mremap(2) that the module must keep and no other program
 * pins down, each compared with mremap(2) on a twin where that is the
 * reference:
 *
 * - soft-dirty: after `echo 4 > /proc/self/clear_refs`, every page moved
 *   entry by entry (PTEs, huge PMDs) reads soft-dirty (pagemap bit 55), as
 *   mremap(2) marks it, so that a checkpointer tracking writes sees the
 *   moved pages as changed (one case moves THPs into another GiB, so into
 *   another PMD table, whose deposited PTE tables must follow them);
 * - the errno of calls with two errors at once, which kernels order
 *   differently (6.x looks up the source before checking a MREMAP_FIXED
 *   target; 7.x checks the target first);
 * - shared and file-backed mappings (shared anonymous, memfd, tmpfs file
 *   shared and private) are moved by the module itself: the call succeeds,
 *   its counters say entries moved, the data follows;
 * - VmLck (locked_vm) after moving mlocked memory is what it was.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include "tlib.h"

static int fd = -1;

struct sd_case {
	char name[64];
	size_t len;
	size_t dst_skew;	/* target offset from PMD alignment */
	int thp;
	int all_dirty;		/* mremap(2) marks every moved page */
	int far;		/* the target in the next PUD ("GiB"): another PMD table */
};

/*
 * The cases, their length two PMDs or a page, their skew in pages; a
 * name's "%zu" is the length in MiB, or a PMD's.
 */
static const struct sd_spec {
	const char *name;
	int one_page, skew_pages, thp, all_dirty, far;
} sd_specs[] = {
	/* PTE by PTE: the target is a page off the source's alignment. */
	{ "%zu MiB moved PTE by PTE", 0, 1, 0, 1, 0 },
	{ "one page", 1, 0, 0, 1, 0 },
	/* Huge PMDs move whole and are marked as a whole. */
	{ "%zu MiB THPs moved whole", 0, 0, 1, 1, 0 },
	/* Into another PMD table: the THP's deposited PTE table must follow. */
	{ "%zu MiB THPs moved whole into another GiB", 0, 0, 1, 1, 1 },
	/* Whole PTE tables: mremap(2) leaves their entries as they are. */
	{ "whole PTE tables", 0, 0, 0, 0, 0 },
};

/* A case at this kernel's sizes (4 MiB, 4 KiB, 2 MiB THPs with 4 KiB pages). */
static void sd_case_at(const struct sd_spec *sp, struct sd_case *c)
{
	c->len = sp->one_page ? PG : 2 * PMD_SZ;
	snprintf(c->name, sizeof(c->name), sp->name, (sp->thp ? PMD_SZ : c->len) >> 20);
	c->dst_skew = sp->skew_pages * PG;
	c->thp = sp->thp;
	c->all_dirty = sp->all_dirty;
	c->far = sp->far;
}

/* Maps, fills, clears soft-dirty, moves (module or mremap(2)). */
static long sd_move(const struct sd_case *c, int use_module, long *present,
		    long *thp_kb, const char **why)
{
	struct t_area sa, da;
	struct fastremap_remap out;
	char *src, *dst, *res;
	long before, pres, n;
	struct t_smaps sm;

	*why = "";
	if (c->far) {
		/* The source ends at a PUD boundary, the target starts there + a PUD. */
		char *g = t_reserve(3 * PUD_SZ, &sa);

		da.base = NULL;
		da.len = 0;
		g = g ? (char *)T_ALIGN_UP((uintptr_t)g, PUD_SZ) : NULL;
		src = g ? mmap(g + PUD_SZ - c->len, c->len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) : NULL;
		if (src == MAP_FAILED)
			src = NULL;
		dst = g ? g + PUD_SZ : NULL;
	} else {
		src = t_map_aligned(c->len, PMD_SZ, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &sa);
		dst = t_pick(c->len + PMD_SZ, PMD_SZ, &da);
	}
	if (!src || !dst) {
		*why = "cannot map";
		return -1;
	}
	dst += c->dst_skew;
	if (c->thp)
		madvise(src, c->len, MADV_HUGEPAGE);
	else
		madvise(src, c->len, MADV_NOHUGEPAGE);
	t_fill_pattern(src, c->len, 55);
	if (t_clear_soft_dirty()) {
		*why = "clear_refs";
		n = -1;
		goto out;
	}
	before = t_soft_dirty_pages(src, c->len, &pres);
	if (before != 0 || pres != (long)(c->len / PG)) {
		*why = "soft-dirty still set after clear_refs, or pages not present";
		n = -1;
		goto out;
	}
	if (use_module)
		res = t_remap(fd, src, c->len, c->len, MREMAP_MAYMOVE | MREMAP_FIXED,
			       dst, &out);
	else
		res = t_mremap(src, c->len, c->len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	if (res != dst) {
		*why = strerror(errno);
		n = -1;
		goto out;
	}
	if (t_verify_pattern(dst, c->len, 55, 0) >= 0) {
		*why = "data";
		n = -1;
		goto out;
	}
	t_smaps_range((uintptr_t)dst, (uintptr_t)dst + c->len, &sm);
	*thp_kb = sm.anon_huge_kb;
	n = t_soft_dirty_pages(dst, c->len, present);
out:
	t_release(&sa);
	t_release(&da);
	return n;
}

static void test_soft_dirty(void)
{
	long pres;

	char *fresh;

	if (access("/proc/self/clear_refs", W_OK) || t_clear_soft_dirty()) {
		tap_skip_test("no clear_refs", "soft-dirty after a move");
		return;
	}
	/* A page written for the first time is soft-dirty where the kernel tracks it. */
	fresh = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fresh == MAP_FAILED) {
		/* Not a skip: every soft-dirty case would be lost unseen. */
		tap_ok(0, "soft-dirty after a move: map a page to probe the tracking (%s)",
		       strerror(errno));
		return;
	}
	*(volatile char *)fresh = 1;
	if (t_soft_dirty_pages(fresh, PG, &pres) != 1) {
		munmap(fresh, PG);
		tap_skip_test("the kernel does not track soft-dirty", "soft-dirty after a move");
		return;
	}
	munmap(fresh, PG);
	for (size_t k = 0; k < ARRAY_SIZE(sd_specs); k++) {
		struct sd_case cs, *c = &cs;
		long fr_thp = 0, mr_thp = 0, mr_pres = 0;
		const char *why, *mwhy;
		long fr, mr, pages;

		sd_case_at(&sd_specs[k], c);
		fr = sd_move(c, 1, &pres, &fr_thp, &why);
		mr = sd_move(c, 0, &mr_pres, &mr_thp, &mwhy);
		pages = c->len / PG;

		if (mr < 0) {
			tap_skip_test(mwhy, "soft-dirty: %s: mremap(2) reference", c->name);
			continue;
		}
		if (c->thp && (!fr_thp || !mr_thp)) {
			tap_skip_test("no THP", "soft-dirty: %s", c->name);
			continue;
		}
		if (c->all_dirty && mr != pages)
			tap_diag("soft-dirty: %s: mremap(2) marked %ld of %ld pages",
				 c->name, mr, pages);
		tap_ok(fr == mr && (!c->all_dirty || fr == pages),
		       "soft-dirty: %s: %ld of %ld moved pages soft-dirty, mremap(2) %ld%s%s",
		       c->name, fr, pages, mr, *why ? ": " : "", why);
	}
}

/* ---------------------------------------------------------------------- */
/* Two errors in one call: which one a kernel reports first                 */

/*
 * A 2 MiB-aligned 8 MiB reservation: a mapped page at 0 (never the
 * source), the "source" at 2 MiB is a hole, free reserved space from 4 MiB.
 */
struct eo_case {
	const char *name;
	size_t old_len, new_len;
	unsigned int flags;
	long new_off;		/* from the hole */
};

static const struct eo_case eo_cases[] = {
	{ "source unmapped, FIXED target misaligned", SZ_1M, SZ_1M,
	  MREMAP_MAYMOVE | MREMAP_FIXED, 2 * SZ_1M + 1 },
	{ "source unmapped, FIXED target overlapping it", SZ_1M, SZ_1M,
	  MREMAP_MAYMOVE | MREMAP_FIXED, SZ_1M / 2 },
	{ "source unmapped, DONTUNMAP target misaligned", SZ_1M, SZ_1M,
	  MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, 2 * SZ_1M + 2048 },
	{ "source unmapped, FIXED target beyond the address space", SZ_1M, SZ_1M,
	  MREMAP_MAYMOVE | MREMAP_FIXED, -1 },
};

static void test_errno_order(void)
{
	for (size_t k = 0; k < ARRAY_SIZE(eo_cases); k++) {
		const struct eo_case *c = &eo_cases[k];
		struct t_area a;
		char *base, *hole, *nw;
		void *p;
		int ea, eb;

		if (!t_reserve(8 * SZ_1M + SZ_2M, &a)) {
			tap_skip_test("cannot reserve", "errno order: %s", c->name);
			continue;
		}
		base = (char *)T_ALIGN_UP((uintptr_t)a.base, SZ_2M);
		hole = base + SZ_2M;
		munmap(hole, SZ_2M);
		/* The page holding it, with pages larger than 4 KiB too. */
		nw = c->new_off == -1 ? (char *)(0x7ffffffff000UL & ~(PG - 1)) : hole + c->new_off;
		p = t_mremap(hole, c->old_len, c->new_len, c->flags, nw);
		ea = errno;
		if (p != MAP_FAILED) {
			tap_skip_test("mremap(2) accepts it", "errno order: %s", c->name);
			t_release(&a);
			continue;
		}
		p = t_remap(fd, hole, c->old_len, c->new_len, c->flags, nw, NULL);
		eb = errno;
		tap_ok(p == MAP_FAILED && eb == ea, "errno order: %s -> %s like mremap(2) (got %s)",
		       c->name, t_errname(ea), p == MAP_FAILED ? t_errname(eb) : "success");
		t_release(&a);
	}
}

/* ---------------------------------------------------------------------- */
/* Shared and file-backed mappings: moved by the module, not declined       */

enum sh_kind { SH_ANON, SH_MEMFD, SH_FILE, SH_FILE_PRIVATE };

static const struct sh_case {
	const char *name;
	enum sh_kind kind;
	int skew_pages;		/* the target's offset from PMD alignment */
} sh_cases[] = {
	{ "shared anonymous, PTE by PTE", SH_ANON, 1 },
	{ "shared anonymous, whole tables", SH_ANON, 0 },
	{ "memfd, shared", SH_MEMFD, 1 },
	{ "tmpfs file, shared", SH_FILE, 0 },
	{ "tmpfs file, private (written: COW copies)", SH_FILE_PRIVATE, 1 },
};

#define SH_LEN	(2 * PMD_SZ)	/* 4 MiB with 4 KiB pages */

static void test_shared(void)
{
	for (size_t k = 0; k < ARRAY_SIZE(sh_cases); k++) {
		const struct sh_case *c = &sh_cases[k];
		struct fastremap_remap out;
		struct t_area sa, da;
		char path[] = "/tmp/t_remap_props.XXXXXX";
		int f = -1, flags = MAP_SHARED;
		char *src, *dst, *res;
		uint64_t moved;

		if (c->kind == SH_MEMFD) {
			f = memfd_create("t_remap_props", MFD_CLOEXEC);
		} else if (c->kind != SH_ANON) {
			f = mkstemp(path);
			if (f >= 0)
				unlink(path);
		}
		if (c->kind == SH_ANON)
			flags |= MAP_ANONYMOUS;
		if (c->kind == SH_FILE_PRIVATE)
			flags = MAP_PRIVATE;
		if (c->kind != SH_ANON && (f < 0 || ftruncate(f, SH_LEN))) {
			tap_skip_test(strerror(errno), "shared: %s", c->name);
			if (f >= 0)
				close(f);
			continue;
		}
		src = t_map_aligned(SH_LEN, PMD_SZ, PROT_READ | PROT_WRITE, flags, f, 0, &sa);
		dst = t_pick(SH_LEN + PMD_SZ, PMD_SZ, &da);
		if (!src || !dst) {
			tap_skip_test("cannot map", "shared: %s", c->name);
			goto next;
		}
		dst += c->skew_pages * PG;
		t_fill_pattern(src, SH_LEN, 60 + k);
		res = t_remap(fd, src, SH_LEN, SH_LEN, MREMAP_MAYMOVE | MREMAP_FIXED,
			       dst, &out);
		if (res == MAP_FAILED) {
			tap_ok(0, "shared: %s: moved by the module (%s)", c->name,
			       t_errname(errno));
			goto next;
		}
		moved = out.moved_pud + out.moved_pmd + out.moved_thp + out.moved_pte;
		tap_ok(res == dst && t_verify_pattern(dst, SH_LEN, 60 + k, 0) < 0 &&
		       t_range_unmapped(src, SH_LEN) &&
		       (!t_counted(&out) || moved > 0),
		       "shared: %s: moved by the module, data follows (pmd %llu pte %llu)",
		       c->name, (unsigned long long)out.moved_pmd,
		       (unsigned long long)out.moved_pte);
next:
		t_release(&sa);
		t_release(&da);
		if (f >= 0)
			close(f);
	}
}

/* ---------------------------------------------------------------------- */
/* locked_vm                                                               */

static long vmlck_kb(void)
{
	return t_proc_field("/proc/self/status", "VmLck");
}

static void test_locked_vm(void)
{
	struct t_area sa, da;
	char *src, *dst, *res;
	long before, after;

	src = t_map_aligned(SH_LEN, PMD_SZ, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &sa);
	dst = t_pick(SH_LEN + PMD_SZ, PMD_SZ, &da);
	if (!src || !dst || mlock(src, SH_LEN)) {
		tap_skip_test(strerror(errno), "VmLck after moving mlocked memory");
		goto out;
	}
	dst += PG;
	t_fill_pattern(src, SH_LEN, 70);
	before = vmlck_kb();
	res = t_remap(fd, src, SH_LEN, SH_LEN, MREMAP_MAYMOVE | MREMAP_FIXED, dst, NULL);
	after = vmlck_kb();
	tap_ok(res == dst && before == after && before >= (long)(SH_LEN >> 10),
	       "VmLck after moving %zu MiB of mlocked memory: %ld kB, before %ld kB%s",
	       SH_LEN >> 20, after, before, res == dst ? "" : " (the move failed)");
out:
	t_release(&sa);
	t_release(&da);
}

int main(int argc, char **argv)
{
	fd = t_open_args(&argc, argv);
	if (fd < 0)
		return tap_done();
	test_errno_order();
	test_soft_dirty();
	test_shared();
	test_locked_vm();
	return tap_done();
}
