#!/usr/bin/env bash
# Installs every Debian 12 package fastremap needs to build, test and
# benchmark. Shared by the README and .ci/run; safe to run again.
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/../tests/harness/common.sh"

pkgs=(
	build-essential make gcc libc6-dev pkg-config
	linux-headers-amd64 linux-image-amd64 libelf-dev bc kmod
	qemu-system-x86 busybox-static cpio gzip
	mmdebstrap dkms
	gnuplot-nox man-db groff-base
	linux-source-6.1 xz-utils
	gcc-multilib
	# The library and the shim must build with musl too (build-test.sh).
	musl-tools
	# The arm64 lane: the emulator, and objdump for tests/harness/check-ko.sh.
	# (Its cross gcc goes into the chroots, prepare-kernels.sh: on
	# Debian 12, gcc-aarch64-linux-gnu and gcc-multilib conflict.)
	binutils-aarch64-linux-gnu qemu-system-arm
	# DKMS on arm64 (make check-all): the arm64 roots' programs run
	# under qemu-user through binfmt_misc.
	qemu-user-static
	# The bench's counting plugin, checked under the user-mode emulator
	# (tests/harness/count-selftest.sh): the static one cannot load plugins.
	qemu-user
	# make deb: the Debian packages (debian/), and lintian to check them.
	debhelper dh-dkms dpkg-dev fakeroot lintian
)

fr_apt_install "${pkgs[@]}"
