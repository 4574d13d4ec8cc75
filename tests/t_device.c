// SPDX-License-Identifier: GPL-2.0
/*
 * The device and its handshake: node, permissions, FASTREMAP_IOC_INFO and
 * its error paths, concurrency. Runs as root inside the test VM with the
 * module loaded.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/fastremap.h>
#include "../module/ibt.h"
#include "tlib.h"

#define KNOWN_FEATURES (FASTREMAP_FEAT_PER_VMA_LOCK | FASTREMAP_FEAT_THP | \
			FASTREMAP_FEAT_MOVE_PUD | FASTREMAP_FEAT_MOVE | \
			FASTREMAP_FEAT_POS_COOKIE | FASTREMAP_FEAT_REMAP_PINNED | \
			FASTREMAP_FEAT_MREMAP_PUD)

static int fd = -1;

static void test_node(void)
{
	struct stat st;

	tap_ok(access("/sys/module/fastremap", F_OK) == 0, "module is loaded");
	if (!tap_ok(stat(FASTREMAP_DEVICE, &st) == 0, "device node exists"))
		return;
	tap_ok(S_ISCHR(st.st_mode), "device node is a character device");
	tap_ok((st.st_mode & 07777) == 0600,
	       "device node mode is 0600 (got %04o)", st.st_mode & 07777);
	tap_ok(st.st_uid == 0 && st.st_gid == 0,
	       "device node owned by root:root (got %u:%u)", st.st_uid,
	       st.st_gid);
}

/* The bytes at a kernel address, from /proc/kcore; 0 on success. */
static int kcore_read(unsigned long addr, unsigned char *buf, size_t len)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open("/proc/kcore", O_RDONLY | O_CLOEXEC), ret = -1;

	if (fd < 0)
		return -1;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh))
		goto out;
	for (int k = 0; k < eh.e_phnum; k++) {
		if (pread(fd, &ph, sizeof(ph), eh.e_phoff +
			  (off_t)k * eh.e_phentsize) != sizeof(ph))
			goto out;
		if (ph.p_type != PT_LOAD || addr < ph.p_vaddr ||
		    addr + len > ph.p_vaddr + ph.p_filesz)
			continue;
		if (pread(fd, buf, len, ph.p_offset + (addr - ph.p_vaddr)) ==
		    (ssize_t)len)
			ret = 0;
		break;
	}
out:
	close(fd);
	return ret;
}

/* A function's address from /proc/kallsyms; 0 if absent or hidden. */
static unsigned long kallsyms_addr(const char *name)
{
	char line[512], sym[256], type;
	unsigned long addr, found = 0;
	FILE *f = fopen("/proc/kallsyms", "r");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx %c %255s", &addr, &type, sym) == 3 &&
		    (type == 'T' || type == 't') && !strcmp(sym, name))
			found = addr;
	fclose(f);
	return found;
}

/*
 * The sysfs report: the load-time self-check passed, every function is
 * called directly, and each entry is reported as it is, which the test
 * reads itself from /proc/kcore. Debian 12's 6.1 has no kernel IBT: all
 * plain. The IBT kernels (6.12, 7.x) seal at boot, whatever the CPU: the
 * functions fastremap needs are never called through pointers there, so
 * none may be plain and at least one must be sealed.
 */
static void test_symbols(void)
{
	char buf[8192], name[128], entry[32], call[32];
	int funcs = 0, direct = 0, agree = 0, sealed = 0, plain = 0, data = 0;
	int pointer = 0, pads = 0;
	int unreadable = 0;
	struct utsname u;
	size_t n;
	FILE *f;
	int no_ibt, min_funcs = 18, dev;
	struct fastremap_info fi;

	/* Two fewer without FASTREMAP_IOC_MOVE (kernels without folios). */
	dev = open(FASTREMAP_DEVICE, O_RDONLY | O_CLOEXEC);
	if (dev >= 0 && !t_info(dev, &fi) && !(fi.features & FASTREMAP_FEAT_MOVE))
		min_funcs = 16;
	if (dev >= 0)
		close(dev);
	f = fopen("/sys/class/misc/fastremap/symbols", "r");
	n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	tap_diag("symbols:\n%s", buf);
	tap_ok(!strncmp(buf, "self-check passed: ", 19),
	       "sysfs: the load-time self-check of every call site passed");
	uname(&u);
	/* Kernel IBT came with 5.18; Debian's 6.1 is built without it. */
	no_ibt = !strncmp(u.release, "6.1.", 4) || !strncmp(u.release, "5.", 2);
	for (char *l = strchr(buf, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
		unsigned char insn[4];
		unsigned long addr;
		const char *truth;

		if (sscanf(l + 1, "%127s entry=%31s call=%31s", name, entry,
			   call) != 3)
			continue;
		if (!strcmp(entry, "data")) {
			data++;
			continue;
		}
		funcs++;
		direct += !strcmp(call, "direct");
		pointer += !strcmp(call, "pointer");
		pads += !strcmp(entry, "bti-c") || !strcmp(entry, "pacsp");
		sealed += !strcmp(entry, "sealed");
		plain += !strcmp(entry, "plain");
		addr = kallsyms_addr(name);
		if (!addr || kcore_read(addr, insn, sizeof(insn))) {
			unreadable++;
			continue;
		}
		truth = fr_entry_name(fr_entry_kind(insn));
		if (!strcmp(truth, entry))
			agree++;
		else
			tap_diag("%s: the module says %s, /proc/kcore shows %s (%02x %02x %02x %02x)",
				 name, entry, truth, insn[0], insn[1], insn[2],
				 insn[3]);
	}
#ifdef __aarch64__
	/*
	 * arm64 has no static calls in Debian's (gcc-built) kernels: each
	 * call goes through its key's pointer, which BTI checks at the
	 * target when the kernel is built with CONFIG_ARM64_BTI_KERNEL.
	 * Fewer functions: no P4D level, no internal range flush.
	 */
	tap_ok(funcs >= min_funcs - 3 && data == 3,
	       "sysfs lists the internal functions and data (%d functions, %d data)",
	       funcs, data);
	tap_ok(pointer == funcs,
	       "arm64: every internal function is called through its key, checked at load (%d of %d)",
	       pointer, funcs);
#else
	tap_ok(funcs >= min_funcs && data == 3,
	       "sysfs lists the internal functions and data (%d functions, %d data)",
	       funcs, data);
	tap_ok(direct == funcs, "every internal function is called directly (%d of %d)",
	       direct, funcs);
#endif
	if (unreadable)
		tap_skip_test("no /proc/kcore or kallsyms addresses",
			      "each reported entry matches the kernel's bytes");
	else
		tap_ok(agree == funcs,
		       "each reported entry matches the kernel's bytes (%d of %d)",
		       agree, funcs);
#ifdef __aarch64__
	/* The module reports whether the kernel was built for BTI. */
	if (strstr(buf, "all with a BTI landing pad"))
		tap_ok(plain == 0 && pads == funcs,
		       "arm64, kernel BTI: every entry a landing pad for a call (%d of %d)",
		       pads, funcs);
	else
		tap_ok(strstr(buf, "no BTI in this kernel") != NULL,
		       "arm64, no kernel BTI (CONFIG_ARM64_BTI_KERNEL off): nothing checks the entries (%d of %d are landing pads)",
		       pads, funcs);
	(void)no_ibt;
#else
	if (no_ibt)
		tap_ok(plain == funcs, "%s, no kernel IBT: every entry plain (%d of %d)",
		       u.release, plain, funcs);
	else
		tap_ok(plain == 0 && sealed > 0,
		       "%s, kernel IBT: entries sealed at boot (%d sealed, %d endbr, %d plain)",
		       u.release, sealed, funcs - sealed - plain, plain);
#endif
}

static void test_unprivileged(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int e;

		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(2);
		e = open(FASTREMAP_DEVICE, O_RDWR) < 0 ? errno : 0;
		_exit(e == EACCES ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "an unprivileged user cannot open the device (EACCES)");
}

static struct fastremap_info good_info(void)
{
	struct fastremap_info i;

	memset(&i, 0, sizeof(i));
	i.size = sizeof(i);
	return i;
}

static int thp_configured(void)
{
	return access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0;
}

static void test_info(void)
{
	struct fastremap_info i = good_info();
	int ret = ioctl(fd, FASTREMAP_IOC_INFO, &i);

	if (!tap_ok(ret == 0, "INFO succeeds (errno %s)", ret ? strerror(errno) : "-"))
		return;
	tap_ok(i.abi_version == FASTREMAP_ABI_VERSION, "INFO: ABI version %u",
	       i.abi_version);
	tap_ok(i.size == sizeof(i), "INFO: reports size %u", i.size);
	tap_ok(!(i.features & ~KNOWN_FEATURES),
	       "INFO: features %#llx are all known bits",
	       (unsigned long long)i.features);
	tap_ok(!!(i.features & FASTREMAP_FEAT_THP) == thp_configured(),
	       "INFO: THP feature bit matches the kernel's THP support");
	tap_ok(i.ioctls & (1ULL << _IOC_NR(FASTREMAP_IOC_INFO)),
	       "INFO: lists itself among the supported ioctls (%#llx)",
	       (unsigned long long)i.ioctls);
	tap_ok(i.flags == 0 && i.__pad0 == 0 && !i.reserved[0] &&
	       !i.reserved[1] && !i.reserved[2] && !i.reserved[3],
	       "INFO: output leaves no stray data in flags, padding, reserved");

	/* Outputs fed back as inputs are ignored: the struct can be reused. */
	tap_ok(ioctl(fd, FASTREMAP_IOC_INFO, &i) == 0,
	       "INFO accepts its own output back");
}

/*
 * FASTREMAP_FEAT_POS_COOKIE: each open has a random position in
 * [1, 2^62) that lseek(2) reports and nothing changes (libfastremap
 * trusts its descriptor by it).
 */
static void test_pos_cookie(void)
{
	struct fastremap_info i = good_info();
	off_t p = lseek(fd, 0, SEEK_CUR), q;
	int fd2, same = 1;

	tap_ok(ioctl(fd, FASTREMAP_IOC_INFO, &i) == 0 &&
	       (i.features & FASTREMAP_FEAT_POS_COOKIE), "INFO: FASTREMAP_FEAT_POS_COOKIE");
	tap_ok(p > 0 && (unsigned long long)p < (1ULL << 62),
	       "the position is a cookie in [1, 2^62) (%#llx)", (unsigned long long)p);
	same &= lseek(fd, 4096, SEEK_SET) == p;
	same &= lseek(fd, 1, SEEK_CUR) == p;
	same &= lseek(fd, 0, SEEK_END) == p;
	same &= ioctl(fd, FASTREMAP_IOC_INFO, &i) == 0;
	same &= lseek(fd, 0, SEEK_CUR) == p;
	tap_ok(same, "lseek(2) and ioctls leave the position as it was");
	fd2 = dup(fd);
	tap_ok(fd2 >= 0 && lseek(fd2, 0, SEEK_CUR) == p,
	       "a duplicate descriptor has the same position");
	if (fd2 >= 0)
		close(fd2);
	fd2 = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
	q = fd2 >= 0 ? lseek(fd2, 0, SEEK_CUR) : -1;
	tap_ok(q > 0 && q != p, "another open has a cookie of its own (%#llx)",
	       (unsigned long long)q);
	if (fd2 >= 0)
		close(fd2);
}

/* A caller built against a larger future struct, with a zero tail. */
static void test_info_sizes(void)
{
	struct {
		struct fastremap_info i;
		uint64_t future[4];
	} big;
	struct fastremap_info small = good_info();

	memset(&big, 0, sizeof(big));
	big.i.size = sizeof(big);
	tap_ok(ioctl(fd, FASTREMAP_IOC_INFO, &big) == 0 &&
	       big.i.size == sizeof(struct fastremap_info) &&
	       big.i.abi_version == FASTREMAP_ABI_VERSION,
	       "INFO: larger struct with zero tail accepted, size says what was written");

	big.i.size = sizeof(big);
	big.future[3] = 1;
	tap_errno(ioctl(fd, FASTREMAP_IOC_INFO, &big), EINVAL,
		  "INFO: larger struct with a non-zero unknown field -> EINVAL");

	small.size = FASTREMAP_INFO_SIZE_VER0;
	tap_ok(ioctl(fd, FASTREMAP_IOC_INFO, &small) == 0,
	       "INFO: the first published size is accepted");
}

struct bad_case {
	const char *name;
	void (*mutate)(struct fastremap_info *i);
	int want;
};

static void m_size0(struct fastremap_info *i) { i->size = 0; }
static void m_size_small(struct fastremap_info *i) { i->size = FASTREMAP_INFO_SIZE_VER0 - 8; }
static void m_size_huge(struct fastremap_info *i) { i->size = 1u << 20; }
static void m_size_max(struct fastremap_info *i) { i->size = UINT32_MAX; }
static void m_flags(struct fastremap_info *i) { i->flags = 1; }
static void m_flags_high(struct fastremap_info *i) { i->flags = 1u << 31; }
static void m_pad(struct fastremap_info *i) { i->__pad0 = 1; }
static void m_res0(struct fastremap_info *i) { i->reserved[0] = 1; }
static void m_res3(struct fastremap_info *i) { i->reserved[3] = 1ULL << 63; }

static const struct bad_case bad_cases[] = {
	{ "size 0", m_size0, EINVAL },
	{ "size below the first published size", m_size_small, EINVAL },
	{ "size above a page", m_size_huge, EINVAL },
	{ "size UINT32_MAX", m_size_max, EINVAL },
	{ "unknown flag bit 0", m_flags, EINVAL },
	{ "unknown flag bit 31", m_flags_high, EINVAL },
	{ "non-zero padding", m_pad, EINVAL },
	{ "non-zero reserved[0]", m_res0, EINVAL },
	{ "non-zero reserved[3]", m_res3, EINVAL },
};

static void test_bad_input(void)
{
	for (size_t k = 0; k < sizeof(bad_cases) / sizeof(bad_cases[0]); k++) {
		struct fastremap_info i = good_info(), before;

		bad_cases[k].mutate(&i);
		before = i;
		tap_errno(ioctl(fd, FASTREMAP_IOC_INFO, &i), bad_cases[k].want,
			  "INFO: %s -> %s", bad_cases[k].name,
			  t_errname(bad_cases[k].want));
		tap_ok(!memcmp(&i, &before, sizeof(i)),
		       "INFO: %s leaves the caller's struct untouched",
		       bad_cases[k].name);
	}
}

struct cmd_case {
	const char *name;
	unsigned long cmd;
};

static const struct cmd_case bad_cmds[] = {
	{ "unknown ioctl number", _IOWR(FASTREMAP_IOC_MAGIC, 0x7f, struct fastremap_info) },
	{ "another driver's magic", _IOWR('T', 0x00, struct fastremap_info) },
	{ "INFO number with no direction", _IO(FASTREMAP_IOC_MAGIC, 0x00) },
	{ "INFO number, read-only direction", _IOR(FASTREMAP_IOC_MAGIC, 0x00, struct fastremap_info) },
	{ "TCGETS on the device", 0x5401 },
};

static void test_bad_cmds(void)
{
	for (size_t k = 0; k < sizeof(bad_cmds) / sizeof(bad_cmds[0]); k++) {
		struct fastremap_info i = good_info();

		tap_errno(ioctl(fd, bad_cmds[k].cmd, &i), ENOTTY, "%s -> ENOTTY",
			  bad_cmds[k].name);
	}
}

static void test_bad_pointers(void)
{
	long page = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct fastremap_info *edge, *ro;

	tap_errno(ioctl(fd, FASTREMAP_IOC_INFO, NULL), EFAULT, "INFO: NULL -> EFAULT");
	tap_errno(ioctl(fd, FASTREMAP_IOC_INFO, (void *)-4096L), EFAULT,
		  "INFO: kernel address -> EFAULT");
	tap_errno(ioctl(fd, FASTREMAP_IOC_INFO, (void *)(uintptr_t)1), EFAULT,
		  "INFO: unmapped low address -> EFAULT");

	/* A struct whose tail runs into an unmapped page. */
	munmap(m + page, page);
	edge = (void *)(m + page - 16);
	memset(edge, 0, 16);
	edge->size = sizeof(*edge);
	tap_errno(ioctl(fd, FASTREMAP_IOC_INFO, edge), EFAULT,
		  "INFO: struct crossing into an unmapped page -> EFAULT");

	/* Valid input in read-only memory: the kernel cannot write the answer. */
	ro = (void *)m;
	*ro = good_info();
	mprotect(m, page, PROT_READ);
	tap_errno(ioctl(fd, FASTREMAP_IOC_INFO, ro), EFAULT,
		  "INFO: read-only struct -> EFAULT");
	tap_ok(ro->abi_version == 0, "INFO: read-only struct left unchanged");
	munmap(m, page);
}

#define THREADS 16
#define CALLS 2000

static void *info_worker(void *arg)
{
	long bad = 0;

	(void)arg;
	for (int k = 0; k < CALLS; k++) {
		struct fastremap_info i = good_info();

		if (ioctl(fd, FASTREMAP_IOC_INFO, &i) ||
		    i.abi_version != FASTREMAP_ABI_VERSION)
			bad++;
	}
	return (void *)bad;
}

static void test_threads(void)
{
	pthread_t t[THREADS];
	long bad = 0;

	for (int k = 0; k < THREADS; k++)
		pthread_create(&t[k], NULL, info_worker, NULL);
	for (int k = 0; k < THREADS; k++) {
		void *r;

		pthread_join(t[k], &r);
		bad += (long)r;
	}
	tap_ok(bad == 0, "%d threads x %d concurrent INFO calls all correct (%ld bad)",
	       THREADS, CALLS, bad);
}

int main(void)
{
	/* The geometry every program of this boot sizes its cases by (tlib.h). */
	tap_diag("page %zu KiB, PMD %zu MiB, PUD %zu GiB, %zu entries per table, contiguous-PTE block %zu KiB",
		 PG >> 10, PMD_SZ >> 20, PUD_SZ >> 30, PT_ENTRIES, CONT_SZ >> 10);
	test_node();
	test_symbols();
	fd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
	if (!tap_ok(fd >= 0, "root opens the device"))
		return tap_done();
	test_unprivileged();
	test_info();
	test_pos_cookie();
	test_info_sizes();
	test_bad_input();
	test_bad_cmds();
	test_bad_pointers();
	test_threads();
	close(fd);
	return tap_done();
}
