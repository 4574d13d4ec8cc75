// SPDX-License-Identifier: GPL-2.0
/*
 * libfastremap in both worlds. On a machine without the device (the
 * host) every call must take the mremap(2) fallback; in the test VM with
 * the module loaded the supported cases must take the fast path. In both,
 * every call must give what the mremap system call gives on a twin
 * mapping: the same success or errno, the same data, the same mappings.
 * Also: the handshake, FASTREMAP_NO_FALLBACK and FASTREMAP_MREMAP_ONLY,
 * errno left alone on success, threads racing on the lazy open, fork(),
 * a caller that closes or reuses the library's descriptor, a seccomp
 * sandbox installed after the first call, a thread with a cancel pending,
 * and a descriptor limit that leaves only 0, 1 or 2 free.
 *
 * Linked with the static library: build/userspace/libfastremap.a.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/fastremap.h>
#include <linux/seccomp.h>
#include "fastremap.h"
#include "tlib.h"

#define DEVICE		"/dev/fastremap"
/*
 * The layouts below are written for 4 KiB pages and 2 MiB PMDs. KIB is a
 * quarter page and MIB half a PMD, so that 4 KiB is a page and 2 MiB a PMD
 * at the running kernel's geometry (the plain units with 4 KiB pages);
 * test names keep the 4 KiB figures.
 */
#define KIB		(PG / 4)
#define MIB		(PMD_SZ / 2)
#define PMD		PMD_SZ
#define ARENA		(64 * MIB)

#ifndef __NR_mseal
#define __NR_mseal	462
#endif

/* What this machine is expected to do. */
static int module_world;	/* the device opens: fast path expected */
static int fallback_reason;	/* otherwise, the reason every call reports */
static int fallback_errno;	/* and its errno: open(2)'s */

static const char *reason_name(int r)
{
	static const char *const names[] = {
		"NONE", "NO_DEVICE", "NO_ACCESS", "OPEN_FAILED", "ABI",
		"DECLINED", "FLAGS", "CALLER", "FD_LOST", "IOCTL_ERROR",
		"NOT_A_MOVE", "FEW_EXTENTS", "IN_PLACE",
	};

	return r >= 0 && r < (int)(sizeof(names) / sizeof(names[0])) ?
	       names[r] : "?";
}

/* ---- memory helpers ---- */

/* An aligned range inside a fresh PROT_NONE reservation, slack trimmed. */
static char *reserve(size_t len, size_t align)
{
	char *p = mmap(NULL, len + align, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + len + align > a + len)
		munmap(a + len, (size_t)(p + len + align - (a + len)));
	return a;
}

static int map_rw(char *at, size_t len, int flags)
{
	return mmap(at, len, PROT_READ | PROT_WRITE,
		    flags | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == at ? 0 : -1;
}

static uint64_t pattern(size_t word)
{
	return (word + 7) * 0x9e3779b97f4a7c15ULL;
}

static void fill(char *p, size_t len)
{
	for (size_t k = 0; k < len / 8; k++)
		((uint64_t *)p)[k] = pattern(k);
}

/* Words of len bytes at p that do not hold the pattern. */
static size_t bad_words(const char *p, size_t len)
{
	size_t bad = 0;

	for (size_t k = 0; k < len / 8; k++)
		bad += ((const uint64_t *)p)[k] != pattern(k);
	return bad;
}

static size_t nonzero_words(const char *p, size_t len)
{
	size_t bad = 0;

	for (size_t k = 0; k < len / 8; k++)
		bad += ((const uint64_t *)p)[k] != 0;
	return bad;
}

static size_t page_align(size_t n)
{
	return (n + PG - 1) & ~(PG - 1);
}

/*
 * The mappings inside [base, base + len) as /proc/self/smaps shows them,
 * relative to base, with their VmFlags (VM_ACCOUNT, userfaultfd
 * registration... are not in /proc/self/maps) and a hash of the contents
 * of the readable ones.
 */
struct sig {
	int n;
	struct {
		size_t start, end;
		char perms[5];
		char flags[120];
		uint64_t hash;
	} v[64];
};

static void sig_take(struct sig *s, char *base, size_t len)
{
	uintptr_t lo = (uintptr_t)base;
	struct t_vma vma[64];
	int n = t_vmas_read(lo, lo + len, vma, 64);

	s->n = n < 0 ? 0 : n > 64 ? 64 : n;
	for (int k = 0; k < s->n; k++) {
		s->v[k].start = vma[k].start - lo;
		s->v[k].end = vma[k].end - lo;
		memcpy(s->v[k].perms, vma[k].perms, 5);
		memcpy(s->v[k].flags, vma[k].flags, sizeof(s->v[k].flags));
		s->v[k].hash = 0;
	}
	/* Hash after parsing: reading memory may change the maps file. */
	for (int k = 0; k < s->n; k++) {
		uint64_t h = 1469598103934665603ULL;

		if (s->v[k].perms[0] != 'r')
			continue;
		for (size_t off = s->v[k].start; off < s->v[k].end; off += 8)
			h = (h ^ *(uint64_t *)(base + off)) * 1099511628211ULL;
		s->v[k].hash = h;
	}
}

static int sig_eq(const struct sig *a, const struct sig *b)
{
	if (a->n != b->n)
		return 0;
	for (int k = 0; k < a->n; k++)
		if (a->v[k].start != b->v[k].start || a->v[k].end != b->v[k].end ||
		    strcmp(a->v[k].perms, b->v[k].perms) ||
		    strcmp(a->v[k].flags, b->v[k].flags) ||
		    a->v[k].hash != b->v[k].hash)
			return 0;
	return 1;
}

static void sig_diag(const char *who, const struct sig *s)
{
	for (int k = 0; k < s->n; k++)
		tap_diag("  %s: +%#zx-+%#zx %s %016llx %s", who, s->v[k].start,
			 s->v[k].end, s->v[k].perms,
			 (unsigned long long)s->v[k].hash, s->v[k].flags);
}

/* Descriptors of this process open on the device. */
static int device_fds(int *which)
{
	char path[300], link[64];
	struct dirent *d;
	DIR *dir = opendir("/proc/self/fd");
	int n = 0;

	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		ssize_t l;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		l = readlink(path, link, sizeof(link) - 1);
		if (l <= 0)
			continue;
		link[l] = 0;
		if (!strcmp(link, DEVICE)) {
			if (which)
				*which = atoi(d->d_name);
			n++;
		}
	}
	closedir(dir);
	return n;
}

static int fd_is(int fd, const char *what)
{
	char path[64], link[64];
	ssize_t l;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	l = readlink(path, link, sizeof(link) - 1);
	if (l <= 0)
		return 0;
	link[l] = 0;
	return !strcmp(link, what);
}

static long sys_mremap(void *old, size_t old_size, size_t new_size, int flags,
		       void *new_addr)
{
	return syscall(SYS_mremap, old, old_size, new_size,
		       (unsigned long)(unsigned int)flags, new_addr);
}

/* Whether stats say the call took the path this world expects. */
enum expect {
	E_MOVE,		/* module world: the module moved entries */
	E_MODULE,	/* module world: the module answered */
	E_DECLINED,	/* module world: declined, mremap(2) answered */
	E_IOCTL,	/* module world: the module failed a FIXED call, mremap(2) answered */
	E_FLAGS,	/* any world: flags unknown to the module */
	/*
	 * Module world: the module never moves it. Declined where mremap(2)
	 * moves it (7.x moves a source of several VMAs); where mremap(2)
	 * refuses it, the module's answer (E_IOCTL for a FIXED call, E_MODULE
	 * otherwise), whose errno must be mremap(2)'s.
	 */
	E_AS_MREMAP,
	/* Routed by the library before any device is opened: any world. */
	E_ROUTED,	/* a move mremap(2) makes in as few extents */
	E_NOT_MOVE,	/* no MREMAP_MAYMOVE, a shrink, the same size */
	/* Module world; without a device it is one mremap(2) call, the fallback: */
	E_IN_PLACE,	/* growth mremap(2) made in place */
};

static int path_ok(enum expect e, const struct fastremap_stats *st)
{
	if (e == E_FLAGS)
		return !st->used_module && st->reason == FASTREMAP_REASON_FLAGS;
	if (e == E_ROUTED)
		return !st->used_module && st->reason == FASTREMAP_REASON_FEW_EXTENTS &&
		       st->mremap_extents >= 1;
	if (e == E_NOT_MOVE)
		return !st->used_module && st->reason == FASTREMAP_REASON_NOT_A_MOVE &&
		       st->mremap_extents == 0;
	if (!module_world)
		return !st->used_module && st->reason == fallback_reason &&
		       st->reason_errno == fallback_errno;
	switch (e) {
	case E_MOVE:
		return st->used_module && st->tlb_flushes >= 1 &&
		       st->moved_pud + st->moved_pmd + st->moved_thp +
		       st->moved_pte > 0;
	case E_MODULE:
		return st->used_module && st->reason == FASTREMAP_REASON_NONE;
	case E_DECLINED:
		return !st->used_module &&
		       st->reason == FASTREMAP_REASON_DECLINED &&
		       st->reason_errno == EOPNOTSUPP;
	case E_IOCTL:
		return !st->used_module &&
		       st->reason == FASTREMAP_REASON_IOCTL_ERROR &&
		       st->reason_errno != 0;
	case E_IN_PLACE:
		return !st->used_module && st->reason == FASTREMAP_REASON_IN_PLACE;
	default:
		return 0;
	}
}

/* ---- the twin cases ---- */

struct args {
	char *old;
	size_t old_size, new_size;
	int flags;
	char *new_addr;
	int shared;		/* do not read past the old size */
	int no_data;		/* the source holds no pattern */
	int uffd;		/* if > 0: the userfaultfd the source is registered with */
};

struct tcase {
	const char *name;
	/* Sets up the arena, fills a; returns a reason to skip or NULL. */
	const char *(*setup)(char *arena, struct args *a);
	enum expect expect;
	long want_pte, want_pmd_thp;	/* module world, exact counts; -1: any */
	int one_flush;			/* module world: exactly one TLB flush */
	/*
	 * 0: fastremap_remap() is called with FASTREMAP_NO_ROUTING (the module
	 * first, as before routing), fastremap() routes. 1: both route, and
	 * expect is about routing; want_extents, if not 0, is the library's
	 * bound on mremap(2)'s extents (stats.mremap_extents).
	 */
	int routed;
	long want_extents;
};

static const char *src_at(char *arena, struct args *a, size_t off, size_t len)
{
	if (map_rw(arena + off, len, MAP_PRIVATE))
		return "mmap failed";
	fill(arena + off, len);
	a->old = arena + off;
	a->old_size = len;
	a->new_size = len;
	return NULL;
}

static const char *s_fixed_aligned(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB;
	return src_at(ar, a, 0, 8 * MIB);
}

static const char *s_fixed_misaligned(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB + 4 * KIB;
	return src_at(ar, a, 0, 8 * MIB);
}

static const char *s_fixed_odd(char *ar, struct args *a)
{
	const char *e = src_at(ar, a, 0, 6 * MIB + 12 * KIB);

	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB;
	return e;
}

static const char *s_fixed_shrink(char *ar, struct args *a)
{
	const char *e = src_at(ar, a, 0, 8 * MIB);

	a->new_size = 4 * MIB;
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB;
	return e;
}

static const char *s_fixed_grow(char *ar, struct args *a)
{
	const char *e = src_at(ar, a, 0, 4 * MIB);

	a->new_size = 8 * MIB;
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB;
	return e;
}

/* The reservation follows the source: growth has to move. */
static const char *s_grow_blocked(char *ar, struct args *a)
{
	const char *e = src_at(ar, a, 0, 4 * MIB);

	a->new_size = 8 * MIB;
	a->flags = MREMAP_MAYMOVE;
	return e;
}

static const char *s_grow_in_place(char *ar, struct args *a)
{
	const char *e = src_at(ar, a, 0, 4 * MIB);

	munmap(ar + 4 * MIB, 12 * MIB);
	a->new_size = 8 * MIB;
	a->flags = MREMAP_MAYMOVE;
	return e;
}

static const char *s_grow_in_place_nomove(char *ar, struct args *a)
{
	const char *e = s_grow_in_place(ar, a);

	a->flags = 0;
	return e;
}

static const char *s_grow_blocked_nomove(char *ar, struct args *a)
{
	const char *e = s_grow_blocked(ar, a);

	a->flags = 0;
	return e;
}

static const char *s_shrink(char *ar, struct args *a)
{
	const char *e = src_at(ar, a, 0, 8 * MIB);

	a->new_size = 4 * MIB;
	a->flags = 0;
	return e;
}

static const char *s_same_size(char *ar, struct args *a)
{
	a->flags = 0;
	return src_at(ar, a, 0, 4 * MIB);
}

static const char *s_dontunmap(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_DONTUNMAP;
	a->new_addr = NULL;
	return src_at(ar, a, 0, 4 * MIB);
}

static const char *s_dontunmap_fixed(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_DONTUNMAP | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB;
	return src_at(ar, a, 0, 4 * MIB);
}

static const char *s_thp(char *ar, struct args *a)
{
	if (map_rw(ar, 4 * MIB, MAP_PRIVATE))
		return "mmap failed";
	madvise(ar, 4 * MIB, MADV_HUGEPAGE);
	fill(ar, 4 * MIB);
	a->old = ar;
	a->old_size = a->new_size = 4 * MIB;
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB;
	return NULL;
}

static const char *s_shared_anon(char *ar, struct args *a)
{
	if (map_rw(ar, 4 * MIB, MAP_SHARED))
		return "mmap failed";
	fill(ar, 4 * MIB);
	a->old = ar;
	a->old_size = a->new_size = 4 * MIB;
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB;
	a->shared = 1;
	return NULL;
}

static const char *s_memfd_private(char *ar, struct args *a)
{
	int fd = memfd_create("t_lib", MFD_CLOEXEC);
	char *p;

	if (fd < 0 || ftruncate(fd, 4 * MIB))
		return "memfd_create failed";
	p = mmap(ar, 4 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
		 fd, 0);
	close(fd);
	if (p != ar)
		return "mmap failed";
	fill(ar, 4 * MIB);
	a->old = ar;
	a->old_size = a->new_size = 4 * MIB;
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB;
	a->shared = 1;
	return NULL;
}

/*
 * A source registered with userfaultfd: mremap(2) drops the registration
 * from the moved range (or tells the monitor of the move, with
 * UFFD_FEATURE_EVENT_REMAP); the module never moves it.
 */
static const char *s_uffd(char *ar, struct args *a)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	const char *e = src_at(ar, a, 0, 4 * MIB);

	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB;
	if (e)
		return e;
	a->uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	/* UFFD_USER_MODE_ONLY came with 5.11: root needs no such flag. */
	if (a->uffd < 0 && errno == EINVAL)
		a->uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (a->uffd < 0 || ioctl(a->uffd, UFFDIO_API, &api))
		return "no userfaultfd";
	reg.range.start = (uintptr_t)ar;
	reg.range.len = 4 * MIB;
	if (ioctl(a->uffd, UFFDIO_REGISTER, &reg))
		return "UFFDIO_REGISTER failed";
	return NULL;
}

/* old_size 0 on a shared mapping "duplicates" it. */
static const char *s_dup_shared(char *ar, struct args *a)
{
	const char *e = s_shared_anon(ar, a);

	a->old_size = 0;
	a->new_size = 2 * MIB;
	a->flags = MREMAP_MAYMOVE;
	a->new_addr = NULL;
	a->no_data = 1;
	return e;
}

static const char *s_multi_vma(char *ar, struct args *a)
{
	const char *e = src_at(ar, a, 0, 8 * MIB);

	mprotect(ar + 4 * MIB, 4 * KIB, PROT_READ);
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB;
	return e;
}

/*
 * A shrinking FIXED move whose kept part spans two VMAs: 6.x's mremap(2)
 * unmaps the destination and the source's tail, then fails.
 */
static const char *s_fixed_shrink_multi(char *ar, struct args *a)
{
	const char *e = s_fixed_shrink(ar, a);

	mprotect(ar + 1 * MIB, 4 * KIB, PROT_READ);
	return e;
}

static const char *s_ksm(char *ar, struct args *a)
{
	const char *e = src_at(ar, a, 0, 4 * MIB);

	if (!e && madvise(ar, 4 * MIB, MADV_MERGEABLE))
		return "no KSM in this kernel";
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB;
	return e;
}

static const char *s_mlocked_grow(char *ar, struct args *a)
{
	const char *e = src_at(ar, a, 0, 2 * MIB);

	if (!e && mlock(ar, 2 * MIB))
		return "mlock not permitted";
	a->new_size = 4 * MIB;
	a->flags = MREMAP_MAYMOVE;
	return e;
}

static const char *s_bad_old_align(char *ar, struct args *a)
{
	const char *e = s_fixed_aligned(ar, a);

	a->old += 16;
	a->no_data = 1;
	return e;
}

static const char *s_unknown_flag(char *ar, struct args *a)
{
	const char *e = s_fixed_aligned(ar, a);

	a->flags |= 0x100;
	return e;
}

static const char *s_fixed_no_maymove(char *ar, struct args *a)
{
	const char *e = s_fixed_aligned(ar, a);

	a->flags = MREMAP_FIXED;
	return e;
}

static const char *s_new_size_zero(char *ar, struct args *a)
{
	const char *e = s_fixed_aligned(ar, a);

	a->new_size = 0;
	return e;
}

static const char *s_unmapped_src(char *ar, struct args *a)
{
	munmap(ar, 4 * MIB);
	a->old = ar;
	a->old_size = a->new_size = 4 * MIB;
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB;
	a->no_data = 1;
	return NULL;
}

static const char *s_beyond_vma(char *ar, struct args *a)
{
	const char *e = src_at(ar, a, 0, 4 * MIB);

	a->old_size = 8 * MIB;
	a->new_size = 12 * MIB;
	a->flags = MREMAP_MAYMOVE;
	a->no_data = 1;
	return e;
}

static const char *s_overlap(char *ar, struct args *a)
{
	const char *e = s_fixed_aligned(ar, a);

	a->new_addr = ar + 4 * MIB;
	return e;
}

static const char *s_new_misaligned(char *ar, struct args *a)
{
	const char *e = s_fixed_aligned(ar, a);

	a->new_addr = ar + 16 * MIB + 100;
	return e;
}

static const char *s_new_beyond_task(char *ar, struct args *a)
{
	const char *e = s_fixed_aligned(ar, a);

	a->new_addr = (char *)(uintptr_t)-(8 * MIB);
	return e;
}

static const char *s_dontunmap_sizes(char *ar, struct args *a)
{
	const char *e = s_dontunmap(ar, a);

	a->new_size = 8 * MIB;
	return e;
}

static const char *s_dontunmap_nomove(char *ar, struct args *a)
{
	const char *e = s_dontunmap(ar, a);

	a->flags = MREMAP_DONTUNMAP;
	return e;
}

static const char *s_dup_private(char *ar, struct args *a)
{
	const char *e = src_at(ar, a, 0, 4 * MIB);

	a->old_size = 0;
	a->new_size = 2 * MIB;
	a->flags = MREMAP_MAYMOVE;
	a->no_data = 1;
	return e;
}

static const char *s_sealed(char *ar, struct args *a)
{
	const char *e = s_fixed_aligned(ar, a);

	if (!e && syscall(__NR_mseal, ar, 8 * MIB, 0))
		return "no mseal(2) in this kernel";
	return e;
}

/* ---- routing: which calls go to mremap(2) directly ---- */

static const char *s_r_small_inside(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB + 256 * KIB;
	return src_at(ar, a, 128 * KIB, 64 * KIB);
}

/* The folio loop's move: 1 MiB by 1 MiB inside one PMD. */
static const char *s_r_loop(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 1 * MIB;
	return src_at(ar, a, 0, 1 * MIB);
}

static const char *s_r_small_cross_dst(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 18 * MIB - 32 * KIB;
	return src_at(ar, a, 128 * KIB, 64 * KIB);
}

static const char *s_r_small_cross_both(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 18 * MIB - 32 * KIB;
	return src_at(ar, a, 2 * MIB - 16 * KIB, 64 * KIB);
}

/* Congruent modulo 2 MiB: the boundaries coincide, two extents. */
static const char *s_r_congruent(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 17 * MIB;
	return src_at(ar, a, 1 * MIB, 2 * MIB);
}

static const char *s_r_thp(char *ar, struct args *a)
{
	if (map_rw(ar, 2 * MIB, MAP_PRIVATE))
		return "mmap failed";
	madvise(ar, 2 * MIB, MADV_HUGEPAGE);
	fill(ar, 2 * MIB);
	a->old = ar;
	a->old_size = a->new_size = 2 * MIB;
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB;
	return NULL;
}

static const char *s_r_misaligned_4m(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB + 4 * KIB;
	return src_at(ar, a, 0, 4 * MIB);
}

/* A whole PTE table moved PTE by PTE by mremap(2), in two extents. */
static const char *s_r_table_2m(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB + 4 * KIB;
	return src_at(ar, a, 0, 2 * MIB);
}

/* As much, over two PTE tables, neither of them whole. */
static const char *s_r_no_table_2m(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB + 8 * KIB;
	return src_at(ar, a, 4 * KIB, 2 * MIB);
}

static const char *s_r_both_misaligned_4m(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB + 4 * KIB;
	return src_at(ar, a, 8 * KIB, 4 * MIB);
}

static const char *s_r_grow_big_in_place(char *ar, struct args *a)
{
	const char *e = src_at(ar, a, 0, 8 * MIB);

	munmap(ar + 8 * MIB, 16 * MIB);
	a->new_size = 16 * MIB;
	a->flags = MREMAP_MAYMOVE;
	return e;
}

static const char *s_r_grow_big_blocked(char *ar, struct args *a)
{
	const char *e = src_at(ar, a, 0, 8 * MIB);

	a->new_size = 16 * MIB;
	a->flags = MREMAP_MAYMOVE;
	return e;
}

static const char *s_r_dontunmap_big(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_DONTUNMAP;
	a->new_addr = NULL;
	return src_at(ar, a, 0, 8 * MIB);
}

/* Growth that must move, small: mremap(2) picks the place and moves it. */
static const char *s_r_grow_small_blocked(char *ar, struct args *a)
{
	const char *e = src_at(ar, a, 0, 64 * KIB);

	a->new_size = 128 * KIB;
	a->flags = MREMAP_MAYMOVE;
	return e;
}

static const char *s_r_shrink_maymove(char *ar, struct args *a)
{
	const char *e = s_shrink(ar, a);

	a->flags = MREMAP_MAYMOVE;
	return e;
}

static const char *s_r_dontunmap_small(char *ar, struct args *a)
{
	a->flags = MREMAP_MAYMOVE | MREMAP_DONTUNMAP | MREMAP_FIXED;
	a->new_addr = ar + 16 * MIB + 256 * KIB;
	return src_at(ar, a, 128 * KIB, 64 * KIB);
}

static const struct tcase cases[] = {
	{ "move 8 MiB to a PMD-aligned FIXED address", s_fixed_aligned, E_MOVE, 0, 4, 1, 0, 0 },
	{ "move 8 MiB to a FIXED address misaligned by 4 KiB", s_fixed_misaligned, E_MOVE, 2048, 0, 1, 0, 0 },
	{ "move 6 MiB + 12 KiB to a PMD-aligned FIXED address", s_fixed_odd, E_MOVE, 3, 3, 1, 0, 0 },
	{ "move and shrink 8 -> 4 MiB (FIXED)", s_fixed_shrink, E_MOVE, -1, -1, 0, 0, 0 },
	{ "move and grow 4 -> 8 MiB (FIXED)", s_fixed_grow, E_MOVE, -1, -1, 0, 0, 0 },
	{ "grow 4 -> 8 MiB, blocked: MAYMOVE moves it", s_grow_blocked, E_MOVE, -1, -1, 0, 0, 0 },
	{ "grow 4 -> 8 MiB in place (MAYMOVE)", s_grow_in_place, E_DECLINED, -1, -1, 0, 0, 0 },
	{ "grow 4 -> 8 MiB in place (no flags)", s_grow_in_place_nomove, E_DECLINED, -1, -1, 0, 0, 0 },
	{ "grow 4 -> 8 MiB, blocked, no MAYMOVE -> ENOMEM", s_grow_blocked_nomove, E_MODULE, -1, -1, 0, 0, 0 },
	{ "shrink 8 -> 4 MiB in place", s_shrink, E_DECLINED, -1, -1, 0, 0, 0 },
	{ "same size, no flags", s_same_size, E_MODULE, -1, -1, 0, 0, 0 },
	{ "DONTUNMAP, the kernel picks the address", s_dontunmap, E_MOVE, -1, -1, 0, 0, 0 },
	{ "DONTUNMAP to a FIXED address", s_dontunmap_fixed, E_MOVE, -1, -1, 0, 0, 0 },
	{ "move a MADV_HUGEPAGE source (THP)", s_thp, E_MOVE, -1, -1, 0, 0, 0 },
	{ "move shared anonymous memory", s_shared_anon, E_MOVE, -1, -1, 0, 0, 0 },
	{ "move a private file mapping (memfd)", s_memfd_private, E_MOVE, -1, -1, 0, 0, 0 },
	{ "old_size 0 duplicates a shared mapping", s_dup_shared, E_DECLINED, -1, -1, 0, 0, 0 },
	/* 6.x: the module answers EFAULT; 7.x moves several VMAs: declined. */
	{ "source spanning three VMAs (FIXED)", s_multi_vma, E_AS_MREMAP, -1, -1, 0, 0, 0 },
	{ "shrink 8 -> 4 MiB (FIXED), the kept part spanning VMAs", s_fixed_shrink_multi, E_AS_MREMAP, -1, -1, 0, 0, 0 },
	{ "KSM-mergeable source", s_ksm, E_DECLINED, -1, -1, 0, 0, 0 },
	{ "growth of mlocked memory", s_mlocked_grow, E_DECLINED, -1, -1, 0, 0, 0 },
	{ "a userfaultfd-registered source (FIXED)", s_uffd, E_DECLINED, -1, -1, 0, 0, 0 },
	/*
	 * Failed FIXED calls: the module changes nothing, mremap(2) may have
	 * unmapped the destination first; the library asks mremap(2) too.
	 */
	{ "old address not page-aligned -> EINVAL", s_bad_old_align, E_IOCTL, -1, -1, 0, 0, 0 },
	{ "an mremap flag the module does not know -> EINVAL", s_unknown_flag, E_FLAGS, -1, -1, 0, 0, 0 },
	{ "FIXED without MAYMOVE -> EINVAL", s_fixed_no_maymove, E_IOCTL, -1, -1, 0, 0, 0 },
	{ "new_size 0 -> EINVAL", s_new_size_zero, E_IOCTL, -1, -1, 0, 0, 0 },
	{ "unmapped source -> EFAULT", s_unmapped_src, E_IOCTL, -1, -1, 0, 0, 0 },
	{ "old_size beyond the source VMA", s_beyond_vma, E_AS_MREMAP, -1, -1, 0, 0, 0 },
	{ "FIXED destination overlapping the source -> EINVAL", s_overlap, E_IOCTL, -1, -1, 0, 0, 0 },
	{ "FIXED destination not page-aligned -> EINVAL", s_new_misaligned, E_IOCTL, -1, -1, 0, 0, 0 },
	{ "FIXED destination beyond TASK_SIZE -> EINVAL", s_new_beyond_task, E_IOCTL, -1, -1, 0, 0, 0 },
	{ "DONTUNMAP with different sizes -> EINVAL", s_dontunmap_sizes, E_MODULE, -1, -1, 0, 0, 0 },
	{ "DONTUNMAP without MAYMOVE -> EINVAL", s_dontunmap_nomove, E_MODULE, -1, -1, 0, 0, 0 },
	{ "old_size 0 on a private mapping -> EINVAL", s_dup_private, E_MODULE, -1, -1, 0, 0, 0 },
	{ "sealed source -> EPERM", s_sealed, E_IOCTL, -1, -1, 0, 0, 0 },

	/*
	 * Routing (fastremap_remap(3), ROUTING): the library's own choice,
	 * in every world, with the bound it computed; data checked as above.
	 */
	{ "routing: 64 KiB inside one PMD (FIXED)", s_r_small_inside, E_ROUTED, -1, -1, 0, 1, 1 },
	{ "routing: 1 MiB by 1 MiB inside one PMD (FIXED)", s_r_loop, E_ROUTED, -1, -1, 0, 1, 1 },
	{ "routing: 64 KiB across the destination's PMD boundary", s_r_small_cross_dst,
	  E_ROUTED, -1, -1, 0, 1, 2 },
	{ "routing: 64 KiB across both PMD boundaries", s_r_small_cross_both,
	  E_ROUTED, -1, -1, 0, 1, 3 },
	{ "routing: 2 MiB congruent modulo 2 MiB, unaligned", s_r_congruent, E_ROUTED, -1, -1, 0, 1, 2 },
	{ "routing: a 2 MiB THP to a PMD-aligned address", s_r_thp, E_ROUTED, -1, -1, 0, 1, 1 },
	{ "routing: 64 KiB DONTUNMAP to a FIXED address", s_r_dontunmap_small, E_ROUTED, -1, -1, 0, 1, 1 },
	{ "routing: grow 64 -> 128 KiB, blocked: mremap(2) moves it", s_r_grow_small_blocked,
	  E_ROUTED, -1, -1, 0, 1, 2 },
	{ "routing: 2 MiB over two PTE tables, neither whole, misaligned", s_r_no_table_2m,
	  E_ROUTED, -1, -1, 0, 1, 3 },
	/* PTE by PTE over a whole PTE table: the module copies the table. */
	{ "routing: 2 MiB, a whole PTE table, misaligned by 4 KiB: the module", s_r_table_2m,
	  E_MOVE, 512, 0, 1, 1, 2 },
	{ "routing: 4 MiB to an address misaligned by 4 KiB: the module", s_r_misaligned_4m,
	  E_MOVE, 1024, 0, 1, 1, 4 },
	{ "routing: 8 MiB PMD-aligned", s_fixed_aligned, E_ROUTED, -1, -1, 0, 1, 4 },
	{ "routing: grow 4 -> 8 MiB, blocked: mremap(2) moves it", s_grow_blocked,
	  E_ROUTED, -1, -1, 0, 1, 4 },
	{ "routing: 4 MiB, both misaligned: the module", s_r_both_misaligned_4m,
	  E_MOVE, 1024, 0, 1, 1, 5 },
	{ "routing: 8 MiB to an address misaligned by 4 KiB: the module", s_fixed_misaligned,
	  E_MOVE, 2048, 0, 1, 1, 8 },
	{ "routing: grow 8 -> 16 MiB in place (MAYMOVE): mremap(2) in place",
	  s_r_grow_big_in_place, E_IN_PLACE, -1, -1, 0, 1, 8 },
	{ "routing: grow 8 -> 16 MiB, blocked: the module moves it", s_r_grow_big_blocked,
	  E_MOVE, -1, -1, 0, 1, 8 },
	{ "routing: grow in place without MAYMOVE", s_grow_in_place_nomove, E_NOT_MOVE, -1, -1, 0, 1, 0 },
	{ "routing: grow without MAYMOVE, blocked -> ENOMEM", s_grow_blocked_nomove,
	  E_NOT_MOVE, -1, -1, 0, 1, 0 },
	{ "routing: shrink in place", s_shrink, E_NOT_MOVE, -1, -1, 0, 1, 0 },
	{ "routing: shrink with MAYMOVE", s_r_shrink_maymove, E_NOT_MOVE, -1, -1, 0, 1, 0 },
	{ "routing: same size", s_same_size, E_NOT_MOVE, -1, -1, 0, 1, 0 },
	{ "routing: FIXED without MAYMOVE -> EINVAL", s_fixed_no_maymove, E_NOT_MOVE, -1, -1, 0, 1, 0 },
	{ "routing: 4 MiB DONTUNMAP, the kernel picks the address", s_dontunmap,
	  E_ROUTED, -1, -1, 0, 1, 4 },
	{ "routing: 8 MiB DONTUNMAP, the kernel picks the address: the module",
	  s_r_dontunmap_big, E_MOVE, -1, -1, 0, 1, 8 },
	{ "routing: old_size 0 on a private mapping: the module -> EINVAL", s_dup_private,
	  E_MODULE, -1, -1, 0, 1, 0 },
};

/* One world's outcome of one case. */
struct outcome {
	char *arena;
	struct args a;
	int ok, err;
	char *res;
	struct sig before, after;
};

static const char *prepare(const struct tcase *c, struct outcome *o)
{
	const char *skip;

	memset(o, 0, sizeof(*o));
	o->arena = reserve(ARENA, PMD);
	if (!o->arena)
		return "cannot reserve an arena";
	skip = c->setup(o->arena, &o->a);
	if (!skip)
		sig_take(&o->before, o->arena, ARENA);
	return skip;
}

/* The data a successful call must have kept, and what grew must be zero. */
static int data_ok(const struct outcome *o)
{
	size_t keep, grown;

	if (!o->ok || o->a.no_data)
		return 1;
	keep = page_align(o->a.old_size < o->a.new_size ? o->a.old_size :
			  o->a.new_size);
	if (keep > page_align(o->a.old_size))
		keep = page_align(o->a.old_size);
	if (bad_words(o->res, keep))
		return 0;
	if (o->a.shared)
		return 1;
	grown = page_align(o->a.new_size) > keep ? page_align(o->a.new_size) - keep : 0;
	return nonzero_words(o->res + keep, grown) == 0;
}

static void cleanup(struct outcome *o)
{
	if (o->a.uffd > 0)
		close(o->a.uffd);
	if (o->ok && (o->res < o->arena || o->res >= o->arena + ARENA))
		munmap(o->res, page_align(o->a.new_size));
	munlock(o->arena, ARENA);
	munmap(o->arena, ARENA);
}

static void run_case(const struct tcase *c)
{
	struct outcome A, B, C;	/* fastremap(), the syscall, fastremap_remap() */
	struct fastremap_stats st;
	enum expect want;
	const char *skip;
	void *res;
	long r;

	skip = prepare(c, &B);
	if (skip) {
		cleanup(&B);
		tap_skip_test(skip, "%s", c->name);
		return;
	}
	r = sys_mremap(B.a.old, B.a.old_size, B.a.new_size, B.a.flags, B.a.new_addr);
	B.ok = r != -1;
	B.err = B.ok ? 0 : errno;
	B.res = B.ok ? (char *)r : NULL;
	sig_take(&B.after, B.arena, ARENA);

	prepare(c, &A);
	errno = 0;
	res = fastremap(A.a.old, A.a.old_size, A.a.new_size, A.a.flags,
			A.a.new_addr);
	A.ok = res != MAP_FAILED;
	A.err = A.ok ? 0 : errno;
	A.res = A.ok ? res : NULL;
	sig_take(&A.after, A.arena, ARENA);

	prepare(c, &C);
	memset(&st, 0xa5, sizeof(st));
	st.size = sizeof(st);
	res = NULL;
	r = fastremap_remap(C.a.old, C.a.old_size, C.a.new_size, C.a.flags,
			    C.a.new_addr, c->routed ? 0 : FASTREMAP_NO_ROUTING, &st, &res);
	C.ok = r == 0;
	C.err = C.ok ? 0 : (int)-r;
	C.res = C.ok ? res : NULL;
	sig_take(&C.after, C.arena, ARENA);

	tap_diag("%s: mremap(2) %s; fastremap() %s; fastremap_remap() %s via %s "
		 "(%s%s%s) pud %llu pmd %llu thp %llu pte %llu flushes %llu "
		 "mremap extents %llu",
		 c->name, B.ok ? "ok" : t_errname(B.err),
		 A.ok ? "ok" : t_errname(A.err),
		 C.ok ? "ok" : t_errname(C.err),
		 st.used_module ? "module" : "mremap(2)",
		 reason_name(st.reason), st.reason_errno ? " " : "",
		 st.reason_errno ? t_errname(st.reason_errno) : "",
		 (unsigned long long)st.moved_pud, (unsigned long long)st.moved_pmd,
		 (unsigned long long)st.moved_thp, (unsigned long long)st.moved_pte,
		 (unsigned long long)st.tlb_flushes,
		 (unsigned long long)st.mremap_extents);

	tap_ok(A.ok == B.ok && A.err == B.err && C.ok == B.ok && C.err == B.err,
	       "%s: same result and errno as the mremap system call", c->name);
	/* Where the kernel places the result is its choice; FIXED is not. */
	if (B.ok && (B.a.flags & MREMAP_FIXED))
		tap_ok(A.res - A.arena == B.res - B.arena &&
		       C.res - C.arena == B.res - B.arena,
		       "%s: moved to the FIXED address", c->name);
	if (B.ok && !(B.a.flags & (MREMAP_FIXED | MREMAP_MAYMOVE | MREMAP_DONTUNMAP)))
		tap_ok(A.res == A.a.old && C.res == C.a.old,
		       "%s: stays where it is", c->name);
	tap_ok(data_ok(&A) && data_ok(&B) && data_ok(&C),
	       "%s: data moved intact, growth reads zero", c->name);
	/*
	 * Failed calls too: mremap(2) may unmap a FIXED destination (and a
	 * shrinking move's tail) before it fails, and the library then leaves
	 * memory as mremap(2) does.
	 */
	{
		int same = sig_eq(&A.after, &B.after) && sig_eq(&C.after, &B.after);

		tap_ok(same, "%s: the same mappings as mremap(2) leaves%s", c->name,
		       B.ok ? "" : ", after the failure");
		if (!same) {
			sig_diag("before", &B.before);
			sig_diag("mremap(2)", &B.after);
			sig_diag("fastremap()", &A.after);
			sig_diag("fastremap_remap()", &C.after);
		}
	}
	if (!B.ok && module_world &&
	    (st.used_module || st.reason == FASTREMAP_REASON_IOCTL_ERROR)) {
		/* The module alone checks everything before changing anything. */
		struct outcome D;

		prepare(c, &D);
		r = fastremap_remap(D.a.old, D.a.old_size, D.a.new_size, D.a.flags,
				    D.a.new_addr, FASTREMAP_NO_FALLBACK, NULL, &res);
		sig_take(&D.after, D.arena, ARENA);
		tap_ok(r == -B.err && sig_eq(&D.before, &D.after),
		       "%s: the module alone (NO_FALLBACK) fails with %s and changes "
		       "nothing (got %s)", c->name, t_errname(B.err),
		       r ? t_errname((int)-r) : "0");
		cleanup(&D);
	}
	want = c->expect;
	if (want == E_AS_MREMAP)
		want = B.ok ? E_DECLINED : (B.a.flags & MREMAP_FIXED) ? E_IOCTL : E_MODULE;
	tap_ok(st.size == sizeof(st) && path_ok(want, &st),
	       "%s: %s", c->name, module_world ? "the path expected with the module" :
	       "mremap(2) fallback, for the expected reason");
	if (module_world && c->expect == E_MOVE && st.used_module) {
		/* The table counts 4 KiB pages: as many bytes at this geometry. */
		long want_pte = c->want_pte < 0 ? -1 : (long)(t_geo(c->want_pte * SZ_4K) / PG);

		if (want_pte >= 0)
			tap_ok((long)st.moved_pte == want_pte &&
			       (long)(st.moved_pmd + st.moved_thp) == c->want_pmd_thp &&
			       st.moved_pud == 0,
			       "%s: moved %ld PTEs and %ld PMD entries", c->name,
			       want_pte, c->want_pmd_thp);
		if (c->one_flush)
			tap_ok(st.tlb_flushes == 1, "%s: one TLB flush", c->name);
	}
	if (c->routed && c->want_extents)
		tap_ok((long)st.mremap_extents == c->want_extents,
		       "%s: mremap(2) would take %ld extents (library: %llu)", c->name,
		       c->want_extents, (unsigned long long)st.mremap_extents);
	cleanup(&A);
	cleanup(&B);
	cleanup(&C);
}

/* ---- the API around the remap ---- */

static void test_info(void)
{
	struct {
		struct fastremap_abi_info i;
		uint64_t future[2];
	} big;
	struct fastremap_abi_info ai;
	int r;

	memset(&ai, 0, sizeof(ai));
	ai.size = sizeof(ai);
	r = fastremap_info(&ai);
	if (!module_world) {
		int want = fallback_reason == FASTREMAP_REASON_NO_DEVICE ? -ENODEV : -EACCES;

		tap_ok(r == want, "fastremap_info() without a usable device: %s (got %s)",
		       t_errname(-want), r ? t_errname(-r) : "0");
	} else {
		tap_ok(r == 0, "fastremap_info() succeeds (%s)", r ? strerror(-r) : "-");
		tap_ok(ai.abi_version == 1 && ai.library_abi == 1 && ai.remap_usable,
		       "fastremap_info(): ABI 1, usable (abi %u, usable %u)",
		       ai.abi_version, ai.remap_usable);
		tap_ok((ai.ioctls & FASTREMAP_IOCTL_BIT_INFO) &&
		       (ai.ioctls & FASTREMAP_IOCTL_BIT_REMAP),
		       "fastremap_info(): INFO and REMAP ioctls listed (%#llx)",
		       (unsigned long long)ai.ioctls);
		tap_ok(!!(ai.features & FASTREMAP_FEAT_THP) ==
		       !access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK),
		       "fastremap_info(): THP feature bit (%#llx)",
		       (unsigned long long)ai.features);
		tap_ok(ai.size == sizeof(ai), "fastremap_info(): size %u", ai.size);
	}

	memset(&big, 0xff, sizeof(big));
	big.i.size = sizeof(big);
	r = fastremap_info(&big.i);
	if (module_world)
		tap_ok(r == 0 && big.i.size == sizeof(big.i) && !big.future[0] &&
		       !big.future[1],
		       "fastremap_info(): a larger struct gets its tail zeroed");
	memset(&ai, 0, sizeof(ai));
	ai.size = 8;
	tap_ok(fastremap_info(&ai) == -EINVAL,
	       "fastremap_info(): a size below the first published -> -EINVAL");
	tap_ok(fastremap_info(NULL) == -EINVAL, "fastremap_info(NULL) -> -EINVAL");
}

static void test_misc_api(void)
{
	const char *v = fastremap_version();
	int distinct = 1;

	tap_ok(v && *v >= '0' && *v <= '9', "fastremap_version(): \"%s\"", v ? v : "(null)");
	for (int a = 0; a <= FASTREMAP_REASON_IN_PLACE; a++)
		for (int b = a + 1; b <= FASTREMAP_REASON_IN_PLACE; b++)
			distinct &= strcmp(fastremap_strreason(a),
					   fastremap_strreason(b)) != 0;
	tap_ok(distinct, "fastremap_strreason(): one text per reason");
	tap_ok(!strcmp(fastremap_strreason(-1), "unknown reason") &&
	       !strcmp(fastremap_strreason(1000), "unknown reason"),
	       "fastremap_strreason(): unknown reasons");
}

/*
 * A 4 MiB source 4 KiB past a PMD boundary, and a reserved destination
 * 8 KiB past one: a move between them spans 5 PMD extents, more than the
 * library routes to mremap(2) (the case "routing: 4 MiB, both misaligned"
 * checks that), so the tests below reach the module.
 */
static int two_ranges(char **src, char **dst)
{
	char *s, *d;

	s = reserve(4 * MIB + PMD, PMD);
	d = reserve(4 * MIB + PMD, PMD);
	*src = s ? s + 4 * KIB : NULL;
	*dst = d ? d + 8 * KIB : NULL;
	if (!*src || !*dst || map_rw(*src, 4 * MIB, MAP_PRIVATE))
		return 0;
	fill(*src, 4 * MIB);
	return 1;
}

static void test_arguments(void)
{
	struct {
		struct fastremap_stats s;
		uint64_t future[2];
	} big;
	struct fastremap_stats st;
	char *src, *dst;
	void *res = NULL;

	if (!tap_ok(two_ranges(&src, &dst), "argument checks: set up"))
		return;
	tap_ok(fastremap_remap(src, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			       dst, 1u << 7, NULL, &res) == -EINVAL,
	       "fastremap_remap(): unknown fr_flags -> -EINVAL");
	tap_ok(fastremap_remap(src, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			       dst, FASTREMAP_NO_FALLBACK | FASTREMAP_MREMAP_ONLY,
			       NULL, &res) == -EINVAL,
	       "fastremap_remap(): NO_FALLBACK with MREMAP_ONLY -> -EINVAL");
	memset(&st, 0, sizeof(st));
	st.size = 4;
	tap_ok(fastremap_remap(src, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			       dst, 0, &st, &res) == -EINVAL,
	       "fastremap_remap(): stats size below the first published -> -EINVAL");
	st.size = 1u << 20;
	tap_ok(fastremap_remap(src, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			       dst, 0, &st, &res) == -EINVAL,
	       "fastremap_remap(): stats size above a page -> -EINVAL");
	tap_ok(bad_words(src, 4 * MIB) == 0,
	       "fastremap_remap(): rejected arguments left the source alone");

	memset(&big, 0xff, sizeof(big));
	big.s.size = sizeof(big);
	tap_ok(fastremap_remap(src, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			       dst, 0, &big.s, NULL) == 0 && bad_words(dst, 4 * MIB) == 0,
	       "fastremap_remap(): result NULL is allowed, the move happens");
	tap_ok(big.s.size == sizeof(big.s) && !big.future[0] && !big.future[1],
	       "fastremap_remap(): a larger stats struct gets its tail zeroed, size %u",
	       big.s.size);

	/*
	 * The first published size, on a call the library routes (the first
	 * MiB back: it crosses no PMD boundary at either end, one extent):
	 * the fields it has, and nothing written past them.
	 */
	memset(&big, 0xff, sizeof(big));
	big.s.size = FASTREMAP_STATS_SIZE_VER0;
	tap_ok(fastremap_remap(dst, MIB, MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			       src, 0, &big.s, &res) == 0 && res == src &&
	       bad_words(src, MIB) == 0,
	       "fastremap_remap(): a first-size stats struct, the move happens");
	{
		const unsigned char *tail = (const unsigned char *)&big + FASTREMAP_STATS_SIZE_VER0;
		size_t left = sizeof(big) - FASTREMAP_STATS_SIZE_VER0, untouched = 0;

		while (untouched < left && tail[untouched] == 0xff)
			untouched++;
		tap_ok(big.s.size == FASTREMAP_STATS_SIZE_VER0 && untouched == left &&
		       !big.s.used_module && big.s.reason == FASTREMAP_REASON_FEW_EXTENTS,
		       "fastremap_remap(): a first-size stats struct is filled to its size "
		       "(%u) and no further (%zu of %zu bytes after it untouched), reason %d",
		       big.s.size, untouched, left, big.s.reason);
	}
	munmap(src, MIB);
	munmap(dst, 4 * MIB);
}

static void test_errno_kept(void)
{
	char *src, *dst;
	void *res;
	long r;

	if (!tap_ok(two_ranges(&src, &dst), "errno: set up"))
		return;
	errno = 4242;
	res = fastremap(src, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	tap_ok(res == dst && errno == 4242,
	       "fastremap(): errno unchanged by a successful call (%d)", errno);
	errno = 4243;
	r = fastremap_remap(dst, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			    src, 0, NULL, &res);
	tap_ok(r == 0 && res == src && errno == 4243,
	       "fastremap_remap(): errno unchanged (%d)", errno);
	errno = 4244;
	r = fastremap_remap(dst, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			    src + 8 * MIB, 0, NULL, &res);
	tap_ok(r == -EFAULT && errno == 4244,
	       "fastremap_remap(): errno unchanged on failure too (-EFAULT)");
	errno = 0;
	res = fastremap(dst, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED, src);
	tap_ok(res == MAP_FAILED && errno == EFAULT,
	       "fastremap(): MAP_FAILED and errno EFAULT for an unmapped source");
	/* Routed to mremap(2) (one extent), which the library calls itself. */
	errno = 4245;
	r = fastremap_remap(dst, 64 * KIB, 64 * KIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			    src + 64 * KIB, 0, NULL, &res);
	tap_ok(r == -EFAULT && errno == 4245,
	       "fastremap_remap(): errno unchanged by a routed call that fails (%ld)", r);
	/*
	 * A failed MREMAP_FIXED call of 5.10's mremap(2) has unmapped its
	 * target before it looked for the source: start again from fresh
	 * ranges (dst unmapped again, as the calls above left it).
	 */
	munmap(src, 4 * MIB);
	if (!tap_ok(two_ranges(&src, &dst), "errno: set up again"))
		return;
	munmap(dst, 64 * KIB);
	errno = 4246;
	r = fastremap_remap(src, 64 * KIB, 64 * KIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			    src + 256 * KIB, 0, NULL, &res);
	tap_ok(r == 0 && res == src + 256 * KIB && errno == 4246,
	       "fastremap_remap(): errno unchanged by a routed call (%ld)", r);
	errno = 0;
	res = fastremap(dst, 64 * KIB, 64 * KIB, MREMAP_MAYMOVE | MREMAP_FIXED, src);
	tap_ok(res == MAP_FAILED && errno == EFAULT,
	       "fastremap(): MAP_FAILED and errno EFAULT from a routed call");
	munmap(src, 4 * MIB);
}

/*
 * Ranges congruent modulo a PUD's span (1 GiB with 4 KiB pages, 64 GiB
 * with 16 KiB): where mremap(2) moves each whole PUD entry between them as
 * one extent with one flush (the module says so: FASTREMAP_FEAT_MREMAP_PUD),
 * a PUD-sized move between PUD-aligned addresses is one extent and goes to
 * mremap(2); a PMD head and tail add one extent each. Where it does not
 * (Linux 5.10), or no module can say, the same move is a page table's
 * worth of PMD extents (512; 2048): not routed. A PMD apart modulo the PUD
 * span, it is that many everywhere. Sparse sources: a page at each end
 * and at each PUD boundary inside. Names give the 4 KiB-page sizes.
 */
struct pud_case {
	const char *name;
	size_t src_off, dst_off, len;
	uint64_t extents, extents_pmd;	/* by PUD entries; PMD by PMD */
};
#define PUD_CASES 4

/* Case k at this kernel's page size. */
static struct pud_case pud_case(size_t k)
{
	const size_t gib = PUD_SZ, pmd = PMD_SZ;
	const struct pud_case cases[PUD_CASES] = {
		{ "1 GiB between 1 GiB-aligned addresses", 0, 0, gib, 1, PT_ENTRIES },
		{ "1 GiB + 4 MiB, congruent modulo 1 GiB, 2 MiB before a boundary",
		  gib - pmd, gib - pmd, gib + 2 * pmd, 3, PT_ENTRIES + 2 },
		{ "2 GiB between 1 GiB-aligned addresses", 0, 0, 2 * gib, 2, 2 * PT_ENTRIES },
		{ "1 GiB, destination 2 MiB past a 1 GiB boundary", 0, pmd, gib, PT_ENTRIES,
		  PT_ENTRIES },
	};

	return cases[k];
}

/* FASTREMAP_FEAT_MREMAP_PUD as the module reports it (module world only). */
static int mremap_pud;

/* The extents the library should count for case k. */
static uint64_t pud_case_extents(size_t k)
{
	struct pud_case c = pud_case(k);

	return module_world && mremap_pud ? c.extents : c.extents_pmd;
}

/*
 * Moves case k's sparse source with fastremap_remap() (stats in *st) and
 * checks the data: 0, or what failed (1 reserve, 2 map, 3 move, 4 data).
 */
static int pud_case_move(size_t k, struct fastremap_stats *st, long *r, size_t *bad)
{
	const struct pud_case c = pud_case(k);
	const size_t gib = PUD_SZ, len = c.len;
	size_t probe[4] = { 0, len - PG, 0, 0 }, np = 2;
	char *base = reserve(6 * gib, gib), *src, *dst;
	void *res = NULL;
	int rc = 0;

	*bad = 0;
	if (!base)
		return 1;
	src = base + c.src_off;
	dst = base + 3 * gib + c.dst_off;
	for (size_t b = (c.src_off / gib + 1) * gib; b < c.src_off + len && np < 4; b += gib)
		probe[np++] = b - c.src_off;
	if (mmap(src, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) != src) {
		rc = 2;
		goto out;
	}
	for (size_t i = 0; i < np; i++)
		fill(src + probe[i], PG);
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	*r = fastremap_remap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst, 0, st, &res);
	if (*r != 0 || res != dst) {
		rc = 3;
		goto out;
	}
	for (size_t i = 0; i < np; i++)
		*bad += bad_words(dst + probe[i], PG);
	if (*bad || msync(src, PG, MS_ASYNC) != -1 || errno != ENOMEM)
		rc = 4;
out:
	munmap(base, 6 * gib);
	return rc;
}

/* Whether case k took the path its extents call for: routed, or not. */
static int pud_case_path_ok(size_t k, const struct fastremap_stats *st)
{
	if (pud_case_extents(k) <= 4)
		return path_ok(E_ROUTED, st);
	return st->reason != FASTREMAP_REASON_FEW_EXTENTS &&
	       (module_world ? st->used_module : st->reason == fallback_reason);
}

static void test_pud_routing(void)
{
	tap_diag("mremap(2) moves whole PUD entries: %s", !module_world ? "not known (no module)" :
		 mremap_pud ? "yes (FASTREMAP_FEAT_MREMAP_PUD)" : "no (FASTREMAP_FEAT_MREMAP_PUD clear)");
	for (size_t k = 0; k < PUD_CASES; k++) {
		const char *name = pud_case(k).name;
		struct fastremap_stats st;
		size_t bad;
		long r = 0;
		int rc = pud_case_move(k, &st, &r, &bad);

		if (!tap_ok(rc != 1, "PUD routing: %s: reserve 6 GiB", name))
			continue;
		if (rc == 2) {
			tap_ok(0, "PUD routing: %s: map the source", name);
			continue;
		}
		if (!tap_ok(rc != 3, "PUD routing: %s: moved (%ld)", name, r))
			continue;
		tap_ok(rc == 0,
		       "PUD routing: %s: the data at the destination, the source unmapped (%zu bad words)",
		       name, bad);
		tap_ok(st.mremap_extents == pud_case_extents(k),
		       "PUD routing: %s: mremap(2) would take %llu extents (library: %llu)",
		       name, (unsigned long long)pud_case_extents(k),
		       (unsigned long long)st.mremap_extents);
		tap_ok(pud_case_path_ok(k, &st), "PUD routing: %s: %s (%s, module %d)", name,
		       pud_case_extents(k) <= 4 ? "routed to mremap(2)" : "not routed",
		       reason_name(st.reason), st.used_module);
	}
}

/*
 * A process's first call, before the library has asked the module
 * anything: a move routed by its PUD entries must wait for the module's
 * word on mremap(2) (FASTREMAP_FEAT_MREMAP_PUD), and is then routed as
 * every later call is. Exit 0, or what differed.
 */
static int pud_first_fresh(void)
{
	struct fastremap_stats st;
	size_t bad;
	long r = 0;
	int rc = pud_case_move(0, &st, &r, &bad);

	if (rc)
		return 10 + rc;
	if (st.mremap_extents != pud_case_extents(0))
		return 20;
	return pud_case_path_ok(0, &st) ? 0 : 30;
}

static void test_fallback_control(void)
{
	struct fastremap_stats st;
	char *src, *dst;
	void *res = NULL;
	long r;

	if (!tap_ok(two_ranges(&src, &dst), "fallback control: set up"))
		return;
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	r = fastremap_remap(src, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			    dst, FASTREMAP_NO_FALLBACK, &st, &res);
	if (module_world) {
		tap_ok(r == 0 && res == dst && st.used_module &&
		       bad_words(dst, 4 * MIB) == 0,
		       "NO_FALLBACK: a supported move takes the module");
		/* Move it back for the next checks. */
		r = fastremap_remap(dst, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
				    src, 0, NULL, &res);
	} else {
		int want = fallback_reason == FASTREMAP_REASON_NO_DEVICE ? -ENODEV : -EACCES;

		tap_ok(r == want && !st.used_module && st.reason == fallback_reason,
		       "NO_FALLBACK without a usable device -> %s (got %ld, %s)",
		       t_errname(-want), r, reason_name(st.reason));
		tap_ok(bad_words(src, 4 * MIB) == 0,
		       "NO_FALLBACK: the source was left alone");
	}

	/* In-place growth: declined by the module. */
	{
		char *hole = reserve(16 * MIB, PMD);

		if (hole && map_rw(hole, 4 * MIB, MAP_PRIVATE) == 0) {
			munmap(hole + 4 * MIB, 12 * MIB);
			fill(hole, 4 * MIB);
			memset(&st, 0, sizeof(st));
			st.size = sizeof(st);
			r = fastremap_remap(hole, 4 * MIB, 8 * MIB, MREMAP_MAYMOVE, NULL,
					    FASTREMAP_NO_FALLBACK, &st, &res);
			if (module_world)
				tap_ok(r == -EOPNOTSUPP && st.reason == FASTREMAP_REASON_DECLINED,
				       "NO_FALLBACK: a declined case -> -EOPNOTSUPP (got %ld)", r);
			tap_ok(r != 0 && bad_words(hole, 4 * MIB) == 0 &&
			       msync(hole + 4 * MIB, 4096, MS_ASYNC) == -1 && errno == ENOMEM,
			       "NO_FALLBACK: nothing changed when the module was not used");
			munmap(hole, 4 * MIB);
		}
	}

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	r = fastremap_remap(src, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			    dst, FASTREMAP_MREMAP_ONLY, &st, &res);
	tap_ok(r == 0 && res == dst && !st.used_module &&
	       st.reason == FASTREMAP_REASON_CALLER && bad_words(dst, 4 * MIB) == 0,
	       "MREMAP_ONLY: mremap(2) does the move, reason CALLER");
	munmap(dst, 4 * MIB);
}

/* ---- threads, fork, descriptors ---- */

#define RACE_PROCS	12
#define RACE_THREADS	8

struct racer {
	pthread_barrier_t *bar;
	int ok;
};

static void *race_worker(void *arg)
{
	struct racer *rc = arg;
	struct fastremap_stats st;
	char *src, *dst;
	void *res = NULL;
	long r;

	if (!two_ranges(&src, &dst)) {
		pthread_barrier_wait(rc->bar);
		return NULL;
	}
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	pthread_barrier_wait(rc->bar);
	r = fastremap_remap(src, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			    dst, 0, &st, &res);
	rc->ok = r == 0 && res == dst && bad_words(dst, 4 * MIB) == 0 &&
		 path_ok(E_MOVE, &st);
	munmap(dst, 4 * MIB);
	return NULL;
}

/* In a fresh child (the library not yet used): threads race on first use. */
static int race_child(void)
{
	pthread_barrier_t bar;
	pthread_t t[RACE_THREADS];
	struct racer rc[RACE_THREADS];
	int bad = 0, n;

	pthread_barrier_init(&bar, NULL, RACE_THREADS);
	for (int k = 0; k < RACE_THREADS; k++) {
		rc[k].bar = &bar;
		rc[k].ok = 0;
		pthread_create(&t[k], NULL, race_worker, &rc[k]);
	}
	for (int k = 0; k < RACE_THREADS; k++) {
		pthread_join(t[k], NULL);
		bad |= !rc[k].ok;
	}
	n = device_fds(NULL);
	if (n != (module_world ? 1 : 0))
		bad |= 2;
	return bad;
}

/* In a fresh child with stdin closed: the library's descriptor is not 0. */
static int lowfd_child(void)
{
	char *src, *dst;
	void *res;
	int fd = -1;

	close(0);
	if (!two_ranges(&src, &dst))
		return 1;
	if (fastremap_remap(src, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			    dst, 0, NULL, &res))
		return 2;
	if (device_fds(&fd) != 1 || fd <= 2)
		return 3;
	if (fcntl(0, F_GETFD) != -1 || errno != EBADF)
		return 4;
	if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC))
		return 5;
	return 0;
}

static int run_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn());
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void test_first_use(void)
{
	int bad = 0, rc;

	for (int k = 0; k < RACE_PROCS; k++) {
		rc = run_child(race_child);
		if (rc)
			tap_diag("race child %d: exit %d", k, rc);
		bad += rc != 0;
	}
	tap_ok(bad == 0, "%d fresh processes x %d threads racing on first use: all "
	       "moves right, %s", RACE_PROCS, RACE_THREADS,
	       module_world ? "exactly one device descriptor each" :
	       "no descriptor left open");
	if (module_world) {
		rc = run_child(lowfd_child);
		tap_ok(rc == 0, "with stdin closed, the descriptor is above 2 and "
		       "close-on-exec (child exit %d)", rc);
	} else {
		tap_skip_test("no device", "the device descriptor is above 2 and close-on-exec");
	}
}

static char *fork_src, *fork_dst;

static int fork_child(void)
{
	struct fastremap_stats st;
	void *res = NULL;
	int before = device_fds(NULL);

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (fastremap_remap(fork_src, 4 * MIB, 4 * MIB,
			    MREMAP_MAYMOVE | MREMAP_FIXED, fork_dst, 0, &st, &res))
		return 1;
	if (res != fork_dst || bad_words(fork_dst, 4 * MIB))
		return 2;
	if (msync(fork_src, 4096, MS_ASYNC) != -1 || errno != ENOMEM)
		return 3;
	if (!path_ok(E_MOVE, &st))
		return 4;
	/* The inherited descriptor served: no second one was opened. */
	if (device_fds(NULL) != before)
		return 5;
	memset(fork_dst, 0x5a, 4 * MIB);
	return 0;
}

static void test_fork(void)
{
	struct fastremap_stats st;
	void *res = NULL;
	char *a, *b;
	int rc;

	/* Make sure the parent has the library's state set up. */
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (!tap_ok(two_ranges(&a, &b) &&
		    fastremap_remap(a, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
				    b, 0, &st, &res) == 0, "fork: parent set up"))
		return;
	munmap(b, 4 * MIB);
	if (!two_ranges(&fork_src, &fork_dst))
		return;
	rc = run_child(fork_child);
	tap_ok(rc == 0, "fork: a child moves its own memory with the inherited "
	       "state (exit %d)", rc);
	tap_ok(bad_words(fork_src, 4 * MIB) == 0,
	       "fork: the parent's source is untouched by the child's move");
	{
		struct sig s;

		sig_take(&s, fork_dst, 4 * MIB);
		tap_ok(s.n == 1 && !strcmp(s.v[0].perms, "---p"),
		       "fork: the parent's destination is still its reservation");
	}
	rc = run_child(fork_child);
	tap_ok(rc == 0, "fork: a second child does it again (exit %d)", rc);
	munmap(fork_src, 4 * MIB);
	munmap(fork_dst, 4 * MIB);
}

/* The caller closes or reuses the library's descriptor by mistake. */
static void test_stolen_fd(void)
{
	struct fastremap_stats st;
	char *src, *dst;
	void *res = NULL;
	int fd = -1, other;
	long r;

	if (!module_world) {
		tap_skip_test("no device", "a caller reusing the library's descriptor");
		tap_skip_test("no device", "a caller closing the library's descriptor");
		return;
	}
	if (!tap_ok(device_fds(&fd) == 1, "the library holds one descriptor (%d)", fd))
		return;
	/* Reuse: the number now names /dev/null. */
	other = open("/dev/null", O_RDWR | O_CLOEXEC);
	dup2(other, fd);
	close(other);
	if (!two_ranges(&src, &dst))
		return;
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	r = fastremap_remap(src, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			    dst, 0, &st, &res);
	tap_ok(r == 0 && res == dst && st.used_module && bad_words(dst, 4 * MIB) == 0,
	       "a caller reusing the library's descriptor: the library reopens, fast path");
	tap_ok(fd_is(fd, "/dev/null") && device_fds(NULL) == 1,
	       "the caller's file was left alone, one device descriptor again");
	close(fd);

	/*
	 * Reuse by a file with a position of its own (lseek(2) answers, with
	 * a value that is not the device's cookie): the device number tells.
	 */
	device_fds(&fd);
	other = memfd_create("t_lib_stolen", MFD_CLOEXEC);
	if (other >= 0 && ftruncate(other, 1 << 20) == 0 &&
	    lseek(other, 12345, SEEK_SET) == 12345 && dup2(other, fd) == fd) {
		close(other);
		memset(&st, 0, sizeof(st));
		st.size = sizeof(st);
		r = fastremap_remap(dst, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
				    src, 0, &st, &res);
		tap_ok(r == 0 && res == src && st.used_module &&
		       bad_words(src, 4 * MIB) == 0 && device_fds(NULL) == 1 &&
		       lseek(fd, 0, SEEK_CUR) == 12345,
		       "a caller reusing the library's descriptor for a positioned file: "
		       "the library reopens, the file keeps its position");
		close(fd);
		r = fastremap_remap(src, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
				    dst, 0, &st, &res);
		if (r || res != dst) {
			tap_ok(0, "moving back after the positioned-file case");
			return;
		}
	} else {
		tap_skip_test("memfd_create/dup2 failed", "a caller reusing the library's "
			      "descriptor for a positioned file");
		if (other >= 0)
			close(other);
	}

	/* Closed: the number is free. */
	device_fds(&fd);
	close(fd);
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	r = fastremap_remap(dst, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			    src, 0, &st, &res);
	tap_ok(r == 0 && res == src && st.used_module && bad_words(src, 4 * MIB) == 0 &&
	       device_fds(NULL) == 1,
	       "a caller closing the library's descriptor: the library reopens, fast path");
	munmap(src, 4 * MIB);
}

/* ---- sandboxes, cancellation, descriptor limits ---- */

#if defined(__x86_64__)
#define T_AUDIT_ARCH	AUDIT_ARCH_X86_64
#elif defined(__i386__)
#define T_AUDIT_ARCH	AUDIT_ARCH_I386
#elif defined(__aarch64__)
#define T_AUDIT_ARCH	AUDIT_ARCH_AARCH64
#else
#error "t_lib: add this architecture's AUDIT_ARCH_*"
#endif

/*
 * Installs a seccomp filter: system call @nr fails with @err (0: "succeeds"
 * without running), or, with @flags_bit, only when argument 2 lacks that
 * bit. Returns 0 on success.
 */
static int seccomp_deny(int nr, int err, unsigned int flags_bit)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, T_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)nr, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* The low 32 bits of args[2] (little-endian targets). */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, flags_bit, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned int)err & SECCOMP_RET_DATA)),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (!flags_bit) {
		/* Unconditional: jump straight to the ERRNO return. */
		f[4] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						    (unsigned int)nr, 4, 0);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* A FIXED move through the library, checked; the stats in *st. 0 if right. */
static int lib_move(struct fastremap_stats *st)
{
	char *src, *dst;
	void *res = NULL;

	if (!two_ranges(&src, &dst))
		return 1;
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	if (fastremap_remap(src, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
			    dst, 0, st, &res))
		return 2;
	if (res != dst || bad_words(dst, 4 * MIB) ||
	    msync(src, 4096, MS_ASYNC) != -1 || errno != ENOMEM)
		return 3;
	res = fastremap(dst, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED, src);
	if (res != src || bad_words(src, 4 * MIB))
		return 4;
	munmap(src, 4 * MIB);
	return 0;
}

/*
 * The system calls the library makes before each ioctl to check that its
 * descriptor is still the device (libfastremap.c, fr_device()): lseek(2)
 * for the position cookie (FASTREMAP_FEAT_POS_COOKIE), and where that
 * cannot tell, the device number (fr_chr_dev()).
 */
#if defined(SYS_newfstatat) && (defined(__x86_64__) || defined(__aarch64__)) && !defined(__ILP32__)
#define T_SYS_IDENTITY	SYS_newfstatat
#else
#define T_SYS_IDENTITY	SYS_statx
#endif

static int sandbox_err, sandbox_nr, sandbox_nr2, sandbox_module;

/*
 * The path a call takes once @sandbox_nr (and @sandbox_nr2, if not -1)
 * answer @err: 0 if as expected. Where one way of checking the descriptor
 * is left, the module is still used (sandbox_module). A failed ioctl(2) is
 * IOCTL_ERROR; with no way left, the library cannot tell what its
 * descriptor is, so it does not use it.
 */
static int sandboxed_path_ok(const struct fastremap_stats *st, int err)
{
	int reason = sandbox_nr == SYS_ioctl ? FASTREMAP_REASON_IOCTL_ERROR :
		     FASTREMAP_REASON_OPEN_FAILED;

	if (!module_world)
		return !st->used_module && st->reason == fallback_reason ? 0 : 5;
	if (sandbox_module)
		return st->used_module ? 0 : 7;
	return !st->used_module && st->reason == reason &&
	       st->reason_errno == err ? 0 : 6;
}

/*
 * After a first call (which takes the module where there is one), the
 * process sandboxes itself: sandbox_nr fails with sandbox_err. mremap(2)
 * still works, so the library must too, here and in a child forked after.
 */
static int sandbox_child(void)
{
	struct fastremap_stats st;
	int rc, status;
	pid_t pid;

	rc = lib_move(&st);
	if (rc)
		return 10 + rc;
	if (!path_ok(E_MOVE, &st))
		return 20;
	if (seccomp_deny(sandbox_nr, sandbox_err, 0) ||
	    (sandbox_nr2 >= 0 && seccomp_deny(sandbox_nr2, sandbox_err, 0)))
		return 21;
	rc = lib_move(&st);
	if (rc)
		return 30 + rc;
	rc = sandboxed_path_ok(&st, sandbox_err);
	if (rc)
		return 40 + rc;
	pid = fork();
	if (pid == 0) {
		rc = lib_move(&st);
		_exit(rc ? 50 + rc : sandboxed_path_ok(&st, sandbox_err) ? 60 : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 70;
	return WEXITSTATUS(status);
}

static int run_child(int (*fn)(void));

static void test_sandbox(void)
{
	/* 0: the filter says "succeeded" without running the call. */
	static const struct {
		int nr, nr2, err, module;
		const char *name;
	} cases[] = {
		{ SYS_ioctl, -1, ENOSYS, 0, "ioctl(2)" },
		{ SYS_ioctl, -1, EPERM, 0, "ioctl(2)" },
		{ SYS_ioctl, -1, EACCES, 0, "ioctl(2)" },
		{ SYS_ioctl, -1, EINVAL, 0, "ioctl(2)" },
		{ SYS_ioctl, -1, 0, 0, "ioctl(2)" },
		/* The position cookie alone tells (the first call verified it). */
		{ T_SYS_IDENTITY, -1, ENOSYS, 1, "the device-number check" },
		{ T_SYS_IDENTITY, -1, EPERM, 1, "the device-number check" },
		/* The device number alone tells. */
		{ SYS_lseek, -1, EPERM, 1, "the position check" },
		{ SYS_lseek, -1, 0, 1, "the position check" },
		{ T_SYS_IDENTITY, SYS_lseek, ENOSYS, 0, "both descriptor checks" },
		{ T_SYS_IDENTITY, SYS_lseek, EPERM, 0, "both descriptor checks" },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		int rc;

		sandbox_nr = cases[k].nr;
		sandbox_nr2 = cases[k].nr2;
		sandbox_err = cases[k].err;
		sandbox_module = cases[k].module;
		rc = run_child(sandbox_child);
		tap_ok(rc == 0, "seccomp after the first call, %s -> %s: FIXED moves "
		       "still right, %s, and in a forked child (exit %d)", cases[k].name,
		       cases[k].err ? t_errname(cases[k].err) : "0 without running",
		       !module_world ? "through mremap(2)" : sandbox_module ?
		       "through the module" : sandbox_nr == SYS_ioctl ?
		       "through mremap(2), reason IOCTL_ERROR" :
		       "through mremap(2), reason OPEN_FAILED", rc);
	}
}

/* The exec'd children below start with the library untouched. */
static char self_exe[PATH_MAX];

static int run_fresh(const char *mode)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		execl(self_exe, self_exe, mode, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status))
		return 1000 + WTERMSIG(status);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static volatile int cancel_returned;

static void *cancel_thread(void *arg)
{
	char **r = arg;
	void *res;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_cancel(pthread_self());
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	/* The first call: the library opens the device here. */
	res = fastremap(r[0], 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED, r[1]);
	cancel_returned = res == r[1] && bad_words(r[1], 4 * MIB) == 0 ? 1 : 2;
	pthread_testcancel();
	cancel_returned = 3;
	return NULL;
}

/* Fresh: a pending deferred cancel does not act inside fastremap(). */
static int cancel_fresh(void)
{
	char *r[2];
	pthread_t t;
	void *ret;

	if (!two_ranges(&r[0], &r[1]))
		return 10;
	if (pthread_create(&t, NULL, cancel_thread, r) || pthread_join(t, &ret))
		return 11;
	if (!cancel_returned)
		return 12;	/* cancelled inside the call */
	if (cancel_returned != 1)
		return 13;
	return ret == PTHREAD_CANCELED ? 0 : 14;
}

/* Fresh: the device is opened with O_NOCTTY (other opens fail EXDEV). */
static int noctty_fresh(void)
{
	struct fastremap_stats st;
	int rc;

	if (seccomp_deny(SYS_openat, EXDEV, O_NOCTTY))
		return 10;
	rc = lib_move(&st);
	if (rc)
		return 20 + rc;
	if (st.reason == FASTREMAP_REASON_OPEN_FAILED && st.reason_errno == EXDEV)
		return 30;	/* opened without O_NOCTTY */
	return path_ok(E_MOVE, &st) ? 0 : 31;
}

/*
 * Fresh, module world: ioctl(2) "succeeds" without running. The handshake
 * is then no answer: reason ABI with ENOTTY, not whatever errno held.
 */
static int handshake_fresh(void)
{
	struct fastremap_abi_info ai;
	struct fastremap_stats st;
	int rc;

	if (seccomp_deny(SYS_ioctl, 0, 0))
		return 10;
	errno = ESRCH;
	rc = lib_move(&st);
	if (rc)
		return 20 + rc;
	if (st.used_module || st.reason != FASTREMAP_REASON_ABI)
		return 30;
	if (st.reason_errno != ENOTTY)
		return st.reason_errno == ESRCH ? 31 : 32;
	memset(&ai, 0, sizeof(ai));
	ai.size = sizeof(ai);
	return fastremap_info(&ai) == -ENOTTY ? 0 : 33;
}

static void test_fresh_children(void)
{
	int rc;

	rc = run_fresh("--cancel-child");
	tap_ok(rc == 0, "a thread with a deferred cancel pending returns from its first "
	       "fastremap() (exit %d%s)", rc, rc == 12 ? ": cancelled inside" : "");
	rc = run_fresh("--noctty-child");
	tap_ok(rc == 0, "the device is opened with O_NOCTTY (exit %d)", rc);
	rc = run_fresh("--pud-first-child");
	tap_ok(rc == 0, "a first call that moves whole PUD entries is routed as later ones: "
	       "%llu extents, %s (exit %d)", (unsigned long long)pud_case_extents(0),
	       pud_case_extents(0) <= 4 ? "routed" : "not routed", rc);
	if (module_world) {
		rc = run_fresh("--handshake-child");
		tap_ok(rc == 0, "an ioctl(2) that 'succeeds' without the module: reason ABI, "
		       "errno ENOTTY, not a stale one (exit %d)", rc);
	} else {
		tap_skip_test("no device", "an ioctl(2) that 'succeeds' without the module");
	}
}

/* ---- the ABI the library relies on: FASTREMAP_FEAT_REMAP_PINNED ---- */

#define HOLD_PARAM	T_PARAMS "hold_after_prepare"

static int param_write(const char *val)
{
	int fd = open(HOLD_PARAM, O_WRONLY | O_CLOEXEC);
	int ok = fd >= 0 && write(fd, val, strlen(val)) == (ssize_t)strlen(val);

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

static int param_read(void)
{
	char b[8] = "";
	int fd = open(HOLD_PARAM, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, b, sizeof(b) - 1) : -1;

	if (fd >= 0)
		close(fd);
	return n > 0 ? atoi(b) : -1;
}

static int truncate_fd = -1;
static _Atomic int truncator_ready;

/*
 * While the move is held: the request's page goes (truncated), then on.
 * The ioctl holds mmap_lock for write during the hold, and a kernel
 * without per-VMA locks (6.1) makes any page fault of this thread wait
 * for it: so the thread first runs every call it makes during the hold
 * (touching its stack and the code) and only then lets the move start.
 */
static void *truncator(void *arg)
{
	int *done = arg;

	*done = param_read() == 0 && ftruncate(truncate_fd, 4096) == 0 &&
		!param_write("0");
	usleep(1);
	truncator_ready = 1;
	if (!*done)
		return NULL;
	for (int k = 0; k < 10000 && param_read() != 2; k++)
		usleep(1000);
	*done = param_read() == 2 && ftruncate(truncate_fd, 0) == 0;
	param_write("0");
	return NULL;
}

/*
 * One FIXED|DONTUNMAP move through the ioctl whose request, in a memfd
 * page, is truncated away while the module holds the move after
 * preparing it (hold_after_prepare): a write of the result through the
 * caller's mapping would fail there. Returns the ioctl's value, errno in
 * *err; *held: the page really went during the call.
 */
static long held_remap(int dev, char **dst, int *err, int *held)
{
	struct fastremap_remap *rq;
	char *src;
	pthread_t t;
	long r;

	*held = 0;
	if (!two_ranges(&src, dst))
		return -2;
	truncate_fd = memfd_create("fr_request", MFD_CLOEXEC);
	if (truncate_fd < 0 || ftruncate(truncate_fd, 4096))
		return -2;
	rq = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, truncate_fd, 0);
	if (rq == MAP_FAILED)
		return -2;
	memset(rq, 0, sizeof(*rq));
	rq->size = sizeof(*rq);
	rq->mremap_flags = MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP;
	rq->old_addr = (uintptr_t)src;
	rq->old_size = rq->new_size = 4 * MIB;
	rq->new_addr = (uintptr_t)*dst;
	truncator_ready = 0;
	if (pthread_create(&t, NULL, truncator, held))
		return -2;
	while (!truncator_ready)
		usleep(1000);
	if (!*held || param_write("1")) {
		pthread_join(t, NULL);
		*held = 0;
		return -2;
	}
	r = syscall(SYS_ioctl, dev, FASTREMAP_IOC_REMAP, rq);
	*err = errno;
	param_write("0");
	pthread_join(t, NULL);
	munmap(rq, 4096);
	close(truncate_fd);
	munmap(src, 4 * MIB);
	return r;
}

static void test_pinned_result(void)
{
	int dev, err = 0, held;
	char *dst;
	long r;

	if (!module_world) {
		tap_skip_test("no device", "a request truncated away during the move: "
			      "the move is reported");
		return;
	}
	if (access(HOLD_PARAM, W_OK)) {
		tap_skip_test("a module without test hooks",
			      "a request truncated away during the move: the move is reported");
		return;
	}
	dev = open(DEVICE, O_RDWR | O_CLOEXEC);
	r = held_remap(dev, &dst, &err, &held);
	tap_ok(r == 0 && held && !bad_words(dst, 4 * MIB),
	       "FIXED|DONTUNMAP, the request's memfd page truncated away while the "
	       "move is held: success, the data at the target (ret %ld, %s, page gone %d)",
	       r, r ? strerror(err) : "-", held);
	munmap(dst, 4 * MIB);
	close(dev);
}

/*
 * Only 0, 1 or 2 free below the descriptor limit: the library must not
 * keep the device there, where the program's next open() of a standard
 * stream belongs.
 */
static int fdlimit_child(void)
{
	struct rlimit rl = { 3, 3 };
	struct fastremap_stats st;
	int fd = -1, rc;

	/* Make the library open again: its descriptor is gone. */
	if (device_fds(&fd) == 1)
		close(fd);
	close(0);
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return 10;
	rc = lib_move(&st);
	if (rc)
		return 20 + rc;
	if (fcntl(0, F_GETFD) != -1 || errno != EBADF)
		return 30;	/* the device kept on 0 */
	if (st.used_module || st.reason != FASTREMAP_REASON_OPEN_FAILED)
		return 31;
	return 0;
}

static void test_fd_limit(void)
{
	int rc;

	if (!module_world) {
		tap_skip_test("no device", "descriptor limit: the device is never kept on 0");
		return;
	}
	rc = run_child(fdlimit_child);
	tap_ok(rc == 0, "descriptor limit with only 0 free: the device is not kept "
	       "there, the call falls back (exit %d)", rc);
}

int main(int argc, char **argv)
{
	ssize_t l;
	int fd;

	/* Which world: decided without the library, which must stay unused here. */
	fd = open(DEVICE, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		struct fastremap_info fi;

		module_world = 1;
		memset(&fi, 0, sizeof(fi));
		fi.size = sizeof(fi);
		if (ioctl(fd, FASTREMAP_IOC_INFO, &fi) == 0)
			mremap_pud = !!(fi.features & FASTREMAP_FEAT_MREMAP_PUD);
		close(fd);
	} else {
		fallback_errno = errno;
		fallback_reason = errno == EACCES || errno == EPERM ?
				  FASTREMAP_REASON_NO_ACCESS :
				  FASTREMAP_REASON_NO_DEVICE;
	}
	/* The exec'd children: the library untouched until here. */
	if (argc > 1 && !strcmp(argv[1], "--cancel-child"))
		return cancel_fresh();
	if (argc > 1 && !strcmp(argv[1], "--noctty-child"))
		return noctty_fresh();
	if (argc > 1 && !strcmp(argv[1], "--handshake-child"))
		return handshake_fresh();
	if (argc > 1 && !strcmp(argv[1], "--pud-first-child"))
		return pud_first_fresh();
	l = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	self_exe[l > 0 ? l : 0] = 0;

	tap_diag("world: %s", module_world ? "module loaded, device usable: fast path" :
		 fallback_reason == FASTREMAP_REASON_NO_DEVICE ?
		 "no device: mremap(2) fallback" : "device not accessible: fallback");
	if (!module_world && access("/sys/module/fastremap", F_OK) == 0 &&
	    geteuid() == 0)
		tap_diag("warning: the module is loaded but the device cannot be opened");

	test_first_use();
	test_info();
	test_misc_api();
	test_arguments();
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		run_case(&cases[k]);
	test_errno_kept();
	test_pud_routing();
	test_fallback_control();
	test_fork();
	test_stolen_fd();
	test_sandbox();
	test_fresh_children();
	test_fd_limit();
	test_pinned_result();
	return tap_done();
}
