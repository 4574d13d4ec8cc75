#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check: the whole suite on three kernels x two architectures under
# QEMU (what CI runs; scripts/deps.sh installs what it needs): the x86-64
# lane with t_remap_diff at 5,000 random operations instead of 10,000,
# then the arm64 lane with 2,500 and t_remap_latency without its
# mremap(2) reference runs (their time under emulation, CI's time limit;
# tests/README.md, "What `make check` costs"): make check CHECK_AMD64_DIFF_OPS=N
# CHECK_ARM64_DIFF_OPS=N CHECK_ARM64_LATENCY_MREMAP=1 changes them. make
# check-all runs both lanes in full.
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"
fr_prepare amd64 arm64
FASTREMAP_AMD64_DIFF_OPS=${CHECK_AMD64_DIFF_OPS:-5000} \
	FASTREMAP_ARM64_DIFF_OPS=${CHECK_ARM64_DIFF_OPS:-2500} \
	FASTREMAP_ARM64_LATENCY_MREMAP=${CHECK_ARM64_LATENCY_MREMAP:-0} \
	exec "$FR_HARNESS/check-all.sh"
