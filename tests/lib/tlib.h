/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The test library (build/lib/libtest.a), declarations only: TAP output;
 * FASTREMAP_IOC_REMAP with a no-device mode that calls mremap(2) instead,
 * so that the tests' own checks can be exercised on a host without the
 * module; a seeded pattern and page tags; aligned placement;
 * /proc/self/maps and smaps readers; a guarded page probe; a TLB flush
 * counter; FASTREMAP_IOC_MOVE with a model of the moved heap and a checker
 * of it; UFFDIO_MOVE's definitions.
 *
 * Page, PMD and PUD sizes are the running kernel's, read before main()
 * (x86-64: 4 KiB pages; arm64: 4 KiB or 16 KiB, as Debian builds it). Not
 * thread-safe except where a function says otherwise.
 */
#ifndef T_LIB_H
#define T_LIB_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before including tlib.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/fastremap.h>

/* ---------------------------------------------------------------------- */
/*
 * TAP output in the kselftest style: "ok N - name" or "not ok N - name",
 * "# " diagnostics, "1..N" at the end, and a closing
 * "# N passed, N failed, N skipped" line. Thread-safe, so that workers may
 * report from their own threads.
 */

/* The counts so far (read them under no lock only from a single thread). */
extern int tap_n, tap_pass, tap_fail;

int __attribute__((format(printf, 2, 3)))
tap_ok(int ok, const char *fmt, ...);

void __attribute__((format(printf, 2, 3)))
tap_skip_test(const char *why, const char *fmt, ...);

void __attribute__((format(printf, 1, 2)))
tap_diag(const char *fmt, ...);

/*
 * Checks that a call failed (returned ret, -1) with the expected errno
 * (errno as the call left it), and says what it got.
 */
int __attribute__((format(printf, 3, 4)))
tap_errno(long ret, int want, const char *fmt, ...);

int tap_done(void);

#ifndef MREMAP_MAYMOVE
#define MREMAP_MAYMOVE		1
#endif
#ifndef MREMAP_FIXED
#define MREMAP_FIXED		2
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE	0x100000
#endif
/* madvise(2) advice newer than some C libraries' headers. */
#ifndef MADV_FREE
#define MADV_FREE		8
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT		21
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE		25
#endif

/*
 * The running kernel's page-table geometry, set by the library before
 * main() runs (geom.c): the base page (sysconf(_SC_PAGESIZE)); what one
 * PMD entry maps (transparent_hugepage/hpage_pmd_size, else a page table's
 * span); what one PUD entry maps; the entries of one page table; arm64's
 * contiguous-PTE block (CONT_PTE_SIZE: 64 KiB with 4 KiB pages, 2 MiB
 * with 16 KiB ones; 0 on x86-64). 4 KiB, 2 MiB, 1 GiB and 512 on x86-64.
 * Not constants: no static initialiser, array size or case label may use
 * them.
 */
extern size_t t_page_size, t_pmd_size, t_pud_size, t_table_entries;
extern size_t t_cont_size;

/*
 * The smallest and the largest base page a kernel of the tests'
 * architectures may have: static arrays of pages are sized by the first,
 * of a page's bytes by the second.
 */
#define T_PAGE_MIN	(4UL << 10)
#define T_PAGE_MAX	(64UL << 10)

#define PG		t_page_size
#define PMD_SZ		t_pmd_size
#define PUD_SZ		t_pud_size
#define PT_ENTRIES	t_table_entries
#define CONT_SZ		t_cont_size
#define PAGE_WORDS	(PG / sizeof(uint64_t))

/*
 * A size or an offset written for 4 KiB pages (2 MiB PMDs, 1 GiB PUDs),
 * at this kernel's geometry: its whole PUDs, then whole PMDs, then whole
 * pages, then bytes become as many of this kernel's. The same value with
 * 4 KiB pages; with 16 KiB ones 1 GiB becomes 64 GiB (a PUD), 4 MiB 64 MiB
 * (two PMDs), 1 MiB 4 MiB (256 pages), 8 KiB + 8 32 KiB + 8.
 */
size_t t_geo(size_t v4k);

/* Plain amounts of memory (not a page or a table's span). */
#define SZ_4K		(4UL << 10)
#define SZ_8K		(8UL << 10)
#define SZ_1M		(1UL << 20)
#define SZ_2M		(2UL << 20)
#define SZ_4M		(4UL << 20)
#define SZ_1G		(1UL << 30)

/*
 * The end of the user address space, as mremap(2) checks it (TASK_SIZE),
 * probed once before main(): x86-64's 128 TiB less a page, or 64 PiB less
 * a page where the kernel pages with 5 levels (any size up to that is a
 * valid mremap(2) length there, and a FIXED target of that size unmaps
 * the program); arm64's 1 << VA_BITS (256 TiB, 4 PiB with 52 bits, 128
 * TiB with 16 KiB pages' 47).
 */
extern size_t t_task_size;
#define T_TASK_SIZE	t_task_size

/* Whether a page at @p maps, or is taken (EEXIST): user address space. */
int t_user_page(uintptr_t p);

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define T_ALIGN_UP(x, a)	(((x) + (a) - 1) & ~((uintptr_t)(a) - 1))
#define T_NO_COUNT	(~0ULL)	/* counters in no-device mode */

/* ---------------------------------------------------------------------- */
/* The ioctl, or mremap(2) in no-device mode                                */

/*
 * Whether in no-device mode: FASTREMAP_TEST_NO_DEVICE=1 in the environment,
 * or --selftest-mremap on the command line (see t_parse_args()). t_remap()
 * then calls the mremap syscall and reports every counter as T_NO_COUNT,
 * and the tests skip the checks that need the module (counters, ABI).
 */
int t_nodev(void);

/* Removes --selftest-mremap from argv (switching to no-device mode). */
void t_parse_args(int *argc, char **argv);

/* Opens the device; in no-device mode, /dev/null stands in for it. */
int t_open(void);

/* A test's start: t_parse_args(), t_open(), said. The device, or -1. */
int t_open_args(int *argc, char **argv);

/*
 * The start of a test of two CPUs racing: t_parse_args(), t_open(), and
 * a skip of what without a second CPU. The device, or -1: the test ends.
 */
int t_open_smp(int *argc, char **argv, const char *what);

/*
 * fork(2) without the C library (no atfork handlers, no locks of its
 * own). arm64 has no fork system call: clone(SIGCHLD) is fork on every
 * architecture, and with the other arguments zero their order (which
 * differs) does not matter.
 */
pid_t t_raw_fork(void);

/* The raw mremap syscall: all five arguments passed as given. */
void *t_mremap(void *old, size_t old_size, size_t new_size,
	       unsigned int flags, void *new_addr);

void t_req_init(struct fastremap_remap *r, void *old,
		size_t old_size, size_t new_size,
		unsigned int flags, void *new_addr);

/*
 * FASTREMAP_IOC_REMAP with the arguments of mremap(2). Returns the new
 * address, or MAP_FAILED with errno set. *out (may be NULL) receives the
 * structure as the module left it.
 */
void *t_remap(int fd, void *old, size_t old_size,
	      size_t new_size, unsigned int flags, void *new_addr,
	      struct fastremap_remap *out);

/*
 * The most TLB flushes the module may issue for a move of len bytes: one
 * per pass, and a pass covers at least 2^18 pages (pgmove.c's FR_PASS_BUDGET:
 * 2^18 PTEs, or as many whole entries).
 */
uint64_t t_max_flushes(size_t len);

/* Whether the counters of a t_remap() result mean anything. */
int t_counted(const struct fastremap_remap *r);

/* FASTREMAP_IOC_INFO; in no-device mode, a zeroed answer. */
int t_info(int fd, struct fastremap_info *i);

/* ---------------------------------------------------------------------- */
/* Seeded pattern                                                          */

uint64_t t_mix64(uint64_t x);

uint64_t t_xorshift64(uint64_t *s);

/*
 * The pattern of page pgidx of a region: an xorshift64 stream started
 * from (seed, pgidx), so that any page can be checked on its own.
 */
uint64_t t_page_state(uint64_t seed, uint64_t pgidx);

void t_pattern_page(uint64_t *w, uint64_t seed, uint64_t pgidx);

/* Fills [p, p+len) (len a multiple of PG) as pages first_pg... of a region. */
void t_fill_pattern_off(void *p, size_t len, uint64_t seed,
			uint64_t first_pg);

void t_fill_pattern(void *p, size_t len, uint64_t seed);

/* Returns the offset of the first bad word of the page, or -1. */
long t_check_page(const void *p, uint64_t seed, uint64_t pgidx);

/*
 * Checks [p, p+len) against the pattern of pages first_pg... . With
 * sample_step <= PG every page is checked; otherwise the pages at offsets
 * 0, step, 2*step... and the last page. Returns the first bad offset or -1.
 */
long t_verify_pattern_off(const void *p, size_t len, uint64_t seed,
			  uint64_t first_pg, size_t sample_step);

long t_verify_pattern(const void *p, size_t len, uint64_t seed,
		      size_t sample_step);

/* Checks that sampled pages of [p, p+len) read zero; as t_verify_pattern(). */
long t_verify_zero(const void *p, size_t len, size_t sample_step);

/*
 * Sparse touching, for regions too big to fill under emulation: one page
 * per chunk (chunk a multiple of PG) gets the pattern; which page of the
 * chunk is derived from the seed. These helpers say which one.
 */
size_t t_sparse_page(size_t len, uint64_t seed, size_t chunk,
		     size_t k);

/* Writes the pattern into one page per chunk; returns the pages touched. */
size_t t_touch_sparse(void *p, size_t len, uint64_t seed,
		      size_t chunk);

/*
 * Checks the pages t_touch_sparse() wrote and, with check_zero, that another
 * page of each chunk reads zero. Returns the first bad offset or -1.
 */
long t_verify_sparse(const void *p, size_t len, uint64_t seed,
		     size_t chunk, int check_zero);

/* ---------------------------------------------------------------------- */
/* Placement                                                               */

/* A PROT_NONE reservation of address space. */
struct t_area {
	char *base;
	size_t len;
};

char *t_reserve(size_t len, struct t_area *a);

/* Unmaps the whole reservation and whatever was put inside it. */
void t_release(struct t_area *a);

/*
 * Reserves room for len bytes and returns an address inside the
 * reservation that is aligned to align but not to 2*align (as the
 * kernel's mremap_test does, to avoid coincidental larger alignment),
 * with at least a page of reservation on both sides.
 */
char *t_pick(size_t len, size_t align, struct t_area *a);

/*
 * Maps len bytes at an address aligned as t_pick() says, with the given
 * mmap prot/flags/fd/offset (MAP_FIXED is added), inside a reservation
 * that t_release() frees. Returns NULL on failure.
 */
void *t_map_aligned(size_t len, size_t align, int prot, int flags,
		    int fd, off_t off, struct t_area *a);

/* ---------------------------------------------------------------------- */
/* /proc/self/maps and smaps                                               */

struct t_map {
	uintptr_t start, end;
	char perms[5];
	uint64_t off;		/* file offset (pgoff << 12) at start */
	unsigned long inode;
	char path[96];
};

/* One read of /proc/self/maps (t_maps_snapshot()), kept until the next. */
#define T_MAPS_BUF_SIZE	(1 << 20)
extern char t_maps_buf[T_MAPS_BUF_SIZE];
extern size_t t_maps_len;

int t_maps_snapshot(void);

/*
 * The entries of the last snapshot that intersect [lo, hi), clipped to it
 * (a file mapping's off follows the clipping). Returns the number of entries found, which
 * may exceed max (only max are stored).
 */
int t_maps_parse(uintptr_t lo, uintptr_t hi, struct t_map *out,
		 int max);

/* Snapshot + parse. Returns the number of entries, or -1. */
int t_maps_read(uintptr_t lo, uintptr_t hi, struct t_map *out,
		int max);

/* Whether no mapping at all intersects [p, p+len). */
int t_range_unmapped(const void *p, size_t len);

/*
 * Whether [p, p+len) is covered without holes by mappings with permissions
 * perms ("rw-p"...); VMA boundaries inside do not matter.
 */
int t_range_mapped_as(const void *p, size_t len, const char *perms);

struct t_smaps {
	long rss_kb;
	long anon_huge_kb;
	long swap_kb;
	long locked_kb;
	int vmas;
};

/*
 * Sums Rss, AnonHugePages, Swap and Locked (kB) over the VMAs intersecting
 * each range [r[i].lo, r[i].hi), into out[i], with one read of smaps.
 */
struct t_range {
	uintptr_t lo, hi;
};

int t_smaps_ranges(const struct t_range *r, int n, struct t_smaps *out);

int t_smaps_range(uintptr_t lo, uintptr_t hi, struct t_smaps *out);

/* A VMA as smaps shows it, with its VmFlags ("rd wr mr mw me ac"). */
struct t_vma {
	uintptr_t start, end;	/* clipped to the range asked for */
	char perms[5];
	char flags[120];
};

/*
 * The VMAs intersecting [lo, hi), clipped to it, with their VmFlags, from
 * one read of /proc/self/smaps into a static buffer: nothing is allocated
 * or mapped, so VmSize and Committed_AS read around it stay as they were.
 * Returns the number of VMAs (which may exceed max: only max are
 * stored), or -1.
 */
int t_vmas_read(uintptr_t lo, uintptr_t hi, struct t_vma *out, int max);

/* ---------------------------------------------------------------------- */
/* Guarded access: a fault (SIGSEGV, SIGBUS) becomes a return value        */

/* The probes' jump buffer, and whether a fault goes there (per thread). */
extern __thread sigjmp_buf t_probe_env;
extern __thread volatile int t_probe_armed;

/* Installs the handlers; call once before using the probes, from any thread. */
void t_probe_init(void);

/* Reads the 64-bit word at p into *v: 0, or -1 if the access faulted. */
int t_probe_read(const void *p, uint64_t *v);

/* Copies a page from p to buf: 0, or -1 if reading faulted. */
int t_probe_copy_page(void *buf, const void *p);

/* Compares a page at a and b: 0 equal, 1 different, -1 if reading faulted. */
int t_probe_cmp_page(const void *a, const void *b);

/* Copies a page from buf to p: 0, or -1 if writing faulted. */
int t_probe_write_page(void *p, const void *buf);

/* ---------------------------------------------------------------------- */
/* TLB flush counting: tlb:tlb_flush (x86-64), kprobe events (arm64)      */

#define T_TLB_REASONS 8

struct t_tlb_counts {
	int total;		/* events counted (this process's, or all_pids) */
	int other;		/* events of other processes (not counted) */
	long lost;		/* events the ring buffer dropped: total is then low */
	int nreasons;
	struct {
		char reason[48];
		int count;
	} r[T_TLB_REASONS];
	/*
	 * What the counted flushes covered. x86: the most pages one event
	 * named ("pages:N"), and how many named all (a full flush, -1).
	 * arm64: the lowest start and the highest end the module's flush was
	 * called with (its kprobe's fetch arguments), 0 and 0 if never.
	 */
	long max_pages;
	int full_flushes;
	unsigned long mod_start, mod_end;
};

/*
 * arm64 counts flushes with kprobe events (tlb.c): on the module's flush
 * and on mm/mremap.c's movers that end in one range flush each.
 */
#define T_FLUSH_MODULE_FN	"fr_arch_flush_moved"
#define T_FLUSH_NKFNS		4
extern const char *const t_flush_kfns[T_FLUSH_NKFNS];

/* The tracefs directory with the flush event (or kprobe events), or NULL. */
const char *t_tracefs(void);

/* Writes val to dir/name, opened with flags (O_TRUNC, O_APPEND). 0 or -errno. */
int t_write_file(const char *dir, const char *name, const char *val, int flags);

/* Writes val to the file at path (sysfs, procfs, tracefs). 0 or -errno. */
int t_write_str(const char *path, const char *val);

/* Reads the file at path into buf, without trailing blanks. 0 or -1. */
int t_read_str(const char *path, char *buf, size_t n);

/* The module's parameters (test builds' hooks and counters among them). */
#define T_PARAMS	"/sys/module/fastremap/parameters/"

/* The module parameter @name as a number, or -1 where it is absent. */
long t_param(const char *name);

/* Whether the kernel's log buffer holds @text (read as root). */
int t_kernel_log_has(const char *text);

/*
 * The PID of a line of tracefs's trace, "  comm-PID  [CPU] flags  ts:
 * event: ...", or -1; *at: where its " [CPU]" starts (NULL if nowhere).
 */
long t_trace_pid(const char *line, const char **at);

/* The count of one reason ("local mm shootdown"...), by prefix, any case. */
int t_tlb_reason(const struct t_tlb_counts *c, const char *reason);

/*
 * A reason as a short key for reports: "local_mm" for "local mm
 * shootdown" and so on; any other lowercased, blanks and ",;=" as "_"
 * (into buf, of size).
 */
const char *t_tlb_reason_key(const char *reason, char *buf, size_t size);

/* A session's options; all 0 (or NULL for them) is what the tests use. */
struct t_tlb_opts {
	/*
	 * Count every event read, whatever its process; else only this
	 * process's (the others in t_tlb_counts.other).
	 */
	int all_pids;
	/* Record only this process and its threads (set_event_pid, event-fork). */
	int pid_filter;
	int buf_kb;		/* buffer_size_kb for the session, or 0 */
	int mount;		/* mount tracefs if it is not (natively) */
	/* arm64: the kprobes armed only between count_start and count_stop. */
	int arm_per_count;
};

/*
 * Starts a session of counts, each between t_tlb_count_start() and
 * t_tlb_count_stop() (or a t_tlb_trace_count()); t_tlb_trace_end() ends
 * it and puts back what it changed (tracing_on, record-cmd, the buffer's
 * size, event-fork). Recording is paused but inside t_tlb_on()..off().
 * The test VMs enable the tlb:tlb_flush event on the kernel command line,
 * and then it is left alone: turning a tracepoint on or off patches kernel
 * text under every CPU, which on 7.2 under QEMU TCG can end in "Oops:
 * int3" (see tests/harness/run.sh). Without that, the event is enabled
 * here (with record-cmd off first, or enabling it would hook sched_switch
 * too) and disabled by t_tlb_trace_end(). 0 or -errno (-ENOENT: no tracefs
 * or no such event), and then t_tlb_trace_why() tells what failed.
 */
int t_tlb_trace_begin(const struct t_tlb_opts *opts);
void t_tlb_trace_end(void);
const char *t_tlb_trace_why(void);

/* What the counts are made of, for the tests' diagnostics. */
const char *t_tlb_trace_source(void);

/* arm64: whether t_tlb_trace_begin() could probe the kernel function @fn. */
int t_tlb_probed(const char *fn);

/* Opens a count: clears the trace buffer (and arms). 0 or -errno. */
int t_tlb_count_start(void);

/*
 * Recording on and off inside a count (one write to an open tracing_on,
 * nothing outside a count): around the calls to count only. A failed
 * write ends the count without a result.
 */
void t_tlb_on(void);
void t_tlb_off(void);

/*
 * Closes a count: reads the trace buffer and counts the flush events
 * ("tlb_flush: pages:N reason:R (n)" lines on x86, one reason each; on
 * arm64 a probe's hit, the function its reason) by reason, and the lost
 * ones. 0, or -errno (-EIO: recording could not be switched).
 */
int t_tlb_count_stop(struct t_tlb_counts *out);

/* Closes a count without reading it (the calls counted failed). */
void t_tlb_count_cancel(void);

/*
 * One count around fn(arg), in the session or in one of the defaults
 * made for the call. Returns 0, or -errno. Not for concurrent use.
 */
int t_tlb_trace_count(void (*fn)(void *), void *arg,
		      struct t_tlb_counts *out);

/* ---------------------------------------------------------------------- */
/* Misc                                                                    */

/* A "Key: N" field of a /proc file, read without allocating; -1 if absent. */
long t_proc_field(const char *path, const char *key);

/*
 * MAP_NORESERVE for a private writable mapping of len bytes larger than
 * the machine's memory, which the default overcommit heuristic refuses
 * (PUD-sized moves: 64 GiB with 16 KiB pages); else 0, the mapping
 * accounted as the tests' others are.
 */
int t_noreserve(size_t len);

/* Whether the running kernel is maj.min or later; unknown if it cannot tell. */
int t_kernel_since(int maj, int min, int unknown);

/* Pins the calling thread to one CPU: 0, or -1 with errno. */
int t_pin_cpu(int cpu);

/* CLOCK_MONOTONIC in seconds. */
double t_now(void);

const char *t_errname(int e);

/* "MAYMOVE|FIXED|0x8" for diagnostics; returns a static buffer. */
const char *t_flagstr(unsigned int f);

/* ---------------------------------------------------------------------- */
/* Process-wide accounting, which a failed move must leave as it was        */

struct t_acct {
	long committed_kb;	/* Committed_AS, exact (see t_committed_kb()) */
	long vmlck_kb;		/* VmLck: mm->locked_vm */
	struct t_smaps sm;	/* Rss, AnonHugePages, Swap, Locked over the ranges given */
};

/*
 * Reads every counter of *a, the smaps ones summed over the VMAs that
 * intersect [lo, hi) (the whole process would count the caller's own first
 * touches of its stack and data too); 0, or -1 if one could not be read.
 */
int t_acct_read(struct t_acct *a, uintptr_t lo, uintptr_t hi);
/*
 * Committed_AS (kB) to the page, folded in by a moment of overcommit
 * policy "never" (root only; -1 otherwise). Reads without allocating.
 */
long t_committed_kb(void);


/* Describes the first difference between two readings into buf; 0 if none. */
int t_acct_diff(const struct t_acct *a, const struct t_acct *b,
		char *buf, size_t n);

/* ---------------------------------------------------------------------- */
/* Swap                                                                    */

/* Swap, if there is none, on a 256 MiB zram device: "" or why not. */
const char *t_swap_setup(void);

/* Turns off the swap t_swap_setup() turned on, if any. */
void t_swap_off(void);

/* ---------------------------------------------------------------------- */
/*
 * FASTREMAP_IOC_MOVE: the ioctl, a heap whose pages
 * carry tags (a tag names the page's original place, so a page found
 * anywhere says where it came from), a model of what a batch does, and a
 * checker of every page against the model through /proc/self/pagemap
 * (holes are checked without touching them: reading one would map the
 * zero page there).
 */
#define PM_PRESENT	(1ULL << 63)
#define PM_SWAP		(1ULL << 62)
#define PM_SOFT_DIRTY	(1ULL << 55)
#define PM_PFN(x)	((x) & ((1ULL << 55) - 1))

/*
 * Pages of [p, p+len) that pagemap shows present and soft-dirty (their
 * count of present ones in *present); -1 on error.
 */
long t_soft_dirty_pages(const void *p, size_t len, long *present);

/* Clears the soft-dirty bits of this process (clear_refs 4). */
int t_clear_soft_dirty(void);

/* A page's tag: nonzero, and unlike any pattern a fresh page holds. */
uint64_t t_tag(uint64_t seed, size_t pg);

/*
 * FASTREMAP_IOC_MOVE. Returns 0 or -1 with errno; *out (may be NULL)
 * receives the structure as the module left it.
 */
int t_move(int fd, const struct fastremap_move_vec *v,
	   uint32_t n, uint32_t flags, struct fastremap_move *out);

/* Writes a page's tag into its first and last words. */
void t_tag_fill(char *p, uint64_t tag);

/* Tags the pages of [p, p + len) as pages first... of the tags of seed. */
void t_tags_write(char *p, size_t len, uint64_t seed, uint64_t first);

/* Whether [p, p + len) holds what t_tags_write() wrote: 0, or -1. */
int t_tags_check(const char *p, size_t len, uint64_t seed, uint64_t first);

/*
 * The model: tags[i] is what page i of the heap holds, 0 for a hole
 * (nothing mapped), MV_ZERO for the shared zero page.
 */
#define MV_ZERO	2ULL

/*
 * Building a batch of valid moves against a working copy of the model
 * (work[]) and the pages its moves already use as sources and as
 * destinations: whether len pages from s may move to d (disjoint, the
 * pages unused, an empty destination, a source with data unless holes);
 * and the move added to the batch at *v, the working copy updated.
 */
int t_mv_fits(const uint64_t *work, const uint8_t *used_src, const uint8_t *used_dst,
	      size_t s, size_t d, size_t len, int holes);
void t_mv_add(struct fastremap_move_vec *v, char *heap, uint64_t *work, uint8_t *used_src,
	      uint8_t *used_dst, size_t s, size_t d, size_t len);

/* Applies moves [0, done) and done_bytes of moves[done] to the model. */
void t_mv_model(uint64_t *tags, uintptr_t base,
		const struct fastremap_move_vec *v, uint32_t n,
		uint64_t done, uint64_t done_bytes);

extern int t_pagemap_fd;

/* The pagemap entries of npages pages from p. */
int t_pagemap(const void *p, size_t npages, uint64_t *out);

/*
 * Checks every page of the heap against the model: a hole is neither
 * present nor swapped; a tagged page holds its tag (swapped pages are
 * read, which faults them back); the zero page reads zero. Returns the
 * index of the first wrong page, or -1; *why says what was wrong.
 */
long t_mv_verify(const char *base, size_t npages,
		 const uint64_t *tags, const char **why);

#define MV_PASS	T_PARAMS "move_pass_pages"

/*
 * Sets the test build's FASTREMAP_IOC_MOVE pass to @pages pages (0: the
 * built-in bound), so that small batches run in many passes as batches
 * past the bound do. 0 or -1 (a module without test hooks).
 */
int t_mv_set_pass(unsigned long pages);

#define MV_KHP	"/sys/kernel/mm/transparent_hugepage/khugepaged/"

/*
 * A collapse (khugepaged's, or MADV_COLLAPSE) fills the holes of the PMD
 * range it collapses with zeroed subpages, up to max_ptes_none of them
 * (511 by default): a model of a THP heap with holes sees that as "a hole
 * is mapped" and the next move into the hole as EEXIST, both right for a
 * populated destination (debug7, t_stress 10). A test of such a heap runs
 * with max_ptes_none 0, so khugepaged still collapses the fully populated
 * ranges behind the moves but never maps a hole; 1 restores the value.
 * Collapses before and after are counted by t_mv_collapsed() for the report.
 */
void t_mv_holes_kept(int restore);

/* khugepaged's collapses so far, -1 without its sysfs. */
long t_mv_collapsed(void);

/*
 * The mappings over [p, p + len), one "start-end perms offset" line each,
 * for a before/after comparison (malloc'ed; NULL on failure).
 */
char *t_maps_range(const void *p, size_t len);

/*
 * UFFDIO_MOVE (6.8+), which t_move_uffd compares with and t_move_order
 * races against: Debian 12's headers predate it (the kernels under test
 * have it). UFFD_USER_MODE_ONLY (5.11) for the same reason.
 */
#include <linux/userfaultfd.h>
#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE			(1 << 16)
#define _UFFDIO_MOVE				(0x05)
#define UFFDIO_MOVE_MODE_DONTWAKE		((__u64)1 << 0)
#define UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES	((__u64)1 << 1)
struct uffdio_move {
	__u64 dst;
	__u64 src;
	__u64 len;
	__u64 mode;
	__s64 move;
};
#define UFFDIO_MOVE	_IOWR(UFFDIO, _UFFDIO_MOVE, struct uffdio_move)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY			1
#endif

/*
 * Whether the module moves pages (FASTREMAP_FEAT_MOVE; not on kernels
 * without folios, 5.10). If not, reports that INFO and the ioctl agree
 * (ENOTTY), and one SKIP "FASTREMAP_IOC_MOVE's cases" for the rest.
 */
int t_move_supported(int fd);

/*
 * The device, opened read-write for a MOVE program: its descriptor, or
 * -1 once a failed open is reported (not ok) or t_move_supported() said
 * no (the program then ends with tap_done()).
 */
int t_open_mover(void);

/* Whether the running kernel has UFFDIO_MOVE (6.1 refuses the feature). */
int t_have_uffd_move(void);

#endif /* T_LIB_H */
