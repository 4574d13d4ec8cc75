// SPDX-License-Identifier: GPL-2.0
/*
 * The size sweep (FASTREMAP_BENCH_SWEEP=1, bench/README.md "How cost
 * grows with size"): one move of each size, from a page up to
 * FASTREMAP_BENCH_SWEEP_MAX_MB (64 GiB), in powers of 4 plus one PMD, at
 * each level (PTE, PMD, THP, PUD), by three contenders: the library as
 * programs call it (routing on), the module called directly
 * (FASTREMAP_NO_ROUTING) and mremap(2). Per cell, the contenders take
 * turns repetition by repetition, the first one rotating, as workloads
 * 1-5 do; the repetitions shrink as the size grows.
 *
 * Regions up to FASTREMAP_BENCH_SWEEP_FULL_MB (1 GiB) are written whole
 * ("full"). Larger ones would not fit in the guest, so they are populated
 * so that the entries moved stay those of the level:
 *   zero    PTE level: every PTE maps the shared zero page (read faults,
 *           MADV_POPULATE_READ), but one page per PMD, which holds the tags
 *   sparse  PMD and PUD levels: one written page per PMD, so that every
 *           PMD entry points at a PTE table (and every PUD at a PMD table)
 *   hzero   THP: every PMD maps the huge zero page, but the first and the
 *           last PMD, which are written THPs holding the tags
 * The module's statistics of the direct contender's moves (entries at the
 * level) say whether such a region moved at the level it stands for.
 *
 * Checked after every move: the tags at the destination, the source gone,
 * and for the partial populations every page still present (mincore) as
 * many as before.
 */
#define _GNU_SOURCE
#include "bench.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

enum { L_PTE, L_PMD, L_THP, L_PUD, NLEVEL };
static const char *const level_name[NLEVEL] = { "pte", "pmd", "thp", "pud" };

enum { S_LIB, S_DIRECT, S_MREMAP, NSC };
static const char *const sc_name[NSC] = { "fastremap", "fastremap_direct", "mremap" };

enum { P_FULL, P_ZERO, P_SPARSE, P_HZERO };
static const char *const pop_name[] = { "full", "zero", "sparse", "hzero" };

#define MAX_SIZES 24

struct sw_res {
	int n;
	double us[MAX_REPS];
	int rep[MAX_REPS];
	struct frstats st;	/* the traced move's */
	struct t_tlb_counts fc;
	int fc_valid;
	char state[128];
};

struct sw_cell {
	int level, pop;
	size_t size;
	int reps;
	struct sw_res r[NSC];
};

static struct sw_cell *sw;
static int nsw;

/* The region of the cell running. */
static struct {
	char *res, *src, *dst, *at;
	size_t rlen, len;
	int level, pop;
	unsigned char *vec;	/* mincore(2)'s, a byte per page of the largest size */
	size_t veclen;
} rg;

static size_t sizes[MAX_SIZES];
static int nsizes;

static void sizes_init(void)
{
	size_t s;

	nsizes = 0;
	for (s = PG; s <= cfg.sweep_max && nsizes < MAX_SIZES - 1; s *= 4) {
		/* One PMD entry, between two powers of 4 with 4 KiB pages. */
		if (s > PMD_SZ && (nsizes == 0 || sizes[nsizes - 1] < PMD_SZ))
			sizes[nsizes++] = PMD_SZ;
		sizes[nsizes++] = s;
	}
}

static int level_fits(int level, size_t size)
{
	switch (level) {
	case L_PTE:
		return 1;
	case L_PMD:
	case L_THP:
		return size >= PMD_SZ && size % PMD_SZ == 0;
	default:
		return size >= PUD_SZ && size % PUD_SZ == 0;
	}
}

static int level_selected(int level)
{
	const char *p = cfg.sweep_levels;
	size_t l = strlen(level_name[level]);

	if (!strcmp(p, "all"))
		return 1;
	while (*p) {
		if (!strncmp(p, level_name[level], l) && (p[l] == ',' || !p[l]))
			return 1;
		p += strcspn(p, ",");
		p += strspn(p, ",");
	}
	return 0;
}

/* Timed repetitions: fewer as the size grows (emulated faults and moves are slow). */
static int reps_for(size_t size)
{
	int n = size <= 4 * MiB ? 11 : size <= 256 * MiB ? 7 : size <= GiB ? 5 : 3;

	n = n * cfg.reps / 10;
	return n < 3 ? 3 : n > MAX_REPS ? MAX_REPS : n;
}

static int pop_for(int level, size_t size)
{
	if (size <= cfg.sweep_full)
		return P_FULL;
	return level == L_PTE ? P_ZERO : level == L_THP ? P_HZERO : P_SPARSE;
}

/* Where source and destination start past a PUD boundary. */
static void offsets(int level, size_t *src_off, size_t *dst_off)
{
	switch (level) {
	case L_PTE:	/* the destination misaligned by a page */
		*src_off = 0;
		*dst_off = PG;
		break;
	case L_PMD:	/* both PMD-aligned, neither PUD-aligned */
	case L_THP:
		*src_off = PMD_SZ;
		*dst_off = 2 * PMD_SZ;
		break;
	default:
		*src_off = 0;
		*dst_off = 0;
	}
}

static void cells_init(void)
{
	int i, l;

	sizes_init();
	sw = calloc((size_t)nsizes * NLEVEL, sizeof(*sw));
	if (!sw) {
		fprintf(stderr, "fr_bench: no memory for the sweep\n");
		exit(1);
	}
	/* Size by size, so that a time budget running out cuts the largest. */
	for (i = 0; i < nsizes; i++)
		for (l = 0; l < NLEVEL; l++) {
			if (!level_selected(l) || !level_fits(l, sizes[i]))
				continue;
			sw[nsw].level = l;
			sw[nsw].size = sizes[i];
			sw[nsw].pop = pop_for(l, sizes[i]);
			sw[nsw].reps = reps_for(sizes[i]);
			nsw++;
		}
}

/* The entries a move of the cell makes at its level. */
static uint64_t expected_entries(const struct sw_cell *c)
{
	switch (c->level) {
	case L_PTE:
		return c->size / PG;
	case L_PMD:
	case L_THP:
		return c->size / PMD_SZ;
	default:
		return c->size / PUD_SZ;
	}
}

static uint64_t level_entries(const struct sw_cell *c, const struct frstats *st)
{
	switch (c->level) {
	case L_PTE:
		return st->pte;
	case L_PMD:
		return st->pmd;
	case L_THP:
		return st->thp;
	default:
		return st->pud;
	}
}

static void fmt_size(char *b, size_t n, size_t s)
{
	if (s >= GiB)
		snprintf(b, n, "%zu GiB", s / GiB);
	else if (s >= MiB)
		snprintf(b, n, "%zu MiB", s / MiB);
	else
		snprintf(b, n, "%zu KiB", s / KiB);
}

static void rg_free(void)
{
	if (rg.res)
		munmap(rg.res, rg.rlen);
	rg.res = NULL;
}

/* The pages holding tags: all (full), one per PMD (zero, sparse), the first and last PMD's first (hzero). */
static size_t tag_pages(void)
{
	switch (rg.pop) {
	case P_FULL:
		return rg.len / PG;
	case P_HZERO:
		return rg.len > PMD_SZ ? 2 : 1;
	default:
		return rg.len / PMD_SZ;
	}
}

static size_t tag_page(size_t i)
{
	switch (rg.pop) {
	case P_FULL:
		return i;
	case P_HZERO:
		return i ? (rg.len - PMD_SZ) / PG : 0;
	default:
		return i * (PMD_SZ / PG);
	}
}

static void tags_write(char *p, uint64_t seed)
{
	size_t i, n = tag_pages();

	if (rg.pop == P_FULL) {
		t_tags_write(p, rg.len, seed, 0);
		return;
	}
	for (i = 0; i < n; i++)
		t_tags_write(p + tag_page(i) * PG, PG, seed, tag_page(i));
}

static int tags_check(const char *p, uint64_t seed)
{
	size_t i, n = tag_pages();

	if (rg.pop == P_FULL)
		return t_tags_check(p, rg.len, seed, 0);
	for (i = 0; i < n; i++)
		if (t_tags_check(p + tag_page(i) * PG, PG, seed, tag_page(i)))
			return -1;
	return 0;
}

/* Pages mincore(2) reports present in [p, p + len), or -1. */
static long resident(const char *p)
{
	size_t i, n = rg.len / PG;
	long k = 0;

	if (n > rg.veclen || mincore((void *)p, rg.len, rg.vec))
		return -1;
	for (i = 0; i < n; i++)
		k += rg.vec[i] & 1;
	return k;
}

static long expected_resident(void)
{
	return rg.pop == P_SPARSE ? (long)(rg.len / PMD_SZ) : (long)(rg.len / PG);
}

static int use_zero_page(void)
{
	char buf[16];

	return !t_read_str("/sys/kernel/mm/transparent_hugepage/use_zero_page", buf, sizeof(buf)) &&
	       buf[0] == '1';
}

/* Maps and populates the cell's source (untimed). */
static int rg_setup(const struct sw_cell *c, char *msg, size_t msz)
{
	size_t src_off, dst_off, L;
	int flags = MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

	rg_free();
	offsets(c->level, &src_off, &dst_off);
	rg.len = c->size;
	rg.level = c->level;
	rg.pop = c->pop;
	L = ALIGN_UP(c->size + 2 * PMD_SZ, PUD_SZ);
	/* Alignment slack, source, a PUD of gap, destination, a PUD of gap. */
	rg.rlen = PUD_SZ + L + PUD_SZ + L + PUD_SZ;
	rg.res = mmap(NULL, rg.rlen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (rg.res == MAP_FAILED) {
		rg.res = NULL;
		return fail(msg, msz, "reserve", errno);
	}
	rg.src = (char *)ALIGN_UP((uintptr_t)rg.res, PUD_SZ) + src_off;
	rg.dst = (char *)ALIGN_UP((uintptr_t)rg.res, PUD_SZ) + L + PUD_SZ + dst_off;
	rg.at = rg.src;
	/*
	 * MAP_NORESERVE: regions larger than the guest are not charged
	 * (overcommit's heuristic refuses them); all sizes alike.
	 */
	if (c->pop == P_FULL && c->level != L_THP)
		flags |= MAP_POPULATE;
	if (mmap(rg.src, rg.len, PROT_READ | PROT_WRITE, flags, -1, 0) == MAP_FAILED)
		return fail(msg, msz, "mmap source", errno);
	if (c->level == L_THP && madvise(rg.src, rg.len, MADV_HUGEPAGE))
		return fail(msg, msz, "MADV_HUGEPAGE", errno);
	if (c->pop == P_HZERO && !use_zero_page()) {
		snprintf(msg, msz, "skip: no huge zero page (transparent_hugepage/use_zero_page)");
		return -1;
	}
	/* The written pages first: THPs (hzero), real pages (zero). */
	tags_write(rg.src, 0);
	if ((c->pop == P_ZERO || c->pop == P_HZERO) &&
	    madvise(rg.src, rg.len, MADV_POPULATE_READ))
		return fail(msg, msz, "MADV_POPULATE_READ", errno);
	if (c->pop != P_FULL && resident(rg.src) != expected_resident()) {
		snprintf(msg, msz, "error: populated %ld of %ld pages", resident(rg.src),
			 expected_resident());
		return -1;
	}
	if (c->level == L_THP && c->pop == P_FULL && anon_huge_kb() < (long)(rg.len / KiB)) {
		snprintf(msg, msz, "skip: THP: %ld of %zu KiB in huge pages", anon_huge_kb(),
			 rg.len / KiB);
		return -1;
	}
	return 0;
}

/*
 * One move of contender k in repetition rep (rep == cell reps: the
 * traced, untimed one), from the source position (the region is moved
 * back there first, untimed, by mremap(2), which builds the source's
 * tables afresh), checked.
 */
static int sweep_move(struct sw_cell *c, int k, int rep, int lib_module, double *us,
		      struct frstats *st, struct t_tlb_counts *fc, int *fc_valid,
		      char *msg, size_t msz)
{
	uint64_t seed = (uint64_t)rep * NSC + k + 1;
	int traced = rep == c->reps, err;
	long want, got;

	if (rg.at != rg.src) {
		if (mremap(rg.at, rg.len, rg.len, MREMAP_MAYMOVE | MREMAP_FIXED, rg.src) != rg.src)
			return fail(msg, msz, "restoring the source (mremap)", errno);
		rg.at = rg.src;
	}
	tags_write(rg.src, seed);
	/* The destination is a hole. */
	if (munmap(rg.dst, rg.len))
		return fail(msg, msz, "destination set-up", errno);
	/* Settled down the path the move takes: the module, or mremap(2). */
	direct_module = k == S_DIRECT || (k == S_LIB && lib_module);
	need_module = 0;
	if (settle(k == S_MREMAP ? C_MREMAP : C_FR))
		return fail(msg, msz, "settling move", errno);
	direct_module = k == S_DIRECT;
	need_module = k == S_DIRECT;
	count_rep = rep;
	count_rep_reset();
	if (traced)
		t_tlb_count_start();
	err = timed_move(k == S_MREMAP ? C_MREMAP : C_FR, rg.src, rg.len, rg.dst, st, us);
	if (traced) {
		if (err)
			t_tlb_count_cancel();
		else
			*fc_valid = t_tlb_count_stop(fc) == 0;
	}
	direct_module = need_module = 0;
	if (err)
		return fail(msg, msz, sc_name[k], err);
	rg.at = rg.dst;
	if (tags_check(rg.dst, seed)) {
		snprintf(msg, msz, "error: verify: wrong data at the destination");
		return -1;
	}
	if (mincore(rg.src, PG, rg.vec) == 0 || errno != ENOMEM) {
		snprintf(msg, msz, "error: verify: source still mapped");
		return -1;
	}
	if (rg.pop != P_FULL && (got = resident(rg.dst)) != (want = expected_resident())) {
		snprintf(msg, msz, "error: verify: %ld of %ld pages present at the destination",
			 got, want);
		return -1;
	}
	return 0;
}

/*
 * One cell: its region set up once, then the untimed traced moves, then
 * the timed repetitions, each contender moving the region from the
 * source position in turn.
 */
static void sweep_cell(struct sw_cell *c, int ci)
{
	char msg[128], sz[32], line[512];
	int k, r, i, lib_module = 0, len;
	double us;

	fmt_size(sz, sizeof(sz), c->size);
	for (k = 0; k < NSC; k++)
		if (fr_unavail[0] && k != S_MREMAP)
			snprintf(c->r[k].state, sizeof(c->r[k].state), "skip: %s", fr_unavail);
	if (rg_setup(c, msg, sizeof(msg))) {
		for (k = 0; k < NSC; k++)
			snprintf(c->r[k].state, sizeof(c->r[k].state), "%s", msg);
		printf("# sweep %s %s (%s): %s\n", level_name[c->level], sz, pop_name[c->pop], msg);
		rg_free();
		return;
	}
	/*
	 * The traced move first: its statistics tell which path the
	 * library takes, along which the timed moves are then settled.
	 */
	for (k = 0; k < NSC; k++) {
		struct sw_res *x = &c->r[k];

		if (x->state[0])
			continue;
		count_wi = ci * NSC + k;
		memset(&x->st, 0, sizeof(x->st));
		if (sweep_move(c, k, c->reps, 0, &us, &x->st, &x->fc, &x->fc_valid, msg, sizeof(msg)))
			snprintf(x->state, sizeof(x->state), "%s", msg);
		else if (k == S_LIB)
			lib_module = x->st.module > 0;
	}
	for (r = 0; r < c->reps; r++) {
		len = snprintf(line, sizeof(line), "# [sweep] %s %s (%s) rep %d/%d:",
			       level_name[c->level], sz, pop_name[c->pop], r + 1, c->reps);
		for (i = 0; i < NSC; i++) {
			struct frstats st;
			struct sw_res *x;

			k = (i + r) % NSC;
			x = &c->r[k];
			if (x->state[0])
				continue;
			count_wi = ci * NSC + k;
			memset(&st, 0, sizeof(st));
			if (sweep_move(c, k, r, lib_module, &us, &st, NULL, NULL, msg, sizeof(msg))) {
				snprintf(x->state, sizeof(x->state), "%s", msg);
				len += snprintf(line + len, sizeof(line) - len, " %s %s;", sc_name[k], msg);
				continue;
			}
			x->us[x->n] = us;
			x->rep[x->n++] = r;
			len += snprintf(line + len, sizeof(line) - len, " %s %.1f us", sc_name[k], us);
		}
		printf("%s  (t=%.0fs)\n", line, (now_us() - t_start) / 1e6);
	}
	rg_free();
}

static uint64_t st_entries(const struct frstats *st)
{
	return st->pud + st->pmd + st->thp + st->pte;
}

/* The count table's rows of one cell: which id was which move. */
static void count_rows(const struct sw_cell *c, int ci)
{
	uint64_t ent = c->r[S_DIRECT].state[0] ? 0 : st_entries(&c->r[S_DIRECT].st);
	int k, r;

	for (k = 0; k < NSC; k++) {
		if (c->r[k].state[0])
			continue;
		for (r = 0; r <= c->reps; r++)
			printf("%#x,%s,%s,%zu,%s,%d,%d,%" PRIu64 "\n",
			       (unsigned)(ci * NSC + k) << 16 | (unsigned)(k == S_MREMAP ? C_MREMAP : C_FR) << 12 |
			       (unsigned)r, level_name[c->level], sc_name[k], c->size, pop_name[c->pop],
			       r, r == c->reps, ent);
	}
}

static void print_sweep_csv(const char *kernel)
{
	int i, k, j, m;

	printf("FR-BENCH-SWEEP-BEGIN\n");
	printf("kernel,level,contender,size_bytes,population,reps,median_us,ci95_lo_us,ci95_hi_us,"
	       "entries,expected_entries,pud,pmd,thp,pte,mod_flushes,flushes,module_calls,"
	       "mremap_ratio,ratio_lo,ratio_hi,ok\n");
	for (i = 0; i < nsw; i++) {
		struct sw_cell *c = &sw[i];
		const struct sw_res *d = &c->r[S_DIRECT], *mr = &c->r[S_MREMAP];
		/* The module's count of the entries (the direct contender's move). */
		uint64_t ent = d->state[0] ? 0 : st_entries(&d->st);

		for (k = 0; k < NSC; k++) {
			const struct sw_res *x = &c->r[k];
			double med, lo, hi, pr[MAX_REPS], pm = 0, plo = 0, phi = 0;
			char fl[24] = "", mod[96] = "", ratio[64] = ",,";
			int np = 0;

			if (x->state[0] || !x->n) {
				char st[128];

				snprintf(st, sizeof(st), "%s", x->state[0] ? x->state : "error: no repetition");
				for (m = 0; st[m]; m++)
					if (st[m] == ',')
						st[m] = ';';
				printf("%s,%s,%s,%zu,%s,%d,,,,,%" PRIu64 ",,,,,,,,,,,%s\n", kernel,
				       level_name[c->level], sc_name[k], c->size, pop_name[c->pop], x->n,
				       expected_entries(c), st);
				continue;
			}
			median_ci(x->us, x->n, &med, &lo, &hi);
			if (x->fc_valid)
				snprintf(fl, sizeof(fl), "%d", x->fc.total);
			if (k != S_MREMAP)
				snprintf(mod, sizeof(mod), "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
					 ",%" PRIu64 ",%s,%.3g", x->st.pud, x->st.pmd, x->st.thp,
					 x->st.pte, x->st.flushes, fl,
					 x->st.calls ? (double)x->st.module / x->st.calls : 0);
			else
				snprintf(mod, sizeof(mod), ",,,,,%s,", fl);
			/* mremap(2)'s time over this contender's, repetition by repetition. */
			if (k != S_MREMAP && !mr->state[0]) {
				for (m = 0; m < x->n; m++)
					for (j = 0; j < mr->n; j++)
						if (mr->rep[j] == x->rep[m] && x->us[m] > 0)
							pr[np++] = mr->us[j] / x->us[m];
				if (np) {
					median_ci(pr, np, &pm, &plo, &phi);
					snprintf(ratio, sizeof(ratio), "%.4g,%.4g,%.4g", pm, plo, phi);
				}
			}
			printf("%s,%s,%s,%zu,%s,%d,%.1f,%.1f,%.1f,%" PRIu64 ",%" PRIu64 ",%s,%s,ok\n",
			       kernel, level_name[c->level], sc_name[k], c->size, pop_name[c->pop], x->n,
			       med, lo, hi, ent, expected_entries(c), mod, ratio);
		}
	}
	printf("FR-BENCH-SWEEP-END\n");
	if (cfg.count) {
		printf("FR-BENCH-SWEEP-COUNT-BEGIN\n");
		printf("id,level,contender,size_bytes,population,rep,traced,entries\n");
		for (i = 0; i < nsw; i++)
			count_rows(&sw[i], i);
		printf("FR-BENCH-SWEEP-COUNT-END\n");
	}
	fflush(stdout);
}

void sweep_list(void)
{
	size_t so, d;
	char sz[32];
	int i;

	cells_init();
	printf("# geometry: page %zu KiB, PMD %zu KiB, PUD %zu MiB\n", PG / KiB, PMD_SZ / KiB,
	       PUD_SZ / MiB);
	for (i = 0; i < nsw; i++) {
		offsets(sw[i].level, &so, &d);
		fmt_size(sz, sizeof(sz), sw[i].size);
		printf("sweep %s len=%zu (%s) src=+%#zx dst=+%#zx population=%s reps=%d entries=%" PRIu64
		       "\n", level_name[sw[i].level], sw[i].size, sz, so, d, pop_name[sw[i].pop],
		       sw[i].reps, expected_entries(&sw[i]));
	}
}

int sweep_run(void)
{
	double t0 = now_us();
	int i, k, bad = 0;
	char sz[32];

	cells_init();
	rg.veclen = cfg.sweep_max / PG;
	rg.vec = mmap(NULL, rg.veclen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rg.vec == MAP_FAILED) {
		fprintf(stderr, "fr_bench: no memory for mincore's vector\n");
		return 1;
	}
	printf("# sweep: sizes powers of 4 from %zu KiB and one PMD, up to %zu MiB; levels %s; "
	       "full populations up to %zu MiB; time budget %d s; %d cells\n", PG / KiB,
	       cfg.sweep_max / MiB, cfg.sweep_levels, cfg.sweep_full / MiB, cfg.sweep_budget, nsw);
	for (i = 0; i < nsw; i++) {
		struct sw_cell *c = &sw[i];

		fmt_size(sz, sizeof(sz), c->size);
		if ((now_us() - t0) / 1e6 > cfg.sweep_budget) {
			for (k = 0; k < NSC; k++)
				snprintf(c->r[k].state, sizeof(c->r[k].state),
					 "skip: time budget (%d s) spent", cfg.sweep_budget);
			printf("# sweep %s %s: skipped, the time budget is spent\n",
			       level_name[c->level], sz);
			continue;
		}
		printf("# sweep cell %d/%d: %s %s (%s), %d repetitions\n", i + 1, nsw,
		       level_name[c->level], sz, pop_name[c->pop], c->reps);
		sweep_cell(c, i);
		if (!c->r[S_DIRECT].state[0]) {
			const struct frstats *st = &c->r[S_DIRECT].st;

			printf("# sweep %s %s: module moved pud=%" PRIu64 " pmd=%" PRIu64 " thp=%" PRIu64
			       " pte=%" PRIu64 " in %" PRIu64 " flush(es); at its level %" PRIu64
			       " of %" PRIu64 "; library: %s\n", level_name[c->level], sz,
			       st->pud, st->pmd, st->thp, st->pte, st->flushes,
			       level_entries(c, st), expected_entries(c),
			       c->r[S_LIB].state[0] ? "-" : c->r[S_LIB].st.module ? "module" : "mremap(2)");
		}
	}
	print_sweep_csv(bench_kernel());
	for (i = 0; i < nsw; i++)
		for (k = 0; k < NSC; k++)
			bad |= !strncmp(sw[i].r[k].state, "error", 5);
	return bad;
}
