# SPDX-License-Identifier: GPL-2.0
# Compares the count columns of two BENCH_COUNT=1 results (CSV files of
# the same kernel, bench/counts.awk's columns): one line per cell and
# column, "ok" or "DIFF", with both values and the relative difference;
# the last line "cells N columns N differ N".
# Usage: awk -F, -v tol=0.005 -f counts-compare.awk A.csv B.csv
# Counts of the same cell must agree to within tol (relative, of the
# larger); a cell counted in one run and not in the other differs.

BEGIN {
	if (tol == "")
		tol = 0.005
	ncols = split("insns_user insns_kernel loads stores atomics tlbi ipis entries", want, " ")
}

# (file counts the files read: the same file may be given twice.)
FNR == 1 {
	file++
	for (i = 1; i <= NF; i++)
		idx[file, $i] = i
	for (k = 1; k <= ncols; k++)
		if (!((file, want[k]) in idx)) {
			print "no column " want[k] " in " FILENAME
			bad = 1
		}
	next
}

file == 1 {
	for (k = 1; k <= ncols; k++)
		a[$2 "," $3, k] = $(idx[file, want[k]])
	cells[$2 "," $3] = 1
	next
}

{
	cell = $2 "," $3
	if (!(cell in cells))
		next
	seen[cell] = 1
	for (k = 1; k <= ncols; k++) {
		x = a[cell, k]
		y = $(idx[file, want[k]])
		n++
		if (x == "" && y == "")
			continue
		m = x + 0 > y + 0 ? x + 0 : y + 0
		d = x - y
		if (d < 0)
			d = -d
		rel = m > 0 ? d / m : 0
		ok = x != "" && y != "" && rel <= tol
		printf "%s %s %s: %s vs %s (%.4f%%)\n", ok ? "ok" : "DIFF", cell, want[k], x, y, 100 * rel
		if (!ok)
			diff++
	}
}

END {
	for (c in cells)
		if (!(c in seen)) {
			print "DIFF " c ": in " ARGV[1] " only"
			diff++
		}
	nc = 0
	for (c in cells)
		nc++
	printf "cells %d columns %d differ %d\n", nc, n, diff + bad
}
