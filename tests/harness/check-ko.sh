#!/usr/bin/env bash
# Checks a built fastremap.ko for calls through pointers, which kernel IBT
# faults on when the target is a sealed function (docs/design.md: "Internal kernel
# functions and kernel IBT"). Prints TAP.
# Usage: check-ko.sh KO COMPAT_GENERATED_H
#  - no retpoline thunk (__x86_indirect_*) and no `call *`/`jmp *` in the
#    module's code, but for the allowlist below;
#  - for every internal function module/symlist.h lists (as the kernel's
#    feature probes, COMPAT_GENERATED_H, select them), a static call key,
#    at least one call of its trampoline and a .static_call_sites entry,
#    which the kernel patches into a direct call at load; and no static
#    call key the list does not name.
set -uo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

ko=$1 compat=$2
[ -r "$ko" ] && [ -r "$compat" ] || fr_die "usage: check-ko.sh KO COMPAT_GENERATED_H"

# MODULE_VERSION comes from VERSION, the one place a version is written.
modver=$(readelf -p .modinfo "$ko" 2>/dev/null | awk '$NF ~ /^version=/ { sub(/^version=/, "", $NF); print $NF }')
tap_ok "$([ "$modver" = "$(cat "$FR_TOP/VERSION")" ] && echo 1)" \
	"the module's version is VERSION's ($modver)"

# No static call key (in $syms, objdump -t) that symlist.h does not name.
no_stray_keys() {
	local stray
	stray=$(printf '%s\n' "$syms" | grep -oE '__SCK__fr_sc_[A-Za-z0-9_]+$' | sort -u |
		while read -r k; do grep -qx "${k#__SCK__fr_sc_}" <<<"$fns" || echo "$k"; done)
	tap_ok "$([ -z "$stray" ] && echo 1)" "no static call key outside symlist.h" "$stray"
}

# The functions the module must call, expanded by the preprocessor exactly
# as the module's build expands them.
fns=$(fr_expand_symlist "$(dirname "$compat")" 'fn name' | tr ' ;' '\n\n' |
	awk 'p { sub(/^fr_sc_/, ""); print; p = 0 } $0 == "fn" { p = 1 }')

# arm64 (Debian's gcc-built kernels have no static calls there): every
# internal function is called through its key's pointer, which the load
# checks (symbols.c); what a build can check is that each has its key,
# that the names arm64's inlines call unexported are the module's own
# forwarders, and that no key is stray.
if [ "$(od -An -tx1 -j18 -N1 "$ko" | tr -d ' ')" = b7 ]; then
	syms=$(aarch64-linux-gnu-objdump -t "$ko") || fr_die "objdump -t $ko failed"
	tap_ok "$([ "$(printf '%s\n' "$fns" | grep -c .)" -ge 15 ] && echo 1)" \
		"symlist.h names the internal functions ($(printf '%s\n' "$fns" | grep -c .))"
	for f in $fns; do
		k=$(printf '%s\n' "$syms" | grep -cE "[[:space:]]\.(data|bss)[^[:space:]]*[[:space:]]+[0-9a-f]+[[:space:]]+__SCK__fr_sc_$f\$")
		tap_ok "$([ "$k" = 1 ] && echo 1)" "$f: has the module's static call key (arm64: called through it)"
	done
	und=$(printf '%s\n' "$syms" | awk '$2 == "*UND*" || $3 == "*UND*" { print $NF }' | sort -u)
	for f in mte_sync_tags sme_do_dvmsync __mmu_notifier_arch_invalidate_secondary_tlbs; do
		grep -qx "$f" <<<"$fns" || continue
		d=$(printf '%s\n' "$syms" | grep -cE "^[0-9a-f]+ g +F \.text[[:space:]]+[0-9a-f]+ $f\$")
		tap_ok "$([ "$d" = 1 ] && ! grep -qx "$f" <<<"$und" && echo 1)" \
			"$f: defined by the module (a forwarder to its key), never left to the kernel's exports"
	done
	no_stray_keys
	tap_done
	exit
fi

dis=$(objdump -dr "$ko") || fr_die "objdump -dr $ko failed"

# Every indirect call or jump, with the relocation that follows it if any.
# The allowlist:
#  - `call *pv_ops+N(%rip)` (5.10: `call *pv_ops+N`, absolute),
#    paravirt operations. Each is a
#    .parainstructions (7.x: .altinstructions) site the kernel rewrites at
#    load into a direct call or the native instruction, and its targets
#    are functions stored in pv_ops, never sealed.
#  - fr_test_pointer_call(), in test builds only (FR_TEST_HOOKS): make
#    check-ibt's negative control, which must make one pointer call.
indirect=$(printf '%s\n' "$dis" | awk '
	function flush(reloc) {
		if (pending == "")
			return
		if (!(pending ~ /call +\*0x0(\(%rip\))?([[:space:]]|$)/ && reloc ~ /[[:space:]]pv_ops[+-]/) &&
		    fn != "fr_test_pointer_call")
			print fn ": " pending (reloc == "" ? "" : " <" reloc ">")
		pending = ""
	}
	/^[0-9a-f]+ <[^>]+>:$/ { flush(""); fn = $2; gsub(/[<>:]/, "", fn); next }
	/^[[:space:]]+[0-9a-f]+: R_X86_64_/ { r = $0; sub(/^[[:space:]]+/, "", r); flush(r); next }
	{ flush("") }
	/^[[:space:]]+[0-9a-f]+:\t/ && /\t(notrack )?(call|jmp)[[:space:]]+\*/ { pending = $0 }
	END { flush("") }')
# Retpoline thunks are where calls through registers go on these kernels.
thunks=$(printf '%s\n' "$dis" | awk '
	/^[0-9a-f]+ <[^>]+>:$/ { fn = $2; gsub(/[<>:]/, "", fn); next }
	/R_X86_64_[A-Z0-9]+[[:space:]]+__x86_indirect_/ && fn != "fr_test_pointer_call" { print fn ": " $0 }')
tap_ok "$([ -z "$thunks" ] && echo 1)" "$ko: no call through a retpoline thunk outside the allowlist" "$thunks"
tap_ok "$([ -z "$indirect" ] && echo 1)" "$ko: no call *, jmp * outside the allowlist" "$indirect"
pv=$(printf '%s\n' "$dis" | grep -cE 'R_X86_64_[A-Z0-9]+[[:space:]]+pv_ops[+-]')
echo "# allowlisted paravirt calls (call *pv_ops+N(%rip)): $pv"

# Two fewer without folios (no FASTREMAP_IOC_MOVE: compat.h).
min=18
grep -q '^#define FR_HAVE_FOLIO ' "$compat" || min=16
tap_ok "$([ "$(printf '%s\n' "$fns" | grep -c .)" -ge "$min" ] && echo 1)" \
	"symlist.h names the internal functions ($(printf '%s\n' "$fns" | grep -c .))"
sites=$(objdump -r -j .static_call_sites "$ko" 2>/dev/null |
	awk '$2 ~ /^R_X86_64_/ { s = $3; sub(/[+-]0x[0-9a-f]+$/, "", s); print s }')
syms=$(objdump -t "$ko")
for f in $fns; do
	key="__SCK__fr_sc_$f" tramp="__SCT__fr_sc_$f"
	k=$(printf '%s\n' "$syms" | grep -cE "[[:space:]]\.data[^[:space:]]*[[:space:]]+[0-9a-f]+[[:space:]]+$key\$")
	c=$(printf '%s\n' "$dis" | grep -cE "R_X86_64_(PLT|PC)32[[:space:]]+$tramp-0x4\$")
	s=$(printf '%s\n' "$sites" | grep -cx "$key")
	tap_ok "$([ "$k" = 1 ] && [ "$c" -ge 1 ] && [ "$s" -ge 1 ] && echo 1)" \
		"$f: called through the module's static call ($c calls, $s sites)" \
		"key defined: $k; branches to $tramp: $c; .static_call_sites entries: $s"
done
no_stray_keys
tap_done
