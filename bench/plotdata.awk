# fr_bench's CSV -> gnuplot data for bench/plot.gp: one row per workload:
# name, then median, CI low, CI high for fastremap, mremap, uffdio_move and
# memcpy ("?" where a contender has no result), then the height and the
# two texts of the labels over the group (mremap/fastremap and
# uffdio_move/fastremap with (I)/(R) marks, or "n/a"), and their x offset
# in bar widths.
# awk -F, -f bench/plotdata.awk KERNEL.csv
# As table.awk's: the per-repetition ratios' median where the CSV has it.
function pnote(k, key,   n, i, kv) {
	n = split(notes[k], kv, ";")
	for (i = 1; i <= n; i++)
		if (index(kv[i], key "=") == 1) return substr(kv[i], length(key) + 2)
	return ""
}
function ratio(w, c,   a, b, m, r) {
	a = w SUBSEP c
	b = w SUBSEP "fastremap"
	if (!(a in med) || !(b in med) || med[b] <= 0) return ""
	m = ""
	if ((r = pnote(a, "pair_ratio")) != "") {
		if (pnote(a, "pair_lo") + 0 > 1) m = " (I)"
		else if (pnote(a, "pair_hi") + 0 < 1) m = " (R)"
		return sprintf("%s%.2fx%s", c == "mremap" ? "" : "uffd: ", r, m)
	}
	if (hi[b] < lo[a]) m = " (I)"
	else if (lo[b] > hi[a]) m = " (R)"
	return sprintf("%s%.2fx%s", c == "mremap" ? "" : "uffd: ", med[a] / med[b], m)
}
NR == 1 { next }
{
	if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 }
	if ($10 == "ok") {
		med[$2, $3] = $5; lo[$2, $3] = $6; hi[$2, $3] = $7
		notes[$2, $3] = $11
		if (!($2 in top) || $7 > top[$2]) top[$2] = $7
		if (!have || $6 < ymin) ymin = $6
		have = 1
	}
}
END {
	print "# workload fastremap(med lo hi) mremap(...) uffdio_move(...) memcpy(...) label_y label1 label2 label_dx"
	split("fastremap mremap uffdio_move memcpy", cs, " ")
	for (i = 1; i <= n; i++) {
		w = order[i]
		line = "\"" w "\""
		for (j = 1; j <= 4; j++)
			line = line " " ((w SUBSEP cs[j]) in med ? med[w, cs[j]] " " lo[w, cs[j]] " " hi[w, cs[j]] : "? ? ?")
		l1 = ratio(w, "mremap")
		l2 = ratio(w, "uffdio_move")
		if (!(w in top)) { l1 = "n/a"; top[w] = have ? ymin : 1 }
		if (w ~ /memcpy/) l1 = "floor"
		# Where the labels go, in bar widths from the group's centre:
		# over the bars there are (fastremap, mremap[, uffdio_move]; memcpy).
		dx = w ~ /memcpy/ ? 1.5 : (l2 != "" ? -0.5 : -1)
		line = line " " top[w] * 1.25 " \"" l1 "\" \"" l2 "\" " dx
		print line
	}
}
