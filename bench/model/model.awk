# SPDX-License-Identifier: GPL-2.0
# Modelled hardware time per move: the cost table (bench/model/costs.tsv)
# applied to the counts of a BENCH_COUNT=1 run (the CSV with
# bench/counts.awk's columns), for every CPU of the run's architecture,
# beside the emulated time. A model, not a measurement: bench/README.md,
# "Hardware cost model", says what it leaves out.
# Usage: awk -F, -v fmt=md|text -f model.awk COSTS_TSV CSV
#
# Per move, low bound (cheap end of every range, the fastest clock):
#   insns * cpi + atomics * atomic + tlbi * tlbi_<kind>   cycles / clock
#   + ipis * ipi                                           ns
# high bound (dear end, the slowest clock), also every load and store
# exposed at its full cost and every 64-byte line of moved entries
# (entries / 8) missing all caches:
#   + loads * load + stores * store                        cycles / clock
#   + entries / 8 * load_dram                              ns
# TLB invalidations of a kind without a row of its own, or not split by
# kind, take the CPU's widest TLB range. The ratio columns are the other
# contender's modelled time over fastremap's, both at the low costs and
# both at the high costs (the same CPU, the same assumptions): above 1x,
# fastremap is faster.

function lo(cls, cpu) {
	return (cpu SUBSEP cls) in clo ? clo[cpu, cls] : 0
}

function hi(cls, cpu) {
	return (cpu SUBSEP cls) in chi ? chi[cpu, cls] : 0
}

# The TLB cost class of an invalidation kind, "" when the CPU has none.
function tlbclass(kind, cpu,    c) {
	if (kind == "invlpg" || kind == "cr3" || kind == "invpcid")
		c = "tlbi_" kind
	else if (kind ~ /^r/)
		c = "tlbi_range"
	else if (kind ~ /^(vmalle1|aside1)/)
		c = "tlbi_asid"
	else
		c = "tlbi_va"
	return (cpu SUBSEP c) in clo ? c : ""
}

# Sets T[1] (low) and T[2] (high), ns per move, of CSV line fields f on cpu.
function model(f, cpu,    insns, tl, th, n, k, kk, p, cls, rest, cyl, cyh) {
	insns = f[col["insns_user"]] + f[col["insns_kernel"]]
	cyl = insns * lo("cpi", cpu) + f[col["atomics"]] * lo("atomic", cpu)
	cyh = insns * hi("cpi", cpu) + f[col["atomics"]] * hi("atomic", cpu) + \
		f[col["loads"]] * hi("load", cpu) + f[col["stores"]] * hi("store", cpu)
	rest = f[col["tlbi"]] + 0
	n = f[col["tlbi_kinds"]] == "" ? 0 : split(f[col["tlbi_kinds"]], kk, ";")
	for (k = 1; k <= n; k++) {
		split(kk[k], p, "=")
		cls = tlbclass(p[1], cpu)
		if (cls == "")
			continue
		cyl += p[2] * lo(cls, cpu)
		cyh += p[2] * hi(cls, cpu)
		rest -= p[2]
	}
	if (rest > 0) {
		cyl += rest * tlbwide_lo[cpu]
		cyh += rest * tlbwide_hi[cpu]
	}
	T[1] = cyl / hi("clock", cpu) + f[col["ipis"]] * lo("ipi", cpu)
	T[2] = cyh / lo("clock", cpu) + f[col["ipis"]] * hi("ipi", cpu) + \
		f[col["entries"]] / 8 * hi("load_dram", cpu)
}

function us(ns,    u) {
	u = ns / 1000
	return sprintf(u < 10 ? "%.2f" : u < 1000 ? "%.1f" : "%.0f", u)
}

function ratio(a, b) {
	return b > 0 ? sprintf("%.2f", a / b) : "-"
}

function row(a, b, c, d, e, g, h, i) {
	if (fmt == "md")
		printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", a, b, c, d, e, g, h, i
	else
		printf "%-20s %-11s %-16s %-18s %-18s %-13s %-12s %s\n", a, b, c, d, e, g, h, i
}

FILENAME == ARGV[1] {
	if ($0 ~ /^#/ || $0 ~ /^class\t/ || $0 == "")
		next
	split($0, c, "\t")
	if (!(c[2] in cpuarch)) {
		cpus[++ncpu] = c[2]
		cpuarch[c[2]] = c[3]
	}
	clo[c[2], c[1]] = c[4]
	chi[c[2], c[1]] = c[5]
	if (c[1] ~ /^tlbi_/) {
		if (!(c[2] in tlbwide_lo) || c[4] < tlbwide_lo[c[2]])
			tlbwide_lo[c[2]] = c[4]
		if (!(c[2] in tlbwide_hi) || c[5] > tlbwide_hi[c[2]])
			tlbwide_hi[c[2]] = c[5]
	}
	next
}

FNR == 1 {
	for (i = 1; i <= NF; i++)
		col[$i] = i
	if (!("insns_user" in col))
		exit
	next
}

$col["ok"] == "ok" && $col["insns_user"] != "" {
	if (!kernel) {
		kernel = $1
		arch = kernel ~ /arm64$/ ? "arm64" : "amd64"
	}
	w = $2
	if (!(w in seen)) {
		seen[w] = 1
		works[++nw] = w
	}
	ctr = $3
	if (ctr != "fastremap" && !((w, ctr) in other)) {
		other[w, ctr] = 1
		others[w, ++nother[w]] = ctr
	}
	split($0, f, ",")
	for (j = 1; j <= ncpu; j++) {
		if (cpuarch[cpus[j]] != arch)
			continue
		model(f, cpus[j])
		tl[w, ctr, cpus[j]] = T[1]
		th[w, ctr, cpus[j]] = T[2]
	}
	emu[w, ctr] = $col["median_us"]
	if (match($col["note"], /pair_ratio=[0-9.]+/))
		pr[w, ctr] = substr($col["note"], RSTART + 11, RLENGTH - 11) "x"
	next
}

END {
	if (!nw)
		exit
	t = "Modelled hardware time per move, " kernel " (a model, not a measurement: " \
		"bench/model/costs.tsv applied to this run's counts, low-high; ratios above 1x: " \
		"fastremap is faster; emulated: this CSV's median and paired ratio):"
	print (fmt == "md" ? "" : "# ") t
	if (fmt == "md")
		print ""
	row("workload", "contender", "CPU", "fastremap model us", "other model us",
	    "other/fr model", "fr emulated us", "other/fr emulated")
	if (fmt == "md")
		print "|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nw; i++) {
		w = works[i]
		for (k = 1; k <= nother[w]; k++) {
			o = others[w, k]
			for (j = 1; j <= ncpu; j++) {
				p = cpus[j]
				if (cpuarch[p] != arch || !((w, "fastremap", p) in tl) ||
				    !((w, o, p) in tl))
					continue
				a = ratio(tl[w, o, p], tl[w, "fastremap", p])
				b = ratio(th[w, o, p], th[w, "fastremap", p])
				row(w, o, p,
				    us(tl[w, "fastremap", p]) "-" us(th[w, "fastremap", p]),
				    us(tl[w, o, p]) "-" us(th[w, o, p]),
				    (a + 0 <= b + 0 ? a "-" b : b "-" a) "x",
				    emu[w, "fastremap"], ((w, o) in pr) ? pr[w, o] : "-")
			}
		}
	}
}
