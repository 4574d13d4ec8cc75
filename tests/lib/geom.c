// SPDX-License-Identifier: GPL-2.0
/*
 * The running kernel's page-table geometry (tlib.h), read once before
 * main(): every test sizes its pages, PMDs and PUDs from these, so that
 * one build runs on 4 KiB- and 16 KiB-page kernels alike. Being the
 * definitions of the variables, this object is linked into every program
 * that uses them, and its constructor with it.
 */
#define _GNU_SOURCE
#include "tlib.h"

size_t t_page_size, t_pmd_size, t_pud_size, t_table_entries;
size_t t_cont_size, t_task_size;

/* What hpage_pmd_size says, or 0 if absent or not a power of two. */
static size_t t_read_pmd_size(size_t page)
{
	char b[32], *end;
	unsigned long long v;
	ssize_t n;
	int f;

	f = open("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return 0;
	n = read(f, b, sizeof(b) - 1);
	close(f);
	if (n <= 0)
		return 0;
	b[n] = 0;
	if (b[n - 1] == '\n')
		b[n - 1] = 0;
	errno = 0;
	v = strtoull(b, &end, 10);
	if (errno || *end || v <= page || (v & (v - 1)))
		return 0;
	return v;
}

int t_user_page(uintptr_t p)
{
	void *m = mmap((void *)p, t_page_size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (m == MAP_FAILED)
		return errno == EEXIST;
	munmap(m, t_page_size);
	return (uintptr_t)m == p;
}

/*
 * TASK_SIZE: the largest of the architecture's possible ends whose last
 * page is user address space. The kernel maps a page above the default
 * window only when asked for it, as MAP_FIXED_NOREPLACE does.
 */
static size_t t_probe_task_size(void)
{
#ifdef __aarch64__
	/* 1 << VA_BITS: 52 (LPA2 or 64 KiB pages), 48, 47 (16 KiB), 42, 39. */
	static const int bits[] = { 52, 48, 47, 42, 39 };
	size_t less = 0;
#else
	/* 5- or 4-level paging, less a guard page. */
	static const int bits[] = { 56, 47 };
	size_t less = t_page_size;
#endif
	size_t end = 0;

	for (size_t i = 0; i < ARRAY_SIZE(bits); i++) {
		end = (1UL << bits[i]) - less;
		if (t_user_page(end - t_page_size))
			break;
	}
	return end;
}

static void __attribute__((constructor)) t_geometry_init(void)
{
	long page = sysconf(_SC_PAGESIZE);

	if (page <= 0 || (page & (page - 1)) || (size_t)page > T_PAGE_MAX) {
		fprintf(stderr, "tlib: unusable page size %ld\n", page);
		exit(2);
	}
	t_page_size = page;
	/* A page table is a page of 8-byte entries. */
	t_table_entries = t_page_size / 8;
	t_pmd_size = t_read_pmd_size(t_page_size);
	if (!t_pmd_size)
		t_pmd_size = t_page_size * t_table_entries;
	t_pud_size = t_pmd_size * t_table_entries;
#ifdef __aarch64__
	/* CONT_PTE_SHIFT: 16 entries of 4 KiB, 128 of 16 KiB, 32 of 64 KiB. */
	t_cont_size = t_page_size * (t_page_size == 4096 ? 16 : t_page_size == 16384 ? 128 : 32);
#else
	t_cont_size = 0;
#endif
	t_task_size = t_probe_task_size();
}

size_t t_geo(size_t v4k)
{
	size_t pud = v4k >> 30, pmd = (v4k >> 21) & 511, pg = (v4k >> 12) & 511;

	return pud * t_pud_size + pmd * t_pmd_size + pg * t_page_size + (v4k & 4095);
}
