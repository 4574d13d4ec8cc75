#!/usr/bin/env bash
# Builds the debug-kernel lane's kernel, once: Debian's linux-source-6.1
# with x86_64_defconfig plus scripts/debug-kernel.config (KASAN, lockdep,
# DEBUG_VM, page-table check, DEBUG_PAGEALLOC). The result is laid out as a
# build root the other scripts understand (boot/vmlinuz-KVER and
# lib/modules/KVER/build) under $FR_CACHE/debug-6.1/root, and is reused
# until the source package or the fragment changes. The build takes about
# 10 minutes on two cores; nothing is rebuilt when the cached kernel is
# current.
set -euo pipefail
. "$(dirname "$0")/common.sh"

frag="$FR_TOP/scripts/debug-kernel.config"
tarball=/usr/src/linux-source-6.1.tar.xz
fr_apt_install linux-source-6.1 build-essential bc bison flex libelf-dev libssl-dev cpio xz-utils

srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1)
key=$({ echo "$srcver"; cat "$frag"; } | md5sum | cut -c1-10)
dir="$FR_CACHE/debug-6.1"
tree="$dir/linux-$key"
root="$dir/root"

# The build root the other scripts read: the image, the tree as the
# module's build directory, and the source package for the selftests.
layout() {
	local kver
	kver=$(make -C "$tree" -s kernelrelease)
	rm -rf "$root"
	mkdir -p "$root/boot" "$root/lib/modules/$kver" "$root/usr/src"
	cp "$tree/arch/x86/boot/bzImage" "$root/boot/vmlinuz-$kver"
	cp "$tree/System.map" "$root/boot/System.map-$kver"
	ln -s "$tree" "$root/lib/modules/$kver/build"
	: >"$root/lib/modules/$kver/modules.dep"
	ln -s "$tarball" "$root/usr/src/linux-source-6.1.tar.xz"
	echo "$kver" >"$root/kver"
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
	fr_log "debug kernel: extracting linux-source $srcver"
	rm -rf "$tree"
	mkdir -p "$tree"
	tar -xJf "$tarball" -C "$tree" --strip-components=1
	touch "$tree/.extracted"
fi

fr_log "debug kernel: configuring"
make -C "$tree" -s x86_64_defconfig
# The fragment's lines are CONFIG_X=y, =n or ="string".
opts=()
while IFS= read -r line; do
	case $line in
	CONFIG_*=y) opts+=(--enable "${line%%=*}") ;;
	CONFIG_*=n) opts+=(--disable "${line%%=*}") ;;
	CONFIG_*=\"*\") v=${line#*=}; opts+=(--set-str "${line%%=*}" "${v//\"/}") ;;
	CONFIG_*) fr_die "debug-kernel.config: cannot read '$line'" ;;
	esac
done < <(grep -E '^CONFIG_' "$frag")
"$tree/scripts/config" --file "$tree/.config" "${opts[@]}"
make -C "$tree" -s olddefconfig
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
done < <(grep -E '^CONFIG_' "$frag")
[ $bad = 0 ] || fr_die "debug kernel: the config lost options of the fragment"

fr_log "debug kernel: building (about 10 minutes on two cores; log: $dir/build.log)"
if ! make -C "$tree" -j"$(nproc)" >"$dir/build.log" 2>&1; then
	tail -n 40 "$dir/build.log" >&2
	fr_die "debug kernel: build failed (log: $dir/build.log)"
fi
layout
touch "$dir/built-$key"
fr_log "debug kernel: built $(cat "$root/kver")"
