#!/usr/bin/env bash
# Builds a kernel lane's kernel from source, once: a debug lane's is
# Debian's linux-source of the lane's series with x86_64_defconfig plus
# scripts/debug-kernel.config (KASAN, lockdep, DEBUG_VM, DEBUG_VM_PGTABLE,
# page-table check, DEBUG_PAGEALLOC, fault injection); an upstream lane's
# is the upstream tarball with x86_64_defconfig, kvm_guest.config and
# scripts/upstream-kernel.config. scripts/test-kernel.config (what the
# tests need) follows the lane's fragment.
# Usage: build-debug-kernel.sh [debug|debug7|lts618|up617]
#   debug   Debian 12's linux-source-6.1, built on this host; laid out as a
#           build root (boot/vmlinuz-KVER, lib/modules/KVER/build) under
#           $FR_CACHE/debug-6.1/root.
#   debug7  Debian unstable's linux-source-7.x, built with unstable's gcc
#           in its own chroot (a copy of the sid chroot, so the sid lane's
#           kernel and headers stay as Debian ships them), which then is the
#           lane's build root: its /boot holds only the debug kernel.
#   lts618  the upstream 6.18 LTS source, the orig tarball of the newest
#           6.18 in trixie-backports (apt-get source, through an apt
#           configuration of its own), built on this host; laid out as a
#           build root under $FR_CACHE/upstream-6.18/root.
#   up617   the same of 6.17 (upstream-6.17/): every upstream lane of
#           FR_UPSTREAM_SUITES (tests/harness/common.sh) is built so.
#           With FASTREMAP_ARCH=arm64 an upstream lane's kernel is
#           cross-built for arm64 in the bookworm chroot (whose gcc builds
#           the lane's module too) from the same tarball: its defconfig
#           without modules and without the SoC platforms (QEMU's virt
#           board needs none), under $FR_CACHE/arm64/upstream-SERIES, and
#           laid out as an arm64 suite's kernel (fr_arm64_dir).
# A kernel is reused until its source package or the fragment changes.
# Nothing is rebuilt when the cached kernel is current. The build runs at
# nice 19 (FASTREMAP_BUILD_NICE) with one job per CPU (FASTREMAP_BUILD_JOBS):
# on two idle cores it takes about 10 (6.1) to 40 (7.x) minutes. On a
# machine busy with other work, more jobs and a lower nice value get the
# build its share of the CPU.
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/../tests/harness/common.sh"

lane=${1:-$FR_DEBUG_SUITE}
frags=("$FR_TOP/scripts/debug-kernel.config" "$FR_TOP/scripts/test-kernel.config")
defconfig=x86_64_defconfig
pkgs="build-essential bc bison flex libelf-dev libssl-dev cpio xz-utils"
nice=${FASTREMAP_BUILD_NICE:-19}
jobs=${FASTREMAP_BUILD_JOBS:-$(nproc)}
kmake=(make)

case $lane in
"$FR_DEBUG_SUITE")
	series=6.1
	# shellcheck disable=SC2086
	fr_apt_install linux-source-6.1 $pkgs
	srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1)
	dir="$FR_CACHE/debug-6.1"	# everything of the lane, as seen from here
	in=$dir				# the same, as seen by the build
	run() { nice -n "$nice" "$@"; }
	;;
"$FR_DEBUG7_SUITE")
	root=$(fr_chroot_dir "$lane")
	if [ ! -f "$root/.fastremap-ready" ]; then
		FASTREMAP_SUITES=sid "$FR_TOP/scripts/prepare-kernels.sh"
		fr_log "debug7: copying the sid chroot to $root (once)"
		rm -rf "$root.tmp"
		cp -a "$(fr_chroot_dir sid)" "$root.tmp"
		# Debian's own kernel would be the root's newest: the lane boots
		# only its own.
		rm -f "$root.tmp"/boot/vmlinuz-* "$root.tmp"/boot/System.map-*
		rm -rf "$root"
		mv "$root.tmp" "$root"
	fi
	series=$(fr_kver "$(fr_chroot_dir sid)" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
	[ -n "$series" ] || fr_die "debug7: no sid kernel"
	fr_in_root "$lane" sh -c "apt-get update -q >/dev/null 2>&1;
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		linux-source-$series $pkgs >/dev/null" || fr_die "debug7: cannot install linux-source-$series"
	srcver=$(fr_in_root "$lane" dpkg-query -W -f='${Version}' "linux-source-$series")
	in=/var/cache/fastremap-debug
	dir="$root$in"
	run() { fr_in_root "$lane" nice -n "$nice" "$@"; }
	;;
*)
	series=$(fr_upstream_series "$lane") ||
		fr_die "usage: build-debug-kernel.sh [$FR_DEBUG_SUITE|$FR_DEBUG7_SUITE|${FR_UPSTREAM_NAMES// /|}]"
	frags=("$FR_TOP/scripts/upstream-kernel.config" "$FR_TOP/scripts/test-kernel.config")
	dir=$(fr_upstream_dir "$lane")
	in=$dir
	src=$(fr_upstream_src "$lane")
	if fr_is_arm64; then
		defconfig=defconfig
		FASTREMAP_SUITES=$FR_ARM64_PROGRAMS_ROOT "$FR_TOP/scripts/prepare-kernels.sh"
		fr_in_root "$FR_ARM64_PROGRAMS_ROOT" sh -c "apt-get update -q >/dev/null 2>&1;
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			$pkgs gcc-aarch64-linux-gnu >/dev/null" ||
			fr_die "$lane: cannot install the cross compiler in the $FR_ARM64_PROGRAMS_ROOT chroot"
		# The tree at its own path in the chroot, and the tarball.
		run() { FR_IN_ROOT_BIND="$dir $src" fr_in_root "$FR_ARM64_PROGRAMS_ROOT" nice -n "$nice" "$@"; }
		kmake=(make ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
	else
		defconfig="x86_64_defconfig kvm_guest.config"
		# shellcheck disable=SC2086
		fr_apt_install $pkgs
		run() { nice -n "$nice" "$@"; }
	fi
	mkdir -p "$dir" "$src"
	srcver=$(fr_fetch_orig "$series" "$src")
	;;
esac
if fr_is_upstream "$lane"; then
	tarball=$src/linux_${srcver%%-*}.orig.tar.xz
else
	tarball=/usr/src/linux-source-$series.tar.xz
fi

# The fragment's lines for this series and architecture: CONFIG_ lines
# apply to every series, "<series>:CONFIG_" lines only to that one (an
# option a later kernel removed), "amd64:" and "arm64:" lines to that
# architecture. The key hashes only these, so a comment does not rebuild a
# kernel.
frag_lines() {
	grep -hE "^(CONFIG_|${series//./\\.}:CONFIG_|$FR_ARCH:CONFIG_)" "${frags[@]}" |
		sed -E 's/^([0-9.]+|amd64|arm64)://'
}
key=$({ echo "$srcver"; frag_lines; } | md5sum | cut -c1-10)
tree="$dir/linux-$key"

# The build root the other scripts read: the image, the tree as the
# module's build directory, and the source package for the selftests.
layout() {
	local kver r
	kver=$(run "${kmake[@]}" -C "$in/linux-$key" -s kernelrelease)
	if fr_is_arm64; then
		# As prepare-kernels.sh unpacks a Debian arm64 kernel: the
		# image, the tree as its headers, and the guest's busybox;
		# and, as the x86-64 layout below, the source package.
		r=$(fr_kroot "$lane")
		rm -rf "$r"
		mkdir -p "$r/boot" "$r/bin" "$r/usr/src" "$r/lib/modules/$kver"
		cp "$tree/arch/arm64/boot/Image" "$r/boot/vmlinuz-$kver"
		cp "$tree/System.map" "$r/boot/System.map-$kver"
		ln -s "$tree" "$r/usr/src/linux-headers-$kver"
		ln -s "$tarball" "$r/usr/src/linux-source-$series.tar.xz"
		ln -s "/usr/src/linux-headers-$kver" "$r/lib/modules/$kver/build"
		cp "$(fr_kroot "$FR_ARM64_PROGRAMS_ROOT")/bin/busybox" "$r/bin/busybox"
		: >"$r/lib/modules/$kver/modules.dep"
		echo "$kver" >"$dir/kver"
		return
	fi
	if [ "$lane" != "$FR_DEBUG7_SUITE" ]; then
		r="$dir/root"
		rm -rf "$r"
		mkdir -p "$r/usr/src"
		ln -s "$tarball" "$r/usr/src/linux-source-$series.tar.xz"
	else
		r=$root
		rm -f "$r"/boot/vmlinuz-* "$r"/boot/System.map-*
	fi
	mkdir -p "$r/boot" "$r/lib/modules/$kver"
	cp "$tree/arch/x86/boot/bzImage" "$r/boot/vmlinuz-$kver"
	cp "$tree/System.map" "$r/boot/System.map-$kver"
	rm -f "$r/lib/modules/$kver/build"
	ln -s "$in/linux-$key" "$r/lib/modules/$kver/build"
	: >"$r/lib/modules/$kver/modules.dep"
	echo "$kver" >"$dir/kver"
}

if [ -e "$dir/built-$key" ]; then
	layout
	exit 0
fi

mkdir -p "$dir"
# Trees of an older source package or fragment are stale: remove them.
for old in "$dir"/linux-*; do
	[ -e "$old" ] && [ "$old" != "$tree" ] && rm -rf "$old"
done
rm -f "$dir"/built-*
if [ ! -e "$tree/.extracted" ]; then
	fr_log "$lane kernel: extracting $(basename "$tarball") ($srcver)"
	rm -rf "$tree"
	mkdir -p "$tree"
	run tar -xJf "$tarball" -C "$in/linux-$key" --strip-components=1
	touch "$tree/.extracted"
fi

fr_log "$lane kernel: configuring"
# shellcheck disable=SC2086
run "${kmake[@]}" -C "$in/linux-$key" -s $defconfig
opts=()
if fr_is_arm64; then
	# arm64's defconfig is every board's: QEMU's virt board needs none of
	# its modules and none of its SoC platforms.
	run "${kmake[@]}" -C "$in/linux-$key" -s mod2noconfig
	for p in $(sed -n 's/^config \(ARCH_[A-Z0-9_]*\)$/\1/p' "$tree/arch/arm64/Kconfig.platforms"); do
		opts+=(--disable "$p")
	done
fi
# The fragment's lines are CONFIG_X=y, =n or ="string".
while IFS= read -r line; do
	case $line in
	CONFIG_*=y) opts+=(--enable "${line%%=*}") ;;
	CONFIG_*=n) opts+=(--disable "${line%%=*}") ;;
	CONFIG_*=\"*\") v=${line#*=}; opts+=(--set-str "${line%%=*}" "${v//\"/}") ;;
	CONFIG_*) fr_die "$lane kernel fragments: cannot read '$line'" ;;
	esac
done < <(frag_lines)
"$tree/scripts/config" --file "$tree/.config" "${opts[@]}"
run "${kmake[@]}" -C "$in/linux-$key" -s olddefconfig
# Kconfig silently drops an option whose dependencies are unmet: every
# line of the fragment must have survived, or the lane checks less than
# it claims.
bad=0
while IFS= read -r line; do
	name=${line%%=*} want=${line#*=}
	case $want in
	y) grep -qx "$name=y" "$tree/.config" || { fr_log "$name is not y"; bad=1; } ;;
	n) grep -qE "^$name=[ym]" "$tree/.config" && { fr_log "$name is still set"; bad=1; } ;;
	esac
done < <(frag_lines)
[ $bad = 0 ] || fr_die "$lane kernel: the config lost options of the fragment"

fr_log "$lane kernel: building $(basename "$tarball") ($srcver) (log: $dir/build.log)"
start=$(date +%s)
if ! run "${kmake[@]}" -C "$in/linux-$key" -j"$jobs" >"$dir/build.log" 2>&1; then
	tail -n 40 "$dir/build.log" >&2
	fr_die "$lane kernel: build failed (log: $dir/build.log)"
fi
layout
touch "$dir/built-$key"
fr_log "$lane kernel: built $(cat "$dir/kver") in $(($(date +%s) - start)) s"
