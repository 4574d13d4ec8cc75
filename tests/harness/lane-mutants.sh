#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check-mutants: planted bugs (tests/mutants): on each kernel, x86-64
# and arm64, the one case each mutant names must fail (check-mutants.sh,
# which prints per kernel and architecture the case that caught each).
# FASTREMAP_MUTANT_ARCHES chooses the architectures (default both);
# FASTREMAP_SUITES the kernels. One VM boot per mutant, kernel and
# architecture: see tests/README.md for the time it takes.
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"
arches=${FASTREMAP_MUTANT_ARCHES:-amd64 arm64}
# shellcheck disable=SC2086
fr_prepare $arches
rc=0
for a in $arches; do
	FASTREMAP_ARCH=$a "$FR_HARNESS/check-mutants.sh" || rc=1
done
exit "$rc"
