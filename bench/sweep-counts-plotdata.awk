# SPDX-License-Identifier: GPL-2.0
# The counted size sweep's chart data (bench/sweep-counts.gp), from its
# <kernel>-sweep-counts.csv (BENCH_SWEEP=1 BENCH_COUNT=1).
# Usage: awk -F, -v dat=FILE -f sweep-counts-plotdata.awk KERNEL-sweep-counts.csv > PLOT_CMDS
# Per level, contender and size, the timed repetition (traced 0) with
# the fewest instructions (user and kernel), as bench/README.md's tables
# take it; writes into FILE one block per level and contender (size_bytes
# instructions atomics tlbi partial), blocks apart by two blank lines, and
# prints gnuplot's commands: the macros "insns", "atomics" and "tlbis"
# (the plot commands of the three panels).

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

$col["traced"] == 0 {
	k = $col["level"] SUBSEP $col["contender"]
	s = $col["size_bytes"] + 0
	n = $col["insns_user"] + $col["insns_kernel"]
	if (!((k, s) in best)) {
		sizes[k, ++ns[k]] = s
	} else if (n >= best[k, s]) {
		next
	}
	best[k, s] = n
	val[k, s] = s " " n " " $col["atomics"] " " $col["tlbi"] " " ($col["population"] != "full")
}

END {
	blk = 0
	for (i = 1; i <= nl; i++)
		for (j = 1; j <= nc; j++) {
			k = lvl[i] SUBSEP con[j]
			if (!ns[k])
				continue
			for (r = 1; r <= ns[k]; r++)
				print val[k, sizes[k, r]] > dat
			printf "\n\n" > dat
			style = sprintf("lc rgb \"%s\" dt %d pt %d lw 1.5", color[i], j, 4 + 2 * (j - 1))
			name = sprintf("title \"%s %s\"", toupper(lvl[i]), title[con[j]])
			for (p = 2; p <= 4; p++)
				cmd[p] = cmd[p] (cmd[p] ? ", " : "") \
					sprintf("datafile index %d using 1:%d with linespoints %s %s", blk, p, style, name)
			blk++
		}
	for (p = 2; p <= 4; p++)
		gsub(/"/, "\\\"", cmd[p])
	printf "insns = \"%s\"\n", cmd[2] ? cmd[2] : "1 notitle"
	printf "atomics = \"%s\"\n", cmd[3] ? cmd[3] : "1 notitle"
	printf "tlbis = \"%s\"\n", cmd[4] ? cmd[4] : "1 notitle"
}
