#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Which of the module's objects call which: a pair "CALLER CALLEE" for
# each object that leaves undefined a symbol another one defines (nm), to
# stdout. Fails, naming them, on a call into main.o (the device and its
# ioctls: nothing calls back into it) and on a cycle (tsort finds them);
# and on a cycle of the headers in SRCDIR that include one another.
# Usage: calls.sh NM SRCDIR OBJECT...
set -eu
nm=$1 src=$2
shift 2
err=${TMPDIR:-/tmp}/calls.$$
trap 'rm -f "$err"' EXIT

# acyclic WHAT: the pairs on stdin have no cycle, or it is named.
acyclic() {
	tsort >/dev/null 2>"$err" && return 0
	echo "calls.sh: $1 in a cycle:" >&2
	cat "$err" >&2
	exit 1
}

for h in "$src"/*.h; do
	sed -n 's/^#include "\(.*\)"$/\1/p' "$h" | while read -r i; do
		echo "${h##*/} $i"
	done
done | acyclic "the headers include each other"
pairs=$(for o in "$@"; do
	b=$(basename "$o" .o)
	"$nm" -g --defined-only "$o" | awk -v o="$b" 'NF == 3 { print "D", $3, o }'
	"$nm" -u "$o" | awk -v o="$b" 'NF == 2 { print "U", $2, o }'
done | awk '$1 == "D" { def[$2] = $3; next } { use[$2] = use[$2] " " $3 }
	END {
		for (s in use) {
			if (!(s in def))
				continue
			n = split(use[s], u, " ")
			for (i = 1; i <= n; i++)
				if (u[i] != def[s])
					print u[i], def[s]
		}
	}' | sort -u)
printf '%s\n' "$pairs"
bad=$(printf '%s\n' "$pairs" | awk '$2 == "main"')
if [ -n "$bad" ]; then
	echo "calls.sh: calls into main.o (nothing may call back into it):" >&2
	printf '%s\n' "$bad" >&2
	exit 1
fi
printf '%s\n' "$pairs" | acyclic "the objects call each other"
