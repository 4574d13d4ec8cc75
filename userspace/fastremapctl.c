// SPDX-License-Identifier: GPL-2.0
/*
 * fastremapctl: what this machine's fastremap can do (info), a quick
 * end-to-end check (selftest), and where the benchmark is (bench). See
 * fastremapctl(8).
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/klog.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "fastremap.h"

#define DEVICE		"/dev/fastremap"
#define SYMBOLS		"/sys/class/misc/fastremap/symbols"
#define SIG_ENFORCE	"/sys/module/module/parameters/sig_enforce"
#define LOCKDOWN	"/sys/kernel/security/lockdown"
#define SECUREBOOT	"/sys/firmware/efi/efivars/" \
			"SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
#define DKMS_CERT	"/var/lib/dkms/mok.pub"

#define EXIT_OK		0
#define EXIT_FAIL	1
#define EXIT_USAGE	2
#define EXIT_NODEV	3

#define MIB		(1UL << 20)

/*
 * The self-test's geometry, the running kernel's: its page, the span of
 * a PMD entry, and the size it moves (four PMDs: 8 MiB with 4 KiB pages,
 * 128 MiB with 16 KiB pages).
 */
static size_t page_size, pmd_size, test_size;

static const char *prog = "fastremapctl";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s COMMAND [OPTION]...\n"
		"       %s -h | --help | --version\n"
		"\n"
		"Commands:\n"
		"  info        whether /dev/fastremap is there and usable, its ABI version,\n"
		"              features and ioctls, the kernel, and the internal kernel\n"
		"              symbols the module resolved\n"
		"  selftest [--require-module]\n"
		"              map four PMDs (8 MiB with 4 KiB pages), move them with\n"
		"              libfastremap to a PMD-aligned and to a misaligned\n"
		"              destination, grow them, compact a heap with\n"
		"              one batched move, check every byte;\n"
		"              passes through the mremap(2) fallback without the module\n"
		"              unless --require-module is given\n"
		"  bench       how to run the benchmark\n"
		"\n"
		"Exit status: 0 success, 1 failure, 2 usage error, 3 device missing or\n"
		"not accessible (info; selftest --require-module).\n"
		"See fastremapctl(8).\n",
		prog, prog);
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	usage(stderr);
	return EXIT_USAGE;
}

/* Advice for a device that cannot be used, by errno of the attempt. */
static void advise(int err)
{
	switch (err) {
	case ENODEV:
	case ENOENT:
	case ENXIO:
		printf("  the fastremap module is not loaded: load it with "
		       "`modprobe fastremap`\n"
		       "  (installed by `make install` or `make dkms-install` from "
		       "the source tree)\n");
		break;
	case EACCES:
	case EPERM:
		printf("  you may not open %s (root only by default): an "
		       "administrator installs\n"
		       "  the udev rule 60-fastremap.rules, runs `groupadd --system "
		       "fastremap` and\n"
		       "  `usermod -aG fastremap USER`; then log in again\n",
		       DEVICE);
		break;
	default:
		break;
	}
}

/* The first line of a small file, without its newline; "" if unreadable. */
static const char *read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = 0;
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

/* The kernel log line that refused a module for its signature, if any. */
static int find_sig_refusal(char *out, size_t len)
{
	static const char *const marks[] = {
		"Loading of unsigned module is rejected",
		"Loading of module with unavailable key is rejected",
		"unsigned module loading is restricted",
	};
	int size = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *log, *line, *save = NULL;
	int n, found = 0;

	if (size <= 0)
		return 0;
	log = malloc((size_t)size + 1);
	if (!log)
		return 0;
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log, size);
	if (n > 0) {
		log[n] = 0;
		for (line = strtok_r(log, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			for (size_t k = 0; k < sizeof(marks) / sizeof(marks[0]); k++)
				if (strstr(line, marks[k])) {
					snprintf(out, len, "%s", line);
					found = 1;
				}
	}
	free(log);
	return found;
}

/*
 * The module is not loaded: is this a kernel that loads only signed
 * modules (Secure Boot, module.sig_enforce, lockdown)? Then say so, with
 * the kernel's own refusal if its log is readable, and what to do.
 */
static void advise_signature(void)
{
	char enforce[16], lockdown[128], refusal[512];
	unsigned char sb[5] = { 0 };
	int secure_boot = 0, locked;
	FILE *f;

	read_line(SIG_ENFORCE, enforce, sizeof(enforce));
	read_line(LOCKDOWN, lockdown, sizeof(lockdown));
	f = fopen(SECUREBOOT, "rb");
	if (f) {
		secure_boot = fread(sb, 1, sizeof(sb), f) == sizeof(sb) && sb[4] == 1;
		fclose(f);
	}
	locked = lockdown[0] && !strstr(lockdown, "[none]");
	if (!secure_boot && enforce[0] != 'Y' && !locked)
		return;
	printf("signatures:   this kernel loads only modules signed by a key it trusts"
	       " (Secure Boot %s, module.sig_enforce %s, lockdown %s)\n",
	       secure_boot ? "on" : "off", enforce[0] ? enforce : "?",
	       lockdown[0] ? lockdown : "?");
	if (find_sig_refusal(refusal, sizeof(refusal)))
		printf("  the kernel refused a module for its signature: %s\n", refusal);
	printf("  DKMS signs fastremap with its own key: enrol that key once with\n"
	       "  `mokutil --import %s`, reboot and confirm it in the MOK\n"
	       "  manager, then `modprobe fastremap` (see fastremap(4), SECURE BOOT)\n",
	       DKMS_CERT);
}

static void print_bits(uint64_t v, const char *const names[], int n)
{
	printf("%#llx", (unsigned long long)v);
	for (int k = 0; k < 64; k++) {
		if (!(v & (1ULL << k)))
			continue;
		if (k < n && names[k])
			printf(" %s", names[k]);
		else
			printf(" bit%d", k);
	}
	printf("\n");
}

static void print_symbols(void)
{
	char line[512];
	FILE *f = fopen(SYMBOLS, "r");

	if (!f) {
		printf("symbols:      unreadable (%s: %s)\n", SYMBOLS,
		       strerror(errno));
		return;
	}
	/* Each function's entry (endbr, sealed, plain) and how it is called. */
	printf("symbols:      (%s)\n", SYMBOLS);
	while (fgets(line, sizeof(line), f))
		printf("  %s%s", line, strchr(line, '\n') ? "" : "\n");
	fclose(f);
}

static void print_device(const struct stat *st)
{
	struct passwd *pw = getpwuid(st->st_uid);
	struct group *gr = getgrgid(st->st_gid);
	char uid[16], gid[16];

	snprintf(uid, sizeof(uid), "%u", (unsigned int)st->st_uid);
	snprintf(gid, sizeof(gid), "%u", (unsigned int)st->st_gid);
	printf("device:       %s: present, %s, mode %04o, owner %s:%s, "
	       "number %u:%u\n", DEVICE,
	       S_ISCHR(st->st_mode) ? "character device" : "NOT a character device",
	       st->st_mode & 07777, pw ? pw->pw_name : uid,
	       gr ? gr->gr_name : gid, major(st->st_rdev),
	       minor(st->st_rdev));
}

static int cmd_info(int argc, char **argv)
{
	static const char *const feats[] = { "per-vma-lock", "thp", "move-pud",
					     "move", "pos-cookie", "remap-pinned",
					     "mremap-pud" };
	static const char *const ioctls[] = { "INFO", "REMAP", "MOVE" };
	struct fastremap_abi_info ai;
	struct utsname u;
	struct stat st;
	int ret;

	if (argc > 1)
		return usage_error("info: unexpected argument '%s'", argv[1]);
	printf("library:      libfastremap %s\n", fastremap_version());
	if (uname(&u) == 0)
		printf("kernel:       %s %s %s\n", u.sysname, u.release,
		       u.machine);

	if (stat(DEVICE, &st) == 0) {
		print_device(&st);
	} else if (errno == ENOENT || errno == ENOTDIR) {
		printf("device:       %s: absent (%s)\n", DEVICE, strerror(errno));
		advise(ENOENT);
		advise_signature();
		printf("fallback:     fastremap() calls mremap(2)\n");
		return EXIT_NODEV;
	} else {
		/* It may be there (EACCES on a directory...): the handshake says. */
		printf("device:       %s: cannot be examined (%s)\n", DEVICE,
		       strerror(errno));
	}

	memset(&ai, 0, sizeof(ai));
	ai.size = sizeof(ai);
	ret = fastremap_info(&ai);
	if (ret) {
		printf("handshake:    failed: %s\n", strerror(-ret));
		advise(-ret);
		printf("fallback:     fastremap() calls mremap(2)\n");
		print_symbols();
		return ret == -EACCES || ret == -EPERM || ret == -ENODEV ?
		       EXIT_NODEV : EXIT_FAIL;
	}
	printf("ABI version:  %u (this library speaks %u: %s)\n", ai.abi_version,
	       ai.library_abi, ai.abi_version == ai.library_abi ?
	       "compatible" : "INCOMPATIBLE: install matching module and library");
	printf("features:     ");
	print_bits(ai.features, feats, sizeof(feats) / sizeof(feats[0]));
	printf("ioctls:       ");
	print_bits(ai.ioctls, ioctls, 3);
	printf("remap:        %s\n", ai.remap_usable ?
	       "usable: fastremap() takes the fast path where the module handles the case" :
	       "NOT usable: fastremap() calls mremap(2)");
	printf("move:         %s\n", ai.remap_usable &&
	       (ai.ioctls & FASTREMAP_IOCTL_BIT_MOVE) ?
	       "usable: fastremap_move() moves a batch in one call, one TLB flush" :
	       "NOT usable: fastremap_move() calls mremap(2) once per move");
	print_symbols();
	return ai.remap_usable ? EXIT_OK : EXIT_FAIL;
}

/* Selftest memory: an aligned address inside a fresh PROT_NONE reservation. */
static char *reserve(size_t len, size_t align)
{
	char *p = mmap(NULL, len + align, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	return (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
}

static uint64_t pattern(size_t word)
{
	return (word + 1) * 0x9e3779b97f4a7c15ULL;
}

/* Index of the first wrong word of len bytes at p, or -1 when all are right. */
static long check_pattern(const char *p, size_t len)
{
	const uint64_t *w = (const uint64_t *)p;

	for (size_t k = 0; k < len / 8; k++)
		if (w[k] != pattern(k))
			return (long)k;
	return -1;
}

static int is_unmapped(const void *p, size_t len)
{
	unsigned char vec[1];

	for (size_t off = 0; off < len; off += page_size)
		if (mincore((char *)p + off, page_size, vec) == 0 ||
		    errno != ENOMEM)
			return 0;
	return 1;
}

struct step_result {
	int module_steps, steps;
	int fallback_reason, fallback_errno;
};

/* One move: reports it, checks the counters, returns the new address or NULL. */
static char *step(struct step_result *sr, const char *what, char *old,
		  size_t old_size, size_t new_size, int flags, char *dst)
{
	struct fastremap_stats st;
	void *res = NULL;
	long ret;

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	/* The module is what is tested: no routing of small moves to mremap(2). */
	ret = fastremap_remap(old, old_size, new_size, flags, dst, FASTREMAP_NO_ROUTING,
			      &st, &res);
	if (ret) {
		printf("FAIL  %s: %s (%s)\n", what, strerror((int)-ret),
		       st.used_module ? "module" : "mremap(2)");
		return NULL;
	}
	sr->steps++;
	if (st.used_module) {
		uint64_t moved = st.moved_pud + st.moved_pmd + st.moved_thp +
				 st.moved_pte;

		sr->module_steps++;
		printf("%s  %s: module: pud %llu, pmd %llu, thp %llu, pte %llu, "
		       "%llu TLB flush%s\n", moved && st.tlb_flushes ? "ok  " : "FAIL",
		       what, (unsigned long long)st.moved_pud,
		       (unsigned long long)st.moved_pmd,
		       (unsigned long long)st.moved_thp,
		       (unsigned long long)st.moved_pte,
		       (unsigned long long)st.tlb_flushes,
		       st.tlb_flushes == 1 ? "" : "es");
		if (!moved || !st.tlb_flushes)
			return NULL;
	} else {
		sr->fallback_reason = st.reason;
		sr->fallback_errno = st.reason_errno;
		printf("ok    %s: mremap(2) fallback: %s%s%s%s\n", what,
		       fastremap_strreason(st.reason),
		       st.reason_errno ? " (" : "",
		       st.reason_errno ? strerror(st.reason_errno) : "",
		       st.reason_errno ? ")" : "");
	}
	if (dst && (flags & MREMAP_FIXED) && res != dst) {
		printf("FAIL  %s: moved to %p, not to %p\n", what, res, (void *)dst);
		return NULL;
	}
	return res;
}

static int verify(const char *what, char *p, size_t len, char *old, size_t old_len)
{
	long bad = check_pattern(p, len);

	if (bad >= 0) {
		printf("FAIL  %s: word %ld (at %p) differs\n", what, bad,
		       (void *)(p + bad * 8));
		return 0;
	}
	if (old && !is_unmapped(old, old_len)) {
		printf("FAIL  %s: the old range %p is still mapped\n", what,
		       (void *)old);
		return 0;
	}
	printf("ok    %s: all %zu bytes intact, old range unmapped\n", what, len);
	return 1;
}

/*
 * fastremap_move(): a heap of 64 pages whose upper half holds data,
 * compacted into its lower half in reverse order, 32 moves in one call.
 * 0, or -1 after printing what failed.
 */
static int batch_step(struct step_result *sr)
{
	struct fastremap_move_stats st = { .size = sizeof(st) };
	struct fastremap_move_range mv[32];
	size_t pg = page_size;
	char *h = mmap(NULL, 64 * pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long r;

	if (h == MAP_FAILED) {
		printf("FAIL  batched move: map 64 pages: %s\n", strerror(errno));
		return -1;
	}
	for (size_t k = 0; k < 32; k++) {
		for (size_t w = 0; w < pg / 8; w++)
			((uint64_t *)(h + (32 + k) * pg))[w] = pattern(k * pg / 8 + w);
		mv[k].src = (uintptr_t)h + (32 + k) * pg;
		mv[k].dst = (uintptr_t)h + (31 - k) * pg;
		mv[k].len = pg;
	}
	r = fastremap_move(mv, 32, 0, 0, &st);
	sr->steps++;
	if (st.used_module) {
		sr->module_steps++;
	} else {
		sr->fallback_reason = st.reason;
		sr->fallback_errno = st.reason_errno;
	}
	if (r) {
		printf("FAIL  batched move of 32 pages: %s (after %llu moves)\n",
		       strerror((int)-r), (unsigned long long)st.done);
		munmap(h, 64 * pg);
		return -1;
	}
	for (size_t k = 0; k < 32; k++)
		for (size_t w = 0; w < pg / 8; w++)
			if (((uint64_t *)(h + (31 - k) * pg))[w] != pattern(k * pg / 8 + w) ||
			    ((uint64_t *)(h + (32 + k) * pg))[w]) {
				printf("FAIL  batched move: page %zu is wrong\n", k);
				munmap(h, 64 * pg);
				return -1;
			}
	printf("ok    batched move: 32 pages in one call (%s, %llu TLB flush%s), "
	       "every byte checked\n", st.used_module ? "module" : "mremap(2) fallback",
	       (unsigned long long)st.tlb_flushes, st.tlb_flushes == 1 ? "" : "es");
	munmap(h, 64 * pg);
	return 0;
}

/*
 * The running kernel's page size, and the span of its PMD entries: a page
 * table holds a page of 8-byte entries, as libfastremap reckons it.
 */
static void geometry(void)
{
	page_size = (size_t)sysconf(_SC_PAGESIZE);	/* never fails on Linux */
	pmd_size = page_size / 8 * page_size;
	test_size = 4 * pmd_size;
}

static int cmd_selftest(int argc, char **argv)
{
	struct step_result sr = { 0, 0, 0, 0 };
	char *src, *a, *b, *c, *resv_a, *resv_b;
	int require = 0, ok = 0;
	long bad;

	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--require-module"))
			require = 1;
		else
			return usage_error("selftest: unknown option '%s'", argv[k]);
	}

	geometry();
	printf("ok    page %zu KiB, PMD %zu MiB\n", page_size >> 10, pmd_size / MIB);
	src = reserve(test_size, pmd_size);
	resv_a = reserve(test_size, pmd_size);
	resv_b = reserve(2 * test_size + pmd_size, pmd_size);
	if (!src || !resv_a || !resv_b ||
	    mmap(src, test_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		printf("FAIL  map %zu MiB: %s\n", test_size / MIB, strerror(errno));
		return EXIT_FAIL;
	}
	for (size_t k = 0; k < test_size / 8; k++)
		((uint64_t *)src)[k] = pattern(k);
	printf("ok    map %zu MiB at %p (PMD-aligned) and fill it with a pattern\n",
	       test_size / MIB, (void *)src);

	a = step(&sr, "move to a PMD-aligned destination", src, test_size,
		 test_size, MREMAP_MAYMOVE | MREMAP_FIXED, resv_a);
	if (!a || !verify("PMD-aligned destination", a, test_size, src, test_size))
		goto out;
	b = step(&sr, "move to a misaligned destination (+1 page)", a, test_size,
		 test_size, MREMAP_MAYMOVE | MREMAP_FIXED, resv_b + page_size);
	if (!b || !verify("misaligned destination", b, test_size, a, test_size))
		goto out;
	/* The reservation's rest follows b, so the growth has to move. */
	c = step(&sr, "grow it to twice its size (MREMAP_MAYMOVE)", b, test_size,
		 2 * test_size, MREMAP_MAYMOVE, NULL);
	if (!c || !verify("grown mapping", c, test_size, c == b ? NULL : b,
			  test_size))
		goto out;
	bad = -1;
	for (size_t k = test_size / 8; k < 2 * test_size / 8; k++)
		if (((uint64_t *)c)[k]) {
			bad = (long)k;
			break;
		}
	if (bad >= 0) {
		printf("FAIL  grown mapping: the new %zu MiB are not zero (word %ld)\n",
		       test_size / MIB, bad);
		goto out;
	}
	printf("ok    grown mapping: the new %zu MiB read as zero\n", test_size / MIB);
	munmap(c, 2 * test_size);
	if (batch_step(&sr))
		goto out;
	ok = 1;
out:
	munmap(resv_a, test_size);
	munmap(resv_b, 2 * test_size + pmd_size);
	if (!ok) {
		printf("selftest FAILED\n");
		return EXIT_FAIL;
	}
	if (sr.module_steps == sr.steps) {
		printf("selftest passed: every move took the fast path (module)\n");
		return EXIT_OK;
	}
	printf("selftest passed through the mremap(2) fallback "
	       "(%d of %d moves): %s\n", sr.steps - sr.module_steps, sr.steps,
	       fastremap_strreason(sr.fallback_reason));
	advise(sr.fallback_errno);
	if (require) {
		printf("--require-module: the module was not used\n");
		return EXIT_NODEV;
	}
	return EXIT_OK;
}

static int cmd_bench(int argc, char **argv)
{
	if (argc > 1)
		return usage_error("bench: unexpected argument '%s'", argv[1]);
	printf("The benchmark runs from the fastremap source tree, as root:\n"
	       "\n"
	       "    sudo scripts/deps.sh && sudo make bench\n"
	       "\n"
	       "It builds the module and the benchmark programs, boots a Debian "
	       "kernel\nunder QEMU and compares fastremap with mremap(2) there; "
	       "see README.md.\n");
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	if (argc > 0 && argv[0] && *argv[0]) {
		const char *s = strrchr(argv[0], '/');

		prog = s ? s + 1 : argv[0];
	}
	if (argc < 2)
		return usage_error("%s", "missing command");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("fastremapctl %s\n", fastremap_version());
		return EXIT_OK;
	}
	for (int k = 2; k < argc; k++)
		if (!strcmp(argv[k], "-h") || !strcmp(argv[k], "--help")) {
			usage(stdout);
			return EXIT_OK;
		}
	if (!strcmp(argv[1], "info"))
		return cmd_info(argc - 1, argv + 1);
	if (!strcmp(argv[1], "selftest"))
		return cmd_selftest(argc - 1, argv + 1);
	if (!strcmp(argv[1], "bench"))
		return cmd_bench(argc - 1, argv + 1);
	return usage_error("unknown command '%s'", argv[1]);
}
