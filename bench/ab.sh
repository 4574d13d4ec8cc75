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
export FASTREMAP_ARCH=${BENCH_ARCH:-amd64}
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/../tests/harness/common.sh"

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
fr_build_fr_bench "$top/bin/fr_bench" "$top/userspace" "$top/lib.log"

append="trace_event=tlb:tlb_flush trace_options=norecord-cmd"
fr_is_arm64 && append=
log=$top/$suite.log
FASTREMAP_BUILD=$top/m0 FASTREMAP_VM_KMODS='' FASTREMAP_VM_INIT="$FR_TOP/bench/ab-init" \
	FASTREMAP_VM_EXTRA="$stage" FASTREMAP_VM_APPEND=$append \
	FASTREMAP_VM_TIMEOUT=${FASTREMAP_BENCH_VM_TIMEOUT:-3000} \
	"$FR_HARNESS/vm-run.sh" "$suite" "$top/bin" "$log" fr_bench || true
grep -E '^(AB |# clocksource)' "$log"
bad=$(sed -n '/^FR-DMESG-BEGIN$/,/^FR-DMESG-END$/p' "$log" | grep -E "$FR_BAD_LOG")
[ -n "$bad" ] && printf '# %s\n' "$bad" | head -n 20
grep -q '^FR-END ab 0$' "$log" && [ -z "$bad" ]
