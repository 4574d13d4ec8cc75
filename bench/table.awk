# fr_bench's CSV -> the result table of one kernel.
# awk -F, -v fmt=text|md -f bench/table.awk KERNEL.csv
#
# Per workload: each contender's median [95% CI], the ratios
# mremap/fastremap and uffdio_move/fastremap (above 1: fastremap is
# faster; the median of the ratios of the same repetitions), marked (I)
# where that median's CI lies entirely above 1 (a significant
# improvement) and (R) where entirely below (a significant regression);
# TLB flushes per operation from the tlb:tlb_flush tracepoint
# (fastremap's own counter in brackets); notes.

function t(us) {
	if (us == "") return "-"
	if (us >= 1000) return sprintf("%.2f ms", us / 1000)
	return sprintf("%.1f us", us)
}
# Median [lo-hi] in the median's unit.
function cell(w, c,   k, d, u) {
	k = w SUBSEP c
	if (!(k in ok)) return "-"
	if (ok[k] ~ /^skip/) return "n/a"
	if (ok[k] != "ok") return "ERROR"
	d = med[k] >= 1000 ? 1000 : 1
	u = d == 1000 ? "ms" : "us"
	return sprintf(d == 1000 ? "%.2f [%.2f-%.2f] %s" : "%.1f [%.1f-%.1f] %s",
		       med[k] / d, lo[k] / d, hi[k] / d, u)
}
# The median of the per-repetition ratios (fr_bench's pair_ratio: both
# contenders' times from the same repetition), marked by whether its 95%
# CI lies above or below 1; a CSV without them: the medians' ratio, marked
# by whether the two medians' CIs overlap.
function ratio(w, c,   a, b, pr, plo, phi) {
	a = w SUBSEP c
	b = w SUBSEP "fastremap"
	if (ok[a] != "ok" || ok[b] != "ok" || med[b] <= 0) return "-"
	mark = ""
	if ((pr = note(w, c, "pair_ratio")) != "") {
		plo = note(w, c, "pair_lo")
		phi = note(w, c, "pair_hi")
		if (plo + 0 > 1) mark = " (I)"
		else if (phi + 0 < 1) mark = " (R)"
		return sprintf("%.2fx%s", pr, mark)
	}
	if (hi[b] < lo[a]) mark = " (I)"
	else if (lo[b] > hi[a]) mark = " (R)"
	return sprintf("%.2fx%s", med[a] / med[b], mark)
}
function note(w, c, key,   n, i, kv) {
	n = split(notes[w SUBSEP c], kv, ";")
	for (i = 1; i <= n; i++)
		if (index(kv[i], key "=") == 1) return substr(kv[i], length(key) + 2)
	return ""
}
function fl(w, c,   k, s, m) {
	k = w SUBSEP c
	if (ok[k] != "ok" || flush[k] == "") return "-"
	s = flush[k]
	if (c == "fastremap" && (m = note(w, c, "mod_flushes")) != "") s = s " (" m ")"
	return s
}
function fr_moved(w,   s, f, i, n, v) {
	n = split("pud pmd thp pte contpte unfolded_contpte", f, " ")
	s = ""
	for (i = 1; i <= n; i++)
		if ((v = note(w, "fastremap", f[i])) != "" && v != "0")
			s = s (s == "" ? "" : " ") f[i] "=" v
	return s == "" ? "" : "fastremap moved " s
}
function notes_of(w,   s, v, c, i, n, cs) {
	s = fr_moved(w)
	if (note(w, "fastremap", "direct") == "1")
		s = s (s == "" ? "" : "; ") "the module called directly (FASTREMAP_NO_ROUTING)"
	# The library routed some calls to mremap(2) (fastremap_remap(3), ROUTING).
	if ((v = note(w, "fastremap", "module_calls")) != "" && v != "1")
		s = s (s == "" ? "" : "; ") (v == "0" ? "all calls routed to mremap(2) by the library" : \
		    sprintf("%.0f%% of calls to the module, the rest routed to mremap(2)", v * 100))
	n = split("fastremap mremap uffdio_move", cs, " ")
	v = ""
	for (i = 1; i <= n; i++)
		if (note(w, cs[i], "vmas_after") != "")
			v = v (v == "" ? "" : ", ") cs[i] " " note(w, cs[i], "vmas_after")
	if (v != "") s = s (s == "" ? "" : "; ") "VMAs after: " v
	if ((v = note(w, "mremap", "thp_pct")) != "") s = s (s == "" ? "" : "; ") "THP " v "%"
	if ((v = note(w, "mremap", "mthp64_folios_per_move")) != "")
		s = s (s == "" ? "" : "; ") "64 KiB folios per 1 MiB moved: " v
	for (i = 1; i <= n; i++) {
		c = cs[i]
		if (ok[w SUBSEP c] != "" && ok[w SUBSEP c] != "ok" && ok[w SUBSEP c] !~ /no UFFD_FEATURE_MOVE|no 64 KiB mTHP/)
			s = s (s == "" ? "" : "; ") c ": " ok[w SUBSEP c]
		if ((v = note(w, c, "trace_lost")) != "")
			s = s (s == "" ? "" : "; ") c " trace lost " v " events"
	}
	return s
}
NR == 1 { next }
{
	kernel = $1
	w = $2
	c = $3
	if (!(w in seen)) { seen[w] = 1; order[++nw] = w }
	k = w SUBSEP c
	ok[k] = $10
	med[k] = $5; lo[k] = $6; hi[k] = $7
	flush[k] = $8
	notes[k] = $11
}
END {
	ncol = split("workload|fastremap|mremap|mremap/fr|uffdio_move|uffd/fr|flushes/op fastremap (module)|flushes/op mremap|flushes/op uffd|notes", head, "|")
	nr = 0
	for (i = 1; i <= nw; i++) {
		w = order[i]
		if (w ~ /memcpy/) { floor_w = w; continue }
		nr++
		row[nr, 1] = w
		row[nr, 2] = cell(w, "fastremap")
		row[nr, 3] = cell(w, "mremap")
		row[nr, 4] = ratio(w, "mremap")
		row[nr, 5] = cell(w, "uffdio_move")
		row[nr, 6] = ratio(w, "uffdio_move")
		row[nr, 7] = fl(w, "fastremap")
		row[nr, 8] = fl(w, "mremap")
		row[nr, 9] = fl(w, "uffdio_move")
		row[nr, 10] = notes_of(w)
	}
	if (floor_w != "") {
		fk = floor_w SUBSEP "memcpy"
		floor = "memcpy floor (" floor_w "): " cell(floor_w, "memcpy")
		p = "3_pte"
		if (ok[fk] == "ok") {
			if (ok[p SUBSEP "fastremap"] == "ok")
				floor = floor sprintf("; copying takes %.1fx fastremap's PTE-level move", med[fk] / med[p SUBSEP "fastremap"])
			if (ok[p SUBSEP "mremap"] == "ok")
				floor = floor sprintf(", %.1fx mremap's", med[fk] / med[p SUBSEP "mremap"])
		} else if (ok[fk] != "")
			floor = floor " " ok[fk]
	}
	legend = "median [95% CI of the median] per move; ratios: median of the per-repetition ratios, above 1x: fastremap is faster; (I)/(R): significant improvement/regression (the ratio's 95% CI lies entirely above/below 1)"
	if (fmt == "md") {
		printf "Kernel %s.", kernel
		printf " %s.\n\n", legend
		for (j = 1; j <= ncol; j++) printf "| %s ", head[j]
		printf "|\n"
		for (j = 1; j <= ncol; j++) printf "|---"
		printf "|\n"
		for (i = 1; i <= nr; i++) {
			for (j = 1; j <= ncol; j++) printf "| %s ", row[i, j]
			printf "|\n"
		}
		if (floor != "") printf "\n%s.\n", floor
		exit
	}
	for (j = 1; j <= ncol - 1; j++) {
		wd[j] = length(head[j])
		for (i = 1; i <= nr; i++) if (length(row[i, j]) > wd[j]) wd[j] = length(row[i, j])
	}
	printf "kernel %s: %s\n", kernel, legend
	for (j = 1; j <= ncol - 1; j++) printf "%-*s  ", wd[j], head[j]
	printf "%s\n", head[ncol]
	for (i = 1; i <= nr; i++) {
		for (j = 1; j <= ncol - 1; j++) printf "%-*s  ", wd[j], row[i, j]
		printf "%s\n", row[i, ncol]
	}
	if (floor != "") printf "%s\n", floor
}
