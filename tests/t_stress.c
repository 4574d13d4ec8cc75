// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_REMAP under stress, inside the test VM: table-driven
 * scenarios, each ending with a check of the data it moved.
 *
 *  1. fork() before moves: the parent moves a region back and forth while
 *     a child forked before checks and rewrites its COW snapshot.
 *  2. fork() during moves: a thread forks repeatedly (raw fork syscall)
 *     while another moves; the child checks a static region and the moved
 *     one at the address published before the fork.
 *  3. madvise (DONTNEED/FREE/PAGEOUT), mprotect and munmap+mmap racing on
 *     the neighbours of a moving region, and DONTNEED on the region itself.
 *  4. mlock: a locked region moves and stays locked; locked growth through
 *     the ioctl is declined (EOPNOTSUPP) with memory intact.
 *  5. Swap (existing, or zram if its driver is there): paged-out memory
 *     (Swap > 0 asserted before the move) moves as swap entries and
 *     faults back intact.
 *  6. KSM: a merged range (pages_sharing > 0 asserted) is declined,
 *     mremap(2) moves it.
 *  7. THP: khugepaged collapsing a partly touched MADV_HUGEPAGE region
 *     while it moves back and forth 100 times and a thread touches it
 *     (AnonHugePages > 0 asserted: during the aligned moves, before the
 *     misaligned ones).
 *  8. The zero page and the huge zero page moved (aligned, misaligned).
 *  9. SIGKILL in the middle of moves of a sparse 512 MiB region, 10 times
 *     or more, until one kill has landed inside the ioctl (asserted): the
 *     child dies of SIGKILL, and MemFree/Committed_AS do not drift.
 * 10. FASTREMAP_IOC_MOVE batches inside a heap while other threads fork
 *     (every page shared with a child for a while: moves stop with
 *     EBUSY), and DONTNEED, PAGEOUT, MADV_COLLAPSE, mprotect and
 *     munmap+mmap churn the rest of the heap's VMA; with THP (the heap
 *     MADV_HUGEPAGE, so the moves cut and split large folios) and without.
 *     Each batch either completes or stops with EBUSY, and every page of
 *     the moved part is checked against the model after every batch.
 *
 * 18 table entries (aligned and misaligned variants of the 10). A scenario
 * that produced only SKIPs is counted and named as skipped, not as run.
 *
 * Sizes and counts are kept small for QEMU TCG (the whole run is meant to
 * take well under a minute there). Runs as root inside the test VM with
 * the module loaded.
 *
 * Usage: t_stress [--selftest-mremap] [--rounds N] [SEED [SCENARIO,...]]
 *   SCENARIO: the numbers above; all of them by default. --rounds runs
 *   them all N times (the long mode), the random state running on.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include "tlib.h"

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT	1
#endif

#define MF		(MREMAP_MAYMOVE | MREMAP_FIXED)
#define RW		(PROT_READ | PROT_WRITE)
#define ANON		(MAP_PRIVATE | MAP_ANONYMOUS)

static int fd = -1;
static uint64_t seed;

/* ---------------------------------------------------------------------- */
/* Common helpers                                                          */

/*
 * n slots of len bytes in one reservation: slot i is PMD-aligned, plus a
 * page if bit i of mis is set, with at least a PMD between slots.
 */
struct slots {
	struct t_area a;
	char *s[4];
	size_t len;
	int n;
};

static int slots_init(struct slots *sl, size_t len, int n, unsigned int mis)
{
	uintptr_t b;

	memset(sl, 0, sizeof(*sl));
	if (!t_reserve(n * (len + PMD_SZ + PG) + 2 * PMD_SZ, &sl->a))
		return -1;
	b = T_ALIGN_UP((uintptr_t)sl->a.base + PG, PMD_SZ);
	for (int i = 0; i < n; i++)
		sl->s[i] = (char *)b + i * (len + PMD_SZ) + ((mis >> i) & 1) * PG;
	sl->len = len;
	sl->n = n;
	return 0;
}

static char *slot_map(struct slots *sl, int i)
{
	char *p = mmap(sl->s[i], sl->len, RW, ANON | MAP_FIXED, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * Moves len bytes from `from` to `to` (MAYMOVE|FIXED) and puts a
 * PROT_NONE placeholder in the hole left behind, so that nothing else
 * of the process lands there and gets clobbered by a later move back.
 */
static char *move_to(char *from, size_t len, char *to)
{
	char *p = t_remap(fd, from, len, len, MF, to, NULL);
	int e = errno;

	if (p == to && (from + len <= to || to + len <= from))
		mmap(from, len, PROT_NONE, ANON | MAP_FIXED_NOREPLACE | MAP_NORESERVE,
		     -1, 0);
	errno = e;
	return p;
}

/*
 * Checks pages [0, n) of p: exp[k] is the pattern seed of page k, 0 for
 * a page that must read zero, or ~0 for "either" (a lazily freed page).
 * Every step-th page and the last. Returns the first bad offset, or -1.
 */
#define EITHER	(~0ULL)
static long check_pages(const char *p, size_t n, const uint64_t *exp, size_t step)
{
	for (size_t k = 0; k < n; k += step ? step : 1) {
		const char *pg = p + k * PG;
		long bad;

		if (exp[k] == 0)
			bad = t_verify_zero(pg, PG, 0);
		else if (exp[k] == EITHER)
			bad = t_check_page(pg, seed, k) >= 0 && t_verify_zero(pg, PG, 0) >= 0 ? 0 : -1;
		else
			bad = t_check_page(pg, exp[k], k);
		if (bad >= 0)
			return k * PG + bad;
		if (step > 1 && k + step >= n && k != n - 1)
			k = n - 1 - step;	/* the last page too */
	}
	return -1;
}

static uint64_t *exp_alloc(size_t n, uint64_t v)
{
	uint64_t *e = malloc(n * sizeof(*e));

	for (size_t k = 0; e && k < n; k++)
		e[k] = v;
	return e;
}

static long read_kv(const char *path, const char *key)
{
	FILE *f = fopen(path, "re");
	char line[256];
	size_t kl = strlen(key);
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static long read_long(const char *path)
{
	char b[64];

	return t_read_str(path, b, sizeof(b)) ? -1 : strtol(b, NULL, 10);
}

/* A field (Swap, Locked...) summed over the smaps VMAs intersecting [lo, hi). */
static long smaps_field(const void *lo, size_t len, const char *key)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	uintptr_t l = (uintptr_t)lo, h = l + len;
	char line[512];
	size_t kl = strlen(key);
	int in = 0;
	long sum = 0, v;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx ", &s, &e) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = e > l && s < h;
		else if (in && !strncmp(line, key, kl) && line[kl] == ':' &&
			 sscanf(line + kl + 1, "%ld", &v) == 1)
			sum += v;
	}
	fclose(f);
	return sum;
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
	return t_xorshift64(&rng_state);
}

/* ---------------------------------------------------------------------- */
/* 1. fork() before moves                                                  */

#define S1_LEN		(8 * SZ_1M)
#define S1_NP		(S1_LEN / PG)
#define S1_MOVES	32

static void sc_fork_before(const char *name, int mis)
{
	struct slots sl;
	uint64_t *exp = exp_alloc(S1_NP, seed), seed_c = t_mix64(seed + 1) | 1,
		 seed_p = t_mix64(seed + 2) | 1;
	int done[2], st = 0, at = 0, moved = 0;
	long bad = -1;
	char *p;
	pid_t pid;

	if (slots_init(&sl, S1_LEN, 2, mis << 1) || !(p = slot_map(&sl, 0)) ||
	    !exp || pipe(done)) {
		tap_ok(0, "%s: set up", name);
		return;
	}
	madvise(p, S1_LEN, MADV_NOHUGEPAGE);
	t_fill_pattern(p, S1_LEN, seed);
	pid = fork();
	if (pid == 0) {
		/* The child: its snapshot, then its own copy, while the parent moves. */
		char c;
		int code = 0;

		close(done[1]);
		if (t_verify_pattern(p, S1_LEN, seed, 0) >= 0)
			code |= 1;
		t_fill_pattern(p, S1_LEN, seed_c);
		if (t_verify_pattern(p, S1_LEN, seed_c, 0) >= 0)
			code |= 2;
		if (read(done[0], &c, 1) != 1)
			code |= 8;
		if (t_verify_pattern(p, S1_LEN, seed_c, 0) >= 0)
			code |= 4;
		_exit(code);
	}
	close(done[0]);
	for (int i = 0; i < S1_MOVES && pid > 0; i++) {
		char *q = move_to(p, S1_LEN, sl.s[at ^ 1]);

		if (q != sl.s[at ^ 1]) {
			tap_diag("%s: move %d: %s", name, i, strerror(errno));
			break;
		}
		p = q;
		at ^= 1;
		moved++;
		if (bad < 0 && (bad = check_pages(p, S1_NP, exp, 3)) >= 0)
			tap_diag("%s: after move %d: bad at %#lx", name, i, bad);
		/* Break COW on a slice of the pages, at the new address. */
		for (size_t k = i; k < S1_NP; k += S1_MOVES) {
			t_pattern_page((uint64_t *)(p + k * PG), seed_p, k);
			exp[k] = seed_p;
		}
	}
	tap_ok(pid > 0 && moved == S1_MOVES, "%s: %d moves with a child sharing the pages",
	       name, moved);
	tap_ok(bad < 0, "%s: parent's data right after every move", name);
	if (write(done[1], "x", 1) != 1)
		tap_diag("%s: pipe write failed", name);
	close(done[1]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	if (!tap_ok(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		    "%s: child's COW snapshot unchanged, its own copy written and kept", name))
		tap_diag("%s: child status %#x (exit bits: 1 snapshot, 2 own write, 4 own copy at end)",
			 name, st);
	tap_ok(check_pages(p, S1_NP, exp, 1) < 0, "%s: parent's data intact after child exit", name);
	t_fill_pattern(p, S1_LEN, seed_c);
	p = move_to(p, S1_LEN, sl.s[at ^ 1]);
	tap_ok(p != MAP_FAILED && t_verify_pattern(p, S1_LEN, seed_c, 0) < 0,
	       "%s: rewritten and moved once more, intact", name);
	t_release(&sl.a);
	free(exp);
}

/* ---------------------------------------------------------------------- */
/* 2. fork() during moves                                                  */

#define S2_LEN		(8 * SZ_1M)
#define S2_STATIC	(4 * SZ_1M)
#define S2_FORKS	32

static struct {
	pthread_mutex_t lock;
	char *cur;
	char *slot[2];
	char *stat;
	atomic_int stop;
	long moves, move_err, bad;
	int forks, child_bad, child_codes;
} s2 = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int s2_child(char *published)
{
	uint64_t v;
	char *m = published;

	if (t_verify_pattern(s2.stat, S2_STATIC, seed ^ 0x55, 0) >= 0)
		return 1;
	if (t_probe_read(m, &v))
		m = m == s2.slot[0] ? s2.slot[1] : s2.slot[0];
	if (t_probe_read(m, &v))
		return 3;
	if (t_verify_pattern(m, S2_LEN, seed, 2 * PG) >= 0)
		return 2;
	return 0;
}

static void *s2_forker(void *arg)
{
	(void)arg;
	for (int i = 0; i < S2_FORKS; i++) {
		int strict = !(i & 1), st = 0;
		char *pub;
		pid_t pid;

		pthread_mutex_lock(&s2.lock);
		pub = s2.cur;
		if (!strict)
			pthread_mutex_unlock(&s2.lock);
		pid = t_raw_fork();
		if (pid == 0) {
			int c = s2_child(pub);

			/* Strictly published: the region must be at that address. */
			if (!c && strict && pub != s2.cur)
				c = 4;
			syscall(SYS_exit_group, c);
		}
		if (strict)
			pthread_mutex_unlock(&s2.lock);
		if (pid < 0)
			break;
		s2.forks++;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			s2.child_bad++;
			s2.child_codes = st;
		}
		usleep(2000);
	}
	atomic_store(&s2.stop, 1);
	return NULL;
}

static void *s2_mover(void *arg)
{
	int at = 0;

	(void)arg;
	while (!atomic_load(&s2.stop) && s2.moves < 2000) {
		char *q;

		pthread_mutex_lock(&s2.lock);
		q = move_to(s2.cur, S2_LEN, s2.slot[at ^ 1]);
		if (q == s2.slot[at ^ 1]) {
			s2.cur = q;
			at ^= 1;
			s2.moves++;
			if (t_verify_pattern(q, S2_LEN, seed, 64 * PG) >= 0)
				s2.bad++;
		} else {
			s2.move_err++;
		}
		pthread_mutex_unlock(&s2.lock);
		if (s2.move_err)
			break;
		usleep(500);
	}
	return NULL;
}

static void sc_fork_during(const char *name, int mis)
{
	struct slots sl;
	struct t_area sa;
	pthread_t t[2];
	int nt = 0;

	s2.stop = 0;
	s2.moves = s2.move_err = s2.bad = 0;
	s2.forks = s2.child_bad = s2.child_codes = 0;
	if (slots_init(&sl, S2_LEN, 2, mis << 1) || !(s2.cur = slot_map(&sl, 0)) ||
	    !(s2.stat = t_map_aligned(S2_STATIC, SZ_2M, RW, ANON, -1, 0, &sa))) {
		tap_ok(0, "%s: set up", name);
		return;
	}
	s2.slot[0] = sl.s[0];
	s2.slot[1] = sl.s[1];
	madvise(s2.cur, S2_LEN, MADV_NOHUGEPAGE);
	t_fill_pattern(s2.cur, S2_LEN, seed);
	t_fill_pattern(s2.stat, S2_STATIC, seed ^ 0x55);
	nt += !pthread_create(&t[nt], NULL, s2_mover, NULL);
	nt += !pthread_create(&t[nt], NULL, s2_forker, NULL);
	if (nt < 2)
		atomic_store(&s2.stop, 1);
	while (nt)
		pthread_join(t[--nt], NULL);
	tap_diag("%s: %ld moves, %d forks", name, s2.moves, s2.forks);
	tap_ok(s2.forks == S2_FORKS && s2.moves > 0 && !s2.move_err,
	       "%s: %d forks while moving (%ld moves, %ld failed)", name, s2.forks,
	       s2.moves, s2.move_err);
	if (s2.child_bad)
		tap_diag("%s: last bad child status %#x (exit 1 static, 2 moved, 3 not found, 4 moved away)",
			 name, s2.child_codes);
	tap_ok(!s2.child_bad, "%s: every child saw both regions intact (%d did not)", name,
	       s2.child_bad);
	tap_ok(!s2.bad && t_verify_pattern(s2.cur, S2_LEN, seed, 0) < 0 &&
	       t_verify_pattern(s2.stat, S2_STATIC, seed ^ 0x55, 0) < 0,
	       "%s: parent's regions intact", name);
	t_release(&sl.a);
	t_release(&sa);
}

/* ---------------------------------------------------------------------- */
/* 3. madvise / mprotect / munmap racing                                   */

#define S3_LEN		(8 * SZ_1M)
#define S3_NP		(S3_LEN / PG)
#define S3_NB		(4 * SZ_1M)
#define S3_NBP		(S3_NB / PG)
#define S3_MOVES	80

static struct {
	pthread_mutex_t lock;
	char *cur;
	uint64_t *mexp;		/* the moving region, under lock */
	char *nb[3];		/* below slot 0, between, above slot 1 */
	uint64_t *nexp[3];
	atomic_int stop;
	long m_ops, nb_ops[3], nb_bad[3], m_bad;
	long madv_einval;
	long prot_err, remap_err;
} s3 = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *s3_madv_moving(void *arg)
{
	uint64_t r = t_mix64(seed ^ 0x31) | 1;

	(void)arg;
	while (!atomic_load(&s3.stop)) {
		size_t k = t_xorshift64(&r) % S3_NP, n = 1 + t_xorshift64(&r) % 32;

		if (k + n > S3_NP)
			n = S3_NP - k;
		pthread_mutex_lock(&s3.lock);
		if (t_xorshift64(&r) % 3 == 0) {
			t_fill_pattern_off(s3.cur + k * PG, n * PG, seed, k);
			for (size_t i = k; i < k + n; i++)
				s3.mexp[i] = seed;
		} else if (!madvise(s3.cur + k * PG, n * PG, MADV_DONTNEED)) {
			for (size_t i = k; i < k + n; i++)
				s3.mexp[i] = 0;
		}
		s3.m_ops++;
		pthread_mutex_unlock(&s3.lock);
		usleep(300);
	}
	return NULL;
}

static void s3_nb_check(int j, size_t k, size_t n)
{
	for (size_t i = k; i < k + n; i++) {
		uint64_t e = s3.nexp[j][i];
		const char *pg = s3.nb[j] + i * PG;
		int ok = e == 0 ? t_verify_zero(pg, PG, 0) < 0 :
			 e == EITHER ? t_check_page(pg, seed, i) < 0 ||
				       t_verify_zero(pg, PG, 0) < 0 :
			 t_check_page(pg, e, i) < 0;

		if (!ok && s3.nb_bad[j]++ == 0)
			tap_diag("neighbour %d page %zu wrong (expected %s)", j, i,
				 e == 0 ? "zero" : e == EITHER ? "pattern or zero" : "pattern");
	}
}

/* Neighbours 0 and 2: madvise DONTNEED / FREE / PAGEOUT and rewrites. */
static void *s3_nb_madv(void *arg)
{
	uint64_t r = t_mix64(seed ^ 0x32) | 1;

	(void)arg;
	while (!atomic_load(&s3.stop)) {
		int j = t_xorshift64(&r) & 1 ? 2 : 0, op = t_xorshift64(&r) % 4;
		size_t k = t_xorshift64(&r) % S3_NBP, n = 1 + t_xorshift64(&r) % 64;
		char *p;

		if (k + n > S3_NBP)
			n = S3_NBP - k;
		p = s3.nb[j] + k * PG;
		if (op == 0) {
			if (!madvise(p, n * PG, MADV_DONTNEED))
				for (size_t i = k; i < k + n; i++)
					s3.nexp[j][i] = 0;
		} else if (op == 1) {
			if (!madvise(p, n * PG, MADV_FREE)) {
				for (size_t i = k; i < k + n; i++)
					if (s3.nexp[j][i])
						s3.nexp[j][i] = EITHER;
			} else if (errno == EINVAL) {
				s3.madv_einval++;
			}
		} else if (op == 2) {
			if (madvise(p, n * PG, MADV_PAGEOUT) && errno == EINVAL)
				s3.madv_einval++;
		} else {
			t_fill_pattern_off(p, n * PG, seed, k);
			for (size_t i = k; i < k + n; i++)
				s3.nexp[j][i] = seed;
		}
		s3_nb_check(j, k, n);
		s3.nb_ops[j]++;
		usleep(200);
	}
	return NULL;
}

/* Neighbour 1 (between the slots): mprotect toggles and munmap+mmap. */
static void *s3_nb_prot(void *arg)
{
	uint64_t r = t_mix64(seed ^ 0x33) | 1;
	char *nb = s3.nb[1];

	(void)arg;
	for (long it = 0; !atomic_load(&s3.stop); it++) {
		size_t k = t_xorshift64(&r) % S3_NBP, n = 1 + t_xorshift64(&r) % 128;

		if (k + n > S3_NBP)
			n = S3_NBP - k;
		if (it % 8 == 7) {
			if (munmap(nb, S3_NB) ||
			    mmap(nb, S3_NB, RW, ANON | MAP_FIXED_NOREPLACE, -1, 0) != nb) {
				s3.remap_err++;
				break;
			}
			for (size_t i = 0; i < S3_NBP; i++)
				s3.nexp[1][i] = 0;
			for (size_t i = 0; i < S3_NBP; i += 2) {
				t_pattern_page((uint64_t *)(nb + i * PG), seed, i);
				s3.nexp[1][i] = seed;
			}
		} else {
			/* The whole neighbour, then a part of it (splitting it). */
			char *p = it & 1 ? nb + k * PG : nb;
			size_t l = it & 1 ? n * PG : S3_NB;

			if (mprotect(p, l, PROT_READ))
				s3.prot_err++;
			s3_nb_check(1, 0, S3_NBP);
			if (mprotect(p, l, RW))
				s3.prot_err++;
			t_fill_pattern_off(nb + k * PG, n * PG, seed, k);
			for (size_t i = k; i < k + n; i++)
				s3.nexp[1][i] = seed;
		}
		s3_nb_check(1, k, n);
		s3.nb_ops[1]++;
		usleep(500);
	}
	return NULL;
}

static void sc_madvise_race(const char *name, int mis)
{
	struct t_area a;
	pthread_t t[3];
	char *slot[2], *base;
	uintptr_t b;
	int nt = 0, at = 0, moved = 0;
	long bad = -1;

	/* [nb0 4M][slot0 8M][nb1 4M(+4K)][slot1 8M][nb2 4M] */
	if (!t_reserve(3 * S3_NB + 2 * S3_LEN + 2 * SZ_2M + 2 * PG, &a)) {
		tap_ok(0, "%s: set up", name);
		return;
	}
	b = T_ALIGN_UP((uintptr_t)a.base + PG, SZ_2M);
	base = (char *)b;
	s3.nb[0] = base;
	slot[0] = base + S3_NB;
	s3.nb[1] = slot[0] + S3_LEN;
	slot[1] = s3.nb[1] + S3_NB + (mis ? PG : 0);
	s3.nb[2] = slot[1] + S3_LEN;
	s3.stop = 0;
	s3.m_ops = s3.m_bad = s3.madv_einval = s3.prot_err = s3.remap_err = 0;
	memset(s3.nb_ops, 0, sizeof(s3.nb_ops));
	memset(s3.nb_bad, 0, sizeof(s3.nb_bad));
	s3.mexp = exp_alloc(S3_NP, seed);
	for (int j = 0; j < 3; j++) {
		s3.nexp[j] = exp_alloc(S3_NBP, seed);
		if (mmap(s3.nb[j], S3_NB, RW, ANON | MAP_FIXED, -1, 0) == MAP_FAILED)
			s3.nexp[j] = NULL;
		else
			t_fill_pattern(s3.nb[j], S3_NB, seed);
	}
	s3.cur = mmap(slot[0], S3_LEN, RW, ANON | MAP_FIXED, -1, 0);
	if (s3.cur == MAP_FAILED || !s3.mexp || !s3.nexp[0] || !s3.nexp[1] || !s3.nexp[2]) {
		tap_ok(0, "%s: set up", name);
		t_release(&a);
		return;
	}
	madvise(base, slot[1] + S3_LEN + S3_NB - base, MADV_NOHUGEPAGE);
	t_fill_pattern(s3.cur, S3_LEN, seed);

	nt += !pthread_create(&t[nt], NULL, s3_madv_moving, NULL);
	nt += !pthread_create(&t[nt], NULL, s3_nb_madv, NULL);
	nt += !pthread_create(&t[nt], NULL, s3_nb_prot, NULL);
	for (int i = 0; i < S3_MOVES && nt == 3; i++) {
		char *q;

		pthread_mutex_lock(&s3.lock);
		q = move_to(s3.cur, S3_LEN, slot[at ^ 1]);
		if (q == slot[at ^ 1]) {
			s3.cur = q;
			at ^= 1;
			moved++;
			if (bad < 0 && (bad = check_pages(q, S3_NP, s3.mexp, 5)) >= 0)
				tap_diag("%s: after move %d: bad at %#lx", name, i, bad);
		} else {
			tap_diag("%s: move %d: %s", name, i, strerror(errno));
		}
		pthread_mutex_unlock(&s3.lock);
		if (q == MAP_FAILED)
			break;
		usleep(3000);
	}
	atomic_store(&s3.stop, 1);
	while (nt)
		pthread_join(t[--nt], NULL);
	tap_diag("%s: %d moves; DONTNEED/rewrites on the mover %ld; neighbour ops %ld/%ld/%ld; madvise EINVAL %ld",
		 name, moved, s3.m_ops, s3.nb_ops[0], s3.nb_ops[1], s3.nb_ops[2], s3.madv_einval);
	tap_ok(moved == S3_MOVES, "%s: %d moves with the neighbours churning", name, moved);
	tap_ok(!s3.prot_err && !s3.remap_err, "%s: mprotect and munmap+mmap of the neighbour worked",
	       name);
	tap_ok(bad < 0, "%s: moving region right after every move (DONTNEEDed pages zero)", name);
	tap_ok(check_pages(s3.cur, S3_NP, s3.mexp, 1) < 0,
	       "%s: moving region intact at the end: kept pages keep their pattern, DONTNEEDed read zero",
	       name);
	for (int j = 0; j < 3; j++)
		s3_nb_check(j, 0, S3_NBP);
	tap_ok(!s3.nb_bad[0] && !s3.nb_bad[1] && !s3.nb_bad[2],
	       "%s: neighbours consistent throughout (%ld/%ld/%ld bad pages)", name,
	       s3.nb_bad[0], s3.nb_bad[1], s3.nb_bad[2]);
	t_release(&a);
	free(s3.mexp);
	for (int j = 0; j < 3; j++)
		free(s3.nexp[j]);
}

/* ---------------------------------------------------------------------- */
/* 4. mlock                                                                */

#define S4_LEN		(8 * SZ_1M)

/* 0 or a bit set per failed check; as tap lines in the parent, as an exit code in a child. */
static int mlock_run(const char *name, int how, int report)
{
	struct slots sl;
	char *p, *q;
	int fails = 0, at = 0;
	long lk;

#define CHK(bit, cond, ...) do { int _c = (cond); if (!_c) fails |= (bit); \
		if (report) tap_ok(_c, __VA_ARGS__); } while (0)

	if (slots_init(&sl, S4_LEN, 3, 1 << 2) || !(p = slot_map(&sl, 0)))
		return 0x100;
	t_fill_pattern(p, S4_LEN, seed);
	if (how == 0)
		lk = syscall(SYS_mlock2, p, S4_LEN, 0);
	else if (how == 1)
		lk = syscall(SYS_mlock2, p, S4_LEN, MLOCK_ONFAULT);
	else
		lk = mlockall(MCL_CURRENT | MCL_FUTURE);
	CHK(1, !lk, "%s: locked (%s)", name, lk ? strerror(errno) : "ok");
	for (int i = 0; i < 6; i++) {
		int to = i % 3 == 2 ? 2 : at ^ 1;	/* aligned, and to the misaligned slot */

		q = move_to(p, S4_LEN, sl.s[to]);
		if (q != sl.s[to]) {
			CHK(2, 0, "%s: move %d (%s)", name, i, strerror(errno));
			break;
		}
		p = q;
		at = to == 2 ? 0 : to;
		if (to == 2) {
			q = move_to(p, S4_LEN, sl.s[0]);
			if (q != sl.s[0]) {
				CHK(2, 0, "%s: move %d back (%s)", name, i, strerror(errno));
				break;
			}
			p = q;
		}
	}
	lk = smaps_field(p, S4_LEN, "Locked");
	CHK(4, lk == (long)(S4_LEN >> 10), "%s: still locked after the moves (Locked %ld kB of %lu)",
	    name, lk, S4_LEN >> 10);
	CHK(8, t_verify_pattern(p, S4_LEN, seed, 0) < 0, "%s: data intact after the moves", name);
	errno = 0;
	q = t_remap(fd, p, S4_LEN, 2 * S4_LEN, MREMAP_MAYMOVE, NULL, NULL);
	if (t_nodev()) {
		CHK(0, q != MAP_FAILED, "%s: growth (mremap(2) in no-device mode)", name);
		if (q != MAP_FAILED)
			p = q;
	} else {
		CHK(16, q == MAP_FAILED && errno == EOPNOTSUPP,
		    "%s: locked growth declined with EOPNOTSUPP (got %s)", name,
		    q == MAP_FAILED ? t_errname(errno) : "success");
		if (q != MAP_FAILED)
			p = q;
		lk = smaps_field(p, S4_LEN, "Locked");
		CHK(32, lk == (long)(S4_LEN >> 10) && t_verify_pattern(p, S4_LEN, seed, 0) < 0,
		    "%s: memory intact and locked after the declined growth", name);
		q = t_remap(fd, p, S4_LEN, S4_LEN + SZ_2M, MF, sl.s[1], NULL);
		CHK(64, q == MAP_FAILED && errno == EOPNOTSUPP &&
			t_verify_pattern(p, S4_LEN, seed, 0) < 0,
		    "%s: locked growth with MAYMOVE|FIXED declined too, memory intact (got %s)",
		    name, q == MAP_FAILED ? t_errname(errno) : "success");
	}
	if (how == 2)
		munlockall();
	t_release(&sl.a);
	return fails;
#undef CHK
}

static void sc_mlock(const char *name, int how)
{
	if (how < 2) {
		mlock_run(name, how, 1);
	} else {
		/* mlockall() in a child, so that the rest of the run is not locked. */
		pid_t pid = fork();
		int st = 0;

		if (pid == 0)
			_exit(mlock_run(name, 2, 0) & 0xff);
		if (pid > 0)
			waitpid(pid, &st, 0);
		if (!tap_ok(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
			    "%s: locked moves keep the lock and data; locked growth declined", name))
			tap_diag("%s: child status %#x (bits: 1 lock, 2 move, 4 Locked, 8 data, 16/64 growth not declined, 32 after growth)",
				 name, st);
	}
}

/* ---------------------------------------------------------------------- */
/* 5. Swap                                                                 */

#define S5_LEN		(16 * SZ_1M)

static void sc_swap(const char *name, int unused)
{
	struct slots sl;
	const char *why = t_swap_setup();
	char *p, *q;
	long sw, sw2;

	(void)unused;
	if (*why) {
		tap_skip_test(why, "%s: paged-out memory moved and faulted back", name);
		return;
	}
	if (slots_init(&sl, S5_LEN, 2, 1 << 1) || !(p = slot_map(&sl, 0))) {
		tap_ok(0, "%s: set up", name);
		return;
	}
	madvise(p, S5_LEN, MADV_NOHUGEPAGE);
	t_fill_pattern(p, S5_LEN, seed);
	if (madvise(p, S5_LEN, MADV_PAGEOUT)) {
		tap_skip_test("MADV_PAGEOUT not supported", "%s: paged-out memory moved", name);
		t_release(&sl.a);
		goto out;
	}
	sw = smaps_field(p, S5_LEN, "Swap");
	/* The scenario's premise: without swap entries it moves plain memory. */
	tap_ok(sw > 0, "%s: MADV_PAGEOUT put the region in swap (%ld kB of %lu)", name, sw,
	       S5_LEN >> 10);
	q = move_to(p, S5_LEN, sl.s[1]);
	tap_ok(q == sl.s[1], "%s: moved (misaligned) while paged out", name);
	if (q == MAP_FAILED)
		goto rel;
	p = q;
	sw2 = smaps_field(p, S5_LEN, "Swap");
	tap_ok(sw2 > 0, "%s: swap entries moved with it (Swap %ld kB before, %ld after)",
	       name, sw, sw2);
	tap_ok(t_verify_pattern(p, S5_LEN, seed, 0) < 0, "%s: faulted back intact", name);
	madvise(p, S5_LEN, MADV_PAGEOUT);
	q = move_to(p, S5_LEN, sl.s[0]);
	tap_ok(q == sl.s[0] && t_verify_pattern(q, S5_LEN, seed, 0) < 0,
	       "%s: paged out again, moved back (aligned), faulted back intact", name);
rel:
	t_release(&sl.a);
out:
	t_swap_off();
}

/* ---------------------------------------------------------------------- */
/* 6. KSM                                                                  */

#define S6_LEN		(4 * SZ_1M)
#define KSM		"/sys/kernel/mm/ksm/"

static void sc_ksm(const char *name, int unused)
{
	char run0[16] = "0", scan0[16] = "100", sleep0[16] = "20";
	struct slots sl;
	char *a, *b, *q;
	long sharing = 0;
	double t0;

	(void)unused;
	if (access(KSM "run", W_OK)) {
		tap_skip_test("no /sys/kernel/mm/ksm/run", "%s: mergeable range declined", name);
		return;
	}
	if (slots_init(&sl, S6_LEN, 3, 0) || !(a = slot_map(&sl, 0)) || !(b = slot_map(&sl, 1))) {
		tap_ok(0, "%s: set up", name);
		return;
	}
	t_fill_pattern(a, S6_LEN, seed);
	t_fill_pattern(b, S6_LEN, seed);
	if (madvise(a, S6_LEN, MADV_MERGEABLE) || madvise(b, S6_LEN, MADV_MERGEABLE)) {
		tap_skip_test(strerror(errno), "%s: MADV_MERGEABLE", name);
		t_release(&sl.a);
		return;
	}
	t_read_str(KSM "run", run0, sizeof(run0));
	t_read_str(KSM "pages_to_scan", scan0, sizeof(scan0));
	t_read_str(KSM "sleep_millisecs", sleep0, sizeof(sleep0));
	t_write_str(KSM "pages_to_scan", "5000");
	t_write_str(KSM "sleep_millisecs", "10");
	tap_ok(!t_write_str(KSM "run", "1"), "%s: ksmd started", name);
	for (t0 = t_now(); t_now() - t0 < 8; usleep(100000))
		if ((sharing = read_long(KSM "pages_sharing")) > 0 && t_now() - t0 > 1)
			break;
	/* The scenario's premise: the range is merged when it is moved. */
	tap_ok(sharing > 0, "%s: ksmd merged the twins (pages_sharing %ld after %.1f s)", name,
	       sharing, t_now() - t0);
	errno = 0;
	q = t_remap(fd, a, S6_LEN, S6_LEN, MF, sl.s[2], NULL);
	if (t_nodev()) {
		tap_skip_test("no-device mode", "%s: ioctl declines a mergeable range", name);
		if (q != MAP_FAILED)
			a = q;
	} else {
		tap_ok(q == MAP_FAILED && errno == EOPNOTSUPP,
		       "%s: the ioctl declines a mergeable range with EOPNOTSUPP (got %s)", name,
		       q == MAP_FAILED ? t_errname(errno) : "success");
		if (q != MAP_FAILED)
			a = q;
		tap_ok(t_verify_pattern(a, S6_LEN, seed, 0) < 0 &&
		       t_verify_pattern(b, S6_LEN, seed, 0) < 0,
		       "%s: memory intact after the decline", name);
		q = t_mremap(a, S6_LEN, S6_LEN, MF, sl.s[2]);
		tap_ok(q == sl.s[2] && t_verify_pattern(q, S6_LEN, seed, 0) < 0,
		       "%s: mremap(2) moves the merged range, intact", name);
		if (q != MAP_FAILED)
			a = q;
	}
	/* Write to merged pages (COW out of the KSM page) and check the twin. */
	t_fill_pattern(a, S6_LEN / 2, seed ^ 7);
	tap_ok(t_verify_pattern(a, S6_LEN / 2, seed ^ 7, 0) < 0 &&
	       t_verify_pattern(b, S6_LEN, seed, 0) < 0, "%s: writes after merge stay private", name);
	t_write_str(KSM "run", "2");
	for (t0 = t_now(); t_now() - t0 < 5 && read_long(KSM "pages_sharing") > 0;)
		usleep(50000);
	t_write_str(KSM "run", "0");
	t_write_str(KSM "pages_to_scan", scan0);
	t_write_str(KSM "sleep_millisecs", sleep0);
	if (strcmp(run0, "0"))
		t_write_str(KSM "run", run0);
	tap_ok(t_verify_pattern(b, S6_LEN, seed, 0) < 0, "%s: intact after unmerge", name);
	t_release(&sl.a);
}

/* ---------------------------------------------------------------------- */
/* 7. THP and khugepaged                                                   */

#define S7_LEN		(4 * PMD_SZ)	/* 8 MiB with 4 KiB pages */
#define S7_NP		(S7_LEN / PG)
#define KHP		"/sys/kernel/mm/transparent_hugepage/khugepaged/"

static struct {
	pthread_mutex_t lock;
	char *cur;
	uint64_t *exp;
	atomic_int stop;
	long ops, bad;
} s7 = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *s7_toucher(void *arg)
{
	uint64_t r = t_mix64(seed ^ 0x77) | 1;

	(void)arg;
	while (!atomic_load(&s7.stop)) {
		pthread_mutex_lock(&s7.lock);
		for (int i = 0; i < 16; i++) {
			size_t k = t_xorshift64(&r) % S7_NP;
			char *pg = s7.cur + k * PG;

			if ((s7.exp[k] ? t_check_page(pg, s7.exp[k], k) >= 0 :
					 t_verify_zero(pg, PG, 0) >= 0) && s7.bad++ == 0)
				tap_diag("thp toucher: page %zu wrong", k);
			if (!s7.exp[k] && t_xorshift64(&r) % 4 == 0) {
				t_pattern_page((uint64_t *)pg, seed, k);
				s7.exp[k] = seed;
			}
			s7.ops++;
		}
		pthread_mutex_unlock(&s7.lock);
		usleep(200);
	}
	return NULL;
}

static void sc_thp(const char *name, int mis)
{
	char sleep0[16], scan0[16], alloc0[16];
	int have_khp = !access(KHP "scan_sleep_millisecs", W_OK);
	int moves = mis ? 40 : 100, moved = 0, at = 0;
	long bad = -1, huge0, huge1, hmax = 0;
	struct slots sl;
	pthread_t t;
	char *p;

	if (access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK)) {
		tap_skip_test("no transparent hugepages", "%s", name);
		return;
	}
	if (slots_init(&sl, S7_LEN, 2, mis << 1) || !(p = slot_map(&sl, 0)) ||
	    !(s7.exp = exp_alloc(S7_NP, 0))) {
		tap_ok(0, "%s: set up", name);
		return;
	}
	/* Touch part of it as small pages first, then let khugepaged at it. */
	madvise(p, S7_LEN, MADV_NOHUGEPAGE);
	for (size_t k = 0; k < S7_NP; k++)
		if (k % PT_ENTRIES < PT_ENTRIES / 2 && k % 3 == 0) {
			t_pattern_page((uint64_t *)(p + k * PG), seed, k);
			s7.exp[k] = seed;
		}
	if (have_khp) {
		t_read_str(KHP "scan_sleep_millisecs", sleep0, sizeof(sleep0));
		t_read_str(KHP "pages_to_scan", scan0, sizeof(scan0));
		t_read_str(KHP "alloc_sleep_millisecs", alloc0, sizeof(alloc0));
		t_write_str(KHP "scan_sleep_millisecs", "10");
		t_write_str(KHP "alloc_sleep_millisecs", "10");
		t_write_str(KHP "pages_to_scan", "65536");
	} else {
		tap_diag("%s: no khugepaged tunables: collapse left to defaults", name);
	}
	madvise(p, S7_LEN, MADV_HUGEPAGE);
	/* Misaligned: let khugepaged collapse first, so that the moves split THPs. */
	for (double t0 = t_now(); mis && t_now() - t0 < 4; usleep(50000))
		if (smaps_field(p, S7_LEN, "AnonHugePages") > 0)
			break;
	huge0 = smaps_field(p, S7_LEN, "AnonHugePages");
	s7.cur = p;
	s7.stop = 0;
	s7.ops = s7.bad = 0;
	if (pthread_create(&t, NULL, s7_toucher, NULL)) {
		tap_ok(0, "%s: thread", name);
		goto out;
	}
	for (int i = 0; i < moves; i++) {
		char *q;
		long h;

		pthread_mutex_lock(&s7.lock);
		q = move_to(s7.cur, S7_LEN, sl.s[at ^ 1]);
		if (q == sl.s[at ^ 1]) {
			s7.cur = q;
			at ^= 1;
			moved++;
			if (bad < 0 && (bad = check_pages(q, S7_NP, s7.exp, 7)) >= 0)
				tap_diag("%s: after move %d: bad at %#lx", name, i, bad);
		} else {
			tap_diag("%s: move %d: %s", name, i, strerror(errno));
		}
		pthread_mutex_unlock(&s7.lock);
		if (q == MAP_FAILED)
			break;
		if (i % 10 == 0 && (h = smaps_field(q, S7_LEN, "AnonHugePages")) > hmax)
			hmax = h;
		usleep(5000);
	}
	atomic_store(&s7.stop, 1);
	pthread_join(t, NULL);
	huge1 = smaps_field(s7.cur, S7_LEN, "AnonHugePages");
	tap_diag("%s: AnonHugePages %ld kB at start, max %ld seen, %ld at end; toucher %ld accesses",
		 name, huge0, hmax, huge1, s7.ops);
	/*
	 * The premise: huge pages were there to move (aligned: collapsed
	 * while moving) or to split (misaligned: collapsed before).
	 */
	tap_ok(mis ? huge0 > 0 : hmax > 0 || huge1 > 0,
	       "%s: THPs present %s (AnonHugePages %ld kB at start, max %ld seen)", name,
	       mis ? "before the moves" : "during the moves", huge0, hmax);
	tap_ok(moved == moves, "%s: %d moves with khugepaged and a toucher racing", name, moved);
	tap_ok(bad < 0 && !s7.bad, "%s: data right after every move and at every touch", name);
	tap_ok(check_pages(s7.cur, S7_NP, s7.exp, 1) < 0, "%s: whole region intact at the end", name);
out:
	if (have_khp) {
		t_write_str(KHP "scan_sleep_millisecs", sleep0);
		t_write_str(KHP "alloc_sleep_millisecs", alloc0);
		t_write_str(KHP "pages_to_scan", scan0);
	}
	t_release(&sl.a);
	free(s7.exp);
}

/* ---------------------------------------------------------------------- */
/* 8. The zero page and the huge zero page                                 */

#define S8_LEN		(4 * PMD_SZ)	/* 8 MiB with 4 KiB pages */

static void sc_zero(const char *name, int huge)
{
	struct slots sl;
	char *p, *q;
	int ok = 1;
	char b[16] = "";

	if (huge) {
		t_read_str("/sys/kernel/mm/transparent_hugepage/use_zero_page", b, sizeof(b));
		if (strcmp(b, "1")) {
			tap_skip_test("no huge zero page (use_zero_page is not 1)", "%s", name);
			return;
		}
	}
	if (slots_init(&sl, S8_LEN, 3, 1 << 2) || !(p = slot_map(&sl, 0))) {
		tap_ok(0, "%s: set up", name);
		return;
	}
	madvise(p, S8_LEN, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	for (size_t off = 0; off < S8_LEN; off += huge ? PMD_SZ : PG)
		(void)*(volatile uint64_t *)(p + off);
	tap_diag("%s: Rss %ld kB after reading (zero pages are not counted)", name,
		 smaps_field(p, S8_LEN, "Rss"));
	/* aligned, then misaligned, then back to aligned */
	for (int i = 1; i <= 3 && ok; i++) {
		int to = i == 3 ? 0 : i;

		q = move_to(p, S8_LEN, sl.s[to]);
		ok = q == sl.s[to];
		if (!tap_ok(ok, "%s: move to slot %d (%s)", name, to,
			    to == 2 ? "misaligned" : "aligned"))
			break;
		p = q;
		tap_ok(t_verify_zero(p, S8_LEN, 0) < 0, "%s: reads zero after the move to slot %d",
		       name, to);
	}
	if (ok) {
		t_fill_pattern(p, S8_LEN, seed);
		q = move_to(p, S8_LEN, sl.s[2]);
		tap_ok(q == sl.s[2] && t_verify_pattern(q, S8_LEN, seed, 0) < 0,
		       "%s: written after the moves, moved again, intact", name);
	}
	t_release(&sl.a);
}

/* ---------------------------------------------------------------------- */
/* 9. SIGKILL in the middle of moves                                       */

#define S9_LEN		(512 * SZ_1M)
#define S9_CHUNK	(64 * 1024)
#define S9_ROUNDS	10
#define S9_MAX_ROUNDS	40

static volatile unsigned long *s9_shared;	/* [0] moves done, [1] inside the ioctl */

static void s9_child(int ready)
{
	struct slots sl;
	char *p, *q;
	uint64_t s = seed ^ 0x99;

	if (slots_init(&sl, S9_LEN, 3, 1 << 2) || !(p = slot_map(&sl, 0)))
		_exit(2);
	madvise(p, S9_LEN, MADV_NOHUGEPAGE);
	t_touch_sparse(p, S9_LEN, s, S9_CHUNK);
	if (write(ready, "r", 1) != 1)
		_exit(2);
	for (unsigned long i = 0;; i++) {
		int to = (i + 1) % 3;

		/* The flag brackets the ioctl alone (move_to() plugs the old place after). */
		s9_shared[1] = 1;
		q = t_remap(fd, p, S9_LEN, S9_LEN, MF, sl.s[to], NULL);
		s9_shared[1] = 0;
		if (q == sl.s[to])
			mmap(p, S9_LEN, PROT_NONE, ANON | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
		s9_shared[0]++;
		if (q != sl.s[to])
			_exit(3);
		p = q;
		if (i % 4 == 3 && t_verify_sparse(p, S9_LEN, s, S9_CHUNK, 0) >= 0)
			_exit(4);
	}
}

static void sc_sigkill(const char *name, int unused)
{
	long free0 = 0, comm0 = 0, free1, comm1;
	int killed = 0, rounds = 0, inside = 0;
	unsigned long moves = 0;
	double t0 = t_now();

	(void)unused;
	s9_shared = mmap(NULL, PG, RW, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s9_shared == MAP_FAILED) {
		tap_ok(0, "%s: set up", name);
		return;
	}
	/*
	 * Round -1 is a warm-up. About a third of the kills land inside the
	 * ioctl: rounds go on past S9_ROUNDS (up to S9_MAX_ROUNDS) until one
	 * has, since that is what the scenario is about.
	 */
	for (int r = -1; r < S9_ROUNDS || (!inside && r < S9_MAX_ROUNDS); r++) {
		int pfd[2], st = 0, ready;
		struct pollfd pf;
		char c;
		pid_t pid;

		if (pipe(pfd))
			break;
		s9_shared[0] = s9_shared[1] = 0;
		pid = fork();
		if (pid == 0) {
			close(pfd[0]);
			s9_child(pfd[1]);
		}
		close(pfd[1]);
		if (pid < 0) {
			close(pfd[0]);
			break;
		}
		pf.fd = pfd[0];
		pf.events = POLLIN;
		/* A child that never got to its moves is not killed mid-move. */
		ready = poll(&pf, 1, 20000) == 1 && read(pfd[0], &c, 1) == 1;
		if (ready)
			usleep(50000 + rnd() % 150000);
		else
			tap_diag("%s: round %d: child not ready", name, r);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		if (r >= 0 && ready) {
			inside += s9_shared[1] != 0;
			moves += s9_shared[0];
		}
		close(pfd[0]);
		if (r < 0) {
			usleep(200000);
			free0 = read_kv("/proc/meminfo", "MemFree");
			comm0 = read_kv("/proc/meminfo", "Committed_AS");
		} else {
			rounds++;
		}
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			killed += r >= 0 && ready;
		else
			tap_diag("%s: round %d: child status %#x (exit 2 setup, 3 move failed, 4 data)",
				 name, r, st);
	}
	usleep(300000);
	free1 = read_kv("/proc/meminfo", "MemFree");
	comm1 = read_kv("/proc/meminfo", "Committed_AS");
	tap_diag("%s: %lu moves of 512M in all; %d of %d kills landed inside the ioctl",
		 name, moves, inside, rounds);
	munmap((void *)s9_shared, PG);
	tap_diag("%s: MemFree %ld -> %ld kB, Committed_AS %ld -> %ld kB, %.1f s", name, free0,
		 free1, comm0, comm1, t_now() - t0);
	tap_ok(rounds >= S9_ROUNDS && killed == rounds,
	       "%s: %d of %d children reaped with SIGKILL mid-move", name, killed, rounds);
	tap_ok(inside > 0, "%s: a SIGKILL landed inside the ioctl (%d of %d rounds)", name, inside,
	       rounds);
	tap_ok(free0 - free1 < 96 * 1024, "%s: MemFree did not drift down (%ld kB)", name,
	       free0 - free1);
	tap_ok(comm1 - comm0 < 32 * 1024, "%s: Committed_AS did not drift up (%ld kB)", name,
	       comm1 - comm0);
}

/* ---------------------------------------------------------------------- */

/* ---------------------------------------------------------------------- */
/* 10. FASTREMAP_IOC_MOVE racing fork, madvise, collapse, munmap           */

#define S10_GC		(3 * PMD_SZ)	/* the part the batches move in (6 MiB) */
#define S10_CHURN	PMD_SZ		/* the rest of the VMA: churned (2 MiB) */
#define S10_PAGES	(S10_GC / PG)
#define S10_BATCHES	150

static atomic_int s10_stop;
static atomic_long s10_forks, s10_churns;
static char *s10_heap;
static int s10_thp;

static void *s10_forker(void *arg)
{
	(void)arg;
	while (!atomic_load(&s10_stop)) {
		pid_t pid = t_raw_fork();

		if (pid == 0) {
			/* Hold the shared pages a little, read one, go. */
			usleep(2000);
			(void)*(volatile char *)s10_heap;
			_exit(0);
		}
		if (pid > 0) {
			waitpid(pid, NULL, 0);
			atomic_fetch_add(&s10_forks, 1);
		}
		usleep(5000);
	}
	return NULL;
}

static void *s10_churner(void *arg)
{
	char *c = s10_heap + S10_GC;
	uint64_t st = (uintptr_t)arg | 1;

	while (!atomic_load(&s10_stop)) {
		switch (t_xorshift64(&st) % 6) {
		case 0: madvise(c, S10_CHURN, MADV_DONTNEED); break;
		case 1: madvise(c, S10_CHURN, MADV_PAGEOUT); break;
		case 2: madvise(c, S10_CHURN, MADV_COLLAPSE); break;
		case 3:
			mprotect(c + S10_CHURN / 2, PG, PROT_READ);
			mprotect(c + S10_CHURN / 2, PG, RW);
			break;
		case 4:
			munmap(c + S10_CHURN / 2, S10_CHURN / 2);
			mmap(c + S10_CHURN / 2, S10_CHURN / 2, RW, ANON | MAP_FIXED, -1, 0);
			break;
		default:
			for (size_t o = 0; o < S10_CHURN / 2; o += PG)
				c[o] = 1;
			break;
		}
		atomic_fetch_add(&s10_churns, 1);
	}
	return NULL;
}

static void sc_move(const char *name, int thp)
{
	static uint64_t *tags, *work;
	static uint8_t *used;
	static struct fastremap_move_vec v[128];
	struct fastremap_move res;
	struct t_area a;
	pthread_t th[2];
	const char *why = "";
	long bad = -1, full = 0, busy = 0, busy_part = 0, other = 0;
	uint64_t moved = 0, split = 0;
	long col0;

	if (!t_move_supported(fd))
		return;
	if (!tags) {
		tags = calloc(S10_PAGES, sizeof(*tags));
		work = calloc(S10_PAGES, sizeof(*work));
		used = calloc(S10_PAGES, 1);
	}
	if (!tags || !work || !used) {
		tap_ok(0, "%s: allocate the model", name);
		return;
	}

	s10_heap = t_map_aligned(S10_GC + S10_CHURN, PMD_SZ, RW, ANON, -1, 0, &a);
	if (!s10_heap) {
		tap_ok(0, "%s: map the heap", name);
		return;
	}
	s10_thp = thp;
	col0 = t_mv_collapsed();
	if (thp)
		t_mv_holes_kept(0);
	madvise(s10_heap, S10_GC + S10_CHURN, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	for (size_t i = 0; i < S10_PAGES; i++) {
		tags[i] = 0;
		if (thp || rnd() % 2) {
			tags[i] = t_tag(seed, i);
			t_tag_fill(s10_heap + i * PG, tags[i]);
		}
	}
	if (thp)
		for (int k = 0; k < 200; k++) {
			size_t len = 1 + rnd() % 16, s = rnd() % (S10_PAGES - len);

			madvise(s10_heap + s * PG, len * PG, MADV_DONTNEED);
			memset(tags + s, 0, len * sizeof(tags[0]));
		}
	atomic_store(&s10_stop, 0);
	atomic_store(&s10_forks, 0);
	atomic_store(&s10_churns, 0);
	pthread_create(&th[0], NULL, s10_forker, NULL);
	pthread_create(&th[1], NULL, s10_churner, (void *)(uintptr_t)rnd());
	for (int b = 0; b < S10_BATCHES && bad < 0; b++) {
		uint32_t n = 0, want = 1 + rnd() % 128, skip_k;
		int r;

		memcpy(work, tags, S10_PAGES * sizeof(*work));
		memset(used, 0, S10_PAGES);
		for (int t = 0; n < want && t < 5000; t++) {
			size_t len = 1 + rnd() % 16, s = rnd() % (S10_PAGES - len);
			size_t d = rnd() % (S10_PAGES - len);

			if (t_mv_fits(work, used, used, s, d, len, 0))
				t_mv_add(&v[n++], s10_heap, work, used, used, s, d, len);
		}
		/*
		 * Written again: exclusive unless a child is alive right now.
		 * In odd batches one page is left as it is: shared still if a
		 * fork came since it was last written, so the batch may stop
		 * with EBUSY part way through a move, after pages that moved.
		 */
		skip_k = n && b % 2 ? rnd() % n : n;
		for (uint32_t k = 0; k < n; k++)
			for (uint64_t o = 0; o < v[k].len; o += PG)
				if (k != skip_k || o != v[k].len - PG)
					t_tag_fill((char *)(uintptr_t)v[k].src + o,
						tags[(v[k].src - (uintptr_t)s10_heap + o) / PG]);
		r = t_move(fd, v, n, 0, &res);
		if (!r && res.done == n)
			full++;
		else if (r && errno == EBUSY)
			busy++, busy_part += res.done_bytes > 0;
		else if (!other++)
			tap_diag("%s: batch %d of %u: %s, done %llu", name, b, n,
				 r ? strerror(errno) : "ok", (unsigned long long)res.done);
		t_mv_model(tags, (uintptr_t)s10_heap, v, n, res.done, res.done_bytes);
		moved += res.moved_pte;
		split += res.split;
		bad = t_mv_verify(s10_heap, S10_PAGES, tags, &why);
	}
	atomic_store(&s10_stop, 1);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	if (bad < 0)
		bad = t_mv_verify(s10_heap, S10_PAGES, tags, &why);
	if (thp)
		t_mv_holes_kept(1);
	tap_diag("%s: %ld batches complete, %ld stopped by EBUSY (%ld part way through a move); "
		 "%llu PTEs moved, %llu folios split; %ld forks, %ld churn calls; khugepaged "
		 "collapsed %ld pages meanwhile", name, full, busy, busy_part,
		 (unsigned long long)moved, (unsigned long long)split, atomic_load(&s10_forks),
		 atomic_load(&s10_churns), t_mv_collapsed() - col0);
	tap_ok(!other, "%s: every batch completed or stopped with EBUSY (%ld otherwise)", name,
	       other);
	if (!tap_ok(bad < 0, "%s: every page right after every batch", name))
		tap_diag("%s: page %ld: %s (its first word %#llx)", name, bad, why,
			 (unsigned long long)*(volatile uint64_t *)(s10_heap + bad * PG));
	tap_ok(full > 0 && atomic_load(&s10_forks) > 0 && atomic_load(&s10_churns) > 0,
	       "%s: batches completed while the others forked and churned", name);
	t_release(&a);
}

struct scenario {
	int num;
	const char *name;
	void (*fn)(const char *name, int arg);
	int arg;
};

/* A name's "%zu" is the page's size in KiB. */
static const struct scenario scenarios[] = {
	{ 1, "fork before moves, PMD-aligned", sc_fork_before, 0 },
	{ 1, "fork before moves, %zuK-misaligned", sc_fork_before, 1 },
	{ 2, "fork during moves, PMD-aligned", sc_fork_during, 0 },
	{ 2, "fork during moves, %zuK-misaligned", sc_fork_during, 1 },
	{ 3, "madvise/mprotect/munmap race, PMD-aligned", sc_madvise_race, 0 },
	{ 3, "madvise/mprotect/munmap race, %zuK-misaligned", sc_madvise_race, 1 },
	{ 4, "mlock2", sc_mlock, 0 },
	{ 4, "mlock2 ONFAULT", sc_mlock, 1 },
	{ 4, "mlockall MCL_CURRENT|MCL_FUTURE", sc_mlock, 2 },
	{ 5, "swap", sc_swap, 0 },
	{ 6, "KSM", sc_ksm, 0 },
	{ 7, "THP khugepaged race, PMD-aligned", sc_thp, 0 },
	{ 7, "THP khugepaged race, %zuK-misaligned", sc_thp, 1 },
	{ 8, "zero page", sc_zero, 0 },
	{ 8, "huge zero page", sc_zero, 1 },
	{ 9, "SIGKILL mid-move", sc_sigkill, 0 },
	{ 10, "MOVE batches racing fork/madvise/collapse/munmap", sc_move, 0 },
	{ 10, "MOVE batches racing fork/madvise/collapse/munmap, THP heap", sc_move, 1 },
};

int main(int argc, char **argv)
{
	const char *only = NULL;
	double t_all = t_now();
	int rounds = 1, runs = 0, failed = 0, skipped = 0;
	static char skipped_names[1024];

	t_parse_args(&argc, argv);
	if (argc > 2 && !strcmp(argv[1], "--rounds")) {
		rounds = atoi(argv[2]);
		argv[2] = argv[0];
		argv += 2;
		argc -= 2;
	}
	/* A fixed seed unless one is given ("random": a new one, printed). */
	seed = 20261130;
	if (argc > 1)
		seed = strcmp(argv[1], "random") ? strtoull(argv[1], NULL, 0) :
						   (uint64_t)time(NULL);
	seed |= 1;
	only = argc > 2 ? argv[2] : NULL;
	rng_state = t_mix64(seed) | 1;
	tap_diag("pattern seed %" PRIu64, seed);
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_probe_init();
	fd = t_open();
	if (!tap_ok(fd >= 0, "open the device (%s)", fd < 0 ? strerror(errno) : "ok"))
		return tap_done();
	for (size_t i = 0; i < rounds * ARRAY_SIZE(scenarios); i++) {
		const struct scenario *s = &scenarios[i % ARRAY_SIZE(scenarios)];
		char num[8], name[64];
		double t0;
		int fail0 = tap_fail, done0 = tap_pass + tap_fail;

		snprintf(num, sizeof(num), "%d", s->num);
		if (only) {
			const char *h = only;
			int hit = 0;

			while (*h && !hit) {
				size_t l = strcspn(h, ",");

				hit = l == strlen(num) && !strncmp(h, num, l);
				h += l + !!h[l];
			}
			if (!hit)
				continue;
		}
		t0 = t_now();
		snprintf(name, sizeof(name), s->name, PG >> 10);
		s->fn(name, s->arg);
		/* Ran: at least one case passed or failed, not only skips. */
		if (tap_pass + tap_fail == done0) {
			skipped++;
			snprintf(skipped_names + strlen(skipped_names),
				 sizeof(skipped_names) - strlen(skipped_names), "%s%d %s",
				 skipped > 1 ? ", " : "", s->num, name);
		} else {
			runs++;
		}
		failed += tap_fail != fail0;
		tap_diag("scenario %d (%s): %.2f s%s", s->num, name, t_now() - t0,
			 tap_pass + tap_fail == done0 ? " (skipped)" : "");
	}
	tap_diag("total %.2f s: %d scenarios ran, %d failed, %d skipped%s%s", t_now() - t_all,
		 runs, failed, skipped, skipped ? ": " : "", skipped_names);
	tap_diag("FR-STATS stress_scenarios=%d stress_failed=%d stress_skipped=%d", runs, failed,
		 skipped);
	close(fd);
	return tap_done();
}
