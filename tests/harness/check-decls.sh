#!/usr/bin/env bash
# Compares compat.h's types of the internal functions no public header
# declares (module/symlist.h types them fr_<name>_fn) with the declaration
# in the kernel's own source, Debian's linux-source-<major.minor> of the
# suite: the compiler decides, on the suite's headers, whether the two
# types are the same. A kernel that changes one then fails the test build
# instead of being called with the wrong arguments.
# Then the check every build of the module makes itself (module/decls.c,
# against the kernel's BTF and headers): that the suite's build log says
# which one ran, and that it refuses a planted wrong prototype, naming
# the function, and passes the right one. Prints TAP.
# Usage: check-decls.sh SUITE  (after scripts/build-module.sh SUITE)
set -uo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

suite=$1
root=$(fr_root "$suite")
kver=$(cat "$FR_BUILD/$suite/kver" 2>/dev/null) || fr_die "$suite: build the module first"
mm=$(printf '%s\n' "$kver" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
# The few files declarations are searched in, in this order.
files="mm/internal.h mm/vma.h mm/swap.h include/linux/mm.h include/linux/rmap.h arch/x86/include/asm/tlbflush.h include/asm-generic/tlb.h"

# The source files, extracted once per kernel into the cache (the package
# is fetched once with apt-get download inside the suite's root; Debian
# 12's comes from scripts/deps.sh).
# (arm64's kernel of a suite, of either page size, is the amd64 one's
# source: one cache for all.)
k=${kver%-16k}
src="$FR_CACHE/kernel-decls/${k%-arm64}"
[ "$src" = "$FR_CACHE/kernel-decls/$kver" ] || src="$src-amd64"
# .done names the files extracted: a longer list extracts again.
if [ "$(cat "$src/.done" 2>/dev/null)" != "$files" ]; then
	fr_log "$suite: extracting declarations from linux-source-$mm (once)"
	rm -rf "$src" && mkdir -p "$src"
	members=$(for f in $files; do printf 'linux-source-%s/%s ' "$mm" "$f"; done)
	# Where the kernel's layout keeps its source: a kernel built here
	# links the tarball it was built from (on arm64 too, whose build
	# root is the bookworm chroot).
	tarball="$(fr_kroot "$suite")/usr/src/linux-source-$mm.tar.xz"
	if [ -r "$tarball" ] && { fr_on_host "$suite" || fr_from_source "$suite"; }; then
		# The top directory is linux-source-X.Y in Debian's package,
		# linux-X.Y.Z in the upstream tarball an upstream lane's root links.
		pats=()
		for f in $files; do pats+=("*/$f"); done
		tar -xJf "$tarball" -C "$src" --strip-components=1 --wildcards \
			--no-wildcards-match-slash --ignore-failed-read "${pats[@]}" 2>/dev/null
		dpkg-query -W -f='${Version}\n' "linux-source-$mm" >"$src/.version" 2>/dev/null ||
			basename "$(realpath "$tarball")" >"$src/.version"
	else
		dl="/var/tmp/fastremap-src-$(fr_build_id)"
		rm -rf "${root%/}$dl" && mkdir -p "${root%/}$dl/lists/partial"
		opts="-o Dir::State::Lists=$dl/lists -o Acquire::Check-Valid-Until=false"
		# shellcheck disable=SC2086
		fr_in_root "$suite" sh -c "cd $dl && apt-get -q $opts update >/dev/null &&
			apt-get -q $opts download linux-source-$mm" >"$src/download.log" 2>&1 ||
			fr_die "$suite: cannot download linux-source-$mm (log: $src/download.log)"
		deb=$(ls "${root%/}$dl"/linux-source-"$mm"_*.deb)
		dpkg-deb -f "$deb" Version >"$src/.version"
		# shellcheck disable=SC2086
		dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/linux-source-$mm.tar.xz" |
			tar -xJ -C "$src" --strip-components=1 $members 2>/dev/null
		rm -rf "${root%/}$dl"
	fi
	[ -r "$src/include/linux/mm.h" ] || fr_die "$suite: no linux-source-$mm sources in $src"
	printf '%s\n' "$files" >"$src/.done"
fi
echo "# $suite: declarations from linux-source-$mm $(cat "$src/.version")"

# NAME TYPE of each function symlist.h types with a compat.h type, as the
# module's build expands it for this suite.
pairs=$(fr_expand_symlist "$FR_BUILD/$suite" 'fn name type' | tr ' ;' '\n\n' |
	awk 'NF { w[++k] = $0 } END { for (i = 1; i + 2 <= k; i++) if (w[i] == "fn") {
		name = w[i + 1]; sub(/^fr_sc_/, "", name); if (w[i + 2] == "fr_" name "_fn") print name, w[i + 2] } }')

# The staging folder, inside the suite's build root: the module's headers
# and one test object per function.
rel=/var/tmp/fastremap-decls-$(fr_build_id)
stage="${root%/}$rel" kdir=$(fr_kdir "$suite" "$kver")
fr_on_host "$suite" && rel="$FR_BUILD/$suite/decls" stage="$FR_BUILD/$suite/decls"
fr_is_arm64 || ! fr_on_host "$suite" || kdir="${root%/}$kdir"
rm -rf "$stage" && mkdir -p "$stage"
for h in "$FR_TOP"/module/*.h; do
	# A compat-generated.h in the source folder is some other kernel's.
	[ "${h##*/}" = compat-generated.h ] || cp "$h" "$stage/"
done
cp "$FR_BUILD/$suite/compat-generated.h" "$stage/"
echo 'ccflags-y := -I$(src)' >"$stage/Kbuild"
targets= declared=
while read -r name type; do
	[ -n "$name" ] || continue
	decl= where=
	for f in $files; do
		[ -r "$src/$f" ] || continue
		# The first prototype (not a static inline), up to its semicolon.
		decl=$(awk -v re="^(extern )?[a-z].*[ *]$name\\\\(" '
			!on && $0 ~ re && $0 !~ /^static/ { on = 1 }
			on { print; if (/;/) exit }' "$src/$f")
		[ -n "$decl" ] && where=$f && break
	done
	if [ -z "$decl" ]; then
		tap_ok 0 "$name: no declaration found in linux-source-$mm ($files)"
		continue
	fi
	{
		echo '#include "compat.h"'
		echo "/* $where */"
		printf '%s\n' "$decl" | sed -E "s/^extern //; s/([ *])$name\\(/\\1fr_decl_$name(/"
		echo "static_assert(__builtin_types_compatible_p(typeof(fr_decl_$name), $type),"
		echo "	      \"compat.h's $type is not $name() as $where declares it\");"
	} >"$stage/d_$name.c"
	echo "obj-m += d_$name.o" >>"$stage/Kbuild"
	targets="$targets d_$name.o" declared="$declared $name:$where"
done <<<"$pairs"

# One kbuild run; -k: each object's failure is that function's answer.
# shellcheck disable=SC2086,SC2046
fr_in_root "$suite" make -C "$kdir" M="$rel" $(fr_kmake_args) -k $targets >"$stage/build.log" 2>&1
for d in $declared; do
	name=${d%%:*} where=${d#*:}
	tap_ok "$([ -s "$stage/d_$name.o" ] && echo 1)" \
		"$name: compat.h's type is the one $where of $kver's source declares" \
		"$(grep -E "error|d_$name\.c" "$stage/build.log" | grep -v '^make' | head -n 12)"
done
[ "$TAP_N" -ge 4 ] || tap_ok 0 "at least 4 functions checked (symlist.h: $(printf '%s\n' "$pairs" | grep -c .))"

# The build's own check (module/decls.c). tap OK DESCRIPTION [LOG]
tap() {
	tap_ok "$1" "$suite: $2" "$([ -z "${3:-}" ] || grep -aE 'error|fastremap:' "$3" | head -n 12)"
}
# What the suite's build said it checked: the BTF of the vmlinux its
# headers ship, with every function this build calls in it, else the
# headers alone, and then only where there is no such BTF.
said=$(grep -a '^fastremap: kernel function prototypes:' "$FR_BUILD/$suite/build.log")
if [ -z "$said" ]; then
	tap 0 "the build log says which prototype check ran" "$FR_BUILD/$suite/build.log"
elif [ "${said#*checked against the BTF of }" != "$said" ]; then
	called=$(fr_expand_symlist "$FR_BUILD/$suite" 'fn name' | tr ' ;' '\n\n' |
		awk '$0 == "fn" { getline; sub(/^fr_sc_/, ""); print }')
	notinbtf=
	for name in $called; do
		# (A name may be followed by why it is not: "(two prototypes)".)
		case $said in *"not in it:"*[\ ,:]"$name"[\ ,\)]*) notinbtf="$notinbtf $name" ;; esac
	done
	tap "$([ -z "$notinbtf" ] && [ -n "$called" ] && echo 1)" \
		"the build checked the $(printf '%s\n' "$called" | grep -c .) functions it calls against the BTF of the vmlinux its headers ship${notinbtf:+ (not in it:$notinbtf)}"
	[ -z "$notinbtf" ] || printf '# %s\n' "$said"
else
	# No BTF: right only where the headers have no vmlinux carrying it.
	fr_in_root "$suite" test -e "$kdir/vmlinux" && nobtf=0 || nobtf=1
	# (A debug lane's build root is the kernel's build tree: its vmlinux
	# is named by another path, and has no BTF section.)
	case $said in *"/vmlinux: no .BTF section"*) nobtf=1 ;; esac
	tap "$nobtf" "the build checked prototypes against the headers only: its headers have no vmlinux BTF"
	printf '# %s\n' "$said"
fi

# Planted prototypes, in decls.o alone, from the module's sources and this
# build's probe answers: a BTF (made by gcc -gbtf) of a kernel whose
# copy_vma() gained an argument, as a stable update once gave it one, and
# a header declaring swap_cache_get_folio() otherwise, which the module's
# build must both refuse, naming each function; then the same BTF with
# compat.h's copy_vma(), and a build without a host compiler for btfdecls,
# which must pass.
# (A kernel without folios has no swap_cache_get_folio() in the list: there
# unlink_anon_vmas() is planted; one whose copy_vma() has no keep_source,
# 5.10, gets compat.h's five arguments.)
prel="$rel/plant" pstage="$stage/plant"
fr_stage_src "$pstage"
cp "$FR_BUILD/$suite/compat-generated.h" "$pstage/module/"
hdecl='struct folio;\nstruct folio *swap_cache_get_folio(void *planted);\n'
hname=swap_cache_get_folio
if ! grep -q '^#define FR_HAVE_FOLIO ' "$pstage/module/compat-generated.h"; then
	hdecl='void unlink_anon_vmas(void *planted);\n' hname=unlink_anon_vmas
fi
cat >"$pstage/plant.c" <<'PLANT'
typedef _Bool bool;
typedef unsigned long pgoff_t;
struct vm_area_struct;
struct vm_area_struct *copy_vma(struct vm_area_struct **vmap,
				unsigned long addr, unsigned long len,
				pgoff_t pgoff,
#ifdef FR_HAVE_VMA_ANON_PGOFF
				pgoff_t anon_pgoff,
#endif
				bool *need_rmap_locks
#if !defined(FR_HAVE_COPY_VMA_5) && !defined(FR_HAVE_COPY_VMA_MM_5)
				, bool keep_source
#endif
				PLANTED)
{
	return 0;
}
PLANT
# shellcheck disable=SC2059
printf "$hdecl" >"$pstage/plant.h"
# copy_vma() as this kernel has it (5.10 and 6.18.15 lack keep_source,
# 7.3 added anon_pgoff): the probes say.
probes=(-include "$pstage/module/compat-generated.h")
if ! gcc -gbtf -c "${probes[@]}" -DPLANTED=', bool planted' -o "$pstage/wrong.o" "$pstage/plant.c" ||
	! gcc -gbtf -c "${probes[@]}" -DPLANTED= -o "$pstage/right.o" "$pstage/plant.c"; then
	fr_die "gcc -gbtf: cannot make the planted BTF"
fi
# plant_build NAME MAKE-ARGUMENTS...: builds decls.o; its log in NAME.log.
plant_build() {
	local name=$1
	shift
	rm -f "$pstage/module/decls.o" "$pstage/module/decls-generated.h"
	# shellcheck disable=SC2046
	fr_in_root "$suite" make -C "$kdir" M="$prel/module" $(fr_kmake_args) "$@" decls.o \
		>"$pstage/$name.log" 2>&1
}
plant_build wrong FR_DECLS_BTF="$prel/wrong.o" KCFLAGS="-include $prel/plant.h"
rc=$?
log="$pstage/wrong.log"
named=$(grep -aoE 'fastremap: [a-z_0-9]+\(\) differs from the kernel' "$log" | sort -u | cut -d' ' -f2 | xargs)
tap "$([ "$rc" != 0 ] && [ "$named" = "copy_vma()" ] && echo 1)" \
	"a BTF whose copy_vma() has another argument: the build refuses, naming copy_vma() (named: ${named:-none})" "$log"
# (GCC quotes names with ASCII or UTF-8 quotes, after the locale.)
conflicts=$(grep -aoE 'conflicting types for [^a-z_0-9]*[a-z_0-9]+' "$log" | sed -E 's/.*[^a-z_0-9]//' | sort -u | xargs)
tap "$([ "$rc" != 0 ] && [ "$conflicts" = "$hname" ] && echo 1)" \
	"a header declaring $hname() otherwise: the build refuses, naming it (named: ${conflicts:-none})" "$log"
plant_build right FR_DECLS_BTF="$prel/right.o"
rc=$?
tap "$([ "$rc" = 0 ] && grep -aq "checked against the BTF of $prel/right.o" "$pstage/right.log" && echo 1)" \
	"the same BTF with compat.h's copy_vma(): the build passes" "$pstage/right.log"
plant_build nocc HOSTCC=no-such-compiler
rc=$?
tap "$([ "$rc" = 0 ] && grep -aq 'no host compiler for btfdecls: checked against the declarations in the kernel headers only' \
	"$pstage/nocc.log" && echo 1)" "no host compiler for btfdecls: the build passes, checking the headers only, and says so" "$pstage/nocc.log"

# The probes mm/'s source answers (each has a probes/NAME.btf): where the
# build has no such source, as a headers package has none, the BTF
# answers them. What
# the suite's build said answered each; then, with the source hidden
# (FR_PROBE_NO_SOURCE=1), planted BTFs of a kernel with 6.17's mremap(2)
# and a five-argument copy_vma(), and of one without, must give the
# answers each records, and say so; and on an upstream lane, the BTF of
# Debian's own build of the same release (its image's vmlinux) must give
# the answers the lane's source gives, and pass the prototype check.
btf_probes="copy_vma_mm_5 mremap_check_params mremap_multi_vma"
for n in $btf_probes; do
	line=$(grep -a "^fastremap: probe $n: " "$FR_BUILD/$suite/build.log" | head -n 1)
	tap "$([ -n "$line" ] && echo 1)" "the build log says what answered the probe $n${line:+ (${line#fastremap: probe "$n": })}"
done
# probe_build NAME BTF: the probes' answers with the source hidden, into
# NAME.h, the build's output in NAME.log.
probe_build() {
	local name=$1 btf=$2
	rm -f "$bstage/module/compat-generated.h"
	# shellcheck disable=SC2046
	fr_in_root "$suite" make -C "$brel/module" KDIR="$kdir" $(fr_kmake_args) \
		FR_PROBE_NO_SOURCE=1 FR_DECLS_BTF="$btf" compat-generated.h >"$bstage/$name.log" 2>&1 &&
		cp "$bstage/module/compat-generated.h" "$bstage/$name.h"
}
# The FR_HAVE_ names the BTF answered in NAME.h, or "none".
btf_said() {
	local names
	names=$(sed -n 's/^#define FR_HAVE_\([A-Z0-9_]*\) 1 .. the BTF of .*/\1/p' "$bstage/$1.h" 2>/dev/null | sort | xargs)
	echo "${names:-none}"
}
brel="$rel/btf" bstage="$stage/btf"
fr_stage_src "$bstage"
cat >"$bstage/with.c" <<'PLANT'
typedef _Bool bool;
struct vm_area_struct;
struct vma_remap_struct {
	unsigned long addr;
#ifdef WITH
	bool vmi_needs_invalidate;
#endif
} planted_vrm;
struct vm_area_struct *copy_vma(struct vm_area_struct **vmap,
				unsigned long addr, unsigned long len,
				unsigned long pgoff, bool *need_rmap_locks
#ifndef WITH
				, bool keep_source
#endif
				)
{
	return 0;
}
PLANT
if ! gcc -gbtf -c -DWITH -o "$bstage/with.o" "$bstage/with.c" ||
	! gcc -gbtf -c -o "$bstage/without.o" "$bstage/with.c"; then
	fr_die "gcc -gbtf: cannot make the planted BTF"
fi
want=$(echo "$btf_probes" | tr '[:lower:]' '[:upper:]' | xargs -n 1 | sort | xargs)
probe_build with "$brel/with.o"
said=$(btf_said with)
tap "$([ "$said" = "$want" ] && [ "$(grep -ac "^fastremap: probe .*answered by the BTF of $brel/with.o (.*: yes)" \
	"$bstage/with.log")" = "$(echo "$want" | wc -w)" ] && echo 1)" \
	"no source, a BTF with 6.17's vma_remap_struct and a five-argument copy_vma(): the BTF answers $want, and the log says so (answered: $said)" "$bstage/with.log"
probe_build without "$brel/without.o"
said=$(btf_said without) answered=0
for n in $want; do
	grep -q "^/. FR_HAVE_$n: not available (the BTF of $brel/without.o) ./" "$bstage/without.h" 2>/dev/null &&
		answered=$((answered + 1))
done
tap "$([ "$said" = none ] && [ "$answered" = "$(echo "$want" | wc -w)" ] && echo 1)" \
	"no source, a BTF without them: the BTF answers that none is there (yes: $said; no: $answered)" "$bstage/without.log"

if fr_is_upstream "$suite"; then
	# Debian's image of the lane's release and architecture, from
	# trixie-backports (once), holds the BTF of Debian's build: x86-64's
	# vmlinuz unpacks to an ELF vmlinux with a .BTF section; arm64's is
	# an Image (the kernel's memory image, no ELF headers; its System.map
	# is in the -dbg package), kept as the raw BTF found in it by its
	# header: magic 0xeB9F, version 1, flags 0, 24 bytes long.
	up=${kver%%-*} flav=${kver%%-*}+deb13-$FR_ARCH
	img="$FR_CACHE/bpo-image-${up%.*}"
	vmlinux="$img/vmlinux-$flav"
	if [ ! -s "$vmlinux" ]; then
		fr_log "$suite: fetching linux-image-$flav (trixie-backports) for its BTF (once)"
		mkdir -p "$img"
		fr_apt_private_init "$img/apt-$FR_ARCH" "deb [arch=$FR_ARCH] $(fr_mirror) trixie-backports main"
		(cd "$img" && fr_apt_private "$img/apt-$FR_ARCH" apt-get download "linux-image-$flav:$FR_ARCH" >&2) ||
			fr_die "$suite: cannot download linux-image-$flav"
		deb=$(ls "$img"/linux-image-"$flav"_*.deb)
		dpkg-deb --fsys-tarfile "$deb" | tar -xO "./boot/vmlinuz-$flav" >"$img/vmlinuz" ||
			fr_die "$suite: no vmlinuz in $deb"
		if ! fr_is_arm64; then
			"$kdir/scripts/extract-vmlinux" "$img/vmlinuz" >"$vmlinux.tmp" ||
				fr_die "$suite: no vmlinux in $deb"
		else
			if [ "$(head -c 2 "$img/vmlinuz" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then
				gzip -dc <"$img/vmlinuz" >"$img/Image"
			else
				mv "$img/vmlinuz" "$img/Image"
			fi
			at=$(LC_ALL=C grep -obUaP '\x9f\xeb\x01\x00\x18\x00\x00\x00' "$img/Image" | cut -d: -f1)
			[ "$(grep -c . <<<"$at")" = 1 ] || fr_die "$suite: not one BTF header in $deb's Image (at ${at:-none})"
			# type_off, type_len, str_off, str_len: the sections follow
			# the header.
			read -r toff tlen soff slen < <(od -An -tu4 -j $((at + 8)) -N 16 "$img/Image")
			end=$((toff + tlen > soff + slen ? toff + tlen : soff + slen))
			dd if="$img/Image" of="$vmlinux.tmp" bs=64K iflag=skip_bytes,count_bytes \
				skip="$at" count=$((24 + end)) status=none || fr_die "$suite: cannot read $img/Image"
			rm -f "$img/Image"
		fi
		mv "$vmlinux.tmp" "$vmlinux"
		rm -f "$deb" "$img/vmlinuz"
	fi
	# (An arm64 lane builds in a chroot: the image's folder is shown there.)
	FR_IN_ROOT_BIND=$img probe_build debian "$vmlinux"
	said=$(btf_said debian)
	from_src=$(for n in $want; do
		grep -q "^#define FR_HAVE_$n 1" "$FR_BUILD/$suite/compat-generated.h" && echo "$n"
	done | xargs)
	tap "$([ "$said" = "$want" ] && [ "$said" = "$from_src" ] && echo 1)" \
		"no source, the BTF of Debian's $up: the BTF answers $want, as $kver's source does (answered: $said; the source: ${from_src:-none})" "$bstage/debian.log"
	# What compat.h makes of them, and the prototype check, in decls.o.
	cat >"$bstage/module/fr_answers.c" <<'ANSWERS'
#include "compat.h"
static_assert(FR_MREMAP_EARLY_TARGET_CHECKS == 1, "fastremap: mremap(2) of 6.17 checks its target first");
static_assert(FR_MREMAP_MULTI_VMA_MOVES == 1, "fastremap: mremap(2) of 6.17 moves several VMAs");
static_assert(FR_COPY_VMA_KEEP_SOURCE == 0, "fastremap: this copy_vma() has five arguments");
ANSWERS
	echo 'obj-m += fr_answers.o' >>"$bstage/module/Kbuild"
	# shellcheck disable=SC2046
	FR_IN_ROOT_BIND=$img fr_in_root "$suite" make -C "$kdir" M="$brel/module" $(fr_kmake_args) FR_DECLS_BTF="$vmlinux" \
		decls.o fr_answers.o >>"$bstage/debian.log" 2>&1
	rc=$?
	tap "$([ "$rc" = 0 ] && grep -aq "checked against the BTF of $vmlinux" "$bstage/debian.log" && echo 1)" \
		"no source, the BTF of Debian's $up: compat.h's early target checks, multi-VMA moves and five-argument copy_vma(), and the prototype check passes" "$bstage/debian.log"
	# The same check of compat.h's answers with the planted BTF without
	# them must fail, on all three.
	probe_build without "$brel/without.o"
	rm -f "$bstage/module/fr_answers.o"
	# shellcheck disable=SC2046
	fr_in_root "$suite" make -C "$kdir" M="$brel/module" $(fr_kmake_args) fr_answers.o >>"$bstage/without.log" 2>&1
	rc=$?
	failed=$(grep -ac 'static assertion failed: "fastremap: ' "$bstage/without.log")
	tap "$([ "$rc" != 0 ] && [ "$failed" = 3 ] && echo 1)" \
		"no source, the BTF without them: compat.h's three answers are 6.16's, and the same check says so (failed: $failed of 3)" "$bstage/without.log"
fi
tap_done
