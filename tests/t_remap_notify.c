// SPDX-License-Identifier: GPL-2.0
/*
 * What secondary MMUs are told: KVM, VFIO, RDMA ODP and a GPU's SVM
 * mirror a process's page tables and drop their copies only when an mmu
 * notifier's invalidate_range_start()/_end() pair tells them to. A move
 * that skips them leaves those devices reading and writing the moved
 * pages through the old addresses.
 *
 * The test build's record_invalidations registers such a notifier on this
 * process and records every start and end it is given. For each
 * FASTREMAP_IOC_REMAP case, an identical twin is moved with mremap(2),
 * the reference: every range mremap(2) invalidated, inside its source or
 * its target, must be invalidated by the ioctl too, at the same offsets;
 * the ioctl's starts and ends must pair up (same range, each end after its
 * start, none left open); and the source must be covered by one pair.
 * FASTREMAP_IOC_MOVE, which has no twin, must cover each moved source the
 * same way. The positive control, in the same run: each call leaves the
 * recorder a pair it can read back (the ioctl's, mremap(2)'s own), and
 * the DONTUNMAP cases show what only the mover's own pair can cover (no
 * munmap of the source follows).
 */
#define _GNU_SOURCE
#include "tlib.h"

#define REC	T_PARAMS "record_invalidations"
#define NREC	64
#define LEN	(2 * PMD_SZ + 16 * PG)

struct rec {
	char kind;
	unsigned long start, end;
	unsigned int event;
};

struct recs {
	int n;
	long lost;
	struct rec r[NREC];
};

/* Reads the recorder's list; 0 or -1. */
static int rec_read(struct recs *out)
{
	char buf[8192], *line, *save = NULL;

	memset(out, 0, sizeof(*out));
	if (t_read_str(REC, buf, sizeof(buf)))
		return -1;
	out->lost = -1;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct rec r;

		if (sscanf(line, "lost %ld", &out->lost) == 1)
			continue;
		if (sscanf(line, "%c %lx %lx %u", &r.kind, &r.start, &r.end, &r.event) == 4 &&
		    out->n < NREC)
			out->r[out->n++] = r;
	}
	return out->lost < 0 ? -1 : 0;
}

/* Whether every start has its end (same range, later) and nothing is open. */
static int paired(const struct recs *c)
{
	int used[NREC] = { 0 };

	for (int i = 0; i < c->n; i++) {
		int found = 0;

		if (c->r[i].kind == 'e')
			continue;
		for (int j = i + 1; j < c->n && !found; j++)
			if (!used[j] && c->r[j].kind == 'e' && c->r[j].start == c->r[i].start &&
			    c->r[j].end == c->r[i].end)
				found = used[j] = 1;
		if (!found)
			return 0;
	}
	for (int j = 0; j < c->n; j++)
		if (c->r[j].kind == 'e' && !used[j])
			return 0;
	return 1;
}

/* Whether one recorded start covers [a, b). */
static int covered(const struct recs *c, unsigned long a, unsigned long b)
{
	for (int i = 0; i < c->n; i++)
		if (c->r[i].kind == 's' && c->r[i].start <= a && c->r[i].end >= b)
			return 1;
	return 0;
}

static void dump(const char *who, const struct recs *c)
{
	for (int i = 0; i < c->n; i++)
		tap_diag("  %s: %c %#lx..%#lx event %u", who, c->r[i].kind, c->r[i].start,
			 c->r[i].end, c->r[i].event);
}

struct rcase {
	const char *name;
	int flags;		/* MREMAP_DONTUNMAP or 0 */
	int dst_pages;		/* past a PMD-aligned target */
	int target_mapped;	/* a mapping at the target first, replaced */
};

/* A name's "%zu" is the page's size in KiB. */
static const struct rcase rcases[] = {
	{ "plain move, PMD-aligned", 0, 0, 0 },
	{ "plain move, %zuK-misaligned", 0, 1, 0 },
	{ "DONTUNMAP, PMD-aligned", MREMAP_DONTUNMAP, 0, 0 },
	{ "DONTUNMAP, %zuK-misaligned", MREMAP_DONTUNMAP, 1, 0 },
	{ "over a mapped target", 0, 0, 1 },
};

struct side {
	struct t_area sa, da;
	char *src, *dst;
	void *res;
	int err;
	struct recs rec;
};

/* Maps, fills and moves one side (ioctl or not); its records in s->rec. */
static int one_side(int fd, const struct rcase *rc, int ioctl_it, struct side *s)
{
	struct fastremap_remap out;
	unsigned int flags = MREMAP_MAYMOVE | MREMAP_FIXED | rc->flags;

	memset(s, 0, sizeof(*s));
	s->src = t_map_aligned(LEN, PMD_SZ, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &s->sa);
	s->dst = t_pick(LEN + PMD_SZ, PMD_SZ, &s->da);
	if (!s->src || !s->dst)
		return -1;
	s->dst += rc->dst_pages * PG;
	t_fill_pattern(s->src, LEN, 7);
	if (rc->target_mapped) {
		if (mmap(s->dst, LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != s->dst)
			return -1;
		memset(s->dst, 0x5a, LEN);
	}
	if (t_write_str(REC, "1"))
		return -1;
	if (ioctl_it)
		s->res = t_remap(fd, s->src, LEN, LEN, flags, s->dst, &out);
	else
		s->res = t_mremap(s->src, LEN, LEN, flags, s->dst);
	s->err = errno;
	if (rec_read(&s->rec))
		return -1;
	t_write_str(REC, "0");
	return 0;
}

/*
 * Every range the twin invalidated inside its source or target, at the
 * same offsets of the ioctl's: the count of those the ioctl missed.
 */
static int missed(const struct side *io, const struct side *tw, const char *name)
{
	int miss = 0;

	for (int i = 0; i < tw->rec.n; i++) {
		const struct rec *r = &tw->rec.r[i];
		unsigned long a, b, sb = (uintptr_t)tw->src, db = (uintptr_t)tw->dst;

		if (r->kind != 's')
			continue;
		if (r->start >= sb && r->end <= sb + LEN) {
			a = (uintptr_t)io->src + (r->start - sb);
			b = (uintptr_t)io->src + (r->end - sb);
		} else if (r->start >= db && r->end <= db + LEN) {
			a = (uintptr_t)io->dst + (r->start - db);
			b = (uintptr_t)io->dst + (r->end - db);
		} else {
			tap_diag("%s: mremap(2) invalidated %#lx..%#lx, outside its source and target",
				 name, r->start, r->end);
			continue;
		}
		if (!covered(&io->rec, a, b)) {
			tap_diag("%s: mremap(2) invalidated %#lx..%#lx (%s+%#lx), the ioctl did not",
				 name, r->start, r->end, r->start >= db ? "target" : "source",
				 r->start - (r->start >= db ? db : sb));
			miss++;
		}
	}
	return miss;
}

static void remap_case(int fd, const struct rcase *rc)
{
	struct side s[2];	/* mremap(2), the ioctl */
	char name[64];
	int ok = 1;

	snprintf(name, sizeof(name), rc->name, PG >> 10);
	for (int x = 0; x < 2 && ok; x++)
		ok = one_side(fd, rc, x, &s[x]) == 0;
	if (!tap_ok(ok, "%s: map, record and move (%s)", name, strerror(errno)))
		goto out;
	for (int x = 0; x < 2; x++)
		if (s[x].res != s[x].dst)
			tap_diag("%s: %s did not move (%s)", name,
				 x ? "the ioctl" : "mremap(2)", t_errname(s[x].err));
	if (!tap_ok(s[0].res == s[0].dst && s[1].res == s[1].dst, "%s: both calls move",
		    name))
		goto out;
	tap_ok(t_verify_pattern(s[1].dst, LEN, 7, 0) < 0, "%s: the ioctl's data moved", name);
	tap_ok(s[0].rec.lost == 0 && s[1].rec.lost == 0 && paired(&s[0].rec) &&
	       covered(&s[0].rec, (uintptr_t)s[0].src, (uintptr_t)s[0].src + LEN),
	       "%s: the recorder saw mremap(2) invalidate its source, in pairs (%d records)",
	       name, s[0].rec.n);
	if (!tap_ok(covered(&s[1].rec, (uintptr_t)s[1].src, (uintptr_t)s[1].src + LEN) &&
		    paired(&s[1].rec) && !missed(&s[1], &s[0], name),
		    "REMAP %s: secondary MMUs told of the moved source (and of all mremap(2) tells them), each start paired with its end",
		    name)) {
		dump("mremap(2)", &s[0].rec);
		dump("ioctl", &s[1].rec);
	}
out:
	for (int x = 0; x < 2; x++) {
		t_release(&s[x].sa);
		t_release(&s[x].da);
	}
}

/* MOVE: three sources in a heap, moved to its far half in one call. */
static void move_case(int fd)
{
	const size_t seg[3][2] = {	/* offset, length */
		{ 0, 16 * PG }, { PMD_SZ - 4 * PG, 64 * PG }, { PMD_SZ + 200 * PG, SZ_1M },
	};
	struct fastremap_move_vec v[3];
	struct fastremap_move out;
	size_t hlen = 4 * PMD_SZ;
	struct t_area a;
	struct recs rec;
	char *heap;
	int ret, e, cov = 1;

	heap = t_map_aligned(hlen, PMD_SZ, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &a);
	if (!tap_ok(heap != NULL, "MOVE: map the heap"))
		return;
	madvise(heap, hlen, MADV_NOHUGEPAGE);
	for (int i = 0; i < 3; i++) {
		v[i] = (struct fastremap_move_vec){ (uintptr_t)heap + seg[i][0],
						    (uintptr_t)heap + 2 * PMD_SZ + seg[i][0],
						    seg[i][1] };
		t_fill_pattern(heap + seg[i][0], seg[i][1], 11 + i);
	}
	if (!tap_ok(t_write_str(REC, "1") == 0, "MOVE: register the recorder"))
		goto out;
	ret = t_move(fd, v, 3, 0, &out);
	e = errno;
	if (!tap_ok(rec_read(&rec) == 0, "MOVE: read the records"))
		goto out;
	t_write_str(REC, "0");
	if (!tap_ok(ret == 0 && out.done == 3, "MOVE: the batch moved (%s, done %llu)",
		    ret ? t_errname(e) : "ret 0", (unsigned long long)out.done))
		goto out;
	for (int i = 0; i < 3; i++) {
		cov &= covered(&rec, v[i].src, v[i].src + v[i].len);
		cov &= t_verify_pattern(heap + 2 * PMD_SZ + seg[i][0], seg[i][1], 11 + i, 0) < 0;
	}
	if (!tap_ok(cov && paired(&rec) && rec.lost == 0,
		    "MOVE: secondary MMUs told of every moved source, each start paired with its end"))
		dump("MOVE", &rec);
out:
	t_write_str(REC, "0");
	t_release(&a);
}

int main(int argc, char **argv)
{
	struct recs r;
	int fd;

	t_parse_args(&argc, argv);
	fd = t_open();
	if (!tap_ok(fd >= 0, "open the device (%s)", fd < 0 ? strerror(errno) : "ok"))
		return tap_done();
	if (!tap_ok(t_write_str(REC, "1") == 0 && rec_read(&r) == 0 && r.n == 0,
		    "test hook record_invalidations present, and empty when registered"))
		return tap_done();
	t_write_str(REC, "0");
	for (size_t i = 0; i < ARRAY_SIZE(rcases); i++)
		remap_case(fd, &rcases[i]);
	if (t_move_supported(fd))
		move_case(fd);
	close(fd);
	return tap_done();
}
