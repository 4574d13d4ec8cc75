// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_MOVE, the tagged heap, its model and checker, and
 * UFFDIO_MOVE's presence (tlib.h).
 */
#define _GNU_SOURCE
#include "tlib.h"

uint64_t t_tag(uint64_t seed, size_t pg)
{
	return t_mix64(seed * 0x9e3779b97f4a7c15ULL + pg) | 1;
}

int t_move(int fd, const struct fastremap_move_vec *v,
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

void t_tag_fill(char *p, uint64_t tag)
{
	((volatile uint64_t *)p)[0] = tag;
	((volatile uint64_t *)p)[PAGE_WORDS - 1] = ~tag;
}

void t_tags_write(char *p, size_t len, uint64_t seed, uint64_t first)
{
	for (size_t i = 0; i < len / PG; i++)
		t_tag_fill(p + i * PG, t_tag(seed, first + i));
}

int t_tags_check(const char *p, size_t len, uint64_t seed, uint64_t first)
{
	for (size_t i = 0; i < len / PG; i++) {
		const volatile uint64_t *w = (const volatile uint64_t *)(p + i * PG);
		uint64_t tag = t_tag(seed, first + i);

		if (w[0] != tag || w[PAGE_WORDS - 1] != ~tag)
			return -1;
	}
	return 0;
}

int t_mv_fits(const uint64_t *work, const uint8_t *used_src, const uint8_t *used_dst,
	      size_t s, size_t d, size_t len, int holes)
{
	if (s + len > d && d + len > s)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (used_src[s + i] || used_dst[d + i] || work[d + i] || !(holes || work[s + i]))
			return 0;
	return 1;
}

void t_mv_add(struct fastremap_move_vec *v, char *heap, uint64_t *work, uint8_t *used_src,
	      uint8_t *used_dst, size_t s, size_t d, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		used_src[s + i] = 1;
		used_dst[d + i] = 1;
		work[d + i] = work[s + i];
		work[s + i] = 0;
	}
	v->src = (uintptr_t)heap + s * PG;
	v->dst = (uintptr_t)heap + d * PG;
	v->len = len * PG;
}

void t_mv_model(uint64_t *tags, uintptr_t base,
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

int t_pagemap_fd = -1;

int t_pagemap(const void *p, size_t npages, uint64_t *out)
{
	size_t want = npages * 8;
	ssize_t r;

	if (t_pagemap_fd < 0)
		t_pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (t_pagemap_fd < 0)
		return -1;
	r = pread(t_pagemap_fd, out, want, (uintptr_t)p / PG * 8);
	return r == (ssize_t)want ? 0 : -1;
}

long t_mv_verify(const char *base, size_t npages,
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
	if (!pm || t_pagemap(base, npages, pm))
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

int t_mv_set_pass(unsigned long pages)
{
	char b[32];

	snprintf(b, sizeof(b), "%lu", pages);
	return t_write_str(MV_PASS, b);
}

void t_mv_holes_kept(int restore)
{
	static char none0[16];

	if (!restore) {
		if (!t_read_str(MV_KHP "max_ptes_none", none0, sizeof(none0)))
			t_write_str(MV_KHP "max_ptes_none", "0");
	} else if (none0[0]) {
		t_write_str(MV_KHP "max_ptes_none", none0);
		none0[0] = 0;
	}
}

long t_mv_collapsed(void)
{
	char b[32];

	return t_read_str(MV_KHP "pages_collapsed", b, sizeof(b)) ? -1 : atol(b);
}

char *t_maps_range(const void *p, size_t len)
{
	struct t_map m[64];
	int n = t_maps_read((uintptr_t)p, (uintptr_t)p + len, m, 64);
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


int t_move_supported(int fd)
{
	struct fastremap_move m = { .size = sizeof(m) };
	struct fastremap_info i;
	long r;

	if (t_info(fd, &i) || (i.features & FASTREMAP_FEAT_MOVE))
		return 1;
	r = ioctl(fd, FASTREMAP_IOC_MOVE, &m);
	tap_ok(!(i.ioctls & (1ULL << _IOC_NR(FASTREMAP_IOC_MOVE))) && r == -1 &&
	       errno == ENOTTY,
	       "no FASTREMAP_FEAT_MOVE: INFO lists no FASTREMAP_IOC_MOVE, and the ioctl gives ENOTTY");
	tap_skip_test("no FASTREMAP_IOC_MOVE on this kernel", "FASTREMAP_IOC_MOVE's cases");
	return 0;
}

int t_open_mover(void)
{
	int fd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		tap_ok(0, "open %s: %s", FASTREMAP_DEVICE, strerror(errno));
		return -1;
	}
	if (!t_move_supported(fd)) {
		close(fd);
		return -1;
	}
	return fd;
}

int t_have_uffd_move(void)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_MOVE };
	int uffd = syscall(SYS_userfaultfd, O_CLOEXEC), ok;

	if (uffd < 0)
		return 0;
	ok = !ioctl(uffd, UFFDIO_API, &api) && (api.features & UFFD_FEATURE_MOVE);
	close(uffd);
	return ok;
}

long t_soft_dirty_pages(const void *p, size_t len, long *present)
{
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	long n = 0;

	*present = 0;
	if (pm < 0)
		return -1;
	for (size_t off = 0; off < len; off += PG) {
		uint64_t e;

		if (pread(pm, &e, sizeof(e), ((uintptr_t)p + off) / PG * 8) != sizeof(e)) {
			close(pm);
			return -1;
		}
		*present += !!(e & PM_PRESENT);
		n += (e & PM_SOFT_DIRTY) && (e & PM_PRESENT);
	}
	close(pm);
	return n;
}

int t_clear_soft_dirty(void)
{
	return t_write_str("/proc/self/clear_refs", "4");
}
