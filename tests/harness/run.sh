#!/usr/bin/env bash
# The test suite: host tests, then for each kernel (Debian 12, 13,
# unstable) a DKMS build and a QEMU boot running every in-VM test program.
# Prints TAP per program, a summary per kernel, the test cases and the
# harness's own checks apart, and last the line "N passed, N failed, N
# skipped" over everything. Exits non-zero on any failure. Run as root
# (chroots, mounts, dkms). See README.md.
#
# Only what ran counts: every stream (host test, DKMS test, in-VM program,
# selftests) must exit 0, end with a "1..N" plan matching its N result
# lines, and print at least the results tests/expected-counts lists for
# it on its kernel; every SKIP must be listed for its kernel in
# tests/expected-skips, and every listed skip of a stream that ran must
# have happened.
set -uo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

# The in-VM test programs, in order (t_unload last), from tests/programs.
VM_TESTS=${FASTREMAP_VM_TESTS:-$(fr_programs vm)}
# Host tests: programs in build/bin, or scripts in this folder, from
# tests/programs ("none" for none).
# The arm64 lane (FASTREMAP_ARCH=arm64) runs none: its programs are
# aarch64 binaries, and the x86-64 lane runs the host tests already.
if fr_is_arm64; then
	HOST_TESTS=${FASTREMAP_HOST_TESTS:-none}
else
	HOST_TESTS=${FASTREMAP_HOST_TESTS:-$(fr_programs host)}
fi
[ "$HOST_TESTS" = none ] && HOST_TESTS=

results="$FR_BUILD/results"
# Nothing of an earlier run may be read as this run's: a VM runner that
# dies before QEMU starts must leave no log at all.
rm -rf "$results"
mkdir -p "$results"

# The guests' kernel command line (common.sh says why each option).
FASTREMAP_VM_APPEND=$(fr_vm_append)
export FASTREMAP_VM_APPEND

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
elif [ -n "${FASTREMAP_DIFF_OPS:-}" ] || [ "${FASTREMAP_LATENCY_MREMAP:-1}" = 0 ]; then
	# make check: fewer random operations for t_remap_diff (its fixed
	# seed and its big cases unchanged), the program whose time grows
	# with them; FASTREMAP_LATENCY_MREMAP=0: t_remap_latency without its
	# mremap(2) reference runs. See tests/README.md, "What `make check` costs".
	export FASTREMAP_VM_ARGS="$results/check-args"
	: >"$FASTREMAP_VM_ARGS"
	if [ -n "${FASTREMAP_DIFF_OPS:-}" ]; then
		[[ $FASTREMAP_DIFF_OPS =~ ^[1-9][0-9]*$ ]] || fr_die "FASTREMAP_DIFF_OPS: a count"
		echo "t_remap_diff --ops $FASTREMAP_DIFF_OPS" >>"$FASTREMAP_VM_ARGS"
	fi
	[ "${FASTREMAP_LATENCY_MREMAP:-1}" = 0 ] &&
		echo "t_remap_latency --no-mremap" >>"$FASTREMAP_VM_ARGS"
fi

# Per suite, the harness's own checks are numbered as a TAP stream (tap_ok)
# and every stream's results count with them (tap_count), kept apart as
# test cases too (tap_split); the suites add up to the last lines
# (tap_add, tap_total).

# The expected skips: "SUITES | PROGRAM | DESCRIPTION | REASON" lines,
# SUITES a comma list or "*", DESCRIPTION the start of the skipped case's
# description. skip_seen[LINE] is set when line LINE matched a SKIP.
skips_file="$FR_TOP/tests/expected-skips"
declare -A skip_seen=()
trim() { local v=$1; v=${v#"${v%%[![:space:]]*}"}; printf '%s' "${v%"${v##*[![:space:]]}"}"; }
# skip_entries SUITE: "LINE<TAB>PROGRAM<TAB>DESCRIPTION" for the suite.
# The arm64 lane's suites are SUITE-arm64 there.
skip_entries() {
	local n=0 line su pr de rest key
	key=$(suite_key "$1")
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		case $line in '#'* | '') continue ;; esac
		IFS='|' read -r su pr de rest <<<"$line"
		su=$(trim "$su")
		case ",$su," in *",$key,"* | ',*,') ;; *) continue ;; esac
		printf '%s\t%s\t%s\n' "$n" "$(trim "$pr")" "$(trim "$de")"
	done <"$skips_file"
}

# The fewest results each stream must print per kernel: "SUITES | PROGRAM
# | MINIMUM" lines, SUITES as in tests/expected-skips. A program's own plan
# counts what it printed; this catches one that returned early, exit 0,
# after dropping a section.
counts_file="$FR_TOP/tests/expected-counts"
# suite_key SUITE: the suite's name in both files (SUITE-arm64 on arm64).
suite_key() {
	if fr_is_arm64 && [ "$1" != host ]; then printf '%s-arm64' "$1"; else printf '%s' "$1"; fi
}
# min_count SUITE PROGRAM: the first minimum listed for them, else nothing.
min_count() {
	local line su pr mi rest key
	key=$(suite_key "$1")
	while IFS= read -r line || [ -n "$line" ]; do
		case $line in '#'* | '') continue ;; esac
		IFS='|' read -r su pr mi rest <<<"$line"
		[ "$(trim "$pr")" = "$2" ] || continue
		case ",$(trim "$su")," in *",$key,"* | ',*,') ;; *) continue ;; esac
		trim "$mi"
		return
	done <"$counts_file"
}

# check_stream SUITE PROGRAM FILE RC: counts the stream's results, then one
# harness check that it exited 0 (RC empty: it did not finish), printed
# one "1..N" plan matching its N result lines, at least the minimum of
# tests/expected-counts, and skipped nothing that tests/expected-skips
# does not list for SUITE. The count goes into the run's counts file.
check_stream() {
	local suite=$1 prog=$2 file=$3 rc=$4 plan nres min why=() d ln pr de found
	tap_count "$file"
	[ "$rc" = 0 ] || why+=("exit ${rc:-(did not finish)}")
	plan=$(grep -E '^1\.\.[0-9]+' "$file" | sed -E 's/^1\.\.([0-9]+).*/\1/')
	nres=$(grep -cE '^(not )?ok [0-9]+' "$file")
	printf '%s | %s | %s\n' "$(suite_key "$suite")" "$prog" "$nres" >>"$results/counts"
	if [ -z "$plan" ]; then
		why+=("no 1..N plan")
	elif [ "$(printf '%s\n' "$plan" | wc -l)" != 1 ]; then
		why+=("$(printf '%s\n' "$plan" | wc -l) plans")
	elif [ "$plan" = 0 ] || [ "$plan" != "$nres" ]; then
		why+=("plan 1..$plan but $nres results")
	fi
	min=$(min_count "$suite" "$prog")
	if ! [[ $min =~ ^[0-9]+$ ]]; then
		why+=("no minimum result count for $(suite_key "$suite") in tests/expected-counts")
	elif [ "$nres" -lt "$min" ]; then
		why+=("$nres results, fewer than the $min of tests/expected-counts")
	fi
	while IFS= read -r d; do
		[ -n "$d" ] || continue
		found=
		while IFS=$'\t' read -r ln pr de; do
			if [ "$pr" = "$prog" ] && [ "${d#"$de"}" != "$d" ]; then
				found=$ln
				skip_seen[$suite:$ln]=1
				break
			fi
		done < <(skip_entries "$suite")
		[ -n "$found" ] || why+=("unexpected SKIP: $d")
	done < <(grep -E '^ok [0-9]+ .*# SKIP' "$file" | sed -E 's/^ok [0-9]+ (- )?//; s/ # SKIP.*//')
	if [ ${#why[@]} = 0 ]; then
		tap_ok 1 "$suite/$prog: exit 0, plan 1..$plan matches, at least $min results, no unexpected SKIP"
	else
		tap_ok 0 "$suite/$prog: $(IFS=';'; printf '%s' "${why[*]}" | sed 's/;/; /g')"
	fi
}

# stream SUITE NAME COMMAND...: runs a command that prints a TAP stream
# into the results (SUITE-NAME.tap), shows it, and checks it.
stream() {
	local suite=$1 name=$2 file rc
	shift 2
	file="$results/$suite-$name.tap"
	echo "# $suite/$name"
	"$@" >"$file"
	rc=$?
	cat "$file"
	check_stream "$suite" "$name" "$file" "$rc"
}

# check_unused_skips SUITE PROGRAM...: one harness check that every listed
# skip of the programs that ran happened. One that did not fails the run:
# the entry is stale (delete it) or the case no longer runs where it should.
check_unused_skips() {
	local suite=$1 ln pr de p unused=()
	shift
	while IFS=$'\t' read -r ln pr de; do
		for p in "$@"; do
			[ "$p" = "$pr" ] || continue
			[ -n "${skip_seen[$suite:$ln]:-}" ] && continue
			unused+=("line $ln: $pr: $de")
			unused_skips+=("$suite: $pr: $de (tests/expected-skips line $ln)")
		done
	done < <(skip_entries "$suite")
	tap_ok "$([ ${#unused[@]} = 0 ] && echo 1)" \
		"$suite: every skip tests/expected-skips lists for the programs that ran happened" \
		"$(printf 'expected SKIP did not happen: tests/expected-skips %s\n' "${unused[@]}")"
}

# The sum of one FR-STATS counter over the programs of the suite's VM log.
stats() { sed -n "s/^# FR-STATS .*$1=\([0-9]*\).*/\1/p" "$log" | awk '{ s += $1 } END { print s + 0 }'; }

finish_suite() { # finish_suite NAME
	local name
	name=$(suite_key "$1")
	echo "# $name: $(tap_summary) ($(tap_split))"
	summary+=("$name: $(tap_summary) ($(tap_split))")
	tap_add "$TAP_PASS" "$TAP_FAIL" "$TAP_SKIP" "$TAP_CPASS" "$TAP_CFAIL" "$TAP_CSKIP"
}

summary=()
reports=()
unused_skips=()
fr_log "building userspace and test programs"
# WERROR=1: warnings fail the project's own build (not a packager's; see userspace/Makefile).
# arm64: cross-built in a chroot (Debian 12's cross gcc conflicts with the
# host's gcc-multilib).
# shellcheck disable=SC2046
if ! fr_cross make -C "$FR_TOP" --no-print-directory WERROR=1 BUILD="$FR_BUILD" \
	$(fr_cc_args) tests >"$results/build-tests.log" 2>&1; then
	tail -n 30 "$results/build-tests.log"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
bindir="$FR_BUILD/bin"

# Host tests: no kernel module involved.
tap_begin
for t in $HOST_TESTS; do
	case $t in
	*.sh) stream host "$t" "$FR_HARNESS/$t" ;;
	*) stream host "$t" "$bindir/$t" ;;
	esac
done
# shellcheck disable=SC2086
check_unused_skips host $HOST_TESTS
finish_suite host

for suite in $FR_SUITES; do
	if nolane=$(fr_no_lane "$suite"); then
		echo "# ===== $suite: not run: $nolane"
		continue
	fi
	tap_begin
	kver=$(fr_kver "$(fr_kroot "$suite")")
	echo "# ===== $suite ($kver)"
	fr_log "$suite: building the module"
	if ! "$FR_TOP/scripts/build-module.sh" "$suite"; then
		tap_ok 0 "$suite: module builds without warnings"
		finish_suite "$suite"
		continue
	fi
	tap_ok 1 "$suite: module builds without warnings"
	# No call through a pointer; a static call for every internal function.
	stream "$suite" check-ko "$FR_HARNESS/check-ko.sh" "$FR_BUILD/$suite/fastremap.ko" \
		"$FR_BUILD/$suite/compat-generated.h"
	# No hot loop of the mover straddles a page of module text (module/hot.h).
	# Not on the debug lanes: KASAN makes fr_walk larger than a page, and
	# nothing is timed there.
	if ! fr_is_debug "$suite"; then
		stream "$suite" check-placement "$FR_HARNESS/check-placement.sh" "$FR_BUILD/$suite/fastremap.ko"
	fi
	# compat.h's function types against this kernel's own source.
	stream "$suite" check-decls "$FR_HARNESS/check-decls.sh" "$suite"

	# arm64: the module builds for Debian's 16 KiB-page flavour of this
	# kernel (a 16 KiB-page suite boots that flavour itself).
	if fr_is_arm64 && ! fr_is_16k "$suite"; then
		stream "$suite" check-pagesize "$FR_HARNESS/check-pagesize.sh" "$suite"
	fi

	# The kernels built from source have no packaged headers: DKMS is
	# tested on Debian's builds. arm64: DKMS builds natively on an arm64
	# machine, not cross.
	if ! fr_from_source "$suite" && ! fr_is_arm64; then
		fr_log "$suite: dkms add/build"
		stream "$suite" dkms "$FR_HARNESS/dkms-test.sh" "$suite"
	fi

	fr_log "$suite: booting $kver under QEMU"
	log="$results/$suite-vm.log"
	start=$(date +%s)
	# shellcheck disable=SC2086
	"$FR_HARNESS/vm-run.sh" "$suite" "$bindir" "$log" $VM_TESTS
	rc=$?
	fr_log "$suite: VM finished in $(($(date +%s) - start)) s"
	touch "$log"
	tap_ok "$([ "$rc" = 0 ] && echo 1)" "$suite: VM runner exited 0 ($rc)"

	tap_ok "$(grep -q 'FR-KERNEL ' "$log" && echo 1)" "$suite: kernel booted"
	if fr_is_debug "$suite"; then
		# The lane proves something only while its checkers are live.
		for c in kasan lockdep lockdep-at-end; do
			tap_ok "$(grep -qx "FR-CHECKER $c" "$log" && echo 1)" "$suite: checker $c live"
		done
	fi
	for t in setup $VM_TESTS; do
		sed -n "/^FR-BEGIN $t\$/,/^FR-END $t /p" "$log" | sed '1d' >"$results/$suite-$t.tap"
		echo "# $suite/$t"
		grep -v '^FR-END' "$results/$suite-$t.tap"
		rc=$(sed -n "s/^FR-END $t \([0-9]*\)$/\1/p" "$results/$suite-$t.tap")
		check_stream "$suite" "$t" "$results/$suite-$t.tap" "$rc"
	done
	# Where the guest's time went, longest first (FR-TIME NAME START END).
	times=$(awk '$1 == "FR-TIME" { printf "%s %.0f\n", $2, $4 - $3 }' "$log" |
		sort -k2,2nr | awk '{ printf "%s%s %d s", (NR > 1 ? ", " : ""), $1, $2 }')
	echo "# $suite: guest time per program: ${times:-none recorded}"
	sed -n '/^FR-DMESG-BEGIN$/,/^FR-DMESG-END$/p' "$log" >"$results/$suite-dmesg.log"
	bad=$(grep -E "$FR_BAD_LOG" "$results/$suite-dmesg.log")
	[ -n "$bad" ] && printf '# %s\n' "$bad" | head -n 40
	# The reliability report: what the programs executed, what they found.
	report="$suite reliability: $(stats diff_remaps) remaps compared with mremap(2)"
	report+=" ($(stats diff_ops) random ops and the big cases): $(stats diff_compared) answered by the ioctl,"
	report+=" $(stats diff_moved) moves ($(stats diff_large) of 2 MiB or more; entries PUD $(stats diff_pud),"
	report+=" PMD $(stats diff_pmd), THP $(stats diff_thp), PTE $(stats diff_pte)),"
	report+=" $(stats diff_declined) declined ($(stats diff_unexplained) by no rule), $(stats divergences) divergences;"
	report+=" $(stats stress_scenarios) stress scenarios ran, $(stats stress_skipped) skipped, $(stats stress_failed) failed;"
	report+=" $(stats hostile_calls) hostile ioctls ($(stats hostile_aimed) aimed at mappings, $(stats hostile_moved) moved, memory checked after each);"
	report+=" $(stats injected_failures) injected allocation failures; kernel-log findings $(printf '%s' "$bad" | grep -c .)"
	# Debian's kernels have no fault injection: say so where it skipped.
	if grep -q '# SKIP' "$results/$suite-t_remap_failnth.tap" 2>/dev/null; then
		report+="; t_remap_failnth skipped (no fault injection in this kernel)"
	fi
	echo "# $report"
	reports+=("$report")
	tap_ok "$([ -s "$results/$suite-dmesg.log" ] && [ -z "$bad" ] && echo 1)" \
		"$suite: guest kernel log captured and clean"
	tap_ok "$(grep -q '^FR-DONE$' "$log" && echo 1)" "$suite: VM ran to the end and powered off"

	if fr_is_arm64; then
		# shellcheck disable=SC2086
		check_unused_skips "$suite" check-pagesize setup $VM_TESTS
		finish_suite "$suite"
		continue
	fi
	fr_log "$suite: mremap selftests plain and under the LD_PRELOAD shim"
	stream "$suite" selftests "$FR_HARNESS/selftests-vm.sh" "$suite" "$results/$suite-selftests-vm.log"

	# Secure Boot's refusal, as module.sig_enforce=1 shows it (the kernels
	# built from source sign no modules: scripts/test-kernel.config).
	if ! fr_from_source "$suite"; then
		fr_log "$suite: module.sig_enforce=1 guest"
		stream "$suite" sigenforce "$FR_HARNESS/sigenforce-vm.sh" "$suite" "$results/$suite-sigenforce-vm.log"
	fi
	# shellcheck disable=SC2086
	check_unused_skips "$suite" dkms setup $VM_TESTS selftests sigenforce
	finish_suite "$suite"
done

echo "# ===== summary"
for l in "${reports[@]}"; do echo "# $l"; done
for l in "${summary[@]}"; do echo "# $l"; done
for l in "${unused_skips[@]}"; do echo "# expected SKIP did not happen: $l"; done
tap_total
[ "$TAP_TOT_FAIL" = 0 ]
