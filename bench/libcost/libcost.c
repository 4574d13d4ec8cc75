// SPDX-License-Identifier: GPL-2.0
/*
 * libcost: the calls bench/libcost.sh counts under callgrind. Makes N
 * calls of one case through one contender, each call through a
 * function of its own (lc_lib(): fastremap_remap(); lc_glibc(): the C
 * library's mremap()), so that callgrind's inclusive count of that
 * function is the user instructions of the calls, argument passing
 * included. The counting is the script's: a program cannot read
 * callgrind's counters.
 *
 * Cases (memory reserved once, PMD-aligned, never touched; the page and
 * PMD are the running kernel's, tests/lib/geom.c):
 *   move        1 MiB moved by 1 MiB (MREMAP_MAYMOVE|MREMAP_FIXED), and
 *               back, alternately: the library routes it to mremap(2)
 *   move_stats  the same with a struct fastremap_stats, as fr_bench does
 *   shrink      MREMAP_MAYMOVE, one page less each call
 *   same        MREMAP_MAYMOVE, the same size
 *   big         8 PMDs (16 MiB with 4 KiB pages) moved by as much, and
 *               back: not routed, so the library looks for the device
 *               (none on a host without the module: its fallback)
 *
 * Contenders: lib (lc_lib()), glibc (lc_glibc()), pad (lc_pad(): the
 * control).
 *
 * Usage: libcost CASE lib|glibc|pad N. Prints what it did, one line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "fastremap.h"
#include "tlib.h"

#define MIB		(1UL << 20)

struct lc_call {
	void *old;
	size_t old_size, new_size;
	int flags;
	void *new;
	struct fastremap_stats *stats;
};

__attribute__((noinline)) static long lc_lib(const struct lc_call *c)
{
	void *res;
	long r = fastremap_remap(c->old, c->old_size, c->new_size, c->flags, c->new, 0,
				 c->stats, &res);

	return r ? r : (long)(uintptr_t)res;
}

__attribute__((noinline)) static long lc_glibc(const struct lc_call *c)
{
	void *p = mremap(c->old, c->old_size, c->new_size, c->flags, c->new);

	return p == MAP_FAILED ? -errno : (long)(uintptr_t)p;
}

/*
 * The control: lc_glibc() and 100 instructions more, which the count
 * must find exactly (x86-64 and arm64 both have a one-instruction nop).
 */
__attribute__((noinline)) static long lc_pad(const struct lc_call *c)
{
	void *p = mremap(c->old, c->old_size, c->new_size, c->flags, c->new);

	__asm__ volatile(".rept 100\n\tnop\n\t.endr");
	return p == MAP_FAILED ? -errno : (long)(uintptr_t)p;
}

/* A range of @len bytes at a PMD boundary, reserved (PROT_NONE, never touched). */
static char *lc_reserve(size_t len)
{
	char *p = mmap(NULL, len + PMD_SZ, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);

	if (p == MAP_FAILED) {
		perror("libcost: mmap");
		exit(2);
	}
	return (char *)(((uintptr_t)p + PMD_SZ - 1) & ~(uintptr_t)(PMD_SZ - 1));
}

int main(int argc, char **argv)
{
	long (*call)(const struct lc_call *);
	struct fastremap_stats st;
	struct lc_call c;
	const char *cs;
	size_t len = MIB;
	long n, r;
	char *a;

	if (argc != 4 || (n = strtol(argv[3], NULL, 10)) < 1 || n > 100000) {
		fprintf(stderr, "usage: libcost move|move_stats|shrink|same|big lib|glibc|pad N\n");
		return 2;
	}
	cs = argv[1];
	if (!strcmp(argv[2], "lib")) {
		call = lc_lib;
	} else if (!strcmp(argv[2], "glibc")) {
		call = lc_glibc;
	} else if (!strcmp(argv[2], "pad")) {
		call = lc_pad;
	} else {
		fprintf(stderr, "libcost: unknown contender %s\n", argv[2]);
		return 2;
	}
	memset(&c, 0, sizeof(c));
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (!strcmp(cs, "big"))
		len = 8 * PMD_SZ;
	if (!strcmp(cs, "shrink"))
		len = (size_t)(n + 1) * PG;
	a = lc_reserve(2 * len);
	c.old = a;
	c.old_size = c.new_size = len;
	c.flags = MREMAP_MAYMOVE;
	if (!strcmp(cs, "move") || !strcmp(cs, "move_stats") || !strcmp(cs, "big")) {
		c.flags |= MREMAP_FIXED;
		c.new = a + len;
		if (!strcmp(cs, "move_stats"))
			c.stats = &st;
	} else if (!strcmp(cs, "shrink")) {
		c.new_size = len - PG;
	} else if (strcmp(cs, "same")) {
		fprintf(stderr, "libcost: unknown case %s\n", cs);
		return 2;
	}
	for (long i = 0; i < n; i++) {
		r = call(&c);
		if (r < 0) {
			fprintf(stderr, "libcost: %s %s call %ld: %s\n", cs, argv[2], i,
				strerror((int)-r));
			return 1;
		}
		if (c.flags & MREMAP_FIXED) {
			void *t = c.old;

			c.old = c.new;
			c.new = t;
		} else if (c.new_size < c.old_size) {
			c.old_size = c.new_size;
			c.new_size -= PG;
		}
	}
	printf("libcost: %s %s %ld calls\n", cs, argv[2], n);
	return 0;
}
