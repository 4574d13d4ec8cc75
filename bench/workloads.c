// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include "bench.h"

/* ---- workloads ---- */

/* Offsets in the running kernel's units (struct geo_off). */
#define AT_PMD { .half_pmds = 2 }
#define AT_PAGE { .pages = 1 }
#define AT_CONT { .conts = 1 }
#define AT_HALF_PMD_PAST_PMD { .half_pmds = 3 }

const struct workload workloads[] = {
	/*
	 * mremap(2) moves a whole PUD entry with one flush too: the library
	 * routes this move to it (fastremap_remap(3), ROUTING).
	 */
	{ "1", "pud", "PUD-aligned src and dst (PUD level)", K_MOVE, { 0 }, 0, 0, 0,
	  B(C_FR) | B(C_MREMAP), 0, { 0 }, 1, 0, 0, 0 },
	/*
	 * Workload 1 back and forth, the contenders taking turns move by
	 * move, the module called directly: its fixed cost per call against
	 * mremap(2)'s, measured pair by pair.
	 */
	{ "1p", "pud_pingpong", "a PUD moved back and forth between PUD-aligned places, the module called directly",
	  K_PINGPONG, { 0 }, 0, 0, 0, B(C_FR) | B(C_MREMAP), 0, { 0 }, 2, 0, 0, 0 },
	{ "2", "pmd", "dst PMD-aligned only (PMD level)", K_MOVE, AT_PMD, 0, 0, 0,
	  B(C_FR) | B(C_MREMAP), 0, { 0 }, 0, 0, 0, 0 },
	/*
	 * Workload 2 with a fresh destination per move, far from the
	 * source: whether reusing workload 2's destination (its upper page
	 * tables kept, its addresses warm) flatters either contender.
	 */
	{ "2f", "pmd_fresh_dst", "workload 2, every move to a fresh address past 8 GiB of gap",
	  K_MOVE, AT_PMD, 0, 0, 0, B(C_FR) | B(C_MREMAP), 0, { 0 }, 0, .fresh_dst = 1 },
	{ "3", "pte", "dst misaligned by one page (PTE level)", K_MOVE, AT_PAGE, 0, 0, 0,
	  B(C_FR) | B(C_MREMAP) | B(C_UFFD), 0, { 0 }, 0, 0, 0, 0 },
	/*
	 * Workload 3 with the module's per-entry mover alone (a test build's
	 * copy_tables=0; x86-64 copies whole PTE tables otherwise): counted
	 * against workload 3's copying mover in the same boot. Not in the
	 * default list.
	 */
	{ "3e", "pte_per_entry", "workload 3, the module moving entry by entry (test build, copy_tables=0)",
	  K_MOVE, AT_PAGE, 0, 0, 0, B(C_FR) | B(C_MREMAP), 0, { 0 }, 0, .per_entry = 1 },
	/*
	 * mTHP of arm64's contiguous-PTE block (CONT_PTE_SIZE: 64 KiB with
	 * 4 KiB pages, 2 MiB with 16 KiB ones), so that arm64 (6.9+) maps the
	 * source in contiguous blocks; the destination is congruent modulo
	 * the block, so the module moves each block whole (moved_contpte)
	 * and it stays contiguous. x86-64 has no such blocks: arm64's bench
	 * only.
	 */
#ifdef __aarch64__
	{ "3c", "pte_contpte", "contiguous-block mTHP, dst misaligned by one block (PTE level, contiguous blocks)",
	  K_MOVE, AT_CONT, 0, 0, MTHP_CONT, B(C_FR) | B(C_MREMAP), 0, { 0 }, 0, 0, 0, 0 },
#endif
	{ "4", "pte_writer", "PTE level, a writer thread on the other CPU", K_MOVE, AT_PAGE, 0, 1, 0,
	  B(C_FR) | B(C_MREMAP), 0, { 0 }, 0, 0, 0, 0 },
	{ "5", "thp", "THP (MADV_HUGEPAGE), dst PMD-aligned", K_MOVE, AT_PMD, 1, 0, 0,
	  B(C_FR) | B(C_MREMAP), 0, { 0 }, 0, 0, 0, 0 },
	{ "6", "folio_loop", "N x {mmap 1 MiB (populated, tagged), move by 1 MiB, munmap}", K_LOOP, { 0 }, 0, 0, 0,
	  B(C_FR) | B(C_MREMAP), 0, { 0 }, 0, 0, 0, 0 },
	{ "6m", "folio_loop_mthp64", "the same with 64 KiB mTHP", K_LOOP, { 0 }, 0, 0, MTHP_64K,
	  B(C_FR) | B(C_MREMAP), 0, { 0 }, 0, 0, 0, 0 },
	{ "7", "gc", "GC compaction: random runs of 1-16 pages into a to-space", K_GC, { 0 }, 0, 0, 0,
	  B(C_FR) | B(C_MREMAP) | B(C_UFFD), 0, { 0 }, 0, 0, 0, 0 },
	{ "7b1", "gc_move1", "GC compaction, fastremap in FASTREMAP_IOC_MOVE batches of 1", K_GC,
	  { 0 }, 0, 0, 0, B(C_FR) | B(C_MREMAP) | B(C_UFFD), 1, { 0 }, 0, 0, 0, 0 },
	{ "7b64", "gc_move64", "GC compaction, fastremap in FASTREMAP_IOC_MOVE batches of 64", K_GC,
	  { 0 }, 0, 0, 0, B(C_FR) | B(C_MREMAP) | B(C_UFFD), 64, { 0 }, 0, 0, 0, 0 },
	{ "7b1024", "gc_move1024", "GC compaction, fastremap in FASTREMAP_IOC_MOVE batches of 1024",
	  K_GC, { 0 }, 0, 0, 0, B(C_FR) | B(C_MREMAP) | B(C_UFFD), 1024, { 0 }, 0, 0, 0, 0 },
	/*
	 * The PTE level in a collector's steady state: whole tables copied
	 * into tables that are already there, so that nothing allocates or
	 * frees a page table. One FASTREMAP_IOC_MOVE call moves the arena.
	 */
	{ "7t", "gc_tables", "GC compaction of whole 2 MiB runs one page off into a used to-space (tables kept), FASTREMAP_IOC_MOVE batches of 1024",
	  K_GC, { 0 }, 0, 0, 0, B(C_FR) | B(C_MREMAP) | B(C_UFFD), 1024, { 0 }, 0, 0, 0, .tables = 1 },
	{ "8", "memcpy_floor", "userspace copy of the bytes workload 3 moves", K_COPY, { 0 }, 0, 0, 0,
	  B(C_MEMCPY), 0, { 0 }, 0, 0, 0, 0 },
	{ "9", "realign", "src and dst half a PMD into a PMD, holes below (realigned)", K_MOVE,
	  AT_HALF_PMD_PAST_PMD, 0, 0, 0, B(C_FR) | B(C_MREMAP), 0, AT_HALF_PMD_PAST_PMD, 0, 0, 0, 0 },
};
const unsigned nwork = sizeof(workloads) / sizeof(workloads[0]);

int fail(char *msg, size_t size, const char *what, int err)
{
	snprintf(msg, size, "error: %s: %s", what, strerror(err < 0 ? -err : err));
	return -1;
}

size_t geo_off(struct geo_off o)
{
	return o.half_pmds * (PMD_SZ / 2) + o.conts * CONT_SZ + o.pages * PG;
}

size_t mthp_size(const struct workload *w)
{
	return w->mthp == MTHP_64K ? 64 * KiB : w->mthp == MTHP_CONT ? CONT_SZ : 0;
}

void mthp_path(char *buf, size_t n, const struct workload *w, const char *file)
{
	snprintf(buf, n, "/sys/kernel/mm/transparent_hugepage/hugepages-%zukB%s%s",
		 mthp_size(w) / KiB, *file ? "/" : "", file);
}

/* workload.fresh_dst: the gap between the source and the first destination. */
#define FRESH_GAP (8 * GiB)

/* workload.fresh_dst: destinations a cell needs (timed and traced repetitions). */
static size_t fresh_slots(void)
{
	return (size_t)(cfg.reps + 1) * NCONT;
}

/*
 * The layout of a K_MOVE or K_PINGPONG workload's pool (pool_ready()):
 * the bytes moved, and where source and destination start past the PUD
 * boundary the pool is aligned to. L: the region rounded up to whole
 * PUDs; a PUD of PROT_NONE gap between source and destination. With
 * fresh_dst, *dst_at is the first of fresh_slots() destinations, a
 * region and a PUD apart.
 */
static void pool_layout(const struct workload *w, size_t *len, size_t *src_at, size_t *dst_at,
			size_t *rlen)
{
	size_t L = ALIGN_UP(cfg.size, PUD_SZ);
	size_t gap = w->fresh_dst ? ALIGN_UP(FRESH_GAP, PUD_SZ) : PUD_SZ;
	size_t slots = w->fresh_dst ? fresh_slots() : 1;

	*len = cfg.size - geo_off(w->src_off);
	*src_at = geo_off(w->src_off);
	*dst_at = L + gap + geo_off(w->dst_off);
	*rlen = L + gap + slots * (L + PUD_SZ) + PUD_SZ;
}

static size_t phys_mem(void)
{
	long n = sysconf(_SC_PHYS_PAGES);

	return n > 0 ? (size_t)n * PG : 0;
}

int workload_unfit(const struct workload *w, char *msg, size_t msz)
{
	size_t len, src_at, dst_at, rlen, mem = phys_mem();

	if (w->kind != K_MOVE && w->kind != K_PINGPONG)
		return 0;
	if (geo_off(w->src_off) >= cfg.size) {
		snprintf(msg, msz, "skip: size %zu MiB is not past the source's offset of %zu KiB",
			 cfg.size / MiB, geo_off(w->src_off) / KiB);
		return 1;
	}
	pool_layout(w, &len, &src_at, &dst_at, &rlen);
	/*
	 * A PUD-level move needs a whole PUD of memory: 64 GiB with 16 KiB
	 * pages, more than most guests hold. A region below a PUD makes a
	 * PMD-level move under a PUD-level name, which run_workload() notes;
	 * where no region this machine can hold would reach a PUD, the
	 * workload is skipped instead.
	 */
	if (!geo_off(w->dst_off) && !geo_off(w->src_off) && cfg.size < PUD_SZ && mem &&
	    PUD_SZ > mem) {
		snprintf(msg, msz, "skip: a PUD-level move needs %zu MiB (one PUD), this machine has %zu MiB",
			 PUD_SZ / MiB, mem / MiB);
		return 1;
	}
	if (mem && len > mem) {
		snprintf(msg, msz, "skip: moves %zu MiB, this machine has %zu MiB", len / MiB,
			 mem / MiB);
		return 1;
	}
	return 0;
}

/*
 * FASTREMAP_BENCH_LIST=1: the moves the selected workloads would make
 * on this kernel, one line each, so that two builds' layouts can be
 * compared line by line.
 */
void list_moves(void)
{
	unsigned i;

	printf("# geometry: page %zu KiB, PMD %zu KiB, PUD %zu MiB, contiguous block %zu KiB\n",
	       PG / KiB, PMD_SZ / KiB, PUD_SZ / MiB, CONT_SZ / KiB);
	for (i = 0; i < nwork; i++) {
		const struct workload *w = &workloads[i];
		size_t len, src_at, dst_at, rlen;
		char why[128] = "";

		if (!selected(w->id))
			continue;
		if (w->kind != K_MOVE && w->kind != K_PINGPONG) {
			printf("move %s kind=%d thp=%d mthp=%zu\n", w->id, w->kind, w->thp,
			       mthp_size(w));
			continue;
		}
		pool_layout(w, &len, &src_at, &dst_at, &rlen);
		workload_unfit(w, why, sizeof(why));
		printf("move %s kind=%d len=%zu src=+%#zx dst=+%#zx reserve=%#zx thp=%d mthp=%zu%s%s\n",
		       w->id, w->kind, len, src_at, dst_at, rlen, w->thp, mthp_size(w),
		       *why ? " " : "", why);
	}
}

/*
 * The region workloads 1-5 and 8 move. Under emulation, faulting in 1 GiB
 * of fresh pages costs about 2.5 s (the kernel zeroes them), a hundred
 * times the moves being measured, so by default the region is touched
 * once per workload and brought back to its source position between
 * repetitions by an untimed mremap(2) at the same alignment, which builds
 * the source's page tables afresh; every repetition then writes new tags.
 * FASTREMAP_BENCH_FRESH=1 maps and touches new memory every repetition.
 */
static struct {
	char *res, *src, *dst;
	size_t rlen;
	char *at;		/* where the data is: src or dst */
	int copy_dst;		/* a touched destination for memcpy is mapped */
	size_t fresh_used;	/* workload.fresh_dst: destinations used */
} pool;

void pool_free(void)
{
	if (pool.res)
		munmap(pool.res, pool.rlen);
	memset(&pool, 0, sizeof(pool));
}

static int pool_ready(const struct workload *w, char *msg, size_t msz)
{
	size_t len, src_at, dst_at, rlen;
	size_t src_off = geo_off(w->src_off), dst_off = geo_off(w->dst_off);

	pool_layout(w, &len, &src_at, &dst_at, &rlen);
	if (pool.res) {
		if (pool.at == pool.src)
			return 0;
		/* UFFDIO_MOVE leaves the emptied source VMA behind. */
		munmap(pool.src, len);
		if (mremap(pool.at, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, pool.src) != pool.src)
			return fail(msg, msz, "restoring the source (mremap)", errno);
		pool.at = pool.src;
		return 0;
	}
	pool.rlen = rlen;
	pool.res = mmap(NULL, pool.rlen, PROT_NONE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (pool.res == MAP_FAILED) {
		pool.res = NULL;
		return fail(msg, msz, "reserve", errno);
	}
	/* A PROT_NONE gap keeps source and destination VMAs apart. */
	pool.src = (char *)ALIGN_UP((uintptr_t)pool.res, PUD_SZ);
	pool.dst = pool.src + dst_at;
	/* Workload 9: nothing mapped between the boundary and either end. */
	if (src_off &&
	    (munmap(pool.src, src_off) || munmap(pool.dst - dst_off, dst_off)))
		return fail(msg, msz, "holes below the source and target", errno);
	pool.src += src_at;
	pool.at = pool.src;
	if (mmap(pool.src, len, PROT_READ | PROT_WRITE,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | (w->thp ? 0 : MAP_POPULATE),
		 -1, 0) == MAP_FAILED)
		return fail(msg, msz, "mmap source", errno);
	if (w->thp && madvise(pool.src, len, MADV_HUGEPAGE))
		return fail(msg, msz, "MADV_HUGEPAGE", errno);
	/* THP: the tags written next fault the huge pages in. */
	return 0;
}

/*
 * Settling before a timed move of workloads 1-5 (FASTREMAP_BENCH_SETTLE).
 *
 * Each repetition writes tags into all 262144 pages of the 1 GiB region
 * right before the move. Under QEMU's TCG that leaves the emulator in a
 * state that makes the next guest system calls slow for a while: a
 * PUD-level move, 42-50 us back to back, took 550-1300 us for both
 * contenders right after the tags were written (the cost grows with the
 * pages touched: 380-400 us after touching one page in eight), and a
 * first move after 110 ms of sleep is slow too. This fits QEMU's
 * software TLB, whose table grows with a large working set and shrinks
 * only at a TLB flush after 100 ms of little use (accel/tcg/cputlb.c),
 * and cold translated code after the vCPU idled; either way it is a cost
 * of the harness, paid by whichever call comes first, neither the
 * kernel's nor the module's. The same move timed in the same boot after
 * two rounds of {a small flush, 110 ms of sleep} and one small untimed
 * move by the same contender took 75-80 us, as back to back
 * (bench/README.md, "What the bench measures").
 */
static char *settle_area;	/* 256 pages: 64 mapped, the rest reserved */
#define SETTLE_PAGES 64

void settle_init(void)
{
	settle_area = mmap(NULL, 4 * SETTLE_PAGES * PG, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (settle_area == MAP_FAILED ||
	    mmap(settle_area, SETTLE_PAGES * PG, PROT_READ | PROT_WRITE,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0) == MAP_FAILED)
		settle_area = NULL;
}

/*
 * A small move there and back by contender c, down the path its timed
 * move takes: for fastremap the module, or mremap(2) where the library
 * routes the timed move (workload 1; settled through the module instead,
 * its routed move took twice mremap(2)'s time, 7.2).
 */
static int settle_move(int c, char *from, char *to)
{
	void *res = NULL;

	if (c == C_FR)
		return fastremap_remap(from, SETTLE_PAGES * PG, SETTLE_PAGES * PG,
				       MREMAP_MAYMOVE | MREMAP_FIXED, to,
				       need_module || direct_module ?
				       FASTREMAP_NO_FALLBACK | FASTREMAP_NO_ROUTING : 0,
				       NULL, &res) ? -1 : 0;
	return mremap(from, SETTLE_PAGES * PG, SETTLE_PAGES * PG,
		      MREMAP_MAYMOVE | MREMAP_FIXED, to) == to ? 0 : -1;
}

int settle(int c)
{
	char *a = settle_area, *b = settle_area + 2 * SETTLE_PAGES * PG;
	size_t i;
	int k;

	if (!cfg.settle || !a)
		return 0;
	for (k = 0; k < 2; k++) {
		for (i = 0; i < SETTLE_PAGES; i++)
			a[i * PG] = 1;
		/* More pages than the kernel flushes one by one: a full flush. */
		madvise(a, SETTLE_PAGES * PG, MADV_DONTNEED);
		usleep(110000);
	}
	for (i = 0; i < SETTLE_PAGES; i++)
		a[i * PG] = 1;
	/* UFFDIO_MOVE needs a registered destination: mremap(2) warms the kernel's entry. */
	if (settle_move(c == C_FR ? C_FR : C_MREMAP, a, b) ||
	    settle_move(c == C_FR ? C_FR : C_MREMAP, b, a))
		return -1;
	/*
	 * Reserve b again: left a hole, the next mmap(NULL) of another part
	 * of the bench (the writer's buffer) could land there and be
	 * replaced by the next settling move.
	 */
	if (mmap(b, SETTLE_PAGES * PG, PROT_NONE,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) == MAP_FAILED)
		return -1;
	return 0;
}

/* Workloads 1-5, 8 and 9: one move (or copy) of cfg.size bytes (9: less its src_off). */
int rep_move(const struct workload *w, int c, int rep, struct rep *out,
		    char *msg, size_t msz)
{
	size_t len = cfg.size - geo_off(w->src_off);
	char *src, *dst;
	double dt;
	int err, ret = -1;

	if (pool_ready(w, msg, msz))
		goto out;
	src = pool.src;
	dst = pool.dst;
	if (w->fresh_dst)
		dst += pool.fresh_used++ % fresh_slots() * (ALIGN_UP(cfg.size, PUD_SZ) + PUD_SZ);
	t_tags_write(src, len, rep, 0);
	if (w->thp)
		out->thp_kb = anon_huge_kb();
	switch (c) {
	case C_FR:
	case C_MREMAP:
		err = munmap(dst, len);	/* the destination is a hole */
		break;
	case C_UFFD:
		/* UFFDIO_MOVE moves into a registered VMA. */
		err = mmap(dst, len, PROT_READ | PROT_WRITE,
			   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED;
		if (!err)
			err = uffd_register(dst, len);
		break;
	default:
		/* memcpy into memory that is already touched: bandwidth only. */
		err = 0;
		if (!pool.copy_dst)
			err = mmap(dst, len, PROT_READ | PROT_WRITE,
				   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
				   -1, 0) == MAP_FAILED;
		pool.copy_dst = !err;
		break;
	}
	if (err) {
		fail(msg, msz, "destination set-up", errno);
		goto out;
	}
	if (c != C_MEMCPY && settle(c)) {
		fail(msg, msz, "settling move", errno);
		goto out;
	}
	if (w->writer)
		writer_go();

	err = timed_move(c, src, len, dst, &out->st, &dt);

	if (w->writer)
		writer_stop();
	if (err) {
		fail(msg, msz, cont_name[c], err);
		goto out;
	}
	if (c != C_MEMCPY)
		pool.at = dst;
	if (t_tags_check(dst, len, rep, 0)) {
		snprintf(msg, msz, "error: verify: wrong data at the destination");
		goto out;
	}
	if (c != C_MEMCPY && check_source_gone(c, src, len)) {
		size_t i, nres = 0, first = 0;

		/*
		 * For UFFDIO_MOVE, whose source VMA stays: which pages are
		 * resident again, and what they hold (seen on 7.2, rep 1 of
		 * workload 3, with every destination page right).
		 */
		if (c == C_UFFD && mincore_vec)
			for (i = len / PG; i--;)
				if (mincore_vec[i] & 1) {
					nres++;
					first = i;
				}
		char why[96];

		snprintf(why, sizeof(why), "error: verify: source still mapped: %zu/%zu "
			 "pages; first %zu: %#llx", nres,
			 len / PG, first, nres ? (unsigned long long)*(volatile uint64_t *)
			 (src + first * PG) : 0ULL);
		snprintf(msg, msz, "%s", why);
		goto out;
	}
	out->us = dt;
	out->ops = 1;
	ret = 0;
out:
	if (ret || cfg.fresh)
		pool_free();
	return ret;
}

/* Set during the extra, traced repetition of a cell. */
int traced_rep;

static long mthp_fault_allocs(const struct workload *w)
{
	char p[128], buf[64];

	mthp_path(p, sizeof(p), w, "stats/anon_fault_alloc");
	return t_read_str(p, buf, sizeof(buf)) ? -1 : strtol(buf, NULL, 10);
}



int move_times_init(struct move_times *mt, int ncs, long n)
{
	int k;

	memset(mt, 0, sizeof(*mt));
	mt->n = n;
	for (k = 0; k < ncs; k++)
		if (!(mt->t[k] = calloc(n, sizeof(double))))
			return -1;
	return 0;
}

double move_times_median(struct move_times *mt, int k)
{
	double *v = mt->t[k];
	long n = mt->n;

	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void move_times_free(struct move_times *mt)
{
	for (int k = 0; k < NCONT; k++)
		free(mt->t[k]);
}

/* Moves per contender per repetition of workload 1p. */
#define PINGPONG_MOVES 40

/*
 * Workload 1p: the region of workload 1 moved back and forth between
 * its two PUD-aligned places, PINGPONG_MOVES times per
 * contender, the contenders taking turns move by move (see rep_loop());
 * each one's median move. No settling: every move follows another.
 */
int rep_pingpong(const struct workload *w, const int *cs, int ncs, int rep,
			struct rep *outs, int *bad, char *msg, size_t msz)
{
	size_t len = cfg.size;
	struct move_times mt;
	double dt;
	char *other;
	int err, ret = -1, k, n, c;

	*bad = 0;
	if (move_times_init(&mt, ncs, PINGPONG_MOVES)) {
		move_times_free(&mt);
		return fail(msg, msz, "calloc", ENOMEM);
	}
	if (pool_ready(w, msg, msz))
		goto out;
	t_tags_write(pool.src, len, rep, 0);
	for (n = 0; n < PINGPONG_MOVES; n++) {
		for (k = 0; k < ncs; k++) {
			int i = (k + n) % ncs;

			c = cs[i];
			*bad = i;
			other = pool.at == pool.src ? pool.dst : pool.src;
			err = timed_move(c, pool.at, len, other, &outs[i].st, &dt);
			if (err) {
				fail(msg, msz, cont_name[c], err);
				goto out;
			}
			pool.at = other;
			mt.t[i][n] = dt;
		}
	}
	if (t_tags_check(pool.at, len, rep, 0)) {
		snprintf(msg, msz, "error: verify: wrong data after the moves");
		goto out;
	}
	for (k = 0; k < ncs; k++) {
		outs[k].us = move_times_median(&mt, k);
		outs[k].ops = PINGPONG_MOVES;
	}
	ret = 0;
out:
	if (ret)
		pool_free();
	move_times_free(&mt);
	return ret;
}

/*
 * Workload 6: the large-folio loop (the one in the mremap PTE-batching
 * series). The ncs contenders cs[] take turns move by move, the first
 * one rotating, at the same addresses: host drift between the
 * contenders' repetitions (seconds apart) cannot show as a difference
 * between them (bench/README.md, "Routing"). outs[k] is cs[k]'s; on an
 * error *bad is the index of the contender that failed.
 */
int rep_loop(const struct workload *w, const int *cs, int ncs, int rep,
		    struct rep *outs, int *bad, char *msg, size_t msz)
{
	size_t rlen = 8 * MiB;
	char *res, *base;
	double dt, sum[NCONT] = { 0 };
	long n, a0 = w->mthp ? mthp_fault_allocs(w) : -1;
	/* Flushes per move need no 2000 samples: the traced repetition is shorter. */
	long nmoves = traced_rep && cfg.loop_n > TRACED_LOOP_N ? TRACED_LOOP_N : cfg.loop_n;
	int err, ret = -1, k, c;
	struct move_times mt;

	*bad = 0;
	if (move_times_init(&mt, ncs, nmoves)) {
		move_times_free(&mt);
		return fail(msg, msz, "calloc", ENOMEM);
	}
	res = mmap(NULL, rlen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED) {
		move_times_free(&mt);
		return fail(msg, msz, "reserve", errno);
	}
	base = (char *)ALIGN_UP((uintptr_t)res, 2 * MiB);
	munmap(base, 2 * MiB);
	for (n = 0; n < nmoves; n++) {
		for (k = 0; k < ncs; k++) {
			/*
			 * MAP_POPULATE and a tag per page instead of memset:
			 * the pages end up present, dirty and (6m) in 64 KiB
			 * folios all the same, at half the cost under
			 * emulation.
			 */
			int i = (int)((k + n) % ncs);
			char *p = mmap(base, MiB, PROT_READ | PROT_WRITE,
				       MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
				       -1, 0);

			c = cs[i];
			*bad = i;
			if (p == MAP_FAILED) {
				fail(msg, msz, "mmap", errno);
				goto out;
			}
			t_tags_write(p, MiB, rep, n * (MiB / PG));

			err = timed_move(c, base, MiB, base + MiB, &outs[i].st, &dt);

			if (err) {
				fail(msg, msz, cont_name[c], err);
				goto out;
			}
			sum[i] += dt;
			mt.t[i][n] = dt;
			if (t_tags_check(base + MiB, MiB, rep, n * (MiB / PG))) {
				snprintf(msg, msz, "error: verify: wrong data at move %ld", n);
				goto out;
			}
			munmap(base + MiB, MiB);
		}
	}
	for (k = 0; k < ncs; k++) {
		outs[k].us = paired(w) ? move_times_median(&mt, k) : sum[k] / nmoves;
		outs[k].ops = nmoves;
		/* 64 KiB folios faulted in, shared out: every contender faults the same. */
		if (a0 >= 0)
			outs[k].mthp_allocs = (mthp_fault_allocs(w) - a0) / ncs;
	}
	ret = 0;
out:
	munmap(res, rlen);
	move_times_free(&mt);
	return ret;
}

/* A small, fixed-seed generator: the same runs for every contender of a round. */
