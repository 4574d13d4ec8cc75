# SPDX-License-Identifier: GPL-2.0
# The size sweep's chart data (bench/sweep.gp): the timed chart's from
# KERNEL-sweep.csv, or with -v counts=1 the counted chart's from
# KERNEL-sweep-counts.csv.
# Usage: awk -F, -v dat=FILE [-v counts=1] -f sweep-plotdata.awk CSV > PLOT_CMDS
# Writes into FILE one block per level and contender, blocks apart by two
# blank lines, and prints gnuplot's commands, the plot commands of the
# panels as macros. Timed: rows "size_bytes median_us ci_lo ci_hi
# mremap_ratio ratio_lo ratio_hi partial"; macros "times" and "ratios".
# Counted: per size the timed repetition (traced 0) with the fewest
# instructions (user and kernel), as bench/README.md's tables take it,
# rows "size_bytes instructions atomics tlbi partial"; macros "insns",
# "atomics" and "tlbis".

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

!counts && $col["ok"] == "ok" {
	k = $col["level"] SUBSEP $col["contender"]
	row[k, ++nr[k]] = $col["size_bytes"] " " $col["median_us"] " " $col["ci95_lo_us"] " " \
		$col["ci95_hi_us"] " " ($col["mremap_ratio"] == "" ? "?" : $col["mremap_ratio"]) " " \
		($col["ratio_lo"] == "" ? "?" : $col["ratio_lo"]) " " \
		($col["ratio_hi"] == "" ? "?" : $col["ratio_hi"]) " " ($col["population"] != "full")
}

counts && $col["traced"] == 0 {
	k = $col["level"] SUBSEP $col["contender"]
	s = $col["size_bytes"] + 0
	n = $col["insns_user"] + $col["insns_kernel"]
	if (!((k, s) in at))
		at[k, s] = ++nr[k]
	else if (n >= best[k, s])
		next
	best[k, s] = n
	row[k, at[k, s]] = s " " n " " $col["atomics"] " " $col["tlbi"] " " ($col["population"] != "full")
}

# The macro of panel @p: one plot command per block.
function add(p, cmd) {
	mac[p] = mac[p] (mac[p] ? ", " : "") cmd
}

function macro(name, p) {
	gsub(/"/, "\\\"", mac[p])
	printf "%s = \"%s\"\n", name, mac[p] ? mac[p] : "1 notitle"
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
			name = sprintf("%s %s", toupper(lvl[i]), title[con[j]])
			if (counts) {
				for (p = 2; p <= 4; p++)
					add(p, sprintf("datafile index %d using 1:%d with linespoints %s title \"%s\"",
						       blk, p, style, name))
			} else {
				add(1, sprintf("datafile index %d using 1:2:3:4 with yerrorlines %s title \"%s\"",
					       blk, style, name))
				if (con[j] != "mremap")
					add(2, sprintf("datafile index %d using 1:5:6:7 with yerrorlines %s title \"%s: mremap(2) / %s\"",
						       blk, style, toupper(lvl[i]), title[con[j]]))
			}
			blk++
		}
	if (counts) {
		macro("insns", 2)
		macro("atomics", 3)
		macro("tlbis", 4)
	} else {
		macro("times", 1)
		macro("ratios", 2)
	}
}
