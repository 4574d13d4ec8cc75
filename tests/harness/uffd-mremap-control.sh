#!/usr/bin/env bash
# The kernel's own page-table lock order, as a control for t_move_order:
# mremap(2) of single pages (and of a THP) between two page tables while
# UFFDIO_MOVE moves another page between the same two tables
# (t_move_order --mremap; docs/upstream-mremap-uffd-lock-order.md). On the
# kernels that have UFFDIO_MOVE (6.8+) whose mremap(2) takes the two locks
# source first, the two CPUs deadlock. Each scenario boots a guest of its
# own, with no module loaded (tests/harness/guest/init-control), a soft-lockup
# watchdog that panics after 6 s (the program sets it) and a hard limit,
# and is reported: deadlocked (with the stacks of the report), no deadlock
# in the time given, not applicable (no UFFDIO_MOVE), or inconclusive.
# Only an inconclusive run fails: a deadlock is the kernel's, and expected
# on the affected kernels. Not part of make check (make
# check-mremap-lockorder).
# Usage: uffd-mremap-control.sh [SUITE...]   (default: trixie sid)
# FASTREMAP_CONTROL_SECONDS: per scenario (default 20);
# FASTREMAP_CONTROL_TIMEOUT: each guest's hard limit (default 120 s).
set -uo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

suites=${*:-trixie sid}
secs=${FASTREMAP_CONTROL_SECONDS:-20}
limit=${FASTREMAP_CONTROL_TIMEOUT:-120}
fr_is_arm64 && limit=$((limit * 2))
out="$FR_BUILD/mremap-control"
mkdir -p "$out"

fr_log "building the test programs"
# shellcheck disable=SC2046
fr_cross make -C "$FR_TOP" --no-print-directory BUILD="$FR_BUILD" $(fr_cc_args) \
	"$FR_BUILD/bin/t_move_order" >"$out/build.log" 2>&1 ||
	{ tail -n 20 "$out/build.log"; fr_die "t_move_order did not build"; }

summary=() inconclusive=0
for suite in $suites; do
	# vm-run.sh stages a module and reads the kernel's version from its
	# build; the guest's init does not load it.
	"$FR_TOP/scripts/build-module.sh" "$suite" || fr_die "$suite: module build failed"
	for sc in pte thp; do
		log="$out/$suite-$sc.log"
		echo "t_move_order --mremap --only $sc $secs" >"$out/args"
		fr_log "$suite: mremap(2) against UFFDIO_MOVE ($sc), $secs s, guest limit $limit s"
		start=$(date +%s)
		FASTREMAP_VM_INIT="$FR_HARNESS/guest/init-control" FASTREMAP_VM_KMODS= \
			FASTREMAP_VM_ARGS="$out/args" FASTREMAP_VM_TIMEOUT=$limit \
			"$FR_HARNESS/vm-run.sh" "$suite" "$FR_BUILD/bin" "$log" t_move_order
		took=$(($(date +%s) - start))
		kver=$(sed -n 's/.*FR-KERNEL \(.*\)$/\1/p' "$log" | head -n 1)
		# When the scenario started and when the first report came, in
		# guest seconds: the lockup began "stuck for N s" before the report.
		t0=$(sed -n 's/^# .* from uptime \([0-9.]*\) s$/\1/p' "$log" | head -n 1)
		bug=$(grep -m1 'BUG: soft lockup' "$log")
		if [ -n "$bug" ]; then
			at=$(sed -E 's/^\[ *([0-9.]+)\].*/\1/' <<<"$bug")
			stuck=$(sed -E 's/.*stuck for ([0-9]+)s.*/\1/' <<<"$bug")
			after=$(awk -v a="$at" -v s="$stuck" -v t="${t0:-0}" \
				'BEGIN { v = a - s - t; printf "%.0f", v < 0 ? 0 : v }')
			[ "$after" = 0 ] && after="less than 1" # the report's seconds are whole
			verdict="DEADLOCKED $after s into the race (report: ${bug#*] })"
			# The frames that hold or wait for the two locks.
			frames=$(grep -oE '(move_ptes|move_huge_pmd|move_pgt_entry|move_page_tables|move_pages_ptes|move_pages_huge_pmd|move_pages|userfaultfd_ioctl|_raw_spin_lock)\+[0-9a-fx/]+' \
				"$log" | sed -E 's/\+.*//' | awk '!seen[$0]++' | paste -sd' ')
			verdict+="; stacks: $frames"
		elif grep -q '^FR-END t_move_order 0$' "$log" && grep -q '# SKIP' "$log"; then
			verdict="not applicable: $(sed -n 's/.*# SKIP //p' "$log" | head -n 1)"
		elif grep -q '^FR-END t_move_order 0$' "$log"; then
			verdict="no deadlock in $secs s ($(sed -n "s/^# $sc: \(A .*\)/\1/p" "$log" | head -n 1))"
		else
			verdict="INCONCLUSIVE: the guest ended without a lockup report or a result (log: $log)"
			inconclusive=$((inconclusive + 1))
		fi
		line="$suite (${kver:-?}) $sc: $verdict [guest ran $took s]"
		echo "# $line"
		summary+=("$line")
	done
done
echo "# ===== mremap(2) against UFFDIO_MOVE, lock order"
for l in "${summary[@]}"; do echo "# $l"; done
[ "$inconclusive" = 0 ]
