/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the FASTREMAP_IOC_REMAP test programs: the ioctl
 * wrapper (with a no-device mode that calls mremap(2) instead, so that the
 * tests' own checks can be exercised on a host without the module), a
 * seeded pattern, aligned placement, /proc/self/maps and smaps readers,
 * a guarded page probe, and a tlb:tlb_flush tracepoint counter.
 *
 * Include after defining _GNU_SOURCE. x86-64 only (4 KiB pages, 2 MiB PMDs,
 * 1 GiB PUDs). Not thread-safe except where a function says otherwise.
 */
#ifndef FR_REMAP_UTIL_H
#define FR_REMAP_UTIL_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before including remap_util.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/fastremap.h>
#include "tap.h"

#ifndef MREMAP_MAYMOVE
#define MREMAP_MAYMOVE		1
#endif
#ifndef MREMAP_FIXED
#define MREMAP_FIXED		2
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE	0x100000
#endif

#define PG		4096UL
#define SZ_4K		(4UL << 10)
#define SZ_8K		(8UL << 10)
#define SZ_1M		(1UL << 20)
#define SZ_2M		(2UL << 20)
#define SZ_4M		(4UL << 20)
#define SZ_1G		(1UL << 30)
#define PMD_SZ		SZ_2M
#define PUD_SZ		SZ_1G
#define PAGE_WORDS	(PG / sizeof(uint64_t))

/*
 * The end of the user address space, as mremap(2) checks it: x86-64's
 * TASK_SIZE_MAX; arm64's 48-bit user space (Debian's kernels: VA_BITS 48,
 * or 52 with mappings above 48 bits only on request).
 */
#if defined(__aarch64__)
#define FR_TASK_SIZE	(1UL << 48)
#else
#define FR_TASK_SIZE	0x7ffffffff000UL
#endif

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define FR_ALIGN_UP(x, a)	(((x) + (a) - 1) & ~((uintptr_t)(a) - 1))
#define FR_NO_COUNT	(~0ULL)	/* counters in no-device mode */

/* ---------------------------------------------------------------------- */
/* The ioctl, or mremap(2) in no-device mode                                */

/*
 * No-device mode: FASTREMAP_TEST_NO_DEVICE=1 in the environment, or
 * --selftest-mremap on the command line (see fr_parse_args()). fr_remap()
 * then calls the mremap syscall and reports every counter as FR_NO_COUNT,
 * and the tests skip the checks that need the module (counters, ABI).
 */
static int fr_no_device = -1;

static inline int fr_nodev(void)
{
	if (fr_no_device < 0) {
		const char *e = getenv("FASTREMAP_TEST_NO_DEVICE");

		fr_no_device = e && *e && strcmp(e, "0") != 0;
	}
	return fr_no_device;
}

/* Removes --selftest-mremap from argv (switching to no-device mode). */
static inline void fr_parse_args(int *argc, char **argv)
{
	int j = 1;

	for (int i = 1; i < *argc; i++) {
		if (!strcmp(argv[i], "--selftest-mremap"))
			fr_no_device = 1;
		else
			argv[j++] = argv[i];
	}
	*argc = j;
	argv[j] = NULL;
	fr_nodev();
}

/* Opens the device; in no-device mode, /dev/null stands in for it. */
static inline int fr_open(void)
{
	if (fr_nodev()) {
		tap_diag("NO-DEVICE MODE: fr_remap() is mremap(2); counter and ABI checks are skipped");
		return open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	return open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
}

/* The raw mremap syscall: all five arguments passed as given. */
/*
 * fork(2) without the C library (no atfork handlers, no locks of its
 * own). arm64 has no fork system call: clone(SIGCHLD) is fork on every
 * architecture, and with the other arguments zero their order (which
 * differs) does not matter.
 */
static inline pid_t fr_raw_fork(void)
{
	return syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
}

static inline void *sys_mremap(void *old, size_t old_size, size_t new_size,
			       unsigned int flags, void *new_addr)
{
	return (void *)syscall(SYS_mremap, old, old_size, new_size,
			       (unsigned long)flags, new_addr);
}

static inline void fr_req_init(struct fastremap_remap *r, void *old,
			       size_t old_size, size_t new_size,
			       unsigned int flags, void *new_addr)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	r->mremap_flags = flags;
	r->old_addr = (uintptr_t)old;
	r->old_size = old_size;
	r->new_size = new_size;
	r->new_addr = (uintptr_t)new_addr;
}

/*
 * FASTREMAP_IOC_REMAP with the arguments of mremap(2). Returns the new
 * address, or MAP_FAILED with errno set. *out (may be NULL) receives the
 * structure as the module left it.
 */
static inline void *fr_remap(int fd, void *old, size_t old_size,
			     size_t new_size, unsigned int flags, void *new_addr,
			     struct fastremap_remap *out)
{
	struct fastremap_remap r;
	void *p;
	int e;

	fr_req_init(&r, old, old_size, new_size, flags, new_addr);
	if (fr_nodev()) {
		p = sys_mremap(old, old_size, new_size, flags, new_addr);
		e = errno;
		if (p != MAP_FAILED)
			r.new_addr = (uintptr_t)p;
		r.moved_pud = r.moved_pmd = r.moved_thp = r.moved_pte = FR_NO_COUNT;
		r.tlb_flushes = FR_NO_COUNT;
	} else {
		p = ioctl(fd, FASTREMAP_IOC_REMAP, &r) ? MAP_FAILED :
			(void *)(uintptr_t)r.new_addr;
		e = errno;
	}
	if (out)
		*out = r;
	errno = e;
	return p;
}

/*
 * The most TLB flushes the module may issue for a move of len bytes: one
 * per pass, and a pass covers at least 1 GiB (pgmove.c's FR_PASS_BUDGET:
 * 2^18 PTEs, or as many whole entries).
 */
static inline uint64_t fr_max_flushes(size_t len)
{
	return len <= (1UL << 30) ? 1 : (len + (1UL << 30) - 1) >> 30;
}

/* Whether the counters of a fr_remap() result mean anything. */
static inline int fr_counted(const struct fastremap_remap *r)
{
	return r->tlb_flushes != FR_NO_COUNT;
}

/* FASTREMAP_IOC_INFO; in no-device mode, a zeroed answer. */
static inline int fr_info(int fd, struct fastremap_info *i)
{
	memset(i, 0, sizeof(*i));
	i->size = sizeof(*i);
	if (fr_nodev())
		return 0;
	return ioctl(fd, FASTREMAP_IOC_INFO, i);
}

/* ---------------------------------------------------------------------- */
/* Seeded pattern                                                          */

static inline uint64_t fr_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static inline uint64_t fr_xorshift64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/*
 * The pattern of page pgidx of a region: an xorshift64 stream started
 * from (seed, pgidx), so that any page can be checked on its own.
 */
static inline uint64_t fr_page_state(uint64_t seed, uint64_t pgidx)
{
	return fr_mix64(seed ^ fr_mix64(pgidx)) | 1;
}

static inline void pattern_page(uint64_t *w, uint64_t seed, uint64_t pgidx)
{
	uint64_t s = fr_page_state(seed, pgidx);

	for (size_t i = 0; i < PAGE_WORDS; i++)
		w[i] = fr_xorshift64(&s);
}

/* Fills [p, p+len) (len a multiple of PG) as pages first_pg... of a region. */
static inline void fill_pattern_off(void *p, size_t len, uint64_t seed,
				    uint64_t first_pg)
{
	for (size_t off = 0; off < len; off += PG)
		pattern_page((uint64_t *)((char *)p + off), seed,
			     first_pg + off / PG);
}

static inline void fill_pattern(void *p, size_t len, uint64_t seed)
{
	fill_pattern_off(p, len, seed, 0);
}

/* Returns the offset of the first bad word of the page, or -1. */
static inline long check_page(const void *p, uint64_t seed, uint64_t pgidx)
{
	const volatile uint64_t *w = p;
	uint64_t s = fr_page_state(seed, pgidx);

	for (size_t i = 0; i < PAGE_WORDS; i++)
		if (w[i] != fr_xorshift64(&s))
			return i * sizeof(uint64_t);
	return -1;
}

/*
 * Checks [p, p+len) against the pattern of pages first_pg... . With
 * sample_step <= PG every page is checked; otherwise the pages at offsets
 * 0, step, 2*step... and the last page. Returns the first bad offset or -1.
 */
static inline long verify_pattern_off(const void *p, size_t len, uint64_t seed,
				      uint64_t first_pg, size_t sample_step)
{
	size_t step = sample_step <= PG ? PG : sample_step & ~(PG - 1);
	long bad;

	for (size_t off = 0; off < len; off += step) {
		bad = check_page((const char *)p + off, seed, first_pg + off / PG);
		if (bad >= 0)
			return off + bad;
	}
	if (len >= PG && step > PG) {
		size_t last = (len - 1) & ~(PG - 1);

		bad = check_page((const char *)p + last, seed, first_pg + last / PG);
		if (bad >= 0)
			return last + bad;
	}
	return -1;
}

static inline long verify_pattern(const void *p, size_t len, uint64_t seed,
				  size_t sample_step)
{
	return verify_pattern_off(p, len, seed, 0, sample_step);
}

/* Checks that sampled pages of [p, p+len) read zero; as verify_pattern(). */
static inline long verify_zero(const void *p, size_t len, size_t sample_step)
{
	size_t step = sample_step <= PG ? PG : sample_step & ~(PG - 1);

	for (size_t off = 0; off < len; off += step) {
		const volatile uint64_t *w = (const void *)((const char *)p + off);

		for (size_t i = 0; i < PAGE_WORDS; i++)
			if (w[i])
				return off + i * sizeof(uint64_t);
	}
	return -1;
}

/*
 * Sparse touching, for regions too big to fill under emulation: one page
 * per chunk (chunk a multiple of PG) gets the pattern; which page of the
 * chunk is derived from the seed. These helpers say which one.
 */
static inline size_t sparse_page(size_t len, uint64_t seed, size_t chunk,
				 size_t k)
{
	size_t per = chunk / PG, off = k * chunk;
	size_t pg = fr_mix64(seed * 31 + k) % per;

	if (off + pg * PG >= len)	/* a short last chunk */
		pg = (len - off) / PG - 1;
	return off + pg * PG;
}

/* Writes the pattern into one page per chunk; returns the pages touched. */
static inline size_t touch_sparse(void *p, size_t len, uint64_t seed,
				  size_t chunk)
{
	size_t n = 0;

	for (size_t k = 0; k * chunk < len; k++, n++) {
		size_t off = sparse_page(len, seed, chunk, k);

		pattern_page((uint64_t *)((char *)p + off), seed, off / PG);
	}
	return n;
}

/*
 * Checks the pages touch_sparse() wrote and, with check_zero, that another
 * page of each chunk reads zero. Returns the first bad offset or -1.
 */
static inline long verify_sparse(const void *p, size_t len, uint64_t seed,
				 size_t chunk, int check_zero)
{
	for (size_t k = 0; k * chunk < len; k++) {
		size_t off = sparse_page(len, seed, chunk, k);
		size_t z = off + PG < len && off + PG < (k + 1) * chunk ?
			   off + PG : k * chunk;
		long bad = check_page((const char *)p + off, seed, off / PG);

		if (bad >= 0)
			return off + bad;
		if (check_zero && z != off && verify_zero((const char *)p + z, PG, 0) >= 0)
			return z;
	}
	return -1;
}

/* ---------------------------------------------------------------------- */
/* Placement                                                               */

/* A PROT_NONE reservation of address space. */
struct fr_area {
	char *base;
	size_t len;
};

static inline char *fr_reserve(size_t len, struct fr_area *a)
{
	a->len = len;
	a->base = mmap(NULL, len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a->base == MAP_FAILED) {
		a->base = NULL;
		return NULL;
	}
	return a->base;
}

/* Unmaps the whole reservation and whatever was put inside it. */
static inline void fr_release(struct fr_area *a)
{
	if (a->base)
		munmap(a->base, a->len);
	a->base = NULL;
}

/*
 * Reserves room for len bytes and returns an address inside the
 * reservation that is aligned to align but not to 2*align (as the
 * kernel's mremap_test does, to avoid coincidental larger alignment),
 * with at least a page of reservation on both sides.
 */
static inline char *fr_pick(size_t len, size_t align, struct fr_area *a)
{
	uintptr_t p;

	if (!fr_reserve(len + 2 * align + 2 * PG, a))
		return NULL;
	p = FR_ALIGN_UP((uintptr_t)a->base + PG, align);
	if (!(p & align))
		p += align;
	return (char *)p;
}

/*
 * Maps len bytes at an address aligned as fr_pick() says, with the given
 * mmap prot/flags/fd/offset (MAP_FIXED is added), inside a reservation
 * that fr_release() frees. Returns NULL on failure.
 */
static inline void *map_aligned(size_t len, size_t align, int prot, int flags,
				int fd, off_t off, struct fr_area *a)
{
	char *p = fr_pick(len, align, a), *m;

	if (!p)
		return NULL;
	m = mmap(p, len, prot, flags | MAP_FIXED, fd, off);
	if (m == MAP_FAILED) {
		int e = errno;

		fr_release(a);
		errno = e;
		return NULL;
	}
	return m;
}

/* ---------------------------------------------------------------------- */
/* /proc/self/maps and smaps                                               */

struct fr_map {
	uintptr_t start, end;
	char perms[5];
	uint64_t off;		/* file offset (pgoff << 12) at start */
	unsigned long inode;
	char path[96];
};

/* One read of /proc/self/maps, kept until the next. */
static char fr_maps_buf[1 << 20];
static size_t fr_maps_len;

static inline int maps_snapshot(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	fr_maps_len = 0;
	while ((n = read(fd, fr_maps_buf + fr_maps_len,
			 sizeof(fr_maps_buf) - 1 - fr_maps_len)) > 0)
		fr_maps_len += n;
	close(fd);
	fr_maps_buf[fr_maps_len] = 0;
	return n < 0 ? -1 : 0;
}

static inline const char *fr_hex(const char *s, unsigned long long *v)
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

/*
 * The entries of the last snapshot that intersect [lo, hi), clipped to it
 * (a file mapping's off follows the clipping). Returns the number of entries found, which
 * may exceed max (only max are stored).
 */
static inline int maps_parse(uintptr_t lo, uintptr_t hi, struct fr_map *out,
			     int max)
{
	const char *l = fr_maps_buf, *end = fr_maps_buf + fr_maps_len;
	int n = 0;

	while (l < end) {
		const char *nl = memchr(l, '\n', end - l), *q;
		unsigned long long s, e, off, ino;

		if (!nl)
			nl = end;
		/* "start-end perms offset major:minor inode   path" */
		q = fr_hex(l, &s);
		q = fr_hex(q + 1, &e);
		if (e > lo && s < hi && q + 6 < nl) {
			if (n < max) {
				struct fr_map *m = &out[n];
				size_t plen;

				memcpy(m->perms, q + 1, 4);
				m->perms[4] = 0;
				q = fr_hex(q + 6, &off);
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

/* Snapshot + parse. Returns the number of entries, or -1. */
static inline int maps_read(uintptr_t lo, uintptr_t hi, struct fr_map *out,
			    int max)
{
	if (maps_snapshot())
		return -1;
	return maps_parse(lo, hi, out, max);
}

/* Whether no mapping at all intersects [p, p+len). */
static inline int range_unmapped(const void *p, size_t len)
{
	struct fr_map m;

	return maps_read((uintptr_t)p, (uintptr_t)p + len, &m, 1) == 0;
}

/*
 * Whether [p, p+len) is covered without holes by mappings with permissions
 * perms ("rw-p"...); VMA boundaries inside do not matter.
 */
static inline int range_mapped_as(const void *p, size_t len, const char *perms)
{
	struct fr_map m[64];
	uintptr_t at = (uintptr_t)p;
	int n = maps_read((uintptr_t)p, (uintptr_t)p + len, m, 64);

	if (n <= 0 || n > 64)
		return 0;
	for (int i = 0; i < n; i++) {
		if (m[i].start != at || strcmp(m[i].perms, perms))
			return 0;
		at = m[i].end;
	}
	return at == (uintptr_t)p + len;
}

struct fr_smaps {
	long rss_kb;
	long anon_huge_kb;
	long swap_kb;
	long locked_kb;
	int vmas;
};

/*
 * Sums Rss, AnonHugePages, Swap and Locked (kB) over the VMAs intersecting
 * each range [r[i].lo, r[i].hi), into out[i], with one read of smaps.
 */
struct fr_range {
	uintptr_t lo, hi;
};

static inline int smaps_ranges(const struct fr_range *r, int n, struct fr_smaps *out)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	struct fr_smaps *in = NULL;

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

static inline int smaps_range(uintptr_t lo, uintptr_t hi, struct fr_smaps *out)
{
	struct fr_range r = { lo, hi };

	return smaps_ranges(&r, 1, out);
}

/* ---------------------------------------------------------------------- */
/* Guarded access: a fault (SIGSEGV, SIGBUS) becomes a return value        */

static __thread sigjmp_buf fr_probe_env;
static __thread volatile int fr_probe_armed;

static void fr_probe_handler(int sig)
{
	if (fr_probe_armed) {
		fr_probe_armed = 0;
		siglongjmp(fr_probe_env, 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Installs the handlers; call once before using the probes, from any thread. */
static inline void fr_probe_init(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fr_probe_handler;
	/* No mask to restore on the way out: sigsetjmp(env, 0) stays cheap. */
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

/* Reads the 64-bit word at p into *v: 0, or -1 if the access faulted. */
static inline int fr_probe_read(const void *p, uint64_t *v)
{
	if (sigsetjmp(fr_probe_env, 0))
		return -1;
	fr_probe_armed = 1;
	*v = *(const volatile uint64_t *)p;
	fr_probe_armed = 0;
	return 0;
}

/* Copies a page from p to buf: 0, or -1 if reading faulted. */
static inline int fr_probe_copy_page(void *buf, const void *p)
{
	if (sigsetjmp(fr_probe_env, 0))
		return -1;
	fr_probe_armed = 1;
	memcpy(buf, p, PG);
	fr_probe_armed = 0;
	return 0;
}

/* Compares a page at a and b: 0 equal, 1 different, -1 if reading faulted. */
static inline int fr_probe_cmp_page(const void *a, const void *b)
{
	int r;

	if (sigsetjmp(fr_probe_env, 0))
		return -1;
	fr_probe_armed = 1;
	r = memcmp(a, b, PG) != 0;
	fr_probe_armed = 0;
	return r;
}

/* Copies a page from buf to p: 0, or -1 if writing faulted. */
static inline int fr_probe_write_page(void *p, const void *buf)
{
	if (sigsetjmp(fr_probe_env, 0))
		return -1;
	fr_probe_armed = 1;
	memcpy(p, buf, PG);
	fr_probe_armed = 0;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* tlb:tlb_flush tracepoint                                                */

#define FR_TLB_REASONS 8

struct fr_tlb_counts {
	int total;		/* events of this process */
	int other;		/* events of other processes (not counted) */
	int nreasons;
	struct {
		char reason[48];
		int count;
	} r[FR_TLB_REASONS];
};

/*
 * arm64 has no TLB flush tracepoint that fires (the tlb:tlb_flush event
 * exists there, but only x86 emits it): its flushes are inline TLBI
 * sequences. There the flushes are counted with kprobe events instead,
 * each hit one flush, its "reason" the function's name:
 *  - fr_arch_flush_moved, the module's flush (module/arch.h keeps it out
 *    of line for this): what the ioctl flushed, counted apart from the
 *    module's own tlb_flushes counter;
 *  - mm/mremap.c's movers that end in one range flush each, those this
 *    kernel did not inline: move_normal_pmd, move_normal_pud (always),
 *    move_ptes and move_huge_pmd (when something present moved): for
 *    mremap(2) an upper bound of its flushes per call.
 */
#ifdef __aarch64__
#define FR_FLUSH_MODULE_FN	"fr_arch_flush_moved"
static const char *const fr_flush_kfns[] = {
	"move_ptes", "move_normal_pmd", "move_normal_pud", "move_huge_pmd",
};
#define FR_TLB_PROBE_FILE	"kprobe_events"
#else
#define FR_TLB_PROBE_FILE	"events/tlb/tlb_flush/enable"
#endif

/* The tracefs directory with the flush event (or kprobe events), or NULL. */
static inline const char *fr_tracefs(void)
{
	static const char *const dirs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char path[128];

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(path, sizeof(path), "%s/" FR_TLB_PROBE_FILE, dirs[i]);
		if (access(path, W_OK) == 0)
			return dirs[i];
	}
	return NULL;
}

static inline int fr_write_file(const char *dir, const char *name,
				const char *val, int flags)
{
	char path[160];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC | flags);
	if (fd < 0)
		return -errno;
	if (*val && write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Writes val to the file at path (sysfs, procfs, tracefs). 0 or -errno. */
static inline int fr_write_str(const char *path, const char *val)
{
	return fr_write_file("/", path, val, O_TRUNC);
}

/* Reads the file at path into buf, without trailing blanks. 0 or -1. */
static inline int fr_read_str(const char *path, char *buf, size_t n)
{
	int f = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (f < 0)
		return -1;
	r = read(f, buf, n - 1);
	close(f);
	if (r < 0)
		return -1;
	buf[r] = 0;
	while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == ' '))
		buf[--r] = 0;
	return 0;
}

/* Whether the kernel's log buffer holds @text (read as root). */
static inline int fr_kernel_log_has(const char *text)
{
	int n = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0), found;
	char *buf;

	if (n <= 0 || !(buf = malloc(n + 1)))
		return 0;
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, n);
	buf[n > 0 ? n : 0] = 0;
	found = strstr(buf, text) != NULL;
	free(buf);
	return found;
}

/* The number of this reason in c, added if new. */
static inline int *fr_tlb_slot(struct fr_tlb_counts *c, const char *reason)
{
	int i;

	for (i = 0; i < c->nreasons; i++)
		if (!strcmp(c->r[i].reason, reason))
			return &c->r[i].count;
	if (i == FR_TLB_REASONS)
		i--;	/* overflow: lump into the last one */
	else
		c->nreasons++;
	snprintf(c->r[i].reason, sizeof(c->r[i].reason), "%.47s", reason);
	return &c->r[i].count;
}

/* The count of one reason ("local mm shootdown"...), by prefix, any case. */
static inline int fr_tlb_reason(const struct fr_tlb_counts *c, const char *reason)
{
	int n = 0;

	for (int i = 0; i < c->nreasons; i++)
		if (!strncasecmp(c->r[i].reason, reason, strlen(reason)))
			n += c->r[i].count;
	return n;
}

static int fr_tlb_session;	/* tlb_trace_begin() was called */
static int fr_tlb_owned;	/* ... and enabled the event itself */
static char fr_tlb_was_on[4];	/* tracing_on before it */

/*
 * Starts a series of tlb_trace_count() calls; tlb_trace_end() ends it.
 * The test VMs enable the event on the kernel command line, and then it
 * is left alone: turning a tracepoint on or off patches kernel text under
 * every CPU, which on 7.2 under QEMU TCG can end in "Oops: int3" (see
 * tests/run.sh). Without that, the event is enabled here (with record-cmd
 * off first, or enabling it would hook sched_switch too) and disabled by
 * tlb_trace_end(). No filter either: lines are matched by pid when read.
 * Returns 0 or -errno.
 */
#ifdef __aarch64__
/* The kprobe events tlb_trace_begin() added, by function name. */
static char fr_tlb_probes[5][32];
static int fr_tlb_nprobes;

/* What the arm64 counts are made of, for the tests' diagnostics. */
static inline const char *tlb_trace_source(void)
{
	static char b[200];
	size_t at = 0;

	at += snprintf(b, sizeof(b), "kprobe events on");
	for (int i = 0; i < fr_tlb_nprobes && at < sizeof(b); i++)
		at += snprintf(b + at, sizeof(b) - at, " %s", fr_tlb_probes[i]);
	return b;
}

/* Whether tlb_trace_begin() could probe the kernel function @fn. */
static inline int fr_tlb_probed(const char *fn)
{
	for (int i = 0; i < fr_tlb_nprobes; i++)
		if (!strcmp(fr_tlb_probes[i], fn))
			return 1;
	return 0;
}

static inline int fr_tlb_add_probe(const char *dir, const char *fn,
				   const char *where)
{
	char cmd[128];
	int ret;

	snprintf(cmd, sizeof(cmd), "p:fr_flush/%s %s%s\n", fn, where, fn);
	ret = fr_write_file(dir, "kprobe_events", cmd, O_APPEND);
	if (!ret)
		snprintf(fr_tlb_probes[fr_tlb_nprobes++], sizeof(fr_tlb_probes[0]),
			 "%s", fn);
	return ret;
}

static inline void tlb_trace_end(void)
{
	const char *dir = fr_tracefs();
	char cmd[64];

	if (!dir || !fr_tlb_session)
		return;
	fr_write_file(dir, "events/fr_flush/enable", "0", O_TRUNC);
	for (int i = 0; i < fr_tlb_nprobes; i++) {
		snprintf(cmd, sizeof(cmd), "-:fr_flush/%.31s\n", fr_tlb_probes[i]);
		fr_write_file(dir, "kprobe_events", cmd, O_APPEND);
	}
	fr_tlb_nprobes = 0;
	fr_write_file(dir, "trace", "", O_TRUNC);
	fr_write_file(dir, "tracing_on", fr_tlb_was_on[0] == '0' ? "0" : "1", O_TRUNC);
	fr_tlb_session = fr_tlb_owned = 0;
}

/*
 * The module's flush must be probed (else -errno); each of mremap's
 * movers is probed if this kernel kept it out of line.
 */
static inline int tlb_trace_begin(void)
{
	const char *dir = fr_tracefs();
	char path[160];
	int ret;

	if (!dir)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/tracing_on", dir);
	if (fr_read_str(path, fr_tlb_was_on, sizeof(fr_tlb_was_on)))
		fr_tlb_was_on[0] = '1';
	fr_write_file(dir, "tracing_on", "0", O_TRUNC);
	fr_write_file(dir, "options/record-cmd", "0", O_TRUNC);
	fr_tlb_nprobes = 0;
	ret = fr_tlb_add_probe(dir, FR_FLUSH_MODULE_FN, "fastremap:");
	for (size_t i = 0; !ret && i < ARRAY_SIZE(fr_flush_kfns); i++)
		fr_tlb_add_probe(dir, fr_flush_kfns[i], "");
	if (!ret)
		ret = fr_write_file(dir, "events/fr_flush/enable", "1", O_TRUNC);
	fr_tlb_session = 1;
	if (ret)
		tlb_trace_end();
	return ret;
}
#else
static inline const char *tlb_trace_source(void)
{
	return "the tlb:tlb_flush tracepoint";
}

static inline int tlb_trace_begin(void)
{
	const char *dir = fr_tracefs();
	char path[160], on[4] = "";
	int ret = 0;

	if (!dir)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/tracing_on", dir);
	if (fr_read_str(path, fr_tlb_was_on, sizeof(fr_tlb_was_on)))
		fr_tlb_was_on[0] = '1';
	fr_write_file(dir, "tracing_on", "0", O_TRUNC);
	snprintf(path, sizeof(path), "%s/events/tlb/tlb_flush/enable", dir);
	if (fr_read_str(path, on, sizeof(on)))
		on[0] = 0;
	fr_tlb_owned = 0;
	if (on[0] != '1') {
		fr_write_file(dir, "options/record-cmd", "0", O_TRUNC);
		ret = fr_write_file(dir, "events/tlb/tlb_flush/enable", "1", O_TRUNC);
		fr_tlb_owned = !ret;
	}
	fr_tlb_session = !ret;
	return ret;
}

static inline void tlb_trace_end(void)
{
	const char *dir = fr_tracefs();

	if (!dir || !fr_tlb_session)
		return;
	if (fr_tlb_owned)
		fr_write_file(dir, "events/tlb/tlb_flush/enable", "0", O_TRUNC);
	fr_write_file(dir, "trace", "", O_TRUNC);
	fr_write_file(dir, "tracing_on", fr_tlb_was_on[0] == '0' ? "0" : "1", O_TRUNC);
	fr_tlb_session = fr_tlb_owned = 0;
}
#endif

/*
 * The event name of a trace line and where its fields start, or NULL:
 * "tlb_flush:" on x86; on arm64 "NAME:" of one of the probes.
 */
static inline char *fr_tlb_event(char *line, const char **name)
{
#ifdef __aarch64__
	char pat[48], *ev;

	for (int i = 0; i < fr_tlb_nprobes; i++) {
		snprintf(pat, sizeof(pat), " %.31s:", fr_tlb_probes[i]);
		ev = strstr(line, pat);
		if (ev) {
			*name = fr_tlb_probes[i];
			return ev + 1;
		}
	}
	return NULL;
#else
	*name = NULL;
	return strstr(line, "tlb_flush:");
#endif
}

/*
 * Counts the tlb:tlb_flush events of this process while fn(arg) runs:
 * clears the trace buffer, turns recording on (tracing_on), runs fn,
 * turns it off, reads the buffer and counts the
 * "tlb_flush: pages:N reason:R (n)" lines of this pid by reason. Inside
 * tlb_trace_begin()/tlb_trace_end() the event stays enabled; otherwise it
 * is enabled and disabled around the call. Returns 0, or -errno (-ENOENT:
 * no tracefs or no such event). Not for concurrent use.
 */
static inline int tlb_trace_count(void (*fn)(void *), void *arg,
				  struct fr_tlb_counts *out)
{
	const char *dir = fr_tracefs();
	char path[160], *line = NULL;
	size_t cap = 0;
	pid_t pid = getpid();
	int ret, own_session = 0;
	FILE *f;

	memset(out, 0, sizeof(*out));
	if (!dir)
		return -ENOENT;
	if (!fr_tlb_session) {
		ret = tlb_trace_begin();
		if (ret)
			return ret;
		own_session = 1;
	}
	ret = fr_write_file(dir, "trace", "", O_TRUNC);	/* clears it */
	if (!ret)
		ret = fr_write_file(dir, "tracing_on", "1", O_TRUNC);
	if (!ret)
		fn(arg);
	fr_write_file(dir, "tracing_on", "0", O_TRUNC);
	if (ret)
		goto out;

	snprintf(path, sizeof(path), "%s/trace", dir);
	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		goto out;
	}
	while (getline(&line, &cap, f) > 0) {
		const char *name;
		char *ev = fr_tlb_event(line, &name), *br, *q, *r, *nl;
		long lpid;

		if (line[0] == '#' || !ev)
			continue;
		/* "  comm-PID  [CPU] flags  ts: tlb_flush: pages:N reason:R (n)" */
		br = strstr(line, " [");
		if (!br || br > ev)
			continue;
		q = br;
		while (q > line && q[-1] == ' ')
			q--;
		while (q > line && q[-1] >= '0' && q[-1] <= '9')
			q--;
		lpid = strtol(q, NULL, 10);
		if (q == line || q[-1] != '-' || lpid != pid) {
			out->other++;
			continue;
		}
		if (name) {
			/* arm64: the probed function is the reason. */
			(*fr_tlb_slot(out, name))++;
			out->total++;
			continue;
		}
		r = strstr(ev, "reason:");
		r = r ? r + 7 : (char *)"?";
		nl = strchr(r, '\n');
		if (nl)
			*nl = 0;
		/* Drop the numeric " (n)" suffix. */
		q = strrchr(r, '(');
		if (q && q > r && q[-1] == ' ')
			q[-1] = 0;
		(*fr_tlb_slot(out, r))++;
		out->total++;
	}
	free(line);
	fclose(f);
out:
	if (own_session)
		tlb_trace_end();
	return ret;
}

/* ---------------------------------------------------------------------- */
/* Misc                                                                    */

static inline double fr_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static inline const char *fr_errname(int e)
{
	const char *n = e ? strerrorname_np(e) : "0";

	return n ? n : "?";
}

/* "MAYMOVE|FIXED|0x8" for diagnostics; returns a static buffer. */
static inline const char *fr_flagstr(unsigned int f)
{
	static __thread char b[64];
	size_t n = 0;

	b[0] = 0;
	if (f & MREMAP_MAYMOVE)
		n += snprintf(b + n, sizeof(b) - n, "MAYMOVE|");
	if (f & MREMAP_FIXED)
		n += snprintf(b + n, sizeof(b) - n, "FIXED|");
	if (f & MREMAP_DONTUNMAP)
		n += snprintf(b + n, sizeof(b) - n, "DONTUNMAP|");
	f &= ~(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP);
	if (f)
		n += snprintf(b + n, sizeof(b) - n, "%#x|", f);
	if (n)
		b[n - 1] = 0;
	else
		snprintf(b, sizeof(b), "0");
	return b;
}

/* ---------------------------------------------------------------------- */
/* Process-wide accounting, which a failed move must leave as it was        */

struct fr_acct {
	long committed_kb;	/* Committed_AS, exact (see fr_committed_kb()) */
	long vmlck_kb;		/* VmLck: mm->locked_vm */
	struct fr_smaps sm;	/* Rss, AnonHugePages, Swap, Locked over the ranges given */
};

/* A "Key: N" field of a /proc file, read without allocating; -1 if absent. */
static inline long fr_proc_field(const char *path, const char *key)
{
	static char buf[16384];
	size_t kl = strlen(key);
	ssize_t n;
	int f = open(path, O_RDONLY | O_CLOEXEC);

	if (f < 0)
		return -1;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	for (char *l = buf; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, key, kl) && l[kl] == ':')
			return strtol(l + kl + 1, NULL, 10);
	return -1;
}

/*
 * Committed_AS to the page: the kernel keeps it as a per-CPU counter whose
 * pending deltas (up to an eighth of memory per CPU under the default
 * overcommit policy) /proc/meminfo does not show. Switching the policy to
 * "never" folds them in (overcommit_policy_handler()), so the value read
 * right after is exact; the policy is then put back. Needs root.
 */
static inline long fr_committed_kb(void)
{
	static const char pol[] = "/proc/sys/vm/overcommit_memory";
	char old[16];
	long v;

	if (fr_read_str(pol, old, sizeof(old)) || fr_write_str(pol, "2"))
		return -1;
	v = fr_proc_field("/proc/meminfo", "Committed_AS");
	fr_write_str(pol, old);
	return v;
}

/*
 * Reads every counter of *a, the smaps ones summed over the VMAs that
 * intersect [lo, hi) (the whole process would count the caller's own first
 * touches of its stack and data too); 0, or -1 if one could not be read.
 */
static inline int fr_acct_read(struct fr_acct *a, uintptr_t lo, uintptr_t hi)
{
	a->committed_kb = fr_committed_kb();
	a->vmlck_kb = fr_proc_field("/proc/self/status", "VmLck");
	if (smaps_range(lo, hi, &a->sm))
		return -1;
	return a->committed_kb < 0 || a->vmlck_kb < 0 ? -1 : 0;
}

/* Describes the first difference between two readings into buf; 0 if none. */
static inline int fr_acct_diff(const struct fr_acct *a, const struct fr_acct *b,
			       char *buf, size_t n)
{
	static const struct { const char *name; size_t off; } f[] = {
		{ "Committed_AS", offsetof(struct fr_acct, committed_kb) },
		{ "VmLck", offsetof(struct fr_acct, vmlck_kb) },
		{ "Rss", offsetof(struct fr_acct, sm.rss_kb) },
		{ "AnonHugePages", offsetof(struct fr_acct, sm.anon_huge_kb) },
		{ "Swap", offsetof(struct fr_acct, sm.swap_kb) },
		{ "Locked", offsetof(struct fr_acct, sm.locked_kb) },
	};

	for (size_t i = 0; i < ARRAY_SIZE(f); i++) {
		long x = *(const long *)((const char *)a + f[i].off);
		long y = *(const long *)((const char *)b + f[i].off);

		if (x != y) {
			snprintf(buf, n, "%s %ld kB -> %ld kB", f[i].name, x, y);
			return 1;
		}
	}
	snprintf(buf, n, "Committed_AS %ld kB, VmLck %ld kB, Rss %ld kB, Locked %ld kB",
		 b->committed_kb, b->vmlck_kb, b->sm.rss_kb, b->sm.locked_kb);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Swap                                                                    */

/* The zram swap fr_swap_setup() turned on, to turn off; "" if none. */
static char fr_swap_dev[32];

/* Swap, if there is none, on a 256 MiB zram device: "" or why not. */
static inline const char *fr_swap_setup(void)
{
	static char why[160];
	char b[32], path[64];
	int idx = 0, f;
	long pages;
	static uint32_t hdr[PG / 4];

	if (fr_proc_field("/proc/meminfo", "SwapTotal") > 0)
		return "";
	if (!access("/sys/class/zram-control/hot_add", R_OK)) {
		if (fr_read_str("/sys/class/zram-control/hot_add", b, sizeof(b)))
			return "zram hot_add failed";
		idx = atoi(b);
	} else if (access("/sys/block/zram0/disksize", W_OK)) {
		return "no swap in /proc/swaps, and no zram (the zram module is not loaded and modprobe is unavailable)";
	}
	snprintf(path, sizeof(path), "/sys/block/zram%d/disksize", idx);
	if (fr_write_str(path, "268435456")) {
		snprintf(why, sizeof(why), "zram%d: cannot set disksize", idx);
		return why;
	}
	snprintf(fr_swap_dev, sizeof(fr_swap_dev), "/dev/zram%d", idx);
	f = open(fr_swap_dev, O_RDWR | O_CLOEXEC);
	if (f < 0) {
		snprintf(why, sizeof(why), "%s: %s", fr_swap_dev, strerror(errno));
		fr_swap_dev[0] = 0;
		return why;
	}
	/* A swap header: version 1, last_page, no bad pages, SWAPSPACE2. */
	pages = 268435456 / PG;
	memset(hdr, 0, sizeof(hdr));
	hdr[1024 / 4] = 1;
	hdr[1024 / 4 + 1] = pages - 1;
	memcpy((char *)hdr + PG - 10, "SWAPSPACE2", 10);
	if (pwrite(f, hdr, PG, 0) != PG || fsync(f)) {
		close(f);
		fr_swap_dev[0] = 0;
		return "cannot write the swap header";
	}
	close(f);
	if (syscall(SYS_swapon, fr_swap_dev, 0)) {
		snprintf(why, sizeof(why), "swapon %s: %s", fr_swap_dev, strerror(errno));
		fr_swap_dev[0] = 0;
		return why;
	}
	tap_diag("swap on %s (zram, 256M)", fr_swap_dev);
	return "";
}

static inline void fr_swap_off(void)
{
	if (fr_swap_dev[0])
		syscall(SYS_swapoff, fr_swap_dev);
	fr_swap_dev[0] = 0;
}

#endif /* FR_REMAP_UTIL_H */
