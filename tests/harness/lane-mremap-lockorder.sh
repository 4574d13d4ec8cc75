#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check-mremap-lockorder: the kernel's own lock order against
# UFFDIO_MOVE: mremap(2) of single pages and of a THP racing UFFDIO_MOVE
# over shared page tables (t_move_order --mremap), each in a guest of its
# own with a hard limit, reported (deadlocked or not), not failed: it
# deadlocks the kernels that have UFFDIO_MOVE
# (docs/upstream-mremap-uffd-lock-order.md). Not in make check. About
# 30 s per scenario and kernel. MREMAP_LOCKORDER_SUITES: the kernels
# (default trixie sid).
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"
fr_prepare amd64
# shellcheck disable=SC2086
exec "$FR_HARNESS/uffd-mremap-control.sh" ${MREMAP_LOCKORDER_SUITES:-trixie sid}
