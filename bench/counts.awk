# SPDX-License-Identifier: GPL-2.0
# Joins the counting plugin's counts (bench/plugin/fr_count.c) with
# fr_bench's results: adds the count columns to the CSV.
# Usage: awk -f counts.awk PLUGIN_OUT COUNT_TABLE RESULTS_CSV > CSV
#   PLUGIN_OUT   fr_count's file: "id regions insns_user insns_kernel loads
#                stores atomics tlbi ipis kinds" per region id
#   COUNT_TABLE  fr_bench's FR-BENCH-COUNT block (id,workload,contender,
#                rep,traced,ops,entries): which id was which repetition
#   RESULTS_CSV  fr_bench's CSV
# Per cell, each timed repetition's counts are divided by its moves; the
# columns hold those of the repetition with the fewest instructions per
# move, the least disturbed (the traced repetition, run with the flush
# tracepoint recording, is left out), per move:
#   insns_user insns_kernel loads stores atomics tlbi ipis entries
#   atomics_per_entry insns_per_entry tlbi_kinds irqs_out irqs_out_insns
#   count_reps
# (irqs_out, irqs_out_insns: the interrupts on the moving vCPU that the
# plugin left out.)
# A cell with no counted repetition gets empty columns.

function fmt(v) {
	return sprintf("%.10g", v)
}

BEGIN {
	ncol = split("insns_user insns_kernel loads stores atomics tlbi ipis", col, " ")
}

FILENAME == ARGV[1] {
	if ($0 ~ /^#/ || NF < 12)
		next
	id = tolower($1)
	regions[id] = $2
	for (k = 1; k <= ncol; k++)
		cnt[id, k] = $(k + 2)
	irqs_n[id] = $10
	irqs_i[id] = $11
	kinds[id] = $12
	next
}

FILENAME == ARGV[2] {
	if (FNR == 1)
		next
	split($0, f, ",")
	id = tolower(f[1])
	if (f[5] != 0 || !(id in regions) || f[6] <= 0)
		next
	cell = f[2] "," f[3]
	n = ++nrep[cell]
	ops = f[6]
	for (k = 1; k <= ncol; k++)
		v[cell, k, n] = cnt[id, k] / ops
	v[cell, ncol + 1, n] = f[7] / ops
	v[cell, ncol + 2, n] = irqs_n[id] / ops
	v[cell, ncol + 3, n] = irqs_i[id] / ops
	kindsof[cell, n] = kinds[id]
	opsof[cell, n] = ops
	next
}

FNR == 1 {
	print $0 ",insns_user,insns_kernel,loads,stores,atomics,tlbi,ipis,entries," \
		"atomics_per_entry,insns_per_entry,tlbi_kinds,irqs_out,irqs_out_insns,count_reps"
	next
}

{
	split($0, f, ",")
	cell = f[2] "," f[3]
	n = nrep[cell]
	if (!n) {
		print $0 ",,,,,,,,,,,,,,0"
		next
	}
	# The repetition with the fewest instructions per move: the least
	# disturbed (whatever else ran in a region only adds to it).
	best = 1
	for (i = 2; i <= n; i++)
		if (v[cell, 1, i] + v[cell, 2, i] < v[cell, 1, best] + v[cell, 2, best])
			best = i
	line = $0
	for (k = 1; k <= ncol + 1; k++) {
		med[k] = v[cell, k, best]
		line = line "," fmt(med[k])
	}
	ent = med[ncol + 1]
	line = line "," (ent > 0 ? fmt(med[5] / ent) : "") "," \
		(ent > 0 ? fmt((med[1] + med[2]) / ent) : "")
	kl = ""
	if (kindsof[cell, best] != "-") {
		m = split(kindsof[cell, best], kk, ";")
		for (i = 1; i <= m; i++) {
			split(kk[i], p, "=")
			kl = kl (i > 1 ? ";" : "") p[1] "=" fmt(p[2] / opsof[cell, best])
		}
	}
	for (k = ncol + 2; k <= ncol + 3; k++)
		kl = kl "," fmt(v[cell, k, best])
	print line "," kl "," n
}
