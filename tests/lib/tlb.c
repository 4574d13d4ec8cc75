// SPDX-License-Identifier: GPL-2.0
/*
 * Counting TLB flushes: the tlb:tlb_flush tracepoint on x86-64, kprobe
 * events on arm64 (tlib.h). The tests and fr_bench count with it alike;
 * struct t_tlb_opts holds what only the bench asks for.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <sys/mount.h>
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
 *    mremap(2) an upper bound of its flushes per call (6.1; 6.12 and 7.x
 *    inline them, and only what stayed out of line is seen).
 */
const char *const t_flush_kfns[T_FLUSH_NKFNS] = {
	"move_ptes", "move_normal_pmd", "move_normal_pud", "move_huge_pmd",
};

#ifdef __aarch64__
#define T_TLB_PROBE_FILE	"kprobe_events"
#else
#define T_TLB_PROBE_FILE	"events/tlb/tlb_flush/enable"
#endif
#define T_TLB_MOUNT		"/sys/kernel/tracing"

/* The tracefs directory with the flush event (or kprobe events), or NULL. */
const char *t_tracefs(void)
{
	static const char *const dirs[] = {
		T_TLB_MOUNT, "/sys/kernel/debug/tracing",
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

const char *t_tlb_reason_key(const char *reason, char *buf, size_t size)
{
	static const char *const map[][2] = {
		{ "flush on task switch", "task_switch" },
		{ "remote shootdown", "remote" },
		{ "local shootdown", "local" },
		{ "local mm shootdown", "local_mm" },
		{ "remote ipi send", "ipi_send" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(map); i++)
		if (!strcasecmp(reason, map[i][0]))
			return map[i][1];
	snprintf(buf, size, "%s", reason);
	for (i = 0; buf[i]; i++) {
		buf[i] = tolower((unsigned char)buf[i]);
		if (strchr(" ,;=", buf[i]))
			buf[i] = '_';
	}
	return buf;
}

/* A session: what t_tlb_trace_begin() set up, and what it changed. */
static struct {
	const char *dir;
	struct t_tlb_opts o;
	int on;		/* t_tlb_trace_begin() succeeded */
	int owned;	/* x86: it enabled the event itself */
	int mounted;	/* it mounted tracefs */
	int on_fd;	/* tracing_on, for t_tlb_on() and t_tlb_off() */
	int window;	/* inside t_tlb_count_start()..t_tlb_count_stop() */
	const char *why;
	/* The settings before it, "" where unread (then left as they are). */
	char was_on[8], was_cmd[8], was_fork[8], was_buf[32];
} tt = { .on_fd = -1 };

/*
 * Reads dir/name into was (or ""), its first word only (buffer_size_kb
 * may read "7 (expanded: 1408)"), and writes val there. 0 or -errno.
 */
static int t_tlb_set(const char *name, char *was, size_t n, const char *val)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", tt.dir, name);
	if (t_read_str(path, was, n))
		was[0] = 0;
	was[strcspn(was, " \n")] = 0;
	return t_write_file(tt.dir, name, val, O_TRUNC);
}

/* Puts back what t_tlb_set() saved in was, if anything. */
static void t_tlb_restore(const char *name, const char *was)
{
	if (was[0])
		t_write_file(tt.dir, name, was, O_TRUNC);
}

/* Fails t_tlb_trace_begin(): why for t_tlb_trace_why(), all undone. */
static int t_tlb_fail(int ret, const char *why)
{
	tt.why = why;
	t_tlb_trace_end();
	return ret;
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

static int t_tlb_add_probe(const char *fn, const char *where, const char *args)
{
	char cmd[160];
	int ret;

	snprintf(cmd, sizeof(cmd), "p:fr_flush/%s %s%s%s\n", fn, where, fn, args);
	ret = t_write_file(tt.dir, "kprobe_events", cmd, O_APPEND);
	if (!ret)
		snprintf(t_tlb_probes[t_tlb_nprobes++], sizeof(t_tlb_probes[0]),
			 "%s", fn);
	return ret;
}

static int t_tlb_arm(int on)
{
	return t_write_file(tt.dir, "events/fr_flush/enable", on ? "1" : "0",
			    O_TRUNC);
}

/*
 * The module's flush must be probed; each of mremap's movers is probed
 * if this kernel kept it out of line. An armed kprobe traps on every
 * hit, tracing_on or not: with arm_per_count the probes are armed only
 * while counting, so that the bench's timed calls pay no trap (about
 * 10 us per call on 7.2 under TCG), and tried once here.
 */
static int t_tlb_source_begin(void)
{
	int ret;

	t_tlb_nprobes = 0;
	t_tlb_set("options/record-cmd", tt.was_cmd, sizeof(tt.was_cmd), "0");
	/*
	 * Its range too: fr_arch_flush_moved(vma, start, end), out of line
	 * and not cloned (module/arch.h), so x1 and x2 hold them at entry.
	 */
	ret = t_tlb_add_probe(T_FLUSH_MODULE_FN, "fastremap:",
			      " start=%x1:x64 end=%x2:x64");
	if (ret)
		return t_tlb_fail(ret, "no kprobe on the module's flush (fastremap:"
				  T_FLUSH_MODULE_FN ")");
	for (size_t i = 0; i < ARRAY_SIZE(t_flush_kfns); i++)
		t_tlb_add_probe(t_flush_kfns[i], "", "");
	ret = t_tlb_arm(1);
	if (!ret && tt.o.arm_per_count)
		ret = t_tlb_arm(0);
	return ret ? t_tlb_fail(ret, "cannot enable the kprobe events") : 0;
}

static void t_tlb_source_end(void)
{
	char cmd[64];

	t_tlb_arm(0);
	for (int i = 0; i < t_tlb_nprobes; i++) {
		snprintf(cmd, sizeof(cmd), "-:fr_flush/%.31s\n", t_tlb_probes[i]);
		t_write_file(tt.dir, "kprobe_events", cmd, O_APPEND);
	}
	t_tlb_nprobes = 0;
}
#else
const char *t_tlb_trace_source(void)
{
	return "the tlb:tlb_flush tracepoint";
}

static int t_tlb_arm(int on)
{
	(void)on;
	return 0;
}

/*
 * The test VMs enable the event on the kernel command line, and then it
 * is left alone: turning a tracepoint on or off patches kernel text under
 * every CPU, which on 7.2 under QEMU TCG can end in "Oops: int3" (see
 * tests/harness/run.sh). Without that, it is enabled here, record-cmd off
 * first (it would hook sched_switch too), and disabled at the end.
 */
static int t_tlb_source_begin(void)
{
	char path[160], on[4];
	int ret;

	snprintf(path, sizeof(path), "%s/" T_TLB_PROBE_FILE, tt.dir);
	if (!t_read_str(path, on, sizeof(on)) && on[0] == '1')
		return 0;
	t_tlb_set("options/record-cmd", tt.was_cmd, sizeof(tt.was_cmd), "0");
	ret = t_write_file(tt.dir, T_TLB_PROBE_FILE, "1", O_TRUNC);
	if (ret)
		return t_tlb_fail(ret, "cannot enable tlb:tlb_flush");
	tt.owned = 1;
	return 0;
}

static void t_tlb_source_end(void)
{
	if (tt.owned)
		t_write_file(tt.dir, T_TLB_PROBE_FILE, "0", O_TRUNC);
	tt.owned = 0;
}
#endif

const char *t_tlb_trace_why(void)
{
	return tt.why;
}

int t_tlb_trace_begin(const struct t_tlb_opts *opts)
{
	static const struct t_tlb_opts defaults;
	char path[160], buf[32];
	int ret;

	if (tt.on)
		return -EBUSY;
	tt.o = opts ? *opts : defaults;
	tt.dir = t_tracefs();
	if (!tt.dir && tt.o.mount &&
	    mount("nodev", T_TLB_MOUNT, "tracefs", 0, NULL) == 0) {
		/* Not mounted here (natively, say): mounted for the session. */
		tt.mounted = 1;
		tt.dir = t_tracefs();
	}
	tt.on = 1;	/* from here on t_tlb_trace_end() undoes */
	if (!tt.dir)
		return t_tlb_fail(-ENOENT, "no writable tracefs with " T_TLB_PROBE_FILE);
	/* A session starts paused: recording only inside t_tlb_on()..off(). */
	ret = t_tlb_set("tracing_on", tt.was_on, sizeof(tt.was_on), "0");
	if (ret)
		return t_tlb_fail(ret, "cannot write tracing_on");
	if (tt.o.buf_kb) {
		snprintf(buf, sizeof(buf), "%d", tt.o.buf_kb);
		t_tlb_set("buffer_size_kb", tt.was_buf, sizeof(tt.was_buf), buf);
	}
	ret = t_tlb_source_begin();
	if (ret)
		return ret;
	if (tt.o.pid_filter) {
		/* This process, and the threads it starts: event-fork follows them. */
		t_tlb_set("options/event-fork", tt.was_fork, sizeof(tt.was_fork), "1");
		snprintf(buf, sizeof(buf), "%d", getpid());
		ret = t_write_file(tt.dir, "set_event_pid", buf, O_TRUNC);
		if (ret)
			return t_tlb_fail(ret, "cannot set set_event_pid");
	}
	snprintf(path, sizeof(path), "%s/tracing_on", tt.dir);
	tt.on_fd = open(path, O_WRONLY | O_CLOEXEC);
	if (tt.on_fd < 0)
		return t_tlb_fail(-errno, "cannot open tracing_on");
	tt.why = NULL;
	return 0;
}

void t_tlb_trace_end(void)
{
	if (!tt.on)
		return;
	tt.on = tt.window = 0;
	if (tt.dir) {
		t_write_file(tt.dir, "tracing_on", "0", O_TRUNC);
		t_tlb_source_end();
		if (tt.o.pid_filter) {
			t_write_file(tt.dir, "set_event_pid", "", O_TRUNC);
			t_tlb_restore("options/event-fork", tt.was_fork);
		}
		t_tlb_restore("buffer_size_kb", tt.was_buf);
		t_write_file(tt.dir, "trace", "", O_TRUNC);	/* clears it */
		t_tlb_restore("options/record-cmd", tt.was_cmd);
		/* Put back what the system had (natively, someone may be tracing). */
		t_tlb_restore("tracing_on", tt.was_on);
	}
	if (tt.on_fd >= 0)
		close(tt.on_fd);
	tt.on_fd = -1;
	if (tt.mounted)
		umount(T_TLB_MOUNT);
	tt.mounted = 0;
	tt.was_on[0] = tt.was_cmd[0] = tt.was_fork[0] = tt.was_buf[0] = 0;
}

int t_tlb_count_start(void)
{
	int ret;

	if (!tt.on)
		return -ENOENT;
	ret = t_write_file(tt.dir, "trace", "", O_TRUNC);	/* every CPU's buffer */
	if (!ret && tt.o.arm_per_count)
		ret = t_tlb_arm(1);
	tt.window = !ret;
	return ret;
}

void t_tlb_on(void)
{
	if (tt.window && pwrite(tt.on_fd, "1", 1, 0) != 1)
		tt.window = 0;
}

void t_tlb_off(void)
{
	if (tt.window && pwrite(tt.on_fd, "0", 1, 0) != 1)
		tt.window = 0;
}

void t_tlb_count_cancel(void)
{
	if (!tt.on)
		return;
	if (tt.o.arm_per_count)
		t_tlb_arm(0);
	if (tt.window)
		t_tlb_off();
	tt.window = 0;
}

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

/* The reason of an x86 "tlb_flush: pages:N reason:R (n)" line: R. */
static const char *t_tlb_line_reason(char *ev)
{
	char *r = strstr(ev, "reason:"), *q, *nl;

	if (!r)
		return "?";
	r += 7;
	nl = strchr(r, '\n');
	if (nl)
		*nl = 0;
	/* Drop the numeric " (n)" suffix. */
	q = strrchr(r, '(');
	if (q && q > r && q[-1] == ' ')
		q[-1] = 0;
	return r;
}

/*
 * What one event covered, into out (struct t_tlb_counts): x86's
 * "pages:N", arm64's "start=0x... end=0x..." of the module's flush.
 */
static void t_tlb_range(struct t_tlb_counts *out, const char *name, const char *ev)
{
	const char *a = strstr(ev, name ? " start=" : " pages:");
	const char *b = name ? strstr(ev, " end=") : NULL;
	unsigned long start, end;
	long pages;

	if (!a)
		return;
	if (!name) {
		pages = strtol(a + 7, NULL, 10);
		if (pages < 0)
			out->full_flushes++;
		else if (pages > out->max_pages)
			out->max_pages = pages;
		return;
	}
	if (strcmp(name, T_FLUSH_MODULE_FN) || !b)
		return;
	start = strtoul(a + 7, NULL, 0);
	end = strtoul(b + 5, NULL, 0);
	if (!out->mod_end || start < out->mod_start)
		out->mod_start = start;
	if (end > out->mod_end)
		out->mod_end = end;
}

/* Events the ring buffer dropped since it was cleared (per-CPU overruns). */
static long t_tlb_lost(void)
{
	char path[160], st[1024], *o;
	long lost = 0;

	for (int cpu = 0; cpu < 1024; cpu++) {
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/stats", tt.dir, cpu);
		if (t_read_str(path, st, sizeof(st)))
			break;
		o = strstr(st, "overrun:");
		if (o)
			lost += strtol(o + 8, NULL, 10);
	}
	return lost;
}

/* Counts the flush lines of the trace buffer into out. 0 or -errno. */
static int t_tlb_read(struct t_tlb_counts *out)
{
	char path[160], *line = NULL;
	size_t cap = 0;
	pid_t pid = getpid();
	FILE *f;

	snprintf(path, sizeof(path), "%s/trace", tt.dir);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		const char *name, *br = NULL;
		char *ev = t_tlb_event(line, &name);
		long lpid;

		if (line[0] == '#' || !ev)
			continue;
		/* "  comm-PID  [CPU] flags  ts: tlb_flush: pages:N reason:R (n)" */
		if (!tt.o.all_pids) {
			lpid = t_trace_pid(line, &br);
			if (!br || br > ev)
				continue;
			if (lpid != pid) {
				out->other++;
				continue;
			}
		}
		t_tlb_range(out, name, ev);
		/* arm64: the probed function is the reason. */
		(*t_tlb_slot(out, name ? name : t_tlb_line_reason(ev)))++;
		out->total++;
	}
	free(line);
	fclose(f);
	out->lost = t_tlb_lost();
	return 0;
}

int t_tlb_count_stop(struct t_tlb_counts *out)
{
	int window = tt.window;

	memset(out, 0, sizeof(*out));
	if (!tt.on)
		return -ENOENT;
	t_tlb_count_cancel();
	/* tracing_on could not be written: no count. */
	return window ? t_tlb_read(out) : -EIO;
}

/*
 * Inside t_tlb_trace_begin()/t_tlb_trace_end() the session's settings
 * stay; otherwise a session of the defaults is made around the call.
 */
int t_tlb_trace_count(void (*fn)(void *), void *arg,
		      struct t_tlb_counts *out)
{
	int ret, own_session = !tt.on;

	memset(out, 0, sizeof(*out));
	if (own_session) {
		ret = t_tlb_trace_begin(NULL);
		if (ret)
			return ret;
	}
	ret = t_tlb_count_start();
	if (!ret) {
		t_tlb_on();
		fn(arg);
		t_tlb_off();
		ret = t_tlb_count_stop(out);
	}
	if (own_session)
		t_tlb_trace_end();
	return ret;
}
