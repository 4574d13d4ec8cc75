#!/usr/bin/env bash
# Makes the three test kernels and their build environments ready, reusing
# what the cache already holds. bookworm (6.1) builds on the host; trixie
# (6.12) and sid (7.x) need their own gcc, so they get mmdebstrap chroots.
set -euo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/../tests/harness/common.sh"

# Packages every chroot needs: the kernel and its headers (which pull in
# the gcc the kernel was built with), dkms for the packaging test, openssl
# with which dkms makes its signing key (a Recommends that
# --variant=apt leaves out; without it DKMS's modules are unsigned).
chroot_pkgs=make,linux-headers-amd64,linux-image-amd64,libelf-dev,bc,kmod,dkms,gcc,libc6-dev,openssl

# This machine's own apt sources of a suite's updates (SUITE-security,
# SUITE-updates), as "deb URI RELEASE COMPONENT" lines: Debian 12's
# kernel comes from bookworm-security, and a bookworm chroot (the arm64
# lane's build root) must have the kernel release the host has.
host_updates() {
	apt-get indextargets --format '$(RELEASE) $(REPO_URI) $(COMPONENT)' 2>/dev/null |
		awk -v s="$1" 'index($1, s "-") == 1 { print "deb", $2, $1, $3 }' | sort -u
}

# A suite whose kernel comes from another pocket (fr_suite_pocket:
# trixie-bpo, experimental): the packages of chroot_pkgs with the kernel's
# metapackages taken from that pocket. Prints nothing for the others.
pocket_pkgs() {
	local pocket p out=() pk
	pocket=$(fr_suite_pocket "$1")
	[ -n "$pocket" ] || return 0
	IFS=, read -ra pk <<<"$chroot_pkgs"
	for p in "${pk[@]}"; do
		case $p in
		linux-image-amd64 | linux-headers-amd64) p+=/$pocket ;;
		esac
		out+=("$p")
	done
	(IFS=,; printf '%s\n' "${out[*]}")
}

# Why mmdebstrap of a suite with a pocket failed, where the cause is the
# archive's: the pocket no longer has the kernel's metapackages (they move
# on: backports and experimental replace their kernels).
pocket_gone() {
	local suite=$1 log=$2 pocket
	pocket=$(fr_suite_pocket "$suite")
	[ -n "$pocket" ] || return 0
	grep -qE "(Release|Version) '[^']*' for 'linux-(image|headers)-amd64' was not found|Unable to locate package linux-(image|headers)-amd64" "$log" || return 0
	fr_die "$suite: $pocket has no linux-image-amd64 / linux-headers-amd64 any more (the metapackages of its kernel): the archive moved on; see $log"
}

# make_chroot SUITE [SOURCE_LINE...]: the update sources given, else this
# machine's own of SUITE's release.
make_chroot() {
	local suite=$1 dir tmp mirror extra=() release pocket pkgs
	shift
	dir=$(fr_chroot_dir "$suite")
	release=$(fr_suite_release "$suite")
	pocket=$(fr_suite_pocket "$suite")
	pkgs=$(pocket_pkgs "$suite")
	if [ $# -gt 0 ]; then
		extra=("$@")
	else
		mapfile -t extra < <(host_updates "$release")
	fi
	if [ -f "$dir/.fastremap-ready" ]; then
		# Chroots made before the host's update sources were added get
		# them now, and the kernel headers they bring.
		if [ ${#extra[@]} -gt 0 ] && ! grep -qF -- "${extra[0]}" "$dir/etc/apt/sources.list"; then
			fr_log "$suite chroot: adding this machine's $suite update sources"
			printf '%s\n' "${extra[@]}" >>"$dir/etc/apt/sources.list"
			fr_in_root "$suite" sh -c 'apt-get update -q >/dev/null &&
				DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends linux-headers-amd64 linux-image-amd64 >/dev/null' ||
				fr_die "$suite chroot: cannot update its kernel headers"
		fi
		# Chroots made before openssl was in the list get it now.
		if [ ! -x "$dir/usr/bin/openssl" ]; then
			fr_log "$suite chroot: adding openssl (DKMS's signing key)"
			fr_in_root "$suite" sh -c 'apt-get update -q >/dev/null &&
				DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssl >/dev/null' ||
				fr_die "$suite chroot: cannot install openssl"
		fi
		return 0
	fi
	mirror=$(fr_mirror)
	tmp="$dir.tmp"
	# An interrupted mmdebstrap can leave its proc, sysfs and dev mounts
	# in the half-made root: never delete through them.
	rm -rf --one-file-system "$tmp"
	mkdir -p "$FR_CACHE"
	fr_log "creating $suite chroot (a few minutes, once)"
	# sid's Release file on this mirror may be past Valid-Until.
	[ -z "$pocket" ] || extra+=("deb $mirror $pocket main")
	mmdebstrap --variant=apt --include="${pkgs:-$chroot_pkgs}" \
		--aptopt='Acquire::Check-Valid-Until "false"' \
		--customize-hook='rm -f "$1"/etc/kernel/postinst.d/initramfs-tools' \
		"$release" "$tmp" "deb $mirror $release main" "${extra[@]}" >"$tmp.log" 2>&1 ||
		{ tail -n 30 "$tmp.log" >&2; pocket_gone "$suite" "$tmp.log"; fr_die "mmdebstrap $suite failed"; }
	rm -f "$tmp.log"
	touch "$tmp/.fastremap-ready"
	rm -rf "$dir"
	mv "$tmp" "$dir"
}

# An apt of its own for SUITE's arm64 packages, reading nothing of this
# machine's apt state: apt_arm64 SUITE apt-get|apt-cache ARGS...
apt_arm64() {
	local suite=$1 tool=$2 d
	shift 2
	d="$FR_CACHE/arm64/apt-$suite"
	"$tool" -q -o Dir::Etc::SourceList="$d/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State="$d/state" -o Dir::State::status="$d/state/status" \
		-o Dir::Cache="$d/cache" -o APT::Architecture=arm64 -o APT::Architectures::=arm64 \
		-o Acquire::Check-Valid-Until=false -o Debug::NoLocking=true "$@"
}

# The build root's apt sources of SUITE's release (and RELEASE-security,
# RELEASE-updates, and the pocket its kernel comes from) as
# "deb URI RELEASE COMPONENT" lines.
root_sources() {
	local s p
	s=$(fr_suite_release "$1")
	p=$(fr_suite_pocket "$1")
	fr_in_root "$1" apt-get indextargets --format '$(RELEASE) $(REPO_URI) $(COMPONENT)' |
		awk -v s="$s" -v p="$p" '$1 == s || $1 == p || index($1, s "-") == 1 { print "deb", $2, $1, $3 }' |
		sort -u
}

# Debian's arm64 kernel ABI-FLAVOUR (FLAVOUR arm64, or arm64-16k: 16 KiB
# pages) of package version VER, its headers and an arm64 busybox,
# unpacked into DIR: boot/, lib/modules/KVER/ (with modules.dep) and
# usr/src/linux-headers-KVER, whose kbuild links point into the build
# root; marked ready for ABI and VER. apt_arm64 SUITE must have its lists.
# fetch_arm64_kernel SUITE ABI VER FLAVOUR DIR
fetch_arm64_kernel() {
	local suite=$1 abi=$2 ver=$3 k="$2-$4" dir=$5 tmp img h t f
	tmp="$dir.tmp"
	rm -rf "$tmp"
	mkdir -p "$tmp/debs"
	# The unsigned image where the suite has one (the same kernel);
	# since 7.x the image is split into base files, binary, modules.
	if apt_arm64 "$suite" apt-cache show "linux-binary-unsigned-$k=$ver" >/dev/null 2>&1; then
		img="linux-base-$k=$ver linux-binary-unsigned-$k=$ver linux-modules-$k=$ver"
	elif apt_arm64 "$suite" apt-cache show "linux-image-$k-unsigned=$ver" >/dev/null 2>&1; then
		img="linux-image-$k-unsigned=$ver"
	else
		img="linux-image-$k=$ver"
	fi
	# shellcheck disable=SC2086
	(cd "$tmp/debs" && apt_arm64 "$suite" apt-get download "linux-headers-$k=$ver" \
		$img busybox-static >/dev/null) ||
		fr_die "$suite: cannot download the arm64 kernel $k $ver"
	for t in "$tmp"/debs/*.deb; do dpkg-deb -x "$t" "$tmp"; done
	rm -rf "$tmp/debs"
	h="$tmp/usr/src/linux-headers-$k"
	# scripts/ and tools/ are relative links to the suite's kbuild
	# package; absolute, they resolve in the build root wherever
	# the headers are copied.
	for t in scripts tools; do
		[ -L "$h/$t" ] && ln -sfn "$(realpath -m "/usr/src/$(readlink "$h/$t")")" "$h/$t"
	done
	# Newer suites ship modules and busybox in /usr (merged /usr),
	# and 7.x its image and config beside the modules.
	[ -e "$tmp/lib" ] || ln -s usr/lib "$tmp/lib"
	[ -e "$tmp/bin" ] || ln -s usr/bin "$tmp/bin"
	mkdir -p "$tmp/boot"
	for t in vmlinuz config; do
		[ -e "$tmp/boot/$t-$k" ] && continue
		for f in "$tmp/lib/modules/$k/$t" "$tmp/lib/modules/$k/$t.unsigned"; do
			[ -e "$f" ] && ln -s "../lib/modules/$k/${f##*/}" "$tmp/boot/$t-$k" && break
		done
	done
	[ -r "$tmp/boot/vmlinuz-$k" ] || fr_die "$suite: no kernel image in the $k packages"
	depmod -b "$tmp" "$k" || fr_die "$suite: depmod of the $k modules failed"
	echo "2 $abi $ver" >"$tmp/.fastremap-ready"
	rm -rf "$dir"
	mv "$tmp" "$dir"
}

# The arm64 kernel of the same Debian release as the suite's amd64 one
# (same ABI name and package version, so that the headers' common half,
# installed in the build root with the amd64 headers, is theirs too),
# unpacked into fr_arm64_dir: boot/, lib/modules/KVER/ (with modules.dep)
# and usr/src/linux-headers-KVER, whose kbuild links point into the build
# root. Also the suite's cross compiler in the build root, and an arm64
# busybox for the guests.
# make_arm64 SUITE [ABI RELEASE]: ABI (and the apt sources of RELEASE
# alone) where the arm64 kernel is not the amd64 one's.
make_arm64() {
	local suite=$1 root kver abi ver dir tmp d gcc k d16 release=${3:-}
	root=$(fr_root "$suite")
	dir=$(fr_arm64_dir "$suite")
	kver=$(fr_kver "$root")
	abi=${2:-${kver%-amd64}}
	ver=$(fr_in_root "$suite" dpkg-query -W -f='${Version}' "linux-headers-$abi-common") ||
		fr_die "$suite: no linux-headers-$abi-common in the build root"
	if [ ! -f "$dir/.fastremap-ready" ] || [ "$(cat "$dir/.fastremap-ready")" != "2 $abi $ver" ]; then
		fr_log "$suite: fetching Debian's arm64 kernel $abi-arm64 ($ver)"
		d="$FR_CACHE/arm64/apt-$suite"
		mkdir -p "$d/state/lists/partial" "$d/cache/archives/partial"
		: >"$d/state/status"
		# The build root's own sources of the suite (bookworm's kernel
		# comes from bookworm-security), for arm64.
		root_sources "$suite" | awk -v r="$release" 'r == "" || $3 == r' >"$d/sources.list"
		if [ ! -s "$d/sources.list" ] && ! fr_on_host "$suite"; then
			# A chroot mmdebstrap just made has no package lists
			# (its cleanup removes them), and apt lists sources by them.
			fr_in_root "$suite" apt-get update -q >/dev/null ||
				fr_die "$suite chroot: apt-get update failed"
			root_sources "$suite" | awk -v r="$release" 'r == "" || $3 == r' >"$d/sources.list"
		fi
		[ -s "$d/sources.list" ] || fr_die "$suite: no apt sources for it in the build root"
		apt_arm64 "$suite" apt-get update >/dev/null || fr_die "$suite: apt-get update (arm64) failed"
		fetch_arm64_kernel "$suite" "$abi" "$ver" arm64 "$dir"
	fi
	# Debian's arm64-16k flavour of the same kernel (16 KiB pages), where
	# the suite has one: its headers only, in the build root beside the
	# amd64 headers whose common half they share, for check-pagesize.sh's
	# build of the module against them in every arm64 lane. Not
	# under /lib/modules, where DKMS would take it for a kernel to build for.
	k="$abi-arm64-16k"
	if [ ! -f "${root%/}/usr/src/linux-headers-$k/.config" ] &&
		apt_arm64 "$suite" apt-cache show "linux-headers-$k=$ver" >/dev/null 2>&1; then
		fr_log "$suite: fetching the headers of Debian's $k ($ver)"
		tmp="$dir.16k.tmp"
		rm -rf "$tmp"
		mkdir -p "$tmp/debs"
		(cd "$tmp/debs" && apt_arm64 "$suite" apt-get download "linux-headers-$k=$ver" >/dev/null) ||
			fr_die "$suite: cannot download linux-headers-$k $ver"
		dpkg-deb -x "$tmp"/debs/*.deb "$tmp"
		rm -rf "${root%/}/usr/src/linux-headers-$k"
		mv "$tmp/usr/src/linux-headers-$k" "${root%/}/usr/src/"
		rm -rf "$tmp"
	fi
	# FASTREMAP_ARM64_16K=1: that kernel itself too, for a lane that
	# boots it, in fr_arm64_dir SUITE-16k (laid out as the arm64 one).
	d16=$(fr_arm64_dir "$suite-16k")
	if [ "${FASTREMAP_ARM64_16K:-0}" = 1 ] &&
		{ [ ! -f "$d16/.fastremap-ready" ] || [ "$(cat "$d16/.fastremap-ready")" != "2 $abi $ver" ]; }; then
		if apt_arm64 "$suite" apt-cache show "linux-headers-$k=$ver" >/dev/null 2>&1; then
			fr_log "$suite: fetching Debian's $k kernel ($ver)"
			fetch_arm64_kernel "$suite" "$abi" "$ver" arm64-16k "$d16"
		else
			fr_log "$suite: Debian has no $k kernel"
		fi
	fi
	gcc=$(sed -n 's/^CC = .*\(gcc-[0-9]*\)$/\1/p' "$dir/usr/src/linux-headers-$abi-arm64/.kernelvariables")
	[ -n "$gcc" ] || fr_die "$suite: which gcc built the arm64 kernel?"
	# The programs' C library too (they are built in the bookworm chroot).
	if ! fr_in_root "$suite" sh -c "command -v aarch64-linux-gnu-$gcc && test -d /usr/aarch64-linux-gnu/include" >/dev/null; then
		fr_log "$suite chroot: adding the cross compiler $gcc-aarch64-linux-gnu"
		fr_in_root "$suite" sh -c "apt-get -o Acquire::Check-Valid-Until=false update -q >/dev/null &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
				$gcc-aarch64-linux-gnu gcc-aarch64-linux-gnu libc6-dev-arm64-cross make >/dev/null" ||
			fr_die "$suite chroot: cannot install $gcc-aarch64-linux-gnu"
	fi
}

# Debian 11's kernel (5.10) is updated only in bullseye-security, which
# this machine's apt does not list: its URI is the one this machine reads
# bookworm-security from.
bullseye_security() {
	local uri
	uri=$(apt-get indextargets --format '$(RELEASE) $(REPO_URI)' 2>/dev/null |
		awk '$1 == "bookworm-security" { print $2; exit }')
	[ -n "$uri" ] || fr_die "bullseye: no bookworm-security source in the apt configuration to derive bullseye-security from"
	printf 'deb %s bullseye-security main\n' "${uri%/}"
}

# bullseye's chroot, with its security updates: there its 5.10 kernel
# lives (linux-image-amd64, the metapackage), built by gcc-10.
make_bullseye() {
	local sec
	sec=$(bullseye_security)
	make_chroot bullseye "$sec"
	fr_in_root bullseye dpkg-query -W -f='${Version}\n' linux-headers-amd64 >/dev/null 2>&1 ||
		fr_die "bullseye: linux-headers-amd64 is not in bullseye or bullseye-security any more"
}

# Empty where apt does not know bullseye's own linux-headers-amd64.
bullseye_abi() {
	{ fr_in_root bullseye apt-cache show linux-headers-amd64/bullseye 2>/dev/null || true; } |
		sed -n 's/^Depends: linux-headers-\(.*\)-amd64 .*/\1/p' | head -n 1
}

# bullseye-security's arm64 packages are not on this machine's mirror
# (404): the arm64 lane boots bullseye's own point-release kernel, whose
# headers' common half goes into the chroot beside the amd64 kernel's.
make_bullseye_arm64() {
	local abi
	abi=$(bullseye_abi)
	if [ -z "$abi" ]; then
		# A chroot mmdebstrap just made has no package lists (its
		# cleanup removes them): apt-cache knows only what is installed.
		fr_in_root bullseye apt-get update -q >/dev/null ||
			fr_die "bullseye chroot: apt-get update failed"
		abi=$(bullseye_abi)
	fi
	[ -n "$abi" ] || fr_die "bullseye: no linux-headers-amd64 in bullseye itself"
	if ! fr_in_root bullseye dpkg-query -W "linux-headers-$abi-common" >/dev/null 2>&1; then
		fr_log "bullseye chroot: adding linux-headers-$abi-common (the arm64 kernel's)"
		fr_in_root bullseye sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends linux-headers-$abi-common >/dev/null" ||
			fr_die "bullseye chroot: cannot install linux-headers-$abi-common"
	fi
	make_arm64 bullseye "$abi" bullseye
}

# arm64: the chroot the test programs are built in, whatever the suites.
if fr_is_arm64; then
	make_chroot "$FR_ARM64_PROGRAMS_ROOT"
	make_arm64 "$FR_ARM64_PROGRAMS_ROOT"
fi
for s in $FR_SUITES; do
	if nolane=$(fr_no_lane "$s"); then
		fr_log "$s: skipped: $nolane"
		continue
	fi
	if fr_is_upstream "$s"; then
		"$FR_TOP/scripts/build-debug-kernel.sh" "$s"
		fr_log "$s: kernel $(fr_kver "$(fr_kroot "$s")")"
		continue
	fi
	case $s in
	bookworm)
		if fr_is_arm64; then
			make_chroot bookworm
			make_arm64 bookworm
			fr_log "$s: kernel $(fr_kver "$(fr_kroot "$s")")"
			continue
		fi
		[ -n "$(fr_kver /)" ] && [ -d "/lib/modules/$(fr_kver /)/build" ] ||
			fr_die "bookworm kernel or headers missing: run scripts/deps.sh"
		;;
	*-16k)
		# fr_no_lane: arm64 only. The base suite's build root and
		# kernels, and its arm64-16k kernel.
		make_chroot "${s%-16k}"
		FASTREMAP_ARM64_16K=1 make_arm64 "${s%-16k}"
		[ -n "$(fr_kver "$(fr_kroot "$s")")" ] || fr_die "$s: Debian has no arm64-16k kernel for ${s%-16k}"
		fr_log "$s: kernel $(fr_kver "$(fr_kroot "$s")")"
		continue
		;;
	bullseye)
		make_bullseye
		if fr_is_arm64; then
			make_bullseye_arm64
			fr_log "$s: kernel $(fr_kver "$(fr_kroot "$s")")"
			continue
		fi
		;;
	*) make_chroot "$s" ;;
	esac
	fr_is_arm64 && make_arm64 "$s"
	fr_log "$s: kernel $(fr_kver "$(fr_kroot "$s")")"
done
