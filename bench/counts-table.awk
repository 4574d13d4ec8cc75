# SPDX-License-Identifier: GPL-2.0
# The counts of a BENCH_COUNT=1 run (the CSV with bench/counts.awk's
# columns) as a table per move, fmt=md or fmt=text; then, for workloads
# whose fastremap calls the library routed to mremap(2), what the library
# adds to a routed call in instructions.
# Usage: awk -F, -v fmt=md -f counts-table.awk CSV

function cell(v) {
	return v == "" ? "-" : v
}

function row(a, b, c, d, e, f, g, h, i, j, k, l, m) {
	if (fmt == "md")
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			a, b, c, d, e, f, g, h, i, j, k, l, m
	else
		printf "%-20s %-11s %12s %12s %11s %11s %9s %7s %6s %9s %9s %9s %s\n",
			a, b, c, d, e, f, g, h, i, j, k, l, m
}

function num(v) {
	return v == "" ? "-" : sprintf("%.6g", v)
}

NR == 1 {
	for (i = 1; i <= NF; i++)
		col[$i] = i
	if (!("insns_user" in col))
		exit
	print (fmt == "md" ? "" : "# ") "Counts per move (BENCH_COUNT=1; the least disturbed timed repetition):"
	if (fmt == "md")
		print ""
	row("workload", "contender", "insns user", "insns kernel", "loads", "stores", "atomics",
	    "tlbi", "ipis", "entries", "atomics/entry", "insns/entry", "tlbi kinds")
	if (fmt == "md")
		print "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	has = 1
	next
}

$col["ok"] == "ok" {
	row($2, $3, num($col["insns_user"]), num($col["insns_kernel"]), num($col["loads"]),
	    num($col["stores"]), num($col["atomics"]), num($col["tlbi"]), num($col["ipis"]),
	    num($col["entries"]), num($col["atomics_per_entry"]), num($col["insns_per_entry"]),
	    cell($col["tlbi_kinds"]))
	u[$2, $3] = $col["insns_user"]
	k[$2, $3] = $col["insns_kernel"]
	if ($3 == "fastremap" && $0 ~ /module_calls=0(;|$)/)
		routed[$2] = 1
}

END {
	if (!has)
		exit
	for (w in routed) {
		if (!((w, "mremap") in u) || u[w, "mremap"] == "")
			continue
		du = u[w, "fastremap"] - u[w, "mremap"]
		dk = k[w, "fastremap"] - k[w, "mremap"]
		tot = u[w, "mremap"] + k[w, "mremap"]
		printf "%s%s: the library adds %.6g user instructions to a call it routes to mremap(2) " \
			"(kernel %+.6g), %.3g%% of mremap(2)'s %.6g\n", (fmt == "md" ? "\n" : "# "), w, du, dk,
			(tot > 0 ? 100 * (du + dk) / tot : 0), tot
	}
}
