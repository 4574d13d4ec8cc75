#!/usr/bin/env bash
# make check-ibt: the module on a machine that enforces kernel IBT. Debian
# 13's kernel boots in Bochs (Debian's bochs package, built with CET
# support) emulating a Tiger Lake CPU, whose IBT faults on an indirect
# branch to a function without ENDBR, from an ISO (isolinux, the kernel,
# an initramfs with busybox, the module, t_ibt_remap and t_shstk). The
# kernel runs with ibt=warn: a missing ENDBR is then logged ("Missing
# ENDBR") instead of killing the guest, so one boot shows both that the
# module's load and a move with a data check trigger none, and that the
# negative control (the test build's ibt_pointer_call=1: one call through
# a pointer to a sealed function) triggers one. The CPU model has CET
# shadow stacks too, which no QEMU guest has: t_shstk maps one and
# requires that the module's MOVE refuses it and REMAP declines it; each
# of its results is one of ours, and a skip (no shadow stack could be
# mapped) fails. Prints TAP. Bochs is slow and single-threaded: it runs
# under nice.
# FASTREMAP_IBT_TIMEOUT: seconds for the guest (default 5400).
set -uo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

suite=trixie
out="$FR_BUILD/ibt"

command -v bochs >/dev/null && command -v xorriso >/dev/null &&
	[ -r /usr/lib/ISOLINUX/isolinux.bin ] ||
	fr_apt_install bochs bochsbios vgabios isolinux syslinux-common xorriso
root=$(fr_root "$suite")
[ -n "$(fr_kver "$root")" ] || fr_die "$suite: no kernel; run scripts/prepare-kernels.sh"
"$FR_TOP/scripts/build-module.sh" "$suite" || fr_die "$suite: module build failed"
kver=$(cat "$FR_BUILD/$suite/kver")
rm -rf "$out" && mkdir -p "$out/iso/isolinux" "$out/initramfs/bin"
# shellcheck disable=SC2086
${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -O2 -static -pthread -I"$FR_TOP/uapi" -I"$FR_TOP/tests/lib" \
	-o "$out/initramfs/t_ibt_remap" "$FR_TOP/tests/t_ibt_remap.c" "$FR_TOP"/tests/lib/*.c || fr_die "t_ibt_remap build failed"
# shellcheck disable=SC2086
${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -O2 -static -pthread -I"$FR_TOP/uapi" -I"$FR_TOP/tests/lib" \
	-o "$out/initramfs/t_shstk" "$FR_TOP/tests/t_shstk.c" "$FR_TOP"/tests/lib/*.c || fr_die "t_shstk build failed"

# The initramfs and the ISO.
cp /bin/busybox "$out/initramfs/bin/"
cp "$FR_HARNESS/guest/init-ibt" "$out/initramfs/init"
chmod 755 "$out/initramfs/init"
cp "$FR_BUILD/$suite/fastremap.ko" "$out/initramfs/"
(cd "$out/initramfs" && find . | cpio -o -H newc --quiet | gzip -9) >"$out/iso/initrd.gz"
cp "${root%/}/boot/vmlinuz-$kver" "$out/iso/vmlinuz"
cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$out/iso/isolinux/"
cat >"$out/iso/isolinux/isolinux.cfg" <<-EOF
	DEFAULT fr
	PROMPT 0
	TIMEOUT 0
	LABEL fr
	  KERNEL /vmlinuz
	  APPEND initrd=/initrd.gz console=ttyS0 ibt=warn quiet loglevel=4 panic=-1 nokaslr mitigations=off
EOF
xorriso -as mkisofs -quiet -o "$out/boot.iso" -b isolinux/isolinux.bin -c isolinux/boot.cat \
	-no-emul-boot -boot-load-size 4 -boot-info-table "$out/iso" || fr_die "xorriso failed"

# Dummy sound drivers: with the default (ALSA) on a machine without a
# sound card, Bochs 2.7's mixer thread aborts at start ("buffer overflow
# detected"), speaker disabled or not.
cat >"$out/bochsrc" <<-EOF
	megs: 1024
	cpu: model=tigerlake, count=1, ips=200000000, reset_on_triple_fault=0
	romimage: file=/usr/share/bochs/BIOS-bochs-latest
	vgaromimage: file=/usr/share/bochs/VGABIOS-lgpl-latest
	ata0-master: type=cdrom, path=$out/boot.iso, status=inserted
	boot: cdrom
	com1: enabled=1, mode=file, dev=$out/serial.log
	display_library: rfb, options="timeout=0"
	clock: sync=none, time0=local
	log: $out/bochs.log
	panic: action=fatal
	error: action=report
	info: action=report
	debug: action=ignore
	speaker: enabled=0
	sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy
EOF
# Debian builds Bochs with its debugger, which waits for commands first.
echo c >"$out/debugger.rc"

fr_log "booting $kver in Bochs (tigerlake) under nice; this takes a while"
start=$(date +%s)
: >"$out/serial.log"
nice -n 10 timeout "${FASTREMAP_IBT_TIMEOUT:-5400}" bochs -q -f "$out/bochsrc" -rc "$out/debugger.rc" \
	</dev/null >"$out/bochs.out" 2>&1 &
bpid=$!
# Bochs may stay up after the guest powers off: end it once the guest is done.
while kill -0 "$bpid" 2>/dev/null; do
	grep -q '^FR-DONE' "$out/serial.log" 2>/dev/null && { sleep 5; kill "$bpid" 2>/dev/null; break; }
	sleep 10
done
wait "$bpid" 2>/dev/null
secs=$(($(date +%s) - start))
fr_log "Bochs finished in $secs s"
echo "# Bochs run: $secs s"

log=$(tr -d '\r' <"$out/serial.log")
sect() { printf '%s\n' "$log" | sed -n "/^$1-BEGIN/,/^$1-END/p"; }
d1=$(sect FR-DMESG1) d2=$(sect FR-DMESG2)
grep -q 'FR-KERNEL' <<<"$log"
tap_ok "$([ $? = 0 ] && echo 1)" "$kver booted in Bochs"
tap_ok "$(grep -q 'Indirect Branch Tracking enabled' <<<"$d1" && echo 1)" \
	"the kernel enforces IBT (\"Indirect Branch Tracking enabled\")"
tap_ok "$(grep -qx 'FR-INSMOD 0' <<<"$log" && echo 1)" "insmod fastremap.ko"
syms=$(sect FR-SYMBOLS)
printf '%s\n' "$syms" | sed '1d;$d;s/^/# /'
tap_ok "$(grep -q '^self-check passed' <<<"$syms" && ! grep -q 'call=' <<<"$(grep -v 'call=direct\|call=none' <<<"$syms")" &&
	grep -q 'entry=sealed' <<<"$syms" && echo 1)" "self-check passed, every function called directly, sealed entries reported"
tap=$(printf '%s\n' "$log" | sed -n '/^FR-BEGIN t_ibt_remap$/,/^FR-END t_ibt_remap /p')
printf '%s\n' "$tap" | sed '1d;$d;s/^/# /'
tap_ok "$(grep -q '^FR-END t_ibt_remap 0$' <<<"$tap" && ! grep -q '^not ok' <<<"$tap" &&
	grep -q '^ok .*every word arrived' <<<"$tap" && echo 1)" "a 4 MiB move through the module, every word checked"
# t_shstk: each result is one of ours. This guest's CPU has CET: a skip
# means the kernel would not map a shadow stack, a failure here, with the
# kernel's CET and XSAVE lines (user shadow stacks need XSAVES of the CET
# user state) to say why.
sh=$(printf '%s\n' "$log" | sed -n '/^FR-BEGIN t_shstk$/,/^FR-END t_shstk /p')
grep '^#' <<<"$sh"
while IFS= read -r l; do
	case $l in
	'ok '*' # SKIP '*)
		# Its SKIP directive kept out of ours: ours is a failure.
		l=${l#ok * - }
		tap_ok 0 "t_shstk: ${l%% # SKIP *} (skipped on a CPU with CET: ${l#* # SKIP })"
		;;
	'ok '*) tap_ok 1 "t_shstk: ${l#ok * - }" ;;
	'not ok '*) tap_ok 0 "t_shstk: ${l#not ok * - }" ;;
	esac
done <<<"$sh"
if grep -q '# SKIP' <<<"$sh"; then
	grep -E 'CET|x86/fpu|shstk|[Ss]hadow stack' <<<"$d1" | sed 's/^/# guest: /'
fi
plan=$(sed -n 's/^1\.\.//p' <<<"$sh")
tap_ok "$(grep -q '^FR-END t_shstk 0$' <<<"$sh" && [ -n "$plan" ] &&
	[ "$plan" = "$(grep -c '^\(not \)\{0,1\}ok ' <<<"$sh")" ] && echo 1)" \
	"t_shstk ran to its end: exit 0, as many results as its plan (${plan:-none})"
# The emulated CPU draws a few warnings from the kernel at boot (CPUID
# topology, XSAVE sizes), before any module: listed, not counted. From
# the module's load on, the log must be clean.
boot=$(sed -n '/fastremap: /q;p' <<<"$d1" | grep -E "$FR_BAD_LOG" | grep -v 'Call Trace')
[ -n "$boot" ] && printf '%s\n' "$boot" | head -n 10 | sed 's/^/# boot-time, before the module (Bochs CPU model): /'
bad=$(sed -n '/fastremap: /,$p' <<<"$d1" | grep -E "$FR_BAD_LOG|Missing ENDBR")
[ -n "$bad" ] && printf '%s\n' "$bad" | head -n 20 | sed 's/^/# /'
tap_ok "$(grep -q 'fastremap: ready' <<<"$d1" && [ -z "$bad" ] && echo 1)" \
	"kernel log clean from the load through the move and the unload (no Missing ENDBR)"
tap_ok "$(grep -q 'ibt_pointer_call: calling' <<<"$d2" && grep -q 'Missing ENDBR' <<<"$d2" && echo 1)" \
	"negative control: one call through a pointer to a sealed function logs Missing ENDBR"
grep -E 'Missing ENDBR|ibt_pointer_call' <<<"$d2" | head -n 5 | sed 's/^/# /'
tap_done
