#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check-all: both architectures, one lane after the other
# (check-all.sh, one summary over both), every program at its full count;
# then DKMS on arm64.
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"
fr_prepare amd64 arm64
FASTREMAP_CHECK_DKMS_ARM64=1 exec "$FR_HARNESS/check-all.sh"
