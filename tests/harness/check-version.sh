#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# One version: the top-level VERSION file is the only place a release's
# version is written by hand. Everything else either takes it at build
# time (the library and fastremapctl: -DFR_LIB_VERSION; the man pages:
# man/*.in; the pkg-config file: fastremap.pc.in; the module: Kbuild) or
# is a literal file that must agree with it (dkms.conf, which DKMS reads
# as it is; debian/changelog, which dpkg-buildpackage reads). This
# checks both, in seconds, on the host: TAP, then
# "N passed, N failed"; exit 1 on any mismatch.
#
# Usage: check-version.sh
#   Products already built under $BUILD (or $FASTREMAP_BUILD; default:
#   build) are checked too: the generated man pages, fastremap.pc and
#   fastremapctl --version. Each built module's version is check-ko.sh's.
set -u
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"
top=$FR_TOP
build=${BUILD:-$FR_BUILD}
case $build in /*) ;; *) build=$top/$build ;; esac
ub=$build/userspace

# ok STATUS DESCRIPTION [DETAIL]: passes when STATUS is 0.
ok() { tap_status "$@" || :; }
same() {	# same GOT DESCRIPTION
	if [ "$1" = "$version" ]; then ok 0 "$2"; else ok 1 "$2" "got '$1', VERSION says '$version'"; fi
}

version=$(cat "$top/VERSION" 2>/dev/null)
echo "$version" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+$'
ok $? "VERSION holds one X.Y.Z version ($version)" "VERSION: '$version'"

# dkms.conf is read by DKMS as it is: a literal that must agree.
same "$(sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$top/dkms.conf")" \
	"dkms.conf: PACKAGE_VERSION"

# So is debian/changelog's newest entry, which dpkg-buildpackage reads (a
# native package: the version is VERSION's, no Debian revision).
same "$(sed -n '1s/^fastremap (\([^)]*\)).*/\1/p' "$top/debian/changelog")" \
	"debian/changelog: the newest entry's version"

# The sources that take it at build time must not carry a literal.
grep -q 'FR_LIB_VERSION=.*\$(VERSION)' "$top/userspace/Makefile" &&
	grep -q '^VERSION := $(shell cat $(TOP)/VERSION)' "$top/userspace/Makefile"
ok $? "userspace/Makefile passes VERSION to the library (FR_LIB_VERSION)"
grep -q '^Version: @VERSION@$' "$top/userspace/fastremap.pc.in"
ok $? "fastremap.pc.in: Version: @VERSION@"
grep -q '\.\./VERSION' "$top/module/Kbuild"
ok $? "module/Kbuild reads VERSION"

for p in "$top"/userspace/man/*.in; do
	name=${p##*/}
	th=$(grep -m1 '^\.TH ' "$p")
	bad=$(grep -nE '(fastremap|libfastremap) [0-9]+\.[0-9]+\.[0-9]+' "$p" | head -1)
	if [[ $th == *'"fastremap @VERSION@"'* ]] && [ -z "$bad" ]; then
		ok 0 "man/$name: .TH \"fastremap @VERSION@\", no literal version"
	else
		ok 1 "man/$name: .TH \"fastremap @VERSION@\", no literal version" "${bad:-$th}"
	fi
done

# What a build made from them, where it exists.
if [ -d "$ub/man" ]; then
	for p in "$top"/userspace/man/*.in; do
		name=${p##*/}; name=${name%.in}
		same "$(sed -n '1,10s/^\.TH .*"fastremap \([^" ]*\)".*/\1/p' "$ub/man/$name" 2>/dev/null)" \
			"built man page $name: .TH version"
	done
else
	echo "# no built man pages in $ub/man (make userspace): not checked"
fi
if [ -f "$ub/fastremap.pc" ]; then
	same "$(sed -n 's/^Version: //p' "$ub/fastremap.pc")" "built fastremap.pc: Version"
else
	echo "# no built fastremap.pc in $ub: not checked"
fi
if [ -x "$ub/fastremapctl" ]; then
	# fastremapctl prints fastremap_version(), the library's string.
	same "$("$ub/fastremapctl" --version 2>/dev/null | sed -n 's/^fastremapctl //p')" \
		"built fastremapctl --version (the library's fastremap_version())"
else
	echo "# no built fastremapctl in $ub: not checked"
fi

tap_done_run
