# SPDX-License-Identifier: GPL-2.0
# The size sweep's chart data (bench/sweep.gp), from its CSV.
# Usage: awk -F, -v dat=FILE -f sweep-plotdata.awk KERNEL-sweep.csv > PLOT_CMDS
# Writes into FILE one block per level and contender that has a time
# (size_bytes median_us ci_lo ci_hi mremap_ratio ratio_lo ratio_hi
# partial), blocks apart by two blank lines; prints gnuplot's commands:
# the macros "times" and "ratios" (the plot commands of the two panels).

BEGIN {
	nl = split("pte pmd thp pud", lvl, " ")
	nc = split("fastremap fastremap_direct mremap", con, " ")
	split("#1b9e77 #d95f02 #7570b3 #e7298a", color, " ")
	title["fastremap"] = "library"
	title["fastremap_direct"] = "module direct"
	title["mremap"] = "mremap(2)"
}

NR == 1 {
	for (i = 1; i <= NF; i++)
		col[$i] = i
	next
}

$col["ok"] == "ok" {
	k = $col["level"] SUBSEP $col["contender"]
	row[k, ++nr[k]] = $col["size_bytes"] " " $col["median_us"] " " $col["ci95_lo_us"] " " \
		$col["ci95_hi_us"] " " ($col["mremap_ratio"] == "" ? "?" : $col["mremap_ratio"]) " " \
		($col["ratio_lo"] == "" ? "?" : $col["ratio_lo"]) " " \
		($col["ratio_hi"] == "" ? "?" : $col["ratio_hi"]) " " ($col["population"] != "full")
}

END {
	blk = 0
	for (i = 1; i <= nl; i++)
		for (j = 1; j <= nc; j++) {
			k = lvl[i] SUBSEP con[j]
			if (!nr[k])
				continue
			for (r = 1; r <= nr[k]; r++)
				print row[k, r] > dat
			printf "\n\n" > dat
			style = sprintf("lc rgb \"%s\" dt %d pt %d lw 1.5", color[i], j, 4 + 2 * (j - 1))
			t = t (t ? ", " : "") sprintf("datafile index %d using 1:2:3:4 with yerrorlines %s title \"%s %s\"",
						     blk, style, toupper(lvl[i]), title[con[j]])
			if (con[j] != "mremap")
				q = q (q ? ", " : "") sprintf("datafile index %d using 1:5:6:7 with yerrorlines %s title \"%s: mremap(2) / %s\"",
							     blk, style, toupper(lvl[i]), title[con[j]])
			blk++
		}
	gsub(/"/, "\\\"", t)
	gsub(/"/, "\\\"", q)
	printf "times = \"%s\"\n", t
	printf "ratios = \"%s\"\n", q ? q : "1 notitle"
}
