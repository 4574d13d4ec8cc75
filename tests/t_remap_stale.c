// SPDX-License-Identifier: GPL-2.0
/*
 * The stale-TLB detector: after FASTREMAP_IOC_REMAP returns, no CPU may
 * still reach a moved page through the old address.
 *
 * A prober thread pinned to the other CPU keeps writing to a few pages of
 * the source, so its TLB holds writable, dirty entries for them. The main
 * thread, pinned to CPU 0, moves the source with MREMAP_DONTUNMAP: the old
 * range stays mapped (empty) and nothing is unmapped or freed, so the
 * module's own flush is the only one (a plain move ends with do_munmap(),
 * whose flush would hide a missing one). Once the call has returned, the
 * prober writes a marker through the old addresses. With a correct flush
 * each such write faults and lands in a fresh zero page at the old
 * address; a marker found at the new address was written through a stale
 * translation. Under QEMU TCG a vCPU's soft TLB keeps its entries until
 * the guest flushes, so a missing flush shows up here every time.
 *
 * The kernel turns a flush of more than tlb_single_page_flush_ceiling
 * pages (33) into a flush of everything, which would hide a flush over
 * the wrong range; the ceiling is raised while this runs (debugfs), so
 * the kernel flushes exactly the range the module asked for. The source
 * is over 2 MiB and the prober writes on both sides of the 2 MiB mark.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mount.h>
#include "tlib.h"

#define LEN		(2 * SZ_2M + 16 * PG)
#define ROUNDS		32
#define CEILING		"/sys/kernel/debug/x86/tlb_single_page_flush_ceiling"
#define POST(round)	(0x5354414c45000000ULL | (round))	/* "STALE" */
#define WARM		0x5741524d00000000ULL			/* "WARM" */

/* The pages the prober writes, as offsets into the source. */
static const size_t probe_off[] = {
	0, SZ_1M, SZ_2M - PG, SZ_2M, SZ_2M + 5 * PG, 3 * SZ_1M, LEN - PG,
};
#define NPROBE ARRAY_SIZE(probe_off)

enum { IDLE, WARMING, MOVED, DONE, QUIT };

static struct {
	char *volatile src;
	atomic_int phase;
	atomic_int round;
	atomic_ulong warm_writes, post_writes;
	atomic_int wrong_cpu;
} st;

static void *prober(void *arg)
{
	(void)arg;
	if (t_pin_cpu(1) || sched_getcpu() != 1)
		atomic_store(&st.wrong_cpu, 1);
	for (;;) {
		int ph = atomic_load(&st.phase);

		if (ph == QUIT)
			return NULL;
		if (ph == WARMING) {
			/* Keep the entries in this CPU's TLB, writable and dirty. */
			for (size_t i = 0; i < NPROBE; i++)
				*(volatile uint64_t *)(st.src + probe_off[i]) = WARM | i;
			atomic_fetch_add(&st.warm_writes, 1);
		} else if (ph == MOVED) {
			/* The call has returned: these must not reach the moved pages. */
			uint64_t m = POST(atomic_load(&st.round));

			for (int k = 0; k < 64; k++)
				for (size_t i = 0; i < NPROBE; i++)
					*(volatile uint64_t *)(st.src + probe_off[i]) = m;
			if (sched_getcpu() != 1)
				atomic_store(&st.wrong_cpu, 1);
			atomic_fetch_add(&st.post_writes, 64 * NPROBE);
			atomic_store(&st.phase, DONE);
		}
	}
}

static int is_probe_page(size_t off)
{
	for (size_t i = 0; i < NPROBE; i++)
		if (probe_off[i] == off)
			return 1;
	return 0;
}

/*
 * One round: returns the number of probe pages whose post-call marker
 * showed up at the new address (stale translations), or -1 if the move
 * could not be made. *bad: pages whose data is not what was moved (a
 * missing flush also lets stale entries of earlier rounds write into
 * pages that reuse their addresses).
 */
static struct t_area areas[ROUNDS][2];

static int round_once(int fd, int r, unsigned int *stale_mask, int *bad)
{
	struct t_area *sa = &areas[r][0], *da = &areas[r][1];
	struct fastremap_remap out;
	char *src, *dst;
	unsigned long warm0;
	int stale = 0;
	void *res;

	/* Odd rounds move PTE by PTE (misaligned target), even ones whole tables. */
	src = t_map_aligned(LEN, SZ_2M, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, sa);
	dst = t_pick(LEN + SZ_2M, SZ_2M, da);
	if (!src || !dst) {
		tap_diag("round %d: cannot map source and target", r);
		return -1;
	}
	if (r & 1)
		dst += PG;
	t_fill_pattern(src, LEN, 1000 + r);
	st.src = src;
	atomic_store(&st.round, r);
	warm0 = atomic_load(&st.warm_writes);
	atomic_store(&st.phase, WARMING);
	while (atomic_load(&st.warm_writes) < warm0 + 200)
		sched_yield();
	res = t_remap(fd, src, LEN, LEN,
		       MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, dst, &out);
	atomic_store(&st.phase, MOVED);
	while (atomic_load(&st.phase) != DONE)
		;
	atomic_store(&st.phase, IDLE);
	if (res != dst) {
		tap_diag("round %d: DONTUNMAP move failed (%s)", r, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < NPROBE; i++) {
		uint64_t v = *(volatile uint64_t *)(dst + probe_off[i]);

		if (v == POST(r)) {
			stale++;
			*stale_mask |= 1u << i;
		} else if (v != (WARM | i)) {
			/* The prober wrote WARM there before the move began. */
			(*bad)++;
		}
	}
	for (size_t off = 0; off < LEN; off += PG)
		if (!is_probe_page(off) && t_check_page(dst + off, 1000 + r, off / PG) >= 0)
			(*bad)++;
	/*
	 * Both ranges stay mapped until the end: were their addresses reused
	 * by the next round, a missing flush in this one would leave stale
	 * entries there and muddle what that round sees.
	 */
	return stale;
}

int main(int argc, char **argv)
{
	int fd, stale_rounds = 0, failed = 0, bad_rounds = 0;
	unsigned int stale_mask = 0;
	char old_ceiling[32] = "";
	pthread_t t;

	fd = t_open_smp(&argc, argv, "stale-TLB detector");
	if (fd < 0)
		return tap_done();
#ifdef __aarch64__
	/*
	 * arm64 flushes a range by page, or whole past 512 pages, unless the
	 * CPU has range TLBI (FEAT_TLBIRANGE, which -cpu max emulates): then
	 * the range itself, exactly, up to 8 GiB. No knob: the CPU must have it.
	 */
	tap_ok(t_kernel_log_has("TLB range maintenance instructions"),
	       "the kernel flushes exactly the range asked (arm64: range TLBI detected at boot)");
#else
	if (access(CEILING, W_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	if (t_read_str(CEILING, old_ceiling, sizeof(old_ceiling)) == 0 &&
	    t_write_str(CEILING, "1000000") == 0)
		tap_diag("tlb_single_page_flush_ceiling %s -> 1000000 while this runs",
			 old_ceiling);
	else
		old_ceiling[0] = 0;
	tap_ok(old_ceiling[0] != 0,
	       "the kernel flushes exactly the range asked (flush ceiling raised)");
#endif

	if (!tap_ok(t_pin_cpu(0) == 0 && pthread_create(&t, NULL, prober, NULL) == 0,
		    "pin this thread to CPU 0, the prober to CPU 1"))
		return tap_done();
	for (int r = 0; r < ROUNDS; r++) {
		int bad = 0, s = round_once(fd, r, &stale_mask, &bad);

		bad_rounds += bad > 0;
		if (s < 0)
			failed++;
		else if (s > 0)
			stale_rounds++;
	}
	atomic_store(&st.phase, QUIT);
	pthread_join(t, NULL);
	for (int r = 0; r < ROUNDS; r++) {
		t_release(&areas[r][0]);
		t_release(&areas[r][1]);
	}
	if (old_ceiling[0])
		t_write_str(CEILING, old_ceiling);

	tap_ok(!atomic_load(&st.wrong_cpu) && atomic_load(&st.post_writes) > 0,
	       "the prober ran on CPU 1 and wrote through the old addresses after each call returned (%lu writes)",
	       (unsigned long)atomic_load(&st.post_writes));
	if (stale_mask) {
		for (size_t i = 0; i < NPROBE; i++)
			if (stale_mask & (1u << i))
				tap_diag("stale translation: source offset %#zx", probe_off[i]);
	}
	tap_ok(!failed, "%d DONTUNMAP moves made (%d failed)", ROUNDS, failed);
	tap_ok(stale_rounds == 0,
	       "DONTUNMAP moves: no write through the old address after the call returned reached the moved page (%d of %d rounds did)",
	       stale_rounds, ROUNDS);
	tap_ok(bad_rounds == 0, "the moved data is intact after every move (%d of %d rounds differ)",
	       bad_rounds, ROUNDS);
	return tap_done();
}
