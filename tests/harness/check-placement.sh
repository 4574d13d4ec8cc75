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
#    module memory, starts it on a page (6.1 and 6.12 keep .text.fr_hot.N
#    as a section; 7.x's module linker script merges it into .text,
#    which then takes its alignment);
#  - it starts and ends in the same page of that section.
# At least one marked function must have a symbol.
# And for each marked function, what it calls inside the module: only our
# own fr_ functions, placed on purpose. A compiler's out-of-line copy of
# a kernel inline (a ".constprop" clone in .text) called per entry leaves
# the page on every entry: 7.x arm64's set_pte_at() did (arch.h,
# fr_arch_set_pte()).
set -uo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

ko=${1:-}
page=4096
[ -r "$ko" ] || fr_die "usage: check-placement.sh KO"
name=$(basename "$(dirname "$ko")")/$(basename "$ko")

# What the sources mark: the function name before "(" on the marker's line.
marked=$(grep -h '__fr_hot[ a-z_0-9]*(' "$FR_TOP"/module/*.c |
	sed 's/.*__fr_hot[ a-z_0-9]* \([a-z_0-9]*\)(.*/\1/' | sort -u)
tap_ok "$([ -n "$marked" ] && echo 1)" "$name: the sources mark hot functions ($(echo $marked))"

# Section index -> name and alignment ([Nr] Name Type Address Off Size ES Flg Lk Inf Al).
sections=$(readelf -SW "$ko" | sed -n 's/^ *\[ *\([0-9]*\)\] /\1 /p' | awk '{ print $1, $2, $NF }')
# Value Size Type Bind Vis Ndx Name
symbols=$(readelf -sW "$ko" | awk '$4 == "FUNC" { print $8, $7, $2, $3 }')
# fr_local_callees FN: the module's own functions FN calls, by name. A
# call's relocation names its target, or (x86-64, a static function) its
# section and offset: the field's address plus 4 less, so offset =
# addend + 4 there, the addend itself on arm64.
objdump=objdump skew=4
if readelf -hW "$ko" | grep -q 'AArch64'; then
	objdump=aarch64-linux-gnu-objdump skew=0
fi
command -v "$objdump" >/dev/null || fr_die "no $objdump (binutils for the module's architecture)"
# Index Value Bind Name of every function; index -> section name.
funcs=$(readelf -sW "$ko" | awk '$4 == "FUNC" && $7 != "UND" { print $7, $2, $5, $8 }')
fr_local_callees() {
	"$objdump" -dr --no-show-raw-insn --disassemble="$1" "$ko" |
		awk '/\t(call|callq|bl)[ \t]/ { want = 1; next }
		     want && /R_(X86_64|AARCH64)_/ { print $NF }
		     { want = 0 }' |
		awk -v skew="$skew" -v secs="$sections" -v funcs="$funcs" '
		function hex(h,   v, i) {
			sub(/^0x/, "", h); v = 0
			for (i = 1; i <= length(h); i++)
				v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
			return v
		}
		BEGIN {
			n = split(secs, l, "\n")
			for (i = 1; i <= n; i++) { split(l[i], f, " "); idx[f[2]] = f[1] }
			n = split(funcs, l, "\n")
			for (i = 1; i <= n; i++) {
				split(l[i], f, " ")
				byval[f[1] ":" hex(f[2])] = f[4]
				bind[f[4]] = f[3]
			}
		}
		{
			t = $0; add = 0
			if (match(t, /[+-]0x[0-9a-f]+$/)) {
				add = hex(substr(t, RSTART + 1))
				if (substr(t, RSTART, 1) == "-") add = -add
				t = substr(t, 1, RSTART - 1)
			}
			if (t ~ /^\./) {
				key = idx[t] ":" (add + skew)
				if (key in byval) t = byval[key]; else { print "?" $0; next }
			}
			if (bind[t] == "LOCAL") print t
		}' | sort -u
}

placed=0
for fn in $marked; do
	read -r _ idx off len <<<"$(printf '%s\n' "$symbols" | awk -v f="$fn" '$1 == f' | head -n 1)"
	if [ -z "${idx:-}" ]; then
		tap_ok 1 "$name: $fn inlined into its caller (no symbol)"
		continue
	fi
	placed=$((placed + 1))
	read -r _ sec align <<<"$(printf '%s\n' "$sections" | awk -v i="$idx" '$1 == i')"
	off=$((16#$off))
	case $len in 0x*) len=$((len)) ;; esac
	tap_ok "$([ -n "${align:-}" ] && [ "$align" -ge "$page" ] && [ $((align % page)) = 0 ] && echo 1)" \
		"$name: $fn's section ${sec:-?} aligned to a page (alignment ${align:-?})"
	tap_ok "$([ $((off / page)) = $(((off + len - 1) / page)) ] && echo 1)" \
		"$name: $fn inside one page ($len bytes at page offset $((off % page)))"
	# Its instructions, to know the disassembler found it (a leaf
	# function, such as fr_move_scan() on 6.1 arm64, makes no call).
	dis=$("$objdump" -d --disassemble="$fn" "$ko")
	ninsn=$(printf '%s\n' "$dis" | grep -cE '^ +[0-9a-f]+:')
	ncalls=$(printf '%s\n' "$dis" | grep -cE '\s(call|callq|bl)\s')
	callees=$(fr_local_callees "$fn")
	bad=$(printf '%s\n' $callees | grep -v '^fr_' | grep .)
	tap_ok "$([ "$ninsn" -gt 0 ] && [ -z "$bad" ] && echo 1)" \
		"$name: of $fn's $ncalls calls, those inside the module reach only its own fr_ functions ($(echo $callees))" \
		"$bad"
done
tap_ok "$([ "$placed" -gt 0 ] && echo 1)" "$name: $placed marked function(s) with a symbol of their own"
tap_done
