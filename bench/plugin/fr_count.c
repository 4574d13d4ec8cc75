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
 * again" and start counting (fr_bench sends the functions' addresses from
 * /proc/kallsyms at start, then 6; a region before it is an error).
 *
 * Counted while a region is open, on every vCPU (the move runs on one,
 * the flush IPIs it sends run on the other):
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
 * region's counts are the totals at its end less those at its begin.
 *
 * Timer interrupts on any vCPU are left out of every count (their number
 * and instructions are reported beside): how many land in a region
 * depends on how long it took on the host. fr_bench sends the interrupt
 * entries (K = 7) and the timer handlers (K = 8) as it sends the IPI
 * handlers; see irq_event().
 *
 * Arguments: out=FILE (required; one line per region id at exit),
 * ipi=HEX (repeatable). Output lines:
 *   id regions insns_user insns_kernel loads stores atomics tlbi ipis
 *   timer_irqs timer_insns kinds
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
#define TABLE 65536		/* region ids in one run, at most */

static uint64_t tot[NC];
static uint64_t kind_tot[MAX_KINDS];
static char kind_name[MAX_KINDS][24];
static int nkinds;

static uint64_t ipi_addr[MAX_IPI];
static int nipi;

/*
 * Timer interrupts, left out of the counts: a window opens at an
 * interrupt entry (irq_addr), closes at the vCPU's next interrupt return
 * (IRETQ, ERET), and is a timer's when it ran a timer handler
 * (timer_addr; x86-64: the entry is the timer's own vector). Their
 * number and instructions are reported beside.
 */
#define MAX_VCPU 64
static uint64_t irq_addr[MAX_IPI], timer_addr[MAX_IPI];
static int nirq, ntimer;
static bool in_win[MAX_VCPU], win_timer[MAX_VCPU];
static uint64_t win_snap[MAX_VCPU][NC], win_ksnap[MAX_VCPU][MAX_KINDS];
static uint64_t excl[NC], excl_k[MAX_KINDS], excl_n;
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
static uint64_t snap[NC], kind_snap[MAX_KINDS];
static uint32_t cur_id;
static uint64_t errors;		/* nested begins, ends without a begin */

struct entry {
	uint32_t id;
	bool used;
	uint64_t regions;
	uint64_t c[NC];
	uint64_t kinds[MAX_KINDS];
	uint64_t timer_n, timer_insns;
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

/* Timer windows (lock held): restart at the totals now; close into excl[]. */
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

/* vCPU v's window, restarted now or closed into excl[]; v is running. */
static void win_restart(int v)
{
	vcpu_seen(v);
	vcpu_now(v, win_snap[v], win_ksnap[v]);
}

static void win_close(int v)
{
	uint64_t c[NC], k[MAX_KINDS];
	int i;

	vcpu_seen(v);
	vcpu_now(v, c, k);
	for (i = 0; i < NC; i++)
		excl[i] += c[i] - win_snap[v][i];
	for (i = 0; i < MAX_KINDS; i++)
		excl_k[i] += k[i] - win_ksnap[v][i];
}

/* The same for a vCPU that may not be the one running (a region's edges). */
static void win_edge(int v, bool close)
{
	uint64_t c[NC], k[MAX_KINDS];
	int i;

	if ((unsigned int)v == cur_v) {
		vcpu_now(v, c, k);
	} else {
		memcpy(c, vtot[v], sizeof(c));
		memcpy(k, vk[v], sizeof(k));
	}
	for (i = 0; close && i < NC; i++)
		excl[i] += c[i] - win_snap[v][i];
	for (i = 0; close && i < MAX_KINDS; i++)
		excl_k[i] += k[i] - win_ksnap[v][i];
	memcpy(win_snap[v], c, sizeof(c));
	memcpy(win_ksnap[v], k, sizeof(k));
}

enum { W_ENTRY = 1, W_TIMER, W_RETURN };

/*
 * An interrupt entry, timer handler or return (udata) on a vCPU. A nested
 * entry (an exception inside the handler) keeps the outer window.
 */
static void irq_event(unsigned int vcpu, void *udata)
{
	int ev = (int)(uintptr_t)udata;

	if (vcpu >= MAX_VCPU)
		return;
	pthread_mutex_lock(&lock);
	if (ev == W_ENTRY && !in_win[vcpu]) {
		in_win[vcpu] = true;
		win_timer[vcpu] = false;
		win_restart(vcpu);
	} else if (ev == W_TIMER && in_win[vcpu]) {
		win_timer[vcpu] = true;
	} else if (ev == W_RETURN && in_win[vcpu]) {
		in_win[vcpu] = false;
		if (win_timer[vcpu] && open_region) {
			win_close(vcpu);
			excl_n++;
		}
	}
	pthread_mutex_unlock(&lock);
}

static void marker(unsigned int vcpu, void *udata)
{
	int m = (int)(uintptr_t)udata;
	struct entry *e;
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
	case M_IRQ:
	case M_TIMER: {
		uint64_t *a = m == M_IPI ? ipi_addr : m == M_IRQ ? irq_addr : timer_addr;
		int *na = m == M_IPI ? &nipi : m == M_IRQ ? &nirq : &ntimer;

		if (bits != 64 || *na == MAX_IPI)
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
		memcpy(snap, tot, sizeof(snap));
		memcpy(kind_snap, kind_tot, sizeof(kind_snap));
		memset(excl, 0, sizeof(excl));
		memset(excl_k, 0, sizeof(excl_k));
		excl_n = 0;
		/* A timer window already open: only its part inside the region. */
		for (i = 0; i < MAX_VCPU; i++)
			if (in_win[i])
				win_edge(i, false);
		open_region = true;
		break;
	case M_END:
		if (!open_region) {
			errors++;
			break;
		}
		for (i = 0; i < MAX_VCPU; i++)
			if (in_win[i] && win_timer[i])
				win_edge(i, true);
		open_region = false;
		e = lookup(cur_id);
		if (!e) {
			errors++;
			break;
		}
		e->regions++;
		for (i = 0; i < NC; i++)
			e->c[i] += tot[i] - snap[i] - excl[i];
		for (i = 0; i < MAX_KINDS; i++)
			e->kinds[i] += kind_tot[i] - kind_snap[i] - excl_k[i];
		e->timer_n += excl_n;
		e->timer_insns += excl[C_USER] + excl[C_KERNEL];
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
	if (vcpu != region_v)
		tot[C_IPI]++;
}

/* ---- translation ---- */

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	(void)id;
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
		/* Entry first, then the classifier: x86's timer entry is both. */
		for (j = 0; j < nirq; j++)
			if (va == irq_addr[j])
				qemu_plugin_register_vcpu_insn_exec_cb(insn, irq_event,
								       QEMU_PLUGIN_CB_NO_REGS,
								       (void *)W_ENTRY);
		for (j = 0; j < ntimer; j++)
			if (va == timer_addr[j])
				qemu_plugin_register_vcpu_insn_exec_cb(insn, irq_event,
								       QEMU_PLUGIN_CB_NO_REGS,
								       (void *)W_TIMER);
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
		"timer_irqs timer_insns tlbi_kinds\n");
	for (i = 0; i < TABLE; i++) {
		struct entry *e = &table[i];
		int any = 0;

		if (!e->used)
			continue;
		fprintf(f, "%#x %" PRIu64, e->id, e->regions);
		for (j = 0; j < NC; j++)
			fprintf(f, " %" PRIu64, e->c[j]);
		fprintf(f, " %" PRIu64 " %" PRIu64 " ", e->timer_n, e->timer_insns);
		for (j = 0; j < nkinds; j++)
			if (e->kinds[j]) {
				fprintf(f, "%s%s=%" PRIu64, any ? ";" : "", kind_name[j], e->kinds[j]);
				any = 1;
			}
		fputs(any ? "\n" : "-\n", f);
	}
	fclose(f);
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
	self = id;
	reinstall(id);
	return 0;
}
