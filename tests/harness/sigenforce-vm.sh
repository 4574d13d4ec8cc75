#!/usr/bin/env bash
# Secure Boot, as far as a VM without UEFI shows it: a guest of the suite's
# kernel booted with module.sig_enforce=1 refuses the unsigned (test
# build) fastremap.ko with the kernel messages README explains, and
# fastremapctl info says why and what to do. Prints TAP.
# Usage: sigenforce-vm.sh SUITE LOG   (after build-module.sh SUITE)
set -uo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

suite=$1 log=$2
bin="$FR_BUILD/$suite/sigenforce-bin"
mkdir -p "$bin"
make -C "$FR_TOP" --no-print-directory userspace >/dev/null || fr_die "userspace build failed"
# shellcheck disable=SC2086
${CC:-cc} -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -static -I"$FR_TOP/userspace" -I"$FR_TOP/uapi" -o "$bin/fastremapctl" \
	"$FR_TOP/userspace/fastremapctl.c" "$FR_BUILD/userspace/libfastremap.a" 2>"$bin/build.log" ||
	fr_die "static fastremapctl build failed"
FASTREMAP_VM_INIT="$FR_HARNESS/guest/init-sigenforce" FASTREMAP_VM_KMODS= \
	FASTREMAP_VM_APPEND="module.sig_enforce=1" FASTREMAP_VM_TIMEOUT=${FASTREMAP_VM_TIMEOUT:-300} \
	"$FR_HARNESS/vm-run.sh" "$suite" "$bin" "$log" fastremapctl
out=$(tr -d '\r' <"$log")
ok() { tap_ok "$1" "$suite: $2"; }
ok "$(grep -qx 'FR-SIGENFORCE Y' <<<"$out" && echo 1)" "booted with module.sig_enforce=1"
ok "$(grep -q '^FR-INSMOD [1-9]' <<<"$out" && ! grep -qx 'FR-LOADED' <<<"$out" && echo 1)" "insmod of the unsigned module fails, nothing loaded"
ok "$(grep -q '^FR-INSMOD-MSG .*Key was rejected by service' <<<"$out" && echo 1)" "insmod says: Key was rejected by service"
ok "$(grep -q 'Loading of unsigned module is rejected' <<<"$out" && echo 1)" "the kernel logs: Loading of unsigned module is rejected"
ctl=$(sed -n '/^FR-CTL-BEGIN/,/^FR-CTL-END/p' <<<"$out")
printf '%s\n' "$ctl" | sed '1d;$d;s/^/# /'
ok "$(grep -q '^signatures: .*module.sig_enforce Y' <<<"$ctl" &&
	grep -q 'refused a module for its signature: .*Loading of unsigned module is rejected' <<<"$ctl" &&
	grep -q 'mokutil --import' <<<"$ctl" && grep -q '^FR-CTL-END 3$' <<<"$ctl" && echo 1)" \
	"fastremapctl info names the signature refusal and the DKMS key to enrol (exit 3)"
tap_done
