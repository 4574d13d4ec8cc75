#!/usr/bin/env bash
# Where a PTE-level move's time goes, in the module and in mremap(2), on
# one kernel under QEMU: bench/fr_prof makes workload 3's move (1 GiB of
# pages, destination misaligned by one page) by each in turn, and the
# guest's function_graph tracer times the ioctl, its two walks (the first
# allocates the destination's page tables, the second moves the entries)
# and its one flush; mremap(2)'s syscall and its mover move_page_tables()
# (which allocates, moves and flushes once per 2 MiB extent); and what
# both share: copy_vma(), the unmap of the old range, the page-table
# allocations. Prints the medians and the sums per move.
# Usage: bench/profile.sh [SUITE]   (default sid; BENCH_ARCH=amd64 for
# x86-64, arm64 by default; FASTREMAP_PROF_REPS moves each, default 5;
# FASTREMAP_PROF_LEVEL=pud for a move of one PUD entry instead (1 GiB;
# 64 GiB with 16 KiB pages, refused where it does not fit in memory);
# FASTREMAP_PROF_FUNCTIONS="f g": more functions to time)
set -uo pipefail
export FASTREMAP_ARCH=${BENCH_ARCH:-arm64}
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/../tests/harness/common.sh"
FR_BUILD=${FASTREMAP_PROF_BUILD:-$FR_TOP/build/prof-$FR_ARCH}
export FASTREMAP_BUILD=$FR_BUILD

suite=${1:-sid}
reps=${FASTREMAP_PROF_REPS:-5}
[[ $reps =~ ^[1-9][0-9]?$ ]] || fr_die "FASTREMAP_PROF_REPS: 1-64"
bin="$FR_BUILD/bin"
mkdir -p "$bin" "$FR_BUILD/results"
"$FR_TOP/scripts/build-module.sh" "$suite" release || exit 1
# The test library's geometry (tests/lib/geom.c): the kernel's page, PMD and PUD.
fr_cross "$(fr_target_cc)" -std=gnu11 -Wall -Wextra -Werror -O2 -static -I"$FR_TOP/uapi" \
	-I"$FR_TOP/tests/lib" -o "$bin/fr_prof" "$FR_TOP/bench/fr_prof.c" "$FR_TOP/tests/lib/geom.c" ||
	fr_die "fr_prof does not build"
extra="$FR_BUILD/extra"
rm -rf "$extra"
mkdir -p "$extra/tests"
echo "$reps" >"$extra/tests/reps"
# FASTREMAP_PROF_LEVEL=pud: workload 1's move (one PUD entry) instead of
# workload 3's; FASTREMAP_PROF_FUNCTIONS: more kernel functions to time.
case ${FASTREMAP_PROF_LEVEL:-pte} in
pte) ;;
pud) echo pud >"$extra/tests/level" ;;
*) fr_die "FASTREMAP_PROF_LEVEL must be pte or pud" ;;
esac
[[ ${FASTREMAP_PROF_FUNCTIONS:-} =~ ^[a-z0-9_\ ]*$ ]] || fr_die "FASTREMAP_PROF_FUNCTIONS: function names"
echo "${FASTREMAP_PROF_FUNCTIONS:-}" >"$extra/tests/functions"
log="$FR_BUILD/results/$suite-prof.log"
fr_log "$suite: profiling $reps moves of each (load $(cut -d' ' -f1-3 /proc/loadavg))"
FASTREMAP_VM_INIT="$FR_TOP/bench/prof-init" FASTREMAP_VM_KMODS='' FASTREMAP_VM_APPEND='' \
	FASTREMAP_VM_EXTRA="$extra" FASTREMAP_VM_TIMEOUT=${FASTREMAP_VM_TIMEOUT:-1800} \
	"$FR_HARNESS/vm-run.sh" "$suite" "$bin" "$log" fr_prof
grep -E '^(FR-KERNEL|FR-PROF-TRACED|# FR-PROF-MEDIAN|Bail out|FR-END)' "$log"
# Per contender and function: the median over the moves of its time per
# move (and the calls per move), and per page moved (the kernel's pages).
awk 'BEGIN { pages = 262144 }
$1 == "#" && $2 == "FR-PROF-PAGES" { pages = $3 }
$1 == "FR-PROF-REP" { k = $2 " " $4; v[k] = v[k] " " $5; c[k] = $6 }
END {
	for (k in v) {
		n = split(substr(v[k], 2), x, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
		m = x[int((n + 1) / 2)]
		printf "%-10s %-20s median %10.1f us per move [%.1f-%.1f], %4d calls, %6.1f ns per page\n",
			substr(k, 1, index(k, " ") - 1), substr(k, index(k, " ") + 1), m, x[1], x[n], c[k], m * 1000 / pages
	}
}' "$log" | sort
rc=$(sed -n 's/^FR-END fr_prof \([0-9]*\)$/\1/p' "$log")
bad=$(sed -n '/^FR-DMESG-BEGIN$/,/^FR-DMESG-END$/p' "$log" | grep -E "$FR_BAD_LOG")
[ -n "$bad" ] && printf '# %s\n' "$bad" | head -n 20
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg); log: $log"
[ "$rc" = 0 ] && [ -z "$bad" ]
