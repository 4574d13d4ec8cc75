// SPDX-License-Identifier: GPL-2.0
/*
 * hostbench: this machine's cost, in core cycles, of the event classes of
 * the hardware cost model (bench/model/costs.tsv), measured natively in
 * user space, x86-64 only:
 *   atomic     xchg with memory, each one depending on the last
 *   store      a plain store to the same line, a dependent loop
 *   load       a load hitting L1, a pointer chase (p = *p)
 *   load_dram  a pointer chase over a page-table-like layout: 8-byte
 *              entries, consecutive steps in different 4 KiB tables, in a
 *              random order over a region larger than the last-level cache
 * Core cycles, not TSC ticks: every round of a class is timed between two
 * readings of the core clock, a chain of dependent adds (one cycle each on
 * every x86-64 core of the model), so turbo or a hypervisor's clock does not
 * skew the figures; each figure is the least of 11 rounds.
 * Output: one line per class, "CLASS NS_PER_OP CYCLES_PER_OP", after
 * "# ..." comments (core GHz, region size, huge pages).
 * Usage: hostbench [REGION_MIB]   (default 1024)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#if !defined(__x86_64__)
int main(void)
{
	fputs("hostbench: x86-64 only\n", stderr);
	return 2;
}
#else

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static uint64_t cell[64] __attribute__((aligned(64)));

static void run_xchg(long n, void *arg)
{
	uint64_t v = 1;

	(void)arg;
	for (long i = 0; i < n / 8; i++)
		__asm__ volatile(".rept 8\n\txchg %0, %1\n\t.endr"
				 : "+r"(v), "+m"(cell[0]));
}

static void run_store(long n, void *arg)
{
	uint64_t v = 1, one = 1;

	(void)arg;
	for (long i = 0; i < n / 8; i++)
		__asm__ volatile(".rept 8\n\tmov %1, %0\n\tadd %2, %1\n\t.endr"
				 : "=m"(cell[0]), "+r"(v) : "r"(one));
}

/* A pointer chase from arg, n steps. */
static void run_chase(long n, void *arg)
{
	uint64_t *q = arg;

	for (long i = 0; i < n / 8; i++)
		__asm__ volatile(".rept 8\n\tmov (%0), %0\n\t.endr" : "+r"(q));
	if (!q)
		abort();
}

/*
 * ns per dependent add: 64 x 100000 register adds, one cycle each, the core
 * clock of this moment (not an immediate add: Golden Cove's renamer folds
 * chains of those, several per cycle, which measured a 14 GHz "clock" here).
 */
static double add_ns(void)
{
	uint64_t x = 1, one = 1;
	double t0 = now_ns();

	for (long i = 0; i < 100000; i++)
		__asm__ volatile(".rept 64\n\tadd %1, %0\n\t.endr"
				 : "+r"(x) : "r"(one));
	return (now_ns() - t0) / (64 * 100000.0);
}

#define ROUNDS 11

/*
 * ROUNDS runs of n operations, each between two readings of the core clock:
 * ns per operation, the least of the rounds (what a busy host adds to a
 * round only makes it slower), and core cycles per operation, that over the
 * least ns per add of the same rounds.
 */
static void best_of(void (*run)(long, void *), long n, void *arg, double *ns, double *cyc)
{
	double add = 1e30;

	*ns = 1e30;
	for (int r = 0; r < ROUNDS; r++) {
		double a = add_ns(), t0 = now_ns();

		run(n, arg);
		double d = (now_ns() - t0) / n, b = add_ns();

		if (d < *ns)
			*ns = d;
		if (a < add)
			add = a;
		if (b < add)
			add = b;
	}
	*cyc = *ns / add;
}

/* The core clock, GHz: the fastest of ROUNDS readings. */
static double core_ghz(void)
{
	double best = 1e30;

	for (int r = 0; r < ROUNDS; r++) {
		double a = add_ns();

		if (a < best)
			best = a;
	}
	return 1 / best;
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 1024;
	size_t len = mib << 20, tables = len / 4096, lines = len / 64;
	double ghz = core_ghz();

	printf("# core clock %.3f GHz (dependent adds)\n", ghz);

	double x, xc, s, sc, l1, l1c, dram, dramc;

	best_of(run_xchg, 4000000, NULL, &x, &xc);
	best_of(run_store, 40000000, NULL, &s, &sc);

	/* L1: one entry pointing at itself. */
	cell[8] = (uint64_t)&cell[8];
	best_of(run_chase, 40000000, &cell[8], &l1, &l1c);

	char *reg = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (reg == MAP_FAILED) {
		perror("hostbench: mmap");
		return 1;
	}
	int huge = madvise(reg, len, MADV_HUGEPAGE) == 0;

	/*
	 * One entry per 64-byte line, in a random cycle over all lines that
	 * moves to another 4 KiB table at every step: line k of table t sits
	 * at t * 4096 + k * 64. Order: all tables' line 0, then all tables'
	 * line 1..., each pass over the tables in its own random order, so
	 * consecutive steps are always in different tables and every line of
	 * the region is visited once.
	 */
	uint32_t *perm = malloc(tables * sizeof(*perm));
	if (!perm) {
		perror("hostbench: malloc");
		return 1;
	}
	uint64_t *first = NULL, *prev = NULL;

	for (size_t k = 0; k < 64; k++) {
		for (size_t t = 0; t < tables; t++)
			perm[t] = (uint32_t)t;
		for (size_t t = tables - 1; t > 0; t--) {
			size_t j = rnd() % (t + 1);
			uint32_t tmp = perm[t];

			perm[t] = perm[j];
			perm[j] = tmp;
		}
		if (prev && perm[0] == (uint32_t)(((char *)prev - reg) / 4096)) {
			uint32_t tmp = perm[0];

			perm[0] = perm[tables - 1];
			perm[tables - 1] = tmp;
		}
		for (size_t t = 0; t < tables; t++) {
			uint64_t *e = (uint64_t *)(reg + (size_t)perm[t] * 4096 + k * 64);

			if (prev)
				*prev = (uint64_t)e;
			else
				first = e;
			prev = e;
		}
	}
	*prev = (uint64_t)first;
	free(perm);

	long steps = lines < 1000000 ? (long)lines : 1000000;

	best_of(run_chase, steps, first, &dram, &dramc);

	printf("# region %zu MiB, %zu tables of 4 KiB, MADV_HUGEPAGE %s, %ld steps per run\n",
	       mib, tables, huge ? "accepted" : "refused", steps);
	printf("atomic %.3f %.2f\n", x, xc);
	printf("store %.3f %.2f\n", s, sc);
	printf("load %.3f %.2f\n", l1, l1c);
	printf("load_dram %.3f %.2f\n", dram, dramc);
	munmap(reg, len);
	return 0;
}
#endif
