#!/usr/bin/env bash
# make dkms-install: dkms add, then dkms install for every kernel under
# /lib/modules that has its headers (DKMS alone gives up when the running
# kernel has none). Says which kernels it installed for and which it
# skipped. Usage: dkms-install.sh VERSION
# FASTREMAP_DKMS_ARGS: options for every dkms command (the tests give it
# private trees).
set -uo pipefail
ver=$1
moddir=/lib/modules
# shellcheck disable=SC2086
dk() { dkms ${FASTREMAP_DKMS_ARGS:-} "$@"; }
if [ -z "$(dk status -m fastremap -v "$ver" 2>/dev/null)" ]; then
	dk add -m fastremap -v "$ver" || exit 1
fi
done_k= skipped= failed=
for d in "$moddir"/*/; do
	k=$(basename "$d")
	if [ ! -e "$d/build" ]; then
		skipped="$skipped $k"
		continue
	fi
	if dk install -m fastremap -v "$ver" -k "$k"; then
		done_k="$done_k $k"
	else
		failed="$failed $k"
	fi
done
echo "fastremap $ver: installed by DKMS for:${done_k:- no kernel}"
[ -n "$skipped" ] && echo "skipped (no headers at /lib/modules/<release>/build; install linux-headers-<release>, then run make dkms-install again):$skipped"
[ -n "$failed" ] && echo "FAILED (see dkms's make.log):$failed"
running=$(uname -r)
case " $done_k " in
*" $running "*) ;;
*) echo "note: not installed for the running kernel $running: fastremap loads once you boot one of the kernels above" ;;
esac
[ -n "$done_k" ] && [ -z "$failed" ]
