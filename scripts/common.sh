# Sourced by the scripts in this folder. Where caches live and how to reach
# Debian's mirror; nothing here names a host: the mirror is read from this
# machine's apt configuration.

FR_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FR_CACHE=${FASTREMAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fastremap}
FR_BUILD=${FASTREMAP_BUILD:-$FR_TOP/build}
# The three kernels every feature is tested on, by Debian suite.
FR_SUITES=${FASTREMAP_SUITES:-bookworm trixie sid}

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
	ls "$root"/boot/vmlinuz-* 2>/dev/null | sed 's#.*/vmlinuz-##' | sort -V | tail -n 1
}

# A name for this checkout's build directory, so that staging folders
# inside the shared chroots do not collide between checkouts.
fr_build_id() { printf '%s' "$FR_BUILD" | md5sum | cut -c1-8; }

fr_chroot_dir() { printf '%s/chroot-%s\n' "$FR_CACHE" "$1"; }

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

# Whether a suite's module is built by this host's own compiler (no chroot).
fr_on_host() { [ "$1" = bookworm ] || [ "$1" = "$FR_DEBUG_SUITE" ]; }

# The filesystem root whose kernel and headers a suite uses.
fr_root() {
	case $1 in
	bookworm) echo / ;;
	"$FR_DEBUG_SUITE") fr_debug_root ;;
	*) fr_chroot_dir "$1" ;;
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
		"$FR_TOP"/module/Kbuild "$FR_TOP"/module/probe.sh "$dest/module/"
	rm -f "$dest/module/compat-generated.h"
	cp "$FR_TOP"/module/probes/*.c "$dest/module/probes/"
	cp "$FR_TOP"/uapi/linux/*.h "$dest/uapi/linux/"
}

# Runs a command as root inside a suite's build root: the host itself for
# bookworm and the debug lane, else its chroot with /proc mounted (7.x's
# objtool reads it). The mount lives in a private mount namespace of its
# own, so runs from several checkouts at once never unmount each other's.
fr_in_root() {
	local suite=$1 r
	shift
	if fr_on_host "$suite"; then
		"$@"
		return
	fi
	r=$(fr_chroot_dir "$suite")
	unshare --mount --propagation private -- sh -c \
		'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' "$r" "$@"
}
