#!/usr/bin/env bash
# Builds the kernel's own mm selftests that exercise mremap(2), from the
# Debian linux-source package of one suite's kernel, on this host with the
# host's gcc (dynamic executables; the VM gets the host's glibc), into
# OUTDIR: mremap_test, mremap_dontunmap (those the source has), TESTS
# (their names) and SOURCE (which package).
# Takes about 15 s per suite (most of it unpacking the .tar.xz, once).
# Usage: selftests.sh SUITE OUTDIR
#
# Only tools/testing/selftests/{mm,vm}/ and tools/testing/selftests/kselftest*.h
# are extracted, once, into $FR_CACHE/selftests/SUITE. The source tarball
# comes from, in order: the suite root's /usr/src (linux-source installed,
# as on a bookworm host), $FR_CACHE/src/tarballs, or `apt-get download
# linux-source-X.Y` run in the suite's root (the chroot's own apt sources,
# which prepare-kernels.sh wrote from this machine's mirror).
# FASTREMAP_SELFTESTS_FETCH=1 skips the local tarballs (to test the download).
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

suite=$1 out=$2
root=$(fr_root "$suite")
kver=$(fr_kver "$root")
[ -n "$kver" ] || fr_die "$suite: no kernel; run scripts/prepare-kernels.sh"
series=$(printf '%s' "$kver" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
pkg=linux-source-$series
cache="$FR_CACHE/selftests/$suite"
src="$cache/$pkg"
tests="mremap_test mremap_dontunmap"

extract() { # extract: reads the .tar.xz on stdin
	local tmp=$cache/.extract
	rm -rf "$tmp"
	mkdir -p "$tmp/$pkg"
	# mm/ or vm/ exists, not both: tar complains about the other one. The
	# top directory is linux-source-X.Y in Debian's package, linux-X.Y.Z
	# in an upstream tarball (an upstream lane's root links one).
	xz -dc | tar -x -C "$tmp/$pkg" --strip-components=1 --wildcards --no-wildcards-match-slash \
		"*/tools/testing/selftests/mm" "*/tools/testing/selftests/vm" \
		"*/tools/testing/selftests/kselftest*.h" 2>"$cache/extract.log" || true
	if [ ! -r "$tmp/$pkg/tools/testing/selftests/kselftest.h" ]; then
		cat "$cache/extract.log" >&2
		fr_die "$suite: no selftests in $pkg"
	fi
	rm -rf "$src"
	mv "$tmp/$pkg" "$src"
	rm -rf "$tmp"
}

if [ ! -e "$src/.complete" ]; then
	mkdir -p "$cache"
	if [ -z "${FASTREMAP_SELFTESTS_FETCH:-}" ] && [ -r "${root%/}/usr/src/$pkg.tar.xz" ]; then
		fr_log "$suite: selftests from ${root%/}/usr/src/$pkg.tar.xz"
		extract <"${root%/}/usr/src/$pkg.tar.xz"
		echo "${root%/}/usr/src/$pkg.tar.xz" >"$src/.origin"
	elif [ -z "${FASTREMAP_SELFTESTS_FETCH:-}" ] && [ -r "$FR_CACHE/src/tarballs/$pkg.tar.xz" ]; then
		fr_log "$suite: selftests from $FR_CACHE/src/tarballs/$pkg.tar.xz"
		extract <"$FR_CACHE/src/tarballs/$pkg.tar.xz"
		echo "$FR_CACHE/src/tarballs/$pkg.tar.xz" >"$src/.origin"
	else
		# Downloaded in the suite's own root, with its own apt sources and
		# keyring (the chroots' sources name the mirror fr_mirror gave
		# prepare-kernels.sh). The chroots carry no package lists until
		# updated; a snapshot mirror's Release may be past Valid-Until.
		fr_log "$suite: downloading $pkg (apt-get download in the $suite root)"
		dl=/var/tmp/fastremap-selftests-$(fr_build_id)
		rm -rf "${root%/}$dl"
		mkdir -p "${root%/}$dl"
		opts='-q -o Acquire::Check-Valid-Until=false -o APT::Sandbox::User=root'
		if ! fr_in_root "$suite" sh -c "cd $dl && { apt-get $opts download $pkg 2>/dev/null ||
			{ apt-get $opts update >/dev/null && apt-get $opts download $pkg; }; }" >&2; then
			rm -rf "${root%/}$dl"
			fr_die "$suite: cannot download $pkg"
		fi
		deb=$(ls "${root%/}$dl"/"$pkg"_*.deb)
		dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$pkg.tar.xz" | extract
		basename "$deb" >"$src/.origin"
		rm -rf "${root%/}$dl"
	fi
	touch "$src/.complete"
fi

st="$src/tools/testing/selftests"
dir="$st/mm"
[ -d "$dir" ] || dir="$st/vm"
[ -d "$dir" ] || fr_die "$suite: no mm/ or vm/ selftests in $src"

# The host's uapi headers (bookworm's linux-libc-dev) match the host's glibc
# and suffice for these tests; if a newer test needs newer constants, the
# suite's own uapi headers (its root's linux-libc-dev) are put first.
inc="$cache/uapi"
rm -rf "$inc"
mkdir -p "$inc"
if [ "$root" != / ] && [ -d "${root%/}/usr/include/linux" ]; then
	ln -s "${root%/}/usr/include/linux" "$inc/linux"
	ln -s "${root%/}/usr/include/asm-generic" "$inc/asm-generic"
	ln -s "${root%/}/usr/include/x86_64-linux-gnu/asm" "$inc/asm"
fi

mkdir -p "$out"
# 5.10 has mremap_dontunmap only (mremap_test came with 5.11): the tests
# built are listed in OUTDIR/TESTS.
built=
for t in $tests; do
	if [ ! -r "$dir/$t.c" ]; then
		fr_log "$suite: $pkg has no $t"
		continue
	fi
	built="$built${built:+ }$t"
	log="$out/$t.build.log"
	gcc -O2 -g -Wall -I "$st" -I "$dir" -o "$out/$t" "$dir/$t.c" >"$log" 2>&1 ||
		gcc -O2 -g -Wall -I "$inc" -I "$st" -I "$dir" -o "$out/$t" "$dir/$t.c" >>"$log" 2>&1 ||
		{ cat "$log" >&2; fr_die "$suite: building $t failed"; }
done
[ -n "$built" ] || fr_die "$suite: $pkg has none of $tests"
echo "$built" >"$out/TESTS"
printf '%s (%s) %s: %s\n' "$pkg" "$(cat "$src/.origin")" "${dir#"$src"/}" "$built" >"$out/SOURCE"
fr_log "$suite: built $built from $pkg into $out"
