#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check-long: the long mode of the reliability tests on the three
# kernels: 100,000 differential ops, 20 stress rounds, 200,000 hostile
# ioctls per kernel, with fresh random seeds (about 40 minutes).
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"
fr_prepare amd64
FASTREMAP_LONG=1 FASTREMAP_HOST_TESTS=none exec "$FR_HARNESS/run.sh"
