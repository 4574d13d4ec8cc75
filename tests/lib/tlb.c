// SPDX-License-Identifier: GPL-2.0
/*
 * Counting TLB flushes: the tlb:tlb_flush tracepoint on x86-64, kprobe
 * events on arm64 (tlib.h).
 */
#define _GNU_SOURCE
#include "tlib.h"

/*
 * arm64 has no TLB flush tracepoint that fires (the tlb:tlb_flush event
 * exists there, but only x86 emits it): its flushes are inline TLBI
 * sequences. There the flushes are counted with kprobe events instead,
 * each hit one flush, its "reason" the function's name:
 *  - fr_arch_flush_moved, the module's flush (module/arch.h keeps it out
 *    of line for this): what the ioctl flushed, counted apart from the
 *    module's own tlb_flushes counter;
 *  - mm/mremap.c's movers that end in one range flush each, those this
 *    kernel did not inline: move_normal_pmd, move_normal_pud (always),
 *    move_ptes and move_huge_pmd (when something present moved): for
 *    mremap(2) an upper bound of its flushes per call.
 */
const char *const t_flush_kfns[T_FLUSH_NKFNS] = {
	"move_ptes", "move_normal_pmd", "move_normal_pud", "move_huge_pmd",
};

#ifdef __aarch64__
#define T_TLB_PROBE_FILE	"kprobe_events"
#else
#define T_TLB_PROBE_FILE	"events/tlb/tlb_flush/enable"
#endif

/* The tracefs directory with the flush event (or kprobe events), or NULL. */
const char *t_tracefs(void)
{
	static const char *const dirs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char path[128];

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(path, sizeof(path), "%s/" T_TLB_PROBE_FILE, dirs[i]);
		if (access(path, W_OK) == 0)
			return dirs[i];
	}
	return NULL;
}

/* The number of this reason in c, added if new. */
static int *t_tlb_slot(struct t_tlb_counts *c, const char *reason)
{
	int i;

	for (i = 0; i < c->nreasons; i++)
		if (!strcmp(c->r[i].reason, reason))
			return &c->r[i].count;
	if (i == T_TLB_REASONS)
		i--;	/* overflow: lump into the last one */
	else
		c->nreasons++;
	snprintf(c->r[i].reason, sizeof(c->r[i].reason), "%.47s", reason);
	return &c->r[i].count;
}

/* The count of one reason ("local mm shootdown"...), by prefix, any case. */
int t_tlb_reason(const struct t_tlb_counts *c, const char *reason)
{
	int n = 0;

	for (int i = 0; i < c->nreasons; i++)
		if (!strncasecmp(c->r[i].reason, reason, strlen(reason)))
			n += c->r[i].count;
	return n;
}

static int t_tlb_session;	/* t_tlb_trace_begin() was called */
static int t_tlb_owned;	/* ... and enabled the event itself */
static char t_tlb_was_on[4];	/* tracing_on before it */

/*
 * Starts a series of t_tlb_trace_count() calls; t_tlb_trace_end() ends it.
 * The test VMs enable the event on the kernel command line, and then it
 * is left alone: turning a tracepoint on or off patches kernel text under
 * every CPU, which on 7.2 under QEMU TCG can end in "Oops: int3" (see
 * tests/harness/run.sh). Without that, the event is enabled here (with record-cmd
 * off first, or enabling it would hook sched_switch too) and disabled by
 * t_tlb_trace_end(). No filter either: lines are matched by pid when read.
 * Returns 0 or -errno.
 */
/* Saves tracing_on, then turns recording off: a session starts paused. */
static void t_tlb_pause(const char *dir)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/tracing_on", dir);
	if (t_read_str(path, t_tlb_was_on, sizeof(t_tlb_was_on)))
		t_tlb_was_on[0] = '1';
	t_write_file(dir, "tracing_on", "0", O_TRUNC);
}

/* Clears the buffer and puts tracing_on back: a session's last steps. */
static void t_tlb_resume(const char *dir)
{
	t_write_file(dir, "trace", "", O_TRUNC);
	t_write_file(dir, "tracing_on", t_tlb_was_on[0] == '0' ? "0" : "1", O_TRUNC);
	t_tlb_session = t_tlb_owned = 0;
}

#ifdef __aarch64__
/* The kprobe events t_tlb_trace_begin() added, by function name. */
static char t_tlb_probes[5][32];
static int t_tlb_nprobes;

/* What the arm64 counts are made of, for the tests' diagnostics. */
const char *t_tlb_trace_source(void)
{
	static char b[200];
	size_t at = 0;

	at += snprintf(b, sizeof(b), "kprobe events on");
	for (int i = 0; i < t_tlb_nprobes && at < sizeof(b); i++)
		at += snprintf(b + at, sizeof(b) - at, " %s", t_tlb_probes[i]);
	return b;
}

/* Whether t_tlb_trace_begin() could probe the kernel function @fn. */
int t_tlb_probed(const char *fn)
{
	for (int i = 0; i < t_tlb_nprobes; i++)
		if (!strcmp(t_tlb_probes[i], fn))
			return 1;
	return 0;
}

static int t_tlb_add_probe(const char *dir, const char *fn,
			   const char *where)
{
	char cmd[128];
	int ret;

	snprintf(cmd, sizeof(cmd), "p:fr_flush/%s %s%s\n", fn, where, fn);
	ret = t_write_file(dir, "kprobe_events", cmd, O_APPEND);
	if (!ret)
		snprintf(t_tlb_probes[t_tlb_nprobes++], sizeof(t_tlb_probes[0]),
			 "%s", fn);
	return ret;
}

void t_tlb_trace_end(void)
{
	const char *dir = t_tracefs();
	char cmd[64];

	if (!dir || !t_tlb_session)
		return;
	t_write_file(dir, "events/fr_flush/enable", "0", O_TRUNC);
	for (int i = 0; i < t_tlb_nprobes; i++) {
		snprintf(cmd, sizeof(cmd), "-:fr_flush/%.31s\n", t_tlb_probes[i]);
		t_write_file(dir, "kprobe_events", cmd, O_APPEND);
	}
	t_tlb_nprobes = 0;
	t_tlb_resume(dir);
}

/*
 * The module's flush must be probed (else -errno); each of mremap's
 * movers is probed if this kernel kept it out of line.
 */
int t_tlb_trace_begin(void)
{
	const char *dir = t_tracefs();
	int ret;

	if (!dir)
		return -ENOENT;
	t_tlb_pause(dir);
	t_write_file(dir, "options/record-cmd", "0", O_TRUNC);
	t_tlb_nprobes = 0;
	ret = t_tlb_add_probe(dir, T_FLUSH_MODULE_FN, "fastremap:");
	for (size_t i = 0; !ret && i < ARRAY_SIZE(t_flush_kfns); i++)
		t_tlb_add_probe(dir, t_flush_kfns[i], "");
	if (!ret)
		ret = t_write_file(dir, "events/fr_flush/enable", "1", O_TRUNC);
	t_tlb_session = 1;
	if (ret)
		t_tlb_trace_end();
	return ret;
}
#else
const char *t_tlb_trace_source(void)
{
	return "the tlb:tlb_flush tracepoint";
}

int t_tlb_trace_begin(void)
{
	const char *dir = t_tracefs();
	char path[160], on[4] = "";
	int ret = 0;

	if (!dir)
		return -ENOENT;
	t_tlb_pause(dir);
	snprintf(path, sizeof(path), "%s/events/tlb/tlb_flush/enable", dir);
	if (t_read_str(path, on, sizeof(on)))
		on[0] = 0;
	t_tlb_owned = 0;
	if (on[0] != '1') {
		t_write_file(dir, "options/record-cmd", "0", O_TRUNC);
		ret = t_write_file(dir, "events/tlb/tlb_flush/enable", "1", O_TRUNC);
		t_tlb_owned = !ret;
	}
	t_tlb_session = !ret;
	return ret;
}

void t_tlb_trace_end(void)
{
	const char *dir = t_tracefs();

	if (!dir || !t_tlb_session)
		return;
	if (t_tlb_owned)
		t_write_file(dir, "events/tlb/tlb_flush/enable", "0", O_TRUNC);
	t_tlb_resume(dir);
}
#endif

long t_trace_pid(const char *line, const char **at)
{
	const char *br = strstr(line, " ["), *q;

	*at = br;
	if (!br)
		return -1;
	q = br;
	while (q > line && q[-1] == ' ')
		q--;
	while (q > line && q[-1] >= '0' && q[-1] <= '9')
		q--;
	return q == line || q[-1] != '-' ? -1 : strtol(q, NULL, 10);
}

/*
 * The event name of a trace line and where its fields start, or NULL:
 * "tlb_flush:" on x86; on arm64 "NAME:" of one of the probes.
 */
static char *t_tlb_event(char *line, const char **name)
{
#ifdef __aarch64__
	char pat[48], *ev;

	for (int i = 0; i < t_tlb_nprobes; i++) {
		snprintf(pat, sizeof(pat), " %.31s:", t_tlb_probes[i]);
		ev = strstr(line, pat);
		if (ev) {
			*name = t_tlb_probes[i];
			return ev + 1;
		}
	}
	return NULL;
#else
	*name = NULL;
	return strstr(line, "tlb_flush:");
#endif
}

/*
 * Counts the tlb:tlb_flush events of this process while fn(arg) runs:
 * clears the trace buffer, turns recording on (tracing_on), runs fn,
 * turns it off, reads the buffer and counts the
 * "tlb_flush: pages:N reason:R (n)" lines of this pid by reason. Inside
 * t_tlb_trace_begin()/t_tlb_trace_end() the event stays enabled; otherwise it
 * is enabled and disabled around the call. Returns 0, or -errno (-ENOENT:
 * no tracefs or no such event). Not for concurrent use.
 */
int t_tlb_trace_count(void (*fn)(void *), void *arg,
		      struct t_tlb_counts *out)
{
	const char *dir = t_tracefs();
	char path[160], *line = NULL;
	size_t cap = 0;
	pid_t pid = getpid();
	int ret, own_session = 0;
	FILE *f;

	memset(out, 0, sizeof(*out));
	if (!dir)
		return -ENOENT;
	if (!t_tlb_session) {
		ret = t_tlb_trace_begin();
		if (ret)
			return ret;
		own_session = 1;
	}
	ret = t_write_file(dir, "trace", "", O_TRUNC);	/* clears it */
	if (!ret)
		ret = t_write_file(dir, "tracing_on", "1", O_TRUNC);
	if (!ret)
		fn(arg);
	t_write_file(dir, "tracing_on", "0", O_TRUNC);
	if (ret)
		goto out;

	snprintf(path, sizeof(path), "%s/trace", dir);
	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		goto out;
	}
	while (getline(&line, &cap, f) > 0) {
		const char *name;
		char *ev = t_tlb_event(line, &name), *q, *r, *nl;
		const char *br = NULL;
		long lpid;

		if (line[0] == '#' || !ev)
			continue;
		/* "  comm-PID  [CPU] flags  ts: tlb_flush: pages:N reason:R (n)" */
		lpid = t_trace_pid(line, &br);
		if (!br || br > ev)
			continue;
		if (lpid != pid) {
			out->other++;
			continue;
		}
		if (name) {
			/* arm64: the probed function is the reason. */
			(*t_tlb_slot(out, name))++;
			out->total++;
			continue;
		}
		r = strstr(ev, "reason:");
		r = r ? r + 7 : (char *)"?";
		nl = strchr(r, '\n');
		if (nl)
			*nl = 0;
		/* Drop the numeric " (n)" suffix. */
		q = strrchr(r, '(');
		if (q && q > r && q[-1] == ' ')
			q[-1] = 0;
		(*t_tlb_slot(out, r))++;
		out->total++;
	}
	free(line);
	fclose(f);
out:
	if (own_session)
		t_tlb_trace_end();
	return ret;
}

