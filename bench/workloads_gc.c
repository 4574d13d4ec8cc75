// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include "bench.h"

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = t_mix64(*s);	/* splitmix64 */

	*s += 0x9E3779B97F4A7C15ULL;
	return z;
}

/*
 * Workloads 7bN: fastremap's moves of one repetition as FASTREMAP_IOC_MOVE
 * batches of w->batch, each batch timed as one call; the per-move time is
 * their sum over the moves.
 */
static int gc_batches(const struct workload *w, char *from, char *to, size_t bump,
		      const size_t *off, const size_t *npg, long nm, struct rep *out,
		      double *sum, char *msg, size_t msz)
{
	struct fastremap_move_vec *v = calloc(w->batch, sizeof(*v));
	struct fastremap_move m;
	double t0, t1;
	long j = 0, k, n;

	if (!v)
		return fail(msg, msz, "calloc", ENOMEM);
	while (j < nm) {
		n = nm - j < w->batch ? nm - j : w->batch;
		for (k = 0; k < n; k++) {
			v[k].src = (uintptr_t)(from + off[j + k] * PG);
			v[k].dst = (uintptr_t)(to + bump);
			v[k].len = npg[j + k] * PG;
			bump += npg[j + k] * PG;
		}
		memset(&m, 0, sizeof(m));
		m.size = sizeof(m);
		m.moves = (uintptr_t)v;
		m.count = (uint32_t)n;
		count_id(C_FR, (uintptr_t)to + bump - v[0].dst);
		t_tlb_on();
		t0 = now_us();
		count_open();
		k = ioctl(frfd, FASTREMAP_IOC_MOVE, &m);
		count_end();
		t1 = now_us();
		t_tlb_off();
		if (k || m.done != (uint64_t)n) {
			char what[64];

			snprintf(what, sizeof(what), "FASTREMAP_IOC_MOVE at move %ld",
				 j + (long)m.done);
			free(v);
			return fail(msg, msz, what, k ? errno : EIO);
		}
		*sum += t1 - t0;
		out->st.pte += m.moved_pte;
		out->st.thp += m.moved_thp;
		out->st.flushes += m.tlb_flushes;
		/* Each batch is one module call: no routing happens here. */
		out->st.module++;
		out->st.calls++;
		j += n;
	}
	free(v);
	return 0;
}

/*
 * Workload 7: GC-like compaction of random live runs into a to-space.
 * Each of the ncs contenders cs[] has an arena and a to-space of its own,
 * with the same runs; they take turns move by move, the first one
 * rotating (see rep_loop()), except FASTREMAP_IOC_MOVE's batches (7bN),
 * which run alone.
 */
static int rep_gc(const struct workload *w, const int *cs, int ncs, int rep,
		  struct rep *outs, int *bad, char *msg, size_t msz)
{
	long nm = w->tables ? (long)(cfg.gc_arena / PMD_SZ) : cfg.gc_moves;
	size_t A = cfg.gc_arena, rlen = 2 * A + 8 * MiB, slot = A / PG / nm;
	/* Workload 7t's runs land one page off, in a to-space a PMD longer. */
	size_t base = w->tables ? PG : 0, tlen = A + (w->tables ? PMD_SZ : 0);
	/* Workload 7t's to-space used before: populated here, emptied below. */
	int populate = w->tables ? MAP_POPULATE : 0;
	size_t *off = NULL, *npg = NULL, bump = base;
	uint64_t seed = 0x5eed0000 + rep;
	char *res[NCONT], *from[NCONT] = { 0 }, *to[NCONT] = { 0 };
	double dt, sum[NCONT] = { 0 };
	long j = 0;
	int err, ret = -1, k, c, batch = ncs == 1 && cs[0] == C_FR && w->batch;
	struct move_times mt;

	*bad = 0;
	memset(&mt, 0, sizeof(mt));
	for (k = 0; k < ncs; k++)
		res[k] = MAP_FAILED;
	off = calloc(nm, sizeof(*off));
	npg = calloc(nm, sizeof(*npg));
	if (!off || !npg || move_times_init(&mt, ncs, nm)) {
		fail(msg, msz, "calloc", ENOMEM);
		goto out;
	}
	/* One live run of 1-16 pages at a random place in each slot. */
	for (j = 0; j < nm; j++) {
		npg[j] = w->tables ? slot : 1 + rng_next(&seed) % 16;
		off[j] = j * slot + (w->tables ? 0 : rng_next(&seed) % (slot - npg[j] + 1));
	}
	for (k = 0; k < ncs; k++) {
		c = cs[k];
		*bad = k;
		res[k] = mmap(NULL, rlen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			      -1, 0);
		if (res[k] == MAP_FAILED) {
			fail(msg, msz, "reserve", errno);
			goto out;
		}
		from[k] = (char *)ALIGN_UP((uintptr_t)res[k], 2 * MiB);
		to[k] = from[k] + A + 2 * MiB;	/* a PROT_NONE gap keeps the two apart */
		/*
		 * FASTREMAP_IOC_MOVE moves inside one heap: from-space, gap
		 * and to-space are one mapping (pages never leave their
		 * anon_vma).
		 */
		if (batch) {
			if (mmap(from[k], to[k] + tlen - from[k], PROT_READ | PROT_WRITE,
				 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | populate, -1, 0) ==
			    MAP_FAILED) {
				fail(msg, msz, "mmap heap", errno);
				goto out;
			}
		} else if (mmap(from[k], A, PROT_READ | PROT_WRITE,
				MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ||
			   mmap(to[k], tlen, PROT_READ | PROT_WRITE,
				MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | populate, -1, 0) == MAP_FAILED) {
			fail(msg, msz, "mmap arena", errno);
			goto out;
		}
		/* Used before: its page tables there, its pages gone. */
		if (w->tables && madvise(to[k], tlen, MADV_DONTNEED)) {
			fail(msg, msz, "to-space used before", errno);
			goto out;
		}
		if (c == C_UFFD && (err = uffd_register(to[k], tlen))) {
			fail(msg, msz, "UFFDIO_REGISTER", err);
			goto out;
		}
		for (j = 0; j < nm; j++)
			t_tags_write(from[k] + off[j] * PG, npg[j] * PG, rep, off[j]);
	}
	if (batch) {
		*bad = 0;
		if (gc_batches(w, from[0], to[0], base, off, npg, nm, &outs[0], &sum[0], msg, msz))
			goto out;
	} else {
		for (j = 0; j < nm; j++) {
			for (k = 0; k < ncs; k++) {
				int i = (int)((k + j) % ncs);

				c = cs[i];
				*bad = i;
				err = timed_move(c, from[i] + off[j] * PG, npg[j] * PG,
						 to[i] + bump, &outs[i].st, &dt);
				if (err) {
					char what[64];

					snprintf(what, sizeof(what), "%s at move %ld", cont_name[c], j);
					fail(msg, msz, what, err);
					goto out;
				}
				sum[i] += dt;
				mt.t[i][j] = dt;
			}
			bump += npg[j] * PG;
		}
	}
	for (k = 0; k < ncs; k++) {
		*bad = k;
		outs[k].vmas = count_vmas((uintptr_t)res[k], (uintptr_t)res[k] + rlen);
		for (j = 0, bump = base; j < nm; j++) {
			if (t_tags_check(to[k] + bump, npg[j] * PG, rep, off[j])) {
				snprintf(msg, msz, "error: verify: wrong data in run %ld", j);
				goto out;
			}
			bump += npg[j] * PG;
		}
		outs[k].us = paired(w) && !batch ? move_times_median(&mt, k) :
			     sum[k] / nm;
		outs[k].ops = nm;
	}
	ret = 0;
out:
	free(off);
	free(npg);
	move_times_free(&mt);
	for (k = 0; k < ncs; k++)
		if (res[k] != MAP_FAILED)
			munmap(res[k], rlen);
	return ret;
}

/*
 * One repetition of cs[0..ncs) (several only for paired workloads, see
 * paired()); outs[k] is cs[k]'s result, *bad the index that failed.
 */
int run_rep(const struct workload *w, const int *cs, int ncs, int rep,
		   struct rep *outs, int *bad, char *msg, size_t msz)
{
	int k;

	for (k = 0; k < ncs; k++) {
		memset(&outs[k], 0, sizeof(outs[k]));
		outs[k].vmas = outs[k].thp_kb = outs[k].mthp_allocs = -1;
	}
	*bad = 0;
	count_rep = rep;
	count_rep_reset();
	need_module = (w->kind == K_MOVE || w->kind == K_PINGPONG) && w->route != 1;
	direct_module = w->route == 2;
	switch (w->kind) {
	case K_LOOP:
		return rep_loop(w, cs, ncs, rep, outs, bad, msg, msz);
	case K_GC:
		return rep_gc(w, cs, ncs, rep, outs, bad, msg, msz);
	case K_PINGPONG:
		return rep_pingpong(w, cs, ncs, rep, outs, bad, msg, msz);
	default:
		return rep_move(w, cs[0], rep, &outs[0], msg, msz);
	}
}

/*
 * Workloads whose contenders take turns move by move inside one
 * repetition: thousands of short moves, where a repetition of one
 * contender lasts seconds and the host's drift between two such
 * repetitions was as large as the difference measured (bench/README.md,
 * "Routing"). The 1 GiB moves (one per repetition) and FASTREMAP_IOC_MOVE's
 * batches alternate repetition by repetition.
 */
int paired(const struct workload *w)
{
	return w->kind == K_LOOP || w->kind == K_PINGPONG || (w->kind == K_GC && !w->batch);
}

