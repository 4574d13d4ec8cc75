// SPDX-License-Identifier: GPL-2.0
/*
 * libfastremap: mremap(2) through /dev/fastremap, with mremap(2) itself
 * as the fallback. See fastremap(3).
 *
 * The device descriptor. The library opens /dev/fastremap lazily, on the
 * first call that needs it, with O_CLOEXEC, and keeps it for the life of
 * the process. Its state is one atomic 32-bit word (see fr_state below):
 * "not tried yet", "unavailable", or the descriptor, with a generation
 * count so that a thread acting on an old view of the word can never
 * overwrite a newer one. 32-bit words are lock-free on every Linux
 * target; 64-bit ones are not (armel, mips32, ppc32 reach them through
 * libatomic, which takes locks), and a lock would break the promise below.
 * Threads racing on the first call each open the device; one publishes
 * its descriptor with a compare-and-swap and the others close theirs.
 * There is no lock, so fork() can never inherit a held one.
 *
 * After fork() the child shares the descriptor (the same open file). That
 * is correct: FASTREMAP_IOC_REMAP acts on the memory of the process that
 * makes the call (current->mm in the module), not on that of the process
 * that opened the device, and the open file carries no state (no offset,
 * no private data). The descriptor is close-on-exec, so exec'd programs
 * do not inherit it.
 *
 * The descriptor is a number in the caller's table, which the caller may
 * close or replace by mistake. Before each use the library checks that it
 * is still the device it opened (the position cookie, else the device
 * number: fr_device_find()); if not, or if it answers the remap ioctl with
 * EBADF or ENOTTY, it forgets the number (never closing it: it is the
 * caller's now) and opens the device again. A descriptor below 3 is moved
 * above 2, or closed if it cannot be, so a program that starts with stdin,
 * stdout or stderr closed and reopens them gets the numbers it expects.
 * The device's permissions keep applying when the process changes its
 * effective IDs: see fr_creds_allow().
 *
 * A missing device (or one whose ABI we do not speak) is remembered until
 * the monotonic clock's next second, after which the next call tries
 * again: a module loaded after the process started is picked up without a
 * restart, and a process without the module pays at most one failed
 * open(2) per second. One the process may not open is tried again when
 * its effective IDs change.
 *
 * The system calls made are listed in fastremap(3), SYSTEM CALLS.
 *
 * Every system call is made directly (fr_syscall6()), never through the
 * C library's wrappers: open(), close(), write()... are thread
 * cancellation points, mremap() is not, and a thread cancelled inside
 * mremap() while holding its allocator's lock would leave that lock held.
 * clock_gettime() is the exception: it is no cancellation point, and its
 * vDSO path makes no system call at all.
 *
 * No call allocates memory, takes a lock or touches errno unless it
 * reports an error through it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/fastremap.h>
#include "fastremap.h"

/* userspace/Makefile passes the top-level VERSION file's version. */
#ifndef FR_LIB_VERSION
#define FR_LIB_VERSION "unknown"
#endif

_Static_assert(sizeof(struct fastremap_stats) == FASTREMAP_STATS_SIZE_VER2,
	       "fastremap_stats layout");
_Static_assert(sizeof(struct fastremap_abi_info) == FASTREMAP_ABI_INFO_SIZE_VER0,
	       "fastremap_abi_info layout");
_Static_assert(FASTREMAP_IOCTL_BIT_INFO == 1ULL << _IOC_NR(FASTREMAP_IOC_INFO) &&
	       FASTREMAP_IOCTL_BIT_REMAP == 1ULL << _IOC_NR(FASTREMAP_IOC_REMAP),
	       "ioctl bits");
/* Async-signal safety: the state must never be reached through a lock. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2,
	       "libfastremap needs lock-free 32-bit atomics on this target");
_Static_assert(ATOMIC_LONG_LOCK_FREE == 2,
	       "libfastremap needs lock-free word-sized atomics on this target");

/* Older C libraries (glibc before 2.32: Debian 11) lack it: the kernel's value. */
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4
#endif
/* The mremap(2) flags the module's ABI version 1 knows. */
#define FR_KNOWN_MREMAP_FLAGS	(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)
#define FR_KNOWN_FR_FLAGS	(FASTREMAP_NO_FALLBACK | FASTREMAP_MREMAP_ONLY | \
				 FASTREMAP_NO_ROUTING)
#define FR_CONFLICTING_FR_FLAGS	(FASTREMAP_NO_FALLBACK | FASTREMAP_MREMAP_ONLY)
/*
 * Moves that mremap(2) makes in at most this many PMD extents go to
 * mremap(2) directly (see fr_route()). Measured under emulation, moves
 * interleaved in one process, 301 of each (bench/README.md, "Routing"):
 * the module's fixed cost per call (the ioctl, copying the request in
 * and out, its checks) made it 1-12% slower than mremap(2) up to 4
 * extents, and 2-6% faster from 5 on. Except a move PTE by PTE over a
 * whole PTE table, which the module copies (fr_pte_whole_table()).
 */
#define FR_ROUTE_MAX_EXTENTS	4u
/* Structures passed in are at most a page, as the module's are. */
#define FR_MAX_STRUCT_SIZE	4096u
/*
 * Output fields are ignored on input and always written on success: a
 * value the module never reports, to tell its success from a "success"
 * that never reached it (a seccomp filter's SECCOMP_RET_ERRNO with 0).
 */
#define FR_UNWRITTEN		UINT64_MAX

/*
 * The state word. Its low 24 bits: FR_SLOT_UNKNOWN (not tried yet, or
 * forgotten), FR_SLOT_UNAVAILABLE (see fr_why and fr_retry_at), or the
 * descriptor + FR_SLOT_FD0 (see fr_dev). Its high 8 bits count the
 * changes, so that a compare-and-swap from an old view fails even when
 * the same descriptor number was published again meanwhile (without it,
 * a thread that saw the caller close our number could forget the new
 * descriptor another thread just opened under the same number, and leak
 * it). A descriptor too large for 24 bits is not kept.
 */
#define FR_SLOT_UNKNOWN		0u
#define FR_SLOT_UNAVAILABLE	1u
#define FR_SLOT_FD0		2u
#define FR_SLOT_MASK		0xffffffu
#define FR_MAX_FD		((int)(FR_SLOT_MASK - FR_SLOT_FD0))
#define FR_SLOT(s)		((s) & FR_SLOT_MASK)
#define FR_FD(s)		((int)(FR_SLOT(s) - FR_SLOT_FD0))

static atomic_uint fr_state = FR_SLOT_UNKNOWN;
/* The device number the published descriptor was opened on (fr_enc_dev). */
static atomic_uint fr_dev;
/* While unavailable: reason << 16 | errno, and the monotonic second to retry at. */
static atomic_uint fr_why;
static atomic_uint fr_retry_at;
/*
 * FASTREMAP_FEAT_POS_COOKIE: whether the module fixes each open file's
 * position to a cookie, and the cookie of the published descriptor's
 * file as last verified (0: none yet). See fr_device_find().
 */
static atomic_uint fr_pos_ok;
/* unsigned long: the check is made where that holds an off_t (LP64). */
static atomic_ulong fr_pos;
/*
 * FASTREMAP_FEAT_REMAP_PINNED: the module reports every move it made as
 * a success, so its EFAULT never follows a change.
 */
static atomic_uint fr_pinned;
/*
 * FASTREMAP_FEAT_MREMAP_PUD: whether the kernel's mremap(2) moves whole
 * PUD entries (FR_PUD_MOVED) or not (FR_PUD_NOT_MOVED), as the first
 * module to answer said; 0 until then. A property of the running kernel:
 * never forgotten.
 */
#define FR_PUD_NOT_MOVED	1u
#define FR_PUD_MOVED		2u
#define FR_PUD_AS_SAID		3u	/* fr_mremap_extents(): ask fr_mremap_pud */
static atomic_uint fr_mremap_pud;

/*
 * The effective user and group IDs the device was last opened with or
 * checked for (fr_cred_state FR_CRED_OK: usable; FR_CRED_DENIED: open(2)
 * failed with fr_cred_err; 0: none yet). See fr_creds_allow().
 */
#define FR_CRED_OK	1u
#define FR_CRED_DENIED	2u
static atomic_uint fr_cred_state;
static atomic_uint fr_cred_uid;
static atomic_uint fr_cred_gid;
static atomic_uint fr_cred_err;

/* The descriptor a call uses, and the state word that published it. */
struct fr_ref {
	int fd;
	unsigned int state;
	int fresh;	/* opened and published by this call */
};

struct fr_why {
	int reason;
	int err;
};

/* The state word that replaces @old with @slot. */
static unsigned int fr_next(unsigned int old, unsigned int slot)
{
	return (((old >> 24) + 1u) << 24) | slot;
}

static uint32_t fr_enc_dev(uint32_t maj, uint32_t min)
{
	return (maj & 0xfff) << 20 | (min & 0xfffff);
}

/* The monotonic clock's seconds; wraps after 136 years, compared modulo. */
static unsigned int fr_now_s(void)
{
	struct timespec t;
	int saved = errno;

	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &t)) {
		errno = saved;
		return 0;
	}
	return (unsigned int)t.tv_sec;
}

/* ---- system calls, made directly (see the top of this file) ---- */

/*
 * A system call with the kernel's own result: the value, or a negative
 * errno. On x86-64 and arm64 the instruction is inline: errno is never
 * touched and a call the library routes to mremap(2) runs no code outside
 * the library. Under emulation each further page of code a call runs
 * costs as much as the library's whole routing decision: through
 * syscall(3) and errno, a routed move was 3-6% slower than mremap(2)
 * called directly (bench/README.md, "The library's own cost").
 */
#if defined(__x86_64__) && !defined(__ILP32__)
static inline long fr_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__) && !defined(__ILP32__)
static inline long fr_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory", "cc");
	return x0;
}
#else
static long fr_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	int saved = errno;
	long r = syscall(nr, a, b, c, d, e, f);

	if (r == -1) {
		r = -errno;
		errno = saved;
	}
	return r;
}
#endif
#define FR_SYS(nr, a, b, c, d, e, f) \
	fr_syscall6((nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

static int fr_sys_open_device(void)
{
	return (int)FR_SYS(SYS_openat, AT_FDCWD, FASTREMAP_DEVICE,
			   O_RDWR | O_CLOEXEC | O_NOCTTY, 0, 0, 0);
}

static void fr_sys_close(int fd)
{
	FR_SYS(SYS_close, fd, 0, 0, 0, 0, 0);
}

static long fr_sys_ioctl(int fd, unsigned long cmd, void *arg)
{
	return FR_SYS(SYS_ioctl, fd, cmd, arg, 0, 0, 0);
}

/* The position of @fd's file, or a negative errno; 0 where off_t is narrow. */
static long fr_sys_pos(int fd)
{
#if defined(SYS_lseek) && UINTPTR_MAX > 0xffffffffu
	return FR_SYS(SYS_lseek, fd, 0, SEEK_CUR, 0, 0, 0);
#else
	(void)fd;
	return 0;
#endif
}

/*
 * Whether @fd is a character device, and its device number: 1 and *dev
 * set, 0 (not one), or a negative errno (-EBADF: no such descriptor).
 *
 * This runs when the device is opened, and before an ioctl only where
 * the position cookie cannot vouch for the descriptor (a module without
 * FASTREMAP_FEAT_POS_COOKIE, a descriptor whose position differs). It is
 * the call the C library's fstat() makes (glibc 2.33 and later, musl):
 * fstatat(2) with an empty path, so that a sandbox that allows a C
 * program's fstat() allows the library's too; fstat(2) itself is a
 * system call no such program makes, and a kill-on-unknown filter would
 * end the process. (An empty path costs a name lookup: under QEMU TCG on
 * 6.1, 17.6-24.2 us against fstat(2)'s 2.5-6.6 us, one boot, 20,000
 * calls each; the cookie makes that rare.) The system call is made
 * directly where the kernel's struct stat is the C library's (x86-64,
 * arm64); other architectures use statx(2), whose layout is the same
 * everywhere. Neither is a cancellation point.
 */
#if defined(SYS_newfstatat) && defined(__x86_64__) && !defined(__ILP32__)
#define FR_KSTAT_SIZE	144
#elif defined(SYS_newfstatat) && defined(__aarch64__) && !defined(__ILP32__)
#define FR_KSTAT_SIZE	128
#endif
#ifdef FR_KSTAT_SIZE
_Static_assert(sizeof(struct stat) == FR_KSTAT_SIZE, "struct stat is not the kernel's");
static int fr_chr_dev(int fd, uint32_t *dev)
{
	struct stat st = { 0 };
	long r;

	r = FR_SYS(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH, 0, 0);
	if (r)
		return (int)r;
	*dev = fr_enc_dev(major(st.st_rdev), minor(st.st_rdev));
	return S_ISCHR(st.st_mode);
}
#else
static int fr_chr_dev(int fd, uint32_t *dev)
{
	struct statx stx;
	long r;

	r = FR_SYS(SYS_statx, fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &stx, 0);
	if (r)
		return (int)r;
	if (!(stx.stx_mask & STATX_TYPE))
		return -ENOSYS;
	*dev = fr_enc_dev(stx.stx_rdev_major, stx.stx_rdev_minor);
	return S_ISCHR(stx.stx_mode);
}
#endif

/* How a failed open(2) of the device is reported. */
static int fr_open_reason(int err)
{
	switch (err) {
	case ENOENT:
	case ENODEV:
	case ENXIO:
		return FASTREMAP_REASON_NO_DEVICE;
	case EACCES:
	case EPERM:
		return FASTREMAP_REASON_NO_ACCESS;
	default:
		return FASTREMAP_REASON_OPEN_FAILED;
	}
}

/*
 * Remembers for a while that the device cannot be used, and why. Returns
 * whether the state was still @seen (and is now "unavailable").
 */
static int fr_set_unavailable(unsigned int seen, int reason, int err)
{
	atomic_store_explicit(&fr_why, (unsigned int)reason << 16 |
			      ((unsigned int)err & 0xffff), memory_order_relaxed);
	atomic_store_explicit(&fr_retry_at, fr_now_s() + 1, memory_order_relaxed);
	/* If another thread published something meanwhile, keep theirs. */
	return atomic_compare_exchange_strong_explicit(&fr_state, &seen,
						       fr_next(seen, FR_SLOT_UNAVAILABLE),
						       memory_order_acq_rel,
						       memory_order_relaxed);
}

/*
 * Forgets the descriptor published as @state, without closing it: the
 * number may be the caller's now. The next call opens the device again.
 */
static void fr_forget(unsigned int state)
{
	atomic_compare_exchange_strong_explicit(&fr_state, &state,
						fr_next(state, FR_SLOT_UNKNOWN),
						memory_order_acq_rel,
						memory_order_acquire);
}

static void fr_creds_now(unsigned int *uid, unsigned int *gid)
{
	*uid = (unsigned int)FR_SYS(SYS_geteuid, 0, 0, 0, 0, 0, 0);
	*gid = (unsigned int)FR_SYS(SYS_getegid, 0, 0, 0, 0, 0, 0);
}

static void fr_creds_note(unsigned int uid, unsigned int gid, unsigned int state, int err)
{
	atomic_store_explicit(&fr_cred_state, 0, memory_order_relaxed);
	atomic_store_explicit(&fr_cred_uid, uid, memory_order_relaxed);
	atomic_store_explicit(&fr_cred_gid, gid, memory_order_relaxed);
	atomic_store_explicit(&fr_cred_err, (unsigned int)err, memory_order_relaxed);
	atomic_store_explicit(&fr_cred_state, state, memory_order_release);
}

/* FR_CRED_OK or FR_CRED_DENIED as last found for these IDs; 0: not known. */
static unsigned int fr_creds_known(unsigned int uid, unsigned int gid)
{
	unsigned int st = atomic_load_explicit(&fr_cred_state, memory_order_acquire);

	if (st && uid == atomic_load_explicit(&fr_cred_uid, memory_order_relaxed) &&
	    gid == atomic_load_explicit(&fr_cred_gid, memory_order_relaxed))
		return st;
	return 0;
}

/*
 * Whether the process, with the credentials it has now, may use the
 * device. open(2) checked the device's mode and group against those of
 * that moment; a program that changes its IDs later (setuid(2) in a
 * privilege-dropping worker, a child after fork(2)) must not keep using a
 * descriptor they could not open. So when the effective user or group ID
 * differs from the last checked, the device is opened once more as the
 * check (and closed): the kernel's own answer, with the same system call.
 * Supplementary groups and the filesystem IDs alone are not compared.
 */
static int fr_creds_allow(struct fr_why *why)
{
	unsigned int uid, gid, known;
	int t;

	fr_creds_now(&uid, &gid);
	known = fr_creds_known(uid, gid);
	if (known == FR_CRED_OK)
		return 1;
	if (!known) {
		t = fr_sys_open_device();
		if (t >= 0) {
			fr_sys_close(t);
			fr_creds_note(uid, gid, FR_CRED_OK, 0);
			return 1;
		}
		why->reason = fr_open_reason(-t);
		why->err = -t;
		/* EMFILE, ENOMEM...: cannot tell now; only this call falls back. */
		if (why->reason == FASTREMAP_REASON_NO_ACCESS)
			fr_creds_note(uid, gid, FR_CRED_DENIED, -t);
		return 0;
	}
	why->reason = FASTREMAP_REASON_NO_ACCESS;
	why->err = (int)atomic_load_explicit(&fr_cred_err, memory_order_relaxed);
	return 0;
}

/*
 * Moves a descriptor above 2 (see the top of this file). Returns the
 * descriptor, or a negative errno with @fd closed: kept on 0, 1 or 2 it
 * would take the number of the program's next open() of a standard
 * stream.
 */
static int fr_high_fd(int fd)
{
	long nfd;

	if (fd > 2)
		return fd;
	nfd = FR_SYS(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 3, 0, 0, 0);
	fr_sys_close(fd);
	return (int)nfd;
}

/*
 * Opens the device and checks its handshake. Returns the published
 * descriptor; -1 when the device cannot be used (why says why); -2 when
 * another thread changed the state meanwhile: look again.
 */
static int fr_open(unsigned int seen, struct fr_why *why, unsigned int *state)
{
	struct fastremap_info info;
	unsigned int uid, gid;
	uint32_t dev = 0;
	long r;
	int fd;

	fr_creds_now(&uid, &gid);
	fd = fr_sys_open_device();
	if (fd < 0) {
		why->reason = fr_open_reason(-fd);
		why->err = -fd;
		if (why->reason == FASTREMAP_REASON_NO_ACCESS)
			fr_creds_note(uid, gid, FR_CRED_DENIED, why->err);
		/* EMFILE, ENOMEM, EINTR... may pass: only this call falls back. */
		if (why->reason != FASTREMAP_REASON_OPEN_FAILED)
			fr_set_unavailable(seen, why->reason, why->err);
		return -1;
	}
	fr_creds_note(uid, gid, FR_CRED_OK, 0);
	fd = fr_high_fd(fd);
	if (fd < 0 || fd > FR_MAX_FD) {
		/* Out of descriptors above 2 (or of state bits): this call only. */
		if (fd > FR_MAX_FD)
			fr_sys_close(fd);
		why->reason = FASTREMAP_REASON_OPEN_FAILED;
		why->err = fd < 0 ? -fd : EMFILE;
		return -1;
	}
	if (fr_chr_dev(fd, &dev) != 1) {
		fr_sys_close(fd);
		why->reason = FASTREMAP_REASON_ABI;
		why->err = ENOTTY;
		fr_set_unavailable(seen, why->reason, why->err);
		return -1;
	}
	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	r = fr_sys_ioctl(fd, FASTREMAP_IOC_INFO, &info);
	if (r || info.abi_version != FASTREMAP_ABI_VERSION ||
	    !(info.ioctls & FASTREMAP_IOCTL_BIT_REMAP)) {
		fr_sys_close(fd);
		why->reason = FASTREMAP_REASON_ABI;
		/* A "success" that wrote nothing is no answer at all. */
		why->err = r ? (int)-r : info.abi_version ? EPROTONOSUPPORT : ENOTTY;
		fr_set_unavailable(seen, why->reason, why->err);
		return -1;
	}
	/*
	 * The device number first, then the descriptor: a thread that sees
	 * the descriptor sees this number (or one a racing opener of the same
	 * device stored, which is the same number).
	 */
	atomic_store_explicit(&fr_dev, dev, memory_order_relaxed);
	if (info.features & FASTREMAP_FEAT_POS_COOKIE)
		atomic_store_explicit(&fr_pos_ok, 1, memory_order_relaxed);
	atomic_store_explicit(&fr_pinned, !!(info.features & FASTREMAP_FEAT_REMAP_PINNED),
			      memory_order_relaxed);
	atomic_store_explicit(&fr_mremap_pud, info.features & FASTREMAP_FEAT_MREMAP_PUD ?
			      FR_PUD_MOVED : FR_PUD_NOT_MOVED, memory_order_relaxed);
	*state = fr_next(seen, (unsigned int)fd + FR_SLOT_FD0);
	if (atomic_compare_exchange_strong_explicit(
		    &fr_state, &seen, *state,
		    memory_order_acq_rel, memory_order_acquire))
		return fd;
	/* Another thread got there first: use what it published. */
	fr_sys_close(fd);
	return -2;
}

/*
 * While the state says "unavailable": whether it still is for this call
 * (why set to the reason remembered), or the device is to be tried again.
 */
static inline int fr_still_unavailable(struct fr_why *why)
{
	unsigned int w = atomic_load_explicit(&fr_why, memory_order_relaxed);

	why->reason = (int)(w >> 16);
	why->err = (int)(w & 0xffff);
	if (why->reason == FASTREMAP_REASON_NO_ACCESS) {
		/*
		 * Access depends on the credentials (and on the device's
		 * mode, which an administrator sets once): asked again when
		 * they change only.
		 */
		unsigned int uid, gid;

		fr_creds_now(&uid, &gid);
		return fr_creds_known(uid, gid) == FR_CRED_DENIED;
	}
	return (int)(atomic_load_explicit(&fr_retry_at, memory_order_relaxed) -
		     fr_now_s()) > 0;
}

/*
 * The device descriptor, opened on first use; -1 with why set when the
 * device cannot be used for this call. @ref (may be NULL) says under
 * which state word it was published and whether this call opened it.
 */
static int fr_device_find(struct fr_why *why, struct fr_ref *ref)
{
	struct fr_ref dummy;

	if (!ref)
		ref = &dummy;
	ref->fresh = 0;
	for (int tries = 0; tries < 8; tries++) {
		unsigned int s = atomic_load_explicit(&fr_state, memory_order_acquire);
		uint32_t dev = 0;
		int fd, chr;

		if (FR_SLOT(s) >= FR_SLOT_FD0) {
			long pos = 0;

			fd = FR_FD(s);
			/*
			 * The module fixes each open file's position to a
			 * random cookie (FASTREMAP_FEAT_POS_COOKIE): a
			 * descriptor at the cookie last verified is that
			 * file. lseek(2) with SEEK_CUR and 0 changes nothing
			 * on any file (ftell(3) makes the same call) and
			 * costs far less than fstat(2) (bench/README.md).
			 * Anything else, a cookie not yet known included,
			 * is checked by the device number.
			 */
			if (atomic_load_explicit(&fr_pos_ok, memory_order_relaxed)) {
				pos = fr_sys_pos(fd);
				if (pos > 0 && (unsigned long)pos ==
				    atomic_load_explicit(&fr_pos, memory_order_relaxed)) {
					ref->state = s;
					return fr_creds_allow(why) ? fd : -1;
				}
			}
			chr = fr_chr_dev(fd, &dev);
			if (chr == 1 &&
			    dev == atomic_load_explicit(&fr_dev, memory_order_relaxed)) {
				/*
				 * Our device's file (ours, or another open of
				 * the same device): its cookie will do.
				 */
				if (pos > 0)
					atomic_store_explicit(&fr_pos, (unsigned long)pos,
							      memory_order_relaxed);
				ref->state = s;
				return fr_creds_allow(why) ? fd : -1;
			}
			if (chr < 0 && chr != -EBADF) {
				/* Cannot tell (fstat(2) filtered out): not now. */
				why->reason = FASTREMAP_REASON_OPEN_FAILED;
				why->err = -chr;
				return -1;
			}
			/*
			 * The caller closed or reused our descriptor. The
			 * number is theirs now: forget it, do not close it.
			 */
			fr_forget(s);
			continue;
		}
		if (FR_SLOT(s) == FR_SLOT_UNAVAILABLE && fr_still_unavailable(why))
			return -1;
		fd = fr_open(s, why, &ref->state);
		ref->fresh = fd >= 0;
		if (fd != -2)
			return fd;
	}
	why->reason = FASTREMAP_REASON_FD_LOST;
	why->err = EBADF;
	return -1;
}

/*
 * Whether the device is remembered as unavailable and not yet to be tried
 * again (why set): the answer to every call of a process without the
 * module, given without entering fr_device_find().
 */
static inline int fr_device_unavailable(struct fr_why *why)
{
	unsigned int s = atomic_load_explicit(&fr_state, memory_order_acquire);

	return FR_SLOT(s) == FR_SLOT_UNAVAILABLE && fr_still_unavailable(why);
}

static inline int fr_device(struct fr_why *why, struct fr_ref *ref)
{
	if (fr_device_unavailable(why)) {
		if (ref)
			ref->fresh = 0;
		return -1;
	}
	return fr_device_find(why, ref);
}

/* The mremap system call itself: never glibc's mremap(), which the shim replaces. */
static long fr_sys_mremap(void *old_addr, size_t old_size, size_t new_size,
			  int flags, void *new_addr, void **res)
{
	long r = FR_SYS(SYS_mremap, old_addr, old_size, new_size,
			(unsigned long)(unsigned int)flags, new_addr, 0);

	if (r < 0 && r > -4096)
		return r;
	*res = (void *)r;
	return 0;
}

/* What FASTREMAP_NO_FALLBACK returns for each reason not to use the module. */
static long fr_no_fallback_err(const struct fr_why *why)
{
	switch (why->reason) {
	case FASTREMAP_REASON_NO_DEVICE:
	case FASTREMAP_REASON_ABI:
		return -ENODEV;
	case FASTREMAP_REASON_DECLINED:
		return -EOPNOTSUPP;
	case FASTREMAP_REASON_FLAGS:
		return -EINVAL;
	case FASTREMAP_REASON_FD_LOST:
		return -EBADF;
	case FASTREMAP_REASON_IOCTL_ERROR:
		return why->err ? -why->err : -ENOSYS;
	default:
		return why->err ? -why->err : -ENODEV;
	}
}

static int fr_check_size(uint32_t size, uint32_t ver0)
{
	return size >= ver0 && size <= FR_MAX_STRUCT_SIZE;
}

/* Writes a result structure back as the caller's size allows. */
static inline void fr_copy_out(void *dst, const void *src, size_t ours)
{
	uint32_t theirs;

	memcpy(&theirs, dst, sizeof(theirs));
	/* The common case in a size the compiler copies inline, calling nothing. */
	if (theirs == ours) {
		memcpy(dst, src, ours);
		return;
	}
	if (theirs > ours)
		memset((char *)dst + ours, 0, theirs - ours);
	else
		ours = theirs;
	memcpy(dst, src, ours);
	theirs = (uint32_t)ours;
	memcpy(dst, &theirs, sizeof(theirs));
}

/* ---- routing: calls mremap(2) makes as fast go to it directly ---- */

/*
 * The page size and the span of one page table (a PMD entry): a table
 * holds a page of 8-byte entries (4 KiB pages: 2 MiB; 16 KiB: 32 MiB;
 * 64 KiB: 512 MiB). Known at compile time where there is one page size,
 * so that the arithmetic below is shifts; elsewhere read once, since a
 * routed call should run no code outside the library (fr_syscall6()).
 */
static uint64_t fr_page_size(void)
{
#if defined(__x86_64__)
	return 4096;	/* x86-64 has no other base page size */
#else
	static atomic_ulong cached;
	unsigned long pg = atomic_load_explicit(&cached, memory_order_relaxed);

	if (!pg) {
		pg = getauxval(AT_PAGESZ);
		pg = pg ? pg : 4096;
		atomic_store_explicit(&cached, pg, memory_order_relaxed);
	}
	return pg;
#endif
}

/*
 * PMD boundaries strictly inside [a, a + len): where mremap(2) cuts a
 * move. The multiples of pmd in (a, a + len - 1].
 */
static uint64_t fr_cuts(uint64_t a, uint64_t len, uint64_t pmd)
{
	return len ? (a + len - 1) / pmd - a / pmd : 0;
}

/* The extents of [a, a + len) when both ranges' PMD boundaries coincide. */
static uint64_t fr_pmd_extents(uint64_t a, uint64_t len, uint64_t pmd)
{
	return len ? 1 + fr_cuts(a, len, pmd) : 0;
}

/*
 * An upper bound on the extents mremap(2) moves a call's entries in: its
 * move_page_tables() advances to the nearer of the source's and the
 * destination's next PMD boundary, moves that extent (a whole PMD entry
 * or its PTEs) and flushes it, so a move of len bytes takes one extent
 * plus one per boundary of either range strictly inside it (a boundary
 * both share counts once), except where it moves whole PUD entries (see
 * below). Without MREMAP_FIXED the kernel chooses the destination: count
 * the most boundaries a range of len bytes can hold.
 * 0: not a move this estimates (no length, an address out of range).
 *
 * Whether mremap(2) moves whole PUD entries: as *@pud says, FR_PUD_MOVED,
 * or FR_PUD_AS_SAID: as the module said (fr_mremap_pud, read only for a
 * move that holds whole PUD entries, and left in *@pud). Where no module
 * has said yet (*@pud 0 then), such a move counts PMD by PMD, an upper
 * bound on every kernel.
 */
static uint64_t fr_mremap_extents(uintptr_t old_addr, size_t old_size, size_t new_size,
				  int flags, uintptr_t new_addr, unsigned int *pud_moves)
{
	uint64_t pg = fr_page_size(), pmd = pg / 8 * pg, pud = pmd / 8 * pg;
	uint64_t len = old_size < new_size ? old_size : new_size;
	/* 64-bit arithmetic on every target: no overflow below 2^63. */
	uint64_t old = old_addr, new = flags & MREMAP_FIXED ? new_addr : 0;

	/*
	 * No length, or one above 2^62; an address not page-aligned or at
	 * 2^63 or above (the destination's with MREMAP_FIXED only). Page
	 * sizes are powers of two.
	 */
	if (len - 1 >= UINT64_MAX / 4 || ((old | new) & (pg - 1)) || (old | new) > UINT64_MAX / 2)
		return 0;
	len = (len + pg - 1) & ~(pg - 1);
	if (!(flags & MREMAP_FIXED))
		return 1 + fr_cuts(old, len, pmd) + (len - pg + pmd - 1) / pmd;
	/* Shorter than a PUD entry's span, it holds no whole one. */
	if (len >= pud && old % pud == new % pud) {
		uint64_t a = (old + pud - 1) / pud * pud, b = (old + len) / pud * pud;

		if (a < b && *pud_moves == FR_PUD_AS_SAID)
			*pud_moves = atomic_load_explicit(&fr_mremap_pud, memory_order_relaxed);
		/*
		 * Congruent modulo a PUD entry's span: from the first PUD
		 * boundary to the last, move_page_tables() moves whole PUD
		 * entries (CONFIG_HAVE_MOVE_PUD: x86-64 and arm64 since Linux
		 * 5.11, FASTREMAP_FEAT_MREMAP_PUD), one extent and one flush
		 * each; PMD extents before and after.
		 */
		if (a < b && *pud_moves == FR_PUD_MOVED)
			return fr_pmd_extents(old, a - old, pmd) + (b - a) / pud +
			       fr_pmd_extents(b, old + len - b, pmd);
	}
	if (old % pmd == new % pmd)
		return 1 + fr_cuts(old, len, pmd);
	return 1 + fr_cuts(old, len, pmd) + fr_cuts(new, len, pmd);
}

/*
 * Whether a MREMAP_FIXED move is one mremap(2) makes PTE by PTE (the
 * destination not congruent with the source modulo a PTE table's span)
 * over a source holding a whole PTE table, which the module copies with
 * no atomic per entry (the table-copying mover, module/pgmove.c).
 * Counted (bench/README.md, "Counted at PTE level"): from one such table
 * on, the module executes fewer instructions, loads, stores, atomics and
 * TLB invalidations than mremap(2), each, however few extents mremap(2)
 * takes. Only for a move fr_mremap_extents() estimated: no overflow.
 */
static inline int fr_pte_whole_table(uintptr_t old_addr, size_t old_size, size_t new_size,
				     int flags, uintptr_t new_addr)
{
	uint64_t pg = fr_page_size(), pmd = pg / 8 * pg;
	uint64_t old = old_addr, new = new_addr;

	/* Most routed moves are smaller than a table: one comparison. */
	if (old_size < pmd || !(flags & MREMAP_FIXED) || !((old ^ new) & (pmd - 1)))
		return 0;
	return ((old + pmd - 1) & ~(pmd - 1)) + pmd <=
	       old + (old_size < new_size ? old_size : new_size);
}

enum fr_route {
	FR_ROUTE_MODULE,	/* ask the module */
	FR_ROUTE_MREMAP,	/* call mremap(2) with the caller's arguments */
	FR_ROUTE_IN_PLACE_FIRST	/* mremap(2) without MREMAP_MAYMOVE, then the module */
};

/* fr_route()'s decision, and what the call's statistics say of it. */
struct fr_routing {
	enum fr_route route;
	int reason;		/* FR_ROUTE_MREMAP: why */
	/*
	 * Whether mremap(2) moves whole PUD entries, for a move that holds
	 * some (fr_mremap_extents()): 0 when no module has said yet, and
	 * then fr_remap() asks one and routes the call again.
	 */
	unsigned int pud;
	uint64_t ext;		/* fastremap_stats.mremap_extents */
};

/*
 * Which calls the module would only make slower (fastremap_remap(3),
 * ROUTING): those that move nothing, and moves mremap(2) makes in at
 * most FR_ROUTE_MAX_EXTENTS extents, unless PTE by PTE over a whole PTE
 * table (fr_pte_whole_table()). A growth that may happen in place
 * (no MREMAP_FIXED) is first tried in place: the module declines that
 * case, and declining cost an ioctl, a write lock of mmap_lock and its
 * checks on top of mremap(2). Whole PUD entries count as one extent each
 * only where a module said mremap(2) moves them: until one has
 * answered, a move that holds some is the module path's (rt->pud 0:
 * fr_remap() asks and routes it again), and without a module its
 * extents are counted PMD by PMD, an upper bound on every kernel.
 */
static inline void fr_route(uintptr_t old, size_t old_size, size_t new_size,
			    int flags, uintptr_t new, struct fr_routing *rt)
{
	uint64_t ext;

	rt->reason = 0;
	rt->ext = 0;
	if (!(flags & MREMAP_MAYMOVE)) {
		rt->reason = FASTREMAP_REASON_NOT_A_MOVE;
		rt->route = FR_ROUTE_MREMAP;
		return;
	}
	/* A zero old_size duplicates a shared mapping: the module decides. */
	if (!old_size) {
		rt->pud = FR_PUD_AS_SAID;
		rt->route = FR_ROUTE_MODULE;
		return;
	}
	if (!(flags & (MREMAP_FIXED | MREMAP_DONTUNMAP))) {
		uint64_t pg = fr_page_size();

		if ((new_size + pg - 1) / pg <= (old_size + pg - 1) / pg) {
			rt->reason = FASTREMAP_REASON_NOT_A_MOVE;
			rt->route = FR_ROUTE_MREMAP;
			return;
		}
	}
	rt->pud = FR_PUD_AS_SAID;
	ext = fr_mremap_extents(old, old_size, new_size, flags, new, &rt->pud);
	rt->ext = ext;
	if (ext && ext <= FR_ROUTE_MAX_EXTENTS &&
	    !fr_pte_whole_table(old, old_size, new_size, flags, new)) {
		rt->reason = FASTREMAP_REASON_FEW_EXTENTS;
		rt->route = FR_ROUTE_MREMAP;
		return;
	}
	rt->route = flags & (MREMAP_FIXED | MREMAP_DONTUNMAP) ? FR_ROUTE_MODULE :
		    FR_ROUTE_IN_PLACE_FIRST;
}

/*
 * A call answered by mremap(2) with the caller's arguments, without the
 * module, for @rt's reason (@err the module's or the device's errno, or
 * 0): the answer and the statistics of every such call, routed or not.
 */
static inline long fr_answer_mremap(void *old_addr, size_t old_size, size_t new_size,
				    int flags, void *new_addr, const struct fr_routing *rt,
				    int err, struct fastremap_stats *stats, void **result)
{
	void *res = NULL;
	long ret = fr_sys_mremap(old_addr, old_size, new_size, flags, new_addr, &res);

	if (ret == 0 && result)
		*result = res;
	if (stats) {
		struct fastremap_stats st, *to = stats;

		/* In place when the caller's structure is ours: no copy. */
		if (stats->size != sizeof(st))
			to = &st;
		memset(to, 0, sizeof(st));
		to->size = sizeof(st);
		to->reason = rt->reason;
		to->reason_errno = err;
		to->mremap_extents = rt->ext;
		if (to != stats)
			fr_copy_out(stats, &st, sizeof(st));
	}
	return ret;
}

/*
 * Every call but a routed one (fr_remap_entry()): @rt is the routing
 * decided there, or NULL where the call is not routed (fr_flags set,
 * flags the module does not know, a stats size to refuse).
 */
static __attribute__((noinline)) long
fr_remap(void *old_addr, size_t old_size, size_t new_size, int flags, void *new_addr,
	 unsigned int fr_flags, struct fastremap_stats *stats, void **result,
	 const struct fr_routing *rt)
{
	struct fastremap_stats st;
	struct fastremap_remap req;
	struct fr_why why = { 0, 0 };
	struct fr_ref ref = { -1, 0, 0 };
	void *res = NULL;
	int fd = -1, have_fd = 0;
	long ret;

	/* A routing decided means these checks passed (fr_remap_entry()). */
	if (!rt && ((fr_flags & ~FR_KNOWN_FR_FLAGS) ||
		    (fr_flags & FR_CONFLICTING_FR_FLAGS) == FR_CONFLICTING_FR_FLAGS))
		return -EINVAL;
	if (!rt && stats && !fr_check_size(stats->size, FASTREMAP_STATS_SIZE_VER0))
		return -EINVAL;
	memset(&st, 0, sizeof(st));

	if (fr_flags & FASTREMAP_MREMAP_ONLY) {
		why.reason = FASTREMAP_REASON_CALLER;
		why.err = 0;
		goto fallback;
	}
	/* A flag the module does not know may be one the kernel does. */
	if (((unsigned int)flags & ~FR_KNOWN_MREMAP_FLAGS) &&
	    !(fr_flags & FASTREMAP_NO_FALLBACK)) {
		why.reason = FASTREMAP_REASON_FLAGS;
		goto fallback;
	}
	if (rt) {
		st.mremap_extents = rt->ext;
		if (!rt->pud) {
			struct fr_routing again;

			/*
			 * Whether mremap(2) moves this call's whole PUD
			 * entries only a module can say
			 * (FASTREMAP_FEAT_MREMAP_PUD): asked now, the call
			 * is routed as every later one will be.
			 */
			fd = fr_device(&why, &ref);
			if (fd < 0)
				goto fallback;
			have_fd = 1;
			fr_route((uintptr_t)old_addr, old_size, new_size, flags,
				 (uintptr_t)new_addr, &again);
			if (again.route == FR_ROUTE_MREMAP) {
				st.mremap_extents = again.ext;
				why.reason = again.reason;
				goto fallback;
			}
		}
		switch (rt->route) {
		case FR_ROUTE_MREMAP:
			why.reason = rt->reason;
			goto fallback;
		case FR_ROUTE_IN_PLACE_FIRST:
			/*
			 * Without the module, mremap(2) with the caller's
			 * flags is the one call to make.
			 */
			if (!have_fd)
				fd = fr_device(&why, &ref);
			if (fd < 0)
				goto fallback;
			have_fd = 1;
			/*
			 * Without MREMAP_MAYMOVE mremap(2) makes the same
			 * checks, grows in place or fails with ENOMEM having
			 * changed nothing; only then can the call move.
			 */
			ret = fr_sys_mremap(old_addr, old_size, new_size,
					    flags & ~MREMAP_MAYMOVE, new_addr, &res);
			if (ret != -ENOMEM) {
				st.reason = FASTREMAP_REASON_IN_PLACE;
				st.reason_errno = ret ? (int)-ret : 0;
				goto out;
			}
			break;
		default:
			break;
		}
	}
	for (int tries = 0;; tries++) {
		long r;
		int err;

		/* A descriptor found for the in-place attempt serves once. */
		if (!have_fd)
			fd = fr_device(&why, &ref);
		have_fd = 0;
		if (fd < 0)
			goto fallback;
		memset(&req, 0, sizeof(req));
		req.size = sizeof(req);
		req.mremap_flags = (unsigned int)flags;
		req.old_addr = (uintptr_t)old_addr;
		req.old_size = old_size;
		req.new_size = new_size;
		req.new_addr = (uintptr_t)new_addr;
		req.tlb_flushes = FR_UNWRITTEN;
		r = fr_sys_ioctl(fd, FASTREMAP_IOC_REMAP, &req);
		/*
		 * 0 is a success only with the result written: anything else
		 * is a seccomp filter's "success" that never reached the
		 * module (which writes the result of every move it makes).
		 */
		if (r == 0 && req.tlb_flushes != FR_UNWRITTEN) {
			st.used_module = 1;
			st.moved_pud = req.moved_pud;
			st.moved_pmd = req.moved_pmd;
			st.moved_thp = req.moved_thp;
			st.moved_pte = req.moved_pte;
			st.tlb_flushes = req.tlb_flushes;
			st.moved_contpte = req.moved_contpte;
			st.unfolded_contpte = req.unfolded_contpte;
			res = (void *)(uintptr_t)req.new_addr;
			ret = 0;
			goto out;
		}
		err = r > 0 ? EPROTO : (int)-r;
		why.err = err;
		switch (err) {
		case EOPNOTSUPP:
			why.reason = FASTREMAP_REASON_DECLINED;
			goto fallback;
		case ENOTTY:
		case EBADF:
			/*
			 * Our descriptor answers the handshake and is open for
			 * writing, so this is another file under its number:
			 * the caller closed ours (maybe during the call) and
			 * opened something, or the device read-only, there.
			 * Forget the number and open the device again. A
			 * descriptor this very call opened is ours: the
			 * answer is from something in front of the module
			 * (a seccomp filter, an LSM), so it goes, closed.
			 */
			why.reason = err == ENOTTY ? FASTREMAP_REASON_ABI :
				     FASTREMAP_REASON_FD_LOST;
			if (ref.fresh) {
				if (fr_set_unavailable(ref.state, why.reason, err))
					fr_sys_close(fd);
				goto fallback;
			}
			fr_forget(ref.state);
			if (tries)
				goto fallback;
			continue;
		case EFAULT:
		case ENOMEM:
		case EINVAL:
		case EAGAIN:
			/*
			 * mremap(2)'s own errors (nothing between us and the
			 * module makes these up): the module's answer is
			 * mremap(2)'s, final without MREMAP_FIXED. After
			 * MREMAP_FIXED, mremap(2) itself may unmap the target
			 * (and a shrinking move's tail) before it fails, and
			 * the module does not: where the module provably
			 * changed nothing, mremap(2), called on the unchanged
			 * memory, does exactly what it would have done. Not
			 * after ENOMEM, which may follow the module's unmap
			 * of the target, nor after EFAULT from a module
			 * without FASTREMAP_FEAT_REMAP_PINNED, which may
			 * follow a move whose result was lost
			 * (<linux/fastremap.h>): mremap(2) would then act on
			 * moved memory or empty the target.
			 */
			if (!(flags & MREMAP_FIXED) ||
			    (fr_flags & FASTREMAP_NO_FALLBACK) || err == ENOMEM ||
			    (err == EFAULT &&
			     !atomic_load_explicit(&fr_pinned, memory_order_relaxed))) {
				st.used_module = 1;
				ret = -err;
				goto out;
			}
			why.reason = FASTREMAP_REASON_IOCTL_ERROR;
			goto fallback;
		default:
			/*
			 * Anything else may be the ioctl(2) layer's, not
			 * mremap(2)'s: a seccomp filter (ENOSYS, EPERM), an
			 * LSM (EACCES, EPERM), a fatal signal (EINTR). EPERM
			 * is also mremap(2)'s answer for a sealed mapping:
			 * asking it again costs one system call and gives the
			 * same. The module returns none of these after a
			 * change. EPROTO: a positive value, which no module
			 * of ours returns.
			 */
			why.reason = FASTREMAP_REASON_IOCTL_ERROR;
			goto fallback;
		}
	}

fallback:
	if (!(fr_flags & FASTREMAP_NO_FALLBACK)) {
		struct fr_routing fb = {
			.route = FR_ROUTE_MREMAP,
			.reason = why.reason,
			.ext = st.mremap_extents,
		};

		return fr_answer_mremap(old_addr, old_size, new_size, flags, new_addr, &fb,
					why.err, stats, result);
	}
	st.reason = why.reason;
	st.reason_errno = why.err;
	ret = fr_no_fallback_err(&why);
out:
	if (ret == 0 && result)
		*result = res;
	if (stats) {
		st.size = sizeof(st);
		fr_copy_out(stats, &st, sizeof(st));
	}
	return ret;
}

/*
 * A call not routed to mremap(2). In a process without the module (the
 * device remembered as unavailable) fr_remap() too would make one call:
 * mremap(2) with the caller's arguments; made here, without its frame.
 */
static __attribute__((noinline)) long
fr_remap_unrouted(void *old_addr, size_t old_size, size_t new_size, int flags,
		  void *new_addr, struct fastremap_stats *stats, void **result,
		  struct fr_routing *rt)
{
	struct fr_why why = { 0, 0 };

	if (!fr_device_unavailable(&why))
		return fr_remap(old_addr, old_size, new_size, flags, new_addr, 0, stats,
				result, rt);
	rt->reason = why.reason;
	return fr_answer_mremap(old_addr, old_size, new_size, flags, new_addr, rt, why.err,
				stats, result);
}

/*
 * Every call enters here. The calls the library routes to mremap(2)
 * (fr_route()) open no device and change no state: they are decided and made
 * here, in a small frame, and the others leave it (fr_remap_unrouted()):
 * fr_remap()'s frame and checks (the ioctl's request, six saved
 * registers) were a third of a routed call's instructions (bench/README.md,
 * "What the library adds, counted"). The decision, the statistics and
 * every result are those fr_remap() gives these calls.
 */
static inline long fr_remap_entry(void *old_addr, size_t old_size, size_t new_size,
				  int flags, void *new_addr, unsigned int fr_flags,
				  struct fastremap_stats *stats, void **result)
{
	struct fr_routing rt;

	if (fr_flags || ((unsigned int)flags & ~FR_KNOWN_MREMAP_FLAGS) ||
	    (stats && !fr_check_size(stats->size, FASTREMAP_STATS_SIZE_VER0)))
		return fr_remap(old_addr, old_size, new_size, flags, new_addr, fr_flags,
				stats, result, NULL);
	fr_route((uintptr_t)old_addr, old_size, new_size, flags, (uintptr_t)new_addr, &rt);
	if (rt.route != FR_ROUTE_MREMAP)
		return fr_remap_unrouted(old_addr, old_size, new_size, flags, new_addr,
					 stats, result, &rt);
	return fr_answer_mremap(old_addr, old_size, new_size, flags, new_addr, &rt, 0,
				stats, result);
}

long fastremap_remap(void *old_addr, size_t old_size, size_t new_size,
		     int flags, void *new_addr, unsigned int fr_flags,
		     struct fastremap_stats *stats, void **result)
{
	/* errno stays as it was: nothing fr_remap_entry() calls touches it. */
	return fr_remap_entry(old_addr, old_size, new_size, flags, new_addr,
			      fr_flags, stats, result);
}

void *fastremap(void *old_address, size_t old_size, size_t new_size,
		int flags, ...)
{
	void *new_address = NULL, *res = MAP_FAILED;
	long ret;

	/* As glibc's mremap(): the fifth argument exists only with these. */
	if (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) {
		va_list ap;

		va_start(ap, flags);
		new_address = va_arg(ap, void *);
		va_end(ap);
	}
	ret = fr_remap_entry(old_address, old_size, new_size, flags, new_address, 0,
			     NULL, &res);
	if (ret < 0) {
		errno = (int)-ret;
		return MAP_FAILED;
	}
	return res;
}

int fastremap_info(struct fastremap_abi_info *out)
{
	struct fastremap_abi_info ai;
	struct fastremap_info info;
	struct fr_why why = { 0, 0 };
	int saved = errno, fd, tmp = -1, ret = 0;
	long r;

	if (!out || !fr_check_size(out->size, FASTREMAP_ABI_INFO_SIZE_VER0))
		return -EINVAL;
	fd = fr_device(&why, NULL);
	if (fd < 0) {
		if (why.reason == FASTREMAP_REASON_NO_DEVICE) {
			ret = -ENODEV;
			goto out;
		}
		if (why.reason == FASTREMAP_REASON_NO_ACCESS) {
			ret = -why.err;
			goto out;
		}
	}
	for (;;) {
		if (fd < 0) {
			/* Unusable for remapping, yet it may answer the handshake. */
			tmp = fr_sys_open_device();
			if (tmp < 0) {
				ret = fr_open_reason(-tmp) == FASTREMAP_REASON_NO_DEVICE ?
				      -ENODEV : tmp;
				goto out;
			}
			fd = tmp;
		}
		memset(&info, 0, sizeof(info));
		info.size = sizeof(info);
		r = fr_sys_ioctl(fd, FASTREMAP_IOC_INFO, &info);
		/*
		 * Our shared descriptor closed by another thread during the
		 * call: ask once more on a descriptor of our own.
		 */
		if (r == -EBADF && tmp < 0) {
			fd = -1;
			continue;
		}
		break;
	}
	if (r) {
		ret = (int)r;
		goto out;
	}
	if (!info.abi_version) {
		/* A "success" that wrote nothing: a filter answered, not the module. */
		ret = -ENOTTY;
		goto out;
	}
	memset(&ai, 0, sizeof(ai));
	ai.size = sizeof(ai);
	ai.abi_version = info.abi_version;
	ai.features = info.features;
	ai.ioctls = info.ioctls;
	ai.remap_usable = info.abi_version == FASTREMAP_ABI_VERSION &&
			  (info.ioctls & FASTREMAP_IOCTL_BIT_REMAP);
	ai.library_abi = FASTREMAP_ABI_VERSION;
	fr_copy_out(out, &ai, sizeof(ai));
out:
	if (tmp >= 0)
		fr_sys_close(tmp);
	errno = saved;
	return ret;
}

const char *fastremap_strreason(int reason)
{
	switch (reason) {
	case FASTREMAP_REASON_NONE:
		return "handled by the module";
	case FASTREMAP_REASON_NO_DEVICE:
		return "no " FASTREMAP_DEVICE " (module not loaded)";
	case FASTREMAP_REASON_NO_ACCESS:
		return "no access to " FASTREMAP_DEVICE;
	case FASTREMAP_REASON_OPEN_FAILED:
		return "cannot open " FASTREMAP_DEVICE;
	case FASTREMAP_REASON_ABI:
		return "the module's ABI is not supported by this library";
	case FASTREMAP_REASON_DECLINED:
		return "the module declined this case";
	case FASTREMAP_REASON_FLAGS:
		return "mremap flags the module does not know";
	case FASTREMAP_REASON_CALLER:
		return "the caller asked for mremap(2)";
	case FASTREMAP_REASON_FD_LOST:
		return "the device descriptor was closed during the call";
	case FASTREMAP_REASON_IOCTL_ERROR:
		return "the remap ioctl failed; mremap(2) answered";
	case FASTREMAP_REASON_NOT_A_MOVE:
		return "not a move: mremap(2) resizes in place";
	case FASTREMAP_REASON_FEW_EXTENTS:
		return "mremap(2) moves it in as few flushes";
	case FASTREMAP_REASON_IN_PLACE:
		return "mremap(2) grew it in place";
	default:
		return "unknown reason";
	}
}

const char *fastremap_version(void)
{
	return FR_LIB_VERSION;
}

/* ---- fastremap_move(): FASTREMAP_IOC_MOVE, or mremap(2) move by move ---- */

_Static_assert(sizeof(struct fastremap_move_stats) == FASTREMAP_MOVE_STATS_SIZE_VER0,
	       "fastremap_move_stats layout");
_Static_assert(sizeof(struct fastremap_move_range) == sizeof(struct fastremap_move_vec) &&
	       FASTREMAP_MOVE_HOLES == FASTREMAP_MOVE_ALLOW_HOLES &&
	       FASTREMAP_MOVE_LIMIT == FASTREMAP_MOVE_MAX &&
	       FASTREMAP_IOCTL_BIT_MOVE == 1ULL << _IOC_NR(FASTREMAP_IOC_MOVE),
	       "fastremap_move ABI");

#define FR_MOVE_KNOWN_FLAGS	FASTREMAP_MOVE_HOLES
#define FR_PM_PRESENT		(1ULL << 63)
#define FR_PM_SWAP		(1ULL << 62)
/* Pagemap entries read at a time by the fallback (on the stack). */
#define FR_PM_BATCH		256

struct fr_span {
	uint64_t start, end;
};

/* Heapsort: qsort(3) may allocate, and nothing here may. */
static void fr_span_sift(struct fr_span *a, size_t i, size_t n)
{
	for (;;) {
		size_t c = 2 * i + 1;
		struct fr_span t;

		if (c >= n)
			return;
		if (c + 1 < n && a[c + 1].start > a[c].start)
			c++;
		if (a[i].start >= a[c].start)
			return;
		t = a[i];
		a[i] = a[c];
		a[c] = t;
		i = c;
	}
}

static int fr_spans_disjoint(struct fr_span *a, size_t n)
{
	struct fr_span t;

	for (size_t i = n / 2; i-- > 0;)
		fr_span_sift(a, i, n);
	for (size_t k = n; k-- > 1;) {
		t = a[0];
		a[0] = a[k];
		a[k] = t;
		fr_span_sift(a, 0, k);
	}
	for (size_t k = 1; k < n; k++)
		if (a[k].start < a[k - 1].end)
			return 0;
	return 1;
}

/*
 * The module's checks of a batch that need no mapping, so that the
 * fallback refuses what the module refuses before it moves anything.
 * The overlap check sorts a copy in scratch memory taken with mmap(2).
 */
static long fr_move_check(const struct fastremap_move_range *v, size_t n)
{
	uint64_t top = (uint64_t)1 << 56;	/* the most any x86-64 task has */
	uint64_t pg = fr_page_size();
	struct fr_span *s;
	size_t bytes;
	long r, ok;

	for (size_t k = 0; k < n; k++) {
		if (!v[k].len || ((v[k].src | v[k].dst | v[k].len) & (pg - 1)))
			return -EINVAL;
		if (v[k].len > top || v[k].src > top - v[k].len ||
		    v[k].dst > top - v[k].len)
			return -EINVAL;
		if (v[k].src < v[k].dst + v[k].len && v[k].dst < v[k].src + v[k].len)
			return -EINVAL;
	}
	if (n < 2)
		return 0;
	bytes = n * sizeof(*s);
	r = FR_SYS(SYS_mmap, NULL, bytes, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r < 0 && r > -4096)
		return -ENOMEM;
	s = (struct fr_span *)r;
	for (size_t k = 0; k < n; k++)
		s[k] = (struct fr_span){ v[k].src, v[k].src + v[k].len };
	ok = fr_spans_disjoint(s, n);
	for (size_t k = 0; ok && k < n; k++)
		s[k] = (struct fr_span){ v[k].dst, v[k].dst + v[k].len };
	ok = ok && fr_spans_disjoint(s, n);
	FR_SYS(SYS_munmap, s, bytes, 0, 0, 0, 0);
	return ok ? 0 : -EINVAL;
}

/*
 * Bytes of the move that may go before the first page that stops it: a
 * populated destination page (EEXIST) or a source hole without
 * FASTREMAP_MOVE_HOLES (ENOENT), read from /proc/self/pagemap. Returns
 * 0 (all of it may go), -EEXIST or -ENOENT (*ok_bytes may go), or the
 * errno of reading pagemap.
 */
static long fr_move_scan(int pm, const struct fastremap_move_range *m,
			 unsigned int flags, uint64_t *ok_bytes)
{
	uint64_t s[FR_PM_BATCH], d[FR_PM_BATCH];
	uint64_t pg = fr_page_size(), pages = m->len / pg, at = 0;

	while (at < pages) {
		uint64_t n = pages - at < FR_PM_BATCH ? pages - at : FR_PM_BATCH;
		long rs = FR_SYS(SYS_pread64, pm, s, n * 8, (m->src / pg + at) * 8, 0, 0);
		long rd = FR_SYS(SYS_pread64, pm, d, n * 8, (m->dst / pg + at) * 8, 0, 0);

		if (rs != (long)(n * 8) || rd != (long)(n * 8))
			return rs < 0 ? rs : rd < 0 ? rd : -EFAULT;
		for (uint64_t i = 0; i < n; i++, at++) {
			*ok_bytes = at * pg;
			if (d[i] & (FR_PM_PRESENT | FR_PM_SWAP))
				return -EEXIST;
			if (!(flags & FASTREMAP_MOVE_HOLES) &&
			    !(s[i] & (FR_PM_PRESENT | FR_PM_SWAP)))
				return -ENOENT;
		}
	}
	*ok_bytes = m->len;
	return 0;
}

/*
 * The fallback: each move is a mremap(2) MREMAP_FIXED|MREMAP_DONTUNMAP,
 * which takes the pages to the destination and leaves the source mapped
 * and empty, as the module does; but it maps the destination anew
 * (splitting the heap's mapping there), so it is checked first to hold
 * nothing, and the source to have no hole, as the module would. Pages
 * shared after fork(2) move too: mremap(2) needs no exclusivity.
 * (UFFDIO_MOVE, where the kernel has it, would keep the mappings whole,
 * but only for a destination registered with a userfaultfd, whose missing
 * faults then wait for a handler thread the caller does not have.)
 */
static long fr_move_fallback(const struct fastremap_move_range *v, size_t n,
			     unsigned int flags, struct fastremap_move_stats *st)
{
	long ret;
	int pm;

	if (flags & ~FR_MOVE_KNOWN_FLAGS)
		return -EINVAL;
	ret = fr_move_check(v, n);
	if (ret)
		return ret;
	pm = (int)FR_SYS(SYS_openat, AT_FDCWD, "/proc/self/pagemap", O_RDONLY | O_CLOEXEC,
			 0, 0, 0);
	if (pm < 0)
		return pm;
	for (size_t k = 0; k < n; k++) {
		uint64_t ok = 0;
		long stop = fr_move_scan(pm, &v[k], flags, &ok);
		void *res;

		st->done = k;
		st->done_bytes = 0;
		if (stop && stop != -EEXIST && stop != -ENOENT) {
			ret = stop;
			break;
		}
		if (ok) {
			ret = fr_sys_mremap((void *)(uintptr_t)v[k].src, ok, ok,
					    MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
					    (void *)(uintptr_t)v[k].dst, &res);
			if (ret)
				break;
		}
		st->done_bytes = ok;
		ret = stop;
		if (ret)
			break;
		st->done = k + 1;
		st->done_bytes = 0;
	}
	fr_sys_close(pm);
	return ret;
}

static long fr_move(const struct fastremap_move_range *moves, size_t count,
		    unsigned int flags, unsigned int fr_flags,
		    struct fastremap_move_stats *stats)
{
	struct fastremap_move_stats st;
	struct fastremap_move req;
	struct fr_why why = { 0, 0 };
	long ret;
	int fd;

	if ((fr_flags & ~FR_KNOWN_FR_FLAGS) ||
	    (fr_flags & FR_CONFLICTING_FR_FLAGS) == FR_CONFLICTING_FR_FLAGS)
		return -EINVAL;
	if (stats && !fr_check_size(stats->size, FASTREMAP_MOVE_STATS_SIZE_VER0))
		return -EINVAL;
	memset(&st, 0, sizeof(st));
	if (count > FASTREMAP_MOVE_LIMIT) {
		ret = -E2BIG;
		goto out;
	}
	if (fr_flags & FASTREMAP_MREMAP_ONLY) {
		why.reason = FASTREMAP_REASON_CALLER;
		goto fallback;
	}
	for (int tries = 0;; tries++) {
		long r;

		fd = fr_device(&why, NULL);
		if (fd < 0)
			goto fallback;
		memset(&req, 0, sizeof(req));
		req.size = sizeof(req);
		req.flags = flags;
		req.moves = (uintptr_t)moves;
		req.count = (uint32_t)count;
		req.tlb_flushes = FR_UNWRITTEN;
		r = fr_sys_ioctl(fd, FASTREMAP_IOC_MOVE, &req);
		if (r == -EBADF && !tries) {
			why.reason = FASTREMAP_REASON_FD_LOST;
			continue;
		}
		/* A module without the ioctl, or a filter in front of it. */
		if (r == -ENOTTY || r == -ENOSYS ||
		    (r == 0 && req.tlb_flushes == FR_UNWRITTEN) ||
		    (r == -EBADF)) {
			why.reason = r == -ENOTTY ? FASTREMAP_REASON_ABI :
				     r == -EBADF ? FASTREMAP_REASON_FD_LOST :
				     FASTREMAP_REASON_IOCTL_ERROR;
			why.err = r ? (int)-r : 0;
			goto fallback;
		}
		/*
		 * Every other answer is the module's own, success or error,
		 * with the result written (it was checked writable first).
		 */
		st.used_module = 1;
		if (req.tlb_flushes != FR_UNWRITTEN) {
			st.done = req.done;
			st.done_bytes = req.done_bytes;
			st.moved_pte = req.moved_pte;
			st.tlb_flushes = req.tlb_flushes;
		}
		ret = r;
		goto out;
	}
fallback:
	st.reason = why.reason;
	st.reason_errno = why.err;
	if (fr_flags & FASTREMAP_NO_FALLBACK)
		ret = fr_no_fallback_err(&why);
	else
		ret = fr_move_fallback(moves, count, flags, &st);
out:
	if (stats) {
		st.size = sizeof(st);
		fr_copy_out(stats, &st, sizeof(st));
	}
	return ret;
}

long fastremap_move(const struct fastremap_move_range *moves, size_t count,
		    unsigned int flags, unsigned int fr_flags,
		    struct fastremap_move_stats *stats)
{
	int saved = errno;
	long ret = fr_move(moves, count, flags, fr_flags, stats);

	errno = saved;
	return ret;
}
