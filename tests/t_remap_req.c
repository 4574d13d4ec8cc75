// SPDX-License-Identifier: GPL-2.0
/*
 * The request itself: where the caller's struct fastremap_remap lives,
 * and how the device was opened.
 *
 * The module writes its result into the request after the move. A request
 * inside a range the call changes (the source, a MREMAP_FIXED target, the
 * unmapped tail of a shrinking move, an emptied DONTUNMAP source) would
 * have that write land on moved memory, fault, or fault a fresh page into
 * the emptied range; so such a call must be declined (EOPNOTSUPP) with
 * nothing changed, byte for byte, while a request right next to those
 * ranges is served. Moves also need the device open for writing: a
 * read-only descriptor gets INFO, and EBADF from REMAP.
 */
#define _GNU_SOURCE
#include "tlib.h"

#define LEN	(4 * SZ_1M)
#define RQ	sizeof(struct fastremap_remap)

static int fd = -1;

/* Where a case puts the request, relative to the source or the target. */
enum base { B_SRC, B_DST };

struct req_case {
	const char *name;
	unsigned int flags;
	size_t old_len, new_len;
	enum base base;
	long off;		/* the request's offset from the base: bytes */
	int off_pages;		/* and pages */
	int declined;		/* 1: EOPNOTSUPP expected, else a move */
};

/*
 * The layout of every case: [guard][source LEN][guard] ... [target LEN]
 * [guard], each guard a mapped page (so requests can straddle an edge),
 * the target 2 MiB-aligned and the source not congruent with it.
 */
static const struct req_case cases[] = {
	{ "inside the MREMAP_FIXED target", MREMAP_MAYMOVE | MREMAP_FIXED,
	  SZ_2M, SZ_2M, B_DST, SZ_1M + 64, 0, 1 },
	{ "inside the source of a FIXED move", MREMAP_MAYMOVE | MREMAP_FIXED,
	  SZ_2M, SZ_2M, B_SRC, SZ_1M / 2, 0, 1 },
	{ "at the first byte of the source", MREMAP_MAYMOVE | MREMAP_FIXED,
	  SZ_2M, SZ_2M, B_SRC, 0, 0, 1 },
	{ "straddling the end of the source", MREMAP_MAYMOVE | MREMAP_FIXED,
	  SZ_2M, SZ_2M, B_SRC, SZ_2M - 16, 0, 1 },
	{ "straddling the start of the target", MREMAP_MAYMOVE | MREMAP_FIXED,
	  SZ_2M, SZ_2M, B_DST, -16, 0, 1 },
	{ "inside the grown part of the FIXED target", MREMAP_MAYMOVE | MREMAP_FIXED,
	  SZ_1M, 3 * SZ_1M, B_DST, 2 * SZ_1M + 8, 0, 1 },
	{ "in the unmapped tail of a shrinking FIXED move", MREMAP_MAYMOVE | MREMAP_FIXED,
	  LEN, SZ_2M, B_SRC, 3 * SZ_1M, 0, 1 },
	{ "inside a DONTUNMAP source", MREMAP_MAYMOVE | MREMAP_DONTUNMAP,
	  SZ_2M, SZ_2M, B_SRC, SZ_1M, 0, 1 },
	{ "inside a DONTUNMAP source, FIXED", MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
	  SZ_2M, SZ_2M, B_SRC, 0, 4, 1 },
	{ "inside the source of a growing MAYMOVE move", MREMAP_MAYMOVE,
	  LEN, 2 * LEN, B_SRC, LEN, -1, 1 },
	/* Controls: the same calls with the request just outside. */
	{ "just before the source (control)", MREMAP_MAYMOVE | MREMAP_FIXED,
	  SZ_2M, SZ_2M, B_SRC, -(long)RQ, 0, 0 },
	{ "just after the source (control)", MREMAP_MAYMOVE | MREMAP_FIXED,
	  SZ_2M, SZ_2M, B_SRC, SZ_2M, 0, 0 },
	{ "just before the target (control)", MREMAP_MAYMOVE | MREMAP_FIXED,
	  SZ_2M, SZ_2M, B_DST, -(long)RQ, 0, 0 },
	{ "just after the shrunk source's tail (control)", MREMAP_MAYMOVE | MREMAP_FIXED,
	  LEN, SZ_2M, B_SRC, LEN, 0, 0 },
	{ "just after a DONTUNMAP source (control)", MREMAP_MAYMOVE | MREMAP_DONTUNMAP,
	  SZ_2M, SZ_2M, B_SRC, SZ_2M, 0, 0 },
	{ "just after a growing source (control)", MREMAP_MAYMOVE,
	  LEN, 2 * LEN, B_SRC, LEN, 0, 0 },
};

struct layout {
	struct t_area a;
	char *src, *dst;	/* each with a mapped guard page on both sides */
	size_t span;		/* source guard to target guard, inclusive */
	char *copy;		/* a copy of the whole span before the call */
};

static int layout_build(struct layout *l, uint64_t seed)
{
	char *p = t_pick(4 * LEN, SZ_2M, &l->a);

	if (!p)
		return -1;
	/* The target is 2 MiB-aligned, the source 4 KiB past that. */
	l->dst = p + 2 * LEN;
	l->src = p + PG;
	l->span = (size_t)(l->dst + LEN + PG - (l->src - PG));
	if (mmap(l->src - PG, l->span, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		return -1;
	/* Separate VMAs: a hole between source and target. */
	if (munmap(l->src + LEN + PG, l->dst - PG - (l->src + LEN + PG)))
		return -1;
	t_fill_pattern(l->src - PG, LEN + 2 * PG, seed);
	t_fill_pattern(l->dst - PG, LEN + 2 * PG, seed + 1);
	l->copy = NULL;
	return 0;
}

/* The bytes of [p, p+len) still as in the copy? */
static int same_as_copy(const struct layout *l, const char *p, size_t len)
{
	return !memcmp(p, l->copy + (p - (l->src - PG)), len);
}

static void snapshot(struct layout *l)
{
	/* Only the mapped parts: the source's, then the target's. */
	free(l->copy);
	l->copy = malloc(l->span);
	memcpy(l->copy, l->src - PG, LEN + 2 * PG);
	memcpy(l->copy + (l->dst - PG - (l->src - PG)), l->dst - PG, LEN + 2 * PG);
}

static void run_case(const struct req_case *c, uint64_t seed)
{
	struct layout l;
	struct fastremap_remap *r;
	char *base, *want_new, *got;
	int rc, e, ok;

	if (layout_build(&l, seed)) {
		tap_skip_test("mmap failed", "%s", c->name);
		t_release(&l.a);
		return;
	}
	base = c->base == B_SRC ? l.src : l.dst;
	r = (struct fastremap_remap *)(base + c->off + c->off_pages * (long)PG);
	t_req_init(r, l.src, c->old_len, c->new_len, c->flags,
		    c->flags & MREMAP_FIXED ? l.dst : NULL);
	snapshot(&l);

	rc = ioctl(fd, FASTREMAP_IOC_REMAP, r);
	e = errno;
	if (c->declined) {
		tap_ok(rc == -1 && e == EOPNOTSUPP, "request %s: declined (got %s)",
		       c->name, rc ? t_errname(e) : "a move");
		if (rc == 0) {
			/* Moved: the source may be gone; do not read it. */
			tap_ok(0, "request %s: source, target and request unchanged", c->name);
			goto out;
		}
		/* Byte for byte: the request too, which must not be written. */
		ok = same_as_copy(&l, l.src - PG, LEN + 2 * PG) &&
		     same_as_copy(&l, l.dst - PG, LEN + 2 * PG);
		tap_ok(ok, "request %s: source, target and request unchanged", c->name);
		goto out;
	}
	if (!tap_ok(rc == 0, "request %s: moved (got %s)", c->name,
		    rc ? t_errname(e) : "success"))
		goto out;
	/* The result is in the request; the data is where it says. */
	want_new = c->flags & MREMAP_FIXED ? l.dst : NULL;
	got = (char *)(uintptr_t)r->new_addr;
	ok = (!want_new || got == want_new) && r->moved_pte + r->moved_pmd > 0 &&
	     !memcmp(got, l.copy + PG, c->old_len < c->new_len ? c->old_len : c->new_len);
	tap_ok(ok, "request %s: result written, data moved", c->name);
	if (!want_new && got != l.dst)
		munmap(got, c->new_len);
out:
	free(l.copy);
	t_release(&l.a);
}

/* Moves need the device open for writing; INFO does not. */
static void test_read_only(uint64_t seed)
{
	struct fastremap_info info;
	struct layout l;
	int ro = open(FASTREMAP_DEVICE, O_RDONLY | O_CLOEXEC);
	void *p;

	if (!tap_ok(ro >= 0, "open %s read-only", FASTREMAP_DEVICE))
		return;
	tap_ok(t_info(ro, &info) == 0, "read-only descriptor: INFO works");
	if (layout_build(&l, seed)) {
		tap_skip_test("mmap failed", "read-only descriptor: REMAP refused");
		t_release(&l.a);
		close(ro);
		return;
	}
	snapshot(&l);
	p = t_remap(ro, l.src, SZ_2M, SZ_2M, MREMAP_MAYMOVE | MREMAP_FIXED, l.dst, NULL);
	tap_ok(p == MAP_FAILED && errno == EBADF, "read-only descriptor: REMAP gives EBADF (got %s)",
	       p == MAP_FAILED ? t_errname(errno) : "a move");
	tap_ok(same_as_copy(&l, l.src - PG, LEN + 2 * PG) &&
	       same_as_copy(&l, l.dst - PG, LEN + 2 * PG),
	       "read-only descriptor: memory unchanged");
	free(l.copy);
	t_release(&l.a);
	close(ro);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);

	tap_diag("pattern seed %" PRIu64, seed);
	fd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
	if (!tap_ok(fd >= 0, "open %s", FASTREMAP_DEVICE))
		return tap_done();
	for (size_t k = 0; k < ARRAY_SIZE(cases); k++)
		run_case(&cases[k], seed += 16);
	test_read_only(seed + 16);
	close(fd);
	return tap_done();
}
