// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_REMAP on arm64's contiguous PTEs (CONFIG_ARM64_CONTPTE,
 * 6.9+): the kernel maps each aligned CONT_PTE_SIZE (64 KiB of 4 KiB pages,
 * 2 MiB of 16 KiB ones) of a large folio as a block of 16 (128) entries
 * with the contiguous bit. A block lying wholly in the moved range moves
 * whole (moved_contpte), without the kernel's unfold and refold, and
 * stays contiguous where the destination is congruent modulo the block;
 * becomes single entries where it is not; and a block the
 * range cuts is unfolded by the kernel first, so that what stays behind
 * is single entries (unfolded_contpte counts both). A whole PTE table
 * moved to a destination not aligned to a PMD is copied (the table-
 * copying mover, module/pgmove.c); its blocks count the same way.
 *
 * Whether entries are contiguous is the kernel's own view: ptep_get()
 * calls contpte_ptep_get() exactly for a valid entry with the contiguous
 * bit, and /proc/self/pagemap reads each entry once with ptep_get(); a
 * kprobe event on contpte_ptep_get counts them while this process reads
 * its pagemap. Kprobes on __contpte_try_unfold and __contpte_try_fold
 * count the kernel's unfolds and fold attempts during the move. The
 * blocks come from anonymous mTHP of the block's size (hugepages-64kB/
 * enabled with 4 KiB pages), set to "always" for the test and put back;
 * for the whole-table cases, the PMD size's THP is set to "never", so
 * that the table's span faults in as blocks, not as one huge PMD.
 *
 * Skips on x86-64 (no such blocks) and on kernels without contiguous PTEs
 * (6.1). Runs as root inside the test VM with the module loaded.
 *
 * Usage: t_remap_contpte
 */
#define _GNU_SOURCE
#include "tlib.h"

#define RW	(PROT_READ | PROT_WRITE)
#define ANON	(MAP_PRIVATE | MAP_ANONYMOUS)
#define BLOCK	CONT_SZ		/* CONT_PTE_SIZE */
#define BLOCK_PAGES	(BLOCK / PG)	/* CONT_PTES: 16 with 4 KiB pages, 128 with 16 KiB */
#define SRC_BLOCKS	6	/* the blocks of a case's source */
/* The block's mTHP size: "%zu" is its size in KiB. */
#define MTHP_FMT	"/sys/kernel/mm/transparent_hugepage/hugepages-%zukB/enabled"

#ifdef __aarch64__
static int fd = -1;
static const char *trace_dir;
static char tracing_was[4];

/* The kprobe events of this test, in their own group. */
enum { EV_GET, EV_UNFOLD, EV_FOLD, EV_N };
static const char *const ev_fn[EV_N] = {
	"contpte_ptep_get", "__contpte_try_unfold", "__contpte_try_fold",
};
static const char *const ev_name[EV_N] = { "cget", "cunfold", "cfold" };

static void probes_off(void)
{
	char cmd[64];

	t_write_file(trace_dir, "events/fr_cont/enable", "0", O_TRUNC);
	for (int i = 0; i < EV_N; i++) {
		snprintf(cmd, sizeof(cmd), "-:fr_cont/%s\n", ev_name[i]);
		t_write_file(trace_dir, "kprobe_events", cmd, O_APPEND);
	}
}

/* 0, or -errno of the first probe that would not register. */
static int probes_on(const char **failed)
{
	char cmd[96];
	int ret = 0;

	snprintf(cmd, sizeof(cmd), "%s/tracing_on", trace_dir);
	if (t_read_str(cmd, tracing_was, sizeof(tracing_was)))
		tracing_was[0] = '1';
	t_write_file(trace_dir, "tracing_on", "0", O_TRUNC);
	t_write_file(trace_dir, "options/record-cmd", "0", O_TRUNC);
	for (int i = 0; i < EV_N && !ret; i++) {
		snprintf(cmd, sizeof(cmd), "p:fr_cont/%s %s\n", ev_name[i], ev_fn[i]);
		ret = t_write_file(trace_dir, "kprobe_events", cmd, O_APPEND);
		if (ret)
			*failed = ev_fn[i];
	}
	if (!ret) {
		ret = t_write_file(trace_dir, "events/fr_cont/enable", "1", O_TRUNC);
		if (ret)
			*failed = "events/fr_cont/enable";
	}
	if (ret)
		probes_off();
	return ret;
}

/* Counts this process's hits of each probe while fn(arg) runs. */
static int count_hits(void (*fn)(void *), void *arg, long hits[EV_N])
{
	char path[160], *line = NULL, pat[32];
	size_t cap = 0;
	pid_t pid = getpid();
	FILE *f;

	memset(hits, 0, EV_N * sizeof(hits[0]));
	if (t_write_file(trace_dir, "trace", "", O_TRUNC) ||
	    t_write_file(trace_dir, "tracing_on", "1", O_TRUNC))
		return -1;
	fn(arg);
	t_write_file(trace_dir, "tracing_on", "0", O_TRUNC);
	snprintf(path, sizeof(path), "%s/trace", trace_dir);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0) {
		const char *br;

		if (line[0] == '#')
			continue;
		/* "  comm-PID  [CPU] flags  ts: NAME: (fn+0x0/...)" */
		if (t_trace_pid(line, &br) != pid)
			continue;
		for (int i = 0; i < EV_N; i++) {
			snprintf(pat, sizeof(pat), " %s:", ev_name[i]);
			if (strstr(br, pat))
				hits[i]++;
		}
	}
	free(line);
	fclose(f);
	return 0;
}

struct span {
	const char *p;
	size_t len;
};

/* Reads the pagemap entries of a span: one ptep_get() per page. */
static void read_pagemap(void *arg)
{
	const struct span *s = arg;
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	size_t n = s->len / PG;
	uint64_t *buf = malloc(n * sizeof(*buf));

	if (pm < 0 || !buf) {
		tap_diag("pagemap read: %s", strerror(errno));
		goto out;
	}
	if (pread(pm, buf, n * sizeof(buf[0]), (uintptr_t)s->p / PG * sizeof(buf[0])) < 0)
		tap_diag("pagemap read: %s", strerror(errno));
out:
	free(buf);
	if (pm >= 0)
		close(pm);
}

/* How many entries of [p, p + len) the kernel sees as contiguous, or -1. */
static long cont_entries(const char *p, size_t len)
{
	struct span s = { p, len };
	long hits[EV_N];

	if (count_hits(read_pagemap, &s, hits))
		return -1;
	return hits[EV_GET];
}

struct move {
	char *src, *dst;
	size_t len;
	struct fastremap_remap r;
	void *ret;
	int err;
};

static void do_move(void *arg)
{
	struct move *m = arg;

	m->ret = t_remap(fd, m->src, m->len, m->len, MREMAP_MAYMOVE | MREMAP_FIXED,
			  m->dst, &m->r);
	m->err = errno;
}

/*
 * The cases: a source of SRC_BLOCKS blocks, block-aligned (but not
 * PMD-aligned, so nothing moves as a whole table); the moved range
 * starts @src_off bytes in and is @len long; the destination is
 * block-aligned plus @dst_off. In the table, offsets and lengths are
 * blocks plus pages.
 */
static const struct contpte_spec {
	const char *name;	/* "%zu": the block's size in KiB, or with name_page the page's */
	int name_page;
	int src_off_blocks, src_off_pages, len_blocks, dst_off_pages;
	uint64_t kept, unfolded;	/* moved_contpte, unfolded_contpte */
	int dst_cont_blocks;		/* contiguous blocks at the destination */
	long kernel_unfolds;		/* __contpte_try_unfold calls in the move */
} specs[] = {
	{ "whole blocks, destination congruent modulo %zu KiB: moved whole, still contiguous",
	  0, 1, 0, 4, 0, 4, 0, 4, 0 },
	{ "whole blocks, destination %zu KiB off: moved whole, single entries there",
	  1, 1, 0, 4, 1, 0, 4, 0, 0 },
	{ "a range cutting a block at each end: the cut blocks unfolded, the rest whole",
	  0, 1, 8, 4, 8, 3, 2, 3, 2 },
};

struct contpte_case {
	char name[96];
	size_t src_off, len, dst_off;
	uint64_t kept, unfolded;
	long dst_cont;			/* contiguous entries at the destination */
	long kernel_unfolds;
};

/* A case at this kernel's page and block sizes. */
static void case_at(const struct contpte_spec *sp, struct contpte_case *c)
{
	snprintf(c->name, sizeof(c->name), sp->name, (sp->name_page ? PG : BLOCK) >> 10);
	c->src_off = sp->src_off_blocks * BLOCK + sp->src_off_pages * PG;
	c->len = sp->len_blocks * BLOCK;
	c->dst_off = sp->dst_off_pages * PG;
	c->kept = sp->kept;
	c->unfolded = sp->unfolded;
	c->dst_cont = sp->dst_cont_blocks * BLOCK_PAGES;
	c->kernel_unfolds = sp->kernel_unfolds;
}

static void run_case(const struct contpte_spec *sp, uint64_t seed)
{
	struct t_area sa, da;
	size_t src_len = SRC_BLOCKS * BLOCK;
	char *src, *dst, *base;
	struct move m;
	long before, after, hits[EV_N], rest;
	struct contpte_case cc, *c = &cc;
	size_t end;
	int ok;

	case_at(sp, c);
	end = c->src_off + c->len;
	/* Aligned to a PMD, then a block in: no whole PTE table can move. */
	base = t_map_aligned(src_len + BLOCK, PMD_SZ, RW, ANON, -1, 0, &sa);
	if (!base) {
		tap_ok(0, "%s: source mapping (%s)", c->name, strerror(errno));
		return;
	}
	munmap(base, BLOCK);
	src = base + BLOCK;
	t_fill_pattern(src, src_len, seed);
	dst = t_pick(c->len + 2 * BLOCK, PMD_SZ, &da);
	if (!dst) {
		tap_ok(0, "%s: destination reservation", c->name);
		t_release(&sa);
		return;
	}
	dst += BLOCK + c->dst_off;

	before = cont_entries(src, src_len);
	tap_ok(before == (long)(SRC_BLOCKS * BLOCK_PAGES),
	       "%s: the source is %d contiguous blocks before (%ld of %zu entries seen contiguous)",
	       c->name, SRC_BLOCKS, before, SRC_BLOCKS * BLOCK_PAGES);

	m = (struct move){ .src = src + c->src_off, .dst = dst, .len = c->len };
	if (count_hits(do_move, &m, hits)) {
		tap_ok(0, "%s: counting the kernel's unfolds", c->name);
		goto out;
	}
	if (!tap_ok(m.ret == dst, "%s: moved (%s)", c->name,
		    m.ret == dst ? "ok" : strerror(m.err)))
		goto out;
	tap_diag("%s: pte %llu, contpte kept %llu, unfolded %llu, %llu flush(es); kernel unfolds %ld, fold attempts %ld",
		 c->name, (unsigned long long)m.r.moved_pte,
		 (unsigned long long)m.r.moved_contpte,
		 (unsigned long long)m.r.unfolded_contpte,
		 (unsigned long long)m.r.tlb_flushes, hits[EV_UNFOLD], hits[EV_FOLD]);
	tap_ok(m.r.moved_contpte == c->kept && m.r.unfolded_contpte == c->unfolded &&
	       m.r.moved_pte == c->len / PG && m.r.tlb_flushes == 1,
	       "%s: stats: %llu blocks kept, %llu unfolded, %llu PTEs, one flush (want %llu, %llu, %zu, 1)",
	       c->name, (unsigned long long)m.r.moved_contpte,
	       (unsigned long long)m.r.unfolded_contpte, (unsigned long long)m.r.moved_pte,
	       (unsigned long long)c->kept, (unsigned long long)c->unfolded, c->len / PG);
	tap_ok(hits[EV_UNFOLD] == c->kernel_unfolds,
	       "%s: the kernel unfolded %ld block(s) during the move (want %ld)",
	       c->name, hits[EV_UNFOLD], c->kernel_unfolds);
	after = cont_entries(dst, c->len);
	tap_ok(after == c->dst_cont,
	       "%s: the kernel sees %ld contiguous entries at the destination (want %ld)",
	       c->name, after, c->dst_cont);
	/* What stayed of the source: single entries where a block was cut. */
	rest = 0;
	if (c->src_off) {
		long n = cont_entries(src, c->src_off);

		rest += n < 0 ? 1 << 20 : n;
	}
	if (c->src_off + c->len < src_len) {
		long n = cont_entries(src + c->src_off + c->len, src_len - c->src_off - c->len);

		rest += n < 0 ? 1 << 20 : n;
	}
	{
		size_t lo_cut = c->src_off % BLOCK, hi_cut = (c->src_off + c->len) % BLOCK;
		long want = (long)((c->src_off - lo_cut) / PG) +
			    (long)((src_len - (c->src_off + c->len) - (hi_cut ? BLOCK - hi_cut : 0)) / PG);

		tap_ok(rest == want,
		       "%s: what stayed of the source: %ld entries contiguous (want %ld: the uncut blocks)",
		       c->name, rest, want);
	}
	ok = t_verify_pattern_off(dst, c->len, seed, c->src_off / PG, 0) < 0 &&
	     t_verify_pattern_off(src, c->src_off, seed, 0, 0) < 0 &&
	     t_verify_pattern_off(src + end, src_len - end, seed, end / PG, 0) < 0;
	tap_ok(ok, "%s: every page's data where it belongs", c->name);
	/* Writes through both sides land, after the entries changed. */
	t_fill_pattern(dst, c->len, seed + 1);
	t_fill_pattern(src, c->src_off, seed + 2);
	ok = t_verify_pattern(dst, c->len, seed + 1, 0) < 0 &&
	     t_verify_pattern(src, c->src_off, seed + 2, 0) < 0;
	tap_ok(ok, "%s: writes on both sides after the move read back", c->name);
out:
	t_release(&da);
	t_release(&sa);
}

/*
 * A whole PTE table of blocks (PMD-aligned, a PMD long) moved to a
 * destination a block past a PMD boundary, plus @dst_off_pages: not
 * aligned to a PMD, so the table is copied, not moved whole. Congruent
 * modulo the block (@dst_off_pages 0), every block stays one; a page off,
 * every block becomes single entries. The kernel unfolds none either way.
 */
static void run_table_case(int dst_off_pages, uint64_t seed)
{
	size_t blocks = PMD_SZ / BLOCK, len = PMD_SZ;
	int kept = !dst_off_pages;
	struct t_area sa, da;
	char name[96], *src, *dst;
	long before, after, hits[EV_N], c0, copied;
	struct move m;
	int ok;

	snprintf(name, sizeof(name), "a whole table of blocks, copied %s",
		 kept ? "congruent modulo the block: still contiguous" :
			"a page off: single entries there");
	src = t_map_aligned(len, PMD_SZ, RW, ANON, -1, 0, &sa);
	if (!src) {
		tap_ok(0, "%s: source mapping (%s)", name, strerror(errno));
		return;
	}
	t_fill_pattern(src, len, seed);
	dst = t_pick(len + 2 * BLOCK, PMD_SZ, &da);
	if (!dst) {
		tap_ok(0, "%s: destination reservation", name);
		t_release(&sa);
		return;
	}
	dst += BLOCK + dst_off_pages * PG;

	before = cont_entries(src, len);
	tap_ok(before == (long)(len / PG),
	       "%s: the source is %zu contiguous blocks before (%ld of %zu entries seen contiguous)",
	       name, blocks, before, len / PG);
	c0 = t_param("tables_copied");
	m = (struct move){ .src = src, .dst = dst, .len = len };
	if (count_hits(do_move, &m, hits)) {
		tap_ok(0, "%s: counting the kernel's unfolds", name);
		goto out;
	}
	copied = c0 < 0 ? -1 : t_param("tables_copied") - c0;
	if (!tap_ok(m.ret == dst, "%s: moved (%s)", name,
		    m.ret == dst ? "ok" : strerror(m.err)))
		goto out;
	tap_diag("%s: pte %llu, contpte kept %llu, unfolded %llu, %llu flush(es), %ld table(s) copied; kernel unfolds %ld, fold attempts %ld",
		 name, (unsigned long long)m.r.moved_pte,
		 (unsigned long long)m.r.moved_contpte,
		 (unsigned long long)m.r.unfolded_contpte,
		 (unsigned long long)m.r.tlb_flushes, copied, hits[EV_UNFOLD], hits[EV_FOLD]);
	tap_ok(copied == 1, "%s: the table was copied (%ld copied)", name, copied);
	tap_ok(m.r.moved_contpte == (kept ? blocks : 0) &&
	       m.r.unfolded_contpte == (kept ? 0 : blocks) &&
	       m.r.moved_pte == len / PG && m.r.tlb_flushes == 1,
	       "%s: stats: %llu blocks kept, %llu unfolded, %llu PTEs, one flush (want %zu, %zu, %zu, 1)",
	       name, (unsigned long long)m.r.moved_contpte,
	       (unsigned long long)m.r.unfolded_contpte, (unsigned long long)m.r.moved_pte,
	       kept ? blocks : 0, kept ? 0 : blocks, len / PG);
	tap_ok(hits[EV_UNFOLD] == 0,
	       "%s: the kernel unfolded %ld block(s) during the move (want 0)",
	       name, hits[EV_UNFOLD]);
	after = cont_entries(dst, len);
	tap_ok(after == (long)(kept ? len / PG : 0),
	       "%s: the kernel sees %ld contiguous entries at the destination (want %zu)",
	       name, after, kept ? len / PG : 0);
	ok = t_verify_pattern(dst, len, seed, 0) < 0;
	tap_ok(ok, "%s: every page's data where it belongs", name);
	t_fill_pattern(dst, len, seed + 1);
	ok = t_verify_pattern(dst, len, seed + 1, 0) < 0;
	tap_ok(ok, "%s: writes after the move read back", name);
out:
	t_release(&da);
	t_release(&sa);
}

int main(void)
{
	char was[64] = "", pmd_was[64] = "", pmd_path[160], path[160], why[64];
	const char *failed = NULL;
	int ret;

	printf("# t_remap_contpte: arm64 contiguous PTEs moved whole or unfolded\n");
	fd = t_open();
	if (fd < 0) {
		tap_ok(0, "open " FASTREMAP_DEVICE " (%s)", strerror(errno));
		goto done;
	}
	snprintf(path, sizeof(path), MTHP_FMT, BLOCK >> 10);
	if (t_read_str(path, was, sizeof(was))) {
		snprintf(why, sizeof(why), "no %zu KiB mTHP in this kernel (6.8+)", BLOCK >> 10);
		tap_skip_test(why,
			      "contiguous PTEs: the kernel has no contiguous-PTE blocks");
		goto done;
	}
	trace_dir = t_tracefs();
	if (!trace_dir) {
		tap_ok(0, "tracefs with kprobe events");
		goto done;
	}
	ret = probes_on(&failed);
	if (ret == -ENOENT || ret == -EINVAL) {
		tap_skip_test("no CONFIG_ARM64_CONTPTE (6.9+): no contpte functions to probe",
			      "contiguous PTEs: the kernel has no contiguous-PTE blocks");
		tap_diag("probe of %s: %s", failed, strerror(-ret));
		goto done;
	}
	if (!tap_ok(ret == 0, "kprobe events on the kernel's contpte functions (%s)",
		    ret ? strerror(-ret) : "ok"))
		goto done;
	tap_diag("hugepages-%zukB/enabled was: %s", BLOCK >> 10, was);
	if (!tap_ok(t_write_str(path, "always") == 0, "%zu KiB mTHP on (always)", BLOCK >> 10))
		goto off;
	for (size_t i = 0; i < ARRAY_SIZE(specs); i++)
		run_case(&specs[i], 0xc0417e + i);
	/* A PMD-sized THP would take the whole table's span: none for now. */
	snprintf(pmd_path, sizeof(pmd_path), MTHP_FMT, PMD_SZ >> 10);
	if (!tap_ok(t_read_str(pmd_path, pmd_was, sizeof(pmd_was)) == 0 &&
		    t_write_str(pmd_path, "never") == 0,
		    "%zu KiB THP off (never) for the whole-table cases", PMD_SZ >> 10))
		goto put_back;
	tap_diag("hugepages-%zukB/enabled was: %s", PMD_SZ >> 10, pmd_was);
	run_table_case(0, 0xc0417e + ARRAY_SIZE(specs));
	run_table_case(1, 0xc0417e + ARRAY_SIZE(specs) + 1);
	{
		char *l = strchr(pmd_was, '['), *r = l ? strchr(l, ']') : NULL;

		if (l && r) {
			*r = 0;
			t_write_str(pmd_path, l + 1);
		}
	}
put_back:
	/* Put back what was selected ("always [inherit] madvise never"). */
	{
		char *l = strchr(was, '['), *r = l ? strchr(l, ']') : NULL;

		if (l && r) {
			*r = 0;
			t_write_str(path, l + 1);
		}
	}
off:
	probes_off();
	t_write_file(trace_dir, "trace", "", O_TRUNC);
	t_write_file(trace_dir, "tracing_on", tracing_was[0] == '0' ? "0" : "1", O_TRUNC);
done:
	return tap_done();
}
#else
int main(void)
{
	printf("# t_remap_contpte: arm64 contiguous PTEs moved whole or unfolded\n");
	tap_skip_test("arm64 only: x86-64 has no contiguous-PTE blocks",
		      "contiguous PTEs: the kernel has no contiguous-PTE blocks");
	return tap_done();
}
#endif
