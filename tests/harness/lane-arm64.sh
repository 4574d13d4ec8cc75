#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check-arm64: the arm64 lane alone, at full counts: Debian's arm64
# kernels of the same three suites, module and programs cross-built,
# under qemu-system-aarch64 -M virt.
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"
fr_prepare arm64
FASTREMAP_ARCH=arm64 exec "$FR_HARNESS/run.sh"
