#!/usr/bin/env bash
# The bench's counts are reproducible: two `BENCH_COUNT=1` runs of the bench
# (two boots of the same kernel, one after the other, on a host as busy as
# it is) must agree to 0.5% in every count column of every cell
# (bench/counts-compare.awk). The comparison's positive control: the first
# run against itself with one count 1% off must be seen to differ.
# Defaults keep it short: workloads 2 and 3 (PMD and PTE level), 3
# repetitions, one kernel (FASTREMAP_BENCH_SUITES, default bookworm;
# BENCH_ARCH=arm64 for arm64). About 6 minutes per boot on a loaded 2-core
# host. FASTREMAP_BENCH_* override as for the bench.
# TAP; the last line "N passed, N failed, N skipped". Run as root.
# Usage: tests/harness/count-repro.sh
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

out="$FR_TOP/build/count-repro"
tol=${FASTREMAP_COUNT_TOLERANCE:-0.005}
rm -rf "$out"
mkdir -p "$out"
export BENCH_COUNT=1
export FASTREMAP_BENCH_WORKLOADS=${FASTREMAP_BENCH_WORKLOADS:-2,3}
export FASTREMAP_BENCH_REPS=${FASTREMAP_BENCH_REPS:-3}
export FASTREMAP_BENCH_SUITES=${FASTREMAP_BENCH_SUITES:-bookworm}

for run in 1 2; do
	tap_status "$(FASTREMAP_BENCH_RESULTS="$out/run$run" "$FR_TOP/bench/run.sh" \
		>"$out/run$run.log" 2>&1; echo $?)" \
		"counted bench run $run ($FASTREMAP_BENCH_SUITES, workloads $FASTREMAP_BENCH_WORKLOADS)" \
		"$(grep -E '^not ok|^# ' "$out/run$run.log" | tail -n 20)" || true
done

for a in "$out"/run1/*.csv; do
	[ -e "$a" ] || { tap_ok 0 "run 1 wrote a CSV"; break; }
	k=$(basename "$a")
	b="$out/run2/$k"
	if [ ! -e "$b" ]; then
		tap_ok 0 "${k%.csv}: run 2 wrote a CSV" || true
		continue
	fi
	awk -F, -v tol="$tol" -f "$FR_TOP/bench/counts-compare.awk" "$a" "$b" >"$out/${k%.csv}.cmp"
	sum=$(tail -n 1 "$out/${k%.csv}.cmp")
	tap_ok "$(echo "$sum" | awk '$2 > 0 && $4 > 0 && $6 == 0 { print 1 }')" \
		"${k%.csv}: two runs' counts agree to $tol ($sum)" \
		"$(grep -v '^ok ' "$out/${k%.csv}.cmp" | head -n 20)" || true
	# Positive control: run 1 against itself with one cell's kernel
	# instructions 1% higher.
	awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "insns_kernel") c = i }
		NR > 1 && !done && $c != "" { $c = $c * 1.01; done = 1 } { print }' "$a" >"$out/perturbed.csv"
	sum=$(awk -F, -v tol="$tol" -f "$FR_TOP/bench/counts-compare.awk" "$a" "$out/perturbed.csv" |
		tail -n 1)
	tap_ok "$(echo "$sum" | awk '$6 == 1 { print 1 }')" \
		"${k%.csv}: positive control: a count 1% off differs ($sum)" || true
	# The counts themselves, for the log.
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; next }
		{ s = ""; for (i = 12; i <= NF; i++) s = s " " h[i] "=" $i; print "# " $2 " " $3 ":" s }' \
		"$a"
done
tap_done_run
