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
#include "bench.h"

/*
 * The markers: no-ops that compilers and kernels never emit (the plugin
 * matches their bytes). K = 1 begin, 2 end, 3 a 0 bit, 4 a 1 bit, 5 the
 * last 64 bits are an IPI handler's address, 6 translate again, 7 an
 * interrupt entry's, 8 a timer handler's.
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
 * The guest's IPI handlers, whose executions the plugin counts as IPIs
 * received: the entry points of the interrupts a TLB flush sends to
 * other CPUs (x86: function-call IPIs); arm64 flushes by broadcast TLBI,
 * and any IPI enters ipi_handler.
 */
/*
 * And the timer interrupts, which the plugin leaves out of the counts:
 * the interrupt entries (marker 7) open a window that the next interrupt
 * return closes, a timer's when a timer handler (marker 8) ran in it.
 */
struct sym {
	const char *name;
	int mark;		/* 5 IPI handler, 7 interrupt entry, 8 timer handler */
};
#if defined(__aarch64__)
static const struct sym syms[] = {
	{ "ipi_handler", 5 }, { "el1h_64_irq", 7 }, { "el0t_64_irq", 7 },
	{ "arch_timer_handler_virt", 8 }, { "arch_timer_handler_phys", 8 },
};
#else
static const struct sym syms[] = {
	{ "asm_sysvec_call_function", 5 }, { "asm_sysvec_call_function_single", 5 },
	{ "asm_sysvec_apic_timer_interrupt", 7 }, { "asm_sysvec_apic_timer_interrupt", 8 },
};
#endif

void count_init(void)
{
	FILE *f;
	char line[256], name[128], found[256] = "";
	unsigned long long addr;
	size_t i;
	char type;

	if (!cfg.count)
		return;
	f = fopen("/proc/kallsyms", "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %127s", &addr, &type, name) != 3 || !addr)
			continue;
		for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
			if (strcmp(name, syms[i].name) || strlen(line) != strcspn(line, "["))
				continue;
			send_bits(addr, 64);
			if (syms[i].mark == 5)
				MARK(5);
			else if (syms[i].mark == 7)
				MARK(7);
			else
				MARK(8);
			snprintf(found + strlen(found), sizeof(found) - strlen(found),
				 " %s(%d)", name, syms[i].mark);
		}
	}
	if (f)
		fclose(f);
	MARK(6);
	printf("# count: markers on; IPI handlers (5), interrupt entries (7), timer handlers (8):%s\n",
	       found[0] ? found : " none found");
}

void count_id(int c, size_t len)
{
	uint32_t id = (uint32_t)count_wi << 16 | (uint32_t)c << 12 | (uint32_t)count_rep;

	if (!cfg.count)
		return;
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
	if (cfg.count)
		MARK(2);
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
