#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check-reach: the whole suite, as make check runs it (both lanes,
# its counts and variables), on the kernels beyond make check's three
# (FR_REACH_SUITES, common.sh): Debian 11's 5.10 (bullseye), Debian 13
# with trixie-backports' 7.3 (trixie-bpo, built with gcc-14) and unstable
# with experimental's 7.3 release candidate (experimental, gcc-16), x86-64
# and arm64, the upstream lanes (FR_UPSTREAM_SUITES: lts618, the 6.18
# LTS, and up617, 6.17; x86-64 and arm64) and Debian's arm64-16k kernels
# of trixie and sid (trixie-16k, sid-16k: arm64 only). Each Debian suite's
# kernel, headers and gcc come from a chroot of its own
# (scripts/prepare-kernels.sh; a few minutes each, once); an upstream
# lane's kernel is built here from trixie-backports' upstream tarball
# (scripts/build-debug-kernel.sh SUITE; 12-40 minutes each on two cores,
# once per architecture: arm64's cross-built in the bookworm chroot).
# REACH_SUITES="..." runs some of them; FASTREMAP_ARCHES="amd64" (or
# "arm64") one lane.
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"
export FASTREMAP_SUITES=${REACH_SUITES:-$FR_REACH_SUITES}
# shellcheck disable=SC2086
fr_prepare ${FASTREMAP_ARCHES:-amd64 arm64}
# make check's reduced counts (lane-check.sh): at full counts a 7.3.4
# guest overran the 900-s VM limit in t_remap_diff under load.
FASTREMAP_AMD64_DIFF_OPS=${CHECK_AMD64_DIFF_OPS:-5000} \
	FASTREMAP_ARM64_DIFF_OPS=${CHECK_ARM64_DIFF_OPS:-2500} \
	FASTREMAP_ARM64_LATENCY_MREMAP=${CHECK_ARM64_LATENCY_MREMAP:-0} \
	exec "$FR_HARNESS/check-all.sh"
