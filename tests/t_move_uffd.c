// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_MOVE against UFFDIO_MOVE (6.8+), the kernel's own page
 * mover: two heaps with the same layout and the same data, the same
 * seeded batches applied to both, one batch per FASTREMAP_IOC_MOVE call
 * on heap A and one UFFDIO_MOVE per move on heap B (registered with a
 * userfaultfd, which the module refuses, hence two heaps). After every
 * batch both must have stopped at the same move, after the same bytes of
 * it, with the same errno (EEXIST for a populated destination, ENOENT
 * for a hole in the source, EBUSY for a page shared with a child after
 * fork(2)); both heaps must then hold what the model says, page for page
 * (data, zero pages, holes, through pagemap), and /proc/self/maps over
 * each must not have changed.
 *
 * UFFDIO_MOVE reports a move stopped part way as EAGAIN with the bytes
 * done; the rest is asked again to learn the error, as its documentation
 * says a caller should.
 *
 * Usage: t_move_uffd [SEED [BATCHES]]
 */
#define _GNU_SOURCE
#include <sys/wait.h>
#include "tlib.h"

#define HEAP		(4 * SZ_1M)
#define NPAGES		(HEAP / PG)
#define NPAGES_MAX	(HEAP / T_PAGE_MIN)	/* static arrays' size */
#define MAX_MOVES	48

static int fd = -1, uffd = -1;
static uint64_t seed = 1, rng;
static int batches = 60;
static char *ha, *hb;			/* heap A (the module), heap B (UFFDIO_MOVE) */
static uint64_t tags[NPAGES_MAX];

static size_t rnd(size_t n)
{
	return t_xorshift64(&rng) % n;
}

/* Gives B's move the same vector entry as A's. */
static uintptr_t in_b(uint64_t a)
{
	return a - (uintptr_t)ha + (uintptr_t)hb;
}

/*
 * A batch of valid moves against a working copy of the model, and maybe
 * one that fails at a chosen page: its destination runs into a populated
 * page (EEXIST), or its source into a hole (ENOENT, unless the batch
 * allows holes). Sources pairwise disjoint, destinations too: the module
 * refuses anything else before moving.
 */
static uint32_t gen_batch(struct fastremap_move_vec *v, uint32_t want, int holes, int bad)
{
	static uint64_t work[NPAGES_MAX];
	static uint8_t used_src[NPAGES_MAX], used_dst[NPAGES_MAX];
	uint32_t n = 0, bad_at = bad ? rnd(want) : want;

	memcpy(work, tags, NPAGES * sizeof(work[0]));
	memset(used_src, 0, NPAGES);
	memset(used_dst, 0, NPAGES);
	for (int tries = 0; n < want && tries < 200000; tries++) {
		size_t len = 1 + rnd(16), s = rnd(NPAGES - len), d = rnd(NPAGES - len);
		int ok = s + len <= d || d + len <= s, odd = 0;

		for (size_t i = 0; ok && i < len; i++) {
			int dst_ok = !work[d + i], src_ok = holes || work[s + i];

			ok = !used_src[s + i] && !used_dst[d + i] && !used_src[d + i] &&
			     !used_dst[s + i];
			/* The failing move: valid up to one page, any page after. */
			if (n == bad_at && !odd && (!dst_ok || !src_ok)) {
				odd = 1;
				continue;
			}
			if (!odd)
				ok = ok && dst_ok && src_ok;
		}
		if (!ok || (n == bad_at && !odd))
			continue;
		t_mv_add(&v[n++], ha, work, used_src, used_dst, s, d, len);
		/* Nothing after a failing move would run. */
		if (odd)
			break;
	}
	return n;
}

/*
 * The batch through UFFDIO_MOVE, move by move: *done and *done_bytes as
 * the module reports them, and the errno (0 if every move completed).
 */
static int uffd_batch(const struct fastremap_move_vec *v, uint32_t n, int holes,
		      uint64_t *done, uint64_t *done_bytes)
{
	for (uint32_t k = 0; k < n; k++) {
		uint64_t off = 0;

		while (off < v[k].len) {
			struct uffdio_move m = {
				.dst = in_b(v[k].dst) + off,
				.src = in_b(v[k].src) + off,
				.len = v[k].len - off,
				.mode = holes ? UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES : 0,
			};
			int r = ioctl(uffd, UFFDIO_MOVE, &m), e = errno;

			if (!r) {
				off = v[k].len;
				break;
			}
			if (m.move > 0) {
				/* Short: ask for the rest to learn why. */
				off += m.move;
				continue;
			}
			*done = k;
			*done_bytes = off;
			return e;
		}
	}
	*done = n;
	*done_bytes = 0;
	return 0;
}

static const char *ename(int e)
{
	return e ? strerror(e) : "success";
}

int main(int argc, char **argv)
{
	static struct fastremap_move_vec v[MAX_MOVES];
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_MOVE |
							       UFFD_FEATURE_SIGBUS };
	struct uffdio_register reg;
	struct fastremap_move res;
	struct t_area aa, ab;
	char *maps_a0, *maps_b0, *maps_a1, *maps_b1;
	const char *why;
	int diverged = 0, maps_bad = 0, seen[4] = { 0 }, pipefd[2] = { -1, -1 };
	pid_t child = -1;
	long bad;

	if (argc > 1)
		seed = strtoull(argv[1], NULL, 0);
	if (argc > 2)
		batches = atoi(argv[2]);
	rng = t_mix64(seed) | 1;
	tap_diag("seed %llu, %d batches", (unsigned long long)seed, batches);
	fd = t_open_mover();
	if (fd < 0)
		return tap_done();
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0) {
		tap_ok(0, "userfaultfd: %s", strerror(errno));
		return tap_done();
	}
	/* 6.1 answers EINVAL for a feature it does not know. */
	if (ioctl(uffd, UFFDIO_API, &api) || !(api.features & UFFD_FEATURE_MOVE)) {
		tap_skip_test("no UFFDIO_MOVE before 6.8",
			      "the same batches through FASTREMAP_IOC_MOVE and UFFDIO_MOVE");
		return tap_done();
	}
	ha = t_map_aligned(HEAP, PMD_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0,
			 &aa);
	hb = t_map_aligned(HEAP, PMD_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0,
			 &ab);
	if (!ha || !hb) {
		tap_ok(0, "map the heaps");
		return tap_done();
	}
	madvise(ha, HEAP, MADV_NOHUGEPAGE);
	madvise(hb, HEAP, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < NPAGES; i++) {
		size_t r = rnd(100);

		tags[i] = 0;
		if (r < 55) {
			tags[i] = t_tag(seed, i);
			t_tag_fill(ha + i * PG, tags[i]);
			t_tag_fill(hb + i * PG, tags[i]);
		} else if (r < 60) {
			(void)*(volatile char *)(ha + i * PG);
			(void)*(volatile char *)(hb + i * PG);
			tags[i] = MV_ZERO;
		}
	}
	/* Missing faults on B raise SIGBUS: nothing here may wait for a monitor. */
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)hb;
	reg.range.len = HEAP;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (!tap_ok(!ioctl(uffd, UFFDIO_REGISTER, &reg), "register heap B with userfaultfd (%s)",
		    strerror(errno)))
		return tap_done();
	bad = t_mv_verify(ha, NPAGES, tags, &why);
	if (bad < 0)
		bad = t_mv_verify(hb, NPAGES, tags, &why);
	if (!tap_ok(bad < 0, "both heaps as the model says before any move")) {
		tap_diag("page %ld: %s", bad, why);
		return tap_done();
	}
	maps_a0 = t_maps_range(ha, HEAP);
	maps_b0 = t_maps_range(hb, HEAP);

	for (int b = 0; b < batches && !diverged; b++) {
		int holes = b % 5 == 4, bad_move = b % 3 == 2, ea, eb;
		uint64_t done_b, bytes_b;
		uint32_t n;

		/*
		 * A child shares every page from batch 20 to 40. Right after
		 * the fork, the parent writes to some pages of both heaps
		 * (the same ones): a COW copy is its own again, the rest stay
		 * shared, and moves of those must give EBUSY on both sides.
		 */
		if (b == batches / 3 && !pipe(pipefd)) {
			child = fork();
			if (child == 0) {
				char c;

				close(pipefd[1]);
				(void)!read(pipefd[0], &c, 1);
				_exit(0);
			}
			close(pipefd[0]);
			for (size_t i = 0; i < NPAGES; i++)
				if (tags[i] && rnd(100) < 70) {
					tags[i] = t_tag(seed ^ 0xf0f0, i);
					t_tag_fill(ha + i * PG, tags[i]);
					t_tag_fill(hb + i * PG, tags[i]);
				}
		}
		if (b == 2 * batches / 3 && child > 0) {
			close(pipefd[1]);
			waitpid(child, NULL, 0);
			child = -1;
		}
		n = gen_batch(v, 1 + rnd(MAX_MOVES), holes, bad_move);
		ea = t_move(fd, v, n, holes ? FASTREMAP_MOVE_ALLOW_HOLES : 0, &res) ? errno : 0;
		eb = uffd_batch(v, n, holes, &done_b, &bytes_b);
		if (ea != eb || res.done != done_b || res.done_bytes != bytes_b) {
			tap_ok(0, "batch %d of %u moves: the same outcome", b, n);
			tap_diag("FASTREMAP_IOC_MOVE: %s at move %llu after %llu bytes; "
				 "UFFDIO_MOVE: %s at move %llu after %llu bytes",
				 ename(ea), (unsigned long long)res.done,
				 (unsigned long long)res.done_bytes, ename(eb),
				 (unsigned long long)done_b, (unsigned long long)bytes_b);
			diverged = 1;
			break;
		}
		seen[0] += ea == EEXIST;
		seen[1] += ea == ENOENT;
		seen[2] += ea == EBUSY;
		seen[3] += holes && !ea;
		if (ea && ea != EEXIST && ea != ENOENT && ea != EBUSY)
			tap_diag("batch %d: both %s", b, ename(ea));
		t_mv_model(tags, (uintptr_t)ha, v, n, res.done, res.done_bytes);
		bad = t_mv_verify(ha, NPAGES, tags, &why);
		if (bad >= 0) {
			tap_ok(0, "batch %d: heap A (FASTREMAP_IOC_MOVE) page %ld: %s", b, bad, why);
			diverged = 1;
			break;
		}
		bad = t_mv_verify(hb, NPAGES, tags, &why);
		if (bad >= 0) {
			tap_ok(0, "batch %d: heap B (UFFDIO_MOVE) page %ld: %s", b, bad, why);
			diverged = 1;
			break;
		}
		maps_a1 = t_maps_range(ha, HEAP);
		maps_b1 = t_maps_range(hb, HEAP);
		if (!maps_a0 || !maps_a1 || !maps_b0 || !maps_b1 || strcmp(maps_a0, maps_a1) ||
		    strcmp(maps_b0, maps_b1)) {
			if (!maps_bad++)
				tap_diag("batch %d: maps changed: A\n%s# B\n%s", b,
					 maps_a1 ? maps_a1 : "?", maps_b1 ? maps_b1 : "?");
		}
		free(maps_a1);
		free(maps_b1);
	}
	if (child > 0) {
		close(pipefd[1]);
		waitpid(child, NULL, 0);
	}
	tap_diag("errors met on both sides: %d EEXIST, %d ENOENT, %d EBUSY; %d batches with "
		 "holes allowed", seen[0], seen[1], seen[2], seen[3]);
	if (!diverged)
		tap_ok(1, "%d batches: the same errno, move and bytes from both, both heaps "
		       "as the model says after each", batches);
	tap_ok(!maps_bad, "/proc/self/maps over both heaps unchanged");
	tap_ok(diverged || (seen[0] && seen[1] && seen[2] && seen[3]),
	       "the batches met EEXIST, ENOENT, EBUSY and allowed holes");
	free(maps_a0);
	free(maps_b0);
	return tap_done();
}
