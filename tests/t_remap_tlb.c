// SPDX-License-Identifier: GPL-2.0
/*
 * TLB flushes of FASTREMAP_IOC_REMAP, seen from the tlb:tlb_flush
 * tracepoint: one ioctl against one mremap(2) of an identical twin, for
 * several sizes at PMD-aligned and page-misaligned destinations and for
 * a PUD (1 GiB) at a PUD-aligned one, in a single-threaded process pinned
 * to one CPU. The ioctl must report tlb_flushes == 1, and its tracepoint count
 * (which includes the kernel's own unmap of the old range) must stay
 * small (<= 3) whatever the size, while mremap(2) flushes per PMD extent;
 * both counts are reported. What is counted are flush requests: "flush on
 * task switch" events are context switches, not the call's doing, and a
 * "remote ipi send" event only doubles a request when another CPU still
 * has the mm in its cpumask (say, from before the pinning); both are
 * reported, not counted. Where the kernel tells mmu notifiers of each
 * flush (6.6+), a second count comes from an mmu notifier the test build
 * registers on this process (count_flushes): the ioctl's at most 3,
 * mremap(2)'s at least one per PMD extent; on arm64, which has no flush
 * tracepoint, it is how mremap(2)'s flushes are counted (see
 * tests/lib/tlb.c for the kprobe events). Skips without tracefs. Runs as
 * root inside the test VM with the module loaded.
 *
 * Usage: t_remap_tlb [--selftest-mremap] [SEED]
 */
#define _GNU_SOURCE
#include <sched.h>
#include "tlib.h"

#define MAX_IOCTL_FLUSHES	3
#define TASK_SWITCH		"flush on task switch"
#define IPI_SEND		"remote ipi send"

static int fd = -1;

/* A case: its length in PMDs (in PUDs if PUD-aligned), its target's alignment. */
enum { AL_PMD, AL_PAGE, AL_PUD };

static const struct { int n, align; } cases[] = {
	{ 1, AL_PMD }, { 8, AL_PMD }, { 32, AL_PMD },
	{ 1, AL_PAGE }, { 8, AL_PAGE }, { 32, AL_PAGE },
	{ 1, AL_PUD },
};

struct tcase {
	char name[48];
	size_t len;
	size_t src_align, dst_align;
	size_t touch_step;	/* one touched page per touch_step bytes */
};

/* Case k at this kernel's sizes ("2M, PMD-aligned" with 4 KiB pages). */
static void case_at(size_t k, struct tcase *tc)
{
	int pud = cases[k].align == AL_PUD;

	tc->len = cases[k].n * (pud ? PUD_SZ : PMD_SZ);
	tc->src_align = pud ? PUD_SZ : PMD_SZ;
	tc->dst_align = pud ? PUD_SZ : cases[k].align == AL_PMD ? PMD_SZ : PG;
	tc->touch_step = pud ? PMD_SZ : 8 * PG;
	if (pud)
		snprintf(tc->name, sizeof(tc->name), "%zuG, PUD-aligned", tc->len >> 30);
	else if (cases[k].align == AL_PMD)
		snprintf(tc->name, sizeof(tc->name), "%zuM, PMD-aligned", tc->len >> 20);
	else
		snprintf(tc->name, sizeof(tc->name), "%zuM, %zuK-misaligned", tc->len >> 20,
			 PG >> 10);
}

struct call {
	char *src, *dst, *p;
	size_t len;
	int ioctl_it, err;
	long notified;		/* flushes the mmu notifier counted, or -1 */
	struct fastremap_remap r;
};

/*
 * The test build's count_flushes (6.6+): an mmu notifier on this process's
 * mm that counts its TLB flushes, mremap(2)'s too. Since 6.6 every user
 * TLB flush of an mm with notifiers tells them once (arm64's
 * flush_tlb_range(), flush_tlb_mm() and flush_tlb_page(); x86's
 * flush_tlb_mm_range()): arm64's one honest count of mremap(2)'s flushes,
 * where 6.12 and 7.2 inline its movers and no tracepoint fires.
 */
#define COUNT_FLUSHES	T_PARAMS "count_flushes"
static int notifier_on;
/* FASTREMAP_FEAT_MREMAP_PUD as the module reports it; -1: no module asked. */
static int mremap_pud = -1;

static long notified_flushes(void)
{
	return notifier_on ? t_param("count_flushes") : -1;
}

#ifdef __aarch64__
/* 6.6+: every user TLB flush calls the mmu notifiers' secondary-TLB hook. */
static int flush_tells_notifiers(void)
{
	return t_kernel_since(6, 6, 1);
}
#endif

static void do_call(void *arg)
{
	struct call *c = arg;
	long before = notified_flushes();

	if (c->ioctl_it)
		c->p = t_remap(fd, c->src, c->len, c->len,
				MREMAP_MAYMOVE | MREMAP_FIXED, c->dst, &c->r);
	else
		c->p = t_mremap(c->src, c->len, c->len,
				  MREMAP_MAYMOVE | MREMAP_FIXED, c->dst);
	c->err = errno;
	c->notified = before < 0 ? -1 : notified_flushes() - before;
}

/* One page per step: the pattern; returns the pages touched. */
static size_t touch(char *p, size_t len, size_t step, uint64_t s)
{
	size_t n = 0;

	for (size_t o = 0; o < len; o += step, n++)
		t_fill_pattern_off(p + o, PG, s, o / PG);
	return n;
}

static long verify(const char *p, size_t len, size_t step, uint64_t s)
{
	for (size_t o = 0; o < len; o += step * 16) {
		long bad = t_verify_pattern_off(p + o, PG, s, o / PG, 0);

		if (bad >= 0)
			return o + bad;
	}
	return -1;
}

/* The flush requests of the call itself (see the top comment). */
static int own(const struct t_tlb_counts *c)
{
	return c->total - t_tlb_reason(c, TASK_SWITCH) - t_tlb_reason(c, IPI_SEND);
}

static void reasons(char *b, size_t n, const struct t_tlb_counts *c)
{
	size_t at = 0;

	b[0] = 0;
	for (int i = 0; i < c->nreasons && at < n; i++)
		at += snprintf(b + at, n - at, "%s%s: %d", i ? ", " : "",
			       c->r[i].reason, c->r[i].count);
}

int main(int argc, char **argv)
{
	int ioctl_counts[ARRAY_SIZE(cases)], nio = 0;
	uint64_t seed;
	cpu_set_t cs;
	int cpu;

	t_parse_args(&argc, argv);
	seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);
	tap_diag("pattern seed %" PRIu64, seed);
	if (!t_tracefs()) {
		tap_skip_test("no tracefs with events/tlb/tlb_flush (or not root)",
			      "TLB flush tracepoint counts");
		return tap_done();
	}
	cpu = sched_getcpu();
	CPU_ZERO(&cs);
	CPU_SET(cpu < 0 ? 0 : cpu, &cs);
	tap_ok(sched_setaffinity(0, sizeof(cs), &cs) == 0, "pinned to CPU %d", cpu);

	fd = t_open();
	if (!tap_ok(fd >= 0, "open the device (%s)", fd < 0 ? strerror(errno) : "ok"))
		return tap_done();
	if (!t_nodev()) {
		struct fastremap_info fi;

		if (tap_ok(t_info(fd, &fi) == 0, "INFO (%s)", strerror(errno)))
			mremap_pud = !!(fi.features & FASTREMAP_FEAT_MREMAP_PUD);
	}
	if (!tap_ok(t_tlb_trace_begin(NULL) == 0, "enable the flush events (%s)",
		    t_tlb_trace_source())) {
		close(fd);
		return tap_done();
	}
	/*
	 * Required on arm64 where the kernel has the notifier hook: there it
	 * is the only count of mremap(2)'s flushes.
	 */
	notifier_on = t_write_str(COUNT_FLUSHES, "1") == 0;
#ifdef __aarch64__
	if (flush_tells_notifiers())
		tap_ok(notifier_on, "arm64: count_flushes registered an mmu notifier (%s)",
		       notifier_on ? "ok" : strerror(errno));
	else
		tap_diag("arm64 before 6.6: a flush tells no mmu notifier and mm/mremap.c's movers are inlined: mremap(2)'s flushes are not counted here");
#endif
	tap_diag("mmu-notifier flush counts: %s", notifier_on ? "on" : "not on this kernel");

	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		struct tcase tcs, *tc = &tcs;
		struct t_area sa[2], da[2];
		struct call c[2];
		struct t_tlb_counts tc_ioctl, tc_mremap;
		char ri[256], rm[256];
		uint64_t s = seed + k;
		int ret[2];

		case_at(k, tc);
		memset(c, 0, sizeof(c));
		for (int x = 0; x < 2; x++) {
			c[x].src = t_map_aligned(tc->len, tc->src_align, PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS | t_noreserve(tc->len),
					       -1, 0, &sa[x]);
			c[x].dst = c[x].src ? t_pick(tc->len, tc->dst_align, &da[x]) : NULL;
			c[x].len = tc->len;
			c[x].ioctl_it = x;
			if (c[x].src) {
				madvise(c[x].src, tc->len, MADV_NOHUGEPAGE);
				touch(c[x].src, tc->len, tc->touch_step, s);
			}
		}
		if (!c[0].dst || !c[1].dst) {
			tap_skip_test("mmap failed", "%s", tc->name);
			for (int x = 0; x < 2; x++) {
				if (c[x].src)
					t_release(&sa[x]);
				if (c[x].dst)
					t_release(&da[x]);
			}
			continue;
		}
		/* mremap(2) first, so that both calls find warm caches alike. */
		ret[0] = t_tlb_trace_count(do_call, &c[0], &tc_mremap);
		ret[1] = t_tlb_trace_count(do_call, &c[1], &tc_ioctl);
		if (!tap_ok(!ret[0] && !ret[1], "%s: tracing works (%s)", tc->name,
			    strerror(-(ret[0] ? ret[0] : ret[1]))))
			goto next;
		if (!tap_ok(c[0].p == c[0].dst && c[1].p == c[1].dst,
			    "%s: both calls move (mremap %s, ioctl %s)", tc->name,
			    c[0].p == c[0].dst ? "ok" : t_errname(c[0].err),
			    c[1].p == c[1].dst ? "ok" : t_errname(c[1].err)))
			goto next;
		tap_ok(verify(c[1].dst, tc->len, tc->touch_step, s) < 0 &&
		       verify(c[0].dst, tc->len, tc->touch_step, s) < 0,
		       "%s: data intact (sampled)", tc->name);

		reasons(ri, sizeof(ri), &tc_ioctl);
		reasons(rm, sizeof(rm), &tc_mremap);
		tap_diag("%s: ioctl: %d tlb_flush events [%s], counter tlb_flushes %lld",
			 tc->name, tc_ioctl.total, ri,
			 t_counted(&c[1].r) ? (long long)c[1].r.tlb_flushes : -1LL);
		tap_diag("%s: mremap(2): %d tlb_flush events [%s]", tc->name,
			 tc_mremap.total, rm);
		tap_diag("%s: flushes counted by the mmu notifier: ioctl %ld, mremap(2) %ld",
			 tc->name, c[1].notified, c[0].notified);
		/*
		 * libfastremap sends mremap(2) the moves it makes in at most
		 * four extents, counting a whole PUD entry as one where the
		 * module says mremap(2) moves it so (FASTREMAP_FEAT_MREMAP_PUD;
		 * fastremap_remap(3), ROUTING): the bit must say what the
		 * kernel does, one flush for the entry or one per PMD entry.
		 * Without the module, the kernel's version stands in.
		 */
		if (cases[k].align == AL_PUD) {
#ifdef __aarch64__
			long m = notifier_on && flush_tells_notifiers() ? c[0].notified : -1;
#else
			long m = own(&tc_mremap);
#endif
			if (m < 0)
				tap_skip_test("no count of mremap(2)'s flushes here",
					      "%s: mremap(2) moves the PUD entry whole", tc->name);
			else if (mremap_pud < 0 && !t_kernel_since(5, 11, 1))
				tap_skip_test("mremap(2) moves whole PUD entries since 5.11 (HAVE_MOVE_PUD)",
					      "%s: mremap(2) moves the PUD entry whole", tc->name);
			else if (mremap_pud)
				tap_ok(m >= 1 && m <= 4,
				       "%s: mremap(2) moves the PUD entry whole: 1..4 flushes, as FASTREMAP_FEAT_MREMAP_PUD says and the library's routing counts (%ld)",
				       tc->name, m);
			else
				tap_ok(m > 4,
				       "%s: mremap(2) moves the PUD entry PMD by PMD: more than 4 flushes, as FASTREMAP_FEAT_MREMAP_PUD (clear) says and the library's routing counts (%ld)",
				       tc->name, m);
		}
		if (t_nodev())
			goto next;
		tap_ok(c[1].r.tlb_flushes == 1, "%s: the ioctl reports one TLB flush (%llu)",
		       tc->name, (unsigned long long)c[1].r.tlb_flushes);
		tap_ok(own(&tc_ioctl) <= MAX_IOCTL_FLUSHES,
		       "%s: the ioctl causes at most %d TLB flush requests (%d; mremap(2): %d)",
		       tc->name, MAX_IOCTL_FLUSHES, own(&tc_ioctl), own(&tc_mremap));
#ifdef __aarch64__
		/* The probe sees the module's flush itself, not its counter. */
		tap_ok(t_tlb_reason(&tc_ioctl, T_FLUSH_MODULE_FN) == 1 &&
		       t_tlb_reason(&tc_mremap, T_FLUSH_MODULE_FN) == 0,
		       "%s: arm64: the module's range flush ran once for the ioctl, never for mremap(2) (%d, %d)",
		       tc->name, t_tlb_reason(&tc_ioctl, T_FLUSH_MODULE_FN),
		       t_tlb_reason(&tc_mremap, T_FLUSH_MODULE_FN));
		/*
		 * mremap's movers, where a kernel keeps its PTE and PMD
		 * movers out of line (Debian's 6.1, 6.12 and 7.2 arm64
		 * kernels inline both into move_page_tables(); the notifier
		 * below counts there from 6.6 on): each moved extent is one
		 * call, one flush.
		 */
		if (t_tlb_probed("move_ptes") && t_tlb_probed("move_normal_pmd"))
			tap_ok(own(&tc_mremap) >= 1,
			       "%s: arm64: mremap(2) seen through its movers (%d calls)",
			       tc->name, own(&tc_mremap));
#endif
		/*
		 * The notifier's counts: the ioctl's flush plus the kernel's
		 * unmap of the old range, against mremap(2)'s flush per PMD
		 * extent it moved (per PTE table or PMD entry; one for a PUD).
		 */
		if (notifier_on) {
			long want = cases[k].align == AL_PUD ? 1 : (long)(tc->len / PMD_SZ);

			tap_ok(c[1].notified >= 1 && c[1].notified <= MAX_IOCTL_FLUSHES,
			       "%s: mmu notifier: the ioctl flushed 1..%d times (%ld)",
			       tc->name, MAX_IOCTL_FLUSHES, c[1].notified);
			tap_ok(c[0].notified >= want,
			       "%s: mmu notifier: mremap(2) flushed at least once per extent (%ld >= %ld)",
			       tc->name, c[0].notified, want);
#ifndef __aarch64__
			/*
			 * The method, checked where a tracepoint counts too:
			 * what arm64 relies on must agree with it here.
			 */
			tap_ok(c[1].notified == own(&tc_ioctl) && c[0].notified == own(&tc_mremap),
			       "%s: x86: the notifier counts what the tracepoint counts (ioctl %ld = %d, mremap(2) %ld = %d)",
			       tc->name, c[1].notified, own(&tc_ioctl), c[0].notified,
			       own(&tc_mremap));
#endif
		}
		ioctl_counts[nio++] = own(&tc_ioctl);
next:
		for (int x = 0; x < 2; x++) {
			t_release(&sa[x]);
			t_release(&da[x]);
		}
	}
	if (nio > 1) {
		int lo = ioctl_counts[0], hi = ioctl_counts[0];

		for (int i = 1; i < nio; i++) {
			lo = ioctl_counts[i] < lo ? ioctl_counts[i] : lo;
			hi = ioctl_counts[i] > hi ? ioctl_counts[i] : hi;
		}
		tap_diag("ioctl tlb_flush events per call, over all sizes: %d..%d", lo, hi);
	}
	if (notifier_on)
		t_write_str(COUNT_FLUSHES, "0");
	t_tlb_trace_end();
	close(fd);
	return tap_done();
}
