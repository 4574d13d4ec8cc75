// SPDX-License-Identifier: GPL-2.0
/*
 * fr_bench: fastremap's FASTREMAP_IOC_REMAP against mremap(2) and
 * UFFDIO_MOVE, in one process, contenders interleaved round by round (move
 * by move in workloads 1p, 6, 6m and 7).
 *
 * Runs as root with the module loaded: inside the QEMU guest (bench/run.sh
 * builds it static and boots it), or natively (bench/run.sh --native).
 *
 * Workloads (see bench/README.md):
 *   1 pud         1 GiB private anon, 4 KiB pages, src and dst 1 GiB-aligned
 *                 (one PUD entry: the library routes it to mremap(2))
 *   1p pud_pingpong  1 moved back and forth, the contenders taking turns
 *                 move by move, the module called directly
 *                 (FASTREMAP_NO_ROUTING): its fixed cost per call
 *   2 pmd         the same, dst 2 MiB-aligned only
 *   3 pte         the same, dst misaligned by 4 KiB
 *   3c pte_contpte 1 GiB of 64 KiB mTHP, dst misaligned by 64 KiB: arm64
 *                 (6.9+) maps it in contiguous blocks, which the module
 *                 moves whole (counted: contpte=); arm64 only, skipped
 *                 without mTHP
 *   4 pte_writer  3 while a second thread writes to its own memory on the
 *                 other CPU (remote shootdowns)
 *   5 thp         1 GiB of THP (MADV_HUGEPAGE), dst 2 MiB-aligned
 *   6 folio_loop  N x {mmap 1 MiB, memset, move by 1 MiB, munmap}
 *   6m            the same with 64 KiB mTHP, where the kernel has mTHP
 *   7 gc          M moves of random 4-64 KiB runs from a 1 GiB arena into
 *                 a to-space (compaction); per move, and VMAs afterwards
 *   7b1, 7b64, 7b1024
 *                 the same, fastremap's moves made with FASTREMAP_IOC_MOVE
 *                 in batches of 1, 64 and 1024 inside one heap mapping
 *                 (mremap(2) and UFFDIO_MOVE as in 7, one call per move)
 *   8 memcpy      a userspace copy of the bytes workload 3 moves: the
 *                 memory-bandwidth floor of a PTE-level move
 *   9 realign     1 GiB - 3 MiB, src and dst 3 MiB past a 1 GiB boundary
 *                 (congruent, 1 MiB into a PMD), holes below both: moved
 *                 from the PMD boundary below (mremap(2) does that since
 *                 6.7, the module everywhere)
 *
 * Each repetition sets up a fresh, touched region outside the timed
 * section, times only the move(s), and verifies every moved page's tag
 * words outside the timed section; a failed verification turns the cell
 * into an error. One extra untimed repetition per cell and contender is
 * run with the tlb:tlb_flush tracepoint enabled around the moves only.
 *
 * Statistics: the median, and a distribution-free 95% confidence interval
 * of the median from order statistics: [x(k), x(n+1-k)] with k the largest
 * rank such that P(Binomial(n, 1/2) <= k-1) <= 0.025 (n = 10: x(2), x(9),
 * coverage 97.9%). Below 6 repetitions no such k exists: min and max.
 *
 * Configuration: compile-time defaults (-DFR_BENCH_REPS=...) that the
 * environment overrides (FASTREMAP_BENCH_REPS=...); see cfg_load().
 *
 * Output: "#" header and progress lines, then one CSV block between
 * FR-BENCH-CSV-BEGIN and FR-BENCH-CSV-END. Exit status 0 when every cell
 * ran or was skipped for a stated reason, 1 when a cell failed.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include <linux/fastremap.h>
#include "fastremap.h"

/* UFFDIO_MOVE (Linux 6.8) is newer than Debian 12's headers. */
#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE (1 << 16)
#endif
#ifndef UFFDIO_MOVE
#define _UFFDIO_MOVE (0x05)
struct uffdio_move {
	__u64 dst;
	__u64 src;
	__u64 len;
	__u64 mode;
	__s64 move;
};
#define UFFDIO_MOVE _IOWR(UFFDIO, _UFFDIO_MOVE, struct uffdio_move)
#define UFFDIO_MOVE_MODE_DONTWAKE ((__u64)1 << 0)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef MREMAP_FIXED
#define MREMAP_FIXED 2
#endif

/* Compile-time defaults; FASTREMAP_BENCH_* in the environment override. */
#ifndef FR_BENCH_REPS
#define FR_BENCH_REPS 10
#endif
#ifndef FR_BENCH_SIZE_MB
#define FR_BENCH_SIZE_MB 1024
#endif
#ifndef FR_BENCH_LOOP_N
#define FR_BENCH_LOOP_N 2000
#endif
#ifndef FR_BENCH_GC_MOVES
#define FR_BENCH_GC_MOVES 2000
#endif
#ifndef FR_BENCH_GC_ARENA_MB
#define FR_BENCH_GC_ARENA_MB 1024
#endif
#ifndef FR_BENCH_WORKLOADS
#define FR_BENCH_WORKLOADS "1,1p,2,3,4,5,6,6m,7,7b1,7b64,7b1024,8,9"
#endif
#ifndef FR_BENCH_TRACE
#define FR_BENCH_TRACE 1
#endif
#ifndef FR_BENCH_TRACE_PIDS
#define FR_BENCH_TRACE_PIDS 0
#endif
#ifndef FR_BENCH_TRACE_BUF_KB
#define FR_BENCH_TRACE_BUF_KB 16384
#endif
#ifndef FR_BENCH_FRESH
#define FR_BENCH_FRESH 0
#endif
#ifndef FR_BENCH_EMULATED
#define FR_BENCH_EMULATED 0
#endif
#ifndef FR_BENCH_SETTLE
#define FR_BENCH_SETTLE 1
#endif

#define KiB (1UL << 10)
#define MiB (1UL << 20)
#define GiB (1UL << 30)
#define PAGE 4096UL
#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((a) - 1))
#define MAX_REPS 1000

static struct {
	int reps;
	size_t size;		/* workloads 1-5, 8 */
	long loop_n;		/* workload 6 */
	long gc_moves;		/* workload 7 */
	size_t gc_arena;
	const char *workloads;
	int trace, trace_pids, trace_buf_kb, emulated, fresh, settle;
} cfg;

static long env_long(const char *name, long def, long min, long max)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	v = strtol(s, &end, 0);
	if (*end || v < min || v > max) {
		fprintf(stderr, "fr_bench: %s=%s: want %ld..%ld\n", name, s, min, max);
		exit(2);
	}
	return v;
}

static void cfg_load(void)
{
	const char *w = getenv("FASTREMAP_BENCH_WORKLOADS");

	cfg.reps = env_long("FASTREMAP_BENCH_REPS", FR_BENCH_REPS, 1, MAX_REPS);
	cfg.size = env_long("FASTREMAP_BENCH_SIZE_MB", FR_BENCH_SIZE_MB, 2, 1 << 20) * MiB;
	cfg.size = ALIGN_UP(cfg.size, 2 * MiB);
	cfg.loop_n = env_long("FASTREMAP_BENCH_LOOP_N", FR_BENCH_LOOP_N, 1, 100000000);
	cfg.gc_moves = env_long("FASTREMAP_BENCH_GC_MOVES", FR_BENCH_GC_MOVES, 1, 1000000);
	cfg.gc_arena = env_long("FASTREMAP_BENCH_GC_ARENA_MB", FR_BENCH_GC_ARENA_MB, 2, 1 << 20) * MiB;
	cfg.workloads = w && *w ? w : FR_BENCH_WORKLOADS;
	cfg.trace = env_long("FASTREMAP_BENCH_TRACE", FR_BENCH_TRACE, 0, 1);
	cfg.trace_pids = env_long("FASTREMAP_BENCH_TRACE_PIDS", FR_BENCH_TRACE_PIDS, 0, 1);
	cfg.trace_buf_kb = env_long("FASTREMAP_BENCH_TRACE_BUF_KB", FR_BENCH_TRACE_BUF_KB, 0, 1 << 22);
	cfg.fresh = env_long("FASTREMAP_BENCH_FRESH", FR_BENCH_FRESH, 0, 1);
	cfg.emulated = env_long("FASTREMAP_BENCH_EMULATED", FR_BENCH_EMULATED, 0, 1);
	cfg.settle = env_long("FASTREMAP_BENCH_SETTLE", FR_BENCH_SETTLE, 0, 1);
	/* The GC arena is cut into one slot per move, each >= 64 KiB. */
	if ((long)(cfg.gc_arena / (64 * KiB)) < cfg.gc_moves) {
		fprintf(stderr, "fr_bench: %ld GC moves need an arena of %ld MiB at least\n",
			cfg.gc_moves, cfg.gc_moves * 64 * (long)KiB / (long)MiB);
		exit(2);
	}
}

/* ---- contenders ---- */

enum { C_FR, C_MREMAP, C_UFFD, C_MEMCPY, NCONT };
static const char *const cont_name[NCONT] = { "fastremap", "mremap", "uffdio_move", "memcpy" };

static int frfd = -1, uffd = -1;
static char fr_unavail[96], uffd_unavail[96];
static struct fastremap_info fr_info;

static void open_contenders(void)
{
	struct uffdio_api api;
	int fd;

	frfd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
	if (frfd < 0) {
		snprintf(fr_unavail, sizeof(fr_unavail), "no %s (%s)",
			 FASTREMAP_DEVICE, strerror(errno));
	} else {
		memset(&fr_info, 0, sizeof(fr_info));
		fr_info.size = sizeof(fr_info);
		if (ioctl(frfd, FASTREMAP_IOC_INFO, &fr_info) ||
		    !(fr_info.ioctls & (1ULL << _IOC_NR(FASTREMAP_IOC_REMAP))))
			snprintf(fr_unavail, sizeof(fr_unavail),
				 "module without FASTREMAP_IOC_REMAP");
	}

	/* Probe with no features requested: the kernel reports them all. */
	fd = syscall(__NR_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (fd < 0) {
		snprintf(uffd_unavail, sizeof(uffd_unavail), "userfaultfd: %s",
			 strerror(errno));
		return;
	}
	memset(&api, 0, sizeof(api));
	api.api = UFFD_API;
	if (ioctl(fd, UFFDIO_API, &api) || !(api.features & UFFD_FEATURE_MOVE)) {
		snprintf(uffd_unavail, sizeof(uffd_unavail),
			 "no UFFD_FEATURE_MOVE on this kernel");
		close(fd);
		return;
	}
	close(fd);
	uffd = syscall(__NR_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	memset(&api, 0, sizeof(api));
	api.api = UFFD_API;
	api.features = UFFD_FEATURE_MOVE;
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api)) {
		snprintf(uffd_unavail, sizeof(uffd_unavail), "UFFDIO_API: %s",
			 strerror(errno));
		if (uffd >= 0)
			close(uffd);
		uffd = -1;
	}
}

static int uffd_register(void *addr, size_t len)
{
	struct uffdio_register reg;

	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)addr;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	return ioctl(uffd, UFFDIO_REGISTER, &reg) ? -errno : 0;
}

/* What fastremap reported for the moves of one repetition. */
struct frstats {
	uint64_t pud, pmd, thp, pte, flushes, calls;
	uint64_t contpte, unfolded;	/* arm64's contiguous-PTE blocks */
	uint64_t module;	/* calls the module made (the others: routed to mremap(2)) */
};

/*
 * Workloads 2-5 and 9 must measure the module: a routed or declined call
 * is an error. Workload 1p calls it directly (FASTREMAP_NO_ROUTING), for
 * the module's own cost of a PUD-level move, which the library routes.
 */
static int need_module, direct_module;

/*
 * The timed operation. Returns 0 or -errno. fastremap's statistics land
 * in *fs, to be counted by count_move() after the clock stops: the timed
 * section holds the call and nothing of the bench's bookkeeping.
 */
static inline int do_move(int c, char *src, size_t len, char *dst,
			  struct fastremap_stats *fs)
{
	switch (c) {
	case C_FR: {
		/*
		 * Through libfastremap, as programs call it: the library
		 * routes the moves mremap(2) makes as fast to mremap(2)
		 * (fastremap_remap(3), ROUTING) and the module gets the rest.
		 */
		void *res = NULL;
		long r;

		fs->size = sizeof(*fs);
		r = fastremap_remap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst,
				    direct_module ? FASTREMAP_NO_ROUTING : 0, fs, &res);
		if (r)
			return (int)r;
		return res == dst ? 0 : -EFAULT;
	}
	case C_MREMAP: {
		void *p = mremap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);

		if (p == MAP_FAILED)
			return -errno;
		return p == dst ? 0 : -EFAULT;
	}
	case C_UFFD: {
		struct uffdio_move m;
		size_t done = 0;

		while (done < len) {
			memset(&m, 0, sizeof(m));
			m.dst = (uintptr_t)dst + done;
			m.src = (uintptr_t)src + done;
			m.len = len - done;
			m.mode = UFFDIO_MOVE_MODE_DONTWAKE;
			if (ioctl(uffd, UFFDIO_MOVE, &m) == 0) {
				done = len;
				break;
			}
			if (errno != EAGAIN || m.move <= 0)
				return -errno;
			done += m.move;
		}
		return 0;
	}
	case C_MEMCPY:
		memcpy(dst, src, len);
		return 0;
	}
	return -EINVAL;
}

/* Adds what fastremap reported for one move of do_move() to *st. */
static int count_move(int c, int err, const struct fastremap_stats *fs,
		      struct frstats *st)
{
	if (err || c != C_FR)
		return err;
	if (need_module && !fs->used_module)
		return -ENOTSUP;
	st->pud += fs->moved_pud;
	st->pmd += fs->moved_pmd;
	st->thp += fs->moved_thp;
	st->pte += fs->moved_pte;
	st->contpte += fs->moved_contpte;
	st->unfolded += fs->unfolded_contpte;
	st->flushes += fs->tlb_flushes;
	st->module += fs->used_module;
	st->calls++;
	return 0;
}

/* ---- tracing: tlb:tlb_flush events around the moves of one repetition ---- */

static char tr_dir[64];
static int tr_on_fd = -1;
static char tr_saved_buf[32], tr_saved_on[8], tr_saved_fork[8], tr_saved_cmd[8];
static int tr_ok, tr_mounted, tr_enabled_here;

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

static int read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

static int tr_write(const char *file, const char *s)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/%s", tr_dir, file);
	return write_file(p, s);
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
#define TR_MODULE_FN	"fr_arch_flush_moved"
static const char *const tr_kfns[] = {
	"move_ptes", "move_normal_pmd", "move_normal_pud", "move_huge_pmd",
};
static char tr_probes[8][32];
static int tr_nprobes;

static int tr_append(const char *file, const char *s)
{
	char p[128];
	int fd;
	ssize_t n;

	snprintf(p, sizeof(p), "%s/%s", tr_dir, file);
	fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
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

static const char *tr_setup(void)
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
	if (read_file(p, tr_saved_buf, sizeof(tr_saved_buf)) == 0)
		tr_saved_buf[strcspn(tr_saved_buf, " \n")] = 0;
	snprintf(p, sizeof(p), "%s/tracing_on", tr_dir);
	if (read_file(p, tr_saved_on, sizeof(tr_saved_on)) == 0)
		tr_saved_on[strcspn(tr_saved_on, " \n")] = 0;
	snprintf(p, sizeof(p), "%s/options/event-fork", tr_dir);
	if (read_file(p, tr_saved_fork, sizeof(tr_saved_fork)) == 0)
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
	if (read_file(p, tr_saved_cmd, sizeof(tr_saved_cmd)) == 0)
		tr_saved_cmd[strcspn(tr_saved_cmd, " \n")] = 0;
	tr_write("options/record-cmd", "0");
	if (tr_probe_add("fastremap:", TR_MODULE_FN))
		return "no kprobe on the module's flush (fastremap:" TR_MODULE_FN ")";
	for (i = 0; i < sizeof(tr_kfns) / sizeof(tr_kfns[0]); i++)
		tr_probe_add("", tr_kfns[i]);
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
	if (read_file(p, buf, sizeof(buf)) || buf[0] != '1') {
		snprintf(p, sizeof(p), "%s/options/record-cmd", tr_dir);
		if (read_file(p, tr_saved_cmd, sizeof(tr_saved_cmd)) == 0)
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

static void tr_teardown(void)
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
static int tracing;
static inline void tr_on(void)
{
	if (tracing && pwrite(tr_on_fd, "1", 1, 0) != 1)
		tracing = 0;
}

static inline void tr_off(void)
{
	if (tracing && pwrite(tr_on_fd, "0", 1, 0) != 1)
		tracing = 0;
}

#define MAX_REASONS 8
struct flushcount {
	int valid;
	uint64_t total, lost;
	int nreasons;
	char reason[MAX_REASONS][24];
	uint64_t count[MAX_REASONS];
};

/* arm64: the kprobes off again (tr_begin() arms them). */
static void tr_disarm(void)
{
#ifdef __aarch64__
	if (tr_ok)
		tr_write("events/fr_bench/enable", "0");
#endif
}

static void tr_begin(void)
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

static void tr_end(struct flushcount *fc)
{
	char line[512], p[128], key[24], *r, *e;
	const char *k;
	FILE *f;
	long cpu;
	int i;

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

		for (i = 0; i < tr_nprobes && !fn; i++) {
			snprintf(p, sizeof(p), " %.31s:", tr_probes[i]);
			if (line[0] != '#' && strstr(line, p))
				fn = tr_probes[i];
		}
		if (!fn)
			continue;
		fc->total++;
		for (i = 0; i < fc->nreasons && strcmp(fc->reason[i], fn); i++)
			;
		if (i == fc->nreasons) {
			if (i == MAX_REASONS)
				continue;
			snprintf(fc->reason[i], sizeof(fc->reason[i]), "%.23s", fn);
			fc->nreasons++;
		}
		fc->count[i]++;
		continue;
#endif
		if (line[0] == '#' || !strstr(line, "tlb_flush:"))
			continue;
		fc->total++;
		r = strstr(line, "reason:");
		if (!r)
			continue;
		r += 7;
		e = strstr(r, " (");
		if (!e)
			e = r + strcspn(r, "\n");
		*e = 0;
		k = reason_key(r, key, sizeof(key));
		for (i = 0; i < fc->nreasons && strcmp(fc->reason[i], k); i++)
			;
		if (i == fc->nreasons) {
			if (i == MAX_REASONS)
				continue;
			snprintf(fc->reason[i], sizeof(fc->reason[i]), "%s", k);
			fc->nreasons++;
		}
		fc->count[i]++;
	}
	fclose(f);
	/* Events the ring buffer dropped: the counts are then a lower bound. */
	for (cpu = 0; cpu < 1024; cpu++) {
		char st[1024], *o;

		snprintf(p, sizeof(p), "%s/per_cpu/cpu%ld/stats", tr_dir, cpu);
		if (read_file(p, st, sizeof(st)))
			break;
		o = strstr(st, "overrun:");
		if (o)
			fc->lost += strtoull(o + 8, NULL, 10);
	}
	fc->valid = 1;
}

/* ---- helpers ---- */

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static inline uint64_t tag_of(uint64_t seed, uint64_t page)
{
	uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ULL ^ (page + 1) * 0xBF58476D1CE4E5B9ULL;

	return x ? x : 1;
}

/* Two words per page: its first and its last. */
static void write_tags(char *p, size_t len, uint64_t seed, uint64_t first)
{
	size_t i;

	for (i = 0; i < len / PAGE; i++) {
		uint64_t *q = (uint64_t *)(p + i * PAGE), t = tag_of(seed, first + i);

		q[0] = t;
		q[PAGE / 8 - 1] = ~t;
	}
}

static int check_tags(const char *p, size_t len, uint64_t seed, uint64_t first)
{
	size_t i;

	for (i = 0; i < len / PAGE; i++) {
		const uint64_t *q = (const uint64_t *)(p + i * PAGE);
		uint64_t t = tag_of(seed, first + i);

		if (q[0] != t || q[PAGE / 8 - 1] != ~t)
			return -1;
	}
	return 0;
}

/*
 * mincore(2)'s vector, a byte per page of the largest move, mapped once
 * before the pool (mincore_init()). Allocated at the first check, as it
 * was, it was mapped wherever the kernel found room then: once fastremap's
 * move had left the source a hole at the top of the pool, in that hole,
 * which the next contender's restored source then covered, so UFFDIO_MOVE's
 * check wrote its answer into the emptied source and faulted 64 pages of
 * it back in ("source still mapped: 64/262144 pages; first 262079: 0",
 * workload 3 on 7.2, the first repetition; bench/README.md).
 */
static unsigned char *mincore_vec;
static size_t mincore_len;

static void mincore_init(void)
{
	size_t n = cfg.size / PAGE;
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED) {
		mincore_vec = p;
		mincore_len = n;
	}
}

/* After a move the source must be gone (mremap, fastremap) or empty (UFFDIO_MOVE). */
static int check_source_gone(int c, char *src, size_t len)
{
	size_t i, n = len / PAGE;

	if (n > mincore_len)
		return -1;
	if (mincore(src, len, mincore_vec) == 0) {
		if (c != C_UFFD)
			return -1;
		for (i = 0; i < n; i++)
			if (mincore_vec[i] & 1)
				return -1;
		return 0;
	}
	return errno == ENOMEM && c != C_UFFD ? 0 : -1;
}

/*
 * VMAs (/proc/self/maps lines) that start inside [lo, hi): one
 * contender's reservation, while the others' exist beside it.
 */
static long count_vmas(uintptr_t lo, uintptr_t hi)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned long start;
	long n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-", &start) == 1 && start >= lo && start < hi)
			n++;
	fclose(f);
	return n;
}

/* kB of AnonHugePages in this process. */
static long anon_huge_kb(void)
{
	char buf[4096], *p;

	if (read_file("/proc/self/smaps_rollup", buf, sizeof(buf)))
		return -1;
	p = strstr(buf, "AnonHugePages:");
	return p ? strtol(p + 14, NULL, 10) : -1;
}

static int pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* ---- the writer thread of workload 4 ---- */

static struct {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_int active, quit;
	atomic_ulong iters;
	int cpu, started;
	char *buf;
} wr = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

#define WR_BYTES (64 * KiB)

static void *writer_main(void *arg)
{
	size_t i;

	(void)arg;
	pin_to(wr.cpu);
	for (;;) {
		pthread_mutex_lock(&wr.mu);
		while (!atomic_load(&wr.active) && !atomic_load(&wr.quit))
			pthread_cond_wait(&wr.cv, &wr.mu);
		pthread_mutex_unlock(&wr.mu);
		if (atomic_load(&wr.quit))
			return NULL;
		while (atomic_load_explicit(&wr.active, memory_order_relaxed)) {
			for (i = 0; i < WR_BYTES; i += 64)
				wr.buf[i]++;
			atomic_fetch_add_explicit(&wr.iters, 1, memory_order_relaxed);
		}
	}
}

static int writer_create(int cpu)
{
	wr.cpu = cpu;
	wr.buf = mmap(NULL, WR_BYTES, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (wr.buf == MAP_FAILED)
		return -errno;
	if (pthread_create(&wr.th, NULL, writer_main, NULL))
		return -EAGAIN;
	wr.started = 1;
	return 0;
}

/* Returns once the writer is running (it has done two passes). */
static void writer_go(void)
{
	unsigned long start = atomic_load(&wr.iters);

	pthread_mutex_lock(&wr.mu);
	atomic_store(&wr.active, 1);
	pthread_cond_signal(&wr.cv);
	pthread_mutex_unlock(&wr.mu);
	while (atomic_load(&wr.iters) < start + 2)
		;
}

static void writer_stop(void)
{
	atomic_store(&wr.active, 0);
}

static void writer_destroy(void)
{
	if (!wr.started)
		return;
	pthread_mutex_lock(&wr.mu);
	atomic_store(&wr.quit, 1);
	pthread_cond_signal(&wr.cv);
	pthread_mutex_unlock(&wr.mu);
	pthread_join(wr.th, NULL);
	munmap(wr.buf, WR_BYTES);
	wr.started = 0;
}

/* ---- workloads ---- */

enum { K_MOVE, K_LOOP, K_GC, K_COPY, K_PINGPONG };

struct workload {
	const char *id, *name, *desc;
	int kind;
	size_t dst_off;		/* K_MOVE: destination offset from a 1 GiB boundary */
	int thp, writer, mthp;
	unsigned conts;		/* bitmask of contenders */
	int batch;		/* K_GC: fastremap's moves per FASTREMAP_IOC_MOVE, or 0 */
	/*
	 * K_MOVE: the source starts this far past a 1 GiB boundary, with a
	 * hole below it (and below the destination) back to the boundary.
	 */
	size_t src_off;
	/*
	 * 1: fastremap is the library as programs call it, which may route
	 * the moves to mremap(2); 2: the module, called directly.
	 */
	int route;
};

#define B(c) (1u << (c))
static const struct workload workloads[] = {
	/*
	 * mremap(2) moves a whole PUD entry with one flush too: the library
	 * routes this move to it (fastremap_remap(3), ROUTING).
	 */
	{ "1", "pud", "1 GiB-aligned src and dst (PUD level)", K_MOVE, 0, 0, 0, 0,
	  B(C_FR) | B(C_MREMAP), 0, 0, 1 },
	/*
	 * Workload 1 back and forth, the contenders taking turns move by
	 * move, the module called directly: its fixed cost per call against
	 * mremap(2)'s, measured pair by pair.
	 */
	{ "1p", "pud_pingpong", "1 GiB moved back and forth between 1 GiB-aligned places, the module called directly",
	  K_PINGPONG, 0, 0, 0, 0, B(C_FR) | B(C_MREMAP), 0, 0, 2 },
	{ "2", "pmd", "dst 2 MiB-aligned only (PMD level)", K_MOVE, 2 * MiB, 0, 0, 0,
	  B(C_FR) | B(C_MREMAP), 0, 0, 0 },
	{ "3", "pte", "dst misaligned by 4 KiB (PTE level)", K_MOVE, 4 * KiB, 0, 0, 0,
	  B(C_FR) | B(C_MREMAP) | B(C_UFFD), 0, 0, 0 },
	/*
	 * 64 KiB mTHP, so that arm64 (6.9+) maps the source in contiguous
	 * blocks; the destination is congruent modulo 64 KiB, so the module
	 * moves each block whole (moved_contpte) and it stays contiguous.
	 * x86-64 has no such blocks: arm64's bench only.
	 */
#ifdef __aarch64__
	{ "3c", "pte_contpte", "64 KiB mTHP, dst misaligned by 64 KiB (PTE level, contiguous blocks)",
	  K_MOVE, 64 * KiB, 0, 0, 1, B(C_FR) | B(C_MREMAP), 0, 0, 0 },
#endif
	{ "4", "pte_writer", "PTE level, a writer thread on the other CPU", K_MOVE, 4 * KiB, 0, 1, 0,
	  B(C_FR) | B(C_MREMAP), 0, 0, 0 },
	{ "5", "thp", "THP (MADV_HUGEPAGE), dst 2 MiB-aligned", K_MOVE, 2 * MiB, 1, 0, 0,
	  B(C_FR) | B(C_MREMAP), 0, 0, 0 },
	{ "6", "folio_loop", "N x {mmap 1 MiB (populated, tagged), move by 1 MiB, munmap}", K_LOOP, 0, 0, 0, 0,
	  B(C_FR) | B(C_MREMAP), 0, 0, 0 },
	{ "6m", "folio_loop_mthp64", "the same with 64 KiB mTHP", K_LOOP, 0, 0, 0, 1,
	  B(C_FR) | B(C_MREMAP), 0, 0, 0 },
	{ "7", "gc", "GC compaction: random 4-64 KiB runs into a to-space", K_GC, 0, 0, 0, 0,
	  B(C_FR) | B(C_MREMAP) | B(C_UFFD), 0, 0, 0 },
	{ "7b1", "gc_move1", "GC compaction, fastremap in FASTREMAP_IOC_MOVE batches of 1", K_GC,
	  0, 0, 0, 0, B(C_FR) | B(C_MREMAP) | B(C_UFFD), 1, 0, 0 },
	{ "7b64", "gc_move64", "GC compaction, fastremap in FASTREMAP_IOC_MOVE batches of 64", K_GC,
	  0, 0, 0, 0, B(C_FR) | B(C_MREMAP) | B(C_UFFD), 64, 0, 0 },
	{ "7b1024", "gc_move1024", "GC compaction, fastremap in FASTREMAP_IOC_MOVE batches of 1024",
	  K_GC, 0, 0, 0, 0, B(C_FR) | B(C_MREMAP) | B(C_UFFD), 1024, 0, 0 },
	{ "8", "memcpy_floor", "userspace copy of the bytes workload 3 moves", K_COPY, 0, 0, 0, 0,
	  B(C_MEMCPY), 0, 0, 0 },
	{ "9", "realign", "src and dst 1 MiB into a PMD, holes below (realigned)", K_MOVE, 3 * MiB, 0, 0, 0,
	  B(C_FR) | B(C_MREMAP), .src_off = 3 * MiB },
};
#define NWORK (sizeof(workloads) / sizeof(workloads[0]))

struct cell {
	int n;
	double us[MAX_REPS];
	int rep[MAX_REPS];	/* the repetition each of us[] came from */
	char state[128];		/* "" while fine, else "error: ..." or "skip: ..." */
	struct flushcount fc;
	double ops;		/* moves in the traced repetition */
	struct frstats st;	/* fastremap's counters in the traced repetition */
	long vmas[MAX_REPS];	/* K_GC: VMAs after each repetition */
	int nvmas;
	long thp_kb, mthp_allocs;
};

/* One repetition's result. */
struct rep {
	double us;		/* per move */
	double ops;
	long vmas, thp_kb, mthp_allocs;
	struct frstats st;
};

static int fail(char *msg, size_t size, const char *what, int err)
{
	snprintf(msg, size, "error: %s: %s", what, strerror(err < 0 ? -err : err));
	return -1;
}

/*
 * The region workloads 1-5 and 8 move. Under emulation, faulting in 1 GiB
 * of fresh pages costs about 2.5 s (the kernel zeroes them), a hundred
 * times the moves being measured, so by default the region is touched
 * once per workload and brought back to its source position between
 * repetitions by an untimed mremap(2) at the same alignment, which builds
 * the source's page tables afresh; every repetition then writes new tags.
 * FASTREMAP_BENCH_FRESH=1 maps and touches new memory every repetition.
 */
static struct {
	char *res, *src, *dst;
	size_t rlen;
	char *at;		/* where the data is: src or dst */
	int copy_dst;		/* a touched destination for memcpy is mapped */
} pool;

static void pool_free(void)
{
	if (pool.res)
		munmap(pool.res, pool.rlen);
	memset(&pool, 0, sizeof(pool));
}

static int pool_ready(const struct workload *w, char *msg, size_t msz)
{
	size_t len = cfg.size - w->src_off, L = ALIGN_UP(cfg.size, GiB);

	if (pool.res) {
		if (pool.at == pool.src)
			return 0;
		/* UFFDIO_MOVE leaves the emptied source VMA behind. */
		munmap(pool.src, len);
		if (mremap(pool.at, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, pool.src) != pool.src)
			return fail(msg, msz, "restoring the source (mremap)", errno);
		pool.at = pool.src;
		return 0;
	}
	pool.rlen = 2 * L + 3 * GiB;
	pool.res = mmap(NULL, pool.rlen, PROT_NONE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (pool.res == MAP_FAILED) {
		pool.res = NULL;
		return fail(msg, msz, "reserve", errno);
	}
	/* A PROT_NONE gap keeps source and destination VMAs apart. */
	pool.src = (char *)ALIGN_UP((uintptr_t)pool.res, GiB);
	pool.dst = pool.src + L + GiB + w->dst_off;
	/* Workload 9: nothing mapped between the boundary and either end. */
	if (w->src_off &&
	    (munmap(pool.src, w->src_off) || munmap(pool.dst - w->dst_off, w->dst_off)))
		return fail(msg, msz, "holes below the source and target", errno);
	pool.src += w->src_off;
	pool.at = pool.src;
	if (mmap(pool.src, len, PROT_READ | PROT_WRITE,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | (w->thp ? 0 : MAP_POPULATE),
		 -1, 0) == MAP_FAILED)
		return fail(msg, msz, "mmap source", errno);
	if (w->thp && madvise(pool.src, len, MADV_HUGEPAGE))
		return fail(msg, msz, "MADV_HUGEPAGE", errno);
	/* THP: the tags written next fault the huge pages in. */
	return 0;
}

/*
 * Settling before a timed move of workloads 1-5 (FASTREMAP_BENCH_SETTLE).
 *
 * Each repetition writes tags into all 262144 pages of the 1 GiB region
 * right before the move. Under QEMU's TCG that leaves the emulator in a
 * state that makes the next guest system calls slow for a while: a
 * PUD-level move, 42-50 us back to back, took 550-1300 us for both
 * contenders right after the tags were written (the cost grows with the
 * pages touched: 380-400 us after touching one page in eight), and a
 * first move after 110 ms of sleep is slow too. This fits QEMU's
 * software TLB, whose table grows with a large working set and shrinks
 * only at a TLB flush after 100 ms of little use (accel/tcg/cputlb.c),
 * and cold translated code after the vCPU idled; either way it is a cost
 * of the harness, paid by whichever call comes first, neither the
 * kernel's nor the module's. The same move timed in the same boot after
 * two rounds of {a small flush, 110 ms of sleep} and one small untimed
 * move by the same contender took 75-80 us, as back to back
 * (bench/README.md, "What the bench measures").
 */
static char *settle_area;	/* 256 pages: 64 mapped, the rest reserved */
#define SETTLE_PAGES 64

static void settle_init(void)
{
	settle_area = mmap(NULL, 4 * SETTLE_PAGES * PAGE, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (settle_area == MAP_FAILED ||
	    mmap(settle_area, SETTLE_PAGES * PAGE, PROT_READ | PROT_WRITE,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0) == MAP_FAILED)
		settle_area = NULL;
}

/*
 * A small move there and back by contender c, down the path its timed
 * move takes: for fastremap the module, or mremap(2) where the library
 * routes the timed move (workload 1; settled through the module instead,
 * its routed move took twice mremap(2)'s time, 7.2).
 */
static int settle_move(int c, char *from, char *to)
{
	void *res = NULL;

	if (c == C_FR)
		return fastremap_remap(from, SETTLE_PAGES * PAGE, SETTLE_PAGES * PAGE,
				       MREMAP_MAYMOVE | MREMAP_FIXED, to,
				       need_module || direct_module ?
				       FASTREMAP_NO_FALLBACK | FASTREMAP_NO_ROUTING : 0,
				       NULL, &res) ? -1 : 0;
	return mremap(from, SETTLE_PAGES * PAGE, SETTLE_PAGES * PAGE,
		      MREMAP_MAYMOVE | MREMAP_FIXED, to) == to ? 0 : -1;
}

static int settle(int c)
{
	char *a = settle_area, *b = settle_area + 2 * SETTLE_PAGES * PAGE;
	size_t i;
	int k;

	if (!cfg.settle || !a)
		return 0;
	for (k = 0; k < 2; k++) {
		for (i = 0; i < SETTLE_PAGES; i++)
			a[i * PAGE] = 1;
		/* More pages than the kernel flushes one by one: a full flush. */
		madvise(a, SETTLE_PAGES * PAGE, MADV_DONTNEED);
		usleep(110000);
	}
	for (i = 0; i < SETTLE_PAGES; i++)
		a[i * PAGE] = 1;
	/* UFFDIO_MOVE needs a registered destination: mremap(2) warms the kernel's entry. */
	if (settle_move(c == C_FR ? C_FR : C_MREMAP, a, b) ||
	    settle_move(c == C_FR ? C_FR : C_MREMAP, b, a))
		return -1;
	/*
	 * Reserve b again: left a hole, the next mmap(NULL) of another part
	 * of the bench (the writer's buffer) could land there and be
	 * replaced by the next settling move.
	 */
	if (mmap(b, SETTLE_PAGES * PAGE, PROT_NONE,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) == MAP_FAILED)
		return -1;
	return 0;
}

/* Workloads 1-5, 8 and 9: one move (or copy) of cfg.size bytes (9: less its src_off). */
static int rep_move(const struct workload *w, int c, int rep, struct rep *out,
		    char *msg, size_t msz)
{
	struct fastremap_stats fs;
	size_t len = cfg.size - w->src_off;
	char *src, *dst;
	double t0, t1;
	int err, ret = -1;

	if (pool_ready(w, msg, msz))
		goto out;
	src = pool.src;
	dst = pool.dst;
	write_tags(src, len, rep, 0);
	if (w->thp)
		out->thp_kb = anon_huge_kb();
	switch (c) {
	case C_FR:
	case C_MREMAP:
		err = munmap(dst, len);	/* the destination is a hole */
		break;
	case C_UFFD:
		/* UFFDIO_MOVE moves into a registered VMA. */
		err = mmap(dst, len, PROT_READ | PROT_WRITE,
			   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED;
		if (!err)
			err = uffd_register(dst, len);
		break;
	default:
		/* memcpy into memory that is already touched: bandwidth only. */
		err = 0;
		if (!pool.copy_dst)
			err = mmap(dst, len, PROT_READ | PROT_WRITE,
				   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
				   -1, 0) == MAP_FAILED;
		pool.copy_dst = !err;
		break;
	}
	if (err) {
		fail(msg, msz, "destination set-up", errno);
		goto out;
	}
	if (c != C_MEMCPY && settle(c)) {
		fail(msg, msz, "settling move", errno);
		goto out;
	}
	if (w->writer)
		writer_go();

	tr_on();
	t0 = now_us();
	err = do_move(c, src, len, dst, &fs);
	t1 = now_us();
	err = count_move(c, err, &fs, &out->st);
	tr_off();

	if (w->writer)
		writer_stop();
	if (err) {
		fail(msg, msz, cont_name[c], err);
		goto out;
	}
	if (c != C_MEMCPY)
		pool.at = dst;
	if (check_tags(dst, len, rep, 0)) {
		snprintf(msg, msz, "error: verify: wrong data at the destination");
		goto out;
	}
	if (c != C_MEMCPY && check_source_gone(c, src, len)) {
		size_t i, nres = 0, first = 0;

		/*
		 * For UFFDIO_MOVE, whose source VMA stays: which pages are
		 * resident again, and what they hold (seen on 7.2, rep 1 of
		 * workload 3, with every destination page right).
		 */
		if (c == C_UFFD && mincore_vec)
			for (i = len / PAGE; i--;)
				if (mincore_vec[i] & 1) {
					nres++;
					first = i;
				}
		char why[96];

		snprintf(why, sizeof(why), "error: verify: source still mapped: %zu/%zu "
			 "pages; first %zu: %#llx", nres,
			 len / PAGE, first, nres ? (unsigned long long)*(volatile uint64_t *)
			 (src + first * PAGE) : 0ULL);
		snprintf(msg, msz, "%s", why);
		goto out;
	}
	out->us = t1 - t0;
	out->ops = 1;
	ret = 0;
out:
	if (ret || cfg.fresh)
		pool_free();
	return ret;
}

/* Set during the extra, traced repetition of a cell. */
static int traced_rep;
#define TRACED_LOOP_N 200

static const char mthp_dir[] = "/sys/kernel/mm/transparent_hugepage/hugepages-64kB";

static long mthp_fault_allocs(void)
{
	char p[128], buf[64];

	snprintf(p, sizeof(p), "%s/stats/anon_fault_alloc", mthp_dir);
	return read_file(p, buf, sizeof(buf)) ? -1 : strtol(buf, NULL, 10);
}

static int cmp_double(const void *a, const void *b);
static int paired(const struct workload *w);

/*
 * Per-move times of one repetition, one row per contender: paired
 * workloads report each contender's median move, which one stall of the
 * host (hundreds of milliseconds, landing on one contender's move) cannot
 * move as it moves a mean of 2000.
 */
struct move_times {
	double *t[NCONT];
	long n;
};

static int move_times_init(struct move_times *mt, int ncs, long n)
{
	int k;

	memset(mt, 0, sizeof(*mt));
	mt->n = n;
	for (k = 0; k < ncs; k++)
		if (!(mt->t[k] = calloc(n, sizeof(double))))
			return -1;
	return 0;
}

static double move_times_median(struct move_times *mt, int k)
{
	double *v = mt->t[k];
	long n = mt->n;

	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void move_times_free(struct move_times *mt)
{
	for (int k = 0; k < NCONT; k++)
		free(mt->t[k]);
}

/* Moves per contender per repetition of workload 1p. */
#define PINGPONG_MOVES 40

/*
 * Workload 1p: the 1 GiB region of workload 1 moved back and forth
 * between its two 1 GiB-aligned places, PINGPONG_MOVES times per
 * contender, the contenders taking turns move by move (see rep_loop());
 * each one's median move. No settling: every move follows another.
 */
static int rep_pingpong(const struct workload *w, const int *cs, int ncs, int rep,
			struct rep *outs, int *bad, char *msg, size_t msz)
{
	struct fastremap_stats fs;
	size_t len = cfg.size;
	struct move_times mt;
	double t0, t1;
	char *other;
	int err, ret = -1, k, n, c;

	*bad = 0;
	if (move_times_init(&mt, ncs, PINGPONG_MOVES)) {
		move_times_free(&mt);
		return fail(msg, msz, "calloc", ENOMEM);
	}
	if (pool_ready(w, msg, msz))
		goto out;
	write_tags(pool.src, len, rep, 0);
	for (n = 0; n < PINGPONG_MOVES; n++) {
		for (k = 0; k < ncs; k++) {
			int i = (k + n) % ncs;

			c = cs[i];
			*bad = i;
			other = pool.at == pool.src ? pool.dst : pool.src;
			tr_on();
			t0 = now_us();
			err = do_move(c, pool.at, len, other, &fs);
			t1 = now_us();
			err = count_move(c, err, &fs, &outs[i].st);
			tr_off();
			if (err) {
				fail(msg, msz, cont_name[c], err);
				goto out;
			}
			pool.at = other;
			mt.t[i][n] = t1 - t0;
		}
	}
	if (check_tags(pool.at, len, rep, 0)) {
		snprintf(msg, msz, "error: verify: wrong data after the moves");
		goto out;
	}
	for (k = 0; k < ncs; k++) {
		outs[k].us = move_times_median(&mt, k);
		outs[k].ops = PINGPONG_MOVES;
	}
	ret = 0;
out:
	if (ret)
		pool_free();
	move_times_free(&mt);
	return ret;
}

/*
 * Workload 6: the large-folio loop (the one in the mremap PTE-batching
 * series). The ncs contenders cs[] take turns move by move, the first
 * one rotating, at the same addresses: host drift between the
 * contenders' repetitions (seconds apart) cannot show as a difference
 * between them (bench/README.md, "Routing"). outs[k] is cs[k]'s; on an
 * error *bad is the index of the contender that failed.
 */
static int rep_loop(const struct workload *w, const int *cs, int ncs, int rep,
		    struct rep *outs, int *bad, char *msg, size_t msz)
{
	struct fastremap_stats fs;
	size_t rlen = 8 * MiB;
	char *res, *base;
	double t0, t1, sum[NCONT] = { 0 };
	long n, a0 = w->mthp ? mthp_fault_allocs() : -1;
	/* Flushes per move need no 2000 samples: the traced repetition is shorter. */
	long nmoves = traced_rep && cfg.loop_n > TRACED_LOOP_N ? TRACED_LOOP_N : cfg.loop_n;
	int err, ret = -1, k, c;
	struct move_times mt;

	*bad = 0;
	if (move_times_init(&mt, ncs, nmoves)) {
		move_times_free(&mt);
		return fail(msg, msz, "calloc", ENOMEM);
	}
	res = mmap(NULL, rlen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED) {
		move_times_free(&mt);
		return fail(msg, msz, "reserve", errno);
	}
	base = (char *)ALIGN_UP((uintptr_t)res, 2 * MiB);
	munmap(base, 2 * MiB);
	for (n = 0; n < nmoves; n++) {
		for (k = 0; k < ncs; k++) {
			/*
			 * MAP_POPULATE and a tag per page instead of memset:
			 * the pages end up present, dirty and (6m) in 64 KiB
			 * folios all the same, at half the cost under
			 * emulation.
			 */
			int i = (int)((k + n) % ncs);
			char *p = mmap(base, MiB, PROT_READ | PROT_WRITE,
				       MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
				       -1, 0);

			c = cs[i];
			*bad = i;
			if (p == MAP_FAILED) {
				fail(msg, msz, "mmap", errno);
				goto out;
			}
			write_tags(p, MiB, rep, n * (MiB / PAGE));

			tr_on();
			t0 = now_us();
			err = do_move(c, base, MiB, base + MiB, &fs);
			t1 = now_us();
			err = count_move(c, err, &fs, &outs[i].st);
			tr_off();

			if (err) {
				fail(msg, msz, cont_name[c], err);
				goto out;
			}
			sum[i] += t1 - t0;
			mt.t[i][n] = t1 - t0;
			if (check_tags(base + MiB, MiB, rep, n * (MiB / PAGE))) {
				snprintf(msg, msz, "error: verify: wrong data at move %ld", n);
				goto out;
			}
			munmap(base + MiB, MiB);
		}
	}
	for (k = 0; k < ncs; k++) {
		outs[k].us = paired(w) ? move_times_median(&mt, k) : sum[k] / nmoves;
		outs[k].ops = nmoves;
		/* 64 KiB folios faulted in, shared out: every contender faults the same. */
		if (a0 >= 0)
			outs[k].mthp_allocs = (mthp_fault_allocs() - a0) / ncs;
	}
	ret = 0;
out:
	munmap(res, rlen);
	move_times_free(&mt);
	return ret;
}

/* A small, fixed-seed generator: the same runs for every contender of a round. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/*
 * Workloads 7bN: fastremap's moves of one repetition as FASTREMAP_IOC_MOVE
 * batches of w->batch, each batch timed as one call; the per-move time is
 * their sum over the moves.
 */
static int gc_batches(const struct workload *w, char *from, char *to,
		      const size_t *off, const size_t *npg, struct rep *out,
		      double *sum, char *msg, size_t msz)
{
	struct fastremap_move_vec *v = calloc(w->batch, sizeof(*v));
	struct fastremap_move m;
	size_t bump = 0;
	double t0, t1;
	long j = 0, k, n;

	if (!v)
		return fail(msg, msz, "calloc", ENOMEM);
	while (j < cfg.gc_moves) {
		n = cfg.gc_moves - j < w->batch ? cfg.gc_moves - j : w->batch;
		for (k = 0; k < n; k++) {
			v[k].src = (uintptr_t)(from + off[j + k] * PAGE);
			v[k].dst = (uintptr_t)(to + bump);
			v[k].len = npg[j + k] * PAGE;
			bump += npg[j + k] * PAGE;
		}
		memset(&m, 0, sizeof(m));
		m.size = sizeof(m);
		m.moves = (uintptr_t)v;
		m.count = (uint32_t)n;
		tr_on();
		t0 = now_us();
		k = ioctl(frfd, FASTREMAP_IOC_MOVE, &m);
		t1 = now_us();
		tr_off();
		if (k || m.done != (uint64_t)n) {
			char what[64];

			snprintf(what, sizeof(what), "FASTREMAP_IOC_MOVE at move %ld",
				 j + (long)m.done);
			free(v);
			return fail(msg, msz, what, k ? errno : EIO);
		}
		*sum += t1 - t0;
		out->st.pte += m.moved_pte;
		out->st.thp += m.moved_thp;
		out->st.flushes += m.tlb_flushes;
		/* Each batch is one module call: no routing happens here. */
		out->st.module++;
		out->st.calls++;
		j += n;
	}
	free(v);
	return 0;
}

/*
 * Workload 7: GC-like compaction of random live runs into a to-space.
 * Each of the ncs contenders cs[] has an arena and a to-space of its own,
 * with the same runs; they take turns move by move, the first one
 * rotating (see rep_loop()), except FASTREMAP_IOC_MOVE's batches (7bN),
 * which run alone.
 */
static int rep_gc(const struct workload *w, const int *cs, int ncs, int rep,
		  struct rep *outs, int *bad, char *msg, size_t msz)
{
	struct fastremap_stats fs;
	size_t A = cfg.gc_arena, rlen = 2 * A + 8 * MiB, slot = A / PAGE / cfg.gc_moves;
	size_t *off = NULL, *npg = NULL, bump = 0;
	uint64_t seed = 0x5eed0000 + rep;
	char *res[NCONT], *from[NCONT], *to[NCONT];
	double t0, t1, sum[NCONT] = { 0 };
	long j = 0;
	int err, ret = -1, k, c, batch = ncs == 1 && cs[0] == C_FR && w->batch;
	struct move_times mt;

	*bad = 0;
	memset(&mt, 0, sizeof(mt));
	for (k = 0; k < ncs; k++)
		res[k] = MAP_FAILED;
	off = calloc(cfg.gc_moves, sizeof(*off));
	npg = calloc(cfg.gc_moves, sizeof(*npg));
	if (!off || !npg || move_times_init(&mt, ncs, cfg.gc_moves)) {
		fail(msg, msz, "calloc", ENOMEM);
		goto out;
	}
	/* One live run of 1-16 pages at a random place in each slot. */
	for (j = 0; j < cfg.gc_moves; j++) {
		npg[j] = 1 + rng_next(&seed) % 16;
		off[j] = j * slot + rng_next(&seed) % (slot - npg[j] + 1);
	}
	for (k = 0; k < ncs; k++) {
		c = cs[k];
		*bad = k;
		res[k] = mmap(NULL, rlen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			      -1, 0);
		if (res[k] == MAP_FAILED) {
			fail(msg, msz, "reserve", errno);
			goto out;
		}
		from[k] = (char *)ALIGN_UP((uintptr_t)res[k], 2 * MiB);
		to[k] = from[k] + A + 2 * MiB;	/* a PROT_NONE gap keeps the two apart */
		/*
		 * FASTREMAP_IOC_MOVE moves inside one heap: from-space, gap
		 * and to-space are one mapping (pages never leave their
		 * anon_vma).
		 */
		if (batch) {
			if (mmap(from[k], to[k] + A - from[k], PROT_READ | PROT_WRITE,
				 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED) {
				fail(msg, msz, "mmap heap", errno);
				goto out;
			}
		} else if (mmap(from[k], A, PROT_READ | PROT_WRITE,
				MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ||
			   mmap(to[k], A, PROT_READ | PROT_WRITE,
				MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED) {
			fail(msg, msz, "mmap arena", errno);
			goto out;
		}
		if (c == C_UFFD && (err = uffd_register(to[k], A))) {
			fail(msg, msz, "UFFDIO_REGISTER", err);
			goto out;
		}
		for (j = 0; j < cfg.gc_moves; j++)
			write_tags(from[k] + off[j] * PAGE, npg[j] * PAGE, rep, off[j]);
	}
	if (batch) {
		*bad = 0;
		if (gc_batches(w, from[0], to[0], off, npg, &outs[0], &sum[0], msg, msz))
			goto out;
	} else {
		for (j = 0; j < cfg.gc_moves; j++) {
			for (k = 0; k < ncs; k++) {
				int i = (int)((k + j) % ncs);

				c = cs[i];
				*bad = i;
				tr_on();
				t0 = now_us();
				err = do_move(c, from[i] + off[j] * PAGE, npg[j] * PAGE,
					      to[i] + bump, &fs);
				t1 = now_us();
				err = count_move(c, err, &fs, &outs[i].st);
				tr_off();
				if (err) {
					char what[64];

					snprintf(what, sizeof(what), "%s at move %ld", cont_name[c], j);
					fail(msg, msz, what, err);
					goto out;
				}
				sum[i] += t1 - t0;
				mt.t[i][j] = t1 - t0;
			}
			bump += npg[j] * PAGE;
		}
	}
	for (k = 0; k < ncs; k++) {
		*bad = k;
		outs[k].vmas = count_vmas((uintptr_t)res[k], (uintptr_t)res[k] + rlen);
		for (j = 0, bump = 0; j < cfg.gc_moves; j++) {
			if (check_tags(to[k] + bump, npg[j] * PAGE, rep, off[j])) {
				snprintf(msg, msz, "error: verify: wrong data in run %ld", j);
				goto out;
			}
			bump += npg[j] * PAGE;
		}
		outs[k].us = paired(w) && !batch ? move_times_median(&mt, k) :
			     sum[k] / cfg.gc_moves;
		outs[k].ops = cfg.gc_moves;
	}
	ret = 0;
out:
	free(off);
	free(npg);
	move_times_free(&mt);
	for (k = 0; k < ncs; k++)
		if (res[k] != MAP_FAILED)
			munmap(res[k], rlen);
	return ret;
}

/*
 * One repetition of cs[0..ncs) (several only for paired workloads, see
 * paired()); outs[k] is cs[k]'s result, *bad the index that failed.
 */
static int run_rep(const struct workload *w, const int *cs, int ncs, int rep,
		   struct rep *outs, int *bad, char *msg, size_t msz)
{
	int k;

	for (k = 0; k < ncs; k++) {
		memset(&outs[k], 0, sizeof(outs[k]));
		outs[k].vmas = outs[k].thp_kb = outs[k].mthp_allocs = -1;
	}
	*bad = 0;
	need_module = (w->kind == K_MOVE || w->kind == K_PINGPONG) && w->route != 1;
	direct_module = w->route == 2;
	switch (w->kind) {
	case K_LOOP:
		return rep_loop(w, cs, ncs, rep, outs, bad, msg, msz);
	case K_GC:
		return rep_gc(w, cs, ncs, rep, outs, bad, msg, msz);
	case K_PINGPONG:
		return rep_pingpong(w, cs, ncs, rep, outs, bad, msg, msz);
	default:
		return rep_move(w, cs[0], rep, &outs[0], msg, msz);
	}
}

/*
 * Workloads whose contenders take turns move by move inside one
 * repetition: thousands of short moves, where a repetition of one
 * contender lasts seconds and the host's drift between two such
 * repetitions was as large as the difference measured (bench/README.md,
 * "Routing"). The 1 GiB moves (one per repetition) and FASTREMAP_IOC_MOVE's
 * batches alternate repetition by repetition.
 */
static int paired(const struct workload *w)
{
	return w->kind == K_LOOP || w->kind == K_PINGPONG || (w->kind == K_GC && !w->batch);
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median and the order-statistic 95% CI of the median; 1 if exact CI. */
static int median_ci(const double *v, int n, double *med, double *lo, double *hi)
{
	double s[MAX_REPS], p, cdf = 0;
	int i, k = 0;

	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	*med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	/* cdf(j) = P(Binomial(n, 1/2) <= j); k = largest rank with cdf(k-1) <= 0.025. */
	p = 1;
	for (i = 0; i < n; i++)
		p /= 2;		/* C(n,0) / 2^n */
	for (i = 0; i < n / 2; i++) {
		cdf += p;
		if (cdf > 0.025)
			break;
		k = i + 1;
		p = p * (n - i) / (i + 1);
	}
	if (k < 1) {
		*lo = s[0];
		*hi = s[n - 1];
		return 0;
	}
	*lo = s[k - 1];
	*hi = s[n - k];
	return 1;
}

/* ---- reporting ---- */

static char kver[128];
static double t_start;

/*
 * Where the module's hot loop (module/hot.h) was loaded: at the start of
 * a page of module text, from where scripts/check-placement.sh has
 * checked that it fits the page.
 */
static void placement(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[256], name[128], mod[64];
	unsigned long long addr;
	int found = 0;
	char type;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %127s %63s", &addr, &type, name, mod) != 4 ||
		    strcmp(mod, "[fastremap]") || strcmp(name, "fr_walk"))
			continue;
		found = 1;
		/* 0 or the 16 bytes of a function prefix (6.12, 7.x). */
		if (addr)
			printf("# placement: fr_walk loaded at page offset %#llx\n", addr & 4095);
	}
	fclose(f);
	if (!found)
		printf("# placement: fr_walk not in /proc/kallsyms\n");
}

static void header(void)
{
	char buf[65536], *p, model[128] = "unknown";
	struct utsname u;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int emulated = cfg.emulated;

	uname(&u);
	snprintf(kver, sizeof(kver), "%s", u.release);
	if (read_file("/proc/cpuinfo", buf, sizeof(buf)) == 0 &&
	    (p = strstr(buf, "model name"))) {
		p = strchr(p, ':');
		if (p) {
			p += 1 + strspn(p + 1, " \t");
			snprintf(model, sizeof(model), "%.*s", (int)strcspn(p, "\n"), p);
		}
	}
	if (strstr(model, "QEMU") || strstr(model, "TCG"))
		emulated = 1;
	printf("# fr_bench: fastremap vs mremap(2) vs UFFDIO_MOVE\n");
	printf("# kernel: %s\n", kver);
	printf("# cpu: %s\n", model);
	printf("# vcpus: %ld\n", ncpu);
	printf("# timing: %s\n", emulated ? "emulated (TCG): not hardware timings" :
	       "native");
	printf("# config: reps=%d size=%zuMiB loop_n=%ld gc_moves=%ld gc_arena=%zuMiB "
	       "workloads=%s fresh=%d settle=%d\n", cfg.reps, cfg.size / MiB, cfg.loop_n,
	       cfg.gc_moves, cfg.gc_arena / MiB, cfg.workloads, cfg.fresh, cfg.settle);
	if (fr_unavail[0])
		printf("# fastremap: unavailable: %s\n", fr_unavail);
	else
		printf("# fastremap: ABI %u, features %#llx\n", fr_info.abi_version,
		       (unsigned long long)fr_info.features);
	printf("# uffdio_move: %s\n", uffd_unavail[0] ? uffd_unavail : "available");
	placement();
	printf("# statistics: median of the repetitions; 95%% CI of the median by order "
	       "statistics (binomial, distribution-free)\n");
	printf("# times: microseconds per move (workloads 6, 6m, 7: the median move of one "
	       "repetition, the contenders taking turns move by move; 7bN: mean per move)\n");
	fflush(stdout);
}

static void fmt_us(char *b, size_t n, double us)
{
	if (us >= 1000)
		snprintf(b, n, "%.2f ms", us / 1000);
	else
		snprintf(b, n, "%.1f us", us);
}

static int selected(const char *id)
{
	const char *p = cfg.workloads;
	size_t l = strlen(id);

	if (!strcmp(p, "all"))
		return 1;
	while (*p) {
		if (!strncmp(p, id, l) && (p[l] == ',' || p[l] == 0 || p[l] == ' '))
			return 1;
		p += strcspn(p, ", ");
		p += strspn(p, ", ");
	}
	return 0;
}

static struct cell cells[NWORK][NCONT];

static int mthp_set(const char *val, char *saved, size_t n)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/enabled", mthp_dir);
	if (saved) {
		char buf[128], *l, *r;

		if (read_file(p, buf, sizeof(buf)))
			return -1;
		l = strchr(buf, '[');
		r = l ? strchr(l, ']') : NULL;
		if (!r)
			return -1;
		snprintf(saved, n, "%.*s", (int)(r - l - 1), l + 1);
	}
	return write_file(p, val);
}

static void run_workload(const struct workload *w, int wi, int widx, int wtotal)
{
	int cont[NCONT], nc = 0, c, k, r, err, len;
	char msg[96], saved[32] = "";
	struct rep rr;

	for (c = 0; c < NCONT; c++) {
		struct cell *cl = &cells[wi][c];

		if (!(w->conts & B(c)))
			continue;
		if (c == C_FR && fr_unavail[0])
			snprintf(cl->state, sizeof(cl->state), "skip: %s", fr_unavail);
		else if (c == C_FR && w->batch &&
			 !(fr_info.ioctls & (1ULL << _IOC_NR(FASTREMAP_IOC_MOVE))))
			snprintf(cl->state, sizeof(cl->state),
				 "skip: module without FASTREMAP_IOC_MOVE");
		else if (c == C_UFFD && uffd_unavail[0])
			snprintf(cl->state, sizeof(cl->state), "skip: %s", uffd_unavail);
		cont[nc++] = c;
	}
	if (w->kind == K_MOVE && cfg.size < GiB && w->dst_off == 0)
		printf("# note: size %zu MiB < 1 GiB: workload %s is not a PUD-level move\n",
		       cfg.size / MiB, w->id);
	if (w->writer) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		if (ncpu < 2 || writer_create(1)) {
			for (k = 0; k < nc; k++)
				snprintf(cells[wi][cont[k]].state, sizeof(cells[wi][cont[k]].state),
					 "skip: needs a second CPU for the writer");
			return;
		}
	}
	if (w->mthp && (access(mthp_dir, F_OK) || mthp_set("always", saved, sizeof(saved)))) {
		for (k = 0; k < nc; k++)
			snprintf(cells[wi][cont[k]].state, sizeof(cells[wi][cont[k]].state),
				 "skip: no 64 KiB mTHP on this kernel");
		return;
	}

	for (r = 0; r < cfg.reps; r++) {
		char line[512];
		struct rep rrs[NCONT];
		int live[NCONT], nl = 0, bad, i;

		len = snprintf(line, sizeof(line), "# [%s] workload %d/%d %s rep %d/%d:",
			       kver, widx, wtotal, w->name, r + 1, cfg.reps);
		for (k = 0; k < nc; k++) {
			/* Rotate who goes first, round by round. */
			c = cont[(k + r) % nc];
			if (!cells[wi][c].state[0])
				live[nl++] = c;
		}
		/* Paired: all in one repetition; else one repetition each, in turn. */
		for (k = 0; k < nl; k += i) {
			i = paired(w) ? nl - k : 1;
			if (run_rep(w, live + k, i, r, rrs, &bad, msg, sizeof(msg))) {
				c = live[k + bad];
				snprintf(cells[wi][c].state, sizeof(cells[wi][c].state), "%s", msg);
				len += snprintf(line + len, sizeof(line) - len, " %s %s;",
						cont_name[c], msg);
				/* The others of a paired repetition lose this one. */
				continue;
			}
			for (int j = 0; j < i; j++) {
				char t[32];
				struct cell *cl = &cells[wi][live[k + j]];

				cl->us[cl->n++] = rrs[j].us;
				cl->rep[cl->n - 1] = r;
				if (rrs[j].vmas >= 0)
					cl->vmas[cl->nvmas++] = rrs[j].vmas;
				fmt_us(t, sizeof(t), rrs[j].us);
				len += snprintf(line + len, sizeof(line) - len, " %s %s",
						cont_name[live[k + j]], t);
			}
		}
		printf("%s  (t=%.0fs)\n", line, (now_us() - t_start) / 1e6);
		fflush(stdout);
	}
	/* One more, untimed, with tlb:tlb_flush traced around the moves. */
	for (k = 0; k < nc; k++) {
		struct cell *cl;
		int bad;

		c = cont[k];
		cl = &cells[wi][c];
		if (cl->state[0])
			continue;
		tr_begin();
		traced_rep = 1;
		err = run_rep(w, &c, 1, cfg.reps, &rr, &bad, msg, sizeof(msg));
		traced_rep = 0;
		if (err) {
			tracing = 0;
			tr_disarm();
			snprintf(cl->state, sizeof(cl->state), "%s", msg);
			continue;
		}
		tr_end(&cl->fc);
		cl->ops = rr.ops;
		cl->st = rr.st;
		cl->thp_kb = rr.thp_kb;
		cl->mthp_allocs = rr.mthp_allocs;
	}
	pool_free();
	if (w->mthp)
		mthp_set(saved, NULL, 0);
	if (w->writer)
		writer_destroy();
}

static void print_csv(void)
{
	unsigned w;
	int c, i;

	printf("FR-BENCH-CSV-BEGIN\n");
	printf("kernel,workload,contender,reps,median_us,ci95_lo_us,ci95_hi_us,"
	       "flushes_per_op,flush_reasons,ok,note\n");
	for (w = 0; w < NWORK; w++) {
		const struct workload *wl = &workloads[w];
		char wname[48];

		if (!selected(wl->id))
			continue;
		snprintf(wname, sizeof(wname), "%s_%s", wl->id, wl->name);
		for (c = 0; c < NCONT; c++) {
			struct cell *cl = &cells[w][c];
			char note[512] = "", fl[32] = "", reasons[256] = "";
			double med, lo, hi;
			int nl = 0, exact;

			if (!(wl->conts & B(c)))
				continue;
			if (cl->state[0]) {
				for (i = 0; cl->state[i]; i++)
					if (cl->state[i] == ',' || cl->state[i] == '\n')
						cl->state[i] = ';';
				printf("%s,%s,%s,%d,,,,,,%s,\n", kver, wname, cont_name[c],
				       cl->n, cl->state);
				continue;
			}
			exact = median_ci(cl->us, cl->n, &med, &lo, &hi);
			if (!exact)
				nl += snprintf(note + nl, sizeof(note) - nl, "ci=min-max;");
			if (cl->fc.valid && cl->ops > 0) {
				snprintf(fl, sizeof(fl), "%.6g", cl->fc.total / cl->ops);
				for (i = 0; i < cl->fc.nreasons; i++) {
					size_t rl = strlen(reasons);

					snprintf(reasons + rl, sizeof(reasons) - rl, "%s%s=%.6g",
						 i ? ";" : "", cl->fc.reason[i],
						 cl->fc.count[i] / cl->ops);
				}
				if (cl->fc.lost)
					nl += snprintf(note + nl, sizeof(note) - nl,
						       "trace_lost=%" PRIu64 ";", cl->fc.lost);
			}
			if (c == C_FR && cl->st.calls)
				nl += snprintf(note + nl, sizeof(note) - nl,
					       "module_calls=%.6g;mod_flushes=%.6g;pud=%.6g;pmd=%.6g;thp=%.6g;pte=%.6g;",
					       (double)cl->st.module / cl->st.calls,
					       cl->st.module ? (double)cl->st.flushes / cl->st.module : 0,
					       (double)cl->st.pud / cl->st.calls,
					       (double)cl->st.pmd / cl->st.calls,
					       (double)cl->st.thp / cl->st.calls,
					       (double)cl->st.pte / cl->st.calls);
			if (c == C_FR && workloads[w].route == 2)
				nl += snprintf(note + nl, sizeof(note) - nl, "direct=1;");
			if (c == C_FR && (cl->st.contpte || cl->st.unfolded))
				nl += snprintf(note + nl, sizeof(note) - nl,
					       "contpte=%.6g;unfolded_contpte=%.6g;",
					       (double)cl->st.contpte / cl->st.calls,
					       (double)cl->st.unfolded / cl->st.calls);
			if (c != C_FR && !cells[w][C_FR].state[0] && cells[w][C_FR].n) {
				/*
				 * Per-pair ratios: this contender's time over
				 * fastremap's in the same repetition, their
				 * median and its interval (table.awk's ratio).
				 */
				const struct cell *f = &cells[w][C_FR];
				double pr[MAX_REPS], pm, plo, phi;
				int np = 0, j;

				for (i = 0; i < cl->n; i++)
					for (j = 0; j < f->n; j++)
						if (f->rep[j] == cl->rep[i] && f->us[j] > 0)
							pr[np++] = cl->us[i] / f->us[j];
				if (np) {
					median_ci(pr, np, &pm, &plo, &phi);
					nl += snprintf(note + nl, sizeof(note) - nl,
						       "pair_ratio=%.4g;pair_lo=%.4g;pair_hi=%.4g;pairs=%d;",
						       pm, plo, phi, np);
				}
			}
			if (cl->nvmas) {
				double vm[MAX_REPS], vmed, vlo, vhi;

				for (i = 0; i < cl->nvmas; i++)
					vm[i] = cl->vmas[i];
				median_ci(vm, cl->nvmas, &vmed, &vlo, &vhi);
				nl += snprintf(note + nl, sizeof(note) - nl, "vmas_after=%.0f;", vmed);
			}
			if (cl->thp_kb >= 0)
				nl += snprintf(note + nl, sizeof(note) - nl, "thp_pct=%.0f;",
					       100.0 * cl->thp_kb * KiB / cfg.size);
			if (cl->mthp_allocs >= 0 && cl->ops > 0)
				nl += snprintf(note + nl, sizeof(note) - nl,
					       "mthp64_folios_per_move=%.3g;",
					       cl->mthp_allocs / cl->ops);
			if (nl)
				note[nl - 1] = 0;
			printf("%s,%s,%s,%d,%.1f,%.1f,%.1f,%s,%s,ok,%s\n", kver, wname,
			       cont_name[c], cl->n, med, lo, hi, fl, reasons, note);
		}
	}
	printf("FR-BENCH-CSV-END\n");
	fflush(stdout);
}

int main(void)
{
	const char *why;
	unsigned w;
	int total = 0, idx = 0, bad = 0, c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	cfg_load();
	t_start = now_us();
	open_contenders();
	settle_init();
	mincore_init();
	/* The mover on CPU 0; workload 4's writer takes CPU 1. */
	pin_to(0);
	header();
	why = tr_setup();
#ifdef __aarch64__
	printf("# tlb flush counting: %s\n", why ? why : "arm64: kprobe events on the module's "
	       "flush and mremap(2)'s out-of-line movers, one extra untimed repetition per cell");
#else
	printf("# tlb flush counting: %s\n", why ? why : "tlb:tlb_flush tracepoint, one extra "
	       "untimed repetition per cell");
#endif
	for (w = 0; w < NWORK; w++)
		total += selected(workloads[w].id);
	for (w = 0; w < NWORK; w++) {
		if (!selected(workloads[w].id))
			continue;
		printf("# workload %s %s: %s\n", workloads[w].id, workloads[w].name,
		       workloads[w].desc);
		run_workload(&workloads[w], w, ++idx, total);
	}
	tr_teardown();
	print_csv();
	for (w = 0; w < NWORK; w++)
		for (c = 0; c < NCONT; c++)
			bad |= !strncmp(cells[w][c].state, "error", 5);
	printf("# done in %.1f s%s\n", (now_us() - t_start) / 1e6,
	       bad ? ": some cells FAILED" : "");
	return bad;
}
