// SPDX-License-Identifier: GPL-2.0
/*
 * A 64 GiB move must stay preemptible: the mover yields between extents,
 * so the soft-lockup detector stays quiet (the harness fails the run on
 * any "soft lockup" line in the guest's log). The region is sparse: one
 * touched page per PMD (so every PTE table is present), so it fits the
 * test VM's memory.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/fastremap.h>
#include "tlib.h"

#define GIB	(1UL << 30)
#define STEP	PMD_SZ

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* An address inside a fresh PROT_NONE reservation, aligned to @align. */
static char *reserve(size_t len, size_t align)
{
	char *p = mmap(NULL, len + align, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	return (char *)(((uintptr_t)p + align - 1) & ~(align - 1));
}

static uint64_t tag(size_t off)
{
	return off * 0x9e3779b97f4a7c15ULL + 1;
}

struct big_case {
	const char *name;
	int dst_pages;		/* the offset from a PUD boundary, in pages */
	int expect_pud;
};

/* A name's "%zu" is the page's size in KiB. */
static const struct big_case cases[] = {
	{ "64 GiB, PUD-aligned", 0, 1 },
	{ "64 GiB, misaligned by %zu KiB (PTE level)", 1, 0 },
};

static void run(int fd, const struct big_case *c, size_t len)
{
	char *src = reserve(len, PUD_SZ), *dst = reserve(len + PUD_SZ, PUD_SZ);
	struct fastremap_remap r = { .size = sizeof(r) };
	size_t off, bad = 0, pages = len / STEP;
	char name[64];
	double t0, t1;

	snprintf(name, sizeof(name), c->name, PG >> 10);
	if (!tap_ok(src && dst, "%s: reserve address space", name))
		return;
	dst += c->dst_pages * PG;
	src = mmap(src, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		   -1, 0);
	if (!tap_ok(src != MAP_FAILED, "%s: map the source", name))
		return;
	for (off = 0; off < len; off += STEP)
		*(uint64_t *)(src + off) = tag(off);
	r.old_addr = (uintptr_t)src;
	r.old_size = len;
	r.new_size = len;
	r.new_addr = (uintptr_t)dst;
	r.mremap_flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	t0 = now();
	if (!tap_ok(ioctl(fd, FASTREMAP_IOC_REMAP, &r) == 0 &&
		    r.new_addr == (uintptr_t)dst,
		    "%s: moved (%s)", name, strerror(errno)))
		return;
	t1 = now();
	for (off = 0; off < len; off += STEP)
		bad += *(uint64_t *)(dst + off) != tag(off);
	tap_ok(bad == 0, "%s: all %zu touched pages intact (%zu bad)",
	       name, pages, bad);
	if (c->expect_pud)
		tap_ok(r.moved_pud == len / PUD_SZ && r.moved_pte == 0,
		       "%s: moved %llu PUD entries", name,
		       (unsigned long long)r.moved_pud);
	else
		tap_ok(r.moved_pte == pages && r.moved_pud == 0 &&
		       r.moved_pmd == 0, "%s: moved %llu PTEs", name,
		       (unsigned long long)r.moved_pte);
	/*
	 * One flush per pass: the PUD entries fit in one, a PTE-level move
	 * of 64 GiB (every PTE table present) takes one pass per 2^18 pages
	 * (1 GiB of 4 KiB pages).
	 */
	tap_ok(r.tlb_flushes == (c->expect_pud ? 1 : t_max_flushes(len)),
	       "%s: one TLB flush per pass (%llu)", name,
	       (unsigned long long)r.tlb_flushes);
	tap_diag("%s: %.1f ms under emulation (not a hardware timing)",
		 name, (t1 - t0) * 1e3);
	munmap(dst, len);
}

int main(void)
{
	int fd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);

	if (!tap_ok(fd >= 0, "open the device"))
		return tap_done();
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		run(fd, &cases[k], 64 * GIB);
	close(fd);
	return tap_done();
}
