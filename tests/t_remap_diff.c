// SPDX-License-Identifier: GPL-2.0
/*
 * Differential test of FASTREMAP_IOC_REMAP against mremap(2).
 *
 * Two arenas, A and B, hold identical layouts at the same offsets:
 * private and shared anonymous mappings, memfd (shmem) and /tmp file
 * mappings (shared and private), MADV_HUGEPAGE regions, different
 * protections, holes and neighbouring VMAs, all with identical contents
 * (each arena has its own files, so shared mappings never alias across
 * arenas). A seeded generator applies a few thousand random operations to
 * both: mappings are created, unmapped, mprotect()ed, written, read and
 * zapped identically, and every remap (sizes, alignments, MAYMOVE, FIXED,
 * DONTUNMAP, growth, shrink, overlap, misalignment, partly unmapped
 * sources, unknown flags...) runs as mremap(2) in A and as the ioctl in B,
 * with addresses translated by the arena offset. Then:
 *
 * - success/failure and errno must match. EOPNOTSUPP from the ioctl counts
 *   as "declined", and mremap(2) is run in B instead.
 * - When both fail, B must be unchanged: the ioctl promises that, while
 *   mremap(2) on 6.x may already have unmapped the FIXED target (or, on
 *   7.x, moved part of a multi-VMA range) before failing. The same
 *   mremap(2) is then run in B as well, so that the twins stay alike.
 * - The mappings of both arenas must match, compared as the union of
 *   mapped ranges with their permissions, backing object and file offset
 *   (maps shows none for anonymous memory): the exact VMA split may
 *   differ, since the module and the kernel may merge neighbouring VMAs
 *   differently, so adjacent entries that continue each other are merged
 *   before comparing.
 * - The contents of every readable page must match (pages that are
 *   resident in neither arena are skipped; a fault must happen in both).
 *   Pages of the ranges an operation touched are compared after it, all
 *   pages every FULL_EVERY operations and at the end.
 *
 * Results of a non-FIXED MAYMOVE remap that leave the arena (holes in both
 * arenas are plugged with PROT_NONE for the call, except the one a mapping
 * may grow into in place) are compared with each other and unmapped. If
 * the ioctl picked another place than mremap(2) for a result mremap(2)
 * kept in the arena, it is counted as a placement difference (MAYMOVE
 * allows it) and moved to mremap(2)'s place.
 *
 * smaps counters (Rss, AnonHugePages, Swap, Locked) of the arenas must
 * match after every remap and full check.
 *
 * A divergence prints the seed, the operation and a replay command, then
 * a minimal reproduction: the operations since the arenas were last wiped
 * are replayed on fresh arenas, dropping chunks and then single operations
 * while they still diverge (ddmin), and the survivors are printed spelt
 * out. The default run ends with a self-check of that machinery: --inject
 * plants a bug on the ioctl side (a flipped bit after each remap), which
 * must be caught and reduced to at most three operations.
 *
 * After a divergence both arenas are wiped and the run goes on. They are
 * wiped too (without failing) when the memory matches but the VMA
 * boundaries differ, since later calls across such a boundary may then
 * differ legitimately; the summary says how often. So do they when arena
 * A has more than MAX_VMAS VMAs: fragmentation slows every maps read.
 *
 * Usage: t_remap_diff [--selftest-mremap] [SEED | random] [--ops N] [--trace] [--inject]
 * Without a seed it uses a fixed one, so the suite is reproducible.
 * The seed is printed; SEED --ops N --trace replays and prints the first
 * N operations.
 */
#define _GNU_SOURCE
#include <sys/resource.h>
#include "tlib.h"

#define USABLE		(48 * SZ_1M)	/* arena size */
#define GUARD		(2 * SZ_1M)	/* PROT_NONE on both sides */
#define MAXMAP		SZ_4M		/* largest mapping or remap */
#define FILE_SZ		(16 * SZ_1M)	/* every file and memfd */
#define MAXFOFF		SZ_4M		/* largest file offset mapped */
#define NOPS_DEFAULT	10000
#define FULL_EVERY	100
#define MAX_REPORTS	25
#define MAXC		512		/* canonical entries per range */
#define MAX_VMAS	64		/* a fresh epoch beyond this (speed) */
#define DECLINE_MAX_PCT	12		/* of the remaps (about 6% today) */

#define MM	MREMAP_MAYMOVE
#define FX	MREMAP_FIXED
#define DU	MREMAP_DONTUNMAP

struct arena {
	char *resv, *base;
	size_t resv_len;
	char tag;		/* 'A' or 'B', in object names */
};

static struct arena ar[2];	/* A: mremap(2), B: the ioctl */
static int fd = -1;
static uint64_t seed, rng;
static int trace, op_i, nobj;
struct remap {
	size_t old_off, old_size, new_size, new_off;
	long old_mis;		/* misalignment added to the old address */
	long new_mis;
	unsigned int flags;
	int new_kind;		/* 0: NULL, 1: arena offset, 2: absolute */
	uintptr_t new_abs;
};

enum op_type { OP_CREATE, OP_UNMAP, OP_PROTECT, OP_ZAP, OP_TOUCH, OP_LOCK, OP_REMAP };

/*
 * One operation, drawn first and applied after, so that a subset of the
 * operations since the arenas were last wiped can be replayed on fresh
 * arenas to find a minimal reproduction of a divergence.
 */
struct op {
	enum op_type type;
	size_t off, len, foff;
	int kind, prot, stride, how;	/* how: touch: write; lock: which call */
	uint64_t s;
	struct remap r;
};

#define LOG_MAX		2048		/* operations kept since the last wipe */
#define MIN_REPLAYS	400		/* a minimisation's budget */
#define MIN_SECONDS	300

static struct op oplog[LOG_MAX];
static int nlog, log_lost, log_first;	/* log_first: op index of oplog[0] */
static int minimizing, min_div, expect_div, inject;
static char min_why[400];

static struct counts {
	long remap, ok, fail, declined, declined_bad, div, resync, side,
	     escape, place, reports, epochs, split, smaps, locks;
	long two_err;		/* remaps generated with two errors at once */
	long moved;		/* the ioctl moved (not declined, no error) */
	long large;		/* ... 2 MiB or more */
	long lvl[4];		/* moved_pud, moved_pmd, moved_thp, moved_pte */
	long undeclined;	/* declines no rule of module/remap.c explains */
} c;
static char opdesc[256];
static int snap_ok;	/* the maps snapshot shows the current state */
static uint64_t pagebuf[2][T_PAGE_MAX / sizeof(uint64_t)];
static uint64_t filebuf[MAXMAP / sizeof(uint64_t)];

static uint64_t rnd(uint64_t n)
{
	return n ? t_xorshift64(&rng) % n : 0;
}

static int chance(int pct)
{
	return (int)rnd(100) < pct;
}

/* 1..max pages, favouring small ones. */
static size_t rnd_pages(size_t max)
{
	size_t n = max / PG;

	if (n <= 1)
		return PG;
	if (chance(70) && n > 16)
		n = 16;
	return (1 + rnd(n)) * PG;
}

/* ---------------------------------------------------------------------- */
/* Arenas                                                                  */

static int arena_init(struct arena *a, char tag)
{
	a->tag = tag;
	a->resv_len = USABLE + 2 * GUARD + PMD_SZ;
	a->resv = mmap(NULL, a->resv_len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a->resv == MAP_FAILED)
		return -1;
	a->base = (char *)T_ALIGN_UP((uintptr_t)a->resv + GUARD, PMD_SZ);
	/* One fresh VMA over guards and arena, so both arenas look alike. */
	return mmap(a->base - GUARD, USABLE + 2 * GUARD, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		    -1, 0) == MAP_FAILED ? -1 : 0;
}

static void arena_wipe(struct arena *a)
{
	mmap(a->base, USABLE, PROT_NONE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

static int in_arena(int x, const void *p)
{
	return (const char *)p >= ar[x].base && (const char *)p < ar[x].base + USABLE;
}

/* ---------------------------------------------------------------------- */
/* Canonical mapping lists                                                 */

struct centry {
	size_t start, end;	/* relative to the range compared */
	char perms[5];
	char name[64];
	long long off;		/* file offset; 0 for anonymous memory */
};

/* The object name, with the arena tag replaced, so A and B compare. */
static void norm_name(char *dst, size_t n, const char *path)
{
	const char *t = strstr(path, "frdiff");

	snprintf(dst, n, "%s", path);
	if (t && (size_t)(t - path) + 6 < n - 1 && dst[t - path + 6])
		dst[t - path + 6] = '#';
}

/*
 * The mappings of [lo, lo+len) from the last maps snapshot, relative to
 * lo, with continuing neighbours merged: same permissions and object, and
 * for files the next file offset. /proc/pid/maps shows no offset for
 * anonymous mappings (vm_pgoff is printed for files only), so adjacent
 * anonymous entries with the same permissions merge.
 */
static int canon(uintptr_t lo, size_t len, struct centry *out)
{
	static struct t_map m[MAXC];
	int n = t_maps_parse(lo, lo + len, m, MAXC), k = 0;

	if (n > MAXC)
		n = MAXC;
	for (int i = 0; i < n; i++) {
		struct centry c;
		int anon = m[i].inode == 0;

		memset(&c, 0, sizeof(c));	/* compared with memcmp() */
		c.start = m[i].start - lo;
		c.end = m[i].end - lo;
		memcpy(c.perms, m[i].perms, 5);
		norm_name(c.name, sizeof(c.name), m[i].path);
		c.off = anon ? 0 : (long long)m[i].off;
		if (k && out[k - 1].end == c.start && !strcmp(out[k - 1].perms, c.perms) &&
		    !strcmp(out[k - 1].name, c.name) &&
		    (anon || out[k - 1].off + (long long)(out[k - 1].end - out[k - 1].start) == c.off)) {
			out[k - 1].end = c.end;
			continue;
		}
		out[k++] = c;
	}
	return k;
}

static void centry_str(char *b, size_t n, const struct centry *c)
{
	snprintf(b, n, "+%#zx-%#zx %s %#llx %s", c->start, c->end, c->perms,
		 (unsigned long long)c->off, c->name[0] ? c->name : "[anon]");
}

/*
 * Compares the mappings of [pa, pa+len) and [pb, pb+len) from the last
 * snapshot: 0 if alike, else 1 with the first difference in why.
 */
static int maps_differ(uintptr_t pa, uintptr_t pb, size_t len, char *why, size_t wn)
{
	static struct centry ca[MAXC], cb[MAXC];
	int na = canon(pa, len, ca), nb = canon(pb, len, cb);
	char sa[160], sb[160];

	for (int i = 0; i < na || i < nb; i++) {
		if (i < na && i < nb && ca[i].start == cb[i].start &&
		    ca[i].end == cb[i].end && !strcmp(ca[i].perms, cb[i].perms) &&
		    !strcmp(ca[i].name, cb[i].name) && ca[i].off == cb[i].off)
			continue;
		if (i < na)
			centry_str(sa, sizeof(sa), &ca[i]);
		else
			snprintf(sa, sizeof(sa), "(nothing)");
		if (i < nb)
			centry_str(sb, sizeof(sb), &cb[i]);
		else
			snprintf(sb, sizeof(sb), "(nothing)");
		snprintf(why, wn, "mapping #%d: mremap(2) side %s, ioctl side %s", i, sa, sb);
		return 1;
	}
	return 0;
}

/*
 * Compares the readable pages of [pa, pa+len) and [pb, pb+len), using
 * the last snapshot for permissions: 0 if alike, else 1 with why.
 */
static int contents_differ(char *pa, char *pb, size_t len, char *why, size_t wn)
{
	static struct centry c[MAXC];
	static unsigned char va[MAXMAP / T_PAGE_MIN], vb[MAXMAP / T_PAGE_MIN];
	int n = canon((uintptr_t)pa, len, c);

	for (int i = 0; i < n; i++) {
		if (c[i].perms[0] != 'r')
			continue;
		for (size_t at = c[i].start; at < c[i].end; at += MAXMAP) {
			size_t chunk = c[i].end - at < MAXMAP ? c[i].end - at : MAXMAP;
			int ra = mincore(pa + at, chunk, va), rb = mincore(pb + at, chunk, vb);

			for (size_t k = 0; k < chunk / PG; k++) {
				size_t o = at + k * PG;
				int fa, fb;

				if (!ra && !rb && !(va[k] & 1) && !(vb[k] & 1))
					continue;	/* resident in neither */
				if (!t_probe_cmp_page(pa + o, pb + o))
					continue;	/* the usual case */
				fa = t_probe_copy_page(pagebuf[0], pa + o);
				fb = t_probe_copy_page(pagebuf[1], pb + o);
				if (fa != fb) {
					snprintf(why, wn, "page +%#zx: read %s on the mremap(2) side, %s on the ioctl side",
						 o, fa ? "faults" : "works", fb ? "faults" : "works");
					return 1;
				}
				if (!fa && memcmp(pagebuf[0], pagebuf[1], PG)) {
					size_t w = 0;

					while (pagebuf[0][w] == pagebuf[1][w])
						w++;
					snprintf(why, wn, "page +%#zx word %zu: %#llx on the mremap(2) side, %#llx on the ioctl side",
						 o, w, (unsigned long long)pagebuf[0][w],
						 (unsigned long long)pagebuf[1][w]);
					return 1;
				}
			}
		}
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Reporting                                                               */

static void snap(void)
{
	snap_ok = !t_maps_snapshot();
}

/* Both arenas back to empty; the operation log starts again. */
static void wipe_both(void)
{
	arena_wipe(&ar[0]);
	arena_wipe(&ar[1]);
	snap_ok = 0;
	nlog = 0;
	log_lost = 0;
	log_first = op_i + 1;
}

static void resync(void)
{
	wipe_both();
	c.resync++;
}

static void minimize(void);

static void diverged(const char *what, const char *detail)
{
	if (minimizing) {
		if (!min_div)
			snprintf(min_why, sizeof(min_why), "%s: %s", what, detail);
		min_div = 1;
		return;
	}
	c.div++;
	if (c.reports++ < MAX_REPORTS) {
		if (expect_div)
			tap_diag("seed %" PRIu64 " op %d: %s: %s (expected)", seed, op_i, what, detail);
		else
			tap_ok(0, "seed %" PRIu64 " op %d: %s: %s", seed, op_i, what, detail);
		tap_diag("  op: %s", opdesc);
		tap_diag("  reproduce: t_remap_diff %s%s%" PRIu64 " --ops %d --trace",
			 t_nodev() ? "--selftest-mremap " : "", inject ? "--inject " : "",
			 seed, op_i + 1);
		if (c.reports <= 3)
			minimize();
	}
	resync();
}

/* Whether the raw VMA boundaries of the arenas differ (last snapshot). */
static int split_differs(void)
{
	static struct t_map ma[MAXC], mb[MAXC];
	int na = t_maps_parse((uintptr_t)ar[0].base, (uintptr_t)ar[0].base + USABLE, ma, MAXC);
	int nb = t_maps_parse((uintptr_t)ar[1].base, (uintptr_t)ar[1].base + USABLE, mb, MAXC);

	if (na != nb)
		return 1;
	for (int i = 0; i < na && i < MAXC; i++)
		if (ma[i].start - (uintptr_t)ar[0].base != mb[i].start - (uintptr_t)ar[1].base ||
		    ma[i].end - (uintptr_t)ar[0].base != mb[i].end - (uintptr_t)ar[1].base)
			return 1;
	return 0;
}

/*
 * Compares the arenas' smaps counters: what was moved must be accounted
 * alike (resident, THP-mapped, swapped out, locked), not just readable.
 */
static int smaps_differ(char *why, size_t wn)
{
	struct t_smaps s[2];
	struct t_range r[2];

	for (int x = 0; x < 2; x++)
		r[x] = (struct t_range){ (uintptr_t)ar[x].base, (uintptr_t)ar[x].base + USABLE };
	if (t_smaps_ranges(r, 2, s))
		return 0;	/* smaps unreadable: nothing to compare */
	c.smaps++;
	/* Not .vmas: the VMA split may differ (see check_arenas()). */
	if (s[0].rss_kb == s[1].rss_kb && s[0].anon_huge_kb == s[1].anon_huge_kb &&
	    s[0].swap_kb == s[1].swap_kb && s[0].locked_kb == s[1].locked_kb)
		return 0;
	snprintf(why, wn, "mremap(2) side Rss %ld AnonHugePages %ld Swap %ld Locked %ld kB, ioctl side %ld %ld %ld %ld kB",
		 s[0].rss_kb, s[0].anon_huge_kb, s[0].swap_kb, s[0].locked_kb,
		 s[1].rss_kb, s[1].anon_huge_kb, s[1].swap_kb, s[1].locked_kb);
	return 1;
}

/* Compares the contents of arena range [lo, lo+len), clipped. */
static int range_differs(size_t lo, size_t len, const char *when)
{
	char why[400], what[96];

	if (lo >= USABLE || !len)
		return 0;
	if (len > USABLE - lo)
		len = USABLE - lo;
	if (!contents_differ(ar[0].base + lo, ar[1].base + lo, len, why, sizeof(why)))
		return 0;
	snprintf(what, sizeof(what), "contents differ %s", when);
	diverged(what, why);
	return 1;
}

/*
 * Takes a snapshot and compares both arenas: all mappings, and the
 * contents of arena offsets [lo1, lo1+len1) and [lo2, lo2+len2). Returns
 * 0 if alike; reports a divergence otherwise.
 */
static int check_arenas(size_t lo1, size_t len1, size_t lo2, size_t len2,
			const char *when)
{
	char why[400], what[96];

	snap();
	if (!snap_ok)
		return 0;
	if (maps_differ((uintptr_t)ar[0].base, (uintptr_t)ar[1].base, USABLE,
			why, sizeof(why))) {
		snprintf(what, sizeof(what), "mappings differ %s", when);
		diverged(what, why);
		return 1;
	}
	/*
	 * Before the contents: comparing them reads pages that are resident
	 * on one side only, which would fault them in on the other.
	 */
	if ((len1 || len2) && smaps_differ(why, sizeof(why))) {
		snprintf(what, sizeof(what), "smaps counters differ %s", when);
		diverged(what, why);
		return 1;
	}
	if (range_differs(lo1, len1, when) || range_differs(lo2, len2, when))
		return 1;
	if (split_differs()) {
		/*
		 * Same memory, different VMA boundaries: allowed, but later
		 * calls across a boundary would then legitimately behave
		 * differently (EFAULT on 6.x), so start again from scratch.
		 */
		if (c.split++ < 5)
			tap_diag("op %d: VMA split differs (not an error): %s", op_i, opdesc);
		wipe_both();
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Operations other than remap: applied alike to both arenas               */

enum kind {
	K_ANON, K_ANON_SHARED, K_MEMFD_SHARED, K_MEMFD_PRIV, K_FILE_SHARED,
	K_FILE_PRIV, K_ANON_THP, NKINDS
};

static const char *const kind_name[] = {
	"anon", "anon-shared", "memfd-shared", "memfd-private", "file-shared",
	"file-private", "anon-thp",
};

static int rnd_prot(void)
{
	int r = rnd(100);

	return r < 70 ? PROT_READ | PROT_WRITE : r < 85 ? PROT_READ :
	       r < 93 ? PROT_NONE : PROT_READ | PROT_EXEC;
}

static const char *protstr(int prot)
{
	static char b[4];

	b[0] = prot & PROT_READ ? 'r' : '-';
	b[1] = prot & PROT_WRITE ? 'w' : '-';
	b[2] = prot & PROT_EXEC ? 'x' : '-';
	b[3] = 0;
	return b;
}

/* A file or memfd of FILE_SZ whose [foff, foff+len) holds filebuf. */
static int make_file(int x, enum kind k, size_t foff, size_t len)
{
	char name[64];
	int f;

	if (k == K_MEMFD_SHARED || k == K_MEMFD_PRIV) {
		snprintf(name, sizeof(name), "frdiff%c%d", ar[x].tag, nobj);
		f = memfd_create(name, MFD_CLOEXEC);
	} else {
		snprintf(name, sizeof(name), "/tmp/frdiff%c%d", ar[x].tag, nobj);
		f = open(name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (f >= 0)
			unlink(name);
	}
	if (f < 0)
		return -1;
	if (ftruncate(f, FILE_SZ) || pwrite(f, filebuf, len, foff) != (ssize_t)len) {
		close(f);
		return -1;
	}
	return f;
}

static void gen_create(struct op *o)
{
	o->type = OP_CREATE;
	o->kind = rnd(100) < 35 ? K_ANON : (enum kind)rnd(NKINDS);
	o->len = chance(20) ? SZ_2M + rnd_pages(SZ_2M) : rnd_pages(64 * PG);
	o->foff = o->kind == K_ANON || o->kind == K_ANON_SHARED || o->kind == K_ANON_THP ?
		  0 : rnd(MAXFOFF / PG) * PG;
	o->prot = rnd_prot();
	o->stride = chance(30) ? 1 + rnd(4) : 1;
	o->s = t_xorshift64(&rng);
	if (o->kind == K_ANON_THP) {
		o->len = (1 + rnd(2)) * PMD_SZ;
		if (o->len > USABLE)	/* one THP, where a PMD is 32 MiB */
			o->len = PMD_SZ;
		o->off = rnd((USABLE - o->len) / PMD_SZ + 1) * PMD_SZ;
	} else if (chance(30)) {
		o->off = rnd((USABLE - o->len) / PMD_SZ + 1) * PMD_SZ;
	} else {
		o->off = rnd((USABLE - o->len) / PG + 1) * PG;
	}
}

static void op_create(const struct op *o)
{
	enum kind k = o->kind;
	size_t len = o->len, off = o->off, foff = o->foff;
	int prot = o->prot, stride = o->stride, flags;
	uint64_t s = o->s;

	snprintf(opdesc, sizeof(opdesc), "create %s %s at +%#zx len %#zx foff %#zx stride %d",
		 kind_name[k], protstr(prot), off, len, foff, stride);
	if (k != K_ANON && k != K_ANON_SHARED && k != K_ANON_THP)
		t_fill_pattern(filebuf, len, s);
	nobj++;
	for (int x = 0; x < 2; x++) {
		char *p = ar[x].base + off;
		int f = -1;

		switch (k) {
		case K_ANON:
		case K_ANON_THP:
			flags = MAP_PRIVATE | MAP_ANONYMOUS;
			break;
		case K_ANON_SHARED:
			flags = MAP_SHARED | MAP_ANONYMOUS;
			break;
		case K_MEMFD_SHARED:
		case K_FILE_SHARED:
			flags = MAP_SHARED;
			break;
		default:
			flags = MAP_PRIVATE;
			break;
		}
		if (flags & MAP_ANONYMOUS)
			foff = 0;
		else if ((f = make_file(x, k, foff, len)) < 0)
			continue;	/* the maps check reports it */
		if (mmap(p, len, PROT_READ | PROT_WRITE, flags | MAP_FIXED, f, foff) == MAP_FAILED) {
			if (f >= 0)
				close(f);
			continue;
		}
		if (f >= 0)
			close(f);
		if (k == K_ANON_THP)
			madvise(p, len, MADV_HUGEPAGE);
		/* Anonymous memory gets the pattern; private files some COW pages. */
		if (flags & MAP_ANONYMOUS) {
			for (size_t o = 0; o < len; o += stride * PG)
				t_fill_pattern_off(p + o, PG, s, o / PG);
		} else if (k == K_MEMFD_PRIV || k == K_FILE_PRIV) {
			for (size_t o = 0; o < len; o += 3 * stride * PG)
				t_fill_pattern_off(p + o, PG, s ^ 1, o / PG);
		}
		if (prot != (PROT_READ | PROT_WRITE))
			mprotect(p, len, prot);
	}
}

/* A random page-aligned range of the arena. */
static void rnd_range(size_t *off, size_t *len)
{
	*len = chance(15) ? rnd_pages(MAXMAP) : rnd_pages(32 * PG);
	*off = rnd((USABLE - *len) / PG + 1) * PG;
}

/* The operations on a random range: unmap, protect, zap, touch, lock. */
static void gen_range_op(struct op *o, enum op_type t)
{
	o->type = t;
	if (t == OP_PROTECT)
		o->prot = rnd_prot();
	else if (t == OP_TOUCH)
		o->how = chance(70);		/* write */
	else if (t == OP_LOCK)
		o->how = rnd(3);
	if (t == OP_TOUCH)
		o->s = t_xorshift64(&rng);
	rnd_range(&o->off, &o->len);
}

static void op_unmap(const struct op *o)
{
	size_t off = o->off, len = o->len;

	snprintf(opdesc, sizeof(opdesc), "munmap +%#zx len %#zx", off, len);
	munmap(ar[0].base + off, len);
	munmap(ar[1].base + off, len);
}

static void op_protect(const struct op *o)
{
	int prot = o->prot, ra, rb, ea, eb;
	size_t off = o->off, len = o->len;

	snprintf(opdesc, sizeof(opdesc), "mprotect +%#zx len %#zx %s", off, len, protstr(prot));
	ra = mprotect(ar[0].base + off, len, prot);
	ea = errno;
	rb = mprotect(ar[1].base + off, len, prot);
	eb = errno;
	if (ra != rb || (ra && ea != eb)) {
		char why[96];

		snprintf(why, sizeof(why), "%s vs %s", ra ? t_errname(ea) : "ok",
			 rb ? t_errname(eb) : "ok");
		diverged("mprotect outcome differs", why);
	}
}

static void op_zap(const struct op *o)
{
	size_t off = o->off, len = o->len;

	snprintf(opdesc, sizeof(opdesc), "madvise DONTNEED +%#zx len %#zx", off, len);
	madvise(ar[0].base + off, len, MADV_DONTNEED);
	madvise(ar[1].base + off, len, MADV_DONTNEED);
}

/*
 * mlock(), mlock2(ONFAULT) or munlock() of a range in both arenas, so that
 * locked VMAs get moved (and the Locked counter compared). Root only: an
 * unprivileged RLIMIT_MEMLOCK would make the two sides fail differently.
 */
static void op_lock(const struct op *o)
{
	int how = o->how, ret[2], err[2];
	static const char *const name[] = { "mlock", "mlock2 ONFAULT", "munlock" };
	size_t off = o->off, len = o->len;

	snprintf(opdesc, sizeof(opdesc), "%s +%#zx len %#zx", name[how], off, len);
	for (int x = 0; x < 2; x++) {
		char *p = ar[x].base + off;

		errno = 0;
		ret[x] = how == 0 ? mlock(p, len) :
			 how == 1 ? (int)syscall(SYS_mlock2, p, len, 1 /* MLOCK_ONFAULT */) :
			 munlock(p, len);
		err[x] = errno;
	}
	c.locks++;
	if (ret[0] != ret[1] || (ret[0] && err[0] != err[1])) {
		char why[200];

		snprintf(why, sizeof(why), "mremap(2) side %d (%s), ioctl side %d (%s)",
			 ret[0], strerror(err[0]), ret[1], strerror(err[1]));
		diverged("lock results differ", why);
	}
}

/* Writes (or reads) pages of a range in both arenas; faults must match. */
static void op_touch(const struct op *o)
{
	int write = o->how;
	uint64_t s = o->s;
	size_t off = o->off, len = o->len;

	snprintf(opdesc, sizeof(opdesc), "%s +%#zx len %#zx", write ? "write" : "read", off, len);
	for (size_t o = off; o < off + len; o += PG) {
		int f[2];

		for (int x = 0; x < 2; x++) {
			uint64_t v;

			if (write) {
				t_pattern_page(pagebuf[0], s, o / PG);
				f[x] = t_probe_write_page(ar[x].base + o, pagebuf[0]);
			} else {
				f[x] = t_probe_read(ar[x].base + o, &v);
			}
		}
		if (f[0] != f[1]) {
			char why[96];

			snprintf(why, sizeof(why), "page +%#zx: %s faults in %s only", o,
				 write ? "write" : "read", f[0] ? "A" : "B");
			diverged("access differs", why);
			return;
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Remap                                                                   */


static char *old_addr(int x, const struct remap *r)
{
	return ar[x].base + r->old_off + r->old_mis;
}

static char *new_addr(int x, const struct remap *r)
{
	if (r->new_kind == 0)
		return NULL;
	if (r->new_kind == 2)
		return (char *)r->new_abs;
	return ar[x].base + r->new_off + r->new_mis;
}

static size_t palign(size_t n)
{
	return (n + PG - 1) & ~(PG - 1);
}

/* ---------------------------------------------------------------------- */
/* Declines                                                                */

/*
 * The rules under which module/remap.c declines a call (EOPNOTSUPP, so
 * that the caller uses mremap(2)). Every decline must be explained by one
 * of them, from the state the call saw; "unexplained" fails the run.
 */
enum decline_rule {
	D_MAP_COUNT, D_VMA_KIND, D_MLOCK, D_SHARED_DUP, D_HUGE_GROW, D_DU_SIZES,
	D_IN_PLACE, D_SHRINK, D_MULTI_VMA, D_SHRINK_TAIL, D_NRULES
};

static const char *const decline_name[D_NRULES + 1] = {
	"near vm.max_map_count", "unsupported VMA (hugetlb, PFN/IO, KSM, uffd, special)",
	"mlocked growth or DONTUNMAP", "zero old_size of a shared mapping",
	"growth beyond TASK_SIZE", "DONTUNMAP sizes equal only page-aligned",
	"growth in place", "plain shrink", "multi-VMA FIXED move (7.x)",
	"shrinking move whose tail spans VMAs", "unexplained",
};
static long declined_by[D_NRULES + 1];

/* VMAs in the last maps snapshot (mm->map_count, give or take [vsyscall]). */
static long maps_lines(void)
{
	long n = 0;

	for (size_t i = 0; i < t_maps_len; i++)
		n += t_maps_buf[i] == '\n';
	return n;
}
static long max_map_count;

/* The VmFlags of the VMA containing addr ("" if none or unreadable). */
static void vma_flags(uintptr_t addr, char *out, size_t n)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	int in = 0;

	out[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx ", &s, &e) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = addr >= s && addr < e;
		else if (in && !strncmp(line, "VmFlags:", 8)) {
			snprintf(out, n, "%.200s", line + 8);
			break;
		}
	}
	fclose(f);
}

static int has_flag(const char *flags, const char *f)
{
	for (const char *p = flags; (p = strstr(p, f)); p += 2)
		if ((p == flags || p[-1] == ' ') && (p[2] == ' ' || p[2] == '\n' || !p[2]))
			return 1;
	return 0;
}

/*
 * Which rule explains a decline of remap(old, old_raw, new_raw, flags)
 * that mremap(2) answered with a_fail/a_err, given the map count at the
 * call and the current (unchanged) maps snapshot; D_NRULES if none.
 */
static enum decline_rule decline_rule(uintptr_t old, size_t old_raw, size_t new_raw,
				      unsigned int flags, long map_count,
				      int a_fail, int a_err)
{
	size_t ol = palign(old_raw), nl = palign(new_raw), vlen;
	static const char *const kinds[] = { "ht", "io", "pf", "mm", "de", "mg", "um", "uw", "ui" };
	char vf[256];
	struct t_map m;
	int shared, locked;

	/* A few VMAs of slack: mremap(2) in the other arena ran first. */
	if (map_count + 6 + 4 > max_map_count)
		return D_MAP_COUNT;
	if (flags & ~(MM | FX | DU))
		return D_NRULES;
	if ((flags & DU) && old_raw != new_raw && ol == nl)
		return D_DU_SIZES;
	if ((old & (PG - 1)) || !nl)
		return D_NRULES;
	/* The first entry from old on, clipped at old only: the VMA's end. */
	if (t_maps_parse(old, ~(uintptr_t)0, &m, 1) < 1 || m.start != old)
		return D_NRULES;
	vlen = m.end - old;
	vma_flags(old, vf, sizeof(vf));
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (has_flag(vf, kinds[i]))
			return D_VMA_KIND;
	if (m.path[0] == '[' && strcmp(m.path, "[heap]") && strcmp(m.path, "[stack]"))
		return D_VMA_KIND;
	shared = m.perms[3] == 's';
	locked = has_flag(vf, "lo");
	if (flags & (FX | DU)) {
		size_t len = ol < nl ? ol : nl;

		if (!ol)
			return shared ? D_SHARED_DUP : D_NRULES;
		if (len > vlen)
			return (flags & FX) && ol == nl && !(a_fail && a_err == EFAULT) ?
			       D_MULTI_VMA : D_NRULES;
		if (ol > vlen)
			return D_SHRINK_TAIL;
		if (locked && (nl > ol || (flags & DU)))
			return D_MLOCK;
		return D_NRULES;
	}
	if (ol == nl)
		return D_NRULES;
	if (ol > nl)
		return D_SHRINK;
	if (!ol)
		return shared ? D_SHARED_DUP : D_NRULES;
	if (nl > T_TASK_SIZE)
		return D_HUGE_GROW;
	if (locked)
		return D_MLOCK;
	if (ol == vlen && old + nl <= T_TASK_SIZE && old + nl > old &&
	    t_maps_parse(old + ol, old + nl, &m, 1) == 0)
		return D_IN_PLACE;
	return D_NRULES;
}

static void gen_new_addr(struct remap *r, const struct t_map *m, int n);
static void gen_two_errors(struct remap *r, const struct t_map *m, int n);

/* Picks a random remap, mostly of existing mappings (from arena A). */
static void gen_remap(struct remap *r)
{
	static struct t_map m[MAXC];
	int n, fl;

	memset(r, 0, sizeof(*r));
	n = t_maps_parse((uintptr_t)ar[0].base, (uintptr_t)ar[0].base + USABLE, m, MAXC);
	if (n > MAXC)
		n = MAXC;
	if (n && chance(85)) {
		const struct t_map *e = &m[rnd(n)];
		size_t s = e->start - (uintptr_t)ar[0].base, l = e->end - e->start, rem;

		r->old_off = s + (chance(50) ? 0 : rnd(l / PG) * PG);
		rem = s + l - r->old_off;
		r->old_size = chance(55) ? rem : rnd_pages(rem);
		if (chance(10))		/* run past the VMA */
			r->old_size += rnd_pages(64 * PG);
	} else {
		r->old_off = rnd(USABLE / PG) * PG;
		r->old_size = rnd_pages(256 * PG);
	}
	if (r->old_size > MAXMAP)
		r->old_size = MAXMAP;
	if (r->old_off + r->old_size > USABLE)
		r->old_size = USABLE - r->old_off;
	if (!r->old_size)
		r->old_size = PG;

	fl = rnd(100);
	r->flags = fl < 55 ? MM | FX : fl < 68 ? MM : fl < 75 ? 0 :
		   fl < 85 ? MM | FX | DU : fl < 90 ? MM | DU : fl < 93 ? FX :
		   fl < 95 ? DU : fl < 97 ? MM | FX | (1u << (3 + rnd(29))) : MM | FX;

	/* Sizes. */
	fl = rnd(100);
	if (fl < 50 || ((r->flags & DU) && chance(85))) {
		r->new_size = r->old_size;
	} else if (fl < 68 && r->old_size < MAXMAP) {
		r->new_size = r->old_size + rnd_pages(MAXMAP - r->old_size);
	} else if (fl < 85 && r->old_size > PG) {
		r->new_size = rnd_pages(r->old_size - PG);
	} else {
		r->new_size = r->old_size;
		switch (rnd(6)) {
		case 0:
			r->new_size = 0;
			break;
		case 1:
			r->new_size = r->old_size + 1 + rnd(PG - 1);	/* unaligned */
			break;
		case 2:
			r->old_size -= 1 + rnd(PG - 1);		/* unaligned */
			break;
		case 3:
			r->old_size = 0;			/* duplicate */
			break;
		case 4:
			r->old_size = ~0UL;			/* aligns to 0 */
			break;
		default:
			r->old_mis = 1 + rnd(PG - 1);		/* misaligned */
			break;
		}
	}
	if (r->new_size > MAXMAP)
		r->new_size = MAXMAP;
	/* In-place growth may not leave the arena (the guard stops it). */

	/* New address. */
	if (r->flags & FX)
		gen_new_addr(r, m, n);
	/* NULL otherwise: DONTUNMAP alone takes it as a hint. */
	if (chance(5))
		gen_two_errors(r, m, n);
}

/*
 * The generator's invalid lengths and targets lie past T_TASK_SIZE: were
 * it too small, a "failing" FIXED move would unmap this program.
 */
static void check_task_size(void)
{
	tap_ok(t_user_page(T_TASK_SIZE - PG), "the last page below the probed TASK_SIZE (%#zx) is user address space",
	       (size_t)T_TASK_SIZE);
	tap_ok(!t_user_page(T_TASK_SIZE), "the page at the probed TASK_SIZE is not");
}

/*
 * A power of two past the end of the user address space. With 5-level
 * paging that end is 64 PiB: 2^47-2^55 are valid lengths there, and a
 * FIXED move of one unmaps the program's own stack and libraries.
 */
static size_t absurd_size(void)
{
	int b = 64 - __builtin_clzl(T_TASK_SIZE);

	return 1UL << (b + rnd(63 - b));
}

/*
 * Two errors in one call, so that the order in which the ioctl checks its
 * arguments must be mremap(2)'s: each modifier alone makes the call fail.
 */
static void gen_two_errors(struct remap *r, const struct t_map *m, int n)
{
	int first = rnd(10), second = (first + 1 + rnd(9)) % 10;

	c.two_err++;
	for (int k = 0; k < 2; k++) {
		switch (k ? second : first) {
		case 0:		/* misaligned source */
			r->old_mis = 1 + rnd(PG - 1);
			break;
		case 1:		/* an unknown flag */
			r->flags |= MM | (1u << (3 + rnd(29)));
			break;
		case 2:		/* MREMAP_FIXED without MREMAP_MAYMOVE */
			r->flags = (r->flags & ~MM) | FX;
			if (!r->new_kind)
				gen_new_addr(r, m, n);
			break;
		case 3:		/* MREMAP_DONTUNMAP that resizes */
			r->flags |= MM | DU;
			r->new_size = r->old_size + PG;
			break;
		case 4:		/* nothing to map */
			r->new_size = 0;
			break;
		case 5:		/* a FIXED target over the source */
			r->flags |= MM | FX;
			r->new_kind = 1;
			r->new_off = r->old_off;
			r->new_mis = 0;
			break;
		case 6:		/* a misaligned FIXED target */
			r->flags |= MM | FX;
			if (!r->new_kind)
				gen_new_addr(r, m, n);
			r->new_mis = 1 + rnd(PG - 1);
			break;
		case 7:		/* a FIXED target beyond the address space */
			r->flags |= MM | FX;
			r->new_kind = 2;
			r->new_abs = (chance(50) ? T_TASK_SIZE : ~0UL) & ~(PG - 1);
			break;
		case 8:		/* an absurd new size */
			r->new_size = chance(50) ? ~0UL - PG : absurd_size();
			break;
		default:	/* an absurd old size */
			r->old_size = chance(50) ? ~0UL - PG + 2 : absurd_size();
			break;
		}
	}
}

/* A MREMAP_FIXED target in the arena, of the kinds worth trying. */
static void gen_new_addr(struct remap *r, const struct t_map *m, int n)
{
	size_t maxnew;
	int fl;

	r->new_kind = 1;
	maxnew = USABLE - palign(r->new_size ? r->new_size : PG);
	fl = rnd(100);
	if (fl < 25) {			/* PMD-aligned relative to the source */
		size_t base = r->old_off % PMD_SZ;

		r->new_off = base + rnd((maxnew - base) / PMD_SZ + 1) * PMD_SZ;
		if (r->new_off > maxnew)
			r->new_off = base;
	} else if (fl < 35) {		/* overlapping the source */
		long np = (long)((r->old_size <= MAXMAP ? r->old_size : PG) / PG);
		long d = (long)rnd(2 * np + 1) - np;
		long at = (long)r->old_off + d * (long)PG;

		r->new_off = at < 0 ? 0 : (size_t)at > maxnew ? maxnew : (size_t)at;
	} else if (fl < 45 && n) {	/* onto an existing mapping */
		r->new_off = m[rnd(n)].start - (uintptr_t)ar[0].base;
		if (r->new_off > maxnew)
			r->new_off = maxnew;
	} else if (fl < 47) {		/* misaligned */
		r->new_off = rnd(maxnew / PG + 1) * PG;
		r->new_mis = 1 + rnd(PG - 1);
		if (r->new_off + r->new_mis > maxnew)
			r->new_off = 0;
	} else if (fl < 48) {		/* beyond the address space */
		r->new_kind = 2;
		r->new_abs = (chance(50) ? T_TASK_SIZE : ~0UL) & ~(PG - 1);
	} else {
		r->new_off = rnd(maxnew / PG + 1) * PG;
	}
}

static void remap_str(const struct remap *r)
{
	char nb[64];

	if (r->new_kind == 0)
		snprintf(nb, sizeof(nb), "NULL");
	else if (r->new_kind == 2)
		snprintf(nb, sizeof(nb), "%#lx", (unsigned long)r->new_abs);
	else
		snprintf(nb, sizeof(nb), "arena+%#zx", r->new_off + r->new_mis);
	snprintf(opdesc, sizeof(opdesc),
		 "remap(arena+%#zx, old_size %#zx, new_size %#zx, %s, %s)",
		 r->old_off + r->old_mis, r->old_size, r->new_size, t_flagstr(r->flags), nb);
}

/* PROT_NONE plugs over the holes of the arenas, for non-FIXED moves. */
static struct {
	char *p;
	size_t len;
} plugs[2 * MAXC];
static int nplugs;

/*
 * Plugs every hole of arena x (from the last snapshot) except the one
 * starting at keep (if any).
 */
static void plug(int x, const char *keep)
{
	static struct t_map m[MAXC];
	uintptr_t lo = (uintptr_t)ar[x].base, at = lo;
	int n = t_maps_parse(lo, lo + USABLE, m, MAXC);

	if (n > MAXC)
		n = MAXC;
	for (int i = 0; i <= n; i++) {
		uintptr_t end = i < n ? m[i].start : lo + USABLE;

		if (end > at && (char *)at != keep && nplugs < (int)ARRAY_SIZE(plugs) &&
		    mmap((void *)at, end - at, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
			 -1, 0) == (void *)at) {
			plugs[nplugs].p = (char *)at;
			plugs[nplugs++].len = end - at;
		}
		if (i < n)
			at = m[i].end;
	}
}

static void unplug(void)
{
	while (nplugs > 0) {
		nplugs--;
		munmap(plugs[nplugs].p, plugs[nplugs].len);
	}
}

/*
 * Plugs the holes of both arenas from the current snapshot, before a
 * non-FIXED MAYMOVE remap, so that a moved result lands outside them;
 * each arena keeps the hole right after the old range, where a growing
 * mapping may expand in place. (Neither call can then place its result in
 * a hole the other one opened: a move out leaves at most old_size plus
 * that kept hole, which is too small for new_size, or it would have grown
 * in place.)
 */
static int plug_for(const struct remap *r)
{
	if (!(r->flags & MM) || (r->flags & FX))
		return 0;
	for (int x = 0; x < 2; x++)
		plug(x, r->new_size > r->old_size && !(r->flags & DU) ?
		     old_addr(x, r) + palign(r->old_size) : NULL);
	return 1;
}

/*
 * --inject (and the minimiser's self-check): a deliberate bug on the ioctl
 * side, one flipped bit in the first page of every result it can write.
 */
static void flip_word(void *p)
{
	if (t_probe_copy_page(pagebuf[1], p))
		return;
	pagebuf[1][0] ^= 1;
	t_probe_write_page(p, pagebuf[1]);
}


/* Counts a decline by the rule that explains it; reports the others. */
static void count_decline(uintptr_t old, size_t old_raw, size_t new_raw, unsigned int flags,
			  long map_count, int a_fail, int a_err)
{
	enum decline_rule d = decline_rule(old, old_raw, new_raw, flags, map_count,
					   a_fail, a_err);

	if (minimizing)
		return;
	declined_by[d]++;
	if (d == D_NRULES && c.undeclined++ < 10) {
		char vf[256];

		vma_flags(old, vf, sizeof(vf));
		tap_diag("op %d: declined, and no rule of module/remap.c says why: %s (VmFlags:%s)",
			 op_i, opdesc, vf[0] ? strtok(vf, "\n") : " none");
	}
}

/* Counts what a successful ioctl moved, by page-table level. */
static void count_move(const struct fastremap_remap *fr, size_t len)
{
	if (minimizing || !t_counted(fr))
		return;
	c.moved++;
	c.large += len >= SZ_2M;
	c.lvl[0] += fr->moved_pud;
	c.lvl[1] += fr->moved_pmd;
	c.lvl[2] += fr->moved_thp;
	c.lvl[3] += fr->moved_pte;
}

/* Runs the remap in arena x, with the ioctl or mremap(2). */
static void *exec_remap(int x, const struct remap *r, int ioctl_it, int *err,
			struct fastremap_remap *out)
{
	void *p;

	if (ioctl_it)
		p = t_remap(fd, old_addr(x, r), r->old_size, r->new_size, r->flags,
			     new_addr(x, r), out);
	else
		p = t_mremap(old_addr(x, r), r->old_size, r->new_size, r->flags,
			       new_addr(x, r));
	*err = errno;
	return p;
}

static void op_remap(const struct remap *rp)
{
	static struct centry pre_a[MAXC], pre_b[MAXC], now[MAXC];
	struct fastremap_remap fr;
	struct remap r;
	char why[400];
	void *pa, *pb;
	int ea, eb, declined = 0, plugged, npa, npb, nn;
	size_t span, nlo = 0, nlen = 0;
	long map_count;

	if (!snap_ok)
		snap();
	r = *rp;
	remap_str(&r);
	c.remap++;
	npa = canon((uintptr_t)ar[0].base, USABLE, pre_a);
	npb = canon((uintptr_t)ar[1].base, USABLE, pre_b);

	map_count = maps_lines();
	plugged = plug_for(&r);
	map_count += nplugs;
	snap_ok = 0;
	pa = exec_remap(0, &r, 0, &ea, NULL);
	pb = exec_remap(1, &r, 1, &eb, &fr);
	if (inject && pb != MAP_FAILED)
		flip_word(pb);
	if (pb == MAP_FAILED && eb == EOPNOTSUPP) {
		c.declined++;
		declined = 1;
		if (pa == MAP_FAILED)
			c.declined_bad++;	/* mremap(2) rejects it anyway */
		/* Which rule: judged on what the call saw, plugs included. */
		snap();
		count_decline((uintptr_t)old_addr(1, &r), r.old_size, r.new_size, r.flags,
			      map_count, pa == MAP_FAILED, ea);
		/* Declining must change nothing: check B, then use mremap(2). */
		if (plugged)
			unplug();
		snap();
		nn = canon((uintptr_t)ar[1].base, USABLE, now);
		if (nn != npb || memcmp(now, pre_b, nn * sizeof(now[0]))) {
			if (pa != MAP_FAILED && !in_arena(0, pa))
				munmap(pa, r.new_size);
			diverged("declined (EOPNOTSUPP) but changed the mappings", opdesc);
			return;
		}
		plugged = plug_for(&r);
		snap_ok = 0;
		pb = exec_remap(1, &r, 0, &eb, NULL);
	}
	if (plugged)
		unplug();
	if (trace)
		tap_diag("op %d: %s -> A %s, B %s%s", op_i, opdesc,
			 pa == MAP_FAILED ? t_errname(ea) : "ok",
			 pb == MAP_FAILED ? t_errname(eb) : "ok", declined ? " (declined)" : "");

	if ((pa == MAP_FAILED) != (pb == MAP_FAILED) ||
	    (pa == MAP_FAILED && ea != eb)) {
		snprintf(why, sizeof(why), "mremap(2) %s, ioctl %s",
			 pa == MAP_FAILED ? t_errname(ea) : "succeeds",
			 pb == MAP_FAILED ? t_errname(eb) : "succeeds");
		if (pa != MAP_FAILED && !in_arena(0, pa))
			munmap(pa, r.new_size);
		if (pb != MAP_FAILED && !in_arena(1, pb))
			munmap(pb, r.new_size);
		diverged("outcome differs", why);
		return;
	}

	/* The ranges whose contents to compare: old (incl. growth) and new. */
	span = palign(r.old_size > r.new_size ? r.old_size : r.new_size);
	if (r.new_kind == 1) {
		nlo = r.new_off;
		nlen = span;
	}

	if (pa == MAP_FAILED) {
		c.fail++;
		snap();
		if (!declined && !t_nodev()) {
			/* The ioctl must fail without side effects... */
			nn = canon((uintptr_t)ar[1].base, USABLE, now);
			if (nn != npb || memcmp(now, pre_b, nn * sizeof(now[0]))) {
				snprintf(why, sizeof(why), "ioctl failed with %s but changed the mappings",
					 t_errname(eb));
				diverged("failure with side effects", why);
				return;
			}
			/* ... while mremap(2) may have changed A: do the same to B. */
			nn = canon((uintptr_t)ar[0].base, USABLE, now);
			if (nn != npa || memcmp(now, pre_a, nn * sizeof(now[0]))) {
				c.side++;
				pb = exec_remap(1, &r, 0, &eb, NULL);
				if (pb != MAP_FAILED || eb != ea) {
					snprintf(why, sizeof(why), "mremap(2) gave %s in A and %s in B",
						 t_errname(ea),
						 pb == MAP_FAILED ? t_errname(eb) : "success");
					diverged("kernel not deterministic", why);
					return;
				}
			}
		}
		check_arenas(r.old_off, span, nlo, nlen, "after a failed remap");
		return;
	}

	c.ok++;
	if (!declined)
		count_move(&fr, r.new_size);
	if (r.flags & FX) {
		if (pb != new_addr(1, &r)) {
			diverged("FIXED result elsewhere", "the ioctl did not return new_addr");
			return;
		}
	} else if (!in_arena(0, pa)) {
		/* Moved out of the arena: compare the results, then drop them. */
		c.escape++;
		snap();
		if (maps_differ((uintptr_t)pa, (uintptr_t)pb, palign(r.new_size),
				why, sizeof(why)) ||
		    contents_differ(pa, pb, palign(r.new_size), why, sizeof(why))) {
			munmap(pa, r.new_size);
			munmap(pb, r.new_size);
			diverged("moved results differ", why);
			return;
		}
		if (in_arena(1, pb))
			c.place++;
		munmap(pa, r.new_size);
		munmap(pb, r.new_size);
	} else if (pb != ar[1].base + ((char *)pa - ar[0].base)) {
		/* mremap(2) kept it in the arena, the ioctl put it elsewhere. */
		char *want = ar[1].base + ((char *)pa - ar[0].base);

		c.place++;
		if (!in_arena(1, pb)) {
			snap();
			if (contents_differ(pa, pb, palign(r.new_size), why, sizeof(why))) {
				diverged("moved results differ", why);
				return;
			}
		}
		if (t_mremap(pb, r.new_size, r.new_size, MM | FX, want) != want) {
			diverged("placement differs", "cannot move the ioctl's result to mremap(2)'s place");
			return;
		}
	}
	check_arenas(r.old_off, span, nlo, nlen, "after the remap");
}

/* ---------------------------------------------------------------------- */

/*
 * Draws the next operation: a mapping is created if create is set, else
 * what the dice say; remaps start mostly from A's current mappings.
 */
static void gen_op(struct op *o, int create, int can_lock)
{
	int r = rnd(100);

	memset(o, 0, sizeof(*o));
	if (create || r < 15) {
		gen_create(o);
	} else if (r < 22) {
		gen_range_op(o, OP_UNMAP);
	} else if (r < 30) {
		gen_range_op(o, OP_PROTECT);
	} else if (r < 35) {
		gen_range_op(o, OP_ZAP);
	} else if (r < 45) {
		gen_range_op(o, OP_TOUCH);
	} else if (r < 48 && can_lock) {
		gen_range_op(o, OP_LOCK);
	} else {
		o->type = OP_REMAP;
		if (!snap_ok)
			snap();
		gen_remap(&o->r);
	}
}

/* Applies an operation to both arenas and checks them after it. */
static void apply_op(const struct op *o)
{
	switch (o->type) {
	case OP_CREATE:
		op_create(o);
		break;
	case OP_UNMAP:
		op_unmap(o);
		break;
	case OP_PROTECT:
		op_protect(o);
		break;
	case OP_ZAP:
		op_zap(o);
		break;
	case OP_TOUCH:
		op_touch(o);
		break;
	case OP_LOCK:
		op_lock(o);
		break;
	case OP_REMAP:
		op_remap(&o->r);
		return;		/* checked its own ranges */
	}
	if (trace)
		tap_diag("op %d: %s", op_i, opdesc);
	snap_ok = 0;
	if (!(op_i % FULL_EVERY))
		check_arenas(0, USABLE, 0, 0, "(periodic full check)");
	else
		check_arenas(0, 0, 0, 0, "after a plain operation");
}

/*
 * Applies ops[set[0..n)] on freshly wiped arenas (first: the op index of
 * ops[0], for the messages); desc, if given, receives each description.
 * Returns whether they diverged (min_why says how).
 */
static int replay(const struct op *ops, const int *set, int n, int first,
		  char (*desc)[sizeof(opdesc)])
{
	wipe_both();
	min_div = 0;
	min_why[0] = 0;
	for (int i = 0; i < n && !min_div; i++) {
		op_i = first + set[i];
		apply_op(&ops[set[i]]);
		if (desc)
			snprintf(desc[i], sizeof(desc[i]), "%s", opdesc);
	}
	if (!min_div) {
		snprintf(opdesc, sizeof(opdesc), "end of the replay");
		check_arenas(0, USABLE, 0, 0, "at the end of the replay");
	}
	return min_div;
}

static int last_min_len, last_min_ok;

/*
 * Called at a divergence, before the arenas are wiped: finds a small
 * subset of the operations since they were last wiped that still diverges
 * when replayed on fresh arenas (ddmin: drop chunks while it still fails,
 * then single operations), and prints it with each operation spelt out.
 * The run's counters, random state and position are restored after.
 */
static void minimize(void)
{
	static struct op ops[LOG_MAX];
	static int set[LOG_MAX], trial[LOG_MAX];
	static char desc[LOG_MAX][sizeof(opdesc)];
	struct counts saved = c;
	uint64_t saved_rng = rng;
	int saved_op = op_i, saved_trace = trace, first = log_first, total = nlog;
	int n = nlog, parts = 2, replays = 1, minimal = 0, ok;
	double t0 = t_now();

	last_min_len = last_min_ok = 0;
	if (log_lost || !n) {
		tap_diag("  no minimal reproduction: more than %d operations since the arenas were last wiped",
			 LOG_MAX);
		return;
	}
	memcpy(ops, oplog, n * sizeof(ops[0]));
	for (int i = 0; i < n; i++)
		set[i] = i;
	minimizing = 1;
	trace = 0;
	if (!replay(ops, set, n, first, NULL)) {
		tap_diag("  no minimal reproduction: ops %d-%d (since the arenas were last wiped) do not diverge again on fresh arenas",
			 first, first + n - 1);
		goto out;
	}
	while (n >= 2 && replays < MIN_REPLAYS && t_now() - t0 < MIN_SECONDS) {
		int chunk = (n + parts - 1) / parts, reduced = 0;

		for (int lo = 0; lo < n && !reduced; lo += chunk) {
			int m = 0;

			for (int i = 0; i < n; i++)
				if (i < lo || i >= lo + chunk)
					trial[m++] = set[i];
			if (!m)
				continue;
			replays++;
			if (replay(ops, trial, m, first, NULL)) {
				memcpy(set, trial, m * sizeof(set[0]));
				n = m;
				parts = parts > 2 ? parts - 1 : 2;
				reduced = 1;
			}
			if (replays >= MIN_REPLAYS || t_now() - t0 >= MIN_SECONDS)
				break;
		}
		if (!reduced && parts >= n) {
			minimal = 1;	/* no single operation can go */
			break;
		}
		if (!reduced)
			parts = 2 * parts < n ? 2 * parts : n;
	}
	if (n < 2)
		minimal = 1;
	replays++;
	ok = replay(ops, set, n, first, desc);
	tap_diag("  minimal reproduction: %d of the %d ops since the arenas were last wiped%s (%d replays, %.0f s); on fresh arenas:",
		 n, total, minimal ? "" : " (budget spent: may not be minimal)", replays,
		 t_now() - t0);
	for (int i = 0; i < n; i++)
		tap_diag("    op %d: %s", first + set[i], desc[i]);
	tap_diag("    => %s", ok ? min_why : "no divergence this time (not reproducible)");
	last_min_len = n;
	last_min_ok = ok;
out:
	minimizing = 0;
	trace = saved_trace;
	c = saved;
	rng = saved_rng;
	op_i = saved_op;
}

/*
 * nops operations from the current random state, then a full check.
 * Returns how many were applied (fewer if expect_div stopped it).
 */
static int run(int nops, int can_lock)
{
	int fresh = 0;

	wipe_both();
	log_first = 0;
	for (op_i = 0; op_i < nops; op_i++) {
		static struct t_map m[MAXC];
		struct op o;

		/*
		 * Fragmented arenas make every maps read and plug slow under
		 * emulation: start a fresh epoch (both wiped) now and then.
		 */
		if (snap_ok && t_maps_parse((uintptr_t)ar[0].base, (uintptr_t)ar[0].base + USABLE,
					  m, MAXC) > MAX_VMAS) {
			wipe_both();
			log_first = op_i;
			c.epochs++;
			fresh = 6;
		}
		gen_op(&o, fresh-- > 0 || op_i < 8, can_lock);
		if (nlog < LOG_MAX)
			oplog[nlog++] = o;
		else
			log_lost = 1;
		apply_op(&o);
		if (expect_div && c.div)
			return op_i + 1;	/* one is all a check of the minimiser needs */
	}
	snprintf(opdesc, sizeof(opdesc), "final full check");
	check_arenas(0, USABLE, 0, 0, "at the end");
	return nops;
}

/* ---------------------------------------------------------------------- */
/* Large and PUD-sized moves, mseal, RLIMIT_AS, vm.max_map_count           */

/*
 * Cases the arenas cannot hold (1-3 GiB moves, PUD-aligned) or that
 * change the whole process (mseal is forever, limits): each runs on a
 * twin pair of reservations, mremap(2) in the first, the ioctl in the
 * second, and is compared like an arena remap: outcome and errno, then
 * the mappings and every resident page of both twins (sparse mappings
 * keep the 4 GiB guest comfortable). Counted with the arenas' remaps.
 */
struct twin {
	char *resv[2], *base[2];
	size_t len, align;
};

static struct counts big;
static int feat_pud;
static int tw_map_count_room;	/* the vm.max_map_count cases */
#define MAX_MAP_COUNT "/proc/sys/vm/max_map_count"

static int twin_init(struct twin *t, size_t len, size_t align)
{
	t->len = len;
	t->align = align;
	for (int x = 0; x < 2; x++) {
		t->resv[x] = mmap(NULL, len + align, PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (t->resv[x] == MAP_FAILED) {
			if (x)
				munmap(t->resv[0], len + align);
			return -1;
		}
		t->base[x] = (char *)T_ALIGN_UP((uintptr_t)t->resv[x], align);
	}
	return 0;
}

static void twin_free(struct twin *t)
{
	for (int x = 0; x < 2; x++)
		munmap(t->resv[x], t->len + t->align);
}

enum { TW_PRIV, TW_SHARED, TW_THP };

/* The same mapping in both twins, a pattern page every step bytes. */
static int tw_map(struct twin *t, size_t off, size_t len, int kind, size_t step, uint64_t s)
{
	for (int x = 0; x < 2; x++) {
		char *p = t->base[x] + off;

		if (mmap(p, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_NORESERVE | MAP_ANONYMOUS |
			 (kind == TW_SHARED ? MAP_SHARED : MAP_PRIVATE), -1, 0) != p)
			return -1;
		madvise(p, len, kind == TW_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
		for (size_t o = 0; o < len; o += step)
			t_fill_pattern_off(p + o, PG, s, o / PG);
	}
	return 0;
}

/*
 * One remap in both twins (new_off < 0: no address), compared. want_pud:
 * the move is PUD-aligned and whole, so the ioctl must move PUD entries
 * where the kernel can (FASTREMAP_FEAT_MOVE_PUD).
 */
static int tw_remap(struct twin *t, const char *name, size_t old_off, size_t old_size,
		    size_t new_size, unsigned int flags, long new_off, int want_pud)
{
	static struct centry pre[MAXC], now[MAXC];
	struct fastremap_remap fr = { 0 };
	char why[400] = "", moved[96] = "", *oa[2], *na[2];
	void *p[2];
	int e[2], declined = 0, npre, nn, ok = 1;
	long mc;

	for (int x = 0; x < 2; x++) {
		oa[x] = t->base[x] + old_off;
		na[x] = new_off < 0 ? NULL : t->base[x] + new_off;
	}
	snprintf(opdesc, sizeof(opdesc), "%s: remap(+%#zx, %#zx, %#zx, %s, %s%#lx)", name,
		 old_off, old_size, new_size, t_flagstr(flags), new_off < 0 ? "NULL " : "+",
		 new_off < 0 ? 0 : new_off);
	snap();
	mc = maps_lines();
	npre = canon((uintptr_t)t->base[1], t->len, pre);
	c.remap++;
	p[0] = t_mremap(oa[0], old_size, new_size, flags, na[0]);
	e[0] = errno;
	if (tw_map_count_room) {
		/*
		 * One process holds both twins: give the second call the room
		 * the first had, by what the first call's VMAs took.
		 */
		long d;

		snap();
		d = maps_lines() - mc;
		if (d > 0) {
			char v[32];

			snprintf(v, sizeof(v), "%ld", max_map_count + d);
			if (!t_write_str(MAX_MAP_COUNT, v))
				max_map_count += d;
			mc += d;
		}
	}
	p[1] = t_remap(fd, oa[1], old_size, new_size, flags, na[1], &fr);
	e[1] = errno;
	if (p[1] == MAP_FAILED && e[1] == EOPNOTSUPP) {
		declined = 1;
		c.declined++;
		snap();
		nn = canon((uintptr_t)t->base[1], t->len, now);
		if (nn != npre || memcmp(now, pre, nn * sizeof(now[0]))) {
			snprintf(why, sizeof(why), "declined, but the mappings changed");
			ok = 0;
		}
		count_decline((uintptr_t)oa[1], old_size, new_size, flags, mc,
			      p[0] == MAP_FAILED, e[0]);
		p[1] = t_mremap(oa[1], old_size, new_size, flags, na[1]);
		e[1] = errno;
	}
	if (ok && ((p[0] == MAP_FAILED) != (p[1] == MAP_FAILED) ||
		   (p[0] == MAP_FAILED && e[0] != e[1]))) {
		snprintf(why, sizeof(why), "mremap(2) %s, ioctl %s",
			 p[0] == MAP_FAILED ? t_errname(e[0]) : "succeeds",
			 p[1] == MAP_FAILED ? t_errname(e[1]) : "succeeds");
		ok = 0;
	}
	if (p[0] == MAP_FAILED && p[1] == MAP_FAILED && ok) {
		c.fail++;
		snap();
		nn = canon((uintptr_t)t->base[1], t->len, now);
		if (!declined && (nn != npre || memcmp(now, pre, nn * sizeof(now[0])))) {
			snprintf(why, sizeof(why), "the ioctl failed with %s but changed the mappings",
				 t_errname(e[1]));
			ok = 0;
		} else if (!declined && maps_differ((uintptr_t)t->base[0], (uintptr_t)t->base[1],
						    t->len, why, sizeof(why))) {
			/* mremap(2) changed something before failing: do it in B too. */
			c.side++;
			why[0] = 0;
			t_mremap(oa[1], old_size, new_size, flags, na[1]);
		}
	} else if (p[0] != MAP_FAILED && p[1] != MAP_FAILED && ok) {
		c.ok++;
		if (!declined)
			count_move(&fr, new_size);
		if (p[0] < (void *)t->base[0] || p[0] >= (void *)(t->base[0] + t->len)) {
			/* Placed by the kernel, outside the twins: compare, drop. */
			c.escape++;
			snap();
			if (maps_differ((uintptr_t)p[0], (uintptr_t)p[1], palign(new_size), why, sizeof(why)) ||
			    contents_differ(p[0], p[1], palign(new_size), why, sizeof(why)))
				ok = 0;
			munmap(p[0], new_size);
			munmap(p[1], new_size);
		} else if ((char *)p[1] - t->base[1] != (char *)p[0] - t->base[0]) {
			snprintf(why, sizeof(why), "placed at +%#lx by mremap(2), +%#lx by the ioctl",
				 (long)((char *)p[0] - t->base[0]), (long)((char *)p[1] - t->base[1]));
			ok = 0;
		}
	}
	if (ok) {
		snap();
		if (maps_differ((uintptr_t)t->base[0], (uintptr_t)t->base[1], t->len, why, sizeof(why)) ||
		    contents_differ(t->base[0], t->base[1], t->len, why, sizeof(why)))
			ok = 0;
	}
	if (ok && want_pud && feat_pud && !declined && p[1] != MAP_FAILED && t_counted(&fr) &&
	    !fr.moved_pud) {
		snprintf(why, sizeof(why), "a whole PUD-aligned range moved without a PUD entry");
		ok = 0;
	}
	c.div += !ok;
	if (!declined && p[1] != MAP_FAILED && t_counted(&fr))
		snprintf(moved, sizeof(moved), "; moved PUD %llu PMD %llu THP %llu PTE %llu",
			 (unsigned long long)fr.moved_pud, (unsigned long long)fr.moved_pmd,
			 (unsigned long long)fr.moved_thp, (unsigned long long)fr.moved_pte);
	tap_ok(ok, "%s: mremap(2) %s, ioctl %s%s%s%s%s", opdesc,
	       p[0] == MAP_FAILED ? t_errname(e[0]) : "ok",
	       declined ? "declined" : p[1] == MAP_FAILED ? t_errname(e[1]) : "ok",
	       declined ? " (then mremap(2))" : "", moved, why[0] ? ": " : "", why);
	return ok;
}

/*
 * Sizes and placements beyond the arenas, up to 3 GiB: written for 4 KiB
 * pages (1 GiB PUDs, 2 MiB PMDs), moved at this kernel's geometry
 * (t_geo(): up to three PUDs); the names keep the 4 KiB figures.
 */
static const struct big_case {
	const char *name;
	size_t map_off, map_len;
	int kind;
	size_t step;		/* a pattern page every step bytes */
	size_t old_off, old_size, new_size;
	unsigned int flags;
	long new_off;		/* -1: no address */
	int want_pud;
	size_t pre_off, pre_len;	/* another mapping first (a target) */
} big_cases[] = {
	{ "1G private, PUD-aligned", 0, SZ_1G, TW_PRIV, SZ_2M,
	  0, SZ_1G, SZ_1G, MM | FX, 2 * SZ_1G, 1, 0, 0 },
	{ "2G private, PUD-aligned", 0, 2 * SZ_1G, TW_PRIV, SZ_4M,
	  0, 2 * SZ_1G, 2 * SZ_1G, MM | FX, 2 * SZ_1G, 1, 0, 0 },
	{ "1G private with THPs, PUD-aligned", 0, SZ_1G, TW_THP, 64 * SZ_1M,
	  0, SZ_1G, SZ_1G, MM | FX, 2 * SZ_1G, 1, 0, 0 },
	{ "1G private, PMD- but not PUD-aligned", SZ_2M, SZ_1G, TW_PRIV, SZ_2M,
	  SZ_2M, SZ_1G, SZ_1G, MM | FX, 2 * SZ_1G + SZ_2M, 0, 0, 0 },
	{ "256M private, 4K-misaligned (PTE level)", SZ_4K, 256 * SZ_1M, TW_PRIV, SZ_1M,
	  SZ_4K, 256 * SZ_1M, 256 * SZ_1M, MM | FX, SZ_1G + 2 * SZ_4K, 0, 0, 0 },
	{ "1G shared anonymous, PUD-aligned", 0, SZ_1G, TW_SHARED, 8 * SZ_1M,
	  0, SZ_1G, SZ_1G, MM | FX, 2 * SZ_1G, 0, 0, 0 },
	{ "1G private, PUD-aligned, DONTUNMAP", 0, SZ_1G, TW_PRIV, SZ_2M,
	  0, SZ_1G, SZ_1G, MM | FX | DU, 2 * SZ_1G, 0, 0, 0 },
	{ "2G private shrinks to 1G while moving, PUD-aligned", 0, 2 * SZ_1G, TW_PRIV, SZ_4M,
	  0, 2 * SZ_1G, SZ_1G, MM | FX, 2 * SZ_1G, 1, 0, 0 },
	{ "1G private onto a mapped 1G, PUD-aligned", 0, SZ_1G, TW_PRIV, SZ_2M,
	  0, SZ_1G, SZ_1G, MM | FX, 2 * SZ_1G, 0, 2 * SZ_1G, SZ_1G },
	{ "1G private grows by 4M, placed by the kernel", 0, SZ_1G, TW_PRIV, SZ_2M,
	  0, SZ_1G, SZ_1G + SZ_4M, MM, -1, 0, 0, 0 },
	{ "3G private, PUD-aligned", 0, 3 * SZ_1G, TW_PRIV, 8 * SZ_1M,
	  0, 3 * SZ_1G, 3 * SZ_1G, MM | FX, 3 * SZ_1G, 1, 0, 0 },
};

static void big_moves(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(big_cases); i++) {
		const struct big_case *b = &big_cases[i];
		/* As many pattern pages as with 4 KiB pages. */
		size_t step = t_geo(b->map_len) / (b->map_len / b->step);
		struct twin t;
		uint64_t s = t_xorshift64(&rng);

		if (twin_init(&t, t_geo(6 * SZ_1G), t_geo(SZ_1G))) {
			tap_ok(0, "big: %s: reserve 2 x 7G (%s)", b->name, strerror(errno));
			continue;
		}
		if ((b->pre_len && tw_map(&t, t_geo(b->pre_off), t_geo(b->pre_len), TW_PRIV,
					  t_geo(16 * SZ_1M), s ^ 1)) ||
		    tw_map(&t, t_geo(b->map_off), t_geo(b->map_len), b->kind, step, s))
			tap_ok(0, "big: %s: map (%s)", b->name, strerror(errno));
		else
			tw_remap(&t, b->name, t_geo(b->old_off), t_geo(b->old_size),
				 t_geo(b->new_size), b->flags,
				 b->new_off < 0 ? b->new_off : (long)t_geo(b->new_off), b->want_pud);
		twin_free(&t);
	}
}

#ifndef SYS_mseal
#define SYS_mseal 462
#endif

/* Sealed sources and targets (mseal, 6.10+): EPERM, in mremap(2)'s order. */
static void big_mseal(void)
{
	const struct {
		const char *name;
		size_t old_off, old_size, new_size;
		unsigned int flags;
		long new_off;
	} cases[] = {
		{ "sealed source, FIXED move", 0, 16 * PG, 16 * PG, MM | FX, 12 * SZ_1M },
		{ "sealed source grows", 0, 16 * PG, 32 * PG, MM, -1 },
		{ "sealed source shrinks", 0, 16 * PG, 8 * PG, 0, -1 },
		{ "sealed source, DONTUNMAP", 0, 16 * PG, 16 * PG, MM | DU, -1 },
		{ "FIXED target sealed", 4 * SZ_1M, 16 * PG, 16 * PG, MM | FX, 8 * SZ_1M },
		{ "sealed source and a misaligned target", 0, 16 * PG, 16 * PG, MM | FX, 12 * SZ_1M + 8 },
		{ "sealed source and an unknown flag", 0, 16 * PG, 16 * PG, MM | FX | 64, 12 * SZ_1M },
		{ "sealed source and MREMAP_FIXED without MAYMOVE", 0, 16 * PG, 16 * PG, FX, 12 * SZ_1M },
		{ "sealed source run past its end", 0, 32 * PG, 32 * PG, MM | FX, 12 * SZ_1M },
	};
	struct twin t;
	char *probe;

	probe = mmap(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (probe != MAP_FAILED && syscall(SYS_mseal, probe, PG, 0) && errno == ENOSYS) {
		tap_skip_test("no mseal(2) in this kernel (6.10+)", "big: mseal: sealed sources and targets");
		munmap(probe, PG);
		return;
	}
	/* Sealed mappings stay for the life of the process: so does the twin. */
	if (twin_init(&t, 16 * SZ_1M, PMD_SZ) ||
	    tw_map(&t, 0, 16 * PG, TW_PRIV, PG, 0x5ea1) ||
	    tw_map(&t, 4 * SZ_1M, 16 * PG, TW_PRIV, PG, 0x5ea2) ||
	    tw_map(&t, 8 * SZ_1M, 16 * PG, TW_PRIV, PG, 0x5ea3)) {
		tap_ok(0, "big: mseal: set up (%s)", strerror(errno));
		return;
	}
	for (int x = 0; x < 2; x++)
		if (syscall(SYS_mseal, t.base[x], 16 * PG, 0) ||
		    syscall(SYS_mseal, t.base[x] + 8 * SZ_1M, 16 * PG, 0)) {
			tap_ok(0, "big: mseal: seal (%s)", strerror(errno));
			return;
		}
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		tw_remap(&t, cases[i].name, cases[i].old_off, cases[i].old_size,
			 cases[i].new_size, cases[i].flags, cases[i].new_off, 0);
}

static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long v = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)) && line[strlen(key)] == ':')
			v = atol(line + strlen(key) + 1);
	if (f)
		fclose(f);
	return v;
}

/* Growth past RLIMIT_AS: ENOMEM, and nothing changed on either side. */
static void big_rlimit_as(void)
{
	static const struct {
		const char *name;
		size_t new_size;
		unsigned int flags;
		long new_off;
	} cases[] = {
		{ "RLIMIT_AS: growth by moving", 12 * SZ_1M, MM, -1 },
		{ "RLIMIT_AS: DONTUNMAP", 4 * SZ_1M, MM | DU, -1 },
		{ "RLIMIT_AS: FIXED growth into a free hole", 12 * SZ_1M, MM | FX, 48 * SZ_1M },
	};
	struct rlimit saved, lim;
	struct twin t;

	if (getrlimit(RLIMIT_AS, &saved) || twin_init(&t, 64 * SZ_1M, PMD_SZ) ||
	    tw_map(&t, 0, 4 * SZ_1M, TW_PRIV, 64 * 1024, 0xa5)) {
		tap_ok(0, "big: RLIMIT_AS: set up (%s)", strerror(errno));
		return;
	}
	/* A free hole for the FIXED case: the twins' tails unmapped. */
	for (int x = 0; x < 2; x++)
		munmap(t.base[x] + 32 * SZ_1M, 32 * SZ_1M);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		lim = saved;
		lim.rlim_cur = (status_kb("VmSize") << 10) + SZ_2M;
		if (setrlimit(RLIMIT_AS, &lim)) {
			tap_ok(0, "big: %s: setrlimit (%s)", cases[i].name, strerror(errno));
			continue;
		}
		tw_remap(&t, cases[i].name, 0, 4 * SZ_1M, cases[i].new_size, cases[i].flags,
			 cases[i].new_off, 0);
		setrlimit(RLIMIT_AS, &saved);
	}
	twin_free(&t);
}

/*
 * vm.max_map_count just above the process's count: mremap(2) fails with
 * ENOMEM, the ioctl declines (module/remap.c: near the limit) or fails
 * alike; with room to spare both move.
 */
static void big_map_count(void)
{
	static const struct {
		const char *name;
		long spare;
	} cases[] = {
		{ "vm.max_map_count 3 above the map count", 3 },
		{ "vm.max_map_count 8 above the map count", 8 },
		{ "vm.max_map_count 64 above the map count", 64 },
	};
	char saved[32], v[32];
	struct twin t;

	if (t_read_str(MAX_MAP_COUNT, saved, sizeof(saved)) || access(MAX_MAP_COUNT, W_OK)) {
		tap_skip_test("cannot write " MAX_MAP_COUNT, "big: vm.max_map_count ENOMEM");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		if (twin_init(&t, 16 * SZ_1M, PMD_SZ) ||
		    tw_map(&t, 0, SZ_1M, TW_PRIV, PG, 0xc0 + i)) {
			tap_ok(0, "big: %s: set up (%s)", cases[i].name, strerror(errno));
			return;
		}
		snap();
		snprintf(v, sizeof(v), "%ld", maps_lines() + cases[i].spare);
		max_map_count = atol(v);
		if (t_write_str(MAX_MAP_COUNT, v)) {
			tap_ok(0, "big: %s: set it (%s)", cases[i].name, strerror(errno));
		} else {
			/* The middle of a mapping into the middle of a reservation: 4 splits. */
			tw_map_count_room = 1;
			tw_remap(&t, cases[i].name, 64 * PG, 64 * PG, 64 * PG, MM | FX, 8 * SZ_1M, 0);
			tw_map_count_room = 0;
		}
		t_write_str(MAX_MAP_COUNT, saved);
		max_map_count = atol(saved);
		twin_free(&t);
	}
}

static void big_phase(void)
{
	struct fastremap_info info;
	struct counts saved = c;
	double t0 = t_now();

	if (inject || trace)
		return;		/* replaying the arenas' operations */
	feat_pud = !t_info(fd, &info) && (info.features & FASTREMAP_FEAT_MOVE_PUD);
	c = (struct counts){ 0 };
	big_moves();
	big_mseal();
	big_rlimit_as();
	big_map_count();
	big = c;
	c = saved;
	tap_diag("big: %ld remaps (%ld succeeded, %ld failed alike), %ld declined; moved %ld PUD, %ld PMD, %ld THP, %ld PTE entries; %.2f s",
		 big.remap, big.ok, big.fail, big.declined, big.lvl[0], big.lvl[1], big.lvl[2],
		 big.lvl[3], t_now() - t0);
}

#define SEED_DEFAULT 20261130
#define KHP_SLEEP "/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs"

/*
 * khugepaged collapses ranges of one arena and not yet the other's at any
 * moment, which would show as an AnonHugePages and Rss difference that no
 * remap caused: it sleeps (a day between scans) while the test runs.
 */
static void khugepaged_pause(int on)
{
	static char saved[32];

	if (on) {
		if (t_read_str(KHP_SLEEP, saved, sizeof(saved)) ||
		    t_write_str(KHP_SLEEP, "86400000"))
			saved[0] = 0;
		else
			tap_diag("khugepaged paused (was %s ms between scans)", saved);
	} else if (saved[0] && t_write_str(KHP_SLEEP, saved)) {
		tap_diag("cannot restore %s: %s", KHP_SLEEP, strerror(errno));
	}
}

int main(int argc, char **argv)
{
	int nops = NOPS_DEFAULT, can_lock = geteuid() == 0, self_check = 1;
	double t0 = t_now();
	char mmc[32] = "";

	t_parse_args(&argc, argv);
	/*
	 * A fixed seed by default, so that the test suite is reproducible;
	 * "random" explores a new one (printed, to replay what it finds).
	 */
	seed = SEED_DEFAULT;
	for (int i = 1; i < argc; i++) {
		/*
		 * Only a count keeps the minimiser's self-check: make check
		 * runs the default seed with fewer operations (tests/harness/run.sh).
		 */
		if (!strcmp(argv[i], "--ops") && i + 1 < argc) {
			nops = atoi(argv[++i]);
			continue;
		}
		self_check = 0;		/* replaying or exploring */
		if (!strcmp(argv[i], "--trace"))
			trace = 1;
		else if (!strcmp(argv[i], "--inject"))
			inject = expect_div = 1;	/* stops at the first */
		else if (!strcmp(argv[i], "random"))
			seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
		else
			seed = strtoull(argv[i], NULL, 0);
	}
	rng = t_mix64(seed) | 1;
	tap_diag("seed %" PRIu64 ", %d operations (rerun with: t_remap_diff %s%" PRIu64 ")",
		 seed, nops, t_nodev() ? "--selftest-mremap " : "", seed);
	t_probe_init();
	fd = t_open();
	if (!tap_ok(fd >= 0, "open the device (%s)", fd < 0 ? strerror(errno) : "ok"))
		return tap_done();
	if (!tap_ok(arena_init(&ar[0], 'A') == 0 && arena_init(&ar[1], 'B') == 0,
		    "reserve two %zu MiB arenas", USABLE / SZ_1M))
		return tap_done();

	check_task_size();
	khugepaged_pause(1);
	t_read_str("/proc/sys/vm/max_map_count", mmc, sizeof(mmc));
	max_map_count = atol(mmc) > 0 ? atol(mmc) : 65530;
	nops = run(nops, can_lock);
	{
		struct t_smaps sm;

		if (!t_smaps_range((uintptr_t)ar[1].base, (uintptr_t)ar[1].base + USABLE, &sm))
			tap_diag("at the end, each arena: Rss %ld kB, AnonHugePages %ld kB, Swap %ld kB, Locked %ld kB",
				 sm.rss_kb, sm.anon_huge_kb, sm.swap_kb, sm.locked_kb);
	}

	tap_diag("%d ops: %ld remaps (%ld succeeded, %ld failed alike; %ld with two errors), %ld declined (%ld of them invalid anyway)",
		 nops, c.remap, c.ok, c.fail, c.two_err, c.declined, c.declined_bad);
	tap_diag("%ld remaps compared with the ioctl's own answer; it moved %ld (%ld of 2 MiB or more): %ld PUD, %ld PMD, %ld THP, %ld PTE entries",
		 c.remap - c.declined, c.moved, c.large, c.lvl[0], c.lvl[1], c.lvl[2], c.lvl[3]);
	for (int d = 0; d <= D_NRULES; d++)
		if (declined_by[d])
			tap_diag("declined: %ld: %s", declined_by[d], decline_name[d]);
	tap_diag("%ld escaped moves compared, %ld placement differences, %ld mremap(2) failures with side effects replayed",
		 c.escape, c.place, c.side);
	tap_diag("%ld times the VMA split differed (allowed; arenas re-synced)", c.split);
	tap_diag("%ld smaps comparisons (Rss, AnonHugePages, Swap, Locked), %ld lock operations",
		 c.smaps, c.locks);
	tap_diag("%ld divergences, %ld resyncs, %ld fresh epochs, %.2f s", c.div, c.resync,
		 c.epochs, t_now() - t0);
	big_phase();
	tap_diag("FR-STATS diff_ops=%d diff_remaps=%ld diff_compared=%ld diff_moved=%ld diff_large=%ld diff_pud=%ld diff_pmd=%ld diff_thp=%ld diff_pte=%ld diff_declined=%ld diff_unexplained=%ld divergences=%ld",
		 nops, c.remap + big.remap, c.remap - c.declined + big.remap - big.declined,
		 c.moved + big.moved, c.large + big.large, c.lvl[0] + big.lvl[0],
		 c.lvl[1] + big.lvl[1], c.lvl[2] + big.lvl[2], c.lvl[3] + big.lvl[3],
		 c.declined + big.declined, c.undeclined + big.undeclined,
		 inject ? 0 : c.div + big.div);
	/*
	 * Declines are the module saying "use mremap(2)": each must follow a
	 * rule of module/remap.c, and they must stay rare, or the ioctl
	 * would be compared with itself (mremap(2) in both arenas).
	 */
	if (!inject && !t_nodev()) {
		tap_ok(c.undeclined + big.undeclined == 0,
		       "every decline follows a rule of module/remap.c (%ld do not)",
		       c.undeclined + big.undeclined);
		tap_ok(c.declined * 100 <= c.remap * DECLINE_MAX_PCT,
		       "declines are at most %d%% of the remaps (%ld of %ld)", DECLINE_MAX_PCT,
		       c.declined, c.remap);
	}
	if (inject)
		tap_ok(c.div > 0, "seed %" PRIu64 ": %d ops with --inject: divergences found (%ld)",
		       seed, nops, c.div);
	else
		tap_ok(c.div == 0, "seed %" PRIu64 ": %d ops, no divergence between mremap(2) and the ioctl (%ld found)",
		       seed, nops, c.div);

	/*
	 * The minimiser's own check, in the default run: a deliberate bug on
	 * the ioctl side (--inject) must be caught, and reduced to a mapping
	 * and the remap that corrupts it.
	 */
	if (self_check) {
		tap_diag("minimiser self-check: --inject from seed %d", SEED_DEFAULT + 1);
		c = (struct counts){ 0 };
		seed = SEED_DEFAULT + 1;
		rng = t_mix64(seed) | 1;
		inject = expect_div = 1;
		run(500, can_lock);
		inject = expect_div = 0;
		tap_ok(c.div > 0 && last_min_ok && last_min_len >= 1 && last_min_len <= 3,
		       "an injected bug is caught and its reproduction minimised to %d ops (1-3 expected), which diverge again",
		       last_min_len);
	}
	khugepaged_pause(0);
	close(fd);
	return tap_done();
}
