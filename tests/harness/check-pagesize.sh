#!/usr/bin/env bash
# arm64: the module builds for Debian's kernel with 16 KiB pages (the
# arm64-16k flavour of 6.12 and 7.x; none of Debian 12's 6.1): 2048
# entries per table, 32 MiB PMDs, 64 GiB PUDs, and with 52-bit addresses
# (LPA2) a PUD level the kernel folds at boot on CPUs without LPA2, whose
# set_pud() then reaches for the kernel's own page table, which no module
# can link to. Builds the module against the headers of the suite's
# arm64-16k kernel of the same release (prepare-kernels.sh unpacks them
# into the build root) and expects a module, without warnings, that
# modpost linked. Prints TAP.
# Usage: check-pagesize.sh SUITE
set -uo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

suite=$1

fr_is_arm64 || fr_die "check-pagesize.sh is for the arm64 lane (FASTREMAP_ARCH=arm64)"
root=$(fr_root "$suite")
k16="$(fr_kver "$(fr_kroot "$suite")")-16k"
kdir="/usr/src/linux-headers-$k16"
if fr_is_upstream "$suite"; then
	# Its build would take another kernel build: Debian's arm64-16k
	# kernels of 6.12 and 7.x stand for 16 KiB pages.
	tap_skip "$suite is built here with 4 KiB pages only" "the module builds for 16 KiB pages"
	tap_done
	exit
elif [ ! -f "${root%/}$kdir/.config" ]; then
	tap_skip "Debian has no $k16 kernel" "the module builds for 16 KiB pages"
	tap_done
	exit
fi
# The premise: these headers are a 16 KiB-page kernel's.
tap_ok "$(grep -qx 'CONFIG_ARM64_16K_PAGES=y' "${root%/}$kdir/.config" && echo 1)" \
	"$k16's configuration has CONFIG_ARM64_16K_PAGES=y"

rel=/var/tmp/fastremap-16k-$(fr_build_id)
fr_stage_src "${root%/}$rel"
# shellcheck disable=SC2046
out=$(fr_in_root "$suite" make -C "$rel/module" KDIR="$kdir" $(fr_kmake_args) FR_TEST_HOOKS=1 2>&1)
rc=$?
tap_ok "$([ "$rc" = 0 ] && [ -s "${root%/}$rel/module/fastremap.ko" ] && echo 1)" \
	"the module builds against $k16's headers (make exited $rc)" "$(tail -n 20 <<<"$out")"
tap_ok "$(grep -qE 'warning:|error:|ERROR:' <<<"$out" || echo 1)" \
	"without warnings or errors" "$(grep -E 'warning:|error:|ERROR:' <<<"$out" | head -n 20)"
# An arm64 module (ELF e_machine 183, EM_AARCH64), with this kernel's
# feature-probe answers.
machine=$(od -An -tu2 -j18 -N2 "${root%/}$rel/module/fastremap.ko" 2>/dev/null | tr -d ' ')
tap_ok "$([ -s "${root%/}$rel/module/compat-generated.h" ] && [ "$machine" = 183 ] && echo 1)" \
	"an arm64 module (ELF machine ${machine:-none}), with this kernel's probe answers"
rm -rf "${root%/}$rel"
tap_done
