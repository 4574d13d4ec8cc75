// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include "bench.h"

/* ---- helpers ---- */

double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/*
 * mincore(2)'s vector, a byte per page of the largest move, mapped once
 * before the pool (mincore_init()). Allocated at the first check, as it
 * was, it was mapped wherever the kernel found room then: once fastremap's
 * move had left the source a hole at the top of the pool, in that hole,
 * which the next contender's restored source then covered, so UFFDIO_MOVE's
 * check wrote its answer into the emptied source and faulted 64 pages of
 * it back in ("source still mapped: 64/262144 pages; first 262079: 0",
 * workload 3 on 7.2, the first repetition; bench/README.md).
 */
unsigned char *mincore_vec;
static size_t mincore_len;

void mincore_init(void)
{
	size_t n = cfg.size / PG;
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED) {
		mincore_vec = p;
		mincore_len = n;
	}
}

/* After a move the source must be gone (mremap, fastremap) or empty (UFFDIO_MOVE). */
int check_source_gone(int c, char *src, size_t len)
{
	size_t i, n = len / PG;

	if (n > mincore_len)
		return -1;
	if (mincore(src, len, mincore_vec) == 0) {
		if (c != C_UFFD)
			return -1;
		for (i = 0; i < n; i++)
			if (mincore_vec[i] & 1)
				return -1;
		return 0;
	}
	return errno == ENOMEM && c != C_UFFD ? 0 : -1;
}

/*
 * VMAs (/proc/self/maps lines) that start inside [lo, hi): one
 * contender's reservation, while the others' exist beside it.
 */
long count_vmas(uintptr_t lo, uintptr_t hi)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned long start;
	long n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-", &start) == 1 && start >= lo && start < hi)
			n++;
	fclose(f);
	return n;
}

/* kB of AnonHugePages in this process. */
long anon_huge_kb(void)
{
	char buf[4096], *p;

	if (t_read_str("/proc/self/smaps_rollup", buf, sizeof(buf)))
		return -1;
	p = strstr(buf, "AnonHugePages:");
	return p ? strtol(p + 14, NULL, 10) : -1;
}

/* ---- the writer thread of workload 4 ---- */

static struct {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_int active, quit;
	atomic_ulong iters;
	int cpu, started;
	char *buf;
} wr = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

#define WR_BYTES (64 * KiB)

static void *writer_main(void *arg)
{
	size_t i;

	(void)arg;
	t_pin_cpu(wr.cpu);
	for (;;) {
		pthread_mutex_lock(&wr.mu);
		while (!atomic_load(&wr.active) && !atomic_load(&wr.quit))
			pthread_cond_wait(&wr.cv, &wr.mu);
		pthread_mutex_unlock(&wr.mu);
		if (atomic_load(&wr.quit))
			return NULL;
		while (atomic_load_explicit(&wr.active, memory_order_relaxed)) {
			for (i = 0; i < WR_BYTES; i += 64)
				wr.buf[i]++;
			atomic_fetch_add_explicit(&wr.iters, 1, memory_order_relaxed);
		}
	}
}

int writer_create(int cpu)
{
	wr.cpu = cpu;
	wr.buf = mmap(NULL, WR_BYTES, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (wr.buf == MAP_FAILED)
		return -errno;
	if (pthread_create(&wr.th, NULL, writer_main, NULL))
		return -EAGAIN;
	wr.started = 1;
	return 0;
}

/* Returns once the writer is running (it has done two passes). */
void writer_go(void)
{
	unsigned long start = atomic_load(&wr.iters);

	pthread_mutex_lock(&wr.mu);
	atomic_store(&wr.active, 1);
	pthread_cond_signal(&wr.cv);
	pthread_mutex_unlock(&wr.mu);
	while (atomic_load(&wr.iters) < start + 2)
		;
}

void writer_stop(void)
{
	atomic_store(&wr.active, 0);
}

void writer_destroy(void)
{
	if (!wr.started)
		return;
	pthread_mutex_lock(&wr.mu);
	atomic_store(&wr.quit, 1);
	pthread_cond_signal(&wr.cv);
	pthread_mutex_unlock(&wr.mu);
	pthread_join(wr.th, NULL);
	munmap(wr.buf, WR_BYTES);
	wr.started = 0;
}

