#!/usr/bin/env bash
# Fetches QEMU's TCG plugin header (include/qemu/qemu-plugin.h) from the
# source package of the qemu that runs the guests, through an apt
# configuration of its own (a deb-src line for this machine's Debian
# mirror; the machine's apt state is left alone), into the cache:
#   $FR_CACHE/qemu-plugin/<upstream version>/qemu-plugin.h
# The header is never copied into the tree. Prints the header's path.
# Usage: scripts/fetch-qemu-plugin-header.sh
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/../tests/harness/common.sh"

# The version of the qemu here: its plugin API is what the plugin builds against.
ver=$(dpkg-query -W -f='${Version}' qemu-system-x86 2>/dev/null) ||
	fr_die "qemu-system-x86 is not installed (scripts/deps.sh)"
up=${ver#*:}
up=${up%%+*}
up=${up%%-*}
out="$FR_CACHE/qemu-plugin/$up"
if [ -s "$out/qemu-plugin.h" ]; then
	echo "$out/qemu-plugin.h"
	exit 0
fi

d="$FR_CACHE/qemu-plugin/apt"
mkdir -p "$out"
# The qemu here is bookworm's; its point releases also live in -security and -updates.
mirror=$(fr_mirror)
fr_log "qemu $ver: fetching the plugin header from Debian's qemu source package"
fr_apt_private_init "$d" "deb-src $mirror bookworm main" "deb-src $mirror bookworm-updates main"
apt_src() { fr_apt_private "$d" "$@"; }
tmp="$out/.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
# Only the upstream tarball holds the header: download the source package
# without unpacking it, then take the one file out.
(cd "$tmp" && apt_src apt-get source --download-only qemu >/dev/null) ||
	fr_die "apt-get source --download-only qemu failed"
origs=("$tmp"/qemu_*.orig.tar.*)
orig=${origs[0]}
[ -e "$orig" ] || fr_die "no orig tarball in the qemu source package"
# (The whole listing first: grep stopping early would break tar's pipe.)
member=$(tar -tf "$orig" | grep '/include/qemu/qemu-plugin\.h$' || true)
member=${member%%$'\n'*}
[ -n "$member" ] || fr_die "$orig has no include/qemu/qemu-plugin.h"
tar -xOf "$orig" "$member" >"$tmp/qemu-plugin.h"
# The source's plugin API version must be the one the qemu here loads.
srcver=$(sed -n 's/^#define QEMU_PLUGIN_VERSION \([0-9]*\)$/\1/p' "$tmp/qemu-plugin.h")
[ -n "$srcver" ] || fr_die "qemu-plugin.h without QEMU_PLUGIN_VERSION"
mv "$tmp/qemu-plugin.h" "$out/qemu-plugin.h"
echo "source: $(basename "$orig") (qemu here: $ver), QEMU_PLUGIN_VERSION $srcver" >"$out/ORIGIN"
rm -rf "$tmp"
echo "$out/qemu-plugin.h"
