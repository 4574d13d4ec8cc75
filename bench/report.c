// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include "bench.h"

/* ---- reporting ---- */

static char kver[128];
double t_start;

/*
 * Where the module's hot loop (module/hot.h) was loaded: at the start of
 * a page of module text, from where tests/harness/check-placement.sh has
 * checked that it fits the page.
 */
static void placement(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[256], name[128], mod[64];
	unsigned long long addr;
	int found = 0;
	char type;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %127s %63s", &addr, &type, name, mod) != 4 ||
		    strcmp(mod, "[fastremap]") || strcmp(name, "fr_walk"))
			continue;
		found = 1;
		/* 0 or the 16 bytes of a function prefix (6.12, 7.x). */
		if (addr)
			printf("# placement: fr_walk loaded at page offset %#llx\n",
			       addr & (PG - 1));
	}
	fclose(f);
	if (!found)
		printf("# placement: fr_walk not in /proc/kallsyms\n");
}

const char *bench_kernel(void)
{
	return kver;
}

void header(void)
{
	char buf[65536], *p, model[128] = "unknown";
	struct utsname u;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int emulated = cfg.emulated;

	uname(&u);
	/*
	 * Debian's releases name their architecture; a kernel built from
	 * the upstream tarball (6.18.15-fastremap-up) does not, and its
	 * results of the two architectures would share a name, and the
	 * cost model (model.awk) would take it for x86-64's.
	 */
	snprintf(kver, sizeof(kver), "%s%s", u.release,
		 strstr(u.release, FR_BENCH_ARCH) ? "" : "-" FR_BENCH_ARCH);
	if (t_read_str("/proc/cpuinfo", buf, sizeof(buf)) == 0 &&
	    (p = strstr(buf, "model name"))) {
		p = strchr(p, ':');
		if (p) {
			p += 1 + strspn(p + 1, " \t");
			snprintf(model, sizeof(model), "%.*s", (int)strcspn(p, "\n"), p);
		}
	}
	if (strstr(model, "QEMU") || strstr(model, "TCG"))
		emulated = 1;
	printf("# fr_bench: fastremap vs mremap(2) vs UFFDIO_MOVE\n");
	printf("# kernel: %s\n", kver);
	printf("# cpu: %s\n", model);
	printf("# vcpus: %ld\n", ncpu);
	printf("# timing: %s\n", emulated ? "emulated (TCG): not hardware timings" :
	       "native");
	printf("# geometry: page %zu KiB, PMD %zu MiB, PUD %zu MiB\n", PG / KiB, PMD_SZ / MiB,
	       PUD_SZ / MiB);
	printf("# config: reps=%d size=%zuMiB loop_n=%ld gc_moves=%ld gc_arena=%zuMiB "
	       "workloads=%s fresh=%d settle=%d count=%d\n", cfg.reps, cfg.size / MiB, cfg.loop_n,
	       cfg.gc_moves, cfg.gc_arena / MiB, cfg.workloads, cfg.fresh, cfg.settle, cfg.count);
	if (fr_unavail[0])
		printf("# fastremap: unavailable: %s\n", fr_unavail);
	else
		printf("# fastremap: ABI %u, features %#llx\n", fr_info.abi_version,
		       (unsigned long long)fr_info.features);
	printf("# uffdio_move: %s\n", uffd_unavail[0] ? uffd_unavail : "available");
	placement();
	printf("# statistics: median of the repetitions; 95%% CI of the median by order "
	       "statistics (binomial, distribution-free)\n");
	printf("# times: microseconds per move (workloads 6, 6m, 7: the median move of one "
	       "repetition, the contenders taking turns move by move; 7bN: mean per move)\n");
	fflush(stdout);
}

static void fmt_us(char *b, size_t n, double us)
{
	if (us >= 1000)
		snprintf(b, n, "%.2f ms", us / 1000);
	else
		snprintf(b, n, "%.1f us", us);
}

int selected(const char *id)
{
	const char *p = cfg.workloads;
	size_t l = strlen(id);

	if (!strcmp(p, "all"))
		return 1;
	while (*p) {
		if (!strncmp(p, id, l) && (p[l] == ',' || p[l] == 0 || p[l] == ' '))
			return 1;
		p += strcspn(p, ", ");
		p += strspn(p, ", ");
	}
	return 0;
}

struct cell (*cells)[NCONT];

/* The test build's switch between the module's movers (workload 3e). */
#define COPY_TABLES "/sys/module/fastremap/parameters/copy_tables"

static int mthp_set(const struct workload *w, const char *val, char *saved, size_t n)
{
	char p[128];

	mthp_path(p, sizeof(p), w, "enabled");
	if (saved) {
		char buf[128], *l, *r;

		if (t_read_str(p, buf, sizeof(buf)))
			return -1;
		l = strchr(buf, '[');
		r = l ? strchr(l, ']') : NULL;
		if (!r)
			return -1;
		snprintf(saved, n, "%.*s", (int)(r - l - 1), l + 1);
	}
	return t_write_str(p, val);
}

void run_workload(const struct workload *w, int wi, int widx, int wtotal)
{
	int cont[NCONT], nc = 0, c, k, r, err, len;
	char msg[96], saved[32] = "";
	struct rep rr;

	for (c = 0; c < NCONT; c++) {
		struct cell *cl = &cells[wi][c];

		if (!(w->conts & B(c)))
			continue;
		if (c == C_FR && fr_unavail[0])
			snprintf(cl->state, sizeof(cl->state), "skip: %s", fr_unavail);
		else if (c == C_FR && w->batch &&
			 !(fr_info.ioctls & (1ULL << _IOC_NR(FASTREMAP_IOC_MOVE))))
			snprintf(cl->state, sizeof(cl->state),
				 "skip: module without FASTREMAP_IOC_MOVE");
		else if (c == C_UFFD && uffd_unavail[0])
			snprintf(cl->state, sizeof(cl->state), "skip: %s", uffd_unavail);
		cont[nc++] = c;
	}
	if (workload_unfit(w, msg, sizeof(msg))) {
		for (k = 0; k < nc; k++)
			snprintf(cells[wi][cont[k]].state, sizeof(cells[wi][cont[k]].state), "%s", msg);
		printf("# %s\n", msg);
		return;
	}
	if (w->per_entry && t_write_str(COPY_TABLES, "0"))
		for (k = 0; k < nc; k++)
			if (cont[k] == C_FR && !cells[wi][C_FR].state[0])
				snprintf(cells[wi][C_FR].state, sizeof(cells[wi][C_FR].state),
					 "skip: no copy_tables parameter (test builds only)");
	if (w->kind == K_MOVE && cfg.size < PUD_SZ && !geo_off(w->dst_off))
		printf("# note: size %zu MiB < %zu MiB (a PUD): workload %s is not a PUD-level move\n",
		       cfg.size / MiB, PUD_SZ / MiB, w->id);
	if (w->writer) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		if (ncpu < 2 || writer_create(1)) {
			for (k = 0; k < nc; k++)
				snprintf(cells[wi][cont[k]].state, sizeof(cells[wi][cont[k]].state),
					 "skip: needs a second CPU for the writer");
			return;
		}
	}
	if (w->mthp) {
		char dir[128];

		mthp_path(dir, sizeof(dir), w, "");
		if (!mthp_size(w) || access(dir, F_OK) ||
		    mthp_set(w, "always", saved, sizeof(saved))) {
			for (k = 0; k < nc; k++)
				snprintf(cells[wi][cont[k]].state,
					 sizeof(cells[wi][cont[k]].state),
					 "skip: no %zu KiB mTHP on this kernel", mthp_size(w) / KiB);
			return;
		}
	}

	count_wi = wi;
	for (r = 0; r < cfg.reps; r++) {
		char line[512];
		struct rep rrs[NCONT];
		int live[NCONT], nl = 0, bad, i;

		len = snprintf(line, sizeof(line), "# [%s] workload %d/%d %s rep %d/%d:",
			       kver, widx, wtotal, w->name, r + 1, cfg.reps);
		for (k = 0; k < nc; k++) {
			/* Rotate who goes first, round by round. */
			c = cont[(k + r) % nc];
			if (!cells[wi][c].state[0])
				live[nl++] = c;
		}
		/* Paired: all in one repetition; else one repetition each, in turn. */
		for (k = 0; k < nl; k += i) {
			i = paired(w) ? nl - k : 1;
			if (run_rep(w, live + k, i, r, rrs, &bad, msg, sizeof(msg))) {
				c = live[k + bad];
				snprintf(cells[wi][c].state, sizeof(cells[wi][c].state), "%s", msg);
				len += snprintf(line + len, sizeof(line) - len, " %s %s;",
						cont_name[c], msg);
				/* The others of a paired repetition lose this one. */
				continue;
			}
			for (int j = 0; j < i; j++) {
				char t[32];
				struct cell *cl = &cells[wi][live[k + j]];

				count_rep_done(live[k + j], &rrs[j]);
				cl->us[cl->n++] = rrs[j].us;
				cl->rep[cl->n - 1] = r;
				if (rrs[j].vmas >= 0)
					cl->vmas[cl->nvmas++] = rrs[j].vmas;
				fmt_us(t, sizeof(t), rrs[j].us);
				len += snprintf(line + len, sizeof(line) - len, " %s %s",
						cont_name[live[k + j]], t);
			}
		}
		printf("%s  (t=%.0fs)\n", line, (now_us() - t_start) / 1e6);
		fflush(stdout);
	}
	/* One more, untimed, with tlb:tlb_flush traced around the moves. */
	for (k = 0; k < nc; k++) {
		struct cell *cl;
		int bad;

		c = cont[k];
		cl = &cells[wi][c];
		if (cl->state[0])
			continue;
		t_tlb_count_start();
		traced_rep = 1;
		err = run_rep(w, &c, 1, cfg.reps, &rr, &bad, msg, sizeof(msg));
		traced_rep = 0;
		if (err) {
			t_tlb_count_cancel();
			snprintf(cl->state, sizeof(cl->state), "%s", msg);
			continue;
		}
		count_rep_done(c, &rr);
		cl->fc_valid = t_tlb_count_stop(&cl->fc) == 0;
		cl->ops = rr.ops;
		cl->st = rr.st;
		cl->thp_kb = rr.thp_kb;
		cl->mthp_allocs = rr.mthp_allocs;
	}
	pool_free();
	if (w->per_entry)
		t_write_str(COPY_TABLES, "1");
	if (w->mthp)
		mthp_set(w, saved, NULL, 0);
	if (w->writer)
		writer_destroy();
}

void print_csv(void)
{
	unsigned w;
	int c, i;

	printf("FR-BENCH-CSV-BEGIN\n");
	printf("kernel,workload,contender,reps,median_us,ci95_lo_us,ci95_hi_us,"
	       "flushes_per_op,flush_reasons,ok,note\n");
	for (w = 0; w < NWORK; w++) {
		const struct workload *wl = &workloads[w];
		char wname[48];

		if (!selected(wl->id))
			continue;
		snprintf(wname, sizeof(wname), "%s_%s", wl->id, wl->name);
		for (c = 0; c < NCONT; c++) {
			struct cell *cl = &cells[w][c];
			char note[512] = "", fl[32] = "", reasons[256] = "";
			double med, lo, hi;
			int nl = 0, exact;

			if (!(wl->conts & B(c)))
				continue;
			if (cl->state[0]) {
				for (i = 0; cl->state[i]; i++)
					if (cl->state[i] == ',' || cl->state[i] == '\n')
						cl->state[i] = ';';
				printf("%s,%s,%s,%d,,,,,,%s,\n", kver, wname, cont_name[c],
				       cl->n, cl->state);
				continue;
			}
			exact = median_ci(cl->us, cl->n, &med, &lo, &hi);
			if (!exact)
				nl += snprintf(note + nl, sizeof(note) - nl, "ci=min-max;");
			if (cl->fc_valid && cl->ops > 0) {
				snprintf(fl, sizeof(fl), "%.6g", cl->fc.total / cl->ops);
				for (i = 0; i < cl->fc.nreasons; i++) {
					size_t rl = strlen(reasons);
					char key[24];

					snprintf(reasons + rl, sizeof(reasons) - rl, "%s%s=%.6g",
						 i ? ";" : "",
						 t_tlb_reason_key(cl->fc.r[i].reason, key, sizeof(key)),
						 cl->fc.r[i].count / cl->ops);
				}
				if (cl->fc.lost)
					nl += snprintf(note + nl, sizeof(note) - nl,
						       "trace_lost=%ld;", cl->fc.lost);
			}
			if (c == C_FR && cl->st.calls)
				nl += snprintf(note + nl, sizeof(note) - nl,
					       "module_calls=%.6g;mod_flushes=%.6g;pud=%.6g;pmd=%.6g;thp=%.6g;pte=%.6g;",
					       (double)cl->st.module / cl->st.calls,
					       cl->st.module ? (double)cl->st.flushes / cl->st.module : 0,
					       (double)cl->st.pud / cl->st.calls,
					       (double)cl->st.pmd / cl->st.calls,
					       (double)cl->st.thp / cl->st.calls,
					       (double)cl->st.pte / cl->st.calls);
			if (c == C_FR && workloads[w].route == 2)
				nl += snprintf(note + nl, sizeof(note) - nl, "direct=1;");
			if (c == C_FR && (cl->st.contpte || cl->st.unfolded))
				nl += snprintf(note + nl, sizeof(note) - nl,
					       "contpte=%.6g;unfolded_contpte=%.6g;",
					       (double)cl->st.contpte / cl->st.calls,
					       (double)cl->st.unfolded / cl->st.calls);
			if (c != C_FR && !cells[w][C_FR].state[0] && cells[w][C_FR].n) {
				/*
				 * Per-pair ratios: this contender's time over
				 * fastremap's in the same repetition, their
				 * median and its interval (table.awk's ratio).
				 */
				const struct cell *f = &cells[w][C_FR];
				double pr[MAX_REPS], pm, plo, phi;
				int np = 0, j;

				for (i = 0; i < cl->n; i++)
					for (j = 0; j < f->n; j++)
						if (f->rep[j] == cl->rep[i] && f->us[j] > 0)
							pr[np++] = cl->us[i] / f->us[j];
				if (np) {
					median_ci(pr, np, &pm, &plo, &phi);
					nl += snprintf(note + nl, sizeof(note) - nl,
						       "pair_ratio=%.4g;pair_lo=%.4g;pair_hi=%.4g;pairs=%d;",
						       pm, plo, phi, np);
				}
			}
			if (cl->nvmas) {
				double vm[MAX_REPS], vmed, vlo, vhi;

				for (i = 0; i < cl->nvmas; i++)
					vm[i] = cl->vmas[i];
				median_ci(vm, cl->nvmas, &vmed, &vlo, &vhi);
				nl += snprintf(note + nl, sizeof(note) - nl, "vmas_after=%.0f;", vmed);
			}
			if (cl->thp_kb >= 0)
				nl += snprintf(note + nl, sizeof(note) - nl, "thp_pct=%.0f;",
					       100.0 * cl->thp_kb * KiB / cfg.size);
			if (cl->mthp_allocs >= 0 && cl->ops > 0)
				nl += snprintf(note + nl, sizeof(note) - nl,
					       "mthp64_folios_per_move=%.3g;",
					       cl->mthp_allocs / cl->ops);
			if (nl)
				note[nl - 1] = 0;
			printf("%s,%s,%s,%d,%.1f,%.1f,%.1f,%s,%s,ok,%s\n", kver, wname,
			       cont_name[c], cl->n, med, lo, hi, fl, reasons, note);
		}
	}
	printf("FR-BENCH-CSV-END\n");
	fflush(stdout);
}

