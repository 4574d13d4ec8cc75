#!/usr/bin/env bash
# The benchmark (`make bench`): fastremap against mremap(2) and UFFDIO_MOVE.
#
# Usage: bench/run.sh            boot each kernel under QEMU and run fr_bench
#        bench/run.sh --native   run fr_bench on this machine (/dev/fastremap needed)
#
# Kernels: Debian 12's by default; FASTREMAP_BENCH_SUITES="bookworm trixie sid"
# (or BENCH_FULL=1) for all three. BENCH_ARCH=arm64: Debian's arm64 kernels
# of the same suites under qemu-system-aarch64 (TCG, emulated like the
# x86-64 guests; `make check-arm64`'s kernels), fr_bench cross-built; with
# it FASTREMAP_BENCH_SUITES may name trixie-16k and sid-16k, Debian's
# arm64-16k kernels (16 KiB pages; 8 GiB guests, twice the time limit).
# BENCH_SWEEP=1 (or FASTREMAP_BENCH_SWEEP=1): the size sweep instead of the
# workloads (bench/README.md, "How cost grows with size"): per kernel
# <kernel>-sweep.csv, .md, .png, .log; FASTREMAP_BENCH_SWEEP_MAX_MB,
# _SWEEP_FULL_MB, _SWEEP_BUDGET_S, _SWEEP_LEVELS shape it.
# Sizes and repetitions: FASTREMAP_BENCH_REPS,
# _SIZE_MB, _LOOP_N, _GC_MOVES, _GC_ARENA_MB, _WORKLOADS (see bench/README.md);
# for the VM they are compiled into fr_bench, which gets no arguments there.
#
# Per kernel: build/bench/report/<kernel>.csv (fr_bench's CSV block), .md
# (the table), .png (the chart), .log (fr_bench's header), and a table on
# the terminal (FASTREMAP_BENCH_RESULTS=DIR: elsewhere); `make
# bench-promote` copies a run into the tracked bench/results/. The guest's
# full serial log stays in build/bench/results/. The run's checks print as
# TAP, and the last line is "N passed, N failed, N skipped". Exits non-zero
# if a kernel does not boot, fr_bench fails or does not finish, a cell
# reports an error, or the kernel log has a BUG/WARNING/Oops (the same
# patterns tests/harness/run.sh rejects).
set -uo pipefail
export FASTREMAP_ARCH=${BENCH_ARCH:-amd64}
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/../tests/harness/common.sh"

BENCH="$FR_TOP/bench"
RESULTS=${FASTREMAP_BENCH_RESULTS:-$FR_TOP/build/bench/report}
# The bench's own build tree, so a concurrent `make check` keeps its initramfs.
# arm64's has its suites' names too: a tree of its own.
if fr_is_arm64; then
	export FASTREMAP_BUILD=${FASTREMAP_BENCH_BUILD:-$FR_TOP/build/bench-arm64}
else
	export FASTREMAP_BUILD=${FASTREMAP_BENCH_BUILD:-$FR_TOP/build/bench}
fi
FR_BUILD=$FASTREMAP_BUILD
if fr_is_arm64; then
	BINDIR="$FR_BUILD/bin"
else
	BINDIR="$FR_TOP/build/bin"
fi
LOGDIR="$FR_BUILD/results"

native=0
case ${1:-} in
--native) native=1 ;;
"") ;;
-h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) fr_die "usage: $0 [--native]" ;;
esac
[ "$native" = 1 ] && fr_is_arm64 && [ "$(uname -m)" != aarch64 ] &&
	fr_die "BENCH_ARCH=arm64 --native runs on an arm64 machine"

# BENCH_COUNT=1: fr_bench marks each timed move and the guest runs under
# the counting plugin (bench/plugin/fr_count.c), with a deterministic clock.
COUNT=${BENCH_COUNT:-0}
[ "$COUNT" = 0 ] || [ "$COUNT" = 1 ] || fr_die "BENCH_COUNT=$COUNT: 0 or 1"
[ "$COUNT" = 1 ] && [ "$native" = 1 ] && fr_die "BENCH_COUNT=1 counts in the emulator: not with --native"
export FASTREMAP_BENCH_COUNT=$COUNT
# BENCH_COUNT_PROF=1 (with BENCH_COUNT=1): and which code each region ran,
# the plugin's profile named by bench/count-prof.sh (RESULTS/<suite>-prof.txt).
PROF=${BENCH_COUNT_PROF:-0}
[ "$PROF" = 0 ] || [ "$COUNT$PROF" = 11 ] || fr_die "BENCH_COUNT_PROF=$PROF: 0, or 1 with BENCH_COUNT=1"
[ "$PROF" = 1 ] && FASTREMAP_BENCH_COUNT=2
PLUGIN="$FR_BUILD/plugin/fr_count.so"
SWEEP=${BENCH_SWEEP:-${FASTREMAP_BENCH_SWEEP:-0}}
[ "$SWEEP" = 0 ] || [ "$SWEEP" = 1 ] || fr_die "BENCH_SWEEP=$SWEEP: 0 or 1"
# The sweep only when asked for: the default build stays as it was.
if [ "$SWEEP" = 1 ]; then export FASTREMAP_BENCH_SWEEP=1; else unset FASTREMAP_BENCH_SWEEP; fi
# FASTREMAP_BENCH_MODULE=test: the test build of the module, whose
# parameters workload 3e needs (copy_tables); the default is what users get.
MODULE_KIND=${FASTREMAP_BENCH_MODULE:-release}
[ "$MODULE_KIND" = release ] || [ "$MODULE_KIND" = test ] ||
	fr_die "FASTREMAP_BENCH_MODULE=$MODULE_KIND: release or test"

if [ "${BENCH_FULL:-0}" = 1 ]; then
	SUITES=${FASTREMAP_BENCH_SUITES:-bookworm trixie sid}
else
	SUITES=${FASTREMAP_BENCH_SUITES:-bookworm}
fi
for s in $SUITES; do
	if why=$(fr_no_lane "$s"); then
		fr_die "FASTREMAP_BENCH_SUITES: $why"
	fi
done
mkdir -p "$RESULTS" "$BINDIR" "$LOGDIR"

# fr_bench's configuration as -D flags: the guest passes it no arguments.
bench_defines() {
	local v d=()
	for v in REPS SIZE_MB LOOP_N GC_MOVES GC_ARENA_MB FRESH SETTLE TRACE TRACE_BUF_KB COUNT \
		SWEEP SWEEP_MAX_MB SWEEP_FULL_MB SWEEP_BUDGET_S; do
		local e="FASTREMAP_BENCH_$v"
		if [ -n "${!e:-}" ]; then
			[[ ${!e} =~ ^[0-9]+$ ]] || fr_die "$e=${!e}: not a number"
			d+=("-DFR_BENCH_$v=${!e}")
		fi
	done
	if [ -n "${FASTREMAP_BENCH_WORKLOADS:-}" ]; then
		[[ $FASTREMAP_BENCH_WORKLOADS =~ ^[0-9a-z,\ ]+$ ]] ||
			fr_die "FASTREMAP_BENCH_WORKLOADS: a list such as 1,2,3,6m"
		d+=("-DFR_BENCH_WORKLOADS='\"$FASTREMAP_BENCH_WORKLOADS\"'")
	fi
	if [ -n "${FASTREMAP_BENCH_SWEEP_LEVELS:-}" ]; then
		[[ $FASTREMAP_BENCH_SWEEP_LEVELS =~ ^[a-z,]+$ ]] ||
			fr_die "FASTREMAP_BENCH_SWEEP_LEVELS: a list such as pte,pmd,thp,pud"
		d+=("-DFR_BENCH_SWEEP_LEVELS='\"$FASTREMAP_BENCH_SWEEP_LEVELS\"'")
	fi
	[ ${#d[@]} -eq 0 ] || printf '%s\n' "${d[@]}"
}

build_bench() { # build_bench OUT EXTRA_FLAGS...
	local out=$1 defs
	shift
	mapfile -t defs < <(bench_defines)
	# The fastremap contender calls the library, as programs do.
	fr_build_fr_bench "$out" "$FR_BUILD/userspace" "$LOGDIR/libfastremap-build.log" "${defs[@]}" "$@"
}

# report CSV: the terminal table, RESULTS/<kernel>.md and .png.
# check_results PREFIX LOG: the CSV of a run's log, checked, then reported.
# check_results PREFIX LOG [PLUGIN_OUT]
check_results() {
	local csv
	csv=$(extract "$2")
	check "$1CSV extracted" "$([ -n "$csv" ] && echo 1)"
	if [ -n "$csv" ]; then
		check "$1every cell ran or was skipped for a reason" "$(cells_ok "$csv" && echo 1)"
		check "$1fastremap ran (no fastremap cell skipped)" "$(fastremap_ran "$csv" && echo 1)"
		[ "$COUNT" = 1 ] && add_counts "$1" "$2" "${3:-}" "$csv"
		report "$csv"
	fi
}

# chart GP NAME BASE KERNEL EXTRA: BASE.png drawn by gnuplot script GP from
# LOGDIR/NAME.dat (EXTRA: more "var='value'; " assignments for GP); without
# gnuplot, or when it fails, a warning and no chart.
chart() {
	local gp=$1 name=$2 base=$3 kernel=$4 extra=$5
	rm -f "$base.png"
	if ! command -v gnuplot >/dev/null; then
		fr_log "warning: gnuplot missing (scripts/deps.sh installs gnuplot-nox): no chart"
		return 0
	fi
	gnuplot -e "datafile='$LOGDIR/$name.dat'; ${extra}outfile='$base.png'; kernel='$kernel'; timing='$(sed -n 's/^# timing: //p' "$base.log" 2>/dev/null)'" \
		"$gp" 2>"$LOGDIR/$name.gnuplot.log" ||
		{ cat "$LOGDIR/$name.gnuplot.log" >&2; fr_log "warning: no chart"; }
}

# check_sweep PREFIX LOG [PLUGIN_OUT]: the sweep's CSV of a run's log
# (RESULTS/<kernel>-sweep.csv and .log), checked, then its table (.md,
# the terminal), chart (.png) and, counted, per-move counts
# (<kernel>-sweep-counts.csv) and their chart (<kernel>-sweep-counts.png).
check_sweep() {
	local log=$2 kernel base csv table
	kernel=$(sed -n 's/^# kernel: //p' "$log" | head -n 1)
	check "$1sweep CSV extracted" "$([ -n "$kernel" ] && grep -q '^FR-BENCH-SWEEP-END$' "$log" && echo 1)"
	[ -n "$kernel" ] || return 0
	base="$RESULTS/$kernel-sweep"
	csv="$base.csv"
	sed -n '/^FR-BENCH-SWEEP-BEGIN$/,/^FR-BENCH-SWEEP-END$/p' "$log" | sed '1d;$d' >"$csv"
	header "$log" >"$base.log"
	check "$1every sweep cell ran or was skipped for a reason" \
		"$([ "$(wc -l <"$csv")" -gt 1 ] && ! awk -F, 'NR > 1 && $NF !~ /^(ok|skip)/' "$csv" | grep -q . && echo 1)"
	check "$1fastremap ran in the sweep" \
		"$(awk -F, 'NR > 1 && $3 == "fastremap_direct" && $NF == "ok"' "$csv" | grep -q . && echo 1)"
	echo
	awk -F, -v fmt=text -f "$BENCH/sweep.awk" "$csv"
	awk -F, -v fmt=md -f "$BENCH/sweep.awk" "$csv" >"$base.md"
	if [ "$COUNT" = 1 ]; then
		table="$LOGDIR/$kernel-sweep-count-table.csv"
		sed -n '/^FR-BENCH-SWEEP-COUNT-BEGIN$/,/^FR-BENCH-SWEEP-COUNT-END$/p' "$log" |
			sed '1d;$d' >"$table"
		check "$1counting plugin wrote its counts" "$([ -s "${3:-}" ] && echo 1)"
		if [ -s "${3:-}" ]; then
			awk -f "$BENCH/sweep-counts.awk" "$3" "$table" >"$base-counts.csv"
			check "$1every timed sweep move counted" \
				"$([ "$(awk -F, 'NR > 1 && $7 == 0' "$table" | wc -l)" = \
				    "$(awk -F, 'NR > 1 && $6 == 0' "$base-counts.csv" | wc -l)" ] && echo 1)"
			awk -F, -v dat="$LOGDIR/$kernel-sweep-counts.dat" -v counts=1 \
				-f "$BENCH/sweep-plotdata.awk" "$base-counts.csv" \
				>"$LOGDIR/$kernel-sweep-counts.plt"
			chart "$BENCH/sweep.gp" "$kernel-sweep-counts" "$base-counts" "$kernel" \
				"counts=1; cmds='$LOGDIR/$kernel-sweep-counts.plt'; "
		fi
	fi
	awk -F, -v dat="$LOGDIR/$kernel-sweep.dat" -f "$BENCH/sweep-plotdata.awk" "$csv" \
		>"$LOGDIR/$kernel-sweep.plt"
	chart "$BENCH/sweep.gp" "$kernel-sweep" "$base" "$kernel" "cmds='$LOGDIR/$kernel-sweep.plt'; "
	echo "# results: $csv, $base.md, $base.png"
}

# add_counts PREFIX LOG PLUGIN_OUT CSV: the count columns, joined into CSV.
add_counts() {
	local table="$LOGDIR/count-table.csv" bad
	sed -n '/^FR-BENCH-COUNT-BEGIN$/,/^FR-BENCH-COUNT-END$/p' "$2" | sed '1d;$d' >"$table"
	check "$1counting plugin wrote its counts" "$([ -s "$3" ] && echo 1)"
	bad=$(sed -n 's/^# fr_count: .*errors=\([0-9]*\) open_at_exit=\([0-9]*\).*/\1\2/p' "$3" 2>/dev/null)
	check "$1every marked region closed once (fr_count errors=0)" "$([ "$bad" = 00 ] && echo 1)"
	check "$1fr_bench listed its marked regions" "$([ "$(wc -l <"$table")" -gt 1 ] && echo 1)"
	[ -s "$3" ] || return 0
	awk -f "$BENCH/counts.awk" "$3" "$table" "$4" >"$4.tmp" && mv "$4.tmp" "$4"
	check "$1every ok cell has counts" \
		"$(awk -F, 'NR > 1 && $10 == "ok" && $NF == 0' "$4" | grep -q . || echo 1)"
}

report() {
	local csv=$1 kernel base
	kernel=$(awk -F, 'NR == 2 { print $1 }' "$csv")
	base="$RESULTS/$kernel"
	echo
	awk -F, -v fmt=text -f "$BENCH/table.awk" "$csv"
	awk -F, -v fmt=md -f "$BENCH/table.awk" "$csv" >"$base.md"
	if [ "$COUNT" = 1 ]; then
		echo
		awk -F, -v fmt=text -f "$BENCH/counts-table.awk" "$csv"
		{ echo; awk -F, -v fmt=md -f "$BENCH/counts-table.awk" "$csv"; } >>"$base.md"
		# The hardware cost model on these counts, beside the emulated time.
		echo
		awk -F, -v fmt=text -f "$BENCH/model/model.awk" "$BENCH/model/costs.tsv" "$csv"
		{ echo; awk -F, -v fmt=md -f "$BENCH/model/model.awk" "$BENCH/model/costs.tsv" "$csv"; } >>"$base.md"
	fi
	awk -F, -f "$BENCH/plotdata.awk" "$csv" >"$LOGDIR/$kernel.dat"
	chart "$BENCH/plot.gp" "$kernel" "$base" "$kernel" ""
	echo "# results: $csv, $base.md, $base.png"
}

# check NAME OK?: a TAP result; a failure makes the run fail.
check() { tap_ok "$2" "$1"; }

# fr_bench's header lines in a guest's LOG: its own, not the guest's setup
# checks before it (whose insmod of the release build the bench ignores).
header() { # header LOG
	sed -n '/^FR-BEGIN fr_bench$/,/^FR-END fr_bench /p' "$1" | grep '^# ' | grep -v '^# \['
}

# Splits fr_bench's output (in LOG) into RESULTS/<kernel>.csv and .log.
extract() { # extract LOG -> prints the CSV path, or nothing
	local log=$1 kernel
	kernel=$(sed -n 's/^# kernel: //p' "$log" | head -n 1)
	[ -n "$kernel" ] || return 0
	sed -n '/^FR-BENCH-CSV-BEGIN$/,/^FR-BENCH-CSV-END$/p' "$log" | sed '1d;$d' \
		>"$RESULTS/$kernel.csv.tmp"
	# The header; every repetition's time stays in the full log.
	header "$log" >"$RESULTS/$kernel.log"
	if [ "$(wc -l <"$RESULTS/$kernel.csv.tmp")" -gt 1 ]; then
		mv "$RESULTS/$kernel.csv.tmp" "$RESULTS/$kernel.csv"
		echo "$RESULTS/$kernel.csv"
	else
		rm -f "$RESULTS/$kernel.csv.tmp"
	fi
}

# Shows fr_bench's "#" lines as they arrive in LOG until PID ends.
follow() { # follow LOG PID
	tail -n +1 -F --pid="$2" "$1" 2>/dev/null | grep --line-buffered '^# ' >&2
}

cells_ok() { # cells_ok CSV: no cell reports an error
	! awk -F, 'NR > 1 && $10 ~ /^error/' "$1" | grep -q .
}

# fastremap_ran CSV: the module was there (no fastremap cell skipped). A
# module without FASTREMAP_IOC_MOVE (kernels without folios: 5.10) skips
# the batched moves, as t_move expects there; any other skip fails.
fastremap_ran() {
	! awk -F, 'NR > 1 && $3 == "fastremap" && $10 ~ /^skip: (no \/dev\/fastremap|module)/ &&
		$10 !~ /^skip: module without FASTREMAP_IOC_MOVE/' "$1" | grep -q .
}

run_native() {
	[ -e /dev/fastremap ] ||
		fr_die "no /dev/fastremap: load the module first (make dkms-install, modprobe fastremap)"
	if ! [ -r /dev/fastremap ] || ! [ -w /dev/fastremap ]; then
		fr_die "/dev/fastremap is not readable and writable: run as root"
	fi
	local bin="$FR_TOP/build/bin/fr_bench-native" log="$LOGDIR/native.log" csv n0 bad pid fpid
	# Natively the defaults are the issue's full sizes.
	: "${FASTREMAP_BENCH_LOOP_N:=10000}" "${FASTREMAP_BENCH_GC_MOVES:=10000}"
	export FASTREMAP_BENCH_LOOP_N FASTREMAP_BENCH_GC_MOVES
	build_bench "$bin"
	n0=$(dmesg 2>/dev/null | wc -l)
	fr_log "native: running fr_bench on $(uname -r)"
	FASTREMAP_BENCH_TRACE_PIDS=1 "$bin" >"$log" 2>&1 &
	pid=$!
	follow "$log" "$pid" &
	fpid=$!
	wait "$pid"
	local rc=$?
	wait "$fpid"
	check "fr_bench finished and exited 0 (rc $rc)" "$([ "$rc" = 0 ] && echo 1)"
	if [ "$SWEEP" = 1 ]; then
		check_sweep "" "$log"
	else
		check_results "" "$log"
	fi
	dmesg 2>/dev/null | tail -n +$((n0 + 1)) >"$LOGDIR/native-dmesg.log"
	bad=$(grep -E "$FR_BAD_LOG" "$LOGDIR/native-dmesg.log")
	[ -n "$bad" ] && printf '# %s\n' "$bad" | head -n 40
	check "kernel log clean during the run" "$([ -z "$bad" ] && echo 1)"
}

run_vm() {
	local suite=$1 log csv bad rc start pid fpid
	log="$LOGDIR/$suite-vm.log"
	fr_log "$suite: building the module"
	if ! "$FR_TOP/scripts/build-module.sh" "$suite" "$MODULE_KIND"; then
		check "$suite: module builds" 0
		return
	fi
	# No hot loop of the mover straddles a page of module text (module/hot.h).
	"$FR_HARNESS/check-placement.sh" "$FR_BUILD/$suite/fastremap.ko" \
		>"$LOGDIR/$suite-placement.tap"
	check "$suite: the mover's hot functions each inside one page (check-placement.sh)" \
		"$([ $? = 0 ] && echo 1)"
	sed 's/^/# /' "$LOGDIR/$suite-placement.tap" | grep -v '^# ok' >&2
	start=$(date +%s)
	rm -f "$log"
	fr_log "$suite: booting $(cat "$FR_BUILD/$suite/kver") under QEMU (TCG)"
	# Line-buffered so that the progress reaches the log (and the terminal) as it comes.
	# The flush-counting event on from boot, never toggled (see tests/harness/run.sh:
	# text patching at run time can Oops 7.2 under TCG). fr_bench keeps it
	# enabled through the whole run either way, timed repetitions included.
	# arm64 counts with kprobe events that fr_bench adds (no such event).
	local append="trace_event=tlb:tlb_flush trace_options=norecord-cmd" qargs="" counts=""
	fr_is_arm64 && append=
	if [ "$COUNT" = 1 ]; then
		# One thread runs both vCPUs in turn: the plugin's inline
		# counters are exact only so. (-icount, which would also make the
		# guest's clock follow the instructions, kept a loaded host's
		# guest in SeaBIOS for minutes.)
		counts="$LOGDIR/$suite-counts.txt"
		rm -f "$counts"
		qargs="-accel tcg,thread=single -plugin $PLUGIN,out=$counts"
		[ "$PROF" = 1 ] && qargs="$qargs,prof=$LOGDIR/$suite-prof.raw"
	fi
	# 16 KiB pages: vm-run.sh gives the guest 8 GiB, and the time limit
	# doubles as the test harness's does for these kernels.
	local limit=1500
	fr_is_16k "$suite" && limit=3000
	# The sweep's own budget (FASTREMAP_BENCH_SWEEP_BUDGET_S) cuts its
	# largest sizes at 22 minutes; the largest cells and boot come on top.
	[ "$SWEEP" = 1 ] && limit=$((limit + 900))
	FASTREMAP_VM_APPEND=$append FASTREMAP_VM_QEMU_ARGS=$qargs \
	FASTREMAP_VM_TIMEOUT=${FASTREMAP_BENCH_VM_TIMEOUT:-$limit} \
		stdbuf -oL "$FR_HARNESS/vm-run.sh" "$suite" "$BINDIR" "$log" fr_bench &
	pid=$!
	follow "$log" "$pid" &
	fpid=$!
	wait "$pid"
	wait "$fpid"
	fr_log "$suite: VM finished in $(($(date +%s) - start)) s"

	check "$suite: kernel booted" "$(grep -q 'FR-KERNEL ' "$log" && echo 1)"
	# The release build has no extra_symbol parameter, so the guest's first
	# setup check (an insmod that must fail on a missing symbol) loads it:
	# what counts is that fr_bench found the module.
	check "$suite: module loaded (fr_bench found /dev/fastremap)" \
		"$(grep -q '^# fastremap: ABI' "$log" && echo 1)"
	rc=$(sed -n 's/^FR-END fr_bench \([0-9]*\)$/\1/p' "$log")
	check "$suite: fr_bench finished and exited 0 (${rc:-did not finish})" "$([ "$rc" = 0 ] && echo 1)"
	sed -n '/^FR-DMESG-BEGIN$/,/^FR-DMESG-END$/p' "$log" >"$LOGDIR/$suite-dmesg.log"
	bad=$(grep -E "$FR_BAD_LOG" "$LOGDIR/$suite-dmesg.log")
	[ -n "$bad" ] && printf '# %s\n' "$bad" | head -n 40
	check "$suite: guest kernel log captured and clean" \
		"$([ -s "$LOGDIR/$suite-dmesg.log" ] && [ -z "$bad" ] && echo 1)"
	check "$suite: VM ran to the end" "$(grep -q '^FR-DONE$' "$log" && echo 1)"
	if [ "$PROF" = 1 ]; then
		"$BENCH/count-prof.sh" "$LOGDIR/$suite-prof.raw" "$log" >"$RESULTS/$suite-prof.txt"
		check "$suite: profile named (RESULTS/$suite-prof.txt)" "$([ -s "$RESULTS/$suite-prof.txt" ] && echo 1)"
	fi
	if [ "$SWEEP" = 1 ]; then
		check_sweep "$suite: " "$log" "$counts"
	else
		check_results "$suite: " "$log" "$counts"
	fi
}

t0=$(date +%s)
if [ "$native" = 1 ]; then
	run_native
else
	[ "$(id -u)" = 0 ] || fr_die "run as root (chroots, module builds)"
	FASTREMAP_SUITES="$SUITES" "$FR_TOP/scripts/prepare-kernels.sh" || fr_die "kernels not ready"
	if [ "$COUNT" = 1 ]; then
		fr_log "building the counting plugin"
		make -C "$BENCH/plugin" --no-print-directory OUT="$FR_BUILD/plugin" ||
			fr_die "the counting plugin does not build"
	fi
	fr_log "building fr_bench (static, for the guest)"
	build_bench "$BINDIR/fr_bench" -DFR_BENCH_EMULATED=1
	for s in $SUITES; do
		echo "# ===== $s"
		run_vm "$s"
	done
fi
fr_log "bench finished in $(($(date +%s) - t0)) s"
tap_done_run
