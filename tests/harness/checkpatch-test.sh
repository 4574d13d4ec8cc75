#!/usr/bin/env bash
# Kernel coding style: the module and the uapi header pass checkpatch.pl
# (from Debian's linux-source-6.1, extracted once into the cache).
# Prints a TAP stream, one case per file.
set -uo pipefail
# shellcheck source=tests/harness/common.sh
. "$(dirname "$0")/common.sh"

cp_dir="$FR_CACHE/checkpatch"
if [ ! -x "$cp_dir/scripts/checkpatch.pl" ]; then
	tarball=$(ls /usr/src/linux-source-6.1.tar.xz 2>/dev/null)
	[ -n "$tarball" ] || fr_die "linux-source-6.1 missing: run scripts/deps.sh"
	mkdir -p "$cp_dir"
	tar -xJf "$tarball" -C "$cp_dir" --strip-components=1 \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
fi
cd "$FR_TOP"
for f in module/*.c module/*.h module/probes/*.c uapi/linux/*.h; do
	# Its exit status as well as its words: a checkpatch.pl that dies
	# without a word must not pass the file.
	out=$(perl "$cp_dir/scripts/checkpatch.pl" --no-tree --terse -f "$f" 2>&1)
	rc=$?
	out=$(printf '%s\n' "$out" | grep -v "^total: 0 errors, 0 warnings")
	if [ "$rc" = 0 ] && [ -z "$out" ]; then
		tap_ok 1 "checkpatch: $f"
	else
		tap_ok 0 "checkpatch: $f (exit $rc)"
		tap_diag "$out"
	fi
done
tap_done
