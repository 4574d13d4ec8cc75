#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check-deb: the Debian packages. make deb (dpkg-buildpackage and
# lintian, under build/deb), then tests/harness/deb-test.sh: apt installs
# them in an overlay of each suite's x86-64 build root (Debian 11 where
# its root exists, 12, 13, unstable), DKMS builds the module for that
# suite's kernel, the kernel boots under QEMU with it and runs t_remap,
# t_move, and t_lib and t_move_lib built against the installed library;
# the purge must leave nothing. Prepares the amd64 kernels and roots
# (scripts/prepare-kernels.sh, cached). Not part of make check: see its
# cost in tests/README.md ("The Debian packages").
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"
fr_prepare amd64
make -C "$FR_TOP" --no-print-directory deb
exec "$FR_HARNESS/deb-test.sh"
