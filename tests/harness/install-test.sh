#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Installs libfastremap into a temporary DESTDIR with PREFIX=/usr, builds
# programs against the installed copy with pkg-config, checks the exported
# symbols and their versions, the man pages, the LD_PRELOAD shim on an
# unmodified program and the tool, then uninstalls and checks nothing is
# left. Prints TAP. Needs no kernel module: the library falls back to
# mremap(2) where there is none, and takes the fast path where there is.
#
# Usage: tests/harness/install-test.sh     (BUILD=DIR to reuse a build)
set -uo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
SRC=$TOP/userspace
# shellcheck source=tests/harness/tap.sh
. "$TOP/tests/harness/tap.sh"
VERSION=$(cat "$TOP/VERSION")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fastremap-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
BUILD=${BUILD:-$tmp/build}
root=$tmp/root
lib=$root/usr/lib
log=$tmp/log

# Each result's log is its own, its tail shown under a failure.
TAP_LOG=$log TAP_SHOW=20
finish() {
	tap_done
	exit
}
: >"$log"

# ---- install ----
tap_check "make install DESTDIR=\$tmp PREFIX=/usr" \
	make -C "$SRC" --no-print-directory install DESTDIR="$root" PREFIX=/usr BUILD="$BUILD"
[ -f "$lib/libfastremap.so.1.0.0" ] || finish

files="usr/lib/libfastremap.so.1.0.0 usr/lib/libfastremap.a
	usr/lib/libfastremap-preload.so usr/include/fastremap.h
	usr/lib/pkgconfig/fastremap.pc usr/bin/fastremapctl
	usr/share/man/man3/fastremap.3 usr/share/man/man3/fastremap_remap.3
	usr/share/man/man3/fastremap_info.3 usr/share/man/man3/fastremap_strreason.3
	usr/share/man/man3/fastremap_version.3 usr/share/man/man4/fastremap.4
	usr/share/man/man8/fastremap-preload.8 usr/share/man/man8/fastremapctl.8"
missing=
for f in $files; do [ -f "$root/$f" ] || missing="$missing $f"; done
echo "missing:$missing" >"$log"
tap_status "$([ -z "$missing" ]; echo $?)" "every file is installed"
tap_check "libfastremap.so.1 -> libfastremap.so.1.0.0, libfastremap.so -> libfastremap.so.1" \
	test "$(readlink "$lib/libfastremap.so.1")" = libfastremap.so.1.0.0 -a \
	"$(readlink "$lib/libfastremap.so")" = libfastremap.so.1
tap_check "nothing was written outside DESTDIR's usr/" \
	test "$(ls "$root")" = usr

# ---- symbols ----
readelf -d "$lib/libfastremap.so.1.0.0" >"$tmp/dyn"
tap_check "soname is libfastremap.so.1" grep -q 'Library soname: \[libfastremap.so.1\]' "$tmp/dyn"
readelf --dyn-syms -W "$lib/libfastremap.so.1.0.0" >"$tmp/syms"
exported=$(awk '$7 != "UND" && $5 == "GLOBAL" && $4 == "FUNC" { print $8 }' "$tmp/syms" | sort | tr '\n' ' ')
want="fastremap@@FASTREMAP_1.0 fastremap_info@@FASTREMAP_1.0 fastremap_move@@FASTREMAP_1.1 fastremap_remap@@FASTREMAP_1.0 fastremap_strreason@@FASTREMAP_1.0 fastremap_version@@FASTREMAP_1.0 "
echo "exported: $exported" >"$log"
tap_status "$([ "$exported" = "$want" ]; echo $?)" "readelf: exactly the six API functions, versioned FASTREMAP_1.0 (fastremap_move: 1.1)"
objdump -T "$lib/libfastremap.so.1.0.0" >"$tmp/objdump"
tap_check "objdump -T shows the FASTREMAP_1.0 version node" grep -q 'FASTREMAP_1\.0.*fastremap_remap' "$tmp/objdump"
shim=$(readelf --dyn-syms -W "$lib/libfastremap-preload.so" | awk '$7 != "UND" && $5 == "GLOBAL" && $4 == "FUNC" { print $8 }' | tr '\n' ' ')
echo "shim exports: $shim" >"$log"
tap_status "$([ "$shim" = "mremap " ]; echo $?)" "the shim exports mremap and nothing else"

# ---- pkg-config ----
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
flags=$(pkg-config --cflags --libs fastremap 2>"$log")
tap_status $? "pkg-config --cflags --libs fastremap: $flags"
tap_check "pkg-config: version $VERSION from the VERSION file" \
	test "$(pkg-config --modversion fastremap)" = "$VERSION"
tap_check "pkg-config: the flags point into DESTDIR" \
	sh -c "echo '$flags' | grep -q -- '-L$lib' && echo '$flags' | grep -q -- '-lfastremap'"

cat >"$tmp/prog.c" <<'PROG'
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <fastremap.h>

int main(int argc, char **argv)
{
	size_t len = 8 << 20;
	struct fastremap_stats st = { .size = sizeof(st) };
	struct fastremap_abi_info ai = { .size = sizeof(ai) };
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *q;
	void *r;
	int info;

	if (p == MAP_FAILED)
		return 1;
	memset(p, 0x5a, len);
	q = fastremap(p, len, 2 * len, MREMAP_MAYMOVE);
	if (q == MAP_FAILED || q[len - 1] != 0x5a || q[2 * len - 1] != 0)
		return 2;
	if (fastremap_remap(q, 2 * len, len, MREMAP_MAYMOVE, NULL, 0, &st, &r))
		return 3;
	if (fastremap(q + 1, len, len, MREMAP_MAYMOVE) != MAP_FAILED || errno != EINVAL)
		return 4;
	info = fastremap_info(&ai);
	printf("version %s, %s, info %d\n", fastremap_version(),
	       st.used_module ? "module" : fastremap_strreason(st.reason), info);
	return argc > 1 && strcmp(argv[1], fastremap_version()) ? 5 : 0;
}
PROG
# shellcheck disable=SC2086
tap_check "a program builds against the installed library with pkg-config" \
	cc -std=c11 -Wall -Wextra -Werror -o "$tmp/prog" "$tmp/prog.c" $flags
tap_check "it needs libfastremap.so.1" sh -c "readelf -d '$tmp/prog' | grep -q 'NEEDED.*\[libfastremap.so.1\]'"
tap_check "it loads libfastremap.so.1 from DESTDIR" \
	sh -c "LD_LIBRARY_PATH='$lib' LD_TRACE_LOADED_OBJECTS=1 '$tmp/prog' | grep -q '$lib/libfastremap.so.1'"
LD_LIBRARY_PATH=$lib "$tmp/prog" "$VERSION" >"$log" 2>&1
rc=$?
out=$(cat "$log")
tap_status $rc "it runs against the installed library: $out"
# shellcheck disable=SC2086
tap_check "pkg-config --static: a static link with libfastremap.a runs" \
	sh -c "cc -std=c11 -o '$tmp/prog-static' '$tmp/prog.c' $(pkg-config --cflags fastremap) '$lib/libfastremap.a' && '$tmp/prog-static' '$VERSION'"
tap_check "the header compiles as C99 with -pedantic" \
	cc -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c \
	-I"$root/usr/include" - <<<'#include <fastremap.h>'
if command -v c++ >/dev/null; then
	tap_check "the header compiles as C++" c++ -Wall -Wextra -Werror -fsyntax-only \
		-x c++ -I"$root/usr/include" - <<<'#include <fastremap.h>'
else
	tap_skip "no C++ compiler" "the header compiles as C++"
fi

# ---- man pages ----
for p in "$root"/usr/share/man/man*/*; do
	w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l -Tutf8 "$p" 2>&1 >/dev/null)
	echo "$w" >"$log"
	tap_status "$([ -z "$w" ]; echo $?)" "man --warnings: ${p#"$root"/usr/share/man/} formats without warnings"
done
tap_check "man -M finds fastremap_remap(3) in the installed tree" \
	sh -c "MANWIDTH=80 man -M '$root/usr/share/man' 3 fastremap_remap | grep -q FASTREMAP_NO_FALLBACK"

# ---- the shim on an unmodified program ----
cat >"$tmp/plain.c" <<'PLAIN'
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* Knows nothing of fastremap: mremap() from the C library. */
int main(void)
{
	size_t len = 8 << 20, al = 2 << 20;
	char *res = mmap(NULL, 3 * len + al, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *src = (char *)(((uintptr_t)res + al - 1) & ~(uintptr_t)(al - 1));
	/* Misaligned: more extents than the library leaves to mremap(2). */
	char *dst = src + 2 * len + 4096, *q;

	if (mmap(src, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != src)
		return 1;
	memset(src, 0x33, len);
	errno = 77;
	q = mremap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	if (q != dst || q[0] != 0x33 || q[len - 1] != 0x33 || errno != 77)
		return 2;
	if (mremap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst + len) != MAP_FAILED ||
	    errno != EFAULT)
		return 3;
	puts("plain: ok");
	return 0;
}
PLAIN
tap_check "an unmodified program builds without fastremap" cc -std=c11 -o "$tmp/plain" "$tmp/plain.c"
tap_check "it runs without the shim" "$tmp/plain"
so=$lib/libfastremap-preload.so
LD_PRELOAD=$so FASTREMAP_PRELOAD_LOG=1 "$tmp/plain" >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out" "$tmp/err" >"$log"
tap_status $rc "with LD_PRELOAD it runs the same: results, errno"
sed 's/^/# /' "$tmp/err"
tap_check "FASTREMAP_PRELOAD_LOG=1: a logged decision for the move" \
	grep -qE '^fastremap-preload: mremap\(0x[0-9a-f]+, 8388608, 8388608, MAYMOVE\|FIXED, 0x[0-9a-f]+\) = 0x[0-9a-f]+: (module \(|mremap\(2\) fallback: )' "$tmp/err"
tap_check "FASTREMAP_PRELOAD_LOG=1: the failed call is logged with its errno" \
	grep -qE '^fastremap-preload: mremap\(.*\) = -1 EFAULT: ' "$tmp/err"
tap_check "the log goes to stderr only" grep -qx 'plain: ok' "$tmp/out"
if [ -e /dev/fastremap ]; then
	tap_check "with the module: the move took the fast path" grep -q ': module (' "$tmp/err"
else
	tap_check "without the module: the log says the fallback and why" \
		grep -q 'mremap(2) fallback: no /dev/fastremap (module not loaded) (ENOENT)' "$tmp/err"
fi
LD_PRELOAD=$so "$tmp/plain" >"$tmp/out" 2>"$tmp/err"
rc=$?
tap_status "$([ $rc = 0 ] && [ ! -s "$tmp/err" ]; echo $?)" "without FASTREMAP_PRELOAD_LOG the shim says nothing"
LD_PRELOAD=$so FASTREMAP_PRELOAD_DISABLE=1 FASTREMAP_PRELOAD_LOG=1 "$tmp/plain" >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/err" >"$log"
tap_status "$([ $rc = 0 ] && grep -q 'disabled by FASTREMAP_PRELOAD_DISABLE' "$tmp/err" &&
	! grep -q 'module (\|fallback' "$tmp/err"; echo $?)" \
	"FASTREMAP_PRELOAD_DISABLE=1: plain system call, logged as disabled"
LD_PRELOAD=$so FASTREMAP_PRELOAD_LOG=0 "$tmp/plain" >"$tmp/out" 2>"$tmp/err"
tap_status "$([ ! -s "$tmp/err" ]; echo $?)" "FASTREMAP_PRELOAD_LOG=0 is off"

# ---- the tool ----
tap_check "fastremapctl --version" sh -c "'$root/usr/bin/fastremapctl' --version | grep -qx 'fastremapctl $VERSION'"
tap_check "fastremapctl selftest passes" "$root/usr/bin/fastremapctl" selftest
"$root/usr/bin/fastremapctl" info >"$log" 2>&1
rc=$?
if [ -e /dev/fastremap ]; then
	tap_status $rc "fastremapctl info: the device is usable (exit 0)"
else
	tap_status "$([ $rc = 3 ]; echo $?)" "fastremapctl info without the device: exit 3"
fi
# A device that cannot be examined (EACCES on /dev, in a mount namespace of
# our own, as an unprivileged user) is not reported as a module not loaded.
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null && command -v setpriv >/dev/null; then
	unshare -m sh -c 'mount --make-rprivate / &&
		mount -t tmpfs -o mode=0755 none /mnt && cp "$1" /mnt/ctl &&
		mount -t tmpfs -o mode=0700 none /dev &&
		exec setpriv --reuid=65534 --regid=65534 --clear-groups /mnt/ctl info' \
		sh "$root/usr/bin/fastremapctl" >"$log" 2>&1
	tap_status "$(grep -q 'cannot be examined (Permission denied)' "$log" &&
		! grep -q 'absent\|not loaded' "$log"; echo $?)" \
		"fastremapctl info: stat() failing with EACCES is not 'absent, module not loaded'"
else
	tap_skip "needs root and unshare -m" "fastremapctl info with /dev not searchable"
fi
"$root/usr/bin/fastremapctl" frobnicate >"$log" 2>&1
tap_status "$([ $? = 2 ] && grep -q Usage "$log"; echo $?)" "fastremapctl: an unknown command is a usage error (exit 2)"

# ---- uninstall ----
tap_check "make uninstall DESTDIR=\$tmp PREFIX=/usr" \
	make -C "$SRC" --no-print-directory uninstall DESTDIR="$root" PREFIX=/usr BUILD="$BUILD"
left=$(find "$root" -type f -o -type l)
echo "left: $left" >"$log"
tap_status "$([ -z "$left" ]; echo $?)" "uninstall leaves no file or link behind"
finish
