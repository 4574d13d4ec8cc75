// SPDX-License-Identifier: GPL-2.0
/*
 * The markers of `BENCH_COUNT=1 make bench` around each timed move, and
 * the table that tells which region was which (bench/README.md, "Exact
 * counts"). The counting itself is done outside the guest, by the TCG
 * plugin bench/plugin/fr_count.c, which recognises the markers at
 * translation time and writes its counts per region id to a file on the
 * host; bench/counts.awk joins them with the CSV.
 *
 * A region id is (workload index, contender, repetition); it is sent to
 * the plugin before each region as 32 marker instructions, one per bit.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <spawn.h>
#include "bench.h"

/*
 * The markers: no-ops that compilers and kernels never emit (the plugin
 * matches their bytes). K = 1 begin, 2 end, 3 a 0 bit, 4 a 1 bit, 5 the
 * last 64 bits are a flush IPI's function's address, 6 translate again, 7 an
 * interrupt entry's.
 */
#if defined(__x86_64__)
#define MARK(k) asm volatile(".byte 0x66, 0x0f, 0x1f, 0x84, 0x00\n\t.long 0x4652000" #k ::: "memory")
#elif defined(__aarch64__)
#define MARK(k) asm volatile("hint #(104 + " #k ")" ::: "memory")
#else
#define MARK(k) do { } while (0)
#endif

int count_wi, count_rep;
static uint64_t bytes[NCONT];	/* moved in the regions of the repetition running */

struct count_rec {
	int wi, c, rep;
	double ops;
	uint64_t entries;	/* reported by the module; 0: not known */
	uint64_t bytes;
};
static struct count_rec *recs;
static size_t nrecs, crecs;

static void send_bits(uint64_t v, int n)
{
	while (n--) {
		if (v >> n & 1)
			MARK(4);
		else
			MARK(3);
	}
}

/*
 * The flush IPIs: x86-64's flush_tlb_func() (flush_tlb_func_remote() on
 * 5.10), which a TLB flush runs on the flushing CPU itself and, through a
 * function-call IPI, on each other CPU that may cache the entries. The
 * plugin counts its runs on vCPUs other than the region's: one per flush
 * IPI the move sent, and none of the function-call IPIs that only wake
 * a task on another CPU (ttwu's wakelist), which come and go with the
 * scheduler. arm64 sends none: its flushes broadcast by TLBI. Both
 * count the IPI of tlb_remove_table_sync_one() (its function
 * tlb_remove_table_smp_sync()), which goes to every other CPU, parked or
 * not, where a page table is freed outside an mmu_gather before 6.5, as
 * khugepaged does (fastremap's copying mover frees after an RCU grace
 * period instead, module/kfuncs.c).
 */
/*
 * And the interrupt entries (marker 7): each opens a window that its
 * matching interrupt return closes, which the plugin leaves out of the
 * counts on the region's vCPU and keeps on another only when a flush
 * IPI's function ran in it (bench/plugin/fr_count.c, "What a region
 * counts"). x86-64: every system vector's entry and the device
 * interrupts'; arm64: the IRQ vectors, from the kernel and from user.
 */
struct sym {
	const char *name;
	int mark;		/* 5 flush IPI's function, 7 interrupt entry */
	bool prefix;		/* every function whose name starts so */
};
#if defined(__aarch64__)
static const struct sym syms[] = {
	{ "tlb_remove_table_smp_sync", 5, false },
	{ "el1h_64_irq", 7, false }, { "el0t_64_irq", 7, false },
};
#else
static const struct sym syms[] = {
	{ "flush_tlb_func", 5, false }, { "flush_tlb_func_remote", 5, false },
	{ "tlb_remove_table_smp_sync", 5, false },
	{ "asm_sysvec_", 7, true }, { "asm_common_interrupt", 7, false },
	{ "asm_spurious_interrupt", 7, false },
};
#endif

/*
 * CPU 1 parked on another process's memory map before each region. A
 * flush goes to the CPUs in the mm's cpumask that may hold its entries:
 * x86-64 leaves a CPU there while it idles or runs kernel threads after
 * a thread of ours ran on it (lazy TLB), until it switches to another
 * user mm. Which of that happened before a region is scheduling history,
 * so the region's flush IPIs were 0 or more from run to run. The parker,
 * a process of its own pinned to CPU 1, runs there just before each
 * region: CPU 1 leaves our mm, and only a thread of ours running there
 * (workload 4's writer) brings it back. FR_BENCH_PARKER=1 makes fr_bench
 * the parker (fr_bench.c), answering each byte on its standard input
 * with one on its standard output, from CPU 1.
 */
static int park_w = -1, park_r = -1;

int count_parker(void)
{
	char b = 'r';

	if (t_pin_cpu(1))
		return 1;
	if (write(1, &b, 1) != 1)
		return 1;
	while (read(0, &b, 1) == 1)
		if (write(1, &b, 1) != 1)
			return 1;
	return 0;
}

static void park_init(void)
{
	posix_spawn_file_actions_t fa;
	int to[2], from[2], ok = 0;
	char *argv[] = { "fr_bench", NULL }, *envp[] = { "FR_BENCH_PARKER=1", NULL };
	pid_t pid;
	char b;

	if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC))
		return;
	signal(SIGPIPE, SIG_IGN);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, to[0], 0);
	posix_spawn_file_actions_adddup2(&fa, from[1], 1);
	/* posix_spawn(): clone(CLONE_VM | CLONE_VFORK), no copy of our map. */
	if (!posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, envp)) {
		park_w = to[1];
		park_r = from[0];
		ok = read(park_r, &b, 1) == 1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(to[0]);
	close(from[1]);
	if (!ok) {
		close(to[1]);
		close(from[0]);
		park_w = park_r = -1;
	}
	printf("# count: CPU 1 parked on another mm before each region: %s\n",
	       ok ? "yes" : "no (no parker on CPU 1)");
}

/*
 * The parker answers, then blocks in read(2) again: a few thousand
 * instructions on CPU 1 that would land in the region. Sleeping 2 ms lets
 * them finish first: with CPU 0 idle, QEMU's single TCG thread runs CPU 1
 * until it idles too.
 */
static void park(void)
{
	struct timespec idle = { 0, 2000000 };
	char b = 'p';

	if (park_w < 0)
		return;
	if (write(park_w, &b, 1) != 1 || read(park_r, &b, 1) != 1) {
		fprintf(stderr, "fr_bench: the CPU 1 parker is gone\n");
		exit(1);
	}
	nanosleep(&idle, NULL);
}

/*
 * The kernel's and the modules' functions, for bench/count-prof.sh to name
 * the plugin's profile (FASTREMAP_BENCH_COUNT=2): Debian's System.map is a
 * stub, and KASLR moves the kernel anyway.
 */
static void print_kallsyms(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[256];

	printf("FR-BENCH-KALLSYMS-BEGIN\n");
	while (f && fgets(line, sizeof(line), f))
		if (line[17] == 't' || line[17] == 'T')
			fputs(line, stdout);
	printf("FR-BENCH-KALLSYMS-END\n");
	if (f)
		fclose(f);
}

/*
 * Each region's thread a real-time task while the region is open: a task
 * the scheduler would otherwise put on CPU 0 when a move reschedules
 * (kernel threads, softirq work) runs outside any interrupt and would count
 * as the move's. With throttling off, only the guest's stop tasks go
 * before it; the guest is the bench's. Only the region: workload 4's
 * writer, a thread created by it, must not inherit the policy, nor CPU 0's
 * kernel threads starve between the regions.
 */
static int count_rt = -1;

static void count_realtime(void)
{
	struct sched_param sp = { .sched_priority = 1 }, none = { 0 };
	FILE *f = fopen("/proc/sys/kernel/sched_rt_runtime_us", "we");
	int ok = 0;

	if (f) {
		ok = fputs("-1\n", f) >= 0;
		ok &= !fclose(f);
	}
	ok &= !sched_setscheduler(0, SCHED_FIFO, &sp);
	ok &= !sched_setscheduler(0, SCHED_OTHER, &none);
	count_rt = ok;
	printf("# count: each region's thread real-time (SCHED_FIFO, no throttling): %s\n",
	       ok ? "yes" : "no");
}

static void realtime(bool on)
{
	struct sched_param sp = { .sched_priority = on };

	if (count_rt == 1)
		sched_setscheduler(0, on ? SCHED_FIFO : SCHED_OTHER, &sp);
}

void count_init(void)
{
	FILE *f;
	char line[256], name[128], found[2048] = "";
	unsigned long long addr;
	size_t i, n = 0;
	char type;

	if (!cfg.count)
		return;
	if (cfg.count == 2)
		print_kallsyms();
	f = fopen("/proc/kallsyms", "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %127s", &addr, &type, name) != 3 || !addr)
			continue;
		for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
			if ((syms[i].prefix ? strncmp(name, syms[i].name, strlen(syms[i].name)) :
			     strcmp(name, syms[i].name)) || strlen(line) != strcspn(line, "["))
				continue;
			send_bits(addr, 64);
			if (syms[i].mark == 5)
				MARK(5);
			else
				MARK(7);
			n++;
			snprintf(found + strlen(found), sizeof(found) - strlen(found),
				 " %s(%d)", name, syms[i].mark);
		}
	}
	if (f)
		fclose(f);
	MARK(6);
	park_init();
	count_realtime();
	printf("# count: markers on; IPI functions (5), interrupt entries (7), %zu:%s\n",
	       n, found[0] ? found : " none found");
}

void count_id(int c, size_t len)
{
	uint32_t id = (uint32_t)count_wi << 16 | (uint32_t)c << 12 | (uint32_t)count_rep;

	if (!cfg.count)
		return;
	park();
	realtime(true);
	bytes[c] += len;
	send_bits(id, 32);
}

void count_open(void)
{
	if (cfg.count)
		MARK(1);
}

void count_end(void)
{
	if (!cfg.count)
		return;
	MARK(2);
	realtime(false);
}

void count_rep_done(int c, const struct rep *r)
{
	const struct frstats *st = &r->st;
	struct count_rec *n;

	if (!cfg.count)
		return;
	if (nrecs == crecs) {
		crecs = crecs ? 2 * crecs : 256;
		n = realloc(recs, crecs * sizeof(*recs));
		if (!n) {
			fprintf(stderr, "fr_bench: no memory for the count table\n");
			exit(1);
		}
		recs = n;
	}
	n = &recs[nrecs++];
	memset(n, 0, sizeof(*n));
	n->wi = count_wi;
	n->c = c;
	n->rep = count_rep;
	n->ops = r->ops;
	n->bytes = bytes[c];
	/* What the module moved, when every call reached it. */
	if (c == C_FR && st->calls && st->module == st->calls)
		n->entries = st->pud + st->pmd + st->thp + st->pte;
	bytes[c] = 0;
}

void count_rep_reset(void)
{
	memset(bytes, 0, sizeof(bytes));
}

/*
 * The page-table entries a repetition moved: the module's count, which
 * holds for every contender of the same repetition (same layout, same
 * runs); else, for the whole-region moves, the level the alignment gives, and
 * for the rest (PTE-level moves routed to mremap(2)) one entry per page.
 */
static uint64_t rec_entries(const struct count_rec *r)
{
	const struct workload *w = &workloads[r->wi];
	size_t i;

	if (r->entries)
		return r->entries;
	for (i = 0; i < nrecs; i++)
		if (recs[i].wi == r->wi && recs[i].rep == r->rep && recs[i].entries)
			return recs[i].entries;
	if ((w->kind == K_MOVE || w->kind == K_PINGPONG) && !w->thp && !geo_off(w->src_off)) {
		if (geo_off(w->dst_off) % PUD_SZ == 0 && cfg.size % PUD_SZ == 0)
			return (uint64_t)(r->ops * (cfg.size / PUD_SZ));
		if (geo_off(w->dst_off) % PMD_SZ == 0)
			return (uint64_t)(r->ops * (cfg.size / PMD_SZ));
	}
	return r->bytes / PG;
}

void print_count(void)
{
	size_t i;

	if (!cfg.count)
		return;
	printf("FR-BENCH-COUNT-BEGIN\n");
	printf("id,workload,contender,rep,traced,ops,entries\n");
	for (i = 0; i < nrecs; i++) {
		const struct count_rec *r = &recs[i];
		const struct workload *w = &workloads[r->wi];

		printf("%#x,%s_%s,%s,%d,%d,%.0f,%" PRIu64 "\n",
		       (unsigned)r->wi << 16 | (unsigned)r->c << 12 | (unsigned)r->rep,
		       w->id, w->name, cont_name[r->c], r->rep, r->rep >= cfg.reps,
		       r->ops, rec_entries(r));
	}
	printf("FR-BENCH-COUNT-END\n");
	fflush(stdout);
}
