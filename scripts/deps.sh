#!/usr/bin/env bash
# Installs every Debian 12 package fastremap needs to build, test and
# benchmark. Shared by the README and .ci/run; safe to run again.
set -euo pipefail

pkgs=(
	build-essential make gcc libc6-dev pkg-config
	linux-headers-amd64 linux-image-amd64 libelf-dev bc kmod
	qemu-system-x86 busybox-static cpio gzip
	mmdebstrap dkms
	gnuplot-nox man-db groff-base
	linux-source-6.1 xz-utils
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

export DEBIAN_FRONTEND=noninteractive
# Third-party sources on some machines may be unreachable; Debian's own
# suites are what matters, and install fails loudly if they are missing.
apt-get update -q || true
apt-get install -y -q --no-install-recommends "${missing[@]}"
