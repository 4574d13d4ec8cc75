// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/self/maps and smaps readers, and guarded access: a fault
 * (SIGSEGV, SIGBUS) becomes a return value (tlib.h).
 */
#define _GNU_SOURCE
#include "tlib.h"

char t_maps_buf[1 << 20];

size_t t_maps_len;

int t_maps_snapshot(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	t_maps_len = 0;
	while ((n = read(fd, t_maps_buf + t_maps_len,
			 sizeof(t_maps_buf) - 1 - t_maps_len)) > 0)
		t_maps_len += n;
	close(fd);
	t_maps_buf[t_maps_len] = 0;
	return n < 0 ? -1 : 0;
}

static const char *t_hex(const char *s, unsigned long long *v)
{
	unsigned long long x = 0;

	for (;; s++) {
		unsigned int d = *s >= '0' && *s <= '9' ? *s - '0' :
				 *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : 16;

		if (d > 15)
			break;
		x = x << 4 | d;
	}
	*v = x;
	return s;
}

int t_maps_parse(uintptr_t lo, uintptr_t hi, struct t_map *out,
		 int max)
{
	const char *l = t_maps_buf, *end = t_maps_buf + t_maps_len;
	int n = 0;

	while (l < end) {
		const char *nl = memchr(l, '\n', end - l), *q;
		unsigned long long s, e, off, ino;

		if (!nl)
			nl = end;
		/* "start-end perms offset major:minor inode   path" */
		q = t_hex(l, &s);
		q = t_hex(q + 1, &e);
		if (e > lo && s < hi && q + 6 < nl) {
			if (n < max) {
				struct t_map *m = &out[n];
				size_t plen;

				memcpy(m->perms, q + 1, 4);
				m->perms[4] = 0;
				q = t_hex(q + 6, &off);
				q = memchr(q + 1, ' ', nl - q - 1);	/* skip dev */
				ino = q ? strtoull(q + 1, (char **)&q, 10) : 0;
				while (q && q < nl && *q == ' ')
					q++;
				plen = q ? nl - q : 0;
				m->start = s < lo ? lo : s;
				m->end = e > hi ? hi : e;
				/*
				 * Only a file's offset moves with the
				 * clipping: the kernel prints 0 for an
				 * anonymous VMA, and a clipped "offset" of one
				 * would be its distance to a VMA boundary
				 * outside [lo, hi) (a neighbouring
				 * reservation it merged with).
				 */
				m->off = ino ? off + (m->start - s) : off;
				m->inode = ino;
				if (plen >= sizeof(m->path))
					plen = sizeof(m->path) - 1;
				memcpy(m->path, q ? q : "", plen);
				m->path[plen] = 0;
			}
			n++;
		}
		l = nl + 1;
	}
	return n;
}

int t_maps_read(uintptr_t lo, uintptr_t hi, struct t_map *out,
		int max)
{
	if (t_maps_snapshot())
		return -1;
	return t_maps_parse(lo, hi, out, max);
}

int t_range_unmapped(const void *p, size_t len)
{
	struct t_map m;

	return t_maps_read((uintptr_t)p, (uintptr_t)p + len, &m, 1) == 0;
}

int t_range_mapped_as(const void *p, size_t len, const char *perms)
{
	struct t_map m[64];
	uintptr_t at = (uintptr_t)p;
	int n = t_maps_read((uintptr_t)p, (uintptr_t)p + len, m, 64);

	if (n <= 0 || n > 64)
		return 0;
	for (int i = 0; i < n; i++) {
		if (m[i].start != at || strcmp(m[i].perms, perms))
			return 0;
		at = m[i].end;
	}
	return at == (uintptr_t)p + len;
}

int t_smaps_ranges(const struct t_range *r, int n, struct t_smaps *out)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	struct t_smaps *in = NULL;

	memset(out, 0, n * sizeof(*out));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		char perms[8];
		long v;

		if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) == 3) {
			in = NULL;	/* the ranges do not overlap */
			for (int i = 0; i < n; i++)
				if (e > r[i].lo && s < r[i].hi)
					in = &out[i];
			if (in)
				in->vmas++;
		} else if (!in) {
			continue;
		} else if (sscanf(line, "Rss: %ld", &v) == 1) {
			in->rss_kb += v;
		} else if (sscanf(line, "AnonHugePages: %ld", &v) == 1) {
			in->anon_huge_kb += v;
		} else if (sscanf(line, "Swap: %ld", &v) == 1) {
			in->swap_kb += v;
		} else if (sscanf(line, "Locked: %ld", &v) == 1) {
			in->locked_kb += v;
		}
	}
	fclose(f);
	return 0;
}

int t_smaps_range(uintptr_t lo, uintptr_t hi, struct t_smaps *out)
{
	struct t_range r = { lo, hi };

	return t_smaps_ranges(&r, 1, out);
}

static char t_smaps_buf[1 << 20];

int t_vmas_read(uintptr_t lo, uintptr_t hi, struct t_vma *out, int max)
{
	int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC), n = 0;
	struct t_vma *cur = NULL;
	size_t len = 0;
	ssize_t r;
	char *l, *nl;

	if (fd < 0)
		return -1;
	while ((r = read(fd, t_smaps_buf + len, sizeof(t_smaps_buf) - 1 - len)) > 0)
		len += r;
	close(fd);
	if (r < 0 || len == sizeof(t_smaps_buf) - 1)
		return -1;
	t_smaps_buf[len] = 0;
	for (l = t_smaps_buf; *l; l = nl + 1) {
		unsigned long long s, e;
		const char *q;

		nl = strchr(l, '\n');
		if (!nl)
			break;
		*nl = 0;
		if (!strncmp(l, "VmFlags:", 8)) {
			if (cur) {
				size_t k = snprintf(cur->flags, sizeof(cur->flags), "%s", l + 9);

				while (k > 0 && k < sizeof(cur->flags) && cur->flags[k - 1] == ' ')
					cur->flags[--k] = 0;
			}
			continue;
		}
		/* A VMA's line: "start-end perms ...", the fields' "Key: value". */
		q = t_hex(l, &s);
		if (*q != '-')
			continue;
		q = t_hex(q + 1, &e);
		cur = NULL;
		if (*q != ' ' || e <= lo || s >= hi)
			continue;
		if (n < max) {
			cur = &out[n];
			memset(cur, 0, sizeof(*cur));
			cur->start = s < lo ? lo : s;
			cur->end = e > hi ? hi : e;
			memcpy(cur->perms, q + 1, 4);
		}
		n++;
	}
	return n;
}

__thread sigjmp_buf t_probe_env;

__thread volatile int t_probe_armed;

static void t_probe_handler(int sig)
{
	if (t_probe_armed) {
		t_probe_armed = 0;
		siglongjmp(t_probe_env, 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

void t_probe_init(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = t_probe_handler;
	/* No mask to restore on the way out: sigsetjmp(env, 0) stays cheap. */
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

int t_probe_read(const void *p, uint64_t *v)
{
	if (sigsetjmp(t_probe_env, 0))
		return -1;
	t_probe_armed = 1;
	*v = *(const volatile uint64_t *)p;
	t_probe_armed = 0;
	return 0;
}

/* Copies a page from src to dst: 0, or -1 if the access faulted. */
static int t_probe_memcpy_page(void *dst, const void *src)
{
	if (sigsetjmp(t_probe_env, 0))
		return -1;
	t_probe_armed = 1;
	memcpy(dst, src, PG);
	t_probe_armed = 0;
	return 0;
}

int t_probe_copy_page(void *buf, const void *p)
{
	return t_probe_memcpy_page(buf, p);
}

int t_probe_cmp_page(const void *a, const void *b)
{
	int r;

	if (sigsetjmp(t_probe_env, 0))
		return -1;
	t_probe_armed = 1;
	r = memcmp(a, b, PG) != 0;
	t_probe_armed = 0;
	return r;
}

int t_probe_write_page(void *p, const void *buf)
{
	return t_probe_memcpy_page(p, buf);
}
