// SPDX-License-Identifier: GPL-2.0
/*
 * fr_count: a QEMU TCG plugin that counts what the guest executes between
 * the markers fr_bench places around each timed move (bench/count.c), for
 * `BENCH_COUNT=1 make bench` (bench/README.md, "Exact counts").
 *
 * Markers: no-op instructions that neither compilers nor the kernels emit,
 * recognised by their bytes at translation time.
 *   x86-64: nopw 0x4652000K(%rax,%rax,1)  (66 0f 1f 84 00, disp32 = 0x4652000K)
 *   arm64:  hint #(104 + K)               (unallocated hint space: a NOP)
 * with K = 1 begin, 2 end, 3 a 0 bit, 4 a 1 bit of the next region's id
 * (32 bits, most significant first, sent before each begin), 5 "the last
 * 64 bits sent are the address of a function an IPI runs", 6 "translate
 * again" and start counting, 7 "... of an interrupt entry" (fr_bench
 * sends the functions' addresses from /proc/kallsyms at start, then 6; a
 * region before it is an error).
 *
 * Counted while a region is open: what the vCPU that opened it runs
 * outside interrupts (the move), and on the other vCPUs the interrupts in
 * which a flush IPI's function ran (what the flush IPIs the move sent
 * cost there); see "What a region counts" below.
 *   insns_user, insns_kernel  by the instruction's address (bit 63: kernel)
 *   loads, stores             memory accesses by instructions (the page-table
 *                             walks QEMU's MMU makes are not instructions)
 *   atomics                   x86: LOCK-prefixed, XCHG with memory;
 *                             arm64: store-exclusives (one per LL/SC attempt),
 *                             CAS/CASP, LSE atomics and SWP
 *   tlbi                      x86: INVLPG, INVPCID, MOV to CR3;
 *                             arm64: TLBI (SYS with CRn = 8), by kind
 *   ipis                      runs of the functions an IPI runs (the
 *                             addresses fr_bench sends, or ipi=HEX) on
 *                             any vCPU but the one that opened the
 *                             region: the IPIs the move sent (a run on
 *                             the region's own vCPU is a local call)
 *
 * The counters are plain inline additions that QEMU emits into the
 * translated code: exact only when one thread runs all vCPUs in turn
 * (run.sh boots the counted guest with -accel tcg,thread=single). A
 * region's counts are the totals at its end less those at its begin, less
 * what is left out.
 *
 * Arguments: out=FILE (required; one line per region id at exit),
 * ipi=HEX (repeatable), prof=FILE (see "The profile" below). Output lines:
 *   id regions insns_user insns_kernel loads stores atomics tlbi ipis
 *   irqs_out irqs_out_insns kinds
 * where kinds is "name=count;..." of the TLB invalidations, or "-".
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <qemu-plugin.h>
#include "decode.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;


/* The counters, in the order of the output. */
enum { C_USER, C_KERNEL, C_LOAD, C_STORE, C_ATOMIC, C_TLBI, C_IPI, NC };

#define MAX_KINDS 32
#define MAX_IPI 16
#define MAX_IRQ 64
#define TABLE 65536		/* region ids in one run, at most */

static uint64_t tot[NC];
static uint64_t kind_tot[MAX_KINDS];
static char kind_name[MAX_KINDS][24];
static int nkinds;

static uint64_t ipi_addr[MAX_IPI];
static int nipi;

/*
 * What a region counts. Interrupts come when the host's timing and the
 * guest's devices and scheduler say, not because of the move: on the
 * region's vCPU every interrupt is left out (their number and
 * instructions are reported beside); on the other vCPUs only the
 * interrupts in which a flush IPI's function ran are counted, as nothing
 * else they run is the move's (workload 4's writer, idle, kernel
 * threads). An interrupt's window opens at an entry (irq_addr) and closes
 * at the interrupt return (IRETQ, ERET) that matches it: an interrupt
 * nested in it (softirqs run with interrupts on) returns first. Tasks the
 * scheduler puts on the region's vCPU outside an interrupt would count:
 * fr_bench runs the moves as a real-time task (count.c).
 */
#define MAX_VCPU 64
static uint64_t irq_addr[MAX_IRQ];
static int nirq;
static unsigned int in_win[MAX_VCPU];	/* interrupts entered, not returned */
static bool win_ipi[MAX_VCPU];
static uint64_t win_snap[MAX_VCPU][NC], win_ksnap[MAX_VCPU][MAX_KINDS];
/* Left out on the region's vCPU; kept from the others; windows left out. */
static uint64_t excl[NC], excl_k[MAX_KINDS], excl_n, kept[NC], kept_k[MAX_KINDS];
static qemu_plugin_id_t self;

static bool arm64;
/*
 * Instrument every instruction, or only the markers: from the first
 * "translate again" on. Until then (the guest's firmware and boot) QEMU
 * runs at nearly its plain speed.
 */
static bool counting;
static char *out_path;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The open region, and the vCPU that opened it. */
static bool open_region;
static unsigned int region_v;
static uint64_t next_id;
static uint32_t bits;
static uint64_t snap[NC], kind_snap[MAX_KINDS];	/* the region's vCPU's */
static uint64_t ipi_snap;
static uint32_t cur_id;
static uint64_t errors;		/* nested begins, ends without a begin */

struct entry {
	uint32_t id;
	bool used;
	uint64_t regions;
	uint64_t c[NC];
	uint64_t kinds[MAX_KINDS];
	uint64_t irqs_out, irqs_out_insns;
};
static struct entry *table;

static struct entry *lookup(uint32_t id)
{
	uint32_t h = (id * 2654435761u) % TABLE, i;

	for (i = 0; i < TABLE; i++) {
		struct entry *e = &table[(h + i) % TABLE];

		if (!e->used) {
			e->used = true;
			e->id = id;
			return e;
		}
		if (e->id == id)
			return e;
	}
	return NULL;
}

/* Index of the TLB invalidation kind NAME, added on first sight. */
static int kind_index(const char *name)
{
	int i;

	for (i = 0; i < nkinds; i++)
		if (!strcmp(kind_name[i], name))
			return i;
	if (nkinds == MAX_KINDS)
		return MAX_KINDS - 1;	/* the last one collects the rest */
	snprintf(kind_name[nkinds], sizeof(kind_name[0]), "%s", name);
	return nkinds++;
}

static void reinstall(qemu_plugin_id_t id);

/*
 * The totals are the vCPUs' together (one thread runs them in turn), but
 * a window is one vCPU's: the other's instructions while it is open are
 * not the interrupt's. So the totals are also split by vCPU, switch by
 * switch: the vCPU running is the one whose callbacks come, each memory
 * access's among them (a vCPU's few instructions before its first access
 * after a switch go to the one before).
 */
static unsigned int cur_v = MAX_VCPU;
static uint64_t vtot[MAX_VCPU][NC], vk[MAX_VCPU][MAX_KINDS];
static uint64_t sw_snap[NC], sw_ksnap[MAX_KINDS];

static void vcpu_seen(unsigned int v)
{
	int i;

	if (v == cur_v || v >= MAX_VCPU)
		return;
	if (cur_v < MAX_VCPU) {
		for (i = 0; i < NC; i++)
			vtot[cur_v][i] += tot[i] - sw_snap[i];
		for (i = 0; i < MAX_KINDS; i++)
			vk[cur_v][i] += kind_tot[i] - sw_ksnap[i];
	}
	memcpy(sw_snap, tot, sizeof(tot));
	memcpy(sw_ksnap, kind_tot, sizeof(kind_tot));
	cur_v = v;
}

/* vCPU v's totals now (v the one running: vcpu_seen(v) first). */
static void vcpu_now(int v, uint64_t *c, uint64_t *k)
{
	int i;

	for (i = 0; i < NC; i++)
		c[i] = vtot[v][i] + tot[i] - sw_snap[i];
	for (i = 0; i < MAX_KINDS; i++)
		k[i] = vk[v][i] + kind_tot[i] - sw_ksnap[i];
}

/* vCPU v's totals now, whether or not it is the one running. */
static void vcpu_get(unsigned int v, uint64_t *c, uint64_t *k)
{
	if (v == cur_v) {
		vcpu_now(v, c, k);
	} else {
		memcpy(c, vtot[v], sizeof(vtot[v]));
		memcpy(k, vk[v], sizeof(vk[v]));
	}
}

/* A window's counts since it opened (or the region began) into a sum. */
static void win_add(unsigned int v, uint64_t *sum, uint64_t *ksum)
{
	uint64_t c[NC], k[MAX_KINDS];
	int i;

	vcpu_get(v, c, k);
	for (i = 0; i < NC; i++)
		sum[i] += c[i] - win_snap[v][i];
	for (i = 0; i < MAX_KINDS; i++)
		ksum[i] += k[i] - win_ksnap[v][i];
}

/* A window on vCPU v ends, or is cut at the region's end. */
static void win_end(unsigned int v)
{
	if (v == region_v) {
		win_add(v, excl, excl_k);
		excl_n++;
	} else if (win_ipi[v]) {
		win_add(v, kept, kept_k);
	}
}

enum { W_ENTRY = 1, W_RETURN };

/* An interrupt entry or return (udata) on a vCPU. */
static void irq_event(unsigned int vcpu, void *udata)
{
	int ev = (int)(uintptr_t)udata;

	if (vcpu >= MAX_VCPU)
		return;
	pthread_mutex_lock(&lock);
	vcpu_seen(vcpu);
	if (ev == W_ENTRY && !in_win[vcpu]++) {
		win_ipi[vcpu] = false;
		vcpu_now(vcpu, win_snap[vcpu], win_ksnap[vcpu]);
	} else if (ev == W_RETURN && in_win[vcpu] && !--in_win[vcpu] && open_region) {
		win_end(vcpu);
	}
	pthread_mutex_unlock(&lock);
}

static void marker(unsigned int vcpu, void *udata)
{
	int m = (int)(uintptr_t)udata;
	uint64_t c[NC], k[MAX_KINDS];
	struct entry *e;
	unsigned int v;
	int i;

	pthread_mutex_lock(&lock);
	vcpu_seen(vcpu);
	switch (m) {
	case M_BIT0:
	case M_BIT1:
		next_id = next_id << 1 | (m == M_BIT1);
		bits++;
		break;
	case M_IPI:
	case M_IRQ: {
		uint64_t *a = m == M_IPI ? ipi_addr : irq_addr;
		int *na = m == M_IPI ? &nipi : &nirq;

		if (bits != 64 || *na == (m == M_IPI ? MAX_IPI : MAX_IRQ))
			errors++;
		else
			a[(*na)++] = next_id;
		next_id = bits = 0;
		break;
	}
	case M_COMMIT:
		/* Translate again, everything (and the entry points) instrumented. */
		counting = true;
		qemu_plugin_reset(self, reinstall);
		break;
	case M_BEGIN:
		if (open_region || bits != 32 || !counting)
			errors++;
		cur_id = (uint32_t)next_id;
		region_v = vcpu;
		next_id = bits = 0;
		vcpu_now(vcpu, snap, kind_snap);
		ipi_snap = tot[C_IPI];
		memset(excl, 0, sizeof(excl));
		memset(excl_k, 0, sizeof(excl_k));
		memset(kept, 0, sizeof(kept));
		memset(kept_k, 0, sizeof(kept_k));
		excl_n = 0;
		/*
		 * The region's vCPU runs the bench's user code: in no
		 * interrupt, whatever an exit that never returned left.
		 */
		in_win[vcpu] = 0;
		/* A window already open: only its part inside the region. */
		for (v = 0; v < MAX_VCPU; v++)
			if (in_win[v])
				vcpu_get(v, win_snap[v], win_ksnap[v]);
		open_region = true;
		break;
	case M_END:
		if (!open_region) {
			errors++;
			break;
		}
		for (v = 0; v < MAX_VCPU; v++)
			if (in_win[v])
				win_end(v);
		open_region = false;
		e = lookup(cur_id);
		if (!e) {
			errors++;
			break;
		}
		vcpu_now(vcpu, c, k);
		for (i = 0; i < NC; i++)
			c[i] = c[i] - snap[i] - excl[i] + kept[i];
		/* Wherever they ran, windows or not (only ever on other vCPUs). */
		c[C_IPI] = tot[C_IPI] - ipi_snap;
		e->regions++;
		for (i = 0; i < NC; i++)
			e->c[i] += c[i];
		for (i = 0; i < MAX_KINDS; i++)
			e->kinds[i] += k[i] - kind_snap[i] - excl_k[i] + kept_k[i];
		e->irqs_out += excl_n;
		e->irqs_out_insns += excl[C_USER] + excl[C_KERNEL];
		break;
	}
	pthread_mutex_unlock(&lock);
}

/* ---- execution (one thread runs every vCPU: see the head) ---- */

static void mem_access(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t va, void *u)
{
	if (vcpu != cur_v)
		vcpu_seen(vcpu);
	(void)va;
	(void)u;
	tot[qemu_plugin_mem_is_store(info) ? C_STORE : C_LOAD]++;
}

static void tlbi_exec(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	tot[C_TLBI]++;
	kind_tot[(uintptr_t)udata]++;
}

static void ipi_exec(unsigned int vcpu, void *udata)
{
	(void)udata;
	if (vcpu == region_v || vcpu >= MAX_VCPU)
		return;
	vcpu_seen(vcpu);
	tot[C_IPI]++;
	win_ipi[vcpu] = true;
}

/*
 * The profile (prof=FILE, BENCH_COUNT_PROF=1): which code a region ran,
 * to find where counts come from and why two runs differ
 * (bench/count-prof.sh names the functions). Per region id and
 * translation block: its runs on the region's vCPU outside interrupts,
 * inside an interrupt window there (which the counts leave out) and on
 * other vCPUs. A block run whole is assumed; a fault in its middle is
 * rare enough for a profile. Slower: a callback per block run. A block with atomics is also split by the block the vCPU ran
 * before it, which for a lock function's first block is its caller's.
 */
struct tbrec {
	uint64_t vaddr;
	uint32_t insns, atomics;
};
struct prof_ent {
	const struct tbrec *tb, *prev;
	uint32_t id;
	uint64_t runs[3];
};
#define PROF_TABLE (1u << 20)
static char *prof_path;
static struct prof_ent *prof;
static const struct tbrec *prof_prev[MAX_VCPU];

static void tb_exec(unsigned int vcpu, void *udata)
{
	const struct tbrec *tb = udata, *prev;
	uint64_t h;
	uint32_t i;
	int cls;

	if (vcpu >= MAX_VCPU)
		return;
	prev = tb->atomics ? prof_prev[vcpu] : NULL;
	prof_prev[vcpu] = tb;
	if (!open_region)
		return;
	cls = vcpu != region_v ? 2 : in_win[vcpu] ? 1 : 0;
	h = (tb->vaddr ^ (prev ? prev->vaddr : 0) * 31 ^
	     (uint64_t)cur_id * 0x9E3779B97F4A7C15ull) * 0xff51afd7ed558ccdull;
	for (i = 0; i < PROF_TABLE; i++) {
		struct prof_ent *p = &prof[(h + i) & (PROF_TABLE - 1)];

		if (!p->tb) {
			p->tb = tb;
			p->prev = prev;
			p->id = cur_id;
		} else if (p->tb != tb || p->prev != prev || p->id != cur_id) {
			continue;
		}
		p->runs[cls]++;
		return;
	}
	errors++;
}

static void prof_write(void)
{
	FILE *f = fopen(prof_path, "w");
	uint32_t i;

	if (!f)
		return;
	fprintf(f, "# id vaddr insns atomics runs_region runs_irq runs_other from\n");
	for (i = 0; i < PROF_TABLE; i++) {
		const struct prof_ent *p = &prof[i];

		if (p->tb)
			fprintf(f, "%#x %#" PRIx64 " %u %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %#" PRIx64 "\n",
				p->id, p->tb->vaddr, p->tb->insns, p->tb->atomics,
				p->runs[0], p->runs[1], p->runs[2], p->prev ? p->prev->vaddr : 0);
	}
	fclose(f);
}

/* ---- translation ---- */

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);
	struct tbrec *rec = NULL;

	(void)id;
	if (prof && counting) {
		/* Kept to the end: the profile points at it. */
		rec = calloc(1, sizeof(*rec));
		if (rec) {
			rec->vaddr = qemu_plugin_tb_vaddr(tb);
			rec->insns = n;
			qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, rec);
		}
	}
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const uint8_t *b = qemu_plugin_insn_data(insn);
		size_t sz = qemu_plugin_insn_size(insn);
		uint64_t va = qemu_plugin_insn_vaddr(insn);
		int kernel = (int)(va >> 63), atomic, m, j, k = -1;
		char tk[24] = "";
		const char *tx;

		if (arm64) {
			uint32_t w = 0;

			if (sz == 4)
				memcpy(&w, b, 4);
			m = arm64_marker(w);
			atomic = arm64_classify(w, tk, sizeof(tk));
		} else {
			m = x86_marker(b, sz);
			atomic = x86_classify(b, sz, &tx);
			if (tx)
				snprintf(tk, sizeof(tk), "%s", tx);
		}
		if (m != M_NONE) {
			/* Markers are the bench's, not counted as its instructions. */
			qemu_plugin_register_vcpu_insn_exec_cb(insn, marker, QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)m);
			continue;
		}
		if (!counting)
			continue;
		qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
							   &tot[kernel ? C_KERNEL : C_USER], 1);
		/*
		 * QEMU 7.2 mixes up an instruction's memory inline ops when it
		 * has more than one (a load counted as two stores): a callback,
		 * which asks whether each access was a store.
		 */
		qemu_plugin_register_vcpu_mem_cb(insn, mem_access, QEMU_PLUGIN_CB_NO_REGS,
						 QEMU_PLUGIN_MEM_RW, NULL);
		if (atomic)
			qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
								   &tot[C_ATOMIC], 1);
		if (atomic && rec)
			rec->atomics++;
		/* The rare ones by callback: no third inline op on an instruction. */
		if (tk[0]) {
			pthread_mutex_lock(&lock);
			k = kind_index(tk);
			pthread_mutex_unlock(&lock);
			qemu_plugin_register_vcpu_insn_exec_cb(insn, tlbi_exec, QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)k);
		}
		for (j = 0; j < nipi; j++)
			if (va == ipi_addr[j])
				qemu_plugin_register_vcpu_insn_exec_cb(insn, ipi_exec,
								       QEMU_PLUGIN_CB_NO_REGS, NULL);
		for (j = 0; j < nirq; j++)
			if (va == irq_addr[j])
				qemu_plugin_register_vcpu_insn_exec_cb(insn, irq_event,
								       QEMU_PLUGIN_CB_NO_REGS,
								       (void *)W_ENTRY);
		if (kernel && (arm64 ? sz == 4 && arm64_is_eret(*(const uint32_t *)b) :
			       x86_is_iret(b, sz)))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, irq_event,
							       QEMU_PLUGIN_CB_NO_REGS, (void *)W_RETURN);
	}
}

static void at_exit(qemu_plugin_id_t id, void *p);

static void reinstall(qemu_plugin_id_t id)
{
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	FILE *f = fopen(out_path, "w");
	char line[256];
	int i, j;

	(void)id;
	(void)p;
	if (!f) {
		snprintf(line, sizeof(line), "fr_count: cannot write %s\n", out_path);
		qemu_plugin_outs(line);
		return;
	}
	fprintf(f, "# fr_count: arch=%s errors=%" PRIu64 " open_at_exit=%d\n",
		arm64 ? "arm64" : "x86_64", errors, open_region);
	fprintf(f, "# id regions insns_user insns_kernel loads stores atomics tlbi ipis "
		"irqs_out irqs_out_insns tlbi_kinds\n");
	for (i = 0; i < TABLE; i++) {
		struct entry *e = &table[i];
		int any = 0;

		if (!e->used)
			continue;
		fprintf(f, "%#x %" PRIu64, e->id, e->regions);
		for (j = 0; j < NC; j++)
			fprintf(f, " %" PRIu64, e->c[j]);
		fprintf(f, " %" PRIu64 " %" PRIu64 " ", e->irqs_out, e->irqs_out_insns);
		for (j = 0; j < nkinds; j++)
			if (e->kinds[j]) {
				fprintf(f, "%s%s=%" PRIu64, any ? ";" : "", kind_name[j], e->kinds[j]);
				any = 1;
			}
		fputs(any ? "\n" : "-\n", f);
	}
	fclose(f);
	if (prof)
		prof_write();
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	if (!strcmp(info->target_name, "aarch64"))
		arm64 = true;
	else if (strcmp(info->target_name, "x86_64")) {
		fprintf(stderr, "fr_count: target %s: x86_64 or aarch64 only\n", info->target_name);
		return -1;
	}
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			out_path = strdup(argv[i] + 4);
		} else if (!strncmp(argv[i], "prof=", 5)) {
			prof_path = strdup(argv[i] + 5);
		} else if (!strncmp(argv[i], "ipi=", 4) && nipi < MAX_IPI) {
			ipi_addr[nipi++] = strtoull(argv[i] + 4, NULL, 16);
		} else {
			fprintf(stderr, "fr_count: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	if (!out_path) {
		fprintf(stderr, "fr_count: out=FILE is required\n");
		return -1;
	}
	table = calloc(TABLE, sizeof(*table));
	if (!table)
		return -1;
	if (prof_path) {
		prof = calloc(PROF_TABLE, sizeof(*prof));
		if (!prof)
			return -1;
	}
	self = id;
	reinstall(id);
	return 0;
}
