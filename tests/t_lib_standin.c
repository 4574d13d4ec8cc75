// SPDX-License-Identifier: GPL-2.0
/*
 * libfastremap against a stand-in for /dev/fastremap, on any machine: a
 * seccomp filter traps openat(2), ioctl(2), lseek(2) and mremap(2), and
 * the SIGSYS handler answers for the device (its open, the position
 * cookie, INFO and REMAP) and passes everything else on. REMAP makes the
 * move with mremap(2), then answers as the scenario says: an error before
 * or after the change, a result that cannot be written back, a
 * "success" that never ran. So every answer the library can get from a
 * module is tested here, not only those a real module can be made to
 * give. The stand-in's files are opens of /dev/null (a character device);
 * each open's position cookie depends on its access mode.
 *
 * Each scenario runs in a child of its own, so that the library starts
 * untouched: the parent never calls it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/fastremap.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include "fastremap.h"
#include "tlib.h"

#define MIB		(1UL << 20)
#define LEN		(8 * MIB)

#if defined(__x86_64__)
/*
 * The stand-in's own system calls: the filter lets this one instruction
 * through (seccomp_data.instruction_pointer is the address after it).
 */
__asm__(".text\n"
	".globl sd_sys\n"
	".type sd_sys, @function\n"
	"sd_sys:\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	mov %rdx, %rsi\n"
	"	mov %rcx, %rdx\n"
	"	mov %r8, %r10\n"
	"	mov %r9, %r8\n"
	"	mov 8(%rsp), %r9\n"
	"	syscall\n"
	".globl sd_sys_ret\n"
	"sd_sys_ret:\n"
	"	ret\n"
	".size sd_sys, . - sd_sys\n");
long sd_sys(long nr, long a, long b, long c, long d, long e, long f);
extern char sd_sys_ret[];

/* What the stand-in does, and what it saw. */
static struct {
	uint64_t features;	/* INFO's: this module's unless a scenario says */
	int open_err;		/* the device's openat(2) fails so */
	int owner_only;		/* 0600 root: others get EACCES */
	int remap_err;		/* REMAP fails so, having done nothing */
	int remap_enomem_after;	/* REMAP unmaps a FIXED target, then ENOMEM */
	int writeback_fails;	/* REMAP moves; its result cannot be written */
	int remap_fake_ok;	/* REMAP "succeeds" without doing anything */
	int opens, opens_denied, remaps, remaps_ebadf, mremaps;
	uint32_t last_flags;
} sd = { .features = FASTREMAP_FEAT_POS_COOKIE | FASTREMAP_FEAT_REMAP_PINNED };

#define SD_COOKIE(accmode)	(0x5eed000 + (long)(accmode))

static int sd_is_device(long fd)
{
	struct stat st;

	return sd_sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) == 0 &&
	       S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

static long sd_accmode(long fd)
{
	return sd_sys(SYS_fcntl, fd, F_GETFL, 0, 0, 0, 0) & O_ACCMODE;
}

static long sd_open(long dirfd, const char *path, long flags, long mode)
{
	if (strcmp(path, FASTREMAP_DEVICE))
		return sd_sys(SYS_openat, dirfd, (long)path, flags, mode, 0, 0);
	sd.opens++;
	if (sd.open_err)
		return -sd.open_err;
	if (sd.owner_only && sd_sys(SYS_geteuid, 0, 0, 0, 0, 0, 0) != 0) {
		sd.opens_denied++;
		return -EACCES;
	}
	return sd_sys(SYS_openat, AT_FDCWD, (long)"/dev/null",
		      flags & (O_ACCMODE | O_CLOEXEC), 0, 0, 0);
}

static long sd_info(struct fastremap_info *in)
{
	uint32_t size = in->size < sizeof(*in) ? in->size : sizeof(*in);

	memset(in, 0, size);
	in->size = size;
	in->abi_version = FASTREMAP_ABI_VERSION;
	in->features = sd.features;
	in->ioctls = FASTREMAP_IOCTL_BIT_INFO | FASTREMAP_IOCTL_BIT_REMAP;
	return 0;
}

static long sd_remap(long fd, struct fastremap_remap *rq)
{
	long r;

	sd.remaps++;
	sd.last_flags = rq->flags;
	if (sd_accmode(fd) == O_RDONLY) {
		sd.remaps_ebadf++;
		return -EBADF;
	}
	if (sd.remap_fake_ok)
		return 0;
	if (rq->flags)
		return -EINVAL;
	if (sd.remap_err)
		return -sd.remap_err;
	if (sd.remap_enomem_after) {
		sd_sys(SYS_munmap, (long)rq->new_addr, (long)rq->new_size, 0, 0, 0, 0);
		return -ENOMEM;
	}
	r = sd_sys(SYS_mremap, (long)rq->old_addr, (long)rq->old_size,
		   (long)rq->new_size, rq->mremap_flags, (long)rq->new_addr, 0);
	if (r < 0 && r > -4096)
		return r;
	/* A module without FASTREMAP_FEAT_REMAP_PINNED. */
	if (sd.writeback_fails)
		return -EFAULT;
	rq->new_addr = (uint64_t)r;
	rq->moved_pud = rq->moved_pmd = rq->moved_thp = 0;
	rq->moved_pte = rq->old_size / PG;
	rq->moved_contpte = rq->unfolded_contpte = 0;
	rq->tlb_flushes = 1;
	return 0;
}

static long sd_ioctl(long fd, unsigned long cmd, long arg)
{
	if (!sd_is_device(fd))
		return sd_sys(SYS_ioctl, fd, (long)cmd, arg, 0, 0, 0);
	if (cmd == FASTREMAP_IOC_INFO)
		return sd_info((void *)arg);
	if (cmd == FASTREMAP_IOC_REMAP)
		return sd_remap(fd, (void *)arg);
	return -ENOTTY;
}

static void sd_trap(int sig, siginfo_t *si, void *ctx)
{
	greg_t *g = ((ucontext_t *)ctx)->uc_mcontext.gregs;
	long a = g[REG_RDI], b = g[REG_RSI], c = g[REG_RDX];
	long d = g[REG_R10], e = g[REG_R8], f = g[REG_R9], r;

	(void)sig;
	switch (si->si_syscall) {
	case SYS_openat:
		r = sd_open(a, (const char *)b, c, d);
		break;
	case SYS_ioctl:
		r = sd_ioctl(a, (unsigned long)b, c);
		break;
	case SYS_lseek:
		/* The module's llseek reports the cookie and changes nothing. */
		r = sd_is_device(a) ? SD_COOKIE(sd_accmode(a)) :
		    sd_sys(SYS_lseek, a, b, c, 0, 0, 0);
		break;
	case SYS_mremap:
		sd.mremaps++;
		r = sd_sys(SYS_mremap, a, b, c, d, e, f);
		break;
	default:
		r = -ENOSYS;
	}
	g[REG_RAX] = r;
}

/*
 * Installs a filter: the stand-in's own system calls (sd_sys()) pass; of
 * the others, those in @nrs get @hit, the rest @miss.
 */
static int sd_filter(const int *nrs, int n, uint32_t hit, uint32_t miss)
{
	uint64_t ip = (uintptr_t)sd_sys_ret;
	const struct sock_filter head[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, instruction_pointer)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)ip, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, instruction_pointer) + 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(ip >> 32), 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	};
	enum { H = sizeof(head) / sizeof(head[0]), MAX = 32 };
	struct sock_filter f[H + MAX + 2];
	struct sock_fprog prog = { (unsigned short)(H + n + 2), f };

	if (n > MAX)
		return -1;
	memcpy(f, head, sizeof(head));
	/* Each match jumps to the @hit return at the end. */
	for (int k = 0; k < n; k++)
		f[H + k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
							(uint32_t)nrs[k],
							(uint8_t)(n - k), 0);
	f[H + n] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, miss);
	f[H + n + 1] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, hit);
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static int sd_install(void)
{
	static const int trapped[] = { SYS_openat, SYS_ioctl, SYS_lseek, SYS_mremap };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sd_trap;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	if (sigaction(SIGSYS, &sa, NULL))
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return sd_filter(trapped, sizeof(trapped) / sizeof(trapped[0]),
			 SECCOMP_RET_TRAP, SECCOMP_RET_ALLOW);
}

/*
 * A second filter, as a strict sandbox would install: the system calls
 * fastremap(3) lists, and those this program needs to return from a
 * signal and exit; anything else kills the process.
 */
static int strict_install(void)
{
	static const int allowed[] = {
		/* fastremap(3), SYSTEM CALLS */
		SYS_mremap, SYS_openat, SYS_close, SYS_fcntl, SYS_newfstatat,
		SYS_ioctl, SYS_lseek, SYS_geteuid, SYS_getegid, SYS_clock_gettime,
		/* this program */
		SYS_rt_sigreturn, SYS_exit_group, SYS_exit,
	};

	return sd_filter(allowed, sizeof(allowed) / sizeof(allowed[0]),
			 SECCOMP_RET_ALLOW, SECCOMP_RET_KILL_PROCESS);
}

/* ---- memory ---- */

static uint64_t pattern(size_t word)
{
	return 0x9e3779b97f4a7c15ULL * (word + 1);
}

/* A source of @len bytes, filled, and a free target of @len (NULL: none). */
static int two_ranges(char **src, char **dst, size_t len)
{
	char *p = mmap(NULL, 3 * len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	/* A page between them, so they never merge. */
	munmap(p + len, len);
	*src = p;
	if (dst)
		*dst = p + 2 * len;
	for (size_t k = 0; k < len / 8; k++)
		((uint64_t *)p)[k] = pattern(k);
	return 0;
}

static int holds_pattern(const char *p, size_t len)
{
	for (size_t k = 0; k < len / 8; k++)
		if (((const uint64_t *)p)[k] != pattern(k))
			return 0;
	return 1;
}

static int is_mapped(const void *p)
{
	unsigned char v;

	return mincore((void *)((uintptr_t)p & ~(PG - 1)), PG, &v) == 0;
}

/*
 * Descriptors above 2 open on the stand-in (/dev/null); the last in
 * *which. With @close_them, close them (those the child inherited).
 */
static int standin_fds(int *which, int close_them)
{
	char path[300], target[64];
	struct dirent *de;
	int n = 0;
	DIR *d = opendir("/proc/self/fd");

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		ssize_t l;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		l = readlink(path, target, sizeof(target) - 1);
		if (l <= 0)
			continue;
		target[l] = 0;
		/* The standard streams may be /dev/null too: never the library's. */
		if (!strcmp(target, "/dev/null") && atoi(de->d_name) > 2) {
			n++;
			if (which)
				*which = atoi(de->d_name);
			if (close_them)
				close(atoi(de->d_name));
		}
	}
	closedir(d);
	return n;
}

/*
 * What every scenario starts with (each runs in a child of its own): a
 * source a of LEN bytes, filled, and a free target b, the stand-in in
 * place; the stats and result of its last call.
 */
static char *a, *b;
static struct fastremap_stats st;
static void *res;

static int sd_start(void)
{
	return two_ranges(&a, &b, LEN) || sd_install();
}

/* A MREMAP_FIXED call through the library, routing off. */
static long lib_fixed(char *src, char *dst, int extra, struct fastremap_stats *st,
		      void **res)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return fastremap_remap(src, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED | extra,
			       dst, FASTREMAP_NO_ROUTING, st, res);
}

/* ---- scenarios: each returns 0, or the number of the check that failed ---- */

/*
 * A module without FASTREMAP_FEAT_REMAP_PINNED moves the memory, then
 * cannot write the result back (EFAULT). mremap(2) after that would empty
 * the target (DONTUNMAP: the emptied source moved onto it) or unmap it (a
 * FIXED move whose source is gone): the error must be returned, the
 * moved data left alone.
 */
static int lost_result(int extra)
{
	long r;

	sd.features = FASTREMAP_FEAT_POS_COOKIE;
	sd.writeback_fails = 1;
	r = lib_fixed(a, b, extra, &st, &res);
	if (r != -EFAULT)
		return r == 0 ? 2 : 3;
	if (sd.mremaps)
		return 4;	/* retried with mremap(2) */
	if (!is_mapped(b) || !holds_pattern(b, LEN))
		return 5;
	return st.used_module ? 0 : 6;
}

static int s_lost_result_dontunmap(void)
{
	return lost_result(MREMAP_DONTUNMAP);
}

static int s_lost_result_fixed(void)
{
	return lost_result(0);
}

/*
 * Errors the module gives before any change: mremap(2) answers a FIXED
 * call, with its own side effects. EFAULT is one only from a module with
 * FASTREMAP_FEAT_REMAP_PINNED.
 */
static int unchanged_retried(int err)
{
	long r;

	sd.remap_err = err;
	r = lib_fixed(a, b, 0, &st, &res);
	if (r || res != b || st.used_module || sd.mremaps != 1)
		return 2;
	if (st.reason != FASTREMAP_REASON_IOCTL_ERROR || st.reason_errno != err)
		return 3;
	return holds_pattern(b, LEN) ? 0 : 4;
}

static int s_unchanged_einval(void)
{
	return unchanged_retried(EINVAL);
}

static int s_unchanged_efault_pinned(void)
{
	return unchanged_retried(EFAULT);
}

/*
 * ENOMEM after the module unmapped a FIXED target: final. mremap(2) would
 * now make the move the module just reported failed.
 */
static int s_enomem_final(void)
{
	long r;

	sd.remap_enomem_after = 1;
	memset(b, 1, LEN);
	r = lib_fixed(a, b, 0, &st, &res);
	if (r != -ENOMEM)
		return 2;
	if (sd.mremaps || !st.used_module)
		return 3;
	return holds_pattern(a, LEN) && !is_mapped(b) ? 0 : 4;
}

/* A declined case and a "success" that never ran: mremap(2) answers. */
static int s_declined_and_fake(void)
{
	long r;

	sd.remap_err = EOPNOTSUPP;
	r = lib_fixed(a, b, 0, &st, &res);
	if (r || res != b || st.used_module || st.reason != FASTREMAP_REASON_DECLINED ||
	    sd.mremaps != 1)
		return 2;
	sd.remap_err = 0;
	sd.remap_fake_ok = 1;
	r = lib_fixed(b, a, 0, &st, &res);
	if (r || res != a || st.used_module || sd.mremaps != 2)
		return 3;
	return holds_pattern(a, LEN) ? 0 : 4;
}

/*
 * The program closes the library's descriptor and opens the device
 * read-only, getting the same number: it passes the identity check but
 * answers EBADF. The library must drop it once and use a descriptor of
 * its own from then on, never closing the program's.
 */
static int s_readonly_reuse(void)
{
	int fd = -1, ro;

	if (lib_fixed(a, b, 0, &st, &res) || !st.used_module)
		return 2;
	if (standin_fds(&fd, 0) != 1)
		return 3;
	close(fd);
	ro = open(FASTREMAP_DEVICE, O_RDONLY | O_CLOEXEC);
	if (ro != fd)
		return 4;
	for (int k = 0; k < 4; k++) {
		if (lib_fixed(k % 2 ? a : b, k % 2 ? b : a, 0, &st, &res) ||
		    !st.used_module)
			return 10 + k;
	}
	if (sd.remaps_ebadf != 1)
		return 20 + (sd.remaps_ebadf > 9 ? 9 : sd.remaps_ebadf);
	if (fcntl(ro, F_GETFD) < 0 || standin_fds(NULL, 0) != 2)
		return 30;
	return holds_pattern(b, LEN) ? 0 : 31;
}

/* The seconds of the clock the library times its retries by. */
static unsigned int coarse_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return (unsigned int)t.tv_sec;
}

/*
 * A descriptor the library has just opened answers REMAP with ENOTTY:
 * something in front of the module. It is closed and the device left
 * alone for a while, not asked again on every call. The library asks
 * again once the clock's second has turned, which may be a millisecond
 * later: the calls start just after a second turned, and each second
 * that turns during them (a loaded host) allows one more question.
 */
static int s_fresh_enotty(void)
{
	struct timespec ms = { 0, 1000000 };
	unsigned int s0 = coarse_s(), turned;

	while (coarse_s() == s0)
		nanosleep(&ms, NULL);
	s0 = coarse_s();
	sd.remap_err = ENOTTY;
	for (int k = 0; k < 3; k++) {
		if (lib_fixed(k % 2 ? b : a, k % 2 ? a : b, 0, &st, &res) ||
		    st.used_module)
			return 10 + k;
	}
	turned = coarse_s() - s0;
	if (sd.opens < 1 || sd.opens > 1 + (int)turned || sd.remaps != sd.opens)
		return 20;
	return standin_fds(NULL, 0) == 0 ? 0 : 21;
}

/*
 * The device is 0600 root. A root process uses it, then drops its
 * effective IDs (keeping root as the saved ID, to come back): the cached
 * descriptor must not serve the new IDs, which could not open it.
 */
static int s_creds_dropped(void)
{
	int remaps;

	sd.owner_only = 1;
	if (lib_fixed(a, b, 0, &st, &res) || !st.used_module)
		return 2;
	remaps = sd.remaps;
	if (setresgid(65534, 65534, 0) || setresuid(65534, 65534, 0))
		return 3;
	if (lib_fixed(b, a, 0, &st, &res) || res != a)
		return 4;
	if (st.used_module || sd.remaps != remaps)
		return 5;	/* the device served IDs it refuses */
	if (st.reason != FASTREMAP_REASON_NO_ACCESS || st.reason_errno != EACCES)
		return 6;
	/* Back to root: usable again. */
	if (setresuid(0, 0, 0) || setresgid(0, 0, 0))
		return 7;
	if (lib_fixed(a, b, 0, &st, &res) || !st.used_module)
		return 8;
	return holds_pattern(b, LEN) ? 0 : 9;
}

/*
 * No access (EACCES): not asked again every second, only when the
 * credentials change.
 */
static int s_eacces_probes(void)
{
	struct timespec ts = { 1, 200000000 };

	sd.owner_only = 1;
	if (setresuid(65534, 65534, 0))
		return 2;
	if (lib_fixed(a, b, 0, &st, &res) || st.reason != FASTREMAP_REASON_NO_ACCESS)
		return 3;
	nanosleep(&ts, NULL);
	if (lib_fixed(b, a, 0, &st, &res) || st.reason != FASTREMAP_REASON_NO_ACCESS)
		return 4;
	if (sd.opens != 1)
		return 10 + (sd.opens > 9 ? 9 : sd.opens);
	if (setresuid(0, 0, 0))
		return 5;
	if (lib_fixed(a, b, 0, &st, &res) || !st.used_module)
		return 6;
	return sd.opens == 2 ? 0 : 7;
}

/*
 * Without the module a growth that has to move costs one mremap(2) call,
 * as it does without the library: no in-place attempt first.
 */
static int s_growth_no_module(void)
{
	void *r;

	sd.open_err = ENOENT;
	/* Misaligned: more extents than the library routes to mremap(2). */
	for (int k = 0; k < 2; k++) {
		char *src = k ? b : a;
		int before = sd.mremaps;

		r = fastremap(src, LEN, 3 * LEN, MREMAP_MAYMOVE);
		if (r == MAP_FAILED || !holds_pattern(r, LEN))
			return 2 + k;
		if (sd.mremaps - before != 1)
			return 10 + k * 10 + (sd.mremaps - before);
		if (!k)
			b = r;
	}
	return 0;
}

/*
 * A sandbox that kills on any system call but those fastremap(3) lists:
 * the module path (open, handshake, REMAP, the cookie check), a declined
 * call's fallback and a routed call all stay inside the list.
 */
static int s_strict_sandbox(void)
{
	if (strict_install())
		return 1;
	if (lib_fixed(a, b, 0, &st, &res) || !st.used_module)
		return 2;
	if (lib_fixed(b, a, 0, &st, &res) || !st.used_module)
		return 3;
	sd.remap_err = EOPNOTSUPP;
	if (lib_fixed(a, b, 0, &st, &res) || st.used_module)
		return 4;
	if (fastremap(b, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, a) != a)
		return 5;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		int (*fn)(void);
		const char *what;
		int root;	/* changes its IDs: needs root */
	} sc[] = {
		{ s_lost_result_dontunmap, "module without PINNED, FIXED|DONTUNMAP, the move made but "
		  "its result not written (EFAULT): EFAULT returned, no mremap(2), the "
		  "data at the target", 0 },
		{ s_lost_result_fixed, "module without PINNED, FIXED, the move made but its result not "
		  "written (EFAULT): EFAULT returned, no mremap(2), the target mapped "
		  "with the data", 0 },
		{ s_unchanged_einval, "EINVAL before any change, FIXED: mremap(2) answers, "
		  "once", 0 },
		{ s_unchanged_efault_pinned, "module with PINNED, EFAULT (before any change), "
		  "FIXED: mremap(2) answers, once", 0 },
		{ s_enomem_final, "ENOMEM after the FIXED target was unmapped: returned, "
		  "never retried with mremap(2)", 0 },
		{ s_declined_and_fake, "EOPNOTSUPP, and a 'success' that wrote nothing: "
		  "mremap(2) answers", 0 },
		{ s_readonly_reuse, "the program's read-only open of the device under the "
		  "library's number: dropped after one EBADF, never closed", 0 },
		{ s_fresh_enotty, "ENOTTY from a descriptor just opened: closed, not asked "
		  "again on every call", 0 },
		{ s_creds_dropped, "a root process drops its effective IDs: the device "
		  "(0600 root) no longer serves it; back to root, it does", 1 },
		{ s_eacces_probes, "EACCES: the device is not asked again a second later, "
		  "only when the credentials change", 1 },
		{ s_growth_no_module, "no module: a growth that must move is one mremap(2) "
		  "call", 0 },
		{ s_strict_sandbox, "a sandbox that kills on any system call fastremap(3) "
		  "does not list: the module path, a fallback and a routed call live", 0 },
	};

	/* One scenario in this process (for a debugger): its number. */
	if (argc > 1) {
		size_t k = strtoul(argv[1], NULL, 10);

		standin_fds(NULL, 1);
		if (sd_start())
			return 1;
		return k < sizeof(sc) / sizeof(sc[0]) ? sc[k].fn() : 127;
	}
	for (size_t k = 0; k < sizeof(sc) / sizeof(sc[0]); k++) {
		int status = 0;
		pid_t pid;

		if (sc[k].root && geteuid()) {
			tap_skip_test("not root", "%s", sc[k].what);
			continue;
		}
		pid = fork();

		if (pid == 0) {
			standin_fds(NULL, 1);
			_exit(sd_start() ? 1 : sc[k].fn());
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			status = -1;
		if (WIFSIGNALED(status))
			tap_diag("killed by signal %d", WTERMSIG(status));
		tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s (exit %d)",
		       sc[k].what, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	return tap_done();
}
#else
int main(void)
{
	tap_skip_test("x86-64 only", "the stand-in device traps system calls by register");
	return tap_done();
}
#endif
