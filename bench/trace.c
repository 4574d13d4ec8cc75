// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include "bench.h"

/* ---- tracing: tlb:tlb_flush events around the moves of one repetition ---- */

static char tr_dir[64];
static int tr_on_fd = -1;
static char tr_saved_buf[32], tr_saved_on[8], tr_saved_fork[8], tr_saved_cmd[8];
static int tr_ok, tr_mounted, tr_enabled_here;

static int tr_write(const char *file, const char *s)
{
	return t_write_file(tr_dir, file, s, O_TRUNC);
}

/*
 * arm64 has no TLB flush event that fires (tlb:tlb_flush is x86's): its
 * flushes are inline TLBI sequences. There each flush is counted with a
 * kprobe event, as tests/t_remap_tlb does: on the module's one range
 * flush, and on mm/mremap.c's movers that end in one flush each, where
 * the kernel kept them out of line (6.1; 6.12 and 7.x inline them, and
 * mremap(2)'s column then shows only what stayed out of line).
 */
#ifdef __aarch64__
#define TR_PROBE_FILE	"kprobe_events"
static char tr_probes[8][32];
static int tr_nprobes;

static int tr_append(const char *file, const char *s)
{
	return t_write_file(tr_dir, file, s, O_APPEND);
}

static int tr_probe_add(const char *where, const char *fn)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "p:fr_bench/%s %s%s\n", fn, where, fn);
	if (tr_append("kprobe_events", cmd))
		return -1;
	snprintf(tr_probes[tr_nprobes++], sizeof(tr_probes[0]), "%s", fn);
	return 0;
}
#else
#define TR_PROBE_FILE	"events/tlb/tlb_flush/enable"
#endif

const char *tr_setup(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char p[128], buf[32];
	unsigned i;

	if (!cfg.trace)
		return "disabled";
	for (i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/" TR_PROBE_FILE, dirs[i]);
		if (access(p, W_OK) == 0)
			break;
	}
	if (i == 2 && !tr_mounted &&
	    mount("nodev", dirs[0], "tracefs", 0, NULL) == 0) {
		/* Not mounted here (natively, say): mount it for the run. */
		tr_mounted = 1;
		return tr_setup();
	}
	if (i == 2)
		return "no writable tracefs with " TR_PROBE_FILE;
	snprintf(tr_dir, sizeof(tr_dir), "%s", dirs[i]);
	snprintf(p, sizeof(p), "%s/buffer_size_kb", tr_dir);
	if (t_read_str(p, tr_saved_buf, sizeof(tr_saved_buf)) == 0)
		tr_saved_buf[strcspn(tr_saved_buf, " \n")] = 0;
	snprintf(p, sizeof(p), "%s/tracing_on", tr_dir);
	if (t_read_str(p, tr_saved_on, sizeof(tr_saved_on)) == 0)
		tr_saved_on[strcspn(tr_saved_on, " \n")] = 0;
	snprintf(p, sizeof(p), "%s/options/event-fork", tr_dir);
	if (t_read_str(p, tr_saved_fork, sizeof(tr_saved_fork)) == 0)
		tr_saved_fork[strcspn(tr_saved_fork, " \n")] = 0;
	if (cfg.trace_buf_kb) {
		snprintf(buf, sizeof(buf), "%d", cfg.trace_buf_kb);
		tr_write("buffer_size_kb", buf);
	}
	/*
	 * record-cmd would hook sched_switch whenever an event is enabled,
	 * patching __schedule() on every CPU (an int3 Oops under QEMU TCG
	 * was seen doing that); comm names are not needed here.
	 */
	if (tr_write("tracing_on", "0"))
		return "cannot write tracing_on";
#ifdef __aarch64__
	snprintf(p, sizeof(p), "%s/options/record-cmd", tr_dir);
	if (t_read_str(p, tr_saved_cmd, sizeof(tr_saved_cmd)) == 0)
		tr_saved_cmd[strcspn(tr_saved_cmd, " \n")] = 0;
	tr_write("options/record-cmd", "0");
	if (tr_probe_add("fastremap:", T_FLUSH_MODULE_FN))
		return "no kprobe on the module's flush (fastremap:" T_FLUSH_MODULE_FN ")";
	for (i = 0; i < T_FLUSH_NKFNS; i++)
		tr_probe_add("", t_flush_kfns[i]);
	/*
	 * Armed only around the untimed, counted repetition (tr_begin(),
	 * tr_end()): an armed kprobe traps on every hit, tracing_on or not,
	 * and only the module's flush and 6.1's out-of-line movers are
	 * probed, so the timed calls of those contenders alone paid a trap
	 * (about 10 us per call on 7.2 under TCG).
	 */
	if (tr_write("events/fr_bench/enable", "1") ||
	    tr_write("events/fr_bench/enable", "0"))
		return "cannot enable the kprobe events";
	tr_enabled_here = 1;
#else
	/* Enabled on the kernel command line (the VM does): leave it so. */
	snprintf(p, sizeof(p), "%s/events/tlb/tlb_flush/enable", tr_dir);
	if (t_read_str(p, buf, sizeof(buf)) || buf[0] != '1') {
		snprintf(p, sizeof(p), "%s/options/record-cmd", tr_dir);
		if (t_read_str(p, tr_saved_cmd, sizeof(tr_saved_cmd)) == 0)
			tr_saved_cmd[strcspn(tr_saved_cmd, " \n")] = 0;
		tr_write("options/record-cmd", "0");
		if (tr_write("events/tlb/tlb_flush/enable", "1"))
			return "cannot enable tlb:tlb_flush";
		tr_enabled_here = 1;
	}
#endif
	if (cfg.trace_pids) {
		/* Our threads only: main and the writer, which the option follows. */
		tr_write("options/event-fork", "1");
		snprintf(buf, sizeof(buf), "%d", getpid());
		if (tr_write("set_event_pid", buf))
			return "cannot set set_event_pid";
	}
	snprintf(p, sizeof(p), "%s/tracing_on", tr_dir);
	tr_on_fd = open(p, O_WRONLY | O_CLOEXEC);
	if (tr_on_fd < 0)
		return "cannot open tracing_on";
	tr_ok = 1;
	return NULL;
}

void tr_teardown(void)
{
	if (!tr_ok) {
		if (tr_mounted)
			umount("/sys/kernel/tracing");
		return;
	}
	tr_write("tracing_on", "0");
#ifdef __aarch64__
	tr_write("events/fr_bench/enable", "0");
	for (int j = 0; j < tr_nprobes; j++) {
		char cmd[64];

		snprintf(cmd, sizeof(cmd), "-:fr_bench/%.31s\n", tr_probes[j]);
		tr_append("kprobe_events", cmd);
	}
	tr_nprobes = 0;
#else
	if (tr_enabled_here)
		tr_write("events/tlb/tlb_flush/enable", "0");
#endif
	if (cfg.trace_pids) {
		tr_write("set_event_pid", "");
		if (tr_saved_fork[0])
			tr_write("options/event-fork", tr_saved_fork);
	}
	if (cfg.trace_buf_kb && tr_saved_buf[0])
		tr_write("buffer_size_kb", tr_saved_buf);
	tr_write("trace", "");
	if (tr_saved_cmd[0])
		tr_write("options/record-cmd", tr_saved_cmd);
	/* Put back what the system had (natively, someone may be tracing). */
	if (tr_saved_on[0])
		tr_write("tracing_on", tr_saved_on);
	close(tr_on_fd);
	tr_ok = 0;
	if (tr_mounted)
		umount(tr_dir);
}

/* Only around the moves of a traced repetition. */
int tracing;
void tr_on(void)
{
	if (tracing && pwrite(tr_on_fd, "1", 1, 0) != 1)
		tracing = 0;
}

void tr_off(void)
{
	if (tracing && pwrite(tr_on_fd, "0", 1, 0) != 1)
		tracing = 0;
}


/* arm64: the kprobes off again (tr_begin() arms them). */
void tr_disarm(void)
{
#ifdef __aarch64__
	if (tr_ok)
		tr_write("events/fr_bench/enable", "0");
#endif
}

void tr_begin(void)
{
	if (!tr_ok)
		return;
	tr_write("trace", "");	/* clears every CPU's buffer */
#ifdef __aarch64__
	if (tr_write("events/fr_bench/enable", "1"))
		return;
#endif
	tracing = 1;
}

static const char *reason_key(const char *text, char *buf, size_t size)
{
	static const char *const map[][2] = {
		{ "flush on task switch", "task_switch" },
		{ "remote shootdown", "remote" },
		{ "local shootdown", "local" },
		{ "local mm shootdown", "local_mm" },
		{ "remote ipi send", "ipi_send" },
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcasecmp(text, map[i][0]))
			return map[i][1];
	snprintf(buf, size, "%s", text);
	for (i = 0; buf[i]; i++) {
		buf[i] = tolower((unsigned char)buf[i]);
		if (buf[i] == ' ' || buf[i] == ',' || buf[i] == ';' || buf[i] == '=')
			buf[i] = '_';
	}
	return buf;
}

/* One more event, of this reason (the first MAX_REASONS reasons kept). */
static void fc_count(struct flushcount *fc, const char *reason)
{
	int i;

	fc->total++;
	for (i = 0; i < fc->nreasons && strcmp(fc->reason[i], reason); i++)
		;
	if (i == fc->nreasons) {
		if (i == MAX_REASONS)
			return;
		snprintf(fc->reason[i], sizeof(fc->reason[i]), "%.23s", reason);
		fc->nreasons++;
	}
	fc->count[i]++;
}

void tr_end(struct flushcount *fc)
{
	char line[512], p[128], key[24], *r, *e;
	FILE *f;
	long cpu;

	memset(fc, 0, sizeof(*fc));
	if (!tr_ok)
		return;
	tr_disarm();
	if (!tracing)
		return;		/* tracing_on could not be written: no count */
	tr_off();
	tracing = 0;
	snprintf(p, sizeof(p), "%s/trace", tr_dir);
	f = fopen(p, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
#ifdef __aarch64__
		/* arm64: the probed function is the reason. */
		const char *fn = NULL;

		for (int i = 0; i < tr_nprobes && !fn; i++) {
			snprintf(p, sizeof(p), " %.31s:", tr_probes[i]);
			if (line[0] != '#' && strstr(line, p))
				fn = tr_probes[i];
		}
		if (!fn)
			continue;
		fc_count(fc, fn);
		continue;
#endif
		if (line[0] == '#' || !strstr(line, "tlb_flush:"))
			continue;
		r = strstr(line, "reason:");
		if (!r) {
			fc->total++;
			continue;
		}
		r += 7;
		e = strstr(r, " (");
		if (!e)
			e = r + strcspn(r, "\n");
		*e = 0;
		fc_count(fc, reason_key(r, key, sizeof(key)));
	}
	fclose(f);
	/* Events the ring buffer dropped: the counts are then a lower bound. */
	for (cpu = 0; cpu < 1024; cpu++) {
		char st[1024], *o;

		snprintf(p, sizeof(p), "%s/per_cpu/cpu%ld/stats", tr_dir, cpu);
		if (t_read_str(p, st, sizeof(st)))
			break;
		o = strstr(st, "overrun:");
		if (o)
			fc->lost += strtoull(o + 8, NULL, 10);
	}
	fc->valid = 1;
}

