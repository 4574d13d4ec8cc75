#!/usr/bin/env bash
# make check-mutants: builds the module once per planted bug (tests/mutants,
# module/mutant.h) for each kernel, boots it with the in-VM suite, and
# requires the suite to fail. Prints a table mutant -> the program and
# case that caught it, per kernel, and exits non-zero if any mutant
# survived or could not be judged.
#
# Cheap kills: each mutant's likeliest killers run first and the guest
# stops at the first program that fails; a surviving mutant has run the
# whole in-VM suite. A kill is a failing case or an exit status of a
# program that passed against the unplanted module in the same run, or a
# kernel-log finding (BUG:, Oops, a panic...) after the module loaded. A
# guest that died before the module loaded, or hung without a finding,
# judges nothing: the mutant counts as an error. A mutant whose module is
# the same machine code as the unplanted one cannot be killed and is not
# booted ("identical code"); tests/mutants may declare others equivalent,
# with the reason, which then may survive.
#
# Usage: check-mutants.sh [MUTANT...]   (FASTREMAP_SUITES as for run.sh)
set -uo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

list="$FR_TOP/tests/mutants"
all_tests=$(fr_programs vm)
mutants=${*:-$(grep -vE '^(#|equivalent )' "$list" | awk 'NF { print $1 }')}
top="$FR_BUILD/mutants"
results="$top/results"
rm -rf "$results"
mkdir -p "$results" "$top/extra/tests"
: >"$top/extra/tests/stop-on-fail"
# As tests/harness/run.sh boots (t_remap_tlb reads this event), and an Oops or a
# WARNING panics the guest, which ends QEMU at once (panic=-1): a mutant that
# oopses a test program would otherwise leave the guest waiting on it.
export FASTREMAP_VM_APPEND="trace_event=tlb:tlb_flush trace_options=norecord-cmd oops=panic panic_on_warn=1"
export FASTREMAP_VM_TIMEOUT=${FASTREMAP_VM_TIMEOUT:-900}

fr_log "building the test programs"
make -C "$FR_TOP" --no-print-directory BUILD="$FR_BUILD" tests >"$results/build-tests.log" 2>&1 ||
	fr_die "test programs do not build ($results/build-tests.log)"
bindir="$FR_BUILD/bin"

killers() { awk -v m="$1" '$1 == m { print $2 }' "$list" | tr ',' ' '; }
describe() { awk -v m="$1" '$1 == m { $1 = $2 = ""; sub(/^ +/, ""); print }' "$list"; }
declared() { awk -v m="$1" '$1 == "equivalent" && $2 == m { $1 = $2 = ""; sub(/^ +/, ""); print }' "$list"; }

# The module's machine code and data, without paths or build ids.
code_sum() {
	{
		objdump -dr "$1" | tail -n +4
		objdump -s -j .rodata -j .rodata.str1.1 -j .rodata.str1.8 -j .data "$1" 2>/dev/null | tail -n +4
	} | md5sum | cut -c1-32
}

# build NAME SUITE: the module with bug NAME ("" for none) in $top/NAME.
build() {
	FASTREMAP_BUILD="$top/${1:-base}" FASTREMAP_MUTANT=$1 \
		"$FR_TOP/scripts/build-module.sh" "$2" >"$results/${1:-base}-$2-build.log" 2>&1
}

# boot NAME SUITE STOP TEST...: runs the programs in a VM; log in results.
boot() {
	local name=$1 suite=$2 stop=$3
	shift 3
	FASTREMAP_BUILD="$top/$name" FASTREMAP_VM_EXTRA=${stop:+$top/extra} \
		"$FR_HARNESS/vm-run.sh" "$suite" "$bindir" "$results/$name-$suite.log" "$@" \
		>>"$results/$name-$suite-build.log" 2>&1
}

# Whether the module loaded in a VM log (the setup stream's insmod).
loaded() { grep -qE '^ok [0-9]+ - insmod fastremap.ko$' "$1"; }

# verdict LOG: "killed|WHAT" or "survived|" or "error|WHY" for a mutant's log.
verdict() {
	local log=$1 bad t line rc prog
	if ! loaded "$log"; then
		echo "error|the module did not load (harness or boot failure)"
		return
	fi
	# A kernel-log finding: the program running when it was printed.
	# (Console lines are errors and worse, printed as they happen; the rest
	# is only in the dump at the end.) Kernel lines carry a timestamp: a
	# test's own output ("0 bad pages") is not a finding.
	bad=$(grep -nE "^\[ *[0-9]+\.[0-9]+\] .*($FR_BAD_LOG|Kernel panic)" "$log" | head -n 1)
	if [ -n "$bad" ]; then
		prog=$(head -n "${bad%%:*}" "$log" | sed -n 's/^FR-BEGIN //p' | tail -n 1)
		head -n "${bad%%:*}" "$log" | grep -q '^FR-DMESG-BEGIN$' &&
			prog="by the end of the run (after ${prog:-setup})"
		echo "killed|${prog:-setup}: kernel log: $(echo "${bad#*:}" | cut -c1-90)"
		return
	fi
	for t in $(sed -n 's/^FR-BEGIN //p' "$log"); do
		[ "$t" = setup ] && continue
		rc=$(sed -n "s/^FR-END $t \([0-9]*\)$/\1/p" "$log")
		if [ -z "$rc" ]; then
			echo "error|$t did not finish (no kernel-log finding)"
			return
		fi
		[ "$rc" = 0 ] && continue
		if ! grep -qx "$suite $t" "$results/baseline-passed"; then
			echo "error|$t failed, but it did not pass unplanted on $suite"
			return
		fi
		line=$(sed -n "/^FR-BEGIN $t\$/,/^FR-END $t /p" "$log" | grep -m1 -E '^not ok [0-9]+')
		echo "killed|$t: ${line:-exit status $rc}"
		return
	done
	if grep -q '^FR-DONE$' "$log"; then
		echo "survived|"
	else
		echo "error|the VM did not run to the end"
	fi
}

: >"$results/baseline-passed"
: >"$results/table"
fail=0
for suite in $FR_SUITES; do
	kver=$(fr_kver "$(fr_root "$suite")")
	fr_log "$suite ($kver): the unplanted module and the killer programs"
	if ! build "" "$suite"; then
		fr_die "$suite: the unplanted module does not build ($results/base-$suite-build.log)"
	fi
	base_sum=$(code_sum "$top/base/$suite/fastremap.ko")
	# Every killer program must pass against the unplanted module first.
	ks=$(for m in $mutants; do killers "$m"; done | tr ' ' '\n' | awk 'NF && !s[$0]++')
	# shellcheck disable=SC2086
	boot base "$suite" "" $ks
	for t in $ks; do
		sed -n "/^FR-BEGIN $t\$/,/^FR-END $t /p" "$results/base-$suite.log" |
			grep -qx "FR-END $t 0" && echo "$suite $t" >>"$results/baseline-passed"
	done
	# Kernel lines only, as in verdict(): t_stress prints "0 bad pages".
	if ! grep -q '^FR-DONE$' "$results/base-$suite.log" ||
		grep -qE "^\[ *[0-9]+\.[0-9]+\] .*($FR_BAD_LOG)" "$results/base-$suite.log"; then
		fr_log "$suite: the unplanted run did not end cleanly ($results/base-$suite.log)"
		fail=1
	fi
	fr_log "$suite: killers passing unplanted: $(awk -v s="$suite" '$1 == s { printf "%s ", $2 }' "$results/baseline-passed")"

	for m in $mutants; do
		start=$(date +%s)
		if ! build "$m" "$suite"; then
			res="error|does not build"
		elif [ "$(code_sum "$top/$m/$suite/fastremap.ko")" = "$base_sum" ]; then
			res="equivalent|identical code"
		else
			order=$(printf '%s\n' $(killers "$m") $all_tests | awk 'NF && !s[$0]++')
			# shellcheck disable=SC2086
			boot "$m" "$suite" stop $order
			res=$(verdict "$results/$m-$suite.log")
			if [ "${res%%|*}" = error ] && ! loaded "$results/$m-$suite.log"; then
				# Early boot under TCG can die before anything ran: once more.
				fr_log "$suite/$m: ${res#*|}; booting once more"
				boot "$m" "$suite" stop $order
				res=$(verdict "$results/$m-$suite.log")
			fi
		fi
		secs=$(($(date +%s) - start))
		kind=${res%%|*} what=${res#*|}
		if [ "$kind" = survived ] && [ -n "$(declared "$m")" ]; then
			kind=equivalent what="declared: $(declared "$m")"
		fi
		case $kind in
		killed | equivalent) ;;
		*) fail=1 ;;
		esac
		printf '%s\t%s\t%s\t%s\t%s\n' "$m" "$suite" "$kind" "${secs}s" "$what" >>"$results/table"
		fr_log "$suite/$m: $kind ${what:+($what)} in ${secs}s"
	done
done

echo "# mutant -> what caught it, per kernel ($FR_SUITES)"
echo "| mutant | planted bug | kernel | verdict | time | caught by |"
echo "|---|---|---|---|---|---|"
while IFS=$'\t' read -r m suite kind secs what; do
	echo "| $m | $(describe "$m") | $suite | $kind | $secs | $what |"
done <"$results/table" | tee "$results/table.md"
k=$(awk -F'\t' '$3 == "killed"' "$results/table" | wc -l)
e=$(awk -F'\t' '$3 == "equivalent"' "$results/table" | wc -l)
n=$(wc -l <"$results/table")
echo "# $k killed, $e equivalent, $((n - k - e)) survived or not judged, of $n mutant runs"
[ "$fail" = 0 ]
