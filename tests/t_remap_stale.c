// SPDX-License-Identifier: GPL-2.0
/*
 * The stale-TLB detector: after FASTREMAP_IOC_REMAP or FASTREMAP_IOC_MOVE
 * returns, no CPU may still reach a moved page through its old address.
 *
 * A prober thread pinned to the other CPU keeps writing to a few pages of
 * the source, so its TLB holds writable, dirty entries for them. The main
 * thread, pinned to CPU 0, moves the source: REMAP with MREMAP_DONTUNMAP
 * (the old range stays mapped, empty, and nothing is unmapped or freed, so
 * the module's own flush is the only one: a plain move ends with
 * do_munmap(), whose flush would hide a missing one), MOVE to the other
 * half of a heap (the source stays part of it, empty). Once the call has
 * returned, the prober writes a marker through the old addresses. With a
 * correct flush each such write faults and lands in a fresh zero page at
 * the old address; a marker found at the new address was written through
 * a stale translation. Under QEMU TCG a vCPU's soft TLB keeps its entries
 * until the guest flushes, so a missing flush shows up here every time.
 *
 * The positive control, in the same run: the first rounds of each ioctl
 * are held before their flush (the test build's hold_before_flush), every
 * lock of the pass held, and the prober writes another marker through the
 * old addresses meanwhile. In at least one held round of each ioctl all of
 * those writes must reach the moved pages: the detector sees translations
 * that are stale. (A write that misses its TLB faults and waits for the
 * call; it then lands at the old address.)
 *
 * The flushed range itself, from the same calls. x86: the kernel turns a
 * flush of more than tlb_single_page_flush_ceiling pages (33) into a flush
 * of everything, which would hide a flush over the wrong range; the
 * ceiling is raised while this runs (debugfs), and the tlb:tlb_flush
 * event of the call must name exactly the source's pages. arm64: the CPU
 * must have range TLBI (FEAT_TLBIRANGE, which -cpu max emulates) so that
 * the kernel asks for exactly the range, but QEMU turns every range TLBI
 * of more than about 8 KiB into a flush of the vCPU's whole TLB, so the
 * prober cannot see a flush of the wrong range there: a kprobe on the
 * module's flush reads its start and end, which must be the source's.
 * The source is over a PMD and the prober writes on both sides of the
 * PMD mark.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mount.h>
#include "tlib.h"

#define LEN		(2 * PMD_SZ + 16 * PG)
#define ROUNDS		32		/* per ioctl */
/*
 * Held rounds: the first HELD_MIN of each ioctl (whole tables and PTEs),
 * and more up to HELD_MAX until one sees every probe write of its hold
 * land. A hold sees nothing when the prober's TLB lost its entries during
 * the call before the hold: under TCG a context switch on its CPU (to
 * another task, back) can drop them, and its next write then faults and
 * waits for the call (reported: its voluntary context switches).
 */
#define HELD_MIN	2
#define HELD_MAX	16
#define HOLD_WAIT	2.0		/* seconds a hold waits for the prober */
#define CEILING		"/sys/kernel/debug/x86/tlb_single_page_flush_ceiling"
#define HOLD		T_PARAMS "hold_before_flush"
#define POST(round)	(0x5354414c45000000ULL | (round))	/* "STALE" */
#define HELD(round)	(0x484f4c4400000000ULL | (uint64_t)(round) << 8)	/* "HOLD" */
#define WARM		0x5741524d00000000ULL			/* "WARM" */

enum { K_REMAP, K_MOVE, NKINDS };
static const char *const kind_name[NKINDS] = { "REMAP", "MOVE" };

/* The pages the prober writes, as offsets into the source (probes_init()). */
#define NPROBE 7
static size_t probe_off[NPROBE];

static void probes_init(void)
{
	const size_t off[NPROBE] = {
		0, PMD_SZ / 2, PMD_SZ - PG, PMD_SZ, PMD_SZ + 5 * PG, PMD_SZ + PMD_SZ / 2, LEN - PG,
	};

	memcpy(probe_off, off, sizeof(off));
}

enum { IDLE, WARMING, HELD_W, MOVED, DONE, QUIT };

static struct {
	char *volatile src;
	atomic_int phase;
	atomic_int round;	/* over both ioctls: kind * ROUNDS + round */
	atomic_ulong warm_writes, post_writes, held_passes;
	atomic_int wrong_cpu;
	atomic_int tid, at;	/* the prober's thread, the probe it writes */
} st;

/* The releaser's side of a held round. */
static struct {
	atomic_int go, served;	/* the held call to serve, and the last served (+1) */
	atomic_int saw_hold;
	unsigned long passes;	/* the prober's passes during the hold */
	int at;			/* the probe it was writing at the release */
} ctl;

static void write_probes(uint64_t v, int tag_index)
{
	for (size_t i = 0; i < NPROBE; i++) {
		atomic_store_explicit(&st.at, i, memory_order_relaxed);
		*(volatile uint64_t *)(st.src + probe_off[i]) = v | (tag_index ? i : 0);
	}
}

static void *prober(void *arg)
{
	(void)arg;
	atomic_store(&st.tid, gettid());
	if (t_pin_cpu(1) || sched_getcpu() != 1)
		atomic_store(&st.wrong_cpu, 1);
	for (;;) {
		int ph = atomic_load(&st.phase);

		if (ph == QUIT)
			return NULL;
		if (ph == WARMING) {
			/* Keep the entries in this CPU's TLB, writable and dirty. */
			write_probes(WARM, 1);
			atomic_fetch_add(&st.warm_writes, 1);
		} else if (ph == HELD_W) {
			/* The call is held before its flush. */
			write_probes(HELD(atomic_load(&st.round)), 1);
			atomic_fetch_add(&st.held_passes, 1);
		} else if (ph == MOVED) {
			/* The call has returned: these must not reach the moved pages. */
			uint64_t m = POST(atomic_load(&st.round));

			for (int k = 0; k < 64; k++)
				write_probes(m, 0);
			if (sched_getcpu() != 1)
				atomic_store(&st.wrong_cpu, 1);
			atomic_fetch_add(&st.post_writes, 64 * NPROBE);
			atomic_store(&st.phase, DONE);
		}
	}
}

/* The prober's context switches so far, voluntary + involuntary * 1e6. */
static long prober_switches(void)
{
	char path[64], b[2048], *v, *n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", atomic_load(&st.tid));
	if (t_read_str(path, b, sizeof(b)))
		return -1;
	v = strstr(b, "\nvoluntary_ctxt_switches:");
	n = strstr(b, "nonvoluntary_ctxt_switches:");
	if (!v || !n)
		return -1;
	return strtol(v + 25, NULL, 10) + 1000000 * strtol(n + 27, NULL, 10);
}

/*
 * On CPU 0 while the main thread waits in a held call: lets the prober
 * write during the hold, then releases it (or disarms a hold never
 * reached). Every page it touches is locked in: a fault would wait for
 * the call's mmap_lock.
 */
static void *releaser(void *arg)
{
	int done = 0;

	for (;;) {
		int go = atomic_load(&ctl.go);
		unsigned long p0;
		double end;

		if (go < 0)
			return arg;
		if (go == done) {
			usleep(200);
			continue;
		}
		end = t_now() + 5;
		while (t_param("hold_before_flush") != 2 && t_now() < end)
			usleep(200);
		if (t_param("hold_before_flush") == 2) {
			atomic_store(&ctl.saw_hold, 1);
			p0 = atomic_load(&st.held_passes);
			atomic_store(&st.phase, HELD_W);
			end = t_now() + HOLD_WAIT;
			while (atomic_load(&st.held_passes) < p0 + 3 && t_now() < end)
				usleep(200);
			ctl.passes = atomic_load(&st.held_passes) - p0;
			ctl.at = atomic_load(&st.at);
			/* What reaches the moved pages from here on is not the hold's. */
			atomic_store(&st.phase, IDLE);
		}
		t_write_str(HOLD, "0");
		done = go;
		atomic_store(&ctl.served, go);
	}
}

struct round {
	int kind, r, gr, held;
	struct t_area a[2];
	char *src, *dst;
	int ok, err;
	struct t_tlb_counts tc;
	int traced;
};

static int fd = -1;

static void do_call(void *arg)
{
	struct round *x = arg;

	if (x->kind == K_REMAP) {
		struct fastremap_remap out;
		void *res = t_remap(fd, x->src, LEN, LEN,
				    MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
				    x->dst, &out);

		x->ok = res == x->dst;
	} else {
		struct fastremap_move_vec v = { (uintptr_t)x->src, (uintptr_t)x->dst, LEN };
		struct fastremap_move out;

		x->ok = t_move(fd, &v, 1, 0, &out) == 0 && out.done == 1;
	}
	x->err = errno;
}

/* The round's source and target: odd rounds move to a page-misaligned one. */
static int map_round(struct round *x)
{
	if (x->kind == K_REMAP) {
		x->src = t_map_aligned(LEN, PMD_SZ, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &x->a[0]);
		x->dst = t_pick(LEN + PMD_SZ, PMD_SZ, &x->a[1]);
	} else {
		/* A heap of both halves, of small pages: MOVE moves PTEs. */
		x->src = t_map_aligned(2 * LEN + PG, PMD_SZ, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &x->a[0]);
		if (x->src)
			madvise(x->src, 2 * LEN + PG, MADV_NOHUGEPAGE);
		x->dst = x->src ? x->src + LEN : NULL;
	}
	if (x->dst && (x->r & 1))
		x->dst += PG;
	return x->src && x->dst ? 0 : -1;
}

struct tally {
	int failed, stale_rounds, bad_rounds, untraced, range_bad;
	int held_seen, held_calls, held_reached;
	unsigned int stale_mask;
};

/*
 * One round. Counts into *t: stale translations after the call, data
 * that is not what was moved (a missing flush also lets stale entries of
 * earlier rounds write into pages that reuse their addresses), and for a
 * held round the probe pages the prober reached during the hold.
 */
static void round_once(struct round *x, struct tally *t)
{
	unsigned long warm0;
	int stale = 0, bad = 0, seen = 0;
	long sw0 = -1;

	if (map_round(x)) {
		tap_diag("%s round %d: cannot map source and target", kind_name[x->kind], x->r);
		t->failed++;
		return;
	}
	t_fill_pattern(x->src, LEN, 1000 + x->gr);
	st.src = x->src;
	atomic_store(&st.round, x->gr);
	warm0 = atomic_load(&st.warm_writes);
	atomic_store(&st.phase, WARMING);
	while (atomic_load(&st.warm_writes) < warm0 + 200)
		sched_yield();
	if (x->held) {
		sw0 = prober_switches();
		atomic_store(&ctl.saw_hold, 0);
		ctl.passes = 0;
		if (t_write_str(HOLD, "1"))
			tap_diag("%s round %d: cannot arm hold_before_flush", kind_name[x->kind], x->r);
		atomic_store(&ctl.go, x->gr + 1);
	}
	x->traced = t_tlb_trace_count(do_call, x, &x->tc) == 0;
	if (x->held) {
		double end = t_now() + 15;

		while (atomic_load(&ctl.served) != x->gr + 1 && t_now() < end)
			usleep(200);
		t->held_calls++;
		t->held_reached += atomic_load(&ctl.saw_hold);
		long sw1 = prober_switches();

		tap_diag("%s round %d: held before its flush: %s, the prober made %lu passes meanwhile (at probe %d at the release; its context switches during the call: %ld voluntary, %ld involuntary)",
			 kind_name[x->kind], x->r,
			 atomic_load(&ctl.saw_hold) ? "reached" : "never reached", ctl.passes,
			 ctl.at, (sw1 - sw0) % 1000000, (sw1 - sw0) / 1000000);
	}
	/* The hold's writes, before the prober's last ones may overwrite them. */
	for (size_t i = 0; x->ok && x->held && i < NPROBE; i++)
		if (*(volatile uint64_t *)(x->dst + probe_off[i]) == (HELD(x->gr) | i))
			seen++;
		else
			tap_diag("%s round %d: the hold's writes to source offset %#zx missed the moved page",
				 kind_name[x->kind], x->r, probe_off[i]);
	atomic_store(&st.phase, MOVED);
	while (atomic_load(&st.phase) != DONE)
		;
	atomic_store(&st.phase, IDLE);
	if (!x->ok) {
		tap_diag("%s round %d: the move failed (%s)", kind_name[x->kind], x->r,
			 t_errname(x->err));
		t->failed++;
		return;
	}
	for (size_t i = 0; i < NPROBE; i++) {
		uint64_t v = *(volatile uint64_t *)(x->dst + probe_off[i]);

		if (v == POST(x->gr)) {
			stale++;
			t->stale_mask |= 1u << i;
		} else if (v != (WARM | i) && !(x->held && v == (HELD(x->gr) | i))) {
			/* The prober wrote WARM there before the move began. */
			bad++;
		}
	}
	for (size_t off = 0; off < LEN; off += PG) {
		int probed = 0;

		for (size_t i = 0; i < NPROBE; i++)
			probed |= probe_off[i] == off;
		if (!probed && t_check_page(x->dst + off, 1000 + x->gr, off / PG) >= 0)
			bad++;
	}
	t->stale_rounds += stale > 0;
	t->bad_rounds += bad > 0;
	if (x->held)
		t->held_seen += seen == (int)NPROBE;
	if (!x->traced) {
		t->untraced++;
		return;
	}
	/* The flush: exactly the source's pages. */
#ifdef __aarch64__
	if (x->tc.mod_start != (uintptr_t)x->src || x->tc.mod_end != (uintptr_t)x->src + LEN) {
		tap_diag("%s round %d: the module flushed %#lx..%#lx, the source is %p..%p",
			 kind_name[x->kind], x->r, x->tc.mod_start, x->tc.mod_end,
			 (void *)x->src, (void *)(x->src + LEN));
		t->range_bad++;
	}
#else
	if (x->tc.max_pages != (long)(LEN / PG)) {
		tap_diag("%s round %d: the call's widest flush named %ld pages (%d full flushes), the source has %zu",
			 kind_name[x->kind], x->r, x->tc.max_pages, x->tc.full_flushes, LEN / PG);
		t->range_bad++;
	}
#endif
	/*
	 * Both ranges stay mapped until the end: were their addresses reused
	 * by the next round, a missing flush in this one would leave stale
	 * entries there and muddle what that round sees.
	 */
}

/* The kernel's flush of exactly the range asked for: the case, and the saved ceiling. */
static void exact_flushes(char *old, size_t n)
{
	old[0] = 0;
#ifdef __aarch64__
	(void)n;
	/*
	 * arm64 flushes a range by page, or whole past a table's worth of
	 * pages (MAX_DVM_OPS: 512 of 4 KiB), unless the
	 * CPU has range TLBI: then the range itself, exactly, up to 8 GiB.
	 * No knob: the CPU must have it.
	 */
	tap_ok(t_kernel_log_has("TLB range maintenance instructions"),
	       "the kernel flushes exactly the range asked (arm64: range TLBI detected at boot)");
#else
	if (access(CEILING, W_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	if (t_read_str(CEILING, old, n) == 0 && t_write_str(CEILING, "1000000") == 0)
		tap_diag("tlb_single_page_flush_ceiling %s -> 1000000 while this runs", old);
	else
		old[0] = 0;
	tap_ok(old[0] != 0, "the kernel flushes exactly the range asked (flush ceiling raised)");
#endif
}

static struct round rounds[NKINDS][ROUNDS];

int main(int argc, char **argv)
{
	struct tally t[NKINDS];
	char old_ceiling[32];
	pthread_t tp, tr;
	int ml, nkinds;

	probes_init();
	fd = t_open_smp(&argc, argv, "stale-TLB detector");
	if (fd < 0)
		return tap_done();
	if (!tap_ok(t_param("hold_before_flush") >= 0, "test hook hold_before_flush present"))
		return tap_done();
	/* Kernels without folios (5.10) have REMAP only. */
	nkinds = t_move_supported(fd) ? NKINDS : K_MOVE;
	exact_flushes(old_ceiling, sizeof(old_ceiling));
	if (!tap_ok(t_tlb_trace_begin(NULL) == 0, "flush events on (%s)",
		    t_tlb_trace_why() ? t_tlb_trace_why() : t_tlb_trace_source()))
		return tap_done();
	/* The vDSO's pages too: mlockall() does not populate special mappings. */
	if (t_now() < 0)
		return tap_done();
	if (!tap_ok(t_pin_cpu(0) == 0 && pthread_create(&tp, NULL, prober, NULL) == 0 &&
		    pthread_create(&tr, NULL, releaser, NULL) == 0,
		    "pin this thread and the releaser to CPU 0, the prober to CPU 1"))
		return tap_done();
	/* What the threads touch during a hold is mapped from now on. */
	ml = mlockall(MCL_CURRENT);
	if (!tap_ok(ml == 0, "mlockall(MCL_CURRENT) (%s)", ml ? strerror(errno) : "ok"))
		return tap_done();

	memset(t, 0, sizeof(t));
	for (int k = 0; k < nkinds; k++)
		for (int r = 0; r < ROUNDS; r++) {
			struct round *x = &rounds[k][r];

			*x = (struct round){ .kind = k, .r = r, .gr = k * ROUNDS + r,
					     .held = r < HELD_MIN ||
						     (r < HELD_MAX && !t[k].held_seen) };
			round_once(x, &t[k]);
		}
	atomic_store(&ctl.go, -1);
	atomic_store(&st.phase, QUIT);
	pthread_join(tp, NULL);
	pthread_join(tr, NULL);
	t_write_str(HOLD, "0");
	t_tlb_trace_end();
	for (int k = 0; k < nkinds; k++)
		for (int r = 0; r < ROUNDS; r++) {
			t_release(&rounds[k][r].a[0]);
			t_release(&rounds[k][r].a[1]);
		}
	if (old_ceiling[0])
		t_write_str(CEILING, old_ceiling);

	tap_ok(!atomic_load(&st.wrong_cpu) && atomic_load(&st.post_writes) > 0,
	       "the prober ran on CPU 1 and wrote through the old addresses after each call returned (%lu writes)",
	       (unsigned long)atomic_load(&st.post_writes));
	for (size_t i = 0; i < NPROBE; i++)
		if ((t[K_REMAP].stale_mask | t[K_MOVE].stale_mask) & (1u << i))
			tap_diag("stale translation: source offset %#zx", probe_off[i]);
	/* The case descriptions are constant: tests/mutants names them. */
	for (int k = 0; k < nkinds; k++) {
		const char *n = kind_name[k];
		struct tally *c = &t[k];

		tap_diag("%s: %d of %d moves failed; held %d, reached %d, every probe write of the hold in the moved page %d; stale after return %d rounds; data differs %d rounds; flush range wrong %d, untraced %d",
			 n, c->failed, ROUNDS, c->held_calls, c->held_reached, c->held_seen,
			 c->stale_rounds, c->bad_rounds, c->range_bad, c->untraced);
		tap_ok(!c->failed, "%s: every move made", n);
		tap_ok(c->held_calls >= HELD_MIN && c->held_reached == c->held_calls &&
		       c->held_seen >= 1,
		       "%s held before its flush: the prober's writes through the old address reached the moved page (the detector sees stale translations)",
		       n);
		tap_ok(c->stale_rounds == 0,
		       "%s: no write through the old address after the call returned reached the moved page",
		       n);
		tap_ok(c->bad_rounds == 0, "%s: the moved data is intact after every move", n);
#ifdef __aarch64__
		tap_ok(!c->untraced && !c->range_bad,
		       "%s: arm64: the module's flush covered exactly the source (kprobe start and end)",
		       n);
#else
		tap_ok(!c->untraced && !c->range_bad,
		       "%s: x86: the call's tlb_flush event named exactly the source's pages", n);
#endif
	}
	close(fd);
	return tap_done();
}
