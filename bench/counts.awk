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
# columns hold the median over the repetitions (the traced repetition,
# run with the flush tracepoint recording, is left out), per move:
#   insns_user insns_kernel loads stores atomics tlbi ipis entries
#   atomics_per_entry insns_per_entry tlbi_kinds timer_irqs timer_insns
#   count_reps
# (timer_irqs, timer_insns: the timer interrupts the plugin left out.)
# A cell with no counted repetition gets empty columns.

function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++) {
		t = a[i]
		for (j = i - 1; j >= 1 && a[j] > t; j--)
			a[j + 1] = a[j]
		a[j + 1] = t
	}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

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
	timer_n[id] = $10
	timer_i[id] = $11
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
	v[cell, ncol + 2, n] = timer_n[id] / ops
	v[cell, ncol + 3, n] = timer_i[id] / ops
	totops[cell] += ops
	if (kinds[id] != "-") {
		m = split(kinds[id], kk, ";")
		for (i = 1; i <= m; i++) {
			split(kk[i], p, "=")
			if (!((cell, p[1]) in ksum))
				korder[cell] = korder[cell] (korder[cell] == "" ? "" : " ") p[1]
			ksum[cell, p[1]] += p[2]
		}
	}
	next
}

FNR == 1 {
	print $0 ",insns_user,insns_kernel,loads,stores,atomics,tlbi,ipis,entries," \
		"atomics_per_entry,insns_per_entry,tlbi_kinds,timer_irqs,timer_insns,count_reps"
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
	line = $0
	for (k = 1; k <= ncol + 1; k++) {
		for (i = 1; i <= n; i++)
			a[i] = v[cell, k, i]
		med[k] = median(a, n)
		line = line "," fmt(med[k])
	}
	ent = med[ncol + 1]
	line = line "," (ent > 0 ? fmt(med[5] / ent) : "") "," \
		(ent > 0 ? fmt((med[1] + med[2]) / ent) : "")
	kl = ""
	m = split(korder[cell], kn, " ")
	for (i = 1; i <= m; i++)
		kl = kl (i > 1 ? ";" : "") kn[i] "=" fmt(ksum[cell, kn[i]] / totops[cell])
	for (k = ncol + 2; k <= ncol + 3; k++) {
		for (i = 1; i <= n; i++)
			a[i] = v[cell, k, i]
		kl = kl "," fmt(median(a, n))
	}
	print line "," kl "," n
}
