// SPDX-License-Identifier: GPL-2.0
/*
 * The LD_PRELOAD shim in an unmodified (dynamic) program: what a program
 * that knows nothing of fastremap must not notice.
 *  - A thread with a deferred cancel pending that calls mremap() returns
 *    from it (mremap() is no cancellation point; the shim must add none).
 *  - With FASTREMAP_PRELOAD_LOG=1 and stderr a pipe nobody reads, mremap()
 *    neither dies of SIGPIPE nor leaves one pending, and a SIGPIPE that was
 *    pending before stays pending; with that pipe full, mremap() does not
 *    block; a data file the program opens on fd 2 after closing it gets no
 *    log line. FASTREMAP_PRELOAD_LOG=/path logs to that file.
 *  - An mremap flag none of the three: the C library's own answer (glibc
 *    2.40 and later: EINVAL without the system call; older: the kernel's).
 * Each case runs in a child started afresh (execve of this program) with
 * the shim preloaded, so the library's first open of the device happens
 * inside the case. The same children serve the set-user-ID check in the
 * selftests VM (tests/harness/guest/t_selftests): --move and --as-nobody.
 *
 * Usage: t_preload [SHIM]   (default: libfastremap-preload.so next to this
 * program's build tree, build/userspace/, or $FASTREMAP_SHIM)
 *        t_preload --move | --cancel | --sigpipe | --sigpipe-pending |
 *                  --fd2-reused | --unknown-flag
 *        t_preload --as-nobody PROGRAM ARGS...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tlib.h"

#define MIB	(1UL << 20)
#define LEN	(4 * MIB)

/* ---- the children: exit 0 when all is well, else a code saying what ---- */

/* Whether the program's mremap() is the shim's. */
static int shim_loaded(void)
{
	Dl_info di;

	return dladdr((void *)mremap, &di) && di.dli_fname &&
	       strstr(di.dli_fname, "libfastremap-preload");
}

/* Maps LEN bytes with a pattern and a reserved destination; 0 on success. */
static int setup(char **src, char **dst)
{
	char *r = mmap(NULL, 3 * LEN, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (r == MAP_FAILED)
		return -1;
	*src = r;
	*dst = r + 2 * LEN;
	if (mmap(*src, LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != *src)
		return -1;
	for (size_t k = 0; k < LEN; k += 4096)
		(*src)[k] = (char)(k >> 12);
	return 0;
}

static int moved_ok(const char *dst)
{
	for (size_t k = 0; k < LEN; k += 4096)
		if (dst[k] != (char)(k >> 12))
			return 0;
	return 1;
}

/* One move through mremap(), checked. */
static int child_move(void)
{
	char *src, *dst;

	if (!shim_loaded())
		return 10;
	if (setup(&src, &dst))
		return 11;
	if (mremap(src, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, dst) != dst ||
	    !moved_ok(dst))
		return 12;
	/* Set-user-ID copies say so: the caller checks they ran as such. */
	return getauxval(AT_SECURE) ? 20 : 0;
}

static volatile int returned;

static void *cancel_thread(void *arg)
{
	char **r = arg;
	void *res;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_cancel(pthread_self());
	/* Deferred: nothing happens until a cancellation point. */
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	res = mremap(r[0], LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, r[1]);
	returned = res == r[1] ? 1 : 2;
	pthread_testcancel();
	returned = 3;
	return NULL;
}

/* A pending deferred cancel does not act inside mremap(). */
static int child_cancel(void)
{
	char *r[2];
	pthread_t t;
	void *ret;

	if (!shim_loaded())
		return 10;
	if (setup(&r[0], &r[1]))
		return 11;
	if (pthread_create(&t, NULL, cancel_thread, r) || pthread_join(t, &ret))
		return 12;
	if (returned == 0)
		return 13;	/* cancelled inside mremap() */
	if (returned != 1 || !moved_ok(r[1]))
		return 14;
	if (ret != PTHREAD_CANCELED)
		return 15;	/* the cancel was lost */
	return 0;
}

static int sigpipe_state(int *blocked)
{
	sigset_t s;

	sigpending(&s);
	if (blocked) {
		sigset_t m;

		pthread_sigmask(SIG_BLOCK, NULL, &m);
		*blocked = sigismember(&m, SIGPIPE);
	}
	return sigismember(&s, SIGPIPE);
}

/* stderr is a pipe without a reader, logging is on, SIGPIPE is default. */
static int child_sigpipe(void)
{
	char *src, *dst;
	int blocked;

	if (!shim_loaded())
		return 10;
	signal(SIGPIPE, SIG_DFL);
	if (setup(&src, &dst))
		return 11;
	for (int k = 0; k < 3; k++) {
		char *from = k & 1 ? dst : src, *to = k & 1 ? src : dst;

		if (mremap(from, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, to) != to ||
		    !moved_ok(to))
			return 12;
	}
	if (sigpipe_state(&blocked))
		return 13;	/* left pending */
	if (blocked)
		return 14;	/* left blocked */
	return 0;
}

/* A SIGPIPE of the program's own, pending before mremap(), stays. */
static int child_sigpipe_pending(void)
{
	sigset_t s;
	char *src, *dst;
	int blocked, sig;

	if (!shim_loaded())
		return 10;
	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	raise(SIGPIPE);
	if (!sigpipe_state(NULL))
		return 11;
	if (setup(&src, &dst) ||
	    mremap(src, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, dst) != dst)
		return 12;
	if (!sigpipe_state(&blocked))
		return 13;	/* the program's signal was consumed */
	if (!blocked)
		return 14;	/* the program's mask was changed */
	if (sigwait(&s, &sig) || sig != SIGPIPE || sigpipe_state(NULL))
		return 15;
	return 0;
}

/*
 * The program closes fd 2 and opens a data file there, then calls
 * mremap(): the file must get nothing from the shim.
 */
static int child_fd2_reused(void)
{
	struct stat st;
	int rc, data;

	close(2);
	data = memfd_create("t_preload-data", 0);
	if (data != 2)
		return 40;
	rc = child_move();
	if (rc)
		return rc;
	return fstat(data, &st) == 0 && st.st_size == 0 ? 0 : 41;
}

#define T_UNKNOWN_FLAG	0x40	/* no mremap flag yet */

/*
 * mremap() with a flag none of the three, through the shim and through
 * the C library's own mremap(): the same answer. A seccomp filter makes
 * the system call answer ENOSYS for that flag, so that a call the C
 * library refuses itself (EINVAL) is told from one it passed on.
 */
static int child_unknown_flag(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mremap, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[3])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, T_UNKNOWN_FLAG, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	void *(*libc_mremap)(void *, size_t, size_t, int, ...);
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	char *src, *dst;
	int e_libc, e_shim;

	if (!shim_loaded())
		return 10;
	if (!libc || !(libc_mremap = (void *(*)(void *, size_t, size_t, int, ...))
		       dlsym(libc, "mremap")))
		return 11;
	if (setup(&src, &dst) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return 12;
	errno = 0;
	if (libc_mremap(src, LEN, 2 * LEN, MREMAP_MAYMOVE | T_UNKNOWN_FLAG) != MAP_FAILED)
		return 13;
	e_libc = errno;
	errno = 0;
	if (mremap(src, LEN, 2 * LEN, MREMAP_MAYMOVE | T_UNKNOWN_FLAG) != MAP_FAILED)
		return 14;
	e_shim = errno;
	if (e_shim != e_libc)
		return e_libc == EINVAL ? 20 : 21;	/* 20: passed to the kernel */
	return 0;
}

/* Runs PROGRAM as uid and gid 65534 (nobody), for the set-user-ID check. */
static int as_nobody(char **argv)
{
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return 30;
	execv(argv[0], argv);
	return 31;
}

/* ---- the driver ---- */

static char self[PATH_MAX];
static const char *shim;
/* run() drops to uid and gid 65534 before the exec (needs root). */
static int run_nobody;

/*
 * Runs this program with MODE under the shim; stderr to @errfd (or
 * /dev/null), FASTREMAP_PRELOAD_LOG=@log; killed after 20 s (a blocked
 * call). Returns the wait status.
 */
static int run(const char *mode, int errfd, const char *log)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(errfd >= 0 ? errfd : null, 2);
		if (run_nobody && (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
			_exit(126);
		setenv("LD_PRELOAD", shim, 1);
		setenv("FASTREMAP_PRELOAD_LOG", log, 1);
		unsetenv("FASTREMAP_PRELOAD_DISABLE");
		alarm(20);
		execl(self, self, mode, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

static const char *describe(int status)
{
	static char buf[64];

	if (WIFEXITED(status))
		snprintf(buf, sizeof(buf), "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, sizeof(buf), "killed by %s", strsignal(WTERMSIG(status)));
	else
		snprintf(buf, sizeof(buf), "status %#x", status);
	return buf;
}

static int exited0(int status)
{
	return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Fills a pipe to the brim through @wfd, which stays blocking. */
static void fill_pipe(int wfd)
{
	int fl = fcntl(wfd, F_GETFL);
	char junk[4096];

	memset(junk, 'x', sizeof(junk));
	fcntl(wfd, F_SETFL, fl | O_NONBLOCK);
	while (write(wfd, junk, sizeof(junk)) > 0)
		;
	/* The last bytes a 4 KiB write could not take. */
	while (write(wfd, junk, 1) > 0)
		;
	fcntl(wfd, F_SETFL, fl);
}

/* A stderr pipe filled up, blocking again, nobody reading: no block. */
static void full_pipe_case(const char *who)
{
	int p[2], st;

	if (pipe(p)) {
		tap_ok(0, "%s a full pipe: pipe(2)", who);
		return;
	}
	fill_pipe(p[1]);
	st = run("--move", p[1], "1");
	tap_ok(exited0(st), "%s a full stderr pipe nobody reads: mremap() does not "
	       "block (%s)", who, describe(st));
	close(p[0]);
	close(p[1]);
}

/* Whether the file at @fd holds a log line of the shim. */
static int file_has_log(int fd)
{
	char buf[512] = "";
	ssize_t r = pread(fd, buf, sizeof(buf) - 1, 0);

	return r > 0 && strstr(buf, "fastremap-preload: mremap(");
}

/* A pipe whose read end is closed: writing to it raises SIGPIPE. */
static int broken_pipe(void)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -1;
	close(p[0]);
	return p[1];
}

int main(int argc, char **argv)
{
	/* The children this program runs itself as, under the shim. */
	static const struct {
		const char *opt;
		int (*fn)(void);
	} children[] = {
		{ "--move", child_move }, { "--cancel", child_cancel },
		{ "--sigpipe", child_sigpipe }, { "--sigpipe-pending", child_sigpipe_pending },
		{ "--fd2-reused", child_fd2_reused }, { "--unknown-flag", child_unknown_flag },
	};
	static char def[PATH_MAX + 64];
	ssize_t l;
	int st, fd;

	for (size_t i = 0; argc > 1 && i < ARRAY_SIZE(children); i++)
		if (!strcmp(argv[1], children[i].opt))
			return children[i].fn();
	if (argc > 2 && !strcmp(argv[1], "--as-nobody"))
		return as_nobody(argv + 2);

	l = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (l <= 0)
		return 2;
	self[l] = 0;
	if (argc > 1) {
		shim = argv[1];
	} else if (getenv("FASTREMAP_SHIM")) {
		shim = getenv("FASTREMAP_SHIM");
	} else {
		/* build/bin/t_preload -> build/userspace/libfastremap-preload.so */
		snprintf(def, sizeof(def), "%s", self);
		*strrchr(def, '/') = 0;
		*strrchr(def, '/') = 0;
		strcat(def, "/userspace/libfastremap-preload.so");
		shim = def;
	}
	tap_diag("shim: %s", shim);
	if (!tap_ok(access(shim, R_OK) == 0, "the shim exists"))
		return tap_done();

	/* The control: under these conditions the shim does write its log. */
	fd = memfd_create("t_preload-stderr", 0);
	st = run("--move", fd, "1");
	tap_ok(exited0(st) && file_has_log(fd),
	       "control: the shim is loaded and logs the call (%s)", describe(st));
	close(fd);

	st = run("--cancel", -1, "0");
	tap_ok(exited0(st), "a pending deferred cancel does not act inside mremap() (%s%s)",
	       describe(st), WEXITSTATUS(st) == 13 ? ": cancelled inside the call" : "");

	fd = broken_pipe();
	st = run("--sigpipe", fd, "1");
	tap_ok(exited0(st), "logging to a pipe nobody reads: no death by SIGPIPE, "
	       "none left pending or blocked (%s)", describe(st));
	st = run("--sigpipe-pending", fd, "1");
	tap_ok(exited0(st), "the program's own pending SIGPIPE stays pending, its mask "
	       "unchanged (%s)", describe(st));
	close(fd);

	fd = memfd_create("t_preload-stderr", 0);
	st = run("--fd2-reused", fd, "1");
	tap_ok(exited0(st) && file_has_log(fd),
	       "the program closes fd 2 and opens a data file there: the file gets no "
	       "log line, the stderr it had does (%s)", describe(st));
	close(fd);

	full_pipe_case("logging to");

	/*
	 * As uid 65534, stderr a pipe of root's: /proc/self/fd/2 cannot be
	 * opened again (its mode is 0600), so the shim writes through the
	 * program's own open file, and must not block on it when it is full.
	 * The program and the shim must be readable by that user.
	 */
	if (geteuid() == 0 && access(self, R_OK) == 0) {
		int p[2];

		run_nobody = 1;
		if (pipe(p) == 0) {
			char buf[512] = "";
			int fl = fcntl(p[0], F_GETFL);
			ssize_t r;

			st = run("--move", p[1], "1");
			fcntl(p[0], F_SETFL, fl | O_NONBLOCK);
			r = read(p[0], buf, sizeof(buf) - 1);
			tap_ok(exited0(st) && r > 0 && strstr(buf, "fastremap-preload: mremap("),
			       "uid 65534, stderr a pipe of root's: the shim logs through "
			       "the program's open file (%s)", describe(st));
			close(p[0]);
			close(p[1]);
		}
		full_pipe_case("as uid 65534 (no reopen), logging to");
		run_nobody = 0;
	} else {
		tap_skip_test("needs root", "uid 65534, stderr a pipe of root's");
	}

	st = run("--unknown-flag", -1, "0");
	tap_ok(exited0(st), "an unknown mremap flag: the shim answers as the C library "
	       "(%s) does (%s)", gnu_get_libc_version(), describe(st));

	{
		char path[64];

		fd = memfd_create("t_preload-log", 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		st = run("--move", -1, path);
		tap_ok(exited0(st) && file_has_log(fd),
		       "FASTREMAP_PRELOAD_LOG=/path: the log goes to that file (%s)",
		       describe(st));
		close(fd);
	}
	return tap_done();
}
