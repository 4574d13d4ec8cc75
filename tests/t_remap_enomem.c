// SPDX-License-Identifier: GPL-2.0
/*
 * A move that runs out of memory for page tables half way must put back
 * what it moved: ENOMEM, the source mapped as before with its data, the
 * destination range unmapped (a MREMAP_FIXED target is unmapped first, as
 * mremap(2) does), and the next move working. The module's test-only
 * parameter fail_table_alloc makes allocations fail from the Nth on.
 */
#define _GNU_SOURCE
#include "remap_util.h"

#define PARAM "/sys/module/fastremap/parameters/fail_table_alloc"
#define LEN (16UL << 20)

static int set_fail(int n)
{
	FILE *f = fopen(PARAM, "w");
	int ok;

	if (!f)
		return 0;
	ok = fprintf(f, "%d\n", n) > 0;
	return fclose(f) == 0 && ok;
}

/*
 * 16 MiB misaligned by 4 KiB needs a PTE table per 2 MiB at the target,
 * and more above them where none are left over from earlier mappings, so
 * how many allocations a move makes varies: each case either fails and
 * must have put everything back, or succeeds; the first case cannot
 * succeed, and the test requires that some case failed.
 */
static const int fail_at[] = { 1, 2, 3, 5, 8 };

static int is_mapped(void *p)
{
	unsigned char v;

	return mincore((void *)((uintptr_t)p & ~4095UL), 4096, &v) == 0;
}

static int run(int fd, int n)
{
	struct fr_area sa, da;
	struct fastremap_remap out;
	char *src = map_aligned(LEN, 2UL << 20, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &sa);
	char *dst = fr_pick(LEN + (2UL << 20), 2UL << 20, &da);
	int failed = 0;
	void *res;
	int e;

	if (!tap_ok(src && dst, "fail from allocation %d: map source and target", n))
		return 0;
	dst += 4096;
	fill_pattern(src, LEN, 77);
	if (!tap_ok(set_fail(n), "fail from allocation %d: arm the failure", n))
		return 0;
	res = fr_remap(fd, src, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, dst,
		       &out);
	e = errno;
	set_fail(0);
	if (res == MAP_FAILED) {
		failed = 1;
		tap_ok(e == ENOMEM, "fail from allocation %d: ENOMEM (%s)", n,
		       strerror(e));
		tap_ok(verify_pattern(src, LEN, 77, 4096) < 0,
		       "fail from allocation %d: the source holds all its data again", n);
		tap_ok(!is_mapped(dst) && !is_mapped(dst + LEN - 1),
		       "fail from allocation %d: the target range is unmapped", n);
		res = fr_remap(fd, src, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED,
			       dst, &out);
	} else {
		tap_diag("allocation %d was not reached: the move succeeded", n);
	}
	tap_ok(res == dst && verify_pattern(dst, LEN, 77, 4096) < 0,
	       "fail from allocation %d: %s, data intact at the target", n,
	       failed ? "the same move works afterwards" : "moved");
	fr_release(&sa);
	fr_release(&da);
	return failed;
}

int main(void)
{
	int fd = fr_open(), failures = 0;

	if (!tap_ok(fd >= 0, "open the device"))
		return tap_done();
	if (access(PARAM, W_OK)) {
		tap_skip_test("no fail_table_alloc parameter", "allocation failure");
		return tap_done();
	}
	for (size_t k = 0; k < sizeof(fail_at) / sizeof(fail_at[0]); k++)
		failures += run(fd, fail_at[k]);
	tap_ok(failures > 0, "the out-of-memory path was taken (%d of %zu cases)",
	       failures, sizeof(fail_at) / sizeof(fail_at[0]));
	return tap_done();
}
