#!/usr/bin/env bash
# Makes the three test kernels and their build environments ready, reusing
# what the cache already holds. bookworm (6.1) builds on the host; trixie
# (6.12) and sid (7.x) need their own gcc, so they get mmdebstrap chroots.
set -euo pipefail
. "$(dirname "$0")/common.sh"

# Packages every chroot needs: the kernel and its headers (which pull in
# the gcc the kernel was built with), dkms for the packaging test, openssl
# with which dkms makes its signing key (a Recommends that
# --variant=apt leaves out; without it DKMS's modules are unsigned).
chroot_pkgs=make,linux-headers-amd64,linux-image-amd64,libelf-dev,bc,kmod,dkms,gcc,libc6-dev,openssl

make_chroot() {
	local suite=$1 dir tmp mirror
	dir=$(fr_chroot_dir "$suite")
	if [ -f "$dir/.fastremap-ready" ]; then
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
	rm -rf "$tmp"
	mkdir -p "$FR_CACHE"
	fr_log "creating $suite chroot (a few minutes, once)"
	# sid's Release file on this mirror may be past Valid-Until.
	mmdebstrap --variant=apt --include="$chroot_pkgs" \
		--aptopt='Acquire::Check-Valid-Until "false"' \
		--customize-hook='rm -f "$1"/etc/kernel/postinst.d/initramfs-tools' \
		"$suite" "$tmp" "deb $mirror $suite main" >"$tmp.log" 2>&1 ||
		{ tail -n 30 "$tmp.log" >&2; fr_die "mmdebstrap $suite failed"; }
	rm -f "$tmp.log"
	touch "$tmp/.fastremap-ready"
	rm -rf "$dir"
	mv "$tmp" "$dir"
}

for s in $FR_SUITES; do
	case $s in
	bookworm)
		[ -n "$(fr_kver /)" ] && [ -d "/lib/modules/$(fr_kver /)/build" ] ||
			fr_die "bookworm kernel or headers missing: run scripts/deps.sh"
		;;
	*) make_chroot "$s" ;;
	esac
	r=$(fr_root "$s")
	fr_log "$s: kernel $(fr_kver "$r")"
done
