/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the FASTREMAP_IOC_MOVE tests: the ioctl, a heap whose pages
 * carry tags (a tag names the page's original place, so a page found
 * anywhere says where it came from), a model of what a batch does, and a
 * checker of every page against the model through /proc/self/pagemap
 * (holes are checked without touching them: reading one would map the
 * zero page there). Include after remap_util.h.
 */
#ifndef FR_MOVE_UTIL_H
#define FR_MOVE_UTIL_H

#include <sys/wait.h>

#define PM_PRESENT	(1ULL << 63)
#define PM_SWAP		(1ULL << 62)
#define PM_SOFT_DIRTY	(1ULL << 55)
#define PM_PFN(x)	((x) & ((1ULL << 55) - 1))

/* A page's tag: nonzero, and unlike any pattern a fresh page holds. */
static inline uint64_t mv_tag(uint64_t seed, size_t pg)
{
	return fr_mix64(seed * 0x9e3779b97f4a7c15ULL + pg) | 1;
}

/*
 * FASTREMAP_IOC_MOVE. Returns 0 or -1 with errno; *out (may be NULL)
 * receives the structure as the module left it.
 */
static inline int fr_move(int fd, const struct fastremap_move_vec *v,
			  uint32_t n, uint32_t flags, struct fastremap_move *out)
{
	struct fastremap_move m;
	int r, e;

	memset(&m, 0, sizeof(m));
	m.size = sizeof(m);
	m.flags = flags;
	m.moves = (uintptr_t)v;
	m.count = n;
	r = ioctl(fd, FASTREMAP_IOC_MOVE, &m);
	e = errno;
	if (out)
		*out = m;
	errno = e;
	return r;
}

/* Writes a page's tag into its first and last words. */
static inline void mv_fill(char *p, uint64_t tag)
{
	((volatile uint64_t *)p)[0] = tag;
	((volatile uint64_t *)p)[PAGE_WORDS - 1] = ~tag;
}

/*
 * The model: tags[i] is what page i of the heap holds, 0 for a hole
 * (nothing mapped), MV_ZERO for the shared zero page.
 */
#define MV_ZERO	2ULL

/* Applies moves [0, done) and done_bytes of moves[done] to the model. */
static inline void mv_model(uint64_t *tags, uintptr_t base,
			    const struct fastremap_move_vec *v, uint32_t n,
			    uint64_t done, uint64_t done_bytes)
{
	for (uint64_t k = 0; k < n && k <= done; k++) {
		uint64_t len = k < done ? v[k].len : done_bytes;
		size_t s = (v[k].src - base) / PG, d = (v[k].dst - base) / PG;

		for (size_t i = 0; i < len / PG; i++) {
			tags[d + i] = tags[s + i];
			tags[s + i] = 0;
		}
	}
}

static int mv_pagemap_fd = -1;

/* The pagemap entries of npages pages from p. */
static inline int mv_pagemap(const void *p, size_t npages, uint64_t *out)
{
	size_t want = npages * 8;
	ssize_t r;

	if (mv_pagemap_fd < 0)
		mv_pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (mv_pagemap_fd < 0)
		return -1;
	r = pread(mv_pagemap_fd, out, want, (uintptr_t)p / PG * 8);
	return r == (ssize_t)want ? 0 : -1;
}

/*
 * Checks every page of the heap against the model: a hole is neither
 * present nor swapped; a tagged page holds its tag (swapped pages are
 * read, which faults them back); the zero page reads zero. Returns the
 * index of the first wrong page, or -1; *why says what was wrong.
 */
static inline long mv_verify(const char *base, size_t npages,
			     const uint64_t *tags, const char **why)
{
	static uint64_t *pm;
	static size_t pm_n;

	if (pm_n < npages) {
		free(pm);
		pm = malloc(npages * 8);
		pm_n = pm ? npages : 0;
	}
	*why = "pagemap unreadable";
	if (!pm || mv_pagemap(base, npages, pm))
		return 0;
	for (size_t i = 0; i < npages; i++) {
		const volatile uint64_t *w = (const volatile uint64_t *)(base + i * PG);

		if (!tags[i]) {
			*why = "a hole is mapped";
			if (pm[i] & (PM_PRESENT | PM_SWAP))
				return i;
			continue;
		}
		*why = "a page is missing";
		if (!(pm[i] & (PM_PRESENT | PM_SWAP)))
			return i;
		if (tags[i] == MV_ZERO) {
			*why = "the zero page reads nonzero";
			if (w[0] || w[PAGE_WORDS - 1])
				return i;
			continue;
		}
		*why = "a page holds another page's data";
		if (w[0] != tags[i] || w[PAGE_WORDS - 1] != ~tags[i])
			return i;
	}
	return -1;
}

#define MV_PASS	"/sys/module/fastremap/parameters/move_pass_pages"

/*
 * Sets the test build's FASTREMAP_IOC_MOVE pass to @pages pages (0: the
 * built-in bound), so that small batches run in many passes as batches
 * past the bound do. 0 or -1 (a module without test hooks).
 */
static inline int mv_set_pass(unsigned long pages)
{
	char b[32];

	snprintf(b, sizeof(b), "%lu", pages);
	return fr_write_str(MV_PASS, b);
}

#define MV_KHP	"/sys/kernel/mm/transparent_hugepage/khugepaged/"

/*
 * A collapse (khugepaged's, or MADV_COLLAPSE) fills the holes of the PMD
 * range it collapses with zeroed subpages, up to max_ptes_none of them
 * (511 by default): a model of a THP heap with holes sees that as "a hole
 * is mapped" and the next move into the hole as EEXIST, both right for a
 * populated destination (debug7, t_stress 10). A test of such a heap runs
 * with max_ptes_none 0, so khugepaged still collapses the fully populated
 * ranges behind the moves but never maps a hole; 1 restores the value.
 * Collapses before and after are counted by mv_collapsed() for the report.
 */
static inline void mv_holes_kept(int restore)
{
	static char none0[16];

	if (!restore) {
		if (!fr_read_str(MV_KHP "max_ptes_none", none0, sizeof(none0)))
			fr_write_str(MV_KHP "max_ptes_none", "0");
	} else if (none0[0]) {
		fr_write_str(MV_KHP "max_ptes_none", none0);
		none0[0] = 0;
	}
}

/* khugepaged's collapses so far, -1 without its sysfs. */
static inline long mv_collapsed(void)
{
	char b[32];

	return fr_read_str(MV_KHP "pages_collapsed", b, sizeof(b)) ? -1 : atol(b);
}

/*
 * The mappings over [p, p + len), one "start-end perms offset" line each,
 * for a before/after comparison (malloc'ed; NULL on failure).
 */
static inline char *mv_maps_range(const void *p, size_t len)
{
	struct fr_map m[64];
	int n = maps_read((uintptr_t)p, (uintptr_t)p + len, m, 64);
	char *s = malloc(64 * 64), *at = s;

	if (!s || n < 0 || n > 64) {
		free(s);
		return NULL;
	}
	*at = 0;
	for (int i = 0; i < n; i++)
		at += sprintf(at, "%lx-%lx %s %llx\n", (unsigned long)m[i].start,
			      (unsigned long)m[i].end, m[i].perms,
			      (unsigned long long)m[i].off);
	return s;
}

static inline int mv_vma_count(void)
{
	int n = 0;

	if (maps_snapshot())
		return -1;
	for (size_t i = 0; i < fr_maps_len; i++)
		n += fr_maps_buf[i] == '\n';
	return n;
}

/*
 * UFFDIO_MOVE (6.8+), which t_move_uffd compares with and t_move_order
 * races against: Debian 12's headers predate it (the kernels under test
 * have it). UFFD_USER_MODE_ONLY (5.11) for the same reason.
 */
#include <linux/userfaultfd.h>
#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE			(1 << 16)
#define _UFFDIO_MOVE				(0x05)
#define UFFDIO_MOVE_MODE_DONTWAKE		((__u64)1 << 0)
#define UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES	((__u64)1 << 1)
struct uffdio_move {
	__u64 dst;
	__u64 src;
	__u64 len;
	__u64 mode;
	__s64 move;
};
#define UFFDIO_MOVE	_IOWR(UFFDIO, _UFFDIO_MOVE, struct uffdio_move)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY			1
#endif

/* Whether the running kernel has UFFDIO_MOVE (6.1 refuses the feature). */
static inline int fr_have_uffd_move(void)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_MOVE };
	int uffd = syscall(SYS_userfaultfd, O_CLOEXEC), ok;

	if (uffd < 0)
		return 0;
	ok = !ioctl(uffd, UFFDIO_API, &api) && (api.features & UFFD_FEATURE_MOVE);
	close(uffd);
	return ok;
}

#endif /* FR_MOVE_UTIL_H */
