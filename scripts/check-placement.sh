#!/usr/bin/env bash
# Checks a built fastremap.ko for the code placement module/hot.h promises:
# every function that holds one of the mover's hot loops (marked __fr_hot
# in the sources) lies inside one 4 KiB page of module text, on whatever
# kernel it was built for. Under QEMU's TCG a loop that straddles a page
# of guest text costs a block lookup per iteration (bench/README.md, "Code
# placement"). Prints TAP.
# Usage: check-placement.sh KO
#  - the section .text.fr_hot exists and is aligned to a page, so that the
#    module loader, which places each section at its alignment in
#    page-aligned module memory, starts it on a page;
#  - every function symbol in it starts and ends in the same page;
#  - every function the sources mark __fr_hot is in it, or was inlined
#    (no symbol at all) into a caller that is.
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

# [Nr] Name Type Address Off Size ES Flg Lk Inf Al, as readelf -SW prints them.
sec=$(readelf -SW "$ko" | sed 's/^ *\[ *\([0-9]*\)\]/\1/' |
	awk '$2 == ".text.fr_hot" { print $1, $6, $NF }')
if [ -z "$sec" ]; then
	ok 0 "$name: a .text.fr_hot section" "$(readelf -SW "$ko" | grep -E '\.text')"
	echo "1..$n"
	exit 1
fi
read -r idx size align <<<"$sec"
size=$((16#$size))
ok 1 "$name: a .text.fr_hot section ($size bytes)"
ok "$([ "$align" -ge "$page" ] && [ $((align % page)) = 0 ] && echo 1)" \
	"$name: .text.fr_hot aligned to a page (alignment $align)"

# Value Size Type Bind Vis Ndx Name
syms=$(readelf -sW "$ko" | awk -v idx="$idx" '$4 == "FUNC" && $7 == idx { print $8, $2, $3 }')
ok "$([ -n "$syms" ] && echo 1)" "$name: functions in .text.fr_hot"
while read -r fn off len; do
	[ -n "$fn" ] || continue
	off=$((16#$off))
	case $len in 0x*) len=$((len)) ;; esac
	first=$((off / page)) last=$(((off + len - 1) / page))
	ok "$([ "$first" = "$last" ] && echo 1)" \
		"$name: $fn in one page (offset $off, $len bytes, page offset $((off % page)))"
done <<<"$syms"

# What the sources mark: NAME( on the line of the marker.
marked=$(grep -h '__fr_hot[ a-z_0-9]*(' "$FR_TOP"/module/*.c |
	sed 's/.*__fr_hot[ a-z_0-9]* \([a-z_0-9]*\)(.*/\1/' | sort -u)
ok "$([ -n "$marked" ] && echo 1)" "$name: the sources mark hot functions ($(echo $marked))"
for fn in $marked; do
	where=$(readelf -sW "$ko" | awk -v f="$fn" '$4 == "FUNC" && $8 == f { print $7 }')
	if [ -z "$where" ]; then
		ok 1 "$name: $fn inlined into its caller"
	else
		ok "$([ "$where" = "$idx" ] && echo 1)" "$name: $fn in .text.fr_hot (section $where)"
	fi
done
echo "1..$n"
[ "$fail" = 0 ]
