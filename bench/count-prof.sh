#!/usr/bin/env bash
# Names the functions of the counting plugin's profile
# (`BENCH_COUNT=1 BENCH_COUNT_PROF=1 make bench`, bench/plugin/fr_count.c):
# which code each counted region ran, to see where its counts come from
# and why two runs' counts differ. bench/run.sh runs it after a profiled
# boot; by hand:
#   bench/count-prof.sh RAW LOG >NAMED
# RAW the plugin's prof= file; LOG the guest's log, which holds the
# guest's /proc/kallsyms text symbols as fr_bench printed them. Output,
# one line per region id, where and function, most instructions first:
#   id where insns atomics function [<caller]
# where: cpu (the region's vCPU outside interrupts), irq (inside an
# interrupt window there, which the counts leave out), other (other
# vCPUs; the counts keep only their flush IPIs). Functions: NAME, or NAME:MODULE; user code
# is [user]. Where a function's atomics come from a block entered from
# another function (a lock's from its caller), a line of their own,
# "NAME<CALLER".
set -euo pipefail

[ $# -eq 2 ] || { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
raw=$1 log=$2

# Functions and the profile's addresses as 16 hex digits, which sort in
# address order; one pass then gives each address the function before it.
{
	sed -n '/^FR-BENCH-KALLSYMS-BEGIN$/,/^FR-BENCH-KALLSYMS-END$/p' "$log" |
		awk 'NF >= 3 && length($1) == 16 {
			m = $4; gsub(/[][]/, "", m)
			print $1, 0, $3 (m != "" ? ":" m : "") }'
	awk '!/^#/ { for (i = 2; i <= 8; i += 6) if ($i != "0x0") {
		a = substr($i, 3); print substr("0000000000000000", 1, 16 - length(a)) a, 1, $i } }' \
		"$raw" | sort -u
} | LC_ALL=C sort -k1,1 -k2,2n |
	awk '$2 == 0 { fn = $3; next }
		{ print $3, (substr($1, 1, 1) ~ /[0-7]/ ? "[user]" : fn == "" ? "?" : fn) }' >"$raw.names"
[ -s "$raw.names" ] || { echo "count-prof: nothing to name in $raw" >&2; exit 1; }

awk 'FNR == NR { name[$1] = $2; next }
	/^#/ { next }
	{
		f = name[$2]
		if ($4 > 0 && $8 != "0x0" && name[$8] != f) f = f "<" name[$8]
		split("cpu irq other", w)
		for (i = 1; i <= 3; i++) if ($(4 + i) > 0) {
			k = $1 " " w[i] " " f
			ins[k] += $3 * $(4 + i); at[k] += $4 * $(4 + i)
		}
	}
	END { for (k in ins) { split(k, p, " "); print p[1], p[2], ins[k], at[k], p[3] } }' \
	"$raw.names" "$raw" | LC_ALL=C sort -k1,1 -k2,2 -k3,3nr
