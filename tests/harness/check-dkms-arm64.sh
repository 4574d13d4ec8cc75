#!/usr/bin/env bash
# DKMS on an arm64 machine, as far as this x86-64 machine can be one: for
# each suite, an arm64 Debian root of that suite (dkms, make, gcc and the
# arm64 linux-headers of the suite's kernel) in which `dkms add` and
# `dkms build` run as on arm64 hardware, every arm64 program (bash, dkms,
# make, gcc, the kernel's kbuild tools) executed by qemu-user through
# binfmt_misc: a native build, not the lane's cross build. Then the
# product: an aarch64 relocatable ELF whose vermagic is the kernel's own,
# signed with the root's DKMS key, with no test parameters, which the
# suite's arm64 kernel loads under qemu-system-aarch64 and runs
# t_device and t_remap against. Prints TAP and a last line
# "N passed, N failed, N skipped".
#
# The root is made by extracting the packages (mmdebstrap
# --variant=extract): no maintainer script runs, which is what made an
# emulated debootstrap take longer than 40 minutes (a kernel image's
# initramfs alone ran 25). What those scripts would have set up and the
# build needs is done by hand below. Cached in
# ${XDG_CACHE_HOME:-~/.cache}/fastremap/arm64/dkms-root-SUITE until the
# suite's kernel changes.
#
# Needs the arm64 lane's kernels (FASTREMAP_ARCH=arm64
# scripts/prepare-kernels.sh) and qemu-user-static (scripts/deps.sh).
# Usage: check-dkms-arm64.sh   (FASTREMAP_SUITES chooses the kernels;
# FASTREMAP_DKMS_VM_TESTS the in-VM programs, default "t_device t_remap")
set -uo pipefail
export FASTREMAP_ARCH=arm64
# A build tree of its own: the lane's build/arm64/SUITE holds the test
# build of the module, which this must not replace.
export FASTREMAP_BUILD=${FASTREMAP_DKMS_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build/arm64-dkms}
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

programs=${FASTREMAP_DKMS_VM_TESTS:-t_device t_remap}
ver=$(cat "$FR_TOP/VERSION")
results="$FR_BUILD/results"
rm -rf "$results"
mkdir -p "$results"

ok() { # ok OK? DESCRIPTION [FILE: its tail as diagnostics on failure]
	tap_ok "$1" "$2" "$([ -z "${3:-}" ] || tail -n 15 "$3" 2>/dev/null)"
	return 0
}
finish() {
	tap_done_run
	exit
}

# qemu-user runs the root's programs: binfmt_misc must hand aarch64 ELF
# files to it, with its interpreter opened at registration (flag F), so
# that it works inside a chroot.
binfmt=/proc/sys/fs/binfmt_misc/qemu-aarch64
# Registered when qemu-user-static was installed where systemd runs; in a
# container without it, register the package's own entry as
# systemd-binfmt would.
conf=/usr/lib/binfmt.d/qemu-aarch64.conf
if [ ! -e "$binfmt" ] && [ -w /proc/sys/fs/binfmt_misc/register ] && [ -r "$conf" ]; then
	echo "# registering $conf with binfmt_misc"
	cat "$conf" >/proc/sys/fs/binfmt_misc/register
fi
ok "$(grep -qx enabled "$binfmt" 2>/dev/null && grep -q '^flags: .*F' "$binfmt" && echo 1)" \
	"binfmt_misc runs aarch64 programs through qemu-user (qemu-user-static)"
[ "$TAP_FAIL" = 0 ] || finish

# Runs a command inside ROOT with /proc mounted (kbuild reads it), in a
# private mount namespace of its own.
in_root() { # in_root ROOT COMMAND...
	local r=$1
	shift
	unshare --mount --propagation private -- sh -c \
		'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' "$r" "$@"
}

# The arm64 root of SUITE for KVER (the kernel release) at package
# version PVER, made if the cache has none for them.
make_root() { # make_root SUITE KVER PVER DIR
	local suite=$1 k=$2 pver=$3 dir=$4 tmp sources=() t0
	[ -f "$dir/.fastremap-ready" ] && [ "$(cat "$dir/.fastremap-ready")" = "1 $k $pver" ] && return 0
	t0=$(date +%s)
	# The build root's own sources of the suite (Debian 12's kernel comes
	# from bookworm-security), as prepare-kernels.sh reads them.
	mapfile -t sources < <(fr_in_root "$suite" apt-get indextargets \
		--format '$(RELEASE) $(REPO_URI) $(COMPONENT)' |
		awk -v s="$suite" '$1 == s || index($1, s "-") == 1 { print "deb", $2, $1, $3 }' | sort -u)
	[ ${#sources[@]} -gt 0 ] || { echo "# $suite: no apt sources in its build root"; return 1; }
	tmp="$dir.tmp"
	rm -rf --one-file-system "$tmp"
	# The Essential set (sh, coreutils, sed, grep, ... which no package
	# depends on by name) and what DKMS needs; the headers pull in the
	# suite's kbuild tools and the gcc the kernel was built with. The
	# suite's Release file may be past Valid-Until (sid on this mirror).
	if ! mmdebstrap --variant=extract --arch=arm64 \
		--aptopt='Acquire::Check-Valid-Until "false"' \
		--include='?essential' \
		--include="dkms,make,gcc,libc6-dev,kmod,openssl,mawk,linux-headers-$k=$pver" \
		"$suite" "$tmp" "${sources[@]}" >"$results/$suite-root.log" 2>&1; then
		tail -n 20 "$results/$suite-root.log" | sed 's/^/# /'
		return 1
	fi
	# What the maintainer scripts would have done that the build needs:
	# the awk alternative (kbuild runs awk) and the dynamic linker's cache.
	[ -e "$tmp/usr/bin/awk" ] || ln -s mawk "$tmp/usr/bin/awk"
	chroot "$tmp" /sbin/ldconfig || return 1
	echo "1 $k $pver" >"$tmp/.fastremap-ready"
	rm -rf --one-file-system "$dir"
	mv "$tmp" "$dir"
	echo "# $suite: arm64 root made in $(($(date +%s) - t0)) s (load $(cut -d' ' -f1-3 /proc/loadavg))"
}

# The kernel's own vermagic, from one of its modules.
kernel_vermagic() { # kernel_vermagic KROOT KVER
	local m
	m=$(awk -F: '$1 ~ /\/zram\.ko/ { print $1; exit }' "$1/lib/modules/$2/modules.dep")
	[ -n "$m" ] && modinfo -F vermagic "$1/lib/modules/$2/$m"
}

# The in-VM programs, cross-built as the lane builds them (static aarch64).
bins=()
for p in $programs; do bins+=("$FR_BUILD/bin/$p"); done
# shellcheck disable=SC2046
fr_in_root "$FR_ARM64_PROGRAMS_ROOT" make -C "$FR_TOP" --no-print-directory WERROR=1 \
	BUILD="$FR_BUILD" $(fr_cc_args) "${bins[@]}" >"$results/build-tests.log" 2>&1
ok "$([ $? = 0 ] && echo 1)" "the in-VM programs ($programs) build for arm64" "$results/build-tests.log"

for suite in $FR_SUITES; do
	kroot=$(fr_kroot "$suite")
	k=$(fr_kver "$kroot")
	if [ -z "$k" ]; then
		ok 0 "$suite: an arm64 kernel (run FASTREMAP_ARCH=arm64 scripts/prepare-kernels.sh)"
		continue
	fi
	read -r _ _ pver <"$kroot/.fastremap-ready"
	echo "# ===== $suite-arm64 ($k, $pver)"
	root="$FR_CACHE/arm64/dkms-root-$suite"
	make_root "$suite" "$k" "$pver" "$root"
	ok "$([ -f "$root/.fastremap-ready" ] && echo 1)" "$suite: arm64 root with dkms and linux-headers-$k" \
		"$results/$suite-root.log"
	[ -f "$root/.fastremap-ready" ] || continue
	ok "$([ "$(chroot "$root" uname -m)" = aarch64 ] && echo 1)" \
		"$suite: its programs run as aarch64 (uname -m inside it)"

	base=/var/tmp/fastremap-dkms-$(fr_build_id)
	rm -rf "$root$base"
	mkdir -p "$root$base/tree" "$root$base/src"
	fr_stage_src "$root$base/src/fastremap-$ver"
	log="$results/$suite-dkms.log"
	dk() { in_root "$root" dkms --dkmstree "$base/tree" --sourcetree "$base/src" "$@" >>"$log" 2>&1; }
	: >"$log"
	dk add -m fastremap -v "$ver"
	ok "$([ $? = 0 ] && echo 1)" "$suite: dkms add" "$log"
	t0=$(date +%s)
	dk build -m fastremap -v "$ver" -k "$k"
	rc=$?
	echo "# $suite: dkms build took $(($(date +%s) - t0)) s under qemu-user (load $(cut -d' ' -f1-3 /proc/loadavg))"
	ko=$(find "$root$base/tree/fastremap/$ver/$k" -path '*/module/fastremap.ko*' 2>/dev/null | head -n 1)
	cat "$root$base/tree/fastremap/$ver/build/make.log" >>"$log" 2>/dev/null
	ok "$([ "$rc" = 0 ] && [ -n "$ko" ] && echo 1)" "$suite: dkms build for $k (exit $rc)" "$log"
	if [ -z "$ko" ]; then
		rm -rf "$root$base"
		continue
	fi
	# trixie's and sid's DKMS compress it as the kernel's modules are
	# (fastremap.ko.xz); readelf reads the plain file the guest loads.
	mkdir -p "$FR_BUILD/$suite"
	case $ko in
	*.xz) xz -dc "$ko" >"$FR_BUILD/$suite/fastremap.ko" ;;
	*.zst) zstd -qdc "$ko" >"$FR_BUILD/$suite/fastremap.ko" ;;
	*) cp "$ko" "$FR_BUILD/$suite/fastremap.ko" ;;
	esac
	echo "# $suite: the product: ${ko##*/}"
	hdr=$(readelf -h "$FR_BUILD/$suite/fastremap.ko" 2>&1)
	ok "$(grep -q 'Class: *ELF64' <<<"$hdr" && grep -q 'Type: *REL' <<<"$hdr" &&
		grep -q 'Machine: *AArch64' <<<"$hdr" && echo 1)" \
		"$suite: fastremap.ko is an aarch64 relocatable ELF64 ($(sed -n 's/^ *Machine: *//p' <<<"$hdr"))"
	vm=$(modinfo -F vermagic "$ko")
	kvm=$(kernel_vermagic "$kroot" "$k")
	echo "# $suite: vermagic \"$vm\"; the kernel's (zram.ko): \"$kvm\""
	ok "$([ -n "$vm" ] && [ "$vm" = "$kvm" ] && echo 1)" "$suite: its vermagic is the kernel's own"
	ok "$([ -z "$(modinfo -p "$ko")" ] && echo 1)" "$suite: no (test-only) parameter: the module users get"
	ok "$(modinfo -F signer "$ko" | grep -qx 'DKMS module signing key' &&
		"$FR_HARNESS/verify-modsig.sh" "$ko" "$root/var/lib/dkms/mok.pub" >>"$log" 2>&1 && echo 1)" \
		"$suite: signed by the root's DKMS key, and the signature verifies" "$log"

	# The product in the suite's arm64 kernel: loaded, then the programs.
	echo "$k" >"$FR_BUILD/$suite/kver"
	dk remove -m fastremap -v "$ver" --all
	ok "$([ $? = 0 ] && echo 1)" "$suite: dkms remove" "$log"
	rm -rf "$root$base"

	vlog="$results/$suite-vm.log"
	t0=$(date +%s)
	# shellcheck disable=SC2086
	FASTREMAP_VM_INIT="$FR_HARNESS/guest/init-dkms" FASTREMAP_VM_KMODS='' FASTREMAP_VM_APPEND='' \
		FASTREMAP_VM_TIMEOUT=${FASTREMAP_VM_TIMEOUT:-1200} \
		"$FR_HARNESS/vm-run.sh" "$suite" "$FR_BUILD/bin" "$vlog" $programs
	echo "# $suite: VM finished in $(($(date +%s) - t0)) s"
	# shellcheck disable=SC2086
	fr_dkms_guest_verdicts "$vlog" "$results" "$suite" "$k" $programs
done
finish
