// SPDX-License-Identifier: GPL-2.0
/*
 * Threads faulting on the source while it moves, with no userspace lock.
 *
 * A faulter thread on the other CPU writes, over and over, to the pages of
 * the source that were never touched (every second page), each write a
 * new value, while this thread moves the source away (MAYMOVE|FIXED). A
 * write that completed without a fault must be found at the new address
 * after the move: it completed either before the move or through an entry
 * the move carried along; a write after the move faults (the old range is
 * unmapped) and is not counted. So for every page, the new address reads
 * the value the faulter last wrote there without a fault, or the page's
 * pattern if it touched nothing: never an older value, never a lost page.
 * The faulter then stops at its first fault and waits for the next move.
 *
 * Faults during the move must wait for it: the module write-locks the
 * VMAs (per-VMA locks, 6.4+) besides holding mmap_lock, so no fault can
 * fill the source behind the mover's back, where the page would be freed
 * with the old range. The race above shows it only when a fault happens
 * to land inside the move: each run requires that some did (a write that
 * began while a move call was in flight and faulted). A host that takes
 * the faulter's vCPU away can leave MOVES moves without one, so a run
 * moves on, up to MAX_MOVES, until one did. Made deterministic
 * with the test-only hold_after_prepare, which stops a move after it
 * prepared its tables: a write to a never-touched page of the source,
 * made during the hold, must not complete until the move has returned
 * (it then faults: the source is gone).
 *
 * Then the destination's neighbours: mappings beside a PTE-misaligned
 * destination, in its first and last page tables, which the module copies
 * whole tables into (the table-copying mover takes the lock of such a
 * shared table, and of no other). A thread on the other CPU writes every
 * page of them, checks it, and drops them (MADV_DONTNEED, which a shared
 * mapping reads back), over and over, while the region moves back and
 * forth: each neighbour page reads what was last written there, each
 * moved page its pattern, and some fault or drop in the neighbours began
 * while a move was in flight (6.4+: they take only their own VMA's lock).
 *
 * Runs in a child process, so that its mm is torn down before the kernel
 * log is read: "Bad rss-counter" (checked at teardown) and "Bad page map"
 * must not appear.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/klog.h>
#include <sys/wait.h>
#include "tlib.h"

/* 8 MiB, or a PMD where that is more: whole PTE tables either way. */
#define LEN	(PMD_SZ > 8 * SZ_1M ? PMD_SZ : 8 * SZ_1M)
#define NPAGES	(LEN / PG)
#define MOVES	24
#define MAX_MOVES	(10 * MOVES)

static int fd = -1;
static char *areas[2];
/* The neighbours' mode: the destination's two neighbours, their sizes. */
static char *nb[2];
static size_t nb_len[2];
static _Atomic(char *) cur;
static atomic_int go, stop_all, in_move;
static atomic_ulong writes, faults, raced_faults;
static uint64_t *last;		/* the faulter's last unfaulted value per page */

/* Writes v at p: 0, or -1 if the write faulted. */
static int probe_write(char *p, uint64_t v)
{
	if (sigsetjmp(t_probe_env, 0))
		return -1;
	t_probe_armed = 1;
	*(volatile uint64_t *)p = v;
	t_probe_armed = 0;
	return 0;
}

static void *faulter(void *arg)
{
	uint64_t v = 1;

	(void)arg;
	t_pin_cpu(1);
	t_probe_init();
	while (!atomic_load(&stop_all)) {
		char *p;

		if (!atomic_load(&go))
			continue;
		p = atomic_load(&cur);
		/* Until the first fault: then the region has moved away. */
		for (size_t k = 1; atomic_load(&go); k = (k + 2) % NPAGES, v++) {
			uint64_t w = v << 20 | k;
			int during = atomic_load(&in_move);

			if (probe_write(p + k * PG, w) < 0) {
				atomic_fetch_add(&faults, 1);
				/* Began while the move call was in flight. */
				if (during)
					atomic_fetch_add(&raced_faults, 1);
				break;
			}
			last[k] = w;
			atomic_fetch_add(&writes, 1);
		}
		atomic_store(&go, 0);
	}
	return NULL;
}

/*
 * The neighbours' faulter: each round writes a new value into every page
 * of both neighbours, reading the last one back first, then drops them.
 */
static void *nb_faulter(void *arg)
{
	uint64_t v = 1;

	(void)arg;
	t_pin_cpu(1);
	while (!atomic_load(&stop_all)) {
		for (int n = 0; n < 2; n++) {
			for (size_t k = 0; k < nb_len[n] / PG; k++) {
				volatile uint64_t *w = (uint64_t *)(nb[n] + k * PG);
				int during = atomic_load(&in_move);

				if (v > 1 && *w != ((v - 1) << 20 | k << 1 | n)) {
					tap_diag("neighbour %d page %zu: read %#llx, wrote %#llx", n, k,
						 (unsigned long long)*w,
						 (unsigned long long)((v - 1) << 20 | k << 1 | n));
					atomic_store(&stop_all, 2);
					return NULL;
				}
				*w = v << 20 | k << 1 | n;
				atomic_fetch_add(&writes, 1);
				if (during)
					atomic_fetch_add(&raced_faults, 1);
			}
			if (atomic_load(&in_move))
				atomic_fetch_add(&raced_faults, 1);
			madvise(nb[n], nb_len[n], MADV_DONTNEED);
			atomic_fetch_add(&faults, 1);
		}
		v++;
	}
	return NULL;
}

static long check(const char *p)
{
	for (size_t k = 0; k < NPAGES; k++) {
		uint64_t got = *(const volatile uint64_t *)(p + k * PG);

		if (k % 2 == 0) {
			if (t_check_page(p + k * PG, 81, k) >= 0)
				return k;
		} else if (got != last[k]) {
			tap_diag("page %zu: read %#llx, the faulter last wrote %#llx",
				 k, (unsigned long long)got, (unsigned long long)last[k]);
			return k;
		}
	}
	return -1;
}

static int child(int skew, int neighbours)
{
	struct t_area a[2];
	pthread_t t;
	int bad = 0, moved = 0;

	t_pin_cpu(0);
	last = calloc(NPAGES, sizeof(*last));
	areas[0] = t_map_aligned(LEN, PMD_SZ, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &a[0]);
	areas[1] = t_pick(LEN + PMD_SZ, PMD_SZ, &a[1]);
	if (!last || !areas[0] || !areas[1])
		return 2;
	areas[1] += skew * PG;
	madvise(areas[0], LEN, MADV_NOHUGEPAGE);
	for (size_t k = 0; k < NPAGES; k += 2 - neighbours)
		t_pattern_page((uint64_t *)(areas[0] + k * PG), 81, k);
	if (neighbours) {
		/*
		 * Shared, so that neither merges with the destination: the
		 * rest of the destination's first and last PMD spans.
		 */
		nb[0] = areas[1] - skew * PG;
		nb_len[0] = skew * PG;
		nb[1] = areas[1] + LEN;
		nb_len[1] = PMD_SZ - skew * PG;
		for (int n = 0; n < 2; n++)
			if (mmap(nb[n], nb_len[n], PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != nb[n])
				return 2;
	}
	atomic_store(&cur, areas[0]);
	pthread_create(&t, NULL, neighbours ? nb_faulter : faulter, NULL);
	for (int i = 0; (i < MOVES || !atomic_load(&raced_faults)) && i < MAX_MOVES && !bad;
	     i++) {
		char *from = areas[i & 1], *to = areas[(i + 1) & 1];
		unsigned long w0 = atomic_load(&writes);

		atomic_store(&go, !neighbours);
		/* Let the faulter get going on the source, or the neighbours. */
		while (atomic_load(&writes) < w0 + 16 &&
		       (atomic_load(&go) || (neighbours && !atomic_load(&stop_all))))
			sched_yield();
		atomic_store(&in_move, 1);
		if (t_remap(fd, from, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, to,
			     NULL) != to) {
			bad = 3;
			break;
		}
		atomic_store(&in_move, 0);
		atomic_store(&cur, to);
		while (atomic_load(&go))
			sched_yield();
		moved++;
		if (neighbours) {
			if (t_verify_pattern(to, LEN, 81, PG) >= 0 || atomic_load(&stop_all))
				bad = 1;
		} else if (check(to) >= 0) {
			bad = 1;
		}
	}
	if (atomic_load(&stop_all) == 2)
		bad = 1;
	atomic_store(&stop_all, 1);
	pthread_join(t, NULL);
	if (neighbours)
		printf("# neighbours: %d moves, %lu neighbour writes, %lu drops, %lu writes and drops begun while a move was in flight\n",
		       moved, (unsigned long)atomic_load(&writes),
		       (unsigned long)atomic_load(&faults),
		       (unsigned long)atomic_load(&raced_faults));
	else
		printf("# %s: %d moves, %lu unfaulted writes, %lu faults, %lu of them begun while a move was in flight\n",
		       skew ? "PTE by PTE" : "whole tables", moved,
		       (unsigned long)atomic_load(&writes), (unsigned long)atomic_load(&faults),
		       (unsigned long)atomic_load(&raced_faults));
	/* The race is worth something only where faults met moves. */
	if (!bad && !atomic_load(&raced_faults))
		bad = 4;
	fflush(stdout);
	return bad;
}

#define HOLD		T_PARAMS "hold_after_prepare"
#define HOLD_WAIT	2.0	/* s a held fault is given to complete */
#define HLEN		(4 * SZ_1M)

/* The held move's length: with a destination table inside it (@dst). */
static size_t held_len;

static char *held_page;
static atomic_int hf_go, hf_started, hf_done, hf_faulted;
static char *held_src, *held_dst;
static atomic_long held_ret;

/* The fault: one write to the never-touched page, once the move is held. */
static void *held_faulter(void *arg)
{
	(void)arg;
	t_pin_cpu(1);
	t_probe_init();
	while (!atomic_load(&hf_go))
		sched_yield();
	atomic_store(&hf_started, 1);
	atomic_store(&hf_faulted, probe_write(held_page, 0x5eed) < 0);
	atomic_store(&hf_done, 1);
	return NULL;
}

static void *held_mover(void *arg)
{
	(void)arg;
	atomic_store(&held_ret, (long)t_remap(fd, held_src, held_len, held_len,
					    MREMAP_MAYMOVE | MREMAP_FIXED, held_dst, NULL));
	return NULL;
}

/*
 * In a child: the move held after preparing, a write meanwhile to a
 * never-touched source page, or (@dst) to a destination page, in a table
 * FR_PREPARE hooked in without the PMD lock because only the move can
 * reach it: a PTE-level move, whose second destination table lies inside
 * the destination VMA. Exit status: 0 the write waited, 1 it completed
 * during the hold, 2 set-up failed, 3 the move never reached the hold,
 * 4 the move failed, 5 the write never completed, 6 the destination's
 * write faulted.
 */
static int held_child(int dst)
{
	struct t_area a, b;
	pthread_t tf, tm;
	int reached = 0, during;
	double t0;

	t_pin_cpu(0);
	/*
	 * During the hold mmap_lock is held for write, and on a kernel
	 * without per-VMA locks any fault of this thread would wait for it
	 * (until the hold gives up): every call made then is made once
	 * before, and every page this forked child has is made present and
	 * its own (mlockall), before the source is mapped.
	 */
	if (pthread_create(&tf, NULL, held_faulter, NULL))
		return 2;
	if (t_param("hold_after_prepare") != 0 || t_write_str(HOLD, "0") || t_now() < 0)
		return 2;
	usleep(1);
	sched_yield();
	if (mlockall(MCL_CURRENT))
		return 2;
	/* 4 MiB; with 16 KiB pages (32 MiB PTE tables) three tables. */
	held_len = dst && 3 * PMD_SZ > HLEN ? 3 * PMD_SZ : HLEN;
	held_src = t_map_aligned(held_len, PMD_SZ, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &a);
	held_dst = t_pick(held_len + PMD_SZ, PMD_SZ, &b);
	if (!held_src || !held_dst)
		return 2;
	if (dst)
		held_dst += PG;
	madvise(held_src, held_len, MADV_NOHUGEPAGE);
	/* An anon_vma, and every page but one present. */
	for (size_t k = 0; k < held_len / PG; k++)
		if (k != 1)
			t_pattern_page((uint64_t *)(held_src + k * PG), 82, k);
	held_page = dst ? held_dst + PMD_SZ + 3 * PG : held_src + PG;
	if (t_write_str(HOLD, "1") || pthread_create(&tm, NULL, held_mover, NULL))
		return 2;
	t0 = t_now();
	while (!(reached = t_param("hold_after_prepare") == 2) && t_now() < t0 + 8)
		usleep(1000);
	if (reached) {
		atomic_store(&hf_go, 1);
		while (!atomic_load(&hf_started))
			sched_yield();
		t0 = t_now();
		while (!atomic_load(&hf_done) && t_now() < t0 + HOLD_WAIT)
			usleep(1000);
	}
	during = atomic_load(&hf_done);
	t_write_str(HOLD, "0");
	pthread_join(tm, NULL);
	atomic_store(&hf_go, 1);
	pthread_join(tf, NULL);
	printf("# held REMAP: hold %s, the write %s during the hold, then %s; the move %s\n",
	       reached ? "reached" : "never reached", during ? "completed" : "waited",
	       atomic_load(&hf_faulted) ? "faulted" : "completed",
	       atomic_load(&held_ret) == (long)held_dst ? "succeeded" : "failed");
	fflush(stdout);
	if (!reached)
		return 3;
	if (atomic_load(&held_ret) != (long)held_dst)
		return 4;
	if (during)
		return 1;
	if (!atomic_load(&hf_done))
		return 5;
	/* Once the move is over the destination page is there: the write lands. */
	return dst && atomic_load(&hf_faulted) ? 6 : 0;
}

static void held_case(int dst)
{
	static const char *const why[] = {
		"", ": it completed during the hold", ": set-up failed",
		": the move never reached the hold", ": the move failed",
		": the write never completed",
		": the write faulted (its page is not in the destination)",
	};
	const char *d = dst ?
		"a fault in a destination table hooked in without the PMD lock waits while a REMAP is held" :
		"a fault on a never-touched source page waits while a REMAP is held";
	char b[16];
	pid_t pid;
	int st = -1;

	if (t_read_str(HOLD, b, sizeof(b))) {
		tap_ok(0, "%s: no test hook hold_after_prepare (a test build of the module)", d);
		return;
	}
	pid = fork();
	if (pid == 0)
		_exit(held_child(dst));
	waitpid(pid, &st, 0);
	t_write_str(HOLD, "0");
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s%s", d,
	       !WIFEXITED(st) ? ": killed by a signal" :
	       WEXITSTATUS(st) < ARRAY_SIZE(why) ? why[WEXITSTATUS(st)] : "");
}

/* How often the kernel log names bad rss counters or page maps. */
static int klog_bad(void)
{
	static char buf[1 << 21];
	int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof(buf) - 1);
	int bad = 0;

	if (n < 0)
		return -1;
	buf[n] = 0;
	for (char *l = buf; (l = strstr(l, "Bad rss-counter")); l++)
		bad++;
	for (char *l = buf; (l = strstr(l, "Bad page map")); l++)
		bad++;
	return bad;
}

int main(int argc, char **argv)
{
	static const char unfaulted[] = "every unfaulted write is at the new address";
	static const struct { const char *name; int skew, neighbours; const char *what; } runs[] = {
		/* skew: pages */
		{ "whole PTE tables", 0, 0, unfaulted }, { "PTE by PTE", 1, 0, unfaulted },
		{ "the destination's neighbours", 1, 1,
		  "every neighbour page holds its last write, every moved page its data" },
	};
	int kbad;

	fd = t_open_smp(&argc, argv, "faults racing with moves");
	if (fd < 0)
		return tap_done();
	kbad = klog_bad();
	held_case(0);
	held_case(1);
	for (size_t r = 0; r < ARRAY_SIZE(runs); r++) {
		static const char *const why[] = {
			"", "a write was lost or a page corrupted", "cannot map",
			"a move failed", "no fault began while any of its moves was in flight",
		};
		pid_t pid = fork();
		int st = -1, nb;

		if (pid == 0)
			_exit(child(runs[r].skew, runs[r].neighbours));
		waitpid(pid, &st, 0);
		tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		       "faults racing with %d or more moves, %s: %s%s%s",
		       MOVES, runs[r].name, runs[r].what,
		       WIFEXITED(st) && WEXITSTATUS(st) ? ": " : "",
		       WIFEXITED(st) && WEXITSTATUS(st) < 5 ? why[WEXITSTATUS(st)] :
		       WIFEXITED(st) ? "" : ": killed by a signal");
		nb = klog_bad();
		tap_ok(kbad >= 0 && nb == kbad,
		       "%s: no \"Bad rss-counter\" or \"Bad page map\" in the kernel log (%d new)",
		       runs[r].name, nb - kbad);
		kbad = nb;
	}
	return tap_done();
}
