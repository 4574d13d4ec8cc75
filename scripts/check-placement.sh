#!/usr/bin/env bash
# Checks a built fastremap.ko for the code placement module/hot.h promises:
# every function that holds one of the mover's hot loops (marked __fr_hot
# in the sources) lies inside one 4 KiB page of module text, on whatever
# kernel it was built for. Under QEMU's TCG a loop that straddles a page
# of guest text costs a block lookup per iteration (bench/README.md, "Code
# placement"). Prints TAP.
# Usage: check-placement.sh KO
# For each marked function that has a symbol (one inlined into a marked
# caller has none, and its loop is the caller's):
#  - the section holding it is aligned to a page, so that the module
#    loader, which places each section at its alignment in page-aligned
#    module memory, starts it on a page (6.1 and 6.12 keep .text.fr_hot
#    as a section; 7.x's module linker script merges it into .text,
#    which then takes its alignment);
#  - it starts and ends in the same page of that section.
# At least one marked function must have a symbol.
set -uo pipefail
. "$(dirname "$0")/common.sh"

ko=${1:-}
page=4096
n=0 fail=0
ok() { # ok OK? DESCRIPTION [DIAGNOSTICS]
	n=$((n + 1))
	if [ "$1" = 1 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		[ -n "${3:-}" ] && printf '%s\n' "$3" | head -n 20 | sed 's/^/# /'
		fail=$((fail + 1))
	fi
}
[ -r "$ko" ] || fr_die "usage: check-placement.sh KO"
name=$(basename "$(dirname "$ko")")/$(basename "$ko")

# What the sources mark: the function name before "(" on the marker's line.
marked=$(grep -h '__fr_hot[ a-z_0-9]*(' "$FR_TOP"/module/*.c |
	sed 's/.*__fr_hot[ a-z_0-9]* \([a-z_0-9]*\)(.*/\1/' | sort -u)
ok "$([ -n "$marked" ] && echo 1)" "$name: the sources mark hot functions ($(echo $marked))"

# Section index -> name and alignment ([Nr] Name Type Address Off Size ES Flg Lk Inf Al).
sections=$(readelf -SW "$ko" | sed -n 's/^ *\[ *\([0-9]*\)\] /\1 /p' | awk '{ print $1, $2, $NF }')
# Value Size Type Bind Vis Ndx Name
symbols=$(readelf -sW "$ko" | awk '$4 == "FUNC" { print $8, $7, $2, $3 }')
placed=0
for fn in $marked; do
	read -r _ idx off len <<<"$(printf '%s\n' "$symbols" | awk -v f="$fn" '$1 == f' | head -n 1)"
	if [ -z "${idx:-}" ]; then
		ok 1 "$name: $fn inlined into its caller (no symbol)"
		continue
	fi
	placed=$((placed + 1))
	read -r _ sec align <<<"$(printf '%s\n' "$sections" | awk -v i="$idx" '$1 == i')"
	off=$((16#$off))
	case $len in 0x*) len=$((len)) ;; esac
	ok "$([ -n "${align:-}" ] && [ "$align" -ge "$page" ] && [ $((align % page)) = 0 ] && echo 1)" \
		"$name: $fn's section ${sec:-?} aligned to a page (alignment ${align:-?})"
	ok "$([ $((off / page)) = $(((off + len - 1) / page)) ] && echo 1)" \
		"$name: $fn inside one page ($len bytes at page offset $((off % page)))"
done
ok "$([ "$placed" -gt 0 ] && echo 1)" "$name: $placed marked function(s) with a symbol of their own"
echo "1..$n"
[ "$fail" = 0 ]
