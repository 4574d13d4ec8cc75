# SPDX-License-Identifier: GPL-2.0
# The size sweep's table (bench/README.md, "How cost grows with size"),
# from fr_bench's sweep CSV (bench/sweep.c).
# Usage: awk -F, -v fmt=md|text -f sweep.awk KERNEL-sweep.csv
# A row per level and size: the median move of each contender, mremap(2)'s
# time over fastremap's (library, module called directly; repetition by
# repetition, (I)/(R) where the 95% interval lies above/below 1), the
# entries the module moved at the level (of those the level predicts) and
# the flushes: the module's own count, then the tlb_flush events traced
# around one move of each contender. Then the crossovers, per level: the
# size from which each fastremap contender is faster than mremap(2) at
# every larger size (median ratio above 1; "(I)" where that size's
# interval lies above 1 too), the sizes where it is significantly slower
# (R), and the largest size the library sends to mremap(2).

function us(v) {
	if (v == "")
		return "-"
	return v >= 1000 ? sprintf("%.2f ms", v / 1000) : sprintf("%.1f us", v)
}

function sz(b) {
	if (b >= 2^30)
		return b / 2^30 " GiB"
	if (b >= 2^20)
		return b / 2^20 " MiB"
	return b / 2^10 " KiB"
}

function ratio(k) {
	if (rat[k] == "")
		return "-"
	return sprintf("%.2f%s", rat[k], rlo[k] > 1 ? " (I)" : rhi[k] < 1 ? " (R)" : "")
}

NR == 1 {
	for (i = 1; i <= NF; i++)
		col[$i] = i
	next
}

{
	k = $col["level"] SUBSEP $col["size_bytes"]
	if (!(k in seen)) {
		seen[k] = 1
		order[++n] = k
		lv[k] = $col["level"]
		bytes[k] = $col["size_bytes"]
		pop[k] = $col["population"]
		exp_[k] = $col["expected_entries"]
		if (!($col["level"] in nsz))
			lorder[++nlv] = $col["level"]
		szs[$col["level"], ++nsz[$col["level"]]] = k
	}
	c = $col["contender"]
	ok = $col["ok"]
	kc = k SUBSEP c
	t[kc] = ok == "ok" ? us($col["median_us"]) : ok ~ /^error/ ? "error" : "skip"
	fl[kc] = $col["flushes"]
	if (c == "fastremap_direct") {
		lvl = $col["level"]
		at[k] = $col[lvl == "thp" ? "thp" : lvl]
		mf[k] = $col["mod_flushes"]
	}
	if (c == "fastremap")
		path[k] = $col["module_calls"] == "" ? "-" : $col["module_calls"] > 0 ? "module" : "mremap(2)"
	if (c != "mremap") {
		rat[kc] = $col["mremap_ratio"]
		rlo[kc] = $col["ratio_lo"]
		rhi[kc] = $col["ratio_hi"]
	}
}

END {
	h[1] = "level"; h[2] = "size"; h[3] = "population"; h[4] = "library (path)"
	h[5] = "module direct"; h[6] = "mremap(2)"; h[7] = "mremap/library"; h[8] = "mremap/module"
	h[9] = "entries at level"; h[10] = "module flushes"; h[11] = "traced flushes lib/mod/mremap"
	nh = 11
	if (fmt == "md") {
		line = "|"
		sep = "|"
		for (i = 1; i <= nh; i++) {
			line = line " " h[i] " |"
			sep = sep "---|"
		}
		print line
		print sep
	} else {
		printf "%-4s %-7s %-7s %-22s %-11s %-11s %-14s %-14s %-16s %-5s %s\n", h[1], h[2], h[3], h[4], h[5], h[6], "mr/lib", "mr/mod", "entries", "mfl", "flushes"
	}
	for (i = 1; i <= n; i++) {
		k = order[i]
		f[1] = lv[k]; f[2] = sz(bytes[k]); f[3] = pop[k]
		f[4] = t[k SUBSEP "fastremap"] " (" path[k] ")"
		f[5] = t[k SUBSEP "fastremap_direct"]; f[6] = t[k SUBSEP "mremap"]
		f[7] = ratio(k SUBSEP "fastremap"); f[8] = ratio(k SUBSEP "fastremap_direct")
		f[9] = (at[k] == "" ? "-" : at[k]) " of " exp_[k]
		f[10] = mf[k] == "" ? "-" : mf[k]
		f[11] = fl[k SUBSEP "fastremap"] "/" fl[k SUBSEP "fastremap_direct"] "/" fl[k SUBSEP "mremap"]
		if (fmt == "md") {
			line = "|"
			for (j = 1; j <= nh; j++)
				line = line " " f[j] " |"
			print line
		} else {
			printf "%-4s %-7s %-7s %-22s %-11s %-11s %-14s %-14s %-16s %-5s %s\n", f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11]
		}
	}
	crossovers()
}

# The smallest size of level l from which contender c's ratio stays above 1.
function wins_from(l, c,    i, k, from) {
	from = ""
	for (i = nsz[l]; i >= 1; i--) {
		k = szs[l, i] SUBSEP c
		if (rat[k] == "" || rat[k] <= 1)
			break
		from = i
	}
	if (from == "")
		return "never"
	k = szs[l, from] SUBSEP c
	return sz(bytes[szs[l, from]]) (rlo[k] > 1 ? " (I)" : "")
}

function slower(l, c,    i, k, out) {
	out = ""
	for (i = 1; i <= nsz[l]; i++) {
		k = szs[l, i] SUBSEP c
		if (rat[k] != "" && rhi[k] < 1)
			out = out (out ? ", " : "") sz(bytes[szs[l, i]])
	}
	return out ? out : "none"
}

function routed(l,    i, out) {
	out = "none"
	for (i = 1; i <= nsz[l]; i++)
		if (path[szs[l, i]] == "mremap(2)")
			out = sz(bytes[szs[l, i]])
	return out
}

function crossovers(    i, l) {
	print ""
	if (fmt == "md") {
		print "| level | module direct faster from | module direct slower (R) at | library faster from | library slower (R) at | library sends to mremap(2) up to |"
		print "|---|---|---|---|---|---|"
	} else {
		print "crossovers: level | module direct faster from | slower (R) at | library faster from | slower (R) at | routed to mremap(2) up to"
	}
	for (i = 1; i <= nlv; i++) {
		l = lorder[i]
		if (fmt == "md")
			printf "| %s | %s | %s | %s | %s | %s |\n", l, wins_from(l, "fastremap_direct"), slower(l, "fastremap_direct"), wins_from(l, "fastremap"), slower(l, "fastremap"), routed(l)
		else
			printf "%s | %s | %s | %s | %s | %s\n", l, wins_from(l, "fastremap_direct"), slower(l, "fastremap_direct"), wins_from(l, "fastremap"), slower(l, "fastremap"), routed(l)
	}
}
