// SPDX-License-Identifier: GPL-2.0
/*
 * A page-table retraction racing with a move, made deterministic.
 *
 * The mover allocates every destination table first (without the rmap
 * locks), then moves under them. Since 6.6, retract_page_tables() frees the
 * empty PTE tables of a file VMA under i_mmap_rwsem for read alone, not
 * mmap_lock: MADV_COLLAPSE of a shmem range in *another* process frees the
 * destination table the mover just allocated, if the destination maps that
 * range PMD-aligned. mremap(2) retries such a move; the module must too,
 * rather than undo everything and fail with ENOMEM.
 *
 * The module's test-only hold_after_prepare parameter stops the move
 * between its two walks; a child process collapses the file's first PMD
 * there, then lets the move go on. The move must succeed with the data
 * intact, and on kernels where retraction does not need mmap_lock the
 * module must report that it prepared again (prepare_retries).
 */
#define _GNU_SOURCE
#include <sys/wait.h>
#include "tlib.h"

#define HOLD T_PARAMS "hold_after_prepare"

/* Kernels from 6.6 on retract page tables without mmap_lock. */
static int retract_without_mmap_lock(void)
{
	return t_kernel_since(6, 6, 0);
}

/* The child: wait for the hold, collapse its mapping of the file, release. */
static int collapser(int memfd)
{
	struct t_area a;
	char *p = t_pick(PMD_SZ, PMD_SZ, &a);
	int rc = 0;

	/* t_pick() gives PMD alignment but not twice that: fine here. */
	if (!p || mmap(p, PMD_SZ, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		       memfd, 0) == MAP_FAILED)
		rc = 2;
	for (int i = 0; !rc && t_param("hold_after_prepare") != 2; i++) {
		if (i > 20000)
			rc = 3;	/* the move never reached the hold */
		usleep(500);
	}
	if (!rc && madvise(p, PMD_SZ, MADV_COLLAPSE)) {
		tap_diag("collapser: MADV_COLLAPSE: %s", strerror(errno));
		rc = 4;
	}
	t_write_str(HOLD, "0");
	return rc;
}

int main(void)
{
	struct t_area sa, da;
	struct fastremap_remap r;
	char *src, *dst, *p;
	long before, after;
	int fd, memfd, status, e;
	pid_t pid;
	uint64_t seed = 0x5eed;

	fd = t_open();
	if (!tap_ok(fd >= 0, "open %s", FASTREMAP_DEVICE))
		return tap_done();
	before = t_param("prepare_retries");
	if (before < 0 || t_param("hold_after_prepare") < 0) {
		tap_ok(0, "test hooks hold_after_prepare and prepare_retries present");
		return tap_done();
	}

	memfd = memfd_create("fr_retract", 0);
	if (!tap_ok(memfd >= 0 && ftruncate(memfd, 2 * PMD_SZ) == 0, "memfd of %zu MiB",
		    2 * PMD_SZ >> 20))
		return tap_done();
	/*
	 * The source maps file offset 0 a page past a PMD boundary, so
	 * the move is PTE-level; the destination maps it PMD-aligned, so
	 * retract_page_tables() sees the destination table as one to free.
	 */
	src = t_pick(PMD_SZ + PG, PMD_SZ, &sa);
	dst = t_pick(PMD_SZ, PMD_SZ, &da);
	if (!src || !dst)
		return tap_done();
	src += PG;
	p = mmap(src, PMD_SZ, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memfd, 0);
	if (!tap_ok(p == src, "map the file at a misaligned source"))
		return tap_done();
	t_fill_pattern(src, PMD_SZ, seed);

	pid = fork();
	if (pid == 0)
		_exit(collapser(memfd));
	if (!tap_ok(t_write_str(HOLD, "1") == 0, "arm hold_after_prepare"))
		return tap_done();

	t_req_init(&r, src, PMD_SZ, PMD_SZ, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	e = ioctl(fd, FASTREMAP_IOC_REMAP, &r) ? errno : 0;
	t_write_str(HOLD, "0");	/* in case the move never reached it */
	waitpid(pid, &status, 0);
	after = t_param("prepare_retries");

	if (WIFEXITED(status) && WEXITSTATUS(status) == 4 && !retract_without_mmap_lock())
		tap_skip_test("this kernel's MADV_COLLAPSE refuses the shmem range; the race needs 6.6+ anyway",
			      "another process collapsed the file's first %zu MiB during the hold",
			      PMD_SZ >> 20);
	else
		tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		       "another process collapsed the file's first %zu MiB during the hold (status %#x)",
		       PMD_SZ >> 20, status);
	if (!tap_ok(!e, "the move succeeded (got %s)", e ? t_errname(e) : "success"))
		return tap_done();
	tap_ok((char *)(uintptr_t)r.new_addr == dst && t_verify_pattern(dst, PMD_SZ, seed, 0) < 0,
	       "the data is at the destination");
	tap_ok(t_range_unmapped(src, PMD_SZ), "the source is unmapped");
	tap_diag("prepare_retries %ld -> %ld; moved pte %llu pmd %llu; flushes %llu",
		 before, after, (unsigned long long)r.moved_pte,
		 (unsigned long long)r.moved_pmd, (unsigned long long)r.tlb_flushes);
	if (retract_without_mmap_lock())
		tap_ok(after > before,
		       "the retraction freed the prepared table and the move prepared again");
	else
		tap_ok(after == before,
		       "no retraction here (it takes mmap_lock before 6.6): no retry");
	return tap_done();
}
