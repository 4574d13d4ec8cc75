// SPDX-License-Identifier: GPL-2.0
/*
 * Hostile input to /dev/fastremap: random command numbers, structure
 * sizes, flags, reserved fields and pointers (NULL, kernel addresses,
 * unmapped, read-only, misaligned, straddling a page end), and remap
 * arguments aimed at a sentinel mapping. Every call must end with 0 or an
 * errno; the sentinel's contents and mapping must never change unless a
 * call succeeded on it; answers must carry no stray data.
 *
 * Two calls in five aim at real mappings instead: a pool of patterned
 * targets (1-64 pages, or 2-4 MiB), moved whole with plausible arguments
 * (FIXED into a reservation, possibly onto another target or over
 * itself, MAYMOVE, DONTUNMAP, growth, shrink) and now and then one
 * hostile field. These reach the mover, so the memory is checked after
 * each of them: a moved target holds its pattern at the new address (a
 * word of every page, all of the first and last page), its old place is
 * gone (or empty, for DONTUNMAP); a target a call failed on, and every
 * target a FIXED destination did not cover, is where it was and intact.
 *
 * A second phase does the same for FASTREMAP_IOC_MOVE: hostile request
 * structures and vectors (bad pointers, counts up to 2^32, unaligned,
 * overlapping, wrapping, zero-length and kernel-address moves, flags,
 * reserved fields), and batches aimed at a tagged heap, valid ones and
 * ones with one hostile field: a hostile one must fail and move nothing,
 * a valid one must move in full, and every page of the heap is checked
 * against the model after each call.
 *
 * A third phase closes the file while other threads are inside ioctls on
 * it. The harness fails the run on any kernel-log splat.
 *
 * Usage: t_ioctl_fuzz [SEED [CALLS]] (fixed seed by default; printed).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include "tlib.h"

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
static int fd;

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
	case 5: return (uintptr_t)sentinel + (rnd() % (SENTINEL_LEN / page)) * page; /* aligned inside */
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
	case 3: r->reserved[rnd() % ARRAY_SIZE(r->reserved)] = rnd() | 1; break;
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

/* ---------------------------------------------------------------------- */
/* Calls aimed at real mappings                                            */

#define NTARGETS	8
#define RESV_LEN	(256 * SZ_1M)
#define SLOT		(8 * SZ_1M)

static struct target {
	char *addr;
	size_t len;
	uint64_t seed;
} tg[NTARGETS];
static char *resv;
static long aimed, moved, mem_bad;

static void mem_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void mem_fail(const char *fmt, ...)
{
	va_list ap;

	if (mem_bad++ >= 10)
		return;
	printf("# memory wrong: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* The first word of page pg of a pattern (see t_pattern_page()). */
static uint64_t word0(uint64_t seed, uint64_t pg)
{
	uint64_t s = t_page_state(seed, pg);

	return t_xorshift64(&s);
}

/*
 * Whether [p, p+len) holds the pattern of pages first.. of seed: a word
 * of every page, the first and last page whole. Faults count as wrong.
 */
static int holds(const char *p, size_t len, uint64_t seed, uint64_t first)
{
	uint64_t v;

	for (size_t o = 0; o < len; o += PG)
		if (t_probe_read(p + o, &v) || v != word0(seed, first + o / PG))
			return 0;
	return t_check_page(p, seed, first) < 0 &&
	       t_check_page(p + len - PG, seed, first + (len - PG) / PG) < 0;
}

/* The first word of a target's first and last page. */
static int holds_ends(const struct target *t)
{
	uint64_t v, w, last = t->len / PG - 1;

	return !t_probe_read(t->addr, &v) && v == word0(t->seed, 0) &&
	       !t_probe_read(t->addr + last * PG, &w) && w == word0(t->seed, last);
}

static int overlaps(const char *a, size_t al, const char *b, size_t bl)
{
	return a < b + bl && b < a + al;
}

/* Whether [p, p+len) lies in the reservation, where nothing else lives. */
static int in_resv(const char *p, size_t len)
{
	return p >= resv && p + len <= resv + RESV_LEN;
}

/* Whether [p, p+len) overlaps a target other than skip. */
static int hits_target(const char *p, size_t len, int skip)
{
	for (int k = 0; k < NTARGETS; k++)
		if (k != skip && tg[k].addr && overlaps(p, len, tg[k].addr, tg[k].len))
			return 1;
	return 0;
}

/*
 * A fresh target i in a free slot of the reservation (or anywhere): only
 * the reservation's PROT_NONE is replaced, never a neighbour.
 */
static void target_new(int i)
{
	size_t len = rnd() % 5 ? (1 + rnd() % 64) * PG : (1 + rnd() % 2) * SZ_2M;
	char *p = MAP_FAILED;

	tg[i].addr = NULL;
	for (int k = 0; k < 16 && p == MAP_FAILED; k++) {
		char *at = resv + (rnd() % (RESV_LEN / SLOT)) * SLOT + (rnd() % 2) * PG;

		if (!hits_target(at, len, i))
			p = mmap(at, len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	}
	if (p == MAP_FAILED)
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (len >= SZ_2M)
		madvise(p, len, MADV_HUGEPAGE);
	tg[i].addr = p;
	tg[i].len = len;
	tg[i].seed = rnd() | 1;
	t_fill_pattern(p, len, tg[i].seed);
}

/* One call aimed at target i, and the memory checked after it. */
static void aimed_call(void)
{
	int i = rnd() % NTARGETS, fixed, du, r6 = rnd() % 10;
	struct target t = tg[i];
	struct fastremap_remap r;
	size_t new_len = t.len;
	char *dst = NULL;
	long ret;

	switch (rnd() % 6) {
	case 0: new_len = t.len + (1 + rnd() % 16) * PG; break;
	case 1: new_len = t.len > PG ? t.len - (1 + rnd() % (t.len / PG - 1)) * PG : t.len; break;
	default: break;
	}
	switch (rnd() % 8) {
	case 0: r.mremap_flags = MREMAP_MAYMOVE; break;
	case 1: r.mremap_flags = MREMAP_MAYMOVE | MREMAP_DONTUNMAP; new_len = t.len; break;
	case 2: r.mremap_flags = MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP; new_len = t.len; break;
	default: r.mremap_flags = MREMAP_MAYMOVE | MREMAP_FIXED; break;
	}
	fixed = r.mremap_flags & MREMAP_FIXED;
	/*
	 * FIXED targets stay inside the reservation, so that a move never
	 * replaces anything but targets and PROT_NONE: onto a target (maybe
	 * itself), or a slot.
	 */
	if (fixed) {
		dst = tg[rnd() % NTARGETS].addr;
		if (rnd() % 4 || !in_resv(dst, new_len))
			dst = resv + (rnd() % (RESV_LEN / SLOT)) * SLOT + (rnd() % 4 ? 0 : PG);
	}
	t_req_init(&r, t.addr, t.len, new_len, r.mremap_flags, dst);
	/* Now and then one hostile field: the call must fail, changing nothing. */
	switch (r6) {
	case 0: r.reserved[rnd() % ARRAY_SIZE(r.reserved)] = rnd() | 1; break;
	case 1: r.flags = 1U << (rnd() % 32); break;
	case 2: r.mremap_flags |= 8U << (rnd() % 29); break;
	case 3: r.old_addr += 1 + rnd() % (PG - 1); break;
	case 4: r.size = FASTREMAP_REMAP_SIZE_VER0 - 8; break;
	default: break;
	}
	du = r.mremap_flags & MREMAP_DONTUNMAP;
	aimed++;
	ret = ioctl(fd, FASTREMAP_IOC_REMAP, &r);
	if (ret == 0 && r6 < 5)
		mem_fail("call %ld: a hostile field (case %d) was accepted", aimed, r6);
	if (ret == 0) {
		char *na = (char *)(uintptr_t)r.new_addr;
		size_t keep = t.len < new_len ? t.len : new_len;

		moved++;
		if (fixed && na != dst)
			mem_fail("call %ld: FIXED move to %p landed at %p", aimed, dst, na);
		if (!holds(na, keep, t.seed, 0))
			mem_fail("call %ld: target %d (%zu pages) not intact at its new address %p",
				 aimed, i, t.len / PG, na);
		if (new_len > keep && t_verify_zero(na + keep, new_len - keep, 0) >= 0)
			mem_fail("call %ld: target %d: grown tail not zero", aimed, i);
		/* The old place: empty (DONTUNMAP), or gone. */
		if (!overlaps(t.addr, t.len, na, new_len)) {
			uint64_t v;

			if (du && (t_probe_read(t.addr, &v) || t_verify_zero(t.addr, t.len, 0) >= 0))
				mem_fail("call %ld: target %d: DONTUNMAP source not empty", aimed, i);
			else if (!du && !t_probe_read(t.addr, &v))
				mem_fail("call %ld: target %d: old address still mapped", aimed, i);
			if (du)
				munmap(t.addr, t.len);
		}
		t_fill_pattern_off(na + keep, new_len - keep, t.seed, keep / PG);
		tg[i].addr = na;
		tg[i].len = new_len;
	}
	/* Every other target: intact, unless the destination covered it. */
	for (int k = 0; k < NTARGETS; k++) {
		if (k == i && ret == 0)
			continue;
		if (ret == 0 && overlaps(tg[k].addr, tg[k].len, tg[i].addr, tg[i].len)) {
			/* What is left of it, outside target i's new place. */
			char *ks = tg[k].addr, *ke = ks + tg[k].len;
			char *is = tg[i].addr, *ie = is + tg[i].len;

			if (ks < is)
				munmap(ks, is - ks);
			if (ke > ie)
				munmap(ie, ke - ie);
			target_new(k);
			continue;
		}
		/*
		 * Whole checks where the call could write (its own target, a
		 * FIXED destination), the ends of the others, everything now
		 * and then.
		 */
		if (k != i && !(fixed && overlaps(tg[k].addr, tg[k].len, dst, new_len)) &&
		    aimed % 256 && holds_ends(&tg[k]))
			continue;
		if (!holds(tg[k].addr, tg[k].len, tg[k].seed, 0))
			mem_fail("call %ld (%s on target %d, ret %ld errno %s): target %d (%zu pages at %p) not intact",
				 aimed, t_flagstr(r.mremap_flags), i, ret, ret ? t_errname(errno) : "0", k,
				 tg[k].len / PG, tg[k].addr);
	}
}

static void fuzz(int fd, uint64_t seed)
{
	static const __u64 zero_reserved[ARRAY_SIZE(((struct fastremap_remap *)0)->reserved)];
	long bad_ret = 0, changed = 0, leaks = 0, ok_calls = 0;
	uint64_t before = sentinel_sum();
	double t0 = t_now();

	for (int i = 0; i < calls; i++) {
		struct fastremap_remap r;
		unsigned long cmd;
		void *arg;
		size_t len;
		long ret;

		if (rnd() % 5 < 2) {
			aimed_call();
			continue;
		}
		cmd = hostile_cmd();

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
			    (r.flags || r.__pad0 ||
			     memcmp(r.reserved, zero_reserved, sizeof(r.reserved))))
				leaks++;
		}
	}
	changed = sentinel_sum() != before;
	tap_diag("%d calls in %.2f s", calls, t_now() - t0);
	tap_ok(bad_ret == 0, "fuzz seed %" PRIu64 ": %ld hostile calls, each 0 or -1 with an errno (%ld bad)",
	       seed, calls - aimed, bad_ret);
	tap_ok(mem_bad == 0 && moved > 0,
	       "fuzz: %ld calls aimed at %d patterned mappings, %ld of which moved one: memory right after each (%ld wrong)",
	       aimed, NTARGETS, moved, mem_bad);
	/* For the harness's per-kernel summary. */
	tap_diag("FR-STATS hostile_calls=%d hostile_aimed=%ld hostile_moved=%ld", calls, aimed, moved);
	tap_ok(!changed, "fuzz: the sentinel mapping is unchanged");
	tap_ok(leaks == 0, "fuzz: successful answers carry no stray data (%ld of %ld)",
	       leaks, ok_calls);
}

/* ---------------------------------------------------------------------- */
/* FASTREMAP_IOC_MOVE                                                      */

#define MV_CALLS	4000
#define MV_PAGES	256
#define MV_MAXN		8

static char *mv_heap;
static uint64_t mv_tags[MV_PAGES];

static int mv_in_sentinel(uint64_t a)
{
	return a >= (uintptr_t)sentinel - SENTINEL_LEN && a < (uintptr_t)sentinel + SENTINEL_LEN;
}

/* Up to want valid moves on the heap: data to holes, disjoint. */
static uint32_t mv_valid(struct fastremap_move_vec *v, uint32_t want)
{
	uint64_t work[MV_PAGES];
	uint8_t used[MV_PAGES] = { 0 };
	uint32_t n = 0;

	memcpy(work, mv_tags, sizeof(work));
	for (int tries = 0; n < want && tries < 400; tries++) {
		size_t len = 1 + rnd() % 8, s = rnd() % (MV_PAGES - len), d = rnd() % (MV_PAGES - len);

		if (t_mv_fits(work, used, used, s, d, len, 0))
			t_mv_add(&v[n++], mv_heap, work, used, used, s, d, len);
	}
	return n;
}

/*
 * One hostile change to a valid batch of n >= 1 moves, each refused
 * before anything moves. Returns the change's number (for the report).
 */
static int mv_spoil(struct fastremap_move *m, struct fastremap_move_vec *v, uint32_t n)
{
	uint32_t k = rnd() % n, j = rnd() % n;
	int c = rnd() % 14;

	switch (c) {
	case 0: v[k].src += 1 + rnd() % (PG - 1); break;		/* unaligned */
	case 1: v[k].dst += 8; break;
	case 2: v[k].len += 1 + rnd() % (PG - 1); break;
	case 3: v[k].len = 0; break;
	case 4: v[k].dst = v[k].src + (v[k].len > PG ? PG : 0); break;	/* onto itself */
	case 5: v[k].len = -(uint64_t)PG; break;			/* wraps */
	case 6: v[k].src = 0xffff800000000000ULL + (rnd() & 0xffffff000ULL); break;
	case 7: v[k].dst = 0xffff800000000000ULL + (rnd() & 0xffffff000ULL); break;
	case 8:					/* two sources overlap, or (9) two destinations */
	case 9:
		if (n < 2)
			return mv_spoil(m, v, n);
		if (j == k)
			j = (k + 1) % n;
		if (c == 8)
			v[k].src = v[j].src;
		else
			v[k].dst = v[j].dst;
		break;
	case 10: m->flags = 2U << (rnd() % 31); break;
	case 11: m->reserved[rnd() % ARRAY_SIZE(m->reserved)] = rnd() | 1; break;
	case 12: m->__pad0 = rnd() | 1; break;
	default: v[k].dst = (uintptr_t)mv_heap + MV_PAGES * PG; break;	/* past the heap */
	}
	return c;
}

static void move_fuzz(void)
{
	struct fastremap_move_vec *vec = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE,
					      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long bad_ret = 0, spoiled = 0, spoil_ok = 0, valid = 0, valid_bad = 0, wrong = 0;
	long e2big = 0, efault = 0, ok_calls = 0, moved_pages = 0;
	uint64_t before = sentinel_sum();
	double t0 = t_now();
	struct t_area a;
	const char *why;

	if (!t_move_supported(fd))
		return;
	mv_heap = t_map_aligned(MV_PAGES * PG, PMD_SZ, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &a);
	if (!tap_ok(mv_heap && vec != MAP_FAILED, "move fuzz: map the heap"))
		return;
	/* The vector's second page is gone: a vector may run off its end. */
	munmap((char *)vec + PG, PG);
	for (size_t i = 0; i < MV_PAGES; i++) {
		mv_tags[i] = 0;
		if (rnd() % 2) {
			mv_tags[i] = t_tag(0xf022, i);
			t_tag_fill(mv_heap + i * PG, mv_tags[i]);
		}
	}
	for (int c = 0; c < MV_CALLS; c++) {
		struct fastremap_move m;
		struct fastremap_move_vec *v = vec;
		void *arg = &m;
		int kind = rnd() % 8, spoil = -1;
		uint32_t n = 0;
		long ret;

		memset(&m, 0, sizeof(m));
		m.size = sizeof(m);
		m.moves = (uintptr_t)vec;
		if (kind < 4) {
			/* Aimed at the heap: valid, or with one hostile field. */
			n = mv_valid(v, 1 + rnd() % MV_MAXN);
			if (!n)
				continue;
			if (kind < 2)
				spoil = mv_spoil(&m, v, n);
		} else if (kind < 6) {
			/* Hostile vectors of hostile moves; none takes from the sentinel. */
			n = 1 + rnd() % 4;
			for (uint32_t k = 0; k < n; k++) {
				v[k].src = hostile_addr();
				v[k].dst = hostile_addr();
				v[k].len = hostile_len();
				if (mv_in_sentinel(v[k].src) || mv_in_sentinel(v[k].dst))
					v[k].dst = (uintptr_t)sentinel + (rnd() % (SENTINEL_LEN / PG / 2)) * PG;
			}
			if (rnd() % 4 == 0) {
				/* Runs off the vector's page. */
				v = (struct fastremap_move_vec *)((char *)vec + PG) - n + 1;
				memmove(v, vec, (n - 1) * sizeof(*v));
				m.moves = (uintptr_t)v;
			}
		} else if (kind == 6) {
			/* A hostile vector pointer or count. */
			switch (rnd() % 6) {
			case 0: n = FASTREMAP_MOVE_MAX + 1 + rnd() % 1000; break;
			case 1: n = (uint32_t)rnd() | 0x80000000U; break;
			case 2: n = FASTREMAP_MOVE_MAX; break;
			default: n = 1 + rnd() % 64; break;
			}
			m.moves = rnd() % 2 ? hostile_addr() : (uintptr_t)ro_page;
			if (mv_in_sentinel(m.moves))
				m.moves = (uintptr_t)ro_page;
		} else {
			/* A hostile request structure, or a pointer to none. */
			n = 1;
			v[0].src = v[0].dst = (uintptr_t)mv_heap;
			v[0].len = PG;
			switch (rnd() % 5) {
			case 0: m.size = (uint32_t)rnd(); break;
			case 1: m.size = FASTREMAP_MOVE_SIZE_VER0 - 8; break;
			case 2: arg = (void *)(uintptr_t)hostile_addr(); break;
			case 3: arg = ro_page; break;
			default: arg = edge_page + page - sizeof(m) / 2;
				memcpy(arg, &m, sizeof(m) / 2); break;
			}
		}
		m.count = n;
		errno = 0;
		ret = ioctl(fd, FASTREMAP_IOC_MOVE, arg);
		if (ret != 0 && (ret != -1 || errno <= 0 || errno > 4095))
			bad_ret++;
		e2big += ret && errno == E2BIG;
		efault += ret && errno == EFAULT;
		ok_calls += !ret;
		if (kind < 4) {
			if (spoil >= 0) {
				spoiled++;
				if (!ret || m.done || m.done_bytes) {
					if (!spoil_ok++)
						printf("# move call %d: hostile change %d: ret %ld done %llu bytes %llu\n",
						       c, spoil, ret, (unsigned long long)m.done,
						       (unsigned long long)m.done_bytes);
				}
			} else {
				valid++;
				if (ret || m.done != n) {
					if (!valid_bad++)
						printf("# move call %d: valid batch of %u: %s, done %llu\n",
						       c, n, ret ? strerror(errno) : "ok",
						       (unsigned long long)m.done);
				}
			}
			if (!ret || m.done || m.done_bytes) {
				t_mv_model(mv_tags, (uintptr_t)mv_heap, v, n, m.done, m.done_bytes);
				for (uint32_t k = 0; k < n && k < m.done; k++)
					moved_pages += v[k].len / PG;
			}
		}
		if (t_mv_verify(mv_heap, MV_PAGES, mv_tags, &why) >= 0 && !wrong++)
			printf("# move call %d (kind %d): heap wrong: %s\n", c, kind, why);
	}
	tap_diag("%d move calls in %.2f s: %ld valid, %ld with a hostile field, %ld succeeded, "
		 "%ld E2BIG, %ld EFAULT, %ld pages moved", MV_CALLS, t_now() - t0, valid, spoiled,
		 ok_calls, e2big, efault, moved_pages);
	tap_ok(bad_ret == 0, "move fuzz: each call 0 or -1 with an errno (%ld bad)", bad_ret);
	tap_ok(spoiled > 0 && spoil_ok == 0,
	       "move fuzz: %ld batches with one hostile field, each refused with nothing moved (%ld not)",
	       spoiled, spoil_ok);
	tap_ok(valid > 0 && valid_bad == 0, "move fuzz: %ld valid batches, each moved in full (%ld not)",
	       valid, valid_bad);
	tap_ok(wrong == 0 && moved_pages > 0,
	       "move fuzz: the heap as the model says after every call (%ld wrong)", wrong);
	tap_ok(e2big > 0 && efault > 0, "move fuzz: vectors too long and unreadable seen (%ld E2BIG, %ld EFAULT)",
	       e2big, efault);
	tap_ok(sentinel_sum() == before, "move fuzz: the sentinel mapping is unchanged");
	tap_diag("FR-STATS hostile_move_calls=%d", MV_CALLS);
	munmap(vec, PG);
	t_release(&a);
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
	fd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
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
	t_probe_init();
	resv = mmap(NULL, RESV_LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!tap_ok(resv != MAP_FAILED, "reserve %lu MiB for the aimed calls", RESV_LEN >> 20))
		return tap_done();
	for (int i = 0; i < NTARGETS; i++)
		target_new(i);
	fuzz(fd, seed);
	move_fuzz();
	close(fd);
	close_race();
	return tap_done();
}
