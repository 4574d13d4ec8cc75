#!/usr/bin/env bash
# make check-mutants: builds the module once per planted bug (tests/mutants,
# module/mutant.h) for each kernel of the architecture (FASTREMAP_ARCH),
# boots it with the in-VM suite, and requires the one case each mutant
# names to fail. Prints a table per kernel and architecture: mutant, the
# case that caught it, time. Exits non-zero if any mutant was not
# planted, survived, was caught only by another case without a
# declaration, or could not be judged, and when nothing was killed.
#
# Before any build: every name in tests/mutants has an FR_MUTANT() site
# in module/ and every site a name. Per build: every object compiled
# with the module's flags carried the mutant's -DFR_MUTANT_NAME (Kbuild's
# .cmd files), the unplanted build none; a module whose machine code is
# the unplanted one's is an error unless tests/mutants declares the
# mutant equivalent on that kernel, with the reason (then it is not
# booted, nor is any other declared one).
#
# Verdicts. killed: the named case failed ("not ok"), or the kernel log
# after the module's insmod shows BUG:, an Oops or a bad page (or the
# mutant's own "kernel log: REGEX" line). killed-elsewhere: another case,
# another program's exit status or another kernel-log finding after the
# insmod (counted apart; fails unless tests/mutants declares it for that
# kernel). error: a program failed that did not pass unplanted, a
# host-load symptom (soft lockup, RCU stall, hung task, TCG's int3 Oops)
# unless the named case had failed before it, a guest that died before
# the module loaded or did not run to the end.
# Only a program that passed against the unplanted module in the same run
# is judged, and the named case must be among its passing cases there.
# The killer runs first; the guest stops at the first failing program.
#
# Usage: check-mutants.sh [MUTANT...]   (FASTREMAP_SUITES as for run.sh)
set -uo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

list="$FR_TOP/tests/mutants"
all_tests=$(fr_programs vm)
# tests/mutants: "NAME PROGRAM CASE WHAT" lines, "case NAME WHERE PROGRAM
# CASE" for a lane of its own and "equivalent|elsewhere NAME WHERE REASON"
# declarations, fields separated by tabs.
mutant_lines() { awk -F'\t+' '!/^#/ && NF && $1 !~ /^(case|equivalent|elsewhere)$/' "$list"; }
names=$(mutant_lines | awk -F'\t+' '{ print $1 }')
mutants=${*:-$names}
# FASTREMAP_MUTANTS_BUILD_ONLY=1: every check but the boots (the list,
# the defines, identical code), no verdict.
build_only=${FASTREMAP_MUTANTS_BUILD_ONLY:-}
top="$FR_BUILD/mutants"
results="$top/results"
rm -rf "$results"
mkdir -p "$results" "$top/extra/tests"
: >"$top/extra/tests/stop-on-fail"
# As tests/harness/run.sh boots: the same kernel command line.
FASTREMAP_VM_APPEND=$(fr_vm_append)
export FASTREMAP_VM_APPEND
export FASTREMAP_VM_TIMEOUT=${FASTREMAP_VM_TIMEOUT:-900}
if fr_is_arm64; then objdump=aarch64-linux-gnu-objdump; else objdump=objdump; fi

field() { mutant_lines | awk -F'\t+' -v m="$1" -v n="$2" '$1 == m { print $n; exit }'; }
describe() { field "$1" 4; }
upper() { printf '%s' "$1" | tr '[:lower:]' '[:upper:]'; }

# declared KIND NAME SUITE KVER: the reason of a KIND (equivalent,
# elsewhere) declaration whose WHERE (a comma list) names this lane: *,
# the suite, SUITE-ARCH, the architecture, or the kernel's version (6.1
# names 6.1.0-41-amd64).
declared() {
	awk -F'\t+' -v k="$1" -v m="$2" -v s="$3" -v v="$4" -v a="$FR_ARCH" '
		$1 == k && $2 == m {
			n = split($3, w, ",")
			for (i = 1; i <= n; i++)
				if (w[i] == "*" || w[i] == s || w[i] == s "-" a || w[i] == a ||
				    v == w[i] || index(v, w[i] ".") == 1) {
					if (k == "case") print $4 "\t" $5; else print $4
					exit
				}
		}' "$list"
}

# killer NAME and kcase NAME: the program and case of NAME on this lane
# ($suite, $kver).
killer() { local o; o=$(declared case "$1" "$suite" "$kver"); if [ -n "$o" ]; then echo "${o%%$'\t'*}"; else field "$1" 2; fi; }
kcase() { local o; o=$(declared case "$1" "$suite" "$kver"); if [ -n "$o" ]; then echo "${o#*$'\t'}"; else field "$1" 3; fi; }

# The names and the module's sites agree, and every line is complete.
sites=$(grep -ohE 'FR_MUTANT\([A-Z0-9_]+\)' "$FR_TOP"/module/*.[ch] |
	sed -E 's/FR_MUTANT\((.*)\)/\1/' | tr '[:upper:]' '[:lower:]' | sort -u)
bad_list=$(
	comm -23 <(printf '%s\n' "$names" | sort -u) <(printf '%s\n' "$sites") |
		sed 's/^/no FR_MUTANT() site in module\/ for /'
	comm -13 <(printf '%s\n' "$names" | sort -u) <(printf '%s\n' "$sites") |
		sed 's/^/no line in tests\/mutants for the FR_MUTANT() site /'
	printf '%s\n' "$names" | sort | uniq -d | sed 's/^/listed twice: /'
	mutant_lines | awk -F'\t+' 'NF != 4 { print "not NAME PROGRAM CASE WHAT: " $0 }'
	awk -F'\t+' '($1 == "equivalent" || $1 == "elsewhere") && NF != 4 { print "not KIND NAME WHERE REASON: " $0 }' "$list"
	awk -F'\t+' '$1 == "case" && NF != 5 { print "not case NAME WHERE PROGRAM CASE: " $0 }' "$list"
	awk -F'\t+' '$1 == "case" || $1 == "equivalent" || $1 == "elsewhere" { print $2 }' "$list" | sort -u |
		comm -23 - <(printf '%s\n' "$names" | sort -u) | sed 's/^/declared but not listed: /'
	for m in $mutants; do
		printf '%s\n' "$names" | grep -qx "$m" || echo "not in tests/mutants: $m"
		for k in $(field "$m" 2) $(awk -F'\t+' -v m="$m" '$1 == "case" && $2 == m { print $4 }' "$list"); do
			printf '%s\n' "$all_tests" | grep -qx "$k" ||
				echo "$m: its killer $k is not an in-VM program (tests/programs)"
		done
	done
)
if [ -n "$bad_list" ]; then
	printf '%s\n' "$bad_list" | while IFS= read -r l; do fr_log "tests/mutants: $l"; done
	fr_die "tests/mutants and module/ disagree"
fi

[ -n "$build_only" ] || fr_log "building the test programs"
# shellcheck disable=SC2046
[ -n "$build_only" ] || fr_cross make -C "$FR_TOP" --no-print-directory BUILD="$FR_BUILD" $(fr_cc_args) tests \
	>"$results/build-tests.log" 2>&1 ||
	fr_die "test programs do not build ($results/build-tests.log)"
bindir="$FR_BUILD/bin"

# The module's machine code and data, without paths or build ids.
code_sum() {
	{
		"$objdump" -dr "$1" | tail -n +4
		"$objdump" -s -j .rodata -j .rodata.str1.1 -j .rodata.str1.8 -j .data "$1" 2>/dev/null | tail -n +4
	} | md5sum | cut -c1-32
}

# build NAME SUITE: the module with bug NAME ("" for none) in $top/NAME.
build() {
	FASTREMAP_BUILD="$top/${1:-base}" FASTREMAP_MUTANT=$1 \
		"$FR_TOP/scripts/build-module.sh" "$2" >"$results/${1:-base}-$2-build.log" 2>&1
}

# Where build-module.sh staged (and Kbuild built) NAME's module for SUITE.
stage_of() {
	local b="$top/$1"
	if fr_on_host "$2"; then
		echo "$b/$2/src"
	else
		echo "$(fr_root "$2")/var/tmp/fastremap-build-$(printf '%s' "$b" | md5sum | cut -c1-8)"
	fi
}

# planted NAME SUITE: why the build of NAME ("" for none) did not carry
# exactly its define, or nothing: every object compiled with the module's
# flags (-DFR_TEST_HOOKS) names -DFR_MUTANT_NAME=1 and no other mutant,
# and so do the objects of the .c files with NAME's sites.
planted() {
	local name=$1 dir cmds f n=0 want others src
	dir="$(stage_of "${name:-base}" "$2")/module"
	cmds=$(grep -l -e '-DFR_TEST_HOOKS' "$dir"/.*.o.cmd 2>/dev/null)
	[ -n "$cmds" ] || { echo "no compile commands (.*.o.cmd) in $dir"; return; }
	want=${name:+-DFR_MUTANT_$(upper "$name")=1}
	for f in $cmds; do
		n=$((n + 1))
		others=$(grep -oE -e '-DFR_MUTANT_[A-Z0-9_]+(=[^ ]*)?' "$f" | sort -u | grep -vxF -e "${want:-none}")
		[ -z "$others" ] || { echo "$(basename "$f") carries $others"; return; }
		[ -z "$want" ] || grep -qF -e "$want" "$f" || { echo "$(basename "$f") lacks $want"; return; }
	done
	[ -n "$name" ] || return 0
	while IFS= read -r src; do
		f="$dir/.$(basename "${src%.c}").o.cmd"
		printf '%s\n' "$cmds" | grep -qxF "$f" || { echo "$(basename "$src") was not compiled with the module's flags"; return; }
	done < <(grep -lE "FR_MUTANT\($(upper "$name")\)" "$FR_TOP"/module/*.c)
}

# boot NAME SUITE STOP TEST...: runs the programs in a VM; log in results.
# A kernel-log kill (killed_in) is final at its first line, and a guest
# that oopsed with a lock held or interrupts off often hangs until the VM
# timeout: QEMU is stopped KILL_GRACE s after such a line, the trace
# printed.
KILL_GRACE=15
boot() {
	local name=$1 suite=$2 stop=$3 log vm
	shift 3
	log=$results/$name-$suite.log
	FASTREMAP_BUILD="$top/$name" FASTREMAP_VM_EXTRA=${stop:+$top/extra} \
		"$FR_HARNESS/vm-run.sh" "$suite" "$bindir" "$log" "$@" \
		>>"$results/$name-$suite-build.log" 2>&1 &
	vm=$!
	while kill -0 "$vm" 2>/dev/null; do
		sleep 5
		if [ ! -r "$log" ] || [ -z "$(killed_in "$log")" ]; then
			continue
		fi
		sleep "$KILL_GRACE"
		kill "$(cat "$top/$name/$suite/qemu.pid" 2>/dev/null)" 2>/dev/null || true
		break
	done
	wait "$vm" || true
}

# Whether the module loaded in a VM log (the setup stream's insmod).
loaded() { grep -qE '^ok [0-9]+ - insmod fastremap.ko$' "$1"; }

# A program's TAP stream in a VM log.
stream_of() { sed -n "/^FR-BEGIN $2\$/,/^FR-END $2 /p" "$1"; }

# Whether a stream has a result (PREFIX "ok" or "not ok") whose
# description holds CASE.
has_case() {
	awk -v p="$2" -v c="$3" '
		$0 ~ "^" p " [0-9]+ " && index($0, c) && !(p == "ok" && / # SKIP/) { f = 1 }
		END { exit !f }' <<<"$1"
}

# Kernel lines ("[ 1.2] ...") printed after the module's insmod, with
# their line numbers: on the console, after the setup stream's insmod;
# in the dump at the end, after the module's "ready" line (all of the
# dump if the buffer no longer holds it).
LOAD_RE='soft lockup|hard LOCKUP|rcu.*(stall|detected stalls)|INFO: task .* blocked|blocked for more than|Oops: int3'
KILL_RE='BUG:|Oops|[Bb]ad page|kernel BUG|general protection'
klines_after_insmod() {
	local log=$1 ins dump ready
	ins=$(grep -nm1 -E '^ok [0-9]+ - insmod fastremap.ko$' "$log" | cut -d: -f1)
	dump=$(grep -nm1 '^FR-DMESG-BEGIN$' "$log" | cut -d: -f1)
	ready=$(awk -v d="${dump:-0}" 'd && NR > d && /fastremap: ready:/ { print NR; exit }' "$log")
	awk -v i="${ins:-0}" -v d="${dump:-0}" -v r="${ready:-0}" '
		/^\[ *[0-9]+\.[0-9]+\] / && ((!d || NR < d) ? NR > i : NR > r) { print NR ":" $0 }' "$log"
}

# The first kernel line after the module's insmod that kills any mutant
# (BUG:, an Oops, a bad page; host-load symptoms aside), "N:LINE", or "".
killed_in() {
	loaded "$1" || return 0
	klines_after_insmod "$1" | grep -E -- "$KILL_RE" | grep -vE -m1 -- "$LOAD_RE" || true
}

# The program running at line N of a log (console lines), or "".
running_at() { head -n "$2" "$1" | sed -n 's/^FR-BEGIN //p' | tail -n 1; }

# verdict LOG NAME: "KIND|WHAT" for a mutant's log, KIND killed,
# killed-elsewhere, survived or error.
verdict() {
	local log=$1 name=$2 prog kc re l t rc line
	prog=$(killer "$name") kc=$(kcase "$name")
	if ! loaded "$log"; then
		echo "error|the module did not load (harness or boot failure)"
		return
	fi
	# The mutant's own kernel-log finding, while its killer ran.
	if [ "${kc#kernel log: }" != "$kc" ]; then
		re=${kc#kernel log: }
		l=$(klines_after_insmod "$log" | grep -E -m1 -- "$re")
		if [ -n "$l" ] && [ "$(running_at "$log" "${l%%:*}")" = "$prog" ]; then
			echo "killed|$prog: kernel log: $(echo "${l#*:}" | cut -c1-100)"
			return
		fi
	fi
	l=$(killed_in "$log")
	if [ -n "$l" ]; then
		t=$(running_at "$log" "${l%%:*}")
		echo "killed|${t:+$t: }kernel log: $(echo "${l#*:}" | cut -c1-100)"
		return
	fi
	l=$(grep -nE "^\[ *[0-9]+\.[0-9]+\] .*($LOAD_RE)" "$log" | head -n 1)
	# The named case failed before the first such symptom: what came after
	# cannot have made it fail (a lock-order mutant fails its counted case,
	# then deadlocks for real in the races that follow it).
	if [ -n "$l" ] && [ "${kc#kernel log: }" = "$kc" ] &&
		grep -qx "$prog" "$results/baseline-passed-$suite"; then
		line=$(grep -nE '^not ok [0-9]+ ' "$log" | grep -m1 -F -- "$kc")
		if [ -n "$line" ] && [ "${line%%:*}" -lt "${l%%:*}" ] &&
			[ "$(running_at "$log" "${line%%:*}")" = "$prog" ]; then
			echo "killed|$prog: ${line#*:}"
			return
		fi
	fi
	if [ -n "$l" ]; then
		echo "error|host-load symptom, judges nothing: $(echo "${l#*:}" | cut -c1-100)"
		return
	fi
	while IFS= read -r t; do
		[ "$t" = setup ] && continue
		rc=$(sed -n "s/^FR-END $t \([0-9]*\)$/\1/p" "$log")
		if [ -z "$rc" ]; then
			echo "error|$t did not finish (no kernel-log finding)"
			return
		fi
		[ "$rc" = 0 ] && continue
		if ! grep -qx "$t" "$results/baseline-passed-$suite"; then
			echo "error|$t failed, but it did not pass unplanted on $suite"
			return
		fi
		if [ "$t" = "$prog" ] && has_case "$(stream_of "$log" "$t")" "not ok" "$kc"; then
			line=$(stream_of "$log" "$t" | grep -E '^not ok [0-9]+ ' | grep -m1 -F -- "$kc")
			echo "killed|$t: $line"
			return
		fi
		line=$(stream_of "$log" "$t" | grep -m1 -E '^not ok [0-9]+')
		echo "killed-elsewhere|$t: ${line:-exit status $rc}"
		return
	done < <(sed -n 's/^FR-BEGIN //p' "$log")
	l=$(klines_after_insmod "$log" | grep -E -m1 -- "$FR_BAD_LOG")
	if [ -n "$l" ]; then
		echo "killed-elsewhere|kernel log: $(echo "${l#*:}" | cut -c1-100)"
	elif grep -q '^FR-DONE$' "$log"; then
		echo "survived|"
	else
		echo "error|the VM did not run to the end"
	fi
}

: >"$results/table"
fail=0
for suite in $FR_SUITES; do
	kver=$(fr_kver "$(fr_kroot "$suite")")
	lane="$suite-$FR_ARCH"
	fr_log "$lane ($kver): the unplanted module and the killer programs"
	if ! build "" "$suite"; then
		fr_die "$suite: the unplanted module does not build ($results/base-$suite-build.log)"
	fi
	why=$(planted "" "$suite")
	[ -z "$why" ] || fr_die "$suite: the unplanted build: $why"
	base_sum=$(code_sum "$top/base/$suite/fastremap.ko")
	# The mutants to boot here: those not declared equivalent on this kernel.
	boot_these=
	for m in $mutants; do
		[ -n "$(declared equivalent "$m" "$suite" "$kver")" ] || boot_these+=" $m"
	done
	# Every killer program must pass against the unplanted module first.
	ks=$(for m in $boot_these; do killer "$m"; done | awk 'NF && !s[$0]++')
	: >"$results/baseline-passed-$suite"
	if [ -n "$ks" ] && [ -z "$build_only" ]; then
		# shellcheck disable=SC2086
		boot base "$suite" "" $ks
		for t in $ks; do
			stream_of "$results/base-$suite.log" "$t" | grep -qx "FR-END $t 0" &&
				echo "$t" >>"$results/baseline-passed-$suite"
		done
		# Kernel lines only, as in verdict(): t_stress prints "0 bad pages".
		if ! grep -q '^FR-DONE$' "$results/base-$suite.log" ||
			grep -qE "^\[ *[0-9]+\.[0-9]+\] .*($FR_BAD_LOG)" "$results/base-$suite.log"; then
			fr_log "$lane: the unplanted run did not end cleanly ($results/base-$suite.log)"
			fail=1
		fi
		fr_log "$lane: killers passing unplanted: $(tr '\n' ' ' <"$results/baseline-passed-$suite")"
	fi

	for m in $mutants; do
		start=$(date +%s)
		prog=$(killer "$m") kc=$(kcase "$m")
		eq=$(declared equivalent "$m" "$suite" "$kver")
		if ! build "$m" "$suite"; then
			res="error|does not build ($results/$m-$suite-build.log)"
		elif why=$(planted "$m" "$suite") && [ -n "$why" ]; then
			res="error|not planted: $why"
		elif [ "$(code_sum "$top/$m/$suite/fastremap.ko")" = "$base_sum" ]; then
			if [ -n "$eq" ]; then
				res="equivalent|identical code; declared: $eq"
			else
				res="error|not planted: the same machine code as the unplanted module, and not declared equivalent on $lane"
			fi
		elif [ -n "$eq" ]; then
			res="equivalent|not booted; declared: $eq"
		elif [ -n "$build_only" ]; then
			res="planted|the define in every object, other code than the unplanted module's"
		elif [ "${kc#kernel log: }" = "$kc" ] &&
			! has_case "$(stream_of "$results/base-$suite.log" "$prog")" ok "$kc"; then
			res="error|$prog has no passing case \"$kc\" unplanted on $lane"
		else
			order=$(printf '%s\n' "$prog" "$all_tests" | awk 'NF && !s[$0]++')
			# shellcheck disable=SC2086
			boot "$m" "$suite" stop $order
			res=$(verdict "$results/$m-$suite.log" "$m")
			if [ "${res%%|*}" = error ] && ! loaded "$results/$m-$suite.log"; then
				# Early boot under TCG can die before anything ran: once more.
				fr_log "$lane/$m: ${res#*|}; booting once more"
				# shellcheck disable=SC2086
				boot "$m" "$suite" stop $order
				res=$(verdict "$results/$m-$suite.log" "$m")
			fi
		fi
		secs=$(($(date +%s) - start))
		kind=${res%%|*} what=${res#*|}
		el=$(declared elsewhere "$m" "$suite" "$kver")
		case $kind in
		killed | equivalent | planted) ;;
		killed-elsewhere) [ -n "$el" ] && what+=" (declared: $el)" || fail=1 ;;
		*) fail=1 ;;
		esac
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "$lane" "$kind" "${secs}s" "$what" "$prog: $kc" >>"$results/table"
		fr_log "$lane/$m: $kind ${what:+($what)} in ${secs}s"
	done
done

echo "# mutant -> what caught it, per kernel and architecture ($FR_SUITES, $FR_ARCH)"
echo "| mutant | planted bug | kernel | verdict | time | caught by | expected |"
echo "|---|---|---|---|---|---|---|"
while IFS=$'\t' read -r m lane kind secs what want; do
	echo "| $m | $(describe "$m") | $lane | $kind | $secs | $what | $want |"
done <"$results/table" | tee "$results/table.md"
count() { awk -F'\t' -v k="$1" '$3 == k' "$results/table" | wc -l; }
k=$(count killed) ke=$(count killed-elsewhere) e=$(count equivalent) p=$(count planted)
n=$(wc -l <"$results/table")
echo "# $k killed by their case, $ke killed elsewhere, $e equivalent,${build_only:+ $p planted (not booted),}" \
	"$((n - k - ke - e - p)) survived or not judged, of $n mutant runs"
if [ "$k" = 0 ] && [ -z "$build_only" ]; then
	fr_log "nothing was killed"
	fail=1
fi
[ "$fail" = 0 ]
