// SPDX-License-Identifier: GPL-2.0
/*
 * Shadow stacks (x86 user shadow stacks, 6.6+): FASTREMAP_IOC_MOVE
 * refuses a move out of, into or inside one (EINVAL), FASTREMAP_IOC_REMAP
 * declines to move one (EOPNOTSUPP, left to mremap(2)). A shadow stack
 * is private anonymous memory, so the MOVE checks that accept a heap
 * accept it too unless they test VM_SHADOW_STACK: moving its pages would
 * move return addresses under a thread, and moving an ordinary writable
 * page into one would make shadow-stack memory writable by plain stores.
 *
 * map_shadow_stack(2) maps one; the test never enables shadow stacks for
 * itself and never writes to one (that takes WRSS). What the kernel wrote
 * there, the restore token at the top, is read with plain loads. Each
 * case maps a fresh shadow stack inside a PROT_NONE reservation, with an
 * ordinary private anonymous mapping beside it, and requires after the
 * call that /proc/self/maps over the reservation, the shadow stack's "ss"
 * VmFlag, which pages are present (pagemap) and what they hold are as
 * they were.
 *
 * Only a CPU with CET shadow stacks (and a kernel built for them) maps
 * one: elsewhere map_shadow_stack(2) fails with EOPNOTSUPP (or ENOSYS
 * before 6.6) and every case is skipped, saying so. QEMU's TCG has no
 * CET; make check-ibt runs this in Bochs's Tiger Lake, and fails on a
 * skip there.
 */
#define _GNU_SOURCE
#include "tlib.h"

/* Debian 12's headers predate map_shadow_stack(2) (6.6). */
#ifndef __NR_map_shadow_stack
#define __NR_map_shadow_stack	453
#endif
#ifndef SHADOW_STACK_SET_TOKEN
#define SHADOW_STACK_SET_TOKEN	(1ULL << 0)
#endif

/*
 * The reservation, in pages: the shadow stack at SS_AT, the ordinary
 * mapping at ORD_AT, MREMAP_FIXED's target at TGT_AT, PROT_NONE between
 * them (so that nothing merges, and the shadow stack cannot grow in
 * place: a growing MREMAP_MAYMOVE has to move it).
 */
#define SS_AT		2
#define SS_PAGES	4
#define ORD_AT		8
#define ORD_PAGES	2
#define TGT_AT		11
#define AREA_PAGES	16
#define TAG		0x5ca1ab1e0ddba11ULL

static int fd = -1;
static struct t_area area;
static char *ss, *ord;

static long map_shadow_stack(void *addr, size_t len, unsigned long flags)
{
	return syscall(__NR_map_shadow_stack, addr, len, flags);
}

/* Whether the VMA holding p has VmFlag fl in smaps: 1, 0, or -1 (unknown). */
static int vmflag(const void *p, const char *fl)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512], want[8], perms[8];
	int in = 0, r = -1;

	if (!f)
		return -1;
	snprintf(want, sizeof(want), " %s ", fl);
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) == 3) {
			in = (uintptr_t)p >= s && (uintptr_t)p < e;
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			line[strcspn(line, "\n")] = ' ';
			r = strstr(line + 7, want) != NULL;
			break;
		}
	}
	fclose(f);
	return r;
}

/* Whether /proc/cpuinfo's first flags line names fl: 1, 0, or -1. */
static int cpuflag(const char *fl)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	static char line[8192];
	char want[32];
	int r = -1;

	if (!f)
		return -1;
	snprintf(want, sizeof(want), " %s ", fl);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		line[strcspn(line, "\n")] = ' ';
		r = strstr(line, want) != NULL;
		break;
	}
	fclose(f);
	return r;
}

/*
 * What a case compares before and after its call: the maps over the
 * reservation, the "ss" VmFlag, and for each page of the shadow stack
 * and of the ordinary mapping whether it is present and what it holds
 * (only present pages are read: reading a hole would map the zero page).
 */
#define NPAGES		(SS_PAGES + ORD_PAGES)

struct state {
	char *maps;
	int ss_flag;
	uint64_t pm[NPAGES];
	char data[NPAGES][SZ_4K];	/* x86-64's pages (shadow stacks are x86 only) */
};

static struct state before, after;

static char *page_of(int i)
{
	return i < SS_PAGES ? ss + i * PG : ord + (i - SS_PAGES) * PG;
}

static int capture(struct state *st)
{
	free(st->maps);
	memset(st, 0, sizeof(*st));
	st->maps = t_maps_range(area.base, AREA_PAGES * PG);
	st->ss_flag = vmflag(ss, "ss");
	if (!st->maps || t_pagemap(ss, SS_PAGES, st->pm) ||
	    t_pagemap(ord, ORD_PAGES, st->pm + SS_PAGES))
		return -1;
	for (int i = 0; i < NPAGES; i++) {
		st->pm[i] &= PM_PRESENT | PM_SWAP;
		if (st->pm[i])
			memcpy(st->data[i], page_of(i), PG);
	}
	return 0;
}

/* Prints each line of s as a TAP comment. */
static void diag_lines(const char *title, const char *s)
{
	tap_diag("%s:", title);
	for (const char *nl; *s; s = nl + 1) {
		nl = strchrnul(s, '\n');
		tap_diag("  %.*s", (int)(nl - s), s);
		if (!*nl)
			break;
	}
}

/* Whether after is before; says what differs. */
static int unchanged(void)
{
	if (capture(&after)) {
		tap_diag("maps or pagemap unreadable");
		return 0;
	}
	if (strcmp(before.maps, after.maps)) {
		diag_lines("maps over the reservation before", before.maps);
		diag_lines("after", after.maps);
		return 0;
	}
	if (after.ss_flag != 1) {
		tap_diag("the shadow stack's VmFlags %s \"ss\"",
			 after.ss_flag < 0 ? "are unreadable, no" : "lack");
		return 0;
	}
	for (int i = 0; i < NPAGES; i++) {
		const char *what = i < SS_PAGES ? "shadow stack" : "ordinary mapping";
		int pg = i < SS_PAGES ? i : i - SS_PAGES;

		if (before.pm[i] != after.pm[i]) {
			tap_diag("page %d of the %s: %s before, %s after", pg, what,
				 before.pm[i] ? "present" : "a hole",
				 after.pm[i] ? "present" : "a hole");
			return 0;
		}
		if (before.pm[i] && memcmp(before.data[i], after.data[i], PG)) {
			tap_diag("page %d of the %s holds other data", pg, what);
			return 0;
		}
	}
	return 1;
}

/*
 * A fresh shadow stack (flags: map_shadow_stack(2)'s) in a fresh
 * reservation, and the ordinary mapping beside it, whose second page
 * holds data when @fill is set (its first page stays a hole).
 */
static int setup(unsigned long flags, int fill)
{
	long r;

	if (!t_reserve(AREA_PAGES * PG, &area))
		return -1;
	ss = area.base + SS_AT * PG;
	ord = area.base + ORD_AT * PG;
	/* map_shadow_stack(2) at an address maps with MAP_FIXED_NOREPLACE. */
	if (munmap(ss, SS_PAGES * PG))
		return -1;
	r = map_shadow_stack(ss, SS_PAGES * PG, flags);
	if (r != (long)(uintptr_t)ss) {
		tap_diag("map_shadow_stack(%p): %ld (%s)", (void *)ss, r,
			 strerror(errno));
		return -1;
	}
	if (mmap(ord, ORD_PAGES * PG, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != ord)
		return -1;
	if (fill)
		t_tag_fill(ord + PG, TAG);
	return capture(&before);
}

static void teardown(void)
{
	t_release(&area);
}

/* The cases, so that a skip names them as a run does. */
#define D_PROBE		"a shadow stack: its restore token on top, zero below, \"ss\" in VmFlags"
#define D_MOVE_WITHIN	"MOVE of a shadow stack's page (its token) to a hole of the same shadow stack: EINVAL"
#define D_MOVE_OUT	"MOVE of a shadow stack's page (its token) to an ordinary mapping: EINVAL"
#define D_MOVE_IN	"MOVE of an ordinary page into a hole of a shadow stack: EINVAL"
#define D_GROW		"REMAP MREMAP_MAYMOVE growing a shadow stack: EOPNOTSUPP"
#define D_FIXED		"REMAP MREMAP_MAYMOVE|MREMAP_FIXED of a shadow stack: EOPNOTSUPP"
#define D_SAME		"... the shadow stack, the ordinary mapping and the maps unchanged"

/* Maps one where it can, and checks it; returns why not where it cannot. */
static const char *probe(void)
{
	static char why[160];
	size_t len = SS_PAGES * PG;
	const uint64_t *w;
	long r;
	int e, flag;
	size_t bad = 0;

	r = map_shadow_stack(NULL, len, SHADOW_STACK_SET_TOKEN);
	e = errno;
	if (r == -1 && (e == EOPNOTSUPP || e == ENOSYS)) {
		int u = cpuflag("user_shstk");

		snprintf(why, sizeof(why),
			 "map_shadow_stack(2): %s: no user shadow stacks here (/proc/cpuinfo: %s)",
			 strerror(e), u < 0 ? "unreadable" : u ? "user_shstk" : "no user_shstk");
		return why;
	}
	if (r == -1) {
		tap_diag("map_shadow_stack(2) of %zu KiB: %s", len >> 10, strerror(e));
		tap_ok(0, D_PROBE);
		return NULL;
	}
	/* The restore token: the top of the stack, mode bit 0 set (64-bit). */
	w = (const uint64_t *)(uintptr_t)r;
	for (size_t k = 0; k + 1 < len / 8; k++)
		bad += w[k] != 0;
	flag = vmflag(w, "ss");
	tap_diag("shadow stack at %p, last word %#" PRIx64 ", %zu other words nonzero, VmFlag ss: %d",
		 (void *)w, w[len / 8 - 1], bad, flag);
	tap_ok(w[len / 8 - 1] == (((uintptr_t)r + len) | 1) && !bad && flag == 1,
	       D_PROBE);
	munmap((void *)w, len);
	return NULL;
}

/* setup(), or both of the case's results failed. */
static int begin(unsigned long flags, int fill, const char *desc)
{
	if (!setup(flags, fill))
		return 1;
	tap_ok(0, "%s (could not set up)", desc);
	tap_ok(0, D_SAME);
	teardown();
	return 0;
}

/*
 * FASTREMAP_IOC_MOVE of page src to page dst (page_of()'s numbers), after
 * setup(flags, fill).
 */
static void move(unsigned long flags, int fill, int src, int dst, const char *desc)
{
	struct fastremap_move_vec v;

	if (!begin(flags, fill, desc))
		return;
	v = (struct fastremap_move_vec){ (uintptr_t)page_of(src),
					 (uintptr_t)page_of(dst), PG };
	tap_errno(t_move(fd, &v, 1, 0, NULL), EINVAL, "%s", desc);
	tap_ok(unchanged(), D_SAME);
	teardown();
}

/* FASTREMAP_IOC_REMAP of the whole shadow stack to new_len (FIXED: the target). */
static void remap(size_t new_len, unsigned int flags, const char *desc)
{
	size_t len = SS_PAGES * PG;
	void *p;
	int e;

	if (!begin(SHADOW_STACK_SET_TOKEN, 0, desc))
		return;
	p = t_remap(fd, ss, len, new_len, flags,
		     flags & MREMAP_FIXED ? area.base + TGT_AT * PG : NULL, NULL);
	e = p == MAP_FAILED ? errno : 0;
	if (p != MAP_FAILED)
		tap_diag("REMAP moved the shadow stack to %p", p);
	errno = e;
	tap_errno(p == MAP_FAILED ? -1 : 0, EOPNOTSUPP, "%s", desc);
	tap_ok(unchanged(), D_SAME);
	/* Moved out of the reservation: unmapped here, not by the release. */
	if (p != MAP_FAILED && !(flags & MREMAP_FIXED))
		munmap(p, new_len);
	teardown();
}

int main(void)
{
	static const char *const cases[] = {
		D_PROBE, D_MOVE_WITHIN, D_SAME, D_MOVE_OUT, D_SAME, D_MOVE_IN, D_SAME,
		D_GROW, D_SAME, D_FIXED, D_SAME,
	};
	const char *why;

	fd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
	if (!tap_ok(fd >= 0, "open %s", FASTREMAP_DEVICE))
		return tap_done();
	why = probe();
	if (why) {
		for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
			tap_skip_test(why, "%s", cases[i]);
		return tap_done();
	}
	/*
	 * The top page, which holds the token (the one with data), to a hole
	 * of the same shadow stack: one VMA, one anon_vma, so nothing but
	 * the shadow-stack check stands in the way (a module without it
	 * moves the token). Across two VMAs, as next, such a module stops at
	 * EXDEV instead: the ordinary mapping's anon_vma, found or made for
	 * the move, has another root. Those cases require the shadow stack
	 * to be the reason given, before any anon_vma is looked at.
	 */
	move(SHADOW_STACK_SET_TOKEN, 0, SS_PAGES - 1, 0, D_MOVE_WITHIN);
	move(SHADOW_STACK_SET_TOKEN, 0, SS_PAGES - 1, SS_PAGES, D_MOVE_OUT);
	/* Into a token-less shadow stack, all holes, from a page with data. */
	move(0, 1, SS_PAGES + 1, 0, D_MOVE_IN);
	/*
	 * Same-size MREMAP_MAYMOVE moves nothing (mremap(2) returns the
	 * address): growing by a page, with PROT_NONE right above, does.
	 */
	remap((SS_PAGES + 1) * PG, MREMAP_MAYMOVE, D_GROW);
	remap(SS_PAGES * PG, MREMAP_MAYMOVE | MREMAP_FIXED, D_FIXED);
	close(fd);
	return tap_done();
}
