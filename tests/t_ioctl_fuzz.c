// SPDX-License-Identifier: GPL-2.0
/*
 * Hostile input to /dev/fastremap: random command numbers, structure
 * sizes, flags, reserved fields and pointers (NULL, kernel addresses,
 * unmapped, read-only, misaligned, straddling a page end), and remap
 * arguments aimed at a sentinel mapping. Every call must end with 0 or an
 * errno; the sentinel's contents and mapping must never change unless a
 * call succeeded on it; answers must carry no stray data. A second phase
 * closes the file while other threads are inside ioctls on it. The
 * harness fails the run on any kernel-log splat.
 *
 * Usage: t_ioctl_fuzz [SEED] (fixed seed by default; printed).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/fastremap.h>
#include "tap.h"

#define CALLS		20000
#define SENTINEL_LEN	(4UL << 20)

static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static char *sentinel, *ro_page, *edge_page;
static long page;

/* A checksum of the sentinel's bytes, faulting them in where mapped. */
static uint64_t sentinel_sum(void)
{
	uint64_t s = 0;

	for (size_t i = 0; i < SENTINEL_LEN; i += 512)
		s = s * 31 + *(volatile uint64_t *)(sentinel + i);
	return s;
}

/* Addresses a hostile caller might pass, in and around our mappings. */
static uint64_t hostile_addr(void)
{
	switch (rnd() % 12) {
	case 0: return 0;
	case 1: return rnd();				/* anything */
	case 2: return 0xffff800000000000ULL + (rnd() & 0xffffff000ULL); /* kernel */
	case 3: return (uint64_t)-4096;
	case 4: return (uintptr_t)sentinel + (rnd() % SENTINEL_LEN);	/* unaligned inside */
	case 5: return (uintptr_t)sentinel + (rnd() % 1024) * page;	/* aligned inside */
	case 6: return (uintptr_t)ro_page;
	case 7: return (uintptr_t)edge_page + page - (rnd() % 64);	/* runs off the end */
	case 8: return 0x7ffffffff000ULL;
	case 9: return 1ULL << 47;
	case 10: return (uintptr_t)sentinel - page;
	default: return rnd() & 0x7ffffffff000ULL;
	}
}

static uint64_t hostile_len(void)
{
	switch (rnd() % 8) {
	case 0: return 0;
	case 1: return ~0ULL;
	case 2: return ~0ULL - page + 2;
	case 3: return rnd();
	case 4: return (rnd() % 2048) * page;
	case 5: return rnd() % 8192;
	case 6: return SENTINEL_LEN;
	default: return 1ULL << (rnd() % 64);
	}
}

/*
 * Fills a request with hostile values, never one that could succeed on the
 * sentinel, so the sentinel must stay as it is.
 */
static void hostile_remap(struct fastremap_remap *r, size_t *len)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	switch (rnd() % 10) {
	case 0: r->size = (uint32_t)rnd(); break;
	case 1: r->size = FASTREMAP_REMAP_SIZE_VER0 - 8; break;
	case 2: r->flags = (uint32_t)rnd() | 1; break;
	case 3: r->reserved[rnd() % 3] = rnd() | 1; break;
	case 4: r->__pad0 = (uint32_t)rnd() | 1; break;
	default: break;
	}
	r->mremap_flags = (uint32_t)(rnd() % 2 ? rnd() : rnd() % 8);
	r->old_addr = hostile_addr();
	r->old_size = hostile_len();
	r->new_size = hostile_len();
	r->new_addr = hostile_addr();
	/*
	 * Anything aimed at the sentinel, as source or as a MREMAP_FIXED
	 * target, must fail: a misaligned source makes sure of it.
	 */
	if ((r->old_addr >= (uintptr_t)sentinel &&
	     r->old_addr < (uintptr_t)sentinel + SENTINEL_LEN) ||
	    (r->new_addr >= (uintptr_t)sentinel - SENTINEL_LEN &&
	     r->new_addr < (uintptr_t)sentinel + SENTINEL_LEN))
		r->old_addr |= 1;
	*len = sizeof(*r);
}

static unsigned long hostile_cmd(void)
{
	unsigned long nr = rnd() % 4, dir = rnd() % 4, size = rnd() % 0x4000;

	switch (rnd() % 6) {
	case 0: return (unsigned long)rnd();
	case 1: return _IOC(dir, FASTREMAP_IOC_MAGIC, rnd() % 256, size);
	case 2: return _IOC(dir, FASTREMAP_IOC_MAGIC, nr, size);
	case 3: return FASTREMAP_IOC_INFO;
	default: return FASTREMAP_IOC_REMAP;
	}
}

static int calls = CALLS;

static void fuzz(int fd, uint64_t seed)
{
	long bad_ret = 0, changed = 0, leaks = 0, ok_calls = 0;
	uint64_t before = sentinel_sum();

	for (int i = 0; i < calls; i++) {
		struct fastremap_remap r;
		unsigned long cmd = hostile_cmd();
		void *arg;
		size_t len;
		long ret;

		hostile_remap(&r, &len);
		switch (rnd() % 5) {
		case 0: arg = (void *)(uintptr_t)hostile_addr(); break;
		case 1: arg = ro_page; break;
		case 2: arg = edge_page + page - len / 2; break;
		default: arg = &r; break;
		}
		if (arg == edge_page + page - len / 2)
			memcpy(arg, &r, len / 2);
		errno = 0;
		ret = ioctl(fd, cmd, arg);
		if (ret != 0 && (ret != -1 || errno <= 0 || errno > 4095))
			bad_ret++;
		if (ret == 0) {
			ok_calls++;
			/* A successful answer carries no stray data. */
			if (arg == &r && cmd == FASTREMAP_IOC_REMAP &&
			    (r.flags || r.__pad0 || r.reserved[0] ||
			     r.reserved[1] || r.reserved[2]))
				leaks++;
		}
	}
	changed = sentinel_sum() != before;
	tap_ok(bad_ret == 0, "fuzz seed %" PRIu64 ": %d hostile calls, each 0 or -1 with an errno (%ld bad)",
	       seed, calls, bad_ret);
	/* For the harness's per-kernel summary. */
	tap_diag("FR-STATS hostile_calls=%d", calls);
	tap_ok(!changed, "fuzz: the sentinel mapping is unchanged");
	tap_ok(leaks == 0, "fuzz: successful answers carry no stray data (%ld of %ld)",
	       leaks, ok_calls);
}

struct racer {
	int fd;
	volatile int stop;
	long calls, odd;
};

static void *race_worker(void *p)
{
	struct racer *rc = p;

	while (!rc->stop) {
		struct fastremap_info i = { .size = sizeof(i) };
		long ret = ioctl(rc->fd, FASTREMAP_IOC_INFO, &i);

		rc->calls++;
		if (ret && errno != EBADF)
			rc->odd++;
	}
	return NULL;
}

/* Closing the file while other threads are inside ioctls on it. */
static void close_race(void)
{
	long calls = 0, odd = 0;

	for (int round = 0; round < 50; round++) {
		struct racer rc = { .fd = open(FASTREMAP_DEVICE, O_RDWR) };
		pthread_t t[3];

		for (int k = 0; k < 3; k++)
			pthread_create(&t[k], NULL, race_worker, &rc);
		usleep(2000);
		close(rc.fd);
		usleep(1000);
		rc.stop = 1;
		for (int k = 0; k < 3; k++)
			pthread_join(t[k], NULL);
		calls += rc.calls;
		odd += rc.odd;
	}
	tap_ok(odd == 0, "close while 3 threads are in ioctls, 50 rounds: only EBADF after close (%ld calls, %ld odd)",
	       calls, odd);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261130;

	/* Usage: t_ioctl_fuzz [SEED [CALLS]] */
	if (argc > 2)
		calls = atoi(argv[2]);
	int fd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);

	page = sysconf(_SC_PAGESIZE);
	rng = seed * 0x9e3779b97f4a7c15ULL | 1;
	if (!tap_ok(fd >= 0, "open the device"))
		return tap_done();
	sentinel = mmap(NULL, SENTINEL_LEN, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro_page = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	edge_page = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(edge_page + page, page);
	for (size_t i = 0; i < SENTINEL_LEN; i += 8)
		*(uint64_t *)(sentinel + i) = i * 0x9e3779b97f4a7c15ULL;
	fuzz(fd, seed);
	close(fd);
	close_race();
	return tap_done();
}
