#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check-mutants: planted bugs (tests/mutants): the in-VM suite must
# fail on each, on the three kernels. Prints which test caught each one
# (check-mutants.sh).
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"
fr_prepare amd64
exec "$FR_HARNESS/check-mutants.sh"
