#!/usr/bin/env bash
# make check's suite: tests/run.sh on the x86-64 lane, then on the arm64
# lane (FASTREMAP_ARCH=arm64), one after the other: each lane's guests
# use both of the machine's cores, so running the lanes side by side only
# stretches both towards their VM time limits. Each lane prints its own
# summary; the last line adds them up as "N passed, N failed, N skipped".
# FASTREMAP_ARCHES="amd64" (or "arm64") runs one lane.
# FASTREMAP_AMD64_DIFF_OPS=N, FASTREMAP_ARM64_DIFF_OPS=N: that lane's
# t_remap_diff makes N random operations (make check; tests/run.sh's
# FASTREMAP_DIFF_OPS); unset, the program's own count.
# FASTREMAP_ARM64_LATENCY_MREMAP=0: the arm64 lane's t_remap_latency
# without its mremap(2) reference runs (make check).
# FASTREMAP_CHECK_DKMS_ARM64=1 (make check-all): then DKMS on arm64
# (scripts/check-dkms-arm64.sh), counted in the same last line; too slow
# for make check (README, "DKMS on arm64").
set -uo pipefail
. "$(dirname "$0")/../scripts/common.sh"

pass=0 fail=0 skip=0 rc=0
for arch in ${FASTREMAP_ARCHES:-amd64 arm64}; do
	log="$FR_TOP/build/check-$arch.log"
	mkdir -p "$FR_TOP/build"
	echo "# ===== lane $arch"
	ops=${FASTREMAP_AMD64_DIFF_OPS:-} ref=1
	if [ "$arch" = arm64 ]; then
		ops=${FASTREMAP_ARM64_DIFF_OPS:-}
		ref=${FASTREMAP_ARM64_LATENCY_MREMAP:-1}
	fi
	FASTREMAP_ARCH=$arch FASTREMAP_DIFF_OPS=$ops FASTREMAP_LATENCY_MREMAP=$ref \
		"$FR_TOP/tests/run.sh" | tee "$log"
	r=${PIPESTATUS[0]}
	[ "$r" = 0 ] || rc=1
	# The lane's last line: "N passed, N failed, N skipped".
	read -r p f s < <(tail -n 1 "$log" |
		sed -nE 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/p')
	if [ -z "${p:-}" ]; then
		echo "# lane $arch: no summary line"
		fail=$((fail + 1)) rc=1
		continue
	fi
	echo "# lane $arch: $p passed, $f failed, $s skipped"
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	p=
done
if [ "${FASTREMAP_CHECK_DKMS_ARM64:-}" = 1 ]; then
	log="$FR_TOP/build/check-dkms-arm64.log"
	mkdir -p "$FR_TOP/build"
	echo "# ===== DKMS on arm64"
	"$FR_TOP/scripts/check-dkms-arm64.sh" | tee "$log"
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
	read -r p f s < <(tail -n 1 "$log" |
		sed -nE 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/p')
	if [ -z "${p:-}" ]; then
		echo "# DKMS on arm64: no summary line"
		fail=$((fail + 1)) rc=1
	else
		echo "# DKMS on arm64: $p passed, $f failed, $s skipped"
		pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	fi
fi
echo "$pass passed, $fail failed, $skip skipped"
exit "$rc"
