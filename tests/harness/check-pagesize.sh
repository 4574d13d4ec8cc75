#!/usr/bin/env bash
# arm64: the module refuses to build for a kernel whose pages are not
# 4 KiB (module/arch.h), with a message saying so. Debian ships such a
# kernel: the arm64-16k flavour of 6.12 and 7.x (none of Debian 12's 6.1).
# Builds the module against the headers of the suite's arm64-16k kernel of
# the same release (prepare-kernels.sh unpacks them into the build root)
# and expects that build to fail on the module's #error, not on anything
# else. Prints TAP.
# Usage: check-pagesize.sh SUITE
set -uo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

suite=$1

fr_is_arm64 || fr_die "check-pagesize.sh is for the arm64 lane (FASTREMAP_ARCH=arm64)"
root=$(fr_root "$suite")
k16="$(fr_kver "$(fr_kroot "$suite")")-16k"
kdir="/usr/src/linux-headers-$k16"
if [ ! -f "${root%/}$kdir/.config" ]; then
	tap_skip "Debian has no $k16 kernel" "the module refuses to build for 16 KiB pages"
	tap_done
	exit
fi
# The premise: these headers are a 16 KiB-page kernel's.
tap_ok "$(grep -qx 'CONFIG_ARM64_16K_PAGES=y' "${root%/}$kdir/.config" && echo 1)" \
	"$k16's configuration has CONFIG_ARM64_16K_PAGES=y"

rel=/var/tmp/fastremap-16k-$(fr_build_id)
fr_stage_src "${root%/}$rel"
# shellcheck disable=SC2046
out=$(fr_in_root "$suite" make -C "$rel/module" KDIR="$kdir" $(fr_kmake_args) 2>&1)
rc=$?
tap_ok "$([ "$rc" != 0 ] && [ ! -e "${root%/}$rel/module/fastremap.ko" ] && echo 1)" \
	"the module does not build against $k16's headers (make exited $rc)" "$(tail -n 20 <<<"$out")"
# The only error is the module's own (the feature probes ran: the build
# got as far as compiling the module's sources).
msg='#error "fastremap supports 4 KiB pages only'
tap_ok "$(grep -qF "$msg" <<<"$out" && [ "$(grep -c 'error:' <<<"$out")" = "$(grep -c 'error: #error' <<<"$out")" ] && echo 1)" \
	"it stops at the module's message: fastremap supports 4 KiB pages only" "$(tail -n 20 <<<"$out")"
grep -F 'fastremap supports 4 KiB pages only' <<<"$out" | head -n 1 | sed 's/^/# /'
rm -rf "${root%/}$rel"
tap_done
