// SPDX-License-Identifier: GPL-2.0
/*
 * A move that runs out of memory for page tables half way must put back
 * what it moved and leave nothing changed: ENOMEM, the source with all its
 * data, the destination range unmapped, and the process exactly as before
 * the call: the whole of /proc/self/maps, Committed_AS (to the page), the
 * smaps counters (Rss, AnonHugePages, Swap, Locked) of every mapping from
 * the source to the target, and VmLck. Then the same move must work. The module's test-only parameter
 * fail_table_alloc makes page-table allocations fail from the Nth on.
 *
 * The cases cover what the undo path must give back: a plain move, a move
 * that grows (its extra commit charge), MREMAP_DONTUNMAP (the new range's
 * charge), and mlocked memory (locked_vm).
 *
 * An attempt that fails before anything moved proves nothing of the undo.
 * The module's test-only hold_after_prepare stops a relocation once a pass
 * has prepared tables, just before it moves them; it is armed for every
 * attempt, and a thread started before any snapshot releases it and counts
 * the holds. A failed attempt that was held moved entries before it ran
 * out, and the undo moved them back: each case requires one.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include "tlib.h"

#define PARAM T_PARAMS "fail_table_alloc"
#define HOLD T_PARAMS "hold_after_prepare"
#define LEN (8 * PMD_SZ)	/* 16 MiB with 4 KiB pages */

/* Holds the releaser saw and released; the releaser runs while this is 0. */
static int holds, stop_releaser;

/*
 * Releases every hold (the parameter reads 2 while a relocation waits).
 * It only reads and writes the parameter, from buffers on its stack that
 * its first round touched: it maps nothing and never faults, so it
 * neither changes the snapshots nor waits for the mmap_lock the held call
 * holds.
 */
static void *releaser(void *unused)
{
	char buf[16];

	(void)unused;
	while (!__atomic_load_n(&stop_releaser, __ATOMIC_SEQ_CST)) {
		if (!t_read_str(HOLD, buf, sizeof(buf)) && !strcmp(buf, "2")) {
			__atomic_add_fetch(&holds, 1, __ATOMIC_SEQ_CST);
			t_write_str(HOLD, "0");
		}
		usleep(500);
	}
	return NULL;
}

static int set_fail(int n)
{
	char b[16];

	snprintf(b, sizeof(b), "%d\n", n);
	return t_write_str(PARAM, b) == 0;
}

/*
 * Eight PMDs misaligned by a page need a PTE table per PMD at the target,
 * and more above them where none are left over from earlier mappings, so
 * how many allocations a move makes varies: each attempt either fails and
 * must have put everything back, or succeeds; the first cannot succeed,
 * and each case requires that some attempt failed.
 */
static const int fail_at[] = { 1, 2, 3, 5, 8 };

static const struct ecase {
	const char *name;
	size_t grow;		/* the new length is LEN plus this */
	unsigned int flags;
	int mlocked;
} cases[] = {
	{ "FIXED", 0, MREMAP_MAYMOVE | MREMAP_FIXED, 0 },
	{ "FIXED, growing by 2 MiB", SZ_2M, MREMAP_MAYMOVE | MREMAP_FIXED, 0 },
	{ "DONTUNMAP", 0, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, 0 },
	{ "FIXED, mlocked", 0, MREMAP_MAYMOVE | MREMAP_FIXED, 1 },
};

static int is_mapped(void *p)
{
	unsigned char v;

	return mincore((void *)((uintptr_t)p & ~(PG - 1)), PG, &v) == 0;
}

/* /proc/self/maps as it was before the call. */
static char maps_before[sizeof(t_maps_buf)];

/* Returns 1 if the attempt failed, 2 if it failed after moving entries. */
static int run(int fd, const struct ecase *c, int n)
{
	struct t_area sa, da;
	struct fastremap_remap out;
	struct t_acct before, after;
	size_t new_len = LEN + c->grow;
	char *src = t_map_aligned(LEN, PMD_SZ, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &sa);
	char *dst = t_pick(new_len + PMD_SZ, PMD_SZ, &da);
	int failed = 0, acct_ok, held;
	char why[128];
	uintptr_t lo, hi;
	void *res;
	int e;

	if (!tap_ok(src && dst, "%s, fail from allocation %d: map source and target",
		    c->name, n))
		return 0;
	dst += PG;
	t_fill_pattern(src, LEN, 77);
	if (c->mlocked && mlock(src, LEN)) {
		tap_skip_test(strerror(errno), "%s: mlock", c->name);
		goto out;
	}
	/*
	 * A FIXED target is unmapped first, as mremap(2) does, failure or
	 * not: unmap it now, so that a failed call must change nothing.
	 */
	munmap(dst, new_len);
	if (!tap_ok(set_fail(n), "%s, fail from allocation %d: arm the failure", c->name, n))
		goto out;
	set_fail(0);
	/* The readers allocate on first use: not between the snapshots. */
	lo = (uintptr_t)(sa.base < da.base ? sa.base : da.base);
	hi = (uintptr_t)(sa.base < da.base ? da.base + da.len : sa.base + sa.len);
	t_acct_read(&before, lo, hi);
	t_maps_snapshot();
	acct_ok = t_acct_read(&before, lo, hi) == 0 && t_maps_snapshot() == 0;
	memcpy(maps_before, t_maps_buf, t_maps_len + 1);
	set_fail(n);
	held = __atomic_load_n(&holds, __ATOMIC_SEQ_CST);
	t_write_str(HOLD, "1");
	res = t_remap(fd, src, LEN, new_len, c->flags, dst, &out);
	e = errno;
	/* Disarmed if never reached; counted by the releaser if it was. */
	t_write_str(HOLD, "0");
	held = __atomic_load_n(&holds, __ATOMIC_SEQ_CST) != held;
	set_fail(0);
	/* Read before anything else runs that might touch a new page. */
	if (res == MAP_FAILED)
		acct_ok = acct_ok && t_acct_read(&after, lo, hi) == 0 && t_maps_snapshot() == 0;
	if (res == MAP_FAILED) {
		failed = 1 + held;
		tap_diag("%s: allocation %d failed %s", c->name, n,
			 held ? "after entries moved: the undo moved them back"
			      : "before anything moved");
		tap_ok(e == ENOMEM, "%s, fail from allocation %d: ENOMEM (%s)", c->name, n,
		       strerror(e));
		tap_ok(acct_ok && !strcmp(maps_before, t_maps_buf),
		       "%s, fail from allocation %d: /proc/self/maps as before", c->name, n);
		if (acct_ok && strcmp(maps_before, t_maps_buf))
			tap_diag("before:\n%s\n# after:\n%s", maps_before, t_maps_buf);
		tap_ok(acct_ok && !t_acct_diff(&before, &after, why, sizeof(why)),
		       "%s, fail from allocation %d: accounting as before (%s)", c->name, n,
		       acct_ok ? why : "cannot read it");
		tap_ok(t_verify_pattern(src, LEN, 77, PG) < 0,
		       "%s, fail from allocation %d: the source holds all its data again",
		       c->name, n);
		tap_ok(!is_mapped(dst) && !is_mapped(dst + new_len - 1),
		       "%s, fail from allocation %d: the target range is unmapped", c->name, n);
		res = t_remap(fd, src, LEN, new_len, c->flags, dst, &out);
	} else {
		tap_diag("%s: allocation %d was not reached: the move succeeded", c->name, n);
	}
	tap_ok(res == dst && t_verify_pattern(dst, LEN, 77, PG) < 0,
	       "%s, fail from allocation %d: %s, data intact at the target", c->name, n,
	       failed ? "the same move works afterwards" : "moved");
out:
	if (c->mlocked)
		munlock(src, LEN);
	t_release(&sa);
	t_release(&da);
	return failed;
}

int main(void)
{
	int fd = t_open();
	pthread_t rel;
	char buf[16];

	if (!tap_ok(fd >= 0, "open the device"))
		return tap_done();
	if (access(PARAM, W_OK)) {
		tap_skip_test("no fail_table_alloc parameter", "allocation failure");
		return tap_done();
	}
	if (!tap_ok(!access(HOLD, W_OK) && !t_read_str(HOLD, buf, sizeof(buf)) &&
		    !strcmp(buf, "0") && !pthread_create(&rel, NULL, releaser, NULL),
		    "hold_after_prepare present and off, its releaser started"))
		return tap_done();
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		int failures = 0, undone = 0, r;

		for (size_t k = 0; k < ARRAY_SIZE(fail_at); k++) {
			r = run(fd, &cases[c], fail_at[k]);
			failures += r > 0;
			undone += r == 2;
		}
		tap_ok(failures > 0, "%s: the out-of-memory path was taken (%d of %zu attempts)",
		       cases[c].name, failures, ARRAY_SIZE(fail_at));
		tap_ok(undone > 0,
		       "%s: a failed attempt had moved entries, which the undo moved back (%d of %d)",
		       cases[c].name, undone, failures);
	}
	__atomic_store_n(&stop_releaser, 1, __ATOMIC_SEQ_CST);
	pthread_join(rel, NULL);
	return tap_done();
}
