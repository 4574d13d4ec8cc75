#!/usr/bin/env bash
# Compares module builds in one boot: each TREE's module/ is built for
# SUITE's kernel, and the builds take turns in one guest (bench/ab-init),
# running this tree's fr_bench on each workload, ROUNDS times. Two boots
# differ by more than most changes do under emulation; turns in one boot
# do not. Prints, per round, build and workload, the fr_bench CSV rows
# (cell: median, min, max per move; pair_ratio against fastremap) and,
# for test builds, the move_prof counters (ns summed; module/testhooks.c).
#
# Usage: bench/ab.sh SUITE ROUNDS TREE...   (TREE: a checkout, e.g. a git
#        worktree of another commit; m0 is the first TREE)
# AB_KIND=test|release (default release), AB_WORKLOADS (default
# 7b1,7b1024), AB_REPS (fr_bench's repetitions, default 3),
# AB_TRACE=0: no flush counting (on arm64 a kprobe on the module's flush,
# hit by fastremap's calls only), BENCH_ARCH=arm64 for the arm64 guests.
# Emulated timings.
set -uo pipefail
case ${BENCH_ARCH:-amd64} in
amd64 | x86_64 | x86-64) ;;
arm64 | aarch64) export FASTREMAP_ARCH=arm64 ;;
*) printf 'BENCH_ARCH must be amd64 or arm64, not %s\n' "$BENCH_ARCH" >&2; exit 1 ;;
esac
. "$(dirname "$0")/../scripts/common.sh"

[ $# -ge 3 ] || fr_die "usage: $0 SUITE ROUNDS TREE..."
suite=$1 rounds=$2
shift 2
[[ $rounds =~ ^[1-9][0-9]?$ ]] || fr_die "ROUNDS: 1-99"
kind=${AB_KIND:-release}
workloads=${AB_WORKLOADS:-7b1,7b1024}
[[ $workloads =~ ^[0-9a-z,]+$ ]] || fr_die "AB_WORKLOADS: a list such as 7b1,7b1024"
reps=${AB_REPS:-3}
[[ $reps =~ ^[1-9][0-9]?$ ]] || fr_die "AB_REPS: 1-99"
top=$FR_BUILD/ab-$FR_ARCH
stage=$top/stage
rm -rf "$stage"
mkdir -p "$stage/ab" "$top/bin"

i=0
for tree in "$@"; do
	[ -x "$tree/scripts/build-module.sh" ] || fr_die "$tree: no scripts/build-module.sh"
	FASTREMAP_BUILD=$top/m$i "$tree/scripts/build-module.sh" "$suite" "$kind" >/dev/null ||
		fr_die "$tree: the module does not build"
	cp "$top/m$i/$suite/fastremap.ko" "$stage/ab/m$i.ko"
	echo "# m$i: $tree ($(git -C "$tree" describe --always --dirty 2>/dev/null || echo '?'), $kind)"
	i=$((i + 1))
done
echo "$workloads" >"$stage/ab/workloads"
echo "$reps" >"$stage/ab/reps"
echo "$rounds" >"$stage/ab/rounds"
[[ ${AB_TRACE:-1} =~ ^[01]$ ]] || fr_die "AB_TRACE: 0 or 1"
echo "${AB_TRACE:-1}" >"$stage/ab/trace"

# fr_bench with the library, as bench/run.sh builds it (its defaults: the
# guest's environment picks the workloads and repetitions).
in=()
fr_is_arm64 && in=(fr_in_root "$FR_ARM64_PROGRAMS_ROOT")
# shellcheck disable=SC2046
"${in[@]}" make -C "$FR_TOP/userspace" --no-print-directory BUILD="$top/userspace" \
	$(fr_cc_args) WERROR=1 "$top/userspace/libfastremap.a" >"$top/lib.log" 2>&1 ||
	{ tail -n 20 "$top/lib.log"; fr_die "libfastremap does not build"; }
# shellcheck disable=SC2046
"${in[@]}" make -C "$FR_TOP" --no-print-directory BUILD="$top" $(fr_cc_args) WERROR=1 \
	BENCH_BIN="$top/bin/fr_bench" bench-bin || fr_die "fr_bench does not build"

append="trace_event=tlb:tlb_flush trace_options=norecord-cmd"
fr_is_arm64 && append=
log=$top/$suite.log
FASTREMAP_BUILD=$top/m0 FASTREMAP_VM_KMODS='' FASTREMAP_VM_INIT="$FR_TOP/bench/ab-init" \
	FASTREMAP_VM_EXTRA="$stage" FASTREMAP_VM_APPEND=$append \
	FASTREMAP_VM_TIMEOUT=${FASTREMAP_BENCH_VM_TIMEOUT:-3000} \
	"$FR_TOP/scripts/vm-run.sh" "$suite" "$top/bin" "$log" fr_bench || true
grep -E '^(AB |# clocksource)' "$log"
bad=$(sed -n '/^FR-DMESG-BEGIN$/,/^FR-DMESG-END$/p' "$log" | grep -E "$FR_BAD_LOG")
[ -n "$bad" ] && printf '# %s\n' "$bad" | head -n 20
grep -q '^FR-END ab 0$' "$log" && [ -z "$bad" ]
