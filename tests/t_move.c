// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_MOVE semantics. A table of batches on a 64-page heap,
 * each with the errno, the result (done, done_bytes) and the memory the
 * model says it leaves: every page is checked (its tag, or that a hole is
 * still a hole, through pagemap), /proc/self/maps over the heap must not
 * change, and a batch that moved something issued exactly one TLB flush.
 * Then the cases a table cannot hold: the request structure (sizes,
 * reserved fields, its place), the vector (unreadable, too long, empty),
 * the kinds of mappings refused, mappings of different anon_vmas, pages
 * shared with a child after fork(2), pages pinned for DMA, swap entries,
 * soft-dirty, and the
 * INFO bits. Runs as root inside the test VM with the module loaded.
 *
 * Usage: t_move [SEED]
 */
#define _GNU_SOURCE
#include <linux/io_uring.h>
#include "tlib.h"

#define HEAP_PAGES	64
#define P(n)		((long long)(n) * (long long)PG)

static int fd = -1;
static uint64_t seed = 1;
static char *heap;		/* HEAP_PAGES pages, rw, private anonymous */
static struct t_area area;	/* PROT_NONE before it, a hole after it */

/* Sets up the heap: 'x' a page of data, 'z' the zero page, '.' a hole. */
static int heap_setup(const char *layout, uint64_t *tags, int ro_tail)
{
	t_release(&area);
	if (!t_reserve(P(HEAP_PAGES + 16), &area))
		return -1;
	heap = area.base + P(8);
	if (mmap(heap, P(HEAP_PAGES), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != heap)
		return -1;
	/* Right after the heap: nothing mapped. */
	munmap(heap + P(HEAP_PAGES), P(8));
	madvise(heap, P(HEAP_PAGES), MADV_NOHUGEPAGE);
	for (int i = 0; i < HEAP_PAGES; i++) {
		tags[i] = 0;
		if (layout[i] == 'x') {
			tags[i] = t_tag(seed, i);
			t_tag_fill(heap + P(i), tags[i]);
		} else if (layout[i] == 'z') {
			tags[i] = MV_ZERO;
			(void)*(volatile char *)(heap + P(i));
		}
	}
	/* The last 8 pages read-only: a second VMA of other protection. */
	if (ro_tail && mprotect(heap + P(HEAP_PAGES - 8), P(8), PROT_READ))
		return -1;
	return 0;
}

/*
 * Offsets that are not heap pages. ABS | a: the address a, used as is
 * (the table's lie above the user address space, where bit 62 is set
 * anyway). BELOW | n: n bytes below the heap, in the reservation before
 * it (a negative offset would read as ABS).
 */
#define ABS	(1LL << 62)
#define BELOW	(1LL << 61)

/*
 * The table's offsets and lengths: in 4 KiB units, scaled to this
 * kernel's page by scaled(), so that a sub-page offset (+ 2048) stays one.
 */
#define T4(n)	((long long)(n) * (long long)T_PAGE_MIN)

static long long scaled(long long off)
{
	if (off & ABS)
		return off;
	if (off & BELOW)
		return BELOW | scaled(off & ~BELOW);
	return off * (long long)(PG / T_PAGE_MIN);
}

struct mv_case {
	const char *name;
	const char *layout;
	int ro_tail;
	int n;
	struct { long long src, dst, len; } mv[4];
	uint32_t flags;
	int err;		/* 0 or the errno */
	int done, done_pages;	/* the result */
};

#define L_HALF "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx................................"
#define L_HOLE "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.................................."
#define L_ZERO "xxxxxxxxxxxxxxxxxxxxzxxxxxxxxxxx................................"
#define L_FULL "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..............x................."

static const struct mv_case cases[] = {
	{ "one page into a hole", L_HALF, 0, 1, { { T4(0), T4(40), T4(1) } }, 0, 0, 1, 0 },
	{ "a run of 4 pages", L_HALF, 0, 1, { { T4(1), T4(41), T4(4) } }, 0, 0, 1, 0 },
	{ "a batch of 3, the second filling the first's source", L_HALF, 0, 3,
	  { { T4(0), T4(32), T4(2) }, { T4(4), T4(0), T4(2) }, { T4(8), T4(36), T4(3) } }, 0, 0, 3, 0 },
	{ "a page moved twice in one batch", L_HALF, 0, 2,
	  { { T4(3), T4(50), T4(1) }, { T4(50), T4(60), T4(1) } }, 0, 0, 2, 0 },
	{ "backwards: destination below the source", L_HALF, 0, 2,
	  { { T4(10), T4(33), T4(1) }, { T4(31), T4(10), T4(1) } }, 0, 0, 2, 0 },
	{ "the zero page moves", L_ZERO, 0, 1, { { T4(20), T4(50), T4(1) } }, 0, 0, 1, 0 },
	{ "a batch of the whole populated half", L_HALF, 0, 1,
	  { { T4(0), T4(32), T4(32) } }, 0, 0, 1, 0 },
	{ "hole in the source -> ENOENT", L_HALF, 0, 1,
	  { { T4(40), T4(50), T4(1) } }, 0, ENOENT, 0, 0 },
	{ "hole part way -> ENOENT after the pages before it", L_HOLE, 0, 1,
	  { { T4(28), T4(40), T4(4) } }, 0, ENOENT, 0, 2 },
	{ "ALLOW_HOLES: holes stay holes", L_HOLE, 0, 1,
	  { { T4(28), T4(40), T4(4) } }, FASTREMAP_MOVE_ALLOW_HOLES, 0, 1, 0 },
	{ "ALLOW_HOLES: a source of holes only", L_HOLE, 0, 1,
	  { { T4(40), T4(50), T4(4) } }, FASTREMAP_MOVE_ALLOW_HOLES, 0, 1, 0 },
	{ "populated destination -> EEXIST, nothing moved", L_HALF, 0, 1,
	  { { T4(0), T4(1), T4(1) } }, 0, EEXIST, 0, 0 },
	{ "EEXIST part way through a batch", L_FULL, 0, 2,
	  { { T4(0), T4(40), T4(1) }, { T4(1), T4(44), T4(4) } }, 0, EEXIST, 1, 2 },
	{ "ALLOW_HOLES does not allow a populated destination", L_FULL, 0, 1,
	  { { T4(40), T4(46), T4(1) } }, FASTREMAP_MOVE_ALLOW_HOLES, EEXIST, 0, 0 },
	{ "unaligned source -> EINVAL", L_HALF, 0, 1,
	  { { T4(0) + 2048, T4(40), T4(1) } }, 0, EINVAL, 0, 0 },
	{ "unaligned destination -> EINVAL", L_HALF, 0, 1,
	  { { T4(0), T4(40) + 8, T4(1) } }, 0, EINVAL, 0, 0 },
	{ "unaligned length -> EINVAL", L_HALF, 0, 1,
	  { { T4(0), T4(40), T4(1) + 1 } }, 0, EINVAL, 0, 0 },
	{ "zero length -> EINVAL", L_HALF, 0, 1, { { T4(0), T4(40), 0 } }, 0, EINVAL, 0, 0 },
	{ "source overlaps its destination -> EINVAL", L_HALF, 0, 1,
	  { { T4(0), T4(2), T4(4) } }, 0, EINVAL, 0, 0 },
	{ "two sources overlap -> EINVAL, the first not moved", L_HALF, 0, 2,
	  { { T4(0), T4(40), T4(2) }, { T4(1), T4(50), T4(2) } }, 0, EINVAL, 0, 0 },
	{ "two destinations overlap -> EINVAL", L_HALF, 0, 2,
	  { { T4(0), T4(40), T4(2) }, { T4(4), T4(41), T4(2) } }, 0, EINVAL, 0, 0 },
	{ "unknown flag -> EINVAL", L_HALF, 0, 1,
	  { { T4(0), T4(40), T4(1) } }, 1U << 7, EINVAL, 0, 0 },
	{ "a source wrapping around the address space -> EINVAL", L_HALF, 0, 1,
	  { { ABS | 0xffffffffffff0000LL, T4(40), T4(32) } }, 0, EINVAL, 0, 0 },
	{ "destination beyond the user address space -> EINVAL", L_HALF, 0, 1,
	  { { T4(0), ABS | 0xfffffffffffff000LL, T4(1) } }, 0, EINVAL, 0, 0 },
	{ "destination unmapped -> EFAULT", L_HALF, 0, 1,
	  { { T4(0), T4(HEAP_PAGES), T4(1) } }, 0, EFAULT, 0, 0 },
	{ "source runs past the mapping -> EFAULT", L_HALF, 0, 1,
	  { { T4(62), T4(40), T4(4) } }, 0, EFAULT, 0, 0 },
	{ "an invalid move late in the batch -> nothing moved", L_HALF, 0, 3,
	  { { T4(0), T4(40), T4(1) }, { T4(1), T4(41), T4(1) }, { T4(2), T4(HEAP_PAGES), T4(1) } },
	  0, EFAULT, 0, 0 },
	{ "destination in another protection -> EINVAL", L_HALF, 1, 1,
	  { { T4(0), T4(58), T4(1) } }, 0, EINVAL, 0, 0 },
	{ "destination spans two mappings -> EFAULT", L_HALF, 1, 1,
	  { { T4(0), T4(54), T4(4) } }, 0, EFAULT, 0, 0 },
	{ "destination in a PROT_NONE mapping -> EINVAL", L_HALF, 0, 1,
	  { { T4(0), BELOW | T4(4), T4(1) } }, 0, EINVAL, 0, 0 },
};

static unsigned long long addr_of(long long off)
{
	if (off & ABS)
		return off;
	if (off & BELOW)
		return (uintptr_t)heap - (off & ~BELOW);
	return (uintptr_t)heap + off;
}

/*
 * One case of the table. With @pass set, the module's passes are @pass
 * pages long (t_mv_set_pass()), so that the batch runs in several passes as
 * one past the built-in bound does: the same result, a flush per pass
 * that moved something.
 */
static void run_case(const struct mv_case *c, unsigned long pass)
{
	const char *sfx = pass ? " (passes of a few pages)" : "";
	uint64_t pages = 0, max_flushes;
	uint64_t tags[HEAP_PAGES];
	struct fastremap_move_vec v[4];
	struct fastremap_move res;
	const char *why;
	char *maps0, *maps1;
	long bad;
	int r, e;

	if (heap_setup(c->layout, tags, c->ro_tail)) {
		tap_ok(0, "%s: set up (%s)", c->name, strerror(errno));
		return;
	}
	for (int k = 0; k < c->n; k++) {
		v[k].src = addr_of(scaled(c->mv[k].src));
		v[k].dst = addr_of(scaled(c->mv[k].dst));
		v[k].len = scaled(c->mv[k].len);
	}
	for (int k = 0; k < c->n; k++)
		pages += v[k].len / PG;
	maps0 = t_maps_range(area.base, area.len);
	r = t_move(fd, v, c->n, c->flags, &res);
	e = r ? errno : 0;
	maps1 = t_maps_range(area.base, area.len);
	if (e != c->err || res.done != (uint64_t)c->done ||
	    res.done_bytes != (uint64_t)P(c->done_pages)) {
		tap_ok(0, "%s%s", c->name, sfx);
		tap_diag("want %s done %d done_bytes %lld; got %s done %llu done_bytes %llu",
			 c->err ? strerror(c->err) : "success", c->done, P(c->done_pages),
			 e ? strerror(e) : "success", (unsigned long long)res.done,
			 (unsigned long long)res.done_bytes);
		goto out;
	}
	if (!maps0 || !maps1 || strcmp(maps0, maps1)) {
		tap_ok(0, "%s%s: /proc/self/maps changed", c->name, sfx);
		tap_diag("before:\n%s# after:\n%s", maps0 ? maps0 : "?", maps1 ? maps1 : "?");
		goto out;
	}
	max_flushes = pass ? (pages + pass - 1) / pass : 1;
	if (res.moved_pte ? res.tlb_flushes < 1 || res.tlb_flushes > max_flushes :
	    res.tlb_flushes != 0) {
		tap_ok(0, "%s%s: %llu flushes for %llu PTEs moved", c->name, sfx,
		       (unsigned long long)res.tlb_flushes,
		       (unsigned long long)res.moved_pte);
		goto out;
	}
	t_mv_model(tags, (uintptr_t)heap, v, c->n, res.done, res.done_bytes);
	bad = t_mv_verify(heap, HEAP_PAGES, tags, &why);
	if (bad >= 0) {
		tap_ok(0, "%s%s: page %ld: %s", c->name, sfx, bad, why);
		goto out;
	}
	tap_ok(1, "%s%s", c->name, sfx);
out:
	free(maps0);
	free(maps1);
}

/* The request structure: sizes, fields, and where it may lie. */
static void request_cases(void)
{
	uint64_t tags[HEAP_PAGES];
	struct fastremap_move_vec v = { 0, 0, PG };
	struct {
		struct fastremap_move m;
		uint64_t extra;
	} big;
	struct fastremap_move m, *inside;
	int r;

	heap_setup(L_HALF, tags, 0);
	v.src = (uintptr_t)heap;
	v.dst = (uintptr_t)heap + P(40);

	memset(&m, 0, sizeof(m));
	m.size = FASTREMAP_MOVE_SIZE_VER0 - 8;
	m.moves = (uintptr_t)&v;
	m.count = 1;
	tap_errno(ioctl(fd, FASTREMAP_IOC_MOVE, &m), EINVAL, "size below the first version -> EINVAL");
	m.size = sizeof(m);
	m.reserved[3] = 1;
	tap_errno(ioctl(fd, FASTREMAP_IOC_MOVE, &m), EINVAL, "a reserved field set -> EINVAL");
	m.reserved[3] = 0;
	m.__pad0 = 1;
	tap_errno(ioctl(fd, FASTREMAP_IOC_MOVE, &m), EINVAL, "padding set -> EINVAL");
	m.__pad0 = 0;

	memset(&big, 0, sizeof(big));
	big.m = m;
	big.m.size = sizeof(big);
	big.extra = 1;
	tap_errno(ioctl(fd, FASTREMAP_IOC_MOVE, &big), EINVAL,
		  "a larger structure with an unknown field set -> EINVAL");
	big.extra = 0;
	r = ioctl(fd, FASTREMAP_IOC_MOVE, &big);
	tap_ok(r == 0 && big.m.done == 1 && big.m.tlb_flushes == 1,
	       "a larger structure with zeros beyond ours is accepted (done %llu)",
	       (unsigned long long)big.m.done);
	tags[40] = tags[0];
	tags[0] = 0;

	/* The output fields are outputs: what the caller left there is ignored. */
	v.src = (uintptr_t)heap + P(1);
	v.dst = (uintptr_t)heap + P(41);
	m.done = 77;
	m.done_bytes = 77;
	m.tlb_flushes = 77;
	r = ioctl(fd, FASTREMAP_IOC_MOVE, &m);
	tap_ok(r == 0 && m.done == 1 && m.done_bytes == 0 && m.tlb_flushes == 1 &&
	       m.moved_pte == 1, "output fields are overwritten (done %llu, bytes %llu, flushes %llu)",
	       (unsigned long long)m.done, (unsigned long long)m.done_bytes,
	       (unsigned long long)m.tlb_flushes);
	tags[41] = tags[1];
	tags[1] = 0;

	/* The structure inside a source: refused before anything moves. */
	inside = (struct fastremap_move *)(heap + P(2) + 64);
	memcpy(inside, &m, sizeof(m));
	v.src = (uintptr_t)heap + P(2);
	v.dst = (uintptr_t)heap + P(42);
	tap_errno(ioctl(fd, FASTREMAP_IOC_MOVE, inside), EINVAL,
		  "the structure inside a source -> EINVAL");
	/* Inside a destination (populated by it): EINVAL, not EEXIST. */
	v.src = (uintptr_t)heap + P(3);
	v.dst = (uintptr_t)heap + P(42);
	memcpy(heap + P(42) + 64, &m, sizeof(m));
	tap_errno(ioctl(fd, FASTREMAP_IOC_MOVE, heap + P(42) + 64), EINVAL,
		  "the structure inside a destination -> EINVAL");
	/* The vector may lie inside a source: it is read before the move. */
	{
		struct fastremap_move_vec *vin = (void *)(heap + P(5));

		vin->src = (uintptr_t)heap + P(5);
		vin->dst = (uintptr_t)heap + P(45);
		vin->len = PG;
		tags[5] = 0;	/* rewritten: compare by content below */
		memset(&m, 0, sizeof(m));
		m.size = sizeof(m);
		m.moves = (uintptr_t)vin;
		m.count = 1;
		r = ioctl(fd, FASTREMAP_IOC_MOVE, &m);
		tap_ok(r == 0 && m.done == 1 &&
		       ((struct fastremap_move_vec *)(heap + P(45)))->dst == (uintptr_t)heap + P(45),
		       "the vector inside its own source: read first, then moved");
	}
}

/* The vector: unreadable, too long, empty. */
static void vector_cases(void)
{
	uint64_t tags[HEAP_PAGES];
	struct fastremap_move m;
	const char *why;
	int r;

	heap_setup(L_HALF, tags, 0);
	memset(&m, 0, sizeof(m));
	m.size = sizeof(m);
	m.count = 1;
	m.moves = (uintptr_t)heap + P(HEAP_PAGES);
	tap_errno(ioctl(fd, FASTREMAP_IOC_MOVE, &m), EFAULT, "an unmapped vector -> EFAULT");
	m.moves = (uintptr_t)area.base;	/* PROT_NONE */
	tap_errno(ioctl(fd, FASTREMAP_IOC_MOVE, &m), EFAULT, "an unreadable vector -> EFAULT");
	m.count = FASTREMAP_MOVE_MAX + 1;
	m.moves = (uintptr_t)heap;
	tap_errno(ioctl(fd, FASTREMAP_IOC_MOVE, &m), E2BIG,
		  "count above FASTREMAP_MOVE_MAX (%d) -> E2BIG", FASTREMAP_MOVE_MAX);
	m.count = 0;
	m.moves = 0;
	r = ioctl(fd, FASTREMAP_IOC_MOVE, &m);
	tap_ok(r == 0 && m.done == 0 && m.tlb_flushes == 0, "an empty batch succeeds and does nothing");
	tap_ok(t_mv_verify(heap, HEAP_PAGES, tags, &why) < 0, "and the heap is as it was");
}

/*
 * Where the module reads the request and the vector with word loads in
 * one user-access window (fr_copy_in(), fr_move_copy_vec()): a structure
 * or a vector that runs into an unmapped page, and a structure that
 * cannot be written back, give EFAULT, and nothing moves.
 */
static void user_access_cases(void)
{
	uint64_t tags[HEAP_PAGES];
	struct fastremap_move m, *edge;
	struct fastremap_move_vec *v;
	const char *why;
	char *ro;
	int k;

	heap_setup(L_HALF, tags, 0);
	/* 16 valid moves, the last 8 of them on the unmapped page after the heap. */
	v = (struct fastremap_move_vec *)(heap + P(HEAP_PAGES)) - 8;
	memset(&m, 0, sizeof(m));
	m.size = sizeof(m);
	m.moves = (uintptr_t)v;
	m.count = 16;
	for (k = 0; k < 8; k++)
		v[k] = (struct fastremap_move_vec){ (uintptr_t)heap + P(k),
			(uintptr_t)heap + P(32 + k), PG };
	tap_errno(ioctl(fd, FASTREMAP_IOC_MOVE, &m), EFAULT,
		  "a vector of 16 whose last 8 moves are unmapped -> EFAULT");
	m.count = 9;
	tap_errno(ioctl(fd, FASTREMAP_IOC_MOVE, &m), EFAULT,
		  "the same with its 9th move the first unmapped -> EFAULT");
	m.count = 8;
	tap_ok(ioctl(fd, FASTREMAP_IOC_MOVE, &m) == 0 && m.done == 8,
	       "its first 8 moves alone, all mapped, move (done %llu)",
	       (unsigned long long)m.done);
	t_mv_model(tags, (uintptr_t)heap, v, 8, 8, 0);
	/* The heap's last page holds the vector: not in the model. */
	tap_ok(t_mv_verify(heap, HEAP_PAGES - 1, tags, &why) < 0, "and the heap holds them moved");

	/* The request structure's tail on the unmapped page. */
	edge = (struct fastremap_move *)(heap + P(HEAP_PAGES) - 64);
	memset(edge, 0, 64);
	edge->size = sizeof(m);
	v[0] = (struct fastremap_move_vec){ (uintptr_t)heap + P(8), (uintptr_t)heap + P(40), PG };
	edge->moves = (uintptr_t)v;
	edge->count = 1;
	tap_errno(ioctl(fd, FASTREMAP_IOC_MOVE, edge), EFAULT,
		  "a request structure running into an unmapped page -> EFAULT");

	/* A request structure that can be read but not written. */
	ro = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED)
		return (void)tap_ok(0, "mmap: %s", strerror(errno));
	memcpy(ro, &m, sizeof(m));
	((struct fastremap_move *)ro)->count = 1;
	if (mprotect(ro, PG, PROT_READ))
		tap_ok(0, "mprotect: %s", strerror(errno));
	tap_errno(ioctl(fd, FASTREMAP_IOC_MOVE, ro), EFAULT,
		  "a read-only request structure -> EFAULT");
	munmap(ro, PG);
	tap_ok(t_mv_verify(heap, HEAP_PAGES - 1, tags, &why) < 0,
	       "and neither moved anything (%s)", why);
}

/*
 * Two threads calling with one open file at once: their vectors (over
 * FR_MOVE_SMALL moves) are read into the file's buffer, which one call
 * at a time may use; the other allocates its own. Were the buffer shared,
 * one thread's vector would overwrite the other's between the read and
 * the moves, and a thread would move the other's pages.
 */
#define SF_PAGES	256
#define SF_ROUNDS	60

struct sf_arg {
	char *heap;			/* 2 * SF_PAGES pages */
	uint64_t tags[2 * SF_PAGES];
	int bad;
	char why[128];
};

static pthread_mutex_t sf_verify_lock = PTHREAD_MUTEX_INITIALIZER;

static void *sf_thread(void *p)
{
	struct sf_arg *a = p;
	struct fastremap_move_vec v[SF_PAGES];
	struct fastremap_move m;
	const char *why;
	long at;

	for (int r = 0; r < SF_ROUNDS && !a->bad; r++) {
		/* One page per move, every page of one half to the other. */
		int from = r % 2 ? SF_PAGES : 0, to = SF_PAGES - from, n = SF_PAGES - r % 7;

		for (int k = 0; k < n; k++) {
			int pg = (k * 37 + r) % SF_PAGES;

			v[k] = (struct fastremap_move_vec){ (uintptr_t)a->heap + P(from + pg),
				(uintptr_t)a->heap + P(to + pg), PG };
		}
		if (t_move(fd, v, n, 0, &m) || m.done != (uint64_t)n) {
			snprintf(a->why, sizeof(a->why), "round %d: %s, done %llu of %d", r,
				 strerror(errno), (unsigned long long)m.done, n);
			a->bad = 1;
			break;
		}
		t_mv_model(a->tags, (uintptr_t)a->heap, v, n, n, 0);
		/* t_mv_verify()'s pagemap buffer is one for the process. */
		pthread_mutex_lock(&sf_verify_lock);
		at = t_mv_verify(a->heap, 2 * SF_PAGES, a->tags, &why);
		pthread_mutex_unlock(&sf_verify_lock);
		if (at >= 0) {
			snprintf(a->why, sizeof(a->why), "round %d: page %ld: %s", r, at, why);
			a->bad = 1;
		}
		/* Pages left behind (n < SF_PAGES) are moved back along with the rest. */
		for (int k = 0; k < SF_PAGES; k++)
			if (a->tags[from + k] && !a->tags[to + k]) {
				v[0] = (struct fastremap_move_vec){ (uintptr_t)a->heap + P(from + k),
					(uintptr_t)a->heap + P(to + k), PG };
				if (t_move(fd, v, 1, 0, NULL)) {
					snprintf(a->why, sizeof(a->why), "round %d: a straggler: %s",
						 r, strerror(errno));
					a->bad = 1;
					break;
				}
				t_mv_model(a->tags, (uintptr_t)a->heap, v, 1, 1, 0);
			}
	}
	return NULL;
}

static void shared_file_case(void)
{
	static struct sf_arg args[2];
	const char *why;
	pthread_t t[2];
	int i, bad = 0;

	for (i = 0; i < 2; i++) {
		struct sf_arg *a = &args[i];

		/* Separate mappings, so that each thread's moves stay in its own. */
		a->heap = mmap(NULL, P(2 * SF_PAGES + 16), PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (a->heap == MAP_FAILED)
			return (void)tap_ok(0, "mmap: %s", strerror(errno));
		a->heap += P(8);
		if (mprotect(a->heap, P(2 * SF_PAGES), PROT_READ | PROT_WRITE))
			return (void)tap_ok(0, "mprotect: %s", strerror(errno));
		madvise(a->heap, P(2 * SF_PAGES), MADV_NOHUGEPAGE);
		for (int k = 0; k < SF_PAGES; k++) {
			a->tags[k] = t_tag(seed + 100 + i, k);
			t_tag_fill(a->heap + P(k), a->tags[k]);
		}
	}
	/* Opens the pagemap once, before the threads share it. */
	t_mv_verify(args[0].heap, 2 * SF_PAGES, args[0].tags, &why);
	for (i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, sf_thread, &args[i]))
			return (void)tap_ok(0, "pthread_create");
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		if (args[i].bad)
			tap_diag("thread %d: %s", i, args[i].why);
		bad |= args[i].bad;
	}
	tap_ok(!bad, "two threads, one file, %d batches of up to %d moves each at once: every page where it belongs",
	       SF_ROUNDS, SF_PAGES);
	for (i = 0; i < 2; i++)
		munmap(args[i].heap - P(8), P(2 * SF_PAGES + 16));
}

/* A private anonymous page of data and a target hole, in mapping p. */
static void kind_case(const char *name, char *p, size_t len, int want)
{
	struct fastremap_move_vec v = { (uintptr_t)p, (uintptr_t)p + len / 2, PG };

	if (p == MAP_FAILED) {
		tap_ok(0, "%s: set up (%s)", name, strerror(errno));
		return;
	}
	if (want)
		tap_errno(t_move(fd, &v, 1, 0, NULL), want, "%s", name);
	else
		tap_ok(t_move(fd, &v, 1, 0, NULL) == 0, "%s (%s)", name, strerror(errno));
}

/* p with its first page faulted in, unless MAP_FAILED. */
static char *touched(char *p)
{
	if (p != MAP_FAILED)
		p[0] = 1;
	return p;
}

static void unmap_ok(char *p, size_t len)
{
	if (p != MAP_FAILED)
		munmap(p, len);
}

static void mapping_cases(void)
{
	size_t len = P(16);
	int mfd = memfd_create("t_move", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	char *p;
	int ro;

	if (mfd >= 0 && ftruncate(mfd, len))
		mfd = -1;
	p = touched(mfd < 0 ? MAP_FAILED : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, mfd, 0));
	kind_case("a private file mapping -> EINVAL", p, len, EINVAL);
	unmap_ok(p, len);
	p = touched(mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
	kind_case("a shared anonymous mapping -> EINVAL", p, len, EINVAL);
	unmap_ok(p, len);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED && mlock(p, PG))
		tap_diag("mlock: %s", strerror(errno));
	kind_case("an mlocked mapping -> EINVAL", p, PG * 2, EINVAL);
	unmap_ok(p, len);
	p = touched(mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
#ifndef SYS_mseal
#define SYS_mseal 462
#endif
	if (p != MAP_FAILED && syscall(SYS_mseal, p, len, 0) == 0)
		kind_case("a sealed mapping -> EPERM", p, len, EPERM);
	else
		tap_skip_test("no mseal(2) before 6.10", "a sealed mapping -> EPERM");
	/* A read-only private anonymous mapping moves within itself. */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED) {
		t_tag_fill(p, 0x1234567);
		ro = mprotect(p, len, PROT_READ);
		kind_case("a read-only mapping moves within itself", ro ? MAP_FAILED : p, len, 0);
		tap_ok(*(volatile uint64_t *)(p + len / 2) == 0x1234567,
		       "and the page is there, read-only");
		munmap(p, len);
	}
	if (mfd >= 0)
		close(mfd);
}

/*
 * Two mappings never related: their anon_vmas have different roots. Each
 * lies inside a PROT_NONE reservation (never faulted, so without an
 * anon_vma), so neither can borrow a neighbour's anon_vma.
 */
static void exdev_case(void)
{
	struct fastremap_move_vec v;
	struct t_area r;
	char *a, *b;

	if (!t_reserve(P(64), &r))
		return (void)tap_ok(0, "EXDEV: reserve");
	a = mmap(r.base + P(8), P(16), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	b = mmap(r.base + P(40), P(16), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (a == MAP_FAILED || b == MAP_FAILED) {
		t_release(&r);
		return (void)tap_ok(0, "EXDEV: set up");
	}
	a[0] = 1;
	b[0] = 1;
	v.src = (uintptr_t)a;
	v.dst = (uintptr_t)b + P(8);
	v.len = PG;
	tap_errno(t_move(fd, &v, 1, 0, NULL), EXDEV,
		  "between mappings of different anon_vma roots -> EXDEV");
	/* An untouched destination mapping gets an anon_vma of its own too. */
	b = mmap(b, P(16), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	v.dst = (uintptr_t)b + P(8);
	tap_errno(t_move(fd, &v, 1, 0, NULL), EXDEV,
		  "into an untouched mapping apart from the source -> EXDEV");
	tap_ok(a[0] == 1, "the source page stayed");
	t_release(&r);
}

/* A page shared with a child after fork(2) does not move; the rest does. */
static void fork_case(void)
{
	uint64_t tags[HEAP_PAGES];
	struct fastremap_move_vec v[2];
	struct fastremap_move res;
	int pipefd[2], r, e, st;
	const char *why;
	char c;
	pid_t pid;

	heap_setup(L_HALF, tags, 0);
	if (pipe(pipefd))
		return (void)tap_ok(0, "fork: pipe");
	pid = fork();
	if (pid == 0) {
		/* The child checks its copy after the parent's attempt. */
		if (read(pipefd[0], &c, 1) != 1)
			_exit(2);
		/* The parent's pagemap descriptor reads the parent. */
		close(t_pagemap_fd);
		t_pagemap_fd = -1;
		_exit(t_mv_verify(heap, HEAP_PAGES, tags, &why) >= 0);
	}
	v[0].src = (uintptr_t)heap + P(0);	/* COW-shared since the fork */
	v[0].dst = (uintptr_t)heap + P(40);
	v[0].len = PG;
	r = t_move(fd, v, 1, 0, &res);
	e = errno;
	tap_ok(r == -1 && e == EBUSY && res.done == 0 && res.done_bytes == 0,
	       "a page shared with a child -> EBUSY, nothing moved (%s)", r ? strerror(e) : "moved");
	/* Written by the parent: its own copy, exclusive again. */
	t_tag_fill(heap + P(1), tags[1] = t_tag(seed, 1000));
	v[0].src = (uintptr_t)heap + P(1);
	v[0].dst = (uintptr_t)heap + P(41);
	r = t_move(fd, v, 1, 0, &res);
	tap_ok(r == 0 && res.done == 1, "the parent's own copy after COW moves");
	tags[41] = tags[1];
	tags[1] = 0;
	tap_ok(t_mv_verify(heap, HEAP_PAGES, tags, &why) < 0, "the parent's memory is right");
	if (write(pipefd[1], "x", 1) != 1)
		tap_diag("pipe write failed");
	waitpid(pid, &st, 0);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's memory is as at the fork");
	close(pipefd[0]);
	close(pipefd[1]);
}

/*
 * A page pinned for DMA (FOLL_PIN: io_uring's registered buffers, the
 * pin a device's DMA holds) stays where it is: the batch stops at it
 * with EBUSY, the moves before it done, the page mapped as before, the
 * same physical page. Unpinned, the same move goes through.
 */
static void pin_case(void)
{
	struct io_uring_params params = { 0 };
	uint64_t tags[HEAP_PAGES], pm[2];
	struct fastremap_move_vec v[2];
	struct fastremap_move res;
	const char *why = "same frame";
	struct iovec iov;
	int ring, r, e;

	heap_setup(L_HALF, tags, 0);
	ring = (int)syscall(__NR_io_uring_setup, 1, &params);
	if (ring < 0) {
		/* io_uring turned off (kernel.io_uring_disabled): nothing pins. */
		const char *why_not = strerror(errno);

		tap_skip_test(why_not, "a DMA-pinned page -> EBUSY, the move before it done");
		tap_skip_test(why_not, "the pinned page is mapped where it was, the same page");
		tap_skip_test(why_not, "unpinned, the same page moves");
		tap_skip_test(why_not, "and the memory is right");
		return;
	}
	iov.iov_base = heap + P(2);
	iov.iov_len = PG;
	if (syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS, &iov, 1))
		tap_diag("io_uring buffer registration: %s", strerror(errno));
	t_pagemap(heap + P(2), 1, &pm[0]);
	v[0].src = (uintptr_t)heap + P(3);
	v[0].dst = (uintptr_t)heap + P(42);
	v[0].len = PG;
	v[1].src = (uintptr_t)heap + P(2);	/* pinned */
	v[1].dst = (uintptr_t)heap + P(43);
	v[1].len = PG;
	r = t_move(fd, v, 2, 0, &res);
	e = errno;
	tap_ok(r == -1 && e == EBUSY && res.done == 1 && res.done_bytes == 0,
	       "a DMA-pinned page -> EBUSY, the move before it done (%s, done %llu)",
	       r ? strerror(e) : "moved", (unsigned long long)res.done);
	if (res.done >= 1) {
		tags[42] = tags[3];
		tags[3] = 0;
	}
	if (res.done >= 2) {
		tags[43] = tags[2];
		tags[2] = 0;
	}
	t_pagemap(heap + P(2), 1, &pm[1]);
	/* Bits 0-54: the page frame, which root reads. */
	pm[0] &= (1ULL << 55) - 1;
	pm[1] &= (1ULL << 55) - 1;
	tap_ok(t_mv_verify(heap, HEAP_PAGES, tags, &why) < 0 && pm[0] && pm[0] == pm[1],
	       "the pinned page is mapped where it was, the same page (%s)",
	       pm[0] && pm[0] == pm[1] ? why : "its page frame changed");
	syscall(__NR_io_uring_register, ring, IORING_UNREGISTER_BUFFERS, NULL, 0);
	close(ring);
	if (res.done < 2) {
		r = t_move(fd, &v[1], 1, 0, &res);
		tap_ok(r == 0 && res.done == 1, "unpinned, the same page moves (%s)",
		       r ? strerror(errno) : "moved");
		if (res.done == 1) {
			tags[43] = tags[2];
			tags[2] = 0;
		}
	} else {
		tap_ok(0, "unpinned, the same page moves (it moved while pinned)");
	}
	why = "every page as the model says";
	tap_ok(t_mv_verify(heap, HEAP_PAGES, tags, &why) < 0, "and the memory is right (%s)", why);
}

/* Swap entries move, and fault back in at the destination. */
static void swap_case(void)
{
	uint64_t tags[HEAP_PAGES];
	struct fastremap_move_vec v[2];
	struct fastremap_move res;
	uint64_t pm[HEAP_PAGES];
	const char *why = t_swap_setup();
	int r, swapped = 0;

	if (*why) {
		tap_skip_test(why, "swap entries move");
		return;
	}
	heap_setup(L_HALF, tags, 0);
	madvise(heap, P(16), MADV_PAGEOUT);
	if (t_pagemap(heap, HEAP_PAGES, pm) == 0)
		for (int i = 0; i < 16; i++)
			swapped += !!(pm[i] & PM_SWAP);
	tap_ok(swapped > 0, "MADV_PAGEOUT swapped %d of 16 pages out", swapped);
	v[0].src = (uintptr_t)heap;
	v[0].dst = (uintptr_t)heap + P(40);
	v[0].len = P(8);
	v[1].src = (uintptr_t)heap + P(8);
	v[1].dst = (uintptr_t)heap + P(50);
	v[1].len = P(8);
	r = t_move(fd, v, 2, 0, &res);
	tap_ok(r == 0 && res.done == 2 && res.tlb_flushes <= 1, "swapped-out pages move (%s)",
	       r ? strerror(errno) : "ok");
	t_mv_model(tags, (uintptr_t)heap, v, 2, res.done, res.done_bytes);
	swapped = 0;
	if (t_pagemap(heap, HEAP_PAGES, pm) == 0)
		for (int i = 40; i < 58; i++)
			swapped += !!(pm[i] & PM_SWAP);
	tap_ok(swapped > 0, "the swap entries are at the destination (%d)", swapped);
	tap_ok(t_mv_verify(heap, HEAP_PAGES, tags, &why) < 0, "and fault back in intact");
	/*
	 * Reclaim finds a moved page through the rmap, at the index and in
	 * the anon_vma the move gave it: were either left as they were, the
	 * walk would look at the source, find nothing, and the page would
	 * stay mapped.
	 */
	v[0].src = (uintptr_t)heap + P(16);
	v[0].dst = (uintptr_t)heap + P(32);
	v[0].len = P(8);
	r = t_move(fd, v, 1, 0, &res);
	t_mv_model(tags, (uintptr_t)heap, v, 1, res.done, res.done_bytes);
	madvise(heap + P(32), P(8), MADV_PAGEOUT);
	swapped = 0;
	if (t_pagemap(heap, HEAP_PAGES, pm) == 0)
		for (int i = 32; i < 40; i++)
			swapped += !!(pm[i] & PM_SWAP);
	tap_ok(r == 0 && swapped > 0,
	       "resident pages moved, then paged out at their destination (%s, %d of 8 swapped)",
	       r ? strerror(errno) : "ok", swapped);
	tap_ok(t_mv_verify(heap, HEAP_PAGES, tags, &why) < 0, "and fault back in intact (%s)",
	       t_mv_verify(heap, HEAP_PAGES, tags, &why) < 0 ? "all right" : why);
	t_swap_off();
}

/* Moved entries are soft-dirty, as after mremap(2). */
static void soft_dirty_case(void)
{
	uint64_t tags[HEAP_PAGES], pm[HEAP_PAGES];
	struct fastremap_move_vec v = { 0, 0, P(2) };

	heap_setup(L_HALF, tags, 0);
	if (t_write_str("/proc/self/clear_refs", "4")) {
		tap_skip_test("no clear_refs", "moved entries are soft-dirty");
		return;
	}
	/*
	 * A page written after the clear reads soft-dirty where the kernel
	 * tracks it (CONFIG_MEM_SOFT_DIRTY: Debian's x86-64 kernels, not its
	 * arm64 ones). The heap's page 3 is outside the move below.
	 */
	*(volatile char *)(heap + P(3)) = 1;
	if (t_pagemap(heap + P(3), 1, pm) || !(pm[0] & PM_SOFT_DIRTY)) {
		tap_skip_test("the kernel does not track soft-dirty", "moved entries are soft-dirty");
		return;
	}
	if (t_write_str("/proc/self/clear_refs", "4"))
		return (void)tap_ok(0, "soft-dirty: clear_refs");
	v.src = (uintptr_t)heap;
	v.dst = (uintptr_t)heap + P(40);
	if (t_move(fd, &v, 1, 0, NULL) || t_pagemap(heap, HEAP_PAGES, pm))
		return (void)tap_ok(0, "soft-dirty: move");
	tap_ok((pm[40] & PM_SOFT_DIRTY) && (pm[41] & PM_SOFT_DIRTY) && !(pm[2] & PM_SOFT_DIRTY),
	       "moved entries are soft-dirty, others are not");
}

/*
 * THPs: an aligned PMD-sized move with an empty destination takes the THP
 * whole (moved_thp, still AnonHugePages); a move that cuts one splits it
 * first (split), both with every page checked.
 */
static void thp_case(void)
{
	size_t len = 8 * PMD_SZ, npages = len / PG;
	long thp_kb = PMD_SZ >> 10;
	struct fastremap_move_vec v[2];
	struct fastremap_move res;
	struct t_smaps sm;
	struct t_area a;
	uint64_t *tags = calloc(npages, sizeof(*tags));
	const char *why;
	char *h;
	long bad;
	int r;

	h = t_map_aligned(len, PMD_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0, &a);
	if (!h || !tags || madvise(h, len, MADV_HUGEPAGE)) {
		tap_skip_test("no MADV_HUGEPAGE", "THP: moves whole when aligned");
		tap_skip_test("no MADV_HUGEPAGE", "THP: a move that cuts one splits it");
		goto out;
	}
	/* THPs in the first two PMDs; the rest stays empty. */
	for (size_t i = 0; i < 2 * PMD_SZ / PG; i++)
		t_tag_fill(h + i * PG, tags[i] = t_tag(seed, i));
	t_smaps_range((uintptr_t)h, (uintptr_t)h + len, &sm);
	if (sm.anon_huge_kb < thp_kb) {
		tap_skip_test("no THP given to a MADV_HUGEPAGE region",
			      "THP: moves whole when aligned");
		tap_skip_test("no THP given to a MADV_HUGEPAGE region",
			      "THP: a move that cuts one splits it");
		goto out;
	}
	v[0].src = (uintptr_t)h;
	v[0].dst = (uintptr_t)h + 4 * PMD_SZ;
	v[0].len = PMD_SZ;
	r = t_move(fd, v, 1, 0, &res);
	t_mv_model(tags, (uintptr_t)h, v, 1, res.done, res.done_bytes);
	bad = t_mv_verify(h, npages, tags, &why);
	/* smaps sums the whole mapping: both THPs, neither split. */
	t_smaps_range((uintptr_t)h, (uintptr_t)h + len, &sm);
	tap_ok(r == 0 && res.moved_thp == 1 && res.moved_pte == 0 && res.split == 0 &&
	       res.tlb_flushes == 1 && bad < 0 && sm.anon_huge_kb == 2 * thp_kb,
	       "THP: moves whole when aligned (%s, thp %llu, pte %llu, split %llu, "
	       "AnonHugePages %ld kB, page %ld: %s)",
	       r ? strerror(errno) : "ok", (unsigned long long)res.moved_thp,
	       (unsigned long long)res.moved_pte, (unsigned long long)res.split,
	       sm.anon_huge_kb, bad, bad < 0 ? "all right" : why);
	/* Cut: the second THP's middle half, to a misaligned place. */
	v[0].src = (uintptr_t)h + PMD_SZ + PMD_SZ / 4;
	v[0].dst = (uintptr_t)h + 6 * PMD_SZ + PG;
	v[0].len = PMD_SZ / 2;
	r = t_move(fd, v, 1, 0, &res);
	t_mv_model(tags, (uintptr_t)h, v, 1, res.done, res.done_bytes);
	bad = t_mv_verify(h, npages, tags, &why);
	tap_ok(r == 0 && res.split >= 1 && res.moved_pte == PMD_SZ / 2 / PG && bad < 0,
	       "THP: a move that cuts one splits it (%s, split %llu, pte %llu, page %ld: %s)",
	       r ? strerror(errno) : "ok", (unsigned long long)res.split,
	       (unsigned long long)res.moved_pte, bad, bad < 0 ? "all right" : why);
out:
	free(tags);
	t_release(&a);
}

/*
 * mTHP (6.8+): 64 KiB folios mapped by PTEs (16 pages of 4 KiB, 4 of
 * 16 KiB). A move that cuts one splits
 * it first; one that covers a whole folio moves it (split or not), both
 * with every page checked. /proc/kpageflags says which pages are in large
 * folios before the moves.
 */
#define MTHP_CTL	"/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled"
#define KPF_COMPOUND_HEAD	15
#define KPF_COMPOUND_TAIL	16

static int mthp_large_pages(const char *p, size_t npages)
{
	uint64_t pm[256], fl;
	int n = 0, kf = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);

	if (kf < 0 || npages > 256 || t_pagemap(p, npages, pm)) {
		if (kf >= 0)
			close(kf);
		return -1;
	}
	for (size_t i = 0; i < npages; i++)
		if ((pm[i] & PM_PRESENT) &&
		    pread(kf, &fl, 8, PM_PFN(pm[i]) * 8) == 8 &&
		    (fl & ((1ULL << KPF_COMPOUND_HEAD) | (1ULL << KPF_COMPOUND_TAIL))))
			n++;
	close(kf);
	return n;
}

static void mthp_case(void)
{
	const char *t1 = "mTHP: a move that cuts a 64 KiB folio splits it";
	const char *t2 = "mTHP: a move of whole 64 KiB folios";
	size_t len = SZ_1M, npages = len / PG;
	struct fastremap_move_vec v[2];
	struct fastremap_move res;
	char old[128], *b, *e, *h;
	uint64_t tags[256];
	struct t_area a;
	const char *why;
	long bad;
	int r, large;

	if (t_read_str(MTHP_CTL, old, sizeof(old))) {
		tap_skip_test("no mTHP before 6.8", "%s", t1);
		tap_skip_test("no mTHP before 6.8", "%s", t2);
		return;
	}
	/* The setting in force is the bracketed word. */
	b = strchr(old, '[');
	e = b ? strchr(b, ']') : NULL;
	if (!b || !e || t_write_str(MTHP_CTL, "always")) {
		tap_ok(0, "mTHP: set %s", MTHP_CTL);
		return;
	}
	*e = 0;
	/* 1 MiB, 64 KiB-aligned, in no PMD-aligned range: no PMD THP here. */
	h = t_map_aligned(len, PMD_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			0, &a);
	if (!h) {
		tap_ok(0, "mTHP: map");
		goto restore;
	}
	munmap(h, len);
	h += 64 << 10;
	if (mmap(h, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != h) {
		tap_ok(0, "mTHP: map");
		goto out;
	}
	/* Data in the first half, holes in the second. */
	for (size_t i = 0; i < npages; i++) {
		tags[i] = i < npages / 2 ? t_tag(seed ^ 0x64, i) : 0;
		if (tags[i])
			t_tag_fill(h + i * PG, tags[i]);
	}
	large = mthp_large_pages(h, npages / 2);
	if (large <= 0) {
		tap_skip_test("no 64 KiB folios given with hugepages-64kB enabled", "%s", t1);
		tap_skip_test("no 64 KiB folios given with hugepages-64kB enabled", "%s", t2);
		goto out;
	}
	tap_diag("mTHP: %d of %zu pages in large folios", large, npages / 2);
	/* 32 KiB out of the middle of the second folio, to a misaligned hole. */
	v[0].src = (uintptr_t)h + (64 << 10) + (16 << 10);
	v[0].dst = (uintptr_t)h + len / 2 + PG;
	v[0].len = 32 << 10;
	r = t_move(fd, v, 1, 0, &res);
	t_mv_model(tags, (uintptr_t)h, v, 1, res.done, res.done_bytes);
	bad = t_mv_verify(h, npages, tags, &why);
	tap_ok(r == 0 && res.split >= 1 && res.moved_pte == (32 << 10) / PG &&
	       res.tlb_flushes == 1 && bad < 0,
	       "%s (%s, split %llu, pte %llu, page %ld: %s)", t1, r ? strerror(errno) : "ok",
	       (unsigned long long)res.split, (unsigned long long)res.moved_pte, bad,
	       bad < 0 ? "all right" : why);
	/* Folios 4 and 5 whole, to an aligned hole. */
	v[0].src = (uintptr_t)h + 4 * (64 << 10);
	v[0].dst = (uintptr_t)h + len / 2 + 4 * (64 << 10);
	v[0].len = 128 << 10;
	r = t_move(fd, v, 1, 0, &res);
	t_mv_model(tags, (uintptr_t)h, v, 1, res.done, res.done_bytes);
	bad = t_mv_verify(h, npages, tags, &why);
	tap_ok(r == 0 && res.moved_pte == (128 << 10) / PG && res.tlb_flushes == 1 && bad < 0,
	       "%s (%s, split %llu, pte %llu, page %ld: %s)", t2, r ? strerror(errno) : "ok",
	       (unsigned long long)res.split, (unsigned long long)res.moved_pte, bad,
	       bad < 0 ? "all right" : why);
out:
	t_release(&a);
restore:
	t_write_str(MTHP_CTL, b + 1);
}

/*
 * A THP shared with a child after fork(2): a move of one of its pages
 * answers EBUSY and splits nothing, neither the parent's PMD mapping nor
 * the folio the child maps whole; the child's copy reads right after.
 */
static void thp_fork_case(void)
{
	const char *t = "a page of a THP shared with a child -> EBUSY, the THP not split";
	size_t len = 2 * PMD_SZ, npages = len / PG;
	struct fastremap_move_vec v;
	struct fastremap_move res;
	struct t_smaps before, after;
	struct t_area a;
	uint64_t *tags = calloc(npages, sizeof(*tags));
	int pipefd[2] = { -1, -1 }, r, e, st = -1;
	const char *why;
	char c = 0, *h;
	pid_t pid;

	h = t_map_aligned(len, PMD_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0, &a);
	if (!h || !tags || madvise(h, len, MADV_HUGEPAGE)) {
		tap_skip_test("no MADV_HUGEPAGE", "%s", t);
		goto out;
	}
	/* A THP in the first PMD; the second stays empty. */
	for (size_t i = 0; i < PMD_SZ / PG; i++)
		t_tag_fill(h + i * PG, tags[i] = t_tag(seed ^ 0xf0, i));
	t_smaps_range((uintptr_t)h, (uintptr_t)h + PMD_SZ, &before);
	if (before.anon_huge_kb < (long)(PMD_SZ >> 10)) {
		tap_skip_test("no THP given to a MADV_HUGEPAGE region", "%s", t);
		goto out;
	}
	if (pipe(pipefd))
		return (void)tap_ok(0, "%s: pipe", t);
	pid = fork();
	if (pid == 0) {
		struct t_smaps mine;

		if (read(pipefd[0], &c, 1) != 1)
			_exit(2);
		close(t_pagemap_fd);
		t_pagemap_fd = -1;
		t_smaps_range((uintptr_t)h, (uintptr_t)h + PMD_SZ, &mine);
		_exit(t_mv_verify(h, npages, tags, &why) >= 0 ? 3 : mine.anon_huge_kb < (long)(PMD_SZ >> 10) ? 4 : 0);
	}
	v.src = (uintptr_t)h + PG;
	v.dst = (uintptr_t)h + PMD_SZ + PG;
	v.len = PG;
	r = t_move(fd, &v, 1, 0, &res);
	e = errno;
	t_smaps_range((uintptr_t)h, (uintptr_t)h + PMD_SZ, &after);
	if (pid > 0) {
		if (write(pipefd[1], &c, 1) != 1)
			kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	tap_ok(pid > 0 && r == -1 && e == EBUSY && res.done_bytes == 0 && res.split == 0 &&
	       after.anon_huge_kb == before.anon_huge_kb && WIFEXITED(st) && !WEXITSTATUS(st),
	       "%s (%s, split %llu, AnonHugePages %ld -> %ld kB, child %d)", t,
	       r ? strerror(e) : "moved", (unsigned long long)res.split, before.anon_huge_kb,
	       after.anon_huge_kb, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
out:
	if (pipefd[0] >= 0) {
		close(pipefd[0]);
		close(pipefd[1]);
	}
	free(tags);
	t_release(&a);
}

/*
 * In a forked child, between two mappings it inherited from one mapping
 * of the parent's: each has an anon_vma of its own, siblings under the
 * parent's. A page the child wrote belongs to the first one's. Kernels
 * with UFFDIO_MOVE (6.8+) let a mapped folio take any anon_vma of the
 * root, and the page moves; older ones assume a mapped folio's anon_vma
 * only ever becomes a descendant of it, and the module refuses (EXDEV),
 * the page staying where it was.
 */
static void sibling_case(int have_uffd_move)
{
	const char *t = have_uffd_move ?
		"a forked child's page between two inherited mappings moves (6.8+)" :
		"a forked child's page between two inherited mappings -> EXDEV (before 6.8)";
	struct fastremap_move_vec v;
	struct t_area a;
	int st = -1;
	char *h;
	pid_t pid;

	h = t_map_aligned(P(32), PMD_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0, &a);
	if (!h)
		return (void)tap_ok(0, "%s: map", t);
	t_tag_fill(h, t_tag(seed, 0));
	/* Two mappings of one anon_vma: the second half's flags differ. */
	if (madvise(h + P(16), P(16), MADV_NOHUGEPAGE)) {
		t_release(&a);
		return (void)tap_ok(0, "%s: split", t);
	}
	pid = fork();
	if (pid == 0) {
		struct fastremap_move res;
		uint64_t tag = t_tag(seed, 7);
		int r;

		t_tag_fill(h + P(1), tag);		/* the child's own page */
		v = (struct fastremap_move_vec){ (uintptr_t)h + P(1), (uintptr_t)h + P(20), PG };
		r = t_move(fd, &v, 1, 0, &res);
		if (have_uffd_move)
			_exit(r ? 1 : ((uint64_t *)(h + P(20)))[0] != tag ? 2 : 0);
		_exit(!r || errno != EXDEV ? 3 : ((uint64_t *)(h + P(1)))[0] != tag ? 4 : 0);
	}
	if (pid > 0)
		waitpid(pid, &st, 0);
	tap_ok(WIFEXITED(st) && !WEXITSTATUS(st), "%s (child %d)", t,
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	t_release(&a);
}

/*
 * The table again with passes of 3 pages: batches that do not fit one
 * pass must go on to their end, and stop only where an error stops them.
 */
static void multi_pass_cases(void)
{
	/*
	 * The module users get (DKMS, the Debian packages) has no parameters
	 * at all; the lanes' guests refuse to run without a test build.
	 */
	if (access("/sys/module/fastremap/parameters", F_OK) && errno == ENOENT) {
		tap_skip_test("not a test build of the module (no parameters)",
			      "the table in passes of 3 pages (move_pass_pages)");
		return;
	}
	if (t_mv_set_pass(3)) {
		tap_ok(0, "set move_pass_pages (a test build of the module)");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		run_case(&cases[i], 3);
	t_mv_set_pass(0);
}

/*
 * Batches past the built-in pass bound (2^18 pages: 1 GiB of 4 KiB pages),
 * at their real size: a sparse move of twice that with holes allowed, and
 * 1280 moves of 1 MiB of populated memory (past the bound with 4 KiB pages
 * only: 5 GiB of 16 KiB pages would not fit the test VM). Each must move
 * everything, then every page is checked where it landed and the sources
 * are holes.
 */
static void big_case(const char *name, size_t len, size_t step, uint32_t nmoves)
{
	size_t npages = 2 * len / PG, chunk = len / nmoves;
	struct fastremap_move_vec *v = calloc(nmoves, sizeof(*v));
	uint64_t *tags = calloc(npages, sizeof(*tags));
	struct fastremap_move res;
	struct t_area a;
	const char *why;
	char *base;
	long bad;
	int r;

	base = t_map_aligned(2 * len, PMD_SZ, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, &a);
	if (!v || !tags || !base) {
		tap_ok(0, "%s: set up (%s)", name, strerror(errno));
		goto out;
	}
	madvise(base, 2 * len, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < len / PG; i += step / PG) {
		tags[i] = t_tag(seed, i);
		t_tag_fill(base + i * PG, tags[i]);
	}
	for (uint32_t k = 0; k < nmoves; k++) {
		v[k].src = (uintptr_t)base + k * chunk;
		v[k].dst = (uintptr_t)base + len + k * chunk;
		v[k].len = chunk;
	}
	r = t_move(fd, v, nmoves, step > PG ? FASTREMAP_MOVE_ALLOW_HOLES : 0, &res);
	if (!tap_ok(!r && res.done == nmoves && !res.done_bytes,
		    "%s: the whole batch moves", name))
		tap_diag("%s, done %llu of %u, done_bytes %llu, %llu PTEs, %llu flushes",
			 r ? strerror(errno) : "success", (unsigned long long)res.done,
			 nmoves, (unsigned long long)res.done_bytes,
			 (unsigned long long)res.moved_pte,
			 (unsigned long long)res.tlb_flushes);
	t_mv_model(tags, (uintptr_t)base, v, nmoves, res.done, res.done_bytes);
	bad = t_mv_verify(base, npages, tags, &why);
	if (!tap_ok(bad < 0, "%s: every page at its destination, every source a hole", name))
		tap_diag("page %ld: %s", bad, why);
out:
	if (base)
		t_release(&a);
	free(v);
	free(tags);
}

static void big_cases(void)
{
	char name[96];

	snprintf(name, sizeof(name), "%zu GiB, one page every %zu MiB, holes allowed",
		 2 * (PG << 18) >> 30, PMD_SZ >> 20);
	big_case(name, 2 * (PG << 18), PMD_SZ, 1);
	big_case("1280 moves of 1 MiB, every page populated", 1280UL << 20, PG, 1280);
}

static void info_case(void)
{
	struct fastremap_info i;

	if (t_info(fd, &i))
		return (void)tap_ok(0, "INFO");
	tap_ok((i.features & FASTREMAP_FEAT_MOVE) &&
	       (i.ioctls & (1ULL << _IOC_NR(FASTREMAP_IOC_MOVE))),
	       "INFO reports FASTREMAP_FEAT_MOVE and the ioctl");
}

static void rdonly_case(void)
{
	int ro = open(FASTREMAP_DEVICE, O_RDONLY | O_CLOEXEC);
	struct fastremap_move_vec v = { (uintptr_t)heap, (uintptr_t)heap + P(40), PG };

	tap_errno(t_move(ro, &v, 1, 0, NULL), EBADF, "a descriptor opened read-only -> EBADF");
	close(ro);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		seed = strtoull(argv[1], NULL, 0);
	tap_diag("seed %llu", (unsigned long long)seed);
	fd = t_open_mover();
	if (fd < 0)
		return tap_done();
	info_case();
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		run_case(&cases[i], 0);
	multi_pass_cases();
	request_cases();
	vector_cases();
	user_access_cases();
	shared_file_case();
	rdonly_case();
	mapping_cases();
	exdev_case();
	fork_case();
	pin_case();
	sibling_case(t_have_uffd_move());
	soft_dirty_case();
	thp_case();
	thp_fork_case();
	mthp_case();
	swap_case();
	t_release(&area);
	big_cases();
	return tap_done();
}
