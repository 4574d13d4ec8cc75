#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check-reach: the whole suite, as make check runs it (both lanes,
# its counts and variables), on the kernels beyond make check's three
# (FR_REACH_SUITES, common.sh): Debian 11's 5.10 (bullseye, its chroot
# and kernels cached by scripts/prepare-kernels.sh), x86-64 and arm64.
# REACH_SUITES="..." runs some of them; FASTREMAP_ARCHES="amd64" (or
# "arm64") one lane.
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"
export FASTREMAP_SUITES=${REACH_SUITES:-$FR_REACH_SUITES}
# shellcheck disable=SC2086
fr_prepare ${FASTREMAP_ARCHES:-amd64 arm64}
# make check's counts (lane-check.sh): the guests' time limits.
FASTREMAP_AMD64_DIFF_OPS=${CHECK_AMD64_DIFF_OPS:-5000} \
	FASTREMAP_ARM64_DIFF_OPS=${CHECK_ARM64_DIFF_OPS:-2500} \
	FASTREMAP_ARM64_LATENCY_MREMAP=${CHECK_ARM64_LATENCY_MREMAP:-0} \
	exec "$FR_HARNESS/check-all.sh"
