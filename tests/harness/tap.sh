# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh
# Sourced: the one TAP writer of the harness scripts (common.sh sources it;
# the guests' init scripts source the copy vm-run.sh stages as /tap.sh).
# Plain POSIX sh: busybox's sh in the guests runs it too.
#
#   tap_ok PASS? DESCRIPTION [DIAGNOSTICS]  "ok N - ..." when PASS? is 1,
#                                     else "not ok N - ..." and the
#                                     diagnostics (20 lines) as comments;
#                                     returns 0 for a pass, 1 for a failure
#   tap_status RC DESCRIPTION ...     the same, passing when RC is 0
#   tap_check DESCRIPTION COMMAND...  runs COMMAND (its output to TAP_LOG),
#                                     passes when it exits 0
#   tap_skip REASON DESCRIPTION       "ok N - DESCRIPTION # SKIP REASON"
#   tap_diag TEXT...                  each line as a "# " comment
#   tap_count FILE                    adds a TAP file's results to the
#                                     counts, without numbering them, and
#                                     to the test cases' own counts
#   tap_done                          the plan "1..N", then the summary
#                                     "# N passed, N failed, N skipped";
#                                     returns 1 if anything failed
#   tap_done_run                      the same for a whole run: its last
#                                     line the summary, not a comment
#   tap_begin                         counts from zero again
#   tap_split                         "cases: N passed, N failed, N
#                                     skipped; harness checks: N passed,
#                                     N failed, N skipped": the results
#                                     tap_count read apart from the
#                                     checks tap_ok numbered
#   tap_add P F S [CP CF CS], tap_total
#                                     totals over several streams (suites,
#                                     lanes; CP CF CS: of them test cases),
#                                     and their summary: the split as a
#                                     comment, then the summary line
#
# TAP_LOG: the file tap_check appends its commands' output to (default
# none). TAP_SHOW=N: a failed result shows TAP_LOG's last N lines, and
# every result empties TAP_LOG (each result's log is its own).

tap_begin() {
	TAP_N=0 TAP_PASS=0 TAP_FAIL=0 TAP_SKIP=0
	TAP_CPASS=0 TAP_CFAIL=0 TAP_CSKIP=0
}
tap_begin
TAP_TOT_PASS=0 TAP_TOT_FAIL=0 TAP_TOT_SKIP=0
TAP_TOT_CPASS=0 TAP_TOT_CFAIL=0 TAP_TOT_CSKIP=0

tap_diag() {
	printf '%s\n' "$@" | sed 's/^/# /'
}

tap_ok() {
	TAP_N=$((TAP_N + 1))
	if [ "$1" = 1 ]; then
		echo "ok $TAP_N - $2"
		TAP_PASS=$((TAP_PASS + 1))
	else
		echo "not ok $TAP_N - $2"
		TAP_FAIL=$((TAP_FAIL + 1))
		[ -z "${3:-}" ] || tap_diag "$3" | head -n 20
		[ -z "${TAP_SHOW:-}" ] || [ ! -s "${TAP_LOG:-}" ] ||
			tail -n "$TAP_SHOW" "$TAP_LOG" | sed 's/^/# /'
	fi
	[ -z "${TAP_SHOW:-}" ] || [ -z "${TAP_LOG:-}" ] || : >"$TAP_LOG"
	[ "$1" = 1 ]
}

tap_status() {
	_tap_rc=$1
	shift
	if [ "$_tap_rc" = 0 ]; then tap_ok 1 "$@"; else tap_ok 0 "$@"; fi
}

tap_check() {
	_tap_d=$1
	shift
	"$@" >>"${TAP_LOG:-/dev/null}" 2>&1
	tap_status $? "$_tap_d"
}

tap_skip() {
	TAP_N=$((TAP_N + 1)) TAP_SKIP=$((TAP_SKIP + 1))
	echo "ok $TAP_N - $2 # SKIP $1"
}

tap_count() {
	_tap_p=$(grep -cE '^ok [0-9]+' "$1")
	_tap_s=$(grep -cE '^ok [0-9]+ .*# SKIP' "$1")
	_tap_f=$(grep -cE '^not ok [0-9]+' "$1")
	TAP_PASS=$((TAP_PASS + _tap_p - _tap_s)) TAP_FAIL=$((TAP_FAIL + _tap_f))
	TAP_SKIP=$((TAP_SKIP + _tap_s))
	TAP_CPASS=$((TAP_CPASS + _tap_p - _tap_s)) TAP_CFAIL=$((TAP_CFAIL + _tap_f))
	TAP_CSKIP=$((TAP_CSKIP + _tap_s))
}

tap_summary() {
	echo "$TAP_PASS passed, $TAP_FAIL failed, $TAP_SKIP skipped"
}

# _tap_split P F S CP CF CS: the split of a summary into cases and checks.
_tap_split() {
	echo "cases: $4 passed, $5 failed, $6 skipped;" \
		"harness checks: $(($1 - $4)) passed, $(($2 - $5)) failed, $(($3 - $6)) skipped"
}

tap_split() {
	_tap_split "$TAP_PASS" "$TAP_FAIL" "$TAP_SKIP" "$TAP_CPASS" "$TAP_CFAIL" "$TAP_CSKIP"
}

tap_done() {
	echo "1..$TAP_N"
	echo "# $(tap_summary)"
	[ "$TAP_FAIL" = 0 ]
}

tap_done_run() {
	echo "1..$TAP_N"
	tap_summary
	[ "$TAP_FAIL" = 0 ]
}

tap_add() {
	TAP_TOT_PASS=$((TAP_TOT_PASS + $1)) TAP_TOT_FAIL=$((TAP_TOT_FAIL + $2))
	TAP_TOT_SKIP=$((TAP_TOT_SKIP + $3))
	TAP_TOT_CPASS=$((TAP_TOT_CPASS + ${4:-0})) TAP_TOT_CFAIL=$((TAP_TOT_CFAIL + ${5:-0}))
	TAP_TOT_CSKIP=$((TAP_TOT_CSKIP + ${6:-0}))
}

tap_total() {
	echo "# $(_tap_split "$TAP_TOT_PASS" "$TAP_TOT_FAIL" "$TAP_TOT_SKIP" \
		"$TAP_TOT_CPASS" "$TAP_TOT_CFAIL" "$TAP_TOT_CSKIP")"
	echo "$TAP_TOT_PASS passed, $TAP_TOT_FAIL failed, $TAP_TOT_SKIP skipped"
}

# tap_read_summary FILE: "P F S" from FILE's last line when it is a
# summary "N passed, N failed, N skipped", else nothing.
tap_read_summary() {
	tail -n 1 "$1" | sed -nE 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/p'
}

# tap_read_split FILE: "CP CF CS", the test cases of FILE's last split
# line (tap_total's "# cases: ..."), else nothing.
tap_read_split() {
	sed -nE 's/^# cases: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped; harness checks: .*/\1 \2 \3/p' \
		"$1" | tail -n 1
}
