#!/usr/bin/env bash
# make check's suite: tests/harness/run.sh on the x86-64 lane, then on the arm64
# lane (FASTREMAP_ARCH=arm64), one after the other: each lane's guests
# use both of the machine's cores, so running the lanes side by side only
# stretches both towards their VM time limits. Each lane prints its own
# summary; the last lines add them up: the test cases and the harness's
# own checks apart, then "N passed, N failed, N skipped".
# FASTREMAP_ARCHES="amd64" (or "arm64") runs one lane.
# FASTREMAP_AMD64_DIFF_OPS=N, FASTREMAP_ARM64_DIFF_OPS=N: that lane's
# t_remap_diff makes N random operations (make check; tests/harness/run.sh's
# FASTREMAP_DIFF_OPS); unset, the program's own count.
# FASTREMAP_ARM64_LATENCY_MREMAP=0: the arm64 lane's t_remap_latency
# without its mremap(2) reference runs (make check).
# FASTREMAP_CHECK_DKMS_ARM64=1 (make check-all): then DKMS on arm64
# (tests/harness/check-dkms-arm64.sh), counted in the same last line; too slow
# for make check (tests/README.md, "DKMS on arm64").
set -uo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

mkdir -p "$FR_TOP/build"
rc=0
logs=()
# part NAME LOG COMMAND...: runs one part, its output shown and kept in
# LOG, and adds the summary of its last line to the totals (its test
# cases from the split line before it; without one, all of them).
part() {
	local name=$1 log=$2 p f s cp cf cs
	shift 2
	logs+=("$log")
	"$@" | tee "$log"
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
	read -r p f s < <(tap_read_summary "$log")
	if [ -z "${p:-}" ]; then
		echo "# $name: no summary line"
		tap_add 0 1 0
		rc=1
		return
	fi
	read -r cp cf cs < <(tap_read_split "$log")
	echo "# $name: $p passed, $f failed, $s skipped"
	tap_add "$p" "$f" "$s" "${cp:-$p}" "${cf:-$f}" "${cs:-$s}"
}

for arch in ${FASTREMAP_ARCHES:-amd64 arm64}; do
	echo "# ===== lane $arch"
	ops=${FASTREMAP_AMD64_DIFF_OPS:-} ref=1
	if [ "$arch" = arm64 ]; then
		ops=${FASTREMAP_ARM64_DIFF_OPS:-}
		ref=${FASTREMAP_ARM64_LATENCY_MREMAP:-1}
	fi
	part "lane $arch" "$FR_TOP/build/check-$arch.log" env FASTREMAP_ARCH="$arch" \
		FASTREMAP_DIFF_OPS="$ops" FASTREMAP_LATENCY_MREMAP="$ref" "$FR_HARNESS/run.sh"
done
if [ "${FASTREMAP_CHECK_DKMS_ARM64:-}" = 1 ]; then
	echo "# ===== DKMS on arm64"
	part "DKMS on arm64" "$FR_TOP/build/check-dkms-arm64.log" "$FR_HARNESS/check-dkms-arm64.sh"
fi
# Every failure again, with the stream it belongs to and its first
# diagnostic lines, just above the totals: where only the tail of a run's
# output is kept (CI), the tail names what failed.
failed=$(for l in "${logs[@]}"; do
	awk -v lane="$(basename "$l" .log)" '
		/^# [A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/ { stream = $2; n = 0; next }
		/^not ok/ { print lane " (in or after " stream "): " $0; n = 2; next }
		n > 0 && /^#/ { print "    " $0; n--; next }
		{ n = 0 }' "$l"
done | head -n 30)
if [ -n "$failed" ]; then
	echo "# ===== what failed"
	printf '%s\n' "$failed" | sed 's/^/# /'
fi
tap_total
exit "$rc"
