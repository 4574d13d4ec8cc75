#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds the library and the shim the ways packagers do, and prints TAP:
#  - for 32-bit x86 (gcc -m32, from gcc-multilib), linked with -z defs;
#  - for a 32-bit target without 64-bit atomic instructions (-m32
#    -march=i486, standing in for armel, mips32 and ppc32, where 64-bit
#    atomics go through libatomic and its locks): no libatomic call, so the
#    async-signal safety the man pages promise holds there too;
#  - with musl (musl-gcc, the kernel's uapi headers from the system), the
#    library, the shim and the tool, linked with -z defs;
#  - the public header as C89 and C++98 with -pedantic;
#  - warnings are not errors by default, and are with WERROR=1.
# Usage: tests/harness/build-test.sh
set -uo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
SRC=$TOP/userspace
# shellcheck source=tests/harness/tap.sh
. "$TOP/tests/harness/tap.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fastremap-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log
CC=${CC:-cc}
# Each result's log is its own, its tail shown under a failure.
TAP_LOG=$log TAP_SHOW=20
: >"$log"

# build32 NAME FLAGS...: the library and the shim as shared objects, -z defs.
build32() {
	local name=$1
	shift
	local cflags=(-std=c11 -D_GNU_SOURCE -I"$SRC" -I"$TOP/uapi" -Wall -Wextra -Werror -fPIC -O2 "$@")
	"$CC" "${cflags[@]}" -c -o "$tmp/$name-lib.o" "$SRC/libfastremap.c" &&
		"$CC" "${cflags[@]}" -c -o "$tmp/$name-preload.o" "$SRC/preload.c" &&
		"$CC" "$@" -shared -Wl,--version-script="$SRC/libfastremap.map" -Wl,-z,defs \
			-o "$tmp/$name-lib.so" "$tmp/$name-lib.o" &&
		"$CC" "$@" -shared -Wl,--version-script="$SRC/preload.map" -Wl,-z,defs \
			-o "$tmp/$name-preload.so" "$tmp/$name-preload.o" "$tmp/$name-lib.o"
}
no_atomic_calls() { # no_atomic_calls OBJECT...: none calls into libatomic
	local u
	u=$(nm -u "$@" | grep -E '__atomic_|__sync_' || true)
	echo "libatomic calls: ${u:-none}"
	[ -z "$u" ]
}

if echo 'int main(void) { return 0; }' | "$CC" -m32 -x c -o "$tmp/m32" - >"$log" 2>&1; then
	tap_check "i386 (-m32): the library and the shim build and link with -z defs" build32 i386 -m32
	tap_check "i386 (-m32): no libatomic calls" no_atomic_calls "$tmp/i386-lib.o" "$tmp/i386-preload.o"
	tap_check "no 64-bit atomics (-m32 -march=i486, as armel/mips32/ppc32): they build and link with -z defs" \
		build32 i486 -m32 -march=i486
	tap_check "no 64-bit atomics: no libatomic calls" no_atomic_calls "$tmp/i486-lib.o" "$tmp/i486-preload.o"
else
	echo "$CC -m32 cannot link: install gcc-multilib (scripts/deps.sh does)" >>"$log"
	tap_status 1 "a 32-bit compiler (gcc -m32) is available"
fi

if command -v musl-gcc >/dev/null; then
	# musl has no kernel headers of its own: the system's, after musl's.
	triplet=$(gcc -dumpmachine 2>/dev/null)
	tap_check "musl: the library, the shim and fastremapctl build with WERROR=1" \
		make -C "$SRC" --no-print-directory BUILD="$tmp/musl" CC=musl-gcc WERROR=1 \
			CPPFLAGS="-idirafter /usr/include -idirafter /usr/include/$triplet"
else
	echo "musl-gcc not found: install musl-tools (scripts/deps.sh does)" >>"$log"
	tap_status 1 "a musl compiler (musl-gcc) is available"
fi

tap_check "fastremap.h compiles as C89 with -pedantic" \
	"$CC" -std=c89 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c -I"$SRC" - <<<'#include <fastremap.h>'
if command -v c++ >/dev/null; then
	tap_check "fastremap.h compiles as C++98 with -pedantic" \
		c++ -std=c++98 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c++ -I"$SRC" - <<<'#include <fastremap.h>'
else
	tap_status 1 "a C++ compiler is available for the header check"
fi

# A warning whatever the code (a macro defined twice) stands in for a
# newer compiler's new one.
warn="-O2 -DFR_WARN_PROBE=1 -DFR_WARN_PROBE=2"
make -C "$SRC" --no-print-directory BUILD="$tmp/warn" CFLAGS="$warn" >"$log" 2>&1
rc=$?
w=$(grep -c 'warning:' "$log")
tap_ok "$([ $rc = 0 ] && [ "$w" -gt 0 ] && echo 1)" "default build: $w warnings with CFLAGS='$warn', still built"
make -C "$SRC" --no-print-directory BUILD="$tmp/werror" CFLAGS="$warn" WERROR=1 >"$log" 2>&1
rc=$?
: >"$log"
tap_ok "$([ $rc != 0 ] && echo 1)" "WERROR=1: the same warnings fail the build"

tap_done
