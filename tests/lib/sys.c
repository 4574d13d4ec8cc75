// SPDX-License-Identifier: GPL-2.0
/*
 * The system around the tests: the kernel's version, CPUs, time, /proc
 * and sysfs files, the process-wide accounting a failed move must leave
 * as it was, swap on zram, the kernel's log (tlib.h).
 */
#define _GNU_SOURCE
#include "tlib.h"
#include <sys/utsname.h>

int t_kernel_since(int maj, int min, int unknown)
{
	struct utsname u;
	int a, b;

	if (uname(&u) || sscanf(u.release, "%d.%d", &a, &b) != 2)
		return unknown;
	return a > maj || (a == maj && b >= min);
}

int t_pin_cpu(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

double t_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * glibc names every errno from 2.32 (strerrorname_np()); the programs that
 * Debian 11's root compiles against the installed library (make check-deb)
 * have 2.31, so there they name the errnos a move can give, and others by
 * number.
 */
#if !__GLIBC_PREREQ(2, 32)
#define T_E(x)	[x] = #x
static const char *const t_errnames[] = {
	T_E(EPERM), T_E(ENOENT), T_E(ESRCH), T_E(EINTR), T_E(EIO), T_E(ENXIO),
	T_E(E2BIG), T_E(EBADF), T_E(ECHILD), T_E(EAGAIN), T_E(ENOMEM),
	T_E(EACCES), T_E(EFAULT), T_E(EBUSY), T_E(EEXIST), T_E(ENODEV),
	T_E(EINVAL), T_E(ENFILE), T_E(EMFILE), T_E(ENOTTY), T_E(EFBIG),
	T_E(ENOSPC), T_E(ESPIPE), T_E(ERANGE), T_E(ENOSYS), T_E(EOVERFLOW),
	T_E(EOPNOTSUPP), T_E(EPROTONOSUPPORT), T_E(ETIMEDOUT), T_E(ECANCELED),
	T_E(EHWPOISON),
};
#endif

const char *t_errname(int e)
{
	const char *n;

	if (!e)
		return "0";
#if __GLIBC_PREREQ(2, 32)
	n = strerrorname_np(e);
#else
	static __thread char b[24];

	n = e > 0 && e < (int)(sizeof(t_errnames) / sizeof(t_errnames[0])) ? t_errnames[e] : NULL;
	if (!n) {
		snprintf(b, sizeof(b), "errno %d", e);
		n = b;
	}
#endif
	return n ? n : "?";
}

const char *t_flagstr(unsigned int f)
{
	static __thread char b[64];
	size_t n = 0;

	b[0] = 0;
	if (f & MREMAP_MAYMOVE)
		n += snprintf(b + n, sizeof(b) - n, "MAYMOVE|");
	if (f & MREMAP_FIXED)
		n += snprintf(b + n, sizeof(b) - n, "FIXED|");
	if (f & MREMAP_DONTUNMAP)
		n += snprintf(b + n, sizeof(b) - n, "DONTUNMAP|");
	f &= ~(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP);
	if (f)
		n += snprintf(b + n, sizeof(b) - n, "%#x|", f);
	if (n)
		b[n - 1] = 0;
	else
		snprintf(b, sizeof(b), "0");
	return b;
}

long t_proc_field(const char *path, const char *key)
{
	static char buf[16384];
	size_t kl = strlen(key);
	ssize_t n;
	int f = open(path, O_RDONLY | O_CLOEXEC);

	if (f < 0)
		return -1;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	for (char *l = buf; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, key, kl) && l[kl] == ':')
			return strtol(l + kl + 1, NULL, 10);
	return -1;
}

int t_noreserve(size_t len)
{
	long pages = sysconf(_SC_PHYS_PAGES);

	return pages > 0 && len / PG > (size_t)pages ? MAP_NORESERVE : 0;
}

/*
 * Committed_AS to the page: the kernel keeps it as a per-CPU counter whose
 * pending deltas (up to an eighth of memory per CPU under the default
 * overcommit policy) /proc/meminfo does not show. Switching the policy to
 * "never" folds them in (overcommit_policy_handler()), so the value read
 * right after is exact; the policy is then put back. Needs root.
 */
long t_committed_kb(void)
{
	static const char pol[] = "/proc/sys/vm/overcommit_memory";
	char old[16];
	long v;

	if (t_read_str(pol, old, sizeof(old)) || t_write_str(pol, "2"))
		return -1;
	v = t_proc_field("/proc/meminfo", "Committed_AS");
	t_write_str(pol, old);
	return v;
}

int t_acct_read(struct t_acct *a, uintptr_t lo, uintptr_t hi)
{
	a->committed_kb = t_committed_kb();
	a->vmlck_kb = t_proc_field("/proc/self/status", "VmLck");
	if (t_smaps_range(lo, hi, &a->sm))
		return -1;
	return a->committed_kb < 0 || a->vmlck_kb < 0 ? -1 : 0;
}

int t_acct_diff(const struct t_acct *a, const struct t_acct *b,
		char *buf, size_t n)
{
	static const struct { const char *name; size_t off; } f[] = {
		{ "Committed_AS", offsetof(struct t_acct, committed_kb) },
		{ "VmLck", offsetof(struct t_acct, vmlck_kb) },
		{ "Rss", offsetof(struct t_acct, sm.rss_kb) },
		{ "AnonHugePages", offsetof(struct t_acct, sm.anon_huge_kb) },
		{ "Swap", offsetof(struct t_acct, sm.swap_kb) },
		{ "Locked", offsetof(struct t_acct, sm.locked_kb) },
	};

	for (size_t i = 0; i < ARRAY_SIZE(f); i++) {
		long x = *(const long *)((const char *)a + f[i].off);
		long y = *(const long *)((const char *)b + f[i].off);

		if (x != y) {
			snprintf(buf, n, "%s %ld kB -> %ld kB", f[i].name, x, y);
			return 1;
		}
	}
	snprintf(buf, n, "Committed_AS %ld kB, VmLck %ld kB, Rss %ld kB, Locked %ld kB",
		 b->committed_kb, b->vmlck_kb, b->sm.rss_kb, b->sm.locked_kb);
	return 0;
}

/* The zram swap t_swap_setup() turned on, to turn off; "" if none. */
static char t_swap_dev[32];

const char *t_swap_setup(void)
{
	static char why[160];
	char b[32], path[64];
	int idx = 0, f;
	long pages;
	static uint32_t hdr[T_PAGE_MAX / 4];

	if (t_proc_field("/proc/meminfo", "SwapTotal") > 0)
		return "";
	if (!access("/sys/class/zram-control/hot_add", R_OK)) {
		if (t_read_str("/sys/class/zram-control/hot_add", b, sizeof(b)))
			return "zram hot_add failed";
		idx = atoi(b);
	} else if (access("/sys/block/zram0/disksize", W_OK)) {
		return "no swap in /proc/swaps, and no zram (the zram module is not loaded and modprobe is unavailable)";
	}
	snprintf(path, sizeof(path), "/sys/block/zram%d/disksize", idx);
	if (t_write_str(path, "268435456")) {
		snprintf(why, sizeof(why), "zram%d: cannot set disksize", idx);
		return why;
	}
	snprintf(t_swap_dev, sizeof(t_swap_dev), "/dev/zram%d", idx);
	f = open(t_swap_dev, O_RDWR | O_CLOEXEC);
	if (f < 0) {
		snprintf(why, sizeof(why), "%s: %s", t_swap_dev, strerror(errno));
		t_swap_dev[0] = 0;
		return why;
	}
	/* A swap header: version 1, last_page, no bad pages, SWAPSPACE2. */
	pages = 268435456 / PG;
	memset(hdr, 0, PG);
	hdr[1024 / 4] = 1;
	hdr[1024 / 4 + 1] = pages - 1;
	memcpy((char *)hdr + PG - 10, "SWAPSPACE2", 10);
	if (pwrite(f, hdr, PG, 0) != (ssize_t)PG || fsync(f)) {
		close(f);
		t_swap_dev[0] = 0;
		return "cannot write the swap header";
	}
	close(f);
	if (syscall(SYS_swapon, t_swap_dev, 0)) {
		snprintf(why, sizeof(why), "swapon %s: %s", t_swap_dev, strerror(errno));
		t_swap_dev[0] = 0;
		return why;
	}
	tap_diag("swap on %s (zram, 256M)", t_swap_dev);
	return "";
}

void t_swap_off(void)
{
	if (t_swap_dev[0])
		syscall(SYS_swapoff, t_swap_dev);
	t_swap_dev[0] = 0;
}

int t_write_file(const char *dir, const char *name,
		 const char *val, int flags)
{
	char path[160];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC | flags);
	if (fd < 0)
		return -errno;
	if (*val && write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Writes val to the file at path (sysfs, procfs, tracefs). 0 or -errno. */
int t_write_str(const char *path, const char *val)
{
	return t_write_file("/", path, val, O_TRUNC);
}

/* Reads the file at path into buf, without trailing blanks. 0 or -1. */
int t_read_str(const char *path, char *buf, size_t n)
{
	int f = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (f < 0)
		return -1;
	r = read(f, buf, n - 1);
	close(f);
	if (r < 0)
		return -1;
	buf[r] = 0;
	while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == ' '))
		buf[--r] = 0;
	return 0;
}

long t_param(const char *name)
{
	char path[128], b[32];

	snprintf(path, sizeof(path), T_PARAMS "%s", name);
	return t_read_str(path, b, sizeof(b)) ? -1 : atol(b);
}

/* Whether the kernel's log buffer holds @text (read as root). */
int t_kernel_log_has(const char *text)
{
	int n = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0), found;
	char *buf;

	if (n <= 0 || !(buf = malloc(n + 1)))
		return 0;
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, n);
	buf[n > 0 ? n : 0] = 0;
	found = strstr(buf, text) != NULL;
	free(buf);
	return found;
}
