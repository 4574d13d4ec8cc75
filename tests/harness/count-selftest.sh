#!/usr/bin/env bash
# The bench's counting plugin (bench/plugin/fr_count.c) checked on this
# machine, without a guest kernel, in seconds:
#  - its instruction decoding (bench/plugin/decode-test.c): markers, atomic
#    read-modify-writes and TLB invalidations of both architectures;
#  - its counts, exact, of known instruction sequences between the bench's
#    markers (bench/plugin/selftest.c), run under QEMU's user-mode emulator
#    (qemu-x86_64 from qemu-user; the static qemu-user-static has no plugin
#    support) with the plugin loaded: x86-64, and arm64 where the arm64
#    build root's cross compiler is there (prepare-kernels.sh; else skipped).
# TAP; the last line "N passed, N failed, N skipped".
# Usage: tests/harness/count-selftest.sh
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

out="$FR_TOP/build/count-selftest"
mkdir -p "$out"
log="$out/build.log"
: >"$log"

tap_status "$(make -C "$FR_TOP/bench/plugin" --no-print-directory OUT="$out" \
	"$out/fr_count.so" "$out/decode-test" "$out/selftest" >>"$log" 2>&1; echo $?)" \
	"the plugin, its decoding test and the self-check program build" "$(tail -n 20 "$log")" ||
	{ tap_done_run; exit 1; }

"$out/decode-test" >"$out/decode.tap" || true
tap_count "$out/decode.tap" || true
grep '^not ok' "$out/decode.tap" | sed 's/^/# /' || true

# The figures selftest.c's head promises, per region id (N = 1000):
# "id regions insns_user insns_kernel loads stores atomics tlbi ipis".
# Region 2's second instruction is a register swap on x86-64 (no access),
# a load-acquire on arm64 (a load, no read-modify-write).
expect() { # expect ARCH
	local loads2=1000
	[ "$1" = arm64 ] && loads2=2000
	printf '%s\n' "0x1 2 6002 0 2000 2000 2000 0 0" "0x2 1 4001 0 $loads2 1000 1000 0 0" \
		"0x3 1 4001 0 1000 1000 0 0 0" "0x4 1 0 0 0 0 0 0 0"
}

# check ARCH QEMU BINARY: runs the self-check and compares its counts.
check() {
	local arch=$1 qemu=$2 bin=$3 res="$out/counts-$1.txt" got want
	want=$(expect "$arch")
	rm -f "$res"
	if ! "$qemu" -plugin "$out/fr_count.so,out=$res" "$bin" >/dev/null 2>"$out/$arch.err"; then
		tap_ok 0 "$arch: the self-check ran under $qemu with the plugin" "$(cat "$out/$arch.err")" || true
		return
	fi
	tap_ok "$(grep -q '^# fr_count: arch=[a-z0-9_]* errors=0 open_at_exit=0$' "$res" && echo 1)" \
		"$arch: every region opened and closed once (errors=0)" "$(head -n 1 "$res")" || true
	got=$(awk '$1 ~ /^0x[1-4]$/ { print $1, $2, $3, $4, $5, $6, $7, $8, $9 }' "$res" | sort)
	tap_ok "$([ "$got" = "$want" ] && echo 1)" \
		"$arch: exact counts: atomics, loads, stores, instructions (regions 1-4)" \
		"$(printf 'expected:\n%s\ngot:\n%s' "$want" "$got")" || true
	# Region 5: the handler address sent at run time, translated again.
	tap_ok "$(awk '$1 == "0x5" && $9 == 10 { ok = 1 } END { print ok + 0 }' "$res")" \
		"$arch: a function's address sent by markers is counted as IPIs on another vCPU only (10 runs, 3 on the region's own not)" \
		"$(grep '^0x5 ' "$res" || echo 'no region 5')" || true
	# Region 6: another vCPU's atomics outside a flush IPI are not the region's.
	tap_ok "$(awk '$1 == "0x6" && $7 < 1000 { ok = 1 } END { print ok + 0 }' "$res")" \
		"$arch: another vCPU's work outside a flush IPI is left out (its 1000 atomics)" \
		"$(grep '^0x6 ' "$res" || echo 'no region 6')" || true
	# The controls: the same counts, wrong by one, must not compare equal.
	tap_ok "$([ "$(echo "$got" | awk '$1 == "0x2" { $7 -= 1 } { print }')" != "$want" ] && echo 1)" \
		"$arch: positive control: one atomic fewer is seen as a difference" || true
}

if command -v qemu-x86_64 >/dev/null; then
	check x86_64 qemu-x86_64 "$out/selftest"
else
	tap_skip "no qemu-x86_64 (qemu-user; scripts/deps.sh installs it)" "x86_64: counts"
fi

# arm64: the self-check cross-built in the arm64 programs' build root.
a64="$out/selftest-arm64"
cross_arm64() {
	FASTREMAP_ARCH=arm64
	# shellcheck source=tests/harness/common.sh
	. "$FR_HARNESS/common.sh"
	fr_cross "$@"
}
if command -v qemu-aarch64 >/dev/null &&
	(cross_arm64 make -C "$FR_TOP/bench/plugin" --no-print-directory OUT="$out" \
			TARGET_CC=aarch64-linux-gnu-gcc SELFTEST="$a64" "$a64") \
		>>"$log" 2>&1 && [ -x "$a64" ]; then
	check arm64 qemu-aarch64 "$a64"
else
	tap_skip "no arm64 cross compiler (the arm64 build root, prepare-kernels.sh) or qemu-aarch64" \
		"arm64: counts"
fi
tap_done_run
