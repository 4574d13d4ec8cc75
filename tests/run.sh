#!/usr/bin/env bash
# The test suite: host tests, then for each kernel (Debian 12, 13,
# unstable) a DKMS build and a QEMU boot running every in-VM test program.
# Prints TAP per program, a summary per kernel, and last the line
# "N passed, N failed, N skipped" over everything. Exits non-zero on any
# failure. Run as root (chroots, mounts, dkms). See README.md.
set -uo pipefail
. "$(dirname "$0")/../scripts/common.sh"

# The in-VM test programs, in order (t_unload last), from tests/vm-tests.
VM_TESTS=${FASTREMAP_VM_TESTS:-$(grep -v '^#' "$FR_TOP/tests/vm-tests")}
# Host tests: programs in build/bin, or scripts in scripts/ or userspace/tests/
# ("none" for none).
HOST_TESTS=${FASTREMAP_HOST_TESTS:-"t_ibt_unit t_lib checkpatch-test.sh install-test.sh"}
[ "$HOST_TESTS" = none ] && HOST_TESTS=

results="$FR_BUILD/results"
mkdir -p "$results"

# The tlb:tlb_flush event (t_remap_tlb counts flushes with it) is enabled
# at boot, before the second CPU runs, and never toggled after: on 7.2
# under QEMU TCG, turning any tracepoint on or off at run time (text
# patching through int3) can end in "Oops: int3", with or without this
# module loaded. record-cmd stays off, or enabling an event would hook
# sched_switch as well.
export FASTREMAP_VM_APPEND="trace_event=tlb:tlb_flush trace_options=norecord-cmd"

# The long mode (make check-long): the reliability programs with larger
# counts and fresh random seeds (each printed, to replay what it finds).
if [ -n "${FASTREMAP_LONG:-}" ]; then
	export FASTREMAP_VM_ARGS="$results/long-args"
	cat >"$FASTREMAP_VM_ARGS" <<-EOF
		t_remap_diff random --ops ${FASTREMAP_LONG_DIFF_OPS:-100000}
		t_stress --rounds ${FASTREMAP_LONG_STRESS_ROUNDS:-20} random
		t_ioctl_fuzz $(od -An -N4 -tu4 /dev/urandom | tr -d ' ') ${FASTREMAP_LONG_FUZZ_CALLS:-200000}
		t_remap_threads $(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
	EOF
	export FASTREMAP_VM_TIMEOUT=${FASTREMAP_VM_TIMEOUT:-10800}
fi
tot_pass=0 tot_fail=0 tot_skip=0

# count_tap FILE: adds the file's TAP results to the totals of this suite.
count_tap() {
	local p f s
	p=$(grep -cE '^ok [0-9]+' "$1" | tr -d ' ')
	s=$(grep -cE '^ok [0-9]+ .*# SKIP' "$1" | tr -d ' ')
	f=$(grep -cE '^not ok [0-9]+' "$1" | tr -d ' ')
	s_pass=$((s_pass + p - s)) s_fail=$((s_fail + f)) s_skip=$((s_skip + s))
}

# One harness check, counted like a test case.
hcheck() { # hcheck OK? DESCRIPTION
	h_n=$((h_n + 1))
	if [ "$1" = 1 ]; then
		echo "ok $h_n - $2"
		s_pass=$((s_pass + 1))
	else
		echo "not ok $h_n - $2"
		s_fail=$((s_fail + 1))
	fi
}

# The sum of one FR-STATS counter over the programs of the suite's VM log.
stats() { sed -n "s/^# FR-STATS .*$1=\([0-9]*\).*/\1/p" "$log" | awk '{ s += $1 } END { print s + 0 }'; }

finish_suite() { # finish_suite NAME
	echo "# $1: $s_pass passed, $s_fail failed, $s_skip skipped"
	summary+=("$1: $s_pass passed, $s_fail failed, $s_skip skipped")
	tot_pass=$((tot_pass + s_pass)) tot_fail=$((tot_fail + s_fail))
	tot_skip=$((tot_skip + s_skip))
}

summary=()
reports=()
fr_log "building userspace and test programs"
if ! make -C "$FR_TOP" --no-print-directory tests >"$results/build-tests.log" 2>&1; then
	tail -n 30 "$results/build-tests.log"
	echo "0 passed, 1 failed"
	exit 1
fi
bindir="$FR_BUILD/bin"

# Host tests: no kernel module involved.
s_pass=0 s_fail=0 s_skip=0
for t in $HOST_TESTS; do
	echo "# host/$t"
	case $t in
	install-test.sh) "$FR_TOP/userspace/tests/$t" ;;
	*.sh) "$FR_TOP/scripts/$t" ;;
	*) "$bindir/$t" ;;
	esac | tee "$results/host-$t.tap"
	count_tap "$results/host-$t.tap"
done
finish_suite host

for suite in $FR_SUITES; do
	s_pass=0 s_fail=0 s_skip=0 h_n=0
	root=$(fr_root "$suite")
	kver=$(fr_kver "$root")
	echo "# ===== $suite ($kver)"
	fr_log "$suite: building the module"
	if ! "$FR_TOP/scripts/build-module.sh" "$suite"; then
		hcheck 0 "$suite: module builds without warnings"
		finish_suite "$suite"
		continue
	fi
	hcheck 1 "$suite: module builds without warnings"

	# The debug lane's kernel is bookworm's source: DKMS is tested there.
	if [ "$suite" != "$FR_DEBUG_SUITE" ]; then
		fr_log "$suite: dkms add/build"
		echo "# $suite/dkms"
		"$FR_TOP/scripts/dkms-test.sh" "$suite" >"$results/$suite-dkms.tap"
		cat "$results/$suite-dkms.tap"
		count_tap "$results/$suite-dkms.tap"
	fi

	fr_log "$suite: booting $kver under QEMU"
	log="$results/$suite-vm.log"
	start=$(date +%s)
	# shellcheck disable=SC2086
	"$FR_TOP/scripts/vm-run.sh" "$suite" "$bindir" "$log" $VM_TESTS
	fr_log "$suite: VM finished in $(($(date +%s) - start)) s"

	hcheck "$(grep -q 'FR-KERNEL ' "$log" && echo 1)" "$suite: kernel booted"
	if [ "$suite" = "$FR_DEBUG_SUITE" ]; then
		# The lane proves something only while its checkers are live.
		for c in kasan lockdep lockdep-at-end; do
			hcheck "$(grep -qx "FR-CHECKER $c" "$log" && echo 1)" "$suite: checker $c live"
		done
	fi
	for t in setup $VM_TESTS; do
		sed -n "/^FR-BEGIN $t\$/,/^FR-END $t /p" "$log" | sed '1d' >"$results/$suite-$t.tap"
		echo "# $suite/$t"
		grep -v '^FR-END' "$results/$suite-$t.tap"
		count_tap "$results/$suite-$t.tap"
		rc=$(sed -n "s/^FR-END $t \([0-9]*\)$/\1/p" "$results/$suite-$t.tap")
		hcheck "$([ "$rc" = 0 ] && echo 1)" "$suite: $t finished and exited 0 (${rc:-did not finish})"
	done
	sed -n '/^FR-DMESG-BEGIN$/,/^FR-DMESG-END$/p' "$log" >"$results/$suite-dmesg.log"
	bad=$(grep -E "$FR_BAD_LOG" "$results/$suite-dmesg.log")
	[ -n "$bad" ] && printf '# %s\n' "$bad" | head -n 40
	# The reliability report: what the programs executed, what they found.
	report="$suite reliability: $(stats diff_ops) differential ops, $(stats divergences) divergences;"
	report+=" $(stats stress_scenarios) stress scenarios, $(stats stress_failed) failed;"
	report+=" $(stats hostile_calls) hostile ioctls; $(stats injected_failures) injected allocation failures;"
	report+=" kernel-log findings $(printf '%s' "$bad" | grep -c .)"
	# Debian's kernels have no fault injection: say so where it skipped.
	if grep -q '# SKIP' "$results/$suite-t_remap_failnth.tap" 2>/dev/null; then
		report+="; t_remap_failnth skipped (no fault injection in this kernel)"
	fi
	echo "# $report"
	reports+=("$report")
	hcheck "$([ -s "$results/$suite-dmesg.log" ] && [ -z "$bad" ] && echo 1)" \
		"$suite: guest kernel log captured and clean"
	hcheck "$(grep -q '^FR-DONE$' "$log" && echo 1)" "$suite: VM ran to the end and powered off"

	fr_log "$suite: mremap selftests plain and under the LD_PRELOAD shim"
	echo "# $suite/selftests"
	"$FR_TOP/scripts/selftests-vm.sh" "$suite" "$results/$suite-selftests-vm.log" \
		>"$results/$suite-selftests.tap"
	rc=$?
	cat "$results/$suite-selftests.tap"
	count_tap "$results/$suite-selftests.tap"
	hcheck "$([ "$rc" = 0 ] && echo 1)" "$suite: mremap selftests VM ran to the end with a clean kernel log (exit $rc)"
	finish_suite "$suite"
done

echo "# ===== summary"
for l in "${reports[@]}"; do echo "# $l"; done
for l in "${summary[@]}"; do echo "# $l"; done
echo "$tot_pass passed, $tot_fail failed, $tot_skip skipped"
[ "$tot_fail" = 0 ]
