#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check-debug: the debug-kernel lanes: the whole in-VM suite on
# Debian 12's 6.1 source (debug) and unstable's 7.x source (debug7),
# built with KASAN, PROVE_LOCKING, DEBUG_VM, DEBUG_VM_PGTABLE,
# PAGE_TABLE_CHECK, DEBUG_PAGEALLOC and fault injection (built once,
# cached; about 10 and 40 minutes the first time). DEBUG_LANES=debug7
# runs one.
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"
lanes=${DEBUG_LANES:-debug debug7}
for l in $lanes; do "$FR_TOP/scripts/build-debug-kernel.sh" "$l"; done
FASTREMAP_SUITES="$lanes" FASTREMAP_HOST_TESTS=none exec "$FR_HARNESS/run.sh"
