// SPDX-License-Identifier: GPL-2.0
/*
 * Every slab allocation of a remap, failed in turn. With the kernel's
 * fault injection (CONFIG_FAULT_INJECTION and CONFIG_FAILSLAB, built into
 * the debug-kernel lane; Debian's kernels have neither, and the test skips
 * there), writing N to /proc/thread-self/fail-nth makes the N-th
 * injectable allocation of the next call fail. For each case of the table
 * the call runs with N = 1, 2, ... until it makes fewer than N
 * allocations. The allocations are the VMA work around the page-table
 * moves: copy_vma()'s new VMA and anon_vma chain, the maple tree nodes,
 * and the VMA splits of the target's and the source's unmapping.
 *
 * Each outcome must be one of:
 * - ENOMEM, with the source mapped as before and holding its data, and the
 *   target either as before or unmapped (mremap(2) also unmaps a
 *   MREMAP_FIXED target before it can fail);
 * - success, with the data at the new address, and the old range unmapped
 *   or, when the unmap of the source failed to split its VMA (the branch
 *   move_vma() calls "OOM: unable to split vma"), still mapped: empty if
 *   anonymous, showing the same file data if a shared file mapping.
 * After an ENOMEM, the accounting must be as before too: Committed_AS (to
 * the page), VmLck, and the smaps counters and mappings of the source's
 * reservation. The one change of mappings allowed is one mremap(2) also
 * makes: before each case, the same sweep runs through mremap(2), and every
 * layout of the two reservations (source's and target's, ranges,
 * permissions and offsets) that mremap(2) left after an ENOMEM is accepted
 * from the module too (seen: a shrinking move's source left split, a
 * MREMAP_FIXED target unmapped, or split at its start where the split at
 * its end failed). (Less what the unmap of a MREMAP_FIXED target, which
 * mremap(2) also does first, gave back; shrinking moves, whose tail may be
 * unmapped before the failure, are not compared.)
 * The kernel log must stay clean (the harness checks it, with KASAN and
 * lockdep watching on the debug kernel).
 */
#define _GNU_SOURCE
#include "tlib.h"
#include <sys/mount.h>

#define FAILSLAB	"/sys/kernel/debug/failslab/"
#define MAX_NTH		400
#define SEED		4242

enum src_kind { ANON, SHARED_MEMFD, THP };

struct fcase {
	const char *name;
	enum src_kind kind;
	size_t len;		/* the source range */
	size_t new_len;
	unsigned int flags;
	int middle;		/* the source is the middle third of its VMA */
	int target_mapped;	/* a MREMAP_FIXED target inside a mapped VMA */
	size_t mis;		/* target misalignment, in pages */
};

static const struct fcase cases[] = {
	{ "anon middle -> fixed inside a mapping", ANON, SZ_4M, SZ_4M,
	  MREMAP_MAYMOVE | MREMAP_FIXED, 1, 1, 0 },
	{ "anon middle -> fixed, misaligned", ANON, SZ_4M, SZ_4M,
	  MREMAP_MAYMOVE | MREMAP_FIXED, 1, 0, 1 },
	{ "anon middle grows, may move", ANON, SZ_2M, SZ_4M,
	  MREMAP_MAYMOVE, 1, 0, 0 },
	{ "anon shrinks and moves (fixed)", ANON, SZ_4M, SZ_2M,
	  MREMAP_MAYMOVE | MREMAP_FIXED, 1, 1, 0 },
	{ "anon dontunmap", ANON, SZ_4M, SZ_4M,
	  MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 1, 0, 0 },
	{ "shared memfd middle -> fixed inside a mapping", SHARED_MEMFD, SZ_4M,
	  SZ_4M, MREMAP_MAYMOVE | MREMAP_FIXED, 1, 1, 0 },
	{ "THP -> fixed, aligned", THP, 0, 0,	/* two PMDs: see case_at() */
	  MREMAP_MAYMOVE | MREMAP_FIXED, 0, 1, 0 },
};

/* Case i at this kernel's sizes: the THP case is two PMDs (4 MiB of 4 KiB pages). */
static void case_at(size_t i, struct fcase *c)
{
	*c = cases[i];
	if (c->kind == THP)
		c->len = c->new_len = 2 * PMD_SZ;
	c->mis *= PG;
}

static int nth_fd = -1;

static int set_nth(int n)
{
	char b[16];
	int len = snprintf(b, sizeof(b), "%d", n);

	return pwrite(nth_fd, b, len, 0) == len ? 0 : -1;
}

/* Whether the fault armed by set_nth() was injected (reads back 0). */
static int injected(void)
{
	char b[16] = "";
	ssize_t n = pread(nth_fd, b, sizeof(b) - 1, 0);

	return n > 0 && atoi(b) == 0;
}

struct layout {
	struct t_area sa, da;
	char *vma, *src, *dst, *tvma;
	size_t vma_len, tvma_len;
};

static void *map_kind(void *at, size_t len, enum src_kind k)
{
	void *p;

	if (k == SHARED_MEMFD) {
		int f = memfd_create("frfailnth", MFD_CLOEXEC);

		if (f < 0 || ftruncate(f, len)) {
			if (f >= 0)
				close(f);
			return MAP_FAILED;
		}
		p = mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, f, 0);
		close(f);
		return p;
	}
	p = mmap(at, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (p != MAP_FAILED && k == THP)
		madvise(p, len, MADV_HUGEPAGE);
	return p;
}

static int setup(const struct fcase *c, struct layout *l)
{
	size_t span = c->len > c->new_len ? c->len : c->new_len;

	memset(l, 0, sizeof(*l));
	l->vma_len = c->middle ? 3 * c->len : c->len;
	if (!t_reserve(l->vma_len + 2 * PMD_SZ, &l->sa) ||
	    !t_reserve(3 * span + 2 * PMD_SZ, &l->da))
		return -1;
	l->vma = (char *)T_ALIGN_UP((uintptr_t)l->sa.base + PG, PMD_SZ);
	if (map_kind(l->vma, l->vma_len, c->kind) == MAP_FAILED)
		return -1;
	l->src = c->middle ? l->vma + c->len : l->vma;
	t_fill_pattern(l->vma, l->vma_len, SEED);
	l->tvma = (char *)T_ALIGN_UP((uintptr_t)l->da.base + PG, PMD_SZ);
	l->tvma_len = 3 * span;
	l->dst = l->tvma + span + c->mis;
	if (c->target_mapped) {
		if (mmap(l->tvma, l->tvma_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			return -1;
		t_fill_pattern(l->tvma, l->tvma_len, SEED + 1);
	}
	return 0;
}

static int is_mapped(const void *p, size_t len)
{
	return !t_range_unmapped(p, len);
}

/* The source VMA's pages outside the moved range, which never move. */
static int rest_intact(const struct fcase *c, const struct layout *l)
{
	size_t before = l->src - l->vma;
	size_t after = l->vma_len - before - c->len;

	return t_verify_pattern_off(l->vma, before, SEED, 0, PG) < 0 &&
	       t_verify_pattern_off(l->src + c->len, after, SEED,
				  (before + c->len) / PG, PG) < 0;
}

/* Unmaps the layout and a result placed outside it. */
static void release(struct layout *l, void *res, size_t len)
{
	char *p = res;

	if (res != MAP_FAILED &&
	    !(p >= l->sa.base && p < l->sa.base + l->sa.len) &&
	    !(p >= l->da.base && p < l->da.base + l->da.len))
		munmap(res, len);
	t_release(&l->sa);
	t_release(&l->da);
}

struct tally {
	int nth, fails, oks, stale_old, dst_unmapped, bad, acct_checked, as_mremap;
};

/*
 * Both reservations (the source's and the target's) as /proc/self/maps
 * shows them, each relative to its start and clipped to it (their
 * addresses differ per call): the ranges, permissions and file offsets.
 */
#define KEY_LEN		512
#define MAX_KEYS	64

static int key_area(const struct t_area *a, char *key, int *at)
{
	uintptr_t lo = (uintptr_t)a->base, hi = lo + a->len;
	struct t_map m[16];
	int n = t_maps_read(lo, hi, m, ARRAY_SIZE(m));

	if (n < 0 || n > (int)ARRAY_SIZE(m))
		return -1;
	for (int i = 0; i < n; i++) {
		int w = snprintf(key + *at, KEY_LEN - *at, "%lx-%lx:%s:%llx;",
				 (unsigned long)(m[i].start - lo), (unsigned long)(m[i].end - lo),
				 m[i].perms, (unsigned long long)m[i].off);

		if (w < 0 || w >= KEY_LEN - *at)
			return -1;
		*at += w;
	}
	return 0;
}

static int layout_key(const struct layout *l, char *key)
{
	int at = 0;

	if (key_area(&l->sa, key, &at) || at >= KEY_LEN - 2)
		goto fail;
	key[at++] = '|';
	if (key_area(&l->da, key, &at))
		goto fail;
	key[at] = 0;
	return 0;
fail:
	key[0] = 0;
	return -1;
}

/* The layouts mremap(2) left after an ENOMEM in the current case's sweep. */
static char mremap_keys[MAX_KEYS][KEY_LEN];
static int n_mremap_keys, control;

static int key_known(const char *key)
{
	for (int i = 0; i < n_mremap_keys; i++)
		if (!strcmp(mremap_keys[i], key))
			return 1;
	return 0;
}

/* The source reservation's mappings before the call. */
static struct t_map maps_before[16];

/* The source reservation's mappings before and after, relative to the VMA. */
static void diag_maps(const struct fcase *c, int nth, const struct layout *l,
		      const struct t_map *now, int n_now, int n_before)
{
	uintptr_t v = (uintptr_t)l->vma;

	for (int i = 0; i < n_before && i < (int)ARRAY_SIZE(maps_before); i++)
		tap_diag("%s: fault %d: before %ld..%ld %s off %llx", c->name, nth,
			 (long)(maps_before[i].start - v), (long)(maps_before[i].end - v),
			 maps_before[i].perms, (unsigned long long)maps_before[i].off);
	for (int i = 0; i < n_now && i < 16; i++)
		tap_diag("%s: fault %d: after  %ld..%ld %s off %llx", c->name, nth,
			 (long)(now[i].start - v), (long)(now[i].end - v), now[i].perms,
			 (unsigned long long)now[i].off);
}

/* One call with the nth allocation failing. Returns 1 if injected. */
static int one(int fd, const struct fcase *c, int nth, struct tally *t)
{
	size_t kept = c->len < c->new_len ? c->len : c->new_len;
	struct layout l;
	size_t first_pg;
	void *res = MAP_FAILED;
	int e, inj, nmaps = 0, acct_ok = 0;
	struct t_acct before, after;
	struct t_map maps_now[16];
	uintptr_t lo, hi;
	char why[128], key_before[KEY_LEN] = "", key[KEY_LEN];

	if (setup(c, &l)) {
		tap_diag("%s: setup failed: %s", c->name, strerror(errno));
		t->bad++;
		goto out;
	}
	first_pg = (l.src - l.vma) / PG;
	lo = (uintptr_t)l.sa.base;
	hi = lo + l.sa.len;
	/* Read before the fault is armed: it counts this task's allocations. */
	if (c->len <= c->new_len) {
		acct_ok = t_acct_read(&before, lo, hi) == 0;
		nmaps = t_maps_read(lo, hi, maps_before, ARRAY_SIZE(maps_before));
		if (layout_key(&l, key_before))
			key_before[0] = 0;
	}
	set_nth(nth);
	if (control)
		res = t_mremap(l.src, c->len, c->new_len, c->flags,
				 (c->flags & MREMAP_FIXED) ? l.dst : NULL);
	else
		res = t_remap(fd, l.src, c->len, c->new_len, c->flags,
			       (c->flags & MREMAP_FIXED) ? l.dst : NULL, NULL);
	e = errno;
	inj = injected();
	set_nth(0);
	if (!inj) {
		/* Past the last allocation: a plain successful call. */
		if (res == MAP_FAILED) {
			tap_diag("%s: fails with %s without an injected fault", c->name,
				 strerror(e));
			t->bad++;
		}
		release(&l, res, c->new_len);
		return 0;
	}
	if (control) {
		if (res == MAP_FAILED && e == ENOMEM && !layout_key(&l, key) &&
		    !key_known(key) && n_mremap_keys < MAX_KEYS)
			strcpy(mremap_keys[n_mremap_keys++], key);
		t->fails += res == MAP_FAILED;
		t->oks += res != MAP_FAILED;
		goto out;
	}
	if (res == MAP_FAILED) {
		int ok = e == ENOMEM;

		t->fails++;
		/*
		 * A shrinking move unmaps the tail it drops first (as
		 * mremap(2) does): that part may be gone already.
		 */
		ok = ok && is_mapped(l.src, kept) &&
		     t_verify_pattern_off(l.src, kept, SEED, first_pg, PG) < 0 &&
		     rest_intact(c, &l);
		if (ok && c->len > kept && is_mapped(l.src + kept, c->len - kept))
			ok = t_verify_pattern_off(l.src + kept, c->len - kept, SEED,
						first_pg + kept / PG, PG) < 0;
		if (c->target_mapped && !is_mapped(l.dst, c->new_len)) {
			t->dst_unmapped++;
			/* That unmap gave back the target's charge. */
			before.committed_kb -= c->new_len >> 10;
		} else if (c->target_mapped) {
			ok = ok && t_verify_pattern_off(l.dst, c->new_len, SEED + 1,
						      (l.dst - l.tvma) / PG, PG) < 0;
		}
		if (acct_ok && nmaps > 0 && nmaps <= (int)ARRAY_SIZE(maps_before)) {
			int same = t_acct_read(&after, lo, hi) == 0 &&
				   t_maps_read(lo, hi, maps_now, ARRAY_SIZE(maps_now)) == nmaps;

			for (int i = 0; same && i < nmaps; i++)
				same = maps_now[i].start == maps_before[i].start &&
				       maps_now[i].end == maps_before[i].end &&
				       !strcmp(maps_now[i].perms, maps_before[i].perms) &&
				       maps_now[i].off == maps_before[i].off &&
				       maps_now[i].inode == maps_before[i].inode;

			t->acct_checked++;
			/*
			 * Any change of either reservation (the source's, or
			 * the target's: split at the target, or the target
			 * unmapped) must be one that mremap(2) made in its own
			 * sweep of the same case.
			 */
			if (layout_key(&l, key) || strcmp(key, key_before)) {
				if (key[0] && key_known(key)) {
					same = 1;
					t->as_mremap++;
				} else {
					tap_diag("%s: fault %d: layout now %s", c->name, nth, key);
					tap_diag("%s: fault %d: layout was %s", c->name, nth,
						 key_before);
					diag_maps(c, nth, &l, maps_now, t_maps_read(lo, hi, maps_now,
						  ARRAY_SIZE(maps_now)), nmaps);
					same = 0;
				}
			}
			if (!same || t_acct_diff(&before, &after, why, sizeof(why))) {
				tap_diag("%s: fault %d: ENOMEM, but %s", c->name, nth,
					 same ? why : "the source's mappings changed");
				ok = 0;
			}
		}
		if (!ok) {
			tap_diag("%s: fault %d: %s, source or target not as before", c->name,
				 nth, strerror(e));
			t->bad++;
		}
	} else {
		int ok = t_verify_pattern_off(res, kept, SEED, first_pg, PG) < 0;

		t->oks++;
		if (!(c->flags & MREMAP_DONTUNMAP) && is_mapped(l.src, kept)) {
			/*
			 * The old range stayed: anonymous memory must be
			 * empty there; a shared file mapping still shows the
			 * file, which holds the same data.
			 */
			t->stale_old++;
			ok = ok && (c->kind == SHARED_MEMFD ?
				    t_verify_pattern_off(l.src, kept, SEED, first_pg, PG) :
				    t_verify_zero(l.src, kept, PG)) < 0;
		}
		if (!ok) {
			tap_diag("%s: fault %d: success, but the data moved wrong", c->name, nth);
			t->bad++;
		}
	}
out:
	release(&l, res, c->new_len);
	return 1;
}

int main(void)
{
	char saved_wait[8] = "", saved_verbose[8] = "";
	int fd = t_open(), total_inj = 0;

	if (!tap_ok(fd >= 0, "open the device"))
		return tap_done();
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	if (nth_fd < 0) {
		tap_skip_test("no /proc/thread-self/fail-nth (CONFIG_FAULT_INJECTION off)",
			      "allocation failures, one by one");
		return tap_done();
	}
	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	if (t_read_str(FAILSLAB "ignore-gfp-wait", saved_wait, sizeof(saved_wait)) ||
	    !saved_wait[0]) {
		tap_skip_test("no " FAILSLAB " (CONFIG_FAILSLAB off)",
			      "allocation failures, one by one");
		return tap_done();
	}
	if (t_read_str(FAILSLAB "verbose", saved_verbose, sizeof(saved_verbose)))
		saved_verbose[0] = 0;
	/*
	 * Sleeping allocations too (all of the VMA work's are), and quietly:
	 * each injected failure would otherwise print a stack trace, which the
	 * harness rightly counts as a finding.
	 */
	if (!tap_ok(!t_write_str(FAILSLAB "ignore-gfp-wait", "N") &&
		    !t_write_str(FAILSLAB "verbose", "0"), "configure failslab"))
		return tap_done();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fcase cs, *c = &cs;
		struct tally t = { 0 }, ct = { 0 };
		int nth, cnth;

		case_at(i, c);
		control = 1;
		n_mremap_keys = 0;
		for (cnth = 1; cnth <= MAX_NTH; cnth++)
			if (!one(fd, c, cnth, &ct))
				break;
		tap_diag("%s: mremap(2): %d allocations failed in turn: %d ENOMEM, %d succeeded; %d layouts of the reservations after its ENOMEMs",
			 c->name, cnth - 1, ct.fails, ct.oks, n_mremap_keys);
		for (int k = 0; k < n_mremap_keys; k++)
			tap_diag("%s: mremap(2) left: %s", c->name, mremap_keys[k]);
		control = 0;
		for (nth = 1; nth <= MAX_NTH; nth++)
			if (!one(fd, c, nth, &t))
				break;
		total_inj += t.fails + t.oks;
		tap_diag("%s: %d allocations failed in turn: %d ENOMEM (%d with the target already unmapped, %d with the accounting compared, %d leaving the reservations changed as mremap(2) does), %d succeeded anyway (%d leaving the old range mapped: its unmap could not split the VMA)",
			 c->name, nth - 1, t.fails, t.dst_unmapped, t.acct_checked,
			 t.as_mremap, t.oks, t.stale_old);
		tap_ok(!t.bad && nth > 1 && nth <= MAX_NTH,
		       "%s: every failed allocation gives ENOMEM with nothing lost, or a correct move (%d allocations, %d bad)",
		       c->name, nth - 1, t.bad);
	}
	t_write_str(FAILSLAB "verbose", saved_verbose[0] ? saved_verbose : "2");
	t_write_str(FAILSLAB "ignore-gfp-wait", saved_wait[0] == 'N' ? "N" : "Y");
	tap_diag("%d calls with an injected allocation failure", total_inj);
	tap_diag("FR-STATS injected_failures=%d", total_inj);
	close(nth_fd);
	close(fd);
	return tap_done();
}
