#!/usr/bin/env bash
# Builds fastremap.ko for one suite's kernel, with that kernel's headers and
# compiler, into $FR_BUILD/SUITE/fastremap.ko.
# Usage: build-module.sh SUITE [test|release]
# test (the default): with the hooks the test suite drives (FR_TEST_HOOKS);
# release: as DKMS and `make install` build it, for the benchmark.
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/../tests/harness/common.sh"

suite=$1 kind=${2:-test}
root=$(fr_root "$suite")
kver=$(fr_kver "$(fr_kroot "$suite")")
[ -n "$kver" ] || fr_die "$suite: no kernel; run scripts/prepare-kernels.sh"
out="$FR_BUILD/$suite"
mkdir -p "$out"

# The sources are staged inside the build root so a chroot can see them;
# a suite built on the host reads its headers through its root instead.
rel=/var/tmp/fastremap-build-$(fr_build_id)
stage="${root%/}$rel"
if fr_on_host "$suite"; then
	rel="$out/src" stage="$out/src"
fi
fr_stage_src "$stage"
kdir=$(fr_kdir "$suite" "$kver")
fr_is_arm64 || ! fr_on_host "$suite" || kdir="${root%/}$kdir"
case $kind in
test) hooks=1 ;;
release) hooks= ;;
*) fr_die "build kind must be test or release, not $kind" ;;
esac
# FASTREMAP_MUTANT=name plants one bug (module/mutant.h; make check-mutants).
[ -z "${FASTREMAP_MUTANT:-}" ] || [ "$kind" = test ] || fr_die "mutants are test builds"
# shellcheck disable=SC2046
if ! fr_in_root "$suite" make -C "$rel/module" KDIR="$kdir" $(fr_kmake_args) FR_TEST_HOOKS=$hooks \
	${FASTREMAP_MUTANT:+FR_MUTANT="$FASTREMAP_MUTANT"} \
	>"$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log" >&2
	fr_die "$suite: module build failed (log: $out/build.log)"
fi
cp "$stage/module/fastremap.ko" "$out/fastremap.ko"
cp "$stage/module/compat-generated.h" "$out/compat-generated.h"
# The kernel's configuration, with which check-ko.sh and check-decls.sh
# expand symlist.h as this build did.
# Read where the build read it (a debug lane's tree is not laid out as
# Debian's headers are).
fr_in_root "$suite" cat "$kdir/include/generated/autoconf.h" >"$out/autoconf.h" ||
	fr_die "$suite: no include/generated/autoconf.h in $kdir"
echo "$kver" >"$out/kver"
grep -E 'warning:' "$out/build.log" >&2 && fr_die "$suite: compiler warnings" || true
fr_log "$suite: built fastremap.ko for $kver"
