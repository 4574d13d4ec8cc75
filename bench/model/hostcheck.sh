#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Checks the hardware cost model on this machine: builds and runs
# bench/model/hostbench (user space, natively, x86-64; a few seconds) and
# compares each class it measures with that class's range in
# bench/model/costs.tsv for the CPU this host's core is (default
# sapphire-rapids: an Emerald or Sapphire Rapids Xeon, family 6 model 207 or
# 143, is a Golden Cove-family core). Timing-dependent: for manual use, not
# part of `make check`. Prints TAP, the last line "N passed, N failed,
# N skipped".
# Usage: bench/model/hostcheck.sh [CPU]   (HOSTBENCH_MIB: region, default 1024)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=tests/harness/tap.sh
. "$top/tests/harness/tap.sh"

cpu=${1:-sapphire-rapids}
costs=$here/costs.tsv
out=${FASTREMAP_BUILD:-$top/build}/bench/model
mkdir -p "$out"
${CC:-cc} -O2 -std=c11 -Wall -Wextra -Werror -o "$out/hostbench" "$here/hostbench.c"

grep -q "^[a-z_]*	$cpu	" "$costs" || { echo "hostcheck: no CPU $cpu in $costs" >&2; exit 2; }
info() { sed -n "s/^$1[[:space:]]*: //p" /proc/cpuinfo | head -n 1; }
tap_diag "host: $(info 'model name'), family $(info 'cpu family') model $(info model) stepping $(info stepping); against $cpu"
res=$("$out/hostbench" "${HOSTBENCH_MIB:-1024}")
tap_diag "$res"

measured() { # measured CLASS FIELD: hostbench's figure (2: ns, 3: cycles)
	awk -v c="$1" -v f="$2" '$1 == c { print $f }' <<<"$res"
}

# check CLASS FIELD: the measured figure inside the class's range? Cycles
# are ns times the core clock hostbench measured, which two runs a minute
# apart put 4% apart: a figure in cycles may lie 5% outside the range.
check() {
	local v range lo hi unit tol
	v=$(measured "$1" "$2")
	range=$(awk -F'\t' -v c="$1" -v p="$cpu" '$1 == c && $2 == p { print $4, $5, $6 }' "$costs")
	read -r lo hi unit <<<"$range"
	tol=1
	[ "$unit" != cycles ] || tol=1.05
	tap_ok "$(awk -v v="$v" -v l="$lo" -v h="$hi" -v t="$tol" \
		'BEGIN { print (v != "" && v >= l / t && v <= h * t) ? 1 : 0 }')" \
		"$1: $v $unit measured, model $lo-$hi $unit ($cpu)" || true
}

check atomic 3
check store 3
check load 3
check load_dram 2
# The measurement can tell the classes apart: a locked exchange costs far
# more than a plain store here (it does not under QEMU TCG, where it is
# about a store: what made the model necessary).
tap_ok "$(awk -v a="$(measured atomic 3)" -v s="$(measured store 3)" 'BEGIN { print (a > 5 * s) ? 1 : 0 }')" \
	"the locked exchange costs more than 5 plain stores" || true

tap_done_run
