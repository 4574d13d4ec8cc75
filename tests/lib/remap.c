// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_REMAP (or mremap(2) in no-device mode), the seeded
 * pattern and placement (tlib.h).
 */
#define _GNU_SOURCE
#include "tlib.h"

static int t_no_device = -1;

int t_nodev(void)
{
	if (t_no_device < 0) {
		const char *e = getenv("FASTREMAP_TEST_NO_DEVICE");

		t_no_device = e && *e && strcmp(e, "0") != 0;
	}
	return t_no_device;
}

void t_parse_args(int *argc, char **argv)
{
	int j = 1;

	for (int i = 1; i < *argc; i++) {
		if (!strcmp(argv[i], "--selftest-mremap"))
			t_no_device = 1;
		else
			argv[j++] = argv[i];
	}
	*argc = j;
	argv[j] = NULL;
	t_nodev();
}

int t_open(void)
{
	if (t_nodev()) {
		tap_diag("NO-DEVICE MODE: t_remap() is mremap(2); counter and ABI checks are skipped");
		return open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	return open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
}

int t_open_args(int *argc, char **argv)
{
	int fd;

	t_parse_args(argc, argv);
	fd = t_open();
	return tap_ok(fd >= 0, "open the device") ? fd : -1;
}

int t_open_smp(int *argc, char **argv, const char *what)
{
	int fd = t_open_args(argc, argv);

	if (fd < 0)
		return -1;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		tap_skip_test("one CPU", "%s", what);
		close(fd);
		return -1;
	}
	return fd;
}

pid_t t_raw_fork(void)
{
	return syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
}

void *t_mremap(void *old, size_t old_size, size_t new_size,
	       unsigned int flags, void *new_addr)
{
	return (void *)syscall(SYS_mremap, old, old_size, new_size,
			       (unsigned long)flags, new_addr);
}

void t_req_init(struct fastremap_remap *r, void *old,
		size_t old_size, size_t new_size,
		unsigned int flags, void *new_addr)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	r->mremap_flags = flags;
	r->old_addr = (uintptr_t)old;
	r->old_size = old_size;
	r->new_size = new_size;
	r->new_addr = (uintptr_t)new_addr;
}

void *t_remap(int fd, void *old, size_t old_size,
	      size_t new_size, unsigned int flags, void *new_addr,
	      struct fastremap_remap *out)
{
	struct fastremap_remap r;
	void *p;
	int e;

	t_req_init(&r, old, old_size, new_size, flags, new_addr);
	if (t_nodev()) {
		p = t_mremap(old, old_size, new_size, flags, new_addr);
		e = errno;
		if (p != MAP_FAILED)
			r.new_addr = (uintptr_t)p;
		r.moved_pud = r.moved_pmd = r.moved_thp = r.moved_pte = T_NO_COUNT;
		r.tlb_flushes = T_NO_COUNT;
	} else {
		p = ioctl(fd, FASTREMAP_IOC_REMAP, &r) ? MAP_FAILED :
			(void *)(uintptr_t)r.new_addr;
		e = errno;
	}
	if (out)
		*out = r;
	errno = e;
	return p;
}

uint64_t t_max_flushes(size_t len)
{
	size_t pass = PG << 18;

	return len <= pass ? 1 : (len + pass - 1) / pass;
}

int t_counted(const struct fastremap_remap *r)
{
	return r->tlb_flushes != T_NO_COUNT;
}

int t_info(int fd, struct fastremap_info *i)
{
	memset(i, 0, sizeof(*i));
	i->size = sizeof(*i);
	if (t_nodev())
		return 0;
	return ioctl(fd, FASTREMAP_IOC_INFO, i);
}

uint64_t t_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t t_xorshift64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

uint64_t t_page_state(uint64_t seed, uint64_t pgidx)
{
	return t_mix64(seed ^ t_mix64(pgidx)) | 1;
}

void t_pattern_page(uint64_t *w, uint64_t seed, uint64_t pgidx)
{
	uint64_t s = t_page_state(seed, pgidx);

	for (size_t i = 0; i < PAGE_WORDS; i++)
		w[i] = t_xorshift64(&s);
}

void t_fill_pattern_off(void *p, size_t len, uint64_t seed,
			uint64_t first_pg)
{
	for (size_t off = 0; off < len; off += PG)
		t_pattern_page((uint64_t *)((char *)p + off), seed,
			     first_pg + off / PG);
}

void t_fill_pattern(void *p, size_t len, uint64_t seed)
{
	t_fill_pattern_off(p, len, seed, 0);
}

long t_check_page(const void *p, uint64_t seed, uint64_t pgidx)
{
	const volatile uint64_t *w = p;
	uint64_t s = t_page_state(seed, pgidx);

	for (size_t i = 0; i < PAGE_WORDS; i++)
		if (w[i] != t_xorshift64(&s))
			return i * sizeof(uint64_t);
	return -1;
}

long t_verify_pattern_off(const void *p, size_t len, uint64_t seed,
			  uint64_t first_pg, size_t sample_step)
{
	size_t step = sample_step <= PG ? PG : sample_step & ~(PG - 1);
	long bad;

	for (size_t off = 0; off < len; off += step) {
		bad = t_check_page((const char *)p + off, seed, first_pg + off / PG);
		if (bad >= 0)
			return off + bad;
	}
	if (len >= PG && step > PG) {
		size_t last = (len - 1) & ~(PG - 1);

		bad = t_check_page((const char *)p + last, seed, first_pg + last / PG);
		if (bad >= 0)
			return last + bad;
	}
	return -1;
}

long t_verify_pattern(const void *p, size_t len, uint64_t seed,
		      size_t sample_step)
{
	return t_verify_pattern_off(p, len, seed, 0, sample_step);
}

long t_verify_zero(const void *p, size_t len, size_t sample_step)
{
	size_t step = sample_step <= PG ? PG : sample_step & ~(PG - 1);

	for (size_t off = 0; off < len; off += step) {
		const volatile uint64_t *w = (const void *)((const char *)p + off);

		for (size_t i = 0; i < PAGE_WORDS; i++)
			if (w[i])
				return off + i * sizeof(uint64_t);
	}
	return -1;
}

size_t t_sparse_page(size_t len, uint64_t seed, size_t chunk,
		     size_t k)
{
	size_t per = chunk / PG, off = k * chunk;
	size_t pg = t_mix64(seed * 31 + k) % per;

	if (off + pg * PG >= len)	/* a short last chunk */
		pg = (len - off) / PG - 1;
	return off + pg * PG;
}

size_t t_touch_sparse(void *p, size_t len, uint64_t seed,
		      size_t chunk)
{
	size_t n = 0;

	for (size_t k = 0; k * chunk < len; k++, n++) {
		size_t off = t_sparse_page(len, seed, chunk, k);

		t_pattern_page((uint64_t *)((char *)p + off), seed, off / PG);
	}
	return n;
}

long t_verify_sparse(const void *p, size_t len, uint64_t seed,
		     size_t chunk, int check_zero)
{
	for (size_t k = 0; k * chunk < len; k++) {
		size_t off = t_sparse_page(len, seed, chunk, k);
		size_t z = off + PG < len && off + PG < (k + 1) * chunk ?
			   off + PG : k * chunk;
		long bad = t_check_page((const char *)p + off, seed, off / PG);

		if (bad >= 0)
			return off + bad;
		if (check_zero && z != off && t_verify_zero((const char *)p + z, PG, 0) >= 0)
			return z;
	}
	return -1;
}

char *t_reserve(size_t len, struct t_area *a)
{
	a->len = len;
	a->base = mmap(NULL, len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a->base == MAP_FAILED) {
		a->base = NULL;
		return NULL;
	}
	return a->base;
}

void t_release(struct t_area *a)
{
	if (a->base)
		munmap(a->base, a->len);
	a->base = NULL;
}

char *t_pick(size_t len, size_t align, struct t_area *a)
{
	uintptr_t p;

	if (!t_reserve(len + 2 * align + 2 * PG, a))
		return NULL;
	p = T_ALIGN_UP((uintptr_t)a->base + PG, align);
	if (!(p & align))
		p += align;
	return (char *)p;
}

void *t_map_aligned(size_t len, size_t align, int prot, int flags,
		    int fd, off_t off, struct t_area *a)
{
	char *p = t_pick(len, align, a), *m;

	if (!p)
		return NULL;
	m = mmap(p, len, prot, flags | MAP_FIXED, fd, off);
	if (m == MAP_FAILED) {
		int e = errno;

		t_release(a);
		errno = e;
		return NULL;
	}
	return m;
}
