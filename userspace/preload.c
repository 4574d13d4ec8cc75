// SPDX-License-Identifier: GPL-2.0
/*
 * libfastremap-preload.so: routes the mremap() calls of an unmodified
 * program through libfastremap. Load it with LD_PRELOAD. See
 * fastremap-preload(8).
 *
 * FASTREMAP_PRELOAD_DISABLE=1: every call goes to the next mremap() in
 * the lookup order (a later LD_PRELOAD interposer, or the C library's), as
 * calls with flags the library does not know always do.
 * FASTREMAP_PRELOAD_LOG=1: one line per call, prefixed
 * "fastremap-preload: ", saying which path answered and why, to the
 * stderr the program had when the shim was loaded; FASTREMAP_PRELOAD_LOG=
 * /path: to that file instead (appended, created 0600).
 * Both are read with secure_getenv(): in a set-user-ID or set-group-ID
 * program (the shim in /etc/ld.so.preload) they are ignored, or any user
 * could make it print its mapping addresses and defeat its ASLR.
 *
 * The log target is opened once, at load, as an open file of the shim's
 * own (a fresh open of /proc/self/fd/2 for stderr), above descriptor 2 and
 * non-blocking: the program may close fd 2 and open a data file there,
 * or fill a stderr pipe nobody reads, and neither its file gets log lines
 * nor its mremap() blocks (a line that does not fit is dropped). Where
 * stderr cannot be opened afresh (its permissions, no /proc), the shim
 * keeps a duplicate of fd 2 and writes to a pipe only when the line fits,
 * to a socket with MSG_DONTWAIT. Before each line the descriptor is
 * checked to be still that file; if the program closed or replaced it,
 * logging stops.
 *
 * The library is linked into this object and kept private to it, so the
 * shim needs nothing on the library path and a program that also links
 * libfastremap.so keeps its own copy. The library calls the mremap system
 * call, never mremap(), so the shim cannot recurse into itself.
 *
 * Everything here is async-signal-safe in practice: no allocation, no
 * stdio, no locks (the log line is formatted by hand and written with one
 * write(2)), so an allocator or a GC may call mremap() from anywhere.
 * As in the library, system calls are made with syscall(2): write() and
 * sigtimedwait() are thread cancellation points, mremap() is not.
 */
#include <errno.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "fastremap.h"

#define LOG_PREFIX	"fastremap-preload: "
#define ENV_DISABLE	"FASTREMAP_PRELOAD_DISABLE"
#define ENV_LOG		"FASTREMAP_PRELOAD_LOG"

#define CFG_READY	1
#define CFG_DISABLE	2
#define CFG_LOG		4

/* Older C libraries (glibc before 2.32: Debian 11) lack it: the kernel's value. */
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4
#endif
#define KNOWN_FLAGS	(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)

/*
 * The next mremap() in the lookup order: another interposer loaded after
 * the shim, or the C library's own. Found at load time, since dlsym() is
 * not async-signal-safe.
 */
typedef void *mremap_fn(void *, size_t, size_t, int, ...);
static mremap_fn *_Atomic next_mremap;

static _Atomic int fr_cfg;

/*
 * The log's descriptor (-1: none), and the file it was opened on: the
 * program may close the number and reuse it, and must not get our lines.
 */
static _Atomic int log_fd = -1;
static dev_t log_dev;
static ino_t log_ino;
/*
 * The log shares the program's open file (its stderr could not be opened
 * afresh), so O_NONBLOCK is the program's to set, not ours: see
 * log_has_room().
 */
static int log_shared;

/* The lowest descriptor the log may take: out of the way of the program's. */
#define LOG_FD_MIN	100

/* Set to anything but empty or "0"; never in a set-user-ID program. */
static int env_on(const char *name)
{
	const char *v = secure_getenv(name);

	return v && *v && strcmp(v, "0") != 0;
}

/*
 * Opens the log target: "1" (and any value not a path) is the stderr the
 * program has now, opened afresh so that O_NONBLOCK is ours alone; a value
 * starting with '/' is a file. Returns the descriptor or -1.
 */
static int log_open(const char *v)
{
	int flags = O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
	struct stat st;
	long fd, hi;

	if (*v == '/') {
		fd = syscall(SYS_openat, AT_FDCWD, v, flags | O_CREAT, 0600);
	} else {
		fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/fd/2", flags, 0);
		/*
		 * Opening it again checks its permissions (a pipe or file of
		 * root's, in a program that changed its IDs; no /proc): take
		 * the program's open file itself then.
		 */
		if (fd < 0) {
			fd = syscall(SYS_fcntl, STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
			log_shared = fd >= 0;
		}
	}
	if (fd < 0)
		return -1;
	hi = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, LOG_FD_MIN);
	if (hi < 0)
		hi = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 3);
	syscall(SYS_close, fd);
	if (hi < 0)
		return -1;
	if (fstat((int)hi, &st)) {
		syscall(SYS_close, hi);
		return -1;
	}
	log_dev = st.st_dev;
	log_ino = st.st_ino;
	return (int)hi;
}

static int config(void)
{
	int c = atomic_load_explicit(&fr_cfg, memory_order_relaxed);

	if (!c) {
		int saved = errno;

		c = CFG_READY | (env_on(ENV_DISABLE) ? CFG_DISABLE : 0);
		atomic_store_explicit(&next_mremap,
				      (mremap_fn *)dlsym(RTLD_NEXT, "mremap"),
				      memory_order_relaxed);
		if (env_on(ENV_LOG)) {
			int fd = log_open(secure_getenv(ENV_LOG));

			if (fd >= 0) {
				atomic_store_explicit(&log_fd, fd, memory_order_relaxed);
				c |= CFG_LOG;
			}
		}
		atomic_store_explicit(&fr_cfg, c, memory_order_relaxed);
		errno = saved;
	}
	return c;
}

/* Read the environment before main(), while it is certainly intact. */
__attribute__((constructor)) static void preload_init(void)
{
	config();
}

/* A fixed-size line buffer, filled without stdio. */
struct line {
	char buf[512];
	size_t len;
};

static void put_str(struct line *l, const char *s)
{
	while (*s && l->len < sizeof(l->buf) - 1)
		l->buf[l->len++] = *s++;
}

static void put_num(struct line *l, uint64_t v, unsigned int base)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (base == 16)
		put_str(l, "0x");
	while (n && l->len < sizeof(l->buf) - 1)
		l->buf[l->len++] = tmp[--n];
}

/*
 * The errno names the log can show: the C library's strerrorname_np()
 * needs glibc 2.32 and is not in musl, and the shim builds with both.
 */
static const char *errno_name(int e)
{
#define N(x) case x: return #x
	switch (e) {
	N(EPERM); N(ENOENT); N(EINTR); N(ENXIO); N(EBADF); N(EAGAIN);
	N(ENOMEM); N(EACCES); N(EFAULT); N(EBUSY); N(EEXIST); N(EXDEV);
	N(ENODEV); N(EINVAL); N(EMFILE); N(ENFILE); N(ENOTTY); N(ENOSYS);
	N(EPROTO); N(EOPNOTSUPP); N(EPROTONOSUPPORT);
	default: return NULL;
	}
#undef N
}

static void put_errno(struct line *l, int e)
{
	const char *name = errno_name(e);

	if (name) {
		put_str(l, name);
	} else {
		put_str(l, "errno ");
		put_num(l, (uint64_t)e, 10);
	}
}

static void put_flags(struct line *l, int flags)
{
	static const struct {
		int bit;
		const char *name;
	} names[] = {
		{ MREMAP_MAYMOVE, "MAYMOVE" },
		{ MREMAP_FIXED, "FIXED" },
		{ MREMAP_DONTUNMAP, "DONTUNMAP" },
	};
	unsigned int rest = (unsigned int)flags;
	int first = 1;

	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		if (!(rest & (unsigned int)names[k].bit))
			continue;
		put_str(l, first ? "" : "|");
		put_str(l, names[k].name);
		rest &= ~(unsigned int)names[k].bit;
		first = 0;
	}
	if (rest || first) {
		put_str(l, first ? "" : "|");
		put_num(l, rest, 16);
	}
}

/* The kernel's sigset_t: what the rt_sig* system calls take. */
#define KSIGSET_SIZE	(_NSIG / 8)

/*
 * Writes the log line. With the log a pipe whose reader is gone
 * (prog 2>&1 | head), write(2) raises SIGPIPE, which would kill a program
 * that never writes there itself inside mremap(). As git and OpenSSL do:
 * block SIGPIPE around the write, and consume the one it raised unless one
 * was pending already (that one is the program's, and stays). A full pipe
 * answers EAGAIN (the descriptor is non-blocking): the rest is dropped.
 */
/*
 * Whether a line of @len bytes can be written to a log that shares the
 * program's open file without blocking: a pipe with that much room (a
 * line is less than PIPE_BUF, so it goes whole or waits), anything but a
 * pipe or socket (sockets are written with MSG_DONTWAIT). A terminal
 * stopped with ^S would still block.
 */
static int log_has_room(int fd, const struct stat *st, size_t len)
{
	long size;
	int unread = 0;

	if (!S_ISFIFO(st->st_mode))
		return 1;
	size = syscall(SYS_fcntl, fd, F_GETPIPE_SZ);
	if (size < 0 || syscall(SYS_ioctl, fd, FIONREAD, &unread))
		return 0;
	return (size_t)size >= (size_t)unread + len;
}

static void write_log(const char *buf, size_t len)
{
	static const struct timespec zero = { 0, 0 };
	sigset_t pipe_set, old, pending;
	int was_pending, epipe = 0;
	int fd = atomic_load_explicit(&log_fd, memory_order_relaxed);
	struct stat st;
	size_t off = 0;
	long w;

	if (fd < 0)
		return;
	/* Still our file? The program may have closed or replaced the number. */
	if (fstat(fd, &st) || st.st_dev != log_dev || st.st_ino != log_ino) {
		atomic_store_explicit(&log_fd, -1, memory_order_relaxed);
		return;
	}
	if (log_shared && !log_has_room(fd, &st, len))
		return;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigemptyset(&pending);
	syscall(SYS_rt_sigpending, &pending, KSIGSET_SIZE);
	was_pending = sigismember(&pending, SIGPIPE) == 1;
	if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, &pipe_set, &old, KSIGSET_SIZE))
		return;
	while (off < len) {
		if (S_ISSOCK(st.st_mode))
			w = syscall(SYS_sendto, fd, buf + off, len - off,
				    MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
		else
			w = syscall(SYS_write, fd, buf + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EPIPE)
			epipe = 1;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	if (epipe && !was_pending) {
		while (syscall(SYS_rt_sigtimedwait, &pipe_set, NULL, &zero,
			       KSIGSET_SIZE) < 0 && errno == EINTR)
			;
	}
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, KSIGSET_SIZE);
}

static void log_call(void *old_address, size_t old_size, size_t new_size,
		     int flags, void *new_address, long ret, void *res,
		     const struct fastremap_stats *st, const char *path)
{
	struct line l = { .len = 0 };

	put_str(&l, LOG_PREFIX "mremap(");
	put_num(&l, (uintptr_t)old_address, 16);
	put_str(&l, ", ");
	put_num(&l, old_size, 10);
	put_str(&l, ", ");
	put_num(&l, new_size, 10);
	put_str(&l, ", ");
	put_flags(&l, flags);
	if (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) {
		put_str(&l, ", ");
		put_num(&l, (uintptr_t)new_address, 16);
	}
	put_str(&l, ") = ");
	if (ret < 0) {
		put_str(&l, "-1 ");
		put_errno(&l, (int)-ret);
	} else {
		put_num(&l, (uintptr_t)res, 16);
	}
	if (path) {
		put_str(&l, path);
	} else if (st->used_module) {
		put_str(&l, ": module (pud ");
		put_num(&l, st->moved_pud, 10);
		put_str(&l, ", pmd ");
		put_num(&l, st->moved_pmd, 10);
		put_str(&l, ", thp ");
		put_num(&l, st->moved_thp, 10);
		put_str(&l, ", pte ");
		put_num(&l, st->moved_pte, 10);
		put_str(&l, ", TLB flushes ");
		put_num(&l, st->tlb_flushes, 10);
		put_str(&l, ")");
	} else {
		put_str(&l, ": mremap(2) fallback: ");
		put_str(&l, fastremap_strreason(st->reason));
		if (st->reason_errno) {
			put_str(&l, " (");
			put_errno(&l, st->reason_errno);
			put_str(&l, ")");
		}
	}
	l.buf[l.len++] = '\n';
	write_log(l.buf, l.len);
}

void *mremap(void *old_address, size_t old_size, size_t new_size, int flags,
	     ...)
{
	struct fastremap_stats st;
	void *new_address = NULL, *res = MAP_FAILED;
	const char *path = NULL;	/* the log's account, when not the library's */
	mremap_fn *next;
	int cfg = config(), saved = errno;
	long ret;

	/* glibc's mremap() reads the fifth argument only with these. */
	if (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) {
		va_list ap;

		va_start(ap, flags);
		new_address = va_arg(ap, void *);
		va_end(ap);
	}
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	next = atomic_load_explicit(&next_mremap, memory_order_relaxed);
	/*
	 * Disabled, or flags the library does not know: the next mremap()
	 * answers, as if the shim were not there (for unknown flags glibc
	 * 2.40 and later, and Debian's 2.36, fail with EINVAL without the
	 * system call; others pass them on).
	 */
	if ((cfg & CFG_DISABLE) || ((unsigned int)flags & ~(unsigned int)KNOWN_FLAGS)) {
		path = cfg & CFG_DISABLE ? ": the next mremap(): disabled by " ENV_DISABLE :
		       ": the next mremap(): flags the library does not know";
		if (next) {
			res = next(old_address, old_size, new_size, flags, new_address);
			ret = res == MAP_FAILED ? -errno : 0;
		} else {
			ret = syscall(SYS_mremap, old_address, old_size, new_size,
				      (unsigned long)(unsigned int)flags, new_address);
			if (ret == -1)
				ret = -errno;
			else
				res = (void *)ret, ret = 0;
		}
	} else {
		ret = fastremap_remap(old_address, old_size, new_size, flags,
				      new_address, 0, &st, &res);
	}
	if ((cfg & CFG_LOG) && atomic_load_explicit(&log_fd, memory_order_relaxed) >= 0)
		log_call(old_address, old_size, new_size, flags, new_address,
			 ret, res, &st, path);
	if (ret < 0) {
		errno = (int)-ret;
		return MAP_FAILED;
	}
	errno = saved;
	return res;
}
