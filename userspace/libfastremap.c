// SPDX-License-Identifier: GPL-2.0
/*
 * libfastremap: mremap(2) through /dev/fastremap, with mremap(2) itself
 * as the fallback. See fastremap(3).
 *
 * The device descriptor. The library opens /dev/fastremap lazily, on the
 * first call that needs it, with O_CLOEXEC, and keeps it for the life of
 * the process. Its state is one atomic word: the descriptor and the
 * device number it was opened on, or "not tried yet", or "unavailable"
 * with the reason. Threads racing on the first call each open the device;
 * one publishes its descriptor with a compare-and-swap and the others
 * close theirs. There is no lock, so fork() can never inherit a held one.
 *
 * After fork() the child shares the descriptor (the same open file). That
 * is correct: FASTREMAP_IOC_REMAP acts on the memory of the process that
 * makes the call (current->mm in the module), not on that of the process
 * that opened the device, and the open file carries no state (no offset,
 * no private data). The descriptor is close-on-exec, so exec'd programs
 * do not inherit it.
 *
 * The descriptor is a number in the caller's table, which the caller may
 * close or replace by mistake. Before each use the library fstat()s it
 * and checks it is still a character device with the number it opened;
 * if not, it forgets the number (never closing it: it is the caller's now)
 * and opens the device again. A descriptor below 3 is moved above 2, so
 * a program that starts with stdin, stdout or stderr closed and reopens
 * them gets the numbers it expects.
 *
 * An unavailable device (missing, no access, an ABI we do not speak) is
 * remembered for one second, after which the next call tries again: a
 * module loaded after the process started is picked up without a restart,
 * and a process without the module pays one failed open(2) per second.
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
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/fastremap.h>
#include "fastremap.h"

#ifndef FR_LIB_VERSION
#define FR_LIB_VERSION "unknown"
#endif

_Static_assert(sizeof(struct fastremap_stats) == FASTREMAP_STATS_SIZE_VER0,
	       "fastremap_stats layout");
_Static_assert(sizeof(struct fastremap_abi_info) == FASTREMAP_ABI_INFO_SIZE_VER0,
	       "fastremap_abi_info layout");
_Static_assert(FASTREMAP_IOCTL_BIT_INFO == 1ULL << _IOC_NR(FASTREMAP_IOC_INFO) &&
	       FASTREMAP_IOCTL_BIT_REMAP == 1ULL << _IOC_NR(FASTREMAP_IOC_REMAP),
	       "ioctl bits");

/* The mremap(2) flags the module's ABI version 1 knows. */
#define FR_KNOWN_MREMAP_FLAGS	(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)
#define FR_KNOWN_FR_FLAGS	(FASTREMAP_NO_FALLBACK | FASTREMAP_MREMAP_ONLY)
/* Structures passed in are at most a page, as the module's are. */
#define FR_MAX_STRUCT_SIZE	4096u
#define FR_RETRY_NS		1000000000LL

/*
 * The state word: the low 32 bits a descriptor (>= 0) or one of the
 * values below; the high 32 bits the device number of that descriptor
 * (major << 20 | minor, the kernel's own encoding), or, when unavailable,
 * the reason << 16 | errno.
 */
#define FR_FD_UNKNOWN		(-1)
#define FR_FD_UNAVAILABLE	(-2)
#define FR_STATE(fd, hi)	(((uint64_t)(uint32_t)(hi) << 32) | (uint32_t)(int32_t)(fd))
#define FR_STATE_FD(s)		((int)(int32_t)(uint32_t)(s))
#define FR_STATE_HI(s)		((uint32_t)((s) >> 32))

static _Atomic uint64_t fr_state = FR_STATE(FR_FD_UNKNOWN, 0);
/* CLOCK_MONOTONIC time before which "unavailable" is believed. */
static _Atomic int64_t fr_retry_at;

struct fr_why {
	int reason;
	int err;
};

static uint32_t fr_enc_dev(dev_t d)
{
	return (uint32_t)((major(d) & 0xfff) << 20 | (minor(d) & 0xfffff));
}

static int64_t fr_now(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &t))
		return 0;
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

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

/* Remembers for a while that the device cannot be used, and why. */
static void fr_set_unavailable(uint64_t seen, int reason, int err)
{
	uint64_t s = FR_STATE(FR_FD_UNAVAILABLE,
			      (uint32_t)reason << 16 | ((uint32_t)err & 0xffff));

	atomic_store_explicit(&fr_retry_at, fr_now() + FR_RETRY_NS,
			      memory_order_relaxed);
	/* If another thread published something meanwhile, keep theirs. */
	atomic_compare_exchange_strong_explicit(&fr_state, &seen, s,
						memory_order_release,
						memory_order_relaxed);
}

/* Moves a descriptor above 2 (see the top of this file). */
static int fr_high_fd(int fd)
{
	int nfd;

	if (fd > 2)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (nfd < 0)
		return fd;
	close(fd);
	return nfd;
}

/*
 * Opens the device and checks its handshake. Returns the published
 * descriptor; -1 when the device cannot be used (why says why); -2 when
 * another thread changed the state meanwhile: look again.
 */
static int fr_open(uint64_t seen, struct fr_why *why)
{
	struct fastremap_info info;
	struct stat st;
	uint64_t s;
	int fd, err;

	fd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		why->reason = fr_open_reason(err);
		why->err = err;
		/* EMFILE, ENOMEM, EINTR... may pass: only this call falls back. */
		if (why->reason != FASTREMAP_REASON_OPEN_FAILED)
			fr_set_unavailable(seen, why->reason, err);
		return -1;
	}
	fd = fr_high_fd(fd);
	if (fstat(fd, &st) || !S_ISCHR(st.st_mode)) {
		close(fd);
		why->reason = FASTREMAP_REASON_ABI;
		why->err = ENOTTY;
		fr_set_unavailable(seen, why->reason, why->err);
		return -1;
	}
	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	if (ioctl(fd, FASTREMAP_IOC_INFO, &info) ||
	    info.abi_version != FASTREMAP_ABI_VERSION ||
	    !(info.ioctls & FASTREMAP_IOCTL_BIT_REMAP)) {
		err = errno;
		close(fd);
		why->reason = FASTREMAP_REASON_ABI;
		why->err = info.abi_version ? EPROTONOSUPPORT : err;
		fr_set_unavailable(seen, why->reason, why->err);
		return -1;
	}
	s = FR_STATE(fd, fr_enc_dev(st.st_rdev));
	if (atomic_compare_exchange_strong_explicit(&fr_state, &seen, s,
						    memory_order_acq_rel,
						    memory_order_acquire))
		return fd;
	/* Another thread got there first: use what it published. */
	close(fd);
	return -2;
}

/*
 * The device descriptor, opened on first use; -1 with why set when the
 * device cannot be used for this call.
 */
static int fr_device(struct fr_why *why)
{
	for (int tries = 0; tries < 8; tries++) {
		uint64_t s = atomic_load_explicit(&fr_state, memory_order_acquire);
		int fd = FR_STATE_FD(s);
		struct stat st;

		if (fd >= 0) {
			if (fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
			    fr_enc_dev(st.st_rdev) == FR_STATE_HI(s))
				return fd;
			/*
			 * The caller closed or reused our descriptor. The
			 * number is theirs now: forget it, do not close it.
			 */
			atomic_compare_exchange_strong_explicit(
				&fr_state, &s, FR_STATE(FR_FD_UNKNOWN, 0),
				memory_order_acq_rel, memory_order_acquire);
			continue;
		}
		if (fd == FR_FD_UNAVAILABLE &&
		    fr_now() < atomic_load_explicit(&fr_retry_at,
						    memory_order_relaxed)) {
			why->reason = (int)(FR_STATE_HI(s) >> 16);
			why->err = (int)(FR_STATE_HI(s) & 0xffff);
			return -1;
		}
		fd = fr_open(s, why);
		if (fd != -2)
			return fd;
	}
	why->reason = FASTREMAP_REASON_FD_LOST;
	why->err = EBADF;
	return -1;
}

/* The mremap system call itself: never glibc's mremap(), which the shim replaces. */
static long fr_sys_mremap(void *old_addr, size_t old_size, size_t new_size,
			  int flags, void *new_addr, void **res)
{
	long r = syscall(SYS_mremap, old_addr, old_size, new_size,
			 (unsigned long)(unsigned int)flags, new_addr);

	if (r == -1)
		return -errno;
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
	default:
		return why->err ? -why->err : -ENODEV;
	}
}

static int fr_check_size(uint32_t size, uint32_t ver0)
{
	return size >= ver0 && size <= FR_MAX_STRUCT_SIZE;
}

/* Writes a result structure back as the caller's size allows. */
static void fr_copy_out(void *dst, const void *src, size_t ours)
{
	uint32_t theirs;

	memcpy(&theirs, dst, sizeof(theirs));
	if (theirs > ours)
		memset((char *)dst + ours, 0, theirs - ours);
	else
		ours = theirs;
	memcpy(dst, src, ours);
	theirs = (uint32_t)ours;
	memcpy(dst, &theirs, sizeof(theirs));
}

static long fr_remap(void *old_addr, size_t old_size, size_t new_size,
		     int flags, void *new_addr, unsigned int fr_flags,
		     struct fastremap_stats *stats, void **result)
{
	struct fastremap_stats st;
	struct fastremap_remap req;
	struct fr_why why = { 0, 0 };
	void *res = NULL;
	long ret;
	int fd;

	if ((fr_flags & ~FR_KNOWN_FR_FLAGS) ||
	    (fr_flags & FR_KNOWN_FR_FLAGS) == FR_KNOWN_FR_FLAGS)
		return -EINVAL;
	if (stats && !fr_check_size(stats->size, FASTREMAP_STATS_SIZE_VER0))
		return -EINVAL;
	memset(&st, 0, sizeof(st));

	if (fr_flags & FASTREMAP_MREMAP_ONLY) {
		why.reason = FASTREMAP_REASON_CALLER;
		goto fallback;
	}
	/* A flag the module does not know may be one the kernel does. */
	if (((unsigned int)flags & ~FR_KNOWN_MREMAP_FLAGS) &&
	    !(fr_flags & FASTREMAP_NO_FALLBACK)) {
		why.reason = FASTREMAP_REASON_FLAGS;
		goto fallback;
	}
	for (int tries = 0;; tries++) {
		fd = fr_device(&why);
		if (fd < 0)
			goto fallback;
		memset(&req, 0, sizeof(req));
		req.size = sizeof(req);
		req.mremap_flags = (unsigned int)flags;
		req.old_addr = (uintptr_t)old_addr;
		req.old_size = old_size;
		req.new_size = new_size;
		req.new_addr = (uintptr_t)new_addr;
		if (ioctl(fd, FASTREMAP_IOC_REMAP, &req) == 0) {
			st.used_module = 1;
			st.moved_pud = req.moved_pud;
			st.moved_pmd = req.moved_pmd;
			st.moved_thp = req.moved_thp;
			st.moved_pte = req.moved_pte;
			st.tlb_flushes = req.tlb_flushes;
			res = (void *)(uintptr_t)req.new_addr;
			ret = 0;
			goto out;
		}
		switch (errno) {
		case EOPNOTSUPP:
			why.reason = FASTREMAP_REASON_DECLINED;
			why.err = EOPNOTSUPP;
			goto fallback;
		case ENOTTY:
			why.reason = FASTREMAP_REASON_ABI;
			why.err = ENOTTY;
			goto fallback;
		case EBADF:
			/* Closed under us by the caller: look once more. */
			why.reason = FASTREMAP_REASON_FD_LOST;
			why.err = EBADF;
			if (tries)
				goto fallback;
			continue;
		default:
			/* The module's answer is mremap(2)'s answer. */
			st.used_module = 1;
			ret = -errno;
			goto out;
		}
	}

fallback:
	st.reason = why.reason;
	st.reason_errno = why.err;
	if (fr_flags & FASTREMAP_NO_FALLBACK)
		ret = fr_no_fallback_err(&why);
	else
		ret = fr_sys_mremap(old_addr, old_size, new_size, flags,
				    new_addr, &res);
out:
	if (ret == 0 && result)
		*result = res;
	if (stats) {
		st.size = sizeof(st);
		fr_copy_out(stats, &st, sizeof(st));
	}
	return ret;
}

long fastremap_remap(void *old_addr, size_t old_size, size_t new_size,
		     int flags, void *new_addr, unsigned int fr_flags,
		     struct fastremap_stats *stats, void **result)
{
	int saved = errno;
	long ret = fr_remap(old_addr, old_size, new_size, flags, new_addr,
			    fr_flags, stats, result);

	errno = saved;
	return ret;
}

void *fastremap(void *old_address, size_t old_size, size_t new_size,
		int flags, ...)
{
	void *new_address = NULL, *res = MAP_FAILED;
	int saved = errno;
	long ret;

	/* As glibc's mremap(): the fifth argument exists only with these. */
	if (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) {
		va_list ap;

		va_start(ap, flags);
		new_address = va_arg(ap, void *);
		va_end(ap);
	}
	ret = fr_remap(old_address, old_size, new_size, flags, new_address, 0,
		       NULL, &res);
	if (ret < 0) {
		errno = (int)-ret;
		return MAP_FAILED;
	}
	errno = saved;
	return res;
}

int fastremap_info(struct fastremap_abi_info *out)
{
	struct fastremap_abi_info ai;
	struct fastremap_info info;
	struct fr_why why = { 0, 0 };
	int saved = errno, fd, tmp = -1, ret = 0;

	if (!out || !fr_check_size(out->size, FASTREMAP_ABI_INFO_SIZE_VER0))
		return -EINVAL;
	fd = fr_device(&why);
	if (fd < 0) {
		if (why.reason == FASTREMAP_REASON_NO_DEVICE) {
			ret = -ENODEV;
			goto out;
		}
		if (why.reason == FASTREMAP_REASON_NO_ACCESS) {
			ret = -why.err;
			goto out;
		}
		/* Unusable for remapping, yet it may answer the handshake. */
		tmp = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
		if (tmp < 0) {
			ret = fr_open_reason(errno) == FASTREMAP_REASON_NO_DEVICE ?
			      -ENODEV : -errno;
			goto out;
		}
		fd = tmp;
	}
	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	if (ioctl(fd, FASTREMAP_IOC_INFO, &info)) {
		ret = -errno;
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
		close(tmp);
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
	default:
		return "unknown reason";
	}
}

const char *fastremap_version(void)
{
	return FR_LIB_VERSION;
}
