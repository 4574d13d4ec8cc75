// SPDX-License-Identifier: GPL-2.0
/*
 * Lockless GUP-fast while the source moves.
 *
 * GUP-fast (here through vmsplice(2), which pins the pages it splices
 * with get_user_pages_fast()) walks the page tables with interrupts off
 * and takes no lock: a move's mmap_lock does not stop it. The
 * table-copying mover (module/pgmove.c) copies whole source tables,
 * detaches them before its flush and, on the pass that completes a move
 * whose source is unmapped, frees them (where the kernel lets it:
 * module/compat.h), where GUP-fast may still be walking one. A pinner thread on the other CPU splices pages of the
 * source into a pipe, one at a time, over and over, and reads each back,
 * while this thread moves the source away (MAYMOVE|FIXED, misaligned by
 * a page: whole tables copied). The pages are the same before and after
 * the move, and no one writes them, so every splice that succeeds must
 * deliver the page's own pattern; one that fails must fail with EFAULT
 * (the source is gone). A pin through a table freed and reused would
 * deliver another page's data, or crash the kernel (the harness reads
 * its log). mremap(2) runs the same rounds as a control.
 *
 * The detector's positive control: a page of another pattern, spliced
 * and read the same way, is found wrong. The race is worth something only
 * where splices met moves: each run requires that some splice began and
 * completed while one move call was in flight, and that some failed
 * because the source had gone.
 *
 * Each run is a child process, so that its mm is torn down (and the
 * kernel's check of its page-table bytes made) before the log is read.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include "tlib.h"

#define LEN		(2 * PMD_SZ)	/* two whole source tables */
#define NPAGES		(LEN / PG)
#define SEED		0x6a7
#define ROUNDS		16	/* at least; more until a splice met a move */
#define MAX_ROUNDS	200

static int fd = -1;
static int pipefd[2];
static _Alignas(64) uint64_t buf[T_PAGE_MAX / sizeof(uint64_t)];
static char *_Atomic cur;	/* the source the pinner splices from */
static atomic_int active, busy, stop_all;
/* Odd while a move call is in flight: incremented before and after it. */
static atomic_long move_seq;
static atomic_long spliced, raced, efaults, wrong, other;

/*
 * Splices page @k of @p and reads it back: 1 it held pattern @seed's page
 * @k, 0 it did not, -1 the splice failed (errno).
 */
static int splice_check(char *p, size_t k, uint64_t seed)
{
	struct iovec iov = { .iov_base = p + k * PG, .iov_len = PG };
	ssize_t n = vmsplice(pipefd[1], &iov, 1, 0), got = 0, r;

	if (n < 0)
		return -1;
	while (got < n) {
		r = read(pipefd[0], (char *)buf + got, n - got);
		if (r <= 0)
			return 0;
		got += r;
	}
	return n == (ssize_t)PG && t_check_page(buf, seed, k) < 0;
}

static void *pinner(void *arg)
{
	uint64_t rnd = 0x9e3779b97f4a7c15ULL;

	(void)arg;
	t_pin_cpu(1);
	while (!atomic_load(&stop_all)) {
		long s0, s1;
		size_t k;
		int r;

		if (!atomic_load(&active))
			continue;
		atomic_store(&busy, 1);
		/* The mover clears active, then waits for busy to be 0. */
		if (!atomic_load(&active)) {
			atomic_store(&busy, 0);
			continue;
		}
		k = t_xorshift64(&rnd) % NPAGES;
		s0 = atomic_load(&move_seq);
		r = splice_check(atomic_load(&cur), k, SEED);
		s1 = atomic_load(&move_seq);
		if (r > 0) {
			atomic_fetch_add(&spliced, 1);
			if ((s0 & 1) && s1 == s0)
				atomic_fetch_add(&raced, 1);
		} else if (r == 0) {
			atomic_fetch_add(&wrong, 1);
			tap_diag("page %zu spliced during move %ld-%ld: not its data", k, s0, s1);
		} else if (errno == EFAULT) {
			atomic_fetch_add(&efaults, 1);
		} else {
			atomic_fetch_add(&other, 1);
		}
		atomic_store(&busy, 0);
	}
	return NULL;
}

/*
 * Exit status: 0 pass, 1 wrong data, 2 set-up, 3 a move failed, 4 no
 * race, 5 a splice failed otherwise than with EFAULT.
 */
static int child(int use_module)
{
	struct t_area sa, da;
	pthread_t t;
	int bad = 0, i;

	t_pin_cpu(0);
	if (pipe(pipefd))
		return 2;
	pthread_create(&t, NULL, pinner, NULL);
	for (i = 0; (i < ROUNDS || !atomic_load(&raced) || !atomic_load(&efaults)) &&
		    i < MAX_ROUNDS && !bad; i++) {
		char *src = t_map_aligned(LEN, PMD_SZ, PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &sa);
		char *dst = t_pick(LEN + PMD_SZ, PMD_SZ, &da), *res;
		long s0 = atomic_load(&spliced), e0 = atomic_load(&efaults);

		if (!src || !dst || madvise(src, LEN, MADV_NOHUGEPAGE)) {
			bad = 2;
			break;
		}
		dst += PG;
		t_fill_pattern(src, LEN, SEED);
		atomic_store(&cur, src);
		atomic_store(&active, 1);
		/* Let the pinner get going on the source. */
		while (atomic_load(&spliced) < s0 + 8 && !atomic_load(&wrong))
			sched_yield();
		atomic_fetch_add(&move_seq, 1);
		res = use_module ? t_remap(fd, src, LEN, LEN,
					   MREMAP_MAYMOVE | MREMAP_FIXED, dst, NULL) :
				   t_mremap(src, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
		atomic_fetch_add(&move_seq, 1);
		/* Let a splice meet the unmapped source, then stop the pinner. */
		for (int k = 0; k < 100000 && atomic_load(&efaults) == e0; k++)
			sched_yield();
		atomic_store(&active, 0);
		while (atomic_load(&busy))
			sched_yield();
		if (res != dst)
			bad = 3;
		else if (t_verify_pattern(dst, LEN, SEED, PG) >= 0 ||
			 atomic_load(&wrong))
			bad = 1;
		t_release(&sa);
		t_release(&da);
	}
	atomic_store(&stop_all, 1);
	pthread_join(t, NULL);
	printf("# %s: %d moves, %ld splices, %ld of them inside one move call, %ld EFAULT, %ld failed otherwise, %ld wrong\n",
	       use_module ? "FASTREMAP_IOC_REMAP" : "mremap(2)", i,
	       atomic_load(&spliced), atomic_load(&raced), atomic_load(&efaults),
	       atomic_load(&other), atomic_load(&wrong));
	if (!bad && (!atomic_load(&raced) || !atomic_load(&efaults)))
		bad = 4;
	if (!bad && atomic_load(&other))
		bad = 5;
	fflush(stdout);
	return bad;
}

/* The detector's positive control: another pattern's page is found wrong. */
static void control(void)
{
	struct t_area a;
	char *p = t_map_aligned(PMD_SZ, PMD_SZ, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &a);
	int same = -2, other_seed = -2;

	if (p && !pipe(pipefd)) {
		t_fill_pattern(p, PMD_SZ, SEED);
		same = splice_check(p, 3, SEED);
		other_seed = splice_check(p, 3, SEED + 1);
		close(pipefd[0]);
		close(pipefd[1]);
	}
	if (p)
		t_release(&a);
	tap_ok(same == 1 && other_seed == 0,
	       "control: a spliced page reads back as its pattern (%d), and is found wrong against another (%d)",
	       same, other_seed);
}

int main(int argc, char **argv)
{
	static const char *const why[] = {
		"", "a splice or the target read data not its own", "set-up failed",
		"a move failed", "no splice met a move, or none met the unmapped source",
		"a splice failed otherwise than with EFAULT",
	};

	fd = t_open_smp(&argc, argv, "GUP-fast racing with moves");
	if (fd < 0)
		return tap_done();
	control();
	for (int m = 1; m >= 0; m--) {
		int has = t_kernel_log_has("non-zero pgtables_bytes");
		pid_t pid = fork();
		int st = -1;

		if (pid == 0)
			_exit(child(m));
		waitpid(pid, &st, 0);
		tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		       "%s: GUP-fast (vmsplice) racing with %d or more moves pins only the source's own pages%s%s",
		       m ? "FASTREMAP_IOC_REMAP" : "mremap(2)", ROUNDS,
		       WIFEXITED(st) && WEXITSTATUS(st) ? ": " : "",
		       WIFEXITED(st) && WEXITSTATUS(st) < 6 ? why[WEXITSTATUS(st)] :
		       WIFEXITED(st) ? "" : "killed by a signal");
		tap_ok(has || !t_kernel_log_has("non-zero pgtables_bytes"),
		       "%s: the mm's page-table bytes came to zero at its exit (no \"non-zero pgtables_bytes\")",
		       m ? "FASTREMAP_IOC_REMAP" : "mremap(2)");
	}
	return tap_done();
}
