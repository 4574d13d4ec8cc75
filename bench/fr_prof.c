// SPDX-License-Identifier: GPL-2.0
/*
 * Where a PTE-level move's time goes (bench/profile.sh): workload 3's move
 * (1 GiB of pages, destination misaligned by one page), made by the
 * module's ioctl and by mremap(2) in turn, each inside tracing_on 1..0
 * with a trace_marker line naming it, so that the function_graph tracer
 * the guest set up records the timed calls and nothing else. The data is
 * checked after every move; an untimed mremap(2) brings it back. With
 * "pud", workload 1's move instead: one PUD (1 GiB with 4 KiB pages, 64
 * GiB with 16 KiB ones), destination PUD-aligned, so that each contender
 * moves one PUD entry; refused where a PUD does not fit in memory. Page,
 * PMD and PUD are the running kernel's (tests/lib/geom.c, linked in).
 * Usage: fr_prof [REPS [pud]]   (in the guest, module loaded)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/fastremap.h>
#include "tlib.h"

#define MiB (1UL << 20)
#define GiB (1UL << 30)
#define TR "/sys/kernel/tracing/"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void die(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 5, fd, on, mk, r, c;
	int pud = argc > 2 && !strcmp(argv[2], "pud");
	size_t len = pud ? PUD_SZ : GiB, i;
	long mem = sysconf(_SC_PHYS_PAGES);
	char *res, *src, *dst, msg[64];
	double t[2][64];

	if (reps < 1 || reps > 64)
		reps = 5;
	if (mem > 0 && len > (size_t)mem * PG) {
		printf("Bail out! a PUD-level move needs %zu MiB (one PUD), this machine has %zu MiB\n",
		       len / MiB, (size_t)mem * PG / MiB);
		return 1;
	}
	printf("# FR-PROF-PAGES %zu\n", len / PG);
	res = mmap(NULL, 5 * PUD_SZ, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		die("reserve");
	src = (char *)(((uintptr_t)res + PUD_SZ - 1) & ~(PUD_SZ - 1));
	dst = src + 2 * PUD_SZ + (pud ? 0 : PG);
	if (mmap(src, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0) != src)
		die("mmap");
	/* No THP: at PTE level every page is an entry. */
	if (madvise(src, len, MADV_NOHUGEPAGE))
		die("madvise");
	for (i = 0; i < len; i += PG)
		*(uint64_t *)(src + i) = i;
	fd = open("/dev/fastremap", O_RDWR);
	on = open(TR "tracing_on", O_WRONLY);
	mk = open(TR "trace_marker", O_WRONLY);
	if (fd < 0 || on < 0 || mk < 0)
		die("open /dev/fastremap or tracefs");
	for (r = 0; r < reps; r++) {
		for (c = 0; c < 2; c++) {
			struct fastremap_remap rq = {
				.size = sizeof(rq), .old_addr = (uintptr_t)src, .old_size = len,
				.new_size = len, .new_addr = (uintptr_t)dst,
				.mremap_flags = MREMAP_MAYMOVE | MREMAP_FIXED,
			};
			double t0, t1;
			int err;

			munmap(dst, len);
			if (pwrite(on, "1", 1, 0) != 1)
				die("tracing_on");
			snprintf(msg, sizeof(msg), "FR-PROF %s rep %d", c ? "mremap" : "fastremap", r);
			if (write(mk, msg, strlen(msg)) < 0)
				die("trace_marker");
			t0 = now_us();
			if (c)
				err = mremap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst) != dst;
			else
				err = ioctl(fd, FASTREMAP_IOC_REMAP, &rq) != 0;
			t1 = now_us();
			if (pwrite(on, "0", 1, 0) != 1)
				die("tracing_on");
			if (err)
				die(c ? "mremap" : "FASTREMAP_IOC_REMAP");
			if (!c && !pud && rq.moved_pte != len / PG)
				printf("# fastremap moved %llu PTEs, not %zu\n",
				       (unsigned long long)rq.moved_pte, len / PG);
			if (!c && pud && rq.moved_pud != 1)
				printf("# fastremap moved %llu PUD entries, not 1\n",
				       (unsigned long long)rq.moved_pud);
			t[c][r] = t1 - t0;
			for (i = 0; i < len; i += PG)
				if (*(uint64_t *)(dst + i) != i) {
					printf("Bail out! %s rep %d: wrong data at page %zu\n",
					       c ? "mremap" : "fastremap", r, i / PG);
					return 1;
				}
			printf("# FR-PROF-TIME %s %d %.1f us\n", c ? "mremap" : "fastremap", r, t[c][r]);
			if (mremap(dst, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, src) != src)
				die("moving back");
		}
	}
	for (c = 0; c < 2; c++) {
		qsort(t[c], reps, sizeof(double), cmp);
		printf("# FR-PROF-MEDIAN %s %.1f us over %d moves\n", c ? "mremap" : "fastremap",
		       t[c][reps / 2], reps);
	}
	return 0;
}
