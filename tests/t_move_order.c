// SPDX-License-Identifier: GPL-2.0
/*
 * The order of the two page-table locks a move takes, against UFFDIO_MOVE
 * (6.8+). A move holds the lock of its source's page table and that of
 * its destination's at once, under mmap_lock held for write and the
 * per-VMA write locks of the VMAs it moves between; UFFDIO_MOVE runs
 * under per-VMA read locks, which it gets on every VMA the module did not
 * write-lock, and takes its two locks in the order of their addresses
 * (double_pt_lock(), move_pages_huge_pmd()), so the module must take its
 * pairs in that order too (fr_lock2()). A mover that takes them source
 * first, as mremap(2) does, deadlocks: a PTE table maps a PMD (2 MiB) and
 * a PMD table a PUD (1 GiB), so neighbouring VMAs share them; if it moves
 * S to D while UFFDIO_MOVE moves X to Y, S and X in one table and D and Y
 * in another, one of the two directions of each round trip takes the
 * pair in the other order than UFFDIO_MOVE does, and two CPUs can each
 * hold one lock and spin on the other with preemption off for good (an ABBA deadlock:
 * "BUG: soft lockup" on both).
 *
 * Each scenario runs two threads on two CPUs for a fixed time: thread A
 * moves its page (or THP) S -> D -> S with the module, thread B moves X
 * -> Y -> X with UFFDIO_MOVE; each checks its data after every move.
 * X and Y are mappings of their own (their own anon_vma, registered with a
 * userfaultfd, opened user-mode-only where the kernel allows it, as an
 * unprivileged process would); S and D are pieces of one mapping (the
 * module moves only between VMAs of one anon_vma root, and refuses
 * userfaultfd-armed ones). Scenarios:
 *   move:  FASTREMAP_IOC_MOVE of one page, S and X in one PTE table, D
 *          and Y in the next;
 *   remap: FASTREMAP_IOC_REMAP (MREMAP_MAYMOVE | MREMAP_FIXED) of one page,
 *          the same layout;
 *   thp:   FASTREMAP_IOC_MOVE of a PMD-sized THP, S and X in one PMD table
 *          (the PUD below a PUD boundary), D and Y in the next; thread
 *          B's UFFDIO_MOVE of a THP takes move_pages_huge_pmd().
 * A deadlock does not return: before the scenarios the soft-lockup
 * watchdog is set to panic after a few seconds (and to print every CPU's
 * stack, at a console log level that shows it), so that a deadlocked
 * guest stops at once with the stacks on the console and the harness
 * fails this program as not finished; the settings are restored after.
 * These sysctls patch no kernel text (toggling static keys or tracepoints
 * at run time can oops under TCG).
 *
 * --mremap: the same races with the kernel's own mremap(2) of single
 * pages (scenario pte) and of the THP (thp) in thread A. mremap(2) takes
 * the two locks in the same order as the module: on the kernels that
 * have UFFDIO_MOVE it deadlocks too. Not part of the suite: run alone in
 * a guest of its own by tests/harness/uffd-mremap-control.sh.
 *
 * Positive controls: the two threads were inside their moves at the same
 * time (else nothing raced); the module's THP move moved a THP entry
 * whole, and both THPs are still whole at the end.
 *
 * Before the races, on every kernel: the order itself, from the test
 * build's count of the pairs the module takes (order_run()): for each
 * scenario's mover and layout, a round trip hands the module a pair with
 * the source's lock above the destination's, and none is taken higher
 * address first; the count's control takes one so on purpose.
 *
 * Without UFFDIO_MOVE (6.1) the races skip.
 *
 * Usage: t_move_order [--mremap] [--only NAME] [SECONDS]
 * SECONDS: per scenario (default 8).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include "tlib.h"

/* How thread A moves; thread B always uses UFFDIO_MOVE. */
enum mover { IOC_MOVE, IOC_REMAP, SYS_MREMAP, UFFD_MOVE };
enum layout { PTE_TABLES, PMD_TABLES };

struct scenario {
	const char *name;
	enum layout layout;
	enum mover a;
	const char *title;
};

static const struct scenario suite[] = {
	{ "move", PTE_TABLES, IOC_MOVE,
	  "move: FASTREMAP_IOC_MOVE of a page against UFFDIO_MOVE, PTE tables shared" },
	{ "remap", PTE_TABLES, IOC_REMAP,
	  "remap: FASTREMAP_IOC_REMAP of a page against UFFDIO_MOVE, PTE tables shared" },
	{ "thp", PMD_TABLES, IOC_MOVE,
	  "thp: FASTREMAP_IOC_MOVE of a THP against UFFDIO_MOVE of a THP, PMD tables shared" },
};

static const struct scenario control[] = {
	{ "pte", PTE_TABLES, SYS_MREMAP,
	  "mremap pte: mremap(2) of a page against UFFDIO_MOVE, PTE tables shared" },
	{ "thp", PMD_TABLES, SYS_MREMAP,
	  "mremap thp: mremap(2) of a THP against UFFDIO_MOVE of a THP, PMD tables shared" },
};

/* Round trips each mover must make: progress, not speed. */
#define MIN_ROUNDS 10

/* One mover: a region of len bytes going a -> b -> a. */
struct racer {
	enum mover how;
	int me, cpu;
	char *a, *b;
	size_t len;
	uint64_t tag;
	double until, hard;
	/* results */
	long rounds, retries, overlaps;
	uint64_t first_thp;	/* moved_thp of the first module move */
	int failed;
	char why[200];
};

/* What S and X hold (the first and last words of their first and last pages). */
#define TAG_S	(0x5a11ULL << 32 | 1)
#define TAG_X	(0xb0b0ULL << 32 | 3)

static int fd = -1, uffd = -1;
/* Which thread is inside a move now: for the overlap control. */
static atomic_int inside[2];

/* Writes the tag into the first and last words of the first and last page. */
static void tag_region(char *p, size_t len, uint64_t tag)
{
	t_tag_fill(p, tag);
	if (len > PG)
		t_tag_fill(p + len - PG, tag ^ 0x5a5a);
}

/* 0 if the region at p holds the tag; reads that fault count as wrong. */
static int tag_ok(const char *p, size_t len, uint64_t tag)
{
	uint64_t w[4] = { 0 };

	if (t_probe_read(p, &w[0]) || t_probe_read(p + PG - 8, &w[1]))
		return -1;
	if (len > PG && (t_probe_read(p + len - PG, &w[2]) ||
			 t_probe_read(p + len - 8, &w[3])))
		return -1;
	if (w[0] != tag || w[1] != ~tag)
		return -1;
	if (len > PG && (w[2] != (tag ^ 0x5a5a) || w[3] != ~(tag ^ 0x5a5a)))
		return -1;
	return 0;
}

/* One move from -> to of r->len bytes: 0, or -1 with r->why set. */
static int move_once(struct racer *r, char *from, char *to)
{
	for (;;) {
		struct fastremap_move_vec v = { (uintptr_t)from, (uintptr_t)to, r->len };
		struct fastremap_move res;
		struct uffdio_move m = { (uintptr_t)to, (uintptr_t)from, r->len, 0, 0 };
		void *p;
		int ret = 0, e = 0;

		atomic_store(&inside[r->me], 1);
		if (atomic_load(&inside[!r->me]))
			r->overlaps++;
		switch (r->how) {
		case IOC_MOVE:
			memset(&res, 0, sizeof(res));
			ret = t_move(fd, &v, 1, 0, &res);
			e = errno;
			if (!ret && !r->rounds && from == r->a)
				r->first_thp = res.moved_thp;
			break;
		case IOC_REMAP:
			p = t_remap(fd, from, r->len, r->len, MREMAP_MAYMOVE | MREMAP_FIXED, to,
				     NULL);
			e = errno;
			ret = p == to ? 0 : -1;
			break;
		case SYS_MREMAP:
			p = t_mremap(from, r->len, r->len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
			e = errno;
			ret = p == to ? 0 : -1;
			break;
		case UFFD_MOVE:
			ret = ioctl(uffd, UFFDIO_MOVE, &m);
			e = errno;
			if (!ret && m.move != (__s64)r->len) {
				ret = -1;
				e = EIO;
			}
			break;
		}
		atomic_store(&inside[r->me], 0);
		if (!ret)
			return 0;
		/* Both movers may ask for a retry (a page locked, a racing change). */
		if (e == EAGAIN) {
			r->retries++;
			continue;
		}
		snprintf(r->why, sizeof(r->why), "move %p -> %p: %s", (void *)from, (void *)to,
			 strerror(e));
		return -1;
	}
}

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(r->cpu, &s);
	pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
	/*
	 * Past until, a mover short of MIN_ROUNDS goes on until it has them:
	 * a busy host slows a mover down, a deadlock stops it (and the
	 * watchdog panics the guest), and only the second fails the
	 * progress case. hard bounds the run.
	 */
	for (double now; (now = t_now()) < r->until ||
	     (r->rounds < MIN_ROUNDS && now < r->hard);) {
		if (move_once(r, r->a, r->b))
			break;
		if (tag_ok(r->b, r->len, r->tag)) {
			snprintf(r->why, sizeof(r->why), "data wrong at %p after a move", r->b);
			break;
		}
		if (move_once(r, r->b, r->a))
			break;
		if (tag_ok(r->a, r->len, r->tag)) {
			snprintf(r->why, sizeof(r->why), "data wrong at %p after a move", r->a);
			break;
		}
		r->rounds++;
	}
	r->failed = r->why[0] != 0;
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* The watchdog: a deadlock panics the guest in seconds, stacks printed    */

#define SYSCTL	"/proc/sys/kernel/"

static const char *const wd_names[] = {
	"softlockup_panic", "softlockup_all_cpu_backtrace", "watchdog_thresh", "printk",
};
/*
 * Soft lockups are reported after twice watchdog_thresh: 6 s. Not lower:
 * a loaded host can hold a vCPU back for a second or two.
 * printk: the console log level to 7, so that the stacks of the report
 * (printed at the default level, 4) reach the serial console; only its
 * first number is written (the others keep their values).
 */
static const char *const wd_values[] = { "1", "1", "3", "7" };
static char wd_saved[4][64];
static int wd_set;

/* Puts back what wd_arm() changed, the console level and threshold first. */
static void wd_restore(void)
{
	char path[128];

	for (int i = 3; i >= 0; i--) {
		char *v = wd_saved[i];

		if (!(wd_set & (1 << i)))
			continue;
		/* printk reads "7 4 1 7": the console level alone is put back. */
		v[strcspn(v, " \t")] = 0;
		snprintf(path, sizeof(path), SYSCTL "%s", wd_names[i]);
		t_write_str(path, v);
	}
	wd_set = 0;
}

static int wd_arm(void)
{
	char path[128], now[64] = "";
	int ok = 1;

	if (t_read_str(SYSCTL "soft_watchdog", now, sizeof(now)) || strcmp(now, "1")) {
		tap_ok(0, "the soft-lockup watchdog is on (soft_watchdog %s)",
		       now[0] ? now : "unreadable");
		return -1;
	}
	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), SYSCTL "%s", wd_names[i]);
		if (t_read_str(path, wd_saved[i], sizeof(wd_saved[i])) ||
		    t_write_str(path, wd_values[i])) {
			tap_diag("%s: cannot set it to %s", path, wd_values[i]);
			ok = 0;
			continue;
		}
		wd_set |= 1 << i;
		if (t_read_str(path, now, sizeof(now)) ||
		    strncmp(now, wd_values[i], strlen(wd_values[i])))
			ok = 0;
	}
	tap_ok(ok, "soft-lockup watchdog armed: panic after %d s, every CPU's stack printed",
	       2 * atoi(wd_values[2]));
	return ok ? 0 : -1;
}

static void wd_disarm(void)
{
	char path[128], now[64];
	int ok = 1, had = wd_set;

	wd_restore();
	for (int i = 0; i < 4; i++) {
		char *want = wd_saved[i];

		if (!(had & (1 << i)))
			continue;
		snprintf(path, sizeof(path), SYSCTL "%s", wd_names[i]);
		if (t_read_str(path, now, sizeof(now)) ||
		    strncmp(now, want, strcspn(want, " \t")))
			ok = 0;
	}
	tap_ok(ok, "watchdog settings restored");
}

/* ---------------------------------------------------------------------- */
/* The layouts                                                             */

struct setup {
	struct t_area area;
	char *s, *d, *x, *y;
	size_t len;		/* what moves: a page or a THP */
	/* for the THP checks: the mapping of S and D, and X's and Y's */
	uintptr_t sd_lo, sd_hi;
	char skip[128];
};

static int uffd_register(char *p, size_t len)
{
	struct uffdio_register reg;

	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)p;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	return ioctl(uffd, UFFDIO_REGISTER, &reg);
}

static int map_fixed(char *p, size_t len)
{
	return mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		    -1, 0) == p ? 0 : -1;
}

/*
 * PTE tables: a region of two PMDs (4 MiB of 4 KiB pages) at a PMD
 * boundary R, one mapping first. S = R + 16 pages is written before
 * anything splits the mapping, so that every piece of it has S's anon_vma
 * (the module moves S into D only within one anon_vma root). Then X (16
 * pages at R + half a PMD) and Y (at R + 1.5 PMDs) are mapped afresh, each
 * with an unmapped page on both sides so that they merge with nothing:
 * their own VMAs and anon_vmas. D = R + a PMD + 16 pages, in the piece of
 * the first mapping between them. With 4 KiB pages:
 *
 *   R        R+64K     R+1M       R+2M   R+2M+64K   R+3M        R+4M
 *   | ...S... |  ...  |X| ........ | ...D... | .... |Y| ........ |
 *   \---------- one PTE table ----/\---------- the next --------/
 */
static int setup_pte(struct setup *st, int with_xy)
{
	const size_t xy = 16 * PG;
	char *r = t_map_aligned(2 * PMD_SZ, PMD_SZ, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &st->area);

	if (!r)
		return -1;
	madvise(r, 2 * PMD_SZ, MADV_NOHUGEPAGE);
	st->len = PG;
	st->s = r + 16 * PG;
	st->d = r + PMD_SZ + 16 * PG;
	st->x = r + PMD_SZ / 2;
	st->y = r + PMD_SZ + PMD_SZ / 2;
	tag_region(st->s, PG, TAG_S);
	if (!with_xy)
		return 0;
	if (munmap(st->x - PG, xy + 2 * PG) || munmap(st->y - PG, xy + 2 * PG) ||
	    map_fixed(st->x, xy) || map_fixed(st->y, xy))
		return -1;
	tag_region(st->x, PG, TAG_X);
	if (uffd_register(st->x, xy) || uffd_register(st->y, xy))
		return -1;
	return 0;
}

/*
 * PMD tables: P at a PUD boundary; one mapping M = [P - 3 PMDs, P + 2 PMDs)
 * with MADV_HUGEPAGE, S = P - 2 PMDs its THP (written before anything
 * else, as above), D = P + a PMD; X = [P - 5 PMDs, P - 4 PMDs) and
 * Y = [P + 4 PMDs, P + 5 PMDs) mapped afresh with MADV_HUGEPAGE, X's THP
 * written. Between them the PROT_NONE reservation, which merges with
 * nothing. S and X are under one PMD table (the PUD below P), D and Y
 * under the next. (With 4 KiB pages: M = [P - 6M, P + 4M), S = P - 4M.)
 */
static int setup_thp(struct setup *st, int with_xy)
{
	char *base = t_reserve(PUD_SZ + 16 * PMD_SZ, &st->area), *p, *m;
	long thp_kb = PMD_SZ >> 10;
	struct t_range rg[2];
	struct t_smaps sm[2];

	if (!base)
		return -1;
	p = (char *)T_ALIGN_UP((uintptr_t)base + 8 * PMD_SZ, PUD_SZ);
	m = p - 3 * PMD_SZ;
	st->len = PMD_SZ;
	st->s = p - 2 * PMD_SZ;
	st->d = p + PMD_SZ;
	st->x = p - 5 * PMD_SZ;
	st->y = p + 4 * PMD_SZ;
	st->sd_lo = (uintptr_t)m;
	st->sd_hi = (uintptr_t)p + 2 * PMD_SZ;
	if (map_fixed(m, 5 * PMD_SZ) ||
	    (with_xy && (map_fixed(st->x, PMD_SZ) || map_fixed(st->y, PMD_SZ))))
		return -1;
	if (madvise(m, 5 * PMD_SZ, MADV_HUGEPAGE) ||
	    (with_xy && (madvise(st->x, PMD_SZ, MADV_HUGEPAGE) ||
			 madvise(st->y, PMD_SZ, MADV_HUGEPAGE)))) {
		snprintf(st->skip, sizeof(st->skip), "no MADV_HUGEPAGE (%s)", strerror(errno));
		return 0;
	}
	tag_region(st->s, PMD_SZ, TAG_S);
	if (with_xy)
		tag_region(st->x, PMD_SZ, TAG_X);
	rg[0] = (struct t_range){ (uintptr_t)st->s, (uintptr_t)st->s + PMD_SZ };
	rg[1] = (struct t_range){ (uintptr_t)st->x, (uintptr_t)st->x + PMD_SZ };
	if (t_smaps_ranges(rg, with_xy ? 2 : 1, sm))
		return -1;
	if (!with_xy)
		sm[1].anon_huge_kb = thp_kb;
	if (sm[0].anon_huge_kb < thp_kb || sm[1].anon_huge_kb < thp_kb) {
		snprintf(st->skip, sizeof(st->skip),
			 "no THP given to a MADV_HUGEPAGE region (AnonHugePages %ld and %ld kB)",
			 sm[0].anon_huge_kb, sm[1].anon_huge_kb);
		return 0;
	}
	if (with_xy && (uffd_register(st->x, PMD_SZ) || uffd_register(st->y, PMD_SZ)))
		return -1;
	return 0;
}

/*
 * The scenario's layout, X and Y too if @with_xy: 0, or -1 once a failure
 * or a skip of @what is reported (nothing left mapped).
 */
static int set_up(const struct scenario *sc, struct setup *st, int with_xy, const char *what)
{
	memset(st, 0, sizeof(*st));
	if (sc->layout == PTE_TABLES ? setup_pte(st, with_xy) : setup_thp(st, with_xy)) {
		tap_ok(0, "%s: set up the layout (%s)", what, strerror(errno));
		t_release(&st->area);
		return -1;
	}
	if (st->skip[0]) {
		tap_skip_test(st->skip, "%s", what);
		t_release(&st->area);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The order itself, counted: deterministic, on every kernel               */

#define LOCK_PAIRS T_PARAMS "lock_pairs"

struct pairs {
	long long pairs, swapped, descending;
};

static int read_pairs(struct pairs *p)
{
	char buf[128];

	if (t_read_str(LOCK_PAIRS, buf, sizeof(buf)))
		return -1;
	return sscanf(buf, "pairs %lld swapped %lld descending %lld", &p->pairs, &p->swapped,
		      &p->descending) == 3 ? 0 : -1;
}

/* S -> D -> S, the data checked after each move: 0, or -1 with r->why set. */
static int round_trip(struct racer *r)
{
	if (move_once(r, r->a, r->b))
		return -1;
	if (tag_ok(r->b, r->len, r->tag)) {
		snprintf(r->why, sizeof(r->why), "data wrong at %p after a move", r->b);
		return -1;
	}
	if (move_once(r, r->b, r->a))
		return -1;
	if (tag_ok(r->a, r->len, r->tag)) {
		snprintf(r->why, sizeof(r->why), "data wrong at %p after a move", r->a);
		return -1;
	}
	return 0;
}

/*
 * The races above can only hit the window; the test build counts the
 * pairs the module takes (lock_pairs). One round trip S -> D -> S hands
 * the module one pair whose source lock lies above the destination's
 * (whichever table's lock lies higher), and it must take every pair
 * lower address first. The detector's control: "probe" makes the module
 * take the next pair it is handed higher first as it is, and the count
 * must show that one pair. Alone in the guest, nothing can take a pair
 * in the other order meanwhile.
 */
static void order_run(const struct scenario *sc, int can_move)
{
	struct setup st;
	struct racer r;
	struct pairs pc = { 0 }, pp = { 0 };
	char what[64];
	int ok, okp;

	if (sc->a == IOC_MOVE && !can_move) {
		tap_skip_test("no FASTREMAP_IOC_MOVE on this kernel", "%s: lock order", sc->name);
		return;
	}
	snprintf(what, sizeof(what), "%s: lock order", sc->name);
	if (set_up(sc, &st, 0, what))
		return;
	r = (struct racer){ .how = sc->a, .a = st.s, .b = st.d, .len = st.len, .tag = TAG_S };
	ok = !t_write_str(LOCK_PAIRS, "0") && !round_trip(&r) && !read_pairs(&pc);
	okp = ok && !t_write_str(LOCK_PAIRS, "probe") && !round_trip(&r) && !read_pairs(&pp);
	t_write_str(LOCK_PAIRS, "0");
	tap_ok(ok, "%s: lock order: a round trip moved and kept its data%s%s", sc->name,
	       r.why[0] ? ": " : "", r.why);
	tap_ok(ok && pc.swapped + pc.descending >= 1,
	       "%s: lock order: a pair was handed with the source's lock above (%lld of %lld)",
	       sc->name, pc.swapped + pc.descending, pc.pairs);
	tap_ok(ok && pc.pairs >= 2 && pc.descending == 0,
	       "%s: lock order: every page-table lock pair taken lower address first "
	       "(%lld pairs, %lld taken higher first)", sc->name, pc.pairs, pc.descending);
	tap_ok(okp && pp.descending == 1,
	       "%s: lock order control: the pair taken higher first on purpose is counted "
	       "(%lld of %lld)", sc->name, pp.descending, pp.pairs);
	t_release(&st.area);
}

/* ---------------------------------------------------------------------- */

static void run(const struct scenario *sc, int seconds)
{
	struct setup st;
	struct racer ra, rb;
	pthread_t ta, tb;
	char up[64];
	int bad;

	if (set_up(sc, &st, 1, sc->title))
		return;
	ra = (struct racer){ .how = sc->a, .me = 0, .cpu = 0, .a = st.s, .b = st.d,
			     .len = st.len, .tag = TAG_S };
	rb = (struct racer){ .how = UFFD_MOVE, .me = 1, .cpu = 1, .a = st.x, .b = st.y,
			     .len = st.len, .tag = TAG_X };
	ra.until = rb.until = t_now() + seconds;
	ra.hard = rb.hard = ra.until + 3 * seconds;
	/* The guest's uptime, to tell from a lockup report how long it took. */
	if (t_read_str("/proc/uptime", up, sizeof(up)))
		strcpy(up, "?");
	up[strcspn(up, " ")] = 0;
	tap_diag("%s: S %p D %p X %p Y %p, %zu bytes, %d s from uptime %s s", sc->name,
		 (void *)st.s, (void *)st.d, (void *)st.x, (void *)st.y, st.len, seconds, up);
	if (pthread_create(&ta, NULL, racer_main, &ra) ||
	    pthread_create(&tb, NULL, racer_main, &rb)) {
		tap_ok(0, "%s: start the threads", sc->name);
		exit(tap_done());
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	tap_diag("%s: A %ld round trips (%ld retries), B %ld (%ld retries), overlapping "
		 "%ld + %ld times", sc->name, ra.rounds, ra.retries, rb.rounds, rb.retries,
		 ra.overlaps, rb.overlaps);
	tap_ok(!ra.failed && !rb.failed, "%s: every move succeeded and kept its data%s%s%s%s",
	       sc->name, ra.failed ? " (A: " : "", ra.failed ? ra.why : "",
	       rb.failed ? ") (B: " : "", rb.failed ? rb.why : "");
	tap_ok(ra.rounds >= MIN_ROUNDS && rb.rounds >= MIN_ROUNDS,
	       "%s: both movers made progress (%ld and %ld round trips, at least %d in %d-%d s)",
	       sc->name, ra.rounds, rb.rounds, MIN_ROUNDS, seconds, 4 * seconds);
	/* Positive control: nothing raced unless both were in a move at once. */
	tap_ok(ra.overlaps + rb.overlaps > 0,
	       "%s: the two movers were inside their moves at the same time (%ld times)",
	       sc->name, ra.overlaps + rb.overlaps);
	if (sc->layout == PMD_TABLES) {
		struct t_range rg[3] = {
			{ st.sd_lo, st.sd_hi },
			{ (uintptr_t)st.x, (uintptr_t)st.x + PMD_SZ },
			{ (uintptr_t)st.y, (uintptr_t)st.y + PMD_SZ },
		};
		struct t_smaps sm[3];

		bad = t_smaps_ranges(rg, 3, sm);
		/* The THP path ran: a split would have moved PTEs instead. */
		if (sc->a == IOC_MOVE)
			tap_ok(ra.first_thp == 1, "%s: the module moved the THP whole (moved_thp %llu)",
			       sc->name, (unsigned long long)ra.first_thp);
		tap_ok(!bad && sm[0].anon_huge_kb == (long)(PMD_SZ >> 10) &&
		       sm[1].anon_huge_kb + sm[2].anon_huge_kb == (long)(PMD_SZ >> 10),
		       "%s: both THPs still whole (AnonHugePages %ld kB and %ld kB)", sc->name,
		       sm[0].anon_huge_kb, sm[1].anon_huge_kb + sm[2].anon_huge_kb);
	}
	t_release(&st.area);
}

int main(int argc, char **argv)
{
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_MOVE | UFFD_FEATURE_SIGBUS };
	const struct scenario *list = suite;
	size_t n = ARRAY_SIZE(suite);
	const char *only = NULL;
	int seconds = 8, mremap_mode = 0, ran = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mremap"))
			mremap_mode = 1;
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else if (atoi(argv[i]) > 0)
			seconds = atoi(argv[i]);
		else {
			fprintf(stderr, "usage: %s [--mremap] [--only NAME] [SECONDS]\n", argv[0]);
			return 2;
		}
	}
	if (mremap_mode) {
		list = control;
		n = ARRAY_SIZE(control);
	}
	t_probe_init();
	if (!mremap_mode) {
		struct fastremap_info info;

		fd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			tap_ok(0, "open %s: %s", FASTREMAP_DEVICE, strerror(errno));
			return tap_done();
		}
		if (!tap_ok(!access(LOCK_PAIRS, W_OK), "test hook lock_pairs present"))
			return tap_done();
		for (size_t i = 0; i < n; i++)
			if (!only || !strcmp(only, list[i].name))
				order_run(&list[i], !t_info(fd, &info) &&
						    (info.features & FASTREMAP_FEAT_MOVE));
	}
	/* As an unprivileged process may: user-mode-only faults (5.11+). */
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (uffd < 0) {
		tap_diag("userfaultfd(UFFD_USER_MODE_ONLY): %s; without it", strerror(errno));
		uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	}
	if (uffd < 0) {
		tap_ok(0, "userfaultfd: %s", strerror(errno));
		return tap_done();
	}
	/* 6.1 answers EINVAL for a feature it does not know. */
	if (ioctl(uffd, UFFDIO_API, &api) || !(api.features & UFFD_FEATURE_MOVE)) {
		for (size_t i = 0; i < n; i++)
			if (!only || !strcmp(only, list[i].name))
				tap_skip_test("no UFFDIO_MOVE before 6.8", "%s", list[i].title);
		return tap_done();
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		tap_diag("one CPU online: the threads cannot race");
	if (wd_arm()) {
		wd_restore();
		return tap_done();
	}
	atexit(wd_restore);
	for (size_t i = 0; i < n; i++) {
		if (only && strcmp(only, list[i].name))
			continue;
		run(&list[i], seconds);
		ran++;
	}
	if (only && !ran)
		tap_ok(0, "no scenario named %s", only);
	wd_disarm();
	return tap_done();
}
