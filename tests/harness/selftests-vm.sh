#!/usr/bin/env bash
# Runs the kernel's mremap selftests (built from the suite's linux-source by
# selftests.sh) in the suite's VM, each plainly and under the LD_PRELOAD
# shim (tests/harness/guest/t_selftests). Prints the guest's TAP stream; exits
# non-zero if a case failed, the runner did not finish with 0, the VM did
# not run to the end, or the guest kernel log has a BUG/WARNING/Oops line.
# Usage: selftests-vm.sh SUITE LOG
# Needs $FR_BUILD/SUITE/fastremap.ko (scripts/build-module.sh SUITE; built
# here if missing).
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

suite=$1 log=$2
out="$FR_BUILD/$suite/selftests"
if [ ! -r "$FR_BUILD/$suite/fastremap.ko" ] || [ ! -r "$FR_BUILD/$suite/kver" ]; then
	"$FR_TOP/scripts/build-module.sh" "$suite" >&2
fi

# The shim, and the selftests (dynamic, linked against the host's glibc).
make -C "$FR_TOP/userspace" --no-print-directory WERROR=1 BUILD="$FR_BUILD/userspace" >"$FR_BUILD/$suite/selftests-make.log" 2>&1 ||
	{ tail -n 30 "$FR_BUILD/$suite/selftests-make.log" >&2; fr_die "building userspace failed"; }
shim=$(find "$FR_BUILD/userspace" -name libfastremap-preload.so -type f | head -n 1)
[ -n "$shim" ] || fr_die "no libfastremap-preload.so under $FR_BUILD/userspace"
"$FR_HARNESS/selftests.sh" "$suite" "$out/bin" >&2
# t_preload: the shim in a program of our own (cancellation, SIGPIPE, and
# set-user-ID copies under /etc/ld.so.preload in the guest).
make -C "$FR_TOP" --no-print-directory WERROR=1 BUILD="$FR_BUILD" "$FR_BUILD/bin/t_preload" \
	>>"$FR_BUILD/$suite/selftests-make.log" 2>&1 ||
	{ tail -n 30 "$FR_BUILD/$suite/selftests-make.log" >&2; fr_die "building t_preload failed"; }

# The extra initramfs tree: loader, the libraries ldd names, shim, tests.
extra="$out/extra" bindir="$out/vmbin"
rm -rf "$extra" "$bindir"
mkdir -p "$extra/selftests" "$extra/lib" "$bindir"
tests=$(cat "$out/bin/TESTS")
for t in $tests; do
	cp "$out/bin/$t" "$extra/selftests/"
done
# shellcheck disable=SC2086
printf '%s\n' $tests >"$extra/selftests/ORDER"
cp "$FR_BUILD/bin/t_preload" "$extra/selftests/"
cp "$shim" "$extra/lib/libfastremap-preload.so"
for f in $(for b in "$extra"/selftests/mremap_* "$extra/selftests/t_preload" "$shim"; do ldd "$b"; done |
	awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u); do
	# Each at the path ldd gave (for the loader, /lib64/..., its target
	# copied in place of the symlink), so ld.so's built-in paths find them.
	mkdir -p "$extra$(dirname "$f")"
	cp -L "$f" "$extra$f"
done
# pthread_cancel() loads libgcc_s.so.1 to unwind (t_preload cancels a
# thread): next to the libc ldd named, where ld.so looks.
libc=$(ldd "$extra/selftests/t_preload" | awk '$1 == "libc.so.6" { print $3 }')
cp -L "$(gcc -print-file-name=libgcc_s.so.1)" "$extra$(dirname "$libc")/libgcc_s.so.1"
cp "$FR_HARNESS/guest/t_selftests" "$bindir/t_selftests"
chmod 755 "$bindir/t_selftests"

fr_log "$suite: booting the VM for the mremap selftests ($(cat "$out/bin/SOURCE"))"
start=$(date +%s)
FASTREMAP_VM_EXTRA="$extra" "$FR_HARNESS/vm-run.sh" "$suite" "$bindir" "$log" t_selftests
fr_log "$suite: VM finished in $(($(date +%s) - start)) s"

tap=$(sed -n '/^FR-BEGIN t_selftests$/,/^FR-END t_selftests /p' "$log" | sed '1d;$d')
rc=$(sed -n 's/^FR-END t_selftests \([0-9]*\)$/\1/p' "$log")
printf '%s\n' "$tap"
bad=0
if [ -z "$tap" ] || ! printf '%s\n' "$tap" | grep -qE '^1\.\.[1-9]'; then
	echo "# no TAP stream from t_selftests (log: $log)"
	bad=1
fi
printf '%s\n' "$tap" | grep -qE '^not ok [0-9]+' && bad=1
[ "$rc" = 0 ] || { echo "# t_selftests exited ${rc:-(did not finish)}"; bad=1; }
grep -q '^FR-DONE$' "$log" || { echo "# the VM did not run to the end"; bad=1; }
dmesg=$(sed -n '/^FR-DMESG-BEGIN$/,/^FR-DMESG-END$/p' "$log")
if [ -z "$dmesg" ]; then
	echo "# no guest kernel log captured"
	bad=1
elif printf '%s\n' "$dmesg" | grep -qE "$FR_BAD_LOG"; then
	echo "# guest kernel log:"
	printf '%s\n' "$dmesg" | grep -E "$FR_BAD_LOG" | head -n 40 | sed 's/^/#   /'
	bad=1
else
	echo "# guest kernel log clean (no BUG/WARNING/Oops)"
fi
exit $bad
