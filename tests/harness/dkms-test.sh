#!/usr/bin/env bash
# Proves dkms.conf works: dkms add and dkms build for one suite's kernel,
# inside that suite's build root, with private dkms trees so nothing of the
# machine's own dkms state is touched. Prints a TAP stream.
# Usage: dkms-test.sh SUITE
set -uo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

suite=$1
root=$(fr_root "$suite")
kver=$(fr_kver "$root")
ver=$(cat "$FR_TOP/VERSION")
base=/var/tmp/fastremap-dkms-$(fr_build_id)
hostbase="${root%/}$base"
rm -rf "$hostbase"
mkdir -p "$hostbase/tree" "$hostbase/src"
fr_stage_src "$hostbase/src/fastremap-$ver"
log="$FR_BUILD/$suite/dkms.log"
mkdir -p "$FR_BUILD/$suite"
dk() { fr_in_root "$suite" dkms --dkmstree "$base/tree" --sourcetree "$base/src" "$@"; }

TAP_LOG=$log
t() { # t DESCRIPTION COMMAND...: a case named for the suite
	local d=$1
	shift
	tap_check "$suite: $d" "$@" || tap_diag "log: $log"
}
: >"$log"
t "dkms.conf version matches VERSION" grep -q "PACKAGE_VERSION=\"$ver\"" "$FR_TOP/dkms.conf"
t "dkms add" dk add -m fastremap -v "$ver"
t "dkms build for $kver" dk build -m fastremap -v "$ver" -k "$kver"
t "dkms built fastremap.ko" sh -c "ls $hostbase/tree/fastremap/$ver/$kver/*/module/fastremap.ko*"
# Which check of the internal prototypes ran (docs/design.md, "Internal prototypes").
t "dkms's make.log says which prototype check ran" sh -c "find $hostbase/tree -name make.log \
	-exec grep -h 'fastremap: kernel function prototypes:' {} + | grep ."
# The hooks the tests drive exist only in test builds (FR_TEST_HOOKS), and
# they are all the module's parameters: the module users get has none.
t "dkms-built module has no (test-only) parameter" sh -c "ko=\$(ls $hostbase/tree/fastremap/$ver/$kver/*/module/fastremap.ko*) &&
	[ -z \"\$(modinfo -p \$ko)\" ]"
# Secure Boot: DKMS signs what it builds with its own key (README).
ko=$(ls "$hostbase"/tree/fastremap/"$ver"/"$kver"/*/module/fastremap.ko* 2>/dev/null | head -n 1)
# DKMS signs since 3.0 (Debian 12); bullseye's 2.8 makes no key and
# leaves modules unsigned (there a signing kernel needs the module signed
# by hand: README).
dkmsver=$(fr_in_root "$suite" dpkg-query -W -f='${Version}' dkms 2>/dev/null)
if dpkg --compare-versions "${dkmsver:-0}" lt 3; then
	why="DKMS $dkmsver does not sign modules"
	tap_skip "$why" "$suite: dkms-built module is signed by the DKMS key"
	tap_skip "$why" "$suite: its signature verifies against DKMS's certificate"
else
	t "dkms-built module is signed by the DKMS key" sh -c "modinfo -F signer '$ko' | grep -qx 'DKMS module signing key'"
	t "its signature verifies against DKMS's certificate" "$FR_HARNESS/verify-modsig.sh" "$ko" "${root%/}/var/lib/dkms/mok.pub"
fi
t "dkms remove" dk remove -m fastremap -v "$ver" --all
# make dkms-install's loop: installs for each kernel with headers, though
# the running kernel (this machine's) has none, and says so.
cp "$FR_TOP/scripts/dkms-install.sh" "$hostbase/"
fr_in_root "$suite" env FASTREMAP_DKMS_ARGS="--dkmstree $base/tree --sourcetree $base/src" \
	"$base/dkms-install.sh" "$ver" >"$hostbase/install.out" 2>&1
rc=$?
cat "$hostbase/install.out" >>"$log"
t "make dkms-install's loop installs for $kver (exit $rc)" [ "$rc" = 0 ]
t "it names the kernels it installed for" grep -q "installed by DKMS for:.* $kver" "$hostbase/install.out"
t "dkms remove after dkms-install" dk remove -m fastremap -v "$ver" --all
rm -rf "$hostbase"
tap_done
