# shellcheck shell=bash
# Sourced by the harness scripts in this folder, by scripts/ and by bench/.
# Where caches live and how to reach Debian's mirror; nothing here names a
# host: the mirror is read from this machine's apt configuration. Brings
# the TAP writer (tap.sh) along.

FR_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FR_HARNESS=$FR_TOP/tests/harness
# shellcheck source=tests/harness/tap.sh
. "$FR_HARNESS/tap.sh"
FR_CACHE=${FASTREMAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fastremap}
# The guests' architecture: amd64 (the default) or arm64, whose kernels,
# module and test programs are cross-built on this x86-64 machine and
# booted under qemu-system-aarch64. Each has a build folder of its own.
# (x86_64, x86-64 and aarch64 name them too.)
FR_ARCH=${FASTREMAP_ARCH:-amd64}
case $FR_ARCH in
amd64 | x86_64 | x86-64) FR_ARCH=amd64 FR_BUILD=${FASTREMAP_BUILD:-$FR_TOP/build} ;;
arm64 | aarch64) FR_ARCH=arm64 FR_BUILD=${FASTREMAP_BUILD:-$FR_TOP/build/arm64} ;;
*) printf 'FASTREMAP_ARCH (BENCH_ARCH for bench/) must be amd64 or arm64, not %s\n' "$FR_ARCH" >&2; exit 1 ;;
esac
# The three kernels every feature is tested on, by Debian suite.
FR_SUITES=${FASTREMAP_SUITES:-bookworm trixie sid}
# The kernels make check-reach adds (tests/harness/lane-reach.sh): bullseye
# is Debian 11's 5.10, the oldest supported kernel (no folios: no
# FASTREMAP_IOC_MOVE there); trixie-bpo and experimental are 7.3 (below);
# the upstream lanes (FR_UPSTREAM_SUITES, below: lts618, the 6.18 LTS, and
# up617, 6.17), built here from source (x86-64 and arm64); trixie-16k and
# sid-16k Debian's arm64-16k kernels (16 KiB pages, arm64 only).
FR_UPSTREAM_SUITES="lts618:6.18 up617:6.17"
# The upstream lanes' suites (FR_UPSTREAM_SUITES without their series);
# every script sources this file, so no process is started for it.
FR_UPSTREAM_NAMES=""
for _w in $FR_UPSTREAM_SUITES; do FR_UPSTREAM_NAMES+="${FR_UPSTREAM_NAMES:+ }${_w%%:*}"; done
unset _w
FR_REACH_SUITES="bullseye trixie-bpo experimental $FR_UPSTREAM_NAMES trixie-16k sid-16k"

# Suites whose kernel comes from another pocket of the archive than their
# release's own: a chroot of RELEASE with POCKET added, the kernel's
# metapackages (linux-image-amd64, linux-headers-amd64) taken from POCKET
# and the rest from RELEASE (whose gcc built that kernel). trixie-bpo:
# Debian 13 with trixie-backports' 7.3 (gcc-14); experimental: unstable
# with experimental's 7.3 release candidate (gcc-16).
# fr_suite_release SUITE, fr_suite_pocket SUITE (empty: the release's own).
fr_suite_release() {
	case $1 in
	trixie-bpo) echo trixie ;;
	experimental) echo sid ;;
	*) echo "$1" ;;
	esac
}
fr_suite_pocket() {
	case $1 in
	trixie-bpo) echo trixie-backports ;;
	experimental) echo experimental ;;
	esac
	return 0
}

# fr_prepare ARCH...: the three kernels of each architecture, ready to
# build against and boot (scripts/prepare-kernels.sh; cached).
fr_prepare() {
	local a
	for a in "$@"; do
		FASTREMAP_ARCH=$a "$FR_TOP/scripts/prepare-kernels.sh" || exit
	done
}

# The test programs of a kind (host or vm), in their order (tests/programs).
fr_programs() { awk -v k="$1" '$1 == k { print $2 }' "$FR_TOP/tests/programs"; }

# The options the guests of the test suite boot with, beyond vm-run.sh's
# own (run.sh and check-mutants.sh, which must boot as run.sh does). The
# tlb:tlb_flush event (t_remap_tlb counts flushes with it) is enabled
# at boot, before the second CPU runs, and never toggled after: on 7.2
# under QEMU TCG, turning any tracepoint on or off at run time (text
# patching through int3) can end in "Oops: int3", with or without this
# module loaded. record-cmd stays off, or enabling an event would hook
# sched_switch as well. Scheduler statistics (t_remap_latency reads
# block_max) are a static key too: on from boot, so the test's write of
# the sysctl changes nothing (6.12 under TCG oopsed in int3 when it did).
# arm64 has no tlb:tlb_flush event (t_remap_tlb counts another way there).
fr_vm_append() {
	if fr_is_arm64; then
		echo "schedstats=enable"
	else
		echo "trace_event=tlb:tlb_flush trace_options=norecord-cmd schedstats=enable"
	fi
}

# Guest kernel-log lines that fail a test or benchmark run.
FR_BAD_LOG='BUG:|WARNING:|Oops|bad page|general protection|possible circular locking|possible recursive locking|inconsistent lock state|KASAN|UBSAN|INFO: task .* blocked|soft lockup|hard LOCKUP|rcu.*stall|Call Trace:|kernel BUG'

fr_log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
fr_die() { fr_log "error: $*"; exit 1; }

# The Debian archive URI apt uses for bookworm on this machine.
fr_mirror() {
	local m
	m=$(apt-get indextargets --format '$(RELEASE) $(REPO_URI)' 2>/dev/null |
		awk '$1 == "bookworm" { print $2; exit }')
	if [ -z "$m" ]; then
		m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }')
	fi
	[ -n "$m" ] || fr_die "no bookworm source in the apt configuration"
	printf '%s\n' "${m%/}"
}

# fr_apt_private DIR COMMAND...: runs an apt command (apt-get, apt-cache)
# with the apt configuration in DIR (DIR/sources.list, its own lists and
# downloads), leaving the machine's apt state alone. fr_apt_private_init
# DIR LINE... writes it, with a LINE for each source, and updates it.
fr_apt_private() {
	local d=$1
	shift
	"$@" -q -o Dir::Etc::SourceList="$d/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State="$d/state" -o Dir::State::status="$d/state/status" \
		-o Dir::Cache="$d/cache" -o Acquire::Check-Valid-Until=false \
		-o Debug::NoLocking=true -o APT::Sandbox::User=root
}
fr_apt_private_init() {
	local d=$1
	shift
	mkdir -p "$d/state/lists/partial" "$d/cache/archives/partial"
	: >"$d/state/status"
	printf '%s\n' "$@" >"$d/sources.list"
	fr_apt_private "$d" apt-get update >/dev/null || fr_die "apt-get update ($d/sources.list) failed"
}

# Installs the Debian packages given that are not installed yet.
fr_apt_install() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	export DEBIAN_FRONTEND=noninteractive
	# Third-party sources on some machines may be unreachable; Debian's own
	# suites are what matters, and install fails loudly if they are missing.
	apt-get update -q || true
	apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# Newest kernel version installed under a root (/ or a chroot).
fr_kver() {
	local root=$1
	# Empty, not a failure, where there is no kernel yet (a cold cache:
	# under set -e and pipefail a failed ls would end the caller).
	{ ls "$root"/boot/vmlinuz-* 2>/dev/null || true; } | sed 's#.*/vmlinuz-##' | sort -V | tail -n 1
}

# A name for this checkout's build directory, so that staging folders
# inside the shared chroots do not collide between checkouts.
fr_build_id() { printf '%s' "$FR_BUILD" | md5sum | cut -c1-8; }

fr_chroot_dir() { printf '%s/chroot-%s\n' "$FR_CACHE" "$1"; }

# Whether the guests are arm64 (cross-built, booted by qemu-system-aarch64).
fr_is_arm64() { [ "$FR_ARCH" = arm64 ]; }

# Where an arm64 suite's kernel lives: the image, its modules and its
# headers unpacked from Debian's arm64 packages by prepare-kernels.sh
# (outside any chroot: they are never installed, only read).
fr_arm64_dir() { printf '%s/arm64/%s\n' "$FR_CACHE" "$1"; }

# The root holding the kernel a suite boots and builds against (boot/,
# lib/modules/KVER/): the build root itself for amd64, else the suite's
# unpacked arm64 kernel.
fr_kroot() {
	if fr_is_arm64; then
		fr_arm64_dir "$1"
	else
		fr_root "$1"
	fi
}

# The headers a suite's module builds against, as the build root sees them
# (fr_kdir SUITE KVER): amd64's are installed in the build root; arm64's
# are unpacked outside it (prepare-kernels.sh), and a chroot sees them
# through fr_in_root's mount.
fr_kdir() {
	local suite=$1 kver=$2 h
	if ! fr_is_arm64; then
		printf '%s\n' "/lib/modules/$kver/build"
		return
	fi
	h="$(fr_arm64_dir "$suite")/usr/src/linux-headers-$kver"
	if fr_on_host "$suite"; then
		printf '%s\n' "$h"
	else
		# fr_in_root mounts them where their Makefile expects them.
		printf '%s\n' "/usr/src/linux-headers-$kver"
	fi
}

# Prints symlist.h's entries as the module's build for SUITE expanded
# them (its probes' answers and its kernel's configuration), with
# DECLARE_STATIC_CALL(name, type) defined as DEFINITION.
fr_expand_symlist() {
	local dir=$1 definition=$2
	{
		printf '#include "%s"
' "$(realpath "$dir/autoconf.h")"
		# asm-generic/pgtable-nop4d.h's, where the kernel has 4 levels.
		printf '#if CONFIG_PGTABLE_LEVELS < 5
#define __PAGETABLE_P4D_FOLDED 1
#endif
'
		printf '#include "%s"
' "$(realpath "$dir/compat-generated.h")"
		printf '#define DECLARE_STATIC_CALL(name, type) %s
#include "symlist.h"
' "$definition"
	} | cpp -P -I "$FR_TOP/module" -
}

# make's variables for userspace and the test programs for FR_ARCH.
fr_cc_args() {
	fr_is_arm64 && printf '%s\n' CC=aarch64-linux-gnu-gcc AR=aarch64-linux-gnu-ar
	return 0
}

# fr_cross COMMAND...: runs a build of programs for FR_ARCH: here for
# amd64; for arm64 in the build root the arm64 programs are cross-built in
# (Debian 12's cross gcc conflicts with the host's gcc-multilib). With
# fr_cc_args and fr_target_cc for make's and the compiler's names.
fr_cross() {
	if fr_is_arm64; then
		fr_in_root "$FR_ARM64_PROGRAMS_ROOT" "$@"
	else
		"$@"
	fi
}
fr_target_cc() {
	if fr_is_arm64; then echo aarch64-linux-gnu-gcc; else echo "${CC:-cc}"; fi
}

# fr_build_fr_bench OUT USERSPACE_BUILD LOG CFLAGS...: fr_bench (make
# bench-bin: bench/*.c with the test library), static, linked with the
# library (built into USERSPACE_BUILD, its log in LOG), as programs call
# it. CFLAGS go through make's shell: quote them for it.
fr_build_fr_bench() {
	local out=$1 ub=$2 log=$3
	shift 3
	# shellcheck disable=SC2046
	fr_cross make -C "$FR_TOP/userspace" --no-print-directory BUILD="$ub" \
		$(fr_cc_args) WERROR=1 "$ub/libfastremap.a" >"$log" 2>&1 ||
		{ tail -n 20 "$log"; fr_die "libfastremap does not build"; }
	# shellcheck disable=SC2046
	fr_cross make -C "$FR_TOP" --no-print-directory BUILD="$(dirname "$ub")" \
		$(fr_cc_args) WERROR=1 BENCH_BIN="$out" BENCH_DEFS="$*" bench-bin ||
		fr_die "fr_bench does not build"
}

# make's variables for a kernel build for FR_ARCH (none for amd64).
fr_kmake_args() {
	fr_is_arm64 && printf '%s\n' ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-
	return 0
}

# The debug-kernel lanes' "suites", built by scripts/build-debug-kernel.sh
# with KASAN, lockdep and the mm checkers: debug is Debian 12's
# linux-source-6.1, built on the host and laid out like a root
# (boot/, lib/modules/KVER/build); debug7 is unstable's linux-source-7.x,
# built in a chroot of its own, which is its root.
FR_DEBUG_SUITE=debug
FR_DEBUG7_SUITE=debug7
fr_debug_root() { printf '%s/debug-6.1/root\n' "$FR_CACHE"; }
# Whether a suite is a debug-kernel lane (slower: longer VM time limits).
fr_is_debug() { [ "$1" = "$FR_DEBUG_SUITE" ] || [ "$1" = "$FR_DEBUG7_SUITE" ]; }

# The upstream lanes (make check-reach): a series' source as Debian's
# trixie-backports carries it (its orig tarball), built by
# scripts/build-debug-kernel.sh without the debug lanes' checkers and laid
# out like the debug lane's root (boot/, lib/modules/KVER/build); arm64's
# cross-built in the arm64 programs' chroot, which builds their module
# too, and laid out like an arm64 suite's kernel (fr_arm64_dir). Each is a
# SUITE:SERIES word of FR_UPSTREAM_SUITES (above): a series is added there
# alone, and its results in tests/expected-skips and expected-counts.
# fr_upstream_series SUITE: SUITE's series (true), or nothing (false).
fr_upstream_series() {
	local w
	for w in $FR_UPSTREAM_SUITES; do
		[ "${w%%:*}" = "$1" ] && echo "${w#*:}" && return 0
	done
	return 1
}
fr_is_upstream() { fr_upstream_series "$1" >/dev/null; }
# fr_upstream_src SUITE: where an upstream lane's tarball is kept (both
# architectures'); fr_upstream_dir SUITE: its kernel's build and layout.
fr_upstream_src() { printf '%s/upstream-%s\n' "$FR_CACHE" "$(fr_upstream_series "$1")"; }
fr_upstream_dir() {
	if fr_is_arm64; then
		printf '%s/arm64/upstream-%s\n' "$FR_CACHE" "$(fr_upstream_series "$1")"
	else
		fr_upstream_src "$1"
	fi
}
# Whether a suite's kernel is built from source here (a debug lane or an
# upstream lane): its build tree is its headers, its image the build's.
fr_from_source() { fr_is_debug "$1" || fr_is_upstream "$1"; }
# fr_no_lane SUITE: why SUITE has no kernel on this architecture (prints
# the reason, true), or nothing (false).
fr_no_lane() {
	if ! fr_is_arm64 && fr_is_16k "$1"; then
		echo "$1 is an arm64 kernel with 16 KiB pages: arm64 lane only"
	else
		return 1
	fi
}

# The arm64 lane's 16 KiB-page suites: SUITE-16k (trixie-16k, sid-16k)
# boots Debian's arm64-16k flavour of SUITE's kernel (prepare-kernels.sh
# fetches it into fr_arm64_dir SUITE-16k) and builds in SUITE's build root.
fr_is_16k() { case $1 in *-16k) true ;; *) false ;; esac; }

# fr_fetch_orig SERIES DIR: the upstream tarball (linux_X.Y.Z.orig.tar.xz)
# of the newest SERIES.Z in trixie-backports' linux source package whose
# tarball the mirror still has, into DIR (kept); prints that source
# package's version. The index can outlive the pool's files: 6.17.13's
# tarball was gone (404) where 6.17.8's was there.
fr_fetch_orig() {
	local series=$1 dir=$2 a vs v up
	a="$dir/apt"
	fr_apt_private_init "$a" "deb-src $(fr_mirror) trixie-backports main"
	vs=$(fr_apt_private "$a" apt-cache showsrc linux | sed -n 's/^Version: //p' |
		grep "^${series//./\\.}\." | sort -rV)
	[ -n "$vs" ] || fr_die "trixie-backports has no linux $series.x source package any more"
	for v in $vs; do
		up=${v%%-*}
		if [ ! -s "$dir/linux_$up.orig.tar.xz" ]; then
			fr_log "fetching linux_$up.orig.tar.xz (linux $v, trixie-backports)"
			if ! (cd "$dir" && fr_apt_private "$a" apt-get source --download-only --tar-only "linux=$v" >&2) ||
				[ ! -s "$dir/linux_$up.orig.tar.xz" ]; then
				fr_log "linux=$v: no linux_$up.orig.tar.xz on the mirror; trying an older $series"
				continue
			fi
		fi
		printf '%s\n' "$v"
		return 0
	done
	fr_die "trixie-backports: no linux $series.x orig tarball on the mirror (${vs//$'\n'/ })"
}

# Whether a suite's module is built by this host's own compiler (no chroot).
# Not for arm64: Debian 12's cross gcc and gcc-multilib (the host's i386
# build test) conflict, so arm64 builds run in a bookworm chroot as well.
fr_on_host() {
	{ ! fr_is_arm64 && { [ "$1" = bookworm ] || fr_is_upstream "$1"; }; } || [ "$1" = "$FR_DEBUG_SUITE" ]
}

# The filesystem root whose kernel and headers a suite uses.
fr_root() {
	case $1 in
	bookworm) if fr_is_arm64; then fr_chroot_dir bookworm; else echo /; fi ;;
	"$FR_DEBUG_SUITE") fr_debug_root ;;
	*-16k) fr_chroot_dir "${1%-16k}" ;;
	*)
		if ! fr_is_upstream "$1"; then
			fr_chroot_dir "$1"
		elif fr_is_arm64; then
			fr_chroot_dir "$FR_ARM64_PROGRAMS_ROOT"
		else
			printf '%s/root\n' "$(fr_upstream_dir "$1")"
		fi
		;;
	esac
}

# Copies the module's sources (what DKMS and a kernel build need, nothing
# built) into DEST.
fr_stage_src() {
	local dest=$1
	rm -rf "$dest"
	mkdir -p "$dest/module/probes" "$dest/uapi/linux"
	cp "$FR_TOP"/VERSION "$FR_TOP"/dkms.conf "$FR_TOP"/LICENSE "$dest/"
	cp "$FR_TOP"/module/*.c "$FR_TOP"/module/*.h "$FR_TOP"/module/Makefile \
		"$FR_TOP"/module/Kbuild "$FR_TOP"/module/*.mk "$FR_TOP"/module/*.sh "$dest/module/"
	rm -f "$dest/module/compat-generated.h"
	cp "$FR_TOP"/module/probes/*.c "$FR_TOP"/module/probes/*.src "$FR_TOP"/module/probes/*.btf \
		"$dest/module/probes/"
	cp "$FR_TOP"/uapi/linux/*.h "$dest/uapi/linux/"
}

# Runs a command as root inside a suite's build root: the host itself for
# bookworm and the debug lane, else its chroot with /proc mounted (7.x's
# objtool reads it). The mounts live in a private mount namespace of its
# own, so runs from several checkouts at once never unmount each other's.
# FR_IN_ROOT_BIND: directories to show in the chroot at their own paths
# (an arm64 upstream kernel's tree and tarball, built in the chroot).
fr_in_root() {
	local suite=$1 r h k d binds=()
	shift
	if fr_on_host "$suite"; then
		"$@"
		return
	fi
	r=$(fr_root "$suite")
	if fr_is_arm64; then
		# The suite's unpacked arm64 headers at the path their Makefile
		# names (7.x checks it), and this checkout at its own path (the
		# test programs are cross-built in a chroot).
		k=$(fr_kver "$(fr_kroot "$suite")")
		h="$(fr_kroot "$suite")/usr/src/linux-headers-$k"
		if [ -n "$k" ] && [ -d "$h" ]; then
			binds+=("$h" "/usr/src/linux-headers-$k")
		fi
		binds+=("$FR_TOP" "$FR_TOP")
	fi
	for d in ${FR_IN_ROOT_BIND:-}; do binds+=("$d" "$d"); done
	for ((d = 1; d < ${#binds[@]}; d += 2)); do mkdir -p "$r${binds[d]}"; done
	unshare --mount --propagation private -- sh -c \
		'r=$1 n=$2 && shift 2 && mount -t proc proc "$r/proc" || exit 1
		while [ "$n" -gt 0 ]; do
			mount --bind "$1" "$r$2" || exit 1
			shift 2
			n=$((n - 1))
		done
		exec chroot "$r" "$@"' \
		sh "$r" $((${#binds[@]} / 2)) "${binds[@]}" "$@"
}

# The build root in which the arm64 test programs are cross-built.
FR_ARM64_PROGRAMS_ROOT=${FASTREMAP_ARM64_PROGRAMS_ROOT:-bookworm}

# fr_dkms_guest_verdicts VM_LOG RESULTS NAME KVER PROGRAM...: the TAP
# lines (tap_ok) on a guest of tests/harness/guest/init-dkms (a module
# users get, loaded by a plain insmod, then the PROGRAMs): KVER booted;
# the insmod; each PROGRAM's plan met with no failure and exit 0 (its
# stream in RESULTS/NAME-PROGRAM.tap); the kernel log (RESULTS/NAME-dmesg.log)
# captured, without a line of FR_BAD_LOG, and the guest at its end. NAME
# starts each description.
fr_dkms_guest_verdicts() {
	local vlog=$1 results=$2 name=$3 k=$4 p tap rc np nf plan bad
	shift 4
	touch "$vlog"
	tap_ok "$(grep -q "FR-KERNEL $k" "$vlog" && echo 1)" "$name: the kernel $k booted" || :
	tap_ok "$(grep -qx 'FR-INSMOD 0' "$vlog" && grep -qx 'FR-LOADED' "$vlog" && echo 1)" \
		"$name: insmod of the DKMS-built module" "$(grep '^FR-INSMOD' "$vlog")" || :
	for p in "$@"; do
		tap="$results/$name-$p.tap"
		sed -n "/^FR-BEGIN $p\$/,/^FR-END $p /p" "$vlog" >"$tap"
		rc=$(sed -n "s/^FR-END $p \([0-9]*\)$/\1/p" "$tap")
		np=$(grep -cE '^ok [0-9]+' "$tap")
		nf=$(grep -cE '^not ok [0-9]+' "$tap")
		plan=$(sed -nE 's/^1\.\.([0-9]+).*/\1/p' "$tap")
		grep -E '^not ok' "$tap" | sed 's/^/# /'
		tap_ok "$([ "$rc" = 0 ] && [ "$nf" = 0 ] && [ -n "$plan" ] && [ "$plan" = "$np" ] && echo 1)" \
			"$name: $p against it: $np passed, $nf failed, plan 1..${plan:-none}, exit ${rc:-(did not finish)}" || :
	done
	sed -n '/^FR-DMESG-BEGIN$/,/^FR-DMESG-END$/p' "$vlog" >"$results/$name-dmesg.log"
	bad=$(grep -E "$FR_BAD_LOG" "$results/$name-dmesg.log")
	[ -n "$bad" ] && printf '# %s\n' "$bad" | head -n 20
	tap_ok "$([ -s "$results/$name-dmesg.log" ] && [ -z "$bad" ] && grep -q '^FR-DONE$' "$vlog" && echo 1)" \
		"$name: guest ran to the end, kernel log captured and clean" || :
}
