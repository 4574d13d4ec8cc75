#!/usr/bin/env bash
# Boots one suite's kernel under QEMU (software emulation) with the module
# and the test programs in an initramfs; the serial console is the output.
# Usage: vm-run.sh SUITE TESTBIN_DIR LOG [TEST...]
# FASTREMAP_VM_EXTRA=DIR copies DIR's tree into the initramfs root as well
# (a dynamic loader and libraries, for programs that are not static).
# FASTREMAP_VM_ARGS=FILE: "NAME ARGS..." lines, the arguments each test
# program gets (none by default). FASTREMAP_VM_INSMOD_ARGS: the module's
# parameters at its insmod (tests/harness/guest/init). FASTREMAP_VM_APPEND: more kernel
# command-line options. FASTREMAP_VM_INIT: another /init than tests/harness/guest/init.
# FASTREMAP_VM_BOOT_TIMEOUT: seconds a guest may take to start its init
# (default 600; twice that for debug kernels and again for arm64).
# FASTREMAP_VM_QEMU_ARGS: more QEMU options, split at spaces (the bench's
# counting plugin and clock).
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

suite=$1 bindir=$2 log=$3
shift 3
root=$(fr_kroot "$suite")
kver=$(cat "$FR_BUILD/$suite/kver")
vmlinuz="${root%/}/boot/vmlinuz-$kver"
[ -r "$vmlinuz" ] || fr_die "$suite: no $vmlinuz"

stage="$FR_BUILD/$suite/initramfs"
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/tests"
# The guest's own architecture's busybox (arm64: the suite's, unpacked).
if fr_is_arm64; then
	cp "${root%/}/bin/busybox" "$stage/bin/busybox"
else
	cp /bin/busybox "$stage/bin/busybox"
fi
cp "${FASTREMAP_VM_INIT:-$FR_HARNESS/guest/init}" "$stage/init"
chmod 755 "$stage/init"
# The guests' scripts write TAP with the harness's own writer.
cp "$FR_HARNESS/tap.sh" "$stage/tap.sh"
cp "$FR_BUILD/$suite/fastremap.ko" "$stage/"
: >"$stage/tests/order"
for t in "$@"; do
	cp "$bindir/$t" "$stage/tests/"
	echo "$t" >>"$stage/tests/order"
done
# Kernel modules the tests use (zram: swap for the stress test), from the
# suite's own modules tree with their dependencies, decompressed (busybox
# insmod reads plain .ko) and listed in load order for the guest's init.
mkdir -p "$stage/modules"
: >"$stage/modules/order"
moddir="${root%/}/lib/modules/$kver"
for mod in ${FASTREMAP_VM_KMODS-zram}; do
	line=$(grep -E "/$mod\.ko(\.xz|\.zst)?:" "$moddir/modules.dep" 2>/dev/null) || continue
	deps=${line#*:}
	# modules.dep lists a module's dependencies before it must load last.
	for f in $(printf '%s\n' $deps | tac) "${line%%:*}"; do
		name=$(basename "$f" | sed -E 's/\.ko(\.xz|\.zst)?$//')
		grep -qx "$name" "$stage/modules/order" && continue
		case $f in
		*.xz) xz -dc "$moddir/$f" >"$stage/modules/$name.ko" ;;
		*.zst) zstd -qdc "$moddir/$f" >"$stage/modules/$name.ko" ;;
		*) cp "$moddir/$f" "$stage/modules/$name.ko" ;;
		esac
		echo "$name" >>"$stage/modules/order"
	done
done

if [ -n "${FASTREMAP_VM_ARGS:-}" ]; then
	cp "$FASTREMAP_VM_ARGS" "$stage/tests/args"
fi
# FASTREMAP_VM_INSMOD_ARGS: module parameters for the guest's insmod of
# fastremap.ko (test builds' parameters, e.g. copy_tables=1).
if [ -n "${FASTREMAP_VM_INSMOD_ARGS:-}" ]; then
	[[ $FASTREMAP_VM_INSMOD_ARGS =~ ^[a-z_]+=[0-9a-z_]+(\ [a-z_]+=[0-9a-z_]+)*$ ]] ||
		fr_die "FASTREMAP_VM_INSMOD_ARGS: NAME=VALUE words"
	echo "$FASTREMAP_VM_INSMOD_ARGS" >"$stage/insmod-args"
fi
if [ -n "${FASTREMAP_VM_EXTRA:-}" ]; then
	cp -a "$FASTREMAP_VM_EXTRA"/. "$stage"/
fi
(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) >"$FR_BUILD/$suite/initrd.gz"

# KASAN, lockdep and DEBUG_PAGEALLOC make the debug lane's kernel several
# times slower under emulation.
# 900 s: at load 15 on two cores t_remap_diff alone took 331 s of the
# 600 s this used to allow, and the bookworm guest timed out.
limit=900
fr_is_debug "$suite" && limit=7200
# 16 KiB pages: what the programs size in PMDs is 16 times larger. The
# trixie-16k guest ran for 845 s (t_remap_diff 377 s), and t_remap_stale
# keeps 64 rounds of two PMDs mapped: 4 GiB at 32 MiB PMDs.
mem=4096
if fr_is_16k "$suite"; then
	limit=1800 mem=8192
fi
# arm64: the virt board; -cpu max has BTI, pointer authentication, range
# TLBI and MTE's absence; pauth-impdef=on emulates PAC with QEMU's cheap
# algorithm instead of QARMA (same instructions, several times faster
# under TCG). Debian's arm64 images are plain Image files (no EFI zboot),
# which -kernel boots directly. The emulated CPU is slower than x86's.
if fr_is_arm64; then
	qemu=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on) console=ttyAMA0
	limit=$((limit * 2))
else
	qemu=(qemu-system-x86_64 -cpu max) console=ttyS0
	# The debug lanes' CPU has no 5-level paging. With it, an interrupt
	# in identify_cpu()'s window where boot_cpu_data's feature bits are
	# zeroed (LA57 among them, so KASAN computes its shadow bounds for 4
	# levels) made KASAN report the 5-level direct map's irq_desc lock as
	# a wild-memory-access at 0.004 s of boot (6.1 and 7.2), which turned
	# lockdep off for the whole run.
	# Most machines page with 4 levels, and TASK_SIZE follows (128 TiB
	# against 64 PiB: the 6.1 debug lane found a 128 TiB growth the module
	# declined where mremap(2) says ENOMEM), so trixie's lane pages with 4
	# too; bookworm's and sid's keep -cpu max's 5. Each kernel runs with
	# both: 6.1 and 7.2 with 4 in their debug lanes.
	if fr_is_debug "$suite" || [ "$suite" = trixie ]; then
		qemu=(qemu-system-x86_64 -cpu max,la57=off)
	fi
fi
# The debug kernels' soft-lockup detector (t_move_order arms it to panic
# for its races, and lowers the threshold for them) fired at boot at the
# default threshold (20 s): 6.1's debug_vm_pgtable frees a 1 GiB range
# page by page under KASAN and DEBUG_PAGEALLOC with no scheduling point,
# 26 s of a loaded TCG host's time. 60 is the largest threshold (120 s).
debug_append=
fr_is_debug "$suite" && debug_append=watchdog_thresh=60
# A guest whose init has not started after this long is stopped (and
# booted again below): once a 6.1 debug guest sat at "Booting from ROM"
# for 21 minutes, with 2 minutes of vCPU time, and would have waited for
# the 2-hour limit. Boots take 5-60 s under TCG (debug kernels, arm64 and
# a loaded host the longest).
boot_limit=${FASTREMAP_VM_BOOT_TIMEOUT:-600}
fr_is_debug "$suite" && boot_limit=$((boot_limit * 2))
fr_is_arm64 && boot_limit=$((boot_limit * 2))
pidfile="$FR_BUILD/$suite/qemu.pid"
# panic=-1 with -no-reboot: a panic ends QEMU at once instead of hanging.
# The log is line-buffered, so that the watchdog sees init's first line.
boot() {
	local wd
	rm -f "$pidfile"
	: >"$log"
	(
		waited=0
		while [ "$waited" -lt "$boot_limit" ]; do
			sleep 5
			waited=$((waited + 5))
			grep -q 'FR-KERNEL ' "$log" && exit 0
		done
		pid=$(cat "$pidfile" 2>/dev/null) || exit 0
		echo "FR-BOOT-WATCHDOG: no init after $boot_limit s, stopping QEMU" >&2
		kill "$pid" 2>/dev/null
	) &
	wd=$!
	local extra=()
	read -r -a extra <<<"${FASTREMAP_VM_QEMU_ARGS:-}"
	timeout "${FASTREMAP_VM_TIMEOUT:-$limit}" "${qemu[@]}" "${extra[@]}" -pidfile "$pidfile" \
		-m "${FASTREMAP_VM_MEM:-$mem}" -smp 2 -nographic -no-reboot \
		-kernel "$vmlinuz" -initrd "$FR_BUILD/$suite/initrd.gz" \
		-append "console=$console quiet loglevel=3 panic=-1 transparent_hugepage=madvise $debug_append ${FASTREMAP_VM_APPEND:-}" \
		</dev/null 2>&1 | stdbuf -oL tr -d '\r' >"$log" || true
	kill "$wd" 2>/dev/null || true
	wait "$wd" 2>/dev/null || true
}
boot
# Under TCG a guest rarely dies in early boot while the kernel patches its
# own text ("Oops: int3"), before any module or test ran, or hangs there
# (stopped by the watchdog above). Such a guest is booted again, twice at
# most (each such log kept beside); one that died later is not. (The serial line may start with the firmware's escape
# sequences: the marker is not anchored.)
for try in 2 3; do
	grep -q 'FR-KERNEL ' "$log" && break
	mv "$log" "$log.boot$((try - 1))"
	fr_log "$suite: the guest died or hung before its init ran; boot $try (log of the last: $log.boot$((try - 1)))"
	boot
done
