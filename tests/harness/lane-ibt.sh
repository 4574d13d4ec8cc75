#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check-ibt: a machine that enforces kernel IBT, emulated: Debian
# 13's kernel in Bochs (Tiger Lake model), the module loaded, a move,
# t_shstk (CET shadow stacks, which no QEMU guest has), the log; and a
# negative control that must log "Missing ENDBR". A few minutes, not in
# make check (check-ibt.sh).
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"
fr_prepare amd64
exec "$FR_HARNESS/check-ibt.sh"
