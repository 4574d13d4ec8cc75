#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# What libfastremap adds to a call it routes to mremap(2), in user
# instructions, counted exactly on this machine: bench/libcost/libcost.c
# makes the same calls through fastremap_remap() and through the C
# library's mremap(), each call from a function of its own, and
# callgrind counts them (an instruction count, not a time: the same on a
# loaded machine). On a host without the module the library takes the
# path of a process without it: the routed calls are the same as with the
# module, and "big" (not routed) shows the cost of finding no device.
#
# Per case and contender, two runs: one call (the first call of a
# process, the library's state empty) and 1 + N calls; the steady state
# per call is the difference over N. Prints TAP: per case, the library's
# extra instructions per call in the steady state against a ceiling
# (bench/README.md, "What the library adds"); a control that a known 100
# instructions more are counted as exactly 100; the last line
# "N passed, N failed, N skipped". A bench target for manual use, not part
# of `make check` (callgrind: about 30 s).
#
# Usage: bench/libcost.sh
#   LIBCOST_N      calls of the steady state (default 1000)
#   LIBCOST_LIB    a libfastremap.a to count instead of the tree's (for a
#                  comparison with another version; built with CFLAGS)
#   LIBCOST_KEEP=1 keep the callgrind outputs (printed at the end)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source=tests/harness/tap.sh
. "$top/tests/harness/tap.sh"

n=${LIBCOST_N:-1000}
build=${FASTREMAP_BUILD:-$top/build}
out=$build/bench/libcost
mkdir -p "$out"
# Ceilings, in user instructions the library adds per call, steady state
# (x86-64, gcc -O2; see bench/README.md). Any other architecture or
# compiler: measured and printed, checked against these all the same.
declare -A ceil=([move]=85 [move_stats]=105 [shrink]=42 [same]=42 [big]=180)
cases="move move_stats shrink same big"

if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then
	tap_skip "no valgrind (callgrind)" "the library's cost per routed call"
	tap_done
	exit 0
fi

lib=${LIBCOST_LIB:-}
if [[ -z $lib ]]; then
	make -s -C "$top/userspace" BUILD="$out/userspace" WERROR=1 "$out/userspace/libfastremap.a"
	lib=$out/userspace/libfastremap.a
fi
# Bound at load (-z now): a first call pays no lazy binding of mremap().
read -ra cflags <<<"${CFLAGS:--O2 -g}"
# The test library's geometry (tests/lib/geom.c): the kernel's page and PMD.
${CC:-cc} -std=c11 -Wall -Wextra -Werror "${cflags[@]}" -I"$top/userspace" -I"$top/uapi" \
	-I"$top/tests/lib" -Wl,-z,now -o "$out/libcost" "$here/libcost/libcost.c" \
	"$top/tests/lib/geom.c" "$lib"

# count CASE CONTENDER CALLS: the inclusive instructions of the
# contender's function (lc_lib, lc_glibc, lc_pad) over CALLS calls.
count() {
	local f=$out/cg.$1.$2.$3
	valgrind --tool=callgrind --callgrind-out-file="$f" "$out/libcost" "$1" "$2" "$3" \
		>"$f.log" 2>&1 || { cat "$f.log" >&2; return 1; }
	callgrind_annotate --inclusive=yes "$f" |
		awk -v fn="libcost.c:lc_$2 " 'index($0, fn) && !done { gsub(",", "", $1); print $1; done = 1 }'
}

# per CASE CONTENDER: "FIRST STEADY" (STEADY with two decimals). The
# library looks for the device again once a second while it has none
# ("big"): a run a second boundary fell into counts that open(2) too,
# which the steady state shows as a fraction; such a run is made again.
per() {
	local first many try steady
	for try in 1 2 3; do
		first=$(count "$1" "$2" 1)
		many=$(count "$1" "$2" $((n + 1)))
		[[ -n $first && -n $many ]] || return 1
		steady=$(awk -v a="$first" -v b="$many" -v n="$n" 'BEGIN { printf "%.2f", (b - a) / n }')
		[[ $steady == *.00 ]] && break
		tap_diag "$1 $2: $steady instructions per call, not whole: counting again ($try)" >&2
	done
	echo "$first $steady"
}

tap_diag "host: $(uname -m), $(${CC:-cc} --version | head -n 1), $(valgrind --version)"
tap_diag "user instructions per call (inclusive: the call's argument passing, the library or the C library, the system call instruction)"
tap_diag "$(printf '%-11s %14s %14s %14s %14s %12s %12s' case lib_first glibc_first lib_steady glibc_steady added_first added_steady)"
declare -A added
for c in $cases; do
	read -r lf ls < <(per "$c" lib)
	read -r gf gs < <(per "$c" glibc)
	af=$((lf - gf))
	as=$(awk -v a="$ls" -v b="$gs" 'BEGIN { printf "%.2f", a - b }')
	added[$c]=$as
	tap_diag "$(printf '%-11s %14s %14s %14s %14s %12s %12s' "$c" "$lf" "$gf" "$ls" "$gs" "$af" "$as")"
done

# The control: lc_pad() is lc_glibc() and 100 nops.
read -r _ ps < <(per move pad)
read -r _ gs < <(per move glibc)
d=$(awk -v a="$ps" -v b="$gs" 'BEGIN { printf "%.2f", a - b }')
tap_ok "$([[ $d == 100.00 ]] && echo 1 || echo 0)" \
	"control: 100 instructions added to mremap() counted as $d" || true

for c in $cases; do
	what="routed to mremap(2)"
	[[ $c == big ]] && what="not routed, no device"
	tap_ok "$(awk -v a="${added[$c]}" -v m="${ceil[$c]}" 'BEGIN { print (a <= m) }')" \
		"$c ($what): the library adds ${added[$c]} instructions per call, at most ${ceil[$c]}" || true
done

# Where they go: the library's functions in the steady state of two cases.
for c in move_stats big; do
	tap_diag "$c, $((n + 1)) calls through the library, inclusive (callgrind_annotate):"
	tap_diag "$(callgrind_annotate --inclusive=yes "$out/cg.$c.lib.$((n + 1))" |
		grep -E '\) +[^ ]+:[^ ]+ \[' |
		grep -E 'libfastremap\.c:|:lc_lib |clock_gettime|:mremap ' | head -n 12)"
done
if [[ ${LIBCOST_KEEP:-0} == 1 ]]; then
	tap_diag "callgrind outputs kept in $out"
else
	rm -f "$out"/cg.*
fi
tap_done
