#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check-dkms-arm64: DKMS on arm64, natively: dkms add/build inside an
# arm64 Debian root of each suite under qemu-user, the module it built
# loaded in that suite's arm64 kernel under qemu-system-aarch64
# (check-dkms-arm64.sh). About 20 minutes per kernel on a loaded 2-core
# host: in check-all, not in make check (tests/README.md, "DKMS on arm64").
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"
fr_prepare arm64
exec "$FR_HARNESS/check-dkms-arm64.sh"
