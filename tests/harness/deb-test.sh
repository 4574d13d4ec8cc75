#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The Debian packages (make deb) as a lab installs them, in each suite's
# build root: apt installs fastremap-dkms, libfastremap1, libfastremap-dev
# and fastremap-tools; DKMS builds the module for the root's kernel as the
# package's postinst asks it to; t_lib and t_move_lib are compiled there
# against the installed library and headers (flags from the installed
# fastremap.pc); then that kernel boots under QEMU with the DKMS-built
# module (a plain insmod, tests/harness/guest/init-dkms) and the root's
# loader, libc and installed libfastremap.so.1, and runs t_remap and t_move
# (the module) and t_lib and t_move_lib (the library's fast path). Last,
# apt purges the packages: nothing they installed or DKMS built may be
# left (dpkg -L's files, dkms status, /usr/src, /var/lib/dkms,
# /lib/modules/*/updates, and any other path the purge left new in the
# root).
#
# The cached roots are never written: each run works on an overlay of the
# root (lowerdir: the cache; upperdir: a scratch folder removed at the
# end), mounted afresh in a private mount namespace for each command.
# A suite whose root is missing is skipped with the reason. A package
# whose libc6 dependency the root's libc does not satisfy (the packages
# are built on this machine, Debian 12) is left out with the reason.
#
# Prints TAP and "N passed, N failed, N skipped". Usage: deb-test.sh
# (FASTREMAP_DEB_SUITES: default "bullseye bookworm trixie sid";
# FASTREMAP_DEB_DIR: the packages, default build/deb, made by make deb;
# FASTREMAP_DEB_VM_TESTS: the in-VM programs, default
# "t_remap t_move t_lib t_move_lib").
set -uo pipefail
# A build tree of its own: build/SUITE holds the lanes' test builds of the
# module, which the DKMS-built one must not replace.
export FASTREMAP_BUILD=${FASTREMAP_DEB_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build/deb-test}
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

suites=${FASTREMAP_DEB_SUITES:-bullseye bookworm trixie sid}
debdir=${FASTREMAP_DEB_DIR:-$FR_TOP/build/deb}
programs=${FASTREMAP_DEB_VM_TESTS:-t_remap t_move t_lib t_move_lib}
# The programs built in the root against the installed library; the rest
# are the static test programs of make.
dynamic="t_lib t_move_lib"
ver=$(cat "$FR_TOP/VERSION")
pkgs="fastremap-dkms libfastremap1 libfastremap-dev fastremap-tools"
work=/var/tmp/fastremap-deb-$(fr_build_id)
# The overlays' scratch layers, also where a run is stopped.
trap 'rm -rf "${work:?}"' EXIT
results=$FR_BUILD/results
rm -rf "$results" && mkdir -p "$results"

# ok OK? DESCRIPTION [LOG]: a TAP line ("1": passed), the LOG's last lines
# under a failure.
ok() {
	local tail=
	[ "$1" = 1 ] || [ -z "${3:-}" ] || tail=$(tail -n 15 "$3" 2>/dev/null)
	tap_ok "$1" "$2" "$tail" || true
}

# in_root SUITE COMMAND...: COMMAND as root in the overlay of SUITE's root,
# with /proc (kbuild reads it) and the exchange folder at /mnt.
in_root() {
	local s=$1
	shift
	unshare --mount --propagation private -- sh -c \
		'mount -t overlay overlay -o "lowerdir=$0,upperdir=$1/upper,workdir=$1/work" "$1/root" &&
		mount -t proc proc "$1/root/proc" && mount --bind "$1/x" "$1/root/mnt" &&
		r=$1/root && shift && exec chroot "$r" "$@"' \
		"$(fr_chroot_dir "$s")" "$work/$s" "$@"
}

# The paths this run added to SUITE's root ("+ PATH") or took from it
# ("- PATH"): its overlay's upper layer, less what the root already has
# (files the run only changed, copied up) and the package manager's own
# state and logs. (Not a walk of the whole root: other lanes may add to
# the cached root meanwhile, such as a mount point for their checkout.)
root_paths() { # root_paths SUITE
	local up=$work/$1/upper lower f
	lower=$(fr_chroot_dir "$1")
	(cd "$up" && find . -mindepth 1 \( -path ./tmp -o -path ./var/tmp -o -path ./var/log \
		-o -path ./var/cache -o -path ./var/lib/apt -o -path ./var/lib/dpkg \
		-o -path ./proc -o -path ./mnt \) -prune -o -print) |
		while read -r f; do
			if [ -c "$up/$f" ] && [ "$(stat -c %t:%T "$up/$f")" = 0:0 ]; then
				echo "- ${f#.}"	# an overlay whiteout
			elif [ ! -e "$lower/$f" ] && [ ! -L "$lower/$f" ]; then
				echo "+ ${f#.}"
			fi
		done | LC_ALL=C sort
}

# Whether the root's libc6 satisfies a package's libc6 dependency.
libc_ok() { # libc_ok SUITE DEB
	local need have
	need=$(dpkg-deb -f "$2" Depends | tr ',' '\n' | sed -n 's/^ *libc6 (>= \(.*\)).*/\1/p')
	[ -z "$need" ] && return 0
	have=$(in_root "$1" dpkg-query -W -f '${Version}' libc6)
	dpkg --compare-versions "$have" ge "$need"
}

# What the packages left in SUITE's root, one "KIND: what" a line: files
# dpkg -L listed (directories aside: others share them), dkms status,
# fastremap's sources and DKMS tree, modules under updates/, and the
# paths this run added to the root or took from it (root_paths). DKMS's own
# signing key (/var/lib/dkms/mok.key, mok.pub) is DKMS's, not fastremap's:
# made at its first build of any module, kept for the modules it signs
# later and for the key a Secure Boot machine enrolled. So are Python's
# byte-code caches (__pycache__) of the tools DKMS runs: Debian 11's asks
# lsb_release, whose first run as root writes one (the packages ship no
# Python).
leftovers() { # leftovers SUITE
	local s=$1
	in_root "$s" sh -c 'while read -r f; do
		[ -d "$f" ] && continue
		{ [ -e "$f" ] || [ -L "$f" ]; } && echo "listed: $f"; done; true' <"$work/$s/listed"
	in_root "$s" dkms status 2>&1 | sed 's/^/dkms: /'
	in_root "$s" find /usr/src /var/lib/dkms -name '*fastremap*' | sed 's/^/src: /'
	in_root "$s" find /lib/modules/ -path '*/updates/*' ! -type d | sed 's/^/updates: /'
	root_paths "$s" | LC_ALL=C comm -3 "$work/$s/before" - |
		grep -vxE '[[:space:]]*\+ (/var/lib/dkms/mok\.(key|pub)|/usr/lib/python3[^/]*/.*__pycache__(/[^/]*\.pyc)?)' |
		sed 's/^[[:space:]]*/paths: /'
}

# The static test programs, built once (make, as the lanes build them).
static=
for p in $programs; do
	case " $dynamic " in *" $p "*) ;; *) static="$static $FR_BUILD/bin/$p" ;; esac
done
if [ -n "$static" ]; then
	# shellcheck disable=SC2086
	make -C "$FR_TOP" --no-print-directory WERROR=1 BUILD="$FR_BUILD" $static \
		>"$results/build-tests.log" 2>&1
	ok "$([ $? = 0 ] && echo 1)" "the static in-VM programs build:${static//$FR_BUILD\/bin\// }" \
		"$results/build-tests.log"
fi

for suite in $suites; do
	echo "# ===== $suite"
	lower=$(fr_chroot_dir "$suite")
	k=$(fr_kver "$lower")
	# (The headers' link is the root's: an absolute one points into it.)
	hdr=$(readlink "$lower/lib/modules/$k/build" 2>/dev/null)
	case $hdr in /*) hdr=$lower$hdr ;; ?*) hdr=$lower/lib/modules/$k/$hdr ;; esac
	if [ -z "$k" ] || [ ! -x "$lower/usr/sbin/dkms" ] || [ ! -d "$hdr" ]; then
		tap_skip "no $suite root with a kernel, its headers and dkms at $lower (scripts/prepare-kernels.sh makes it)" \
			"$suite: the packages install, load and pass"
		continue
	fi
	log="$results/$suite-install.log"
	rm -rf "${work:?}/$suite"
	mkdir -p "$work/$suite/upper" "$work/$suite/work" "$work/$suite/root" "$work/$suite/x/debs" \
		"$work/$suite/x/bin" "$FR_BUILD/$suite/bin"

	# The packages the root can take.
	want=
	for p in $pkgs; do
		deb=$(find "$debdir" -maxdepth 1 -name "${p}_${ver}_*.deb" | head -n 1)
		if [ -z "$deb" ]; then
			ok 0 "$suite: $p's package in $debdir (make deb)"
		elif libc_ok "$suite" "$deb"; then
			cp "$deb" "$work/$suite/x/debs/"
			want="$want $p"
		else
			tap_skip "built on this machine: $(dpkg-deb -f "$deb" Depends | grep -o 'libc6 ([^)]*)'), newer than $suite's libc" \
				"$suite: $p installs"
		fi
	done
	echo "# $suite ($k): installing$want"
	root_paths "$suite" >"$work/$suite/before"

	# ---- install: apt, as the README says; DKMS builds in the postinst ----
	t0=$(date +%s)
	in_root "$suite" sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		/mnt/debs/*.deb' >"$log" 2>&1
	rc=$?
	echo "# $suite: apt-get install took $(($(date +%s) - t0)) s (load $(cut -d' ' -f1-3 /proc/loadavg))"
	ok "$([ $rc = 0 ] && echo 1)" "$suite: apt-get install ./*.deb (exit $rc; log: $log)" "$log"
	if [ $rc != 0 ]; then
		# DKMS's log of a failed build, which goes with the root.
		in_root "$suite" sh -c 'cat /var/lib/dkms/fastremap/*/build/make.log' \
			>"$results/$suite-dkms-make.log" 2>&1 &&
			echo "# DKMS's make.log: $results/$suite-dkms-make.log" &&
			grep -m 10 -E 'error|Error' "$results/$suite-dkms-make.log" | sed 's/^/# /'
		rm -rf "${work:?}/$suite"
		continue
	fi
	for p in $want; do
		st=$(in_root "$suite" dpkg-query -W -f '${Status}' "$p" 2>&1)
		ok "$([ "$st" = 'install ok installed' ] && echo 1)" "$suite: $p is installed ($st)"
	done
	in_root "$suite" dkms status >"$work/$suite/dkms-status" 2>&1
	# DKMS 3 prints "fastremap/0.1.0, KVER, ARCH: installed"; Debian 11's
	# DKMS 2.8 "fastremap, 0.1.0, KVER, ARCH: installed". Compared as
	# strings: Debian 13's and later kernels' versions hold a "+".
	ok "$(awk -v v="$ver" -v k="$k" 'index($0, "fastremap/" v ", " k ", ") == 1 ||
		index($0, "fastremap, " v ", " k ", ") == 1 { if ($NF == "installed") f = 1 }
		END { print f + 0 }' "$work/$suite/dkms-status")" \
		"$suite: dkms status: fastremap/$ver installed for $k" "$work/$suite/dkms-status"
	ko=$(in_root "$suite" find "/lib/modules/$k/updates" -name 'fastremap.ko*' 2>/dev/null | head -n 1)
	rm -f "$FR_BUILD/$suite/fastremap.ko"
	case $ko in
	*.xz) in_root "$suite" cat "$ko" | xz -dc >"$FR_BUILD/$suite/fastremap.ko" ;;
	*.zst) in_root "$suite" cat "$ko" | zstd -qdc >"$FR_BUILD/$suite/fastremap.ko" ;;
	?*) in_root "$suite" cat "$ko" >"$FR_BUILD/$suite/fastremap.ko" ;;
	esac
	ok "$([ -s "$FR_BUILD/$suite/fastremap.ko" ] && echo 1)" "$suite: DKMS installed ${ko:-no fastremap.ko} for $k"
	in_root "$suite" modinfo -k "$k" fastremap >"$results/$suite-modinfo.log" 2>&1
	ok "$([ $? = 0 ] && echo 1)" "$suite: modinfo -k $k fastremap finds it (depmod ran)" \
		"$results/$suite-modinfo.log"

	# ---- the library, as a lab's program uses it ----
	pc=$(find "$work/$suite/upper/usr/lib" -path '*/pkgconfig/fastremap.pc' 2>/dev/null | head -n 1)
	flags=$([ -n "$pc" ] && PKG_CONFIG_LIBDIR=$(dirname "$pc") pkg-config --cflags --libs fastremap)
	ok "$([ -n "$flags" ] && echo 1)" "$suite: the installed fastremap.pc gives the flags: ${flags:-none}"
	mkdir -p "$work/$suite/x/src"
	cp -r "$FR_TOP/tests/lib" "$work/$suite/x/src/"
	log="$results/$suite-build.log"
	: >"$log"
	for p in $dynamic; do
		case " $programs " in *" $p "*) ;; *) continue ;; esac
		cp "$FR_TOP/tests/$p.c" "$work/$suite/x/src/"
		in_root "$suite" sh -c "cd /mnt/src && gcc -std=gnu11 -O2 -Wall -pthread -Ilib \
			-o /mnt/bin/$p $p.c lib/*.c $flags" >"$log.1" 2>&1
		ok "$([ $? = 0 ] && echo 1)" "$suite: $p builds there with the installed headers and library" "$log.1"
		cat "$log.1" >>"$log"
		# (The file dpkg knows, the root's usr-merged /lib aside.)
		so=$(in_root "$suite" sh -c "ldd /mnt/bin/$p | awk '\$1 == \"libfastremap.so.1\" { print \$3 }' |
			xargs -r realpath")
		owner=$(in_root "$suite" dpkg -S "${so:-/nonexistent}" 2>&1)
		ok "$([ "${owner%%:*}" = libfastremap1 ] && echo 1)" \
			"$suite: $p loads the installed libfastremap.so.1 (${so:-not found by ldd}: ${owner%%:*})"
	done
	# The guest's extra tree: the root's loader cache and every library the
	# dynamic programs load, at the paths the root's loader gives them.
	extra="$FR_BUILD/$suite/extra"
	rm -rf "$extra"
	mkdir -p "$extra"
	# (And libgcc_s.so.1, which libc loads to unwind a cancelled thread.)
	libs=$(in_root "$suite" sh -c 'ldd /mnt/bin/* 2>/dev/null; ldconfig -p | grep -m1 "libgcc_s.so.1 (libc6,x86-64)"' |
		awk '$3 ~ /^\// { print $3 } $NF ~ /^\// && NF == 4 { print $NF } $1 ~ /^\// && NF == 2 { print $1 }' | sort -u)
	# shellcheck disable=SC2086
	[ -z "$libs" ] || in_root "$suite" tar -chf - /etc/ld.so.cache $libs 2>>"$log" | tar -xf - -C "$extra"

	# ---- the suite's kernel, the DKMS-built module, the programs ----
	rm -f "$FR_BUILD/$suite/bin/"*
	for p in $programs; do
		for b in "$work/$suite/x/bin/$p" "$FR_BUILD/bin/$p"; do
			[ -e "$b" ] && { cp "$b" "$FR_BUILD/$suite/bin/"; break; }
		done
	done
	echo "$k" >"$FR_BUILD/$suite/kver"
	vlog="$results/$suite-vm.log"
	: >"$vlog"
	if [ -s "$FR_BUILD/$suite/fastremap.ko" ]; then
		t0=$(date +%s)
		# shellcheck disable=SC2086
		FASTREMAP_VM_INIT="$FR_HARNESS/guest/init-dkms" FASTREMAP_VM_KMODS='' FASTREMAP_VM_APPEND='' \
			FASTREMAP_VM_EXTRA="$extra" FASTREMAP_VM_TIMEOUT=${FASTREMAP_VM_TIMEOUT:-1200} \
			"$FR_HARNESS/vm-run.sh" "$suite" "$FR_BUILD/$suite/bin" "$vlog" $programs >"$results/$suite-vm-run.log" 2>&1
		echo "# $suite: VM finished in $(($(date +%s) - t0)) s"
	fi
	# shellcheck disable=SC2086
	fr_dkms_guest_verdicts "$vlog" "$results" "$suite" "$k" $programs
	[ -s "$vlog" ] || tail -n 15 "$results/$suite-vm-run.log" | sed 's/^/# /'

	# ---- purge: nothing left ----
	# Each detector runs on the installed root first, where it must find
	# what the packages put there (its positive control), then after the
	# purge, where it must find nothing.
	for p in $want; do
		in_root "$suite" dpkg -L "$p" 2>/dev/null
	done | sort -u >"$work/$suite/listed"
	leftovers "$suite" >"$work/$suite/control"
	for d in listed dkms src updates paths; do
		ok "$(grep -q "^$d: " "$work/$suite/control" && echo 1)" \
			"$suite: control: the check for $d finds the installed packages' ($(grep -c "^$d: " "$work/$suite/control"))"
	done
	log="$results/$suite-purge.log"
	# shellcheck disable=SC2086
	in_root "$suite" env DEBIAN_FRONTEND=noninteractive apt-get purge -y $want >"$log" 2>&1
	ok "$([ $? = 0 ] && echo 1)" "$suite: apt-get purge$want" "$log"
	leftovers "$suite" >"$work/$suite/left"
	sed 's/^/# left: /' "$work/$suite/left" | head -n 40
	ok "$([ ! -s "$work/$suite/left" ] && echo 1)" \
		"$suite: nothing left: the $(wc -l <"$work/$suite/listed") paths of dpkg -L, dkms status, /usr/src, /var/lib/dkms, /lib/modules/*/updates, no path added to the root or taken from it"
	rm -rf "${work:?}/$suite"
done
rmdir "$work" 2>/dev/null
tap_done_run
